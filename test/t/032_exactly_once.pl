# Exactly-once processing with transactional states: 4 consumers move
# 200,000 events from a table into reducing and map states (memory,
# rocksdb and lmdb; logged), each batch one transaction that deletes the
# events it folds.  Meanwhile some batches roll back on purpose, some
# consumers are killed in the middle of a batch (pg_terminate_backend), the
# server crashes once (stop('immediate')) and a snapshot is taken.  Once the
# table is empty, every state equals the GROUP BY over all the events: no
# event counted twice, none lost.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $events = 200_000;
my $keys = 1000;
my $chkroot = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';
my $node = new_state_node(
	'exactly_once',
	lmdb => 1,
	init => { allows_streaming => 1 },
	conf => "state_backend.checkpoint_dir = '$chkroot'\n"
	  . "state_backend.memory_limit = '256MB'\n"
	  . "max_connections = 40\n");
ok(defined wait_for_worker($node), 'state worker running');

$node->safe_psql(
	'postgres', qq{
SELECT state.create_state('r_' || b, 'reducing', 'int', 'bigint', reducer => 'sum',
                          backend => b, logged => true, transactional => true)
  FROM unnest(ARRAY['memory', 'rocksdb', 'lmdb']) b;
SELECT state.create_state('m_' || b, 'map', 'int', 'int', map_key_type => 'bigint',
                          backend => b, logged => true, transactional => true)
  FROM unnest(ARRAY['memory', 'rocksdb']) b;
CREATE TABLE events_all (id bigint PRIMARY KEY, k int NOT NULL, amount int NOT NULL);
INSERT INTO events_all SELECT i, i % $keys, (i * 7919) % 13 + 1 FROM generate_series(1, $events) i;
CREATE TABLE events (LIKE events_all INCLUDING ALL);
INSERT INTO events SELECT * FROM events_all;
CREATE TABLE batches (outcome text);
});

# One batch: take up to 500 events, fold them, delete them; one batch in
# ten rolls back instead (and says so in a table that rolls back with it,
# so only the committed ones are counted).  Every batch stays open a few
# milliseconds after its fold, so that a kill can land in the middle of
# one, and a run of N batches lasts at least N times that, however fast the
# machine.
my $consumer = q{
\set r random(1, 10)
BEGIN;
WITH batch AS (
    DELETE FROM events
     WHERE id IN (SELECT id FROM events LIMIT 500 FOR UPDATE SKIP LOCKED)
    RETURNING id, k, amount)
SELECT count(state.reduce('r_memory', k, amount::bigint))
     + count(state.reduce('r_rocksdb', k, amount::bigint))
     + count(state.reduce('r_lmdb', k, amount::bigint))
     + count(state.map_put('m_memory', k, id, amount))
     + count(state.map_put('m_rocksdb', k, id, amount)) AS folded
  FROM batch;
SELECT pg_sleep(0.005);
INSERT INTO batches VALUES ('committed');
\if :r = 1
ROLLBACK;
\else
COMMIT;
\endif
};

sub left
{
	return $node->safe_psql('postgres', 'SELECT count(*) FROM events');
}

sub running
{
	my ($h) = @_;
	return $h->{run}->pumpable;
}

# wait_consumed($n): wait (bounded) until at most $n events are left.
sub wait_consumed
{
	my ($n) = @_;
	return $node->poll_query_until('postgres', "SELECT count(*) <= $n FROM events");
}

sub consumers
{
	my ($tx) = @_;
	return start_pgbench($node, "-n -c 4 -j 2 -t $tx", { consume => $consumer },
		timeout => $PostgreSQL::Test::Utils::timeout_default);
}

# Round 1: once the first batches are in, consumers killed mid-batch, one
# every 100 ms while they run (a run of 60 batches each lasts 300 ms at least).
my $killed = 0;
my $h = consumers(60);
ok(wait_consumed($events - 500), 'the consumers commit batches');
while ($killed < 4 && running($h))
{
	usleep(100_000);
	$killed += $node->safe_psql(
		'postgres', q{
SELECT count(pg_terminate_backend(pid)) FROM (
    SELECT pid FROM pg_stat_activity
     WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
       AND state IN ('active', 'idle in transaction')
     ORDER BY random() LIMIT 1) p});
}
finish_pgbench($h);
ok($killed > 0, "consumers were killed in the middle of batches ($killed)");
my $after_kills = left();
ok($after_kills < $events, "events were consumed meanwhile ($after_kills left)");

