/*
 * rocksdb_backend.c
 *		The worker's side of rocksdb states: one RocksDB instance under
 *		state_backend.rocksdb_dir, a column family per state, and the
 *		requests that sessions send about them (rocksdb_client.c).
 *
 * Keys are [key group, 2 bytes][key length, 4 bytes][key image], all
 * big-endian, with the map key appended for map states, so a key group, a
 * key's map and a state are contiguous ranges.  A list's value is its list
 * image, appended to with a merge operator; a map entry's value is a null
 * flag byte and the value image.  Descriptors of rocksdb states are kept in
 * the default column family, so that they come back with their data after a
 * crash.
 *
 * RocksDB's threads only run the merge operator, which is plain C with
 * malloc: no PostgreSQL code.  They start at open, with every signal
 * blocked, so signals keep going to the worker's own thread.  Snapshots
 * are in rocksdb_snapshot.c.
 */
#include "postgres.h"

#include <signal.h>
#include <rocksdb/c.h>

#include "common/file_perm.h"
#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "codec.h"
#include "keyed_backend.h"
#include "registry.h"
#include "rocksdb_backend.h"
#include "rocksdb_internal.h"

char	   *state_backend_rocksdb_dir = NULL;
bool		state_backend_rocksdb_sync = false;
int			state_backend_rocksdb_cache_mb = 64;
int			state_backend_rocksdb_write_buffer_mb = 64;

RocksInstance rocks = {0};

/* A column family the worker has open, by state id. */
typedef struct RocksFamily
{
	uint32		id;				/* hash key */
	rocksdb_column_family_handle_t *handle;
	bool		persisted;		/* its descriptor is in the default family */
	bool		unadopted;		/* stored, but not in the registry: left alone */
	StateDesc	desc;			/* as persisted */
} RocksFamily;

static HTAB *families = NULL;
static rocksdb_writebatch_t *batch = NULL;
static uint64 synced_version = 0;

#define DESC_KEY_PREFIX		"desc:"

/*
 * rocks_check turns a RocksDB error into an ERROR with its message.  The C
 * API returns errors as malloc'd strings, never as exceptions.
 */
void
rocks_check(char *err, const char *what)
{
	char	   *msg;

	if (err == NULL)
		return;
	msg = pstrdup(err);
	rocksdb_free(err);
	ereport(ERROR,
			(errcode(ERRCODE_IO_ERROR),
			 errmsg("rocksdb could not %s: %s", what, msg)));
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

/* Options of every column family: the list merge operator, the cache. */
static void
rocks_make_options(void)
{
	rocksdb_block_based_table_options_t *table;
	size_t		total_wb = (size_t) state_backend_rocksdb_write_buffer_mb * 1024 * 1024;

	rocks.cache = rocksdb_cache_create_lru((size_t) state_backend_rocksdb_cache_mb * 1024 * 1024);
	table = rocksdb_block_based_options_create();
	rocksdb_block_based_options_set_block_cache(table, rocks.cache);
	rocksdb_block_based_options_set_filter_policy(table, rocksdb_filterpolicy_create_bloom(10));
	rocksdb_block_based_options_set_cache_index_and_filter_blocks(table, 1);

	rocks.options = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(rocks.options, 1);
	rocksdb_options_set_create_missing_column_families(rocks.options, 1);
	rocksdb_options_set_block_based_table_factory(rocks.options, table);
	rocksdb_options_set_merge_operator(rocks.options,
									   rocksdb_mergeoperator_create(NULL, list_merge_destroy,
																	list_full_merge,
																	list_partial_merge,
																	list_merge_free,
																	list_merge_name));
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
	rocksdb_options_set_compression(rocks.options, rocksdb_lz4_compression);
	rocksdb_options_set_keep_log_file_num(rocks.options, 2);
	rocksdb_options_set_info_log_level(rocks.options, 2);	/* warnings */

	rocks.wopts = rocksdb_writeoptions_create();
	rocks.ropts = rocksdb_readoptions_create();
	rocks.flushopts = rocksdb_flushoptions_create();
	rocksdb_flushoptions_set_wait(rocks.flushopts, 1);
}

/* Apply state_backend.rocksdb_sync (it may change at reload). */
void
rocksdb_apply_settings(void)
{
	if (rocks.wopts)
		rocksdb_writeoptions_set_sync(rocks.wopts, state_backend_rocksdb_sync ? 1 : 0);
}

/*
 * rocks_block_signals_begin blocks every signal in the calling thread;
 * threads RocksDB starts meanwhile inherit the mask, so signals meant for
 * the worker never land on them.
 */
static void
rocks_block_signals(sigset_t *saved)
{
	sigset_t	all;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, saved);
}

static void
rocks_restore_signals(const sigset_t *saved)
{
	pthread_sigmask(SIG_SETMASK, saved, NULL);
}

static bool
rocks_dir_exists(void)
{
	char		current[MAXPGPATH];
	struct stat st;

	snprintf(current, sizeof(current), "%s/CURRENT", state_backend_rocksdb_dir);
	return stat(current, &st) == 0;
}

/*
 * rocks_open opens (creating if need be) the instance with every column
 * family it has.
 */
