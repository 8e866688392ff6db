/*
 * snapshot/snapshot_control.c
 *		Snapshots in flight and done, in shared memory: the one running
 *		snapshot and its cut's descriptors, cancel, the bounded history
 *		behind the state.snapshots view, and snapshots kept in shared
 *		memory (memory:<id>).
 *
 * The snapshot driver (snapshot_driver.c) starts, picks up and finishes
 * snapshots through here; sessions read the history, cancel, and copy
 * memory snapshots; the converters of canonical snapshots (canonical.c)
 * read the cut's descriptors and report their errors here.  Everything
 * is under the snapshot lock, first in the lock order.
 *
 * The running snapshot belongs to the worker process that cut it (its
 * pid is kept): what its backends hold for the cut and the writer's open
 * files live in that process.  A worker that exits while a snapshot runs
 * leaves it to its successor, which fails it (snapshot_control_orphan).
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/area.h"
#include "common/locks.h"
#include "common/settings.h"
#include "common/ttl_clock.h"
#include "ipc/channel.h"
#include "snapshot/snapshot_control.h"

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
	bool		workers_own;	/* the worker's own checkpoint: no session asked */
	int			owner_pid;		/* the worker that cut the running snapshot */
	SnapshotFiles files;		/* what the running snapshot has on disk */
	int			cut_holds;		/* restores logging their states: no cut */
	int			ndescs;			/* in cut_descs, copied at the cut */
	SnapshotInfo history[SNAPSHOT_HISTORY];
	MemorySnapshot memory[SNAPSHOT_MEMORY_KEPT];
} SnapshotControl;

static SnapshotControl *ctl = NULL;

/*
 * The descriptors of the running snapshot's cut, state_backend.max_states
 * of them, in static shared memory: snapshots must not compete with state
 * for the area, or a full area could not be saved.
 */
static StateDesc *cut_descs = NULL;

static Size
cut_descs_size(void)
{
	return mul_size(sizeof(StateDesc), state_backend_max_states);
}

/* control_init: no snapshot yet, in shared memory just made. */
static void
control_init(void *fresh)
{
	SnapshotControl *c = fresh;

	memset(c, 0, sizeof(SnapshotControl));
	c->next_id = 1;
}

const ShmemPart snapshot_control_part = {
	"state_backend snapshots", sizeof(SnapshotControl), NULL, control_init, (void **) &ctl
};

/* The cut's descriptors are written before they are read: nothing to set. */
const ShmemPart snapshot_cut_descs_part = {
	"state_backend snapshot descriptors", 0, cut_descs_size, NULL, (void **) &cut_descs
};

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

/*
 * history_find takes the snapshot lock in mode and returns what the history
 * holds of snapshot id, or NULL once a later snapshot took its slot.  The
 * lock is held either way; the caller releases it.
 */
static SnapshotInfo *
history_find(int64 id, LWLockMode mode)
{
	SnapshotInfo *info;

	LWLockAcquire(control_lock(), mode);
	info = history_slot(id);
	return info->id == id ? info : NULL;
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
		channel_wake_worker();
	}
	LWLockRelease(control_lock());
	return running;
}

/* snapshot_get copies what is known of a snapshot; false if nothing. */
bool
snapshot_get(int64 id, SnapshotInfo *out)
{
	SnapshotInfo *info;

	if (id <= 0)
		return false;
	info = history_find(id, LW_SHARED);
	if (info != NULL)
		*out = *info;
	LWLockRelease(control_lock());
	return info != NULL;
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
	dsa_area   *area = state_area();
	char	   *copy = NULL;
	bool		failed = false;

	LWLockAcquire(control_lock(), LW_SHARED);
	for (int i = 0; i < SNAPSHOT_MEMORY_KEPT; i++)
	{
		MemorySnapshot *ms = &ctl->memory[i];

		if (ms->id == id && DsaPointerIsValid(ms->image))
		{
			/* No error under the lock: a failed allocation is raised below. */
			*len = ms->len;
			copy = palloc_extended(ms->len, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
			if (copy != NULL)
				memcpy(copy, dsa_get_address(area, ms->image), ms->len);
			else
				failed = true;
			break;
		}
	}
	LWLockRelease(control_lock());
	if (failed)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errdetail("Failed to copy a snapshot of %zu bytes out of shared memory.", *len)));
	return copy;
}

