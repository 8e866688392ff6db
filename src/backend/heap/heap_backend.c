/*
 * backend/heap/heap_backend.c
 *		Heap states: a partition-locked hash table in a dynamic shared memory
 *		area, read and written in place by every backend, with copy-on-write
 *		while a snapshot is being written.
 *
 * The table is keyed by (state id, key image).  It is split into
 * HEAP_PARTITIONS partitions, each with its own LWLock and its own
 * open-addressing slot array (linear probing, at most 3/4 full, doubled when
 * it fills up).  A key's partition follows from its key group, so a
 * snapshot can walk the table key group by key group.  A slot holds a DSA
 * pointer to an entry, with a 14-bit tag of the entry's hash in bits that a
 * 64-bit DSA pointer never uses (10 bits of segment number and 40 of offset
 * leave the top 14 free), so a lookup reads the slots and then only the
 * entry it is after: on a table far bigger than the CPU caches that is two
 * cache misses.
 *
 * An entry is one DSA chunk holding its key and its value image; list and
 * map states keep all of a key's elements in that one value image, with
 * spare capacity so appends are amortised.  The area is bounded by
 * state_backend.memory_limit: an allocation past it fails the write with
 * program_limit_exceeded and leaves the table as it was.
 *
 * Snapshots (the point-in-time cut): the heap's cut (heap_scan.c) takes
 * every partition lock at once, advances the table's epoch to E and marks every
 * partition as still needed by the snapshot.  Every write stamps its entry
 * with the epoch current when it ran.  Until the snapshot writer has copied
 * a partition out (the heap's collect), writers never change or free an
 * entry stamped before E in place: they write a copy and retire the old
 * entry to the partition's retired list.  The snapshot sees exactly the
 * entries stamped before E: those still in the slots and those retired.
 *
 * Every write checks, under the partition lock, that its state is still
 * registered (registry_alive), so no entry outlives a drop.  This file has
 * every operation on one key; heap_table.c the table's shared parts;
 * heap_scan.c whatever walks whole partitions (iteration, truncate, the
 * snapshot strategy).  A map's image is pairs (format/records.h), changed
 * in place.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

#include "backend/heap/heap_scan.h"
#include "backend/heap/heap_table.h"
#include "catalog/registry.h"
#include "common/area.h"
#include "common/fault.h"
#include "common/key_group.h"
#include "common/settings.h"
#include "format/records.h"
#include "format/state_wal.h"

#define HEAP_MAX_SLOTS			(1U << 25)

/* One operation on one key, with its partition locked. */
typedef struct HeapOp
{
	const StateTarget *st;
	const StateKey *key;
	uint32		hash;
	HeapPartition *part;
	LWLock	   *lock;
	bool		best_effort;	/* no memory: fail quietly (heap_replace) */
} HeapOp;


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


/*
 * heap_op_begin locks the partition of a key for an operation.  The caller
 * ends it with LWLockRelease(op->lock); an error releases it too.
 */
static void
heap_op_begin(HeapOp *op, const StateTarget *st, const StateKey *key,
			  LWLockMode mode)
{
	heap_state_attach();
	op->st = st;
	op->key = key;
	op->best_effort = false;
	op->hash = heap_entry_hash(st->info.id, key->hash);
	op->part = &heap_state_shared->parts[heap_partition_index(key->key_group, op->hash)];
	op->lock = state_backend_lock((int) (op->part - heap_state_shared->parts));
	/* A backend write's own fault point, before its lock: writes of every kind pass here. */
	if (mode == LW_EXCLUSIVE)
		FAULT_POINT("write.heap");
	LWLockAcquire(op->lock, mode);
}

static void
heap_check_alive(const HeapOp *op)
{
	if (!registry_alive(op->st->slot, op->st->info.id))
	{
		heap_state_unlock(op->part);
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("state \"%s\" does not exist", NameStr(op->st->info.name)),
				 errdetail("It was dropped while this statement ran.")));
	}
}


/*
 * heap_find returns the entry of the op's key, or NULL.  *slotp is set to
 * the slot that holds the entry, or to the empty slot where it would go.
 */
