# alter_state under concurrent sessions: what another session does while a
# state is copied into its new form is neither lost nor undone, one state's
# change holds back no other state's timers, and nothing of a change is
# left where nobody sees it.
#
# - a truncate, or a clear followed by a write the move's log cannot hold
#   (a key over its size), acknowledged while the entries are copied: the
#   changed state holds none of the entries they removed;
# - a revoke_access acknowledged while the entries are copied stays revoked;
# - an alter_state of a timers state waiting for a transaction that wrote to
#   it does not stop the firing of another state's timers meanwhile; two at
#   once fire no timer twice; one called from a timer handler does not wait
#   for its own batch;
# - a TTL refresh by a read (on_read_and_write) during the publish holds;
# - an event-time watermark advanced by a transaction the change waited for
#   holds;
# - a drop during the copy fails the change and the state stays dropped;
# - the state locks are not carried into prepared transactions (nor across
#   a restart onto a new state that took the same id);
# - the copy made by an alter_state whose process exited is given back.

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

my $node = new_state_node('alter_audit');
ok(defined wait_for_worker($node), 'state worker running');

# Runs a psql script in the background; returns [handle, \stdout, \stderr].
sub start_script
{
	my ($name, $sql) = @_;
	my ($stdout, $stderr) = ('', '');
	my $script = PostgreSQL::Test::Utils::tempdir() . "/$name.sql";
	PostgreSQL::Test::Utils::append_to_file($script, $sql);
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-f', $script ],
		'>', \$stdout, '2>', \$stderr);
	return [ $h, \$stdout, \$stderr ];
}

sub finish_script
{
	my ($s) = @_;
	$s->[0]->finish;
	return ($s->[0]->result(0), ${ $s->[1] }, ${ $s->[2] });
}

# An alter_state that sleeps after each batch of entries it copied, started
# in the background once the state holds keys 1..4; returns once it copied
# its first batch.
sub start_slow_alter
{
	my ($name, $args) = @_;
	my $offset = -s $node->logfile;
	my $s = start_script("alter_$name", qq{
SET state_backend.fault_points = 'alter.copy:sleep:1500';
SELECT state.alter_state('$name', $args);
});
	$node->wait_for_log(qr/fault point "alter.copy" reached/, $offset);
	return $s;
}

############################################################ truncate

foreach my $backend ('memory', 'rocksdb')
{
	my $st = "tr_$backend";
	$node->safe_psql('postgres', qq{
SELECT state.create_state('$st', 'value', 'int', 'text', backend => '$backend');
SELECT count(state.value_set('$st', k, 'v' || k)) FROM generate_series(1, 4) k;});
	my $alter = start_slow_alter($st, "value_type => 'varchar'");
	is($node->safe_psql('postgres', "SELECT state.truncate('$st')"), '4',
		"$backend: truncate during the copy removed the 4 keys");
	my ($ret, $out, $err) = finish_script($alter);
	is($ret, 0, "$backend: the change succeeded") or diag($err);
	is($node->safe_psql('postgres', qq{
SELECT value_type || ' ' || entries FROM state.states WHERE name = '$st'}),
		'character varying 0',
		"$backend: the changed state holds nothing of what the truncate removed");
}

############################################################ clear, then the log overflows

{
	my $st = 'ov';
	$node->safe_psql('postgres', qq{
SELECT state.create_state('$st', 'value', 'text', 'text');
SELECT count(state.value_set('$st', k::text, 'v' || k)) FROM generate_series(1, 4) k;});
	my $alter = start_slow_alter($st, "value_type => 'varchar'");
	$node->safe_psql('postgres', qq{
SELECT count(state.clear('$st', k::text)) FROM generate_series(1, 4) k;
SELECT state.value_set('$st', repeat('x', 9000), 'long');});
	my ($ret, $out, $err) = finish_script($alter);
	is($ret, 0, 'clear: the change succeeded') or diag($err);
	is($node->safe_psql('postgres', qq{
SELECT string_agg(left(k, 3) || '=' || v, ' ' ORDER BY k)
  FROM state.entries('$st', NULL::text, NULL::varchar) e(k, v)}),
		'xxx=long',
		'clear: keys cleared during the copy stay cleared when the log overflowed after them');
}

############################################################ revoke

