--
-- prepared: parameters sent without a type (as drivers send strings, and as
-- PREPARE without a type list gives) in key, map key and value positions are
-- typed by the server and read with the state's declared types.
--
SELECT state.create_state('pp_big', 'value', 'bigint', 'bigint');
SELECT state.create_state('pp_uuid', 'value', 'uuid', 'jsonb');
SELECT state.create_state('pp_text', 'value', 'text', 'bigint');

---------------------------------------------------------------- value_set / value_get
PREPARE vset_big AS SELECT state.value_set('pp_big', $1, $2);
EXECUTE vset_big('1', '100');
EXECUTE vset_big('2', '-9223372036854775808');
EXECUTE vset_big(' 3', '0300');
-- the server gave the parameters a type
SELECT parameter_types FROM pg_prepared_statements WHERE name = 'vset_big';
PREPARE vget_big AS SELECT state.value_get('pp_big', $1, -1::bigint);
EXECUTE vget_big('1');
EXECUTE vget_big('2');
EXECUTE vget_big('3');
EXECUTE vget_big('4');
-- the values were stored as bigint: typed reads agree
SELECT state.value_get('pp_big', 1, 0::bigint) + 1 AS typed_read,
       state.value_get('pp_big', 3::bigint, 0::bigint) AS from_padded_literal;
-- the default may be a parameter too (typed in the query)
PREPARE vget_big_def AS SELECT state.value_get('pp_big', $1, $2::bigint);
EXECUTE vget_big_def('1', '0');
EXECUTE vget_big_def('5', '-5');
-- a bad literal is an input error for the declared type
SELECT expect_error($$EXECUTE vset_big('x', '1')$$);
SELECT expect_error($$EXECUTE vset_big('1', '1.5')$$);
EXECUTE vget_big('1');
-- a NULL parameter: NULL key is refused, NULL value clears
SELECT expect_error($$EXECUTE vset_big(NULL, '1')$$);
EXECUTE vset_big('2', NULL);
EXECUTE vget_big('2');

