/*
 * backend/heap/heap_table.c
 *		The heap table's shared parts: its header in static shared memory,
 *		its partitions in the shared area, which key groups each partition
 *		holds, and the retired lists that keep entries a running snapshot
 *		still needs.
 *
 * Operations on one key are in heap_backend.c, whatever walks whole
 * partitions in heap_scan.c; both use what is here.
 *
 * A transactional commit sets aside, before its commit record, what its
 * apply will allocate (heap_state_reserve): chunks of the area, held until
 * the apply needs them.  From the apply's start (heap_state_unreserve) this
 * process's allocations draw on them: an allocation the area refuses frees
 * a chunk and tries again, chunk after chunk, under LOCK_AREA held
 * exclusively, while every allocation of the table takes LOCK_AREA shared
 * as long as any reservation is held (reserved_chunks), so that no other
 * write takes the room freed meanwhile.  LOCK_AREA is a leaf there: taken
 * under a partition's lock, nothing else is waited for while holding it.
 * What is left is freed when the transaction ends.
 */
#include "postgres.h"

#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "backend/heap/heap_table.h"
#include "common/area.h"
#include "common/key_group.h"
#include "common/membuf.h"
#include "common/settings.h"
#include "common/shmem_parts.h"

#define HEAP_INITIAL_SLOTS		64

StaticAssertDecl(sizeof(dsa_pointer) == 8, "heap slots need 64-bit DSA pointers");

HeapShared *heap_state_shared = NULL;
dsa_area   *heap_state_area = NULL;

/* heap_shared_init: no partition made yet, in shared memory just made. */
static void
heap_shared_init(void *fresh)
{
	HeapShared *shared = fresh;

	memset(shared, 0, sizeof(HeapShared));
	pg_atomic_init_u32(&shared->reserved_chunks, 0);
	shared->parts_ready = false;
	shared->epoch = 1;
}

static const ShmemPart heap_part = {
	"state_backend heap", sizeof(HeapShared), NULL, heap_shared_init, (void **) &heap_state_shared
};

/* The heap provider's shared memory (providers.c asks for it). */
Size
heap_state_shmem_size(void)
{
	return shmem_part_size(&heap_part);
}

void
heap_state_shmem_init(void)
{
	shmem_part_attach(&heap_part);
}

/*
 * heap_state_attach_area makes the table usable in this process (through
 * heap_state_attach): the shared area attached (common/area.c), and the
 * partitions' slot arrays made in it by whichever process comes first.
 */
void
heap_state_attach_area(void)
{
	dsa_area   *area = state_area();

	LWLockAcquire(state_backend_lock(LOCK_AREA), LW_EXCLUSIVE);
	if (!heap_state_shared->parts_ready)
	{
		for (int i = 0; i < HEAP_PARTITIONS; i++)
		{
			HeapPartition *part = &heap_state_shared->parts[i];

			part->slots = dsa_allocate0(area, sizeof(dsa_pointer) * HEAP_INITIAL_SLOTS);
			part->nslots = HEAP_INITIAL_SLOTS;
			part->nentries = 0;
			part->snap_epoch = 0;
			part->nretired = 0;
			part->retired_cap = 0;
			part->retired = InvalidDsaPointer;
		}
		heap_state_shared->parts_ready = true;
	}
	LWLockRelease(state_backend_lock(LOCK_AREA));
	/* Only now: a failure above leaves the process unattached. */
	heap_state_area = area;
}


/* heap_state_key_group_partitions lists the partitions that hold a key group. */
int
heap_state_key_group_partitions(int key_group, int *parts)
{
	int			m = state_backend_max_parallelism;
	int			spread;

	if (m >= HEAP_PARTITIONS)
	{
		parts[0] = key_group % HEAP_PARTITIONS;
		return 1;
	}
	spread = HEAP_PARTITIONS / m;
	for (int j = 0; j < spread; j++)
		parts[j] = key_group + m * j;
	return spread;
}

/* Does a partition hold more than one key group? */
static inline bool
partitions_shared_by_key_groups(void)
{
	return state_backend_max_parallelism > HEAP_PARTITIONS;
}

/* The key group of an entry (see HeapEntry). */
int
heap_state_entry_key_group(const HeapEntry *e, int partition)
{
	if (!partitions_shared_by_key_groups())
	{
		int			m = state_backend_max_parallelism;

		return m >= HEAP_PARTITIONS ? partition : partition % m;
	}
	return key_group_for_hash(key_image_hash(ENTRY_KEY(e), e->key_len),
							  state_backend_max_parallelism);
}

/* Is key_group the last key group of partition p that a snapshot visits? */
bool
heap_state_partition_done_after(int key_group)
{
	return key_group + HEAP_PARTITIONS >= state_backend_max_parallelism;
}

