/*
 * snapshot/snapshot_driver.c
 *		Taking a snapshot: the cut, then writing it, in the state worker.
 *
 * One snapshot runs at a time.  state.snapshot() asks the worker
 * (snapshot_request_cut); the worker, or its own timer for a checkpoint,
 * calls snapshot_request, which makes the cut: each backend's strategy
 * prepares (one whose states the worker serves freezes them), then, at one instant under the
 * snapshot lock, cuts (heap: every partition locked, the epoch advanced)
 * while the registry's descriptors are copied.  The id is returned at once.
 * The worker then writes the snapshot key group by key group
 * (snapshot_run_pending) while every session goes on, each backend
 * collecting its entries or writing its own native files; on failure or
 * cancel every backend releases the cut and what was written is removed.
 * A worker that exits while a snapshot runs (FATAL, or told to restart)
 * leaves it to the worker started after it, which fails it and removes
 * its files (snapshot_fail_orphan), so that the next snapshot can run.
 *
 * This file names no backend: it calls the SnapshotStrategy of each
 * (backend/keyed_backend.h).  The state of snapshots in shared memory is
 * snapshot_control.c's; the files' layout format/'s.
 */
#include "postgres.h"

#include <sys/stat.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "commands/dbcommands.h"
#include "common/file_perm.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "postmaster/interrupt.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "backend/keyed_backend.h"
#include "catalog/registry.h"
#include "common/catch.h"
#include "common/fault.h"
#include "common/pause.h"
#include "common/progress.h"
#include "common/settings.h"
#include "format/records.h"
#include "ipc/channel.h"
#include "snapshot/canonical.h"
#include "snapshot/checkpoint.h"
#include "snapshot/snapshot_control.h"
#include "snapshot/snapshot_driver.h"
#include "txn/txn_state.h"

static CheckpointDoneHook checkpoint_done_hook = NULL;

/* The snapshot a session asked to hold (state_backend.snapshot_hold), or 0. */
static int64 held_snapshot_id = 0;

void
snapshot_set_checkpoint_hook(CheckpointDoneHook hook)
{
	checkpoint_done_hook = hook;
}

typedef struct CutContext
{
	StateDesc  *descs;
	int			n;
	bool		done;
	int64		id;
	XLogRecPtr	wal_position;
} CutContext;

/* at_cut of the strategies: the descriptors as of the cut's instant. */
static void
copy_descs_at_cut(void *arg)
{
	CutContext *c = arg;

	c->n = registry_copy_all(c->descs, &c->wal_position);
	c->done = true;
}

/* The instant of the cut: every backend's, under the snapshot lock. */
static void
cut_backends(void *arg)
{
	CutContext *c = arg;
	int			n;
	const KeyedStateBackend *const *all = keyed_backend_all(&n);

	for (int i = 0; i < n; i++)
		if (all[i]->snapshot->cut)
			all[i]->snapshot->cut(c->id, copy_descs_at_cut, c);
	if (!c->done)
		copy_descs_at_cut(c);
	for (int i = 0; i < n; i++)
		if (all[i]->snapshot->after_cut)
			all[i]->snapshot->after_cut(c->id);
}

/* Every backend lets go of snapshot id's cut.  Never raises an error. */
static void
release_backends(int64 id)
{
	int			n;
	const KeyedStateBackend *const *all = keyed_backend_all(&n);

	for (int i = 0; i < n; i++)
		if (all[i]->snapshot->release)
			all[i]->snapshot->release(id);
}

/*
 * cut_gate_reopen lets transactional commits go on when the worker leaves
 * a cut by an exit (FATAL, which runs no PG_CATCH): they wait at the gate
 * until txn_state_cut_done, and would wait for ever.
 */
static void
cut_gate_reopen(int code, Datum arg)
{
	txn_state_cut_done();
}

