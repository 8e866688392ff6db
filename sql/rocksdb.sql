--
-- rocksdb: what is particular to rocksdb states (the other files run on
-- both backends).  Requests and replies larger than the worker's rings,
-- paging through many keys and map entries, pipelined writes and
-- transactions, and snapshots: native (RocksDB's files, self-contained at
-- an explicit path), canonical round trips memory -> rocksdb -> memory,
-- and damaged RocksDB files.
--
SELECT current_setting('data_directory') AS datadir \gset
CREATE TABLE rk_conf AS SELECT current_setting('data_directory') AS datadir;

-- rk_path(name): a snapshot directory under the data directory
CREATE FUNCTION rk_path(name text) RETURNS text LANGUAGE sql AS $$
    SELECT datadir || '/rk_' || name FROM rk_conf
$$;
-- rk_error(sql): expect_error, with the data directory shown as $DATADIR
CREATE FUNCTION rk_error(sql text) RETURNS text LANGUAGE sql AS $$
    SELECT replace(expect_error(sql), datadir, '$DATADIR') FROM rk_conf
$$;
-- rk_dump(): every entry of the states this file makes, as text
CREATE FUNCTION rk_dump() RETURNS TABLE(state text, key text, value text) LANGUAGE sql AS $$
    SELECT 'rk_val', k::text, state.value_get('rk_val', k, NULL::text)
      FROM state.keys('rk_val', NULL::int) AS k
    UNION ALL
    SELECT 'rk_list', k, state.list_get('rk_list', k, NULL::int[])::text
      FROM state.keys('rk_list', NULL::text) AS k
    UNION ALL
    SELECT 'rk_map', k::text || '/' || e.map_key, coalesce(e.value::text, 'NULL')
      FROM state.keys('rk_map', NULL::bigint) AS k,
           state.map_entries('rk_map', k, NULL::text, NULL::numeric) AS e
    UNION ALL
    SELECT 'rk_sum', k, state.value_get('rk_sum', k, NULL::bigint)::text
      FROM state.keys('rk_sum', NULL::text) AS k
$$;

SELECT state.create_state('rk_val', 'value', 'int', 'text', backend => 'rocksdb');
SELECT state.create_state('rk_list', 'list', 'text', 'int', backend => 'rocksdb');
SELECT state.create_state('rk_map', 'map', 'bigint', 'numeric', backend => 'rocksdb',
                          map_key_type => 'text');
SELECT state.create_state('rk_sum', 'reducing', 'text', 'bigint', backend => 'rocksdb',
                          reducer => 'sum');
SELECT name, kind, backend, entries FROM state.states WHERE name LIKE 'rk%' ORDER BY name;

---------------------------------------------------------------- sizes
-- a value of 3 MB goes to the worker and back through 32 kB rings
SELECT state.value_set('rk_val', 0, repeat('abcdefgh', 393216));
SELECT length(state.value_get('rk_val', 0, NULL::text)) AS len,
       md5(state.value_get('rk_val', 0, NULL::text)) = md5(repeat('abcdefgh', 393216)) AS same;
-- a list of 100000 elements, appended in one statement, read back whole
SELECT count(state.list_add('rk_list', 'long', i)) FROM generate_series(1, 100000) AS i;
SELECT state.list_length('rk_list', 'long') AS n,
       (SELECT sum(x) FROM unnest(state.list_get('rk_list', 'long', NULL::int[])) AS x) AS total;
-- 5000 keys and a map of 3000 entries: iterations page through them
SELECT count(state.value_set('rk_val', i, 'v' || i)) FROM generate_series(1, 5000) AS i;
SELECT count(*), min(k), max(k) FROM state.keys('rk_val', NULL::int) AS k;
SELECT count(state.map_put('rk_map', 1, 'm' || i, CASE WHEN i % 100 = 0 THEN NULL ELSE i / 7.0 END))
  FROM generate_series(1, 3000) AS i;
SELECT count(*) AS entries, count(value) AS not_null, round(sum(value), 2) AS total
  FROM state.map_entries('rk_map', 1::bigint, NULL::text, NULL::numeric);
SELECT state.map_size('rk_map', 1::bigint), state.map_contains('rk_map', 1::bigint, 'm100'),
       state.map_get('rk_map', 1::bigint, 'm100', -1::numeric) IS NULL AS null_value,
       state.map_get('rk_map', 1::bigint, 'm7', -1::numeric) AS m7;
SELECT state.map_remove('rk_map', 1::bigint, 'm7'), state.map_remove('rk_map', 1::bigint, 'm7');
SELECT name, entries FROM state.states WHERE name LIKE 'rk%' ORDER BY name;

