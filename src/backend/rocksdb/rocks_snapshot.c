/*
 * backend/rocksdb/rocks_snapshot.c
 *		The rocksdb backend's snapshot strategy: the cut (a RocksDB
 *		checkpoint), entries collected for key-group files, the checkpoint's
 *		files written into a native snapshot, and restore from those files.
 *
 * The cut runs in the state worker between two of its requests, so no
 * write to RocksDB happens during it.  Memtables are flushed first, then a
 * RocksDB checkpoint (hard links, consistent across column families) is
 * made in a staging directory next to the instance.  That staging copy is
 * opened read-only while the snapshot is written and removed after.
 *
 * In a native snapshot written to disk the checkpoint's files go to
 * <snapshot>/rocksdb/ (metadata, and SST files of a self-contained
 * snapshot), or, for a checkpoint under state_backend.checkpoint_dir, SST
 * files go to <checkpoint_dir>/shared/ once and are referenced from then on
 * (rocks_files.c has their layout, checks and cleanup).  Other snapshots
 * (canonical, memory:<id>) hold rocksdb states as key-group files like heap
 * states, from entries collected here.
 */
#include "postgres.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

#include "common/file_perm.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "rocks_files.h"
#include "rocks_internal.h"

/* The staging checkpoint of the running snapshot, opened read-only. */
typedef struct Staging
{
	int64		id;
	char		dir[MAXPGPATH];
	rocksdb_t  *db;
	int			nfamilies;
	char	  **names;
	rocksdb_column_family_handle_t **handles;
	rocksdb_readoptions_t *ropts;
} Staging;

static Staging staging = {0};

static void
staging_path(char *buf, Size len, const char *what)
{
	snprintf(buf, len, "%s-%s", state_backend_rocksdb_dir, what);
}

/* Remove a scratch directory of ours, if it is there. */
static void
remove_scratch(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) == 0)
		(void) rmtree(dir, true);
}

/* Open a checkpoint directory read-only with all its column families. */
static void
open_read_only(const char *dir, Staging *s)
{
	char	   *err = NULL;
	size_t		n = 0;
	const rocksdb_options_t **opts;

	s->names = rocksdb_list_column_families(rocks.options, dir, &n, &err);
	rocks_check(err, "list the column families of a checkpoint");
	s->nfamilies = (int) n;
	opts = palloc(sizeof(rocksdb_options_t *) * n);
	for (size_t i = 0; i < n; i++)
		opts[i] = rocks.options;
	/* The staging copy outlives the request that made it (a snapshot). */
	s->handles = MemoryContextAllocZero(TopMemoryContext,
										sizeof(rocksdb_column_family_handle_t *) * n);
	s->db = rocksdb_open_for_read_only_column_families(rocks.options, dir, (int) n,
													   (const char *const *) s->names,
													   opts, s->handles, 0, &err);
	rocks_check(err, "open a checkpoint");
	s->ropts = rocksdb_readoptions_create();
	rocksdb_readoptions_set_fill_cache(s->ropts, 0);
}

static void
close_read_only(Staging *s)
{
	if (s->handles)
	{
		for (int i = 0; i < s->nfamilies; i++)
			if (s->handles[i])
				rocksdb_column_family_handle_destroy(s->handles[i]);
		pfree(s->handles);
		s->handles = NULL;
	}
	if (s->db)
		rocksdb_close(s->db);
	s->db = NULL;
	if (s->names)
		rocksdb_list_column_families_destroy(s->names, s->nfamilies);
	s->names = NULL;
	if (s->ropts)
		rocksdb_readoptions_destroy(s->ropts);
	s->ropts = NULL;
}

/* The family of state id in a checkpoint, or NULL; *name gets its name. */
static rocksdb_column_family_handle_t *
family_of(Staging *s, uint32 id, const char **name)
{
	uint32		fid;

	for (int i = 0; i < s->nfamilies; i++)
		if (rocks_family_id(s->names[i], &fid) && fid == id)
		{
			if (name)
				*name = s->names[i];
			return s->handles[i];
		}
	return NULL;
}

/*
 * check_family_name: the family a snapshot holds for a state must be named
 * as the MANIFEST describes the state (with a TTL or without), or its
 * values would be read in the wrong layout.
 */
