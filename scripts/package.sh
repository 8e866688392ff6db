#!/usr/bin/env bash
# scripts/package.sh: build the Debian package postgresql-15-state-backend
# (debian/, pg_buildext) from this tree, on Debian 12.
#
#   scripts/package.sh [OUTDIR]     as root, or as a user with sudo
#
# Installs dpkg-dev and build-essential when missing, then the Build-Depends
# of debian/control that are not met (apt-get build-dep).  Copies the tree,
# without .git and build products, to a temporary directory and runs
# `dpkg-buildpackage -us -uc -b -j<cores>` there, so this tree is left as it was.  The
# .deb files (the packages and their -dbgsym) are moved to OUTDIR (default
# ./dist) and their paths printed: the -dbgsym ones, the lmdb provider's,
# then the main package's last.  The build runs no
# tests (scripts/test.sh does).  Environment:
#   STATE_BACKEND_KEEP=1   keep the temporary build directory
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-dist}
TOOLS=(dpkg-dev build-essential)

# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"

[ -f "$ROOT/debian/control" ] || die "$ROOT/debian/control not found"

# ------------------------------------------------------------ tools
install_packages "${TOOLS[@]}"

# ------------------------------------------------------------ copy the tree
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
VERSION=$(cd "$ROOT" && dpkg-parsechangelog -S Version)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/state_backend_package.XXXXXX")
# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
	if [ "${STATE_BACKEND_KEEP:-0}" = 1 ]; then
		echo "package.sh: kept $WORK" >&2
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# dpkg-buildpackage writes its results next to the source directory.
SRC=$WORK/state-backend-${VERSION%-*}
mkdir "$SRC"
excludes=(
	--exclude=./.git --exclude=./.deps --exclude='*.o' --exclude='*.so' --exclude='*.bc'
	--exclude=./results --exclude='./tmp_check*' --exclude='./output_*'
	--exclude=./log --exclude=./bench/work --exclude='./regression.*'
	--exclude=./dist --exclude=./debian/.debhelper --exclude=./debian/files
	--exclude='./debian/*.substvars' --exclude=./debian/debhelper-build-stamp
	--exclude='./debian/postgresql-*-state-backend'
)
case $OUT/ in
	"$ROOT"/*) excludes+=("--exclude=./${OUT#"$ROOT"/}") ;;
esac
tar -C "$ROOT" -cf - "${excludes[@]}" . | tar -C "$SRC" -xf -

# ------------------------------------------------------------ build deps
cd "$SRC"
if ! dpkg-checkbuilddeps; then
	log "installing the Build-Depends of debian/control"
	apt_get build-dep -y "$SRC"
fi

# ------------------------------------------------------------ build
log "building state-backend $VERSION in $SRC"
dpkg-buildpackage -us -uc -b -j"$(nproc)"

shopt -s nullglob
debs=("$WORK"/*.deb)
shopt -u nullglob
[ ${#debs[@]} -gt 0 ] || die "dpkg-buildpackage made no .deb"
main=
provider=
for deb in "${debs[@]}"; do
	mv -f "$deb" "$OUT/"
	case $deb in
		*-dbgsym_*) echo "$OUT/$(basename "$deb")" ;;
		*-state-backend-lmdb_*) provider=$OUT/$(basename "$deb") ;;
		*) main=$OUT/$(basename "$deb") ;;
	esac
done
[ -n "$main" ] || die "no package besides the -dbgsym one"
[ -n "$provider" ] || die "no package of the lmdb provider"
echo "$provider"
echo "$main"
