/*
 * backend/rocksdb/rocks_view.c
 *		Sessions that read rocksdb states in place: each session that reads
 *		a lot opens the state worker's RocksDB instance as a secondary
 *		instance of its own (a read-only view that follows the worker's log
 *		and files), and reads from it every key the worker has not changed
 *		since the view last caught up.  The rest is asked of the worker.
 *
 * A round trip to the worker costs two process wake-ups, and on a machine
 * with few cores those wake-ups, not RocksDB, set the pace of reads; a
 * read in the session costs none, and sessions read on every core at once.
 *
 * Why a read in place is never older than an acknowledged write.  The
 * worker counts its write batches: "epoch" is the number of the last one
 * in RocksDB.  Before a write of a key joins a batch (or, for a change of
 * a whole state, before it is acknowledged) the worker marks the key's
 * bucket, an entry of a shared array chosen by a hash of the state and the
 * key, with the number of the batch that will carry it (epoch + 1), or
 * marks every key at once ("barrier"); only after the batch is in RocksDB
 * does it publish epoch + 1.  When a flush of every family ends, the
 * batches up to the epoch it began at are in table files ("flushed").  A
 * view that read flushed as E before it opened or caught up holds every
 * batch up to E.  A session reads a key in place only if neither the key's
 * bucket nor the barrier is above E: any write acknowledged before the
 * read began was marked before it was acknowledged, with a number above E
 * if the view does not hold it.  A view answers from table files alone,
 * never from what it replayed of the worker's log: RocksDB 7.8's secondary
 * instance has been seen to miss there what the worker wrote to a family
 * made after the log began, and a range deletion, under a slow enough
 * machine (a run under Valgrind); a key written since the worker's last
 * flush (it flushes idle memtables after five seconds, and for every
 * snapshot) is asked of the worker.  Keys
 * sharing a bucket only send reads to the worker that could have been made
 * here.  A view catches up at most every VIEW_CATCH_UP_MS (a catch-up reads
 * RocksDB's manifest and log, about a millisecond); meanwhile reads of keys
 * changed since are asked of the worker.
 *
 * A catch-up that finds a table file the view did not have (the worker
 * flushed a memtable, or compacted) closes the view instead: RocksDB 7.8's
 * secondary instance keeps in its memtable the entries it replayed from a
 * log the primary has since flushed, and they hide newer values of the
 * same keys in the flushed file (RocksDB issues 14444 and 15051).  A view
 * whose files did not change holds no such entry.  The view opens again
 * a second later, on the files as they are; meanwhile the worker answers.
 *
 * A view keeps every file it reads open, and with it the room of files the
 * worker has since deleted.  The worker looks at its files twice a second
 * and counts the changes ("files"); a view whose files changed is closed
 * at the end of the session's transaction, so a session holds deleted files
 * only while it runs a transaction, or sits idle after one (as PostgreSQL's
 * own backends hold a dropped table's files until their next command).
 *
 * The worker bumps "generation" whenever it opens or closes its instance
 * (a start, a restore) or drops a column family (a view would go on reading
 * a dropped family); a view of another generation is closed and opened
 * again.  A view holds the column families that existed when it opened; a
 * state created later makes it open again, at most once a second.  Any
 * error of RocksDB in a session closes the view and the read is asked of
 * the worker: a view is never more than a faster way to the same answer.
 *
 * A session opens its view only after it has asked the worker
 * state_backend.rocksdb_session_reads_after reads (opening one costs a
 * fraction of a second), never
 * in the state worker, and never while it has posted writes the worker
 * has not carried out (those reads go to the worker, which has them).
 * The view's memory is its own block cache
 * (state_backend.rocksdb_session_cache_size), RocksDB's memtables replayed
 * from the worker's live logs (up to twice rocksdb_write_buffer_size), and
 * one open file per table file.
 */
#include "postgres.h"

#include <sys/stat.h>

#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "rocks_internal.h"

