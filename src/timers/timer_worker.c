/*
 * timers/timer_worker.c
 *		The timer worker of a database: its loop, and the batches in which
 *		it fires the due timers of its states by calling their handlers,
 *		as their owners.
 *
 * One dynamic background worker per database with timers states, started
 * by create_state and by the state worker (timers/timer_queue.c); it stops
 * when its database has none left.  Each round it drains the ring of new
 * registrations into its index of due timers, looks at the registry when
 * something changed (timer_index.c: the states, their heaps of timers by
 * due time, their retries, their figures), and fires a batch of what is
 * due.  The index may name timers that are gone (deleted, rolled back,
 * fired): each timer is looked up in its state before it fires.
 *
 * A batch of due timers (state_backend.timer_batch_size) runs in one
 * transaction, its handler calls in one subtransaction of it (when one
 * fails, they are undone and each runs in a subtransaction of its own), as
 * the state's owner, under state_backend.timer_statement_timeout, through
 * the routines of the state's kind (timer_fire.h; some kinds' timers are
 * keys to look at, each once a batch: timer_keys.c).  The timer leaves
 * its state inside that transaction when the state is transactional
 * (exactly once: the removal commits with the handler's writes), after it
 * otherwise (at least once: a crash in between fires it again).  A handler
 * that fails is retried after state_backend.timer_retry_delay, doubling,
 * and after state_backend.timer_max_retries it moves to
 * state.timer_failures.
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/prepare.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "backend/keyed_backend.h"
#include "catalog/stats.h"
#include "common/codec.h"
#include "common/fault.h"
#include "common/settings.h"
#include "common/timer_handler.h"
#include "format/records.h"
#include "timers/timer_fire.h"
#include "timers/timer_firing.h"
#include "timers/timer_index.h"
#include "timers/timer_queue.h"

PGDLLEXPORT void state_timer_worker_main(Datum main_arg);

/* Whether this process is a timer worker. */
static bool in_timer_worker = false;

bool
timer_worker_is_me(void)
{
	return in_timer_worker;
}

/* How often figures are published, and states looked for, at least. */
#define PUBLISH_MS			250
#define SYNC_MS				1000

/*
 * How often a fenced worker looks whether default_transaction_read_only is
 * off again, and after how long it stops to read its database's settings
 * anew.
 */
#define FENCED_POLL_MS		1000
#define FENCED_RESTART_MS	60000

static MemoryContext timer_worker_cxt;
static int	first_state = 0;	/* where the next batch starts looking */
static uint64 batch_number = 0;

/* The worker's own identity, which no owner's code ever runs with. */
static Oid	worker_user;
static int	worker_sec;

/*
 * A handler that runs past state_backend.timer_statement_timeout is
 * cancelled; one that is still running a moment later (it caught the
 * cancel) stops the worker, whose next one counts the timer as failed once
 * (KilledTimer).  firing_now is the timer whose handler runs.
 */
#define OVERRUN_GRACE_MS	1000
static TimeoutId overrun_timeout;
static Firing *volatile firing_now = NULL;
static bool have_killed = false;
static KilledTimer killed;

/*
 * A batch stops taking timers once it has run this long: what is left goes
 * back to the index, and the next batch is another owner's, so that one
 * owner's slow handlers hold back another owner's timers by a second and
 * one handler's call at most.
 */
#define BATCH_BUDGET_MS		1000
static TimestampTz batch_began;

/* batch_over_budget: whether the batch has had its time. */
static bool
batch_over_budget(void)
{
	return TimestampDifferenceExceeds(batch_began, GetCurrentTimestamp(), BATCH_BUDGET_MS);
}

/*
 * start_transaction starts one of the worker's transactions with the
 * statement start timestamp of now, so that now() in a handler, and
 * failed_at, say when it runs, as in a session's statement.
 */
static void
start_transaction(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
}

/* ------------------------------------------------------------ a batch */

/* The clock a state's timers are due by. */
static int64
state_clock(Fired *fs, TimestampTz *passed_at)
{
	if (fs->desc.timer_event_time)
		return timer_watermark_known(fs->slot, fs->id, passed_at);
	*passed_at = 0;
	return record_ttl_now();
}

