/*
 * backend/rocksdb/rocks_snapshot.c
 *		The rocksdb backend's snapshot strategy: the cut (a RocksDB checkpoint), its
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
 * files like heap states, from entries collected here.  Every file name
 * read from a snapshot is resolved here, within the snapshot's directories.
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
#include "utils/memutils.h"

#include "backend/rocksdb/rocks_internal.h"
#include "ipc/channel.h"
#include "common/progress.h"
#include "common/settings.h"
#include "format/records.h"

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
	StringInfoData key;			/* map: the key being assembled */
	StringInfoData image;
} Collect;

static void
collect_flush_map(Collect *c)
{
	if (c->image.len > 0)
		record_put_entry(c->out, c->state_id, c->key.data, c->key.len,
						 c->image.data, c->image.len);
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
		record_put_entry(c->out, c->state_id, key, keylen, v, (uint32) vlen);
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
 * rocks_snapshot_collect appends the entries of one key group of the
 * rocksdb states to collect, as of the cut, as entry records
 * (format/records.h), a map's entries gathered into its image.
 */
static void
rocks_snapshot_collect(int64 id, const StateDesc *descs, const bool *collect,
					   int ndescs, int key_group, StringInfo out)
{
	Collect		c;
	StringInfoData from;
	StringInfoData to;

	if (staging.db == NULL)
		return;
	initStringInfo(&from);
	initStringInfo(&to);
	rocks_key_group_range(key_group, &from, &to);
	initStringInfo(&c.key);
	initStringInfo(&c.image);
	for (int i = 0; i < ndescs; i++)
	{
		rocksdb_column_family_handle_t *cf;

		if (!collect[i] || keyed_backend_for(descs[i].backend) != &rocks_keyed_backend)
			continue;
		cf = family_of(&staging, descs[i].id);
		if (cf == NULL)
			continue;			/* never written to: empty */
		c.out = out;
		c.state_id = descs[i].id;
		c.map = descs[i].kind == STATE_KIND_MAP;
		rocks_scan(staging.db, staging.ropts, cf, from.data, from.len,
				   to.data, to.len, collect_entry, &c);
		if (c.map)
			collect_flush_map(&c);
	}
	pfree(c.key.data);
	pfree(c.image.data);
	pfree(from.data);
	pfree(to.data);
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
			progress_beat();
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

/* The checkpoint's files as they are copied into a snapshot. */
typedef struct CopiedFiles
{
	CheckpointFile *files;
	int			n;
	int			cap;
	StringInfoData text;		/* rocksdb/FILES */
	int64		written;		/* bytes written, not yet reported */
	bool		reused;			/* shared files were already there */
} CopiedFiles;

/*
 * copy_one_file copies one file of the staging checkpoint into the
 * snapshot (an SST file of a checkpoint into shared_dir, once) and lists it
 * in FILES.
 */
static void
copy_one_file(CopiedFiles *cp, const char *name, const char *rdir,
			  const char *shared_dir, const char *tag)
{
	char		src[MAXPGPATH];
	char		dst[MAXPGPATH];
	CheckpointFile *cf;
	bool		sst = strlen(name) > 4 && strcmp(name + strlen(name) - 4, ".sst") == 0;
	pg_crc32c	crc;
	int64		size;
	struct stat st;

	if (cp->n == cp->cap)
	{
		cp->cap *= 2;
		cp->files = repalloc(cp->files, sizeof(CheckpointFile) * cp->cap);
	}
	cf = &cp->files[cp->n++];
	strlcpy(cf->name, name, sizeof(cf->name));
	snprintf(src, sizeof(src), "%s/%s", staging.dir, name);
	if (sst && shared_dir)
	{
		snprintf(cf->where, sizeof(cf->where), "../shared/%s-%s", tag, name);
		snprintf(dst, sizeof(dst), "%s/%s-%s", shared_dir, tag, name);
		if (stat(dst, &st) == 0)
		{
			crc = copy_file(dst, NULL, true, &size);
			cp->reused = true;
		}
		else
		{
			crc = copy_file(src, dst, false, &size);
			cp->written += size;
		}
	}
	else
	{
		snprintf(cf->where, sizeof(cf->where), "rocksdb/%s", name);
		snprintf(dst, sizeof(dst), "%s/%s", rdir, name);
		crc = copy_file(src, dst, false, &size);
		cp->written += size;
	}
	appendStringInfo(&cp->text, "%s %s %s " INT64_FORMAT " %08X\n",
					 sst ? "sst" : "meta", name, cf->where, size, crc);
}

/*
 * write_state_list writes a state's list file (its family and its SST
 * files) and reports it to the snapshot writer.
 */
static void
write_state_list(const StateDesc *desc, const rocksdb_livefiles_t *live,
				 CopiedFiles *cp, SnapshotWriter *w)
{
	StringInfoData lst;
	char		family[32];
	char	   *path = snapshot_writer_native_path(w, desc->id);
	rocksdb_column_family_handle_t *h;
	int64		entries = 0;
	struct stat st;

	snprintf(family, sizeof(family), "s%u", desc->id);
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
		for (int c = 0; c < cp->n; c++)
			if (strcmp(cp->files[c].name, name) == 0)
				appendStringInfo(&lst, "sst %s %s\n", name, cp->files[c].where);
	}
	h = family_of(&staging, desc->id);
	if (h)
		entries = rocks_count_keys(staging.db, staging.ropts, h, desc->kind == STATE_KIND_MAP);
	appendStringInfo(&lst, "entries " INT64_FORMAT "\n", entries);
	write_text_file(path, &lst);
	if (stat(path, &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", path)));
	snapshot_writer_set_native(w, desc->id, st.st_size, entries, cp->written + st.st_size);
	cp->written = 0;
	pfree(lst.data);
	pfree(path);
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
							const StateDesc *descs, const bool *mine, int ndescs,
							SnapshotWriter *w, bool *reused)
{
	char		rdir[MAXPGPATH];
	char		tag[32];
	DIR		   *d;
	struct dirent *de;
	const rocksdb_livefiles_t *live;
	CopiedFiles cp;

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

	memset(&cp, 0, sizeof(cp));
	cp.cap = 64;
	cp.files = palloc(sizeof(CheckpointFile) * cp.cap);
	initStringInfo(&cp.text);
	appendStringInfoString(&cp.text, "state_backend rocksdb files\n");
	d = AllocateDir(staging.dir);
	while ((de = ReadDir(d, staging.dir)) != NULL)
	{
		if (de->d_name[0] == '.')
			continue;
		copy_one_file(&cp, de->d_name, rdir, shared_dir, tag);
		progress_yield();
	}
	FreeDir(d);
	snprintf(rdir, sizeof(rdir), "%s/rocksdb/%s", dir, FILES_NAME);
	cp.written += cp.text.len;
	write_text_file(rdir, &cp.text);

	live = rocksdb_livefiles(staging.db);
	for (int i = 0; i < ndescs; i++)
		if (mine[i])
			write_state_list(&descs[i], live, &cp, w);
	rocksdb_livefiles_destroy(live);
	snprintf(rdir, sizeof(rdir), "%s/rocksdb", dir);
	(void) fsync_fname_ext(rdir, true, false, ERROR);
	if (shared_dir)
		(void) fsync_fname_ext(shared_dir, true, false, ERROR);
	*reused = cp.reused;
	pfree(cp.files);
	pfree(cp.text.data);
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
 * rocks_snapshot_verify checks a native snapshot's RocksDB files: FILES
 * and every file it lists (size and CRC-32C), and each state list.
 */
static void
rocks_snapshot_verify(const char *snapdir, const char *const *lists, int nlists)
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
 * note_shared_files adds to used the shared files that checkpoint chk lists
 * in its rocksdb/FILES.  A checkpoint with RocksDB files that cannot be
 * read makes it return false (keep every shared file), with a warning; it
 * never raises an error, for it runs after a checkpoint completed.
 */
static bool
note_shared_files(const char *root, const char *chk, StringInfo used)
{
	char		dir[MAXPGPATH];
	char		path[MAXPGPATH];
	MemoryContext cxt = CurrentMemoryContext;
	volatile bool ok = true;

	snprintf(dir, sizeof(dir), "%s/%s/rocksdb", root, chk);
	if (access(dir, F_OK) != 0)
		return true;
	snprintf(dir, sizeof(dir), "%s/%s", root, chk);
	PG_TRY();
	{
		ListedFile *files;
		int			n = read_files(dir, &files, path, sizeof(path));

		for (int i = 0; i < n; i++)
			if (strncmp(files[i].where, "../shared/", 10) == 0)
			{
				appendStringInfoString(used, files[i].where + 10);
				appendStringInfoChar(used, '\n');
			}
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("could not read the RocksDB files of checkpoint \"%s\": %s",
						dir, edata->message),
				 errdetail("No file of \"%s/shared\" is deleted.", root)));
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

/*
 * rocks_snapshot_sweep_shared deletes the files of <root>/shared that no
 * checkpoint under root lists any more.
 */
static void
rocks_snapshot_sweep_shared(const char *root)
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
		if (strncmp(de->d_name, "chk-", 4) != 0)
			continue;
		if (!note_shared_files(root, de->d_name, &used))
		{
			FreeDir(d);
			pfree(used.data);
			return;
		}
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
 * rocks_restore_native copies rocksdb states out of a native snapshot
 * (verified before), in the state worker: the snapshot's files are linked
 * into a scratch directory, opened read-only, and the family of each item's
 * from_id copied into the (hidden) state to_id.  Returns the keys copied.
 */
int64
rocks_restore_native(const char *snapdir, const NativeRestoreItem *items, int nitems)
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
		for (int i = 0; i < nitems; i++)
		{
			rocksdb_column_family_handle_t *from = family_of(&s, items[i].from_id);
			CopyFamily	c;
			char	   *err = NULL;

			c.to = rocks_family(items[i].to_id, items[i].to_slot);
			if (from == NULL)
				continue;
			c.batch = rocksdb_writebatch_create();
			c.pending = 0;
			rocks_scan(s.db, s.ropts, from, "", 0, NULL, 0, copy_entry, &c);
			rocksdb_write(rocks.db, rocks.wopts, c.batch, &err);
			rocksdb_writebatch_destroy(c.batch);
			rocks_check(err, "write");
			total += rocks_count_keys(s.db, s.ropts, from, items[i].kind == STATE_KIND_MAP);
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

	if (channel_is_worker())
		return rocks_restore_native(snapdir, items, nitems);
	initStringInfo(&req);
	appendBinaryStringInfo(&req, (const char *) &dirlen, sizeof(uint32));
	appendBinaryStringInfo(&req, snapdir, dirlen);
	appendBinaryStringInfo(&req, (const char *) &count, sizeof(int32));
	appendBinaryStringInfo(&req, (const char *) items, sizeof(NativeRestoreItem) * nitems);
	total = channel_call_int64(CHANNEL_OP_RESTORE_NATIVE, req.data, req.len, true);
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
	.verify_native = rocks_snapshot_verify,
	.restore_native = rocks_snapshot_restore_native,
	.after_retention = rocks_snapshot_sweep_shared,
	.native_files_name = "RocksDB",
};
