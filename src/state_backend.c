/*
 * state_backend.c
 *		Entry point of the library: _PG_init, the shared memory hooks and the
 *		check that the library was preloaded.
 *
 * The shared structures are defined by their owners (registry.c,
 * heap_backend.c); this file only sizes and initialises them at the right
 * moments, and starts the state worker (worker.c).
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"

#include "channel.h"
#include "heap_backend.h"
#include "keyed_backend.h"
#include "registry.h"
#include "snapshot_control.h"
#include "state_backend.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* Set once the library was loaded by shared_preload_libraries. */
static bool loaded_at_startup = false;

static LWLockPadded *state_backend_locks = NULL;

static object_access_hook_type prev_object_access_hook = NULL;

/* A database whose states go when the dropping transaction commits. */
static Oid	pending_drop_dbid = InvalidOid;

static void
state_backend_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();

	RequestAddinShmemSpace(add_size(add_size(add_size(registry_shmem_size(), heap_shmem_size()),
											 snapshot_control_shmem_size()),
									channel_shmem_size()));
	RequestNamedLWLockTranche("state_backend", STATE_BACKEND_NUM_LOCKS);
}

static void
state_backend_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	state_backend_locks = GetNamedLWLockTranche("state_backend");
	registry_shmem_init();
	heap_shmem_init();
	snapshot_control_shmem_init();
	channel_shmem_init();
	LWLockRelease(AddinShmemInitLock);
}

/*
 * A type that a state holds, or a role that owns a state or has access to
 * one, cannot be dropped.  DROP EXTENSION
 * state_backend drops the database's states, and DROP DATABASE frees them.  The drop is noted here and carried out just before
 * the dropping transaction commits, so a drop that fails or is rolled back
 * leaves the states alone.
 */
static void
state_backend_object_access(ObjectAccessType access, Oid classId,
							Oid objectId, int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access != OAT_DROP)
		return;
	if (classId == TypeRelationId)
		registry_check_type_unused(objectId);
	else if (classId == AuthIdRelationId)
		registry_check_role_unused(objectId);
	else if (classId == DatabaseRelationId)
		pending_drop_dbid = objectId;
	else if (classId == ExtensionRelationId &&
			 objectId == get_extension_oid("state_backend", true))
		pending_drop_dbid = MyDatabaseId;
}

static void
state_backend_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (OidIsValid(pending_drop_dbid))
			{
				Oid			dbid = pending_drop_dbid;

				pending_drop_dbid = InvalidOid;
				registry_drop_database(dbid);
			}
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			pending_drop_dbid = InvalidOid;
			break;
		default:
			break;
	}
}

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;

	loaded_at_startup = true;
	state_backend_define_gucs();

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = state_backend_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = state_backend_shmem_startup;

	prev_object_access_hook = object_access_hook;
	object_access_hook = state_backend_object_access;
	RegisterXactCallback(state_backend_xact_callback, NULL);
	rocksdb_client_init();

	state_worker_register();
}

/* state_backend_lock returns the n-th lock of the extension's tranche. */
LWLock *
state_backend_lock(int n)
{
	Assert(n >= 0 && n < STATE_BACKEND_NUM_LOCKS);
	return &state_backend_locks[n].lock;
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

PG_FUNCTION_INFO_V1(state_require_preload);

/* The install script calls this so CREATE EXTENSION fails early. */
Datum
state_require_preload(PG_FUNCTION_ARGS)
{
	state_backend_check_loaded();
	PG_RETURN_VOID();
}

const char *
state_kind_name(StateKind kind)
{
	switch (kind)
	{
		case STATE_KIND_VALUE:
			return "value";
		case STATE_KIND_LIST:
			return "list";
		case STATE_KIND_MAP:
			return "map";
		case STATE_KIND_REDUCING:
			return "reducing";
	}
	return "unknown";
}

const char *
state_backend_name(StateBackendId backend)
{
	switch (backend)
	{
		case STATE_BACKEND_MEMORY:
			return "memory";
		case STATE_BACKEND_FILESYSTEM:
			return "filesystem";
		case STATE_BACKEND_ROCKSDB:
			return "rocksdb";
	}
	return "unknown";
}

/*
 * state_backend_parse reads a backend name (Flink's "jobmanager" is the
 * memory backend), or raises invalid_parameter_value.
 */
StateBackendId
state_backend_parse(const char *name)
{
	if (strcmp(name, "memory") == 0 || strcmp(name, "jobmanager") == 0)
		return STATE_BACKEND_MEMORY;
	if (strcmp(name, "filesystem") == 0)
		return STATE_BACKEND_FILESYSTEM;
	if (strcmp(name, "rocksdb") == 0)
		return STATE_BACKEND_ROCKSDB;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown state backend \"%s\"", name),
			 errhint("Valid backends are memory (or jobmanager), filesystem and rocksdb.")));
	return STATE_BACKEND_MEMORY;
}

const char *
state_reducer_name(StateReducer reducer)
{
	switch (reducer)
	{
		case STATE_REDUCER_NONE:
			return NULL;
		case STATE_REDUCER_SUM:
			return "sum";
		case STATE_REDUCER_MIN:
			return "min";
		case STATE_REDUCER_MAX:
			return "max";
	}
	return NULL;
}
