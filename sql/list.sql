--
-- list: ListState.  list_add, list_add_all, list_update, list_get,
-- list_length, clear; order is kept; empty lists.
--
SELECT state.create_state('lst', 'list', 'text', 'bigint');

-- absent key: the default, length 0
SELECT state.list_get('lst', 'k', NULL::bigint[]) IS NULL AS absent_is_default,
       state.list_get('lst', 'k', '{-1}'::bigint[]) AS absent,
       state.list_length('lst', 'k') AS absent_length;

-- list_add: typed, int4 (implicit cast), untyped literal (read as bigint)
SELECT state.list_add('lst', 'k', 1::bigint);
SELECT state.list_add('lst', 'k', 2);
SELECT state.list_add('lst', 'k', '3');
SELECT state.list_get('lst', 'k', NULL::bigint[]), state.list_length('lst', 'k');
SELECT pg_typeof(state.list_get('lst', 'k', NULL::bigint[]));
-- duplicates are kept
SELECT state.list_add('lst', 'k', 2::bigint);
SELECT state.list_get('lst', 'k', NULL::bigint[]), state.list_length('lst', 'k');

-- list_add_all appends in order: typed, int4[] (implicit cast), literal
SELECT state.list_add_all('lst', 'k', ARRAY[4, 5]::bigint[]);
SELECT state.list_add_all('lst', 'k', ARRAY[6, 7]);
SELECT state.list_add_all('lst', 'k', '{8,9}');
SELECT state.list_get('lst', 'k', NULL::bigint[]), state.list_length('lst', 'k');
-- appending an empty array changes nothing
SELECT state.list_add_all('lst', 'k', '{}'::bigint[]);
SELECT state.list_length('lst', 'k');
-- list_add_all on an absent key starts the list
SELECT state.list_add_all('lst', 'k2', ARRAY[100, 200]::bigint[]);
SELECT state.list_get('lst', 'k2', NULL::bigint[]);

-- list_update replaces the whole list
SELECT state.list_update('lst', 'k', ARRAY[10, 20]::bigint[]);
SELECT state.list_get('lst', 'k', NULL::bigint[]), state.list_length('lst', 'k');
SELECT state.list_update('lst', 'k', '{30,40,50}');
SELECT state.list_get('lst', 'k', NULL::bigint[]), state.list_length('lst', 'k');
SELECT state.list_update('lst', 'new', ARRAY[1]);
SELECT state.list_get('lst', 'new', NULL::bigint[]);
-- updating to an empty list leaves an empty list
SELECT state.list_update('lst', 'k', '{}'::bigint[]);
SELECT state.list_length('lst', 'k') AS length_after_empty_update,
       state.list_get('lst', 'k', '{}'::bigint[]) AS empty;
SELECT state.list_add('lst', 'k', 60::bigint);
SELECT state.list_get('lst', 'k', NULL::bigint[]);
-- other keys were not touched
SELECT state.list_get('lst', 'k2', NULL::bigint[]);

-- clear
SELECT state.clear('lst', 'k') AS had_state;
SELECT state.list_length('lst', 'k'), state.list_get('lst', 'k', '{-1}'::bigint[]);
SELECT state.clear('lst', 'k') AS had_state_again;
SELECT k FROM state.keys('lst', NULL::text) AS k ORDER BY k;

-- order is preserved over many appends
DO $$
BEGIN
    FOR i IN 1..500 LOOP
        PERFORM state.list_add('lst', 'ord', i::bigint);
    END LOOP;
END
$$;
SELECT state.list_length('lst', 'ord');
SELECT state.list_get('lst', 'ord', NULL::bigint[])
     = ARRAY(SELECT generate_series(1, 500)::bigint) AS in_order;
SELECT state.list_add_all('lst', 'ord', ARRAY(SELECT generate_series(501, 1000)::bigint));
SELECT state.list_get('lst', 'ord', NULL::bigint[])
     = ARRAY(SELECT generate_series(1, 1000)::bigint) AS in_order;
SELECT (state.list_get('lst', 'ord', NULL::bigint[]))[1000] AS last;

-- lists of text, jsonb and arrays of a composite type
SELECT state.create_state('lst_text', 'list', 'bigint', 'text');
SELECT state.list_add('lst_text', 1, 'a');
SELECT state.list_add('lst_text', 1, 'b c'::text);
SELECT state.list_add_all('lst_text', 1, ARRAY['d', '', 'e"f']);
SELECT state.list_get('lst_text', 1, NULL::text[]), state.list_length('lst_text', 1);
-- an untyped default gives the list as text
SELECT state.list_get('lst_text', 1, NULL);
SELECT state.list_get('lst_text', 2, NULL::text[]) IS NULL AS other_key_absent;

SELECT state.create_state('lst_json', 'list', 'text', 'jsonb');
SELECT state.list_add('lst_json', 'k', '{"a": 1}');
SELECT state.list_add('lst_json', 'k', '[1, "x"]'::jsonb);
SELECT state.list_add_all('lst_json', 'k', ARRAY['null'::jsonb, '"s"'::jsonb]);
SELECT state.list_get('lst_json', 'k', NULL::jsonb[]);
SELECT e FROM unnest(state.list_get('lst_json', 'k', NULL::jsonb[])) WITH ORDINALITY AS t(e, n) ORDER BY n;

CREATE TYPE list_pt AS (x int, y int);
SELECT state.create_state('lst_pt', 'list', 'text', 'list_pt');
SELECT state.list_add('lst_pt', 'k', ROW(1, 2)::list_pt);
SELECT state.list_add('lst_pt', 'k', '(3,4)');
SELECT state.list_add_all('lst_pt', 'k', ARRAY[ROW(5, 6)::list_pt]);
SELECT p.x, p.y FROM unnest(state.list_get('lst_pt', 'k', NULL::list_pt[])) AS p;

-- a list of larger elements
SELECT state.list_add('lst_text', 3, repeat('x', 100000));
SELECT state.list_add('lst_text', 3, repeat('y', 200000));
SELECT state.list_length('lst_text', 3),
       array_length(state.list_get('lst_text', 3, NULL::text[]), 1),
       length((state.list_get('lst_text', 3, NULL::text[]))[2]);

SELECT state.drop_state('lst');
SELECT state.drop_state('lst_text');
SELECT state.drop_state('lst_json');
SELECT state.drop_state('lst_pt');
DROP TYPE list_pt;
