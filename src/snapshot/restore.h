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
extern char *restore_on_start(uint32 kept_backends);

#endif							/* STATE_BACKEND_RESTORE_H */
