# shellcheck shell=bash
# bench/lib/stats.sh: what counting state.stats costs, sourced by
# bench/lib/bench.sh (its server, its helpers sql, raw, meta, log,
# stmt_tps and its FAILED count).
#
#   per statement (pgbench -M prepared, -c SC_CLIENTS, random keys of
#   SC_KEYS preloaded text keys): value_get with state_backend.track_stats
#   on and off, each the mean of two runs in the order on off off on, of
#     memory   a memory state (the sessions' counters)
#     rocksdb  a rocksdb state whose values are too large for the shared
#              cache, so that every read is the worker's, from SST files
#              (flushed there by a snapshot, and each read once beforehand
#              so that the first run does not fill the block cache alone)
#              (the sessions' counters and RocksDB's block counting, which
#              the worker follows from the server's setting)
#
# The smoke runs each mode once (order on off).
#
# Records "sc_tps CASE:on|off TPS" lines for bench/lib/report_stats.pl.

SC_KEYS=$((NKEYS < 100000 ? NKEYS : 100000))
SC_CLIENTS=${BENCH_STATS_CLIENTS:-8}
sc_fail() { FAILED=$((FAILED + 1)); printf 'bench: stats case %s FAILED\n' "$*" >&2; }
meta sc_clients "$SC_CLIENTS"
meta sc_keys "$SC_KEYS"
if [ "$MODE" = smoke ]; then SC_ORDER="on off"; SC_RUNS=1; else SC_ORDER="on off off on"; SC_RUNS=2; fi
meta sc_order "$SC_ORDER"

# sc_setting MODE: state_backend.track_stats for the whole server.
sc_setting() {
	sql bench >/dev/null <<EOF
ALTER SYSTEM SET state_backend.track_stats = $1;
SELECT pg_reload_conf();
SELECT pg_sleep(1);
EOF
}

log "stats cases: value_get with state.stats counting on and off, $SC_KEYS keys"
if ! sql bench >>"$WORK/out/stats.log" 2>&1 <<EOF; then
SELECT state.create_state('sc_memory', 'value', 'text', 'bigint', backend => 'memory');
SELECT count(state.value_set('sc_memory', i::text, i::bigint)) FROM generate_series(1, $SC_KEYS) i;
SELECT state.create_state('sc_rocksdb', 'value', 'text', 'text', backend => 'rocksdb');
SELECT count(state.value_set('sc_rocksdb', i::text, repeat(md5(i::text), 5))) FROM generate_series(1, $SC_KEYS) i;
SELECT state.wait_snapshot(state.snapshot('$WORK/sc_flush', 'native'));
SELECT count(state.value_get('sc_rocksdb', i::text, ''::text)) FROM generate_series(1, $SC_KEYS) i;
EOF
	tail -n 5 "$WORK/out/stats.log" >&2
	sc_fail "creating the states"
else
	for case in memory rocksdb; do
		if [ "$case" = memory ]; then default='0::bigint'; else default="''::text"; fi
		declare -A sc_sum=([on]=0 [off]=0)
		for mode in $SC_ORDER; do
			sc_setting "$mode"
			out="$WORK/out/sc-$case-$mode.txt"
			tps=$(stmt_tps "$out" "$SC_KEYS" "$SC_CLIENTS" \
				"SELECT state.value_get('sc_$case', :k::text, $default);")
			if [ -z "$tps" ]; then
				sc_fail "$case value_get, counting $mode"
				tail -n 5 "$out" >&2
				continue
			fi
			sc_sum[$mode]=$(awk -v a="${sc_sum[$mode]}" -v b="$tps" 'BEGIN { print a + b }')
		done
		for mode in on off; do
			tps=$(awk -v a="${sc_sum[$mode]}" -v n="$SC_RUNS" 'BEGIN { printf "%.1f", a / n }')
			raw sc_tps "$case:$mode" "$tps"
			printf '   %-7s value_get, counting %-3s %10.0f tps (mean of %d runs)\n' "$case" "$mode" "$tps" "$SC_RUNS" >&2
		done
	done
	sql bench >/dev/null <<<"ALTER SYSTEM RESET state_backend.track_stats; SELECT pg_reload_conf();"
	sql bench <<<"SELECT state.drop_state('sc_memory'), state.drop_state('sc_rocksdb')" >/dev/null
fi
