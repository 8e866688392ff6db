# Heap states across server restarts, with state_backend.checkpoint_dir set.
#
# - A clean shutdown (fast, smart) writes a final checkpoint and the next
#   start loads it into every database: nothing acknowledged is lost, even
#   a write by a session still connected when the fast shutdown began.
# - An immediate shutdown, or a crash restart (kill -9 of a regular backend
#   or of the state worker, both while a snapshot is being written), comes
#   back with exactly the newest *completed* checkpoint: what came after it
#   is gone, the interrupted checkpoint (no MANIFEST) is not loaded,
#   state.snapshots starts empty, ids are not reused, and the next
#   checkpoint removes the interrupted one.
# - restore_on_start = off starts with no states.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $TIMEOUT = $PostgreSQL::Test::Utils::timeout_default;
my $BIG = 300_000;    # entries of the state whose snapshot gets interrupted
my $chkroot = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';

my $node = new_state_node(
	'restart',
	conf => "state_backend.checkpoint_dir = '$chkroot'\n"
	  . "restart_after_crash = on\n");
ok(defined wait_for_worker($node), 'state worker running');
my $log_offset = -s $node->logfile;

# fp(): one line that describes every state of the current database, its
# kind, its entries and a digest of its contents.  All states of these tests
# have text keys; value and reducing states hold bigint, lists text, maps
# integer -> numeric.
my $fp_function = q{
CREATE FUNCTION fp() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  r record;
  c text;
  res text := '';
BEGIN
  FOR r IN SELECT name, kind, entries FROM state.states ORDER BY name LOOP
    IF r.kind IN ('value', 'reducing') THEN
      SELECT md5(coalesce(string_agg(k || '=' || state.value_get(r.name, k, 0::bigint), ',' ORDER BY k), ''))
        INTO c FROM state.keys(r.name, ''::text) k;
    ELSIF r.kind = 'list' THEN
      SELECT md5(coalesce(string_agg(k || '=' || array_to_string(state.list_get(r.name, k, '{}'::text[]), '/'), ',' ORDER BY k), ''))
        INTO c FROM state.keys(r.name, ''::text) k;
    ELSE
      SELECT md5(coalesce(string_agg(k || '=' || (SELECT string_agg(e.map_key || ':' || e.value, '/' ORDER BY e.map_key)
                                                   FROM state.map_entries(r.name, k, 0, 0::numeric) e), ',' ORDER BY k), ''))
        INTO c FROM state.keys(r.name, ''::text) k;
    END IF;
    res := res || r.name || ':' || r.kind || ':' || r.entries || ':' || c || ' ';
  END LOOP;
  RETURN res;
END $$;
};

$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', 'CREATE EXTENSION state_backend');
$node->safe_psql('postgres', $fp_function);
$node->safe_psql('other', $fp_function);

# Both databases' descriptions.
sub fingerprint
{
	return 'postgres: ' . $node->safe_psql('postgres', 'SELECT fp()')
	  . "\nother: " . $node->safe_psql('other', 'SELECT fp()');
}

# Rows written in round $n (keys of the form "<prefix>$n.<i>").
sub write_round
{
	my ($n) = @_;
	$node->safe_psql(
		'postgres', qq{
SELECT count(state.value_set('v', 'k$n.' || i, i * $n)) FROM generate_series(1, 500) i;
SELECT count(state.list_add('l', 'k' || (i % 7), 'e$n.' || i)) FROM generate_series(1, 100) i;
SELECT count(state.map_put('m', 'k$n', i, i / 4.0)) FROM generate_series(1, 50) i;
SELECT count(state.reduce('r', 'k' || (i % 3), i::bigint)) FROM generate_series(1, 100) i;
});
	$node->safe_psql('other',
		qq{SELECT count(state.value_set('ov', 'o$n.' || i, -i)) FROM generate_series(1, 200) i;});
}

$node->safe_psql(
	'postgres', q{
SELECT state.create_state('v', 'value', 'text', 'bigint');
SELECT state.create_state('l', 'list', 'text', 'text');
SELECT state.create_state('m', 'map', 'text', 'numeric', map_key_type => 'integer');
SELECT state.create_state('r', 'reducing', 'text', 'bigint', reducer => 'sum');
});
$node->safe_psql('other', q{SELECT state.create_state('ov', 'value', 'text', 'bigint')});
write_round(1);

# Server start: the worker loads the newest checkpoint; returns the log
# lines that say what it restored.
sub restored_lines
{
	my ($offset) = @_;
	return join "\n",
	  grep { /state_backend restored/ } split /\n/, slurp_file($node->logfile, $offset);
}

