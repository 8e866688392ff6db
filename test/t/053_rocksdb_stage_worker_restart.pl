# A transactional commit of rocksdb states stays whole, and its COMMIT
# returns, when the state worker restarts alone (it exits, the postmaster
# starts it again without a crash restart) in the middle of the commit.
#
# - waiting: the worker exits (fault point commit.rocksdb_stage_waiting,
#   action exit) while the session has prepared its stage and sleeps before
#   its commit record.  The new worker keeps the intent record of the
#   running transaction; the commit then returns, and its row and all its
#   keys are there.
# - receiving: the worker exits (commit.rocksdb_stage_receiving) while the
#   session is still sending its staged writes, slowly (commit.stage_key
#   sleeps).  The new worker holds only the later writes: the commit is
#   refused (40001, or 08006 when the session sees the restart first) and
#   neither its row nor any of its keys is there.
# - committed: the worker exits (apply.rocksdb_stage_resolve) as it is
#   about to apply by itself the stage of a transaction that committed
#   while its session sleeps before asking (apply.stage_before_ask).  The
#   new worker's recovery applies the commit and tells the session: the
#   commit returns with its row and all its keys.
# - logged: one commit writes the state above and a logged one; the worker
#   exits as it applies the commit's writes (apply.rocksdb_stage_before_write).
#   Both states get all their keys.  Before the fix the logged state's
#   writes were not staged: the session handed them to the worker after
#   its commit record, the worker's exit dropped them, and no replay
#   followed (only a crash replays WAL): committed keys missing, a WARNING.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $nkeys = 200;
my $node = new_state_node(
	'rocks_stage_restart',
	init => { allows_streaming => 1 },
	conf => "state_backend.checkpoint_dir = '" . PostgreSQL::Test::Utils::tempdir() . "/checkpoints'\n");
ok(defined wait_for_worker($node), 'state worker running');
$node->safe_psql('postgres', q{
CREATE TABLE rows (id int);
SELECT state.create_state('rs', 'value', 'int', 'int', backend => 'rocksdb', transactional => true);
SELECT state.create_state('rl', 'value', 'int', 'int', backend => 'rocksdb', transactional => true,
                          logged => true);
});

sub keys_of
{
	my ($c) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM state.keys('rs', 0) k WHERE k / 1000000 = $c");
}

# Arms (or with '' resets) the state worker's fault points.
sub arm_worker
{
	my ($faults) = @_;
	my $sql = $faults eq ''
	  ? 'ALTER SYSTEM RESET state_backend.fault_points'
	  : "ALTER SYSTEM SET state_backend.fault_points = '$faults'";
	for (my $i = 0; $i < 300; $i++)
	{
		my ($ret) = $node->psql('postgres', "$sql; SELECT pg_reload_conf()");
		return 1 if $ret == 0;
		usleep(100_000);
	}
	return 0;
}

