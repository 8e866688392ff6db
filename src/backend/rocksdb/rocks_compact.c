/*
 * backend/rocksdb/rocks_compact.c
 *		The compactions state.compact() asks for, on a thread of the state
 *		worker's own.
 */
#include "postgres.h"

#include <pthread.h>
#include <signal.h>

#include "rocks_internal.h"

/*
 * Compactions that state.compact() asks for (a full compaction of a
 * family, so that the TTL compaction filter, rocks_ttl.c, drops what
 * expired) run on a thread of the worker's own, one at a time, while the
 * worker goes on serving; the session that asked polls until it is done.
 * The thread makes a single RocksDB call and sets a flag; it runs nothing
 * of PostgreSQL's, and starts with every signal blocked.  A family is never
 * dropped, nor the instance closed, under a running compaction: both wait
 * for it (rocks_compact_forget), after telling RocksDB to stop it.
 */
typedef struct CompactJob
{
	bool		started;		/* a thread runs or has not been joined */
	uint32		id;				/* the state it compacts */
	rocksdb_t  *db;
	rocksdb_column_family_handle_t *cf;
	bool		twice;			/* a second pass (see compact_main) */
	pthread_t	thread;
	int			done;			/* set by the thread (atomically) */
} CompactJob;

static CompactJob job;

/*
 * The compaction thread.  RocksDB's C API runs a compaction filter on
 * values, not on merge operands: a list's appended elements reach it only
 * once a compaction has merged them into the value, so a list with a TTL
 * is compacted twice, the second pass dropping what expired among them.
 * (A pass after RocksDB was told to stop returns at once.)
 */
static void *
compact_main(void *arg)
{
	rocksdb_compact_range_cf(job.db, job.cf, NULL, 0, NULL, 0);
	if (job.twice)
		rocksdb_compact_range_cf(job.db, job.cf, NULL, 0, NULL, 0);
	__atomic_store_n(&job.done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Join the thread if it is done, or (wait) whatever it does. */
static void
compact_reap(bool wait)
{
	if (!job.started || (!wait && !__atomic_load_n(&job.done, __ATOMIC_ACQUIRE)))
		return;
	(void) pthread_join(job.thread, NULL);
	job.started = false;
}

/*
 * rocks_compact_request starts (start) or looks at the compaction of state
 * id's family cf of db, whose writes the caller has committed; returns ROCKS_COMPACT_DONE when none runs for the state,
 * ROCKS_COMPACT_RUNNING when it runs, ROCKS_COMPACT_BUSY when another
 * state's compaction runs (start again later).
 */
int
rocks_compact_request(rocksdb_t *db, uint32 id, rocksdb_column_family_handle_t *cf, bool start,
					  bool twice)
{
	sigset_t	saved;
	int			rc;

	compact_reap(false);
	if (job.started)
		return job.id == id ? ROCKS_COMPACT_RUNNING : start ? ROCKS_COMPACT_BUSY : ROCKS_COMPACT_DONE;
	if (!start)
		return ROCKS_COMPACT_DONE;
	job.id = id;
	job.db = db;
	job.cf = cf;
	job.twice = twice;
	job.done = 0;
	rocks_block_signals(&saved);
	rc = pthread_create(&job.thread, NULL, compact_main, NULL);
	rocks_restore_signals(&saved);
	if (rc != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not start a thread to compact a rocksdb state: %s", strerror(rc))));
	job.started = true;
	return ROCKS_COMPACT_RUNNING;
}

/*
 * rocks_compact_forget waits for a running compaction before its family's
 * handle goes (id), or before the instance closes (id 0).  The family or
 * instance is told to stop first: RocksDB then ends the compaction early.
 */
void
rocks_compact_forget(uint32 id)
{
	if (!job.started || (id != 0 && job.id != id))
		return;
	if (id == 0)
		rocksdb_disable_manual_compaction(job.db);
	compact_reap(true);
	if (id == 0)
		rocksdb_enable_manual_compaction(job.db);
}
