--
-- logged: states whose changes go to WAL.  Each change is one record of the
-- resource manager state_backend, readable with pg_walinspect; a logged state
-- needs a checkpoint directory.  Runs with the default backend of the pass
-- (memory, then rocksdb).
--
CREATE EXTENSION pg_walinspect;

-- without state_backend.checkpoint_dir: object_not_in_prerequisite_state
SELECT expect_error($$SELECT state.create_state('lg_v', 'value', 'int', 'int', logged => true)$$);
SELECT count(*) AS states FROM state.states WHERE name LIKE 'lg_%';

-- with one
SELECT set_config('lg.dir', current_setting('data_directory') || '/lg_checkpoints', false) IS NOT NULL AS ok;
\set ECHO none
SELECT format('ALTER SYSTEM SET state_backend.checkpoint_dir = %L', current_setting('lg.dir')) \gexec
\set ECHO all
SELECT pg_reload_conf();
-- a new session starts with the reloaded settings (this one takes them
-- only when the postmaster's signal has reached it)
\c
SELECT set_config('lg.dir', current_setting('data_directory') || '/lg_checkpoints', false) IS NOT NULL AS ok;
SELECT current_setting('state_backend.checkpoint_dir') = current_setting('lg.dir') AS dir_set;

SELECT pg_current_wal_insert_lsn() AS lg_start \gset
SELECT state.create_state('lg_v', 'value', 'int', 'int', logged => true);
SELECT state.create_state('lg_l', 'list', 'int', 'int', logged => true);
SELECT state.create_state('lg_m', 'map', 'int', 'text', map_key_type => 'text', logged => true);
SELECT state.create_state('lg_r', 'reducing', 'int', 'bigint', reducer => 'sum', logged => true);
SELECT state.create_state('lg_u', 'value', 'int', 'int');
SELECT name, kind, logged FROM state.states WHERE name LIKE 'lg_%' ORDER BY name;
SELECT slot_name, slot_type FROM pg_replication_slots WHERE slot_name = 'state_backend';

SELECT state.value_set('lg_v', k, k * 10) FROM generate_series(1, 3) k;
SELECT state.list_add('lg_l', 1, 7), state.list_add('lg_l', 1, 8);
SELECT state.map_put('lg_m', 1, 'a', 'x'), state.map_put('lg_m', 1, 'b', NULL);
SELECT state.map_remove('lg_m', 1, 'a');
SELECT state.map_remove('lg_m', 1, 'not there');
SELECT state.reduce('lg_r', 1, 5::bigint), state.reduce('lg_r', 1, 6::bigint);
SELECT state.clear('lg_v', 3);
SELECT state.clear('lg_v', 99);
SELECT state.value_set('lg_u', 1, 1);
SELECT state.drop_state('lg_l');

-- one record per change that changed something; none for lg_u
SELECT record_type, count(*)
  FROM pg_get_wal_records_info(:'lg_start', pg_current_wal_flush_lsn())
 WHERE resource_manager = 'state_backend'
 GROUP BY record_type ORDER BY record_type;

-- a truncate is logged (a heap state's keys one by one, a rocksdb state's at once)
SELECT pg_current_wal_insert_lsn() AS lg_before_truncate \gset
SELECT state.truncate('lg_v');
SELECT count(*) > 0 AS logged
  FROM pg_get_wal_records_info(:'lg_before_truncate', pg_current_wal_flush_lsn())
 WHERE resource_manager = 'state_backend' AND record_type IN ('REMOVE', 'TRUNCATE');
SELECT regexp_replace(description, '(state|database) \d+', '\1 N', 'g') AS description
  FROM pg_get_wal_records_info(:'lg_start', pg_current_wal_flush_lsn())
 WHERE resource_manager = 'state_backend' AND record_type IN ('CREATE', 'MAP_PUT')
 ORDER BY start_lsn;

-- what the states hold
SELECT state.value_get('lg_v', 1, -1) AS v1,
       (SELECT string_agg(map_key || '=' || coalesce(value, 'null'), ',')
          FROM state.map_entries('lg_m', 1, NULL::text, NULL::text)) AS m1,
       state.value_get('lg_r', 1, 0::bigint) AS r1;

-- a restore that keeps one part of several leaves a logged operator_list
-- with its part's chunk unlogged: its records begin at its publication,
-- after the record that creates it
SELECT state.create_state('lg_o', 'operator_list', value_type => 'int', logged => true);
SELECT state.operator_add_all('lg_o', ARRAY[1, 2, 3, 4]);
SELECT state.wait_snapshot(state.snapshot(current_setting('lg.dir') || '_snap', 'canonical'));
SELECT pg_current_wal_insert_lsn() AS lg_before_restore \gset
SELECT state.restore(current_setting('lg.dir') || '_snap', parallelism => 2, part => 0);
SELECT state.operator_get('lg_o', '{}'::int[]);
SELECT string_agg(record_type, ' ' ORDER BY start_lsn) AS records
  FROM pg_get_wal_records_info(:'lg_before_restore', pg_current_wal_flush_lsn())
 WHERE resource_manager = 'state_backend'
   AND record_type <> 'CLOCK';  -- the worker's clock, once a second while a logged state has a TTL

SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'lg_%' ORDER BY name;
ALTER SYSTEM RESET state_backend.checkpoint_dir;
SELECT pg_reload_conf();
\c
SELECT drop_state_slot() AS slots;
SHOW state_backend.checkpoint_dir;
DROP EXTENSION pg_walinspect;
