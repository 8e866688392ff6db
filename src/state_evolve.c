/*
 * state_evolve.c
 *		A state changed as a whole (alter_state): its entries copied, each
 *		converted, into a new hidden state, which then takes its place at
 *		one instant, as a restore's states do.
 *
 * Writers go on while the entries are copied, when the change may be done
 * online (not a transactional or firing state): the state moves
 * (backend/keyed_move.c), so each write logs its key once done, and the
 * copier copies each logged key again as it is by then, between key groups.
 * At the end it takes the state's change lock (state_ops_lock_change), which
 * waits for the transactions that wrote to it and keeps new writers
 * waiting, copies the last keys logged, and publishes.  Otherwise the change
 * lock is held from the start, and writers wait for the whole copy.  Readers
 * go on reading the state until the publish.
 * Nothing of the new state is visible before it: a failure (a value that
 * does not convert, a full memory limit, a cancel) discards it, and the
 * state is as it was.  A logged new state is written to WAL as a restored
 * one is, as a hidden state and its entries, then published by one
 * PUBLISH record that also drops the old one when it was logged: replay
 * and a standby come to one side of it, and a snapshot cut meanwhile holds
 * either the old state or the new one (snapshot_control_hold_cuts).
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/timestamp.h"

#include "backend/keyed_backend.h"
#include "backend/keyed_move.h"
#include "catalog/registry.h"
#include "common/fault.h"
#include "common/settings.h"
#include "format/records.h"
#include "snapshot/checkpoint.h"
#include "snapshot/snapshot_control.h"
#include "state_evolve.h"
#include "state_ops.h"
#include "timers/timer_queue.h"

typedef struct EvolveCopy
{
	StateTarget from;			/* the old state */
	const KeyedStateBackend *from_backend;
	StateTarget target;			/* the new state */
	const KeyedStateBackend *backend;
	StateEvolveFn convert;
	void	   *arg;
	int64		copied;
	bool		overflowed;		/* the move's log did */
	int64		synced;			/* logged keys copied again */
	int			passes;			/* copies of every key group */
	int			overflows;		/* of the move's log */
	/* one key group's entries of the old state, as pairs */
	StringInfoData group;
	KeyedBatch	batch;			/* converted keys and images, put at once */
	StringInfoData key;			/* one entry converted */
	StringInfoData image;
	StringInfoData logged;		/* keys taken out of the move's log */
	StringInfoData current;		/* a logged key's image in the old state */
} EvolveCopy;

/* Hand the batch to the new state's backend. */
static void
batch_flush(EvolveCopy *c)
{
	if (c->batch.n == 0)
		return;
	keyed_batch_flush(&c->batch);
	FAULT_POINT("alter.copy");
}

/* Add the converted entry in c->key and c->image to the batch. */
static void
batch_add(EvolveCopy *c)
{
	if (keyed_batch_add(&c->batch, c->key.data, (uint32) c->key.len, c->image.data,
						(uint32) c->image.len))
		FAULT_POINT("alter.copy");
}

/* An entry of the old state, kept until its key group is read whole. */
static void
group_entry(void *arg, const char *key, uint32 keylen, const char *value, uint32 vallen)
{
	EvolveCopy *c = arg;

	record_put_pair(&c->group, key, keylen, value, vallen);
}

/*
 * copy_group converts the entries of one key group of the old state, read
 * whole first: no backend's iteration is open while the conversion runs
 * PostgreSQL code, or while the new state is written.
 */
static void
copy_group(EvolveCopy *c)
{
	uint32		off = 0;
	RecordPair	pair;
	RecordRead	r;

	while ((r = record_next_pair(c->group.data, c->group.len, &off, &pair)) == RECORD_OK)
	{
		resetStringInfo(&c->key);
		resetStringInfo(&c->image);
		CHECK_FOR_INTERRUPTS();
		if (!c->convert(c->arg, pair.key, pair.keylen, pair.value, pair.vallen,
						&c->key, &c->image))
			continue;			/* expired */
		c->copied++;
		batch_add(c);
	}
	if (r == RECORD_TRUNCATED)
		elog(ERROR, "state_backend: a key group of the state read back damaged");
	resetStringInfo(&c->group);
}

/*
 * sync_key copies one key of the old state into the new one as it is now:
 * its image converted (into the batch), or its absence.
 */
