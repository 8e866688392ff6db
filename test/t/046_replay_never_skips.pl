# A start that cannot apply a WAL record of logged states never discards it.
#
# Logged states of every backend (heap lists, rocksdb lists, an lmdb value
# state, a transactional heap sum) are written after a checkpoint, then the
# server is killed (immediate stop).  At the next start the state worker
# replays their WAL; a fault point makes applying a record fail, as a full
# file system or a full LMDB map does:
# - failing at every record: the start stops before the first one, says
#   why in the log, in state.worker (apply_blocked_lsn) and to sessions
#   (57P03), takes no checkpoint (the one whose WAL the slot keeps stays),
#   and a stop meanwhile takes no final checkpoint either; once disarmed, a
#   start applies every acknowledged write, exactly once;
# - failing once, at one record in the middle of the replay, or at one
#   record of a transaction's commit: it is tried again a second later, and
#   nothing is skipped or applied twice;
# - disarmed by a reload while the start waits: it goes on without a restart;
# - the worker alone exits in the middle of the replay: the next one
#   restarts the server's processes rather than apply anything twice;
# - the checkpoint itself cannot be loaded: the start waits for it the
#   same way (restore_blocked_checkpoint), and comes up with every state.
# Before the fix every record was skipped with a WARNING, a checkpoint of
# what the old checkpoint held was taken, and every write since was gone.

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
	'replay_never_skips',
	lmdb => 1,
	init => { allows_streaming => 1 },
	conf => "state_backend.checkpoint_dir = '$chkroot'\n"
	  . "state_backend.checkpoint_interval = 0\n"
	  . "restart_after_crash = on\n");
ok(defined wait_for_worker($node), 'state worker running');

$node->safe_psql('postgres', q{
SELECT state.create_state('h_list', 'list', 'int', 'int', logged => true);
SELECT state.create_state('k_list', 'list', 'int', 'int', backend => 'rocksdb', logged => true);
SELECT state.create_state('l_val', 'value', 'int', 'text', backend => 'lmdb', logged => true);
SELECT state.create_state('t_sum', 'reducing', 'int', 'bigint', reducer => 'sum',
                          logged => true, transactional => true);
});

# Writes from..to, each acknowledged: appends (doubled if applied twice),
# values, and one transaction that folds into five keys.
sub write_range
{
	my ($from, $to) = @_;
	$node->safe_psql('postgres', qq{
SELECT count(state.list_add('h_list', i % 10, i)) FROM generate_series($from, $to) i;
SELECT count(state.list_add('k_list', i % 10, i)) FROM generate_series($from, $to) i;
SELECT count(state.value_set('l_val', i, 'v' || i)) FROM generate_series($from, $to) i;
BEGIN;
SELECT count(state.reduce('t_sum', i % 5, i::bigint)) FROM generate_series($from, $to) i;
COMMIT;
});
	return;
}

my $read = q{SELECT
  (SELECT sum(state.list_length('h_list', k)) FROM generate_series(0, 9) k) || '|' ||
  (SELECT sum(s) FROM generate_series(0, 9) k,
     LATERAL (SELECT sum(e) AS s FROM unnest(state.list_get('h_list', k, '{}'::int[])) e) x) || '|' ||
  (SELECT sum(state.list_length('k_list', k)) FROM generate_series(0, 9) k) || '|' ||
  (SELECT count(*) FROM generate_series(1, 2000) i WHERE state.value_get('l_val', i, '') = 'v' || i) || '|' ||
  (SELECT sum(state.value_get('t_sum', k, 0::bigint)) FROM generate_series(0, 4) k)};

# What the states hold after writes 1..n, each once.
sub expected
{
	my ($n) = @_;
	my $sum = $n * ($n + 1) / 2;
	return "$n|$sum|$n|$n|$sum";
}

# Polls until sessions are served (the start finished); the read, or undef.
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

sub arm
{
	my ($points) = @_;
	$node->append_conf('postgresql.conf', "state_backend.fault_points = '$points'\n");
	return;
}

write_range(1, 200);
is($node->safe_psql('postgres', q{SELECT state.wait_snapshot(state.snapshot())}),
	'completed', 'a checkpoint of the first writes');
write_range(201, 400);
is($node->safe_psql('postgres', $read), expected(400), 'every write read back');

# 1. Every record fails: the start stops before the first.
$node->stop('immediate');
my @before = complete_checkpoints($chkroot);
arm('replay.record_before_apply:error');
my $offset = -s $node->logfile;
$node->start;
$node->wait_for_log(qr/fault point "replay.record_before_apply" reached/, $offset);
# Time for a start that went on to take its checkpoint (the fault fails
# every retry meanwhile).
sleep(3);
ok(slurp_file($node->logfile, $offset) =~
	qr/WARNING:  state_backend could not apply the WAL record of logged states at [0-9A-F]+\/[0-9A-F]+: fault point "replay.record_before_apply" reached/,
	'the record that cannot be applied is reported');
my $err = sql_error($node, $read);
is($err->{sqlstate}, '57P03', 'sessions get an error while the start waits');
like($err->{stderr}, qr/The WAL record of logged states at [0-9A-F]+\/[0-9A-F]+ could not be applied: fault point "replay.record_before_apply" reached/,
	'its detail says which record, and why');
