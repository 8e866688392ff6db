#!/usr/bin/env bash
# bench/lib/bench.sh: the benchmark harness behind bench/run and bench/smoke.
#
#   bench/lib/bench.sh run     full run: prints a table, writes bench/results/
#   bench/lib/bench.sh smoke   every case, briefly, on a small data set
#
# It starts a private server (Unix socket only, in a temporary directory) as
# an unprivileged user: `postgres` when invoked as root, else the invoking
# user.  It loads the same data into each state backend that exists and into
# an unlogged and a logged table, runs every case with pgbench, and hands
# the raw figures (a TSV file) to bench/lib/report.pl, which computes the
# ratios, checks the targets and writes the table.  Every server it starts is
# stopped when it exits.  Settings (environment) are listed in
# bench/README.md.
set -euo pipefail

MODE=${1:-run}
case "$MODE" in
	run | smoke) ;;
	*) echo "usage: bench/lib/bench.sh run|smoke" >&2; exit 2 ;;
esac
shift || true
[ $# -eq 0 ] || { echo "bench/$MODE takes no arguments (settings are environment variables, see bench/README.md)" >&2; exit 2; }

LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH=$(dirname "$LIB")
ROOT=$(dirname "$BENCH")
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
[ -x "$PG_CONFIG" ] || PG_CONFIG=$(command -v pg_config || true)
[ -n "$PG_CONFIG" ] && [ -x "$PG_CONFIG" ] || { echo "bench: pg_config not found (set PG_CONFIG)" >&2; exit 1; }
PGBIN=$("$PG_CONFIG" --bindir)

# ------------------------------------------------------------ settings
if [ "$MODE" = smoke ]; then
	SECS=${BENCH_SECONDS:-1}
	# A per-statement case runs this many transactions per client, not
	# SECS seconds (most of the smoke's time was those seconds); setting
	# BENCH_SECONDS runs them for seconds again.
	# The warm-up does not apply to those.
	SMOKE_TXNS=
	[ -z "${BENCH_SECONDS:-}" ] && SMOKE_TXNS=${BENCH_SMOKE_TRANSACTIONS:-200}
	WARMUP_1=${BENCH_WARMUP:-0}
	WARMUP_N=${BENCH_WARMUP:-0}
	ROUNDS=${BENCH_ROUNDS:-1}
	NKEYS=${BENCH_KEYS:-10000}
	NBULK=${BENCH_BULK_ROWS:-10000}
	CLIENTS=${BENCH_CLIENTS:-8}
	BULK_REPS=${BENCH_BULK_REPS:-1}
	MEMORY_LIMIT=${BENCH_MEMORY_LIMIT:-256MB}
	SHARED_BUFFERS=${BENCH_SHARED_BUFFERS:-128MB}
	SNAP_SIZES=${BENCH_SNAPSHOT_KEYS:-10000}
	SNAP_REPS=${BENCH_SNAPSHOT_REPS:-1}
	LAT_SECS=${BENCH_LATENCY_SECONDS:-1}
	LMDB_KEYS=${BENCH_LMDB_KEYS:-10000}
else
	SMOKE_TXNS=
	SECS=${BENCH_SECONDS:-3}
	WARMUP_1=${BENCH_WARMUP:-2}		# 1 client
	WARMUP_N=${BENCH_WARMUP:-5}		# more clients: each process warms up
	ROUNDS=${BENCH_ROUNDS:-1}
	NKEYS=${BENCH_KEYS:-1000000}
	NBULK=${BENCH_BULK_ROWS:-1000000}
	CLIENTS=${BENCH_CLIENTS:-8 1}
	BULK_REPS=${BENCH_BULK_REPS:-2}
	MEMORY_LIMIT=${BENCH_MEMORY_LIMIT:-3GB}
	SHARED_BUFFERS=${BENCH_SHARED_BUFFERS:-1GB}
	SNAP_SIZES=${BENCH_SNAPSHOT_KEYS:-1000000 10000000}
	SNAP_REPS=${BENCH_SNAPSHOT_REPS:-2}
	LAT_SECS=${BENCH_LATENCY_SECONDS:-10}
	LMDB_KEYS=${BENCH_LMDB_KEYS:-2000000}
fi
# How long a per-statement case runs, as the logs say it.
if [ -n "${SMOKE_TXNS:-}" ]; then
	RUN_LENGTH="$SMOKE_TXNS transactions per client"
else
	RUN_LENGTH="${SECS}s after a warm-up of ${WARMUP_N}s (${WARMUP_1}s with 1 client)"
fi
HOT=${BENCH_HOT_KEYS:-10}
MAPKEYS=8						# map keys per key (preloaded, all present)
PROTOCOL=${BENCH_PROTOCOL:-prepared}
PORT=${BENCH_PORT:-5477}
THREADS_MAX=2					# pgbench -j for multi-client runs
ROCKSDB_CLIENTS=${BENCH_ROCKSDB_CLIENTS:-8}	# pgbench -c of the rocksdb and lmdb groups
# Only these operations run unless BENCH_OPS lists fewer (for quick looks).
ALL_OPS="value_get value_set reduce list_add map_put map_get"
OPS=${BENCH_OPS:-$ALL_OPS}
# Groups of cases: BENCH_CASES lists the ones to run.  The preload (and the
# memory figure taken during it) comes with "statement" and "bulk"; the
# "rocksdb" group loads its own states (lib/rocksdb.sh).
ALL_CASES="statement bulk rocksdb snapshot ttl rescale aggregating stats transactional timers windows nexmark proxy standby logged lmdb bigstate evolve"
CASES=${BENCH_CASES:-$ALL_CASES}
DD_MIN_MB=256					# least size of the disk's write-speed probe
# The bigstate group (lib/bigstate.sh): entries per kind and client counts.
# Its full sizes take most of an hour, so a run of every group (BENCH_CASES
# unset) measures two sizes at 8 clients; naming it in BENCH_CASES gives the
# three sizes at 1, 8 and 16 clients.
if [ "$MODE" = smoke ]; then
	BS_SIZES=${BENCH_BIGSTATE_SIZES:-2000 20000}
	BS_CLIENTS=${BENCH_BIGSTATE_CLIENTS:-2}
elif [ -n "${BENCH_CASES:-}" ]; then
	BS_SIZES=${BENCH_BIGSTATE_SIZES:-200000 2000000 10000000}
	BS_CLIENTS=${BENCH_BIGSTATE_CLIENTS:-1 8 16}
else
	BS_SIZES=${BENCH_BIGSTATE_SIZES:-200000 2000000}
	BS_CLIENTS=${BENCH_BIGSTATE_CLIENTS:-8}
fi
# Which parts of it run: the per-statement cases, the snapshots, or both.
BS_PARTS=${BENCH_BIGSTATE_PARTS:-statements snapshots}

for op in $OPS; do
	case " $ALL_OPS " in *" $op "*) ;; *) echo "bench: unknown operation in BENCH_OPS: $op" >&2; exit 2 ;; esac
