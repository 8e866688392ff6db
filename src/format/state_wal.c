/*
 * format/state_wal.c
 *		Logged states' WAL records: one writer, one reader, and the resource
 *		manager PostgreSQL calls to name and describe them.
 *
 * A record's data is the state's id and the key image's length (uint32
 * each), for a map entry's record the map key image's length (uint32) and
 * whether the value is NULL (one byte), then the key image, the map key
 * image and the value image, which runs to the end.  A CREATE record's
 * value is the state's descriptor; a PUBLISH record's (state id 0, no
 * key) is the database's oid, the counts of states dropped and published
 * (uint32 each), then their ids.  Readers trust no length.
 *
 * PostgreSQL's redo (crash recovery, a standby's startup process) calls
 * state_wal_redo for these records and nothing happens: the states live in
 * the state worker's memory and instance, and the worker applies the
 * records itself once the server runs (logged.c), from its newest
 * checkpoint's position.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "utils/timestamp.h"

#include "common/settings.h"
#include "format/desc_image.h"
#include "format/state_wal.h"

/* Bytes before the images: id and key length; map records add two fields. */
#define STATE_WAL_HEADER_SIZE		(2 * sizeof(uint32))
#define STATE_WAL_MAP_HEADER_SIZE	(STATE_WAL_HEADER_SIZE + sizeof(uint32) + 1)

static inline bool
is_map_kind(uint8 kind)
{
	return kind == STATE_WAL_MAP_PUT || kind == STATE_WAL_MAP_REMOVE;
}

static XLogRecPtr last_lsn = InvalidXLogRecPtr;
static XLogRecPtr replaying_end = InvalidXLogRecPtr;
static XLogRecPtr replayed_end = InvalidXLogRecPtr;	/* the highest of them */
static bool remote_pending = false;
static bool suppressed = false;

/*
 * wal_insert inserts one record of a change of this kind, with this info
 * (the kind, or its transactional twin).
 */
static XLogRecPtr
wal_insert(uint8 info, uint8 kind, uint32 state_id, const char *key, uint32 keylen,
		   const char *map_key, uint32 map_keylen,
		   const char *value, uint32 valuelen, bool isnull)
{
	char		h[STATE_WAL_MAP_HEADER_SIZE];
	uint32		klen = key ? keylen : 0;
	uint32		mklen = map_key ? map_keylen : 0;
	uint32		vlen = (value && !isnull) ? valuelen : 0;
	XLogRecPtr	end;

	if (replaying_end != InvalidXLogRecPtr || suppressed)
		return InvalidXLogRecPtr;
	memcpy(h, &state_id, sizeof(uint32));
	memcpy(h + sizeof(uint32), &klen, sizeof(uint32));
	if (is_map_kind(kind))
	{
		memcpy(h + STATE_WAL_HEADER_SIZE, &mklen, sizeof(uint32));
		h[STATE_WAL_MAP_HEADER_SIZE - 1] = isnull ? 1 : 0;
	}
	else
		mklen = 0;

	XLogBeginInsert();
	/* The clock alone does not make an idle server look busy (checkpoints, archive_timeout). */
	if (info == STATE_WAL_CLOCK)
		XLogSetRecordFlags(XLOG_MARK_UNIMPORTANT);
	XLogRegisterData(h, is_map_kind(kind) ? STATE_WAL_MAP_HEADER_SIZE : STATE_WAL_HEADER_SIZE);
	if (klen > 0)
		XLogRegisterData(unconstify(char *, key), klen);
	if (mklen > 0)
		XLogRegisterData(unconstify(char *, map_key), mklen);
	if (vlen > 0)
		XLogRegisterData(unconstify(char *, value), vlen);
	end = XLogInsert(STATE_WAL_RMGR_ID, info);
	if (end > last_lsn)
		last_lsn = end;
	return end;
}

XLogRecPtr
state_wal_log(uint8 kind, uint32 state_id, const char *key, uint32 keylen,
			  const char *map_key, uint32 map_keylen,
			  const char *value, uint32 valuelen, bool isnull)
{
	return wal_insert(kind, kind, state_id, key, keylen, map_key, map_keylen, value,
					  valuelen, isnull);
}

/*
 * state_wal_log_txn logs a change of a transactional state, made at its
 * transaction's commit: the record carries the transaction's id (the
 * caller has one assigned), and recovery applies it only once it meets
 * that transaction's commit record.
 */
