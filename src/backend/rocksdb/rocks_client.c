/*
 * backend/rocksdb/rocks_client.c
 *		The session's side of rocksdb states: KeyedStateBackend turned into
 *		requests to the state worker, which owns RocksDB (rocks_requests.c
 *		serves them).
 *
 * Writes that return nothing (put, append, map_put) are posted without
 * waiting; everything else is a round trip.  Posted writes are waited for
 * at the end of every statement (ExecutorEnd) and before commit, so a
 * statement that returns has its writes applied, and a failed write
 * raises its error in the statement that made it.  reduce is a read then
 * a compare-and-set, retried if another session changed the key in
 * between, so concurrent reduces never lose an update.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/wait_event.h"

#include "rocks_internal.h"

static ExecutorEnd_hook_type prev_executor_end = NULL;

/*
 * Requests go to the state worker through the channel, but in the worker
 * itself (which replays logged states' WAL before it serves anyone), where
 * they are run at once.
 */
static void
rc_send_call(RocksReqKind op, const char *payload, uint32 len, StringInfo reply, bool long_running)
{
	if (!rocks_host->in_worker())
	{
		rocks_host->channel_call(STATE_BACKEND_ROCKSDB_ID, op, payload, len, reply, long_running);
		return;
	}
	resetStringInfo(reply);
	(void) rocks_serve_request(op, payload, len, reply);
}

/* In the worker: run a request whose reply is not wanted. */
static void
rc_run_here(RocksReqKind op, const char *payload, uint32 len)
{
	StringInfoData reply;

	initStringInfo(&reply);
	(void) rocks_serve_request(op, payload, len, &reply);
	pfree(reply.data);
}

/* The commit whose writes are staged now (rocks_client_stage_begin), or none. */
static bool staging = false;
static RocksStageHeader stage_header;

/* A write, staged: posted as part of the commit's stage. */
static void
rc_post_staged(RocksReqKind op, const char *payload, uint32 len)
{
	StringInfoData req;
	uint16		kind = (uint16) op;

	initStringInfo(&req);
	appendBinaryStringInfo(&req, (const char *) &stage_header, sizeof(stage_header));
	appendBinaryStringInfo(&req, (const char *) &kind, sizeof(kind));
	appendBinaryStringInfo(&req, payload, len);
	rocks_host->channel_post(STATE_BACKEND_ROCKSDB_ID, ROCKS_REQ_STAGE, req.data, req.len);
	pfree(req.data);
	stage_header.count++;		/* told to the worker in the prepare */
}

static inline bool
rc_staged_write(RocksReqKind op)
{
	return staging && (op == ROCKS_REQ_PUT || op == ROCKS_REQ_APPEND || op == ROCKS_REQ_MAP_PUT ||
					   op == ROCKS_REQ_REMOVE || op == ROCKS_REQ_MAP_REMOVE);
}

/*
 * rocks_client_stage_begin: until rocks_client_stage_end, this session's
 * writes to rocksdb states are part of the stage of a commit (fxid), kept
 * aside by the worker.  False (nothing staged) in the worker itself.
 */
bool
rocks_client_stage_begin(uint32 stage, uint64 fxid)
{
	if (rocks_host->in_worker())
		return false;
	memset(&stage_header, 0, sizeof(stage_header));
	stage_header.stage = stage;
	stage_header.fxid = fxid;
	staging = true;
	return true;
}

void
rocks_client_stage_end(void)
{
	staging = false;
}

/*
 * rocks_client_stage_prepare has the worker make the stage durable (an
 * intent record in RocksDB, synced), before the commit record; its error
 * (a full disk) refuses the commit.  Then the board says which commit this
 * session waits for (rocks_stage_expect).
 */
void
rocks_client_stage_prepare(uint64 fxid)
{
	StringInfoData reply;

	initStringInfo(&reply);
	rocks_host->channel_call(STATE_BACKEND_ROCKSDB_ID, ROCKS_REQ_STAGE_PREPARE,
							 (const char *) &stage_header, sizeof(stage_header), &reply, true);
	pfree(reply.data);
	rocks_stage_expect(fxid);
}

