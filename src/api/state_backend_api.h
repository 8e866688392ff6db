/*
 * state_backend_api.h
 *		The provider API of state_backend: what a library implements to
 *		offer a backend that keyed state can be created in, and what
 *		state_backend offers it in return.
 *
 * Installed as $(includedir_server)/extension/state_backend/state_backend_api.h.
 * The built-in backends register through this very API.  A provider library is listed after state_backend in
 * shared_preload_libraries and registers in its _PG_init:
 *
 *		const StateBackendHost *host = state_backend_host_find();
 *		host->register_backend(&my_provider);
 *
 * It has no link-time dependency on state_backend: the host's table of
 * services is reached through find_rendezvous_variable().  Everything a
 * provider sees is here; registry slots, shared-memory pointers and the
 * request channel's layout stay the host's.
 *
 * Images.  A backend stores opaque byte images; equal keys have equal
 * images.  The layouts it may need to look into are fixed by this API
 * (integers are uint32 in the server's byte order):
 *
 *	list image	elements back to back, each [length][bytes]; appending
 *				is concatenating
 *	map image	pairs back to back, each [key length][value length, or
 *				STATE_IMAGE_NULL][key][value]
 *
 * The host's map_image_* services edit map images.  For a state with a TTL
 * the images carry deadlines, which the host's TTL layer reads and writes:
 * the backend stores them as they come.
 */
#ifndef STATE_BACKEND_API_H
#define STATE_BACKEND_API_H

#include "access/xlogdefs.h"
#include "fmgr.h"
#include "lib/stringinfo.h"

/*
 * The version of this API.  A provider built against another version is
 * refused at registration: the tables' layouts may differ.
 */
#define STATE_BACKEND_API_VERSION	5	/* 2: StateDesc holds window states'
										 * fields; 3: KeyedStateBackend has
										 * reserve and unreserve; 4: a
										 * provider states the sizes of the
										 * structs it was built with; 5: a
										 * backend sees StateInfo, not the
										 * host's StateDesc */

/* The name of the rendezvous variable that holds the host's table. */
#define STATE_BACKEND_API_RENDEZVOUS	"state_backend_api"

/* A map image's value length that stands for a NULL value. */
#define STATE_IMAGE_NULL	PG_UINT32_MAX

/* ---------------------------------------------------------------------
 * States as a backend sees them
 * ---------------------------------------------------------------------
 */

typedef enum StateKind
{
	STATE_KIND_VALUE,
	STATE_KIND_LIST,
	STATE_KIND_MAP,
	STATE_KIND_REDUCING,
	/* Operator state (Flink's OperatorStateBackend): no keys, heap only. */
	STATE_KIND_OPERATOR_LIST,	/* split evenly when a snapshot is split */
	STATE_KIND_UNION_LIST,		/* every part gets all of it */
	STATE_KIND_BROADCAST,		/* a map; every part gets all of it */
	/* Keyed again: a PostgreSQL aggregate's transition state per key. */
	STATE_KIND_AGGREGATING,
	/* The open windows of a key and their contents: one opaque image. */
	STATE_KIND_WINDOW
} StateKind;

#define STATE_KIND_LAST		STATE_KIND_WINDOW

/* Is it operator state, which has no keys? */
static inline bool
state_kind_is_operator(StateKind kind)
{
	return kind >= STATE_KIND_OPERATOR_LIST && kind <= STATE_KIND_BROADCAST;
}

/*
 * The kind whose image layout a kind's state has: operator lists are kept
 * as a list under one key, broadcast state as a map; an aggregating
 * state's image is one value, as a reducing state's.  A backend stores
 * value, list and map images; it never needs to know more.
 */
static inline StateKind
state_kind_layout(StateKind kind)
{
	if (kind == STATE_KIND_OPERATOR_LIST || kind == STATE_KIND_UNION_LIST)
		return STATE_KIND_LIST;
	if (kind == STATE_KIND_BROADCAST)
		return STATE_KIND_MAP;
	return kind;
}

