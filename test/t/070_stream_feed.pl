# A streaming job fed from a table, exactly once.  A table events(k, ts, v)
# feeds, by statement triggers (state.feed), a transactional window state
# (tumbling 1 min, sum, out_of_orderness 20 s, a late function writing to
# late_values, an emit function writing to fired), a transactional
# reducing state (sum per key) and a second window state with an idle
# timeout of 2 s.  4 clients insert about 12 minutes of event time in
# batches, concurrently; some batches roll back, some roll back to a
# savepoint, one client is killed in the middle of a batch
# (pg_terminate_backend), and the server crashes in the middle of the run
# (kill -9 of a client's backend in the middle of a batch: the postmaster
# restarts the cluster).  At the end, past the watermark 'infinity':
# - the reducing state is sum() per key over the committed rows of events;
# - every late row is in late_values once, and nothing else is there;
# - nothing of what rolled back or was killed is anywhere;
# - every fired window is the GROUP BY over the committed rows that were not
#   late, and no window fired twice;
# and the idle state fires its last window with no advance_watermark.
#
# What survives the crash: the three states are logged (and a checkpoint
# directory is set), so each comes back from WAL with exactly the
# transactions that committed, as the tables do; the watermarks do not
# (they are in shared memory, as Flink's come from the stream) and start
# again from the next value.  So everything above is asserted exactly,
# across the crash, against the committed rows of events.
#
# Lateness must follow from the data, not from the scheduling, or which
# value is late could not be asserted: event time comes from a sequence
# (a tick of $STEP per feeding statement; never back after a crash, since a
# window fired only once the tick that passed it was in flushed WAL), and a
# feeding statement holds a session advisory lock from taking its tick to
# the end of its feed, so statements feed ticks in order.  The clients'
# transactions still interleave: they stay open across other clients'
# statements and commit concurrently.  In a batch, on-time rows are at most
# 10 s behind the tick, so never late (the watermark is at most the last
# tick less 20 s); late rows, fed by a second statement of the batch, are
# 3 to 4 minutes behind it, so always late (and their v is 500 to 598).
# Rows meant to roll back or to be killed carry v of 1,000,000 or more.
#
# The idle state is fed by the same table, but its watermark also follows
# the clock when no row came for 2 s (a pause of the run, the crash), which
# can make on-time rows late for it: only its last window is asserted, one
# that the test fills in a single statement past everything else.
#
# A transactional window state's value added on time holds its windows
# from firing until its transaction ends (a pin under the state's
# watermark lock): the window fires after the commit, with the value, or
# without it after a rollback, and once.  Two cases are reproduced alone
# at the end: a window whose watermark passed while such a transaction was
# open, and a value added while the window's firing is under way (late).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use IPC::Run;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $KEYS = 8;
my $STEP = '3 seconds';     # event time per feeding statement
my $ROWS = 6;               # on-time rows per feeding statement
my $BASE = '2026-06-01 00:00:00+00';
my $EPOCH = '1970-01-01 00:00:00+00';
my $DOOMED = 1_000_000;     # v of rows that must not commit
my $KILL_LOCK = 7;          # advisory lock a client waits on, to be killed there
my $CRASH_LOCK = 8;         # likewise, for the crash
my $IDLE_BOUND = 2 + 25;    # seconds: idle_timeout plus a margin for the worker

my $chkroot = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';
my $node = new_state_node(
	'stream_feed',
	init => { allows_streaming => 1 },
	conf => "state_backend.checkpoint_dir = '$chkroot'\n"
	  . "max_connections = 30\nrestart_after_crash = on\n");
ok(defined wait_for_worker($node), 'state worker running');

