/*
 * backend/rocksdb/rocks_options.c
 *		How the state worker's RocksDB instance is opened: its options
 *		(shared write buffers and block cache, the list merge operator, the
 *		TTL compaction filter's factory), the settings that change at a
 *		reload, and the signal mask RocksDB's threads start with.
 *
 * RocksDB's threads only run the merge operator and the compaction
 * filter, which are plain C with malloc: no PostgreSQL code.
 */
#include "postgres.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>

#include "utils/guc.h"

#include "rocks_internal.h"

/* The rocksdb backend's settings (state_backend.rocksdb_*). */
char	   *state_backend_rocksdb_dir = NULL;
bool		state_backend_rocksdb_sync = false;
int			state_backend_rocksdb_cache_mb = 64;
int			state_backend_rocksdb_shared_cache_kb = 32 * 1024;
int			state_backend_rocksdb_write_buffer_mb = 64;
bool		state_backend_rocksdb_session_reads = true;
int			state_backend_rocksdb_session_cache_mb = 8;
int			state_backend_rocksdb_session_reads_after = 1000;
int			state_backend_rocksdb_compression = ROCKS_COMPRESSION_LZ4;

static const struct config_enum_entry compression_options[] = {
	{"none", ROCKS_COMPRESSION_NONE, false},
	{"lz4", ROCKS_COMPRESSION_LZ4, false},
	{"zstd", ROCKS_COMPRESSION_ZSTD, false},
	{NULL, 0, false}
};

