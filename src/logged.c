/*
 * logged.c
 *		Logged states and PostgreSQL's WAL: what a session checks when it
 *		creates one and waits for when it commits, the replication slot that
 *		keeps the WAL recovery needs, and recovery itself.
 *
 * Changes are logged where they are made (format/state_wal.h).  A cut's
 * WAL position parts the changes a checkpoint holds from those it does not
 * (catalog/registry.c, registry_copy_all), and the MANIFEST records it.
 * After a crash or a promotion the state worker loads the newest checkpoint
 * (snapshot/restore.c), then logged_recover replays the logged states'
 * records from that position to the end of WAL, before sessions are
 * served, and the worker takes a checkpoint at once: the states' ids are
 * new ones, and WAL written from now on names them.  States whose backend
 * kept their data across the restart (KeyedStateBackend.applied_lsn) skip the records their data
 * already holds.
 *
 * The slot "state_backend" keeps WAL from the newest checkpoint's position:
 * made when the first logged state is created (or, on a standby, by the
 * worker), moved forward when a checkpoint completes.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/rmgr.h"
#include "access/xlog.h"
#include "access/xlogreader.h"
#include "access/xlogrecovery.h"
#include "access/xlogutils.h"
#include "miscadmin.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "replication/slot.h"
#include "replication/syncrep.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "backend/keyed_backend.h"
#include "catalog/registry.h"
#include "common/locks.h"
#include "common/settings.h"
#include "format/snapshot_format.h"
#include "format/state_wal.h"
#include "ipc/channel.h"
#include "logged.h"
#include "logged_txn.h"
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
static XLogRecPtr
slot_position(void)
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

/* In the worker: log the error being handled, and go on. */
static void
report_error(MemoryContext cxt)
{
	MemoryContextSwitchTo(cxt);
	EmitErrorReport();
	FlushErrorState();
	LWLockReleaseAll();
}

/* A logged state records name, by the id they carry. */
typedef struct ReplayTarget
{
	uint32		wal_id;			/* hash key */
	StateDesc	desc;
	int			slot;
	XLogRecPtr	applied;		/* records ending here or before are in */
	bool		hidden;			/* being restored: not published yet */
} ReplayTarget;

static StateDesc *adopted = NULL;
static int	nadopted = 0;

/*
 * logged_note_adopted notes the states whose backend kept their data
 * across the restart, before the checkpoint is loaded: they keep their ids.
 */
void
logged_note_adopted(void)
{
	adopted = MemoryContextAlloc(TopMemoryContext,
								 sizeof(StateDesc) * Max(state_backend_max_states, 1));
	nadopted = registry_copy_all(adopted, NULL);
}

static void
map_add(HTAB *map, uint32 wal_id, const StateDesc *desc, int slot, XLogRecPtr applied,
		bool hidden)
{
	bool		found;
	ReplayTarget *t = hash_search(map, &wal_id, HASH_ENTER, &found);

	t->desc = *desc;
	t->slot = slot;
	t->applied = applied;
	t->hidden = hidden;
}

/* Was the state with this id kept by its backend across the restart? */
static bool
is_adopted(uint32 id)
{
	for (int i = 0; i < nadopted; i++)
		if (adopted[i].id == id)
			return true;
	return false;
}

/*
 * map_checkpoint maps the logged states of the checkpoint at dir to the
 * states it was loaded into, which kept their ids, and returns its cut's
 * WAL position (InvalidXLogRecPtr when unknown); *any_logged is set when
 * it holds a logged state.
 */
static XLogRecPtr
map_checkpoint(HTAB *map, const char *dir, bool *any_logged)
{
	SnapshotSource src;
	SnapshotManifest *m;

	memset(&src, 0, sizeof(src));
	src.dir = dir;
	src.name = dir;
	src.trusted = true;
	m = snapshot_read_manifest(&src);
	for (int i = 0; i < m->nstates; i++)
	{
		const StateDesc *d = &m->states[i].desc;
		StateDesc	cur;
		int			slot;

		*any_logged |= d->logged;
		if (!d->logged || hash_search(map, &d->id, HASH_FIND, NULL) != NULL)
			continue;
		slot = registry_find(d->id, &cur);
		if (slot >= 0 && cur.logged && cur.dbid == d->dbid)
			map_add(map, d->id, &cur, slot, InvalidXLogRecPtr, false);
	}
	return m->wal_position;
}

