"""The writers of tests/robustness/hammer.sh: WRITERS connections that write random transactions into
the attached tables of hammer.sh for SECONDS, then write what each statement ended in to a file.

    python3 tests/robustness/hammer.py --port PORT --db DB --seconds S --writers N --out DIR [--seed N]

Python's standard library only: the writers speak PostgreSQL's protocol themselves (the simple query
protocol, trust authentication over the Unix socket in /tmp, COPY FROM STDIN), so that every
statement's SQLSTATE is known and a COPY's client can pause between its rows.

Each writer loops over transactions at a random isolation level (READ COMMITTED, REPEATABLE READ,
SERIALIZABLE) of 1 to 4 random statements, each into a random table of TABLES, of a random kind
(KINDS). The texts (Texts): most writes use one of 30 base paragraphs of 40-80 words (a new
pool every second, 3 of them hot) with one or two words changed (or none), so near-duplicates race all
the time; the rest a fresh text of random words. Every written row's `note` names its writer, transaction and statement
(`w3.t57.s2`), which DIR/writer-N.log lists with their SQL, isolation level and outcome.

An error with an expected SQLSTATE (23505, 40P01, 40001, 55P03) rolls the transaction back (or, in
transactions that use savepoints, the statement's savepoint, and the transaction goes on); any other
error is a failure, listed in DIR/unexpected.log. Written to DIR/stats.tsv: per table, the
statements and what they ended in; the exit status is 1 when any error was unexpected or a writer
did not finish in time.
"""

import argparse
import collections
import os
import random
import re
import socket
import struct
import sys
import threading
import time

EXPECTED = {"23505", "40P01", "40001", "55P03"}
ISOLATION = ["READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"]

# name: (method, mode, layout) — layout 'plain', 'partitioned' (by list of grp: 1, 2, 3; rows move
# by UPDATE of grp) or 'scoped' (scope => grp). hammer.sh creates and attaches them.
TABLES = {
    "sh_error_v": ("simhash", "error", "plain"),
    "sh_skip_nv": ("simhash", "skip", "plain"),
    "sh_flag_v": ("simhash", "flag", "plain"),
    "mh_error_nv": ("minhash", "error", "plain"),
    "mh_skip_v": ("minhash", "skip", "plain"),
    "mh_flag_nv": ("minhash", "flag", "plain"),
    "part_sh_error_v": ("simhash", "error", "partitioned"),
    "part_mh_skip_nv": ("minhash", "skip", "partitioned"),
    "scope_sh_error_nv": ("simhash", "error", "scoped"),
}


# ---------------------------------------------------------------------------------------------
# A minimal client of PostgreSQL's frontend/backend protocol (version 3.0, simple queries).


class PgError(Exception):
    def __init__(self, fields):
        self.fields = fields
        self.code = fields.get("C", "?????")
        self.message = fields.get("M", "")
        super().__init__(f"{self.code}: {self.message}")


def _fields(body):
    out = {}
    for part in body.split(b"\0"):
        if part:
            out[chr(part[0])] = part[1:].decode("utf-8", "replace")
    return out


