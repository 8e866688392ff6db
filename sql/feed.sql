--
-- feed: state.feed, a trigger function that folds the rows an INSERT adds
-- to a table into a keyed state, in the inserting transaction.  Runs with
-- the default backend of the pass (memory, rocksdb, lmdb).
--
SET timezone = 'UTC';

-- Every keyed kind, fed by an AFTER INSERT statement trigger with a
-- transition table: the state holds what the matching function would.
CREATE TABLE clicks (user_id text, ts timestamptz, page text, n bigint);
SELECT state.create_state('fd_value', 'value', 'text', 'bigint');
SELECT state.create_state('fd_list', 'list', 'text', 'bigint');
SELECT state.create_state('fd_map', 'map', 'text', 'bigint', map_key_type => 'text');
SELECT state.create_state('fd_sum', 'reducing', 'text', 'bigint', reducer => 'sum');
SELECT state.create_state('fd_avg', 'aggregating', 'text', 'bigint', aggregate => 'avg(bigint)');
CREATE FUNCTION fd_emit(k text, ws timestamptz, we timestamptz, r bigint) RETURNS void
    LANGUAGE sql AS $$ SELECT 1 $$;
CREATE FUNCTION fd_on_timer(k text, at timestamptz) RETURNS void LANGUAGE sql AS $$ SELECT 1 $$;
SELECT state.create_state('fd_win', 'window', 'text', 'bigint', assigner => 'tumbling',
                          size => '1 minute', reducer => 'sum',
                          emit => 'fd_emit(text,timestamptz,timestamptz,bigint)', time_domain => 'event');
SELECT state.create_state('fd_tm', 'timers', 'text', handler => 'fd_on_timer(text,timestamptz)',
                          time_domain => 'event');
SELECT format('CREATE TRIGGER %I AFTER INSERT ON clicks REFERENCING NEW TABLE AS new_rows '
              'FOR EACH STATEMENT EXECUTE FUNCTION state.feed(%s)', 'f_' || substr(s, 4), args)
  FROM (VALUES ('fd_value', $$'fd_value', 'user_id', 'n'$$),
               ('fd_list', $$'fd_list', 'user_id', 'n'$$),
               ('fd_map', $$'fd_map', 'user_id', 'page', 'n'$$),
               ('fd_sum', $$'fd_sum', 'user_id', 'n'$$),
               ('fd_avg', $$'fd_avg', 'user_id', 'n'$$),
               ('fd_win', $$'fd_win', 'user_id', 'ts', 'n'$$),
               ('fd_tm', $$'fd_tm', 'user_id', 'ts'$$)) t(s, args) \gexec
SELECT tgname, pg_get_triggerdef(oid) LIKE '%REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT%' AS statement_trigger
  FROM pg_trigger WHERE tgrelid = 'clicks'::regclass ORDER BY tgname;

-- A multi-row INSERT
INSERT INTO clicks VALUES
    ('alice', '2026-01-01 00:00:10+00', 'home', 1),
    ('alice', '2026-01-01 00:00:20+00', 'cart', 2),
    ('bob', '2026-01-01 00:01:05+00', 'home', 5);
-- INSERT ... SELECT
INSERT INTO clicks SELECT 'carol', '2026-01-01 00:00:00+00'::timestamptz + i * interval '30 s', 'p' || i, i
  FROM generate_series(1, 4) i;
-- COPY fires statement triggers with their transition tables too
COPY clicks FROM stdin;
alice	2026-01-01 00:01:30+00	home	10
\.

-- value: the last row of the key wins; list: every value, in order
SELECT k, state.value_get('fd_value', k, 0::bigint) AS value,
       state.list_get('fd_list', k, NULL::bigint[]) AS list
  FROM unnest(ARRAY['alice', 'bob', 'carol']) k ORDER BY k;
-- map: (user, page) -> the last n; reducing: sums; aggregating: averages
SELECT key, map_key, value FROM state.keys('fd_map', NULL::text) key,
       state.map_entries('fd_map', key, NULL::text, NULL::bigint) ORDER BY 1, 2;
SELECT k, state.value_get('fd_sum', k, 0::bigint) AS sum,
       round(state.value_get('fd_avg', k, 0::numeric), 2) AS avg
  FROM unnest(ARRAY['alice', 'bob', 'carol']) k ORDER BY k;
