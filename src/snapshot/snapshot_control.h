/*
 * snapshot/snapshot_control.h
 *		Snapshots in flight and done, in shared memory: the running one,
 *		cancel, the history behind the state.snapshots view, and snapshots
 *		kept in shared memory.  Writing them is snapshot_driver.h's.
 */
#ifndef STATE_BACKEND_SNAPSHOT_CONTROL_H
#define STATE_BACKEND_SNAPSHOT_CONTROL_H

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"

#include "utils/dsa.h"

#include "common/shmem_parts.h"
#include "format/snapshot_format.h"

typedef enum SnapshotStatus
{
	SNAPSHOT_RUNNING,
	SNAPSHOT_COMPLETED,
	SNAPSHOT_FAILED,
	SNAPSHOT_CANCELLED
} SnapshotStatus;

/* What state.snapshots shows of one snapshot. */
/* Where a running snapshot is (state.snapshots.phase). */
typedef enum SnapshotPhase
{
	SNAPSHOT_PHASE_CUT,			/* waiting for, or making, its cut */
	SNAPSHOT_PHASE_KEY_GROUPS,	/* writing key groups */
	SNAPSHOT_PHASE_NATIVE_FILES,	/* backends writing their own files */
	SNAPSHOT_PHASE_CONVERTING,	/* canonical: rewriting the files */
	SNAPSHOT_PHASE_FINISHING	/* MANIFEST, sync, retention */
} SnapshotPhase;

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
	XLogRecPtr	wal_position;	/* WAL insert position at the cut */
	int64		ttl_now;		/* the TTL clock at the cut */
	int			sqlerrcode;
	char		error[512];
	SnapshotPhase phase;
	int			key_groups_done;
	int			key_groups_total;
	int			converters_done;	/* converters that finished their database */
} SnapshotInfo;

extern const ShmemPart snapshot_control_part;
extern const ShmemPart snapshot_cut_descs_part;

/* The running snapshot as the worker picks it up. */
typedef struct SnapshotJob
{
	int64		id;
	SnapshotInfo info;
	StateDesc  *descs;
	int			ndescs;
	bool		is_checkpoint;
} SnapshotJob;

extern bool snapshot_cancel(int64 id);
extern bool snapshot_get(int64 id, SnapshotInfo *out);
extern int	snapshot_list(SnapshotInfo **out);
extern char *snapshot_memory_image(int64 id, Size *len);
extern const char *snapshot_status_name(SnapshotStatus status);

/* Converters of canonical snapshots (canonical.c). */
extern int	snapshot_running_descs(int64 id, StateDesc **descs);
extern void snapshot_note_converted(int64 id);
extern int	snapshot_converters_done(int64 id);
extern void snapshot_note_error(int64 id, int sqlerrcode, const char *message);
extern bool snapshot_take_error(int64 id, int *sqlerrcode, char *buf, Size buflen);
extern char *snapshot_error_text(ErrorData *edata);

/* What a running snapshot has on disk, for the worker that takes over. */
typedef enum SnapshotFiles
{
	SNAPSHOT_FILES_NONE,		/* nothing of its own (yet, or in memory) */
	SNAPSHOT_FILES_PARTIAL,		/* its directory, made by its writer */
	SNAPSHOT_FILES_DURABLE		/* complete and durable */
} SnapshotFiles;

/* The snapshot driver's side (the state worker). */
extern void snapshot_check_cancel(void);
extern void snapshot_bump_next_id(int64 id);
extern int64 snapshot_control_reserve(void);
extern bool snapshot_control_workers_own_running(void);
extern StateDesc *snapshot_control_cut_descs(void);
extern void snapshot_control_hold_cuts(bool hold);
extern void snapshot_control_begin(int64 id, const char *path, SnapshotFormat format,
								   bool checkpoint, bool workers_own,
								   void (*cut) (void *arg), void *arg,
								   const int *ndescs, const XLogRecPtr *wal_position);
extern bool snapshot_control_pick(SnapshotJob *job);
extern void snapshot_control_progress(int64 id, int64 entries, int64 bytes,
									  int key_groups_done);
extern void snapshot_control_phase(int64 id, SnapshotPhase phase, int key_groups_done,
								   int key_groups_total);
extern const char *snapshot_phase_name(SnapshotPhase phase);
extern void snapshot_control_set_incremental(int64 id);
extern void snapshot_control_keep_memory(int64 id, const char *image, Size len);
extern void snapshot_control_note_files(int64 id, SnapshotFiles files);
extern bool snapshot_control_orphan(SnapshotInfo *info, SnapshotFiles *files);
extern void snapshot_control_finish(int64 id, SnapshotStatus status, int64 entries,
									int64 bytes, int sqlerrcode, const char *error);

#endif							/* STATE_BACKEND_SNAPSHOT_CONTROL_H */
