--
-- errors: every error of the contract, with its SQLSTATE, and after each one
-- a read showing that the states are unchanged.  (The error for a library
-- that is not preloaded cannot be reached here: this server preloads it.)
--
SELECT state.create_state('e_val', 'value', 'bigint', 'bigint');
SELECT state.create_state('e_list', 'list', 'bigint', 'bigint');
SELECT state.create_state('e_map', 'map', 'bigint', 'bigint', map_key_type => 'int4');
SELECT state.create_state('e_red', 'reducing', 'bigint', 'bigint', reducer => 'sum');
SELECT state.value_set('e_val', 1, 100::bigint);
SELECT state.list_add_all('e_list', 1, ARRAY[1, 2]::bigint[]);
SELECT state.map_put('e_map', 1, 1, 10::bigint);
SELECT state.reduce('e_red', 1, 5::bigint);

-- everything the four states hold, and how many states there are
CREATE FUNCTION e_state() RETURNS text LANGUAGE sql AS $$
    SELECT format('val=%s list=%s map=%s red=%s states=%s',
        state.value_get('e_val', 1, -1::bigint),
        state.list_get('e_list', 1, NULL::bigint[]),
        (SELECT string_agg(map_key || ':' || coalesce(value::text, 'null'), ',' ORDER BY map_key)
           FROM state.map_entries('e_map', 1, NULL::int4, NULL::bigint)),
        state.value_get('e_red', 1, -1::bigint),
        (SELECT count(*) FROM state.states))
$$;
-- run sql, return its error and then what the states hold
CREATE FUNCTION e(sql text, OUT error text, OUT after text) LANGUAGE plpgsql AS $$
BEGIN
    error := expect_error(sql);
    after := e_state();
END
$$;
SELECT e_state();

---------------------------------------------------------------- unknown state: 42704
SELECT * FROM e($$SELECT state.value_get('nope', 1, 0::bigint)$$);
SELECT * FROM e($$SELECT state.value_set('nope', 1, 1::bigint)$$);
SELECT * FROM e($$SELECT state.list_add('nope', 1, 1::bigint)$$);
SELECT * FROM e($$SELECT state.list_add_all('nope', 1, ARRAY[1])$$);
SELECT * FROM e($$SELECT state.list_update('nope', 1, ARRAY[1])$$);
SELECT * FROM e($$SELECT state.list_get('nope', 1, NULL::int[])$$);
SELECT * FROM e($$SELECT state.list_length('nope', 1)$$);
SELECT * FROM e($$SELECT state.map_put('nope', 1, 1, 1)$$);
SELECT * FROM e($$SELECT state.map_put_all('nope', 1, ARRAY[1], ARRAY[1])$$);
SELECT * FROM e($$SELECT state.map_get('nope', 1, 1, 0)$$);
SELECT * FROM e($$SELECT state.map_remove('nope', 1, 1)$$);
SELECT * FROM e($$SELECT state.map_contains('nope', 1, 1)$$);
SELECT * FROM e($$SELECT * FROM state.map_entries('nope', 1, 0, 0)$$);
SELECT * FROM e($$SELECT state.map_size('nope', 1)$$);
SELECT * FROM e($$SELECT state.map_is_empty('nope', 1)$$);
SELECT * FROM e($$SELECT state.reduce('nope', 1, 1)$$);
SELECT * FROM e($$SELECT state.clear('nope', 1)$$);
SELECT * FROM e($$SELECT state.truncate('nope')$$);
SELECT * FROM e($$SELECT * FROM state.keys('nope', 0)$$);
SELECT * FROM e($$SELECT state.key_group('nope', 1)$$);
SELECT * FROM e($$SELECT state.drop_state('nope')$$);
SELECT * FROM e($$SELECT state.grant_access('nope', current_user::regrole, 'read')$$);
SELECT * FROM e($$SELECT state.revoke_access('nope', current_user::regrole, 'read')$$);
-- names are exact: no case folding, no trimming
SELECT * FROM e($$SELECT state.value_get('E_VAL', 1, 0::bigint)$$);
SELECT * FROM e($$SELECT state.value_get('e_val ', 1, 0::bigint)$$);
SELECT * FROM e($$SELECT state.drop_state('nope', true)$$);

---------------------------------------------------------------- duplicate state: 42710
SELECT * FROM e($$SELECT state.create_state('e_val', 'value', 'bigint', 'bigint')$$);
SELECT * FROM e($$SELECT state.create_state('e_val', 'list', 'text', 'text')$$);
SELECT * FROM e($$SELECT state.create_state('e_map', 'map')$$);
SELECT name, kind, key_type, value_type FROM state.states WHERE name = 'e_val';