/*
 * snapshot_request starts a snapshot and returns its id: path is its
 * directory, or NULL for a checkpoint under state_backend.checkpoint_dir,
 * or, with no checkpoint directory, a snapshot kept in shared memory.  The
 * cut is made here, before returning: no write that completes after this
 * call returns is in the snapshot, and no write that completed before it is
 * missing.  Runs in the state worker, which serves no request meanwhile;
 * the caller has checked privileges and the path.
 *
 * Returns 0 without a snapshot when transactions are committing their
 * writes to transactional states (a cut must not fall inside one): the
 * caller asks again soon, and they let it in (txn/txn_state.h).
 * workers_own: a checkpoint of the worker's own, which a session's
 * snapshot asked for meanwhile waits for (snapshot_handle_request).
 */
int64
snapshot_request(const char *path, SnapshotFormat format, bool workers_own)
{
	volatile int64 id = 0;
	CutContext	cut;
	int			n;
	const KeyedStateBackend *const *all = keyed_backend_all(&n);
	bool		checkpoint = (path == NULL && state_backend_checkpoint_dir[0] != '\0');

	if (!txn_state_cut_ready())
		return 0;
	PG_ENSURE_ERROR_CLEANUP(cut_gate_reopen, (Datum) 0);
	PG_TRY();
	{
		id = snapshot_control_reserve();
		for (int i = 0; i < n; i++)
			if (all[i]->snapshot->prepare)
				all[i]->snapshot->prepare(id);
		FAULT_POINT("checkpoint.cut");
		cut.descs = snapshot_control_cut_descs();
		cut.n = 0;
		cut.done = false;
		cut.id = id;
		cut.wal_position = InvalidXLogRecPtr;
		snapshot_control_begin(id, path, format, checkpoint, workers_own, cut_backends, &cut, &cut.n,
							   &cut.wal_position);
	}
	PG_CATCH();
	{
		txn_state_cut_done();
		if (id != 0)
			release_backends(id);
		PG_RE_THROW();
	}
	PG_END_TRY();
	PG_END_ENSURE_ERROR_CLEANUP(cut_gate_reopen, (Datum) 0);
	txn_state_cut_done();
	return id;
}

/* How many times (a millisecond apart) a cut is asked for before giving up. */
#define SNAPSHOT_CUT_TRIES	10000

/*
 * The worker's answer to a session's snapshot request while a checkpoint
 * is being written: ask again once it is done.
 */
#define SNAPSHOT_AFTER_CHECKPOINT	(-1)
/* Milliseconds between two requests of a session that waits for a checkpoint. */
#define SNAPSHOT_CHECKPOINT_POLL_MS	10

/*
 * snapshot_request_cut is what state.snapshot() calls: the state worker
 * makes the cut, so that it falls between two of the requests it serves
 * as well as at one instant of every heap partition.  Requests a
 * session posted before are served first, so its own writes are in.  The
 * request is the format, whether to hold the snapshot, and the path.
 */
int64
snapshot_request_cut(const char *path, SnapshotFormat format)
{
	StringInfoData req;
	int32		f = (int32) format;
	int32		hold = state_backend_snapshot_hold ? 1 : 0;
	int64		id;

	channel_sync();
	initStringInfo(&req);
	appendBinaryStringInfo(&req, (const char *) &f, sizeof(f));
	appendBinaryStringInfo(&req, (const char *) &hold, sizeof(hold));
	if (path)
		appendStringInfoString(&req, path);
	/*
	 * 0: transactions are committing; they let the cut in within moments,
	 * unless one is stuck in its commit (a synchronous standby gone).
	 * SNAPSHOT_AFTER_CHECKPOINT: the worker is writing a checkpoint, which
	 * the session did not ask for and cannot cancel; it waits for it (a
	 * cancel of the statement ends the wait).
	 */
	for (int tries = 0;;)
	{
		id = channel_call_int64(CHANNEL_TARGET_WORKER, CHANNEL_WORKER_SNAPSHOT, req.data,
								req.len, true);
		if (id > 0)
			break;
		if (id == SNAPSHOT_AFTER_CHECKPOINT)
		{
			/* The whole pause: the reply just read set the latch. */
			state_pause_full(SNAPSHOT_CHECKPOINT_POLL_MS);
			continue;
		}
		if (++tries >= SNAPSHOT_CUT_TRIES)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("could not take a snapshot: a transaction has been committing writes to transactional states for %d s",
							SNAPSHOT_CUT_TRIES / 1000),
					 errhint("Look in pg_stat_activity for a commit that waits (for a synchronous standby, say), then try again.")));
		CHECK_FOR_INTERRUPTS();
		pg_usleep(1000L);
	}
	pfree(req.data);
	return id;
}

