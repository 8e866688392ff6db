/*
 * timers/timer_queue.c
 *		The shared memory of timers states, and the pause of their firing.
 *
 * A timers state keeps its timers as any state keeps its data (a map per
 * key of the instants due), so snapshots, restores, rescales, WAL and
 * transactions hold them without knowing.  What firing them needs beside
 * that lives here:
 *
 * - Per database with timers, a slot: its timer worker's pid and latch,
 *   and a ring of the timers registered since the worker last looked, so
 *   that the worker keeps its due-time index without scanning the states
 *   again.  A push wakes the worker only when it would not look in time
 *   by itself (push_record).  A registration is pushed once its session's
 *   writes are applied (a backend may post them), as the worker looks for
 *   it in its state; one that finds the ring full marks it overflowed, and
 *   the worker scans its states once more; one that finds no slot needs
 *   nothing, since a worker scans every state when it starts.  The ring may
 *   name timers that never committed or were deleted since: the worker
 *   checks each timer in its state before firing it.
 * - Per registry slot, the state's watermark (event time) and the figures
 *   its worker publishes for state.timer_status.
 *
 * Window states use the same: a push names a key whose windows the worker
 * must look at, at that instant.
 *
 * A transactional state's registrations are noted until the transaction's
 * commit has applied them (timer_queue_at_end, the transactional layer's
 * end hook), so that the worker never looks for a timer before it is there.
 *
 * A session may pause the firing of its database's timers and windows
 * (timer_queue_pause, for a proxy's rescale: what a handler wrote between
 * a part's snapshot and its restore would vanish while its table rows stay).
 * A pause is an entry of a small shared table, held until the session
 * resumes or exits; the worker looks at it before each round
 * (timer_queue_hold_while_paused) and says so in its slot (pause_seen), so
 * the pausing session waits until the batch the worker was firing is done.
 */
#include "postgres.h"

#include "common/int.h"

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/wait_event.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "backend/keyed_backend.h"
#include "catalog/registry.h"
#include "common/settings.h"
#include "timers/timer_queue.h"
#include "txn/txn_state.h"

/* A launch not answered in this long may be asked for again. */
#define TIMER_LAUNCH_WAIT_MS	10000

/* Bytes a drain copies out under the spinlock at a time. */
#define TIMER_DRAIN_CHUNK		8192

/* A ring record: header, then the key image. */
typedef struct TimerRecord
{
	uint32		len;			/* of the key */
	uint32		state_id;
	int64		at;
} TimerRecord;

typedef struct TimerDb
{
	slock_t		mutex;
	Oid			dbid;			/* InvalidOid: free */
	int			pid;			/* its worker's; 0: none */
	Latch	   *latch;
	TimestampTz launched_at;	/* a launch asked for; 0: none */
	uint64		head;			/* bytes written, ever */
	uint64		tail;			/* bytes read, ever */
	bool		overflow;
	int64		wakes_by;		/* the worker looks by then without a wake */
	int64		unwoken_min;	/* earliest instant pushed without a wake */
	/* kept across workers (not by ring_reset): see KilledTimer */
	Oid			killed_dbid;	/* InvalidOid: none */
	KilledTimer killed;
	uint64		pause_seen;		/* the pause generation its worker last saw */
} TimerDb;

/* Pauses held at once, over every database (a rescale holds one per part). */
#define TIMER_MAX_PAUSES		64

/* A session's pause of its database's firing. */
typedef struct TimerPause
{
	Oid			dbid;			/* InvalidOid: free */
	int			pid;			/* the session holding it */
	uint64		gen;			/* pause_gen when it was taken */
} TimerPause;

#define TIMER_PINS	8

typedef struct TimerSlot
{
	slock_t		mutex;
	uint32		id;				/* the state these are of */
	TimestampTz watermark;
	TimestampTz watermark_set_at;

	/*
	 * A watermark from the data: the largest event time seen, and when the
	 * last value came (the clock).  due_floor: the earliest instant the
	 * worker may have to look at that it does not know of (its index's
	 * first when it slept, and what was pushed since); a session whose
	 * value moves the watermark to it wakes the worker.  pushes counts the
	 * pushes, so that the worker knows whether any came since its drain.
	 */
	TimestampTz max_event;
	TimestampTz last_arrival;
	TimestampTz due_floor;
	uint64		pushes;

	/*
	 * Pins of a transactional window state: each open transaction that added
	 * a value on time holds the end of its earliest window (pin_ends, by
	 * pgprocno + 1 in pin_procs, 0 free; past TIMER_PINS, counted in
	 * pin_overflow with their earliest end), and no window ending then or
	 * later fires, nor goes, until it ends: the clock the worker fires by is
	 * held before it (timer_watermark_known).
	 */
	int			pin_procs[TIMER_PINS];
	TimestampTz pin_ends[TIMER_PINS];
	int			pin_overflow;
	TimestampTz overflow_end;
	uint64		deleted;		/* timers deleted, ever (the worker's index keeps them) */
	TimerFigures figures;
} TimerSlot;

typedef struct TimerShared
{
	slock_t		hold_mutex;
	Oid			held_dbid;		/* being dropped: no worker until held_until */
	TimestampTz held_until;
	slock_t		pause_mutex;	/* pause_gen and pauses[] */
	uint64		pause_gen;
	TimerPause	pauses[TIMER_MAX_PAUSES];
	int			ndbs;
	Size		ring_size;
	TimerSlot  *slots;			/* [max_states] */
	TimerDb    *dbs;			/* [ndbs] */
	char	   *rings;			/* [ndbs][ring_size] */
} TimerShared;

