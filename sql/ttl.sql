--
-- ttl: states whose values expire, as with Flink's StateTtlConfig.  Runs
-- with the default backend of the pass (memory, then rocksdb).  TTLs are
-- an hour on the TTL clock, which the test moves (state._advance_ttl_clock)
-- rather than waits for: values written at 0, more at 40 minutes,
-- everything checked at 70 minutes.
--

-- The background cleanup stays off here, so that what is read is what
-- reads alone do; 016_ttl.pl tests the cleanup.
ALTER SYSTEM SET state_backend.ttl_cleanup_key_groups = 0;
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);

-- bad settings: invalid_parameter_value, and nothing is created
SELECT expect_error($$SELECT state.create_state('t_bad', 'value', ttl => '0 seconds')$$);
SELECT expect_error($$SELECT state.create_state('t_bad', 'value', ttl => '-5 minutes')$$);
SELECT expect_error($$SELECT state.create_state('t_bad', 'value', ttl => '1 month -30 days')$$);
SELECT expect_error($$SELECT state.create_state('t_bad', 'value', ttl => '2 seconds', ttl_update => 'on_write')$$);
SELECT expect_error($$SELECT state.create_state('t_bad', 'value', ttl => '2 seconds', ttl_visibility => 'sometimes')$$);
SELECT expect_error($$SELECT state.create_state('t_bad', 'value', ttl => '2000000000 days')$$);
SELECT expect_error($$SELECT state.create_state('t_bad', 'value', ttl_update => 'on_read_and_write')$$);
SELECT count(*) AS bad_states FROM state.states WHERE name = 't_bad';

-- every kind takes a TTL; the view shows it
SELECT state.create_state('t_v', 'value', 'text', 'int', ttl => '1 hour');
SELECT state.create_state('t_l', 'list', 'text', 'int', ttl => '1 hour');
SELECT state.create_state('t_m', 'map', 'text', 'int', map_key_type => 'text', ttl => '1 hour');
SELECT state.create_state('t_r', 'reducing', 'text', 'bigint', reducer => 'sum', ttl => '1 hour');
SELECT state.create_state('t_read', 'value', 'text', 'int', ttl => '1 hour',
                          ttl_update => 'on_read_and_write');
SELECT state.create_state('t_write', 'value', 'text', 'int', ttl => '1 hour');
SELECT state.create_state('t_show', 'value', 'text', 'int', ttl => '1 hour',
                          ttl_visibility => 'return_expired_if_not_cleaned_up');
SELECT state.create_state('t_mshow', 'map', 'text', 'int', map_key_type => 'text', ttl => '1 hour',
                          ttl_visibility => 'return_expired_if_not_cleaned_up');
SELECT state.create_state('t_day', 'value', ttl => '1 day 02:00:00');
SELECT state.create_state('t_none', 'value', 'text', 'int');
SELECT name, kind, ttl, ttl_update, ttl_visibility
  FROM state.states WHERE name LIKE 't\_%' ORDER BY name;

-- before expiry, TTL states read like any other
SELECT state.value_set('t_v', 'old', 1), state.value_set('t_none', 'old', 1);
SELECT state.list_add_all('t_l', 'k', ARRAY[1, 2]);
SELECT state.map_put('t_m', 'k', 'old', 1);
SELECT state.map_put('t_m', 'k', 'null', NULL::int);
SELECT state.reduce('t_r', 'k', 5::bigint), state.reduce('t_r', 'k', 6::bigint);
SELECT state.value_set('t_read', 'k', 1), state.value_set('t_write', 'k', 1),
       state.value_set('t_show', 'k', 1);
SELECT state.map_put('t_mshow', 'k', 'a', 1), state.map_put('t_mshow', 'k', 'b', 2);
SELECT state.value_get('t_v', 'old', 0), state.list_get('t_l', 'k', NULL::int[]),
       state.map_get('t_m', 'k', 'old', 0), state.map_get('t_m', 'k', 'null', 0),
       state.map_size('t_m', 'k'), state.value_get('t_r', 'k', 0::bigint);

-- half way: fresh values next to the old ones, and reads that renew or not
SELECT state._advance_ttl_clock('40 minutes') IS NOT NULL AS clock_moved;
SELECT state.value_set('t_v', 'fresh', 2);
SELECT state.list_add('t_l', 'k', 3);
SELECT state.map_put('t_m', 'k', 'fresh', 2);
SELECT state.value_get('t_read', 'k', 0), state.value_get('t_write', 'k', 0);
SELECT state._advance_ttl_clock('30 minutes') IS NOT NULL AS clock_moved;

