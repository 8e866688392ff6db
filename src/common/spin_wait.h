/*
 * common/spin_wait.h
 *		A short wait by spinning, for a process that expects another on
 *		another core to answer within microseconds: cheaper than a sleep on
 *		its latch and the wake-up that ends it, which cost each side a
 *		system call and a switch of processes.  A process stops spinning
 *		when it does not pay off, and callers cap how many spin at once.
 */
#ifndef STATE_BACKEND_SPIN_WAIT_H
#define STATE_BACKEND_SPIN_WAIT_H

#include "port/atomics.h"

typedef struct SpinWait
{
	int			credit;			/* what hits earned and misses cost; <= 0: off */
	int			skipped;		/* waits that did not spin since it went off */
} SpinWait;

typedef bool (*SpinReadyFn) (void *arg);

/* What a spin_wait did. */
typedef enum SpinResult
{
	SPIN_SKIPPED,				/* did not spin: the caller sleeps */
	SPIN_MISSED,				/* spun for its budget in vain */
	SPIN_SEEN					/* spun until ready() */
} SpinResult;

extern void spin_wait_init(SpinWait *sw);
extern SpinResult spin_wait(SpinWait *sw, pg_atomic_uint32 *spinners, int limit,
					  SpinReadyFn ready, void *arg);
extern int	spin_wait_cores(void);

#endif							/* STATE_BACKEND_SPIN_WAIT_H */
