/*
 * rocksdb_snapshot.c
 *		rocksdb states in snapshots: the cut (a RocksDB checkpoint), its
 *		files copied into a snapshot, incrementally under the checkpoint
 *		directory, entries collected for canonical and in-memory snapshots,
 *		and restore from those files.
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
 * files go to <checkpoint_dir>/shared/ once and are referenced from then on.
 * rocksdb/FILES lists every file with its size and CRC-32C; each state has
 * db-<oid>/<id>.sst.lst with its own SST files.  A shared file is deleted
 * when no checkpoint left lists it.
 *
 * Other snapshots (canonical, memory:<id>) hold rocksdb states as key-group
 * files like heap states, from entries collected here.
 */
#include "postgres.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

#include "common/file_perm.h"
#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "utils/memutils.h"

#include "channel.h"
#include "keyed_backend.h"
#include "rocksdb_backend.h"
#include "rocksdb_internal.h"
#include "snapshot.h"
#include "snapshot_control.h"

#define FILES_NAME		"FILES"
#define COPY_CHUNK		(1024 * 1024)

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
	if (s->db == NULL)
		return;
	for (int i = 0; i < s->nfamilies; i++)
		rocksdb_column_family_handle_destroy(s->handles[i]);
	rocksdb_close(s->db);
	rocksdb_list_column_families_destroy(s->names, s->nfamilies);
	rocksdb_readoptions_destroy(s->ropts);
	pfree(s->handles);
	s->handles = NULL;
	s->db = NULL;
}

static rocksdb_column_family_handle_t *
family_of(Staging *s, uint32 id)
{
	char		name[32];

	snprintf(name, sizeof(name), "s%u", id);
	for (int i = 0; i < s->nfamilies; i++)
		if (strcmp(s->names[i], name) == 0)
			return s->handles[i];
	return NULL;
}

/*
 * rocksdb_snapshot_cut makes the consistent copy of every rocksdb state
 * for snapshot id.  Called by the worker, between requests; does nothing
 * when there is no instance.
 */
void
rocksdb_snapshot_cut(int64 id)
{
	rocksdb_checkpoint_t *cp;
	char	   *err = NULL;

	rocksdb_snapshot_release(0);
	if (!rocksdb_is_open())
		return;
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

/* rocksdb_snapshot_release drops the staging copy (id 0: whatever it is). */
void
rocksdb_snapshot_release(int64 id)
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
	StringInfoData key;			/* map: the key being assembled */
	StringInfoData image;
} Collect;

static void
collect_emit(Collect *c, const char *key, uint32 klen, const char *v, uint32 vlen)
{
	appendBinaryStringInfo(c->out, (const char *) &c->state_id, sizeof(uint32));
	appendBinaryStringInfo(c->out, (const char *) &klen, sizeof(uint32));
	appendBinaryStringInfo(c->out, (const char *) &vlen, sizeof(uint32));
	appendBinaryStringInfo(c->out, key, klen);
	appendBinaryStringInfo(c->out, v, vlen);
}

static void
collect_flush_map(Collect *c)
{
	if (c->image.len > 0)
		collect_emit(c, c->key.data, c->key.len, c->image.data, c->image.len);
	resetStringInfo(&c->key);
	resetStringInfo(&c->image);
}

static bool
collect_entry(void *arg, const char *k, size_t klen, const char *v, size_t vlen)
{
	Collect    *c = arg;
	const char *key;
	uint32		keylen;
	const char *mkey;
	uint32		mklen;

	rocks_split_key(k, klen, &key, &keylen, &mkey, &mklen);
	if (!c->map)
	{
		collect_emit(c, key, keylen, v, (uint32) vlen);
		return true;
	}
	if (c->key.len != (int) keylen || memcmp(c->key.data, key, keylen) != 0)
	{
		collect_flush_map(c);
		appendBinaryStringInfo(&c->key, key, keylen);
	}
	rocks_map_record(&c->image, mkey, mklen, v, vlen);
	return true;
}

/*
 * rocksdb_snapshot_collect appends the entries of one key group of a
 * rocksdb state, as of the cut, as snapshot records ([state id][key
 * length][value length][key][whole value image]).
 */
