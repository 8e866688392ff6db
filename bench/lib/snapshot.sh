# shellcheck shell=bash
# bench/lib/snapshot.sh: the snapshot cases, sourced by bench/lib/bench.sh
# (its server, its helpers sql, sql1, as_pg, raw, meta, note, log and its
# FAILED count) after the other cases.
#
# For each size N of SNAP_SIZES, a heap state `snap` of N (text key, bigint)
# entries, '1' .. 'N' holding 1 .. N, and an unlogged table
# snap_t (k text PRIMARY KEY, v bigint) with the same rows.  Timed one after
# the other, each after a `sync` (so that no step pays for the dirty pages
# of the one before):
#
#   COPY snap_t TO '<file>' (FORMAT binary), then an fsync of that file
#   the snapshot, native and canonical: one statement from the snapshot()
#     call to wait_snapshot() returning; the worker's own duration
#     (finished_at - started_at), entries and bytes come from state.snapshots
#   COPY snap_t_in FROM '<file>' (FORMAT binary), into an empty table with
#     its primary key
#   state.restore() of each snapshot
#   dd of the native snapshot's size (at least DD_MIN_MB MB) in the same
#     file system, with and without conv=fsync
#
# Then, over the state of the first size, the latency of 8 writers
# (value_set on random keys): once alone, once while another session takes
# snapshots back to back.  Records "snap", "snap_size", "snap_dd",
# "snap_cmd" and "lat" lines for bench/lib/report.pl.
#
# The timed snapshots run at full speed (state_backend.snapshot_cpu_percent
# = 100, by ALTER SYSTEM); the writers' latency is measured with the
# server's setting (the default, unless BENCH_SERVER_CONF sets it).

SNAP_DIR=$WORK/snap
LAT_DIR=$WORK/lat
mkdir -p "$SNAP_DIR" "$LAT_DIR"
[ "$(id -u)" -eq 0 ] && chown postgres: "$SNAP_DIR" "$LAT_DIR"
SNAP_BACKEND=${HEAP_BACKENDS[0]}
LAT_CLIENTS=8
LAT_THREADS=2
# At least 2 s, so that slow connection starts are not counted (smoke has none).
LAT_WARMUP=$((WARMUP_N > 2 ? WARMUP_N : 2))

# A snapshot holds every database's states: the earlier cases' states go
# first, so that the snapshots hold the measured state only.
n_dropped=$(sql1 "SELECT count(*) FROM (SELECT state.drop_state(name) FROM state.states) d")
[ "$n_dropped" -gt 0 ] &&
	note "snapshot cases: the $n_dropped states of the earlier cases were dropped first (a snapshot holds every database's states)"

meta snap_backend "$SNAP_BACKEND"
meta snap_sizes "$SNAP_SIZES"
meta snap_reps "$SNAP_REPS"
meta lat_seconds "$LAT_SECS"
meta lat_warmup "$LAT_WARMUP"
meta lat_clients "$LAT_CLIENTS"
meta ncpu "$(nproc)"
raw snap_cmd copy_to "COPY snap_t TO '<tmp>/snap/copy-N.bin' (FORMAT binary)"
raw snap_cmd copy_to_fsync "sync <tmp>/snap/copy-N.bin (coreutils: fsync of that file), after the COPY TO"
raw snap_cmd snapshot "SELECT id, state.wait_snapshot(id) FROM (SELECT state.snapshot('<tmp>/snap/native-N-rR', 'native') AS id OFFSET 0) s (and 'canonical')"
raw snap_cmd snapshot_worker "SELECT extract(epoch FROM finished_at - started_at), entries, bytes FROM state.snapshots WHERE id = <id>"
raw snap_cmd copy_from "CREATE UNLOGGED TABLE snap_t_in (k text PRIMARY KEY, v bigint) (untimed); COPY snap_t_in FROM '<tmp>/snap/copy-N.bin' (FORMAT binary)"
raw snap_cmd restore "SELECT state.restore('<tmp>/snap/native-N-rR') (and canonical-N-rR)"
raw snap_cmd dd "dd if=/dev/zero of=<tmp>/snap/dd.bin bs=1M count=<MB> conv=fsync, and the same without conv=fsync"
raw snap_cmd load "state: SELECT count(state.value_set('snap', i::text, i::bigint)) FROM generate_series(a, b) i, in batches of 1000000; table: INSERT INTO snap_t SELECT i::text, i FROM generate_series(1, N) i, then ALTER TABLE snap_t ADD PRIMARY KEY (k); VACUUM (ANALYZE) snap_t"

