# shellcheck shell=bash
# bench/lib/standby.sh: reads of logged states on a hot standby beside the
# same reads on the primary, the standby's lag under a steady write load,
# and what a promotion costs; sourced by bench/lib/bench.sh (its server,
# its helpers sql, sql1, as_pg, raw, meta, note, log, stmt_tps and its
# FAILED count).
#
# The bench server is the primary.  A logged value state of SB_KEYS keys
# (int keys, bigint values) is loaded, a standby is made with pg_basebackup
# -R in the work directory, on the next port, a checkpoint is taken, and
# the standby started; once it has applied the primary's WAL:
#
#   reads:     state.value_get on random keys, pgbench -M prepared,
#              SB_CLIENTS clients, on the primary, the standby, the standby
#              again and the primary again (A B B A: the figure of each is
#              the mean of its two runs); the no-op C function likewise
#   lag:       SB_WRITERS clients of value_set on the primary for SECS
#              seconds while the standby's state.worker is sampled every
#              100 ms (standby_lag_bytes, standby_lag_ms), and the
#              standby's replay lag in bytes beside it
#   promotion: pg_ctl promote, then the time to the first value_get that
#              succeeds on the new primary; then the same server crashed
#              (-m immediate) and started, which loads the newest
#              checkpoint and replays WAL from its cut, timed the same way
#              (what a promotion cost before standbys applied WAL)
#
# Records "sb" lines for bench/lib/report_standby.pl.

SB_KEYS=$((NKEYS < 1000000 ? NKEYS : 1000000))
SB_CLIENTS=${BENCH_STANDBY_CLIENTS:-8}
SB_WRITERS=${BENCH_STANDBY_WRITERS:-4}
# shellcheck disable=SC2153  # PORT: bench.sh's
SB_PORT=$((PORT + 1))
SB_DATA="$WORK/standby"
sb_fail() { FAILED=$((FAILED + 1)); printf 'bench: standby case %s FAILED\n' "$*" >&2; }
meta sb_keys "$SB_KEYS"
meta sb_clients "$SB_CLIENTS"
meta sb_writers "$SB_WRITERS"
meta sb_cores "$(nproc)"

SB_PSQL=("$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$WORK" -p "$SB_PORT" -U postgres -d bench)
sb_sql() { as_pg timeout -k 10 600 "${SB_PSQL[@]}" -c "$1"; }

# The primary's WAL position, as a number.
sb_primary_lsn() { sql1 "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn"; }

# sb_wait_applied LSN: until the standby's worker has applied up to LSN (60 s at most).
sb_wait_applied() {
	local want=$1 _ got
	for _ in $(seq 1 600); do
		got=$(sb_sql "SELECT coalesce(value, 0) FROM state.worker WHERE name = 'standby_applied_lsn'" 2>/dev/null) || got=0
		[ -n "$got" ] && [ "$got" -ge "$want" ] && return 0
		sleep 0.1
	done
	return 1
}

# The standby loads a checkpoint taken since its base backup, from a copy
# of the checkpoint directory: once promoted, it takes checkpoints of its
# own, which must not mix with the bench server's.
sb_setup() {
	sql1 "SELECT state.create_state('sb', 'value', 'int', 'bigint', logged => true);
SELECT count(state.value_set('sb', i, i::bigint)) FROM generate_series(1, $SB_KEYS) i;" >/dev/null &&
		as_pg "$PGBIN/pg_basebackup" -h "$WORK" -p "$PORT" -U postgres -D "$SB_DATA" -R -X stream \
			--no-sync >/dev/null &&
		sql1 "SELECT state.wait_snapshot(state.snapshot())" >/dev/null &&
		as_pg cp -a "$WORK/checkpoints" "$WORK/sb-checkpoints" &&
		as_pg tee -a "$SB_DATA/postgresql.conf" >/dev/null <<<"
# the standby of the standby group
port = $SB_PORT
hot_standby = on
state_backend.checkpoint_dir = '$WORK/sb-checkpoints'" &&
		as_pg "$PGBIN/pg_ctl" -D "$SB_DATA" -l "$WORK/standby.log" -w -t 120 start >/dev/null &&
		sb_wait_applied "$(sb_primary_lsn)"
}

# sb_reads NAME PORT STMT: one pgbench run of STMT against the server on PORT.
sb_reads() {
	local name=$1 port=$2 stmt=$3 out tps
	out="$WORK/out/sb-$name-$port-$RANDOM.txt"
	tps=$(PORT=$port stmt_tps "$out" "$SB_KEYS" "$SB_CLIENTS" "$stmt")
	if [ -z "$tps" ]; then
		sb_fail "$name on port $port"
		tail -n 5 "$out" >&2
		return 1
	fi
	printf '%s' "$tps"
}

# sb_pair NAME STMT: STMT on the primary and the standby, A B B A.
sb_pair() {
	local name=$1 stmt=$2 p1 s1 s2 p2
	if ! { p1=$(sb_reads "$name" "$PORT" "$stmt") && s1=$(sb_reads "$name" "$SB_PORT" "$stmt") &&
		s2=$(sb_reads "$name" "$SB_PORT" "$stmt") && p2=$(sb_reads "$name" "$PORT" "$stmt"); }; then
		raw sb tps "$name" ERR ERR
		return 0
	fi
	p1=$(awk -v a="$p1" -v b="$p2" 'BEGIN { printf "%.1f", (a + b) / 2 }')
	s1=$(awk -v a="$s1" -v b="$s2" 'BEGIN { printf "%.1f", (a + b) / 2 }')
	raw sb tps "$name" "$p1" "$s1"
	printf '   %-10s primary %10.0f  standby %10.0f tps\n' "$name" "$p1" "$s1" >&2
}