void
rocks_open(void)
{
	char	   *err = NULL;
	char	  **names = NULL;
	size_t		nnames = 0;
	const rocksdb_options_t **cfopts;
	rocksdb_column_family_handle_t **handles;
	sigset_t	saved;
	HASHCTL		ctl;

	if (rocks.db)
		return;
	if (rocks.options == NULL)
		rocks_make_options();
	rocksdb_apply_settings();
	if (pg_mkdir_p(state_backend_rocksdb_dir, pg_dir_create_mode) != 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", state_backend_rocksdb_dir)));

	if (rocks_dir_exists())
	{
		names = rocksdb_list_column_families(rocks.options, state_backend_rocksdb_dir,
											 &nnames, &err);
		rocks_check(err, "list its column families");
	}
	if (nnames == 0)
	{
		static char *deflt[] = {"default"};

		names = deflt;
		nnames = 1;
	}
	cfopts = palloc(sizeof(rocksdb_options_t *) * nnames);
	handles = palloc0(sizeof(rocksdb_column_family_handle_t *) * nnames);
	for (size_t i = 0; i < nnames; i++)
		cfopts[i] = rocks.options;

	rocks_block_signals(&saved);
	rocks.db = rocksdb_open_column_families(rocks.options, state_backend_rocksdb_dir,
											(int) nnames, (const char *const *) names,
											cfopts, handles, &err);
	rocks_restore_signals(&saved);
	rocks_check(err, "open its database");

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(uint32);
	ctl.entrysize = sizeof(RocksFamily);
	ctl.hcxt = TopMemoryContext;
	families = hash_create("state_backend rocksdb families", 64, &ctl,
						   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	for (size_t i = 0; i < nnames; i++)
	{
		uint32		id;
		RocksFamily *f;
		bool		found;

		if (strcmp(names[i], "default") == 0)
		{
			rocks.deflt = handles[i];
			continue;
		}
		if (sscanf(names[i], "s%u", &id) != 1)
			continue;
		f = hash_search(families, &id, HASH_ENTER, &found);
		f->handle = handles[i];
		f->persisted = false;
		f->unadopted = false;
	}
	if (names && nnames > 0 && rocks.deflt != handles[0] && strcmp(names[0], "default") != 0)
		elog(LOG, "state_backend: rocksdb instance without a default column family");
	if (rocks_dir_exists() && names && nnames > 0 && strcmp(names[0], "default") == 0 && nnames > 1)
		rocksdb_list_column_families_destroy(names, nnames);
	batch = rocksdb_writebatch_create();
	ereport(LOG, (errmsg("state_backend opened rocksdb instance \"%s\"", state_backend_rocksdb_dir)));
}

/* rocks_flush_all writes every family's memtable to SST files. */
void
rocks_flush_all(void)
{
	HASH_SEQ_STATUS seq;
	RocksFamily *f;
	char	   *err = NULL;

	rocksdb_flush_cf(rocks.db, rocks.flushopts, rocks.deflt, &err);
	rocks_check(err, "flush");
	hash_seq_init(&seq, families);
	while ((f = hash_seq_search(&seq)) != NULL)
	{
		channel_worker_heartbeat();
		rocksdb_flush_cf(rocks.db, rocks.flushopts, f->handle, &err);
		if (err)
		{
			hash_seq_term(&seq);
			rocks_check(err, "flush");
		}
	}
}

bool
rocksdb_is_open(void)
{
	return rocks.db != NULL;
}

/*
 * rocksdb_open_existing opens the instance if there is one on disk (a
 * fresh server has none until the first rocksdb state).  Returns whether
 * it is open.
 */
bool
rocksdb_open_existing(void)
{
	if (!rocks.db && rocks_dir_exists())
		rocks_open();
	return rocks.db != NULL;
}

void
rocksdb_close_instance(void)
{
	HASH_SEQ_STATUS seq;
	RocksFamily *f;

	if (!rocks.db)
		return;
	rocksdb_cancel_all_background_work(rocks.db, 1);
	/* Every column family handle goes before the instance. */
	hash_seq_init(&seq, families);
	while ((f = hash_seq_search(&seq)) != NULL)
		rocksdb_column_family_handle_destroy(f->handle);
	hash_destroy(families);
	families = NULL;
	if (rocks.deflt)
		rocksdb_column_family_handle_destroy(rocks.deflt);
	rocks.deflt = NULL;
	rocksdb_close(rocks.db);
	rocks.db = NULL;
}

/* ------------------------------------------------------------------------
 * Descriptors
 * ------------------------------------------------------------------------
 */

static void
desc_key(uint32 id, char *buf, Size len)
{
	snprintf(buf, len, DESC_KEY_PREFIX "%08x", id);
}

static void
family_persist(RocksFamily *f, const StateDesc *desc)
{
	char		key[32];
	char	   *err = NULL;

	desc_key(f->id, key, sizeof(key));
	rocksdb_put_cf(rocks.db, rocks.wopts, rocks.deflt, key, strlen(key),
				   (const char *) desc, sizeof(StateDesc), &err);
	rocks_check(err, "store a state descriptor");
	f->desc = *desc;
	f->persisted = true;
}

static void
family_drop(RocksFamily *f)
{
	char		key[32];
	char	   *err = NULL;
	uint32		id = f->id;

	desc_key(id, key, sizeof(key));
	rocksdb_delete_cf(rocks.db, rocks.wopts, rocks.deflt, key, strlen(key), &err);
	rocks_check(err, "remove a state descriptor");
	rocksdb_drop_column_family(rocks.db, f->handle, &err);
	rocks_check(err, "drop a column family");
	rocksdb_column_family_handle_destroy(f->handle);
	hash_search(families, &id, HASH_REMOVE, NULL);
}

/*
 * rocks_family returns the column family of a state, creating it on the
 * state's first use.  The state must be live in the registry.
 */
rocksdb_column_family_handle_t *
rocks_family(uint32 id, int slot)
{
	RocksFamily *f;
	bool		found;
	StateDesc	desc;
	bool		hidden;
	char		name[32];
	char	   *err = NULL;

	rocks_open();
	f = hash_search(families, &id, HASH_FIND, NULL);
	if (f)
		return f->handle;
	if (!registry_get(slot, id, &desc, &hidden))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("state was dropped while this statement used it")));
	snprintf(name, sizeof(name), "s%u", id);
	f = hash_search(families, &id, HASH_ENTER, &found);
	f->handle = rocksdb_create_column_family(rocks.db, rocks.options, name, &err);
	if (err)
		hash_search(families, &id, HASH_REMOVE, NULL);
	rocks_check(err, "create a column family");
	f->persisted = false;
	f->unadopted = false;
	if (!hidden)
		family_persist(f, &desc);
	return f->handle;
}

