--
-- operator: operator state (operator_list, union_list, broadcast), which has
-- no keys and lives in shared memory whatever the backend; and the key-group
-- arithmetic of splitting keyed state across servers (key_group_range,
-- part_for).  Runs with the default backend of the pass.
--

-- operator states are created with any backend setting; they live in memory
SELECT state.create_state('op_l', 'operator_list', value_type => 'int');
SELECT state.create_state('op_u', 'union_list', value_type => 'text');
SELECT state.create_state('op_b', 'broadcast', value_type => 'numeric', map_key_type => 'text');
SELECT state.create_state('op_fs', 'operator_list', value_type => 'int', backend => 'filesystem');
SELECT state.create_state('op_rx', 'operator_list', value_type => 'int', backend => 'rocksdb');
SELECT name, kind, backend, value_type, map_key_type, ttl
  FROM state.states WHERE name LIKE 'op\_%' ORDER BY name;

-- operator lists
SELECT state.operator_get('op_l', NULL::int[]) AS empty;
SELECT state.operator_add('op_l', 1), state.operator_add('op_l', 2);
SELECT state.operator_add_all('op_l', ARRAY[3, 4, 5]);
SELECT state.operator_get('op_l', NULL::int[]);
SELECT state.operator_update('op_l', ARRAY[7, 8]);
SELECT state.operator_get('op_l', NULL::int[]);
SELECT state.operator_add('op_u', 'a'), state.operator_add('op_u', 'b');
SELECT state.operator_get('op_u', NULL::text[]);
SELECT state.operator_update('op_u', '{}'::text[]);
SELECT state.operator_get('op_u', '{none}'::text[]) AS emptied;
SELECT expect_error($$SELECT state.operator_add('op_l', NULL::int)$$);
SELECT expect_error($$SELECT state.operator_add('op_l', 'x')$$);

-- broadcast state
SELECT state.broadcast_put('op_b', 'pi', 3.14), state.broadcast_put('op_b', 'e', 2.72);
SELECT state.broadcast_put('op_b', 'none', NULL::numeric);
-- a read-only transaction changes no operator state (25006)
BEGIN TRANSACTION READ ONLY;
SELECT expect_error($$SELECT state.broadcast_put('op_b', 'ro', 1.0)$$);
SELECT expect_error($$SELECT state.broadcast_remove('op_b', 'pi')$$);
SELECT expect_error($$SELECT state.operator_add('op_l', 9)$$);
COMMIT;
SELECT state.broadcast_get('op_b', 'pi', 0::numeric), state.broadcast_get('op_b', 'nope', -1::numeric);
SELECT * FROM state.broadcast_entries('op_b', NULL::text, NULL::numeric) ORDER BY 1;
SELECT state.broadcast_remove('op_b', 'e') AS removed, state.broadcast_remove('op_b', 'e') AS again;
SELECT count(*) FROM state.broadcast_entries('op_b', NULL::text, NULL::numeric);

-- truncate empties either; the view counts one key per non-empty state
SELECT name, entries FROM state.states WHERE name IN ('op_l', 'op_b', 'op_u') ORDER BY name;
SELECT state.truncate('op_l'), state.truncate('op_b');
SELECT state.operator_get('op_l', NULL::int[]), state.broadcast_get('op_b', 'pi', 0::numeric);

-- wrong kinds: wrong_object_type
SELECT expect_error($$SELECT state.operator_add('op_b', 1)$$);
SELECT expect_error($$SELECT state.broadcast_put('op_l', 'k', 1)$$);
SELECT expect_error($$SELECT state.list_add('op_l', 1, 1)$$);
SELECT expect_error($$SELECT state.clear('op_l', 1)$$);
SELECT expect_error($$SELECT * FROM state.keys('op_l', NULL::int)$$);
SELECT expect_error($$SELECT state.key_group('op_b', 1)$$);
SELECT expect_error($$SELECT state.part_for('op_u', 1, 2)$$);
SELECT state.create_state('op_keyed', 'list', 'int', 'int');
SELECT expect_error($$SELECT state.operator_add('op_keyed', 1)$$);
-- no TTL, no reducer: invalid_parameter_value
SELECT expect_error($$SELECT state.create_state('op_t', 'operator_list', value_type => 'int', ttl => '1 hour')$$);
SELECT expect_error($$SELECT state.create_state('op_t', 'broadcast', reducer => 'sum')$$);

-- privileges: reading needs read, writing write
CREATE ROLE regress_sb_op;
SET ROLE regress_sb_op;
SELECT expect_error($$SELECT state.operator_get('op_l', NULL::int[])$$);
SELECT expect_error($$SELECT state.broadcast_put('op_b', 'k', 1)$$);
RESET ROLE;
SELECT state.grant_access('op_l', 'regress_sb_op', 'read');
SELECT state.grant_access('op_b', 'regress_sb_op', 'write');
SET ROLE regress_sb_op;
SELECT state.operator_get('op_l', '{}'::int[]);
SELECT expect_error($$SELECT state.operator_add('op_l', 1)$$);
SELECT state.broadcast_put('op_b', 'k', 1);
SELECT expect_error($$SELECT state.broadcast_get('op_b', 'k', 0)$$);
RESET ROLE;

-- key_group_range: Flink's computeKeyGroupRangeForOperatorIndex over 128 key groups
SELECT p, state.key_group_range(3, p) FROM generate_series(0, 2) p;
SELECT state.key_group_range(1, 0), state.key_group_range(128, 127), state.key_group_range(7, 6);
-- every key group in exactly one part
SELECT count(*) = 128 AS covered, count(DISTINCT kg) = 128 AS once
  FROM generate_series(0, 4) p, generate_series(0, 127) kg
 WHERE kg <@ state.key_group_range(5, p);
SELECT expect_error($$SELECT state.key_group_range(3, 3)$$);
SELECT expect_error($$SELECT state.key_group_range(3, -1)$$);
SELECT expect_error($$SELECT state.key_group_range(129, 0)$$);
SELECT expect_error($$SELECT state.key_group_range(0, 0)$$);
SELECT expect_error($$SELECT state.key_group_range(3, NULL)$$);
SELECT expect_error($$SELECT state.key_group_range(NULL, 1)$$);

-- part_for agrees with key_group and key_group_range
SELECT count(*) AS disagreements
  FROM generate_series(1, 1000) k
 WHERE state.key_group('op_keyed', k) <@ state.key_group_range(3, state.part_for('op_keyed', k, 3)) IS NOT TRUE;
SELECT state.part_for('op_keyed', 42, 1) AS one_part;
SELECT expect_error($$SELECT state.part_for('op_keyed', 1, 0)$$);
SELECT expect_error($$SELECT state.part_for('op_keyed', 1, NULL)$$);
-- a state that holds every key group shows so
SELECT key_groups FROM state.states WHERE name = 'op_keyed';

SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'op\_%' ORDER BY name;
DROP ROLE regress_sb_op;
