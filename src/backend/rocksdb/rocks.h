/*
 * backend/rocksdb/rocks.h
 *		The rocksdb backend as the registry of backends (providers.c) sees
 *		it: one provider, registered like any library's.  Everything else
 *		about it is in rocks_internal.h, for the files of this directory.
 */
#ifndef STATE_BACKEND_ROCKS_H
#define STATE_BACKEND_ROCKS_H

#include "api/state_backend_api.h"

/* The rocksdb provider (rocks_provider.c); sets up its session hooks. */
extern const StateBackendProvider *rocks_provider(void);

#endif							/* STATE_BACKEND_ROCKS_H */
