/*
 * logged/logged.c
 *		Logged states and PostgreSQL's WAL: what a session checks when it
 *		creates one and waits for when it commits, the replication slot that
 *		keeps the WAL recovery needs, and recovery itself.
 *
 * Changes are logged where they are made (format/state_wal.h).  A cut's
 * WAL position parts the changes a checkpoint holds from those it does not
 * (catalog/registry.c, registry_copy_all), and the MANIFEST records it.
 * After a crash the state worker loads the newest checkpoint
 * (snapshot/restore.c), then logged_recover replays the logged states'
 * records from that position to the end of WAL (logged_replay.c), before
 * sessions are served, and the worker takes a checkpoint at once, so that
 * the next recovery has less to read.  A record that cannot be applied
 * stops the start before it (logged_replay.c): the worker tries it again
 * every second, sessions get an error that says why, and no checkpoint is
 * taken meanwhile, so the slot keeps its WAL for the next start.  States whose backend kept their
 * data across the restart (KeyedStateBackend.applied_lsn) skip the records
 * their data already holds.  A hot standby applies them as it replays WAL,
 * and a promotion goes on from there (logged_standby.c).
 *
 * The slot "state_backend" keeps WAL from the newest checkpoint's position:
 * made when the first logged state is created (or, on a standby, by the
 * worker), moved forward when a checkpoint completes.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "miscadmin.h"
#include "postmaster/interrupt.h"
#include "replication/slot.h"
#include "replication/syncrep.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "backend/keyed_backend.h"
#include "catalog/registry.h"
#include "common/catch.h"
#include "common/fault.h"
#include "common/locks.h"
#include "common/pause.h"
#include "common/settings.h"
#include "format/snapshot_format.h"
#include "format/state_wal.h"
#include "ipc/channel.h"
#include "logged/logged.h"
#include "logged/logged_replay.h"
#include "snapshot/checkpoint.h"
#include "state_ops.h"

#define LOGGED_SLOT_NAME	"state_backend"

/*
 * slot_keep makes the slot keep WAL from lsn on.  With create, a missing
 * slot is made (from lsn, or from the current position when lsn is
 * invalid); a slot that exists only moves, and only for a valid lsn.
 * With pending, a logged state about to be created is counted, under the
 * same lock, so that the worker does not drop the slot before the state is
 * registered (slot_drop_unused).  Sessions making it and the worker moving
 * or dropping it take LOCK_WAL_SLOT, so they never meet on the slot.
 */
static void
slot_keep(XLogRecPtr lsn, bool create, bool pending)
{
	LWLock	   *lock = state_backend_lock(LOCK_WAL_SLOT);
	bool		exists;

	LWLockAcquire(lock, LW_EXCLUSIVE);
	exists = SearchNamedReplicationSlot(LOGGED_SLOT_NAME, true) != NULL;
	if ((!exists && !create) || (exists && lsn == InvalidXLogRecPtr))
	{
		if (pending && exists)
			registry_logged_pending(1);
		LWLockRelease(lock);
		return;
	}
	if (exists)
	{
		ReplicationSlotAcquire(LOGGED_SLOT_NAME, true);
		if (SlotIsLogical(MyReplicationSlot))
		{
			ReplicationSlotRelease();
			LWLockRelease(lock);
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("replication slot \"%s\" is a logical slot", LOGGED_SLOT_NAME),
					 errdetail("Logged states keep their WAL with a physical slot of that name."),
					 errhint("Drop or rename the logical slot.")));
		}
	}
	else
	{
		CheckSlotRequirements();
		ReplicationSlotCreate(LOGGED_SLOT_NAME, false, RS_PERSISTENT, false);
		if (lsn == InvalidXLogRecPtr)
			lsn = RecoveryInProgress() ? GetXLogReplayRecPtr(NULL) : GetXLogInsertRecPtr();
	}
	SpinLockAcquire(&MyReplicationSlot->mutex);
	MyReplicationSlot->data.restart_lsn = lsn;
	SpinLockRelease(&MyReplicationSlot->mutex);
	ReplicationSlotMarkDirty();
	ReplicationSlotSave();
	ReplicationSlotRelease();
	ReplicationSlotsComputeRequiredLSN();
	if (pending)
		registry_logged_pending(1);
	LWLockRelease(lock);
}