/*
 * make_room_for_name: a state is about to appear under a name another
 * state has.  One its backend kept across the restart is a later state of
 * that name (WAL drops the earlier one further on): returns false, and
 * the state appears hidden meanwhile.  Any other was replaced (by a
 * restore: an unlogged state, whose drop is not logged): it goes.
 */
static bool
make_room_for_name(Oid dbid, const char *name)
{
	StateDesc  *descs = palloc(sizeof(StateDesc) * Max(state_backend_max_states, 1));
	int			n = registry_copy_all(descs, NULL);
	bool		room = true;

	for (int i = 0; i < n; i++)
	{
		StateDesc	cur;
		int			slot;

		if (descs[i].dbid != dbid || strcmp(NameStr(descs[i].name), name) != 0)
			continue;
		if (is_adopted(descs[i].id))
		{
			room = false;
			continue;
		}
		slot = registry_find(descs[i].id, &cur);
		if (slot >= 0)
			(void) state_ops_drop(&cur, slot);
	}
	pfree(descs);
	return room;
}

/*
 * A CREATE record: make the state, or publish the one a restore logged as
 * hidden.  A CREATE_HIDDEN record: make a hidden state that the restore's
 * entries go to.
 */
static bool
replay_create(HTAB *map, const StateWalRecord *rec)
{
	StateDesc	d = rec->desc;
	bool		hidden = rec->kind == STATE_WAL_CREATE_HIDDEN;
	ReplayTarget *t = hash_search(map, &rec->state_id, HASH_FIND, NULL);
	const KeyedStateBackend *b;
	StateTarget target;
	int			slot;

	if (t != NULL)
	{
		if (!(t->hidden && !hidden && make_room_for_name(t->desc.dbid, NameStr(t->desc.name))))
			return false;
		state_ops_publish(t->desc.dbid, &t->desc, 1, STATE_PUBLISH_KEEP_ALL, true);
		t->hidden = false;
		return true;
	}
	if (keyed_backend_provider(d.backend) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the WAL of logged state \"%s\" names backend %d, which is not registered on this server",
						NameStr(d.name), d.backend),
				 errhint("Add the library that provides it to shared_preload_libraries.")));
	if (!hidden)
		hidden = !make_room_for_name(d.dbid, NameStr(d.name));
	b = keyed_backend_by_id(d.backend);
	/* It keeps its id: WAL and checkpoints name it so. */
	slot = registry_create_as(&d);
	target.desc = &d;
	target.slot = slot;
	PG_TRY();
	{
		if (b->create)
			b->create(&target);
	}
	PG_CATCH();
	{
		state_ops_discard(&d, slot);
		PG_RE_THROW();
	}
	PG_END_TRY();
	/* Published alone: every other state of the database stays. */
	if (!hidden)
		state_ops_publish(d.dbid, &d, 1, STATE_PUBLISH_KEEP_ALL, true);
	map_add(map, rec->state_id, &d, slot, InvalidXLogRecPtr, hidden);
	return true;
}

/* Hidden states whose restore never published them are dropped. */
static void
discard_hidden(HTAB *map)
{
	HASH_SEQ_STATUS seq;
	ReplayTarget *t;

	hash_seq_init(&seq, map);
	while ((t = hash_seq_search(&seq)) != NULL)
		if (t->hidden)
			state_ops_discard(&t->desc, t->slot);
}

/* Apply one change record to the state it names. */
static void
replay_change(ReplayTarget *t, const StateWalRecord *rec)
{
	const KeyedStateBackend *b = keyed_backend_by_id(t->desc.backend);
	StateTarget st;
	StateKey	key;

	st.desc = &t->desc;
	st.slot = t->slot;
	state_key_set(&key, rec->key, rec->keylen);
	switch (rec->kind)
	{
		case STATE_WAL_PUT:
			b->put(&st, &key, rec->value, rec->valuelen);
			break;
		case STATE_WAL_APPEND:
			b->append(&st, &key, rec->value, rec->valuelen);
			break;
		case STATE_WAL_REMOVE:
			(void) b->remove(&st, &key);
			break;
		case STATE_WAL_MAP_PUT:
			b->map_put(&st, &key, rec->map_key, rec->map_keylen,
					   rec->value ? rec->value : "", rec->valuelen, rec->value == NULL);
			break;
		case STATE_WAL_MAP_REMOVE:
			(void) b->map_remove(&st, &key, rec->map_key, rec->map_keylen);
			break;
		case STATE_WAL_TRUNCATE:
			(void) b->truncate(&st);
			break;
	}
}

