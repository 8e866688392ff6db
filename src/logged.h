/*
 * logged.h
 *		Logged states and PostgreSQL's WAL: the check at create, the wait at
 *		commit, the replication slot that keeps the WAL recovery needs, and
 *		recovery in the state worker.
 */
#ifndef STATE_BACKEND_LOGGED_H
#define STATE_BACKEND_LOGGED_H

#include "access/xlogdefs.h"

#include "common/types.h"

/* Sessions. */
extern int	logged_create(StateDesc *desc);
extern void logged_before_restore(void);
extern void logged_at_commit(void);

/* The state worker. */
extern void logged_note_adopted(void);
extern bool logged_recover(const char *checkpoint_dir);
extern void logged_checkpoint_done(XLogRecPtr wal_position, bool holds_logged);
extern bool logged_wants_checkpoint(void);
extern void logged_keep_for_standby(void);

#endif							/* STATE_BACKEND_LOGGED_H */
