--
-- emit_table: a window state whose fired windows become rows of a table,
-- inserted by the timer worker as the state's owner, without a function
-- call per window.  Runs with the default backend of the pass.
--
SET timezone = 'UTC';
CREATE TABLE et_clicks (user_id text, window_start timestamptz, window_end timestamptz,
                        clicks bigint, id bigserial, noted text DEFAULT 'by default');
CREATE TABLE et_avg (k int, ws timestamptz, we timestamptz, r numeric);
CREATE TABLE et_list (k text, ws timestamptz, we timestamptz, r int[]);
CREATE TABLE et_wrong (k text, ws timestamptz, we timestamptz, r int);
CREATE TABLE et_short (k text, ws timestamptz);
CREATE VIEW et_view AS SELECT * FROM et_clicks;
CREATE TABLE et_parted (k text, ws timestamptz, we timestamptz, r bigint) PARTITION BY LIST (k);
CREATE FUNCTION et_emit(k text, ws timestamptz, we timestamptz, r bigint) RETURNS void
    LANGUAGE sql AS $$ SELECT $$;

-- What an emit table must be: a plain table whose first four columns are
-- (key, timestamptz, timestamptz, result); an emit function or an emit
-- table, not both, not neither; window states only
SELECT expect_error($$SELECT state.create_state('et_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum')$$);
SELECT expect_error($$SELECT state.create_state('et_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum', emit => 'et_emit(text,timestamptz,timestamptz,bigint)', emit_table => 'et_clicks')$$);
SELECT expect_error($$SELECT state.create_state('et_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum', emit_table => 'et_wrong')$$);
SELECT expect_error($$SELECT state.create_state('et_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum', emit_table => 'et_short')$$);
SELECT expect_error($$SELECT state.create_state('et_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum', emit_table => 'et_view')$$);
SELECT expect_error($$SELECT state.create_state('et_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum', emit_table => 'et_parted')$$);
SELECT expect_error($$SELECT state.create_state('et_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum', emit_table => 'no_such_table')$$);
SELECT expect_error($$SELECT state.create_state('et_x', 'value', 'text', 'bigint', emit_table => 'et_clicks')$$);
SELECT count(*) FROM state.states WHERE name = 'et_x';

-- Clicks per user per minute: each fired window is a row; the columns
-- after the first four take their defaults
SELECT state.create_state('et_c', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute',
                          reducer => 'sum', emit_table => 'et_clicks', out_of_orderness => '0');
SELECT state.window_add('et_c', 'alice', '2026-01-01 00:00:10+00', 1::bigint);
SELECT state.window_add('et_c', 'alice', '2026-01-01 00:00:20+00', 1::bigint);
SELECT state.window_add('et_c', 'bob', '2026-01-01 00:00:30+00', 1::bigint);
SELECT state.window_add('et_c', 'alice', '2026-01-01 00:01:30+00', 1::bigint);
SELECT wait_for($$SELECT count(*) = 2 FROM et_clicks$$);
SELECT user_id, window_start, window_end, clicks, noted FROM et_clicks ORDER BY user_id;
SELECT count(DISTINCT id) FROM et_clicks;
SELECT state.advance_watermark('et_c', 'infinity');
SELECT wait_for($$SELECT count(*) = 3 FROM et_clicks$$);
SELECT user_id, window_start, clicks FROM et_clicks ORDER BY window_start, user_id;

-- Triggers on the table run as for an INSERT, as the state's owner; an
-- AFTER trigger can feed the next stage
CREATE TABLE et_seen (user_id text, clicks bigint, by_role text);
CREATE FUNCTION et_before() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.noted := 'by trigger'; RETURN NEW; END $$;
CREATE FUNCTION et_after() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO et_seen VALUES (NEW.user_id, NEW.clicks, current_user); RETURN NULL; END $$;
CREATE TRIGGER et_b BEFORE INSERT ON et_clicks FOR EACH ROW EXECUTE FUNCTION et_before();
CREATE TRIGGER et_a AFTER INSERT ON et_clicks FOR EACH ROW EXECUTE FUNCTION et_after();
SELECT state.create_state('et_c2', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute',
                          reducer => 'sum', emit_table => 'et_clicks');
