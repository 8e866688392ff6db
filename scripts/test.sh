#!/usr/bin/env bash
# scripts/test.sh: build and install state_backend, then run the whole suite:
# the pg_regress tests (sql/, expected/) three times, with the default backend
# (memory, test/regress.conf), with state_backend.backend = rocksdb
# (test/regress-rocksdb.conf, `make installcheck-rocksdb`) and with lmdb, the
# backend of contrib/lmdb (test/regress-lmdb.conf), the isolation
# specs (specs/, with the first pass), the TAP tests
# (test/t/) and, when present, the benchmark harness's smoke mode (bench/smoke).
# Before them it checks META.json, and builds and installs the Debian package
# (scripts/package.sh), which the tests then run against.
#
#   scripts/test.sh          as root, or as a user with sudo
#
# PostgreSQL refuses to run as root, so when invoked as root the suite runs as
# the `postgres` OS user, in a copy of the tree in a temporary directory.
# Every server the suite starts is stopped before the script exits.  The last
# line of output is "N passed, N failed"; the exit status is non-zero when
# anything failed.  Environment:
#   STATE_BACKEND_TEST_TIMEOUT   seconds allowed to each of pg_regress and
#                                the TAP tests (default 2700: a guard
#                                against a hang, not a target)
#   STATE_BACKEND_TAP_JOBS       TAP test files run at once (default 4:
#                                most of a file's time is waiting for its
#                                servers; 1 runs them one after another)
#   STATE_BACKEND_BENCH_TIMEOUT  seconds allowed to bench/smoke (default 900,
#                                2700 beside the TAP tests)
#   STATE_BACKEND_KEEP=1         keep the temporary directory (results, logs)
#   STATE_BACKEND_SMALL_FS       a directory on a small filesystem for the
#                                disk-full test (set here when run as root)
#   STATE_BACKEND_ROCKSDB_FS     the same for the rocksdb disk-full test
#   STATE_BACKEND_LMDB_FS        the same for the lmdb disk-full test
#   STATE_BACKEND_PACKAGE=0      do not build and install the Debian package
#                                (the tests then run against `make install`)
#   STATE_BACKEND_OLD_SOURCE     the 1.0 release's source for the upgrade
#                                test (set here from the repository's history)
#   STATE_BACKEND_RELEASE_1_6_SOURCE  the same for 1.6.0 (WAL resource
#                                manager id 128)
#   STATE_BACKEND_CORE_REGRESS=0 do not run PostgreSQL's own regression suite
#                                with the extension (scripts/core-regress.sh)
#   STATE_BACKEND_CORE_TIMEOUT   seconds allowed to it (default 900, 2700
#                                beside the TAP tests, where it runs at a
#                                lower priority: guards against a hang)
#   STATE_BACKEND_SIDE_JOBS=1    run PostgreSQL's suite and bench/smoke beside
#                                the TAP tests, at a lower priority, instead
#                                of after them (default 0)
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PGBIN=/usr/lib/postgresql/15/bin
PG_CONFIG=${PG_CONFIG:-$PGBIN/pg_config}
TEST_TIMEOUT=${STATE_BACKEND_TEST_TIMEOUT:-2700}
TAP_JOBS=${STATE_BACKEND_TAP_JOBS:-4}
TEST_PACKAGES=(postgresql-15-hll postgresql-15-tdigest postgresql-15-plproxy postgresql-15-auto-failover)
SIDE_JOBS=${STATE_BACKEND_SIDE_JOBS:-0}
if [ "$SIDE_JOBS" = 1 ]; then side_timeout=2700; else side_timeout=900; fi
BENCH_TIMEOUT=${STATE_BACKEND_BENCH_TIMEOUT:-$side_timeout}
CORE_TIMEOUT=${STATE_BACKEND_CORE_TIMEOUT:-$side_timeout}
RUN_CORE=${STATE_BACKEND_CORE_REGRESS:-1}

# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"

passed=0
failed=0
skipped=0
report=()
tap_failures=()

note() { printf '\n==> %s\n' "$*"; }

