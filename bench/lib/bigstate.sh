# shellcheck shell=bash
# bench/lib/bigstate.sh: the bigstate cases, sourced by bench/lib/bench.sh
# (its server, its helpers sql, sql1, as_pg, raw, meta, note, log, run_case,
# checkpoint_now and its FAILED count) after the other groups.
#
# Big state at speed: the backends that hold a large state (memory where
# state_backend.memory_limit holds it, lmdb when contrib/lmdb is installed,
# rocksdb) beside an unlogged table with a primary key doing the same, at
# each size of BS_SIZES entries per kind, in one run, on one server, with
# the extension's default cache settings.  At each size:
#
#   load: each kind of each target filled in statements of at most
#     1,000,000 entries, timed (the table: INSERT ... SELECT into the empty
#     table with its indexes; VACUUM ANALYZE afterwards, untimed)
#   per statement (pgbench -M prepared, -c each of BS_CLIENTS): random
#     reads of each kind on each target at every client count, then random
#     writes likewise (list_add makes lists longer: the reads go first, on
#     the data as loaded); SELECT 1 and the no-op before the reads and after
#     the writes of each client count
#   snapshot: every state dropped; each backend's states loaded again
#     alone, a native snapshot to a path (snapshot() to wait_snapshot(),
#     at full speed: state_backend.snapshot_cpu_percent = 100),
#     its bytes, dd of as many MB with conv=fsync into the same directory,
#     then the states dropped and restored from the snapshot, timed
#
# Kinds, N entries each: value (N bigint keys -> bigint; table (k bigint
# PRIMARY KEY, v bigint)), map (N / BS_MK keys of BS_MK entries; table
# PRIMARY KEY (k, mk)), list (N / BS_LE keys of BS_LE elements; table
# (k bigint, v bigint) with an index on k, a row per element).
#
# Records "bs_*" lines for bench/lib/report_bigstate.pl.

BS_MK=4							# map entries per key
BS_LE=4							# list elements per key
BS_CHUNK=1000000				# entries per load statement
BS_READS="value_get map_get list_get"
BS_WRITES="value_set map_put list_add"
bs_fail() { FAILED=$((FAILED + 1)); printf 'bench: bigstate case %s FAILED\n' "$*" >&2; }
BS_LOG=$WORK/out/bigstate.log
BS_ERR=$WORK/out/bigstate.err

BS_BACKENDS=()
for b in memory lmdb rocksdb; do
	case "$b" in
		lmdb) [ "$LMDB" = 1 ] || { note "bigstate: lmdb skipped: state_backend_lmdb (contrib/lmdb) is not installed"; continue; } ;;
		rocksdb) [ "$ROCKSDB" = 1 ] || { note "bigstate: rocksdb skipped: no rocksdb state can be created"; continue; } ;;
	esac
	r=$(sql1 "SELECT bench.probe_backend('$b')")
	if [ "$r" = ok ]; then BS_BACKENDS+=("$b"); else note "bigstate: $b skipped: creating a state fails with $r"; fi
done
meta bs_sizes "$BS_SIZES"
meta bs_parts "$BS_PARTS"
meta bs_clients "$BS_CLIENTS"
meta bs_backends "${BS_BACKENDS[*]}"
meta bs_shape "map: $BS_MK entries per key; list: $BS_LE elements per key"
meta bs_settings "$(sql1 "SELECT string_agg(name || ' = ' || current_setting(name) || CASE WHEN setting = boot_val THEN ' (default)' ELSE '' END, '; ' ORDER BY name)
	FROM pg_settings WHERE name IN ('state_backend.memory_limit', 'state_backend.rocksdb_cache_size',
		'state_backend.rocksdb_shared_cache_size', 'state_backend.rocksdb_write_buffer_size', 'state_backend.rocksdb_compression',
		'state_backend.rocksdb_sync', 'state_backend_lmdb.map_size', 'shared_buffers')")"

# bs_timed SQL: statements with psql's \timing; prints "ms<TAB>first row"
# (ms summed over the statements).  Fails if one fails; its error (with the
# SQLSTATE) is in BS_ERR.
bs_timed() {
	local out
	out=$(printf '\\set VERBOSITY verbose\n\\timing on\n%s\n' "$1" | sql bench 2>"$BS_ERR") ||
		{ cat "$BS_ERR" >>"$BS_LOG"; return 1; }
	awk '/^Time: / { ms += $2; n++; next } row == "" && NF { row = $0 } END { if (!n) exit 1; printf "%.3f\t%s\n", ms, row }' <<<"$out"
}

# bs_create TARGET: the three states of a backend, or the three tables.
bs_create() {
	case "$1" in
		table) sql bench >>"$BS_LOG" 2>&1 <<SQL ;;