SELECT state.window_add('et_c2', 'carol', '2026-01-01 00:00:10+00', 5::bigint);
SELECT state.advance_watermark('et_c2', '2026-01-01 00:01:00+00');
SELECT wait_for($$SELECT count(*) = 1 FROM et_seen$$);
SELECT user_id, clicks, noted FROM et_clicks WHERE user_id = 'carol';
SELECT user_id, clicks, by_role = current_user AS as_owner FROM et_seen;

-- Many windows fired together: the rows of a batch go into the open
-- table one by one, each with its defaults and its triggers.  One row's
-- BEFORE trigger fails the first time (the sequence is not rolled back):
-- the batch is undone and each key fires again alone; every window is
-- then in the table once, and the AFTER trigger saw each row once.
CREATE SEQUENCE et_fail_once;
CREATE FUNCTION et_fail_first() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.user_id = 'many13' AND nextval('et_fail_once') = 1 THEN
    RAISE EXCEPTION 'the first try of many13 fails';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER et_f BEFORE INSERT ON et_clicks FOR EACH ROW EXECUTE FUNCTION et_fail_first();
SELECT state.create_state('et_many', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute',
                          reducer => 'sum', emit_table => 'et_clicks');
SELECT count(state.window_add('et_many', 'many' || i, '2026-01-01 00:00:10+00', i::bigint))
  FROM generate_series(1, 200) i;
SELECT state.advance_watermark('et_many', '2026-01-01 00:01:00+00');
SELECT wait_for($$SELECT count(*) = 200 FROM et_clicks WHERE user_id LIKE 'many%'$$);
SELECT count(*) AS rows, count(DISTINCT user_id) AS keys, count(DISTINCT id) AS ids,
       sum(clicks) AS clicks, count(*) FILTER (WHERE noted = 'by trigger') AS by_trigger
  FROM et_clicks WHERE user_id LIKE 'many%';
SELECT count(*) AS seen, count(DISTINCT user_id) AS seen_keys FROM et_seen WHERE user_id LIKE 'many%';
SELECT last_value > 1 AS failed_then_retried FROM et_fail_once;
SELECT count(*) FROM state.windows('et_many', NULL::text);
DROP TRIGGER et_f ON et_clicks;

-- A row's trigger that changes the table's definition: the rows after it
-- see the table as it is then, as a new INSERT would (here a trigger that
-- drops itself at its first row runs once, not once per row of the batch)
CREATE TABLE et_drop (k text, ws timestamptz, we timestamptz, n bigint);
CREATE TABLE et_drop_log (k text);
CREATE FUNCTION et_drop_once() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO et_drop_log VALUES (NEW.k);
  IF EXISTS (SELECT FROM pg_trigger WHERE tgname = 'et_once' AND tgrelid = 'et_drop'::regclass) THEN
    DROP TRIGGER et_once ON et_drop;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER et_once BEFORE INSERT ON et_drop FOR EACH ROW EXECUTE FUNCTION et_drop_once();
SELECT state.create_state('et_d', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute',
                          reducer => 'sum', emit_table => 'et_drop');
SELECT count(state.window_add('et_d', 'd' || i, '2026-01-01 00:00:10+00', 1::bigint))
  FROM generate_series(1, 20) i;
SELECT state.advance_watermark('et_d', '2026-01-01 00:01:00+00');
-- (waited for by the windows leaving their keys: a wait reading et_drop
-- would hold a lock that DROP TRIGGER waits for)
SELECT wait_for($$SELECT count(*) = 0 FROM state.windows('et_d', NULL::text)$$);
SELECT count(*) AS rows FROM et_drop;
SELECT count(*) AS trigger_ran FROM et_drop_log;
SELECT count(*) AS triggers_left FROM pg_trigger WHERE tgrelid = 'et_drop'::regclass;

-- Aggregates and lists: the result's type is the fourth column's
SELECT state.create_state('et_a', 'window', 'int', 'numeric', assigner => 'tumbling', size => '1 minute',
                          aggregate => 'avg(numeric)', emit_table => 'et_avg');
