/*
 * catalog/stats.c
 *		Usage counters of states (state.stats).
 *
 * Every backend counts in a row of shared memory of its own, one set of
 * counters per registry slot, with plain stores: the hot path writes no
 * cache line another process writes.  A reader sums the rows.  Each slot
 * has a generation, bumped when a state takes the slot and by
 * reset_stats(); a row counted under an older generation counts as zero,
 * and its owner starts it again at zero on its next count.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/proc.h"
#include "storage/shmem.h"

#include "catalog/stats.h"
#include "common/settings.h"

typedef struct StatsRow
{
	pg_atomic_uint32 gen;		/* of the slot, when these counts began */
	pg_atomic_uint64 counts[STATE_STAT_COUNT];
} StatsRow;

typedef struct StatsShared
{
	int			nbackends;
	int			nslots;
	pg_atomic_uint32 *gens;		/* per registry slot */
	StatsRow   *rows;			/* [backend][slot] */
} StatsShared;

static StatsShared *stats = NULL;

static Size
stats_shmem_size(void)
{
	Size		size = MAXALIGN(sizeof(StatsShared));

	size = add_size(size, MAXALIGN(mul_size(sizeof(pg_atomic_uint32), state_backend_max_states)));
	return add_size(size, mul_size(mul_size(sizeof(StatsRow), MaxBackends),
								   state_backend_max_states));
}

/* stats_init: every count zero, in shared memory just made. */
static void
stats_init(void *fresh)
{
	StatsShared *shared = fresh;
	char	   *p = (char *) shared + MAXALIGN(sizeof(StatsShared));

	shared->nbackends = MaxBackends;
	shared->nslots = state_backend_max_states;
	shared->gens = (pg_atomic_uint32 *) p;
	shared->rows = (StatsRow *) (p + MAXALIGN(sizeof(pg_atomic_uint32) * shared->nslots));
	for (int s = 0; s < shared->nslots; s++)
		pg_atomic_init_u32(&shared->gens[s], 1);
	for (Size r = 0; r < (Size) shared->nbackends * shared->nslots; r++)
	{
		pg_atomic_init_u32(&shared->rows[r].gen, 0);
		for (int c = 0; c < STATE_STAT_COUNT; c++)
			pg_atomic_init_u64(&shared->rows[r].counts[c], 0);
	}
}

const ShmemPart state_stats_part = {
	"state_backend stats", 0, stats_shmem_size, stats_init, (void **) &stats
};

/* state_stats_count counts n events of the state in a registry slot. */
void
state_stats_count(int slot, StateStat stat, uint64 n)
{
	StatsRow   *row;
	uint32		gen;

	if (!state_backend_track_stats || stats == NULL || slot < 0 || slot >= stats->nslots ||
		MyProc == NULL || MyProc->pgprocno >= stats->nbackends)
		return;
	row = &stats->rows[(Size) MyProc->pgprocno * stats->nslots + slot];
	gen = pg_atomic_read_u32(&stats->gens[slot]);
	if (pg_atomic_read_u32(&row->gen) != gen)
	{
		for (int c = 0; c < STATE_STAT_COUNT; c++)
			pg_atomic_write_u64(&row->counts[c], 0);
		pg_write_barrier();
		pg_atomic_write_u32(&row->gen, gen);
	}
	/* Only this backend writes its row: no locked instruction needed. */
	pg_atomic_write_u64(&row->counts[stat], pg_atomic_read_u64(&row->counts[stat]) + n);
}

/* state_stats_read sums every backend's counts of a slot's state. */
void
state_stats_read(int slot, uint64 *counts)
{
	uint32		gen;

	memset(counts, 0, sizeof(uint64) * STATE_STAT_COUNT);
	if (stats == NULL || slot < 0 || slot >= stats->nslots)
		return;
	gen = pg_atomic_read_u32(&stats->gens[slot]);
	for (int b = 0; b < stats->nbackends; b++)
	{
		StatsRow   *row = &stats->rows[(Size) b * stats->nslots + slot];

		if (pg_atomic_read_u32(&row->gen) != gen)
			continue;
		pg_read_barrier();
		for (int c = 0; c < STATE_STAT_COUNT; c++)
			counts[c] += pg_atomic_read_u64(&row->counts[c]);
	}
}

/* state_stats_reset starts a slot's counts again from zero. */
void
state_stats_reset(int slot)
{
	if (stats != NULL && slot >= 0 && slot < stats->nslots)
		pg_atomic_fetch_add_u32(&stats->gens[slot], 1);
}
