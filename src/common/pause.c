/*
 * common/pause.c
 *		Sleeping a little while waiting for another process; see pause.h.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "common/pause.h"

/*
 * state_pause sleeps up to ms milliseconds, less when this process's latch
 * is set, then resets the latch and takes a pending interrupt (a cancel, a
 * terminate).  The postmaster's death ends the process.
 */
void
state_pause(long ms)
{
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, ms,
					 PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/*
 * state_pause_full sleeps the whole ms milliseconds, whatever sets the
 * latch meanwhile (a reply of the state worker sets it), taking interrupts.
 */
void
state_pause_full(long ms)
{
	TimestampTz until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), ms);
	long		left;

	while ((left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), until)) > 0)
		state_pause(left);
}