done
for g in $CASES; do
	case " $ALL_CASES " in *" $g "*) ;; *) echo "bench: unknown group in BENCH_CASES: $g (groups: $ALL_CASES)" >&2; exit 2 ;; esac
done
has_case() { case " $CASES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
PRELOAD=0
if has_case statement || has_case bulk; then PRELOAD=1; fi
for n in $SNAP_SIZES; do
	case "$n" in '' | *[!0-9]*) echo "bench: BENCH_SNAPSHOT_KEYS must list entry counts" >&2; exit 2 ;; esac
done
case "$SNAP_REPS" in '' | *[!0-9]* | 0) echo "bench: BENCH_SNAPSHOT_REPS must be a positive count" >&2; exit 2 ;; esac
case "${SMOKE_TXNS:-1}" in '' | *[!0-9]* | 0*) echo "bench: BENCH_SMOKE_TRANSACTIONS must be a positive count" >&2; exit 2 ;; esac
case "$LAT_SECS" in '' | *[!0-9]* | 0) echo "bench: BENCH_LATENCY_SECONDS must be a positive count of seconds" >&2; exit 2 ;; esac
case "${BENCH_SNAPSHOT_10M:-1}" in 0 | 1) ;; *) echo "bench: BENCH_SNAPSHOT_10M must be 0 or 1" >&2; exit 2 ;; esac
# The evolve group (lib/evolve.sh): entries of its value state, one size
# after the other; writers' clients; 0 skips the writers.  A run of every
# group (BENCH_CASES unset) measures the first size only.
if [ "$MODE" = smoke ]; then
	EV_SIZES=${BENCH_EVOLVE_SIZES:-20000}
	EV_CLIENTS=${BENCH_EVOLVE_CLIENTS:-4}
elif [ -n "${BENCH_CASES:-}" ]; then
	EV_SIZES=${BENCH_EVOLVE_SIZES:-1000000 10000000}
	EV_CLIENTS=${BENCH_EVOLVE_CLIENTS:-8}
else
	EV_SIZES=${BENCH_EVOLVE_SIZES:-1000000}
	EV_CLIENTS=${BENCH_EVOLVE_CLIENTS:-8}
fi
EV_WRITERS=${BENCH_EVOLVE_WRITERS:-1}
for n in $EV_SIZES; do
	case "$n" in '' | *[!0-9]* | 0*) echo "bench: BENCH_EVOLVE_SIZES must list entry counts" >&2; exit 2 ;; esac
done
case "$EV_CLIENTS" in '' | *[!0-9]* | 0*) echo "bench: BENCH_EVOLVE_CLIENTS must be a client count" >&2; exit 2 ;; esac
case "$EV_WRITERS" in 0 | 1) ;; *) echo "bench: BENCH_EVOLVE_WRITERS must be 0 or 1" >&2; exit 2 ;; esac
for n in $BS_SIZES; do
	case "$n" in '' | *[!0-9]* | 0*) echo "bench: BENCH_BIGSTATE_SIZES must list entry counts" >&2; exit 2 ;; esac
	[ $((n % 4)) -eq 0 ] || { echo "bench: BENCH_BIGSTATE_SIZES: $n is not a multiple of 4 (maps of 4 entries, lists of 4 elements)" >&2; exit 2; }
done
for c in $BS_CLIENTS; do
	case "$c" in '' | *[!0-9]* | 0) echo "bench: BENCH_BIGSTATE_CLIENTS must list client counts" >&2; exit 2 ;; esac
done
for c in $CLIENTS $ROCKSDB_CLIENTS; do
	case "$c" in '' | *[!0-9]* | 0) echo "bench: BENCH_CLIENTS and BENCH_ROCKSDB_CLIENTS must list client counts" >&2; exit 2 ;; esac
done
case "$PROTOCOL" in simple | extended | prepared) ;; *)
	echo "bench: BENCH_PROTOCOL must be simple, extended or prepared" >&2; exit 2 ;;
esac

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }

# ------------------------------------------------------------ who runs what
RUN_PATH="$PGBIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGPASSWORD PGOPTIONS PGSERVICE PGDATA
if [ "$(id -u)" -eq 0 ]; then
	RUNNER=postgres
	getent passwd postgres >/dev/null || die "no postgres OS user: run scripts/setup.sh first"
	RUNNER_HOME=$(getent passwd postgres | cut -d: -f6)
	as_pg() { runuser -u postgres -- env HOME="$RUNNER_HOME" PATH="$RUN_PATH" LC_ALL=C "$@"; }
else
	RUNNER=$(id -un)
	as_pg() { env PATH="$RUN_PATH" LC_ALL=C "$@"; }
fi

# ------------------------------------------------------------ install
# bench/run installs the current tree first (scripts/setup.sh), as
# scripts/test.sh does, when it can: as root or with sudo.  BENCH_SETUP=0
# benchmarks whatever is installed; bench/smoke never installs.
SETUP=${BENCH_SETUP:-auto}
[ "$MODE" = smoke ] && SETUP=0
if [ "$SETUP" = auto ]; then
	if [ "$(id -u)" -eq 0 ] || command -v sudo >/dev/null 2>&1; then SETUP=1; else SETUP=0; fi
fi
if [ "$SETUP" = 1 ]; then
	[ -x "$ROOT/scripts/setup.sh" ] || die "scripts/setup.sh not found"
	log "installing the current tree (scripts/setup.sh; BENCH_SETUP=0 skips this)"
	"$ROOT/scripts/setup.sh" >&2
fi
PKGLIB=$("$PG_CONFIG" --pkglibdir)
SHAREDIR=$("$PG_CONFIG" --sharedir)
[ -f "$PKGLIB/state_backend.so" ] && [ -f "$SHAREDIR/extension/state_backend.control" ] ||
	die "state_backend is not installed in $PKGLIB: run scripts/setup.sh first"
command -v pgbench >/dev/null 2>&1 || [ -x "$PGBIN/pgbench" ] || die "pgbench not found"

# ------------------------------------------------------------ scratch space
WORK=$(mktemp -d "${TMPDIR:-/tmp}/state_backend_bench.XXXXXX")
chmod 0755 "$WORK"
mkdir "$WORK/scripts" "$WORK/out"
[ "$(id -u)" -eq 0 ] && chown -R postgres: "$WORK"
cd "$WORK"
DATA=$WORK/data
RAW=$WORK/raw.tsv
: >"$RAW"
[ "$(id -u)" -eq 0 ] && chown postgres: "$RAW"
FAILED=0

stop_server() {
	[ -f "$DATA/postmaster.pid" ] || return 0
	as_pg "$PGBIN/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >/dev/null 2>&1 ||
		as_pg "$PGBIN/pg_ctl" -D "$DATA" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
}
# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
	local rc=$?
	stop_server
	if [ "${BENCH_KEEP:-0}" = 1 ]; then
		log "kept $WORK"
	else
		rm -rf "$WORK"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# raw KIND FIELD...: one line of the raw results (tab separated).
