# shellcheck shell=bash
# bench/lib/rocksdb.sh: the rocksdb cases, sourced by bench/lib/bench.sh
# (its server, its helpers sql, sql1, as_pg, raw, meta, note, log, run_case
# and its FAILED count) after the bulk cases and before the snapshot cases.
#
# A rocksdb state lives in the one RocksDB instance of the state worker;
# sessions reach it through shared-memory request rings: value_set is
# posted and waited for at the end of the statement, value_get and reduce
# are round trips.  Each figure is set beside the same thing on the first
# heap backend (memory) and the floors, measured in this group, in this run:
#
#   per statement (pgbench -c ROCKSDB_CLIENTS): value_get on random keys
#     and value_set on random keys of a value state of NKEYS keys, reduce
#     on the HOT hot keys of a reducing state that holds only those (a
#     reduce is a round trip: loading NKEYS keys by reduce would take
#     minutes); SELECT 1 and the no-op at the start and the end
#   bulk: one statement of NBULK value_set into an empty state (new) and
#     again (existing), beside the unlogged table's upsert
#   checkpoints (state_backend.checkpoint_dir is set for this server):
#     every other state dropped, a rocksdb state of NKEYS keys, a full
#     checkpoint, 1% of the keys changed, a second (incremental) one; the
#     bytes each wrote (state.snapshots) and its time
#
# Records "rdb_*" lines for bench/lib/report.pl.

RDB_HEAP=${HEAP_BACKENDS[0]:-}
RDB_TARGETS=(rocksdb)
[ -n "$RDB_HEAP" ] && RDB_TARGETS+=("$RDB_HEAP")
RDB_CKPT_DIR=$WORK/checkpoints
RDB_CHANGE_STEP=100				# every 100th key changes: 1%
rdb_fail() { FAILED=$((FAILED + 1)); printf 'bench: rocksdb case %s FAILED\n' "$*" >&2; }
meta rdb_heap "${RDB_HEAP:-none}"
meta rdb_clients "$ROCKSDB_CLIENTS"

# rdb_timed SQL: one statement with psql's \timing; prints "ms<TAB>first
# row of its output".  Fails if the statement fails.
rdb_timed() {
	local out
	out=$(sql bench 2>>"$WORK/out/rocksdb.log" <<EOF
\timing on
$1
EOF
	) || { tail -n 5 "$WORK/out/rocksdb.log" >&2; return 1; }
	awk '/^Time: / { ms = $2; next } row == "" && NF { row = $0 } END { if (ms == "") exit 1; printf "%s\t%s\n", ms, row }' <<<"$out"
}

# rdb_load NAME N: value_set of keys '1' .. 'N' holding 1 .. N, in
# statements of at most 1,000,000 rows; prints the milliseconds it took.
rdb_load() {
	local name=$1 n=$2 a r ms=0
	for ((a = 1; a <= n; a += 1000000)); do
		r=$(rdb_timed "SELECT count(state.value_set('$name', i::text, i::bigint)) FROM generate_series($a, $((a + 999999 < n ? a + 999999 : n))) i;") || return 1
		ms=$(awk -v a="$ms" -v b="${r%%$'\t'*}" 'BEGIN { printf "%.3f", a + b }')
	done
	echo "$ms"
}

# ------------------------------------------------------------ states
t_rdb=$(date +%s)
log "rocksdb cases: loading $NKEYS keys into a rocksdb${RDB_HEAP:+ and a $RDB_HEAP} value state"
rdb_loaded=1
for b in "${RDB_TARGETS[@]}"; do
	if ! sql bench >>"$WORK/out/rocksdb.log" 2>&1 <<EOF; then
SELECT state.create_state('rdb_v_$b', 'value', key_type => 'text', value_type => 'bigint', backend => '$b');
SELECT state.create_state('rdb_r_$b', 'reducing', key_type => 'text', value_type => 'bigint', reducer => 'sum', backend => '$b');
SELECT state.create_state('rdb_vb_$b', 'value', key_type => 'text', value_type => 'bigint', backend => '$b');
SELECT count(state.reduce('rdb_r_$b', i::text, i::bigint)) FROM generate_series(1, $HOT) i;
EOF
		tail -n 5 "$WORK/out/rocksdb.log" >&2
		rdb_fail "creating the states on $b"
		rdb_loaded=0
		continue
	fi
	if ms=$(rdb_load "rdb_v_$b" "$NKEYS"); then
		# shellcheck disable=SC2046  # two figures, one field each
		raw rdb_load "$b" "$NKEYS" "$ms" $(sql1 "SELECT entries, bytes FROM state.states WHERE name = 'rdb_v_$b'" | tr '|' ' ')
		printf '   load %-10s %9s keys %9.0f ms\n' "$b" "$NKEYS" "$ms" >&2
	else
		rdb_fail "loading $NKEYS keys into $b"
		rdb_loaded=0
	fi
