/*
 * keyed_backend.h
 *		KeyedStateBackend: the one interface between the SQL layer and the
 *		places where keyed state is kept.
 *
 * The SQL layer resolves a state, turns keys and values into byte images
 * (codec.c) and calls through this interface; it never reaches a backend's
 * storage otherwise.  Images are opaque bytes here: equal keys have equal
 * images.  The implementations are in heap_backend.c and rocksdb_client.c.
 */
#ifndef STATE_BACKEND_KEYED_BACKEND_H
#define STATE_BACKEND_KEYED_BACKEND_H

#include "lib/stringinfo.h"

#include "state_backend.h"

/* A key as the backends see it: its image, hash and key group. */
typedef struct StateKey
{
	const char *data;
	uint32		len;
	uint32		hash;			/* key_group.c: key_image_hash() */
	uint16		key_group;
} StateKey;

/* The state an operation applies to: its descriptor and registry slot. */
typedef struct StateTarget
{
	const StateDesc *desc;
	int			slot;
} StateTarget;

/*
 * StateMergeFn folds the image "in" into the current image "cur" (NULL when
 * the key has no state yet) and writes the result to "out".  It runs while
 * the backend holds the key exclusively, so it must not touch state.
 */
typedef void (*StateMergeFn) (const char *cur, uint32 curlen,
							  const char *in, uint32 inlen,
							  StringInfo out, void *arg);

/*
 * StateFold describes a fold that needs no catalog access: the built-in
 * "+" or comparison of a number, date or time type (state_fold_type_ok).
 * A backend whose storage is in another process (rocksdb: the state worker,
 * which has no database) folds there with it, in one round trip; others
 * use the StateMergeFn.
 */
typedef struct StateFold
{
	StateReducer kind;
	Oid			type;
	Oid			fn;				/* "+" for sum, the btree comparison for min/max */
	int16		typlen;
	bool		typbyval;
} StateFold;

extern bool state_fold_type_ok(Oid type, Oid fn);

/*
 * StateEntryFn receives one entry of an iteration: a key and its whole
 * value image, or a map key and its value (value NULL for a NULL value).
 * It is never called with a lock held, so it may allocate and raise errors.
 */
typedef void (*StateEntryFn) (void *arg, const char *key, uint32 keylen,
							  const char *value, uint32 valuelen);

/*
 * The whole image of a key's state, as get/put/iterate and snapshots carry
 * it: a value or reducing state's image is the value's image; a list's is
 * its elements, each a uint32 length then its bytes; a map's is records of
 * [uint32 map-key length][uint32 value length, or MAP_NULL_VALUE]
 * [map key][value].
 */
#define LIST_ELEM_HDR	sizeof(uint32)
#define MAP_NULL_VALUE	PG_UINT32_MAX
#define MAP_REC_HDR		(2 * sizeof(uint32))

typedef struct KeyedStateBackend
{
	const char *name;

	/* Whole image of a key's state: value, list, or reducing result. */
	bool		(*get) (const StateTarget *st, const StateKey *key, StringInfo out);
	void		(*put) (const StateTarget *st, const StateKey *key,
						const char *value, uint32 len);
	bool		(*remove) (const StateTarget *st, const StateKey *key);

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
} KeyedStateBackend;

extern const KeyedStateBackend heap_keyed_backend;
extern const KeyedStateBackend rocksdb_keyed_backend;

/* rocksdb_client.c: restore of RocksDB files, stored descriptors, hooks. */
extern void rocksdb_client_sync_registry(void);
extern int64 rocksdb_client_restore_files(const char *dir, const uint32 *from_ids,
										  const uint32 *to_ids, const int *to_slots,
										  const int *kinds, int n);
extern void rocksdb_client_init(void);

extern const KeyedStateBackend *keyed_backend_for(StateBackendId backend);

#endif							/* STATE_BACKEND_KEYED_BACKEND_H */
