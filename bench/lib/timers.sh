# shellcheck shell=bash
# bench/lib/timers.sh: the timers cases, sourced by bench/lib/bench.sh (its
# server, its helpers sql, sql1, as_pg, raw, meta, log, stmt_tps and its
# FAILED count).
#
#   register:  timer_register of new timers (random instants over ten years)
#              on a memory timers state beside value_set on a memory value
#              state, pgbench -M prepared, TM_CLIENTS clients,
#              random keys of TM_KEYS (the same call shape: name, key, one
#              more argument)
#   fire:      TM_FIRE event-time timers whose handler inserts into an
#              unlogged table, fired by one advance of the watermark: timers
#              per second from the advance until the table holds them all
#   lag:       processing-time timers registered due at once by pgbench at
#              TM_RATE per second for TM_LAG_SECS; the worker's 99th
#              percentile from due to fired (state.timer_status.lag_p99)
#   memory:    the state's bytes and the growth of the timer worker's
#              anonymous memory (RssAnon) per pending timer, beside an unlogged table (key,
#              at) with an index on at holding the same timers
#
# Records "tm" lines for bench/lib/report_timers.pl.

TM_KEYS=$((NKEYS < 100000 ? NKEYS : 100000))
TM_CLIENTS=${BENCH_TIMERS_CLIENTS:-8}
if [ "$MODE" = smoke ]; then
	TM_FIRE=${BENCH_TIMERS_FIRE:-5000}
	TM_LAG_SECS=${BENCH_TIMERS_LAG_SECS:-2}
else
	TM_FIRE=${BENCH_TIMERS_FIRE:-200000}
	TM_LAG_SECS=${BENCH_TIMERS_LAG_SECS:-20}
fi
TM_RATE=${BENCH_TIMERS_RATE:-1000}
tm_fail() { FAILED=$((FAILED + 1)); printf 'bench: timers case %s FAILED\n' "$*" >&2; }
meta tm_clients "$TM_CLIENTS"
meta tm_keys "$TM_KEYS"
meta tm_fire "$TM_FIRE"
meta tm_rate "$TM_RATE"
meta tm_lag_secs "$TM_LAG_SECS"

# tm_worker_rss: the timer worker's RssAnon in kB (0 when it is not found).
tm_worker_rss() {
	local pid
	pid=$(sql1 "SELECT pid FROM pg_stat_activity WHERE backend_type = 'state_backend timers' AND datname = 'bench'")
	if [ -n "$pid" ] && [ -r "/proc/$pid/status" ]; then
		awk '/^RssAnon:/ { print $2 }' "/proc/$pid/status"
	else
		echo 0
	fi
}

# tm_register: registration beside value_set of the same shape.
tm_register() {
	local name stmt out tps
	for name in register value_set; do
		if [ "$name" = register ]; then
			stmt="SELECT state.timer_register('tm_reg', :k::text, '2030-01-01'::timestamptz + random() * interval '10 years');"
		else
			stmt="SELECT state.value_set('tm_val', :k::text, '2030-01-01'::timestamptz + random() * interval '10 years');"
		fi
		out="$WORK/out/tm-$name.txt"
		tps=$(stmt_tps "$out" "$TM_KEYS" "$TM_CLIENTS" "$stmt")
		if [ -z "$tps" ]; then
			tm_fail "$name"
			tail -n 5 "$out" >&2
			continue
		fi
		raw tm tps "$name" "$tps"
		printf '   %-10s %10.0f tps\n' "$name" "$tps" >&2
	done
}

