/* state_backend--1.6--1.7.sql: ALTER EXTENSION state_backend UPDATE TO '1.7'. */

\echo Use "ALTER EXTENSION state_backend UPDATE TO '1.7'" to load this file. \quit

-- 1.7 hardens what runs for a state's owner and what only the extension's
-- own functions may call; a fresh install of 1.7 (state_backend--1.7.sql)
-- and 1.6 updated by this file end with the same objects and privileges
-- (sql/upgrade.sql compares them).

---------------------------------------------------------------- views and proxies

-- Every view that filters by privilege is a security barrier, so that a
-- caller's own conditions (a cheap function that prints its argument) see
-- only the rows the view lets through.
ALTER VIEW state.states SET (security_barrier);
ALTER VIEW state.stats SET (security_barrier);
ALTER VIEW state.worker SET (security_barrier);
ALTER VIEW state.snapshots SET (security_barrier);
ALTER VIEW state.timer_status SET (security_barrier);
-- The table of failed timers had the name the view's array type needs
-- (PostgreSQL names a type's array type "_" and the type's name): renamed,
-- and the view made again, which then has its array type.
DROP VIEW state.timer_failures;
ALTER TABLE state._timer_failures RENAME TO _failed_timers;
CREATE VIEW state.timer_failures WITH (security_barrier) AS
	SELECT name, key, at, attempts, error, failed_at FROM state._failed_timers
	WHERE pg_has_role(owner, 'USAGE');
GRANT SELECT ON state.timer_failures TO PUBLIC;