# timed_sql SQL: runs one statement with psql's \timing; prints
# "ms<TAB>first row of its output".  Fails if the statement fails.
timed_sql() {
	local out
	out=$(sql bench 2>>"$WORK/out/snapshot.log" <<EOF
\timing on
$1
EOF
	) || { tail -n 5 "$WORK/out/snapshot.log" >&2; return 1; }
	awk '/^Time: / { ms = $2; next } row == "" && NF { row = $0 } END { if (ms == "") exit 1; printf "%s\t%s\n", ms, row }' <<<"$out"
}

now_ns() { date +%s%N; }
snap_fail() { FAILED=$((FAILED + 1)); printf 'bench: snapshot case %s FAILED\n' "$*" >&2; }

# snap_step N STEP SECONDS BYTES ENTRIES [DIRBYTES]: one timed figure of
# repetition SNAP_REP.
snap_step() {
	raw snap "$1" "$2" "$3" "$4" "$5" "${6:-}" "$SNAP_REP"
	printf '   %-26s %9s entries %9.3f s %12s bytes  rep %s\n' "$2" "$1" "$3" "$4" "$SNAP_REP" >&2
}

# snap_memory_ok N: whether the server and the machine hold the case of N
# entries; prints the reason when they do not.  A restore loads the
# snapshot beside the current state before replacing it, so the area must
# hold two copies.  Bytes per entry: twice what state.states counts for the
# last size measured (pages touched and segments were 1.45x and 1.6x of it
# in the memory figure), 64 before any was measured.
SNAP_BPE=64
SNAP_REP=1
snap_memory_ok() {
	local n=$1 limit avail need ram
	limit=$(sql1 "SELECT setting::bigint * 1024 FROM pg_settings WHERE name = 'state_backend.memory_limit'")
	avail=$(awk '/^MemAvailable:/ { printf "%.0f\n", $2 * 1024 }' /proc/meminfo)
	need=$((2 * n * SNAP_BPE))
	# RAM: the state twice, the table and its copy (about 90 bytes per row
	# each, with the index), the COPY file and two snapshots in the page
	# cache (about 30 bytes per entry each), and 1 GB to spare.
	ram=$((need + n * 270 + 1024 * 1024 * 1024))
	if [ "$need" -gt "$limit" ]; then
		printf 'needs about %d MB of state memory (two copies during a restore, %d bytes per entry), state_backend.memory_limit is %d MB' \
			$((need / 1048576)) "$SNAP_BPE" $((limit / 1048576))
		return 1
	fi
	if [ -n "$avail" ] && [ "$ram" -gt "$avail" ]; then
		printf 'needs about %d MB of RAM, %d MB available' $((ram / 1048576)) $((avail / 1048576))
		return 1
	fi
	return 0
}

# snap_load N: the state and the table, loaded by two sessions at once.
snap_load() {
	local n=$1 a pid_s pid_t
	{
		echo "SELECT state.create_state('snap', 'value', key_type => 'text', value_type => 'bigint', backend => '$SNAP_BACKEND');"
		for ((a = 1; a <= n; a += 1000000)); do
			echo "SELECT count(state.value_set('snap', i::text, i::bigint)) FROM generate_series($a, $((a + 999999 < n ? a + 999999 : n))) i;"
		done
	} | sql bench >"$WORK/out/snap-load-state-$n.log" 2>&1 &
	pid_s=$!
	sql bench >"$WORK/out/snap-load-table-$n.log" 2>&1 <<EOF &
CREATE UNLOGGED TABLE snap_t (k text, v bigint);
INSERT INTO snap_t SELECT i::text, i FROM generate_series(1, $n) i;
SET maintenance_work_mem = '1GB';
ALTER TABLE snap_t ADD PRIMARY KEY (k);
VACUUM (ANALYZE) snap_t;
EOF
	pid_t=$!
	wait "$pid_s" || { cat "$WORK/out/snap-load-state-$n.log" >&2; wait "$pid_t" || true; return 1; }
	wait "$pid_t" || { cat "$WORK/out/snap-load-table-$n.log" >&2; return 1; }
	# The table is read once (untimed), as the state is in memory.
	sql1 "SELECT count(*) FROM snap_t" >/dev/null
}

