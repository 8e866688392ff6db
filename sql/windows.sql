--
-- windows: window states, fired as SQL by the database's timer worker.
-- Runs with the default backend of the pass (memory, rocksdb, lmdb).
-- Firing is asynchronous: wait_for() polls until what the worker does is
-- seen (never longer than a minute), so nothing here depends on timing.
--
SET timezone = 'UTC';
CREATE TABLE emitted (id bigserial, name text, k text, ws timestamptz, we timestamptz, r text,
                      by_role text);
CREATE FUNCTION em_sum(k text, ws timestamptz, we timestamptz, r bigint) RETURNS void
    LANGUAGE sql AS $$ INSERT INTO emitted (name, k, ws, we, r, by_role)
                       VALUES ('sum', k, ws, we, r::text, current_user) $$;
CREATE FUNCTION em_avg(k int, ws timestamptz, we timestamptz, r numeric) RETURNS void
    LANGUAGE sql AS $$ INSERT INTO emitted (name, k, ws, we, r) VALUES ('avg', k::text, ws, we, round(r, 2)::text) $$;
CREATE FUNCTION em_list(k text, ws timestamptz, we timestamptz, r int[]) RETURNS void
    LANGUAGE sql AS $$ INSERT INTO emitted (name, k, ws, we, r)
                       VALUES ('list', k, ws, we, (SELECT array_agg(x ORDER BY x) FROM unnest(r) x)::text) $$;

-- What a window state needs: an assigner with positive times, one kind of
-- contents, an emit function of (key, timestamptz, timestamptz, result)
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', reducer => 'sum', size => '1 minute', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'hopping', size => '1 minute', reducer => 'sum', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '0 seconds', reducer => 'sum', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '-1 minute', reducer => 'sum', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 month', reducer => 'sum', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'tumbling', reducer => 'sum', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'sliding', size => '1 minute', slide => '2 minutes', reducer => 'sum', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'sliding', size => '1 minute', slide => '0 seconds', reducer => 'sum', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'sliding', size => '1 minute', reducer => 'sum', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', gap => '1 minute', reducer => 'sum', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'sliding', size => '2 minutes', slide => '1 minute', gap => '1 minute', reducer => 'sum', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'session', size => '1 minute', reducer => 'sum', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'session', gap => '0 seconds', reducer => 'sum', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum', collect => 'list', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'int', assigner => 'tumbling', size => '1 minute', collect => 'set', emit => 'em_list(text,timestamptz,timestamptz,int[])')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'int', assigner => 'tumbling', size => '1 minute', reducer => 'sum', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum', allowed_lateness => '-1 second', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum', ttl => '1 hour', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum', time_domain => 'wall', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
CREATE AGGREGATE plain_sum(bigint) (sfunc = int8pl, stype = bigint, initcond = '0');
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'session', gap => '1 minute', aggregate => 'plain_sum(bigint)', emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', aggregate => 'plain_sum(bigint)', transactional => true, emit => 'em_sum(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('w_x', 'value', 'text', 'bigint', assigner => 'tumbling')$$);
SELECT count(*) FROM state.states WHERE name = 'w_x';

-- Tumbling windows of a minute, a sum per key: each window fires once when
-- the watermark passes its end, with what it holds; its state goes then
SELECT state.create_state('w_tum', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute',
                          reducer => 'sum', emit => 'em_sum(text,timestamptz,timestamptz,bigint)');
SELECT name, kind, key_type, value_type, reducer FROM state.states WHERE name = 'w_tum';
SELECT state.window_add('w_tum', 'a', '2026-01-01 00:00:10+00', 1::bigint);
SELECT state.window_add('w_tum', 'a', '2026-01-01 00:00:50+00', 2::bigint);
SELECT state.window_add('w_tum', 'a', '2026-01-01 00:01:00+00', 4::bigint);
SELECT state.window_add('w_tum', 'b', '2026-01-01 00:00:59.999999+00', 8::bigint);
SELECT * FROM state.windows('w_tum', ''::text) ORDER BY key, window_start;
SELECT state.window_get('w_tum', 'a', '2026-01-01 00:00:00+00', 0::bigint) AS a_first,
       state.window_get('w_tum', 'a', '2026-01-01 00:00:30+00', -1::bigint) AS not_a_start,
       state.window_get('w_tum', 'zz', '2026-01-01 00:00:00+00', -1::bigint) AS no_key;
