/*
 * timers/timer_firing.h
 *		The timer worker's states, index entries and batches, which its
 *		files share (timer_worker.c: the loop and the batches;
 *		timer_index.c: the states and their index of due timers;
 *		timer_keys.c: the keys a batch looks at, each once).  Nothing else
 *		includes it.
 */
#ifndef STATE_BACKEND_TIMER_FIRING_H
#define STATE_BACKEND_TIMER_FIRING_H

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/timestamp.h"

#include "backend/keyed_backend.h"
#include "common/codec.h"
#include "timers/timer_fire.h"

/* Lags kept per state for their 99th percentile. */
#define LAG_SAMPLES			1024

/* One timer the index holds. */
typedef struct Pending
{
	int64		at;
	uint64		prefix;			/* the key's first 8 bytes (timer_index_push) */
	uint32		keylen;
	char	   *key;			/* in the worker's context */
} Pending;

/* One that failed and waits to be tried again. */
typedef struct Retry
{
	Pending		t;
	int			attempts;
	TimestampTz not_before;
	bool		alone;			/* its batch failed as a whole: next time in a batch of its own */
} Retry;

typedef struct Fired
{
	uint32		id;
	int			slot;
	StateDesc	desc;
	bool		seen;			/* by the last look at the registry */
	bool		owner_super;	/* its owner is a superuser (at the last look) */
	TypeCodec	key_codec;
	TypeCodec	at_codec;
	FmgrInfo	handler;
	bool		handler_ready;
	const StateFireRoutine *fire;	/* of its kind (timer_fire.h) */
	char		problem[256];
	uint64		deleted_seen;	/* timer_queue_deleted when it was last read whole */
	uint64		checked_batch;	/* the batch its handler was last checked for */
	uint64		pushes_seen;	/* timer_slot_pushes before the last drain */
	/* the index: a binary heap by (at, key) */
	Pending    *heap;
	int			nheap;
	int			maxheap;
	Retry	   *retries;
	int			nretries;
	int			maxretries;
	/* figures */
	int64		lags[LAG_SAMPLES];
	int			nlags;
	int			lag_next;
	int64		rate_fired;		/* fired since rate_start */
	TimestampTz rate_start;
	double		fired_per_s;
} Fired;

/*
 * A timer's step in a batch (as pg_cron's CronTaskState): it comes due,
 * and the batch ends it in one of the others, which the end of the batch
 * acts on in one switch (fire_batch).
 */
typedef enum TimerStep
{
	TIMER_DUE,					/* in the batch, not tried yet */
	TIMER_WAITING,				/* not tried this time (its handler cannot run,
								 * the batch ran out of time): back to the
								 * index, or to its retries */
	TIMER_FIRED,				/* its handler ran (a key to look at: it was
								 * looked at) */
	TIMER_GONE,					/* no longer in its state: nothing to do */
	TIMER_RETRYING,				/* its try failed: tried again later */
	TIMER_FAILED				/* out of tries: in state.timer_failures */
} TimerStep;

/* One timer of a batch. */
typedef struct Firing
{
	Fired	   *fs;
	Pending		t;
	int			attempts;		/* tries so far (this one counted once made) */
	TimerStep	step;
	bool		alone;			/* in a batch of its own */
	char	   *error;
	int64		clock;			/* its state's clock, which it fires by */
	int			emitted;		/* calls of the handler */
	/* a key to look at: what the look fired, and when to look again */
	StringInfoData mark;
	int64		revisit;		/* DT_NOEND: not */
	bool		again;			/* changed while it fired: due again */
} Firing;

/* Keys to look at already in a batch (a key is looked at once a batch). */
typedef struct BatchKeys
{
	int			size;			/* a power of two, over twice the batch */
	int		   *slot;			/* batch index + 1, 0: free */
} BatchKeys;

/* timer_keys.c */
extern void timer_keys_begin(BatchKeys *seen, int max);
extern bool timer_keys_seen(BatchKeys *seen, const Firing *batch, const Fired *fs,
							const Pending *p);
extern void timer_keys_add(BatchKeys *seen, const Firing *batch, int i);

#endif							/* STATE_BACKEND_TIMER_FIRING_H */