#define VIEW_BUCKETS		(1 << 18)	/* 2 MB of shared memory */
#define VIEW_CATCH_UP_MS	100
#define VIEW_RETRY_MS		1000	/* after a failure, or to see a new state */

typedef struct ViewShared
{
	pg_atomic_uint64 epoch;		/* the last write batch in RocksDB */
	pg_atomic_uint64 flushed;	/* the last batch in table files */
	pg_atomic_uint64 barrier;	/* every key was changed by this batch */
	pg_atomic_uint32 generation;	/* the worker's instance opened or closed */
	pg_atomic_uint64 files;		/* the worker's table files changed */
	pg_atomic_uint64 reads;		/* reads made in sessions' views */
	pg_atomic_uint64 opens;		/* views opened */
	pg_atomic_uint64 catch_ups;	/* views caught up */
	pg_atomic_uint64 buckets[VIEW_BUCKETS];	/* last batch that wrote a key here */
} ViewShared;

static ViewShared *view_shared = NULL;

/* The worker: something was marked since the last epoch was published. */
static bool marked = false;

/* A session's view. */
typedef struct SessionView
{
	rocksdb_t  *db;
	int			nfamilies;
	uint32	   *ids;			/* the state of each family (0: none) */
	rocksdb_column_family_handle_t **handles;
	uint32		generation;
	uint64		epoch;			/* every batch up to this one is in the view */
	uint64		files;			/* a digest of the table files it reads */
	uint64		files_seen;		/* the worker's count of changes when it caught up */
	TimestampTz caught_up_at;
	TimestampTz opened_at;
	TimestampTz failed_at;
	uint64		asked;			/* reads asked of the worker */
	uint64		reads;			/* made here, not yet added to the shared count */
	uint64		catch_ups;
} SessionView;

static SessionView view;

static uint64 files_digest(rocksdb_t *db);
static void view_close(void);
static rocksdb_options_t *view_options = NULL;
static rocksdb_readoptions_t *view_ropts = NULL;

Size
rocks_view_shmem_size(void)
{
	return sizeof(ViewShared);
}

void
rocks_view_shmem_init(void)
{
	bool		found;

	view_shared = ShmemInitStruct("state_backend rocksdb views", sizeof(ViewShared), &found);
	if (found)
		return;
	pg_atomic_init_u64(&view_shared->epoch, 1);
	pg_atomic_init_u64(&view_shared->flushed, 0);
	pg_atomic_init_u64(&view_shared->barrier, 1);
	pg_atomic_init_u32(&view_shared->generation, 0);
	pg_atomic_init_u64(&view_shared->files, 0);
	pg_atomic_init_u64(&view_shared->reads, 0);
	pg_atomic_init_u64(&view_shared->opens, 0);
	pg_atomic_init_u64(&view_shared->catch_ups, 0);
	for (int i = 0; i < VIEW_BUCKETS; i++)
		pg_atomic_init_u64(&view_shared->buckets[i], 0);
}

static pg_atomic_uint64 *
bucket_of(uint32 state_id, uint32 key_hash)
{
	return &view_shared->buckets[rocks_key_slot(state_id, key_hash) % VIEW_BUCKETS];
}

/*
 * rocks_view_mark_key (worker only): a write of this key is about to join
 * the write batch.
 */
void
rocks_view_mark_key(uint32 state_id, const char *key, uint32 keylen)
{
	if (view_shared == NULL)
		return;
	pg_atomic_write_u64(bucket_of(state_id, rocks_host->key_hash(key, keylen)),
						pg_atomic_read_u64(&view_shared->epoch) + 1);
	marked = true;
}

/*
 * rocks_view_mark_all (worker only): a change of a whole state, or of the
 * instance, that is acknowledged only after the next publish.
 */
void
rocks_view_mark_all(void)
{
	if (view_shared == NULL)
		return;
	pg_atomic_write_u64(&view_shared->barrier, pg_atomic_read_u64(&view_shared->epoch) + 1);
	marked = true;
}

/*
 * rocks_view_publish (worker only): what was marked is in RocksDB.  Called
 * after every write of a batch, and before any reply that acknowledges it.
 */
