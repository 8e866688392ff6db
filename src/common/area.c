/*
 * common/area.c
 *		The dynamic shared memory area, created on first use by whichever
 *		process comes first (the state worker at start, or a session), pinned
 *		so that it outlives its creator, and mapped once per process.
 *
 * What lives in it is up to its users: the heap table (backend/
 * heap_backend.c) and snapshots kept in memory (snapshot/snapshot_control.c).
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "common/area.h"
#include "common/locks.h"
#include "common/settings.h"
#include "common/shmem_parts.h"

#define AREA_TRANCHE_NAME	"state_backend_area"

typedef struct AreaShared
{
	int			tranche;
	bool		ready;
	dsa_handle	handle;
} AreaShared;

static AreaShared *area_shared = NULL;
static dsa_area *area = NULL;

/* area_shared_init: the area's tranche, in shared memory just made. */
static void
area_shared_init(void *fresh)
{
	AreaShared *shared = fresh;

	shared->tranche = LWLockNewTrancheId();
	shared->ready = false;
}

const ShmemPart state_area_part = {
	"state_backend area", sizeof(AreaShared), NULL, area_shared_init, (void **) &area_shared
};

static size_t
memory_limit_bytes(void)
{
	return (size_t) state_backend_memory_limit_kb * 1024;
}

/*
 * state_area returns the area, attached: created when it does not exist
 * yet, and its mapping pinned in this process (without that, the next
 * statement after a commit would find it unmapped).
 */
dsa_area *
state_area(void)
{
	MemoryContext old;

	if (area != NULL)
		return area;
	state_backend_check_loaded();

	LWLockRegisterTranche(area_shared->tranche, AREA_TRANCHE_NAME);
	old = MemoryContextSwitchTo(TopMemoryContext);
	LWLockAcquire(state_backend_lock(LOCK_AREA), LW_EXCLUSIVE);
	if (!area_shared->ready)
	{
		dsa_area   *created = dsa_create(area_shared->tranche);

		dsa_pin(created);
		dsa_set_size_limit(created, memory_limit_bytes());
		area_shared->handle = dsa_get_handle(created);
		pg_write_barrier();
		area_shared->ready = true;
		area = created;
	}
	else
		area = dsa_attach(area_shared->handle);
	dsa_pin_mapping(area);
	LWLockRelease(state_backend_lock(LOCK_AREA));
	MemoryContextSwitchTo(old);
	return area;
}

/* state_area_apply_limit applies a changed state_backend.memory_limit. */
void
state_area_apply_limit(void)
{
	if (area != NULL)
		dsa_set_size_limit(area, memory_limit_bytes());
}
