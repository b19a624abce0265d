#!/usr/bin/env bash
# The Debian package (issue 13): builds postgresql-15-simhash-ext with scripts/deb.sh, checks its
# control fields and contents, lets apt resolve its dependencies against this machine (simulated),
# installs it with dpkg into an isolated root, starts a PostgreSQL that loads the extension from
# exactly the files dpkg put there, runs CREATE EXTENSION, every SQL example of the README and the check of
# the reference (docs/reference.md) against the installed extension (scripts/check_docs.py), and removes it.
#
#   bash tests/package/deb.sh [--package DIR] [--other-major PG_CONFIG]
#
# (as root; DIR: `cargo pgrx package` output to reuse). With --other-major, the package for the
# PostgreSQL of that pg_config (another major, installed anywhere) is built too and its name, control
# fields and file list are checked against Debian's paths for that major; it is not installed
# (Debian 12 has no postgresql-NN for it to depend on).
#
# Why an isolated root, not the system: the system's library directory ($PG_CONFIG --pkglibdir) may hold a
# simhash_ext.so built from source (scripts/test.sh installs one with cargo pgrx install) that
# running servers have mapped; overwriting it under them can crash them with SIGBUS, and dpkg would
# then own files that `cargo pgrx install` later replaces. So dpkg installs with --root into
# $DIR/root, a copy of the system PostgreSQL 15 tree (binaries and share copied, libraries linked)
# that holds no simhash_ext file of its own; its dpkg database lists the package's dependencies
# with the versions installed on this machine, so dpkg checks the Depends line for real. PostgreSQL
# finds its lib and share directories relative to its binary, so the server started from that tree
# loads the packaged .so and SQL scripts and nothing else. The system is left untouched.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
cd "$ROOT"

PORT=${SIMHASH_DEB_PORT:-54351}
DIR=${SIMHASH_DEB_DIR:-/tmp/simhash-deb-test}
NAME=postgresql-$PG_MAJOR-simhash-ext
package=
other=
while (($#)); do
    case $1 in
    --package) package=$2; shift 2 ;;
    --other-major) other=$2; shift 2 ;;
    *) echo "usage: $0 [--package DIR] [--other-major PG_CONFIG]" >&2; exit 2 ;;
    esac
done

failures=0
check() { # DESCRIPTION COMMAND...: runs COMMAND, reports ok/FAIL
    local what=$1
    shift
    if "$@"; then
        echo "ok   $what"
    else
        echo "FAIL $what"
        failures=$((failures + 1))
    fi
}

R=$DIR/root
SYS_BIN=$PG_BIN
SYS_LIB=$("$PG_CONFIG" --pkglibdir)
SYS_SHARE=$("$PG_CONFIG" --sharedir)
cleanup() {
    stop_server "$DIR/srv"
}
trap cleanup EXIT
stop_server "$DIR/srv"
rm -rf "$DIR"
mkdir -p "$DIR"

log "building the .deb (scripts/deb.sh)"
args=(--pg-config "$PG_CONFIG" --out "$DIR/out")
[ -n "$package" ] && args+=(--package "$package")
deb=$(bash scripts/deb.sh "${args[@]}")
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)

log "control fields and contents of $(basename "$deb")"
field() { dpkg-deb --field "$deb" "$1"; }
check "file name ${NAME}_$version-1_$(dpkg --print-architecture).deb" \
    test "$(basename "$deb")" = "${NAME}_$version-1_$(dpkg --print-architecture).deb"
check "Package: $NAME" test "$(field Package)" = "$NAME"
check "Version: $version-1 (Cargo.toml's version)" test "$(field Version)" = "$version-1"
check "Architecture: $(dpkg --print-architecture)" test "$(field Architecture)" = "$(dpkg --print-architecture)"
depends=$(field Depends)
check "Depends names postgresql-$PG_MAJOR ($depends)" grep -qE "(^|, )postgresql-$PG_MAJOR(,|\$| )" <<<"$depends"
check "Depends names libc6 ($depends)" grep -qE '(^|, )libc6( |,|$)' <<<"$depends"
check "Maintainer and Description present" test -n "$(field Maintainer)" -a -n "$(field Description)"

