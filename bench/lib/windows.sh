# shellcheck shell=bash
# bench/lib/windows.sh: the window-state cases, sourced by bench/lib/bench.sh
# (its server, its helpers sql, sql1, as_pg, raw, meta, note, log,
# script_tps and its FAILED count).
#
# Every case feeds one event per statement, pgbench -M prepared, WN_CLIENTS
# clients, random keys of WN_KEYS, for the warm-up and WN_SECS seconds.
# Event time runs WN_SPEED times as fast as the clock, so that windows close
# during a run: an event's time is WN_BASE + (now() - t0) * WN_SPEED (t0: the
# start of the run).  Once a second, a separate session closes what is
# older than that clock less WN_MARGIN (in event time), and after pgbench
# ends everything is closed; every closed window is written to an unlogged
# table (bench.wn_out) by both sides:
#
#   tumbling:  state.window_add into a memory window state, tumbling 1
#              minute, reducer sum of 1 per event, an emit function that
#              inserts into bench.wn_out; the session advances the
#              watermark, the timer worker fires the windows
#   table:     the same count in an unlogged table, INSERT ... ON CONFLICT
#              (k, window_start) DO UPDATE SET n = n + 1 per event; the
#              session runs DELETE ... RETURNING of the windows whose end
#              is at or before the same clock, inserted into bench.wn_out
#   sliding:   as tumbling, windows of 5 minutes every minute
#   session:   as tumbling, session windows of a 30 s gap
#   tumbling_batch, table_batch: as tumbling and table, WN_BATCH events
#              (random keys) per statement: SELECT count(window_add(...))
#              FROM generate_series, and one INSERT ... SELECT ... GROUP BY
#              ... ON CONFLICT DO UPDATE SET n = n + EXCLUDED.n (the events
#              of a statement counted per key and window first, as ON
#              CONFLICT cannot change a row twice)
#   tumbling_pipe, table_pipe: as tumbling and table, the events sent
#              WN_PIPE at a time in a pipeline (one round trip), each event
#              its own statement in its own transaction (BEGIN; the
#              statement; COMMIT), as a client that streams events sends
#              them: the upsert per event of the table, the window_add per
#              event of the state, without a round trip each
#   noop:      the floor: SELECT bench.noop(k, t::text), the statement of
#              one event with the call doing nothing, no closing
#   noop_pipe: the floor of the pipelined cases, the same statement in the
#              same pipeline of transactions
#
# Then the cost of emitting a window, apart from feeding: WN_EMIT_KEYS keys
# with one window each in a memory window state (tumbling 1 minute, sum),
# the watermark advanced past them all, timed until every window is a row
# of bench.wn_out (polled every 20 ms), and the timer worker's time on a CPU
# meanwhile (/proc/PID/schedstat): through an SQL emit function that
# inserts the row (emit_fn), and through the state's emit table (emit_table:
# the timer worker inserts the row itself), alternating, WN_EMIT_RUNS runs
# each.  Records "wn emit" lines.
#
# Each run counts with its events per second end to end (all events over
# the time from pgbench's start until every window is in bench.wn_out) and
# while fed (pgbench's per-second figures after the warm-up, the timer
# worker firing meanwhile).  Sanity check of every run (a failure counts in
# FAILED): bench.wn_out's counts add up to the events pgbench fed (five
# times them for sliding windows), no window emitted twice, none left open.
# Order: noop tumbling table sliding session table tumbling tumbling_batch
# table_batch noop_pipe tumbling_pipe table_pipe table_pipe tumbling_pipe (a
# case run twice counts with the mean of its runs).
#
# Records "wn" lines for bench/lib/report_windows.pl.

WN_KEYS=$((NKEYS < 100000 ? NKEYS : 100000))
WN_CLIENTS=${BENCH_WINDOWS_CLIENTS:-8}
WN_WARMUP=$WARMUP_N
if [ "$MODE" = smoke ]; then
	WN_SECS=${BENCH_WINDOWS_SECONDS:-1}
	WN_SPEED=${BENCH_WINDOWS_SPEED:-60}
else
	WN_SECS=${BENCH_WINDOWS_SECONDS:-12}
	WN_SPEED=${BENCH_WINDOWS_SPEED:-10}
