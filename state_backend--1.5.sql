/* state_backend--1.5.sql: the SQL contract of the extension (schema "state"), version 1.5. */

\echo Use "CREATE EXTENSION state_backend" to load this file. \quit

-- Refuse to install unless the library was preloaded: the state lives in
-- shared memory that only shared_preload_libraries can reserve.
CREATE FUNCTION state._require_preload() RETURNS void
	AS 'MODULE_PATHNAME', 'state_require_preload' LANGUAGE C STRICT;
SELECT state._require_preload();

/*
 * Keys, map keys and values are typed by the state, not by the signature.
 * Each free position is polymorphic ("anycompatible" or "any"), with an
 * overload that has "text" in that position, so that an untyped literal or
 * an untyped bind parameter (OID 0, as drivers send strings) is accepted and
 * read with the state's declared type's input function.  Getters take a
 * default whose type fixes the result type.  All overloads of one function
 * share one C entry point.
 */

---------------------------------------------------------------- states

CREATE FUNCTION state.create_state(
	name text,
	kind text,
	key_type regtype DEFAULT 'text',
	value_type regtype DEFAULT 'jsonb',
	backend text DEFAULT NULL,
	map_key_type regtype DEFAULT 'text',
	reducer text DEFAULT NULL,
	ttl interval DEFAULT NULL,
	logged boolean DEFAULT false,
	ttl_update text DEFAULT 'on_create_and_write',
	ttl_visibility text DEFAULT 'never_return_expired',
	aggregate regprocedure DEFAULT NULL,
	transactional boolean DEFAULT false,
	handler regprocedure DEFAULT NULL,
	time_domain text DEFAULT NULL,
	assigner text DEFAULT NULL,
	size interval DEFAULT NULL,
	slide interval DEFAULT NULL,
	gap interval DEFAULT NULL,
	collect text DEFAULT NULL,
	allowed_lateness interval DEFAULT NULL,
	emit regprocedure DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'state_create_state' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.drop_state(name text, if_exists boolean DEFAULT false)
RETURNS void AS 'MODULE_PATHNAME', 'state_drop_state' LANGUAGE C STRICT;

CREATE FUNCTION state._states(
	OUT name text, OUT kind text, OUT backend text,
	OUT key_type regtype, OUT value_type regtype, OUT map_key_type regtype,
	OUT reducer text, OUT ttl interval, OUT owner regrole,
	OUT entries bigint, OUT bytes bigint, OUT logged boolean,
	OUT ttl_update text, OUT ttl_visibility text, OUT key_groups int4range,
	OUT aggregate regprocedure, OUT transactional boolean)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'state_states' LANGUAGE C STRICT;

CREATE VIEW state.states AS SELECT * FROM state._states();

CREATE FUNCTION state._stats(
	OUT name text, OUT kind text, OUT reads bigint, OUT writes bigint, OUT misses bigint,
	OUT expired bigint, OUT entries bigint, OUT bytes bigint, OUT timers_registered bigint,
	OUT timers_fired bigint, OUT timers_failed bigint, OUT late bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'state_stats' LANGUAGE C STRICT;

CREATE VIEW state.stats AS SELECT * FROM state._stats();

CREATE FUNCTION state._worker(OUT name text, OUT value bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'state_worker' LANGUAGE C STRICT;

CREATE VIEW state.worker AS SELECT * FROM state._worker();

CREATE FUNCTION state.reset_stats(name text DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'state_reset_stats' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.clear(name text, key anycompatible)
RETURNS boolean AS 'MODULE_PATHNAME', 'state_clear' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.truncate(name text)
RETURNS bigint AS 'MODULE_PATHNAME', 'state_truncate' LANGUAGE C STRICT;

CREATE FUNCTION state.compact(name text)
RETURNS void AS 'MODULE_PATHNAME', 'state_compact' LANGUAGE C STRICT;

CREATE FUNCTION state.keys(name text, "default" anyelement)
RETURNS SETOF anyelement AS 'MODULE_PATHNAME', 'state_keys' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.keys(name text, "default" text)
RETURNS SETOF text AS 'MODULE_PATHNAME', 'state_keys' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.entries(name text, key_default anyelement, value_default anycompatible)
RETURNS TABLE(key anyelement, value anycompatible)
AS 'MODULE_PATHNAME', 'state_entries' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.key_group(name text, key anycompatible)
RETURNS integer AS 'MODULE_PATHNAME', 'state_key_group' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.key_group_range(parallelism integer, part integer)
RETURNS int4range AS 'MODULE_PATHNAME', 'state_key_group_range' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.part_for(name text, key anycompatible, parallelism integer)
RETURNS integer AS 'MODULE_PATHNAME', 'state_part_for' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.grant_access(name text, role regrole, privilege text)
RETURNS void AS 'MODULE_PATHNAME', 'state_grant_access' LANGUAGE C STRICT;
CREATE FUNCTION state.revoke_access(name text, role regrole, privilege text)
RETURNS void AS 'MODULE_PATHNAME', 'state_revoke_access' LANGUAGE C STRICT;

---------------------------------------------------------------- ValueState

CREATE FUNCTION state.value_set(name text, key anycompatible, value anyelement)
RETURNS void AS 'MODULE_PATHNAME', 'state_value_set' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.value_set(name text, key anycompatible, value text)
RETURNS void AS 'MODULE_PATHNAME', 'state_value_set' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.value_get(name text, key anycompatible, "default" anyelement)
RETURNS anyelement AS 'MODULE_PATHNAME', 'state_value_get' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.value_get(name text, key anycompatible, "default" text)
RETURNS text AS 'MODULE_PATHNAME', 'state_value_get' LANGUAGE C CALLED ON NULL INPUT;

---------------------------------------------------------------- ListState

CREATE FUNCTION state.list_add(name text, key anycompatible, value anyelement)
RETURNS void AS 'MODULE_PATHNAME', 'state_list_add' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.list_add(name text, key anycompatible, value text)
RETURNS void AS 'MODULE_PATHNAME', 'state_list_add' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.list_add_all(name text, key anycompatible, "values" anyarray)
RETURNS void AS 'MODULE_PATHNAME', 'state_list_add_all' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.list_add_all(name text, key anycompatible, "values" text)
RETURNS void AS 'MODULE_PATHNAME', 'state_list_add_all' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.list_update(name text, key anycompatible, "values" anyarray)
RETURNS void AS 'MODULE_PATHNAME', 'state_list_update' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.list_update(name text, key anycompatible, "values" text)
RETURNS void AS 'MODULE_PATHNAME', 'state_list_update' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.list_get(name text, key anycompatible, "default" anyarray)
RETURNS anyarray AS 'MODULE_PATHNAME', 'state_list_get' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.list_get(name text, key anycompatible, "default" text)
RETURNS text AS 'MODULE_PATHNAME', 'state_list_get' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.list_length(name text, key anycompatible)
RETURNS bigint AS 'MODULE_PATHNAME', 'state_list_length' LANGUAGE C CALLED ON NULL INPUT;

---------------------------------------------------------------- MapState

CREATE FUNCTION state.map_put(name text, key anycompatible, map_key "any", value "any")
RETURNS void AS 'MODULE_PATHNAME', 'state_map_put' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.map_put(name text, key anycompatible, map_key text, value "any")
RETURNS void AS 'MODULE_PATHNAME', 'state_map_put' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.map_put(name text, key anycompatible, map_key "any", value text)
RETURNS void AS 'MODULE_PATHNAME', 'state_map_put' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.map_put(name text, key anycompatible, map_key text, value text)
RETURNS void AS 'MODULE_PATHNAME', 'state_map_put' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.map_put_all(name text, key anycompatible, map_keys "any", "values" "any")
RETURNS void AS 'MODULE_PATHNAME', 'state_map_put_all' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.map_put_all(name text, key anycompatible, map_keys text, "values" "any")
RETURNS void AS 'MODULE_PATHNAME', 'state_map_put_all' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.map_put_all(name text, key anycompatible, map_keys "any", "values" text)
RETURNS void AS 'MODULE_PATHNAME', 'state_map_put_all' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.map_put_all(name text, key anycompatible, map_keys text, "values" text)
RETURNS void AS 'MODULE_PATHNAME', 'state_map_put_all' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.map_get(name text, key anycompatible, map_key "any", "default" anyelement)
RETURNS anyelement AS 'MODULE_PATHNAME', 'state_map_get' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.map_get(name text, key anycompatible, map_key text, "default" anyelement)
RETURNS anyelement AS 'MODULE_PATHNAME', 'state_map_get' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.map_get(name text, key anycompatible, map_key "any", "default" text)
RETURNS text AS 'MODULE_PATHNAME', 'state_map_get' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.map_get(name text, key anycompatible, map_key text, "default" text)
RETURNS text AS 'MODULE_PATHNAME', 'state_map_get' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.map_remove(name text, key anycompatible, map_key "any")
RETURNS boolean AS 'MODULE_PATHNAME', 'state_map_remove' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.map_remove(name text, key anycompatible, map_key text)
RETURNS boolean AS 'MODULE_PATHNAME', 'state_map_remove' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.map_contains(name text, key anycompatible, map_key "any")
RETURNS boolean AS 'MODULE_PATHNAME', 'state_map_contains' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.map_contains(name text, key anycompatible, map_key text)
RETURNS boolean AS 'MODULE_PATHNAME', 'state_map_contains' LANGUAGE C CALLED ON NULL INPUT;

-- key is "any" here: anycompatible is taken by value_default.
CREATE FUNCTION state.map_entries(name text, key "any", key_default anyelement, value_default anycompatible)
RETURNS TABLE(map_key anyelement, value anycompatible)
AS 'MODULE_PATHNAME', 'state_map_entries' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.map_entries(name text, key text, key_default anyelement, value_default anycompatible)
RETURNS TABLE(map_key anyelement, value anycompatible)
AS 'MODULE_PATHNAME', 'state_map_entries' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.map_size(name text, key anycompatible)
RETURNS bigint AS 'MODULE_PATHNAME', 'state_map_size' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.map_is_empty(name text, key anycompatible)
RETURNS boolean AS 'MODULE_PATHNAME', 'state_map_is_empty' LANGUAGE C CALLED ON NULL INPUT;

---------------------------------------------------------------- operator state

CREATE FUNCTION state.operator_add(name text, value anyelement)
RETURNS void AS 'MODULE_PATHNAME', 'state_operator_add' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.operator_add(name text, value text)
RETURNS void AS 'MODULE_PATHNAME', 'state_operator_add' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.operator_add_all(name text, "values" anyarray)
RETURNS void AS 'MODULE_PATHNAME', 'state_operator_add_all' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.operator_add_all(name text, "values" text)
RETURNS void AS 'MODULE_PATHNAME', 'state_operator_add_all' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.operator_update(name text, "values" anyarray)
RETURNS void AS 'MODULE_PATHNAME', 'state_operator_update' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.operator_update(name text, "values" text)
RETURNS void AS 'MODULE_PATHNAME', 'state_operator_update' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.operator_get(name text, "default" anyarray)
RETURNS anyarray AS 'MODULE_PATHNAME', 'state_operator_get' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.operator_get(name text, "default" text)
RETURNS text AS 'MODULE_PATHNAME', 'state_operator_get' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.broadcast_put(name text, map_key "any", value "any")
RETURNS void AS 'MODULE_PATHNAME', 'state_broadcast_put' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.broadcast_put(name text, map_key text, value "any")
RETURNS void AS 'MODULE_PATHNAME', 'state_broadcast_put' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.broadcast_put(name text, map_key "any", value text)
RETURNS void AS 'MODULE_PATHNAME', 'state_broadcast_put' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.broadcast_put(name text, map_key text, value text)
RETURNS void AS 'MODULE_PATHNAME', 'state_broadcast_put' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.broadcast_get(name text, map_key "any", "default" anyelement)
RETURNS anyelement AS 'MODULE_PATHNAME', 'state_broadcast_get' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.broadcast_get(name text, map_key text, "default" anyelement)
RETURNS anyelement AS 'MODULE_PATHNAME', 'state_broadcast_get' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.broadcast_get(name text, map_key "any", "default" text)
RETURNS text AS 'MODULE_PATHNAME', 'state_broadcast_get' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.broadcast_get(name text, map_key text, "default" text)
RETURNS text AS 'MODULE_PATHNAME', 'state_broadcast_get' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.broadcast_remove(name text, map_key "any")
RETURNS boolean AS 'MODULE_PATHNAME', 'state_broadcast_remove' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.broadcast_remove(name text, map_key text)
RETURNS boolean AS 'MODULE_PATHNAME', 'state_broadcast_remove' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.broadcast_entries(name text, key_default anyelement, value_default anycompatible)
RETURNS TABLE(map_key anyelement, value anycompatible)
AS 'MODULE_PATHNAME', 'state_broadcast_entries' LANGUAGE C CALLED ON NULL INPUT;

---------------------------------------------------------------- ReducingState

CREATE FUNCTION state.reduce(name text, key anycompatible, value anyelement)
RETURNS anyelement AS 'MODULE_PATHNAME', 'state_reduce' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.reduce(name text, key anycompatible, value text)
RETURNS text AS 'MODULE_PATHNAME', 'state_reduce' LANGUAGE C CALLED ON NULL INPUT;

---------------------------------------------------------------- AggregatingState

CREATE FUNCTION state.aggregate(name text, key anycompatible, value anyelement)
RETURNS void AS 'MODULE_PATHNAME', 'state_aggregate' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.aggregate(name text, key anycompatible, value text)
RETURNS void AS 'MODULE_PATHNAME', 'state_aggregate' LANGUAGE C CALLED ON NULL INPUT;

-- An aggregate of several arguments takes the further ones after the
-- value: typed ones as "any", untyped ones (literals, bind parameters) as
-- text, read with the types' input functions.
CREATE FUNCTION state.aggregate(name text, key anycompatible, value anyelement, VARIADIC more "any")
RETURNS void AS 'MODULE_PATHNAME', 'state_aggregate' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.aggregate(name text, key anycompatible, value text, VARIADIC more "any")
RETURNS void AS 'MODULE_PATHNAME', 'state_aggregate' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.aggregate(name text, key anycompatible, value anyelement, VARIADIC more text[])
RETURNS void AS 'MODULE_PATHNAME', 'state_aggregate_text' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.aggregate(name text, key anycompatible, value text, VARIADIC more text[])
RETURNS void AS 'MODULE_PATHNAME', 'state_aggregate_text' LANGUAGE C CALLED ON NULL INPUT;

---------------------------------------------------------------- snapshots

CREATE FUNCTION state.snapshot(path text DEFAULT NULL, format text DEFAULT 'native')
RETURNS bigint AS 'MODULE_PATHNAME', 'state_snapshot' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state._snapshots(
	OUT id bigint, OUT path text, OUT format text, OUT status text,
	OUT started_at timestamptz, OUT finished_at timestamptz,
	OUT states bigint, OUT entries bigint, OUT bytes bigint,
	OUT incremental boolean, OUT error text,
	OUT phase text, OUT key_groups_done integer, OUT key_groups_total integer)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'state_snapshots' LANGUAGE C STRICT;

CREATE VIEW state.snapshots AS SELECT * FROM state._snapshots();

CREATE FUNCTION state.wait_snapshot(id bigint, timeout interval DEFAULT NULL)
RETURNS text AS 'MODULE_PATHNAME', 'state_wait_snapshot' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.cancel_snapshot(id bigint)
RETURNS boolean AS 'MODULE_PATHNAME', 'state_cancel_snapshot' LANGUAGE C STRICT;

CREATE FUNCTION state.restore(path text, backend text DEFAULT NULL, from_database text DEFAULT NULL,
	parallelism integer DEFAULT NULL, part integer DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'state_restore' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.restore(paths text[], backend text DEFAULT NULL, from_database text DEFAULT NULL,
	parallelism integer DEFAULT NULL, part integer DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'state_restore_merge' LANGUAGE C CALLED ON NULL INPUT;

-- Reading a snapshot with SQL, without restoring it (as Flink's State
-- Processor API does).
CREATE FUNCTION state.snapshot_states(path text,
	OUT database text, OUT name text, OUT kind text, OUT backend text,
	OUT key_type text, OUT value_type text, OUT map_key_type text,
	OUT entries bigint, OUT bytes bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'state_snapshot_states' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.snapshot_entries(path text, name text, key_default anyelement,
	value_default anycompatible, from_database text DEFAULT NULL)
RETURNS TABLE(key anyelement, value anycompatible)
AS 'MODULE_PATHNAME', 'state_snapshot_entries' LANGUAGE C CALLED ON NULL INPUT;

---------------------------------------------------------------- timers

-- A timers state (kind 'timers') keeps timers per key; its handler,
-- handler(key, timestamptz), is called as the state's owner when processing
-- time (the clock) or event time (the watermark) passes a timer's instant.
CREATE FUNCTION state.timer_register(name text, key anyelement, at timestamptz)
RETURNS void AS 'MODULE_PATHNAME', 'state_timer_register' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.timer_delete(name text, key anyelement, at timestamptz)
RETURNS boolean AS 'MODULE_PATHNAME', 'state_timer_delete' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.timers(name text, key_default anyelement)
RETURNS TABLE(key anyelement, at timestamptz)
AS 'MODULE_PATHNAME', 'state_timers' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.advance_watermark(name text, ts timestamptz)
RETURNS void AS 'MODULE_PATHNAME', 'state_advance_watermark' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.watermark(name text)
RETURNS timestamptz AS 'MODULE_PATHNAME', 'state_watermark' LANGUAGE C STRICT;

CREATE FUNCTION state._timer_status(
	OUT name text, OUT time_domain text, OUT watermark timestamptz, OUT pending bigint,
	OUT next_due timestamptz, OUT retrying bigint, OUT fired_per_second float8,
	OUT lag_p99 interval, OUT problem text)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'state_timer_status' LANGUAGE C STRICT;

CREATE VIEW state.timer_status AS SELECT * FROM state._timer_status();

-- Timers whose handler failed state_backend.timer_max_retries times more,
-- kept with the error: written by the timer worker, read through the view
-- by the roles that own the states.
CREATE TABLE state._timer_failures (
	name text NOT NULL,
	state_id bigint NOT NULL,
	owner oid NOT NULL,
	key text NOT NULL,
	at timestamptz NOT NULL,
	attempts integer NOT NULL,
	error text NOT NULL,
	failed_at timestamptz NOT NULL);
REVOKE ALL ON state._timer_failures FROM PUBLIC;

CREATE VIEW state.timer_failures AS
	SELECT name, key, at, attempts, error, failed_at FROM state._timer_failures
	WHERE pg_has_role(owner, 'USAGE');

GRANT SELECT ON state.timer_status TO PUBLIC;
GRANT SELECT ON state.timer_failures TO PUBLIC;

---------------------------------------------------------------- windows

-- A window state (kind 'window') keeps, per key, its open windows and
-- their contents; emit(key, window_start, window_end, result) is called as
-- the state's owner when the watermark (event time) or the clock
-- (processing time) passes a window's end.
CREATE FUNCTION state.window_add(name text, key anycompatible, event_time timestamptz, value anyelement)
RETURNS void AS 'MODULE_PATHNAME', 'state_window_add' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.window_add(name text, key anycompatible, event_time timestamptz, value text)
RETURNS void AS 'MODULE_PATHNAME', 'state_window_add' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.window_get(name text, key anycompatible, window_start timestamptz, "default" anyelement)
RETURNS anyelement AS 'MODULE_PATHNAME', 'state_window_get' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.window_get(name text, key anycompatible, window_start timestamptz, "default" text)
RETURNS text AS 'MODULE_PATHNAME', 'state_window_get' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.windows(name text, key_default anyelement)
RETURNS TABLE(key anyelement, window_start timestamptz, window_end timestamptz, fired boolean)
AS 'MODULE_PATHNAME', 'state_windows' LANGUAGE C CALLED ON NULL INPUT;

---------------------------------------------------------------- privileges

-- Every role may use the functions; each call checks the state's owner and
-- grants.  The internal helpers are not for direct use.
REVOKE ALL ON FUNCTION state._require_preload() FROM PUBLIC;

-- Snapshots touch every database's state and the server's files, as
-- CHECKPOINT does: not for PUBLIC.  GRANT EXECUTE opens them to a role.
REVOKE ALL ON FUNCTION state.snapshot(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION state.restore(text, text, text, integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION state.restore(text[], text, text, integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION state.snapshot_states(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION state.reset_stats(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION state.snapshot_entries(text, text, anyelement, anycompatible, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION state.cancel_snapshot(bigint) FROM PUBLIC;
GRANT USAGE ON SCHEMA state TO PUBLIC;
GRANT SELECT ON state.states TO PUBLIC;
GRANT SELECT ON state.snapshots TO PUBLIC;
GRANT SELECT ON state.stats TO PUBLIC;
GRANT SELECT ON state.worker TO PUBLIC;

---------------------------------------------------------------- TTL clock

-- For tests: moves the clock of state TTL forward, for every session, until
-- the server restarts.  Superuser only.
CREATE FUNCTION state._advance_ttl_clock(by interval)
RETURNS timestamptz AS 'MODULE_PATHNAME', 'state_advance_ttl_clock' LANGUAGE C STRICT;
REVOKE ALL ON FUNCTION state._advance_ttl_clock(interval) FROM PUBLIC;