# snap_take N FORMAT: one snapshot, timed from the call to wait_snapshot
# returning; then the worker's own figures.  Sets SNAP_PATH to its path.
snap_take() {
	local n=$1 fmt=$2 path=$SNAP_DIR/$2-$1-r$SNAP_REP r ms row id status secs entries bytes dirbytes
	sync
	r=$(timed_sql "SELECT id, state.wait_snapshot(id) FROM (SELECT state.snapshot('$path', '$fmt') AS id OFFSET 0) s;") ||
		{ snap_fail "$fmt snapshot of $n entries"; return 1; }
	IFS=$'\t' read -r ms row <<<"$r"
	IFS='|' read -r id status <<<"$row"
	if [ "$status" != completed ]; then snap_fail "$fmt snapshot of $n entries: $status"; return 1; fi
	IFS='|' read -r secs entries bytes < <(sql1 "SELECT extract(epoch FROM finished_at - started_at), entries, bytes FROM state.snapshots WHERE id = $id")
	dirbytes=$(du -sb "$path" | cut -f1)
	[ "$entries" = "$n" ] || note "snapshot of $n entries ($fmt) holds $entries entries"
	snap_step "$n" "snapshot_$fmt" "$(awk -v ms="$ms" 'BEGIN { printf "%.4f", ms / 1000 }')" "$bytes" "$entries" "$dirbytes"
	snap_step "$n" "snapshot_${fmt}_worker" "$secs" "$bytes" "$entries" "$dirbytes"
	SNAP_PATH=$path
}

# snap_restore N FORMAT PATH: state.restore of one snapshot, timed.
snap_restore() {
	local n=$1 fmt=$2 path=$3 r ms row dirbytes
	sync
	r=$(timed_sql "SELECT state.restore('$path');") || { snap_fail "restore of the $fmt snapshot of $n entries"; return 1; }
	IFS=$'\t' read -r ms row <<<"$r"
	[ "$row" = "$n" ] || { snap_fail "restore of the $fmt snapshot of $n entries restored $row"; return 1; }
	dirbytes=$(du -sb "$path" | cut -f1)
	snap_step "$n" "restore_$fmt" "$(awk -v ms="$ms" 'BEGIN { printf "%.4f", ms / 1000 }')" "$dirbytes" "$row" "$dirbytes"
}

# snap_dd N MB: the disk's sequential write speed, in the snapshots' file
# system, with conv=fsync (durable, as a snapshot is) and without (as COPY
# TO writes: into the page cache).
snap_dd() {
	local n=$1 mb=$2 mode out bytes secs conv
	for mode in fsync nofsync; do
		conv=()
		[ "$mode" = fsync ] && conv=(conv=fsync)
		sync
		out=$(as_pg dd if=/dev/zero of="$SNAP_DIR/dd.bin" bs=1M count="$mb" "${conv[@]}" 2>&1) ||
			{ printf '%s\n' "$out" >&2; snap_fail "dd ($mode)"; rm -f "$SNAP_DIR/dd.bin"; return 1; }
		rm -f "$SNAP_DIR/dd.bin"
		# 268435456 bytes (268 MB, 256 MiB) copied, 0.329138 s, 816 MB/s
		read -r bytes secs < <(awk '/ bytes .* copied, / { for (i = 1; i <= NF; i++) if ($i == "s,") s = $(i - 1); print $1, s }' <<<"$out")
		raw snap_dd "$n" "$mode" "$bytes" "$secs"
		printf '   %-26s %9s MB    %9.3f s %10.0f MB/s\n' "dd $mode" "$mb" "$secs" "$(awk -v b="$bytes" -v s="$secs" 'BEGIN { print (s > 0 ? b / s / 1e6 : 0) }')" >&2
	done
	sync
}