static TimerShared *timers = NULL;

static TimerSlot *slot_lock(int slot, uint32 id);
static TimerSlot *slot_lock_known(int slot, uint32 id);

/* The window states a transaction pinned (TopMemoryContext), until it ends. */
typedef struct PinnedSlot
{
	int			slot;
	uint32		id;
	bool		held;			/* a pin is in the slot */
	bool		overflowed;		/* counted in pin_overflow, not in pin_procs */
} PinnedSlot;

static List *pinned = NIL;
static bool pin_exit_registered = false;

/* A transaction's registrations to transactional states, until commit. */
typedef struct NotedTimer
{
	Oid			dbid;
	uint32		state_id;
	int			slot;
	bool		event_time;
	int64		at;
	uint32		keylen;
	char		key[FLEXIBLE_ARRAY_MEMBER];
} NotedTimer;

static List *noted = NIL;

static Size
ring_size(void)
{
	return (Size) state_backend_timer_queue_kb * 1024;
}

Size
timer_queue_shmem_size(void)
{
	Size		size = MAXALIGN(sizeof(TimerShared));

	size = add_size(size, MAXALIGN(mul_size(sizeof(TimerSlot), state_backend_max_states)));
	size = add_size(size, MAXALIGN(mul_size(sizeof(TimerDb), state_backend_max_timer_databases)));
	return add_size(size, mul_size(ring_size(), state_backend_max_timer_databases));
}

void
timer_queue_shmem_init(void)
{
	bool		found;
	char	   *p;

	timers = ShmemInitStruct("state_backend timers", timer_queue_shmem_size(), &found);
	if (found)
		return;
	p = (char *) timers + MAXALIGN(sizeof(TimerShared));
	timers->slots = (TimerSlot *) p;
	p += MAXALIGN(mul_size(sizeof(TimerSlot), state_backend_max_states));
	timers->ndbs = state_backend_max_timer_databases;
	timers->ring_size = ring_size();
	timers->dbs = (TimerDb *) p;
	p += MAXALIGN(mul_size(sizeof(TimerDb), timers->ndbs));
	timers->rings = p;
	SpinLockInit(&timers->hold_mutex);
	timers->held_dbid = InvalidOid;
	SpinLockInit(&timers->pause_mutex);
	timers->pause_gen = 0;
	memset(timers->pauses, 0, sizeof(timers->pauses));
	for (int i = 0; i < state_backend_max_states; i++)
	{
		SpinLockInit(&timers->slots[i].mutex);
		timers->slots[i].id = 0;
	}
	for (int i = 0; i < timers->ndbs; i++)
	{
		memset(&timers->dbs[i], 0, sizeof(TimerDb));
		SpinLockInit(&timers->dbs[i].mutex);
	}
}

/* The slot of a database, or -1 (the caller holds no lock: dbid is read alone). */
static int
db_index(Oid dbid)
{
	for (int i = 0; i < timers->ndbs; i++)
		if (timers->dbs[i].dbid == dbid)
			return i;
	return -1;
}

/* A database's ring emptied, with nothing pushed unseen (under its spinlock). */
static void
ring_reset(TimerDb *d)
{
	d->head = d->tail = 0;
	d->overflow = false;
	d->wakes_by = 0;
	d->unwoken_min = PG_INT64_MAX;
}

/* Copy len bytes into, or out of, a database's ring at a position. */
static void
ring_copy(int db, uint64 pos, char *buf, Size len, bool in)
{
	char	   *ring = timers->rings + (Size) db * timers->ring_size;
	Size		off = (Size) (pos % timers->ring_size);
	Size		first = Min(len, timers->ring_size - off);

	if (in)
	{
		memcpy(ring + off, buf, first);
		memcpy(ring, buf + first, len - first);
	}
	else
	{
		memcpy(buf, ring + off, first);
		memcpy(buf + first, ring, len - first);
	}
}

/*
 * push_record puts one timer in its database's ring, and wakes the worker
 * only when it would not look in time by itself: a processing-time timer
 * due before the worker's next look (wakes_by), an event-time timer the
 * watermark has passed already, or a ring half full.  Any other waits in
 * the ring for the worker's next look, which it takes by the earliest
 * instant pushed so (unwoken_min, see timer_queue_may_sleep).  Nothing to
 * do when the database has no slot: its worker, when it starts, reads
 * every state.
 */
static void
push_record(Oid dbid, uint32 state_id, int slot, bool event_time,
			const char *key, uint32 keylen, int64 at)
{
	int			db = db_index(dbid);
	TimerDb    *d;
	TimerRecord rec = {keylen, state_id, at};
	Size		need = sizeof(rec) + keylen;
	bool		wake = false;
	Latch	   *latch = NULL;

	if (db < 0)
		return;
	d = &timers->dbs[db];
	SpinLockAcquire(&d->mutex);
	if (d->dbid == dbid)
	{
		/*
		 * A record longer than a drain's chunk goes as an overflow too.
		 * The worker then reads the states whole, which hold the timer:
		 * the caller's writes are applied.
		 */
		if (need > TIMER_DRAIN_CHUNK || d->overflow ||
			need > timers->ring_size - (Size) (d->head - d->tail))
			wake = d->overflow = true;
		else
		{
			ring_copy(db, d->head, (char *) &rec, sizeof(rec), true);
			ring_copy(db, d->head + sizeof(rec), unconstify(char *, key), keylen, true);
			d->head += need;
			wake = (Size) (d->head - d->tail) > timers->ring_size / 2;
		}
		if (!event_time && at < d->wakes_by)
			wake = true;
		else if (!event_time)
			d->unwoken_min = Min(d->unwoken_min, at);
		latch = d->pid != 0 ? d->latch : NULL;
	}
	SpinLockRelease(&d->mutex);

	/*
	 * Noted after the record is in: a watermark that moves past it later
	 * wakes the worker (timer_queue_wake, or a value's, by due_floor),
	 * which then drains it.
	 */
	if (event_time)
	{
		TimerSlot  *t = slot_lock(slot, state_id);

		t->pushes++;
		t->due_floor = Min(t->due_floor, at);
		if (at <= t->watermark)
			wake = true;
		SpinLockRelease(&t->mutex);
	}
	if (latch != NULL && wake)
		SetLatch(latch);
}

