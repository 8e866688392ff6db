/*
 * backend/heap/heap_scan.c
 *		What walks whole partitions of the heap table: iterating a state,
 *		truncating or dropping it, and the heap's snapshot strategy.
 *
 * The snapshot's cut (heap_cut) takes every partition lock at once,
 * advances the table's epoch to E and marks every partition as still needed
 * by the snapshot; then writers copy rather than change entries stamped
 * before E (heap_backend.c).  heap_collect copies one key group's entries
 * as of the cut and lets a partition go after its last key group.
 * Partition locks are held while copying, never while calling back.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "backend/heap/heap_scan.h"
#include "backend/heap/heap_table.h"
#include "catalog/registry.h"
#include "common/settings.h"
#include "format/records.h"
#include "format/state_wal.h"

#define SNAPSHOT_PREFETCH		16	/* slots ahead, while copying out */

#if defined(__GNUC__) || defined(__clang__)
#define heap_prefetch(p)		__builtin_prefetch(p)
#else
#define heap_prefetch(p)		((void) 0)
#endif

/*
 * heap_state_iterate calls fn for every key of a state (of one key group when
 * key_group >= 0).  Each partition's matches are copied out under its lock
 * and handed to fn after the lock is released.
 */
void
heap_state_iterate(const StateTarget *st, int key_group, StateEntryFn fn, void *arg)
{
	StringInfoData buf;
	int			parts[HEAP_PARTITIONS];
	int			nparts = HEAP_PARTITIONS;

	heap_state_attach();
	initStringInfo(&buf);
	if (key_group >= 0)
		nparts = heap_state_key_group_partitions(key_group, parts);
	else
		for (int i = 0; i < HEAP_PARTITIONS; i++)
			parts[i] = i;
	for (int p = 0; p < nparts; p++)
	{
		int			i = parts[p];
		HeapPartition *part = &heap_state_shared->parts[i];
		LWLock	   *lock = state_backend_lock(i);
		dsa_pointer *slots;
		uint32		off = 0;
		RecordPair	pair;

		resetStringInfo(&buf);
		LWLockAcquire(lock, LW_SHARED);
		slots = dsa_get_address(heap_state_area, part->slots);
		for (uint32 b = 0; b < part->nslots; b++)
		{
			HeapEntry  *e;

			if (slots[b] == InvalidDsaPointer)
				continue;
			e = slot_entry(slots[b]);
			if (e->state_id == st->info.id &&
				(key_group < 0 || heap_state_entry_key_group(e, i) == key_group))
			{
				heap_state_copy_room(part, &buf,
									 record_pair_size(e->key_len, ENTRY_VAL(e), e->val_len));
				record_put_pair(&buf, ENTRY_KEY(e), e->key_len, ENTRY_VAL(e), e->val_len);
			}
		}
		LWLockRelease(lock);

		while (record_next_pair(buf.data, buf.len, &off, &pair) == RECORD_OK)
		{
			fn(arg, pair.key, pair.keylen, pair.value, pair.vallen);
			CHECK_FOR_INTERRUPTS();
		}
		CHECK_FOR_INTERRUPTS();
	}
	pfree(buf.data);
}

/*
 * removed_from ends a walk of a partition that cleared the slots of n of a
 * state's entries (bytes of them, and of what entries left lost in place):
 * the entries left are re-seated, from "start", a slot that was empty
 * before anything was cleared (so every cluster is visited from its
 * beginning), and the counts follow.
 */
static void
removed_from(const StateTarget *st, HeapPartition *part, uint32 start, int64 n, int64 bytes)
{
	dsa_pointer *slots = dsa_get_address(heap_state_area, part->slots);

	if (n == 0)
	{
		if (bytes != 0)
			registry_add_usage(st->slot, 0, -bytes);
		return;
	}
	for (uint32 k = 1; k <= part->nslots; k++)
	{
		uint32		b = (start + k) & (part->nslots - 1);
		dsa_pointer s = slots[b];

		if (s == InvalidDsaPointer)
			continue;
		slots[b] = InvalidDsaPointer;
		heap_state_slots_insert(slots, part->nslots, s);
	}
	part->nentries -= n;
	registry_add_usage(st->slot, -n, -bytes);
}

/*
 * heap_state_truncate removes every entry of a state.  Each partition's slots are
 * cleared first, then the entries that remain are re-seated, which keeps
 * one pass per partition however many entries go.
 */
