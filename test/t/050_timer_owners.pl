# Timers run their owners' code as their owners and nobody else: one timer
# worker serves every owner of a database, so what one owner's handler does
# must not reach past its own batch.
#  - a deferred constraint trigger that a handler's insert queues never
#    runs as the worker's superuser identity at the batch's commit (it is
#    refused, as in any security-restricted operation), and a transactional
#    aggregating state's combine function runs as the handler's owner;
#  - a handler runs in a security-restricted operation: no temporary table
#    that would shadow the table another owner's handler writes, and a
#    setting it changes does not outlive it (default_transaction_read_only
#    set by one owner does not fail another owner's timers);
#  - a timer whose handler keeps failing (that combine function raises)
#    reaches state.timer_failures; another owner's timer due at the same
#    instant fires; a batch whose commit fails (a fault point) holds one
#    owner's timers only, and reaches state.timer_failures too;
#  - a handler that catches the cancel of state_backend.timer_statement_timeout
#    and runs on is stopped, and its timer reaches state.timer_failures;
#    other owners' timers fire meanwhile, and the cluster does not restart;
#  - registered and deleted timers do not pile up in the worker's index;
#  - a handler whose EXECUTE was revoked from the state's owner does not run
#    even once after the revoke committed, nor does a window state's
#    aggregate whose EXECUTE was revoked;
#  - a handler sees its owner as session_user, is_superuser off, and now()
#    as of its batch;
#  - one owner's slow handlers hold back another owner's timer due with them
#    by about a second (a batch's budget), not by the whole batch;
#  - a timer waiting to be retried is not fired again when its state is read
#    whole meanwhile.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $node = new_state_node(
	'timer_owners',
	conf => "state_backend.timer_max_retries = 1\n"
	  . "state_backend.timer_retry_delay = '100ms'\n"
	  . "state_backend.timer_statement_timeout = '1s'\n");
my $worker = wait_for_worker($node);
ok(defined $worker, 'state worker running');

$node->safe_psql(
	'postgres', q{
CREATE ROLE mallory LOGIN;
CREATE ROLE alice LOGIN;
CREATE SCHEMA mallory AUTHORIZATION mallory;
CREATE SCHEMA alice AUTHORIZATION alice;
-- The superuser's own timers state: its handler writes an unqualified table.
CREATE TABLE log_s (k int, who name);
CREATE FUNCTION su_handler(k int, at timestamptz) RETURNS void LANGUAGE sql
    AS $$ INSERT INTO log_s VALUES (k, current_user) $$;
SELECT state.create_state('s_timers', 'timers', 'int', handler => 'su_handler(int,timestamptz)');
});

sub as_role
{
	my ($role, $sql) = @_;
	return $node->safe_psql('postgres', "SET ROLE $role;\n$sql");
}

