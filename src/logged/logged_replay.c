/*
 * logged/logged_replay.c
 *		Applying logged states' WAL records in the state worker.
 *
 * Records name states by id, and states keep their ids across restarts,
 * checkpoints and promotions, so a record applies to the state of its id
 * whatever happened since: a map from ids to the states of this server
 * (those the checkpoint loaded, those their backend kept, those a CREATE
 * record made) is all a replay needs.  After a crash or at a promotion
 * (logged.c) it reads from the newest checkpoint's cut to the end of WAL
 * once; on a hot standby (logged_standby.c) it goes on reading as the
 * standby replays WAL: the local WAL page reader gives it what the
 * startup process has replayed, never more, and it begins again where it
 * stopped for want of WAL.
 *
 * A transactional state's records wait for their transaction's commit
 * record (logged_txn.c).  A CLOCK record sets a standby's TTL clock to its
 * primary's.
 *
 * A record that cannot be applied (a full file system, a full LMDB map,
 * the memory limit) is never skipped: reading stops before it, the replay
 * position stays where it is, and the next read (replay_read, no sooner
 * than REPLAY_RETRY_MS later) applies it again.  replay_failed says where
 * it stopped and why, so that the start waits and takes no checkpoint, a
 * standby's worker applies nothing past it, and a promotion does not end.
 * A record is applied whole or not at all by every backend (a failed write
 * leaves the state as it was), and the records of a transaction applied
 * before one that failed are not held for it any more, so nothing is
 * applied twice.
 */
#include "postgres.h"

#include "access/rmgr.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlogreader.h"
#include "access/xlogutils.h"
#include "storage/standbydefs.h"
#include "miscadmin.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "backend/keyed_backend.h"
#include "catalog/registry.h"
#include "common/catch.h"
#include "common/fault.h"
#include "common/local_hash.h"
#include "common/settings.h"
#include "common/ttl_clock.h"
#include "format/snapshot_format.h"
#include "format/state_wal.h"
#include "logged/logged_replay.h"
#include "logged/logged_txn.h"
#include "state_ops.h"
#include "txn/txn_state.h"

/* A logged state records name, by the id they carry. */
typedef struct ReplayTarget
{
	uint32		wal_id;			/* hash key */
	StateDesc	desc;
	int			slot;
	XLogRecPtr	applied;		/* records ending here or before are in */
	bool		hidden;			/* being restored: not published yet */
} ReplayTarget;

struct LoggedReplay
{
	HTAB	   *map;			/* of ReplayTarget */
	XLogReaderState *reader;
	ReadLocalXLogPageNoWaitPrivate *priv;
	XLogRecPtr	next;			/* where the next record begins */
	bool		begin;			/* XLogBeginRead(next) before reading */
	bool		standby;		/* a hot standby's: CLOCK records pin its clock */
	XLogRecPtr	applied_before; /* records ending here or before are in */
	bool		live;			/* replay_open_live's: states kept their data */
	XLogRecPtr	held_min;		/* the lowest position below applied_before
								 * that a backend keeping its data holds
								 * (InvalidXLogRecPtr: none lower) */
	pg_atomic_uint64 *progress;	/* where to publish each record's end, or NULL */
	XLogRecPtr	failed_at;		/* a record that could not be applied begins
								 * here (InvalidXLogRecPtr: none) */
	char	   *failed_why;		/* its error (in cxt) */
	XLogRecPtr	applied_end;	/* the end of the last record applied, even
								 * if reading stopped before it moved on */
	TimestampTz retry_at;		/* when it is tried again */
	bool		failed_now;		/* in the replay_read under way */
	MemoryContext cxt;			/* the replay's own */
	MemoryContext rec_cxt;		/* one record's work */
};

/* In the worker: log the error being handled, and go on. */
static void
report_error(MemoryContext cxt)
{
	MemoryContextSwitchTo(cxt);
	EmitErrorReport();
	FlushErrorState();
	LWLockReleaseAll();
}

/* How long a record that could not be applied waits before it is tried again. */
#define REPLAY_RETRY_MS		1000

/*
 * replay_stop_failed, handling the error of applying (or reading) the record
 * that begins at lsn: note it, so that reading stops there and begins again
 * there, and report it at WARNING the first time, or when the error
 * changes.  Nothing is skipped.
 */