fi
WN_MARGIN='30 seconds'			# the watermark trails the events' clock by this
WN_BASE='2030-01-01 00:00:00+00'	# event time at t0 (a minute boundary)
WN_END='2100-01-01 00:00:00+00'	# the last watermark: after every window
WN_EPOCH='1970-01-01 00:00:00+00'
WN_BATCH=${BENCH_WINDOWS_BATCH:-100}
WN_PIPE=${BENCH_WINDOWS_PIPELINE:-100}
WN_ORDER="noop tumbling table sliding session table tumbling tumbling_batch table_batch noop_pipe tumbling_pipe table_pipe table_pipe tumbling_pipe"
# The smoke runs each case once (the repeats alternate cases for steadier figures).
[ "$MODE" = smoke ] && WN_ORDER="noop tumbling table sliding session tumbling_batch table_batch noop_pipe tumbling_pipe table_pipe"
WN_STALL_S=60					# a drain with no progress for this long fails
WN_EMIT_KEYS=${BENCH_WINDOWS_EMIT_KEYS:-$([ "$MODE" = smoke ] && echo 2000 || echo 50000)}
WN_EMIT_RUNS=${BENCH_WINDOWS_EMIT_RUNS:-$([ "$MODE" = smoke ] && echo 1 || echo 3)}
for v in WN_CLIENTS WN_SECS WN_SPEED WN_BATCH WN_PIPE WN_EMIT_KEYS WN_EMIT_RUNS; do
	case "${!v}" in '' | *[!0-9]* | 0) die "BENCH_WINDOWS_${v#WN_} must be a positive whole number" ;; esac
done
wn_fail() { FAILED=$((FAILED + 1)); printf 'bench: windows case %s FAILED\n' "$*" >&2; }
meta wn_clients "$WN_CLIENTS"
meta wn_keys "$WN_KEYS"
meta wn_seconds "$WN_SECS"
meta wn_warmup "$WN_WARMUP"
meta wn_speed "$WN_SPEED"
meta wn_margin "$WN_MARGIN"
meta wn_order "$WN_ORDER"
meta wn_batch "$WN_BATCH"
meta wn_pipe "$WN_PIPE"

# The event's time, in a pgbench statement, and the clock the watermark
# follows (both from the statement's now()).
wn_event_time() { printf "('%s'::timestamptz + (now() - '%s'::timestamptz) * %d)" "$WN_BASE" "$1" "$WN_SPEED"; }
wn_watermark() { printf "(%s - interval '%s')" "$(wn_event_time "$1")" "$WN_MARGIN"; }

# wn_state CASE: the window state of a case; wn_create CASE: creates it.
wn_state() { printf 'wn_%s' "$1"; }
wn_create() {
	local contents
	case "$1" in
		tumbling | tumbling_batch | tumbling_pipe) contents="assigner => 'tumbling', size => '1 minute'" ;;
		sliding) contents="assigner => 'sliding', size => '5 minutes', slide => '1 minute'" ;;
		session) contents="assigner => 'session', gap => '30 seconds'" ;;
	esac
	sql1 "SELECT state.create_state('$(wn_state "$1")', 'window', 'text', 'bigint', backend => 'memory',
		$contents, reducer => 'sum', emit => 'bench.wn_emit(text,timestamptz,timestamptz,bigint)')"
}
# Each event counts in this many windows of the case.
wn_mult() { case "$1" in sliding) echo 5 ;; *) echo 1 ;; esac; }
# Events per statement of a case.
wn_per() { case "$1" in *_batch) echo "$WN_BATCH" ;; *_pipe) echo "$WN_PIPE" ;; *) echo 1 ;; esac; }
# Is it a table case?
wn_table() { case "$1" in table | table_batch | table_pipe) return 0 ;; *) return 1 ;; esac; }

# wn_script CASE STATEMENT: the pgbench script of a case whose event is
# STATEMENT (on a random key :k), on stdout: one event per transaction of
# pgbench, or, for a pipelined case, WN_PIPE of them in a pipeline, each in
# a transaction of its own.
wn_script() {
	local i
	case "$1" in
		*_pipe)
			printf '\\startpipeline\n'
			for ((i = 0; i < WN_PIPE; i++)); do
				printf '\\set k random(1, %d)\nBEGIN;\n%s\nCOMMIT;\n' "$WN_KEYS" "$2"
			done
			printf '\\endpipeline\n'
			;;
		*) printf '\\set k random(1, %d)\n%s\n' "$WN_KEYS" "$2" ;;
	esac
}

