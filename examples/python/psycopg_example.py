"""simhash_ext from Python with psycopg 3.

A table attached with on_duplicate => 'error' rejects a near-duplicate insert with SQLSTATE 23505,
which psycopg raises as psycopg.errors.UniqueViolation: the same exception an ordinary unique
constraint gives, with the existing row's key and the Hamming distance in its DETAIL. The constraint
name tells the two apart: a near-duplicate's is the attachment's trigger name, simhash_<column>
(simhash_attachments().trigger_name), a duplicate key's is its index. Then: why the
two texts are near-duplicates (simhash_explain), a lookup of the rows near a text, and the
near-duplicate pairs of a table, with query parameters.

Connects with the libpq environment (PGHOST, PGPORT, PGUSER, PGDATABASE). Run:
    PGDATABASE=mydb python psycopg_example.py
"""

import re
import sys

import psycopg
from psycopg import errors

ORIGINAL = "市图书馆改造完成，下个月一日起重新对读者开放，新增自习座位两百个。"
REPOST = "市图书馆改造完成！下个月一日起重新对读者开放，新增自习座位两百个座位。"
OTHER = "The city council approved the budget for protected bike lanes on Monday."

CRAWL = [
    ("a1", "Heavy rain is expected in the north of the province from Tuesday night."),
    ("a2", "Heavy rain is expected in the north of the province from Tuesday night!"),
    ("a3", "The museum reopens on Saturday with a new wing for modern art."),
    ("a4", "第十届春茶节在龙井村开幕，游客可以现场体验采茶和炒茶，活动将持续到本月底。"),
    # The same news in traditional characters: folded to simplified by the default options.
    ("a5", "第十屆春茶節在龍井村開幕，遊客可以現場體驗採茶和炒茶，活動將持續到本月底。"),
]


def main() -> None:
    with psycopg.connect(autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS simhash_ext")
        conn.execute("DROP TABLE IF EXISTS articles, crawl")
        conn.execute("CREATE TABLE articles (id bigint PRIMARY KEY, title text, body text)")
        conn.execute("SELECT simhash_attach('articles', 'body', on_duplicate => 'error')")
        conn.execute("INSERT INTO articles VALUES (%s, %s, %s)", (1, "library", ORIGINAL))
        conn.execute("INSERT INTO articles VALUES (%s, %s, %s)", (2, "bike lanes", OTHER))

        (trigger_name,) = conn.execute(
            "SELECT trigger_name FROM simhash_attachments() WHERE table_name = 'articles'::regclass"
        ).fetchone()
        assert trigger_name == "simhash_body", trigger_name

        # 1. The near-duplicate insert fails like a unique violation, with the trigger's name as its
        # constraint name; a duplicate primary key fails with the same exception and its index's name.
        def insert(row: tuple) -> tuple[str, str | None]:
            """What the application makes of an insert: ('stored' | 'near-duplicate' | 'duplicate key', DETAIL)."""
            try:
                with conn.transaction():
                    conn.execute("INSERT INTO articles VALUES (%s, %s, %s)", row)
            except errors.UniqueViolation as e:
                if e.diag.constraint_name == trigger_name:
                    print(f"rejected: SQLSTATE {e.diag.sqlstate}, constraint {e.diag.constraint_name}: {e.diag.message_primary}")
                    print(f"          DETAIL: {e.diag.message_detail}")
                    return "near-duplicate", e.diag.message_detail
                print(f"duplicate key: constraint {e.diag.constraint_name}")
                return "duplicate key", e.diag.message_detail
            return "stored", None

        outcome, detail = insert((3, "repost", REPOST))
        if outcome != "near-duplicate":
            sys.exit(f"the near-duplicate insert gave {outcome!r}")
        unrelated = "A text unlike any other: the ferry timetable changes in May."
        assert insert((1, "same id", unrelated)) == ("duplicate key", "Key (id)=(1) already exists."), "primary key"
        # Verified, the DETAIL goes on with the similarity of the texts that decided (threshold 0.4).
        m = re.fullmatch(r"Key \(id\)=\((\d+)\) is at Hamming distance (\d+) \(max_distance 7\)"
                         r" and has similarity ([01]\.\d{3}) \(threshold 0\.4\)\.", detail or "")
        assert m, f"unexpected DETAIL: {detail!r}"
        assert float(m[3]) >= 0.4, m[3]
        (distance,) = conn.execute(
            "SELECT hamming(simhash(%s), simhash(%s))", (ORIGINAL, REPOST)
        ).fetchone()
        assert (int(m[1]), int(m[2])) == (1, distance), (m.groups(), distance)
        # The transaction was rolled back: the connection goes on, the repost is not there.
        (count,) = conn.execute("SELECT count(*) FROM articles").fetchone()
        assert count == 2, count

        # Why: the features the two texts do not share, and one row per differing bit.
        rows = conn.execute(
            "SELECT section, feature, bit, weight_a, weight_b FROM simhash_explain(%s, %s)"
            " WHERE section <> 'shared'",
            (ORIGINAL, REPOST),
        ).fetchall()
        one_sided = [(s, f, a if b is None else b) for s, f, _, a, b in rows if s.startswith("only_")]
        print("features in one text only:", one_sided)
        assert sum(1 for r in rows if r[0] == "bit") == distance, rows

        # 2. Lookup: the rows within the attached distance of a text, nearest first.
        rows = conn.execute(
            "SELECT (n.item).id, (n.item).title, n.distance"
            " FROM simhash_near_duplicates(NULL::articles, %s) n",
            (REPOST,),
        ).fetchall()
        print("near", repr(REPOST[:12] + "..."), "->", rows)
        assert rows == [(1, "library", distance)], rows
        assert conn.execute(
            "SELECT count(*) FROM simhash_near_duplicates(NULL::articles, %s) n",
            ("Completely unrelated: a recipe for tomato soup with basil.",),
        ).fetchone() == (0,)

        # 3. A fingerprint is a Python int; compare two in SQL.
        (fp,) = conn.execute("SELECT simhash(%s)", (ORIGINAL,)).fetchone()
        assert isinstance(fp, int) and -(2**63) <= fp < 2**63

        # 4. The near-duplicate pairs of a table that accepts them (on_duplicate 'none').
        conn.execute("CREATE TABLE crawl (url text PRIMARY KEY, body text)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO crawl VALUES (%s, %s)", CRAWL)
        conn.execute("SELECT simhash_attach('crawl', 'body')")
        pairs = conn.execute(
            "SELECT key_a, key_b, distance FROM simhash_pairs(%s) ORDER BY key_a, key_b",
            ("crawl",),
        ).fetchall()
        print("pairs:", pairs)
        assert [(a, b) for a, b, _ in pairs] == [("a1", "a2"), ("a4", "a5")], pairs
        assert all(0 <= d <= 7 for _, _, d in pairs), pairs
    print("psycopg example: ok")


if __name__ == "__main__":
    main()