# Runs case $c's commit in the background, with the session's faults.
sub start_commit
{
	my ($c, $faults, $out, $err) = @_;
	my $base = $c * 1_000_000;
	my $script = PostgreSQL::Test::Utils::tempdir() . "/commit_$c.sql";
	PostgreSQL::Test::Utils::append_to_file($script, qq{
\\set VERBOSITY verbose
SET state_backend.fault_points = '$faults';
BEGIN;
INSERT INTO rows VALUES ($c);
SELECT count(state.value_set('rs', $base + i, i)) FROM generate_series(1, $nkeys) i;
COMMIT;
});
	return IPC::Run::start(
		[ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-f', $script ],
		'>', $out, '2>', $err);
}

# Whether the background psql $h ends within $secs seconds.
sub ends_within
{
	my ($h, $secs) = @_;
	for (my $i = 0; $i < $secs * 10; $i++)
	{
		$h->pump_nb;
		return 1 unless $h->pumpable;
		usleep(100_000);
	}
	return 0;
}

for my $case (
	[ 1, 'waiting',   'commit.before_commit_record:sleep:8000' ],
	[ 2, 'receiving', 'commit.stage_key:sleep:25' ],
	[ 3, 'committed', 'apply.stage_before_ask:sleep:3000' ])
{
	my ($c, $step, $session_faults) = @$case;
	my $offset = -s $node->logfile;
	my $point = $step eq 'committed' ? 'apply.rocksdb_stage_resolve' : "commit.rocksdb_stage_$step";
	ok(arm_worker("$point:exit:1"), "$step: the worker's fault point is armed");
	sleep 1;    # the worker has read the setting
	my $old = worker_pid($node);
	my ($out, $err) = ('', '');
	my $h = start_commit($c, $session_faults, \$out, \$err);
	ok($node->wait_for_log(qr/fault point "\Q$point\E" reached: exit/, $offset),
		"$step: the worker exits in the middle of the commit");
	ok(defined wait_for_worker($node, not => $old), "$step: the worker is back");
	ok($node->wait_for_log(qr/keeps the staged writes to rocksdb states of transaction/, $offset),
		"$step: the new worker keeps the stage of the running transaction")
	  if $step eq 'waiting';
	ok(arm_worker(''), "$step: the worker's fault point is reset");
	my $ended = ends_within($h, 60);
	ok($ended, "$step: the COMMIT returns");
	unless ($ended)
	{
		# Ends the wait (pg_cancel_backend), so that the test goes on.
		$node->safe_psql('postgres',
			"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE 'COMMIT%' AND pid <> pg_backend_pid()");
		ends_within($h, 10) or $h->kill_kill;
	}
	$h->finish;
	my $row = $node->safe_psql('postgres', "SELECT count(*) FROM rows WHERE id = $c");
	my $n = keys_of($c);
	if ($step ne 'receiving')
	{
		is($row, '1', "$step: the transaction committed");
		is($n, $nkeys, "$step: every key of the commit is there");
	}
	else
	{
		like($err, qr/ERROR:\s+(?:40001: could not stage the writes|08006: the state worker restarted)/,
			"$step: the commit is refused");
		is("$row/$n", '0/0', "$step: no row and no key");
	}
	# The keys are not left locked: another commit to them goes through.
	my ($ret, $got) = $node->psql('postgres',
		"BEGIN; SELECT state.value_set('rs', $c * 1000000 + 1, -1); COMMIT; "
		  . "SELECT state.value_get('rs', $c * 1000000 + 1, NULL::int)",
		timeout => 30);
	is((split /\n/, $got)[-1] // '', '-1', "$step: a later commit to its keys goes through");
}

{
	my $c = 4;
	my $offset = -s $node->logfile;
	my $point = 'apply.rocksdb_stage_before_write';
	ok(arm_worker("$point:exit:1"), "logged: the worker's fault point is armed");
	sleep 1;
	my $old = worker_pid($node);
	my $script = PostgreSQL::Test::Utils::tempdir() . "/commit_$c.sql";
	PostgreSQL::Test::Utils::append_to_file($script, qq{
BEGIN;
INSERT INTO rows VALUES ($c);
SELECT count(state.value_set('rs', $c * 1000000 + i, i)) FROM generate_series(1, $nkeys) i;
SELECT count(state.value_set('rl', $c * 1000000 + i, i)) FROM generate_series(1, $nkeys) i;
COMMIT;
});
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-f', $script ],
		'>', \$out, '2>', \$err);
	ok($node->wait_for_log(qr/fault point "\Q$point\E" reached: exit/, $offset),
		'logged: the worker exits in the middle of the apply');
	ok(defined wait_for_worker($node, not => $old), 'logged: the worker is back');
	ok(arm_worker(''), "logged: the worker's fault point is reset");
	ok(ends_within($h, 60), 'logged: the COMMIT returns') or $h->kill_kill;
	$h->finish;
	unlike($err, qr/could not all be applied/, 'logged: no WARNING of writes not applied');
	is($node->safe_psql('postgres', "SELECT count(*) FROM rows WHERE id = $c"), '1',
		'logged: the transaction committed');
	is(keys_of($c), $nkeys, 'logged: every key of the unlogged state is there');
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM state.keys('rl', 0) k WHERE k / 1000000 = $c"),
		$nkeys, 'logged: every key of the logged state is there');
}

is(join("\n", log_crashes($node, 0)), '', 'no crash restart');
$node->stop;
done_testing();
