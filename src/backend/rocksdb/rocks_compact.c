/*
 * backend/rocksdb/rocks_compact.c
 *		state.compact() on a rocksdb state: a full compaction of its column
 *		family, so that the TTL compaction filter (rocks_ttl.c) drops what
 *		expired and the files shrink.
 *
 * A compaction of a big family takes long, and the state worker serves
 * every session's rocksdb calls: it starts the compaction on a thread of
 * its own and goes on serving, while the session that asked polls until
 * it is done.  One compaction runs at a time.  The thread makes a single
 * RocksDB call and sets a flag; it runs nothing of PostgreSQL's, and
 * starts with every signal blocked.  A family is never dropped, nor the
 * instance closed, under a running compaction: both wait for it
 * (rocks_compact_forget), after telling RocksDB to stop it.
 */
#include "postgres.h"

#include <pthread.h>

#include "backend/rocksdb/rocks_internal.h"

typedef struct CompactJob
{
	bool		started;		/* a thread runs or has not been joined */
	uint32		id;				/* the state it compacts */
	rocksdb_column_family_handle_t *cf;
	pthread_t	thread;
	int			done;			/* set by the thread (atomically) */
} CompactJob;

static CompactJob job;

static void *
compact_main(void *arg)
{
	rocksdb_compact_range_cf(rocks.db, job.cf, NULL, 0, NULL, 0);
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
 * id's family cf; returns ROCKS_COMPACT_DONE when none runs for the state,
 * ROCKS_COMPACT_RUNNING when it runs, ROCKS_COMPACT_BUSY when another
 * state's compaction runs (start again later).
 */
int
rocks_compact_request(uint32 id, rocksdb_column_family_handle_t *cf, bool start)
{
	sigset_t	saved;
	int			rc;

	compact_reap(false);
	if (job.started)
		return job.id == id ? ROCKS_COMPACT_RUNNING : start ? ROCKS_COMPACT_BUSY : ROCKS_COMPACT_DONE;
	if (!start)
		return ROCKS_COMPACT_DONE;
	rocks_commit();
	job.id = id;
	job.cf = cf;
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
		rocksdb_disable_manual_compaction(rocks.db);
	compact_reap(true);
	if (id == 0)
		rocksdb_enable_manual_compaction(rocks.db);
}
