#!/usr/bin/env bash
# scripts/fuzz.sh [N [SEED]]: the restore fuzzer (test/t/012_fuzz.pl) with N
# mutations (default 5000), on a throwaway server.  It damages real snapshots
# of every kind of state, restores them and reads every state back; it fails
# on any crash, hang, or damage past a checksum that restore accepted, and
# prints what it tried.  scripts/test.sh runs the same test with 120.
#
#   scripts/fuzz.sh 20000          as root, or as a user with sudo
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PGBIN=/usr/lib/postgresql/15/bin
COUNT=${1:-5000}
SEED=${2:-$(date +%s)}

"$ROOT/scripts/setup.sh" || exit 1

WORK=$(mktemp -d "${TMPDIR:-/tmp}/state_backend_fuzz.XXXXXX")
chmod 0755 "$WORK"
trap 'rm -rf "$WORK"' EXIT
tar -C "$ROOT" -cf - --exclude=./.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
	--exclude=./tmp_check --exclude=./results . | tar -C "$WORK" -xf -
RUN=(env PATH="$PGBIN:$PATH" STATE_BACKEND_FUZZ_COUNT="$COUNT" STATE_BACKEND_FUZZ_SEED="$SEED")
if [ "$(id -u)" -eq 0 ]; then
	chown -R postgres: "$WORK"
	RUN=(runuser -u postgres -- "${RUN[@]}" HOME="$(getent passwd postgres | cut -d: -f6)")
fi
cd "$WORK" && "${RUN[@]}" make -s with_llvm=no REGRESS= ISOLATION= PROVE_TESTS=test/t/012_fuzz.pl \
	PROVE_FLAGS=-v installcheck
rc=$?
[ "$rc" -ne 0 ] && [ -f tmp_check/log/regress_log_012_fuzz ] &&
	grep -E '^# mutation|^# fuzz' tmp_check/log/regress_log_012_fuzz | head -n 50
exit "$rc"
