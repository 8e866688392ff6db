# shellcheck shell=bash
# bench/lib/evolve.sh: the evolve cases, sourced by bench/lib/bench.sh (its
# server, its helpers sql, sql1, as_pg, raw, meta, note, log and its FAILED
# count) after the other groups.
#
# State evolution (state.alter_state) beside what a table takes for the
# same change, at each size of EV_SIZES entries, on one value state
# `ev_v` (bigint -> bigint, key i holding i) and an unlogged table
# ev_t (k bigint PRIMARY KEY, v bigint) of the same rows:
#
#   changes alone, each timed (psql \timing of the one statement), each
#   right after its table baseline:
#     backend memory -> rocksdb -> lmdb -> memory (lmdb when contrib/lmdb
#       is installed; rocksdb when a rocksdb state can be created), beside
#       CREATE UNLOGGED TABLE ev_copy AS SELECT k, v FROM ev_t and
#       ALTER TABLE ev_copy ADD PRIMARY KEY (k) (a keyed copy, timed apart)
#     value_type => 'numeric' (the assignment cast), beside ALTER TABLE
#       ev_t ALTER COLUMN v TYPE numeric
#     value_type => 'numeric', value_using => EV_USING_STATE, beside
#       ALTER TABLE ... TYPE numeric USING EV_USING_TABLE (state and table
#       brought back to bigint first, untimed)
#   writers (EV_WRITERS = 1): the same changes again, in the same order,
#     each while EV_CLIENTS pgbench clients (-M PROTOCOL) run value_set on
#     random keys with every transaction logged; before it, the same
#     writers on the state as it is, without a change, for as long as the
#     change took alone.
#
# Records "ev_*" lines for bench/lib/report_evolve.pl.

EV_CHUNK=1000000				# entries per load statement
EV_USING_STATE='value::numeric / 100'
EV_USING_TABLE='v::numeric / 100'
EV_LOG=$WORK/out/evolve.log
EV_ERR=$WORK/out/evolve.err
EV_LAT=$WORK/evolve-lat
mkdir -p "$EV_LAT"
[ "$(id -u)" -eq 0 ] && chown postgres: "$EV_LAT"
# Writers: the warm-up before the change starts (connections made, pages
# touched), and the least seconds of a run without a change.
if [ "$MODE" = smoke ]; then EV_WARMUP=1; else EV_WARMUP=$((WARMUP_N > 2 ? WARMUP_N : 2)); fi
EV_MIN_SECS=$SECS
ev_fail() { FAILED=$((FAILED + 1)); printf 'bench: evolve case %s FAILED\n' "$*" >&2; }

# ev_timed SQL: statements with psql's \timing; prints "ms<TAB>first row"
# (ms summed over the statements).  Fails if one fails; its error (with the
# SQLSTATE) is in EV_ERR and EV_LOG.
ev_timed() {
	local out
	out=$(printf '\\set VERBOSITY verbose\n\\timing on\n%s\n' "$1" | sql bench 2>"$EV_ERR") ||
		{ cat "$EV_ERR" >>"$EV_LOG"; return 1; }
	awk '/^Time: / { ms += $2; n++; next } row == "" && NF { row = $0 } END { if (!n) exit 1; printf "%.3f\t%s\n", ms, row }' <<<"$out"
}

# ev_describe: "backend value_type entries" of ev_v.
ev_describe() {
	sql1 "SELECT backend, value_type, entries FROM state.states WHERE name = 'ev_v'" | tr '|' ' '
}

# ev_check N WHAT BACKEND TYPE: the state holds N entries on BACKEND with
# values of TYPE, or the case WHAT fails.
ev_check() {
	local n=$1 what=$2 want="$3 $4 $1" got
	got=$(ev_describe)
	[ "$got" = "$want" ] || { ev_fail "$what: state.states says '$got', not '$want'"; return 1; }
}

