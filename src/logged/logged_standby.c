/*
 * logged/logged_standby.c
 *		Logged states on a hot standby: the state worker applies their WAL
 *		records as the standby replays WAL, so that sessions read them
 *		there, and a promotion has only the tail left to apply.
 *
 * At start the worker waits for a checkpoint whose cut the standby's own
 * WAL holds (one taken before the base backup began is cut where the
 * standby has no WAL), loads it, and from its cut applies records up
 * to what the startup process has replayed (logged_replay.c reads local
 * WAL no further), then again each round as more is replayed.  Sessions
 * read logged states meanwhile (sql/sql_common.c); the registry says the
 * worker is a standby's, so that once the server is promoted sessions wait
 * until the worker has applied the rest, the end-of-recovery tail, before
 * anything is written.
 *
 * The applied position (the end of the last record read, whatever its
 * kind), and when the standby had replayed no more than it, are in
 * shared memory for state.worker; so is where a worker that starts again
 * (its own restart, not the server's) reads from: the applied position,
 * or the first record of a transaction not yet committed.
 *
 * A record that cannot be applied stops the apply before it
 * (logged_replay.c): each round tries it again, nothing past it is
 * applied, and the slot keeps WAL from it.  A promotion does not end
 * until it is applied: sessions wait, and get an error that says why
 * (registry_blocked), as they do when a primary's start is stopped so.
 *
 * TTL: the primary's worker logs its TTL clock each second while a logged
 * state has a TTL (logged_log_clock), and at once when a test moves it;
 * the standby's replay pins the standby's clock to it, so that what
 * expired on the primary reads as expired here.  The standby cleans up
 * nothing: the primary's sweeps and reads are logged, and come through
 * WAL.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "catalog/registry.h"
#include "common/fault.h"
#include "common/pause.h"
#include "common/settings.h"
#include "common/ttl_clock.h"
#include "format/records.h"
#include "format/state_wal.h"
#include "logged/logged.h"
#include "logged/logged_replay.h"
#include "snapshot/checkpoint.h"
#include "txn/txn_state.h"

/* Records applied in one round at most, so that requests are served between. */
#define STANDBY_ROUND_RECORDS	20000

typedef struct StandbyShared
{
	pg_atomic_uint64 applied;	/* end of the last record applied; 0: none */
	pg_atomic_uint64 restart;	/* where a worker started again reads from */
	pg_atomic_uint64 seen_at;	/* when the standby had replayed no more than
								 * what is applied now (a TimestampTz) */
	pg_atomic_uint32 start_began;	/* a start began loading states in this
									 * shared memory */
	pg_atomic_uint32 awaits_checkpoint;	/* the worker waits for (and has
										 * asked for) a checkpoint */
} StandbyShared;

static StandbyShared *standby = NULL;

/* The worker's replay, while the server is a standby. */
static LoggedReplay *replay = NULL;

/* standby_init: nothing applied, and no start begun, in shared memory just made. */
static void
standby_init(void *fresh)
{
	StandbyShared *shared = fresh;

	pg_atomic_init_u64(&shared->applied, 0);
	pg_atomic_init_u64(&shared->restart, 0);
	pg_atomic_init_u64(&shared->seen_at, 0);
	pg_atomic_init_u32(&shared->start_began, 0);
	pg_atomic_init_u32(&shared->awaits_checkpoint, 0);
}

const ShmemPart logged_standby_part = {
	"state_backend standby", sizeof(StandbyShared), NULL, standby_init, (void **) &standby
};

/*
 * logged_start_interrupted, in the worker that is about to start: whether
 * a worker before it began loading states into this shared memory and did
 * not finish (it exited in the middle: an error, a fault, a kill of the
 * worker alone).  What that one loaded and applied is then half there, and
 * would be applied again.  A worker that failed before it loaded anything
 * (its backends could not start: a full disk) leaves nothing to redo, and
 * the next one simply tries again.
 */
bool
logged_start_interrupted(void)
{
	return pg_atomic_read_u32(&standby->start_began) != 0;
}

/* logged_start_loading: the worker begins loading states (see above). */
void
logged_start_loading(void)
{
	pg_atomic_write_u32(&standby->start_began, 1);
}

/* Publish the stop of the apply of a standby's replay, or its end. */
static void
publish_blocked(void)
{
	const char *why;
	XLogRecPtr	failed = replay_failed(replay, &why);

	if (failed != InvalidXLogRecPtr)
		logged_set_blocked_record(failed, why);
	else if (registry_blocked(NULL, NULL, NULL, 0))
		logged_set_blocked(InvalidXLogRecPtr, 0, NULL);
}

static void
standby_pause(long ms)
{
	state_pause(ms);
	if (ShutdownRequestPending)
		proc_exit(1);
}