SELECT expect_error($$SELECT state.window_add('w_tum', 'a', NULL, 1::bigint)$$);
SELECT expect_error($$SELECT state.window_add('w_tum', 'a', 'infinity', 1::bigint)$$);
SELECT expect_error($$SELECT state.window_add('w_tum', 'a', '2026-01-01 00:00:10+00', NULL::bigint)$$);
SELECT expect_error($$SELECT state.value_get('w_tum', 'a', 0::bigint)$$);
SELECT expect_error($$SELECT state.timer_register('w_tum', 'a'::text, now())$$);
SELECT expect_error($$SELECT * FROM state.entries('w_tum', ''::text, 0::bigint)$$);
SELECT state.watermark('w_tum') IS NULL AS no_watermark_yet;
SELECT state.advance_watermark('w_tum', '2026-01-01 00:00:59.999999+00');
SELECT state.advance_watermark('w_tum', '2026-01-01 00:01:00+00');
SELECT wait_for($$SELECT count(*) = 2 FROM emitted WHERE name = 'sum'$$);
SELECT wait_for($$SELECT count(*) = 1 FROM state.windows('w_tum', ''::text)$$);
SELECT k, ws, we, r FROM emitted WHERE name = 'sum' ORDER BY k, ws;
SELECT * FROM state.windows('w_tum', ''::text);
-- a value for a window that has gone is dropped, and counted
SELECT state.window_add('w_tum', 'a', '2026-01-01 00:00:30+00', 100::bigint);
SELECT state.window_add('w_tum', 'c', '2026-01-01 00:00:30+00', 100::bigint);
SELECT wait_for($$SELECT timers_fired = 2 FROM state.stats WHERE name = 'w_tum'$$);
SELECT name, late, timers_fired FROM state.stats WHERE name = 'w_tum';
SELECT count(*) FROM state.windows('w_tum', ''::text) WHERE key = 'c';
SELECT expect_error($$SELECT state.advance_watermark('w_tum', '2026-01-01 00:00:30+00')$$);
SELECT state.advance_watermark('w_tum', '2026-01-01 00:10:00+00');
SELECT wait_for($$SELECT count(*) = 3 FROM emitted WHERE name = 'sum'$$);
SELECT wait_for($$SELECT count(*) = 0 FROM state.windows('w_tum', ''::text)$$);
SELECT k, ws, we, r FROM emitted WHERE name = 'sum' ORDER BY id;
SELECT wait_for($$SELECT pending = 0 FROM state.timer_status WHERE name = 'w_tum'$$);
SELECT name, time_domain, watermark, pending, problem FROM state.timer_status WHERE name = 'w_tum';
TRUNCATE emitted;

-- Allowed lateness: a late value within it updates the window, which fires
-- again with the whole result; the window goes at end + lateness
SELECT state.create_state('w_late', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute',
                          reducer => 'sum', allowed_lateness => '30 seconds',
                          emit => 'em_sum(text,timestamptz,timestamptz,bigint)');
SELECT state.window_add('w_late', 'a', '2026-01-01 00:00:10+00', 1::bigint);
SELECT state.advance_watermark('w_late', '2026-01-01 00:01:10+00');
SELECT wait_for($$SELECT count(*) = 1 FROM emitted$$);
SELECT wait_for($$SELECT bool_and(fired) FROM state.windows('w_late', ''::text)$$);
SELECT * FROM state.windows('w_late', ''::text);
SELECT state.window_add('w_late', 'a', '2026-01-01 00:00:20+00', 10::bigint);
SELECT wait_for($$SELECT count(*) = 2 FROM emitted$$);
SELECT k, ws, we, r FROM emitted ORDER BY id;
SELECT state.advance_watermark('w_late', '2026-01-01 00:01:30+00');
SELECT wait_for($$SELECT count(*) = 0 FROM state.windows('w_late', ''::text)$$);
SELECT state.window_add('w_late', 'a', '2026-01-01 00:00:25+00', 100::bigint);
SELECT name, late FROM state.stats WHERE name = 'w_late';
SELECT count(*) AS emitted_twice_only FROM emitted;
TRUNCATE emitted;

-- Sliding windows of 3 minutes every minute, an aggregate's average: a value
-- joins three windows; int keys
SELECT state.create_state('w_sl', 'window', 'int', 'int', assigner => 'sliding', size => '3 minutes',
                          slide => '1 minute', aggregate => 'avg(int)',
                          emit => 'em_avg(int,timestamptz,timestamptz,numeric)');
SELECT state.window_add('w_sl', 7, '2026-01-01 00:02:30+00', 10);
SELECT state.window_add('w_sl', 7, '2026-01-01 00:03:30+00', 20);
SELECT window_start, window_end, fired FROM state.windows('w_sl', 0) ORDER BY window_start;
SELECT state.window_get('w_sl', 7, '2026-01-01 00:02:00+00', 0::numeric);
SELECT state.advance_watermark('w_sl', '2026-01-01 00:05:00+00');
SELECT wait_for($$SELECT count(*) = 3 FROM emitted$$);
SELECT k, ws, we, r FROM emitted ORDER BY ws;
SELECT wait_for($$SELECT count(*) = 1 FROM state.windows('w_sl', 0)$$);
SELECT window_start, window_end FROM state.windows('w_sl', 0) ORDER BY window_start;
TRUNCATE emitted;

