# WAL before data: nothing of a logged state outlives a crash that its WAL
# records did not.  With synchronous_commit off a crash may lose the end of
# WAL, as PostgreSQL allows; every logged state must then lose the same
# changes, and acknowledged ones none.
#
# 1. A rocksdb instance keeps its writes through a crash of the server's
#    processes (RocksDB's own log).  A statement appends to a logged memory
#    list and a logged rocksdb list, then a backend is killed before WAL is
#    flushed.  Before the fix the rocksdb list came back with the appends
#    and the memory list without them: the instance was ahead of WAL (and
#    so of every standby).
# 2. A checkpoint is cut at WAL's insert position, and is complete only
#    once WAL is flushed to its cut.  Appends, a checkpoint, and a crash;
#    the next start cannot take a checkpoint of its own (a fault point),
#    acknowledged appends follow (synchronous_commit on), and the server
#    crashes again.  The start after it replays from the first
#    checkpoint's cut: had that cut been past the end of WAL, the
#    acknowledged appends' records, which WAL wrote after the first crash,
#    would lie below it, and the memory list would lose them.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $chkroot = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';
# The WAL writer writes full pages only, every 10 s: a commit's records
# stay in WAL buffers, which a crash loses.
my $node = new_state_node(
	'wal_before_data',
	init => { allows_streaming => 1 },
	conf => "state_backend.checkpoint_dir = '$chkroot'\n"
	  . "state_backend.checkpoint_interval = 0\n"
	  . "synchronous_commit = off\n"
	  . "wal_writer_delay = '10s'\n"
	  . "restart_after_crash = on\n");
ok(defined wait_for_worker($node), 'state worker running');
$node->safe_psql('postgres', q{
SELECT state.create_state('km', 'list', 'int', 'int', logged => true);
SELECT state.create_state('kr', 'list', 'int', 'int', backend => 'rocksdb', logged => true);
SELECT count(state.list_add(s, 1, i)) FROM generate_series(1, 10) i, unnest(ARRAY['km', 'kr']) s;
});
checkpoint_now($node);
$node->safe_psql('postgres', 'CHECKPOINT');

my $lengths = q{SELECT string_agg(s || '=' || cardinality(state.list_get(s, 1, '{}'::int[])), ' ' ORDER BY s)
  FROM unnest(ARRAY['km', 'kr']) s};
is($node->safe_psql('postgres', $lengths), 'km=10 kr=10', 'ten appends to each list');

# Kills a backend of a session of its own: the postmaster restarts every
# process, and what WAL buffers held is gone.
sub crash
{
	my ($label) = @_;
	my $bg = $node->background_psql('postgres');
	my $pid = $bg->query_safe('SELECT pg_backend_pid()');
	my $offset = -s $node->logfile;
	kill 'KILL', $pid;
	ok(defined wait_for_crash_restart($node, $offset), "$label: the server came back");
	eval { $bg->quit };
}

# ---- 1. the rocksdb instance is never ahead of WAL
$node->safe_psql('postgres', q{
SELECT count(state.list_add(s, 1, i)) FROM generate_series(11, 20) i, unnest(ARRAY['km', 'kr']) s});
crash('crash 1');
my ($km, $kr) = $node->safe_psql('postgres', $lengths) =~ /km=(\d+) kr=(\d+)/;
is($kr, $km, "crash 1: the rocksdb list lost what the memory list lost (km $km, kr $kr)");
ok($km >= 10, 'crash 1: nothing from before the checkpoint is lost');

# ---- 2. a checkpoint is never cut past the end of WAL
my $before = $km;
$node->safe_psql('postgres', q{
SELECT count(state.list_add(s, 1, i)) FROM generate_series(21, 40) i, unnest(ARRAY['km', 'kr']) s});
checkpoint_now($node);
# The next start's checkpoints fail, so that the one above stays newest.
$node->safe_psql('postgres',
	q{ALTER SYSTEM SET state_backend.fault_points = 'checkpoint.before_manifest:error'});
crash('crash 2');
my $after_crash = $node->safe_psql('postgres', $lengths);
($km, $kr) = $after_crash =~ /km=(\d+) kr=(\d+)/;
is($kr, $km, "crash 2: both lists came back alike ($after_crash)");
is($km, $before + 20, 'crash 2: the appends a completed checkpoint holds are there');

# Five acknowledged appends to each, their WAL flushed at commit.
for my $i (41 .. 45)
{
	$node->safe_psql('postgres', qq{
SET synchronous_commit = on;
SELECT count(state.list_add(s, 1, $i)) FROM unnest(ARRAY['km', 'kr']) s});
}
crash('crash 3');
is($node->safe_psql('postgres', $lengths),
	'km=' . ($km + 5) . ' kr=' . ($kr + 5),
	'crash 3: every acknowledged append is there, in both lists');

$node->safe_psql('postgres', 'ALTER SYSTEM RESET state_backend.fault_points');
$node->reload;
done_testing();
