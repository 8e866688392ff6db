/*
 * backend/heap_backend.h
 *		The shared-memory (heap) implementation of KeyedStateBackend: its
 *		shared memory, sized and set up at the postmaster's hooks.
 */
#ifndef STATE_BACKEND_HEAP_BACKEND_H
#define STATE_BACKEND_HEAP_BACKEND_H

extern Size heap_state_shmem_size(void);
extern void heap_state_shmem_init(void);

#endif							/* STATE_BACKEND_HEAP_BACKEND_H */
