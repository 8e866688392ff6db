/* state_backend--1.5--1.6.sql: ALTER EXTENSION state_backend UPDATE TO '1.6'. */

\echo Use "ALTER EXTENSION state_backend UPDATE TO '1.6'" to load this file. \quit

-- 1.6 adds proxies: state.create_proxy makes, in a proxy database, the state
-- functions that PL/Proxy sends to the server holding each key.

---------------------------------------------------------------- proxies

-- A proxy database (extensions plproxy and state_backend) sends every state
-- call to the server that holds its key, through PL/Proxy: part i of a
-- cluster of N parts holds part i of N of the key groups.
-- state.create_proxy makes, in a schema of the proxy database, functions
-- with the names, arguments and results of the state functions; each is
-- state_proxy_call (C), which calls an internal PL/Proxy function of the
-- same name with a leading underscore, its arguments as text.
CREATE TABLE state.proxies (
	cluster text PRIMARY KEY,
	schema name NOT NULL UNIQUE,
	parts text[] NOT NULL,
	version integer NOT NULL DEFAULT 1);
SELECT pg_catalog.pg_extension_config_dump('state.proxies', '');
REVOKE ALL ON state.proxies FROM PUBLIC;
GRANT SELECT (cluster, schema, version) ON state.proxies TO PUBLIC;

-- The CLUSTER of every internal PL/Proxy function: the cluster's name,
-- after a share lock on its foreign server (see state.pause_proxy).
CREATE FUNCTION state._proxy_gate(cluster text)
RETURNS text AS 'MODULE_PATHNAME', 'state_proxy_gate' LANGUAGE C CALLED ON NULL INPUT;

-- Until this transaction ends, no proxy call of the cluster runs: those
-- running are waited for, new ones wait.
CREATE FUNCTION state.pause_proxy(cluster text)
RETURNS void AS 'MODULE_PATHNAME', 'state_proxy_pause' LANGUAGE C CALLED ON NULL INPUT;
REVOKE ALL ON FUNCTION state.pause_proxy(text) FROM PUBLIC;

-- The functions a proxy has, by how they reach the parts: those with a key
-- go to the part that holds it, the others to every part.
CREATE FUNCTION state._proxy_functions()
RETURNS text[] LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT ARRAY['value_get', 'value_set', 'reduce', 'aggregate', 'clear', 'key_group',
		'list_add', 'list_add_all', 'list_get', 'list_length', 'list_update',
		'map_put', 'map_put_all', 'map_get', 'map_remove', 'map_contains', 'map_entries',
		'map_size', 'map_is_empty', 'window_add', 'window_get', 'timer_register', 'timer_delete',
		'keys', 'entries', 'truncate', 'windows', 'timers', 'create_state', 'drop_state',
		'grant_access', 'revoke_access', 'advance_watermark']
$$;