const StateStageRoutine rocks_stage_routine = {
	.begin = rocks_client_stage_begin,
	.end = rocks_client_stage_end,
	.prepare = rocks_client_stage_prepare,
	.apply = rocks_client_stage_apply,
	.wait = rocks_stage_wait,
};

/*
 * rocks_client_stage_apply asks for the stage to be applied (after the
 * commit record).  An asynchronous commit's record is flushed first, here,
 * where sessions share their flushes: the worker applies a stage only once
 * its commit is durable (rocks_stage.c, commit_durable), and would flush
 * itself, one commit after another, for every other request.
 */
void
rocks_client_stage_apply(void)
{
	if (XactLastCommitEnd != InvalidXLogRecPtr)
		XLogFlush(XactLastCommitEnd);
	rocks_host->channel_post(STATE_BACKEND_ROCKSDB_ID, ROCKS_REQ_STAGE_APPLY,
				 (const char *) &stage_header, sizeof(stage_header));
	rocks_host->wake_worker();
}

static void
rc_send_post(RocksReqKind op, const char *payload, uint32 len)
{
	if (rc_staged_write(op))
	{
		rc_post_staged(op, payload, len);
		return;
	}
	if (rocks_host->in_worker())
		rc_run_here(op, payload, len);
	else
		rocks_host->channel_post(STATE_BACKEND_ROCKSDB_ID, op, payload, len);
}

/*
 * rocks_call_int64 sends a request whose reply is one int64 (run in place
 * in the worker, where only data requests are).
 */
int64
rocks_call_int64(RocksReqKind op, const char *payload, uint32 len, bool long_running)
{
	StringInfoData reply;
	int64		n;

	initStringInfo(&reply);
	rc_send_call(op, payload, len, &reply, long_running);
	if (reply.len != sizeof(n))
		elog(ERROR, "state_backend: malformed reply from the state worker");
	memcpy(&n, reply.data, sizeof(n));
	pfree(reply.data);
	return n;
}

/* Start a request: header and key. */
static void
request_begin(StringInfo buf, const StateTarget *st, const StateKey *key)
{
	RocksRequest h;

	memset(&h, 0, sizeof(h));
	h.state_id = st->info.id;
	h.slot = st->slot;
	h.kind = (uint8) st->info.kind;
	h.flags = (st->info.logged ? ROCKS_REQUEST_LOGGED : 0) |
		(rocks_cache_serves(&st->info) ? 0 : ROCKS_REQUEST_UNCACHED);
	if (st->info.logged)
		rocks_host->remote_change();
	h.key_group = key ? key->key_group : 0;
	h.keylen = key ? key->len : 0;
	initStringInfo(buf);
	appendBinaryStringInfo(buf, (const char *) &h, sizeof(h));
	if (key)
		appendBinaryStringInfo(buf, key->data, key->len);
}

/*
 * rc_call_found runs a round trip whose reply is [found] then, when found,
 * "skip" more flag bytes and an image, which goes to out.  Frees req.
 */
static bool
rc_call_found(RocksReqKind op, StringInfo req, StringInfo out, StringInfo flags, int skip)
{
	StringInfoData reply;
	bool		found;

	initStringInfo(&reply);
	rc_send_call(op, req->data, req->len, &reply, false);
	found = reply.data[0] != 0;
	resetStringInfo(out);
	if (found)
	{
		if (flags)
			appendBinaryStringInfo(flags, reply.data + 1, skip);
		appendBinaryStringInfo(out, reply.data + 1 + skip, reply.len - 1 - skip);
	}
	pfree(req->data);
	pfree(reply.data);
	return found;
}

/*
 * Whether a state may be read without the worker: not one that may return
 * expired values, since RocksDB's compactions drop expired values without
 * the shared cache or a session's view knowing.
 */
static bool
rc_read_here(const StateTarget *st)
{
	return !(st->info.ttl > 0 &&
			 st->info.ttl_visibility == STATE_TTL_RETURN_EXPIRED_IF_NOT_CLEANED_UP);
}

