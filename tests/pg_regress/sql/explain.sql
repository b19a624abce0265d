-- simhash_explain(a, b, <options of simhash()>): why two texts are or are not near-duplicates.
\getenv abs_srcdir PG_ABS_SRCDIR
\set include :abs_srcdir '/include/try.sql'
\i :include
\set include :abs_srcdir '/include/sentences.sql'
\i :include
-- An English pair, small edit: the summary, each differing bit with both sides' sums and strongest
-- features, then the features (shared, only in a, only in b) with their weights.
SELECT * FROM simhash_explain('The quick brown fox jumps over the lazy dog; the fox!',
                              'The quick brown fox leaps over the lazy dog; the fox!');
-- A Chinese pair: the same news with one clause changed, jieba words, stop words dropped.
SELECT section, feature, bit, round(weight_a::numeric, 3) AS weight_a, round(weight_b::numeric, 3) AS weight_b, detail
FROM simhash_explain('市图书馆改造完成，下个月一日起重新对读者开放，新增自习座位两百个。',
                     '市图书馆改造完成，下月起重新对读者开放，新增自习座位三百个。',
                     tokenizer => 'jieba', weighting => 'tf', fold => 'none');
-- Traditional and simplified characters: folded by default (distance 0, every feature shared) ...
SELECT section, count(*) AS rows, min(detail) FILTER (WHERE section = 'distance') AS summary
FROM simhash_explain('第十屆春茶節在龍井村開幕。', '第十届春茶节在龙井村开幕。')
GROUP BY section ORDER BY section;
-- ... and apart without folding: the folded characters are the one-sided features.
SELECT section, string_agg(feature, ' ' ORDER BY feature) AS features
FROM simhash_explain('第十屆春茶節在龍井村開幕。', '第十届春茶节在龙井村开幕。', tokenizer => 'word', fold => 'none')
WHERE section <> 'bit' AND feature IS NOT NULL
GROUP BY section ORDER BY section;
-- The explained distance is hamming(simhash(a), simhash(b)) with the same options: one 'bit' row per
-- differing bit, on the bits where the fingerprints differ, and the sign of each sum is the bit; over
-- real sentence pairs and several option sets.
WITH pairs AS (
  SELECT a.s AS a, b.s AS b FROM sentences a JOIN sentences b ON b.n = a.n + 1 WHERE a.n % 7 = 0
), opts(tokenizer, shingle, weighting, stopwords, fold) AS (
  VALUES ('bigram', 1, 'logtf', true, 'auto'), ('word', 1, 'tf', false, 'none'),
         ('jieba', 1, 'tfidf', true, 'none'), ('char', 3, 'binary', false, 'none'),
         ('word', 1, 'logtfidf', true, 'simplified'), ('bigram', 2, 'logtf', false, 'auto')
), checked AS (
  SELECT p.a, p.b, o.*,
         hamming(simhash(p.a, o.tokenizer, o.shingle, o.weighting, o.stopwords, o.fold),
                 simhash(p.b, o.tokenizer, o.shingle, o.weighting, o.stopwords, o.fold)) AS distance,
         simhash(p.a, o.tokenizer, o.shingle, o.weighting, o.stopwords, o.fold)
         # simhash(p.b, o.tokenizer, o.shingle, o.weighting, o.stopwords, o.fold) AS differing,
         simhash(p.a, o.tokenizer, o.shingle, o.weighting, o.stopwords, o.fold) AS fp_a,
         e.*
  FROM pairs p, opts o,
       LATERAL (SELECT count(*) AS bit_rows,
                       bool_and(bit BETWEEN 0 AND 63) AS in_range,
                       coalesce(sum(2::numeric ^ bit), 0) AS mask,
                       bool_and((weight_a > 0) <> (weight_b > 0)) AS sums_disagree,
                       bool_and((weight_a > 0) = (simhash(p.a, o.tokenizer, o.shingle, o.weighting, o.stopwords, o.fold) >> bit & 1 = 1)) AS sign_is_bit
                FROM simhash_explain(p.a, p.b, o.tokenizer, o.shingle, o.weighting, o.stopwords, o.fold)
                WHERE section = 'bit') e
)
SELECT count(*) AS checked, count(DISTINCT a) > 10 AS many_pairs,
       bool_and(bit_rows = distance) AS bit_rows_are_the_distance,
       bool_and(mask = CASE WHEN differing < 0 THEN differing + 2::numeric ^ 64 ELSE differing END) AS on_the_differing_bits,
       bool_and(coalesce(in_range AND sums_disagree AND sign_is_bit, distance = 0)) AS sums_decide_bits,
       max(distance) > 20 AS some_far, min(distance) < 10 AS some_near
