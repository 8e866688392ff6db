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

-- For state.rescale_proxy: a step done (each has a fault point).
CREATE FUNCTION state._proxy_rescale_step(step text)
RETURNS void AS 'MODULE_PATHNAME', 'state_proxy_rescale_step' LANGUAGE C STRICT;
REVOKE ALL ON FUNCTION state._proxy_rescale_step(text) FROM PUBLIC;

-- On a part, for state.rescale_proxy: with true, no timer or window of this
-- database fires until a call with false in this session, or its end (the
-- batch firing now is waited for).  Not for PUBLIC.
CREATE FUNCTION state._pause_timers(pause boolean)
RETURNS void AS 'MODULE_PATHNAME', 'state_pause_timers' LANGUAGE C CALLED ON NULL INPUT;
REVOKE ALL ON FUNCTION state._pause_timers(boolean) FROM PUBLIC;

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
	-- A rescale journal of this name that an earlier proxy left (dropped
	-- with its extension) is no one's.
	PERFORM state._proxy_journal_remove(cluster, false);

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
	-- And the pause of a server's timers and windows (state._pause_timers).
	EXECUTE format($q$CREATE FUNCTION %I._pause_timers_at(connstr text, pause boolean)
		RETURNS void LANGUAGE plproxy AS %L$q$, schema,
		E'CONNECT connstr;\nSELECT state._pause_timers($2);');
	EXECUTE format('REVOKE ALL ON FUNCTION %1$I._snapshot_part(integer, text), %1$I._restore_at(text, text[], text, text), %1$I._pause_timers_at(text, boolean) FROM PUBLIC', schema);

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

CREATE OR REPLACE FUNCTION state.rescale_proxy(cluster text, parts text[], snapshot_dir text)
RETURNS bigint LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	p state.proxies;
	stamp text := to_char(clock_timestamp(), 'YYYYMMDD"T"HH24MISSUS');
	paths text[] := '{}';
	path text;
	status text;
	total bigint := 0;
	server text;
	paused text[] := '{}';
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
	PERFORM state._proxy_rescale_step('calls_paused');
	BEGIN
		-- No timer or window fires on a server of the cluster, old or new,
		-- until the end: what a handler wrote after its part's snapshot
		-- would go with the part's old contents at the restore.  A pause
		-- lasts while its connection does (the session of this proxy).
		FOR server IN SELECT DISTINCT s FROM unnest(p.parts || parts) s LOOP
			EXECUTE format('SELECT %I._pause_timers_at($1, true)', p.schema) USING server;
			paused := paused || server;
		END LOOP;
		PERFORM state._proxy_rescale_step('timers_paused');
		FOR i IN 0 .. cardinality(p.parts) - 1 LOOP
			path := format('%s/%s-%s-part%s', rtrim(snapshot_dir, '/'), cluster, stamp, i);
			EXECUTE format('SELECT %I._snapshot_part($1, $2)', p.schema) INTO status USING i, path;
			IF status IS DISTINCT FROM 'completed' THEN
				RAISE EXCEPTION 'the snapshot of part % of cluster "%" ended %', i, cluster, coalesce(status, 'with no status')
					USING ERRCODE = 'object_not_in_prerequisite_state';
			END IF;
			paths := paths || path;
			PERFORM state._proxy_rescale_step('part_snapshot');
		END LOOP;
		BEGIN
			FOR i IN 0 .. cardinality(parts) - 1 LOOP
				EXECUTE format('SELECT %I._restore_at($1, $2, $3, $4)::bigint', p.schema)
					INTO status USING parts[i + 1], paths, cardinality(parts)::text, i::text;
				total := total + status::bigint;
				PERFORM state._proxy_rescale_step('part_restored');
			END LOOP;
			PERFORM state.alter_proxy(cluster, parts);
			PERFORM state._proxy_rescale_step('switched');
		EXCEPTION WHEN OTHERS THEN
			-- The proxy keeps its old parts: put them back as they were, from the
			-- same snapshots (a new part restored already may be one of them).
			FOR i IN 0 .. cardinality(p.parts) - 1 LOOP
				BEGIN
					EXECUTE format('SELECT %I._restore_at($1, $2, $3, $4)', p.schema)
						USING p.parts[i + 1], paths, cardinality(p.parts)::text, i::text;
					PERFORM state._proxy_rescale_step('part_put_back');
				EXCEPTION WHEN OTHERS THEN
					RAISE WARNING 'could not put part % of cluster "%" back as it was: %', i, cluster, SQLERRM
						USING HINT = format('Its snapshots are %s; restore them with parallelism => %s, part => %s.',
							array_to_string(paths, ', '), cardinality(p.parts), i);
				END;
			END LOOP;
			RAISE;
		END;
	EXCEPTION WHEN OTHERS OR query_canceled THEN
		FOREACH server IN ARRAY paused LOOP
			BEGIN
				EXECUTE format('SELECT %I._pause_timers_at($1, false)', p.schema) USING server;
			EXCEPTION WHEN OTHERS THEN
				RAISE WARNING 'could not resume the timers of server "%" of cluster "%": %', server, cluster, SQLERRM
					USING HINT = 'They resume when this session ends.';
			END;
		END LOOP;
		RAISE;
	END;
	FOREACH server IN ARRAY paused LOOP
		EXECUTE format('SELECT %I._pause_timers_at($1, false)', p.schema) USING server;
	END LOOP;
	PERFORM state._proxy_rescale_step('timers_resumed');
	RETURN total;
