-- Every error of the SQL surface, with its SQLSTATE; NULL arguments give NULL, never an error.
\getenv abs_srcdir PG_ABS_SRCDIR
\set include :abs_srcdir '/include/try.sql'
\i :include
SELECT q, pg_temp.try(q) AS result FROM (VALUES
  ($$SELECT simhash('abc', tokenizer => 'bpe')$$),
  ($$SELECT simhash('abc', tokenizer => 'Jieba')$$),
  ($$SELECT simhash('abc', tokenizer => '')$$),
  ($$SELECT simhash('abc', shingle => 0)$$),
  ($$SELECT simhash('abc', shingle => -5)$$),
  ($$SELECT simhash('abc', shingle => 65)$$),
  ($$SELECT simhash('abc', weighting => 'bm25')$$),
  ($$SELECT simhash('abc', shingle => 2, weighting => 'tfidf')$$),
  ($$SELECT simhash('abc', shingle => 2, weighting => 'logtfidf')$$),
  ($$SELECT simhash('abc', fold => 'traditional')$$),
  ($$SELECT simhash('abc', fold => 'AUTO')$$),
  ($$SELECT simhash_features('abc', tokenizer => 'whitespace')$$),
  ($$SELECT simhash_bands(1, 2)$$),
  ($$SELECT simhash_bands(1, 65)$$),
  ($$SELECT simhash_band(1, 4)$$),
  ($$SELECT simhash_band(1, -1)$$),
  ($$SELECT simhash_band(1, 0, 100)$$),
  ($$SELECT simhash_band(1, 7, 8)$$)
) v(q);
-- A bad option is reported even when the text has no features.
SELECT pg_temp.try($$SELECT simhash('', tokenizer => 'nope')$$) AS empty_text_bad_option;
SELECT simhash(NULL) IS NULL AS doc, simhash('x', NULL) IS NULL AS tokenizer,
       simhash('x', 'char', NULL) IS NULL AS shingle, simhash('x', 'char', 1, NULL) IS NULL AS weighting,
       simhash('x', 'char', 1, 'tf', NULL) IS NULL AS stopwords,
       simhash('x', 'char', 1, 'tf', true, NULL) IS NULL AS fold,
       hamming(NULL, 1) IS NULL AS hamming, simhash_bands(NULL) IS NULL AS bands,
       simhash_band(1, NULL) IS NULL AS band,
       (SELECT count(*) FROM simhash_features(NULL)) AS features;
