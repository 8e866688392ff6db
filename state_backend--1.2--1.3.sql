/* state_backend--1.2--1.3.sql: ALTER EXTENSION state_backend UPDATE TO '1.3'. */

\echo Use "ALTER EXTENSION state_backend UPDATE TO '1.3'" to load this file. \quit

-- 1.3 adds transactional states: create_state takes "transactional", and
-- state.states shows it.  States are left as they are (not transactional).

DROP FUNCTION state.create_state(text, text, regtype, regtype, text, regtype, text, interval,
	boolean, text, text, regprocedure);
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
	transactional boolean DEFAULT false)
RETURNS void AS 'MODULE_PATHNAME', 'state_create_state' LANGUAGE C CALLED ON NULL INPUT;

DROP VIEW state.states;
DROP FUNCTION state._states();
CREATE FUNCTION state._states(
	OUT name text, OUT kind text, OUT backend text,
	OUT key_type regtype, OUT value_type regtype, OUT map_key_type regtype,
	OUT reducer text, OUT ttl interval, OUT owner regrole,
	OUT entries bigint, OUT bytes bigint, OUT logged boolean,
	OUT ttl_update text, OUT ttl_visibility text, OUT key_groups int4range,
	OUT aggregate regprocedure, OUT transactional boolean)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'state_states' LANGUAGE C STRICT;

CREATE VIEW state.states AS SELECT * FROM state._states();
GRANT SELECT ON state.states TO PUBLIC;
