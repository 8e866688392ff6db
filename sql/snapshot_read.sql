--
-- snapshot_states and snapshot_entries: a snapshot read with SQL, without
-- restoring it.  What a snapshot shows of a state is what entries() showed
-- of it when the snapshot was taken, in both formats; a damaged file gives
-- XX001 and no rows.
--
CREATE TABLE sr_conf AS SELECT current_setting('data_directory') AS datadir;
CREATE FUNCTION sr_path(name text) RETURNS text LANGUAGE sql AS $$
    SELECT datadir || '/sr_' || name || '_' || current_setting('state_backend.backend') FROM sr_conf
$$;
SELECT state.create_state('sr_v', 'value', 'int', 'text', backend => 'memory');
SELECT state.create_state('sr_r', 'reducing', 'text', 'bigint', backend => 'memory', reducer => 'sum');
SELECT state.create_state('sr_a', 'aggregating', 'int', 'numeric', backend => 'memory', aggregate => 'sum(numeric)');
SELECT state.create_state('sr_l', 'list', 'int', 'int', backend => 'memory');
SELECT state.create_state('sr_t', 'value', 'int', 'int', backend => 'memory', ttl => '1 hour');
SELECT state.create_state('sr_rocks', 'value', 'int', 'int', backend => 'rocksdb');
SELECT state.create_state('sr_rl', 'list', 'int', 'text', backend => 'rocksdb');
SELECT state.create_state('sr_ra', 'aggregating', 'int', 'float8', backend => 'rocksdb', aggregate => 'stddev(float8)');
SELECT count(state.value_set('sr_v', i, 'v' || i)) FROM generate_series(1, 500) i;
SELECT count(state.reduce('sr_r', 'k' || (i % 9), i::bigint)) FROM generate_series(1, 300) i;
SELECT count(state.aggregate('sr_a', i % 11, i / 3.0)) FROM generate_series(1, 300) i;
SELECT count(state.list_add('sr_l', i % 4, i)) FROM generate_series(1, 20) i;
SELECT count(state.value_set('sr_t', i, i)) FROM generate_series(1, 50) i;
SELECT count(state.value_set('sr_rocks', i, i)) FROM generate_series(1, 50) i;
SELECT count(state.list_add('sr_rl', i % 5, 'r' || i)) FROM generate_series(1, 25) i;
SELECT count(state.aggregate('sr_ra', i % 6, i::float8)) FROM generate_series(1, 60) i;
-- what entries() shows now, to compare with the snapshots
CREATE TABLE sr_then AS
    SELECT 'sr_v' AS state, key::text, value::text FROM state.entries('sr_v', 0, ''::text)
    UNION ALL SELECT 'sr_r', key, value::text FROM state.entries('sr_r', ''::text, 0::bigint)
    UNION ALL SELECT 'sr_a', key::text, value::text FROM state.entries('sr_a', 0, 0::numeric)
    UNION ALL SELECT 'sr_l', key::text, value::text FROM state.entries('sr_l', 0, NULL::int[])
    UNION ALL SELECT 'sr_t', key::text, value::text FROM state.entries('sr_t', 0, 0)
    UNION ALL SELECT 'sr_rocks', key::text, value::text FROM state.entries('sr_rocks', 0, 0)
    UNION ALL SELECT 'sr_rl', key::text, value::text FROM state.entries('sr_rl', 0, NULL::text[])
    UNION ALL SELECT 'sr_ra', key::text, value::text FROM state.entries('sr_ra', 0, 0::float8);
SELECT state.wait_snapshot(state.snapshot(sr_path('native'), 'native'));
SELECT state.wait_snapshot(state.snapshot(sr_path('canonical'), 'canonical'));
-- changes after the snapshots do not show in them
SELECT state.value_set('sr_v', 1, 'changed'), state.reduce('sr_r', 'k1', 1000::bigint),
       state.aggregate('sr_a', 1, 1000::numeric), state.list_add('sr_l', 1, 1000),
       state.clear('sr_t', 1), state.value_set('sr_rocks', 1, -1), state.list_add('sr_rl', 1, 'late'),
       state.aggregate('sr_ra', 1, 1000::float8);

-- sr_shown(format): what a snapshot shows of every state, as sr_then
CREATE FUNCTION sr_shown(format text) RETURNS TABLE(state text, key text, value text)
LANGUAGE sql AS $$
    SELECT 'sr_v', key::text, value::text FROM state.snapshot_entries(sr_path(format), 'sr_v', 0, ''::text)
    UNION ALL SELECT 'sr_r', key, value::text FROM state.snapshot_entries(sr_path(format), 'sr_r', ''::text, 0::bigint)
    UNION ALL SELECT 'sr_a', key::text, value::text FROM state.snapshot_entries(sr_path(format), 'sr_a', 0, 0::numeric)
    UNION ALL SELECT 'sr_l', key::text, value::text FROM state.snapshot_entries(sr_path(format), 'sr_l', 0, NULL::int[])
    UNION ALL SELECT 'sr_t', key::text, value::text FROM state.snapshot_entries(sr_path(format), 'sr_t', 0, 0)
    UNION ALL SELECT 'sr_rocks', key::text, value::text FROM state.snapshot_entries(sr_path(format), 'sr_rocks', 0, 0)
    UNION ALL SELECT 'sr_rl', key::text, value::text FROM state.snapshot_entries(sr_path(format), 'sr_rl', 0, NULL::text[])
    UNION ALL SELECT 'sr_ra', key::text, value::text FROM state.snapshot_entries(sr_path(format), 'sr_ra', 0, 0::float8)