-- Session windows with a gap of 10 seconds: values apart by more stay in
-- windows of their own, a value between two that meets neither is a new
-- window, one within the gap of a window extends it (touching counts), one
-- that meets two bridges them into one window, which fires once with the
-- whole sum
SELECT state.create_state('w_ses', 'window', 'text', 'bigint', assigner => 'session', gap => '10 seconds',
                          reducer => 'sum', emit => 'em_sum(text,timestamptz,timestamptz,bigint)');
SELECT state.window_add('w_ses', 'u', '2026-01-01 00:00:00+00', 1::bigint);
SELECT state.window_add('w_ses', 'u', '2026-01-01 00:01:00+00', 2::bigint);
SELECT state.window_add('w_ses', 'u', '2026-01-01 00:00:30+00', 4::bigint);
SELECT window_start, window_end FROM state.windows('w_ses', ''::text) ORDER BY 1;
SELECT state.window_add('w_ses', 'u', '2026-01-01 00:00:05+00', 8::bigint);
SELECT state.window_add('w_ses', 'u', '2026-01-01 00:00:20+00', 16::bigint);
SELECT window_start, window_end FROM state.windows('w_ses', ''::text) ORDER BY 1;
SELECT state.window_get('w_ses', 'u', '2026-01-01 00:00:00+00', 0::bigint) AS bridged;
SELECT state.window_add('w_ses', 'u', '2026-01-01 00:00:50+00', 32::bigint);
SELECT window_start, window_end FROM state.windows('w_ses', ''::text) ORDER BY 1;
SELECT state.window_add('w_ses', 'u', '2026-01-01 00:00:12+00', 64::bigint);
SELECT state.window_add('w_ses', 'u', '2026-01-01 00:00:45+00', 128::bigint);
SELECT window_start, window_end FROM state.windows('w_ses', ''::text) ORDER BY 1;
SELECT state.window_get('w_ses', 'u', '2026-01-01 00:00:00+00', 0::bigint) AS bridged,
       state.window_get('w_ses', 'u', '2026-01-01 00:00:45+00', 0::bigint) AS extended;
SELECT state.advance_watermark('w_ses', '2026-01-01 00:02:00+00');
SELECT wait_for($$SELECT count(*) = 2 FROM emitted$$);
SELECT wait_for($$SELECT count(*) = 0 FROM state.windows('w_ses', ''::text)$$);
SELECT k, ws, we, r FROM emitted ORDER BY ws;
TRUNCATE emitted;

-- Values collected into a list, in processing time (the clock of state
-- TTL, which tests move): a value joins the window of the clock's time
SELECT state._advance_ttl_clock('1 microsecond') AS clock \gset
SELECT state.create_state('w_pt', 'window', 'text', 'int', assigner => 'tumbling', size => '1 hour',
                          collect => 'list', time_domain => 'processing',
                          emit => 'em_list(text,timestamptz,timestamptz,int[])');
SELECT expect_error($$SELECT state.window_add('w_pt', 'p', now(), 1)$$);
SELECT expect_error($$SELECT state.advance_watermark('w_pt', now())$$);
SELECT state.window_add('w_pt', 'p', NULL, 3);
SELECT state.window_add('w_pt', 'p', NULL, 1);
SELECT state.window_add('w_pt', 'p', NULL, 2);
SELECT window_end > :'clock'::timestamptz AS ends_later, fired FROM state.windows('w_pt', ''::text);
SELECT state._advance_ttl_clock('2 hours') > :'clock'::timestamptz AS clock_moved;
SELECT wait_for($$SELECT count(*) = 1 FROM emitted$$);
SELECT k, r FROM emitted;
TRUNCATE emitted;

-- Transactional: a value added in a transaction that rolls back is not in
-- the window; the window fires exactly once, its removal committed with
-- what emit wrote
SELECT state.create_state('w_tx', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute',
                          reducer => 'sum', transactional => true,
                          emit => 'em_sum(text,timestamptz,timestamptz,bigint)');
