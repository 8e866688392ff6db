#!/usr/bin/env bash
# scripts/setup.sh: install what state_backend needs on Debian 12, then build
# and install the extension into PostgreSQL 15, and its lmdb provider
# (contrib/lmdb).
#
#   scripts/setup.sh            as root, or as a user with sudo
#
# The apt step is skipped when every package is already installed, so the
# script also works offline once a machine has been set up.  Environment:
#   PG_CONFIG   pg_config to build against (default: PostgreSQL 15's)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
PACKAGES=(postgresql-15 postgresql-server-dev-15 postgresql-15-plproxy libipc-run-perl librocksdb-dev liblmdb-dev build-essential python3)

# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"

install_packages "${PACKAGES[@]}"

[ -x "$PG_CONFIG" ] || die "$PG_CONFIG not found"

# Build as the invoking user (so a non-root user's tree stays theirs), then
# install as root.  with_llvm=no: no JIT bitcode, so clang is not needed.
log "building state_backend against $("$PG_CONFIG" --version)"
cd "$ROOT"
make -s -j"$(nproc)" with_llvm=no PG_CONFIG="$PG_CONFIG"
log "installing into $("$PG_CONFIG" --pkglibdir) and $("$PG_CONFIG" --sharedir)/extension"
as_root make -s with_llvm=no PG_CONFIG="$PG_CONFIG" install
# The lmdb provider: another library, built against the header just installed.
log "building and installing contrib/lmdb (backend lmdb)"
make -s -j"$(nproc)" -C contrib/lmdb with_llvm=no PG_CONFIG="$PG_CONFIG"
as_root make -s -C contrib/lmdb with_llvm=no PG_CONFIG="$PG_CONFIG" install
log "setup done"