/* snapshot_handle_request runs a session's snapshot request in the worker. */
bool
snapshot_handle_request(const char *payload, uint32 len, StringInfo reply)
{
	int32		f;
	int32		hold;
	char	   *path = NULL;
	int64		id;

	if (len < sizeof(f) + sizeof(hold))
		elog(ERROR, "state_backend: short snapshot request");
	memcpy(&f, payload, sizeof(f));
	memcpy(&hold, payload + sizeof(f), sizeof(hold));
	if (f != SNAPSHOT_NATIVE && f != SNAPSHOT_CANONICAL)
		elog(ERROR, "state_backend: unknown snapshot format %d", f);
	if (len > sizeof(f) + sizeof(hold))
		path = pnstrdup(payload + sizeof(f) + sizeof(hold), len - sizeof(f) - sizeof(hold));
	if (snapshot_control_workers_own_running())
	{
		id = SNAPSHOT_AFTER_CHECKPOINT;
		appendBinaryStringInfo(reply, (const char *) &id, sizeof(id));
		return true;
	}
	id = snapshot_request(path, (SnapshotFormat) f, false);
	held_snapshot_id = hold ? id : 0;
	appendBinaryStringInfo(reply, (const char *) &id, sizeof(id));
	return true;
}

/* Database names of the states to write, in a transaction of their own. */
static void
collect_databases(const StateDesc *descs, int n, Oid **oids, char ***names, int *ndbs)
{
	MemoryContext cxt = CurrentMemoryContext;

	*oids = palloc(sizeof(Oid) * Max(n, 1));
	*names = palloc(sizeof(char *) * Max(n, 1));
	*ndbs = 0;
	for (int i = 0; i < n; i++)
	{
		bool		seen = false;

		for (int d = 0; d < *ndbs && !seen; d++)
			seen = (*oids)[d] == descs[i].dbid;
		if (!seen)
			(*oids)[(*ndbs)++] = descs[i].dbid;
	}

	StartTransactionCommand();
	for (int d = 0; d < *ndbs; d++)
	{
		char	   *name = get_database_name((*oids)[d]);

		(*names)[d] = name ? MemoryContextStrdup(cxt, name) :
			psprintf("db-%u", (*oids)[d]);
	}
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
}

/* What writing one snapshot needs to know of each state. */
/* A state with a TTL: its id and kind. */
typedef struct TtlKind
{
	uint32		id;
	int			kind;
} TtlKind;

static int
ttl_kind_cmp(const void *a, const void *b)
{
	uint32		x = ((const TtlKind *) a)->id;
	uint32		y = ((const TtlKind *) b)->id;

	return x < y ? -1 : x > y;
}

typedef struct WritePlan
{
	SnapshotJob *job;
	bool		in_memory;
	StateInfo  *infos;			/* per state: what its backend sees */
	const char **backends;		/* per state: its backend's name */
	bool	   *native;			/* per state: in its backend's own files */
	bool		any_native;
	TtlKind    *ttl;			/* states with a TTL in key-group files, by id */
	int			nttl;
	int64		ttl_now;		/* what expired by the cut is left out */
} WritePlan;

/*
 * plan_write decides, per state, how it is written: a native snapshot on
 * disk holds the states of a backend with native files of its own (write_native)
 * as those; everything else is key-group files.
 */