END
$fn$;

-- The proxies made by 1.6: their gate runs as its owner, their views read
-- through proxy functions (which hold the gate while they run), and they
-- get the pause of a server's timers.  What this script makes in a proxy's
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
		EXECUTE format($q$CREATE FUNCTION %I._pause_timers_at(connstr text, pause boolean)
			RETURNS void LANGUAGE plproxy AS %L$q$, s,
			E'CONNECT connstr;\nSELECT state._pause_timers($2);');
		EXECUTE format('ALTER EXTENSION state_backend DROP FUNCTION %I._pause_timers_at(text, boolean)', s);
		EXECUTE format('REVOKE ALL ON FUNCTION %I._pause_timers_at(text, boolean) FROM PUBLIC', s);
	END LOOP;
END
$upgrade$;

---------------------------------------------------------------- proxy rescale journal

-- A rescale of a proxy is all or nothing: a journal, written durably before
-- its first restore, says what it changes; a failure puts the old parts
-- back, and one that a dead session left is undone or finished by
-- state.repair_proxy (which alter_proxy, rescale_proxy and drop_proxy run
-- first); until then the cluster's proxy calls refuse.
-- For state.rescale_proxy: the journal of a rescale of a cluster of this
-- database, a file of the data directory written durably whatever the
-- transaction does (proxy/sql_proxy_journal.c); NULL when there is none.
-- While there is one, the cluster's proxy calls refuse.
CREATE FUNCTION state._proxy_journal_read(cluster text)
RETURNS text AS 'MODULE_PATHNAME', 'state_proxy_journal_read' LANGUAGE C STRICT;
REVOKE ALL ON FUNCTION state._proxy_journal_read(text) FROM PUBLIC;
CREATE FUNCTION state._proxy_journal_write(cluster text, journal text)
RETURNS void AS 'MODULE_PATHNAME', 'state_proxy_journal_write' LANGUAGE C STRICT;
REVOKE ALL ON FUNCTION state._proxy_journal_write(text, text) FROM PUBLIC;
-- Removes it now, or (at_commit) when this transaction commits with the
-- subtransaction that asks.
CREATE FUNCTION state._proxy_journal_remove(cluster text, at_commit boolean)
RETURNS void AS 'MODULE_PATHNAME', 'state_proxy_journal_remove' LANGUAGE C STRICT;
REVOKE ALL ON FUNCTION state._proxy_journal_remove(text, boolean) FROM PUBLIC;

