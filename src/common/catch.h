/*
 * common/catch.h
 *		Catching an error in a process that goes on after it: the state
 *		worker's loops, a commit's apply, a restore of one database.
 *		What each caller does with the error (a warning, a reply, a
 *		failed snapshot) stays with the caller.
 */
#ifndef STATE_BACKEND_CATCH_H
#define STATE_BACKEND_CATCH_H

#include "utils/elog.h"
#include "utils/palloc.h"

extern ErrorData *catch_error(MemoryContext cxt);

#endif							/* STATE_BACKEND_CATCH_H */
