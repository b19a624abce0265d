#!/usr/bin/env bash
# Builds the Debian binary package postgresql-NN-simhash-ext from `cargo pgrx package` output:
#
#   bash scripts/deb.sh [--pg-config PATH] [--package DIR] [--out DIR]
#
# --pg-config PATH  the PostgreSQL to build for (default: $PG_CONFIG, else Debian's 15); NN is its
#                   major version, whatever directory it is installed in;
# --package DIR     reuse a tree made by `cargo pgrx package --pg-config PATH --out-dir DIR` (default:
#                   build one in target/deb/pgrx-NN with the release profile);
# --out DIR         where the .deb goes (default: target/deb).
#
# The package holds the extension's library, control file and SQL scripts at the paths of Debian's
# postgresql-NN (/usr/lib/postgresql/NN/lib, /usr/share/postgresql/NN/extension), the licence and
# changelog under /usr/share/doc. Version: Cargo.toml's, Debian revision 1. Architecture: this
# machine's (dpkg --print-architecture). Depends: postgresql-NN and the shared libraries the .so
# links (dpkg-shlibdeps when dpkg-dev is there). Prints the path of the .deb on stdout; install it with
# `apt install ./postgresql-NN-simhash-ext_VERSION-1_ARCH.deb`. Builds as any user, changes nothing
# outside the two directories but cargo-pgrx's registration of that PostgreSQL ($PGRX_HOME).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh" # ROOT, PG_CONFIG (Debian's 15 unless set), pg_major
package=
out=$ROOT/target/deb

while (($#)); do
    case $1 in
    --pg-config) PG_CONFIG=$2; shift 2 ;;
    --package) package=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--pg-config PATH] [--package DIR] [--out DIR]" >&2; exit 2 ;;
    esac
done

die() { echo "deb.sh: $*" >&2; exit 1; }
command -v dpkg-deb >/dev/null || die "dpkg-deb not found (package dpkg)"
[ -x "$PG_CONFIG" ] || die "$PG_CONFIG is not an executable pg_config"
PG_MAJOR=$(pg_major "$PG_CONFIG")
NAME=postgresql-$PG_MAJOR-simhash-ext
# Where `cargo pgrx package` puts the files (the install's own directories), and where Debian's
# postgresql-NN looks for them.
src_libdir=$("$PG_CONFIG" --pkglibdir)
src_extdir=$("$PG_CONFIG" --sharedir)/extension

version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1)
[ -n "$version" ] || die "no version in Cargo.toml"
arch=$(dpkg --print-architecture)
libdir=/usr/lib/postgresql/$PG_MAJOR/lib
extdir=/usr/share/postgresql/$PG_MAJOR/extension

if [ -z "$package" ]; then
    package=$ROOT/target/deb/pgrx-$PG_MAJOR
    rm -rf "$package"
    ensure_pgrx_config # this major may not be registered with cargo-pgrx yet
    echo "deb.sh: cargo pgrx package --out-dir $package" >&2
    (cd "$ROOT" && cargo pgrx package --pg-config "$PG_CONFIG" --out-dir "$package" >&2)
fi
so=$package$src_libdir/simhash_ext.so
[ -f "$so" ] || die "$so missing: is $package the output of cargo pgrx package for $PG_CONFIG?"
[ -f "$package$src_extdir/simhash_ext--$version.sql" ] ||
    die "$package$src_extdir/simhash_ext--$version.sql missing: the package was built from another version"
grep -q "^default_version = '$version'" "$package$src_extdir/simhash_ext.control" ||
    die "$package$src_extdir/simhash_ext.control does not name default_version '$version'"

mkdir -p "$out"
stage=$(mktemp -d "$out/stage.XXXXXX")
chmod 755 "$stage"
trap 'rm -rf "$stage"' EXIT
install -d -m 755 "$stage/DEBIAN" "$stage$libdir" "$stage$extdir" "$stage/usr/share/doc/$NAME"
install -m 644 "$so" "$stage$libdir/"
install -m 644 "$package$src_extdir"/simhash_ext* "$stage$extdir/"
install -m 644 "$ROOT/LICENSE" "$stage/usr/share/doc/$NAME/copyright"
gzip -9n <"$ROOT/CHANGELOG.md" >"$stage/usr/share/doc/$NAME/changelog.gz"
chmod 644 "$stage/usr/share/doc/$NAME/changelog.gz"

# The shared libraries the .so needs, as Debian package dependencies.
shlibs="libc6, libgcc-s1"
if command -v dpkg-shlibdeps >/dev/null; then
    probe=$(mktemp -d)
    mkdir "$probe/debian"
    printf 'Source: simhash-ext\n\nPackage: %s\nArchitecture: any\n' "$NAME" >"$probe/debian/control"
    if found=$(cd "$probe" && dpkg-shlibdeps -O "$stage$libdir/simhash_ext.so" 2>/dev/null); then
        shlibs=${found#shlibs:Depends=}
    fi
    rm -rf "$probe"
fi

installed_size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat >"$stage/DEBIAN/control" <<EOF
Package: $NAME
Source: simhash-ext
Version: $version-1
Architecture: $arch
Maintainer: simhash_ext authors <simhash_ext@invalid>
Installed-Size: $installed_size
Depends: postgresql-$PG_MAJOR, $shlibs
Section: database
Priority: optional
Description: near-duplicate text detection for PostgreSQL $PG_MAJOR
 simhash_ext finds near-duplicate texts (Chinese, English and mixed) inside
 PostgreSQL with two methods: SimHash fingerprints searched exactly through
 band indexes, and MinHash signatures with LSH band keys in a GIN index for
 reposts wrapped in headers and footers or rewritten more heavily. An
 attached table gets lookups, a trigger that rejects, skips or flags
 near-duplicate writes, and whole-table deduplication.
 .
 After installing, run CREATE EXTENSION simhash_ext; in each database.
EOF
(cd "$stage" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
chmod 644 "$stage/DEBIAN/control" "$stage/DEBIAN/md5sums"

deb=$out/${NAME}_$version-1_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >&2
echo "$deb"
