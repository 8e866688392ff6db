# shellcheck shell=bash
# bench/lib/nexmark.sh: the NEXMark cases, sourced by bench/lib/bench.sh (its
# server, its helpers sql, sql1, as_pg, raw, meta, note, log and its FAILED
# count).
#
# Three NEXMark queries over a stream of bids (auction, bidder, price,
# date_time) that pgbench clients insert into an unlogged table, NX_BATCH
# generated rows per statement (INSERT ... SELECT), one statement per
# transaction, NX_EVENTS bids in all, at each client count of NX_CLIENTS:
#
#   q5:  hot items: bids per auction in sliding windows of 10 s every 2 s;
#        the hot items (the auctions with the most bids of each window) are a
#        query over those counts
#   q7:  highest bid: the highest price per auction in tumbling windows of
#        10 s; the highest of each window, and the bids that made it, are a
#        query over those and the bids
#   q11: user sessions: bids per bidder in session windows of a 10 s gap
#
# Each query runs on its own, through a state and through tables:
#
#   states: a memory window state per query (key auction or bidder,
#           out_of_orderness NX_OOO so that the watermark follows the bids,
#           an unlogged output table as its emit table, into which the timer
#           worker inserts each fired window), fed by a statement trigger EXECUTE FUNCTION
#           state.feed(...) on the bid table; after the feed the watermark
#           goes to 'infinity' and the run ends when every window is out
#   tables: a PL/pgSQL statement trigger on the bid table that keeps the same
#           results in an unlogged table, set-based: an INSERT ... ON
#           CONFLICT DO UPDATE of the statement's rows grouped per key and
#           window (q5, q7); for sessions, one statement that takes out the
#           stored sessions the statement's own sessions meet (DELETE ...
#           RETURNING) and inserts what they make together, each bidder
#           locked first
#   none:   the bid table without a trigger, the floor
#
# Bids follow NEXMark's generator: event n (a sequence gives each statement
# its block of NX_BATCH numbers) is at NX_BASE + n / NX_RATE seconds less up
# to NX_JITTER (out of order, bounded); half of the bids go to the hot
# auction (a new one every 100 auctions, a new auction every 46 / 3 bids),
# the others to one of the 100 newest; three bids in four come from the hot
# bidder (a new one every 100 people, a new person every 46 bids), the
# others from one of the 1,000 newest people; prices 10^(6 random) * 100.
# Every event stays in the bid table, so that after each run batch SQL over
# it gives each query's results, which must equal what the states emitted
# and what the tables hold: a difference counts in FAILED.
#
# BENCH_ROUNDS rounds of every run, in the same order; the report keeps
# each run's best round.  Records "nx" lines for bench/lib/report_nexmark.pl.

NX_LOG=$WORK/out/nexmark.log
NX_BATCH=${BENCH_NEXMARK_BATCH:-100}
NX_CLIENTS=${BENCH_NEXMARK_CLIENTS:-1 8}
if [ "$MODE" = smoke ]; then
	NX_EVENTS=${BENCH_NEXMARK_EVENTS:-8000}
else
	NX_EVENTS=${BENCH_NEXMARK_EVENTS:-400000}
fi
NX_RATE=${BENCH_NEXMARK_RATE:-10000}	# events per second of event time (NEXMark's default)
NX_QUERIES="q5 q7 q11"
NX_JITTER='5 seconds'			# how far an event's time goes back at most
NX_OOO='10 seconds'				# out_of_orderness: the jitter and 5 s of clients in flight
NX_BASE='2030-01-01 00:00:00+00'
NX_EPOCH='1970-01-01 00:00:00+00'
NX_STALL_S=60					# a drain with no progress for this long fails
for v in NX_BATCH NX_EVENTS NX_RATE; do
	case "${!v}" in '' | *[!0-9]* | 0*) die "BENCH_NEXMARK_${v#NX_} must be a positive whole number" ;; esac
done
for c in $NX_CLIENTS; do
	case "$c" in '' | *[!0-9]* | 0*) die "BENCH_NEXMARK_CLIENTS must list client counts" ;; esac
