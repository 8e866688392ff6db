/* state_backend--1.0--1.1.sql: ALTER EXTENSION state_backend UPDATE TO '1.1'. */

\echo Use "ALTER EXTENSION state_backend UPDATE TO '1.1'" to load this file. \quit

/*
 * States live in shared memory and the backends' own storage, not in these
 * objects: replacing a function or a view here leaves every state and its
 * entries as they are.  Functions whose arguments or columns changed are
 * dropped and made again, as CREATE OR REPLACE cannot change them; EXECUTE
 * or SELECT granted on them to other roles must be granted again.  A view
 * of the user's own over state.states or state.snapshots stops the update
 * (drop it first and make it again after).
 */

---------------------------------------------------------------- states

DROP FUNCTION state.create_state(text, text, regtype, regtype, text, regtype, text, interval);

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
	aggregate regprocedure DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'state_create_state' LANGUAGE C CALLED ON NULL INPUT;

DROP VIEW state.states;
DROP FUNCTION state._states();

CREATE FUNCTION state._states(
	OUT name text, OUT kind text, OUT backend text,
	OUT key_type regtype, OUT value_type regtype, OUT map_key_type regtype,
	OUT reducer text, OUT ttl interval, OUT owner regrole,
	OUT entries bigint, OUT bytes bigint, OUT logged boolean,
	OUT ttl_update text, OUT ttl_visibility text, OUT key_groups int4range,
	OUT aggregate regprocedure)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'state_states' LANGUAGE C STRICT;

CREATE VIEW state.states AS SELECT * FROM state._states();

CREATE FUNCTION state._stats(
	OUT name text, OUT kind text, OUT reads bigint, OUT writes bigint, OUT misses bigint,
	OUT expired bigint, OUT entries bigint, OUT bytes bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'state_stats' LANGUAGE C STRICT;

CREATE VIEW state.stats AS SELECT * FROM state._stats();

CREATE FUNCTION state._worker(OUT name text, OUT value bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'state_worker' LANGUAGE C STRICT;

CREATE VIEW state.worker AS SELECT * FROM state._worker();

CREATE FUNCTION state.reset_stats(name text DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'state_reset_stats' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.compact(name text)
RETURNS void AS 'MODULE_PATHNAME', 'state_compact' LANGUAGE C STRICT;

CREATE FUNCTION state.entries(name text, key_default anyelement, value_default anycompatible)
RETURNS TABLE(key anyelement, value anycompatible)
AS 'MODULE_PATHNAME', 'state_entries' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.key_group_range(parallelism integer, part integer)
RETURNS int4range AS 'MODULE_PATHNAME', 'state_key_group_range' LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION state.part_for(name text, key anycompatible, parallelism integer)
RETURNS integer AS 'MODULE_PATHNAME', 'state_part_for' LANGUAGE C CALLED ON NULL INPUT;

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

---------------------------------------------------------------- AggregatingState

CREATE FUNCTION state.aggregate(name text, key anycompatible, value anyelement)
RETURNS void AS 'MODULE_PATHNAME', 'state_aggregate' LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION state.aggregate(name text, key anycompatible, value text)
RETURNS void AS 'MODULE_PATHNAME', 'state_aggregate' LANGUAGE C CALLED ON NULL INPUT;

---------------------------------------------------------------- snapshots

DROP VIEW state.snapshots;
DROP FUNCTION state._snapshots();

CREATE FUNCTION state._snapshots(
	OUT id bigint, OUT path text, OUT format text, OUT status text,
	OUT started_at timestamptz, OUT finished_at timestamptz,
	OUT states bigint, OUT entries bigint, OUT bytes bigint,
	OUT incremental boolean, OUT error text,
	OUT phase text, OUT key_groups_done integer, OUT key_groups_total integer)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'state_snapshots' LANGUAGE C STRICT;

CREATE VIEW state.snapshots AS SELECT * FROM state._snapshots();

DROP FUNCTION state.restore(text, text, text);

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

-- ALTER EXTENSION UPDATE keeps the comment CREATE EXTENSION took from the
-- control file; 1.1's names the aggregating and operator states.
COMMENT ON EXTENSION state_backend IS
	'Flink-style keyed and operator state (value, list, map, reducing, aggregating) in shared memory or RocksDB, with snapshots';

---------------------------------------------------------------- privileges

-- As in a fresh install: restoring and reading snapshots, and clearing the
-- counters others read, are not for PUBLIC; every role may read the views.
REVOKE ALL ON FUNCTION state.restore(text, text, text, integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION state.restore(text[], text, text, integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION state.snapshot_states(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION state.reset_stats(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION state.snapshot_entries(text, text, anyelement, anycompatible, text) FROM PUBLIC;
GRANT SELECT ON state.states TO PUBLIC;
GRANT SELECT ON state.snapshots TO PUBLIC;
GRANT SELECT ON state.stats TO PUBLIC;
GRANT SELECT ON state.worker TO PUBLIC;
