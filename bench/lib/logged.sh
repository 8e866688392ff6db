# shellcheck shell=bash
# bench/lib/logged.sh: the logged-state cases, sourced by bench/lib/bench.sh
# (its server, its helpers sql, sql1, as_pg, raw, meta, note, log and its
# FAILED count) last, because it ends with a crash of the server.
#
# A logged state writes every change to WAL; a session flushes at commit
# as synchronous_commit says.  Each figure is set beside its baseline,
# measured in this group, in this run:
#
#   per statement (pgbench -M prepared, -c LOGGED_CLIENTS, random keys of
#     LG_KEYS preloaded keys): value_set and reduce on logged heap states
#     with synchronous_commit = off, beside the same on unlogged heap
#     states; the same with synchronous_commit = on, beside a logged
#     table's upsert and hot update (UPDATE ... SET v = v + 1); reduce on
#     a logged rocksdb state both ways, beside an unlogged rocksdb state
#     (off) and the table's hot update (on): the state worker flushes WAL
#     before RocksDB holds a logged change (WAL before data)
#   bulk: one statement of NBULK value_set into an empty logged state,
#     beside an unlogged one: time and WAL bytes
#   replay: the server stops with -m immediate right after the bulk
#     statement; the state worker replays its NBULK records at start (the
#     server log says how many and in how long)
#
# Records "lg_*" lines for bench/lib/report_logged.pl.

LG_KEYS=$((NKEYS < 100000 ? NKEYS : 100000))
LG_CLIENTS=${BENCH_LOGGED_CLIENTS:-8}
lg_fail() { FAILED=$((FAILED + 1)); printf 'bench: logged case %s FAILED\n' "$*" >&2; }
meta lg_clients "$LG_CLIENTS"
meta lg_keys "$LG_KEYS"

t_lg=$(date +%s)
log "logged cases: $LG_KEYS keys in logged and unlogged heap states and a logged table"
if ! sql bench >>"$WORK/out/logged.log" 2>&1 <<EOF; then
SELECT state.create_state('lg_v', 'value', 'text', 'bigint', backend => 'memory', logged => true);
SELECT state.create_state('lg_vu', 'value', 'text', 'bigint', backend => 'memory');
SELECT state.create_state('lg_r', 'reducing', 'text', 'bigint', backend => 'memory', reducer => 'sum', logged => true);
SELECT state.create_state('lg_ru', 'reducing', 'text', 'bigint', backend => 'memory', reducer => 'sum');
SELECT state.create_state('lg_rr', 'reducing', 'text', 'bigint', backend => 'rocksdb', reducer => 'sum', logged => true);
SELECT state.create_state('lg_rru', 'reducing', 'text', 'bigint', backend => 'rocksdb', reducer => 'sum');
SELECT count(state.value_set(s, i::text, i::bigint)) FROM generate_series(1, $LG_KEYS) i, unnest(ARRAY['lg_v', 'lg_vu']) s;
SELECT count(state.reduce(s, i::text, i::bigint)) FROM generate_series(1, $LG_KEYS) i, unnest(ARRAY['lg_r', 'lg_ru', 'lg_rr', 'lg_rru']) s;
CREATE TABLE bench.lg_kv (k text PRIMARY KEY, v bigint);
INSERT INTO bench.lg_kv SELECT i::text, i FROM generate_series(1, $LG_KEYS) i;
VACUUM ANALYZE bench.lg_kv;
EOF
	tail -n 5 "$WORK/out/logged.log" >&2
	lg_fail "creating the states"