/*
 * rocksdb_sync_registry brings the instance in line with the registry:
 * descriptors of new or changed states are stored, column families of
 * dropped states are dropped.  Cheap when nothing changed.
 */
void
rocksdb_sync_registry(void)
{
	HASH_SEQ_STATUS seq;
	RocksFamily *f;
	uint64		version = registry_version();
	uint32	   *gone;
	int			ngone = 0;

	if (!rocks.db || version == synced_version)
		return;
	gone = palloc(sizeof(uint32) * (hash_get_num_entries(families) + 1));
	hash_seq_init(&seq, families);
	while ((f = hash_seq_search(&seq)) != NULL)
	{
		StateDesc	desc;
		bool		hidden;

		if (f->unadopted)
			continue;
		if (!registry_get(-1, f->id, &desc, &hidden))
			gone[ngone++] = f->id;
		else if (!hidden && (!f->persisted || memcmp(&desc, &f->desc, sizeof(StateDesc)) != 0))
			family_persist(f, &desc);
	}
	for (int i = 0; i < ngone; i++)
	{
		f = hash_search(families, &gone[i], HASH_FIND, NULL);
		family_drop(f);
	}
	pfree(gone);
	synced_version = version;
}

/*
 * rocksdb_adopt_states puts the descriptors kept in the instance back into
 * a fresh registry (server start, crash restart), and drops column
 * families that have none (states dropped or being restored at the crash).
 */
bool
rocksdb_adopt_states(void)
{
	rocksdb_iterator_t *it;
	HASH_SEQ_STATUS seq;
	RocksFamily *f;
	uint32	   *orphans;
	int			norphans = 0;
	char	   *err = NULL;

	if (!rocksdb_open_existing())
		return false;
	it = rocksdb_create_iterator_cf(rocks.db, rocks.ropts, rocks.deflt);
	for (rocksdb_iter_seek(it, DESC_KEY_PREFIX, strlen(DESC_KEY_PREFIX));
		 rocksdb_iter_valid(it); rocksdb_iter_next(it))
	{
		size_t		klen;
		size_t		vlen;
		const char *k = rocksdb_iter_key(it, &klen);
		const char *v = rocksdb_iter_value(it, &vlen);
		StateDesc	desc;
		uint32		id;

		if (klen < strlen(DESC_KEY_PREFIX) || memcmp(k, DESC_KEY_PREFIX, strlen(DESC_KEY_PREFIX)) != 0)
			break;
		if (vlen != sizeof(StateDesc))
			continue;
		memcpy(&desc, v, sizeof(StateDesc));
		id = desc.id;
		f = hash_search(families, &id, HASH_FIND, NULL);
		if (f == NULL)
			continue;
		f->persisted = true;
		f->desc = desc;
		/* A state that does not fit (max_states) keeps its data on disk. */
		f->unadopted = !registry_adopt(&desc);
	}
	rocksdb_iter_get_error(it, &err);
	rocksdb_iter_destroy(it);
	rocks_check(err, "read the state descriptors");

	orphans = palloc(sizeof(uint32) * (hash_get_num_entries(families) + 1));
	hash_seq_init(&seq, families);
	while ((f = hash_seq_search(&seq)) != NULL)
		if (!f->persisted)
			orphans[norphans++] = f->id;
	for (int i = 0; i < norphans; i++)
	{
		f = hash_search(families, &orphans[i], HASH_FIND, NULL);
		family_drop(f);
	}
	synced_version = registry_version();
	return true;
}

/* ------------------------------------------------------------------------
 * Keys and requests
 * ------------------------------------------------------------------------
 */

/* rocks_key builds [key group][key length][key] in buf. */
void
rocks_key(StringInfo buf, uint16 key_group, const char *key, uint32 keylen)
{
	uint16		kg = pg_hton16(key_group);
	uint32		len = pg_hton32(keylen);

	resetStringInfo(buf);
	appendBinaryStringInfo(buf, (const char *) &kg, sizeof(kg));
	appendBinaryStringInfo(buf, (const char *) &len, sizeof(len));
	appendBinaryStringInfo(buf, key, keylen);
}

/* rocks_split_key finds the key image and map key of a RocksDB key. */
void
rocks_split_key(const char *k, size_t klen, const char **key, uint32 *keylen,
				const char **mkey, uint32 *mklen)
{
	uint32		len;

	memcpy(&len, k + 2, sizeof(uint32));
	len = pg_ntoh32(len);
	*key = k + 6;
	*keylen = len;
	*mkey = k + 6 + len;
	*mklen = (uint32) (klen - 6 - len);
}

