/*
 * common/fold.h
 *		The one fold of ReducingState: sum, min or max of two datums.
 *
 * A session folds with the function it looked up; the state worker, which
 * has no database, folds with a StateFold that a session sent it, and only
 * when state_fold_type_ok says the fold needs no catalog access.
 */
#ifndef STATE_BACKEND_FOLD_H
#define STATE_BACKEND_FOLD_H

#include "fmgr.h"

#include "common/types.h"

/*
 * StateFold describes a fold as a request can carry it: the reducer, the
 * value type and its storage, the function ("+" for sum, the btree
 * comparison for min and max) and the collation to call it with.
 */
typedef struct StateFold
{
	StateReducer kind;
	Oid			type;
	Oid			fn;
	Oid			collation;
	int16		typlen;
	bool		typbyval;
} StateFold;

extern Datum state_fold(StateReducer kind, FmgrInfo *fn, Oid collation,
						Datum cur, Datum in);
extern bool state_fold_type_ok(Oid type, Oid fn);

#endif							/* STATE_BACKEND_FOLD_H */