-- the read renewed t_read, not t_write
SELECT state.value_get('t_read', 'k', 0) AS renewed_by_read,
       state.value_get('t_write', 'k', 0) AS not_renewed;

-- what expired is gone from every read
SELECT state.value_get('t_v', 'old', 0) AS old_value, state.value_get('t_v', 'fresh', 0) AS fresh_value;
SELECT state.list_get('t_l', 'k', NULL::int[]) AS list, state.list_length('t_l', 'k') AS length;
SELECT state.map_get('t_m', 'k', 'old', 0) AS old_entry, state.map_contains('t_m', 'k', 'null') AS null_entry,
       state.map_get('t_m', 'k', 'fresh', 0) AS fresh_entry, state.map_size('t_m', 'k') AS size;
SELECT * FROM state.map_entries('t_m', 'k', NULL::text, NULL::int);
SELECT k FROM state.keys('t_v', NULL::text) AS k ORDER BY k;
SELECT name, entries FROM state.states WHERE name IN ('t_v', 't_l', 't_m', 't_none') ORDER BY name;
SELECT state.value_get('t_none', 'old', 0) AS without_ttl;
-- a reduce after expiry starts again from nothing
SELECT state.reduce('t_r', 'k', 1::bigint) AS reduced_after_expiry;

-- return_expired_if_not_cleaned_up: the expired value comes back once, and
-- that read cleans it up
SELECT state.value_get('t_show', 'k', 0) AS expired_but_shown;
SELECT state.value_get('t_show', 'k', 0) AS cleaned_up;
-- so do map entries that map_entries meets: once, then they are gone
SELECT * FROM state.map_entries('t_mshow', 'k', NULL::text, NULL::int) ORDER BY map_key;
SELECT count(*) AS entries_after FROM state.map_entries('t_mshow', 'k', NULL::text, NULL::int);

-- state.compact on a TTL state and on one without
SELECT state.compact('t_v'), state.compact('t_none');
SELECT state.value_get('t_v', 'fresh', 0) AS fresh_after_compact;

-- an iteration of map entries under the default visibility gives their memory back
SELECT state.map_put('t_m', 'k', 'old2', 5);
SELECT state._advance_ttl_clock('61 minutes') IS NOT NULL AS clock_moved;
SELECT count(*) AS shown FROM state.map_entries('t_m', 'k', NULL::text, NULL::int);
-- (a heap state's at once; a rocksdb state's at its next compaction)
SELECT entries, CASE backend WHEN 'rocksdb' THEN true ELSE bytes = 0 END AS memory_back
  FROM state.states WHERE name = 't_m';

-- one state.compact() of a rocksdb list drops its expired elements, appended
-- ones too (RocksDB keeps appends as merge operands, which its compaction
-- filter does not see until they are merged)
SELECT state.create_state('t_rl', 'list', 'text', 'int', backend => 'rocksdb', ttl => '1 hour',
                          ttl_visibility => 'return_expired_if_not_cleaned_up');
SELECT state.list_add('t_rl', 'k', 5), state.list_add('t_rl', 'k', 7), state.list_add('t_rl', 'k', 10);
SELECT state._advance_ttl_clock('61 minutes') IS NOT NULL AS clock_moved;
SELECT state.compact('t_rl');
SELECT state.list_get('t_rl', 'k', NULL::int[]) AS after_one_compaction;

-- a write renews; a day-long TTL keeps its value
SELECT state.value_set('t_day', 'k', '{"a": 1}');
SELECT state.value_get('t_day', 'k', NULL::jsonb);

-- the TTL clock moves only forward, and only for superusers
SELECT expect_error($$SELECT state._advance_ttl_clock('-1 minute')$$);
SELECT expect_error($$SELECT state._advance_ttl_clock('0 s')$$);
SELECT expect_error($$SELECT state._advance_ttl_clock('2000 years')$$);
CREATE ROLE t_plain;
SET ROLE t_plain;
SELECT expect_error($$SELECT state._advance_ttl_clock('1 minute')$$);
RESET ROLE;
DROP ROLE t_plain;

SELECT state.drop_state(name) FROM state.states WHERE name LIKE 't\_%' ORDER BY name;
ALTER SYSTEM RESET state_backend.ttl_cleanup_key_groups;
SELECT pg_reload_conf();
