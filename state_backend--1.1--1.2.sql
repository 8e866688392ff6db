/* state_backend--1.1--1.2.sql: ALTER EXTENSION state_backend UPDATE TO '1.2'. */

\echo Use "ALTER EXTENSION state_backend UPDATE TO '1.2'" to load this file. \quit

-- 1.2 adds functions only: states and the objects of 1.1 are left as they are.

---------------------------------------------------------------- AggregatingState

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

---------------------------------------------------------------- TTL clock

-- For tests: moves the clock of state TTL forward, for every session, until
-- the server restarts.  Superuser only.
CREATE FUNCTION state._advance_ttl_clock(by interval)
RETURNS timestamptz AS 'MODULE_PATHNAME', 'state_advance_ttl_clock' LANGUAGE C STRICT;
REVOKE ALL ON FUNCTION state._advance_ttl_clock(interval) FROM PUBLIC;
