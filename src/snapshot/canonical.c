/*
 * snapshot/canonical.c
 *		The canonical form of a snapshot's keys and values: every datum as
 *		its type's binary send function writes it (as COPY BINARY does),
 *		so the snapshot can be restored into another backend or server.
 *
 * Native images (codec.c) need no catalog to copy, so the state worker,
 * which has no database, writes every snapshot natively.  For a canonical
 * snapshot it then starts one converter per database (a dynamic
 * background worker connected to it) that rewrites that database's files
 * into canonical form, before the MANIFEST is written.  Restore converts
 * back with the types' receive functions.
 *
 * List and map images keep their structure (format/records.h); only the
 * datums inside change form.  The deadlines of a state with a TTL stay:
 * in canonical form they are big-endian.
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/pg_bswap.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "common/bgworker.h"
#include "common/progress.h"
#include "common/settings.h"
#include "format/records.h"
#include "snapshot/canonical.h"
#include "snapshot/snapshot_control.h"

PGDLLEXPORT void state_snapshot_convert_main(Datum main_arg);

/* canonical_codecs_init sets up the codecs of a state's types. */
void
canonical_codecs_init(StateCodecs *c, const StateDesc *desc, MemoryContext mcxt)
{
	memset(c, 0, sizeof(StateCodecs));
	c->kind = state_kind_layout(desc->kind);
	c->ttl = desc->ttl > 0;
	codec_init(&c->key, desc->types[STATE_TYPE_KEY].oid, mcxt);
	codec_init(&c->value, state_desc_image_type(desc), mcxt);
	if (OidIsValid(desc->types[STATE_TYPE_MAP_KEY].oid))
		codec_init(&c->map_key, desc->types[STATE_TYPE_MAP_KEY].oid, mcxt);
}

/* Convert one datum's image; to_canonical picks the direction. */
static void
convert_datum(TypeCodec *codec, bool to_canonical, const char *img, uint32 len,
			  StringInfo out)
{
	CHECK_FOR_INTERRUPTS();
	if (to_canonical)
	{
		Datum		d = codec_decode(codec, img, len);
		bytea	   *b = codec_send(codec, d);

		appendBinaryStringInfo(out, VARDATA(b), VARSIZE(b) - VARHDRSZ);
	}
	else
		codec_encode(codec, codec_receive(codec, img, len), out);
}

static void
ttl_damaged(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("a value of a state with a TTL has no deadline")));
}

/*
 * convert_value converts a value, a list element or a map entry's value:
 * of a state with a TTL, the deadline (and a map value's NULL flag) first,
 * then the datum, unless the map value is NULL.
 */
static void
convert_value(StateCodecs *c, bool to_canonical, bool map_value, const char *img,
			  uint32 len, StringInfo out)
{
	uint32		hdr = map_value ? RECORD_TTL_MAP_HDR : RECORD_TTL_HDR;
	uint64		deadline;

	if (!c->ttl)
	{
		convert_datum(&c->value, to_canonical, img, len, out);
		return;
	}
	if (len < hdr)
		ttl_damaged();
	memcpy(&deadline, img, sizeof(uint64));
	deadline = to_canonical ? pg_hton64(deadline) : pg_ntoh64(deadline);
	appendBinaryStringInfo(out, (const char *) &deadline, sizeof(uint64));
	if (map_value)
		appendStringInfoChar(out, img[RECORD_TTL_HDR]);
	if (!map_value || img[RECORD_TTL_HDR] == 0)
		convert_datum(&c->value, to_canonical, img + hdr, len - hdr, out);
}

static void
convert_list(StateCodecs *c, bool to_canonical, const char *img, uint32 len,
			 StringInfo out)
{
	uint32		off = 0;
	const char *elem;
	uint32		n;
	RecordRead	r;

	while ((r = record_next_elem(img, len, &off, &elem, &n)) == RECORD_OK)
	{
		int			begin = record_elem_begin(out);

		convert_value(c, to_canonical, false, elem, n, out);
		record_elem_end(out, begin);
	}
	if (r != RECORD_END)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("list image is truncated")));
}

static void
convert_map(StateCodecs *c, bool to_canonical, const char *img, uint32 len,
			StringInfo out)
{
	uint32		off = 0;
	RecordPair	p;
	RecordRead	r;

	while ((r = record_next_pair(img, len, &off, &p)) == RECORD_OK)
	{
		int			begin = record_pair_begin(out);
		int			keystart = out->len;

		convert_datum(&c->map_key, to_canonical, p.key, p.keylen, out);
		if (p.value)
		{
			uint32		keylen = out->len - keystart;

			convert_value(c, to_canonical, true, p.value, p.vallen, out);
			record_pair_end(out, begin, keylen, false);
		}
		else
			record_pair_end(out, begin, out->len - keystart, true);
	}
	if (r != RECORD_END)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("map image is truncated")));
}