static void
plan_write(SnapshotJob *job, WritePlan *p)
{
	int			n = Max(job->ndescs, 1);

	p->job = job;
	p->in_memory = strncmp(job->info.path, "memory:", 7) == 0;
	p->infos = palloc(sizeof(StateInfo) * n);
	p->backends = palloc(sizeof(char *) * n);
	p->native = palloc0(sizeof(bool) * n);
	p->any_native = false;
	for (int i = 0; i < job->ndescs; i++)
	{
		const KeyedStateBackend *b = keyed_backend_by_id(job->descs[i].backend);

		state_info_of(&job->descs[i], &p->infos[i]);
		p->backends[i] = keyed_backend_name(job->descs[i].backend);
		p->native[i] = b->snapshot->write_native != NULL &&
			job->info.format == SNAPSHOT_NATIVE && !p->in_memory;
		p->any_native |= p->native[i];
	}

	/* A full snapshot leaves out what expired (as Flink's does). */
	p->ttl = palloc(sizeof(TtlKind) * n);
	p->nttl = 0;
	p->ttl_now = job->info.ttl_now;	/* taken at the cut */
	for (int i = 0; i < job->ndescs; i++)
		if (job->descs[i].ttl > 0 && !p->native[i])
		{
			p->ttl[p->nttl].id = job->descs[i].id;
			p->ttl[p->nttl++].kind = job->descs[i].kind;
		}
	qsort(p->ttl, p->nttl, sizeof(TtlKind), ttl_kind_cmp);
}

/* record_ttl_compact_entries' ttl_kind: the kind of a TTL state, or -1. */
static int
plan_ttl_kind(uint32 id, void *arg)
{
	const WritePlan *p = arg;
	TtlKind		key = {id, 0};
	TtlKind    *found = bsearch(&key, p->ttl, p->nttl, sizeof(TtlKind), ttl_kind_cmp);

	return found ? found->kind : -1;
}

/*
 * states_of marks in out the states of backend b that are (native) or are
 * not (!native) written in the backend's own files; returns whether any is.
 */
static bool
states_of(const WritePlan *p, const KeyedStateBackend *b, bool native, bool *out)
{
	bool		any = false;

	for (int s = 0; s < p->job->ndescs; s++)
	{
		out[s] = p->native[s] == native &&
			keyed_backend_by_id(p->job->descs[s].backend) == b;
		any |= out[s];
	}
	return any;
}

/* Every key group's entries, from every backend, into the writer. */
/* The longest rest after one key group, in microseconds. */
#define PACE_MAX_REST_US	(100 * 1000L)

/*
 * pace_key_group rests after a key group whose writing began at "started",
 * so that writing a snapshot takes about state_backend.snapshot_cpu_percent
 * of a core and the sessions' writers keep the rest of this machine's
 * cores.  Rests shorter than a millisecond add up in *owed until they are
 * worth a sleep.  It serves sessions meanwhile (progress_yield, which also
 * checks for a cancel).  The final checkpoint at shutdown goes at full
 * speed.
 */
static void
pace_key_group(TimestampTz started, int64 *owed)
{
	int			pct = state_backend_snapshot_cpu_percent;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz until;

	if (pct >= 100 || ShutdownRequestPending)
		return;
	*owed += (now - started) * (100 - pct) / pct;
	if (*owed < 1000)
		return;
	until = now + Min(*owed, PACE_MAX_REST_US);
	*owed = 0;
	while (now < until && !ShutdownRequestPending)
	{
		progress_yield();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Max((until - now) / 1000, 1), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		now = GetCurrentTimestamp();
	}
	/* A request whose wake-up the rest took is served now. */
	progress_yield();
}

