# shellcheck shell=bash
# bench/lib/ttl.sh: the state TTL cases, sourced by bench/lib/bench.sh (its
# server, its helpers sql, sql1, as_pg, raw, meta, note, log, stmt_tps and
# its FAILED count).  Each figure is set beside its baseline, measured in
# this group, in this run:
#
#   per statement (pgbench -M prepared, -c TT_CLIENTS, random keys of
#     TT_KEYS preloaded text keys): value_set and value_get on a memory
#     state with a TTL of an hour, beside the same state without one, each
#     the mean of two runs in the order A B B A
#   bytes per entry of those two states (state.states.bytes / entries)
#   the background cleanup: TT_SWEEP keys of a memory state expire; the
#     time from expiry until its bytes are given back gives the sweep's
#     rate (entries per second, with the server's
#     state_backend.ttl_cleanup_key_groups); for TT_WRITERS_S seconds
#     after expiry TT_CLIENTS writers run value_set on another state,
#     logging every transaction, and their p99 is set beside that of the
#     same writers before the keys to clean up were loaded
#
# Records "tt_*" lines for bench/lib/report_ttl.pl.

TT_KEYS=$((NKEYS < 100000 ? NKEYS : 100000))
TT_SWEEP=${BENCH_TTL_SWEEP_KEYS:-$((NKEYS < 1000000 ? NKEYS : 1000000))}
TT_CLIENTS=${BENCH_TTL_CLIENTS:-8}
TT_TTL_S=$([ "$MODE" = smoke ] && echo 2 || echo 5)
TT_WRITERS_S=$([ "$MODE" = smoke ] && echo 2 || echo 8)
meta tt_writers_seconds "$TT_WRITERS_S"
tt_fail() { FAILED=$((FAILED + 1)); printf 'bench: ttl case %s FAILED\n' "$*" >&2; }
meta tt_clients "$TT_CLIENTS"
meta tt_keys "$TT_KEYS"
meta tt_sweep_keys "$TT_SWEEP"
meta tt_cleanup_key_groups "$(sql1 "SHOW state_backend.ttl_cleanup_key_groups")"

t_tt=$(date +%s)
log "ttl cases: $TT_KEYS keys in memory states with and without a TTL"
if ! sql bench >>"$WORK/out/ttl.log" 2>&1 <<EOF; then
SELECT state.create_state('tt_v', 'value', 'text', 'bigint', backend => 'memory', ttl => '1 hour');
SELECT state.create_state('tt_vu', 'value', 'text', 'bigint', backend => 'memory');
SELECT count(state.value_set(s, i::text, i::bigint)) FROM generate_series(1, $TT_KEYS) i, unnest(ARRAY['tt_v', 'tt_vu']) s;
EOF
	tail -n 5 "$WORK/out/ttl.log" >&2
	tt_fail "creating the states"
else
	for s in tt_v tt_vu; do
		# shellcheck disable=SC2046  # two figures
		raw tt_bytes "$s" $(sql1 "SELECT entries, bytes FROM state.states WHERE name = '$s'" | tr '|' ' ')
	done
	# ABBA order: neither state always runs first.
	for op in value_set value_get; do
		declare -A sum=([tt_v]=0 [tt_vu]=0)
		ok=1
		for s in tt_v tt_vu tt_vu tt_v; do
			if [ $op = value_set ]; then
				stmt="SELECT state.value_set('$s', :k::text, :k::bigint);"
			else
				stmt="SELECT state.value_get('$s', :k::text, 0::bigint);"
			fi
			out="$WORK/out/tt-$op-$s.txt"
			tps=$(stmt_tps "$out" "$TT_KEYS" "$TT_CLIENTS" "$stmt")
			if [ -z "$tps" ]; then
				tt_fail "$op on $s"
				tail -n 5 "$out" >&2
				ok=0
				break
			fi
			sum[$s]=$(awk -v a="${sum[$s]}" -v b="$tps" 'BEGIN { print a + b }')
		done
		[ "$ok" = 1 ] || continue
		for s in tt_v tt_vu; do
			tps=$(awk -v a="${sum[$s]}" 'BEGIN { printf "%.1f", a / 2 }')
			raw tt_tps "$op" "$s" "$tps"
			printf '   %-10s %-6s %10.0f tps (mean of 2 runs)\n' "$op" "$s" "$tps" >&2
		done
	done
