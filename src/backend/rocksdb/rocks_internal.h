/*
 * backend/rocksdb/rocks_internal.h
 *		What the files of the rocksdb backend share: the worker's RocksDB
 *		instance (rocks_instance.c), the stored layout (rocks_keys.c), the
 *		requests sessions send (rocks_client.c builds them, rocks_requests.c
 *		serves them) and the snapshot strategy (rocks_snapshot.c).
 */
#ifndef STATE_BACKEND_ROCKS_INTERNAL_H
#define STATE_BACKEND_ROCKS_INTERNAL_H

#include <signal.h>

#include <rocksdb/c.h>

#include "lib/stringinfo.h"

#include "rocks.h"

/*
 * What sessions ask the state worker about rocksdb states (the kind of a
 * request addressed to the rocksdb backend; the worker's end of a round
 * and a session's sync are the host's STATE_REQUEST_ROUND_END and
 * STATE_REQUEST_SYNC).
 */
typedef enum RocksReqKind
{
	ROCKS_REQ_OPEN = 1,			/* a new state: create its storage */
	ROCKS_REQ_GET,
	ROCKS_REQ_PUT,
	ROCKS_REQ_REMOVE,
	ROCKS_REQ_APPEND,
	ROCKS_REQ_CAS,
	ROCKS_REQ_FOLD,
	ROCKS_REQ_MAP_GET,
	ROCKS_REQ_MAP_PUT,
	ROCKS_REQ_MAP_REMOVE,
	ROCKS_REQ_SCAN,
	ROCKS_REQ_LENGTH,
	ROCKS_REQ_TRUNCATE,
	ROCKS_REQ_SIZE,
	ROCKS_REQ_RESTORE_NATIVE,
	ROCKS_REQ_COMPACT,
	ROCKS_REQ_FIGURES,			/* RocksDB's own figures (state.worker) */
	/* A transactional commit's writes, staged (rocks_stage.c). */
	ROCKS_REQ_STAGE,			/* one write of a commit, kept aside */
	ROCKS_REQ_STAGE_PREPARE,	/* make them durable, before the commit record */
	ROCKS_REQ_STAGE_APPLY		/* apply them at once, after it */
} RocksReqKind;

/* Its settings (rocks_options.c). */
extern char *state_backend_rocksdb_dir;
extern bool state_backend_rocksdb_sync;
extern int	state_backend_rocksdb_cache_mb;
extern int	state_backend_rocksdb_shared_cache_kb;
extern int	state_backend_rocksdb_write_buffer_mb;
extern bool state_backend_rocksdb_session_reads;
extern int	state_backend_rocksdb_session_cache_mb;
extern int	state_backend_rocksdb_session_reads_after;
extern int	state_backend_rocksdb_compression;

/* state_backend.rocksdb_compression */
#define ROCKS_COMPRESSION_NONE	0
#define ROCKS_COMPRESSION_LZ4	1
#define ROCKS_COMPRESSION_ZSTD	2
extern void rocks_define_settings(void);
extern void rocks_table_options(rocksdb_block_based_table_options_t *table);
extern rocksdb_mergeoperator_t *rocks_list_merge_operator(void);

/* The host's services (rocks_provider.c). */
extern const StateBackendHost *rocks_host;

/* Sessions' requests to the worker (rocks_client.c). */
extern int64 rocks_call_int64(RocksReqKind op, const char *payload, uint32 len,
							  bool long_running);

/* Fault points (state_backend.fault_points) through the host. */
#define FAULT_POINT_HOST(name) \
	do { \
		if (unlikely(*rocks_host->faults_armed)) \
			rocks_host->fault_point(name); \
	} while (0)

/* The shared cache of entries sessions read in place (rocks_cache.c). */
extern Size rocks_cache_shmem_size(void);
extern void rocks_cache_shmem_init(void);

/* The instance (state worker only). */
extern bool rocks_open_existing(void);
extern void rocks_close(void);
extern bool rocks_failed(void);
extern void rocks_check_not_failed(void);
extern void rocks_apply_settings(void);
extern bool rocks_adopt_states(void);
extern void rocks_set_aside(const char *why);
extern void rocks_begin_load(void);
extern void rocks_end_load(void);
extern void rocks_sweep_read_scratch(void);
extern bool rocks_registry_changed(void);
extern void rocks_sync_registry(void);

/* Requests of sessions, served by the worker. */
extern bool rocks_handle_request(RocksReqKind op, const char *payload, uint32 len,
								 StringInfo reply);