is($node->safe_psql('postgres',
		q{SELECT count(*) FROM state.worker WHERE name = 'apply_blocked_lsn' AND value > 0}),
	'1', 'state.worker shows where the start waits');
is_deeply([ complete_checkpoints($chkroot) ], \@before,
	'no checkpoint is taken, none removed');
my $log = slurp_file($node->logfile, $offset);
ok($log !~ qr/it is skipped|served as the checkpoint left them/, 'no record skipped');
my @tries = $log =~ /fault point "replay.record_before_apply" reached: error/g;
cmp_ok(scalar(@tries), '>=', 2, 'the record is tried again');
$node->stop('fast');
is_deeply([ complete_checkpoints($chkroot) ], \@before,
	'a stop while the start waits takes no final checkpoint');
ok(slurp_file($node->logfile, $offset) =~ qr/state_backend stops its start: the server shuts down/,
	'the stop ends the start');

arm('');
$offset = -s $node->logfile;
$node->start;
is(read_when_served(), expected(400), 'disarmed: every acknowledged write is back, once');
is(join("\n", log_crashes($node, $offset)), '', 'no process crashed');

# 2. One record in the middle fails once: applied a second later.
write_range(401, 600);
$node->stop('immediate');
arm('replay.record_before_apply:error:7');
$offset = -s $node->logfile;
$node->start;
is(read_when_served(), expected(600), 'a record that failed once is applied, nothing skipped');
ok(slurp_file($node->logfile, $offset) =~
	qr/applied the WAL record of logged states at [0-9A-F]+\/[0-9A-F]+ that had failed/,
	'the record that had failed is applied');

# 3. A transaction's commit fails at its second record: the rest follows,
# the first is not applied again.
write_range(601, 800);
$node->stop('immediate');
arm('replay.txn_commit_record:error:2');
$offset = -s $node->logfile;
$node->start;
is(read_when_served(), expected(800), 'a commit that failed half way is applied whole, once');
ok(slurp_file($node->logfile, $offset) =~
	qr/fault point "replay.txn_commit_record" reached: error/,
	'the commit record failed half way');

# 4. Disarmed by a reload while the start waits: no restart needed.
write_range(801, 900);
$node->stop('immediate');
arm('replay.record_before_apply:error');
$offset = -s $node->logfile;
$node->start;
$node->wait_for_log(qr/fault point "replay.record_before_apply" reached/, $offset);
is(sql_error($node, $read)->{sqlstate}, '57P03', 'the start waits again');
arm('');
$node->reload;
is(read_when_served(), expected(900), 'after the reload the start goes on, every write there');
is($node->safe_psql('postgres',
		q{SELECT count(*) FROM state.worker WHERE name = 'apply_blocked_lsn'}),
	'0', 'state.worker no longer shows a blocked apply');

# A clean restart: the checkpoint taken after the replay holds it all.
$node->restart;
is(read_when_served(), expected(900), 'every write after a clean restart');
is(join("\n", log_crashes($node, $offset)), '', 'no process crashed');

# 5. The worker exits in the middle of the replay, right after applying a
# record (a fault, a kill of the worker alone): the worker started again
# must not apply what is half there once more.  The server's processes
# restart with fresh shared memory instead.
write_range(901, 1000);
$node->stop('immediate');
arm('replay.record_after_apply:exit:3');
$offset = -s $node->logfile;
$node->start;
$node->wait_for_log(qr/fault point "replay.record_after_apply" reached: exit/, $offset);
arm('');
$node->reload;
is(read_when_served(), expected(1000), 'a start cut short in the worker alone applies nothing twice');
ok(slurp_file($node->logfile, $offset) =~ qr/the start of the worker before it did not finish/,
	'the next worker restarts the server\'s processes');

# 6. The checkpoint cannot be loaded at start (the memory limit, a damaged
# file): the start waits for it as for a record, rather than coming up
# without the database's states and checkpointing that.
$node->stop('fast');
@before = complete_checkpoints($chkroot);
arm('restore.at_start_database:error');
$offset = -s $node->logfile;
$node->start;
$node->wait_for_log(qr/fault point "restore.at_start_database" reached/, $offset);
sleep(3);
$err = sql_error($node, $read);
is($err->{sqlstate}, '57P03', 'sessions get an error while the checkpoint cannot be loaded');
like($err->{stderr}, qr/states of database "postgres" could not be loaded from checkpoint/,
	'the error says which');
is($node->safe_psql('postgres',
		q{SELECT count(*) FROM state.worker WHERE name = 'restore_blocked_checkpoint' AND value > 0}),
	'1', 'state.worker shows the checkpoint the start waits for');
is_deeply([ complete_checkpoints($chkroot) ], \@before,
	'no checkpoint taken or removed meanwhile');
arm('');
$node->reload;
is(read_when_served(), expected(1000), 'once it loads, every state is there');
ok(slurp_file($node->logfile, $offset) =~ qr/restored database "postgres" from ".*", which had failed/,
	'the load that had failed is reported done');
$node->restart;
is(read_when_served(), expected(1000), 'and after a restart');
is(join("\n", log_crashes($node, $offset)), '', 'no process crashed');

$node->stop;
done_testing();