dpkg-deb --contents "$deb" >"$DIR/contents.txt"
awk '$1 !~ /^d/ {sub(/^\.\//, "/", $6); print $6}' "$DIR/contents.txt" | sort >"$DIR/files.txt"
{
    echo "$SYS_LIB/simhash_ext.so"
    echo "$SYS_SHARE/extension/simhash_ext.control"
    echo "$SYS_SHARE/extension/simhash_ext--$version.sql"
    for f in sql/simhash_ext--*--*.sql; do echo "$SYS_SHARE/extension/$(basename "$f")"; done
    echo "/usr/share/doc/$NAME/changelog.gz"
    echo "/usr/share/doc/$NAME/copyright"
} | sort >"$DIR/expected-files.txt"
check "files: the .so, control, install and upgrade scripts, copyright, changelog" \
    diff -u "$DIR/expected-files.txt" "$DIR/files.txt"
check "every entry owned by root:root" test -z "$(awk '$2 != "root/root"' "$DIR/contents.txt")"
check "files mode 644, directories 755" \
    test -z "$(awk '($1 ~ /^-/ && $1 != "-rw-r--r--") || ($1 ~ /^d/ && $1 != "drwxr-xr-x")' "$DIR/contents.txt")"
dpkg-deb -x "$deb" "$DIR/extracted"
check "the packaged control file names default_version '$version'" \
    grep -q "^default_version = '$version'" "$DIR/extracted$SYS_SHARE/extension/simhash_ext.control"
check "the packaged install script is the one of version $version" \
    grep -q "CREATE  FUNCTION \"simhash_explain\"" "$DIR/extracted$SYS_SHARE/extension/simhash_ext--$version.sql"

log "apt resolves the dependencies against this machine (apt-get install --simulate $deb)"
apt_out=$(apt-get install --simulate "$deb" 2>&1) || true
check "apt-get install --simulate: would install it, or has it at this version" \
    grep -qE "^Inst $NAME |$NAME is already the newest version" <<<"$apt_out"
grep -qE "^Inst $NAME |$NAME is already the newest version" <<<"$apt_out" || tail -20 <<<"$apt_out"

