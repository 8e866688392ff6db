--
-- aggregating: a state per key of any one-argument PostgreSQL aggregate.
-- Each aggregate's result per key equals the same aggregate with GROUP BY
-- over the same rows, exactly; snapshots of both formats restore it, into
-- either backend.
--
CREATE TABLE ag_rows (k int, f float8, n numeric, i int8, b boolean, t text);
INSERT INTO ag_rows
SELECT g % 50, (g * 7 % 101) / 3.0, (g * 13 % 97) / 7.0, g::int8 * 1000003 % 100000,
       g % 7 <> 0, md5(g::text)
  FROM generate_series(1, 2000) g;

SELECT state.create_state('ag_avg', 'aggregating', 'int', 'float8', aggregate => 'avg(float8)');
SELECT state.create_state('ag_sum', 'aggregating', 'int', 'numeric', aggregate => 'sum(numeric)');
SELECT state.create_state('ag_avg8', 'aggregating', 'int', 'int8', aggregate => 'avg(int8)');
SELECT state.create_state('ag_sd', 'aggregating', 'int', 'float8', aggregate => 'stddev(float8)');
SELECT state.create_state('ag_and', 'aggregating', 'int', 'boolean', aggregate => 'bool_and(boolean)');
SELECT state.create_state('ag_max', 'aggregating', 'int', 'text', aggregate => 'max(text)');
SELECT name, kind, value_type, aggregate FROM state.states WHERE name LIKE 'ag\_%' ORDER BY name;

-- rows in the table's order, as the GROUP BY below reads them
SELECT count(state.aggregate('ag_avg', k, f)), count(state.aggregate('ag_sum', k, n)),
       count(state.aggregate('ag_avg8', k, i)), count(state.aggregate('ag_sd', k, f)),
       count(state.aggregate('ag_and', k, b)), count(state.aggregate('ag_max', k, t))
  FROM ag_rows;

CREATE VIEW ag_expected AS
SELECT k, avg(f) AS avg, sum(n) AS sum, avg(i) AS avg8, stddev(f) AS sd, bool_and(b) AS band,
       max(t) AS max
  FROM ag_rows GROUP BY k;
-- ag_mismatches(): keys whose state differs from the GROUP BY (0 expected)
CREATE FUNCTION ag_mismatches() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM ag_expected e
     WHERE state.value_get('ag_avg', e.k, NULL::float8) IS DISTINCT FROM e.avg
        OR state.value_get('ag_sum', e.k, NULL::numeric) IS DISTINCT FROM e.sum
        OR state.value_get('ag_avg8', e.k, NULL::numeric) IS DISTINCT FROM e.avg8
        OR state.value_get('ag_sd', e.k, NULL::float8) IS DISTINCT FROM e.sd
        OR state.value_get('ag_and', e.k, NULL::boolean) IS DISTINCT FROM e.band
        OR state.value_get('ag_max', e.k, NULL::text) IS DISTINCT FROM e.max
$$;
SELECT count(*) AS keys, ag_mismatches() AS mismatches FROM ag_expected;
SELECT state.value_get('ag_avg', 7, 0::float8) = (SELECT avg(f) FROM ag_rows WHERE k = 7) AS avg_7,
       state.value_get('ag_sum', 7, 0::numeric) AS sum_7;
-- a key with no state gives the default; the result is cast to its type
SELECT state.value_get('ag_avg', 999, -1::float8) AS absent,
       state.value_get('ag_avg8', 7, 0::float8) = (SELECT avg(i) FROM ag_rows WHERE k = 7)::float8 AS cast;
-- NULLs are skipped, as the aggregate skips them
SELECT state.aggregate('ag_avg', 7, NULL::float8);
SELECT ag_mismatches() AS mismatches_after_null;

-- a custom aggregate with an initial value
CREATE FUNCTION ag_add(int8, int8) RETURNS int8 LANGUAGE sql STRICT AS 'SELECT $1 + $2';
CREATE AGGREGATE ag_plus(int8) (sfunc = ag_add, stype = int8, initcond = '100');
SELECT state.create_state('ag_custom', 'aggregating', 'int', 'int8', aggregate => 'ag_plus(int8)');
SELECT state.aggregate('ag_custom', 1, 5::int8), state.aggregate('ag_custom', 1, 6::int8);
SELECT state.value_get('ag_custom', 1, 0::int8) AS custom, (SELECT ag_plus(x) FROM (VALUES (5::int8), (6)) v(x)) AS same;