/* Whether p is the timer the last worker was stopped in. */
static bool
is_killed(const Fired *fs, const Pending *p)
{
	return have_killed && killed.state_id == fs->id && killed.at == p->at &&
		killed.keylen == p->keylen &&
		killed.keyhash == hash_bytes((const unsigned char *) p->key, (int) p->keylen);
}

/* A timer into the batch. */
static void
batch_add(Firing *batch, int *n, BatchKeys *seen, Fired *fs, Pending t, int attempts,
		  int64 clock)
{
	batch[*n] = (Firing) {fs, t, attempts, TIMER_DUE};
	batch[*n].clock = clock;
	batch[*n].revisit = DT_NOEND;
	/* What a look at a key fired is folded in after the batch's transaction. */
	if (fs->fire->by_key)
	{
		initStringInfo(&batch[*n].mark);
		timer_keys_add(seen, batch, *n);
	}
	(*n)++;
}

/*
 * Collect due timers into batch; returns how many.  A batch holds the
 * timers of one owner only (its transaction runs as that owner), and
 * batches start at each state in turn, so that every owner's timers come.
 * A timer whose batch failed as a whole, or whose handler stopped the last
 * worker, goes in a batch of its own.
 */
static int
collect_batch(Firing *batch, int max, TimestampTz now)
{
	int			nstates;
	Fired	  **states = timer_index_states(&nstates);
	int			n = 0;
	BatchKeys	seen;
	Oid			owner = InvalidOid;
	bool		closed = false;

	timer_keys_begin(&seen, max);
	for (int k = 0; k < nstates && n < max && !closed; k++)
	{
		Fired	   *fs = states[(first_state + k) % nstates];
		TimestampTz passed_at;
		int64		clock;
		bool		have_last = false;
		Pending		last = {0};

		if (fs->problem[0] != '\0' || (OidIsValid(owner) && fs->desc.owner != owner))
			continue;
		clock = state_clock(fs, &passed_at);
		for (int r = 0; r < fs->nretries && n < max && !closed;)
		{
			Retry	   *rt = &fs->retries[r];

			if (rt->not_before > now || (rt->alone && n > 0))
				r++;
			else if (fs->fire->by_key && timer_keys_seen(&seen, batch, fs, &rt->t))
			{
				/* A key retried twice: one look does for both. */
				pfree(rt->t.key);
				*rt = fs->retries[--fs->nretries];
			}
			else
			{
				batch_add(batch, &n, &seen, fs, rt->t, rt->attempts, clock);
				batch[n - 1].alone = closed = rt->alone;
				owner = fs->desc.owner;
				*rt = fs->retries[--fs->nretries];
			}
		}
		while (!closed && fs->nheap > 0 && fs->heap[0].at <= clock && n < max)
		{
			Pending		p;

			if (is_killed(fs, &fs->heap[0]) && n > 0)
			{
				closed = true;	/* it comes first in the next batch */
				break;
			}
			p = timer_index_pop(fs);
			/* The index may hold a timer twice: the ring and a read both saw it. */
			if ((have_last && timer_pending_cmp(&last, &p) == 0) ||
				(fs->fire->by_key && timer_keys_seen(&seen, batch, fs, &p)))
			{
				pfree(p.key);
				continue;
			}
			if (is_killed(fs, &p))
			{
				batch_add(batch, &n, &seen, fs, p, killed.attempts + 1, clock);
				batch[n - 1].alone = closed = true;
				batch[n - 1].error =
					psprintf("the handler ran past state_backend.timer_statement_timeout (%d ms) and did not stop when cancelled: its timer worker was stopped",
							 state_backend_timer_statement_timeout_ms);
				have_killed = false;
			}
			else
				batch_add(batch, &n, &seen, fs, p, 0, clock);
			owner = fs->desc.owner;
			last = p;
			have_last = true;
			if (fs->nlags < LAG_SAMPLES)
				fs->nlags++;
			fs->lags[fs->lag_next] = now - (fs->desc.timer_event_time ? Max(passed_at, 0) : p.at);
			if (fs->lags[fs->lag_next] < 0)
				fs->lags[fs->lag_next] = 0;
			fs->lag_next = (fs->lag_next + 1) % LAG_SAMPLES;
		}
	}
	/* The next batch starts at the next state of another owner. */
	for (int k = 1; k <= nstates; k++)
	{
		int			i = (first_state + k) % nstates;

		if (k == nstates || !OidIsValid(owner) || states[i]->desc.owner != owner)
		{
			first_state = i;
			break;
		}
	}
	return n;
}