# The tables, the sinks and the states.  Switching fired to emit_table is
# the one line "emit => ..." of win: emit_table => 'fired'.
$node->safe_psql(
	'postgres', qq{
CREATE TABLE events (k int NOT NULL, ts timestamptz NOT NULL, v bigint NOT NULL);
CREATE TABLE fired (k int, ws timestamptz, we timestamptz, r bigint);
CREATE TABLE fired_idle (k int, ws timestamptz, we timestamptz, r bigint);
CREATE TABLE late_values (k int, ts timestamptz, v bigint);
CREATE FUNCTION record_fired(k int, ws timestamptz, we timestamptz, r bigint) RETURNS void
    LANGUAGE sql AS \$\$ INSERT INTO fired VALUES (k, ws, we, r) \$\$;
CREATE FUNCTION record_fired_idle(k int, ws timestamptz, we timestamptz, r bigint) RETURNS void
    LANGUAGE sql AS \$\$ INSERT INTO fired_idle VALUES (k, ws, we, r) \$\$;
CREATE FUNCTION record_late(k int, ts timestamptz, v bigint) RETURNS void
    LANGUAGE sql AS \$\$ INSERT INTO late_values VALUES (k, ts, v) \$\$;
SELECT state.create_state('win', 'window', 'int', 'bigint', assigner => 'tumbling',
                          size => '1 minute', reducer => 'sum', out_of_orderness => '20 seconds',
                          late => 'record_late(int,timestamptz,bigint)',
                          emit => 'record_fired(int,timestamptz,timestamptz,bigint)',
                          logged => true, transactional => true);
SELECT state.create_state('idle', 'window', 'int', 'bigint', assigner => 'tumbling',
                          size => '1 minute', reducer => 'sum', out_of_orderness => '20 seconds',
                          idle_timeout => '2 seconds',
                          emit => 'record_fired_idle(int,timestamptz,timestamptz,bigint)',
                          logged => true, transactional => true);
SELECT state.create_state('sums', 'reducing', 'int', 'bigint', reducer => 'sum',
                          logged => true, transactional => true);
CREATE TRIGGER feed_win AFTER INSERT ON events REFERENCING NEW TABLE AS n
    FOR EACH STATEMENT EXECUTE FUNCTION state.feed('win', 'k', 'ts', 'v');
CREATE TRIGGER feed_idle AFTER INSERT ON events REFERENCING NEW TABLE AS n
    FOR EACH STATEMENT EXECUTE FUNCTION state.feed('idle', 'k', 'ts', 'v');
CREATE TRIGGER feed_sums AFTER INSERT ON events REFERENCING NEW TABLE AS n
    FOR EACH STATEMENT EXECUTE FUNCTION state.feed('sums', 'k', 'v');
CREATE SEQUENCE tick;

-- One feeding statement of a batch: the next tick, $ROWS rows at most
-- 10 s behind it (the first one at it), then "late" rows 3 to 4 minutes
-- behind it, by a second statement; v is offset when the rows are meant
-- to roll back.  The lock orders the statements by their tick.
CREATE FUNCTION feed_batch(late int, doomed boolean) RETURNS int LANGUAGE plpgsql AS \$\$
DECLARE
    t timestamptz;
    off bigint := CASE WHEN doomed THEN $DOOMED ELSE 0 END;
BEGIN
    PERFORM pg_advisory_lock(1);
    t := '$BASE'::timestamptz + nextval('tick') * interval '$STEP';
    INSERT INTO events
    SELECT 1 + floor(random() * $KEYS)::int,
           t - CASE WHEN i = 1 THEN 0 ELSE random() * 10 END * interval '1 second',
           off + 1 + floor(random() * 99)::bigint
      FROM generate_series(1, $ROWS) i;
    IF late > 0 THEN
        INSERT INTO events
        SELECT 1 + floor(random() * $KEYS)::int,
               t - interval '3 minutes' - random() * interval '1 minute',
               off + 500 + floor(random() * 99)::bigint
          FROM generate_series(1, late);
    END IF;
    PERFORM pg_advisory_unlock(1);
    RETURN $ROWS + late;
END \$\$;
});