void
rocksdb_snapshot_collect(uint32 state_id, int kind, int key_group, StringInfo out)
{
	rocksdb_column_family_handle_t *cf = family_of(&staging, state_id);
	Collect		c;
	uint16		from = pg_hton16((uint16) key_group);
	uint16		to = pg_hton16((uint16) (key_group + 1));

	if (staging.db == NULL || cf == NULL)
		return;					/* never written to: empty */
	c.out = out;
	c.state_id = state_id;
	c.map = kind == STATE_KIND_MAP;
	initStringInfo(&c.key);
	initStringInfo(&c.image);
	rocks_scan(staging.db, staging.ropts, cf, (const char *) &from, 2,
			   (const char *) &to, 2, collect_entry, &c);
	if (c.map)
		collect_flush_map(&c);
	pfree(c.key.data);
	pfree(c.image.data);
}

/* ------------------------------------------------------------------------
 * Files
 * ------------------------------------------------------------------------
 */

/*
 * copy_file copies src to dst (which must not exist) through a temporary
 * name, synced, and returns the CRC-32C of the bytes; crc_only just reads.
 */
static pg_crc32c
copy_file(const char *src, const char *dst, bool crc_only, int64 *size)
{
	char		tmp[MAXPGPATH];
	char	   *buf = palloc(COPY_CHUNK);
	volatile int in = -1;
	volatile int out = -1;
	pg_crc32c	crc;
	int			n;

	INIT_CRC32C(crc);
	*size = 0;
	PG_TRY();
	{
		in = OpenTransientFile(src, O_RDONLY | PG_BINARY);
		if (in < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not open file \"%s\": %m", src)));
		if (!crc_only)
		{
			snprintf(tmp, sizeof(tmp), "%s.tmp", dst);
			out = OpenTransientFile(tmp, O_CREAT | O_TRUNC | O_WRONLY | PG_BINARY);
			if (out < 0)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not create file \"%s\": %m", tmp)));
		}
		while ((n = read(in, buf, COPY_CHUNK)) > 0)
		{
			channel_worker_heartbeat();
			COMP_CRC32C(crc, buf, n);
			*size += n;
			if (out >= 0)
			{
				errno = 0;
				if (write(out, buf, n) != n)
				{
					if (errno == 0)
						errno = ENOSPC;
					ereport(ERROR,
							(errcode_for_file_access(),
							 errmsg("could not write file \"%s\": %m", tmp)));
				}
			}
		}
		if (n < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read file \"%s\": %m", src)));
		if (out >= 0 && pg_fsync(out) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not fsync file \"%s\": %m", tmp)));
	}
	PG_FINALLY();
	{
		/* Closed here, also on error: the worker has no transaction to do it. */
		if (in >= 0)
			CloseTransientFile(in);
		if (out >= 0)
			CloseTransientFile(out);
	}
	PG_END_TRY();
	FIN_CRC32C(crc);
	if (!crc_only)
		(void) durable_rename(tmp, dst, ERROR);
	pfree(buf);
	return crc;
}