/* The position the slot keeps WAL from; InvalidXLogRecPtr: no slot. */
XLogRecPtr
logged_slot_position(void)
{
	XLogRecPtr	lsn = InvalidXLogRecPtr;
	ReplicationSlot *s;

	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	s = SearchNamedReplicationSlot(LOGGED_SLOT_NAME, false);
	if (s != NULL)
	{
		SpinLockAcquire(&s->mutex);
		lsn = s->data.restart_lsn;
		SpinLockRelease(&s->mutex);
	}
	LWLockRelease(ReplicationSlotControlLock);
	if (s != NULL && lsn == InvalidXLogRecPtr)
		ereport(WARNING,
				(errmsg("replication slot \"%s\" keeps no WAL", LOGGED_SLOT_NAME),
				 errdetail("PostgreSQL removed its WAL (max_slot_wal_keep_size): logged states come back as of their newest checkpoint only.")));
	return lsn;
}

/* The worker moves the slot; a failure is reported, and tried next time. */
static void
slot_keep_in_worker(XLogRecPtr lsn, bool create)
{
	MemoryContext cxt = CurrentMemoryContext;

	PG_TRY();
	{
		slot_keep(lsn, create, false);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		if (MyReplicationSlot != NULL)
			ReplicationSlotRelease();
		if (LWLockHeldByMe(state_backend_lock(LOCK_WAL_SLOT)))
			LWLockRelease(state_backend_lock(LOCK_WAL_SLOT));
		EmitErrorReport();
		FlushErrorState();
		ereport(LOG,
				(errmsg("state_backend could not move replication slot \"%s\"", LOGGED_SLOT_NAME)));
	}
	PG_END_TRY();
}

/*
 * logged_check_create refuses a logged state where its WAL could not be
 * kept (object_not_in_prerequisite_state).
 */
static void
logged_check_create(void)
{
	if (state_backend_checkpoint_dir[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("a logged state needs state_backend.checkpoint_dir"),
				 errdetail("After a crash a logged state comes back from its newest checkpoint and the WAL written since; checkpoints bound the WAL kept."),
				 errhint("Set state_backend.checkpoint_dir and reload the configuration, or create the state with logged => false.")));
	if (wal_level < WAL_LEVEL_REPLICA || max_replication_slots <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("a logged state needs wal_level \"replica\" or \"logical\" and max_replication_slots above 0"),
				 errdetail("A replication slot keeps the WAL that recovery of logged states reads.")));
}

/*
 * logged_before_restore, before a restore creates logged states: the slot
 * that keeps their WAL is made if there is none, and they are counted
 * pending until registered (snapshot/restore.c uncounts them).  Where WAL
 * cannot be kept for them, they are restored as they are, as before
 * logged states had a slot.
 */
void
logged_before_restore(void)
{
	if (state_backend_checkpoint_dir[0] == '\0' || wal_level < WAL_LEVEL_REPLICA ||
		max_replication_slots <= 0)
		registry_logged_pending(1);
	else
		slot_keep(InvalidXLogRecPtr, true, true);
}

/*
 * logged_before_change, before alter_state makes a logged state: refused
 * where its WAL could not be kept, as a create is; the slot that keeps it
 * is made if there is none, and the state counts pending until the change
 * registers it (state_evolve uncounts it).
 */
void
logged_before_change(void)
{
	logged_check_create();
	slot_keep(InvalidXLogRecPtr, true, true);
}

/*
 * logged_create creates a logged state: refused where its WAL could not be
 * kept (object_not_in_prerequisite_state), after making the slot that keeps
 * it if there is none yet, before the state's first record.  Returns its
 * registry slot.
 */
int
logged_create(StateDesc *desc)
{
	int			slot;

	logged_check_create();
	slot_keep(InvalidXLogRecPtr, true, true);
	PG_TRY();
	{
		slot = state_ops_create(desc);
	}
	PG_FINALLY();
	{
		registry_logged_pending(-1);
	}
	PG_END_TRY();
	return slot;
}

/*
 * logged_at_commit makes this session's logged changes as durable as
 * synchronous_commit asks, as PostgreSQL does for a commit record: flushed,
 * and confirmed by synchronous standbys.  PostgreSQL does not wait for a
 * transaction that has no xid, which is what most state calls run in.
 */
