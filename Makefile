# state_backend: PGXS build.
#
#   make && make install          build and install (as root)
#   make installcheck             pg_regress suite on a throwaway server that
#                                 preloads the library, the isolation specs
#                                 (specs/) on another, then the TAP tests
#   make installcheck-rocksdb     the same pg_regress suite again, with
#                                 state_backend.backend = rocksdb as default
#   make installcheck-lmdb        and again with the lmdb provider
#                                 (contrib/lmdb, installed first) as default
# Run the servers as an unprivileged user; scripts/test.sh does all of it.

MODULE_big = state_backend
OBJS = \
	src/module.o \
	src/worker.o \
	src/timers/timer_worker.o \
	src/timers/timer_index.o \
	src/timers/timer_keys.o \
	src/timers/timer_fire.o \
	src/state_ops.o \
	src/state_evolve.o \
	src/logged/logged.o \
	src/logged/logged_txn.o \
	src/logged/logged_replay.o \
	src/logged/logged_standby.o \
	src/common/types.o \
	src/common/locks.o \
	src/common/settings.o \
	src/common/area.o \
	src/common/shmem_parts.o \
	src/common/codec.o \
	src/common/key_group.o \
	src/common/fold.o \
	src/common/aggregate.o \
	src/common/timer_handler.o \
	src/common/progress.o \
	src/common/catch.o \
	src/common/bgworker.o \
	src/common/signing.o \
	src/common/membuf.o \
	src/common/local_hash.o \
	src/common/pause.o \
	src/common/spin_wait.o \
	src/common/latch_sleep.o \
	src/common/ttl_clock.o \
	src/common/fault.o \
	src/ipc/channel.o \
	src/ipc/channel_worker.o \
	src/catalog/registry.o \
	src/catalog/privileges.o \
	src/catalog/ddl_guards.o \
	src/catalog/stats.o \
	src/format/records.o \
	src/format/state_wal.o \
	src/format/desc_image.o \
	src/format/window_image.o \
	src/format/kg_file.o \
	src/format/manifest.o \
	src/format/snapshot_writer.o \
	src/format/snapshot_reader.o \
	src/backend/keyed_backend.o \
	src/backend/keyed_move.o \
	src/backend/providers.o \
	src/backend/provider_host.o \
	src/backend/heap/heap_table.o \
	src/backend/heap/heap_backend.o \
	src/backend/heap/heap_scan.o \
	src/ttl/ttl_state.o \
	src/txn/txn_state.o \
	src/txn/txn_commit.o \
	src/txn/txn_locks.o \
	src/timers/timer_queue.o \
	src/backend/rocksdb/rocks_keys.o \
	src/backend/rocksdb/rocks_instance.o \
	src/backend/rocksdb/rocks_options.o \
	src/backend/rocksdb/rocks_compact.o \
	src/backend/rocksdb/rocks_count.o \
	src/backend/rocksdb/rocks_requests.o \
	src/backend/rocksdb/rocks_stage.o \
	src/backend/rocksdb/rocks_client.o \
	src/backend/rocksdb/rocks_cache.o \
	src/backend/rocksdb/rocks_view.o \
	src/backend/rocksdb/rocks_files.o \
	src/backend/rocksdb/rocks_ttl.o \
	src/backend/rocksdb/rocks_snapshot.o \
	src/backend/rocksdb/rocks_provider.o \
	src/snapshot/snapshot_control.o \
	src/snapshot/snapshot_driver.o \
	src/snapshot/canonical.o \
	src/snapshot/checkpoint.o \
	src/snapshot/restore.o \
	src/snapshot/restore_check.o \
	src/snapshot/snapshot_query.o \
	src/snapshot/rescale.o \
	src/sql/sql_common.o \
	src/sql/sql_call_cache.o \
	src/sql/sql_state.o \
	src/sql/sql_alter.o \
	src/sql/sql_value.o \
	src/sql/sql_list.o \
	src/sql/sql_map.o \
	src/sql/sql_reducing.o \
	src/sql/sql_aggregating.o \
	src/sql/sql_timers.o \
	src/sql/sql_window.o \
	src/sql/sql_window_fold.o \
	src/sql/sql_entries.o \
	src/sql/sql_feed.o \
	src/sql/sql_snapshot.o \
	src/sql/sql_rescale.o \
	src/sql/sql_operator.o \
	src/proxy/sql_proxy.o \
	src/proxy/sql_proxy_journal.o