static void
write_text_file(const char *path, StringInfo text)
{
	int			fd;
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, text->data, text->len);
	FIN_CRC32C(crc);
	appendStringInfo(text, "crc32c %08X\n", crc);

	fd = OpenTransientFile(path, O_CREAT | O_EXCL | O_WRONLY | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", path)));
	errno = 0;
	if (write(fd, text->data, text->len) != text->len)
	{
		if (errno == 0)
			errno = ENOSPC;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", path)));
	}
	if (pg_fsync(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", path)));
	CloseTransientFile(fd);
}

/* The instance's identity, so shared names differ across instances. */
static void
instance_tag(char *buf, Size len)
{
	char		path[MAXPGPATH];
	FILE	   *f;
	char		line[128] = "";
	int			j = 0;

	snprintf(path, sizeof(path), "%s/IDENTITY", state_backend_rocksdb_dir);
	f = AllocateFile(path, "r");
	if (f)
	{
		if (fgets(line, sizeof(line), f) == NULL)
			line[0] = '\0';
		FreeFile(f);
	}
	for (int i = 0; line[i] && j < (int) len - 1 && j < 12; i++)
		if (isxdigit((unsigned char) line[i]))
			buf[j++] = line[i];
	buf[j] = '\0';
	if (j == 0)
		strlcpy(buf, "instance", len);
}

/* One file of the checkpoint, as FILES lists it. */
typedef struct CheckpointFile
{
	char		name[MAXPGPATH];	/* in the checkpoint */
	char		where[MAXPGPATH];	/* relative to the snapshot root */
} CheckpointFile;

/*
 * rocksdb_snapshot_write_files writes the native form of the rocksdb
 * states of a snapshot into dir: the checkpoint's files (SST files under
 * shared_dir when it is given and they are not there yet), FILES, and a
 * list per state, reported to the writer.  *reused tells whether files
 * were shared with earlier checkpoints.
 */
void
rocksdb_snapshot_write_files(const char *dir, const char *shared_dir,
							 const StateDesc *descs, int ndescs,
							 SnapshotWriter *w, bool *reused)
{
	char		rdir[MAXPGPATH];
	char		tag[32];
	DIR		   *d;
	struct dirent *de;
	StringInfoData files;
	const rocksdb_livefiles_t *live;
	CheckpointFile *cfs = NULL;
	int			ncfs = 0;
	int			cap = 64;
	int64		written = 0;

	*reused = false;
	snprintf(rdir, sizeof(rdir), "%s/rocksdb", dir);
	if (MakePGDirectory(rdir) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create snapshot directory \"%s\": %m", rdir)));
	if (shared_dir && MakePGDirectory(shared_dir) != 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", shared_dir)));
	instance_tag(tag, sizeof(tag));

	initStringInfo(&files);
	appendStringInfoString(&files, "state_backend rocksdb files\n");
	cfs = palloc(sizeof(CheckpointFile) * cap);
	d = AllocateDir(staging.dir);
	while ((de = ReadDir(d, staging.dir)) != NULL)
	{
		char		src[MAXPGPATH];
		char		dst[MAXPGPATH];
		CheckpointFile *cf;
		bool		sst;
		pg_crc32c	crc;
		int64		size;
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		snapshot_check_cancel();
		sst = strlen(de->d_name) > 4 &&
			strcmp(de->d_name + strlen(de->d_name) - 4, ".sst") == 0;
		if (ncfs == cap)
		{
			cap *= 2;
			cfs = repalloc(cfs, sizeof(CheckpointFile) * cap);
		}
		cf = &cfs[ncfs++];
		strlcpy(cf->name, de->d_name, sizeof(cf->name));
		snprintf(src, sizeof(src), "%s/%s", staging.dir, de->d_name);
		if (sst && shared_dir)
		{
			snprintf(cf->where, sizeof(cf->where), "../shared/%s-%s", tag, de->d_name);
			snprintf(dst, sizeof(dst), "%s/%s-%s", shared_dir, tag, de->d_name);
			if (stat(dst, &st) == 0)
			{
				crc = copy_file(dst, NULL, true, &size);
				*reused = true;
			}
			else
			{
				crc = copy_file(src, dst, false, &size);
				written += size;
			}
		}
		else
		{
			snprintf(cf->where, sizeof(cf->where), "rocksdb/%s", de->d_name);
			snprintf(dst, sizeof(dst), "%s/%s", rdir, de->d_name);
			crc = copy_file(src, dst, false, &size);
			written += size;
		}
		appendStringInfo(&files, "%s %s %s " INT64_FORMAT " %08X\n",
						 sst ? "sst" : "meta", de->d_name, cf->where, size, crc);
		(void) state_worker_serve(1);
		snapshot_check_cancel();
	}
	FreeDir(d);
	snprintf(rdir, sizeof(rdir), "%s/rocksdb/%s", dir, FILES_NAME);
	written += files.len;
	write_text_file(rdir, &files);

	/* One list per state: its family and its SST files. */
	live = rocksdb_livefiles(staging.db);
	for (int i = 0; i < ndescs; i++)
	{
		StringInfoData lst;
		char		family[32];
		char		path[MAXPGPATH];
		rocksdb_column_family_handle_t *h;
		int64		entries = 0;
		struct stat st;

		if (descs[i].backend != STATE_BACKEND_ROCKSDB)
			continue;
		snprintf(family, sizeof(family), "s%u", descs[i].id);
		initStringInfo(&lst);
		appendStringInfo(&lst, "state_backend sst list\nfiles rocksdb/%s\nfamily %s\n",
						 FILES_NAME, family);
		for (int f = 0; f < rocksdb_livefiles_count(live); f++)
		{
			const char *name = rocksdb_livefiles_name(live, f);

			if (strcmp(rocksdb_livefiles_column_family_name(live, f), family) != 0)
				continue;
			if (name[0] == '/')
				name++;
			for (int c = 0; c < ncfs; c++)
				if (strcmp(cfs[c].name, name) == 0)
					appendStringInfo(&lst, "sst %s %s\n", name, cfs[c].where);
		}
		h = family_of(&staging, descs[i].id);
		if (h)
			entries = rocks_count_keys(staging.db, staging.ropts, h,
									   descs[i].kind == STATE_KIND_MAP);
		appendStringInfo(&lst, "entries " INT64_FORMAT "\n", entries);
		snprintf(path, sizeof(path), "%s/db-%u/%u%s", dir, descs[i].dbid, descs[i].id,
				 SNAPSHOT_SST_LIST_SUFFIX);
		write_text_file(path, &lst);
		if (stat(path, &st) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not stat file \"%s\": %m", path)));
		snapshot_writer_set_external(w, descs[i].id, st.st_size, entries,
									 written + st.st_size);
		written = 0;
	}
	rocksdb_livefiles_destroy(live);
	snprintf(rdir, sizeof(rdir), "%s/rocksdb", dir);
	(void) fsync_fname_ext(rdir, true, false, ERROR);
	if (shared_dir)
		(void) fsync_fname_ext(shared_dir, true, false, ERROR);
	pfree(cfs);
}