# wn_floor CASE N: a floor (noop or noop_pipe), one run; records its line
# ("floor" or "floor_pipe", in events per second).
wn_floor() {
	local c=$1 n=$2 t0 f out tps
	out="$WORK/out/wn-$c-$n.txt"
	f="$WORK/out/wn-$c-$n.pgbench"
	t0=$(sql1 "SELECT clock_timestamp()")
	wn_script "$c" "SELECT bench.noop(:k::text, $(wn_event_time "$t0")::text);" >"$f"
	tps=$(WARMUP_N=$WN_WARMUP SECS=$WN_SECS script_tps "$out" "$f" "$WN_CLIENTS")
	if [ -z "$tps" ]; then
		tail -n 5 "$out" >&2
		wn_fail "$c run $n"
		raw wn "${c/noop/floor}" "$n" ERR
		return 0
	fi
	tps=$(awk -v t="$tps" -v p="$(wn_per "$c")" 'BEGIN { printf "%.1f", t * p }')
	raw wn "${c/noop/floor}" "$n" "$tps"
	printf '   %-14s %8.0f events/s (the floor)\n' "$c" "$tps" >&2
}

# wn_advancer STOPFILE STATEMENT: runs STATEMENT once a second, in one
# session, until STOPFILE exists (looked for every 0.1 s, so that it stops
# at once); fails when the session does.
wn_advancer() {
	local stop=$1 stmt=$2 tick
	while [ ! -e "$stop" ]; do
		printf '%s\n' "$stmt"
		tick=0
		while [ "$tick" -lt 10 ] && [ ! -e "$stop" ]; do
			sleep 0.1
			tick=$((tick + 1))
		done
	done | sql bench >/dev/null
}

# wn_drained NAME: 't' once the timer worker has fired every window of the
# state: with no allowed lateness a window is removed once its emit
# committed, and the state's entries (keys with an open window) fall to 0.
# (state.timer_status is not used: its figures are published about once a
# second, and right after an advance they can show nothing pending before
# the worker has read the windows.)
wn_drained() {
	sql1 "SELECT coalesce(bool_and(entries = 0), false) FROM state.states WHERE name = '$1'" 2>>"$WORK/out/windows.log"
}

# wn_diagnose NAME: what a state that does not drain looks like (stderr and
# windows.log).
wn_diagnose() {
	sql bench 2>&1 <<EOF | tee -a "$WORK/out/windows.log" >&2 || true
\\set ON_ERROR_STOP 0
\\echo state.states, state.stats, state.timer_status of $1:
SELECT name, kind, entries, bytes FROM state.states WHERE name = '$1';
SELECT * FROM state.stats WHERE name = '$1';
SELECT * FROM state.timer_status WHERE name = '$1';
\\echo open windows (count, fired, first and last end, the first 5):
SELECT count(*), count(*) FILTER (WHERE fired), min(window_end), max(window_end) FROM state.windows('$1', NULL::text);
SELECT * FROM state.windows('$1', NULL::text) ORDER BY window_end, key LIMIT 5;
\\echo emitted (rows, sum of counts), timer failures:
SELECT count(*), sum(n) FROM bench.wn_out;
SELECT * FROM state.timer_failures WHERE name = '$1' LIMIT 5;
EOF
}