done
[ $((1000000 % NX_RATE)) -eq 0 ] || die "BENCH_NEXMARK_RATE must divide 1000000 (an event's time is a whole number of microseconds)"
nx_fail() { FAILED=$((FAILED + 1)); printf 'bench: nexmark %s FAILED\n' "$*" >&2; }
meta nx_events "$NX_EVENTS"
meta nx_clients "$NX_CLIENTS"
meta nx_batch "$NX_BATCH"
meta nx_rate "$NX_RATE"
meta nx_jitter "$NX_JITTER"
meta nx_ooo "$NX_OOO"

# The windows of each query, as the state declares them and as SQL computes
# them: NX_WIN (create_state's options), the key column, the value column
# fed, what the output table's result column is.
nx_key() { case "$1" in q11) echo bidder ;; *) echo auction ;; esac; }
nx_win() {
	case "$1" in
		q5) echo "assigner => 'sliding', size => '10 seconds', slide => '2 seconds', aggregate => 'bench.nx_count(bigint)'" ;;
		q7) echo "assigner => 'tumbling', size => '10 seconds', reducer => 'max'" ;;
		q11) echo "assigner => 'session', gap => '10 seconds', aggregate => 'bench.nx_count(bigint)'" ;;
	esac
}

# nx_sink Q: where a state sends its fired windows: the output table
# bench.nx_Q_out, as its emit table (rows inserted by the timer worker, no
# call per window).
nx_sink() { printf "emit_table => 'bench.nx_%s_out'" "$1"; }

# nx_setup: the bid table, the outputs, the table side's result tables and
# triggers' functions.
nx_setup() {
	sql bench <<SQL
CREATE UNLOGGED TABLE bench.nx_bids (auction bigint, bidder bigint, price bigint, date_time timestamptz);
CREATE SEQUENCE bench.nx_seq MINVALUE 0 START 0 INCREMENT BY $NX_BATCH;
-- count(*) as an aggregate of a bigint (count("any") has a pseudo-type
-- argument, which states do not take), built of PostgreSQL's own count.
CREATE AGGREGATE bench.nx_count(bigint) (sfunc = int8inc_any, stype = bigint, initcond = '0', combinefunc = int8pl);
-- What the states emit into, as their emit tables (key, window start,
-- window end, result), and the values a state dropped as late (there
-- should be none).
CREATE UNLOGGED TABLE bench.nx_q5_out (auction bigint, window_start timestamptz, window_end timestamptz, n bigint);
CREATE UNLOGGED TABLE bench.nx_q7_out (auction bigint, window_start timestamptz, window_end timestamptz, price bigint);
CREATE UNLOGGED TABLE bench.nx_q11_out (bidder bigint, window_start timestamptz, window_end timestamptz, n bigint);
CREATE UNLOGGED TABLE bench.nx_late (k bigint, t timestamptz, v bigint);
CREATE FUNCTION bench.nx_late_fn(k bigint, t timestamptz, v bigint) RETURNS void LANGUAGE sql
	AS \$\$ INSERT INTO bench.nx_late VALUES (k, t, v) \$\$;
-- The table side: the same results kept by PL/pgSQL statement triggers.
CREATE UNLOGGED TABLE bench.nx_q5_t (auction bigint, window_start timestamptz, n bigint, PRIMARY KEY (auction, window_start));
CREATE UNLOGGED TABLE bench.nx_q7_t (auction bigint, window_start timestamptz, price bigint, PRIMARY KEY (auction, window_start));
CREATE UNLOGGED TABLE bench.nx_q11_t (bidder bigint, window_start timestamptz, window_end timestamptz, n bigint);
CREATE INDEX ON bench.nx_q11_t (bidder);
CREATE FUNCTION bench.nx_q5_trigger() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
	-- each bid counts in the 5 windows of 10 s every 2 s that hold it; the
	-- rows in key order, so that concurrent statements lock them in one order
	INSERT INTO bench.nx_q5_t AS r (auction, window_start, n)
	SELECT auction, ws, count(*)
	  FROM (SELECT b.auction, date_bin('2 seconds', b.date_time, '$NX_EPOCH') - k * interval '2 seconds' AS ws
			  FROM new_rows b, generate_series(0, 4) k) w
	 GROUP BY auction, ws ORDER BY auction, ws
	ON CONFLICT (auction, window_start) DO UPDATE SET n = r.n + EXCLUDED.n;
	RETURN NULL;
END \$\$;
CREATE FUNCTION bench.nx_q7_trigger() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
	INSERT INTO bench.nx_q7_t AS r (auction, window_start, price)
	SELECT auction, date_bin('10 seconds', date_time, '$NX_EPOCH') AS ws, max(price)
	  FROM new_rows
	 GROUP BY 1, 2 ORDER BY 1, 2
	ON CONFLICT (auction, window_start) DO UPDATE SET price = EXCLUDED.price WHERE r.price < EXCLUDED.price;
	RETURN NULL;
END \$\$;
CREATE FUNCTION bench.nx_q11_trigger() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
	-- one statement at a time merges a bidder's sessions: its bidders
	-- locked first, in order
	PERFORM pg_advisory_xact_lock(bidder) FROM (SELECT DISTINCT bidder FROM new_rows ORDER BY 1) b;
	-- the statement's own sessions (a bid more than 10 s after the bidder's
	-- previous one starts a new one), and the stored sessions they meet
	-- (touching counts), taken out; what they make together goes back, a
	-- row per group of intervals that meet
	WITH s AS (
		SELECT bidder, min(date_time) AS ws, max(date_time) + interval '10 seconds' AS we, count(*) AS n
		  FROM (SELECT bidder, date_time, sum(brk) OVER (PARTITION BY bidder ORDER BY date_time) AS sid
				  FROM (SELECT bidder, date_time,
							   CASE WHEN date_time - lag(date_time) OVER (PARTITION BY bidder ORDER BY date_time)
									<= interval '10 seconds' THEN 0 ELSE 1 END AS brk
						  FROM new_rows) a) b
		 GROUP BY bidder, sid),
	d AS (
		DELETE FROM bench.nx_q11_t t USING s
		 WHERE t.bidder = s.bidder AND t.window_start <= s.we AND t.window_end >= s.ws
		RETURNING t.bidder, t.window_start AS ws, t.window_end AS we, t.n),
	u AS (SELECT * FROM s UNION ALL SELECT * FROM d),
	m AS (
		SELECT *, CASE WHEN ws <= max(we) OVER (PARTITION BY bidder ORDER BY ws, we ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
					   THEN 0 ELSE 1 END AS brk
		  FROM u),
	g AS (SELECT *, sum(brk) OVER (PARTITION BY bidder ORDER BY ws, we ROWS UNBOUNDED PRECEDING) AS gid FROM m)
	INSERT INTO bench.nx_q11_t SELECT bidder, min(ws), max(we), sum(n)::bigint FROM g GROUP BY bidder, gid;
	RETURN NULL;
END \$\$;
SQL
}

