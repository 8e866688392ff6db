/*
 * backend/rocksdb/rocks_cache.c
 *		A shared-memory cache of rocksdb states' entries (a key's image, or
 *		one entry of a map state's key), which sessions read in place, so
 *		that a hot key needs no round trip to the state worker.
 *
 * Every entry in the cache is what RocksDB holds for that key.  The state
 * worker is the only writer of RocksDB.  When it answers a read it stores
 * what it read (the image, or that the key has no state).  A write goes
 * into its write batch first: the key leaves the cache at once and comes
 * back with its new image once the batch is in RocksDB (rocks_cache_write,
 * rocks_cache_committed); if the batch fails, it stays out.  The worker
 * forgets a state's entries when it truncates, drops or restores the
 * state, and everything when the instance opens or closes.
 *
 * A map state's entries are cached one by one, each under its key and its
 * map key, as RocksDB stores them.  They go to the set of their key (the
 * hash of the key image, not of the map key), so that a change of the whole
 * key (its removal, a put of its whole map) finds every entry of it in that
 * one set (rocks_cache_forget_key).  So a key with more hot entries than a
 * set has slots keeps only some of them.
 *
 * A session that read a key in its own view of the instance (rocks_view.c)
 * stores what it read too (rocks_cache_fill), so that the next read of the
 * key, by any session, needs no view.  It may only while the view still
 * holds the key as RocksDB does: the worker marks a key (or every key)
 * before it changes it and only then takes it out of the cache, and a
 * session checks the marks with the key's set in its hands.  So either the
 * session sees the mark and stores nothing, or the worker, coming to the
 * set after it, finds the session's entry and takes it out.
 *
 * The cache is a fixed array of sets of CACHE_WAYS slots of a fixed size,
 * state_backend.rocksdb_shared_cache_size in all: it never allocates, and
 * an entry whose key and value images pass CACHE_SLOT_DATA bytes is not
 * kept.  A key has one set (by the hash of its image and its state); a set
 * full of other keys gives up the first slot the clock hand finds unread
 * since the hand last passed it.
 *
 * Readers take no lock.  Each set has a sequence counter that whoever
 * changes the set makes odd meanwhile (the worker, or a session storing
 * what it read, which then also sets SEQ_SESSION); a reader copies the
 * entry out, then checks that the counter is even and unchanged, else tries
 * again and, after a few tries, asks the worker.  So a reader never waits,
 * and never returns a torn image: every length it uses is bounded by the
 * slot before it is used.  A session only tries for a set once and gives
 * up when it is taken; the worker waits for a session that has it, which
 * holds it for the copy of one slot, with no error or interrupt between.
 */
#include "postgres.h"

#include "port/atomics.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

#include "rocks_internal.h"

#define CACHE_WAYS			8
#define CACHE_SLOT_DATA		112
#define CACHE_ABSENT		0xFFFF	/* vallen of a key known to have no state */
#define CACHE_FORGET		0xFFFE	/* a pending store: the key stays out */
#define CACHE_FORGET_KEY	0xFFFD	/* a pending store: every entry of the key stays out */
#define CACHE_READ_TRIES	4

/*
 * A set's counter: odd while the set changes; SEQ_SESSION while a session
 * changes it, so that a worker starting after one that died in the middle
 * of a change knows that change will never end (a session's always ends).
 */
#define SEQ_SESSION			0x80000000U
#define SEQ_COUNT(seq)		((seq) & ~SEQ_SESSION)
#define SEQ_NEXT(seq)		((SEQ_COUNT(seq) + 1) & ~SEQ_SESSION)

typedef struct CacheSlot
{
	uint32		state_id;		/* 0: the slot is free */
	uint32		hash;			/* the host's key_hash of the key image */
	uint16		keylen;
	uint16		vallen;			/* or CACHE_ABSENT */
	uint8		ref;			/* read since the clock hand last passed */
	uint8		mklen;			/* a map entry's map key length, else 0 */
	uint8		pad[2];
	char		data[CACHE_SLOT_DATA];	/* key image, map key, then value image */
} CacheSlot;

