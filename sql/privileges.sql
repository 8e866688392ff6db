--
-- privileges: a state belongs to its creator; other roles need grants
-- (read / write); ownership for drop_state, grant_access, revoke_access;
-- members of the owner role and superusers may do everything.
--
CREATE ROLE regress_sb_alice;
CREATE ROLE regress_sb_bob;
CREATE ROLE regress_sb_carol;
GRANT regress_sb_alice TO regress_sb_carol;   -- carol is a member of alice

SET ROLE regress_sb_alice;
SELECT state.create_state('p_val', 'value', 'text', 'bigint');
SELECT state.create_state('p_list', 'list', 'text', 'bigint');
SELECT state.create_state('p_map', 'map', 'text', 'bigint');
SELECT state.create_state('p_red', 'reducing', 'text', 'bigint', reducer => 'sum');
SELECT state.value_set('p_val', 'k', 1::bigint);
SELECT state.list_add('p_list', 'k', 1::bigint);
SELECT state.map_put('p_map', 'k', 'a', 1::bigint);
SELECT state.reduce('p_red', 'k', 1::bigint);
RESET ROLE;
SELECT name, owner FROM state.states WHERE name LIKE 'p\_%' ORDER BY name;

-- what the states hold, read as superuser
CREATE FUNCTION p_state() RETURNS text LANGUAGE sql AS $$
    SELECT format('val=%s list=%s map=%s red=%s',
        state.value_get('p_val', 'k', -1::bigint),
        state.list_get('p_list', 'k', NULL::bigint[]),
        (SELECT string_agg(map_key || ':' || value, ',' ORDER BY map_key)
           FROM state.map_entries('p_map', 'k', NULL::text, NULL::bigint)),
        state.value_get('p_red', 'k', -1::bigint))
$$;
SELECT p_state();

---------------------------------------------------------------- owner only by default
SET ROLE regress_sb_bob;
-- reads
SELECT expect_error($$SELECT state.value_get('p_val', 'k', 0::bigint)$$);
SELECT expect_error($$SELECT state.value_get('p_red', 'k', 0::bigint)$$);
SELECT expect_error($$SELECT state.list_get('p_list', 'k', NULL::bigint[])$$);
SELECT expect_error($$SELECT state.list_length('p_list', 'k')$$);
SELECT expect_error($$SELECT state.map_get('p_map', 'k', 'a', 0::bigint)$$);
SELECT expect_error($$SELECT state.map_contains('p_map', 'k', 'a')$$);
SELECT expect_error($$SELECT * FROM state.map_entries('p_map', 'k', NULL::text, NULL::bigint)$$);
SELECT expect_error($$SELECT state.map_size('p_map', 'k')$$);
SELECT expect_error($$SELECT state.map_is_empty('p_map', 'k')$$);
SELECT expect_error($$SELECT * FROM state.keys('p_val', NULL::text)$$);
SELECT expect_error($$SELECT state.key_group('p_val', 'k')$$);
-- writes
SELECT expect_error($$SELECT state.value_set('p_val', 'k', 2::bigint)$$);
SELECT expect_error($$SELECT state.value_set('p_val', 'k', NULL::bigint)$$);
SELECT expect_error($$SELECT state.list_add('p_list', 'k', 2::bigint)$$);
SELECT expect_error($$SELECT state.list_add_all('p_list', 'k', ARRAY[2]::bigint[])$$);
SELECT expect_error($$SELECT state.list_update('p_list', 'k', ARRAY[2]::bigint[])$$);
SELECT expect_error($$SELECT state.map_put('p_map', 'k', 'b', 2::bigint)$$);
SELECT expect_error($$SELECT state.map_put_all('p_map', 'k', ARRAY['b'], ARRAY[2]::bigint[])$$);
SELECT expect_error($$SELECT state.map_remove('p_map', 'k', 'a')$$);
SELECT expect_error($$SELECT state.reduce('p_red', 'k', 2::bigint)$$);
SELECT expect_error($$SELECT state.clear('p_val', 'k')$$);
SELECT expect_error($$SELECT state.truncate('p_val')$$);
-- ownership
SELECT expect_error($$SELECT state.drop_state('p_val')$$);
SELECT expect_error($$SELECT state.drop_state('p_val', true)$$);
SELECT expect_error($$SELECT state.grant_access('p_val', 'regress_sb_bob', 'read')$$);
SELECT expect_error($$SELECT state.revoke_access('p_val', 'regress_sb_bob', 'read')$$);
RESET ROLE;
SELECT p_state();
SELECT count(*) FROM state.states WHERE name LIKE 'p\_%';

