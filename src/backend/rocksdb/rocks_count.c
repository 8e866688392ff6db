/*
 * backend/rocksdb/rocks_count.c
 *		Counting the keys of a native snapshot's states, on threads of the
 *		state worker's own, while the worker goes on serving sessions.
 *
 * A native snapshot names each state's entries (its MANIFEST, and
 * state.snapshot_states); RocksDB only estimates them, so the keys of each
 * family are counted on the snapshot's staging copy, which no request
 * writes.  Each state's key groups are cut into ranges (a key begins with
 * its key group, and a map's entries of one key share it), and threads take
 * the ranges one after the other, as many threads as the machine has cores
 * (at most COUNT_MAX_THREADS).  The threads run RocksDB's iterator and
 * plain C only, never PostgreSQL code, and start with every signal blocked.
 * Meanwhile the worker serves sessions (rocks_host->yield), passes the
 * fault point checkpoint.rocksdb_count as the count of a state passes its
 * first entry and every COUNT_ARRIVAL entries after it, and, if the
 * snapshot is cancelled or fails, stops the threads and waits for them
 * before it raises the error.
 */
#include "postgres.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/wait_event.h"

#include "rocks_internal.h"

#define COUNT_RANGES_PER_STATE	8	/* key-group ranges of one state */
#define COUNT_MAX_THREADS		8
#define COUNT_STEP				4096	/* entries between looks at stop */
#define COUNT_ARRIVAL			65536	/* entries between fault points */
#define COUNT_KEY_HDR			(sizeof(uint16) + sizeof(uint32))

typedef struct CountRange
{
	rocksdb_column_family_handle_t *cf;
	bool		map;			/* count a map's keys, not its entries */
	int			state;			/* index of the caller's state */
	uint16		first;			/* key groups [first, last] */
	uint16		last;
	int64		keys;			/* set by the thread once done */
	uint64		seen;			/* entries so far (atomic) */
	int			done;			/* set by the thread (atomic) */
	char	   *err;			/* RocksDB's error (its malloc), or NULL */
	bool		corrupt;		/* a key too short for its own header */
	bool		oom;			/* no memory for a map's key */
} CountRange;

typedef struct CountRun
{
	rocksdb_t  *db;
	rocksdb_readoptions_t *ropts;
	CountRange *ranges;
	int			nranges;
	int			next;			/* the next range a thread takes (atomic) */
	int			stop;			/* set by the worker: end now (atomic) */
} CountRun;

/* The length of the part of a RocksDB key that names its state key, or 0. */
static size_t
prefix_len(const char *k, size_t klen)
{
	uint32		len;

	if (klen < COUNT_KEY_HDR)
		return 0;
	memcpy(&len, k + sizeof(uint16), sizeof(uint32));
	len = pg_ntoh32(len);
	if (len > klen - COUNT_KEY_HDR)
		return 0;
	return COUNT_KEY_HDR + len;
}

/* Count one range.  On a thread: RocksDB and plain C only. */
static void
count_range(CountRun *run, CountRange *r)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(run->db, run->ropts, r->cf);
	uint16		lo = pg_hton16(r->first);
	uint16		hi = pg_hton16((uint16) (r->last + 1));
	bool		to_end = r->last == PG_UINT16_MAX;
	char	   *prev = NULL;
	size_t		prevlen = 0;
	size_t		prevcap = 0;
	uint64		seen = 0;

	for (rocksdb_iter_seek(it, (const char *) &lo, sizeof(lo));
		 rocksdb_iter_valid(it); rocksdb_iter_next(it))
	{
		size_t		klen;
		const char *k = rocksdb_iter_key(it, &klen);

		if (klen < sizeof(hi))
		{
			r->corrupt = true;
			break;
		}
		if (!to_end && memcmp(k, &hi, sizeof(hi)) >= 0)
			break;
		if (++seen % COUNT_STEP == 0)
		{
			__atomic_store_n(&r->seen, seen, __ATOMIC_RELAXED);
			if (__atomic_load_n(&run->stop, __ATOMIC_RELAXED))
				break;
		}
		if (r->map)
		{
			size_t		len = prefix_len(k, klen);

			if (len == 0)
			{
				r->corrupt = true;
				break;
			}
			if (prev != NULL && prevlen == len && memcmp(prev, k, len) == 0)
				continue;
			if (len > prevcap)
			{
				char	   *bigger = realloc(prev, len * 2);

				if (bigger == NULL)
				{
					r->oom = true;
					break;
				}
				prev = bigger;
				prevcap = len * 2;
			}
			memcpy(prev, k, len);
			prevlen = len;
		}
		r->keys++;
	}
	__atomic_store_n(&r->seen, seen, __ATOMIC_RELAXED);
	rocksdb_iter_get_error(it, &r->err);
	rocksdb_iter_destroy(it);
	free(prev);
}

