# A state worker that exits on its own with logged rocksdb writes in its
# write batch makes them before it goes.  A statement appends twice to a
# logged rocksdb list; the worker exits (a fault point's exit) at the second
# request, after the first's WAL record is written and before the batch is
# committed.  A worker that starts again on its own replays no WAL, and the
# next write stamps a later applied position in the instance: before the
# fix the primary's list lacked the first append for good (after a restart
# of the server too), while a standby, which applies WAL, had it.
#
# The same holds when the batch cannot be written: the commit of a pass of
# the worker fails (the fault point write.rocksdb_group_commit armed with
# error) with a logged append in its batch.  The session is told of the
# error, but the append's record may be in WAL, and then its standby
# applies it; the server's processes restart (as for a crash) and the start
# replays WAL, so that the primary holds what its standby holds.  It fails
# while the worker holds a snapshot (serving sessions from inside it):
# before the worker looked at a failed instance there too, it went on
# serving, every write refused, until the snapshot ended.
#
# Last, a start's replay stopped by an error and then a shutdown: what the
# worker's batch holds of the replay is committed on its way out, and the
# next start must not apply it again.

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
	'exit_batch',
	init => { allows_streaming => 1 },
	conf => "state_backend.checkpoint_dir = '$chkroot'\n"
	  . "restart_after_crash = on\n");
ok(defined wait_for_worker($node), 'state worker running');

# Arms fault points in the state worker, and waits until it has applied
# the reload (it does between requests, not from inside a snapshot).
sub arm_worker
{
	my ($points) = @_;
	$node->safe_psql('postgres', "ALTER SYSTEM SET state_backend.fault_points = '$points'");
	reload_worker($node) or die "the worker did not apply $points";
}
$node->safe_psql('postgres', q{
SELECT state.create_state('kr', 'list', 'int', 'int', backend => 'rocksdb', logged => true);
SELECT state.list_add('kr', 1, 0);
});
checkpoint_now($node);
$node->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('exit_batch_standby');
$standby->init_from_backup($node, 'b', has_streaming => 1);
$standby->start;

my $pid = worker_pid($node);
arm_worker('write.rocksdb_request:exit:2');
my ($ret, $out, $err) = $node->psql('postgres',
	q{SELECT count(state.list_add('kr', 1, i)) FROM generate_series(1, 2) i});
isnt($ret, 0, 'the statement fails: the worker exited while serving it');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET state_backend.fault_points');
$node->reload;
ok(defined wait_for_worker($node, not => $pid), 'the worker restarted');
$node->poll_query_until('postgres', q{SELECT true FROM (SELECT state.list_add('kr', 1, 100)) w})
  or die 'writes did not resume';
ok(standby_applied($node, $standby), 'the standby applied the WAL');
my $q = q{SELECT array_to_string(state.list_get('kr', 1, '{}'::int[]), ',')};
my $p = $node->safe_psql('postgres', $q);
my $s = $standby->safe_psql('postgres', $q);
is($p, '0,1,100', 'the primary holds the append made before the exit');
is($s, $p, 'the standby holds what the primary holds');
$node->restart;
ok(defined wait_for_worker($node), 'state worker running after a restart');
is($node->safe_psql('postgres', $q), $s, 'and after a restart of the primary');

# A failed commit of a pass with a logged append in its batch, while the
# worker serves sessions from within a snapshot held after its cut (it
# yields to them as it writes one): the failure is acted on there too.
my $log_offset = -s $node->logfile;
$pid = worker_pid($node);
arm_worker('write.rocksdb_group_commit:error');
like($node->safe_psql('postgres', q{
SET state_backend.snapshot_hold = on;
SELECT state.snapshot();}), qr/^\d+$/, 'a snapshot is held running');
# Appends until one fails (the first should); any that went through first is
# counted among the acknowledged.
my $tries = 0;
for (my $deadline = time() + 60; time() < $deadline; $tries++)
{
	($ret, $out, $err) = $node->psql('postgres', q{SELECT state.list_add('kr', 1, 200)});
	last if $ret != 0;
	select(undef, undef, undef, 0.05);
}
isnt($ret, 0, 'an append whose pass failed to commit fails');
like($err, qr/fault point "write\.rocksdb_group_commit"|terminating connection|server closed the connection/,
	'with the commit\'s error, or the restart of the server\'s processes')
  or diag $err;
$node->poll_query_until('postgres', 'SELECT true') or die 'the server did not come back';
$node->safe_psql('postgres', 'ALTER SYSTEM RESET state_backend.fault_points');
$node->reload;
ok(defined wait_for_worker($node, not => $pid, timeout => 30), 'a new worker runs');
like(slurp_file($node->logfile, $log_offset),
	qr/state_backend restarts the server's processes: changes of logged rocksdb states that are in WAL could not be written/,
	'the server\'s processes restarted for the replay');
$node->poll_query_until('postgres', q{SELECT true FROM (SELECT state.list_add('kr', 1, 300)) w})
  or die 'writes did not resume';
ok(standby_applied($node, $standby), 'the standby applied the WAL');
$p = $node->safe_psql('postgres', $q);
$s = $standby->safe_psql('postgres', $q);
# The failed append's record is in WAL if something flushed WAL past it
# before the restart (another commit); else the restart lost it with the
# rest of what WAL had not written.  Either way, primary and standby agree.
my $acked = '0,1,100' . (',200' x $tries);
like($s, qr/^\Q$acked\E(,200)?,300$/, 'the standby holds every acknowledged append');
is($p, $s, 'the primary holds what its standby holds');

# A worker that exits while the start's replay is cut short.  An append's
# record is in WAL (the commit of a transaction that wrote WAL flushed it:
# one that only took an xid, as txid_current(), would not) but not in the
# instance (the
# server stopped while the worker slept before the pass's commit).  The
# next start replays it, and its replay stops at an error before the
# replay's commit; the server is stopped then, and the worker commits what
# its batch holds on the way out.  Unless stamped with the end of the
# record it replayed, the start after applies the append a second time.
arm_worker('write.rocksdb_group_commit:sleep:5000');
# The worker sleeps before the pass's commit once it is reached.
my $held = held_at_fault_point($node, 'write.rocksdb_group_commit',
	q{SELECT state.list_add('kr', 1, 400);});
$node->safe_psql('postgres', q{
ALTER SYSTEM SET state_backend.fault_points = 'replay.flush_end:error';
CREATE TABLE wal_flush (i int);});
$node->stop('immediate');
eval { finish_held($held); };
$log_offset = -s $node->logfile;
$node->start;
ok($node->wait_for_log(qr/fault point "replay\.flush_end" reached: error/, $log_offset),
	'the start\'s replay stops at an error before its commit');
$node->stop('fast');
$node->append_conf('postgresql.auto.conf', "state_backend.fault_points = ''\n");
$node->start;
ok(defined wait_for_worker($node), 'state worker running after the replay');
$node->poll_query_until('postgres', q{SELECT true FROM (SELECT state.list_add('kr', 1, 500)) w})
  or die 'writes did not resume';
ok(standby_applied($node, $standby), 'the standby applied the WAL');
$p = $node->safe_psql('postgres', $q);
$s = $standby->safe_psql('postgres', $q);
like($s, qr/,300,400,500$/, 'the standby holds the append once');
is($p, $s, 'and so does the primary: the replay did not apply it twice');

$standby->stop;
$node->stop;
done_testing();