typedef struct CacheSet
{
	pg_atomic_uint32 seq;		/* odd while the worker changes the set */
	uint32		hand;			/* the clock hand (worker only) */
	char		pad[PG_CACHE_LINE_SIZE - 2 * sizeof(uint32)];
	CacheSlot	slots[CACHE_WAYS];
} CacheSet;

typedef struct CacheShared
{
	pg_atomic_uint64 fills;		/* entries sessions stored (rocks_cache_fill) */
	uint32		nsets;
	char		pad[PG_CACHE_LINE_SIZE - sizeof(pg_atomic_uint64) - sizeof(uint32)];
	CacheSet	sets[FLEXIBLE_ARRAY_MEMBER];
} CacheShared;

static CacheShared *cache = NULL;

/* Entries this session stored (rocks_cache_fill), not yet counted. */
static uint64 filled = 0;

/*
 * The worker's stores waiting for its write batch to be committed:
 * [state id][key hash][key length][map key length][value length,
 * CACHE_ABSENT, CACHE_FORGET or CACHE_FORGET_KEY][key][map key][value] ...
 */
static StringInfoData pending;

static uint32
cache_nsets(void)
{
	return (uint32) Min(mul_size((Size) state_backend_rocksdb_shared_cache_kb, 1024) / sizeof(CacheSet),
						(Size) PG_UINT32_MAX);
}

Size
rocks_cache_shmem_size(void)
{
	return add_size(offsetof(CacheShared, sets), mul_size(sizeof(CacheSet), cache_nsets()));
}

void
rocks_cache_shmem_init(void)
{
	bool		found;
	uint32		nsets = cache_nsets();

	cache = ShmemInitStruct("state_backend rocksdb cache", rocks_cache_shmem_size(), &found);
	if (found)
		return;
	cache->nsets = nsets;
	pg_atomic_init_u64(&cache->fills, 0);
	for (uint32 i = 0; i < nsets; i++)
	{
		pg_atomic_init_u32(&cache->sets[i].seq, 0);
		cache->sets[i].hand = 0;
		memset(cache->sets[i].slots, 0, sizeof(cache->sets[i].slots));
	}
}

/*
 * Every keyed kind is cached: a key's image (value, reducing, aggregating,
 * window, and lists: a list's image is its elements), or a map state's
 * entries one by one (never a map key's whole image).
 */
bool
rocks_cache_kind(uint8 kind)
{
	return kind == STATE_KIND_VALUE || kind == STATE_KIND_REDUCING ||
		kind == STATE_KIND_AGGREGATING || kind == STATE_KIND_WINDOW ||
		kind == STATE_KIND_LIST || kind == STATE_KIND_MAP;
}

/* rocks_cache_key names a key's image (mkey NULL) or one entry of its map. */
void
rocks_cache_key(RocksCacheKey *ck, uint32 state_id, const char *key, uint32 keylen,
				uint32 hash, const char *mkey, uint32 mklen)
{
	ck->state_id = state_id;
	ck->key = key;
	ck->keylen = keylen;
	ck->hash = hash;
	ck->mkey = mkey;
	ck->mklen = mkey ? mklen : 0;
}

/* Whether an entry's names fit a slot, and its image too (value NULL: none). */
static bool
ck_fits(const RocksCacheKey *ck, const char *value, uint32 vallen)
{
	return ck->keylen <= CACHE_SLOT_DATA && ck->mklen <= CACHE_SLOT_DATA - ck->keylen &&
		(value == NULL || vallen <= CACHE_SLOT_DATA - ck->keylen - ck->mklen);
}

static CacheSet *
cache_set(uint32 state_id, uint32 hash)
{
	return &cache->sets[rocks_key_slot(state_id, hash) % cache->nsets];
}

/*
 * rocks_cache_serves: whether sessions read a state's keys in the cache
 * (and store there what they read in their views).  Not a list or a map
 * with a TTL: compactions rewrite such a list without its expired elements,
 * and drop a map's expired entries (rocks_ttl.c, on RocksDB's threads),
 * which the cache would not see.  The worker keeps taking every key of the
 * cached kinds out of the cache as it writes them.
 */
