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
 * set holds keeps only some of them.
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
 * The cache is a fixed array of sets of CACHE_SET_SIZE bytes,
 * state_backend.rocksdb_shared_cache_size in all: it never allocates.  A
 * set's entries lie packed one after the other, each its header and its
 * images, so that a small entry (a bigint key and value: 32 bytes) takes
 * the room it needs; an entry whose key and value images pass
 * CACHE_ENTRY_DATA bytes is not kept.  A key has one set (by the hash of
 * its image and its state); a set without room for a new entry gives up
 * the entries the clock hand finds unread since the hand last passed them
 * (a bit per entry, which readers set), and the entries after one that
 * goes move down.  A set's header line ends with a Bloom filter of its
 * entries' keys, which holds the bits of every key the set holds, and may
 * hold those of keys that left it until a writer makes it again.
 *
 * Readers take no lock.  Each set has a sequence counter that whoever
 * changes the set makes odd meanwhile (the worker, or a session storing
 * what it read, which then also sets SEQ_SESSION); a reader copies the
 * entry out, then checks that the counter is even and unchanged, else tries
 * again and, after a few tries, asks the worker.  So a reader never waits,
 * and never returns a torn image: every size and length it uses is bounded
 * by the set, and by the entry, before it is used, so a walk of entries
 * moving under it stays inside the set.  The only thing a reader writes is
 * its entry's read bit, with an atomic OR of a word of the set's own: one
 * bit set in a set that changed meanwhile marks another entry read, which only
 * spares that one from the hand once.  A session only tries for a set once
 * and gives up when it is taken; the worker waits for a session that has
 * it, which holds it for the store of one entry, with no error or
 * interrupt between.
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "port/atomics.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

#include "rocks_internal.h"

#define CACHE_SET_SIZE		1024	/* bytes of a set: a line of header, then entries */
#define CACHE_ENTRY_DATA	112		/* most bytes of an entry's key, map key and image */
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

/* An entry: this header, then the key image, the map key and the image. */
typedef struct CacheEntry
{
	uint32		state_id;
	uint32		hash;			/* the host's key_hash of the key image */
	uint16		keylen;
	uint16		vallen;			/* or CACHE_ABSENT */
	uint16		size;			/* of the whole entry, a multiple of 8 */
	uint8		mklen;			/* a map entry's map key length, else 0 */
	uint8		pad;
	char		data[FLEXIBLE_ARRAY_MEMBER];
} CacheEntry;

#define CACHE_ENTRY_HDR		offsetof(CacheEntry, data)
#define CACHE_ENTRY_MOST	TYPEALIGN(8, CACHE_ENTRY_HDR + CACHE_ENTRY_DATA)
#define CACHE_SET_HEADER	64		/* a line of the CPU's cache */
#define CACHE_ARENA			(CACHE_SET_SIZE - CACHE_SET_HEADER)

/*
 * A set's header line ends with a Bloom filter of its entries' keys (three
 * bits of CACHE_BLOOM_BITS each), so that a read of a key the set does not
 * hold, the common case of a state larger than the cache, looks at that
 * line only: about 1% of them walk the entries for nothing with 24 in
 * the set.  Writers add a key's bits as its entry comes, and make the
 * filter again from the entries left when some go.
 */
#define CACHE_BLOOM_WORDS	5
#define CACHE_BLOOM_BITS	(CACHE_BLOOM_WORDS * 64)

/*
 * Whether a size read without holding the set may be an entry's, with room
 * bytes of the set after it.  A walk that a change of the set made land
 * inside an entry reads its images as a header, which its writer chose: it
 * must neither leave the set nor copy more than an entry holds.
 */
static inline bool
walk_size_ok(uint32 size, uint32 room)
{
	return size >= CACHE_ENTRY_HDR && size <= CACHE_ENTRY_MOST && size % 8 == 0 &&
		size <= room;
}