---------------------------------------------------------------- members of the owner role
SET ROLE regress_sb_carol;
SELECT state.value_get('p_val', 'k', 0::bigint);
SELECT state.value_set('p_val', 'carol', 3::bigint);
SELECT state.value_get('p_val', 'carol', 0::bigint);
SELECT state.clear('p_val', 'carol');
SELECT state.list_length('p_list', 'k');
RESET ROLE;

---------------------------------------------------------------- grant read
SET ROLE regress_sb_alice;
SELECT expect_error($$SELECT state.grant_access('p_val', 'regress_sb_bob', 'all')$$);
SELECT expect_error($$SELECT state.grant_access('p_val', 'regress_sb_bob', 'READS')$$);
SELECT expect_error($$SELECT state.revoke_access('p_val', 'regress_sb_bob', 'execute')$$);
SELECT state.grant_access('p_val', 'regress_sb_bob', 'read');
SELECT state.grant_access('p_list', 'regress_sb_bob', 'read');
SELECT state.grant_access('p_map', 'regress_sb_bob', 'read');
-- granting twice is harmless
SELECT state.grant_access('p_map', 'regress_sb_bob', 'read');
RESET ROLE;

SET ROLE regress_sb_bob;
SELECT state.value_get('p_val', 'k', 0::bigint);
SELECT state.list_get('p_list', 'k', NULL::bigint[]), state.list_length('p_list', 'k');
SELECT state.map_get('p_map', 'k', 'a', 0::bigint), state.map_contains('p_map', 'k', 'a'),
       state.map_size('p_map', 'k'), state.map_is_empty('p_map', 'k');
SELECT * FROM state.map_entries('p_map', 'k', NULL::text, NULL::bigint);
SELECT k FROM state.keys('p_val', NULL::text) AS k;
SELECT state.key_group('p_val', 'k') >= 0 AS key_group;
-- read does not give write
SELECT expect_error($$SELECT state.value_set('p_val', 'k', 2::bigint)$$);
SELECT expect_error($$SELECT state.list_add('p_list', 'k', 2::bigint)$$);
SELECT expect_error($$SELECT state.map_put('p_map', 'k', 'b', 2::bigint)$$);
SELECT expect_error($$SELECT state.map_remove('p_map', 'k', 'a')$$);
SELECT expect_error($$SELECT state.clear('p_val', 'k')$$);
SELECT expect_error($$SELECT state.truncate('p_list')$$);
-- a grant on one state is not a grant on another
SELECT expect_error($$SELECT state.value_get('p_red', 'k', 0::bigint)$$);
RESET ROLE;
SELECT p_state();

---------------------------------------------------------------- grant write
SET ROLE regress_sb_alice;
SELECT state.grant_access('p_val', 'regress_sb_bob', 'write');
SELECT state.grant_access('p_list', 'regress_sb_bob', 'write');
SELECT state.grant_access('p_map', 'regress_sb_bob', 'write');
RESET ROLE;

SET ROLE regress_sb_bob;
SELECT state.value_set('p_val', 'k', 2::bigint);
SELECT state.value_set('p_val', 'bob', 20::bigint);
SELECT state.list_add('p_list', 'k', 2::bigint);
SELECT state.list_add_all('p_list', 'k', ARRAY[3]::bigint[]);
SELECT state.map_put('p_map', 'k', 'b', 2::bigint);
SELECT state.map_put_all('p_map', 'k', ARRAY['c'], ARRAY[3]::bigint[]);
SELECT state.map_remove('p_map', 'k', 'a');
SELECT state.clear('p_val', 'bob');
-- write does not give ownership
SELECT expect_error($$SELECT state.drop_state('p_val')$$);
SELECT expect_error($$SELECT state.grant_access('p_val', 'regress_sb_carol', 'read')$$);
SELECT expect_error($$SELECT state.revoke_access('p_val', 'regress_sb_bob', 'write')$$);
RESET ROLE;
-- the owner sees bob's writes
SET ROLE regress_sb_alice;
SELECT p_state();
SELECT state.value_get('p_val', 'bob', -1::bigint) AS bob_cleared;
RESET ROLE;