static void
check_family_name(const char *name, uint32 from_id, uint32 to_id, int to_slot)
{
	StateInfo	info;
	bool		hidden;
	char		expected[32];

	if (!rocks_host->state_get(to_slot, to_id, &info, &hidden))
		return;					/* dropped meanwhile: rocks_family said so */
	info.id = from_id;
	rocks_family_name(expected, sizeof(expected), &info);
	if (strcmp(name, expected) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("snapshot's RocksDB files hold state %u as column family \"%s\", not \"%s\"",
						from_id, name, expected),
				 errdetail("The MANIFEST and the RocksDB files disagree on the state's TTL.")));
}

static void rocks_snapshot_release(int64 id);

/*
 * rocks_snapshot_prepare makes the consistent copy of every rocksdb state
 * for snapshot id.  Called by the worker, between requests; does nothing
 * when there is no instance.
 */
static void
rocks_snapshot_prepare(int64 id)
{
	rocksdb_checkpoint_t *cp;
	char	   *err = NULL;

	rocks_snapshot_release(0);
	if (!rocks_is_open())
		return;
	rocks_check_not_failed();
	staging_path(staging.dir, sizeof(staging.dir), "snapshot");
	remove_scratch(staging.dir);

	/*
	 * Writes a session posted just before asking for the snapshot may still
	 * be in the batch of this round: they are in.  Then flush every family,
	 * so the checkpoint is SST files (shared by later checkpoints) and the
	 * little write-ahead log written since.
	 */
	rocks_commit();
	rocks_flush_all();
	cp = rocksdb_checkpoint_object_create(rocks.db, &err);
	rocks_check(err, "start a checkpoint");
	rocksdb_checkpoint_create(cp, staging.dir, UINT64_MAX, &err);
	rocksdb_checkpoint_object_destroy(cp);
	rocks_check(err, "make a checkpoint");
	staging.id = id;
	open_read_only(staging.dir, &staging);
}

/* rocks_snapshot_release drops the staging copy (id 0: whatever it is). */
static void
rocks_snapshot_release(int64 id)
{
	if (id != 0 && staging.id != id)
		return;
	close_read_only(&staging);
	if (staging.dir[0] != '\0')
		remove_scratch(staging.dir);
	staging.dir[0] = '\0';
	staging.id = 0;
}

/* ------------------------------------------------------------------------
 * Entries, for key-group files
 * ------------------------------------------------------------------------
 */

typedef struct Collect
{
	StringInfo	out;
	uint32		state_id;
	bool		map;
	RocksKeyRows rows;			/* map: the key being gathered */
} Collect;

static void
collect_put(void *arg, const char *key, uint32 keylen, const char *image, uint32 imagelen)
{
	Collect    *c = arg;

	rocks_host->put_entry(c->out, c->state_id, key, keylen, image, imagelen);
}

static bool
collect_entry(void *arg, const char *k, size_t klen, const char *v, size_t vlen)
{
	Collect    *c = arg;
	RocksRowKey rk;

	if (c->map)
	{
		rocks_rows_add(&c->rows, k, klen, v, vlen, collect_put, c);
		return true;
	}
	rocks_split_key(k, klen, &rk);
	rocks_host->put_entry(c->out, c->state_id, rk.key, rk.keylen, v, (uint32) vlen);
	return true;
}

/*
 * rocks_snapshot_collect appends the entries of one key group of the
 * states to collect (rocksdb states, as the driver picked them), as of the
 * cut, as entry records
 * (format/records.h), a map's entries gathered into its image.
 */
static void
rocks_snapshot_collect(int64 id, const StateInfo *states, const bool *collect,
					   int nstates, int key_group, StringInfo out)
{
	Collect		c;
	StringInfoData from;
	StringInfoData to;

	if (staging.db == NULL)
		return;
	initStringInfo(&from);
	initStringInfo(&to);
	rocks_key_group_range(key_group, &from, &to);
	rocks_rows_init(&c.rows);
	for (int i = 0; i < nstates; i++)
	{
		rocksdb_column_family_handle_t *cf;

		if (!collect[i])
			continue;
		cf = family_of(&staging, states[i].id, NULL);
		if (cf == NULL)
			continue;			/* never written to: empty */
		c.out = out;
		c.state_id = states[i].id;
		c.map = states[i].kind == STATE_KIND_MAP;
		rocks_scan(staging.db, staging.ropts, cf, from.data, from.len,
				   to.data, to.len, collect_entry, &c);
		if (c.map)
			rocks_rows_end(&c.rows, collect_put, &c);
	}
	rocks_rows_free(&c.rows);
	pfree(from.data);
	pfree(to.data);
}

