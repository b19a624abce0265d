# Shared by demo.sh and test.sh: installs what a fresh Debian 12 machine lacks (skipping what is
# there) and starts or stops a throwaway PostgreSQL 15 server on loopback. Source it; run as root.

set -euo pipefail

PG_BIN=/usr/lib/postgresql/15/bin
PG_CONFIG=$PG_BIN/pg_config
PGRX_VERSION=0.18.1
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export USER=${USER:-root}
export PATH="$HOME/.cargo/bin:$PATH"

log() { printf '\n== %s\n' "$*" >&2; }

ensure_packages() {
    local missing=()
    # postgresql-client-15: psql, pg_dump, pgbench; postgresql-contrib: amcheck (tests/robustness).
    for pkg in postgresql-15 postgresql-client-15 postgresql-server-dev-15 postgresql-contrib libclang-dev clang sudo; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
    done
    if ((${#missing[@]})); then
        log "installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

ensure_pgrx() {
    if ! cargo pgrx --version 2>/dev/null | grep -q "$PGRX_VERSION"; then
        log "installing cargo-pgrx $PGRX_VERSION (a few minutes)"
        cargo install cargo-pgrx --version "$PGRX_VERSION" --locked
    fi
    if ! grep -qs "pg15" "$HOME/.pgrx/config.toml"; then
        cargo pgrx init --pg15 "$PG_CONFIG"
    fi
}

ensure_tools() {
    ensure_packages
    ensure_pgrx
}

# start_server DIR PORT [extra postgres -c options...]: a fresh cluster owned by postgres, on loopback.
start_server() {
    local dir=$1 port=$2
    shift 2
    stop_server "$dir"
    rm -rf "$dir"
    install -d -o postgres -g postgres "$dir"
    runuser -u postgres -- "$PG_BIN/initdb" -D "$dir/data" -A trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log"
    local opts="-p $port -k /tmp -c listen_addresses=127.0.0.1"
    for o in "$@"; do opts="$opts -c $o"; done
    # Without RUST_BACKTRACE: pgrx would append a Rust backtrace to the DETAIL of errors raised
    # inside Rust code, which no user of a production server sees.
    runuser -u postgres -- env -u RUST_BACKTRACE -u RUST_LIB_BACKTRACE \
        "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "$opts" -w start >/dev/null
}

stop_server() {
    local dir=$1
    if [ -f "$dir/data/postmaster.pid" ]; then
        runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
}

install_extension() {
    log "building and installing simhash_ext ($*)"
    (cd "$ROOT" && cargo pgrx install --pg-config "$PG_CONFIG" "$@")
}

# private_postgres PACKAGE DIR: a relocated copy of the system PostgreSQL 15 in DIR that loads the
# simhash_ext of PACKAGE (`cargo pgrx package --out-dir PACKAGE` output) instead of the installed one,
# and PG_BIN pointing at it for start_server / stop_server. The installed .so is shared by every
# server on the machine: replacing it under a running server can crash that server (SIGBUS), so
# benchmarks and parallel work use such a copy. Sets PRIVATE_PKGLIB to the copy's library directory.
private_postgres() {
    local package=$1 dir=$2
    local sys_bin=/usr/lib/postgresql/15/bin sys_lib sys_share
    sys_lib=$("$PG_CONFIG" --pkglibdir)
    sys_share=$("$PG_CONFIG" --sharedir)
    rm -rf "$dir"
    mkdir -p "$dir$sys_bin" "$dir$sys_lib" "$(dirname "$dir$sys_share")"
    cp "$sys_bin/postgres" "$sys_bin/initdb" "$sys_bin/pg_ctl" "$dir$sys_bin/"
    cp -r "$sys_share" "$dir$sys_share"
    local f
    for f in "$sys_lib"/*; do
        [ "$(basename "$f")" = simhash_ext.so ] || ln -s "$f" "$dir$sys_lib/"
    done
    cp "$package$sys_lib/simhash_ext.so" "$dir$sys_lib/"
    cp "$package$sys_share"/extension/simhash_ext* "$dir$sys_share/extension/"
    chmod -R a+rX "$dir"
    PRIVATE_PKGLIB=$dir$sys_lib
    PG_BIN=$dir$sys_bin
}