/*
 * snapshot_control_keep_memory keeps a snapshot's image in shared memory,
 * dropping the oldest beyond checkpoints_retained.
 */
void
snapshot_control_keep_memory(int64 id, const char *image, Size len)
{
	dsa_area   *area = state_area();
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
	int			n = 0;

	*descs = palloc(sizeof(StateDesc) * Max(state_backend_max_states, 1));
	LWLockAcquire(control_lock(), LW_SHARED);
	if (ctl->running_id == id)
	{
		n = ctl->ndescs;
		memcpy(*descs, cut_descs, sizeof(StateDesc) * n);
	}
	LWLockRelease(control_lock());
	return n;
}

/* A converter reports that it converted its database's states. */
void
snapshot_note_converted(int64 id)
{
	SnapshotInfo *info = history_find(id, LW_EXCLUSIVE);

	if (info != NULL)
		info->converters_done++;
	LWLockRelease(control_lock());
}

/* How many converters of a snapshot finished. */
int
snapshot_converters_done(int64 id)
{
	SnapshotInfo *info;
	int			n = -1;

	info = history_find(id, LW_SHARED);
	if (info != NULL)
		n = info->converters_done;
	LWLockRelease(control_lock());
	return n;
}

/* A converter reports that it failed. */
void
snapshot_note_error(int64 id, int sqlerrcode, const char *message)
{
	SnapshotInfo *info = history_find(id, LW_EXCLUSIVE);

	if (info != NULL)
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

	info = history_find(id, LW_EXCLUSIVE);
	if (info != NULL && info->error[0] != '\0')
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

/* Never reuse the id of a checkpoint already on disk. */
void
snapshot_bump_next_id(int64 id)
{
	LWLockAcquire(control_lock(), LW_EXCLUSIVE);
	if (ctl->next_id <= id)
		ctl->next_id = id + 1;
	LWLockRelease(control_lock());
}

/*
 * snapshot_control_finish records how snapshot id ended: no snapshot runs
 * any more.
 */
void
snapshot_control_finish(int64 id, SnapshotStatus status, int64 entries, int64 bytes,
						int sqlerrcode, const char *error)
{
	SnapshotInfo *info = history_find(id, LW_EXCLUSIVE);

	if (info != NULL)
	{
		info->status = status;
		info->finished_at = GetCurrentTimestamp();
		info->entries = entries;
		info->bytes = bytes;
		info->sqlerrcode = sqlerrcode;
		if (error)
			strlcpy(info->error, error, sizeof(info->error));
	}
	ctl->ndescs = 0;
	ctl->running_id = 0;
	ctl->picked = false;
	ctl->owner_pid = 0;
	ctl->files = SNAPSHOT_FILES_NONE;
	LWLockRelease(control_lock());
}

/*
 * snapshot_control_note_files records what the running snapshot id has on
 * disk: SNAPSHOT_FILES_PARTIAL once its writer is about to make its
 * directory (which did not exist), SNAPSHOT_FILES_DURABLE once the
 * snapshot is complete and durable.  The worker that takes over from one
 * that exited goes by it (snapshot_control_orphan).
 */
void
snapshot_control_note_files(int64 id, SnapshotFiles files)
{
	LWLockAcquire(control_lock(), LW_EXCLUSIVE);
	if (ctl->running_id == id)
		ctl->files = files;
	LWLockRelease(control_lock());
}

/*
 * snapshot_control_orphan, in a state worker that starts while shared
 * memory holds a running snapshot that another worker process cut (it
 * exited, as FATAL, while the snapshot ran): copies what is known of it
 * into *info and *files, and returns true.  Nobody will finish it: its
 * backends' cut and its writer were that process's.  The caller fails it
 * (or completes it, when it was durable) with snapshot_control_finish.
 */
bool
snapshot_control_orphan(SnapshotInfo *info, SnapshotFiles *files)
{
	bool		orphan;

	LWLockAcquire(control_lock(), LW_SHARED);
	orphan = ctl->running_id != 0 && ctl->owner_pid != MyProcPid;
	if (orphan)
	{
		*info = *history_slot(ctl->running_id);
		*files = ctl->files;
	}
	LWLockRelease(control_lock());
	return orphan;
}

/*
 * snapshot_control_hold_cuts keeps snapshots from being cut (hold true)
 * while a restore writes the states it loaded to WAL, and lets them go on
 * (hold false).  A cut holds either all of such a restore's records or
 * none: they are logged for states no cut sees until they are published.
 */
static int	my_cut_holds = 0;

/* A session that exits while it holds cuts lets them go. */
static void
release_cut_holds(int code, Datum arg)
{
	while (my_cut_holds > 0)
		snapshot_control_hold_cuts(false);
}

void
snapshot_control_hold_cuts(bool hold)
{
	static bool registered = false;

	if (hold && !registered)
	{
		before_shmem_exit(release_cut_holds, (Datum) 0);
		registered = true;
	}
	LWLockAcquire(control_lock(), LW_EXCLUSIVE);
	ctl->cut_holds += hold ? 1 : -1;
	Assert(ctl->cut_holds >= 0);
	LWLockRelease(control_lock());
	my_cut_holds += hold ? 1 : -1;
}

/*
 * snapshot_control_begin starts snapshot id, whose cut "cut" makes (the
 * backends' instants, then at_cut copying descriptors into the array
 * snapshot_control_cut_descs gives): under the snapshot lock, so that
 * nobody sees it half made.  ndescs is where the cut stores how many
 * descriptors it copied, wal_position the WAL position of its instant.
 */
void
snapshot_control_begin(int64 id, const char *path, SnapshotFormat format,
					   bool checkpoint, bool workers_own, void (*cut) (void *arg), void *arg,
					   const int *ndescs, const XLogRecPtr *wal_position)
{
	SnapshotInfo *info;

	LWLockAcquire(control_lock(), LW_EXCLUSIVE);
	if (ctl->cut_holds > 0)
	{
		LWLockRelease(control_lock());
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("a restore of logged states is writing them to WAL"),
				 errdetail("A snapshot's cut waits until that restore is done."),
				 errhint("Try again when the restore has returned.")));
	}
	cut(arg);
	ctl->running_id = id;
	ctl->picked = false;
	ctl->cancel_requested = false;
	ctl->is_checkpoint = checkpoint;
	ctl->workers_own = workers_own;
	ctl->owner_pid = MyProcPid;
	ctl->files = SNAPSHOT_FILES_NONE;
	ctl->ndescs = *ndescs;

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
	info->ttl_now = info->started_at + ttl_clock_offset();
	info->states = *ndescs;
	info->wal_position = *wal_position;
	channel_wake_worker();
	LWLockRelease(control_lock());
}

