#!/usr/bin/env bash
# scripts/core-regress.sh: PostgreSQL's own regression suite (src/test/regress,
# its parallel schedule) against a server with state_backend preloaded and the
# extension created in the regression database (and in template1, so that
# every database the suite makes has it too).  It shows that the extension
# keeps PostgreSQL's conventions: the suite's catalog checks (opr_sanity,
# type_sanity, misc_sanity, ...) look at its objects as at the server's own,
# and every other test runs with its hooks in place.
#
#   scripts/core-regress.sh        as root, or as a user with sudo
#
# The PostgreSQL source comes from Debian's source package of postgresql-15,
# through apt: deb-src entries for the Debian mirrors apt already uses are
# written to a private apt directory (the system's sources are not touched).
# The installed server's version is taken when a mirror has its source, else
# the newest there is (a security update's source is not always on the
# mirror).  Only what the suite needs is built: pg_regress, regress.so,
# contrib/spi's two modules and the psql the suite's scripts are written for.
#
# The suite runs twice on fresh clusters of the installed server (Debian's
# postgresql-15, or PG_CONFIG's), as the `postgres` OS user, in a temporary
# directory: first without the extension, then with it.  A test that fails
# with the extension counts as a difference unless it fails the same way
# (the same output) without it: a suite of one minor release run against a
# server of another differs where the server changed, whatever the
# extension does, and those tests are listed apart.  Every server is stopped
# on exit.
#
# The last line is "N passed, N failed" over the suite's tests (failed: the
# differences the extension makes); the exit status is non-zero when there is
# one or a step fails, and regression.diffs of the run with the extension is
# printed.  Environment:
#   PG_CONFIG                 pg_config of the server (default: PostgreSQL 15's)
#   CORE_REGRESS_DIR          where to build and run (default: a new directory
#                             under /var/tmp; kept when given)
#   CORE_REGRESS_PORT         the servers' port (default 54399)
#   CORE_REGRESS_SETUP=0      do not build and install the extension first
#                             (scripts/setup.sh); it must be installed already
#   CORE_REGRESS_KEEP=1       keep the temporary directory
#   CORE_REGRESS_STEP         "build": fetch and build only, into
#                             CORE_REGRESS_DIR; "run": run the suite with
#                             what a "build" step left there; default both
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
PORT=${CORE_REGRESS_PORT:-54399}
PACKAGES=(postgresql-15 build-essential bzip2)
STEP=${CORE_REGRESS_STEP:-all}
case "$STEP" in
	all | build | run) ;;
	*) echo "CORE_REGRESS_STEP is build, run or unset, not $STEP" >&2; exit 2 ;;
esac

# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"

[ $# -eq 0 ] || die "usage: $0 (no arguments; see the comment at its top)"

install_packages "${PACKAGES[@]}" || die "could not install ${PACKAGES[*]}"
if [ "${CORE_REGRESS_SETUP:-1}" != 0 ]; then
	"$ROOT/scripts/setup.sh" || die "could not build and install state_backend"
fi
[ -x "$PG_CONFIG" ] || die "$PG_CONFIG not found"
PGBIN=$("$PG_CONFIG" --bindir)
server_version=$("$PGBIN/postgres" --version | awk '{print $3}')
case "$server_version" in
	15.*) ;;
	*) die "the server is PostgreSQL $server_version, not 15" ;;
esac

if [ "$STEP" != all ] && [ -z "${CORE_REGRESS_DIR:-}" ]; then
	die "CORE_REGRESS_STEP=$STEP needs CORE_REGRESS_DIR"
fi
if [ -n "${CORE_REGRESS_DIR:-}" ]; then
	work=$CORE_REGRESS_DIR
	mkdir -p "$work" || die "cannot make $work"
	keep=1
else
	work=$(mktemp -d /var/tmp/state_backend_core.XXXXXX) || die "mktemp failed"
	keep=${CORE_REGRESS_KEEP:-0}
fi
chmod 0755 "$work"

# run_as_postgres CMD...: PostgreSQL refuses root; the server and pg_regress
# run as the postgres OS user (the package makes it).
run_as_postgres() {
	if [ "$(id -un)" = postgres ]; then
		"$@"
	else
		as_root runuser -u postgres -- env HOME="$work" PATH="$PGBIN:/usr/bin:/bin" "$@"
	fi
}