/*
 * logged_standby_wait_for_checkpoint, before the worker of a fresh standby
 * loads the newest checkpoint: wait until there is one whose cut the
 * standby's WAL holds.  Logged states created before the base backup began
 * are in no WAL the standby has: only a checkpoint taken since brings
 * them, and what a checkpoint cut before the backup misses could not be
 * applied.  So the worker asks for one (checkpoint_request: the primary's
 * worker takes it within a second) every STANDBY_REQUEST_MS while it
 * waits, and state.worker says it waits (standby_awaits_checkpoint).
 * Sessions get 25006 meanwhile.  Without a checkpoint directory no logged
 * state exists, and there is nothing to wait for.  Returns early when the
 * server is promoted meanwhile: the worker then starts as after a crash,
 * from the newest checkpoint.
 */
#define STANDBY_REQUEST_MS	5000

void
logged_standby_wait_for_checkpoint(void)
{
	bool		said = false;
	TimestampTz asked = 0;

	if (state_backend_checkpoint_dir[0] == '\0')
		return;
	/* Told not to load checkpoints: nothing to apply WAL over; serve none. */
	while (!state_backend_restore_on_start && RecoveryInProgress())
		standby_pause(200L);
	while (RecoveryInProgress())
	{
		XLogRecPtr	cut = logged_newest_cut();

		logged_keep_for_standby(InvalidXLogRecPtr);
		if (cut != InvalidXLogRecPtr && replay_readable(cut))
		{
			pg_atomic_write_u32(&standby->awaits_checkpoint, 0);
			return;
		}
		/* Not for a cut the standby has yet to replay: it comes soon. */
		if (cut == InvalidXLogRecPtr || cut < GetXLogReplayRecPtr(NULL))
		{
			if (!said)
				ereport(LOG,
						(errmsg("state_backend waits for a checkpoint of the primary taken since this standby's base backup, and asks the primary for one"),
						 cut == InvalidXLogRecPtr ?
						 errdetail("The checkpoint directory holds no checkpoint.") :
						 errdetail("The newest checkpoint is cut at %X/%X, before this server's WAL begins.",
								   LSN_FORMAT_ARGS(cut)),
						 errhint("The primary's state worker takes one within a second when it shares state_backend.checkpoint_dir with this server; if it does not, take a snapshot there (state.snapshot()).")));
			said = true;
			if (TimestampDifferenceExceeds(asked, GetCurrentTimestamp(), STANDBY_REQUEST_MS))
			{
				FAULT_POINT("standby.request_checkpoint");
				checkpoint_request();
				asked = GetCurrentTimestamp();
			}
			pg_atomic_write_u32(&standby->awaits_checkpoint, 1);
		}
		standby_pause(200L);
	}
	pg_atomic_write_u32(&standby->awaits_checkpoint, 0);
}

/* logged_standby_awaits_checkpoint: for state.worker, on a standby. */
bool
logged_standby_awaits_checkpoint(void)
{
	return standby != NULL && pg_atomic_read_u32(&standby->awaits_checkpoint) != 0;
}

/*
 * Publish the applied position.  seen_at: when the replayed position was
 * read that the worker has applied since (the worker reads all that was
 * replayed when it began reading), so that what is applied is at most
 * that old.
 */
static void
publish_position(XLogRecPtr target, TimestampTz target_at)
{
	XLogRecPtr	applied = replay_position(replay);

	pg_atomic_write_u64(&standby->applied, applied);
	pg_atomic_write_u64(&standby->restart, replay_restart_position(replay));
	if (applied >= target)
		pg_atomic_write_u64(&standby->seen_at, (uint64) target_at);
}

/*
 * logged_standby_begin: the worker of a standby begins applying, from the
 * checkpoint it loaded into fresh shared memory (fresh), or, when
 * it started again on its own, from where the last worker would have read
 * next.  Returns once it has applied what the standby has replayed.
 */
void
logged_standby_begin(const SnapshotManifest *checkpoint, bool fresh)
{
	XLogRecPtr	start;
	bool		said = false;

	/* A worker that exited while applying a commit left reads waiting. */
	txn_standby_apply_end();
	if (fresh)
	{
		replay = replay_open(checkpoint, logged_slot_position(), true, &start);
		/* No checkpoint directory, no logged state: what comes from now on. */
		if (start == InvalidXLogRecPtr)
			start = GetXLogReplayRecPtr(NULL);
	}
	else
	{
		start = (XLogRecPtr) pg_atomic_read_u64(&standby->restart);
		replay = replay_open_live((XLogRecPtr) pg_atomic_read_u64(&standby->applied));
		if (replay_held_min(replay) != InvalidXLogRecPtr && replay_held_min(replay) < start)
			start = replay_held_min(replay);
	}
	replay_publish_to(replay, &standby->applied);
	while (!replay_seek(replay, start))
	{
		if (!said)
			ereport(LOG,
					(errmsg("state_backend waits for the WAL at %X/%X to apply logged states from",
							LSN_FORMAT_ARGS(start))));
		said = true;
		logged_keep_for_standby(start);
		standby_pause(100L);
	}
	ereport(LOG,
			(errmsg("state_backend applies the WAL of logged states on this standby from %X/%X",
					LSN_FORMAT_ARGS(start))));
	while (logged_standby_round())
		;
}

