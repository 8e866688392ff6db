#!/usr/bin/env bash
# scripts/scale-demo.sh: the "Scaling out" path of docs/operations.md, on three local
# servers, checking its own result.
#
#   1. server 0 holds keyed and operator state, and takes a snapshot;
#   2. the snapshot is restored onto servers 0, 1 and 2 as parts 0, 1 and 2
#      of 3 (parallelism => 3, part => i);
#   3. a proxy database (database "proxy" on server 0, with PL/Proxy) sends
#      each call to the server that holds its key (state.create_proxy);
#   4. the cluster is rescaled live, 3 -> 2 -> 3 (state.rescale_proxy),
#      while pgbench keeps calling through the proxy;
#   5. each server takes a snapshot;
#   6. the three snapshots merge back onto server 0.
#
# The servers share one signing key file (state_backend.signing_key_file),
# as the servers of one deployment do.
#
# It checks that every key is on exactly one server, that no call failed
# and no acknowledged write was lost across the rescales, and that the
# merge equals the original, and exits non-zero otherwise.  Run as root or
# as a user with sudo; the servers run as the postgres OS user, on Unix
# sockets in STATE_BACKEND_SCALE_DIR (default /var/tmp/state_backend_scale),
# ports 5441 to 5443, and are stopped at the end.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PGBIN=/usr/lib/postgresql/15/bin
DIR=${STATE_BACKEND_SCALE_DIR:-/var/tmp/state_backend_scale}
KEYS=${STATE_BACKEND_SCALE_KEYS:-30000}
PORTS=(5441 5442 5443)

# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"

"$ROOT/scripts/setup.sh"

# sql I SQL: runs SQL on server I, unaligned, tuples only.
sql() { as_pg "$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$DIR" -p "${PORTS[$1]}" -d postgres -c "$2"; }
# sqlp SQL: runs SQL in the proxy database (on server 0).
sqlp() { as_pg "$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$DIR" -p "${PORTS[0]}" -d proxy -c "$1"; }
# The parts of a cluster of the servers given, as an SQL array.
parts() {
	local i out=
	for i in "$@"; do out+="${out:+, }'host=$DIR port=${PORTS[$i]} dbname=postgres'"; done
	printf 'ARRAY[%s]' "$out"
}

stop_all() {
	for i in 0 1 2; do
		as_pg "$PGBIN/pg_ctl" -D "$DIR/server$i" -m fast -w stop >/dev/null 2>&1 || true
	done
}
trap stop_all EXIT

stop_all
as_root rm -rf "$DIR"
as_root install -d -o postgres -g postgres -m 0700 "$DIR" "$DIR/snapshots"
for i in 0 1 2; do
	as_pg "$PGBIN/initdb" -D "$DIR/server$i" -U postgres --auth-local=peer --auth-host=scram-sha-256 --no-instructions >/dev/null
	as_pg tee -a "$DIR/server$i/postgresql.conf" >/dev/null <<EOF
port = ${PORTS[$i]}
listen_addresses = ''
unix_socket_directories = '$DIR'
shared_preload_libraries = 'state_backend'
# One deployment: the servers share the key they sign snapshots with, so
# that each trusts the others' native snapshots (docs/operations.md).
state_backend.signing_key_file = '$DIR/deployment.key'
EOF
	as_pg "$PGBIN/pg_ctl" -D "$DIR/server$i" -l "$DIR/server$i.log" -w start >/dev/null
	sql "$i" "CREATE EXTENSION state_backend"
done

log "1. server 0: $KEYS keys in a value, a map and a list state (rocksdb and memory), and operator state"
sql 0 "
SELECT state.create_state('balance', 'value', 'int', 'bigint', backend => 'rocksdb');
SELECT state.create_state('cart', 'map', 'int', 'int', map_key_type => 'text');
SELECT state.create_state('events', 'list', 'int', 'text');
SELECT state.create_state('deposits', 'reducing', 'int', 'bigint', reducer => 'sum');
SELECT state.create_state('offsets', 'operator_list', value_type => 'bigint');
SELECT state.create_state('rules', 'broadcast', value_type => 'text', map_key_type => 'text');
SELECT count(state.value_set('balance', i, i * 10::bigint)) FROM generate_series(1, $KEYS) i;
SELECT count(state.map_put('cart', i, 'item' || i % 5, i % 7)) FROM generate_series(1, $KEYS) i;
SELECT count(state.list_add('events', i, 'e' || i)) FROM generate_series(1, $KEYS) i;
SELECT state.operator_add_all('offsets', ARRAY(SELECT generate_series(101, 110)::bigint));
SELECT state.broadcast_put('rules', 'limit', '100');" >/dev/null

# contents I: each state's key count and sum, and the operator state
contents() {
	sql "$1" "SELECT concat_ws(' ',
	  (SELECT count(*) || '/' || coalesce(sum(state.value_get('balance', k, 0::bigint)), 0) FROM state.keys('balance', NULL::int) k),
	  (SELECT count(*) || '/' || coalesce(sum(state.map_get('cart', k, 'item' || k % 5, 0)), 0) FROM state.keys('cart', NULL::int) k),
	  (SELECT count(*) || '/' || coalesce(sum(state.list_length('events', k)), 0) FROM state.keys('events', NULL::int) k),
	  state.operator_get('offsets', '{}'::bigint[]),
	  state.broadcast_get('rules', 'limit', ''))"
}
original=$(contents 0)
log "   contents: $original"
sql 0 "SELECT state.wait_snapshot(state.snapshot('$DIR/snapshots/full'))" >/dev/null