void
logged_at_commit(void)
{
	XLogRecPtr	lsn;

	/* The worker's writes first: if one failed, nothing is forgotten. */
	if (state_wal_remote_pending())
		keyed_backend_flush_all();
	lsn = state_wal_take_last();
	if (state_wal_take_remote())
		lsn = Max(lsn, channel_session_lsn());
	if (lsn == InvalidXLogRecPtr)
		return;
	if (synchronous_commit > SYNCHRONOUS_COMMIT_OFF)
	{
		XLogFlush(lsn);

		/*
		 * Only sessions wait for synchronous standbys.  The workers write on
		 * sessions' behalf (a session waits for the worker's records it
		 * depends on: channel_session_lsn) or deliver at least once (timer
		 * handlers); and SyncRepWaitForLSN ends early only for a process
		 * being terminated as a session is, so a worker waiting there when
		 * the standby goes (a failover) would hold off a fast shutdown
		 * forever.
		 */
		if (MyBackendType == B_BACKEND)
			SyncRepWaitForLSN(lsn, true);
	}
	else
		XLogSetAsyncXactLSN(lsn);
}

/* ---------------------------------------------------------------- recovery */

/* How long the start waits before it tries again what it could not apply. */
#define RECOVER_RETRY_MS	1000

/*
 * logged_start_wait, in the start of the worker, which cannot go on (what
 * it could not do is published: logged_set_blocked): wait ms before the
 * caller tries again.  A configuration reload is applied meanwhile (what
 * the error names may be a setting).  A shutdown ends the worker here: the
 * states are half loaded or replayed, so no checkpoint may be taken of
 * them; the next start loads and replays again from the checkpoint the
 * slot keeps WAL for.  When a backend's store failed, a new process must
 * open it: the worker only waits for the shutdown, and says so.
 */
void
logged_start_wait(int ms)
{
	const char *failed = keyed_backends_worker_failed();

	if (failed != NULL)
		ereport(WARNING,
				(errmsg("state_backend serves no state: a write to the storage of backend \"%s\" failed while states were loaded or their WAL replayed",
						failed),
				 errdetail("No checkpoint is taken, so the newest checkpoint and the WAL from it on are kept."),
				 errhint("Restart the server once the cause is fixed (free disk space): the start loads and replays them again.")));
	do
	{
		state_pause(ms);
		if (ShutdownRequestPending)
		{
			ereport(LOG,
					(errmsg("state_backend stops its start: the server shuts down; the next start loads the states and replays the WAL of logged states again")));
			proc_exit(1);
		}
		if (ConfigReloadPending)
			state_settings_reload();
		/* Nothing may be written to that store again by this process. */
	} while (failed != NULL);
}

/* The start cannot apply the WAL record at lsn (error why): wait, then again. */
static void
recover_wait(XLogRecPtr lsn, const char *why)
{
	/* Never InvalidXLogRecPtr: that would read as "not stopped". */
	logged_set_blocked_record(Max(lsn, 1), why);
	logged_start_wait(RECOVER_RETRY_MS);
}

/*
 * recover_open opens the replay and finds where it begins (*start); an
 * error is reported, and it is tried again (recover_wait): nothing was
 * applied yet.  NULL when WAL has nothing for it: no logged state, or the
 * WAL from *start on is gone (reported: they come back as of the
 * checkpoint, which is all there is).
 */
static LoggedReplay *
recover_open(const SnapshotManifest *checkpoint, XLogRecPtr *start)
{
	for (;;)
	{
		MemoryContext cxt = CurrentMemoryContext;
		LoggedReplay *volatile r = NULL;
		volatile bool found = false;
		ErrorData  *volatile edata = NULL;

		PG_TRY();
		{
			r = replay_open(checkpoint, logged_slot_position(), false, start);
			/* WAL removed (max_slot_wal_keep_size) is no error to wait on. */
			if (*start != InvalidXLogRecPtr && replay_readable(*start))
				found = replay_seek(r, *start);
		}
		PG_CATCH();
		{
			edata = catch_error(cxt);
		}
		PG_END_TRY();
		if (edata == NULL)
		{
			if (found)
				return r;
			if (*start != InvalidXLogRecPtr)
				ereport(WARNING,
						(errmsg("state_backend found no WAL at %X/%X: logged states come back as of their newest checkpoint",
								LSN_FORMAT_ARGS(*start))));
			while (!replay_close(r))
				recover_wait(*start, "the replay of logged states could not be finished");
			return NULL;
		}
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("state_backend could not begin replaying the WAL of logged states: %s",
						edata->message),
				 errdetail("It is tried again in a second; no state is served meanwhile.")));
		recover_wait(*start, edata->message);
		FreeErrorData(edata);
	}
}

