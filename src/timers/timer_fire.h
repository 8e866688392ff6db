/*
 * timers/timer_fire.h
 *		How the timer worker fires a state (as Flink's Triggerable): the
 *		routines of a kind of state that fires, registered by that kind
 *		at load (module.c), which the worker looks up by the state's kind
 *		(timer_fire.c), so that it names none.  A timers state's routine is
 *		in timer_fire.c; a window state's with the window code.
 */
#ifndef STATE_BACKEND_TIMER_FIRE_H
#define STATE_BACKEND_TIMER_FIRE_H

#include "fmgr.h"
#include "lib/stringinfo.h"

#include "common/codec.h"

/*
 * One firing of a state's key, as the worker hands it to the state's
 * routines: what it fires (the state, the key, the instant), and what the
 * firing tells the worker back.
 */
typedef struct TimerFire
{
	const StateTarget *st;		/* the state: its descriptor and slot */
	const StateKey *key;		/* the timer's key (NULL: reading an image) */
	TypeCodec  *key_codec;		/* of the state's key type */
	TypeCodec  *at_codec;		/* of timestamptz */
	FmgrInfo   *handler;		/* the state's handler (or emit function) */
	int64		at;				/* the timer's instant */
	StringInfo	atimg;			/* its image (at_codec) */
	int64		clock;			/* the clock the state's timers are due by */
	/* what the firing tells the worker */
	StringInfo	mark;			/* what the key takes in once it fired (done) */
	int64		revisit;		/* when to look at the key again; DT_NOEND: not */
	int			emitted;		/* calls of the handler */
} TimerFire;

typedef void (*TimerDueFn) (void *arg, int64 at);

/*
 * The routines of a kind of state that fires.  by_key: a timer names a key
 * to look at, not one call; a key is looked at once a batch, and a look
 * fires whatever of the key is due by the clock.
 */
typedef struct StateFireRoutine
{
	const char *handler_name;	/* what the log calls the function fired */
	bool		by_key;

	/* due_times calls fn with each instant a key's image (img) is due at. */
	void		(*due_times) (const TimerFire *tf, const char *img, uint32 len,
							  TimerDueFn fn, void *arg);

	/*
	 * present: whether the timer is still in its state (NULL: fire looks).
	 * Called before the handler's time limit starts.
	 */
	bool		(*present) (const TimerFire *tf);

	/*
	 * fire calls the handler for what is due, in the caller's
	 * subtransaction, as the state's owner, under the handler's time limit;
	 * false when nothing was (the timer or its key is gone).
	 */
	bool		(*fire) (TimerFire *tf);

	/*
	 * done: the timer leaves its state (fired: by the handler's call, else
	 * out of tries), in the caller's transaction: for a transactional state
	 * in the handler's, else after it committed.  Returns whether the key
	 * is due again at once (it changed while it fired).
	 */
	bool		(*done) (TimerFire *tf, bool fired);
} StateFireRoutine;

extern void timer_fire_register(StateKind kind, const StateFireRoutine *routine);
extern const StateFireRoutine *timer_fire_routine(const StateDesc *desc);

/* A timers state's: its handler called with (key, instant). */
extern const StateFireRoutine timers_fire_routine;

#endif							/* STATE_BACKEND_TIMER_FIRE_H */