/* Apply one record; false when it changed nothing. */
static bool
replay_record(HTAB *map, XLogReaderState *reader)
{
	StateWalRecord rec;
	ReplayTarget *t;

	if (!state_wal_decode(reader, &rec))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("malformed state_backend WAL record")));
	if (rec.kind == STATE_WAL_CREATE || rec.kind == STATE_WAL_CREATE_HIDDEN)
		return replay_create(map, &rec);
	t = hash_search(map, &rec.state_id, HASH_FIND, NULL);
	if (t == NULL)
		return false;
	if (rec.kind == STATE_WAL_DROP)
	{
		StateDesc	d = t->desc;
		int			slot = t->slot;

		hash_search(map, &rec.state_id, HASH_REMOVE, NULL);
		(void) state_ops_drop(&d, slot);
		return true;
	}
	if (rec.txn)
	{
		/* Applied at its transaction's commit record, if one comes. */
		replay_txn_hold(&rec, reader->EndRecPtr);
		return false;
	}
	if (reader->EndRecPtr <= t->applied)
		return false;
	replay_change(t, &rec);
	return true;
}

/*
 * replay_txn_outcome applies, at a transaction's commit record, the records
 * of transactional states held for it, and forgets them at its abort
 * record; returns how many changed something.
 */
static int64
replay_txn_outcome(HTAB *map, XLogReaderState *reader)
{
	uint8		info = XLogRecGetInfo(reader) & XLOG_XACT_OPMASK;
	TransactionId xid = XLogRecGetXid(reader);
	ListCell   *lc;
	int64		n = 0;

	if (info == XLOG_XACT_COMMIT)
		foreach(lc, replay_txn_take(xid))
		{
			HeldRecord *h = lfirst(lc);
			ReplayTarget *t = hash_search(map, &h->rec.state_id, HASH_FIND, NULL);

			/*
			 * Not skipped below the state's applied position: its commit
			 * applies them apart from the backend's own watermark, and they
			 * hold whole images, so applying one again changes nothing.
			 */
			if (t == NULL)
				continue;
			replay_change(t, &h->rec);
			n++;
		}
	if (info == XLOG_XACT_COMMIT || info == XLOG_XACT_ABORT)
		replay_txn_forget(xid);
	return n;
}

/* Report why reading WAL stopped, unless it reached the end. */
static void
report_read_stop(XLogReaderState *reader, const char *errormsg, bool end_of_wal)
{
	if (errormsg != NULL && !end_of_wal)
		ereport(WARNING,
				(errmsg("state_backend stopped replaying WAL at %X/%X: %s",
						LSN_FORMAT_ARGS(reader->EndRecPtr), errormsg),
				 errdetail("Logged states hold the changes before that point only.")));
}

/* Records applied between commits of posted writes (a backend's batch: flush). */
#define REPLAY_FLUSH_EVERY	10000

/*
 * replay reads local WAL from start to its end and applies the logged
 * states' records; returns how many changed something.  A record that
 * cannot be applied is reported and skipped.  Each record's memory is
 * freed once it is applied.
 */