typedef enum StateReducer
{
	STATE_REDUCER_NONE,
	STATE_REDUCER_SUM,
	STATE_REDUCER_MIN,
	STATE_REDUCER_MAX
} StateReducer;

/*
 * State TTL (Flink's StateTtlConfig): what renews a value's time to live,
 * and whether a read may return a value that expired but is still stored.
 */
typedef enum StateTtlUpdate
{
	STATE_TTL_ON_CREATE_AND_WRITE,
	STATE_TTL_ON_READ_AND_WRITE
} StateTtlUpdate;

typedef enum StateTtlVisibility
{
	STATE_TTL_NEVER_RETURN_EXPIRED,
	STATE_TTL_RETURN_EXPIRED_IF_NOT_CLEANED_UP
} StateTtlVisibility;

/*
 * StateInfo: a state as a backend sees it.  The host keeps more about each
 * state (owner, grants, types' names, the reducer, timers and windows); a
 * backend needs only these, and they keep their meaning across releases
 * (a field is only ever added, with the API version).
 */
typedef struct StateInfo
{
	uint32		id;				/* unique in the cluster, never reused */
	StateKind	kind;
	StateKind	layout;			/* state_kind_layout(kind): how its images
								 * are laid out */
	NameData	name;			/* for messages */
	bool		logged;			/* changes go to WAL: log_change */
	int64		ttl;			/* time to live in microseconds; 0: none */
	StateTtlVisibility ttl_visibility;
	Oid			key_type;		/* the key's type (InvalidOid: no keys) */
	Oid			value_type;		/* the value's, a list element's or a map
								 * value's type */
} StateInfo;

/*
 * StateFold describes a built-in fold (sum, min, max) as a request can
 * carry it to another process: the reducer, the value type and its storage,
 * the function ("+" for sum, the btree comparison for min and max) and the
 * collation to call it with.  Opaque to a backend that folds in the
 * session (it calls the StateMergeFn it is given).
 */
typedef struct StateFold
{
	StateReducer kind;
	Oid			type;
	Oid			fn;
	Oid			collation;
	int16		typlen;
	bool		typbyval;
} StateFold;

/* A key as the backends see it: its image, hash and key group. */
typedef struct StateKey
{
	const char *data;
	uint32		len;
	uint32		hash;
	uint16		key_group;		/* < state_backend.max_parallelism */
} StateKey;

/*
 * The state an operation applies to: what a backend knows of it, and the
 * host's own descriptor and handle, which only the host's services read.
 */
typedef struct StateTarget
{
	StateInfo	info;
	const struct StateDesc *desc;	/* the host's */
	int			slot;
} StateTarget;

/*
 * StateMergeFn folds the image "in" into the current image "cur" (NULL when
 * the key has no state yet) and writes the result to "out".  It is
 * PostgreSQL code (a type's "+" or comparison, maybe a user's function), so
 * a backend calls it (through the host's fold_call) with no lock held, and
 * stores the result only if the key's image is still "cur", folding again
 * otherwise: merges of one key never lose an update, and a fold that reads
 * the state does not deadlock.
 */
typedef void (*StateMergeFn) (const char *cur, uint32 curlen,
							  const char *in, uint32 inlen,
							  StringInfo out, void *arg);

/*
 * StateEntryFn receives one entry of an iteration: a key and its whole
 * value image, or a map key and its value (value NULL for a NULL value).
 * It is never called with a lock held, so it may allocate and raise errors.
 */
typedef void (*StateEntryFn) (void *arg, const char *key, uint32 keylen,
							  const char *value, uint32 valuelen);

/* StateFigureFn receives one of a backend's own figures (state.worker). */
typedef void (*StateFigureFn) (void *arg, const char *name, int64 value, bool isnull);

/* One state to copy out of a backend's native snapshot files. */
typedef struct NativeRestoreItem
{
	uint32		from_id;		/* the state's id in the snapshot */
	uint32		to_id;			/* the hidden state it goes to */
	int			to_slot;		/* its handle (StateTarget.slot) */
	StateKind	kind;
	int32		kg_first;		/* only keys of these key groups */
	int32		kg_last;
} NativeRestoreItem;

