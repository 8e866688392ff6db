/*
 * format/state_wal.h
 *		The WAL records of logged states: their one layout, the writer that
 *		inserts them into PostgreSQL's WAL, the reader that decodes them, and
 *		the resource manager that names them (pg_walinspect, pg_waldump).
 *
 * A logged state's change is written to WAL where it is made, at the
 * instant it is made: by the session under the heap partition's lock, by
 * the state worker as it applies a write it serves, by any backend under
 * its own lock (the provider API's log_change).  Records carry the
 * state's id and byte images only; what they mean is applied again by
 * logged.c when the worker recovers.  PostgreSQL's own redo ignores them.
 */
#ifndef STATE_BACKEND_STATE_WAL_H
#define STATE_BACKEND_STATE_WAL_H

#include "access/xlogdefs.h"
#include "access/xlogreader.h"
#include "lib/stringinfo.h"

#include "common/types.h"

/*
 * The resource manager: its id is one that PostgreSQL's list of custom
 * resource managers (wiki.postgresql.org/wiki/CustomWALResourceManagers)
 * gives to no other extension (128 is for extensions in development, 129
 * onwards are taken in order, 241 by Columnar), so that an extension that
 * keeps to the list never writes records under it.  Releases up to 1.6.0 used 128, RM_EXPERIMENTAL_ID:
 * their records are still read (STATE_WAL_RMGR_ID_OLD), and PostgreSQL
 * replays them only when state_backend.wal_rmgr_128 registers that id too.
 */
#define STATE_WAL_RMGR_ID		213
#define STATE_WAL_RMGR_NAME		"state_backend"
#define STATE_WAL_RMGR_ID_OLD	128
#define STATE_WAL_RMGR_NAME_OLD	"state_backend_1_6"

/* Whether a record's resource manager is this extension's (state_wal.c). */
#define STATE_WAL_RMGR_IS_OURS(rmid) state_wal_rmgr_is_ours(rmid)

/* Record kinds: the high bits of a record's info byte. */
#define STATE_WAL_CREATE		0x00	/* a state appeared: its descriptor */
#define STATE_WAL_DROP			0x10	/* a state was dropped */
#define STATE_WAL_PUT		STATE_CHANGE_PUT
#define STATE_WAL_APPEND		STATE_CHANGE_APPEND
#define STATE_WAL_REMOVE		STATE_CHANGE_REMOVE
#define STATE_WAL_MAP_PUT		STATE_CHANGE_MAP_PUT
#define STATE_WAL_MAP_REMOVE		STATE_CHANGE_MAP_REMOVE
#define STATE_WAL_TRUNCATE		STATE_CHANGE_TRUNCATE
#define STATE_WAL_CREATE_HIDDEN	0x80	/* a state being restored, not yet seen */
#define STATE_WAL_CLOCK			0xE0	/* the primary's TTL clock (state id 0) */
#define STATE_WAL_PUBLISH		0xF0	/* a restore took effect (state id 0) */

/*
 * A transactional state's change (PUT to MAP_REMOVE) has its own info,
 * kind + STATE_WAL_TXN_OFFSET (0x90 to 0xD0), and carries the xid.
 */
#define STATE_WAL_TXN_OFFSET	0x70

/* One record, decoded.  Pointers are into the record's data. */
typedef struct StateWalRecord
{
	uint8		kind;			/* STATE_WAL_* */
	uint32		state_id;
	const char *key;
	uint32		keylen;
	const char *map_key;
	uint32		map_keylen;
	const char *value;			/* NULL for a NULL map value */
	uint32		valuelen;
	StateDesc	desc;			/* STATE_WAL_CREATE(_HIDDEN) only */
	bool		txn;			/* a transactional state's change: applied
								 * only if its transaction committed */
	TransactionId xid;
	int64		clock;			/* STATE_WAL_CLOCK only */
	/* STATE_WAL_PUBLISH only: the database, and its states dropped and published */
	Oid			dbid;
	uint32		ndropped;
	uint32		npublished;
	const char *ids;			/* ndropped, then npublished uint32s, unaligned */
} StateWalRecord;

/* Writing: returns the end of the record inserted. */
extern XLogRecPtr state_wal_log(uint8 kind, uint32 state_id,
								const char *key, uint32 keylen,
								const char *map_key, uint32 map_keylen,
								const char *value, uint32 valuelen, bool isnull);
extern XLogRecPtr state_wal_log_txn(uint8 kind, uint32 state_id,
									const char *key, uint32 keylen,
									const char *map_key, uint32 map_keylen,
									const char *value, uint32 valuelen, bool isnull);
extern XLogRecPtr state_wal_log_create(const StateDesc *desc, bool hidden);

/*
 * A restore's publication, as one record: the logged states of database
 * dbid it drops and the hidden logged states it publishes.  Replay applies
 * all of it or none, so the record is the instant a restore is durable.
 */
extern XLogRecPtr state_wal_log_publish(Oid dbid, const uint32 *dropped, int ndropped,
										const uint32 *published, int npublished);
extern uint32 state_wal_publish_id(const StateWalRecord *rec, uint32 i);

/*
 * The TTL clock of the primary (format/records.h: record_ttl_now), which a
 * hot standby's reads measure expiry on (logged_standby.c).
 */
extern XLogRecPtr state_wal_log_clock(int64 now);

/*
 * The end of the last record this process inserted since it was last
 * taken (InvalidXLogRecPtr: none), for the wait at commit.
 */
extern XLogRecPtr state_wal_take_last(void);

/*
 * A session sent a logged state's change for the worker to make and log:
 * at commit it waits for the worker's records too (ipc/channel.h).
 */
extern void state_wal_note_remote(void);
extern bool state_wal_remote_pending(void);
extern bool state_wal_take_remote(void);

/*
 * While the worker replays records, no change is logged again; the end of
 * the record being applied is what a backend that keeps its states across
 * restarts records as applied.
 */
extern void state_wal_set_replaying(XLogRecPtr record_end);
extern XLogRecPtr state_wal_replaying(void);
extern XLogRecPtr state_wal_replayed(void);

/* The worker loading a checkpoint at start logs nothing either. */
extern void state_wal_suppress(bool suppress);

/* Reading: false when the record is not one of ours or is malformed. */
extern bool state_wal_rmgr_is_ours(RmgrId rmid);
extern bool state_wal_decode(XLogReaderState *reader, StateWalRecord *rec);

/* module.c: register the resource manager (in _PG_init). */
extern void state_wal_register(void);

#endif							/* STATE_BACKEND_STATE_WAL_H */
