/*
 * timers/timer_index.c
 *		The timer worker's states and its index of their due timers: which
 *		states of the database fire (from the registry), per state a binary
 *		heap of its pending timers by (instant, key) and the timers waiting
 *		to be retried, and what the worker publishes of them
 *		(state.timer_status) and sleeps by.
 *
 * A state's heap is read whole from the state when the worker first sees
 * it, when the ring of new registrations overflowed and when many of its
 * timers were deleted; otherwise the ring feeds it (timer_index_queued).
 * The heap may name timers that are gone: the batch looks each one up
 * before it fires.  The worker's loop and its batches are in
 * timer_worker.c; the ring itself in timer_queue.c.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "backend/keyed_backend.h"
#include "catalog/registry.h"
#include "common/codec.h"
#include "common/timer_handler.h"
#include "format/records.h"
#include "timers/timer_fire.h"
#include "timers/timer_index.h"
#include "timers/timer_queue.h"
#include "txn/txn_state.h"

/* The longest sleep. */
#define MAX_SLEEP_MS		1000

static MemoryContext index_cxt;	/* the worker's, for as long as it runs */
static Fired **states = NULL;	/* the states of the database that fire */
static int	nstates = 0;
static uint64 seen_version = 0;	/* the registry's version at the last look */

/*
 * Timers the ring gave for a state the worker has not seen yet: created
 * after its last look at the registry.  They wait for the next look, which
 * reads that state whole but may miss a write its backend had not applied
 * when the timer was pushed.
 */
typedef struct Unseen
{
	uint32		state_id;
	uint64		version;		/* the registry's when it came */
	Pending		t;
} Unseen;

static Unseen *unseen = NULL;
static int	nunseen = 0;
static int	maxunseen = 0;

/* ------------------------------------------------------------ the index */

/*
 * timer_pending_cmp orders timers by instant, then key (its first 8 bytes,
 * its length, the rest): the heap's order.  The timers of a tumbling
 * window's keys are all due at one instant, and the prefix held in the
 * heap orders most of them without reading their keys.
 */
int
timer_pending_cmp(const Pending *a, const Pending *b)
{
	if (a->at != b->at)
		return a->at < b->at ? -1 : 1;
	if (a->prefix != b->prefix)
		return a->prefix < b->prefix ? -1 : 1;
	if (a->keylen != b->keylen)
		return a->keylen < b->keylen ? -1 : 1;
	return memcmp(a->key, b->key, a->keylen);
}

/* The first 8 bytes of a key as a number that orders as they do (0-padded). */
static uint64
key_prefix(const char *key, uint32 keylen)
{
	uint64		v = 0;

	memcpy(&v, key, Min(keylen, sizeof(v)));
	return pg_ntoh64(v);
}

/*
 * timer_index_push puts a timer in its state's heap, with a copy of its key
 * in the worker's context (the heap owns it).
 */
void
timer_index_push(Fired *fs, int64 at, const char *key, uint32 keylen)
{
	Pending		p;
	int			i;

	if (fs->nheap == fs->maxheap)
	{
		fs->maxheap = Max(64, fs->maxheap * 2);
		fs->heap = fs->heap ? repalloc_huge(fs->heap, sizeof(Pending) * fs->maxheap) :
			MemoryContextAllocHuge(index_cxt, sizeof(Pending) * fs->maxheap);
	}
	p.at = at;
	p.prefix = key_prefix(key, keylen);
	p.keylen = keylen;
	p.key = MemoryContextAlloc(index_cxt, Max(keylen, 1));
	memcpy(p.key, key, keylen);
	for (i = fs->nheap++; i > 0; i = (i - 1) / 2)
	{
		if (timer_pending_cmp(&fs->heap[(i - 1) / 2], &p) <= 0)
			break;
		fs->heap[i] = fs->heap[(i - 1) / 2];
	}
	fs->heap[i] = p;
}

/*
 * timer_index_pop takes the earliest timer out of its state's heap, which
 * must not be empty; the caller owns its key from then on.
 */
Pending
timer_index_pop(Fired *fs)
{
	Pending		top = fs->heap[0];
	Pending		last = fs->heap[--fs->nheap];
	int			i = 0;

	for (;;)
	{
		int			c = 2 * i + 1;

		if (c >= fs->nheap)
			break;
		if (c + 1 < fs->nheap && timer_pending_cmp(&fs->heap[c + 1], &fs->heap[c]) < 0)
			c++;
		if (timer_pending_cmp(&last, &fs->heap[c]) <= 0)
			break;
		fs->heap[i] = fs->heap[c];
		i = c;
	}
	if (fs->nheap > 0)
		fs->heap[i] = last;
	return top;
}