class Conn:
    def __init__(self, port, db, appname, host="/tmp"):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(f"{host}/.s.PGSQL.{port}")
        self.buf = bytearray()
        self.params = {}
        kv = [("user", "postgres"), ("database", db), ("application_name", appname), ("client_encoding", "UTF8")]
        body = b"".join(k.encode() + b"\0" + v.encode() + b"\0" for k, v in kv) + b"\0"
        self.sock.sendall(struct.pack("!ii", len(body) + 8, 196608) + body)
        while True:
            t, msg = self._read()
            if t == b"R" and struct.unpack("!i", msg[:4])[0] != 0:
                raise RuntimeError("the server asks for a password: hammer.py needs trust authentication")
            if t == b"E":
                raise PgError(_fields(msg))
            if t == b"S":
                name, value = msg.split(b"\0")[:2]
                self.params[name.decode()] = value.decode()
            if t == b"Z":
                return

    def _read(self):
        while len(self.buf) < 5:
            self._fill()
        t = bytes(self.buf[:1])
        n = struct.unpack("!i", self.buf[1:5])[0] + 1
        while len(self.buf) < n:
            self._fill()
        msg = bytes(self.buf[5:n])
        del self.buf[:n]
        return t, msg

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.buf += chunk

    def _send(self, t, payload):
        self.sock.sendall(t + struct.pack("!i", len(payload) + 4) + payload)

    def query(self, sql, copy_rows=None, pause=None):
        """Runs one statement: (command tag, rows of text values); raises PgError. For COPY FROM
        STDIN, sends copy_rows (lines), calling pause() after each."""
        self._send(b"Q", sql.encode() + b"\0")
        error, tag, rows = None, None, []
        while True:
            t, msg = self._read()
            if t == b"D":
                (n,) = struct.unpack("!h", msg[:2])
                pos, row = 2, []
                for _ in range(n):
                    (ln,) = struct.unpack("!i", msg[pos : pos + 4])
                    pos += 4
                    if ln < 0:
                        row.append(None)
                    else:
                        row.append(msg[pos : pos + ln].decode())
                        pos += ln
                rows.append(row)
            elif t == b"C":
                tag = msg.rstrip(b"\0").decode()
            elif t == b"E":
                error = PgError(_fields(msg))
            elif t == b"G":
                for line in copy_rows or []:
                    self._send(b"d", line.encode())
                    if pause:
                        pause()
                self._send(b"c", b"")
            elif t == b"Z":
                break
        if error:
            raise error
        return tag, rows

    def close(self):
        try:
            self._send(b"X", b"")
        except OSError:
            pass
        self.sock.close()


# ---------------------------------------------------------------------------------------------
# Texts


def make_words(rng, n=3000):
    onsets = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
              "br", "ch", "dr", "fl", "gr", "kr", "pl", "sh", "st", "th", "tr"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ea", "ou", "io"]
    codas = ["", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ck"]
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas)
                          for _ in range(rng.choice([1, 2, 2, 3]))))
    return sorted(words)


class Texts:
    """Near-duplicates come from a pool of NBASES base paragraphs of 40-80 words, made anew every
    EPOCH seconds (the same for every writer: the run's seed and the epoch's number), HOT of them
    taking most writes: each epoch starts with bases no table holds yet, which the writers race to
    write first."""

    NBASES, HOT, EPOCH = 30, 3, 1.0

    def __init__(self, seed, start):
        self.seed = seed
        self.start = start
        self.words = make_words(random.Random(seed))
        self.pools = {}
        self.lock = threading.Lock()

    def pool(self):
        epoch = int((time.monotonic() - self.start) / self.EPOCH)
        with self.lock:
            if epoch not in self.pools:
                rng = random.Random(self.seed * 100003 + epoch)
                self.pools[epoch] = [[rng.choice(self.words) for _ in range(rng.randint(40, 80))]
                                     for _ in range(self.NBASES)]
            return self.pools[epoch]

    def near(self, rng):
        """A base paragraph (a hot one, four times in five) with 0 (one time in ten), 1 or 2 words
        changed."""
        pool = self.pool()
        words = list(pool[rng.randrange(self.HOT)] if rng.random() < 0.8 else rng.choice(pool))
        for _ in range(rng.choice([0, 1, 1, 1, 1, 2, 2, 2, 2, 2])):
            words[rng.randrange(len(words))] = rng.choice(self.words)
        return " ".join(words)

    def fresh(self, rng):
        return " ".join(rng.choice(self.words) for _ in range(rng.randint(40, 80)))

    def any(self, rng):
        return self.near(rng) if rng.random() < 0.7 else self.fresh(rng)


def lit(s):
    return "NULL" if s is None else "'" + s.replace("'", "''") + "'"