/*
 * snapshot_control_cut_descs is where the cut of the snapshot being started
 * copies the descriptors: room for state_backend.max_states of them.  Only
 * one snapshot runs at a time.
 */
StateDesc *
snapshot_control_cut_descs(void)
{
	return cut_descs;
}

/*
 * snapshot_control_reserve returns the id of a new snapshot, or raises
 * object_in_use when one is still running.
 */
int64
snapshot_control_reserve(void)
{
	int64		id;

	LWLockAcquire(control_lock(), LW_EXCLUSIVE);
	if (ctl->running_id != 0)
	{
		int64		running = ctl->running_id;

		LWLockRelease(control_lock());
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("snapshot " INT64_FORMAT " is still running", running),
				 errhint("Wait for it with state.wait_snapshot(" INT64_FORMAT "), or cancel it.", running)));
	}
	id = ctl->next_id++;
	LWLockRelease(control_lock());
	return id;
}

/*
 * snapshot_control_workers_own_running tells whether the snapshot running
 * is a checkpoint of the worker's own, which no session asked for.
 */
bool
snapshot_control_workers_own_running(void)
{
	bool		running;

	LWLockAcquire(control_lock(), LW_SHARED);
	running = ctl->running_id != 0 && ctl->workers_own;
	LWLockRelease(control_lock());
	return running;
}

