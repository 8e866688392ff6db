/*
 * common/latch_sleep.h
 *		A sleep on this process's latch that another process ends with a
 *		futex wake rather than a signal: what WaitLatch(MyLatch,
 *		WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH) does, for the
 *		waits of a round trip between a session and the state worker.
 *
 * SetLatch wakes a process sleeping in WaitLatch with kill(), and the
 * sleeper takes the signal through a signalfd and epoll_wait: on the
 * virtual machines measured, 25-30 µs a round trip between two processes
 * and 7 µs of the waker's time in kill(), where a futex wait and wake on
 * the latch's own flag take about 10 µs and 3.5 µs.  The sleeper waits on
 * its latch's is_set word, so that the SetLatch(MyLatch) of the handlers of
 * cancel, terminate, timeouts and reloads ends the sleep as it ends
 * WaitLatch's (the kernel compares the word before it sleeps), and
 * publishes that it sleeps in a flag of its own, which a waker reads after
 * setting the latch to know whether to wake it.
 */
#ifndef STATE_BACKEND_LATCH_SLEEP_H
#define STATE_BACKEND_LATCH_SLEEP_H

#include "port/atomics.h"
#include "storage/latch.h"

extern int	latch_sleep(pg_atomic_uint32 *sleeping, long timeout_ms, uint32 wait_event_info);
extern void latch_wake(Latch *latch, pg_atomic_uint32 *sleeping);

#endif							/* STATE_BACKEND_LATCH_SLEEP_H */