raw() { (IFS=$'\t'; printf '%s\n' "$*") >>"$RAW"; }
meta() { raw meta "$1" "$2"; }
note() { raw note "$*"; log "note: $*"; }

# ------------------------------------------------------------ the no-op function
# bench/noop.c, built here with the server's headers: the floor is a real C
# function call, not a built-in that happens to be cheap.
CC=${CC:-$("$PG_CONFIG" --cc 2>/dev/null || echo cc)}
# shellcheck disable=SC2086  # CC and the flags are word lists
$CC -O2 -fPIC -shared $("$PG_CONFIG" --cflags_sl) -I"$("$PG_CONFIG" --includedir-server)" \
	-o "$WORK/noop.so" "$BENCH/noop.c" || die "could not build bench/noop.c"
chmod 0755 "$WORK/noop.so"

# ------------------------------------------------------------ server
log "starting a server in $WORK as $RUNNER (port $PORT, socket only)"
as_pg "$PGBIN/initdb" -D "$DATA" -U postgres -A trust -E UTF8 --locale=C.UTF-8 \
	--no-sync --no-instructions >"$WORK/initdb.log" 2>&1 || { cat "$WORK/initdb.log" >&2; die "initdb failed"; }
SERVER_CONF="port = $PORT
listen_addresses = ''
unix_socket_directories = '$WORK'
max_connections = 40
shared_preload_libraries = 'state_backend'
state_backend.memory_limit = '$MEMORY_LIMIT'
shared_buffers = '$SHARED_BUFFERS'
dynamic_shared_memory_type = posix
jit = off
max_wal_size = '8GB'
checkpoint_timeout = '1h'
log_min_messages = warning
log_checkpoints = off"
# The rocksdb group's checkpoints go under checkpoint_dir (SST files shared
# between them under <dir>/shared); RocksDB's memory settings are the
# defaults, written out for the record; rocksdb_sync stays off (default).
if has_case rocksdb || has_case logged || has_case standby; then
	SERVER_CONF="$SERVER_CONF
state_backend.checkpoint_dir = '$WORK/checkpoints'
state_backend.rocksdb_cache_size = '64MB'
state_backend.rocksdb_write_buffer_size = '64MB'"
fi
# The lmdb, bigstate and evolve groups: the provider of contrib/lmdb, when
# it is installed.
LMDB=0
if { has_case lmdb || has_case bigstate || has_case evolve; } && [ -f "$("$PG_CONFIG" --pkglibdir)/state_backend_lmdb.so" ]; then
	LMDB=1
	SERVER_CONF="$SERVER_CONF
shared_preload_libraries = 'state_backend,state_backend_lmdb'
state_backend_lmdb.map_size = '8GB'"
fi
# BENCH_SERVER_CONF: more lines for postgresql.conf (a setting to compare).
if [ -n "${BENCH_SERVER_CONF:-}" ]; then
	SERVER_CONF="$SERVER_CONF
$BENCH_SERVER_CONF"
fi
as_pg tee -a "$DATA/postgresql.conf" >/dev/null <<<"
# bench
$SERVER_CONF"
as_pg "$PGBIN/pg_ctl" -D "$DATA" -l "$WORK/server.log" -w -t 120 start >/dev/null ||
	{ tail -n 30 "$WORK/server.log" >&2; die "the server did not start"; }

PSQL=("$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$WORK" -p "$PORT" -U postgres)
# sql DB: run SQL from stdin in database DB, print the rows unaligned.
sql() { as_pg timeout -k 10 3600 "${PSQL[@]}" -d "$1"; }

# script_tps OUT SCRIPT CLIENTS [PGOPTIONS [PGBENCH_OPTION]]: pgbench (-M
# PROTOCOL, -T WARMUP_N + SECS, progress every second) of a script file;
# prints the mean tps of the seconds after the warm-up, or nothing when
# pgbench failed.  pgbench's output goes to OUT.
script_tps() {
	local out=$1 f=$2 clients=$3 opts=${4:-} extra=${5:---no-vacuum} rc=0 tps
	as_pg env PGOPTIONS="$opts" timeout -k 10 $((WARMUP_N + SECS + 300)) \
		"$PGBIN/pgbench" -n -M "$PROTOCOL" -h "$WORK" -p "$PORT" -U postgres "$extra" \
		-T $((WARMUP_N + SECS)) -P 1 -c "$clients" -j "$THREADS_MAX" -f "$f" bench >"$out" 2>&1 || rc=$?
	tps=$(awk -v from="$WARMUP_N" '/^progress: / { t = $2 + 0; if (t > from) { n++; s += $4 } } END { if (n) printf "%.1f", s / n }' "$out")
	[ -z "$tps" ] && tps=$(awk '/^tps = / { print $3; exit }' "$out")
	[ "$rc" -eq 0 ] && printf '%s' "$tps"
}

# stmt_tps OUT KEYS CLIENTS STMT [PGOPTIONS]: script_tps of one statement
# on random keys :k of 1..KEYS.
stmt_tps() {
	local out=$1 keys=$2 clients=$3 stmt=$4 opts=${5:-} f
	f="${out%.txt}.pgbench"
	printf '\\set k random(1, %d)\n%s\n' "$keys" "$stmt" >"$f"
	script_tps "$out" "$f" "$clients" "$opts"
}
sql1() { sql bench <<<"$1"; }

# snap_pacing VALUE|RESET: the worker's snapshot pacing, applied at once.
snap_pacing() {
	local set="SET state_backend.snapshot_cpu_percent = $1"
	[ "$1" = RESET ] && set="RESET state_backend.snapshot_cpu_percent"
	sql bench >/dev/null <<EOF
ALTER SYSTEM $set;
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
EOF
}

# checkpoint_now: a checkpoint, once no other snapshot runs.  Taken after
# the last logged state of a group is dropped, it drops the replication
# slot at once; else the state worker takes one by itself within seconds,
# and an explicit snapshot of a later case would meet it (55006).
checkpoint_now() {
	sql1 "DO \$\$
BEGIN
	FOR i IN 1 .. 600 LOOP
		BEGIN
			PERFORM state.wait_snapshot(state.snapshot());
			RETURN;
		EXCEPTION WHEN object_in_use THEN
			PERFORM pg_sleep(0.1);
		END;
	END LOOP;
	RAISE EXCEPTION 'no checkpoint could start in a minute';
END \$\$" >/dev/null
}

sql postgres <<<"CREATE DATABASE bench" >/dev/null
sql bench >/dev/null <<EOF
CREATE EXTENSION state_backend;
CREATE SCHEMA bench;
CREATE FUNCTION bench.noop(text, text) RETURNS void
	AS '$WORK/noop.so', 'bench_noop' LANGUAGE C;
