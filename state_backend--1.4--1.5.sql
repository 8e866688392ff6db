/* state_backend--1.4--1.5.sql: ALTER EXTENSION state_backend UPDATE TO '1.5'. */

\echo Use "ALTER EXTENSION state_backend UPDATE TO '1.5'" to load this file. \quit

-- 1.5 adds window states: create_state takes "assigner", "size", "slide",
-- "gap", "collect", "allowed_lateness" and "emit", state.stats counts late
-- values, and the window functions come.

DROP FUNCTION state.create_state(text, text, regtype, regtype, text, regtype, text, interval,
	boolean, text, text, regprocedure, boolean, regprocedure, text);
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

DROP VIEW state.stats;
DROP FUNCTION state._stats();
CREATE FUNCTION state._stats(
	OUT name text, OUT kind text, OUT reads bigint, OUT writes bigint, OUT misses bigint,
	OUT expired bigint, OUT entries bigint, OUT bytes bigint, OUT timers_registered bigint,
	OUT timers_fired bigint, OUT timers_failed bigint, OUT late bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'state_stats' LANGUAGE C STRICT;
CREATE VIEW state.stats AS SELECT * FROM state._stats();
GRANT SELECT ON state.stats TO PUBLIC;

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
