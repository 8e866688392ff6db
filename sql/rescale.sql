--
-- rescale: one server plays every part.  A snapshot is restored as each of
-- 3 parts in turn (keyed states keep their key groups, an operator list its
-- chunk, union lists and broadcast state come whole); each part is
-- snapshotted; the 3 part snapshots merge back into the original.  Both
-- formats, with the default backend of the pass.
--
CREATE TABLE rs_conf AS SELECT current_setting('data_directory') AS datadir;
CREATE FUNCTION rs_path(name text) RETURNS text LANGUAGE sql AS $$
    SELECT datadir || '/rs_' || name FROM rs_conf
$$;
CREATE FUNCTION rs_error(sql text) RETURNS text LANGUAGE sql AS $$
    SELECT replace(expect_error(sql), datadir, '$DATADIR') FROM rs_conf
$$;
CREATE FUNCTION rs_take(name text, format text) RETURNS text LANGUAGE sql AS $$
    SELECT state.wait_snapshot(state.snapshot(rs_path(name), format))
$$;
-- rs_contents(): every state's keys, sums and operator state, in one line
-- (union lists apart: a merge concatenates them, as Flink does)
CREATE FUNCTION rs_contents() RETURNS text LANGUAGE sql AS $$
    SELECT format('v %s/%s m %s/%s l %s/%s op %s bc %s',
        (SELECT count(*) FROM state.keys('rs_v', NULL::int)),
        (SELECT sum(state.value_get('rs_v', k, 0::bigint)) FROM state.keys('rs_v', NULL::int) k),
        (SELECT count(*) FROM state.keys('rs_m', NULL::int)),
        (SELECT sum(e.value) FROM state.keys('rs_m', NULL::int) k,
                 state.map_entries('rs_m', k, NULL::int, NULL::int) e),
        (SELECT count(*) FROM state.keys('rs_l', NULL::int)),
        (SELECT sum(x) FROM state.keys('rs_l', NULL::int) k,
                 unnest(state.list_get('rs_l', k, NULL::int[])) x),
        state.operator_get('rs_op', '{}'::int[]),
        (SELECT string_agg(map_key || '=' || value, ',' ORDER BY map_key)
           FROM state.broadcast_entries('rs_bc', NULL::text, NULL::text)))
$$;
-- rs_misplaced(p): keys held here that part p of 3 does not own
CREATE FUNCTION rs_misplaced(p int) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM (
        SELECT k FROM state.keys('rs_v', NULL::int) k WHERE state.part_for('rs_v', k, 3) <> p
        UNION ALL
        SELECT k FROM state.keys('rs_m', NULL::int) k WHERE state.part_for('rs_m', k, 3) <> p
        UNION ALL
        SELECT k FROM state.keys('rs_l', NULL::int) k WHERE state.part_for('rs_l', k, 3) <> p) x
$$;

SELECT state.create_state('rs_v', 'value', 'int', 'bigint');
SELECT state.create_state('rs_m', 'map', 'int', 'int', map_key_type => 'int');
SELECT state.create_state('rs_l', 'list', 'int', 'int');
SELECT state.create_state('rs_op', 'operator_list', value_type => 'int');
SELECT state.create_state('rs_un', 'union_list', value_type => 'text');
SELECT state.create_state('rs_bc', 'broadcast', value_type => 'text', map_key_type => 'text');
SELECT count(state.value_set('rs_v', i, i::bigint)) FROM generate_series(1, 3000) i;
SELECT count(state.map_put('rs_m', i % 300, i, i)) FROM generate_series(1, 900) i;
SELECT count(state.list_add_all('rs_l', i, ARRAY[i, 1])) FROM generate_series(1, 300) i;
SELECT state.operator_add_all('rs_op', ARRAY(SELECT generate_series(1, 10)));
SELECT state.operator_add_all('rs_un', ARRAY['a', 'b']);
SELECT state.broadcast_put('rs_bc', 'x', '1'), state.broadcast_put('rs_bc', 'y', '2');
SELECT rs_contents() AS original \gset
SELECT :'original' AS original;