-- window: per key and minute, the sum of n, by the ts column (event time)
SELECT key, window_start, state.window_get('fd_win', key, window_start, NULL::bigint) AS sum
  FROM state.windows('fd_win', NULL::text) ORDER BY 1, 2;
-- timers: one per key and instant
SELECT key, at FROM state.timers('fd_tm', NULL::text) ORDER BY 1, 2;
-- state.stats counts each fed row as a write
SELECT name, writes FROM state.stats WHERE name IN ('fd_sum', 'fd_win') ORDER BY name;

-- An INSERT of no rows fires the statement triggers with an empty table
INSERT INTO clicks SELECT * FROM clicks WHERE false;
SELECT state.value_get('fd_sum', 'alice', 0::bigint) AS alice_sum_unchanged;

-- Row triggers: AFTER ... FOR EACH ROW
CREATE TABLE row_feed (k int, v numeric);
SELECT state.create_state('fd_row_after', 'reducing', 'int', 'numeric', reducer => 'max');
SELECT state.create_state('fd_row_before', 'list', 'int', 'numeric');
CREATE TRIGGER f_after AFTER INSERT ON row_feed
    FOR EACH ROW EXECUTE FUNCTION state.feed('fd_row_after', 'k', 'v');
CREATE TRIGGER f_before AFTER INSERT ON row_feed
    FOR EACH ROW EXECUTE FUNCTION state.feed('fd_row_before', 'k', 'v');
INSERT INTO row_feed VALUES (1, 1.5), (1, 0.5), (2, 7);
INSERT INTO row_feed SELECT 1, 9.25;
SELECT * FROM row_feed ORDER BY k, v;
SELECT k, state.value_get('fd_row_after', k, 0::numeric) AS max,
       state.list_get('fd_row_before', k, NULL::numeric[]) AS list
  FROM unnest(ARRAY[1, 2]) k ORDER BY k;

-- Columns of another type than the state's are converted as the functions
-- convert arguments: an implicit cast (int to bigint, timestamp to
-- timestamptz), and text read with the declared type's input function
CREATE TABLE typed (k varchar, ts timestamp, v int, t text);
SELECT state.create_state('fd_cast', 'reducing', 'int', 'bigint', reducer => 'sum');
CREATE TRIGGER f_cast AFTER INSERT ON typed REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION state.feed('fd_cast', 't', 'v');
CREATE TRIGGER f_cast_win AFTER INSERT ON typed REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION state.feed('fd_win', 'k', 'ts', 'v');
INSERT INTO typed VALUES ('dave', '2026-01-01 00:05:00', 3, '42'), ('dave', '2026-01-01 00:05:30', 4, '42');
SELECT state.value_get('fd_cast', 42, 0::bigint) AS sum_by_text_key;
SELECT window_start, state.window_get('fd_win', key, window_start, NULL::bigint) AS sum
  FROM state.windows('fd_win', NULL::text) WHERE key = 'dave';
-- text that the declared type's input function refuses: its error
SELECT expect_error($$INSERT INTO typed VALUES ('dave', '2026-01-01', 1, 'x')$$);
DROP TABLE typed;

-- NULLs behave as the matching function's arguments do: a NULL key is an
-- error (22004), a NULL value clears a value state's key, is stored as
-- NULL in a map, refused by a list or a reducer (22004), skipped by an
-- aggregate; a NULL event time or timer instant is an error (22004)
SELECT expect_error($$INSERT INTO clicks VALUES (NULL, '2026-01-01', 'home', 1)$$);
SELECT expect_error($$INSERT INTO clicks VALUES ('alice', NULL, 'home', 1)$$);
ALTER TABLE clicks DISABLE TRIGGER f_list;
ALTER TABLE clicks DISABLE TRIGGER f_sum;
ALTER TABLE clicks DISABLE TRIGGER f_win;
ALTER TABLE clicks DISABLE TRIGGER f_tm;
INSERT INTO clicks VALUES ('bob', '2026-01-01', 'home', NULL);
SELECT state.value_get('fd_value', 'bob', -1::bigint) AS bob_value_cleared,
       state.map_get('fd_map', 'bob', 'home', -1::bigint) AS bob_home_null,
       state.map_contains('fd_map', 'bob', 'home') AS bob_home_kept,
       state.value_get('fd_avg', 'bob', 0::numeric) AS bob_avg_unchanged;
