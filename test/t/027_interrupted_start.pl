# A start that does not finish loses nothing.  At start the state worker
# loads the newest checkpoint into rocksdb states (when the rocksdb
# directory has none of its own: lost, or set aside at a promotion), then
# replays the WAL of logged states.  Stopped in between (fast or
# immediate), the next start must find every state again: the loaded
# column families had no descriptor yet, and were once taken for dropped
# states and removed, while the checkpoint's copy was skipped as "kept".

use strict;
use warnings;

use File::Path qw(rmtree);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $chkroot = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';
my $node = new_state_node(
	'interrupted_start',
	conf => "state_backend.checkpoint_dir = '$chkroot'\n",
	init => { allows_streaming => 1 });
ok(defined wait_for_worker($node), 'state worker running');

$node->safe_psql('postgres', q{
SELECT state.create_state('events', 'list', 'int', 'int', backend => 'rocksdb', logged => true);
SELECT state.create_state('plain', 'value', 'int', 'text', backend => 'rocksdb');
SELECT state.create_state('heap', 'reducing', 'int', 'bigint', reducer => 'sum', logged => true);
SELECT count(state.list_add('events', i % 10, i)) FROM generate_series(1, 5000) i;
SELECT count(state.value_set('plain', i, 'v' || i)) FROM generate_series(1, 100) i;
SELECT count(state.reduce('heap', i % 10, 1::bigint)) FROM generate_series(1, 5000) i;
SELECT state.wait_snapshot(state.snapshot());
SELECT count(state.list_add('events', i % 10, i)) FROM generate_series(5001, 8000) i;
SELECT count(state.reduce('heap', i % 10, 1::bigint)) FROM generate_series(1, 3000) i;
});

my $read = q{SELECT (SELECT sum(state.list_length('events', k)) FROM generate_series(0, 9) k) || '|' ||
  (SELECT count(*) FROM generate_series(1, 100) i WHERE state.value_get('plain', i, '') = 'v' || i) || '|' ||
  (SELECT sum(state.value_get('heap', k, 0::bigint)) FROM generate_series(0, 9) k)};
my $expected = '8000|100|8000';
is($node->safe_psql('postgres', $read), $expected, 'states as written');

# Held after loading the checkpoint, then stopped: $how is 'fast' or 'immediate'.
sub interrupted_start
{
	my ($how) = @_;
	$node->append_conf('postgresql.conf', "state_backend.start_hold = on\n");
	my $offset = -s $node->logfile;
	$node->start;
	ok($node->wait_for_log(qr/state_backend start holds after loading the checkpoint/, $offset),
		"$how: the start holds after loading the checkpoint");
	$node->stop($how);
	$node->append_conf('postgresql.conf', "state_backend.start_hold = off\n");
	return;
}

for my $how ('fast', 'immediate')
{
	# The rocksdb directory lost in a crash: rocksdb states come from the
	# checkpoint, logged ones with the WAL written since.
	$node->stop('immediate');
	rmtree($node->data_dir . '/pg_state_backend/rocksdb');
	interrupted_start($how);
	my $offset = -s $node->logfile;
	$node->start;
	ok(defined wait_for_worker($node), "$how: state worker running after the interrupted start");
	ok($node->wait_for_log(qr/did not finish, so rocksdb states are loaded from the newest checkpoint/, $offset),
		"$how: the half-loaded rocksdb directory is set aside");
	is($node->safe_psql('postgres', $read), $expected, "$how: every state is back, nothing doubled");
}

# Loaded and whole: a restart adopts the instance as its own again.
$node->restart;
ok(defined wait_for_worker($node), 'state worker running after a clean restart');
is($node->safe_psql('postgres', $read), $expected, 'every state after a clean restart');
$node->safe_psql('postgres', q{SELECT state.wait_snapshot(state.snapshot())});
$node->stop('immediate');
$node->start;
ok(defined wait_for_worker($node), 'state worker running after a crash');
is($node->safe_psql('postgres', $read), $expected, 'every state after a crash');

# A replay stopped halfway, with RocksDB behind the WAL (an older copy of
# its directory): the next replay goes on from the last record applied,
# and applies none twice (the flush every 10,000 records once recorded
# the end of the record before the one just applied).
$node->stop;
my $rocks = $node->data_dir . '/pg_state_backend/rocksdb';
system('cp', '-a', $rocks, "$rocks.old") == 0 or die "cp $rocks failed";
$node->start;
$node->safe_psql('postgres',
	q{SELECT count(state.list_add('events', i % 10, i)) FROM generate_series(8001, 208000) i});
$expected = '208000|100|8000';
is($node->safe_psql('postgres', $read), $expected, '200,000 more list elements');
$node->stop('immediate');
rmtree($rocks);
rename("$rocks.old", $rocks) or die "rename: $!";
my $offset = -s $node->logfile;
$node->start;
ok($node->wait_for_log(qr/state_backend replays the WAL of logged states/, $offset),
	'the replay starts');
usleep(200_000);
$node->stop('immediate');
$node->start;
ok(defined wait_for_worker($node), 'state worker running after the interrupted replay');
is($node->safe_psql('postgres', $read), $expected, 'every element once after the interrupted replay');

# A snapshot asked for while the start holds waits for the start to end
# (and for the checkpoint that ends it, as only one snapshot runs at a
# time), then is taken.  It failed at once as if the worker had restarted:
# the worker starts every stream afresh when it begins to serve.
$node->stop;
$node->append_conf('postgresql.conf', "state_backend.start_hold = on\n");
$offset = -s $node->logfile;
$node->start;
ok($node->wait_for_log(qr/state_backend start holds after loading the checkpoint/, $offset),
	'the start holds');
my %early = (out => '', err => '');
$early{h} = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
	  q{SET application_name = 'early'; SELECT state.wait_snapshot(state.snapshot())} ],
	'>', \$early{out}, '2>', \$early{err}, IPC::Run::timeout(120));
ok($node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = 'early' AND wait_event_type = 'Extension'}),
	'the snapshot waits while the start holds');
$node->append_conf('postgresql.conf', "state_backend.start_hold = off\n");
$node->reload;
$early{h}->finish;
chomp $early{out};
is($early{out}, 'completed', 'a snapshot asked for while the start held is taken once it ends')
  or diag $early{err};

is(join("\n", log_crashes($node, 0)), '', 'no process crashed');
$node->stop;
done_testing();