/* The value length a stored map entry stands for (MAP_NULL_VALUE: NULL). */
static uint32
map_value_len(const char *v, size_t vlen)
{
	return (vlen >= 1 && v[0] == 0) ? (uint32) (vlen - 1) : MAP_NULL_VALUE;
}

/*
 * rocks_map_record appends one record of a map image (keyed_backend.h) for
 * a stored map entry: its map key and its stored value (flag, image).
 */
void
rocks_map_record(StringInfo out, const char *mkey, uint32 mklen, const char *v, size_t vlen)
{
	uint32		vl = map_value_len(v, vlen);

	appendBinaryStringInfo(out, (const char *) &mklen, sizeof(uint32));
	appendBinaryStringInfo(out, (const char *) &vl, sizeof(uint32));
	appendBinaryStringInfo(out, mkey, mklen);
	if (vl != MAP_NULL_VALUE)
		appendBinaryStringInfo(out, v + 1, vl);
}

/* The smallest key after every key that starts with prefix. */
static void
rocks_prefix_end(StringInfo prefix, StringInfo end)
{
	int			n = prefix->len;

	resetStringInfo(end);
	appendBinaryStringInfo(end, prefix->data, prefix->len);
	while (n > 0 && (unsigned char) end->data[n - 1] == 0xff)
		n--;
	Assert(n > 0);
	end->data[n - 1]++;
	end->len = n;
}

/* Commit the writes gathered from one session's requests. */
void
rocks_commit(void)
{
	char	   *err = NULL;

	if (rocksdb_writebatch_count(batch) == 0)
		return;
	rocksdb_write(rocks.db, rocks.wopts, batch, &err);
	rocksdb_writebatch_clear(batch);
	rocks_check(err, "write");
}

typedef struct Request
{
	RocksRequest h;
	const char *key;
	const char *rest;			/* what follows the key */
	uint32		restlen;
	rocksdb_column_family_handle_t *cf;
	StringInfoData rkey;		/* the RocksDB key */
} Request;

static void
request_parse(const char *payload, uint32 len, Request *r)
{
	if (len < sizeof(RocksRequest))
		elog(ERROR, "state_backend: short request");
	memcpy(&r->h, payload, sizeof(RocksRequest));
	if (len < sizeof(RocksRequest) + r->h.keylen)
		elog(ERROR, "state_backend: short request");
	r->key = payload + sizeof(RocksRequest);
	r->rest = r->key + r->h.keylen;
	r->restlen = len - sizeof(RocksRequest) - r->h.keylen;
	r->cf = rocks_family(r->h.state_id, r->h.slot);
	initStringInfo(&r->rkey);
	rocks_key(&r->rkey, r->h.key_group, r->key, r->h.keylen);
}

/* Read one RocksDB value; NULL when absent.  Free with rocksdb_free. */
static char *
rocks_get(rocksdb_column_family_handle_t *cf, const char *key, size_t keylen,
		  size_t *vallen)
{
	char	   *err = NULL;
	char	   *v = rocksdb_get_cf(rocks.db, rocks.ropts, cf, key, keylen, vallen, &err);

	rocks_check(err, "read");
	return v;
}

/*
 * rocks_scan calls fn for every RocksDB entry in [from, to) of a family,
 * and stops early when fn returns false.
 */
void
rocks_scan(rocksdb_t *db, rocksdb_readoptions_t *ropts,
		   rocksdb_column_family_handle_t *cf, const char *from, size_t fromlen,
		   const char *to, size_t tolen,
		   bool (*fn) (void *arg, const char *k, size_t klen, const char *v, size_t vlen),
		   void *arg)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(db, ropts, cf);
	char	   *err = NULL;
	uint32		n = 0;

	PG_TRY();
	{
		for (rocksdb_iter_seek(it, from, fromlen); rocksdb_iter_valid(it); rocksdb_iter_next(it))
		{
			size_t		klen;
			size_t		vlen;
			const char *k = rocksdb_iter_key(it, &klen);
			const char *v;

			if ((++n & 4095) == 0)
				channel_worker_heartbeat();

			if (to && memcmp(k, to, Min(klen, tolen)) >= 0 &&
				(memcmp(k, to, Min(klen, tolen)) > 0 || klen >= tolen))
				break;
			v = rocksdb_iter_value(it, &vlen);
			if (!fn(arg, k, klen, v, vlen))
				break;
		}
		rocksdb_iter_get_error(it, &err);
	}
	PG_FINALLY();
	{
		rocksdb_iter_destroy(it);
	}
	PG_END_TRY();
	rocks_check(err, "iterate");
}

/* Whole map image of one key, from its entries. */
typedef struct MapImage
{
	size_t		prefixlen;
	StringInfo	out;			/* NULL: count only */
	int64		count;
	int64		limit;			/* stop after this many (0: all) */
} MapImage;

static bool
map_image_add(void *arg, const char *k, size_t klen, const char *v, size_t vlen)
{
	MapImage   *m = arg;

	if (m->out)
		rocks_map_record(m->out, k + m->prefixlen, (uint32) (klen - m->prefixlen), v, vlen);
	m->count++;
	return m->limit == 0 || m->count < m->limit;
}

/*
 * map_image appends a key's map entries to out (NULL: only counts them, up
 * to limit when it is not 0); returns how many.
 */
