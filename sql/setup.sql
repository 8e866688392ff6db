--
-- setup: install the extension and the helper the other files use, and check
-- the catalogue a user sees (settings, the state.states view).
--
CREATE EXTENSION state_backend;

-- expect_error(sql): run sql, return 'SQLSTATE: message' of the error it
-- raised, or 'no error'.  Error tests assert the SQLSTATE with it.
CREATE FUNCTION public.expect_error(sql text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;

-- write_file(path, bytes): replace a file's contents, byte for byte (tests
-- of damaged snapshots)
CREATE FUNCTION public.write_file(path text, data bytea) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    lo oid := lo_from_bytea(0, data);
BEGIN
    PERFORM lo_export(lo, path);
    PERFORM lo_unlink(lo);
END
$$;

-- wait_for(q): poll the boolean query q until it is true (every 0.1 s, for
-- at most a minute); what a background worker does is waited for with it,
-- so that no test depends on timing.
CREATE FUNCTION public.wait_for(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE ok boolean;
BEGIN
    FOR i IN 1..600 LOOP
        EXECUTE q INTO ok;
        IF ok THEN RETURN true; END IF;
        PERFORM pg_sleep(0.1);
    END LOOP;
    RETURN false;
END $$;

-- drop_state_slot(): drops the replication slot logged states keep, once
-- none is left; the worker drops it itself after a checkpoint that holds no
-- logged state, and one may be under way: whichever of the two goes first.
-- Returns how many such slots are left.
CREATE FUNCTION public.drop_state_slot() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. 200 LOOP
    BEGIN
      PERFORM pg_drop_replication_slot('state_backend');
    EXCEPTION WHEN undefined_object OR object_in_use THEN
      NULL;
    END;
    EXIT WHEN NOT EXISTS (SELECT FROM pg_replication_slots WHERE slot_name = 'state_backend');
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN (SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'state_backend');
END $$;

-- the helper itself
SELECT expect_error('SELECT 1/0');
SELECT expect_error('SELECT 1');

-- settings: defaults and the test configuration (the suite runs three times:
-- with the default backend, memory, with rocksdb (test/regress-rocksdb.conf)
-- and with lmdb, a backend of another library (test/regress-lmdb.conf))
SELECT boot_val, setting IN ('memory', 'rocksdb', 'lmdb') AS suite_backend
  FROM pg_settings WHERE name = 'state_backend.backend';
SHOW state_backend.max_parallelism;
SHOW state_backend.memory_limit;

-- state.states: columns, in order, with their types
SELECT attnum, attname, format_type(atttypid, atttypmod) AS type
  FROM pg_attribute
 WHERE attrelid = 'state.states'::regclass AND attnum > 0 AND NOT attisdropped
 ORDER BY attnum;

-- no state yet
SELECT count(*) FROM state.states;

-- create_state with the defaults: key text, value jsonb, backend
-- state_backend.backend (shown as "default")
SELECT state.create_state('setup_v', 'value');
SELECT name, kind,
       CASE backend WHEN current_setting('state_backend.backend') THEN 'default' ELSE backend END AS backend,
       key_type, value_type, reducer, ttl,
       owner = current_user::regrole AS owned_by_me, entries
  FROM state.states;

-- each kind, with named arguments
SELECT state.create_state('setup_m', 'map', 'bigint', 'numeric', map_key_type => 'uuid');
SELECT state.create_state('setup_r', 'reducing', 'int4', 'bigint', reducer => 'sum');
SELECT state.create_state('setup_l', 'list', key_type => 'date', value_type => 'text',
                          backend => 'filesystem');
SELECT name, kind,
       CASE backend WHEN current_setting('state_backend.backend') THEN 'default' ELSE backend END AS backend,
       key_type, value_type, reducer
  FROM state.states ORDER BY name;
SELECT map_key_type FROM state.states WHERE name = 'setup_m';

-- backend NULL means the current value of state_backend.backend
SET state_backend.backend = 'filesystem';
SELECT state.create_state('setup_fs', 'value');
RESET state_backend.backend;
SELECT state.create_state('setup_mem', 'value');
SELECT name, CASE backend WHEN current_setting('state_backend.backend') THEN 'default' ELSE backend END AS backend
  FROM state.states WHERE name IN ('setup_fs', 'setup_mem') ORDER BY name;

-- entries and bytes follow the data (an empty rocksdb state still counts
-- its empty memtable, a few kB)
SELECT entries, CASE WHEN backend = 'rocksdb' THEN bytes < 65536 ELSE bytes = 0 END AS empty_bytes
  FROM state.states WHERE name = 'setup_v';
SELECT state.value_set('setup_v', 'a', '{"x": 1}');
SELECT state.value_set('setup_v', 'b', '[1, 2, 3]');
SELECT entries, bytes > 0 AS has_bytes FROM state.states WHERE name = 'setup_v';
SELECT state.value_set('setup_v', 'a', NULL::jsonb);
SELECT entries FROM state.states WHERE name = 'setup_v';
SELECT state.truncate('setup_v');
SELECT entries FROM state.states WHERE name = 'setup_v';

-- drop_state removes the state; if_exists makes a missing state quiet
SELECT state.drop_state('setup_v');
SELECT state.drop_state('setup_m');
SELECT state.drop_state('setup_r');
SELECT state.drop_state('setup_l');
SELECT state.drop_state('setup_fs');
SELECT state.drop_state('setup_mem');
SELECT state.drop_state('setup_v', true);
SELECT expect_error($$SELECT state.drop_state('setup_v')$$);
SELECT count(*) FROM state.states;

-- a dropped state's name can be used again, and the new state is empty
SELECT state.create_state('setup_v', 'value', 'text', 'bigint');
SELECT state.value_set('setup_v', 'k', 1::bigint);
SELECT state.drop_state('setup_v');
SELECT state.create_state('setup_v', 'value', 'text', 'bigint');
SELECT state.value_get('setup_v', 'k', -1::bigint);
SELECT entries FROM state.states WHERE name = 'setup_v';
SELECT state.drop_state('setup_v');
SELECT count(*) FROM state.states;
