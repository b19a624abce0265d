-- Issue 48's windows that one session shows (the races are in tests/isolation/specs/windows_*.spec):
-- a BEFORE trigger that changes the text after the extension's, a foreign-key action that moves rows
-- into another scope, writes from another table's trigger, two attachments on one table, an index
-- rebuilt concurrently, triggers that do not fire (session_replication_role = replica).
\getenv abs_srcdir PG_ABS_SRCDIR
\set include :abs_srcdir '/include/try.sql'
\i :include

-- A user trigger that fires after the extension's (names sort: simhash_body < zz_upper) and changes
-- the text would leave a fingerprint that is not the stored text's: refused (27000), with a hint.
CREATE TABLE notes (id int PRIMARY KEY, body text);
SELECT simhash_attach('notes', 'body', on_duplicate => 'error');
CREATE FUNCTION pg_temp.shout() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.body := upper(NEW.body) || ' (edited)'; RETURN NEW; END $$;
CREATE TRIGGER zz_upper BEFORE INSERT OR UPDATE ON notes FOR EACH ROW EXECUTE FUNCTION pg_temp.shout();
\set VERBOSITY default
INSERT INTO notes VALUES (1, 'The library on Main Street will close for renovation from March to June.');
-- Renamed to sort before the extension's trigger, it runs first and the fingerprint is the stored text's.
ALTER TRIGGER zz_upper ON notes RENAME TO a_upper;
INSERT INTO notes VALUES (1, 'The library on Main Street will close for renovation from March to June.');
SELECT id, body_simhash = simhash(body) AS fingerprint_of_stored_text FROM notes;
UPDATE notes SET body = 'A second text about the harbour market, which opens again on Saturday.' WHERE id = 1;
SELECT id, body_simhash = simhash(body) AS fingerprint_of_stored_text FROM notes;

-- Foreign-key actions that change the scope column: the rows they write are checked in their new
-- scope. ON UPDATE CASCADE moves a group's rows to its new name (nothing there: written);
-- ON DELETE SET DEFAULT moves them into the default group, where a near-duplicate is: refused.
CREATE TABLE groups (g text PRIMARY KEY);
INSERT INTO groups VALUES ('x'), ('y');
CREATE TABLE members (id int PRIMARY KEY, g text DEFAULT 'x' REFERENCES groups ON UPDATE CASCADE ON DELETE SET DEFAULT, body text);
SELECT simhash_attach('members', 'body', on_duplicate => 'error', scope => 'g');
INSERT INTO members VALUES (1, 'x', 'Our choir meets every Thursday evening at seven in the hall behind the old stone church on Mill Lane, and new singers of every age are welcome to join us there.'),
                           (2, 'y', 'Our choir meets every Thursday evening at seven in the hall behind the old stone church on Mill Lane, and new singers of every age are welcome to join us here.');
UPDATE groups SET g = 'z' WHERE g = 'y';
SELECT id, g FROM members ORDER BY id;
SELECT pg_temp.try($$DELETE FROM groups WHERE g = 'z'$$) AS set_default_into_near_duplicate;
SELECT id, g FROM members ORDER BY id;

-- Writes from another table's trigger: each of its statements is checked at its end.
CREATE TABLE board (id int PRIMARY KEY, body text);
SELECT simhash_attach('board', 'body', on_duplicate => 'error');
CREATE TABLE inbox (id int PRIMARY KEY, body text);
CREATE FUNCTION pg_temp.deliver() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO board VALUES (NEW.id, NEW.body); RETURN NULL; END $$;
CREATE TRIGGER deliver AFTER INSERT ON inbox FOR EACH ROW EXECUTE FUNCTION pg_temp.deliver();
INSERT INTO inbox VALUES (1, 'The museum will stay open late on Fridays through the end of the summer season.');
SELECT pg_temp.try($$INSERT INTO inbox VALUES (2, 'The museum will stay open late on Fridays through the end of the summer holidays.')$$) AS second_delivery;
SELECT pg_temp.try($$INSERT INTO inbox VALUES (3, 'Our choir meets every Thursday evening at seven in the hall behind the old stone church on Mill Lane, and new singers of every age are welcome to join us there.'),
                                              (4, 'Our choir meets every Thursday evening at seven in the hall behind the old stone church on Mill Lane, and new singers of every age are welcome to join us here.')$$) AS two_in_one_statement;
