/*
 * restore.h
 *		Loading a snapshot back: verified first, then all or nothing.
 */
#ifndef STATE_BACKEND_RESTORE_H
#define STATE_BACKEND_RESTORE_H

#include "snapshot.h"

extern int64 restore_into_database(const SnapshotSource *src, const char *from_database,
								   int backend_override);
extern void restore_on_start(bool rocksdb_has_data);

#endif							/* STATE_BACKEND_RESTORE_H */