typedef struct CacheSet
{
	pg_atomic_uint32 seq;		/* odd while the set changes */
	uint16		used;			/* bytes of arena its entries take */
	uint16		count;			/* its entries */
	pg_atomic_uint64 read;		/* bit i: entry i read since the hand passed it */
	uint16		hand;			/* the clock hand: an entry's number */
	uint16		pad[3];
	uint64		bloom[CACHE_BLOOM_WORDS];	/* the keys of its entries */
	char		arena[CACHE_ARENA];
} CacheSet;

StaticAssertDecl(offsetof(CacheSet, arena) == CACHE_SET_HEADER, "a set's header is a line");
StaticAssertDecl(sizeof(CacheSet) == CACHE_SET_SIZE, "a set is CACHE_SET_SIZE bytes");
StaticAssertDecl(CACHE_ARENA / MAXALIGN(CACHE_ENTRY_HDR) <= 64, "a read bit for each entry");
StaticAssertDecl(CACHE_ENTRY_HDR + CACHE_ENTRY_DATA <= PG_UINT16_MAX, "an entry's size fits");

typedef struct CacheShared
{
	pg_atomic_uint64 fills;		/* entries sessions stored (rocks_cache_fill) */
	uint32		nsets;
	char		pad[PG_CACHE_LINE_SIZE - sizeof(pg_atomic_uint64) - sizeof(uint32)];
	CacheSet	sets[FLEXIBLE_ARRAY_MEMBER];
} CacheShared;

static CacheShared *cache = NULL;

/* The three bits of a key in a set's filter. */
static inline void
bloom_bits(uint32 state_id, uint32 hash, uint32 bits[3])
{
	/* Seeded apart from rocks_key_slot, which chose the set by the same key. */
	uint32		h = murmurhash32(hash ^ murmurhash32(state_id ^ 0x5bd1e995U));

	bits[0] = h % CACHE_BLOOM_BITS;
	bits[1] = (h >> 11) % CACHE_BLOOM_BITS;
	bits[2] = ((h >> 22) ^ (h << 10)) % CACHE_BLOOM_BITS;
}

/* Whether a set may hold an entry of a key (read without holding it). */
static bool
bloom_may_hold(CacheSet *set, uint32 state_id, uint32 hash)
{
	volatile uint64 *bloom = set->bloom;
	uint32		bits[3];

	bloom_bits(state_id, hash, bits);
	for (int i = 0; i < 3; i++)
		if (!(bloom[bits[i] / 64] & (UINT64CONST(1) << (bits[i] % 64))))
			return false;
	return true;
}

/* A set, which the caller holds, notes a key in its filter. */
static void
bloom_add(CacheSet *set, uint32 state_id, uint32 hash)
{
	uint32		bits[3];

	bloom_bits(state_id, hash, bits);
	for (int i = 0; i < 3; i++)
		set->bloom[bits[i] / 64] |= UINT64CONST(1) << (bits[i] % 64);
}

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
		CacheSet   *set = &cache->sets[i];

		pg_atomic_init_u32(&set->seq, 0);
		pg_atomic_init_u64(&set->read, 0);
		memset(set->bloom, 0, sizeof(set->bloom));
		set->used = 0;
		set->count = 0;
		set->hand = 0;
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

/* Whether an entry's names fit an entry, and its image too (value NULL: none). */
static bool
ck_fits(const RocksCacheKey *ck, const char *value, uint32 vallen)
{
	return ck->keylen <= CACHE_ENTRY_DATA && ck->mklen <= CACHE_ENTRY_DATA - ck->keylen &&
		(value == NULL || vallen <= CACHE_ENTRY_DATA - ck->keylen - ck->mklen);
}

