#!/usr/bin/env bash
# scripts/sanitize.sh [regress|rocksdb|tap|all]: the test suites with every
# server process under Valgrind's memcheck, on throwaway servers, against
# the library built with debug symbols.
#
#   regress   (default) the pg_regress suite with the default backend
#   rocksdb   the pg_regress suite with rocksdb states (sessions read in
#             views of their own from the first read: RocksDB's threads in
#             every session)
#   tap       the TAP tests alone (PROVE_TESTS, when set, chooses them:
#             PROVE_TESTS="test/t/077_rocksdb_map_cache.pl"); a test that
#             waits a fixed time may fail at Valgrind's pace
#   all       the default pass, then the isolation specs and the TAP tests
#             (slow: hours on two cores)
#
# PG_CONFIG chooses the PostgreSQL installation (its bindir's postgres runs
# under memcheck); REGRESS, when set, the pg_regress files to run.
#
# Suppressions for reports about PostgreSQL's own writes: test/valgrind.supp.
# (AddressSanitizer is not an option with Debian's PostgreSQL: preloading its
# runtime into the server hangs in glibc's bindtextdomain before main.)
#
# Run as root or as a user with sudo (it installs the debug build and puts
# the normal one back at the end).  Memcheck's reports go to a temporary
# directory; the script prints those that report errors and exits non-zero
# when there are any, or when a test failed.
set -uo pipefail

MODE=${1:-regress}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}

case "$MODE" in
	regress | rocksdb | tap | all) ;;
	*)
		echo "usage: scripts/sanitize.sh [regress|rocksdb|tap|all]" >&2
		exit 2
		;;
esac

# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"

"$ROOT/scripts/setup.sh" || exit 1
install_packages valgrind || exit 1
PGBIN=$("$PG_CONFIG" --bindir) || exit 1

WORK=$(mktemp -d "${TMPDIR:-/tmp}/state_backend_sanitize.XXXXXX")
chmod 0755 "$WORK"
REPORTS=$WORK/reports
mkdir -p "$REPORTS" "$WORK/src" "$WORK/bin"
tar -C "$ROOT" -cf - --exclude=./.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
	--exclude=./tmp_check --exclude=./results . | tar -C "$WORK/src" -xf -

# Whatever happens, the normal library is what stays installed.
restore_library() {
	(cd "$ROOT" && as_root make -s with_llvm=no PG_CONFIG="$PG_CONFIG" install)
	if [ "${STATE_BACKEND_KEEP:-0}" = 1 ]; then echo "sanitize.sh: kept $WORK"; else rm -rf "$WORK"; fi
}
trap restore_library EXIT

cd "$WORK/src" || exit 1
make -s with_llvm=no PG_CONFIG="$PG_CONFIG" PG_CFLAGS="-Wall -g -O1" || exit 1
as_root make -s with_llvm=no PG_CONFIG="$PG_CONFIG" install || exit 1

# Servers start "postgres" from pg_regress's --bindir, or from the directory
# of pg_ctl and initdb: a directory whose postgres runs the real one under
# memcheck, with copies of pg_ctl and initdb (which look for postgres next
# to themselves) and links to the rest.
for f in "$PGBIN"/*; do ln -s "$f" "$WORK/bin/"; done
rm "$WORK/bin/postgres" "$WORK/bin/pg_ctl" "$WORK/bin/initdb"
cp "$PGBIN/pg_ctl" "$PGBIN/initdb" "$WORK/bin/"
{
	echo '#!/bin/sh'
	echo "exec valgrind --quiet --trace-children=yes --track-origins=yes --read-var-info=no \\"
	echo "	--num-callers=30 --error-limit=no --suppressions=$WORK/src/test/valgrind.supp \\"
	echo "	--log-file=$REPORTS/valgrind.%p $PGBIN/postgres \"\$@\""
} >"$WORK/bin/postgres"
chmod 0755 "$WORK/bin/postgres"

# STATE_BACKEND_SANITIZE: TAP tests restart a node by a stop and a start
# (test/perl/StateBackendTAP.pm), which starts the wrapper again.
RUN=(env PATH="$WORK/bin:$PGBIN:$PATH" PG_TEST_TIMEOUT_DEFAULT=1800 STATE_BACKEND_SANITIZE=1)
if [ "$(id -u)" -eq 0 ]; then
	chown -R postgres: "$WORK"
	RUN=(runuser -u postgres -- "${RUN[@]}" HOME="$(getent passwd postgres | cut -d: -f6)")
fi
case "$MODE" in
	regress) TARGETS=(installcheck "bindir=$WORK/bin" TAP_TESTS= ISOLATION=) ;;
	rocksdb) TARGETS=(installcheck-rocksdb "bindir=$WORK/bin") ;;
	tap) TARGETS=(installcheck "bindir=$WORK/bin" REGRESS= ISOLATION=) ;;
	all) TARGETS=(installcheck "bindir=$WORK/bin") ;;
esac
[ -n "${REGRESS:-}" ] && TARGETS+=("REGRESS=$REGRESS")
[ -n "${PROVE_TESTS:-}" ] && TARGETS+=("PROVE_TESTS=$PROVE_TESTS")
"${RUN[@]}" make -s with_llvm=no PG_CONFIG="$PG_CONFIG" "${TARGETS[@]}" 2>&1 | tee "$WORK/tests.out"
rc=${PIPESTATUS[0]}

# Reports of errors (memcheck writes empty files for clean processes, and
# warnings such as an unknown fcntl command are not errors).
ERRORS='Invalid (read|write|free)|uninitialised|Mismatched free|overlap|Jump to the invalid|Syscall param|Process terminating|definitely lost'
found=0
for f in "$REPORTS"/*; do
	grep -qE "$ERRORS" "$f" || continue
	found=$((found + 1))
	printf '\n==> %s\n' "$f"
	head -n 80 "$f"
done
printf '\n==> sanitize.sh %s: test exit status %d, %d process(es) with memcheck reports\n' \
	"$MODE" "$rc" "$found"
[ "$rc" -eq 0 ] && [ "$found" -eq 0 ]
