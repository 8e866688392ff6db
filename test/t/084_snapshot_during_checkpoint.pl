# state.snapshot() called while the state worker writes a checkpoint of its
# own (state_backend.checkpoint_interval, or the one logged states' WAL
# asks for) waits for that checkpoint and then takes its snapshot.  Before,
# it failed with 55006 "snapshot N is still running": a checkpoint the
# session never asked for, which it could not wait for by id beforehand,
# made a user's backup fail at random.  A snapshot another session asked
# for still refuses a second one (55006), and the wait for a checkpoint
# ends at a cancel.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = new_state_node('snapshot_during_checkpoint');
my $chk = $node->basedir . '/checkpoints';
my $snaps = $node->basedir . '/snapshots';
mkdir $snaps or die "mkdir $snaps: $!";
$node->safe_psql('postgres', qq{
ALTER SYSTEM SET state_backend.checkpoint_dir = '$chk';
SELECT pg_reload_conf();});
$node->safe_psql('postgres', q{
SELECT state.create_state('sdc', 'value', 'bigint', 'bigint', backend => 'memory');
SELECT count(state.value_set('sdc', k, k)) FROM generate_series(1::bigint, 1000) k;});

# The worker's checkpoints, every second, each slowed to about 5 s: it
# sleeps 40 ms after each of its 128 key groups, and serves sessions
# between them.
sub arm_worker_checkpoints
{
	$node->safe_psql('postgres', q{
ALTER SYSTEM SET state_backend.fault_points = 'checkpoint.write_key_group:sleep:40';
ALTER SYSTEM SET state_backend.checkpoint_interval = '1s';
SELECT pg_reload_conf();});
}

sub disarm
{
	$node->safe_psql('postgres', q{
ALTER SYSTEM RESET state_backend.fault_points;
ALTER SYSTEM RESET state_backend.checkpoint_interval;
SELECT pg_reload_conf();});
}

# The worker's checkpoint that runs now with at least 1 and at most $most
# key groups written: "id key_groups_done", waited for.
sub checkpoint_under_way
{
	my ($most) = @_;
	my $row = '';
	my $deadline = time() + 60;
	until ($row ne '' || time() > $deadline)
	{
		$row = $node->safe_psql('postgres', qq{
SELECT id || ' ' || key_groups_done FROM state.snapshots
 WHERE status = 'running' AND path LIKE '$chk/chk-%'
   AND key_groups_done BETWEEN 1 AND $most});
		usleep(20_000) if $row eq '';
	}
	return split / /, $row;
}

sub key_groups_done
{
	my ($id) = @_;
	return $node->safe_psql('postgres',
		"SELECT key_groups_done FROM state.snapshots WHERE id = $id AND status = 'running'");
}

############################################ a snapshot waits for the worker's checkpoint
arm_worker_checkpoints();
my ($chk_id) = checkpoint_under_way(60);
ok($chk_id, "the worker's checkpoint $chk_id is being written when the session asks");
$chk_id //= 0;
my ($ret, $out, $err) = $node->psql('postgres', qq{
SELECT state.snapshot('$snaps/during') AS id \\gset
SELECT (:id > $chk_id)::text || ' ' || state.wait_snapshot(:id);});
is($ret, 0, 'state.snapshot() during the checkpoint succeeds') or diag $err;
is($out, 'true completed', 'its snapshot is cut after the checkpoint and completes');
is($node->safe_psql('postgres', "SELECT status FROM state.snapshots WHERE id = $chk_id"),
	'completed', 'the checkpoint it waited for completed');
ok(-f "$snaps/during/MANIFEST", 'the snapshot is on disk, whole');
is($node->safe_psql('postgres', qq{
SELECT state.restore('$snaps/during');
SELECT sum(state.value_get('sdc', k, NULL::bigint)) FROM generate_series(1::bigint, 1000) k;}),
	"1000\n500500", 'and restores every entry');

############################################ the wait ends at a cancel
my ($cid, $at_start) = checkpoint_under_way(40);
$cid //= 0;
my ($c_in, $c_out, $c_err) = ('', '', '');
my $c = IPC::Run::start(
	[ 'psql', '-XAtq', '-h', $node->host, '-p', $node->port, 'postgres' ],
	'<', \$c_in, '>', \$c_out, '2>', \$c_err, IPC::Run::timeout(60));
$c_in .= "SELECT state.snapshot('$snaps/cancelled');\n\\q\n";
my $waiting_sql = q{
SELECT count(*) FROM pg_stat_activity
 WHERE query LIKE 'SELECT state.snapshot(%cancelled%' AND state = 'active'};
my $seen_at;
for (1 .. 500)
{
	$c->pump_nb if $c->pumpable;
	if (!defined $seen_at && $node->safe_psql('postgres', $waiting_sql))
	{
		$seen_at = key_groups_done($cid);
	}
	# Key groups written since: the worker served the session between
	# them, and answered it to wait.
	last if defined $seen_at && (key_groups_done($cid) || 0) >= $seen_at + 3;
	usleep(20_000);
}
my $later = key_groups_done($cid);
ok(defined $seen_at && $later ne '' && $later >= $seen_at + 3,
	'the worker went on writing its checkpoint, serving the session between key groups');
is($node->safe_psql('postgres', $waiting_sql), '1', 'while the session still waits');
$node->safe_psql('postgres', q{
SELECT pg_cancel_backend(pid) FROM pg_stat_activity
 WHERE query LIKE 'SELECT state.snapshot(%cancelled%' AND pid <> pg_backend_pid()});
$c->finish;
like($c_err, qr/canceling statement due to user request/, 'a cancel ends the wait');
is(wait_snapshot_status($node, $cid), 'completed', 'the checkpoint completes');
disarm();
is($node->safe_psql('postgres', qq{
SELECT count(*) FROM state.snapshots WHERE path = '$snaps/cancelled'}),
	'0', 'and no snapshot is taken for the cancelled call');

############################################ a snapshot a session asked for still refuses another
# A checkpoint too (no path), but one a session asked for: held after its cut.
my ($a_in, $a_out, $a_err) = ('', '', '');
my $a = IPC::Run::start(
	[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-h', $node->host, '-p', $node->port, 'postgres' ],
	'<', \$a_in, '>', \$a_out, '2>', \$a_err, IPC::Run::timeout(60));
$a_in .= "SET state_backend.snapshot_hold = on;\nSELECT state.snapshot();\n";
my $deadline = time() + 60;
until ($a_out =~ /^\d+$/m || $a_err ne '' || time() > $deadline)
{
	$a->pump_nb if $a->pumpable;
	usleep(20_000);
}
my ($held_id) = $a_out =~ /^(\d+)$/m;
ok($held_id, "a session's checkpoint is held running") or diag $a_err;
$held_id //= 0;
my $refused = sql_error($node, "SELECT state.snapshot('$snaps/refused')");
is($refused->{sqlstate}, '55006', 'another session\'s snapshot meanwhile fails with 55006');
like($refused->{message}, qr/snapshot $held_id is still running/, 'naming the one that runs');
is($node->safe_psql('postgres', "SELECT state.cancel_snapshot($held_id)"), 't', 'the held one is cancelled');
$a_in .= "\\q\n";
$a->finish;
is(wait_snapshot_status($node, $held_id), 'cancelled', 'and ends cancelled');
is($node->safe_psql('postgres', qq{SELECT state.wait_snapshot(state.snapshot('$snaps/after'))}),
	'completed', 'after it, a snapshot runs');

is(log_crashes($node), 0, 'no process crashed');
$node->stop;
done_testing();