static void *
count_main(void *arg)
{
	CountRun   *run = arg;

	for (;;)
	{
		int			i = __atomic_fetch_add(&run->next, 1, __ATOMIC_ACQ_REL);

		if (i >= run->nranges)
			break;
		if (!__atomic_load_n(&run->stop, __ATOMIC_RELAXED))
			count_range(run, &run->ranges[i]);
		__atomic_store_n(&run->ranges[i].done, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/*
 * The count under way, for the worker's exit: a process that exits (FATAL)
 * while its threads count stops them and waits for them before RocksDB's
 * staging copy, which they read, is closed.
 */
static CountRun *active_run = NULL;
static pthread_t *active_threads = NULL;
static volatile int *active_nthreads = NULL;
static bool exit_registered = false;

/* Stop the threads of a count and wait for them. */
static void
count_stop(CountRun *run, pthread_t *threads, int nthreads)
{
	__atomic_store_n(&run->stop, 1, __ATOMIC_RELAXED);
	for (int t = 0; t < nthreads; t++)
		(void) pthread_join(threads[t], NULL);
	active_run = NULL;
}

static void
count_at_exit(int code, Datum arg)
{
	if (active_run)
		count_stop(active_run, active_threads, *active_nthreads);
}

/* The fault point's arrivals for a state whose count has seen this many entries. */
static int64
arrivals(uint64 seen)
{
	return seen == 0 ? 0 : (int64) ((seen - 1) / COUNT_ARRIVAL) + 1;
}

/*
 * Serve sessions, and pass the fault point for each state whose count went
 * past another COUNT_ARRIVAL entries (seen: room for each state's count).
 * Returns whether every range is done.
 */
static bool
count_progress(CountRun *run, int nstates, int64 *passed, uint64 *seen)
{
	bool		all_done = true;

	memset(seen, 0, sizeof(uint64) * nstates);
	for (int i = 0; i < run->nranges; i++)
	{
		CountRange *r = &run->ranges[i];

		all_done &= __atomic_load_n(&r->done, __ATOMIC_ACQUIRE) != 0;
		seen[r->state] += __atomic_load_n(&r->seen, __ATOMIC_RELAXED);
	}
	for (int s = 0; s < nstates; s++)
		while (passed[s] < arrivals(seen[s]))
		{
			rocks_host->yield();
			FAULT_POINT_HOST("checkpoint.rocksdb_count");
			passed[s]++;
		}
	rocks_host->yield();
	return all_done;
}

/*
 * rocks_count_families counts the keys (a map's keys, not its entries) of
 * the families cfs[0 .. n-1] of db, which no request writes, into
 * entries[].  maps[] tells which are map states'.  Sessions are served
 * meanwhile.
 */
void
rocks_count_families(rocksdb_t *db, rocksdb_readoptions_t *ropts,
					 rocksdb_column_family_handle_t *const *cfs, const bool *maps,
					 int n, int64 *entries)
{
	int			groups = Max(*rocks_host->max_parallelism, 1);
	int			per_state = Min(COUNT_RANGES_PER_STATE, groups);
	long		cores = sysconf(_SC_NPROCESSORS_ONLN);
	CountRun	run;
	pthread_t	threads[COUNT_MAX_THREADS];
	volatile int nthreads = 0;	/* read after a longjmp */
	int64	   *passed = palloc0(sizeof(int64) * Max(n, 1));
	uint64	   *seen = palloc(sizeof(uint64) * Max(n, 1));

	memset(&run, 0, sizeof(run));
	run.db = db;
	run.ropts = ropts;
	run.ranges = palloc0(sizeof(CountRange) * Max(n * per_state, 1));
	for (int s = 0; s < n; s++)
	{
		entries[s] = 0;
		for (int p = 0; p < per_state; p++)
		{
			CountRange *r = &run.ranges[run.nranges++];

			r->cf = cfs[s];
			r->map = maps[s];
			r->state = s;
			r->first = (uint16) ((int64) groups * p / per_state);
			/* The last range runs to the end: keys of no key group count too. */
			r->last = p == per_state - 1 ? PG_UINT16_MAX :
				(uint16) ((int64) groups * (p + 1) / per_state - 1);
		}
	}
	if (run.nranges == 0)
		return;
	if (!exit_registered)
	{
		before_shmem_exit(count_at_exit, (Datum) 0);
		exit_registered = true;
	}
	active_run = &run;
	active_threads = threads;
	active_nthreads = &nthreads;

	PG_TRY();
	{
		sigset_t	saved;
		int			want = (int) Min(Min((long) run.nranges, Max(cores, 1)), COUNT_MAX_THREADS);

		rocks_block_signals(&saved);
		while (nthreads < want)
		{
			int			rc = pthread_create(&threads[nthreads], NULL, count_main, &run);

			if (rc != 0)
			{
				rocks_restore_signals(&saved);
				if (nthreads > 0)
					break;		/* the threads there are count it all */
				ereport(ERROR,
						(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
						 errmsg("could not start a thread to count the keys of rocksdb states: %s",
								strerror(rc))));
			}
			nthreads++;
		}
		rocks_restore_signals(&saved);
		while (!count_progress(&run, n, passed, seen))
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1,
							 PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
	}
	PG_CATCH();
	{
		count_stop(&run, threads, nthreads);
		for (int i = 0; i < run.nranges; i++)
			if (run.ranges[i].err)
				rocksdb_free(run.ranges[i].err);
		PG_RE_THROW();
	}
	PG_END_TRY();
	count_stop(&run, threads, nthreads);

	for (int i = 0; i < run.nranges; i++)
	{
		CountRange *r = &run.ranges[i];

		if (r->oom)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory"),
					 errdetail("Counting the keys of a rocksdb state for a snapshot failed.")));
		if (r->corrupt)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("a rocksdb key of a snapshot's copy is too short to be a state's key")));
		rocks_check(r->err, "count");
		entries[r->state] += r->keys;
	}
	pfree(run.ranges);
	pfree(passed);
	pfree(seen);
}