/* timer_queue_wake wakes a database's timer worker (a watermark moved). */
void
timer_queue_wake(Oid dbid)
{
	int			db = db_index(dbid);
	Latch	   *latch = NULL;

	if (db < 0)
		return;
	SpinLockAcquire(&timers->dbs[db].mutex);
	if (timers->dbs[db].dbid == dbid && timers->dbs[db].pid != 0)
		latch = timers->dbs[db].latch;
	SpinLockRelease(&timers->dbs[db].mutex);
	if (latch != NULL)
		SetLatch(latch);
}

/*
 * timer_queue_push tells the worker of a timer registered.  The worker
 * looks for it in its state when the ring names it, and forgets one it
 * does not find: first every write this session posted (rocksdb) is
 * applied.
 */
void
timer_queue_push(const StateDesc *desc, int slot, const char *key, uint32 keylen, int64 at)
{
	keyed_backend_flush_all();
	push_record(desc->dbid, desc->id, slot, desc->timer_event_time, key, keylen, at);
}

/* timer_queue_note keeps a transactional state's timer until its transaction ends. */
void
timer_queue_note(const StateDesc *desc, int slot, const char *key, uint32 keylen, int64 at)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	NotedTimer *n = palloc(offsetof(NotedTimer, key) + keylen);

	n->dbid = desc->dbid;
	n->state_id = desc->id;
	n->slot = slot;
	n->event_time = desc->timer_event_time;
	n->at = at;
	n->keylen = keylen;
	memcpy(n->key, key, keylen);
	noted = lappend(noted, n);
	MemoryContextSwitchTo(old);
}

/*
 * timer_queue_at_end, after the transactional layer's end of a transaction:
 * a commit's timers go to their workers, an abort or a prepare forgets them.
 */
static void
timer_queue_at_end(bool committed)
{
	ListCell   *lc;

	/* Its windows' values are in their states now (or gone): they may fire. */
	timer_window_unpin_all();

	if (committed)
		foreach(lc, noted)
		{
			NotedTimer *n = lfirst(lc);

			push_record(n->dbid, n->state_id, n->slot, n->event_time, n->key, n->keylen, n->at);
		}
	noted = NIL;				/* its memory goes with the transaction's */
}

/* timer_queue_init, in _PG_init: the queue hears of every transaction's end. */
void
timer_queue_init(void)
{
	txn_state_set_end_hook(timer_queue_at_end);
}

/* ------------------------------------------------------------ pins */

/* The earliest end a slot's pins hold (DT_NOEND: none); its lock held. */
static TimestampTz
pins_min(const TimerSlot *t)
{
	TimestampTz m = t->pin_overflow > 0 ? t->overflow_end : DT_NOEND;

	for (int i = 0; i < TIMER_PINS; i++)
		if (t->pin_procs[i] != 0)
			m = Min(m, t->pin_ends[i]);
	return m;
}

/*
 * The clock a state's windows fire and go by: its watermark, held before
 * the earliest end a pin holds.
 */
static TimestampTz
held_clock(const TimerSlot *t)
{
	TimestampTz p = pins_min(t);

	if (t->watermark == DT_NOBEGIN || p == DT_NOEND || p > t->watermark)
		return t->watermark;
	return p - 1;
}

/* The pins of a session that exits inside a transaction go with it. */
static void
unpin_at_exit(int code, Datum arg)
{
	timer_window_unpin_all();
}

/*
 * timer_window_judge: a value with windows ending at first_end and later,
 * the last one (plus the allowed lateness) at last_due, comes to an
 * event-time window state: under the slot's lock, whether the watermark
 * has passed last_due (the value is late: true), and, for a value on time
 * of a transactional state ("pin"), a pin of first_end until the
 * transaction ends, taken under the same lock so that the timer worker
 * either sees it or fired by a clock that made the value late.
 * *watermark gets the watermark the value was judged by: the slot's, or
 * floor when that is later (a feed's batch judges its rows by the watermark
 * its earlier rows give, before it publishes it; DT_NOBEGIN: none).
 */