XLogRecPtr
state_wal_log_txn(uint8 kind, uint32 state_id, const char *key, uint32 keylen,
				  const char *map_key, uint32 map_keylen,
				  const char *value, uint32 valuelen, bool isnull)
{
	Assert(kind >= STATE_WAL_PUT && kind <= STATE_WAL_MAP_REMOVE);
	return wal_insert(kind + STATE_WAL_TXN_OFFSET, kind, state_id, key, keylen, map_key,
					  map_keylen, value, valuelen, isnull);
}

XLogRecPtr
state_wal_log_create(const StateDesc *desc, bool hidden)
{
	StringInfoData img;
	XLogRecPtr	end;

	initStringInfo(&img);
	state_desc_image_put(&img, desc);
	end = state_wal_log(hidden ? STATE_WAL_CREATE_HIDDEN : STATE_WAL_CREATE, desc->id,
						NULL, 0, NULL, 0, img.data, img.len, false);
	pfree(img.data);
	return end;
}

/*
 * state_wal_log_publish logs a restore's publication (state_wal.h); the
 * caller holds the registry lock, so the record's place in WAL is the
 * instant the registry changed.
 */
XLogRecPtr
state_wal_log_publish(Oid dbid, const uint32 *dropped, int ndropped,
					  const uint32 *published, int npublished)
{
	StringInfoData img;
	uint32		counts[3] = {dbid, (uint32) ndropped, (uint32) npublished};
	XLogRecPtr	end;

	initStringInfo(&img);
	appendBinaryStringInfo(&img, (const char *) counts, sizeof(counts));
	if (ndropped > 0)
		appendBinaryStringInfo(&img, (const char *) dropped, sizeof(uint32) * ndropped);
	if (npublished > 0)
		appendBinaryStringInfo(&img, (const char *) published, sizeof(uint32) * npublished);
	end = state_wal_log(STATE_WAL_PUBLISH, 0, NULL, 0, NULL, 0, img.data, img.len, false);
	pfree(img.data);
	return end;
}

/*
 * state_wal_publish_id is the i-th id of a decoded PUBLISH record: the
 * states dropped first (i < ndropped), then those published.
 */
uint32
state_wal_publish_id(const StateWalRecord *rec, uint32 i)
{
	uint32		id;

	Assert(i < rec->ndropped + rec->npublished);
	memcpy(&id, rec->ids + sizeof(uint32) * i, sizeof(uint32));
	return id;
}

XLogRecPtr
state_wal_log_clock(int64 now)
{
	return state_wal_log(STATE_WAL_CLOCK, 0, NULL, 0, NULL, 0, (const char *) &now,
						 sizeof(int64), false);
}

XLogRecPtr
state_wal_take_last(void)
{
	XLogRecPtr	lsn = last_lsn;

	last_lsn = InvalidXLogRecPtr;
	return lsn;
}

void
state_wal_note_remote(void)
{
	remote_pending = true;
}

bool
state_wal_remote_pending(void)
{
	return remote_pending;
}

bool
state_wal_take_remote(void)
{
	bool		pending = remote_pending;

	remote_pending = false;
	return pending;
}

void
state_wal_set_replaying(XLogRecPtr record_end)
{
	replaying_end = record_end;
	if (record_end > replayed_end)
		replayed_end = record_end;
}

void
state_wal_suppress(bool suppress)
{
	suppressed = suppress;
}

XLogRecPtr
state_wal_replaying(void)
{
	return replaying_end;
}

/* The end of the last record replayed wholly in this process (see above). */
XLogRecPtr
state_wal_replayed(void)
{
	return replayed_end;
}

/*
 * state_wal_rmgr_is_ours: whether the records of resource manager rmid are
 * this extension's.  Those of the old id are, but when another extension
 * registered that id (state_backend.wal_rmgr_128 off leaves it to any
 * extension in development): then they are that extension's, whatever
 * their bytes look like, and never applied to states.  With no resource
 * manager of that id, records under it are those an older release of this
 * one wrote before an upgrade that followed a clean shutdown.
 */
bool
state_wal_rmgr_is_ours(RmgrId rmid)
{
	if (rmid == STATE_WAL_RMGR_ID)
		return true;
	if (rmid != STATE_WAL_RMGR_ID_OLD)
		return false;
	return !RmgrIdExists(rmid) ||
		strcmp(RmgrTable[rmid].rm_name, STATE_WAL_RMGR_NAME_OLD) == 0;
}

