--
-- snapshot: state.snapshot, the state.snapshots view, wait_snapshot,
-- cancel_snapshot and state.restore.  Round trips of every kind and of many
-- types, in both formats; restore over changed state; the point-in-time cut;
-- snapshots kept in shared memory; per-database sections; the files on disk
-- and what a restore does with damaged ones; errors and privileges.
--
-- Snapshot directories go under the test server's data directory (this
-- server has no state_backend.checkpoint_dir).  Outputs never show a path:
-- they show $DATADIR for the data directory, and no snapshot ids.
--
SELECT count(*) AS states_at_start FROM state.states;
SHOW state_backend.checkpoint_dir;
SELECT current_setting('data_directory') AS datadir \gset
SELECT oid AS dboid FROM pg_database WHERE datname = current_database() \gset
-- the data directory, for roles that may not read the setting
CREATE TABLE snap_conf AS SELECT current_setting('data_directory') AS datadir;
GRANT SELECT ON snap_conf TO PUBLIC;

-- snap_path(name): where the snapshot called name goes
CREATE FUNCTION snap_path(name text) RETURNS text LANGUAGE sql AS $$
    SELECT datadir || '/snap_' || name FROM snap_conf
$$;
-- snap_error(sql): expect_error, with the data directory shown as $DATADIR
-- and the ids of snapshots taken here as N
CREATE FUNCTION snap_error(sql text) RETURNS text LANGUAGE sql AS $$
    SELECT regexp_replace(replace(expect_error(sql), datadir, '$DATADIR'),
                          'snapshot [0-9]+ (failed|was cancelled|is still running)',
                          'snapshot N \1', 'g')
      FROM snap_conf
$$;
-- a role's name, with the session user (who runs the tests) as "me"
CREATE FUNCTION snap_role(r regrole) RETURNS text LANGUAGE sql AS $$
    SELECT CASE WHEN r::oid = (SELECT oid FROM pg_roles WHERE rolname = session_user)
                THEN 'me' ELSE r::text END
$$;
-- take(name, format): a snapshot into snap_path(name), waited for
CREATE FUNCTION take(name text, format text DEFAULT 'native') RETURNS text LANGUAGE sql AS $$
    SELECT state.wait_snapshot(state.snapshot(snap_path(name), format))
$$;
-- back(name, backend): restore snap_path(name); the number of entries restored
CREATE FUNCTION back(name text, backend text DEFAULT NULL) RETURNS bigint LANGUAGE sql AS $$
    SELECT state.restore(snap_path(name), backend)
$$;
-- snap_row(id): the state.snapshots row of a snapshot, without times and ids
CREATE FUNCTION snap_row(snap bigint) RETURNS TABLE(
    path text, format text, status text, times_ok boolean, states bigint,
    entries bigint, has_bytes boolean, incremental boolean, error text)
LANGUAGE sql AS $$
    SELECT replace(path, datadir, '$DATADIR'), format, status,
           started_at <= coalesce(finished_at, started_at), states, entries, bytes > 0,
           incremental, replace(error, datadir, '$DATADIR')
      FROM state.snapshots, snap_conf WHERE id = snap
$$;
-- the id of the latest snapshot
CREATE FUNCTION last_snap() RETURNS bigint LANGUAGE sql AS $$
    SELECT max(id) FROM state.snapshots
$$;

-- snap_dump(): every key of every state of this database, with its value
-- as text (lists as arrays, maps as 'map_key=>value, ...' in map key order)
CREATE FUNCTION snap_dump() RETURNS TABLE(state text, key text, value text)
LANGUAGE plpgsql AS $$
DECLARE
    s record;
    getter text;
BEGIN
    FOR s IN SELECT * FROM state.states ORDER BY name LOOP
        getter := CASE s.kind
            WHEN 'list' THEN format('state.list_get(%L, k, NULL::%s[])::text', s.name, s.value_type)
            WHEN 'map' THEN format(
                $f$(SELECT string_agg(e.mk::text || '=>' || coalesce(e.v::text, 'NULL'), ', '
                                      ORDER BY e.mk::text COLLATE "C")
                      FROM state.map_entries(%L, k, NULL::%s, NULL::%s) AS e(mk, v))$f$,
                s.name, s.map_key_type, s.value_type)
            ELSE format('state.value_get(%L, k, NULL::%s)::text', s.name, s.value_type)
        END;
        RETURN QUERY EXECUTE format('SELECT %L::text, k::text, %s FROM state.keys(%L, NULL::%s) AS k',
                                    s.name, getter, s.name, s.key_type);
    END LOOP;
END
$$;
-- snap_text(t): t for reading, in ASCII: long texts cut, other characters escaped
CREATE FUNCTION snap_text(t text) RETURNS text LANGUAGE sql AS $$
    SELECT CASE WHEN t IS NULL THEN 'NULL'
                WHEN length(t) > 60 THEN left(t, 30) || '... (' || length(t) || ' chars, md5 ' || md5(t) || ')'
                ELSE replace(replace(encode(convert_to(t, 'UTF8'), 'escape'), E'\t', '\t'), E'\n', '\n') END
$$;
-- snap_show(): snap_dump() for reading
CREATE FUNCTION snap_show(only_states text[] DEFAULT NULL)
RETURNS TABLE(state text, key text, value text) LANGUAGE sql AS $$
    SELECT state, snap_text(key), snap_text(value)
      FROM snap_dump()
     WHERE only_states IS NULL OR state = ANY (only_states)
     ORDER BY state COLLATE "C", key COLLATE "C"
$$;
-- snap_summary(): per state, its number of keys and a digest of its contents
CREATE FUNCTION snap_summary() RETURNS TABLE(state text, keys bigint, digest text) LANGUAGE sql AS $$
    SELECT state, count(*),
           left(md5(string_agg(key || '=' || coalesce(value, 'NULL'), E'\n' ORDER BY key COLLATE "C")), 12)
      FROM snap_dump() GROUP BY state ORDER BY state COLLATE "C"
$$;
-- the states' descriptors as state.states shows them
CREATE FUNCTION snap_descs() RETURNS TABLE(
    name text, kind text, backend text, key_type text, value_type text,
    map_key_type text, reducer text, owner text, entries bigint)