# ---------------------------------------------------------------------------------------------
# Statements. Every kind returns (sql, copy rows or None, rows it asks to insert or None): rows
# asked for counts the rows a 'skip' table skipped (the command tag says how many were written).


class Writer:
    def __init__(self, n, args, texts, stats, deadline):
        self.n = n
        self.args = args
        self.texts = texts
        self.stats = stats
        self.deadline = deadline
        self.rng = random.Random(args.seed * 1000 + n)
        self.log = open(os.path.join(args.out, f"writer-{n}.log"), "w")
        self.merge = False
        self.txn = 0
        self.done = False

    # --- helpers
    def grp(self, table):
        if TABLES[table][2] == "scoped" and self.rng.random() < 0.05:
            return None
        return self.rng.randint(1, 3)

    def pick(self, table):
        """A row: one of the 40 newest ids (most often: those are the rows raced for), or any."""
        if self.rng.random() < 0.6:
            return f"(SELECT max(id) - (random() * 40)::int FROM {table})"
        return f"(SELECT id FROM {table} WHERE id >= (SELECT (random() * max(id))::bigint FROM {table}) ORDER BY id LIMIT 1)"

    def conflict(self, table):
        return "(ref, grp)" if TABLES[table][2] == "partitioned" else "(ref)"

    def grp_of_source(self, target, expr):
        # a partitioned target has no partition for NULL
        return f"coalesce({expr}, 1)" if TABLES[target][2] == "partitioned" else expr

    # --- the kinds
    def k_insert_one(self, t, tag):
        return f"INSERT INTO {t} (grp, body, note) VALUES ({lit_g(self.grp(t))}, {lit(self.texts.any(self.rng))}, '{tag}')", None, 1

    def k_insert_multi(self, t, tag):
        n = self.rng.randint(2, 5)
        values = ", ".join(f"({lit_g(self.grp(t))}, {lit(self.texts.any(self.rng))}, '{tag}')" for _ in range(n))
        return f"INSERT INTO {t} (grp, body, note) VALUES {values}", None, n

    def k_insert_select(self, t, tag):
        # newest rows of another table (or this one), their first word changed: near-duplicates of rows
        # there, and of rows here when both took the same base
        src = self.rng.choice(list(TABLES))
        n = self.rng.randint(1, 3)
        word = self.rng.choice(self.texts.words)
        return (f"INSERT INTO {t} (grp, body, note) SELECT {self.grp_of_source(t, 'grp')}, "
                f"regexp_replace(body, '^\\S+', '{word}'), '{tag}' FROM {src} "
                f"WHERE id > (SELECT max(id) - 60 FROM {src}) ORDER BY random() LIMIT {n}"), None, None

    def k_insert_select_slow(self, t, tag):
        # each source row takes a while to compute: the statement's earlier rows are written meanwhile
        n = self.rng.randint(2, 4)
        values = ", ".join(f"({lit_g(self.grp(t))}, {lit(self.texts.any(self.rng))})" for _ in range(n))
        return (f"INSERT INTO {t} (grp, body, note) SELECT v.g::int, v.b, '{tag}' FROM (VALUES {values}) v(g, b) "
                f"WHERE pg_sleep(0.004)::text = ''"), None, n

    def k_copy(self, t, tag):
        n = self.rng.randint(1, 5)
        rows = []
        for _ in range(n):
            g = self.grp(t)
            rows.append((NULL_COPY if g is None else str(g)) + "\t" + self.texts.any(self.rng) + "\t" + tag + "\n")
        return f"COPY {t} (grp, body, note) FROM STDIN", rows, n

    def k_update_near(self, t, tag):
        return f"UPDATE {t} SET body = {lit(self.texts.near(self.rng))}, note = '{tag}' WHERE id = {self.pick(t)}", None, None

    def k_update_fresh(self, t, tag):
        return f"UPDATE {t} SET body = {lit(self.texts.fresh(self.rng))}, note = '{tag}' WHERE id = {self.pick(t)}", None, None

    def k_update_key(self, t, tag):
        # a row move (partitioned), a move to another scope (scoped), a column no check reads (plain)
        return f"UPDATE {t} SET grp = {lit_g(self.grp(t))}, note = '{tag}' WHERE id = {self.pick(t)}", None, None

    def k_update_key_text(self, t, tag):
        return (f"UPDATE {t} SET grp = {lit_g(self.grp(t))}, body = {lit(self.texts.any(self.rng))}, note = '{tag}' "
                f"WHERE id = {self.pick(t)}"), None, None

    def k_update_same(self, t, tag):
        # the text's value unchanged (its stored form may change): never checked
        return f"UPDATE {t} SET body = body || '', note = '{tag}' WHERE id = {self.pick(t)}", None, None

    def k_upsert_nothing(self, t, tag):
        return (f"INSERT INTO {t} (ref, grp, body, note) VALUES ({self.rng.randint(1, 200)}, {lit_g(self.grp(t) or 1)}, "
                f"{lit(self.texts.any(self.rng))}, '{tag}') ON CONFLICT {self.conflict(t)} DO NOTHING"), None, None

    def k_upsert_update(self, t, tag):
        return (f"INSERT INTO {t} (ref, grp, body, note) VALUES ({self.rng.randint(1, 200)}, {lit_g(self.grp(t) or 1)}, "
                f"{lit(self.texts.any(self.rng))}, '{tag}') ON CONFLICT {self.conflict(t)} "
                f"DO UPDATE SET body = EXCLUDED.body, note = EXCLUDED.note"), None, None

    def k_cte(self, t, tag):
        # one statement writing two or three tables (or one table twice)
        t2 = self.rng.choice(list(TABLES))
        parts = [
            f"u AS (UPDATE {t} SET body = {lit(self.texts.any(self.rng))}, note = '{tag}' WHERE id = {self.pick(t)} RETURNING id)",
            f"i AS (INSERT INTO {t2} (grp, body, note) VALUES ({lit_g(self.grp(t2))}, {lit(self.texts.any(self.rng))}, '{tag}'), "
            f"({lit_g(self.grp(t2))}, {lit(self.texts.any(self.rng))}, '{tag}') RETURNING id)",
        ]
        self.rng.shuffle(parts)
        t3 = self.rng.choice([t, t2, self.rng.choice(list(TABLES))])
        return (f"WITH {parts[0]}, {parts[1]} INSERT INTO {t3} (grp, body, note) "
                f"VALUES ({lit_g(self.grp(t3))}, {lit(self.texts.any(self.rng))}, '{tag}')"), None, None

    def k_merge(self, t, tag):
        # matched: a new text (and, partitioned or scoped, maybe a new grp: a move); not matched: an insert
        g = self.grp(t) or 1
        move = ", grp = s.grp" if self.rng.random() < 0.5 else ""
        return (f"MERGE INTO {t} d USING (VALUES ({self.rng.randint(1, 200)}, {g}, {lit(self.texts.any(self.rng))}, '{tag}')) "
                f"s(ref, grp, body, note) ON d.ref = s.ref "
                f"WHEN MATCHED THEN UPDATE SET body = s.body, note = s.note{move} "
                f"WHEN NOT MATCHED THEN INSERT (ref, grp, body, note) VALUES (s.ref, s.grp, s.body, s.note)"), None, None

    def k_delete(self, t, tag):
        return f"DELETE FROM {t} WHERE id = {self.pick(t)}", None, None

    def k_partition(self, t, tag):
        # straight into a partition
        g = self.rng.randint(1, 3)
        return f"INSERT INTO {t}_p{g} (grp, body, note) VALUES ({g}, {lit(self.texts.any(self.rng))}, '{tag}')", None, 1

    KINDS = [  # (kind, weight)
        ("insert_one", 12), ("insert_multi", 8), ("insert_select", 5), ("insert_select_slow", 3),
        ("copy", 8), ("update_near", 10), ("update_fresh", 5), ("update_key", 6), ("update_key_text", 4),
        ("update_same", 2), ("upsert_nothing", 6), ("upsert_update", 4), ("cte", 6), ("merge", 5),
        ("delete", 3), ("partition", 3),
    ]

    def statement(self, tag):
        while True:
            t = self.rng.choice(list(TABLES))
            kind = self.rng.choices([k for k, _ in self.KINDS], [w for _, w in self.KINDS])[0]
            if kind == "merge" and not self.merge:
                continue
            if kind == "partition" and TABLES[t][2] != "partitioned":
                continue
            sql, copy, asked = getattr(self, "k_" + kind)(t, tag)
            return t, kind, sql, copy, asked

    # --- the loop
    def write_log(self, line):
        self.log.write(f"{time.monotonic():.4f} {line}\n")

    def run(self):
        try:
            self.conn = Conn(self.args.port, self.args.db, f"hammer-w{self.n}")
            # MERGE: PostgreSQL 15 and later (server_version: "15.20 (Debian ...)", "16beta1", ...)
            self.merge = int(re.match(r"\d+", self.conn.params.get("server_version", "0")).group()) >= 15
            self.conn.query("SET statement_timeout = '60s'")
            while time.monotonic() < self.deadline:
                self.transaction()
            self.conn.close()
            self.done = True
        except Exception as e:  # a lost connection, a protocol error: the run fails
            self.stats.unexpected(f"writer {self.n}: {type(e).__name__}: {e}")
        finally:
            self.log.close()

    def transaction(self):
        rng = self.rng
        self.txn += 1
        iso = rng.choice(ISOLATION)
        savepoints = rng.random() < 0.15
        self.write_log(f"w{self.n}.t{self.txn} BEGIN ISOLATION LEVEL {iso}{' (savepoints)' if savepoints else ''}")
        self.conn.query(f"BEGIN ISOLATION LEVEL {iso}")
        written = set()
        for s in range(1, rng.choice([1, 1, 2, 2, 3, 4]) + 1):
            tag = f"w{self.n}.t{self.txn}.s{s}"
            t, kind, sql, copy, asked = self.statement(tag)
            if savepoints:
                self.conn.query("SAVEPOINT s")
            pause = (lambda: time.sleep(rng.uniform(0, 0.004))) if copy and rng.random() < 0.5 else None
            try:
                cmd, _ = self.conn.query(sql, copy, pause)
                written_rows = int(cmd.split()[-1]) if cmd and cmd.split()[-1].isdigit() else 0
                self.stats.ok(t, kind, asked, written_rows)
                self.write_log(f"{tag} {t} {kind}: {cmd}: {sql}{' | ' + ''.join(copy).replace(chr(10), ' / ') if copy else ''}")
                written.add(t)
            except PgError as e:
                self.stats.error(t, kind, e, f"{tag} {iso} {kind}: {sql}")
                self.write_log(f"{tag} {t} {kind}: ERROR {e.code} {e.message}: {sql}")
                if savepoints and e.code in EXPECTED:
                    self.conn.query("ROLLBACK TO SAVEPOINT s")
                    continue
                self.conn.query("ROLLBACK")
                self.write_log(f"w{self.n}.t{self.txn} ROLLBACK")
                return
            time.sleep(rng.uniform(0, 0.02))
        end = "ROLLBACK" if rng.random() < 0.05 else "COMMIT"
        try:
            cmd, _ = self.conn.query(end)
            # a COMMIT of a transaction that failed (after ROLLBACK TO SAVEPOINT: none) says ROLLBACK
            self.write_log(f"w{self.n}.t{self.txn} {end}: {cmd}")
            self.stats.ended(end if cmd == end else "ROLLBACK")
        except PgError as e:
            self.stats.error("(commit)", "commit", e, f"w{self.n}.t{self.txn} {iso} COMMIT")
            self.write_log(f"w{self.n}.t{self.txn} {end}: ERROR {e.code} {e.message}")