static int64
replay(HTAB *map, XLogRecPtr start)
{
	ReadLocalXLogPageNoWaitPrivate *priv = palloc0(sizeof(ReadLocalXLogPageNoWaitPrivate));
	XLogReaderState *reader;
	XLogRecPtr	end = GetFlushRecPtr(NULL);
	XLogRecPtr	done = start;
	int64		applied = 0;
	int64		since_flush = 0;
	MemoryContext cxt = CurrentMemoryContext;
	MemoryContext rec_cxt = AllocSetContextCreate(cxt, "state_backend replayed record",
												  ALLOCSET_DEFAULT_SIZES);

	reader = XLogReaderAllocate(wal_segment_size, NULL,
								XL_ROUTINE(.page_read = &read_local_xlog_page_no_wait,
										   .segment_open = &wal_segment_open,
										   .segment_close = &wal_segment_close),
								priv);
	if (reader == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory while reading WAL")));
	if (XLogFindNextRecord(reader, start) == InvalidXLogRecPtr)
	{
		ereport(WARNING,
				(errmsg("state_backend found no WAL at %X/%X: logged states come back as of their newest checkpoint",
						LSN_FORMAT_ARGS(start))));
		XLogReaderFree(reader);
		return 0;
	}
	PG_TRY();
	{
		for (;;)
		{
			char	   *errormsg = NULL;
			XLogRecord *record;

			CHECK_FOR_INTERRUPTS();

			/*
			 * Asked to stop: go without a word more.  The states are half
			 * replayed, so no checkpoint may be taken of them; the next
			 * start replays it all again.
			 */
			if (ShutdownRequestPending)
			{
				ereport(LOG,
						(errmsg("state_backend stops replaying WAL: the server shuts down")));
				proc_exit(1);
			}
			record = XLogReadRecord(reader, &errormsg);
			if (record == NULL)
				report_read_stop(reader, errormsg, priv->end_of_wal);
			if (record == NULL || reader->ReadRecPtr >= end)
				break;
			if (XLogRecGetRmid(reader) != STATE_WAL_RMGR_ID &&
				!(XLogRecGetRmid(reader) == RM_XACT_ID && replay_txn_any()))
				continue;

			/*
			 * Logged nothing meanwhile; a backend that keeps its data stamps
			 * each write with the end of the last record wholly applied.
			 */
			state_wal_set_replaying(done);
			MemoryContextSwitchTo(rec_cxt);
			PG_TRY();
			{
				if (XLogRecGetRmid(reader) == RM_XACT_ID)
					applied += replay_txn_outcome(map, reader);
				else if (replay_record(map, reader))
					applied++;
				/* Wholly applied: what is committed from here on holds it. */
				state_wal_set_replaying(reader->EndRecPtr);
				if (++since_flush >= REPLAY_FLUSH_EVERY)
				{
					keyed_backend_flush_all();
					since_flush = 0;
				}
			}
			PG_CATCH();
			{
				report_error(rec_cxt);
				ereport(WARNING,
						(errmsg("state_backend could not replay the WAL record at %X/%X; it is skipped",
								LSN_FORMAT_ARGS(reader->ReadRecPtr))));
			}
			PG_END_TRY();
			MemoryContextSwitchTo(cxt);
			MemoryContextReset(rec_cxt);
			done = reader->EndRecPtr;
		}
	}
	PG_CATCH();
	{
		report_error(cxt);
		ereport(WARNING,
				(errmsg("state_backend stopped replaying WAL at %X/%X",
						LSN_FORMAT_ARGS(reader->EndRecPtr))));
	}
	PG_END_TRY();
	state_wal_set_replaying(done);
	(void) replay_txn_end();
	PG_TRY();
	{
		keyed_backend_flush_all();
		discard_hidden(map);
	}
	PG_CATCH();
	{
		report_error(cxt);
		ereport(WARNING,
				(errmsg("state_backend could not finish replaying WAL of logged states")));
	}
	PG_END_TRY();
	state_wal_set_replaying(InvalidXLogRecPtr);
	XLogReaderFree(reader);
	MemoryContextDelete(rec_cxt);
	return applied;
}

/*
 * map_kept maps the states whose backend kept their data across the
 * restart, with the WAL position their data holds changes up to.
 */
static void
map_kept(HTAB *map)
{
	for (int i = 0; i < nadopted; i++)
	{
		const KeyedStateBackend *b = keyed_backend_by_id(adopted[i].backend);
		StateDesc	cur;
		int			slot = registry_find(adopted[i].id, &cur);

		if (slot >= 0 && cur.logged)
			map_add(map, cur.id, &cur, slot,
					b->applied_lsn ? b->applied_lsn() : InvalidXLogRecPtr, false);
	}
}

/*
 * logged_recover replays logged states' WAL after the worker loaded the
 * checkpoint at dir (NULL: none) into fresh shared memory.  States keep
 * their ids across restarts, so WAL names them whatever happened since.
 * Returns whether logged states now exist: then the worker takes a
 * checkpoint, so that the next recovery has less to replay.
 */
bool
logged_recover(const char *dir)
{
	HASHCTL		ctl;
	HTAB	   *map;
	volatile XLogRecPtr start = InvalidXLogRecPtr;
	bool		any = false;
	TimestampTz began = GetCurrentTimestamp();
	volatile int64 applied = 0;
	MemoryContext cxt = CurrentMemoryContext;
	StateDesc  *live;
	int			nlive;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(uint32);
	ctl.entrysize = sizeof(ReplayTarget);
	ctl.hcxt = CurrentMemoryContext;
	map = hash_create("state_backend replay", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	/* The server must come up: a failure is reported, and states served as they are. */
	PG_TRY();
	{
		XLogRecPtr	slot;
		bool		any_logged = false;

		map_kept(map);
		if (dir != NULL)
			start = map_checkpoint(map, dir, &any_logged);
		slot = slot_position();

		/*
		 * A checkpoint that holds no logged state may be older than the
		 * slot, which the first logged state made: every logged record is
		 * past the slot's position, and WAL before it may be gone.
		 */
		if (start == InvalidXLogRecPtr || (!any_logged && slot > start))
			start = slot;
		if (start != InvalidXLogRecPtr && state_backend_restore_on_start)
		{
			ereport(LOG,
					(errmsg("state_backend replays the WAL of logged states from %X/%X",
							LSN_FORMAT_ARGS(start))));
			applied = replay(map, start);
			ereport(LOG,
					(errmsg("state_backend replayed " INT64_FORMAT " WAL records of logged states from %X/%X in %ld ms",
							applied, LSN_FORMAT_ARGS(start),
							(long) ((GetCurrentTimestamp() - began) / 1000))));
		}
	}
	PG_CATCH();
	{
		report_error(cxt);
		state_wal_set_replaying(InvalidXLogRecPtr);
		ereport(WARNING,
				(errmsg("state_backend could not replay the WAL of logged states: they are served as the checkpoint left them")));
	}
	PG_END_TRY();

	live = palloc(sizeof(StateDesc) * Max(state_backend_max_states, 1));
	nlive = registry_copy_all(live, NULL);
	for (int i = 0; i < nlive && !any; i++)
		any = live[i].logged;
	pfree(live);
	hash_destroy(map);
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
	kept = slot_position();
	return kept != InvalidXLogRecPtr &&
		GetXLogInsertRecPtr() - kept > (uint64) max_wal_size_mb * 1024 * 1024;
}

/*
 * logged_keep_for_standby, in the worker of a standby: keep the WAL from
 * the newest checkpoint's position (the checkpoint directory is shared with
 * the primary), which promotion replays from.
 */
void
logged_keep_for_standby(void)
{
	static XLogRecPtr kept = InvalidXLogRecPtr;
	static TimestampTz last_look = 0;
	MemoryContext cxt = CurrentMemoryContext;
	XLogRecPtr	lsn = InvalidXLogRecPtr;
	char	   *dir;
	int64		id;

	if (state_backend_checkpoint_dir[0] == '\0' || wal_level < WAL_LEVEL_REPLICA ||
		max_replication_slots <= 0)
		return;
	/* A look at the checkpoint directory every second is enough. */
	if (!TimestampDifferenceExceeds(last_look, GetCurrentTimestamp(), 1000))
		return;
	last_look = GetCurrentTimestamp();
	dir = checkpoint_newest(state_backend_checkpoint_dir, &id);
	if (dir != NULL)
	{
		SnapshotSource src;

		memset(&src, 0, sizeof(src));
		src.dir = dir;
		src.name = dir;
		src.trusted = true;
		PG_TRY();
		{
			lsn = snapshot_read_manifest(&src)->wal_position;
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(cxt);
			FlushErrorState();
		}
		PG_END_TRY();
	}
	if (kept != InvalidXLogRecPtr && (lsn == kept || lsn == InvalidXLogRecPtr))
		return;
	slot_keep_in_worker(lsn, true);
	kept = lsn != InvalidXLogRecPtr ? lsn : slot_position();
}