/*
 * StateReserveKey: what a transactional commit's apply will write to one key
 * of a state (KeyedStateBackend.reserve).  The apply first puts the key's
 * whole image (image_len bytes) or removes it when replaced, then appends
 * list elements or sets and removes map entries, grow_len bytes of them
 * (as the images and pairs it passes): writes calls in all.
 */
typedef struct StateReserveKey
{
	const StateKey *key;
	bool		replaced;
	uint32		image_len;
	uint64		grow_len;
	uint32		writes;
} StateReserveKey;

/* The host's writer of one snapshot (write_native gets it). */
typedef struct SnapshotWriter SnapshotWriter;

/* ---------------------------------------------------------------------
 * What a backend implements
 * ---------------------------------------------------------------------
 */

/*
 * SnapshotStrategy: a backend's part of a snapshot (Flink's
 * SnapshotStrategy).  The host calls it for each backend, in the state
 * worker.  Callbacks a backend does not need are NULL.
 */
typedef struct SnapshotStrategy
{
	/*
	 * The slow part of the cut of snapshot id, before its instant.  The
	 * worker serves no request between this and the instant, so a backend
	 * whose states only the worker changes freezes them here; one whose
	 * states sessions change in place takes what stops its writers here and
	 * lets go of it in after_cut.
	 */
	void		(*prepare) (int64 id);

	/*
	 * The instant of the cut, under the snapshot lock.  A backend whose
	 * states change under its own locks holds them all and calls
	 * at_cut(arg) meanwhile, which copies the registry's descriptors.
	 */
	void		(*cut) (int64 id, void (*at_cut) (void *arg), void *arg);

	/* After every backend's cut, still under the snapshot lock. */
	void		(*after_cut) (int64 id);

	/*
	 * Append the entries of key group kg of this backend's states, as of the
	 * cut, as entry records ([state id] then a pair (key, image): the host's
	 * put_entry writes one), for the states whose "collect" flag is set.
	 */
	void		(*collect) (int64 id, const StateInfo *states, const bool *collect,
							int nstates, int key_group, StringInfo records);

	/*
	 * In a native snapshot on disk: write the backend's own files for its
	 * states under dir (a checkpoint's shared files under shared_dir, when
	 * given), and tell the writer each state's list file.  *reused: files
	 * were shared with earlier checkpoints.  NULL: the backend's states are
	 * key-group files (collect) in native snapshots too.
	 */
	void		(*write_native) (int64 id, const char *dir, const char *shared_dir,
								 const StateInfo *states, const bool *mine, int nstates,
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
	 * files (verified before), as key and stored value images; state is the
	 * state as the snapshot describes it (its id there).  Returns how many.
	 * NULL: they cannot be read but by a restore.
	 */
	int64		(*read_native) (const char *snapdir, const StateInfo *state, StateEntryFn fn,
								void *arg);

	/* Checkpoints under root were removed: drop files none of them uses. */
	void		(*after_retention) (const char *root);

	/* What the native files are called in messages (the engine's name). */
	const char *native_files_name;
} SnapshotStrategy;

/*
 * StateStageRoutine: how a backend whose writes another process applies
 * (the state worker) keeps a transactional commit whole.  The host applies
 * a commit's writes after its commit record, where nothing may fail; such a
 * backend stages them instead.  begin: the session's writes to the
 * backend's states (made through its operations as usual) are kept aside
 * until end (false: nothing is staged here, as in the worker itself; the
 * writes are then applied after the record like any backend's).  stage
 * numbers the committing session (its PGPROC number + 1), fxid its
 * transaction.  prepare, before the commit record: make the stage durable
 * (its error refuses the commit).  After the record: apply asks for the
 * stage to be applied at once (an error there is ignored: the backend
 * applies it anyway once it sees the commit), and wait returns once it is.
 * A crash or a restart of the applying process at any step must leave the
 * commit whole: applied when its record is durable, dropped otherwise.
 */
typedef struct StateStageRoutine
{
	bool		(*begin) (uint32 stage, uint64 fxid);
	void		(*end) (void);
	void		(*prepare) (uint64 fxid);
	void		(*apply) (void);
	void		(*wait) (uint64 fxid);
} StateStageRoutine;

/*
 * KeyedStateBackend: where a state's images are kept.  Called in sessions
 * (and in the state worker for restores, replays and snapshots), never with
 * a lock of the host's held.
 */
typedef struct KeyedStateBackend
{
	const char *name;

	/* Whole image of a key's state: value, list, or reducing result. */
	bool		(*get) (const StateTarget *st, const StateKey *key, StringInfo out);
	void		(*put) (const StateTarget *st, const StateKey *key,
						const char *value, uint32 len);

	/*
	 * Put n keys' whole images at once, as n calls of put would (a restore
	 * loads states through it, in batches): for a backend whose writes cost
	 * most per call (a transaction each).  NULL: put is called for each.
	 */
	void		(*put_many) (const StateTarget *st, const StateKey *keys,
							 const char *const *values, const uint32 *lens, int n);
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
	 * and wait for it.  NULL: the host's TTL layer sweeps the state key by
	 * key, on request and in the background.
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
	 * A state being dropped: remove its data and whatever else the backend
	 * keeps for it.  confirm waits until that is durable; it is false when
	 * the caller may be handling an error.
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
	 * data holds, so that recovery does not apply it twice.  NULL: states
	 * come back only from checkpoints.
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

	/*
	 * A transactional commit applies its writes after its commit record,
	 * where nothing may fail any more.  Before the record, reserve sets aside
	 * what the apply of the writes described (nkeys keys of the state) will
	 * take: memory, map space, disk.  It returns a handle (palloc'd in
	 * TopTransactionContext, or NULL for nothing held), or raises the error
	 * that refuses the commit (54000 program_limit_exceeded, 53100
	 * disk_full).  It runs in the committing session, with no lock of the
	 * host's held.  unreserve gives the handle back: just before the apply's
	 * writes to the state, which then have the room, or at the end of a
	 * transaction that did not apply them.  A backend whose room another
	 * process could take between the two keeps it for this process's writes
	 * until the transaction ends.  unreserve may be NULL when reserve only
	 * checks (it returns NULL).  Both NULL: the backend's writes cannot fail
	 * for want of room (the host then cannot promise a commit whole).
	 */
	void	   *(*reserve) (const StateTarget *st, const StateReserveKey *keys, int nkeys);
	void		(*unreserve) (void *handle);

	const SnapshotStrategy *snapshot;

	/* NULL: a transactional commit's writes are applied after its record. */
	const StateStageRoutine *stage;
} KeyedStateBackend;

/* How the state worker starts (StateBackendProvider.worker_start). */
typedef enum StateWorkerStart
{
	STATE_WORKER_START_FRESH,	/* server start or crash restart: fresh
								 * shared memory, states to be restored */
	STATE_WORKER_START_PROMOTED,	/* as FRESH, on a standby (hot, or
									 * promoted before the worker began):
									 * what the backend kept is a copy of
									 * the primary's, to be set aside */
	STATE_WORKER_START_AGAIN	/* the worker alone restarted: states are live */
} StateWorkerStart;

/* StateBackendProvider.flags */
#define STATE_PROVIDER_MEMORY_SNAPSHOTS	0x0001	/* its states may be in a
												 * snapshot kept in shared
												 * memory */
#define STATE_PROVIDER_OPERATOR_STATE	0x0002	/* operator states asked for
												 * in it stay in it (else they
												 * go to memory) */
#define STATE_PROVIDER_STANDBY_READS	0x0004	/* on a hot standby, sessions
												 * may read its logged states
												 * while the worker applies
												 * their WAL to them (its ops
												 * called in the worker, its
												 * reads in sessions) */

/*
 * The sizes of the structs a provider and the host exchange, as the
 * provider was built (STATE_BACKEND_SIZES): registration compares each with
 * the host's, so that a provider built against another release of this
 * header is refused even where the version was not moved.
 */
typedef struct StateBackendSizes
{
	uint32		provider;		/* StateBackendProvider */
	uint32		ops;			/* KeyedStateBackend */
	uint32		strategy;		/* SnapshotStrategy */
	uint32		info;			/* StateInfo */
	uint32		target;			/* StateTarget */
	uint32		key;			/* StateKey */
	uint32		fold;			/* StateFold */
	uint32		reserve_key;	/* StateReserveKey */
	uint32		restore_item;	/* NativeRestoreItem */
	uint32		stage;			/* StateStageRoutine */
	uint32		host;			/* StateBackendHost */
} StateBackendSizes;

#define STATE_BACKEND_SIZES { \
	.provider = sizeof(struct StateBackendProvider), \
	.ops = sizeof(KeyedStateBackend), \
	.strategy = sizeof(SnapshotStrategy), \
	.info = sizeof(StateInfo), \
	.target = sizeof(StateTarget), \
	.key = sizeof(StateKey), \
	.fold = sizeof(StateFold), \
	.reserve_key = sizeof(StateReserveKey), \
	.restore_item = sizeof(NativeRestoreItem), \
	.stage = sizeof(StateStageRoutine), \
	.host = sizeof(struct StateBackendHost), \
}

