/*
 * ttl/ttl_state.c
 *		State TTL (Flink's StateTtlConfig): the layer between the SQL
 *		functions and the backend of a state with a time to live.
 *
 * It is a KeyedStateBackend over the state's own one (keyed_backend_by_id,
 * which stores the images with their deadlines); keyed_state_ops hands it
 * out for every state with a TTL.
 * Going down, it gives each value a deadline, now + ttl (format/records.h:
 * "ttl value"): a value or reducing result as a whole, each list element,
 * each map entry.  Coming up, it drops what expired, unless the state
 * returns expired values until they are cleaned up, and removes the
 * deadlines, so the layers above see the images they always did.
 *
 * Cleanup (what gives the memory back):
 *	- on access: a read that meets an expired value removes it, and with
 *	  on_read_and_write stores what it read with a new deadline, both by
 *	  compare and set (replace), so a write that came meanwhile wins;
 *	- in the background (ttl_state_sweep, from the state worker) for states
 *	  whose backend has no compact operation (heap states): a few key
 *	  groups per tick, key by key, again by compare and set;
 *	- in RocksDB by a compaction filter (backend/rocksdb/rocks_ttl.c);
 *	- in full snapshots, which leave expired values out
 *	  (snapshot/snapshot_driver.c).
 *
 * The clock is the server's (record_ttl_now), as in Flink's processing time.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "backend/keyed_backend.h"
#include "backend/keyed_move.h"
#include "catalog/registry.h"
#include "catalog/stats.h"
#include "common/local_hash.h"
#include "common/progress.h"
#include "common/settings.h"
#include "format/records.h"
#include "ttl/ttl_state.h"

/* The time a tick of the background cleanup may take (a tick is 100 ms). */
#define TTL_SWEEP_TICK_BUDGET_US	(25 * 1000)

/*
 * A buffer kept between calls, for the images of operations that call
 * nothing that could come back here: get, put, append, map_put.
 */
static StringInfoData scratch;

static const KeyedStateBackend *
inner(const StateTarget *st)
{
	return keyed_backend_of(st->desc);
}

static inline bool
hides_expired(const StateTarget *st)
{
	return st->desc->ttl_visibility == STATE_TTL_NEVER_RETURN_EXPIRED;
}

static inline bool
renews_on_read(const StateTarget *st)
{
	return st->desc->ttl_update == STATE_TTL_ON_READ_AND_WRITE;
}

static StringInfo
scratch_buffer(void)
{
	if (scratch.data == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		initStringInfo(&scratch);
		MemoryContextSwitchTo(old);
	}
	else if (scratch.maxlen > 64 * 1024)
	{
		/* Do not keep a big image's buffer for good. */
		pfree(scratch.data);
		scratch.data = NULL;
		return scratch_buffer();
	}
	resetStringInfo(&scratch);
	return &scratch;
}

static void
ttl_damaged(const StateTarget *st)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("a stored value of state \"%s\" has no TTL deadline",
					NameStr(st->desc->name))));
}

/* A map entry's TTL value: deadline, flag, value. */
static void
map_value_read(const StateTarget *st, const char *v, uint32 len, int64 *deadline,
			   const char **value, uint32 *vlen)
{
	if (len < RECORD_TTL_MAP_HDR || !record_ttl_read(v, len, deadline))
		ttl_damaged(st);
	*value = v[RECORD_TTL_HDR] ? NULL : v + RECORD_TTL_MAP_HDR;
	*vlen = *value ? len - RECORD_TTL_MAP_HDR : 0;
}

/*
 * visible appends to out the plain image of what a TTL image of the state
 * shows at now: with never_return_expired, only what is live.  *expired is
 * set when some of it expired.  Returns whether it shows anything.
 */
static bool visible(const StateTarget *st, const char *img, uint32 len, int64 now,
					StringInfo out, bool *expired);

/*
 * ttl_image_visible: what a stored image of a state with a TTL shows at
 * now, as visible() gives it, for images read out of a snapshot.
 */
bool
ttl_image_visible(const StateDesc *desc, const char *img, uint32 len, int64 now, StringInfo out)
{
	StateTarget st = state_target(desc, -1);
	bool		expired = false;

	resetStringInfo(out);
	return visible(&st, img, len, now, out, &expired);
}