/* The timer's state key and the image of its instant. */
static void
timer_key(Firing *f, StateKey *key, StringInfo atimg)
{
	state_key_set(key, f->t.key, f->t.keylen);
	resetStringInfo(atimg);
	codec_encode(&f->fs->at_codec, TimestampTzGetDatum(f->t.at), atimg);
}

/* What a timer's firing hands its state's routines. */
static void
fire_of(Firing *f, TimerFire *tf, const StateTarget *st, const StateKey *key, StringInfo atimg)
{
	Fired	   *fs = f->fs;

	*tf = (TimerFire) {st, key, &fs->key_codec, &fs->at_codec, &fs->handler, f->t.at, atimg,
		f->clock, &f->mark, DT_NOEND, 0};
}

/*
 * Remove a timer from its state (in the caller's transaction): of a key
 * looked at, fold in what the look fired.
 */
static void
remove_timer(Firing *f, StringInfo atimg)
{
	StateTarget st = state_target(&f->fs->desc, f->fs->slot);
	StateKey	key;
	TimerFire	tf;

	timer_key(f, &key, atimg);
	fire_of(f, &tf, &st, &key, atimg);
	f->again = f->fs->fire->done(&tf, f->step == TIMER_FIRED);
}

/* The timeouts around one handler's call. */
static void
handler_timeouts_enable(void)
{
	if (state_backend_timer_statement_timeout_ms > 0)
	{
		EnableTimeoutParams t[2];

		t[0].id = STATEMENT_TIMEOUT;
		t[0].type = TMPARAM_AFTER;
		t[0].delay_ms = state_backend_timer_statement_timeout_ms;
		t[1].id = overrun_timeout;
		t[1].type = TMPARAM_AFTER;
		t[1].delay_ms = state_backend_timer_statement_timeout_ms + OVERRUN_GRACE_MS;
		enable_timeouts(t, 2);
	}
}

static void
handler_timeouts_disable(void)
{
	DisableTimeoutParams t[2];

	t[0].id = STATEMENT_TIMEOUT;
	t[0].keep_indicator = false;
	t[1].id = overrun_timeout;
	t[1].keep_indicator = false;
	disable_timeouts(t, 2);
}

/*
 * handler_overrun: the handler ran on after its cancel.  The worker exits
 * as a terminated process does (FATAL, which no handler can catch) at its
 * next check for interrupts; timer_worker_exit notes the timer.
 */
static void
handler_overrun(void)
{
	ProcDiePending = true;
	InterruptPending = true;
	SetLatch(MyLatch);
}

/*
 * fire_one calls one timer's handler, in the subtransaction the caller
 * opened: false when the timer is gone from its state (nothing to do).
 * The caller runs as the state's owner, in a security-restricted
 * operation (fire_batch); the handler gets a GUC nest level of its own, so
 * that nothing it SETs outlives it.
 */
static bool
fire_one(Firing *f, StringInfo atimg)
{
	Fired	   *fs = f->fs;
	StateTarget st = state_target(&fs->desc, fs->slot);
	StateKey	key;
	TimerFire	tf;
	bool		fired;
	int			nestlevel;

	timer_key(f, &key, atimg);
	fire_of(f, &tf, &st, &key, atimg);
	if (fs->fire->present != NULL && !fs->fire->present(&tf))
		return false;
	Assert(GetUserId() == fs->desc.owner && InSecurityRestrictedOperation());
	FAULT_POINT("timer.before_handler");
	nestlevel = NewGUCNestLevel();
	firing_now = f;
	handler_timeouts_enable();
	fired = fs->fire->fire(&tf);
	handler_timeouts_disable();
	firing_now = NULL;
	AtEOXact_GUC(false, nestlevel);
	FAULT_POINT("timer.after_handler");
	f->emitted += tf.emitted;
	f->revisit = tf.revisit;
	/* A transactional state's timer leaves it with the handler's writes. */
	if (fired && fs->desc.transactional)
		(void) fs->fire->done(&tf, true);
	return fired;
}