/*
 * StateBackendProvider: one registered backend.  Every routine but ops may
 * be NULL.  Its first three fields keep their places in every version, so
 * that the host can say which library was built for which version.  The worker routines run in the state worker; requests reach
 * handle_request through the host's channel (channel_call/channel_post,
 * addressed to the provider's id).
 */
typedef struct StateBackendProvider
{
	uint32		api_version;	/* STATE_BACKEND_API_VERSION */
	uint32		size;			/* sizeof(StateBackendProvider) */
	const char *name;			/* what state_backend.backend names; also in
								 * MANIFESTs */
	StateBackendSizes sizes;	/* STATE_BACKEND_SIZES */
	int32		id;				/* stable: stored in descriptors and WAL;
								 * 0..15 are the host's, a provider takes
								 * one of 16..32767 */
	uint32		flags;			/* STATE_PROVIDER_* */
	const KeyedStateBackend *ops;

	/* Shared memory: asked for and set up with the host's. */
	Size		(*shmem_size) (void);
	void		(*shmem_init) (void);

	/* The state worker: start (before states are restored), ready, stop. */
	void		(*worker_start) (StateWorkerStart how);
	void		(*worker_ready) (void);
	void		(*worker_stop) (void);
	/* After a configuration reload in the worker. */
	void		(*worker_reload) (void);
	/* Before each round of serving requests; between every one of them. */
	void		(*worker_round) (void);
	/* Whether the worker must exit for its storage to be opened afresh. */
	bool		(*worker_failed) (void);

	/*
	 * One request sent by a session (kind < STATE_REQUEST_MAX_KIND), the end
	 * of a session's requests of one round (STATE_REQUEST_ROUND_END), the
	 * end of a pass of the worker over every session (STATE_REQUEST_PASS_END)
	 * or a session's sync (STATE_REQUEST_SYNC: reply once its earlier
	 * requests are applied): returns whether a reply was produced.  At
	 * ROUND_END a provider commits what it gathered and returns false, or
	 * keeps it for PASS_END and returns true: that session's replies of the
	 * round (a sync's too) are then held until PASS_END has committed, and
	 * if PASS_END fails every such session gets its error instead.  One
	 * commit per pass serves every session's writes of the pass.
	 */
	bool		(*handle_request) (uint16 kind, const char *payload, uint32 len,
								   StringInfo reply);
} StateBackendProvider;

