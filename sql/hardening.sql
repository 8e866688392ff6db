-- hardening: snapshot files and arguments that are hostile or out of range
-- are refused, and nothing they name outside the snapshot is touched.
SELECT current_setting('data_directory') AS datadir \gset
CREATE TABLE hd_conf AS SELECT current_setting('data_directory') AS datadir;
CREATE FUNCTION hd_path(name text) RETURNS text LANGUAGE sql AS $$
    SELECT datadir || '/hd_' || name FROM hd_conf
$$;
-- the SQLSTATE, message and detail of the error sql raises
CREATE FUNCTION hd_error(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    detail text;
BEGIN
    EXECUTE sql;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
    RETURN replace(SQLSTATE || ': ' || SQLERRM || E'\n' || detail,
                   (SELECT datadir FROM hd_conf), '$DATADIR');
END
$$;
-- CRC-32C (Castagnoli), as every snapshot file's checksum line holds it
CREATE FUNCTION hd_crc32c(data bytea) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    crc bigint := 4294967295;
BEGIN
    FOR i IN 0 .. length(data) - 1 LOOP
        crc := crc # get_byte(data, i);
        FOR k IN 1 .. 8 LOOP
            IF (crc & 1) = 1 THEN
                crc := (crc >> 1) # 2197175160;
            ELSE
                crc := crc >> 1;
            END IF;
        END LOOP;
    END LOOP;
    RETURN upper(lpad(to_hex(crc # 4294967295), 8, '0'));
END
$$;
-- rewrite a snapshot's rocksdb/FILES from its original (kept in hd_files):
-- every line through regexp_replace, and a checksum line that matches, so
-- that only the names can be wrong
CREATE FUNCTION hd_rewrite_files(snap text, pattern text, replacement text)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    lines text[];
    body text;
    path text := snap || '/rocksdb/FILES';
BEGIN
    SELECT array_agg(regexp_replace(line, pattern, replacement) ORDER BY n)
      INTO lines
      FROM regexp_split_to_table(rtrim((SELECT files FROM hd_files), E'\n'), E'\n')
           WITH ORDINALITY AS t(line, n)
     WHERE line NOT LIKE 'crc32c %';
    body := array_to_string(lines, E'\n') || E'\n';
    lines := lines || ('crc32c ' || hd_crc32c(convert_to(body, 'UTF8')));
    EXECUTE format('COPY (SELECT unnest(%L::text[])) TO %L', lines, path);
END
$$;

---------------------------------------------------------------- RocksDB file names
-- A native snapshot of a rocksdb state lists RocksDB's files in
-- rocksdb/FILES: a file's name in the restore's scratch copy, and where it
-- is in the snapshot.  A name that is not a plain file name is refused
-- (data_corrupted) before anything is copied, whatever its checksum.
SELECT state.create_state('hd_r', 'value', 'int', 'text', backend => 'rocksdb');
SELECT state.value_set('hd_r', i, 'v' || i) FROM generate_series(1, 5) i;
SELECT state.wait_snapshot(state.snapshot(hd_path('native')));
-- the untouched snapshot restores
SELECT state.restore(hd_path('native')) AS restored;
CREATE TABLE hd_files AS SELECT pg_read_file(hd_path('native') || '/rocksdb/FILES') AS files;
-- rewritten with no change, it still restores
SELECT hd_rewrite_files(hd_path('native'), '^$', '');
SELECT state.restore(hd_path('native')) AS restored;
-- a name that climbs out of the scratch directory
SELECT hd_rewrite_files(hd_path('native'), '^meta (\S+) ', 'meta ../../hd_escaped ');
SELECT hd_error($$SELECT state.restore(hd_path('native'))$$);
SELECT pg_stat_file(hd_path('escaped'), true) IS NULL AS nothing_written;
-- a name with a directory in it
SELECT hd_rewrite_files(hd_path('native'), '^meta \S+ ', 'meta sub/CURRENT ');
SELECT hd_error($$SELECT state.restore(hd_path('native'))$$);
-- a source outside the snapshot's rocksdb/ and ../shared/ directories
SELECT hd_rewrite_files(hd_path('native'), '^meta (\S+) rocksdb/\S+ ', 'meta \1 rocksdb/../../PG_VERSION ');
SELECT hd_error($$SELECT state.restore(hd_path('native'))$$);
SELECT hd_rewrite_files(hd_path('native'), '^meta (\S+) rocksdb/\S+ ', 'meta \1 PG_VERSION ');
SELECT hd_error($$SELECT state.restore(hd_path('native'))$$);
-- the state is as it was
SELECT state.value_get('hd_r', 3, NULL::text);

---------------------------------------------------------------- errors under locks
-- A restore whose entry a heap state cannot hold (here a key over 64 kB,
-- from a rocksdb state, restored into memory) fails cleanly: the error is
-- raised after the partition lock is released, so the restore's cleanup
-- (which takes that lock) does not wait for itself forever.
SELECT state.create_state('hd_long', 'value', 'text', 'int', backend => 'rocksdb');
SELECT state.value_set('hd_long', repeat('k', 70000), 1);
SELECT state.wait_snapshot(state.snapshot(hd_path('long_key'), 'canonical'));
SELECT hd_error($$SELECT state.restore(hd_path('long_key'), backend => 'memory')$$);
-- nothing changed, and every partition is free: writes and snapshots go on
SELECT name, backend FROM state.states WHERE name LIKE 'hd%' ORDER BY name;
SELECT state.create_state('hd_mem', 'value', 'int', 'int', backend => 'memory');
SELECT count(state.value_set('hd_mem', i, i)) FROM generate_series(1, 1000) i;
SELECT state.wait_snapshot(state.snapshot(hd_path('after_error')));
SELECT state.drop_state('hd_mem');
SELECT state.drop_state('hd_long');

---------------------------------------------------------------- wait_snapshot
-- a timeout too long to add to the clock waits without a limit: the
-- snapshot is completed when it returns, not still running
SELECT state.wait_snapshot(state.snapshot(hd_path('long_wait')), '2562047787 hours');
-- a negative one returns at once
SELECT state.snapshot(hd_path('neg_wait')) AS neg \gset
SELECT state.wait_snapshot(:neg, '-2562047787 hours') IN ('running', 'completed') AS returned;
SELECT state.wait_snapshot(:neg);

---------------------------------------------------------------- grants
-- regrole accepts any number as an OID: a grant must name a role
SELECT hd_error($$SELECT state.grant_access('hd_r', 0, 'read')$$);
SELECT hd_error($$SELECT state.grant_access('hd_r', 4000000000::oid::regrole, 'write')$$);
SELECT hd_error($$SELECT state.revoke_access('hd_r', 4000000000::oid::regrole, 'write')$$);

-- a type whose USAGE was revoked cannot be a state's type, as it cannot be
-- a table column's
CREATE DOMAIN hd_secret AS int;
REVOKE USAGE ON DOMAIN hd_secret FROM PUBLIC;
CREATE ROLE regress_hd_user;
SET ROLE regress_hd_user;
SELECT expect_error($$CREATE TEMP TABLE hd_t (v hd_secret)$$);
SELECT expect_error($$SELECT state.create_state('hd_s', 'value', 'text', 'hd_secret')$$);
SELECT expect_error($$SELECT state.create_state('hd_s', 'map', 'text', 'int', map_key_type => 'hd_secret')$$);
RESET ROLE;
DROP ROLE regress_hd_user;
DROP DOMAIN hd_secret;

---------------------------------------------------------------- clean up
SELECT state.drop_state('hd_r');
DROP FUNCTION hd_rewrite_files(text, text, text), hd_crc32c(bytea), hd_error(text), hd_path(text);
DROP TABLE hd_conf, hd_files;