static HeapEntry *
heap_find(const HeapOp *op, dsa_pointer **slotp)
{
	HeapPartition *part = op->part;
	dsa_pointer *slots = dsa_get_address(heap_state_area, part->slots);
	uint32		mask = part->nslots - 1;
	dsa_pointer tag = slot_tag(op->hash);
	uint32		id = op->st->info.id;

	for (uint32 i = slot_home(op->hash, part->nslots);; i = (i + 1) & mask)
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
		if (e->state_id == id && e->key_len == op->key->len &&
			memcmp(ENTRY_KEY(e), op->key->data, op->key->len) == 0)
		{
			if (slotp)
				*slotp = &slots[i];
			return e;
		}
	}
}


/*
 * heap_make_room doubles a partition's slot array once it is 3/4 full.  If
 * the area has no room for a bigger array the partition fills further, up
 * to 15/16, and heap_insert refuses inserts past that.
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
	newp = heap_state_alloc(sizeof(dsa_pointer) * newn,
							DSA_ALLOC_NO_OOM | DSA_ALLOC_ZERO | DSA_ALLOC_HUGE);
	if (!DsaPointerIsValid(newp))
		return;
	olds = dsa_get_address(heap_state_area, part->slots);
	news = dsa_get_address(heap_state_area, newp);
	for (uint32 i = 0; i < part->nslots; i++)
		if (olds[i] != InvalidDsaPointer)
			heap_state_slots_insert(news, newn, olds[i]);
	dsa_free(heap_state_area, part->slots);
	part->slots = newp;
	part->nslots = newn;
}

/*
 * slots_remove empties a slot and re-seats the rest of its cluster, so
 * every entry stays reachable from its home slot (linear probing without
 * tombstones).
 */
static void
slots_remove(HeapPartition *part, dsa_pointer *slot)
{
	dsa_pointer *slots = dsa_get_address(heap_state_area, part->slots);
	uint32		mask = part->nslots - 1;
	uint32		i = (uint32) (slot - slots);

	slots[i] = InvalidDsaPointer;
	for (i = (i + 1) & mask; slots[i] != InvalidDsaPointer; i = (i + 1) & mask)
	{
		dsa_pointer s = slots[i];

		slots[i] = InvalidDsaPointer;
		heap_state_slots_insert(slots, part->nslots, s);
	}
}

/*
 * heap_alloc allocates an entry for the op's key with room for "cap" value
 * bytes (with_cap: a growing entry that records it; without, the value
 * stored must be cap bytes), stamped with the current epoch, or raises
 * program_limit_exceeded (a best-effort op gets InvalidDsaPointer when the
 * area is full).  Nothing is linked yet, so an error leaves the table as
 * it was.
 */
static dsa_pointer
heap_alloc(const HeapOp *op, Size cap, bool with_cap)
{
	const StateTarget *st = op->st;
	dsa_pointer p;
	HeapEntry  *e;

	/* Errors below come after the partition lock is released. */
	if (op->key->len > HEAP_MAX_KEY)
	{
		heap_state_unlock(op->part);
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("key of %u bytes is too long for state \"%s\"",
						op->key->len, NameStr(st->info.name)),
				 errdetail("Keys of heap states may have at most %u bytes.", HEAP_MAX_KEY)));
	}
	if (ENTRY_SIZE(op->key->len, cap, with_cap) > MaxAllocSize)
	{
		heap_state_unlock(op->part);
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("state \"%s\" cannot hold a value of %zu bytes",
						NameStr(st->info.name), (Size) op->key->len + cap),
				 errdetail("A key's state may hold at most 1 GB.")));
	}
	p = heap_state_alloc(ENTRY_SIZE(op->key->len, cap, with_cap),
						 DSA_ALLOC_NO_OOM);
	if (!DsaPointerIsValid(p) && op->best_effort)
		return InvalidDsaPointer;
	if (!DsaPointerIsValid(p))
		heap_state_out_of_memory(st, op->part);
	e = dsa_get_address(heap_state_area, p);
	e->state_id = st->info.id;
	e->key_len = (uint16) op->key->len;
	e->flags = with_cap ? HEAP_ENTRY_CAP : 0;
	e->val_len = 0;
	if (with_cap)
	{
		uint32		c = (uint32) cap;

		memcpy(e->data, &c, sizeof(c));
	}
	e->epoch = heap_state_shared->epoch;
	memcpy(ENTRY_KEY(e), op->key->data, op->key->len);
	return p;
}