CREATE UNLOGGED TABLE bs_kv (k bigint PRIMARY KEY, v bigint);
CREATE UNLOGGED TABLE bs_map (k bigint, mk bigint, v bigint, PRIMARY KEY (k, mk));
CREATE UNLOGGED TABLE bs_list (k bigint, v bigint);
CREATE INDEX bs_list_k ON bs_list (k);
SQL
		*) sql bench >>"$BS_LOG" 2>&1 <<SQL ;;
SELECT state.create_state('bs_v_$1', 'value', key_type => 'bigint', value_type => 'bigint', backend => '$1');
SELECT state.create_state('bs_m_$1', 'map', key_type => 'bigint', map_key_type => 'bigint', value_type => 'bigint', backend => '$1');
SELECT state.create_state('bs_l_$1', 'list', key_type => 'bigint', value_type => 'bigint', backend => '$1');
SQL
	esac
}

# bs_load_sql TARGET KIND N: the statements that fill one kind with N
# entries: value i -> i; map i: map keys 1 .. BS_MK -> i; list i: i, i + 1, ...
bs_load_sql() {
	local t=$1 kind=$2 n=$3 per nkeys a e step
	per=$([ "$kind" = value ] && echo 1 || echo "$BS_MK")
	[ "$kind" = list ] && per=$BS_LE
	nkeys=$((n / per))
	step=$((BS_CHUNK / per))
	for ((a = 1; a <= nkeys; a += step)); do
		e=$((a + step - 1 < nkeys ? a + step - 1 : nkeys))
		case "$t:$kind" in
			table:value) echo "INSERT INTO bs_kv SELECT i, i FROM generate_series($a::bigint, $e) i;" ;;
			table:map) echo "INSERT INTO bs_map SELECT k, mk, k FROM generate_series($a::bigint, $e) k, generate_series(1::bigint, $BS_MK) mk;" ;;
			table:list) echo "INSERT INTO bs_list SELECT k, k + e FROM generate_series($a::bigint, $e) k, generate_series(0::bigint, $((BS_LE - 1))) e;" ;;
			*:value) echo "SELECT count(state.value_set('bs_v_$t', i, i)) FROM generate_series($a::bigint, $e) i;" ;;
			*:map) echo "SELECT count(state.map_put_all('bs_m_$t', k, ARRAY(SELECT generate_series(1::bigint, $BS_MK)), array_fill(k, ARRAY[$BS_MK]))) FROM generate_series($a::bigint, $e) k;" ;;
			*:list) echo "SELECT count(state.list_add_all('bs_l_$t', k, ARRAY(SELECT k + e FROM generate_series(0::bigint, $((BS_LE - 1))) e))) FROM generate_series($a::bigint, $e) k;" ;;
		esac
	done
}

# bs_load TARGET N [timed]: create and fill the three kinds; with "timed",
# records a bs_load line per kind.  Fails (status 2 when the memory limit
# was met: SQLSTATE 54000) if a statement fails.
bs_load() {
	local t=$1 n=$2 timed=${3:-} kind r
	bs_create "$t" || return 1
	for kind in value map list; do
		if ! r=$(bs_timed "$(bs_load_sql "$t" "$kind" "$n")"); then
			grep -q 'ERROR: *54000:' "$BS_ERR" && return 2
			tail -n 3 "$BS_ERR" >&2
			return 1
		fi
		if [ -n "$timed" ]; then
			raw bs_load "$n" "$t" "$kind" "${r%%$'\t'*}"
			printf '   load %-8s %-5s %9s entries %9.0f ms\n' "$t" "$kind" "$n" "${r%%$'\t'*}" >&2
		fi
	done
	[ "$t" = table ] && sql1 "VACUUM (ANALYZE) bs_kv, bs_map, bs_list" >/dev/null
	return 0
}

# bs_drop TARGET: its states, or the tables.
bs_drop() {
	case "$1" in
		table) sql1 "DROP TABLE IF EXISTS bs_kv, bs_map, bs_list" >/dev/null ;;
		*) sql1 "SELECT count(state.drop_state(n, if_exists => true)) FROM unnest(ARRAY['bs_v_$1', 'bs_m_$1', 'bs_l_$1']) n" >/dev/null ;;
	esac
}

# bs_bytes TARGET: what the target holds, in bytes (state.states.bytes of
# its states; the tables' pg_total_relation_size).
bs_bytes() {
	case "$1" in
		table) sql1 "SELECT pg_total_relation_size('bs_kv') + pg_total_relation_size('bs_map') + pg_total_relation_size('bs_list')" ;;
		*) sql1 "SELECT coalesce(sum(bytes), 0) FROM state.states WHERE name IN ('bs_v_$1', 'bs_m_$1', 'bs_l_$1')" ;;
	esac
}