else
	# lg_case NAME SYNC SQL: pgbench of one statement on random keys.
	lg_case() {
		local name=$1 sync=$2 stmt=$3 out tps
		out="$WORK/out/lg-$name-$sync.txt"
		tps=$(stmt_tps "$out" "$LG_KEYS" "$LG_CLIENTS" "$stmt" "-c synchronous_commit=$sync")
		if [ -z "$tps" ]; then
			lg_fail "$name (synchronous_commit $sync)"
			tail -n 5 "$out" >&2
			return 0
		fi
		raw lg_tps "$name" "$sync" "$tps"
		printf '   %-26s synchronous_commit=%-3s %10.0f tps\n' "$name" "$sync" "$tps" >&2
	}
	for sync in off on; do
		lg_case value_set_logged "$sync" "SELECT state.value_set('lg_v', :k::text, :k::bigint);"
		lg_case reduce_logged "$sync" "SELECT state.reduce('lg_r', :k::text, 1::bigint);"
		lg_case reduce_logged_rocksdb "$sync" "SELECT state.reduce('lg_rr', :k::text, 1::bigint);"
		if [ "$sync" = off ]; then
			lg_case value_set_unlogged "$sync" "SELECT state.value_set('lg_vu', :k::text, :k::bigint);"
			lg_case reduce_unlogged "$sync" "SELECT state.reduce('lg_ru', :k::text, 1::bigint);"
			lg_case reduce_unlogged_rocksdb "$sync" "SELECT state.reduce('lg_rru', :k::text, 1::bigint);"
		else
			lg_case upsert_table "$sync" "INSERT INTO bench.lg_kv VALUES (:k::text, :k) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v;"
			lg_case update_table "$sync" "UPDATE bench.lg_kv SET v = v + 1 WHERE k = :k::text;"
		fi
	done

	# Bulk, then a crash right after it: the replay has NBULK records.
	for s in lg_bu lg_b; do
		logged=$([ "$s" = lg_b ] && echo true || echo false)
		r=$(sql bench 2>>"$WORK/out/logged.log" <<EOF
SELECT state.create_state('$s', 'value', 'text', 'bigint', backend => 'memory', logged => $logged);
CHECKPOINT;
SELECT pg_current_wal_insert_lsn() AS a, clock_timestamp() AS t0 \gset
SELECT count(state.value_set('$s', i::text, i::bigint)) FROM generate_series(1, $NBULK) i;
SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000, 1) || ' ' || pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :'a');
EOF
		) || { lg_fail "bulk value_set into $s"; continue; }
		read -r ms walbytes <<<"$(tail -n 1 <<<"$r")"
		raw lg_bulk "$s" "$NBULK" "$ms" "$walbytes"
		printf '   bulk value_set %-6s %9s rows %9.0f ms %12s WAL bytes\n' "$s" "$NBULK" "$ms" "$walbytes" >&2
	done
	meta lg_statement_seconds "$(($(date +%s) - t_lg))"

	log "logged cases: crash (-m immediate) and restart; the worker replays the bulk statement's records"
	offset=$(stat -c %s "$WORK/server.log")
	as_pg "$PGBIN/pg_ctl" -D "$DATA" -m immediate -w stop >/dev/null
	as_pg "$PGBIN/pg_ctl" -D "$DATA" -l "$WORK/server.log" -w -t 600 start >/dev/null ||
		{ tail -n 30 "$WORK/server.log" >&2; die "the server did not restart"; }
	line=""
	for _ in $(seq 1 600); do
		line=$(tail -c +$((offset + 1)) "$WORK/server.log" | grep -m 1 'replayed [0-9]* WAL records' || true)
		[ -n "$line" ] && break
		sleep 0.5
	done
	if [[ "$line" =~ replayed\ ([0-9]+)\ WAL\ records.*in\ ([0-9]+)\ ms ]]; then
		raw lg_replay "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
		printf '   replay %s records in %s ms\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" >&2
		n=$(sql1 "SELECT entries FROM state.states WHERE name = 'lg_b'")
		[ "$n" = "$NBULK" ] || lg_fail "after the crash lg_b holds $n entries, not $NBULK"
	else
		lg_fail "no replay in the server log after the crash"
	fi
fi
meta lg_seconds "$(($(date +%s) - t_lg))"
