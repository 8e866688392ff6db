/*
 * snapshot/snapshot_driver.h
 *		Taking a snapshot: the cut (in the state worker) and writing it.
 */
#ifndef STATE_BACKEND_SNAPSHOT_DRIVER_H
#define STATE_BACKEND_SNAPSHOT_DRIVER_H

#include "lib/stringinfo.h"

#include "format/snapshot_format.h"

extern int64 snapshot_request(const char *path, SnapshotFormat format, bool workers_own);
extern int64 snapshot_request_cut(const char *path, SnapshotFormat format);
extern bool snapshot_handle_request(const char *payload, uint32 len, StringInfo reply);
extern bool snapshot_run_pending(void);
extern void snapshot_fail_orphan(void);

/*
 * Called in the worker when a checkpoint completes, with the WAL position
 * of its cut and whether it holds a logged state (the worker installs
 * logged.c's; NULL: nothing).
 */
typedef void (*CheckpointDoneHook) (XLogRecPtr wal_position, bool holds_logged,
									const StateDesc *held, int nheld);
extern void snapshot_set_checkpoint_hook(CheckpointDoneHook hook);

#endif							/* STATE_BACKEND_SNAPSHOT_DRIVER_H */
