# shellcheck shell=bash
# bench/lib/stats.sh: what counting state.stats costs, sourced by
# bench/lib/bench.sh (its server, its helpers sql, raw, meta, log,
# stmt_tps and its FAILED count).
#
#   per statement (pgbench -M prepared, -c SC_CLIENTS, random keys of
#   SC_KEYS preloaded text keys, a memory state): value_get with
#   state_backend.track_stats on and off, each the mean of two runs in the
#   order on off off on
#
# Records "sc_tps" lines for bench/lib/report_stats.pl.

SC_KEYS=$((NKEYS < 100000 ? NKEYS : 100000))
SC_CLIENTS=${BENCH_STATS_CLIENTS:-8}
sc_fail() { FAILED=$((FAILED + 1)); printf 'bench: stats case %s FAILED\n' "$*" >&2; }
meta sc_clients "$SC_CLIENTS"
meta sc_keys "$SC_KEYS"

log "stats cases: value_get with state.stats counting on and off, $SC_KEYS keys"
if ! sql bench >>"$WORK/out/stats.log" 2>&1 <<EOF; then
SELECT state.create_state('sc_v', 'value', 'text', 'bigint', backend => 'memory');
SELECT count(state.value_set('sc_v', i::text, i::bigint)) FROM generate_series(1, $SC_KEYS) i;
EOF
	tail -n 5 "$WORK/out/stats.log" >&2
	sc_fail "creating the state"
else
	declare -A sc_sum=([on]=0 [off]=0)
	for mode in on off off on; do
		out="$WORK/out/sc-$mode.txt"
		tps=$(stmt_tps "$out" "$SC_KEYS" "$SC_CLIENTS" "SELECT state.value_get('sc_v', :k::text, 0::bigint);" \
			"-c state_backend.track_stats=$mode")
		if [ -z "$tps" ]; then
			sc_fail "value_get, counting $mode"
			tail -n 5 "$out" >&2
			continue
		fi
		sc_sum[$mode]=$(awk -v a="${sc_sum[$mode]}" -v b="$tps" 'BEGIN { print a + b }')
	done
	for mode in on off; do
		tps=$(awk -v a="${sc_sum[$mode]}" 'BEGIN { printf "%.1f", a / 2 }')
		raw sc_tps "$mode" "$tps"
		printf '   value_get, counting %-3s %10.0f tps (mean of 2 runs)\n' "$mode" "$tps" >&2
	done
	sql bench <<<"SELECT state.drop_state('sc_v')" >/dev/null
fi
