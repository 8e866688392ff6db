--
-- aggregating_args: aggregating states of aggregates from other extensions
-- (postgresql-hll's hll_add_agg over hll_hashval, an input type without
-- binary I/O; postgresql-tdigest's tdigest(double precision, integer), an
-- aggregate of two arguments) and of built-in aggregates of several
-- arguments (corr), in every backend.  Each state equals the same
-- aggregate with GROUP BY over the same rows, exactly, before and after
-- snapshots of both formats, read back and restored.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS hll;
CREATE EXTENSION IF NOT EXISTS tdigest;
RESET client_min_messages;

CREATE TABLE am_rows (g int, k int, u text, ms float8, x float8, y float8);
INSERT INTO am_rows
SELECT g, g % 40, 'user' || (g * 7919 % 1500), (g * 37 % 1009) / 3.0, g % 13, (g * 31 % 17) + g % 13
  FROM generate_series(1, 6000) g;
CREATE TABLE am_backends (b text);
INSERT INTO am_backends VALUES ('memory'), ('filesystem'), ('rocksdb');

-- three states per backend: distinct users, latency digests, a correlation
SELECT count(state.create_state('am_hll_' || b, 'aggregating', 'int', 'hll_hashval', backend => b,
                                aggregate => 'hll_add_agg(hll_hashval)')),
       count(state.create_state('am_td_' || b, 'aggregating', 'int', 'float8', backend => b,
                                aggregate => 'tdigest(double precision, integer)')),
       count(state.create_state('am_corr_' || b, 'aggregating', 'int', 'float8', backend => b,
                                aggregate => 'corr(double precision, double precision)'))
  FROM am_backends;
SELECT name, backend, value_type, aggregate FROM state.states WHERE name LIKE 'am\_%' ORDER BY name;

-- the rows in order of g, as the GROUP BY below folds them (floating-point
-- sums depend on the order)
SELECT b, (SELECT count(state.aggregate('am_hll_' || b, k, hll_hash_text(u))) +
                  count(state.aggregate('am_td_' || b, k, ms, 100)) +
                  count(state.aggregate('am_corr_' || b, k, y, x))
             FROM (SELECT * FROM am_rows ORDER BY g) r) AS folds
  FROM am_backends ORDER BY b;

-- tdigest_percentile of one digest (it is an aggregate over digests)
CREATE FUNCTION am_pct(d tdigest, p float8) RETURNS float8 LANGUAGE sql
    AS 'SELECT tdigest_percentile(x, p) FROM (VALUES (d)) v(x)';
CREATE VIEW am_expected AS
SELECT k, hll_add_agg(hll_hash_text(u) ORDER BY g) AS hll, tdigest(ms, 100 ORDER BY g) AS td,
       tdigest_percentile(ms, 100, 0.95 ORDER BY g) AS p95, corr(y, x ORDER BY g) AS corr
  FROM am_rows GROUP BY k;
-- the states as value_get reads them against the GROUP BY: per backend,
-- the keys whose state differs (0 expected)
CREATE VIEW am_now AS
SELECT b, count(*) AS keys,
       count(*) FILTER (WHERE state.value_get('am_hll_' || b, k, NULL::hll)::text
                              IS DISTINCT FROM e.hll::text
                           OR hll_cardinality(state.value_get('am_hll_' || b, k, NULL::hll))
                              IS DISTINCT FROM hll_cardinality(e.hll)) AS hll_differ,
       count(*) FILTER (WHERE state.value_get('am_td_' || b, k, NULL::tdigest)::text
                              IS DISTINCT FROM e.td::text
                           OR am_pct(state.value_get('am_td_' || b, k, NULL::tdigest), 0.95)
                              IS DISTINCT FROM e.p95) AS td_differ,
       count(*) FILTER (WHERE state.value_get('am_corr_' || b, k, NULL::float8)
                              IS DISTINCT FROM e.corr) AS corr_differ
  FROM am_backends, am_expected e GROUP BY b ORDER BY b;
SELECT * FROM am_now;
SELECT round(hll_cardinality(state.value_get('am_hll_memory', 7, NULL::hll))) AS users_7,
       (SELECT count(DISTINCT u) FROM am_rows WHERE k = 7) AS exact_users_7,
       am_pct(state.value_get('am_td_rocksdb', 7, NULL::tdigest), 0.5) AS median_7,
       round(state.value_get('am_corr_filesystem', 7, NULL::float8)::numeric, 6) AS corr_7;