# A client's script: $n batches, of a kind chosen by their number (bounded:
# no loop); hold => $i makes batch $i feed doomed rows and then wait on the
# advisory lock $lock in its open transaction, where the test kills it;
# pause => $i makes batch $i wait on it (shared) before it commits.
sub client_script
{
	my ($c, $n, %opts) = @_;
	my $s = '';
	for my $i (1 .. $n)
	{
		my $late = ($i + $c) % 3 == 0 ? 1 : 0;
		if (defined $opts{hold} && $i == $opts{hold})
		{
			$s .= "BEGIN;\nSELECT feed_batch(1, true);\n"
			  . "SELECT pg_advisory_xact_lock($opts{lock});\nCOMMIT;\n";
		}
		elsif (defined $opts{pause} && $i == $opts{pause})
		{
			$s .= "BEGIN;\nSELECT feed_batch($late, false);\n"
			  . "SELECT pg_advisory_xact_lock_shared($opts{lock});\nCOMMIT;\n";
		}
		elsif (($i + $c) % 7 == 3)
		{
			$s .= "BEGIN;\nSELECT feed_batch(1, true);\nSELECT feed_batch(0, true);\n"
			  . "ROLLBACK;\n\\echo rolled_back\n";
		}
		elsif (($i + $c) % 7 == 5)
		{
			$s .= "BEGIN;\nSELECT feed_batch(0, false);\nSAVEPOINT s;\n"
			  . "SELECT feed_batch(1, true);\nROLLBACK TO SAVEPOINT s;\n"
			  . "SELECT feed_batch($late, false);\nCOMMIT;\n\\echo savepoint_rolled_back\n";
		}
		else
		{
			$s .= "BEGIN;\nSELECT feed_batch($late, false);\n"
			  . "SELECT feed_batch(0, false);\nCOMMIT;\n";
		}
	}
	return $s;
}

# start_clients(\@scripts): one psql per script, in the background.
my $script_seq = 0;

sub start_clients
{
	my @clients;
	for my $script (@_)
	{
		my $path = $node->basedir . '/client_' . ++$script_seq . '.sql';
		append_to_file($path, $script);
		my $cl = { out => '', err => '' };
		$cl->{run} = IPC::Run::start(
			[ 'psql', '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1',
				'-d', $node->connstr('postgres'), '-f', $path ],
			'>', \$cl->{out}, '2>', \$cl->{err},
			IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
		push @clients, $cl;
	}
	return @clients;
}

# finish_clients: waits for them; returns their exit codes.
sub finish_clients
{
	my @ret;
	for my $cl (@_)
	{
		eval { $cl->{run}->finish; 1 } or do { eval { $cl->{run}->kill_kill }; };
		push @ret, $cl->{run}->result(0) // -1;
	}
	return @ret;
}

# The backend waiting for advisory lock $lock (a client held in a batch).
sub waiting_on
{
	my ($lock) = @_;
	$node->poll_query_until(
		'postgres', qq{
SELECT count(*) = 1 FROM pg_locks
 WHERE locktype = 'advisory' AND objsubid = 1 AND objid = $lock
   AND mode = 'ExclusiveLock' AND NOT granted})
	  or return undef;
	return $node->safe_psql(
		'postgres', qq{
SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND objid = $lock
   AND mode = 'ExclusiveLock' AND NOT granted});
}

my $echo = '';

# Round 1: 4 clients; client 1 is terminated in the middle of its 6th batch
# (fed rows and a late one, not committed) while the others run.
my $holder = $node->background_psql('postgres');
$holder->query_safe("SELECT pg_advisory_lock($KILL_LOCK)");
my @clients = start_clients(
	map { client_script($_, 12, $_ == 1 ? (hold => 6, lock => $KILL_LOCK) : ()) } 1 .. 4);
my $victim = waiting_on($KILL_LOCK);
ok(defined $victim, 'a client waits in the middle of a batch');
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($victim)"),
	't', 'that client is terminated in the middle of its batch');
