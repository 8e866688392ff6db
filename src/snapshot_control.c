/*
 * snapshot_control.c
 *		Snapshots in flight and done.
 *
 * One snapshot runs at a time.  state.snapshot() (or the worker, for a
 * checkpoint) calls snapshot_request, which makes the cut in the calling
 * process: heap_snapshot_begin, with the registry's descriptors copied at
 * the same instant, then wakes the state worker and returns the id.  The
 * worker writes the snapshot key group by key group (snapshot_run_pending)
 * while every session goes on; on failure or cancel it releases the cut
 * and removes what it wrote.  A bounded history of snapshots backs the
 * state.snapshots view; snapshots kept in shared memory (memory:<id>) are
 * held here too.
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "common/file_perm.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "storage/shmem.h"
#include "utils/dsa.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "canonical.h"
#include "channel.h"
#include "checkpoint.h"
#include "heap_backend.h"
#include "registry.h"
#include "rocksdb_backend.h"
#include "snapshot_control.h"

#define SNAPSHOT_HISTORY		64
#define SNAPSHOT_MEMORY_KEPT	16

typedef struct MemorySnapshot
{
	int64		id;
	dsa_pointer image;
	Size		len;
} MemorySnapshot;

typedef struct SnapshotControl
{
	int64		next_id;
	int64		running_id;		/* 0: none */
	bool		picked;			/* the worker took it */
	bool		cancel_requested;
	bool		is_checkpoint;
	uint32		epoch;
	dsa_pointer descs;			/* StateDesc[ndescs], copied at the cut */
	int			ndescs;
	Latch	   *worker_latch;
	SnapshotInfo history[SNAPSHOT_HISTORY];
	MemorySnapshot memory[SNAPSHOT_MEMORY_KEPT];
} SnapshotControl;

static SnapshotControl *ctl = NULL;

Size
snapshot_control_shmem_size(void)
{
	return sizeof(SnapshotControl);
}

void
snapshot_control_shmem_init(void)
{
	bool		found;

	ctl = ShmemInitStruct("state_backend snapshots", sizeof(SnapshotControl), &found);
	if (!found)
	{
		memset(ctl, 0, sizeof(SnapshotControl));
		ctl->next_id = 1;
	}
}

static LWLock *
control_lock(void)
{
	return state_backend_lock(LOCK_SNAPSHOT);
}

static SnapshotInfo *
history_slot(int64 id)
{
	Assert(id > 0);
	return &ctl->history[id % SNAPSHOT_HISTORY];
}

const char *
snapshot_status_name(SnapshotStatus status)
{
	switch (status)
	{
		case SNAPSHOT_RUNNING:
			return "running";
		case SNAPSHOT_COMPLETED:
			return "completed";
		case SNAPSHOT_FAILED:
			return "failed";
		case SNAPSHOT_CANCELLED:
			return "cancelled";
	}
	return "unknown";
}

typedef struct CutContext
{
	StateDesc  *descs;
	int			n;
} CutContext;

static void
copy_descs_at_cut(void *arg)
{
	CutContext *c = arg;

	c->n = registry_copy_all(c->descs);
}

/*
 * snapshot_request starts a snapshot and returns its id: path is its
 * directory, or NULL for a checkpoint under state_backend.checkpoint_dir,
 * or, with no checkpoint directory, a snapshot kept in shared memory.  The
 * cut is made here, before returning: no write that completes after this
 * call returns is in the snapshot, and no write that completed before it is
 * missing.  The caller has checked privileges and the path.
 */