static bool
visible(const StateTarget *st, const char *img, uint32 len, int64 now,
		StringInfo out, bool *expired)
{
	bool		hide = hides_expired(st);
	uint32		off = 0;
	bool		shown = false;
	const char *data;
	uint32		n;
	RecordPair	pair;
	RecordRead	r = RECORD_END;
	int64		deadline;

	switch (st->desc->kind)
	{
		case STATE_KIND_LIST:
			while ((r = record_next_elem(img, len, &off, &data, &n)) == RECORD_OK)
			{
				int			begin;

				if (!record_ttl_read(data, n, &deadline))
					ttl_damaged(st);
				*expired |= deadline <= now;
				if (hide && deadline <= now)
					continue;
				begin = record_elem_begin(out);
				appendBinaryStringInfo(out, data + RECORD_TTL_HDR, n - RECORD_TTL_HDR);
				record_elem_end(out, begin);
				shown = true;
			}
			break;
		case STATE_KIND_MAP:
			while ((r = record_next_pair(img, len, &off, &pair)) == RECORD_OK)
			{
				const char *v;
				uint32		vlen;

				if (pair.value == NULL)
					ttl_damaged(st);
				map_value_read(st, pair.value, pair.vallen, &deadline, &v, &vlen);
				*expired |= deadline <= now;
				if (hide && deadline <= now)
					continue;
				record_put_pair(out, pair.key, pair.keylen, v, vlen);
				shown = true;
			}
			break;
		default:
			if (!record_ttl_read(img, len, &deadline))
				ttl_damaged(st);
			*expired = deadline <= now;
			if (hide && *expired)
				return false;
			appendBinaryStringInfo(out, img + RECORD_TTL_HDR, len - RECORD_TTL_HDR);
			return true;
	}
	if (r != RECORD_END)
		ttl_damaged(st);
	return shown;
}

/*
 * renewed appends to out the TTL image with what expired at now left out
 * and, when renew, every deadline set to "deadline".  Returns whether
 * anything is left.
 */
static bool
renewed(const StateTarget *st, const char *img, uint32 len, int64 now, bool renew,
		int64 deadline, StringInfo out)
{
	uint32		keep;

	appendBinaryStringInfo(out, img, len);
	keep = record_ttl_compact(st->desc->kind, out->data, len, now);
	out->len = (int) keep;
	if (renew && st->desc->kind == STATE_KIND_LIST)
	{
		uint32		off = 0;
		const char *data;
		uint32		n;

		while (record_next_elem(out->data, keep, &off, &data, &n) == RECORD_OK)
			memcpy(unconstify(char *, data), &deadline, sizeof(int64));
	}
	else if (renew && st->desc->kind == STATE_KIND_MAP)
	{
		uint32		off = 0;
		RecordPair	pair;

		while (record_next_pair(out->data, keep, &off, &pair) == RECORD_OK)
			if (pair.value)
				memcpy(unconstify(char *, pair.value), &deadline, sizeof(int64));
	}
	else if (renew && keep > 0)
		memcpy(out->data, &deadline, sizeof(int64));
	return keep > 0;
}

/*
 * read_replace stores what a read cleaned up or renewed, unless the image
 * changed meanwhile.  A hot standby stores nothing: its primary cleans up
 * and renews, and WAL brings that.
 */
static bool
read_replace(const StateTarget *st, const StateKey *key, const char *mkey, uint32 mkeylen,
			 const char *old, uint32 oldlen, const char *img, uint32 len)
{
	if (RecoveryInProgress())
		return false;
	return inner(st)->replace(st, key, mkey, mkeylen, old, oldlen, img, len);
}

/*
 * after_read cleans up and renews what a read of a key's whole image met:
 * it stores the image with the expired parts gone and, with
 * on_read_and_write, the rest renewed, unless the key changed meanwhile.
 */
