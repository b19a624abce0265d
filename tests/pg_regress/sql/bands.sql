-- hamming(), simhash_bands(), simhash_band(): docs/ARCHITECTURE.md §4.1.
SELECT hamming(0, 0) AS same, hamming(0, -1) AS all_bits, hamming(5, 6) AS two,
       hamming(-9223372036854775808, 9223372036854775807) AS sign_bit_counts;
SELECT simhash_bands(x'123456789abcdef0'::bigint) AS four,
       simhash_bands(x'123456789abcdef0'::bigint, 3) AS three,
       simhash_bands(-1, 5) AS five;
SELECT n, cardinality(simhash_bands(-1, n)) AS bands,
       (SELECT sum(length(ltrim(b::bit(32)::text, '0'))) FROM unnest(simhash_bands(-1, n)) b) AS bits
FROM (VALUES (3), (4), (7), (16), (64)) v(n) ORDER BY n;
-- Band i covers bits [64i/n, 64(i+1)/n): band values reassemble the fingerprint.
SELECT bool_and(
         (SELECT sum(simhash_band(fp, i, n) * 2::numeric ^ (64 * i / n)) FROM generate_series(0, n - 1) i)
         = CASE WHEN fp < 0 THEN fp + 2::numeric ^ 64 ELSE fp END) AS reassembles
FROM (VALUES (0::bigint), (-1), (42), (-8300616725021068736), (7359782673178083930)) f(fp),
     (VALUES (3), (4), (5), (8), (64)) b(n);
-- Pigeonhole: fingerprints within n-1 bits share a band.
WITH pairs AS (
  SELECT fp, fp # (1::bigint << a) # (1::bigint << b) # (1::bigint << c) AS near
  FROM (VALUES (-8300616725021068736), (7359782673178083930)) f(fp),
       generate_series(0, 63, 7) a, generate_series(1, 63, 11) b, generate_series(2, 63, 13) c
)
SELECT count(*) AS pairs, bool_and(hamming(fp, near) <= 3) AS within_3,
       bool_and(EXISTS (SELECT FROM generate_series(0, 3) i
                        WHERE simhash_band(fp, i) = simhash_band(near, i))) AS share_a_band
FROM pairs;
-- Bands of a real fingerprint, for a generated column or expression index.
SELECT simhash_band(simhash('北京地铁19号线今天开通'), i) AS band, i
FROM generate_series(0, 3) i ORDER BY i;
