# The WAL position a rocksdb instance holds never goes back, so a start
# that ends before its replay is through applies nothing twice.
#
# A logged rocksdb list gets appends after transactions that put into and
# remove from a logged transactional rocksdb map (a removal writes what
# the replay has gathered so far).  At a start the replay applies the
# transaction's records again (its commit record, not the instance's
# position, says they are in) and the appends not at all (the instance
# holds them).  The state worker exits or is killed at the end of the
# replay (fault points replay.close, replay.flush_end), then the server
# starts again.  Before the fix the records applied again were written
# with the position they were read at, below the appends', and the next
# start applied every append a second time.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $chkroot = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';
my $node = new_state_node(
	'rocksdb_replay_position',
	init => { allows_streaming => 1 },
	conf => "state_backend.checkpoint_dir = '$chkroot'\n"
	  . "state_backend.checkpoint_interval = 0\n"
	  . "restart_after_crash = on\n");
ok(defined wait_for_worker($node), 'state worker running');

$node->safe_psql('postgres', q{
SELECT state.create_state('k_list', 'list', 'int', 'int', backend => 'rocksdb', logged => true);
SELECT state.create_state('k_tx', 'map', 'int', 'bigint', map_key_type => 'int',
                          backend => 'rocksdb', logged => true, transactional => true);
SELECT state.create_state('k_sum', 'reducing', 'int', 'bigint', reducer => 'sum',
                          backend => 'rocksdb', logged => true, transactional => true);
});
is($node->safe_psql('postgres', q{SELECT state.wait_snapshot(state.snapshot())}),
	'completed', 'a checkpoint');

my $n = 0;

# Transactions into k_tx and k_sum, then appends of the next 50 numbers.
sub write_round
{
	$node->safe_psql('postgres', qq{
BEGIN;
SELECT count(state.map_put('k_tx', i % 3, i, i::bigint)) FROM generate_series($n + 1, $n + 50) i;
SELECT count(state.reduce('k_sum', i % 3, i::bigint)) FROM generate_series($n + 1, $n + 50) i;
COMMIT;
BEGIN;
SELECT count(state.map_remove('k_tx', i % 3, i)) FROM generate_series($n + 1, $n + 50, 7) i;
COMMIT;
SELECT count(state.list_add('k_list', i % 5, i)) FROM generate_series($n + 1, $n + 50) i;
});
	$n += 50;
	return;
}

my $read = q{SELECT count(*) || '|' || count(DISTINCT e) || '|' || coalesce(sum(e), 0)
  FROM generate_series(0, 4) k, unnest(state.list_get('k_list', k, '{}'::int[])) e};

sub expected { return "$n|$n|" . ($n * ($n + 1) / 2); }

sub read_when_served
{
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (time() < $deadline)
	{
		my ($ret, $out) = $node->psql('postgres', $read);
		return $out if $ret == 0;
		usleep(200_000);
	}
	return undef;
}

for my $case ([ 'replay.close', 'exit' ], [ 'replay.flush_end', 'exit' ],
	[ 'replay.close', 'crash' ], [ 'replay.flush_end', 'crash' ])
{
	my ($point, $action) = @$case;
	write_round();
	is($node->safe_psql('postgres', $read), expected(), "$point $action: every append read back");
	$node->stop('immediate');
	$node->append_conf('postgresql.conf', "state_backend.fault_points = '$point:$action:1'\n");
	my $offset = -s $node->logfile;
	$node->start;
	$node->wait_for_log(qr/fault point "\Q$point\E" reached: \Q$action\E/, $offset);
	$node->append_conf('postgresql.conf', "state_backend.fault_points = ''\n");
	$node->reload;
	is(read_when_served(), expected(), "$point $action: each append once after the next start");
	$node->stop('immediate');
	$node->start;
	is(read_when_served(), expected(), "$point $action: and after one more crash");
}

$node->stop;
done_testing();