/* ------------------------------------------------------------------------
 * Reading: verify, restore, sweep
 * ------------------------------------------------------------------------
 */

static void
list_corrupt(const char *path, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("snapshot file \"%s\" is corrupted", path),
			 errdetail("%s", detail)));
}

/*
 * read_list reads a text file that ends with its CRC line and checks it;
 * returns its lines (without the CRC line), palloc'd.
 */
static char *
read_list(const char *path)
{
	FILE	   *f = AllocateFile(path, "r");
	StringInfoData text;
	char		buf[8192];
	size_t		n;
	char	   *last;
	unsigned int want;
	pg_crc32c	crc;

	if (f == NULL)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open snapshot file \"%s\": %m", path)));
	initStringInfo(&text);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		appendBinaryStringInfo(&text, buf, n);
	FreeFile(f);
	if (text.len < 2 || text.data[text.len - 1] != '\n')
		list_corrupt(path, "The file is truncated.");
	text.data[text.len - 1] = '\0';
	last = strrchr(text.data, '\n');
	text.data[text.len - 1] = '\n';
	if (last == NULL || sscanf(last + 1, "crc32c %X", &want) != 1)
		list_corrupt(path, "The file has no checksum line.");
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, text.data, last + 1 - text.data);
	FIN_CRC32C(crc);
	if (crc != want)
		list_corrupt(path, psprintf("Its checksum is %08X; the file says %08X.", crc, want));
	last[1] = '\0';
	return text.data;
}

/* One line of rocksdb/FILES. */
typedef struct ListedFile
{
	bool		sst;
	char		name[MAXPGPATH];
	char		where[MAXPGPATH];	/* relative to the snapshot root */
	long long	size;
	unsigned int crc;
} ListedFile;

/*
 * read_files reads (and checks the checksum of) a snapshot's rocksdb/FILES;
 * returns how many files it lists, in *files (palloc'd).  "path" receives
 * its name, for messages.
 */
static int
read_files(const char *snapdir, ListedFile **files, char *path, Size pathlen)
{
	char	   *text;
	char	   *line;
	char	   *save;
	int			n = 0;
	int			cap = 16;

	snprintf(path, pathlen, "%s/rocksdb/%s", snapdir, FILES_NAME);
	text = read_list(path);
	*files = palloc(sizeof(ListedFile) * cap);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
	{
		ListedFile *f;
		char		kind[8];

		if (n == cap)
		{
			cap *= 2;
			*files = repalloc(*files, sizeof(ListedFile) * cap);
		}
		f = &(*files)[n];
		if (sscanf(line, "%7s %1023s %1023s %lld %X", kind, f->name, f->where,
				   &f->size, &f->crc) != 5 ||
			(strcmp(kind, "sst") != 0 && strcmp(kind, "meta") != 0))
			continue;
		if (strstr(f->where, "/../") != NULL || f->where[0] == '/')
			list_corrupt(path, psprintf("It names the file \"%s\" outside the snapshot.", f->where));
		f->sst = strcmp(kind, "sst") == 0;
		n++;
	}
	return n;
}