SELECT id FROM board ORDER BY id;

-- Two attachments on one table, of both methods: each checks its own column, with no key between them.
CREATE TABLE pages (id int PRIMARY KEY, title text, body text);
SELECT simhash_attach('pages', 'title', on_duplicate => 'skip');
SELECT simhash_attach('pages', 'body', on_duplicate => 'error', method => 'minhash');
INSERT INTO pages VALUES (1, 'Night trains return to the northern line after ten years of absence this winter',
                          'Heavy snow is expected in the mountains this weekend; drivers should carry chains and check road reports before leaving.');
-- Same title: skipped (whatever the body).
INSERT INTO pages VALUES (2, 'Night trains return to the northern line after ten years of absence this winter!', 'Something else entirely, about bees.');
-- New title, same body: rejected by the body's attachment.
SELECT pg_temp.try($$INSERT INTO pages VALUES (3, 'A title of its own about the city budget and the new cycle lanes downtown',
  'Heavy snow is expected in the mountains this weekend; drivers should carry chains and check road reports before they leave.')$$) AS same_body;
SELECT id FROM pages ORDER BY id;

-- A band index rebuilt concurrently: the check goes on through the rebuilt index.
REINDEX INDEX CONCURRENTLY board_body_band0_body_simhash_idx;
SELECT pg_temp.try($$INSERT INTO board VALUES (7, 'The museum will stay open late on Fridays through the end of the summer holidays.')$$) AS after_reindex;

-- Triggers do not fire under session_replication_role = replica (a logical-replication apply
-- worker's setting): the row gets no fingerprint and no check (docs/guarantees.md, Concurrency).
SET session_replication_role = replica;
INSERT INTO notes VALUES (8, 'The library on Main Street will close for renovation from March to June.');
RESET session_replication_role;
SELECT id, body_simhash IS NULL AS unfingerprinted FROM notes WHERE id = 8;

-- ATTACH PARTITION of a table with rows: as a unique index does, an attachment in 'error' or 'skip'
-- mode refuses a partition whose rows have near-duplicates in the table (or among themselves);
-- without them it attaches, and its rows are checked against from then on.
CREATE TABLE feed (id int, region text, body text, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE feed_a PARTITION OF feed FOR VALUES IN ('a');
SELECT simhash_attach('feed', 'body', on_duplicate => 'error');
INSERT INTO feed VALUES (1, 'a', 'Our choir meets every Thursday evening at seven in the hall behind the old stone church on Mill Lane, and new singers of every age are welcome to join us there.');
CREATE TABLE feed_b (id int, region text, body text, PRIMARY KEY (id, region));
INSERT INTO feed_b VALUES (2, 'b', 'Our choir meets every Thursday evening at seven in the hall behind the old stone church on Mill Lane, and new singers of every age are welcome to join us here.');
ALTER TABLE feed ATTACH PARTITION feed_b FOR VALUES IN ('b');
SELECT tableoid::regclass, id FROM feed ORDER BY id;
-- Two near-duplicates within the new partition: refused too.
UPDATE feed_b SET body = 'The museum will stay open late on Fridays through the end of the summer season.';
INSERT INTO feed_b VALUES (3, 'b', 'The museum will stay open late on Fridays through the end of the summer holidays.');
SELECT pg_temp.try($$ALTER TABLE feed ATTACH PARTITION feed_b FOR VALUES IN ('b')$$) AS within_partition;
DELETE FROM feed_b WHERE id = 3;
ALTER TABLE feed ATTACH PARTITION feed_b FOR VALUES IN ('b');
SELECT tableoid::regclass, id, body_simhash = simhash(body) AS fingerprinted FROM feed ORDER BY id;
SELECT pg_temp.try($$INSERT INTO feed VALUES (4, 'a', 'The museum will stay open late on Fridays through the end of the summer holidays.')$$) AS after_attach;

DROP TABLE notes, groups, members, board, inbox, pages, feed, feed_b;