static void
write_key_groups(WritePlan *p, SnapshotWriter *w)
{
	int			n;
	const KeyedStateBackend *const *all = keyed_backend_all(&n);
	bool	  **collect = palloc(sizeof(bool *) * n);
	StringInfoData records;
	StringInfoData live;
	int64		entries;
	int64		bytes;
	int64		owed = 0;

	FAULT_POINT("checkpoint.key_groups");
	/* Each backend collects its own states that are written as key groups. */
	for (int i = 0; i < n; i++)
	{
		collect[i] = palloc0(sizeof(bool) * Max(p->job->ndescs, 1));
		(void) states_of(p, all[i], false, collect[i]);
	}
	initStringInfo(&records);
	initStringInfo(&live);
	for (int kg = 0; kg < state_backend_max_parallelism; kg++)
	{
		TimestampTz started;

		progress_yield();
		started = GetCurrentTimestamp();
		resetStringInfo(&records);
		for (int i = 0; i < n; i++)
			if (all[i]->snapshot->collect)
				all[i]->snapshot->collect(p->job->id, p->infos, collect[i],
										  p->job->ndescs, kg, &records);
		if (p->nttl > 0)
		{
			resetStringInfo(&live);
			(void) record_ttl_compact_entries(records.data, records.len, &live,
											  plan_ttl_kind, p, p->ttl_now);
			snapshot_writer_add(w, kg, live.data, live.len);
		}
		else
			snapshot_writer_add(w, kg, records.data, records.len);
		if (p->job->is_checkpoint)
			FAULT_POINT("checkpoint.write_key_group");
		snapshot_writer_progress(w, &entries, &bytes);
		snapshot_control_progress(p->job->id, entries, bytes, kg + 1);
		pace_key_group(started, &owed);
	}
	pfree(records.data);
	pfree(live.data);
}

/* Every backend with native files writes them. */
static void
write_native_files(WritePlan *p, SnapshotWriter *w)
{
	int			n;
	const KeyedStateBackend *const *all = keyed_backend_all(&n);
	char		shared[MAXPGPATH];
	bool	   *mine = palloc(sizeof(bool) * Max(p->job->ndescs, 1));

	snprintf(shared, sizeof(shared), "%s/shared", state_backend_checkpoint_dir);
	for (int i = 0; i < n; i++)
	{
		bool		reused = false;

		if (all[i]->snapshot->write_native == NULL ||
			!states_of(p, all[i], true, mine))
			continue;
		all[i]->snapshot->write_native(p->job->id, p->job->info.path,
									   p->job->is_checkpoint ? shared : NULL,
									   p->infos, mine, p->job->ndescs, w, &reused);
		if (reused)
			snapshot_control_set_incremental(p->job->id);
	}
	pfree(mine);
}

/*
 * hold_snapshot keeps a held snapshot (state_backend.snapshot_hold) from
 * writing anything until it is cancelled, which progress_yield raises, or
 * the server shuts down, which cancels it too; sessions are served
 * meanwhile, but nothing else of the worker's loop runs (reloads, TTL
 * sweeps, checkpoints).
 */
