# shellcheck shell=bash
# bench/lib/proxy.sh: calls through a proxy database (state.create_proxy,
# PL/Proxy) beside the same calls made directly, sourced by
# bench/lib/bench.sh (its server, its helpers sql, sql1, as_pg, raw, meta,
# note, log, stmt_tps and its FAILED count).
#
# One server holds everything: the proxy is the database "bench" (PL/Proxy
# and the proxy functions in schema state_proxy), its two parts are the
# databases bench_part0 and bench_part1 (parts 0 and 1 of 2 of a snapshot
# of bench_px_src), and "direct" is the same state in "bench" itself, as
# one server would hold it.  Every call of the proxy is thus two backends'
# work (the proxy's and the part's) plus PL/Proxy's connection, on the same
# two cores: the difference in CPU per call is the proxy's own cost.
#
#   floor:   SELECT bench.noop(:k::text, '1')
#   direct:  state.value_get / state.reduce on 'px' in bench
#   proxy:   state_proxy.value_get / state_proxy.reduce through the parts
#
# pgbench -M prepared, PX_CLIENTS clients, random keys of PX_KEYS (int keys,
# bigint values, untyped bind parameters).  Records "px" lines for
# bench/lib/report_proxy.pl.

PX_KEYS=$((NKEYS < 100000 ? NKEYS : 100000))
PX_CLIENTS=${BENCH_PROXY_CLIENTS:-8}
px_fail() { FAILED=$((FAILED + 1)); printf 'bench: proxy case %s FAILED\n' "$*" >&2; }
meta px_clients "$PX_CLIENTS"
meta px_keys "$PX_KEYS"
meta px_cores "$(nproc)"

px_setup() {
	local i parts=
	for i in 0 1; do parts+="${parts:+, }'host=$WORK port=$PORT dbname=bench_part$i'"; done
	sql postgres <<<"CREATE DATABASE bench_px_src; CREATE DATABASE bench_part0; CREATE DATABASE bench_part1" >/dev/null &&
		sql bench_px_src >/dev/null <<EOS &&
CREATE EXTENSION state_backend;
SELECT state.create_state('px', 'value', 'int', 'bigint');
SELECT state.create_state('pr', 'reducing', 'int', 'bigint', reducer => 'sum');
SELECT count(state.value_set('px', i, i::bigint)) FROM generate_series(1, $PX_KEYS) i;
SELECT state.wait_snapshot(state.snapshot('$WORK/px-snapshot'));
EOS
		for i in 0 1; do
			sql "bench_part$i" <<<"CREATE EXTENSION state_backend;
SELECT state.restore('$WORK/px-snapshot', from_database => 'bench_px_src', parallelism => 2, part => $i);" >/dev/null || return 1
		done &&
		sql bench >/dev/null <<EOS
CREATE EXTENSION plproxy;
SELECT state.create_state('px', 'value', 'int', 'bigint');
SELECT state.create_state('pr', 'reducing', 'int', 'bigint', reducer => 'sum');
SELECT count(state.value_set('px', i, i::bigint)) FROM generate_series(1, $PX_KEYS) i;
SELECT state.create_proxy('bench_px', ARRAY[$parts]);
EOS
}

px_case() {
	local name=$1 stmt=$2 out tps
	out="$WORK/out/px-$name.txt"
	tps=$(stmt_tps "$out" "$PX_KEYS" "$PX_CLIENTS" "$stmt")
	if [ -z "$tps" ]; then
		px_fail "$name"
		tail -n 5 "$out" >&2
		raw px tps "$name" ERR
		return 0
	fi
	raw px tps "$name" "$tps"
	printf '   %-16s %10.0f calls/s\n' "$name" "$tps" >&2
}

t_px=$(date +%s)
if [ ! -e "$PKGLIB/plproxy.so" ]; then
	note "proxy cases skipped: PL/Proxy (postgresql-15-plproxy) is not installed"
elif ! px_setup >>"$WORK/out/proxy.log" 2>&1; then
	tail -n 5 "$WORK/out/proxy.log" >&2
	px_fail "set-up"
else
	log "proxy cases: $PX_KEYS keys, $PX_CLIENTS clients, a proxy to 2 parts beside direct calls"
	px_case floor "SELECT bench.noop(:k::text, '1');"
	px_case direct_get "SELECT state.value_get('px', :k, 0::bigint);"
	px_case proxy_get "SELECT state_proxy.value_get('px', :k, 0::bigint);"
	px_case direct_reduce "SELECT state.reduce('pr', :k, 1::bigint);"
	px_case proxy_reduce "SELECT state_proxy.reduce('pr', :k, 1::bigint);"
	# The proxy's writes all arrived: each part holds its own share.
	sum=$(sql1 "SELECT coalesce(sum(value), 0) FROM state_proxy.entries('pr', NULL::int, NULL::bigint)")
	raw px check reduce_sum "$sum"
	sql1 "SELECT state.drop_proxy('bench_px'); SELECT state.drop_state('px'); SELECT state.drop_state('pr')" >/dev/null
	sql postgres <<<"DROP DATABASE bench_px_src; DROP DATABASE bench_part0; DROP DATABASE bench_part1" >/dev/null
fi
meta px_total_seconds "$(($(date +%s) - t_px))"