NULL_COPY = "\\N"


def lit_g(g):
    return "NULL" if g is None else str(g)


# ---------------------------------------------------------------------------------------------
# Counting


class Stats:
    COLUMNS = ["statements", "ok", "near_23505", "other_23505", "40P01", "near_40001", "other_40001",
               "55P03", "asked", "written", "unexpected"]

    def __init__(self, out):
        self.lock = threading.Lock()
        self.tables = collections.defaultdict(collections.Counter)
        self.kinds = collections.defaultdict(collections.Counter)
        self.ends = collections.Counter()
        self.unexpected_errors = []
        self.out = out

    def ok(self, table, kind, asked, written):
        with self.lock:
            c = self.tables[table]
            c["statements"] += 1
            c["ok"] += 1
            self.kinds[kind]["ok"] += 1
            if asked is not None:
                c["asked"] += asked
                c["written"] += written

    def error(self, table, kind, e, what):
        # counted against the table the message names (a partition's against its parent), else
        # against the statement's first table
        named = re.search(r'relation "([^"]+)"', e.message)
        if named:
            name = re.sub(r"_p[0-9]$", "", named.group(1))
            table = name if name in TABLES else table
        with self.lock:
            c = self.tables[table]
            c["statements"] += 1
            near = "near-duplicate" in e.message
            if e.code in ("23505", "40001"):
                key = ("near_" if near else "other_") + e.code
            elif e.code in EXPECTED:
                key = e.code
            else:
                key = "unexpected"
                self.unexpected_errors.append(f"{what}\n    -> ERROR {e.code}: {e.message} {e.fields.get('D', '')}")
            c[key] += 1
            self.kinds[kind][key] += 1

    def ended(self, how):
        with self.lock:
            self.ends[how] += 1

    def unexpected(self, what):
        with self.lock:
            self.unexpected_errors.append(what)
            self.tables["(writer)"]["unexpected"] += 1

    def write(self):
        with open(os.path.join(self.out, "stats.tsv"), "w") as f:
            f.write("table\t" + "\t".join(self.COLUMNS) + "\n")
            for t in [*TABLES, "(commit)", "(writer)"]:
                f.write(t + "\t" + "\t".join(str(self.tables[t][k]) for k in self.COLUMNS) + "\n")
        with open(os.path.join(self.out, "unexpected.log"), "w") as f:
            for u in self.unexpected_errors:
                f.write(u + "\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--seconds", type=float, default=75)
    p.add_argument("--writers", type=int, default=8)
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--out", required=True)
    args = p.parse_args()

    start = time.monotonic()
    texts = Texts(args.seed, start)
    stats = Stats(args.out)
    deadline = start + args.seconds
    writers = [Writer(n, args, texts, stats, deadline) for n in range(1, args.writers + 1)]
    threads = [threading.Thread(target=w.run, daemon=True) for w in writers]
    for th in threads:
        th.start()
    for th in threads:
        # a transaction in progress at the deadline has 60 s (its statement timeout) and more to end
        th.join(max(0.0, deadline + 90 - time.monotonic()))
    stuck = [w.n for w, th in zip(writers, threads) if th.is_alive()]
    if stuck:
        stats.unexpected(f"writers {stuck} did not finish within 90 s of the end")
    stats.write()

    txns = sum(w.txn for w in writers)
    print(f"  {args.writers} writers, {txns} transactions ({stats.ends['COMMIT']} committed) in "
          f"{time.monotonic() - start:.0f} s, seed {args.seed}")
    print("  statements by kind (ok / expected errors):")
    for kind, _ in Writer.KINDS:
        c = stats.kinds[kind]
        errs = sum(v for k, v in c.items() if k != "ok")
        print(f"    {kind:20} {c['ok']:6} / {errs}")
    for u in stats.unexpected_errors[:20]:
        print("  unexpected: " + u)
    sys.exit(1 if stats.unexpected_errors else 0)


if __name__ == "__main__":
    main()
