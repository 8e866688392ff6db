/*
 * snapshot/restore.h
 *		Loading a snapshot back: verified first, then all or nothing.
 */
#ifndef STATE_BACKEND_RESTORE_H
#define STATE_BACKEND_RESTORE_H

#include "format/snapshot_format.h"
#include "snapshot/rescale.h"

extern int64 restore_into_database(const SnapshotSource *srcs, int nsrcs,
								   const char *from_database, int backend_override,
								   const RestoreSplit *split);
/*
 * The start cannot load checkpoint id for the reason detail (a sentence):
 * say so, and wait before it is tried again (the worker's, worker.c).
 */
typedef void (*RestoreWaitFn) (int64 id, const char *detail);

/* What restore_on_start found. */
typedef struct RestoreStart
{
	const char *unregistered;	/* a backend the checkpoint has states of, not
								 * registered here (then nothing is loaded) */
	SnapshotManifest *manifest; /* the checkpoint's, as read (NULL: none) */
	bool		complete;		/* every section was loaded */
} RestoreStart;

extern char *restore_on_start(bool standby, RestoreWaitFn wait, RestoreStart *out);
extern void restore_unlogged_at_promotion(const char *loaded, RestoreWaitFn wait);

/*
 * Called in a session before a restore creates logged states, so that the
 * WAL it writes for them is kept from their first record on: it counts a
 * logged state pending (registry_logged_pending), which restore uncounts
 * once the states are registered (module.c installs logged.c's).
 */
typedef void (*RestoreLoggedHook) (void);
extern void restore_set_logged_hook(RestoreLoggedHook hook);

/* Reading one state of a snapshot with SQL (snapshot_entries). */
typedef struct SnapshotQuery
{
	const SnapshotSource *src;
	SnapshotManifest *m;
	SnapshotState *st;
	StateDesc	desc;			/* with this server's types */
} SnapshotQuery;

extern void snapshot_query_open(SnapshotQuery *q, const SnapshotSource *src,
								const char *from_database, const char *name);
extern int64 snapshot_query_read(SnapshotQuery *q, SnapshotEntryFn fn, void *arg);

#endif							/* STATE_BACKEND_RESTORE_H */