/*
 * logged_recover replays logged states' WAL after the worker loaded the
 * checkpoint (its MANIFEST; NULL: none) into fresh shared memory.  States keep
 * their ids across restarts, so WAL names them whatever happened since.
 * Returns whether logged states now exist: then the worker takes a
 * checkpoint, so that the next recovery has less to replay.  It returns
 * only once every record is applied: one that cannot be is tried again
 * every second (recover_wait), and never skipped.
 */
bool
logged_recover(const SnapshotManifest *checkpoint)
{
	TimestampTz began = GetCurrentTimestamp();
	bool		any = false;
	StateDesc  *live;
	int			nlive;
	XLogRecPtr	start = InvalidXLogRecPtr;
	LoggedReplay *r = NULL;

	if (state_backend_restore_on_start)
		r = recover_open(checkpoint, &start);
	if (r != NULL)
	{
		XLogRecPtr	until = GetFlushRecPtr(NULL);
		int64		applied = 0;
		XLogRecPtr	failed;
		const char *why;
		bool		at_end;

		ereport(LOG,
				(errmsg("state_backend replays the WAL of logged states from %X/%X",
						LSN_FORMAT_ARGS(start))));
		for (;;)
		{
			applied += replay_read(r, until, 0, &at_end);
			failed = replay_failed(r, &why);
			if (failed == InvalidXLogRecPtr)
				break;
			recover_wait(failed, why);
		}
		while (!replay_close(r))
			recover_wait(replay_position(r), "the replay of logged states could not be finished");
		logged_set_blocked(InvalidXLogRecPtr, 0, NULL);
		ereport(LOG,
				(errmsg("state_backend replayed " INT64_FORMAT " WAL records of logged states from %X/%X in %ld ms",
						applied, LSN_FORMAT_ARGS(start),
						(long) ((GetCurrentTimestamp() - began) / 1000))));
	}

	live = palloc(sizeof(StateDesc) * Max(state_backend_max_states, 1));
	nlive = registry_copy_all(live, NULL);
	for (int i = 0; i < nlive && !any; i++)
		any = live[i].logged;
	pfree(live);
	return any;
}

/*
 * slot_drop_unused drops the slot when no logged state exists, is being
 * restored or created; returns whether there is no slot any more.  A
 * logical slot of the name is not ours, and stays.
 */
static bool
slot_drop_unused(void)
{
	LWLock	   *lock = state_backend_lock(LOCK_WAL_SLOT);
	MemoryContext cxt = CurrentMemoryContext;
	volatile bool gone = false;

	PG_TRY();
	{
		ReplicationSlot *s;

		LWLockAcquire(lock, LW_EXCLUSIVE);
		s = SearchNamedReplicationSlot(LOGGED_SLOT_NAME, true);
		if (s == NULL)
			gone = true;
		else if (!SlotIsLogical(s) && !registry_any_logged())
		{
			ReplicationSlotDrop(LOGGED_SLOT_NAME, true);
			gone = true;
			ereport(LOG,
					(errmsg("state_backend dropped replication slot \"%s\": no logged state is left",
							LOGGED_SLOT_NAME)));
		}
		LWLockRelease(lock);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		if (MyReplicationSlot != NULL)
			ReplicationSlotRelease();
		if (LWLockHeldByMe(lock))
			LWLockRelease(lock);
		EmitErrorReport();
		FlushErrorState();
	}
	PG_END_TRY();
	return gone;
}

/*
 * logged_checkpoint_done: WAL before a completed checkpoint's cut can go.
 * A checkpoint that holds no logged state, taken when none is left, needs
 * none of it: the slot goes (recovery then has nothing to replay).
 */
void
logged_checkpoint_done(XLogRecPtr wal_position, bool holds_logged)
{
	if (!holds_logged && slot_drop_unused())
		return;
	if (wal_position != InvalidXLogRecPtr)
		slot_keep_in_worker(wal_position, false);
}

/*
 * logged_wants_checkpoint, in the worker of a primary (looked at once a
 * second): whether a checkpoint is due for the WAL that logged states keep,
 * whatever state_backend.checkpoint_interval says: the slot holds more
 * than max_wal_size, or it is left without a logged state (the checkpoint
 * drops it).
 */
