--
-- types: typed keys and values, untyped literals read with the declared type,
-- implicit casts, the default argument fixing the result type, state.keys,
-- state.key_group.
--
CREATE TYPE types_pair AS (a int, b text);

---------------------------------------------------------------- keys
SELECT state.create_state('t_text', 'value', 'text', 'text');
SELECT state.create_state('t_big',  'value', 'bigint', 'text');
SELECT state.create_state('t_uuid', 'value', 'uuid', 'text');
SELECT state.create_state('t_pair', 'value', 'types_pair', 'text');
SELECT state.create_state('t_int4', 'value', 'int4', 'text');
SELECT state.create_state('t_num',  'value', 'numeric', 'text');
SELECT state.create_state('t_date', 'value', 'date', 'text');
SELECT name, key_type, value_type FROM state.states WHERE name LIKE 't\_%' ORDER BY name;

-- text keys
SELECT state.value_set('t_text', 'alpha', 'A');
SELECT state.value_set('t_text', 'beta'::text, 'B');
SELECT state.value_set('t_text', 'Alpha', 'A upper');
SELECT state.value_get('t_text', 'alpha', NULL::text),
       state.value_get('t_text', 'beta', NULL::text),
       state.value_get('t_text', 'Alpha'::text, NULL::text),
       state.value_get('t_text', 'gamma', 'none'::text);

-- bigint keys: typed, untyped literal (read with int8in), int4 (implicit cast)
SELECT state.value_set('t_big', 42::bigint, 'forty-two');
SELECT state.value_set('t_big', '7', 'seven');
SELECT state.value_set('t_big', 9000000000, 'nine billion');
SELECT state.value_set('t_big', -1, 'minus one');
SELECT state.value_get('t_big', 42, NULL::text) AS int4_key,
       state.value_get('t_big', '42', NULL::text) AS literal_key,
       state.value_get('t_big', ' 042', NULL::text) AS literal_read_by_int8in,
       state.value_get('t_big', 7::bigint, NULL::text) AS typed_key,
       state.value_get('t_big', 7::smallint, NULL::text) AS int2_key,
       state.value_get('t_big', 9000000000, NULL::text) AS big_key,
       state.value_get('t_big', -1::bigint, NULL::text) AS negative_key;