-- A proxy's parts change in this transaction (ALTER SERVER and
-- state.proxies); the caller holds the row of state.proxies and the pause.
CREATE FUNCTION state._proxy_switch(cluster text, old text[], parts text[])
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
	EXECUTE format('ALTER SERVER %I OPTIONS (%s, %s)', cluster,
		(SELECT string_agg(format('DROP p%s', i - 1), ', ' ORDER BY i) FROM generate_subscripts(old, 1) i),
		(SELECT string_agg('ADD ' || o, ', ') FROM unnest(state._proxy_options(cluster, parts)) o));
	UPDATE state.proxies p SET parts = _proxy_switch.parts, version = p.version + 1
	 WHERE p.cluster = _proxy_switch.cluster;
END
$fn$;
REVOKE ALL ON FUNCTION state._proxy_switch(text, text[], text[]) FROM PUBLIC;

-- For state.rescale_proxy and state.repair_proxy: the old parts of a
-- cluster on the servers a restore of the rescale reached (touched)
-- restored from its snapshots.  True when every one is back; a part that
-- could not be is a WARNING naming its snapshots.
CREATE FUNCTION state._proxy_put_back(cluster text, schema name, old text[], paths text[], touched text[])
RETURNS boolean LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	back boolean := true;
BEGIN
	FOR i IN 0 .. cardinality(old) - 1 LOOP
		CONTINUE WHEN NOT old[i + 1] = ANY (touched);
		BEGIN
			EXECUTE format('SELECT %I._restore_at($1, $2, $3, $4)', schema)
				USING old[i + 1], paths, cardinality(old)::text, i::text;
			PERFORM state._proxy_rescale_step('part_put_back');
		EXCEPTION WHEN OTHERS THEN
			RAISE WARNING 'could not put part % of cluster "%" back as it was: %', i, cluster, SQLERRM
				USING HINT = format('Its snapshots are %s; once its server is back, call state.repair_proxy(%L).',
					array_to_string(paths, ', '), cluster);
			back := false;
		END;
	END LOOP;
	RETURN back;
END
$fn$;
REVOKE ALL ON FUNCTION state._proxy_put_back(text, name, text[], text[], text[]) FROM PUBLIC;

-- A proxy's parts change (a rescale): every proxy session sends its next
-- call by the new parts.  Calls of the cluster running now end first; a
-- rescale of it that was interrupted is put right first (repair_proxy).
CREATE OR REPLACE FUNCTION state.alter_proxy(cluster text, parts text[])
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	old text[];
BEGIN
	PERFORM state._proxy_options(cluster, parts);
	SELECT p.parts INTO old FROM state.proxies p WHERE p.cluster = alter_proxy.cluster FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'cluster "%" has no proxy in this database', cluster
			USING ERRCODE = 'undefined_object', HINT = 'Make one with state.create_proxy.';
	END IF;
	PERFORM state.pause_proxy(cluster);
	IF state.repair_proxy(cluster) IS NOT NULL THEN
		SELECT p.parts INTO old FROM state.proxies p WHERE p.cluster = alter_proxy.cluster;
	END IF;
	PERFORM state._proxy_switch(cluster, old, parts);
END
$fn$;
REVOKE ALL ON FUNCTION state.alter_proxy(text, text[]) FROM PUBLIC;