static void
convert_image(StateCodecs *c, bool is_key, bool to_canonical, const char *img,
			  uint32 len, StringInfo out)
{
	if (is_key)
	{
		convert_datum(&c->key, to_canonical, img, len, out);
		return;
	}
	/* c->kind is a layout (canonical_codecs_init): value, list or map. */
	if (c->kind == STATE_KIND_LIST)
		convert_list(c, to_canonical, img, len, out);
	else if (c->kind == STATE_KIND_MAP)
		convert_map(c, to_canonical, img, len, out);
	else
		convert_value(c, to_canonical, false, img, len, out);
}

/* canonical_from_native appends the canonical form of a native image. */
void
canonical_from_native(StateCodecs *c, bool is_key, const char *img, uint32 len,
					  StringInfo out)
{
	convert_image(c, is_key, true, img, len, out);
}

/* canonical_to_native appends the native image of a canonical form. */
void
canonical_to_native(StateCodecs *c, bool is_key, const char *img, uint32 len,
					StringInfo out)
{
	convert_image(c, is_key, false, img, len, out);
}

/* A map key's image, for sorting. */
typedef struct MapKeyRef
{
	const char *data;
	uint32		len;
} MapKeyRef;

static int
map_key_cmp(const void *a, const void *b)
{
	const MapKeyRef *x = a;
	const MapKeyRef *y = b;

	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return memcmp(x->data, y->data, x->len);
}

/* Whether the n pairs of a (well-framed) map image have distinct keys. */
static bool
map_keys_unique(const char *img, uint32 len, int64 n)
{
	MapKeyRef  *keys;
	uint32		off = 0;
	RecordPair	p;
	bool		unique = true;

	if (n < 2)
		return true;
	keys = palloc_extended(sizeof(MapKeyRef) * n, MCXT_ALLOC_HUGE);
	for (int64 i = 0; i < n && record_next_pair(img, len, &off, &p) == RECORD_OK; i++)
	{
		keys[i].data = p.key;
		keys[i].len = p.keylen;
	}
	qsort(keys, n, sizeof(MapKeyRef), map_key_cmp);
	for (int64 i = 1; i < n && unique; i++)
		unique = map_key_cmp(&keys[i - 1], &keys[i]) != 0;
	pfree(keys);
	return unique;
}

/* value_image_ok: a value, element or map value (not NULL) of its shape. */
static bool
value_image_ok(const StateCodecs *c, bool map_value, const char *img, uint32 len)
{
	uint32		hdr = map_value ? RECORD_TTL_MAP_HDR : RECORD_TTL_HDR;

	if (!c->ttl)
		return codec_image_ok(&c->value, img, len);
	if (len < hdr)
		return false;
	if (map_value && img[RECORD_TTL_HDR] != 0)
		return img[RECORD_TTL_HDR] == 1 && len == hdr;
	return codec_image_ok(&c->value, img + hdr, len - hdr);
}

/*
 * state_image_ok tells whether a native key or state image has the shape
 * its state's types and kind give: one datum image for a key, a value or a
 * reduced result; list elements, or map pairs with distinct map keys, that
 * fill the image exactly, each datum of its type's shape (codec_image_ok).
 */
bool
state_image_ok(const StateCodecs *c, bool is_key, const char *img, uint32 len)
{
	uint32		off = 0;
	RecordRead	r;

	if (is_key)
		return codec_image_ok(&c->key, img, len);
	switch (c->kind)
	{
		case STATE_KIND_LIST:
			{
				const char *elem;
				uint32		n;

				while ((r = record_next_elem(img, len, &off, &elem, &n)) == RECORD_OK)
					if (!value_image_ok(c, false, elem, n))
						return false;
				return r == RECORD_END;
			}
		case STATE_KIND_MAP:
			{
				RecordPair	p;
				int64		n = 0;

				while ((r = record_next_pair(img, len, &off, &p)) == RECORD_OK)
				{
					if (!codec_image_ok(&c->map_key, p.key, p.keylen) ||
						(p.value && !value_image_ok(c, true, p.value, p.vallen)) ||
						(c->ttl && p.value == NULL))
						return false;
					n++;
				}
				/* A map with no entries is no state. */
				return r == RECORD_END && len > 0 && map_keys_unique(img, len, n);
			}
		default:
			return value_image_ok(c, false, img, len);
	}
}

typedef struct ConvertArg
{
	StateCodecs codecs;
	MemoryContext scratch;		/* reset after every entry */
} ConvertArg;

static void
convert_entry(void *arg, const char *key, uint32 keylen, const char *value,
			  uint32 vallen, StringInfo key_out, StringInfo value_out)
{
	ConvertArg *c = arg;
	MemoryContext old = MemoryContextSwitchTo(c->scratch);

	canonical_from_native(&c->codecs, true, key, keylen, key_out);
	canonical_from_native(&c->codecs, false, value, vallen, value_out);
	MemoryContextSwitchTo(old);
	MemoryContextReset(c->scratch);
}

/*
 * The converter: a dynamic background worker connected to one database
 * that rewrites the running snapshot's files of that database into
 * canonical form.  Failures are noted on the snapshot for the state worker.
 */
