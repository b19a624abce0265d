// simhash_ext from Node.js with node-postgres (pg).
//
// A near-duplicate insert into a table attached with on_duplicate => 'error' fails with
// err.code === '23505' (unique_violation), the code an application already handles for a duplicate
// key; err.constraint is the attachment's trigger name, simhash_<text column>, which tells it from a
// duplicate key (whose constraint is its index), and err.detail names the existing row's key and the
// Hamming distance. Then a lookup with a bound parameter. Connects with the libpq environment (PGHOST, PGPORT, PGUSER, PGDATABASE):
//     PGDATABASE=mydb node example.js
'use strict';

const assert = require('node:assert/strict');
const { Client } = require('pg');

const ORIGINAL = '北京地铁19号线今天开通，全长22公里，设10座车站。';
const REPOST = '北京地铁19号线今天开通！全长22公里，设10座车站';
// The constraint name of a near-duplicate: the trigger simhash_attach made, simhash_<text column>.
const NEAR_DUPLICATE = 'simhash_body';
const OTHER = 'Heavy rain is expected in the north of the province from Tuesday night.';

async function main() {
  const client = new Client();
  await client.connect();
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS simhash_ext');
    await client.query('DROP TABLE IF EXISTS news');
    await client.query('CREATE TABLE news (id int PRIMARY KEY, body text)');
    await client.query("SELECT simhash_attach('news', 'body', on_duplicate => 'error')");
    await client.query('INSERT INTO news VALUES ($1, $2), ($3, $4)', [1, ORIGINAL, 2, OTHER]);

    // What the application makes of an insert: 'stored', 'near-duplicate' or 'duplicate key'.
    async function insert(id, body) {
      try {
        await client.query('INSERT INTO news VALUES ($1, $2)', [id, body]);
        return { outcome: 'stored' };
      } catch (err) {
        if (err.code !== '23505') throw err;
        return { outcome: err.constraint === NEAR_DUPLICATE ? 'near-duplicate' : 'duplicate key', err };
      }
    }

    const { outcome, err: rejected } = await insert(3, REPOST);
    assert.equal(outcome, 'near-duplicate', `the near-duplicate insert gave ${outcome}`);
    console.log(`rejected: ${rejected.code}, constraint ${rejected.constraint}: ${rejected.message}`);
    console.log(`          DETAIL: ${rejected.detail}`);
    const duplicateKey = await insert(1, 'The ferry timetable changes in May; the evening boat is dropped.');
    assert.equal(duplicateKey.outcome, 'duplicate key');
    assert.equal(duplicateKey.err.constraint, 'news_pkey');
    // Verified, the DETAIL goes on with the similarity of the texts that decided (threshold 0.4).
    const m = /^Key \(id\)=\(1\) is at Hamming distance (\d+) \(max_distance 7\) and has similarity [01]\.\d{3} \(threshold 0\.4\)\.$/.exec(rejected.detail);
    assert.ok(m, `unexpected DETAIL: ${rejected.detail}`);

    const { rows: [{ d }] } = await client.query('SELECT hamming(simhash($1), simhash($2)) AS d', [ORIGINAL, REPOST]);
    assert.equal(Number(m[1]), d);

    // Lookup. bigint columns arrive as strings in node-postgres; id and distance are int here.
    const near = await client.query(
      'SELECT (n.item).id AS id, n.distance FROM simhash_near_duplicates(NULL::news, $1) n',
      [REPOST],
    );
    console.log('near the repost:', near.rows);
    assert.deepEqual(near.rows, [{ id: 1, distance: d }]);

    const { rows: [{ fp }] } = await client.query('SELECT simhash($1) AS fp', [ORIGINAL]);
    assert.match(fp, /^-?\d+$/, 'a fingerprint is a bigint, given as a string');
    console.log('node-postgres example: ok');
  } finally {
    await client.end();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