-- Rescales a cluster live: with every proxy call paused and the timers and
-- windows of every server involved paused, a snapshot of each part into
-- snapshot_dir (a directory every server reads and writes), the key groups
-- of new part i restored from them onto parts[i+1], and the proxy switched
-- to the new parts.  Returns the entries restored.  All or nothing: a
-- journal written durably before the first restore (old parts, new parts,
-- snapshots) says what is changing; an error before the switch is durable
-- puts the old parts back; once every new part is restored and the switch
-- made, the journal is marked switched (the point of no return) and goes
-- when the transaction commits.  A rescale interrupted otherwise (its
-- session died, or its transaction did not commit) leaves the journal:
-- the cluster's calls refuse until repair_proxy (run by this function,
-- alter_proxy and drop_proxy first) undoes or finishes it.  Each step has
-- a fault point (state._proxy_rescale_step).
CREATE OR REPLACE FUNCTION state.rescale_proxy(cluster text, parts text[], snapshot_dir text)
RETURNS bigint LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	p state.proxies;
	stamp text := to_char(clock_timestamp(), 'YYYYMMDD"T"HH24MISSUS');
	paths text[] := '{}';
	path text;
	status text;
	total bigint := 0;
	server text;
	paused text[] := '{}';
	journal jsonb;
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
	IF state.repair_proxy(cluster) IS NOT NULL THEN
		SELECT * INTO p FROM state.proxies x WHERE x.cluster = rescale_proxy.cluster;
	END IF;
	PERFORM state._proxy_rescale_step('calls_paused');
	BEGIN
		-- No timer or window fires on a server of the cluster, old or new,
		-- until the end: what a handler wrote after its part's snapshot
		-- would go with the part's old contents at the restore.  A pause
		-- lasts while its connection does (the session of this proxy).
		FOR server IN SELECT DISTINCT s FROM unnest(p.parts || parts) s LOOP
			EXECUTE format('SELECT %I._pause_timers_at($1, true)', p.schema) USING server;
			paused := paused || server;
		END LOOP;
		PERFORM state._proxy_rescale_step('timers_paused');
		FOR i IN 0 .. cardinality(p.parts) - 1 LOOP
			path := format('%s/%s-%s-part%s', rtrim(snapshot_dir, '/'), cluster, stamp, i);
			EXECUTE format('SELECT %I._snapshot_part($1, $2)', p.schema) INTO status USING i, path;
			IF status IS DISTINCT FROM 'completed' THEN
				RAISE EXCEPTION 'the snapshot of part % of cluster "%" ended %', i, cluster, coalesce(status, 'with no status')
					USING ERRCODE = 'object_not_in_prerequisite_state';
			END IF;
			paths := paths || path;
			PERFORM state._proxy_rescale_step('part_snapshot');
		END LOOP;
		-- Before anything changes on a server: what is changing, durably.
		journal := jsonb_build_object('old_version', p.version, 'old_parts', to_jsonb(p.parts),
			'new_parts', to_jsonb(parts), 'paths', to_jsonb(paths), 'touched', '[]'::jsonb,
			'switched', false);
		PERFORM state._proxy_journal_write(cluster, journal::text);
		BEGIN
			PERFORM state._proxy_rescale_step('journal_written');
			FOR i IN 0 .. cardinality(parts) - 1 LOOP
				-- The servers a restore may have reached: only those are put back.
				journal := jsonb_set(journal, '{touched}', (journal -> 'touched') || to_jsonb(parts[i + 1]));
				PERFORM state._proxy_journal_write(cluster, journal::text);
				EXECUTE format('SELECT %I._restore_at($1, $2, $3, $4)::bigint', p.schema)
					INTO status USING parts[i + 1], paths, cardinality(parts)::text, i::text;
				total := total + status::bigint;
				PERFORM state._proxy_rescale_step('part_restored');
			END LOOP;
			PERFORM state._proxy_switch(cluster, p.parts, parts);
			PERFORM state._proxy_rescale_step('switched');
			-- The point of no return: from here the new parts stay, and
			-- repair_proxy finishes the switch if this transaction does not.
			PERFORM state._proxy_journal_write(cluster, jsonb_set(journal, '{switched}', 'true')::text);
		EXCEPTION WHEN OTHERS OR query_canceled THEN
			-- Not switched durably (unless the mark was written and then its
			-- write failed): the proxy keeps its old parts, so put them back.
			IF NOT coalesce((state._proxy_journal_read(cluster)::jsonb ->> 'switched')::boolean, false) THEN
				IF state._proxy_put_back(cluster, p.schema, p.parts, paths,
						ARRAY(SELECT jsonb_array_elements_text(journal -> 'touched'))) THEN
					PERFORM state._proxy_journal_remove(cluster, false);
					PERFORM state._proxy_rescale_step('journal_removed');
				END IF;
			END IF;
			RAISE;
		END;
		-- The journal goes when the switch commits (not if a rollback to a
		-- savepoint undoes it).
		PERFORM state._proxy_journal_remove(cluster, true);
		PERFORM state._proxy_rescale_step('switch_durable');
		-- The rescale stands: a server whose timers cannot be resumed now
		-- resumes them when this session ends.
		FOREACH server IN ARRAY paused LOOP
			BEGIN
				EXECUTE format('SELECT %I._pause_timers_at($1, false)', p.schema) USING server;
			EXCEPTION WHEN OTHERS THEN
				RAISE WARNING 'could not resume the timers of server "%" of cluster "%": %', server, cluster, SQLERRM
					USING HINT = 'They resume when this session ends.';
			END;
		END LOOP;
		paused := '{}';
		PERFORM state._proxy_rescale_step('timers_resumed');
	EXCEPTION WHEN OTHERS OR query_canceled THEN
		FOREACH server IN ARRAY paused LOOP
			BEGIN
				EXECUTE format('SELECT %I._pause_timers_at($1, false)', p.schema) USING server;
			EXCEPTION WHEN OTHERS THEN
				RAISE WARNING 'could not resume the timers of server "%" of cluster "%": %', server, cluster, SQLERRM
					USING HINT = 'They resume when this session ends.';
			END;
		END LOOP;
		RAISE;
	END;
	RETURN total;