# ev_alter_sql CHANGE: the alter_state call of a change.  CHANGE is
# "backend:B", "type" (numeric by the assignment cast), "using" (numeric by
# EV_USING_STATE) or "back" (bigint again, untimed).
ev_alter_sql() {
	case "$1" in
		backend:*) echo "SELECT state.alter_state('ev_v', backend => '${1#backend:}');" ;;
		type) echo "SELECT state.alter_state('ev_v', value_type => 'numeric');" ;;
		using) echo "SELECT state.alter_state('ev_v', value_type => 'numeric', value_using => '$EV_USING_STATE');" ;;
		back) echo "SELECT state.alter_state('ev_v', value_type => 'bigint');" ;;
	esac
}

# ev_table_sql CHANGE: the table's statements of a change, one a line:
# "label<TAB>statement".
ev_table_sql() {
	case "$1" in
		backend:*)
			printf 'ctas\tCREATE UNLOGGED TABLE ev_copy AS SELECT k, v FROM ev_t;\n'
			printf 'pkey\tALTER TABLE ev_copy ADD PRIMARY KEY (k);\n'
			;;
		type) printf 'alter\tALTER TABLE ev_t ALTER COLUMN v TYPE numeric;\n' ;;
		using) printf 'alter\tALTER TABLE ev_t ALTER COLUMN v TYPE numeric USING %s;\n' "$EV_USING_TABLE" ;;
	esac
}

# ev_load N: the table (untimed) and the state on memory (timed: an
# "ev_load" line).
ev_load() {
	local n=$1 a e sql_t="" sql_s="" r
	for ((a = 1; a <= n; a += EV_CHUNK)); do
		e=$((a + EV_CHUNK - 1 < n ? a + EV_CHUNK - 1 : n))
		sql_t+="INSERT INTO ev_t SELECT i, i FROM generate_series($a::bigint, $e) i;"$'\n'
		sql_s+="SELECT count(state.value_set('ev_v', i, i)) FROM generate_series($a::bigint, $e) i;"$'\n'
	done
	sql bench >>"$EV_LOG" 2>&1 <<SQL || return 1
CREATE UNLOGGED TABLE ev_t (k bigint PRIMARY KEY, v bigint);
$sql_t
VACUUM (ANALYZE) ev_t;
SELECT state.create_state('ev_v', 'value', key_type => 'bigint', value_type => 'bigint', backend => 'memory');
SQL
	r=$(ev_timed "$sql_s") || { tail -n 3 "$EV_ERR" >&2; return 1; }
	raw ev_load "$n" "${r%%$'\t'*}"
	printf '   load memory %9s entries %9.0f ms\n' "$n" "${r%%$'\t'*}" >&2
	sql1 "CHECKPOINT" >/dev/null
}