/* Keep a failed timer in state.timer_failures, in the batch's transaction. */
static void
record_failure(Firing *f)
{
	Fired	   *fs = f->fs;
	Datum		values[7];
	Oid			types[7] = {TEXTOID, INT8OID, OIDOID, TEXTOID, TIMESTAMPTZOID, INT4OID, TEXTOID};
	char	   *keytext;
	Oid			save_user;
	int			save_sec;

	keytext = codec_output(&fs->key_codec, codec_decode(&fs->key_codec, f->t.key, f->t.keylen));
	values[0] = CStringGetTextDatum(NameStr(fs->desc.name));
	values[1] = Int64GetDatum((int64) fs->id);
	values[2] = ObjectIdGetDatum(fs->desc.owner);
	values[3] = CStringGetTextDatum(keytext);
	values[4] = TimestampTzGetDatum(f->t.at);
	values[5] = Int32GetDatum(f->attempts);
	values[6] = CStringGetTextDatum(f->error ? f->error : "");
	/* The table is the extension's: written as the worker, no owner's code runs. */
	GetUserIdAndSecContext(&save_user, &save_sec);
	SetUserIdAndSecContext(worker_user,
						   worker_sec | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
	SPI_connect();
	if (SPI_execute_with_args("INSERT INTO state._failed_timers "
							  "(name, state_id, owner, key, at, attempts, error, failed_at) "
							  "VALUES ($1, $2, $3, $4, $5, $6, $7, pg_catalog.now())",
							  7, types, values, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "state_backend: could not record a failed timer");
	SPI_finish();
	SetUserIdAndSecContext(save_user, save_sec);
	if (fs->desc.transactional)
	{
		StringInfoData atimg;

		initStringInfo(&atimg);
		remove_timer(f, &atimg);
	}
}

/* One timer, in its own subtransaction: whether it fired, or why not. */
static void
fire_in_subtransaction(Firing *f, StringInfo atimg)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		f->step = fire_one(f, atimg) ? TIMER_FIRED : TIMER_GONE;
		f->attempts++;
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		handler_timeouts_disable();
		firing_now = NULL;
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		f->attempts++;
		f->step = f->attempts > state_backend_timer_max_retries ? TIMER_FAILED : TIMER_RETRYING;
		f->error = pstrdup(edata->message);
		FreeErrorData(edata);
	}
	PG_END_TRY();
	if (f->step == TIMER_FAILED)
		record_failure(f);
}

/* Put a timer that failed, or whose batch failed, in line to retry. */
static void
retry_later(Firing *f, TimestampTz now)
{
	int			shift = Min(Max(f->attempts - 1, 0), 6);

	timer_index_add_retry(f->fs, f->t, f->attempts, f->alone,
						  TimestampTzPlusMilliseconds(now, (int64) state_backend_timer_retry_delay_ms << shift));
}

/*
 * The timers of states that are not transactional leave them once their
 * handlers' transaction committed (at least once).
 */
static void
remove_after_commit(Firing *batch, int n)
{
	StringInfoData atimg;

	initStringInfo(&atimg);
	start_transaction();
	for (int i = 0; i < n; i++)
		if (!batch[i].fs->desc.transactional &&
			(batch[i].step == TIMER_FIRED || batch[i].step == TIMER_FAILED))
			remove_timer(&batch[i], &atimg);
	keyed_backend_flush_all();
	CommitTransactionCommand();
}

/*
 * fire_together tries a batch's timers in one subtransaction: when none
 * fails, as many subtransactions as timers are saved (and a SQL handler's
 * plan, which a new subtransaction makes again).  False, with nothing
 * done, when one failed (each then goes in a subtransaction of its own) or
 * when the batch retries one.
 */
static bool
fire_together(Firing *batch, int n, StringInfo atimg)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool done = false;

	for (int i = 0; i < n; i++)
		if (batch[i].attempts != 0 || batch[i].step == TIMER_WAITING)
			return false;
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		for (int i = 0; i < n; i++)
		{
			CHECK_FOR_INTERRUPTS();
			if (i > 0 && batch_over_budget())
			{
				/* The rest go back to the index, untouched. */
				for (int j = i; j < n; j++)
					batch[j].step = TIMER_WAITING;
				break;
			}
			batch[i].step = fire_one(&batch[i], atimg) ? TIMER_FIRED : TIMER_GONE;
		}
		ReleaseCurrentSubTransaction();
		done = true;
	}
	PG_CATCH();
	{
		handler_timeouts_disable();
		firing_now = NULL;
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	for (int i = 0; i < n; i++)
	{
		if (!done)
		{
			/* Undone: each is tried again in a subtransaction of its own. */
			batch[i].step = TIMER_DUE;
			batch[i].emitted = 0;
		}
		else if (batch[i].step != TIMER_WAITING)
			batch[i].attempts = 1;
	}
	return done;
}