bool
timer_window_judge(int slot, uint32 id, TimestampTz first_end, TimestampTz last_due,
				   bool pin, TimestampTz floor, TimestampTz *watermark)
{
	TimerSlot  *t;
	bool		late;
	PinnedSlot *mine = NULL;
	ListCell   *lc;

	/* What may allocate is done before the spinlock is taken. */
	if (pin)
	{
		foreach(lc, pinned)
		{
			PinnedSlot *p = lfirst(lc);

			if (p->slot == slot && p->id == id)
				mine = p;
		}
		if (mine == NULL)
		{
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

			mine = palloc0(sizeof(PinnedSlot));
			mine->slot = slot;
			mine->id = id;
			pinned = lappend(pinned, mine);
			MemoryContextSwitchTo(old);
		}
		if (!pin_exit_registered)
		{
			before_shmem_exit(unpin_at_exit, (Datum) 0);
			pin_exit_registered = true;
		}
	}
	t = slot_lock(slot, id);
	*watermark = Max(t->watermark, floor);
	late = *watermark != DT_NOBEGIN && last_due <= *watermark;
	if (pin && !late)
	{
		if (mine->held && mine->overflowed)
			t->overflow_end = Min(t->overflow_end, first_end);
		else
		{
			int			me = MyProc->pgprocno + 1;
			int			free = -1;
			int			i;

			for (i = 0; i < TIMER_PINS && t->pin_procs[i] != me; i++)
				if (t->pin_procs[i] == 0 && free < 0)
					free = i;
			if (i < TIMER_PINS)
				t->pin_ends[i] = Min(t->pin_ends[i], first_end);
			else if (free >= 0)
			{
				t->pin_procs[free] = me;
				t->pin_ends[free] = first_end;
			}
			else
			{
				t->pin_overflow++;
				t->overflow_end = Min(t->overflow_end, first_end);
				mine->overflowed = true;
			}
		}
		mine->held = true;
	}
	SpinLockRelease(&t->mutex);
	return late;
}

/* timer_window_unpin_all lets go of the session's pins, at its transaction's end. */
void
timer_window_unpin_all(void)
{
	ListCell   *lc;
	int			me;

	if (pinned == NIL)
		return;
	me = MyProc->pgprocno + 1;
	foreach(lc, pinned)
	{
		PinnedSlot *p = lfirst(lc);
		TimerSlot  *t;

		if (!p->held || (t = slot_lock_known(p->slot, p->id)) == NULL)
			continue;			/* none, or the state was dropped: its slot is another's */
		if (p->overflowed)
		{
			if (--t->pin_overflow <= 0)
			{
				t->pin_overflow = 0;
				t->overflow_end = DT_NOEND;
			}
		}
		else
			for (int i = 0; i < TIMER_PINS; i++)
				if (t->pin_procs[i] == me)
					t->pin_procs[i] = 0;
		SpinLockRelease(&t->mutex);
	}
	list_free_deep(pinned);
	pinned = NIL;
}

/* ------------------------------------------------------------ watermarks */

/* slot_acquire takes a registry slot's row, whichever state it holds. */
static TimerSlot *
slot_acquire(int slot, uint32 id)
{
	TimerSlot  *t;

	if (slot < 0 || slot >= state_backend_max_states)
		elog(ERROR, "state_backend: timers state %u has no registry slot", id);
	t = &timers->slots[slot];
	SpinLockAcquire(&t->mutex);
	return t;
}

/*
 * slot_lock takes a registry slot's row, reset when it holds another state
 * than before; the caller lets go of its spinlock.
 */
static TimerSlot *
slot_lock(int slot, uint32 id)
{
	TimerSlot  *t = slot_acquire(slot, id);

	if (t->id != id)
	{
		t->id = id;
		t->watermark = DT_NOBEGIN;
		t->watermark_set_at = 0;
		t->max_event = DT_NOBEGIN;
		t->last_arrival = 0;
		t->due_floor = DT_NOBEGIN;
		t->pushes = 0;
		memset(t->pin_procs, 0, sizeof(t->pin_procs));
		t->pin_overflow = 0;
		t->overflow_end = DT_NOEND;
		t->deleted = 0;
		memset(&t->figures, 0, sizeof(t->figures));
		t->figures.next_due = DT_NOEND;
		t->figures.lag_p99_us = -1;
	}
	return t;
}

/*
 * slot_lock_known is slot_lock for the timer worker, whose list of states
 * may still hold one dropped a moment ago: a slot another state holds now
 * is left as it is (NULL, its spinlock let go), or that state would lose
 * its watermark.
 */
static TimerSlot *
slot_lock_known(int slot, uint32 id)
{
	TimerSlot  *t = slot_acquire(slot, id);

	if (t->id != id)
	{
		SpinLockRelease(&t->mutex);
		return NULL;
	}
	return t;
}

/*
 * timer_watermark_advance moves a state's watermark to "to"; false, with
 * *was, when that would move it back.
 */
bool
timer_watermark_advance(int slot, uint32 id, TimestampTz to, TimestampTz *was)
{
	TimerSlot  *t = slot_lock(slot, id);
	bool		ok;

	*was = t->watermark;
	ok = to >= t->watermark;
	if (ok && to > t->watermark)
	{
		t->watermark = to;
		t->watermark_set_at = GetCurrentTimestamp();
	}
	SpinLockRelease(&t->mutex);
	return ok;
}

/*
 * watermark_in_range: a watermark the data gives, within the range of
 * timestamptz, so that state.watermark and state.timer_status can show it.
 * An event time near the start of the range less a long out_of_orderness
 * lies before it, and an idle stream's last event time near its end plus
 * the time since lies past it; nothing fires differently at the range's
 * ends (a timer's instant and a window's end are within it, or infinite).
 */
static TimestampTz
watermark_in_range(TimestampTz w)
{
	return Max(Min(w, END_TIMESTAMP - 1), MIN_TIMESTAMP);
}

/* timer_watermark_of: the watermark a value at event time t gives, lag behind it. */
TimestampTz
timer_watermark_of(TimestampTz t, int64 lag)
{
	return watermark_in_range(t - lag);
}