int64
snapshot_request(const char *path, SnapshotFormat format)
{
	dsa_area   *area = heap_area_get();
	dsa_pointer descs;
	CutContext	cut;
	SnapshotInfo *info;
	int64		id;
	bool		checkpoint = (path == NULL && state_backend_checkpoint_dir[0] != '\0');

	descs = dsa_allocate_extended(area, sizeof(StateDesc) * state_backend_max_states,
								  DSA_ALLOC_NO_OOM | DSA_ALLOC_HUGE);
	if (!DsaPointerIsValid(descs))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("out of state memory"),
				 errdetail("A snapshot needs room for the descriptors of every state.")));

	LWLockAcquire(control_lock(), LW_EXCLUSIVE);
	if (ctl->running_id != 0)
	{
		int64		running = ctl->running_id;

		LWLockRelease(control_lock());
		dsa_free(area, descs);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("snapshot " INT64_FORMAT " is still running", running),
				 errhint("Wait for it with state.wait_snapshot(" INT64_FORMAT "), or cancel it.", running)));
	}
	id = ctl->next_id++;
	LWLockRelease(control_lock());

	/*
	 * rocksdb states first: this runs in the state worker, which serves no
	 * request meanwhile, so RocksDB does not change until the heap cut.
	 * Only the worker starts snapshots, so nothing else can start one while
	 * the lock is released for RocksDB's flush and checkpoint (readers of
	 * state.snapshots are not held up by them).
	 */
	PG_TRY();
	{
		rocksdb_snapshot_cut(id);
	}
	PG_CATCH();
	{
		dsa_free(area, descs);
		PG_RE_THROW();
	}
	PG_END_TRY();

	LWLockAcquire(control_lock(), LW_EXCLUSIVE);
	cut.descs = dsa_get_address(area, descs);
	ctl->epoch = heap_snapshot_begin(copy_descs_at_cut, &cut);

	ctl->running_id = id;
	ctl->picked = false;
	ctl->cancel_requested = false;
	ctl->is_checkpoint = checkpoint;
	ctl->descs = descs;
	ctl->ndescs = cut.n;

	info = history_slot(id);
	memset(info, 0, sizeof(SnapshotInfo));
	info->id = id;
	if (path != NULL)
		strlcpy(info->path, path, sizeof(info->path));
	else if (checkpoint)
		snprintf(info->path, sizeof(info->path), "%s/chk-" INT64_FORMAT,
				 state_backend_checkpoint_dir, id);
	else
		snprintf(info->path, sizeof(info->path), "memory:" INT64_FORMAT, id);
	info->format = format;
	info->status = SNAPSHOT_RUNNING;
	info->started_at = GetCurrentTimestamp();
	info->states = cut.n;
	if (ctl->worker_latch)
		SetLatch(ctl->worker_latch);
	LWLockRelease(control_lock());
	return id;
}

/*
 * snapshot_request_cut is what state.snapshot() calls: the state worker
 * makes the cut, so that it falls between two of its requests on rocksdb
 * states as well as at one instant of every heap partition.  Requests a
 * session posted before are served first, so its own writes are in.
 */
int64
snapshot_request_cut(const char *path, SnapshotFormat format)
{
	StringInfoData req;
	StringInfoData reply;
	int32		f = (int32) format;
	int64		id;

	channel_sync();
	initStringInfo(&req);
	appendBinaryStringInfo(&req, (const char *) &f, sizeof(f));
	if (path)
		appendStringInfoString(&req, path);
	initStringInfo(&reply);
	channel_call(CHANNEL_OP_SNAPSHOT, req.data, req.len, &reply, true);
	memcpy(&id, reply.data, sizeof(id));
	pfree(req.data);
	pfree(reply.data);
	return id;
}

/* snapshot_handle_request runs a session's snapshot request in the worker. */
bool
snapshot_handle_request(const char *payload, uint32 len, StringInfo reply)
{
	int32		f;
	char	   *path = NULL;
	int64		id;

	memcpy(&f, payload, sizeof(f));
	if (len > sizeof(f))
		path = pnstrdup(payload + sizeof(f), len - sizeof(f));
	id = snapshot_request(path, (SnapshotFormat) f);
	appendBinaryStringInfo(reply, (const char *) &id, sizeof(id));
	return true;
}

/*
 * snapshot_check_cancel raises query_canceled in the worker when the
 * snapshot it writes was cancelled.  Long steps of writing call it.
 */
void
snapshot_check_cancel(void)
{
	if (ctl->running_id != 0 && ctl->cancel_requested)
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("snapshot " INT64_FORMAT " was cancelled", ctl->running_id)));
}

/* snapshot_cancel asks the worker to stop a running snapshot. */
bool
snapshot_cancel(int64 id)
{
	bool		running;

	LWLockAcquire(control_lock(), LW_EXCLUSIVE);
	running = ctl->running_id == id;
	if (running)
	{
		ctl->cancel_requested = true;
		if (ctl->worker_latch)
			SetLatch(ctl->worker_latch);
	}
	LWLockRelease(control_lock());
	return running;
}

/* snapshot_get copies what is known of a snapshot; false if nothing. */
bool
snapshot_get(int64 id, SnapshotInfo *out)
{
	SnapshotInfo *info;
	bool		found;

	if (id <= 0)
		return false;
	LWLockAcquire(control_lock(), LW_SHARED);
	info = history_slot(id);
	found = info->id == id;
	if (found)
		*out = *info;
	LWLockRelease(control_lock());
	return found;
}

