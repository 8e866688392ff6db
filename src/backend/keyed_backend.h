/*
 * backend/keyed_backend.h
 *		KeyedStateBackend: the one interface between the layers above
 *		(sql/, snapshot/, state_ops.c) and the places where keyed state is
 *		kept, with each backend's part in snapshots (SnapshotStrategy).
 *
 * The SQL layer resolves a state, turns keys and values into byte images
 * (common/codec.c) and calls through this interface; it never reaches a
 * backend's storage otherwise.  Images are opaque bytes here: equal keys
 * have equal images.  Their layouts (list and map images) are defined once,
 * in format/records.h.  The implementations are backend/heap_backend.c
 * (memory, filesystem) and backend/rocksdb/ (rocksdb).
 */
#ifndef STATE_BACKEND_KEYED_BACKEND_H
#define STATE_BACKEND_KEYED_BACKEND_H

#include "access/xlogdefs.h"
#include "lib/stringinfo.h"
#include "utils/guc.h"

#include "common/fold.h"
#include "common/types.h"
#include "format/snapshot_format.h"

/* The backends a state can be created in (StateDesc.backend). */
typedef enum StateBackendId
{
	STATE_BACKEND_MEMORY,
	STATE_BACKEND_FILESYSTEM,
	STATE_BACKEND_ROCKSDB
} StateBackendId;

#define STATE_BACKEND_COUNT		3

/* A key as the backends see it: its image, hash and key group. */
typedef struct StateKey
{
	const char *data;
	uint32		len;
	uint32		hash;			/* common/key_group.c: key_image_hash() */
	uint16		key_group;
} StateKey;

/* state_key_set fills a key from its image: hash and key group (keyed_backend.c). */
extern void state_key_set(StateKey *key, const char *data, uint32 len);

/* The state an operation applies to: its descriptor and registry slot. */
typedef struct StateTarget
{
	const StateDesc *desc;
	int			slot;
} StateTarget;

/*
 * StateMergeFn folds the image "in" into the current image "cur" (NULL when
 * the key has no state yet) and writes the result to "out".  It is
 * PostgreSQL code (a type's "+" or comparison, maybe a user's function), so
 * a backend calls it with no lock held, and stores the result only if the
 * key's image is still "cur", folding again otherwise: merges of one key
 * never lose an update, and a fold that reads the state does not deadlock.
 */
typedef void (*StateMergeFn) (const char *cur, uint32 curlen,
							  const char *in, uint32 inlen,
							  StringInfo out, void *arg);

/*
 * StateEntryFn receives one entry of an iteration: a key and its whole
 * value image, or a map key and its value (value NULL for a NULL value).
 * It is never called with a lock held, so it may allocate and raise errors.
 */
/* StateFigureFn receives one of a backend's own figures (state.worker). */
typedef void (*StateFigureFn) (void *arg, const char *name, int64 value, bool isnull);

typedef void (*StateEntryFn) (void *arg, const char *key, uint32 keylen,
							  const char *value, uint32 valuelen);

/* One state to copy out of a backend's native snapshot files. */
typedef struct NativeRestoreItem
{
	uint32		from_id;		/* the state's id in the snapshot */
	uint32		to_id;			/* the hidden state it goes to */
	int			to_slot;		/* its registry slot */
	StateKind	kind;
	int32		kg_first;		/* only keys of these key groups */
	int32		kg_last;
} NativeRestoreItem;

/*
 * SnapshotStrategy: a backend's part of a snapshot (Flink's
 * SnapshotStrategy).  The snapshot driver calls it for each backend in
 * keyed_backend_all() order, in the state worker, and names no backend.
 * Callbacks a backend does not need are NULL.
 */
