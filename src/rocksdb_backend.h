/*
 * rocksdb_backend.h
 *		The worker's side of rocksdb states: the RocksDB instance, the
 *		requests sessions send about it (rocksdb_client.c builds them), and
 *		its part in snapshots and restore.
 */
#ifndef STATE_BACKEND_ROCKSDB_BACKEND_H
#define STATE_BACKEND_ROCKSDB_BACKEND_H

#include "lib/stringinfo.h"

#include "channel.h"
#include "state_backend.h"

/*
 * Every state request starts with this header, then the key image (keylen
 * bytes), then what the op needs.
 */
typedef struct RocksRequest
{
	uint32		state_id;
	int32		slot;			/* registry slot */
	uint8		kind;			/* StateKind */
	uint8		pad;
	uint16		key_group;
	uint32		keylen;
} RocksRequest;

/* Settings (guc.c). */
extern char *state_backend_rocksdb_dir;
extern bool state_backend_rocksdb_sync;
extern int	state_backend_rocksdb_cache_mb;
extern int	state_backend_rocksdb_write_buffer_mb;

/* The instance (state worker only). */
extern bool rocksdb_open_existing(void);
extern void rocksdb_close_instance(void);
extern void rocksdb_apply_settings(void);
extern bool rocksdb_is_open(void);
extern bool rocksdb_adopt_states(void);
extern void rocksdb_sync_registry(void);
extern bool rocksdb_handle_request(ChannelOp op, const char *payload, uint32 len,
								   StringInfo reply);

/* Snapshots (rocksdb_snapshot.c; the state worker, but for verify). */
struct SnapshotWriter;
extern void rocksdb_snapshot_cut(int64 id);
extern void rocksdb_snapshot_release(int64 id);
extern void rocksdb_snapshot_collect(uint32 state_id, int kind, int key_group,
									 StringInfo out);
extern void rocksdb_snapshot_write_files(const char *dir, const char *shared_dir,
										 const StateDesc *descs, int ndescs,
										 struct SnapshotWriter *w, bool *reused);
extern void rocksdb_snapshot_verify(const char *snapdir, const char *const *lists,
									int nlists);
extern void rocksdb_snapshot_sweep_shared(const char *root);
extern int64 rocksdb_restore_native(const char *snapdir, const uint32 *from_ids,
									const uint32 *to_ids, const int *to_slots,
									const int *kinds, int n);
extern bool rocksdb_handle_restore(const char *payload, uint32 len, StringInfo reply);

#endif							/* STATE_BACKEND_ROCKSDB_BACKEND_H */