/* snapshot_list copies the history, oldest first; returns how many. */
int
snapshot_list(SnapshotInfo **out)
{
	int			n = 0;

	*out = palloc(sizeof(SnapshotInfo) * SNAPSHOT_HISTORY);
	LWLockAcquire(control_lock(), LW_SHARED);
	for (int64 id = Max(1, ctl->next_id - SNAPSHOT_HISTORY); id < ctl->next_id; id++)
	{
		SnapshotInfo *info = history_slot(id);

		if (info->id == id)
			(*out)[n++] = *info;
	}
	LWLockRelease(control_lock());
	return n;
}

/*
 * snapshot_memory_image returns a palloc'd copy of a snapshot kept in
 * shared memory, or NULL when there is none with that id.
 */
char *
snapshot_memory_image(int64 id, Size *len)
{
	dsa_area   *area = heap_area_get();
	char	   *copy = NULL;

	LWLockAcquire(control_lock(), LW_SHARED);
	for (int i = 0; i < SNAPSHOT_MEMORY_KEPT; i++)
	{
		MemorySnapshot *ms = &ctl->memory[i];

		if (ms->id == id && DsaPointerIsValid(ms->image))
		{
			copy = palloc_extended(ms->len, MCXT_ALLOC_HUGE);
			memcpy(copy, dsa_get_address(area, ms->image), ms->len);
			*len = ms->len;
			break;
		}
	}
	LWLockRelease(control_lock());
	return copy;
}

/* Keep a memory snapshot, dropping the oldest beyond checkpoints_retained. */
static void
keep_memory_snapshot(int64 id, const char *image, Size len)
{
	dsa_area   *area = heap_area_get();
	dsa_pointer p = dsa_allocate_extended(area, len, DSA_ALLOC_NO_OOM | DSA_ALLOC_HUGE);
	int			keep = Min(state_backend_checkpoints_retained, SNAPSHOT_MEMORY_KEPT);
	int			slot = 0;

	if (!DsaPointerIsValid(p))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("out of state memory"),
				 errdetail("A snapshot kept in shared memory needs %zu bytes, beyond state_backend.memory_limit.", len),
				 errhint("Set state_backend.checkpoint_dir, or give state.snapshot() a path.")));
	memcpy(dsa_get_address(area, p), image, len);

	LWLockAcquire(control_lock(), LW_EXCLUSIVE);
	/* Drop the oldest ones so that, with this one, "keep" remain. */
	for (;;)
	{
		int			n = 0;
		int			oldest = -1;

		for (int i = 0; i < SNAPSHOT_MEMORY_KEPT; i++)
			if (DsaPointerIsValid(ctl->memory[i].image))
			{
				n++;
				if (oldest < 0 || ctl->memory[i].id < ctl->memory[oldest].id)
					oldest = i;
			}
		if (n < keep)
			break;
		dsa_free(area, ctl->memory[oldest].image);
		ctl->memory[oldest].image = InvalidDsaPointer;
		ctl->memory[oldest].id = 0;
	}
	while (DsaPointerIsValid(ctl->memory[slot].image))
		slot++;
	ctl->memory[slot].id = id;
	ctl->memory[slot].image = p;
	ctl->memory[slot].len = len;
	LWLockRelease(control_lock());
}

/*
 * snapshot_running_descs copies the descriptors cut for a running snapshot
 * (palloc'd); returns how many, 0 if it is not running.
 */
int
snapshot_running_descs(int64 id, StateDesc **descs)
{
	dsa_area   *area = heap_area_get();
	int			n = 0;

	LWLockAcquire(control_lock(), LW_SHARED);
	if (ctl->running_id == id && DsaPointerIsValid(ctl->descs))
	{
		n = ctl->ndescs;
		*descs = palloc(sizeof(StateDesc) * Max(n, 1));
		memcpy(*descs, dsa_get_address(area, ctl->descs), sizeof(StateDesc) * n);
	}
	LWLockRelease(control_lock());
	return n;
}

/* A converter reports that it failed. */
void
snapshot_note_error(int64 id, int sqlerrcode, const char *message)
{
	SnapshotInfo *info;

	LWLockAcquire(control_lock(), LW_EXCLUSIVE);
	info = history_slot(id);
	if (info->id == id)
	{
		info->sqlerrcode = sqlerrcode;
		strlcpy(info->error, message, sizeof(info->error));
	}
	LWLockRelease(control_lock());
}