---------------------------------------------------------------- wrong types: 42804 (and 22P02 for bad literals)
-- keys
SELECT * FROM e($$SELECT state.value_set('e_val', true, 1::bigint)$$);
SELECT * FROM e($$SELECT state.value_set('e_val', 1.5, 1::bigint)$$);
SELECT * FROM e($$SELECT state.value_get('e_val', 1.0, 0::bigint)$$);
SELECT * FROM e($$SELECT state.value_set('e_val', 'abc', 1::bigint)$$);
SELECT * FROM e($$SELECT state.value_get('e_val', 'abc', 0::bigint)$$);
SELECT * FROM e($$SELECT state.list_add('e_list', now(), 1::bigint)$$);
SELECT * FROM e($$SELECT state.map_put('e_map', '1x', 1, 1::bigint)$$);
SELECT * FROM e($$SELECT state.reduce('e_red', ARRAY[1], 1::bigint)$$);
SELECT * FROM e($$SELECT state.clear('e_val', now())$$);
SELECT * FROM e($$SELECT state.key_group('e_val', true)$$);
-- map keys
SELECT * FROM e($$SELECT state.map_put('e_map', 1, true, 1::bigint)$$);
SELECT * FROM e($$SELECT state.map_put('e_map', 1, 2::bigint, 1::bigint)$$);
SELECT * FROM e($$SELECT state.map_put('e_map', 1, 'two', 1::bigint)$$);
SELECT * FROM e($$SELECT state.map_get('e_map', 1, 1::bigint, 0::bigint)$$);
SELECT * FROM e($$SELECT state.map_remove('e_map', 1, 1::bigint)$$);
SELECT * FROM e($$SELECT state.map_contains('e_map', 1, 'x')$$);
SELECT * FROM e($$SELECT state.map_put_all('e_map', 1, ARRAY[true], ARRAY[1]::bigint[])$$);
-- values
SELECT * FROM e($$SELECT state.value_set('e_val', 1, 1.5)$$);
SELECT * FROM e($$SELECT state.value_set('e_val', 1, true)$$);
SELECT * FROM e($$SELECT state.value_set('e_val', 1, 'abc')$$);
SELECT * FROM e($$SELECT state.value_set('e_val', 1, '{"a": 1}'::jsonb)$$);
SELECT * FROM e($$SELECT state.list_add('e_list', 1, 1.5)$$);
SELECT * FROM e($$SELECT state.list_add('e_list', 1, 'abc')$$);
SELECT * FROM e($$SELECT state.list_add_all('e_list', 1, ARRAY[true, false])$$);
SELECT * FROM e($$SELECT state.list_add_all('e_list', 1, '{3,x}')$$);
SELECT * FROM e($$SELECT state.list_update('e_list', 1, ARRAY[1.5])$$);
SELECT * FROM e($$SELECT state.map_put('e_map', 1, 1, 1.5)$$);
SELECT * FROM e($$SELECT state.map_put('e_map', 1, 2, 'abc')$$);
SELECT * FROM e($$SELECT state.map_put_all('e_map', 1, ARRAY[2], ARRAY['"x"'::jsonb])$$);
SELECT * FROM e($$SELECT state.reduce('e_red', 1, 1.5)$$);
SELECT * FROM e($$SELECT state.reduce('e_red', 1, true)$$);
-- a default whose type cannot hold the state's values
SELECT * FROM e($$SELECT state.value_get('e_val', 1, false)$$);
SELECT * FROM e($$SELECT state.value_get('e_red', 1, '{}'::jsonb)$$);
SELECT * FROM e($$SELECT state.list_get('e_list', 1, NULL::boolean[])$$);
SELECT * FROM e($$SELECT state.map_get('e_map', 1, 1, false)$$);
SELECT * FROM e($$SELECT * FROM state.map_entries('e_map', 1, NULL::int4, false)$$);
SELECT * FROM e($$SELECT * FROM state.map_entries('e_map', 1, false, 0::bigint)$$);
SELECT * FROM e($$SELECT * FROM state.keys('e_val', false)$$);
-- implicit casts are not errors: int4 and int2 into bigint
SELECT * FROM e($$SELECT state.value_set('e_val', 2::int2, 7)$$);
SELECT state.value_get('e_val', 2, 0::bigint);
-- text arguments, like untyped literals, are read with the input function
SELECT * FROM e($$SELECT state.value_set('e_val', '3'::text, '8'::text)$$);
SELECT state.value_get('e_val', 3, 0::bigint);
SELECT state.clear('e_val', 2), state.clear('e_val', 3);