done
sql1 "CREATE UNLOGGED TABLE rdb_bulk (k text PRIMARY KEY, v bigint)" >/dev/null
sql1 "CHECKPOINT" >/dev/null

# ------------------------------------------------------------ per statement
# The same run_case as the statement group, on the rdb_ states, with its own
# floors; "rdb_tps" lines.
RDB_CASES="value_get:random value_get:hot value_set:random reduce:hot"
if [ "$rdb_loaded" = 1 ]; then
	log "rocksdb per-statement cases: $ROUNDS round(s) of $RUN_LENGTH, -c $ROCKSDB_CLIENTS, -M $PROTOCOL"
	run_group rdb_ rdb "$ROCKSDB_CLIENTS" "$RDB_CASES" "${RDB_TARGETS[@]}"
fi
meta rdb_statement_seconds "$(($(date +%s) - t_rdb))"

# ------------------------------------------------------------ bulk
rdb_bulk_stmt() {
	case "$1" in
		unlogged) echo "INSERT INTO rdb_bulk (k, v) SELECT i::text, i FROM generate_series(1, $NBULK) i ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v;" ;;
		*) echo "SELECT count(state.value_set('rdb_vb_$1', i::text, i::bigint)) FROM generate_series(1, $NBULK) i;" ;;
	esac
}
rdb_bulk_reset() {
	case "$1" in
		unlogged) echo "TRUNCATE rdb_bulk;" ;;
		*) echo "SELECT state.truncate('rdb_vb_$1');" ;;
	esac
}
t0=$(date +%s)
log "rocksdb bulk: value_set of $NBULK rows, $BULK_REPS repetition(s)"
for target in "${RDB_TARGETS[@]}" unlogged; do
	raw rdb_bulk_script "$target" "$(rdb_bulk_stmt "$target")"
done
for rep in $(seq 1 "$BULK_REPS"); do
	for target in "${RDB_TARGETS[@]}" unlogged; do
		out="$WORK/out/rdb-bulk-$target-$rep.txt"
		rc=0
		sql bench >"$out" 2>&1 <<EOF || rc=$?
$(rdb_bulk_reset "$target")
\timing on
\echo BULK new
$(rdb_bulk_stmt "$target")
\echo BULK existing
$(rdb_bulk_stmt "$target")
EOF
		if [ "$rc" -ne 0 ]; then
			rdb_fail "bulk value_set on $target"
			tail -n 10 "$out" >&2
			raw rdb_bulk "$target" new "$rep" ERR
			raw rdb_bulk "$target" existing "$rep" ERR
			continue
		fi
		awk -v target="$target" -v rep="$rep" '
			/^BULK / { variant = $2; next }
			/^Time: / && variant != "" { printf "rdb_bulk\t%s\t%s\t%s\t%s\n", target, variant, rep, $2; variant = "" }
		' "$out" >>"$RAW"
		printf '   value_set %-10s rep %s %s ms\n' "$target" "$rep" \
			"$(awk '/^Time: / { printf "%s%.0f", sep, $2; sep = " / " }' "$out")" >&2
	done
done
meta rdb_bulk_seconds "$(($(date +%s) - t0))"

# ------------------------------------------------------------ checkpoints
# A checkpoint holds every database's states, and a heap state is written
# whole every time: every other state goes first, so that the checkpoints
# hold the measured rocksdb state only.
n_dropped=$(sql1 "SELECT count(*) FROM (SELECT state.drop_state(name) FROM state.states) d")
sql1 "DROP TABLE rdb_bulk" >/dev/null
[ "$n_dropped" -gt 0 ] &&
	note "rocksdb checkpoints: the $n_dropped states of the earlier cases (this group's included) were dropped first (a checkpoint holds every database's states)"

# rdb_shared_files: "name size" of every SST file under checkpoint_dir/shared.
rdb_shared_files() {
	[ -d "$RDB_CKPT_DIR/shared" ] || return 0
	find "$RDB_CKPT_DIR/shared" -maxdepth 1 -type f -printf '%f %s\n' | LC_ALL=C sort
}

