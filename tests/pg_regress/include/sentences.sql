-- Temp table sentences(n, s): the distinct sentences (12+ characters) of the repository's real
-- Chinese and English documents. Needs :abs_srcdir (\getenv abs_srcdir PG_ABS_SRCDIR).
CREATE TEMP TABLE source_text (doc text);
\set zh :abs_srcdir '/../data/long_zh.txt'
\set en :abs_srcdir '/../data/long_en.txt'
\set corpus :abs_srcdir '/../../demo/corpus.tsv'
COPY source_text FROM :'zh';
COPY source_text FROM :'en';
COPY source_text FROM :'corpus' WITH (DELIMITER E'\x1f');
CREATE TEMP TABLE sentences AS
SELECT row_number() OVER (ORDER BY s) AS n, s
FROM (SELECT DISTINCT trim(s) AS s
      FROM source_text, regexp_split_to_table(doc, '(?<=[。！？.!?])\s*|\t') s) x
WHERE length(s) >= 12;
