/*
 * common/spin_wait.c
 *		A short, adaptive wait by spinning (see spin_wait.h).
 *
 * A process spins for up to its budget each time, as long as spinning pays
 * off.  After SPIN_FAILS_OFF spins in a row that saw nothing it stops, and
 * then only one wait in SPIN_RETRY_AFTER spins, whose success turns it on
 * again.  So a process whose partner answers fast (a session alone with the
 * state worker) spins each time, and one whose partner is busy elsewhere
 * (many sessions on few cores) soon stops spending CPU on it: a sixty-fourth
 * of a budget per wait.  The caller may count its spinners in a shared
 * counter and cap them.  Nothing here raises, sleeps or serves interrupts: a
 * spin lasts a bounded few microseconds.
 */
#include "postgres.h"

#include <unistd.h>

#include "portability/instr_time.h"
#include "storage/s_lock.h"

#include "common/spin_wait.h"

#define SPIN_FAILS_OFF		4
#define SPIN_RETRY_AFTER	64
/* Pauses between looks at the clock. */
#define SPIN_CLOCK_EVERY	32

static int
spin_cores(void)
{
	static int	cores = 0;

	if (cores == 0)
	{
		long		n = sysconf(_SC_NPROCESSORS_ONLN);

		cores = n > 0 && n < INT_MAX ? (int) n : 1;
	}
	return cores;
}

/* spin_wait_init sets a wait up: spinning, for up to budget_us each time. */
void
spin_wait_init(SpinWait *sw, int budget_us)
{
	sw->budget_us = Max(budget_us, 1);
	sw->fails = 0;
	sw->skipped = 0;
}

/*
 * spin_wait spins until ready(arg) or the budget runs out; returns whether
 * ready() became true.  When spinning is off, the machine has one core, or
 * spinners (when given) already counts limit processes that spin, it
 * returns false at once, and the caller sleeps as it would have.
 */
bool
spin_wait(SpinWait *sw, pg_atomic_uint32 *spinners, int limit,
		  SpinReadyFn ready, void *arg)
{
	instr_time	start;
	instr_time	now;
	bool		seen = false;

	if (sw->fails >= SPIN_FAILS_OFF)
	{
		if (++sw->skipped < SPIN_RETRY_AFTER)
			return false;
		sw->skipped = 0;
	}
	if (spin_cores() < 2)
		return false;
	if (spinners != NULL && pg_atomic_add_fetch_u32(spinners, 1) > (uint32) Max(limit, 0))
	{
		pg_atomic_sub_fetch_u32(spinners, 1);
		return false;
	}
	INSTR_TIME_SET_CURRENT(start);
	for (int i = 1;; i++)
	{
		if (ready(arg))
		{
			seen = true;
			break;
		}
		pg_spin_delay();
		if (i % SPIN_CLOCK_EVERY == 0)
		{
			INSTR_TIME_SET_CURRENT(now);
			INSTR_TIME_SUBTRACT(now, start);
			if (INSTR_TIME_GET_MICROSEC(now) >= sw->budget_us)
				break;
		}
	}
	if (spinners != NULL)
		pg_atomic_sub_fetch_u32(spinners, 1);
	if (seen)
		sw->fails = 0;
	else if (sw->fails < SPIN_FAILS_OFF)
		sw->fails++;
	return seen;
}

/* spin_wait_cores: the machine's cores, which callers cap their spinners by. */
int
spin_wait_cores(void)
{
	return spin_cores();
}
