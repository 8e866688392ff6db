/* state_backend--1.7.sql: the SQL contract of the extension (schema "state"), version 1.7. */

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
	emit regprocedure DEFAULT NULL,
	out_of_orderness interval DEFAULT NULL,
	idle_timeout interval DEFAULT NULL,
	late regprocedure DEFAULT NULL,
	emit_table regclass DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'state_create_state' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.drop_state(name text, if_exists boolean DEFAULT false)
RETURNS void AS 'MODULE_PATHNAME', 'state_drop_state' LANGUAGE C STRICT;

-- Change a state online, all or nothing: its name, key, value and map key
-- types (by an expression over key, value and map_key, or the types'
-- assignment casts), TTL, backend, logging and transactions.  Returns the
-- entries it holds.  Owner or superuser.
CREATE FUNCTION state.alter_state(name text,
	rename_to text DEFAULT NULL,
	key_type regtype DEFAULT NULL,
	key_using text DEFAULT NULL,
	value_type regtype DEFAULT NULL,
	value_using text DEFAULT NULL,
	ttl interval DEFAULT NULL,
	backend text DEFAULT NULL,
	logged boolean DEFAULT NULL,
	transactional boolean DEFAULT NULL,
	map_key_type regtype DEFAULT NULL,
	map_key_using text DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'state_alter_state' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state._states(
	OUT name text, OUT kind text, OUT backend text,
	OUT key_type regtype, OUT value_type regtype, OUT map_key_type regtype,
	OUT reducer text, OUT ttl interval, OUT owner regrole,
	OUT entries bigint, OUT bytes bigint, OUT logged boolean,
	OUT ttl_update text, OUT ttl_visibility text, OUT key_groups int4range,
	OUT aggregate regprocedure, OUT transactional boolean, OUT version integer)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'state_states' LANGUAGE C STRICT;

CREATE VIEW state.states WITH (security_barrier) AS SELECT * FROM state._states();

CREATE FUNCTION state._stats(
	OUT name text, OUT kind text, OUT reads bigint, OUT writes bigint, OUT misses bigint,
	OUT expired bigint, OUT entries bigint, OUT bytes bigint, OUT timers_registered bigint,
	OUT timers_fired bigint, OUT timers_failed bigint, OUT late bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'state_stats' LANGUAGE C STRICT;

CREATE VIEW state.stats WITH (security_barrier) AS SELECT * FROM state._stats();

CREATE FUNCTION state._worker(OUT name text, OUT value bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'state_worker' LANGUAGE C STRICT;

CREATE VIEW state.worker WITH (security_barrier) AS SELECT * FROM state._worker();

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

CREATE VIEW state.snapshots WITH (security_barrier) AS SELECT * FROM state._snapshots();

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
CREATE FUNCTION state.timer_register(name text, key anycompatible, at timestamptz)
RETURNS void AS 'MODULE_PATHNAME', 'state_timer_register' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.timer_delete(name text, key anycompatible, at timestamptz)
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

CREATE VIEW state.timer_status WITH (security_barrier) AS SELECT * FROM state._timer_status();

-- Timers whose handler failed state_backend.timer_max_retries times more,
-- kept with the error: written by the timer worker, read through the view
-- by the roles that own the states.  (Not named _timer_failures: that is
-- the name of the view's array type.)
CREATE TABLE state._failed_timers (
	name text NOT NULL,
	state_id bigint NOT NULL,
	owner oid NOT NULL,
	key text NOT NULL,
	at timestamptz NOT NULL,
	attempts integer NOT NULL,
	error text NOT NULL,
	failed_at timestamptz NOT NULL);
REVOKE ALL ON state._failed_timers FROM PUBLIC;

-- A security barrier: a caller's own conditions see only the rows this one
-- lets through (every view here that filters by privilege is one).
CREATE VIEW state.timer_failures WITH (security_barrier) AS
	SELECT name, key, at, attempts, error, failed_at FROM state._failed_timers
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

---------------------------------------------------------------- feeds

-- A trigger function that folds the rows an INSERT adds to a table into a
-- keyed state, in the inserting transaction: state.feed(state_name,
-- key_column [, time_column] [, value_column | map_key_column,
-- value_column]), as an AFTER INSERT statement trigger with REFERENCING NEW
-- TABLE, or an AFTER or BEFORE INSERT row trigger.  It checks the state as
-- the function that writes its kind does, as the user whose INSERT fired it.
CREATE FUNCTION state.feed()
RETURNS trigger AS 'MODULE_PATHNAME', 'state_feed' LANGUAGE C;

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
---------------------------------------------------------------- proxies

-- A proxy database (extensions plproxy and state_backend) sends every state
-- call to the server that holds its key, through PL/Proxy: part i of a
-- cluster of N parts holds part i of N of the key groups.
-- state.create_proxy makes, in a schema of the proxy database, functions
-- with the names, arguments and results of the state functions; each is
-- state_proxy_call (C), which calls an internal PL/Proxy function of the
-- same name with a leading underscore, its arguments as text.
CREATE TABLE state.proxies (
	cluster text PRIMARY KEY,
	schema name NOT NULL UNIQUE,
	parts text[] NOT NULL,
	version integer NOT NULL DEFAULT 1);
SELECT pg_catalog.pg_extension_config_dump('state.proxies', '');
REVOKE ALL ON state.proxies FROM PUBLIC;
GRANT SELECT (cluster, schema, version) ON state.proxies TO PUBLIC;

-- The CLUSTER of every internal PL/Proxy function (through the proxy
-- schema's _gate()): the cluster's name, in a session that holds the lock
-- of its foreign server, as a proxy call that runs does (share) and a
-- rescale (state.pause_proxy, exclusive); refused otherwise.  It takes no
-- lock: nothing of a call outlives it.
CREATE FUNCTION state._proxy_gate(cluster text)
RETURNS text AS 'MODULE_PATHNAME', 'state_proxy_gate' LANGUAGE C CALLED ON NULL INPUT;
REVOKE ALL ON FUNCTION state._proxy_gate(text) FROM PUBLIC;

-- For state.rescale_proxy: a step done (each has a fault point).
CREATE FUNCTION state._proxy_rescale_step(step text)
RETURNS void AS 'MODULE_PATHNAME', 'state_proxy_rescale_step' LANGUAGE C STRICT;
REVOKE ALL ON FUNCTION state._proxy_rescale_step(text) FROM PUBLIC;

-- For state.rescale_proxy: the journal of a rescale of a cluster of this
-- database, a file of the data directory written durably whatever the
-- transaction does (proxy/sql_proxy_journal.c); NULL when there is none.
-- While there is one, the cluster's proxy calls refuse.
CREATE FUNCTION state._proxy_journal_read(cluster text)
RETURNS text AS 'MODULE_PATHNAME', 'state_proxy_journal_read' LANGUAGE C STRICT;
REVOKE ALL ON FUNCTION state._proxy_journal_read(text) FROM PUBLIC;
CREATE FUNCTION state._proxy_journal_write(cluster text, journal text)
RETURNS void AS 'MODULE_PATHNAME', 'state_proxy_journal_write' LANGUAGE C STRICT;
REVOKE ALL ON FUNCTION state._proxy_journal_write(text, text) FROM PUBLIC;
-- Removes it now, or (at_commit) when this transaction commits with the
-- subtransaction that asks.
CREATE FUNCTION state._proxy_journal_remove(cluster text, at_commit boolean)
RETURNS void AS 'MODULE_PATHNAME', 'state_proxy_journal_remove' LANGUAGE C STRICT;
REVOKE ALL ON FUNCTION state._proxy_journal_remove(text, boolean) FROM PUBLIC;

-- On a part, for state.rescale_proxy: with true, no timer or window of this
-- database fires until a call with false in this session, or its end (the
-- batch firing now is waited for).  Not for PUBLIC.
CREATE FUNCTION state._pause_timers(pause boolean)
RETURNS void AS 'MODULE_PATHNAME', 'state_pause_timers' LANGUAGE C CALLED ON NULL INPUT;
REVOKE ALL ON FUNCTION state._pause_timers(boolean) FROM PUBLIC;

-- Until this transaction ends, no proxy call of the cluster runs: those
-- running are waited for, new ones wait.
CREATE FUNCTION state.pause_proxy(cluster text)
RETURNS void AS 'MODULE_PATHNAME', 'state_proxy_pause' LANGUAGE C CALLED ON NULL INPUT;
REVOKE ALL ON FUNCTION state.pause_proxy(text) FROM PUBLIC;

-- The functions a proxy has, by how they reach the parts: those with a key
-- go to the part that holds it, the others to every part.
CREATE FUNCTION state._proxy_functions()
RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
	SELECT ARRAY['value_get', 'value_set', 'reduce', 'aggregate', 'clear', 'key_group',
		'list_add', 'list_add_all', 'list_get', 'list_length', 'list_update',
		'map_put', 'map_put_all', 'map_get', 'map_remove', 'map_contains', 'map_entries',
		'map_size', 'map_is_empty', 'window_add', 'window_get', 'timer_register', 'timer_delete',
		'keys', 'entries', 'truncate', 'windows', 'timers', 'create_state', 'drop_state',
		'alter_state', 'grant_access', 'revoke_access', 'advance_watermark']
$$;

-- Checks a cluster's name and parts; returns the SQL/MED option of each
-- part (p0 'connection string', ...).
CREATE FUNCTION state._proxy_options(cluster text, parts text[])
RETURNS text[] LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'plproxy') THEN
		RAISE EXCEPTION 'extension "plproxy" is not installed in this database'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				HINT = 'A proxy calls its parts through PL/Proxy: CREATE EXTENSION plproxy first.';
	END IF;
	IF cluster IS NULL OR cluster !~ '^[a-z_][a-z0-9_]{0,62}$' THEN
		RAISE EXCEPTION 'invalid cluster name %', coalesce(quote_literal(cluster), 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
				DETAIL = 'A cluster name is a lower-case identifier: letters, digits and underscores.';
	END IF;
	IF parts IS NULL OR cardinality(parts) = 0 OR array_ndims(parts) <> 1
			OR array_position(parts, NULL) IS NOT NULL THEN
		RAISE EXCEPTION 'a cluster needs one or more parts, none of them NULL'
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'Give one libpq connection string per part, part 0 first.';
	END IF;
	IF cardinality(parts) > current_setting('state_backend.max_parallelism')::int THEN
		RAISE EXCEPTION 'a cluster of % parts has more parts than key groups (%)',
			cardinality(parts), current_setting('state_backend.max_parallelism')
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF EXISTS (SELECT 1 FROM unnest(parts) c WHERE c ~* '^\s*postgres(ql)?://') THEN
		RAISE EXCEPTION 'the parts of a cluster are key=value connection strings, not URIs'
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'Write host=... port=... dbname=... for each part.';
	END IF;
	IF EXISTS (SELECT 1 FROM unnest(parts) c WHERE c ~* '(^|\s)(password|options)\s*=') THEN
		RAISE EXCEPTION 'a part''s connection string must not set password or options'
			USING ERRCODE = 'invalid_parameter_value',
				DETAIL = 'Every role can read a cluster''s connection strings, and the proxy sets the options its parts need.',
				HINT = 'Keep passwords in ~/.pgpass of the proxy server''s OS user, or in a user mapping of the cluster.';
	END IF;
	IF (SELECT count(DISTINCT c) FROM unnest(parts) c) <> cardinality(parts) THEN
		RAISE EXCEPTION 'a cluster''s parts must be different servers'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- The settings that make values as text unambiguous (as the proxy's own
	-- calls set them): ISO dates, PostgreSQL intervals, exact floats.
	RETURN ARRAY(SELECT format('p%s %L', i - 1, parts[i]
			|| ' options=''-c datestyle=ISO,YMD -c intervalstyle=postgres -c extra_float_digits=3''')
		FROM generate_subscripts(parts, 1) i ORDER BY i);
END
$$;

-- Makes the proxy function of state function fn, and its internal PL/Proxy
-- function (one for the overloads that pass the same arguments as text).
CREATE FUNCTION state._proxy_function(schema name, cluster text, fn regprocedure)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	p pg_proc;
	n int;
	keyed boolean;
	iargs text;
	rargs text;
	iret text;
	sel text;
	cols text[];
	off int;
BEGIN
	SELECT * INTO STRICT p FROM pg_proc WHERE oid = fn;
	n := p.pronargs;
	keyed := 'key' = ANY (p.proargnames[1:n]);
	off := CASE WHEN keyed THEN 1 ELSE 0 END;
	SELECT string_agg(format('a%s text', i), ', ' ORDER BY i),
		   string_agg(CASE WHEN p.proargtypes[i - 1] IN ('anyelement'::regtype, 'anycompatible'::regtype,
				'anyarray'::regtype, 'anycompatiblearray'::regtype, '"any"'::regtype, 'text'::regtype)
				THEN format('$%s', i + off)
				ELSE format('$%s::%s', i + off, format_type(p.proargtypes[i - 1], NULL)) END,
				', ' ORDER BY i)
	  INTO iargs, rargs
	  FROM generate_series(1, n) i;
	IF keyed THEN
		iargs := 'part integer, ' || iargs;
	END IF;
	SELECT array_agg(p.proargnames[i] ORDER BY i) INTO cols
	  FROM generate_subscripts(p.proargmodes, 1) i WHERE p.proargmodes[i] = 't';
	IF cols IS NOT NULL THEN
		iret := format('TABLE(%s)', (SELECT string_agg(format('%I text', c), ', ') FROM unnest(cols) c));
		sel := format('SELECT %s FROM state.%I(%s) r',
			(SELECT string_agg(format('r.%1$I::text AS %1$I', c), ', ') FROM unnest(cols) c),
			p.proname, rargs);
	ELSIF p.proretset THEN
		iret := 'SETOF text';
		sel := format('SELECT r::text FROM state.%I(%s) r', p.proname, rargs);
	ELSIF p.prorettype = 'void'::regtype THEN
		iret := CASE WHEN keyed THEN 'void' ELSE 'SETOF void' END;
		sel := format('SELECT state.%I(%s)', p.proname, rargs);
	ELSE
		iret := CASE WHEN keyed THEN 'text' ELSE 'SETOF text' END;
		sel := format('SELECT state.%I(%s)::text', p.proname, rargs);
	END IF;
	EXECUTE format('CREATE OR REPLACE FUNCTION %I.%I(%s) RETURNS %s LANGUAGE plproxy AS %L',
		schema, '_' || p.proname, iargs, iret,
		format(E'CLUSTER %I._gate();\n%s;\n%s;', schema,
			CASE WHEN keyed THEN 'RUN ON part' ELSE 'RUN ON ALL' END, sel));
	EXECUTE format('CREATE FUNCTION %I.%I(%s) RETURNS %s AS %L, %L LANGUAGE C %s %s',
		schema, p.proname, pg_get_function_arguments(fn), pg_get_function_result(fn),
		'MODULE_PATHNAME', 'state_proxy_call',
		CASE p.provolatile WHEN 'i' THEN 'IMMUTABLE' WHEN 's' THEN 'STABLE' ELSE 'VOLATILE' END,
		CASE WHEN p.proisstrict THEN 'STRICT' ELSE 'CALLED ON NULL INPUT' END);
END
$fn$;

-- A proxy for a cluster of servers: its PL/Proxy cluster (a SQL/MED
-- server, part i = parts[i+1]) and, in schema, the state functions.
CREATE FUNCTION state.create_proxy(cluster text, parts text[], schema name DEFAULT 'state_proxy')
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	options text[] := state._proxy_options(cluster, parts);
	fn regprocedure;
	st text;
BEGIN
	IF schema IS NULL THEN
		RAISE EXCEPTION 'schema must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF EXISTS (SELECT 1 FROM state.proxies p WHERE p.cluster = create_proxy.cluster) THEN
		RAISE EXCEPTION 'a proxy of cluster "%" exists already', cluster
			USING ERRCODE = 'duplicate_object', HINT = 'Change its parts with state.alter_proxy.';
	END IF;
	EXECUTE format('CREATE SCHEMA %I', schema);
	EXECUTE format('GRANT USAGE ON SCHEMA %I TO PUBLIC', schema);
	EXECUTE format('CREATE SERVER %I FOREIGN DATA WRAPPER plproxy OPTIONS (modular_mapping %L, %s)',
		cluster, '1', array_to_string(options, ', '));
	EXECUTE format('CREATE USER MAPPING FOR PUBLIC SERVER %I', cluster);
	EXECUTE format('GRANT USAGE ON FOREIGN SERVER %I TO PUBLIC', cluster);
	INSERT INTO state.proxies (cluster, schema, parts) VALUES (cluster, schema, parts);
	-- A rescale journal of this name that an earlier proxy left (dropped
	-- with its extension) is no one's.
	PERFORM state._proxy_journal_remove(cluster, false);

	-- The gate of every PL/Proxy call of the cluster: callers run it, as
	-- this function's owner (state._proxy_gate is not for PUBLIC).
	EXECUTE format($q$CREATE FUNCTION %I._gate() RETURNS text LANGUAGE sql SECURITY DEFINER
		SET search_path = pg_catalog, pg_temp AS %L$q$, schema,
		format('SELECT state._proxy_gate(%L)', cluster));
	-- What routing needs of a state, from part 0: its key type (qualified),
	-- the parts' max_parallelism and encoding.
	EXECUTE format($q$CREATE FUNCTION %I._state_info(state_name text)
		RETURNS TABLE(key_type text, max_parallelism text, encoding text) LANGUAGE plproxy AS %L$q$, schema,
		format(E'CLUSTER %I._gate();\nRUN ON 0;\nSELECT pg_catalog.format(\'%%I.%%I\', tn.nspname, ty.typname) AS key_type, pg_catalog.current_setting(\'state_backend.max_parallelism\') AS max_parallelism, pg_catalog.current_setting(\'server_encoding\') AS encoding FROM state.states s JOIN pg_catalog.pg_type ty ON ty.oid = s.key_type JOIN pg_catalog.pg_namespace tn ON tn.oid = ty.typnamespace WHERE s.name = $1;', schema));
	-- state.states and state.stats of every part, merged.
	SELECT string_agg(format('%I text', a.attname), ', ' ORDER BY a.attnum) INTO st
	  FROM pg_attribute a WHERE a.attrelid = 'state.states'::regclass AND a.attnum > 0 AND NOT a.attisdropped;
	EXECUTE format('CREATE FUNCTION %I._states() RETURNS TABLE(%s) LANGUAGE plproxy AS %L', schema, st,
		format(E'CLUSTER %I._gate();\nRUN ON ALL;\nSELECT %s FROM state.states s;', schema,
			(SELECT string_agg(format('s.%1$I::text AS %1$I', a.attname), ', ' ORDER BY a.attnum)
			   FROM pg_attribute a WHERE a.attrelid = 'state.states'::regclass AND a.attnum > 0 AND NOT a.attisdropped)));
	-- Read through a proxy function (states()), which holds the gate while
	-- it runs.
	EXECUTE format('CREATE FUNCTION %I.states() RETURNS TABLE(%s) AS %L, %L LANGUAGE C', schema, st,
		'MODULE_PATHNAME', 'state_proxy_call');
	EXECUTE format($q$CREATE VIEW %1$I.states WITH (security_barrier) AS
		SELECT name, min(kind) AS kind, min(backend) AS backend, min(key_type) AS key_type,
		  min(value_type) AS value_type, min(map_key_type) AS map_key_type, min(reducer) AS reducer,
		  min(ttl)::interval AS ttl, min(owner) AS owner, sum(entries::bigint) AS entries,
		  sum(bytes::bigint) AS bytes, count(*) AS parts
		FROM %1$I.states() GROUP BY name$q$, schema);
	SELECT string_agg(format('%I text', a.attname), ', ' ORDER BY a.attnum) INTO st
	  FROM pg_attribute a WHERE a.attrelid = 'state.stats'::regclass AND a.attnum > 0 AND NOT a.attisdropped;
	EXECUTE format('CREATE FUNCTION %I._stats() RETURNS TABLE(%s) LANGUAGE plproxy AS %L', schema, st,
		format(E'CLUSTER %I._gate();\nRUN ON ALL;\nSELECT %s FROM state.stats s;', schema,
			(SELECT string_agg(format('s.%1$I::text AS %1$I', a.attname), ', ' ORDER BY a.attnum)
			   FROM pg_attribute a WHERE a.attrelid = 'state.stats'::regclass AND a.attnum > 0 AND NOT a.attisdropped)));
	EXECUTE format('CREATE FUNCTION %I.stats() RETURNS TABLE(%s) AS %L, %L LANGUAGE C', schema, st,
		'MODULE_PATHNAME', 'state_proxy_call');
	EXECUTE format($q$CREATE VIEW %1$I.stats WITH (security_barrier) AS
		SELECT name, kind, %2$s FROM %1$I.stats() GROUP BY name, kind$q$, schema,
		(SELECT string_agg(format('sum(%1$I::bigint) AS %1$I', a.attname), ', ' ORDER BY a.attnum)
		   FROM pg_attribute a WHERE a.attrelid = 'state.stats'::regclass AND a.attnum > 0
		   AND NOT a.attisdropped AND a.attname NOT IN ('name', 'kind')));
	EXECUTE format('GRANT SELECT ON %1$I.states, %1$I.stats TO PUBLIC', schema);
	-- For state.rescale_proxy: a snapshot of a part, a restore on a server.
	EXECUTE format($q$CREATE FUNCTION %I._snapshot_part(part integer, path text) RETURNS text
		LANGUAGE plproxy AS %L$q$, schema,
		format(E'CLUSTER %I._gate();\nRUN ON part;\nSELECT state.wait_snapshot(state.snapshot($2));', schema));
	EXECUTE format($q$CREATE FUNCTION %I._restore_at(connstr text, paths text[], parallelism text, part text)
		RETURNS text LANGUAGE plproxy AS %L$q$, schema,
		E'CONNECT connstr;\nSELECT state.restore($2, NULL, NULL, $3::integer, $4::integer)::text;');
	-- And the pause of a server's timers and windows (state._pause_timers).
	EXECUTE format($q$CREATE FUNCTION %I._pause_timers_at(connstr text, pause boolean)
		RETURNS void LANGUAGE plproxy AS %L$q$, schema,
		E'CONNECT connstr;\nSELECT state._pause_timers($2);');
	EXECUTE format('REVOKE ALL ON FUNCTION %1$I._snapshot_part(integer, text), %1$I._restore_at(text, text[], text, text), %1$I._pause_timers_at(text, boolean) FROM PUBLIC', schema);

	-- Batch calls: arrays of keys (and values), split by part (PL/Proxy's SPLIT).
	EXECUTE format($q$CREATE FUNCTION %I._value_set_many(parts integer[], a1 text, a2 text[], a3 text[])
		RETURNS SETOF text LANGUAGE plproxy AS %L$q$, schema,
		format(E'CLUSTER %I._gate();\nSPLIT parts, a2, a3;\nRUN ON parts;\nSELECT count(state.value_set($2, u.k, u.v))::text FROM unnest($3, $4) AS u(k, v);', schema));
	EXECUTE format($q$CREATE FUNCTION %I.value_set_many(name text, keys anycompatiblearray, "values" anyarray)
		RETURNS bigint AS 'MODULE_PATHNAME', 'state_proxy_call' LANGUAGE C CALLED ON NULL INPUT$q$, schema);
	EXECUTE format($q$CREATE FUNCTION %I._reduce_many(parts integer[], a1 text, a2 text[], a3 text[])
		RETURNS SETOF text LANGUAGE plproxy AS %L$q$, schema,
		format(E'CLUSTER %I._gate();\nSPLIT parts, a2, a3;\nRUN ON parts;\nSELECT count(state.reduce($2, u.k, u.v))::text FROM unnest($3, $4) AS u(k, v);', schema));
	EXECUTE format($q$CREATE FUNCTION %I.reduce_many(name text, keys anycompatiblearray, "values" anyarray)
		RETURNS bigint AS 'MODULE_PATHNAME', 'state_proxy_call' LANGUAGE C CALLED ON NULL INPUT$q$, schema);
	EXECUTE format($q$CREATE FUNCTION %I._value_get_many(parts integer[], a1 text, a2 text[], a3 text)
		RETURNS TABLE(key text, value text) LANGUAGE plproxy AS %L$q$, schema,
		format(E'CLUSTER %I._gate();\nSPLIT parts, a2;\nRUN ON parts;\nSELECT u.k AS key, state.value_get($2, u.k, $4) AS value FROM unnest($3) AS u(k);', schema));
	EXECUTE format($q$CREATE FUNCTION %I.value_get_many(name text, keys anycompatiblearray, "default" anyelement)
		RETURNS TABLE(key anycompatible, value anyelement) AS 'MODULE_PATHNAME', 'state_proxy_call' LANGUAGE C CALLED ON NULL INPUT$q$, schema);

	FOR fn IN SELECT p.oid FROM pg_proc p
		WHERE p.pronamespace = 'state'::regnamespace AND p.proname = ANY (state._proxy_functions())
		  AND p.provariadic = 0
		ORDER BY p.proname, p.oid
	LOOP
		PERFORM state._proxy_function(schema, cluster, fn);
	END LOOP;
END
$fn$;
REVOKE ALL ON FUNCTION state.create_proxy(text, text[], name) FROM PUBLIC;

-- A proxy's parts change in this transaction (ALTER SERVER and
-- state.proxies); the caller holds the row of state.proxies and the pause.
CREATE FUNCTION state._proxy_switch(cluster text, old text[], parts text[])
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
	EXECUTE format('ALTER SERVER %I OPTIONS (%s, %s)', cluster,
		(SELECT string_agg(format('DROP p%s', i - 1), ', ' ORDER BY i) FROM generate_subscripts(old, 1) i),
		(SELECT string_agg('ADD ' || o, ', ') FROM unnest(state._proxy_options(cluster, parts)) o));
	UPDATE state.proxies p SET parts = _proxy_switch.parts, version = p.version + 1
	 WHERE p.cluster = _proxy_switch.cluster;
END
$fn$;
REVOKE ALL ON FUNCTION state._proxy_switch(text, text[], text[]) FROM PUBLIC;

-- For state.rescale_proxy and state.repair_proxy: the old parts of a
-- cluster on the servers a restore of the rescale reached (touched)
-- restored from its snapshots.  True when every one is back; a part that
-- could not be is a WARNING naming its snapshots.
CREATE FUNCTION state._proxy_put_back(cluster text, schema name, old text[], paths text[], touched text[])
RETURNS boolean LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	back boolean := true;
BEGIN
	FOR i IN 0 .. cardinality(old) - 1 LOOP
		CONTINUE WHEN NOT old[i + 1] = ANY (touched);
		BEGIN
			EXECUTE format('SELECT %I._restore_at($1, $2, $3, $4)', schema)
				USING old[i + 1], paths, cardinality(old)::text, i::text;
			PERFORM state._proxy_rescale_step('part_put_back');
		EXCEPTION WHEN OTHERS THEN
			RAISE WARNING 'could not put part % of cluster "%" back as it was: %', i, cluster, SQLERRM
				USING HINT = format('Its snapshots are %s; once its server is back, call state.repair_proxy(%L).',
					array_to_string(paths, ', '), cluster);
			back := false;
		END;
	END LOOP;
	RETURN back;
END
$fn$;
REVOKE ALL ON FUNCTION state._proxy_put_back(text, name, text[], text[], text[]) FROM PUBLIC;

-- Puts right a rescale of the cluster that failed half done or whose
-- session died (its journal, state._proxy_journal_read, is left): if it
-- had not switched durably, its old parts are restored from its snapshots
-- on the servers its restores reached ('undone'); if it had, the proxy is
-- switched to the new parts in this transaction ('finished').  A journal
-- of a version above the proxy's was written in a transaction that had
-- switched the proxy (an earlier rescale, or a repair that finished one)
-- and did not commit: its old parts hold the keys once it is undone, so
-- the proxy is switched to them.  NULL when there was nothing to put
-- right.  Until then the cluster's proxy calls refuse (55000).  A journal
-- that is damaged, or that cannot be put right, is an error
-- (data_corrupted); with discard a superuser removes it unread, leaving
-- the proxy on the parts it has ('discarded', with a WARNING of what it
-- said).
CREATE FUNCTION state.repair_proxy(cluster text, discard boolean DEFAULT false)
RETURNS text LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	p state.proxies;
	j jsonb;
	old text[];
	new text[];
	paths text[];
	touched text[];
	server text;
	paused text[] := '{}';
	file text;
	unreadable text;
	discard_hint text;
BEGIN
	IF discard AND NOT coalesce((SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = current_user), false) THEN
		RAISE EXCEPTION 'permission denied to discard the rescale journal of cluster "%"', cluster
			USING ERRCODE = 'insufficient_privilege', DETAIL = 'Only a superuser may discard a rescale journal.';
	END IF;
	SELECT * INTO p FROM state.proxies x WHERE x.cluster = repair_proxy.cluster FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'cluster "%" has no proxy in this database', cluster
			USING ERRCODE = 'undefined_object', HINT = 'Make one with state.create_proxy.';
	END IF;
	-- A rescale running now has ended (it held the row): its journal is
	-- what it left.
	PERFORM state.pause_proxy(cluster);
	file := format('pg_state_backend/proxy_rescale/%s_%s',
		(SELECT d.oid FROM pg_database d WHERE d.datname = current_database()), cluster);
	discard_hint := format('Check that the parts the proxy names (state.proxies) hold every key of the cluster once, '
		'restoring them from the rescale''s snapshots if not; then remove the journal with '
		'state.repair_proxy(%L, discard => true) as a superuser.', cluster);
	BEGIN
		j := state._proxy_journal_read(cluster)::jsonb;
		IF j IS NOT NULL AND NOT (jsonb_typeof(j) = 'object'
				AND jsonb_typeof(j -> 'switched') = 'boolean'
				AND jsonb_typeof(j -> 'old_version') = 'number' AND (j ->> 'old_version') ~ '^[0-9]{1,9}$'
				AND jsonb_path_exists(j, '$.old_parts[0]') AND jsonb_path_exists(j, '$.new_parts[0]')
				AND NOT EXISTS (SELECT 1 FROM unnest(ARRAY['old_parts', 'new_parts', 'paths', 'touched']) k
					WHERE jsonb_typeof(j -> k) IS DISTINCT FROM 'array'
					   OR jsonb_path_exists(j -> k, '$[*] ? (@.type() != "string")'))) THEN
			RAISE EXCEPTION 'it is not a rescale journal of this version' USING ERRCODE = 'data_corrupted';
		END IF;
	EXCEPTION WHEN OTHERS THEN
		IF discard THEN
			unreadable := SQLERRM;
		ELSIF SQLSTATE = 'XX001' OR SQLSTATE LIKE '22%' THEN
			RAISE EXCEPTION 'the rescale journal of cluster "%" is damaged', cluster
				USING ERRCODE = 'data_corrupted',
					DETAIL = format('File "%s" of the data directory could not be read as a rescale journal: %s.', file, SQLERRM),
					HINT = discard_hint;
		ELSE
			RAISE;
		END IF;
	END;
	IF discard THEN
		IF j IS NULL AND unreadable IS NULL THEN
			RETURN NULL;
		END IF;
		RAISE WARNING 'the rescale journal of cluster "%" is discarded', cluster
			USING DETAIL = CASE WHEN unreadable IS NOT NULL
					THEN format('File "%s" could not be read (%s).', file, unreadable)
					ELSE format('File "%s" said: %s.', file, j::text) END,
				HINT = 'The proxy stays on the parts state.proxies names: check that they hold every key of the '
					'cluster once, restoring them from the rescale''s snapshots if not, before its next call or rescale.';
		PERFORM state._proxy_journal_remove(cluster, false);
		RETURN 'discarded';
	END IF;
	IF j IS NULL THEN
		RETURN NULL;
	END IF;
	old := ARRAY(SELECT jsonb_array_elements_text(j -> 'old_parts'));
	new := ARRAY(SELECT jsonb_array_elements_text(j -> 'new_parts'));
	paths := ARRAY(SELECT jsonb_array_elements_text(j -> 'paths'));
	touched := ARRAY(SELECT jsonb_array_elements_text(j -> 'touched'));
	IF (j ->> 'switched')::boolean THEN
		-- Its point of no return was passed: the new parts hold the keys.
		IF p.version <= (j ->> 'old_version')::int THEN
			PERFORM state._proxy_switch(cluster, p.parts, new);
			PERFORM state._proxy_rescale_step('switched');
		END IF;
		PERFORM state._proxy_journal_remove(cluster, true);
		RETURN 'finished';
	END IF;
	IF p.version > (j ->> 'old_version')::int
			OR (p.version = (j ->> 'old_version')::int AND p.parts IS DISTINCT FROM old) THEN
		RAISE EXCEPTION 'the rescale journal of cluster "%" does not match its proxy', cluster
			USING ERRCODE = 'data_corrupted',
				DETAIL = format('The journal (file "%s" of the data directory) is of version %s, parts %s; the proxy is of version %s, parts %s.',
					file, j ->> 'old_version', array_to_string(old, ', '), p.version, array_to_string(p.parts, ', ')),
				HINT = discard_hint;
	END IF;
	BEGIN
		-- As the rescale did: no timer fires on a server while its part is
		-- put back (a server no restore reached is left alone).
		FOR server IN SELECT DISTINCT s FROM unnest(old) s WHERE s = ANY (touched) LOOP
			EXECUTE format('SELECT %I._pause_timers_at($1, true)', p.schema) USING server;
			paused := paused || server;
		END LOOP;
		IF NOT state._proxy_put_back(cluster, p.schema, old, paths, touched) THEN
			RAISE EXCEPTION 'could not undo the interrupted rescale of cluster "%"', cluster
				USING ERRCODE = 'object_not_in_prerequisite_state',
					HINT = 'See the warnings above; once those servers are back, call state.repair_proxy again.';
		END IF;
		FOREACH server IN ARRAY paused LOOP
			EXECUTE format('SELECT %I._pause_timers_at($1, false)', p.schema) USING server;
		END LOOP;
	EXCEPTION WHEN OTHERS OR query_canceled THEN
		FOREACH server IN ARRAY paused LOOP
			BEGIN
				EXECUTE format('SELECT %I._pause_timers_at($1, false)', p.schema) USING server;
			EXCEPTION WHEN OTHERS THEN
				RAISE WARNING 'could not resume the timers of server "%" of cluster "%": %', server, cluster, SQLERRM
					USING HINT = 'They resume when this session ends.';
			END;
		END LOOP;
		RAISE;
	END;
	IF p.version < (j ->> 'old_version')::int THEN
		-- The switch to the old parts that its transaction made was undone
		-- with it: made again, the journal goes with its commit.
		PERFORM state._proxy_switch(cluster, p.parts, old);
		PERFORM state._proxy_rescale_step('switched');
		PERFORM state._proxy_journal_remove(cluster, true);
	ELSE
		PERFORM state._proxy_journal_remove(cluster, false);
		PERFORM state._proxy_rescale_step('journal_removed');
	END IF;
	RETURN 'undone';
END
$fn$;
REVOKE ALL ON FUNCTION state.repair_proxy(text, boolean) FROM PUBLIC;

-- A proxy's parts change (a rescale): every proxy session sends its next
-- call by the new parts.  Calls of the cluster running now end first; a
-- rescale of it that was interrupted is put right first (repair_proxy).
CREATE FUNCTION state.alter_proxy(cluster text, parts text[])
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	old text[];
BEGIN
	PERFORM state._proxy_options(cluster, parts);
	SELECT p.parts INTO old FROM state.proxies p WHERE p.cluster = alter_proxy.cluster FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'cluster "%" has no proxy in this database', cluster
			USING ERRCODE = 'undefined_object', HINT = 'Make one with state.create_proxy.';
	END IF;
	PERFORM state.pause_proxy(cluster);
	IF state.repair_proxy(cluster) IS NOT NULL THEN
		SELECT p.parts INTO old FROM state.proxies p WHERE p.cluster = alter_proxy.cluster;
	END IF;
	PERFORM state._proxy_switch(cluster, old, parts);
END
$fn$;
REVOKE ALL ON FUNCTION state.alter_proxy(text, text[]) FROM PUBLIC;

-- Rescales a cluster live: with every proxy call paused and the timers and
-- windows of every server involved paused, a snapshot of each part into
-- snapshot_dir (a directory every server reads and writes), the key groups
-- of new part i restored from them onto parts[i+1], and the proxy switched
-- to the new parts.  Returns the entries restored.  All or nothing: a
-- journal written durably before the first restore (old parts, new parts,
-- snapshots) says what is changing; an error before the switch is durable
-- puts the old parts back; once every new part is restored and the switch
-- made, the journal is marked switched (the point of no return) and goes
-- when the transaction commits.  A rescale interrupted otherwise (its
-- session died, or its transaction did not commit) leaves the journal:
-- the cluster's calls refuse until repair_proxy (run by this function,
-- alter_proxy and drop_proxy first) undoes or finishes it.  Each step has
-- a fault point (state._proxy_rescale_step).
CREATE FUNCTION state.rescale_proxy(cluster text, parts text[], snapshot_dir text)
RETURNS bigint LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	p state.proxies;
	stamp text := to_char(clock_timestamp(), 'YYYYMMDD"T"HH24MISSUS');
	paths text[] := '{}';
	path text;
	status text;
	total bigint := 0;
	server text;
	paused text[] := '{}';
	journal jsonb;
BEGIN
	PERFORM state._proxy_options(cluster, parts);
	SELECT * INTO p FROM state.proxies x WHERE x.cluster = rescale_proxy.cluster FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'cluster "%" has no proxy in this database', cluster
			USING ERRCODE = 'undefined_object', HINT = 'Make one with state.create_proxy.';
	END IF;
	IF snapshot_dir IS NULL OR snapshot_dir !~ '^/' THEN
		RAISE EXCEPTION 'snapshot_dir must be an absolute path'
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'Give a directory that every server of the cluster reads and writes.';
	END IF;
	PERFORM state.pause_proxy(cluster);
	IF state.repair_proxy(cluster) IS NOT NULL THEN
		SELECT * INTO p FROM state.proxies x WHERE x.cluster = rescale_proxy.cluster;
	END IF;
	PERFORM state._proxy_rescale_step('calls_paused');
	BEGIN
		-- No timer or window fires on a server of the cluster, old or new,
		-- until the end: what a handler wrote after its part's snapshot
		-- would go with the part's old contents at the restore.  A pause
		-- lasts while its connection does (the session of this proxy).
		FOR server IN SELECT DISTINCT s FROM unnest(p.parts || parts) s LOOP
			EXECUTE format('SELECT %I._pause_timers_at($1, true)', p.schema) USING server;
			paused := paused || server;
		END LOOP;
		PERFORM state._proxy_rescale_step('timers_paused');
		FOR i IN 0 .. cardinality(p.parts) - 1 LOOP
			path := format('%s/%s-%s-part%s', rtrim(snapshot_dir, '/'), cluster, stamp, i);
			EXECUTE format('SELECT %I._snapshot_part($1, $2)', p.schema) INTO status USING i, path;
			IF status IS DISTINCT FROM 'completed' THEN
				RAISE EXCEPTION 'the snapshot of part % of cluster "%" ended %', i, cluster, coalesce(status, 'with no status')
					USING ERRCODE = 'object_not_in_prerequisite_state';
			END IF;
			paths := paths || path;
			PERFORM state._proxy_rescale_step('part_snapshot');
		END LOOP;
		-- Before anything changes on a server: what is changing, durably.
		journal := jsonb_build_object('old_version', p.version, 'old_parts', to_jsonb(p.parts),
			'new_parts', to_jsonb(parts), 'paths', to_jsonb(paths), 'touched', '[]'::jsonb,
			'switched', false);
		PERFORM state._proxy_journal_write(cluster, journal::text);
		BEGIN
			PERFORM state._proxy_rescale_step('journal_written');
			FOR i IN 0 .. cardinality(parts) - 1 LOOP
				-- The servers a restore may have reached: only those are put back.
				journal := jsonb_set(journal, '{touched}', (journal -> 'touched') || to_jsonb(parts[i + 1]));
				PERFORM state._proxy_journal_write(cluster, journal::text);
				EXECUTE format('SELECT %I._restore_at($1, $2, $3, $4)::bigint', p.schema)
					INTO status USING parts[i + 1], paths, cardinality(parts)::text, i::text;
				total := total + status::bigint;
				PERFORM state._proxy_rescale_step('part_restored');
			END LOOP;
			PERFORM state._proxy_switch(cluster, p.parts, parts);
			PERFORM state._proxy_rescale_step('switched');
			-- The point of no return: from here the new parts stay, and
			-- repair_proxy finishes the switch if this transaction does not.
			PERFORM state._proxy_journal_write(cluster, jsonb_set(journal, '{switched}', 'true')::text);
		EXCEPTION WHEN OTHERS OR query_canceled THEN
			-- Not switched durably (unless the mark was written and then its
			-- write failed): the proxy keeps its old parts, so put them back.
			IF NOT coalesce((state._proxy_journal_read(cluster)::jsonb ->> 'switched')::boolean, false) THEN
				IF state._proxy_put_back(cluster, p.schema, p.parts, paths,
						ARRAY(SELECT jsonb_array_elements_text(journal -> 'touched'))) THEN
					PERFORM state._proxy_journal_remove(cluster, false);
					PERFORM state._proxy_rescale_step('journal_removed');
				END IF;
			END IF;
			RAISE;
		END;
		-- The journal goes when the switch commits (not if a rollback to a
		-- savepoint undoes it).
		PERFORM state._proxy_journal_remove(cluster, true);
		PERFORM state._proxy_rescale_step('switch_durable');
		-- The rescale stands: a server whose timers cannot be resumed now
		-- resumes them when this session ends.
		FOREACH server IN ARRAY paused LOOP
			BEGIN
				EXECUTE format('SELECT %I._pause_timers_at($1, false)', p.schema) USING server;
			EXCEPTION WHEN OTHERS THEN
				RAISE WARNING 'could not resume the timers of server "%" of cluster "%": %', server, cluster, SQLERRM
					USING HINT = 'They resume when this session ends.';
			END;
		END LOOP;
		paused := '{}';
		PERFORM state._proxy_rescale_step('timers_resumed');
	EXCEPTION WHEN OTHERS OR query_canceled THEN
		FOREACH server IN ARRAY paused LOOP
			BEGIN
				EXECUTE format('SELECT %I._pause_timers_at($1, false)', p.schema) USING server;
			EXCEPTION WHEN OTHERS THEN
				RAISE WARNING 'could not resume the timers of server "%" of cluster "%": %', server, cluster, SQLERRM
					USING HINT = 'They resume when this session ends.';
			END;
		END LOOP;
		RAISE;
	END;
	RETURN total;
END
$fn$;
REVOKE ALL ON FUNCTION state.rescale_proxy(text, text[], text) FROM PUBLIC;

-- Removes a proxy: its schema with its functions, and its cluster (a
-- rescale of it that was interrupted put right first).
CREATE FUNCTION state.drop_proxy(cluster text)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	s name;
BEGIN
	PERFORM 1 FROM state.proxies p WHERE p.cluster = drop_proxy.cluster FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'cluster "%" has no proxy in this database', cluster
			USING ERRCODE = 'undefined_object';
	END IF;
	PERFORM state.repair_proxy(cluster);
	DELETE FROM state.proxies p WHERE p.cluster = drop_proxy.cluster RETURNING p.schema INTO s;
	EXECUTE format('DROP SCHEMA %I CASCADE', s);
	EXECUTE format('DROP SERVER %I CASCADE', cluster);
END
$fn$;
REVOKE ALL ON FUNCTION state.drop_proxy(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION state._proxy_function(name, text, regprocedure) FROM PUBLIC;