/*
 * Whether this session reads a state's entries in the shared cache: once
 * the worker has carried out this session's own posted writes, so that a
 * session always reads what it wrote.
 */
static bool
rc_cache_here(const StateTarget *st)
{
	return rocks_cache_serves(&st->info) && rocks_host->posts_applied() &&
		!rocks_host->in_worker() && rc_read_here(st);
}

/*
 * rc_get reads a key of any state but a map from the shared cache when it
 * is there (rocks_cache.c), then from this session's view (rocks_view.c),
 * and asks the worker otherwise.  The view too is read only once the
 * worker has carried out this session's posted writes.
 */
static bool
rc_get(const StateTarget *st, const StateKey *key, StringInfo out)
{
	StringInfoData req;

	if (st->info.kind != STATE_KIND_MAP && rc_cache_here(st))
	{
		RocksCacheKey ck;

		rocks_cache_key(&ck, st->info.id, key->data, key->len, key->hash, NULL, 0);
		switch (rocks_cache_lookup(&ck, out))
		{
			case ROCKS_CACHE_FOUND:
				return true;
			case ROCKS_CACHE_ABSENT:
				resetStringInfo(out);
				return false;
			case ROCKS_CACHE_MISS:
				break;
		}
	}
	if (st->info.kind != STATE_KIND_MAP && rc_read_here(st))
	{
		RocksViewResult r = rocks_view_get(&st->info, key, out);

		if (r != ROCKS_VIEW_ASK)
			return r == ROCKS_VIEW_FOUND;
	}
	request_begin(&req, st, key);
	return rc_call_found(ROCKS_REQ_GET, &req, out, NULL, 0);
}

/* A posted write: the key, then data. */
static void
rc_post(RocksReqKind op, const StateTarget *st, const StateKey *key,
		const char *data, uint32 len)
{
	StringInfoData req;

	request_begin(&req, st, key);
	appendBinaryStringInfo(&req, data, len);
	rc_send_post(op, req.data, req.len);
	pfree(req.data);
}

static void
rc_put(const StateTarget *st, const StateKey *key, const char *value, uint32 len)
{
	rc_post(ROCKS_REQ_PUT, st, key, value, len);
}

/* A round trip whose reply is one boolean. */
static bool
rc_call_bool(RocksReqKind op, StringInfo req)
{
	StringInfoData reply;
	bool		b;

	/* A staged removal answers nothing: the apply does not ask. */
	if (rc_staged_write(op))
	{
		rc_post_staged(op, req->data, req->len);
		pfree(req->data);
		return false;
	}
	initStringInfo(&reply);
	rc_send_call(op, req->data, req->len, &reply, false);
	b = reply.data[0] != 0;
	pfree(reply.data);
	pfree(req->data);
	return b;
}

/* A round trip whose reply is one int64. */
static int64
rc_call_int64(RocksReqKind op, StringInfo req, bool long_running)
{
	int64		n = rocks_call_int64(op, req->data, req->len, long_running);

	pfree(req->data);
	return n;
}

static bool
rc_remove(const StateTarget *st, const StateKey *key)
{
	StringInfoData req;

	request_begin(&req, st, key);
	return rc_call_bool(ROCKS_REQ_REMOVE, &req);
}

static void
rc_append(const StateTarget *st, const StateKey *key, const char *elems, uint32 len)
{
	rc_post(ROCKS_REQ_APPEND, st, key, elems, len);
}

/*
 * rc_cas has the worker store "value" (or remove, value NULL) in place of
 * the key's image, or of its map entry mkey, if that is still "expect"
 * (NULL: no state); the reply is the CAS reply (rocks_requests.c).
 */