# A snapshot while consumers commit: it is made between their commits.
$h = consumers(20);
usleep(200_000);
my $snap = $node->safe_psql('postgres', 'SELECT state.snapshot()');
is(wait_snapshot_status($node, $snap), 'completed', 'a snapshot taken during commits completes');
finish_pgbench($h);
# Each batch folds the same events into the three backends' states: a cut
# that held part of a transaction would leave them apart.
my $path = $node->safe_psql('postgres', "SELECT path FROM state.snapshots WHERE id = $snap");
is( $node->safe_psql(
		'postgres', qq{
SELECT count(*) || ' ' || count(*) FILTER (WHERE m.v IS DISTINCT FROM r.v OR m.v IS DISTINCT FROM l.v)
  FROM state.snapshot_entries('$path', 'r_memory', NULL::int, NULL::bigint) m(k, v)
  FULL JOIN state.snapshot_entries('$path', 'r_rocksdb', NULL::int, NULL::bigint) r(k, v) USING (k)
  FULL JOIN state.snapshot_entries('$path', 'r_lmdb', NULL::int, NULL::bigint) l(k, v) USING (k)}),
	"$keys 0",
	'the snapshot holds every transaction whole: its three states agree on every key');

# Round 2: the server crashes while consumers commit, once ten more batches
# are in (a run of 1000 batches each lasts 5 s at least).
my $before_crash = left();
$h = consumers(1000);
ok(wait_consumed($before_crash - 5000), 'the consumers commit batches again');
my $was_running = running($h);
$node->stop('immediate');
finish_pgbench($h);
ok($was_running, 'the server crashed while the consumers ran');
$node->start;
ok(defined wait_for_worker($node), 'the state worker is back after the crash');
diag('events left after the crash: ' . left());

# Then the rest, until nothing is left.
for my $round (1 .. 50)
{
	last if left() == 0;
	my $r = run_pgbench($node, '-n -c 4 -j 2 -t 50', { consume => $consumer },
		timeout => $PostgreSQL::Test::Utils::timeout_default);
	diag("round $round: $r->{stderr}") if $r->{ret} != 0;
}
is(left(), '0', 'every event was consumed');
ok($node->safe_psql('postgres', 'SELECT count(*) FROM batches') > 0,
	'batches committed');

# Every state equals the GROUP BY over all the events.
for my $b (qw(memory rocksdb lmdb))
{
	is( $node->safe_psql(
			'postgres', qq{
SELECT count(*) FROM (SELECT k, sum(amount) AS s FROM events_all GROUP BY k) g
  FULL JOIN state.entries('r_$b', NULL::int, NULL::bigint) e(k, v) ON e.k = g.k
 WHERE e.v IS DISTINCT FROM g.s}),
		'0',
		"reducing state on $b: every key's sum equals the GROUP BY");
}
for my $b (qw(memory rocksdb))
{
	is( $node->safe_psql(
			'postgres', qq{
SELECT count(*) FROM events_all a
  FULL JOIN (SELECT g.k, m.map_key AS id, m.value
               FROM generate_series(0, $keys - 1) g(k),
                    state.map_entries('m_$b', g.k, NULL::bigint, NULL::int) m) s
    ON s.id = a.id
 WHERE s.id IS NULL OR a.id IS NULL OR s.value <> a.amount OR s.k <> a.k}),
		'0',
		"map state on $b: every event once, under its key");
}

# And so they come back from WAL once more, after another crash.
my $digest = q{
SELECT sum(v) FROM state.entries('r_memory', NULL::int, NULL::bigint) e(k, v)
UNION ALL SELECT sum(v) FROM state.entries('r_rocksdb', NULL::int, NULL::bigint) e(k, v)
UNION ALL SELECT sum(v) FROM state.entries('r_lmdb', NULL::int, NULL::bigint) e(k, v)};
my $before = $node->safe_psql('postgres', $digest);
$node->stop('immediate');
$node->start;
ok(defined wait_for_worker($node), 'the state worker is back after a second crash');
is($node->safe_psql('postgres', $digest), $before, 'the states are as they were');

$node->stop;
done_testing();
