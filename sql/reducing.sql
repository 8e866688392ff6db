--
-- reducing: ReducingState.  reduce with sum / min / max over bigint, int4,
-- numeric, float8 (min / max on text and date too), value_get on a reducing
-- state, overflow.
--

---------------------------------------------------------------- sum
SELECT state.create_state('r_sum_big', 'reducing', 'text', 'bigint', reducer => 'sum');
SELECT kind, reducer, value_type FROM state.states WHERE name = 'r_sum_big';
SELECT state.value_get('r_sum_big', 'k', -1::bigint) AS absent;
-- each call returns the new result
SELECT state.reduce('r_sum_big', 'k', 5::bigint);
SELECT state.reduce('r_sum_big', 'k', 10::bigint);
-- the result comes back in the type of the value passed
SELECT pg_typeof(state.reduce('r_sum_big', 'k', 3));
SELECT state.value_get('r_sum_big', 'k', -1::bigint) AS after_int4;
-- an untyped literal is read as bigint; the result is text then
SELECT r, pg_typeof(r) FROM (SELECT state.reduce('r_sum_big', 'k', '2') AS r OFFSET 0) s;
SELECT state.value_get('r_sum_big', 'k', -1::bigint) AS after_literal;
SELECT state.reduce('r_sum_big', 'k', -25::bigint) AS negative;
-- keys are independent
SELECT state.reduce('r_sum_big', 'k2', 1::bigint) AS k2;
SELECT state.value_get('r_sum_big', 'k', -1::bigint) AS k, state.value_get('r_sum_big', 'k2', -1::bigint) AS k2;
-- many calls: 1 + 2 + ... + 1000
SELECT max(r) AS last_result FROM (
    SELECT state.reduce('r_sum_big', 'many', i::bigint) AS r FROM generate_series(1, 1000) i) s;
SELECT state.value_get('r_sum_big', 'many', -1::bigint) AS sum_1_to_1000;

-- bigint overflow: 22003, the state is unchanged and still usable
SELECT state.reduce('r_sum_big', 'max', 9223372036854775807);
SELECT expect_error($$SELECT state.reduce('r_sum_big', 'max', 1::bigint)$$);
SELECT state.value_get('r_sum_big', 'max', -1::bigint) AS unchanged;
SELECT expect_error($$SELECT state.reduce('r_sum_big', 'max', 9223372036854775807)$$);
SELECT state.value_get('r_sum_big', 'max', -1::bigint) AS unchanged;
SELECT state.reduce('r_sum_big', 'max', -1::bigint) AS still_usable;
SELECT state.reduce('r_sum_big', 'min', '-9223372036854775808'::bigint);
SELECT expect_error($$SELECT state.reduce('r_sum_big', 'min', -1::bigint)$$);
SELECT state.value_get('r_sum_big', 'min', -1::bigint) AS unchanged;

-- int4
SELECT state.create_state('r_sum_int', 'reducing', 'text', 'int4', reducer => 'sum');
SELECT v, state.reduce('r_sum_int', 'k', v) AS r
  FROM unnest(ARRAY[2147483600, 40, 7, -100]) WITH ORDINALITY AS t(v, n) ORDER BY n;
SELECT state.reduce('r_sum_int', 'k', 100);
SELECT expect_error($$SELECT state.reduce('r_sum_int', 'k', 1)$$);
SELECT state.value_get('r_sum_int', 'k', -1) AS unchanged;

-- numeric: exact
SELECT state.create_state('r_sum_num', 'reducing', 'text', 'numeric', reducer => 'sum');
SELECT v, state.reduce('r_sum_num', 'k', v) AS r
  FROM unnest(ARRAY[1.5, 2.25, 0.1, 0.2]) WITH ORDINALITY AS t(v, n) ORDER BY n;
SELECT state.reduce('r_sum_num', 'k', 1);
SELECT state.reduce('r_sum_num', 'k', 123456789012345678901234567890.000001);
SELECT state.value_get('r_sum_num', 'k', NULL::numeric);

-- float8
SELECT state.create_state('r_sum_f8', 'reducing', 'text', 'float8', reducer => 'sum');
SELECT v, state.reduce('r_sum_f8', 'k', v) AS r
  FROM unnest(ARRAY[0.5, 0.25, -2, 1e10]::float8[]) WITH ORDINALITY AS t(v, n) ORDER BY n;
SELECT state.value_get('r_sum_f8', 'k', NULL::float8);

---------------------------------------------------------------- min and max
SELECT state.create_state('r_min_big', 'reducing', 'text', 'bigint', reducer => 'min');
SELECT state.create_state('r_max_big', 'reducing', 'text', 'bigint', reducer => 'max');
SELECT v, state.reduce('r_min_big', 'k', v) AS min, state.reduce('r_max_big', 'k', v) AS max
  FROM unnest(ARRAY[5, 3, 8, -2, 4]::bigint[]) WITH ORDINALITY AS t(v, n) ORDER BY n;
