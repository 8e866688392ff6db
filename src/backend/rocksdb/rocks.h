/*
 * backend/rocksdb/rocks.h
 *		The rocksdb backend as the registry of backends (providers.c) sees
 *		it: one provider, registered like any library's.  Everything else
 *		about it is in rocks_internal.h, for the files of this directory.
 */
#ifndef STATE_BACKEND_ROCKS_H
#define STATE_BACKEND_ROCKS_H

#include "api/state_backend_api.h"

/*
 * The rocksdb provider (rocks_provider.c), which reaches the host through
 * the services it is given, as any library's backend; sets up its session
 * hooks.
 */
extern const StateBackendProvider *rocks_provider(const StateBackendHost *host);

/*
 * A transactional commit's writes to rocksdb states, staged (rocks_client.c):
 * between begin and end the session's writes to rocksdb states are kept
 * aside by the state worker; prepare makes them durable (before the commit
 * record; an error refuses the commit), apply has them applied at once.
 */
extern bool rocks_client_stage_begin(uint32 stage, uint64 fxid);
extern void rocks_client_stage_end(void);
extern void rocks_client_stage_prepare(void);
extern void rocks_client_stage_apply(void);
extern Size rocks_stage_shmem_size(void);
extern void rocks_stage_shmem_init(void);
extern void rocks_stage_expect(uint64 fxid);
extern void rocks_stage_wait(uint64 fxid);

#endif							/* STATE_BACKEND_ROCKS_H */
