--
-- entries: every key of a state with its value, as a table typed by the
-- defaults: value, reducing, aggregating and list states.
--
SELECT state.create_state('en_v', 'value', 'int', 'bigint');
SELECT state.create_state('en_r', 'reducing', 'text', 'numeric', reducer => 'sum');
SELECT state.create_state('en_a', 'aggregating', 'int', 'float8', aggregate => 'avg(float8)');
SELECT state.create_state('en_l', 'list', 'int', 'text');
SELECT state.create_state('en_m', 'map', 'int', 'int', map_key_type => 'int');
SELECT count(state.value_set('en_v', i, i * 10::bigint)) FROM generate_series(1, 1000) i;
SELECT count(state.reduce('en_r', 'k' || (i % 7), i::numeric)) FROM generate_series(1, 700) i;
SELECT count(state.aggregate('en_a', i % 5, i::float8)) FROM generate_series(1, 100) i;
SELECT count(state.list_add('en_l', i % 3, 'e' || i)) FROM generate_series(1, 9) i;
SELECT state.map_put('en_m', 1, 1, 1);

-- every key once, with its value
SELECT count(*), count(DISTINCT key), sum(value), sum(key * 10) = sum(value) AS values_match
  FROM state.entries('en_v', NULL::int, NULL::bigint);
SELECT * FROM state.entries('en_r', ''::text, 0::numeric) ORDER BY key;
SELECT key, value FROM state.entries('en_a', 0, 0::float8) ORDER BY key;
SELECT key, value = (SELECT avg(i) FROM generate_series(1, 100) i WHERE i % 5 = key) AS same
  FROM state.entries('en_a', 0, 0::float8) ORDER BY key;
SELECT key, (SELECT array_agg(x ORDER BY x) FROM unnest(value) x) AS elements
  FROM state.entries('en_l', 0, NULL::text[]) ORDER BY key;
-- the defaults' types are the columns' types: values are cast to them
SELECT pg_typeof(key), pg_typeof(value), sum(value) FROM state.entries('en_v', NULL::bigint, NULL::numeric)
 GROUP BY 1, 2;
-- an empty state has no rows
SELECT state.truncate('en_v');
SELECT count(*) FROM state.entries('en_v', NULL::int, NULL::bigint);

-- maps and operator state are refused, as are other roles without read
SELECT expect_error($$SELECT * FROM state.entries('en_m', 0, 0)$$);
SELECT state.create_state('en_op', 'operator_list', value_type => 'int');
SELECT expect_error($$SELECT * FROM state.entries('en_op', 0, 0)$$);
SELECT expect_error($$SELECT * FROM state.entries('en_nope', 0, 0)$$);
SELECT expect_error($$SELECT * FROM state.entries('en_r', 0, 0::numeric)$$);
CREATE ROLE en_role;
SET ROLE en_role;
SELECT expect_error($$SELECT * FROM state.entries('en_r', ''::text, 0::numeric)$$);
RESET ROLE;
DROP ROLE en_role;

SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'en\_%' ORDER BY name;