EXTENSION = state_backend
# The current version's script, and the oldest one's with the updates from
# it: CREATE EXTENSION ... VERSION of any release runs 1.0's and its updates.
DATA = state_backend--1.7.sql state_backend--1.0.sql state_backend--1.0--1.1.sql \
	state_backend--1.1--1.2.sql state_backend--1.2--1.3.sql state_backend--1.3--1.4.sql \
	state_backend--1.4--1.5.sql state_backend--1.5--1.6.sql \
	state_backend--1.6--1.7.sql
PGFILEDESC = "state_backend - keyed state for PostgreSQL"
# The provider API, for libraries that register backends of their own:
# $(includedir_server)/extension/state_backend/state_backend_api.h
HEADERS = src/api/state_backend_api.h

REGRESS = setup types value list map reducing errors privileges isolation prepared snapshot rocksdb hardening logged ttl operator rescale aggregating aggregating_args entries snapshot_read stats upgrade transactional timers windows watermarks emit_table feed streaming_edges alter_state alter_audit time_range views proxy_functions fault_points
REGRESS_OPTS = --temp-instance=tmp_check_regress --temp-config=$(srcdir)/test/regress.conf
# Second pass of the same tests (as Flink runs one test base against every
# backend): its own server, config and output directory (results, diffs).
REGRESS_ROCKSDB_OPTS = --temp-instance=tmp_check_rocksdb \
	--temp-config=$(srcdir)/test/regress-rocksdb.conf \
	--outputdir=output_rocksdb --dbname=$(CONTRIB_TESTDB)

# Third pass: a backend from another library (contrib/lmdb).
REGRESS_LMDB_OPTS = --temp-instance=tmp_check_lmdb \
	--temp-config=$(srcdir)/test/regress-lmdb.conf \
	--outputdir=output_lmdb --dbname=$(CONTRIB_TESTDB)

# Interleavings of sessions (specs/): lock ordering around drop, restore,
# snapshot and writes.
ISOLATION = lock_order transactional_sessions
ISOLATION_OPTS = --temp-instance=tmp_check_iso --temp-config=$(srcdir)/test/regress.conf

TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

PG_CPPFLAGS = -I$(srcdir)/src -I$(srcdir)/src/api
PG_CFLAGS = -Wall -Werror=implicit-function-declaration
SHLIB_LINK = -lrocksdb

# Rebuild objects when a header they include changes.
override autodepend = yes

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The built-in rocksdb backend reaches the host only through the provider
# API, as a library's backend does: its files are compiled with src/api/ as
# the only folder of the extension on the include path (PostgreSQL's own
# headers and RocksDB's besides).
ROCKS_OBJS = $(filter src/backend/rocksdb/%.o,$(OBJS))
$(ROCKS_OBJS): override CPPFLAGS := -I$(srcdir)/src/api \
	$(filter-out -I. -I./ -I$(srcdir) -I$(srcdir)/ -I$(srcdir)/src -I$(srcdir)/src/api,$(CPPFLAGS))

.PHONY: installcheck-rocksdb
installcheck-rocksdb: submake $(REGRESS_PREP)
	$(pg_regress_installcheck) $(REGRESS_ROCKSDB_OPTS) $(REGRESS)

.PHONY: installcheck-lmdb
installcheck-lmdb: submake $(REGRESS_PREP)
	$(pg_regress_installcheck) $(REGRESS_LMDB_OPTS) $(REGRESS)

EXTRA_CLEAN += tmp_check_rocksdb output_rocksdb tmp_check_lmdb output_lmdb tmp_check_iso output_iso