/* The state worker collects a converter's failure, if any. */
bool
snapshot_take_error(int64 id, int *sqlerrcode, char *buf, Size buflen)
{
	SnapshotInfo *info;
	bool		failed = false;

	LWLockAcquire(control_lock(), LW_EXCLUSIVE);
	info = history_slot(id);
	if (info->id == id && info->error[0] != '\0')
	{
		failed = true;
		*sqlerrcode = info->sqlerrcode;
		strlcpy(buf, info->error, buflen);
		info->error[0] = '\0';
	}
	LWLockRelease(control_lock());
	return failed;
}

/*
 * snapshot_error_text is what state.snapshots shows of an error: its
 * message, and its detail when there is one (which file, which offset).
 */
char *
snapshot_error_text(ErrorData *edata)
{
	if (edata->detail)
		return psprintf("%s: %s", edata->message, edata->detail);
	return edata->message;
}

/* The worker announces its latch, so requests can wake it. */
void
snapshot_worker_attach(void)
{
	LWLockAcquire(control_lock(), LW_EXCLUSIVE);
	ctl->worker_latch = MyLatch;
	LWLockRelease(control_lock());
}

/* Never reuse the id of a checkpoint already on disk. */
void
snapshot_bump_next_id(int64 id)
{
	LWLockAcquire(control_lock(), LW_EXCLUSIVE);
	if (ctl->next_id <= id)
		ctl->next_id = id + 1;
	LWLockRelease(control_lock());
}

/* Database names of the states to write, in a transaction of their own. */
static void
collect_databases(const StateDesc *descs, int n, Oid **oids, char ***names, int *ndbs)
{
	MemoryContext cxt = CurrentMemoryContext;

	*oids = palloc(sizeof(Oid) * Max(n, 1));
	*names = palloc(sizeof(char *) * Max(n, 1));
	*ndbs = 0;
	for (int i = 0; i < n; i++)
	{
		bool		seen = false;

		for (int d = 0; d < *ndbs && !seen; d++)
			seen = (*oids)[d] == descs[i].dbid;
		if (!seen)
			(*oids)[(*ndbs)++] = descs[i].dbid;
	}

	StartTransactionCommand();
	for (int d = 0; d < *ndbs; d++)
	{
		char	   *name = get_database_name((*oids)[d]);

		(*names)[d] = name ? MemoryContextStrdup(cxt, name) :
			psprintf("db-%u", (*oids)[d]);
	}
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
}

static void
finish(int64 id, SnapshotStatus status, int64 entries, int64 bytes,
	   int sqlerrcode, const char *error)
{
	dsa_area   *area = heap_area_get();
	SnapshotInfo *info;

	LWLockAcquire(control_lock(), LW_EXCLUSIVE);
	info = history_slot(id);
	if (info->id == id)
	{
		info->status = status;
		info->finished_at = GetCurrentTimestamp();
		info->entries = entries;
		info->bytes = bytes;
		info->sqlerrcode = sqlerrcode;
		if (error)
			strlcpy(info->error, error, sizeof(info->error));
	}
	if (DsaPointerIsValid(ctl->descs))
		dsa_free(area, ctl->descs);
	ctl->descs = InvalidDsaPointer;
	ctl->running_id = 0;
	ctl->picked = false;
	LWLockRelease(control_lock());
	rocksdb_snapshot_release(id);
}

/*
 * snapshot_run_pending writes the running snapshot if the worker has not
 * taken it yet.  Returns whether it did.  Runs in the state worker; errors
 * are caught and recorded as the snapshot's failure.
 */
