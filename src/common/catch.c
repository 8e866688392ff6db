/*
 * common/catch.c
 *		Catching an error in a process that goes on after it; see catch.h.
 */
#include "postgres.h"

#include "storage/lwlock.h"

#include "common/catch.h"

/*
 * catch_error, called first in a PG_CATCH block whose code goes on:
 * switches to cxt (the caller's, as it was before PG_TRY), copies the
 * error there and clears it, and releases every LWLock, since an error
 * raised under one leaves it held until a transaction's abort, which the
 * caller may not come to.  The copy is the caller's to free
 * (FreeErrorData).
 */
ErrorData *
catch_error(MemoryContext cxt)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	LWLockReleaseAll();
	return edata;
}