extern bool rocks_handle_restore(const char *payload, uint32 len, StringInfo reply);

/* Sessions: the statement and transaction hooks (from _PG_init). */
extern void rocks_client_init(void);

/*
 * A request's flags.  (The byte held only LOGGED, as 0 or 1, before: a
 * staged commit kept across an upgrade reads the same.)
 */
#define ROCKS_REQUEST_LOGGED	0x01	/* the state's writes go to WAL */
#define ROCKS_REQUEST_UNCACHED	0x02	/* sessions do not read its keys in the
										 * entry cache (rocks_cache_serves) */

/*
 * Every state request starts with this header, then the key image (keylen
 * bytes), then what the op needs.
 */
typedef struct RocksRequest
{
	uint32		state_id;
	int32		slot;			/* registry slot */
	uint8		kind;			/* StateKind */
	uint8		flags;			/* ROCKS_REQUEST_* */
	uint16		key_group;
	uint32		keylen;
} RocksRequest;

/*
 * A staged request starts with this header: the committing session's stage
 * (its PGPROC number + 1) and its transaction; a ROCKS_REQ_STAGE then holds
 * [uint16 request kind][the request].  count: in a ROCKS_REQ_STAGE_PREPARE,
 * how many writes the session staged, so that a worker that restarted
 * while they were sent (and holds only some of them) refuses the commit.
 */
typedef struct RocksStageHeader
{
	uint32		stage;
	uint32		count;
	uint64		fxid;			/* FullTransactionId */
} RocksStageHeader;

/*
 * A transactional commit's writes to rocksdb states, staged: the session's
 * side (rocks_client.c) and the routine table the host's transactional
 * layer calls (KeyedStateBackend.stage).
 */
extern bool rocks_client_stage_begin(uint32 stage, uint64 fxid);
extern void rocks_client_stage_end(void);
extern void rocks_client_stage_prepare(uint64 fxid);
extern void rocks_client_stage_apply(void);
extern const StateStageRoutine rocks_stage_routine;

/* rocks_stage.c: the worker's side of staged commits, and the sessions' board */
extern Size rocks_stage_shmem_size(void);
extern void rocks_stage_shmem_init(void);
extern void rocks_stage_expect(uint64 fxid);
extern void rocks_stage_wait(uint64 fxid);
extern bool rocks_serve_request(RocksReqKind op, const char *payload, uint32 len,
								StringInfo reply);
extern bool rocks_stage_handle(RocksReqKind op, const char *payload, uint32 len,
							   StringInfo reply);
extern void rocks_stage_round(void);
extern void rocks_stage_recover(void);
extern bool rocks_commit_held;
extern bool rocks_serving_session;

/* Flags of a CAS request (rocks_requests.c: handle_cas). */
#define ROCKS_CAS_EXPECTED	0x01	/* the key holds an image to compare */
#define ROCKS_CAS_REMOVE	0x02	/* remove the key instead of storing */
#define ROCKS_CAS_MAP_ENTRY	0x04	/* the image is that of one map entry */

/* The state worker's instance. */
typedef struct RocksInstance
{
	rocksdb_t  *db;
	rocksdb_options_t *options;
	rocksdb_cache_t *cache;
	rocksdb_writeoptions_t *wopts;
	rocksdb_readoptions_t *ropts;
	rocksdb_flushoptions_t *flushopts;
	rocksdb_column_family_handle_t *deflt;
	rocksdb_writebatch_t *batch;	/* writes of the worker's pass, uncommitted */
	uint64		batch_clears;	/* times the batch was emptied */
	XLogRecPtr	batch_lsn;		/* end of the WAL records of its logged writes */
	bool		batch_replayed; /* it holds changes replayed from WAL */
	XLogRecPtr	applied_lsn;	/* the position the instance holds (rocks_commit) */
	bool		failed;			/* a write failed: RocksDB is not called again */
	bool		lost_logged;	/* a failed write held changes of logged states */
} RocksInstance;

extern RocksInstance rocks;

extern void rocks_check_space(void);
extern void rocks_check_space_for(uint64 extra);
extern bool rocks_kept_data(void);

typedef bool (*RocksScanFn) (void *arg, const char *k, size_t klen,
							 const char *v, size_t vlen);

