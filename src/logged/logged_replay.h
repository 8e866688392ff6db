/*
 * logged/logged_replay.h
 *		Applying logged states' WAL records in the state worker: after a
 *		crash or at a promotion from the newest checkpoint's cut to the end
 *		of WAL (logged.c), and on a hot standby as the standby replays WAL
 *		(logged_standby.c).  logged_replay.c.
 */
#ifndef STATE_BACKEND_LOGGED_REPLAY_H
#define STATE_BACKEND_LOGGED_REPLAY_H

#include "access/xlogdefs.h"
#include "port/atomics.h"

#include "format/snapshot_format.h"

typedef struct LoggedReplay LoggedReplay;

/* The states whose backend kept their data across the restart (the worker, at start). */
extern void logged_note_adopted(void);

/*
 * replay_open prepares to apply records to the states kept by their
 * backend and those of the checkpoint whose MANIFEST is m (NULL: none), which was
 * loaded into fresh shared memory, and sets *start to where reading
 * begins: the checkpoint's cut, or the slot's position for what it does
 * not hold (InvalidXLogRecPtr: nowhere).  A standby's replay pins the TTL
 * clock to the primary's that WAL carries.
 */
extern LoggedReplay *replay_open(const SnapshotManifest *m, XLogRecPtr slot, bool standby,
								 XLogRecPtr *start);

/*
 * replay_open_live prepares to apply records to the logged states the
 * registry holds now (a standby's worker started again); commits whose
 * commit record ends at or before applied are in them already.
 */
extern LoggedReplay *replay_open_live(XLogRecPtr applied);
extern XLogRecPtr replay_held_min(const LoggedReplay *r);

/* Publish the end of each record applied there (a standby's shared memory). */
extern void replay_publish_to(LoggedReplay *r, pg_atomic_uint64 *progress);

/* Read from the first record at or after start; false: local WAL has none (yet). */
extern bool replay_seek(LoggedReplay *r, XLogRecPtr start);
extern bool replay_readable(XLogRecPtr lsn);

/*
 * replay_read applies records that start before until (InvalidXLogRecPtr:
 * every record WAL holds now), at most max of them (0: no limit); returns
 * how many changed something.  *at_end: it stopped for want of WAL.
 */
extern int64 replay_read(LoggedReplay *r, XLogRecPtr until, int64 max, bool *at_end);

/* The end of the last record read, and where a new reader would start. */
extern XLogRecPtr replay_position(const LoggedReplay *r);
extern XLogRecPtr replay_restart_position(const LoggedReplay *r);

/*
 * replay_failed: where reading stopped before a record that could not be
 * applied (InvalidXLogRecPtr: it did not), and the error (*why, owned by
 * r).  The next replay_read begins with that record, no sooner than a
 * second later.
 */
extern XLogRecPtr replay_failed(const LoggedReplay *r, const char **why);

/*
 * replay_close ends it: what the backends hold is made durable, states a
 * restore never published go, transactions not committed are forgotten.
 * False, reported, when that failed: r is still open, and replay_close is
 * called again.
 */
extern bool replay_close(LoggedReplay *r);

/* logged.c: where the slot "state_backend" keeps WAL from (none: invalid). */
extern XLogRecPtr logged_slot_position(void);

#endif							/* STATE_BACKEND_LOGGED_REPLAY_H */
