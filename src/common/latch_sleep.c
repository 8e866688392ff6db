/*
 * common/latch_sleep.c
 *		A sleep on this process's latch ended by a futex wake (see
 *		latch_sleep.h).
 *
 * The protocol, for a sleeper S and a waker W that share a flag:
 *
 *	S: sleeping = 1; barrier; futex_wait(&latch->is_set, 0); sleeping = 0
 *	W: SetLatch(latch) (is_set = 1); barrier; if (sleeping) futex_wake
 *
 * If W reads the flag before S sets it, W has set is_set already, and S's
 * futex_wait returns at once, as the kernel finds the word no longer 0.
 * SetLatch itself sends no signal, as S never marks the latch
 * maybe_sleeping (only WaitLatch does, and a process that sleeps in
 * WaitLatch instead is woken by SetLatch's signal as always).  The handlers
 * of cancel, terminate, timeouts, reloads and procsignals set MyLatch, which
 * ends the sleep, or interrupt it (a sleep with a timeout is not restarted
 * after a handler).  The postmaster's death is looked at on entry and after
 * each sleep of at most a second, as WL_EXIT_ON_PM_DEATH would: its signal
 * on Linux interrupts the sleep, but sets no latch, so one that comes just
 * before the sleep is seen at the sleep's end.
 *
 * Elsewhere than 64-bit Linux (where the futex call's timeout is the C
 * library's struct timespec), on a latch not in shared memory, or once a
 * futex call has failed, it is WaitLatch.
 */
#include "postgres.h"

#if defined(__linux__) && SIZEOF_VOID_P == 8
#define USE_FUTEX_SLEEP
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#endif

#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/ipc.h"
#include "storage/pmsignal.h"
#include "utils/wait_event.h"

#include "common/latch_sleep.h"

/* The longest sleep before a look at the postmaster. */
#define LATCH_SLEEP_CHUNK_MS	1000L

/* WaitLatch, where a futex cannot serve. */
static int
wait_latch(long timeout_ms, uint32 wait_event_info)
{
	return WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH |
					 (timeout_ms >= 0 ? WL_TIMEOUT : 0),
					 timeout_ms, wait_event_info) & (WL_LATCH_SET | WL_TIMEOUT);
}

#ifdef USE_FUTEX_SLEEP
static bool futex_failed = false;	/* a futex call failed: WaitLatch from now on */

/* The latch's is_set word, which the futex calls use. */
static inline uint32 *
latch_word(Latch *latch)
{
	StaticAssertStmt(sizeof(latch->is_set) == sizeof(uint32),
					 "a latch's is_set is a futex word");
	return (uint32 *) &latch->is_set;
}

/* One futex sleep of up to ms while the latch is not set; false if it failed. */
static bool
futex_sleep(pg_atomic_uint32 *sleeping, long ms)
{
	struct timespec ts;
	int			rc;
	int			save_errno;

	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	pg_atomic_write_u32(sleeping, 1);
	pg_memory_barrier();
	rc = syscall(SYS_futex, latch_word(MyLatch), FUTEX_WAIT, 0, &ts, NULL, 0);
	save_errno = errno;
	pg_atomic_write_u32(sleeping, 0);
	if (rc == 0 || save_errno == EAGAIN || save_errno == EINTR || save_errno == ETIMEDOUT)
		return true;
	/* Not an error: this may run where interrupts are held, after a commit record. */
	futex_failed = true;
	errno = save_errno;
	elog(LOG, "state_backend: a futex sleep failed, sleeping on the latch from now on: %m");
	return false;
}
#endif

/*
 * latch_sleep sleeps until MyLatch is set or timeout_ms passed (< 0: no
 * timeout), and returns WL_LATCH_SET or WL_TIMEOUT, like WaitLatch.  It
 * exits the process if the postmaster died.  The caller resets the latch.
 * sleeping is the flag its wakers read (latch_wake).
 */
int
latch_sleep(pg_atomic_uint32 *sleeping, long timeout_ms, uint32 wait_event_info)
{
#ifdef USE_FUTEX_SLEEP
	instr_time	start;
	long		left = timeout_ms;

	if (!MyLatch->is_shared || futex_failed)
		return wait_latch(timeout_ms, wait_event_info);
	if (!PostmasterIsAlive())
		proc_exit(1);
	if (timeout_ms > 0)
		INSTR_TIME_SET_CURRENT(start);
	pgstat_report_wait_start(wait_event_info);
	while (!MyLatch->is_set && left != 0)
	{
		if (!futex_sleep(sleeping, left < 0 ? LATCH_SLEEP_CHUNK_MS : Min(left, LATCH_SLEEP_CHUNK_MS)))
		{
			pgstat_report_wait_end();
			return wait_latch(left, wait_event_info);
		}
		if (!PostmasterIsAlive())
			proc_exit(1);
		if (left > 0)
		{
			instr_time	now;

			INSTR_TIME_SET_CURRENT(now);
			INSTR_TIME_SUBTRACT(now, start);
			left = Max(timeout_ms - (long) INSTR_TIME_GET_MILLISEC(now), 0L);
		}
	}
	pgstat_report_wait_end();
	return MyLatch->is_set ? WL_LATCH_SET : WL_TIMEOUT;
#else
	return wait_latch(timeout_ms, wait_event_info);
#endif
}

/*
 * latch_wake sets a latch whose owner sleeps in latch_sleep (or in
 * WaitLatch, or not at all) and wakes it.
 */
void
latch_wake(Latch *latch, pg_atomic_uint32 *sleeping)
{
	SetLatch(latch);
#ifdef USE_FUTEX_SLEEP
	pg_memory_barrier();
	if (pg_atomic_read_u32(sleeping))
		(void) syscall(SYS_futex, latch_word(latch), FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
#endif
}