typedef struct SnapshotStrategy
{
	/*
	 * The slow part of the cut of snapshot id, before its instant.  The
	 * worker serves no request between this and the instant, so a backend
	 * whose states only the worker changes (rocksdb) freezes them here.
	 */
	void		(*prepare) (int64 id);

	/*
	 * The instant of the cut, under the snapshot lock.  A backend whose
	 * states change under its own locks (heap) holds them all and calls
	 * at_cut(arg) meanwhile, which copies the registry's descriptors.
	 */
	void		(*cut) (int64 id, void (*at_cut) (void *arg), void *arg);

	/*
	 * Append the entries of key group kg of this backend's states, as of the
	 * cut, as entry records (format/records.h), for the states whose
	 * "collect" flag is set (those written as key-group files).
	 */
	void		(*collect) (int64 id, const StateDesc *descs, const bool *collect,
							int ndescs, int key_group, StringInfo records);

	/*
	 * In a native snapshot on disk: write the backend's own files for its
	 * states under dir (a checkpoint's shared files under shared_dir, when
	 * given), and tell the writer each state's list file
	 * (snapshot_writer_set_native).  *reused: files were shared with earlier
	 * checkpoints.  NULL: the backend's states are key-group files there too.
	 */
	void		(*write_native) (int64 id, const char *dir, const char *shared_dir,
								 const StateDesc *descs, const bool *mine, int ndescs,
								 SnapshotWriter *w, bool *reused);

	/* The snapshot ended (completed, failed or cancelled): let go of the cut. */
	void		(*release) (int64 id);

	/* Check a native snapshot's own files (state list files as named). */
	void		(*verify_native) (const char *snapdir, const char *const *lists, int nlists);

	/* Copy states out of a native snapshot's own files; returns the keys. */
	int64		(*restore_native) (const char *snapdir, const NativeRestoreItem *items,
								   int nitems);

	/*
	 * Read, in a session, one state's entries out of a native snapshot's own
	 * files (verified before), as key and stored value images; desc is the
	 * state as the snapshot describes it (its id there).  Returns how many.
	 * NULL: they cannot be read but by a restore.
	 */
	int64		(*read_native) (const char *snapdir, const StateDesc *desc, StateEntryFn fn,
								void *arg);

	/* Checkpoints under root were removed: drop files none of them uses. */
	void		(*after_retention) (const char *root);

	/* What the native files are called in messages ("RocksDB"). */
	const char *native_files_name;
} SnapshotStrategy;

