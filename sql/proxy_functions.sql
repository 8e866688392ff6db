--
-- A proxy (state.create_proxy) has the state functions named by
-- state._proxy_functions().  Every other function of the extension is
-- named below with why a proxy has none of it, so that a new function is
-- put in one list or the other: this test fails until it is.
--
CREATE TEMP TABLE not_proxied (name name PRIMARY KEY, why text NOT NULL);
INSERT INTO not_proxied VALUES
	-- The proxy's own administration, on the proxy's server.
	('create_proxy', 'the proxy''s administration'),
	('alter_proxy', 'the proxy''s administration'),
	('drop_proxy', 'the proxy''s administration'),
	('rescale_proxy', 'the proxy''s administration'),
	('repair_proxy', 'the proxy''s administration'),
	('pause_proxy', 'the proxy''s administration'),
	-- A server's files: each part takes its own, rescale_proxy drives them.
	('snapshot', 'a server''s files'),
	('wait_snapshot', 'a server''s files'),
	('cancel_snapshot', 'a server''s files'),
	('restore', 'a server''s files'),
	('snapshot_states', 'a server''s files'),
	('snapshot_entries', 'a server''s files'),
	('compact', 'a server''s files'),
	-- Operator states are each server's own (a rescale splits or copies them).
	('operator_add', 'operator state: per server'),
	('operator_add_all', 'operator state: per server'),
	('operator_get', 'operator state: per server'),
	('operator_update', 'operator state: per server'),
	('broadcast_put', 'operator state: per server'),
	('broadcast_get', 'operator state: per server'),
	('broadcast_remove', 'operator state: per server'),
	('broadcast_entries', 'operator state: per server'),
	-- The same answer on every server: the proxy's own copy serves.
	('key_group_range', 'computed, the same everywhere'),
	('part_for', 'computed, the same everywhere'),
	-- One server's figures and event-time clock.
	('reset_stats', 'a server''s figures'),
	('watermark', 'each part''s own event-time clock'),
	-- A trigger on a table of one server: it feeds that server's states.
	('feed', 'a trigger function: feeds the states of its table''s server');

-- Functions in neither list (internal ones, named _..., never have a proxy).
SELECT DISTINCT p.proname AS "neither proxied nor said why"
  FROM pg_proc p
 WHERE p.pronamespace = 'state'::regnamespace
   AND p.proname !~ '^_'
   AND p.proname <> ALL (state._proxy_functions())
   AND p.proname NOT IN (SELECT name FROM not_proxied)
 ORDER BY 1;

-- Names in a list that are no function of the extension, or in both.
SELECT n AS "listed but no such function"
  FROM unnest(state._proxy_functions() || ARRAY(SELECT name::text FROM not_proxied)) n
 WHERE NOT EXISTS (SELECT 1 FROM pg_proc p
                    WHERE p.pronamespace = 'state'::regnamespace AND p.proname = n)
 ORDER BY 1;
SELECT name AS "both proxied and not" FROM not_proxied
 WHERE name = ANY (state._proxy_functions()) ORDER BY 1;
