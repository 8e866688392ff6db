# One commit per pass of the state worker: the rocksdb writes of every
# session it served in a pass go to RocksDB as one write batch (and, for
# logged states, after one WAL flush), and each session's replies of the
# pass wait for it.  A read of a key that no write of the batch touched
# reads RocksDB without committing first.
#
# 1. Eight sessions read-modify-write a few hot keys and many cold ones at
#    once: reduce (a built-in fold, in the worker) and aggregate (a fold in
#    the session, stored by compare-and-set), logged and not, list appends
#    counted by list_length, and a value read back in the statement that
#    wrote it.  A read that skipped a commit it needed would read a value
#    that a write of the same pass had changed, and an increment would be
#    lost.  Every increment that was acknowledged is there, once.
# 2. A pass whose commit fails (the fault point write.rocksdb_group_commit
#    armed with error): the statement whose write waited for it fails with
#    that error, for a posted write and for a read-modify-write alike, and
#    the write is never applied, by a later commit or otherwise: the
#    instance fails and the worker restarts.  A read that waits for no
#    write is answered meanwhile.  Disarmed, writes and reads go on.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $chkroot = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';
my $node = new_state_node(
	'group_commit',
	init => { allows_streaming => 1 },
	conf => "state_backend.checkpoint_dir = '$chkroot'\n"
	  . "state_backend.backend = 'rocksdb'\n");
ok(defined wait_for_worker($node), 'state worker running');