/*
 * check_handlers, in the batch's transaction: a state whose handler its
 * owner may no longer execute (revoked, dropped, replaced since the last
 * look) fires nothing; its timers wait for it to be put right.
 */
static void
check_handlers(Firing *batch, int n)
{
	batch_number++;
	for (int i = 0; i < n; i++)
	{
		Fired	   *fs = batch[i].fs;

		if (fs->checked_batch != batch_number)
		{
			const char *problem = timer_handler_problem(&fs->desc);

			fs->checked_batch = batch_number;
			strlcpy(fs->problem, problem ? problem : "", sizeof(fs->problem));
		}
		if (fs->problem[0] != '\0')
			batch[i].step = TIMER_WAITING;
	}
}

/*
 * The batch's transaction: the timers in one subtransaction, or, when one
 * fails, a subtransaction per timer; then the commit.  A timer whose
 * handler stopped the worker too often is not tried again, only recorded.
 */
static void
fire_batch_transaction(Firing *batch, int n)
{
	StringInfoData atimg;

	initStringInfo(&atimg);
	start_transaction();
	PushActiveSnapshot(GetTransactionSnapshot());
	check_handlers(batch, n);
	FAULT_POINT("timer.batch_begin");
	if (n == 1 || !fire_together(batch, n, &atimg))
		for (int i = 0; i < n; i++)
		{
			Firing	   *f = &batch[i];

			CHECK_FOR_INTERRUPTS();
			if (f->step == TIMER_WAITING)
				continue;
			if (i > 0 && batch_over_budget())
			{
				f->step = TIMER_WAITING;
				continue;
			}
			if (f->attempts > state_backend_timer_max_retries)
			{
				f->step = TIMER_FAILED;
				record_failure(f);
				continue;
			}
			fire_in_subtransaction(f, &atimg);
		}
	PopActiveSnapshot();
	FAULT_POINT("timer.batch_before_commit");
	CommitTransactionCommand();
	FAULT_POINT("timer.batch_after_commit");
	remove_after_commit(batch, n);
}

/*
 * After a batch whose transaction failed as a whole: the timers that have
 * had their tries go to state.timer_failures (in a transaction of the
 * worker's own, which runs no owner's code) and leave their states.
 */
static void
record_batch_failures(Firing *batch, int n)
{
	bool		any = false;

	for (int i = 0; i < n; i++)
		any |= batch[i].step == TIMER_FAILED;
	if (!any)
		return;
	start_transaction();
	PushActiveSnapshot(GetTransactionSnapshot());
	for (int i = 0; i < n; i++)
		if (batch[i].step == TIMER_FAILED)
			record_failure(&batch[i]);
	PopActiveSnapshot();
	CommitTransactionCommand();
	remove_after_commit(batch, n);
}

/*
 * act_as_owner: what follows runs as the state's owner, who is the session
 * user too (session_user and is_superuser are the owner's), in a
 * security-restricted operation; act_as_worker comes back.
 */