ALTER TABLE clicks ENABLE TRIGGER f_list;
SELECT expect_error($$INSERT INTO clicks VALUES ('bob', '2026-01-01', 'home', NULL)$$);
ALTER TABLE clicks DISABLE TRIGGER f_list;
ALTER TABLE clicks ENABLE TRIGGER f_sum;
SELECT expect_error($$INSERT INTO clicks VALUES ('bob', '2026-01-01', 'home', NULL)$$);
ALTER TABLE clicks ENABLE TRIGGER f_list;
ALTER TABLE clicks ENABLE TRIGGER f_win;
ALTER TABLE clicks ENABLE TRIGGER f_tm;

-- Transactions.  A transactional state is fed exactly once with the table:
-- a rolled-back INSERT leaves it as it was, a savepoint rolled back takes
-- its rows' folds with it.  A state that is not transactional keeps what
-- a rolled-back INSERT fed it, as it keeps what a rolled-back
-- state.reduce wrote: it is not exactly once with the table.
CREATE TABLE orders (customer text, amount bigint);
SELECT state.create_state('fd_tx', 'reducing', 'text', 'bigint', reducer => 'sum', transactional => true);
SELECT state.create_state('fd_plain', 'reducing', 'text', 'bigint', reducer => 'sum');
CREATE TRIGGER f_tx AFTER INSERT ON orders REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION state.feed('fd_tx', 'customer', 'amount');
CREATE TRIGGER f_plain AFTER INSERT ON orders REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION state.feed('fd_plain', 'customer', 'amount');
INSERT INTO orders VALUES ('ann', 10), ('ann', 5);
BEGIN;
INSERT INTO orders VALUES ('ann', 100);
SELECT state.value_get('fd_tx', 'ann', 0::bigint) AS tx_sees_own_rows;
ROLLBACK;
SELECT (SELECT sum(amount) FROM orders) AS table_sum,
       state.value_get('fd_tx', 'ann', 0::bigint) AS tx_sum,
       state.value_get('fd_plain', 'ann', 0::bigint) AS plain_sum_keeps_rolled_back;
BEGIN;
INSERT INTO orders VALUES ('ann', 1);
SAVEPOINT s;
INSERT INTO orders VALUES ('ann', 1000);
ROLLBACK TO SAVEPOINT s;
INSERT INTO orders VALUES ('ann', 2);
COMMIT;
SELECT (SELECT sum(amount) FROM orders) AS table_sum,
       state.value_get('fd_tx', 'ann', 0::bigint) AS tx_sum_equals_table;
-- a row the table refuses rolls the statement back, and the transactional
-- state with it
CREATE TABLE checked (k text, v bigint CHECK (v > 0));
CREATE TRIGGER f_checked AFTER INSERT ON checked
    FOR EACH ROW EXECUTE FUNCTION state.feed('fd_tx', 'k', 'v');
SELECT expect_error($$INSERT INTO checked VALUES ('ann', 7), ('ann', -1)$$);
SELECT state.value_get('fd_tx', 'ann', 0::bigint) AS tx_sum_unchanged;
DROP TABLE checked;
-- rows ON CONFLICT does not insert, or that update the row they meet, are
-- not fed: the state folds exactly the rows the table took
CREATE TABLE uniq (k text PRIMARY KEY, v bigint);
CREATE TRIGGER f_uniq AFTER INSERT ON uniq REFERENCING NEW TABLE AS n
    FOR EACH STATEMENT EXECUTE FUNCTION state.feed('fd_tx', 'k', 'v');
INSERT INTO uniq VALUES ('bo', 1);
INSERT INTO uniq VALUES ('bo', 10) ON CONFLICT DO NOTHING;
INSERT INTO uniq VALUES ('bo', 100) ON CONFLICT (k) DO UPDATE SET v = uniq.v;
SELECT (SELECT sum(v) FROM uniq) AS table_sum, state.value_get('fd_tx', 'bo', 0::bigint) AS fed_sum;
DROP TABLE uniq;