-- probe_backend: 'ok' when a state can be created on backend b.
CREATE FUNCTION bench.probe_backend(b text) RETURNS text LANGUAGE plpgsql AS \$\$
BEGIN
	PERFORM state.create_state('bench_probe', 'value', backend => b);
	PERFORM state.drop_state('bench_probe');
	RETURN 'ok';
EXCEPTION WHEN feature_not_supported THEN
	RETURN 'feature_not_supported: ' || SQLERRM;
END \$\$;
EOF

# ------------------------------------------------------------ what exists
# Backends: every value of state_backend.backend (aliases are hidden there)
# on which a state can be created; feature_not_supported means "not yet".
# The statement and bulk groups measure the heap backends (and any other
# that appears); rocksdb has its own group, which measures a few operations
# beside the first heap backend (a rocksdb reduce is a round trip to the
# state worker: loading or bulk-reducing a million keys that way would take
# minutes).
BACKENDS=()
HEAP_BACKENDS=()
ROCKSDB=0
candidates=$(sql1 "SELECT b FROM unnest(coalesce((SELECT enumvals FROM pg_settings
	WHERE name = 'state_backend.backend'), '{memory,filesystem,rocksdb}')) b")
for b in $candidates; do
	r=$(sql1 "SELECT bench.probe_backend('$b')")
	if [ "$r" = ok ]; then
		case "$b" in
			memory | filesystem) BACKENDS+=("$b"); HEAP_BACKENDS+=("$b") ;;
			rocksdb) ROCKSDB=1 ;;
			*) BACKENDS+=("$b") ;;
		esac
	elif [ "$b" = rocksdb ] && ! has_case rocksdb; then
		:
	else
		note "backend $b skipped: creating a state fails with $r"
	fi
