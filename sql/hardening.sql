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

---------------------------------------------------------------- user code under locks
-- reduce folds with the type's "+", which may be a user's function.  It
-- runs with no lock held: one that reads the very state it folds works
-- (it used to wait forever for the lock its own backend held).
CREATE TYPE hd_money AS (cents int);
CREATE FUNCTION hd_money_add(a hd_money, b hd_money) RETURNS hd_money
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM state.value_get('hd_fold', 1, NULL::hd_money);
    RETURN ROW((a).cents + (b).cents)::hd_money;
END
$$;
CREATE OPERATOR + (LEFTARG = hd_money, RIGHTARG = hd_money, FUNCTION = hd_money_add);
SELECT state.create_state('hd_fold', 'reducing', 'int', 'hd_money', reducer => 'sum');
SELECT state.reduce('hd_fold', 1, ROW(5)::hd_money);
SELECT state.reduce('hd_fold', 1, ROW(7)::hd_money);
SELECT state.value_get('hd_fold', 1, NULL::hd_money);
-- a fold that fails leaves the key as it was, and the lock free
CREATE OR REPLACE FUNCTION hd_money_add(a hd_money, b hd_money) RETURNS hd_money
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no fold today'; END $$;
SELECT hd_error($$SELECT state.reduce('hd_fold', 1, ROW(1)::hd_money)$$);
SELECT state.value_get('hd_fold', 1, NULL::hd_money);
SELECT state.drop_state('hd_fold');
DROP OPERATOR + (hd_money, hd_money);
DROP FUNCTION hd_money_add(hd_money, hd_money);

---------------------------------------------------------------- domains
-- A domain's constraints hold for keys, map keys, values and reduced
-- results, whatever type the argument came with (check_violation).
CREATE DOMAIN hd_posint AS int CHECK (VALUE > 0);
CREATE DOMAIN hd_small AS int CHECK (VALUE < 10);
SELECT state.create_state('hd_dv', 'value', 'hd_posint', 'hd_posint');
SELECT hd_error($$SELECT state.value_set('hd_dv', 1, -1)$$);
SELECT hd_error($$SELECT state.value_set('hd_dv', -1, 1)$$);
SELECT hd_error($$SELECT state.value_set('hd_dv', 1, '-1')$$);
SELECT hd_error($$SELECT state.value_set('hd_dv', 1, (-1)::smallint)$$);
SELECT state.value_set('hd_dv', 1, 2);
SELECT state.create_state('hd_dl', 'list', 'int', 'hd_posint');
SELECT hd_error($$SELECT state.list_add('hd_dl', 1, -1)$$);
SELECT hd_error($$SELECT state.list_add_all('hd_dl', 1, ARRAY[1, -1])$$);
SELECT hd_error($$SELECT state.list_update('hd_dl', 1, ARRAY[1, -1])$$);
SELECT state.create_state('hd_dm', 'map', 'int', 'hd_posint', map_key_type => 'hd_posint');
SELECT hd_error($$SELECT state.map_put('hd_dm', 1, -1, 1)$$);
SELECT hd_error($$SELECT state.map_put('hd_dm', 1, 1, -1)$$);
SELECT state.create_state('hd_dr', 'reducing', 'int', 'hd_posint', reducer => 'min');
SELECT hd_error($$SELECT state.reduce('hd_dr', 1, -1)$$);
-- sum over a domain adds with its base type's "+"; a result out of the
-- domain is refused and the key keeps its value
SELECT state.create_state('hd_ds', 'reducing', 'int', 'hd_small', reducer => 'sum');
SELECT state.reduce('hd_ds', 1, 6);
SELECT hd_error($$SELECT state.reduce('hd_ds', 1, 6)$$);
SELECT state.value_get('hd_ds', 1, 0);
SELECT state.value_get('hd_dv', 1, 0), state.list_length('hd_dl', 1),
       state.map_size('hd_dm', 1), state.value_get('hd_dr', 1, 0);
SELECT state.drop_state(n) FROM unnest(ARRAY['hd_dv', 'hd_dl', 'hd_dm', 'hd_dr', 'hd_ds']) n;
DROP DOMAIN hd_posint, hd_small;

