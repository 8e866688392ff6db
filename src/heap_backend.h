/*
 * heap_backend.h
 *		The shared-memory (heap) implementation of KeyedStateBackend: set-up
 *		hooks for the postmaster and the state worker.
 */
#ifndef STATE_BACKEND_HEAP_BACKEND_H
#define STATE_BACKEND_HEAP_BACKEND_H

#include "lib/stringinfo.h"

extern Size heap_shmem_size(void);
extern void heap_shmem_init(void);
extern void heap_area_attach(void);
extern struct dsa_area *heap_area_get(void);
extern void heap_apply_memory_limit(void);

/* Snapshots of heap states: see heap_backend.c. */
extern uint32 heap_snapshot_begin(void (*at_cut) (void *arg), void *arg);
extern void heap_snapshot_collect(uint32 epoch, int key_group, StringInfo out);
extern void heap_snapshot_end(uint32 epoch);

#endif							/* STATE_BACKEND_HEAP_BACKEND_H */
