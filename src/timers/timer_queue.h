/*
 * timers/timer_queue.h
 *		What sessions and the timer workers share about timers states
 *		(timer_queue.c): per database, the ring of timers registered since
 *		its worker last looked and the worker's latch; per state, its
 *		watermark and the figures its worker publishes; the pauses of a
 *		database's firing.
 */
#ifndef STATE_BACKEND_TIMER_QUEUE_H
#define STATE_BACKEND_TIMER_QUEUE_H

#include "datatype/timestamp.h"

#include "common/state_desc.h"

/* What a timer worker publishes of one state (state.timer_status). */
typedef struct TimerFigures
{
	int64		pending;		/* timers it holds to fire */
	int64		retrying;		/* of them, failed and waiting to retry */
	TimestampTz next_due;		/* DT_NOEND: none */
	double		fired_per_s;	/* over the last seconds */
	int64		lag_p99_us;		/* due (or watermark passing) to fired; -1: none yet */
	TimestampTz watermark;		/* DT_NOBEGIN: none yet (filled by timer_figures_read) */
	char		problem[256];	/* why it cannot fire, or "" */
} TimerFigures;

/*
 * The timer whose handler was running when its worker exited (stopped for
 * running past state_backend.timer_statement_timeout, or killed): its next
 * worker counts that as a failed attempt.  The key is known by its length
 * and hash.
 */
typedef struct KilledTimer
{
	uint32		state_id;
	int64		at;
	uint32		keylen;
	uint32		keyhash;
	int			attempts;		/* before the one that was stopped */
} KilledTimer;

/* In _PG_init, and the shared memory (module.c) */
extern void timer_queue_init(void);
extern Size timer_queue_shmem_size(void);
extern void timer_queue_shmem_init(void);

/* Sessions: a timer registered, at once or at its transaction's commit */
extern void timer_queue_push(const StateDesc *desc, int slot, const char *key, uint32 keylen, int64 at);
extern void timer_queue_note(const StateDesc *desc, int slot, const char *key, uint32 keylen, int64 at);
extern void timer_queue_wake(Oid dbid);

/* An event-time state's watermark, and what its worker publishes */
extern bool timer_watermark_advance(int slot, uint32 id, TimestampTz to, TimestampTz *was);
extern TimestampTz timer_watermark(int slot, uint32 id, TimestampTz *set_at);
extern TimestampTz timer_watermark_known(int slot, uint32 id, TimestampTz *set_at);
extern bool timer_window_judge(int slot, uint32 id, TimestampTz first_end, TimestampTz last_due,
							   bool pin, TimestampTz floor, TimestampTz *watermark);
extern void timer_window_unpin_all(void);
extern bool timer_watermark_observe(int slot, uint32 id, TimestampTz t, int64 lag);
extern TimestampTz timer_watermark_of(TimestampTz t, int64 lag);
extern void timer_watermark_arrival(int slot, uint32 id);
extern TimestampTz timer_watermark_idle(int slot, uint32 id, int64 idle, TimestampTz now,
										TimestampTz next);
extern uint64 timer_slot_pushes(int slot, uint32 id);
extern bool timer_slot_due(int slot, uint32 id, TimestampTz next, uint64 pushes_seen);
extern void timer_figures_read(int slot, uint32 id, TimerFigures *out);

/* A session's pause of its database's firing (a proxy's rescale) */
extern void timer_queue_pause(void);
extern void timer_queue_resume(void);
extern bool timer_queue_paused(void);
extern bool timer_queue_pause_held(void);
extern bool timer_worker_is_me(void);

/* The state worker, and create_state */
extern void timer_queue_launch(Oid dbid);
extern void timer_queue_supervise(void);
extern void timer_queue_stop(Oid dbid);

/* The timer worker of a database: its ring */
typedef void (*TimerQueuedFn) (void *arg, uint32 state_id, int64 at,
							   const char *key, uint32 keylen);
extern bool timer_queue_attach(Oid dbid);
extern bool timer_queue_drain(TimerQueuedFn fn, void *arg);
extern bool timer_queue_may_sleep(int64 until);
extern void timer_queue_hold_while_paused(void);

/*
 * Its figures; the count of deletions (sessions count them, a worker reads
 * it whole again when they pass half its index); the timer it was stopped in.
 */
extern void timer_figures_publish(int slot, uint32 id, const TimerFigures *f);
extern void timer_queue_note_deleted(int slot, uint32 id);
extern uint64 timer_queue_deleted(int slot, uint32 id);
extern void timer_queue_note_killed(const KilledTimer *k);
extern bool timer_queue_take_killed(KilledTimer *k);

#endif							/* STATE_BACKEND_TIMER_QUEUE_H */