void
state_snapshot_convert_main(Datum main_arg)
{
	int64		id = DatumGetInt64(main_arg);
	Oid			dbid;
	SnapshotInfo info;
	MemoryContext cxt;

	memcpy(&dbid, MyBgworkerEntry->bgw_extra, sizeof(Oid));
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dbid, InvalidOid, 0);
	CurrentResourceOwner = ResourceOwnerCreate(NULL, "state_backend converter");
	cxt = AllocSetContextCreate(TopMemoryContext, "state_backend converter",
								ALLOCSET_DEFAULT_SIZES);

	if (!snapshot_get(id, &info))
		proc_exit(0);
	PG_TRY();
	{
		StateDesc  *descs;
		int			n;

		StartTransactionCommand();
		MemoryContextSwitchTo(cxt);
		n = snapshot_running_descs(id, &descs);
		for (int i = 0; i < n; i++)
		{
			ConvertArg	arg;

			if (descs[i].dbid != dbid)
				continue;
			canonical_codecs_init(&arg.codecs, &descs[i], cxt);
			arg.scratch = AllocSetContextCreate(cxt, "state_backend converter entry",
												ALLOCSET_DEFAULT_SIZES);
			snapshot_rewrite_state(info.path, &descs[i], state_backend_max_parallelism,
								   SNAPSHOT_CANONICAL, convert_entry, &arg);
			MemoryContextDelete(arg.scratch);
			MemoryContextSwitchTo(cxt);
		}
		CommitTransactionCommand();
		snapshot_note_converted(id);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortOutOfAnyTransaction();
		snapshot_note_error(id, edata->sqlerrcode, snapshot_error_text(edata));
	}
	PG_END_TRY();
	proc_exit(0);
}

/* How long a converter waits for a background worker slot, in ms. */
#define CONVERTER_SLOT_WAIT_MS	30000

/*
 * register_converter registers a converter, waiting (serving sessions) for
 * a background worker slot while none is free: the slot of the converter
 * before it is free only once the postmaster has noted its exit, which on
 * a busy machine comes a while after it stopped.  False when none came
 * free in CONVERTER_SLOT_WAIT_MS.
 */
static bool
register_converter(BackgroundWorker *bgw, BackgroundWorkerHandle **handle)
{
	TimestampTz start = GetCurrentTimestamp();

	while (!RegisterDynamicBackgroundWorker(bgw, handle))
	{
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), CONVERTER_SLOT_WAIT_MS))
			return false;
		progress_yield();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 50L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	return true;
}

/*
 * canonical_convert_snapshot runs a converter for every database of a
 * snapshot, one after the other, and raises the first one's error.  Runs in
 * the state worker, after the native files are complete and before the
 * MANIFEST is written.
 */
void
canonical_convert_snapshot(int64 id, const StateDesc *descs, int ndescs)
{
	for (int i = 0; i < ndescs; i++)
	{
		BackgroundWorker bgw;
		BackgroundWorkerHandle *handle;
		bool		done = false;
		pid_t		pid;
		int			code;
		int			done_before;
		BgwHandleStatus status;
		char		error[512];
		ProgressHook check;

		for (int j = 0; j < i && !done; j++)
			done = descs[j].dbid == descs[i].dbid;
		if (done)
			continue;

		state_bgworker_describe(&bgw, "state_snapshot_convert_main",
								"state_backend snapshot converter",
								BgWorkerStart_ConsistentState, BGW_NEVER_RESTART);
		bgw.bgw_main_arg = Int64GetDatum(id);
		memcpy(bgw.bgw_extra, &descs[i].dbid, sizeof(Oid));
		bgw.bgw_notify_pid = MyProcPid;

		done_before = snapshot_converters_done(id);
		if (!register_converter(&bgw, &handle))
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("could not start a converter for canonical snapshot " INT64_FORMAT, id),
					 errdetail("No background worker slot came free in %d seconds.",
							   CONVERTER_SLOT_WAIT_MS / 1000),
					 errhint("Raise max_worker_processes.")));
		/* A small conversion may be over before its start is seen. */
		status = WaitForBackgroundWorkerStartup(handle, &pid);
		if (status != BGWH_STARTED && status != BGWH_STOPPED)
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("could not start a converter for canonical snapshot " INT64_FORMAT, id)));
		/*
		 * Sessions keep being served while the converter runs.  A cancel
		 * waits until it is done: it writes into the snapshot's directory.
		 */
		check = progress_set_cancel_check(NULL);
		while (GetBackgroundWorkerPid(handle, &pid) != BGWH_STOPPED)
		{
			progress_yield();
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 10L, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
		(void) progress_set_cancel_check(check);
		if (snapshot_take_error(id, &code, error, sizeof(error)))
			ereport(ERROR,
					(errcode(code ? code : ERRCODE_INTERNAL_ERROR),
					 errmsg("%s", error)));
		if (snapshot_converters_done(id) <= done_before)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("the converter of canonical snapshot " INT64_FORMAT " stopped before it converted database %u",
							id, descs[i].dbid),
					 errhint("The server log says why.")));
	}
}