-- Errors, found at the first firing (CREATE TRIGGER cannot check its
-- arguments): each with its SQLSTATE.  feed_error creates trigger b on
-- table bad with state.feed(args), runs an INSERT and drops the trigger.
CREATE TABLE bad (k text, v bigint, ts timestamptz, j jsonb, d date);
CREATE FUNCTION feed_error(args text,
                           how text DEFAULT 'AFTER INSERT ON bad REFERENCING NEW TABLE AS n FOR EACH STATEMENT',
                           stmt text DEFAULT $$INSERT INTO bad (k, v) VALUES ('a', 1)$$)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE result text;
BEGIN
    EXECUTE format('CREATE TRIGGER b %s EXECUTE FUNCTION state.feed(%s)', how, args);
    result := expect_error(stmt);
    DROP TRIGGER b ON bad;
    RETURN result;
END $$;
-- a column the table lacks: 42703, naming the column and the table
SELECT feed_error($$'fd_sum', 'k', 'nope'$$);
-- a column of a type the state does not take: 42804, naming the column,
-- its type and what the state wants; a time column of text has no
-- implicit cast to timestamptz
SELECT feed_error($$'fd_sum', 'k', 'j'$$);
SELECT feed_error($$'fd_win', 'k', 'j', 'v'$$);
SELECT feed_error($$'fd_tm', 'k', 'k'$$);
-- a date casts to timestamptz implicitly
SELECT feed_error($$'fd_tm', 'k', 'd'$$, stmt => $$INSERT INTO bad (k, d) VALUES ('erin', '2026-02-01')$$);
SELECT key, at FROM state.timers('fd_tm', NULL::text) WHERE key = 'erin';
-- the wrong number of arguments for the state's kind: 22023, with a hint
SELECT feed_error($$'fd_map', 'k', 'v'$$);
SELECT feed_error($$'fd_sum'$$);
-- an aggregate of two arguments cannot be fed a value alone
SELECT state.create_state('fd_agg2', 'aggregating', 'text', 'float8', aggregate => 'corr(float8,float8)');
SELECT feed_error($$'fd_agg2', 'k', 'v'$$);
-- an unknown state: 42704; a state without keys: 42809
SELECT feed_error($$'no_such_state', 'k', 'v'$$);
SELECT state.create_state('fd_op', 'operator_list', value_type => 'bigint');
SELECT feed_error($$'fd_op', 'k', 'v'$$);
-- a statement trigger without a transition table, an event other than
-- INSERT alone, INSTEAD OF: 39P01
SELECT feed_error($$'fd_sum', 'k', 'v'$$, 'AFTER INSERT ON bad FOR EACH STATEMENT');
SELECT feed_error($$'fd_sum', 'k', 'v'$$, 'BEFORE INSERT ON bad FOR EACH STATEMENT');
-- before the row is stored, what becomes of it is not known (a later
-- BEFORE trigger, ON CONFLICT, a constraint): a BEFORE row trigger is refused
SELECT feed_error($$'fd_sum', 'k', 'v'$$, 'BEFORE INSERT ON bad FOR EACH ROW');
SELECT feed_error($$'fd_sum', 'k', 'v'$$, 'AFTER INSERT OR UPDATE ON bad FOR EACH ROW');
SELECT feed_error($$'fd_sum', 'k', 'v'$$, 'AFTER DELETE ON bad FOR EACH ROW', 'DELETE FROM bad');
CREATE VIEW bad_view AS SELECT * FROM bad;
CREATE TRIGGER b INSTEAD OF INSERT ON bad_view
    FOR EACH ROW EXECUTE FUNCTION state.feed('fd_sum', 'k', 'v');
SELECT expect_error($$INSERT INTO bad_view (k, v) VALUES ('a', 1)$$);
DROP VIEW bad_view;
-- none of these inserted a row or fed one
SELECT count(*) AS rows_of_bad FROM bad;
SELECT state.value_get('fd_sum', 'a', 0::bigint) AS nothing_fed_by_failed_statements;
-- the hint shows the CREATE TRIGGER that works
DO $$
DECLARE h text;
BEGIN
    EXECUTE 'CREATE TRIGGER b AFTER INSERT ON bad FOR EACH STATEMENT EXECUTE FUNCTION state.feed(''fd_sum'', ''k'', ''v'')';
    INSERT INTO bad (k, v) VALUES ('a', 1);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT;
    RAISE NOTICE 'hint: %', h;
END $$;
-- called outside a trigger
SELECT expect_error($$SELECT state.feed()$$);
DROP TABLE bad;
DROP FUNCTION feed_error(text, text, text);

