# The shared cache of rocksdb entries (state_backend.rocksdb_shared_cache_size):
# sessions read cached keys without the state worker, and what they read is
# never older than what they saw before or than what they wrote themselves.
# Truncate, drop, restore, TTL, large values, aborted statements, eviction
# and a worker restart all keep it right.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $tmp = PostgreSQL::Test::Utils::tempdir;

# 256kB: 240 sets of 8 slots, small enough for the eviction cases.
my $node = new_state_node(
	'rocks_cache',
	conf => "state_backend.backend = rocksdb\n"
	  . "state_backend.rocksdb_shared_cache_size = '256kB'\n");
ok(defined wait_for_worker($node), 'state worker running');
my $log_offset = -s $node->logfile;

sub run_sql { return $node->safe_psql('postgres', $_[0]); }

run_sql(q{
SELECT state.create_state('hot', 'value', 'int', 'bigint');
SELECT state.create_state('cnt', 'reducing', 'int', 'bigint', reducer => 'sum');
CREATE SEQUENCE wseq;
CREATE UNLOGGED TABLE written(k int, v bigint);
CREATE UNLOGGED TABLE reader_seen(reader int PRIMARY KEY, hot bigint[], cnt bigint[]);
INSERT INTO reader_seen SELECT r, array_fill(0::bigint, ARRAY[100]), array_fill(0::bigint, ARRAY[100])
  FROM generate_series(4, 7) r;

CREATE FUNCTION must(ok boolean, what text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF ok IS NOT TRUE THEN RAISE EXCEPTION 'failed: %', what; END IF;
END $$;

-- One round of a reader: every hot key, each compared with what this
-- reader saw of it before.
CREATE FUNCTION reader_round(r int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  seen_hot bigint[];
  seen_cnt bigint[];
  v bigint;
  c bigint;
BEGIN
  SELECT hot, cnt INTO seen_hot, seen_cnt FROM reader_seen WHERE reader = r;
  FOR k IN 1..100 LOOP
    v := state.value_get('hot', k, 0::bigint);
    c := state.value_get('cnt', k, 0::bigint);
    IF v < seen_hot[k] OR c < seen_cnt[k] THEN
      RAISE EXCEPTION 'reader % saw key % go back: value % after %, count % after %',
        r, k, v, seen_hot[k], c, seen_cnt[k];
    END IF;
    seen_hot[k] := v;
    seen_cnt[k] := c;
  END LOOP;
  UPDATE reader_seen SET hot = seen_hot, cnt = seen_cnt WHERE reader = r;
END $$;
});

############################################################ coherence

# Clients 0-3 write (each owns 25 keys, with increasing values, and counts
# them); clients 4-7 read.  A writer reads its key back in the statement
# that wrote it (the write is posted, the read must see it) and after.
my $TX = 600;
my $r = run_pgbench(
	$node, "-n -c 8 -j 2 -t $TX",
	{
		'coherence.sql' => q{
\if :client_id < 4
\set key :client_id * 25 + random(1, 25)
SELECT nextval('wseq') AS v \gset
SELECT must(state.value_get('hot', :key, 0::bigint) = :v, 'read in the writing statement')
  FROM (SELECT state.value_set('hot', :key, :v::bigint) OFFSET 0) w;
SELECT state.reduce('cnt', :key, 1::bigint);
INSERT INTO written VALUES (:key, :v);
SELECT must(state.value_get('hot', :key, 0::bigint) = :v, 'read after the writing statement');
\else
SELECT reader_round(:client_id);
\endif
}
	});
is($r->{ret}, 0, 'coherence: pgbench exits 0');
is($r->{processed}, 8 * $TX, 'coherence: every transaction went through');
unlike($r->{stderr}, qr/ERROR|failed|go back/,
	'no reader saw a value go back, no writer missed its own write')
  or diag $r->{stderr};
is( run_sql(q{
SELECT count(*) FROM (SELECT k, max(v) AS v, count(*) AS n FROM written GROUP BY k) w
 WHERE state.value_get('hot', w.k, 0::bigint) <> w.v
    OR state.value_get('cnt', w.k, 0::bigint) <> w.n}),
	0, 'every hot key holds its last write, every count the writes made');
is(run_sql(q{SELECT count(DISTINCT k) FROM written}),
	100, 'the writers touched all 100 hot keys');

############################################################ no round trip

# With the worker stopped, a cached key is still read; a key not cached
# waits for the worker.  (A session's read after its own posted write is
# checked by the writers above, in the statement that wrote.)
my $wpid = worker_pid($node);
run_sql(q{SELECT state.value_get('hot', k, 0::bigint) FROM generate_series(1, 5) k});
kill 'STOP', $wpid;
my ($ret, $out, $err) = $node->psql('postgres',
	q{SET state_backend.request_timeout = '2s';
	  SELECT sum(state.value_get('hot', k, 0::bigint)) = (SELECT sum(m) FROM (SELECT max(v) m FROM written WHERE k <= 5 GROUP BY k) x)
	    FROM generate_series(1, 5) k});
is($ret, 0, 'cached keys are read while the worker is stopped');
is($out, 't', '... and their values are the last written');
($ret, $out, $err) = $node->psql('postgres',
	q{SET state_backend.request_timeout = '1s'; SELECT state.value_get('hot', 5000, 0::bigint)});
like($err, qr/did not answer/, 'a key not cached waits for the worker');
kill 'CONT', $wpid;

############################################################ invalidation

run_sql(q{SELECT state.create_state('v', 'value', 'int', 'text')});
run_sql(q{SELECT state.value_set('v', 1, 'small'), state.value_get('v', 1, NULL::text)});
run_sql(q{SELECT state.value_set('v', 1, repeat('x', 300))});
is(run_sql(q{SELECT length(state.value_get('v', 1, NULL::text))}), 300,
	'a value too large for the cache replaces the cached one');
run_sql(q{SELECT state.value_set('v', 1, 'small again'), state.value_get('v', 1, NULL::text)});
is(run_sql(q{SELECT state.value_get('v', 1, NULL::text)}), 'small again', 'and a small one again');

($ret, $out, $err) = $node->psql('postgres',
	q{SELECT must(false, 'after the write') FROM (SELECT state.value_set('v', 2, 'posted') OFFSET 0) w});
like($err, qr/failed: after the write/, 'a statement fails after posting a write');
is(run_sql(q{SELECT state.value_get('v', 2, NULL::text)}), 'posted',
	'the next statement reads the write its failed statement posted');

run_sql(q{SELECT state.truncate('v')});
is(run_sql(q{SELECT coalesce(state.value_get('v', 1, NULL::text), 'none')}), 'none',
	'truncate: a cached key is gone');

run_sql(q{SELECT state.value_set('v', 3, 'before drop'), state.value_get('v', 3, NULL::text)});
run_sql(q{SELECT state.drop_state('v'); SELECT state.create_state('v', 'value', 'int', 'text')});
is(run_sql(q{SELECT coalesce(state.value_get('v', 3, NULL::text), 'none')}), 'none',
	'drop and create again: the old state\'s cached key is gone');

run_sql(q{SELECT state.value_set('v', 4, 'in snapshot')});
for my $format (qw(native canonical))
{
	my $id = run_sql(qq{SELECT state.snapshot('$tmp/snap_$format', '$format')});
	is(wait_snapshot_status($node, $id), 'completed', "$format snapshot taken");
}
for my $format (qw(native canonical))
{
	run_sql(q{SELECT state.value_set('v', 4, 'after snapshot'), state.value_get('v', 4, NULL::text)});
	is(run_sql(q{SELECT state.value_get('v', 4, NULL::text)}), 'after snapshot', 'a later write is read');
	run_sql(qq{SELECT state.restore('$tmp/snap_$format')});
	is(run_sql(q{SELECT state.value_get('v', 4, NULL::text)}), 'in snapshot',
		"restore of a $format snapshot: the restored value is read, not the cached one");
}

run_sql(q{SELECT state.create_state('t', 'value', 'int', 'int', ttl => '1 hour')});
run_sql(q{SELECT state.value_set('t', 1, 10), state.value_get('t', 1, 0)});
is(run_sql(q{SELECT state.value_get('t', 1, 0)}), 10, 'TTL state: read before expiry');
run_sql(q{SELECT state._advance_ttl_clock('61 minutes')});
is(run_sql(q{SELECT state.value_get('t', 1, 0)}), 0, 'TTL state: the cached value expired');

run_sql(q{SELECT state.value_set('hot', 7, 70::bigint), state.value_get('hot', 7, 0::bigint)});
run_sql(q{SELECT state.clear('hot', 7)});
is(run_sql(q{SELECT state.value_get('hot', 7, -7::bigint)}), -7, 'clear: the key reads as absent');

############################################################ eviction

# 20000 keys through a cache of under 2000 slots, read twice.
run_sql(q{
SELECT state.create_state('big', 'value', 'int', 'bigint');
SELECT count(state.value_set('big', i, i * 3::bigint)) FROM generate_series(1, 20000) i;
});
for my $pass (1, 2)
{
	is( run_sql(q{SELECT count(*) FROM generate_series(1, 20000) i
	               WHERE state.value_get('big', i, 0::bigint) <> i * 3}),
		0, "eviction, pass $pass: every key reads its value");
}
run_sql(q{SELECT count(state.clear('big', i)) FROM generate_series(1, 20000, 2) i});
is( run_sql(q{SELECT count(*) FROM generate_series(1, 20000) i
               WHERE state.value_get('big', i, -1::bigint) <> CASE WHEN i % 2 = 1 THEN -1 ELSE i * 3 END}),
	0, 'after removing every other key, each reads right');

############################################################ worker restart

run_sql(q{SELECT state.value_set('big', 2, 222::bigint), state.value_get('big', 2, 0::bigint)});
my $old = worker_pid($node);
kill 'TERM', $old;
my $new = wait_for_worker($node, not => $old);
ok(defined $new && $new != $old, 'the state worker restarted');
# A request sent before the new worker serves its channel fails: wait for it.
ok($node->poll_query_until('postgres', q{SELECT state.value_get('big', 20001, 5::bigint) = 5}),
	'the new worker serves requests');
is(run_sql(q{SELECT state.value_get('big', 2, 0::bigint)}), 222,
	'after a worker restart the key reads its last write');
run_sql(q{SELECT state.value_set('big', 2, 333::bigint)});
is(run_sql(q{SELECT state.value_get('big', 2, 0::bigint)}), 333, 'and the next write');

############################################################ block cache figures

# Values past the shared cache's slots are read by the worker from RocksDB;
# once a snapshot has flushed them to SST files, those reads go through
# RocksDB's block cache, and state.worker counts its hits and misses.
run_sql(q{
SELECT state.create_state('wide', 'value', 'int', 'text');
SELECT count(state.value_set('wide', i, repeat(md5(i::text), 8))) FROM generate_series(1, 2000) i;
});
my $flush = run_sql(qq{SELECT state.snapshot('$tmp/snap_blocks', 'native')});
is(wait_snapshot_status($node, $flush), 'completed', 'a snapshot flushes the memtables');
my $blocks = q{SELECT string_agg(coalesce(value::text, 'null'), ' ' ORDER BY name) FROM state.worker
                WHERE name IN ('rocksdb_block_cache_hits', 'rocksdb_block_cache_misses')};
my ($hits0, $misses0) = split / /, run_sql($blocks);
# (Read by the worker: the figures are its block cache's, not sessions' views'.)
is(run_sql(q{SET state_backend.rocksdb_session_reads = off;
              SELECT count(*) FROM generate_series(1, 2000) i
              WHERE state.value_get('wide', i, ''::text) = repeat(md5(i::text), 8)}),
	2000, 'every wide value reads back');
my ($hits1, $misses1) = split / /, run_sql($blocks);
cmp_ok($misses1, '>', $misses0, "block cache misses counted ($misses0 to $misses1)");
cmp_ok($hits1, '>', $hits0, "block cache hits counted ($hits0 to $hits1)");
cmp_ok($hits1 - $hits0 + $misses1 - $misses0, '>=', 2000,
	'one block lookup or more per value read');

# With state_backend.track_stats off in the server's settings, the worker
# stops RocksDB's counting as well.
run_sql(q{ALTER SYSTEM SET state_backend.track_stats = off; SELECT pg_reload_conf()});
ok($node->poll_query_until('postgres', q{SELECT current_setting('state_backend.track_stats') = 'off'}),
	'track_stats is off');
# The worker reloads its settings when it next wakes: give it a request first.
run_sql(q{SELECT state.value_get('wide', 1, ''::text)});
my ($hits2, $misses2) = split / /, run_sql($blocks);
run_sql(q{SELECT count(state.value_get('wide', i, ''::text)) FROM generate_series(1, 2000) i});
is(run_sql($blocks), "$hits2 $misses2", 'no block is counted with track_stats off');
run_sql(q{ALTER SYSTEM RESET state_backend.track_stats; SELECT pg_reload_conf()});

is(scalar(log_crashes($node, $log_offset)), 0, 'no crash in the server log');

$node->stop;
done_testing();
