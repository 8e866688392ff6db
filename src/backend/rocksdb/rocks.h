/*
 * backend/rocksdb/rocks.h
 *		The rocksdb backend as the state worker (worker.c) and the library's
 *		entry point (module.c) see it.  Nothing else names it: the layers
 *		above reach it through backend/keyed_backend.h.
 */
#ifndef STATE_BACKEND_ROCKS_H
#define STATE_BACKEND_ROCKS_H

#include "lib/stringinfo.h"

#include "ipc/channel.h"

/* The shared cache of entries sessions read in place (rocks_cache.c). */
extern Size rocks_cache_shmem_size(void);
extern void rocks_cache_shmem_init(void);

/* The instance (state worker only). */
extern bool rocks_open_existing(void);
extern void rocks_close(void);
extern bool rocks_failed(void);
extern void rocks_apply_settings(void);
extern bool rocks_adopt_states(void);
extern void rocks_set_aside(const char *why);
extern void rocks_begin_load(void);
extern void rocks_end_load(void);
extern void rocks_sweep_read_scratch(void);
extern void rocks_sync_registry(void);

/* Requests of sessions, served by the worker. */
extern bool rocks_handle_request(ChannelOp op, const char *payload, uint32 len,
								 StringInfo reply);
extern bool rocks_handle_restore(const char *payload, uint32 len, StringInfo reply);

/* Sessions: the statement and transaction hooks (from _PG_init). */
extern void rocks_client_init(void);

#endif							/* STATE_BACKEND_ROCKS_H */
