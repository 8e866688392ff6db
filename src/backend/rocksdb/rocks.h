/*
 * backend/rocksdb/rocks.h
 *		The rocksdb backend as the registry of backends (providers.c) sees
 *		it: one provider, registered like any library's.  Everything else
 *		about it is in rocks_internal.h, for the files of this directory.
 */
#ifndef STATE_BACKEND_ROCKS_H
#define STATE_BACKEND_ROCKS_H

#include "state_backend_api.h"

/* Its id, as descriptors, WAL and RocksDB have stored it. */
#define STATE_BACKEND_ROCKSDB_ID	2

/*
 * The rocksdb provider (rocks_provider.c), which reaches the host through
 * the services it is given, as any library's backend; sets up its session
 * hooks.
 */
extern const StateBackendProvider *rocks_provider(const StateBackendHost *host);


#endif							/* STATE_BACKEND_ROCKS_H */