/* ------------------------------------------------------------------------
 * Native files
 * ------------------------------------------------------------------------
 */

/*
 * The entries of families counted by earlier native snapshots, by the
 * files that held them.  The staging copy is flushed, so a family's
 * entries are those of its SST files; an SST file never changes, and its
 * number is never given to another file of the instance (whose identity is
 * part of the key), so a family whose files are the same holds the same
 * entries: a checkpoint of a state that did not change since the last one
 * does not count it again.  The worker's memory; a family that is gone
 * from the staging copy is forgotten.
 */
typedef struct CountedFamily
{
	char	   *files;			/* the instance's identity, then each file */
	int64		entries;
} CountedFamily;

static HTAB *counted = NULL;	/* family name -> CountedFamily */

typedef struct CountedEntry
{
	char		family[32];
	CountedFamily c;
} CountedEntry;

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* What identifies a family's entries in the staging copy: its files. */
static char *
family_files(const rocksdb_livefiles_t *live, const char *family, const char *tag)
{
	int			n = rocksdb_livefiles_count(live);
	char	  **names = palloc(sizeof(char *) * Max(n, 1));
	int			k = 0;
	StringInfoData buf;

	for (int f = 0; f < n; f++)
		if (strcmp(rocksdb_livefiles_column_family_name(live, f), family) == 0)
			names[k++] = psprintf("%s:%zu:" UINT64_FORMAT ":" UINT64_FORMAT,
								  rocksdb_livefiles_name(live, f),
								  rocksdb_livefiles_size(live, f),
								  (uint64) rocksdb_livefiles_entries(live, f),
								  (uint64) rocksdb_livefiles_deletions(live, f));
	qsort(names, k, sizeof(char *), cmp_names);
	initStringInfo(&buf);
	appendStringInfoString(&buf, tag);
	for (int i = 0; i < k; i++)
	{
		appendStringInfo(&buf, " %s", names[i]);
		pfree(names[i]);
	}
	pfree(names);
	return buf.data;
}

/*
 * count_entries counts the entries of every state of the snapshot (mine)
 * in the staging copy into entries[], serving sessions as it goes, or
 * takes a family's count from an earlier snapshot whose files were the
 * same.
 */