fi

# tt_writers LABEL SECONDS: TT_CLIENTS writers of value_set on tt_vu for
# SECONDS, every transaction logged; records "tt_lat LABEL figures" with
# latency.pl's figures of the whole run.
tt_writers() {
	local label=$1 secs=$2 prefix=$WORK/out/tt-lat-$1 script=$WORK/out/tt-writers.pgbench start figs
	printf '\\set k random(1, %d)\nSELECT state.value_set('"'tt_vu'"', :k::text, :k::bigint);\n' "$TT_KEYS" >"$script"
	start=$(date +%s.%N)
	if ! as_pg timeout -k 10 $((secs + 300)) "$PGBIN/pgbench" -n -M "$PROTOCOL" -h "$WORK" -p "$PORT" \
		-U postgres -c "$TT_CLIENTS" -j "$THREADS_MAX" -T "$secs" -l --log-prefix="$prefix" -f "$script" \
		bench >"$prefix.txt" 2>&1; then
		tt_fail "writers ($label)"
		tail -n 5 "$prefix.txt" >&2
		return 0
	fi
	figs=$(perl "$LIB/latency.pl" "$start" "$(awk -v s="$start" -v d="$secs" 'BEGIN { printf "%.6f", s + d + 1 }')" \
		"$prefix".*[0-9]) || { tt_fail "latency of the writers ($label)"; return 0; }
	# shellcheck disable=SC2086  # figs is a list of figures
	raw tt_lat "$label" $figs
	rm -f "$prefix".*[0-9]
}

log "ttl cases: background cleanup of $TT_SWEEP expired keys, with writers running"
# Writers with nothing to clean up, before the keys to clean up exist.
tt_writers quiet "$TT_WRITERS_S"
if ! sql bench >>"$WORK/out/ttl.log" 2>&1 <<EOF; then
SELECT state.create_state('tt_sweep', 'value', 'bigint', 'bigint', backend => 'memory', ttl => '$TT_TTL_S seconds');
SELECT count(state.value_set('tt_sweep', i, i)) FROM generate_series(1, $TT_SWEEP) i;
EOF
	tail -n 5 "$WORK/out/ttl.log" >&2
	tt_fail "loading tt_sweep"
else
	loaded=$(date +%s.%N)
	raw tt_sweep_bytes "$(sql1 "SELECT bytes FROM state.states WHERE name = 'tt_sweep'")"
	# Wait for the expiry, then the same writers while the cleanup runs.
	sleep "$(awk -v l="$loaded" -v t="$TT_TTL_S" -v now="$(date +%s.%N)" 'BEGIN { w = l + t - now; print (w > 0 ? w : 0) }')"
	expired=$(date +%s.%N)
	tt_writers sweeping "$TT_WRITERS_S" &
	writers=$!
	done_at=""
	for _ in $(seq 1 1200); do
		if [ "$(sql1 "SELECT bytes < 1024 FROM state.states WHERE name = 'tt_sweep'")" = t ]; then
			done_at=$(date +%s.%N)
			break
		fi
		sleep 0.1
	done
	wait "$writers"
	if [ -n "$done_at" ]; then
		secs=$(awk -v a="$expired" -v b="$done_at" 'BEGIN { printf "%.2f", b - a }')
		raw tt_sweep "$TT_SWEEP" "$secs"
		printf '   background cleanup: %s keys in %s s\n' "$TT_SWEEP" "$secs" >&2
	else
		tt_fail "the background cleanup did not give tt_sweep's memory back in 120 s"
	fi
fi
meta tt_seconds "$(($(date +%s) - t_tt))"