bool
state_wal_decode(XLogReaderState *reader, StateWalRecord *rec)
{
	const char *data = XLogRecGetData(reader);
	uint32		len = XLogRecGetDataLen(reader);
	uint32		hlen;
	uint32		mklen = 0;
	bool		isnull = false;
	uint64		used;

	memset(rec, 0, sizeof(*rec));
	if (!STATE_WAL_RMGR_IS_OURS(XLogRecGetRmid(reader)))
		return false;
	rec->kind = XLogRecGetInfo(reader) & XLR_RMGR_INFO_MASK;
	if (rec->kind >= STATE_WAL_PUT + STATE_WAL_TXN_OFFSET &&
		rec->kind <= STATE_WAL_MAP_REMOVE + STATE_WAL_TXN_OFFSET)
	{
		rec->kind -= STATE_WAL_TXN_OFFSET;
		rec->txn = true;
		rec->xid = XLogRecGetXid(reader);
		if (!TransactionIdIsValid(rec->xid))
			return false;
	}
	else if (rec->kind > STATE_WAL_CREATE_HIDDEN && rec->kind != STATE_WAL_CLOCK &&
			 rec->kind != STATE_WAL_PUBLISH)
		return false;
	hlen = is_map_kind(rec->kind) ? STATE_WAL_MAP_HEADER_SIZE : STATE_WAL_HEADER_SIZE;
	if (len < hlen)
		return false;
	memcpy(&rec->state_id, data, sizeof(uint32));
	memcpy(&rec->keylen, data + sizeof(uint32), sizeof(uint32));
	if (is_map_kind(rec->kind))
	{
		memcpy(&mklen, data + STATE_WAL_HEADER_SIZE, sizeof(uint32));
		isnull = data[STATE_WAL_MAP_HEADER_SIZE - 1] != 0;
	}
	used = (uint64) hlen + rec->keylen + mklen;
	if (used > len)
		return false;
	rec->key = data + hlen;
	rec->map_key = rec->key + rec->keylen;
	rec->map_keylen = mklen;
	rec->valuelen = len - (uint32) used;
	rec->value = isnull ? NULL : rec->map_key + mklen;
	if (isnull && rec->valuelen != 0)
		return false;
	if (rec->kind == STATE_WAL_CLOCK)
	{
		if (rec->state_id != 0 || rec->keylen != 0 || rec->valuelen != sizeof(int64))
			return false;
		memcpy(&rec->clock, rec->value, sizeof(int64));
	}
	if (rec->kind == STATE_WAL_PUBLISH)
	{
		uint32		counts[3];

		if (rec->state_id != 0 || rec->keylen != 0 || rec->valuelen < sizeof(counts))
			return false;
		memcpy(counts, rec->value, sizeof(counts));
		if ((uint64) sizeof(counts) + ((uint64) counts[1] + counts[2]) * sizeof(uint32) !=
			rec->valuelen)
			return false;
		rec->dbid = counts[0];
		rec->ndropped = counts[1];
		rec->npublished = counts[2];
		rec->ids = rec->value + sizeof(counts);
	}
	if (rec->kind == STATE_WAL_CREATE || rec->kind == STATE_WAL_CREATE_HIDDEN)
	{
		if (!state_desc_image_get(&rec->desc, rec->value, rec->valuelen))
			return false;
		if (state_desc_problem(&rec->desc, state_backend_max_parallelism) != NULL ||
			rec->desc.id != rec->state_id)
			return false;
	}
	return true;
}

