/*
 * heap_backend.c
 *		Heap states: a partition-locked hash table in a dynamic shared memory
 *		area, read and written in place by every backend.
 *
 * The table is keyed by (state id, key image).  It is split into
 * HEAP_PARTITIONS partitions by the entry hash, each with its own LWLock and
 * its own open-addressing slot array (linear probing, at most 3/4 full,
 * doubled when it fills up).  A slot holds a DSA pointer to an entry, with
 * a 14-bit tag of the entry's hash in bits that a 64-bit DSA pointer never
 * uses (10 bits of segment number and 40 of offset leave the top 14 free),
 * so a lookup reads the slots and then only the entry it is after: on a
 * table far bigger than the CPU caches that is two cache misses.
 *
 * An entry is one DSA chunk holding its key and its value image; list and
 * map states keep all of a key's elements in that one value image, with
 * spare capacity so appends are amortised.  The area is bounded by
 * state_backend.memory_limit: an allocation past it fails the write with
 * program_limit_exceeded and leaves the table as it was.
 *
 * Every write checks, under the partition lock, that its state is still
 * registered (registry_alive), so no entry outlives a drop.  Iteration
 * copies entries out under the lock and calls back after releasing it.
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/dsa.h"
#include "utils/memutils.h"

#include "heap_backend.h"
#include "keyed_backend.h"
#include "registry.h"

#define HEAP_INITIAL_SLOTS		64
#define HEAP_MAX_SLOTS			(1U << 25)
#define HEAP_AREA_TRANCHE_NAME	"state_backend_area"

/* Map images: records of [mkeylen][vallen][mkey][value]; NULL values: */
#define MAP_NULL_VALUE			PG_UINT32_MAX
#define MAP_REC_HDR				(2 * sizeof(uint32))

/* Slot tags: see the file header. */
#define SLOT_TAG_SHIFT			50
#define SLOT_TAG_MASK			(((dsa_pointer) 0x3FFF) << SLOT_TAG_SHIFT)

StaticAssertDecl(sizeof(dsa_pointer) == 8, "heap slots need 64-bit DSA pointers");

typedef struct HeapEntry
{
	uint32		hash;			/* heap_entry_hash() */
	uint32		state_id;
	uint32		key_len;
	uint32		val_len;
	uint32		val_cap;		/* bytes reserved for the value */
	uint16		key_group;
	uint16		flags;
	char		data[FLEXIBLE_ARRAY_MEMBER];	/* key, then value */
} HeapEntry;

#define ENTRY_KEY(e)		((e)->data)
#define ENTRY_VAL(e)		((e)->data + (e)->key_len)
#define ENTRY_SIZE(klen, cap) (offsetof(HeapEntry, data) + (Size) (klen) + (Size) (cap))

typedef struct HeapPartition
{
	dsa_pointer slots;			/* dsa_pointer[nslots], tagged; 0 = empty */
	uint32		nslots;			/* a power of two */
	uint32		nentries;
} HeapPartition;

typedef struct HeapShared
{
	int			area_tranche;
	bool		area_ready;
	dsa_handle	area_handle;
	HeapPartition parts[HEAP_PARTITIONS];
} HeapShared;

static HeapShared *heap_shared = NULL;
static dsa_area *heap_area = NULL;

Size
heap_shmem_size(void)
{
	return sizeof(HeapShared);
}

void
heap_shmem_init(void)
{
	bool		found;

	heap_shared = ShmemInitStruct("state_backend heap", sizeof(HeapShared), &found);
	if (!found)
	{
		memset(heap_shared, 0, sizeof(HeapShared));
		heap_shared->area_tranche = LWLockNewTrancheId();
		heap_shared->area_ready = false;
	}
}

static size_t
heap_memory_limit_bytes(void)
{
	return (size_t) state_backend_memory_limit_kb * 1024;
}

/*
 * heap_area_attach makes the shared area usable in this process, creating
 * it when it does not exist yet (the state worker does so at start; a
 * backend that comes first creates it itself).  The area is pinned so it
 * outlives its creator, and its mapping is pinned in every process.
 */
