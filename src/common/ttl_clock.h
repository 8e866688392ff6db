/*
 * common/ttl_clock.h
 *		The clock TTL deadlines are measured on (ttl_clock.c).
 */
#ifndef STATE_BACKEND_TTL_CLOCK_H
#define STATE_BACKEND_TTL_CLOCK_H

#include "common/shmem_parts.h"

extern const ShmemPart ttl_clock_part;
extern int64 ttl_clock_offset(void);
extern int64 ttl_clock_advance(int64 usecs);
extern int64 ttl_clock_pinned(void);
extern void ttl_clock_pin(int64 now);

#endif							/* STATE_BACKEND_TTL_CLOCK_H */
