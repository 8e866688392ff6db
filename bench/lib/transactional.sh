# shellcheck shell=bash
# bench/lib/transactional.sh: the transactional-state cases, sourced by
# bench/lib/bench.sh (its server, its helpers sql, as_pg, raw, meta, log,
# stmt_tps and its FAILED count).
#
# The same reduce on a transactional heap state, on the same state not
# transactional, on the same pair of rocksdb states (a transactional
# rocksdb commit is staged: its xid flushed to WAL, an intent record synced
# in RocksDB, one write batch after the commit record), and as an UPDATE of
# an unlogged table, in this run, with
# pgbench -M prepared, -c TX_CLIENTS, random keys of TX_KEYS preloaded keys:
#   single: one reduce per statement (autocommit: each its own transaction)
#   batch:  a transaction of TX_BATCH reduce calls, on keys b, b + S, b +
#           2S, ... (S = TX_KEYS / TX_BATCH, b random): every transaction
#           takes its keys in one order, so the table's updates cannot
#           deadlock (--max-tries retries them if they did)
#
# Records "tx_tps" lines for bench/lib/report_transactional.pl.

TX_KEYS=$((NKEYS < 100000 ? NKEYS : 100000))
TX_CLIENTS=${BENCH_TRANSACTIONAL_CLIENTS:-8}
TX_BATCH=100
tx_fail() { FAILED=$((FAILED + 1)); printf 'bench: transactional case %s FAILED\n' "$*" >&2; }
meta tx_clients "$TX_CLIENTS"
meta tx_keys "$TX_KEYS"
meta tx_batch "$TX_BATCH"

# tx_batch_tps OUT STMT: transactions per second of a pgbench script of
# TX_BATCH statements STMT (each with its own :k) in one transaction.
tx_batch_tps() {
	local out=$1 stmt=$2 f stride=$((TX_KEYS / TX_BATCH))
	f="${out%.txt}.pgbench"
	{
		printf '\\set b random(1, %d)\nBEGIN;\n' "$stride"
		for i in $(seq 0 $((TX_BATCH - 1))); do
			printf '\\set k :b + %d\n%s\n' $((i * stride)) "$stmt"
		done
		echo 'COMMIT;'
	} >"$f"
	script_tps "$out" "$f" "$TX_CLIENTS" "" --max-tries=100
}

t_tx=$(date +%s)
log "transactional cases: $TX_KEYS keys in transactional and plain heap and rocksdb states and an unlogged table"
if ! sql bench >>"$WORK/out/transactional.log" 2>&1 <<EOF; then
SELECT state.create_state('tx_r', 'reducing', 'text', 'bigint', backend => 'memory', reducer => 'sum', transactional => true);
SELECT state.create_state('tx_ru', 'reducing', 'text', 'bigint', backend => 'memory', reducer => 'sum');
SELECT state.create_state('tx_k', 'reducing', 'text', 'bigint', backend => 'rocksdb', reducer => 'sum', transactional => true);
SELECT state.create_state('tx_ku', 'reducing', 'text', 'bigint', backend => 'rocksdb', reducer => 'sum');
SELECT count(state.reduce(s, i::text, i::bigint)) FROM generate_series(1, $TX_KEYS) i, unnest(ARRAY['tx_r', 'tx_ru', 'tx_k', 'tx_ku']) s;
CREATE UNLOGGED TABLE bench.tx_kv (k text PRIMARY KEY, v bigint);
INSERT INTO bench.tx_kv SELECT i::text, i FROM generate_series(1, $TX_KEYS) i;
VACUUM ANALYZE bench.tx_kv;
EOF
	tail -n 5 "$WORK/out/transactional.log" >&2
	tx_fail "creating the states"
else
	# tx_case SHAPE NAME STMT: one figure, single statements or batches.
	tx_case() {
		local shape=$1 name=$2 stmt=$3 out tps
		out="$WORK/out/tx-$shape-$name.txt"
		if [ "$shape" = single ]; then
			tps=$(stmt_tps "$out" "$TX_KEYS" "$TX_CLIENTS" "$stmt")
		else
			tps=$(tx_batch_tps "$out" "$stmt")
		fi
		if [ -z "$tps" ]; then
			tx_fail "$shape $name"
			tail -n 5 "$out" >&2
			return 0
		fi
		raw tx_tps "$shape" "$name" "$tps"
		printf '   %-7s %-16s %10.0f tps\n' "$shape" "$name" "$tps" >&2
	}
	for shape in single batch; do
		tx_case "$shape" transactional "SELECT state.reduce('tx_r', :k::text, 1::bigint);"
		tx_case "$shape" plain "SELECT state.reduce('tx_ru', :k::text, 1::bigint);"
		tx_case "$shape" rocksdb_transactional "SELECT state.reduce('tx_k', :k::text, 1::bigint);"
		tx_case "$shape" rocksdb_plain "SELECT state.reduce('tx_ku', :k::text, 1::bigint);"
		tx_case "$shape" table "UPDATE bench.tx_kv SET v = v + 1 WHERE k = :k::text;"
	done
fi
meta tx_seconds "$(($(date +%s) - t_tx))"