/*
 * The first fields of every provider's table: what it was built with, and
 * its name.  A provider writes
 *		static const StateBackendProvider my_provider = {
 *			STATE_BACKEND_PROVIDER_BUILT("my_backend"),
 *			.id = ..., .ops = ..., ...
 *		};
 */
#define STATE_BACKEND_PROVIDER_BUILT(provider_name) \
	.api_version = STATE_BACKEND_API_VERSION, \
	.size = sizeof(StateBackendProvider), \
	.name = (provider_name), \
	.sizes = STATE_BACKEND_SIZES

/* Request kinds a provider's handle_request gets from the host itself. */
#define STATE_REQUEST_ROUND_END	0x7FFF
#define STATE_REQUEST_PASS_END	0x7FFD	/* commit what ROUND_END kept */
#define STATE_REQUEST_SYNC		0x7FFE	/* reply once every earlier request of
										 * the session is applied */
#define STATE_REQUEST_MAX_KIND	0x7FF0	/* a provider's kinds are below */

/* Change kinds for log_change (the WAL records of logged states). */
#define STATE_CHANGE_PUT			0x20	/* a key's whole value image */
#define STATE_CHANGE_APPEND			0x30	/* list elements appended */
#define STATE_CHANGE_REMOVE			0x40	/* a key's state removed */
#define STATE_CHANGE_MAP_PUT		0x50	/* one map entry set */
#define STATE_CHANGE_MAP_REMOVE		0x60	/* one map entry removed */
#define STATE_CHANGE_TRUNCATE		0x70	/* every key of a state removed */