# nx_script: the pgbench script, one statement of NX_BATCH bids.
nx_script() {
	local us=$((1000000 / NX_RATE))
	cat <<EOF
INSERT INTO bench.nx_bids (auction, bidder, price, date_time)
SELECT CASE WHEN random() < 0.5 THEN (e.n * 3 / 46) / 100 * 100 ELSE e.n * 3 / 46 - floor(random() * 100)::bigint END,
	CASE WHEN random() < 0.75 THEN (e.n / 46) / 100 * 100 + 1 ELSE e.n / 46 - floor(random() * 1000)::bigint END,
	round(power(10, random() * 6) * 100)::bigint,
	'$NX_BASE'::timestamptz + e.n * interval '$us microseconds' - random() * interval '$NX_JITTER'
  FROM (SELECT s.b + i AS n FROM (SELECT nextval('bench.nx_seq') AS b) s, generate_series(0, $((NX_BATCH - 1))) i) e;
EOF
}

# nx_batch_sql Q: the query's results computed from every bid at once, in
# the shape of its output table (key, window_start, window_end, result).
nx_batch_sql() {
	case "$1" in
		q5) cat <<EOF ;;
SELECT auction, ws, ws + interval '10 seconds', count(*)
  FROM (SELECT auction, date_bin('2 seconds', date_time, '$NX_EPOCH') - k * interval '2 seconds' AS ws
		  FROM bench.nx_bids, generate_series(0, 4) k) w
 GROUP BY auction, ws
EOF
		q7) cat <<EOF ;;
