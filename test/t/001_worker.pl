# The state worker and the library's life cycle: preload requirement,
# worker visible, worker restarted after SIGTERM without losing heap state,
# SIGHUP harmless, and a crash restart of the cluster leaves a working
# extension.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $WT = "backend_type = 'state_backend worker'";

############################################################ without preload

my $plain = new_state_node('no_preload', preload => 0);

my $err = sql_error($plain, 'CREATE EXTENSION state_backend;');
isnt($err->{ret}, 0, 'CREATE EXTENSION fails without shared_preload_libraries');
is($err->{sqlstate}, '55000',
	'... with SQLSTATE 55000 (object_not_in_prerequisite_state)')
  or diag $err->{stderr};
like(
	$err->{message},
	qr/state_backend must be loaded via shared_preload_libraries/,
	'... and the contract message');
like(
	$err->{stderr},
	qr/^HINT:.*shared_preload_libraries/m,
	'... and a hint naming shared_preload_libraries');

# Twice in one session: once the library is loaded by the first attempt,
# the second must still be refused the same way (not crash, not succeed).
$err = sql_error($plain,
	"CREATE EXTENSION state_backend;\nCREATE EXTENSION state_backend;",
	on_error_stop => 0);
my @codes = ($err->{stderr} =~ /ERROR:\s+(\w{5}):/g);
is_deeply(\@codes, [ '55000', '55000' ],
	'a second CREATE EXTENSION in the same session is refused the same way')
  or diag $err->{stderr};

is( $plain->safe_psql(
		'postgres',
		"SELECT (SELECT count(*) FROM pg_extension WHERE extname = 'state_backend') || ',' || "
		  . "(SELECT count(*) FROM pg_namespace WHERE nspname = 'state')"),
	'0,0',
	'the failed CREATE EXTENSION leaves no extension and no schema behind');
is($plain->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE $WT"),
	'0', 'no state worker runs without the preload');
is_deeply([ log_crashes($plain) ], [], 'no crash on the server without preload');
$plain->stop;

############################################################ with preload

my $node = new_state_node(
	'worker',
	conf => "restart_after_crash = on\n");

my $wpid = wait_for_worker($node, timeout => 60);
ok(defined $wpid, 'the state worker shows in pg_stat_activity')
  or die 'no state worker: cannot go on';
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE $WT"),
	'1', 'exactly one state worker');

# Some state of every kind, stored before anything happens to the worker.
$node->safe_psql(
	'postgres', q{
SELECT state.create_state('v', 'value', 'text', 'bigint');
SELECT state.create_state('l', 'list', 'bigint', 'text');
SELECT state.create_state('m', 'map', 'text', 'numeric', map_key_type => 'integer');
SELECT state.create_state('r', 'reducing', 'bigint', 'bigint', reducer => 'sum');
SELECT state.value_set('v', 'k' || i, i::bigint * 10) FROM generate_series(1, 100) i;
SELECT state.list_add('l', 7::bigint, 'e' || i) FROM generate_series(1, 50) i;
SELECT state.map_put('m', 'a', i, i * 1.5) FROM generate_series(1, 20) i;
SELECT state.reduce('r', 1::bigint, i::bigint) FROM generate_series(1, 100) i;
});

# One query that reads everything back; the expected answer never changes.
my $check_sql = q{
SELECT (SELECT count(*) FROM generate_series(1, 100) i
         WHERE state.value_get('v', 'k' || i, -1::bigint) = i * 10)
    || '|' || state.list_length('l', 7::bigint)
    || '|' || array_to_string(state.list_get('l', 7::bigint, NULL::text[]), ',')
    || '|' || state.map_size('m', 'a')
    || '|' || state.map_get('m', 'a', 20, 0::numeric)
    || '|' || state.value_get('r', 1::bigint, 0::bigint)
};
my $expected = '100|50|'
  . join(',', map { "e$_" } 1 .. 50)
  . '|20|30.0|5050';
is($node->safe_psql('postgres', $check_sql), $expected, 'state of every kind reads back');

# A session that must live through everything that happens to the worker:
# if the worker's death made the postmaster restart the cluster, this
# session would be gone.
my $survivor = $node->background_psql('postgres', on_error_stop => 0);
my $survivor_pid = $survivor->query_safe('SELECT pg_backend_pid()');
is($survivor->query_safe($check_sql), $expected, 'a long-lived session reads the state');

my $log_offset = -s $node->logfile;

################################ SIGHUP

# A real change of a setting the worker applies at reload.
$node->safe_psql('postgres', q{ALTER SYSTEM SET state_backend.memory_limit = '128MB'});
ok(reload_worker($node), 'the worker applies the reload');
is(worker_pid($node), $wpid, 'the worker keeps running after SIGHUP (same pid)');
is($node->safe_psql('postgres', $check_sql), $expected, 'state answers after SIGHUP');
is($node->safe_psql('postgres', 'SHOW state_backend.memory_limit'), '128MB',
	'the changed setting is in effect');

################################ pg_terminate_backend

# Wait until the worker has really exited (it first waits up to 5 s for
# sessions that still talk to it, longer on a loaded machine).
my ($tret, $tout, $terr) = $node->psql('postgres',
	"SELECT pg_terminate_backend($wpid, $PostgreSQL::Test::Utils::timeout_default * 1000)");
is($tout, 't', 'pg_terminate_backend(worker) succeeds')
  or diag $terr;