END
$fn$;
REVOKE ALL ON FUNCTION state.rescale_proxy(text, text[], text) FROM PUBLIC;

-- Removes a proxy: its schema with its functions, and its cluster (a
-- rescale of it that was interrupted put right first).
CREATE OR REPLACE FUNCTION state.drop_proxy(cluster text)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	s name;
BEGIN
	PERFORM 1 FROM state.proxies p WHERE p.cluster = drop_proxy.cluster FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'cluster "%" has no proxy in this database', cluster
			USING ERRCODE = 'undefined_object';
	END IF;
	PERFORM state.repair_proxy(cluster);
	DELETE FROM state.proxies p WHERE p.cluster = drop_proxy.cluster RETURNING p.schema INTO s;
	EXECUTE format('DROP SCHEMA %I CASCADE', s);
	EXECUTE format('DROP SERVER %I CASCADE', cluster);
END
$fn$;
REVOKE ALL ON FUNCTION state.drop_proxy(text) FROM PUBLIC;

-- Proxy rescale journals: a journal written in a transaction that had
-- switched the proxy (a rescale after the repair it ran first) is put
-- right after that transaction's abort too; a damaged journal is
-- data_corrupted, and a superuser can discard one
-- (state.repair_proxy(cluster, discard => true)).
-- Puts right a rescale of the cluster that failed half done or whose
-- session died (its journal, state._proxy_journal_read, is left): if it
-- had not switched durably, its old parts are restored from its snapshots
-- on the servers its restores reached ('undone'); if it had, the proxy is
-- switched to the new parts in this transaction ('finished').  A journal
-- of a version above the proxy's was written in a transaction that had
-- switched the proxy (an earlier rescale, or a repair that finished one)
-- and did not commit: its old parts hold the keys once it is undone, so
-- the proxy is switched to them.  NULL when there was nothing to put
-- right.  Until then the cluster's proxy calls refuse (55000).  A journal
-- that is damaged, or that cannot be put right, is an error
-- (data_corrupted); with discard a superuser removes it unread, leaving
-- the proxy on the parts it has ('discarded', with a WARNING of what it
-- said).
CREATE FUNCTION state.repair_proxy(cluster text, discard boolean DEFAULT false)
RETURNS text LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	p state.proxies;
	j jsonb;
	old text[];
	new text[];
	paths text[];
	touched text[];
	server text;
	paused text[] := '{}';
	file text;
	unreadable text;
	discard_hint text;