---------------------------------------------------------------- native
SELECT rs_take('full_native', 'native');
SELECT p, state.restore(rs_path('full_native'), parallelism => 3, part => p) > 0 AS restored,
       rs_misplaced(p) AS misplaced, rs_contents(),
       state.operator_get('rs_un', '{}'::text[]) AS union_list,
       rs_take('native_part' || p, 'native')
  FROM generate_series(0, 2) p;
-- the last part restored is part 2: a key of part 0 is refused, with its part named
SELECT state.part_for('rs_v', 1, 3) AS part_of_1;
SELECT rs_error($$SELECT state.value_get('rs_v', 1, 0::bigint)$$);
SELECT rs_error($$SELECT state.value_set('rs_v', 1, 0::bigint)$$);
SELECT name, key_groups FROM state.states WHERE name LIKE 'rs\_%' ORDER BY name;
-- merged back: exactly the original
SELECT state.restore(ARRAY[rs_path('native_part0'), rs_path('native_part1'), rs_path('native_part2')]) > 0 AS merged;
SELECT rs_contents() = :'original' AS same_as_original, rs_misplaced(0) > 0 AS every_part,
       state.operator_get('rs_un', '{}'::text[]) AS union_lists_concatenated;
SELECT name, key_groups FROM state.states WHERE name LIKE 'rs\_%' ORDER BY name;
-- two parts merge into a server that holds both, and remembers it
SELECT state.restore(ARRAY[rs_path('native_part0'), rs_path('native_part1')]) > 0 AS merged;
SELECT key_groups FROM state.states WHERE name = 'rs_v';
SELECT state.operator_get('rs_op', '{}'::int[]);

---------------------------------------------------------------- canonical
SELECT state.restore(rs_path('full_native')) > 0 AS back_to_full;
SELECT rs_contents() = :'original' AS same_as_original, state.operator_get('rs_un', '{}'::text[]);
SELECT rs_take('full_canonical', 'canonical');
SELECT p, state.restore(rs_path('full_canonical'), parallelism => 3, part => p) > 0 AS restored,
       rs_misplaced(p) AS misplaced, rs_contents(),
       rs_take('canonical_part' || p, 'canonical')
  FROM generate_series(0, 2) p;
SELECT state.restore(ARRAY[rs_path('canonical_part2'), rs_path('canonical_part0'), rs_path('canonical_part1')]) > 0 AS merged;
-- merged in another order: the same keys; operator lists in the order given
SELECT rs_contents();
SELECT state.restore(ARRAY[rs_path('canonical_part0'), rs_path('canonical_part1'), rs_path('canonical_part2')]) > 0 AS merged;
SELECT rs_contents() = :'original' AS same_as_original;
-- three parts into two: part 1 of 2, from the three parts' snapshots
SELECT state.restore(ARRAY[rs_path('canonical_part0'), rs_path('canonical_part1'), rs_path('canonical_part2')],
                     parallelism => 2, part => 1) > 0 AS reshaped;
SELECT (SELECT key_groups FROM state.states WHERE name = 'rs_v'),
       (SELECT count(*) FROM state.keys('rs_v', NULL::int) k WHERE state.part_for('rs_v', k, 2) <> 1) AS misplaced,
       (SELECT count(*) FROM state.keys('rs_v', NULL::int)) +
       (SELECT count(*) FROM generate_series(1, 3000) k WHERE state.part_for('rs_v', k, 2) = 0) AS all_keys,
       state.operator_get('rs_op', '{}'::int[]);
-- a keyed state created on a part holds the same part; an operator state, everything
SELECT state.create_state('rs_new', 'value', 'int', 'int'), state.create_state('rs_new_op', 'union_list');
SELECT name, key_groups FROM state.states WHERE name IN ('rs_new', 'rs_new_op') ORDER BY name;
SELECT state.drop_state('rs_new'), state.drop_state('rs_new_op');
-- a part restored again as the same part keeps its operator list as it is
SELECT state.restore(rs_path('native_part0'), parallelism => 3, part => 0) > 0 AS restored;
SELECT state.operator_get('rs_op', '{}'::int[]), rs_misplaced(0) AS misplaced;
-- operator states stay in memory whatever backend a restore asks for
SELECT state.restore(rs_path('canonical_part0'), backend => 'rocksdb') > 0 AS restored;
SELECT name, backend FROM state.states WHERE name IN ('rs_op', 'rs_bc', 'rs_v') ORDER BY name;
SELECT state.broadcast_get('rs_bc', 'x', ''), state.operator_get('rs_op', '{}'::int[]);
SELECT state.restore(rs_path('full_native')) > 0 AS back_to_full;