{
	$node->safe_psql('postgres', qq{
CREATE ROLE bob LOGIN;
SELECT state.create_state('gs', 'value', 'int', 'text');
SELECT count(state.value_set('gs', k, 'v' || k)) FROM generate_series(1, 4) k;
SELECT state.grant_access('gs', 'bob', 'write');
SELECT state.create_state('gs_control', 'value', 'int', 'text');
SELECT state.grant_access('gs_control', 'bob', 'write');
SELECT state.revoke_access('gs_control', 'bob', 'write');});
	is(sql_error($node, q{SELECT state.value_set('gs_control', 9, 'by bob')},
		extra_params => [ '-U', 'bob' ])->{sqlstate}, '42501', 'revoke: without a change, a revoke holds');
	my $alter = start_slow_alter('gs', "value_type => 'varchar'");
	$node->safe_psql('postgres', q{SELECT state.revoke_access('gs', 'bob', 'write')});
	my ($ret, $out, $err) = finish_script($alter);
	is($ret, 0, 'revoke: the change succeeded') or diag($err);
	my $r = sql_error($node, q{SELECT state.value_set('gs', 9, 'by bob')},
		extra_params => [ '-U', 'bob' ]);
	is($r->{sqlstate}, '42501',
		'revoke: a write revoked during the change stays revoked after it');
}

############################################################ timers

{
	$node->safe_psql('postgres', q{
CREATE TABLE fired (k int);
CREATE FUNCTION on_fire(k int, at timestamptz) RETURNS void LANGUAGE sql
  AS $$ INSERT INTO fired VALUES (k) $$;
SELECT state.create_state('tm_slow', 'timers', 'int', handler => 'on_fire(int,timestamptz)');
SELECT state.create_state('tm_other', 'timers', 'int', handler => 'on_fire(int,timestamptz)');
SELECT state.timer_register('tm_other', 0, now());});
	ok($node->poll_query_until('postgres', 'SELECT count(*) > 0 FROM fired WHERE k = 0'),
		'timers: the timer worker fires tm_other');
	# A transaction that wrote to tm_slow stays open for a while.
	my $offset = -s $node->logfile;
	my $writer = start_script('writer', q{
BEGIN;
SELECT state.timer_register('tm_slow', 1, now() + interval '1 hour');
SELECT pg_sleep(8);
COMMIT;
});
	# The change of tm_slow waits for it.
	usleep(500_000);
	my $alter = start_script('alter_tm', q{SELECT state.alter_state('tm_slow', rename_to => 'tm_slow2');});
	usleep(500_000);
	# Another state's timer, due now, fires meanwhile.
	$node->safe_psql('postgres', q{SELECT state.timer_register('tm_other', 2, now())});
	my $fired = 0;
	for (my $i = 0; $i < 40 && !$fired; $i++)
	{
		$fired = $node->safe_psql('postgres', 'SELECT count(*) FROM fired WHERE k = 2');
		usleep(100_000) if !$fired;
	}
	my $alter_done = !$alter->[0]->pumpable;
	ok($fired && !$alter_done,
		'timers: a change waiting for a writer of one timers state does not stop the firing of another');
	finish_script($writer);
	my ($ret, $out, $err) = finish_script($alter);
	is($ret, 0, 'timers: the change succeeded once the writer committed') or diag($err);
	ok($node->poll_query_until('postgres', 'SELECT count(*) > 0 FROM fired WHERE k = 2'),
		'timers: the timer of tm_other fired at last');
}

############################################################ two changes of timers states

# Two alter_state of timers states at once: the one that ends first gives
# back its pause of the firing, but the other's timers still do not fire
# while it copies them (they would fire again from the copy).
{
	$node->safe_psql('postgres', q{
CREATE TABLE fired2 (k int);
CREATE FUNCTION on_fire2(k int, at timestamptz) RETURNS void LANGUAGE sql
  AS $$ INSERT INTO fired2 VALUES (k) $$;
SELECT state.create_state('tw_a', 'timers', 'int', handler => 'on_fire2(int,timestamptz)');
SELECT state.timer_register('tw_a', 100, now() + interval '1 hour');
SELECT state.create_state('tw_b', 'timers', 'int', handler => 'on_fire2(int,timestamptz)');
SELECT count(state.timer_register('tw_b', k, now() + interval '2 seconds')) FROM generate_series(1, 4) k;});
	my $offset = -s $node->logfile;
	my $a = start_script('alter_tw_a', q{
SET state_backend.fault_points = 'alter.copy:sleep:3000';
SELECT state.alter_state('tw_a', rename_to => 'tw_a2');
});
	$node->wait_for_log(qr/fault point "alter.copy" reached/, $offset);
	$offset = -s $node->logfile;
	my $b = start_script('alter_tw_b', q{
SET state_backend.fault_points = 'alter.copy:sleep:1500';
SELECT state.alter_state('tw_b', rename_to => 'tw_b2');
});
	$node->wait_for_log(qr/fault point "alter.copy" reached/, $offset);
	my ($ra) = finish_script($a);
	my ($rb, $ob, $eb) = finish_script($b);
	is($rb, 0, 'two changes: the change of tw_b succeeded') or diag($eb);
	ok($node->poll_query_until('postgres', 'SELECT count(DISTINCT k) = 4 FROM fired2'),
		'two changes: the timers of tw_b fired');
	sleep(3);
	is($node->safe_psql('postgres', 'SELECT count(*) FROM fired2'), '4',
		'two changes: each timer of tw_b fired once');
}