cleanup() {
	local d
	for d in "$work"/*/data; do
		if [ -f "$d/postmaster.pid" ]; then
			run_as_postgres "$PGBIN/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1
		fi
	done
	if [ "$keep" != 1 ]; then
		as_root rm -rf "$work"
	else
		log "kept $work"
	fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# What a "build" step left: the source's version and where it is.
built=$work/built
if [ "$STEP" = run ]; then
	[ -s "$built" ] || die "no build in $work (CORE_REGRESS_STEP=build first)"
	read -r src_version pgsrc <"$built"
	regress=$pgsrc/src/test/regress
	log "PostgreSQL's regression suite of postgresql-15 $src_version, against the server $server_version"
else
	# ------------------------------------------------------------ the source
	# deb-src entries for the configured Debian mirrors, in a private apt
	# directory: the one-line form (sources.list, *.list) and deb822 (*.sources).
	apt_dir=$work/apt
	mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		sed -n -E 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f"
	done | grep -i debian >"$apt_dir/sources.list.d/src.list"
	i=0
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		grep -qi 'debian' "$f" || continue
		sed -E 's/^Types:.*/Types: deb-src/' "$f" >"$apt_dir/sources.list.d/src$i.sources"
		i=$((i + 1))
	done
	apt_opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
		-o "APT::Sandbox::User=root")
	log "reading the source lists of the Debian mirrors"
	as_root apt-get "${apt_opts[@]}" -qq update || log "some source lists could not be read"
	mapfile -t versions < <(apt-cache "${apt_opts[@]}" showsrc postgresql-15 2>/dev/null |
		awk '/^Version:/ {print $2}' | sort -u | sort -r -V)
	[ "${#versions[@]}" -gt 0 ] || die "no source of postgresql-15 on the configured mirrors"
	# The installed server's Debian version first, then the newest.
	installed=$(dpkg-query -W -f '${Version}' postgresql-15 2>/dev/null || true)
	ordered=()
	for v in "${versions[@]}"; do [ "$v" = "$installed" ] && ordered+=("$v"); done
	for v in "${versions[@]}"; do [ "$v" != "$installed" ] && ordered+=("$v"); done
	src_version=
	mkdir -p "$work/src"
	for v in "${ordered[@]}"; do
		if (cd "$work/src" && as_root apt-get "${apt_opts[@]}" -qq source --download-only "postgresql-15=$v") \
			>"$work/apt-source.log" 2>&1; then
			src_version=$v
			break
		fi
		log "the source of postgresql-15 $v could not be fetched"
	done
	[ -n "$src_version" ] || { cat "$work/apt-source.log"; die "no source of postgresql-15 could be fetched"; }
	tarball=$(ls "$work"/src/postgresql-15_*.orig.tar.* 2>/dev/null | head -n 1)
	[ -n "$tarball" ] || die "the source package of postgresql-15 $src_version has no upstream tarball"
	log "PostgreSQL's regression suite of postgresql-15 $src_version, against the server $server_version"
	as_root chown -R "$(id -u):$(id -g)" "$work/src"
	tar -C "$work" -xf "$tarball" || die "could not unpack $tarball"
	pgsrc=$(ls -d "$work"/postgresql-15.*/ | head -n 1)
	pgsrc=${pgsrc%/}

	# ------------------------------------------------------------ build
	# Only the suite's driver and its C modules; the options leave out what
	# they do not use (the server is Debian's, built with everything).
	log "building pg_regress, regress.so, refint.so, autoinc.so and psql"
	(cd "$pgsrc" && ./configure --prefix="$("$PG_CONFIG" --prefix 2>/dev/null || echo /usr)" \
		--without-icu --without-readline --without-zlib >"$work/configure.log" 2>&1) ||
		{ tail -n 20 "$work/configure.log"; die "configure failed"; }
	{ make -s -C "$pgsrc/src/test/regress" -j"$(nproc)" && make -s -C "$pgsrc/src/bin/psql" -j"$(nproc)"; } \
		>"$work/build.log" 2>&1 || { tail -n 20 "$work/build.log"; die "the build failed"; }
	regress=$pgsrc/src/test/regress
	echo "$src_version $pgsrc" >"$built"