-- uuid keys and jsonb values
PREPARE vset_uuid AS SELECT state.value_set('pp_uuid', $1, $2);
EXECUTE vset_uuid('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"clicks": 3, "tags": ["a", "b"]}');
EXECUTE vset_uuid('B0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A12', '[1, 2.50, null]');
PREPARE vget_uuid AS SELECT state.value_get('pp_uuid', $1, NULL::jsonb);
EXECUTE vget_uuid('{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}');
EXECUTE vget_uuid('b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12');
EXECUTE vget_uuid('c0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13');
SELECT state.value_get('pp_uuid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, NULL::jsonb) -> 'tags' -> 1 AS typed_read;
SELECT expect_error($$EXECUTE vset_uuid('not-a-uuid', '{}')$$);
SELECT expect_error($$EXECUTE vset_uuid('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{bad json')$$);
EXECUTE vget_uuid('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');

-- text keys and bigint values
PREPARE vset_text AS SELECT state.value_set('pp_text', $1, $2);
EXECUTE vset_text('user-1', '41');
EXECUTE vset_text('user-1', '42');
EXECUTE vset_text('', '7');
PREPARE vget_text AS SELECT state.value_get('pp_text', $1, 0::bigint);
EXECUTE vget_text('user-1');
EXECUTE vget_text('');
EXECUTE vget_text('user-2');
SELECT state.value_get('pp_text', 'user-1', 0::bigint) * 2 AS typed_read;

---------------------------------------------------------------- list_add
SELECT state.create_state('pp_list', 'list', 'uuid', 'bigint');
SELECT state.create_state('pp_list_json', 'list', 'bigint', 'jsonb');
PREPARE ladd AS SELECT state.list_add('pp_list', $1, $2);
EXECUTE ladd('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '1');
EXECUTE ladd('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2');
EXECUTE ladd('A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '3');
SELECT state.list_get('pp_list', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, NULL::bigint[]);
PREPARE lget AS SELECT state.list_get('pp_list', $1, NULL::bigint[]), state.list_length('pp_list', $1);
EXECUTE lget('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');
EXECUTE lget('b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12');
PREPARE ladd_json AS SELECT state.list_add('pp_list_json', $1, $2);
EXECUTE ladd_json('10', '{"n": 1}');
EXECUTE ladd_json('10', '"two"');
PREPARE ladd_all_json AS SELECT state.list_add_all('pp_list_json', $1, $2);
EXECUTE ladd_all_json('10', '{"{\"n\": 3}","null"}');
SELECT state.list_get('pp_list_json', 10, NULL::jsonb[]);

---------------------------------------------------------------- map_put / map_get
SELECT state.create_state('pp_map', 'map', 'bigint', 'jsonb', map_key_type => 'uuid');
SELECT state.create_state('pp_map_text', 'map', 'text', 'bigint', map_key_type => 'bigint');
PREPARE mput AS SELECT state.map_put('pp_map', $1, $2, $3);
EXECUTE mput('1', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"v": 1}');
EXECUTE mput('1', 'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12', '{"v": 2}');
EXECUTE mput('1', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '{"v": 3}');
EXECUTE mput('2', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'null');
PREPARE mget AS SELECT state.map_get('pp_map', $1, $2, NULL::jsonb);
EXECUTE mget('1', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');
EXECUTE mget('1', '{b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12}');
EXECUTE mget('1', 'c0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13');
EXECUTE mget('2', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');
SELECT state.map_size('pp_map', 1), state.map_size('pp_map', 2);
SELECT map_key, value FROM state.map_entries('pp_map', 1, NULL::uuid, NULL::jsonb) ORDER BY map_key;
PREPARE mcontains AS SELECT state.map_contains('pp_map', $1, $2), state.map_remove('pp_map', $1, $2);
EXECUTE mcontains('1', 'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12');
EXECUTE mcontains('1', 'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12');

PREPARE mput_text AS SELECT state.map_put('pp_map_text', $1, $2, $3);
EXECUTE mput_text('user-1', '10', '100');
EXECUTE mput_text('user-1', '9', '90');
EXECUTE mput_text('user-1', '010', '101');
PREPARE mget_text AS SELECT state.map_get('pp_map_text', $1, $2, -1::bigint);
EXECUTE mget_text('user-1', '10');
EXECUTE mget_text('user-1', '9');
EXECUTE mget_text('user-1', '8');
SELECT map_key, value FROM state.map_entries('pp_map_text', 'user-1', NULL::bigint, NULL::bigint) ORDER BY map_key;
SELECT expect_error($$EXECUTE mput_text('user-1', 'ten', '1')$$);
SELECT expect_error($$EXECUTE mput_text('user-1', NULL, '1')$$);
SELECT state.map_size('pp_map_text', 'user-1');

---------------------------------------------------------------- reduce
SELECT state.create_state('pp_sum', 'reducing', 'uuid', 'bigint', reducer => 'sum');
SELECT state.create_state('pp_max', 'reducing', 'text', 'bigint', reducer => 'max');
PREPARE rsum AS SELECT state.reduce('pp_sum', $1, $2);
EXECUTE rsum('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '5');
EXECUTE rsum('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '37');
EXECUTE rsum('A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '-2');
SELECT state.value_get('pp_sum', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, 0::bigint) AS typed_read;
-- a typed value parameter gives a bigint result
PREPARE rsum_typed AS SELECT state.reduce('pp_sum', $1, $2::bigint);
EXECUTE rsum_typed('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '8');
SELECT expect_error($$EXECUTE rsum('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '9223372036854775807')$$);
SELECT expect_error($$EXECUTE rsum('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'five')$$);
SELECT state.value_get('pp_sum', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, 0::bigint) AS unchanged;
PREPARE rmax AS SELECT state.reduce('pp_max', $1, $2);
EXECUTE rmax('k', '5');
EXECUTE rmax('k', '10');
-- read as bigint, so '9' is smaller than '10'
EXECUTE rmax('k', '9');
SELECT state.value_get('pp_max', 'k', 0::bigint);

---------------------------------------------------------------- generic plans
-- the same statements keep working once the plan is cached as generic
SET plan_cache_mode = force_generic_plan;
PREPARE g_set AS SELECT state.value_set('pp_text', $1, $2);
PREPARE g_get AS SELECT state.value_get('pp_text', $1, 0::bigint);
PREPARE g_put AS SELECT state.map_put('pp_map_text', $1, $2, $3);
EXECUTE g_set('g', '1');
EXECUTE g_set('g', '2');
EXECUTE g_get('g');
EXECUTE g_put('user-2', '5', '50');
EXECUTE g_put('user-2', '6', '60');
EXECUTE mget_text('user-2', '6');
EXECUTE rsum('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '100');
RESET plan_cache_mode;
DO $$
BEGIN
    FOR i IN 1..10 LOOP
        EXECUTE 'EXECUTE vset_text(''loop'', ''' || i || ''')';
    END LOOP;
END
$$;
EXECUTE vget_text('loop');

---------------------------------------------------------------- set-ups kept across executions
-- A plan's executions reuse the state's set-up, yet a change of privileges,
-- of a domain's constraints or of a cast takes effect at the next call.
SET plan_cache_mode = force_generic_plan;
CREATE ROLE regress_pp_reader;
GRANT USAGE ON SCHEMA state TO regress_pp_reader;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA state TO regress_pp_reader;
SET ROLE regress_pp_reader;
PREPARE pr_get AS SELECT state.value_get('pp_big', $1, 0::bigint);
SELECT expect_error($$EXECUTE pr_get('1')$$);
RESET ROLE;
SELECT state.grant_access('pp_big', 'regress_pp_reader', 'read');
SET ROLE regress_pp_reader;
EXECUTE pr_get('1');
EXECUTE pr_get('1');
RESET ROLE;
SELECT state.revoke_access('pp_big', 'regress_pp_reader', 'read');
SET ROLE regress_pp_reader;
SELECT expect_error($$EXECUTE pr_get('1')$$);
RESET ROLE;
DEALLOCATE pr_get;

CREATE DOMAIN pp_small AS int;
SELECT state.create_state('pp_dom', 'value', 'int', 'pp_small');
PREPARE dom_set AS SELECT state.value_set('pp_dom', $1::int, $2::int);
EXECUTE dom_set(1, 500);
EXECUTE dom_set(2, 500);
ALTER DOMAIN pp_small ADD CONSTRAINT pp_small_max CHECK (VALUE < 100);
SELECT expect_error($$EXECUTE dom_set(3, 500)$$);
EXECUTE dom_set(3, 50);
SELECT state.value_get('pp_dom', 3, 0::pp_small) AS kept;

-- an int given to a state of a type of ours goes through its cast; a new
-- cast is used at the next call
CREATE TYPE pp_tag AS (t text);
CREATE FUNCTION pp_tag_of(int) RETURNS pp_tag LANGUAGE sql IMMUTABLE AS $$ SELECT ROW('v1:' || $1)::pp_tag $$;
CREATE FUNCTION pp_tag_of2(int) RETURNS pp_tag LANGUAGE sql IMMUTABLE AS $$ SELECT ROW('v2:' || $1)::pp_tag $$;
CREATE CAST (int AS pp_tag) WITH FUNCTION pp_tag_of(int) AS IMPLICIT;
SELECT state.create_state('pp_tagged', 'value', 'int', 'pp_tag');
PREPARE tag_set AS SELECT state.value_set('pp_tagged', 1, $1::int);
EXECUTE tag_set(7);
SELECT (state.value_get('pp_tagged', 1, NULL::pp_tag)).t AS first;
DROP CAST (int AS pp_tag);
CREATE CAST (int AS pp_tag) WITH FUNCTION pp_tag_of2(int) AS IMPLICIT;
EXECUTE tag_set(8);
SELECT (state.value_get('pp_tagged', 1, NULL::pp_tag)).t AS after_replace;
RESET plan_cache_mode;

DEALLOCATE ALL;
SELECT state.drop_state('pp_dom');
SELECT state.drop_state('pp_tagged');
DROP CAST (int AS pp_tag);
DROP FUNCTION pp_tag_of(int);
DROP FUNCTION pp_tag_of2(int);
DROP TYPE pp_tag;
DROP DOMAIN pp_small;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA state FROM regress_pp_reader;
REVOKE USAGE ON SCHEMA state FROM regress_pp_reader;
DROP ROLE regress_pp_reader;
SELECT state.drop_state('pp_big');
SELECT state.drop_state('pp_uuid');
SELECT state.drop_state('pp_text');
SELECT state.drop_state('pp_list');
SELECT state.drop_state('pp_list_json');
SELECT state.drop_state('pp_map');
SELECT state.drop_state('pp_map_text');
SELECT state.drop_state('pp_sum');
SELECT state.drop_state('pp_max');
SELECT count(*) FROM state.states;