############################################################ a read that refreshes a TTL

# ttl_update => on_read_and_write: a read acknowledged before the change
# published its new state refreshed the deadline in the state the change
# publishes too.
{
	$node->safe_psql('postgres', q{
SELECT state.create_state('rr', 'value', 'int', 'text', ttl => '1 hour', ttl_update => 'on_read_and_write');
SELECT state.value_set('rr', 1, 'kept');
SELECT state._advance_ttl_clock('50 minutes');});
	my $offset = -s $node->logfile;
	my $alter = start_script('alter_rr', q{
SET state_backend.fault_points = 'alter.before_publish:sleep:2000';
SELECT state.alter_state('rr', value_type => 'varchar');
});
	$node->wait_for_log(qr/fault point "alter.before_publish" reached/, $offset);
	is($node->safe_psql('postgres', q{SELECT state.value_get('rr', 1, NULL::text)}), 'kept',
		'ttl refresh: read (and refreshed) during the change');
	my ($ret, $out, $err) = finish_script($alter);
	is($ret, 0, 'ttl refresh: the change succeeded') or diag($err);
	$node->safe_psql('postgres', q{SELECT state._advance_ttl_clock('20 minutes')});
	is($node->safe_psql('postgres', q{SELECT state.value_get('rr', 1, NULL::varchar)}), 'kept',
		'ttl refresh: the deadline the read set holds after the change');
}

############################################################ a handler that changes a timers state

# A handler may call any state function: an alter_state of a timers state
# from a handler does not wait for the very batch that runs it (the timer
# worker would fire nothing more until timer_statement_timeout cancels it,
# and again at every retry).  Whether the change is made or refused, the
# worker goes on firing other timers at once (here: within 8 seconds, with
# timer_statement_timeout at 30 seconds).
{
	$node->append_conf('postgresql.conf', "state_backend.timer_statement_timeout = '30s'\n");
	$node->reload;
	$node->safe_psql('postgres', q{
SELECT state.create_state('hd_target', 'timers', 'int', handler => 'on_fire(int,timestamptz)');
CREATE FUNCTION on_hd(k int, at timestamptz) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM state.alter_state('hd_target', rename_to => 'hd_target2');
END $$;
SELECT state.create_state('hd_self', 'timers', 'int', handler => 'on_hd(int,timestamptz)');
SELECT state.timer_register('hd_self', 1, now());});
	usleep(500_000);
	$node->safe_psql('postgres', q{SELECT state.timer_register('tm_other', 7, now())});
	my $fired = 0;
	for (my $i = 0; $i < 80 && !$fired; $i++)
	{
		$fired = $node->safe_psql('postgres', q{SELECT count(*) FROM fired WHERE k = 7});
		usleep(100_000) if !$fired;
	}
	ok($fired, 'handler: the timer worker goes on firing after a handler called alter_state on a timers state')
	  or diag($node->safe_psql('postgres', q{SELECT pid, backend_type, wait_event_type, wait_event FROM pg_stat_activity WHERE backend_type LIKE 'state_backend timers%'}));
}
############################################################ a watermark advanced while the change waits

# An event-time state's watermark, advanced by a transaction the change of
# the state waits for, is the changed state's watermark.
{
	$node->safe_psql('postgres', q{
SELECT state.create_state('wm', 'timers', 'int', handler => 'on_fire(int,timestamptz)', time_domain => 'event');
SELECT state.advance_watermark('wm', '2026-01-01 00:00:00+00');});
	my $offset = -s $node->logfile;
	my $writer = start_script('wm_writer', q{
BEGIN;
SELECT state.timer_register('wm', 1, '2027-01-01 00:00:00+00');
SELECT pg_sleep(2);
SELECT state.advance_watermark('wm', '2026-06-01 00:00:00+00');
COMMIT;
});
	usleep(500_000);
	my $alter = start_script('wm_alter', q{SELECT state.alter_state('wm', rename_to => 'wm2');});
	finish_script($writer);
	my ($ret, $out, $err) = finish_script($alter);
	is($ret, 0, 'watermark: the change succeeded') or diag($err);
	is($node->safe_psql('postgres', q{SELECT state.watermark('wm2') = '2026-06-01 00:00:00+00'}), 't',
		'watermark: the watermark advanced while the change waited holds');
}

############################################################ drop during the copy

