/*
 * rocksdb_internal.h
 *		What rocksdb_backend.c (requests) and rocksdb_snapshot.c
 *		(checkpoints, restore) share about the worker's RocksDB instance.
 */
#ifndef STATE_BACKEND_ROCKSDB_INTERNAL_H
#define STATE_BACKEND_ROCKSDB_INTERNAL_H

#include <rocksdb/c.h>

#include "lib/stringinfo.h"

typedef struct RocksInstance
{
	rocksdb_t  *db;
	rocksdb_options_t *options;
	rocksdb_cache_t *cache;
	rocksdb_writeoptions_t *wopts;
	rocksdb_readoptions_t *ropts;
	rocksdb_flushoptions_t *flushopts;
	rocksdb_column_family_handle_t *deflt;
} RocksInstance;

extern RocksInstance rocks;

extern void rocks_check(char *err, const char *what);
extern void rocks_open(void);
extern void rocks_flush_all(void);
extern void rocks_commit(void);
extern rocksdb_column_family_handle_t *rocks_family(uint32 id, int slot);
extern void rocks_key(StringInfo buf, uint16 key_group, const char *key, uint32 keylen);
extern void rocks_split_key(const char *k, size_t klen, const char **key, uint32 *keylen,
							const char **mkey, uint32 *mklen);
extern void rocks_map_record(StringInfo out, const char *mkey, uint32 mklen,
							 const char *v, size_t vlen);
extern void rocks_scan(rocksdb_t *db, rocksdb_readoptions_t *ropts,
					   rocksdb_column_family_handle_t *cf,
					   const char *from, size_t fromlen, const char *to, size_t tolen,
					   bool (*fn) (void *arg, const char *k, size_t klen,
								   const char *v, size_t vlen),
					   void *arg);
extern int64 rocks_count_keys(rocksdb_t *db, rocksdb_readoptions_t *ropts,
							  rocksdb_column_family_handle_t *cf, bool map);

#endif							/* STATE_BACKEND_ROCKSDB_INTERNAL_H */
