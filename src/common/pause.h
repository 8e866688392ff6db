/*
 * common/pause.h
 *		A short, cancellable sleep of a process that waits for another one
 *		(a session for the state worker, the worker for the WAL or a
 *		checkpoint).  Waits that watch a socket, a condition variable or
 *		more events than the latch and a timeout call WaitLatch themselves.
 */
#ifndef STATE_BACKEND_PAUSE_H
#define STATE_BACKEND_PAUSE_H

extern void state_pause(long ms);
extern void state_pause_full(long ms);

#endif							/* STATE_BACKEND_PAUSE_H */