bool
rocks_cache_serves(const StateInfo *info)
{
	return rocks_cache_kind(info->kind) &&
		!((info->kind == STATE_KIND_LIST || info->kind == STATE_KIND_MAP) && info->ttl > 0);
}

/*
 * rocks_cache_lookup looks an entry up without a lock: ROCKS_CACHE_FOUND
 * with its image in "out" (a map entry's as RocksDB stores it,
 * rocks_map_value), ROCKS_CACHE_ABSENT when it is known to have no state,
 * ROCKS_CACHE_MISS when the worker must be asked.
 */
RocksCacheResult
rocks_cache_lookup(const RocksCacheKey *ck, StringInfo out)
{
	CacheSet   *set;
	char		buf[CACHE_SLOT_DATA];
	uint32		namelen = ck->keylen + ck->mklen;

	if (cache == NULL || cache->nsets == 0 || !ck_fits(ck, NULL, 0))
		return ROCKS_CACHE_MISS;
	set = cache_set(ck->state_id, ck->hash);
	for (int try = 0; try < CACHE_READ_TRIES; try++)
	{
		uint32		seq = pg_atomic_read_u32(&set->seq);
		int			hit = -1;
		uint32		vallen = 0;

		if (seq & 1)
		{
			pg_spin_delay();
			continue;
		}
		pg_read_barrier();
		for (int i = 0; i < CACHE_WAYS; i++)
		{
			volatile CacheSlot *s = &set->slots[i];

			if (s->state_id != ck->state_id || s->hash != ck->hash ||
				s->keylen != ck->keylen || s->mklen != ck->mklen)
				continue;
			vallen = s->vallen;
			if (vallen != CACHE_ABSENT && vallen > CACHE_SLOT_DATA - namelen)
				break;			/* being rewritten: the check below fails */
			if (memcmp((const char *) s->data, ck->key, ck->keylen) != 0 ||
				(ck->mklen > 0 &&
				 memcmp((const char *) s->data + ck->keylen, ck->mkey, ck->mklen) != 0))
				continue;
			if (vallen != CACHE_ABSENT)
				memcpy(buf, (const char *) s->data + namelen, vallen);
			hit = i;
			break;
		}
		pg_read_barrier();
		if (pg_atomic_read_u32(&set->seq) != seq)
			continue;
		if (hit < 0)
			return ROCKS_CACHE_MISS;
		if (!set->slots[hit].ref)
			set->slots[hit].ref = 1;
		if (vallen == CACHE_ABSENT)
			return ROCKS_CACHE_ABSENT;
		resetStringInfo(out);
		appendBinaryStringInfo(out, buf, vallen);
		return ROCKS_CACHE_FOUND;
	}
	return ROCKS_CACHE_MISS;
}

/*
 * The worker's side: a change of a set is bracketed by these two.  A
 * session storing what it read holds a set for the copy of one slot, with
 * no error or interrupt in between; the worker spins, then sleeps a little
 * at a time.  It takes no interrupt there: the worker changes sets in the
 * middle of its own bookkeeping (a commit, a truncate), which an error
 * must not cut short.  (A session stopped while it holds a set, by a
 * debugger, holds up the worker as it would holding one of PostgreSQL's
 * spinlocks.)
 */
static void
set_change_begin(CacheSet *set)
{
	for (int spins = 0;; spins++)
	{
		uint32		seq = pg_atomic_read_u32(&set->seq);

		/* The exchange is a full barrier. */
		if (!(seq & 1) && pg_atomic_compare_exchange_u32(&set->seq, &seq, SEQ_NEXT(seq)))
			return;
		if (spins < 100)
			pg_spin_delay();
		else
			pg_usleep(50L);
	}
}

/* The exchange is a full barrier: the set's stores come before it. */
static void
set_change_end(CacheSet *set)
{
	(void) pg_atomic_exchange_u32(&set->seq, SEQ_NEXT(pg_atomic_read_u32(&set->seq)));
}

