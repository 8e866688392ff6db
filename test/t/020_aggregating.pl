# Aggregating states under concurrent writers: 4 pgbench clients fold
# values into 10 hot keys of aggregating states on the memory, the rocksdb
# and the lmdb backend (contrib/lmdb, a backend of another library): a sum
# of ones, and avg(int8), whose transition state is internal and goes
# through its serial functions.  Every fold is kept: each key's count is
# exactly the calls made on it, its average exact.  After a checkpoint and a
# restart, every state comes back (heap and lmdb ones from the checkpoint,
# the rocksdb one from its own files) and folds on.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $CLIENTS = 4;
my $TX = 500;

my $ckpt = PostgreSQL::Test::Utils::tempdir;
my $node = new_state_node('aggregating', lmdb => 1, conf => "state_backend.checkpoint_dir = '$ckpt'\n");
ok(defined wait_for_worker($node), 'state worker running');
my $log_offset = -s $node->logfile;

$node->safe_psql(
	'postgres', q{
CREATE UNLOGGED TABLE ag_log (k int);
SELECT state.create_state('cnt_' || b, 'aggregating', 'int', 'int8', backend => b, aggregate => 'sum(int8)'),
       state.create_state('avg_' || b, 'aggregating', 'int', 'int8', backend => b, aggregate => 'avg(int8)')
  FROM unnest(ARRAY['memory', 'rocksdb', 'lmdb']) b;
});

my $r = run_pgbench(
	$node,
	"-n -c $CLIENTS -j 2 -t $TX",
	{
		'aggregate.sql' => q{
\set k random(1, 10)
SELECT state.aggregate('cnt_memory', :k, 1::int8), state.aggregate('cnt_rocksdb', :k, 1::int8),
       state.aggregate('avg_memory', :k, (:k * 2)::int8), state.aggregate('avg_rocksdb', :k, (:k * 2)::int8),
       state.aggregate('cnt_lmdb', :k, 1::int8), state.aggregate('avg_lmdb', :k, (:k * 2)::int8);
INSERT INTO ag_log VALUES (:k);
}
	});
is($r->{ret}, 0, 'pgbench exits 0');
is($r->{processed}, $CLIENTS * $TX, 'every transaction went through');
unlike($r->{stderr}, qr/ERROR/, 'no error') or diag $r->{stderr};

for my $b ('memory', 'rocksdb', 'lmdb')
{
	is( $node->safe_psql(
			'postgres', qq{
SELECT count(*) FROM (SELECT k, count(*) AS n FROM ag_log GROUP BY k) l
 WHERE state.value_get('cnt_$b', l.k, 0::numeric) <> l.n
    OR state.value_get('avg_$b', l.k, 0::numeric) <> l.k * 2}),
		0, "$b: every key's count is exactly the calls made on it, and its average exact");
	is( $node->safe_psql(
			'postgres', qq{SELECT sum(state.value_get('cnt_$b', k, 0::numeric)) FROM generate_series(1, 10) k}),
		$CLIENTS * $TX, "$b: the counts add up to every call");
}

my $id = $node->safe_psql('postgres', 'SELECT state.snapshot()');
is(wait_snapshot_status($node, $id), 'completed', 'checkpoint taken');
# The scratch directory of a session that died reading a native rocksdb
# snapshot (state.snapshot_entries) goes at the next start.
my $scratch = $node->data_dir . '/pg_state_backend/rocksdb-read-4194300-1';
mkdir $scratch or die "mkdir $scratch: $!";
$node->restart;
ok(defined wait_for_worker($node), 'state worker running after the restart');
# A state call waits until the worker is ready, which it is after its sweep.
$node->safe_psql('postgres', 'SELECT count(*) FROM state.states');
ok(!-d $scratch, 'a dead session\'s scratch directory is gone after the restart');
$node->safe_psql('postgres',
	q{SELECT state.aggregate(b || '_' || s, 1, 2::int8) FROM unnest(ARRAY['cnt', 'avg']) b, unnest(ARRAY['memory', 'rocksdb', 'lmdb']) s});
$node->safe_psql('postgres', 'INSERT INTO ag_log VALUES (1)');
for my $b ('memory', 'rocksdb', 'lmdb')
{
	is( $node->safe_psql(
			'postgres', qq{
SELECT count(*) FROM (SELECT k, count(*) AS n FROM ag_log GROUP BY k) l
 WHERE state.value_get('cnt_$b', l.k, 0::numeric) <> l.n + CASE WHEN l.k = 1 THEN 1 ELSE 0 END}),
		0, "$b: after the restart every count is kept, and the next fold counts");
}

is(scalar(log_crashes($node, $log_offset)), 0, 'no crash in the server log');
$node->stop;
done_testing();
