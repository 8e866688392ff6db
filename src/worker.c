/*
 * worker.c
 *		The state worker: a static background worker started with the
 *		server.  It creates the shared area that heap states live in,
 *		restores them from the newest checkpoint at start, writes the
 *		snapshots that sessions request, takes a checkpoint every
 *		state_backend.checkpoint_interval, and a last one at a clean
 *		shutdown.
 *
 * It also starts and stops the storage of every backend that needs the
 * worker (backend/providers.h) and serves the sessions' requests to them
 * (ipc/channel.c) between everything else, and while it writes snapshots: it installs the progress
 * hooks of common/progress.h, so that long jobs keep sessions served
 * without calling the worker.  This file is the only caller of the
 * request-serving loop.  Heap state is read and written in place by every
 * backend (backend/heap/heap_backend.c); the worker is not on that path.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "storage/procarray.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "backend/keyed_backend.h"
#include "catalog/registry.h"
#include "common/area.h"
#include "common/bgworker.h"
#include "common/catch.h"
#include "common/fault.h"
#include "common/pause.h"
#include "common/progress.h"
#include "common/settings.h"
#include "common/signing.h"
#include "format/state_wal.h"
#include "ipc/channel.h"
#include "logged/logged.h"
#include "logged/logged_replay.h"
#include "snapshot/checkpoint.h"
#include "snapshot/restore.h"
#include "snapshot/snapshot_control.h"
#include "snapshot/snapshot_driver.h"
#include "timers/timer_queue.h"
#include "ttl/ttl_state.h"
#include "state_ops.h"
#include "worker.h"

PGDLLEXPORT void state_worker_main(Datum main_arg);

/* Seconds the postmaster waits before it restarts a worker that failed. */
#define STATE_WORKER_RESTART_SECONDS	1

/*
 * state_worker_register asks the postmaster to start the worker once the
 * server accepts connections, and to restart it if it fails.
 */
void
state_worker_register(void)
{
	BackgroundWorker worker;

	state_bgworker_describe(&worker, "state_worker_main", "state_backend worker",
							BgWorkerStart_ConsistentState, STATE_WORKER_RESTART_SECONDS);
	RegisterBackgroundWorker(&worker);
}

/* Requests served per session in one round, so that none starves. */
#define STATE_WORKER_SERVE_BUDGET	64

static MemoryContext serve_cxt = NULL;
static MemoryContext sweep_cxt = NULL;

/* Ticks of the background TTL cleanup, while a state needs it, and else. */
#define STATE_WORKER_SWEEP_MS		100
#define STATE_WORKER_IDLE_SWEEP_MS	1000

/*
 * How often the worker looks at the WAL that logged states keep, and the
 * least time between checkpoints it takes for that (logged_wants_checkpoint).
 */
#define STATE_WORKER_WAL_LOOK_MS			1000
#define STATE_WORKER_WAL_CHECKPOINT_GAP_MS	2000
#define STATE_WORKER_TIMERS_LOOK_MS			1000
/* On a hot standby: a look this often at the WAL replayed (no wake-up comes). */
#define STATE_WORKER_STANDBY_LOOK_MS		10

/*
 * state_worker_dispatch runs one request of a session: snapshots are the
 * worker's own, the rest is for the backend it is addressed to.
 */
static bool
state_worker_dispatch(uint16 target, uint16 kind, const char *payload, uint32 len,
					  StringInfo reply)
{
	if (target == CHANNEL_TARGET_WORKER)
	{
		if (kind != CHANNEL_WORKER_SNAPSHOT)
			elog(ERROR, "state_backend: unknown worker request %u", kind);
		return snapshot_handle_request(payload, len, reply);
	}
	return keyed_backends_handle_request(target, kind, payload, len, reply);
}

/* Set once the start is over: sessions are served from then on. */
static bool worker_started = false;

/*
 * A backend whose storage failed is not written again in this process: the
 * worker exits at once, wherever it served from (its loop, a snapshot's or
 * a checkpoint's yields), for a new worker to open it afresh.  During the
 * start, logged_start_wait says so and waits instead.
 */
