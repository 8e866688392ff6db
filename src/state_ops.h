/*
 * state_ops.h
 *		A state's life as a whole: create, drop, and publish (a restore),
 *		each a change to the registry paired with its backend's.
 */
#ifndef STATE_BACKEND_STATE_OPS_H
#define STATE_BACKEND_STATE_OPS_H

#include "access/xlogdefs.h"

#include "common/types.h"

extern void state_ops_check_type(Oid type, const char *what, bool stored);
extern void state_ops_check_list_type(Oid type);
extern int	state_ops_create(StateDesc *desc);
extern bool state_ops_drop(const StateDesc *desc, int slot);
extern void state_ops_log_hidden(const StateDesc *desc, int slot);
extern void state_ops_discard(const StateDesc *desc, int slot);
/* Which of a database's states a publish leaves in place. */
typedef enum StatePublishKeep
{
	STATE_PUBLISH_REPLACE,		/* none: a restore replaces them all */
	STATE_PUBLISH_KEEP_KEPT,	/* those whose backend kept its data (start) */
	STATE_PUBLISH_KEEP_ALL		/* every one: a state published beside them */
} StatePublishKeep;

extern void state_ops_publish(Oid dbid, const StateDesc *descs, int n,
							  StatePublishKeep keep, bool sync_catalogs);
extern bool state_ops_publish_replacing(const StateDesc *newd, const StateDesc *oldd,
										bool keep_until_checkpoint, int *oldslot,
										XLogRecPtr *logged_end);
extern void state_ops_publish_durable(const StateDesc *newd, XLogRecPtr logged_end);
extern void state_ops_finish_replacing(const StateDesc *oldd, int oldslot);
extern void state_ops_checkpoint_done(const StateDesc *held, int n);
extern void state_ops_drop_replaced(void);
extern void state_ops_unlock_alter(const StateDesc *desc);
extern void state_ops_drop_database(Oid dbid);
extern void state_ops_lock_writes(const StateDesc *desc);
extern void state_ops_altering(const StateDesc *desc);
extern void state_ops_prepare(void);
extern void state_ops_lock_change(const StateDesc *desc);
extern void state_ops_lock_alter(const StateDesc *desc);
extern void state_ops_wait_writers(const StateDesc *desc);
extern bool state_ops_wrote(const StateDesc *desc);

#endif							/* STATE_BACKEND_STATE_OPS_H */
