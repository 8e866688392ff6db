/*
 * heap_backend.h
 *		The shared-memory (heap) implementation of KeyedStateBackend: set-up
 *		hooks for the postmaster and the state worker.
 */
#ifndef HEAP_BACKEND_H
#define HEAP_BACKEND_H

extern Size heap_shmem_size(void);
extern void heap_shmem_init(void);
extern void heap_area_attach(void);
extern void heap_apply_memory_limit(void);

#endif							/* HEAP_BACKEND_H */
