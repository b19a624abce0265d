-- A column that simhash_attach() added cannot be dropped by hand: detach removes them all.
CREATE TABLE drop_column (id int PRIMARY KEY, body text, note text);
SELECT simhash_attach('drop_column', 'body', on_duplicate => 'flag');
ALTER TABLE drop_column DROP COLUMN body_band2;
ALTER TABLE drop_column DROP COLUMN IF EXISTS body_simhash;
ALTER TABLE drop_column ADD COLUMN extra int, DROP COLUMN body_duplicate_of;
-- Nor the attached text column, nor the scope column: the trigger would fail every write (55000,
-- with the detach to run first), also with CASCADE and inside a transaction.
ALTER TABLE drop_column DROP COLUMN body;
ALTER TABLE drop_column DROP COLUMN body CASCADE;
BEGIN;
ALTER TABLE drop_column DROP COLUMN note, DROP COLUMN body;
ROLLBACK;
CREATE TABLE drop_scope (id int PRIMARY KEY, site int, body text);
SELECT simhash_attach('drop_scope', 'body', scope => 'site');
ALTER TABLE drop_scope DROP COLUMN site;
SELECT text_column, scope_column FROM simhash_attachments() WHERE table_name = 'drop_scope'::regclass;
DROP TABLE drop_scope;
-- Other columns drop as usual, and the attachment keeps working.
ALTER TABLE drop_column DROP COLUMN note;
INSERT INTO drop_column VALUES (1, 'the quick brown fox jumps over the lazy dog again and again');
INSERT INTO drop_column VALUES (2, 'the quick brown fox jumps over the lazy dog again and again');
SELECT id, body_duplicate_of FROM drop_column ORDER BY id;
SELECT simhash_detach('drop_column', 'body');
SELECT attname FROM pg_attribute WHERE attrelid = 'drop_column'::regclass AND attnum > 0 AND NOT attisdropped
ORDER BY attnum;
-- Without an attachment, a column of that name is an ordinary one.
ALTER TABLE drop_column ADD COLUMN body_band2 int;
ALTER TABLE drop_column DROP COLUMN body_band2;
DROP TABLE drop_column;
-- A derived column dropped while the event trigger was disabled (or before 0.4.0 refused it):
-- attach says what is wrong, and detach removes what is left.
CREATE TABLE broken (id int PRIMARY KEY, body text);
SELECT simhash_attach('broken', 'body', on_duplicate => 'error');
ALTER EVENT TRIGGER simhash_ddl_command_start DISABLE;
ALTER TABLE broken DROP COLUMN body_band2;
ALTER EVENT TRIGGER simhash_ddl_command_start ENABLE;
SELECT simhash_attach('broken', 'body');
SELECT simhash_detach('broken', 'body');
SELECT attname FROM pg_attribute WHERE attrelid = 'broken'::regclass AND attnum > 0 AND NOT attisdropped
ORDER BY attnum;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'broken'::regclass;
SELECT simhash_attach('broken', 'body', on_duplicate => 'error');
INSERT INTO broken VALUES (1, 'the quick brown fox jumps over the lazy dog again and again');
INSERT INTO broken VALUES (2, 'the quick brown fox jumps over the lazy dog again and again');
DROP TABLE broken;