---------------------------------------------------------------- not transactional
BEGIN;
SELECT state.value_set('rk_val', -1, 'kept');
SELECT state.reduce('rk_sum', 'a', 5);
ROLLBACK;
SELECT state.value_get('rk_val', -1, NULL::text), state.value_get('rk_sum', 'a', 0::bigint);
-- writes before an error in the same statement stay, as for heap states
SELECT rk_error($$SELECT state.value_set('rk_val', i, (10 / (3 - i))::text) FROM generate_series(1, 5) AS i$$);
SELECT state.value_get('rk_val', 1, NULL::text), state.value_get('rk_val', 2, NULL::text);
-- a write posted just before a drop of its state in the same statement
-- lands before the drop or fails in that statement (which of them depends
-- on when the worker wakes: 008_rocksdb.pl holds it to check the error)
SELECT state.create_state('rk_gone', 'value', 'text', 'int', backend => 'rocksdb');
SELECT rk_error($$SELECT state.value_set('rk_gone', 'k', 1), state.drop_state('rk_gone')$$)
       IN ('no error', '42704: state was dropped while this statement used it') AS either;
SELECT count(*) FROM state.states WHERE name = 'rk_gone';
-- the fold of a built-in reducer runs in the worker, atomically
SELECT max(state.reduce('rk_sum', 'b', i)) FROM generate_series(1, 1000) AS i;
SELECT state.clear('rk_sum', 'b'), state.clear('rk_sum', 'b'), state.value_get('rk_sum', 'b', -1::bigint);
SELECT state.reduce('rk_sum', 'b', 7);

---------------------------------------------------------------- snapshots
CREATE TABLE rk_before AS SELECT * FROM rk_dump();
-- rk_differences(): entries that differ between rk_before and now
CREATE FUNCTION rk_differences() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*)
      FROM ((SELECT * FROM rk_before EXCEPT ALL SELECT * FROM rk_dump())
            UNION ALL (SELECT * FROM rk_dump() EXCEPT ALL SELECT * FROM rk_before)) AS d
$$;
SELECT count(*) AS entries FROM rk_before;
-- native, to an explicit path: RocksDB's files, every one inside the snapshot
SELECT state.wait_snapshot(state.snapshot(rk_path('native')));
SELECT count(*) > 0 AS has_sst,
       bool_and(line NOT LIKE '%../shared/%') AS self_contained
  FROM regexp_split_to_table(pg_read_file(rk_path('native') || '/rocksdb/FILES'), E'\n') AS line
 WHERE line LIKE 'sst %';
-- the MANIFEST names a list of SST files for each rocksdb state
SELECT s.file LIKE 'db-%.sst.lst' AS is_list,
       (pg_stat_file(rk_path('native') || '/' || s.file)).size > 0 AS has_list
  FROM (SELECT substring(line FROM ' file=(\S+)') AS file
          FROM regexp_split_to_table(pg_read_file(rk_path('native') || '/MANIFEST'), E'\n') AS line
         WHERE line LIKE '% name=rk_map %') AS s;
-- change everything, then restore: the snapshot's contents come back
SELECT state.value_set('rk_val', 1, 'changed'), state.map_put('rk_map', 2, 'new', 1),
       state.list_add('rk_list', 'new', 1), state.reduce('rk_sum', 'a', 100);
SELECT state.restore(rk_path('native')) > 0 AS restored;
SELECT rk_differences() AS differences;
SELECT name, backend FROM state.states WHERE name LIKE 'rk%' ORDER BY name;
-- RocksDB files restore into rocksdb states only
SELECT rk_error($$SELECT state.restore(rk_path('native'), backend => 'memory')$$);

-- canonical: rocksdb -> memory -> rocksdb, identical every time
SELECT state.wait_snapshot(state.snapshot(rk_path('canon1'), 'canonical'));
SELECT state.restore(rk_path('canon1'), backend => 'memory') > 0 AS restored;
SELECT name, backend FROM state.states WHERE name LIKE 'rk%' ORDER BY name;
SELECT rk_differences() AS differences;
SELECT state.wait_snapshot(state.snapshot(rk_path('canon2'), 'canonical'));
SELECT state.restore(rk_path('canon2'), backend => 'rocksdb') > 0 AS restored;
SELECT name, backend FROM state.states WHERE name LIKE 'rk%' ORDER BY name;
SELECT rk_differences() AS differences;