/*
 * heap_state_unlock releases the lock of a partition this process holds.
 * An error is never raised under a partition lock: the error's cleanup (a
 * restore discarding its hidden states, say) may take the same lock, and
 * LWLocks are released only when the transaction aborts, after that.
 */
void
heap_state_unlock(const HeapPartition *part)
{
	LWLock	   *lock = state_backend_lock((int) (part - heap_state_shared->parts));

	if (LWLockHeldByMe(lock))
		LWLockRelease(lock);
}

/*
 * heap_state_out_of_memory raises program_limit_exceeded for a write to a
 * state that the area (state_backend.memory_limit) has no room for, after
 * releasing the lock of the partition written.
 */
void
heap_state_out_of_memory(const StateTarget *st, const HeapPartition *part)
{
	heap_state_unlock(part);
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("out of state memory"),
			 errdetail("Heap states may use at most %d kB (state_backend.memory_limit); writing state \"%s\" would exceed it.",
					   state_backend_memory_limit_kb, NameStr(st->info.name)),
			 errhint("Clear or truncate states, or raise state_backend.memory_limit and reload the configuration.")));
}

/* A reservation: chunks of at most HEAP_RESERVE_CHUNK bytes of the area. */
#define HEAP_RESERVE_CHUNK		((Size) 64 * 1024)

typedef struct HeapReservation
{
	int			n;
	dsa_pointer chunks[FLEXIBLE_ARRAY_MEMBER];
} HeapReservation;

/* Chunks this process's allocations may draw on (its apply's), until its transaction ends. */
static dsa_pointer *drawable = NULL;
static int	ndrawable = 0;
static int	drawable_cap = 0;
static bool release_registered = false;

/* Frees n chunks of a reservation. */
static void
free_chunks(dsa_pointer *chunks, int n)
{
	for (int i = 0; i < n; i++)
		dsa_free(heap_state_area, chunks[i]);
	if (n > 0)
		pg_atomic_fetch_sub_u32(&heap_state_shared->reserved_chunks, (uint32) n);
}

/* At the end of a transaction, what its apply did not draw on goes back. */
static void
release_at_end(ResourceReleasePhase phase, bool isCommit, bool isTopLevel, void *arg)
{
	if (phase != RESOURCE_RELEASE_AFTER_LOCKS || !isTopLevel || ndrawable == 0)
		return;
	free_chunks(drawable, ndrawable);
	ndrawable = 0;
}

/*
 * heap_state_reserve sets aside "bytes" of the area for writes to come (a
 * transaction's, applied at its commit, which must not fail then), or
 * raises program_limit_exceeded when the area has no room for them.
 * heap_state_unreserve, just before those writes, lets them draw on it.
 */
void *
heap_state_reserve(Size bytes)
{
	int			n = (int) ((bytes + HEAP_RESERVE_CHUNK - 1) / HEAP_RESERVE_CHUNK);
	HeapReservation *r;

	heap_state_attach();
	if (!release_registered)
	{
		RegisterResourceReleaseCallback(release_at_end, NULL);
		release_registered = true;
	}
	r = MemoryContextAlloc(TopTransactionContext,
						   offsetof(HeapReservation, chunks) + sizeof(dsa_pointer) * n);
	r->n = 0;
	/* Counted first: from now on others' allocations take LOCK_AREA. */
	pg_atomic_fetch_add_u32(&heap_state_shared->reserved_chunks, (uint32) n);
	for (int i = 0; i < n; i++)
	{
		Size		len = Min(HEAP_RESERVE_CHUNK, bytes - (Size) i * HEAP_RESERVE_CHUNK);
		dsa_pointer p = heap_state_alloc(len, 0);

		if (!DsaPointerIsValid(p))
		{
			free_chunks(r->chunks, r->n);
			pg_atomic_fetch_sub_u32(&heap_state_shared->reserved_chunks, (uint32) (n - r->n));
			pfree(r);
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("out of state memory"),
					 errdetail("Heap states may use at most %d kB (state_backend.memory_limit); the writes of this transaction to transactional states would exceed it.",
							   state_backend_memory_limit_kb),
					 errhint("Commit smaller transactions, clear or truncate states, or raise state_backend.memory_limit.")));
		}
		r->chunks[r->n++] = p;
	}
	return r;
}

void
heap_state_unreserve(void *handle)
{
	HeapReservation *r = handle;

	if (ndrawable + r->n > drawable_cap)
	{
		int			cap = Max(ndrawable + r->n, Max(2 * drawable_cap, 16));

		drawable = drawable == NULL ?
			MemoryContextAlloc(TopMemoryContext, sizeof(dsa_pointer) * cap) :
			repalloc(drawable, sizeof(dsa_pointer) * cap);
		drawable_cap = cap;
	}
	memcpy(drawable + ndrawable, r->chunks, sizeof(dsa_pointer) * r->n);
	ndrawable += r->n;
	pfree(r);
}

