# shellcheck shell=bash
# bench/lib/aggregating.sh: the aggregating-state and entries() cases,
# sourced by bench/lib/bench.sh (its server, its helpers sql, sql1, raw,
# meta, log, stmt_tps and its FAILED count).  Each figure is set beside its
# baseline, measured in this group, in this run:
#
#   per statement (pgbench -M prepared, -c AG_CLIENTS, random keys of
#     AG_KEYS preloaded text keys, memory states): aggregate() with
#     avg(float8), and with corr(float8, float8) (an aggregate of two
#     arguments, the second passed after the value), beside reduce() with
#     sum on the same values and the unlogged table's UPDATE of a (count,
#     sum) pair, each the mean of two runs in the order A B C D D C B A
#   entries() of NKEYS keys of a memory state, beside SELECT * of an
#     unlogged table of the same rows (both summed, so every row is read;
#     the best of three)
#   snapshot_entries() of the same state's native and canonical snapshots,
#     beside restore() of each into a database of its own (a restore
#     replaces a database's states; the best of three)
#
# Records "ag_*" lines for bench/lib/report_aggregating.pl.

AG_KEYS=$((NKEYS < 100000 ? NKEYS : 100000))
AG_CLIENTS=${BENCH_AGG_CLIENTS:-8}
ag_fail() { FAILED=$((FAILED + 1)); printf 'bench: aggregating case %s FAILED\n' "$*" >&2; }
meta ag_clients "$AG_CLIENTS"
meta ag_keys "$AG_KEYS"
meta ag_entries_keys "$NKEYS"

# ag_ms SQL [DB]: the milliseconds one statement took (psql's \timing).
ag_ms() {
	sql "${2:-bench}" 2>>"$WORK/out/aggregating.log" <<EOF | awk '/^Time: / { print $2 }'
\timing on
$1
EOF
}

# ag_best WHAT SQL [DB]: records "ag_scan WHAT NKEYS MS", the best of three.
ag_best() {
	local what=$1 stmt=$2 db=${3:-bench} best="" ms
	for _ in 1 2 3; do
		ms=$(ag_ms "$stmt" "$db")
		[ -z "$ms" ] && { ag_fail "$what"; return 0; }
		best=$(awk -v a="$best" -v b="$ms" 'BEGIN { print (a == "" || b < a) ? b : a }')
	done
	raw ag_scan "$what" "$NKEYS" "$best"
	printf '   %-22s %9s rows %9.1f ms (best of 3)\n' "$what" "$NKEYS" "$best" >&2
}

t_ag=$(date +%s)
log "aggregating cases: $AG_KEYS keys, aggregate avg(float8) and corr(float8, float8) beside reduce sum and a table UPDATE"
if ! sql bench >>"$WORK/out/aggregating.log" 2>&1 <<EOF; then
SELECT state.create_state('ag_avg', 'aggregating', 'text', 'float8', backend => 'memory', aggregate => 'avg(float8)');
SELECT state.create_state('ag_sum', 'reducing', 'text', 'float8', backend => 'memory', reducer => 'sum');
SELECT state.create_state('ag_corr', 'aggregating', 'text', 'float8', backend => 'memory',
                          aggregate => 'corr(float8, float8)');
SELECT count(state.aggregate('ag_avg', i::text, i::float8)), count(state.reduce('ag_sum', i::text, i::float8)),
       count(state.aggregate('ag_corr', i::text, i::float8, i::float8))
  FROM generate_series(1, $AG_KEYS) i;
CREATE UNLOGGED TABLE ag_t (k text PRIMARY KEY, n bigint, s float8);
INSERT INTO ag_t SELECT i::text, 1, i FROM generate_series(1, $AG_KEYS) i;
VACUUM ANALYZE ag_t;
EOF
	tail -n 5 "$WORK/out/aggregating.log" >&2
	ag_fail "creating the states"
else
	declare -A ag_stmt=(
		[aggregate]="SELECT state.aggregate('ag_avg', :k::text, :k::float8);"
		[aggregate2]="SELECT state.aggregate('ag_corr', :k::text, :k::float8, :k::float8);"
		[reduce]="SELECT state.reduce('ag_sum', :k::text, :k::float8);"
		[update]="UPDATE ag_t SET n = n + 1, s = s + :k::float8 WHERE k = :k::text;"
	)
	declare -A ag_sum=([aggregate]=0 [aggregate2]=0 [reduce]=0 [update]=0)
	for op in aggregate aggregate2 reduce update update reduce aggregate2 aggregate; do
		out="$WORK/out/ag-$op.txt"
		tps=$(stmt_tps "$out" "$AG_KEYS" "$AG_CLIENTS" "${ag_stmt[$op]}")
		if [ -z "$tps" ]; then
			ag_fail "$op"
			tail -n 5 "$out" >&2
			continue
		fi
		ag_sum[$op]=$(awk -v a="${ag_sum[$op]}" -v b="$tps" 'BEGIN { print a + b }')
		# The table is vacuumed between runs, as the statement group does.
		[ "$op" = update ] && sql1 "VACUUM ag_t" >/dev/null
	done
	for op in aggregate aggregate2 reduce update; do
		tps=$(awk -v a="${ag_sum[$op]}" 'BEGIN { printf "%.1f", a / 2 }')
		raw ag_tps "$op" "$tps"
		printf '   %-10s %10.0f tps (mean of 2 runs)\n' "$op" "$tps" >&2
	done
fi

log "aggregating cases: entries() of $NKEYS keys beside SELECT * of an unlogged table"
if ! sql bench >>"$WORK/out/aggregating.log" 2>&1 <<EOF; then
SELECT state.create_state('ag_e', 'value', 'text', 'bigint', backend => 'memory');
SELECT count(state.value_set('ag_e', i::text, i::bigint)) FROM generate_series(1, $NKEYS) i;
CREATE UNLOGGED TABLE ag_et (k text PRIMARY KEY, v bigint);
INSERT INTO ag_et SELECT i::text, i FROM generate_series(1, $NKEYS) i;
VACUUM ANALYZE ag_et;
EOF
	tail -n 5 "$WORK/out/aggregating.log" >&2
	ag_fail "loading the entries cases"
else
	ag_best entries "SELECT sum(length(key)), sum(value) FROM state.entries('ag_e', ''::text, 0::bigint);"
	ag_best table "SELECT sum(length(k)), sum(v) FROM (SELECT * FROM ag_et) t;"
	AG_DIR=$WORK/aggregating
	mkdir -p "$AG_DIR"
	[ "$(id -u)" -eq 0 ] && chown postgres: "$AG_DIR"
	sql postgres <<<"CREATE DATABASE bench_ag" >/dev/null && sql bench_ag <<<"CREATE EXTENSION state_backend" >/dev/null ||
		ag_fail "creating database bench_ag"
	for f in native canonical; do
		if [ "$(sql1 "SELECT state.wait_snapshot(state.snapshot('$AG_DIR/$f', '$f'))")" != completed ]; then
			ag_fail "snapshot $f"
			continue
		fi
		ag_best "snapshot_entries_$f" "SELECT sum(length(key)), sum(value) FROM state.snapshot_entries('$AG_DIR/$f', 'ag_e', ''::text, 0::bigint, 'bench');"
		ag_best "restore_$f" "SELECT state.restore('$AG_DIR/$f', from_database => 'bench');" bench_ag
	done
	sql1 "SELECT state.drop_state('ag_e'); DROP TABLE ag_et" >/dev/null
fi
meta ag_seconds "$(($(date +%s) - t_ag))"
