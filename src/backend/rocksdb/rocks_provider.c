/*
 * backend/rocksdb/rocks_provider.c
 *		The rocksdb backend as a provider: its place in the state worker's
 *		life (open, adopt, load, serve, close) and in shared memory (the
 *		entry cache), registered by providers.c like any library's backend.
 */
#include "postgres.h"

#include "rocks_internal.h"

/*
 * At a start with fresh shared memory, rocksdb states come back from their
 * own instance; when it has none to give (or they are a promoted standby's
 * copy of the primary's, set aside first), the newest checkpoint loads
 * them, marked as a load that did not finish until rocks_end_load.  A worker
 * that restarted alone opens the instance its states live in.
 */
static void
rp_worker_start(StateWorkerStart how)
{
	if (how == STATE_WORKER_START_AGAIN)
	{
		if (rocks_open_existing())
			rocks_stage_recover();
		return;
	}
	if (how == STATE_WORKER_START_PROMOTED)
		rocks_set_aside("on a standby it is a copy of the primary's or of an earlier start");
	rocks_sweep_read_scratch();
	if (!rocks_adopt_states())
		rocks_begin_load();
	else
		rocks_stage_recover();	/* commits a crash cut short */
}

/* Between rounds: the registry's changes, and staged commits whose transaction ended. */
static void
rp_worker_round(void)
{
	rocks_sync_registry();
	rocks_stage_round();
	rocks_flush_idle();
	rocks_view_worker_round(rocks.db);
}

/*
 * Shared memory: the entry cache, the board of staged commits, and the
 * marks sessions' views follow.
 */
static Size
rp_shmem_size(void)
{
	return add_size(add_size(rocks_cache_shmem_size(), rocks_stage_shmem_size()),
					rocks_view_shmem_size());
}

static void
rp_shmem_init(void)
{
	rocks_cache_shmem_init();
	rocks_stage_shmem_init();
	rocks_view_shmem_init();
}

/* A session's request, in a pass of the worker over the sessions. */
static bool
rp_handle_request(uint16 kind, const char *payload, uint32 len, StringInfo reply)
{
	bool		answered;

	if (kind == ROCKS_REQ_RESTORE_NATIVE)
		return rocks_handle_restore(payload, len, reply);
	rocks_serving_session = true;
	PG_TRY();
	{
		answered = rocks_serve_request((RocksReqKind) kind, payload, len, reply);
	}
	PG_FINALLY();
	{
		rocks_serving_session = false;
	}
	PG_END_TRY();
	return answered;
}

static const StateBackendProvider rocks_provider_def = {
	STATE_BACKEND_PROVIDER_BUILT("rocksdb"),
	.id = STATE_BACKEND_ROCKSDB_ID,
	.flags = STATE_PROVIDER_MEMORY_SNAPSHOTS | STATE_PROVIDER_STANDBY_READS,
	.ops = &rocks_keyed_backend,
	.shmem_size = rp_shmem_size,
	.shmem_init = rp_shmem_init,
	.worker_start = rp_worker_start,
	.worker_ready = rocks_end_load,
	.worker_stop = rocks_close,
	.worker_reload = rocks_apply_settings,
	.worker_round = rp_worker_round,
	.worker_failed = rocks_failed,
	.handle_request = rp_handle_request,
};

const StateBackendHost *rocks_host = NULL;

const StateBackendProvider *
rocks_provider(const StateBackendHost *host)
{
	rocks_host = host;
	rocks_define_settings();
	rocks_client_init();
	return &rocks_provider_def;
}