LANGUAGE sql AS $$
    SELECT name, kind, backend, key_type::text, value_type::text, map_key_type::text,
           reducer, snap_role(owner), entries
      FROM state.states ORDER BY name COLLATE "C"
$$;
-- what a state held when remembered with snap_remember(), and the descriptors
CREATE TABLE snap_before (state text, key text, value text);
CREATE TABLE snap_descs_before AS SELECT * FROM snap_descs();
CREATE FUNCTION snap_remember() RETURNS bigint LANGUAGE sql AS $$
    DELETE FROM snap_before;
    DELETE FROM snap_descs_before;
    INSERT INTO snap_descs_before SELECT * FROM snap_descs();
    INSERT INTO snap_before SELECT * FROM snap_dump();
    SELECT count(*) FROM snap_before;
$$;
-- snap_diff(): every difference from what was remembered ('lost' was there
-- and is not now, 'new' is there now and was not), states and descriptors
CREATE FUNCTION snap_diff() RETURNS TABLE(side text, state text, key text, value text)
LANGUAGE sql AS $$
    WITH now AS (SELECT * FROM snap_dump()),
         dnow AS (SELECT * FROM snap_descs())
    SELECT * FROM (
        SELECT 'lost', * FROM (SELECT * FROM snap_before EXCEPT ALL SELECT * FROM now) a
        UNION ALL
        SELECT 'new', * FROM (SELECT * FROM now EXCEPT ALL SELECT * FROM snap_before) b
        UNION ALL
        SELECT 'lost descriptor', d.name, NULL, d::text
          FROM (SELECT * FROM snap_descs_before EXCEPT ALL SELECT * FROM dnow) d
        UNION ALL
        SELECT 'new descriptor', d.name, NULL, d::text
          FROM (SELECT * FROM dnow EXCEPT ALL SELECT * FROM snap_descs_before) d
    ) x(side, state, key, value) ORDER BY side, state COLLATE "C", key COLLATE "C"
$$;

---------------------------------------------------------------- the view
SELECT attnum, attname, format_type(atttypid, atttypmod) AS type
  FROM pg_attribute
 WHERE attrelid = 'state.snapshots'::regclass AND attnum > 0 AND NOT attisdropped
 ORDER BY attnum;

---------------------------------------------------------------- states of every kind and many types
CREATE TYPE snap_pair AS (n integer, t text);
CREATE ROLE regress_sb_snap_owner;
CREATE ROLE regress_sb_snap_reader;

SELECT state.create_state('rt_text', 'value', 'text', 'text');
SELECT count(state.value_set('rt_text', k, v)) FROM (VALUES
    ('a', 'alpha'),
    ('', 'the empty key'),
    ('ünïcödé', 'ß→∑ 😀'),
    ('spaces and "quotes"', E'tab\there, newline\nthere, back\\slash'),
    ('empty value', ''),
    -- a value larger than a block of the snapshot file (64 kB)
    ('big', repeat('0123456789abcdef', 10000))) AS t(k, v);

SELECT state.create_state('rt_int', 'value', 'bigint', 'bigint');
SELECT count(state.value_set('rt_int', i, i * i)) FROM generate_series(1, 2000) AS i;
SELECT state.value_set('rt_int', -9223372036854775808, 9223372036854775807);
SELECT state.value_set('rt_int', 0, 0::bigint);

SELECT state.create_state('rt_uuid', 'value', 'uuid', 'numeric');
SELECT count(state.value_set('rt_uuid', k, v)) FROM (VALUES
    ('00000000-0000-0000-0000-000000000000'::uuid, 0::numeric),
    ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'NaN'),
    ('ffffffff-ffff-ffff-ffff-ffffffffffff', '-123456789012345678901234567890.000000000000000000001'),
    ('12345678-1234-5678-1234-567812345678', 1e-30)) AS t(k, v);

-- the default types: text keys, jsonb values
SELECT state.create_state('rt_json', 'value');
SELECT count(state.value_set('rt_json', k, v)) FROM (VALUES
    ('doc', '{"a": [1, 2.5, null, true], "b": {"c": "d"}, "e": ""}'::jsonb),
    ('scalar', '"just a string"'),
    ('null', 'null')) AS t(k, v);

SELECT state.create_state('rt_comp', 'value', 'bigint', 'snap_pair');
SELECT count(state.value_set('rt_comp', k, v)) FROM (VALUES
    (1, ROW(1, 'one')::snap_pair),
    (2, ROW(NULL, 'no number')::snap_pair),
    (3, ROW(NULL, NULL)::snap_pair)) AS t(k, v);

-- arrays as keys and values; a composite as a key
SELECT state.create_state('rt_arr', 'value', 'integer[]', 'text[]');
SELECT count(state.value_set('rt_arr', k, v)) FROM (VALUES
    (ARRAY[1, 2, 3], ARRAY['a', NULL, 'b c']),
    ('{}', '{}'),
    ('{{1,2},{3,4}}', ARRAY['two dims'])) AS t(k, v);
SELECT state.create_state('rt_compkey', 'value', 'snap_pair', 'date');
SELECT count(state.value_set('rt_compkey', k, v)) FROM (VALUES
    (ROW(7, 'seven')::snap_pair, '2024-02-29'::date),
    (ROW(8, NULL)::snap_pair, 'infinity')) AS t(k, v);

SELECT state.create_state('rt_list', 'list', 'text', 'bigint');
-- 'long' is longer than a block of the snapshot file
SELECT state.list_add_all('rt_list', 'short', ARRAY[3, 1, 2]::bigint[]),
       state.list_add('rt_list', 'short', 3::bigint),
       state.list_add_all('rt_list', 'long', (SELECT array_agg(i::bigint) FROM generate_series(1, 20000) AS i));
SELECT state.create_state('rt_list_c', 'list', 'integer', 'snap_pair');
SELECT state.list_add('rt_list_c', 1, ROW(1, 'a')::snap_pair), state.list_add('rt_list_c', 1, ROW(2, NULL)::snap_pair);

SELECT state.create_state('rt_map', 'map', 'bigint', 'numeric', map_key_type => 'uuid');
SELECT state.map_put_all('rt_map', 1,
    ARRAY['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12']::uuid[],
    ARRAY[1.5, 2.25]::numeric[]);