as_role(
	'alice', q{
CREATE TABLE alice.log (k int, at timestamptz, who name, fired timestamptz DEFAULT clock_timestamp());
CREATE FUNCTION alice.h(k int, at timestamptz) RETURNS void LANGUAGE sql
    AS $$ INSERT INTO alice.log VALUES (k, at, current_user) $$;
SELECT state.create_state('a_timers', 'timers', 'int', handler => 'alice.h(int,timestamptz)');
CREATE TABLE alice.sdlog (k int);
CREATE FUNCTION alice.sd(k int, at timestamptz) RETURNS void LANGUAGE sql SECURITY DEFINER
    AS $$ INSERT INTO alice.sdlog VALUES (k) $$;
REVOKE EXECUTE ON FUNCTION alice.sd(int, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION alice.sd(int, timestamptz) TO mallory;
GRANT USAGE ON SCHEMA alice TO mallory;
});

as_role(
	'mallory', q{
CREATE TABLE mallory.t (k int);
CREATE TABLE mallory.who (what text, usr name, su bool);
CREATE FUNCTION mallory.trig() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO mallory.who
        SELECT 'deferred', current_user, rolsuper FROM pg_roles WHERE rolname = current_user;
    BEGIN
        EXECUTE 'ALTER ROLE mallory SUPERUSER';
    EXCEPTION WHEN OTHERS THEN
        NULL;
    END;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER tr AFTER INSERT ON mallory.t
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION mallory.trig();
CREATE FUNCTION mallory.h_deferred(k int, at timestamptz) RETURNS void LANGUAGE sql
    AS $$ INSERT INTO mallory.t VALUES (k) $$;
SELECT state.create_state('m_deferred', 'timers', 'int', handler => 'mallory.h_deferred(int,timestamptz)');

-- A temporary table and trigger that would shadow the superuser's log_s.
CREATE FUNCTION mallory.h_temp(k int, at timestamptz) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    CREATE TEMP TABLE log_s (k int, who name);
    CREATE FUNCTION pg_temp.spy() RETURNS trigger LANGUAGE plpgsql AS $f$
    BEGIN
        INSERT INTO mallory.who VALUES ('temp', current_user, false);
        RETURN NULL;
    END $f$;
    CREATE TRIGGER spy AFTER INSERT ON log_s FOR EACH ROW EXECUTE FUNCTION pg_temp.spy();
END $$;
SELECT state.create_state('m_temp', 'timers', 'int', handler => 'mallory.h_temp(int,timestamptz)');

-- A setting left behind for the next owner's handlers.
CREATE FUNCTION mallory.h_set(k int, at timestamptz) RETURNS void LANGUAGE sql
    AS $$ SELECT set_config('default_transaction_read_only', 'on', false) $$;
SELECT state.create_state('m_set', 'timers', 'int', handler => 'mallory.h_set(int,timestamptz)');

-- A transactional aggregating state: its aggregate's combine function runs
-- at commit, and raises while mallory.fail has a row (a commit that fails).
CREATE TABLE mallory.fail (x int);
CREATE FUNCTION mallory.comb(a int, b int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO mallory.who
        SELECT 'combine', current_user, rolsuper FROM pg_roles WHERE rolname = current_user;
    IF EXISTS (SELECT FROM mallory.fail) THEN
        RAISE EXCEPTION 'combine refused';
    END IF;
    RETURN a + b;
END $$;
CREATE AGGREGATE mallory.total(int) (sfunc = int4pl, stype = int, combinefunc = mallory.comb,
                                      initcond = '0');
SELECT state.create_state('m_agg', 'aggregating', 'int', value_type => 'int', aggregate => 'mallory.total(int)',
                          transactional => true);
SELECT state.aggregate('m_agg', 1, 5);
SELECT state.aggregate('m_agg', 1, 5);
CREATE FUNCTION mallory.h_agg(k int, at timestamptz) RETURNS void LANGUAGE sql
    AS $$ SELECT state.aggregate('m_agg', 1, k) $$;
SELECT state.create_state('m_commit', 'timers', 'int', handler => 'mallory.h_agg(int,timestamptz)');

-- A handler that will not be cancelled.
CREATE FUNCTION mallory.h_loop(k int, at timestamptz) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    LOOP
        BEGIN
            PERFORM pg_sleep(0.2);
        EXCEPTION WHEN query_canceled THEN
            NULL;
        END;
    END LOOP;
END $$;
SELECT state.create_state('m_loop', 'timers', 'int', handler => 'mallory.h_loop(int,timestamptz)');

SELECT state.create_state('m_sd', 'timers', 'int', handler => 'alice.sd(int,timestamptz)');

-- Who a handler runs as, and when it thinks it is.
CREATE TABLE mallory.seen (su name, cu name, is_su text, skew interval);
CREATE FUNCTION mallory.h_who(k int, at timestamptz) RETURNS void LANGUAGE sql AS $$
    INSERT INTO mallory.seen
        VALUES (session_user, current_user, current_setting('is_superuser'), clock_timestamp() - now()) $$;
SELECT state.create_state('m_who', 'timers', 'int', handler => 'mallory.h_who(int,timestamptz)');

-- Slow handlers.
CREATE FUNCTION mallory.h_slow(k int, at timestamptz) RETURNS void LANGUAGE sql
    AS $$ SELECT pg_sleep(0.4) $$;
SELECT state.create_state('m_slow', 'timers', 'int', handler => 'mallory.h_slow(int,timestamptz)');

-- A handler that fails for key 1, counting its calls.
CREATE SEQUENCE mallory.calls;
CREATE FUNCTION mallory.h_bad(k int, at timestamptz) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF k = 1 THEN
        PERFORM nextval('mallory.calls');
        RAISE EXCEPTION 'always fails';
    END IF;
END $$;
SELECT state.create_state('m_bad', 'timers', 'int', handler => 'mallory.h_bad(int,timestamptz)');
});

# A window state of alice's folding with carol's aggregate.
$node->safe_psql('postgres', q{
CREATE ROLE carol;
CREATE SCHEMA carol AUTHORIZATION carol;
GRANT USAGE ON SCHEMA carol TO alice;
SET ROLE carol;
CREATE FUNCTION carol.fin(s bigint) RETURNS bigint LANGUAGE sql AS $$ SELECT s $$;
CREATE FUNCTION carol.comb(a bigint, b bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$ SELECT a + b $$;
CREATE AGGREGATE carol.mysum(bigint) (sfunc = int8pl, stype = bigint, finalfunc = carol.fin,
                                      combinefunc = carol.comb, initcond = '0');
REVOKE EXECUTE ON FUNCTION carol.mysum(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION carol.mysum(bigint) TO alice;
RESET ROLE;
SET ROLE alice;
CREATE TABLE alice.out (k int, ws timestamptz, n bigint);
CREATE FUNCTION alice.em(k int, ws timestamptz, we timestamptz, n bigint) RETURNS void LANGUAGE sql
    AS $$ INSERT INTO alice.out VALUES (k, ws, n) $$;
SELECT state.create_state('aw', 'window', 'int', 'bigint', assigner => 'tumbling', size => '1 minute',
                          aggregate => 'carol.mysum(bigint)',
                          emit => 'alice.em(int,timestamptz,timestamptz,bigint)');
});

# settings_seen: the timer worker has read the settings just reloaded.  A
# new session shows the new value once the postmaster has read them, and the
# postmaster signals its children right after; the worker reads them before
# each round's batch, so a timer registered then that has fired says so
# (alice's handler logs its key).
sub settings_seen
{
	my ($k, $name, $value) = @_;
	ok($node->poll_query_until('postgres', "SELECT current_setting('$name') = '$value'"),
		"the server reads $name = '$value'");
	as_role('alice', qq{SELECT state.timer_register('a_timers', $k, clock_timestamp())});
	ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM alice.log WHERE k = $k"),
		'the timer worker read the new settings');
}

sub failures
{
	my ($state) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM state.timer_failures WHERE name = '$state'");
}

# ---- a deferred trigger never runs as the worker; a combine at commit runs as the owner
as_role('mallory', q{SELECT state.timer_register('m_deferred', 1, clock_timestamp())});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM state.timer_failures WHERE name = 'm_deferred'}),
	"mallory's handler that queues a deferred trigger fails");