---------------------------------------------------------------- types held by states
-- The attributes of a row type that a state holds, directly or through a
-- domain, an array or another composite, cannot be added, dropped or
-- retyped (as PostgreSQL refuses for a table column's type): the stored
-- images would no longer decode.  Renames, defaults and constraints are
-- fine, and an enum may grow: its images are OIDs.
CREATE TYPE hd_pt AS (x int, label text);
CREATE TYPE hd_outer AS (p hd_pt, n int);
CREATE DOMAIN hd_ptd AS hd_pt;
CREATE TABLE hd_rowt (a int, b text);
SELECT state.create_state('hd_c', 'value', 'int', 'hd_pt');
SELECT state.value_set('hd_c', 1, ROW(1, 'one')::hd_pt);
SELECT hd_error($$ALTER TYPE hd_pt ALTER ATTRIBUTE x TYPE text$$);
SELECT hd_error($$ALTER TYPE hd_pt DROP ATTRIBUTE label$$);
SELECT hd_error($$ALTER TYPE hd_pt ADD ATTRIBUTE z int$$);
ALTER TYPE hd_pt RENAME ATTRIBUTE label TO name;
SELECT state.value_get('hd_c', 1, NULL::hd_pt);
ALTER TYPE hd_pt RENAME ATTRIBUTE name TO label;
SELECT state.drop_state('hd_c');
SELECT state.create_state('hd_ca', 'value', 'int', 'hd_outer[]');
SELECT hd_error($$ALTER TYPE hd_pt DROP ATTRIBUTE label$$);
SELECT state.drop_state('hd_ca');
SELECT state.create_state('hd_cd', 'map', 'int', 'int', map_key_type => 'hd_ptd');
SELECT hd_error($$ALTER TYPE hd_pt ALTER ATTRIBUTE label TYPE int$$);
SELECT hd_error($$DROP TYPE hd_pt CASCADE$$);
SELECT state.drop_state('hd_cd');
SELECT state.create_state('hd_ct', 'list', 'hd_rowt', 'int');
SELECT hd_error($$ALTER TABLE hd_rowt DROP COLUMN b$$);
SELECT hd_error($$ALTER TABLE hd_rowt ALTER COLUMN a TYPE bigint$$);
SELECT hd_error($$ALTER TABLE hd_rowt ADD COLUMN c int$$);
-- what leaves the stored images as they are goes on
ALTER TABLE hd_rowt ALTER COLUMN a SET DEFAULT 1;
ALTER TABLE hd_rowt ALTER COLUMN a SET NOT NULL;
ALTER TABLE hd_rowt RENAME COLUMN b TO bb;
ALTER TABLE hd_rowt ALTER COLUMN bb SET STATISTICS 50;
SELECT state.drop_state('hd_ct');
-- with no state holding them, they change as usual
ALTER TYPE hd_pt DROP ATTRIBUTE label;
ALTER TABLE hd_rowt DROP COLUMN bb;
DROP TABLE hd_rowt;
DROP TYPE hd_outer, hd_ptd, hd_pt;
CREATE TYPE hd_mood AS ENUM ('sad', 'ok');
SELECT state.create_state('hd_e', 'value', 'int', 'hd_mood');
SELECT state.value_set('hd_e', 1, 'ok');
ALTER TYPE hd_mood ADD VALUE 'happy' BEFORE 'ok';
ALTER TYPE hd_mood RENAME VALUE 'ok' TO 'fine';
SELECT state.value_get('hd_e', 1, NULL::hd_mood);
SELECT state.drop_state('hd_e');
DROP TYPE hd_mood;

---------------------------------------------------------------- request sizes
-- A value too large for the state worker to hold is refused with
-- program_limit_exceeded, and the worker serves on (it used to run out of
-- memory and exit, failing every session's rocksdb calls).
SELECT pid AS worker_pid FROM pg_stat_activity
 WHERE backend_type = 'state_backend worker' \gset
SELECT state.create_state('hd_huge', 'value', 'int', 'text', backend => 'rocksdb');
SELECT hd_error($$SELECT state.value_set('hd_huge', 1, repeat('x', 1073741800))$$);
SELECT state.value_set('hd_huge', 1, 'small');
SELECT state.value_get('hd_huge', 1, ''::text);
SELECT pid = :worker_pid AS same_worker FROM pg_stat_activity
 WHERE backend_type = 'state_backend worker';
SELECT state.drop_state('hd_huge');

---------------------------------------------------------------- list element types
-- list_get returns a list as an array of its element type: a type with no
-- array type of its own (an array type) cannot be a list's element type.
SELECT hd_error($$SELECT state.create_state('hd_la', 'list', 'int', 'int[]')$$);

---------------------------------------------------------------- a fold into its own key
-- An aggregate whose transition function aggregates into the key being
-- folded would make the fold start again forever: refused (55006) at
-- once.  Folding into another state from a fold is fine.
CREATE FUNCTION hd_self_sfunc(s bigint, v bigint) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    PERFORM state.aggregate(current_setting('hd.target'), 1, v);
    RETURN coalesce(s, 0) + v;
END
$$;
CREATE AGGREGATE hd_self_sum(bigint) (sfunc = hd_self_sfunc, stype = bigint);
SELECT state.create_state('hd_self', 'aggregating', 'int', 'bigint', aggregate => 'hd_self_sum(bigint)');
SELECT state.create_state('hd_other', 'aggregating', 'int', 'bigint', aggregate => 'sum(bigint)');
SET statement_timeout = '60s';
SET hd.target = 'hd_self';
SELECT hd_error($$SELECT state.aggregate('hd_self', 1, 5::bigint)$$);
SET hd.target = 'hd_other';
SELECT state.aggregate('hd_self', 1, 5::bigint);
SELECT state.value_get('hd_self', 1, 0::bigint) AS folded,
       state.value_get('hd_other', 1, 0::bigint) AS other;
RESET statement_timeout;
SELECT state.drop_state('hd_self');
SELECT state.drop_state('hd_other');
DROP AGGREGATE hd_self_sum(bigint);
DROP FUNCTION hd_self_sfunc(bigint, bigint);

---------------------------------------------------------------- clean up
SELECT state.drop_state('hd_r');
DROP FUNCTION hd_rewrite_files(text, text, text), hd_crc32c(bytea), hd_error(text), hd_path(text);
DROP TABLE hd_conf, hd_files;