static int64
map_image(rocksdb_column_family_handle_t *cf, StringInfo prefix, StringInfo out, int64 limit)
{
	StringInfoData end;
	MapImage	m;

	initStringInfo(&end);
	rocks_prefix_end(prefix, &end);
	m.prefixlen = prefix->len;
	m.out = out;
	m.count = 0;
	m.limit = limit;
	rocks_scan(rocks.db, rocks.ropts, cf, prefix->data, prefix->len, end.data, end.len,
			   map_image_add, &m);
	pfree(end.data);
	return m.count;
}

/* Store a whole map image as separate entries (after deleting the old). */
static void
map_store_image(rocksdb_column_family_handle_t *cf, StringInfo prefix,
				const char *image, uint32 len)
{
	StringInfoData end;
	StringInfoData k;
	StringInfoData v;
	uint32		off = 0;

	initStringInfo(&end);
	rocks_prefix_end(prefix, &end);
	rocksdb_writebatch_delete_range_cf(batch, cf, prefix->data, prefix->len, end.data, end.len);
	initStringInfo(&k);
	initStringInfo(&v);
	while (off + MAP_REC_HDR <= len)
	{
		uint32		mklen;
		uint32		vl;

		memcpy(&mklen, image + off, sizeof(uint32));
		memcpy(&vl, image + off + 4, sizeof(uint32));
		off += MAP_REC_HDR;
		resetStringInfo(&k);
		appendBinaryStringInfo(&k, prefix->data, prefix->len);
		appendBinaryStringInfo(&k, image + off, mklen);
		off += mklen;
		resetStringInfo(&v);
		appendStringInfoChar(&v, vl == MAP_NULL_VALUE ? 1 : 0);
		if (vl != MAP_NULL_VALUE)
		{
			appendBinaryStringInfo(&v, image + off, vl);
			off += vl;
		}
		rocksdb_writebatch_put_cf(batch, cf, k.data, k.len, v.data, v.len);
	}
	pfree(end.data);
	pfree(k.data);
	pfree(v.data);
}

static void
reply_bool(StringInfo reply, bool b)
{
	appendStringInfoChar(reply, b ? 1 : 0);
}

static void
reply_int64(StringInfo reply, int64 v)
{
	appendBinaryStringInfo(reply, (const char *) &v, sizeof(v));
}

/* GET: [found][image] */
static void
handle_get(Request *r, StringInfo reply)
{
	if (r->h.kind == STATE_KIND_MAP)
	{
		int			at;

		reply_bool(reply, true);
		at = reply->len;
		if (map_image(r->cf, &r->rkey, reply, 0) == 0)
		{
			reply->len = at - 1;
			reply_bool(reply, false);
		}
	}
	else
	{
		size_t		vlen;
		char	   *v = rocks_get(r->cf, r->rkey.data, r->rkey.len, &vlen);

		reply_bool(reply, v != NULL);
		if (v)
		{
			appendBinaryStringInfo(reply, v, vlen);
			rocksdb_free(v);
		}
	}
}

/* Does a key have state?  (Any map entry, for a map.) */
static bool
key_exists(Request *r)
{
	size_t		vlen;
	char	   *v;

	if (r->h.kind == STATE_KIND_MAP)
		return map_image(r->cf, &r->rkey, NULL, 1) > 0;
	v = rocks_get(r->cf, r->rkey.data, r->rkey.len, &vlen);
	if (v)
		rocksdb_free(v);
	return v != NULL;
}

static void
key_delete(Request *r)
{
	if (r->h.kind == STATE_KIND_MAP)
	{
		StringInfoData end;

		initStringInfo(&end);
		rocks_prefix_end(&r->rkey, &end);
		rocksdb_writebatch_delete_range_cf(batch, r->cf, r->rkey.data, r->rkey.len,
										   end.data, end.len);
		pfree(end.data);
	}
	else
		rocksdb_writebatch_delete_cf(batch, r->cf, r->rkey.data, r->rkey.len);
}

/*
 * CAS: [has expected][expected length][expected][new image].  The new
 * image is stored only if the key's image is still the expected one;
 * reply [stored] and, if not, [found][current image].
 */
static void
handle_cas(Request *r, StringInfo reply)
{
	const char *p = r->rest;
	bool		has_expected = p[0] != 0;
	uint32		explen;
	const char *expected;
	const char *image;
	uint32		imagelen;
	size_t		curlen;
	char	   *cur;
	bool		same;

	if (r->restlen < 1 + sizeof(uint32))
		elog(ERROR, "state_backend: short request");
	memcpy(&explen, p + 1, sizeof(uint32));
	if (r->restlen < 1 + sizeof(uint32) + explen)
		elog(ERROR, "state_backend: short request");
	expected = p + 1 + sizeof(uint32);
	image = expected + explen;
	imagelen = r->restlen - 1 - sizeof(uint32) - explen;

	cur = rocks_get(r->cf, r->rkey.data, r->rkey.len, &curlen);
	same = has_expected ? (cur != NULL && curlen == explen && memcmp(cur, expected, explen) == 0)
		: cur == NULL;
	if (same)
	{
		rocksdb_writebatch_put_cf(batch, r->cf, r->rkey.data, r->rkey.len, image, imagelen);
		rocks_commit();
		reply_bool(reply, true);
	}
	else
	{
		reply_bool(reply, false);
		reply_bool(reply, cur != NULL);
		if (cur)
			appendBinaryStringInfo(reply, cur, curlen);
	}
	if (cur)
		rocksdb_free(cur);
}

