# state_backend: PGXS build.
#
#   make && make install          build and install (as root)
#   make installcheck             pg_regress suite on a throwaway server that
#                                 preloads the library, then the TAP tests
#   make installcheck-rocksdb     the same pg_regress suite again, with
#                                 state_backend.backend = rocksdb as default
# Run the servers as an unprivileged user; scripts/test.sh does all of it.

MODULE_big = state_backend
OBJS = \
	src/state_backend.o \
	src/guc.o \
	src/worker.o \
	src/registry.o \
	src/codec.o \
	src/key_group.o \
	src/keyed_backend.o \
	src/heap_backend.o \
	src/sql_common.o \
	src/sql_state.o \
	src/sql_value.o \
	src/sql_list.o \
	src/sql_map.o \
	src/sql_reducing.o \
	src/snapshot.o \
	src/canonical.o \
	src/snapshot_control.o \
	src/checkpoint.o \
	src/restore.o \
	src/sql_snapshot.o \
	src/channel.o \
	src/rocksdb_client.o \
	src/rocksdb_backend.o \
	src/rocksdb_snapshot.o

EXTENSION = state_backend
DATA = state_backend--1.0.sql
PGFILEDESC = "state_backend - keyed state for PostgreSQL"

REGRESS = setup types value list map reducing errors privileges isolation prepared snapshot rocksdb
REGRESS_OPTS = --temp-instance=tmp_check_regress --temp-config=$(srcdir)/test/regress.conf
# Second pass of the same tests (as Flink runs one test base against every
# backend): its own server, config and output directory (results, diffs).
REGRESS_ROCKSDB_OPTS = --temp-instance=tmp_check_rocksdb \
	--temp-config=$(srcdir)/test/regress-rocksdb.conf \
	--outputdir=output_rocksdb --dbname=$(CONTRIB_TESTDB)

TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

PG_CPPFLAGS = -I$(srcdir)/src
PG_CFLAGS = -Wall -Werror=implicit-function-declaration
SHLIB_LINK = -lrocksdb

# Rebuild objects when a header they include changes.
override autodepend = yes

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

.PHONY: installcheck-rocksdb
installcheck-rocksdb: submake $(REGRESS_PREP)
	$(pg_regress_installcheck) $(REGRESS_ROCKSDB_OPTS) $(REGRESS)

EXTRA_CLEAN += tmp_check_rocksdb output_rocksdb