/* rocks_define_settings defines them, from _PG_init (rocks_provider). */
void
rocks_define_settings(void)
{
	DefineCustomStringVariable("state_backend.rocksdb_dir",
							   "Working directory of the RocksDB instance that holds rocksdb states.",
							   "Relative paths are under the data directory.",
							   &state_backend_rocksdb_dir,
							   "pg_state_backend/rocksdb",
							   PGC_POSTMASTER,
							   0,
							   NULL, NULL, NULL);

	DefineCustomBoolVariable("state_backend.rocksdb_sync",
							 "Flush RocksDB's write-ahead log to disk (fsync) at every write batch.",
							 "Off: a crash of the operating system may lose the last writes; a crash of the server loses nothing.",
							 &state_backend_rocksdb_sync,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("state_backend.rocksdb_cache_size",
							"Block cache of the RocksDB instance.",
							NULL,
							&state_backend_rocksdb_cache_mb,
							64,
							1,
							INT_MAX / 2,
							PGC_POSTMASTER,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("state_backend.rocksdb_shared_cache_size",
							"Shared memory for recently read or written entries of rocksdb value, reducing, list and map states (a map's one by one), which sessions read without asking the state worker.",
							"0 turns the cache off.",
							&state_backend_rocksdb_shared_cache_kb,
							32 * 1024,
							0,
							INT_MAX / 2,
							PGC_POSTMASTER,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("state_backend.rocksdb_write_buffer_size",
							"Memory for RocksDB's write buffers (memtables), all rocksdb states together.",
							NULL,
							&state_backend_rocksdb_write_buffer_mb,
							64,
							1,
							INT_MAX / 2,
							PGC_POSTMASTER,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("state_backend.rocksdb_session_reads",
							 "Sessions that read rocksdb states a lot read them in place, in a read-only view of the instance of their own, instead of asking the state worker.",
							 "Keys the worker changed since the view last caught up are still asked of the worker.",
							 &state_backend_rocksdb_session_reads,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("state_backend.rocksdb_session_reads_after",
							"Reads a session asks of the state worker before it opens its view of the RocksDB instance.",
							"Opening a view takes a fraction of a second, which a session that reads little does not pay.",
							&state_backend_rocksdb_session_reads_after,
							1000,
							0,
							INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("state_backend.rocksdb_session_cache_size",
							"Block cache of each session's read-only view of the RocksDB instance (views opened after a change).",
							NULL,
							&state_backend_rocksdb_session_cache_mb,
							8,
							1,
							INT_MAX / 2,
							PGC_SIGHUP,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("state_backend.rocksdb_compression",
							 "How RocksDB compresses the table files it writes from now on: none, lz4 or zstd.",
							 "Files written before keep theirs until a compaction rewrites them.",
							 &state_backend_rocksdb_compression,
							 ROCKS_COMPRESSION_LZ4,
							 compression_options,
							 PGC_POSTMASTER,
							 0,
							 NULL, NULL, NULL);
}

/*
 * The list merge operator: a list's image is its elements back to back, so
 * merging is concatenation.  Runs in RocksDB's threads: malloc only.
 */
static char *
list_full_merge(void *state, const char *key, size_t keylen,
				const char *existing, size_t existing_len,
				const char *const *ops, const size_t *op_lens, int nops,
				unsigned char *success, size_t *new_len)
{
	size_t		total = existing ? existing_len : 0;
	char	   *out;
	char	   *p;

	for (int i = 0; i < nops; i++)
		total += op_lens[i];
	out = malloc(total > 0 ? total : 1);
	if (out == NULL)
	{
		*success = 0;
		return NULL;
	}
	p = out;
	if (existing && existing_len > 0)
	{
		memcpy(p, existing, existing_len);
		p += existing_len;
	}
	for (int i = 0; i < nops; i++)
	{
		memcpy(p, ops[i], op_lens[i]);
		p += op_lens[i];
	}
	*new_len = total;
	*success = 1;
	return out;
}

static char *
list_partial_merge(void *state, const char *key, size_t keylen,
				   const char *const *ops, const size_t *op_lens, int nops,
				   unsigned char *success, size_t *new_len)
{
	return list_full_merge(state, key, keylen, NULL, 0, ops, op_lens, nops,
						   success, new_len);
}

static void
list_merge_free(void *state, const char *value, size_t len)
{
	free((void *) value);
}

static const char *
list_merge_name(void *state)
{
	return "state_backend.list_append";
}

static void
list_merge_destroy(void *state)
{
}

/*
 * rocks_table_options sets how table files are laid out and cached, for
 * the worker's instance and for the sessions' views (rocks_view.c).
 */
void
rocks_table_options(rocksdb_block_based_table_options_t *table)
{
	rocksdb_block_based_options_set_filter_policy(table, rocksdb_filterpolicy_create_bloom(10));

	/*
	 * Index and filter blocks live in the block cache, so that their memory
	 * stays within state_backend.rocksdb_cache_size however large the state
	 * grows, but data blocks must never evict them: with them in the cache's
	 * ordinary pool, a state just over the cache re-read a filter block from
	 * disk on most reads (2M keys, 64MB: 4.2k reads/s, 60% of the worker in
	 * loading filter blocks).  So they are partitioned (a read loads the one
	 * partition it needs), their top level is pinned, level 0's are pinned,
	 * and the rest go in the cache's high-priority pool.
	 */
	rocksdb_block_based_options_set_index_type(table, rocksdb_block_based_table_index_type_two_level_index_search);
	rocksdb_block_based_options_set_partition_filters(table, 1);
	rocksdb_block_based_options_set_cache_index_and_filter_blocks(table, 1);
	rocksdb_block_based_options_set_cache_index_and_filter_blocks_with_high_priority(table, 1);
	rocksdb_block_based_options_set_pin_top_level_index_and_filter(table, 1);
	rocksdb_block_based_options_set_pin_l0_filter_and_index_blocks_in_cache(table, 1);
}

/* The list merge operator, for the instance and the views. */
rocksdb_mergeoperator_t *
rocks_list_merge_operator(void)
{
	return rocksdb_mergeoperator_create(NULL, list_merge_destroy, list_full_merge,
										list_partial_merge, list_merge_free,
										list_merge_name);
}

/* Options of every column family: the list merge operator, the cache. */
static void
rocks_make_options(void)
{
	rocksdb_block_based_table_options_t *table;
	size_t		total_wb = (size_t) state_backend_rocksdb_write_buffer_mb * 1024 * 1024;

	rocks.cache = rocksdb_cache_create_lru((size_t) state_backend_rocksdb_cache_mb * 1024 * 1024);
	table = rocksdb_block_based_options_create();
	rocksdb_block_based_options_set_block_cache(table, rocks.cache);
	rocks_table_options(table);

	rocks.options = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(rocks.options, 1);
	rocksdb_options_set_create_missing_column_families(rocks.options, 1);
	rocksdb_options_set_block_based_table_factory(rocks.options, table);
	rocksdb_options_set_merge_operator(rocks.options, rocks_list_merge_operator());
	/* All column families share the write buffer budget. */
	rocksdb_options_set_db_write_buffer_size(rocks.options, total_wb);
	/*
	 * Small memtables: a random insert into a skip list that fits the CPU
	 * cache costs a third of one into 32 MB (measured here: 1M random keys,
	 * 8 MB 2.3 s, 32 MB 3.2 s).
	 */
	rocksdb_options_set_write_buffer_size(rocks.options,
										  Max((size_t) 1024 * 1024,
											  Min(total_wb / 4, (size_t) 8 * 1024 * 1024)));
	rocksdb_options_set_max_write_buffer_number(rocks.options, 2);
	/* Flush families that write little, so old log files do not pile up. */
	rocksdb_options_set_max_total_wal_size(rocks.options, 2 * total_wb);
	rocksdb_options_set_max_open_files(rocks.options, 512);
	rocksdb_options_set_max_background_jobs(rocks.options, 2);
	rocksdb_options_set_compression(rocks.options,
									state_backend_rocksdb_compression == ROCKS_COMPRESSION_LZ4 ? rocksdb_lz4_compression :
									state_backend_rocksdb_compression == ROCKS_COMPRESSION_ZSTD ? rocksdb_zstd_compression :
									rocksdb_no_compression);
	rocksdb_options_set_keep_log_file_num(rocks.options, 2);
	rocksdb_options_set_info_log_level(rocks.options, 2);	/* warnings */

	rocks_ttl_make_options();

	rocks.wopts = rocksdb_writeoptions_create();
	rocks.ropts = rocksdb_readoptions_create();
	rocks.flushopts = rocksdb_flushoptions_create();
	rocksdb_flushoptions_set_wait(rocks.flushopts, 1);
}

/*
 * rocks_options_ready makes the options a RocksDB is opened with, in any
 * process (a session reading a snapshot's files makes them too).
 */
void
rocks_options_ready(void)
{
	if (rocks.options == NULL)
		rocks_make_options();
}

/*
 * rocks_track_blocks turns RocksDB's counting of the worker's block cache
 * hits and misses on or off, with state_backend.track_stats.
 */
static void
rocks_track_blocks(void)
{
	static int	level = rocksdb_uninitialized;
	int			want = (*rocks_host->track_stats) ? rocksdb_enable_count : rocksdb_disable;

	if (level != want)
	{
		rocksdb_set_perf_level(want);
		level = want;
	}
}

/*
 * Apply state_backend.rocksdb_sync and track_stats (they may change at
 * reload).
 */
void
rocks_apply_settings(void)
{
	if (rocks.wopts)
		rocksdb_writeoptions_set_sync(rocks.wopts, state_backend_rocksdb_sync ? 1 : 0);
	rocks_track_blocks();
}

/*
 * rocks_block_signals blocks every signal in the calling thread;
 * threads RocksDB starts meanwhile inherit the mask, so signals meant for
 * the worker never land on them.
 */
void
rocks_block_signals(sigset_t *saved)
{
	sigset_t	all;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, saved);
}

void
rocks_restore_signals(const sigset_t *saved)
{
	pthread_sigmask(SIG_SETMASK, saved, NULL);
}
