--
-- map: MapState.  map_put, map_put_all, map_get, map_remove, map_contains,
-- map_entries, map_size, map_is_empty; NULL map values.
--
SELECT state.create_state('mp', 'map', 'text', 'bigint');
SELECT kind, key_type, map_key_type, value_type FROM state.states WHERE name = 'mp';

-- absent key
SELECT state.map_get('mp', 'k', 'a', -1::bigint) AS absent,
       state.map_contains('mp', 'k', 'a') AS contains,
       state.map_size('mp', 'k') AS size,
       state.map_is_empty('mp', 'k') AS is_empty;
SELECT count(*) FROM state.map_entries('mp', 'k', NULL::text, NULL::bigint);

-- map_put: typed value, int4 value (implicit cast), untyped map key and value
SELECT state.map_put('mp', 'k', 'a', 1::bigint);
SELECT state.map_put('mp', 'k', 'b'::text, 2);
SELECT state.map_put('mp', 'k', 'c', '3');
SELECT state.map_get('mp', 'k', 'a', -1::bigint) AS a,
       state.map_get('mp', 'k', 'b', -1::bigint) AS b,
       state.map_get('mp', 'k', 'c'::text, -1::bigint) AS c,
       state.map_get('mp', 'k', 'd', -1::bigint) AS d_absent,
       pg_typeof(state.map_get('mp', 'k', 'a', -1::bigint)) AS type;
SELECT state.map_size('mp', 'k'), state.map_is_empty('mp', 'k');
SELECT state.map_contains('mp', 'k', 'a') AS a, state.map_contains('mp', 'k', 'd') AS d,
       state.map_contains('mp', 'other', 'a') AS other_key;
SELECT * FROM state.map_entries('mp', 'k', NULL::text, NULL::bigint) ORDER BY map_key;
SELECT pg_typeof(map_key) AS key_type, pg_typeof(value) AS value_type
  FROM state.map_entries('mp', 'k', NULL::text, NULL::bigint) LIMIT 1;

-- map_put on an existing map key replaces its value
SELECT state.map_put('mp', 'k', 'a', 10::bigint);
SELECT state.map_get('mp', 'k', 'a', -1::bigint), state.map_size('mp', 'k');

-- map_put_all: typed arrays, an int4[] (implicit cast), literals
SELECT state.map_put_all('mp', 'k', ARRAY['x', 'y'], ARRAY[7, 8]::bigint[]);
SELECT state.map_put_all('mp', 'k', ARRAY['z'], ARRAY[9]);
SELECT state.map_put_all('mp', 'k', '{p,q,a}', '{11,12,13}');
SELECT * FROM state.map_entries('mp', 'k', NULL::text, NULL::bigint) ORDER BY map_key;
SELECT state.map_size('mp', 'k');
-- an empty map_put_all changes nothing
SELECT state.map_put_all('mp', 'k', '{}'::text[], '{}'::bigint[]);
SELECT state.map_size('mp', 'k');

-- map_remove: true if the map key was there
SELECT state.map_remove('mp', 'k', 'x') AS removed;
SELECT state.map_remove('mp', 'k', 'x') AS removed_again;
SELECT state.map_remove('mp', 'absent', 'x') AS removed_from_absent_key;
SELECT state.map_contains('mp', 'k', 'x'), state.map_get('mp', 'k', 'x', -1::bigint),
       state.map_size('mp', 'k');

-- NULL map values are stored, and are not the default
SELECT state.map_put('mp', 'k', 'n', NULL::bigint);
SELECT state.map_contains('mp', 'k', 'n') AS contains_n,
       state.map_get('mp', 'k', 'n', -1::bigint) IS NULL AS value_is_null,
       state.map_size('mp', 'k') AS size;
SELECT map_key, value IS NULL AS null_value
  FROM state.map_entries('mp', 'k', NULL::text, NULL::bigint) WHERE map_key IN ('n', 'a') ORDER BY map_key;
SELECT state.map_put('mp', 'k', 'n2', NULL);
SELECT state.map_contains('mp', 'k', 'n2'), state.map_get('mp', 'k', 'n2', -1::bigint) IS NULL;
SELECT state.map_put_all('mp', 'k', ARRAY['n3', 'v3'], ARRAY[NULL, 33]::bigint[]);
SELECT map_key, value FROM state.map_entries('mp', 'k', NULL::text, NULL::bigint)
 WHERE map_key LIKE 'n%' OR map_key LIKE 'v%' ORDER BY map_key;
SELECT state.map_remove('mp', 'k', 'n') AS removed_null_value;
SELECT state.map_contains('mp', 'k', 'n');

-- keys are independent maps
SELECT state.map_put('mp', 'k2', 'a', 100::bigint);
SELECT state.map_get('mp', 'k', 'a', -1::bigint) AS k_a, state.map_get('mp', 'k2', 'a', -1::bigint) AS k2_a,
       state.map_size('mp', 'k2') AS k2_size;