void
rocks_view_publish(void)
{
	if (view_shared == NULL || !marked)
		return;
	pg_memory_barrier();
	pg_atomic_write_u64(&view_shared->epoch, pg_atomic_read_u64(&view_shared->epoch) + 1);
	marked = false;
}

/* rocks_view_epoch (worker only): the last batch published. */
uint64
rocks_view_epoch(void)
{
	return view_shared ? pg_atomic_read_u64(&view_shared->epoch) : 0;
}

/*
 * rocks_view_flushed (worker only): every batch up to "epoch" is in table
 * files (a flush of every family ended).
 */
void
rocks_view_flushed(uint64 epoch)
{
	if (view_shared == NULL || epoch <= pg_atomic_read_u64(&view_shared->flushed))
		return;
	pg_memory_barrier();
	pg_atomic_write_u64(&view_shared->flushed, epoch);
}

/*
 * rocks_view_new_instance (worker only): the instance opened or closed, or
 * a column family was dropped; every view must open again.
 */
void
rocks_view_new_instance(void)
{
	if (view_shared == NULL)
		return;
	rocks_view_mark_all();
	pg_atomic_fetch_add_u32(&view_shared->generation, 1);
	rocks_view_publish();
}

/*
 * rocks_view_worker_round (worker only), between rounds: twice a second,
 * whether the instance's table files changed since it last looked.
 */
void
rocks_view_worker_round(rocksdb_t *db)
{
	static TimestampTz last = 0;
	static uint64 digest = 0;
	TimestampTz now;
	uint64		d;

	if (view_shared == NULL || db == NULL)
		return;
	now = GetCurrentTimestamp();
	if (!TimestampDifferenceExceeds(last, now, 500))
		return;
	last = now;
	d = files_digest(db);
	if (d != digest)
	{
		digest = d;
		pg_atomic_fetch_add_u64(&view_shared->files, 1);
	}
}

/*
 * rocks_view_xact_end, at the end of a session's transaction: a view whose
 * files the worker changed since it caught up is closed, so that an idle
 * session does not keep deleted files.
 */
void
rocks_view_xact_end(void)
{
	if (view.db && pg_atomic_read_u64(&view_shared->files) != view.files_seen)
		view_close();
}

/* The figures of state.worker: reads in place, views opened and caught up. */
void
rocks_view_figures(int64 *reads, int64 *opens, int64 *catch_ups)
{
	rocks_view_flush_counts();
	*reads = view_shared ? (int64) pg_atomic_read_u64(&view_shared->reads) : 0;
	*opens = view_shared ? (int64) pg_atomic_read_u64(&view_shared->opens) : 0;
	*catch_ups = view_shared ? (int64) pg_atomic_read_u64(&view_shared->catch_ups) : 0;
}

/* A session's counts go to shared memory once per statement. */
void
rocks_view_flush_counts(void)
{
	if (view_shared == NULL)
		return;
	rocks_cache_flush_counts();
	if (view.reads > 0)
		pg_atomic_fetch_add_u64(&view_shared->reads, view.reads);
	if (view.catch_ups > 0)
		pg_atomic_fetch_add_u64(&view_shared->catch_ups, view.catch_ups);
	view.reads = 0;
	view.catch_ups = 0;
}

static void
view_close(void)
{
	sigset_t	saved;

	if (view.db == NULL)
		return;
	rocks_block_signals(&saved);
	for (int i = 0; i < view.nfamilies; i++)
		rocksdb_column_family_handle_destroy(view.handles[i]);
	rocksdb_close(view.db);
	rocks_restore_signals(&saved);
	pfree(view.handles);
	pfree(view.ids);
	view.db = NULL;
	view.nfamilies = 0;
	view.handles = NULL;
	view.ids = NULL;
}

static void
view_fail(const char *what, char *err)
{
	elog(DEBUG1, "state_backend: rocksdb view of this session: %s: %s", what, err ? err : "");
	if (err)
		rocksdb_free(err);
	view_close();
	view.failed_at = GetCurrentTimestamp();
}

