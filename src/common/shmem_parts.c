/*
 * common/shmem_parts.c
 *		Sizing and setting up a struct of static shared memory from its
 *		ShmemPart (shmem_parts.h).  Which parts there are is module.c's list;
 *		what each holds and how it starts is its owner's.
 */
#include "postgres.h"

#include "storage/shmem.h"

#include "common/shmem_parts.h"

/* shmem_part_size: the room the part takes, to request at start. */
Size
shmem_part_size(const ShmemPart *part)
{
	return part->size_fn ? part->size_fn() : part->size;
}

/*
 * shmem_part_attach finds the part's struct in static shared memory, or
 * makes it (then its owner's init sets it up), and keeps its address where
 * the owner reads it.  Called under AddinShmemInitLock, in the postmaster
 * at every start of shared memory (children inherit the pointer).
 */
void
shmem_part_attach(const ShmemPart *part)
{
	bool		found;
	void	   *p;

	p = ShmemInitStruct(part->name, shmem_part_size(part), &found);
	*part->where = p;
	if (!found && part->init)
		part->init(p);
}