int64
heap_state_truncate(const StateTarget *st)
{
	int64		removed = 0;

	heap_state_attach();
	for (int i = 0; i < HEAP_PARTITIONS; i++)
	{
		HeapPartition *part = &heap_state_shared->parts[i];
		LWLock	   *lock = state_backend_lock(i);
		dsa_pointer *slots;
		int64		n = 0;
		int64		bytes = 0;
		uint32		start;

		LWLockAcquire(lock, LW_EXCLUSIVE);
		slots = dsa_get_address(heap_state_area, part->slots);

		/*
		 * A slot that is empty before anything is cleared starts a cluster:
		 * re-seating from there visits every cluster from its beginning.
		 */
		for (start = 0; slots[start] != InvalidDsaPointer; start++)
			;
		if (part->snap_epoch != 0)
		{
			uint32		shared = 0;

			for (uint32 b = 0; b < part->nslots; b++)
				if (slots[b] != InvalidDsaPointer &&
					slot_entry(slots[b])->state_id == st->info.id &&
					heap_entry_shared(part, slot_entry(slots[b])))
					shared++;
			heap_state_reserve_retired(st, part, shared);
		}
		for (uint32 b = 0; b < part->nslots; b++)
		{
			HeapEntry  *e;

			if (slots[b] == InvalidDsaPointer)
				continue;
			e = slot_entry(slots[b]);
			if (e->state_id != st->info.id)
				continue;

			/*
			 * A logged state's keys go one by one, each under its
			 * partition's lock as every change is: a write that lands in a
			 * partition already emptied comes after its removal in WAL too.
			 */
			if (st->info.logged)
				(void) state_wal_log(STATE_WAL_REMOVE, st->info.id, ENTRY_KEY(e), e->key_len,
									 NULL, 0, NULL, 0, false);
			bytes += entry_bytes(e);
			heap_state_release(part, e, slot_ptr(slots[b]));
			slots[b] = InvalidDsaPointer;
			n++;
		}
		removed_from(st, part, start, n, bytes);
		LWLockRelease(lock);
		removed += n;
	}
	return removed;
}

/*
 * expire_partition removes, in place, what expired at now in partition i
 * of a TTL state's key group: keys left with nothing go (their slots are
 * cleared, then the survivors re-seated, as truncate does), lists and maps
 * shrink.  The partition is locked and no snapshot needs it.  *min_deadline
 * gets the earliest deadline left; returns how many keys went.
 */
static int64
expire_partition(const StateTarget *st, int i, int key_group, int64 now, int64 *min_deadline)
{
	HeapPartition *part = &heap_state_shared->parts[i];
	dsa_pointer *slots = dsa_get_address(heap_state_area, part->slots);
	int			kind = st->info.kind;
	int64		n = 0;
	int64		bytes = 0;
	uint32		start;

	for (start = 0; slots[start] != InvalidDsaPointer; start++)
		;
	for (uint32 b = 0; b < part->nslots; b++)
	{
		HeapEntry  *e;
		uint32		keep;

		if (slots[b] == InvalidDsaPointer)
			continue;
		e = slot_entry(slots[b]);
		if (e->state_id != st->info.id || heap_state_entry_key_group(e, i) != key_group)
			continue;
		keep = record_ttl_compact(kind, ENTRY_VAL(e), e->val_len, now);
		if (keep > 0)
		{
			if (keep < e->val_len)
			{
				/* An entry without reserved room counts what it holds. */
				if (!ENTRY_HAS_CAP(e))
					bytes += e->val_len - keep;
				e->val_len = keep;
				e->epoch = heap_state_shared->epoch;
			}
			*min_deadline = Min(*min_deadline, record_ttl_min_deadline(kind, ENTRY_VAL(e), keep));
			continue;
		}
		bytes += entry_bytes(e);
		heap_state_release(part, e, slot_ptr(slots[b]));
		slots[b] = InvalidDsaPointer;
		n++;
	}
	removed_from(st, part, start, n, bytes);
	return n;
}

/*
 * heap_state_expire removes, in place, what expired at now in one key
 * group of a TTL state; *min_deadline gets the earliest deadline left
 * (PG_INT64_MAX: none).  Returns how many keys went, or -1 when it cannot
 * work in place: a logged state's changes go to WAL key by key, and a
 * running snapshot needs entries as they are.  The TTL layer then goes key
 * by key.
 */
int64
heap_state_expire(const StateTarget *st, int key_group, int64 now, int64 *min_deadline)
{
	int			parts[HEAP_PARTITIONS];
	int			nparts;
	int64		removed = 0;

	if (st->info.logged)
		return -1;
	heap_state_attach();
	*min_deadline = PG_INT64_MAX;
	nparts = heap_state_key_group_partitions(key_group, parts);
	for (int p = 0; p < nparts; p++)
	{
		LWLock	   *lock = state_backend_lock(parts[p]);
		bool		busy;

		LWLockAcquire(lock, LW_EXCLUSIVE);
		busy = heap_state_shared->parts[parts[p]].snap_epoch != 0;
		if (!busy && registry_alive(st->slot, st->info.id))
			removed += expire_partition(st, parts[p], key_group, now, min_deadline);
		LWLockRelease(lock);
		if (busy)
			return -1;
		CHECK_FOR_INTERRUPTS();
	}
	return removed;
}

void
heap_state_size(const StateTarget *st, int64 *entries, int64 *bytes)
{
	registry_usage(st->slot, entries, bytes);
}

/* heap_state_drop frees a dropped state's entries; that is all a heap state has. */
void
heap_state_drop(const StateTarget *st, bool confirm)
{
	StateTarget t = *st;

	/* The drop is logged already (catalog/registry.c): its entries go unlogged. */
	t.info.logged = false;
	(void) heap_state_truncate(&t);
}