$node->safe_psql('postgres', q{
SELECT state.create_state('ru', 'reducing', 'int', 'bigint', reducer => 'sum');
SELECT state.create_state('rl', 'reducing', 'int', 'bigint', reducer => 'sum', logged => true);
SELECT state.create_state('au', 'aggregating', 'int', 'bigint', aggregate => 'sum(bigint)');
SELECT state.create_state('al', 'aggregating', 'int', 'bigint', aggregate => 'sum(bigint)', logged => true);
SELECT state.create_state('ls', 'list', 'int', 'int');
SELECT state.create_state('vs', 'value', 'int', 'bigint');
CREATE SEQUENCE wseq;
CREATE FUNCTION must(ok boolean, what text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF ok IS NOT TRUE THEN RAISE EXCEPTION 'failed: %', what; END IF;
END $$;
});

############################################################ 1. concurrent read-modify-writes

# Each transaction adds one to a hot key (1-4) and to a cold one (101-1100)
# of every reducing and aggregating state, appends to a hot list, and
# writes a value of one of its own keys that it reads back in the same
# statement.
my $TX = 500;
my $r = run_pgbench(
	$node, "-n -c 8 -j 2 -t $TX",
	{
		'rmw.sql' => q{
\set hot random(1, 4)
\set cold random(101, 1100)
SELECT state.reduce('ru', :hot, 1::bigint), state.reduce('ru', :cold, 1::bigint);
SELECT state.reduce('rl', :hot, 1::bigint), state.reduce('rl', :cold, 1::bigint);
SELECT state.aggregate('au', :hot, 1::bigint), state.aggregate('au', :cold, 1::bigint);
SELECT state.aggregate('al', :hot, 1::bigint), state.aggregate('al', :cold, 1::bigint);
SELECT state.list_add('ls', :hot, :client_id);
\set own :client_id * 4 + random(1, 4)
SELECT nextval('wseq') AS v \gset
SELECT must(state.value_get('vs', :own, 0::bigint) = :v, 'a value read back in the statement that wrote it')
  FROM (SELECT state.value_set('vs', :own, :v::bigint) OFFSET 0) w;
}
	});
is($r->{ret}, 0, 'pgbench exits 0');
is($r->{processed}, 8 * $TX, 'every transaction went through');
unlike($r->{stderr}, qr/ERROR|failed/, 'no statement failed, every write was read back')
  or diag $r->{stderr};

my $total = 8 * $TX;
for my $s (qw(ru rl au al))
{
	is( $node->safe_psql('postgres', qq{
SELECT coalesce(sum(state.value_get('$s', k, 0::bigint)) FILTER (WHERE k <= 4), 0) || ' '
    || coalesce(sum(state.value_get('$s', k, 0::bigint)) FILTER (WHERE k > 100), 0)
  FROM generate_series(1, 1100) k}),
		"$total $total", "$s: every increment of the hot and the cold keys is there once");
}
is( $node->safe_psql('postgres',
		q{SELECT sum(state.list_length('ls', k)) FROM generate_series(1, 4) k}),
	$total, 'the hot lists hold every append');

# The same after a restart: what the batches wrote is in RocksDB (and WAL).
$node->restart;
ok(defined wait_for_worker($node), 'state worker running after a restart');
is( $node->safe_psql('postgres', q{
SELECT string_agg(sum::text, ' ' ORDER BY s) FROM (
  SELECT s, sum(state.value_get(s, k, 0::bigint)) AS sum
    FROM unnest(ARRAY['al', 'au', 'rl', 'ru']) s, generate_series(1, 1100) k GROUP BY s) t}),
	join(' ', (2 * $total) x 4), 'after a restart, every increment is there');

############################################################ 2. a failed commit

$node->safe_psql('postgres', q{
SELECT state.value_set('vs', 7, 70::bigint);
SELECT state.reduce('ru', 7, 70::bigint);
});
$node->safe_psql('postgres',
	q{ALTER SYSTEM SET state_backend.fault_points = 'write.rocksdb_group_commit:error'});
$node->reload;
# The worker reads the setting at its next round.
$node->poll_query_until('postgres', q{
SELECT count(*) > 0 FROM pg_settings WHERE name = 'state_backend.fault_points' AND setting <> ''})
  or die 'the fault point was not armed';

my $pid = worker_pid($node);
my ($ret, $out, $err) = $node->psql('postgres', q{SELECT state.value_set('vs', 7, 71::bigint)});
isnt($ret, 0, 'a posted write whose pass failed to commit fails');
like($err, qr/fault point "write\.rocksdb_group_commit"/, 'with the error of the commit')
  or diag $err;
ok(defined wait_for_worker($node, not => $pid), 'the worker restarted');
like(slurp_file($node->logfile), qr/state_backend worker restarts: a write to the storage of backend "rocksdb" failed/,
	'because the instance failed');
ok($node->poll_query_until('postgres', q{SELECT state.value_get('vs', 1000, 0::bigint) = 0}),
	'a read that waits for no write is answered, the fault point still armed');
$pid = worker_pid($node);
($ret, $out, $err) = $node->psql('postgres', q{SELECT state.reduce('ru', 7, 1::bigint)});
isnt($ret, 0, 'a reduce whose pass failed to commit fails');
like($err, qr/fault point "write\.rocksdb_group_commit"/, 'with the error of the commit')
  or diag $err;
ok(defined wait_for_worker($node, not => $pid), 'the worker restarted again');

$node->safe_psql('postgres', 'ALTER SYSTEM RESET state_backend.fault_points');
$node->reload;
$node->poll_query_until('postgres', q{SELECT true FROM (SELECT state.value_set('vs', 8, 80::bigint)) w})
  or die 'writes did not resume';
is( $node->safe_psql('postgres', q{
SELECT state.value_get('vs', 7, 0::bigint) || ' ' || state.value_get('ru', 7, 0::bigint)}),
	'70 70', 'the writes that were told they failed were never applied');
is( $node->safe_psql('postgres', q{
SELECT state.reduce('ru', 9, 5::bigint) || ' ' || state.value_get('vs', 8, 0::bigint)}),
	'5 80', 'disarmed, writes and reads go on');
my $crashes = log_crashes($node);
is($crashes, 0, 'no process crashed');

$node->stop;
done_testing();