log "2. restore onto three servers, parallelism 3"
for i in 0 1 2; do
	sql "$i" "SELECT state.restore('$DIR/snapshots/full', parallelism => 3, part => $i)" >/dev/null
	log "   server $i: key groups $(sql "$i" "SELECT key_groups FROM state.states WHERE name = 'balance'"), $(contents "$i")"
done

log "3. a proxy database routes every call: PL/Proxy, state.create_proxy"
sql 0 "CREATE DATABASE proxy" >/dev/null
sqlp "CREATE EXTENSION plproxy; CREATE EXTENSION state_backend"
sqlp "SELECT state.create_proxy('demo', $(parts 0 1 2))" >/dev/null
log "   a deposit of 5 to keys 1 to 20 through the proxy, each sent to its server"
sqlp "SELECT count(state_proxy.value_set('balance', k, state_proxy.value_get('balance', k, 0::bigint) + 5))
      FROM generate_series(1, 20) k" >/dev/null
if sql 1 "SELECT state.value_get('balance', (SELECT min(k) FROM generate_series(1, 100) k WHERE state.part_for('balance', k, 3) = 0), 0::bigint)" >/dev/null 2>"$DIR/wrong.txt"; then
	die "a call on the wrong server did not fail"
fi
log "   the wrong server refuses: $(grep -o 'ERROR:.*' "$DIR/wrong.txt")"

# placed N I...: every key of the servers given is on the one part_for names
placed() {
	local n=$1 total=0 i j=0 misplaced
	shift
	for i in "$@"; do
		misplaced=$(sql "$i" "SELECT (SELECT count(*) FROM state.keys('balance', NULL::int) k WHERE state.part_for('balance', k, $n) <> $j)
		  + (SELECT count(*) FROM state.keys('cart', NULL::int) k WHERE state.part_for('cart', k, $n) <> $j)
		  + (SELECT count(*) FROM state.keys('events', NULL::int) k WHERE state.part_for('events', k, $n) <> $j)")
		[ "$misplaced" = 0 ] || die "server $i holds $misplaced keys of other parts"
		total=$((total + $(sql "$i" "SELECT count(*) FROM state.keys('balance', NULL::int)")))
		j=$((j + 1))
	done
	[ "$total" = "$KEYS" ] || die "the $n servers hold $total keys, not $KEYS"
	[ "$(sqlp "SELECT count(*) FROM state_proxy.keys('balance', NULL::int)")" = "$KEYS" ] ||
		die "the proxy does not list the $KEYS keys"
	log "   every key is on exactly one server ($total keys), and the proxy lists each once"
}
placed 3 0 1 2

log "4. rescale live, 3 -> 2 -> 3 (state.rescale_proxy), while pgbench deposits through the proxy"
printf '\\set k random(1, %d)\nSELECT state_proxy.reduce('"'"'deposits'"'"', :k, 1::bigint);\n' "$KEYS" |
	as_pg tee "$DIR/deposit.pgbench" >/dev/null
as_pg "$PGBIN/pgbench" -n -M prepared -c 2 -j 2 -T 12 -h "$DIR" -p "${PORTS[0]}" \
	-f "$DIR/deposit.pgbench" proxy >"$DIR/pgbench.txt" 2>&1 &
bench=$!
sleep 3
log "   3 -> 2: $(sqlp "SELECT state.rescale_proxy('demo', $(parts 0 1), '$DIR/snapshots')") entries restored"
placed 2 0 1
sleep 3
log "   2 -> 3: $(sqlp "SELECT state.rescale_proxy('demo', $(parts 0 1 2), '$DIR/snapshots')") entries restored"
placed 3 0 1 2
wait "$bench" || { cat "$DIR/pgbench.txt" >&2; die "a call through the proxy failed during the rescales"; }
calls=$(sed -nE 's|^number of transactions actually processed: ([0-9]+).*|\1|p' "$DIR/pgbench.txt")
deposited=$(sqlp "SELECT coalesce(sum(value), 0) FROM state_proxy.entries('deposits', NULL::int, NULL::bigint)")
[ -n "$calls" ] && [ "$calls" -gt 0 ] && [ "$deposited" = "$calls" ] ||
	die "pgbench made ${calls:-no} calls, the deposits add up to $deposited"
log "   $calls calls through the proxy across both rescales, none failed; the deposits add up to $deposited"

log "5. snapshot the three servers"
for i in 0 1 2; do
	sql "$i" "SELECT state.wait_snapshot(state.snapshot('$DIR/snapshots/part$i'))" >/dev/null
done

log "6. merge the three snapshots onto server 0"
sql 0 "SELECT state.restore(ARRAY['$DIR/snapshots/part0', '$DIR/snapshots/part1', '$DIR/snapshots/part2'])" >/dev/null
merged=$(contents 0)
# the deposits: 20 keys of 5 each
read -r b rest <<<"$original"
expected="${b%%/*}/$(( ${b#*/} + 100 )) $rest"
log "   contents: $merged"
[ "$merged" = "$expected" ] || die "the merge holds \"$merged\", not \"$expected\" (the original plus the deposits)"
log "the merge equals the original plus the 20 deposits: scale-out and scale-in check out"