# ev_change N CHANGE FROM TO TYPE: one change alone: the table's baseline,
# then the state's change; records "ev_table" and "ev_change" lines and
# sets EV_MS[CHANGE] (the change's milliseconds).  FROM and TO name the
# backends, TYPE the value type the state has afterwards.
declare -A EV_MS=()
ev_change() {
	local n=$1 c=$2 from=$3 to=$4 type=$5 label stmt r ms entries
	while IFS=$'\t' read -r label stmt; do
		if ! r=$(ev_timed "$stmt"); then
			tail -n 3 "$EV_ERR" >&2
			ev_fail "table baseline of $c ($n): $stmt"
			continue
		fi
		raw ev_table "$n" "$c" "$from" "$to" "$label" "${r%%$'\t'*}"
	done < <(ev_table_sql "$c")
	sql1 "DROP TABLE IF EXISTS ev_copy" >/dev/null 2>>"$EV_LOG"
	if ! r=$(ev_timed "$(ev_alter_sql "$c")"); then
		tail -n 3 "$EV_ERR" >&2
		ev_fail "alter_state $c ($n)"
		raw ev_change "$n" "$c" "$from" "$to" ERR
		return 1
	fi
	ms=${r%%$'\t'*} entries=${r#*$'\t'}
	[ "$entries" = "$n" ] || ev_fail "alter_state $c ($n) returned $entries, not $n"
	ev_check "$n" "alter_state $c" "$to" "$type" || return 1
	EV_MS[$c]=$ms
	raw ev_change "$n" "$c" "$from" "$to" "$ms" "$entries"
	printf '   %-16s %-8s -> %-8s %9s entries %9.0f ms\n' "$c" "$from" "$to" "$n" "$ms" >&2
}

# ev_writers N CHANGE FROM TO TYPE WITH: EV_CLIENTS writers of value_set on
# random keys, every transaction logged.  WITH = 0: for EV_WARMUP and then
# as many seconds as the change took alone (at least EV_MIN_SECS); the
# transactions that ran during those seconds count.  WITH = 1: the change
# starts after EV_WARMUP, from a psql session that reads the clock before
# and after it; a second after it returns, the writers' connections are
# terminated (pg_terminate_backend of their application_name): pgbench's
# threads then end and close their logs, and its -T is only a bound.  The
# transactions that ran during any part of the change count (those that
# waited through it included).  A writer that stopped before the change
# ended (its last transaction ended before) failed.  Records an
# "ev_writers" line: n change label transactions p50 p99 p99.9 max
# mean(us) seconds failed change-seconds covered.
ev_writers() {
	local n=$1 c=$2 from=$3 to=$4 type=$5 with=$6 label win dur start pid rc=0 t0="" t1="" r figs entries
	local ntx p99 max out script=$WORK/scripts/ev-writers.pgbench prefix from_t to_t secs covered=1 nfail csecs=""
	local app stopped early
	label=$([ "$with" = 1 ] && echo change || echo none)
	prefix=$EV_LAT/$label
	app=bench_evolve_$label
	out=$WORK/out/ev-writers-$n-${c//:/-}-$label.txt
	win=$(awk -v ms="${EV_MS[$c]:-0}" -v m="$EV_MIN_SECS" 'BEGIN { s = int(ms / 1000 + 0.999); print (s > m ? s : m) }')
	dur=$((EV_WARMUP + win))
	[ "$with" = 1 ] && dur=$((EV_WARMUP + 20 * win + 60))
	printf '\\set k random(1, %d)\n\\set v random(1, 1000000000)\nSELECT state.value_set('"'ev_v'"', CAST(:k AS bigint), CAST(:v AS bigint));\n' "$n" >"$script"
	raw ev_script "$(tr '\n' ' ' <"$script")"
	rm -f "$prefix".*
	start=$(date +%s.%N)
	as_pg env PGAPPNAME="$app" timeout -k 10 $((dur + 600)) "$PGBIN/pgbench" -n -M "$PROTOCOL" -h "$WORK" -p "$PORT" -U postgres \
		-c "$EV_CLIENTS" -j "$((EV_CLIENTS < THREADS_MAX ? EV_CLIENTS : THREADS_MAX))" -T "$dur" \
		-l --log-prefix="$prefix" -f "$script" bench >"$out" 2>&1 &
	pid=$!
	if [ "$with" = 1 ]; then
		sleep "$EV_WARMUP"
		if r=$(printf '\\set VERBOSITY verbose\nSELECT extract(epoch FROM clock_timestamp());\n%s\nSELECT extract(epoch FROM clock_timestamp());\n' \
			"$(ev_alter_sql "$c")" | sql bench 2>"$EV_ERR"); then
			{ read -r t0; read -r entries; read -r t1; } <<<"$r"
			[ "$entries" = "$n" ] || ev_fail "alter_state $c ($n) with writers returned $entries, not $n"
		else
			cat "$EV_ERR" >>"$EV_LOG"
			tail -n 3 "$EV_ERR" >&2
			ev_fail "alter_state $c ($n) with writers"
		fi
		sleep 1
		stopped=$(sql1 "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = '$app'")
	fi
	wait "$pid" || rc=$?
	nfail=$(awk -F': ' '/^number of failed transactions/ { print $2 + 0; exit }' "$out")
	if [ "$with" = 1 ]; then
		if [ -z "$t1" ]; then raw ev_writers "$n" "$c" "$label" ERR; rm -f "$prefix".*; return 1; fi
		# pgbench ends with status 2 when its clients' connections were
		# terminated ("Run was aborted"); what tells a failure then is a
		# writer that stopped before the change ended, or one missing.
		early=$(awk -v t1="$t1" -v want="$EV_CLIENTS" '
			NF >= 6 { e = $5 + $6 / 1e6; if (!($1 in last) || e > last[$1]) last[$1] = e }
			END { for (k in last) { seen++; if (last[k] < t1) bad++ } print bad + (want - seen) }' "$prefix".*)
		if [ "$early" != 0 ]; then
			ev_fail "writers during $c ($n): $early of $EV_CLIENTS stopped before the change ended"
			grep -E 'aborted|error' "$out" | head -n 10 >&2
			raw ev_writers "$n" "$c" "$label" ERR
			rm -f "$prefix".*
			return 1
		fi
		[ "$rc" = 2 ] && [ "${stopped:-0}" -gt 0 ] && rc=0
		ev_check "$n" "alter_state $c with writers" "$to" "$type" || true
		from_t=$t0
		to_t=$(awk -v a="$t1" -v b="$start" -v d="$dur" 'BEGIN { e = b + d; printf "%.6f", (a < e ? a : e) }')
		covered=$(awk -v a="$t0" -v b="$t1" -v e="$to_t" 'BEGIN { printf "%.3f", (b > a ? (e - a) / (b - a) : 1) }')
		csecs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	else
		from_t=$(awk -v s="$start" -v w="$EV_WARMUP" 'BEGIN { printf "%.6f", s + w }')
		to_t=$(awk -v s="$start" -v d="$dur" 'BEGIN { printf "%.6f", s + d }')
	fi
	secs=$(awk -v a="$from_t" -v b="$to_t" 'BEGIN { printf "%.3f", b - a }')
	figs=$(perl "$LIB/latency.pl" --overlap "$from_t" "$to_t" "$prefix".*) || figs=""
	if [ "$rc" -ne 0 ] || [ -z "$figs" ] || [ "${nfail:-0}" -ne 0 ]; then
		ev_fail "writers during $c ($n, $label): pgbench exit $rc, ${nfail:-?} failed"
		grep -vE '^(pgbench \(|transaction type|scaling factor|query mode|number of (clients|threads)|maximum number|duration)' "$out" | head -n 20 >&2
		raw ev_writers "$n" "$c" "$label" ERR
		rm -f "$prefix".*
		return 1
	fi
	# shellcheck disable=SC2086  # figs is a list of figures
	raw ev_writers "$n" "$c" "$label" $figs "$secs" "${nfail:-0}" "$csecs" "$covered"
	read -r ntx _ p99 _ max _ <<<"$figs"
	printf '   writers %-16s %-6s %8.0f tps  p99 %8d us  max %9d us%s\n' "$c" "$label" \
		"$(awk -v n="$ntx" -v s="$secs" 'BEGIN { print (s > 0 ? n / s : 0) }')" "$p99" "$max" \
		"$([ "$with" = 1 ] && echo ", change ${csecs} s, covered ${covered}")" >&2
	rm -f "$prefix".*
}

# ev_back [table]: the state (and the table) back to bigint values, untimed.
ev_back() {
	sql bench >>"$EV_LOG" 2>&1 <<SQL
$(ev_alter_sql back)
$([ "${1:-}" = table ] && echo "ALTER TABLE ev_t ALTER COLUMN v TYPE bigint;")
SQL
}

if [ "$(sql1 "SELECT count(*) FROM pg_proc WHERE pronamespace = 'state'::regnamespace AND proname = 'alter_state'")" = 0 ]; then
	note "evolve cases skipped: function state.alter_state does not exist in this build"
elif [ "$(sql1 "SELECT bench.probe_backend('memory')")" != ok ]; then
	note "evolve cases skipped: no memory state can be created"
else
	t_ev=$(date +%s)
	# The chain of backends: memory, then each other backend there is, then
	# memory again.
	EV_CHAIN=(memory)
	for b in rocksdb lmdb; do
		case "$b" in
			lmdb) [ "$LMDB" = 1 ] || { note "evolve: lmdb skipped: state_backend_lmdb (contrib/lmdb) is not installed"; continue; } ;;
			rocksdb) [ "$ROCKSDB" = 1 ] || { note "evolve: rocksdb skipped: no rocksdb state can be created"; continue; } ;;
		esac
		r=$(sql1 "SELECT bench.probe_backend('$b')")
		if [ "$r" = ok ]; then EV_CHAIN+=("$b"); else note "evolve: $b skipped: creating a state fails with $r"; fi
	done
	[ ${#EV_CHAIN[@]} -gt 1 ] && EV_CHAIN+=(memory)
	n_dropped=$(sql1 "SELECT count(*) FROM (SELECT state.drop_state(name) FROM state.states) d")
	[ "$n_dropped" -gt 0 ] &&
		note "evolve: the $n_dropped states of the earlier groups were dropped first (memory_limit holds the state and its copy)"
	meta ev_sizes "$EV_SIZES"
	meta ev_chain "${EV_CHAIN[*]}"
	meta ev_clients "$EV_CLIENTS"
	meta ev_writers "$EV_WRITERS"
	meta ev_warmup "$EV_WARMUP"
	meta ev_min_secs "$EV_MIN_SECS"
	meta ev_using_state "$EV_USING_STATE"
	meta ev_using_table "$EV_USING_TABLE"
	meta ev_settings "$(sql1 "SELECT string_agg(name || ' = ' || current_setting(name) || CASE WHEN setting = boot_val THEN ' (default)' ELSE '' END, '; ' ORDER BY name)
		FROM pg_settings WHERE name IN ('state_backend.memory_limit', 'state_backend.rocksdb_cache_size',
			'state_backend.rocksdb_write_buffer_size', 'state_backend.rocksdb_sync', 'state_backend_lmdb.map_size',
			'shared_buffers', 'maintenance_work_mem', 'max_parallel_maintenance_workers')")"
	for n in $EV_SIZES; do
		t_size=$(date +%s)
		EV_MS=()
		log "evolve, $n entries: loading the unlogged table and a memory value state"
		if ! ev_load "$n"; then
			ev_fail "loading $n entries"
			sql1 "SELECT state.drop_state('ev_v', if_exists => true); DROP TABLE IF EXISTS ev_t, ev_copy" >/dev/null 2>&1 || true
			continue
		fi
		# The changes, in order: "change from to type".
		EV_STEPS=()
		for ((i = 1; i < ${#EV_CHAIN[@]}; i++)); do
			EV_STEPS+=("backend:${EV_CHAIN[i]} ${EV_CHAIN[i - 1]} ${EV_CHAIN[i]} bigint")
		done
		EV_STEPS+=("type memory memory numeric" "using memory memory numeric")
		log "evolve, $n: each change alone, beside the table's"
		ok=1
		for s in "${EV_STEPS[@]}"; do
			read -r c from to type <<<"$s"
			[ "$c" = using ] && { ev_back table || { ev_fail "back to bigint ($n)"; ok=0; break; }; }
			ev_change "$n" "$c" "$from" "$to" "$type" || { ok=0; break; }
		done
		if [ "$ok" = 1 ]; then
			# key 2 held 2: 2 / 100 by the USING expression.
			v=$(sql1 "SELECT state.value_get('ev_v', 2::bigint, 0::numeric)")
			[ "$(sql1 "SELECT $v = 0.02")" = t ] || ev_fail "value_using ($n): key 2 holds $v, not 0.02"
		fi
		# The writers need the state only.
		sql1 "DROP TABLE IF EXISTS ev_t, ev_copy" >/dev/null 2>>"$EV_LOG"
		if [ "$ok" = 1 ] && [ "$EV_WRITERS" = 1 ]; then
			log "evolve, $n: $EV_CLIENTS writers (value_set, random keys) without a change, then during it, for each change"
			ev_back || ev_fail "back to bigint ($n)"
			for s in "${EV_STEPS[@]}"; do
				read -r c from to type <<<"$s"
				[ "$c" = using ] && { ev_back || { ev_fail "back to bigint ($n)"; break; }; }
				ev_writers "$n" "$c" "$from" "$to" "$type" 0 || true
				ev_writers "$n" "$c" "$from" "$to" "$type" 1 || break
			done
		fi
		sql bench >>"$EV_LOG" 2>&1 <<SQL || true
SELECT state.drop_state('ev_v', if_exists => true);
DROP TABLE IF EXISTS ev_t, ev_copy;
CHECKPOINT;
SQL
		meta "ev_seconds_$n" "$(($(date +%s) - t_size))"
	done
	meta ev_seconds "$(($(date +%s) - t_ev))"
fi