SELECT state.value_get('r_min_big', 'k', 0::bigint) AS min, state.value_get('r_max_big', 'k', 0::bigint) AS max;
SELECT state.reduce('r_min_big', 'k', 9223372036854775807) AS min_unchanged,
       state.reduce('r_max_big', 'k', 9223372036854775807) AS max_now;

SELECT state.create_state('r_min_int', 'reducing', 'bigint', 'int4', reducer => 'min');
SELECT state.create_state('r_max_int', 'reducing', 'bigint', 'int4', reducer => 'max');
SELECT v, state.reduce('r_min_int', 1, v) AS min, state.reduce('r_max_int', 1, v) AS max
  FROM unnest(ARRAY[0, -7, 12, 3]) WITH ORDINALITY AS t(v, n) ORDER BY n;

SELECT state.create_state('r_min_num', 'reducing', 'text', 'numeric', reducer => 'min');
SELECT state.create_state('r_max_num', 'reducing', 'text', 'numeric', reducer => 'max');
SELECT v, state.reduce('r_min_num', 'k', v) AS min, state.reduce('r_max_num', 'k', v) AS max
  FROM unnest(ARRAY[2.5, 2.49, 10, -0.001, 2.50001]) WITH ORDINALITY AS t(v, n) ORDER BY n;

SELECT state.create_state('r_min_f8', 'reducing', 'text', 'float8', reducer => 'min');
SELECT state.create_state('r_max_f8', 'reducing', 'text', 'float8', reducer => 'max');
SELECT v, state.reduce('r_min_f8', 'k', v) AS min, state.reduce('r_max_f8', 'k', v) AS max
  FROM unnest(ARRAY[1.5, -1e-5, 3e20, 0]::float8[]) WITH ORDINALITY AS t(v, n) ORDER BY n;

-- text: ordered by the type's ordering
SELECT state.create_state('r_min_text', 'reducing', 'text', 'text', reducer => 'min');
SELECT state.create_state('r_max_text', 'reducing', 'text', 'text', reducer => 'max');
SELECT v, state.reduce('r_min_text', 'k', v) AS min, state.reduce('r_max_text', 'k', v) AS max
  FROM unnest(ARRAY['pear', 'apple', 'zebra', 'mango', 'apples']) WITH ORDINALITY AS t(v, n) ORDER BY n;
SELECT state.value_get('r_min_text', 'k', NULL::text) AS min, state.value_get('r_max_text', 'k', NULL::text) AS max;

-- date
SELECT state.create_state('r_min_date', 'reducing', 'text', 'date', reducer => 'min');
SELECT state.create_state('r_max_date', 'reducing', 'text', 'date', reducer => 'max');
SELECT v, state.reduce('r_min_date', 'k', v) AS min, state.reduce('r_max_date', 'k', v) AS max
  FROM unnest(ARRAY['2024-03-01', '1999-12-31', '2030-01-01', '2024-02-29']::date[]) WITH ORDINALITY AS t(v, n)
 ORDER BY n;
SELECT state.reduce('r_min_date', 'k', '1970-01-01') AS literal_min;
SELECT state.value_get('r_min_date', 'k', NULL::date) AS min, state.value_get('r_max_date', 'k', NULL::date) AS max;

---------------------------------------------------------------- clear and truncate
SELECT state.clear('r_sum_big', 'k') AS had_state;
SELECT state.value_get('r_sum_big', 'k', -1::bigint) AS cleared;
SELECT state.reduce('r_sum_big', 'k', 7::bigint) AS starts_again;
SELECT state.truncate('r_min_big') AS removed;
SELECT state.reduce('r_min_big', 'k', 100::bigint) AS starts_again;
SELECT k FROM state.keys('r_sum_big', NULL::text) AS k ORDER BY k;

SELECT state.drop_state('r_sum_big');
SELECT state.drop_state('r_sum_int');
SELECT state.drop_state('r_sum_num');
SELECT state.drop_state('r_sum_f8');
SELECT state.drop_state('r_min_big');
SELECT state.drop_state('r_max_big');
SELECT state.drop_state('r_min_int');
SELECT state.drop_state('r_max_int');
SELECT state.drop_state('r_min_num');
SELECT state.drop_state('r_max_num');
SELECT state.drop_state('r_min_f8');
SELECT state.drop_state('r_max_f8');
SELECT state.drop_state('r_min_text');
SELECT state.drop_state('r_max_text');
SELECT state.drop_state('r_min_date');
SELECT state.drop_state('r_max_date');