/*
 * FOLD: [StateFold][value image]; the worker folds the value into the
 * key's state with a built-in function and replies the result image.  The
 * worker is the only writer, so read, fold and write are atomic.
 */
static void
handle_fold(Request *r, StringInfo reply)
{
	StateFold	fold;
	const char *in;
	uint32		inlen;
	size_t		curlen;
	char	   *cur;

	if (r->restlen < sizeof(StateFold))
		elog(ERROR, "state_backend: short fold request");
	memcpy(&fold, r->rest, sizeof(StateFold));
	in = r->rest + sizeof(StateFold);
	inlen = r->restlen - sizeof(StateFold);
	if (!state_fold_type_ok(fold.type, fold.fn))
		elog(ERROR, "state_backend: the worker cannot fold with function %u", fold.fn);

	cur = rocks_get(r->cf, r->rkey.data, r->rkey.len, &curlen);
	if (cur == NULL)
		appendBinaryStringInfo(reply, in, inlen);
	else
	{
		TypeCodec	codec;
		FmgrInfo	flinfo;
		Datum		a;
		Datum		b;
		Datum		result;

		memset(&codec, 0, sizeof(codec));
		codec.typlen = fold.typlen;
		codec.typbyval = fold.typbyval;
		codec.mcxt = CurrentMemoryContext;
		PG_TRY();
		{
			a = codec_decode(&codec, cur, (uint32) curlen);
			b = codec_decode(&codec, in, inlen);
			fmgr_info(fold.fn, &flinfo);
			if (fold.kind == STATE_REDUCER_SUM)
				result = FunctionCall2(&flinfo, a, b);
			else
			{
				int32		cmp = DatumGetInt32(FunctionCall2(&flinfo, a, b));

				if (fold.kind == STATE_REDUCER_MIN)
					result = cmp <= 0 ? a : b;
				else
					result = cmp >= 0 ? a : b;
			}
			codec_encode(&codec, result, reply);
		}
		PG_FINALLY();
		{
			rocksdb_free(cur);
		}
		PG_END_TRY();
	}
	rocksdb_writebatch_put_cf(batch, r->cf, r->rkey.data, r->rkey.len, reply->data, reply->len);
	rocks_commit();
}

/* The RocksDB key of a map entry: the key's prefix, then the map key. */
static void
map_entry_key(Request *r, const char *mkey, uint32 mklen, StringInfo out)
{
	resetStringInfo(out);
	appendBinaryStringInfo(out, r->rkey.data, r->rkey.len);
	appendBinaryStringInfo(out, mkey, mklen);
}

/* MAP_GET: request [map key]; reply [found][isnull][value]. */
static void
handle_map_get(Request *r, StringInfo reply)
{
	StringInfoData k;
	size_t		vlen;
	char	   *v;

	initStringInfo(&k);
	map_entry_key(r, r->rest, r->restlen, &k);
	v = rocks_get(r->cf, k.data, k.len, &vlen);
	reply_bool(reply, v != NULL);
	if (v)
	{
		reply_bool(reply, vlen < 1 || v[0] != 0);
		if (vlen > 1)
			appendBinaryStringInfo(reply, v + 1, vlen - 1);
		rocksdb_free(v);
	}
	pfree(k.data);
}

/* MAP_PUT: request [map key length][map key][isnull][value]. */
static void
handle_map_put(Request *r)
{
	StringInfoData k;
	uint32		mklen;

	if (r->restlen < sizeof(uint32))
		elog(ERROR, "state_backend: short request");
	memcpy(&mklen, r->rest, sizeof(uint32));
	if (r->restlen < sizeof(uint32) + mklen + 1)
		elog(ERROR, "state_backend: short request");
	initStringInfo(&k);
	map_entry_key(r, r->rest + sizeof(uint32), mklen, &k);
	rocksdb_writebatch_put_cf(batch, r->cf, k.data, k.len,
							  r->rest + sizeof(uint32) + mklen,
							  r->restlen - sizeof(uint32) - mklen);
	pfree(k.data);
}

/* MAP_REMOVE: request [map key]; reply [existed]. */
static void
handle_map_remove(Request *r, StringInfo reply)
{
	StringInfoData k;
	size_t		vlen;
	char	   *v;

	initStringInfo(&k);
	map_entry_key(r, r->rest, r->restlen, &k);
	v = rocks_get(r->cf, k.data, k.len, &vlen);
	if (v)
	{
		rocksdb_free(v);
		rocksdb_writebatch_delete_cf(batch, r->cf, k.data, k.len);
		rocks_commit();
	}
	reply_bool(reply, v != NULL);
	pfree(k.data);
}

/* LENGTH: elements of a list, entries of a map. */
static void
handle_length(Request *r, StringInfo reply)
{
	int64		n = 0;

	if (r->h.kind == STATE_KIND_MAP)
		n = map_image(r->cf, &r->rkey, NULL, 0);
	else
	{
		size_t		vlen;
		char	   *v = rocks_get(r->cf, r->rkey.data, r->rkey.len, &vlen);

		if (v && r->h.kind == STATE_KIND_LIST)
		{
			size_t		off = 0;

			while (off + LIST_ELEM_HDR <= vlen)
			{
				uint32		elen;

				memcpy(&elen, v + off, sizeof(uint32));
				off += LIST_ELEM_HDR + elen;
				n++;
			}
		}
		else if (v)
			n = 1;
		if (v)
			rocksdb_free(v);
	}
	reply_int64(reply, n);
}