# snap_case N: every timed step for N entries, SNAP_REPS times over (each
# repetition runs every step once, in order; the report keeps each step's
# fastest), then the disk's speed.
snap_case() {
	local n=$1 file=$SNAP_DIR/copy-$1.bin r ms t0 t1 bytes native canonical mb=0
	log "snapshot cases: $n entries (state $SNAP_BACKEND and unlogged table), $SNAP_REPS repetition(s)"
	snap_load "$n" || { snap_fail "loading $n entries"; return 1; }
	# shellcheck disable=SC2046  # two and two figures, one field each
	raw snap_size "$n" $(sql1 "SELECT entries, bytes FROM state.states WHERE name = 'snap'" | tr '|' ' ') \
		$(sql1 "SELECT pg_table_size('snap_t'), pg_indexes_size('snap_t')" | tr '|' ' ')
	SNAP_BPE=$(sql1 "SELECT greatest(64, ceil(2.0 * bytes / greatest(entries, 1)))::int FROM state.states WHERE name = 'snap'")

	for ((SNAP_REP = 1; SNAP_REP <= SNAP_REPS; SNAP_REP++)); do
		# COPY TO, then the fsync that COPY does not do.
		rm -f "$file"
		sync
		r=$(timed_sql "COPY snap_t TO '$file' (FORMAT binary);") || { snap_fail "COPY TO of $n rows"; return 1; }
		ms=${r%%$'\t'*}
		t0=$(now_ns)
		as_pg sync "$file"
		t1=$(now_ns)
		bytes=$(stat -c %s "$file")
		snap_step "$n" copy_to "$(awk -v ms="$ms" 'BEGIN { printf "%.4f", ms / 1000 }')" "$bytes" "$n"
		snap_step "$n" copy_to_fsync "$(awk -v ms="$ms" -v ns=$((t1 - t0)) 'BEGIN { printf "%.4f", ms / 1000 + ns / 1e9 }')" "$bytes" "$n"

		snap_take "$n" native || return 1
		native=$SNAP_PATH
		snap_take "$n" canonical || return 1
		canonical=$SNAP_PATH

		sql1 "CREATE UNLOGGED TABLE snap_t_in (k text PRIMARY KEY, v bigint)"
		sync
		r=$(timed_sql "COPY snap_t_in FROM '$file' (FORMAT binary);") || { snap_fail "COPY FROM of $n rows"; return 1; }
		ms=${r%%$'\t'*}
		snap_step "$n" copy_from "$(awk -v ms="$ms" 'BEGIN { printf "%.4f", ms / 1000 }')" "$bytes" "$n"
		sql1 "DROP TABLE snap_t_in"

		snap_restore "$n" native "$native" || return 1
		snap_restore "$n" canonical "$canonical" || return 1

		[ "$mb" -gt 0 ] || mb=$(( ($(du -sb "$native" | cut -f1) + 1048575) / 1048576 ))
		rm -rf "$native" "$canonical" "$file"
	done
	[ "$mb" -ge "$DD_MIN_MB" ] || mb=$DD_MIN_MB
	snap_dd "$n" "$mb" || return 1
}

