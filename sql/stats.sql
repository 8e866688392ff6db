--
-- state.stats: per state, the calls that read, wrote, found no state, and
-- met an expired value; state.reset_stats.
--
SELECT state.create_state('st_v', 'value', 'int', 'int');
SELECT state.create_state('st_m', 'map', 'int', 'int', map_key_type => 'int');
SELECT state.create_state('st_t', 'value', 'int', 'int', ttl => '1 second');
SELECT state.reset_stats();
SELECT name, reads, writes, misses, expired FROM state.stats WHERE name LIKE 'st\_%' ORDER BY name;

SELECT count(state.value_set('st_v', i, i)) FROM generate_series(1, 10) i;
SELECT count(state.value_get('st_v', i, 0)) FROM generate_series(1, 15) i;
SELECT state.map_put('st_m', 1, 1, 1), state.map_get('st_m', 1, 1, 0), state.map_get('st_m', 1, 2, 0),
       state.map_get('st_m', 2, 1, 0);
SELECT count(state.value_set('st_t', i, i)) FROM generate_series(1, 3) i;
SELECT pg_sleep(1.2);
SELECT count(state.value_get('st_t', i, -1)) FROM generate_series(1, 3) i;
-- value_set: 10 writes; value_get: 15 reads, 5 of absent keys; the map: 1
-- write, 3 reads, 2 misses; the TTL state: 3 writes, then 3 reads that met
-- expired values (misses too)
SELECT name, kind, reads, writes, misses, expired, entries FROM state.stats WHERE name LIKE 'st\_%' ORDER BY name;

SELECT state.reset_stats('st_v');
SELECT name, reads, writes, misses, expired FROM state.stats WHERE name LIKE 'st\_%' ORDER BY name;
SELECT expect_error($$SELECT state.reset_stats('st_nope')$$);
CREATE ROLE st_role;
SET ROLE st_role;
SELECT expect_error($$SELECT state.reset_stats()$$);
RESET ROLE;
DROP ROLE st_role;
-- counting can be turned off
SET state_backend.track_stats = off;
SELECT state.value_get('st_v', 1, 0);
RESET state_backend.track_stats;
SELECT reads FROM state.stats WHERE name = 'st_v';

-- state.worker: the worker's requests and time, and RocksDB's own figures
SELECT value AS requests_before FROM state.worker WHERE name = 'requests' \gset
SELECT state.create_state('st_r', 'value', 'int', 'int', backend => 'rocksdb');
SELECT count(state.value_set('st_r', i, i)) FROM generate_series(1, 100) i;
SELECT (SELECT value FROM state.worker WHERE name = 'requests') > :requests_before AS served;
-- (the figures of a backend another library registers come and go with it)
SELECT name, value >= 0 AS known FROM state.worker WHERE name NOT LIKE 'lmdb\_%' ORDER BY name;

-- a state made again under the same name starts from zero
SELECT state.drop_state('st_m');
SELECT state.create_state('st_m', 'map', 'int', 'int', map_key_type => 'int');
SELECT reads, writes, misses FROM state.stats WHERE name = 'st_m';

SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'st\_%' ORDER BY name;