static void
after_read(const StateTarget *st, const StateKey *key, const char *img, uint32 len,
		   int64 now, bool expired)
{
	bool		renew = renews_on_read(st);
	StringInfoData next;

	if (!expired && !renew)
		return;
	if (expired)
		state_stats_count(st->slot, STATE_STAT_EXPIRED, 1);
	initStringInfo(&next);
	if (renewed(st, img, len, now, renew, record_ttl_deadline(now, st->desc->ttl), &next))
		(void) read_replace(st, key, NULL, 0, img, len, next.data, next.len);
	else
		(void) read_replace(st, key, NULL, 0, img, len, NULL, 0);
	pfree(next.data);
}

static bool
ttl_get(const StateTarget *st, const StateKey *key, StringInfo out)
{
	StringInfo	img = scratch_buffer();
	int64		now;
	bool		expired = false;
	bool		shown;

	if (!inner(st)->get(st, key, img))
		return false;
	now = record_ttl_now();
	shown = visible(st, img->data, img->len, now, out, &expired);
	if (shown || expired)
		after_read(st, key, img->data, img->len, now, expired);
	return shown;
}

/* wrap appends a plain list image's elements as TTL elements. */
static void
wrap_elems(const StateTarget *st, const char *elems, uint32 len, int64 deadline,
		   StringInfo out)
{
	uint32		off = 0;
	const char *data;
	uint32		n;
	RecordRead	r;

	while ((r = record_next_elem(elems, len, &off, &data, &n)) == RECORD_OK)
	{
		int			begin = record_elem_begin(out);

		record_ttl_put(out, deadline);
		appendBinaryStringInfo(out, data, n);
		record_elem_end(out, begin);
	}
	if (r != RECORD_END)
		elog(ERROR, "state_backend: a list image to store is truncated");
}

static void
ttl_put(const StateTarget *st, const StateKey *key, const char *value, uint32 len)
{
	int64		deadline = record_ttl_deadline(record_ttl_now(), st->desc->ttl);
	StringInfo	img = scratch_buffer();

	if (st->desc->kind == STATE_KIND_LIST)
		wrap_elems(st, value, len, deadline, img);
	else
	{
		record_ttl_put(img, deadline);
		appendBinaryStringInfo(img, value, len);
	}
	inner(st)->put(st, key, img->data, img->len);
}

static bool
ttl_remove(const StateTarget *st, const StateKey *key)
{
	return inner(st)->remove(st, key);
}

static void
ttl_append(const StateTarget *st, const StateKey *key, const char *elems, uint32 len)
{
	StringInfo	img = scratch_buffer();

	wrap_elems(st, elems, len, record_ttl_deadline(record_ttl_now(), st->desc->ttl), img);
	inner(st)->append(st, key, img->data, img->len);
}

/* The fold of a reducing state with a TTL, around the state's own. */
typedef struct TtlMerge
{
	const StateTarget *st;
	StateMergeFn fn;
	void	   *arg;
	StringInfoData result;
} TtlMerge;

/* StateMergeFn: fold "in" into the live current value, with a new deadline. */
static void
ttl_merge_fn(const char *cur, uint32 curlen, const char *in, uint32 inlen,
			 StringInfo out, void *arg)
{
	TtlMerge   *m = arg;
	int64		now = record_ttl_now();
	int64		deadline;

	/* An expired result is folded as if there were none (Flink's way). */
	if (cur && !record_ttl_read(cur, curlen, &deadline))
		ttl_damaged(m->st);
	if (cur && deadline <= now)
		cur = NULL;
	resetStringInfo(&m->result);
	m->fn(cur ? cur + RECORD_TTL_HDR : NULL, cur ? curlen - RECORD_TTL_HDR : 0,
		  in, inlen, &m->result, m->arg);
	resetStringInfo(out);
	record_ttl_put(out, record_ttl_deadline(now, m->st->desc->ttl));
	appendBinaryStringInfo(out, m->result.data, m->result.len);
}

static void
ttl_merge(const StateTarget *st, const StateKey *key, const char *value, uint32 len,
		  StateMergeFn fn, void *arg, const StateFold *fold, StringInfo out)
{
	TtlMerge	m = {st, fn, arg};

	/* The backend's own fold knows no deadlines: always fold here. */
	initStringInfo(&m.result);
	inner(st)->merge(st, key, value, len, ttl_merge_fn, &m, NULL, out);
	pfree(m.result.data);
	if (out->len < (int) RECORD_TTL_HDR)
		ttl_damaged(st);
	memmove(out->data, out->data + RECORD_TTL_HDR, out->len - RECORD_TTL_HDR);
	out->len -= RECORD_TTL_HDR;
	out->data[out->len] = '\0';
}