static void
count_entries(const StateInfo *states, const bool *mine, int nstates,
			  const char *tag, int64 *entries)
{
	const rocksdb_livefiles_t *live = rocksdb_livefiles(staging.db);
	char	  **files = palloc0(sizeof(char *) * nstates);
	const char **names = palloc0(sizeof(char *) * nstates);
	int		   *tocount = palloc(sizeof(int) * Max(nstates, 1));
	rocksdb_column_family_handle_t **cfs = palloc(sizeof(void *) * Max(nstates, 1));
	bool	   *maps = palloc(sizeof(bool) * Max(nstates, 1));
	int64	   *counts = palloc(sizeof(int64) * Max(nstates, 1));
	int			ncount = 0;
	HASH_SEQ_STATUS seq;
	CountedEntry *e;

	if (counted == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(((CountedEntry *) 0)->family);
		ctl.entrysize = sizeof(CountedEntry);
		ctl.hcxt = TopMemoryContext;
		counted = hash_create("rocksdb counted families", 64, &ctl,
							  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	}
	/* Families no longer in the staging copy are forgotten. */
	hash_seq_init(&seq, counted);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		bool		found = false;

		for (int i = 0; i < staging.nfamilies && !found; i++)
			found = strcmp(staging.names[i], e->family) == 0;
		if (!found)
		{
			pfree(e->c.files);
			(void) hash_search(counted, e->family, HASH_REMOVE, NULL);
		}
	}
	for (int i = 0; i < nstates; i++)
		if (mine[i] && family_of(&staging, states[i].id, &names[i]) != NULL)
			files[i] = family_files(live, names[i], tag);
	rocksdb_livefiles_destroy(live);

	/* Those counted before whose files are the same keep their count. */
	for (int i = 0; i < nstates; i++)
	{
		char		key[32];

		entries[i] = 0;
		if (files[i] == NULL)
			continue;
		strlcpy(key, names[i], sizeof(key));
		e = hash_search(counted, key, HASH_FIND, NULL);
		if (e && strcmp(e->c.files, files[i]) == 0)
		{
			/* The count's step, for a family counted before as for one counted now. */
			FAULT_POINT_HOST("checkpoint.rocksdb_count");
			entries[i] = e->c.entries;
			pfree(files[i]);
			files[i] = NULL;
			continue;
		}
		tocount[ncount] = i;
		cfs[ncount] = family_of(&staging, states[i].id, NULL);
		maps[ncount++] = states[i].kind == STATE_KIND_MAP;
	}
	/* The others are counted, all at once. */
	rocks_count_families(staging.db, staging.ropts, cfs, maps, ncount, counts);
	for (int c = 0; c < ncount; c++)
	{
		int			i = tocount[c];
		bool		found;
		char		key[32];

		strlcpy(key, names[i], sizeof(key));
		entries[i] = counts[c];
		e = hash_search(counted, key, HASH_ENTER, &found);
		if (found)
			pfree(e->c.files);
		e->c.files = MemoryContextStrdup(TopMemoryContext, files[i]);
		e->c.entries = entries[i];
	}
	for (int i = 0; i < nstates; i++)
		if (files[i])
			pfree(files[i]);
	pfree(files);
	pfree(names);
	pfree(tocount);
	pfree(cfs);
	pfree(maps);
	pfree(counts);
}

/*
 * rocks_snapshot_write_native writes the native form of the rocksdb states
 * of a snapshot into dir: the checkpoint's files (SST files under
 * shared_dir when it is given and they are not there yet), FILES, and a
 * list per state, reported to the writer.  *reused tells whether files
 * were shared with earlier checkpoints.
 */
static void
rocks_snapshot_write_native(int64 id, const char *dir, const char *shared_dir,
							const StateInfo *states, const bool *mine, int nstates,
							SnapshotWriter *w, bool *reused)
{
	char		rdir[MAXPGPATH];
	char		tag[32];
	DIR		   *d;
	struct dirent *de;
	const rocksdb_livefiles_t *live;
	CopiedFiles cp;
	int64	   *entries;

	snprintf(rdir, sizeof(rdir), "%s/rocksdb", dir);
	if (MakePGDirectory(rdir) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create snapshot directory \"%s\": %m", rdir)));
	if (shared_dir && MakePGDirectory(shared_dir) != 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", shared_dir)));
	rocks_instance_tag(tag, sizeof(tag));

	rocks_files_begin(&cp);
	d = AllocateDir(staging.dir);
	while ((de = ReadDir(d, staging.dir)) != NULL)
	{
		if (de->d_name[0] == '.')
			continue;
		rocks_host->yield();
		rocks_files_copy(&cp, staging.dir, de->d_name, rdir, shared_dir, tag);
		rocks_host->yield();
	}
	FreeDir(d);
	rocks_files_finish(&cp, dir);

	/* Counted while sessions are served: the staging copy stands still. */
	entries = palloc0(sizeof(int64) * nstates);
	count_entries(states, mine, nstates, tag, entries);
	live = rocksdb_livefiles(staging.db);
	for (int i = 0; i < nstates; i++)
	{
		if (mine[i])
			rocks_files_write_list(&cp, &states[i], live, entries[i], w);
	}
	rocksdb_livefiles_destroy(live);
	pfree(entries);
	snprintf(rdir, sizeof(rdir), "%s/rocksdb", dir);
	(void) fsync_fname_ext(rdir, true, false, ERROR);
	if (shared_dir)
		(void) fsync_fname_ext(shared_dir, true, false, ERROR);
	*reused = cp.reused;
	pfree(cp.files);
	pfree(cp.text.data);
}

/* ------------------------------------------------------------------------
 * Restore
 * ------------------------------------------------------------------------
 */