-- Privileges: the trigger runs as the user whose INSERT fired it, who
-- needs on the state what the matching function needs (reduce: read and
-- write); otherwise 42501, and neither the table nor the state changes
CREATE ROLE regress_feed_owner;
CREATE ROLE regress_feed_other;
GRANT CREATE, USAGE ON SCHEMA public TO regress_feed_owner, regress_feed_other;
SET ROLE regress_feed_owner;
SELECT state.create_state('fd_priv', 'reducing', 'text', 'bigint', reducer => 'sum');
SELECT state.reduce('fd_priv', 'x', 1::bigint);
RESET ROLE;
SET ROLE regress_feed_other;
CREATE TABLE others (k text, v bigint);
CREATE TRIGGER f_others AFTER INSERT ON others REFERENCING NEW TABLE AS n
    FOR EACH STATEMENT EXECUTE FUNCTION state.feed('fd_priv', 'k', 'v');
SELECT expect_error($$INSERT INTO others VALUES ('x', 100)$$) AS no_access;
SET ROLE regress_feed_owner;
SELECT state.grant_access('fd_priv', 'regress_feed_other', 'write');
SET ROLE regress_feed_other;
SELECT expect_error($$INSERT INTO others VALUES ('x', 100)$$) AS write_alone;
SET ROLE regress_feed_owner;
SELECT state.grant_access('fd_priv', 'regress_feed_other', 'read');
SET ROLE regress_feed_other;
INSERT INTO others VALUES ('x', 100);
-- the refused INSERTs left no row, and fed nothing
SELECT count(*) AS rows_of_others FROM others;
SET ROLE regress_feed_owner;
SELECT state.value_get('fd_priv', 'x', 0::bigint) AS owner_sees;
RESET ROLE;
DROP TABLE others;
SELECT state.drop_state('fd_priv');
REVOKE CREATE, USAGE ON SCHEMA public FROM regress_feed_owner, regress_feed_other;
DROP ROLE regress_feed_owner;
DROP ROLE regress_feed_other;

-- A state dropped and created again between statements is found again by
-- its name at the next firing, and its columns checked again
SELECT state.drop_state('fd_cast');
SELECT state.create_state('fd_cast', 'value', 'text', 'text');
CREATE TABLE again (k text, v text);
CREATE TRIGGER f_again AFTER INSERT ON again REFERENCING NEW TABLE AS n
    FOR EACH STATEMENT EXECUTE FUNCTION state.feed('fd_cast', 'k', 'v');
INSERT INTO again VALUES ('a', 'one');
SELECT state.drop_state('fd_cast');
SELECT state.create_state('fd_cast', 'value', 'text', 'int');
SELECT expect_error($$INSERT INTO again VALUES ('a', 'two')$$);
INSERT INTO again VALUES ('a', '2');
SELECT state.value_get('fd_cast', 'a', 0) AS refed;
DROP TABLE again;

-- A window state in processing time takes no time column: a row's time is
-- the clock's
SELECT state.create_state('fd_pwin', 'window', 'text', 'bigint', assigner => 'tumbling',
                          size => '3650 days', reducer => 'sum',
                          emit => 'fd_emit(text,timestamptz,timestamptz,bigint)',
                          time_domain => 'processing');
CREATE TABLE pclicks (u text, ts timestamptz, n bigint);
CREATE TRIGGER f_pwin AFTER INSERT ON pclicks REFERENCING NEW TABLE AS n
    FOR EACH STATEMENT EXECUTE FUNCTION state.feed('fd_pwin', 'u', 'n');
INSERT INTO pclicks VALUES ('pat', NULL, 2), ('pat', NULL, 3);
SELECT key, state.window_get('fd_pwin', key, window_start, NULL::bigint) AS sum
  FROM state.windows('fd_pwin', NULL::text);
DROP TRIGGER f_pwin ON pclicks;
CREATE TRIGGER f_pwin AFTER INSERT ON pclicks REFERENCING NEW TABLE AS n
    FOR EACH STATEMENT EXECUTE FUNCTION state.feed('fd_pwin', 'u', 'ts', 'n');
SELECT expect_error($$INSERT INTO pclicks VALUES ('pat', now(), 1)$$);
DROP TABLE pclicks;