bool
snapshot_run_pending(void)
{
	dsa_area   *area = heap_area_get();
	int64		id;
	uint32		epoch;
	SnapshotInfo info;
	StateDesc  *descs;
	int			ndescs;
	bool		is_checkpoint;
	SnapshotWriter *volatile w = NULL;
	MemoryContext cxt;
	MemoryContext old;

	LWLockAcquire(control_lock(), LW_EXCLUSIVE);
	if (ctl->running_id == 0 || ctl->picked)
	{
		LWLockRelease(control_lock());
		return false;
	}
	ctl->picked = true;
	id = ctl->running_id;
	epoch = ctl->epoch;
	ndescs = ctl->ndescs;
	is_checkpoint = ctl->is_checkpoint;
	info = *history_slot(id);
	LWLockRelease(control_lock());

	cxt = AllocSetContextCreate(TopMemoryContext, "state_backend snapshot",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	descs = palloc(sizeof(StateDesc) * Max(ndescs, 1));
	memcpy(descs, dsa_get_address(area, ctl->descs), sizeof(StateDesc) * ndescs);

	PG_TRY();
	{
		Oid		   *dboids;
		char	  **dbnames;
		int			ndbs;
		bool		in_memory = strncmp(info.path, "memory:", 7) == 0;
		StringInfoData records;
		int64		entries;
		int64		bytes;
		bool	   *external = palloc0(sizeof(bool) * Max(ndescs, 1));
		bool		any_external = false;
		bool		reused = false;

		if (is_checkpoint && pg_mkdir_p(state_backend_checkpoint_dir, pg_dir_create_mode) != 0 &&
			errno != EEXIST)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not create checkpoint directory \"%s\": %m",
							state_backend_checkpoint_dir)));

		/*
		 * rocksdb states of a native snapshot on disk are RocksDB's own
		 * files; elsewhere they are key-group files like heap states.
		 */
		for (int i = 0; i < ndescs; i++)
		{
			external[i] = descs[i].backend == STATE_BACKEND_ROCKSDB &&
				info.format == SNAPSHOT_NATIVE && !in_memory;
			any_external |= external[i];
		}
		collect_databases(descs, ndescs, &dboids, &dbnames, &ndbs);
		w = snapshot_writer_begin(in_memory ? NULL : info.path, id, info.format,
								  descs, ndescs, dboids, dbnames, ndbs, external);
		initStringInfo(&records);
		for (int kg = 0; kg < state_backend_max_parallelism; kg++)
		{
			SnapshotInfo *h;

			snapshot_check_cancel();
			resetStringInfo(&records);
			heap_snapshot_collect(epoch, kg, &records);
			for (int i = 0; i < ndescs; i++)
				if (descs[i].backend == STATE_BACKEND_ROCKSDB && !external[i])
					rocksdb_snapshot_collect(descs[i].id, descs[i].kind, kg, &records);
			snapshot_writer_add(w, kg, records.data, records.len);
			(void) state_worker_serve(1);

			snapshot_writer_progress(w, &entries, &bytes);
			LWLockAcquire(control_lock(), LW_EXCLUSIVE);
			h = history_slot(id);
			h->entries = entries;
			h->bytes = bytes;
			LWLockRelease(control_lock());
		}
		snapshot_writer_close_files(w);
		if (any_external)
		{
			char		shared[MAXPGPATH];

			snprintf(shared, sizeof(shared), "%s/shared", state_backend_checkpoint_dir);
			rocksdb_snapshot_write_files(info.path, is_checkpoint ? shared : NULL,
										 descs, ndescs, w, &reused);
			LWLockAcquire(control_lock(), LW_EXCLUSIVE);
			history_slot(id)->incremental = reused;
			LWLockRelease(control_lock());
		}
		if (info.format == SNAPSHOT_CANONICAL)
		{
			canonical_convert_snapshot(id, info.path, descs, ndescs);
			snapshot_writer_refresh_sizes(w);
		}
		snapshot_writer_finish(w);
		snapshot_writer_progress(w, &entries, &bytes);
		if (in_memory)
		{
			Size		len;
			char	   *image = snapshot_writer_memory_image(w, &len);

			keep_memory_snapshot(id, image, len);
		}
		finish(id, SNAPSHOT_COMPLETED, entries, bytes, 0, NULL);
		if (is_checkpoint)
			checkpoint_retain(id);
		ereport(DEBUG1,
				(errmsg("state snapshot " INT64_FORMAT " completed: " INT64_FORMAT " entries, " INT64_FORMAT " bytes",
						id, entries, bytes)));
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		int64		entries = 0;
		int64		bytes = 0;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		LWLockReleaseAll();
		AbortOutOfAnyTransaction();
		AtEOXact_Files(false);	/* files and directories the writers had open */

		heap_snapshot_end(epoch);
		if (w)
		{
			snapshot_writer_progress(w, &entries, &bytes);
			snapshot_writer_abort(w);
		}
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
			finish(id, SNAPSHOT_CANCELLED, entries, bytes, edata->sqlerrcode,
				   snapshot_error_text(edata));
		else
		{
			finish(id, SNAPSHOT_FAILED, entries, bytes, edata->sqlerrcode,
				   snapshot_error_text(edata));
			ereport(LOG,
					(errmsg("state snapshot " INT64_FORMAT " failed: %s", id, edata->message)));
		}
	}
	PG_END_TRY();

	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return true;
}
