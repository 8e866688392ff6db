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

/* StateFold is in the provider API (api/state_backend_api.h). */

extern Datum state_fold(StateReducer kind, FmgrInfo *fn, Oid collation,
						Datum cur, Datum in);
extern bool state_fold_type_ok(Oid type, Oid fn);

#endif							/* STATE_BACKEND_FOLD_H */