---------------------------------------------------------------- wrong kind: 42809
SELECT * FROM e($$SELECT state.list_add('e_val', 1, 1::bigint)$$);
SELECT * FROM e($$SELECT state.list_get('e_val', 1, NULL::bigint[])$$);
SELECT * FROM e($$SELECT state.list_length('e_map', 1)$$);
SELECT * FROM e($$SELECT state.list_update('e_red', 1, ARRAY[1]::bigint[])$$);
SELECT * FROM e($$SELECT state.value_set('e_list', 1, 1::bigint)$$);
SELECT * FROM e($$SELECT state.value_get('e_list', 1, 0::bigint)$$);
SELECT * FROM e($$SELECT state.value_get('e_map', 1, 0::bigint)$$);
SELECT * FROM e($$SELECT state.value_set('e_red', 1, 1::bigint)$$);
SELECT * FROM e($$SELECT state.map_put('e_val', 1, 1, 1::bigint)$$);
SELECT * FROM e($$SELECT state.map_get('e_list', 1, 1, 0::bigint)$$);
SELECT * FROM e($$SELECT state.map_size('e_red', 1)$$);
SELECT * FROM e($$SELECT * FROM state.map_entries('e_val', 1, 0, 0::bigint)$$);
SELECT * FROM e($$SELECT state.map_is_empty('e_list', 1)$$);
SELECT * FROM e($$SELECT state.map_remove('e_val', 1, 1)$$);
SELECT * FROM e($$SELECT state.map_contains('e_val', 1, 1)$$);
SELECT * FROM e($$SELECT state.map_put_all('e_list', 1, ARRAY[1], ARRAY[1]::bigint[])$$);
SELECT * FROM e($$SELECT state.reduce('e_val', 1, 1::bigint)$$);
SELECT * FROM e($$SELECT state.reduce('e_list', 1, 1::bigint)$$);
-- value_get reads a reducing state; keys, key_group work on every kind
SELECT state.value_get('e_red', 1, 0::bigint);
SELECT s, (SELECT array_agg(k) FROM state.keys(s, NULL::bigint) AS k) AS keys,
       state.key_group(s, 1) BETWEEN 0 AND current_setting('state_backend.max_parallelism')::int - 1 AS group_ok
  FROM unnest(ARRAY['e_val', 'e_list', 'e_map', 'e_red']) AS s ORDER BY s;

---------------------------------------------------------------- NULL keys, map keys, elements: 22004
SELECT * FROM e($$SELECT state.value_set('e_val', NULL, 1::bigint)$$);
SELECT * FROM e($$SELECT state.value_set('e_val', NULL::bigint, 1::bigint)$$);
SELECT * FROM e($$SELECT state.value_get('e_val', NULL::bigint, 0::bigint)$$);
SELECT * FROM e($$SELECT state.list_add('e_list', NULL::bigint, 1::bigint)$$);
SELECT * FROM e($$SELECT state.list_get('e_list', NULL::bigint, NULL::bigint[])$$);
SELECT * FROM e($$SELECT state.map_put('e_map', NULL::bigint, 1, 1::bigint)$$);
SELECT * FROM e($$SELECT state.reduce('e_red', NULL::bigint, 1::bigint)$$);
SELECT * FROM e($$SELECT state.clear('e_val', NULL::bigint)$$);
SELECT * FROM e($$SELECT state.key_group('e_val', NULL::bigint)$$);
SELECT * FROM e($$SELECT state.map_put('e_map', 1, NULL::int4, 1::bigint)$$);
SELECT * FROM e($$SELECT state.map_put('e_map', 1, NULL, 1::bigint)$$);
SELECT * FROM e($$SELECT state.map_get('e_map', 1, NULL::int4, 0::bigint)$$);
SELECT * FROM e($$SELECT state.map_contains('e_map', 1, NULL::int4)$$);
SELECT * FROM e($$SELECT state.map_remove('e_map', 1, NULL::int4)$$);
-- a NULL anywhere in map_put_all's keys: nothing of the call is stored
SELECT * FROM e($$SELECT state.map_put_all('e_map', 1, ARRAY[2, NULL], ARRAY[20, 30]::bigint[])$$);
-- map keys and values of different lengths: an error, and nothing is stored
SELECT error <> 'no error' AS failed, after
  FROM e($$SELECT state.map_put_all('e_map', 1, ARRAY[2, 3], ARRAY[20]::bigint[])$$);