-- Checks a cluster's name and parts; returns the SQL/MED option of each
-- part (p0 'connection string', ...).
CREATE FUNCTION state._proxy_options(cluster text, parts text[])
RETURNS text[] LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'plproxy') THEN
		RAISE EXCEPTION 'extension "plproxy" is not installed in this database'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				HINT = 'A proxy calls its parts through PL/Proxy: CREATE EXTENSION plproxy first.';
	END IF;
	IF cluster IS NULL OR cluster !~ '^[a-z_][a-z0-9_]{0,62}$' THEN
		RAISE EXCEPTION 'invalid cluster name %', coalesce(quote_literal(cluster), 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
				DETAIL = 'A cluster name is a lower-case identifier: letters, digits and underscores.';
	END IF;
	IF parts IS NULL OR cardinality(parts) = 0 OR array_ndims(parts) <> 1
			OR array_position(parts, NULL) IS NOT NULL THEN
		RAISE EXCEPTION 'a cluster needs one or more parts, none of them NULL'
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'Give one libpq connection string per part, part 0 first.';
	END IF;
	IF cardinality(parts) > current_setting('state_backend.max_parallelism')::int THEN
		RAISE EXCEPTION 'a cluster of % parts has more parts than key groups (%)',
			cardinality(parts), current_setting('state_backend.max_parallelism')
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF EXISTS (SELECT 1 FROM unnest(parts) c WHERE c ~* '^\s*postgres(ql)?://') THEN
		RAISE EXCEPTION 'the parts of a cluster are key=value connection strings, not URIs'
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'Write host=... port=... dbname=... for each part.';
	END IF;
	IF EXISTS (SELECT 1 FROM unnest(parts) c WHERE c ~* '(^|\s)(password|options)\s*=') THEN
		RAISE EXCEPTION 'a part''s connection string must not set password or options'
			USING ERRCODE = 'invalid_parameter_value',
				DETAIL = 'Every role can read a cluster''s connection strings, and the proxy sets the options its parts need.',
				HINT = 'Keep passwords in ~/.pgpass of the proxy server''s OS user, or in a user mapping of the cluster.';
	END IF;
	IF (SELECT count(DISTINCT c) FROM unnest(parts) c) <> cardinality(parts) THEN
		RAISE EXCEPTION 'a cluster''s parts must be different servers'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- The settings that make values as text unambiguous (as the proxy's own
	-- calls set them): ISO dates, PostgreSQL intervals, exact floats.
	RETURN ARRAY(SELECT format('p%s %L', i - 1, parts[i]
			|| ' options=''-c datestyle=ISO,YMD -c intervalstyle=postgres -c extra_float_digits=3''')
		FROM generate_subscripts(parts, 1) i ORDER BY i);
END
$$;

-- Makes the proxy function of state function fn, and its internal PL/Proxy
-- function (one for the overloads that pass the same arguments as text).
CREATE FUNCTION state._proxy_function(schema name, cluster text, fn regprocedure)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	p pg_proc;
	n int;
	keyed boolean;
	iargs text;
	rargs text;
	iret text;
	sel text;
	cols text[];
	off int;
BEGIN
	SELECT * INTO STRICT p FROM pg_proc WHERE oid = fn;
	n := p.pronargs;
	keyed := 'key' = ANY (p.proargnames[1:n]);
	off := CASE WHEN keyed THEN 1 ELSE 0 END;
	SELECT string_agg(format('a%s text', i), ', ' ORDER BY i),
		   string_agg(CASE WHEN p.proargtypes[i - 1] IN ('anyelement'::regtype, 'anycompatible'::regtype,
				'anyarray'::regtype, 'anycompatiblearray'::regtype, '"any"'::regtype, 'text'::regtype)
				THEN format('$%s', i + off)
				ELSE format('$%s::%s', i + off, format_type(p.proargtypes[i - 1], NULL)) END,
				', ' ORDER BY i)
	  INTO iargs, rargs
	  FROM generate_series(1, n) i;
	IF keyed THEN
		iargs := 'part integer, ' || iargs;
	END IF;
	SELECT array_agg(p.proargnames[i] ORDER BY i) INTO cols
	  FROM generate_subscripts(p.proargmodes, 1) i WHERE p.proargmodes[i] = 't';
	IF cols IS NOT NULL THEN
		iret := format('TABLE(%s)', (SELECT string_agg(format('%I text', c), ', ') FROM unnest(cols) c));
		sel := format('SELECT %s FROM state.%I(%s) r',
			(SELECT string_agg(format('r.%1$I::text AS %1$I', c), ', ') FROM unnest(cols) c),
			p.proname, rargs);
	ELSIF p.proretset THEN
		iret := 'SETOF text';
		sel := format('SELECT r::text FROM state.%I(%s) r', p.proname, rargs);
	ELSIF p.prorettype = 'void'::regtype THEN
		iret := CASE WHEN keyed THEN 'void' ELSE 'SETOF void' END;
		sel := format('SELECT state.%I(%s)', p.proname, rargs);
	ELSE
		iret := CASE WHEN keyed THEN 'text' ELSE 'SETOF text' END;
		sel := format('SELECT state.%I(%s)::text', p.proname, rargs);
	END IF;
	EXECUTE format('CREATE OR REPLACE FUNCTION %I.%I(%s) RETURNS %s LANGUAGE plproxy AS %L',
		schema, '_' || p.proname, iargs, iret,
		format(E'CLUSTER %I._gate();\n%s;\n%s;', schema,
			CASE WHEN keyed THEN 'RUN ON part' ELSE 'RUN ON ALL' END, sel));
	EXECUTE format('CREATE FUNCTION %I.%I(%s) RETURNS %s AS %L, %L LANGUAGE C %s %s',
		schema, p.proname, pg_get_function_arguments(fn), pg_get_function_result(fn),
		'MODULE_PATHNAME', 'state_proxy_call',
		CASE p.provolatile WHEN 'i' THEN 'IMMUTABLE' WHEN 's' THEN 'STABLE' ELSE 'VOLATILE' END,
		CASE WHEN p.proisstrict THEN 'STRICT' ELSE 'CALLED ON NULL INPUT' END);
END
$fn$;

-- A proxy for a cluster of servers: its PL/Proxy cluster (a SQL/MED
-- server, part i = parts[i+1]) and, in schema, the state functions.
CREATE FUNCTION state.create_proxy(cluster text, parts text[], schema name DEFAULT 'state_proxy')
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

	-- The gate of every PL/Proxy call of the cluster.
	EXECUTE format($q$CREATE FUNCTION %I._gate() RETURNS text LANGUAGE sql
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
	EXECUTE format($q$CREATE VIEW %1$I.states AS
		SELECT name, min(kind) AS kind, min(backend) AS backend, min(key_type) AS key_type,
		  min(value_type) AS value_type, min(map_key_type) AS map_key_type, min(reducer) AS reducer,
		  min(ttl)::interval AS ttl, min(owner) AS owner, sum(entries::bigint) AS entries,
		  sum(bytes::bigint) AS bytes, count(*) AS parts
		FROM %1$I._states() GROUP BY name$q$, schema);
	SELECT string_agg(format('%I text', a.attname), ', ' ORDER BY a.attnum) INTO st
	  FROM pg_attribute a WHERE a.attrelid = 'state.stats'::regclass AND a.attnum > 0 AND NOT a.attisdropped;
	EXECUTE format('CREATE FUNCTION %I._stats() RETURNS TABLE(%s) LANGUAGE plproxy AS %L', schema, st,
		format(E'CLUSTER %I._gate();\nRUN ON ALL;\nSELECT %s FROM state.stats s;', schema,
			(SELECT string_agg(format('s.%1$I::text AS %1$I', a.attname), ', ' ORDER BY a.attnum)
			   FROM pg_attribute a WHERE a.attrelid = 'state.stats'::regclass AND a.attnum > 0 AND NOT a.attisdropped)));
	EXECUTE format($q$CREATE VIEW %1$I.stats AS
		SELECT name, kind, %2$s FROM %1$I._stats() GROUP BY name, kind$q$, schema,
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
REVOKE ALL ON FUNCTION state.create_proxy(text, text[], name) FROM PUBLIC;

-- A proxy's parts change (a rescale): every proxy session sends its next
-- call by the new parts.  Calls of the cluster running now end first.
CREATE FUNCTION state.alter_proxy(cluster text, parts text[])
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	options text[] := state._proxy_options(cluster, parts);
	old text[];
BEGIN
	SELECT p.parts INTO old FROM state.proxies p WHERE p.cluster = alter_proxy.cluster FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'cluster "%" has no proxy in this database', cluster
			USING ERRCODE = 'undefined_object', HINT = 'Make one with state.create_proxy.';
	END IF;
	PERFORM state.pause_proxy(cluster);
	EXECUTE format('ALTER SERVER %I OPTIONS (%s, %s)', cluster,
		(SELECT string_agg(format('DROP p%s', i - 1), ', ' ORDER BY i) FROM generate_subscripts(old, 1) i),
		(SELECT string_agg('ADD ' || o, ', ') FROM unnest(options) o));
	UPDATE state.proxies p SET parts = alter_proxy.parts, version = p.version + 1
	 WHERE p.cluster = alter_proxy.cluster;
END
$fn$;
REVOKE ALL ON FUNCTION state.alter_proxy(text, text[]) FROM PUBLIC;

-- Rescales a cluster live: with every proxy call paused, a snapshot of each
-- part into snapshot_dir (a directory every server reads and writes), the
-- key groups of new part i restored from them onto parts[i+1], and the
-- proxy switched to the new parts.  Returns the entries restored.
CREATE FUNCTION state.rescale_proxy(cluster text, parts text[], snapshot_dir text)
RETURNS bigint LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	p state.proxies;
	stamp text := to_char(clock_timestamp(), 'YYYYMMDD"T"HH24MISSUS');
	paths text[] := '{}';
	path text;
	status text;
	total bigint := 0;
BEGIN
	PERFORM state._proxy_options(cluster, parts);
	SELECT * INTO p FROM state.proxies x WHERE x.cluster = rescale_proxy.cluster FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'cluster "%" has no proxy in this database', cluster
			USING ERRCODE = 'undefined_object', HINT = 'Make one with state.create_proxy.';
	END IF;
	IF snapshot_dir IS NULL OR snapshot_dir !~ '^/' THEN
		RAISE EXCEPTION 'snapshot_dir must be an absolute path'
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'Give a directory that every server of the cluster reads and writes.';
	END IF;
	PERFORM state.pause_proxy(cluster);
	FOR i IN 0 .. cardinality(p.parts) - 1 LOOP
		path := format('%s/%s-%s-part%s', rtrim(snapshot_dir, '/'), cluster, stamp, i);
		EXECUTE format('SELECT %I._snapshot_part($1, $2)', p.schema) INTO status USING i, path;
		IF status IS DISTINCT FROM 'completed' THEN
			RAISE EXCEPTION 'the snapshot of part % of cluster "%" ended %', i, cluster, coalesce(status, 'with no status')
				USING ERRCODE = 'object_not_in_prerequisite_state';
		END IF;
		paths := paths || path;
	END LOOP;
	BEGIN
		FOR i IN 0 .. cardinality(parts) - 1 LOOP
			EXECUTE format('SELECT %I._restore_at($1, $2, $3, $4)::bigint', p.schema)
				INTO status USING parts[i + 1], paths, cardinality(parts)::text, i::text;
			total := total + status::bigint;
		END LOOP;
		PERFORM state.alter_proxy(cluster, parts);
	EXCEPTION WHEN OTHERS THEN
		-- The proxy keeps its old parts: put them back as they were, from the
		-- same snapshots (a new part restored already may be one of them).
		FOR i IN 0 .. cardinality(p.parts) - 1 LOOP
			BEGIN
				EXECUTE format('SELECT %I._restore_at($1, $2, $3, $4)', p.schema)
					USING p.parts[i + 1], paths, cardinality(p.parts)::text, i::text;
			EXCEPTION WHEN OTHERS THEN
				RAISE WARNING 'could not put part % of cluster "%" back as it was: %', i, cluster, SQLERRM
					USING HINT = format('Its snapshots are %s; restore them with parallelism => %s, part => %s.',
						array_to_string(paths, ', '), cardinality(p.parts), i);
			END;
		END LOOP;
		RAISE;
	END;
	RETURN total;
END
$fn$;
REVOKE ALL ON FUNCTION state.rescale_proxy(text, text[], text) FROM PUBLIC;

-- Removes a proxy: its schema with its functions, and its cluster.
CREATE FUNCTION state.drop_proxy(cluster text)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	s name;
BEGIN
	DELETE FROM state.proxies p WHERE p.cluster = drop_proxy.cluster RETURNING p.schema INTO s;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'cluster "%" has no proxy in this database', cluster
			USING ERRCODE = 'undefined_object';
	END IF;
	EXECUTE format('DROP SCHEMA %I CASCADE', s);
	EXECUTE format('DROP SERVER %I CASCADE', cluster);
END
$fn$;
REVOKE ALL ON FUNCTION state.drop_proxy(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION state._proxy_function(name, text, regprocedure) FROM PUBLIC;