/*
 * heap_place puts a newly allocated entry into the slot heap_find gave:
 * in place of the key's old entry (released), or into the empty slot.
 */
static HeapEntry *
heap_place(const HeapOp *op, dsa_pointer *slot, dsa_pointer newp, HeapEntry *old)
{
	HeapEntry  *e = dsa_get_address(heap_state_area, newp);
	HeapPartition *part = op->part;

	if (old != NULL)
	{
		dsa_pointer oldp = slot_ptr(*slot);

		registry_add_usage(op->st->slot, 0, (int64) entry_bytes(e) - (int64) entry_bytes(old));
		*slot = slot_make(newp, op->hash);
		heap_state_release(part, old, oldp);
	}
	else
	{
		if (part->nentries + 1 > part->nslots - part->nslots / 16)
		{
			dsa_free(heap_state_area, newp);
			heap_state_out_of_memory(op->st, op->part);
		}
		*slot = slot_make(newp, op->hash);
		part->nentries++;
		registry_add_usage(op->st->slot, 1, (int64) entry_bytes(e));
	}
	return e;
}

/*
 * heap_prepare_write readies a partition for a write of the op's key: room
 * for one more slot and one more retired entry, and the state still alive.
 * Must come before heap_find, whose slot pointer it may invalidate.
 */
static void
heap_prepare_write(const HeapOp *op)
{
	heap_check_alive(op);
	heap_make_room(op->part);
	heap_state_reserve_retired(op->st, op->part, 1);
}

/*
 * heap_writable returns the entry of the op's key, ready to be changed in
 * place with room for "extra" more value bytes: the entry itself when it
 * reserves the room and no snapshot needs it as it is, otherwise a copy
 * that reserves it and replaces it (capacity doubled when growing).  A key without state gets an
 * empty entry.  NULL only for a best-effort op with no memory.  Caller has
 * called heap_prepare_write.
 */
static HeapEntry *
heap_writable(const HeapOp *op, Size extra)
{
	dsa_pointer *slot;
	HeapEntry  *e = heap_find(op, &slot);
	Size		need = (e ? (Size) e->val_len : 0) + extra;
	Size		cap;
	dsa_pointer newp;
	HeapEntry  *ne;

	if (e != NULL && ENTRY_HAS_CAP(e) && entry_cap(e) >= need &&
		!heap_entry_shared(op->part, e))
	{
		e->epoch = heap_state_shared->epoch;
		return e;
	}
	cap = need;
	if (e != NULL && entry_cap(e) < need)
		cap = Max(need, (Size) entry_cap(e) * 2);
	else if (e != NULL)
		cap = entry_cap(e);
	if (ENTRY_SIZE(op->key->len, cap, true) > MaxAllocSize)
		cap = need;
	newp = heap_alloc(op, cap, true);
	if (!DsaPointerIsValid(newp))
		return NULL;			/* best effort, and no memory */
	ne = dsa_get_address(heap_state_area, newp);
	if (e != NULL)
	{
		memcpy(ENTRY_VAL(ne), ENTRY_VAL(e), e->val_len);
		ne->val_len = e->val_len;
	}
	return heap_place(op, slot, newp, e);
}

/*
 * heap_store sets the op's key's whole value image: in place when no
 * snapshot needs the entry as it is and it has the room (a growing entry,
 * without wasting much of it) or the same length (any other), otherwise in
 * a new entry that holds the value exactly.  False only for a best-effort op with no
 * memory.  Caller has called heap_prepare_write.
 */