void
heap_area_attach(void)
{
	MemoryContext old;

	if (heap_area != NULL)
		return;
	state_backend_check_loaded();

	LWLockRegisterTranche(heap_shared->area_tranche, HEAP_AREA_TRANCHE_NAME);
	old = MemoryContextSwitchTo(TopMemoryContext);
	LWLockAcquire(state_backend_lock(LOCK_AREA), LW_EXCLUSIVE);
	if (!heap_shared->area_ready)
	{
		dsa_area   *area = dsa_create(heap_shared->area_tranche);

		dsa_pin(area);
		dsa_set_size_limit(area, heap_memory_limit_bytes());
		for (int i = 0; i < HEAP_PARTITIONS; i++)
		{
			HeapPartition *part = &heap_shared->parts[i];

			part->slots = dsa_allocate0(area, sizeof(dsa_pointer) * HEAP_INITIAL_SLOTS);
			part->nslots = HEAP_INITIAL_SLOTS;
			part->nentries = 0;
		}
		heap_shared->area_handle = dsa_get_handle(area);
		pg_write_barrier();
		heap_shared->area_ready = true;
		heap_area = area;
	}
	else
		heap_area = dsa_attach(heap_shared->area_handle);
	dsa_pin_mapping(heap_area);
	LWLockRelease(state_backend_lock(LOCK_AREA));
	MemoryContextSwitchTo(old);
}

/* heap_apply_memory_limit applies a changed state_backend.memory_limit. */
void
heap_apply_memory_limit(void)
{
	if (heap_area != NULL)
		dsa_set_size_limit(heap_area, heap_memory_limit_bytes());
}

static inline uint32
heap_entry_hash(uint32 state_id, const StateKey *key)
{
	return hash_combine(key->hash, murmurhash32(state_id));
}

static inline HeapPartition *
heap_partition(uint32 hash)
{
	return &heap_shared->parts[hash % HEAP_PARTITIONS];
}

static inline LWLock *
heap_partition_lock(uint32 hash)
{
	return state_backend_lock(hash % HEAP_PARTITIONS);
}

static inline dsa_pointer
slot_tag(uint32 hash)
{
	return ((dsa_pointer) (murmurhash32(hash) >> 18)) << SLOT_TAG_SHIFT;
}

static inline dsa_pointer
slot_make(dsa_pointer p, uint32 hash)
{
	return p | slot_tag(hash);
}

static inline dsa_pointer
slot_ptr(dsa_pointer slot)
{
	return slot & ~SLOT_TAG_MASK;
}

static inline uint32
slot_home(uint32 hash, uint32 nslots)
{
	return (hash / HEAP_PARTITIONS) & (nslots - 1);
}

static inline HeapEntry *
slot_entry(dsa_pointer slot)
{
	return (HeapEntry *) dsa_get_address(heap_area, slot_ptr(slot));
}

/*
 * heap_find returns the entry of a key, or NULL.  *slotp is set to the slot
 * that holds the entry, or to the empty slot where it would go, so the
 * caller can replace, remove or insert.  The caller holds the partition
 * lock.
 */
static HeapEntry *
heap_find(uint32 state_id, const StateKey *key, uint32 hash,
		  dsa_pointer **slotp, dsa_pointer *found_ptr)
{
	HeapPartition *part = heap_partition(hash);
	dsa_pointer *slots = dsa_get_address(heap_area, part->slots);
	uint32		mask = part->nslots - 1;
	dsa_pointer tag = slot_tag(hash);

	for (uint32 i = slot_home(hash, part->nslots);; i = (i + 1) & mask)
	{
		dsa_pointer s = slots[i];
		HeapEntry  *e;

		if (s == InvalidDsaPointer)
		{
			if (slotp)
				*slotp = &slots[i];
			return NULL;
		}
		if ((s & SLOT_TAG_MASK) != tag)
			continue;
		e = slot_entry(s);
		if (e->hash == hash && e->state_id == state_id &&
			e->key_len == key->len &&
			memcmp(ENTRY_KEY(e), key->data, key->len) == 0)
		{
			if (slotp)
				*slotp = &slots[i];
			if (found_ptr)
				*found_ptr = slot_ptr(s);
			return e;
		}
	}
}

static void
heap_check_alive(const StateTarget *st)
{
	if (!registry_alive(st->slot, st->desc->id))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("state \"%s\" does not exist", NameStr(st->desc->name)),
				 errdetail("It was dropped while this statement ran.")));
}

static void
heap_check_size(const StateTarget *st, Size keylen, Size vallen)
{
	if (ENTRY_SIZE(keylen, vallen) > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("state \"%s\" cannot hold a value of %zu bytes",
						NameStr(st->desc->name), keylen + vallen),
				 errdetail("A key's state may hold at most 1 GB.")));
}