static void
hold_snapshot(int64 id)
{
	if (held_snapshot_id != id)
		return;
	held_snapshot_id = 0;
	while (!ShutdownRequestPending)
	{
		progress_yield();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	ereport(ERROR,
			(errcode(ERRCODE_QUERY_CANCELED),
			 errmsg("snapshot " INT64_FORMAT " was cancelled: the server shuts down", id)));
}

/*
 * note_directory tells the snapshot's control, before the writer makes the
 * snapshot's directory, that the directory will be its own: a worker that
 * takes over from this one if it exits may then remove it.  A path that
 * exists already is not the snapshot's (the writer refuses it).
 */
static void
note_directory(SnapshotJob *job, bool in_memory)
{
	struct stat st;

	if (!in_memory && stat(job->info.path, &st) != 0 && errno == ENOENT)
		snapshot_control_note_files(job->id, SNAPSHOT_FILES_PARTIAL);
}

/*
 * write_snapshot writes the picked snapshot completely (MANIFEST last),
 * and keeps it in shared memory when it goes there.  *wp is the writer,
 * for the caller's cleanup; *durable is set once the snapshot's files are
 * complete and durable, which nothing that fails later undoes.
 */
static void
write_snapshot(SnapshotJob *job, SnapshotWriter *volatile *wp, volatile bool *durable)
{
	WritePlan	p;
	Oid		   *dboids;
	char	  **dbnames;
	int			ndbs;
	SnapshotWriter *w;
	int64		entries;
	int64		bytes;

	hold_snapshot(job->id);
	if (job->is_checkpoint && pg_mkdir_p(state_backend_checkpoint_dir, pg_dir_create_mode) != 0 &&
		errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create checkpoint directory \"%s\": %m",
						state_backend_checkpoint_dir)));
	plan_write(job, &p);
	collect_databases(job->descs, job->ndescs, &dboids, &dbnames, &ndbs);
	note_directory(job, p.in_memory);
	w = snapshot_writer_begin(p.in_memory ? NULL : job->info.path, job->id, job->info.format,
							  job->descs, p.backends, p.native, job->ndescs,
							  dboids, dbnames, ndbs);
	snapshot_writer_set_wal_position(w, job->info.wal_position);
	if (job->is_checkpoint)
		snapshot_writer_mark_checkpoint(w);
	*wp = w;
	snapshot_control_phase(job->id, SNAPSHOT_PHASE_KEY_GROUPS, 0, state_backend_max_parallelism);
	write_key_groups(&p, w);
	snapshot_writer_close_files(w);
	if (p.any_native)
	{
		snapshot_control_phase(job->id, SNAPSHOT_PHASE_NATIVE_FILES, -1, -1);
		FAULT_POINT("checkpoint.native_files");
		write_native_files(&p, w);
	}
	if (job->info.format == SNAPSHOT_CANONICAL)
	{
		snapshot_control_phase(job->id, SNAPSHOT_PHASE_CONVERTING, -1, -1);
		canonical_convert_snapshot(job->id, job->descs, job->ndescs);
		snapshot_writer_refresh_sizes(w);
	}
	snapshot_control_phase(job->id, SNAPSHOT_PHASE_FINISHING, -1, -1);

	/*
	 * The snapshot holds every change logged before its cut: WAL is flushed
	 * to the cut before the MANIFEST makes it complete.  Else a crash that
	 * loses the end of WAL (synchronous_commit off) leaves a checkpoint
	 * whose cut is past the end of WAL, and the next start, replaying from
	 * the cut, skips the records that WAL then writes below it.  The cut
	 * is where the next record begins: past a page header when none was
	 * inserted since, which is no position to flush to.
	 */
	if (job->info.wal_position != InvalidXLogRecPtr && !RecoveryInProgress())
		XLogFlush(Min(job->info.wal_position, GetXLogInsertEndRecPtr()));
	FAULT_POINT("checkpoint.before_manifest");
	snapshot_writer_finish(w);
	*durable = !p.in_memory;
	if (*durable)
		snapshot_control_note_files(job->id, SNAPSHOT_FILES_DURABLE);
	FAULT_POINT("checkpoint.after_manifest");
	if (p.in_memory)
	{
		Size		len;
		char	   *image = snapshot_writer_memory_image(w, &len);

		snapshot_control_keep_memory(job->id, image, len);
	}
	snapshot_writer_progress(w, &entries, &bytes);
	release_backends(job->id);
	/*
	 * Retention and what follows a checkpoint (the WAL logged states keep)
	 * come before "completed", so that whoever waits for it sees them done.
	 */
	if (job->is_checkpoint)
	{
		FAULT_POINT("checkpoint.before_retention");
		checkpoint_retain(job->id);
		if (checkpoint_done_hook)
		{
			bool		holds_logged = false;

			for (int i = 0; i < job->ndescs; i++)
				holds_logged |= job->descs[i].logged;
			FAULT_POINT("checkpoint.move_slot");
			checkpoint_done_hook(job->info.wal_position, holds_logged, job->descs, job->ndescs);
		}
	}
	snapshot_control_finish(job->id, SNAPSHOT_COMPLETED, entries, bytes, 0, NULL);
	ereport(DEBUG1,
			(errmsg("state snapshot " INT64_FORMAT " completed: " INT64_FORMAT " entries, " INT64_FORMAT " bytes",
					job->id, entries, bytes)));
}