/* rocks_instance.c: compactions on a thread of the worker's own */
#define ROCKS_COMPACT_DONE		0
#define ROCKS_COMPACT_RUNNING	1
#define ROCKS_COMPACT_BUSY		2
extern int	rocks_compact_request(rocksdb_t *db, uint32 id, rocksdb_column_family_handle_t *cf,
								  bool start, bool twice);
extern void rocks_compact_forget(uint32 id);

/* rocks_cache.c: entries sessions read in place; the worker writes them */
typedef enum RocksCacheResult
{
	ROCKS_CACHE_MISS,
	ROCKS_CACHE_FOUND,
	ROCKS_CACHE_ABSENT			/* the key is known to have no state */
} RocksCacheResult;

/* An entry of the cache: a key's image (mkey NULL), or one entry of its map. */
typedef struct RocksCacheKey
{
	uint32		state_id;
	const char *key;
	uint32		keylen;
	uint32		hash;			/* the host's key_hash of the key image */
	const char *mkey;
	uint32		mklen;
} RocksCacheKey;

extern bool rocks_cache_kind(uint8 kind);
extern void rocks_cache_key(RocksCacheKey *ck, uint32 state_id, const char *key, uint32 keylen,
							uint32 hash, const char *mkey, uint32 mklen);
extern bool rocks_cache_serves(const StateInfo *info);
extern RocksCacheResult rocks_cache_lookup(const RocksCacheKey *ck, StringInfo out);
extern void rocks_cache_store(const RocksCacheKey *ck, const char *value, uint32 vallen);
extern void rocks_cache_write(const RocksCacheKey *ck, const char *value, uint32 vallen,
							  bool forget);
extern void rocks_cache_forget_key(uint32 state_id, const char *key, uint32 keylen);
extern void rocks_cache_committed(bool ok);
extern void rocks_cache_forget_state(uint32 state_id);
extern void rocks_cache_clear(void);
extern void rocks_cache_fill(const RocksCacheKey *ck, const char *value, uint32 vallen,
							 bool (*still_current) (uint32 state_id, uint32 key_hash));
extern void rocks_cache_flush_counts(void);
extern int64 rocks_cache_fills(void);

/*
 * rocks_view.c: sessions' read-only views of the instance, and the worker's
 * marks of what it changed
 */
typedef enum RocksViewResult
{
	ROCKS_VIEW_ASK,				/* the worker must be asked */
	ROCKS_VIEW_FOUND,
	ROCKS_VIEW_ABSENT			/* the key has no state */
} RocksViewResult;

extern Size rocks_view_shmem_size(void);
extern void rocks_view_shmem_init(void);
extern void rocks_view_mark_key(uint32 state_id, const char *key, uint32 keylen);
extern void rocks_view_mark_all(void);
extern void rocks_view_publish(void);
extern uint64 rocks_view_epoch(void);
extern void rocks_view_flushed(uint64 epoch);
extern void rocks_view_new_instance(void);
extern void rocks_view_flush_counts(void);
extern void rocks_view_worker_round(rocksdb_t *db);
extern void rocks_view_xact_end(void);
extern void rocks_view_figures(int64 *reads, int64 *opens, int64 *catch_ups);
extern RocksViewResult rocks_view_get(const StateInfo *info, const StateKey *key,
									  StringInfo out);
extern RocksViewResult rocks_view_map_get(const StateInfo *info, const StateKey *key,
										  const char *mkey, uint32 mkeylen,
										  StringInfo out, bool *isnull);

/* rocks_ttl.c */
extern void rocks_ttl_make_options(void);
extern void rocks_family_name(char *buf, size_t size, const StateInfo *state);
extern bool rocks_family_id(const char *name, uint32 *id);
extern rocksdb_options_t *rocks_family_options(const char *name);

/* rocks_instance.c */
extern void rocks_check(char *err, const char *what);
extern void rocks_options_ready(void);

/* The instance's own figures (state.worker), in this order. */
#define ROCKS_FIGURE_MEMTABLE			0
#define ROCKS_FIGURE_PENDING_COMPACTION	1
#define ROCKS_FIGURE_LIVE_DATA			2
#define ROCKS_FIGURE_SST_FILES			3
#define ROCKS_FIGURE_BLOCK_CACHE		4
#define ROCKS_FIGURE_CACHE_HITS			5
#define ROCKS_FIGURE_CACHE_MISSES		6
#define ROCKS_FIGURE_COUNT				7
extern bool rocks_figures(int64 *out);
extern void rocks_block_signals(sigset_t *saved);
extern void rocks_restore_signals(const sigset_t *saved);
extern void rocks_open(void);
extern bool rocks_is_open(void);
extern void rocks_flush_all(void);
#define ROCKS_IDLE_FLUSH_MS 5000
extern void rocks_flush_idle(void);
extern bool rocks_batch_waits(void);
extern void rocks_commit(void);
extern void rocks_wal_flush(XLogRecPtr upto);
extern XLogRecPtr rocks_applied_lsn(void);
extern rocksdb_column_family_handle_t *rocks_family(uint32 id, int slot);
extern char *rocks_get(rocksdb_column_family_handle_t *cf, const char *key, size_t keylen,
					   size_t *vallen);