static void
heap_out_of_memory(const StateTarget *st)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("out of state memory"),
			 errdetail("Heap states may use at most %d kB (state_backend.memory_limit); writing state \"%s\" would exceed it.",
					   state_backend_memory_limit_kb, NameStr(st->desc->name)),
			 errhint("Clear or truncate states, or raise state_backend.memory_limit and reload the configuration.")));
}

/*
 * heap_alloc allocates an entry for a key with room for "cap" value bytes,
 * or raises program_limit_exceeded when the area is at its limit.  Nothing
 * is linked yet, so an error leaves the table as it was.
 */
static dsa_pointer
heap_alloc(const StateTarget *st, const StateKey *key, uint32 hash, Size cap)
{
	dsa_pointer p;
	HeapEntry  *e;

	heap_check_size(st, key->len, cap);
	p = dsa_allocate_extended(heap_area, ENTRY_SIZE(key->len, cap), DSA_ALLOC_NO_OOM);
	if (!DsaPointerIsValid(p))
		heap_out_of_memory(st);
	e = dsa_get_address(heap_area, p);
	e->hash = hash;
	e->state_id = st->desc->id;
	e->key_len = key->len;
	e->val_len = 0;
	e->val_cap = (uint32) cap;
	e->key_group = key->key_group;
	e->flags = 0;
	memcpy(ENTRY_KEY(e), key->data, key->len);
	return p;
}

/* Put a tagged slot value at the first empty slot from its home. */
static void
slots_insert(dsa_pointer *slots, uint32 nslots, dsa_pointer s)
{
	uint32		mask = nslots - 1;
	uint32		i = slot_home(slot_entry(s)->hash, nslots);

	while (slots[i] != InvalidDsaPointer)
		i = (i + 1) & mask;
	slots[i] = s;
}

/*
 * heap_make_room doubles a partition's slot array once it is 3/4 full.  If
 * the area has no room for a bigger array the partition fills further, up
 * to 15/16, and heap_link refuses inserts past that.
 */
static void
heap_make_room(HeapPartition *part)
{
	uint32		newn = part->nslots * 2;
	dsa_pointer newp;
	dsa_pointer *olds;
	dsa_pointer *news;

	if (part->nentries + 1 <= part->nslots / 4 * 3 || newn > HEAP_MAX_SLOTS)
		return;
	newp = dsa_allocate_extended(heap_area, sizeof(dsa_pointer) * newn,
								 DSA_ALLOC_NO_OOM | DSA_ALLOC_ZERO | DSA_ALLOC_HUGE);
	if (!DsaPointerIsValid(newp))
		return;
	olds = dsa_get_address(heap_area, part->slots);
	news = dsa_get_address(heap_area, newp);
	for (uint32 i = 0; i < part->nslots; i++)
		if (olds[i] != InvalidDsaPointer)
			slots_insert(news, newn, olds[i]);
	dsa_free(heap_area, part->slots);
	part->slots = newp;
	part->nslots = newn;
}

/*
 * heap_link puts a new entry in the slot found by heap_find: in place of
 * the old entry of the key (freed), or in the empty slot.
 */
static void
heap_link(const StateTarget *st, uint32 hash, dsa_pointer *slot,
		  dsa_pointer newp, HeapEntry *old, dsa_pointer oldp)
{
	HeapEntry  *e = dsa_get_address(heap_area, newp);

	if (old != NULL)
	{
		*slot = slot_make(newp, hash);
		registry_add_usage(st->slot, 0,
						   (int64) ENTRY_SIZE(e->key_len, e->val_cap) -
						   (int64) ENTRY_SIZE(old->key_len, old->val_cap));
		dsa_free(heap_area, oldp);
	}
	else
	{
		HeapPartition *part = heap_partition(hash);

		if (part->nentries + 1 > part->nslots - part->nslots / 16)
		{
			dsa_free(heap_area, newp);
			heap_out_of_memory(st);
		}
		*slot = slot_make(newp, hash);
		part->nentries++;
		registry_add_usage(st->slot, 1, (int64) ENTRY_SIZE(e->key_len, e->val_cap));
	}
}

/*
 * slots_remove empties a slot and re-seats the rest of its cluster, so
 * every entry stays reachable from its home slot (linear probing without
 * tombstones).
 */