BEGIN;
SELECT state.window_add('w_tx', 't', '2026-01-01 00:00:01+00', 1::bigint);
SELECT state.window_get('w_tx', 't', '2026-01-01 00:00:00+00', 0::bigint) AS seen_inside;
ROLLBACK;
SELECT state.window_get('w_tx', 't', '2026-01-01 00:00:00+00', 0::bigint) AS after_rollback;
BEGIN;
SELECT state.window_add('w_tx', 't', '2026-01-01 00:00:02+00', 2::bigint);
SAVEPOINT s;
SELECT state.window_add('w_tx', 't', '2026-01-01 00:00:03+00', 4::bigint);
ROLLBACK TO s;
SELECT state.window_add('w_tx', 't', '2026-01-01 00:00:04+00', 8::bigint);
COMMIT;
SELECT state.window_get('w_tx', 't', '2026-01-01 00:00:00+00', 0::bigint) AS committed;
SELECT state.advance_watermark('w_tx', '2026-01-01 00:05:00+00');
SELECT wait_for($$SELECT count(*) = 1 FROM emitted$$);
SELECT wait_for($$SELECT count(*) = 0 FROM state.windows('w_tx', ''::text)$$);
SELECT k, ws, we, r FROM emitted;
TRUNCATE emitted;

-- Prepared statements with untyped parameters: read with the state's types
PREPARE wadd AS SELECT state.window_add('w_tum', $1, $2, $3);
EXECUTE wadd('p', '2026-01-01 00:20:10+00', '5');
EXECUTE wadd('p', '2026-01-01 00:20:20+00', '6');
PREPARE wget AS SELECT state.window_get('w_tum', $1, $2, $3);
EXECUTE wget('p', '2026-01-01 00:20:00+00', '0');

-- An emit function that fails is retried, then the window is kept and
-- listed in state.timer_failures; the other windows still fire
CREATE FUNCTION em_fail(k text, ws timestamptz, we timestamptz, r bigint) RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
    IF k = 'bad' THEN RAISE EXCEPTION 'cannot emit %', k; END IF;
    INSERT INTO emitted (name, k, ws, we, r) VALUES ('fail', k, ws, we, r::text);
END $$;
SELECT state.create_state('w_f', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute',
                          reducer => 'sum', emit => 'em_fail(text,timestamptz,timestamptz,bigint)');
SELECT state.window_add('w_f', 'bad', '2026-01-01 00:00:01+00', 1::bigint);
SELECT state.window_add('w_f', 'good', '2026-01-01 00:00:01+00', 1::bigint);
SELECT state.advance_watermark('w_f', '2026-01-01 00:01:00+00');
SELECT wait_for($$SELECT count(*) = 1 FROM state.timer_failures WHERE name = 'w_f'$$);
SELECT name, key, attempts, error FROM state.timer_failures WHERE name = 'w_f';
SELECT wait_for($$SELECT count(*) = 1 FROM emitted$$);
SELECT wait_for($$SELECT count(*) = 1 FROM state.windows('w_f', ''::text)$$);
SELECT k, r FROM emitted;
SELECT key FROM state.windows('w_f', ''::text);
TRUNCATE emitted;

-- Privileges: emit runs as the state's owner; others need write to add
CREATE ROLE regress_w_owner;
CREATE ROLE regress_w_other;
GRANT ALL ON emitted, emitted_id_seq TO regress_w_owner;
GRANT USAGE ON SCHEMA state TO regress_w_owner, regress_w_other;
SET ROLE regress_w_owner;
SELECT state.create_state('w_own', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute',
                          reducer => 'sum', emit => 'em_sum(text,timestamptz,timestamptz,bigint)');
SELECT state.window_add('w_own', 'o', '2026-01-01 00:00:01+00', 1::bigint);
RESET ROLE;
SET ROLE regress_w_other;
SELECT expect_error($$SELECT state.window_add('w_own', 'x', '2026-01-01 00:00:01+00', 1::bigint)$$);
SELECT expect_error($$SELECT * FROM state.windows('w_own', ''::text)$$);
SELECT expect_error($$SELECT state.advance_watermark('w_own', '2026-01-02 00:00:00+00')$$);
RESET ROLE;
SET ROLE regress_w_owner;
SELECT state.advance_watermark('w_own', '2026-01-02 00:00:00+00');
RESET ROLE;
SELECT wait_for($$SELECT count(*) = 1 FROM emitted WHERE k = 'o'$$);
SELECT k, by_role FROM emitted WHERE k = 'o';

-- Cleanup
SELECT state.drop_state(name) FROM state.states WHERE kind = 'window' AND name <> 'w_own';
SET ROLE regress_w_owner;
SELECT state.drop_state('w_own');
RESET ROLE;
DELETE FROM state._failed_timers WHERE name = 'w_f';
DROP TABLE emitted;
DROP AGGREGATE plain_sum(bigint);
REVOKE USAGE ON SCHEMA state FROM regress_w_owner, regress_w_other;
DROP ROLE regress_w_owner;
DROP ROLE regress_w_other;
