/*
 * common/bgworker.c
 *		Describing a background worker of this library; see bgworker.h.
 */
#include "postgres.h"

#include "common/bgworker.h"

/*
 * state_bgworker_describe fills in bgw for a worker of this library that
 * runs function_name, with shared memory and a database connection,
 * started at start_time and restarted after restart_time seconds
 * (BGW_NEVER_RESTART: never).  Its name is its type; a caller that names
 * one worker of several (a database's) sets bgw_name after, and the main
 * argument, extra bytes and notify pid are the caller's too.
 */
void
state_bgworker_describe(BackgroundWorker *bgw, const char *function_name, const char *type,
						BgWorkerStartTime start_time, int restart_time)
{
	memset(bgw, 0, sizeof(*bgw));
	bgw->bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw->bgw_start_time = start_time;
	bgw->bgw_restart_time = restart_time;
	snprintf(bgw->bgw_library_name, BGW_MAXLEN, "state_backend");
	snprintf(bgw->bgw_function_name, BGW_MAXLEN, "%s", function_name);
	snprintf(bgw->bgw_name, BGW_MAXLEN, "%s", type);
	snprintf(bgw->bgw_type, BGW_MAXLEN, "%s", type);
}