static void
slots_remove(HeapPartition *part, dsa_pointer *slot)
{
	dsa_pointer *slots = dsa_get_address(heap_area, part->slots);
	uint32		mask = part->nslots - 1;
	uint32		i = (uint32) (slot - slots);

	slots[i] = InvalidDsaPointer;
	for (i = (i + 1) & mask; slots[i] != InvalidDsaPointer; i = (i + 1) & mask)
	{
		dsa_pointer s = slots[i];

		slots[i] = InvalidDsaPointer;
		slots_insert(slots, part->nslots, s);
	}
}

static void
heap_unlink(const StateTarget *st, uint32 hash, dsa_pointer *slot,
			HeapEntry *e, dsa_pointer p)
{
	HeapPartition *part = heap_partition(hash);

	registry_add_usage(st->slot, -1, -(int64) ENTRY_SIZE(e->key_len, e->val_cap));
	slots_remove(part, slot);
	part->nentries--;
	dsa_free(heap_area, p);
}

/*
 * heap_store sets a key's whole value image.  The value is written in place
 * when it fits the entry without wasting much of it; otherwise a new entry
 * replaces the old one.  Caller holds the partition lock exclusively.
 */
static void
heap_store(const StateTarget *st, const StateKey *key, uint32 hash,
		   const char *value, uint32 len)
{
	dsa_pointer *link;
	dsa_pointer oldp = InvalidDsaPointer;
	HeapEntry  *e;
	dsa_pointer newp;
	HeapEntry  *ne;

	heap_make_room(heap_partition(hash));
	e = heap_find(st->desc->id, key, hash, &link, &oldp);
	if (e != NULL && e->val_cap >= len && e->val_cap <= 2 * (Size) len + 64)
	{
		memcpy(ENTRY_VAL(e), value, len);
		e->val_len = len;
		return;
	}
	newp = heap_alloc(st, key, hash, len);
	ne = dsa_get_address(heap_area, newp);
	memcpy(ENTRY_VAL(ne), value, len);
	ne->val_len = len;
	heap_link(st, hash, link, newp, e, oldp);
}

static bool
heap_get(const StateTarget *st, const StateKey *key, StringInfo out)
{
	uint32		hash = heap_entry_hash(st->desc->id, key);
	LWLock	   *lock;
	HeapEntry  *e;

	heap_area_attach();
	lock = heap_partition_lock(hash);
	LWLockAcquire(lock, LW_SHARED);
	e = heap_find(st->desc->id, key, hash, NULL, NULL);
	if (e != NULL)
		appendBinaryStringInfo(out, ENTRY_VAL(e), e->val_len);
	LWLockRelease(lock);
	return e != NULL;
}

static void
heap_put(const StateTarget *st, const StateKey *key, const char *value, uint32 len)
{
	uint32		hash = heap_entry_hash(st->desc->id, key);
	LWLock	   *lock;

	heap_area_attach();
	lock = heap_partition_lock(hash);
	LWLockAcquire(lock, LW_EXCLUSIVE);
	heap_check_alive(st);
	heap_store(st, key, hash, value, len);
	LWLockRelease(lock);
}

static bool
heap_remove(const StateTarget *st, const StateKey *key)
{
	uint32		hash = heap_entry_hash(st->desc->id, key);
	LWLock	   *lock;
	dsa_pointer *link;
	dsa_pointer p;
	HeapEntry  *e;

	heap_area_attach();
	lock = heap_partition_lock(hash);
	LWLockAcquire(lock, LW_EXCLUSIVE);
	e = heap_find(st->desc->id, key, hash, &link, &p);
	if (e != NULL)
		heap_unlink(st, hash, link, e, p);
	LWLockRelease(lock);
	return e != NULL;
}

/*
 * heap_reserve returns the entry of a key with room for "extra" more value
 * bytes, moving it to a larger chunk (capacity doubled) when needed, or
 * creating it empty.  Caller holds the partition lock exclusively.
 */
