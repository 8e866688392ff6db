# shellcheck shell=bash
# bench/lib/lmdb.sh: the lmdb cases, sourced by bench/lib/bench.sh (its
# server, its helpers sql, sql1, as_pg, raw, meta, note, log, run_case and
# its FAILED count) after the other groups.
#
# lmdb is the backend of contrib/lmdb, a library of its own on the provider
# API: sessions read and write its LMDB environment in place.  It is set
# beside memory (the heap, in shared memory) and rocksdb (a round trip to
# the state worker per read) on a value state of LMDB_KEYS random keys
# (default 2M: more than the rocksdb shared cache holds), in this run:
#
#   per statement (pgbench -c ROCKSDB_CLIENTS): value_get and value_set on
#     random keys, reduce on HOT hot keys; SELECT 1 and the no-op at the
#     start and the end of each round
#   bulk load: the LMDB_KEYS keys by value_set in statements of 1M rows
#   snapshot and restore: with only that backend's state left, a native
#     snapshot to a path (snapshot() to wait_snapshot()), then the state
#     dropped and restored from it
#
# Records "lmd_*" lines for bench/lib/report_lmdb.pl.

LMD_TARGETS=(lmdb rocksdb memory)
lmd_fail() { FAILED=$((FAILED + 1)); printf 'bench: lmdb case %s FAILED\n' "$*" >&2; }
meta lmd_keys "$LMDB_KEYS"
meta lmd_clients "$ROCKSDB_CLIENTS"

# lmd_timed SQL: statements, timed; prints their milliseconds.
lmd_timed() {
	local out
	out=$(printf '\\timing on\n%s\n' "$1" | sql bench 2>>"$WORK/out/lmdb.log") ||
		{ tail -n 5 "$WORK/out/lmdb.log" >&2; return 1; }
	awk '/^Time: / { ms += $2; n++ } END { if (!n) exit 1; printf "%.3f\n", ms }' <<<"$out"
}

# lmd_create B: the value and reducing states of backend B.
lmd_create() {
	sql bench >>"$WORK/out/lmdb.log" 2>&1 <<SQL
SELECT state.create_state('lmd_v_$1', 'value', key_type => 'bigint', value_type => 'bigint', backend => '$1');
SELECT state.create_state('lmd_r_$1', 'reducing', key_type => 'bigint', value_type => 'bigint', reducer => 'sum', backend => '$1');
SELECT count(state.reduce('lmd_r_$1', i, i)) FROM generate_series(1, $HOT) i;
SQL
}

# lmd_load B: value_set of keys 1 .. LMDB_KEYS, in statements of 1M rows.
lmd_load() {
	local a e stmts=""
	for ((a = 1; a <= LMDB_KEYS; a += 1000000)); do
		e=$((a + 999999 < LMDB_KEYS ? a + 999999 : LMDB_KEYS))
		stmts+="SELECT count(state.value_set('lmd_v_$1', i, i)) FROM generate_series($a, $e) i;"$'\n'
	done
	lmd_timed "$stmts"
}

t_lmd=$(date +%s)
lmd_loaded=1
log "lmdb cases: loading $LMDB_KEYS keys into an lmdb, a rocksdb and a memory value state"
for b in "${LMD_TARGETS[@]}"; do
	if ! lmd_create "$b"; then
		tail -n 5 "$WORK/out/lmdb.log" >&2
		lmd_fail "creating the states on $b"
		lmd_loaded=0
	elif ms=$(lmd_load "$b"); then
		# shellcheck disable=SC2046  # two figures, one field each
		raw lmd_load "$b" "$LMDB_KEYS" "$ms" $(sql1 "SELECT entries, bytes FROM state.states WHERE name = 'lmd_v_$b'" | tr '|' ' ')
		printf '   load %-8s %9s keys %9.0f ms\n' "$b" "$LMDB_KEYS" "$ms" >&2
	else
		lmd_fail "loading $LMDB_KEYS keys into $b"
		lmd_loaded=0
	fi
done
sql1 "CHECKPOINT" >/dev/null

# ------------------------------------------------------------ per statement
LMD_CASES="value_get:random value_set:random reduce:hot"
if [ "$lmd_loaded" = 1 ]; then
	log "lmdb per-statement cases: $ROUNDS round(s) of $RUN_LENGTH, -c $ROCKSDB_CLIENTS, -M $PROTOCOL"
	saved_nkeys=$NKEYS
	NKEYS=$LMDB_KEYS
	run_group lmd_ lmd "$ROCKSDB_CLIENTS" "$LMD_CASES" "${LMD_TARGETS[@]}"
	NKEYS=$saved_nkeys
fi

# ------------------------------------------------------------ snapshot, restore
# A snapshot holds every state: each backend's is measured alone, its
# value state loaded again after every other state was dropped.
if [ "$lmd_loaded" = 1 ]; then
	log "lmdb snapshots: a native snapshot and a restore of $LMDB_KEYS keys, per backend"
	sql1 "SELECT count(state.drop_state(name)) FROM state.states" >/dev/null
	checkpoint_now || lmd_fail "a checkpoint once every state was dropped"
	for b in "${LMD_TARGETS[@]}"; do
		path=$WORK/lmd-snap-$b
		rm -rf "$path"
		if ! sql1 "SELECT state.create_state('lmd_v_$b', 'value', key_type => 'bigint', value_type => 'bigint', backend => '$b')" >/dev/null ||
			! lmd_load "$b" >/dev/null; then
			lmd_fail "loading $b for its snapshot"
			continue
		fi
		sync
		if ! s_ms=$(lmd_timed "SELECT state.wait_snapshot(state.snapshot('$path'));"); then
			lmd_fail "snapshot of $b"
			continue
		fi
		sql1 "SELECT state.drop_state('lmd_v_$b')" >/dev/null
		if ! r_ms=$(lmd_timed "SELECT state.restore('$path');"); then
			lmd_fail "restore of $b"
			continue
		fi
		n=$(sql1 "SELECT entries FROM state.states WHERE name = 'lmd_v_$b'")
		[ "$n" = "$LMDB_KEYS" ] || lmd_fail "restore of $b holds $n entries, not $LMDB_KEYS"
		raw lmd_snap "$b" "$LMDB_KEYS" "$s_ms" "$r_ms" "$(du -sb "$path" | cut -f1)"
		printf '   %-8s snapshot %9.0f ms, restore %9.0f ms\n' "$b" "$s_ms" "$r_ms" >&2
		sql1 "SELECT state.drop_state('lmd_v_$b')" >/dev/null
		rm -rf "$path"
	done
fi
meta lmd_seconds "$(($(date +%s) - t_lmd))"