# Heap state lives in shared memory and is served by the calling backend:
# it answers also while the worker is away (usually it is not back yet).
is($survivor->query_safe($check_sql), $expected,
	'heap state answers right after the worker exited');
$survivor->query_safe(q{SELECT state.value_set('v', 'during', 1::bigint)});

my $wpid2 = wait_for_worker($node, not => $wpid, timeout => 60);
ok(defined $wpid2, 'the postmaster restarts the worker after pg_terminate_backend')
  or die 'the worker did not come back: cannot go on';
is($node->safe_psql('postgres', $check_sql), $expected,
	'state stored before the worker was terminated is still readable');
is($node->safe_psql('postgres', q{SELECT state.value_get('v', 'during', 0::bigint)}),
	'1', 'state written while the worker was away is readable');
is($survivor->query_safe('SELECT pg_backend_pid()'), $survivor_pid,
	'other sessions survived the worker exit (no crash restart)');
is($survivor->query_safe($check_sql), $expected, '... and still read the state');

# The functions still answer, writes included.
$node->safe_psql('postgres', q{
SELECT state.create_state('after_term', 'value', 'integer', 'text');
SELECT state.value_set('after_term', 1, 'one');
});
is($node->safe_psql('postgres', q{SELECT state.value_get('after_term', 1, ''::text)}),
	'one', 'a new state works after the worker restart');

################################ SIGTERM by kill

ok(kill('TERM', $wpid2), 'SIGTERM sent to the worker');
my $wpid3 = wait_for_worker($node, not => $wpid2, timeout => 60);
ok(defined $wpid3, 'the postmaster restarts the worker after SIGTERM')
  or die 'the worker did not come back: cannot go on';
is($node->safe_psql('postgres', $check_sql), $expected,
	'state is still readable after the worker was killed with SIGTERM');
is($survivor->query_safe('SELECT pg_backend_pid()'), $survivor_pid,
	'other sessions survived the SIGTERM (no crash restart)');
$survivor->query_safe(q{SELECT state.reduce('r', 1::bigint, 1000::bigint)});
is($node->safe_psql('postgres', q{SELECT state.value_get('r', 1::bigint, 0::bigint)}),
	'6050', 'reduce works after the worker restart');
$survivor->query_safe(q{SELECT state.reduce('r', 1::bigint, -1000::bigint)});

is_deeply([ log_crashes($node, $log_offset) ], [],
	'no process crashed and no crash restart happened so far');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE $WT"),
	'1', 'still exactly one state worker');

$survivor->quit;

################################ crash restart (kill -9 of a backend)

$log_offset = -s $node->logfile;
my $victim = $node->background_psql('postgres', on_error_stop => 0);
my $victim_pid = $victim->query_safe('SELECT pg_backend_pid()');
# The victim touches the state first, so that it is attached to it.
$victim->query_safe($check_sql);
ok(kill('KILL', $victim_pid), 'SIGKILL sent to a regular backend');
$node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset);
eval { $victim->quit; };

ok($node->poll_query_until('postgres', 'SELECT 1', '1'),
	'the server accepts connections again after the crash restart');
my $wpid4 = wait_for_worker($node, not => $wpid3, timeout => 60);
ok(defined $wpid4, 'the state worker runs again after the crash restart');

# Heap state need not survive a crash (no snapshots yet); descriptors might
# or might not.  Whatever is left, a name can be dropped and reused, and
# new states work.
$node->safe_psql(
	'postgres', q{
SELECT state.drop_state(n, if_exists => true) FROM unnest(ARRAY['v','l','m','r','after_term']) n;
SELECT state.create_state('v', 'value', 'text', 'bigint');
SELECT state.create_state('l', 'list', 'bigint', 'text');
SELECT state.create_state('m', 'map', 'text', 'numeric', map_key_type => 'integer');
SELECT state.create_state('r', 'reducing', 'bigint', 'bigint', reducer => 'sum');
SELECT state.value_set('v', 'k' || i, i::bigint * 10) FROM generate_series(1, 100) i;
SELECT state.list_add('l', 7::bigint, 'e' || i) FROM generate_series(1, 50) i;
SELECT state.map_put('m', 'a', i, i * 1.5) FROM generate_series(1, 20) i;
SELECT state.reduce('r', 1::bigint, i::bigint) FROM generate_series(1, 100) i;
});
is($node->safe_psql('postgres', $check_sql), $expected,
	'after the crash restart states can be created, written and read');
is( $node->safe_psql(
		'postgres',
		q{SELECT string_agg(name || ':' || kind || CASE WHEN kind IN ('value', 'reducing') THEN ':' || entries ELSE '' END, ',' ORDER BY name) FROM state.states}),
	'l:list,m:map,r:reducing:1,v:value:100',
	'state.states lists the re-created states (with their entries)');

# A second session (fresh attach to the rebuilt shared memory) too.
my $after = $node->background_psql('postgres');
is($after->query_safe($check_sql), $expected, 'a new session reads them too');
$after->quit;

is_deeply(
	[ grep { !/\(PID $victim_pid\) was terminated by signal 9|terminating any other active server processes/ }
		  log_crashes($node, $log_offset) ],
	[],
	'the only crash was the one we caused');

################################ clean shutdown

$log_offset = -s $node->logfile;
ok($node->stop('fast', fail_ok => 1), 'the server stops cleanly (fast)');
is_deeply([ log_crashes($node, $log_offset) ], [], 'no crash during shutdown');

done_testing();