/* The bytes an entry of ck with an image of vallen bytes (value NULL: none) takes. */
static uint16
entry_size(const RocksCacheKey *ck, const char *value, uint32 vallen)
{
	return (uint16) TYPEALIGN(8, CACHE_ENTRY_HDR + ck->keylen + ck->mklen + (value ? vallen : 0));
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
	char		buf[CACHE_ENTRY_DATA];
	uint32		namelen = ck->keylen + ck->mklen;

	if (cache == NULL || cache->nsets == 0 || !ck_fits(ck, NULL, 0))
		return ROCKS_CACHE_MISS;
	set = cache_set(ck->state_id, ck->hash);
	for (int try = 0; try < CACHE_READ_TRIES; try++)
	{
		uint32		seq = pg_atomic_read_u32(&set->seq);
		uint32		used;
		uint32		off = 0;
		int			hit = -1;
		uint32		vallen = 0;

		if (seq & 1)
		{
			pg_spin_delay();
			continue;
		}
		pg_read_barrier();
		if (!bloom_may_hold(set, ck->state_id, ck->hash))
		{
			pg_read_barrier();
			if (pg_atomic_read_u32(&set->seq) != seq)
				continue;
			return ROCKS_CACHE_MISS;
		}
		used = Min(((volatile CacheSet *) set)->used, CACHE_ARENA);
		for (int i = 0; off + CACHE_ENTRY_HDR <= used; i++)
		{
			volatile CacheEntry *e = (volatile CacheEntry *) (set->arena + off);
			uint32		size = e->size;

			/* Sizes bound the walk to the set; a torn one ends it. */
			if (!walk_size_ok(size, used - off))
				break;
			off += size;
			if (e->state_id != ck->state_id || e->hash != ck->hash ||
				e->keylen != ck->keylen || e->mklen != ck->mklen)
				continue;
			vallen = e->vallen;
			if (namelen > size - CACHE_ENTRY_HDR ||
				(vallen != CACHE_ABSENT && vallen > size - CACHE_ENTRY_HDR - namelen))
				break;			/* being rewritten: the check below fails */
			if (memcmp((const char *) e->data, ck->key, ck->keylen) != 0 ||
				(ck->mklen > 0 &&
				 memcmp((const char *) e->data + ck->keylen, ck->mkey, ck->mklen) != 0))
				continue;
			if (vallen != CACHE_ABSENT)
				memcpy(buf, (const char *) e->data + namelen, vallen);
			hit = i;
			break;
		}
		pg_read_barrier();
		if (pg_atomic_read_u32(&set->seq) != seq)
			continue;
		if (hit < 0)
			return ROCKS_CACHE_MISS;
		if (!(pg_atomic_read_u64(&set->read) & (UINT64CONST(1) << hit)))
			(void) pg_atomic_fetch_or_u64(&set->read, UINT64CONST(1) << hit);
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
 * session storing what it read holds a set for the store of one entry, with
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

static inline CacheEntry *
set_entry(CacheSet *set, uint32 off)
{
	return (CacheEntry *) (set->arena + off);
}

/* Whether an entry is of ck's key (its image, or one of its map's entries). */
static bool
entry_of_key(const CacheEntry *e, const RocksCacheKey *ck)
{
	return e->state_id == ck->state_id && e->hash == ck->hash && e->keylen == ck->keylen &&
		memcmp(e->data, ck->key, ck->keylen) == 0;
}

/* Whether an entry is ck's entry itself. */
static bool
entry_is(const CacheEntry *e, const RocksCacheKey *ck)
{
	return entry_of_key(e, ck) && e->mklen == ck->mklen &&
		(ck->mklen == 0 || memcmp(e->data + ck->keylen, ck->mkey, ck->mklen) == 0);
}

/*
 * The rest of this file changes sets only while it holds them (their
 * counter odd, set_change_begin or a session's compare-and-swap); readers
 * may set read bits meanwhile, so those change atomically.
 */

/* A set, which the caller holds, makes its filter again from its entries. */
static void
set_bloom_rebuild(CacheSet *set)
{
	uint32		off = 0;

	memset(set->bloom, 0, sizeof(set->bloom));
	for (int i = 0; i < set->count; i++)
	{
		CacheEntry *e = set_entry(set, off);

		bloom_add(set, e->state_id, e->hash);
		off += e->size;
	}
}

/* Entry number i of a set, at offset *off, goes; those after it move down. */
static void
set_remove(CacheSet *set, int i, uint32 off)
{
	uint16		size = set_entry(set, off)->size;
	uint64		low = (UINT64CONST(1) << i) - 1;
	uint64		bits = pg_atomic_read_u64(&set->read);

	memmove(set->arena + off, set->arena + off + size, set->used - off - size);
	set->used -= size;
	set->count--;
	/* The read bits of the entries after it move down with them. */
	while (!pg_atomic_compare_exchange_u64(&set->read, &bits,
										   (bits & low) | ((bits >> 1) & ~low)))
		;
	if (set->hand > i)
		set->hand--;
	if (set->hand >= set->count)
		set->hand = 0;
	/* Its key's bits stay in the filter until the caller makes it again. */
}

/* The number and offset of ck's entry in a set; -1 when it has none. */
static int
set_find(CacheSet *set, const RocksCacheKey *ck, uint32 *off)
{
	uint32		o = 0;

	if (!bloom_may_hold(set, ck->state_id, ck->hash))
		return -1;

	for (int i = 0; i < set->count; i++)
	{
		CacheEntry *e = set_entry(set, o);

		if (entry_is(e, ck))
		{
			*off = o;
			return i;
		}
		o += e->size;
	}
	return -1;
}

/* The offset of entry number i of a set. */
static uint32
set_offset(CacheSet *set, int i)
{
	uint32		o = 0;

	while (i-- > 0)
		o += set_entry(set, o)->size;
	return o;
}

/*
 * Give up one entry: the first the clock hand finds unread since it last
 * passed (it clears the bits it passes, so it goes round twice at most).
 */
static void
set_evict(CacheSet *set)
{
	int			i = 0;

	for (int step = 0; step < 2 * set->count; step++)
	{
		uint64		bit;

		i = set->hand;
		bit = UINT64CONST(1) << i;
		if (!(pg_atomic_read_u64(&set->read) & bit))
			break;
		(void) pg_atomic_fetch_and_u64(&set->read, ~bit);
		set->hand = (set->hand + 1) % set->count;
	}
	set_remove(set, i, set_offset(set, i));
}

/*
 * A set takes ck's entry and its image (value NULL: no state), in place of
 * the one it holds, giving up unread entries for the room.
 */
static void
set_put(CacheSet *set, const RocksCacheKey *ck, const char *value, uint32 vallen)
{
	uint16		size = entry_size(ck, value, vallen);
	uint32		off;
	int			i = set_find(set, ck, &off);
	CacheEntry *e;
	bool		removed = false;

	if (i >= 0 && set_entry(set, off)->size != size)
	{
		set_remove(set, i, off);
		removed = true;
		i = -1;
	}
	if (i < 0)
	{
		while (set->count > 0 && CACHE_ARENA - set->used < size)
		{
			set_evict(set);
			removed = true;
		}
		if (removed)
			set_bloom_rebuild(set);
		off = set->used;
		i = set->count;
		(void) pg_atomic_fetch_and_u64(&set->read, ~(UINT64CONST(1) << i));
	}
	e = set_entry(set, off);
	e->state_id = ck->state_id;
	e->hash = ck->hash;
	e->keylen = (uint16) ck->keylen;
	e->mklen = (uint8) ck->mklen;
	e->vallen = value ? (uint16) vallen : CACHE_ABSENT;
	e->size = size;
	e->pad = 0;
	memcpy(e->data, ck->key, ck->keylen);
	if (ck->mklen > 0)
		memcpy(e->data + ck->keylen, ck->mkey, ck->mklen);
	if (value)
		memcpy(e->data + ck->keylen + ck->mklen, value, vallen);
	if (i == set->count)
	{
		set->used += size;
		set->count++;
		bloom_add(set, ck->state_id, ck->hash);
	}
}

/*
 * A set gives up ck's entry, or with whole_key every entry of its key (its
 * image, or all its map's entries); with state_only, every entry of ck's
 * state.  One pass: the entries kept move down over those that go, and
 * their read bits with them.
 */
static void
set_forget(CacheSet *set, const RocksCacheKey *ck, bool whole_key, bool state_only)
{
	uint64		goes = 0;		/* bit i: entry i goes */
	uint64		bits;
	uint64		keptbits;
	uint32		from = 0;
	uint32		to = 0;
	int			kept = 0;
	int			hand = set->hand;

	if (!state_only && !bloom_may_hold(set, ck->state_id, ck->hash))
		return;
	for (int i = 0; i < set->count; i++)
	{
		CacheEntry *e = set_entry(set, from);

		if (state_only ? e->state_id == ck->state_id :
			whole_key ? entry_of_key(e, ck) : entry_is(e, ck))
		{
			goes |= UINT64CONST(1) << i;
			if (set->hand > i)
				hand--;
		}
		from += e->size;
	}
	if (goes == 0)
		return;					/* nothing of it here */

	/* The read bits as they are now go with the entries (readers may set some). */
	bits = pg_atomic_read_u64(&set->read);
	do
	{
		keptbits = 0;
		kept = 0;
		for (int i = 0; i < set->count; i++)
			if (!(goes & (UINT64CONST(1) << i)))
			{
				if (bits & (UINT64CONST(1) << i))
					keptbits |= UINT64CONST(1) << kept;
				kept++;
			}
	} while (!pg_atomic_compare_exchange_u64(&set->read, &bits, keptbits));

	from = 0;
	for (int i = 0; i < set->count; i++)
	{
		uint16		size = set_entry(set, from)->size;

		if (!(goes & (UINT64CONST(1) << i)))
		{
			if (to != from)
				memmove(set->arena + to, set->arena + from, size);
			to += size;
		}
		from += size;
	}
	set->used = to;
	set->count = kept;
	set->hand = (hand >= 0 && hand < kept) ? hand : 0;
	set_bloom_rebuild(set);
}

/*
 * rocks_cache_store (worker only) records what RocksDB now holds for an
 * entry: its image, or (value NULL) no state.  An image too large for an
 * entry leaves the entry out of the cache.
 */
void
rocks_cache_store(const RocksCacheKey *ck, const char *value, uint32 vallen)
{
	CacheSet   *set;

	if (cache == NULL || cache->nsets == 0)
		return;
	set = cache_set(ck->state_id, ck->hash);
	set_change_begin(set);
	if (ck_fits(ck, value, vallen))
		set_put(set, ck, value, vallen);
	else
		set_forget(set, ck, false, false);
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
		set_put(set, ck, value, vallen);
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
	set_forget(set, ck, whole_key, false);
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
	/* Too large for an entry, it stays out: so must an image stored before. */
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
 * Whether a set holds an entry of a state, looked at without holding it:
 * bounded as a reader's walk is, and right only if its counter did not
 * move meanwhile.
 */
static bool
set_holds_state(CacheSet *set, uint32 state_id)
{
	uint32		used = Min(((volatile CacheSet *) set)->used, CACHE_ARENA);

	for (uint32 off = 0; off + CACHE_ENTRY_HDR <= used;)
	{
		volatile CacheEntry *e = (volatile CacheEntry *) (set->arena + off);
		uint32		size = e->size;

		if (!walk_size_ok(size, used - off))
			return true;		/* torn: the caller takes the set */
		if (e->state_id == state_id)
			return true;
		off += size;
	}
	return false;
}

/*
 * rocks_cache_forget_state (worker only) drops every entry of a state.
 * The caller has marked every key first (rocks_view_mark_all): a session
 * that takes a set after this passed it sees the mark and stores nothing.
 */
void
rocks_cache_forget_state(uint32 state_id)
{
	RocksCacheKey ck;

	if (cache == NULL)
		return;
	rocks_cache_key(&ck, state_id, NULL, 0, 0, NULL, 0);
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
		if (!has)
			has = set_holds_state(set, state_id);
		pg_read_barrier();
		if (!has && pg_atomic_read_u32(&set->seq) == seq)
			continue;
		set_change_begin(set);
		set_forget(set, &ck, false, true);
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
		 * nobody will end that change: this one takes it over as it is,
		 * still odd, so that no reader takes the half-changed set for a
		 * whole one.  A session's change ends: wait for it.
		 */
		if (!(seq & 1) || (seq & SEQ_SESSION))
			set_change_begin(set);
		set->used = 0;
		set->count = 0;
		set->hand = 0;
		memset(set->bloom, 0, sizeof(set->bloom));
		pg_atomic_write_u64(&set->read, 0);
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