/* ---------------------------------------------------------------------
 * What the host offers
 * ---------------------------------------------------------------------
 */
typedef struct StateBackendHost
{
	uint32		api_version;	/* STATE_BACKEND_API_VERSION */
	uint32		size;			/* sizeof(StateBackendHost) */

	/*
	 * Register a backend, in _PG_init of a library in
	 * shared_preload_libraries.  Raises an error for a duplicate name or id,
	 * another API version, or outside the preload.
	 */
	void		(*register_backend) (const StateBackendProvider *provider);

	/* Run a merge's fold (StateMergeFn) for a key of a state. */
	void		(*fold_call) (StateMergeFn fn, const StateTarget *st, const StateKey *key,
							  const char *cur, uint32 curlen, const char *in, uint32 inlen,
							  StringInfo out, void *arg);

	/*
	 * Log a change of a logged state to WAL (nothing for other states, or
	 * while the worker replays).  Call it where the change is made visible
	 * to others, so that WAL order is the order of changes.  Returns the end
	 * of the record (InvalidXLogRecPtr: none).
	 */
	XLogRecPtr	(*log_change) (const StateTarget *st, uint8 kind, const StateKey *key,
							   const char *mkey, uint32 mkeylen,
							   const char *value, uint32 len, bool isnull);

	/* Account a state's keys and bytes (shown in state.states). */
	void		(*add_usage) (const StateTarget *st, int64 entries, int64 bytes);
	void		(*usage) (const StateTarget *st, int64 *entries, int64 *bytes);

	/*
	 * A long job in the worker: progress, within one request (nothing else
	 * may run meanwhile: the worker only tells it is alive); yield, between
	 * units of work of a job such as a snapshot's files (sessions are
	 * served, interrupts land, a cancelled job raises its error).
	 */
	void		(*progress) (void);
	void		(*yield) (void);

	/* Append an entry record (snapshot collect). */
	void		(*put_entry) (StringInfo records, uint32 state_id, const char *key,
							  uint32 keylen, const char *image, uint32 imagelen);

	/*
	 * Map images: find a map key (its value, *isnull for a NULL one; false
	 * when absent), append to out the image with mkey set or removed
	 * (remove returns false, writing nothing, when absent; put of an empty
	 * image, img NULL, appends the one pair), count entries and visit them
	 * (the whole image checked first).  Each raises data_corrupted for a
	 * malformed image.
	 */
	bool		(*map_image_find) (const char *img, uint32 len, const char *mkey,
								   uint32 mkeylen, const char **value, uint32 *vallen,
								   bool *isnull);
	void		(*map_image_put) (StringInfo out, const char *img, uint32 len,
								  const char *mkey, uint32 mkeylen,
								  const char *value, uint32 vallen, bool isnull);
	bool		(*map_image_remove) (StringInfo out, const char *img, uint32 len,
									 const char *mkey, uint32 mkeylen);
	int64		(*map_image_count) (const char *img, uint32 len);
	void		(*map_image_iterate) (const char *img, uint32 len, StateEntryFn fn,
									  void *arg);
	/* The elements of a list image (data_corrupted when malformed). */
	int64		(*list_image_count) (const char *img, uint32 len);

	/*
	 * Send a request to the provider's own handle_request in the state
	 * worker and wait for its reply (long_running: the wait may take
	 * minutes), or post one that wants none.  A call may also be of the
	 * kind STATE_REQUEST_SYNC: handle_request gets it once the session's
	 * earlier requests are served.
	 */
	void		(*channel_call) (int32 provider_id, uint16 kind, const char *payload,
								 uint32 len, StringInfo reply, bool long_running);
	void		(*channel_post) (int32 provider_id, uint16 kind, const char *payload,
								 uint32 len);

	/*
	 * Fault points (state_backend.fault_points): a provider's named places
	 * where a test makes the process fail.  fault_point acts on an armed
	 * point; call it only when *faults_armed (nothing else is read when no
	 * point is armed), never from a thread PostgreSQL did not start.
	 */
	const bool *faults_armed;
	void		(*fault_point) (const char *name);

	/*
	 * The state worker.  in_worker: whether this process is it (a request
	 * is then run in place, not sent).  wake_worker: have it look at the
	 * requests posted now rather than at its next round.  posts_sync: wait
	 * until every request this session posted is carried out, raising the
	 * error of the first that failed; posts_forget: drop their errors (the
	 * transaction that posted them is aborting; they are still carried
	 * out); posts_applied: whether the worker carried them all out.
	 */
	bool		(*in_worker) (void);
	void		(*wake_worker) (void);
	void		(*posts_sync) (void);
	void		(*posts_forget) (void);
	bool		(*posts_applied) (void);

	/*
	 * WAL of logged states a backend changes in the state worker, on a
	 * session's request (log_change reads only st->info.id and
	 * st->info.logged then, and the key's data and length).  Before sending
	 * such a request, the session calls remote_change, so that its commit
	 * waits for the worker's records; the worker, once the change is
	 * written, tells it where they end with applied_lsn (ignored while the
	 * worker replays).  replaying: the
	 * end of the record the worker is replaying now (changes are then not
	 * logged again), InvalidXLogRecPtr when it is not replaying.  replayed:
	 * the end of the last record the worker replayed wholly (whether it
	 * replays now or not), InvalidXLogRecPtr before any: what a backend
	 * still holds of a replay that an error cut short is stamped with it.
	 */
	void		(*remote_change) (void);
	void		(*applied_lsn) (XLogRecPtr lsn);
	XLogRecPtr	(*replaying) (void);
	XLogRecPtr	(*replayed) (void);

	/*
	 * States by id, for a backend whose requests name them (in the state
	 * worker).  state_get: the state of that id in that slot (the handle of
	 * its StateTarget; -1 looks in every one), false when there is none
	 * (dropped); *hidden when a restore is still filling it.  state_find:
	 * the slot of the visible state of that id, or -1.  states_version
	 * changes whenever a state is created, dropped or published.
	 */
	bool		(*state_get) (int slot, uint32 id, StateInfo *info, bool *hidden);
	int			(*state_find) (uint32 id, StateInfo *info);
	uint64		(*states_version) (void);

	/*
	 * A backend whose states keep their data across a restart (kept_data)
	 * keeps the host's descriptor of each beside it, as an opaque image.
	 * state_stored: the image to keep for a state, false when the state is
	 * gone; it follows what WAL holds (a restore's publication counts once
	 * its record is flushed), so that the backend's files never get ahead
	 * of WAL; *hidden: a restore is still filling it (not to be kept yet).
	 * At a start, image_info reads a kept image (false: unreadable, an
	 * image of a release that stored less) and says in *problem why this
	 * server cannot take it back, or NULL; adopt puts the state back into
	 * the registry with its id (false: no room, state_backend.max_states);
	 * reserve_id keeps an id whose data stays unused from being given to a
	 * new state.
	 */
	bool		(*state_stored) (uint32 id, StringInfo image, bool *hidden);
	bool		(*image_info) (const char *image, uint32 len, StateInfo *info,
							   const char **problem);
	bool		(*adopt) (const char *image, uint32 len);
	void		(*reserve_id) (uint32 id);

	/*
	 * A native snapshot's list file of a state (write_native): native_path
	 * is where to write it (palloc'd), native_written reports it written
	 * (its size, the state's entries and the bytes written for it).
	 */
	char	   *(*native_path) (SnapshotWriter *w, uint32 state_id);
	void		(*native_written) (SnapshotWriter *w, uint32 state_id, int64 size,
								   int64 entries, int64 written);

	/* Settings of the host a backend follows. */
	const int  *max_parallelism;	/* state_backend.max_parallelism */
	const bool *track_stats;	/* state_backend.track_stats */

	/*
	 * The hash of a key image (StateKey.hash), for a backend that looks a
	 * key up where only its image travelled (a request to the worker).
	 */
	uint32		(*key_hash) (const char *key, uint32 keylen);

	/*
	 * A built-in fold (StateFold, as a request carried it) in the state
	 * worker: out gets cur folded with in (cur NULL: in), in the value
	 * type's stored form.  An error when the worker cannot run that fold.
	 */
	void		(*fold_builtin) (const StateFold *fold, const char *cur, uint32 curlen,
								 const char *in, uint32 inlen, StringInfo out);

	/*
	 * The images of a state with a TTL carry deadlines (whole images of a
	 * value or reducing state, each list element, each map entry's value).
	 * These three are plain C (no palloc, no ereport, no lock): a backend's
	 * own threads (RocksDB's compaction filter) may call them.  ttl_now is
	 * the TTL clock; ttl_expired whether an image (or a map entry's value)
	 * expired at now; ttl_compact removes what expired at now from an
	 * image of that layout, in place, and returns the length left (0:
	 * nothing left; len: nothing expired).
	 */
	int64		(*ttl_now) (void);
	bool		(*ttl_expired) (const char *img, uint32 len, int64 now);
	uint32		(*ttl_compact) (StateKind layout, char *img, uint32 len, int64 now);

	/*
	 * SHA-256 digests of files a backend copies into a snapshot, in hex
	 * (STATE_DIGEST_HEX_LEN bytes with the terminating zero):
	 * digest_begin, digest_add, digest_end (which frees it) or
	 * digest_discard; digest_file of a whole file.
	 */
	void	   *(*digest_begin) (void);
	void		(*digest_add) (void *digest, const void *data, size_t len);
	void		(*digest_end) (void *digest, char *hex);
	void		(*digest_discard) (void *digest);
	void		(*digest_file) (const char *path, char *hex);
} StateBackendHost;