static void
state_worker_exit_if_failed(void)
{
	const char *failed;

	if (!worker_started)
		return;
	failed = keyed_backends_worker_failed();
	if (failed != NULL)
	{
		ereport(LOG,
				(errmsg("state_backend worker restarts: a write to the storage of backend \"%s\" failed",
						failed)));
		proc_exit(1);
	}
}

/*
 * state_worker_serve serves what sessions sent, in rounds, until nothing
 * is left or max_rounds rounds ran; returns whether work is left.  Long jobs
 * of the worker (writing a snapshot) reach it through progress_yield(), so
 * that sessions keep going meanwhile.
 */
static bool
state_worker_serve(int max_rounds)
{
	MemoryContext old = MemoryContextSwitchTo(serve_cxt);
	bool		more = true;

	PG_TRY();
	{
		keyed_backends_worker_round();
	}
	PG_CATCH();
	{
		/* Reported, and tried again at the next round. */
		MemoryContextSwitchTo(serve_cxt);
		EmitErrorReport();
		FlushErrorState();
		LWLockReleaseAll();
	}
	PG_END_TRY();
	for (int i = 0; more && i < max_rounds; i++)
	{
		more = channel_worker_serve(state_worker_dispatch, STATE_WORKER_SERVE_BUDGET);
		MemoryContextReset(serve_cxt);
	}
	MemoryContextSwitchTo(old);
	state_worker_exit_if_failed();
	return more;
}

/*
 * state_worker_sweep runs a tick of the background TTL cleanup
 * (ttl/ttl_state.c); returns whether a state needs more.  A state
 * dropped meanwhile is no error; others are reported and the next tick
 * tries again.
 */