############################################################ fast restart

# A session that writes and stays connected while the server shuts down.
my $bg = $node->background_psql('postgres', on_error_stop => 0);
$bg->query_safe(q{SELECT state.value_set('v', 'last-before-fast', 42::bigint)});
my $before = fingerprint();
like($before, qr/^postgres: l:list:7:\w+ m:map:1:\w+ r:reducing:3:\w+ v:value:501:\w+ \nother: ov:value:200:\w+ $/,
	'the states hold what was written');

# A big state, so that loading it at the start takes a while: the first
# session after the start must wait for it, not see it missing or partial.
$node->safe_psql(
	'postgres', qq{
SELECT state.create_state('huge', 'value', 'text', 'bigint');
SELECT count(state.value_set('huge', 'h' || i, i)) FROM generate_series(1, $BIG) i;
});

$log_offset = -s $node->logfile;
$node->restart;    # fast
eval { $bg->quit; };
is( $node->safe_psql('postgres',
		qq{SELECT state.value_get('huge', 'h$BIG', 0::bigint) || ',' || (SELECT entries FROM state.states WHERE name = 'huge')}),
	"$BIG,$BIG",
	'the first session after the start sees the big state whole');
$node->safe_psql('postgres', q{SELECT state.drop_state('huge')});
is(fingerprint(), $before, 'after a fast restart every state is back, with every entry');
is($node->safe_psql('postgres', q{SELECT state.value_get('v', 'last-before-fast', 0::bigint)}),
	'42', '... including the write of a session connected during the shutdown');
my $restored = restored_lines($log_offset);
like($restored, qr/restored \d+ entries of database "postgres" from "\Q$chkroot\E\/chk-\d+"/,
	'the worker restored database postgres from a checkpoint');
like($restored, qr/restored 200 entries of database "other"/,
	'... and database other');
my @complete = complete_checkpoints($chkroot);
is(scalar @complete, 1,
	'one complete checkpoint under checkpoint_dir (checkpoints_retained = 1)');

############################################################ worker restart

# The worker alone exits (pg_terminate_backend; the postmaster starts a new
# one a second later).  Shared memory, and with it every heap state, stays:
# this is not a server start, and nothing written meanwhile may be replaced
# by a checkpoint.
my $old_worker = worker_pid($node);
$log_offset = -s $node->logfile;
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($old_worker, 30000)"),
	't', 'the state worker exits after pg_terminate_backend');
$node->safe_psql('postgres',
	q{SELECT state.value_set('v', 'while-worker-away', 7::bigint)});
ok(defined wait_for_worker($node, not => $old_worker, timeout => $TIMEOUT),
	'a new state worker starts');
$node->wait_for_log(qr/state_backend worker started/, $log_offset);
$node->safe_psql('postgres',
	q{SELECT state.value_set('v', 'after-worker-back', 8::bigint)});
is( $node->safe_psql('postgres',
		q{SELECT state.value_get('v', 'while-worker-away', 0::bigint) || ',' || state.value_get('v', 'after-worker-back', 0::bigint)}),
	'7,8',
	'a write made while the worker was away survives its restart');
$node->safe_psql('postgres',
	q{SELECT state.value_set('v', k, NULL::bigint) FROM unnest(ARRAY['while-worker-away', 'after-worker-back']) k});

############################################################ smart stop, start

write_round(2);
$before = fingerprint();
$node->stop('smart');
$node->start;
is(fingerprint(), $before, 'after a smart stop and a start every state is back');

############################################################ immediate stop

# Not a clean shutdown: no final checkpoint.  The newest one is the final
# checkpoint of the smart stop.
write_round(3);
$node->safe_psql('postgres', q{SELECT state.create_state('after', 'value', 'text', 'bigint')});
$node->stop('immediate');
$node->start;
is(fingerprint(), $before,
	'after an immediate stop the states are those of the last checkpoint (later writes gone)');

############################################################ crash restarts

