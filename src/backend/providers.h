/*
 * backend/providers.h
 *		The registered backends (providers.c): the built-ins' ids, the
 *		lookups the layers above use, and the state worker's calls into
 *		every backend.
 */
#ifndef STATE_BACKEND_PROVIDERS_H
#define STATE_BACKEND_PROVIDERS_H

#include "utils/guc.h"

#include "backend/rocksdb/rocks.h"
#include "common/state_desc.h"

/*
 * The built-in backends' ids, as descriptors and WAL have stored them
 * (rocksdb's, STATE_BACKEND_ROCKSDB_ID, is in backend/rocksdb/rocks.h).
 */
#define STATE_BACKEND_MEMORY_ID		0
#define STATE_BACKEND_FILESYSTEM_ID	1

/* How many backends can be registered. */
#define STATE_BACKEND_MAX_PROVIDERS	32

extern void keyed_backends_init(void);
extern void keyed_backend_register(const StateBackendProvider *p);

/* The host's services (provider_host.c), as the rendezvous variable holds them. */
extern const StateBackendHost state_backend_host;

extern const StateBackendProvider *keyed_backend_provider(int backend);
extern const KeyedStateBackend *keyed_backend_by_id(int backend);
extern const KeyedStateBackend *const *keyed_backend_all(int *n);
extern const char *keyed_backend_name(int backend);
extern char *keyed_backend_names(void);
extern int	keyed_backend_parse(const char *name);
extern bool keyed_backend_lookup(const char *name, int *backend);
extern bool keyed_backend_memory_snapshots(int backend);
extern int	keyed_backend_operator_backend(int backend);
extern bool keyed_backend_kept_data(int backend);
extern bool keyed_backend_setting_ok(char **newval, void **extra, GucSource source);

/* The state worker's calls into every backend (worker.c, module.c). */
extern Size keyed_backends_shmem_size(void);
extern void keyed_backends_shmem_init(void);
extern void keyed_backends_worker_start(StateWorkerStart how);
extern void keyed_backends_worker_ready(void);
extern void keyed_backends_worker_stop(void);
extern void keyed_backends_worker_reload(void);
extern void keyed_backends_worker_round(void);
extern const char *keyed_backends_worker_failed(void);
extern bool keyed_backends_handle_request(uint16 target, uint16 kind, const char *payload,
										  uint32 len, StringInfo reply);

#endif							/* STATE_BACKEND_PROVIDERS_H */
