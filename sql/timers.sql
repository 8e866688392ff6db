--
-- timers: timers states, fired as SQL by the database's timer worker.
-- Runs with the default backend of the pass (memory, rocksdb, lmdb).
-- Firing is asynchronous: wait_for() polls until what the worker does is
-- seen (never longer than a minute), so nothing here depends on timing.
--
CREATE TABLE fired (name text, k text, at timestamptz, by_role text);
CREATE FUNCTION on_timer(k text, at timestamptz) RETURNS void LANGUAGE sql
    AS $$ INSERT INTO fired VALUES ('ev', k, at, current_user) $$;
CREATE FUNCTION on_int(k int, at timestamptz) RETURNS void LANGUAGE sql
    AS $$ INSERT INTO fired VALUES ('p', k::text, at, current_user) $$;

-- What a timers state needs
SELECT expect_error($$SELECT state.create_state('tm_x', 'timers', 'text')$$);
SELECT expect_error($$SELECT state.create_state('tm_x', 'timers', 'int', handler => 'on_timer(text,timestamptz)')$$);
SELECT expect_error($$SELECT state.create_state('tm_x', 'timers', 'text', handler => 'now()')$$);
SELECT expect_error($$SELECT state.create_state('tm_x', 'timers', 'text', handler => 'on_timer(text,timestamptz)', time_domain => 'wall')$$);
SELECT expect_error($$SELECT state.create_state('tm_x', 'timers', 'text', handler => 'on_timer(text,timestamptz)', ttl => '1 hour')$$);
SELECT expect_error($$SELECT state.create_state('tm_x', 'value', 'text', 'int', handler => 'on_timer(text,timestamptz)')$$);

-- Event time: register (one per key and instant), list, delete
SELECT state.create_state('tm_ev', 'timers', 'text', handler => 'on_timer(text,timestamptz)', time_domain => 'event');
SELECT name, kind, key_type, map_key_type FROM state.states WHERE name = 'tm_ev';
SELECT state.timer_register('tm_ev', 'a'::text, '2026-01-01 00:00:10+00');
SELECT state.timer_register('tm_ev', 'a'::text, '2026-01-01 00:00:10+00');
SELECT state.timer_register('tm_ev', 'a'::text, '2026-01-01 00:00:30+00');
SELECT state.timer_register('tm_ev', 'b'::text, '2026-01-01 00:00:20+00');
-- an untyped key is text, as in every function that takes a key
SELECT state.timer_register('tm_ev', 'gone', '2026-01-01 00:00:05+00');
SELECT state.timer_delete('tm_ev', 'gone', '2026-01-01 00:00:05+00');
SELECT state.timer_delete('tm_ev', 'gone', '2026-01-01 00:00:05+00');
SELECT * FROM state.timers('tm_ev', NULL::text) ORDER BY at, key;
-- a read-only transaction registers, deletes and advances nothing (25006)
BEGIN TRANSACTION READ ONLY;
SELECT expect_error($$SELECT state.timer_register('tm_ev', 'ro'::text, '2026-01-01 00:00:40+00')$$);
SELECT expect_error($$SELECT state.timer_delete('tm_ev', 'a'::text, '2026-01-01 00:00:10+00')$$);
SELECT expect_error($$SELECT state.advance_watermark('tm_ev', '2026-01-01 00:01:00+00')$$);
SELECT count(*) FROM state.timers('tm_ev', NULL::text);
COMMIT;
-- no function of the extension takes a key as anyelement (an untyped key
-- could not resolve it: 42804)
SELECT p.oid::regprocedure FROM pg_proc p, unnest(p.proargnames) WITH ORDINALITY a(name, i)
WHERE p.pronamespace = 'state'::regnamespace AND a.name = 'key' AND a.i <= p.pronargs
  AND p.proargtypes[a.i - 1] = 'anyelement'::regtype ORDER BY 1;
SELECT expect_error($$SELECT state.timer_register('tm_ev', 'a'::text, NULL)$$);
SELECT expect_error($$SELECT state.timer_register('tm_ev', 'a'::text, 'infinity')$$);
SELECT expect_error($$SELECT state.map_put('tm_ev', 'a'::text, now(), true)$$);
SELECT expect_error($$SELECT state.value_get('tm_ev', 'a'::text, 0)$$);
SELECT state.watermark('tm_ev') IS NULL AS no_watermark_yet;

-- Nothing is due before the watermark passes; then what is due fires once
SELECT state.advance_watermark('tm_ev', '2026-01-01 00:00:20+00');
SELECT state.watermark('tm_ev');
SELECT wait_for($$SELECT count(*) = 2 FROM fired$$);
SELECT wait_for($$SELECT count(*) = 1 FROM state.timers('tm_ev', NULL::text)$$);
SELECT name, k, at FROM fired ORDER BY at;
SELECT * FROM state.timers('tm_ev', NULL::text);
-- a watermark that goes back is refused; one that stays is fine
SELECT expect_error($$SELECT state.advance_watermark('tm_ev', '2026-01-01 00:00:19+00')$$);
SELECT state.advance_watermark('tm_ev', '2026-01-01 00:00:20+00');
SELECT state.advance_watermark('tm_ev', '2026-01-01 00:01:00+00');
SELECT wait_for($$SELECT count(*) = 3 FROM fired$$);
SELECT name, k, at FROM fired ORDER BY at;
-- a firing is counted once its batch has committed, a moment after its rows show
SELECT wait_for($$SELECT timers_fired = 3 FROM state.stats WHERE name = 'tm_ev'$$);
SELECT name, timers_registered, timers_fired, timers_failed FROM state.stats WHERE name = 'tm_ev';
SELECT wait_for($$SELECT pending = 0 FROM state.timer_status WHERE name = 'tm_ev'$$);
SELECT name, time_domain, watermark, pending, retrying, problem FROM state.timer_status;