# wn_run CASE N: one run of a case (the Nth of that case); records its line.
wn_run() {
	local c=$1 n=$2 name t0 f adv out tps events t_start t_end t_done stop adv_pid rc
	local during windows sum dups expected late fired open failures status last now t_last
	name=$(wn_state "$c")
	out="$WORK/out/wn-$c-$n.txt"
	f="$WORK/out/wn-$c-$n.pgbench"
	stop="$WORK/out/wn-$c-$n.stop"
	if ! sql1 "TRUNCATE bench.wn_out, bench.wn_counts" >/dev/null; then
		wn_fail "$c (truncating the tables)"
		return 0
	fi
	if ! wn_table "$c" && ! wn_create "$c" >>"$WORK/out/windows.log" 2>&1; then
		tail -n 3 "$WORK/out/windows.log" >&2
		wn_fail "$c (creating the state)"
		raw wn run "$c" "$n" ERR
		return 0
	fi
	t0=$(sql1 "SELECT clock_timestamp()")
	adv="SELECT state.advance_watermark('$name', $(wn_watermark "$t0"));"
	case "$c" in
		table_batch)
			wn_script "$c" "$(printf "INSERT INTO bench.wn_counts AS c (k, window_start, n) SELECT k, ws, count(*) FROM (SELECT (1 + floor(random() * %d))::int::text AS k, date_bin('1 minute', %s, '%s') AS ws FROM generate_series(1, %d)) e GROUP BY k, ws ORDER BY k ON CONFLICT (k, window_start) DO UPDATE SET n = c.n + EXCLUDED.n;" \
				"$WN_KEYS" "$(wn_event_time "$t0")" "$WN_EPOCH" "$WN_BATCH")" >"$f"
			;;
		tumbling_batch)
			wn_script "$c" "$(printf "SELECT count(state.window_add('%s', (1 + floor(random() * %d))::int::text, %s, 1::bigint)) FROM generate_series(1, %d);" \
				"$name" "$WN_KEYS" "$(wn_event_time "$t0")" "$WN_BATCH")" >"$f"
			;;
		table | table_pipe)
			wn_script "$c" "$(printf "INSERT INTO bench.wn_counts AS c (k, window_start, n) VALUES (:k::text, date_bin('1 minute', %s, '%s'), 1) ON CONFLICT (k, window_start) DO UPDATE SET n = c.n + 1;" \
				"$(wn_event_time "$t0")" "$WN_EPOCH")" >"$f"
			;;
		*)
			wn_script "$c" "SELECT state.window_add('$name', :k::text, $(wn_event_time "$t0"), 1::bigint);" >"$f"
			;;
	esac
	if wn_table "$c"; then
		adv="WITH d AS (DELETE FROM bench.wn_counts WHERE window_start <= $(wn_watermark "$t0") - interval '1 minute' RETURNING k, window_start, window_start + interval '1 minute', n) INSERT INTO bench.wn_out SELECT * FROM d;"
	fi
	rm -f "$stop"
	wn_advancer "$stop" "$adv" >"$WORK/out/wn-$c-$n.advance.txt" 2>&1 &
	adv_pid=$!
	t_start=$(date +%s%N)
	tps=$(WARMUP_N=$WN_WARMUP SECS=$WN_SECS script_tps "$out" "$f" "$WN_CLIENTS")
	t_end=$(date +%s%N)
	touch "$stop"
	rc=0
	wait "$adv_pid" || rc=$?
	if [ -z "$tps" ] || [ "$rc" -ne 0 ]; then
		[ -z "$tps" ] && tail -n 5 "$out" >&2
		[ "$rc" -ne 0 ] && tail -n 5 "$WORK/out/wn-$c-$n.advance.txt" >&2
		wn_fail "$c run $n ($([ -z "$tps" ] && echo pgbench || echo 'the advancing session'))"
		raw wn run "$c" "$n" ERR
		wn_table "$c" || sql1 "SELECT state.drop_state('$name')" >/dev/null 2>&1 || true
		return 0
	fi
	events=$(awk '/^number of transactions actually processed: / { sub(/\/.*/, "", $6); print $6; exit }' "$out")
	events=$((events * $(wn_per "$c")))
	tps=$(awk -v t="$tps" -v p="$(wn_per "$c")" 'BEGIN { printf "%.1f", t * p }')
	during=$(sql1 "SELECT count(*) FROM bench.wn_out")
	# Close everything: the last watermark, or the last DELETE.
	if wn_table "$c"; then
		if ! sql1 "WITH d AS (DELETE FROM bench.wn_counts WHERE window_start <= '$WN_END'::timestamptz - interval '1 minute' RETURNING k, window_start, window_start + interval '1 minute', n) INSERT INTO bench.wn_out SELECT * FROM d" >/dev/null; then
			wn_fail "$c run $n (the last DELETE)"
			raw wn run "$c" "$n" ERR
			return 0
		fi
	else
		if ! sql1 "SELECT state.advance_watermark('$name', '$WN_END')" >/dev/null; then
			wn_fail "$c run $n (the last advance_watermark)"
			raw wn run "$c" "$n" ERR
			sql1 "SELECT state.drop_state('$name')" >/dev/null 2>&1 || true
			return 0
		fi
		# Fails when the state's entries have not changed for WN_STALL_S.
		last='' t_last=$(date +%s)
		until [ "$(wn_drained "$name")" = t ]; do
			sleep 0.02
			now=$(sql1 "SELECT entries FROM state.states WHERE name = '$name'" 2>>"$WORK/out/windows.log" || true)
			if [ "$now" != "$last" ]; then
				last=$now t_last=$(date +%s)
			elif [ $(($(date +%s) - t_last)) -ge "$WN_STALL_S" ]; then
				wn_fail "$c run $n (windows not all fired: no progress for $WN_STALL_S s after the last advance)"
				wn_diagnose "$name"
				raw wn run "$c" "$n" ERR
				sql1 "SELECT state.drop_state('$name')" >/dev/null 2>&1 || true
				return 0
			fi
		done
	fi
	t_done=$(date +%s%N)
	# The sanity check: counts add up, no window twice, none left open.
	IFS='|' read -r windows sum dups < <(sql1 "SELECT count(*), coalesce(sum(n), 0), count(*) - count(DISTINCT (k, ws)) FROM bench.wn_out")
	expected=$((events * $(wn_mult "$c")))
	late=- fired=- open=0 failures=0
	if ! wn_table "$c"; then
		IFS='|' read -r late fired < <(sql1 "SELECT late, timers_fired FROM state.stats WHERE name = '$name'" 2>>"$WORK/out/windows.log" || echo '?|?')
		open=$(sql1 "SELECT count(*) FROM state.windows('$name', NULL::text)" 2>>"$WORK/out/windows.log" || echo '?')
		failures=$(sql1 "SELECT count(*) FROM state.timer_failures WHERE name = '$name'" 2>>"$WORK/out/windows.log" || echo '?')
		sql1 "SELECT state.drop_state('$name')" >/dev/null || wn_fail "$c run $n (drop_state)"
	fi
	status=ok
	if [ "$sum" != "$expected" ] || [ "$dups" != 0 ] || [ "$open" != 0 ] || [ "$failures" != 0 ]; then
		status=bad
		wn_fail "$c run $n (the emitted counts add up to $sum, expected $expected = $events events x $(wn_mult "$c"); $windows windows, $dups emitted twice, $open left open, $failures emit failures, late $late, fired $fired)"
	fi
	raw wn run "$c" "$n" "$events" "$tps" \
		"$(awk -v ns=$((t_end - t_start)) 'BEGIN { printf "%.3f", ns / 1e9 }')" \
		"$(awk -v ns=$((t_done - t_end)) 'BEGIN { printf "%.3f", ns / 1e9 }')" \
		"$windows" "$during" "$sum" "$expected" "$late" "$status" "$fired"
	printf '   %-9s %8s events, %8.0f/s while fed, %8.0f/s end to end (drain %.2f s), %s windows (%s while fed), %s\n' \
		"$c" "$events" "$tps" \
		"$(awk -v e="$events" -v ns=$((t_done - t_start)) 'BEGIN { printf "%.1f", e / (ns / 1e9) }')" \
		"$(awk -v ns=$((t_done - t_end)) 'BEGIN { printf "%.3f", ns / 1e9 }')" \
		"$windows" "$during" "$([ $status = ok ] && echo 'counts add up' || echo 'COUNTS DO NOT ADD UP')" >&2
}