like($node->safe_psql('postgres', q{SELECT error FROM state.timer_failures WHERE name = 'm_deferred'}),
	qr/cannot fire deferred trigger within security-restricted operation/,
	'refused as in a security-restricted operation');
is($node->safe_psql('postgres', q{SELECT count(*) FROM mallory.who WHERE what = 'deferred'}),
	'0', 'the deferred trigger never ran');
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'}),
	'f', 'mallory is not a superuser');
my $combines = $node->safe_psql('postgres', q{SELECT count(*) FROM mallory.who WHERE what = 'combine'});
as_role('mallory', q{SELECT state.timer_register('m_commit', 1, clock_timestamp())});
ok($node->poll_query_until('postgres', q{SELECT state.value_get('m_agg', 1, 0) = 11}),
	"the handler folded into mallory's transactional aggregating state");
ok($node->safe_psql('postgres', q{SELECT count(*) FROM mallory.who WHERE what = 'combine'}) > $combines,
	'its combine function ran in the timer worker');
is($node->safe_psql('postgres',
		q{SELECT string_agg(DISTINCT usr || ' ' || su, ',') FROM mallory.who WHERE what = 'combine'}),
	'mallory false', 'as mallory, not as the worker');

# ---- no temporary table in a handler; the superuser's handler writes its own table
as_role('mallory', q{SELECT state.timer_register('m_temp', 2, clock_timestamp())});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM state.timer_failures WHERE name = 'm_temp'}),
	"mallory's handler that creates a temporary table fails");
like($node->safe_psql('postgres', q{SELECT error FROM state.timer_failures WHERE name = 'm_temp'}),
	qr/security-restricted operation/, 'refused as a security-restricted operation');
$node->safe_psql('postgres', q{SELECT state.timer_register('s_timers', 3, clock_timestamp())});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM public.log_s}),
	"the superuser's handler wrote its own table");
is($node->safe_psql('postgres', q{SELECT count(*) FROM mallory.who WHERE what = 'temp'}),
	'0', "mallory's trigger never ran");

# ---- a SET in one owner's handler does not reach the next
as_role('mallory', q{SELECT state.timer_register('m_set', 4, clock_timestamp())});
ok($node->poll_query_until('postgres',
		q{SELECT timers_fired > 0 FROM state.stats WHERE name = 'm_set'}),
	"mallory's handler that sets default_transaction_read_only ran");
as_role('alice', q{SELECT state.timer_register('a_timers', 5, clock_timestamp())});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM alice.log WHERE k = 5}),
	"alice's timer fired after it, writing");