static HeapEntry *
heap_reserve(const StateTarget *st, const StateKey *key, uint32 hash, uint32 extra)
{
	dsa_pointer *link;
	dsa_pointer oldp = InvalidDsaPointer;
	HeapEntry  *e;
	Size		need;
	Size		cap;
	dsa_pointer newp;
	HeapEntry  *ne;

	heap_make_room(heap_partition(hash));
	e = heap_find(st->desc->id, key, hash, &link, &oldp);
	need = (e ? (Size) e->val_len : 0) + extra;
	if (e != NULL && e->val_cap >= need)
		return e;
	heap_check_size(st, key->len, need);
	cap = e ? Max(need, (Size) e->val_cap * 2) : need;
	if (ENTRY_SIZE(key->len, cap) > MaxAllocSize)
		cap = need;
	newp = heap_alloc(st, key, hash, cap);
	ne = dsa_get_address(heap_area, newp);
	if (e != NULL)
	{
		memcpy(ENTRY_VAL(ne), ENTRY_VAL(e), e->val_len);
		ne->val_len = e->val_len;
	}
	heap_link(st, hash, link, newp, e, oldp);
	return ne;
}

static void
heap_append(const StateTarget *st, const StateKey *key, const char *elems, uint32 len)
{
	uint32		hash = heap_entry_hash(st->desc->id, key);
	LWLock	   *lock;
	HeapEntry  *e;

	heap_area_attach();
	lock = heap_partition_lock(hash);
	LWLockAcquire(lock, LW_EXCLUSIVE);
	heap_check_alive(st);
	e = heap_reserve(st, key, hash, len);
	memcpy(ENTRY_VAL(e) + e->val_len, elems, len);
	e->val_len += len;
	LWLockRelease(lock);
}

static void
heap_merge(const StateTarget *st, const StateKey *key, const char *value,
		   uint32 len, StateMergeFn fn, void *arg, StringInfo out)
{
	uint32		hash = heap_entry_hash(st->desc->id, key);
	LWLock	   *lock;
	HeapEntry  *e;

	heap_area_attach();
	lock = heap_partition_lock(hash);
	LWLockAcquire(lock, LW_EXCLUSIVE);
	heap_check_alive(st);
	e = heap_find(st->desc->id, key, hash, NULL, NULL);
	if (e != NULL)
		fn(ENTRY_VAL(e), e->val_len, value, len, out, arg);
	else
		fn(NULL, 0, value, len, out, arg);
	heap_store(st, key, hash, out->data, out->len);
	LWLockRelease(lock);
}

/*
 * map_find_record returns the offset of a map key's record in a map image,
 * or -1.
 */
static int64
map_find_record(const char *img, uint32 len, const char *mkey, uint32 mkeylen)
{
	uint32		off = 0;

	while (off < len)
	{
		uint32		klen;
		uint32		vlen;

		memcpy(&klen, img + off, sizeof(uint32));
		memcpy(&vlen, img + off + sizeof(uint32), sizeof(uint32));
		if (klen == mkeylen && memcmp(img + off + MAP_REC_HDR, mkey, klen) == 0)
			return off;
		off += MAP_REC_HDR + klen + (vlen == MAP_NULL_VALUE ? 0 : vlen);
	}
	return -1;
}

static uint32
map_record_size(const char *rec)
{
	uint32		klen;
	uint32		vlen;

	memcpy(&klen, rec, sizeof(uint32));
	memcpy(&vlen, rec + sizeof(uint32), sizeof(uint32));
	return MAP_REC_HDR + klen + (vlen == MAP_NULL_VALUE ? 0 : vlen);
}

static bool
heap_map_get(const StateTarget *st, const StateKey *key, const char *mkey,
			 uint32 mkeylen, StringInfo out, bool *isnull)
{
	uint32		hash = heap_entry_hash(st->desc->id, key);
	LWLock	   *lock;
	HeapEntry  *e;
	bool		found = false;

	heap_area_attach();
	lock = heap_partition_lock(hash);
	LWLockAcquire(lock, LW_SHARED);
	e = heap_find(st->desc->id, key, hash, NULL, NULL);
	if (e != NULL)
	{
		int64		off = map_find_record(ENTRY_VAL(e), e->val_len, mkey, mkeylen);

		if (off >= 0)
		{
			const char *rec = ENTRY_VAL(e) + off;
			uint32		vlen;

			memcpy(&vlen, rec + sizeof(uint32), sizeof(uint32));
			*isnull = (vlen == MAP_NULL_VALUE);
			if (!*isnull)
				appendBinaryStringInfo(out, rec + MAP_REC_HDR + mkeylen, vlen);
			found = true;
		}
	}
	LWLockRelease(lock);
	return found;
}

