/*
 * common/shmem_parts.h
 *		A struct of the extension's in static shared memory, as the file that
 *		owns it describes it (a ShmemPart), so that one place, module.c's
 *		shared memory hooks, requests the room of them all and sets each up.
 */
#ifndef STATE_BACKEND_SHMEM_PARTS_H
#define STATE_BACKEND_SHMEM_PARTS_H

typedef struct ShmemPart
{
	const char *name;			/* its ShmemInitStruct name */
	Size		size;			/* its size, when fixed (else 0) */
	Size		(*size_fn) (void);	/* its size, when the settings give it */
	void		(*init) (void *fresh);	/* sets up the struct just made (where
										 * already points at it); NULL: nothing
										 * to set */
	void	  **where;			/* the owner's pointer to it, in this process */
} ShmemPart;

extern Size shmem_part_size(const ShmemPart *part);
extern void shmem_part_attach(const ShmemPart *part);

#endif							/* STATE_BACKEND_SHMEM_PARTS_H */
