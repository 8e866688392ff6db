# shellcheck shell=bash
# scripts/lib.sh: what the scripts share; sourced, not run.
#
#   log MSG                   a progress line on stdout
#   die MSG                   an error on stderr, named by the script; exit 1
#   as_root CMD...            CMD as root: directly, or through sudo
#   as_pg CMD...              CMD as the postgres OS user, from /
#   installed PKG             whether the Debian package PKG is installed
#   apt_get ARGS...           apt-get as root, without questions; the first
#                             call of a run other than "update" updates first
#   install_packages PKG...   apt_get install those of PKG not installed

log() { printf '==> %s\n' "$*"; }
die() { printf '%s: %s\n' "${0##*/}" "$*" >&2; exit 1; }

if [ "$(id -u)" -eq 0 ]; then
	as_root() { "$@"; }
	as_pg() { (cd / && runuser -u postgres -- env HOME=/var/lib/postgresql "$@"); }
elif [ "$(id -un)" = postgres ]; then
	as_root() { sudo "$@"; }
	as_pg() { "$@"; }
elif command -v sudo >/dev/null 2>&1; then
	as_root() { sudo "$@"; }
	as_pg() { (cd / && sudo -u postgres -H "$@"); }
else
	as_root() { die "cannot run '$*': run as root, or install sudo"; }
	as_pg() { die "cannot run '$*' as postgres: run as root, or install sudo"; }
fi

installed() {
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

apt_updated=0
apt_get() {
	if [ "$1" != update ] && [ "$apt_updated" -eq 0 ]; then
		as_root env DEBIAN_FRONTEND=noninteractive apt-get update || return
	fi
	apt_updated=1
	as_root env DEBIAN_FRONTEND=noninteractive apt-get "$@"
}

install_packages() {
	local p missing=()
	for p in "$@"; do
		installed "$p" || missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		log "packages already installed: $*"
		return 0
	fi
	log "installing ${missing[*]}"
	apt_get install -y "${missing[@]}"
}