-- NULL values are skipped; so is a NULL further argument of a strict
-- transition function (corr's), as an Agg node skips the row
SELECT state.aggregate('am_corr_memory', 7, NULL::float8, 1::float8),
       state.aggregate('am_corr_memory', 7, 1::float8, NULL::float8),
       state.aggregate('am_hll_memory', 7, NULL::hll_hashval),
       state.aggregate('am_td_memory', 7, NULL::float8, 100);
SELECT * FROM am_now WHERE b = 'memory';

---------------------------------------------------------------- how further arguments are passed
SELECT state.create_state('am_call', 'aggregating', 'text', 'float8',
                          aggregate => 'tdigest(double precision, integer)');
-- typed, untyped, and every mix of them; an explicit VARIADIC array
SELECT state.aggregate('am_call', 'typed', 1.5::float8, 100),
       state.aggregate('am_call', 'untyped', '1.5', '100'),
       state.aggregate('am_call', 'mixed_1', 1.5::float8, '100'),
       state.aggregate('am_call', 'mixed_2', '1.5', 100),
       state.aggregate('am_call', 'numeric', 1.5, 100::smallint),
       state.aggregate('am_call', 'variadic', 1.5::float8, VARIADIC ARRAY[100]),
       state.aggregate('am_call', 'variadic_text', '1.5', VARIADIC ARRAY['100']);
-- bind parameters sent without a type, as drivers send strings
PREPARE am_untyped AS SELECT state.aggregate($1, $2, $3, $4);
EXECUTE am_untyped('am_call', 'prepared', '1.5', '100');
PREPARE am_half AS SELECT state.aggregate($1, $2, $3::float8, $4);
EXECUTE am_half('am_call', 'prepared_half', 1.5, '100');
SELECT key, value::text = (SELECT tdigest(1.5::float8, 100)::text) AS one_value
  FROM state.entries('am_call', ''::text, NULL::tdigest) ORDER BY key;
DEALLOCATE am_untyped;
DEALLOCATE am_half;

-- wrong calls fail and change nothing
SELECT expect_error($$SELECT state.aggregate('am_call', 'k', 1.5::float8)$$);
SELECT expect_error($$SELECT state.aggregate('am_call', 'k', 1.5::float8, 100, 3)$$);
SELECT expect_error($$SELECT state.aggregate('am_call', 'k', 1.5::float8, true)$$);
SELECT expect_error($$SELECT state.aggregate('am_call', 'k', 1.5::float8, 'many')$$);
SELECT expect_error($$SELECT state.aggregate('am_call', 'k', 1.5::float8, VARIADIC NULL::int[])$$);
SELECT expect_error($$SELECT state.aggregate('am_corr_memory', 1, 1::float8)$$);
SELECT expect_error($$SELECT state.aggregate('am_hll_memory', 1, hll_hash_text('x'), 1)$$);
SELECT expect_error($$SELECT state.aggregate('am_call', 'k', 1.5::float8, VARIADIC ARRAY[[1, 2], [3, 4]])$$);
SELECT count(*) AS untouched FROM state.entries('am_call', ''::text, NULL::tdigest) WHERE key = 'k';

-- a further argument of a collatable type gives the aggregate a collation,
-- as an Agg node does (this transition function compares text)
CREATE FUNCTION am_pick(text, int, text) RETURNS text LANGUAGE sql
    AS 'SELECT CASE WHEN $1 IS NULL OR $3 > $1 THEN $3 ELSE $1 END';
CREATE AGGREGATE am_max_label(int, text) (sfunc = am_pick, stype = text);
SELECT state.create_state('am_label', 'aggregating', 'text', 'int', aggregate => 'am_max_label(int, text)');
SELECT state.aggregate('am_label', 'k', 1, 'pear'), state.aggregate('am_label', 'k', 2, 'apple');
SELECT state.value_get('am_label', 'k', ''::text) AS label,
       (SELECT am_max_label(n, l) FROM (VALUES (1, 'pear'), (2, 'apple')) v(n, l)) AS same;
-- a NULL further argument of a NOT NULL domain is refused, as a cast to it is
CREATE DOMAIN am_nn AS int NOT NULL;
CREATE FUNCTION am_dadd(int8, int8, am_nn) RETURNS int8 LANGUAGE sql AS 'SELECT coalesce($1, 0) + $2';
CREATE AGGREGATE am_dsum(int8, am_nn) (sfunc = am_dadd, stype = int8);
SELECT state.create_state('am_dom', 'aggregating', 'text', 'int8', aggregate => 'am_dsum(int8, am_nn)');
SELECT state.aggregate('am_dom', 'k', 1::int8, 1);
SELECT expect_error($$SELECT state.aggregate('am_dom', 'k', 1::int8, NULL)$$);
SELECT state.value_get('am_dom', 'k', 0::int8) AS one_row;
SELECT state.drop_state('am_label'), state.drop_state('am_dom');
DROP AGGREGATE am_max_label(int, text);
DROP AGGREGATE am_dsum(int8, am_nn);
DROP FUNCTION am_pick, am_dadd;
DROP DOMAIN am_nn;

---------------------------------------------------------------- what cannot be held
-- string_agg's transition state is internal without serial functions in
-- PostgreSQL 15: it could not be stored
SELECT expect_error($$SELECT state.create_state('am_x', 'aggregating', 'int', 'text', aggregate => 'string_agg(text, text)')$$);
-- arguments of pseudo-types
SELECT expect_error($$SELECT state.create_state('am_x', 'aggregating', 'int', 'int', aggregate => 'count("any")')$$);
SELECT expect_error($$SELECT state.create_state('am_x', 'aggregating', 'int', 'text', aggregate => 'json_object_agg("any", "any")')$$);
-- the value type is the aggregate's first argument's
SELECT expect_error($$SELECT state.create_state('am_x', 'aggregating', 'int', 'integer', aggregate => 'tdigest(double precision, integer)')$$);
-- a transition type without binary I/O could not go into a canonical snapshot
CREATE FUNCTION am_keep(hll_hashval, hll_hashval) RETURNS hll_hashval LANGUAGE sql AS 'SELECT $2';
CREATE AGGREGATE am_last(hll_hashval) (sfunc = am_keep, stype = hll_hashval);
SELECT expect_error($$SELECT state.create_state('am_x', 'aggregating', 'int', 'hll_hashval', aggregate => 'am_last(hll_hashval)')$$);
-- ... nor one made of a type without it (aclitem has none; arrays of it send
-- their elements with it)
CREATE FUNCTION am_keep_acl(aclitem[], int) RETURNS aclitem[] LANGUAGE sql AS 'SELECT $1';
CREATE AGGREGATE am_acls(int) (sfunc = am_keep_acl, stype = aclitem[], initcond = '{}');
SELECT expect_error($$SELECT state.create_state('am_x', 'aggregating', 'int', 'int', aggregate => 'am_acls(int)')$$);
-- keys, map keys and the values of other kinds still need binary I/O
SELECT expect_error($$SELECT state.create_state('am_x', 'value', 'int', 'hll_hashval')$$);
SELECT expect_error($$SELECT state.create_state('am_x', 'value', 'hll_hashval', 'int')$$);
SELECT count(*) AS none_created FROM state.states WHERE name = 'am_x';

---------------------------------------------------------------- snapshots of both formats
CREATE TABLE am_conf AS SELECT current_setting('data_directory') AS datadir;
CREATE FUNCTION am_path(name text) RETURNS text LANGUAGE sql AS $$
    SELECT datadir || '/am_' || name || '_' || current_setting('state_backend.backend') FROM am_conf
$$;
SELECT state.drop_state('am_call');
SELECT state.wait_snapshot(state.snapshot(am_path('native'), 'native'));
SELECT state.wait_snapshot(state.snapshot(am_path('canonical'), 'canonical'));
-- read back without a restore: every entry equals the GROUP BY
CREATE FUNCTION am_read(format text) RETURNS TABLE(b text, keys bigint, differ bigint) LANGUAGE sql AS $$
    SELECT b, count(*),
           count(*) FILTER (WHERE h.value::text IS DISTINCT FROM e.hll::text
                               OR t.value::text IS DISTINCT FROM e.td::text
                               OR c.value IS DISTINCT FROM e.corr)
      FROM am_backends, am_expected e,
           state.snapshot_entries(am_path(format), 'am_hll_' || b, 0, NULL::hll) h,
           state.snapshot_entries(am_path(format), 'am_td_' || b, 0, NULL::tdigest) t,
           state.snapshot_entries(am_path(format), 'am_corr_' || b, 0, NULL::float8) c
     WHERE h.key = e.k AND t.key = e.k AND c.key = e.k
     GROUP BY b ORDER BY b
$$;
SELECT * FROM am_read('native');
SELECT * FROM am_read('canonical');
-- more values after the snapshots, which a restore undoes
SELECT count(state.aggregate('am_td_' || b, 1, 1e6::float8, 100)) FROM am_backends;
SELECT sum(td_differ) AS differ_before_restore FROM am_now;
SELECT state.restore(am_path('native')) > 0 AS restored_native;
SELECT * FROM am_now;
SELECT state.restore(am_path('canonical')) > 0 AS restored_canonical;
SELECT * FROM am_now;
-- a canonical snapshot into one backend, then another
SELECT state.restore(am_path('canonical'), backend => 'rocksdb') > 0 AS into_rocksdb;
SELECT count(*) FILTER (WHERE backend = 'rocksdb') AS in_rocksdb FROM state.states WHERE name LIKE 'am\_%';
SELECT * FROM am_now;
SELECT state.restore(am_path('canonical'), backend => 'memory') > 0 AS into_memory;
SELECT count(*) FILTER (WHERE backend = 'memory') AS in_memory FROM state.states WHERE name LIKE 'am\_%';
SELECT * FROM am_now;
-- and the restored states fold on
SELECT state.aggregate('am_hll_memory', 7, hll_hash_text('someone new'));
SELECT hll_cardinality(state.value_get('am_hll_memory', 7, NULL::hll))
       > hll_cardinality((SELECT hll FROM am_expected WHERE k = 7)) AS one_more;

SELECT count(state.drop_state(name)) FROM state.states WHERE name LIKE 'am\_%';
DROP VIEW am_now;
DROP VIEW am_expected;
DROP TABLE am_rows, am_backends, am_conf;
DROP AGGREGATE am_last(hll_hashval);
DROP AGGREGATE am_acls(int);
DROP FUNCTION am_keep_acl;
DROP FUNCTION am_keep, am_pct, am_read, am_path;
DROP EXTENSION hll;
DROP EXTENSION tdigest;
