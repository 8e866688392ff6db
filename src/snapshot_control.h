/*
 * snapshot_control.h
 *		Snapshots in flight and done: requesting one (the cut), the state
 *		worker writing it, cancel and wait, the history behind the
 *		state.snapshots view, and snapshots kept in shared memory.
 */
#ifndef STATE_BACKEND_SNAPSHOT_CONTROL_H
#define STATE_BACKEND_SNAPSHOT_CONTROL_H

#include "datatype/timestamp.h"

#include "snapshot.h"

typedef enum SnapshotStatus
{
	SNAPSHOT_RUNNING,
	SNAPSHOT_COMPLETED,
	SNAPSHOT_FAILED,
	SNAPSHOT_CANCELLED
} SnapshotStatus;

/* What state.snapshots shows of one snapshot. */
typedef struct SnapshotInfo
{
	int64		id;
	char		path[MAXPGPATH];
	SnapshotFormat format;
	SnapshotStatus status;
	TimestampTz started_at;
	TimestampTz finished_at;
	int64		states;
	int64		entries;
	int64		bytes;
	bool		incremental;
	int			sqlerrcode;
	char		error[512];
} SnapshotInfo;

extern Size snapshot_control_shmem_size(void);
extern void snapshot_control_shmem_init(void);

extern int64 snapshot_request(const char *path, SnapshotFormat format);
extern int64 snapshot_request_cut(const char *path, SnapshotFormat format);
extern bool snapshot_handle_request(const char *payload, uint32 len, StringInfo reply);
extern bool snapshot_cancel(int64 id);
extern bool snapshot_get(int64 id, SnapshotInfo *out);
extern int	snapshot_list(SnapshotInfo **out);
extern char *snapshot_memory_image(int64 id, Size *len);
extern const char *snapshot_status_name(SnapshotStatus status);

/* Converters of canonical snapshots (canonical.c). */
extern int	snapshot_running_descs(int64 id, StateDesc **descs);
extern void snapshot_note_error(int64 id, int sqlerrcode, const char *message);
extern bool snapshot_take_error(int64 id, int *sqlerrcode, char *buf, Size buflen);
extern char *snapshot_error_text(ErrorData *edata);

/* The state worker's side. */
extern void snapshot_worker_attach(void);
extern bool snapshot_run_pending(void);
extern void snapshot_check_cancel(void);
extern void snapshot_bump_next_id(int64 id);

#endif							/* STATE_BACKEND_SNAPSHOT_CONTROL_H */