-- A statement's rows fold into a window state in batches: each key's values
-- folded together, then one merge per key, the watermark published after.
-- Each row is judged late or on time as window_add would judge it in the
-- rows' order.  Twin states, one fed by a statement trigger (in batches),
-- one by a row trigger (a row at a time), emit the same windows and hand
-- the same late values to their late functions, for every assigner and
-- kind of contents (an aggregate without a combine function is fed a row
-- at a time; a list in sessions that merge is left out: merged sessions
-- join their lists window by window, not in the order the values came).
CREATE AGGREGATE fd_total(bigint) (sfunc = int8pl, stype = bigint, initcond = '0');
CREATE AGGREGATE fd_count(bigint) (sfunc = int8inc_any, stype = bigint, initcond = '0',
                                   combinefunc = int8pl);
CREATE TABLE fd_ev (k int, t timestamptz, v bigint);
CREATE TABLE fd_late (s text, k int, t timestamptz, v bigint);
CREATE FUNCTION fd_twins(twin text, result text, opts text) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
    s text;
BEGIN
    FOREACH s IN ARRAY ARRAY['fdb_' || twin, 'fdr_' || twin] LOOP
        EXECUTE format('CREATE TABLE %I (k int, ws timestamptz, we timestamptz, r %s)', s || '_out', result);
        EXECUTE format($q$CREATE FUNCTION %I(k int, t timestamptz, v bigint) RETURNS void
            LANGUAGE sql AS $b$INSERT INTO fd_late VALUES (%L, k, t, v)$b$ $q$, s || '_late', s);
        EXECUTE format($$SELECT state.create_state(%L, 'window', 'int', 'bigint', time_domain => 'event',
            late => %L, emit_table => %L, %s)$$,
            s, s || '_late(int,timestamptz,bigint)', s || '_out', opts);
        EXECUTE format($$CREATE TRIGGER %I AFTER INSERT ON fd_ev %s EXECUTE FUNCTION state.feed(%L, 'k', 't', 'v')$$,
            s, CASE WHEN s LIKE 'fdb%' THEN 'REFERENCING NEW TABLE AS n FOR EACH STATEMENT' ELSE 'FOR EACH ROW' END, s);
    END LOOP;
END $f$;
SELECT fd_twins('tumble', 'bigint', $$assigner => 'tumbling', size => '1 minute', reducer => 'sum', out_of_orderness => '10 seconds'$$),
       fd_twins('slide', 'bigint', $$assigner => 'sliding', size => '1 minute', slide => '20 seconds', reducer => 'max', out_of_orderness => '10 seconds'$$),
       fd_twins('list', 'bigint[]', $$assigner => 'tumbling', size => '1 minute', collect => 'list', out_of_orderness => '10 seconds'$$),
       fd_twins('nocombine', 'bigint', $$assigner => 'tumbling', size => '1 minute', aggregate => 'fd_total(bigint)', out_of_orderness => '10 seconds'$$),
       -- (a session that closes while values come may be met by a later
       -- one or not, by when the timer worker fired it: none closes here)
       fd_twins('session', 'bigint', $$assigner => 'session', gap => '2 seconds', aggregate => 'fd_count(bigint)', out_of_orderness => '1 hour'$$);
-- 400 rows over 3 minutes, each up to 14 s before its place: a row whose
-- window ended 10 s before the latest row so far is late; then 50 rows
-- latest first, so that rows of the statement are late by its own first
INSERT INTO fd_ev SELECT i % 7, '2026-01-01 00:00:00+00'::timestamptz + i * interval '450 ms'
                  - ((i * 104729) % 15) * interval '1 s', i
  FROM generate_series(1, 400) i ORDER BY i;
INSERT INTO fd_ev SELECT i % 5, '2026-01-01 00:03:00+00'::timestamptz + i * interval '3 s', 1000 + i
  FROM generate_series(1, 50) i ORDER BY i DESC;
