# A state worker that exits on its own with logged rocksdb writes in its
# write batch makes them before it goes.  A statement appends twice to a
# logged rocksdb list; the worker exits (a fault point's exit) at the second
# request, after the first's WAL record is written and before the batch is
# committed.  A worker that starts again on its own replays no WAL, and the
# next write stamps a later applied position in the instance: before the
# fix the primary's list lacked the first append for good (after a restart
# of the server too), while a standby, which applies WAL, had it.

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
	conf => "state_backend.checkpoint_dir = '$chkroot'\n");
ok(defined wait_for_worker($node), 'state worker running');
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
$node->safe_psql('postgres',
	q{ALTER SYSTEM SET state_backend.fault_points = 'write.rocksdb_request:exit:2'});
$node->reload;
sleep 1;
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
$standby->stop;
$node->stop;
done_testing();