/* Whether a slot holds an entry of ck's key (its image, or a map entry). */
static bool
slot_of_key(const CacheSlot *s, const RocksCacheKey *ck)
{
	return s->state_id == ck->state_id && s->hash == ck->hash && s->keylen == ck->keylen &&
		memcmp(s->data, ck->key, ck->keylen) == 0;
}

/* Whether a slot holds ck's entry itself. */
static bool
slot_is(const CacheSlot *s, const RocksCacheKey *ck)
{
	return slot_of_key(s, ck) && s->mklen == ck->mklen &&
		(ck->mklen == 0 || memcmp(s->data + ck->keylen, ck->mkey, ck->mklen) == 0);
}

static int
set_find(CacheSet *set, const RocksCacheKey *ck)
{
	for (int i = 0; i < CACHE_WAYS; i++)
		if (slot_is(&set->slots[i], ck))
			return i;
	return -1;
}

/*
 * The slot a new key takes: a free one, else the clock's victim.  Readers
 * set ref bits as the hand clears them, so the hand goes round twice at
 * most.
 */
static int
set_victim(CacheSet *set)
{
	int			i;

	for (i = 0; i < CACHE_WAYS; i++)
		if (set->slots[i].state_id == 0)
			return i;
	for (int step = 0; step < 2 * CACHE_WAYS; step++)
	{
		i = set->hand;
		set->hand = (set->hand + 1) % CACHE_WAYS;
		if (!set->slots[i].ref)
			return i;
		set->slots[i].ref = 0;
	}
	return i;
}

/* Slot i of a set, which the caller holds, takes an entry and its image. */
static void
set_put(CacheSet *set, int i, const RocksCacheKey *ck, const char *value, uint32 vallen)
{
	CacheSlot  *s = &set->slots[i];

	s->state_id = ck->state_id;
	s->hash = ck->hash;
	s->keylen = (uint16) ck->keylen;
	s->mklen = (uint8) ck->mklen;
	s->vallen = value ? (uint16) vallen : CACHE_ABSENT;
	s->ref = 0;
	memcpy(s->data, ck->key, ck->keylen);
	if (ck->mklen > 0)
		memcpy(s->data + ck->keylen, ck->mkey, ck->mklen);
	if (value)
		memcpy(s->data + ck->keylen + ck->mklen, value, vallen);
}

/*
 * rocks_cache_store (worker only) records what RocksDB now holds for an
 * entry: its image, or (value NULL) no state.  An image too large for a
 * slot leaves the entry out of the cache.
 */
void
rocks_cache_store(const RocksCacheKey *ck, const char *value, uint32 vallen)
{
	CacheSet   *set;
	int			i;

	if (cache == NULL || cache->nsets == 0)
		return;
	set = cache_set(ck->state_id, ck->hash);
	set_change_begin(set);
	i = set_find(set, ck);
	if (ck_fits(ck, value, vallen))
		set_put(set, i < 0 ? set_victim(set) : i, ck, value, vallen);
	else if (i >= 0)
		set->slots[i].state_id = 0;
	set_change_end(set);
}

/*
 * rocks_cache_fill (sessions) stores what this session read of an entry in
 * its view (value NULL: no state), if the key's set is free and
 * still_current says, with the set in hand, that the view still holds the
 * key as RocksDB does.  It never waits: a taken set, or a key changed
 * since, stores nothing.
 */
void
rocks_cache_fill(const RocksCacheKey *ck, const char *value, uint32 vallen,
				 bool (*still_current) (uint32 state_id, uint32 key_hash))
{
	CacheSet   *set;
	uint32		seq;
	uint32		held;
	int			i;

	if (cache == NULL || cache->nsets == 0 || !ck_fits(ck, value, vallen))
		return;
	set = cache_set(ck->state_id, ck->hash);
	seq = pg_atomic_read_u32(&set->seq);
	held = SEQ_NEXT(seq) | SEQ_SESSION;
	/* The exchange is a full barrier: the marks are read after it. */
	if ((seq & 1) || !pg_atomic_compare_exchange_u32(&set->seq, &seq, held))
		return;
	if (still_current(ck->state_id, ck->hash))
	{
		i = set_find(set, ck);
		set_put(set, i < 0 ? set_victim(set) : i, ck, value, vallen);
		filled++;
	}
	pg_memory_barrier();
	pg_atomic_write_u32(&set->seq, SEQ_NEXT(held));
}