/* Store a map entry's TTL value v with a new deadline, unless it changed. */
static void
renew_map_entry(const StateTarget *st, const StateKey *key, const char *mkey,
				uint32 mkeylen, const char *v, uint32 len, int64 now)
{
	StringInfoData next;

	initStringInfo(&next);
	record_ttl_put(&next, record_ttl_deadline(now, st->desc->ttl));
	appendBinaryStringInfo(&next, v + RECORD_TTL_HDR, len - RECORD_TTL_HDR);
	(void) read_replace(st, key, mkey, mkeylen, v, len, next.data, next.len);
	pfree(next.data);
}

/*
 * map_entry_read: after reading a map entry's TTL value, clean it up when
 * it expired, renew it when reads renew; returns whether it shows.
 */
static bool
map_entry_read(const StateTarget *st, const StateKey *key, const char *mkey,
			   uint32 mkeylen, const char *v, uint32 len, StringInfo out, bool *isnull)
{
	int64		now = record_ttl_now();
	int64		deadline;
	const char *value;
	uint32		vlen;

	map_value_read(st, v, len, &deadline, &value, &vlen);
	if (deadline <= now)
	{
		state_stats_count(st->slot, STATE_STAT_EXPIRED, 1);
		(void) read_replace(st, key, mkey, mkeylen, v, len, NULL, 0);
	}
	else if (renews_on_read(st))
		renew_map_entry(st, key, mkey, mkeylen, v, len, now);
	if (deadline <= now && hides_expired(st))
		return false;
	*isnull = value == NULL;
	if (value)
		appendBinaryStringInfo(out, value, vlen);
	return true;
}

static bool
ttl_map_get(const StateTarget *st, const StateKey *key, const char *mkey,
			uint32 mkeylen, StringInfo out, bool *isnull)
{
	StringInfoData v;
	bool		vnull;
	bool		found;

	initStringInfo(&v);
	found = inner(st)->map_get(st, key, mkey, mkeylen, &v, &vnull);
	if (found && vnull)
		ttl_damaged(st);
	if (found)
		found = map_entry_read(st, key, mkey, mkeylen, v.data, v.len, out, isnull);
	pfree(v.data);
	return found;
}

static void
ttl_map_put(const StateTarget *st, const StateKey *key, const char *mkey,
			uint32 mkeylen, const char *value, uint32 len, bool isnull)
{
	StringInfo	v = scratch_buffer();

	record_ttl_put(v, record_ttl_deadline(record_ttl_now(), st->desc->ttl));
	appendStringInfoChar(v, isnull ? 1 : 0);
	if (!isnull)
		appendBinaryStringInfo(v, value, len);
	inner(st)->map_put(st, key, mkey, mkeylen, v->data, v->len, false);
}

static bool
ttl_map_remove(const StateTarget *st, const StateKey *key, const char *mkey,
			   uint32 mkeylen)
{
	return inner(st)->map_remove(st, key, mkey, mkeylen);
}

/* What an iteration of map entries passes on. */
typedef struct TtlEntries
{
	const StateTarget *st;
	const StateKey *key;		/* map_iterate: the key whose entries these are */
	StateEntryFn fn;
	void	   *arg;
	int64		now;
	int64		count;
	StringInfoData plain;
} TtlEntries;

/*
 * StateEntryFn of map_iterate: pass on the entries that show, and clean up
 * the expired ones it meets.
 */
static void
entry_shown(void *arg, const char *mkey, uint32 mkeylen, const char *v, uint32 len)
{
	TtlEntries *t = arg;
	int64		deadline;
	const char *value;
	uint32		vlen;

	if (v == NULL)
		ttl_damaged(t->st);
	map_value_read(t->st, v, len, &deadline, &value, &vlen);
	if (deadline <= t->now)
	{
		/* Met expired: cleaned up, as map_get does, so shown once at most. */
		state_stats_count(t->st->slot, STATE_STAT_EXPIRED, 1);
		(void) read_replace(t->st, t->key, mkey, mkeylen, v, len, NULL, 0);
		if (hides_expired(t->st))
			return;
	}
	t->count++;
	if (t->fn == NULL)
		return;
	/* Entries read renew, as a map_get does. */
	if (deadline > t->now && renews_on_read(t->st))
		renew_map_entry(t->st, t->key, mkey, mkeylen, v, len, t->now);
	t->fn(t->arg, mkey, mkeylen, value, vlen);
}