# sb_lag: writers on the primary, the standby's lag sampled meanwhile.
sb_lag() {
	local f="$WORK/out/sb-lag.pgbench" out="$WORK/out/sb-lag.txt" samples="$WORK/out/sb-lag-samples.txt" pid tps
	printf '\\set k random(1, %d)\nSELECT state.value_set('"'"'sb'"'"', :k, :k::bigint);\n' "$SB_KEYS" >"$f"
	as_pg timeout -k 10 $((SECS + 300)) "$PGBIN/pgbench" -n -M "$PROTOCOL" -h "$WORK" -p "$PORT" -U postgres \
		-T "$SECS" -c "$SB_WRITERS" -j "$SB_WRITERS" -f "$f" bench >"$out" 2>&1 &
	pid=$!
	: >"$samples"
	while kill -0 "$pid" 2>/dev/null; do
		sb_sql "SELECT string_agg(coalesce(value, -1)::text, ' ' ORDER BY name) FROM state.worker
WHERE name IN ('standby_lag_bytes', 'standby_lag_ms')" >>"$samples" 2>/dev/null || true
		sleep 0.1
	done
	wait "$pid" || { sb_fail lag; tail -n 5 "$out" >&2; return 0; }
	tps=$(awk '/^tps = / { print $3; exit }' "$out")
	# Samples: "lag_bytes lag_ms" (names in order).
	raw sb lag writes_tps "${tps:-ERR}"
	raw sb lag samples "$(wc -l <"$samples")"
	raw sb lag bytes "$(awk '{ print $1 }' "$samples" | sort -n | awk '{ a[NR] = $1 } END { if (NR) printf "%d %d %d", a[int((NR + 1) / 2)], a[int(NR * 0.99 + 0.5) < 1 ? 1 : int(NR * 0.99 + 0.5)], a[NR] }')"
	raw sb lag ms "$(awk '{ print $2 }' "$samples" | sort -n | awk '{ a[NR] = $1 } END { if (NR) printf "%d %d %d", a[int((NR + 1) / 2)], a[int(NR * 0.99 + 0.5) < 1 ? 1 : int(NR * 0.99 + 0.5)], a[NR] }')"
	printf '   lag under %s writers: %s samples\n' "$SB_WRITERS" "$(wc -l <"$samples")" >&2
}

# sb_first_call: seconds until a value_get succeeds on the standby's port.
sb_first_call() {
	local t0 _
	t0=$(date +%s.%N)
	for _ in $(seq 1 3000); do
		if sb_sql "SELECT state.value_get('sb', 1, 0::bigint)" >/dev/null 2>&1; then
			awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'
			return 0
		fi
		sleep 0.01
	done
	return 1
}

sb_promote() {
	local t p
	sb_wait_applied "$(sb_primary_lsn)" || { sb_fail "catch-up before promotion"; return 0; }
	as_pg "$PGBIN/pg_ctl" -D "$SB_DATA" -w -t 120 promote >/dev/null || { sb_fail promote; return 0; }
	p=$(sb_first_call) || { sb_fail "first call after promotion"; return 0; }
	raw sb promote first_call_s "$p"
	raw sb promote check "$(sb_sql "SELECT state.value_get('sb', 7, 0::bigint)")"
	# The path a promotion took before: load the newest checkpoint, replay from its cut.
	as_pg "$PGBIN/pg_ctl" -D "$SB_DATA" -m immediate stop >/dev/null
	as_pg "$PGBIN/pg_ctl" -D "$SB_DATA" -l "$WORK/standby.log" -t 120 start >/dev/null ||
		{ sb_fail "start after crash"; return 0; }
	t=$(sb_first_call) || { sb_fail "first call after a crash"; return 0; }
	raw sb restart first_call_s "$t"
	printf '   first call: %ss after promotion, %ss after a crash restart\n' "$p" "$t" >&2
}

t_sb=$(date +%s)
if ! sb_setup >>"$WORK/out/standby.log" 2>&1; then
	tail -n 5 "$WORK/out/standby.log" "$WORK/standby.log" >&2
	sb_fail "set-up"
else
	log "standby cases: $SB_KEYS logged keys, $SB_CLIENTS readers, $SB_WRITERS writers, a hot standby on port $SB_PORT"
	sb_pair floor "SELECT bench.noop(:k::text, '1');"
	sb_pair value_get "SELECT state.value_get('sb', :k, 0::bigint);"
	sb_lag
	sb_promote
fi
as_pg "$PGBIN/pg_ctl" -D "$SB_DATA" -m fast stop >/dev/null 2>&1 || true
sql1 "SELECT state.drop_state('sb')" >/dev/null 2>&1 || true
checkpoint_now || sb_fail "a checkpoint once its state was dropped"
meta sb_total_seconds "$(($(date +%s) - t_sb))"
