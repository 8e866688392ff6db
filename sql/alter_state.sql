--
-- alter_state: state evolution.  state.alter_state changes a state's name,
-- key, value and map key types (with USING expressions over key, value and
-- map_key, or the types' assignment casts), TTL, backend, logged and
-- transactional, on every kind that takes the change, all or nothing, and
-- counts the changes in state.states.version.  Runs with the default
-- backend of the pass (memory, rocksdb, lmdb), which most states here are
-- created on; the backends section moves a state between memory,
-- filesystem, rocksdb and the pass's default (lmdb in its pass).
--
SET timezone = 'UTC';
SELECT count(*) AS states_at_start FROM state.states;

-- a logged state needs a checkpoint directory (reset at the end)
SELECT set_config('alt.dir', current_setting('data_directory') || '/alt_checkpoints', false) IS NOT NULL AS ok;
\set ECHO none
SELECT format('ALTER SYSTEM SET state_backend.checkpoint_dir = %L', current_setting('alt.dir')) \gexec
\set ECHO all
-- expiry here is what reads see, not the background cleanup's (016_ttl.pl)
ALTER SYSTEM SET state_backend.ttl_cleanup_key_groups = 0;
SELECT pg_reload_conf();
\c
SET timezone = 'UTC';
SELECT current_setting('state_backend.checkpoint_dir') LIKE '%/alt_checkpoints' AS dir_set;

-- alt_error(sql): SQLSTATE, message, detail and hint of the error sql raised
CREATE FUNCTION alt_error(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    st text; msg text; det text; hnt text;
BEGIN
    EXECUTE sql;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
                            det = PG_EXCEPTION_DETAIL, hnt = PG_EXCEPTION_HINT;
    RETURN st || ': ' || msg
        || CASE WHEN det <> '' THEN E'\nDETAIL: ' || det ELSE '' END
        || CASE WHEN hnt <> '' THEN E'\nHINT: ' || hnt ELSE '' END;
END $$;
-- alt_try(sql): the text of what sql (a query of one value) returns, or
-- its error
CREATE FUNCTION alt_try(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r text;
BEGIN
    EXECUTE sql INTO r;
    RETURN coalesce(r, 'NULL');
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
-- alt_code(sql): the SQLSTATE alone
CREATE FUNCTION alt_code(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
-- alt_desc(name): a state's descriptor as state.states shows it, without
-- its backend (the pass's default for most states here)
CREATE FUNCTION alt_desc(n text) RETURNS TABLE(
    name text, kind text, key_type text, value_type text, map_key_type text,
    reducer text, ttl interval, logged boolean, transactional boolean, version integer, entries bigint)
LANGUAGE sql AS $$
    SELECT name, kind, key_type::text, value_type::text,
           CASE WHEN kind IN ('map', 'broadcast', 'timers') THEN map_key_type::text END,
           reducer, ttl, logged, transactional, version, entries
      FROM state.states WHERE name = n
$$;
-- alt_default(): the pass's default backend
CREATE FUNCTION alt_default() RETURNS text LANGUAGE sql AS $$
    SELECT current_setting('state_backend.backend')
$$;
-- alt_row(name): all of its state.states row but bytes, as text
CREATE FUNCTION alt_row(n text) RETURNS text LANGUAGE sql AS $$
    SELECT ROW(name, kind, backend, key_type, value_type, map_key_type, reducer, ttl, owner, entries,
               logged, ttl_update, ttl_visibility, key_groups, aggregate, transactional, version)::text
      FROM state.states WHERE name = n
$$;
-- alt_dump(name): every key of the state with its contents as text, in
-- key order: a value (also of reducing and aggregating states, through a
-- text default), a list's array, a map's entries in map key order, a
-- timers state's instants, a window state's windows; an operator list as
-- one row, a broadcast state's entries
CREATE FUNCTION alt_dump(n text) RETURNS TABLE(key text, contents text) LANGUAGE plpgsql AS $$
DECLARE
    s record;
    getter text;
BEGIN
    SELECT * INTO s FROM state.states WHERE name = n;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF s.kind IN ('operator_list', 'union_list') THEN
        RETURN QUERY EXECUTE format('SELECT %L::text, state.operator_get(%L, NULL::%s[])::text', '-', n, s.value_type);
        RETURN;
    ELSIF s.kind = 'broadcast' THEN
        RETURN QUERY EXECUTE format('SELECT e.mk::text, e.v::text FROM state.broadcast_entries(%L, NULL::%s, NULL::%s) AS e(mk, v) ORDER BY 1',
                                    n, s.map_key_type, s.value_type);
        RETURN;
    ELSIF s.kind = 'timers' THEN
        RETURN QUERY EXECUTE format('SELECT t.key::text, string_agg(t.at::text, %L ORDER BY t.at) FROM state.timers(%L, NULL::%s) AS t GROUP BY t.key ORDER BY t.key',
                                    ',', n, s.key_type);
        RETURN;
    ELSIF s.kind = 'window' THEN
        RETURN QUERY EXECUTE format($f$SELECT w.key::text, string_agg(w.window_start || '..' || w.window_end || ' ' || w.fired || ' '
                                                          || coalesce(state.window_get(%L, w.key, w.window_start, NULL::text), 'NULL'),
                                                          ', ' ORDER BY w.window_start)
                                      FROM state.windows(%L, NULL::%s) AS w GROUP BY w.key ORDER BY w.key$f$,
                                    n, n, s.key_type);
        RETURN;
    END IF;
    getter := CASE s.kind
        WHEN 'list' THEN format('state.list_get(%L, k, NULL::%s[])::text', n, s.value_type)
        WHEN 'map' THEN format(
            $f$(SELECT string_agg(e.mk::text || '=>' || coalesce(e.v::text, 'NULL'), ', ' ORDER BY e.mk)
                  FROM state.map_entries(%L, k, NULL::%s, NULL::%s) AS e(mk, v))$f$,
            n, s.map_key_type, s.value_type)
        ELSE format('state.value_get(%L, k, NULL::text)', n)
    END;
    RETURN QUERY EXECUTE format('SELECT k::text, %s FROM state.keys(%L, NULL::%s) AS k ORDER BY k',
                                getter, n, s.key_type);
END $$;
-- alt_sum(name): keys and a digest of the contents (md5 over alt_dump)
CREATE FUNCTION alt_sum(n text) RETURNS text LANGUAGE sql AS $$
    SELECT count(*) || ' keys ' || left(md5(coalesce(string_agg(key || '=' || coalesce(contents, 'NULL'), E'\n'
                                                                ORDER BY key COLLATE "C"), '')), 12)
      FROM alt_dump(n)
$$;
-- alt_unchanged(name, sql): runs sql, which must fail: its SQLSTATE, and
-- whether the state's descriptor (its version too) and contents are as
-- they were before
CREATE TABLE alt_before (d text, s text);
INSERT INTO alt_before VALUES ('a table', 'that a USING expression must not drop');
CREATE FUNCTION alt_unchanged(n text, sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    d0 text; s0 text; err text;
BEGIN
    SELECT alt_row(n), alt_sum(n) INTO d0, s0;
    err := alt_code(sql);
    RETURN err || CASE WHEN alt_row(n) IS NOT DISTINCT FROM d0 AND alt_sum(n) = s0
                       THEN ', unchanged' ELSE ', CHANGED: ' || coalesce(alt_row(n), 'gone')
                                               || ' ' || alt_sum(n) END;
END $$;
-- alt_move(name, backend, digest): moves the state to backend ('default':
-- the pass's), and says where it is, its version and whether its
-- contents' digest is still digest
CREATE FUNCTION alt_move(n text, b text, digest text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    e bigint;
    target text := CASE b WHEN 'default' THEN alt_default() ELSE b END;
    shown text := CASE b WHEN 'default' THEN alt_default() WHEN 'jobmanager' THEN 'memory' ELSE b END;
BEGIN
    e := state.alter_state(n, backend => target);
    RETURN (SELECT format('%s entries, %s, version %s, %s', e,
                          CASE WHEN s.backend = shown THEN 'on ' || b ELSE 'on another backend: ' || s.backend END,
                          s.version,
                          CASE WHEN alt_sum(n) = digest THEN 'same contents' ELSE 'OTHER CONTENTS: ' || alt_sum(n) END)
              FROM state.states s WHERE s.name = n);
END $$;

---------------------------------------------------------------- the function
SELECT p.oid::regprocedure AS signature, p.prorettype::regtype AS returns,
       pg_get_function_arguments(p.oid) AS arguments
  FROM pg_proc p WHERE p.pronamespace = 'state'::regnamespace AND p.proname = 'alter_state';
-- state.states has a column version, after the others
SELECT attname, format_type(atttypid, atttypmod) AS type
  FROM pg_attribute WHERE attrelid = 'state.states'::regclass AND attname = 'version';

---------------------------------------------------------------- value states
SELECT state.create_state('alt_v', 'value', 'text', 'int');
SELECT state.value_set('alt_v', k, ascii(k) - 96) FROM unnest(ARRAY['a', 'b', 'c', 'd', 'e']) k;
SELECT * FROM alt_desc('alt_v');
SELECT * FROM alt_dump('alt_v');
-- a prepared call, planned against the old types, run again after each change
PREPARE alt_get(text) AS SELECT state.value_get('alt_v', $1, NULL::text);
EXECUTE alt_get('c');

-- a call that changes nothing returns the entries and bumps nothing
SELECT state.alter_state('alt_v') AS entries;
SELECT state.alter_state('alt_v', value_type => 'int', key_type => 'text') AS entries;
SELECT version FROM state.states WHERE name = 'alt_v';

-- int -> bigint: the assignment cast; every entry converted
SELECT state.alter_state('alt_v', value_type => 'bigint') AS entries;
SELECT * FROM alt_desc('alt_v');
SELECT * FROM alt_dump('alt_v');
SELECT state.value_get('alt_v', 'a', 0::bigint), pg_typeof(state.value_get('alt_v', 'a', 0::bigint));
EXECUTE alt_get('c');
-- the session writes with the new type at once: a bigint past int's range
SELECT state.value_set('alt_v', 'f', 5000000000::bigint);
SELECT state.value_get('alt_v', 'f', 0::bigint);
SELECT state.value_set('alt_v', 'f', NULL::bigint);

-- a USING expression over key and value
SELECT state.alter_state('alt_v', value_type => 'text', value_using => $$key || ':' || (value * 10)::text$$) AS entries;
SELECT * FROM alt_desc('alt_v');
SELECT * FROM alt_dump('alt_v');
-- writes of the old type are refused now, of the new one taken
SELECT alt_error($$SELECT state.value_set('alt_v', 'x', 1::bigint)$$);
SELECT state.value_set('alt_v', 'x', 'x:0'::text);
SELECT state.value_set('alt_v', 'x', NULL::text);
EXECUTE alt_get('c');

-- the key type, with key_using: 'a' -> 1, 'b' -> 2, ...
SELECT state.alter_state('alt_v', key_type => 'int', key_using => 'ascii(key) - 96') AS entries;
SELECT * FROM alt_desc('alt_v');
SELECT * FROM alt_dump('alt_v');
SELECT state.value_get('alt_v', 3, NULL::text);
SELECT alt_error($$SELECT state.value_get('alt_v', 'c'::text, NULL::text)$$);
SELECT alt_error($$EXECUTE alt_get('c')$$);
DEALLOCATE alt_get;
-- both at once, each with its expression
SELECT state.alter_state('alt_v', key_type => 'bigint', key_using => 'key * 100',
                         value_type => 'int', value_using => $$split_part(value, ':', 2)::int + key$$) AS entries;
SELECT * FROM alt_desc('alt_v');
SELECT * FROM alt_dump('alt_v');
SELECT state.value_set('alt_v', 600::bigint, 6);
SELECT state.value_get('alt_v', 600::bigint, 0);

---------------------------------------------------------------- refusals, and nothing changes
-- a value the expression cannot convert: that error, the key in the DETAIL
SELECT alt_error($$SELECT state.alter_state('alt_v', value_type => 'smallint', value_using => 'value * 600')$$);
SELECT alt_unchanged('alt_v', $$SELECT state.alter_state('alt_v', value_type => 'smallint', value_using => 'value * 600')$$);
SELECT alt_error($$SELECT state.alter_state('alt_v', value_type => 'text', value_using => '(value / (key - 300))::text')$$);
SELECT alt_unchanged('alt_v', $$SELECT state.alter_state('alt_v', value_type => 'text', value_using => '(value / (key - 300))::text')$$);
SELECT alt_error($$SELECT state.alter_state('alt_v', key_type => 'date', key_using => 'make_date(2026, 1, (key / 100)::int * CASE WHEN key = 500 THEN 10 ELSE 1 END)')$$);
SELECT alt_unchanged('alt_v', $$SELECT state.alter_state('alt_v', key_type => 'date', key_using => 'make_date(2026, 1, (key / 100)::int * CASE WHEN key = 500 THEN 10 ELSE 1 END)')$$);
-- with a rename and a backend change in the same call: none of it happens
SELECT alt_unchanged('alt_v', $$SELECT state.alter_state('alt_v', rename_to => 'alt_v2', backend => 'filesystem', ttl => '1 hour', value_type => 'smallint', value_using => 'value * 600')$$);
SELECT count(*) AS renamed FROM state.states WHERE name = 'alt_v2';
-- no assignment cast: 42804, with a hint to give a USING expression
SELECT alt_error($$SELECT state.alter_state('alt_v', value_type => 'boolean')$$);
SELECT alt_error($$SELECT state.alter_state('alt_v', key_type => 'boolean')$$);
SELECT alt_unchanged('alt_v', $$SELECT state.alter_state('alt_v', value_type => 'boolean')$$);
-- an expression of another type than the one given: its assignment cast, or 42804
SELECT alt_code($$SELECT state.alter_state('alt_v', value_type => 'boolean', value_using => 'value::text')$$);
-- a USING without its type
SELECT alt_error($$SELECT state.alter_state('alt_v', value_using => 'value + 1')$$);
SELECT alt_error($$SELECT state.alter_state('alt_v', key_using => 'key + 1')$$);
SELECT alt_error($$SELECT state.alter_state('alt_v', map_key_type => 'int', map_key_using => 'map_key')$$);
-- what ALTER TABLE ... USING refuses: subqueries, aggregates, window and set-returning functions
SELECT alt_code($$SELECT state.alter_state('alt_v', value_type => 'int', value_using => '(SELECT 1)')$$) AS subquery,
       alt_code($$SELECT state.alter_state('alt_v', value_type => 'bigint', value_using => 'sum(value)')$$) AS aggregate,
       alt_code($$SELECT state.alter_state('alt_v', value_type => 'bigint', value_using => 'row_number() OVER ()')$$) AS window_fn,
       alt_code($$SELECT state.alter_state('alt_v', value_type => 'int', value_using => 'generate_series(1, value)')$$) AS srf;
-- names other than key and value, and SQL that is not an expression
SELECT alt_code($$SELECT state.alter_state('alt_v', value_type => 'int', value_using => 'map_key')$$) AS no_map_key,
       alt_code($$SELECT state.alter_state('alt_v', value_type => 'int', value_using => 'alt_nowhere')$$) AS unknown_name,
       alt_code($$SELECT state.alter_state('alt_v', value_type => 'int', value_using => 'value; DROP TABLE alt_before')$$) AS two_statements;
SELECT count(*) AS alt_before_still_there FROM alt_before;
SELECT alt_unchanged('alt_v', $$SELECT state.alter_state('alt_v', value_type => 'int', value_using => '(SELECT 1)')$$);
-- an expression that gives NULL (a value state's NULL would clear its key)
SELECT alt_unchanged('alt_v', $$SELECT state.alter_state('alt_v', value_type => 'int', value_using => 'NULLIF(value, 11)')$$);
SELECT alt_unchanged('alt_v', $$SELECT state.alter_state('alt_v', key_type => 'bigint', key_using => 'NULLIF(key, 100)')$$);
-- an expression that gives two keys one new key cannot keep both entries
SELECT alt_unchanged('alt_v', $$SELECT state.alter_state('alt_v', key_using => '1', key_type => 'bigint')$$);
-- unknown state, unknown backend (as create_state says it), bad names
SELECT alt_error($$SELECT state.alter_state('alt_nope', value_type => 'int')$$);
SELECT alt_error($$SELECT state.alter_state('alt_nope')$$);
SELECT alt_code($$SELECT state.alter_state('alt_v', backend => 'nosuch')$$) AS alter_code,
       alt_code($$SELECT state.create_state('alt_x', 'value', backend => 'nosuch')$$) AS create_code;
SELECT (SELECT split_part(alt_error($$SELECT state.alter_state('alt_v', backend => 'nosuch')$$), E'\n', 1))
     = (SELECT split_part(alt_error($$SELECT state.create_state('alt_x', 'value', backend => 'nosuch')$$), E'\n', 1))
       AS same_error_as_create_state;
SELECT alt_code($$SELECT state.alter_state('alt_v', rename_to => '')$$) AS empty_name,
       alt_code(format('SELECT state.alter_state(%L, rename_to => %L)', 'alt_v', repeat('n', 64))) AS long_name;
-- a TTL that create_state refuses
SELECT alt_code($$SELECT state.alter_state('alt_v', ttl => '-5 minutes')$$) AS negative,
       alt_code($$SELECT state.alter_state('alt_v', ttl => '2000000000 days')$$) AS too_long;
SELECT * FROM alt_desc('alt_v');

---------------------------------------------------------------- rename
SELECT state.create_state('alt_other', 'value', 'int', 'int');
SELECT alt_error($$SELECT state.alter_state('alt_v', rename_to => 'alt_other')$$);
SELECT state.alter_state('alt_v', rename_to => 'alt_v_renamed') AS entries_rename_only;
SELECT * FROM alt_desc('alt_v_renamed');
SELECT alt_error($$SELECT state.value_get('alt_v', 100::bigint, 0)$$);
SELECT alt_error($$SELECT state.alter_state('alt_v', value_type => 'bigint')$$);
SELECT state.value_get('alt_v_renamed', 100::bigint, 0);
SELECT state.value_set('alt_v_renamed', 700::bigint, 7);
-- the old name is free: a new state may take it, and is a state of its own
SELECT state.create_state('alt_v', 'value', 'int', 'int');
SELECT name, version, entries FROM state.states WHERE name IN ('alt_v', 'alt_v_renamed') ORDER BY name;
SELECT state.drop_state('alt_v');
-- renaming to its own name changes nothing
SELECT state.alter_state('alt_v_renamed', rename_to => 'alt_v_renamed') AS entries;
SELECT version FROM state.states WHERE name = 'alt_v_renamed';
SELECT state.alter_state('alt_v_renamed', rename_to => 'alt_v') AS entries;
SELECT state.drop_state('alt_other');

---------------------------------------------------------------- list states
SELECT state.create_state('alt_l', 'list', 'int', 'int');
SELECT state.list_add_all('alt_l', k, ARRAY[k, k * 10, k * 100]) FROM generate_series(1, 4) k;
SELECT * FROM alt_dump('alt_l');
SELECT state.alter_state('alt_l', value_type => 'bigint') AS entries;
SELECT * FROM alt_desc('alt_l');
SELECT * FROM alt_dump('alt_l');
SELECT state.list_add('alt_l', 1, 5000000000::bigint);
SELECT state.list_get('alt_l', 1, NULL::bigint[]);
-- the elements, each through the expression, with their key
SELECT state.alter_state('alt_l', value_type => 'text', value_using => $$key || '/' || value$$) AS entries;
SELECT * FROM alt_dump('alt_l');
-- one element the expression cannot convert: all or nothing
SELECT alt_error($$SELECT state.alter_state('alt_l', value_type => 'smallint', value_using => $e$split_part(value, '/', 2)::bigint * 10$e$)$$);
SELECT alt_unchanged('alt_l', $$SELECT state.alter_state('alt_l', value_type => 'smallint', value_using => $e$split_part(value, '/', 2)::bigint * 10$e$)$$);
SELECT state.alter_state('alt_l', value_type => 'bigint', value_using => $$split_part(value, '/', 2)::bigint$$,
                         key_type => 'text', key_using => $$'k' || key$$) AS entries;
SELECT * FROM alt_desc('alt_l');
SELECT * FROM alt_dump('alt_l');
SELECT state.list_add('alt_l', 'k9', 9::bigint), state.list_length('alt_l', 'k9');
-- a NULL element is refused in a list: an expression that gives one fails
SELECT alt_unchanged('alt_l', $$SELECT state.alter_state('alt_l', value_type => 'bigint', value_using => 'NULLIF(value, 10)')$$);

---------------------------------------------------------------- map states
SELECT state.create_state('alt_m', 'map', 'int', 'numeric', map_key_type => 'text');
SELECT state.map_put('alt_m', k, mk, k * 1.5) FROM generate_series(1, 3) k, unnest(ARRAY['1', '2']) mk;
SELECT state.map_put('alt_m', 3, 'null', NULL::numeric);
SELECT * FROM alt_dump('alt_m');
-- map keys, with an expression over key, map_key and value
SELECT state.alter_state('alt_m', map_key_type => 'int', map_key_using => $u$CASE map_key WHEN 'null' THEN 0 ELSE map_key::int * 10 END$u$) AS entries;
SELECT * FROM alt_desc('alt_m');
SELECT * FROM alt_dump('alt_m');
SELECT state.alter_state('alt_m', value_type => 'text', value_using => $$key || '.' || map_key || '=' || coalesce(value::text, 'none')$$) AS entries;
SELECT * FROM alt_dump('alt_m');
SELECT state.map_put('alt_m', 9, 90, 'new'::text), state.map_get('alt_m', 9, 90, ''::text);
SELECT alt_error($$SELECT state.map_put('alt_m', 9, 'x'::text, 'new'::text)$$);
-- a value that does not convert, a map key that does not
SELECT alt_error($$SELECT state.alter_state('alt_m', value_type => 'numeric')$$);
SELECT alt_error($$SELECT state.alter_state('alt_m', value_type => 'numeric', value_using => $e$split_part(value, '=', 2)::numeric$e$)$$);
SELECT alt_unchanged('alt_m', $$SELECT state.alter_state('alt_m', value_type => 'numeric', value_using => $e$split_part(value, '=', 2)::numeric$e$)$$);
SELECT alt_unchanged('alt_m', $$SELECT state.alter_state('alt_m', map_key_type => 'smallint', map_key_using => 'map_key * 2000')$$);
-- two map keys of a key made one
SELECT alt_unchanged('alt_m', $$SELECT state.alter_state('alt_m', map_key_type => 'int', map_key_using => '1')$$);
SELECT alt_error($$SELECT state.alter_state('alt_m', map_key_using => 'map_key + 1')$$);
-- key, map key and value at once
SELECT state.alter_state('alt_m', key_type => 'bigint', key_using => 'key + 1000',
                         map_key_type => 'text', map_key_using => $$'mk' || map_key$$,
                         value_type => 'int', value_using => 'length(value)') AS entries;
SELECT * FROM alt_desc('alt_m');
SELECT * FROM alt_dump('alt_m');

---------------------------------------------------------------- reducing states
SELECT state.create_state('alt_r', 'reducing', 'text', 'int', reducer => 'sum');
SELECT state.reduce('alt_r', k, 10) FROM unnest(ARRAY['a', 'b', 'a']) k;
SELECT state.alter_state('alt_r', value_type => 'bigint') AS entries;
SELECT * FROM alt_desc('alt_r');
SELECT state.reduce('alt_r', 'a', 5000000000::bigint);
SELECT state.alter_state('alt_r', value_type => 'numeric', value_using => 'value / 4') AS entries;
SELECT * FROM alt_dump('alt_r');
SELECT state.reduce('alt_r', 'b', 0.5);
-- a type its reducer cannot fold: 42804, and nothing changes
SELECT alt_error($$SELECT state.alter_state('alt_r', value_type => 'text')$$);
SELECT alt_unchanged('alt_r', $$SELECT state.alter_state('alt_r', value_type => 'text', value_using => 'value::text')$$);
SELECT alt_unchanged('alt_r', $$SELECT state.alter_state('alt_r', value_type => 'boolean', value_using => 'value > 1')$$);
-- a result that overflows the new type
SELECT alt_error($$SELECT state.alter_state('alt_r', value_type => 'int', value_using => 'value * 2')$$);
-- min takes any type with an ordering: text too
SELECT state.create_state('alt_rmin', 'reducing', 'int', 'int', reducer => 'min');
SELECT state.reduce('alt_rmin', 1, v) FROM unnest(ARRAY[30, 4, 100]) v;
SELECT state.alter_state('alt_rmin', value_type => 'text') AS entries;
SELECT * FROM alt_desc('alt_rmin');
SELECT state.reduce('alt_rmin', 1, '35'::text) AS min_as_text;
SELECT state.drop_state('alt_rmin');

---------------------------------------------------------------- aggregating states
SELECT state.create_state('alt_a', 'aggregating', 'text', 'float8', aggregate => 'avg(float8)');
SELECT state.aggregate('alt_a', 'k', v) FROM unnest(ARRAY[1.0, 2.0, 6.0]::float8[]) v;
-- only to its aggregate's input type
SELECT state.alter_state('alt_a', value_type => 'float8') AS entries;
SELECT alt_error($$SELECT state.alter_state('alt_a', value_type => 'int')$$);
SELECT alt_unchanged('alt_a', $$SELECT state.alter_state('alt_a', value_type => 'numeric')$$);
-- it keeps transition states, which no expression converts
SELECT alt_unchanged('alt_a', $$SELECT state.alter_state('alt_a', value_type => 'float8', value_using => 'value * 2')$$);
-- its key and the rest
SELECT state.alter_state('alt_a', key_type => 'varchar', rename_to => 'alt_a2') AS entries;
SELECT * FROM alt_desc('alt_a2');
SELECT state.aggregate('alt_a2', 'k'::varchar, 3.0::float8);
SELECT state.value_get('alt_a2', 'k'::varchar, 0::float8) AS avg_of_four;

---------------------------------------------------------------- operator states: rename and value type
SELECT state.create_state('alt_o', 'operator_list', value_type => 'int');
SELECT state.operator_add_all('alt_o', ARRAY[1, 2, 3]);
SELECT state.create_state('alt_b', 'broadcast', value_type => 'int', map_key_type => 'text');
SELECT state.broadcast_put('alt_b', 'x', 1), state.broadcast_put('alt_b', 'y', 2);
SELECT state.alter_state('alt_o', value_type => 'bigint', value_using => 'value::bigint * 1000000000') AS entries;
SELECT state.operator_get('alt_o', NULL::bigint[]);
SELECT state.alter_state('alt_o', rename_to => 'alt_o2') AS entries;
SELECT * FROM alt_desc('alt_o2');
SELECT state.operator_add('alt_o2', 4::bigint), state.operator_get('alt_o2', NULL::bigint[]);
SELECT state.alter_state('alt_b', value_type => 'text', value_using => $$value || '!'$$) AS entries;
SELECT * FROM state.broadcast_entries('alt_b', NULL::text, NULL::text) ORDER BY 1;
SELECT alt_unchanged('alt_o2', $$SELECT state.alter_state('alt_o2', value_type => 'int')$$);
-- anything else: 0A000
SELECT alt_code($$SELECT state.alter_state('alt_o2', key_type => 'int')$$) AS key_type,
       alt_code($$SELECT state.alter_state('alt_o2', ttl => '1 hour')$$) AS ttl,
       alt_code($$SELECT state.alter_state('alt_o2', transactional => true)$$) AS transactional,
       alt_code($$SELECT state.alter_state('alt_o2', backend => 'rocksdb')$$) AS backend,
       alt_code($$SELECT state.alter_state('alt_o2', logged => true)$$) AS logged,
       alt_code($$SELECT state.alter_state('alt_b', map_key_type => 'varchar')$$) AS map_key_type;
SELECT state.drop_state('alt_o2'), state.drop_state('alt_b');

---------------------------------------------------------------- every option on every keyed kind
-- a state of each kind with keys 1..3, changed three times: renamed, its
-- key type (int -> bigint), a TTL, to filesystem and logged; then the TTL
-- taken away, transactional, to rocksdb; then back to the pass's default,
-- neither logged nor transactional.  Its contents stay (keys as text).
SELECT state.create_state('alt_k_value', 'value', 'int', 'int');
SELECT state.create_state('alt_k_list', 'list', 'int', 'int');
SELECT state.create_state('alt_k_map', 'map', 'int', 'int', map_key_type => 'int');
SELECT state.create_state('alt_k_reducing', 'reducing', 'int', 'int', reducer => 'max');
SELECT state.create_state('alt_k_aggregating', 'aggregating', 'int', 'int8', aggregate => 'sum(int8)');
SELECT count(state.value_set('alt_k_value', k, k)), count(state.list_add('alt_k_list', k, k)),
       count(state.map_put('alt_k_map', k, k, k)), count(state.reduce('alt_k_reducing', k, k)),
       count(state.aggregate('alt_k_aggregating', k, k::int8))
  FROM generate_series(1, 3) k;
-- alt_safe_sum(name): alt_sum, or the SQLSTATE of the error a read raised
CREATE FUNCTION alt_safe_sum(n text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    RETURN alt_sum(n);
EXCEPTION WHEN OTHERS THEN
    RETURN 'error ' || SQLSTATE;
END $$;
CREATE TABLE alt_kinds AS SELECT name, alt_sum(name) AS digest FROM state.states WHERE name LIKE 'alt\_k\_%';
-- alt_kinds_now(suffix, on_default): the states now (on_default: their
-- backend, the pass's, shown as "default")
CREATE FUNCTION alt_kinds_now(suffix text, on_default boolean DEFAULT false) RETURNS TABLE(kind text, name text, key_type text, ttl interval,
    backend text, logged boolean, transactional boolean, version integer, same_contents boolean)
LANGUAGE sql AS $$
    SELECT s.kind, s.name, s.key_type::text, s.ttl,
           CASE WHEN on_default AND s.backend = alt_default() THEN 'default' ELSE s.backend END,
           s.logged, s.transactional, s.version, alt_safe_sum(s.name) = k.digest
      FROM alt_kinds k JOIN state.states s ON s.name = k.name || suffix
     ORDER BY s.kind
$$;
SELECT state.alter_state(name, rename_to => name || '_2', key_type => 'bigint', ttl => '1 hour',
                         backend => 'filesystem', logged => true) AS entries, name
  FROM alt_kinds ORDER BY name;
SELECT * FROM alt_kinds_now('_2');
SELECT state.alter_state(name || '_2', ttl => '0', transactional => true, backend => 'rocksdb') AS entries, name
  FROM alt_kinds ORDER BY name;
SELECT * FROM alt_kinds_now('_2');
SELECT state.alter_state(name || '_2', logged => false, transactional => false, backend => alt_default()) AS entries, name
  FROM alt_kinds ORDER BY name;
SELECT * FROM alt_kinds_now('_2', true);
-- and they take writes of the new key type
SELECT state.value_set('alt_k_value_2', 5000000000::bigint, 1), state.value_get('alt_k_value_2', 5000000000::bigint, 0);
SELECT state.reduce('alt_k_reducing_2', 1::bigint, 7), state.aggregate('alt_k_aggregating_2', 1::bigint, 7::int8),
       state.value_get('alt_k_aggregating_2', 1::bigint, 0::numeric);
SELECT state.drop_state(name || '_2') FROM alt_kinds ORDER BY name;
DROP FUNCTION alt_kinds_now(text, boolean);
DROP TABLE alt_kinds;

---------------------------------------------------------------- timers and window states: rename, backend, logged
CREATE TABLE alt_fired (k int, at timestamptz);
CREATE FUNCTION alt_on_timer(k int, at timestamptz) RETURNS void LANGUAGE sql
    AS $$ INSERT INTO alt_fired VALUES (k, at) $$;
CREATE TABLE alt_emitted (k int, ws timestamptz, r bigint);
CREATE FUNCTION alt_emit(k int, ws timestamptz, we timestamptz, r bigint) RETURNS void LANGUAGE sql
    AS $$ INSERT INTO alt_emitted VALUES (k, ws, r) $$;
SELECT state.create_state('alt_tm', 'timers', 'int', handler => 'alt_on_timer(int,timestamptz)',
                          time_domain => 'event', backend => 'memory');
SELECT state.timer_register('alt_tm', 1, '2026-01-01 00:00:10+00'), state.timer_register('alt_tm', 2, '2026-01-01 00:00:20+00');
SELECT state.create_state('alt_w', 'window', 'int', 'bigint', assigner => 'tumbling', size => '1 minute',
                          reducer => 'sum', emit => 'alt_emit(int,timestamptz,timestamptz,bigint)',
                          backend => 'memory');
SELECT state.window_add('alt_w', 1, '2026-01-01 00:00:05+00', 5::bigint), state.window_add('alt_w', 1, '2026-01-01 00:00:06+00', 6::bigint);
-- an event-time state keeps its watermark through a change
SELECT state.advance_watermark('alt_tm', '2026-01-01 00:00:05+00');
SELECT state.advance_watermark('alt_w', '2026-01-01 00:00:07+00');
SELECT state.alter_state('alt_tm', rename_to => 'alt_tm2', backend => 'rocksdb') AS entries;
SELECT state.alter_state('alt_tm2', backend => alt_default(), logged => true) AS entries;
SELECT * FROM alt_desc('alt_tm2');
SELECT backend = alt_default() AS on_default FROM state.states WHERE name = 'alt_tm2';
SELECT key, at FROM state.timers('alt_tm2', NULL::int) ORDER BY key;
SELECT state.watermark('alt_tm2') AS timers_watermark_kept;
SELECT state.alter_state('alt_w', rename_to => 'alt_w2', backend => 'rocksdb', logged => true) AS entries;
SELECT * FROM alt_desc('alt_w2');
SELECT backend FROM state.states WHERE name = 'alt_w2';
SELECT key, window_start, fired FROM state.windows('alt_w2', NULL::int);
SELECT state.watermark('alt_w2') AS window_watermark_kept;
-- type, TTL and transactional changes: 0A000, and nothing changes
SELECT alt_code($$SELECT state.alter_state('alt_tm2', key_type => 'bigint')$$) AS key_type,
       alt_code($$SELECT state.alter_state('alt_tm2', ttl => '1 hour')$$) AS ttl,
       alt_code($$SELECT state.alter_state('alt_tm2', transactional => true)$$) AS transactional,
       alt_code($$SELECT state.alter_state('alt_tm2', value_type => 'int')$$) AS value_type,
       alt_code($$SELECT state.alter_state('alt_tm2', map_key_type => 'timestamp')$$) AS map_key_type;
SELECT alt_code($$SELECT state.alter_state('alt_w2', key_type => 'bigint')$$) AS key_type,
       alt_code($$SELECT state.alter_state('alt_w2', value_type => 'numeric')$$) AS value_type,
       alt_code($$SELECT state.alter_state('alt_w2', ttl => '1 hour')$$) AS ttl,
       alt_code($$SELECT state.alter_state('alt_w2', transactional => true)$$) AS transactional;
SELECT alt_unchanged('alt_tm2', $$SELECT state.alter_state('alt_tm2', rename_to => 'alt_tm3', key_type => 'bigint')$$);
SELECT alt_unchanged('alt_w2', $$SELECT state.alter_state('alt_w2', backend => 'memory', ttl => '1 hour')$$);
-- they fire under their new names, once
SELECT state.advance_watermark('alt_tm2', '2026-01-01 00:01:00+00');
SELECT state.advance_watermark('alt_w2', '2026-01-01 00:02:00+00');
SELECT wait_for($$SELECT count(*) = 2 FROM alt_fired$$), wait_for($$SELECT count(*) = 1 FROM alt_emitted$$);
SELECT * FROM alt_fired ORDER BY k;
SELECT * FROM alt_emitted;
SELECT state.drop_state('alt_tm2'), state.drop_state('alt_w2');

---------------------------------------------------------------- every backend
-- memory, filesystem, rocksdb and the pass's default (lmdb in its pass)
SELECT state.create_state('alt_bk', 'map', 'int', 'int', map_key_type => 'int', backend => 'memory');
SELECT count(state.map_put('alt_bk', k, mk, k * mk)) FROM generate_series(1, 50) k, generate_series(1, 4) mk;
SELECT alt_sum('alt_bk') AS at_start \gset
-- (the pass's default is never filesystem: every move here is a change in every pass)
SELECT alt_move('alt_bk', 'filesystem', :'at_start');
SELECT alt_move('alt_bk', 'rocksdb', :'at_start');
SELECT alt_move('alt_bk', 'filesystem', :'at_start');
SELECT alt_move('alt_bk', 'default', :'at_start');
SELECT alt_move('alt_bk', 'filesystem', :'at_start');
SELECT alt_move('alt_bk', 'memory', :'at_start');
-- moving where it is changes nothing
SELECT alt_move('alt_bk', 'memory', :'at_start');
-- an alias of a backend, as create_state takes it
SELECT alt_move('alt_bk', 'jobmanager', :'at_start');
SELECT * FROM alt_desc('alt_bk');
-- a backend change with a type change
SELECT state.alter_state('alt_bk', backend => 'rocksdb', value_type => 'bigint', value_using => 'value + 1') AS entries;
SELECT state.map_get('alt_bk', 50, 4, 0::bigint) AS rocksdb_bigint, backend FROM state.states WHERE name = 'alt_bk';
SELECT state.alter_state('alt_bk', backend => alt_default(), value_type => 'numeric', value_using => 'value - 1') AS entries;
SELECT state.map_get('alt_bk', 50, 4, 0::numeric) AS default_numeric, backend = alt_default() AS on_default
  FROM state.states WHERE name = 'alt_bk';
SELECT state.alter_state('alt_bk', backend => 'filesystem', value_type => 'int') AS entries;
SELECT * FROM alt_desc('alt_bk');
SELECT alt_sum('alt_bk') = :'at_start' AS same_contents_after_round_trip;
-- a failing conversion into another backend leaves it where it was
SELECT alt_unchanged('alt_bk', $$SELECT state.alter_state('alt_bk', backend => 'rocksdb', value_type => 'smallint', value_using => 'value * 200')$$);
SELECT alt_unchanged('alt_bk', $$SELECT state.alter_state('alt_bk', backend => alt_default(), value_type => 'smallint', value_using => 'value * 200')$$);
SELECT alt_unchanged('alt_bk', $$SELECT state.alter_state('alt_bk', backend => 'memory', value_type => 'smallint', value_using => 'value * 200')$$);
SELECT backend FROM state.states WHERE name = 'alt_bk';
SELECT state.drop_state('alt_bk');

---------------------------------------------------------------- logged and transactional
SELECT state.create_state('alt_tx', 'reducing', 'int', 'bigint', reducer => 'sum');
SELECT state.reduce('alt_tx', 1, 10::bigint);
SELECT state.alter_state('alt_tx', logged => true) AS entries;
SELECT state.alter_state('alt_tx', transactional => true) AS entries;
SELECT * FROM alt_desc('alt_tx');
-- now a rollback undoes a write, and a commit keeps it
BEGIN;
SELECT state.reduce('alt_tx', 1, 5::bigint);
ROLLBACK;
SELECT state.value_get('alt_tx', 1, 0::bigint) AS after_rollback;
BEGIN;
SELECT state.reduce('alt_tx', 1, 7::bigint);
COMMIT;
SELECT state.value_get('alt_tx', 1, 0::bigint) AS after_commit;
-- a TTL on a logged transactional state: 0A000, as create_state says
SELECT alt_unchanged('alt_tx', $$SELECT state.alter_state('alt_tx', ttl => '1 hour')$$);
-- in a transaction that wrote to it: the change sees the transaction's
-- write committed or refuses; it never loses it
-- (lock_timeout bounds a wait on itself)
BEGIN;
SET LOCAL lock_timeout = '2s';
SELECT state.reduce('alt_tx', 1, 100::bigint);
SELECT alt_code($$SELECT state.alter_state('alt_tx', value_type => 'numeric')$$) AS alter_in_writing_transaction;
COMMIT;
SELECT state.value_get('alt_tx', 1, 0::numeric) AS with_the_transactions_write;
-- back: not transactional, not logged; a rollback no longer undoes
SELECT state.alter_state('alt_tx', transactional => false, logged => false) AS entries;
SELECT * FROM alt_desc('alt_tx');
BEGIN;
SELECT state.reduce('alt_tx', 1, 1::bigint) IS NOT NULL AS reduced;
ROLLBACK;
SELECT state.value_get('alt_tx', 1, 0::numeric) AS rollback_does_not_undo;
-- a change in a transaction that rolls back
BEGIN;
SELECT state.alter_state('alt_tx', rename_to => 'alt_tx_rolled_back') AS entries;
ROLLBACK;
SELECT name, version FROM state.states WHERE name LIKE 'alt_tx%' ORDER BY name;
SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'alt_tx%';

---------------------------------------------------------------- TTL added, changed, removed
-- (the TTL clock moves forward with state._advance_ttl_clock, never back)
SELECT state.create_state('alt_ttl', 'value', 'text', 'int');
SELECT state.value_set('alt_ttl', 'old', 1);
SELECT state.alter_state('alt_ttl', ttl => '1 hour') AS entries;
SELECT name, ttl, version FROM state.states WHERE name = 'alt_ttl';
SELECT state._advance_ttl_clock('30 minutes') IS NOT NULL AS clock_moved;
SELECT state.value_set('alt_ttl', 'fresh', 2);
SELECT state._advance_ttl_clock('31 minutes') IS NOT NULL AS clock_moved;
-- an hour after the TTL came, what was there before has expired, what was
-- written half an hour later has not
SELECT state.value_get('alt_ttl', 'old', 0) AS old, state.value_get('alt_ttl', 'fresh', 0) AS fresh;
-- longer: values written now outlive their first hour
SELECT state.value_set('alt_ttl', 'w', 3);
SELECT state._advance_ttl_clock('30 minutes') IS NOT NULL AS clock_moved;
SELECT state.alter_state('alt_ttl', ttl => '3 hours') AS entries;
SELECT ttl, version FROM state.states WHERE name = 'alt_ttl';
SELECT state._advance_ttl_clock('90 minutes') IS NOT NULL AS clock_moved;
SELECT state.value_get('alt_ttl', 'w', 0) AS two_hours_later;
SELECT state._advance_ttl_clock('2 hours') IS NOT NULL AS clock_moved;
SELECT state.value_get('alt_ttl', 'w', 0) AS four_hours_later;
-- shorter: what is older than the new TTL expires
SELECT state.value_set('alt_ttl', 's', 4);
SELECT state._advance_ttl_clock('30 minutes') IS NOT NULL AS clock_moved;
SELECT state.alter_state('alt_ttl', ttl => '10 minutes') AS entries;
SELECT state._advance_ttl_clock('11 minutes') IS NOT NULL AS clock_moved;
SELECT state.value_get('alt_ttl', 's', 0) AS shortened;
-- removed ('0'): values stay whatever the clock says
SELECT state.value_set('alt_ttl', 'kept', 5);
SELECT state.alter_state('alt_ttl', ttl => '0') AS entries;
SELECT name, ttl, version FROM state.states WHERE name = 'alt_ttl';
SELECT state._advance_ttl_clock('1 day') IS NOT NULL AS clock_moved;
SELECT state.value_get('alt_ttl', 'kept', 0) AS kept;
-- removing a TTL that is not there changes nothing
SELECT state.alter_state('alt_ttl', ttl => '0') AS entries;
SELECT version FROM state.states WHERE name = 'alt_ttl';
-- a TTL on a list and a map: their elements and entries expire
SELECT state.create_state('alt_ttl_l', 'list', 'int', 'int');
SELECT state.create_state('alt_ttl_m', 'map', 'int', 'int', map_key_type => 'int');
SELECT state.list_add('alt_ttl_l', 1, 1), state.map_put('alt_ttl_m', 1, 1, 1);
SELECT state.alter_state('alt_ttl_l', ttl => '1 hour'), state.alter_state('alt_ttl_m', ttl => '1 hour');
SELECT state.list_get('alt_ttl_l', 1, NULL::int[]) AS list, state.map_get('alt_ttl_m', 1, 1, 0) AS map_entry;
SELECT state._advance_ttl_clock('61 minutes') IS NOT NULL AS clock_moved;
SELECT state.list_length('alt_ttl_l', 1) AS list_length, state.map_size('alt_ttl_m', 1) AS map_size;
-- aggregating states, whose transition states are kept as they are: of a
-- type (avg(float8): float8[]) or serialized (sum(int8): internal)
SELECT state.create_state('alt_ttl_' || a, 'aggregating', 'int', t::regtype, aggregate => (a || '(' || t || ')')::regprocedure)
  FROM (VALUES ('avg', 'float8'), ('sum', 'int8')) x(a, t);
SELECT state.aggregate('alt_ttl_avg', 1, 4::float8), state.aggregate('alt_ttl_sum', 1, 4::int8);
SELECT state.alter_state('alt_ttl_avg', ttl => '1 hour'), state.alter_state('alt_ttl_sum', ttl => '1 hour');
SELECT alt_try($$SELECT state.value_get('alt_ttl_avg', 1, NULL::text)$$) AS avg_with_ttl,
       alt_try($$SELECT state.value_get('alt_ttl_sum', 1, NULL::text)$$) AS sum_with_ttl;
SELECT alt_try($$SELECT state.aggregate('alt_ttl_avg', 1, 8::float8)::text$$) AS avg_fold,
       alt_try($$SELECT state.aggregate('alt_ttl_sum', 1, 8::int8)::text$$) AS sum_fold;
SELECT alt_try($$SELECT state.value_get('alt_ttl_avg', 1, NULL::text)$$) AS avg_with_ttl,
       alt_try($$SELECT state.value_get('alt_ttl_sum', 1, NULL::text)$$) AS sum_with_ttl;
SELECT state.alter_state('alt_ttl_avg', ttl => '0'), state.alter_state('alt_ttl_sum', ttl => '0');
SELECT alt_try($$SELECT state.value_get('alt_ttl_avg', 1, NULL::text)$$) AS avg_without_ttl,
       alt_try($$SELECT state.value_get('alt_ttl_sum', 1, NULL::text)$$) AS sum_without_ttl;
-- created with a TTL, then without
SELECT state.create_state('alt_ttl_sum2', 'aggregating', 'int', 'int8', aggregate => 'sum(int8)', ttl => '1 hour');
SELECT state.aggregate('alt_ttl_sum2', 1, 4::int8);
SELECT state.alter_state('alt_ttl_sum2', ttl => '0');
SELECT alt_try($$SELECT state.value_get('alt_ttl_sum2', 1, NULL::text)$$) AS sum_ttl_removed;
SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'alt_ttl%' ORDER BY name;

---------------------------------------------------------------- owner or superuser only
CREATE ROLE regress_alt_owner;
CREATE ROLE regress_alt_other;
CREATE TABLE alt_who (who text);
GRANT INSERT ON alt_who TO PUBLIC;
CREATE FUNCTION alt_note(v int) RETURNS int LANGUAGE sql AS $$ INSERT INTO alt_who VALUES (current_user) RETURNING v $$;
SET ROLE regress_alt_owner;
SELECT state.create_state('alt_p', 'value', 'int', 'int');
SELECT state.value_set('alt_p', 1, 1);
SELECT state.grant_access('alt_p', 'regress_alt_other', 'write'), state.grant_access('alt_p', 'regress_alt_other', 'read');
SET ROLE regress_alt_other;
SELECT alt_error($$SELECT state.alter_state('alt_p', value_type => 'bigint')$$);
SELECT alt_error($$SELECT state.alter_state('alt_p', rename_to => 'alt_p_mine')$$);
SELECT alt_error($$SELECT state.alter_state('alt_p')$$);
SELECT state.value_set('alt_p', 2, 2);
-- the owner's call runs its USING expression as the owner
SET ROLE regress_alt_owner;
SELECT state.alter_state('alt_p', value_type => 'int', value_using => 'alt_note(value) + 1') AS entries;
SELECT * FROM alt_dump('alt_p');
-- a superuser's as itself
RESET ROLE;
SELECT state.alter_state('alt_p', value_type => 'int', value_using => 'alt_note(value) + 1') AS entries;
SELECT who = 'regress_alt_owner' AS owner, who = session_user AS superuser, count(*)
  FROM alt_who GROUP BY 1, 2 ORDER BY 1, 2;
SELECT * FROM alt_desc('alt_p');
SELECT state.drop_state('alt_p');
DROP FUNCTION alt_note(int);
DROP TABLE alt_who;
DROP ROLE regress_alt_owner;
DROP ROLE regress_alt_other;

---------------------------------------------------------------- the types a state holds are pinned
-- A state holds its types against DROP TYPE; a change moves the pin to
-- the new type, whether the change's transaction commits or not (the
-- change itself is not undone by a rollback)
CREATE TYPE alt_pair AS (a int, b int);
SELECT state.create_state('alt_pin', 'value', 'int', 'int');
SELECT state.value_set('alt_pin', 1, 1);
BEGIN;
SELECT state.alter_state('alt_pin', value_type => 'alt_pair', value_using => 'ROW(value, value * 2)::alt_pair') AS entries;
ROLLBACK;
SELECT value_type, version FROM state.states WHERE name = 'alt_pin';
SELECT alt_code($$DROP TYPE alt_pair$$) AS drop_type_the_state_holds;
SELECT state.value_get('alt_pin', 1, NULL::text) AS still_readable;
SELECT state.alter_state('alt_pin', value_type => 'int', value_using => '(value).b') AS entries;
SELECT value_type, version FROM state.states WHERE name = 'alt_pin';
SELECT alt_code($$DROP TYPE alt_pair$$) AS drop_type_no_longer_held;
-- the key type too
CREATE DOMAIN alt_dom AS int CHECK (VALUE > 0);
SELECT state.alter_state('alt_pin', key_type => 'alt_dom') AS entries;
SELECT alt_code($$DROP DOMAIN alt_dom$$) AS drop_key_domain;
-- and a domain's constraint holds for what the conversion gives
SELECT alt_unchanged('alt_pin', $$SELECT state.alter_state('alt_pin', value_type => 'alt_dom', value_using => '-value')$$);
SELECT state.alter_state('alt_pin', key_type => 'int') AS entries;
SELECT alt_code($$DROP DOMAIN alt_dom$$) AS drop_key_domain_no_longer_held;
SELECT state.drop_state('alt_pin');

---------------------------------------------------------------- versions and snapshots
-- (a restore replaces every state of the database: only these are left)
SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'alt\_%' ORDER BY name;
-- every change that changed something counts one
SELECT state.create_state('alt_s', 'value', 'text', 'int', backend => 'memory');
SELECT count(state.value_set('alt_s', k::text, k)) FROM generate_series(1, 20) k;
SELECT version FROM state.states WHERE name = 'alt_s';
SELECT alt_sum('alt_s') AS s_before \gset
SELECT current_setting('data_directory') || '/alt_snap_v1' AS snap_v1 \gset
SELECT state.wait_snapshot(state.snapshot(:'snap_v1'));
SELECT name, kind, key_type, value_type FROM state.snapshot_states(:'snap_v1') WHERE name = 'alt_s';
SELECT state.alter_state('alt_s', value_type => 'bigint', value_using => 'value * 2') AS entries;
SELECT state.alter_state('alt_s', rename_to => 'alt_s_new') AS entries;
SELECT state.alter_state('alt_s_new', key_type => 'int', key_using => 'key::int') AS entries;
SELECT * FROM alt_desc('alt_s_new');
SELECT current_setting('data_directory') || '/alt_snap_v4' AS snap_v4 \gset
SELECT state.wait_snapshot(state.snapshot(:'snap_v4'));
-- the snapshot before brings back the name, types, version and values
SELECT state.restore(:'snap_v1') AS restored;
SELECT * FROM alt_desc('alt_s');
SELECT count(*) AS new_name_gone FROM state.states WHERE name = 'alt_s_new';
SELECT alt_sum('alt_s') = :'s_before' AS same_contents;
SELECT state.value_set('alt_s', 'x', 1), state.value_get('alt_s', 'x', 0);
-- and the snapshot after, the state as it was then
SELECT state.restore(:'snap_v4') AS restored;
SELECT * FROM alt_desc('alt_s_new');
SELECT state.value_get('alt_s_new', 7, 0::bigint) AS seven_doubled;
-- a restored state goes on counting from its version
SELECT state.alter_state('alt_s_new', value_type => 'numeric') AS entries;
SELECT version FROM state.states WHERE name = 'alt_s_new';
SELECT state.drop_state('alt_s_new');

---------------------------------------------------------------- the end
SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'alt\_%' ORDER BY name;
SELECT count(*) AS states_left FROM state.states;
ALTER SYSTEM RESET state_backend.checkpoint_dir;
ALTER SYSTEM RESET state_backend.ttl_cleanup_key_groups;
SELECT pg_reload_conf();
\c
SELECT drop_state_slot() AS slots;
SHOW state_backend.checkpoint_dir;
-- without a checkpoint directory a state cannot become logged, as
-- create_state says
SELECT state.create_state('alt_nolog', 'value', 'int', 'int');
SELECT alt_error($$SELECT state.create_state('alt_nolog2', 'value', 'int', 'int', logged => true)$$) AS create_logged;
SELECT alt_error($$SELECT state.alter_state('alt_nolog', logged => true)$$) AS alter_logged;
SELECT name, logged, version FROM state.states WHERE name LIKE 'alt_nolog%';
SELECT state.drop_state('alt_nolog');
