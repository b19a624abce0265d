-- simhash_attach(..., scope => column) on an ordinary table: near-duplicates are rejected only among
-- rows with the same value of the scope column (the tenant, the site), in every mode; errors.
\getenv abs_srcdir PG_ABS_SRCDIR
\set include :abs_srcdir '/include/try.sql'
\i :include

CREATE TABLE posts (site text, id int PRIMARY KEY, body text);
INSERT INTO posts VALUES ('a', 1, 'The city council approved the budget for protected bike lanes on Monday.');
SELECT simhash_attach('posts', 'body', on_duplicate => 'error', scope => 'site');
SELECT table_name, text_column, on_duplicate, scope_column FROM simhash_attachments();
-- The same text in another site is no duplicate; in the same site it is.
INSERT INTO posts VALUES ('b', 2, 'The city council approved the budget for protected bike lanes on Monday!');
SELECT pg_temp.try($$INSERT INTO posts VALUES ('a', 3, 'On Monday the city council approved a budget for protected bike lanes.')$$);
SELECT pg_temp.try($$INSERT INTO posts VALUES ('b', 3, 'On Monday the city council approved a budget for protected bike lanes.')$$);
INSERT INTO posts VALUES ('c', 3, 'On Monday the city council approved a budget for protected bike lanes.');
-- A row without a site is in no scope: nobody's duplicate, as NULLs in a unique key.
INSERT INTO posts VALUES (NULL, 4, 'The city council approved the budget for protected bike lanes on Monday.'),
                         (NULL, 5, 'The city council approved the budget for protected bike lanes on Monday.');
-- Moving a row to a site that has its near-duplicate is rejected; to a site that has none, accepted.
SELECT pg_temp.try($$UPDATE posts SET site = 'a' WHERE id = 2$$);
UPDATE posts SET site = 'd' WHERE id = 2;
-- An UPDATE that changes neither the text nor the site is not checked.
UPDATE posts SET id = 6 WHERE id = 3;
SELECT site, id FROM posts ORDER BY id;
-- Lookups are not scoped: they find every row.
SELECT (n.item).site, (n.item).id, n.distance
FROM simhash_near_duplicates(NULL::posts, 'The city council approved the budget for protected bike lanes on Monday.') n
WHERE (n.item).site IS NOT NULL ORDER BY 1, 2;

-- Skip and flag modes, with a scope of another type (the key of the flag column is text: composite).
CREATE TABLE notes (tenant int, id int, body text, PRIMARY KEY (tenant, id));
SELECT simhash_attach('notes', 'body', on_duplicate => 'flag', scope => 'tenant');
INSERT INTO notes VALUES (1, 1, 'Volunteers hauled half a ton of trash from the beach at Sandy Point on Saturday.'),
                         (1, 2, 'Volunteers hauled half a ton of trash from the beach at Sandy Point on Saturday!'),
                         (2, 3, 'Volunteers hauled half a ton of trash from the beach at Sandy Point on Saturday!');
SELECT tenant, id, body_duplicate_of FROM notes ORDER BY id;
CREATE TABLE skipped (tenant int, id int PRIMARY KEY, body text);
SELECT simhash_attach('skipped', 'body', on_duplicate => 'skip', scope => 'tenant');
INSERT INTO skipped VALUES (1, 1, 'Volunteers hauled half a ton of trash from the beach at Sandy Point on Saturday.'),
                           (1, 2, 'Volunteers hauled half a ton of trash from the beach at Sandy Point on Saturday!'),
                           (2, 3, 'Volunteers hauled half a ton of trash from the beach at Sandy Point on Saturday!');
SELECT tenant, id FROM skipped ORDER BY id;

-- Renaming the text column keeps the scope.
ALTER TABLE notes RENAME COLUMN body TO content;
SELECT text_column, scope_column FROM simhash_attachments() WHERE table_name = 'notes'::regclass;
INSERT INTO notes VALUES (2, 4, 'Volunteers hauled half a ton of trash from the beach at Sandy Point on Saturday');
SELECT tenant, id, content_duplicate_of FROM notes WHERE id = 4;

-- Errors: no such column (42703), a type without equality (42883). A renamed scope column is
-- followed, as a renamed text column is: near-duplicates per owner now.
\set VERBOSITY terse
CREATE TABLE docs (meta json, tenant int, body text);
SELECT simhash_attach('docs', 'body', scope => 'nope');
SELECT simhash_attach('docs', 'body', on_duplicate => 'error', scope => 'meta');
SELECT simhash_attach('docs', 'body', on_duplicate => 'error', scope => 'tenant');
ALTER TABLE docs RENAME COLUMN tenant TO owner;
SELECT text_column, scope_column, on_duplicate FROM simhash_attachments() WHERE table_name = 'docs'::regclass;
SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'docs'::regclass ORDER BY tgname;
INSERT INTO docs (owner, body) VALUES (1, 'A quiet week in the valley: cranes return to the wetlands.');
SELECT pg_temp.try($$INSERT INTO docs (owner, body) VALUES (1, 'A quiet week in the valley: cranes return to the wetlands!')$$);
INSERT INTO docs (owner, body) VALUES (2, 'A quiet week in the valley: cranes return to the wetlands!');
SELECT owner, count(*) FROM docs GROUP BY owner ORDER BY owner;
-- Renaming another column of an attachment with or without a scope changes nothing of it.
ALTER TABLE docs RENAME COLUMN meta TO info;
CREATE TABLE plain (id int PRIMARY KEY, note text, body text);
SELECT simhash_attach('plain', 'body', on_duplicate => 'error');
ALTER TABLE plain RENAME COLUMN note TO remark;
SELECT table_name, text_column, scope_column FROM simhash_attachments() WHERE table_name IN ('docs'::regclass, 'plain'::regclass) ORDER BY 1;
SELECT attname FROM pg_attribute WHERE attrelid = 'plain'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;
DROP TABLE plain;
\set VERBOSITY default
DROP TABLE posts, notes, skipped, docs;
