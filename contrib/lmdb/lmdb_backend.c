/*
 * contrib/lmdb/lmdb_backend.c
 *		state_backend_lmdb: registers backend "lmdb" with state_backend,
 *		and its part in snapshots.
 *
 * Loaded as shared_preload_libraries = 'state_backend,state_backend_lmdb'.
 * Snapshots hold lmdb states as key-group files (native and canonical
 * alike), read at the cut under one LMDB read transaction: LMDB's own
 * point-in-time view, so the cut stops no session.  Its writers are held
 * off only across the cut's instant, so that each of their changes (and
 * its WAL record, for a logged state) is either in the snapshot or after
 * the cut's WAL position (the writes lock, lmdb_env.c, is held across it).
 */
#include "postgres.h"

#include "access/xact.h"
#include "fmgr.h"
#include "miscadmin.h"

#include "lmdb_internal.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

const StateBackendHost *lmdb_host = NULL;

/* The running snapshot's read transaction, and the writer lock of its cut. */
static MDB_txn *snap_txn = NULL;
static MDB_txn *cut_writer = NULL;

static void
snap_release(int64 id)
{
	if (cut_writer)
		mdb_txn_abort(cut_writer);
	cut_writer = NULL;
	lmdb_writes_unlock();
	if (snap_txn)
		mdb_txn_abort(snap_txn);
	snap_txn = NULL;
}

/*
 * Before the cut's instant: LMDB's writer lock (no lmdb write commits
 * until after_cut), then the read transaction the snapshot reads.
 */
static void
snap_prepare(int64 id)
{
	MDB_env    *env = lmdb_env();
	int			rc;

	snap_release(id);
	/* No write between its LMDB commit and its WAL record at the instant. */
	lmdb_writes_lock();
	rc = mdb_txn_begin(env, NULL, 0, &cut_writer);
	if (rc != 0)
	{
		cut_writer = NULL;
		lmdb_writes_unlock();
		lmdb_fail(rc, "begin a snapshot's cut");
	}
	rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &snap_txn);
	if (rc != 0)
	{
		snap_txn = NULL;
		snap_release(id);
		lmdb_fail(rc, "begin a snapshot's read");
	}
}

static void
snap_after_cut(int64 id)
{
	if (cut_writer)
		mdb_txn_abort(cut_writer);
	cut_writer = NULL;
	lmdb_writes_unlock();
}

typedef struct CollectArg
{
	StringInfo	records;
	uint32		state_id;
} CollectArg;

static bool
collect_entry(void *arg, const MDB_val *lkey, const char *key, uint32 keylen,
			  const char *img, uint32 imglen)
{
	CollectArg *c = arg;

	lmdb_host->put_entry(c->records, c->state_id, key, keylen, img, imglen);
	return true;
}

/* Append the entries of key group kg of the states to collect. */
static void
snap_collect(int64 id, const StateInfo *states, const bool *collect, int nstates,
			 int key_group, StringInfo records)
{
	if (snap_txn == NULL)
		elog(ERROR, "state_backend_lmdb: a snapshot collects with no cut");
	for (int i = 0; i < nstates; i++)
	{
		char		prefix[LMDB_KEY_PREFIX];
		CollectArg	c = {records, states[i].id};

		if (!collect[i])
			continue;
		lmdb_key_prefix(prefix, states[i].id, key_group);
		lmdb_scan(snap_txn, prefix, sizeof(prefix), NULL, collect_entry, &c);
	}
}

const SnapshotStrategy lmdb_snapshot_strategy = {
	.prepare = snap_prepare,
	.after_cut = snap_after_cut,
	.collect = snap_collect,
	.release = snap_release,
};

/* ------------------------------------------------------------ the provider */

/*
 * At a start with fresh shared memory the states come back from the newest
 * checkpoint and logged states' WAL (as heap states do): what the
 * environment held is emptied first.  A worker that restarted alone finds
 * them live.
 */
static void
lmdb_worker_start(StateWorkerStart how)
{
	int			dead;

	if (how == STATE_WORKER_START_AGAIN)
		(void) mdb_reader_check(lmdb_env(), &dead);
	else
		lmdb_empty();
}

static void
lmdb_worker_stop(void)
{
	snap_release(0);
	lmdb_close();
}

static const StateBackendProvider lmdb_provider = {
	STATE_BACKEND_PROVIDER_BUILT("lmdb"),
	.id = LMDB_BACKEND_ID,
	.flags = STATE_PROVIDER_MEMORY_SNAPSHOTS | STATE_PROVIDER_STANDBY_READS,
	.ops = &lmdb_keyed_backend,
	.shmem_size = lmdb_reserve_shmem_size,
	.shmem_init = lmdb_reserve_shmem_init,
	.worker_start = lmdb_worker_start,
	.worker_stop = lmdb_worker_stop,
};

/* An aborted transaction leaves no LMDB transaction of this process open. */
static void
lmdb_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
	{
		lmdb_write_abort();
		lmdb_read_end();
	}
}

static shmem_request_hook_type prev_shmem_request_hook = NULL;

static void
lmdb_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	lmdb_writes_lock_request();
}

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("state_backend_lmdb must be loaded by shared_preload_libraries"),
				 errhint("Set shared_preload_libraries = 'state_backend,state_backend_lmdb' and restart the server.")));
	lmdb_define_settings();
	lmdb_host = state_backend_host_find();
	lmdb_host->register_backend(&lmdb_provider);
	RegisterXactCallback(lmdb_xact_callback, NULL);
	lmdb_reserve_init();
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = lmdb_shmem_request;
}