static void
replay_stop_at(LoggedReplay *r, XLogRecPtr lsn, int sqlerrcode, const char *message)
{
	bool		again = r->failed_at == lsn && r->failed_why != NULL &&
		strcmp(r->failed_why, message) == 0;

	if (!again)
		ereport(WARNING,
				(errcode(sqlerrcode),
				 errmsg("state_backend could not apply the WAL record of logged states at %X/%X: %s",
						LSN_FORMAT_ARGS(lsn), message),
				 errdetail("Nothing after it is applied, and no checkpoint is taken that would drop it, until it is applied."),
				 errhint("It is tried again every %d ms: free what the error names (disk space, LMDB map size, state_backend.memory_limit).",
						 REPLAY_RETRY_MS)));
	if (r->failed_why != NULL)
		pfree(r->failed_why);
	r->failed_why = MemoryContextStrdup(r->cxt, message);
	r->failed_at = lsn;
	r->failed_now = true;
	r->retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), REPLAY_RETRY_MS);
}

static void
replay_stop_failed(LoggedReplay *r, XLogRecPtr lsn, MemoryContext cxt)
{
	ErrorData  *edata;

	edata = catch_error(cxt);
	replay_stop_at(r, lsn, edata->sqlerrcode, edata->message);
	FreeErrorData(edata);
}

/* replay_stop_cleared: a replay_read went past what had failed, or through. */
static void
replay_stop_cleared(LoggedReplay *r)
{
	if (r->failed_at == InvalidXLogRecPtr)
		return;
	ereport(LOG,
			(errmsg("state_backend applied the WAL record of logged states at %X/%X that had failed, and goes on",
					LSN_FORMAT_ARGS(r->failed_at))));
	r->failed_at = InvalidXLogRecPtr;
	if (r->failed_why != NULL)
		pfree(r->failed_why);
	r->failed_why = NULL;
}


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
 * map_checkpoint maps the logged states of the checkpoint m (its MANIFEST)
 * to the states it was loaded into, which kept their ids, and returns its
 * cut's WAL position (InvalidXLogRecPtr when unknown); *any_logged is set
 * when it holds a logged state.
 */
