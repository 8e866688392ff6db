/*
 * snapshot/checkpoint.h
 *		Checkpoints under state_backend.checkpoint_dir: chk-<id> naming,
 *		finding the newest complete one, retention.
 */
#ifndef STATE_BACKEND_CHECKPOINT_H
#define STATE_BACKEND_CHECKPOINT_H

#include "format/snapshot_format.h"

extern char *checkpoint_path(int64 id);
extern char *checkpoint_newest(const char *root, int64 *id);
extern int64 checkpoint_max_id(const char *root);
extern void checkpoint_retain(int64 newest_id);
extern bool checkpoint_lease(const char *dir);
extern void checkpoint_request(void);
extern bool checkpoint_take_request(void);
extern SnapshotManifest *checkpoint_read_manifest(const char *dir, SnapshotSource *src,
												  bool report);
extern void checkpoint_final_failed(int64 id, const char *error);
extern void checkpoint_warn_final_failed(const char *loaded_dir);

#endif							/* STATE_BACKEND_CHECKPOINT_H */
