--
-- watermarks: watermarks that follow the data (out_of_orderness), idle
-- streams (idle_timeout), and late values handed to a late function.
-- Runs with the default backend of the pass (memory, rocksdb, lmdb).
-- Firing is asynchronous: wait_for() polls until what the worker does is
-- seen (never longer than a minute), so nothing here depends on timing.
--
SET timezone = 'UTC';
CREATE TABLE wm_emitted (name text, k text, ws timestamptz, we timestamptz, r bigint);
CREATE FUNCTION wm_emit(k text, ws timestamptz, we timestamptz, r bigint) RETURNS void
    LANGUAGE sql AS $$ INSERT INTO wm_emitted VALUES ('sum', k, ws, we, r) $$;
CREATE FUNCTION wm_emit_idle(k text, ws timestamptz, we timestamptz, r bigint) RETURNS void
    LANGUAGE sql AS $$ INSERT INTO wm_emitted VALUES ('idle', k, ws, we, r) $$;
CREATE TABLE wm_late (k text, t timestamptz, v bigint, by_role text);
CREATE FUNCTION wm_late_fn(k text, t timestamptz, v bigint) RETURNS void
    LANGUAGE sql AS $$ INSERT INTO wm_late VALUES (k, t, v, current_user) $$;
CREATE FUNCTION wm_late_int(k int, t timestamptz, v bigint) RETURNS void
    LANGUAGE sql AS $$ SELECT $$;
CREATE TABLE wm_fired (k text, at timestamptz);
CREATE FUNCTION wm_on_timer(k text, at timestamptz) RETURNS void
    LANGUAGE sql AS $$ INSERT INTO wm_fired VALUES (k, at) $$;