static bool
heap_store(const HeapOp *op, const char *value, uint32 len)
{
	dsa_pointer *slot;
	HeapEntry  *e = heap_find(op, &slot);
	bool		fits = e != NULL && !heap_entry_shared(op->part, e) &&
		(ENTRY_HAS_CAP(e) ? entry_cap(e) >= len : e->val_len == len);
	dsa_pointer newp = InvalidDsaPointer;
	HeapEntry  *ne;

	if (!fits || entry_cap(e) > 2 * (Size) len + 64)
		newp = heap_alloc(op, len, false);
	if (!DsaPointerIsValid(newp) && !fits)
		return false;			/* best effort, and no memory */
	if (!DsaPointerIsValid(newp))
	{
		/* In place; a best-effort op keeps a too big entry rather than fail. */
		memcpy(ENTRY_VAL(e), value, len);
		e->val_len = len;
		e->epoch = heap_state_shared->epoch;
		return true;
	}
	ne = dsa_get_address(heap_state_area, newp);
	memcpy(ENTRY_VAL(ne), value, len);
	ne->val_len = len;
	heap_place(op, slot, newp, e);
	return true;
}

/* heap_unlink removes the key's entry found at slot. */
static void
heap_unlink(const HeapOp *op, dsa_pointer *slot, HeapEntry *e)
{
	dsa_pointer p = slot_ptr(*slot);

	registry_add_usage(op->st->slot, -1, -(int64) entry_bytes(e));
	slots_remove(op->part, slot);
	op->part->nentries--;
	heap_state_release(op->part, e, p);
}

/*
 * heap_log writes a logged state's change to WAL under the partition's
 * lock: a cut, which holds every partition lock, then parts the changes it
 * holds from those it does not by one WAL position.
 */
static inline void
heap_log(const HeapOp *op, uint8 kind, const char *mkey, uint32 mkeylen,
		 const char *value, uint32 len, bool isnull)
{
	if (op->st->info.logged)
		(void) state_wal_log(kind, op->st->info.id, op->key->data, op->key->len,
							 mkey, mkeylen, value, len, isnull);
}

static bool
heap_get(const StateTarget *st, const StateKey *key, StringInfo out)
{
	HeapOp		op;
	HeapEntry  *e;

	heap_op_begin(&op, st, key, LW_SHARED);
	e = heap_find(&op, NULL);
	if (e != NULL)
	{
		heap_state_copy_room(op.part, out, e->val_len);
		appendBinaryStringInfo(out, ENTRY_VAL(e), e->val_len);
	}
	LWLockRelease(op.lock);
	return e != NULL;
}

static void
heap_put(const StateTarget *st, const StateKey *key, const char *value, uint32 len)
{
	HeapOp		op;

	heap_op_begin(&op, st, key, LW_EXCLUSIVE);
	heap_prepare_write(&op);
	heap_store(&op, value, len);
	heap_log(&op, STATE_WAL_PUT, NULL, 0, value, len, false);
	LWLockRelease(op.lock);
}

static bool
heap_remove(const StateTarget *st, const StateKey *key)
{
	HeapOp		op;
	dsa_pointer *slot;
	HeapEntry  *e;

	heap_op_begin(&op, st, key, LW_EXCLUSIVE);
	heap_state_reserve_retired(st, op.part, 1);
	e = heap_find(&op, &slot);
	if (e != NULL)
	{
		heap_unlink(&op, slot, e);
		heap_log(&op, STATE_WAL_REMOVE, NULL, 0, NULL, 0, false);
	}
	LWLockRelease(op.lock);
	return e != NULL;
}

static void
heap_append(const StateTarget *st, const StateKey *key, const char *elems, uint32 len)
{
	HeapOp		op;
	HeapEntry  *e;

	if (len == 0)
		return;
	heap_op_begin(&op, st, key, LW_EXCLUSIVE);
	heap_prepare_write(&op);
	e = heap_writable(&op, len);
	memcpy(ENTRY_VAL(e) + e->val_len, elems, len);
	e->val_len += len;
	heap_log(&op, STATE_WAL_APPEND, NULL, 0, elems, len, false);
	LWLockRelease(op.lock);
}

/*
 * heap_merge folds a value into a key's state.  The fold is PostgreSQL
 * code, maybe a user's function, so it runs with no lock held: fold into a
 * copy of the current image, then store the result only if the image is
 * still the one folded into; otherwise fold again into what is there now.
 */