static void
rc_cas(const StateTarget *st, const StateKey *key, const char *mkey, uint32 mkeylen,
	   const char *expect, uint32 expectlen, const char *value, uint32 len,
	   StringInfo reply)
{
	StringInfoData req;
	uint8		flags = (expect ? ROCKS_CAS_EXPECTED : 0) | (value ? 0 : ROCKS_CAS_REMOVE) |
		(mkey ? ROCKS_CAS_MAP_ENTRY : 0);

	if (expect == NULL)
		expectlen = 0;
	if (mkey == NULL)
		mkeylen = 0;
	request_begin(&req, st, key);
	appendStringInfoChar(&req, (char) flags);
	appendBinaryStringInfo(&req, (const char *) &mkeylen, sizeof(uint32));
	appendBinaryStringInfo(&req, mkey ? mkey : "", mkeylen);
	appendBinaryStringInfo(&req, (const char *) &expectlen, sizeof(uint32));
	appendBinaryStringInfo(&req, expect ? expect : "", expectlen);
	if (value)
		appendBinaryStringInfo(&req, value, len);
	rc_send_call(ROCKS_REQ_CAS, req.data, req.len, reply, false);
	pfree(req.data);
}

static bool
rc_replace(const StateTarget *st, const StateKey *key, const char *mkey, uint32 mkeylen,
		   const char *expect, uint32 expectlen, const char *value, uint32 len)
{
	StringInfoData reply;
	bool		done;

	initStringInfo(&reply);
	rc_cas(st, key, mkey, mkeylen, expect, expectlen, value, len, &reply);
	done = reply.data[0] != 0;
	pfree(reply.data);
	return done;
}

/*
 * rc_merge folds a value into a key's state: read the current image, fold
 * here (the reducer is PostgreSQL code, which the worker must not need),
 * and store the result only if the key has not changed meanwhile.
 */
static void
rc_merge(const StateTarget *st, const StateKey *key, const char *value, uint32 len,
		 StateMergeFn fn, void *arg, const StateFold *fold, StringInfo out)
{
	StringInfoData cur;
	bool		found;

	/* A fold the worker can run itself: one round trip. */
	if (fold)
	{
		StringInfoData req;

		request_begin(&req, st, key);
		appendBinaryStringInfo(&req, (const char *) fold, sizeof(StateFold));
		appendBinaryStringInfo(&req, value, len);
		rc_send_call(ROCKS_REQ_FOLD, req.data, req.len, out, false);
		pfree(req.data);
		return;
	}

	found = rc_get(st, key, (initStringInfo(&cur), &cur));

	for (;;)
	{
		StringInfoData reply;

		resetStringInfo(out);
		rocks_host->fold_call(fn, st, key, found ? cur.data : NULL, found ? (uint32) cur.len : 0,
						value, len, out, arg);
		initStringInfo(&reply);
		rc_cas(st, key, NULL, 0, found ? cur.data : NULL, (uint32) cur.len,
			   out->data, out->len, &reply);
		if (reply.data[0] != 0)
		{
			pfree(reply.data);
			break;
		}
		/* Someone else got there first: fold into what they left. */
		found = reply.data[1] != 0;
		resetStringInfo(&cur);
		if (found)
			appendBinaryStringInfo(&cur, reply.data + 2, reply.len - 2);
		pfree(reply.data);
		CHECK_FOR_INTERRUPTS();
	}
	pfree(cur.data);
}

/* rc_map_get reads one map entry: the shared cache, the view, the worker. */
static bool
rc_map_get(const StateTarget *st, const StateKey *key, const char *mkey, uint32 mkeylen,
		   StringInfo out, bool *isnull)
{
	StringInfoData req;
	StringInfoData flags;
	bool		found;

	if (rc_cache_here(st))
	{
		RocksCacheKey ck;
		RocksCacheResult r;

		rocks_cache_key(&ck, st->info.id, key->data, key->len, key->hash, mkey, mkeylen);
		r = rocks_cache_lookup(&ck, out);
		if (r == ROCKS_CACHE_FOUND)
		{
			rocks_map_value_out(out, isnull);
			return true;
		}
		if (r == ROCKS_CACHE_ABSENT)
		{
			resetStringInfo(out);
			*isnull = false;
			return false;
		}
	}
	if (rc_read_here(st))
	{
		RocksViewResult r = rocks_view_map_get(&st->info, key, mkey, mkeylen, out, isnull);

		if (r != ROCKS_VIEW_ASK)
			return r == ROCKS_VIEW_FOUND;
	}
	request_begin(&req, st, key);
	appendBinaryStringInfo(&req, mkey, mkeylen);
	initStringInfo(&flags);
	found = rc_call_found(ROCKS_REQ_MAP_GET, &req, out, &flags, 1);
	*isnull = found && flags.data[0] != 0;
	pfree(flags.data);
	return found;
}