-- Where the options apply: event-time window and timers states; late only
-- on window states; intervals of days and less; idle_timeout with
-- out_of_orderness
SELECT expect_error($$SELECT state.create_state('wm_x', 'value', 'text', 'bigint', out_of_orderness => '1 second')$$);
SELECT expect_error($$SELECT state.create_state('wm_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum', emit => 'wm_emit(text,timestamptz,timestamptz,bigint)', time_domain => 'processing', out_of_orderness => '1 second')$$);
SELECT expect_error($$SELECT state.create_state('wm_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum', emit => 'wm_emit(text,timestamptz,timestamptz,bigint)', out_of_orderness => '-1 second')$$);
SELECT expect_error($$SELECT state.create_state('wm_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum', emit => 'wm_emit(text,timestamptz,timestamptz,bigint)', out_of_orderness => '1 month')$$);
SELECT expect_error($$SELECT state.create_state('wm_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum', emit => 'wm_emit(text,timestamptz,timestamptz,bigint)', idle_timeout => '1 second')$$);
SELECT expect_error($$SELECT state.create_state('wm_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum', emit => 'wm_emit(text,timestamptz,timestamptz,bigint)', out_of_orderness => '0', idle_timeout => '0')$$);
SELECT expect_error($$SELECT state.create_state('wm_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum', emit => 'wm_emit(text,timestamptz,timestamptz,bigint)', time_domain => 'processing', late => 'wm_late_fn(text,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('wm_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum', emit => 'wm_emit(text,timestamptz,timestamptz,bigint)', late => 'wm_late_int(int,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('wm_x', 'timers', 'text', handler => 'wm_on_timer(text,timestamptz)', late => 'wm_late_fn(text,timestamptz,bigint)')$$);
SELECT count(*) FROM state.states WHERE name = 'wm_x';

-- A watermark from the data: each value at t moves it to t less 10
-- seconds; a value out of order within that bound still joins its window,
-- which fires once the watermark passes its end
SELECT state.create_state('wm_t', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute',
                          reducer => 'sum', emit => 'wm_emit(text,timestamptz,timestamptz,bigint)',
                          out_of_orderness => '10 seconds', late => 'wm_late_fn(text,timestamptz,bigint)');
SELECT state.watermark('wm_t') IS NULL AS no_watermark_yet;
SELECT state.window_add('wm_t', 'a', '2026-01-01 00:00:05+00', 1::bigint);
SELECT state.watermark('wm_t');
SELECT state.window_add('wm_t', 'a', '2026-01-01 00:00:50+00', 1::bigint);
SELECT state.window_add('wm_t', 'a', '2026-01-01 00:01:05+00', 1::bigint);
SELECT state.watermark('wm_t');
-- 8 seconds behind the latest: not late, joins the first window
SELECT state.window_add('wm_t', 'a', '2026-01-01 00:00:57+00', 1::bigint);
-- an earlier value does not move the watermark back
SELECT state.window_add('wm_t', 'a', '2026-01-01 00:00:56+00', 1::bigint);
SELECT state.watermark('wm_t');
SELECT count(*) FROM wm_emitted;
SELECT state.window_add('wm_t', 'a', '2026-01-01 00:01:15+00', 1::bigint);
SELECT wait_for($$SELECT count(*) = 1 FROM wm_emitted$$);
SELECT name, k, ws, we, r FROM wm_emitted;
-- advance_watermark still moves it, never back
SELECT expect_error($$SELECT state.advance_watermark('wm_t', '2026-01-01 00:00:00+00')$$);

-- Late values reach the late function, in the caller's transaction, as
-- the owner; state.stats.late still counts them
SELECT state.window_add('wm_t', 'b', '2026-01-01 00:00:30+00', 7::bigint);
SELECT k, t, v, by_role = current_user AS as_owner FROM wm_late;
BEGIN;
SELECT state.window_add('wm_t', 'c', '2026-01-01 00:00:31+00', 8::bigint);
SELECT count(*) FROM wm_late;
ROLLBACK;
SELECT count(*) FROM wm_late;
SELECT late FROM state.stats WHERE name = 'wm_t';
-- a key given as an untyped literal reaches the function in the key's type
SELECT state.window_add('wm_t', 'd', '2026-01-01 00:00:32+00', 9);
SELECT k, v FROM wm_late ORDER BY t;

-- The late function runs as the state's owner, whoever adds the value
CREATE ROLE regress_wm_owner;
CREATE ROLE regress_wm_writer;
GRANT USAGE ON SCHEMA state TO regress_wm_owner, regress_wm_writer;
GRANT INSERT ON wm_late TO regress_wm_owner;
SET ROLE regress_wm_owner;
SELECT state.create_state('wm_own', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute',
                          reducer => 'sum', emit => 'wm_emit(text,timestamptz,timestamptz,bigint)',
                          out_of_orderness => '0', late => 'wm_late_fn(text,timestamptz,bigint)');
SELECT state.grant_access('wm_own', 'regress_wm_writer', 'read');
SELECT state.grant_access('wm_own', 'regress_wm_writer', 'write');
SELECT state.window_add('wm_own', 'o', '2026-01-01 00:05:00+00', 1::bigint);
RESET ROLE;
SET ROLE regress_wm_writer;
SELECT state.window_add('wm_own', 'w', '2026-01-01 00:01:00+00', 2::bigint);
RESET ROLE;
SELECT k, v, by_role FROM wm_late WHERE k = 'w';
-- a late function the owner may no longer execute fails the call: the
-- value is not dropped unseen
REVOKE EXECUTE ON FUNCTION wm_late_fn(text, timestamptz, bigint) FROM PUBLIC;
SET ROLE regress_wm_writer;
SELECT expect_error($$SELECT state.window_add('wm_own', 'w2', '2026-01-01 00:01:00+00', 3::bigint)$$);
RESET ROLE;
GRANT EXECUTE ON FUNCTION wm_late_fn(text, timestamptz, bigint) TO PUBLIC;
SET ROLE regress_wm_owner;
SELECT state.drop_state('wm_own');
RESET ROLE;

-- An idle stream: with no value for idle_timeout, the watermark follows
-- the clock from the last event time seen, so the last window fires
SELECT state.create_state('wm_idle', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute',
                          reducer => 'sum', emit => 'wm_emit_idle(text,timestamptz,timestamptz,bigint)',
                          out_of_orderness => '0', idle_timeout => '1 second');
SELECT state.window_add('wm_idle', 'i', '2026-01-01 00:00:59.5+00', 4::bigint);
SELECT wait_for($$SELECT count(*) = 1 FROM wm_emitted WHERE name = 'idle'$$);
SELECT k, ws, we, r FROM wm_emitted WHERE name = 'idle';
SELECT state.watermark('wm_idle') >= '2026-01-01 00:01:00+00' AS followed_the_clock;

-- Event-time timers: a timer registered at t moves the watermark to t less
-- the bound, which fires the timers it passes
SELECT state.create_state('wm_tm', 'timers', 'text', handler => 'wm_on_timer(text,timestamptz)',
                          time_domain => 'event', out_of_orderness => '5 seconds');
SELECT state.timer_register('wm_tm', 'a', '2026-01-01 00:00:10+00');
SELECT state.timer_register('wm_tm', 'b', '2026-01-01 00:00:14+00');
SELECT state.watermark('wm_tm');
SELECT count(*) FROM wm_fired;
SELECT state.timer_register('wm_tm', 'c', '2026-01-01 00:00:20+00');
SELECT wait_for($$SELECT count(*) = 2 FROM wm_fired$$);
SELECT k, at FROM wm_fired ORDER BY at;

-- Cleanup
SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'wm\_%';
DROP TABLE wm_emitted, wm_late, wm_fired;
DROP FUNCTION wm_emit(text, timestamptz, timestamptz, bigint);
DROP FUNCTION wm_emit_idle(text, timestamptz, timestamptz, bigint);
DROP FUNCTION wm_late_fn(text, timestamptz, bigint);
DROP FUNCTION wm_late_int(int, timestamptz, bigint);
DROP FUNCTION wm_on_timer(text, timestamptz);
REVOKE USAGE ON SCHEMA state FROM regress_wm_owner, regress_wm_writer;
DROP ROLE regress_wm_owner;
DROP ROLE regress_wm_writer;