foreach my $backend ('memory', 'rocksdb')
{
	my $st = "dr_$backend";
	$node->safe_psql('postgres', qq{
SELECT state.create_state('$st', 'value', 'int', 'text', backend => '$backend');
SELECT count(state.value_set('$st', k, 'v' || k)) FROM generate_series(1, 4) k;});
	my $alter = start_slow_alter($st, "value_type => 'varchar'");
	$node->safe_psql('postgres', "SELECT state.drop_state('$st')");
	my ($ret, $out, $err) = finish_script($alter);
	isnt($ret, 0, "drop $backend: the change fails");
	is($node->safe_psql('postgres', "SELECT count(*) FROM state.states WHERE name = '$st'"), '0',
		"drop $backend: the state stays dropped");
	is($node->safe_psql('postgres', 'SELECT 1'), '1', "drop $backend: the server is up");
}

############################################################ prepared transactions

# The state locks writers and alter_state take are carried into a prepared
# transaction (and, by its recovery, across a restart), where nobody sees
# them: a PREPARE TRANSACTION after them is refused (0A000, as after a
# truncate of a transactional state), or they are not carried.
{
	my $pn = new_state_node('alter_audit_2pc', conf => "max_prepared_transactions = 5\n");
	# the first state of the server: id 1
	$pn->safe_psql('postgres', q{
SELECT state.create_state('pa', 'value', 'int', 'int');
SELECT state.value_set('pa', 1, 1);});
	# a prepared transaction that changed pa (its old id's lock)
	my ($ret, $out, $err) = $pn->psql('postgres', q{
BEGIN;
SELECT state.alter_state('pa', value_type => 'bigint');
PREPARE TRANSACTION 'p_alter';});
	my $prepared = $pn->safe_psql('postgres', q{SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'p_alter'});
	# a prepared transaction that wrote to the changed state
	($ret, $out, $err) = $pn->psql('postgres', q{
BEGIN;
SELECT state.value_set('pa', 2, 2::bigint);
PREPARE TRANSACTION 'p_write';});
	my $prepared_write = $pn->safe_psql('postgres', q{SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'p_write'});
	if ($prepared_write)
	{
		($ret, $out, $err) = $pn->psql('postgres', q{
SET lock_timeout = '2s';
SELECT state.alter_state('pa', value_type => 'numeric');});
		is($ret, 0, '2pc: a prepared transaction that wrote to a state does not hold back its change')
		  or diag($err);
	}
	else
	{
		pass('2pc: PREPARE TRANSACTION after a write to a state refused');
	}
	# after a restart, the heap states are gone and ids start again at 1
	$pn->restart;
	if ($prepared)
	{
		$pn->safe_psql('postgres', q{SELECT state.create_state('fresh', 'value', 'int', 'int')});
		($ret, $out, $err) = $pn->psql('postgres', q{
SET lock_timeout = '2s';
SELECT state.value_set('fresh', 1, 1);
SELECT state.alter_state('fresh', value_type => 'bigint');});
		is($ret, 0, '2pc: a prepared alter_state holds back no state after a restart') or diag($err);
	}
	else
	{
		pass('2pc: PREPARE TRANSACTION after alter_state refused');
	}
	$pn->safe_psql('postgres', "ROLLBACK PREPARED '$_'")
	  for split /\n/, $pn->safe_psql('postgres', 'SELECT gid FROM pg_prepared_xacts');
	$pn->stop;
}

############################################################ a copier that exits

# alter_state's process exits (as a terminated one does) before or after
# the publish: the copy it made, or the data of the state it replaced, is
# given back, so that the next change fits in state_backend.memory_limit.
foreach my $point ('alter.before_publish', 'alter.after_publish')
{
	my ($tag) = $point =~ /alter\.(\w+)/;
	my $small = new_state_node("alter_audit_$tag", conf => "state_backend.memory_limit = '12MB'\n");
	$small->safe_psql('postgres', q{
SELECT state.create_state('big', 'value', 'int', 'text');
SELECT count(state.value_set('big', k, repeat('x', 1000))) FROM generate_series(1, 4000) k;});
	my ($ret, $out, $err) = $small->psql('postgres', qq{
SET state_backend.fault_points = '$point:exit';
SELECT state.alter_state('big', value_type => 'varchar');});
	like($err, qr/fault point "$point" reached|terminat|server closed/,
		"exit at $point: the process exited");
	my $type = $point eq 'alter.before_publish' ? 'text' : 'character varying';
	is($small->safe_psql('postgres', q{SELECT value_type || ' ' || entries FROM state.states WHERE name = 'big'}),
		"$type 4000", "exit at $point: the state is as before or after the change");
	my $next = $point eq 'alter.before_publish' ? 'varchar' : 'text';
	($ret, $out, $err) = $small->psql('postgres',
		qq{SELECT state.alter_state('big', value_type => '$next')});
	is($ret, 0, "exit at $point: the next change fits in memory_limit (nothing of the exited change is left)")
	  or diag($err);
	$small->stop;
}

$node->stop;
done_testing();