---------------------------------------------------------------- refused
SELECT expect_error($$SELECT state.create_state('ag_x', 'aggregating', 'int', 'int', aggregate => 'array_agg(anynonarray)')$$);
SELECT expect_error($$SELECT state.create_state('ag_x', 'aggregating', 'int', 'text', aggregate => 'string_agg(text, text)')$$);
SELECT expect_error($$SELECT state.create_state('ag_x', 'aggregating', 'int', 'int', aggregate => 'avg(float8)')$$);
SELECT expect_error($$SELECT state.create_state('ag_x', 'aggregating', 'int', 'float8', aggregate => 'percentile_cont(float8, float8)')$$);
SELECT expect_error($$SELECT state.create_state('ag_x', 'aggregating', 'int', 'float8', aggregate => 'abs(float8)')$$);
SELECT expect_error($$SELECT state.create_state('ag_x', 'aggregating', 'int', 'float8')$$);
SELECT expect_error($$SELECT state.create_state('ag_x', 'value', 'int', 'float8', aggregate => 'avg(float8)')$$);
SELECT expect_error($$SELECT state.value_set('ag_avg', 1, 1::float8)$$);
SELECT expect_error($$SELECT state.aggregate('ag_avg', 1, 'x'::text)$$);
SELECT expect_error($$SELECT state.reduce('ag_avg', 1, 1::float8)$$);
-- the owner must be able to execute the aggregate
CREATE ROLE ag_role;
GRANT USAGE ON SCHEMA state TO ag_role;
REVOKE ALL ON FUNCTION ag_plus(int8) FROM PUBLIC;
SET ROLE ag_role;
SELECT expect_error($$SELECT state.create_state('ag_x', 'aggregating', 'int', 'int8', aggregate => 'ag_plus(int8)')$$);
RESET ROLE;
SELECT count(*) AS none_created FROM state.states WHERE name = 'ag_x';
-- and so must whoever uses the state, at each use
SELECT state.grant_access('ag_custom', 'ag_role', 'read');
SET ROLE ag_role;
SELECT expect_error($$SELECT state.value_get('ag_custom', 1, 0::int8)$$);
RESET ROLE;
SELECT state.revoke_access('ag_custom', 'ag_role', 'read');