bool
logged_wants_checkpoint(void)
{
	static TimestampTz last_look = 0;
	XLogRecPtr	kept;
	bool		exists;

	if (RecoveryInProgress() || state_backend_checkpoint_dir[0] == '\0' ||
		!TimestampDifferenceExceeds(last_look, GetCurrentTimestamp(), 1000))
		return false;
	last_look = GetCurrentTimestamp();
	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	exists = SearchNamedReplicationSlot(LOGGED_SLOT_NAME, false) != NULL;
	LWLockRelease(ReplicationSlotControlLock);
	if (!exists)
		return false;
	if (!registry_any_logged())
		return true;
	kept = logged_slot_position();
	return kept != InvalidXLogRecPtr &&
		GetXLogInsertRecPtr() - kept > (uint64) max_wal_size_mb * 1024 * 1024;
}

/*
 * logged_newest_cut: the WAL position of the newest checkpoint's cut in the
 * checkpoint directory (InvalidXLogRecPtr: none, or unreadable).
 */
XLogRecPtr
logged_newest_cut(void)
{
	MemoryContext cxt = CurrentMemoryContext;
	MemoryContext tmp;
	XLogRecPtr	lsn = InvalidXLogRecPtr;
	char	   *dir;
	int64		id;

	if (state_backend_checkpoint_dir[0] == '\0')
		return InvalidXLogRecPtr;
	/* Looked at every second for as long as a standby runs: nothing stays. */
	tmp = AllocSetContextCreate(cxt, "state_backend newest cut", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(tmp);
	dir = checkpoint_newest(state_backend_checkpoint_dir, &id);
	if (dir != NULL)
	{
		SnapshotSource src;
		SnapshotManifest *m = checkpoint_read_manifest(dir, &src, false);

		if (m != NULL)
			lsn = m->wal_position;
	}
	MemoryContextSwitchTo(cxt);
	MemoryContextDelete(tmp);
	return lsn;
}

/*
 * logged_keep_for_standby, in the worker of a standby: keep the WAL from
 * the newest checkpoint's position (the checkpoint directory is shared with
 * the primary), which a restart of the standby replays from, and from
 * needed on (what the worker has still to read; InvalidXLogRecPtr: none).
 */
void
logged_keep_for_standby(XLogRecPtr needed)
{
	static XLogRecPtr kept = InvalidXLogRecPtr;
	static TimestampTz last_look = 0;
	XLogRecPtr	lsn;

	if (state_backend_checkpoint_dir[0] == '\0' || wal_level < WAL_LEVEL_REPLICA ||
		max_replication_slots <= 0)
		return;
	/* A look at the checkpoint directory every second is enough. */
	if (!TimestampDifferenceExceeds(last_look, GetCurrentTimestamp(), 1000))
		return;
	last_look = GetCurrentTimestamp();
	lsn = logged_newest_cut();
	if (needed != InvalidXLogRecPtr && (lsn == InvalidXLogRecPtr || needed < lsn))
		lsn = needed;
	if (kept != InvalidXLogRecPtr && (lsn == kept || lsn == InvalidXLogRecPtr))
		return;
	slot_keep_in_worker(lsn, true);
	kept = lsn != InvalidXLogRecPtr ? lsn : logged_slot_position();
}

/*
 * logged_set_blocked: the state worker cannot apply the WAL record at lsn,
 * or load checkpoint checkpoint, for the reason detail (a sentence), and
 * tries again; with neither, it can again.  Sessions that wait for the
 * worker get an error with that detail, and state.worker shows where
 * (apply_blocked_lsn, restore_blocked_checkpoint).  The registry keeps it,
 * as the sessions wait there.
 */
void
logged_set_blocked(XLogRecPtr lsn, int64 checkpoint, const char *detail)
{
	registry_set_blocked(lsn, checkpoint, detail);
}

/*
 * logged_set_blocked_record: the WAL record at lsn could not be applied,
 * with the error message why (InvalidXLogRecPtr: it can be again).
 */
void
logged_set_blocked_record(XLogRecPtr lsn, const char *why)
{
	char	   *detail = NULL;

	if (lsn != InvalidXLogRecPtr)
		detail = psprintf("The WAL record of logged states at %X/%X could not be applied: %s.",
						  LSN_FORMAT_ARGS(lsn), why ? why : "");
	logged_set_blocked(lsn, 0, detail);
	if (detail)
		pfree(detail);
}
