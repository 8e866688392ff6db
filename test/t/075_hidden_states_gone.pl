# The hidden states of a restore or of a change (alter_state) that never
# publishes them leave nothing behind: not their data, when the process
# making them exits (a terminate, a FATAL), and not their ids on a
# standby, when their creation went to WAL.
#
# A primary gives a state's id to a new state once it starts from a
# checkpoint without that state; a standby that still held a hidden state
# under that id stopped applying WAL at the new state's creation ("state
# id N is in use").  So each case below ends the same way: a checkpoint,
# the primary stopped in immediate mode and started, a new logged state
# made and written, and the standby must show it:
#
#   restore, exit     the restoring session exits after the restored
#                     states went to WAL, before their publication
#   restore, crash    the same, the server crashes there (the primary's
#                     start drops the hidden states its replay made)
#   alter, crash      a change of a logged state crashes before its switch
#
# And without a standby: a restore whose process exits before its
# publication, at each step, gives back the memory its hidden states took,
# so that the next restore fits in state_backend.memory_limit.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $dir = PostgreSQL::Test::Utils::tempdir();
my $node = new_state_node(
	'hidden_gone',
	init => { allows_streaming => 1 },
	conf => "state_backend.checkpoint_dir = '$dir/checkpoints'\nrestart_after_crash = on\n");
ok(defined wait_for_worker($node), 'state worker running');

$node->backup('b');
checkpoint_now($node);
my $standby = PostgreSQL::Test::Cluster->new('hidden_gone_standby');
$standby->init_from_backup($node, 'b', has_streaming => 1);
$standby->start;


# A logged state, snapshotted, to restore.
$node->safe_psql('postgres', qq{
SELECT state.create_state('src', 'value', 'int', 'int', logged => true);
SELECT count(state.value_set('src', k, k)) FROM generate_series(1, 50) k;
SELECT state.wait_snapshot(state.snapshot('$dir/snap'));});
ok(standby_applied($node, $standby), 'the standby applies the primary\'s logged states');

my $round = 0;

# after_restart($what): a checkpoint, an immediate restart of the primary,
# a new logged state: the standby applies it.
sub after_restart
{
	my ($what) = @_;
	$round++;
	checkpoint_now($node);
	$node->stop('immediate');
	$node->start;
	wait_for_worker($node, timeout => $PostgreSQL::Test::Utils::timeout_default);
	$node->safe_psql('postgres', qq{
SELECT state.create_state('new_$round', 'value', 'int', 'int', logged => true);
SELECT state.value_set('new_$round', 1, $round);});
	ok(standby_applied($node, $standby), "$what: the standby applied what came after the primary's restart");
	ok($standby->poll_query_until('postgres', "SELECT state.value_get('new_$round', 1, 0) = $round"),
		"$what: a state made after the primary's restart reaches the standby")
	  or diag($standby->safe_psql('postgres', 'SELECT * FROM state.worker'));
	is($standby->safe_psql('postgres', q{SELECT state.value_get('src', 7, 0)}), '7',
		"$what: the standby's states are as the primary's");
}

# restore, exit: the session exits after log_restored, before publishing.
my $e = sql_error($node, q{SET state_backend.fault_points = 'restore.before_publish:exit';
SELECT state.restore('} . "$dir/snap" . q{')});
like($e->{stderr}, qr/fault point "restore.before_publish" reached/, 'restore, exit: the session exits before its publication');
is($node->safe_psql('postgres', q{SELECT count(*) FROM state.states WHERE name = 'src'}), '1',
	'restore, exit: the state is as it was');
after_restart('restore, exit');

# restore, crash at the same step.
my $offset = -s $node->logfile;
my ($ret, $out, $err) = psql_nodie($node, 'postgres', q{SET state_backend.fault_points = 'restore.before_publish:crash';
SELECT state.restore('} . "$dir/snap" . q{')});
isnt($ret, 0, 'restore, crash: the session was killed');
ok(defined wait_for_crash_restart($node, $offset), 'restore, crash: the server came back');
after_restart('restore, crash');

# alter, crash before the switch of a logged state's change.
$offset = -s $node->logfile;
($ret, $out, $err) = psql_nodie($node, 'postgres', q{SET state_backend.fault_points = 'alter.before_publish:crash';
SELECT state.alter_state('src', value_type => 'bigint')});
isnt($ret, 0, 'alter, crash: the session was killed');
ok(defined wait_for_crash_restart($node, $offset), 'alter, crash: the server came back');
is($node->safe_psql('postgres', q{SELECT value_type FROM state.states WHERE name = 'src'}), 'integer',
	'alter, crash: the state is as it was');
after_restart('alter, crash');

# The standby's worker exits after each record it applies (standby.
# record_after_apply) while a restore's records arrive: the worker after it
# reads again from the position its round published, before the restore's
# CREATE_HIDDEN, whose hidden state the worker before had made.  It takes
# that state back, or makes it again, rather than stop there ("state id N
# is in use").  The records arrive once the point is armed: replay waits.
$node->safe_psql('postgres', q{SELECT state.value_set('src', 7, 70)});
ok(standby_applied($node, $standby) &&
	$standby->poll_query_until('postgres', q{SELECT state.value_get('src', 7, 0) = 70}),
	'the standby applied a write before the restore');
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
$node->safe_psql('postgres', qq{SELECT state.restore('$dir/snap')});
$standby->append_conf('postgresql.conf', "state_backend.fault_points = 'standby.record_after_apply:exit'\n");
reload_worker($standby) or die 'the standby\'s worker did not apply the fault point';
$offset = -s $standby->logfile;
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
$standby->wait_for_log(qr/fault point "standby.record_after_apply" reached/, $offset);
sleep(2);
$standby->append_conf('postgresql.conf', "state_backend.fault_points = ''\n");
$standby->reload;
ok(standby_applied($node, $standby), 'worker exits amid a restore\'s records: the standby applied them');
ok($standby->poll_query_until('postgres', q{SELECT state.value_get('src', 7, 0) = 7}),
	'worker exits amid a restore\'s records: the restore reached the standby')
  or diag($standby->safe_psql('postgres', 'SELECT * FROM state.worker'));
is($standby->safe_psql('postgres', q{SELECT count(*) || ' ' || sum(v) FROM state.entries('src', NULL::int, NULL::int) e(k, v)}),
	'50 1275', 'worker exits amid a restore\'s records: the standby holds the restored state whole');

$standby->stop;
$node->stop;

# A restore whose process exits before its publication gives back the
# memory of its hidden states.
my $small = new_state_node('hidden_gone_small', conf => "state_backend.memory_limit = '12MB'\n");
$small->safe_psql('postgres', qq{
SELECT state.create_state('big', 'value', 'int', 'text');
SELECT count(state.value_set('big', k, repeat('x', 1000))) FROM generate_series(1, 4000) k;
SELECT state.wait_snapshot(state.snapshot('$dir/big'));});
foreach my $point ('restore.load_state', 'restore.before_publish')
{
	$e = sql_error($small, qq{SET state_backend.fault_points = '$point:exit';
SELECT state.restore('$dir/big')});
	like($e->{stderr}, qr/fault point "\Q$point\E" reached/, "exit at $point: the restoring session exited");
	is($small->safe_psql('postgres', q{SELECT entries FROM state.states WHERE name = 'big'}), '4000',
		"exit at $point: the state is as it was");
	my ($r, $o, $er) = $small->psql('postgres', qq{SELECT state.restore('$dir/big')});
	is($r, 0, "exit at $point: the next restore fits in memory_limit (nothing of the exited one is left)")
	  or diag($er);
}
$small->stop;

done_testing();
