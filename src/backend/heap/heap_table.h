/*
 * backend/heap/heap_table.h
 *		The heap table: its layout and shared parts (heap_table.c), used by
 *		the operations on one key (heap_backend.c) and by whatever walks
 *		whole partitions, snapshots included (heap_scan.c).
 */
#ifndef STATE_BACKEND_HEAP_TABLE_H
#define STATE_BACKEND_HEAP_TABLE_H

#include "common/hashfn.h"
#include "lib/stringinfo.h"
#include "utils/dsa.h"

#include "backend/keyed_backend.h"
#include "common/key_group.h"
#include "common/locks.h"
#include "common/settings.h"

/* Slot tags: see heap_backend.c's header. */
#define SLOT_TAG_SHIFT			50
#define SLOT_TAG_MASK			(((dsa_pointer) 0x3FFF) << SLOT_TAG_SHIFT)

/*
 * An entry: 16 bytes of header, then the key and value images, so that a
 * small key and a bigint value fit DSA's 32-byte size class.
 *
 * An entry whose value grows in place (a list's appends, a map's entries)
 * reserves room for it: HEAP_ENTRY_CAP is set and its data starts with the
 * capacity, a uint32.  Any other entry holds its value exactly (capacity
 * val_len) and is changed in place only by a value of the same length, so
 * that its size, which the registry counts, stays what it was.
 *
 * Neither the hash nor the key group is stored: both are recomputed from
 * the key when slots are re-seated (heap_entry_rehash) and when a partition
 * holds several key groups (heap_state_entry_key_group).
 */
typedef struct HeapEntry
{
	uint32		state_id;
	uint32		val_len;
	uint32		epoch;			/* table epoch of the last write */
	uint16		key_len;		/* at most HEAP_MAX_KEY */
	uint16		flags;			/* HEAP_ENTRY_CAP */
	char		data[FLEXIBLE_ARRAY_MEMBER];	/* [capacity], key, value */
} HeapEntry;

#define HEAP_ENTRY_CAP		0x0001

#define HEAP_MAX_KEY		PG_UINT16_MAX

#define ENTRY_HAS_CAP(e)	(((e)->flags & HEAP_ENTRY_CAP) != 0)
#define ENTRY_KEY(e)		((e)->data + (ENTRY_HAS_CAP(e) ? sizeof(uint32) : 0))
#define ENTRY_VAL(e)		(ENTRY_KEY(e) + (e)->key_len)
#define ENTRY_SIZE(klen, cap, with_cap) \
	(offsetof(HeapEntry, data) + ((with_cap) ? sizeof(uint32) : 0) + (Size) (klen) + (Size) (cap))

/* The bytes an entry has for its value. */
static inline uint32
entry_cap(const HeapEntry *e)
{
	uint32		cap;

	if (!ENTRY_HAS_CAP(e))
		return e->val_len;
	memcpy(&cap, e->data, sizeof(cap));
	return cap;
}

/* The size of an entry, as the registry counts it. */
static inline Size
entry_bytes(const HeapEntry *e)
{
	return ENTRY_SIZE(e->key_len, entry_cap(e), ENTRY_HAS_CAP(e));
}

/* The hash of (state id, key) that places an entry in its partition. */
static inline uint32
heap_entry_hash(uint32 state_id, uint32 key_hash)
{
	return hash_combine(key_hash, murmurhash32(state_id));
}

static inline uint32
heap_entry_rehash(const HeapEntry *e)
{
	return heap_entry_hash(e->state_id, key_image_hash(ENTRY_KEY(e), e->key_len));
}

typedef struct HeapPartition
{
	dsa_pointer slots;			/* dsa_pointer[nslots], tagged; 0 = empty */
	uint32		nslots;			/* a power of two */
	uint32		nentries;
	uint32		snap_epoch;		/* a running snapshot needs entries < this */
	uint32		nretired;
	uint32		retired_cap;
	dsa_pointer retired;		/* dsa_pointer[retired_cap]: kept for it */
} HeapPartition;

typedef struct HeapShared
{
	bool		parts_ready;	/* partitions set up in the area */
	uint32		epoch;			/* changed only with every partition locked */
	uint32		cut_epoch;		/* the running snapshot's epoch; 0: none */
	pg_atomic_uint32 reserved_chunks;	/* of commits' reservations, held */
	HeapPartition parts[HEAP_PARTITIONS];
} HeapShared;

extern HeapShared *heap_state_shared;
extern dsa_area *heap_state_area;

/* heap_table.c; the first two for module.c, at the postmaster's hooks */
extern Size heap_state_shmem_size(void);
extern void heap_state_shmem_init(void);
extern void heap_state_attach_area(void);
extern int	heap_state_key_group_partitions(int key_group, int *parts);
extern int	heap_state_entry_key_group(const HeapEntry *e, int partition);
extern bool heap_state_partition_done_after(int key_group);
extern void heap_state_unlock(const HeapPartition *part);
extern void heap_state_copy_room(const HeapPartition *part, StringInfo buf, Size n);
extern void heap_state_out_of_memory(const StateTarget *st, const HeapPartition *part);
extern void *heap_state_reserve(Size bytes);
extern void heap_state_unreserve(void *handle);
extern dsa_pointer heap_state_alloc(Size size, int flags);
extern void heap_state_reserve_retired(const StateTarget *st, HeapPartition *part, uint32 n);
extern bool heap_state_try_reserve_retired(HeapPartition *part, uint32 n);
extern void heap_state_release(HeapPartition *part, HeapEntry *e, dsa_pointer p);
extern void heap_state_free_retired(HeapPartition *part);
extern void heap_state_slots_insert(dsa_pointer *slots, uint32 nslots, dsa_pointer s);

/* heap_state_attach makes the table usable in this process. */
static inline void
heap_state_attach(void)
{
	if (unlikely(heap_state_area == NULL))
		heap_state_attach_area();
}

/*
 * Partitions and key groups.  With max_parallelism >= HEAP_PARTITIONS,
 * partition p holds the key groups p, p + HEAP_PARTITIONS, ...; with fewer
 * key groups, each key group is spread over HEAP_PARTITIONS /
 * max_parallelism partitions that hold it alone.
 */
static inline int
heap_partition_index(int key_group, uint32 hash)
{
	int			m = state_backend_max_parallelism;
	int			spread;

	if (m >= HEAP_PARTITIONS)
		return key_group % HEAP_PARTITIONS;
	spread = HEAP_PARTITIONS / m;
	return key_group + m * (int) ((hash >> 16) % (uint32) spread);
}

static inline uint32
slot_home(uint32 hash, uint32 nslots)
{
	return hash & (nslots - 1);
}

static inline dsa_pointer
slot_ptr(dsa_pointer slot)
{
	return slot & ~SLOT_TAG_MASK;
}

static inline HeapEntry *
slot_entry(dsa_pointer slot)
{
	return (HeapEntry *) dsa_get_address(heap_state_area, slot_ptr(slot));
}

/* Does a running snapshot still need this entry as it is? */
static inline bool
heap_entry_shared(const HeapPartition *part, const HeapEntry *e)
{
	return part->snap_epoch != 0 && e->epoch < part->snap_epoch;
}

#endif							/* STATE_BACKEND_HEAP_TABLE_H */