-- uuid keys: the literal is read with uuid_in, so every spelling is one key
SELECT state.value_set('t_uuid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, 'u1');
SELECT state.value_set('t_uuid', '{B0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A12}', 'u2');
SELECT state.value_get('t_uuid', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', NULL::text),
       state.value_get('t_uuid', 'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12'::uuid, NULL::text),
       state.value_get('t_uuid', 'b0eebc999c0b4ef8bb6d6bb9bd380a12', NULL::text),
       state.value_get('t_uuid', gen_random_uuid(), 'absent'::text);

-- composite keys: a row value and its literal are the same key
SELECT state.value_set('t_pair', ROW(1, 'a')::types_pair, 'one-a');
SELECT state.value_set('t_pair', '(2,b)', 'two-b');
SELECT state.value_get('t_pair', '(1,a)', NULL::text),
       state.value_get('t_pair', ROW(2, 'b')::types_pair, NULL::text),
       state.value_get('t_pair', ROW(1, 'b')::types_pair, 'absent'::text);

-- int4, numeric and date keys
SELECT state.value_set('t_int4', 5, 'five');
SELECT state.value_set('t_int4', '-6', 'minus six');
SELECT state.value_get('t_int4', '5', NULL::text), state.value_get('t_int4', -6, NULL::text),
       state.value_get('t_int4', 5::smallint, NULL::text);
SELECT state.value_set('t_num', 1.5, 'one and a half');
SELECT state.value_set('t_num', 3, 'three');
SELECT state.value_get('t_num', '1.5', NULL::text), state.value_get('t_num', 1.5::numeric, NULL::text),
       state.value_get('t_num', 3::numeric, NULL::text), state.value_get('t_num', '3', NULL::text);
SELECT state.value_set('t_date', '2024-02-29', 'leap day');
SELECT state.value_set('t_date', date '2000-01-01', 'y2k');
SELECT state.value_get('t_date', date '2024-02-29', NULL::text),
       state.value_get('t_date', '2000-01-01', NULL::text),
       state.value_get('t_date', '2000-01-02', 'absent'::text);

---------------------------------------------------------------- state.keys
-- every key, typed by the default argument
SELECT k, pg_typeof(k) FROM state.keys('t_big', NULL::bigint) AS k ORDER BY k;
SELECT k FROM state.keys('t_text', NULL::text) AS k ORDER BY k COLLATE "C";
SELECT k FROM state.keys('t_uuid', NULL::uuid) AS k ORDER BY k;
SELECT k.a, k.b FROM state.keys('t_pair', NULL::types_pair) AS k ORDER BY k.a;
SELECT k FROM state.keys('t_date', NULL::date) AS k ORDER BY k;
SELECT k FROM state.keys('t_num', NULL::numeric) AS k ORDER BY k;
-- an untyped default gives the keys as text
SELECT k, pg_typeof(k) FROM state.keys('t_int4', NULL) AS k ORDER BY k;
-- a removed key is no longer listed
SELECT state.clear('t_big', 7);
SELECT k FROM state.keys('t_big', NULL::bigint) AS k ORDER BY k;

---------------------------------------------------------------- state.key_group
-- in [0, max_parallelism), stable, equal for equal keys however spelled
SELECT state.key_group('t_big', 42) >= 0
   AND state.key_group('t_big', 42) < current_setting('state_backend.max_parallelism')::int AS in_range;
SELECT state.key_group('t_big', 42) = state.key_group('t_big', 42) AS stable;
SELECT state.key_group('t_big', 42) = state.key_group('t_big', 42::bigint)
   AND state.key_group('t_big', 42) = state.key_group('t_big', '42')
   AND state.key_group('t_big', 42) = state.key_group('t_big', '042') AS equal_keys;
SELECT state.key_group('t_uuid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid)
     = state.key_group('t_uuid', '{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}') AS equal_uuid_keys;
SELECT state.key_group('t_pair', ROW(1, 'a')::types_pair) = state.key_group('t_pair', '(1,a)')
       AS equal_composite_keys;
-- a key's group does not depend on whether it holds state
SELECT state.key_group('t_big', 123456) = state.key_group('t_big', 123456::bigint) AS absent_key;
-- every key of many falls in range, and they spread over the groups
SELECT min(g) >= 0 AS min_ok,
       max(g) < current_setting('state_backend.max_parallelism')::int AS max_ok,
       count(DISTINCT g) >= 64 AS spread
  FROM (SELECT state.key_group('t_big', i) AS g FROM generate_series(1, 2000) i) s;
SELECT count(DISTINCT state.key_group('t_text', 'user-' || i)) >= 64 AS spread_text
  FROM generate_series(1, 2000) i;
-- the same key gives the same group on every call
SELECT count(*) AS unstable
  FROM generate_series(1, 200) i
 WHERE state.key_group('t_text', 'user-' || i) <> state.key_group('t_text', ('user-' || i)::text);

---------------------------------------------------------------- values
SELECT state.create_state('v_big',  'value', 'text', 'bigint');
SELECT state.create_state('v_json', 'value', 'text', 'jsonb');
SELECT state.create_state('v_text', 'value', 'text', 'text');
SELECT state.create_state('v_num',  'value', 'text', 'numeric');
SELECT state.create_state('v_pair', 'value', 'text', 'types_pair');
SELECT state.create_state('v_ints', 'value', 'text', 'int4[]');
SELECT state.create_state('v_texts', 'value', 'text', 'text[]');

-- bigint: typed, int4 (implicit cast), untyped literal
SELECT state.value_set('v_big', 'typed', 9223372036854775807::bigint);
SELECT state.value_set('v_big', 'int4', 42);
SELECT state.value_set('v_big', 'literal', '-17');
SELECT k, state.value_get('v_big', k, NULL::bigint) AS v
  FROM unnest(ARRAY['typed', 'int4', 'literal']) AS k ORDER BY k;

-- jsonb: the literal is read as jsonb (normalised)
SELECT state.value_set('v_json', 'doc', '{"b": [1, 2, {"c": null}], "a": "x"}');
SELECT state.value_set('v_json', 'typed', '{"n": 1.50}'::jsonb);
SELECT state.value_get('v_json', 'doc', NULL::jsonb);
SELECT state.value_get('v_json', 'doc', NULL::jsonb) -> 'b' -> 2 AS nested,
       state.value_get('v_json', 'typed', NULL::jsonb) ->> 'n' AS n;

-- text, with characters that need care
SELECT state.value_set('v_text', 'k', 'hello, world ' || E'\\ ''quoted'' "dq"\ttab');
SELECT state.value_get('v_text', 'k', NULL::text) = E'hello, world \\ ''quoted'' "dq"\ttab' AS same_text;
SELECT state.value_set('v_text', 'multibyte', 'héllo wörld ✓');
SELECT state.value_get('v_text', 'multibyte', NULL::text) = 'héllo wörld ✓' AS same_multibyte;
SELECT state.value_set('v_text', 'empty', '');
SELECT state.value_get('v_text', 'empty', 'default'::text) = '' AS empty_string_kept;

-- numeric keeps its scale; int4 is cast implicitly
SELECT state.value_set('v_num', 'pi', 3.14159265358979323846264338327950288);
SELECT state.value_set('v_num', 'scale', '2.500');
SELECT state.value_set('v_num', 'int', 7);
SELECT state.value_get('v_num', 'pi', NULL::numeric),
       state.value_get('v_num', 'scale', NULL::numeric),
       state.value_get('v_num', 'int', NULL::numeric);

-- composite
SELECT state.value_set('v_pair', 'row', ROW(2, 'b')::types_pair);
SELECT state.value_set('v_pair', 'literal', '(3,"c d")');
SELECT state.value_get('v_pair', 'row', NULL::types_pair);
SELECT (state.value_get('v_pair', 'literal', NULL::types_pair)).b;

-- arrays
SELECT state.value_set('v_ints', 'k', ARRAY[1, 2, 3]);
SELECT state.value_set('v_ints', 'lit', '{4,NULL,6}');
SELECT state.value_set('v_ints', 'empty', '{}'::int[]);
SELECT state.value_get('v_ints', 'k', NULL::int[]),
       state.value_get('v_ints', 'lit', NULL::int[]),
       state.value_get('v_ints', 'empty', NULL::int[]);
SELECT (state.value_get('v_ints', 'k', NULL::int[]))[2] AS second;
SELECT state.value_set('v_texts', 'k', ARRAY['a', 'b c', NULL]);
SELECT state.value_set('v_texts', 'lit', '{x,"y z"}');
SELECT state.value_get('v_texts', 'k', NULL::text[]), state.value_get('v_texts', 'lit', NULL::text[]);

---------------------------------------------------------------- the default fixes the result type
SELECT pg_typeof(state.value_get('v_big', 'int4', 0::bigint)) AS bigint_default,
       pg_typeof(state.value_get('v_json', 'doc', NULL::jsonb)) AS jsonb_default,
       pg_typeof(state.value_get('v_pair', 'row', NULL::types_pair)) AS composite_default,
       pg_typeof(state.value_get('v_ints', 'k', NULL::int[])) AS array_default;
-- the default's value is returned, in its type, when the key is absent
SELECT state.value_get('v_big', 'absent', 5::bigint) AS bigint_default,
       state.value_get('v_json', 'absent', '{"d": true}'::jsonb) AS jsonb_default,
       state.value_get('v_pair', 'absent', ROW(0, 'zero')::types_pair) AS composite_default,
       state.value_get('v_ints', 'absent', ARRAY[9]) AS array_default,
       state.value_get('v_big', 'absent', NULL::bigint) IS NULL AS null_default;

---------------------------------------------------------------- more key types
-- array keys
SELECT state.create_state('t_arr', 'value', 'int[]', 'text');
SELECT state.value_set('t_arr', ARRAY[1, 2], 'one two');
SELECT state.value_set('t_arr', '{3,4}', 'three four');
SELECT state.value_get('t_arr', '{1,2}', NULL::text), state.value_get('t_arr', ARRAY[3, 4], NULL::text),
       state.value_get('t_arr', ARRAY[2, 1], 'absent'::text);
SELECT k FROM state.keys('t_arr', NULL::int[]) AS k ORDER BY k;
-- jsonb keys: equal documents are one key, whatever their spelling
SELECT state.create_state('t_json', 'value', 'jsonb', 'text');
SELECT state.value_set('t_json', '{"b": 1, "a": 2}', 'doc');
SELECT state.value_get('t_json', '{"a":2,"b":1}'::jsonb, NULL::text);
SELECT k FROM state.keys('t_json', NULL::jsonb) AS k;
-- timestamptz keys are instants: the session time zone does not matter
SELECT state.create_state('t_ts', 'value', 'timestamptz', 'text');
SET timezone = 'UTC';
SELECT state.value_set('t_ts', '2024-01-01 00:00:00+00', 'new year');
SET timezone = 'America/New_York';
SELECT state.value_get('t_ts', '2023-12-31 19:00:00', NULL::text) AS local_spelling,
       state.value_get('t_ts', timestamptz '2024-01-01 00:00:00 UTC', NULL::text) AS typed;
RESET timezone;

-- composite map keys and values come back as rows
SELECT state.create_state('v_map_pair', 'map', 'types_pair', 'types_pair', map_key_type => 'types_pair');
SELECT state.map_put('v_map_pair', ROW(1, 'k')::types_pair, ROW(2, 'mk')::types_pair, ROW(3, 'v')::types_pair);
SELECT state.map_put('v_map_pair', '(1,k)', '(4,mk2)', '(5,v2)');
SELECT map_key, value FROM state.map_entries('v_map_pair', ROW(1, 'k')::types_pair, NULL::types_pair, NULL::types_pair)
 ORDER BY (map_key).a;
SELECT (map_key).a, (value).b FROM state.map_entries('v_map_pair', '(1,k)', NULL::types_pair, NULL::types_pair)
 ORDER BY 1;
SELECT (state.map_get('v_map_pair', '(1,k)', '(2,mk)', NULL::types_pair)).b;

SELECT state.drop_state(name) FROM state.states WHERE name ~ '^[tv]_' ORDER BY name;
SELECT count(*) FROM state.states;
DROP TYPE types_pair;