/*
 * rocksdb_snapshot_verify checks a native snapshot's RocksDB files: FILES
 * and every file it lists (size and CRC-32C), and each state list.
 */
void
rocksdb_snapshot_verify(const char *snapdir, const char *const *lists, int nlists)
{
	char		path[MAXPGPATH];
	ListedFile *files;
	int			n = read_files(snapdir, &files, path, sizeof(path));

	for (int i = 0; i < n; i++)
	{
		char		file[MAXPGPATH];
		int64		got;
		pg_crc32c	actual;
		struct stat st;

		snprintf(file, sizeof(file), "%s/%s", snapdir, files[i].where);
		if (stat(file, &st) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("snapshot file \"%s\" is missing", file),
					 errdetail("%s lists it.", path)));
		if (st.st_size != files[i].size)
			list_corrupt(file, psprintf("It has %lld bytes; %s says %lld.",
										(long long) st.st_size, path, files[i].size));
		actual = copy_file(file, NULL, true, &got);
		if (actual != files[i].crc)
			list_corrupt(file, psprintf("Its checksum is %08X; %s says %08X.",
										actual, path, files[i].crc));
		CHECK_FOR_INTERRUPTS();
	}
	for (int i = 0; i < nlists; i++)
	{
		snprintf(path, sizeof(path), "%s/%s", snapdir, lists[i]);
		(void) read_list(path);
	}
}

/*
 * rocksdb_snapshot_sweep_shared deletes the files of <root>/shared that no
 * checkpoint under root lists any more.
 */
void
rocksdb_snapshot_sweep_shared(const char *root)
{
	char		shared[MAXPGPATH];
	DIR		   *d;
	struct dirent *de;
	StringInfoData used;

	snprintf(shared, sizeof(shared), "%s/shared", root);
	if (access(shared, F_OK) != 0)
		return;

	/* Every "../shared/<name>" any checkpoint lists, as "\n<name>\n". */
	initStringInfo(&used);
	appendStringInfoChar(&used, '\n');
	d = AllocateDir(root);
	while ((de = ReadDir(d, root)) != NULL)
	{
		char		path[MAXPGPATH];
		FILE	   *f;
		char		line[3 * MAXPGPATH];

		if (strncmp(de->d_name, "chk-", 4) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s/rocksdb/%s", root, de->d_name, FILES_NAME);
		f = AllocateFile(path, "r");
		if (f == NULL)
		{
			char		rdir[MAXPGPATH];

			/* A checkpoint with RocksDB files we cannot list: keep everything. */
			snprintf(rdir, sizeof(rdir), "%s/%s/rocksdb", root, de->d_name);
			if (access(rdir, F_OK) == 0)
			{
				ereport(WARNING,
						(errcode_for_file_access(),
						 errmsg("could not read \"%s\": %m", path),
						 errdetail("No file of \"%s/shared\" is deleted.", root)));
				FreeDir(d);
				pfree(used.data);
				return;
			}
			continue;
		}
		while (fgets(line, sizeof(line), f))
		{
			char	   *p = strstr(line, " ../shared/");
			char	   *end;

			if (p == NULL)
				continue;
			p += strlen(" ../shared/");
			end = strchr(p, ' ');
			if (end == NULL)
				continue;
			appendBinaryStringInfo(&used, p, end - p);
			appendStringInfoChar(&used, '\n');
		}
		FreeFile(f);
	}
	FreeDir(d);

	d = AllocateDir(shared);
	while ((de = ReadDir(d, shared)) != NULL)
	{
		char		needle[MAXPGPATH + 2];
		char		path[MAXPGPATH];

		if (de->d_name[0] == '.')
			continue;
		snprintf(needle, sizeof(needle), "\n%s\n", de->d_name);
		if (strstr(used.data, needle) != NULL)
			continue;
		snprintf(path, sizeof(path), "%s/%s", shared, de->d_name);
		if (unlink(path) != 0 && errno != ENOENT)
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("could not remove file \"%s\": %m", path)));
		else
			ereport(DEBUG1, (errmsg("removed unreferenced shared file \"%s\"", path)));
	}
	FreeDir(d);
	pfree(used.data);
}