/*
 * timer_watermark_observe: a value or timer at event time t came to a
 * state whose watermark follows the data: the watermark moves to t less
 * lag if that is later.  True when that reaches an instant the worker must
 * look at (due_floor): the caller wakes it (timer_queue_wake).
 */
bool
timer_watermark_observe(int slot, uint32 id, TimestampTz t, int64 lag)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz w = watermark_in_range(t - lag);
	TimerSlot  *ts = slot_lock(slot, id);
	bool		wake = false;

	ts->last_arrival = now;
	if (t > ts->max_event)
		ts->max_event = t;
	if (w > ts->watermark)
	{
		ts->watermark = w;
		ts->watermark_set_at = now;
		if (ts->watermark >= ts->due_floor)
		{
			wake = true;
			ts->due_floor = DT_NOEND;	/* until the worker says again */
		}
	}
	SpinLockRelease(&ts->mutex);
	return wake;
}

/*
 * timer_watermark_arrival: values are coming to a state whose watermark
 * follows the data, which a feed's batch will publish when its rows are
 * in: the stream is not idle meanwhile.
 */
void
timer_watermark_arrival(int slot, uint32 id)
{
	TimestampTz now = GetCurrentTimestamp();
	TimerSlot  *ts = slot_lock(slot, id);

	ts->last_arrival = now;
	SpinLockRelease(&ts->mutex);
}

/*
 * timer_watermark_idle: the timer worker's look at a state whose
 * watermark follows the data and that has an idle timeout.  When no value
 * came for idle (microseconds), the watermark follows the clock from the
 * last event time seen.  Returns the clock's instant at which the
 * watermark reaches "next" (the first instant of the worker's index; a
 * time in the past when it has), or DT_NOEND when no value came yet.
 */
TimestampTz
timer_watermark_idle(int slot, uint32 id, int64 idle, TimestampTz now, TimestampTz next)
{
	TimerSlot  *ts = slot_lock_known(slot, id);
	TimestampTz reach = DT_NOEND;

	if (ts == NULL)
		return DT_NOEND;
	if (ts->max_event != DT_NOBEGIN)
	{
		TimestampTz idle_from = ts->last_arrival + idle;

		if (now > idle_from &&
			watermark_in_range(ts->max_event + (now - idle_from)) > ts->watermark)
		{
			ts->watermark = watermark_in_range(ts->max_event + (now - idle_from));
			ts->watermark_set_at = now;
		}
		if (next != DT_NOEND && next <= ts->watermark)
			reach = now;
		else if (next != DT_NOEND &&
				 !pg_add_s64_overflow(idle_from, Max(next - ts->max_event, 0), &reach))
			reach = Min(reach, DT_NOEND - 1);
		else
			reach = DT_NOEND;
	}
	SpinLockRelease(&ts->mutex);
	return reach;
}

/* A counter of a state's slot (at offset), for the timer worker: 0 if gone. */
static uint64
slot_counter(int slot, uint32 id, Size offset)
{
	TimerSlot  *ts = slot_lock_known(slot, id);
	uint64		n;

	if (ts == NULL)
		return 0;
	n = *(uint64 *) ((char *) ts + offset);
	SpinLockRelease(&ts->mutex);
	return n;
}

/* timer_slot_pushes: the event-time pushes to a state so far. */
uint64
timer_slot_pushes(int slot, uint32 id)
{
	return slot_counter(slot, id, offsetof(TimerSlot, pushes));
}

/*
 * timer_slot_due: the timer worker, before it sleeps, tells a state whose
 * watermark follows the data the first instant of its index ("next",
 * DT_NOEND: none).  Pushes since its drain (pushes_seen counted then) are
 * kept in the floor.  True when the watermark has passed it already: the
 * worker must not sleep.
 */
bool
timer_slot_due(int slot, uint32 id, TimestampTz next, uint64 pushes_seen)
{
	TimerSlot  *ts = slot_lock_known(slot, id);
	bool		due;

	if (ts == NULL)
		return false;
	if (ts->pushes == pushes_seen)
		ts->due_floor = next;
	else
		ts->due_floor = Min(ts->due_floor, next);
	due = ts->due_floor <= ts->watermark;
	SpinLockRelease(&ts->mutex);
	return due;
}

/*
 * timer_watermark_known: the clock the timer worker fires a state by: its
 * watermark, held before the windows that open transactions hold
 * (held_clock).  It does not take a slot another state holds now
 * (DT_NOBEGIN then).
 */
TimestampTz
timer_watermark_known(int slot, uint32 id, TimestampTz *set_at)
{
	TimerSlot  *t = slot_lock_known(slot, id);
	TimestampTz w;

	if (t == NULL)
	{
		*set_at = 0;
		return DT_NOBEGIN;
	}
	w = held_clock(t);
	*set_at = t->watermark_set_at;
	SpinLockRelease(&t->mutex);
	return w;
}

/* A state's watermark (DT_NOBEGIN: none yet) and when it was set. */
TimestampTz
timer_watermark(int slot, uint32 id, TimestampTz *set_at)
{
	TimerSlot  *t = slot_lock(slot, id);
	TimestampTz w = t->watermark;

	if (set_at)
		*set_at = t->watermark_set_at;
	SpinLockRelease(&t->mutex);
	return w;
}