SELECT state.map_put('rt_map', 2, '00000000-0000-0000-0000-000000000001', 99::numeric);
SELECT count(state.map_put('rt_map', 3, md5(i::text)::uuid, i::numeric)) FROM generate_series(1, 500) AS i;
SELECT state.create_state('rt_map_j', 'map', 'text', 'jsonb', map_key_type => 'text');
SELECT state.map_put('rt_map_j', 'k', 'x', '{"x": 1}'::jsonb), state.map_put('rt_map_j', 'k', '', '[]'::jsonb);

SELECT state.create_state('rt_sum', 'reducing', 'text', 'bigint', reducer => 'sum');
SELECT state.reduce('rt_sum', 'k', 40::bigint), state.reduce('rt_sum', 'k', 2::bigint);
SELECT state.create_state('rt_max', 'reducing', 'integer', 'numeric', reducer => 'max');
SELECT state.reduce('rt_max', 1, 1.5), state.reduce('rt_max', 1, 10.25), state.reduce('rt_max', 1, 3::numeric);
SELECT state.create_state('rt_min', 'reducing', 'integer', 'integer', reducer => 'min');
SELECT state.reduce('rt_min', 1, 5), state.reduce('rt_min', 1, -5), state.reduce('rt_min', 2, 7);

-- states with nothing in them
SELECT state.create_state('rt_empty', 'value');
SELECT state.create_state('rt_empty_map', 'map', 'text', 'text');
SELECT state.create_state('rt_emptied', 'list', 'text', 'text');
SELECT state.list_add('rt_emptied', 'k', 'gone'), state.clear('rt_emptied', 'k');

-- a filesystem state, and a state that belongs to another role, with a grant
SELECT state.create_state('rt_fs', 'value', 'text', 'text', backend => 'filesystem');
SELECT state.value_set('rt_fs', 'k', 'on the filesystem backend');
SET ROLE regress_sb_snap_owner;
SELECT state.create_state('rt_owned', 'value', 'text', 'integer');
SELECT state.value_set('rt_owned', 'k', 42);
SELECT state.grant_access('rt_owned', 'regress_sb_snap_reader', 'read');
RESET ROLE;

SELECT * FROM snap_descs();
SELECT * FROM snap_show() WHERE state NOT IN ('rt_int', 'rt_map');
SELECT * FROM snap_summary();
SELECT snap_remember() AS keys_remembered;

---------------------------------------------------------------- a native snapshot to a path
SELECT state.snapshot(snap_path('rt')) AS id \gset
SELECT state.wait_snapshot(:id);
-- waiting again gives the same answer
SELECT state.wait_snapshot(:id, '1 s');
SELECT * FROM snap_row(:id);
-- the view counts every state and entry of the snapshot (there are no
-- states in other databases yet)
SELECT s.states = (SELECT count(*) FROM state.states) AS all_states,
       s.entries = (SELECT sum(entries) FROM state.states) AS all_entries,
       s.bytes > 0 AS has_bytes
  FROM state.snapshots s WHERE id = :id;
-- cancelling a snapshot that is done does nothing
SELECT state.cancel_snapshot(:id);
SELECT status FROM state.snapshots WHERE id = :id;

-- the layout: a MANIFEST and a directory per database, in it a .kg file per state
SELECT replace(f, :'dboid', '$DBOID') AS file
  FROM pg_ls_dir(snap_path('rt')) AS f ORDER BY f;
SELECT count(*) AS kg_files, bool_and(f ~ '^[0-9]+\.kg$') AS all_named_id_kg
  FROM pg_ls_dir(snap_path('rt') || '/db-' || :'dboid') AS f;
-- the MANIFEST: first line, format, every state by name, and a checksum last
CREATE TABLE snap_manifest AS
    SELECT n, line FROM regexp_split_to_table(rtrim(pg_read_file(snap_path('rt') || '/MANIFEST'), E'\n'), E'\n')
                        WITH ORDINALITY AS t(line, n);
SELECT line FROM snap_manifest WHERE n = 1;
SELECT line FROM snap_manifest WHERE line ~ '^(format|format_version|key_groups) ';
SELECT line ~ '^crc32c [0-9A-F]{8}$' AS checksum_last
  FROM snap_manifest WHERE n = (SELECT max(n) FROM snap_manifest);
SELECT line = 'database ' || :'dboid' || ' ' || current_database() AS database_line
  FROM snap_manifest WHERE line LIKE 'database %';
SELECT * FROM (
SELECT substring(line FROM ' name=([^ ]+) ') AS name,
       substring(line FROM ' kind=([^ ]+) ') AS kind,
       substring(line FROM ' backend=([^ ]+) ') AS backend,
       snap_role(substring(line FROM ' owner=([^ ]+) ')::regrole) AS owner,
       substring(line FROM ' entries=([0-9]+)')::bigint AS entries,
       -- each file is where the MANIFEST says, with the size it says
       (pg_stat_file(snap_path('rt') || '/' || substring(line FROM ' file=([^ ]+) '))).size
           = substring(line FROM ' size=([0-9]+)')::bigint AS size_matches
  FROM snap_manifest WHERE line LIKE 'state %') AS states ORDER BY name COLLATE "C";
-- the view's bytes are at least the state files' bytes
SELECT s.bytes >= (SELECT sum((pg_stat_file(snap_path('rt') || '/db-' || :'dboid' || '/' || f)).size)
                     FROM pg_ls_dir(snap_path('rt') || '/db-' || :'dboid') AS f) AS bytes_cover_files
  FROM state.snapshots s WHERE id = :id;

---------------------------------------------------------------- restore over changed state
-- values changed, keys added and removed, a state dropped, one created
SELECT state.value_set('rt_text', 'a', 'changed'), state.value_set('rt_text', 'added', 'after the snapshot'),
       state.value_set('rt_text', 'big', 'small now'), state.clear('rt_text', '');
SELECT count(state.value_set('rt_int', i, -i)) FROM generate_series(1, 1000) AS i;
SELECT count(state.clear('rt_int', i)) FROM generate_series(1001, 1500) AS i;
SELECT count(state.value_set('rt_int', i, i)) FROM generate_series(5001, 5100) AS i;
SELECT state.drop_state('rt_uuid');
SELECT state.value_set('rt_json', 'doc', '{"changed": true}'::jsonb),
       state.value_set('rt_comp', 1, ROW(-1, 'minus one')::snap_pair),
       state.value_set('rt_arr', ARRAY[1, 2, 3], NULL::text[]);