/*
 * SCAN pages through a state, a key group of it, or one key's map:
 * request [key group or -1][one key's map?][resume after: length, key];
 * reply [more?][cursor: length, key] then records [key length][value length][key][value] up to
 * about SCAN_PAGE bytes, ending at a key boundary.  For whole keys the
 * record's key is the key image and the value its whole image; for one
 * key's map, the map key and the value (MAP_NULL_VALUE length for NULL).
 * The cursor is the last RocksDB key returned.
 */
#define SCAN_PAGE	(16 * 1024)

typedef struct ScanPage
{
	Request    *r;
	bool		map_of_key;
	const char *after;
	uint32		afterlen;
	StringInfo	reply;			/* the records */
	bool		more;
	StringInfoData cur_key;		/* map state: the key being assembled */
	StringInfoData cur_image;
	StringInfoData last;		/* last RocksDB key taken */
} ScanPage;

static void
scan_emit(StringInfo reply, const char *k, uint32 klen, const char *v, uint32 vlen)
{
	appendBinaryStringInfo(reply, (const char *) &klen, sizeof(uint32));
	appendBinaryStringInfo(reply, (const char *) &vlen, sizeof(uint32));
	appendBinaryStringInfo(reply, k, klen);
	if (vlen != MAP_NULL_VALUE)
		appendBinaryStringInfo(reply, v, vlen);
}

static void
scan_flush_map_key(ScanPage *s)
{
	if (s->cur_key.len == 0 && s->cur_image.len == 0)
		return;
	scan_emit(s->reply, s->cur_key.data, s->cur_key.len, s->cur_image.data, s->cur_image.len);
	resetStringInfo(&s->cur_key);
	resetStringInfo(&s->cur_image);
}

static bool
scan_add(void *arg, const char *k, size_t klen, const char *v, size_t vlen)
{
	ScanPage   *s = arg;
	const char *key;
	uint32		keylen;
	const char *mkey;
	uint32		mklen;

	if (s->afterlen > 0 && klen == s->afterlen && memcmp(k, s->after, klen) == 0)
		return true;
	rocks_split_key(k, klen, &key, &keylen, &mkey, &mklen);

	if (s->map_of_key)
	{
		if (s->reply->len >= SCAN_PAGE)
		{
			s->more = true;
			return false;
		}
		scan_emit(s->reply, mkey, mklen, v + 1, map_value_len(v, vlen));
	}
	else if (s->r->h.kind == STATE_KIND_MAP)
	{
		bool		same = s->cur_key.len == (int) keylen &&
			memcmp(s->cur_key.data, key, keylen) == 0 && s->last.len > 0;

		if (!same)
		{
			scan_flush_map_key(s);
			if (s->reply->len >= SCAN_PAGE)
			{
				s->more = true;
				return false;
			}
			appendBinaryStringInfo(&s->cur_key, key, keylen);
		}
		rocks_map_record(&s->cur_image, mkey, mklen, v, vlen);
	}
	else
	{
		if (s->reply->len >= SCAN_PAGE)
		{
			s->more = true;
			return false;
		}
		scan_emit(s->reply, key, keylen, v, (uint32) vlen);
	}
	resetStringInfo(&s->last);
	appendBinaryStringInfo(&s->last, k, klen);
	return true;
}

static void
handle_scan(Request *r, StringInfo reply)
{
	ScanPage	s;
	int32		key_group;
	const char *p = r->rest;
	StringInfoData from;
	StringInfoData to;
	StringInfoData recs;

	if (r->restlen < 9)
		elog(ERROR, "state_backend: short request");
	memcpy(&key_group, p, sizeof(int32));
	s.r = r;
	s.map_of_key = p[4] != 0;
	memcpy(&s.afterlen, p + 5, sizeof(uint32));
	if (r->restlen < 9 + s.afterlen)
		elog(ERROR, "state_backend: short request");
	s.after = p + 9;
	initStringInfo(&recs);
	s.reply = &recs;
	s.more = false;
	initStringInfo(&s.cur_key);
	initStringInfo(&s.cur_image);
	initStringInfo(&s.last);
	initStringInfo(&from);
	initStringInfo(&to);

	if (s.map_of_key)
	{
		appendBinaryStringInfo(&from, r->rkey.data, r->rkey.len);
		rocks_prefix_end(&r->rkey, &to);
	}
	else if (key_group >= 0)
	{
		uint16		kg = pg_hton16((uint16) key_group);
		uint16		next = pg_hton16((uint16) (key_group + 1));

		appendBinaryStringInfo(&from, (const char *) &kg, 2);
		appendBinaryStringInfo(&to, (const char *) &next, 2);
	}
	else
		appendBinaryStringInfo(&to, "\xff\xff\xff\xff\xff\xff", 6);
	if (s.afterlen > 0)
	{
		resetStringInfo(&from);
		appendBinaryStringInfo(&from, s.after, s.afterlen);
	}

	rocks_scan(rocks.db, rocks.ropts, r->cf, from.data, from.len, to.data, to.len,
			   scan_add, &s);
	/* A map state's page ends between keys, so only the last key is left. */
	if (!s.map_of_key && r->h.kind == STATE_KIND_MAP && !s.more)
		scan_flush_map_key(&s);
	reply_bool(reply, s.more);
	appendBinaryStringInfo(reply, (const char *) &s.last.len, sizeof(uint32));
	appendBinaryStringInfo(reply, s.last.data, s.last.len);
	appendBinaryStringInfo(reply, recs.data, recs.len);
}

