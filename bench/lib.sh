# Shared set-up of the benchmarks that run their own server on a private copy of PostgreSQL
# (bench/search.sh, bench/studies/attach/attach.sh). Source it after scripts/common.sh, with BENCH, PY, START,
# PACKAGE and PRIVATE_PG set.

step() { printf '\n[%4ds] == %s\n' $((SECONDS - START)) "$*" >&2; }

# bench_prepare NAME SKIP: the tools (apt packages, cargo-pgrx, a Python venv with psycopg), the
# release package of this working tree in $PACKAGE (not rebuilt when SKIP is 1 and one is there;
# its log in bench/.NAME-package.log), the private PostgreSQL in $PRIVATE_PG that loads it (sets
# PG_BIN for start_server / stop_server), and the corpus in bench/data/ if it is missing.
bench_prepare() {
    local name=$1 skip=$2
    step "tools: apt packages, cargo-pgrx, Python venv with psycopg"
    ensure_tools
    local missing=() pkg
    for pkg in gettext manpages-zh util-linux; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
    done
    python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
    if ((${#missing[@]})); then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    [ -x "$PY" ] || python3 -m venv "$BENCH/.venv"
    "$PY" -c 'import psycopg' 2>/dev/null || "$PY" -m pip install -q "$(grep '^psycopg' "$BENCH/requirements.txt")"

    cd "$ROOT"
    if [ "$skip" = 1 ] && [ -f "$PACKAGE$("$PG_CONFIG" --pkglibdir)/simhash_ext.so" ]; then
        step "build: skipped, using $PACKAGE"
    else
        step "build: cargo pgrx package (release) into $PACKAGE"
        if ! cargo pgrx package --pg-config "$PG_CONFIG" --out-dir "$PACKAGE" >"$BENCH/.$name-package.log" 2>&1; then
            cat "$BENCH/.$name-package.log" >&2
            exit 1
        fi
    fi

    step "private PostgreSQL 15 in $PRIVATE_PG (system binaries, our release build of simhash_ext)"
    private_postgres "$PACKAGE" "$PRIVATE_PG"

    if [ ! -s "$BENCH/data/paragraphs_en.txt" ]; then
        step "corpus: reading the real text shipped on this machine into bench/data/"
        "$PY" "$BENCH/prepare.py"
    fi
}
