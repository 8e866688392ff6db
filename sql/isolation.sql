--
-- isolation: states are per database.  A state of the same name in another
-- database is another state; DROP EXTENSION removes a database's states;
-- DROP DATABASE with live states is fine.
--
SELECT state.create_state('iso', 'value', 'text', 'bigint');
SELECT state.create_state('iso_here', 'value', 'text', 'bigint');
SELECT state.value_set('iso', 'k', 1::bigint);
SELECT state.value_set('iso', 'only_here', 11::bigint);

CREATE DATABASE regress_sb_other;
\c regress_sb_other
-- the extension is per database: nothing is visible before it is created here
CREATE EXTENSION state_backend;
CREATE FUNCTION expect_error(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;
SELECT count(*) FROM state.states;
SELECT expect_error($$SELECT state.value_get('iso', 'k', 0::bigint)$$);
SELECT expect_error($$SELECT state.value_get('iso_here', 'k', 0::bigint)$$);
-- the same name, another kind and other types
SELECT state.create_state('iso', 'list', 'bigint', 'text');
SELECT state.list_add('iso', 1, 'other');
SELECT state.list_add('iso', 1, 'db');
SELECT state.create_state('iso_there', 'map', 'text', 'bigint');
SELECT state.map_put('iso_there', 'k', 'a', 1::bigint);
SELECT name, kind, key_type, value_type FROM state.states ORDER BY name;

\c contrib_regression
-- this database's iso is still a value state with its own contents
SELECT name, kind, key_type, value_type FROM state.states WHERE name LIKE 'iso%' ORDER BY name;
SELECT state.value_get('iso', 'k', -1::bigint), state.value_get('iso', 'only_here', -1::bigint);
SELECT expect_error($$SELECT state.list_get('iso', 1, NULL::text[])$$);
SELECT expect_error($$SELECT state.map_size('iso_there', 'k')$$);
SELECT k FROM state.keys('iso', NULL::text) AS k ORDER BY k;
-- changes here do not reach the other database
SELECT state.value_set('iso', 'k', 2::bigint);
SELECT state.truncate('iso_here');
SELECT state.drop_state('iso_here');

\c regress_sb_other
SELECT state.list_get('iso', 1, NULL::text[]), state.list_length('iso', 1);
SELECT k FROM state.keys('iso', NULL::bigint) AS k;
SELECT state.map_get('iso_there', 'k', 'a', -1::bigint);
SELECT name FROM state.states ORDER BY name;
-- truncate and drop here do not reach contrib_regression
SELECT state.truncate('iso');
SELECT state.drop_state('iso');
SELECT expect_error($$SELECT state.drop_state('iso_here')$$);

-- a DROP EXTENSION rolled back to a savepoint, or undone by an exception
-- block, drops no state
SELECT state.create_state('iso_ext', 'value', 'text', 'text');
SELECT state.value_set('iso_ext', 'k', 'kept?');
BEGIN;
SAVEPOINT before_drop;
DROP EXTENSION state_backend;
ROLLBACK TO SAVEPOINT before_drop;
COMMIT;
DO $$
BEGIN
    DROP EXTENSION state_backend;
    RAISE EXCEPTION 'undo the drop';
EXCEPTION WHEN raise_exception THEN
    NULL;
END
$$;
SELECT state.value_get('iso_ext', 'k', NULL::text) AS kept;
-- DROP EXTENSION removes this database's states, from a released
-- savepoint too
BEGIN;
SAVEPOINT dropping;
DROP EXTENSION state_backend;
RELEASE SAVEPOINT dropping;
COMMIT;
CREATE EXTENSION state_backend;
SELECT count(*) FROM state.states;
SELECT expect_error($$SELECT state.value_get('iso_ext', 'k', NULL::text)$$);
SELECT expect_error($$SELECT state.value_get('iso_there', 'k', NULL::text)$$);
-- a state created again after DROP EXTENSION starts empty
SELECT state.create_state('iso_ext', 'value', 'text', 'text');
SELECT state.value_get('iso_ext', 'k', 'empty'::text);
-- leave live states behind for DROP DATABASE
SELECT state.value_set('iso_ext', 'k', 'left behind');
SELECT state.create_state('iso', 'value', 'text', 'bigint');
SELECT state.value_set('iso', 'k', 99::bigint);

\c contrib_regression
SELECT state.value_get('iso', 'k', -1::bigint) AS here;
SELECT count(*) FROM state.states WHERE name LIKE 'iso%';
DROP DATABASE regress_sb_other;
-- the server and this database's states are fine afterwards
SELECT state.value_get('iso', 'k', -1::bigint) AS still_here;
SELECT state.value_set('iso', 'k', 3::bigint);
SELECT state.value_get('iso', 'k', -1::bigint);
SELECT state.drop_state('iso');
SELECT count(*) FROM state.states;