FROM checked;
-- The feature rows are simhash_features() of each side, matched by text.
WITH e AS (SELECT * FROM simhash_explain('今天北京天气很好，我们去北京公园。', '今天上海天气很好，我们去公园。', tokenizer => 'jieba'))
SELECT (SELECT count(*) FROM (
          (SELECT feature, weight_a FROM e WHERE section IN ('shared', 'only_a')
           EXCEPT SELECT feature, weight FROM simhash_features('今天北京天气很好，我们去北京公园。', tokenizer => 'jieba'))
          UNION ALL
          (SELECT feature, weight FROM simhash_features('今天北京天气很好，我们去北京公园。', tokenizer => 'jieba')
           EXCEPT SELECT feature, weight_a FROM e WHERE section IN ('shared', 'only_a'))) d) AS a_differences,
       (SELECT count(*) FROM (
          (SELECT feature, weight_b FROM e WHERE section IN ('shared', 'only_b')
           EXCEPT SELECT feature, weight FROM simhash_features('今天上海天气很好，我们去公园。', tokenizer => 'jieba'))
          UNION ALL
          (SELECT feature, weight FROM simhash_features('今天上海天气很好，我们去公园。', tokenizer => 'jieba')
           EXCEPT SELECT feature, weight_b FROM e WHERE section IN ('shared', 'only_b'))) d) AS b_differences,
       (SELECT string_agg(feature, ', ' ORDER BY feature) FROM e WHERE section = 'only_a') AS only_a,
       (SELECT string_agg(feature, ', ' ORDER BY feature) FROM e WHERE section = 'only_b') AS only_b;
-- Identical texts: distance 0, no bit rows, no per-feature detail.
SELECT section, count(*), count(detail) AS details
FROM simhash_explain('Council approves budget for protected bike lanes', 'Council approves budget for protected bike lanes')
GROUP BY section ORDER BY section;
-- A text without features has no fingerprint: no distance, no bit rows, the other side's features.
SELECT * FROM simhash_explain('，。！', 'Hello, World!');
SELECT * FROM simhash_explain('the of and', '');
-- NULL: STRICT, no rows.
SELECT (SELECT count(*) FROM simhash_explain(NULL, 'abc')) AS a_null,
       (SELECT count(*) FROM simhash_explain('abc', NULL)) AS b_null,
       (SELECT count(*) FROM simhash_explain('abc', 'abd', tokenizer => NULL)) AS option_null;
-- Bad options: SQLSTATE 22023, naming the option, even when a text has no features.
SELECT q, pg_temp.try(q) AS result FROM (VALUES
  ($$SELECT * FROM simhash_explain('abc', 'abd', tokenizer => 'bpe')$$),
  ($$SELECT * FROM simhash_explain('abc', 'abd', shingle => 0)$$),
  ($$SELECT * FROM simhash_explain('abc', 'abd', shingle => 65)$$),
  ($$SELECT * FROM simhash_explain('abc', 'abd', weighting => 'bm25')$$),
  ($$SELECT * FROM simhash_explain('abc', 'abd', shingle => 2, weighting => 'tfidf')$$),
  ($$SELECT * FROM simhash_explain('abc', 'abd', fold => 'traditional')$$),
  ($$SELECT * FROM simhash_explain('', '', tokenizer => 'nope')$$)
) v(q);