void
timer_figures_publish(int slot, uint32 id, const TimerFigures *f)
{
	TimerSlot  *t = slot_lock_known(slot, id);

	if (t == NULL)
		return;

	/* The watermark is the slot's own: readers take it from there. */
	t->figures = *f;
	SpinLockRelease(&t->mutex);
}

void
timer_figures_read(int slot, uint32 id, TimerFigures *out)
{
	TimerSlot  *t = slot_lock(slot, id);

	*out = t->figures;
	out->watermark = t->watermark;
	SpinLockRelease(&t->mutex);
}

/* ------------------------------------------------------------ workers */

/*
 * timer_queue_note_deleted counts a timer deleted from a state: the timer
 * worker's index still names it until it is due, so the worker reads the
 * state whole again once many were (timer_queue_deleted).
 */
void
timer_queue_note_deleted(int slot, uint32 id)
{
	TimerSlot  *t = slot_lock(slot, id);

	t->deleted++;
	SpinLockRelease(&t->mutex);
}

/* The timers deleted from a state since it came to its slot. */
uint64
timer_queue_deleted(int slot, uint32 id)
{
	return slot_counter(slot, id, offsetof(TimerSlot, deleted));
}

/*
 * timer_queue_note_killed, as a timer worker exits in the middle of a
 * handler: the timer it was firing, for the database's next worker.
 */
void
timer_queue_note_killed(const KilledTimer *k)
{
	int			db = db_index(MyDatabaseId);
	TimerDb    *d;

	if (db < 0)
		return;
	d = &timers->dbs[db];
	SpinLockAcquire(&d->mutex);
	d->killed_dbid = MyDatabaseId;
	d->killed = *k;
	SpinLockRelease(&d->mutex);
}

/* timer_queue_take_killed: the timer this database's last worker was stopped in, once. */
bool
timer_queue_take_killed(KilledTimer *k)
{
	bool		found = false;

	for (int i = 0; i < timers->ndbs && !found; i++)
	{
		TimerDb    *d = &timers->dbs[i];

		SpinLockAcquire(&d->mutex);
		if (d->killed_dbid == MyDatabaseId)
		{
			*k = d->killed;
			d->killed_dbid = InvalidOid;
			found = true;
		}
		SpinLockRelease(&d->mutex);
	}
	return found;
}

/*
 * timer_queue_launch starts the timer worker of a database unless it runs
 * or was asked for a moment ago.  A database that finds no free slot (more
 * than state_backend.max_timer_databases) is said so in the log.
 */
void
timer_queue_launch(Oid dbid)
{
	BackgroundWorker bgw;
	TimestampTz now = GetCurrentTimestamp();
	int			db = -1;
	bool		launch = false;
	bool		held;

	SpinLockAcquire(&timers->hold_mutex);
	held = timers->held_dbid == dbid && timers->held_until > now;
	SpinLockRelease(&timers->hold_mutex);
	if (held)
		return;
	for (int pass = 0; pass < 2 && db < 0; pass++)
		for (int i = 0; i < timers->ndbs && db < 0; i++)
		{
			TimerDb    *d = &timers->dbs[i];

			SpinLockAcquire(&d->mutex);
			if (d->dbid == dbid || (pass == 1 && d->dbid == InvalidOid))
			{
				db = i;
				if (d->dbid != dbid)
				{
					d->dbid = dbid;
					ring_reset(d);
				}
				launch = d->pid == 0 &&
					(d->launched_at == 0 ||
					 TimestampDifferenceExceeds(d->launched_at, now, TIMER_LAUNCH_WAIT_MS));
				if (launch)
					d->launched_at = now;
			}
			SpinLockRelease(&d->mutex);
		}
	if (db < 0)
	{
		ereport(LOG,
				(errmsg("state_backend: no timer worker for database %u: %d databases have timers already",
						dbid, timers->ndbs),
				 errhint("Raise state_backend.max_timer_databases (a restart).")));
		return;
	}
	if (!launch)
		return;
	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "state_backend");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "state_timer_worker_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "state_backend timers of database %u", dbid);
	snprintf(bgw.bgw_type, BGW_MAXLEN, "state_backend timers");
	bgw.bgw_main_arg = ObjectIdGetDatum(dbid);
	if (!RegisterDynamicBackgroundWorker(&bgw, NULL))
	{
		TimerDb    *d = &timers->dbs[db];

		SpinLockAcquire(&d->mutex);
		d->launched_at = 0;
		SpinLockRelease(&d->mutex);
		ereport(LOG,
				(errmsg("state_backend: could not start the timer worker of database %u", dbid),
				 errhint("Raise max_worker_processes; the state worker tries again each second.")));
	}
}

/*
 * timer_queue_stop, as DROP DATABASE begins: its timer worker, connected
 * to it, goes (and is not started again for a while), so that the drop does
 * not find the database in use.
 */
void
timer_queue_stop(Oid dbid)
{
	int			db = db_index(dbid);
	int			pid = 0;

	SpinLockAcquire(&timers->hold_mutex);
	timers->held_dbid = dbid;
	timers->held_until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), TIMER_LAUNCH_WAIT_MS);
	SpinLockRelease(&timers->hold_mutex);
	if (db < 0)
		return;
	SpinLockAcquire(&timers->dbs[db].mutex);
	if (timers->dbs[db].dbid == dbid)
		pid = timers->dbs[db].pid;
	SpinLockRelease(&timers->dbs[db].mutex);
	if (pid == 0)
		return;
	(void) kill(pid, SIGTERM);
	for (int i = 0; i < TIMER_LAUNCH_WAIT_MS / 10; i++)
	{
		bool		gone;

		SpinLockAcquire(&timers->dbs[db].mutex);
		gone = timers->dbs[db].pid != pid;
		SpinLockRelease(&timers->dbs[db].mutex);
		if (gone)
			break;
		CHECK_FOR_INTERRUPTS();
		pg_usleep(10000L);
	}
}