static void
ttl_map_iterate(const StateTarget *st, const StateKey *key, StateEntryFn fn, void *arg)
{
	TtlEntries	t = {st, key, fn, arg, record_ttl_now(), 0};

	inner(st)->map_iterate(st, key, entry_shown, &t);
}

static int64
ttl_length(const StateTarget *st, const StateKey *key)
{
	TtlEntries	t = {st, key, NULL, NULL, record_ttl_now(), 0};
	StringInfoData img;

	if (st->desc->kind == STATE_KIND_MAP)
	{
		inner(st)->map_iterate(st, key, entry_shown, &t);
		return t.count;
	}
	initStringInfo(&img);
	if (ttl_get(st, key, &img))
		t.count = record_count_elems(img.data, img.len);
	pfree(img.data);
	return t.count;
}

/* StateEntryFn of iterate: pass on the keys whose state shows, as shown. */
static void
key_shown(void *arg, const char *key, uint32 keylen, const char *img, uint32 len)
{
	TtlEntries *t = arg;
	bool		expired = false;

	resetStringInfo(&t->plain);
	if (img == NULL || !visible(t->st, img, len, t->now, &t->plain, &expired))
		return;
	t->count++;
	if (t->fn)
		t->fn(t->arg, key, keylen, t->plain.data, t->plain.len);
}

static void
ttl_iterate(const StateTarget *st, int key_group, StateEntryFn fn, void *arg)
{
	TtlEntries	t = {st, NULL, fn, arg, record_ttl_now(), 0};

	initStringInfo(&t.plain);
	inner(st)->iterate(st, key_group, key_shown, &t);
	pfree(t.plain.data);
}

static int64
ttl_truncate(const StateTarget *st)
{
	return inner(st)->truncate(st);
}

static void
ttl_create(const StateTarget *st)
{
	if (inner(st)->create)
		inner(st)->create(st);
}

static void
ttl_drop(const StateTarget *st, bool confirm)
{
	inner(st)->drop(st, confirm);
}

/*
 * ttl_size: the bytes are the backend's; the keys, with
 * never_return_expired, are those whose state shows, counted.
 */
static void
ttl_size(const StateTarget *st, int64 *entries, int64 *bytes)
{
	inner(st)->size(st, entries, bytes);
	if (hides_expired(st))
	{
		TtlEntries	t = {st, NULL, NULL, NULL, record_ttl_now(), 0};

		initStringInfo(&t.plain);
		inner(st)->iterate(st, -1, key_shown, &t);
		pfree(t.plain.data);
		*entries = t.count;
	}
}

/* What a sweep of one key group of one state has seen and done. */
typedef struct TtlSweep
{
	const StateTarget *st;
	int64		now;
	int64		removed;		/* keys, elements or map entries */
	int64		seen;
	int64		min_deadline;	/* the earliest deadline of what is left */
	StringInfoData next;
} TtlSweep;

