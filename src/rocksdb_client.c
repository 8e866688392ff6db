/*
 * rocksdb_client.c
 *		The session's side of rocksdb states: KeyedStateBackend turned into
 *		requests to the state worker, which owns RocksDB
 *		(rocksdb_backend.c).
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
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/ipc.h"

#include "channel.h"
#include "keyed_backend.h"
#include "rocksdb_backend.h"

static ExecutorEnd_hook_type prev_executor_end = NULL;

/* Start a request: header and key. */
static void
request_begin(StringInfo buf, const StateTarget *st, const StateKey *key)
{
	RocksRequest h;

	memset(&h, 0, sizeof(h));
	h.state_id = st->desc->id;
	h.slot = st->slot;
	h.kind = (uint8) st->desc->kind;
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
rc_call_found(ChannelOp op, StringInfo req, StringInfo out, StringInfo flags, int skip)
{
	StringInfoData reply;
	bool		found;

	initStringInfo(&reply);
	channel_call(op, req->data, req->len, &reply, false);
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

static bool
rc_get(const StateTarget *st, const StateKey *key, StringInfo out)
{
	StringInfoData req;

	request_begin(&req, st, key);
	return rc_call_found(CHANNEL_OP_GET, &req, out, NULL, 0);
}

/* A posted write: the key, then data. */
static void
rc_post(ChannelOp op, const StateTarget *st, const StateKey *key,
		const char *data, uint32 len)
{
	StringInfoData req;

	request_begin(&req, st, key);
	appendBinaryStringInfo(&req, data, len);
	channel_post(op, req.data, req.len);
	pfree(req.data);
}

static void
rc_put(const StateTarget *st, const StateKey *key, const char *value, uint32 len)
{
	rc_post(CHANNEL_OP_PUT, st, key, value, len);
}

/* A round trip whose reply is one boolean. */
static bool
rc_call_bool(ChannelOp op, StringInfo req)
{
	StringInfoData reply;
	bool		b;

	initStringInfo(&reply);
	channel_call(op, req->data, req->len, &reply, false);
	b = reply.data[0] != 0;
	pfree(reply.data);
	pfree(req->data);
	return b;
}

/* A round trip whose reply is one int64. */
static int64
rc_call_int64(ChannelOp op, StringInfo req, bool long_running)
{
	StringInfoData reply;
	int64		n;

	initStringInfo(&reply);
	channel_call(op, req->data, req->len, &reply, long_running);
	memcpy(&n, reply.data, sizeof(n));
	pfree(reply.data);
	pfree(req->data);
	return n;
}

static bool
rc_remove(const StateTarget *st, const StateKey *key)
{
	StringInfoData req;

	request_begin(&req, st, key);
	return rc_call_bool(CHANNEL_OP_REMOVE, &req);
}

static void
rc_append(const StateTarget *st, const StateKey *key, const char *elems, uint32 len)
{
	rc_post(CHANNEL_OP_APPEND, st, key, elems, len);
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
		channel_call(CHANNEL_OP_FOLD, req.data, req.len, out, false);
		pfree(req.data);
		return;
	}

	found = rc_get(st, key, (initStringInfo(&cur), &cur));

	for (;;)
	{
		StringInfoData req;
		StringInfoData reply;
		uint32		curlen = found ? (uint32) cur.len : 0;

		resetStringInfo(out);
		fn(found ? cur.data : NULL, curlen, value, len, out, arg);

		request_begin(&req, st, key);
		appendStringInfoChar(&req, found ? 1 : 0);
		appendBinaryStringInfo(&req, (const char *) &curlen, sizeof(uint32));
		appendBinaryStringInfo(&req, cur.data, curlen);
		appendBinaryStringInfo(&req, out->data, out->len);
		initStringInfo(&reply);
		channel_call(CHANNEL_OP_CAS, req.data, req.len, &reply, false);
		pfree(req.data);
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

static bool
rc_map_get(const StateTarget *st, const StateKey *key, const char *mkey, uint32 mkeylen,
		   StringInfo out, bool *isnull)
{
	StringInfoData req;
	StringInfoData flags;
	bool		found;

	request_begin(&req, st, key);
	appendBinaryStringInfo(&req, mkey, mkeylen);
	initStringInfo(&flags);
	found = rc_call_found(CHANNEL_OP_MAP_GET, &req, out, &flags, 1);
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
	appendStringInfoChar(&req, isnull ? 1 : 0);
	if (!isnull)
		appendBinaryStringInfo(&req, value, len);
	channel_post(CHANNEL_OP_MAP_PUT, req.data, req.len);
	pfree(req.data);
}

static bool
rc_map_remove(const StateTarget *st, const StateKey *key, const char *mkey, uint32 mkeylen)
{
	StringInfoData req;

	request_begin(&req, st, key);
	appendBinaryStringInfo(&req, mkey, mkeylen);
	return rc_call_bool(CHANNEL_OP_MAP_REMOVE, &req);
}

/*
 * rc_scan pages through entries (see handle_scan in rocksdb_backend.c)
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
		const char *p;
		const char *end;

		request_begin(&req, st, key);
		appendBinaryStringInfo(&req, (const char *) &kg, sizeof(int32));
		appendStringInfoChar(&req, map_of_key ? 1 : 0);
		appendBinaryStringInfo(&req, (const char *) &clen, sizeof(uint32));
		appendBinaryStringInfo(&req, cursor.data, cursor.len);
		channel_call(CHANNEL_OP_SCAN, req.data, req.len, &reply, false);
		pfree(req.data);

		more = reply.data[0] != 0;
		p = reply.data + 1;
		end = reply.data + reply.len;

		{
			uint32		clen2;

			memcpy(&clen2, p, sizeof(uint32));
			resetStringInfo(&cursor);
			appendBinaryStringInfo(&cursor, p + 4, clen2);
			p += 4 + clen2;
		}
		while (p < end)
		{
			uint32		klen;
			uint32		vlen;

			memcpy(&klen, p, 4);
			memcpy(&vlen, p + 4, 4);
			fn(arg, p + 8, klen, vlen == MAP_NULL_VALUE ? NULL : p + 8 + klen,
			   vlen == MAP_NULL_VALUE ? 0 : vlen);
			p += 8 + klen + (vlen == MAP_NULL_VALUE ? 0 : vlen);
		}
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
	return rc_call_int64(CHANNEL_OP_LENGTH, &req, false);
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
	return rc_call_int64(CHANNEL_OP_TRUNCATE, &req, true);
}

static void
rc_size(const StateTarget *st, int64 *entries, int64 *bytes)
{
	StringInfoData req;
	StringInfoData reply;

	request_begin(&req, st, NULL);
	initStringInfo(&reply);
	channel_call(CHANNEL_OP_SIZE, req.data, req.len, &reply, true);
	memcpy(entries, reply.data, sizeof(int64));
	memcpy(bytes, reply.data + sizeof(int64), sizeof(int64));
	pfree(req.data);
	pfree(reply.data);
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
	channel_call(CHANNEL_OP_OPEN, req.data, req.len, &reply, true);
	pfree(req.data);
	pfree(reply.data);
}

/*
 * rocksdb_client_sync_registry has the worker bring the descriptors it
 * stores in line with the registry, and waits for it: rocksdb states just
 * dropped lose their data and descriptor, states just restored get theirs
 * stored, so that a crash right after does not undo the change.  The change
 * itself is done: if the worker does not answer, a warning says so and the
 * worker catches up when it next looks.
 */
void
rocksdb_client_sync_registry(void)
{
	StringInfoData reply;
	MemoryContext cxt = CurrentMemoryContext;

	if (channel_is_worker())
	{
		rocksdb_sync_registry();
		return;
	}
	initStringInfo(&reply);
	PG_TRY();
	{
		channel_call(CHANNEL_OP_SYNC, NULL, 0, &reply, false);
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
 * rocksdb_client_restore_files has the worker copy states kept as RocksDB
 * files in the native snapshot at dir (from_ids) into hidden states
 * (to_ids, in registry slots to_slots); the worker itself does it at
 * server start.  The request is the one rocksdb_handle_restore reads.
 * Returns the keys copied.
 */
int64
rocksdb_client_restore_files(const char *dir, const uint32 *from_ids, const uint32 *to_ids,
							 const int *to_slots, const int *kinds, int n)
{
	StringInfoData req;
	StringInfoData reply;
	uint32		dirlen = strlen(dir);
	int32		count = n;
	int64		total;

	if (channel_is_worker())
		return rocksdb_restore_native(dir, from_ids, to_ids, to_slots, kinds, n);

	initStringInfo(&req);
	appendBinaryStringInfo(&req, (const char *) &dirlen, sizeof(uint32));
	appendBinaryStringInfo(&req, dir, dirlen);
	appendBinaryStringInfo(&req, (const char *) &count, sizeof(int32));
	for (int i = 0; i < n; i++)
	{
		int32		v[4] = {(int32) from_ids[i], (int32) to_ids[i], to_slots[i], kinds[i]};

		appendBinaryStringInfo(&req, (const char *) v, sizeof(v));
	}
	initStringInfo(&reply);
	channel_call(CHANNEL_OP_RESTORE_NATIVE, req.data, req.len, &reply, true);
	memcpy(&total, reply.data, sizeof(total));
	pfree(req.data);
	pfree(reply.data);
	return total;
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
		rocksdb_client_sync_registry();
	else
		channel_wake_worker();
}

const KeyedStateBackend rocksdb_keyed_backend = {
	.name = "rocksdb",
	.get = rc_get,
	.put = rc_put,
	.remove = rc_remove,
	.append = rc_append,
	.merge = rc_merge,
	.map_get = rc_map_get,
	.map_put = rc_map_put,
	.map_remove = rc_map_remove,
	.map_iterate = rc_map_iterate,
	.length = rc_length,
	.iterate = rc_iterate,
	.truncate = rc_truncate,
	.size = rc_size,
	.create = rc_create,
	.drop = rc_drop,
};

/* Posted writes are done (or have raised their error) when a statement ends. */
static void
rocksdb_client_executor_end(QueryDesc *queryDesc)
{
	if (prev_executor_end)
		prev_executor_end(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
	channel_sync();
}

static void
rocksdb_client_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			channel_sync();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			channel_forget_pending();
			break;
		default:
			break;
	}
}

/* rocksdb_client_init installs the statement and transaction hooks. */
void
rocksdb_client_init(void)
{
	prev_executor_end = ExecutorEnd_hook;
	ExecutorEnd_hook = rocksdb_client_executor_end;
	RegisterXactCallback(rocksdb_client_xact_callback, NULL);
}