fi
if [ "$STEP" = build ]; then
	log "built in $work"
	exit 0
fi

# ------------------------------------------------------------ the suite
as_root chown -R postgres: "$work"

# run_suite NAME WITH_EXTENSION: a fresh cluster in $work/NAME, the suite in
# it, its results in $work/NAME (regress.out, results/, regression.diffs).
run_suite() {
	local name=$1 ext=$2 out=$work/$1 start status
	local data=$out/data load=()
	run_as_postgres mkdir -p "$out"
	run_as_postgres "$PGBIN/initdb" -D "$data" -A trust -E UTF8 --locale=C >"$work/initdb-$name.log" 2>&1 ||
		{ cat "$work/initdb-$name.log"; die "initdb failed"; }
	{
		if [ "$ext" -eq 1 ]; then
			echo "shared_preload_libraries = 'state_backend'"
		fi
		echo "port = $PORT"
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$out'"
		# As the server `make check` starts for the suite.
		echo "max_prepared_transactions = 2"
	} | run_as_postgres tee -a "$data/postgresql.conf" >/dev/null
	run_as_postgres "$PGBIN/pg_ctl" -D "$data" -l "$out/server.log" -w start >/dev/null ||
		{ tail -n 30 "$out/server.log"; die "the server did not start"; }
	if [ "$ext" -eq 1 ]; then
		run_as_postgres "$PGBIN/psql" -X -q -h "$out" -p "$PORT" -d template1 -v ON_ERROR_STOP=1 \
			-c 'CREATE EXTENSION state_backend' || die "CREATE EXTENSION state_backend failed in template1"
		load=(--load-extension=state_backend)
	fi
	log "the parallel schedule, $name"
	start=$(date +%s)
	run_as_postgres bash -c 'cd "$1" && shift && exec "$@"' _ "$out" \
		"$regress/pg_regress" --inputdir="$regress" --outputdir="$out" --dlpath="$regress" \
		--bindir="$pgsrc/src/bin/psql" --host="$out" --port="$PORT" --max-concurrent-tests=20 \
		--schedule="$regress/parallel_schedule" "${load[@]}" >"$out/regress.out" 2>&1
	status=$?
	run_as_postgres "$PGBIN/pg_ctl" -D "$data" -m fast stop >/dev/null 2>&1
	log "$name: $(($(date +%s) - start)) s, pg_regress exit status $status"
	grep -qE '\.\.\. (ok|FAILED)' "$out/regress.out" ||
		{ cat "$out/regress.out"; die "the suite ran no test ($name)"; }
}

run_suite without-extension 0
run_suite with-extension 1

# ------------------------------------------------------------ the verdict
failed_in() { sed -n -E 's/^[[:space:]]*(test[[:space:]]+)?([a-z0-9_]+)[[:space:]]+\.\.\. FAILED.*/\2/p' "$work/$1/regress.out"; }
passed=$(grep -cE '\.\.\. ok ' "$work/with-extension/regress.out" || true)
differences=()
unrelated=()
for t in $(failed_in with-extension); do
	if failed_in without-extension | grep -qx "$t" &&
		cmp -s "$work/with-extension/results/$t.out" "$work/without-extension/results/$t.out"; then
		unrelated+=("$t")
	else
		differences+=("$t")
	fi
done
for t in $(failed_in without-extension); do
	failed_in with-extension | grep -qx "$t" || log "$t fails without the extension only"
done
cat "$work/with-extension/regress.out"
if [ -s "$work/with-extension/regression.diffs" ]; then
	printf '\n==> regression.diffs (with the extension)\n'
	cat "$work/with-extension/regression.diffs"
fi
printf '\n==> PostgreSQL %s suite against the server %s\n' "$src_version" "$server_version"
if [ "${#unrelated[@]}" -gt 0 ]; then
	printf '    failing the same without the extension (not counted): %s\n' "${unrelated[*]}"
fi
if [ "${#differences[@]}" -gt 0 ]; then
	printf '    differing with the extension: %s\n' "${differences[*]}"
else
	printf '    no test differs with the extension\n'
fi
printf '%d passed, %d failed\n' "$((passed + ${#unrelated[@]}))" "${#differences[@]}"
[ "${#differences[@]}" -eq 0 ] && [ "$passed" -gt 0 ]
