# A transactional commit of rocksdb states is whole across crashes, and
# its wait for the apply honours cancel and terminate.
#
# - A transaction writes 100,000 keys of a transactional rocksdb state and
#   a table row; a process is killed (kill -9, the fault points' crash) at
#   a step of its commit: the session just after its commit record, the
#   session in the middle of its keys (apply.key), the state worker in the
#   middle of applying them (apply.rocksdb_stage_write), the session before
#   the commit record.  Once the cluster is back the state holds all of the
#   transaction's keys when its row is there, none when it is not.
# - With state_backend.request_timeout = 0 and the state worker stopped
#   (SIGSTOP) after a session's commit record, pg_cancel_backend and
#   pg_terminate_backend end its wait (the commit is not undone); once the
#   worker goes on, every key of the commit is there.

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

my $nkeys = 100_000;
my $node = new_state_node(
	'rocks_commit',
	conf => "restart_after_crash = on\n"
	  . "state_backend.request_timeout = 0\n");
ok(defined wait_for_worker($node), 'state worker running');
$node->safe_psql('postgres', q{
CREATE TABLE rows (id int);
SELECT state.create_state('big', 'value', 'int', 'int', backend => 'rocksdb', transactional => true);
});

# The keys of case $c in the state.
sub keys_of
{
	my ($c) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM state.keys('big', 0) k WHERE k / 1000000 = $c");
}

# A commit of case $c: its row and $nkeys keys, with the fault points armed.
sub commit_sql
{
	my ($c, $faults) = @_;
	my $base = $c * 1_000_000;
	return qq{
SET state_backend.fault_points = '$faults';
BEGIN;
INSERT INTO rows VALUES ($c);
SELECT count(state.value_set('big', $base + i, i)) FROM generate_series(1, $nkeys) i;
COMMIT;
};
}

my @cases = (
	[ 1, 'session', 'apply.state_before:crash' ],
	[ 2, 'session', 'apply.key:crash:' . ($nkeys / 2) ],
	[ 3, 'worker',  'apply.rocksdb_stage_write:crash:' . ($nkeys / 2) ],
	[ 4, 'session', 'commit.before_commit_record:crash' ],
);
for my $case (@cases)
{
	my ($c, $who, $faults) = @$case;
	my $offset = -s $node->logfile;
	my $crashed;
	if ($who eq 'worker')
	{
		$node->safe_psql('postgres',
			"ALTER SYSTEM SET state_backend.fault_points = '$faults'; SELECT pg_reload_conf()");
		$node->psql('postgres', commit_sql($c, ''));
	}
	else
	{
		my ($ret, $out, $err) = $node->psql('postgres', commit_sql($c, $faults));
		# The postmaster logs its restart only once every process has
		# exited, which may come after psql returns: a lost connection
		# says the crash came.
		$crashed = $err =~ /connection to server was lost|server closed the connection/;
	}
	$crashed ||= $node->log_contains(qr/reinitializing/, $offset);
	if ($who eq 'worker')
	{
		# The worker's point acts again at each restart until it is reset.
		my $reset;
		for (my $i = 0; $i < 600 && !$reset; $i++)
		{
			my ($ret) = $node->psql('postgres',
				"ALTER SYSTEM RESET state_backend.fault_points; SELECT pg_reload_conf()");
			$reset = $ret == 0;
			usleep(100_000) unless $reset;
		}
		ok($reset, "case $c: the worker's fault point is reset");
		$offset = -s $node->logfile;
		ok($node->poll_query_until('postgres', "SELECT count(*) >= 0 FROM state.keys('big', 0) k"),
			"case $c ($faults): the cluster is back");
	}
	elsif ($crashed)
	{
		ok(defined wait_for_crash_restart($node, $offset), "case $c ($faults): the cluster is back");
	}
	my $row = $node->safe_psql('postgres', "SELECT count(*) FROM rows WHERE id = $c");
	my $n = keys_of($c);
	is($n, $row ? $nkeys : 0,
		"case $c ($faults): " . ($row ? 'the row is there, and all its keys' : 'no row, and no key'));
}

# ---------------------------------------------------------------- cancel, terminate
$node->safe_psql('postgres', 'SELECT 1');
for my $how ('cancel', 'terminate')
{
	my $c = $how eq 'cancel' ? 5 : 6;
	my $offset = -s $node->logfile;
	my ($stdout, $stderr) = ('', '');
	my $script = PostgreSQL::Test::Utils::tempdir() . "/commit_$c.sql";
	PostgreSQL::Test::Utils::append_to_file($script,
		commit_sql($c, 'apply.begin:sleep:3000'));
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-f', $script ],
		'>', \$stdout, '2>', \$stderr);
	$node->wait_for_log(qr/fault point "apply.begin" reached/, $offset);
	my $wpid = worker_pid($node);
	kill 'STOP', $wpid;
	my $pid = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE query LIKE 'COMMIT%' AND pid <> pg_backend_pid()");
	sleep 4;    # past the sleep: now it waits for the worker
	$node->safe_psql('postgres', "SELECT pg_${how}_backend($pid)");
	my $ended = 0;
	for (my $i = 0; $i < 100; $i++)
	{
		$h->pump_nb;
		if (!$h->pumpable)
		{
			$ended = 1;
			last;
		}
		usleep(100_000);
	}
	ok($ended, "$how: the committing session's wait for the stopped worker ends");
	kill 'CONT', $wpid;
	$h->kill_kill unless $ended;
	$h->finish;
	like($stderr, qr/already committed/, "$how: it says the transaction committed")
	  if $how eq 'cancel';
	is($node->safe_psql('postgres', "SELECT count(*) FROM rows WHERE id = $c"),
		'1', "$how: the commit stands");
	ok($node->poll_query_until('postgres',
			"SELECT count(*) = $nkeys FROM state.keys('big', 0) k WHERE k / 1000000 = $c"),
		"$how: the worker applied every key of the commit");
}

$node->stop;
done_testing();