---------------------------------------------------------------- reduce needs read and write
SET ROLE regress_sb_alice;
SELECT state.grant_access('p_red', 'regress_sb_bob', 'write');
RESET ROLE;
SET ROLE regress_sb_bob;
SELECT expect_error($$SELECT state.reduce('p_red', 'k', 10::bigint)$$);
RESET ROLE;
SET ROLE regress_sb_alice;
SELECT state.revoke_access('p_red', 'regress_sb_bob', 'write');
SELECT state.grant_access('p_red', 'regress_sb_bob', 'read');
RESET ROLE;
SET ROLE regress_sb_bob;
SELECT expect_error($$SELECT state.reduce('p_red', 'k', 10::bigint)$$);
SELECT state.value_get('p_red', 'k', 0::bigint) AS read_only_reduce_did_nothing;
RESET ROLE;
SET ROLE regress_sb_alice;
SELECT state.grant_access('p_red', 'regress_sb_bob', 'write');
RESET ROLE;
SET ROLE regress_sb_bob;
SELECT state.reduce('p_red', 'k', 10::bigint);
RESET ROLE;

---------------------------------------------------------------- revoke
SET ROLE regress_sb_alice;
SELECT state.revoke_access('p_val', 'regress_sb_bob', 'read');
RESET ROLE;
SET ROLE regress_sb_bob;
-- write remains
SELECT expect_error($$SELECT state.value_get('p_val', 'k', 0::bigint)$$);
SELECT state.value_set('p_val', 'k', 5::bigint);
RESET ROLE;
SET ROLE regress_sb_alice;
SELECT state.revoke_access('p_val', 'regress_sb_bob', 'write');
-- revoking what was not granted is harmless
SELECT state.revoke_access('p_val', 'regress_sb_bob', 'write');
SELECT state.revoke_access('p_val', 'regress_sb_carol', 'read');
RESET ROLE;
SET ROLE regress_sb_bob;
SELECT expect_error($$SELECT state.value_set('p_val', 'k', 6::bigint)$$);
SELECT expect_error($$SELECT state.value_get('p_val', 'k', 0::bigint)$$);
RESET ROLE;
SELECT state.value_get('p_val', 'k', 0::bigint) AS value_written_before_revoke;

---------------------------------------------------------------- superuser
-- a superuser reads, writes and grants on any state
SELECT state.value_set('p_val', 'su', 7::bigint);
SELECT state.value_get('p_val', 'su', 0::bigint);
SELECT state.grant_access('p_val', 'regress_sb_bob', 'read');
SET ROLE regress_sb_bob;
SELECT state.value_get('p_val', 'su', 0::bigint);
RESET ROLE;
SELECT state.revoke_access('p_val', 'regress_sb_bob', 'read');

-- grants die with their state: a new state of the same name has none
SET ROLE regress_sb_alice;
SELECT state.create_state('p_tmp', 'value', 'text', 'bigint');
SELECT state.grant_access('p_tmp', 'regress_sb_bob', 'read');
SELECT state.grant_access('p_tmp', 'regress_sb_bob', 'write');
SELECT state.drop_state('p_tmp');
SELECT state.create_state('p_tmp', 'value', 'text', 'bigint');
SELECT state.value_set('p_tmp', 'k', 1::bigint);
RESET ROLE;
SET ROLE regress_sb_bob;
SELECT expect_error($$SELECT state.value_get('p_tmp', 'k', 0::bigint)$$);
SELECT expect_error($$SELECT state.value_set('p_tmp', 'k', 2::bigint)$$);
RESET ROLE;
SELECT state.value_get('p_tmp', 'k', 0::bigint);
SELECT state.drop_state('p_tmp');

-- states bob creates are bob's, and alice cannot touch them
SET ROLE regress_sb_bob;
SELECT state.create_state('p_bob', 'value', 'text', 'text');
SELECT state.value_set('p_bob', 'k', 'mine');
RESET ROLE;
SET ROLE regress_sb_alice;
SELECT expect_error($$SELECT state.value_get('p_bob', 'k', NULL::text)$$);
SELECT expect_error($$SELECT state.drop_state('p_bob')$$);
RESET ROLE;
SELECT owner FROM state.states WHERE name = 'p_bob';
-- a member of the owner role may drop
SET ROLE regress_sb_carol;
SELECT state.drop_state('p_val');
RESET ROLE;
SET ROLE regress_sb_alice;
SELECT state.drop_state('p_list');
SELECT state.drop_state('p_map');
RESET ROLE;
-- superuser drops what is left
SELECT state.drop_state('p_red');
SELECT state.drop_state('p_bob');
SELECT count(*) FROM state.states WHERE name LIKE 'p\_%';

DROP FUNCTION p_state();
DROP ROLE regress_sb_carol;
DROP ROLE regress_sb_bob;
DROP ROLE regress_sb_alice;