SELECT auction, ws, ws + interval '10 seconds', max(price)
  FROM (SELECT auction, price, date_bin('10 seconds', date_time, '$NX_EPOCH') AS ws FROM bench.nx_bids) w
 GROUP BY auction, ws
EOF
		q11) cat <<EOF ;;
SELECT bidder, min(date_time), max(date_time) + interval '10 seconds', count(*)
  FROM (SELECT bidder, date_time, sum(brk) OVER (PARTITION BY bidder ORDER BY date_time) AS sid
		  FROM (SELECT bidder, date_time,
					   CASE WHEN date_time - lag(date_time) OVER (PARTITION BY bidder ORDER BY date_time)
							<= interval '10 seconds' THEN 0 ELSE 1 END AS brk
				  FROM bench.nx_bids) a) b
 GROUP BY bidder, sid
EOF
	esac
}

# nx_result_sql Q SIDE: what a side ended with, in the same shape.
nx_result_sql() {
	case "$2:$1" in
		states:*) echo "SELECT * FROM bench.nx_$1_out" ;;
		tables:q5) echo "SELECT auction, window_start, window_start + interval '10 seconds', n FROM bench.nx_q5_t" ;;
		tables:q7) echo "SELECT auction, window_start, window_start + interval '10 seconds', price FROM bench.nx_q7_t" ;;
		tables:q11) echo "SELECT * FROM bench.nx_q11_t" ;;
	esac
}

# nx_answer_sql Q RESULT: the query's answer from its results (RESULT: a
# query in the shape above): q5's hot items (the auctions with the most bids
# of each window), q7's highest bids (each window's highest price, and the
# bids at that price in the window), q11's sessions themselves.
nx_answer_sql() {
	case "$1" in
		q5) echo "SELECT k, ws, n FROM (SELECT r.*, max(n) OVER (PARTITION BY ws) AS top FROM ($2) r(k, ws, we, n)) h WHERE n = top" ;;
		q7) echo "SELECT b.auction, b.bidder, b.price, b.date_time, m.ws FROM (SELECT ws, we, max(p) AS p FROM ($2) r(k, ws, we, p) GROUP BY ws, we) m
	JOIN bench.nx_bids b ON b.price = m.p AND b.date_time >= m.ws AND b.date_time < m.we" ;;
		q11) echo "$2" ;;
	esac
}

# nx_compare Q SIDE: "rows|batch rows|differing rows|answer rows|answer
# differing rows" of a side's results against batch SQL over the same bids
# (differing: rows in one and not the other, duplicates counted).
nx_compare() {
	local got want
	got=$(nx_result_sql "$1" "$2")
	want=$(nx_batch_sql "$1")
	sql1 "WITH got AS MATERIALIZED ($got), want AS MATERIALIZED ($want),
	ga AS MATERIALIZED ($(nx_answer_sql "$1" 'SELECT * FROM got')),
	wa AS MATERIALIZED ($(nx_answer_sql "$1" 'SELECT * FROM want'))
SELECT (SELECT count(*) FROM got), (SELECT count(*) FROM want),
	(SELECT count(*) FROM ((TABLE got EXCEPT ALL TABLE want) UNION ALL (TABLE want EXCEPT ALL TABLE got)) d),
	(SELECT count(*) FROM ga),
	(SELECT count(*) FROM ((TABLE ga EXCEPT ALL TABLE wa) UNION ALL (TABLE wa EXCEPT ALL TABLE ga)) d)"
}

# nx_prepare Q SIDE: empty tables, the sequence from 0, and the side's
# trigger (and state) on the bid table.
nx_prepare() {
	local q=$1 side=$2
	sql bench >>"$NX_LOG" 2>&1 <<SQL || return 1
DROP TRIGGER IF EXISTS nx_feed ON bench.nx_bids;
SELECT state.drop_state('nx_$q', if_exists => true);
TRUNCATE bench.nx_bids, bench.nx_q5_out, bench.nx_q7_out, bench.nx_q11_out, bench.nx_late,
	bench.nx_q5_t, bench.nx_q7_t, bench.nx_q11_t;
ALTER SEQUENCE bench.nx_seq RESTART;
VACUUM bench.nx_bids, bench.nx_q5_t, bench.nx_q7_t, bench.nx_q11_t;
SQL
	case "$side" in
		states) sql bench >>"$NX_LOG" 2>&1 <<SQL ;;