-- removing every map key leaves an empty map
SELECT state.map_remove('mp', 'k2', 'a');
SELECT state.map_size('mp', 'k2'), state.map_is_empty('mp', 'k2'),
       state.map_get('mp', 'k2', 'a', -1::bigint);

-- clear removes the whole map of a key
SELECT state.clear('mp', 'k') AS had_state;
SELECT state.map_size('mp', 'k'), state.map_is_empty('mp', 'k'),
       state.map_get('mp', 'k', 'a', -1::bigint);
SELECT count(*) FROM state.map_entries('mp', 'k', NULL::text, NULL::bigint);

-- typed map keys and values: int4 map keys, jsonb values, uuid keys
SELECT state.create_state('mp_typed', 'map', 'uuid', 'jsonb', map_key_type => 'int4');
SELECT state.map_put('mp_typed', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 10, '{"ten": 10}');
SELECT state.map_put('mp_typed', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 2, '[2]'::jsonb);
SELECT state.map_put('mp_typed', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '-1', '"minus"');
SELECT state.map_put('mp_typed', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, 3::smallint, 'null'::jsonb);
-- map keys come back as int4, so ordering is numeric
SELECT map_key, value
  FROM state.map_entries('mp_typed', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, NULL::int4, NULL::jsonb)
 ORDER BY map_key;
SELECT state.map_get('mp_typed', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 10, NULL::jsonb) ->> 'ten' AS ten,
       state.map_get('mp_typed', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2', NULL::jsonb) AS two,
       state.map_contains('mp_typed', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '-1') AS has_minus_one,
       state.map_size('mp_typed', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11') AS size;
SELECT pg_typeof(map_key) AS map_key_type, pg_typeof(value) AS value_type
  FROM state.map_entries('mp_typed', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', NULL::int4, NULL::jsonb)
 LIMIT 1;
SELECT state.map_remove('mp_typed', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 10) AS removed_10;
SELECT state.map_contains('mp_typed', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 10) AS has_10;

-- a bigger map: every entry comes back once
SELECT state.create_state('mp_big', 'map', 'bigint', 'text', map_key_type => 'bigint');
SELECT state.map_put_all('mp_big', 1, ARRAY(SELECT generate_series(1, 1000)::bigint),
                         ARRAY(SELECT 'v' || generate_series(1, 1000)));
SELECT state.map_size('mp_big', 1);
SELECT count(*), count(DISTINCT map_key), min(map_key), max(map_key),
       bool_and(value = 'v' || map_key) AS values_match
  FROM state.map_entries('mp_big', 1, NULL::bigint, NULL::text);
SELECT state.map_get('mp_big', 1, 777, NULL::text);

SELECT state.drop_state('mp');
SELECT state.drop_state('mp_typed');
SELECT state.drop_state('mp_big');

-- The bytes a state counts follow every change, in place or not, and come
-- back to nothing when its keys are cleared: values set with other
-- lengths, lists grown and replaced, maps grown, shrunk and replaced.
SELECT state.create_state('acct_v', 'value', 'int', 'text');
SELECT state.create_state('acct_l', 'list', 'int', 'text');
SELECT state.create_state('acct_m', 'map', 'int', 'text', map_key_type => 'int');
SELECT count(state.value_set('acct_v', i % 50, repeat('x', i % 40))) FROM generate_series(1, 2000) i;
SELECT count(state.list_add('acct_l', i % 50, repeat('y', i % 7))) FROM generate_series(1, 2000) i;
SELECT count(state.list_update('acct_l', i, ARRAY['a', 'bb'])) FROM generate_series(0, 9) i;
SELECT count(state.list_add('acct_l', i % 20, 'after')) FROM generate_series(1, 100) i;
SELECT count(state.map_put('acct_m', i % 50, i % 13, repeat('z', i % 9))) FROM generate_series(1, 2000) i;
SELECT count(state.map_remove('acct_m', i % 50, i % 5)) FROM generate_series(1, 500) i;
SELECT count(state.map_put_all('acct_m', i, ARRAY[1, 2], ARRAY['one', 'two'])) FROM generate_series(0, 9) i;
SELECT count(state.map_put('acct_m', i % 20, 99, 'later')) FROM generate_series(1, 100) i;
SELECT name, entries, bytes > 0 AS has_bytes FROM state.states WHERE name LIKE 'acct_%' ORDER BY name;
SELECT count(state.clear(n, k)) FROM unnest(ARRAY['acct_v', 'acct_l', 'acct_m']) n, generate_series(0, 49) k;
SELECT name, entries, CASE WHEN backend = 'rocksdb' THEN true ELSE bytes = 0 END AS no_bytes
  FROM state.states WHERE name LIKE 'acct_%' ORDER BY name;
SELECT state.drop_state('acct_v');
SELECT state.drop_state('acct_l');
SELECT state.drop_state('acct_m');