# wn_emit KIND N: one run of the emission cost (KIND emit_fn or
# emit_table); records "wn emit KIND N WINDOWS SECONDS STATUS".
wn_emit() {
	local kind=$1 n=$2 name=wn_emit_$1 target t0 t1 got=0 status=ok pid cpu0 cpu1
	case "$kind" in
		emit_fn) target="emit => 'bench.wn_emit(text,timestamptz,timestamptz,bigint)'" ;;
		emit_table) target="emit_table => 'bench.wn_out'" ;;
	esac
	sql1 "TRUNCATE bench.wn_out" >/dev/null
	if ! sql1 "SELECT state.create_state('$name', 'window', 'text', 'bigint', backend => 'memory',
			assigner => 'tumbling', size => '1 minute', reducer => 'sum', $target);
		SELECT count(state.window_add('$name', 'k' || i, '$WN_BASE', 1::bigint)) FROM generate_series(1, $WN_EMIT_KEYS) i" \
		>>"$WORK/out/windows.log" 2>&1; then
		wn_fail "$kind run $n (loading)"
		raw wn emit "$kind" "$n" ERR
		return
	fi
	# The timer worker's own time on a CPU (/proc/PID/schedstat, ns), which
	# the other processes of a busy machine do not stretch as they do the
	# wall clock.
	pid=$(sql1 "SELECT pid FROM pg_stat_activity WHERE backend_type = 'state_backend timers' AND datname = current_database()")
	cpu0=$(cut -d' ' -f1 "/proc/$pid/schedstat" 2>/dev/null || echo 0)
	t0=$(date +%s%N)
	sql1 "SELECT state.advance_watermark('$name', '$WN_END')" >/dev/null
	while [ "$got" -lt "$WN_EMIT_KEYS" ] && [ $(($(date +%s%N) - t0)) -lt $((WN_STALL_S * 1000000000)) ]; do
		got=$(sql1 "SELECT count(*) FROM bench.wn_out")
		[ "$got" -lt "$WN_EMIT_KEYS" ] && sleep 0.02
	done
	t1=$(date +%s%N)
	cpu1=$(cut -d' ' -f1 "/proc/$pid/schedstat" 2>/dev/null || echo 0)
	if [ "$got" != "$WN_EMIT_KEYS" ] || [ "$(sql1 "SELECT coalesce(sum(n), 0) FROM bench.wn_out")" != "$WN_EMIT_KEYS" ]; then
		status=bad
		wn_fail "$kind run $n ($got of $WN_EMIT_KEYS windows emitted)"
	fi
	sql1 "SELECT state.drop_state('$name')" >/dev/null || wn_fail "$kind run $n (drop_state)"
	raw wn emit "$kind" "$n" "$WN_EMIT_KEYS" "$(awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.3f", ns / 1e9 }')" "$status" \
		"$(awk -v ns=$((cpu1 - cpu0)) 'BEGIN { printf "%.3f", ns / 1e9 }')"
	printf '   %-10s %8s windows emitted in %.3f s, the timer worker on a CPU %.3f s, %s\n' "$kind" "$WN_EMIT_KEYS" \
		"$(awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.3f", ns / 1e9 }')" \
		"$(awk -v ns=$((cpu1 - cpu0)) 'BEGIN { printf "%.3f", ns / 1e9 }')" "$status" >&2
}