/* StateEntryFn of a sweep: clean up one key. */
static void
sweep_key(void *arg, const char *key, uint32 keylen, const char *img, uint32 len)
{
	TtlSweep   *s = arg;
	StateKey	k;
	bool		left;

	CHECK_FOR_INTERRUPTS();
	if (++s->seen % 1024 == 0)
		progress_yield();
	if (img == NULL)
		return;
	resetStringInfo(&s->next);
	left = renewed(s->st, img, len, s->now, false, 0, &s->next);
	if (left)
		s->min_deadline = Min(s->min_deadline,
							  record_ttl_min_deadline(s->st->desc->kind, s->next.data, s->next.len));
	if (left && (uint32) s->next.len == len)
		return;					/* nothing expired */
	state_key_set(&k, key, keylen);
	if (s->st->desc->kind == STATE_KIND_MAP)
	{
		/* Entry by entry: a map's entries are written one at a time. */
		uint32		off = 0;
		RecordPair	pair;

		while (record_next_pair(img, len, &off, &pair) == RECORD_OK)
			if (pair.value && record_ttl_expired(pair.value, pair.vallen, s->now))
			{
				if (inner(s->st)->replace(s->st, &k, pair.key, pair.keylen,
										  pair.value, pair.vallen, NULL, 0))
					s->removed++;
				else
					s->min_deadline = s->now;	/* changed meanwhile: again */
			}
		return;
	}
	if (inner(s->st)->replace(s->st, &k, NULL, 0, img, len,
							  left ? s->next.data : NULL, left ? s->next.len : 0))
		s->removed += s->st->desc->kind == STATE_KIND_LIST ?
			record_count_elems(img, len) - record_count_elems(s->next.data, s->next.len) : 1;
	else
		s->min_deadline = s->now;	/* changed meanwhile: again next pass */
}

/*
 * ttl_state_sweep_key_group removes what expired in one key group of a TTL
 * state; returns how many values (in place: keys) it removed.  *next_expiry (if not NULL)
 * gets the earliest time anything in the key group may expire: the
 * earliest deadline left, or, for what is written from now on, now + ttl.
 */
static int64
ttl_state_sweep_key_group(const StateTarget *st, int key_group, int64 *next_expiry)
{
	TtlSweep	s = {st, record_ttl_now(), 0, 0, PG_INT64_MAX};

	/* In place when the backend can, else key by key. */
	if (inner(st)->expire)
		s.removed = inner(st)->expire(st, key_group, s.now, &s.min_deadline);
	if (inner(st)->expire == NULL || s.removed < 0)
	{
		s.removed = 0;
		s.min_deadline = PG_INT64_MAX;
		initStringInfo(&s.next);
		inner(st)->iterate(st, key_group, sweep_key, &s);
		pfree(s.next.data);
	}
	if (next_expiry)
		*next_expiry = Min(s.min_deadline, record_ttl_deadline(s.now, st->desc->ttl));
	if (s.removed > 0)
		state_stats_count(st->slot, STATE_STAT_EXPIRED, (uint64) s.removed);
	return s.removed;
}

/*
 * ttl_compact reclaims what a state's expired values hold: the backend's
 * own way when it has one, otherwise by sweeping every key group.
 */
static void
ttl_compact(const StateTarget *st)
{
	if (inner(st)->compact)
	{
		inner(st)->compact(st);
		return;
	}
	for (int kg = 0; kg < state_backend_max_parallelism; kg++)
		(void) ttl_state_sweep_key_group(st, kg, NULL);
}

/*
 * What the background cleanup knows of a state: per key group, the
 * earliest time anything in it may expire (0: unknown), so that a key
 * group where nothing can have expired is not walked.  Deadlines only
 * grow: a write or a renewal sets now + ttl, later than any deadline a
 * sweep has seen.  Only restores and replay bring older ones, and both
 * make the states anew (new ids) or run before any sweep.
 */
typedef struct SweepTrack
{
	uint32		id;
	uint64		pass;			/* the tick that last saw the state */
	int64	   *next_expiry;	/* [max_parallelism] */
} SweepTrack;

static HTAB *sweep_tracks = NULL;

static SweepTrack *
sweep_track(uint32 id, uint64 pass)
{
	SweepTrack *t;
	bool		found;

	if (sweep_tracks == NULL)
		sweep_tracks = local_hash_create("state_backend TTL cleanup", 16,
										 sizeof(uint32), sizeof(SweepTrack), TopMemoryContext);
	t = hash_search(sweep_tracks, &id, HASH_ENTER, &found);
	if (!found)
		t->next_expiry = MemoryContextAllocZero(TopMemoryContext,
												sizeof(int64) * state_backend_max_parallelism);
	t->pass = pass;
	return t;
}