/* Copy one family of a read-only checkpoint into a live one. */
typedef struct CopyFamily
{
	rocksdb_column_family_handle_t *to;
	rocksdb_writebatch_t *batch;
	int			pending;
	int64		keys;			/* keys copied (a map's entries count once) */
	RocksKeyRows rows;			/* the last key copied (its key only) */
} CopyFamily;

static bool
copy_entry(void *arg, const char *k, size_t klen, const char *v, size_t vlen)
{
	CopyFamily *c = arg;
	RocksRowKey rk;

	rocks_split_key(k, klen, &rk);
	if (rocks_rows_follow(&c->rows, rk.key, rk.keylen))
		c->keys++;
	rocksdb_writebatch_put_cf(c->batch, c->to, k, klen, v, vlen);
	if (++c->pending >= 4096)
	{
		char	   *err = NULL;

		rocksdb_write(rocks.db, rocks.wopts, c->batch, &err);
		rocksdb_writebatch_clear(c->batch);
		c->pending = 0;
		rocks_check(err, "write");
	}
	return true;
}

/* Make a scratch directory of ours, empty. */
static void
make_scratch(const char *scratch)
{
	remove_scratch(scratch);
	if (pg_mkdir_p((char *) scratch, pg_dir_create_mode) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", scratch)));
}

/*
 * stage_snapshot lays a native snapshot's RocksDB files (verified before)
 * out in scratch as a RocksDB directory: SST files linked, the rest copied.
 */
static void
stage_snapshot(const char *snapdir, const char *scratch)
{
	char		path[MAXPGPATH];
	ListedFile *files;
	int			nfiles = rocks_files_read(snapdir, &files, path, sizeof(path));

	for (int i = 0; i < nfiles; i++)
	{
		char		src[MAXPGPATH];
		char		dst[MAXPGPATH];
		int64		size;

		CHECK_FOR_INTERRUPTS();
		snprintf(src, sizeof(src), "%s/%s", snapdir, files[i].where);
		snprintf(dst, sizeof(dst), "%s/%s", scratch, files[i].name);
		/* RocksDB only reads SST files: a link will do, a symbolic one too. */
		if (!files[i].sst || (link(src, dst) != 0 && symlink(src, dst) != 0))
			(void) rocks_copy_file(src, dst, false, &size, NULL);
	}
}

/* One entry of a state read out of a native snapshot, to the caller's fn. */
typedef struct ReadNative
{
	StateEntryFn fn;
	void	   *arg;
	int64		n;
	const char *family;			/* for messages */
} ReadNative;

static bool
read_native_entry(void *arg, const char *k, size_t klen, const char *v, size_t vlen)
{
	ReadNative *r = arg;
	RocksRowKey rk;

	rocks_split_key(k, klen, &rk);
	if (rk.mklen != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("snapshot's RocksDB family \"%s\" holds a key of another layout", r->family)));
	r->fn(r->arg, rk.key, rk.keylen, v, (uint32) vlen);
	r->n++;
	return true;
}

/*
 * What a session has open while it reads a native snapshot: closed and
 * removed at exit too, should the read end in FATAL.
 */
static Staging reading = {0};
static char reading_dir[MAXPGPATH];
static int	reading_count = 0;

static void
read_native_cleanup(void)
{
	close_read_only(&reading);
	if (reading_dir[0] != '\0')
		remove_scratch(reading_dir);
	reading_dir[0] = '\0';
}

static void
read_native_on_exit(int code, Datum arg)
{
	read_native_cleanup();
}

/*
 * rocks_snapshot_read_native reads, in a session, the entries state
 * state_id keeps in a native snapshot's RocksDB files (verified before):
 * staged in a scratch directory of the session's own and opened read-only
 * (every signal blocked while RocksDB starts, so that none lands on a
 * thread of its own), its family scanned in key order.  fn gets each key's
 * image and its stored value (a value or list state's).  Returns the
 * entries read.
 */
