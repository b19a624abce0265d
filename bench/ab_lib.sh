# Two private PostgreSQL servers, A and B, for the interleaved A/B benchmarks (bench/studies/leafmap/leafmap_ab.sh,
# bench/studies/security/security_ab.sh, bench/methods_ab.sh). Source it after setting PREFIX (A and B: complete
# PostgreSQL installs), PORTS (A and B) and DIR (their data directories, removed first).

sql() { # build, psql arguments (SQL on stdin or with -c)
    local build=$1
    shift
    "${PREFIX[$build]}/bin/psql" -h /tmp -p "${PORTS[$build]}" -U postgres -qXAt -v ON_ERROR_STOP=1 "$@"
}

stop_all() {
    for build in A B; do
        [ -f "$DIR/$build/postmaster.pid" ] &&
            runuser -u postgres -- "${PREFIX[$build]}/bin/pg_ctl" -D "$DIR/$build" -w stop -m fast >/dev/null
    done
    return 0
}

# start_all SHARED_BUFFERS: both servers, fresh, on loopback sockets only, without parallel workers,
# autovacuum or fsync; stopped when the script exits.
start_all() {
    rm -rf "$DIR"
    install -d -o postgres -g postgres "$DIR"
    trap stop_all EXIT
    local build
    for build in A B; do
        runuser -u postgres -- "${PREFIX[$build]}/bin/initdb" -D "$DIR/$build" -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
        env -u RUST_BACKTRACE -u RUST_LIB_BACKTRACE runuser -u postgres -- "${PREFIX[$build]}/bin/pg_ctl" \
            -D "$DIR/$build" -l "$DIR/$build.log" -w start -o "-p ${PORTS[$build]} -k /tmp \
            -c listen_addresses='' -c shared_buffers=$1 -c max_parallel_workers_per_gather=0 \
            -c autovacuum=off -c fsync=off" >/dev/null
    done
}

# ab_run ROUNDS SPEC...: with the caller's `measure BUILD KIND` (printing "ms cpu_ns hits"), an
# untimed warm-up, then ROUNDS rounds measuring every KIND of the SPECs for A then B (B then A in
# every other round), each measurement printed as it comes; then, per SPEC KIND:COUNT:SCALE:UNIT,
# the medians per COUNT operations times SCALE (in UNIT), B/A, the medians of the rounds' paired
# B/A ratios, the same for backend CPU time, and the hits of each build (which must agree); then the
# same figures as one table, with the spread (lower and upper quartile) of the paired ratios and B/A
# of the least CPU time of any round (on a shared virtual machine the least disturbed figure). Hits
# that differ between A and B, or from round to round, are printed as MISMATCH and make ab_run
# return 1 (after printing everything).
ab_run() {
    local rounds=$1 spec kind build round order results m kinds=()
    shift
    for spec in "$@"; do kinds+=("${spec%%:*}"); done
    for build in A B; do for kind in "${kinds[@]}"; do
        measure "$build" "$kind" >/dev/null || { echo "ab_run: warm-up $build $kind failed" >&2; return 1; }
    done; done
    echo "round build kind ms cpu_ns hits"
    results=$(
        for round in $(seq 1 "$rounds"); do
            order="A B"
            [ $((round % 2)) -eq 0 ] && order="B A"
            for build in $order; do
                for kind in "${kinds[@]}"; do
                    m=$(measure "$build" "$kind") || { echo "ab_run: $build $kind failed" >&2; exit 1; }
                    echo "$round $build $kind $m"
                done
            done
        done | tee /dev/stderr
        [ "${PIPESTATUS[0]}" -eq 0 ]
    ) || return 1
    echo
    printf '%s\n' "$results"
    python3 - "$@" <<PY
import statistics, sys
rows = [line.split() for line in """$results""".strip().splitlines()]
table, mismatches = [], []
for spec in sys.argv[1:]:
    kind, n, scale, unit = spec.split(":", 3)
    n, scale = int(n), float(scale)
    got = {b: sorted((r for r in rows if r[1] == b and r[2] == kind), key=lambda r: int(r[0])) for b in "AB"}
    found = {b: sorted({r[5] for r in got[b]}) for b in "AB"}
    med = {b: statistics.median(float(r[3]) for r in got[b]) * scale / n for b in "AB"}
    cpu = {b: statistics.median(int(r[4]) for r in got[b]) / 1e6 * scale / n for b in "AB"}
    paired = statistics.median(float(b[3]) / float(a[3]) for a, b in zip(got["A"], got["B"]))
    # A backend's CPU time can read 0 for a measurement shorter than a scheduler tick: such rounds
    # are left out of the paired CPU ratios (all of them: nan).
    cpu_pairs = [(a, b) for a, b in zip(got["A"], got["B"]) if int(a[4]) > 0]
    cpu_paired = statistics.median(int(b[4]) / int(a[4]) for a, b in cpu_pairs) if cpu_pairs else float("nan")
    if cpu["A"] == 0:
        cpu["A"] = float("nan")
    print(f"{kind}: {unit}, median of {len(got['A'])} rounds: A {med['A']:.4f}, B {med['B']:.4f}, "
          f"B/A {med['B'] / med['A']:.3f} (paired by round {paired:.3f}); backend CPU: A {cpu['A']:.4f}, "
          f"B {cpu['B']:.4f}, B/A {cpu['B'] / cpu['A']:.3f} (paired {cpu_paired:.3f}); found A {found['A']} B {found['B']}")
    quart = lambda xs: statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    q = quart([float(b[3]) / float(a[3]) for a, b in zip(got["A"], got["B"])])
    cq = quart([int(b[4]) / int(a[4]) for a, b in cpu_pairs] or [float("nan")])
    same = found["A"] == found["B"] and len(found["A"]) == 1
    fastest = {b: min(int(r[4]) for r in got[b]) for b in "AB"}
    cpu_min = f"{fastest['B'] / fastest['A']:.3f}" if fastest["A"] > 0 else "nan"
    table.append((kind, unit, f"{med['A']:.4f}", f"{med['B']:.4f}", f"{med['B'] / med['A']:.3f}",
                  f"{paired:.3f} [{q[0]:.2f}-{q[2]:.2f}]", f"{cpu['A']:.4f}", f"{cpu['B']:.4f}",
                  f"{cpu['B'] / cpu['A']:.3f}", f"{cpu_paired:.3f} [{cq[0]:.2f}-{cq[2]:.2f}]", cpu_min,
                  "yes" if same else "MISMATCH"))
    if not same:
        mismatches.append(f"MISMATCH in {kind}: found A {found['A']} B {found['B']}")
print()
head = ("kind", "unit", "A", "B", "B/A", "paired B/A [quartiles]", "CPU A", "CPU B", "CPU B/A",
        "CPU paired [quartiles]", "CPU fastest B/A", "same found")
widths = [max(len(r[i]) for r in [head] + table) for i in range(len(head))]
for r in [head] + table:
    print("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
for m in mismatches:
    print("!!! " + m + " !!!")
    print("!!! " + m + " !!!", file=sys.stderr)
sys.exit(1 if mismatches else 0)
PY
}
