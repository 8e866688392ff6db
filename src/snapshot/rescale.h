/*
 * snapshot/rescale.h
 *		Restoring a part of a snapshot, or merging the snapshots of several
 *		parts (rescale.c); the restore itself is restore.c's.
 */
#ifndef STATE_BACKEND_RESCALE_H
#define STATE_BACKEND_RESCALE_H

#include "lib/stringinfo.h"

#include "common/types.h"

/* Which part of how many parts a restore keeps; parallelism 0: all. */
typedef struct RestoreSplit
{
	int			parallelism;
	int			part;
} RestoreSplit;

/* One state of one snapshot, as the merge plan sees it. */
typedef struct RescaleInput
{
	const char *source;			/* the snapshot, for messages; one pointer per snapshot */
	const StateDesc *desc;		/* as it will be here (types resolved) */
} RescaleInput;

/*
 * What a restore does with one state of one snapshot: where it goes (the
 * index of the merged state), which key groups it keeps, and whether it
 * adds to what an earlier snapshot put there (operator lists) or is left
 * out (broadcast state, after the first snapshot's).
 */
typedef struct RescaleLoad
{
	int			merged;
	int			kg_first;		/* -1: every key group */
	int			kg_last;
	bool		append;
	bool		skip;
} RescaleLoad;

extern int	rescale_plan(const RescaleInput *inputs, int ninputs, const RestoreSplit *split,
						 StateDesc **merged, RescaleLoad *loads, bool *whole);
extern bool rescale_chunk(const char *list, uint32 len, int parts, int part, StringInfo out);

#endif							/* STATE_BACKEND_RESCALE_H */