static void
heap_clear(Fired *fs)
{
	for (int i = 0; i < fs->nheap; i++)
		pfree(fs->heap[i].key);
	fs->nheap = 0;
}

/* Whether a timer waits in its state's retries (a read of the state finds it too). */
static bool
retrying(const Fired *fs, int64 at, const char *key, uint32 keylen)
{
	for (int r = 0; r < fs->nretries; r++)
		if (fs->retries[r].t.at == at && fs->retries[r].t.keylen == keylen &&
			memcmp(fs->retries[r].t.key, key, keylen) == 0)
			return true;
	return false;
}

typedef struct LoadKey
{
	Fired	   *fs;
	const StateTarget *st;
	const char *key;
	uint32		keylen;
} LoadKey;

/*
 * One instant a key is due at, into the index: a timer waiting in the
 * retries stays there, but a key to look at goes in the index too.
 */
static void
load_due(void *arg, int64 at)
{
	LoadKey    *lk = arg;
	Fired	   *fs = lk->fs;

	if (fs->fire->by_key || fs->nretries == 0 || !retrying(fs, at, lk->key, lk->keylen))
		timer_index_push(fs, at, lk->key, lk->keylen);
}

/* Load one key's timers into the index, as its state's routine reads them. */
static void
load_key(void *arg, const char *key, uint32 keylen, const char *img, uint32 len)
{
	LoadKey    *lk = arg;
	TimerFire	tf = {lk->st, NULL, &lk->fs->key_codec, &lk->fs->at_codec};

	lk->key = key;
	lk->keylen = keylen;
	lk->fs->fire->due_times(&tf, img, len, load_due, lk);
}

/* Read a state's timers whole (in a transaction). */
static void
load_state(Fired *fs)
{
	StateTarget st = state_target(&fs->desc, fs->slot);
	LoadKey		lk = {fs, &st};

	heap_clear(fs);
	fs->deleted_seen = timer_queue_deleted(fs->slot, fs->id);
	keyed_state_ops(&fs->desc)->iterate(&st, -1, load_key, &lk);
}

/*
 * A state's index is read again once many of its timers were deleted
 * (the index names a deleted timer until it is due): past half of what it
 * holds, so a state's reads cost at most two entries per deletion.
 */
static bool
index_stale(Fired *fs)
{
	uint64		deleted = timer_queue_deleted(fs->slot, fs->id) - fs->deleted_seen;

	return deleted > Max((uint64) 1024, (uint64) fs->nheap / 2);
}

/* timer_index_any_stale: whether some state's index is to be read again. */
bool
timer_index_any_stale(void)
{
	for (int i = 0; i < nstates; i++)
		if (index_stale(states[i]))
			return true;
	return false;
}

static Fired *
find_state(uint32 id)
{
	for (int i = 0; i < nstates; i++)
		if (states[i]->id == id)
			return states[i];
	return NULL;
}

/*
 * timer_index_queued takes a timer the ring gave (timer_queue_drain's
 * callback) into its state's heap.
 */
void
timer_index_queued(void *arg, uint32 state_id, int64 at, const char *key, uint32 keylen)
{
	Fired	   *fs = find_state(state_id);
	Unseen	   *u;

	if (fs != NULL)
	{
		timer_index_push(fs, at, key, keylen);
		return;
	}
	/* A state not seen yet: the timer waits for the next look. */
	if (nunseen == maxunseen)
	{
		maxunseen = Max(16, maxunseen * 2);
		unseen = unseen ? repalloc_huge(unseen, sizeof(Unseen) * maxunseen) :
			MemoryContextAllocHuge(index_cxt, sizeof(Unseen) * maxunseen);
	}
	u = &unseen[nunseen++];
	u->state_id = state_id;
	u->version = registry_version();
	u->t.at = at;
	u->t.keylen = keylen;
	u->t.key = MemoryContextAlloc(index_cxt, Max(keylen, 1));
	memcpy(u->t.key, key, keylen);
}

/*
 * After a look at the registry: timers of states now seen go to their
 * index; those of states the look did not find although it came after
 * them are of states dropped since, and go.
 */