/*
 * heap_state_alloc allocates from the area for the table (flags as
 * dsa_allocate_extended's, DSA_ALLOC_NO_OOM always: InvalidDsaPointer when
 * the area has no room).  In a commit's apply an allocation the area
 * refuses draws on the commit's reservation.
 */
dsa_pointer
heap_state_alloc(Size size, int flags)
{
	LWLock	   *lock = state_backend_lock(LOCK_AREA);
	bool		locked = false;
	dsa_pointer p;

	flags |= DSA_ALLOC_NO_OOM;
	if (pg_atomic_read_u32(&heap_state_shared->reserved_chunks) > 0)
	{
		LWLockAcquire(lock, LW_SHARED);
		locked = true;
	}
	p = dsa_allocate_extended(heap_state_area, size, flags);
	if (locked)
		LWLockRelease(lock);
	if (DsaPointerIsValid(p) || ndrawable == 0)
		return p;
	LWLockAcquire(lock, LW_EXCLUSIVE);
	while (!DsaPointerIsValid(p) && ndrawable > 0)
	{
		free_chunks(&drawable[--ndrawable], 1);
		p = dsa_allocate_extended(heap_state_area, size, flags);
	}
	LWLockRelease(lock);
	return p;
}

/*
 * heap_state_copy_room makes room for a copy of n bytes out of a partition
 * (common/membuf.h, which raises nothing); when there is none it releases
 * the partition's lock and raises out_of_memory.
 */
void
heap_state_copy_room(const HeapPartition *part, StringInfo buf, Size n)
{
	if (likely(membuf_room(buf, n)))
		return;
	heap_state_unlock(part);
	ereport(ERROR,
			(errcode(ERRCODE_OUT_OF_MEMORY),
			 errmsg("out of memory"),
			 errdetail("Copying %zu bytes of state out of shared memory failed.", n)));
}

/*
 * heap_state_reserve_retired makes room in a partition's retired list for n more
 * entries, so that retiring later cannot fail halfway through a write.
 */
void
heap_state_reserve_retired(const StateTarget *st, HeapPartition *part, uint32 n)
{
	if (!heap_state_try_reserve_retired(part, n))
		heap_state_out_of_memory(st, part);
}

/* heap_state_try_reserve_retired: the same, false when there is no memory. */
bool
heap_state_try_reserve_retired(HeapPartition *part, uint32 n)
{
	uint32		need = part->nretired + n;
	uint32		cap;
	dsa_pointer newp;

	if (part->snap_epoch == 0 || need <= part->retired_cap)
		return true;
	cap = Max(need, Max(part->retired_cap * 2, 64));
	newp = heap_state_alloc(sizeof(dsa_pointer) * cap,
								 DSA_ALLOC_NO_OOM | DSA_ALLOC_HUGE);
	if (!DsaPointerIsValid(newp))
		return false;
	if (part->nretired > 0)
		memcpy(dsa_get_address(heap_state_area, newp),
			   dsa_get_address(heap_state_area, part->retired),
			   sizeof(dsa_pointer) * part->nretired);
	if (DsaPointerIsValid(part->retired))
		dsa_free(heap_state_area, part->retired);
	part->retired = newp;
	part->retired_cap = cap;
	return true;
}

/* heap_state_release frees an entry, or retires it if a snapshot needs it. */
void
heap_state_release(HeapPartition *part, HeapEntry *e, dsa_pointer p)
{
	if (heap_entry_shared(part, e))
	{
		Assert(part->nretired < part->retired_cap);
		((dsa_pointer *) dsa_get_address(heap_state_area, part->retired))[part->nretired++] = p;
	}
	else
		dsa_free(heap_state_area, p);
}

/* Free a partition's retired entries; the snapshot no longer needs them. */
void
heap_state_free_retired(HeapPartition *part)
{
	if (part->nretired > 0)
	{
		dsa_pointer *r = dsa_get_address(heap_state_area, part->retired);

		for (uint32 i = 0; i < part->nretired; i++)
			dsa_free(heap_state_area, r[i]);
	}
	if (DsaPointerIsValid(part->retired))
		dsa_free(heap_state_area, part->retired);
	part->retired = InvalidDsaPointer;
	part->nretired = 0;
	part->retired_cap = 0;
	part->snap_epoch = 0;
}

/* Put a tagged slot value at the first empty slot from its home. */
void
heap_state_slots_insert(dsa_pointer *slots, uint32 nslots, dsa_pointer s)
{
	uint32		mask = nslots - 1;
	uint32		i = slot_home(heap_entry_rehash(slot_entry(s)), nslots);

	while (slots[i] != InvalidDsaPointer)
		i = (i + 1) & mask;
	slots[i] = s;
}