SELECT error <> 'no error' AS failed, after
  FROM e($$SELECT state.map_put_all('e_map', 1, ARRAY[2], ARRAY[20, 30]::bigint[])$$);
-- NULL list elements: nothing of the call is stored
SELECT * FROM e($$SELECT state.list_add('e_list', 1, NULL::bigint)$$);
SELECT * FROM e($$SELECT state.list_add('e_list', 1, NULL)$$);
SELECT * FROM e($$SELECT state.list_add_all('e_list', 1, ARRAY[3, NULL]::bigint[])$$);
SELECT * FROM e($$SELECT state.list_update('e_list', 1, ARRAY[7, NULL, 8]::bigint[])$$);
SELECT * FROM e($$SELECT state.list_update('e_list', 1, '{NULL}')$$);
-- a NULL reduce value
SELECT * FROM e($$SELECT state.reduce('e_red', 1, NULL::bigint)$$);
-- not errors: a NULL value clears a value state, a NULL map value is stored
SELECT * FROM e($$SELECT state.value_set('e_val', 5, NULL::bigint)$$);
SELECT * FROM e($$SELECT state.map_put('e_map', 1, 9, NULL::bigint)$$);
SELECT state.map_remove('e_map', 1, 9);

---------------------------------------------------------------- create_state arguments: 22023
SELECT * FROM e($$SELECT state.create_state('e_new', 'foo')$$);
SELECT * FROM e($$SELECT state.create_state('e_new', 'reducing', 'text', 'bigint', reducer => 'avg')$$);
SELECT * FROM e($$SELECT state.create_state('e_new', 'reducing', 'text', 'bigint')$$);
SELECT * FROM e($$SELECT state.create_state('e_new', 'value', 'text', 'bigint', reducer => 'sum')$$);
SELECT * FROM e($$SELECT state.create_state('e_new', 'list', 'text', 'bigint', reducer => 'max')$$);
SELECT * FROM e($$SELECT state.create_state('e_new', 'value', backend => 'nosuch')$$);
-- a reducer on a type it cannot fold: 42883
SELECT * FROM e($$SELECT state.create_state('e_new', 'reducing', 'text', 'jsonb', reducer => 'sum')$$);
SELECT * FROM e($$SELECT state.create_state('e_new', 'reducing', 'text', 'text', reducer => 'sum')$$);
SELECT * FROM e($$SELECT state.create_state('e_new', 'reducing', 'text', 'json', reducer => 'min')$$);
SELECT * FROM e($$SELECT state.create_state('e_new', 'reducing', 'text', 'point', reducer => 'max')$$);
-- a ttl that is not positive: 22023
SELECT * FROM e($$SELECT state.create_state('e_new', 'value', ttl => '-1 hour')$$);
-- a NULL name or kind is refused without harm
SELECT left(error, 2) AS class, after FROM e($$SELECT state.create_state(NULL, 'value')$$);
SELECT left(error, 2) AS class, after FROM e($$SELECT state.create_state('e_new', NULL)$$);
-- none of these created anything
SELECT count(*) FROM state.states WHERE name = 'e_new';

---------------------------------------------------------------- heap memory full: 54000
-- fill with 4 MB values until state_backend.memory_limit (64MB here) is hit;
-- the limit is the heap states' (rocksdb states keep their data on disk), so
-- e_big is a memory state whatever state_backend.backend says
SELECT state.create_state('e_big', 'value', 'int4', 'text', backend => 'memory');
CREATE FUNCTION e_fill(OUT n int, OUT code text, OUT message text, OUT detail text)
LANGUAGE plpgsql AS $$
DECLARE
    chunk text := (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 131072) i);
BEGIN
    FOR i IN 1..64 LOOP
        BEGIN
            PERFORM state.value_set('e_big', i, chunk);
        EXCEPTION WHEN OTHERS THEN
            n := i;
            GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
                                    detail = PG_EXCEPTION_DETAIL;
            RETURN;
        END;
    END LOOP;
    code := 'no error';
