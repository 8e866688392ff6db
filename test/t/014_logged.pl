# Logged states lose nothing acknowledged in a crash.
#
# Four clients make 20,000 reduce calls on a logged heap state and 20,000
# value_set calls on a logged rocksdb state, with synchronous_commit = on;
# then the server stops with -m immediate and starts again.  Every write is
# there, exactly, whether there was no checkpoint, one in the middle, or
# several (checkpoint_interval).  An unlogged heap state written in the same
# run comes back as of the newest checkpoint.  With synchronous_commit = off
# what was written before pg_switch_wal() and a wait of 3 x wal_writer_delay
# survives too.  The slot that keeps WAL for recovery moves forward with each
# checkpoint, and a state worker killed during replay leaves the same result.

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
	'logged',
	conf => "state_backend.checkpoint_dir = '$chkroot'\n"
	  . "synchronous_commit = on\n"
	  . "wal_writer_delay = 200ms\nrestart_after_crash = on\n",
	init => { allows_streaming => 1 });
ok(defined wait_for_worker($node), 'state worker running');

# A logged state that make_states never drops: with none left for a moment,
# the worker would take a checkpoint of its own (and drop the slot), which
# would decide which unlogged states a crash brings back.
$node->safe_psql('postgres',
	q{SELECT state.create_state('anchor', 'value', 'int', 'int', logged => true)});

# What a client sees of the states, in one line.
my $probe = q{
SELECT (SELECT coalesce(sum(state.value_get('hr', k, 0::bigint)), 0)
          FROM generate_series(0, 3) k) || ' ' ||
       (SELECT count(*) || ' ' || coalesce(sum(k), 0) || ' ' ||
               coalesce(sum(state.value_get('rv', k, 0) - k), 0)
          FROM state.keys('rv', 0) k)
};

sub crash_and_start
{
	my $pid = wait_for_worker($node);
	$node->stop('immediate');
	$node->start;
	return wait_for_worker($node, not => $pid);
}

sub make_states
{
	$node->safe_psql(
		'postgres', q{
SELECT state.drop_state(name) FROM state.states WHERE name <> 'anchor';
DROP SEQUENCE IF EXISTS s;
CREATE SEQUENCE s;
SELECT state.create_state('hr', 'reducing', 'int', 'bigint', reducer => 'sum', logged => true);
SELECT state.create_state('rv', 'value', 'int', 'int', backend => 'rocksdb', logged => true);
SELECT state.create_state('u', 'value', 'int', 'int');
});
}

# n transactions of each client: a reduce, a value_set, an unlogged write.
sub workload
{
	my ($n) = @_;
	my $r = run_pgbench(
		$node,
		"-n -c 4 -j 2 -t $n",
		{
			'logged' => q{
SELECT state.reduce('hr', :client_id, 1::bigint);
SELECT state.value_set('rv', k::int, k::int) FROM nextval('s') k;
SELECT state.value_set('u', :client_id, coalesce(state.value_get('u', :client_id, 0), 0) + 1);
}
		},
		timeout => 300);
	is($r->{ret}, 0, "pgbench ran $n transactions per client") or diag $r->{stderr};
}

for my $case ('no checkpoint', 'one checkpoint in the middle', 'checkpoint_interval')
{
	make_states();
	my $u_expected;
	if ($case eq 'no checkpoint')
	{
		workload(5000);
	}
	elsif ($case eq 'one checkpoint in the middle')
	{
		workload(2500);
		$node->safe_psql('postgres', q{SELECT state.wait_snapshot(state.snapshot())});
		$u_expected = $node->safe_psql('postgres',
			q{SELECT sum(state.value_get('u', k, 0)) FROM generate_series(0, 3) k});
		workload(2500);
	}
	else
	{
		$node->safe_psql('postgres',
			q{ALTER SYSTEM SET state_backend.checkpoint_interval = 1; SELECT pg_reload_conf()});
		workload(5000);
		$node->safe_psql('postgres',
			q{ALTER SYSTEM SET state_backend.checkpoint_interval = 0; SELECT pg_reload_conf()});
	}
	my $before = $node->safe_psql('postgres', $probe);
	is($before, '20000 20000 200010000 0', "$case: every write made");
	my $log_offset = -s $node->logfile;
	ok(defined crash_and_start(), "$case: restarted after -m immediate");
	is($node->safe_psql('postgres', $probe), $before, "$case: every acknowledged write is there, exactly");
	like(slurp_file($node->logfile, $log_offset), qr/replayed \d+ WAL records of logged states/,
		"$case: the worker replayed WAL");
	if ($case eq 'no checkpoint')
	{
		is(sql_error($node, q{SELECT state.value_get('u', 0, 0)})->{sqlstate}, '42704',
			"$case: the unlogged state, never checkpointed, is gone");
	}
	elsif (defined $u_expected)
	{
		is($node->safe_psql('postgres',
				q{SELECT sum(state.value_get('u', k, 0)) FROM generate_series(0, 3) k}),
			$u_expected, "$case: the unlogged state is as of the checkpoint");
	}
	is(join("\n", log_crashes($node, $log_offset)), '', "$case: nothing crashed");
}

# Asynchronous commit: what came before pg_switch_wal() and a wait survives.
make_states();
$node->safe_psql('postgres', q{ALTER SYSTEM SET synchronous_commit = off; SELECT pg_reload_conf()});
workload(1000);
$node->safe_psql('postgres', q{SELECT pg_switch_wal()});
usleep(3 * 200_000);
my $async = $node->safe_psql('postgres', $probe);
is($async, '4000 4000 8002000 0', 'synchronous_commit off: every write made');
ok(defined crash_and_start(), 'synchronous_commit off: restarted');
is($node->safe_psql('postgres', $probe), $async,
	'synchronous_commit off: everything written before pg_switch_wal() and a wait is there');