-- a damaged RocksDB file list: the restore fails, the states stay
SELECT state.value_set('rk_val', 1, 'current');
\set files :datadir/rk_native/rocksdb/FILES
COPY (SELECT 'state_backend rocksdb files') TO :'files';
SELECT rk_error($$SELECT state.restore(rk_path('native'))$$);
SELECT state.value_get('rk_val', 1, NULL::text);

---------------------------------------------------------------- sessions' views
-- A session that reads a lot reads rocksdb states in a read-only view of
-- its own; a key the worker changed since the view caught up is asked of
-- the worker, so a read sees every write acknowledged before it.
SET state_backend.rocksdb_session_reads_after = 0;
SELECT state.create_state('rk_view', 'value', 'int', 'text', 'rocksdb');
SELECT state.create_state('rk_view_l', 'list', 'int', 'int', 'rocksdb');
SELECT state.create_state('rk_view_m', 'map', 'int', 'text', 'rocksdb', map_key_type => 'text');
SELECT count(state.value_set('rk_view', i, 'v' || i)) FROM generate_series(1, 100) i;
SELECT count(state.list_add('rk_view_l', i % 10, i)) FROM generate_series(1, 30) i;
SELECT state.map_put('rk_view_m', 1, 'a', 'x'), state.map_put('rk_view_m', 1, 'b', NULL::text);
SELECT value AS reads0 FROM state.worker WHERE name = 'rocksdb_session_reads' \gset
-- a view reads what is in table files: a snapshot flushes them (as the
-- worker does by itself after five seconds without writes)
SELECT state.wait_snapshot(state.snapshot(rk_path('views')));
-- (a view opens again to see a state made after it, at most once a second)
SELECT pg_sleep(1.1);
SELECT count(state.list_get('rk_view_l', i, NULL::int[])) FROM generate_series(1, 3) i;
SELECT state.list_get('rk_view_l', 3, NULL::int[]), state.list_get('rk_view_l', 99, '{}'::int[]);
SELECT state.map_get('rk_view_m', 1, 'a', NULL::text), state.map_get('rk_view_m', 1, 'b', 'dflt'::text),
       state.map_get('rk_view_m', 1, 'c', 'absent'::text), state.map_get('rk_view_m', 2, 'a', 'absent'::text);
SELECT value > :reads0 AS read_in_place FROM state.worker WHERE name = 'rocksdb_session_reads';
-- written, then read at once: the new values
SELECT state.value_set('rk_view', 7, 'changed'), state.list_add('rk_view_l', 3, 1000),
       state.map_put('rk_view_m', 1, 'a', 'y');
SELECT state.value_get('rk_view', 7, NULL::text), state.list_get('rk_view_l', 3, NULL::int[]),
       state.map_get('rk_view_m', 1, 'a', NULL::text);
SELECT state.clear('rk_view_l', 3);
SELECT state.list_get('rk_view_l', 3, '{}'::int[]), state.list_get('rk_view_l', 4, NULL::int[]);
SELECT pg_sleep(0.15);
SELECT state.list_get('rk_view_l', 3, '{}'::int[]), state.map_get('rk_view_m', 1, 'a', NULL::text);
-- truncated: no key is read as it was
SELECT state.truncate('rk_view_l');
SELECT state.list_get('rk_view_l', 4, '{}'::int[]);
SELECT pg_sleep(0.15);
SELECT state.list_get('rk_view_l', 4, '{}'::int[]);
-- dropped and made again under the same name: empty, then its own
SELECT state.drop_state('rk_view_m');
SELECT state.create_state('rk_view_m', 'map', 'int', 'text', 'rocksdb', map_key_type => 'text');
SELECT state.map_get('rk_view_m', 1, 'a', 'empty'::text);
SELECT state.map_put('rk_view_m', 1, 'a', 'new');
SELECT pg_sleep(0.15);
SELECT state.map_get('rk_view_m', 1, 'a', 'empty'::text);
-- off: the same answers, from the worker
SET state_backend.rocksdb_session_reads = off;
SELECT state.map_get('rk_view_m', 1, 'a', 'empty'::text), state.list_get('rk_view_l', 5, '{}'::int[]);
RESET state_backend.rocksdb_session_reads;
RESET state_backend.rocksdb_session_reads_after;

---------------------------------------------------------------- clean up
SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'rk%' ORDER BY name;
SELECT count(*) FROM state.states WHERE name LIKE 'rk%';
DROP FUNCTION rk_differences();
DROP TABLE rk_before, rk_conf;
DROP FUNCTION rk_dump(), rk_error(text), rk_path(text);