/* The length of a digest in hex, its terminating zero included. */
#define STATE_DIGEST_HEX_LEN	65

/*
 * state_backend_host_find returns the host's table, for a provider's
 * _PG_init; an error when state_backend is not loaded or of another API.
 */
static inline const StateBackendHost *
state_backend_host_find(void)
{
	void	  **slot = find_rendezvous_variable(STATE_BACKEND_API_RENDEZVOUS);
	const StateBackendHost *host;

	/* Listed after this library, or not at all: load it now. */
	if (*slot == NULL)
		load_file("$libdir/state_backend", false);
	host = (const StateBackendHost *) *slot;
	if (host == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("state_backend is not loaded"),
				 errhint("List state_backend before this library in shared_preload_libraries.")));
	if (host->api_version != STATE_BACKEND_API_VERSION ||
		host->size != sizeof(StateBackendHost))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("state_backend offers provider API version %u, this library was built for version %u",
						host->api_version, STATE_BACKEND_API_VERSION),
				 host->api_version == STATE_BACKEND_API_VERSION ?
				 errdetail("Its table of services has %u bytes, this library's has %u.",
						   host->size, (uint32) sizeof(StateBackendHost)) : 0,
				 errhint("Rebuild the library against the installed state_backend_api.h.")));
	return host;
}

#endif							/* STATE_BACKEND_API_H */