static int64
rocks_snapshot_read_native(const char *snapdir, const StateInfo *state, StateEntryFn fn, void *arg)
{
	char		what[32];
	char		expected[32];
	const char *name = NULL;
	ReadNative	r = {fn, arg, 0, NULL};
	static bool registered = false;

	if (reading_dir[0] != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a native snapshot's rocksdb state is already being read in this session")));
	if (!registered)
	{
		before_shmem_exit(read_native_on_exit, (Datum) 0);
		registered = true;
	}
	snprintf(what, sizeof(what), "read-%d-%d", MyProcPid, ++reading_count);
	staging_path(reading_dir, sizeof(reading_dir), what);
	make_scratch(reading_dir);
	PG_TRY();
	{
		rocksdb_column_family_handle_t *cf;
		sigset_t	saved;
		StringInfoData lo;
		StringInfoData hi;

		stage_snapshot(snapdir, reading_dir);
		rocks_options_ready();
		rocks_block_signals(&saved);
		PG_TRY();
		{
			open_read_only(reading_dir, &reading);
		}
		PG_FINALLY();
		{
			rocks_restore_signals(&saved);
		}
		PG_END_TRY();
		/* Its family must be named as the MANIFEST describes the state. */
		cf = family_of(&reading, state->id, &name);
		rocks_family_name(expected, sizeof(expected), state);
		if (cf != NULL && strcmp(name, expected) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("snapshot's RocksDB files hold state %u as column family \"%s\", not \"%s\"",
							state->id, name, expected)));
		if (cf != NULL)
		{
			r.family = name;
			initStringInfo(&lo);
			initStringInfo(&hi);
			rocks_state_range(&lo, &hi);
			rocks_scan(reading.db, reading.ropts, cf, lo.data, lo.len, hi.data, hi.len,
					   read_native_entry, &r);
		}
	}
	PG_FINALLY();
	{
		read_native_cleanup();
	}
	PG_END_TRY();
	return r.n;
}

/*
 * rocks_sweep_read_scratch removes, at server start, the scratch
 * directories of sessions that died reading a native snapshot
 * (<rocksdb_dir>-read-<pid>-<n>, with no such process left).
 */
void
rocks_sweep_read_scratch(void)
{
	char		prefix[MAXPGPATH];
	char	   *parent = pstrdup(state_backend_rocksdb_dir);
	char	   *slash = strrchr(parent, '/');
	const char *base;
	DIR		   *dir;
	struct dirent *de;

	base = slash ? slash + 1 : parent;
	snprintf(prefix, sizeof(prefix), "%s-read-", base);
	if (slash)
		*slash = '\0';
	dir = AllocateDir(slash ? parent : ".");
	while ((de = ReadDirExtended(dir, slash ? parent : ".", LOG)) != NULL)
	{
		char		path[MAXPGPATH];
		char	   *end;
		long		pid;

		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		pid = strtol(de->d_name + strlen(prefix), &end, 10);
		if (*end != '-' || pid <= 0 || (kill((pid_t) pid, 0) == 0 && pid != MyProcPid))
			continue;
		snprintf(path, sizeof(path), "%s/%s", slash ? parent : ".", de->d_name);
		(void) rmtree(path, true);
	}
	FreeDir(dir);
	pfree(parent);
}

/*
 * rocks_restore_native copies rocksdb states out of a native snapshot
 * (verified before), in the state worker: the snapshot's files are linked
 * into a scratch directory, opened read-only, and the family of each item's
 * from_id copied into the (hidden) state to_id.  Returns the keys copied.
 */
static int64
rocks_restore_native(const char *snapdir, const NativeRestoreItem *items, int nitems)
{
	char		scratch[MAXPGPATH];
	Staging		s = {0};
	int64		total = 0;

	staging_path(scratch, sizeof(scratch), "restore");
	make_scratch(scratch);
	PG_TRY();
	{
		stage_snapshot(snapdir, scratch);
		rocks_open();
		open_read_only(scratch, &s);
		/* Marked before the cache forgets them, and again once written. */
		rocks_view_mark_all();
		for (int i = 0; i < nitems; i++)
		{
			const char *from_name = NULL;
			rocksdb_column_family_handle_t *from = family_of(&s, items[i].from_id, &from_name);
			CopyFamily	c;
			char	   *err = NULL;
			StringInfoData lo;
			StringInfoData hi;

			initStringInfo(&lo);
			initStringInfo(&hi);

			c.to = rocks_family(items[i].to_id, items[i].to_slot);
			rocks_cache_forget_state(items[i].to_id);
			if (from == NULL)
				continue;
			check_family_name(from_name, items[i].from_id, items[i].to_id, items[i].to_slot);
			c.batch = rocksdb_writebatch_create();
			c.pending = 0;
			c.keys = 0;
			rocks_rows_init(&c.rows);
			rocks_key_groups_range(items[i].kg_first, items[i].kg_last, &lo, &hi);
			PG_TRY();
			{
				rocks_scan(s.db, s.ropts, from, lo.data, lo.len, hi.data, hi.len, copy_entry, &c);
				rocksdb_write(rocks.db, rocks.wopts, c.batch, &err);
			}
			PG_FINALLY();
			{
				rocksdb_writebatch_destroy(c.batch);
			}
			PG_END_TRY();
			rocks_check(err, "write");
			total += c.keys;
		}
	}
	PG_FINALLY();
	{
		/* Sessions' views no longer read the states written here. */
		rocks_view_mark_all();
		close_read_only(&s);
		remove_scratch(scratch);
	}
	PG_END_TRY();
	return total;
}

