-- simhash() and simhash_features(): SPEC §2 golden vectors, every tokenizer and weighting, Chinese and English.
SELECT simhash('abc', tokenizer => 'char', stopwords => false) AS abc,
       simhash('ＡＢＣ', tokenizer => 'char', stopwords => false) AS full_width_abc,
       simhash('aab', tokenizer => 'char', stopwords => false) AS aab,
       simhash('Hello, World!', tokenizer => 'char', stopwords => false) AS hello;
SELECT simhash('我喜欢看电视，不喜欢看电影。', tokenizer => 'char', stopwords => false) AS zh_char,
       simhash('我喜欢看电视，不喜欢看电影。', tokenizer => 'char', shingle => 3, stopwords => false) AS zh_char3,
       simhash('abcdef', tokenizer => 'char', shingle => 3, stopwords => false) AS abcdef3;
-- No features: empty, punctuation only, stop words only (when they are dropped).
SELECT simhash('!!!', tokenizer => 'char') IS NULL AS punctuation,
       simhash('') IS NULL AS empty,
       simhash('的了是在', stopwords => true) IS NULL AS zh_stop_words,
       simhash('The of AND', stopwords => true) IS NULL AS en_stop_words,
       simhash('The of AND') IS NULL AS stop_words_kept_by_default;
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