SELECT state.list_add('rt_list', 'short', 4::bigint), state.list_update('rt_list', 'long', ARRAY[0]::bigint[]),
       state.list_add('rt_list', 'new', 1::bigint), state.truncate('rt_list_c');
SELECT state.map_remove('rt_map', 1, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
       state.map_put('rt_map', 1, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13', 3::numeric),
       state.clear('rt_map', 3);
SELECT state.reduce('rt_sum', 'k', 100::bigint), state.reduce('rt_sum', 'other', 1::bigint),
       state.reduce('rt_max', 1, 1000::numeric), state.reduce('rt_min', 1, -1000);
SELECT state.value_set('rt_empty', 'not empty', '1'::jsonb), state.map_put('rt_empty_map', 'k', 'mk', 'v'),
       state.list_add('rt_emptied', 'k', 'back'), state.value_set('rt_fs', 'k', 'changed'),
       state.value_set('rt_owned', 'k', 0);
SELECT state.create_state('rt_new', 'value', 'text', 'text');
SELECT state.value_set('rt_new', 'k', 'created after the snapshot');
-- the changes, in short
SELECT side, count(*), string_agg(DISTINCT state, ' ') AS states FROM snap_diff() GROUP BY side ORDER BY side;

SELECT back('rt') AS restored;
-- exactly what the snapshot held: no difference
SELECT * FROM snap_diff();
SELECT * FROM snap_summary();
SELECT * FROM snap_show() WHERE state NOT IN ('rt_int', 'rt_map');
-- the state created after the snapshot is gone, the dropped one is back
SELECT name FROM state.states WHERE name IN ('rt_new', 'rt_uuid');
SELECT snap_error($$SELECT state.value_get('rt_new', 'k', NULL::text)$$);
-- the restored states keep their owner and grants
SELECT name, snap_role(owner) AS owner FROM state.states WHERE name IN ('rt_owned', 'rt_text') ORDER BY name;
SET ROLE regress_sb_snap_owner;
SELECT state.value_get('rt_owned', 'k', -1);
SELECT state.value_set('rt_owned', 'k2', 43);
SET ROLE regress_sb_snap_reader;
SELECT state.value_get('rt_owned', 'k', -1), state.value_get('rt_owned', 'k2', -1);
SELECT snap_error($$SELECT state.value_set('rt_owned', 'k', 1)$$);
SELECT snap_error($$SELECT state.value_get('rt_text', 'a', NULL::text)$$);
RESET ROLE;
SELECT state.clear('rt_owned', 'k2');
-- the restored states work as any other: write, read, then back to the snapshot
SELECT state.reduce('rt_sum', 'k', 1::bigint);
SELECT state.list_add('rt_list', 'short', 5::bigint);
SELECT state.list_get('rt_list', 'short', NULL::bigint[]);
SELECT state.map_size('rt_map', 3);
SELECT back('rt') AS restored_again;
SELECT count(*) AS differences FROM snap_diff();

-- a path can be a file:// URL, and is taken in its canonical form
SELECT state.wait_snapshot(state.snapshot('file://' || :'datadir' || '//snap_url/'));
SELECT path, status FROM snap_row(last_snap());
SELECT state.value_set('rt_text', 'a', 'changed again');
SELECT state.restore('file://' || :'datadir' || '/snap_url') AS restored;
SELECT count(*) AS differences FROM snap_diff();

---------------------------------------------------------------- canonical format
SELECT take('rt_canonical', 'canonical');
SELECT * FROM snap_row(last_snap());
SELECT substring(pg_read_file(snap_path('rt_canonical') || '/MANIFEST') FROM E'\nformat ([a-z]+)\n') AS manifest_format;
SELECT state.value_set('rt_text', 'a', 'changed'), state.drop_state('rt_comp'),
       state.create_state('rt_new', 'list', 'text', 'text');
SELECT back('rt_canonical') AS restored;
SELECT count(*) AS differences FROM snap_diff();
SELECT * FROM snap_diff();

---------------------------------------------------------------- restore into another backend
-- every state into filesystem, then every state into memory, from both formats
SELECT back('rt_canonical', 'filesystem') AS restored;
SELECT backend, count(*) FROM state.states GROUP BY backend;
SELECT side, state, key, value FROM snap_diff() WHERE side NOT LIKE '% descriptor';
SELECT back('rt', 'memory') AS restored;
SELECT backend, count(*) FROM state.states GROUP BY backend;
SELECT side, state, key, value FROM snap_diff() WHERE side NOT LIKE '% descriptor';
SELECT back('rt_canonical', 'memory') AS restored;
SELECT backend, count(*) FROM state.states GROUP BY backend;
SELECT back('rt', 'jobmanager') AS restored;
SELECT backend, count(*) FROM state.states GROUP BY backend;
SELECT back('rt', 'filesystem') AS restored;
SELECT backend, count(*) FROM state.states GROUP BY backend;
-- and each state back to its own backend
SELECT back('rt') AS restored;
SELECT count(*) AS differences FROM snap_diff();

---------------------------------------------------------------- a type dropped and created again
-- the canonical format reads values with the type's receive function, so a
-- type created again (with a new oid) takes them back
SELECT state.drop_state('rt_comp'), state.drop_state('rt_compkey'), state.drop_state('rt_list_c');
DROP TYPE snap_pair;
-- a restore that needs a missing type fails, and changes nothing
SELECT state.value_set('rt_text', 'a', 'kept');
SELECT regexp_replace(snap_error($$SELECT back('rt_canonical')$$), 'of state "[^"]+"', 'of state "..."') AS error,
       substring(snap_error($$SELECT back('rt_canonical')$$) FROM 'of state "([^"]+)"')
           IN ('rt_comp', 'rt_compkey', 'rt_list_c') AS names_a_state_of_the_type;
SELECT state.value_get('rt_text', 'a', NULL::text);
SELECT name FROM state.states WHERE name LIKE 'rt_comp%' OR name = 'rt_list_c';
CREATE TYPE snap_pair AS (n integer, t text);
SELECT back('rt_canonical') AS restored;
SELECT count(*) AS differences FROM snap_diff();
SELECT * FROM snap_show(ARRAY['rt_comp', 'rt_compkey', 'rt_list_c']);

---------------------------------------------------------------- snapshots kept in shared memory
-- with no checkpoint directory, state.snapshot() keeps memory states in
-- shared memory; a filesystem state's snapshot needs a path
SELECT snap_error($$SELECT state.snapshot()$$);
SELECT state.drop_state('rt_fs');
SELECT snap_remember() AS keys_remembered;
SELECT state.snapshot() AS mem1 \gset
SELECT state.wait_snapshot(:mem1);
SELECT path = 'memory:' || :mem1 AS memory_path, format, status, states, entries,
       entries = (SELECT sum(entries) FROM state.states) AS all_entries
  FROM state.snapshots WHERE id = :mem1;
SELECT state.value_set('rt_text', 'a', 'changed'), state.drop_state('rt_map'),
       state.create_state('rt_new2', 'value');
SELECT state.restore('memory:' || :mem1) AS restored;
SELECT count(*) AS differences FROM snap_diff();
-- into another backend
SELECT state.restore('memory:' || :mem1, 'filesystem') AS restored;
SELECT backend, count(*) FROM state.states GROUP BY backend;
SELECT side, state, key, value FROM snap_diff() WHERE side NOT LIKE '% descriptor';
SELECT state.restore('memory:' || :mem1) AS restored;
SELECT backend, count(*) FROM state.states GROUP BY backend;
-- only the newest (state_backend.checkpoints_retained = 1) is kept
SHOW state_backend.checkpoints_retained;
SELECT state.snapshot() AS mem2 \gset
SELECT state.wait_snapshot(:mem2);
SELECT replace(snap_error(format('SELECT state.restore(%L)', 'memory:' || :mem1)), 'memory:' || :mem1, 'memory:<first>')
       AS error;
SELECT state.restore('memory:' || :mem2) AS restored;
SELECT count(*) AS differences FROM snap_diff();
-- no such memory snapshot
SELECT snap_error($$SELECT state.restore('memory:0')$$);
SELECT snap_error($$SELECT state.restore('memory:')$$);
SELECT snap_error($$SELECT state.restore('memory:x1')$$);
SELECT snap_error($$SELECT state.restore('memory:999999999')$$);
SELECT snap_error($$SELECT state.restore('memory:-1')$$);

---------------------------------------------------------------- a checkpoint root
-- a directory of chk-<id> snapshots restores its newest complete one, the
-- one with the highest id.  The root here is a snapshot's db-<oid>
-- directory, which has no MANIFEST of its own.
SELECT take('ckroot');
SELECT snap_path('ckroot') || '/db-' || :'dboid' AS ckroot \gset
SELECT state.value_set('rt_text', 'a', 'in chk-12');
SELECT state.wait_snapshot(state.snapshot(:'ckroot' || '/chk-12'));
SELECT state.value_set('rt_text', 'a', 'in chk-5');
SELECT state.wait_snapshot(state.snapshot(:'ckroot' || '/chk-5'));
SELECT state.value_set('rt_text', 'a', 'in chk-x');
SELECT state.wait_snapshot(state.snapshot(:'ckroot' || '/chk-x'));
SELECT state.value_set('rt_text', 'a', 'in no snapshot');
SELECT state.restore(:'ckroot') AS restored;
SELECT state.value_get('rt_text', 'a', NULL::text);
SELECT state.restore('file://' || :'ckroot' || '/') AS restored;
SELECT state.value_get('rt_text', 'a', NULL::text);
SELECT state.restore('memory:' || :mem2) AS restored;
SELECT count(*) AS differences FROM snap_diff();

---------------------------------------------------------------- the cut: exactly the state as of the call
SELECT state.create_state('cut_v', 'value', 'bigint', 'bigint');
SELECT state.create_state('cut_l', 'list', 'bigint', 'bigint');
SELECT state.create_state('cut_m', 'map', 'bigint', 'bigint', map_key_type => 'bigint');
SELECT state.create_state('cut_r', 'reducing', 'bigint', 'bigint', reducer => 'sum');
SELECT state.create_state('cut_gone', 'value', 'bigint', 'bigint');
SELECT count(state.value_set('cut_v', i, i)) FROM generate_series(1, 100000) AS i;
SELECT count(state.list_add('cut_l', i % 100, i)) FROM generate_series(1, 10000) AS i;
SELECT count(state.map_put('cut_m', i % 100, i, i)) FROM generate_series(1, 10000) AS i;
SELECT count(state.reduce('cut_r', i % 100, i)) FROM generate_series(1, 10000) AS i;
SELECT count(state.value_set('cut_gone', i, i)) FROM generate_series(1, 1000) AS i;
SELECT snap_remember() AS keys_remembered;
-- one statement: snapshot, then at once (while the snapshot is written)
-- change every state, drop one and create one
CREATE TABLE cut_id (id bigint);
DO $$
DECLARE
    snap bigint;
BEGIN
    snap := state.snapshot(snap_path('cut'));
    INSERT INTO cut_id VALUES (snap);
    PERFORM state.value_set('cut_v', i, -i) FROM generate_series(1, 100000, 3) AS i;
    PERFORM state.clear('cut_v', i) FROM generate_series(2, 100000, 3) AS i;
    PERFORM state.value_set('cut_v', i, i) FROM generate_series(100001, 110000) AS i;
    PERFORM state.list_add('cut_l', i % 100, -i) FROM generate_series(1, 1000) AS i;
    PERFORM state.list_update('cut_l', 7, ARRAY[7]::bigint[]);
    PERFORM state.map_put('cut_m', i % 100, i, -i) FROM generate_series(1, 10000, 2) AS i;
    PERFORM state.map_remove('cut_m', 5, 105);
    PERFORM state.reduce('cut_r', i % 100, 1000000) FROM generate_series(1, 100) AS i;
    PERFORM state.drop_state('cut_gone');
    PERFORM state.create_state('cut_new', 'value', 'bigint', 'bigint');
    PERFORM state.value_set('cut_new', 1, 1::bigint);
END
$$;
SELECT state.wait_snapshot(id) FROM cut_id;
SELECT s.entries = (SELECT sum(entries) FROM snap_descs_before) AS entries_as_of_the_call
  FROM state.snapshots s JOIN cut_id USING (id);
SELECT count(*) AS differences_before_restore FROM snap_diff();
SELECT back('cut') = (SELECT sum(entries) FROM snap_descs_before) AS restored_all;
SELECT * FROM snap_diff();
SELECT sum(state.value_get('cut_v', i, 0::bigint)) AS cut_v_sum,
       count(*) FILTER (WHERE state.value_get('cut_v', i, NULL::bigint) IS NULL) AS cut_v_missing
  FROM generate_series(1, 110000) AS i;
SELECT state.list_get('cut_l', 7, NULL::bigint[]) = ARRAY(SELECT i::bigint FROM generate_series(7, 10000, 100) AS i) AS list_7;
SELECT state.map_get('cut_m', 5, 105, -1::bigint) AS map_5_105, state.value_get('cut_r', 1, 0::bigint) AS sum_1;
SELECT name FROM state.states WHERE name LIKE 'cut%' ORDER BY name;

---------------------------------------------------------------- per database
-- a snapshot has a section per database; a restore replaces the current
-- database's states only
SELECT count(state.drop_state(name)) FROM state.states WHERE name LIKE 'cut%';
SELECT state.create_state('db_here', 'value', 'text', 'text');
SELECT state.value_set('db_here', 'k', 'here');
CREATE DATABASE regress_sb_snap_other;
\c regress_sb_snap_other
CREATE EXTENSION state_backend;
SELECT state.create_state('db_there', 'value', 'text', 'text');
SELECT state.value_set('db_there', 'k', 'there');
SELECT state.create_state('rt_text', 'list', 'integer', 'text');
SELECT state.list_add('rt_text', 1, 'same name, other database');
\c contrib_regression
SELECT snap_remember() AS keys_remembered;
SELECT take('two_dbs');
SELECT states = (SELECT count(*) FROM state.states) + 2 AS both_databases FROM snap_row(last_snap());
SELECT count(*) AS database_lines,
       count(*) FILTER (WHERE line LIKE '% regress_sb_snap_other') AS other,
       count(*) FILTER (WHERE line = 'database ' || :'dboid' || ' contrib_regression') AS this
  FROM regexp_split_to_table(pg_read_file(snap_path('two_dbs') || '/MANIFEST'), E'\n') AS line
 WHERE line LIKE 'database %';
SELECT count(*) AS db_dirs FROM pg_ls_dir(snap_path('two_dbs')) AS f WHERE f LIKE 'db-%';
-- change both databases
SELECT state.value_set('db_here', 'k', 'changed here');
SELECT state.drop_state('rt_text');
\c regress_sb_snap_other
SELECT state.value_set('db_there', 'k', 'changed there');
SELECT state.create_state('db_there_new', 'value');
\c contrib_regression
SELECT back('two_dbs') AS restored;
SELECT count(*) AS differences FROM snap_diff();
\c regress_sb_snap_other
-- untouched by the restore in contrib_regression
SELECT name, kind FROM state.states ORDER BY name;
SELECT state.value_get('db_there', 'k', NULL::text);
-- restored here from this database's section
SELECT state.restore(:'datadir' || '/snap_two_dbs') AS restored;
SELECT name, kind FROM state.states ORDER BY name;
SELECT state.value_get('db_there', 'k', NULL::text), state.list_get('rt_text', 1, NULL::text[]);
\c contrib_regression
SELECT count(*) AS differences FROM snap_diff();
-- from_database: this database gets another database's section
SELECT state.restore(snap_path('two_dbs'), from_database => 'regress_sb_snap_other') AS restored;
SELECT * FROM snap_descs();
SELECT state.value_get('db_there', 'k', NULL::text), state.list_get('rt_text', 1, NULL::text[]);
SELECT state.restore(snap_path('two_dbs'), from_database => 'contrib_regression') AS restored;
SELECT count(*) AS differences FROM snap_diff();
SELECT snap_error($$SELECT state.restore(snap_path('two_dbs'), from_database => 'regress_sb_nope')$$);
SELECT count(*) AS differences FROM snap_diff();
\c regress_sb_snap_other
DROP EXTENSION state_backend;
\c contrib_regression
DROP DATABASE regress_sb_snap_other;

---------------------------------------------------------------- damaged snapshots: XX001, nothing changes
SELECT state.drop_state('db_here');
SELECT state.create_state('cor_a', 'value', 'text', 'text');
-- cor_b's file is damaged below at offsets of the key-group file format
-- (.kg), so it is a memory state whatever state_backend.backend says
SELECT state.create_state('cor_b', 'value', 'bigint', 'text', backend => 'memory');
SELECT state.value_set('cor_a', 'k', 'as in the snapshot');
SELECT count(state.value_set('cor_b', i, 'value ' || i)) FROM generate_series(1, 100) AS i;
SELECT take('cor');
SELECT snap_remember() AS keys_remembered;
-- cor_b's file, as the MANIFEST names it
SELECT substring(pg_read_file(snap_path('cor') || '/MANIFEST') FROM ' name=cor_b [^\n]* file=([^ ]+) ') AS corfile \gset
SELECT snap_path('cor') || '/' || :'corfile' AS corpath \gset
SELECT snap_path('cor') || '/MANIFEST' AS manpath \gset
-- flip(data, offset): data with the byte at offset changed
CREATE FUNCTION flip(data bytea, off integer) RETURNS bytea LANGUAGE sql AS $$
    SELECT set_byte(data, off, get_byte(data, off) # 255)
$$;
CREATE TABLE cor_files AS
    SELECT :'corfile'::text AS corfile, pg_read_binary_file(:'corpath') AS kg,
           pg_read_binary_file(:'manpath') AS manifest;
-- cor_damaged(): restore cor while the state is changed; the error, with
-- cor_b's file shown as <cor_b>, and whether the state was left alone
-- (offsets past the first kilobyte of it are shown from its end)
CREATE FUNCTION cor_damaged(OUT error text, OUT unchanged boolean) LANGUAGE plpgsql AS $$
DECLARE
    off bigint;
    size bigint := (SELECT length(kg) FROM cor_files);
BEGIN
    PERFORM state.value_set('cor_a', 'k', 'changed');
    PERFORM snap_remember();
    error := replace(snap_error($q$SELECT back('cor')$q$), (SELECT corfile FROM cor_files), '<cor_b>');
    off := substring(error FROM 'offset ([0-9]+)')::bigint;
    IF error LIKE '%<cor_b>%' AND off > 1024 THEN
        error := replace(error, 'offset ' || off, format('offset <end - %s>', size - off));
    END IF;
    unchanged := NOT EXISTS (SELECT FROM snap_diff());
    PERFORM state.value_set('cor_a', 'k', 'as in the snapshot');
END
$$;
-- rewriting the files unchanged: the method itself breaks nothing
SELECT write_file(:'corpath', kg), write_file(:'manpath', manifest) FROM cor_files;
SELECT back('cor') AS restored;
-- a state file overwritten with text
COPY (SELECT repeat('x', 100)) TO :'corpath';
SELECT (pg_stat_file(:'corpath')).size;
SELECT * FROM cor_damaged();
-- a state file cut short
SELECT write_file(:'corpath', substring(kg FROM 1 FOR length(kg) - 1)) FROM cor_files;
SELECT * FROM cor_damaged();
-- one byte of a block changed (the first block starts after the 24-byte header)
SELECT write_file(:'corpath', flip(kg, 24 + 20 + 5)) FROM cor_files;
SELECT * FROM cor_damaged();
-- one byte of the file header changed
SELECT write_file(:'corpath', flip(kg, 4)) FROM cor_files;
SELECT * FROM cor_damaged();
-- one byte of the key group index changed (it ends before a 4-byte checksum
-- and the 16-byte trailer)
SELECT write_file(:'corpath', flip(kg, length(kg) - 20 - 4 - 1)) FROM cor_files;
SELECT * FROM cor_damaged();
-- one byte of the trailer changed
SELECT write_file(:'corpath', flip(kg, length(kg) - 1)) FROM cor_files;
SELECT * FROM cor_damaged();
-- the file as it was: the snapshot restores again
SELECT write_file(:'corpath', kg) FROM cor_files;
SELECT back('cor') AS restored;
-- the MANIFEST with one byte changed: a state's name
SELECT write_file(:'manpath', convert_to(replace(convert_from(manifest, 'UTF8'), 'name=cor_a ', 'name=cor_x '), 'UTF8'))
  FROM cor_files;
SELECT regexp_replace(error, 'offset [0-9]+', 'offset N') AS error, unchanged FROM cor_damaged();
-- it names the offset of the checksum line
SELECT substring(error FROM 'offset ([0-9]+)')::integer
       = position(E'\ncrc32c ' IN convert_from(manifest, 'UTF8')) AS offset_of_checksum
  FROM cor_damaged(), cor_files;
-- the MANIFEST with one byte of its checksum changed
SELECT write_file(:'manpath', flip(manifest, length(manifest) - 2)) FROM cor_files;
SELECT regexp_replace(error, 'offset [0-9]+', 'offset N') AS error, unchanged FROM cor_damaged();
-- an empty MANIFEST
SELECT write_file(:'manpath', ''::bytea);
SELECT * FROM cor_damaged();
-- the MANIFEST as it was: the snapshot restores again
SELECT write_file(:'manpath', manifest) FROM cor_files;
SELECT back('cor') AS restored;
SELECT state.value_get('cor_a', 'k', NULL::text), state.value_get('cor_b', 100, NULL::text);

---------------------------------------------------------------- cancel, and waiting with a timeout
SELECT state.create_state('big', 'value', 'bigint', 'bigint');
SELECT count(state.value_set('big', i, i)) FROM generate_series(1, 100000) AS i;
-- a snapshot cancelled while it runs ends cancelled, and leaves no directory
-- (state_backend.snapshot_hold keeps it running until the cancel)
SET state_backend.snapshot_hold = on;
SELECT state.snapshot(snap_path('cancelled')) AS held \gset
RESET state_backend.snapshot_hold;
SELECT status FROM state.snapshots WHERE id = :held;
SELECT state.cancel_snapshot(:held) AS cancelled;
SELECT state.wait_snapshot(last_snap());
SELECT path, format, status, times_ok, error IS NOT NULL AS has_error FROM snap_row(last_snap());
SELECT state.cancel_snapshot(last_snap()) AS cancel_again;
SELECT pg_stat_file(snap_path('cancelled'), true) IS NULL AS no_directory;
SELECT snap_error($$SELECT back('cancelled')$$);
-- a timeout returns while the snapshot runs
SET state_backend.snapshot_hold = on;
SELECT state.snapshot(snap_path('held')) AS held \gset
RESET state_backend.snapshot_hold;
SELECT state.wait_snapshot(:held, '0 s');
SELECT state.wait_snapshot(:held, '20 ms');
SELECT state.cancel_snapshot(:held) AS cancelled;
SELECT state.wait_snapshot(:held);
-- and a finished snapshot's status at once
SELECT state.wait_snapshot(state.snapshot(snap_path('timeout')));
SELECT state.wait_snapshot(last_snap(), '0 s');
SELECT state.value_set('big', 1, -1::bigint);
SELECT back('timeout') AS restored;
SELECT state.value_get('big', 1, 0::bigint);

---------------------------------------------------------------- a snapshot that fails
-- its parent directory does not exist: the worker cannot write it
SELECT snap_error(format('SELECT state.wait_snapshot(state.snapshot(%L))', snap_path('nope') || '/below'));
SELECT path, status, error FROM snap_row(last_snap());
SELECT pg_stat_file(snap_path('nope'), true) IS NULL AS no_directory;

---------------------------------------------------------------- errors
-- paths must be absolute
SELECT snap_error($$SELECT state.snapshot('snap_relative')$$);
SELECT snap_error($$SELECT state.snapshot('file://snap_relative')$$);
SELECT snap_error($$SELECT state.snapshot('')$$);
SELECT snap_error($$SELECT state.restore('snap_rt')$$);
SELECT snap_error($$SELECT state.restore('file://snap_rt')$$);
-- a snapshot goes to a new path
SELECT snap_error($$SELECT state.snapshot(snap_path('rt'))$$);
SELECT snap_error($$SELECT state.snapshot(current_setting('data_directory'))$$);
SELECT snap_error($$SELECT state.snapshot(current_setting('data_directory') || '/PG_VERSION')$$);
-- unknown format
SELECT snap_error($$SELECT state.snapshot(snap_path('fmt'), 'binary')$$);
SELECT pg_stat_file(snap_path('fmt'), true) IS NULL AS no_directory;
-- a directory that is not a snapshot, or no directory at all
SELECT snap_error($$SELECT state.restore(current_setting('data_directory') || '/base')$$);
SELECT snap_error($$SELECT state.restore(snap_path('never_taken'))$$);
SELECT replace(snap_error($$SELECT state.restore(snap_path('rt') || '/db-' || (SELECT oid FROM pg_database WHERE datname = current_database()))$$),
               :'dboid', '$DBOID');
SELECT snap_error($$SELECT state.restore(NULL)$$);
-- backends
SELECT snap_error($$SELECT back('rt', 'heap')$$);
-- unknown snapshot ids
SELECT snap_error($$SELECT state.wait_snapshot(0)$$);
SELECT snap_error($$SELECT state.wait_snapshot(-1)$$);
SELECT snap_error($$SELECT state.wait_snapshot(-63)$$);
SELECT snap_error($$SELECT state.wait_snapshot(9223372036854775807)$$);
SELECT snap_error($$SELECT state.cancel_snapshot(0)$$);
SELECT snap_error($$SELECT state.cancel_snapshot(-5)$$);
SELECT snap_error($$SELECT state.cancel_snapshot(123456789)$$);
-- after all these errors the states are as they were
SELECT state.value_get('cor_a', 'k', NULL::text), state.value_get('big', 1, 0::bigint);

---------------------------------------------------------------- privileges
-- not for PUBLIC; the view and wait_snapshot are
SELECT p.proname, has_function_privilege('public', p.oid, 'EXECUTE') AS public_may
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'state' AND p.proname IN ('snapshot', 'restore', 'cancel_snapshot', 'wait_snapshot')
 ORDER BY 1;
CREATE ROLE regress_sb_snap_plain;
CREATE ROLE regress_sb_snap_exec;
CREATE ROLE regress_sb_snap_files;
GRANT EXECUTE ON FUNCTION state.snapshot(text, text), state.restore(text, text, text, integer, integer),
      state.cancel_snapshot(bigint) TO regress_sb_snap_exec, regress_sb_snap_files;
GRANT pg_write_server_files, pg_read_server_files TO regress_sb_snap_files;
SELECT state.drop_state('big');
SELECT snap_remember() AS keys_remembered;
SELECT max(id) AS done FROM state.snapshots WHERE status = 'completed' \gset

SET ROLE regress_sb_snap_plain;
SELECT snap_error($$SELECT state.snapshot()$$);
SELECT snap_error($$SELECT state.snapshot(snap_path('plain'))$$);
SELECT snap_error($$SELECT back('rt')$$);
SELECT snap_error($$SELECT state.restore('memory:1')$$);
SELECT snap_error(format('SELECT state.cancel_snapshot(%s)', :done));
SELECT state.wait_snapshot(:done);
SELECT count(*) > 0 AS sees_snapshots FROM state.snapshots;
RESET ROLE;

-- EXECUTE, but not the file roles: no explicit paths
SET ROLE regress_sb_snap_exec;
SELECT snap_error($$SELECT state.snapshot(snap_path('exec'))$$);
SELECT snap_error($$SELECT state.snapshot(snap_path('exec'), 'canonical')$$);
SELECT snap_error($$SELECT back('rt')$$);
SELECT snap_error($$SELECT state.restore('file://' || snap_path('rt'))$$);
-- a relative path is wrong for everybody
SELECT snap_error($$SELECT state.snapshot('snap_exec')$$);
-- a snapshot kept in shared memory needs no path
SELECT state.snapshot() AS mem3 \gset
SELECT state.wait_snapshot(:mem3);
SELECT state.cancel_snapshot(:mem3);
RESET ROLE;
SELECT pg_stat_file(snap_path('exec'), true) IS NULL AS no_directory;
SELECT state.value_set('cor_a', 'k', 'changed');
SET ROLE regress_sb_snap_exec;
SELECT state.restore('memory:' || :mem3) AS restored;
RESET ROLE;
-- the same entries; but a restore by a role that is not a superuser never
-- makes a state owned by a role it has no privileges of: they are its own
SELECT side, count(*) FROM snap_diff() WHERE side NOT LIKE '%descriptor' GROUP BY side;
SELECT snap_role(owner) AS owner, count(*) FROM state.states GROUP BY 1;
SELECT state.restore('memory:' || :mem3) AS restored_by_superuser;
SELECT count(*) AS differences FROM snap_diff();

-- with pg_write_server_files and pg_read_server_files: snapshots to a path,
-- and restores of canonical ones, and of native ones that this server
-- signed (one it did not sign is only for superusers: test/t/009)
SET ROLE regress_sb_snap_files;
SELECT take('files');
SELECT take('files_canonical', 'canonical');
RESET ROLE;
SELECT state.value_set('cor_a', 'k', 'changed');
SET ROLE regress_sb_snap_files;
SELECT snap_error($$SELECT back('files')$$);
SELECT back('files_canonical') AS restored;
RESET ROLE;
SELECT side, count(*) FROM snap_diff() WHERE side NOT LIKE '%descriptor' GROUP BY side;
SELECT snap_role(owner) AS owner, count(*) FROM state.states GROUP BY 1;

---------------------------------------------------------------- clean up
SELECT state.drop_state(name) FROM state.states ORDER BY name;
SELECT count(*) FROM state.states;
DROP FUNCTION cor_damaged(), flip(bytea, integer);
DROP TABLE cor_files, cut_id, snap_manifest, snap_before, snap_descs_before;
DROP FUNCTION snap_diff(), snap_remember(), snap_descs(), snap_summary(), snap_show(text[]), snap_text(text),
              snap_dump(), last_snap(), snap_row(bigint), back(text, text), take(text, text),
              snap_error(text), snap_path(text), snap_role(regrole);
DROP TABLE snap_conf;
DROP TYPE snap_pair;
REVOKE EXECUTE ON FUNCTION state.snapshot(text, text), state.restore(text, text, text, integer, integer),
       state.cancel_snapshot(bigint) FROM regress_sb_snap_exec, regress_sb_snap_files;
REVOKE pg_write_server_files, pg_read_server_files FROM regress_sb_snap_files;
DROP ROLE regress_sb_snap_owner, regress_sb_snap_reader, regress_sb_snap_plain,
          regress_sb_snap_exec, regress_sb_snap_files;