static void
heap_map_put(const StateTarget *st, const StateKey *key, const char *mkey,
			 uint32 mkeylen, const char *value, uint32 len, bool isnull)
{
	uint32		hash = heap_entry_hash(st->desc->id, key);
	uint32		vlen = isnull ? MAP_NULL_VALUE : len;
	uint32		recsize = MAP_REC_HDR + mkeylen + (isnull ? 0 : len);
	LWLock	   *lock;
	HeapEntry  *e;
	int64		off;
	char	   *rec;

	heap_area_attach();
	lock = heap_partition_lock(hash);
	LWLockAcquire(lock, LW_EXCLUSIVE);
	heap_check_alive(st);
	e = heap_reserve(st, key, hash, recsize);
	off = map_find_record(ENTRY_VAL(e), e->val_len, mkey, mkeylen);
	if (off >= 0)
	{
		/* Drop the old record; the new one goes at the end. */
		uint32		oldsize = map_record_size(ENTRY_VAL(e) + off);

		memmove(ENTRY_VAL(e) + off, ENTRY_VAL(e) + off + oldsize,
				e->val_len - off - oldsize);
		e->val_len -= oldsize;
	}
	rec = ENTRY_VAL(e) + e->val_len;
	memcpy(rec, &mkeylen, sizeof(uint32));
	memcpy(rec + sizeof(uint32), &vlen, sizeof(uint32));
	memcpy(rec + MAP_REC_HDR, mkey, mkeylen);
	if (!isnull)
		memcpy(rec + MAP_REC_HDR + mkeylen, value, len);
	e->val_len += recsize;
	LWLockRelease(lock);
}

static bool
heap_map_remove(const StateTarget *st, const StateKey *key, const char *mkey,
				uint32 mkeylen)
{
	uint32		hash = heap_entry_hash(st->desc->id, key);
	LWLock	   *lock;
	dsa_pointer *link;
	dsa_pointer p;
	HeapEntry  *e;
	int64		off = -1;

	heap_area_attach();
	lock = heap_partition_lock(hash);
	LWLockAcquire(lock, LW_EXCLUSIVE);
	e = heap_find(st->desc->id, key, hash, &link, &p);
	if (e != NULL)
		off = map_find_record(ENTRY_VAL(e), e->val_len, mkey, mkeylen);
	if (off >= 0)
	{
		uint32		size = map_record_size(ENTRY_VAL(e) + off);

		memmove(ENTRY_VAL(e) + off, ENTRY_VAL(e) + off + size,
				e->val_len - off - size);
		e->val_len -= size;
		/* A map with no entries is no state, as in Flink. */
		if (e->val_len == 0)
			heap_unlink(st, hash, link, e, p);
	}
	LWLockRelease(lock);
	return off >= 0;
}

static void
heap_map_iterate(const StateTarget *st, const StateKey *key, StateEntryFn fn,
				 void *arg)
{
	StringInfoData img;
	uint32		off = 0;

	initStringInfo(&img);
	if (!heap_get(st, key, &img))
		return;
	while (off < (uint32) img.len)
	{
		const char *rec = img.data + off;
		uint32		klen;
		uint32		vlen;

		memcpy(&klen, rec, sizeof(uint32));
		memcpy(&vlen, rec + sizeof(uint32), sizeof(uint32));
		if (vlen == MAP_NULL_VALUE)
			fn(arg, rec + MAP_REC_HDR, klen, NULL, 0);
		else
			fn(arg, rec + MAP_REC_HDR, klen, rec + MAP_REC_HDR + klen, vlen);
		off += map_record_size(rec);
	}
	pfree(img.data);
}

static int64
heap_length(const StateTarget *st, const StateKey *key)
{
	uint32		hash = heap_entry_hash(st->desc->id, key);
	LWLock	   *lock;
	HeapEntry  *e;
	int64		n = 0;

	heap_area_attach();
	lock = heap_partition_lock(hash);
	LWLockAcquire(lock, LW_SHARED);
	e = heap_find(st->desc->id, key, hash, NULL, NULL);
	if (e != NULL)
	{
		const char *img = ENTRY_VAL(e);
		uint32		off = 0;

		while (off < e->val_len)
		{
			uint32		size;

			if (st->desc->kind == STATE_KIND_MAP)
				size = map_record_size(img + off);
			else
			{
				memcpy(&size, img + off, sizeof(uint32));
				size += LIST_ELEM_HDR;
			}
			off += size;
			n++;
		}
	}
	LWLockRelease(lock);
	return n;
}