finish() {
	printf '\n==> summary\n'
	local line
	for line in "${report[@]}"; do printf '  %s\n' "$line"; done
	printf '  time         %d s in all\n' "$SECONDS"
	if [ "$skipped" -gt 0 ]; then
		printf '%d passed, %d failed, %d skipped\n' "$passed" "$failed" "$skipped"
	else
		printf '%d passed, %d failed\n' "$passed" "$failed"
	fi
	[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
	exit $?
}

# ------------------------------------------------------------ build, install
note "setup: packages, build, install"
if ! "$ROOT/scripts/setup.sh"; then
	report+=("setup        build or install FAILED")
	failed=$((failed + 1))
	finish
fi
# Extensions whose aggregates the tests hold in aggregating states
# (sql/aggregating_args.sql).
if ! install_packages "${TEST_PACKAGES[@]}"; then
	report+=("setup        could not install ${TEST_PACKAGES[*]}")
	failed=$((failed + 1))
	finish
fi

# ------------------------------------------------------------ who runs tests
unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGPASSWORD PGOPTIONS PGSERVICE PGDATA
RUN_PATH="$PGBIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
if [ "$(id -u)" -eq 0 ]; then
	RUNNER=postgres
	getent passwd postgres >/dev/null || { echo "test.sh: no postgres OS user" >&2; exit 1; }
	RUNNER_HOME=$(getent passwd postgres | cut -d: -f6)
	as_runner() { runuser -u postgres -- env HOME="$RUNNER_HOME" PATH="$RUN_PATH" "$@"; }
else
	RUNNER=$(id -un)
	as_runner() { env PATH="$RUN_PATH" "$@"; }
fi

# ------------------------------------------------------------ scratch copy
WORK=$(mktemp -d "${TMPDIR:-/tmp}/state_backend_test.XXXXXX")
chmod 0755 "$WORK"
SRC=$WORK/src
mkdir "$SRC"
tar -C "$ROOT" -cf - \
	--exclude=./.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
	--exclude=./results --exclude=./tmp_check --exclude=./tmp_check_regress \
	--exclude=./tmp_check_rocksdb --exclude=./output_rocksdb \
	--exclude=./tmp_check_lmdb --exclude=./output_lmdb \
	--exclude=./log --exclude=./output_iso --exclude=./bench/work \
	--exclude=./regression.diffs --exclude=./regression.out --exclude=./dist . |
	tar -C "$SRC" -xf -
# Earlier releases' sources, from the repository's history, for the tests
# of an upgrade from them (skipped without them): export_release VERSION
# COMMIT VARIABLE TEST.
export_release()
{
	local version=$1 commit=$2 var=$3 test=$4
	if git -c safe.directory="$ROOT" -C "$ROOT" cat-file -e "$commit^{commit}" 2>/dev/null; then
		mkdir "$WORK/release-$version"
		if git -c safe.directory="$ROOT" -C "$ROOT" archive "$commit" |
			tar -C "$WORK/release-$version" -xf -; then
			export "$var=$WORK/release-$version"
		else
			failed=$((failed + 1)); report+=("upgrade      FAILED: could not export the $version release")
		fi
	else
		skipped=$((skipped + 1))
		report+=("upgrade      $test skipped: the $version release ($commit) is not in this tree's history")
	fi
}
# 1.0: the first release (test/t/022_binary_upgrade.pl).
export_release 1.0 781492947f19114eaf0196a9b61a7b17ed458892 \
	STATE_BACKEND_OLD_SOURCE test/t/022_binary_upgrade.pl
# 1.6.0: the last that logged under WAL resource manager id 128
# (test/t/061_wal_rmgr_upgrade.pl).
export_release 1.6.0 65b0bbff33145170c3f39367c11377386d1c7299 \
	STATE_BACKEND_RELEASE_1_6_SOURCE test/t/061_wal_rmgr_upgrade.pl
[ "$RUNNER" = postgres ] && [ "$(id -u)" -eq 0 ] && chown -R postgres: "$WORK"

# Stop every server left under the scratch directory, then remove it.
stop_servers() {
	local pidfile dir pid
	while IFS= read -r pidfile; do
		dir=$(dirname "$pidfile")
		as_runner pg_ctl -D "$dir" -m immediate -w -t 30 stop >/dev/null 2>&1 && continue
		pid=$(head -n 1 "$pidfile" 2>/dev/null)
		if [ -n "$pid" ] && [ "$(ps -o comm= -p "$pid" 2>/dev/null)" = postgres ]; then
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done < <(find "$WORK" -name postmaster.pid 2>/dev/null)
}
# Small filesystems for the disk-full tests, when this runs as root and may
# mount them: a 1 MB tmpfs for snapshots (test/t/011_disk_full.pl), a 24 MB
# one for a rocksdb_dir (test/t/028_rocksdb_disk_full.pl), a 4 MB one for
# an lmdb environment (test/t/054_lmdb_commit_disk_full.pl); without them
# those tests are skipped and say why.
SMALL_FS=$WORK/small_fs
ROCKSDB_FS=$WORK/rocksdb_fs
LMDB_FS=$WORK/lmdb_fs
mkdir -p "$SMALL_FS" "$ROCKSDB_FS" "$LMDB_FS"
if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=1m,mode=0777 state_backend_small "$SMALL_FS" 2>/dev/null; then
	export STATE_BACKEND_SMALL_FS=$SMALL_FS
fi
if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=24m,mode=0777 state_backend_rocksdb "$ROCKSDB_FS" 2>/dev/null; then
	export STATE_BACKEND_ROCKSDB_FS=$ROCKSDB_FS
fi
if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=4m,mode=0777 state_backend_lmdb "$LMDB_FS" 2>/dev/null; then
	export STATE_BACKEND_LMDB_FS=$LMDB_FS
fi
# shellcheck disable=SC2317  # called from the EXIT trap
# kill_tree PID: a background job and what it started (a script's
# background jobs ignore the terminal's interrupt).
kill_tree() {
	local c
	for c in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$c"; done
	kill "$1" 2>/dev/null || true
}

cleanup() {
	if [ -n "${core_build_pid:-}" ]; then kill "$core_build_pid" 2>/dev/null || true; fi
	for p in ${regress_pids[@]+"${regress_pids[@]}"}; do kill_tree "$p"; done
	stop_servers
	if [ -n "${STATE_BACKEND_SMALL_FS:-}" ]; then umount "$SMALL_FS" 2>/dev/null || true; fi
	if [ -n "${STATE_BACKEND_ROCKSDB_FS:-}" ]; then umount "$ROCKSDB_FS" 2>/dev/null || true; fi
	if [ -n "${STATE_BACKEND_LMDB_FS:-}" ]; then umount "$LMDB_FS" 2>/dev/null || true; fi
	if [ "${STATE_BACKEND_KEEP:-0}" = 1 ]; then
		echo "test.sh: kept $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

MAKEVARS=(with_llvm=no PG_CONFIG="$PG_CONFIG")

# ------------------------------------------------------------ package
# META.json against the PGXN spec, then the Debian package
# (scripts/package.sh), installed over what setup.sh installed: every test
# below runs against the package's files.  STATE_BACKEND_PACKAGE=0 skips it.
if [ "${STATE_BACKEND_PACKAGE:-1}" = 1 ]; then
	note "package: META.json, the Debian package"
	if "$ROOT/scripts/check-meta.sh"; then
		passed=$((passed + 1)); report+=("META.json    ok")
	else
		failed=$((failed + 1)); report+=("META.json    FAILED")
	fi
	log=$WORK/package.out
	# apt installs the package with what it depends on, or leaves all as it was.
	if "$ROOT/scripts/package.sh" "$WORK/dist" >"$log" 2>&1 &&
		deb=$(grep -v -- '-dbgsym_' "$log" | grep '^/.*\.deb$' | tail -n 1) && [ -n "$deb" ] &&
		lmdb_deb=$(grep -- '-state-backend-lmdb_' "$log" | grep -v -- '-dbgsym_' | tail -n 1) &&
		[ -n "$lmdb_deb" ] &&
		apt_get install -y --allow-downgrades "$deb" "$lmdb_deb" &&
		[ "$(dpkg -S "$("$PG_CONFIG" --pkglibdir)/state_backend_lmdb.so" 2>/dev/null | cut -d: -f1)" = \
			"$(dpkg-deb -f "$lmdb_deb" Package)" ] &&
		[ "$(dpkg -S "$("$PG_CONFIG" --pkglibdir)/state_backend.so" 2>/dev/null | cut -d: -f1)" = \
			"$(dpkg-deb -f "$deb" Package)" ]; then
		passed=$((passed + 1))
		report+=("package      $(basename "$deb") and $(basename "$lmdb_deb") built and installed; the tests run against them")
	else
		tail -n 40 "$log"
		failed=$((failed + 1)); report+=("package      build or install FAILED")
	fi
fi

# ------------------------------------------------------------ the core suite's build
# PostgreSQL's source for its own regression suite is fetched and its driver
# built at a lower priority while the tests below run (most of their time is
# spent waiting for their servers); the suite runs after them.

# run_core NAME LIMIT [VAR=value...]: scripts/core-regress.sh with those
# settings, for at most LIMIT seconds; its output, exit status and seconds
# in $WORK/NAME.log, .rc and .secs.
run_core() {
	local name=$1 limit=$2 t0=$SECONDS
	shift 2
	env CORE_REGRESS_SETUP=0 PG_CONFIG="$PG_CONFIG" "$@" \
		timeout -k 30 "$limit" "$ROOT/scripts/core-regress.sh" >"$WORK/$name.log" 2>&1
	echo $? >"$WORK/$name.rc"
	echo $((SECONDS - t0)) >"$WORK/$name.secs"
}

core_build_pid=
if [ "$RUN_CORE" != 0 ] && [ "$SIDE_JOBS" != 1 ]; then
	(renice -n 10 -p "$BASHPID" >/dev/null 2>&1
	run_core core-build "$TEST_TIMEOUT" CORE_REGRESS_DIR="$WORK/core" CORE_REGRESS_STEP=build) </dev/null &
	core_build_pid=$!
fi

# ------------------------------------------------------------ pg_regress
# The same tests against each backend, as Flink runs one test base against
# every state backend: three passes, each with its own temporary server (its
# socket in a directory of its own), results directory and log, run at once
# (they take about half the time they take one after the other), reported in
# this order.
REGRESS_PASSES=("memory installcheck ." "rocksdb installcheck-rocksdb output_rocksdb" "lmdb installcheck-lmdb output_lmdb")

# run_regress LABEL TARGET: one pass (make TARGET), its output in
# $WORK/regress-LABEL.out, its exit status and seconds beside it.
run_regress() {
	local label=$1 target=$2 t0=$SECONDS
	(cd "$SRC" && as_runner timeout -k 30 "$TEST_TIMEOUT" \
		make "${MAKEVARS[@]}" TAP_TESTS= "$target") >"$WORK/regress-$label.out" 2>&1
	echo $? >"$WORK/regress-$label.rc"
	echo $((SECONDS - t0)) >"$WORK/regress-$label.secs"
}

# report_regress LABEL TARGET OUTDIR: a pass's output, and on failure its
# regression.diffs and server log (log/postmaster.log) from $SRC/OUTDIR; its
# tests are added to the counts.
report_regress() {
	local label=$1 target=$2 outdir=$3 log rc r_ok r_fail r_ign
	note "pg_regress $label (sql/, expected/; make $target) as $RUNNER"
	log=$WORK/regress-$label.out
	cat "$log"
	rc=$(cat "$WORK/regress-$label.rc" 2>/dev/null || echo 1)
	r_ok=$(grep -cE '\.\.\. +ok( |$)' "$log")
	r_fail=$(grep -cE '\.\.\. +(FAILED|failed)( |$)' "$log")
	r_ign=$(grep -cE '\.\.\. +failed \(ignored\)' "$log")
	r_fail=$((r_fail - r_ign))
	[ "$rc" -eq 124 ] && echo "pg_regress $label: timed out after ${TEST_TIMEOUT}s"
	if [ "$rc" -ne 0 ] && [ "$r_fail" -eq 0 ]; then r_fail=1; fi
	if [ "$rc" -ne 0 ]; then
		if [ -s "$SRC/$outdir/regression.diffs" ]; then
			note "regression.diffs ($label)"
			head -n 3000 "$SRC/$outdir/regression.diffs"
		fi
		if [ "$target" = installcheck ] && [ -s "$SRC/output_iso/regression.diffs" ]; then
			note "regression.diffs (isolation specs)"
			head -n 3000 "$SRC/output_iso/regression.diffs"
		fi
		if [ -s "$SRC/$outdir/log/postmaster.log" ]; then
			note "server log ($label, last 40 lines)"
			tail -n 40 "$SRC/$outdir/log/postmaster.log"
		fi
	fi
	passed=$((passed + r_ok)); failed=$((failed + r_fail)); skipped=$((skipped + r_ign))
	report+=("pg_regress   $label: $r_ok ok, $r_fail FAILED (exit $rc; $(cat "$WORK/regress-$label.secs" 2>/dev/null || echo '?') s)")
}

note "pg_regress: ${#REGRESS_PASSES[@]} passes at once (memory, rocksdb, lmdb)"
regress_pids=()
for pass in "${REGRESS_PASSES[@]}"; do
	read -r label target _ <<<"$pass"
	run_regress "$label" "$target" </dev/null &
	regress_pids+=($!)
done
wait "${regress_pids[@]}"
regress_pids=()
for pass in "${REGRESS_PASSES[@]}"; do
	# shellcheck disable=SC2086
	report_regress $pass
done

# ------------------------------------------------------------ core suite, bench smoke
# PostgreSQL's own regression suite with the extension preloaded and created
# (one step, failed by any test the extension makes differ), then the bench
# harness's smoke mode.  Each runs its own server on its own port, so with
# STATE_BACKEND_SIDE_JOBS=1 they run beside the TAP tests, at a lower
# priority, and report after them.
RUN_SMOKE=0
[ -f "$SRC/bench/smoke" ] && [ -x "$SRC/bench/smoke" ] && RUN_SMOKE=1

run_side() {
	local t0 core_pid= x
	if [ "$RUN_CORE" != 0 ] && [ -n "$core_build_pid" ]; then
		# Built beside the tests: the suite now, beside bench/smoke (whose
		# figures are not kept; the suite compares outputs, not times).
		wait "$core_build_pid"
		if [ "$(cat "$WORK/core-build.rc" 2>/dev/null || echo 1)" = 0 ]; then
			run_core core "$CORE_TIMEOUT" CORE_REGRESS_DIR="$WORK/core" CORE_REGRESS_STEP=run </dev/null &
			core_pid=$!
		else
			for x in log rc secs; do cp "$WORK/core-build.$x" "$WORK/core.$x" 2>/dev/null; done
		fi
	elif [ "$RUN_CORE" != 0 ]; then
		run_core core "$CORE_TIMEOUT"
	fi
	t0=$SECONDS
	if [ "$RUN_SMOKE" = 1 ]; then
		(cd "$SRC" && as_runner timeout -k 30 "$BENCH_TIMEOUT" ./bench/smoke) >"$WORK/bench.log" 2>&1
		echo $? >"$WORK/bench.rc"
		echo $((SECONDS - t0)) >"$WORK/bench.secs"
	fi
	if [ -n "$core_pid" ]; then wait "$core_pid"; fi
}

report_side() {
	local rc
	if [ "$RUN_CORE" = 0 ]; then
		skipped=$((skipped + 1)); report+=("core suite   skipped (STATE_BACKEND_CORE_REGRESS=0)")
	else
		note "PostgreSQL's regression suite with the extension (scripts/core-regress.sh)"
		rc=$(cat "$WORK/core.rc" 2>/dev/null || echo 1)
		if [ "$rc" -eq 0 ]; then
			# Its progress, and the summary that ends it (not the diffs).
			awk '/^==> /{print} /suite against the server/{f=1; next} f' "$WORK/core.log"
			passed=$((passed + 1)); report+=("core suite   $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$WORK/core.log" | tail -n 1): no test differs with the extension ($(cat "$WORK/core.secs") s)")
		else
			tail -n 200 "$WORK/core.log"
			failed=$((failed + 1)); report+=("core suite   FAILED (exit $rc): $(grep -vE '^==> kept ' "$WORK/core.log" | tail -n 1)")
		fi
	fi
	if [ "$RUN_SMOKE" = 1 ]; then
		note "bench/smoke as $RUNNER"
		cat "$WORK/bench.log"
		rc=$(cat "$WORK/bench.rc" 2>/dev/null || echo 1)
		[ "$rc" -eq 124 ] && echo "bench/smoke: timed out after ${BENCH_TIMEOUT}s"
		if [ "$rc" -eq 0 ]; then
			passed=$((passed + 1)); report+=("bench smoke  ok ($(cat "$WORK/bench.secs") s)")
		else
			failed=$((failed + 1)); report+=("bench smoke  FAILED (exit $rc)")
		fi
	fi
}

side_pid=
if [ "$SIDE_JOBS" = 1 ]; then
	note "PostgreSQL's regression suite and bench/smoke start beside the TAP tests (reported after them)"
	(renice -n 10 -p "$BASHPID" >/dev/null 2>&1; run_side) </dev/null &
	side_pid=$!
fi

# ------------------------------------------------------------ TAP (prove)
shopt -s nullglob
tap_files=("$SRC"/test/t/*.pl)
shopt -u nullglob
if [ ${#tap_files[@]} -eq 0 ]; then
	report+=("tap          no test files in test/t")
else
	note "TAP tests (test/t/*.pl) as $RUNNER"
	tap_t0=$SECONDS
	log=$WORK/tap.out
	# The longest files start first, so that none of them is left running
	# alone at the end; the rest in order.
	tap_order=()
	for f in 041_fault_points 037_proxy 029_fault_loop 034_windows 073_alter_state_crash \
		042_privilege_matrix 036_auto_failover 012_fuzz; do
		[ -f "$SRC/test/t/$f.pl" ] && tap_order+=("test/t/$f.pl")
	done
	for f in "${tap_files[@]}"; do
		case " ${tap_order[*]} " in *" test/t/${f##*/} "*) ;; *) tap_order+=("test/t/${f##*/}") ;; esac
	done
	(cd "$SRC" && as_runner timeout -k 30 "$TEST_TIMEOUT" \
		make "${MAKEVARS[@]}" REGRESS= ISOLATION= PROVE_TESTS="${tap_order[*]}" \
		PROVE_FLAGS="-j$TAP_JOBS --timer" installcheck) 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	[ "$rc" -eq 124 ] && echo "TAP tests: timed out after ${TEST_TIMEOUT}s"
	# prove's summary: "Files=F, Tests=T, ..." and, on failure, one
	# "file (Wstat: W ... Tests: T Failed: F)" entry per failing file, maybe
	# followed by "Parse errors: ..." (a missing or bad plan).
	read -r t_total t_failed t_badfiles < <(awk '
		/^Files=[0-9]+, Tests=[0-9]+/ { split($2, a, "="); total = a[2] + 0 }
		/\(Wstat: [0-9]+.*Tests: [0-9]+ Failed: [0-9]+\)/ {
			match($0, /Wstat: [0-9]+/); w = substr($0, RSTART + 7, RLENGTH - 7) + 0
			match($0, /Failed: [0-9]+/); f = substr($0, RSTART + 8, RLENGTH - 8) + 0
			nf += f; cur = (f == 0 && w != 0); bad += cur; counted = (f > 0 || cur); next
		}
		/^  Parse errors:/ { if (!counted) { bad++; counted = 1 } }
		END { printf "%d %d %d\n", total, nf, bad }' "$log")
	t_ok=$((t_total - t_failed))
	t_fail=$((t_failed + t_badfiles))
	if [ "$rc" -ne 0 ] && [ "$t_fail" -eq 0 ]; then t_fail=1; fi
	# The log of each failing file (of the newest one after a time-out).
	if [ "$rc" -ne 0 ] && [ -d "$SRC/tmp_check/log" ]; then
		if [ "$rc" -eq 124 ]; then
			# shellcheck disable=SC2012
			bad=$(cd "$SRC/tmp_check/log" && ls -t regress_log_* 2>/dev/null | head -n 1)
		else
			bad=$(sed -nE 's|^(\S*/)?([^/ ]+)\.pl +\(Wstat:.*|regress_log_\2|p' "$log")
		fi
		for f in $bad; do
			[ -f "$SRC/tmp_check/log/$f" ] || continue
			note "$f (last 60 lines)"
			tail -n 60 "$SRC/tmp_check/log/$f"
			# Its failed assertions with their first lines of diagnostics,
			# repeated in the summary, which a shortened log still shows.
			while IFS= read -r line; do
				tap_failures+=("  ${f#regress_log_}: ${line:0:300}")
			done < <(awk '/^\[[0-9:.]+\]\([0-9.]+s\) not ok / { sub(/^\[[^]]*\]\([^)]*\) /, ""); print; d = 3; next }
				d > 0 && /^\[[0-9:.]+\]\([0-9.]+s\) #   (Failed|at )/ { next }
				d > 0 && /^\[[0-9:.]+\]\([0-9.]+s\) #/ { sub(/^\[[^]]*\]\([^)]*\) /, "    "); print; d--; next }
				{ d = 0 }' "$SRC/tmp_check/log/$f" | head -n 12)
			# Its servers' logs: a crash's report, with what led up to it.
			for slog in "$SRC/tmp_check/log/${f#regress_log_}"_*.log; do
				[ -f "$slog" ] || continue
				grep -q -E 'TRAP:|PANIC:|terminated by signal|was terminated|exited with exit code [2-9]' "$slog" || continue
				note "$(basename "$slog"): crash report"
				grep -n -B 20 -A 5 -E 'TRAP:|PANIC:|terminated by signal|was terminated|exited with exit code [2-9]' "$slog" | tail -n 80
			done
		done
	fi
	passed=$((passed + t_ok)); failed=$((failed + t_fail))
	report+=("tap          ${#tap_files[@]} files, $t_ok assertions ok, $t_fail FAILED (exit $rc; $((SECONDS - tap_t0)) s, $TAP_JOBS at once)")
	report+=("${tap_failures[@]}")
fi

if [ -n "$side_pid" ]; then
	wait "$side_pid"
else
	run_side
fi
report_side

stop_servers
finish
