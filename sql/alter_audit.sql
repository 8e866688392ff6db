--
-- alter_audit: alter_state where it lost or undid what it was given.
--

-- A key conversion that makes two keys one fails the change (23505) for
-- a state with a TTL as for one without: the state keeps its 4 entries.
SELECT state.create_state('aa_ttl', 'value', 'int', 'text', ttl => '1 hour');
SELECT count(state.value_set('aa_ttl', k, 'v' || k)) FROM generate_series(1, 4) k;
SELECT expect_error($$SELECT state.alter_state('aa_ttl', key_type => 'int', key_using => '0')$$) LIKE '23505:%' AS refused;
SELECT name, version, entries FROM state.states WHERE name = 'aa_ttl';
SELECT * FROM state.entries('aa_ttl', NULL::int, NULL::text) ORDER BY 1;
-- the same without a TTL, for comparison
SELECT state.create_state('aa_nottl', 'value', 'int', 'text');
SELECT count(state.value_set('aa_nottl', k, 'v' || k)) FROM generate_series(1, 4) k;
SELECT expect_error($$SELECT state.alter_state('aa_nottl', key_type => 'int', key_using => '0')$$) LIKE '23505:%' AS refused;
SELECT name, version, entries FROM state.states WHERE name = 'aa_nottl';

-- A map state holds null values: a value_using that yields null for one
-- gives the map a null value, as map_put does.
SELECT state.create_state('aa_map', 'map', 'int', 'text', map_key_type => 'text');
SELECT state.map_put('aa_map', 1, 'a', 'x');
SELECT state.map_put('aa_map', 1, 'b', NULL::text);
SELECT state.alter_state('aa_map', value_type => 'text', value_using => 'NULLIF(value, ''x'')');
SELECT * FROM state.map_entries('aa_map', 1, NULL::text, NULL::text) ORDER BY 1;

-- An operator state may be renamed and change its value type, nothing
-- else: a broadcast state keeps its map key type (0A000).
SELECT state.create_state('aa_bc', 'broadcast', value_type => 'text', map_key_type => 'text');
SELECT state.broadcast_put('aa_bc', 'x', '1');
SELECT expect_error($$SELECT state.alter_state('aa_bc', map_key_type => 'varchar')$$) LIKE '0A000:%' AS refused;
SELECT name, map_key_type, version FROM state.states WHERE name = 'aa_bc';

-- A conversion's private memory does not grow with the entries converted:
-- the decoded keys and values of 20,000 entries of 1 kB (20 MB) are not all
-- kept until the change ends.  A probe in value_using samples the
-- backend's memory every 2,000 entries.
CREATE TABLE aa_mem (n bigint, used bigint);
CREATE SEQUENCE aa_mem_seq;
CREATE FUNCTION aa_mem_probe(v text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint := nextval('aa_mem_seq');
BEGIN
    IF n % 2000 = 0 THEN
        INSERT INTO aa_mem SELECT n, sum(used_bytes) FROM pg_backend_memory_contexts;
    END IF;
    RETURN v;
END $$;
SELECT state.create_state('aa_big', 'value', 'int', 'text');
SELECT count(state.value_set('aa_big', k, repeat('x', 1000))) FROM generate_series(1, 20000) k;
SELECT state.alter_state('aa_big', value_type => 'text', value_using => 'aa_mem_probe(value)');
SELECT count(*) AS samples, max(used) - min(used) < 4 * 1048576 AS memory_bounded FROM aa_mem;
SELECT state.drop_state('aa_big');
DROP TABLE aa_mem;
DROP SEQUENCE aa_mem_seq;
DROP FUNCTION aa_mem_probe(text);

-- An error after the new state was published (here at the fault points
-- the publish shares with restore) never leaves the state gone: it is as
-- before the change or as after it.
SELECT set_config('aa.dir', current_setting('data_directory') || '/aa_checkpoints', false) IS NOT NULL AS ok;
\set ECHO none
SELECT format('ALTER SYSTEM SET state_backend.checkpoint_dir = %L', current_setting('aa.dir')) \gexec
\set ECHO all
SELECT pg_reload_conf();
\c
SELECT state.create_state('aa_lg', 'value', 'int', 'text', logged => true);
SELECT count(state.value_set('aa_lg', k, 'v' || k)) FROM generate_series(1, 4) k;
SET state_backend.fault_points = 'restore.publish_logged:error';
SELECT expect_error($$SELECT state.alter_state('aa_lg', value_type => 'varchar')$$);
RESET state_backend.fault_points;
SELECT name, entries, value_type IN ('text', 'character varying') AS as_before_or_after
  FROM state.states WHERE name = 'aa_lg';
SELECT state.create_state('aa_lg2', 'value', 'int', 'text', logged => true);
SELECT count(state.value_set('aa_lg2', k, 'v' || k)) FROM generate_series(1, 4) k;
SET state_backend.fault_points = 'restore.publish_durable:error';
SELECT expect_error($$SELECT state.alter_state('aa_lg2', value_type => 'varchar')$$);
RESET state_backend.fault_points;
SELECT name, entries, value_type IN ('text', 'character varying') AS as_before_or_after
  FROM state.states WHERE name = 'aa_lg2';

SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'aa\_%' ORDER BY name;
ALTER SYSTEM RESET state_backend.checkpoint_dir;
SELECT pg_reload_conf();

-- A server that holds a part of the key groups (restored as part 0 of 2)
-- does not convert keys into key groups it does not hold: such a change is
-- refused (0A000) and the state stays as it was, every key readable.
CREATE TABLE aa_conf AS SELECT current_setting('data_directory') AS datadir;
SELECT state.create_state('aa_part', 'value', 'int', 'int');
SELECT count(state.value_set('aa_part', k, k)) FROM generate_series(1, 200) k;
-- A checkpoint an earlier change asked for may still run: one snapshot at a time.
SELECT count(state.wait_snapshot(id)) >= 0 AS none_running FROM state.snapshots WHERE status = 'running';
SELECT state.wait_snapshot(state.snapshot((SELECT datadir FROM aa_conf) || '/aa_part_snap', 'canonical')) IS NOT NULL AS taken;
SELECT state.restore((SELECT datadir FROM aa_conf) || '/aa_part_snap', parallelism => 2, part => 0) > 0 AS restored;
SELECT name, key_groups, entries FROM state.states WHERE name = 'aa_part';
SELECT expect_error($$SELECT state.alter_state('aa_part', key_type => 'bigint')$$) LIKE '0A000:%' AS refused;
SELECT name, key_type, key_groups, entries FROM state.states WHERE name = 'aa_part';
SELECT count(*) AS misplaced FROM state.keys('aa_part', NULL::int) k WHERE state.part_for('aa_part', k, 2) <> 0;
SELECT state.drop_state('aa_part');
DROP TABLE aa_conf;