is(failures('a_timers'), '0', "alice's timer did not fail");

# ---- a batch whose commit fails
as_role('mallory', q{INSERT INTO mallory.fail VALUES (1)});
my $at = $node->safe_psql('postgres', q{SELECT clock_timestamp() + interval '1 s'});
as_role('mallory', qq{SELECT state.timer_register('m_commit', 6, '$at')});
as_role('alice', qq{SELECT state.timer_register('a_timers', 6, '$at')});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM alice.log WHERE k = 6}),
	"alice's timer due with mallory's failing commit fired");
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM state.timer_failures WHERE name = 'm_commit'}),
	'the timer whose commit fails reached state.timer_failures');
like($node->safe_psql('postgres', q{SELECT attempts || ' ' || error FROM state.timer_failures WHERE name = 'm_commit'}),
	qr/^2 .*combine refused/, 'after its tries, with the commit\'s error');
ok($node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM state.timers('m_commit', 6)}),
	'and left its state');

# ---- a batch whose commit fails: one owner's batch, alone, to state.timer_failures
$node->safe_psql('postgres', q{
ALTER SYSTEM SET state_backend.timer_max_retries = 0;
ALTER SYSTEM SET state_backend.fault_points = 'timer.batch_before_commit:error:2';
SELECT pg_reload_conf();});
settings_seen(100, 'state_backend.fault_points', 'timer.batch_before_commit:error:2');    # its batch is the point's first arrival; the next fails
$at = $node->safe_psql('postgres', q{SELECT clock_timestamp() + interval '2 s'});
as_role('mallory', qq{SELECT state.timer_register('m_set', 11, '$at')});
as_role('alice', qq{SELECT state.timer_register('a_timers', 11, '$at')});
ok($node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM state.timer_failures WHERE error LIKE '%timer.batch_before_commit%'}),
	'the batch whose commit failed reached state.timer_failures');
ok($node->poll_query_until('postgres',
		q{SELECT (SELECT count(*) FROM alice.log WHERE k = 11)
               + (SELECT count(*) FROM state.timer_failures WHERE name = 'a_timers') = 1}),
	"alice's timer fired unless it was the one whose commit failed");
ok($node->poll_query_until('postgres',
		q{SELECT (SELECT count(*) FROM state.timers('m_set', 11)) + (SELECT count(*) FROM state.timers('a_timers', 11)) = 0}),
	'both timers left their states');
$node->safe_psql('postgres', q{
ALTER SYSTEM RESET state_backend.timer_max_retries;
ALTER SYSTEM RESET state_backend.fault_points;
SELECT pg_reload_conf();});

# ---- a handler that catches its cancel
$at = $node->safe_psql('postgres', q{SELECT clock_timestamp() + interval '1 s'});
as_role('mallory', qq{SELECT state.timer_register('m_loop', 7, '$at')});
as_role('alice', qq{SELECT state.timer_register('a_timers', 7, '$at')});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM alice.log WHERE k = 7}),
	"alice's timer due with mallory's endless handler fired");
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM state.timer_failures WHERE name = 'm_loop'}),
	'the endless handler was stopped and its timer reached state.timer_failures');
like($node->safe_psql('postgres', q{SELECT error FROM state.timer_failures WHERE name = 'm_loop'}),
	qr/timer_statement_timeout/, 'saying why');
as_role('alice', q{SELECT state.timer_register('a_timers', 8, clock_timestamp())});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM alice.log WHERE k = 8}),
	'timers fire after it');
is(worker_pid($node), $worker, 'the cluster did not restart');

# ---- deleted timers leave the worker's index
as_role('alice', q{
SELECT count(state.timer_register('a_timers', i, now() + interval '1 day')),
       count(state.timer_delete('a_timers', i, now() + interval '1 day'))
  FROM generate_series(1, 20000) i});
ok($node->poll_query_until('postgres',
		q{SELECT pending < 2000 FROM state.timer_status WHERE name = 'a_timers'}),
	'20,000 registered and deleted timers do not stay in the worker\'s index');

# ---- a revoked handler does not run
as_role('mallory', q{SELECT state.timer_register('m_sd', 9, clock_timestamp())});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM alice.sdlog}),
	'the SECURITY DEFINER handler runs while mallory may execute it');
as_role('alice', q{REVOKE EXECUTE ON FUNCTION alice.sd(int, timestamptz) FROM mallory});
as_role('mallory', q{SELECT state.timer_register('m_sd', 10, clock_timestamp())});
ok($node->poll_query_until('postgres',
		q{SELECT problem <> '' FROM state.timer_status WHERE name = 'm_sd'}),
	'the revoked handler is reported as a problem');