static void
heap_merge(const StateTarget *st, const StateKey *key, const char *value,
		   uint32 len, StateMergeFn fn, void *arg, const StateFold *fold,
		   StringInfo out)
{
	StringInfoData cur;

	initStringInfo(&cur);
	for (;;)
	{
		bool		found = heap_get(st, key, &cur);
		HeapOp		op;
		HeapEntry  *e;
		bool		same;

		keyed_fold_call(fn, st, key, found ? cur.data : NULL, found ? (uint32) cur.len : 0,
						value, len, out, arg);
		heap_op_begin(&op, st, key, LW_EXCLUSIVE);
		heap_prepare_write(&op);
		e = heap_find(&op, NULL);
		same = found ? (e != NULL && e->val_len == (uint32) cur.len &&
						memcmp(ENTRY_VAL(e), cur.data, cur.len) == 0) : e == NULL;
		if (same)
		{
			heap_store(&op, out->data, out->len);
			heap_log(&op, STATE_WAL_PUT, NULL, 0, out->data, out->len, false);
		}
		LWLockRelease(op.lock);
		if (same)
			break;
		resetStringInfo(&cur);
		CHECK_FOR_INTERRUPTS();
	}
	pfree(cur.data);
}

/* The pair of a map key in a map image: its offset (or -1) and size. */
static int64
map_find(const HeapEntry *e, const char *mkey, uint32 mkeylen, uint32 *size)
{
	return record_find_pair(ENTRY_VAL(e), e->val_len, mkey, mkeylen, size);
}

/* Remove the pair at off from a map image (the entry is writable). */
static void
map_cut(HeapEntry *e, int64 off, uint32 size)
{
	memmove(ENTRY_VAL(e) + off, ENTRY_VAL(e) + off + size, e->val_len - off - size);
	e->val_len -= size;
}

static bool
heap_map_get(const StateTarget *st, const StateKey *key, const char *mkey,
			 uint32 mkeylen, StringInfo out, bool *isnull)
{
	HeapOp		op;
	HeapEntry  *e;
	bool		found = false;

	heap_op_begin(&op, st, key, LW_SHARED);
	e = heap_find(&op, NULL);
	if (e != NULL)
	{
		uint32		size;
		int64		off = map_find(e, mkey, mkeylen, &size);
		uint32		at = (uint32) off;
		RecordPair	pair;

		if (off >= 0 && record_next_pair(ENTRY_VAL(e), e->val_len, &at, &pair) == RECORD_OK)
		{
			*isnull = pair.value == NULL;
			if (pair.value)
			{
				heap_state_copy_room(op.part, out, pair.vallen);
				appendBinaryStringInfo(out, pair.value, pair.vallen);
			}
			found = true;
		}
	}
	LWLockRelease(op.lock);
	return found;
}

/*
 * Store a map entry of the op's key (caller has called heap_prepare_write);
 * false only for a best-effort op with no memory.
 */
static bool
heap_map_store(const HeapOp *op, const char *mkey, uint32 mkeylen,
			   const char *value, uint32 len, bool isnull)
{
	const char *v = isnull ? NULL : value;
	Size		recsize = record_pair_size(mkeylen, v, len);
	HeapEntry  *e = heap_writable(op, recsize);
	uint32		oldsize;
	int64		off;

	if (e == NULL)
		return false;			/* best effort, and no memory */
	off = map_find(e, mkey, mkeylen, &oldsize);
	if (off >= 0)
		map_cut(e, off, oldsize);	/* the new pair goes at the end */
	record_write_pair(ENTRY_VAL(e) + e->val_len, mkey, mkeylen, v, len);
	e->val_len += recsize;
	heap_log(op, STATE_WAL_MAP_PUT, mkey, mkeylen, v, len, isnull);
	return true;
}

/*
 * Remove the map entry at off (size bytes) of the op's key's entry e, and
 * the key when no entry is left (caller has called heap_prepare_write);
 * false only for a best-effort op with no memory.
 */