static void
rc_map_put(const StateTarget *st, const StateKey *key, const char *mkey, uint32 mkeylen,
		   const char *value, uint32 len, bool isnull)
{
	StringInfoData req;

	request_begin(&req, st, key);
	appendBinaryStringInfo(&req, (const char *) &mkeylen, sizeof(uint32));
	appendBinaryStringInfo(&req, mkey, mkeylen);
	rocks_map_value(&req, isnull ? NULL : value, len);
	rc_send_post(ROCKS_REQ_MAP_PUT, req.data, req.len);
	pfree(req.data);
}

static bool
rc_map_remove(const StateTarget *st, const StateKey *key, const char *mkey, uint32 mkeylen)
{
	StringInfoData req;

	request_begin(&req, st, key);
	appendBinaryStringInfo(&req, mkey, mkeylen);
	return rc_call_bool(ROCKS_REQ_MAP_REMOVE, &req);
}

/*
 * rc_scan pages through entries (see handle_scan in rocks_requests.c)
 * and calls fn for each, between pages, so fn may do anything.
 */
static void
rc_scan(const StateTarget *st, const StateKey *key, int key_group, bool map_of_key,
		StateEntryFn fn, void *arg)
{
	StringInfoData cursor;
	StringInfoData reply;
	bool		more = true;

	initStringInfo(&cursor);
	initStringInfo(&reply);
	while (more)
	{
		StringInfoData req;
		int32		kg = key_group;
		uint32		clen = cursor.len;
		uint32		off;

		request_begin(&req, st, key);
		appendBinaryStringInfo(&req, (const char *) &kg, sizeof(int32));
		appendStringInfoChar(&req, map_of_key ? 1 : 0);
		appendBinaryStringInfo(&req, (const char *) &clen, sizeof(uint32));
		appendBinaryStringInfo(&req, cursor.data, cursor.len);
		rc_send_call(ROCKS_REQ_SCAN, req.data, req.len, &reply, false);
		pfree(req.data);

		/* [more?][cursor length][cursor] then pairs */
		if (reply.len < 1 + (int) sizeof(uint32))
			elog(ERROR, "state_backend: malformed scan reply from the state worker");
		more = reply.data[0] != 0;
		memcpy(&clen, reply.data + 1, sizeof(uint32));
		if (clen > reply.len - 1 - sizeof(uint32))
			elog(ERROR, "state_backend: malformed scan reply from the state worker");
		resetStringInfo(&cursor);
		appendBinaryStringInfo(&cursor, reply.data + 1 + sizeof(uint32), clen);
		off = 1 + sizeof(uint32) + clen;
		/* The pairs are laid out as a map image's. */
		rocks_host->map_image_iterate(reply.data + off, (uint32) reply.len - off, fn, arg);
		CHECK_FOR_INTERRUPTS();
	}
	pfree(cursor.data);
	pfree(reply.data);
}

static void
rc_map_iterate(const StateTarget *st, const StateKey *key, StateEntryFn fn, void *arg)
{
	rc_scan(st, key, -1, true, fn, arg);
}

static int64
rc_length(const StateTarget *st, const StateKey *key)
{
	StringInfoData req;

	request_begin(&req, st, key);
	return rc_call_int64(ROCKS_REQ_LENGTH, &req, false);
}

static void
rc_iterate(const StateTarget *st, int key_group, StateEntryFn fn, void *arg)
{
	rc_scan(st, NULL, key_group, false, fn, arg);
}

static int64
rc_truncate(const StateTarget *st)
{
	StringInfoData req;

	request_begin(&req, st, NULL);
	return rc_call_int64(ROCKS_REQ_TRUNCATE, &req, true);
}