/*
 * timer_queue_supervise, in the state worker each second: every database
 * with timers states has its timer worker (after a start, a restore, or a
 * worker that stopped).
 */
void
timer_queue_supervise(void)
{
	Oid		   *dbids = palloc(sizeof(Oid) * Max(timers->ndbs + 1, 1));
	int			n = registry_timer_databases(dbids, timers->ndbs + 1);

	for (int i = 0; i < n; i++)
		timer_queue_launch(dbids[i]);
	pfree(dbids);
}

static void
timer_queue_detach(int code, Datum arg)
{
	TimerDb    *d = &timers->dbs[DatumGetInt32(arg)];

	SpinLockAcquire(&d->mutex);
	if (d->pid == MyProcPid)
	{
		/* The next worker scans every state: what the ring held goes. */
		d->pid = 0;
		d->latch = NULL;
		d->launched_at = 0;
		d->dbid = InvalidOid;
		ring_reset(d);
	}
	SpinLockRelease(&d->mutex);
}

/*
 * timer_queue_attach makes this process its database's timer worker; false
 * when another one is.  The ring is emptied: the caller scans every state.
 */
bool
timer_queue_attach(Oid dbid)
{
	int			db = -1;

	for (int i = 0; i < timers->ndbs && db < 0; i++)
	{
		TimerDb    *d = &timers->dbs[i];

		SpinLockAcquire(&d->mutex);
		if (d->dbid == dbid || d->dbid == InvalidOid)
		{
			db = i;
			if (d->pid != 0 && d->dbid == dbid)
				db = -2;
			else
			{
				d->dbid = dbid;
				d->pid = MyProcPid;
				d->latch = MyLatch;
				d->launched_at = 0;
				ring_reset(d);
			}
		}
		SpinLockRelease(&d->mutex);
		if (db == -2)
			return false;
	}
	if (db < 0)
		return false;
	before_shmem_exit(timer_queue_detach, Int32GetDatum(db));
	return true;
}

/*
 * timer_queue_drain hands fn every timer the ring holds.  Returns whether
 * it overflowed since the last drain (then the caller scans its states:
 * the flag is cleared before, so that nothing registered after is missed).
 */
bool
timer_queue_drain(TimerQueuedFn fn, void *arg)
{
	int			db = db_index(MyDatabaseId);
	TimerDb    *d;
	bool		overflow;
	char	   *buf;

	if (db < 0)
		return true;
	d = &timers->dbs[db];
	SpinLockAcquire(&d->mutex);
	overflow = d->overflow;
	d->overflow = false;
	SpinLockRelease(&d->mutex);

	buf = palloc(TIMER_DRAIN_CHUNK);
	for (;;)
	{
		Size		off = 0;

		/* Whole records, at most a chunk of them, under the spinlock. */
		SpinLockAcquire(&d->mutex);
		while ((Size) (d->head - d->tail) >= sizeof(TimerRecord))
		{
			TimerRecord rec;

			ring_copy(db, d->tail, (char *) &rec, sizeof(rec), false);
			if (off + sizeof(rec) + rec.len > TIMER_DRAIN_CHUNK)
				break;
			ring_copy(db, d->tail, buf + off, sizeof(rec) + rec.len, false);
			d->tail += sizeof(rec) + rec.len;
			off += sizeof(rec) + rec.len;
		}
		if (d->head == d->tail)
			d->unwoken_min = PG_INT64_MAX;	/* all there is, drained */
		SpinLockRelease(&d->mutex);
		if (off == 0)
			break;
		for (Size p = 0; p < off;)
		{
			TimerRecord rec;

			memcpy(&rec, buf + p, sizeof(rec));
			fn(arg, rec.state_id, rec.at, buf + p + sizeof(rec), rec.len);
			p += sizeof(rec) + rec.len;
		}
	}
	pfree(buf);
	return overflow;
}

/*
 * timer_queue_may_sleep tells whether the worker may sleep until "until"
 * (an instant of the TTL clock): not when a processing-time timer due
 * before then was pushed without a wake since its last drain.  Saying yes
 * publishes the instant, so that pushes due earlier wake it.
 */
bool
timer_queue_may_sleep(int64 until)
{
	int			db = db_index(MyDatabaseId);
	TimerDb    *d;
	bool		may;

	if (db < 0)
		return true;
	d = &timers->dbs[db];
	SpinLockAcquire(&d->mutex);
	may = d->unwoken_min >= until;
	if (may)
		d->wakes_by = until;
	SpinLockRelease(&d->mutex);
	return may;
}

/* ------------------------------------------------------------ pauses */

static bool pause_exit_registered = false;

/* Wakes every timer worker of a database. */
static void
pause_wake(Oid dbid)
{
	for (int i = 0; i < timers->ndbs; i++)
	{
		TimerDb    *d = &timers->dbs[i];
		Latch	   *latch = NULL;

		SpinLockAcquire(&d->mutex);
		if (d->dbid == dbid && d->pid != 0)
			latch = d->latch;
		SpinLockRelease(&d->mutex);
		if (latch != NULL)
			SetLatch(latch);
	}
}