-- an aggregate a state folds with is neither dropped, renamed nor moved, nor
-- its schema renamed (the state's snapshots name it by its signature)
SELECT expect_error($$DROP AGGREGATE ag_plus(int8)$$);
SELECT expect_error($$DROP FUNCTION ag_add(int8, int8) CASCADE$$);
SELECT expect_error($$ALTER AGGREGATE ag_plus(int8) RENAME TO ag_plus_renamed$$);
CREATE SCHEMA ag_elsewhere;
SELECT expect_error($$ALTER AGGREGATE ag_plus(int8) SET SCHEMA ag_elsewhere$$);
CREATE AGGREGATE ag_elsewhere.ag_plus(int8) (sfunc = ag_add, stype = int8, initcond = '0');
SELECT state.create_state('ag_schema', 'aggregating', 'int', 'int8', aggregate => 'ag_elsewhere.ag_plus(int8)');
SELECT expect_error($$ALTER SCHEMA ag_elsewhere RENAME TO ag_moved$$);
SELECT state.drop_state('ag_schema');
ALTER SCHEMA ag_elsewhere RENAME TO ag_moved;
DROP SCHEMA ag_moved CASCADE;
SELECT state.aggregate('ag_custom', 1, 1::int8);
SELECT state.value_get('ag_custom', 1, 0::int8) AS still_folds;
-- once no state uses it, it can go
CREATE AGGREGATE ag_unused(int8) (sfunc = ag_add, stype = int8);
DROP AGGREGATE ag_unused(int8);

-- the aggregate's owner must be able to execute its component functions,
-- as for a plain SELECT of the aggregate
CREATE FUNCTION ag_definer_add(int8, int8) RETURNS int8 LANGUAGE sql STRICT SECURITY DEFINER
    AS 'SELECT $1 + $2';
CREATE ROLE ag_alice;
GRANT USAGE ON SCHEMA state TO ag_alice;
GRANT CREATE ON SCHEMA public TO ag_alice;
SET ROLE ag_alice;
CREATE AGGREGATE ag_alice_sum(int8) (sfunc = ag_definer_add, stype = int8);
SELECT state.create_state('ag_alice_s', 'aggregating', 'int', 'int8', aggregate => 'ag_alice_sum(int8)');
SELECT state.aggregate('ag_alice_s', 1, 5::int8);
RESET ROLE;
REVOKE EXECUTE ON FUNCTION ag_definer_add(int8, int8) FROM PUBLIC;
SET ROLE ag_alice;
SELECT expect_error($$SELECT ag_alice_sum(x) FROM (VALUES (1::int8)) v(x)$$);
SELECT expect_error($$SELECT state.aggregate('ag_alice_s', 1, 5::int8)$$);
SELECT expect_error($$SELECT state.value_get('ag_alice_s', 1, 0::int8)$$);
SELECT expect_error($$SELECT state.create_state('ag_alice_t', 'aggregating', 'int', 'int8', aggregate => 'ag_alice_sum(int8)')$$);
SELECT state.drop_state('ag_alice_s');
DROP AGGREGATE ag_alice_sum(int8);
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM ag_alice;
REVOKE USAGE ON SCHEMA state FROM ag_alice;
DROP ROLE ag_alice;
DROP FUNCTION ag_definer_add(int8, int8);

-- NULLs are skipped, even by a non-strict transition function (sum(int4))
SELECT state.create_state('ag_sum4', 'aggregating', 'int', 'int', aggregate => 'sum(int4)');
SELECT state.aggregate('ag_sum4', 1, NULL::int), state.aggregate('ag_sum4', 2, 5), state.aggregate('ag_sum4', 2, NULL::int);
SELECT state.value_get('ag_sum4', 1, -1::int8) AS no_state, state.value_get('ag_sum4', 2, -1::int8) AS five;

-- an aggregate replaced with another transition type is refused, not misread
CREATE AGGREGATE ag_plus2(int8) (sfunc = ag_add, stype = int8, initcond = '0');
SELECT state.create_state('ag_replaced', 'aggregating', 'int', 'int8', aggregate => 'ag_plus2(int8)');
SELECT state.aggregate('ag_replaced', 1, 7::int8);
CREATE FUNCTION ag_arr_add(int8[], int8) RETURNS int8[] LANGUAGE sql STRICT AS 'SELECT $1 || $2';
CREATE FUNCTION ag_arr_sum(int8[]) RETURNS int8 LANGUAGE sql STRICT AS 'SELECT sum(x)::int8 FROM unnest($1) x';
CREATE OR REPLACE AGGREGATE ag_plus2(int8) (sfunc = ag_arr_add, stype = int8[], finalfunc = ag_arr_sum, initcond = '{}');
SELECT expect_error($$SELECT state.value_get('ag_replaced', 1, 0::int8)$$);
SELECT expect_error($$SELECT state.aggregate('ag_replaced', 1, 1::int8)$$);
SELECT state.drop_state('ag_replaced'), state.drop_state('ag_sum4');

---------------------------------------------------------------- snapshots
CREATE TABLE ag_conf AS SELECT current_setting('data_directory') AS datadir,
       CASE current_setting('state_backend.backend') WHEN 'rocksdb' THEN 'memory' ELSE 'rocksdb' END AS other;
CREATE FUNCTION ag_path(name text) RETURNS text LANGUAGE sql AS $$
    SELECT datadir || '/ag_' || name || '_' || current_setting('state_backend.backend') FROM ag_conf
$$;
SELECT state.wait_snapshot(state.snapshot(ag_path('native'), 'native'));
SELECT state.wait_snapshot(state.snapshot(ag_path('canonical'), 'canonical'));
-- more values after the snapshots, which a restore undoes
SELECT count(state.aggregate('ag_avg', k, f)) FROM ag_rows WHERE k < 5;
SELECT ag_mismatches() > 0 AS changed;
SELECT state.restore(ag_path('native')) > 0 AS restored_native;
SELECT ag_mismatches() AS mismatches_native;
SELECT state.restore(ag_path('canonical')) > 0 AS restored_canonical;
SELECT ag_mismatches() AS mismatches_canonical;
-- into the other backend: canonical to either, native heap states to rocksdb
SELECT state.restore(ag_path('canonical'), backend => (SELECT other FROM ag_conf)) > 0 AS restored_other;
SELECT count(DISTINCT backend) AS backends, min(backend) = (SELECT other FROM ag_conf) AS moved
  FROM state.states WHERE name LIKE 'ag\_%';
SELECT ag_mismatches() AS mismatches_other_backend;
SELECT state.aggregate('ag_sum', 7, 1::numeric);
SELECT state.value_get('ag_sum', 7, 0::numeric) = (SELECT sum(n) + 1 FROM ag_rows WHERE k = 7) AS folds_on;

-- with a ttl, a key's accumulator expires as a whole, and the next value starts a new one
-- (on the TTL clock, which the test moves rather than waits for)
SELECT state.create_state('ag_ttl', 'aggregating', 'int', 'int8', aggregate => 'avg(int8)',
                          ttl => '1 hour');
SELECT state.aggregate('ag_ttl', 1, 10), state.aggregate('ag_ttl', 1, 20);
SELECT state.value_get('ag_ttl', 1, NULL::numeric) AS avg_before;
SELECT state._advance_ttl_clock('61 minutes') IS NOT NULL AS clock_moved;
SELECT state.value_get('ag_ttl', 1, NULL::numeric) IS NULL AS expired;
SELECT state.aggregate('ag_ttl', 1, 4);
SELECT state.value_get('ag_ttl', 1, NULL::numeric) AS avg_after;

SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'ag\_%' ORDER BY name;
REVOKE USAGE ON SCHEMA state FROM ag_role;
DROP ROLE ag_role;