# bs_script OP N TARGET: the pgbench script of one case (bench.sh's script()
# hands over to it while SCRIPT_FN names it).  Keys are drawn from all the
# keys of the kind: N, or N / BS_MK, N / BS_LE.
bs_script() {
	local op=$1 n=$2 t=$3 nk
	case "$op" in
		select1) echo "SELECT 1;"; return ;;
		noop) printf '\\set k random(1, %s)\n\\set v random(1, 1000000000)\nSELECT bench.noop(:k, :v);\n' "$n"; return ;;
		value_*) nk=$n ;;
		map_*) nk=$((n / BS_MK)) ;;
		list_*) nk=$((n / BS_LE)) ;;
	esac
	printf '\\set k random(1, %s)\n' "$nk"
	case "$op" in value_set | map_put | list_add) echo '\set v random(1, 1000000000)' ;; esac
	case "$op" in map_*) echo "\\set mk random(1, $BS_MK)" ;; esac
	case "$t:$op" in
		table:value_get) echo "SELECT v FROM bs_kv WHERE k = :k;" ;;
		table:value_set) echo "INSERT INTO bs_kv (k, v) VALUES (:k, :v) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v;" ;;
		table:map_get) echo "SELECT v FROM bs_map WHERE k = :k AND mk = :mk;" ;;
		table:map_put) echo "INSERT INTO bs_map (k, mk, v) VALUES (:k, :mk, :v) ON CONFLICT (k, mk) DO UPDATE SET v = EXCLUDED.v;" ;;
		table:list_get) echo "SELECT array_agg(v) FROM bs_list WHERE k = :k;" ;;
		table:list_add) echo "INSERT INTO bs_list (k, v) VALUES (:k, :v);" ;;
		*:value_get) echo "SELECT state.value_get('bs_v_$t', CAST(:k AS bigint), 0::bigint);" ;;
		*:value_set) echo "SELECT state.value_set('bs_v_$t', CAST(:k AS bigint), CAST(:v AS bigint));" ;;
		*:map_get) echo "SELECT state.map_get('bs_m_$t', CAST(:k AS bigint), CAST(:mk AS bigint), 0::bigint);" ;;
		*:map_put) echo "SELECT state.map_put('bs_m_$t', CAST(:k AS bigint), CAST(:mk AS bigint), CAST(:v AS bigint));" ;;
		*:list_get) echo "SELECT state.list_get('bs_l_$t', CAST(:k AS bigint), '{}'::bigint[]);" ;;
		*:list_add) echo "SELECT state.list_add('bs_l_$t', CAST(:k AS bigint), CAST(:v AS bigint));" ;;
	esac
}

# bs_cases N TARGET...: per statement at every client count: the floors,
# the reads; then the writes and the floors again ("bs_tps" lines).
bs_cases() {
	local n=$1 round c op t saved=$NKEYS
	shift
	NKEYS=$n
	SCRIPT_FN=bs_script
	STATE_PREFIX=bs_
	CASE_KIND=bs_tps
	CASE_SCRIPT_KIND=bs_script
	for round in $(seq 1 "$ROUNDS"); do
		for c in $BS_CLIENTS; do
			run_case select1 "$n" floor "$c" "$round"
			run_case noop "$n" floor "$c" "$round"
			for op in $BS_READS; do for t in "$@"; do run_case "$op" "$n" "$t" "$c" "$round"; done; done
		done
		for c in $BS_CLIENTS; do
			for op in $BS_WRITES; do for t in "$@"; do run_case "$op" "$n" "$t" "$c" "$round"; done; done
			run_case select1 "$n" floor "$c" "$round-end"
			run_case noop "$n" floor "$c" "$round-end"
		done
	done
	NKEYS=$saved
	# shellcheck disable=SC2034  # bench.sh's run_case and script read them
	SCRIPT_FN="" STATE_PREFIX="" CASE_KIND=tps CASE_SCRIPT_KIND=script
}