---------------------------------------------------------------- refused, and nothing changes
SELECT rs_error($$SELECT state.restore(ARRAY[rs_path('native_part0'), rs_path('native_part0')])$$);
SELECT rs_error($$SELECT state.restore(ARRAY[rs_path('native_part0'), rs_path('native_part2')])$$);
SELECT rs_error($$SELECT state.restore(rs_path('native_part0'), parallelism => 3, part => 1)$$);
SELECT rs_error($$SELECT state.restore(rs_path('full_native'), parallelism => 3, part => 3)$$);
SELECT rs_error($$SELECT state.restore(rs_path('full_native'), parallelism => 129, part => 0)$$);
SELECT rs_error($$SELECT state.restore(rs_path('full_native'), parallelism => 3)$$);
SELECT rs_error($$SELECT state.restore(rs_path('full_native'), part => 0)$$);
SELECT rs_error($$SELECT state.restore(ARRAY[]::text[])$$);
SELECT rs_error($$SELECT state.restore(ARRAY[NULL]::text[])$$);
SELECT rs_contents() = :'original' AS unchanged;

---------------------------------------------------------------- states only some parts have
-- Each of 2 parts creates a state the other lacks (as Flink registers a
-- state where its keys are) and is snapshotted; merged, each such state
-- holds every key group, empty where a part had none of it.
SELECT state.restore(rs_path('full_native'), parallelism => 2, part => 0) > 0 AS part_0;
SELECT state.create_state('rs_only0', 'value', 'int', 'int');
SELECT count(state.value_set('rs_only0', k, k)) FROM generate_series(1, 100) k
 WHERE state.part_for('rs_only0', k, 2) = 0;
SELECT rs_take('only_part0', 'native');
SELECT state.restore(rs_path('full_native'), parallelism => 2, part => 1) > 0 AS part_1;
SELECT count(*) AS no_only0 FROM state.states WHERE name = 'rs_only0';
SELECT state.create_state('rs_only1', 'value', 'int', 'int');
SELECT count(state.value_set('rs_only1', k, k)) FROM generate_series(1, 100) k
 WHERE state.part_for('rs_only1', k, 2) = 1;
SELECT rs_take('only_part1', 'native');
SELECT state.restore(ARRAY[rs_path('only_part0'), rs_path('only_part1')]) > 0 AS merged;
SELECT name, key_groups FROM state.states WHERE name IN ('rs_only0', 'rs_only1', 'rs_v') ORDER BY name;
SELECT (SELECT count(*) FROM state.keys('rs_only0', NULL::int)) AS only0_keys,
       (SELECT count(*) FROM state.keys('rs_only1', NULL::int)) AS only1_keys,
       rs_contents() = :'original' AS rest_as_original;
-- keys of the half a state was missing from are this server's now
SELECT count(state.value_set('rs_only0', k, -k)) AS written FROM generate_series(1, 100) k
 WHERE state.part_for('rs_only0', k, 2) = 1;
-- and the same snapshots restore as either part, with the other half empty
SELECT state.restore(ARRAY[rs_path('only_part0'), rs_path('only_part1')], parallelism => 2, part => 0) > 0 AS as_part_0;
SELECT (SELECT count(*) FROM state.keys('rs_only0', NULL::int)) AS only0_keys,
       (SELECT count(*) FROM state.keys('rs_only1', NULL::int)) AS only1_keys;
-- (the full snapshot was taken before either state existed)
SELECT state.restore(rs_path('full_native')) > 0 AS back_to_full;
SELECT count(*) AS none_left FROM state.states WHERE name LIKE 'rs\_only%';

SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'rs\_%' ORDER BY name;