static void
act_as_owner(const Fired *fs)
{
	SetSessionAuthorization(fs->desc.owner, fs->owner_super);
	SetUserIdAndSecContext(fs->desc.owner,
						   worker_sec | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
}

static void
act_as_worker(void)
{
	SetSessionAuthorization(worker_user, true);
	SetUserIdAndSecContext(worker_user, worker_sec);
}

/*
 * Fire a batch: one owner's timers, in a transaction that runs as that
 * owner from its start to its commit (deferred triggers and transactional
 * states' commits run then), in a security-restricted operation (no SET
 * ROLE, no temporary objects that another owner's code could meet).
 * When the transaction fails as a whole (its commit: a deferred
 * constraint, a transactional state's commit refused), every timer of it
 * counts a failed try and is tried again in a batch of its own.  What an
 * owner's code may have left in the session (prepared statements,
 * session advisory locks) goes before the next batch.
 */
static void
fire_batch(Firing *batch, int n)
{
	MemoryContext cxt = CurrentMemoryContext;
	int		   *attempts = palloc(sizeof(int) * n);
	TimestampTz now;

	for (int i = 0; i < n; i++)
		attempts[i] = batch[i].attempts;
	batch_began = GetCurrentTimestamp();
	PG_TRY();
	{
		act_as_owner(batch[0].fs);
		fire_batch_transaction(batch, n);
		act_as_worker();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		act_as_worker();
		MemoryContextSwitchTo(cxt);
		ereport(LOG,
				(errmsg("state_backend: a batch of %d timers failed, to be retried: %s",
						n, edata->message)));
		for (int i = 0; i < n; i++)
		{
			Firing	   *f = &batch[i];

			f->emitted = 0;
			if (f->step == TIMER_WAITING)
				continue;
			f->attempts = attempts[i] + 1;
			f->alone = true;
			f->step = f->attempts > state_backend_timer_max_retries ? TIMER_FAILED : TIMER_RETRYING;
			f->error = pstrdup(edata->message);
		}
		record_batch_failures(batch, n);
	}
	PG_END_TRY();
	DropAllPreparedStatements();
	LockReleaseSession(USER_LOCKMETHOD);

	now = GetCurrentTimestamp();
	for (int i = 0; i < n; i++)
	{
		Firing	   *f = &batch[i];
		int			fired;

		switch (f->step)
		{
			case TIMER_WAITING:
				/* Back to wait: among its retries, or in the index. */
				if (f->attempts > 0)
				{
					retry_later(f, now);
					continue;
				}
				timer_index_push(f->fs, f->t.at, f->t.key, f->t.keylen);
				break;
			case TIMER_FIRED:
				/* Each call of the handler counts (a look at a key may make several). */
				fired = f->emitted;
				state_stats_count(f->fs->slot, STATE_STAT_TIMERS_FIRED, fired);
				f->fs->rate_fired += fired;
				/* A key whose look left something: looked at again then. */
				if (f->revisit != DT_NOEND)
					timer_index_push(f->fs, f->revisit, f->t.key, f->t.keylen);
				if (f->again)
					timer_index_push(f->fs, f->clock, f->t.key, f->t.keylen);
				break;
			case TIMER_FAILED:
				state_stats_count(f->fs->slot, STATE_STAT_TIMERS_FAILED, 1);
				break;
			case TIMER_RETRYING:
				retry_later(f, now);
				continue;
			case TIMER_DUE:
				/* Not reached by the batch: a timer that was being retried stays so. */
				if (f->attempts > 0)
				{
					retry_later(f, now);
					continue;
				}
				break;
			case TIMER_GONE:
				break;
		}
		pfree(f->t.key);
	}
}

/* ------------------------------------------------------------ the loop */

/*
 * One round: look, drain, fire.  Returns whether a batch was full.
 *
 * When the ring overflows while the states are read whole, the timers it
 * dropped may be of keys the read had passed already: the next round reads
 * the states whole once more (reload_next), and comes at once.
 */
static bool
timer_round(Firing *batch, TimestampTz *last_sync, bool *any, bool *reload_next)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		overflow;
	int			n;

	timer_index_before_drain();
	overflow = timer_queue_drain(timer_index_queued, NULL) || *reload_next;

	*reload_next = false;
	if (overflow || timer_index_changed() ||
		TimestampDifferenceExceeds(*last_sync, now, SYNC_MS) || timer_index_any_stale())
	{
		start_transaction();
		*any = timer_index_sync(overflow) > 0;
		CommitTransactionCommand();
		*last_sync = now;
		timer_index_place_unseen();
		/* What was registered while the states were read. */
		*reload_next = timer_queue_drain(timer_index_queued, NULL);
	}
	timer_index_follow_idle(now);
	n = collect_batch(batch, state_backend_timer_batch_size, now);
	if (n > 0)
		fire_batch(batch, n);
	return n == state_backend_timer_batch_size;
}

/*
 * timer_worker_exit, as the worker exits: a handler still running (the
 * worker was stopped in it) is noted for the next worker.
 */