/* rm_identify */
static const char *
state_wal_identify(uint8 info)
{
	switch (info & XLR_RMGR_INFO_MASK)
	{
		case STATE_WAL_CREATE:
			return "CREATE";
		case STATE_WAL_DROP:
			return "DROP";
		case STATE_WAL_PUT:
			return "PUT";
		case STATE_WAL_APPEND:
			return "APPEND";
		case STATE_WAL_REMOVE:
			return "REMOVE";
		case STATE_WAL_MAP_PUT:
			return "MAP_PUT";
		case STATE_WAL_MAP_REMOVE:
			return "MAP_REMOVE";
		case STATE_WAL_TRUNCATE:
			return "TRUNCATE";
		case STATE_WAL_CREATE_HIDDEN:
			return "CREATE_HIDDEN";
		case STATE_WAL_CLOCK:
			return "CLOCK";
		case STATE_WAL_PUBLISH:
			return "PUBLISH";
		case STATE_WAL_PUT + STATE_WAL_TXN_OFFSET:
			return "TXN_PUT";
		case STATE_WAL_APPEND + STATE_WAL_TXN_OFFSET:
			return "TXN_APPEND";
		case STATE_WAL_REMOVE + STATE_WAL_TXN_OFFSET:
			return "TXN_REMOVE";
		case STATE_WAL_MAP_PUT + STATE_WAL_TXN_OFFSET:
			return "TXN_MAP_PUT";
		case STATE_WAL_MAP_REMOVE + STATE_WAL_TXN_OFFSET:
			return "TXN_MAP_REMOVE";
	}
	return NULL;
}

/* rm_desc: what pg_walinspect and pg_waldump show after the kind. */
static void
state_wal_desc(StringInfo buf, XLogReaderState *reader)
{
	StateWalRecord rec;

	if (!state_wal_decode(reader, &rec))
	{
		appendStringInfoString(buf, "malformed state_backend record");
		return;
	}
	if (rec.kind == STATE_WAL_CLOCK)
	{
		appendStringInfo(buf, "ttl clock %s", timestamptz_to_str(rec.clock));
		return;
	}
	if (rec.kind == STATE_WAL_PUBLISH)
	{
		appendStringInfo(buf, "database %u drops", rec.dbid);
		for (uint32 i = 0; i < rec.ndropped + rec.npublished; i++)
			appendStringInfo(buf, "%s %u", i == rec.ndropped ? " publishes" : "",
							 state_wal_publish_id(&rec, i));
		return;
	}
	appendStringInfo(buf, "state %u", rec.state_id);
	if (rec.txn)
		appendStringInfo(buf, " transaction %u", rec.xid);
	if (rec.kind == STATE_WAL_CREATE || rec.kind == STATE_WAL_CREATE_HIDDEN)
	{
		NameData	name;

		/* Bounded, whatever the record holds. */
		memcpy(&name, &rec.desc.name, sizeof(NameData));
		name.data[NAMEDATALEN - 1] = '\0';
		appendStringInfo(buf, " name %s database %u", NameStr(name), rec.desc.dbid);
		return;
	}
	if (rec.kind == STATE_WAL_DROP || rec.kind == STATE_WAL_TRUNCATE)
		return;
	appendStringInfo(buf, " key %u bytes", rec.keylen);
	if (rec.kind == STATE_WAL_MAP_PUT || rec.kind == STATE_WAL_MAP_REMOVE)
		appendStringInfo(buf, " map key %u bytes", rec.map_keylen);
	if (rec.kind == STATE_WAL_MAP_PUT && rec.value == NULL)
		appendStringInfoString(buf, " value null");
	else if (rec.kind != STATE_WAL_REMOVE && rec.kind != STATE_WAL_MAP_REMOVE)
		appendStringInfo(buf, " value %u bytes", rec.valuelen);
}

/* rm_redo: nothing; see the file's comment. */
static void
state_wal_redo(XLogReaderState *reader)
{
}

static RmgrData state_wal_rmgr = {
	.rm_name = STATE_WAL_RMGR_NAME,
	.rm_redo = state_wal_redo,
	.rm_desc = state_wal_desc,
	.rm_identify = state_wal_identify,
};

/* The id releases up to 1.6.0 wrote under: read, never written. */
static RmgrData state_wal_rmgr_old = {
	.rm_name = STATE_WAL_RMGR_NAME_OLD,
	.rm_redo = state_wal_redo,
	.rm_desc = state_wal_desc,
	.rm_identify = state_wal_identify,
};

/*
 * state_wal_register, in _PG_init: this extension's resource manager, and
 * with state_backend.wal_rmgr_128 the old id too, for a server whose WAL
 * still holds records written under it.
 */
void
state_wal_register(void)
{
	RegisterCustomRmgr(STATE_WAL_RMGR_ID, &state_wal_rmgr);
	if (state_backend_wal_rmgr_128)
		RegisterCustomRmgr(STATE_WAL_RMGR_ID_OLD, &state_wal_rmgr_old);
}