# bs_snapshot N B: B's states loaded alone, a native snapshot of them, dd of
# as many MB beside it, a restore.  Records a "bs_snap" line: N backend
# snapshot-ms bytes dd-ms dd-bytes restore-ms entries.
bs_snapshot() {
	local n=$1 b=$2 path dd_file=$WORK/bs-dd r s_ms r_ms bytes mb dd_out dd_ms before after
	path=$WORK/bs-snap-$b
	rm -rf "$path" "$dd_file"
	bs_load "$b" "$n" || { bs_fail "loading $b ($n) for its snapshot"; bs_drop "$b"; return 1; }
	before=$(sql1 "SELECT sum(entries) FROM state.states WHERE name LIKE 'bs\\_%'")
	sync
	if ! r=$(bs_timed "SELECT state.wait_snapshot(state.snapshot('$path'));") || [ "${r#*$'\t'}" != completed ]; then
		tail -n 3 "$BS_ERR" >&2
		bs_fail "snapshot of $b ($n): ${r#*$'\t'}"
		bs_drop "$b"
		return 1
	fi
	s_ms=${r%%$'\t'*}
	bytes=$(du -sb "$path" | cut -f1)
	mb=$(((bytes + 1048575) / 1048576))
	sync
	# dd's own time ("copied, S s,"), its fsync included, as psql's \timing
	# of the snapshot leaves out the start of a process.
	dd_out=$(as_pg dd if=/dev/zero of="$dd_file" bs=1M count="$mb" conv=fsync 2>&1) || { bs_fail "dd of $mb MB: $dd_out"; return 1; }
	dd_ms=$(awk '/ copied, / { for (i = 1; i < NF; i++) if ($i == "copied,") { printf "%.3f", $(i + 1) * 1000; exit } }' <<<"$dd_out")
	[ -n "$dd_ms" ] || { bs_fail "dd of $mb MB printed no time: $dd_out"; return 1; }
	rm -f "$dd_file"
	bs_drop "$b"
	if ! r=$(bs_timed "SELECT state.restore('$path');"); then
		tail -n 3 "$BS_ERR" >&2
		bs_fail "restore of $b ($n)"
		rm -rf "$path"
		return 1
	fi
	r_ms=${r%%$'\t'*}
	after=$(sql1 "SELECT sum(entries) FROM state.states WHERE name LIKE 'bs\\_%'")
	[ "$after" = "$before" ] || bs_fail "restore of $b ($n) holds $after entries, not $before"
	raw bs_snap "$n" "$b" "$s_ms" "$bytes" "$dd_ms" "$((mb * 1048576))" "$r_ms" "$after"
	printf '   %-8s %9s: snapshot %9.0f ms (%s bytes), dd %s MB %9.0f ms, restore %9.0f ms\n' \
		"$b" "$n" "$s_ms" "$bytes" "$mb" "$dd_ms" "$r_ms" >&2
	bs_drop "$b"
	rm -rf "$path"
}

t_bs=$(date +%s)
n_dropped=$(sql1 "SELECT count(*) FROM (SELECT state.drop_state(name) FROM state.states) d")
[ "$n_dropped" -gt 0 ] &&
	note "bigstate: the $n_dropped states of the earlier groups were dropped first (a snapshot holds every state)"
checkpoint_now || bs_fail "a checkpoint once every state was dropped"
for n in $BS_SIZES; do
	t_size=$(date +%s)
	log "bigstate, $n entries per kind: loading the unlogged tables and ${BS_BACKENDS[*]}"
	targets=()
	for t in table "${BS_BACKENDS[@]}"; do
		# The table is only what the statements are measured beside.
		[ "$t" = table ] && [[ " $BS_PARTS " != *" statements "* ]] && continue
		rc=0
		bs_load "$t" "$n" timed || rc=$?
		if [ "$rc" = 0 ]; then
			raw bs_bytes "$n" "$t" "$(bs_bytes "$t")"
			targets+=("$t")
		elif [ "$rc" = 2 ] && [ "$t" = memory ]; then
			note "bigstate: memory skipped at $n entries per kind: state_backend.memory_limit ($(sql1 "SHOW state_backend.memory_limit")) cannot hold the three states (54000)"
			raw bs_skip "$n" memory "memory_limit"
			bs_drop memory
		else
			bs_fail "loading $n entries per kind into $t"
			bs_drop "$t"
		fi
	done
	sql1 "CHECKPOINT" >/dev/null
	if [ ${#targets[@]} -gt 1 ] && [ "${targets[0]}" = table ] && [[ " $BS_PARTS " == *" statements "* ]]; then
		log "bigstate, $n: per statement, ${targets[*]}, clients $BS_CLIENTS, $ROUNDS round(s) of $RUN_LENGTH, -M $PROTOCOL"
		bs_cases "$n" "${targets[@]:1}" table
	fi
	bs_drop table
	[[ " $BS_PARTS " == *" snapshots "* ]] || { for t in "${targets[@]}"; do bs_drop "$t"; done; continue; }
	log "bigstate, $n: native snapshot, dd and restore of each backend alone"
	for t in "${targets[@]}"; do [ "$t" = table ] || bs_drop "$t"; done
	checkpoint_now || bs_fail "a checkpoint once every state was dropped"
	snap_pacing 100
	for t in "${targets[@]}"; do
		[ "$t" = table ] || bs_snapshot "$n" "$t" || true
	done
	snap_pacing RESET
	meta "bs_seconds_$n" "$(($(date +%s) - t_size))"
done
meta bs_seconds "$(($(date +%s) - t_bs))"