SELECT state.create_state('nx_$q', 'window', 'bigint', 'bigint', backend => 'memory', $(nx_win "$q"),
	$(nx_sink "$q"), out_of_orderness => '$NX_OOO', late => 'bench.nx_late_fn(bigint,timestamptz,bigint)');
CREATE TRIGGER nx_feed AFTER INSERT ON bench.nx_bids REFERENCING NEW TABLE AS new_rows
	FOR EACH STATEMENT EXECUTE FUNCTION state.feed('nx_$q', '$(nx_key "$q")', 'date_time', 'price');
SQL
		tables) sql bench >>"$NX_LOG" 2>&1 <<SQL ;;
CREATE TRIGGER nx_feed AFTER INSERT ON bench.nx_bids REFERENCING NEW TABLE AS new_rows
	FOR EACH STATEMENT EXECUTE FUNCTION bench.nx_${q}_trigger();
SQL
		none) : ;;
	esac
}

# nx_drain Q: after the feed, the watermark to 'infinity', then wait until
# the state holds no key (every window fired and removed), in one statement
# on the server that looks every millisecond (a client's round trips and
# sleeps would add their own time to the drain); fails when its entries
# have not moved for NX_STALL_S.
nx_drain() {
	sql bench >>"$NX_LOG" 2>&1 <<SQL
DO \$\$
DECLARE
	n bigint;
	last bigint;
	moved timestamptz := clock_timestamp();
BEGIN
	PERFORM state.advance_watermark('nx_$1', 'infinity');
	LOOP
		SELECT entries INTO n FROM state.states WHERE name = 'nx_$1';
		EXIT WHEN n = 0;
		IF n IS DISTINCT FROM last THEN
			last := n;
			moved := clock_timestamp();
		ELSIF clock_timestamp() - moved > interval '$NX_STALL_S seconds' THEN
			RAISE EXCEPTION 'nexmark: nx_$1 still holds % keys after $NX_STALL_S s without progress', n;
		END IF;
		PERFORM pg_sleep(0.001);
	END LOOP;
END
\$\$;
SQL
}

