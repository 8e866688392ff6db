--
-- transactional: states whose writes commit and roll back with the
-- transaction.  Runs with the default backend of the pass (memory,
-- rocksdb, lmdb).  Concurrent sessions are in specs/transactional_sessions.spec.
--

-- What can be transactional
SELECT expect_error($$SELECT state.create_state('tx_op', 'operator_list', value_type => 'int', transactional => true)$$);
CREATE AGGREGATE tx_total(int) (sfunc = int4pl, stype = int, initcond = '0');
SELECT expect_error($$SELECT state.create_state('tx_agg', 'aggregating', 'text', 'int', aggregate => 'tx_total(int)', transactional => true)$$);
SELECT expect_error($$SELECT state.create_state('tx_lt', 'value', 'text', 'int', ttl => '1 hour', logged => true, transactional => true)$$);
SELECT state.create_state('tx_v', 'value', 'text', 'int', transactional => true);
SELECT state.create_state('tx_l', 'list', 'text', 'int', transactional => true);
SELECT state.create_state('tx_m', 'map', 'text', 'int', map_key_type => 'text', transactional => true);
SELECT state.create_state('tx_r', 'reducing', 'text', 'bigint', reducer => 'sum', transactional => true);
SELECT state.create_state('tx_a', 'aggregating', 'text', 'float8', aggregate => 'avg(float8)', transactional => true);
SELECT state.create_state('tx_n', 'aggregating', 'text', 'numeric', aggregate => 'sum(numeric)', transactional => true);
SELECT name, kind, transactional FROM state.states WHERE name LIKE 'tx%' ORDER BY name;

-- Autocommit: each statement is a transaction, and commits
SELECT state.value_set('tx_v', 'k', 1);
SELECT state.value_get('tx_v', 'k', 0);
SELECT state.reduce('tx_r', 'k', 5::bigint);
SELECT state.reduce('tx_r', 'k', 5::bigint);

-- ROLLBACK discards every kind's writes; inside, reads see them
BEGIN;
SELECT state.value_set('tx_v', 'k', 2);
SELECT state.value_set('tx_v', 'new', 20);
SELECT state.list_add('tx_l', 'k', 1);
SELECT state.list_add_all('tx_l', 'k', ARRAY[2, 3]);
SELECT state.map_put('tx_m', 'k', 'a', 1);
SELECT state.map_put_all('tx_m', 'k', ARRAY['b', 'c'], ARRAY[2, NULL]);
SELECT state.reduce('tx_r', 'k', 100::bigint) AS reduce_sees_own;
SELECT state.aggregate('tx_a', 'k', 1.0::float8);
SELECT state.aggregate('tx_a', 'k', 2.0::float8);
SELECT state.value_get('tx_v', 'k', 0) AS v, state.value_get('tx_v', 'new', 0) AS new,
       state.list_get('tx_l', 'k', NULL::int[]) AS l, state.list_length('tx_l', 'k') AS llen,
       state.map_get('tx_m', 'k', 'a', 0) AS ma, state.map_size('tx_m', 'k') AS msize,
       state.map_contains('tx_m', 'k', 'c') AS has_c, state.map_is_empty('tx_m', 'k') AS empty,
       state.value_get('tx_r', 'k', 0::bigint) AS r, state.value_get('tx_a', 'k', 0::float8) AS a;
SELECT * FROM state.map_entries('tx_m', 'k', NULL::text, NULL::int) ORDER BY 1;
SELECT k FROM state.keys('tx_v', NULL::text) k ORDER BY 1;
SELECT * FROM state.entries('tx_v', NULL::text, NULL::int) ORDER BY 1;
ROLLBACK;
SELECT state.value_get('tx_v', 'k', 0) AS v, state.value_get('tx_v', 'new', 0) AS new,
       state.list_get('tx_l', 'k', NULL::int[]) AS l, state.map_size('tx_m', 'k') AS msize,
       state.value_get('tx_r', 'k', 0::bigint) AS r, state.value_get('tx_a', 'k', 0::float8) AS a;
SELECT k FROM state.keys('tx_v', NULL::text) k ORDER BY 1;

