# WAL describes only what was written: a write to a logged lmdb state whose
# LMDB commit fails (a full disk, a full map; here the fault point
# write.lmdb_commit, just before LMDB's commit) leaves no WAL record, so
# neither recovery nor a standby applies a change the primary refused.
#
# - a logged lmdb state, a checkpoint, a write that fails at its commit and
#   writes that succeed around it;
# - the standby holds the writes that succeeded and not the failed one;
# - a crash restart replays the WAL: the same.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $node = new_state_node(
	'lmdb_wal',
	lmdb => 1,
	conf => "state_backend.checkpoint_dir = '$tmp/checkpoints'\n"
	  . "state_backend.checkpoint_interval = 0\n"
	  . "restart_after_crash = on\n",
	init => { allows_streaming => 1 });
ok(defined wait_for_worker($node), 'state worker running');

$node->safe_psql('postgres',
	"SELECT state.create_state('lg', 'value', 'text', 'text', backend => 'lmdb', logged => true)");
$node->safe_psql('postgres', "SELECT state.value_set('lg', 'before', 'b')");
$node->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('lmdb_wal_standby');
$standby->init_from_backup($node, 'b', has_streaming => 1);
$standby->start;
# A checkpoint taken after the backup: the standby serves from it.
my $id = $node->safe_psql('postgres', 'SELECT state.snapshot()');
like(wait_snapshot_status($node, $id), qr/completed/, 'a checkpoint');

my $r = sql_error($node, q{
SET state_backend.fault_points = 'write.lmdb_commit:error';
SELECT state.value_set('lg', 'failed', 'f');
});
ok($r->{sqlstate} ne '', 'the write that fails at its commit fails');
like($r->{stderr}, qr/fault point "write.lmdb_commit" reached/, 'at the fault point');
$node->safe_psql('postgres', "SELECT state.value_set('lg', 'after', 'a')");
is($node->safe_psql('postgres', "SELECT state.value_get('lg', 'failed', 'none')"),
	'none', 'the primary does not hold the failed write');

my $target = $node->safe_psql('postgres', "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn");
$node->wait_for_catchup($standby, 'replay');
ok($standby->poll_query_until('postgres',
		"SELECT value >= $target FROM state.worker WHERE name = 'standby_applied_lsn'"),
	'the standby applied the primary\'s WAL');
is($standby->safe_psql('postgres',
		"SELECT string_agg(k, ',' ORDER BY k) FROM state.keys('lg', ''::text) k"), 'after,before', 'the standby holds what was written, not the failed write');

my $offset = -s $node->logfile;
kill 'KILL', worker_pid($node);
ok(defined wait_for_crash_restart($node, $offset), 'crash restart');
is($node->safe_psql('postgres',
		"SELECT string_agg(k, ',' ORDER BY k) FROM state.keys('lg', ''::text) k"),
	'after,before', 'recovery replays what was written, not the failed write');

$standby->stop;
$node->stop;
done_testing();