void
timer_index_place_unseen(void)
{
	int			n = 0;

	for (int i = 0; i < nunseen; i++)
	{
		Unseen	   *u = &unseen[i];
		Fired	   *fs = find_state(u->state_id);

		if (fs != NULL)
			timer_index_push(fs, u->t.at, u->t.key, u->t.keylen);
		if (fs != NULL || u->version <= seen_version)
			pfree(u->t.key);
		else
			unseen[n++] = *u;
	}
	nunseen = n;
}

/* ------------------------------------------------------------ the states */

static void
forget_state(int i)
{
	Fired	   *fs = states[i];

	heap_clear(fs);
	if (fs->heap)
		pfree(fs->heap);
	for (int r = 0; r < fs->nretries; r++)
		pfree(fs->retries[r].t.key);
	if (fs->retries)
		pfree(fs->retries);
	pfree(fs);
	states[i] = states[--nstates];
}

static Fired *
new_state(const StateDesc *d, int slot)
{
	Fired	   *fs = MemoryContextAllocZero(index_cxt, sizeof(Fired));

	fs->id = d->id;
	fs->slot = slot;
	fs->desc = *d;
	fs->fire = timer_fire_routine(d);
	codec_init(&fs->key_codec, d->types[STATE_TYPE_KEY].oid, index_cxt);
	codec_init(&fs->at_codec, TIMESTAMPTZOID, index_cxt);
	fs->rate_start = GetCurrentTimestamp();
	states = states ? repalloc(states, sizeof(Fired *) * (nstates + 1)) :
		MemoryContextAlloc(index_cxt, sizeof(Fired *));
	states[nstates++] = fs;
	return fs;
}

/*
 * timer_index_sync looks at the registry (in a transaction): new timers
 * states are read whole, gone ones forgotten, the others' descriptors
 * refreshed (owner, grants), and every handler checked.  Returns how many
 * remain.
 */
int
timer_index_sync(bool reload_all)
{
	StateDesc  *descs;
	int		   *slots;
	int			n;

	seen_version = registry_version();
	n = registry_list(MyDatabaseId, &descs, &slots);
	for (int i = 0; i < nstates; i++)
		states[i]->seen = false;
	for (int i = 0; i < n; i++)
	{
		Fired	   *fs;

		if (!state_desc_fires(&descs[i]))
			continue;
		fs = find_state(descs[i].id);
		if (fs == NULL)
		{
			fs = new_state(&descs[i], slots[i]);
			load_state(fs);
		}
		else
		{
			fs->desc = descs[i];
			fs->slot = slots[i];
			if (reload_all || index_stale(fs))
				load_state(fs);
		}
		fs->seen = true;
		fs->owner_super = superuser_arg(fs->desc.owner);
	}
	for (int i = nstates - 1; i >= 0; i--)
		if (!states[i]->seen)
			forget_state(i);
	for (int i = 0; i < nstates; i++)
	{
		Fired	   *fs = states[i];
		const char *problem = timer_handler_problem(&fs->desc);

		strlcpy(fs->problem, problem ? problem : "", sizeof(fs->problem));
		if (problem == NULL && !fs->handler_ready && OidIsValid(fs->desc.timer_handler))
		{
			fmgr_info_cxt(fs->desc.timer_handler, &fs->handler, index_cxt);
			fs->handler_ready = true;
		}
	}
	pfree(descs);
	pfree(slots);
	return nstates;
}

/* ------------------------------------------------------------ the worker's view */

/*
 * timer_index_init readies the index, whose entries and states live in cxt
 * (the worker's context, which lives as long as the worker).
 */
void
timer_index_init(MemoryContext cxt)
{
	index_cxt = cxt;
}

/* timer_index_states: the states the worker fires, and how many (*n). */
Fired	  **
timer_index_states(int *n)
{
	*n = nstates;
	return states;
}

/* timer_index_changed: whether the registry moved since the last look. */
bool
timer_index_changed(void)
{
	return registry_version() != seen_version;
}

/*
 * timer_index_add_retry puts a timer among its state's retries, to be
 * tried again from not_before; the retries own t's key from then on.
 */
void
timer_index_add_retry(Fired *fs, Pending t, int attempts, bool alone, TimestampTz not_before)
{
	if (fs->nretries == fs->maxretries)
	{
		fs->maxretries = Max(16, fs->maxretries * 2);
		fs->retries = fs->retries ? repalloc(fs->retries, sizeof(Retry) * fs->maxretries) :
			MemoryContextAlloc(index_cxt, sizeof(Retry) * fs->maxretries);
	}
	fs->retries[fs->nretries].t = t;
	fs->retries[fs->nretries].attempts = attempts;
	fs->retries[fs->nretries].alone = alone;
	fs->retries[fs->nretries].not_before = not_before;
	fs->nretries++;
}