static bool
state_worker_sweep(void)
{
	MemoryContext old = MemoryContextSwitchTo(sweep_cxt);
	bool		more = true;

	PG_TRY();
	{
		more = ttl_state_sweep();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		edata = catch_error(sweep_cxt);
		if (edata->sqlerrcode != ERRCODE_UNDEFINED_OBJECT)
		{
			edata->elevel = LOG;
			ThrowErrorData(edata);
		}
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	MemoryContextReset(sweep_cxt);
	return more;
}

/* progress_yield() in the worker: a round of serving sessions. */
static void worker_checkpoint_done(XLogRecPtr wal_position, bool holds_logged,
								   const StateDesc *held, int nheld);

static void
state_worker_yield(void)
{
	(void) state_worker_serve(1);
}

/* Close every backend's storage on the way out, whatever the reason. */
static void
state_worker_on_exit(int code, Datum arg)
{
	progress_set_hooks(NULL, NULL);
	channel_worker_detach();
	keyed_backends_worker_stop();
}

/*
 * A checkpoint (a snapshot under checkpoint_dir), written right away.  A
 * periodic one that cannot start because another snapshot runs waits for
 * the next period; the final one waits for that snapshot to end.  A final
 * one that fails is reported loudly and noted for the next start
 * (snapshot/checkpoint.c).
 */
static void worker_pause(long ms);

static void
state_worker_checkpoint(bool final)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile int64 id = 0;
	SnapshotInfo info;

	if (state_backend_checkpoint_dir[0] == '\0')
		return;
	/* The final one must be written: let a running snapshot end first. */
	if (final)
		while (snapshot_run_pending())
			;
	PG_TRY();
	{
		id = snapshot_request(NULL, SNAPSHOT_NATIVE, true);
		/* Transactions are committing: serve them until they let the cut in. */
		for (int tries = 0; id == 0 && tries < (final ? 10000 : 1000); tries++)
		{
			(void) state_worker_serve(1);
			worker_pause(1L);
			id = snapshot_request(NULL, SNAPSHOT_NATIVE, true);
		}
		if (id == 0)
			ereport(LOG,
					(errmsg("state_backend checkpoint postponed: transactions kept committing for a second")));
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		edata = catch_error(cxt);
		if (final)
			checkpoint_final_failed(0, edata->message);
		else
			ereport(LOG, (errmsg("state_backend checkpoint not started: %s", edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	while (snapshot_run_pending())
		;
	if (final && id != 0 && snapshot_get(id, &info) && info.status != SNAPSHOT_COMPLETED)
		checkpoint_final_failed(id, info.error[0] ? info.error : snapshot_status_name(info.status));
}

/*
 * At a clean shutdown every session is being terminated together with the
 * worker.  Wait (a little) for them to go, so that the final checkpoint
 * comes after the last write they acknowledged.
 */
static void
state_worker_wait_for_sessions(void)
{
	for (int i = 0; i < 500; i++)
	{
		if (CountDBConnections(InvalidOid) == 0)
			return;
		(void) state_worker_serve(16);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * worker_pause sleeps up to ms (or until woken) where the worker waits for
 * something other than sessions, and applies a configuration reload.
 */
static void
worker_pause(long ms)
{
	state_pause(ms);
	if (ConfigReloadPending)
		state_settings_reload();
}

/* The checkpoint a standby's worker loaded at its start (NULL: none, or unknown). */
static const char *standby_loaded = NULL;

/* What the worker's loop keeps between its rounds. */
typedef struct WorkerRounds
{
	TimestampTz last_checkpoint;
	TimestampTz last_sweep;
	TimestampTz last_timers_look;
	TimestampTz last_request_look;	/* for a checkpoint a standby asked for */
	bool		sweeping;		/* the last TTL sweep found work */
	bool		busy;			/* sessions sent more than one round could take */
	uint64		settings_applied;	/* state_settings_generation() last applied */
} WorkerRounds;

/*
 * state_worker_start sets the worker up: signals, its connection, shared
 * memory; after a server start or crash restart, the states back from
 * the backends that keep them and the newest checkpoint, and logged
 * states' WAL replayed.
 * Sessions are served from its end on.
 */
/*
 * The signing key is made at start, so that it can be shared before the
 * first snapshot; a failure (a read-only file system) leaves snapshots
 * unsigned, with a warning, and the worker serving.
 */
static void
ensure_signing_key(void)
{
	MemoryContext cxt = CurrentMemoryContext;

	PG_TRY();
	{
		signing_key_ensure();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		EmitErrorReport();
		FlushErrorState();
		ereport(WARNING,
				(errmsg("state_backend has no signing key"),
				 errdetail("Snapshots are written unsigned until the key file can be read or made.")));
	}
	PG_END_TRY();
}

/*
 * start_hold: with state_backend.start_hold on, the start waits here, after
 * the checkpoint is loaded and before the WAL of logged states is replayed,
 * until the setting is turned off (reload) or the server stops, which then
 * finds a start that did not finish (tests).
 */
static void
start_hold(void)
{
	if (state_backend_start_hold)
		ereport(LOG,
				(errmsg("state_backend start holds after loading the checkpoint (state_backend.start_hold)")));
	while (state_backend_start_hold && !ShutdownRequestPending)
		worker_pause(1000L);
	if (ShutdownRequestPending)
		proc_exit(1);
}

/*
 * The newest checkpoint holds states of a backend whose library is not
 * loaded: serve nothing, take no checkpoint, and wait for the server to
 * stop, so that nothing stored is lost.
 */
static void
refuse_start(const char *backend)
{
	ereport(LOG,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("state_backend serves no state: the newest checkpoint holds states of backend \"%s\", which is not registered on this server",
					backend),
			 errdetail("No checkpoint is taken meanwhile, so nothing stored is lost."),
			 errhint("Add the library that provides backend \"%s\" to shared_preload_libraries and restart the server.",
					 backend)));
	while (!ShutdownRequestPending)
		worker_pause(1000L);
	proc_exit(0);
}

/*
 * The worker could not load the whole checkpoint, and it is gone: a
 * standby's was removed by the primary's retention while it was read, past
 * its lease (the WAL it would apply over what is missing would make states
 * no primary ever had), or an operator moved aside one that could not be
 * loaded while the start waited for it (restore_on_start).  The server's
 * processes start again (exit code 2: the postmaster restarts them all,
 * with fresh shared memory), and the next start loads the newest
 * checkpoint.
 */
static void
standby_load_failed(const char *dir)
{
	ereport(LOG,
			(errmsg("state_backend could not load checkpoint \"%s\" whole, and it is gone; the server's processes restart to load the newest one",
					dir ? dir : "")));
	proc_exit(2);
}

/*
 * start_wait_restore (RestoreWaitFn): the start cannot load checkpoint id
 * (detail says why): sessions are told, and it is tried again in a while.
 */
#define STATE_WORKER_RESTORE_RETRY_MS	5000

static void
start_wait_restore(int64 id, const char *detail)
{
	logged_set_blocked(InvalidXLogRecPtr, id, detail);
	logged_start_wait(STATE_WORKER_RESTORE_RETRY_MS);
}

static void
state_worker_start(void)
{
	bool		recovering;
	bool		standby;
	char	   *loaded = NULL;
	RestoreStart restored = {NULL, NULL, true};

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();

	channel_worker_begin();

	/* No database: shared catalogs only (database names, roles). */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	CurrentResourceOwner = ResourceOwnerCreate(NULL, "state_backend worker");
	ensure_signing_key();

	/*
	 * A standby's worker loads a checkpoint whose cut the standby's WAL
	 * holds, and applies that WAL as it is replayed (logged_standby.c).
	 */
	standby = RecoveryInProgress();
	recovering = !registry_is_ready();
	if (standby && recovering)
		logged_standby_wait_for_checkpoint();

	(void) state_area();
	serve_cxt = AllocSetContextCreate(TopMemoryContext, "state_backend requests",
									  ALLOCSET_DEFAULT_SIZES);
	sweep_cxt = AllocSetContextCreate(TopMemoryContext, "state_backend TTL cleanup",
									  ALLOCSET_DEFAULT_SIZES);
	before_shmem_exit(state_worker_on_exit, (Datum) 0);

	/*
	 * Restore only into fresh shared memory (server start, crash restart):
	 * a worker restarted on its own finds the states live.  States of a
	 * backend that keeps its data come back from it first.
	 */
	if (recovering)
	{
		/*
		 * A worker before this one began the start in this shared memory and
		 * exited in the middle: what it loaded and applied is half there,
		 * and its records would be applied again.  The server's processes
		 * start again (exit code 2), with fresh shared memory.
		 */
		if (logged_start_interrupted())
		{
			ereport(LOG,
					(errmsg("state_backend worker restarts the server's processes: the start of the worker before it did not finish"),
					 errdetail("States are loaded and their WAL replayed again into fresh shared memory.")));
			proc_exit(2);
		}

		/*
		 * What a backend kept on a standby is a copy of a running primary's
		 * files (a base backup): the backends set it aside, so that every
		 * state comes from the checkpoint and WAL.
		 */
		keyed_backends_worker_start(standby ? STATE_WORKER_START_PROMOTED :
									STATE_WORKER_START_FRESH);
		logged_start_loading();
		logged_note_adopted();
		state_wal_suppress(true);
		loaded = restore_on_start(standby, start_wait_restore, &restored);
		logged_set_blocked(InvalidXLogRecPtr, 0, NULL);
		state_wal_suppress(false);
		if (restored.unregistered != NULL)
			refuse_start(restored.unregistered);
		if (!restored.complete && loaded != NULL && !snapshot_dir_is_complete(loaded))
			standby_load_failed(loaded);
		start_hold();
	}
	else
	{
		keyed_backends_worker_start(STATE_WORKER_START_AGAIN);
		/* A snapshot the worker before this one was writing is ended. */
		snapshot_fail_orphan();
		if (state_backend_checkpoint_dir[0] != '\0')
			snapshot_bump_next_id(checkpoint_max_id(state_backend_checkpoint_dir));
	}
	channel_worker_attach();
	progress_set_hooks(state_worker_yield, channel_worker_heartbeat);
	snapshot_set_checkpoint_hook(worker_checkpoint_done);

	/*
	 * Logged states: their WAL since the checkpoint, then a checkpoint of
	 * the result, before any session is served (logged.c); on a standby,
	 * what it has replayed, and then as it replays more.
	 */
	if (RecoveryInProgress() || (!recovering && registry_is_standby()))
	{
		/*
		 * A worker started again on a standby, or during a promotion that
		 * its predecessor did not finish, goes on from where that one had
		 * applied; the first round finishes a promotion.
		 */
		logged_standby_begin(restored.manifest, recovering);
		standby_loaded = loaded;
		registry_set_standby(true);
	}
	else if (recovering && logged_recover(restored.manifest))
		state_worker_checkpoint(false);
	/* A change a crash cut short between its switch and its old state's drop. */
	if (recovering && !RecoveryInProgress())
		state_ops_drop_replaced();
	keyed_backends_worker_ready();
	registry_set_ready();
	worker_started = true;
	ereport(LOG, (errmsg("state_backend worker started")));
}

/*
 * A checkpoint is durable: WAL before its cut can go (logged.c), and so can
 * the states alter_state replaced that waited for one holding their
 * replacement.
 */
static void
worker_checkpoint_done(XLogRecPtr wal_position, bool holds_logged, const StateDesc *held,
					   int nheld)
{
	logged_checkpoint_done(wal_position, holds_logged);
	state_ops_checkpoint_done(held, nheld);
}

/* Whether the worker takes checkpoints on its own. */
static bool
checkpoints_timed(void)
{
	return state_backend_checkpoint_interval_s > 0 && state_backend_checkpoint_dir[0] != '\0';
}

/* How long the next round may sleep, in ms (-1: until woken). */
static long
round_timeout(const WorkerRounds *r)
{
	long		timeout = -1L;

	if (checkpoints_timed())
	{
		TimestampTz next = TimestampTzPlusMilliseconds(r->last_checkpoint,
													   state_backend_checkpoint_interval_s * 1000L);
		long		secs;
		int			usecs;

		TimestampDifference(GetCurrentTimestamp(), next, &secs, &usecs);
		timeout = secs * 1000L + usecs / 1000 + 1;
	}
	if (state_backend_ttl_cleanup_key_groups > 0)
	{
		long		tick = r->sweeping ? STATE_WORKER_SWEEP_MS : STATE_WORKER_IDLE_SWEEP_MS;

		timeout = timeout < 0 ? tick : Min(timeout, tick);
	}
	/* A look each second at the databases whose timers need a worker. */
	timeout = timeout < 0 ? STATE_WORKER_TIMERS_LOOK_MS : Min(timeout, STATE_WORKER_TIMERS_LOOK_MS);
	/* A look each second at the WAL logged states keep. */
	if (state_backend_checkpoint_dir[0] != '\0')
		timeout = timeout < 0 ? STATE_WORKER_WAL_LOOK_MS : Min(timeout, STATE_WORKER_WAL_LOOK_MS);
	if (logged_standby_active())
		timeout = Min(timeout, STATE_WORKER_STANDBY_LOOK_MS);
	return r->busy ? 0 : timeout;
}

/*
 * standby_round, in a round of the worker of a hot standby: apply the WAL
 * replayed since the last round; a standby takes no checkpoint, sweeps
 * nothing and runs no timers (returns true).  Once the server is
 * promoted: apply the rest, hand the states to sessions, and take a
 * checkpoint at the next round (returns false).
 */
static bool
standby_round(WorkerRounds *r)
{
	if (RecoveryInProgress())
	{
		r->busy |= logged_standby_round();
		return true;
	}
	/* A record it cannot apply: the promotion ends once it is applied. */
	if (!logged_standby_promoted())
		return true;
	FAULT_POINT("standby.promote_unlogged");
	restore_unlogged_at_promotion(standby_loaded, start_wait_restore);
	logged_set_blocked(InvalidXLogRecPtr, 0, NULL);
	/* The primary went on taking checkpoints: the next id comes after theirs. */
	if (state_backend_checkpoint_dir[0] != '\0')
		snapshot_bump_next_id(checkpoint_max_id(state_backend_checkpoint_dir));
	FAULT_POINT("standby.promote_end");
	registry_set_standby(false);
	/* As after a crash: the next recovery reads from here. */
	if (registry_any_logged())
	{
		FAULT_POINT("standby.promote_checkpoint");
		state_worker_checkpoint(false);
	}
	r->last_checkpoint = GetCurrentTimestamp();
	return false;
}

/*
 * state_worker_round is one round of the worker's loop: sleep until woken
 * or the next timer, then reload settings, serve sessions, write snapshots
 * asked for, sweep expired values and take a checkpoint when they are due.
 */
static void
state_worker_round(WorkerRounds *r)
{
	long		timeout = round_timeout(r);

	if (timeout != 0)
		channel_worker_spin();
	channel_worker_sleep(timeout);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();

	if (ConfigReloadPending)
		state_settings_reload();
	if (state_settings_generation() != r->settings_applied)
	{
		/* Reloads taken here, or in a wait since the last round. */
		r->settings_applied = state_settings_generation();
		state_area_apply_limit();
		keyed_backends_worker_reload();
		channel_worker_reloaded();
	}
	r->busy = state_worker_serve(4);
	if (logged_standby_active() && standby_round(r))
		return;
	while (snapshot_run_pending())
		;
	logged_log_clock();
	if (TimestampDifferenceExceeds(r->last_timers_look, GetCurrentTimestamp(),
								   STATE_WORKER_TIMERS_LOOK_MS))
	{
		timer_queue_supervise();
		r->last_timers_look = GetCurrentTimestamp();
	}
	if (state_backend_ttl_cleanup_key_groups > 0 &&
		TimestampDifferenceExceeds(r->last_sweep, GetCurrentTimestamp(),
								   r->sweeping ? STATE_WORKER_SWEEP_MS : STATE_WORKER_IDLE_SWEEP_MS))
	{
		r->sweeping = state_worker_sweep();
		r->last_sweep = GetCurrentTimestamp();
	}
	if (checkpoints_timed() &&
		TimestampDifferenceExceeds(r->last_checkpoint, GetCurrentTimestamp(),
								   state_backend_checkpoint_interval_s * 1000))
	{
		state_worker_checkpoint(false);
		r->last_checkpoint = GetCurrentTimestamp();
	}
	else if (TimestampDifferenceExceeds(r->last_checkpoint, GetCurrentTimestamp(),
										STATE_WORKER_WAL_CHECKPOINT_GAP_MS) &&
			 logged_wants_checkpoint())
	{
		state_worker_checkpoint(false);
		r->last_checkpoint = GetCurrentTimestamp();
	}
	else if (TimestampDifferenceExceeds(r->last_request_look, GetCurrentTimestamp(),
										STATE_WORKER_WAL_LOOK_MS))
	{
		/* A standby made since the newest checkpoint waits for one. */
		r->last_request_look = GetCurrentTimestamp();
		if (checkpoint_take_request())
		{
			ereport(LOG,
					(errmsg("state_backend takes a checkpoint a standby asked for: its WAL begins after the newest checkpoint's cut")));
			state_worker_checkpoint(false);
			r->last_checkpoint = GetCurrentTimestamp();
		}
	}
}

/*
 * state_worker_main is the worker's body: set up and restore, then wait on
 * the latch for snapshot requests, checkpoint times and reloads until
 * asked to stop.
 */
void
state_worker_main(Datum main_arg)
{
	WorkerRounds rounds;

	state_worker_start();
	rounds.last_checkpoint = GetCurrentTimestamp();
	rounds.last_sweep = 0;
	rounds.last_timers_look = 0;
	rounds.last_request_look = 0;
	rounds.sweeping = true;
	rounds.busy = false;
	rounds.settings_applied = 0;	/* reloads during the start, if any, are applied at once */
	while (!ShutdownRequestPending)
		state_worker_round(&rounds);

	/* A standby's states are its primary's: it takes no checkpoint of them. */
	if (logged_standby_active())
		proc_exit(1);

	/* Finish what was asked, then the final checkpoint. */
	while (snapshot_run_pending())
		;
	state_worker_wait_for_sessions();
	state_worker_checkpoint(true);

	/* Exit code 1: the postmaster restarts the worker unless the server stops. */
	proc_exit(1);
}
