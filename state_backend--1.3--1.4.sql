/* state_backend--1.3--1.4.sql: ALTER EXTENSION state_backend UPDATE TO '1.4'. */

\echo Use "ALTER EXTENSION state_backend UPDATE TO '1.4'" to load this file. \quit

-- 1.4 adds timers states: create_state takes "handler" and "time_domain",
-- state.stats counts timers, and the timer functions and views come.

DROP FUNCTION state.create_state(text, text, regtype, regtype, text, regtype, text, interval,
	boolean, text, text, regprocedure, boolean);
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
	time_domain text DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'state_create_state' LANGUAGE C CALLED ON NULL INPUT;

DROP VIEW state.stats;
DROP FUNCTION state._stats();
CREATE FUNCTION state._stats(
	OUT name text, OUT kind text, OUT reads bigint, OUT writes bigint, OUT misses bigint,
	OUT expired bigint, OUT entries bigint, OUT bytes bigint, OUT timers_registered bigint,
	OUT timers_fired bigint, OUT timers_failed bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'state_stats' LANGUAGE C STRICT;
CREATE VIEW state.stats AS SELECT * FROM state._stats();
GRANT SELECT ON state.stats TO PUBLIC;

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
