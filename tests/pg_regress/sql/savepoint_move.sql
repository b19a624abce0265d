-- A row move rolled back to a savepoint (issue 48): the move's note and the note for the row's check
-- trigger go with the subtransaction, so a later row with the same text is checked as a new one.
CREATE TABLE pe (id int, region text, body text, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE pe_a PARTITION OF pe FOR VALUES IN ('a');
CREATE TABLE pe_b PARTITION OF pe FOR VALUES IN ('b');
CREATE TABLE pe_d PARTITION OF pe FOR VALUES IN ('d');
ALTER TABLE pe_d ADD CONSTRAINT not_ten CHECK (id <> 10);
SELECT simhash_attach('pe', 'body', on_duplicate => 'error');
INSERT INTO pe VALUES (10, 'a', 'Volunteers hauled half a ton of trash from the beach at Sandy Point on Saturday morning.');
BEGIN;
SAVEPOINT s;
-- Fails at pe_d's CHECK, after the row was deleted from pe_a and its new version noted.
UPDATE pe SET region = 'd' WHERE id = 10;
ROLLBACK TO SAVEPOINT s;
-- The same text again, elsewhere: a near-duplicate of row 10, which is back.
INSERT INTO pe SELECT 11, 'b', body FROM pe WHERE id = 10;
ROLLBACK;
-- A move that finds no partition, rolled back: the next INSERT of row 10's text is no move.
BEGIN;
SAVEPOINT s;
UPDATE pe SET region = 'z' WHERE id = 10;
ROLLBACK TO SAVEPOINT s;
INSERT INTO pe SELECT 12, 'b', upper(body) FROM pe WHERE id = 10;
ROLLBACK;
-- In a PL/pgSQL exception block, as in a savepoint.
DO $$
BEGIN
  BEGIN
    UPDATE pe SET region = 'd' WHERE id = 10;
  EXCEPTION WHEN check_violation THEN
    RAISE NOTICE 'move refused by the CHECK';
  END;
  INSERT INTO pe SELECT 13, 'b', body FROM pe WHERE id = 10;
END $$;
SELECT tableoid::regclass AS part, id FROM pe ORDER BY id;
DROP TABLE pe;
