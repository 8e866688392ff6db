/*
 * worker.c
 *		The state worker: a static background worker started with the
 *		server.  It creates the shared area that heap states live in and
 *		applies configuration changes to it.
 *
 * Heap state is read and written in place by every backend
 * (heap_backend.c); the worker is not on that path.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/guc.h"

#include "heap_backend.h"
#include "state_backend.h"

PGDLLEXPORT void state_worker_main(Datum main_arg);

/* Seconds the postmaster waits before it restarts a worker that failed. */
#define STATE_WORKER_RESTART_SECONDS	1

/*
 * state_worker_register asks the postmaster to start the worker once the
 * server accepts connections, and to restart it if it fails.
 */
void
state_worker_register(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = STATE_WORKER_RESTART_SECONDS;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "state_backend");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "state_worker_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "state_backend worker");
	snprintf(worker.bgw_type, BGW_MAXLEN, "state_backend worker");
	RegisterBackgroundWorker(&worker);
}

/*
 * state_worker_main is the worker's body: set up, then wait on the latch
 * for configuration reloads until asked to stop.
 */
void
state_worker_main(Datum main_arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();

	/* No database: this only makes the worker visible in pg_stat_activity. */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	heap_area_attach();
	ereport(LOG, (errmsg("state_backend worker started")));

	while (!ShutdownRequestPending)
	{
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_EXIT_ON_PM_DEATH,
						 -1L,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			heap_apply_memory_limit();
		}
	}

	/* Exit code 1: the postmaster restarts the worker unless the server stops. */
	proc_exit(1);
}