static void
view_exit(int code, Datum arg)
{
	rocks_view_flush_counts();
	view_close();
}

/* The options every view opens with: its own cache, the list merge operator. */
static void
view_make_options(void)
{
	rocksdb_block_based_table_options_t *table;

	view_options = rocksdb_options_create();
	table = rocksdb_block_based_options_create();
	rocksdb_block_based_options_set_block_cache(table,
												rocksdb_cache_create_lru((size_t) state_backend_rocksdb_session_cache_mb * 1024 * 1024));
	rocks_table_options(table);
	rocksdb_options_set_block_based_table_factory(view_options, table);
	rocksdb_options_set_merge_operator(view_options, rocks_list_merge_operator());
	/* Keeps every table file open: the worker may delete one a view still reads. */
	rocksdb_options_set_max_open_files(view_options, -1);
	rocksdb_options_set_info_log_level(view_options, 3);	/* errors */
	rocksdb_options_set_keep_log_file_num(view_options, 1);
	rocksdb_options_set_stats_dump_period_sec(view_options, 0);
	view_ropts = rocksdb_readoptions_create();
	before_shmem_exit(view_exit, 0);
}

/* Where a session's view keeps its own files: one folder per backend slot. */
static char *
view_path(void)
{
	char	   *parent = psprintf("%s.sessions", state_backend_rocksdb_dir);
	char	   *path = psprintf("%s/%d", parent, MyProc->pgprocno);

	if (MakePGDirectory(parent) != 0 && errno != EEXIST)
		elog(DEBUG1, "state_backend: could not create directory \"%s\": %m", parent);
	if (MakePGDirectory(path) != 0 && errno != EEXIST)
		elog(DEBUG1, "state_backend: could not create directory \"%s\": %m", path);
	pfree(parent);
	return path;
}

/* A digest of the names of the table files of an instance. */
static uint64
files_digest(rocksdb_t *db)
{
	const rocksdb_livefiles_t *lf = rocksdb_livefiles(db);
	uint64		digest;
	int			n;

	if (lf == NULL)
		return 0;
	n = rocksdb_livefiles_count(lf);
	digest = (uint64) n;
	for (int i = 0; i < n; i++)
	{
		const char *name = rocksdb_livefiles_name(lf, i);

		digest += hash_bytes_extended((const unsigned char *) name, (int) strlen(name),
									  (uint64) i + 1) | 1;
	}
	rocksdb_livefiles_destroy(lf);
	return digest;
}

static bool
view_open(void)
{
	char	   *err = NULL;
	char	   *path;
	size_t		n = 0;
	char	  **names;
	const rocksdb_options_t **opts;
	rocksdb_column_family_handle_t **handles;
	rocksdb_t  *db;
	sigset_t	saved;
	uint64		epoch;

	if (view_options == NULL)
		view_make_options();
	view.generation = pg_atomic_read_u32(&view_shared->generation);
	view.files_seen = pg_atomic_read_u64(&view_shared->files);
	epoch = pg_atomic_read_u64(&view_shared->flushed);
	pg_read_barrier();
	names = rocksdb_list_column_families(view_options, state_backend_rocksdb_dir, &n, &err);
	if (err)
	{
		view_fail("list column families", err);
		return false;
	}
	path = view_path();
	opts = palloc(sizeof(*opts) * Max(n, 1));
	for (size_t i = 0; i < n; i++)
		opts[i] = view_options;
	handles = MemoryContextAllocZero(TopMemoryContext, sizeof(*handles) * Max(n, 1));
	rocks_block_signals(&saved);
	db = rocksdb_open_as_secondary_column_families(view_options, state_backend_rocksdb_dir,
												   path, (int) n,
												   (const char *const *) names, opts,
												   handles, &err);
	rocks_restore_signals(&saved);
	pfree(opts);
	pfree(path);
	if (err)
	{
		rocksdb_list_column_families_destroy(names, n);
		pfree(handles);
		view_fail("open", err);
		return false;
	}
	/* A family is found by its state's id (rocks_family_name). */
	view.ids = MemoryContextAllocZero(TopMemoryContext, sizeof(uint32) * Max(n, 1));
	for (size_t i = 0; i < n; i++)
		if (!rocks_family_id(names[i], &view.ids[i]))
			view.ids[i] = 0;
	rocksdb_list_column_families_destroy(names, n);
	view.db = db;
	view.handles = handles;
	view.nfamilies = (int) n;
	view.epoch = epoch;
	view.files = files_digest(view.db);
	view.opened_at = view.caught_up_at = GetCurrentTimestamp();
	pg_atomic_fetch_add_u64(&view_shared->opens, 1);
	return true;
}

