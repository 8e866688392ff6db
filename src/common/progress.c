/*
 * common/progress.c
 *		Progress hooks of long jobs: see common/progress.h for the rule.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "common/progress.h"

static ProgressHook yield_hook = NULL;
static ProgressHook beat_hook = NULL;
static ProgressHook cancel_check = NULL;

/*
 * progress_yield: a long job finished one unit of work.  Sessions are
 * served (in the worker), interrupts land, and a cancelled job raises its
 * error here.
 */
void
progress_yield(void)
{
	CHECK_FOR_INTERRUPTS();
	if (yield_hook)
		yield_hook();
	if (cancel_check)
		cancel_check();
}

/* progress_beat: still working on one request; nothing else may run. */
void
progress_beat(void)
{
	if (beat_hook)
		beat_hook();
}

/* The state worker installs what keeps sessions going while it works. */
void
progress_set_hooks(ProgressHook yield, ProgressHook beat)
{
	yield_hook = yield;
	beat_hook = beat;
}

/*
 * progress_set_cancel_check installs the check that a running job was
 * cancelled (NULL: none); returns the one it replaces.
 */
ProgressHook
progress_set_cancel_check(ProgressHook check)
{
	ProgressHook old = cancel_check;

	cancel_check = check;
	return old;
}