static void
sync_key(EvolveCopy *c, const char *keydata, uint32 keylen)
{
	StateKey	key;
	bool		found;
	bool		keep;

	state_key_set(&key, keydata, keylen);
	resetStringInfo(&c->current);
	resetStringInfo(&c->key);
	resetStringInfo(&c->image);
	found = c->from_backend->get(&c->from, &key, &c->current);
	keep = c->convert(c->arg, keydata, keylen, found ? c->current.data : NULL,
					  found ? (uint32) c->current.len : 0, &c->key, &c->image);
	if (found && keep)
		batch_add(c);
	else
	{
		StateKey	newkey;

		state_key_set(&newkey, c->key.data, (uint32) c->key.len);
		(void) c->backend->remove(&c->target, &newkey);
	}
}

typedef struct LoggedKey
{
	const char *data;
	uint32		len;
} LoggedKey;

static int
logged_key_cmp(const void *a, const void *b)
{
	const LoggedKey *x = a;
	const LoggedKey *y = b;
	int			r = memcmp(x->data, y->data, Min(x->len, y->len));

	return r != 0 ? r : (x->len > y->len) - (x->len < y->len);
}

/*
 * sync_logged copies again the keys written since it last looked, each
 * once; false when the log overflowed, and only a copy of everything will
 * do.
 */
static bool
sync_logged(EvolveCopy *c, int move)
{
	uint32		off = 0;
	int			n = 0;
	int			room = 64;
	LoggedKey  *keys;

	if (!keyed_move_take(move, &c->logged))
	{
		c->overflows++;
		return false;
	}
	if (c->logged.len == 0)
		return true;
	keys = palloc(sizeof(LoggedKey) * room);
	while (off + sizeof(uint32) <= (uint32) c->logged.len)
	{
		uint32		len;

		memcpy(&len, c->logged.data + off, sizeof(uint32));
		off += sizeof(uint32);
		if (len > (uint32) c->logged.len - off)
			elog(ERROR, "state_backend: a move's log is damaged");
		if (n == room)
		{
			room *= 2;
			keys = repalloc(keys, sizeof(LoggedKey) * room);
		}
		keys[n].data = c->logged.data + off;
		keys[n++].len = len;
		off += len;
	}
	qsort(keys, n, sizeof(LoggedKey), logged_key_cmp);
	for (int i = 0; i < n; i++)
	{
		if (i > 0 && logged_key_cmp(&keys[i - 1], &keys[i]) == 0)
			continue;
		CHECK_FOR_INTERRUPTS();
		sync_key(c, keys[i].data, keys[i].len);
		c->synced++;
	}
	batch_flush(c);
	pfree(keys);
	return true;
}

/*
 * copy_all copies every key group of the old state; while it moves, the
 * keys written meanwhile after each.  Returns false when a move's log
 * overflowed.
 */
static bool
copy_all(EvolveCopy *c, int move)
{
	bool		ok = true;

	c->passes++;
	for (int kg = 0; kg < state_backend_max_parallelism; kg++)
	{
		c->from_backend->iterate(&c->from, kg, group_entry, c);
		copy_group(c);
		batch_flush(c);
		if (move > 0)
		{
			/* Writes posted are applied as the copy goes, not all at its end. */
			keyed_backend_flush_all();
			ok &= sync_logged(c, move);
		}
	}
	return ok;
}

/* Whether a crash brings a state back without a checkpoint: WAL, or its backend's files. */
static bool
comes_back(const StateDesc *d)
{
	const StateBackendProvider *p = keyed_backend_provider(d->backend);

	return d->logged || (p != NULL && p->ops->applied_lsn != NULL);
}

/* The new state's entries, as its backend counts them. */
static int64
count_entries(const StateTarget *target, const KeyedStateBackend *backend)
{
	int64		entries = 0;
	int64		bytes = 0;

	backend->size(target, &entries, &bytes);
	return entries;
}

/*
 * What a change in this process has under way, for its exit: the hidden
 * copy before the switch, the replaced state after it.  An ERROR cleans up
 * where it is caught; a process that exits (FATAL, a terminate) cleans up
 * here.
 */
static StateDesc exit_hidden;
static int	exit_hidden_slot = -1;
static StateDesc exit_replaced;
static int	exit_replaced_slot = -1;
static bool exit_registered = false;