$holder->query_safe("SELECT pg_advisory_unlock($KILL_LOCK)");
my @ret = finish_clients(@clients);
is(join(',', @ret), '2,0,0,0', 'the terminated client failed, the others finished');
like($clients[0]{err}, qr/terminat/, 'the client saw its connection terminated');
$echo .= join('', map { $_->{out} } @clients);

# Round 2: the server crashes while 4 clients run: client 2's backend is
# killed (SIGKILL) in the middle of its 4th batch, so the postmaster
# restarts the cluster under every transaction in flight.  The others wait
# in their 10th batch, if they get there, so that they are all in the run
# when it crashes.
my $log_offset = -s $node->logfile;
$holder->query_safe("SELECT pg_advisory_lock($CRASH_LOCK)");
@clients = start_clients(
	map {
		client_script($_, 12, lock => $CRASH_LOCK,
			$_ == 2 ? (hold => 4) : (pause => 10))
	} 1 .. 4);
$victim = waiting_on($CRASH_LOCK);
ok(defined $victim, 'a client waits in the middle of a batch, others run');
my $running = grep { $_->{run}->pumpable } @clients;
ok(kill('KILL', $victim), 'its backend is killed: the server crashes');
@ret = finish_clients(@clients);
eval { $holder->quit };
$echo .= join('', map { $_->{out} } @clients);
is($running, 4, 'the crash came while the 4 clients ran');
ok(defined wait_for_worker($node), 'the server is back after the crash');
ok( scalar(grep { /terminated by signal 9/ } log_crashes($node, $log_offset)) > 0,
	'the server restarted after a crash');

# Round 3: the rest of the run, after the crash.
@clients = start_clients(map { client_script($_, 8) } 1 .. 4);
@ret = finish_clients(@clients);
is(join(',', @ret), '0,0,0,0', 'the clients finish after the crash');
$echo .= join('', map { $_->{out} } @clients);
ok($echo =~ /rolled_back/, 'batches rolled back');
ok($echo =~ /savepoint_rolled_back/, 'batches rolled back to a savepoint');
my $span = $node->safe_psql('postgres', q{SELECT max(ts) - min(ts) FROM events WHERE v < 500});
diag("event time fed: $span, "
	  . $node->safe_psql('postgres', 'SELECT count(*) FROM events') . ' rows committed');

# The idle state's last window: one statement fills it for every key, past
# every watermark; the data alone leave it open (its end is past the last
# row by 1 s, less than the bound), and no one advances its watermark: it
# fires when the stream has been idle for 2 s.
my $tail = $node->safe_psql(
	'postgres', qq{
SELECT date_bin('1 minute', greatest(state.watermark('win'), state.watermark('idle'))
                            + interval '2 minutes', '$EPOCH')});
$node->safe_psql(
	'postgres', qq{
INSERT INTO events
SELECT k, '$tail'::timestamptz + s * interval '1 second', k * 10 + s % 7
  FROM generate_series(1, $KEYS) k, generate_series(5, 59, 6) s});
my $tail_ref = qq{
SELECT k, date_bin('1 minute', ts, '$EPOCH') AS ws, sum(v) AS r
  FROM events WHERE ts >= '$tail' GROUP BY 1, 2};
my $tail_fired = 0;
my $deadline = time() + $IDLE_BOUND;
while (time() < $deadline)
{
	$tail_fired = $node->safe_psql('postgres',
		"SELECT count(*) FROM fired_idle WHERE ws = '$tail'");
	last if $tail_fired >= $KEYS;
	usleep(100_000);
}
is($tail_fired, $KEYS, "the idle stream fires its last window within $IDLE_BOUND s");
is( $node->safe_psql(
		'postgres', qq{
SELECT count(*) FROM ($tail_ref) g
  FULL JOIN (SELECT * FROM fired_idle WHERE ws = '$tail') f USING (k, ws)
 WHERE f.r IS DISTINCT FROM g.r}),
	'0',
	'its last window holds every row of the last statement, each key once');