# crash_during_snapshot($name, $kill): takes a checkpoint and waits for it,
# writes more (a round and a big state), starts another checkpoint in a
# session and, as soon as the worker has begun writing it, calls
# $kill->($pid_of_that_session, $worker_pid).
sub crash_during_snapshot
{
	my ($name, $kill) = @_;

	my $c1 = $node->safe_psql('postgres', 'SELECT state.snapshot()');
	is(wait_snapshot_status($node, $c1), 'completed', "$name: checkpoint $c1 completed");
	ok(-f "$chkroot/chk-$c1/MANIFEST", "$name: chk-$c1 has its MANIFEST");
	my $at_c1 = fingerprint();

	write_round(4);
	$node->safe_psql(
		'postgres', qq{
SELECT state.drop_state('big', if_exists => true);
SELECT state.create_state('big', 'value', 'text', 'bigint');
SELECT count(state.value_set('big', 'b' || i, i)) FROM generate_series(1, $BIG) i;
});

	my $victim = $node->background_psql('postgres', on_error_stop => 0);
	my $offset = -s $node->logfile;
	my $victim_pid = $victim->query_safe('SELECT pg_backend_pid()');
	my $old_worker = worker_pid($node);
	my $c2 = $victim->query_safe('SELECT state.snapshot()');
	# Kill once the worker has begun writing (its directory exists).
	my $end = time() + $TIMEOUT;
	usleep(1000) until -d "$chkroot/chk-$c2" || time() > $end;
	$kill->($victim_pid, $old_worker);
	my $wpid = wait_for_crash_restart($node, $offset);
	eval { $victim->quit; };
	ok(defined $wpid && $wpid != $old_worker, "$name: crash restart, a new state worker runs");

	my $c2_done = -f "$chkroot/chk-$c2/MANIFEST";
	ok(-d "$chkroot/chk-$c2", "$name: the interrupted checkpoint chk-$c2 left its directory");
  SKIP:
	{
		skip "$name: checkpoint $c2 completed before the kill", 3 if $c2_done;
		is(fingerprint(), $at_c1,
			"$name: the states are those of the last completed checkpoint $c1");
		my $restored = restored_lines($offset);
		like($restored, qr/from "\Q$chkroot\E\/chk-$c1"/,
			"$name: restored from chk-$c1")
		  or diag $restored;
		unlike($restored, qr/chk-$c2"/, "$name: not from the incomplete chk-$c2");
	}
	is($node->safe_psql('postgres', 'SELECT count(*) FROM state.snapshots'),
		'0', "$name: state.snapshots starts empty");

	# The next checkpoint: a new id, and the interrupted one is removed.
	my $c3 = $node->safe_psql('postgres', 'SELECT state.snapshot()');
	cmp_ok($c3, '>', $c2, "$name: the next checkpoint id ($c3) is not reused");
	is(wait_snapshot_status($node, $c3), 'completed', "$name: checkpoint $c3 completes");
	is_deeply([ sort { $a <=> $b } keys %{ checkpoint_dirs($chkroot) } ],
		[$c3], "$name: only chk-$c3 remains (the interrupted chk-$c2 was removed)");

	my @crashes = log_crashes($node, $offset);
	return @crashes;
}

my @crashes = crash_during_snapshot(
	'kill -9 of a backend',
	sub {
		my ($victim, $worker) = @_;
		ok(kill('KILL', $victim), 'SIGKILL sent to a regular backend during a snapshot');
	});
ok((grep { /terminated by signal 9/ } @crashes),
	'the log shows the backend killed by signal 9');

@crashes = crash_during_snapshot(
	'kill -9 of the worker',
	sub {
		my ($victim, $worker) = @_;
		ok(kill('KILL', $worker), 'SIGKILL sent to the state worker during a snapshot');
	});
ok((grep { /state_backend worker.*terminated by signal 9/ } @crashes),
	'the log shows the state worker killed by signal 9')
  or diag join("\n", @crashes);

############################################################ restore_on_start = off

$before = fingerprint();
$node->append_conf('postgresql.conf', "state_backend.restore_on_start = off\n");
$log_offset = -s $node->logfile;
$node->restart;
is(fingerprint(), "postgres: \nother: ", 'restore_on_start = off: no states after the restart');
is(restored_lines($log_offset), '', '... and nothing was restored');

# The next clean shutdown checkpoints what there is now; with
# restore_on_start back on, that is what comes back.
$node->safe_psql('postgres',
	q{SELECT state.create_state('fresh', 'value', 'text', 'bigint'); SELECT state.value_set('fresh', 'x', 1::bigint);});
$before = fingerprint();
$node->append_conf('postgresql.conf', "state_backend.restore_on_start = on\n");
$node->restart;
is(fingerprint(), $before,
	'restore_on_start = on again: the states of the last clean shutdown come back');

$log_offset = -s $node->logfile;
$node->stop('fast');
is_deeply([ log_crashes($node, $log_offset) ], [], 'no crash at the last shutdown');

done_testing();