extern void rocks_scan(rocksdb_t *db, rocksdb_readoptions_t *ropts,
					   rocksdb_column_family_handle_t *cf,
					   const char *from, size_t fromlen, const char *to, size_t tolen,
					   RocksScanFn fn, void *arg);
extern int64 rocks_count_keys(rocksdb_t *db, rocksdb_readoptions_t *ropts,
							  rocksdb_column_family_handle_t *cf, bool map);
extern int64 rocks_property_int(rocksdb_column_family_handle_t *cf, const char *name);

/* rocks_count.c */
extern void rocks_count_families(rocksdb_t *db, rocksdb_readoptions_t *ropts,
								 rocksdb_column_family_handle_t *const *cfs, const bool *maps,
								 int n, int64 *entries);

/* rocks_keys.c */

/* The parts of a RocksDB key (rocks_split_key): the key image, the map key. */
typedef struct RocksRowKey
{
	const char *key;
	uint32		keylen;
	const char *mkey;			/* empty but for a map state's rows */
	uint32		mklen;
} RocksRowKey;

extern void rocks_key(StringInfo buf, uint16 key_group, const char *key, uint32 keylen);
extern uint32 rocks_key_slot(uint32 state_id, uint32 key_hash);
extern void rocks_map_key(StringInfo buf, const StringInfo prefix, const char *mkey,
						  uint32 mklen);
extern void rocks_split_key(const char *k, size_t klen, RocksRowKey *out);
extern size_t rocks_key_prefix_len(const char *k, size_t klen);
extern void rocks_key_group_range(int key_group, StringInfo from, StringInfo to);
extern void rocks_key_groups_range(int first, int last, StringInfo from, StringInfo to);
extern void rocks_state_range(StringInfo from, StringInfo to);
extern void rocks_prefix_end(StringInfo prefix, StringInfo end);
extern void rocks_map_value(StringInfo buf, const char *value, uint32 len);
extern void rocks_map_value_read(const char *v, size_t vlen, const char **value,
								 uint32 *len);
extern void rocks_map_value_out(StringInfo buf, bool *isnull);
extern void rocks_put_pair(StringInfo out, const char *key, uint32 keylen,
						   const char *value, uint32 len);
extern void rocks_map_record(StringInfo out, const char *mkey, uint32 mklen,
							 const char *v, size_t vlen);

/*
 * RocksDB keeps a map state as one row per map entry, in key order; a
 * RocksKeyRows gathers the rows of one key back into its map image, the
 * one regrouping every reader of those rows goes through (rocks_keys.c).
 */
typedef struct RocksKeyRows
{
	StringInfoData key;			/* the key whose rows are being read */
	StringInfoData image;		/* their map image so far */
	bool		open;			/* a key is being read */
} RocksKeyRows;

typedef void (*RocksImageFn) (void *arg, const char *key, uint32 keylen,
							  const char *image, uint32 imagelen);

extern void rocks_rows_init(RocksKeyRows *rows);
extern bool rocks_rows_new_key(const RocksKeyRows *rows, const char *key, uint32 keylen);
extern bool rocks_rows_follow(RocksKeyRows *rows, const char *key, uint32 keylen);
extern void rocks_rows_add(RocksKeyRows *rows, const char *k, size_t klen, const char *v,
						   size_t vlen, RocksImageFn fn, void *arg);
extern void rocks_rows_end(RocksKeyRows *rows, RocksImageFn fn, void *arg);
extern void rocks_rows_free(RocksKeyRows *rows);

/* rocks_client.c: the data operations (KeyedStateBackend) */
extern const KeyedStateBackend rocks_keyed_backend;

/* rocks_snapshot.c */
extern const SnapshotStrategy rocks_snapshot_strategy;

#endif							/* STATE_BACKEND_ROCKS_INTERNAL_H */