/* Whether a session pauses the firing of database dbid (under pause_mutex). */
static bool
db_paused(Oid dbid)
{
	for (int i = 0; i < TIMER_MAX_PAUSES; i++)
		if (timers->pauses[i].dbid == dbid)
			return true;
	return false;
}

/*
 * pause_release gives back the pauses this session holds, of database dbid
 * or (InvalidOid) of every database, and wakes the workers they held.
 */
static void
pause_release(Oid dbid)
{
	Oid			released[TIMER_MAX_PAUSES];
	int			n = 0;

	SpinLockAcquire(&timers->pause_mutex);
	for (int i = 0; i < TIMER_MAX_PAUSES; i++)
	{
		TimerPause *p = &timers->pauses[i];

		if (p->pid == MyProcPid && p->dbid != InvalidOid &&
			(dbid == InvalidOid || p->dbid == dbid))
		{
			released[n++] = p->dbid;
			p->dbid = InvalidOid;
			p->pid = 0;
		}
	}
	SpinLockRelease(&timers->pause_mutex);
	for (int i = 0; i < n; i++)
		pause_wake(released[i]);
}

/* At the session's exit, its pauses go with it. */
static void
pause_release_at_exit(int code, Datum arg)
{
	pause_release(InvalidOid);
}

/*
 * pause_wait returns once every timer worker of database dbid has begun a
 * round after the pause of generation gen was taken: the batch it was
 * firing then is done, and it fires nothing more while the pause lasts.
 * A worker that exits, or that starts later, fires nothing either.
 */
static void
pause_wait(Oid dbid, uint64 gen)
{
	for (;;)
	{
		bool		done = true;

		for (int i = 0; i < timers->ndbs; i++)
		{
			TimerDb    *d = &timers->dbs[i];
			Latch	   *latch = NULL;

			SpinLockAcquire(&d->mutex);
			if (d->dbid == dbid && d->pid != 0 && d->pause_seen < gen)
			{
				done = false;
				latch = d->latch;
			}
			SpinLockRelease(&d->mutex);
			if (latch != NULL)
				SetLatch(latch);
		}
		if (done)
			return;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * timer_queue_pause stops the firing of this database's timers and windows
 * until timer_queue_resume or the end of the session, and returns once the
 * batch its timer worker was firing, if any, is done (committed or rolled
 * back).  A pause this session holds already is held once.  An error while
 * it waits (a cancel) gives back the pause it took.
 */
void
timer_queue_pause(void)
{
	Oid			dbid = MyDatabaseId;
	int			free_slot = -1;
	uint64		gen = 0;
	bool		held = false;

	if (!pause_exit_registered)
	{
		before_shmem_exit(pause_release_at_exit, (Datum) 0);
		pause_exit_registered = true;
	}
	SpinLockAcquire(&timers->pause_mutex);
	for (int i = 0; i < TIMER_MAX_PAUSES; i++)
	{
		TimerPause *p = &timers->pauses[i];

		if (p->dbid == dbid && p->pid == MyProcPid)
		{
			held = true;
			gen = p->gen;
		}
		else if (p->dbid == InvalidOid && free_slot < 0)
			free_slot = i;
	}
	if (!held && free_slot >= 0)
	{
		TimerPause *p = &timers->pauses[free_slot];

		gen = ++timers->pause_gen;
		p->dbid = dbid;
		p->pid = MyProcPid;
		p->gen = gen;
	}
	SpinLockRelease(&timers->pause_mutex);
	if (!held && free_slot < 0)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many pauses of timers at once"),
				 errdetail("At most %d sessions may pause the timers of their database at a time.",
						   TIMER_MAX_PAUSES)));
	PG_TRY();
	{
		pause_wait(dbid, gen);
	}
	PG_CATCH();
	{
		if (!held)
			pause_release(dbid);
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/* timer_queue_resume gives back this session's pause of its database. */
void
timer_queue_resume(void)
{
	pause_release(MyDatabaseId);
}

/* timer_queue_pause_held tells whether this session pauses its database's firing. */
bool
timer_queue_pause_held(void)
{
	bool		held = false;

	SpinLockAcquire(&timers->pause_mutex);
	for (int i = 0; i < TIMER_MAX_PAUSES; i++)
		held |= timers->pauses[i].dbid == MyDatabaseId && timers->pauses[i].pid == MyProcPid;
	SpinLockRelease(&timers->pause_mutex);
	return held;
}

/* timer_queue_paused tells whether a session pauses this database's firing. */
bool
timer_queue_paused(void)
{
	bool		paused;

	SpinLockAcquire(&timers->pause_mutex);
	paused = db_paused(MyDatabaseId);
	SpinLockRelease(&timers->pause_mutex);
	return paused;
}

/*
 * timer_queue_hold_while_paused, in a timer worker before each round (it
 * fires nothing in between): tells pausing sessions that the batch it fired
 * last is done, then waits while a session pauses its database's firing.
 */
void
timer_queue_hold_while_paused(void)
{
	for (;;)
	{
		uint64		gen;
		bool		paused;

		SpinLockAcquire(&timers->pause_mutex);
		gen = timers->pause_gen;
		paused = db_paused(MyDatabaseId);
		SpinLockRelease(&timers->pause_mutex);
		for (int i = 0; i < timers->ndbs; i++)
		{
			TimerDb    *d = &timers->dbs[i];

			SpinLockAcquire(&d->mutex);
			if (d->pid == MyProcPid)
				d->pause_seen = gen;
			SpinLockRelease(&d->mutex);
		}
		if (!paused)
			return;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}
