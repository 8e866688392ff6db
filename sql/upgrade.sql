--
-- upgrade: a database that installed 1.0 and ran ALTER EXTENSION UPDATE has
-- every state it had, and the same functions, views and privileges as a
-- fresh install of the current version.
--
CREATE DATABASE regress_sb_upgrade;
CREATE ROLE regress_sb_plain;
\set original_db :DBNAME
\c regress_sb_upgrade
CREATE EXTENSION state_backend VERSION '1.0';
-- what the 1.0 release's control file gave (CREATE EXTENSION takes the
-- comment of the control file installed now)
COMMENT ON EXTENSION state_backend IS 'Flink-style keyed state (value, list, map, reducing) in shared memory, with snapshots';
SELECT extversion FROM pg_extension WHERE extname = 'state_backend';

-- 1.0's definitions over this library: its calls, with its arguments
SELECT state.create_state('visits', 'value', 'text', 'bigint');
SELECT state.value_set('visits', 'alice', 3::bigint);
SELECT state.create_state('tags', 'list', 'integer', 'text', ttl => '1 hour');
SELECT state.list_add('tags', 7, 'a');
SELECT name, kind, key_type, value_type, ttl, entries FROM state.states ORDER BY name;
SELECT count(*) AS columns FROM pg_attribute
 WHERE attrelid = 'state.states'::regclass AND attnum > 0;
SELECT count(*) AS snapshot_columns FROM pg_attribute
 WHERE attrelid = 'state.snapshots'::regclass AND attnum > 0;
SELECT count(*) AS snapshots FROM state.snapshots WHERE status = 'running';
SELECT state.restore('/nonexistent/state_backend_upgrade');

-- What one install looks like: every function of the schema with its
-- definition and privileges, every view with its definition and privileges,
-- the extension's members and initial privileges, the schema's privileges.
CREATE TABLE public.install_shape (install text, item text);
CREATE FUNCTION public.record_shape(install text) RETURNS bigint LANGUAGE sql AS $$
    WITH rows AS (INSERT INTO public.install_shape
    SELECT install, item FROM (
        SELECT 'function ' || p.oid::regprocedure || ' ' || pg_get_functiondef(p.oid)
               || ' acl ' || coalesce(p.proacl::text, 'default')
               || ' plain role executes ' || has_function_privilege('regress_sb_plain', p.oid, 'EXECUTE')
               AS item
          FROM pg_proc p WHERE p.pronamespace = 'state'::regnamespace
        UNION ALL
        SELECT 'relation ' || c.oid::regclass || ' ' || c.relkind::text || ' '
               || coalesce(pg_get_viewdef(c.oid), '') || ' acl ' || coalesce(c.relacl::text, 'default')
               || ' options ' || coalesce(c.reloptions::text, 'none')
               || ' plain role selects ' || has_table_privilege('regress_sb_plain', c.oid, 'SELECT')
          FROM pg_class c WHERE c.relnamespace = 'state'::regnamespace
        UNION ALL
        SELECT 'type ' || t.typname || ' array ' || coalesce(ta.typname, 'none')
          FROM pg_type t LEFT JOIN pg_type ta ON ta.oid = t.typarray
         WHERE t.typnamespace = 'state'::regnamespace AND t.typelem = 0
        UNION ALL
        SELECT 'column ' || a.attrelid::regclass || '.' || a.attname || ' '
               || format_type(a.atttypid, a.atttypmod) || ' at ' || a.attnum
          FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
         WHERE c.relnamespace = 'state'::regnamespace AND a.attnum > 0
        UNION ALL
        SELECT 'member ' || pg_describe_object(d.classid, d.objid, d.objsubid)
          FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
         WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
           AND e.extname = 'state_backend'
        UNION ALL
        SELECT 'initial privileges ' || pg_describe_object(i.classoid, i.objoid, i.objsubid)
               || ' ' || i.initprivs::text
          FROM pg_init_privs i
         WHERE (i.classoid = 'pg_proc'::regclass
                AND i.objoid IN (SELECT oid FROM pg_proc WHERE pronamespace = 'state'::regnamespace))
            OR (i.classoid = 'pg_class'::regclass
                AND i.objoid IN (SELECT oid FROM pg_class WHERE relnamespace = 'state'::regnamespace))
            OR (i.classoid = 'pg_namespace'::regclass AND i.objoid = 'state'::regnamespace)
        UNION ALL
        SELECT 'schema acl ' || nspacl::text FROM pg_namespace WHERE nspname = 'state'
        UNION ALL
        SELECT 'comment ' || pg_describe_object(ds.classoid, ds.objoid, ds.objsubid) || ' '
               || ds.description
          FROM pg_description ds
         WHERE (ds.classoid = 'pg_extension'::regclass
                AND ds.objoid = (SELECT oid FROM pg_extension WHERE extname = 'state_backend'))
            OR (ds.classoid = 'pg_proc'::regclass
                AND ds.objoid IN (SELECT oid FROM pg_proc WHERE pronamespace = 'state'::regnamespace))
            OR (ds.classoid = 'pg_class'::regclass
                AND ds.objoid IN (SELECT oid FROM pg_class WHERE relnamespace = 'state'::regnamespace))
    ) items
    RETURNING 1)
    SELECT count(*) FROM rows
$$;

ALTER EXTENSION state_backend UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'state_backend';

-- The states are still there, with their entries, and take the new calls.
SELECT name, kind, logged, aggregate, entries FROM state.states ORDER BY name;
SELECT state.value_get('visits', 'alice', 0::bigint) AS visits;
SELECT state.list_get('tags', 7, NULL::text[]) AS tags;
SELECT * FROM state.entries('visits', NULL::text, NULL::bigint);
SELECT state.create_state('sum', 'aggregating', 'text', 'integer', aggregate => 'sum(integer)');
SELECT state.aggregate('sum', 'k', 4), state.aggregate('sum', 'k', 5);
SELECT state.value_get('sum', 'k', 0::bigint) AS sum;
SET ROLE regress_sb_plain;
SELECT count(*) > 0 AS plain_reads_stats FROM state.stats;
SELECT count(*) > 0 AS plain_reads_worker FROM state.worker;
RESET ROLE;
-- the views, as \dv lists them (without the owner, who runs the tests)
SELECT relname AS view FROM pg_class
 WHERE relnamespace = 'state'::regnamespace AND relkind = 'v' ORDER BY 1;

SELECT public.record_shape('updated') > 100 AS many_items;
DROP EXTENSION state_backend;
CREATE EXTENSION state_backend;
SELECT public.record_shape('fresh') > 100 AS many_items;

-- Any difference between the two is printed, with the install it is in.
(SELECT 'only after update' AS install, item FROM install_shape WHERE install = 'updated'
 EXCEPT ALL
 SELECT 'only after update', item FROM install_shape WHERE install = 'fresh')
UNION ALL
(SELECT 'only in a fresh install', item FROM install_shape WHERE install = 'fresh'
 EXCEPT ALL
 SELECT 'only in a fresh install', item FROM install_shape WHERE install = 'updated')
ORDER BY 1, 2;

\c :original_db
DROP DATABASE regress_sb_upgrade;
DROP ROLE regress_sb_plain;