# ------------------------------------------------------------ writers' latency
# lat_run LABEL LOOP: 8 clients of value_set on random keys of the state for
# LAT_WARMUP + LAT_SECS seconds, logging every transaction (pgbench -l); with
# LOOP = 1, another session takes snapshots back to back from the end of the
# warm-up until pgbench ends, each to a fresh path deleted afterwards.
# Transactions that end within the LAT_SECS seconds after the warm-up count.
lat_run() {
	local label=$1 loop=$2 n=$3 script=$WORK/scripts/lat-value_set.pgbench prefix=$LAT_DIR/$1
	local out=$WORK/out/lat-$1.txt dur=$((LAT_WARMUP + LAT_SECS)) start pid rc=0 count=0 figs whole nfail snaps=""
	local ntx p50 p99 p999 max loop_pid
	printf '\\set k random(1, %s)\n\\set v random(1, 1000000000)\nSELECT state.value_set('"'snap'"', :k, :v);\n' "$n" >"$script"
	raw lat_script "$(tr '\n' ' ' <"$script")"
	raw lat_cmd "pgbench -n -M $PROTOCOL -c $LAT_CLIENTS -j $LAT_THREADS -T $dur -l --log-prefix=<tmp>/lat/$label -f value_set.pgbench"
	start=$(date +%s.%N)
	as_pg timeout -k 10 $((dur + 300)) "$PGBIN/pgbench" -n -M "$PROTOCOL" -h "$WORK" -p "$PORT" -U postgres \
		-c "$LAT_CLIENTS" -j "$LAT_THREADS" -T "$dur" -l --log-prefix="$prefix" -f "$script" bench >"$out" 2>&1 &
	pid=$!
	if [ "$loop" = 1 ]; then
		rm -f "$LAT_DIR/stop"
		snap_loop "$LAT_DIR/stop" $((dur + 120)) >"$WORK/out/snapshot-loop.log" 2>&1 &
		loop_pid=$!
	fi
	wait "$pid" || rc=$?
	if [ "$loop" = 1 ]; then
		touch "$LAT_DIR/stop"
		if wait "$loop_pid"; then
			count=$(grep -c ' completed$' "$WORK/out/snapshot-loop.log" || true)
		else
			tail -n 5 "$WORK/out/snapshot-loop.log" >&2
			snap_fail "snapshot loop during the writers' run"
			count=ERR
		fi
		# The view keeps the last 64 snapshots: the worker's durations of those.
		snaps=$(sql1 "SELECT count(*), round(avg(extract(epoch FROM finished_at - started_at)) * 1000), round(max(extract(epoch FROM finished_at - started_at)) * 1000)
			FROM state.snapshots WHERE path LIKE '$SNAP_DIR/loop-%' AND status = 'completed'" | tr '|' '\t')
		rm -rf "$SNAP_DIR"/loop-*
	fi
	whole=$(awk '/^tps = / { print $3; exit }' "$out")
	nfail=$(awk -F': ' '/^number of failed transactions/ { print $2 + 0; exit }' "$out")
	figs=$(perl "$LIB/latency.pl" "$(awk -v s="$start" -v w="$LAT_WARMUP" 'BEGIN { printf "%.6f", s + w }')" \
		"$(awk -v s="$start" -v d="$dur" 'BEGIN { printf "%.6f", s + d }')" "$prefix".*) || figs=""
	if [ "$rc" -ne 0 ] || [ -z "$figs" ] || [ "${nfail:-0}" -ne 0 ]; then
		snap_fail "writers' latency ($label): pgbench exit $rc"
		grep -vE '^(pgbench \(|transaction type|scaling factor|query mode|number of (clients|threads)|maximum number|duration)' "$out" | head -n 20 >&2
		raw lat "$label" ERR
		return 0
	fi
	# figs: transactions p50 p99 p99.9 max mean (µs)
	# shellcheck disable=SC2086  # figs and snaps are lists of figures
	raw lat "$label" $figs "$LAT_SECS" "${nfail:-0}" "$whole" "$count" ${snaps:+$snaps}
	read -r ntx p50 p99 p999 max _ <<<"$figs"
	printf '   writers %-10s %8.0f tps  p50 %6d us  p99 %6d us  p99.9 %6d us  max %7d us%s\n' "$label" \
		"$(awk -v n="$ntx" -v s="$LAT_SECS" 'BEGIN { print n / s }')" "$p50" "$p99" "$p999" "$max" \
		"$([ "$loop" = 1 ] && echo ", $count snapshots")" >&2
	rm -f "$prefix".*
}

# snap_loop STOPFILE SECONDS: one psql session takes snapshots back to back,
# after the warm-up, until STOPFILE exists (or SECONDS have passed, should
# the harness fail to create it).  The statement that waits for a snapshot
# also looks for STOPFILE; then psql removes the snapshot's directory, in
# the background (\! rm -rf ... &), and starts the next.  Its script comes
# from an endless generator that blocks on the pipe while psql works, and
# dies of SIGPIPE when psql quits.  psql prints one line per snapshot.
snap_loop() {
	local stop=$1 deadline=$(($(date +%s) + $2))
	{
		awk -v dir="$SNAP_DIR" -v stop="$stop" -v warmup="$LAT_WARMUP" -v deadline="$deadline" 'BEGIN {
			printf "SELECT pg_sleep(%s) \\g /dev/null\n", warmup
			for (i = 1; ; i++) {
				printf "SELECT %d AS i, state.wait_snapshot(state.snapshot(\047%s/loop-%d\047)) AS status,", i, dir, i
				printf " (pg_stat_file(\047%s\047, true)).size IS NOT NULL OR clock_timestamp() > to_timestamp(%d) AS stop \\gset\n", stop, deadline
				printf "\\echo :i :status\n\\! rm -rf %s/loop-%d &\n\\if :stop\n\\q\n\\endif\n", dir, i
			}
		}' 2>/dev/null || true
	} | sql bench
}

# ------------------------------------------------------------ the cases
t_snap=$(date +%s)
first=1
for n in $SNAP_SIZES; do
	if [ "$n" -ge 10000000 ] && [ "${BENCH_SNAPSHOT_10M:-1}" = 0 ]; then
		raw snap_skip "$n" "BENCH_SNAPSHOT_10M=0"
		note "snapshot case of $n entries skipped: BENCH_SNAPSHOT_10M=0"
		continue
	fi
	if ! why=$(snap_memory_ok "$n"); then
		raw snap_skip "$n" "$why"
		note "snapshot case of $n entries skipped: it $why"
		continue
	fi
	snap_pacing 100
	if snap_case "$n" && [ "$first" = 1 ]; then
		snap_pacing RESET
		meta lat_snapshot_cpu_percent "$(sql1 "SHOW state_backend.snapshot_cpu_percent")"
		log "writers' latency: $LAT_CLIENTS clients of value_set over $n keys, ${LAT_SECS}s after a warm-up of ${LAT_WARMUP}s, without and with snapshots"
		meta lat_keys "$n"
		lat_run idle 0 "$n"
		lat_run snapshots 1 "$n"
	fi
	first=0
	sql bench >/dev/null 2>&1 <<EOF || true
SELECT state.drop_state('snap', if_exists => true);
DROP TABLE IF EXISTS snap_t, snap_t_in;
EOF
	rm -rf "${SNAP_DIR:?}"/*
done
snap_pacing RESET
meta snap_seconds "$(($(date +%s) - t_snap))"