static bool
view_catch_up(TimestampTz now)
{
	char	   *err = NULL;
	sigset_t	saved;
	uint64		files_seen = pg_atomic_read_u64(&view_shared->files);
	uint64		epoch = pg_atomic_read_u64(&view_shared->flushed);

	pg_read_barrier();
	rocks_block_signals(&saved);
	rocksdb_try_catch_up_with_primary(view.db, &err);
	rocks_restore_signals(&saved);
	view.caught_up_at = now;
	if (err)
	{
		view_fail("catch up", err);
		return false;
	}
	if (files_digest(view.db) != view.files)
	{
		/* Flushed or compacted: opened again, on the files as they are. */
		view_close();
		view.failed_at = now;
		return false;
	}
	view.epoch = epoch;
	view.files_seen = files_seen;
	view.catch_ups++;
	return true;
}

static rocksdb_column_family_handle_t *
view_family(const StateInfo *info)
{
	for (int i = 0; i < view.nfamilies; i++)
		if (view.ids[i] == info->id)
			return view.handles[i];
	return NULL;
}

/*
 * view_ready: whether this session may read the key in place now, opening
 * or catching up its view when it must and may.
 */
static bool
view_ready(uint32 state_id, uint32 key_hash)
{
	TimestampTz now;
	uint64		changed;

	if (!state_backend_rocksdb_session_reads || view_shared == NULL ||
		rocks_host->in_worker() || !rocks_host->posts_applied())
		return false;
	if (view.db && pg_atomic_read_u32(&view_shared->generation) != view.generation)
		view_close();
	if (view.db == NULL)
	{
		if (view.asked++ < (uint64) state_backend_rocksdb_session_reads_after)
			return false;
		now = GetCurrentTimestamp();
		if (view.failed_at != 0 && !TimestampDifferenceExceeds(view.failed_at, now, VIEW_RETRY_MS))
			return false;
		if (!view_open())
			return false;
	}
	changed = Max(pg_atomic_read_u64(&view_shared->barrier),
				  pg_atomic_read_u64(bucket_of(state_id, key_hash)));
	if (changed <= view.epoch)
		return true;
	/* Only a flush since the view caught up can bring the key into it. */
	if (changed > pg_atomic_read_u64(&view_shared->flushed))
		return false;
	now = GetCurrentTimestamp();
	if (!TimestampDifferenceExceeds(view.caught_up_at, now, VIEW_CATCH_UP_MS) ||
		!view_catch_up(now))
		return false;
	if (pg_atomic_read_u32(&view_shared->generation) != view.generation)
		return false;
	changed = Max(pg_atomic_read_u64(&view_shared->barrier),
				  pg_atomic_read_u64(bucket_of(state_id, key_hash)));
	return changed <= view.epoch;
}

/*
 * view_lookup reads a key of a state in place (with mkey, one entry of a
 * map state's key): the stored value in *value (rocksdb_free it), or
 * ROCKS_VIEW_ASK when the worker must be asked instead.
 */