/*
 * Take an entry out of the cache (worker only); with whole_key, every
 * entry of its key (its image, or all its map's entries).
 */
static void
cache_forget(const RocksCacheKey *ck, bool whole_key)
{
	CacheSet   *set = cache_set(ck->state_id, ck->hash);

	set_change_begin(set);
	for (int i = 0; i < CACHE_WAYS; i++)
	{
		CacheSlot  *s = &set->slots[i];

		if (whole_key ? slot_of_key(s, ck) : slot_is(s, ck))
			s->state_id = 0;
	}
	set_change_end(set);
}

/* A store that waits for the write batch (see pending). */
static void
pending_add(const RocksCacheKey *ck, uint16 vl, const char *value)
{
	uint16		mklen = (uint16) ck->mklen;

	if (pending.data == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		initStringInfo(&pending);
		MemoryContextSwitchTo(old);
	}
	appendBinaryStringInfo(&pending, (const char *) &ck->state_id, sizeof(uint32));
	appendBinaryStringInfo(&pending, (const char *) &ck->hash, sizeof(uint32));
	appendBinaryStringInfo(&pending, (const char *) &ck->keylen, sizeof(uint32));
	appendBinaryStringInfo(&pending, (const char *) &mklen, sizeof(uint16));
	appendBinaryStringInfo(&pending, (const char *) &vl, sizeof(uint16));
	appendBinaryStringInfo(&pending, ck->key, ck->keylen);
	if (ck->mklen > 0)
		appendBinaryStringInfo(&pending, ck->mkey, ck->mklen);
	if (vl != CACHE_ABSENT && vl != CACHE_FORGET && vl != CACHE_FORGET_KEY)
		appendBinaryStringInfo(&pending, value, vl);
}

/*
 * rocks_cache_write (worker only), called before a write of an entry joins
 * the write batch: the entry leaves the cache now, and its new image (value
 * NULL: no state) goes in once the batch is committed.  With forget, the
 * write's image is not known here (a merge): the entry stays out, also of
 * what an earlier write of the same batch would store.
 */
void
rocks_cache_write(const RocksCacheKey *ck, const char *value, uint32 vallen, bool forget)
{
	if (cache == NULL || cache->nsets == 0)
		return;

	/*
	 * Out now, with the set in hand: a session storing the entry's old
	 * image has either seen the key's mark, made before this, or stored it
	 * before this takes it out.
	 */
	cache_forget(ck, false);
	if (!ck_fits(ck, NULL, 0))
		return;
	/* Too large for a slot, it stays out: so must an image stored before. */
	if (forget || (value && !ck_fits(ck, value, vallen)))
		pending_add(ck, CACHE_FORGET, NULL);
	else
		pending_add(ck, value ? (uint16) vallen : CACHE_ABSENT, value);
}

/*
 * rocks_cache_forget_key (worker only), called before a write of a whole
 * key joins the write batch (a map key's removal, a put of its whole map):
 * every entry of the key leaves the cache now, and stays out of what an
 * earlier write of the same batch would store.
 */
void
rocks_cache_forget_key(uint32 state_id, const char *key, uint32 keylen)
{
	RocksCacheKey ck;

	if (cache == NULL || cache->nsets == 0)
		return;
	rocks_cache_key(&ck, state_id, key, keylen, rocks_host->key_hash(key, keylen), NULL, 0);
	cache_forget(&ck, true);
	if (ck_fits(&ck, NULL, 0))
		pending_add(&ck, CACHE_FORGET_KEY, NULL);
}

/*
 * rocks_cache_committed (worker only): the write batch is in RocksDB (ok)
 * or lost (not ok); the stores that waited for it are made, or dropped.
 */