static void
evolve_at_exit(int code, Datum arg)
{
	if (exit_hidden_slot >= 0)
	{
		int			slot = exit_hidden_slot;

		exit_hidden_slot = -1;
		state_ops_discard(&exit_hidden, slot);
	}
	if (exit_replaced_slot >= 0)
	{
		int			slot = exit_replaced_slot;

		exit_replaced_slot = -1;
		(void) state_ops_drop(&exit_replaced, slot);
	}
}

/*
 * state_evolve copies state old (in registry slot oldslot) into a new
 * state described by newd (its id is set here), converting each entry
 * with convert, and publishes the new state in its place.  The caller
 * holds the state's alter lock (state_ops_lock_alter), and converts no
 * key when online.  online: writers go on during the copy (not for a
 * transactional or firing state).  logged_pending: the caller counted a
 * logged state pending (registry_logged_pending), which this uncounts once
 * the new state is registered.  Returns the entries the new state holds.
 * Raises 42710 if another state took newd's name meanwhile, and 23505 if
 * two keys became one.
 */
int64
state_evolve(const StateDesc *old, int oldslot, StateDesc *newd, bool logged_pending,
			 bool online, StateEvolveFn convert, void *arg)
{
	EvolveCopy *c = palloc0(sizeof(EvolveCopy));
	MemoryContext cxt = CurrentMemoryContext;
	volatile int slot = -1;
	volatile int move = 0;
	volatile bool pending = logged_pending;
	volatile bool holding = false;
	volatile bool paused = false;
	bool		fires = state_desc_fires(old);
	int64		entries;
	int			replaced_slot = -1;
	XLogRecPtr	logged_end = InvalidXLogRecPtr;
	uint64		switched;

	/*
	 * A state a crash brings back (from WAL, or from its backend's own
	 * storage) that becomes one only a checkpoint brings back: the old one
	 * stays, hidden, until a checkpoint holds the new one: a crash before
	 * that brings back the old state (as any change since the newest
	 * checkpoint of a state that only checkpoints bring back is lost).
	 */
	bool		keep_until_checkpoint = state_backend_checkpoint_dir[0] != '\0' &&
		!comes_back(newd) && comes_back(old);

	if (!exit_registered)
	{
		before_shmem_exit(evolve_at_exit, (Datum) 0);
		exit_registered = true;
	}
	state_ops_altering(old);
	PG_TRY();
	{
		FAULT_POINT("alter.create_hidden");
		slot = registry_create(newd, true);
		exit_hidden = *newd;
		exit_hidden_slot = slot;
		if (pending)
		{
			pending = false;
			registry_logged_pending(-1);
		}
		c->from = state_target(old, oldslot);
		c->from_backend = keyed_backend_by_id(old->backend);
		c->target = state_target(newd, slot);
		c->backend = keyed_backend_by_id(newd->backend);
		c->convert = convert;
		c->arg = arg;
		initStringInfo(&c->group);
		keyed_batch_init(&c->batch, c->backend, &c->target);
		initStringInfo(&c->key);
		initStringInfo(&c->image);
		initStringInfo(&c->logged);
		initStringInfo(&c->current);

		/*
		 * Online, the state moves: once every transaction that may have
		 * written to it unlogged has ended (a moment's SHARE lock), each
		 * write logs its key.  Else its writers wait from now on, and a
		 * firing state's firing is paused (once the lock is held: a change
		 * that waits for it pauses nothing).
		 */
		if (online && (move = keyed_move_begin(old)) > 0)
		{
			if (!registry_set_moving(oldslot, old->id, (uint8) move))
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_OBJECT),
						 errmsg("state \"%s\" was dropped while it changed", NameStr(old->name))));
			state_ops_wait_writers(old);
			FAULT_POINT("alter.moving");
		}
		else
		{
			state_ops_lock_change(old);
			if (fires && !timer_queue_pause_held())
			{
				timer_queue_pause();
				paused = true;
			}
		}

		/*
		 * Posted writes to the old state are all in before it is read.  A
		 * move whose log overflowed (or met a truncate) copies everything
		 * again, from an empty copy, while the writers go on, once; after a
		 * second overflow, with the writers kept out.
		 */
		keyed_backend_flush_all();
		c->overflowed = !copy_all(c, move) && move > 0;
		if (c->overflowed)
		{
			(void) c->backend->truncate(&c->target);
			c->overflowed = !copy_all(c, move);
		}

		/*
		 * The last keys written, with the writers kept out: what the copy
		 * posted to the new state's backend is in first, and the keys
		 * logged meanwhile are copied again, so that little is left.
		 */
		if (move > 0)
		{
			keyed_backend_flush_all();
			if (!c->overflowed)
				c->overflowed = !sync_logged(c, move);
			keyed_backend_flush_all();
			state_ops_lock_change(old);
			FAULT_POINT("alter.locked");
			if (c->overflowed || !sync_logged(c, move))
			{
				/* The log overflowed: everything again, as it is now. */
				(void) c->backend->truncate(&c->target);
				(void) copy_all(c, 0);
			}
		}
		keyed_backend_flush_all();
		entries = count_entries(&c->target, c->backend);
		if (move == 0 && entries != c->copied)
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("state \"%s\" would hold " INT64_FORMAT " keys for its " INT64_FORMAT,
							NameStr(old->name), entries, c->copied),
					 errdetail("The key conversion makes two keys one."),
					 errhint("Give a key_using expression that keeps keys apart.")));
		if (newd->logged)
		{
			snapshot_control_hold_cuts(true);
			holding = true;
			FAULT_POINT("alter.log_entries");
			state_ops_log_hidden(newd, slot);
		}
		FAULT_POINT("alter.before_publish");

		/* An event-time state keeps its watermark: nothing moves it now. */
		if (fires && old->timer_event_time)
		{
			TimestampTz set_at;
			TimestampTz was;

			(void) timer_watermark_advance(slot, newd->id,
										   timer_watermark(oldslot, old->id, &set_at), &was);
		}
		if (!state_ops_publish_replacing(newd, old, keep_until_checkpoint, &replaced_slot,
										 &logged_end))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("state \"%s\" was dropped while it changed", NameStr(old->name))));
		exit_hidden_slot = -1;
		if (!keep_until_checkpoint)
		{
			exit_replaced = *old;
			exit_replaced_slot = replaced_slot;
		}
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		state_ops_altering(NULL);
		if (move > 0)
		{
			(void) registry_set_moving(oldslot, old->id, 0);
			keyed_move_end(move);
		}
		if (pending)
			registry_logged_pending(-1);
		if (holding)
			snapshot_control_hold_cuts(false);
		if (paused)
			timer_queue_resume();
		/* Writes still posted to the new state end before it goes. */
		PG_TRY();
		{
			keyed_backend_flush_all();
		}
		PG_CATCH();
		{
			FlushErrorState();
		}
		PG_END_TRY();
		exit_hidden_slot = -1;
		if (slot >= 0)
			state_ops_discard(newd, slot);
		ReThrowError(edata);
	}
	PG_END_TRY();

	/*
	 * The switch is made: from here on the change stands, whatever fails.
	 * Its record is flushed; writers go to the new state (the locks go) and
	 * the firing resumes; the old state's data goes once the calls that may
	 * have resolved it before the switch have ended (a cancel meanwhile
	 * cancels only that wait), or, kept until a checkpoint, the worker is
	 * asked for one.
	 */
	state_ops_altering(NULL);
	if (move > 0)
		keyed_move_end(move);
	ereport(DEBUG1,
			(errmsg("state_backend changed state \"%s\": " INT64_FORMAT " entries, %d copies of every key group, " INT64_FORMAT " keys copied again, %d overflows of the log of keys written",
					NameStr(newd->name), entries, c->passes, c->synced, c->overflows)));
	switched = registry_version();
	PG_TRY();
	{
		state_ops_publish_durable(newd, logged_end);
		FAULT_POINT("alter.after_publish");
	}
	PG_FINALLY();
	{
		if (holding)
			snapshot_control_hold_cuts(false);
		if (paused)
			timer_queue_resume();
		state_ops_unlock_alter(old);
		if (keep_until_checkpoint)
			checkpoint_request();
		else
		{
			PG_TRY();
			{
				registry_wait_readers(switched);
			}
			PG_FINALLY();
			{
				exit_replaced_slot = -1;
				state_ops_finish_replacing(old, replaced_slot);
			}
			PG_END_TRY();
		}
	}
	PG_END_TRY();
	pfree(c->group.data);
	pfree(c->batch.bytes.data);
	pfree(c->key.data);
	pfree(c->image.data);
	pfree(c);
	return entries;
}
