--
-- streaming_edges: edges of watermarks from the data and late functions.
-- Runs with the default backend of the pass (memory, rocksdb, lmdb).
--
SET timezone = 'UTC';

-- A late function runs as the state's owner in the caller's session, but
-- not under the caller's search_path: a writer whose search_path puts a
-- function of its own before pg_catalog, or whose temporary table has the
-- name of the owner's, does not reach the owner's code through a name it
-- leaves unqualified
CREATE ROLE regress_sp_owner;
CREATE ROLE regress_sp_writer;
GRANT USAGE ON SCHEMA state TO regress_sp_owner, regress_sp_writer;
CREATE SCHEMA regress_sp_w AUTHORIZATION regress_sp_writer;
CREATE TABLE sp_secret (s text);
INSERT INTO sp_secret VALUES ('the owner''s');
CREATE TABLE sp_late (k text, by_role text);
ALTER TABLE sp_secret OWNER TO regress_sp_owner;
ALTER TABLE sp_late OWNER TO regress_sp_owner;
CREATE FUNCTION sp_emit(k text, ws timestamptz, we timestamptz, r bigint) RETURNS void
    LANGUAGE sql AS $$ SELECT $$;
CREATE FUNCTION sp_late_fn(k text, t timestamptz, v bigint) RETURNS void
    LANGUAGE sql AS $$ INSERT INTO sp_late VALUES (lower(k), current_user) $$;
ALTER FUNCTION sp_emit(text, timestamptz, timestamptz, bigint) OWNER TO regress_sp_owner;
ALTER FUNCTION sp_late_fn(text, timestamptz, bigint) OWNER TO regress_sp_owner;
SET ROLE regress_sp_owner;
SELECT state.create_state('sp_w', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute',
                          reducer => 'sum', emit => 'sp_emit(text,timestamptz,timestamptz,bigint)',
                          out_of_orderness => '0', late => 'sp_late_fn(text,timestamptz,bigint)');
SELECT state.grant_access('sp_w', 'regress_sp_writer', p) FROM (VALUES ('read'), ('write')) AS privs (p);
SELECT state.window_add('sp_w', 'o', '2026-01-01 00:05:00+00', 1::bigint);
RESET ROLE;
SET ROLE regress_sp_writer;
CREATE TABLE regress_sp_w.loot (who text, s text);
GRANT INSERT ON regress_sp_w.loot TO PUBLIC;
CREATE FUNCTION regress_sp_w.lower(text) RETURNS text LANGUAGE sql
    AS $$ INSERT INTO regress_sp_w.loot SELECT current_user, s FROM public.sp_secret; SELECT 'shadowed' $$;
GRANT USAGE ON SCHEMA regress_sp_w TO PUBLIC;
CREATE TEMP TABLE sp_late (k text, by_role text);
GRANT INSERT ON sp_late TO PUBLIC;
SET search_path = regress_sp_w, pg_catalog, public;
SELECT state.window_add('sp_w', 'LATE', '2026-01-01 00:00:30+00', 2::bigint);
SELECT current_setting('search_path') AS writer_path_kept;
SELECT count(*) AS looted FROM regress_sp_w.loot;
SELECT count(*) AS in_writer_temp_table FROM pg_temp.sp_late;
DROP TABLE pg_temp.sp_late;
RESET search_path;
RESET ROLE;
SELECT k, by_role FROM public.sp_late;
-- the owner's own search_path, set on the function, still applies
ALTER FUNCTION sp_late_fn(text, timestamptz, bigint) SET search_path = regress_sp_w, pg_catalog, public;
GRANT EXECUTE ON FUNCTION regress_sp_w.lower(text) TO regress_sp_owner;
SET ROLE regress_sp_writer;
SELECT state.window_add('sp_w', 'LATE2', '2026-01-01 00:00:40+00', 3::bigint);
RESET ROLE;
SELECT k, by_role FROM public.sp_late ORDER BY k;
SELECT who FROM regress_sp_w.loot;
SET ROLE regress_sp_owner;
SELECT state.drop_state('sp_w');
RESET ROLE;
DROP SCHEMA regress_sp_w CASCADE;
DROP TABLE sp_secret, sp_late;
DROP FUNCTION sp_emit(text, timestamptz, timestamptz, bigint);
DROP FUNCTION sp_late_fn(text, timestamptz, bigint);
REVOKE USAGE ON SCHEMA state FROM regress_sp_owner, regress_sp_writer;
DROP ROLE regress_sp_owner;
DROP ROLE regress_sp_writer;

-- A watermark from the data stays within timestamptz's range: an event
-- time at the start of the range less a century, and an idle stream's last
-- event time at its end plus the clock's time since, are shown, not
-- 'timestamp out of range' for every reader of state.timer_status
CREATE FUNCTION edge_emit(k text, ws timestamptz, we timestamptz, r bigint) RETURNS void
    LANGUAGE sql AS $$ SELECT $$;
SELECT state.create_state('edge_low', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute',
                          reducer => 'sum', emit => 'edge_emit(text,timestamptz,timestamptz,bigint)',
                          out_of_orderness => '36500 days');
SELECT state.window_add('edge_low', 'a', '4713-11-24 00:00:00+00 BC', 1::bigint);
SELECT state.watermark('edge_low');
SELECT name, watermark FROM state.timer_status WHERE name = 'edge_low';
SELECT state.create_state('edge_high', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 minute',
                          reducer => 'sum', emit => 'edge_emit(text,timestamptz,timestamptz,bigint)',
                          out_of_orderness => '0', idle_timeout => '1 second');
SELECT state.window_add('edge_high', 'a', '294276-12-31 23:59:59.5+00', 1::bigint);
SELECT wait_for($$SELECT state.watermark('edge_high') = '294276-12-31 23:59:59.999999+00'$$);
SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'edge\_%';
DROP FUNCTION edge_emit(text, timestamptz, timestamptz, bigint);