SELECT state.window_add('et_a', 1, '2026-01-01 00:00:10+00', 1.0);
SELECT state.window_add('et_a', 1, '2026-01-01 00:00:20+00', 2.0);
SELECT state.create_state('et_l', 'window', 'text', 'int', assigner => 'tumbling', size => '1 minute',
                          collect => 'list', emit_table => 'et_list');
SELECT state.window_add('et_l', 'x', '2026-01-01 00:00:10+00', 3);
SELECT state.window_add('et_l', 'x', '2026-01-01 00:00:20+00', 4);
SELECT state.advance_watermark('et_a', 'infinity'), state.advance_watermark('et_l', 'infinity');
SELECT wait_for($$SELECT count(*) = 1 FROM et_avg$$), wait_for($$SELECT count(*) = 1 FROM et_list$$);
SELECT k, ws, we, round(r, 2) FROM et_avg;
SELECT k, ws, (SELECT array_agg(x ORDER BY x) FROM unnest(r) x) FROM et_list;

-- A table the owner may no longer insert into, or whose columns changed:
-- the window waits, its failure is listed, nothing is lost
CREATE ROLE regress_et_owner;
GRANT USAGE ON SCHEMA state TO regress_et_owner;
CREATE TABLE et_owned (k text, ws timestamptz, we timestamptz, r bigint);
GRANT INSERT ON et_owned TO regress_et_owner;
SET ROLE regress_et_owner;
SELECT state.create_state('et_o', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute',
                          reducer => 'sum', emit_table => 'et_owned');
SELECT state.window_add('et_o', 'o', '2026-01-01 00:00:10+00', 7::bigint);
RESET ROLE;
REVOKE INSERT ON et_owned FROM regress_et_owner;
SET ROLE regress_et_owner;
SELECT state.advance_watermark('et_o', '2026-01-01 00:01:00+00');
RESET ROLE;
SELECT wait_for($$SELECT count(*) > 0 FROM state.timer_status WHERE name = 'et_o' AND problem IS NOT NULL$$);
SELECT problem FROM state.timer_status WHERE name = 'et_o';
SELECT count(*) FROM et_owned;
GRANT INSERT ON et_owned TO regress_et_owner;
SELECT wait_for($$SELECT count(*) = 1 FROM et_owned$$);
SELECT k, r FROM et_owned;
-- the owner without INSERT at create: 42501
REVOKE INSERT ON et_owned FROM regress_et_owner;
SET ROLE regress_et_owner;
SELECT expect_error($$SELECT state.create_state('et_o2', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute', reducer => 'sum', emit_table => 'et_owned')$$);
SELECT state.drop_state('et_o');
RESET ROLE;

-- A snapshot names the emit table by its name and keeps the watermark's
-- options: restored, the state follows its data and emits into the table
SELECT state.create_state('et_snap', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute',
                          reducer => 'sum', emit_table => 'et_clicks', out_of_orderness => '10 seconds',
                          idle_timeout => '1 hour');
SELECT state.window_add('et_snap', 'dora', '2026-01-01 00:00:10+00', 3::bigint);
SELECT state.wait_snapshot(state.snapshot(current_setting('data_directory') || '/et_snap'));
SELECT state.drop_state('et_snap');
SELECT state.restore(current_setting('data_directory') || '/et_snap') > 0 AS restored;
SELECT state.window_add('et_snap', 'dora', '2026-01-01 00:01:30+00', 1::bigint);
SELECT wait_for($$SELECT count(*) = 1 FROM et_clicks WHERE user_id = 'dora'$$);
SELECT user_id, window_start, clicks FROM et_clicks WHERE user_id = 'dora';
SELECT state.watermark('et_snap') = '2026-01-01 00:01:20+00' AS followed_the_data;

-- Cleanup
SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'et\_%';
DROP VIEW et_view;
DROP TABLE et_drop, et_drop_log;
DROP TABLE et_clicks, et_avg, et_list, et_wrong, et_short, et_parted, et_seen, et_owned;
DROP FUNCTION et_emit(text, timestamptz, timestamptz, bigint);
DROP FUNCTION et_before();
DROP FUNCTION et_after();
DROP FUNCTION et_fail_first();
DROP FUNCTION et_drop_once();
DROP SEQUENCE et_fail_once;
REVOKE USAGE ON SCHEMA state FROM regress_et_owner;
DROP ROLE regress_et_owner;