BEGIN
	IF discard AND NOT coalesce((SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = current_user), false) THEN
		RAISE EXCEPTION 'permission denied to discard the rescale journal of cluster "%"', cluster
			USING ERRCODE = 'insufficient_privilege', DETAIL = 'Only a superuser may discard a rescale journal.';
	END IF;
	SELECT * INTO p FROM state.proxies x WHERE x.cluster = repair_proxy.cluster FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'cluster "%" has no proxy in this database', cluster
			USING ERRCODE = 'undefined_object', HINT = 'Make one with state.create_proxy.';
	END IF;
	-- A rescale running now has ended (it held the row): its journal is
	-- what it left.
	PERFORM state.pause_proxy(cluster);
	file := format('pg_state_backend/proxy_rescale/%s_%s',
		(SELECT d.oid FROM pg_database d WHERE d.datname = current_database()), cluster);
	discard_hint := format('Check that the parts the proxy names (state.proxies) hold every key of the cluster once, '
		'restoring them from the rescale''s snapshots if not; then remove the journal with '
		'state.repair_proxy(%L, discard => true) as a superuser.', cluster);
	BEGIN
		j := state._proxy_journal_read(cluster)::jsonb;
		IF j IS NOT NULL AND NOT (jsonb_typeof(j) = 'object'
				AND jsonb_typeof(j -> 'switched') = 'boolean'
				AND jsonb_typeof(j -> 'old_version') = 'number' AND (j ->> 'old_version') ~ '^[0-9]{1,9}$'
				AND jsonb_path_exists(j, '$.old_parts[0]') AND jsonb_path_exists(j, '$.new_parts[0]')
				AND NOT EXISTS (SELECT 1 FROM unnest(ARRAY['old_parts', 'new_parts', 'paths', 'touched']) k
					WHERE jsonb_typeof(j -> k) IS DISTINCT FROM 'array'
					   OR jsonb_path_exists(j -> k, '$[*] ? (@.type() != "string")'))) THEN
			RAISE EXCEPTION 'it is not a rescale journal of this version' USING ERRCODE = 'data_corrupted';
		END IF;
	EXCEPTION WHEN OTHERS THEN
		IF discard THEN
			unreadable := SQLERRM;
		ELSIF SQLSTATE = 'XX001' OR SQLSTATE LIKE '22%' THEN
			RAISE EXCEPTION 'the rescale journal of cluster "%" is damaged', cluster
				USING ERRCODE = 'data_corrupted',
					DETAIL = format('File "%s" of the data directory could not be read as a rescale journal: %s.', file, SQLERRM),
					HINT = discard_hint;
		ELSE
			RAISE;
		END IF;
	END;
	IF discard THEN
		IF j IS NULL AND unreadable IS NULL THEN
			RETURN NULL;
		END IF;
		RAISE WARNING 'the rescale journal of cluster "%" is discarded', cluster
			USING DETAIL = CASE WHEN unreadable IS NOT NULL
					THEN format('File "%s" could not be read (%s).', file, unreadable)
					ELSE format('File "%s" said: %s.', file, j::text) END,
				HINT = 'The proxy stays on the parts state.proxies names: check that they hold every key of the '
					'cluster once, restoring them from the rescale''s snapshots if not, before its next call or rescale.';
		PERFORM state._proxy_journal_remove(cluster, false);
		RETURN 'discarded';
	END IF;
	IF j IS NULL THEN
		RETURN NULL;
	END IF;
	old := ARRAY(SELECT jsonb_array_elements_text(j -> 'old_parts'));
	new := ARRAY(SELECT jsonb_array_elements_text(j -> 'new_parts'));
	paths := ARRAY(SELECT jsonb_array_elements_text(j -> 'paths'));
	touched := ARRAY(SELECT jsonb_array_elements_text(j -> 'touched'));
	IF (j ->> 'switched')::boolean THEN
		-- Its point of no return was passed: the new parts hold the keys.
		IF p.version <= (j ->> 'old_version')::int THEN
			PERFORM state._proxy_switch(cluster, p.parts, new);
			PERFORM state._proxy_rescale_step('switched');
		END IF;
		PERFORM state._proxy_journal_remove(cluster, true);
		RETURN 'finished';
	END IF;
	IF p.version > (j ->> 'old_version')::int
			OR (p.version = (j ->> 'old_version')::int AND p.parts IS DISTINCT FROM old) THEN
		RAISE EXCEPTION 'the rescale journal of cluster "%" does not match its proxy', cluster
			USING ERRCODE = 'data_corrupted',
				DETAIL = format('The journal (file "%s" of the data directory) is of version %s, parts %s; the proxy is of version %s, parts %s.',
					file, j ->> 'old_version', array_to_string(old, ', '), p.version, array_to_string(p.parts, ', ')),
				HINT = discard_hint;
	END IF;
	BEGIN
		-- As the rescale did: no timer fires on a server while its part is
		-- put back (a server no restore reached is left alone).
		FOR server IN SELECT DISTINCT s FROM unnest(old) s WHERE s = ANY (touched) LOOP
			EXECUTE format('SELECT %I._pause_timers_at($1, true)', p.schema) USING server;
			paused := paused || server;
		END LOOP;
		IF NOT state._proxy_put_back(cluster, p.schema, old, paths, touched) THEN
			RAISE EXCEPTION 'could not undo the interrupted rescale of cluster "%"', cluster
				USING ERRCODE = 'object_not_in_prerequisite_state',
					HINT = 'See the warnings above; once those servers are back, call state.repair_proxy again.';
		END IF;
		FOREACH server IN ARRAY paused LOOP
			EXECUTE format('SELECT %I._pause_timers_at($1, false)', p.schema) USING server;
		END LOOP;
	EXCEPTION WHEN OTHERS OR query_canceled THEN
		FOREACH server IN ARRAY paused LOOP
			BEGIN
				EXECUTE format('SELECT %I._pause_timers_at($1, false)', p.schema) USING server;
			EXCEPTION WHEN OTHERS THEN
				RAISE WARNING 'could not resume the timers of server "%" of cluster "%": %', server, cluster, SQLERRM
					USING HINT = 'They resume when this session ends.';
			END;
		END LOOP;
		RAISE;
	END;
	IF p.version < (j ->> 'old_version')::int THEN
		-- The switch to the old parts that its transaction made was undone
		-- with it: made again, the journal goes with its commit.
		PERFORM state._proxy_switch(cluster, p.parts, old);
		PERFORM state._proxy_rescale_step('switched');
		PERFORM state._proxy_journal_remove(cluster, true);
	ELSE
		PERFORM state._proxy_journal_remove(cluster, false);
		PERFORM state._proxy_rescale_step('journal_removed');
	END IF;
	RETURN 'undone';