static void
rc_size(const StateTarget *st, int64 *entries, int64 *bytes)
{
	StringInfoData req;
	StringInfoData reply;

	request_begin(&req, st, NULL);
	initStringInfo(&reply);
	rc_send_call(ROCKS_REQ_SIZE, req.data, req.len, &reply, true);
	memcpy(entries, reply.data, sizeof(int64));
	memcpy(bytes, reply.data + sizeof(int64), sizeof(int64));
	pfree(req.data);
	pfree(reply.data);
}

/* One COMPACT request (rocks_requests.c): the status it replies. */
static int
rc_compact_status(const StateTarget *st, bool start)
{
	StringInfoData req;
	StringInfoData reply;
	int			status;

	request_begin(&req, st, NULL);
	appendStringInfoChar(&req, start ? 1 : 0);
	/* A list with a TTL: appended elements are merge operands (below). */
	appendStringInfoChar(&req, st->info.ttl > 0 && st->info.kind == STATE_KIND_LIST ? 1 : 0);
	initStringInfo(&reply);
	rc_send_call(ROCKS_REQ_COMPACT, req.data, req.len, &reply, false);
	status = reply.len > 0 ? reply.data[0] : ROCKS_COMPACT_DONE;
	pfree(req.data);
	pfree(reply.data);
	return status;
}

/*
 * rc_compact has the worker compact the state's data and waits, as long as
 * it takes, polling; it can be cancelled, and the compaction then goes on
 * by itself.
 */