t_wn=$(date +%s)
if [ "$(sql1 "SELECT count(*) FROM pg_proc WHERE pronamespace = 'state'::regnamespace AND proname = 'window_add'")" = 0 ]; then
	note "windows cases skipped: function state.window_add does not exist in this build"
else
	log "windows cases: $WN_KEYS keys, $WN_CLIENTS clients, event time at ${WN_SPEED}x the clock; order $WN_ORDER"
	if ! sql bench >>"$WORK/out/windows.log" 2>&1 <<'SQL'; then
CREATE UNLOGGED TABLE bench.wn_out (k text, ws timestamptz, we timestamptz, n bigint);
CREATE UNLOGGED TABLE bench.wn_counts (k text, window_start timestamptz, n bigint, PRIMARY KEY (k, window_start));
CREATE FUNCTION bench.wn_emit(k text, ws timestamptz, we timestamptz, n bigint) RETURNS void LANGUAGE sql
    AS $$ INSERT INTO bench.wn_out VALUES (k, ws, we, n) $$;
SQL
		tail -n 5 "$WORK/out/windows.log" >&2
		wn_fail "creating the tables"
	else
		declare -A wn_seen=()
		for c in $WN_ORDER; do
			wn_seen[$c]=$((${wn_seen[$c]:-0} + 1))
			if [ "$c" = noop ] || [ "$c" = noop_pipe ]; then
				wn_floor "$c" "${wn_seen[$c]}"
			else
				wn_run "$c" "${wn_seen[$c]}"
			fi
		done
		log "windows: the cost of emitting $WN_EMIT_KEYS windows, emit function against emit table, $WN_EMIT_RUNS run(s) each"
		meta wn_emit_keys "$WN_EMIT_KEYS"
		for ((i = 1; i <= WN_EMIT_RUNS; i++)); do
			wn_emit emit_fn "$i"
			wn_emit emit_table "$i"
		done
		sql1 "DROP TABLE bench.wn_out, bench.wn_counts; DROP FUNCTION bench.wn_emit(text, timestamptz, timestamptz, bigint)" >/dev/null
	fi
fi
meta wn_total_seconds "$(($(date +%s) - t_wn))"
