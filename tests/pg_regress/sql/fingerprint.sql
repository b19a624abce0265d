-- simhash() and simhash_features(): golden vectors (docs/ARCHITECTURE.md §3.3) (algorithm v1, options named), every tokenizer,
-- weighting and fold of algorithm v2 with the 0.3.0 defaults, Chinese and English.
SELECT simhash('abc', tokenizer => 'char', stopwords => false, weighting => 'tf') AS abc,
       simhash('ＡＢＣ', tokenizer => 'char', stopwords => false, weighting => 'tf') AS full_width_abc,
       simhash('aab', tokenizer => 'char', stopwords => false, weighting => 'tf') AS aab,
       simhash('Hello, World!', tokenizer => 'char', stopwords => false, weighting => 'tf') AS hello;
SELECT simhash('我喜欢看电视，不喜欢看电影。', tokenizer => 'char', stopwords => false, weighting => 'tf') AS zh_char,
       simhash('我喜欢看电视，不喜欢看电影。', tokenizer => 'char', shingle => 3, stopwords => false, weighting => 'tf') AS zh_char3,
       simhash('abcdef', tokenizer => 'char', shingle => 3, stopwords => false, weighting => 'tf') AS abcdef3;
-- No features: empty, punctuation only, stop words only (when they are dropped).
SELECT simhash('!!!', tokenizer => 'char') IS NULL AS punctuation,
       simhash('') IS NULL AS empty,
       simhash('的了是在', tokenizer => 'word', stopwords => true) IS NULL AS zh_stop_words,
       simhash('The of AND', stopwords => true) IS NULL AS en_stop_words,
       simhash('The of AND') IS NULL AS stop_words_dropped_by_default,
       simhash('The of AND', stopwords => false) IS NULL AS stop_words_kept_on_request;
-- Every option combination on one mixed text, to pin the fingerprint contract.
SELECT t.tokenizer, s.shingle, w.weighting, sw.stopwords,
       simhash('北京地铁 Line 19 今天开通，全长 22 公里。Beijing opened metro line 19 today.',
               t.tokenizer, s.shingle, w.weighting, sw.stopwords) AS fp
FROM (VALUES ('jieba'), ('word'), ('char')) t(tokenizer),
     (VALUES (1), (2), (3)) s(shingle),
     (VALUES ('tf'), ('binary'), ('tfidf')) w(weighting),
     (VALUES (true), (false)) sw(stopwords)
WHERE w.weighting <> 'tfidf' OR s.shingle = 1
ORDER BY 1, 2, 3, 4;
-- Algorithm v2 (0.3.0): the bigram tokenizer, the sublinear weightings and folding, on the same text
-- and on a traditional-character one; 'auto' folds with the v2 weightings only.
SELECT t.tokenizer, w.weighting, f.fold,
       simhash('北京地铁 Line 19 今天开通，全长 22 公里。Beijing opened metro line 19 today.',
               t.tokenizer, 1, w.weighting, true, f.fold) AS fp,
       simhash('北京地鐵 19 號線今天開通，全長 22 公里。', t.tokenizer, 1, w.weighting, true, f.fold) AS traditional_fp
FROM (VALUES ('bigram'), ('word'), ('jieba')) t(tokenizer),
     (VALUES ('tf'), ('logtf'), ('logtfidf')) w(weighting),
     (VALUES ('none'), ('simplified'), ('auto')) f(fold)
ORDER BY 1, 2, 3;
-- The 0.3.0 defaults: bigram, 1, logtf, stop words dropped, fold 'auto' (so folded).
SELECT simhash('我喜欢看电视，不喜欢看电影。') AS zh_default,
       simhash('我喜欢看电视，不喜欢看电影。', 'bigram', 1, 'logtf', true, 'simplified') AS zh_spelled_out,
       simhash('The quick brown fox jumps over the lazy dog; the fox!') AS en_default;
-- Simplified and traditional Chinese share few features; case and width never matter.
SELECT hamming(simhash('我们今天去图书馆看书，然后一起吃午饭。'),
               simhash('我們今天去圖書館看書，然後一起吃午飯。')) AS simplified_vs_traditional,
       hamming(simhash('Near-duplicate DETECTION in PostgreSQL'),
               simhash('near-duplicate detection in ＰｏｓｔｇｒｅＳＱＬ')) AS case_and_width;
-- The features behind a fingerprint.
SELECT * FROM simhash_features('今天北京天气很好，我们去北京公园。');
SELECT * FROM simhash_features('今天北京天气很好，我们去北京公园。', tokenizer => 'jieba', stopwords => true);
SELECT * FROM simhash_features('The quick brown fox jumps over the lazy dog, the fox!', tokenizer => 'word', shingle => 2);
SELECT feature, round(weight::numeric, 4) AS weight FROM simhash_features('新闻报道：今天的新闻', tokenizer => 'jieba', weighting => 'tfidf');
SELECT * FROM simhash_features('Hello', tokenizer => 'char', shingle => 8, stopwords => false);
SELECT count(*) AS no_features FROM simhash_features('，。！');
-- 'logtfedge' (algorithm v2): 'logtf' whose first and last 60 features weigh less, from 0.2 at the
-- very ends to 1 at 60 features in; a short text lies wholly within them. Folds with 'auto'.
SELECT simhash('北京地铁 Line 19 今天开通，全长 22 公里。Beijing opened metro line 19 today.',
               'bigram', 1, 'logtfedge', true, 'auto') AS mixed_fp,
       simhash('北京地鐵 19 號線今天開通，全長 22 公里。', weighting => 'logtfedge') AS traditional_fp,
       simhash('北京地铁 19 号线今天开通，全长 22 公里。', weighting => 'logtfedge') AS simplified_fp,
       simhash('The quick brown fox jumps over the lazy dog; the fox!', tokenizer => 'word', shingle => 2,
               weighting => 'logtfedge') AS en_shingle2;
SELECT feature, round(weight::numeric, 4) AS weight
FROM simhash_features('The quick brown fox jumps over the lazy dog; the fox!', weighting => 'logtfedge');
-- Longer texts: the middle weighs fully; the same header and footer added around 100 bodies of 60 to
-- 159 words move fewer bits than with 'logtf'.
WITH body AS (
  SELECT n, string_agg('w' || i, ' ' ORDER BY i) AS t
  FROM generate_series(60, 159) n, generate_series(1, n) i GROUP BY n
), wrapped AS (
  SELECT n, t, 'Home > Docs > Admin > Reference, imported from the wiki on 12 April 2023. ' || t ||
               ' Copyright 2023 Example Corp. All rights reserved. Was this page helpful?' AS w
  FROM body
), d AS (
  SELECT n, hamming(simhash(t, weighting => 'logtf'), simhash(w, weighting => 'logtf')) AS logtf,
         hamming(simhash(t, weighting => 'logtfedge'), simhash(w, weighting => 'logtfedge')) AS logtfedge
  FROM wrapped
)
SELECT (SELECT simhash(t, weighting => 'logtfedge') FROM body WHERE n = 159) AS fp_159_words,
       (SELECT count(*) FROM body, simhash_features(t, weighting => 'logtfedge') f
        WHERE n = 159 AND f.weight = 1) AS full_weight_of_159,
       round(avg(logtf), 2) AS logtf_mean_distance, round(avg(logtfedge), 2) AS logtfedge_mean_distance,
       count(*) FILTER (WHERE logtf <= 7) AS logtf_within_7,
       count(*) FILTER (WHERE logtfedge <= 7) AS logtfedge_within_7
FROM d;