END
$fn$;
REVOKE ALL ON FUNCTION state.repair_proxy(text, boolean) FROM PUBLIC;

-- A timer's key, as every other function's key, takes an untyped literal
-- as text (anyelement could not resolve one: 42804).
DROP FUNCTION state.timer_register(text, anyelement, timestamptz);
CREATE FUNCTION state.timer_register(name text, key anycompatible, at timestamptz)
RETURNS void AS 'MODULE_PATHNAME', 'state_timer_register' LANGUAGE C CALLED ON NULL INPUT;
DROP FUNCTION state.timer_delete(text, anyelement, timestamptz);
CREATE FUNCTION state.timer_delete(name text, key anycompatible, at timestamptz)
RETURNS boolean AS 'MODULE_PATHNAME', 'state_timer_delete' LANGUAGE C CALLED ON NULL INPUT;

-- Watermarks from the data, late functions and emit tables: create_state
-- takes "out_of_orderness", "idle_timeout", "late" and "emit_table".
DROP FUNCTION state.create_state(text, text, regtype, regtype, text, regtype, text, interval,
	boolean, text, text, regprocedure, boolean, regprocedure, text, text, interval, interval,
	interval, text, interval, regprocedure);
CREATE FUNCTION state.create_state(
	name text,
	kind text,
	key_type regtype DEFAULT 'text',
	value_type regtype DEFAULT 'jsonb',
	backend text DEFAULT NULL,
	map_key_type regtype DEFAULT 'text',
	reducer text DEFAULT NULL,
	ttl interval DEFAULT NULL,
	logged boolean DEFAULT false,
	ttl_update text DEFAULT 'on_create_and_write',
	ttl_visibility text DEFAULT 'never_return_expired',
	aggregate regprocedure DEFAULT NULL,
	transactional boolean DEFAULT false,
	handler regprocedure DEFAULT NULL,
	time_domain text DEFAULT NULL,
	assigner text DEFAULT NULL,
	size interval DEFAULT NULL,
	slide interval DEFAULT NULL,
	gap interval DEFAULT NULL,
	collect text DEFAULT NULL,
	allowed_lateness interval DEFAULT NULL,
	emit regprocedure DEFAULT NULL,
	out_of_orderness interval DEFAULT NULL,
	idle_timeout interval DEFAULT NULL,
	late regprocedure DEFAULT NULL,
	emit_table regclass DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'state_create_state' LANGUAGE C CALLED ON NULL INPUT;

-- A trigger function that folds the rows an INSERT adds to a table into a
-- keyed state, in the inserting transaction: state.feed(state_name,
-- key_column [, time_column] [, value_column | map_key_column,
-- value_column]), as an AFTER INSERT statement trigger with REFERENCING NEW
-- TABLE, or an AFTER or BEFORE INSERT row trigger.  It checks the state as
-- the function that writes its kind does, as the user whose INSERT fired it.
CREATE FUNCTION state.feed()
RETURNS trigger AS 'MODULE_PATHNAME', 'state_feed' LANGUAGE C;

-- Change a state online, all or nothing: its name, key, value and map key
-- types (by an expression over key, value and map_key, or the types'
-- assignment casts), TTL, backend, logging and transactions.  Returns the
-- entries it holds.  Owner or superuser.
CREATE FUNCTION state.alter_state(name text,
	rename_to text DEFAULT NULL,
	key_type regtype DEFAULT NULL,
	key_using text DEFAULT NULL,
	value_type regtype DEFAULT NULL,
	value_using text DEFAULT NULL,
	ttl interval DEFAULT NULL,
	backend text DEFAULT NULL,
	logged boolean DEFAULT NULL,
	transactional boolean DEFAULT NULL,
	map_key_type regtype DEFAULT NULL,
	map_key_using text DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'state_alter_state' LANGUAGE C CALLED ON NULL INPUT;

-- state.states shows each state's version (alter_state counts it).
DROP VIEW state.states;
DROP FUNCTION state._states();
CREATE FUNCTION state._states(
	OUT name text, OUT kind text, OUT backend text,
	OUT key_type regtype, OUT value_type regtype, OUT map_key_type regtype,
	OUT reducer text, OUT ttl interval, OUT owner regrole,
	OUT entries bigint, OUT bytes bigint, OUT logged boolean,
	OUT ttl_update text, OUT ttl_visibility text, OUT key_groups int4range,
	OUT aggregate regprocedure, OUT transactional boolean, OUT version integer)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'state_states' LANGUAGE C STRICT;
CREATE VIEW state.states WITH (security_barrier) AS SELECT * FROM state._states();
GRANT SELECT ON state.states TO PUBLIC;

-- A proxy has alter_state too.
CREATE OR REPLACE FUNCTION state._proxy_functions()
RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
	SELECT ARRAY['value_get', 'value_set', 'reduce', 'aggregate', 'clear', 'key_group',
		'list_add', 'list_add_all', 'list_get', 'list_length', 'list_update',
		'map_put', 'map_put_all', 'map_get', 'map_remove', 'map_contains', 'map_entries',
		'map_size', 'map_is_empty', 'window_add', 'window_get', 'timer_register', 'timer_delete',
		'keys', 'entries', 'truncate', 'windows', 'timers', 'create_state', 'drop_state',
		'alter_state', 'grant_access', 'revoke_access', 'advance_watermark']
$$;
