/*
 * logged/logged.h
 *		Logged states and PostgreSQL's WAL: the check at create, the wait at
 *		commit, the replication slot that keeps the WAL recovery needs,
 *		recovery in the state worker, and the worker of a hot standby that
 *		applies their WAL as it is replayed.
 */
#ifndef STATE_BACKEND_LOGGED_H
#define STATE_BACKEND_LOGGED_H

#include "access/xlogdefs.h"

#include "common/shmem_parts.h"
#include "common/types.h"
#include "format/snapshot_format.h"

/* Sessions. */
extern int	logged_create(StateDesc *desc);
extern void logged_before_restore(void);
extern void logged_before_change(void);
extern void logged_at_commit(void);

/* The state worker. */
extern bool logged_recover(const SnapshotManifest *checkpoint);
extern void logged_checkpoint_done(XLogRecPtr wal_position, bool holds_logged);
extern bool logged_wants_checkpoint(void);
extern XLogRecPtr logged_newest_cut(void);
extern void logged_keep_for_standby(XLogRecPtr needed);
extern void logged_log_clock(void);

/* The state worker of a hot standby (logged_standby.c). */
extern void logged_standby_wait_for_checkpoint(void);
extern void logged_standby_begin(const SnapshotManifest *checkpoint, bool fresh);
extern bool logged_standby_active(void);
extern bool logged_standby_round(void);
extern bool logged_standby_promoted(void);
extern bool logged_start_interrupted(void);
extern void logged_start_loading(void);
extern void logged_set_blocked(XLogRecPtr lsn, int64 checkpoint, const char *detail);
extern void logged_set_blocked_record(XLogRecPtr lsn, const char *why);
extern void logged_start_wait(int ms);

/* Sessions and state.worker: whether the worker's start or apply is stopped, where, and why. */

/* Sessions (logged_standby.c). */
extern bool logged_standby_figures(XLogRecPtr *applied, int64 *lag_bytes, int64 *lag_ms);
extern bool logged_standby_awaits_checkpoint(void);
extern void logged_clock_moved(void);
extern const ShmemPart logged_standby_part;

#endif							/* STATE_BACKEND_LOGGED_H */