$node->safe_psql('postgres', q{ALTER SYSTEM RESET synchronous_commit; SELECT pg_reload_conf()});

# The slot keeps WAL from the newest checkpoint's cut, and moves with it.
my $slot = q{SELECT restart_lsn FROM pg_replication_slots WHERE slot_name = 'state_backend'};
my $lsn1 = $node->safe_psql('postgres', $slot);
isnt($lsn1, '', 'the extension\'s slot exists');
workload(200);
$node->safe_psql('postgres', q{SELECT state.wait_snapshot(state.snapshot())});
my $lsn2 = $node->safe_psql('postgres', $slot);
is($node->safe_psql('postgres', qq{SELECT '$lsn2'::pg_lsn > '$lsn1'::pg_lsn}), 't',
	'a checkpoint moves the slot forward');
my ($newest) = sort { $b <=> $a } map { /chk-(\d+)/ ? $1 : () } glob("$chkroot/chk-*");
like(slurp_file("$chkroot/chk-$newest/MANIFEST"), qr/^wal_position \Q$lsn2\E$/m,
	'the slot keeps WAL from the checkpoint\'s recorded cut');
workload(200);
$node->safe_psql('postgres', q{SELECT state.wait_snapshot(state.snapshot())});
is($node->safe_psql('postgres', qq{SELECT ($slot) > '$lsn2'::pg_lsn}), 't',
	'and again at the next checkpoint');

# A restore of logged states is durable when it returns, and so is what
# is written to them afterwards.
make_states();
workload(100);
my $snapdir = PostgreSQL::Test::Utils::tempdir() . '/snap';
$node->safe_psql('postgres', qq{SELECT state.wait_snapshot(state.snapshot('$snapdir'))});
my $at_snapshot = $node->safe_psql('postgres', $probe);
workload(100);
$node->safe_psql('postgres', qq{SELECT state.restore('$snapdir')});
is($node->safe_psql('postgres', $probe), $at_snapshot, 'restore: the snapshot\'s states are back');
$node->safe_psql('postgres', q{SELECT state.reduce('hr', 0, 1000::bigint)});
my $after_restore = $node->safe_psql('postgres', $probe);
ok(defined crash_and_start(), 'restore: restarted after -m immediate');
is($node->safe_psql('postgres', $probe), $after_restore,
	'restore: the restored states and the write after the restore survive the crash');

# A clean restart, and a crash whose rocksdb directory is gone: states come
# from the checkpoint and WAL, and loading the checkpoint logs nothing that
# replay would mistake for new states.
make_states();
workload(100);
my $before_restart = $node->safe_psql('postgres', $probe);
$node->restart;
ok(defined wait_for_worker($node), 'clean restart');
is($node->safe_psql('postgres', $probe), $before_restart, 'a clean restart keeps logged states');
workload(100);
my $before_loss = $node->safe_psql('postgres', $probe);
$node->stop('immediate');
rename($node->data_dir . '/pg_state_backend/rocksdb', $node->data_dir . '/pg_state_backend/rocksdb.lost')
  or die "rename: $!";
$node->start;
ok(defined wait_for_worker($node), 'started without the rocksdb directory');
is($node->safe_psql('postgres', $probe), $before_loss,
	'the rocksdb state comes back from the checkpoint and WAL');

# A checkpoint that cannot be written after recovery: the next crash
# replays WAL of both runs, which name the same states by the same ids.
make_states();
workload(100);
chmod(0555, $chkroot) or die "chmod: $!";
ok(defined crash_and_start(), 'restarted with an unwritable checkpoint directory');
workload(100);
$node->safe_psql('postgres',
	q{SELECT state.create_state('lx', 'value', 'int', 'int', logged => true);
	  SELECT state.value_set('lx', k, k) FROM generate_series(1, 10) k});
my $two_runs = $node->safe_psql('postgres', $probe);
like($two_runs, qr/^800 800 \d+ 0$/, 'writes of both runs made');
ok(defined crash_and_start(), 'crashed again before any checkpoint');
chmod(0755, $chkroot) or die "chmod: $!";
is($node->safe_psql('postgres', $probe), $two_runs, 'both runs\' writes are there');
is($node->safe_psql('postgres', q{SELECT sum(state.value_get('lx', k, 0)) FROM generate_series(1, 10) k}),
	'55', 'and a state created in the second run');

# Kill -9 of the worker while it replays: the second replay gives the same.
make_states();
$node->safe_psql('postgres',
	q{SELECT count(state.reduce('hr', k % 4, 1::bigint)) FROM generate_series(1, 400000) k});
workload(500);
my $big = $node->safe_psql('postgres', $probe);
is($big, '402000 2000 2001000 0', 'a long WAL to replay');
$node->stop('immediate');
my $log_offset = -s $node->logfile;
$node->start;
my $killed = 0;
for (1 .. 600)
{
	my $log = slurp_file($node->logfile, $log_offset);
	if ($log =~ /replays the WAL of logged states.*?\[(\d+)\]|\[(\d+)\][^\n]*replays the WAL of logged states/)
	{
		my $pid = $1 // $2;
		$killed = kill('KILL', $pid) if $log !~ /replayed \d+ WAL records/;
		last;
	}
	usleep(10_000);
}
diag('the worker finished replaying before it could be killed') unless $killed;
# A killed worker makes the postmaster restart every process: wait for that,
# not for the killed worker's entry in pg_stat_activity.
ok(defined($killed ? wait_for_crash_restart($node, $log_offset) : wait_for_worker($node)),
	'the server came back after the kill');
is($node->safe_psql('postgres', $probe), $big, 'the result is the same after a kill during replay');

$node->stop;
done_testing();