done
[ ${#BACKENDS[@]} -gt 0 ] || [ "$ROCKSDB" = 1 ] || die "no state backend accepts a state"
if [ ${#BACKENDS[@]} -eq 0 ] && { has_case statement || has_case bulk; }; then
	die "no heap state backend accepts a state (the statement and bulk groups need one)"
fi
SNAPSHOTS=0
if ! has_case snapshot; then
	:
elif [ ${#HEAP_BACKENDS[@]} -eq 0 ]; then
	note "snapshots skipped: no heap backend accepts a state"
elif [ "$(sql1 "SELECT count(*) FROM pg_proc WHERE pronamespace = 'state'::regnamespace AND proname = 'snapshot'")" -gt 0 ]; then
	SNAPSHOTS=1
else
	note "snapshots skipped: function state.snapshot does not exist in this build"
fi
meta backends "${BACKENDS[*]}"
meta heap_backends "${HEAP_BACKENDS[*]}"
has_case rocksdb && [ "$ROCKSDB" = 0 ] && note "rocksdb cases skipped: no rocksdb state can be created"

# ------------------------------------------------------------ metadata
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
meta date "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
meta host "$(uname -n)"
meta kernel "$(uname -srm)"
meta cpu "${cpu:-unknown}, $(nproc) CPUs"
meta memory "$(awk '/^MemTotal/ { printf "%.1f GB", $2 / 1048576 }' /proc/meminfo)"
meta os "$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-}")"
meta load_start "$(cut -d' ' -f1-3 /proc/loadavg)"
meta server "$(sql1 'SELECT version()')"
meta pgbench "$(as_pg pgbench --version 2>/dev/null || as_pg "$PGBIN/pgbench" --version)"
meta extension "state_backend $(sql1 "SELECT extversion FROM pg_extension WHERE extname = 'state_backend'")"
meta library "$PKGLIB/state_backend.so, sha256 $(sha256sum "$PKGLIB/state_backend.so" | cut -c1-16)"
if command -v git >/dev/null 2>&1 && git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
	rev=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo none)
	if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no -- src Makefile '*.sql' '*.control' 2>/dev/null)" ]; then
		rev="$rev (with uncommitted changes to the extension)"
	fi
	meta commit "$rev"
fi
envs=$(env | grep -E '^BENCH_' | sort | tr '\n' ' ' || true)
meta command "${envs}bench/$MODE"
meta mode "$MODE"
meta cases "$CASES"
meta seconds "$SECS"
meta warmup "$WARMUP_N s with several clients, $WARMUP_1 s with one"
[ -n "${SMOKE_TXNS:-}" ] && meta smoke_transactions "$SMOKE_TXNS"
meta rounds "$ROUNDS"
meta keys "$NKEYS"
meta hot "$HOT"
meta mapkeys "$MAPKEYS"
meta bulk_rows "$NBULK"
meta bulk_reps "$BULK_REPS"
meta clients "$CLIENTS"
meta protocol "$PROTOCOL"
meta runner "$RUNNER"
meta server_conf "$(tr '\n' ';' <<<"$SERVER_CONF" | sed 's/;/; /g')"

# ------------------------------------------------------------ data
# Same content in states and tables: key i ('1' .. 'N') holds i; list i
# holds {i}; map i holds map keys '1' .. '8', each with value i.  States
# and tables load in two sessions at once.
#
# Memory: bytes per entry of N (text key, bigint) entries.  The first heap
# backend's value state is loaded into the still empty shared area by one
# session, which reads its own /proc/self/smaps before and after: the
# shared-memory pages it touched while loading (Rss) are what the entries
# occupy, hash table slots and allocator rounding included; the area's new
# segments (Size) are what the server reserved for them.  Later loads share
# the area (and probe its table), so for them only the extension's own count
# (state.states.bytes) is reported.
mk_array="ARRAY[$(seq -s, 1 $MAPKEYS | sed "s/[0-9][0-9]*/'&'/g")]"
mk_json=$(seq 1 $MAPKEYS | sed "s/.*/'&', i/" | paste -sd, -)

load_states() {
	local b measured=""
	[ ${#HEAP_BACKENDS[@]} -gt 0 ] && measured=${HEAP_BACKENDS[0]}
	for b in "${BACKENDS[@]}"; do
		sql bench >/dev/null <<EOF
SELECT state.create_state('v_$b', 'value', key_type => 'text', value_type => 'bigint', backend => '$b');
SELECT state.create_state('r_$b', 'reducing', key_type => 'text', value_type => 'bigint', reducer => 'sum', backend => '$b');
SELECT state.create_state('l_$b', 'list', key_type => 'text', value_type => 'bigint', backend => '$b');
SELECT state.create_state('m_$b', 'map', key_type => 'text', map_key_type => 'text', value_type => 'bigint', backend => '$b');
SELECT state.create_state('vb_$b', 'value', key_type => 'text', value_type => 'bigint', backend => '$b');
SELECT state.create_state('rb_$b', 'reducing', key_type => 'text', value_type => 'bigint', reducer => 'sum', backend => '$b');
EOF
	done
	if [ -n "$measured" ]; then
		sql bench >/dev/null <<EOF
SELECT state.value_get('v_$measured', '0', 0::bigint);
\o $WORK/out/smaps.before
SELECT pg_read_file('/proc/self/smaps');
\o
SELECT count(state.value_set('v_$measured', i::text, i::bigint)) FROM generate_series(1, $NKEYS) i;
\o $WORK/out/smaps.after
SELECT pg_read_file('/proc/self/smaps');
\o
EOF
		read -r rss_kb size_kb < <(perl "$LIB/smaps_delta.pl" "$WORK/out/smaps.before" "$WORK/out/smaps.after")
		raw mem_area "$measured" "$NKEYS" "$((rss_kb * 1024))" "$((size_kb * 1024))"
	fi
	for b in "${BACKENDS[@]}"; do
		[ "$b" = "$measured" ] ||
			sql1 "SELECT count(state.value_set('v_$b', i::text, i::bigint)) FROM generate_series(1, $NKEYS) i" >/dev/null
		raw mem_state "$b" $(sql1 "SELECT entries, bytes FROM state.states WHERE name = 'v_$b'" | tr '|' ' ')
		sql bench >/dev/null <<EOF
SELECT count(state.reduce('r_$b', i::text, i::bigint)) FROM generate_series(1, $NKEYS) i;
SELECT count(state.list_add('l_$b', i::text, i::bigint)) FROM generate_series(1, $NKEYS) i;
SELECT count(state.map_put_all('m_$b', i::text, $mk_array, array_fill(i::bigint, ARRAY[$MAPKEYS])))
	FROM generate_series(1, $NKEYS) i;
EOF
	done
}

load_tables() {
	local p kind name
	for p in u l; do
		kind=$([ $p = u ] && echo UNLOGGED || true)
		name=$([ $p = u ] && echo unlogged || echo logged)
		sql bench >/dev/null <<EOF
CREATE $kind TABLE ${p}_kv (k text PRIMARY KEY, v bigint);
CREATE $kind TABLE ${p}_list (k text PRIMARY KEY, l bigint[]);
CREATE $kind TABLE ${p}_map (k text PRIMARY KEY, m jsonb);
CREATE $kind TABLE ${p}_bulk (k text PRIMARY KEY, v bigint);
CREATE $kind TABLE ${p}_bulkr (k text PRIMARY KEY, v bigint);
INSERT INTO ${p}_kv SELECT i::text, i FROM generate_series(1, $NKEYS) i;
VACUUM (ANALYZE) ${p}_kv;
EOF
		raw mem_table "$name" $(sql1 "SELECT count(*), pg_relation_size('${p}_kv'), pg_table_size('${p}_kv'), pg_indexes_size('${p}_kv') FROM ${p}_kv" | tr '|' ' ')
		sql bench >/dev/null <<EOF
INSERT INTO ${p}_list SELECT i::text, ARRAY[i::bigint] FROM generate_series(1, $NKEYS) i;
INSERT INTO ${p}_map SELECT i::text, jsonb_build_object($mk_json) FROM generate_series(1, $NKEYS) i;
VACUUM (ANALYZE) ${p}_list, ${p}_map, ${p}_bulk, ${p}_bulkr;
EOF
	done
}

if [ "$PRELOAD" = 1 ]; then
	log "loading $NKEYS keys into every state and table"
	t0=$(date +%s)
	load_states >"$WORK/out/load_states.log" 2>&1 &
	pid_states=$!
	load_tables >"$WORK/out/load_tables.log" 2>&1 &
	pid_tables=$!
	wait "$pid_states" || { cat "$WORK/out/load_states.log" >&2; wait "$pid_tables" || true; die "loading the states failed"; }
	wait "$pid_tables" || { cat "$WORK/out/load_tables.log" >&2; die "loading the tables failed"; }
	sql1 "CHECKPOINT" >/dev/null
	meta load_seconds "$(($(date +%s) - t0))"
	for b in "${BACKENDS[@]}"; do
		for s in v r l m; do
			raw state_size "${s}_$b" $(sql1 "SELECT entries, bytes FROM state.states WHERE name = '${s}_$b'" | tr '|' ' ')
		done
	done
	for t in u_kv u_list u_map l_kv l_list l_map; do
		raw table_size "$t" "$(sql1 "SELECT pg_total_relation_size('$t')")"
	done
fi

# ------------------------------------------------------------ per-statement cases
# script OP KEYS TARGET: the pgbench script of one case on stdout.  TARGET
# is a backend, "unlogged" or "logged"; OP "select1" and "noop" are floors.
# STATE_PREFIX (empty; the rocksdb group sets it) prefixes the states' names.
# SCRIPT_FN, when set (the bigstate group), names a function that writes
# the script instead.
STATE_PREFIX=""
SCRIPT_FN=""
script() {
	local op=$1 keys=$2 target=$3 n t s=$STATE_PREFIX
	if [ -n "$SCRIPT_FN" ]; then "$SCRIPT_FN" "$@"; return; fi
	n=$([ "$keys" = hot ] && echo "$HOT" || echo "$NKEYS")
	case "$op" in
		select1) echo "SELECT 1;"; return ;;
		noop) printf '\\set k random(1, %s)\n\\set v random(1, 1000000000)\nSELECT bench.noop(:k, :v);\n' "$NKEYS"; return ;;
	esac
	printf '\\set k random(1, %s)\n' "$n"
	case "$op" in value_set | list_add | map_put) echo '\set v random(1, 1000000000)' ;; esac
	case "$op" in map_put | map_get) echo "\\set mk random(1, $MAPKEYS)" ;; esac
	case "$target" in
		unlogged | logged)
			t=$([ "$target" = unlogged ] && echo u || echo l)
			case "$op" in
				value_get) echo "SELECT v FROM ${t}_kv WHERE k = :k;" ;;
				value_set) echo "INSERT INTO ${t}_kv (k, v) VALUES (:k, :v) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v;" ;;
				reduce) echo "UPDATE ${t}_kv SET v = v + 1 WHERE k = :k RETURNING v;" ;;
				list_add) echo "UPDATE ${t}_list SET l = l || CAST(:v AS bigint) WHERE k = :k;" ;;
				map_put) echo "UPDATE ${t}_map SET m = jsonb_set(m, ARRAY[CAST(:mk AS text)], to_jsonb(CAST(:v AS bigint))) WHERE k = :k;" ;;
				map_get) echo "SELECT CAST(m ->> CAST(:mk AS text) AS bigint) FROM ${t}_map WHERE k = :k;" ;;
			esac
			;;
		*)
			case "$op" in
				value_get) echo "SELECT state.value_get('${s}v_$target', :k, 0::bigint);" ;;
				value_set) echo "SELECT state.value_set('${s}v_$target', :k, :v);" ;;
				reduce) echo "SELECT state.reduce('${s}r_$target', :k, 1);" ;;
				list_add) echo "SELECT state.list_add('${s}l_$target', :k, :v);" ;;
				map_put) echo "SELECT state.map_put('${s}m_$target', :k, :mk, :v);" ;;
				map_get) echo "SELECT state.map_get('${s}m_$target', :k, :mk, 0::bigint);" ;;
			esac
			;;
	esac
}

