/*
 * common/progress.h
 *		How long jobs stay live: the liveness rule, written once.
 *
 * The state worker serves sessions' requests to the backends that need it,
 * so any step it takes blocks them.  The rule: a worker step that may take
 * longer than state_backend.request_timeout must report progress, often
 * (every few milliseconds of work):
 *  - progress_yield() between units of a long job (a key group of a
 *    snapshot, a file copied, a converter waited for): in the worker it
 *    serves sessions and then checks whether the job was cancelled;
 *  - progress_beat() inside one request that cannot let others in (a scan,
 *    a flush, reading a file): in the worker it tells waiting sessions
 *    that the worker is alive, so they keep waiting rather than time out.
 * Both are cheap no-ops in other processes, but for CHECK_FOR_INTERRUPTS.
 * The worker installs the hooks (worker.c); a snapshot installs its
 * cancel check for as long as it runs (snapshot/snapshot_driver.c).
 * Nothing below the worker calls the worker itself.
 */
#ifndef STATE_BACKEND_PROGRESS_H
#define STATE_BACKEND_PROGRESS_H

typedef void (*ProgressHook) (void);

extern void progress_yield(void);
extern void progress_beat(void);

extern void progress_set_hooks(ProgressHook yield, ProgressHook beat);
extern ProgressHook progress_set_cancel_check(ProgressHook check);

#endif							/* STATE_BACKEND_PROGRESS_H */