/* Forget the states that were not seen in this tick (dropped). */
static void
sweep_forget(uint64 pass)
{
	HASH_SEQ_STATUS seq;
	SweepTrack *t;

	if (sweep_tracks == NULL)
		return;
	hash_seq_init(&seq, sweep_tracks);
	while ((t = hash_seq_search(&seq)) != NULL)
		if (t->pass != pass)
		{
			pfree(t->next_expiry);
			hash_search(sweep_tracks, &t->id, HASH_REMOVE, NULL);
		}
}

/*
 * ttl_state_sweep is one tick of the background cleanup, run by the state
 * worker: the next state_backend.ttl_cleanup_key_groups key groups of every
 * TTL state whose backend has no compact operation of its own, skipping
 * those where nothing can have expired yet, and stopping early once the
 * tick has taken TTL_SWEEP_TICK_BUDGET_US, so that the cleanup takes at
 * most about a quarter of a core.  Returns whether there is such a state,
 * so the worker knows to tick again.
 */
bool
ttl_state_sweep(void)
{
	static int	next_key_group = 0;
	static uint64 pass = 0;
	int			nkg = state_backend_max_parallelism;
	int			groups = Min(state_backend_ttl_cleanup_key_groups, nkg);
	StateDesc  *descs = palloc(sizeof(StateDesc) * Max(state_backend_max_states, 1));
	int			n = registry_copy_all(descs, NULL);
	StateTarget *targets = palloc(sizeof(StateTarget) * Max(n, 1));
	SweepTrack **tracks = palloc(sizeof(SweepTrack *) * Max(n, 1));
	StateDesc  *live = palloc(sizeof(StateDesc) * Max(n, 1));
	int			nt = 0;
	int64		started = record_ttl_now();

	pass++;
	for (int i = 0; i < n; i++)
	{
		int			slot;

		if (descs[i].ttl == 0 || keyed_backend_by_id(descs[i].backend)->compact != NULL)
			continue;
		tracks[nt] = sweep_track(descs[i].id, pass);
		slot = registry_find(descs[i].id, &live[nt]);
		if (slot >= 0)
		{
			targets[nt] = state_target(&live[nt], slot);
			nt++;
		}
	}
	sweep_forget(pass);

	/* Key group by key group, within the tick's time. */
	for (int g = 0; g < groups && nt > 0; g++)
	{
		int			kg = next_key_group;

		/* Moved on first: a key group that fails is not tried every tick. */
		next_key_group = (next_key_group + 1) % nkg;
		for (int i = 0; i < nt; i++)
			if (record_ttl_now() >= tracks[i]->next_expiry[kg])
				(void) ttl_state_sweep_key_group(&targets[i], kg, &tracks[i]->next_expiry[kg]);
		if (record_ttl_now() - started >= TTL_SWEEP_TICK_BUDGET_US)
			break;
	}
	pfree(descs);
	return nt > 0;
}

/*
 * The operations that move images as they are stored (replace, and those
 * of restores, replay and snapshots) are the backend's own: they go to
 * keyed_backend_by_id, not through here.
 */
/*
 * keyed_state_ops_applied: what a state's writes go through once they are
 * applied (under the transactional layer, txn/): this layer for a state
 * with a TTL, else its backend.  Images pass below it with their
 * deadlines: what restores, replays and snapshots move is the backend's
 * own (keyed_backend_by_id).
 */
const KeyedStateBackend *
keyed_state_ops_applied(const StateDesc *desc)
{
	return desc->ttl > 0 ? &ttl_keyed_backend : keyed_backend_of(desc);
}

const KeyedStateBackend ttl_keyed_backend = {
	.name = "ttl",
	.get = ttl_get,
	.put = ttl_put,
	.remove = ttl_remove,
	.replace = NULL,
	.append = ttl_append,
	.merge = ttl_merge,
	.map_get = ttl_map_get,
	.map_put = ttl_map_put,
	.map_remove = ttl_map_remove,
	.map_iterate = ttl_map_iterate,
	.length = ttl_length,
	.iterate = ttl_iterate,
	.truncate = ttl_truncate,
	.compact = ttl_compact,
	.create = ttl_create,
	.drop = ttl_drop,
	.size = ttl_size,
	.flush = NULL,				/* keyed_backend_flush_all flushes the backends */
	.sync_catalog = NULL,
	.applied_lsn = NULL,
	.snapshot = NULL,
};