/*
 * snapshot_control_pick hands the running snapshot to the worker, once:
 * false when there is none to take.  job->descs is palloc'd.
 */
bool
snapshot_control_pick(SnapshotJob *job)
{
	int			n;

	/* Allocate with no lock held: see how many descriptors there are. */
	LWLockAcquire(control_lock(), LW_SHARED);
	n = (ctl->running_id == 0 || ctl->picked) ? -1 : ctl->ndescs;
	LWLockRelease(control_lock());
	if (n < 0)
		return false;
	job->descs = palloc(sizeof(StateDesc) * Max(n, 1));

	LWLockAcquire(control_lock(), LW_EXCLUSIVE);
	if (ctl->running_id == 0 || ctl->picked || ctl->ndescs != n)
	{
		/* Only the worker picks, so this does not happen; be safe anyway. */
		LWLockRelease(control_lock());
		pfree(job->descs);
		return false;
	}
	ctl->picked = true;
	job->id = ctl->running_id;
	job->ndescs = n;
	job->is_checkpoint = ctl->is_checkpoint;
	job->info = *history_slot(job->id);
	memcpy(job->descs, cut_descs, sizeof(StateDesc) * n);
	LWLockRelease(control_lock());
	return true;
}

/*
 * The running snapshot's figures so far, for state.snapshots: the entries
 * and bytes written, and the key groups done.
 */
void
snapshot_control_progress(int64 id, int64 entries, int64 bytes, int key_groups_done)
{
	SnapshotInfo *h = history_find(id, LW_EXCLUSIVE);

	if (h != NULL)
	{
		h->entries = entries;
		h->bytes = bytes;
		h->key_groups_done = key_groups_done;
	}
	LWLockRelease(control_lock());
}

/*
 * snapshot_control_phase records where the running snapshot is: its phase
 * and the key groups written of all (-1: as they were).
 */
void
snapshot_control_phase(int64 id, SnapshotPhase phase, int key_groups_done, int key_groups_total)
{
	SnapshotInfo *h = history_find(id, LW_EXCLUSIVE);

	if (h != NULL)
	{
		h->phase = phase;
		if (key_groups_done >= 0)
			h->key_groups_done = key_groups_done;
		if (key_groups_total >= 0)
			h->key_groups_total = key_groups_total;
	}
	LWLockRelease(control_lock());
}

const char *
snapshot_phase_name(SnapshotPhase phase)
{
	switch (phase)
	{
		case SNAPSHOT_PHASE_CUT:
			return "cut";
		case SNAPSHOT_PHASE_KEY_GROUPS:
			return "key groups";
		case SNAPSHOT_PHASE_NATIVE_FILES:
			return "native files";
		case SNAPSHOT_PHASE_CONVERTING:
			return "converting";
		case SNAPSHOT_PHASE_FINISHING:
			return "finishing";
	}
	return "unknown";
}

/* The snapshot shares files with earlier checkpoints. */
void
snapshot_control_set_incremental(int64 id)
{
	SnapshotInfo *h = history_find(id, LW_EXCLUSIVE);

	if (h != NULL)
		h->incremental = true;
	LWLockRelease(control_lock());
}