# table_of OP TARGET: the table a table case works on.
table_of() {
	local t
	t=$([ "$2" = unlogged ] && echo u || echo l)
	case "$1" in
		list_add) echo "${t}_list" ;;
		map_put | map_get) echo "${t}_map" ;;
		*) echo "${t}_kv" ;;
	esac
}

# prepare OP KEYS TARGET: untimed set-up before a case.  A table that an
# earlier case wrote is vacuumed, so that each case starts from the same
# shape; the hot keys' lists are reset to one element, since an array append
# rewrites the whole array and gets slower as it grows (the state's list
# does not).
declare -A DIRTY=()
prepare() {
	local op=$1 keys=$2 target=$3 tbl
	case "$target" in
		unlogged | logged)
			tbl=$(table_of "$op" "$target")
			if [ "$op" = list_add ] && [ "$keys" = hot ]; then
				sql1 "UPDATE $tbl SET l = ARRAY[k::bigint] WHERE k = ANY (SELECT i::text FROM generate_series(1, $HOT) i)" >/dev/null
				DIRTY[$tbl]=1
			fi
			if [ -n "${DIRTY[$tbl]:-}" ]; then
				sql1 "VACUUM $tbl" >/dev/null
				unset "DIRTY[$tbl]"
			fi
			case "$op" in value_set | reduce | list_add | map_put) DIRTY[$tbl]=1 ;; esac
			;;
		*)
			if [ "$op" = list_add ] && [ "$keys" = hot ]; then
				sql1 "SELECT count(state.list_update('l_$target', i::text, ARRAY[i::bigint])) FROM generate_series(1, $HOT) i" >/dev/null
			fi
			;;
	esac
}

# after_case OP KEYS TARGET: a figure that explains a case (list lengths).
after_case() {
	local op=$1 keys=$2 target=$3
	[ "$op" = list_add ] && [ "$keys" = hot ] || return 0
	case "$target" in
		unlogged | logged)
			sql1 "SELECT round(avg(cardinality(l))) FROM $(table_of "$op" "$target") WHERE k = ANY (SELECT i::text FROM generate_series(1, $HOT) i)" ;;
		*)
			sql1 "SELECT round(avg(state.list_length('l_$target', i::text))) FROM generate_series(1, $HOT) i" ;;
	esac
}

# run_case OP KEYS TARGET CLIENTS ROUND: one pgbench run of WARMUP + SECS
# seconds, with a progress report every second (in smoke mode, of SMOKE_TXNS
# transactions per client, its figure the whole run's).  Every pgbench run starts new
# server processes, which map shared memory (shared buffers, the state area)
# page by page as they first touch it, so the first seconds of a run over
# a million keys are slower than the rest; the case's figure is the median
# of the per-second tps after the warm-up.  Records a "tps" line: op keys
# target clients round tps latency_ms transactions failed whole_run_tps extra.
# CASE_KIND names the kind of those lines ("tps"; the rocksdb group's are
# "rdb_tps", its scripts "rdb_script"), so that groups do not mix.
CASE_KIND=tps
CASE_SCRIPT_KIND=script
run_case() {
	local op=$1 keys=$2 target=$3 c=$4 tag=$5 j id f out rc tps lat txn nfail whole extra warmup length
	j=$((c < THREADS_MAX ? c : THREADS_MAX))
	warmup=$([ "$c" -gt 1 ] && echo "$WARMUP_N" || echo "$WARMUP_1")
	id="${STATE_PREFIX}${op}-${keys}-${target}"
	f="$WORK/scripts/$id.pgbench"
	[ -f "$f" ] || { script "$op" "$keys" "$target" >"$f"; raw "$CASE_SCRIPT_KIND" "$op" "$keys" "$target" "$(tr '\n' ' ' <"$f")"; }
	out="$WORK/out/$id-c$c-r$tag.txt"
	prepare "$op" "$keys" "$target"
	rc=0
	if [ -n "${SMOKE_TXNS:-}" ]; then
		length=(-t "$SMOKE_TXNS")
		warmup=0
	else
		length=(-T $((warmup + SECS)) -P 1)
	fi
	as_pg timeout -k 10 $((warmup + SECS + 300)) "$PGBIN/pgbench" -n -M "$PROTOCOL" -h "$WORK" -p "$PORT" -U postgres \
		"${length[@]}" -c "$c" -j "$j" -f "$f" bench >"$out" 2>&1 || rc=$?
	whole=$(awk '/^tps = / { print $3; exit }' "$out")
	if [ "$warmup" -gt 0 ]; then
		# progress: 4.0 s, 12345.6 tps, lat 0.648 ms stddev 0.120, 0 failed
		tps="" lat=""
		read -r tps lat < <(awk -v from="$warmup" -v to=$((warmup + SECS)) '
			function median(a, n,   i, j, t) {
				for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
				return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
			}
			/^progress: / { t = $2 + 0; if (t > from && t <= to + 0.5) { n++; tp[n] = $4 + 0; lt[n] = $7 + 0 } }
			END { if (n) printf "%.1f %.3f\n", median(tp, n), median(lt, n) }' "$out") || true
	else
		tps=$whole
		lat=$(awk '/^latency average = / { print $4; exit }' "$out")
	fi
	txn=$(awk -F': ' '/^number of transactions actually processed/ { split($2, a, "/"); print a[1] + 0; exit }' "$out")
	nfail=$(awk -F': ' '/^number of failed transactions/ { print $2 + 0; exit }' "$out")
	if [ "$rc" -ne 0 ] || [ -z "$tps" ] || [ "${txn:-0}" -eq 0 ] || [ "${nfail:-0}" -ne 0 ]; then
		printf 'bench: case %s, %s client(s) FAILED (pgbench exit %d):\n' "$id" "$c" "$rc" >&2
		grep -vE '^(pgbench \(|transaction type|scaling factor|query mode|number of (clients|threads)|maximum number|duration)' "$out" | head -n 20 >&2
		# A smoke run's case, run for BENCH_SECONDS, can end before a loaded
		# machine made one transaction: the case runs once more, and says so.
		if [ "$MODE" = smoke ] && [ -z "${RUN_CASE_AGAIN:-}" ]; then
			note "case $id, $c client(s) failed once (pgbench exit $rc, $txn transactions, ${nfail:-0} failed) and ran again"
			RUN_CASE_AGAIN=1 run_case "$@"
			return 0
		fi
		FAILED=$((FAILED + 1))
		raw "$CASE_KIND" "$op" "$keys" "$target" "$c" "$tag" ERR "" "" "" "" "pgbench exit $rc"
		return 0
	fi
	extra=$(after_case "$op" "$keys" "$target")
	raw "$CASE_KIND" "$op" "$keys" "$target" "$c" "$tag" "$tps" "$lat" "$txn" "${nfail:-0}" "$whole" "${extra:+hot list length at end: $extra}"
	printf '   %-9s %-6s %-10s c=%-2s round %s %10.0f tps\n' "$op" "$keys" "$target" "$c" "$tag" "$tps" >&2
}

# run_group PREFIX KIND "CLIENTS" "OP:KEYS ..." TARGET...: a group's
# per-statement cases on its states (PREFIX: their names' prefix; KIND: its
# raw lines' prefix, "" for the statement group's), ROUNDS rounds at each
# client count, between the floors at the start and the end of each round
# (how much the floor moved tells how steady the machine was).
run_group() {
	local prefix=$1 kind=$2 clients=$3 cases=$4 round c oc target
	shift 4
	STATE_PREFIX=$prefix
	CASE_KIND=${kind:+${kind}_}tps
	CASE_SCRIPT_KIND=${kind:+${kind}_}script
	for round in $(seq 1 "$ROUNDS"); do
		for c in $clients; do
			run_case select1 - floor "$c" "$round"
			run_case noop - floor "$c" "$round"
			for oc in $cases; do
				for target in "$@"; do
					run_case "${oc%%:*}" "${oc#*:}" "$target" "$c" "$round"
				done
			done
			run_case select1 - floor "$c" "$round-end"
			run_case noop - floor "$c" "$round-end"
		done
	done
	STATE_PREFIX=""
	CASE_KIND=tps
	CASE_SCRIPT_KIND=script
}

# Rounds: each round runs every case once, in the same order, so a burst of
# other work on the machine costs one round of many cases rather than every
# round of one case.  The report keeps each case's best round.
if has_case statement; then
	ncases=0
	for c in $CLIENTS; do
		for op in $OPS; do for keys in random hot; do
			ncases=$((ncases + ${#BACKENDS[@]} + 2))
		done; done
		ncases=$((ncases + 4))
	done
	log "per-statement cases: $ncases, $ROUNDS round(s) of pgbench runs of $RUN_LENGTH, -M $PROTOCOL"
	t0=$(date +%s)
	statement_cases=""
	for op in $OPS; do statement_cases+=" $op:random $op:hot"; done
	run_group "" "" "$CLIENTS" "$statement_cases" "${BACKENDS[@]}" unlogged logged
	meta statement_seconds "$(($(date +%s) - t0))"
fi

# ------------------------------------------------------------ bulk
# One statement each, timed by psql (\timing).  "new": into an empty state
# or table; "existing": the same keys again.  Repetitions go round every
# statement, as the rounds above do; the report keeps the fastest.
bulk_stmt() {
	local op=$1 target=$2 t
	case "$target" in
		unlogged | logged)
			t=$([ "$target" = unlogged ] && echo u || echo l)
			case "$op" in
				value_set) echo "INSERT INTO ${t}_bulk (k, v) SELECT i::text, i FROM generate_series(1, $NBULK) i ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v;" ;;
				reduce) echo "INSERT INTO ${t}_bulkr AS t (k, v) SELECT i::text, 1 FROM generate_series(1, $NBULK) i ON CONFLICT (k) DO UPDATE SET v = t.v + EXCLUDED.v;" ;;
			esac
			;;
		*)
			case "$op" in
				value_set) echo "SELECT count(state.value_set('vb_$target', i::text, i::bigint)) FROM generate_series(1, $NBULK) i;" ;;
				reduce) echo "SELECT count(state.reduce('rb_$target', i::text, 1::bigint)) FROM generate_series(1, $NBULK) i;" ;;
			esac
			;;
	esac
}
bulk_reset() {
	local op=$1 target=$2 t
	case "$target" in
		unlogged | logged)
			t=$([ "$target" = unlogged ] && echo u || echo l)
			[ "$op" = value_set ] && echo "TRUNCATE ${t}_bulk;" || echo "TRUNCATE ${t}_bulkr;"
			[ "$target" = unlogged ] || echo "CHECKPOINT;"
			;;
		*) [ "$op" = value_set ] && echo "SELECT state.truncate('vb_$target');" || echo "SELECT state.truncate('rb_$target');" ;;
	esac
}
if has_case bulk; then
	log "bulk statements: $NBULK rows, $BULK_REPS repetition(s)"
	for op in value_set reduce; do
		for target in "${BACKENDS[@]}" unlogged logged; do
			raw bulk_script "$op" "$target" "$(bulk_stmt "$op" "$target")"
		done
	done
	t0=$(date +%s)
	for rep in $(seq 1 "$BULK_REPS"); do
		for op in value_set reduce; do
			for target in "${BACKENDS[@]}" unlogged logged; do
				out="$WORK/out/bulk-$op-$target-$rep.txt"
				rc=0
				sql bench >"$out" 2>&1 <<EOF || rc=$?