/* Whether the worker applies a standby's WAL. */
bool
logged_standby_active(void)
{
	return replay != NULL;
}

/*
 * logged_standby_round, each round of the worker of a standby: apply what
 * the standby replayed since; returns whether more is waiting.
 */
bool
logged_standby_round(void)
{
	bool		at_end;
	TimestampTz now = GetCurrentTimestamp();
	XLogRecPtr	replayed = GetXLogReplayRecPtr(NULL);

	Assert(replay != NULL);
	FAULT_POINT("standby.round");
	(void) replay_read(replay, InvalidXLogRecPtr, STANDBY_ROUND_RECORDS, &at_end);
	publish_blocked();
	FAULT_POINT("standby.publish_position");
	publish_position(replayed, now);
	logged_keep_for_standby(replay_restart_position(replay));
	return !at_end;
}

/*
 * logged_standby_promoted, once the server is promoted: apply the rest of
 * its WAL (the end of recovery), then the states are the new primary's.
 * The TTL clock is the server's own again.  Returns false when a record
 * could not be applied (or the replay not closed): the promotion has not
 * ended, sessions still wait, and the next round tries again.
 */
bool
logged_standby_promoted(void)
{
	static TimestampTz began = 0;
	static XLogRecPtr from = InvalidXLogRecPtr;
	static int64 applied = 0;
	bool		at_end;

	if (began == 0)
	{
		began = GetCurrentTimestamp();
		from = replay_position(replay);
	}
	FAULT_POINT("standby.promote_apply_rest");
	applied += replay_read(replay, GetFlushRecPtr(NULL), 0, &at_end);
	publish_blocked();
	if (replay_failed(replay, NULL) != InvalidXLogRecPtr)
		return false;
	FAULT_POINT("standby.promote_close");
	if (!replay_close(replay))
	{
		logged_set_blocked_record(replay_position(replay),
								  "the replay of logged states could not be finished");
		return false;
	}
	logged_set_blocked(InvalidXLogRecPtr, 0, NULL);
	replay = NULL;
	ttl_clock_pin(0);
	pg_atomic_write_u64(&standby->applied, 0);
	pg_atomic_write_u64(&standby->seen_at, 0);
	ereport(LOG,
			(errmsg("state_backend continues on the promoted server from %X/%X: applied " INT64_FORMAT " WAL records of logged states in %ld ms",
					LSN_FORMAT_ARGS(from), applied,
					(long) ((GetCurrentTimestamp() - began) / 1000))));
	return true;
}

/*
 * logged_standby_figures, for state.worker on a standby: the position
 * applied, how far behind the replayed one it is, and how long ago the
 * standby had replayed no more than it (0 when nothing is behind); false
 * when the worker applies nothing (yet).
 */
bool
logged_standby_figures(XLogRecPtr *applied, int64 *lag_bytes, int64 *lag_ms)
{
	XLogRecPtr	replayed = GetXLogReplayRecPtr(NULL);
	TimestampTz seen_at = (TimestampTz) pg_atomic_read_u64(&standby->seen_at);

	*applied = (XLogRecPtr) pg_atomic_read_u64(&standby->applied);
	if (*applied == InvalidXLogRecPtr)
		return false;
	*lag_bytes = replayed > *applied ? (int64) (replayed - *applied) : 0;
	*lag_ms = seen_at != 0 && *lag_bytes > 0 ?
		Max(GetCurrentTimestamp() - seen_at, 0) / 1000 : 0;
	return true;
}

/* ------------------------------------------------------------- the primary */

static bool
logged_with_ttl(const StateDesc *d, const void *arg)
{
	return d->logged && d->ttl > 0;
}

/* Log the TTL clock when a logged state has a TTL (a primary only). */
static void
log_clock(void)
{
	NameData	name;

	if (!RecoveryInProgress() && registry_find_match(logged_with_ttl, NULL, &name))
		(void) state_wal_log_clock(record_ttl_now());
}

/*
 * logged_log_clock, in the worker of a primary: log the TTL clock each
 * second while a logged state has a TTL, for standbys to measure expiry
 * on (a record of 8 bytes; none when no such state exists).
 */
void
logged_log_clock(void)
{
	static TimestampTz last = 0;

	if (!TimestampDifferenceExceeds(last, GetCurrentTimestamp(), 1000))
		return;
	last = GetCurrentTimestamp();
	log_clock();
}

/* logged_clock_moved: a session moved the TTL clock; standbys follow at once. */
void
logged_clock_moved(void)
{
	log_clock();
}