static RocksViewResult
view_lookup(const StateInfo *info, const StateKey *key, const char *mkey, uint32 mkeylen,
			char **value, size_t *vlen)
{
	rocksdb_column_family_handle_t *cf;
	StringInfoData rkey;
	char	   *err = NULL;

	*value = NULL;
	if (!view_ready(info->id, key->hash))
		return ROCKS_VIEW_ASK;
	cf = view_family(info);
	if (cf == NULL)
	{
		/* A state newer than the view: open it again, now and then. */
		if (TimestampDifferenceExceeds(view.opened_at, GetCurrentTimestamp(), VIEW_RETRY_MS))
			view_close();
		return ROCKS_VIEW_ASK;
	}
	initStringInfo(&rkey);
	rocks_key(&rkey, key->key_group, key->data, key->len);
	if (mkey)
	{
		StringInfoData prefix = rkey;

		initStringInfo(&rkey);
		rocks_map_key(&rkey, &prefix, mkey, mkeylen);
		pfree(prefix.data);
	}
	*value = rocksdb_get_cf(view.db, view_ropts, cf, rkey.data, rkey.len, vlen, &err);
	pfree(rkey.data);
	if (err)
	{
		view_fail("read", err);
		return ROCKS_VIEW_ASK;
	}
	view.reads++;
	return *value ? ROCKS_VIEW_FOUND : ROCKS_VIEW_ABSENT;
}

/*
 * view_unchanged: whether the view still holds a key as RocksDB does (the
 * test view_ready made before the read, made again).  rocks_cache_fill asks
 * it with the key's set of the shared cache in hand.
 */
static bool
view_unchanged(uint32 state_id, uint32 key_hash)
{
	return view.db != NULL &&
		pg_atomic_read_u32(&view_shared->generation) == view.generation &&
		Max(pg_atomic_read_u64(&view_shared->barrier),
			pg_atomic_read_u64(bucket_of(state_id, key_hash))) <= view.epoch;
}

/*
 * What a view read of an entry goes to the shared cache, for every
 * session's next read of it (a map entry as RocksDB stores it).
 */
static void
view_fill(const StateInfo *info, const StateKey *key, const char *mkey, uint32 mkeylen,
		  RocksViewResult r, const char *stored, uint32 len)
{
	RocksCacheKey ck;

	if (r == ROCKS_VIEW_ASK || !rocks_cache_serves(info))
		return;
	rocks_cache_key(&ck, info->id, key->data, key->len, key->hash, mkey, mkeylen);
	/* Between the read and the store, where a write may come. */
	FAULT_POINT_HOST("write.rocksdb_cache_fill");
	rocks_cache_fill(&ck, r == ROCKS_VIEW_FOUND ? stored : NULL, len, view_unchanged);
}

/*
 * rocks_view_get reads a key of a state that is not a map (its image to
 * out) in this session's view, or returns ROCKS_VIEW_ASK.
 */
RocksViewResult
rocks_view_get(const StateInfo *info, const StateKey *key, StringInfo out)
{
	char	   *v;
	size_t		vlen = 0;
	RocksViewResult r = view_lookup(info, key, NULL, 0, &v, &vlen);

	resetStringInfo(out);
	if (v)
	{
		appendBinaryStringInfo(out, v, vlen);
		rocksdb_free(v);
	}
	view_fill(info, key, NULL, 0, r, out->data, (uint32) out->len);
	return r;
}

/*
 * rocks_view_map_get reads one entry of a map state's key in this
 * session's view: its value to out and whether it is NULL, or returns
 * ROCKS_VIEW_ASK.
 */
RocksViewResult
rocks_view_map_get(const StateInfo *info, const StateKey *key, const char *mkey,
				   uint32 mkeylen, StringInfo out, bool *isnull)
{
	char	   *v;
	size_t		vlen = 0;
	RocksViewResult r = view_lookup(info, key, mkey, mkeylen, &v, &vlen);

	resetStringInfo(out);
	*isnull = false;
	if (v)
	{
		appendBinaryStringInfo(out, v, vlen);
		rocksdb_free(v);
	}
	view_fill(info, key, mkey, mkeylen, r, out->data, (uint32) out->len);
	if (r == ROCKS_VIEW_FOUND)
		rocks_map_value_out(out, isnull);
	else
		resetStringInfo(out);
	return r;
}
