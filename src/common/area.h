/*
 * common/area.h
 *		The extension's dynamic shared memory area: heap states live in it,
 *		and so do the snapshots kept in shared memory.  Bounded by
 *		state_backend.memory_limit.
 */
#ifndef STATE_BACKEND_AREA_H
#define STATE_BACKEND_AREA_H

#include "utils/dsa.h"

#include "common/shmem_parts.h"

extern const ShmemPart state_area_part;
extern dsa_area *state_area(void);
extern void state_area_apply_limit(void);

#endif							/* STATE_BACKEND_AREA_H */
