/*
 * common/ttl_clock.c
 *		The clock of state TTL: the server's wall clock (Flink's processing
 *		time) plus an offset in shared memory, zero but when a test moves
 *		it forward (state._advance_ttl_clock), as Flink's tests give a state
 *		backend a TtlTimeProvider of their own.  So tests of expiry wait on
 *		no clock.  On a hot standby the clock is pinned to its primary's,
 *		as WAL carries it (logged_standby.c), so that expiry there follows
 *		the primary.  The offset is read without PostgreSQL's help: a
 *		backend's own threads (a storage engine's compaction) read it too.  Reading the clock is
 *		format/records.h's record_ttl_now.
 */
#include "postgres.h"

#include "datatype/timestamp.h"
#include "port/atomics.h"

#include "common/shmem_parts.h"
#include "common/ttl_clock.h"

/* Threads PostgreSQL did not start read the offset: a plain atomic load. */
#ifdef PG_HAVE_ATOMIC_U64_SIMULATION
#error "the TTL clock needs native 64-bit atomics"
#endif

/* The TTL clock is never more than this far ahead (about 1000 years). */
#define TTL_CLOCK_MAX_OFFSET	(INT64CONST(1000) * 365 * USECS_PER_DAY)

typedef struct TtlClock
{
	pg_atomic_uint64 offset;
	pg_atomic_uint64 pinned;	/* a standby's: its primary's clock; 0: none */
} TtlClock;

/* Set in the postmaster at shared-memory start-up, inherited by children. */
static TtlClock *clock_shared = NULL;

/* clock_init: no offset, and pinned to nothing, in shared memory just made. */
static void
clock_init(void *fresh)
{
	TtlClock   *clock = fresh;

	pg_atomic_init_u64(&clock->offset, 0);
	pg_atomic_init_u64(&clock->pinned, 0);
}

const ShmemPart ttl_clock_part = {
	"state_backend ttl clock", sizeof(TtlClock), NULL, clock_init, (void **) &clock_shared
};

/* ttl_clock_offset: microseconds the TTL clock is ahead of the wall clock. */
int64
ttl_clock_offset(void)
{
	return clock_shared ? (int64) pg_atomic_read_u64(&clock_shared->offset) : 0;
}

/*
 * ttl_clock_pinned: on a hot standby, the TTL clock is its primary's, as
 * the WAL applied last carried it (logged_standby.c); 0 elsewhere.
 */
int64
ttl_clock_pinned(void)
{
	return clock_shared ? (int64) pg_atomic_read_u64(&clock_shared->pinned) : 0;
}

/* ttl_clock_pin sets the clock a standby reads by (0: the wall clock again). */
void
ttl_clock_pin(int64 now)
{
	Assert(clock_shared != NULL);
	pg_atomic_write_u64(&clock_shared->pinned, (uint64) now);
}

/*
 * ttl_clock_advance moves the TTL clock usecs (> 0) forward, for every
 * process, until the server restarts; returns the new offset, or -1 when
 * it would take the clock more than TTL_CLOCK_MAX_OFFSET ahead (then the
 * clock stays).
 */
int64
ttl_clock_advance(int64 usecs)
{
	uint64		old;

	Assert(usecs > 0 && clock_shared != NULL);
	old = pg_atomic_read_u64(&clock_shared->offset);
	do
	{
		if (usecs > TTL_CLOCK_MAX_OFFSET - (int64) old)
			return -1;
	} while (!pg_atomic_compare_exchange_u64(&clock_shared->offset, &old, old + usecs));
	return (int64) old + usecs;
}