# nx_run Q SIDE CLIENTS ROUND: one run; records its "nx run" line: query
# side clients round events feed_s drain_s rows batch_rows differing
# answer_rows answer_differing late windows_open failures status.
nx_run() {
	local q=$1 side=$2 c=$3 round=$4 id per t_start t_end t_done rc events rows want diff arows adiff late=0 open=0 failures=0 status verdict
	id="nx-$q-$side-c$c-r$round"
	per=$((NX_EVENTS / (c * NX_BATCH)))
	[ "$per" -gt 0 ] || per=1
	events=$((per * c * NX_BATCH))
	if ! nx_prepare "$q" "$side"; then
		tail -n 3 "$NX_LOG" >&2
		nx_fail "$q $side, $c client(s) (preparing)"
		raw nx run "$q" "$side" "$c" "$round" ERR
		return 0
	fi
	rc=0
	t_start=$(date +%s%N)
	as_pg timeout -k 10 3600 "$PGBIN/pgbench" -n -M "$PROTOCOL" -h "$WORK" -p "$PORT" -U postgres \
		-t "$per" -c "$c" -j $((c < THREADS_MAX ? c : THREADS_MAX)) -f "$WORK/scripts/nexmark.pgbench" bench \
		>"$WORK/out/$id.txt" 2>&1 || rc=$?
	t_end=$(date +%s%N)
	if [ "$rc" -ne 0 ]; then
		tail -n 5 "$WORK/out/$id.txt" >&2
		nx_fail "$q $side, $c client(s) (pgbench exit $rc)"
		raw nx run "$q" "$side" "$c" "$round" ERR
		return 0
	fi
	if [ "$side" = states ] && ! nx_drain "$q"; then
		tail -n 3 "$NX_LOG" >&2
		nx_fail "$q states, $c client(s) (the windows did not all fire)"
		raw nx run "$q" "$side" "$c" "$round" ERR
		return 0
	fi
	t_done=$(date +%s%N)
	if [ "$(sql1 "SELECT count(*) FROM bench.nx_bids")" != "$events" ]; then
		nx_fail "$q $side, $c client(s) (the bid table does not hold the $events bids fed)"
		raw nx run "$q" "$side" "$c" "$round" ERR
		return 0
	fi
	rows=- want=- diff=- arows=- adiff=-
	[ "$side" = states ] || late=-
	if [ "$side" != none ]; then
		IFS='|' read -r rows want diff arows adiff < <(nx_compare "$q" "$side" 2>>"$NX_LOG" || echo '?|?|?|?|?')
	fi
	if [ "$side" = states ]; then
		IFS='|' read -r late open failures < <(sql1 "SELECT (SELECT late FROM state.stats WHERE name = 'nx_$q'),
			(SELECT count(*) FROM state.windows('nx_$q', NULL::bigint)),
			(SELECT count(*) FROM state.timer_failures WHERE name = 'nx_$q')" 2>>"$NX_LOG" || echo '?|?|?')
	fi
	status=ok verdict='equal to batch SQL'
	[ "$side" = none ] && verdict='no results'
	if [ "$side" != none ] && { [ "$diff" != 0 ] || [ "$adiff" != 0 ]; } ||
		{ [ "$side" = states ] && { [ "$late" != 0 ] || [ "$open" != 0 ] || [ "$failures" != 0 ]; }; }; then
		status=DIFFER verdict='DIFFERENT FROM BATCH SQL'
		nx_fail "$q $side, $c client(s): the results DIFFER from batch SQL over the same bids ($rows rows, batch SQL $want, $diff in one and not the other; of the answer's $arows rows, $adiff; $late bids dropped as late, $open windows left open, $failures emit failures)"
	fi
	raw nx run "$q" "$side" "$c" "$round" "$events" \
		"$(awk -v ns=$((t_end - t_start)) 'BEGIN { printf "%.3f", ns / 1e9 }')" \
		"$(awk -v ns=$((t_done - t_end)) 'BEGIN { printf "%.3f", ns / 1e9 }')" \
		"$rows" "$want" "$diff" "$arows" "$adiff" "$late" "$open" "$failures" "$status"
	printf '   %-4s %-6s c=%-2s round %s %8s events %9.0f/s end to end (drain %.2f s), %s result rows, %s\n' \
		"$q" "$side" "$c" "$round" "$events" \
		"$(awk -v e="$events" -v ns=$((t_done - t_start)) 'BEGIN { printf "%.1f", e / (ns / 1e9) }')" \
		"$(awk -v ns=$((t_done - t_end)) 'BEGIN { printf "%.3f", ns / 1e9 }')" "$rows" \
		"$verdict" >&2
}

t_nx=$(date +%s)
if [ "$(sql1 "SELECT count(*) FROM pg_proc WHERE pronamespace = 'state'::regnamespace AND proname = 'feed'")" = 0 ]; then
	note "nexmark cases skipped: function state.feed does not exist in this build"
elif ! nx_setup >>"$NX_LOG" 2>&1; then
	tail -n 5 "$NX_LOG" >&2
	nx_fail "(creating the tables)"
else
	nx_script >"$WORK/scripts/nexmark.pgbench"
	raw nx script "$(tr '\n\t' '  ' <"$WORK/scripts/nexmark.pgbench" | tr -s ' ')"
	log "nexmark cases: $NX_EVENTS bids in statements of $NX_BATCH, $NX_CLIENTS client(s), $NX_RATE bids per second of event time"
	for round in $(seq 1 "$ROUNDS"); do
		for c in $NX_CLIENTS; do
			nx_run - none "$c" "$round"
			for q in $NX_QUERIES; do
				nx_run "$q" states "$c" "$round"
				nx_run "$q" tables "$c" "$round"
			done
		done
	done
	sql bench >>"$NX_LOG" 2>&1 <<'SQL' || true
DROP TRIGGER IF EXISTS nx_feed ON bench.nx_bids;
SELECT count(state.drop_state(n, if_exists => true)) FROM unnest(ARRAY['nx_q5', 'nx_q7', 'nx_q11']) n;
DROP TABLE bench.nx_bids, bench.nx_q5_out, bench.nx_q7_out, bench.nx_q11_out, bench.nx_late,
	bench.nx_q5_t, bench.nx_q7_t, bench.nx_q11_t;
SQL
fi
meta nx_seconds "$(($(date +%s) - t_nx))"