-- COMMIT applies them all
BEGIN;
SELECT state.value_set('tx_v', 'k', 2);
SELECT state.list_add_all('tx_l', 'k', ARRAY[1, 2, 3]);
SELECT state.map_put_all('tx_m', 'k', ARRAY['a', 'b', 'c'], ARRAY[1, 2, NULL]);
SELECT state.reduce('tx_r', 'k', 100::bigint);
SELECT state.aggregate('tx_a', 'k', 1.0::float8);
SELECT state.aggregate('tx_a', 'k', 2.0::float8);
SELECT state.aggregate('tx_n', 'k', 1.5);
COMMIT;
SELECT state.value_get('tx_v', 'k', 0) AS v, state.list_get('tx_l', 'k', NULL::int[]) AS l,
       state.value_get('tx_r', 'k', 0::bigint) AS r, state.value_get('tx_a', 'k', 0::float8) AS a,
       state.value_get('tx_n', 'k', 0::numeric) AS n;
SELECT * FROM state.map_entries('tx_m', 'k', NULL::text, NULL::int) ORDER BY 1;

-- Folds of a transaction combine with what was committed meanwhile
BEGIN;
SELECT state.aggregate('tx_a', 'k', 6.0::float8);
SELECT state.value_get('tx_a', 'k', 0::float8) AS avg_of_4;
SELECT state.aggregate('tx_n', 'k', 2.5);
COMMIT;
SELECT state.value_get('tx_a', 'k', 0::float8) AS a, state.value_get('tx_n', 'k', 0::numeric) AS n;

-- An error aborts the transaction and its writes
BEGIN;
SELECT state.value_set('tx_v', 'k', 3);
SELECT state.reduce('tx_r', 'k', 1::bigint);
SELECT 1 / 0;
COMMIT;
SELECT state.value_get('tx_v', 'k', 0) AS v, state.value_get('tx_r', 'k', 0::bigint) AS r;

-- ROLLBACK TO SAVEPOINT undoes what came after the savepoint, no more
BEGIN;
SELECT state.reduce('tx_r', 'k', 1::bigint);
SELECT state.list_add('tx_l', 'k', 4);
SAVEPOINT s1;
SELECT state.reduce('tx_r', 'k', 1000::bigint);
SELECT state.list_add('tx_l', 'k', 5);
SELECT state.map_remove('tx_m', 'k', 'a');
SELECT state.clear('tx_v', 'k');
SAVEPOINT s2;
SELECT state.value_set('tx_v', 'k', 9);
RELEASE SAVEPOINT s2;
SELECT state.value_get('tx_v', 'k', 0) AS v_in_s1;
ROLLBACK TO SAVEPOINT s1;
SELECT state.value_get('tx_r', 'k', 0::bigint) AS r, state.list_get('tx_l', 'k', NULL::int[]) AS l,
       state.map_contains('tx_m', 'k', 'a') AS has_a, state.value_get('tx_v', 'k', 0) AS v;
SAVEPOINT s3;
SELECT state.value_set('tx_v', 'k', 7);
RELEASE SAVEPOINT s3;
COMMIT;
SELECT state.value_get('tx_r', 'k', 0::bigint) AS r, state.list_get('tx_l', 'k', NULL::int[]) AS l,
       state.map_contains('tx_m', 'k', 'a') AS has_a, state.value_get('tx_v', 'k', 0) AS v;

-- PL/pgSQL exception blocks are subtransactions too
DO $$
BEGIN
    PERFORM state.reduce('tx_r', 'k', 10::bigint);
    BEGIN
        PERFORM state.reduce('tx_r', 'k', 10000::bigint);
        PERFORM state.value_set('tx_v', 'k', 99);
        RAISE EXCEPTION 'undo the block';
    EXCEPTION WHEN raise_exception THEN
        NULL;
    END;
END
$$;
SELECT state.value_get('tx_r', 'k', 0::bigint) AS r, state.value_get('tx_v', 'k', 0) AS v;