is( $node->safe_psql(
		'postgres', qq{
SELECT state.watermark('win') < '$tail'::timestamptz + interval '1 minute',
       state.watermark('idle') >= '$tail'::timestamptz + interval '1 minute'}),
	't|t',
	'the data alone did not reach it: its watermark followed the clock');

# Everything fires at the watermark 'infinity'.
$node->safe_psql('postgres', "SELECT state.advance_watermark('win', 'infinity')");
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 0 FROM state.windows('win', NULL::int)}),
	'every window of win fired');

is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM (SELECT k, sum(v) AS s FROM events GROUP BY k) g
  FULL JOIN state.entries('sums', NULL::int, NULL::bigint) e(k, v) USING (k)
 WHERE e.v IS DISTINCT FROM g.s}),
	'0',
	'the reducing state is sum() over the committed rows, per key');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM
       (SELECT k, ts, v, count(*) AS n FROM events WHERE v BETWEEN 500 AND 598 GROUP BY 1, 2, 3) e
  FULL JOIN (SELECT k, ts, v, count(*) AS n FROM late_values GROUP BY 1, 2, 3) l USING (k, ts, v)
 WHERE e.n IS DISTINCT FROM l.n}),
	'0',
	'every late row is in late_values exactly once, and nothing else is');
ok($node->safe_psql('postgres', 'SELECT count(*) FROM late_values') > 0, 'rows were late');
is( $node->safe_psql(
		'postgres', qq{
SELECT (SELECT count(*) FROM events WHERE v >= $DOOMED)
     + (SELECT count(*) FROM late_values WHERE v >= $DOOMED)
     + (SELECT count(*) FROM fired WHERE r >= $DOOMED)
     + (SELECT count(*) FROM state.entries('sums', NULL::int, NULL::bigint) e(k, v)
         WHERE v >= $DOOMED)}),
	'0',
	'nothing of what rolled back or was killed is anywhere');

my $fired_diff = qq{
SELECT count(*) FROM
       (SELECT k, date_bin('1 minute', ts, '$EPOCH') AS ws, sum(v) AS r
          FROM events WHERE v < 500 GROUP BY 1, 2) g
  FULL JOIN fired f USING (k, ws)
 WHERE f.r IS DISTINCT FROM g.r};
my $twice = q{SELECT count(*) FROM (SELECT FROM fired GROUP BY k, ws HAVING count(*) > 1) d};
diag('windows short of their rows: ' . $node->safe_psql('postgres', $fired_diff)
	  . ', fired twice: ' . $node->safe_psql('postgres', $twice));
ok($node->safe_psql('postgres', 'SELECT count(*) FROM fired') > 10 * $KEYS, 'windows fired');
is($node->safe_psql('postgres', $fired_diff), '0',
	'every fired window is the GROUP BY over the committed rows that were not late');
is($node->safe_psql('postgres', $twice), '0', 'no window fired twice');

# The defect alone, twice: a transaction adds a value on time to key 1's
# first window and stays open; another session adds one to it and moves
# the watermark past it, so that it fires.  repro_begin($state) does that
# and returns the open transaction's session; repro_end commits it once
# the firing reached the point the caller waited for, and fires the rest.
$node->safe_psql(
	'postgres', q{
CREATE TABLE fired_repro (k int, ws timestamptz, we timestamptz, r bigint);
CREATE TABLE late_repro (k int, ts timestamptz, v bigint);
CREATE FUNCTION record_fired_repro(k int, ws timestamptz, we timestamptz, r bigint) RETURNS void
    LANGUAGE sql AS $$ INSERT INTO fired_repro VALUES (k, ws, we, r) $$;
CREATE FUNCTION record_late_repro(k int, ts timestamptz, v bigint) RETURNS void
    LANGUAGE sql AS $$ INSERT INTO late_repro VALUES (k, ts, v) $$;
});