END
$$;
CREATE TEMP TABLE e_fills AS SELECT 1 AS round, * FROM e_fill();
SELECT code, message, detail, n BETWEEN 8 AND 16 AS failed_near_the_limit FROM e_fills;
-- nothing already stored was lost, and the failed key was not stored
SELECT count(*) = (SELECT n - 1 FROM e_fills) AS all_kept,
       bool_and(md5(state.value_get('e_big', k, NULL::text))
                = md5((SELECT string_agg(md5(i::text), '') FROM generate_series(1, 131072) i))) AS intact
  FROM state.keys('e_big', NULL::int4) AS k;
SELECT state.value_get('e_big', (SELECT n FROM e_fills), 'absent'::text) AS failed_key;
SELECT e_state();
-- truncate gives the memory back: the same amount fits again
SELECT state.truncate('e_big') = (SELECT n - 1 FROM e_fills) AS removed_all;
INSERT INTO e_fills SELECT 2, * FROM e_fill();
SELECT round, code FROM e_fills ORDER BY round;
SELECT abs(max(n) - min(n)) <= 1 AS same_capacity FROM e_fills;
SELECT state.drop_state('e_big');
-- after the drop a big value fits at once
SELECT state.create_state('e_big', 'value', 'int4', 'text', backend => 'memory');
SELECT state.value_set('e_big', 1, repeat('z', 4 * 1024 * 1024));
SELECT length(state.value_get('e_big', 1, NULL::text));
SELECT state.drop_state('e_big');

---------------------------------------------------------------- read-only transaction: 25006
-- A read-only transaction reads states and changes none, as PostgreSQL
-- refuses nextval() or an INSERT there: failover tools fence a server with
-- default_transaction_read_only.
BEGIN TRANSACTION READ ONLY;
SELECT * FROM e($$SELECT state.value_set('e_val', 1, 1::bigint)$$);
SELECT * FROM e($$SELECT state.list_add('e_list', 1, 3::bigint)$$);
SELECT * FROM e($$SELECT state.list_add_all('e_list', 1, ARRAY[3]::bigint[])$$);
SELECT * FROM e($$SELECT state.list_update('e_list', 1, ARRAY[3]::bigint[])$$);
SELECT * FROM e($$SELECT state.map_put('e_map', 1, 2, 20::bigint)$$);
SELECT * FROM e($$SELECT state.map_remove('e_map', 1, 1)$$);
SELECT * FROM e($$SELECT state.reduce('e_red', 1, 1::bigint)$$);
SELECT * FROM e($$SELECT state.clear('e_val', 1)$$);
SELECT * FROM e($$SELECT state.truncate('e_list')$$);
SELECT * FROM e($$SELECT state.compact('e_map')$$);
SELECT * FROM e($$SELECT state.create_state('e_ro', 'value', 'bigint', 'bigint')$$);
SELECT * FROM e($$SELECT state.drop_state('e_red')$$);
SELECT * FROM e($$SELECT state.alter_state('e_val', rename_to => 'e_ro')$$);
SELECT * FROM e($$SELECT state.grant_access('e_val', 'pg_monitor', 'write')$$);
SELECT * FROM e($$SELECT state.revoke_access('e_val', 'pg_monitor', 'write')$$);
SELECT * FROM e($$SELECT state.restore('/nonexistent')$$);
-- reads go on
SELECT state.value_get('e_val', 1, -1::bigint), state.list_get('e_list', 1, NULL::bigint[]);
COMMIT;
-- default_transaction_read_only makes every transaction read-only, and a
-- transaction that says READ WRITE writes again
SET default_transaction_read_only = on;
SELECT * FROM e($$SELECT state.reduce('e_red', 1, 1::bigint)$$);
BEGIN TRANSACTION READ WRITE;
SELECT state.reduce('e_red', 1, 0::bigint);
COMMIT;
RESET default_transaction_read_only;
SELECT state.reduce('e_red', 1, 0::bigint);

---------------------------------------------------------------- the server keeps answering
SELECT 1 AS alive;
SELECT e_state();
SELECT state.value_set('e_val', 1, 101::bigint);
SELECT state.value_get('e_val', 1, -1::bigint);

-- truncate works on every kind
SELECT state.truncate('e_val'), state.truncate('e_list'), state.truncate('e_map'), state.truncate('e_red');
SELECT e_state();

DROP FUNCTION e(text);
DROP FUNCTION e_state();
DROP FUNCTION e_fill();
SELECT state.drop_state('e_val');
SELECT state.drop_state('e_list');
SELECT state.drop_state('e_map');
SELECT state.drop_state('e_red');
SELECT count(*) FROM state.states;