/* Copy one family of a read-only checkpoint into a live one. */
typedef struct CopyFamily
{
	rocksdb_column_family_handle_t *to;
	rocksdb_writebatch_t *batch;
	int			pending;
} CopyFamily;

static bool
copy_entry(void *arg, const char *k, size_t klen, const char *v, size_t vlen)
{
	CopyFamily *c = arg;

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

/*
 * rocksdb_restore_native copies rocksdb states out of a native snapshot
 * (verified before): the snapshot's files are linked into a scratch
 * directory, opened read-only, and the family of each from_ids[i] copied
 * into the (hidden) state to_ids[i] in registry slot to_slots[i].  Returns
 * the number of keys copied.
 */
int64
rocksdb_restore_native(const char *snapdir, const uint32 *from_ids, const uint32 *to_ids,
					   const int *to_slots, const int *kinds, int n)
{
	char		scratch[MAXPGPATH];
	char		path[MAXPGPATH];
	Staging		s = {0};
	int64		total = 0;

	staging_path(scratch, sizeof(scratch), "restore");
	remove_scratch(scratch);
	if (pg_mkdir_p(scratch, pg_dir_create_mode) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", scratch)));
	PG_TRY();
	{
		ListedFile *files;
		int			nfiles = read_files(snapdir, &files, path, sizeof(path));

		for (int i = 0; i < nfiles; i++)
		{
			char		src[MAXPGPATH];
			char		dst[MAXPGPATH];
			int64		size;

			snprintf(src, sizeof(src), "%s/%s", snapdir, files[i].where);
			snprintf(dst, sizeof(dst), "%s/%s", scratch, files[i].name);
			/* RocksDB only reads SST files: a link will do. */
			if (!files[i].sst || link(src, dst) != 0)
				(void) copy_file(src, dst, false, &size);
		}
		rocks_open();
		open_read_only(scratch, &s);
		for (int i = 0; i < n; i++)
		{
			rocksdb_column_family_handle_t *from = family_of(&s, from_ids[i]);
			CopyFamily	c;
			char	   *err = NULL;

			c.to = rocks_family(to_ids[i], to_slots[i]);
			if (from == NULL)
				continue;
			c.batch = rocksdb_writebatch_create();
			c.pending = 0;
			rocks_scan(s.db, s.ropts, from, "", 0, NULL, 0, copy_entry, &c);
			rocksdb_write(rocks.db, rocks.wopts, c.batch, &err);
			rocksdb_writebatch_destroy(c.batch);
			rocks_check(err, "write");
			total += rocks_count_keys(s.db, s.ropts, from, kinds[i] == STATE_KIND_MAP);
		}
	}
	PG_FINALLY();
	{
		close_read_only(&s);
		remove_scratch(scratch);
	}
	PG_END_TRY();
	return total;
}

/*
 * rocksdb_handle_restore runs a session's request to copy rocksdb states
 * out of a native snapshot: [directory length][directory][count] then
 * per state [from id][to id][to slot][kind]; replies the keys copied.
 */
bool
rocksdb_handle_restore(const char *payload, uint32 len, StringInfo reply)
{
	uint32		dirlen;
	char	   *dir;
	int32		n;
	const char *p;
	uint32	   *from;
	uint32	   *to;
	int		   *slots;
	int		   *kinds;
	int64		total;

	memcpy(&dirlen, payload, sizeof(uint32));
	dir = pnstrdup(payload + 4, dirlen);
	p = payload + 4 + dirlen;
	memcpy(&n, p, sizeof(int32));
	p += sizeof(int32);
	from = palloc(sizeof(uint32) * Max(n, 1));
	to = palloc(sizeof(uint32) * Max(n, 1));
	slots = palloc(sizeof(int) * Max(n, 1));
	kinds = palloc(sizeof(int) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		int32		v[4];

		memcpy(v, p, sizeof(v));
		p += sizeof(v);
		from[i] = (uint32) v[0];
		to[i] = (uint32) v[1];
		slots[i] = v[2];
		kinds[i] = v[3];
	}
	total = rocksdb_restore_native(dir, from, to, slots, kinds, n);
	appendBinaryStringInfo(reply, (const char *) &total, sizeof(total));
	return true;
}