$(bulk_reset "$op" "$target")
\timing on
\echo BULK new
$(bulk_stmt "$op" "$target")
\echo BULK existing
$(bulk_stmt "$op" "$target")
EOF
				if [ "$rc" -ne 0 ]; then
					FAILED=$((FAILED + 1))
					printf 'bench: bulk %s on %s FAILED:\n' "$op" "$target" >&2
					tail -n 10 "$out" >&2
					raw bulk "$op" "$target" new "$rep" ERR
					raw bulk "$op" "$target" existing "$rep" ERR
					continue
				fi
				awk -v op="$op" -v target="$target" -v rep="$rep" '
					/^BULK / { variant = $2; next }
					/^Time: / && variant != "" { printf "bulk\t%s\t%s\t%s\t%s\t%s\n", op, target, variant, rep, $2; variant = "" }
				' "$out" >>"$RAW"
				printf '   %-9s %-10s rep %s %s ms\n' "$op" "$target" "$rep" \
					"$(awk '/^Time: / { printf "%s%.0f", sep, $2; sep = " / " }' "$out")" >&2
			done
		done
	done
	meta bulk_seconds "$(($(date +%s) - t0))"
fi

# ------------------------------------------------------------ rocksdb
# bench/lib/rocksdb.sh: a few per-statement operations and a bulk
# value_set on rocksdb beside the first heap backend, SELECT 1 and the
# unlogged table; then a full and an incremental checkpoint.
if has_case rocksdb && [ "$ROCKSDB" = 1 ]; then
	# shellcheck source-path=SCRIPTDIR source=rocksdb.sh
	. "$LIB/rocksdb.sh"
fi

# ------------------------------------------------------------ snapshots
# bench/lib/snapshot.sh: snapshot and restore against COPY binary and the
# disk's write speed; writers' latency while snapshots run.
if [ "$SNAPSHOTS" = 1 ]; then
	# shellcheck source-path=SCRIPTDIR source=snapshot.sh
	. "$LIB/snapshot.sh"
fi

# ------------------------------------------------------------ state TTL
# bench/lib/ttl.sh: TTL states against states without, bytes per entry,
# the background cleanup's rate and its effect on writers.
if has_case ttl; then
	# shellcheck source-path=SCRIPTDIR source=ttl.sh
	. "$LIB/ttl.sh"
fi