/*
 * heap_prepare attaches the table before the cut, so that the cut, under
 * the snapshot lock, takes no other lock than the partitions'.
 */
static void
heap_prepare(int64 id)
{
	heap_state_attach();
}

/*
 * heap_cut makes the cut of snapshot id: with every partition locked, so no
 * write is halfway, it advances the epoch and marks every partition as
 * needed by the snapshot, then calls at_cut (which records what else
 * belongs to the same instant, such as the state descriptors).  Writers
 * wait for the length of this call only.
 */
static void
heap_cut(int64 id, void (*at_cut) (void *arg), void *arg)
{
	uint32		epoch;

	heap_state_attach();
	for (int i = 0; i < HEAP_PARTITIONS; i++)
		LWLockAcquire(state_backend_lock(i), LW_EXCLUSIVE);
	epoch = ++heap_state_shared->epoch;
	for (int i = 0; i < HEAP_PARTITIONS; i++)
		heap_state_shared->parts[i].snap_epoch = epoch;
	heap_state_shared->cut_epoch = epoch;
	PG_TRY();
	{
		at_cut(arg);
	}
	PG_FINALLY();
	{
		for (int i = HEAP_PARTITIONS - 1; i >= 0; i--)
			LWLockRelease(state_backend_lock(i));
	}
	PG_END_TRY();
}

static inline void
collect_entry(const HeapPartition *part, StringInfo out, const HeapEntry *e)
{
	heap_state_copy_room(part, out, sizeof(uint32) +
						 record_pair_size(e->key_len, ENTRY_VAL(e), e->val_len));
	record_put_entry(out, e->state_id, ENTRY_KEY(e), e->key_len, ENTRY_VAL(e), e->val_len);
}

/*
 * heap_collect appends to out every entry of one key group as of the
 * snapshot's cut, as entry records (format/records.h), of every heap
 * state: the writer keeps those it writes.  A partition whose last key
 * group this is is released: its retired entries are freed and its writers
 * stop copying.  Partition locks are held while copying, never while the
 * caller writes files.
 */
static void
heap_collect(int64 id, const StateInfo *states, const bool *collect, int nstates,
			 int key_group, StringInfo out)
{
	int			parts[HEAP_PARTITIONS];
	int			nparts = heap_state_key_group_partitions(key_group, parts);
	uint32		epoch = heap_state_shared->cut_epoch;

	heap_state_attach();
	for (int j = 0; j < nparts; j++)
	{
		HeapPartition *part = &heap_state_shared->parts[parts[j]];
		LWLock	   *lock = state_backend_lock(parts[j]);
		dsa_pointer *slots;

		LWLockAcquire(lock, LW_EXCLUSIVE);
		Assert(part->snap_epoch == epoch);
		slots = dsa_get_address(heap_state_area, part->slots);
		for (uint32 b = 0; b < part->nslots; b++)
		{
			HeapEntry  *e;

			/*
			 * Entries lie anywhere in the area: ask for the ones a few slots
			 * ahead now, so the copy is not one cache miss after another.
			 */
			if (b + SNAPSHOT_PREFETCH < part->nslots &&
				slots[b + SNAPSHOT_PREFETCH] != InvalidDsaPointer)
				heap_prefetch(slot_entry(slots[b + SNAPSHOT_PREFETCH]));
			if (slots[b] == InvalidDsaPointer)
				continue;
			e = slot_entry(slots[b]);
			if (e->epoch < epoch && heap_state_entry_key_group(e, parts[j]) == key_group)
				collect_entry(part, out, e);
		}
		if (part->nretired > 0)
		{
			dsa_pointer *r = dsa_get_address(heap_state_area, part->retired);

			for (uint32 i = 0; i < part->nretired; i++)
			{
				HeapEntry  *e = dsa_get_address(heap_state_area, r[i]);

				if (heap_state_entry_key_group(e, parts[j]) == key_group)
					collect_entry(part, out, e);
			}
		}
		if (heap_state_partition_done_after(key_group))
			heap_state_free_retired(part);
		LWLockRelease(lock);
	}
}

/*
 * heap_release_cut releases every partition a snapshot still holds (all of
 * them when it ended early: cancelled or failed).
 */
static void
heap_release_cut(int64 id)
{
	uint32		epoch;

	heap_state_attach();
	epoch = heap_state_shared->cut_epoch;
	if (epoch == 0)
		return;
	for (int i = 0; i < HEAP_PARTITIONS; i++)
	{
		HeapPartition *part = &heap_state_shared->parts[i];
		LWLock	   *lock = state_backend_lock(i);

		LWLockAcquire(lock, LW_EXCLUSIVE);
		if (part->snap_epoch == epoch)
			heap_state_free_retired(part);
		LWLockRelease(lock);
	}
	heap_state_shared->cut_epoch = 0;
}

const SnapshotStrategy heap_snapshot_strategy = {
	.prepare = heap_prepare,
	.cut = heap_cut,
	.collect = heap_collect,
	.write_native = NULL,
	.release = heap_release_cut,
	.verify_native = NULL,
	.restore_native = NULL,
	.after_retention = NULL,
	.native_files_name = NULL,
};