log "dpkg --root $R -i (an isolated copy of the system PostgreSQL 15 without simhash_ext)"
mkdir -p "$R$SYS_BIN" "$R$SYS_LIB" "$(dirname "$R$SYS_SHARE")"
cp "$SYS_BIN/postgres" "$SYS_BIN/initdb" "$SYS_BIN/pg_ctl" "$R$SYS_BIN/"
cp -r "$SYS_SHARE" "$R$SYS_SHARE"
rm -f "$R$SYS_SHARE"/extension/simhash_ext*
for f in "$SYS_LIB"/*; do
    case $(basename "$f") in simhash_ext*) ;; *) ln -s "$f" "$R$SYS_LIB/" ;; esac
done
check "the isolated tree holds no simhash_ext before dpkg runs" \
    test -z "$(find "$R" -name 'simhash_ext*' -print -quit)"
admin=$R/var/lib/dpkg
mkdir -p "$admin/info" "$admin/updates" "$admin/triggers"
: >"$admin/status"
# The dependencies as this machine has them installed (names only; versions are checked by dpkg).
for dep in $(sed 's/([^)]*)//g; s/|/,/g; s/,/ /g' <<<"$depends"); do
    if dpkg-query -s "$dep" >"$DIR/dep.txt" 2>/dev/null; then
        cat "$DIR/dep.txt" >>"$admin/status"
        echo >>"$admin/status"
        : >"$admin/info/$dep.list"
    fi
done
check "dpkg --root -i succeeds (dependencies satisfied)" \
    dpkg --root="$R" --install "$deb"
check "dpkg records it as installed at $version-1" \
    test "$(dpkg-query --admindir="$admin" -W -f='${Status} ${Version}' "$NAME" 2>/dev/null)" = "install ok installed $version-1"
check "dpkg -L lists the .so where PostgreSQL looks for it" \
    grep -qx "$SYS_LIB/simhash_ext.so" <(dpkg-query --admindir="$admin" -L "$NAME")
check "the installed .so is the packaged one" cmp "$R$SYS_LIB/simhash_ext.so" "$DIR/extracted$SYS_LIB/simhash_ext.so"
chmod -R a+rX "$R"

log "a clean PostgreSQL from that tree (port $PORT): CREATE EXTENSION, the README's SQL examples and reference"
PG_BIN=$R$SYS_BIN
start_server "$DIR/srv" "$PORT"
psql_() { runuser -u postgres -- "$SYS_BIN/psql" -X -h /tmp -p "$PORT" -U postgres -d postgres -Atq "$@"; }
check "the server's library directory is the isolated one" \
    test "$(psql_ -c "SELECT setting FROM pg_config WHERE name = 'PKGLIBDIR'")" = "$R$SYS_LIB"
check "CREATE EXTENSION simhash_ext" psql_ -c 'CREATE EXTENSION simhash_ext'
check "extversion $version" test "$(psql_ -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash_ext'")" = "$version"
check "the server loaded the packaged .so" \
    grep -q "$R$SYS_LIB/simhash_ext.so" <(psql_ -c "SELECT simhash('x')" -c "SELECT pg_read_file('/proc/' || pg_backend_pid() || '/maps')")
check "every SQL example of the README, run verbatim, prints the output the README shows" \
    python3 tests/package/readme_examples.py --port "$PORT" --psql "$SYS_BIN/psql"
check "docs/reference.md's functions and settings match the installed extension" \
    python3 scripts/check_docs.py --port "$PORT" --psql "$SYS_BIN/psql"
stop_server "$DIR/srv"

log "dpkg --root -r removes every file it installed"
check "dpkg --root -r" dpkg --root="$R" --remove "$NAME"
check "no simhash_ext file left in the isolated tree" test -z "$(find "$R" -name 'simhash_ext*' -print -quit)"

if [ -n "$other" ]; then
    major=$(pg_major "$other")
    oname=postgresql-$major-simhash-ext
    log "the package for PostgreSQL $major (scripts/deb.sh --pg-config $other)"
    odeb=$(bash scripts/deb.sh --pg-config "$other" --out "$DIR/out-$major")
    ofield() { dpkg-deb --field "$odeb" "$1"; }
    check "file name ${oname}_$version-1_$(dpkg --print-architecture).deb" \
        test "$(basename "$odeb")" = "${oname}_$version-1_$(dpkg --print-architecture).deb"
    check "Package: $oname" test "$(ofield Package)" = "$oname"
    check "Depends names postgresql-$major ($(ofield Depends))" grep -qE "(^|, )postgresql-$major(,|$| )" <<<"$(ofield Depends)"
    check "Description names PostgreSQL $major" grep -q "PostgreSQL $major" <<<"$(ofield Description)"
    dpkg-deb --contents "$odeb" | awk '$1 !~ /^d/ {sub(/^\.\//, "/", $6); print $6}' | sort >"$DIR/files-$major.txt"
    sed "s|/usr/lib/postgresql/$PG_MAJOR/|/usr/lib/postgresql/$major/|; s|/usr/share/postgresql/$PG_MAJOR/|/usr/share/postgresql/$major/|; s|/usr/share/doc/$NAME/|/usr/share/doc/$oname/|" \
        "$DIR/expected-files.txt" | sort >"$DIR/expected-files-$major.txt"
    check "files at Debian's paths for PostgreSQL $major" diff -u "$DIR/expected-files-$major.txt" "$DIR/files-$major.txt"
    dpkg-deb -x "$odeb" "$DIR/extracted-$major"
    check "its library is its own build, not the PostgreSQL 15 one" \
        bash -c '! cmp -s "$1" "$2"' _ "$DIR/extracted-$major/usr/lib/postgresql/$major/lib/simhash_ext.so" "$DIR/extracted$SYS_LIB/simhash_ext.so"
    rm -rf "$DIR/extracted-$major"
fi

echo
if ((failures)); then
    echo "deb: $failures checks failed"
    exit 1
fi
echo "deb: all checks passed; the package is $deb"
rm -rf "$DIR/srv" "$R" "$DIR/extracted"