is($node->safe_psql('postgres', q{SELECT count(*) FROM alice.sdlog}), '1',
	'and did not run after the revoke');
is($node->safe_psql('postgres', q{SELECT count(*) FROM state.timers('m_sd', 10)}), '1',
	'its timer waits in its state');

# ---- who and when a handler is
as_role('mallory', q{SELECT state.timer_register('m_who', 1, clock_timestamp())});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM mallory.seen}),
	'the handler that looks at itself ran');
is($node->safe_psql('postgres', q{SELECT su || ' ' || cu || ' ' || is_su FROM mallory.seen}),
	'mallory mallory off', 'as mallory for session_user and current_user, not a superuser');
is($node->safe_psql('postgres', q{SELECT skew < interval '1 s' FROM mallory.seen}),
	't', 'now() is the time of its batch, not of the worker\'s start');

# ---- slow handlers of one owner, a timer of another due with them
$at = $node->safe_psql('postgres', q{SELECT clock_timestamp() + interval '1 s'});
as_role('mallory', qq{SELECT count(state.timer_register('m_slow', g, '$at')) FROM generate_series(1, 20) g});
as_role('alice', qq{SELECT state.timer_register('a_timers', 12, '$at')});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM alice.log WHERE k = 12}),
	"alice's timer due with 20 of mallory's slow handlers fired");
is($node->safe_psql('postgres',
		qq{SELECT (SELECT fired FROM alice.log WHERE k = 12) - '$at'::timestamptz < interval '4 s'}),
	't', 'within a batch\'s budget, not after the 8 s mallory\'s handlers take');

ok($node->poll_query_until('postgres', q{SELECT pending = 0 FROM state.timer_status WHERE name = 'm_slow'}),
	'mallory\'s slow timers all fired');

# ---- a timer waiting to be retried, its state read whole meanwhile
$node->safe_psql('postgres', q{
ALTER SYSTEM SET state_backend.timer_retry_delay = '4s';
SELECT pg_reload_conf();});
settings_seen(101, 'state_backend.timer_retry_delay', '4s');
as_role('mallory', q{SELECT state.timer_register('m_bad', 1, clock_timestamp())});
ok($node->poll_query_until('postgres', q{SELECT last_value = 1 FROM mallory.calls}),
	'the failing handler ran once');
# Deletes that make the worker read the state whole while the timer waits.
as_role('mallory', q{
SELECT count(state.timer_register('m_bad', g, '3000-01-01')) FROM generate_series(2, 3000) g;
SELECT count(state.timer_delete('m_bad', g, '3000-01-01')) FROM generate_series(2, 3000) g;});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM state.timer_failures WHERE name = 'm_bad'}),
	'the timer reached state.timer_failures');
is($node->safe_psql('postgres', q{SELECT count(*) || ' ' || max(attempts) FROM state.timer_failures WHERE name = 'm_bad'}),
	'1 2', 'once, after its try and one retry');
is($node->safe_psql('postgres', q{SELECT last_value FROM mallory.calls}), '2',
	'its handler ran twice, not more');
$node->safe_psql('postgres', q{
ALTER SYSTEM RESET state_backend.timer_retry_delay;
SELECT pg_reload_conf();});

# ---- a window state's aggregate revoked
as_role('alice', q{
SELECT state.window_add('aw', 1, '2026-06-01 12:00:05+00', 5::bigint);
SELECT state.advance_watermark('aw', '2026-06-01 12:01:00+00');});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM alice.out}),
	'the window state emitted with carol\'s aggregate');
as_role('alice', q{SELECT state.window_add('aw', 3, '2026-06-01 12:02:05+00', 9::bigint)});
$node->safe_psql('postgres', q{SET ROLE carol; REVOKE EXECUTE ON FUNCTION carol.mysum(bigint) FROM alice});
as_role('alice', q{SELECT state.advance_watermark('aw', '2026-06-01 12:03:00+00')});
ok($node->poll_query_until('postgres',
		q{SELECT problem LIKE '%aggregate%' FROM state.timer_status WHERE name = 'aw'}),
	'the revoked aggregate is reported as a problem');
is($node->safe_psql('postgres', q{SELECT count(*) FROM alice.out}), '1',
	'and its window was not emitted');
$node->safe_psql('postgres', q{SET ROLE carol; GRANT EXECUTE ON FUNCTION carol.mysum(bigint) TO alice});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 2 FROM alice.out WHERE k = 3 OR k = 1}),
	'the window fires once the grant is back');

$node->stop;
done_testing();