/*
 * rocks_snapshot_restore_native has the state worker, which owns RocksDB,
 * copy states out of a native snapshot; the worker itself does it at
 * server start.  The request is [directory length][directory][count]
 * then the items; the reply, the keys copied.
 */
static int64
rocks_snapshot_restore_native(const char *snapdir, const NativeRestoreItem *items,
							  int nitems)
{
	StringInfoData req;
	uint32		dirlen = strlen(snapdir);
	int32		count = nitems;
	int64		total;

	if (rocks_host->in_worker())
		return rocks_restore_native(snapdir, items, nitems);
	initStringInfo(&req);
	appendBinaryStringInfo(&req, (const char *) &dirlen, sizeof(uint32));
	appendBinaryStringInfo(&req, snapdir, dirlen);
	appendBinaryStringInfo(&req, (const char *) &count, sizeof(int32));
	appendBinaryStringInfo(&req, (const char *) items, sizeof(NativeRestoreItem) * nitems);
	total = rocks_call_int64(ROCKS_REQ_RESTORE_NATIVE, req.data, req.len, true);
	pfree(req.data);
	return total;
}

/* rocks_handle_restore serves a session's rocks_snapshot_restore_native. */
bool
rocks_handle_restore(const char *payload, uint32 len, StringInfo reply)
{
	uint32		dirlen;
	int32		n;
	char	   *dir;
	NativeRestoreItem *items;
	int64		total;

	if (len < sizeof(uint32))
		elog(ERROR, "state_backend: short restore request");
	rocks_check_not_failed();
	memcpy(&dirlen, payload, sizeof(uint32));
	if (dirlen > len - sizeof(uint32) || len - sizeof(uint32) - dirlen < sizeof(int32))
		elog(ERROR, "state_backend: short restore request");
	dir = pnstrdup(payload + sizeof(uint32), dirlen);
	memcpy(&n, payload + sizeof(uint32) + dirlen, sizeof(int32));
	if (n < 0 || (Size) n * sizeof(NativeRestoreItem) !=
		len - sizeof(uint32) - dirlen - sizeof(int32))
		elog(ERROR, "state_backend: malformed restore request");
	items = palloc(sizeof(NativeRestoreItem) * Max(n, 1));
	memcpy(items, payload + sizeof(uint32) + dirlen + sizeof(int32),
		   sizeof(NativeRestoreItem) * n);
	for (int i = 0; i < n; i++)
		if (items[i].kg_first < 0 || items[i].kg_first > items[i].kg_last ||
			items[i].kg_last >= (*rocks_host->max_parallelism))
			elog(ERROR, "state_backend: malformed restore request");
	total = rocks_restore_native(dir, items, n);
	appendBinaryStringInfo(reply, (const char *) &total, sizeof(total));
	return true;
}

const SnapshotStrategy rocks_snapshot_strategy = {
	.prepare = rocks_snapshot_prepare,
	.cut = NULL,
	.collect = rocks_snapshot_collect,
	.write_native = rocks_snapshot_write_native,
	.release = rocks_snapshot_release,
	.verify_native = rocks_files_verify,
	.restore_native = rocks_snapshot_restore_native,
	.read_native = rocks_snapshot_read_native,
	.after_retention = rocks_files_sweep,
	.native_files_name = "RocksDB",
};