static void
rc_compact(const StateTarget *st)
{
	bool		start = true;

	for (;;)
	{
		int			status = rc_compact_status(st, start);

		if (status == ROCKS_COMPACT_DONE && !start)
			break;
		if (status == ROCKS_COMPACT_RUNNING)
			start = false;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 50L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * rc_create has the worker create a new state's column family and store
 * its descriptor, so the state survives a crash from now on.
 */
static void
rc_create(const StateTarget *st)
{
	StringInfoData req;
	StringInfoData reply;

	request_begin(&req, st, NULL);
	initStringInfo(&reply);
	rc_send_call(ROCKS_REQ_OPEN, req.data, req.len, &reply, true);
	pfree(req.data);
	pfree(reply.data);
}

/*
 * rocks_client_sync_registry has the worker bring the descriptors it
 * stores in line with the registry, and waits for it: rocksdb states just
 * dropped lose their data and descriptor, states just restored get theirs
 * stored, so that a crash right after does not undo the change.  The change
 * itself is done: if the worker does not answer, a warning says so and the
 * worker catches up when it next looks.
 */
static void
rocks_client_sync_registry(void)
{
	StringInfoData reply;
	MemoryContext cxt = CurrentMemoryContext;

	if (rocks_host->in_worker())
	{
		rocks_sync_registry();
		return;
	}
	initStringInfo(&reply);
	PG_TRY();
	{
		rc_send_call(STATE_REQUEST_SYNC, NULL, 0, &reply, false);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		/* Only "no answer" is downgraded; errors of earlier writes stand. */
		if (ERRCODE_TO_CATEGORY(geterrcode()) != ERRCODE_CONNECTION_EXCEPTION ||
			proc_exit_inprogress)
			PG_RE_THROW();
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("the state worker has not confirmed storing the change to rocksdb states"),
				 errdetail("%s", edata->message),
				 errhint("It stores it when it answers again; until then a crash may undo the change.")));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	pfree(reply.data);
}


/*
 * rc_drop: the worker drops the column family and descriptor of a state
 * whose slot is marked dropping when it next syncs with the registry; with
 * confirm, wait for that.
 */
static void
rc_drop(const StateTarget *st, bool confirm)
{
	if (confirm)
		rocks_client_sync_registry();
	else
		rocks_host->wake_worker();
}

/* A session's posted writes are applied (or have raised their error). */
static void
rc_flush(void)
{
	if (rocks_host->in_worker())
	{
		/* What the worker runs itself is committed now (no session waits on it). */
		if (rocks_is_open())
			rocks_commit();
	}
	else
		rocks_host->posts_sync();
}

/*
 * rc_figures asks the state worker for the RocksDB instance's figures;
 * NULL ones when it has none open.
 */
static void
rc_figures(StateFigureFn fn, void *arg)
{
	static const char *const names[ROCKS_FIGURE_COUNT] = {
		"rocksdb_memtable_bytes", "rocksdb_pending_compaction_bytes",
		"rocksdb_live_data_bytes", "rocksdb_sst_files", "rocksdb_block_cache_bytes",
		"rocksdb_block_cache_hits", "rocksdb_block_cache_misses"
	};
	StringInfoData reply;
	int64		figures[ROCKS_FIGURE_COUNT];
	bool		have;
	int64		reads;
	int64		opens;
	int64		catch_ups;

	initStringInfo(&reply);
	rc_send_call(ROCKS_REQ_FIGURES, NULL, 0, &reply, false);
	have = reply.len == sizeof(figures);
	if (have)
		memcpy(figures, reply.data, sizeof(figures));
	for (int i = 0; i < ROCKS_FIGURE_COUNT; i++)
		fn(arg, names[i], have ? figures[i] : 0, !have);
	pfree(reply.data);
	/* Sessions' views (rocks_view.c): counted in shared memory. */
	rocks_view_figures(&reads, &opens, &catch_ups);
	fn(arg, "rocksdb_session_reads", reads, false);
	fn(arg, "rocksdb_session_views", opens, false);
	fn(arg, "rocksdb_session_catch_ups", catch_ups, false);
	fn(arg, "rocksdb_session_cache_fills", rocks_cache_fills(), false);
}

/*
 * rc_reserve is KeyedStateBackend.reserve: a transactional commit's writes
 * go to RocksDB's log and memtables, then to files; the file system must
 * have room for them twice beside what RocksDB keeps free, or the commit
 * fails now with disk_full.  Nothing is held: the worker refuses other
 * writes before the file system fills.
 */
static void *
rc_reserve(const StateTarget *st, const StateReserveKey *keys, int nkeys)
{
	uint64		bytes = 0;

	for (int i = 0; i < nkeys; i++)
		bytes += 2 * ((uint64) keys[i].key->len + keys[i].image_len + keys[i].grow_len +
					  32 * (uint64) keys[i].writes);
	rocks_check_space_for(bytes);
	return NULL;
}

const KeyedStateBackend rocks_keyed_backend = {
	.name = "rocksdb",
	.get = rc_get,
	.put = rc_put,
	.remove = rc_remove,
	.append = rc_append,
	.merge = rc_merge,
	.replace = rc_replace,
	.map_get = rc_map_get,
	.map_put = rc_map_put,
	.map_remove = rc_map_remove,
	.map_iterate = rc_map_iterate,
	.length = rc_length,
	.iterate = rc_iterate,
	.truncate = rc_truncate,
	.size = rc_size,
	.compact = rc_compact,
	.create = rc_create,
	.drop = rc_drop,
	.flush = rc_flush,
	.sync_catalog = rocks_client_sync_registry,
	.applied_lsn = rocks_applied_lsn,
	.kept_data = rocks_kept_data,
	.figures = rc_figures,
	.reserve = rc_reserve,
	.unreserve = NULL,
	.snapshot = &rocks_snapshot_strategy,
	.stage = &rocks_stage_routine,
};

/* Posted writes are done (or have raised their error) when a statement ends. */
static void
rocks_client_executor_end(QueryDesc *queryDesc)
{
	if (prev_executor_end)
		prev_executor_end(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
	rocks_host->posts_sync();
	rocks_view_flush_counts();
}

static void
rocks_client_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			rocks_host->posts_sync();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			rocks_host->posts_forget();
			rocks_view_xact_end();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			rocks_view_xact_end();
			break;
		default:
			break;
	}
}

/* rocks_client_init installs the statement and transaction hooks. */
void
rocks_client_init(void)
{
	prev_executor_end = ExecutorEnd_hook;
	ExecutorEnd_hook = rocks_client_executor_end;
	RegisterXactCallback(rocks_client_xact_callback, NULL);
}