/* Counting keys (map entries of one key count once). */
typedef struct CountKeys
{
	int64		n;
	StringInfoData prev;
	bool		map;
} CountKeys;

static bool
count_key(void *arg, const char *k, size_t klen, const char *v, size_t vlen)
{
	CountKeys  *c = arg;

	if (c->map)
	{
		uint32		len;

		memcpy(&len, k + 2, sizeof(uint32));
		len = pg_ntoh32(len) + 6;
		if (c->prev.len == (int) len && memcmp(c->prev.data, k, len) == 0)
			return true;
		resetStringInfo(&c->prev);
		appendBinaryStringInfo(&c->prev, k, len);
	}
	c->n++;
	return true;
}

int64
rocks_count_keys(rocksdb_t *db, rocksdb_readoptions_t *ropts,
				 rocksdb_column_family_handle_t *cf, bool map)
{
	CountKeys	c;

	c.n = 0;
	c.map = map;
	initStringInfo(&c.prev);
	rocks_scan(db, ropts, cf, "", 0, NULL, 0, count_key, &c);
	pfree(c.prev.data);
	return c.n;
}

static void
handle_truncate(Request *r, StringInfo reply)
{
	int64		n = rocks_count_keys(rocks.db, rocks.ropts, r->cf, r->h.kind == STATE_KIND_MAP);
	char	   *err = NULL;

	rocks_commit();
	rocksdb_delete_range_cf(rocks.db, rocks.wopts, r->cf, "", 0,
							"\xff\xff\xff\xff\xff\xff", 6, &err);
	rocks_check(err, "delete a range");
	reply_int64(reply, n);
}

static int64
rocks_property_int(rocksdb_column_family_handle_t *cf, const char *name)
{
	char	   *v = rocksdb_property_value_cf(rocks.db, cf, name);
	int64		n = 0;

	if (v)
	{
		n = strtoll(v, NULL, 10);
		rocksdb_free(v);
	}
	return n;
}

static void
handle_size(Request *r, StringInfo reply)
{
	int64		n = rocks_count_keys(rocks.db, rocks.ropts, r->cf, r->h.kind == STATE_KIND_MAP);
	int64		bytes = rocks_property_int(r->cf, "rocksdb.total-sst-files-size") +
		rocks_property_int(r->cf, "rocksdb.cur-size-all-mem-tables");

	reply_int64(reply, n);
	reply_int64(reply, bytes);
}

/*
 * rocksdb_handle_request runs one state request from a session.  Writes
 * that answer nothing are gathered in a batch, committed before the next
 * read and at the end of the session's requests of a round
 * (CHANNEL_OP_FLUSH).  Returns whether a reply was produced.
 */
bool
rocksdb_handle_request(ChannelOp op, const char *payload, uint32 len, StringInfo reply)
{
	Request		r;

	if (op == CHANNEL_OP_FLUSH)
	{
		if (rocks.db)
			rocks_commit();
		return false;
	}
	if (op == CHANNEL_OP_SYNC)
	{
		if (rocks.db)
		{
			rocks_commit();
			rocksdb_sync_registry();
		}
		return true;
	}
	request_parse(payload, len, &r);
	switch (op)
	{
		case CHANNEL_OP_OPEN:
			return true;		/* request_parse created the family */
		case CHANNEL_OP_PUT:
			if (r.h.kind == STATE_KIND_MAP)
				map_store_image(r.cf, &r.rkey, r.rest, r.restlen);
			else
				rocksdb_writebatch_put_cf(batch, r.cf, r.rkey.data, r.rkey.len,
										  r.rest, r.restlen);
			return false;
		case CHANNEL_OP_APPEND:
			rocksdb_writebatch_merge_cf(batch, r.cf, r.rkey.data, r.rkey.len,
										r.rest, r.restlen);
			return false;
		case CHANNEL_OP_MAP_PUT:
			handle_map_put(&r);
			return false;
		default:
			break;
	}

	/* The rest read: the session's earlier writes go first. */
	rocks_commit();
	switch (op)
	{
		case CHANNEL_OP_GET:
			handle_get(&r, reply);
			break;
		case CHANNEL_OP_REMOVE:
			{
				bool		existed = key_exists(&r);

				if (existed)
				{
					key_delete(&r);
					rocks_commit();
				}
				reply_bool(reply, existed);
			}
			break;
		case CHANNEL_OP_CAS:
			handle_cas(&r, reply);
			break;
		case CHANNEL_OP_FOLD:
			handle_fold(&r, reply);
			break;
		case CHANNEL_OP_MAP_GET:
			handle_map_get(&r, reply);
			break;
		case CHANNEL_OP_MAP_REMOVE:
			handle_map_remove(&r, reply);
			break;
		case CHANNEL_OP_SCAN:
			handle_scan(&r, reply);
			break;
		case CHANNEL_OP_LENGTH:
			handle_length(&r, reply);
			break;
		case CHANNEL_OP_TRUNCATE:
			handle_truncate(&r, reply);
			break;
		case CHANNEL_OP_SIZE:
			handle_size(&r, reply);
			break;
		default:
			elog(ERROR, "state_backend: unexpected rocksdb request %d", (int) op);
	}
	return true;
}
