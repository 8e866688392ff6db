/*
 * contrib/lmdb/lmdb_internal.h
 *		The lmdb backend of state_backend: what its files share.
 *
 * One LMDB environment (state_backend_lmdb.dir) holds every lmdb state,
 * in one database whose keys sort by state, then key group, then key:
 *
 *	[state id, 4 bytes big-endian][key group, 2 bytes big-endian][form]
 *
 * form 0 is followed by the key image, and the value is the state's image;
 * a key image too long for an LMDB key (form 1) is stored under its
 * SHA-256, and the value is [key length, uint32][key image][image].
 *
 * Every process opens the environment itself, after fork, on first use:
 * sessions read in place (LMDB's readers take no lock) and write under
 * LMDB's one writer lock, held only for the write itself and never across
 * a call into PostgreSQL that could wait.
 */
#ifndef STATE_BACKEND_LMDB_INTERNAL_H
#define STATE_BACKEND_LMDB_INTERNAL_H

#include <lmdb.h>

#include "state_backend_api.h"

/* Stable: stored in the descriptors and WAL records of lmdb states. */
#define LMDB_BACKEND_ID		16

#define LMDB_KEY_PREFIX		6	/* state id, key group */
#define LMDB_FORM_INLINE	0
#define LMDB_FORM_DIGEST	1
#define LMDB_DIGEST_LEN		32

/* Settings (lmdb_env.c). */
extern char *lmdb_dir;
extern int	lmdb_map_size_mb;
extern bool lmdb_sync;

extern const StateBackendHost *lmdb_host;

/* A fault point (the host's: common/fault.h), one test of a flag when none is armed. */
#define FAULT_POINT_HOST(name) \
	do { \
		if (unlikely(*lmdb_host->faults_armed)) \
			lmdb_host->fault_point(name); \
	} while (0)

/* The environment, opened in this process on first use. */
extern MDB_env *lmdb_env(void);
extern MDB_dbi lmdb_dbi;
extern void lmdb_define_settings(void);
extern void lmdb_close(void);
extern void lmdb_empty(void);

/* Transactions: a read one reused by the process, and the one writer. */
extern MDB_txn *lmdb_read_begin(void);
extern void lmdb_read_end(void);
extern MDB_txn *lmdb_write_begin(void);
extern void lmdb_write_commit(MDB_txn *txn);
extern void lmdb_write_abort(void);

/*
 * The writes lock: a write holds it from before its LMDB transaction to
 * after its WAL records, a snapshot's cut across its instant.
 */
extern void lmdb_writes_lock_request(void);
extern void lmdb_writes_lock(void);
extern void lmdb_writes_unlock(void);
extern void lmdb_fail(int rc, const char *what) pg_attribute_noreturn();

/* Keys. */
typedef struct LmdbKey
{
	char	   *data;
	size_t		len;
	bool		digest;			/* form 1: the value begins with the key */
} LmdbKey;

extern void lmdb_key_make(LmdbKey *k, uint32 state_id, const StateKey *key);
extern void lmdb_key_prefix(char *buf, uint32 state_id, int key_group);
extern bool lmdb_entry_split(const MDB_val *k, const MDB_val *v, const char **key,
							 uint32 *keylen, const char **image, uint32 *imagelen);
extern uint32 lmdb_key_state(const MDB_val *k);

/* Entries under a key prefix, in order (lmdb_env.c: lmdb_scan). */
typedef bool (*LmdbScanFn) (void *arg, const MDB_val *lkey, const char *key, uint32 keylen,
							const char *image, uint32 imagelen);
extern void lmdb_scan(MDB_txn *txn, const char *prefix, size_t plen, const MDB_val *from,
					  LmdbScanFn fn, void *arg);

/* Room set aside for transactional commits (lmdb_reserve.c). */
extern Size lmdb_reserve_shmem_size(void);
extern void lmdb_reserve_shmem_init(void);
extern void lmdb_reserve_init(void);
extern void *lmdb_reserve(const StateTarget *st, const StateReserveKey *keys, int nkeys);
extern void lmdb_unreserve(void *handle);
extern void lmdb_reserve_check(uint64 bytes);

/* Stored values (lmdb_ops.c). */
extern bool lmdb_get_in(MDB_txn *txn, const LmdbKey *k, const StateKey *key,
						const char **image, uint32 *len);

extern const KeyedStateBackend lmdb_keyed_backend;
extern const SnapshotStrategy lmdb_snapshot_strategy;

#endif							/* STATE_BACKEND_LMDB_INTERNAL_H */