# tm_fire: TM_FIRE timers loaded, measured, then fired by one advance.
tm_fire() {
	local rss0 rss t0 t1 rate
	rss0=$(tm_worker_rss)
	sql1 "SELECT count(state.timer_register('tm_fire', (i % 10000)::text, '2030-01-01'::timestamptz + i * interval '1 ms')) FROM generate_series(1, $TM_FIRE) i" >/dev/null
	# The worker reads the registrations (or the whole state) within a round.
	until [ "$(sql1 "SELECT coalesce(max(pending), 0) >= $TM_FIRE FROM state.timer_status WHERE name = 'tm_fire'")" = t ]; do
		sleep 0.2
	done
	rss=$(($(tm_worker_rss) - rss0))
	raw tm memory state_bytes "$(sql1 "SELECT bytes FROM state.states WHERE name = 'tm_fire'")"
	raw tm memory worker_rss_kb "$rss"
	sql1 "CREATE UNLOGGED TABLE bench.tm_table (k text, at timestamptz);
	      INSERT INTO bench.tm_table SELECT (i % 10000)::text, '2030-01-01'::timestamptz + i * interval '1 ms' FROM generate_series(1, $TM_FIRE) i;
	      CREATE INDEX ON bench.tm_table (at);
	      VACUUM ANALYZE bench.tm_table;" >/dev/null
	raw tm memory table_bytes "$(sql1 "SELECT pg_total_relation_size('bench.tm_table')")"
	t0=$(date +%s%N)
	sql1 "SELECT state.advance_watermark('tm_fire', '2031-01-01')" >/dev/null
	until [ "$(sql1 "SELECT count(*) >= $TM_FIRE FROM bench.tm_fired")" = t ]; do
		sleep 0.02
		if [ $(($(date +%s%N) - t0)) -gt 600000000000 ]; then
			tm_fail "fire (not done in 600 s)"
			return 0
		fi
	done
	t1=$(date +%s%N)
	rate=$(awk -v n="$TM_FIRE" -v ns=$((t1 - t0)) 'BEGIN { printf "%.1f", n / (ns / 1e9) }')
	raw tm fire per_second "$rate"
	printf '   fire       %10.0f timers/s (timer worker RssAnon +%s kB)\n' "$rate" "$rss" >&2
}

# tm_lag: processing-time timers due at once, registered at TM_RATE/s.
tm_lag() {
	local f="$WORK/out/tm-lag.pgbench" lag
	printf '\\set k random(1, %d)\n' "$TM_KEYS" >"$f"
	echo "SELECT state.timer_register('tm_lag', :k::text, clock_timestamp());" >>"$f"
	if ! as_pg timeout -k 10 $((TM_LAG_SECS + 120)) "$PGBIN/pgbench" -n -M prepared -h "$WORK" \
		-p "$PORT" -U postgres -R "$TM_RATE" -T "$TM_LAG_SECS" -c 4 -j 2 -f "$f" bench \
		>"$WORK/out/tm-lag.txt" 2>&1; then
		tm_fail "lag (pgbench)"
		return 0
	fi
	sleep 1
	lag=$(sql1 "SELECT round(extract(epoch FROM lag_p99) * 1000, 2) FROM state.timer_status WHERE name = 'tm_lag'")
	if [ -z "$lag" ]; then
		tm_fail "lag (no figure)"
		return 0
	fi
	raw tm lag p99_ms "$lag"
	printf '   lag p99    %10s ms at %s timers/s\n' "$lag" "$TM_RATE" >&2
}

t_tm=$(date +%s)
log "timers cases: registration beside value_set, firing, lag at $TM_RATE/s, memory per timer"
if ! sql bench >>"$WORK/out/timers.log" 2>&1 <<'SQL'; then
CREATE UNLOGGED TABLE bench.tm_fired (k text, at timestamptz);
CREATE FUNCTION bench.tm_on(k text, at timestamptz) RETURNS void LANGUAGE sql
    AS $$ INSERT INTO bench.tm_fired VALUES (k, at) $$;
SELECT state.create_state('tm_reg', 'timers', 'text', backend => 'memory', handler => 'bench.tm_on(text,timestamptz)', time_domain => 'event');
SELECT state.create_state('tm_val', 'value', 'text', 'timestamptz', backend => 'memory');
SELECT state.create_state('tm_fire', 'timers', 'text', backend => 'memory', handler => 'bench.tm_on(text,timestamptz)', time_domain => 'event');
SELECT state.create_state('tm_lag', 'timers', 'text', backend => 'memory', handler => 'bench.tm_on(text,timestamptz)');
SQL
	tail -n 5 "$WORK/out/timers.log" >&2
	tm_fail "creating the states"
else
	# Firing first, while the timer worker holds no other timers: its memory
	# grows by what this state's timers take.
	tm_fire
	tm_register
	sql1 "SELECT state.drop_state('tm_reg'); SELECT state.drop_state('tm_val')" >/dev/null
	tm_lag
	sql1 "SELECT state.drop_state('tm_fire'); SELECT state.drop_state('tm_lag')" >/dev/null
fi
meta tm_seconds "$(($(date +%s) - t_tm))"
