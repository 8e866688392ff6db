#!/usr/bin/env bash
# scripts/demo.sh: install state_backend, start a local PostgreSQL 15 server
# that preloads it, and run a short SQL demo.
#
#   scripts/demo.sh          set up, start (or reuse) the server, run the demo
#   scripts/demo.sh stop     stop the demo server
#
# Run as root or as a user with sudo.  The server runs as the `postgres` OS
# user, listens only on a Unix socket in its directory, and keeps running
# after the script ends.  Environment:
#   PGPORT                   port number of the socket (default 5433)
#   STATE_BACKEND_DEMO_DIR   server directory (default /var/tmp/state_backend_demo)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PGBIN=/usr/lib/postgresql/15/bin
DIR=${STATE_BACKEND_DEMO_DIR:-/var/tmp/state_backend_demo}
PORT=${PGPORT:-5433}
DATA=$DIR/data
LOG=$DIR/server.log

# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"

# How a user of this machine runs psql as postgres, for the closing message.
if [ "$(id -un)" = postgres ]; then
	PFX=""
elif [ "$(id -u)" -ne 0 ] || command -v sudo >/dev/null 2>&1; then
	PFX="sudo -u postgres "
else
	PFX="runuser -u postgres -- "
fi

running() { as_pg "$PGBIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }

if [ "${1:-}" = stop ]; then
	if as_pg test -f "$DATA/PG_VERSION" && running; then
		as_pg "$PGBIN/pg_ctl" -D "$DATA" -m fast -w stop
	else
		log "no demo server running in $DATA"
	fi
	exit 0
fi
[ $# -eq 0 ] || die "usage: scripts/demo.sh [stop]"

"$ROOT/scripts/setup.sh"

getent passwd postgres >/dev/null || die "no postgres OS user (is postgresql-15 installed?)"
LIB=$("$PGBIN/pg_config" --pkglibdir)/state_backend.so
[ -f "$LIB" ] || die "$LIB is not installed"

# The server directory: owned by postgres, mode 0700.  The socket lives here,
# the data directory and the log below it.
if [ ! -d "$DIR" ]; then
	as_root install -d -o postgres -g postgres -m 0700 "$DIR"
fi
[ "$(stat -c %U "$DIR")" = postgres ] || die "$DIR exists and is not owned by postgres"
# The server runs as postgres: every directory above DIR must let it through.
as_pg test -w "$DIR" ||
	die "the postgres user cannot reach $DIR: a directory above it is closed to it (mode 0700?); choose STATE_BACKEND_DEMO_DIR where it can, or open the parents (chmod o+x)"

if ! as_pg test -f "$DATA/PG_VERSION"; then
	log "creating a server in $DATA"
	as_pg "$PGBIN/initdb" -D "$DATA" -U postgres -E UTF8 --locale=C.UTF-8 \
		--auth-local=peer --auth-host=scram-sha-256 --no-instructions >/dev/null
	as_pg tee -a "$DATA/postgresql.conf" >/dev/null <<EOF

# state_backend demo
port = $PORT
listen_addresses = ''
unix_socket_directories = '$DIR'
shared_preload_libraries = 'state_backend'
state_backend.checkpoint_dir = '$DIR/checkpoints'
state_backend.checkpoint_interval = '60s'
state_backend.checkpoints_retained = 2
EOF
fi

start() {
	log "starting the server (port $PORT, log $LOG)"
	if ! as_pg "$PGBIN/pg_ctl" -D "$DATA" -l "$LOG" -o "-p $PORT" -w -t 60 start >/dev/null; then
		as_pg tail -n 30 "$LOG" >&2 || true
		die "the server did not start; see $LOG"
	fi
	sha256sum "$LIB" | as_pg tee "$DIR/loaded_library.sha256" >/dev/null
}

if running; then
	PORT=$(as_pg sed -n 4p "$DATA/postmaster.pid")
	if ! sha256sum "$LIB" | as_pg cmp -s - "$DIR/loaded_library.sha256"; then
		log "the installed library changed: restarting the server"
		as_pg "$PGBIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
		start
	else
		log "reusing the server already running in $DATA (port $PORT)"
	fi
else
	start
fi

log "running the demo"
as_pg "$PGBIN/psql" -X -q -e -v ON_ERROR_STOP=1 -P footer=off \
	-h "$DIR" -p "$PORT" -d postgres -f - <<'SQL'
\set ECHO none
SET client_min_messages = warning;
-- a demo server of an earlier release is updated to this one; one made by a
-- development build between releases (1.0 by name, not by its SQL) starts afresh
SELECT EXISTS (SELECT FROM pg_extension e, pg_proc p
                WHERE e.extname = 'state_backend' AND e.extversion = '1.0'
                  AND p.proname = 'create_state' AND p.pronamespace = e.extnamespace
                  AND 'logged' = ANY (p.proargnames)) AS stale \gset
\if :stale
DROP EXTENSION state_backend;
\endif
CREATE EXTENSION IF NOT EXISTS state_backend;
ALTER EXTENSION state_backend UPDATE;
-- start from a clean slate, so that the demo can run again
DO $$ BEGIN
  PERFORM state.drop_state(n, if_exists => true)
     FROM unnest(ARRAY['clicks', 'latency', 'jitter', 'profile', 'events', 'cart', 'seen',
                       'balance', 'dedup', 'offsets', 'paid']) AS n;
END $$;
-- one snapshot runs at a time: the demo's waits for a periodic checkpoint
-- that may be running (the server takes one a minute)
CREATE FUNCTION pg_temp.snapshot_when_free() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  LOOP
    BEGIN
      RETURN state.snapshot();
    EXCEPTION WHEN object_in_use THEN
      PERFORM state.wait_snapshot(id) FROM state.snapshots WHERE status = 'running';
    END;
  END LOOP;
END $$;
RESET client_min_messages;
\set ECHO queries

\echo
\echo '== ReducingState: a click counter per user (reducer sum)'
SELECT state.create_state('clicks', 'reducing', value_type => 'bigint', reducer => 'sum');
SELECT max(state.reduce('clicks', 'alice', 1)) AS alice FROM generate_series(1, 3);
SELECT state.reduce('clicks', 'bob', 5) AS bob;
SELECT u AS "user", state.value_get('clicks', u, 0::bigint) AS clicks
  FROM unnest(ARRAY['alice', 'bob', 'carol']) AS u;
\echo '-- not transactional, like nextval(): ROLLBACK does not undo a call'
BEGIN;
SELECT state.reduce('clicks', 'bob', 100) AS bob;
ROLLBACK;
SELECT state.value_get('clicks', 'bob', 0::bigint) AS bob;
\echo '-- unless created with transactional => true: then it commits with the transaction'
SELECT state.create_state('paid', 'reducing', value_type => 'bigint', reducer => 'sum',
                          transactional => true);
BEGIN;
SELECT state.reduce('paid', 'bob', 100) AS bob_inside;
ROLLBACK;
SELECT state.value_get('paid', 'bob', 0::bigint) AS bob_after_rollback;

\echo
\echo '== AggregatingState: a running average and standard deviation per endpoint'
SELECT state.create_state('latency', 'aggregating', value_type => 'float8', aggregate => 'avg(float8)');
SELECT state.create_state('jitter', 'aggregating', value_type => 'float8', aggregate => 'stddev(float8)');
SELECT count(state.aggregate('latency', e, ms)), count(state.aggregate('jitter', e, ms))
  FROM (VALUES ('checkout', 12.5), ('checkout', 7.5), ('checkout', 10.0), ('search', 3.0)) v(e, ms);
SELECT e AS endpoint, state.value_get('latency', e, 0::float8) AS avg_ms,
       round(state.value_get('jitter', e, 0::numeric), 2) AS stddev_ms
  FROM unnest(ARRAY['checkout', 'search']) AS e;

\echo
\echo '== ValueState: jsonb values under integer keys'
SELECT state.create_state('profile', 'value', key_type => 'int', value_type => 'jsonb');
SELECT state.value_set('profile', 42, '{"name": "ada", "plan": "pro"}');
SELECT state.value_get('profile', 42, NULL::jsonb) ->> 'name' AS name,
       state.value_get('profile', 7, '{}'::jsonb) AS absent;
\echo '-- keys are typed: a boolean key is refused'
\set ON_ERROR_STOP 0
SELECT state.value_get('profile', true, NULL::jsonb);
\set ON_ERROR_STOP 1

\echo
\echo '== ListState: events per user'
SELECT state.create_state('events', 'list', value_type => 'text');
SELECT state.list_add('events', 'alice', 'login');
SELECT state.list_add_all('events', 'alice', ARRAY['search', 'checkout']);
SELECT state.list_get('events', 'alice', '{}'::text[]) AS events,
       state.list_length('events', 'alice') AS n;

\echo
\echo '== MapState: a cart per user (item -> quantity)'
SELECT state.create_state('cart', 'map', map_key_type => 'text', value_type => 'int');
SELECT state.map_put('cart', 'alice', 'apple', 3);
SELECT state.map_put_all('cart', 'alice', ARRAY['pear', 'plum'], ARRAY[1, 2]);
SELECT * FROM state.map_entries('cart', 'alice', ''::text, 0) ORDER BY map_key;
SELECT state.map_get('cart', 'alice', 'apple', 0) AS apples,
       state.map_contains('cart', 'alice', 'kiwi') AS has_kiwi,
       state.map_size('cart', 'alice') AS items;

\echo
\echo '== rocksdb: a dedup set per user, on disk, durable without snapshots'
SELECT state.create_state('seen', 'map', key_type => 'bigint', map_key_type => 'text',
                          value_type => 'bigint', backend => 'rocksdb');
SELECT count(state.map_put('seen', u, 'https://example.org/' || p, p))
  FROM generate_series(1, 100) AS u, generate_series(1, 100) AS p;
SELECT state.map_contains('seen', 7, 'https://example.org/42') AS seen_before,
       state.map_contains('seen', 7, 'https://example.org/420') AS seen_never,
       state.map_size('seen', 7) AS urls;

\echo
\echo '== a logged state: its changes go to WAL, so a crash loses nothing acknowledged'
SELECT state.create_state('balance', 'reducing', key_type => 'int', value_type => 'numeric',
                          reducer => 'sum', logged => true);
SELECT state.reduce('balance', 42, 19.99) AS first, state.reduce('balance', 42, 5.01) AS total;
\echo '-- the replication slot that keeps the WAL recovery replays from the newest checkpoint'
SELECT slot_name, slot_type, restart_lsn IS NOT NULL AS keeps_wal
  FROM pg_replication_slots WHERE slot_name = 'state_backend';

\echo
\echo '== a TTL: a dedup set whose event ids expire (2 seconds here; 10 minutes in docs/operations.md)'
SELECT state.create_state('dedup', 'map', map_key_type => 'text', value_type => 'boolean',
                          ttl => '2 seconds');
SELECT state.map_put('dedup', 'web', 'event-1', true);
SELECT state.map_contains('dedup', 'web', 'event-1') AS duplicate;
SELECT pg_sleep(2.2);
SELECT state.map_contains('dedup', 'web', 'event-1') AS duplicate_after_2s;

\echo
\echo '== operator state: a list with no key, shared out in order when the state is split'
SELECT state.create_state('offsets', 'operator_list', value_type => 'bigint');
SELECT state.operator_add_all('offsets', ARRAY[100, 200, 300]::bigint[]);
SELECT state.operator_get('offsets', '{}'::bigint[]) AS offsets,
       state.key_group_range(3, 1) AS part_1_of_3_holds,
       state.part_for('clicks', 'alice', 3) AS alice_goes_to_part;

\echo
\echo '== every state of this database'
SELECT name, kind, backend, key_type, value_type, map_key_type, reducer, ttl, owner, entries, bytes, logged
  FROM state.states ORDER BY name;

\echo
\echo '== a snapshot (a checkpoint under state_backend.checkpoint_dir), then restore'
\echo '-- (state.snapshot(), once a periodic checkpoint that may be running is done)'
SELECT pg_temp.snapshot_when_free() AS snapshot_id \gset
SELECT state.reduce('clicks', 'alice', 1000) AS alice_after_snapshot;
SELECT state.wait_snapshot(:snapshot_id) AS status;
SELECT id, status, states, entries, bytes, incremental FROM state.snapshots WHERE id = :snapshot_id;
SELECT state.restore(path) AS entries_restored FROM state.snapshots WHERE id = :snapshot_id;
SELECT state.value_get('clicks', 'alice', 0::bigint) AS alice_restored;
SQL

STOP="$0 stop"
[ "$DIR" = /var/tmp/state_backend_demo ] || STOP="STATE_BACKEND_DEMO_DIR=$DIR $STOP"
cat <<EOF

The demo server is running (data $DATA, log $LOG).
Connect:
  ${PFX}psql -h $DIR -p $PORT
Stop:
  $STOP
  (or: ${PFX}$PGBIN/pg_ctl -D $DATA stop)
EOF