static void
timer_worker_exit(int code, Datum arg)
{
	Firing	   *f = firing_now;
	KilledTimer k;

	if (f == NULL)
		return;
	k.state_id = f->fs->id;
	k.at = f->t.at;
	k.keylen = f->t.keylen;
	k.keyhash = hash_bytes((const unsigned char *) f->t.key, (int) f->t.keylen);
	k.attempts = f->attempts;
	timer_queue_note_killed(&k);
	ereport(LOG,
			(errmsg("state_backend: the timer worker of database %u stopped while the %s of state \"%s\" ran",
					MyDatabaseId, f->fs->fire->handler_name,
					NameStr(f->fs->desc.name)),
			 errdetail("A handler that runs past state_backend.timer_statement_timeout and does not stop when cancelled stops its worker; the timer counts a failed try.")));
}

void
state_timer_worker_main(Datum main_arg)
{
	Oid			dbid = DatumGetObjectId(main_arg);
	TimestampTz last_sync = 0;
	TimestampTz last_publish = 0;
	bool		any = true;
	bool		reload_next = false;
	TimestampTz fenced_since = 0;
	Firing	   *batch;

	pqsignal(SIGTERM, die);
	pqsignal(SIGINT, StatementCancelHandler);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dbid, InvalidOid, 0);
	in_timer_worker = true;
	pgstat_report_appname("state_backend timers");
	if (!timer_queue_attach(dbid))
		proc_exit(0);			/* another one fires this database's timers */
	GetUserIdAndSecContext(&worker_user, &worker_sec);
	overrun_timeout = RegisterTimeout(USER_TIMEOUT, handler_overrun);
	before_shmem_exit(timer_worker_exit, (Datum) 0);
	have_killed = timer_queue_take_killed(&killed);
	timer_worker_cxt = AllocSetContextCreate(TopMemoryContext, "state_backend timers",
									   ALLOCSET_DEFAULT_SIZES);
	timer_index_init(timer_worker_cxt);
	ereport(DEBUG1, (errmsg("state_backend timer worker of database %u started", dbid)));

	while (any)
	{
		MemoryContext round_cxt;
		MemoryContext old;
		bool		full;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
			state_settings_reload();
		/* While a session pauses this database's firing (a rescale), wait. */
		timer_queue_hold_while_paused();

		/*
		 * A server fenced with default_transaction_read_only (a failover
		 * tool's, while it is not the only primary) fires nothing: every
		 * handler that writes would fail, and so would the record of its
		 * failure.  Its timers wait, and fire once the fence is lifted.
		 */
		if (DefaultXactReadOnly)
		{
			if (fenced_since == 0)
			{
				fenced_since = GetCurrentTimestamp();
				ereport(LOG,
						(errmsg("state_backend: the timer worker of database %u fires no timer while default_transaction_read_only is on",
								MyDatabaseId)));
			}

			/*
			 * A worker reads its database's and role's settings (ALTER
			 * DATABASE ... SET) once, as it starts: after a while it stops,
			 * and the state worker starts another, which sees a fence lifted
			 * there.
			 */
			if (TimestampDifferenceExceeds(fenced_since, GetCurrentTimestamp(), FENCED_RESTART_MS))
				proc_exit(0);
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 FENCED_POLL_MS, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			continue;
		}
		fenced_since = 0;
		round_cxt = AllocSetContextCreate(timer_worker_cxt, "timer round", ALLOCSET_DEFAULT_SIZES);
		old = MemoryContextSwitchTo(round_cxt);
		batch = palloc(sizeof(Firing) * state_backend_timer_batch_size);
		full = timer_round(batch, &last_sync, &any, &reload_next);
		if (TimestampDifferenceExceeds(last_publish, GetCurrentTimestamp(), PUBLISH_MS))
		{
			timer_index_publish_figures(GetCurrentTimestamp());
			last_publish = GetCurrentTimestamp();
		}
		MemoryContextSwitchTo(old);
		MemoryContextDelete(round_cxt);
		if (!full && !reload_next && any)
		{
			long		ms = timer_index_sleep_ms(GetCurrentTimestamp());

			/* Pushes due before the wake-up wake it; others wait for it. */
			if (timer_queue_may_sleep(record_ttl_now() + (int64) ms * 1000))
			{
				(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
								 ms, PG_WAIT_EXTENSION);
				ResetLatch(MyLatch);
			}
		}
	}
	/* No timers state is left in this database. */
	proc_exit(0);
}
