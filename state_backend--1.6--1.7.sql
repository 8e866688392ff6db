/* state_backend--1.6--1.7.sql: ALTER EXTENSION state_backend UPDATE TO '1.7'. */

\echo Use "ALTER EXTENSION state_backend UPDATE TO '1.7'" to load this file. \quit

-- 1.7 hardens what runs for a state's owner and what only the extension's
-- own functions may call; a fresh install of 1.7 (state_backend--1.7.sql)
-- and 1.6 updated by this file end with the same objects and privileges
-- (sql/upgrade.sql compares them).

---------------------------------------------------------------- views and proxies

-- Every view that filters by privilege is a security barrier, so that a
-- caller's own conditions (a cheap function that prints its argument) see
-- only the rows the view lets through.
ALTER VIEW state.states SET (security_barrier);
ALTER VIEW state.stats SET (security_barrier);
ALTER VIEW state.worker SET (security_barrier);
ALTER VIEW state.snapshots SET (security_barrier);
ALTER VIEW state.timer_status SET (security_barrier);
-- The table of failed timers had the name the view's array type needs
-- (PostgreSQL names a type's array type "_" and the type's name): renamed,
-- and the view made again, which then has its array type.
DROP VIEW state.timer_failures;
ALTER TABLE state._timer_failures RENAME TO _failed_timers;
CREATE VIEW state.timer_failures WITH (security_barrier) AS
	SELECT name, key, at, attempts, error, failed_at FROM state._failed_timers
	WHERE pg_has_role(owner, 'USAGE');
GRANT SELECT ON state.timer_failures TO PUBLIC;

-- Immutable functions are parallel safe (PostgreSQL's opr_sanity).
ALTER FUNCTION state._proxy_functions() PARALLEL SAFE;
