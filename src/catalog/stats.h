/*
 * catalog/stats.h
 *		Usage counters of states (state.stats), counted by every backend in
 *		its own row of shared memory (catalog/stats.c).
 */
#ifndef STATE_BACKEND_STATS_H
#define STATE_BACKEND_STATS_H

#include "common/shmem_parts.h"

typedef enum StateStat
{
	STATE_STAT_READS,
	STATE_STAT_WRITES,
	STATE_STAT_MISSES,
	STATE_STAT_EXPIRED,
	STATE_STAT_TIMERS_REGISTERED,	/* timers registered that were not there */
	STATE_STAT_TIMERS_FIRED,	/* handler calls that committed */
	STATE_STAT_TIMERS_FAILED,	/* timers moved to state.timer_failures */
	STATE_STAT_LATE,			/* values too late for every window they had */
	STATE_STAT_COUNT
} StateStat;

extern const ShmemPart state_stats_part;
extern void state_stats_count(int slot, StateStat stat, uint64 n);
extern void state_stats_read(int slot, uint64 *counts);
extern void state_stats_reset(int slot);

#endif							/* STATE_BACKEND_STATS_H */