-- Immutable functions are parallel safe (PostgreSQL's opr_sanity).
ALTER FUNCTION state._proxy_functions() PARALLEL SAFE;

-- The gate of a proxy's internal functions is not for PUBLIC, takes no lock,
-- and lets a call through only inside a proxy call or a rescale.
REVOKE ALL ON FUNCTION state._proxy_gate(text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION state.create_proxy(cluster text, parts text[], schema name DEFAULT 'state_proxy')
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	options text[] := state._proxy_options(cluster, parts);
	fn regprocedure;
	st text;
BEGIN
	IF schema IS NULL THEN
		RAISE EXCEPTION 'schema must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF EXISTS (SELECT 1 FROM state.proxies p WHERE p.cluster = create_proxy.cluster) THEN
		RAISE EXCEPTION 'a proxy of cluster "%" exists already', cluster
			USING ERRCODE = 'duplicate_object', HINT = 'Change its parts with state.alter_proxy.';
	END IF;
	EXECUTE format('CREATE SCHEMA %I', schema);
	EXECUTE format('GRANT USAGE ON SCHEMA %I TO PUBLIC', schema);
	EXECUTE format('CREATE SERVER %I FOREIGN DATA WRAPPER plproxy OPTIONS (modular_mapping %L, %s)',
		cluster, '1', array_to_string(options, ', '));
	EXECUTE format('CREATE USER MAPPING FOR PUBLIC SERVER %I', cluster);
	EXECUTE format('GRANT USAGE ON FOREIGN SERVER %I TO PUBLIC', cluster);
	INSERT INTO state.proxies (cluster, schema, parts) VALUES (cluster, schema, parts);

	-- The gate of every PL/Proxy call of the cluster: callers run it, as
	-- this function's owner (state._proxy_gate is not for PUBLIC).
	EXECUTE format($q$CREATE FUNCTION %I._gate() RETURNS text LANGUAGE sql SECURITY DEFINER
		SET search_path = pg_catalog, pg_temp AS %L$q$, schema,
		format('SELECT state._proxy_gate(%L)', cluster));
	-- What routing needs of a state, from part 0: its key type (qualified),
	-- the parts' max_parallelism and encoding.
	EXECUTE format($q$CREATE FUNCTION %I._state_info(state_name text)
		RETURNS TABLE(key_type text, max_parallelism text, encoding text) LANGUAGE plproxy AS %L$q$, schema,
		format(E'CLUSTER %I._gate();\nRUN ON 0;\nSELECT pg_catalog.format(\'%%I.%%I\', tn.nspname, ty.typname) AS key_type, pg_catalog.current_setting(\'state_backend.max_parallelism\') AS max_parallelism, pg_catalog.current_setting(\'server_encoding\') AS encoding FROM state.states s JOIN pg_catalog.pg_type ty ON ty.oid = s.key_type JOIN pg_catalog.pg_namespace tn ON tn.oid = ty.typnamespace WHERE s.name = $1;', schema));
	-- state.states and state.stats of every part, merged.
	SELECT string_agg(format('%I text', a.attname), ', ' ORDER BY a.attnum) INTO st
	  FROM pg_attribute a WHERE a.attrelid = 'state.states'::regclass AND a.attnum > 0 AND NOT a.attisdropped;
	EXECUTE format('CREATE FUNCTION %I._states() RETURNS TABLE(%s) LANGUAGE plproxy AS %L', schema, st,
		format(E'CLUSTER %I._gate();\nRUN ON ALL;\nSELECT %s FROM state.states s;', schema,
			(SELECT string_agg(format('s.%1$I::text AS %1$I', a.attname), ', ' ORDER BY a.attnum)
			   FROM pg_attribute a WHERE a.attrelid = 'state.states'::regclass AND a.attnum > 0 AND NOT a.attisdropped)));
	-- Read through a proxy function (states()), which holds the gate while
	-- it runs.
	EXECUTE format('CREATE FUNCTION %I.states() RETURNS TABLE(%s) AS %L, %L LANGUAGE C', schema, st,
		'MODULE_PATHNAME', 'state_proxy_call');
	EXECUTE format($q$CREATE VIEW %1$I.states WITH (security_barrier) AS
		SELECT name, min(kind) AS kind, min(backend) AS backend, min(key_type) AS key_type,
		  min(value_type) AS value_type, min(map_key_type) AS map_key_type, min(reducer) AS reducer,
		  min(ttl)::interval AS ttl, min(owner) AS owner, sum(entries::bigint) AS entries,
		  sum(bytes::bigint) AS bytes, count(*) AS parts
		FROM %1$I.states() GROUP BY name$q$, schema);
	SELECT string_agg(format('%I text', a.attname), ', ' ORDER BY a.attnum) INTO st
	  FROM pg_attribute a WHERE a.attrelid = 'state.stats'::regclass AND a.attnum > 0 AND NOT a.attisdropped;
	EXECUTE format('CREATE FUNCTION %I._stats() RETURNS TABLE(%s) LANGUAGE plproxy AS %L', schema, st,
		format(E'CLUSTER %I._gate();\nRUN ON ALL;\nSELECT %s FROM state.stats s;', schema,
			(SELECT string_agg(format('s.%1$I::text AS %1$I', a.attname), ', ' ORDER BY a.attnum)
			   FROM pg_attribute a WHERE a.attrelid = 'state.stats'::regclass AND a.attnum > 0 AND NOT a.attisdropped)));
	EXECUTE format('CREATE FUNCTION %I.stats() RETURNS TABLE(%s) AS %L, %L LANGUAGE C', schema, st,
		'MODULE_PATHNAME', 'state_proxy_call');
	EXECUTE format($q$CREATE VIEW %1$I.stats WITH (security_barrier) AS
		SELECT name, kind, %2$s FROM %1$I.stats() GROUP BY name, kind$q$, schema,
		(SELECT string_agg(format('sum(%1$I::bigint) AS %1$I', a.attname), ', ' ORDER BY a.attnum)
		   FROM pg_attribute a WHERE a.attrelid = 'state.stats'::regclass AND a.attnum > 0
		   AND NOT a.attisdropped AND a.attname NOT IN ('name', 'kind')));
	EXECUTE format('GRANT SELECT ON %1$I.states, %1$I.stats TO PUBLIC', schema);
	-- For state.rescale_proxy: a snapshot of a part, a restore on a server.
	EXECUTE format($q$CREATE FUNCTION %I._snapshot_part(part integer, path text) RETURNS text
		LANGUAGE plproxy AS %L$q$, schema,
		format(E'CLUSTER %I._gate();\nRUN ON part;\nSELECT state.wait_snapshot(state.snapshot($2));', schema));
	EXECUTE format($q$CREATE FUNCTION %I._restore_at(connstr text, paths text[], parallelism text, part text)
		RETURNS text LANGUAGE plproxy AS %L$q$, schema,
		E'CONNECT connstr;\nSELECT state.restore($2, NULL, NULL, $3::integer, $4::integer)::text;');
	EXECUTE format('REVOKE ALL ON FUNCTION %1$I._snapshot_part(integer, text), %1$I._restore_at(text, text[], text, text) FROM PUBLIC', schema);

	-- Batch calls: arrays of keys (and values), split by part (PL/Proxy's SPLIT).
	EXECUTE format($q$CREATE FUNCTION %I._value_set_many(parts integer[], a1 text, a2 text[], a3 text[])
		RETURNS SETOF text LANGUAGE plproxy AS %L$q$, schema,
		format(E'CLUSTER %I._gate();\nSPLIT parts, a2, a3;\nRUN ON parts;\nSELECT count(state.value_set($2, u.k, u.v))::text FROM unnest($3, $4) AS u(k, v);', schema));
	EXECUTE format($q$CREATE FUNCTION %I.value_set_many(name text, keys anycompatiblearray, "values" anyarray)
		RETURNS bigint AS 'MODULE_PATHNAME', 'state_proxy_call' LANGUAGE C CALLED ON NULL INPUT$q$, schema);
	EXECUTE format($q$CREATE FUNCTION %I._reduce_many(parts integer[], a1 text, a2 text[], a3 text[])
		RETURNS SETOF text LANGUAGE plproxy AS %L$q$, schema,
		format(E'CLUSTER %I._gate();\nSPLIT parts, a2, a3;\nRUN ON parts;\nSELECT count(state.reduce($2, u.k, u.v))::text FROM unnest($3, $4) AS u(k, v);', schema));
	EXECUTE format($q$CREATE FUNCTION %I.reduce_many(name text, keys anycompatiblearray, "values" anyarray)
		RETURNS bigint AS 'MODULE_PATHNAME', 'state_proxy_call' LANGUAGE C CALLED ON NULL INPUT$q$, schema);
	EXECUTE format($q$CREATE FUNCTION %I._value_get_many(parts integer[], a1 text, a2 text[], a3 text)
		RETURNS TABLE(key text, value text) LANGUAGE plproxy AS %L$q$, schema,
		format(E'CLUSTER %I._gate();\nSPLIT parts, a2;\nRUN ON parts;\nSELECT u.k AS key, state.value_get($2, u.k, $4) AS value FROM unnest($3) AS u(k);', schema));
	EXECUTE format($q$CREATE FUNCTION %I.value_get_many(name text, keys anycompatiblearray, "default" anyelement)
		RETURNS TABLE(key anycompatible, value anyelement) AS 'MODULE_PATHNAME', 'state_proxy_call' LANGUAGE C CALLED ON NULL INPUT$q$, schema);

	FOR fn IN SELECT p.oid FROM pg_proc p
		WHERE p.pronamespace = 'state'::regnamespace AND p.proname = ANY (state._proxy_functions())
		  AND p.provariadic = 0
		ORDER BY p.proname, p.oid
	LOOP
		PERFORM state._proxy_function(schema, cluster, fn);
	END LOOP;
END
$fn$;


-- The proxies made by 1.6: their gate runs as its owner, their views read
-- through proxy functions (which hold the gate while they run).  What this script makes in a proxy's
-- schema is the proxy's, not the extension's (as create_proxy makes it), and
-- a view is replaced while it is lent to the extension (so that its
-- privileges and dependent views stay).
DO $upgrade$
DECLARE
	s name;
	v text;
BEGIN
	FOR s IN SELECT p.schema FROM state.proxies p ORDER BY p.cluster LOOP
		EXECUTE format('ALTER FUNCTION %I._gate() SECURITY DEFINER', s);
		FOREACH v IN ARRAY ARRAY['states', 'stats'] LOOP
			EXECUTE format('CREATE FUNCTION %I.%I() RETURNS %s AS %L, %L LANGUAGE C', s, v,
				pg_get_function_result(format('%I.%I()', s, '_' || v)::regprocedure),
				'MODULE_PATHNAME', 'state_proxy_call');
			EXECUTE format('ALTER EXTENSION state_backend DROP FUNCTION %I.%I()', s, v);
			EXECUTE format('ALTER EXTENSION state_backend ADD VIEW %I.%I', s, v);
			EXECUTE format('CREATE OR REPLACE VIEW %I.%I WITH (security_barrier) AS %s', s, v,
				replace(pg_get_viewdef(format('%I.%I', s, v)::regclass),
					format('%I.%I()', s, '_' || v), format('%I.%I()', s, v)));
			EXECUTE format('ALTER EXTENSION state_backend DROP VIEW %I.%I', s, v);
		END LOOP;
	END LOOP;
END
$upgrade$;