static XLogRecPtr
map_checkpoint(HTAB *map, const SnapshotManifest *m, bool *any_logged)
{
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
 * the state appears hidden meanwhile, unless the state appearing replaced
 * it (alter_state; replaces: its id).  Any other was replaced (by a
 * restore, or a change: an unlogged state, whose drop is not logged): it
 * goes.
 */
static bool
make_room_for_name(Oid dbid, const char *name, uint32 replaces)
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
		if (is_adopted(descs[i].id) && descs[i].id != replaces)
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
 * A hidden state that the primary forgot: dropped there without a record
 * (its restore or change ended in a crash before its drop was logged) and
 * its id given to a new state, whose creation this is.  The primary holds
 * every state it made, hidden ones too, under ids of their own, so a
 * creation under the id of a hidden state is always of such a new state.
 */
static bool
forgotten_hidden(const ReplayTarget *t, const StateWalRecord *rec)
{
	if (!t->hidden)
		return false;
	if (rec->kind == STATE_WAL_CREATE_HIDDEN)
		return true;
	/* A CREATE that publishes it names the same state. */
	return t->desc.dbid != rec->desc.dbid ||
		strcmp(NameStr(t->desc.name), NameStr(rec->desc.name)) != 0 ||
		t->desc.kind != rec->desc.kind || t->desc.backend != rec->desc.backend;
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

	if (t != NULL && forgotten_hidden(t, rec))
	{
		StateDesc	gone = t->desc;
		int			gone_slot = t->slot;

		ereport(LOG,
				(errmsg("state_backend drops hidden state %u of \"%s\": its id names a new state \"%s\"",
						gone.id, NameStr(gone.name), NameStr(d.name)),
				 errdetail("The primary dropped the hidden state without a record of it.")));
		hash_search(map, &rec->state_id, HASH_REMOVE, NULL);
		state_ops_discard(&gone, gone_slot);
		t = NULL;
	}
	if (t != NULL)
	{
		if (!(t->hidden && !hidden &&
			  make_room_for_name(t->desc.dbid, NameStr(t->desc.name), t->desc.replaces)))
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
		hidden = !make_room_for_name(d.dbid, NameStr(d.name), d.replaces);
	b = keyed_backend_by_id(d.backend);
	/* It keeps its id: WAL and checkpoints name it so. */
	slot = registry_create_as(&d);
	target = state_target(&d, slot);
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

/*
 * A PUBLISH record: a restore's publication, applied whole.  The states it
 * drops go first (so that no name is taken twice), then its hidden states
 * are published together.  States this server does not hold are passed
 * over: dropped already, or kept by their backend, which stored the
 * publication once this record was durable (registry_get_stored).  A
 * replay that stops at an error here applies the rest when it tries again.
 */
static bool
replay_publish(HTAB *map, const StateWalRecord *rec)
{
	StateDesc  *descs = palloc(sizeof(StateDesc) * Max(rec->npublished, 1));
	ReplayTarget **targets = palloc(sizeof(ReplayTarget *) * Max(rec->npublished, 1));
	int			n = 0;
	bool		changed = false;

	for (uint32 i = 0; i < rec->ndropped; i++)
	{
		uint32		id = state_wal_publish_id(rec, i);
		ReplayTarget *t = hash_search(map, &id, HASH_FIND, NULL);
		StateDesc	d;

		if (t == NULL)
			continue;
		d = t->desc;
		(void) state_ops_drop(&d, t->slot);
		hash_search(map, &id, HASH_REMOVE, NULL);
		changed = true;
	}
	for (uint32 i = 0; i < rec->npublished; i++)
	{
		uint32		id = state_wal_publish_id(rec, rec->ndropped + i);
		ReplayTarget *t = hash_search(map, &id, HASH_FIND, NULL);

		if (t == NULL || !t->hidden || t->desc.dbid != rec->dbid ||
			!make_room_for_name(t->desc.dbid, NameStr(t->desc.name), t->desc.replaces))
			continue;
		descs[n] = t->desc;
		targets[n++] = t;
	}
	if (n > 0)
	{
		state_ops_publish(rec->dbid, descs, n, STATE_PUBLISH_KEEP_ALL, true);
		for (int i = 0; i < n; i++)
			targets[i]->hidden = false;
		changed = true;
	}
	pfree(descs);
	pfree(targets);
	return changed;
}

/*
 * Hidden states whose restore or change never published them are dropped
 * (each once, when it is called again after a failure).  A server that
 * writes WAL logs their drops: its standbys, which applied their creation,
 * drop them too rather than keep their ids, which this server gives to
 * new states once a checkpoint without them is where it starts from.
 */
static void
discard_hidden(HTAB *map)
{
	HASH_SEQ_STATUS seq;
	ReplayTarget *t;
	bool		log = !RecoveryInProgress();

	hash_seq_init(&seq, map);
	while ((t = hash_seq_search(&seq)) != NULL)
		if (t->hidden)
		{
			FAULT_POINT("replay.discard_hidden");
			if (log)
				registry_log_drop_of_hidden(t->slot, t->desc.id);
			state_ops_discard(&t->desc, t->slot);
			t->hidden = false;
		}
}

/* Apply one change record to the state it names. */
static void
replay_change(ReplayTarget *t, const StateWalRecord *rec)
{
	const KeyedStateBackend *b = keyed_backend_by_id(t->desc.backend);
	StateTarget st;
	StateKey	key;

	st = state_target(&t->desc, t->slot);
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
replay_record(LoggedReplay *r)
{
	XLogReaderState *reader = r->reader;
	HTAB	   *map = r->map;
	StateWalRecord rec;
	ReplayTarget *t;

	if (!state_wal_decode(reader, &rec))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("malformed state_backend WAL record")));
	/*
	 * Read again by a worker started again: states made or dropped, and the
	 * clock, are as they were.  Changes are skipped per state below, against
	 * what its backend holds.
	 */
	if ((rec.kind == STATE_WAL_CREATE || rec.kind == STATE_WAL_CREATE_HIDDEN ||
		 rec.kind == STATE_WAL_DROP || rec.kind == STATE_WAL_CLOCK ||
		 rec.kind == STATE_WAL_PUBLISH) &&
		reader->EndRecPtr <= r->applied_before)
		return false;
	if (rec.kind == STATE_WAL_CLOCK)
	{
		/* A standby's reads measure expiry on its primary's clock. */
		if (r->standby)
			ttl_clock_pin(rec.clock);
		return false;
	}
	if (rec.kind == STATE_WAL_CREATE || rec.kind == STATE_WAL_CREATE_HIDDEN)
		return replay_create(map, &rec);
	if (rec.kind == STATE_WAL_PUBLISH)
		return replay_publish(map, &rec);
	t = hash_search(map, &rec.state_id, HASH_FIND, NULL);
	if (t == NULL)
		return false;
	if (rec.kind == STATE_WAL_DROP)
	{
		StateDesc	d = t->desc;
		int			slot = t->slot;

		/* Forgotten once dropped: a drop that fails is tried again. */
		(void) state_ops_drop(&d, slot);
		hash_search(map, &rec.state_id, HASH_REMOVE, NULL);
		return true;
	}
	if (rec.txn)
	{
		/* Applied at its transaction's commit record, if one comes. */
		replay_txn_hold(&rec, reader->ReadRecPtr, reader->EndRecPtr);
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
 * record; returns how many changed something.  A commit applied before a
 * standby's worker started again is only forgotten.  On a standby, no
 * read sees a commit half applied (txn/txn_locks.c).  When one of them cannot
 * be applied, those applied before it are held no more, and the rest stay
 * held for the commit record's next reading.
 */
static int64
replay_txn_outcome(LoggedReplay *r)
{
	XLogReaderState *reader = r->reader;
	uint8		info = XLogRecGetInfo(reader) & XLOG_XACT_OPMASK;
	TransactionId xid = XLogRecGetXid(reader);
	List	   *records = NIL;
	volatile int done = 0;
	int64		n = 0;

	if (info == XLOG_XACT_COMMIT &&
		(reader->EndRecPtr > r->applied_before ||
		 (r->held_min != InvalidXLogRecPtr && reader->EndRecPtr > r->held_min)))
		records = replay_txn_take(xid);
	if (records != NIL && r->standby)
		txn_standby_apply_begin();
	PG_TRY();
	{
		ListCell   *lc;

		foreach(lc, records)
		{
			HeldRecord *h = lfirst(lc);
			ReplayTarget *t = hash_search(r->map, &h->rec.state_id, HASH_FIND, NULL);

			/*
			 * Not skipped below the state's applied position: the commit
			 * record, not the backend's watermark, says whether they are in.
			 */
			/*
			 * A standby's worker started again skips the commits a state
			 * holds already; the others apply them again whole.
			 */
			if (t != NULL && r->live && reader->EndRecPtr <= t->applied)
				t = NULL;
			if (t != NULL)
			{
				if (r->standby)
					FAULT_POINT("standby.txn_commit_record");
				else
					FAULT_POINT("replay.txn_commit_record");
				replay_change(t, &h->rec);
				n++;
			}
			done++;
		}
	}
	PG_CATCH();
	{
		if (records != NIL && r->standby)
			txn_standby_apply_end();
		replay_txn_applied(xid, done);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (records != NIL && r->standby)
		txn_standby_apply_end();
	if (info == XLOG_XACT_COMMIT || info == XLOG_XACT_ABORT)
		replay_txn_forget(xid);
	return n;
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

/* Records applied between commits of posted writes (a backend's batch: flush). */
#define REPLAY_FLUSH_EVERY	10000

static LoggedReplay *
replay_new(bool standby)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "state_backend replay",
											  ALLOCSET_DEFAULT_SIZES);
	LoggedReplay *r = MemoryContextAllocZero(cxt, sizeof(LoggedReplay));

	r->cxt = cxt;
	r->rec_cxt = AllocSetContextCreate(cxt, "state_backend replayed record",
									   ALLOCSET_DEFAULT_SIZES);
	r->standby = standby;
	r->map = local_hash_create("state_backend replay", 64, sizeof(uint32), sizeof(ReplayTarget),
							   cxt);
	return r;
}

static XLogReaderState *
reader_new(ReadLocalXLogPageNoWaitPrivate *priv)
{
	XLogReaderState *reader;

	reader = XLogReaderAllocate(wal_segment_size, NULL,
								XL_ROUTINE(.page_read = &read_local_xlog_page_no_wait,
										   .segment_open = &wal_segment_open,
										   .segment_close = &wal_segment_close),
								priv);
	if (reader == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory while reading WAL")));
	return reader;
}

/*
 * replay_readable: does local WAL hold a record at or after lsn, up to
 * what the server has flushed or (a standby) replayed?  False also when
 * the segment is gone.
 */
bool
replay_readable(XLogRecPtr lsn)
{
	ReadLocalXLogPageNoWaitPrivate priv;
	XLogReaderState *volatile reader = NULL;
	MemoryContext cxt = CurrentMemoryContext;
	volatile bool found = false;

	memset(&priv, 0, sizeof(priv));
	PG_TRY();
	{
		reader = reader_new(&priv);
		found = XLogFindNextRecord(reader, lsn) != InvalidXLogRecPtr;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
	}
	PG_END_TRY();
	if (reader != NULL)
		XLogReaderFree(reader);
	return found;
}

bool
replay_seek(LoggedReplay *r, XLogRecPtr start)
{
	XLogRecPtr	first;

	if (r->reader == NULL)
	{
		r->priv = MemoryContextAllocZero(r->cxt, sizeof(ReadLocalXLogPageNoWaitPrivate));
		r->reader = reader_new(r->priv);
	}
	r->priv->end_of_wal = false;
	if (r->standby)
		FAULT_POINT("standby.seek");
	else
		FAULT_POINT("replay.seek");
	first = XLogFindNextRecord(r->reader, start);
	if (first == InvalidXLogRecPtr)
		return false;
	r->next = first;
	r->begin = true;
	return true;
}

LoggedReplay *
replay_open(const SnapshotManifest *m, XLogRecPtr slot, bool standby, XLogRecPtr *start)
{
	LoggedReplay *r = replay_new(standby);
	bool		any_logged = false;
	MemoryContext old = MemoryContextSwitchTo(r->cxt);

	*start = InvalidXLogRecPtr;
	if (standby)
		FAULT_POINT("standby.open");
	else
		FAULT_POINT("replay.open");
	map_kept(r->map);
	if (m != NULL)
		*start = map_checkpoint(r->map, m, &any_logged);

	/*
	 * A checkpoint that holds no logged state may be older than the slot,
	 * which the first logged state made: every logged record is past the
	 * slot's position, and WAL before it may be gone.
	 */
	if (*start == InvalidXLogRecPtr || (!any_logged && slot > *start))
		*start = slot;
	MemoryContextSwitchTo(old);
	return r;
}

/*
 * adopt_live adds to a live replay's map a state that the worker before
 * this one applied WAL to: what it applied is there, from where its backend
 * says it holds its data.
 */
static void
adopt_live(LoggedReplay *r, const StateDesc *cur, int slot, bool hidden, XLogRecPtr applied)
{
	const KeyedStateBackend *b = keyed_backend_by_id(cur->backend);
	/* A backend that keeps its data knows what it holds (rocksdb). */
	XLogRecPtr	held = b->applied_lsn ? b->applied_lsn() : applied;

	map_add(r->map, cur->id, cur, slot, held, hidden);
	/*
	 * What the worker before had applied but not yet written (rocksdb's
	 * batch) went with it: read again from there.
	 */
	if (held != InvalidXLogRecPtr && held < applied &&
		(r->held_min == InvalidXLogRecPtr || held < r->held_min))
		r->held_min = held;
}

LoggedReplay *
replay_open_live(XLogRecPtr applied)
{
	LoggedReplay *r = replay_new(true);
	StateDesc  *live = palloc(sizeof(StateDesc) * Max(state_backend_max_states, 1));
	int		   *slots = palloc(sizeof(int) * Max(state_backend_max_states, 1));
	int			n = registry_copy_all(live, NULL);

	for (int i = 0; i < n; i++)
	{
		StateDesc	cur;
		int			slot;

		if (!live[i].logged)
			continue;
		slot = registry_find(live[i].id, &cur);
		if (slot >= 0)
			adopt_live(r, &cur, slot, false, applied);
	}
	/*
	 * The hidden states the worker before made from WAL and had not
	 * published yet (a restore's or a change's on the primary): their
	 * publication, or their drop, comes further on.  One whose creation is
	 * read again is made again (forgotten_hidden).
	 */
	n = registry_copy_hidden(live, slots);
	for (int i = 0; i < n; i++)
		if (live[i].logged)
			adopt_live(r, &live[i], slots[i], true, applied);
	pfree(live);
	pfree(slots);
	r->applied_before = applied;
	r->live = true;
	return r;
}

/* replay_publish_to: each record's end is written there once it is applied. */
void
replay_publish_to(LoggedReplay *r, pg_atomic_uint64 *progress)
{
	r->progress = progress;
}

/*
 * Apply the record just read, in its own memory; returns false when it
 * could not be applied (replay_stop_failed noted it: reading stops before
 * it).  *n gets how many changes it made.
 */
static bool
replay_one(LoggedReplay *r, int64 *n)
{
	XLogReaderState *reader = r->reader;
	MemoryContext cxt = CurrentMemoryContext;
	volatile int64 changed = 0;
	volatile bool ok = true;

	/* Applied already, and an error stopped reading before it moved on. */
	if (reader->EndRecPtr <= r->applied_end)
	{
		*n = 0;
		return true;
	}

	/*
	 * Logged nothing meanwhile; a backend that keeps its data stamps each
	 * write with the end of the last record wholly applied.
	 */
	state_wal_set_replaying(r->next);
	MemoryContextSwitchTo(r->rec_cxt);
	PG_TRY();
	{
		if (r->standby)
			FAULT_POINT("standby.record_before_apply");
		else
			FAULT_POINT("replay.record_before_apply");
		if (XLogRecGetRmid(reader) == RM_XACT_ID)
			changed = replay_txn_outcome(r);
		else if (replay_record(r))
			changed = 1;
		r->applied_end = reader->EndRecPtr;
		/* Wholly applied: what is committed from here on holds it. */
		state_wal_set_replaying(reader->EndRecPtr);
		if (r->standby)
			FAULT_POINT("standby.record_after_apply");
		else
			FAULT_POINT("replay.record_after_apply");
	}
	PG_CATCH();
	{
		replay_stop_failed(r, reader->ReadRecPtr, r->rec_cxt);
		ok = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	MemoryContextReset(r->rec_cxt);
	*n = changed;
	return ok;
}

/*
 * replay_records is replay_read's loop; an error of reading WAL (a segment
 * gone) ends it.
 */
static int64
replay_records(LoggedReplay *r, XLogRecPtr until, int64 max, bool *at_end)
{
	int64		applied = 0;
	int64		read = 0;
	int64		since_flush = 0;

	if (r->begin)
	{
		XLogBeginRead(r->reader, r->next);
		r->begin = false;
	}
	r->priv->end_of_wal = false;
	for (;;)
	{
		char	   *errormsg = NULL;
		XLogRecord *record;

		CHECK_FOR_INTERRUPTS();

		/*
		 * Asked to stop: go without a word more.  The states are half
		 * replayed, so no checkpoint may be taken of them; the next start
		 * replays it all again.
		 */
		if (ShutdownRequestPending)
		{
			ereport(LOG,
					(errmsg("state_backend stops replaying WAL: the server shuts down")));
			proc_exit(1);
		}
		if (max > 0 && read >= max)
			break;
		record = XLogReadRecord(r->reader, &errormsg);
		if (record == NULL)
		{
			/*
			 * Begin again where it stopped, when there is more.  A record
			 * that local WAL holds and cannot be read (not the end of what
			 * was flushed or replayed) is one that cannot be applied: the
			 * changes after it are not given up.
			 */
			if (errormsg != NULL && !r->priv->end_of_wal)
				replay_stop_at(r, r->next, ERRCODE_DATA_CORRUPTED, errormsg);
			r->begin = true;
			*at_end = true;
			break;
		}
		if (until != InvalidXLogRecPtr && r->reader->ReadRecPtr >= until)
		{
			r->begin = true;
			*at_end = true;
			break;
		}
		read++;
		if (XLogRecGetRmid(r->reader) == RM_STANDBY_ID && replay_txn_any() &&
			(XLogRecGetInfo(r->reader) & ~XLR_INFO_MASK) == XLOG_RUNNING_XACTS)
			replay_txn_forget_before(((xl_running_xacts *) XLogRecGetData(r->reader))->oldestRunningXid);
		if (STATE_WAL_RMGR_IS_OURS(XLogRecGetRmid(r->reader)) ||
			(XLogRecGetRmid(r->reader) == RM_XACT_ID && replay_txn_any()))
		{
			int64		n;

			if (!replay_one(r, &n))
			{
				/* Not past it: the next read begins with it. */
				r->begin = true;
				*at_end = true;
				break;
			}
			applied += n;
			if (++since_flush >= REPLAY_FLUSH_EVERY)
			{
				if (r->standby)
					FAULT_POINT("standby.flush_batch");
				else
					FAULT_POINT("replay.flush_batch");
				keyed_backend_flush_all();
				since_flush = 0;
			}
		}
		r->next = r->reader->EndRecPtr;
		if (r->standby)
			FAULT_POINT("standby.record_after_position");
		else
			FAULT_POINT("replay.record_after_position");
		if (r->progress)
			pg_atomic_write_u64(r->progress, r->next);
	}
	return applied;
}

/*
 * replay_read: an error of reading WAL, or of committing what the backends
 * were handed, stops it where it is, as a record that cannot be applied
 * does (replay_failed); it is tried again no sooner than REPLAY_RETRY_MS
 * later.
 */
int64
replay_read(LoggedReplay *r, XLogRecPtr until, int64 max, bool *at_end)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile int64 applied = 0;

	*at_end = true;
	if (r->reader == NULL)
		return 0;
	if (r->failed_at != InvalidXLogRecPtr && GetCurrentTimestamp() < r->retry_at)
		return 0;
	*at_end = false;
	r->failed_now = false;
	PG_TRY();
	{
		applied = replay_records(r, until, max, at_end);
		/* What is committed now holds every record read: so it is stamped. */
		state_wal_set_replaying(r->next);
		if (r->standby)
			FAULT_POINT("standby.flush_end");
		else
			FAULT_POINT("replay.flush_end");
		keyed_backend_flush_all();
	}
	PG_CATCH();
	{
		replay_stop_failed(r, r->next, cxt);
		r->begin = true;
		*at_end = true;
	}
	PG_END_TRY();
	state_wal_set_replaying(InvalidXLogRecPtr);
	/* Through without a failure: what had failed is applied. */
	if (!r->failed_now)
		replay_stop_cleared(r);
	return applied;
}

/*
 * replay_failed: where the record begins that reading stopped before
 * because it could not be applied, with its error in *why (owned by r);
 * InvalidXLogRecPtr when none.
 */
XLogRecPtr
replay_failed(const LoggedReplay *r, const char **why)
{
	if (why != NULL)
		*why = r->failed_why;
	return r->failed_at;
}

XLogRecPtr
replay_position(const LoggedReplay *r)
{
	return r->next;
}

/*
 * replay_held_min: where a standby's worker started again must read from
 * at the latest, for what a backend that keeps its data had not written
 * when the worker before it ended (InvalidXLogRecPtr: nothing earlier).
 */
XLogRecPtr
replay_held_min(const LoggedReplay *r)
{
	return r->held_min;
}

XLogRecPtr
replay_restart_position(const LoggedReplay *r)
{
	XLogRecPtr	held = replay_txn_oldest();

	return held != InvalidXLogRecPtr && held < r->next ? held : r->next;
}

bool
replay_close(LoggedReplay *r)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile bool ok = true;

	(void) replay_txn_end();
	state_wal_set_replaying(r->next);
	PG_TRY();
	{
		if (r->standby)
			FAULT_POINT("standby.close");
		else
			FAULT_POINT("replay.close");
		keyed_backend_flush_all();
		discard_hidden(r->map);
	}
	PG_CATCH();
	{
		report_error(cxt);
		ereport(WARNING,
				(errmsg("state_backend could not finish replaying the WAL of logged states"),
				 errdetail("It is tried again before anything else.")));
		ok = false;
	}
	PG_END_TRY();
	state_wal_set_replaying(InvalidXLogRecPtr);
	if (!ok)
		return false;
	if (r->reader)
		XLogReaderFree(r->reader);
	MemoryContextDelete(r->cxt);
	return true;
}