# ------------------------------------------------------------ rescaling
# bench/lib/rescale.sh: a restore of one part of three, and a merge of three
# parts' snapshots, against the full restore.
if has_case rescale; then
	# shellcheck source-path=SCRIPTDIR source=rescale.sh
	. "$LIB/rescale.sh"
fi

# ------------------------------------------------------------ aggregating states
# bench/lib/aggregating.sh: aggregate() beside reduce() and a table UPDATE;
# entries() beside a table scan.
if has_case aggregating; then
	# shellcheck source-path=SCRIPTDIR source=aggregating.sh
	. "$LIB/aggregating.sh"
fi

# ------------------------------------------------------------ state.stats
# bench/lib/stats.sh: value_get with counting on and off.
if has_case stats; then
	# shellcheck source-path=SCRIPTDIR source=stats.sh
	. "$LIB/stats.sh"
fi

# ------------------------------------------------------------ transactional states
# bench/lib/transactional.sh: reduce on a transactional state beside the
# same state not transactional and an unlogged table's UPDATE.
if has_case transactional; then
	# shellcheck source-path=SCRIPTDIR source=transactional.sh
	. "$LIB/transactional.sh"
fi

# ------------------------------------------------------------ timers
# bench/lib/timers.sh: registration beside value_set, firing throughput,
# due-to-fired lag, memory per pending timer beside a table.
if has_case timers; then
	# shellcheck source-path=SCRIPTDIR source=timers.sh
	. "$LIB/timers.sh"
fi

# ------------------------------------------------------------ window states
# bench/lib/windows.sh: events into tumbling windows of a window state beside
# the same count in an unlogged table; sliding and session windows.
if has_case windows; then
	# shellcheck source-path=SCRIPTDIR source=windows.sh
	. "$LIB/windows.sh"
fi

# ------------------------------------------------------------ NEXMark
# bench/lib/nexmark.sh: NEXMark's q5, q7 and q11 through window states fed
# by state.feed beside the same results kept by PL/pgSQL triggers in
# tables; every result compared with batch SQL over the same bids.
if has_case nexmark; then
	# shellcheck source-path=SCRIPTDIR source=nexmark.sh
	. "$LIB/nexmark.sh"
fi

# ------------------------------------------------------------ proxies
# bench/lib/proxy.sh: calls through a proxy database to 2 parts beside the
# same calls made directly; the proxy's own CPU per call.
if has_case proxy; then
	# shellcheck source-path=SCRIPTDIR source=proxy.sh
	. "$LIB/proxy.sh"
fi

# ------------------------------------------------------------ hot standby
# bench/lib/standby.sh: reads on a hot standby beside the primary, its lag
# under writes, and the first call after a promotion.
if has_case standby; then
	# shellcheck source-path=SCRIPTDIR source=standby.sh
	. "$LIB/standby.sh"
fi

# ------------------------------------------------------------ logged states
# bench/lib/logged.sh: logged states against unlogged ones and a logged
# table; bulk WAL; replay after a crash (last: it crashes the server).
if has_case logged; then
	# shellcheck source-path=SCRIPTDIR source=logged.sh
	. "$LIB/logged.sh"
fi

# bench/lib/lmdb.sh: the lmdb backend (contrib/lmdb) beside memory and
# rocksdb: per statement, bulk load, snapshot and restore.
if has_case lmdb; then
	if [ "$LMDB" = 1 ] && [ "$ROCKSDB" = 1 ]; then
		# shellcheck source-path=SCRIPTDIR source=lmdb.sh
		. "$LIB/lmdb.sh"
	else
		note "lmdb cases skipped: state_backend_lmdb (contrib/lmdb) is not installed, or rocksdb is missing"
	fi
fi

# bench/lib/bigstate.sh: memory, lmdb and rocksdb beside an unlogged table
# at sizes up to 10M entries: reads and writes of value, map and list
# states, bulk load, snapshot and restore against dd.
if has_case bigstate; then
	# shellcheck source-path=SCRIPTDIR source=bigstate.sh
	. "$LIB/bigstate.sh"
fi

# bench/lib/evolve.sh: state.alter_state at 1M and 10M entries: a change of
# backend or value type beside the table's CREATE TABLE AS or ALTER COLUMN
# TYPE; writers' throughput and p99 during each change and without.
if has_case evolve; then
	# shellcheck source-path=SCRIPTDIR source=evolve.sh
	. "$LIB/evolve.sh"
fi

meta load_end "$(cut -d' ' -f1-3 /proc/loadavg)"
raw failed "$FAILED"

# ------------------------------------------------------------ report
stop_server
if [ "$MODE" = smoke ]; then
	RESULTS_DIR=${BENCH_RESULTS_DIR:-$WORK}
else
	RESULTS_DIR=${BENCH_RESULTS_DIR:-$BENCH/results}
fi
mkdir -p "$RESULTS_DIR"
base="$RESULTS_DIR/$(date '+%Y-%m-%d')-$(uname -n | tr -c 'A-Za-z0-9._\n-' '_')"
file="$base.md"
n=2
while [ -e "$file" ]; do file="$base-$n.md"; n=$((n + 1)); done
perl "$LIB/report.pl" "$RAW" "$file" || die "report.pl failed"
perl "$LIB/report_ttl.pl" "$RAW" "$file" || die "report_ttl.pl failed"
perl "$LIB/report_rescale.pl" "$RAW" "$file" || die "report_rescale.pl failed"
perl "$LIB/report_aggregating.pl" "$RAW" "$file" || die "report_aggregating.pl failed"
perl "$LIB/report_stats.pl" "$RAW" "$file" || die "report_stats.pl failed"
perl "$LIB/report_transactional.pl" "$RAW" "$file" || die "report_transactional.pl failed"
perl "$LIB/report_timers.pl" "$RAW" "$file" || die "report_timers.pl failed"
perl "$LIB/report_windows.pl" "$RAW" "$file" || die "report_windows.pl failed"
perl "$LIB/report_nexmark.pl" "$RAW" "$file" || die "report_nexmark.pl failed"
perl "$LIB/report_proxy.pl" "$RAW" "$file" || die "report_proxy.pl failed"
perl "$LIB/report_standby.pl" "$RAW" "$file" || die "report_standby.pl failed"
perl "$LIB/report_logged.pl" "$RAW" "$file" || die "report_logged.pl failed"
perl "$LIB/report_lmdb.pl" "$RAW" "$file" || die "report_lmdb.pl failed"
perl "$LIB/report_bigstate.pl" "$RAW" "$file" || die "report_bigstate.pl failed"
perl "$LIB/report_evolve.pl" "$RAW" "$file" || die "report_evolve.pl failed"
if [ "$MODE" = smoke ] && [ -z "${BENCH_RESULTS_DIR:-}" ]; then
	log "smoke: results not kept (set BENCH_RESULTS_DIR to keep them)"
else
	log "results written to $file"
fi
if [ "$FAILED" -gt 0 ]; then
	log "$FAILED case(s) FAILED"
	exit 1
fi
log "all cases ran"
