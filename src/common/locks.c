/*
 * common/locks.c
 *		The extension's LWLock tranche, requested and looked up at the
 *		postmaster's shared-memory hooks (module.c calls these), and the
 *		check that the library was preloaded.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"

#include "storage/lwlock.h"

#include "common/locks.h"

static LWLockPadded *state_backend_locks = NULL;

/* Set once the library was loaded by shared_preload_libraries. */
static bool loaded_at_startup = false;

/* state_locks_request asks for the tranche (shmem_request_hook only). */
void
state_locks_request(void)
{
	RequestNamedLWLockTranche("state_backend", STATE_BACKEND_NUM_LOCKS);
}

/* state_locks_init finds the tranche (shmem_startup_hook). */
void
state_locks_init(void)
{
	state_backend_locks = GetNamedLWLockTranche("state_backend");
}

/* state_backend_lock returns the n-th lock of the extension's tranche. */
LWLock *
state_backend_lock(int n)
{
	Assert(n >= 0 && n < STATE_BACKEND_NUM_LOCKS);
	return &state_backend_locks[n].lock;
}

/* _PG_init notes that the library is being preloaded. */
void
state_backend_mark_loaded(void)
{
	loaded_at_startup = true;
}

/*
 * state_backend_check_loaded raises an error unless the library was
 * preloaded: without that there is no shared memory to keep state in.
 */
void
state_backend_check_loaded(void)
{
	if (!loaded_at_startup)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("state_backend must be loaded via shared_preload_libraries"),
				 errhint("Add 'state_backend' to shared_preload_libraries in postgresql.conf and restart the server.")));
}

/*
 * state_backend_check_available raises an error unless states may be used
 * in this session: the library preloaded, and the server not in recovery.
 * On a standby this refuses what a standby cannot do (create, drop,
 * restore, snapshot); reads of logged states take their own path
 * (sql/sql_common.c, logged_standby.c).
 */
void
state_backend_check_available(void)
{
	state_backend_check_loaded();
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("states are not available during recovery"),
				 errdetail("This server is a standby, or is still recovering: its states could be stale."),
				 errhint("Use the primary. A hot standby reads logged states only.")));
}

/*
 * state_backend_check_writable is state_backend_check_available for a
 * function that changes states or their definitions ("what" names it):
 * it also refuses in a read-only transaction, as PostgreSQL refuses
 * nextval() or an INSERT there.  Failover tools fence a server with
 * default_transaction_read_only while it is not yet, or no longer, the
 * only primary.
 */
void
state_backend_check_writable(const char *what)
{
	state_backend_check_available();
	PreventCommandIfReadOnly(what);
}
