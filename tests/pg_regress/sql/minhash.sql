-- MinHash signatures (issue 25): golden signatures and band keys of fixed texts, similarity of real
-- reposts, NULL handling and the errors of bad options and malformed or mismatched signatures.
SELECT length(minhash('The quick brown fox jumps over the lazy dog, and the dog sleeps.')) AS bytes,
       md5(minhash('The quick brown fox jumps over the lazy dog, and the dog sleeps.')) AS fox,
       md5(minhash('我喜欢看电视，不喜欢看电影。')) AS zh,
       md5(minhash('北京地铁19号线今天开通，line 19 opens today.')) AS mixed,
       md5(minhash('The quick brown fox jumps over the lazy dog, and the dog sleeps.', 'word', 0, true, 'auto', 16)) AS fox16;
SELECT substr(minhash('我喜欢看电视，不喜欢看电影。'), 1, 12) AS zh_head,
       (minhash_bands(minhash('我喜欢看电视，不喜欢看电影。')))[1:3] AS zh_bands,
       cardinality(minhash_bands(minhash('我喜欢看电视，不喜欢看电影。'))) AS nbands,
       minhash_bands(minhash('The quick brown fox jumps over the lazy dog, and the dog sleeps.', k => 16), 4, 4) AS fox16_bands;
-- Traditional characters are folded: the same signature as the simplified text.
SELECT minhash('第十屆春茶節在龍井村開幕。') = minhash('第十届春茶节在龙井村开幕。') AS folded,
       minhash('第十屆春茶節在龍井村開幕。', fold => 'none') = minhash('第十届春茶节在龙井村开幕。', fold => 'none') AS not_folded;
-- A repost with a site header and footer stays close; an unrelated text does not.
CREATE TEMP TABLE docs AS SELECT
  '市图书馆改造完成，下个月一日起重新对读者开放，新增自习座位两百个，并延长周末开放时间。馆方表示，改造期间借出的图书可以在任意分馆归还，逾期费用全部免除。'::text AS body,
  'The city council approved a budget for protected bike lanes on three main streets. Construction starts in spring and the lanes should open before the end of the year, the mayor said.'::text AS en;
SELECT round(minhash_similarity(minhash(body), minhash('【本地新闻】' || body || '（来源：本地日报，转载请注明出处）'))::numeric, 2) AS zh_repost,
       round(minhash_similarity(minhash(en), minhash('Local news | ' || en || ' Share this story. Subscribe to our newsletter.'))::numeric, 2) AS en_repost,
       round(minhash_similarity(minhash(body), minhash(en))::numeric, 2) AS unrelated
FROM docs;
SELECT minhash_similarity(minhash(body), minhash(body)) AS same FROM docs;
-- NULL in, NULL out; a text without tokens has no signature.
SELECT minhash(NULL) IS NULL AS null_text, minhash('。。！ ') IS NULL AS no_tokens,
       minhash_similarity(NULL, minhash('a')) IS NULL AS null_similarity, minhash_bands(NULL) IS NULL AS null_bands;
-- Errors.
SELECT minhash('abc', tokenizer => 'nope');
SELECT minhash('abc', k => 0);
SELECT minhash('abc', shingle => -1);
SELECT minhash_similarity('\x0102'::bytea, minhash('abc'));
SELECT minhash_similarity(minhash('a b c', k => 64), minhash('a b c'));
SELECT minhash_similarity(minhash('a b c', tokenizer => 'char'), minhash('a b c'));
SELECT minhash_bands(minhash('a b c'), 33, 4);
SELECT minhash_bands(minhash('a b c'), 1, 0);
