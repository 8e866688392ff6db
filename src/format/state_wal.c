/*
 * format/state_wal.c
 *		Logged states' WAL records: one writer, one reader, and the resource
 *		manager PostgreSQL calls to name and describe them.
 *
 * A record's data is a fixed header, then the key image, the map key image
 * and the value image, each as long as the header says.  A CREATE record's
 * value is the state's descriptor.  Readers trust no length.
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

#include "format/state_wal.h"

typedef struct StateWalHeader
{
	uint32		state_id;
	uint32		keylen;
	uint32		map_keylen;
	uint32		valuelen;
	uint8		isnull;
} StateWalHeader;

#define STATE_WAL_HEADER_SIZE	(offsetof(StateWalHeader, isnull) + sizeof(uint8))

static XLogRecPtr last_lsn = InvalidXLogRecPtr;
static XLogRecPtr replaying_end = InvalidXLogRecPtr;
static bool remote_pending = false;

XLogRecPtr
state_wal_log(uint8 kind, uint32 state_id, const char *key, uint32 keylen,
			  const char *map_key, uint32 map_keylen,
			  const char *value, uint32 valuelen, bool isnull)
{
	StateWalHeader h;
	XLogRecPtr	end;

	if (replaying_end != InvalidXLogRecPtr)
		return InvalidXLogRecPtr;
	h.state_id = state_id;
	h.keylen = key ? keylen : 0;
	h.map_keylen = map_key ? map_keylen : 0;
	h.valuelen = (value && !isnull) ? valuelen : 0;
	h.isnull = isnull ? 1 : 0;

	XLogBeginInsert();
	XLogRegisterData((char *) &h, STATE_WAL_HEADER_SIZE);
	if (h.keylen > 0)
		XLogRegisterData(unconstify(char *, key), h.keylen);
	if (h.map_keylen > 0)
		XLogRegisterData(unconstify(char *, map_key), h.map_keylen);
	if (h.valuelen > 0)
		XLogRegisterData(unconstify(char *, value), h.valuelen);
	end = XLogInsert(STATE_WAL_RMGR_ID, kind);
	if (end > last_lsn)
		last_lsn = end;
	return end;
}

XLogRecPtr
state_wal_log_create(const StateDesc *desc, bool hidden)
{
	return state_wal_log(hidden ? STATE_WAL_CREATE_HIDDEN : STATE_WAL_CREATE, desc->id,
						 NULL, 0, NULL, 0,
						 (const char *) desc, sizeof(StateDesc), false);
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
}

XLogRecPtr
state_wal_replaying(void)
{
	return replaying_end;
}

bool
state_wal_decode(XLogReaderState *reader, StateWalRecord *rec)
{
	const char *data = XLogRecGetData(reader);
	uint32		len = XLogRecGetDataLen(reader);
	StateWalHeader h;
	uint64		need;

	memset(rec, 0, sizeof(*rec));
	if (XLogRecGetRmid(reader) != STATE_WAL_RMGR_ID || len < STATE_WAL_HEADER_SIZE)
		return false;
	memset(&h, 0, sizeof(h));
	memcpy(&h, data, STATE_WAL_HEADER_SIZE);
	need = (uint64) STATE_WAL_HEADER_SIZE + h.keylen + h.map_keylen + h.valuelen;
	if (need != len)
		return false;
	rec->kind = XLogRecGetInfo(reader) & XLR_RMGR_INFO_MASK;
	if (rec->kind > STATE_WAL_CREATE_HIDDEN)
		return false;
	rec->state_id = h.state_id;
	rec->key = data + STATE_WAL_HEADER_SIZE;
	rec->keylen = h.keylen;
	rec->map_key = rec->key + h.keylen;
	rec->map_keylen = h.map_keylen;
	rec->value = h.isnull ? NULL : rec->map_key + h.map_keylen;
	rec->valuelen = h.valuelen;
	if (rec->kind == STATE_WAL_CREATE || rec->kind == STATE_WAL_CREATE_HIDDEN)
	{
		if (h.valuelen != sizeof(StateDesc) || h.isnull)
			return false;
		memcpy(&rec->desc, rec->value, sizeof(StateDesc));
		if (rec->desc.id != h.state_id)
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
	appendStringInfo(buf, "state %u", rec.state_id);
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
	.rm_name = "state_backend",
	.rm_redo = state_wal_redo,
	.rm_desc = state_wal_desc,
	.rm_identify = state_wal_identify,
};

void
state_wal_register(void)
{
	RegisterCustomRmgr(STATE_WAL_RMGR_ID, &state_wal_rmgr);
}
