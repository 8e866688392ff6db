/*
 * timers/timer_index.h
 *		The timer worker's states and its index of their due timers
 *		(timer_index.c), as the worker's loop and batches (timer_worker.c)
 *		use them.  Only the timer worker's files include it.
 */
#ifndef STATE_BACKEND_TIMER_INDEX_H
#define STATE_BACKEND_TIMER_INDEX_H

#include "utils/palloc.h"

#include "timers/timer_firing.h"

extern void timer_index_init(MemoryContext cxt);

/* The states: a look at the registry, and what it found */
extern int	timer_index_sync(bool reload_all);
extern bool timer_index_changed(void);
extern bool timer_index_any_stale(void);
extern Fired **timer_index_states(int *n);

/* Timers in and out: the ring's, a state's heap, its retries */
extern void timer_index_queued(void *arg, uint32 state_id, int64 at,
							   const char *key, uint32 keylen);
extern void timer_index_place_unseen(void);
extern int	timer_pending_cmp(const Pending *a, const Pending *b);
extern void timer_index_push(Fired *fs, int64 at, const char *key, uint32 keylen);
extern Pending timer_index_pop(Fired *fs);
extern void timer_index_add_retry(Fired *fs, Pending t, int attempts, bool alone,
								  TimestampTz not_before);

/* What the worker publishes of its states, and how long it may sleep */
extern void timer_index_publish_figures(TimestampTz now);
extern long timer_index_sleep_ms(TimestampTz now);
extern void timer_index_before_drain(void);
extern void timer_index_follow_idle(TimestampTz now);

#endif							/* STATE_BACKEND_TIMER_INDEX_H */