void
rocks_cache_committed(bool ok)
{
	const char *p;

	if (pending.data == NULL || pending.len == 0)
		return;
	for (p = pending.data; ok && p < pending.data + pending.len;)
	{
		RocksCacheKey ck;
		uint32		state_id;
		uint32		hash;
		uint32		keylen;
		uint16		mklen;
		uint16		vl;

		memcpy(&state_id, p, sizeof(uint32));
		memcpy(&hash, p + sizeof(uint32), sizeof(uint32));
		memcpy(&keylen, p + 2 * sizeof(uint32), sizeof(uint32));
		memcpy(&mklen, p + 3 * sizeof(uint32), sizeof(uint16));
		memcpy(&vl, p + 3 * sizeof(uint32) + sizeof(uint16), sizeof(uint16));
		p += 3 * sizeof(uint32) + 2 * sizeof(uint16);
		rocks_cache_key(&ck, state_id, p, keylen, hash, mklen > 0 ? p + keylen : NULL, mklen);
		p += keylen + mklen;
		if (vl == CACHE_FORGET || vl == CACHE_FORGET_KEY)
			cache_forget(&ck, vl == CACHE_FORGET_KEY);
		else if (vl == CACHE_ABSENT)
			rocks_cache_store(&ck, NULL, 0);
		else
		{
			rocks_cache_store(&ck, p, vl);
			p += vl;
		}
	}
	resetStringInfo(&pending);
	if (pending.maxlen > 1024 * 1024)
	{
		pfree(pending.data);
		pending.data = NULL;
	}
}

/*
 * rocks_cache_forget_state (worker only) drops every entry of a state.
 * The caller has marked every key first (rocks_view_mark_all): a session
 * that takes a set after this passed it sees the mark and stores nothing.
 */
void
rocks_cache_forget_state(uint32 state_id)
{
	if (cache == NULL)
		return;
	pg_memory_barrier();
	for (uint32 n = 0; n < cache->nsets; n++)
	{
		CacheSet   *set = &cache->sets[n];
		uint32		seq = pg_atomic_read_u32(&set->seq);
		bool		has = (seq & 1) != 0;

		/*
		 * A look without the set first: a session that changed it
		 * meanwhile changed its counter, and one that takes it after this
		 * sees the marks.
		 */
		pg_read_barrier();
		for (int i = 0; i < CACHE_WAYS && !has; i++)
			has = set->slots[i].state_id == state_id;
		pg_read_barrier();
		if (!has && pg_atomic_read_u32(&set->seq) == seq)
			continue;
		set_change_begin(set);
		for (int i = 0; i < CACHE_WAYS; i++)
			if (set->slots[i].state_id == state_id)
				set->slots[i].state_id = 0;
		set_change_end(set);
	}
}

/*
 * rocks_cache_clear (worker only) empties the cache.  The caller has
 * marked every key first, as for rocks_cache_forget_state.
 */
void
rocks_cache_clear(void)
{
	rocks_cache_committed(false);
	if (cache == NULL)
		return;
	pg_memory_barrier();
	for (uint32 n = 0; n < cache->nsets; n++)
	{
		CacheSet   *set = &cache->sets[n];
		uint32		seq = pg_atomic_read_u32(&set->seq);

		/*
		 * A worker that died in the middle of a change left it odd, and
		 * nobody will end that change; a session's change ends.
		 */
		if ((seq & 1) && !(seq & SEQ_SESSION))
			pg_atomic_write_u32(&set->seq, SEQ_NEXT(seq));
		set_change_begin(set);
		for (int i = 0; i < CACHE_WAYS; i++)
			set->slots[i].state_id = 0;
		set_change_end(set);
	}
}

/* A session's count of entries it stored goes to shared memory. */
void
rocks_cache_flush_counts(void)
{
	if (cache != NULL && filled > 0)
		pg_atomic_fetch_add_u64(&cache->fills, filled);
	filled = 0;
}

/* Entries sessions stored of what they read in their views, since the start. */
int64
rocks_cache_fills(void)
{
	rocks_cache_flush_counts();
	return cache ? (int64) pg_atomic_read_u64(&cache->fills) : 0;
}
