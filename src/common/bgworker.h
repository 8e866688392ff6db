/*
 * common/bgworker.h
 *		The background workers of this library, as they are all described
 *		to the postmaster: the state worker (worker.c), a database's timer
 *		worker (timers/timer_queue.c) and the snapshot converter
 *		(snapshot/canonical.c).  What each one does is in its own file.
 */
#ifndef STATE_BACKEND_BGWORKER_H
#define STATE_BACKEND_BGWORKER_H

#include "postmaster/bgworker.h"

extern void state_bgworker_describe(BackgroundWorker *bgw, const char *function_name,
									const char *type, BgWorkerStartTime start_time,
									int restart_time);

#endif							/* STATE_BACKEND_BGWORKER_H */