sub repro_begin
{
	my ($state) = @_;
	$node->safe_psql(
		'postgres', qq{
TRUNCATE fired_repro, late_repro;
SELECT state.create_state('$state', 'window', 'int', 'bigint', assigner => 'tumbling',
                          size => '1 minute', reducer => 'sum', out_of_orderness => '20 seconds',
                          late => 'record_late_repro(int,timestamptz,bigint)',
                          emit => 'record_fired_repro(int,timestamptz,timestamptz,bigint)',
                          transactional => true);
});
	my $open = $node->background_psql('postgres');
	$open->query_safe('BEGIN');
	$open->query_safe(
		"SELECT state.window_add('$state', 1, '$BASE'::timestamptz + interval '30 s', 100::bigint)");
	$node->safe_psql(
		'postgres', qq{
SELECT state.window_add('$state', 1, '$BASE'::timestamptz + interval '10 s', 1::bigint);
SELECT state.window_add('$state', 2, '$BASE'::timestamptz + interval '2 min', 1::bigint);
});
	return $open;
}

sub repro_end
{
	my ($state, $open) = @_;
	$open->query_safe('COMMIT');
	$open->quit;
	$node->safe_psql('postgres', "SELECT state.advance_watermark('$state', 'infinity')");
	ok( $node->poll_query_until(
			'postgres', qq{SELECT count(*) = 0 FROM state.windows('$state', NULL::int)}),
		"every window of $state fired");
}

# A transaction holds its window: with the watermark past the window's end
# for two of the timer worker's looks (it looks at least every second), the
# window has not fired; after the commit it fires once, with the value.
my $open = repro_begin('repro');
$node->safe_psql('postgres', 'SELECT pg_sleep(2.5)');
is($node->safe_psql('postgres', 'SELECT count(*) FROM fired_repro'), '0',
	'a window does not fire while a transaction that added to it on time is open');
repro_end('repro', $open);
is( $node->safe_psql(
		'postgres', q{SELECT string_agg(r::text, ',') FROM fired_repro WHERE k = 1}),
	'101', 'after the commit the window fires once, with the committed value');
is($node->safe_psql('postgres', 'SELECT count(*) FROM late_repro'), '0', 'nothing was late');

# A value added while the window's firing is under way (the worker asleep
# between its emit and its commit, a fault point) is late: it goes to the
# late function, and the window fires once.
$node->safe_psql(
	'postgres', q{
ALTER SYSTEM SET state_backend.fault_points = 'window.after_emit:sleep:3000';
SELECT pg_reload_conf();
});
my $log_at = -s $node->logfile;
$open = repro_begin('repro2');
$open->query_safe('COMMIT');
$open->quit;
ok( $node->wait_for_log(qr/fault point "window\.after_emit" reached/, $log_at),
	'the window is being emitted');
$node->safe_psql('postgres', qq{
BEGIN;
SELECT state.window_add('repro2', 1, '$BASE'::timestamptz + interval '40 s', 7::bigint);
COMMIT;
});
$node->safe_psql(
	'postgres', q{
ALTER SYSTEM RESET state_backend.fault_points;
SELECT pg_reload_conf();
});
$node->safe_psql('postgres', "SELECT state.advance_watermark('repro2', 'infinity')");
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 0 FROM state.windows('repro2', NULL::int)}),
	'every window of repro2 fired');
is($node->safe_psql('postgres', 'SELECT string_agg(r::text, \',\') FROM fired_repro WHERE k = 1'),
	'101', 'the window fired once, without the value added during its firing');
is($node->safe_psql('postgres', 'SELECT string_agg(v::text, \',\') FROM late_repro'),
	'7', 'that value went to the late function');

$node->stop;
done_testing();