/* A snapshot failed or was cancelled: undo, and record why. */
static void
abandon_snapshot(SnapshotJob *job, SnapshotWriter *w, ErrorData *edata)
{
	int64		entries = 0;
	int64		bytes = 0;

	release_backends(job->id);
	if (w)
	{
		snapshot_writer_progress(w, &entries, &bytes);
		snapshot_writer_abort(w);
	}
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
		snapshot_control_finish(job->id, SNAPSHOT_CANCELLED, entries, bytes,
								edata->sqlerrcode, snapshot_error_text(edata));
	else
	{
		snapshot_control_finish(job->id, SNAPSHOT_FAILED, entries, bytes,
								edata->sqlerrcode, snapshot_error_text(edata));
		ereport(LOG,
				(errmsg("state snapshot " INT64_FORMAT " failed: %s", job->id, edata->message)));
	}
}

/*
 * A snapshot whose files are complete and durable, but what follows them
 * (retention, the logged states' slot) failed: it is completed, and the
 * failure is reported.  Retention runs again after the next checkpoint.
 */
static void
complete_durable(SnapshotJob *job, SnapshotWriter *w, ErrorData *edata)
{
	int64		entries;
	int64		bytes;

	release_backends(job->id);
	snapshot_writer_progress(w, &entries, &bytes);
	snapshot_control_finish(job->id, SNAPSHOT_COMPLETED, entries, bytes, 0, NULL);
	ereport(WARNING,
			(errmsg("state snapshot " INT64_FORMAT " completed, but what follows it failed: %s",
					job->id, edata->message)));
}

/*
 * snapshot_run_pending writes the running snapshot if the worker has not
 * taken it yet.  Returns whether it did.  Runs in the state worker; errors
 * are caught and recorded as the snapshot's failure.  While it runs,
 * progress_yield() serves sessions and checks for a cancel.
 */
bool
snapshot_run_pending(void)
{
	SnapshotJob job;
	SnapshotWriter *volatile w = NULL;
	volatile bool durable = false;
	MemoryContext cxt;
	MemoryContext old;
	ProgressHook prev_check;

	cxt = AllocSetContextCreate(TopMemoryContext, "state_backend snapshot",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	if (!snapshot_control_pick(&job))
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(cxt);
		return false;
	}
	prev_check = progress_set_cancel_check(snapshot_check_cancel);
	PG_TRY();
	{
		write_snapshot(&job, &w, &durable);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		edata = catch_error(cxt);
		AbortOutOfAnyTransaction();
		AtEOXact_Files(false);	/* files and directories the writers had open */
		if (durable)
			complete_durable(&job, w, edata);
		else
			abandon_snapshot(&job, w, edata);
	}
	PG_END_TRY();
	(void) progress_set_cancel_check(prev_check);

	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return true;
}

/*
 * snapshot_fail_orphan, in a state worker started again on live shared
 * memory, ends the snapshot that the worker before it was taking when it
 * exited: nobody else would, it would stay "running" for ever, and no
 * snapshot or checkpoint could run after it.  A snapshot whose files were
 * complete and durable is completed (what follows it, retention and the
 * logged states' slot, runs after the next checkpoint); any other fails,
 * with an error that says why, after every backend let go of its cut and
 * the directory its writer made is removed.
 */
void
snapshot_fail_orphan(void)
{
	SnapshotInfo info;
	SnapshotFiles files;

	if (!snapshot_control_orphan(&info, &files))
		return;
	release_backends(info.id);
	if (files == SNAPSHOT_FILES_DURABLE)
	{
		snapshot_control_finish(info.id, SNAPSHOT_COMPLETED, info.entries, info.bytes, 0, NULL);
		ereport(LOG,
				(errmsg("state snapshot " INT64_FORMAT " completed: its files were durable when the state worker writing it exited",
						info.id)));
		return;
	}
	if (files == SNAPSHOT_FILES_PARTIAL && !rmtree(info.path, true))
		ereport(WARNING,
				(errmsg("could not remove the partial snapshot directory \"%s\"", info.path)));
	snapshot_control_finish(info.id, SNAPSHOT_FAILED, info.entries, info.bytes,
							ERRCODE_OPERATOR_INTERVENTION,
							"the state worker exited while it wrote the snapshot; what it had written is removed");
	ereport(LOG,
			(errmsg("state snapshot " INT64_FORMAT " failed: the state worker writing it exited", info.id)));
}