static bool
heap_map_unset(const HeapOp *op, HeapEntry *e, int64 off, uint32 size,
			   const char *mkey, uint32 mkeylen)
{
	e = heap_writable(op, 0);
	if (e == NULL)
		return false;			/* best effort, and no memory */
	map_cut(e, off, size);
	/* A map with no entries is no state, as in Flink. */
	if (e->val_len == 0)
	{
		dsa_pointer *slot;

		heap_find(op, &slot);
		heap_unlink(op, slot, e);
	}
	heap_log(op, STATE_WAL_MAP_REMOVE, mkey, mkeylen, NULL, 0, false);
	return true;
}

static void
heap_map_put(const StateTarget *st, const StateKey *key, const char *mkey,
			 uint32 mkeylen, const char *value, uint32 len, bool isnull)
{
	HeapOp		op;

	heap_op_begin(&op, st, key, LW_EXCLUSIVE);
	heap_prepare_write(&op);
	heap_map_store(&op, mkey, mkeylen, value, len, isnull);
	LWLockRelease(op.lock);
}

static bool
heap_map_remove(const StateTarget *st, const StateKey *key, const char *mkey,
				uint32 mkeylen)
{
	HeapOp		op;
	HeapEntry  *e;
	int64		off = -1;
	uint32		size = 0;

	heap_op_begin(&op, st, key, LW_EXCLUSIVE);
	heap_prepare_write(&op);
	e = heap_find(&op, NULL);
	if (e != NULL)
		off = map_find(e, mkey, mkeylen, &size);
	if (off >= 0)
		heap_map_unset(&op, e, off, size, mkey, mkeylen);
	LWLockRelease(op.lock);
	return off >= 0;
}

/* heap_map_replace: replace for one map entry; the op's partition is locked. */
static bool
heap_map_replace(const HeapOp *op, const char *mkey, uint32 mkeylen,
				 const char *expect, uint32 expectlen, const char *value, uint32 len)
{
	HeapEntry  *e = heap_find(op, NULL);
	uint32		size;
	int64		off = e ? map_find(e, mkey, mkeylen, &size) : -1;
	uint32		at = (uint32) off;
	RecordPair	pair;

	if (off < 0 || expect == NULL ||
		record_next_pair(ENTRY_VAL(e), e->val_len, &at, &pair) != RECORD_OK ||
		pair.value == NULL || pair.vallen != expectlen ||
		memcmp(pair.value, expect, expectlen) != 0)
		return false;
	if (value)
		return heap_map_store(op, mkey, mkeylen, value, len, false);
	return heap_map_unset(op, e, off, size, mkey, mkeylen);
}

static bool
heap_replace(const StateTarget *st, const StateKey *key, const char *mkey,
			 uint32 mkeylen, const char *expect, uint32 expectlen,
			 const char *value, uint32 len)
{
	HeapOp		op;
	dsa_pointer *slot;
	HeapEntry  *e;
	bool		same;

	heap_op_begin(&op, st, key, LW_EXCLUSIVE);
	op.best_effort = true;
	heap_check_alive(&op);
	heap_make_room(op.part);
	if (!heap_state_try_reserve_retired(op.part, 1))
	{
		LWLockRelease(op.lock);
		return false;
	}
	if (mkey)
	{
		same = heap_map_replace(&op, mkey, mkeylen, expect, expectlen, value, len);
		LWLockRelease(op.lock);
		return same;
	}
	e = heap_find(&op, &slot);
	same = expect ? (e != NULL && e->val_len == expectlen &&
					 memcmp(ENTRY_VAL(e), expect, expectlen) == 0) : e == NULL;
	if (same && value && !heap_store(&op, value, len))
		same = false;
	else if (same && value)
		heap_log(&op, STATE_WAL_PUT, NULL, 0, value, len, false);
	else if (same && e != NULL)
	{
		heap_unlink(&op, slot, e);
		heap_log(&op, STATE_WAL_REMOVE, NULL, 0, NULL, 0, false);
	}
	LWLockRelease(op.lock);
	return same;
}