# rdb_checkpoint LABEL N: one checkpoint (snapshot() with no path), timed
# from the call to wait_snapshot() returning; then the worker's figures,
# and what it added on disk: its chk-<id> directory and the SST files new
# under shared/.  Records an "rdb_ckpt" line.
rdb_checkpoint() {
	local label=$1 n=$2 r ms row id status path wsecs entries bytes incr dirbytes before after new_bytes new_files sst_files
	before=$(rdb_shared_files)
	sync
	r=$(rdb_timed "SELECT id, state.wait_snapshot(id) FROM (SELECT state.snapshot() AS id OFFSET 0) s;") ||
		{ rdb_fail "$label checkpoint"; return 1; }
	IFS=$'\t' read -r ms row <<<"$r"
	IFS='|' read -r id status <<<"$row"
	if [ "$status" != completed ]; then rdb_fail "$label checkpoint: $status"; return 1; fi
	IFS='|' read -r path wsecs entries bytes incr < <(sql1 "SELECT path, extract(epoch FROM finished_at - started_at), entries, bytes, incremental FROM state.snapshots WHERE id = $id")
	dirbytes=$(du -sb "$path" | cut -f1)
	after=$(rdb_shared_files)
	read -r new_files new_bytes < <(LC_ALL=C join -v 1 <(printf '%s\n' "$after") <(printf '%s\n' "$before") |
		awk 'NF { n++; b += $2 } END { printf "%d %d\n", n, b }')
	sst_files=$(grep -c '^sst ' "$path/rocksdb/FILES" 2>/dev/null || true)
	[ "$entries" = "$n" ] || note "rocksdb $label checkpoint of $n keys holds $entries entries"
	raw rdb_ckpt "$label" "$n" "$(awk -v ms="$ms" 'BEGIN { printf "%.4f", ms / 1000 }')" "$wsecs" "$bytes" "$entries" "$incr" \
		"$dirbytes" "$new_bytes" "$new_files" "$sst_files"
	printf '   checkpoint %-11s %9s keys %9.3f s (worker %.3f s) %12s bytes  incremental %s; on disk %s + %s bytes, %s of %s SST files new\n' \
		"$label" "$n" "$(awk -v ms="$ms" 'BEGIN { print ms / 1000 }')" "$wsecs" "$bytes" "$incr" "$dirbytes" "$new_bytes" \
		"$new_files" "$sst_files" >&2
}

t0=$(date +%s)
nchange=$((NKEYS / RDB_CHANGE_STEP))
log "rocksdb checkpoints: $NKEYS keys, a full checkpoint, $nchange keys (1%) changed, a second checkpoint"
raw rdb_ckpt_cmd checkpoint "SELECT id, state.wait_snapshot(id) FROM (SELECT state.snapshot() AS id OFFSET 0) s"
raw rdb_ckpt_cmd change "SELECT count(state.value_set('rdb_ckpt', i::text, -i::bigint)) FROM generate_series($RDB_CHANGE_STEP, $NKEYS, $RDB_CHANGE_STEP) i"
if ! sql1 "SELECT state.create_state('rdb_ckpt', 'value', key_type => 'text', value_type => 'bigint', backend => 'rocksdb')" >/dev/null ||
	! ms=$(rdb_load rdb_ckpt "$NKEYS"); then
	rdb_fail "loading $NKEYS keys for the checkpoints"
elif rdb_checkpoint full "$NKEYS"; then
	if r=$(rdb_timed "SELECT count(state.value_set('rdb_ckpt', i::text, -i::bigint)) FROM generate_series($RDB_CHANGE_STEP, $NKEYS, $RDB_CHANGE_STEP) i;"); then
		raw rdb_ckpt_change "$nchange" "${r%%$'\t'*}"
		rdb_checkpoint incremental "$NKEYS" || true
		# The change must be in the state (and so in the checkpoint).
		got=$(sql1 "SELECT count(*) FROM generate_series($RDB_CHANGE_STEP, $NKEYS, $RDB_CHANGE_STEP) i WHERE state.value_get('rdb_ckpt', i::text, 0::bigint) = -i")
		[ "$got" = "$nchange" ] || note "rocksdb checkpoints: $got of the $nchange changed keys read back changed"
	else
		rdb_fail "changing $nchange keys"
	fi
fi
sql1 "SELECT state.drop_state('rdb_ckpt', if_exists => true)" >/dev/null || true
meta rdb_ckpt_seconds "$(($(date +%s) - t0))"