$$;
SELECT f AS format, (SELECT count(*) FROM sr_shown(f)) AS rows,
       (SELECT count(*) FROM (SELECT * FROM sr_shown(f) EXCEPT ALL SELECT * FROM sr_then) x) AS extra,
       (SELECT count(*) FROM (SELECT * FROM sr_then EXCEPT ALL SELECT * FROM sr_shown(f)) x) AS missing
  FROM unnest(ARRAY['native', 'canonical']) f;
SELECT f AS format, name, kind, backend, key_type, value_type, map_key_type, entries, bytes > 0 AS has_bytes
  FROM unnest(ARRAY['native', 'canonical']) f, state.snapshot_states(sr_path(f))
 WHERE name LIKE 'sr\_%' ORDER BY f, name;
-- rocksdb states of a native snapshot are read out of RocksDB's own files
SELECT f AS format, count(*), sum(value) FROM unnest(ARRAY['native', 'canonical']) f,
       state.snapshot_entries(sr_path(f), 'sr_rocks', 0, 0) GROUP BY f ORDER BY f;
SELECT replace(expect_error(format($$SELECT * FROM state.snapshot_entries(%L, 'sr_nope', 0, 0)$$, sr_path('native'))),
               sr_path('native'), '<path>') AS no_state;
SELECT expect_error(format($$SELECT * FROM state.snapshot_entries(%L, 'sr_v', 0, 0)$$, sr_path('native')));

-- a damaged file: XX001, no row
SELECT substring(pg_read_file(sr_path('canonical') || '/MANIFEST') FROM ' name=sr_v [^\n]* file=([^ ]+) ') AS vfile \gset
SELECT sr_path('canonical') || '/' || :'vfile' AS vpath \gset
SELECT write_file(:'vpath', set_byte(pg_read_binary_file(:'vpath'), 100,
                                   get_byte(pg_read_binary_file(:'vpath'), 100) # 255));
SELECT left(expect_error(format($$SELECT count(*) FROM state.snapshot_entries(%L, 'sr_v', 0, ''::text)$$,
                                sr_path('canonical'))), 5) AS damaged;
-- and a native snapshot's RocksDB file list
SELECT sr_path('native') || '/rocksdb/FILES' AS fpath \gset
SELECT write_file(:'fpath', set_byte(pg_read_binary_file(:'fpath'), 10,
                                   get_byte(pg_read_binary_file(:'fpath'), 10) # 255));
SELECT left(expect_error(format($$SELECT count(*) FROM state.snapshot_entries(%L, 'sr_rocks', 0, 0)$$,
                                sr_path('native'))), 5) AS damaged_native;

-- the same privileges as restore from a path
CREATE ROLE sr_role;
SELECT sr_path('native') AS npath \gset
SET ROLE sr_role;
SELECT left(expect_error(format($$SELECT * FROM state.snapshot_states(%L)$$, :'npath')), 5) AS denied_states;
SELECT left(expect_error(format($$SELECT * FROM state.snapshot_entries(%L, 'sr_v', 0, ''::text)$$, :'npath')), 5) AS denied_entries;
RESET ROLE;
DROP ROLE sr_role;

-- a snapshot kept in shared memory needs no file privilege: reading a state
-- of it takes read access to the state, as the snapshot recorded it, and
-- CONNECT on its database
SELECT state.create_state('sr_mem', 'value', 'int', 'text', backend => 'memory');
SELECT state.value_set('sr_mem', 1, 'kept');
SELECT state.snapshot() AS memsnap \gset
SELECT state.wait_snapshot(:memsnap);
CREATE ROLE sr_reader;
GRANT USAGE ON SCHEMA state TO sr_reader;
GRANT EXECUTE ON FUNCTION state.snapshot_entries(text, text, anyelement, anycompatible, text) TO sr_reader;
SET ROLE sr_reader;
SELECT expect_error(format($$SELECT * FROM state.snapshot_entries(%L, 'sr_mem', 0, ''::text)$$,
                           'memory:' || :memsnap)) AS no_grant;
RESET ROLE;
SELECT state.grant_access('sr_mem', 'sr_reader', 'read');
SELECT state.snapshot() AS memsnap \gset
SELECT state.wait_snapshot(:memsnap);
SET ROLE sr_reader;
SELECT * FROM state.snapshot_entries('memory:' || :memsnap, 'sr_mem', 0, ''::text);
RESET ROLE;
REVOKE CONNECT ON DATABASE :"DBNAME" FROM PUBLIC;
SET ROLE sr_reader;
SELECT replace(expect_error(format($$SELECT * FROM state.snapshot_entries(%L, 'sr_mem', 0, ''::text)$$,
                                   'memory:' || :memsnap)), :'DBNAME', '$DBNAME') AS no_connect;
RESET ROLE;
GRANT CONNECT ON DATABASE :"DBNAME" TO PUBLIC;
SELECT state.revoke_access('sr_mem', 'sr_reader', 'read');
REVOKE EXECUTE ON FUNCTION state.snapshot_entries(text, text, anyelement, anycompatible, text) FROM sr_reader;
REVOKE USAGE ON SCHEMA state FROM sr_reader;
DROP ROLE sr_reader;

SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'sr\_%' ORDER BY name;