/* ------------------------------------------------------------ figures, sleep */

static int
int64_cmp(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * timer_index_publish_figures publishes each state's figures for
 * state.timer_status: what it holds, its next due time, its rate of firing
 * (over five seconds at least) and the 99th percentile of its lags.
 */
void
timer_index_publish_figures(TimestampTz now)
{
	for (int i = 0; i < nstates; i++)
	{
		Fired	   *fs = states[i];
		TimerFigures f;
		long		secs;
		int			usecs;

		memset(&f, 0, sizeof(f));
		f.pending = fs->nheap + fs->nretries;
		f.retrying = fs->nretries;
		f.next_due = fs->nheap > 0 ? fs->heap[0].at : DT_NOEND;
		TimestampDifference(fs->rate_start, now, &secs, &usecs);
		if (secs >= 5)
		{
			fs->fired_per_s = fs->rate_fired / (secs + usecs / 1e6);
			fs->rate_fired = 0;
			fs->rate_start = now;
		}
		f.fired_per_s = fs->fired_per_s;
		f.lag_p99_us = -1;
		if (fs->nlags > 0)
		{
			int64		sorted[LAG_SAMPLES];

			memcpy(sorted, fs->lags, sizeof(int64) * fs->nlags);
			qsort(sorted, fs->nlags, sizeof(int64), int64_cmp);
			f.lag_p99_us = sorted[(fs->nlags * 99) / 100 == fs->nlags ? fs->nlags - 1 : (fs->nlags * 99) / 100];
		}
		strlcpy(f.problem, fs->problem, sizeof(f.problem));
		timer_figures_publish(fs->slot, fs->id, &f);
	}
}

/*
 * timer_index_sleep_ms: how long the worker may sleep, until the next
 * processing-time timer or retry is due (event-time timers come with the
 * watermark, which wakes it).
 */
/*
 * timer_index_before_drain counts, for each state whose watermark follows
 * the data, the pushes made to it before the worker drains its ring.
 */
void
timer_index_before_drain(void)
{
	for (int i = 0; i < nstates; i++)
		if (states[i]->desc.watermark_by_data)
			states[i]->pushes_seen = timer_slot_pushes(states[i]->slot, states[i]->id);
}

/*
 * timer_index_follow_idle moves the watermark of each state with an idle
 * timeout that no value reached for that long (timer_watermark_idle).
 */
void
timer_index_follow_idle(TimestampTz now)
{
	for (int i = 0; i < nstates; i++)
	{
		Fired	   *fs = states[i];

		if (fs->desc.watermark_by_data && fs->desc.idle_timeout > 0)
			(void) timer_watermark_idle(fs->slot, fs->id, fs->desc.idle_timeout, now, DT_NOEND);
	}
}

/*
 * timer_index_sleep_ms: how long the worker may sleep.  It tells each state
 * whose watermark follows the data the first instant of its index, so that
 * a value that moves the watermark to it wakes the worker (none if the
 * watermark has passed it), and wakes itself when an idle state's
 * watermark, following the clock, will reach it.
 */
long
timer_index_sleep_ms(TimestampTz now)
{
	int64		wait = (int64) MAX_SLEEP_MS * 1000;

	for (int i = 0; i < nstates; i++)
	{
		Fired	   *fs = states[i];
		TimestampTz next = fs->nheap > 0 ? fs->heap[0].at : DT_NOEND;

		if (fs->problem[0] != '\0')
			continue;
		if (fs->desc.watermark_by_data)
		{
			if (timer_slot_due(fs->slot, fs->id, next, fs->pushes_seen))
				wait = 0;
			if (fs->desc.idle_timeout > 0)
				wait = Min(wait, timer_watermark_idle(fs->slot, fs->id, fs->desc.idle_timeout,
													  now, next) - now);
		}
		if (!fs->desc.timer_event_time && fs->nheap > 0)
			wait = Min(wait, fs->heap[0].at - record_ttl_now());
		for (int r = 0; r < fs->nretries; r++)
			wait = Min(wait, fs->retries[r].not_before - now);
	}
	return wait <= 0 ? 0 : (long) ((wait + 999) / 1000);
}

