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
	int			budget_us;		/* how long a spin may last */
	int			fails;			/* spins in a row that saw nothing */
	int			skipped;		/* waits that did not spin since it went off */
} SpinWait;

typedef bool (*SpinReadyFn) (void *arg);

extern void spin_wait_init(SpinWait *sw, int budget_us);
extern bool spin_wait(SpinWait *sw, pg_atomic_uint32 *spinners, int limit,
					  SpinReadyFn ready, void *arg);
extern int	spin_wait_cores(void);

#endif							/* STATE_BACKEND_SPIN_WAIT_H */