typedef struct KeyedStateBackend
{
	const char *name;

	/* Whole image of a key's state: value, list, or reducing result. */
	bool		(*get) (const StateTarget *st, const StateKey *key, StringInfo out);
	void		(*put) (const StateTarget *st, const StateKey *key,
						const char *value, uint32 len);
	bool		(*remove) (const StateTarget *st, const StateKey *key);

	/*
	 * Compare and set: if the key's whole image (mkey NULL), or the value
	 * of its map entry mkey, is still "expect", store "value" instead, or
	 * remove the key or the map entry when value is NULL.  expect NULL: the
	 * key has no state (never with a map key).  Returns whether it did.
	 */
	bool		(*replace) (const StateTarget *st, const StateKey *key,
							const char *mkey, uint32 mkeylen,
							const char *expect, uint32 expectlen,
							const char *value, uint32 len);

	/* ListState: append list elements (in list image form). */
	void		(*append) (const StateTarget *st, const StateKey *key,
						   const char *elems, uint32 len);

	/*
	 * ReducingState: fold a value in; the result image goes to "out".
	 * fold is NULL when only fn can fold.
	 */
	void		(*merge) (const StateTarget *st, const StateKey *key,
						  const char *value, uint32 len,
						  StateMergeFn fn, void *arg, const StateFold *fold,
						  StringInfo out);

	/* MapState entries of one key. */
	bool		(*map_get) (const StateTarget *st, const StateKey *key,
							const char *mkey, uint32 mkeylen,
							StringInfo out, bool *isnull);
	void		(*map_put) (const StateTarget *st, const StateKey *key,
							const char *mkey, uint32 mkeylen,
							const char *value, uint32 len, bool isnull);
	bool		(*map_remove) (const StateTarget *st, const StateKey *key,
							   const char *mkey, uint32 mkeylen);
	void		(*map_iterate) (const StateTarget *st, const StateKey *key,
								StateEntryFn fn, void *arg);

	/* Elements of a list, or entries of a map, under one key. */
	int64		(*length) (const StateTarget *st, const StateKey *key);

	/* Every key of a state, or of one key group of it (key_group >= 0). */
	void		(*iterate) (const StateTarget *st, int key_group,
							StateEntryFn fn, void *arg);

	/* Remove every key of the state; returns how many there were. */
	int64		(*truncate) (const StateTarget *st);

	/*
	 * Reclaim the storage of a state's expired values the backend's own way
	 * (rocksdb: a compaction, whose filter drops them), and wait for it.
	 * NULL: the TTL layer (ttl_state.c) sweeps the state key by key, on
	 * request and in the background.
	 */
	void		(*compact) (const StateTarget *st);

	/*
	 * For the TTL layer's sweep: remove, in place, what expired at now in one
	 * key group of a TTL state; *min_deadline gets the earliest deadline left
	 * (PG_INT64_MAX: none).  Returns how many keys went, or -1 when it cannot
	 * now; NULL when it never can.  Then the sweep goes key by key (iterate,
	 * replace).
	 */
	int64		(*expire) (const StateTarget *st, int key_group, int64 now,
						   int64 *min_deadline);

	/* A new state: set up its storage (NULL when there is nothing to do). */
	void		(*create) (const StateTarget *st);

	/*
	 * A state being dropped (its registry slot marked so): remove its data
	 * and whatever else the backend keeps for it.  confirm waits until that
	 * is durable; it is false when the caller may be handling an error.
	 */
	void		(*drop) (const StateTarget *st, bool confirm);

	/* Number of keys and bytes of memory or storage the state holds. */
	void		(*size) (const StateTarget *st, int64 *entries, int64 *bytes);

	/*
	 * Wait until every write this session made is applied, raising the
	 * error of any that failed (NULL: writes are applied when they return).
	 */
	void		(*flush) (void);

	/*
	 * Make the registry's latest changes to this backend's states durable
	 * (states published by a restore), when the backend keeps descriptors
	 * of its own.  NULL: nothing to do.
	 */
	void		(*sync_catalog) (void);

	/*
	 * In the state worker, for a backend whose states keep their data
	 * across a restart: the end of the last WAL record whose change that
	 * data holds (format/state_wal.h), so that recovery does not apply it
	 * twice.  NULL: states come back only from checkpoints.
	 */
	XLogRecPtr	(*applied_lsn) (void);

	/*
	 * In the state worker at server start, after the backend opened its
	 * storage: whether its states came back from it (their descriptors
	 * adopted into the registry), so that a checkpoint's copies of them are
	 * not loaded over them.  NULL: never (states come from checkpoints).
	 */
	bool		(*kept_data) (void);

	/* The backend's own figures, for state.worker.  NULL: it has none. */
	void		(*figures) (StateFigureFn fn, void *arg);

	const SnapshotStrategy *snapshot;
} KeyedStateBackend;

extern const KeyedStateBackend heap_keyed_backend;
extern const KeyedStateBackend rocks_keyed_backend;
extern const KeyedStateBackend ttl_keyed_backend;
extern bool ttl_image_visible(const StateDesc *desc, const char *img, uint32 len, int64 now,
							  StringInfo out);

/* backend/keyed_backend.c: the backends by id and name. */
extern const KeyedStateBackend *keyed_backend_by_id(int backend);
extern const KeyedStateBackend *keyed_state_ops(const StateDesc *desc);
extern const KeyedStateBackend *const *keyed_backend_all(int *n);
extern const char *keyed_backend_name(int backend);
extern int	keyed_backend_parse(const char *name);
extern bool keyed_backend_lookup(const char *name, int *backend);
extern bool keyed_backend_memory_snapshots(int backend);
extern int	keyed_backend_operator_backend(int backend);
extern void keyed_backend_flush_all(void);
extern bool keyed_backend_kept_data(int backend);
extern void keyed_fold_call(StateMergeFn fn, const StateTarget *st, const StateKey *key,
							const char *cur, uint32 curlen, const char *in, uint32 inlen,
							StringInfo out, void *arg);
extern const struct config_enum_entry keyed_backend_options[];

#endif							/* STATE_BACKEND_KEYED_BACKEND_H */