SELECT state.advance_watermark(name, 'infinity') FROM state.states WHERE name ~ '^fd[br]_' ORDER BY name;
SELECT wait_for($$SELECT sum(entries) = 0 FROM state.states WHERE name ~ '^fd[br]_'$$);
-- Each pair: windows emitted, and late values; then whether they are equal
SELECT twin,
       (SELECT count(*) FROM fd_late WHERE s = 'fdb_' || twin) AS late,
       (SELECT count(*) FROM fd_late WHERE s = 'fdr_' || twin) AS late_row_trigger,
       (SELECT count(*) FROM ((SELECT k, t, v FROM fd_late WHERE s = 'fdb_' || twin
                               EXCEPT ALL SELECT k, t, v FROM fd_late WHERE s = 'fdr_' || twin)
                              UNION ALL
                              (SELECT k, t, v FROM fd_late WHERE s = 'fdr_' || twin
                               EXCEPT ALL SELECT k, t, v FROM fd_late WHERE s = 'fdb_' || twin)) d) AS late_differ
  FROM unnest(ARRAY['tumble', 'slide', 'session', 'list', 'nocombine']) twin;
CREATE FUNCTION fd_differ(twin text, OUT windows bigint, OUT differ bigint) LANGUAGE plpgsql AS $f$
BEGIN
    EXECUTE format('SELECT (SELECT count(*) FROM %1$I), (SELECT count(*) FROM ((TABLE %1$I EXCEPT ALL TABLE %2$I)
                                                       UNION ALL (TABLE %2$I EXCEPT ALL TABLE %1$I)) d)',
                   'fdb_' || twin || '_out', 'fdr_' || twin || '_out') INTO windows, differ;
END $f$;
SELECT twin, (fd_differ(twin)).* FROM unnest(ARRAY['tumble', 'slide', 'session', 'list', 'nocombine']) twin;
-- The sums emitted plus the late values are every value fed
SELECT (SELECT sum(r) FROM fdb_tumble_out) + (SELECT coalesce(sum(v), 0) FROM fd_late WHERE s = 'fdb_tumble')
       = (SELECT sum(v) FROM fd_ev) AS all_counted;
-- An error in a row of a statement folds none of the rows before it in its
-- batch: they are checked before any is folded
SELECT state.create_state('fdb_err', 'window', 'int', 'bigint', time_domain => 'event',
                          assigner => 'tumbling', size => '1 minute', reducer => 'sum',
                          emit_table => 'fdb_tumble_out');
CREATE TABLE fd_ev2 (k int, t timestamptz, v bigint);
CREATE TRIGGER fdb_err AFTER INSERT ON fd_ev2 REFERENCING NEW TABLE AS n
    FOR EACH STATEMENT EXECUTE FUNCTION state.feed('fdb_err', 'k', 't', 'v');
SELECT expect_error($$INSERT INTO fd_ev2 VALUES (1, '2026-01-01 01:00:00+00', 1), (NULL, '2026-01-01 01:00:00+00', 2)$$);
SELECT count(*) AS windows_after_error FROM state.windows('fdb_err', NULL::int);
INSERT INTO fd_ev2 VALUES (1, '2026-01-01 01:00:00+00', 1), (1, '2026-01-01 01:00:01+00', 2);
SELECT state.window_get('fdb_err', 1, '2026-01-01 01:00:00+00', NULL::bigint) AS fed;
-- but a key whose windows in the batch pass 1,001 goes in early, when its
-- next window comes: its 1,001 windows are in before the error
SELECT expect_error($$INSERT INTO fd_ev2 SELECT 2, '2026-01-02 00:00:00+00'::timestamptz + i * interval '1 minute', 1
                        FROM generate_series(0, 1001) i UNION ALL SELECT NULL, '2026-01-02 00:00:00+00', 1$$);
SELECT count(*) AS windows_in_early FROM state.windows('fdb_err', NULL::int) WHERE key = 2;
SELECT state.drop_state(name) FROM state.states WHERE name ~ '^fd[br]_' ORDER BY name;
DROP TABLE fd_ev, fd_ev2, fd_late, fdb_tumble_out, fdr_tumble_out, fdb_slide_out, fdr_slide_out,
    fdb_session_out, fdr_session_out, fdb_list_out, fdr_list_out, fdb_nocombine_out, fdr_nocombine_out;
DROP FUNCTION fd_twins(text, text, text), fd_differ(text);
DROP AGGREGATE fd_total(bigint);
DROP AGGREGATE fd_count(bigint);

-- Clean up
DROP TABLE clicks, row_feed, orders;
SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'fd\_%' ORDER BY name;
DROP FUNCTION fd_emit(text, timestamptz, timestamptz, bigint);
DROP FUNCTION fd_on_timer(text, timestamptz);