static void
heap_map_iterate(const StateTarget *st, const StateKey *key, StateEntryFn fn,
				 void *arg)
{
	StringInfoData img;
	uint32		off = 0;
	RecordPair	pair;

	initStringInfo(&img);
	if (!heap_get(st, key, &img))
		return;
	while (record_next_pair(img.data, img.len, &off, &pair) == RECORD_OK)
	{
		fn(arg, pair.key, pair.keylen, pair.value, pair.vallen);
		CHECK_FOR_INTERRUPTS();
	}
	pfree(img.data);
}

static int64
heap_length(const StateTarget *st, const StateKey *key)
{
	HeapOp		op;
	HeapEntry  *e;
	int64		n = 0;

	heap_op_begin(&op, st, key, LW_SHARED);
	e = heap_find(&op, NULL);
	if (e != NULL)
		n = st->info.layout == STATE_KIND_MAP ?
			record_count_pairs(ENTRY_VAL(e), e->val_len) :
			record_count_elems(ENTRY_VAL(e), e->val_len);
	LWLockRelease(op.lock);
	return n;
}

/*
 * heap_state_value_room returns the room a key's entry has (0 when it has
 * none), and in *len the length of its image.
 */
static Size
heap_state_value_room(const StateTarget *st, const StateKey *key, Size *len)
{
	HeapOp		op;
	HeapEntry  *e;
	Size		room = 0;

	*len = 0;
	heap_op_begin(&op, st, key, LW_SHARED);
	e = heap_find(&op, NULL);
	if (e != NULL)
	{
		*len = e->val_len;
		room = ENTRY_HAS_CAP(e) ? entry_cap(e) : e->val_len;
	}
	LWLockRelease(op.lock);
	return room;
}

/*
 * heap_state_reserve_keys is the heap's KeyedStateBackend.reserve: it sets
 * aside, in the area, what a commit's writes to the keys may allocate at
 * most.  An entry that grows is copied into one of twice its room (while
 * the old one is still allocated), so a key counts its new image twice
 * over, its current one when the writes build on it, and the overhead of an
 * entry and of the retired list per write.  Raises 54000 when the area has
 * no room for it (state_backend.memory_limit).
 */
static void *
heap_state_reserve_keys(const StateTarget *st, const StateReserveKey *keys, int nkeys)
{
	Size		bytes = 0;

	for (int i = 0; i < nkeys; i++)
	{
		const StateReserveKey *k = &keys[i];
		Size		cur = 0;
		Size		room = 0;
		Size		after;

		if (!k->replaced && k->grow_len > 0)
			room = heap_state_value_room(st, k->key, &cur);
		after = add_size(add_size(cur, k->image_len), (Size) k->grow_len);
		bytes = add_size(bytes, ENTRY_SIZE(k->key->len, Max(2 * room, 2 * after), true));
		bytes = add_size(bytes, mul_size(k->writes, 2 * sizeof(dsa_pointer) + 64));
		CHECK_FOR_INTERRUPTS();
	}
	if (bytes == 0)
		return NULL;
	return heap_state_reserve(bytes);
}

/*
 * heap_state_unreserve_keys, just before the apply's writes: they draw on
 * what heap_state_reserve_keys set aside (heap_table.c), which no other
 * write takes; what is left goes back when the transaction ends.
 */
static void
heap_state_unreserve_keys(void *handle)
{
	heap_state_unreserve(handle);
}

const KeyedStateBackend heap_keyed_backend = {
	.name = "heap",
	.get = heap_get,
	.put = heap_put,
	.remove = heap_remove,
	.replace = heap_replace,
	.append = heap_append,
	.merge = heap_merge,
	.map_get = heap_map_get,
	.map_put = heap_map_put,
	.map_remove = heap_map_remove,
	.map_iterate = heap_map_iterate,
	.length = heap_length,
	.iterate = heap_state_iterate,
	.truncate = heap_state_truncate,
	.compact = NULL,
	.expire = heap_state_expire,
	.create = NULL,
	.drop = heap_state_drop,
	.size = heap_state_size,
	.flush = NULL,
	.sync_catalog = NULL,
	.applied_lsn = NULL,
	.reserve = heap_state_reserve_keys,
	.unreserve = heap_state_unreserve_keys,
	.snapshot = &heap_snapshot_strategy,
};