-- clear and list_update replace what was committed; then new writes apply over that
BEGIN;
SELECT state.clear('tx_l', 'k') AS had;
SELECT state.list_add('tx_l', 'k', 42);
SELECT state.clear('tx_m', 'k') AS had;
SELECT state.map_put('tx_m', 'k', 'z', 26);
SELECT state.clear('tx_r', 'k') AS had;
SELECT state.reduce('tx_r', 'k', 3::bigint);
COMMIT;
SELECT state.list_get('tx_l', 'k', NULL::int[]) AS l, state.value_get('tx_r', 'k', 0::bigint) AS r;
SELECT * FROM state.map_entries('tx_m', 'k', NULL::text, NULL::int) ORDER BY 1;
BEGIN;
SELECT state.list_update('tx_l', 'k', ARRAY[7, 8]);
SELECT state.list_add('tx_l', 'k', 9);
COMMIT;
SELECT state.list_get('tx_l', 'k', NULL::int[]) AS l;

-- A fold that fails (overflow) fails the call, and the transaction with it
SELECT state.value_set('tx_v', 'k', 7);
SELECT state.reduce('tx_r', 'big', 9223372036854775800::bigint);
BEGIN;
SELECT state.value_set('tx_v', 'k', 8);
SELECT state.reduce('tx_r', 'big', 1::bigint);
SELECT state.reduce('tx_r', 'big', 100::bigint);
COMMIT;
SELECT state.value_get('tx_r', 'big', 0::bigint) AS big, state.value_get('tx_v', 'k', 0) AS v;

-- truncate acts at once; the transaction's own writes stay pending
BEGIN;
SELECT state.value_set('tx_v', 'after', 1);
SELECT state.truncate('tx_v');
COMMIT;
SELECT k FROM state.keys('tx_v', NULL::text) k ORDER BY 1;

-- PREPARE TRANSACTION is refused (0A000) when there are writes to apply
BEGIN;
SELECT state.value_set('tx_v', 'p', 1);
PREPARE TRANSACTION 'tx_prepared';
SELECT state.value_get('tx_v', 'p', 0) AS p;
SELECT count(*) AS prepared FROM pg_prepared_xacts;

-- ... and after a truncate, whose lock of the state it would carry across restarts
BEGIN;
SELECT state.truncate('tx_v');
PREPARE TRANSACTION 'tx_prepared_truncate';
SELECT count(*) AS prepared FROM pg_prepared_xacts;

-- With a TTL
SELECT state.create_state('tx_ttl', 'value', 'text', 'int', ttl => '1 hour', transactional => true);
BEGIN;
SELECT state.value_set('tx_ttl', 'k', 1);
SELECT state.value_get('tx_ttl', 'k', 0) AS own;
COMMIT;
SELECT state.value_get('tx_ttl', 'k', 0) AS committed;
SELECT state._advance_ttl_clock('2 hours') IS NOT NULL AS moved;
SELECT state.value_get('tx_ttl', 'k', 0) AS expired;

-- A heap state's commit that the memory limit cannot hold fails before it commits (54000)
SELECT state.create_state('tx_big', 'list', 'int', 'text', backend => 'memory', transactional => true);
CREATE FUNCTION tx_fill() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tx_marks VALUES (1);
    FOR i IN 1..40 LOOP
        PERFORM state.list_add('tx_big', i, repeat('x', 1024 * 1024));
    END LOOP;
END
$$;
CREATE TABLE tx_marks (i int);
SELECT tx_fill();
SELECT count(*) AS marks, state.list_length('tx_big', 1) AS len FROM tx_marks;

-- Privileges are checked at the call, as for every state
CREATE ROLE regress_tx_reader;
SELECT state.grant_access('tx_v', 'regress_tx_reader', 'read');
SET ROLE regress_tx_reader;
SELECT expect_error($$SELECT state.value_set('tx_v', 'k', 1)$$);
SELECT state.value_get('tx_v', 'k', 0) AS reads;
RESET ROLE;
SELECT state.revoke_access('tx_v', 'regress_tx_reader', 'read');
DROP ROLE regress_tx_reader;

-- A state dropped before the transaction commits: the commit fails (42704)
BEGIN;
SELECT state.value_set('tx_v', 'gone', 1);
SELECT state.drop_state('tx_v');
COMMIT;
SELECT count(*) AS tx_v FROM state.states WHERE name = 'tx_v';

DROP FUNCTION tx_fill();
DROP AGGREGATE tx_total(int);
DROP TABLE tx_marks;
SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'tx%' ORDER BY name;
