# shellcheck shell=bash
# bench/lib/rescale.sh: restoring one part of a snapshot, and merging the
# snapshots of three parts, sourced by bench/lib/bench.sh (its server and
# helpers sql, sql1, raw, meta, log and its FAILED count).  Each figure is
# set beside its baseline, measured in this group, in this run:
#
#   In a database of its own (a restore replaces a database's states):
#   RS_HEAP entries (default 3M; smoke 30k) in a memory value state, and
#   RS_ROCKS (1M; smoke 10k) in a rocksdb one, each snapshot native:
#   the restore of part 0 of 3 beside the full restore of the same
#   snapshot; then each part restored and snapshotted in turn, and the
#   merge of the three part snapshots beside the full restore.  The full
#   restore runs first and last; the faster of the two is the baseline.
#
# Records "rs_*" lines for bench/lib/report_rescale.pl.

RS_HEAP=${BENCH_RESCALE_KEYS:-$([ "$MODE" = smoke ] && echo 30000 || echo 3000000)}
RS_ROCKS=${BENCH_RESCALE_ROCKSDB_KEYS:-$([ "$MODE" = smoke ] && echo 10000 || echo 1000000)}
RS_DIR=$WORK/rescale
mkdir -p "$RS_DIR"
[ "$(id -u)" -eq 0 ] && chown postgres: "$RS_DIR"
rs_fail() { FAILED=$((FAILED + 1)); printf 'bench: rescale case %s FAILED\n' "$*" >&2; }
meta rs_heap_keys "$RS_HEAP"
meta rs_rocks_keys "$RS_ROCKS"

# rs_timed SQL: runs SQL (one statement returning one value) and prints
# "milliseconds value".
rs_timed() {
	local out
	out=$(printf '\\timing on\n%s\n' "$1" | sql bench_rescale 2>>"$WORK/out/rescale.log") ||
		{ tail -n 5 "$WORK/out/rescale.log" >&2; return 1; }
	awk '/^Time: / { ms = $2; next } row == "" && NF { row = $0 } END { if (ms == "") exit 1; printf "%s %s\n", ms, row }' <<<"$out"
}

# rs_case NAME BACKEND N: a state of N entries in BACKEND, its snapshot,
# full and partial restores, the three parts' snapshots and their merge.
rs_case() {
	local name=$1 backend=$2 n=$3 full=$RS_DIR/$1_full ms rows p
	printf '%s\n' \
		"SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'rs\\_%';" \
		"SELECT state.create_state('rs_$name', 'value', 'bigint', 'bigint', backend => '$backend');" \
		"SELECT count(state.value_set('rs_$name', i, i)) FROM generate_series(1, $n) i;" \
		"SELECT state.wait_snapshot(state.snapshot('$full'));" |
		sql bench_rescale >>"$WORK/out/rescale.log" 2>&1 || { rs_fail "loading $name"; return 0; }
	read -r ms rows <<<"$(rs_timed "SELECT state.restore('$full');")" || { rs_fail "full restore of $name"; return 0; }
	[ "$rows" = "$n" ] || rs_fail "full restore of $name restored $rows of $n"
	raw rs_step "$name" full "$ms" "$rows"
	for p in 0 1 2; do
		read -r ms rows <<<"$(rs_timed "SELECT state.restore('$full', parallelism => 3, part => $p);")" ||
			{ rs_fail "restore of part $p of $name"; return 0; }
		[ "$p" = 0 ] && raw rs_step "$name" part0 "$ms" "$rows"
		sql bench_rescale <<<"SELECT state.wait_snapshot(state.snapshot('$RS_DIR/${name}_part$p'))" >/dev/null ||
			{ rs_fail "snapshot of part $p of $name"; return 0; }
	done
	read -r ms rows <<<"$(rs_timed "SELECT state.restore(ARRAY['$RS_DIR/${name}_part0', '$RS_DIR/${name}_part1', '$RS_DIR/${name}_part2']);")" ||
		{ rs_fail "merge of $name"; return 0; }
	[ "$rows" = "$n" ] || rs_fail "merge of $name restored $rows of $n"
	raw rs_step "$name" merge "$ms" "$rows"
	# The full restore again, now that the memory it needs was touched once.
	read -r ms rows <<<"$(rs_timed "SELECT state.restore('$full');")" || { rs_fail "full restore of $name"; return 0; }
	raw rs_step "$name" full2 "$ms" "$rows"
	printf '   %-6s %9s entries: full restore, part 0 of 3, merge of 3: %s\n' "$name" "$n" \
		"$(awk -F'\t' -v f="$name" '$1 == "rs_step" && $2 == f { printf "%s ms ", $4 }' "$RAW")" >&2
	rm -rf "$RS_DIR"/"${name}"_*
}

t_rs=$(date +%s)
log "rescale cases: $RS_HEAP entries in memory, $RS_ROCKS in rocksdb"
sql postgres <<<"CREATE DATABASE bench_rescale" >/dev/null || rs_fail "creating database bench_rescale"
sql bench_rescale <<<"CREATE EXTENSION state_backend" >/dev/null || rs_fail "creating the extension"
rs_case heap memory "$RS_HEAP"
[ "$ROCKSDB" = 1 ] && rs_case rocks rocksdb "$RS_ROCKS"
sql postgres <<<"DROP DATABASE bench_rescale" >/dev/null || rs_fail "dropping database bench_rescale"
meta rs_seconds "$(($(date +%s) - t_rs))"