/*
 * heap_iterate calls fn for every key of a state (of one key group when
 * key_group >= 0).  Each partition's matches are copied out under its lock
 * and handed to fn after the lock is released.
 */
static void
heap_iterate(const StateTarget *st, int key_group, StateEntryFn fn, void *arg)
{
	StringInfoData buf;

	heap_area_attach();
	initStringInfo(&buf);
	for (int i = 0; i < HEAP_PARTITIONS; i++)
	{
		HeapPartition *part = &heap_shared->parts[i];
		LWLock	   *lock = state_backend_lock(i);
		dsa_pointer *slots;
		int			off = 0;

		resetStringInfo(&buf);
		LWLockAcquire(lock, LW_SHARED);
		slots = dsa_get_address(heap_area, part->slots);
		for (uint32 b = 0; b < part->nslots; b++)
		{
			HeapEntry  *e;

			if (slots[b] == InvalidDsaPointer)
				continue;
			e = slot_entry(slots[b]);
			if (e->state_id == st->desc->id &&
				(key_group < 0 || e->key_group == key_group))
			{
				appendBinaryStringInfo(&buf, (char *) &e->key_len, sizeof(uint32));
				appendBinaryStringInfo(&buf, (char *) &e->val_len, sizeof(uint32));
				appendBinaryStringInfo(&buf, ENTRY_KEY(e), e->key_len + e->val_len);
			}
		}
		LWLockRelease(lock);

		while (off < buf.len)
		{
			uint32		klen;
			uint32		vlen;

			memcpy(&klen, buf.data + off, sizeof(uint32));
			memcpy(&vlen, buf.data + off + sizeof(uint32), sizeof(uint32));
			off += 2 * sizeof(uint32);
			fn(arg, buf.data + off, klen, buf.data + off + klen, vlen);
			off += klen + vlen;
		}
	}
	pfree(buf.data);
}

/*
 * heap_truncate removes every entry of a state.  Each partition's slots are
 * cleared first, then the entries that remain are re-seated, which keeps
 * one pass per partition however many entries go.
 */
static int64
heap_truncate(const StateTarget *st)
{
	int64		removed = 0;

	heap_area_attach();
	for (int i = 0; i < HEAP_PARTITIONS; i++)
	{
		HeapPartition *part = &heap_shared->parts[i];
		LWLock	   *lock = state_backend_lock(i);
		dsa_pointer *slots;
		int64		n = 0;
		int64		bytes = 0;
		uint32		start;

		LWLockAcquire(lock, LW_EXCLUSIVE);
		slots = dsa_get_address(heap_area, part->slots);
		for (uint32 b = 0; b < part->nslots; b++)
		{
			HeapEntry  *e;

			if (slots[b] == InvalidDsaPointer)
				continue;
			e = slot_entry(slots[b]);
			if (e->state_id != st->desc->id)
				continue;
			bytes += ENTRY_SIZE(e->key_len, e->val_cap);
			dsa_free(heap_area, slot_ptr(slots[b]));
			slots[b] = InvalidDsaPointer;
			n++;
		}
		if (n > 0)
		{
			/* Re-seat the survivors, starting after an empty slot. */
			for (start = 0; slots[start] != InvalidDsaPointer; start++)
				;
			for (uint32 k = 1; k <= part->nslots; k++)
			{
				uint32		b = (start + k) & (part->nslots - 1);
				dsa_pointer s = slots[b];

				if (s == InvalidDsaPointer)
					continue;
				slots[b] = InvalidDsaPointer;
				slots_insert(slots, part->nslots, s);
			}
			part->nentries -= n;
			registry_add_usage(st->slot, -n, -bytes);
		}
		LWLockRelease(lock);
		removed += n;
	}
	return removed;
}

static void
heap_size(const StateTarget *st, int64 *entries, int64 *bytes)
{
	registry_usage(st->slot, entries, bytes);
}

const KeyedStateBackend heap_keyed_backend = {
	.name = "heap",
	.get = heap_get,
	.put = heap_put,
	.remove = heap_remove,
	.append = heap_append,
	.merge = heap_merge,
	.map_get = heap_map_get,
	.map_put = heap_map_put,
	.map_remove = heap_map_remove,
	.map_iterate = heap_map_iterate,
	.length = heap_length,
	.iterate = heap_iterate,
	.truncate = heap_truncate,
	.size = heap_size,
};