-- A handler that registers the next timer of its key: a chain of three
CREATE FUNCTION on_chain(k text, at timestamptz) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO fired VALUES ('chain', k, at, current_user);
    IF (SELECT count(*) FROM fired WHERE name = 'chain') < 3 THEN
        PERFORM state.timer_register('tm_chain', k, at + interval '1 second');
    END IF;
END $$;
SELECT state.create_state('tm_chain', 'timers', 'text', handler => 'on_chain(text,timestamptz)', time_domain => 'event');
SELECT state.timer_register('tm_chain', 'c'::text, '2026-01-01 00:00:01+00');
SELECT state.advance_watermark('tm_chain', '2026-01-02 00:00:00+00');
SELECT wait_for($$SELECT count(*) = 3 FROM fired WHERE name = 'chain'$$);
SELECT k, at FROM fired WHERE name = 'chain' ORDER BY at;

-- Processing time, transactional: a rolled-back registration never fires;
-- the timer of one that commits fires when the clock passes it (the clock
-- of state TTL, which earlier tests moved: its time is read here)
SELECT state._advance_ttl_clock('1 microsecond') AS clock \gset
SELECT state.create_state('tm_p', 'timers', 'int', handler => 'on_int(int,timestamptz)', transactional => true);
SELECT expect_error($$SELECT state.advance_watermark('tm_p', now())$$);
BEGIN;
SELECT state.timer_register('tm_p', 1, :'clock'::timestamptz - interval '1 day');
ROLLBACK;
SELECT state.timer_register('tm_p', 2, :'clock'::timestamptz - interval '1 day');
SELECT state.timer_register('tm_p', 3, :'clock'::timestamptz + interval '1 hour');
SELECT wait_for($$SELECT count(*) = 1 FROM fired WHERE name = 'p'$$);
SELECT k FROM fired WHERE name = 'p' ORDER BY k;
SELECT key FROM state.timers('tm_p', 0);
SELECT state._advance_ttl_clock('2 hours') > :'clock'::timestamptz AS clock_moved;
SELECT wait_for($$SELECT count(*) = 2 FROM fired WHERE name = 'p'$$);
SELECT k FROM fired WHERE name = 'p' ORDER BY k;
SELECT count(*) FROM state.timers('tm_p', 0);

-- A handler that fails is retried (state_backend.timer_max_retries), then
-- kept in state.timer_failures with its error; the others still fire
CREATE FUNCTION on_fail(k text, at timestamptz) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO fired VALUES ('fail', k, at, current_user);
    IF k = 'bad' THEN RAISE EXCEPTION 'no handler for %', k; END IF;
END $$;
SELECT state.create_state('tm_f', 'timers', 'text', handler => 'on_fail(text,timestamptz)', time_domain => 'event');
SELECT state.timer_register('tm_f', 'bad'::text, '2026-01-01 00:00:01+00');
SELECT state.timer_register('tm_f', 'good'::text, '2026-01-01 00:00:02+00');
SELECT state.advance_watermark('tm_f', '2026-01-01 00:01:00+00');
SELECT wait_for($$SELECT count(*) = 1 FROM state.timer_failures$$);
SELECT name, key, at, attempts, error FROM state.timer_failures;
SELECT k, count(*) FROM fired WHERE name = 'fail' GROUP BY k ORDER BY k;
SELECT count(*) FROM state.timers('tm_f', NULL::text);
SELECT wait_for($$SELECT timers_fired = 1 AND timers_failed = 1 FROM state.stats WHERE name = 'tm_f'$$);
SELECT name, timers_fired, timers_failed FROM state.stats WHERE name = 'tm_f';

-- Privileges: the handler runs as the state's owner; without write on the
-- state, a role cannot register; without read, it cannot list
CREATE ROLE regress_tm_owner;
CREATE ROLE regress_tm_other;
GRANT ALL ON fired TO regress_tm_owner;
GRANT USAGE ON SCHEMA state TO regress_tm_owner, regress_tm_other;
SET ROLE regress_tm_owner;
SELECT state.create_state('tm_own', 'timers', 'text', handler => 'on_timer(text,timestamptz)', time_domain => 'event');
SELECT state.timer_register('tm_own', 'o'::text, '2026-01-01 00:00:01+00');
RESET ROLE;
SET ROLE regress_tm_other;
SELECT expect_error($$SELECT state.timer_register('tm_own', 'x'::text, '2026-01-01 00:00:01+00')$$);
SELECT expect_error($$SELECT * FROM state.timers('tm_own', NULL::text)$$);
SELECT expect_error($$SELECT state.advance_watermark('tm_own', '2026-01-02 00:00:00+00')$$);
SELECT count(*) FROM state.timer_failures;
RESET ROLE;
SET ROLE regress_tm_owner;
SELECT state.advance_watermark('tm_own', '2026-01-02 00:00:00+00');
RESET ROLE;
SELECT wait_for($$SELECT count(*) = 1 FROM fired WHERE k = 'o'$$);
SELECT k, by_role FROM fired WHERE k = 'o';

-- Cleanup: with no timers state left, the database's timer worker stops
SELECT state.drop_state(name) FROM state.states WHERE kind = 'timers' AND name <> 'tm_own';
SET ROLE regress_tm_owner;
SELECT state.drop_state('tm_own', true);
RESET ROLE;
SELECT wait_for($$SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'state_backend timers' AND datname = current_database()$$);
REVOKE ALL ON fired FROM regress_tm_owner;
REVOKE USAGE ON SCHEMA state FROM regress_tm_owner, regress_tm_other;
DROP ROLE regress_tm_owner;
DROP ROLE regress_tm_other;
DELETE FROM state._failed_timers;
