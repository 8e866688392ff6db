/*
 * common/spin_wait.c
 *		A short wait by spinning (see spin_wait.h).
 *
 * A process spins for up to state_backend.spin_wait microseconds each time
 * (100 by default), as long as spinning pays
 * off: each spin that saw what it waited for earns a credit (up to
 * SPIN_CREDIT_MOST), each that did not costs SPIN_MISS_COST, as a miss
 * burns its whole budget where a hit saves a sleep and a wake-up.  With no
 * credit left it stops, and then spins only one wait in SPIN_RETRY_AFTER,
 * whose success gives it SPIN_CREDIT_START again.  So a process whose
 * partner answers fast (a session alone with the state worker) spins each
 * time, and one whose partner answers late or seldom (many sessions on few
 * cores, a client that pauses between statements) soon stops spending CPU
 * on it.  The caller may count its spinners in a shared counter and cap
 * them.  Nothing here raises, sleeps or serves interrupts: a spin lasts a
 * bounded few microseconds.
 *
 * The cores are those this process may run on: its CPU affinity, and a
 * cgroup's CPU quota (cpu.max, in a container).  On one, nobody spins.
 */
#include "postgres.h"

#include <sched.h>
#include <unistd.h>

#include "portability/instr_time.h"
#include "storage/s_lock.h"

#include "common/settings.h"
#include "common/spin_wait.h"

#define SPIN_CREDIT_START	8
#define SPIN_CREDIT_MOST	16
#define SPIN_MISS_COST		4
#define SPIN_RETRY_AFTER	64
/* Pauses between looks at the clock. */
#define SPIN_CLOCK_EVERY	32

/* The quota of a cgroup (v2) in CPUs, rounded up; 0 when there is none. */
static int
cgroup_cpus(void)
{
	FILE	   *f = fopen("/sys/fs/cgroup/cpu.max", "r");
	char		quota[32];
	long		period = 0;
	int			cpus = 0;

	if (f == NULL)
		return 0;
	if (fscanf(f, "%31s %ld", quota, &period) == 2 && strcmp(quota, "max") != 0 && period > 0)
	{
		long		q = atol(quota);

		if (q > 0)
			cpus = (int) Min((q + period - 1) / period, (long) INT_MAX);
	}
	fclose(f);
	return cpus;
}

/* spin_wait_cores: the cores this process may run on, which callers cap their spinners by. */
int
spin_wait_cores(void)
{
	static int	cores = 0;

	if (cores == 0)
	{
		cpu_set_t	set;
		long		n = sysconf(_SC_NPROCESSORS_ONLN);
		int			quota = cgroup_cpus();

		cores = n > 0 && n < INT_MAX ? (int) n : 1;
		if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
			cores = Min(cores, CPU_COUNT(&set));
		if (quota > 0)
			cores = Min(cores, quota);
	}
	return cores;
}

/* spin_wait_init sets a wait up: spinning, for up to state_backend.spin_wait each time. */
void
spin_wait_init(SpinWait *sw)
{
	sw->credit = SPIN_CREDIT_START;
	sw->skipped = 0;
}

/*
 * spin_wait spins until ready(arg) or the budget runs out, and says which.
 * When spinning is off (state_backend.spin_wait, or
 * for want of credit), this process may run on one core only, or spinners
 * (when given) already counts limit processes that spin, it returns
 * SPIN_SKIPPED at once, and the caller sleeps as it would have.
 */
SpinResult
spin_wait(SpinWait *sw, pg_atomic_uint32 *spinners, int limit,
		  SpinReadyFn ready, void *arg)
{
	instr_time	start;
	instr_time	now;
	SpinResult	result = SPIN_MISSED;
	int			budget = state_backend_spin_wait_us;

	if (budget <= 0 || spin_wait_cores() < 2)
		return SPIN_SKIPPED;
	if (sw->credit <= 0)
	{
		if (++sw->skipped < SPIN_RETRY_AFTER)
			return SPIN_SKIPPED;
		sw->skipped = 0;
	}
	if (spinners != NULL && pg_atomic_add_fetch_u32(spinners, 1) > (uint32) Max(limit, 0))
	{
		pg_atomic_sub_fetch_u32(spinners, 1);
		return SPIN_SKIPPED;
	}
	INSTR_TIME_SET_CURRENT(start);
	for (int i = 1;; i++)
	{
		if (ready(arg))
		{
			result = SPIN_SEEN;
			break;
		}
		pg_spin_delay();
		if (i % SPIN_CLOCK_EVERY == 0)
		{
			INSTR_TIME_SET_CURRENT(now);
			INSTR_TIME_SUBTRACT(now, start);
			if (INSTR_TIME_GET_MICROSEC(now) >= budget)
				break;
		}
	}
	if (spinners != NULL)
		pg_atomic_sub_fetch_u32(spinners, 1);
	if (result == SPIN_SEEN)
		sw->credit = sw->credit <= 0 ? SPIN_CREDIT_START : Min(sw->credit + 1, SPIN_CREDIT_MOST);
	else
		sw->credit -= SPIN_MISS_COST;
	return result;
}
