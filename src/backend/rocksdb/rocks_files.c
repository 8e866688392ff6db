/*
 * backend/rocksdb/rocks_files.c
 *		The files of rocksdb states in a native snapshot, written and read:
 *		the RocksDB checkpoint's files copied (a checkpoint's SST files to
 *		<checkpoint_dir>/shared/, once), rocksdb/FILES listing each with its
 *		size and CRC-32C, and each state's list (db-<oid>/<id>.sst.lst);
 *		verifying them before a restore, and deleting shared files that no
 *		checkpoint lists any more.
 *
 * The staging checkpoint these files come from, and restoring from them,
 * are in rocks_snapshot.c.
 */
#include "postgres.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/memutils.h"

#include "rocks_files.h"

#define FILES_NAME		"FILES"
#define COPY_CHUNK		(1024 * 1024)

/*
 * rocks_copy_file copies src to dst (which must not exist) through a temporary
 * name, synced, and returns the CRC-32C of the bytes (and their SHA-256 in
 * sha256, unless NULL); crc_only just reads.
 */
pg_crc32c
rocks_copy_file(const char *src, const char *dst, bool crc_only, int64 *size,
				char *sha256)
{
	char		tmp[MAXPGPATH];
	char	   *buf = palloc(COPY_CHUNK);
	volatile int in = -1;
	volatile int out = -1;
	void	   *volatile digest = NULL;
	pg_crc32c	crc;
	int			n;

	INIT_CRC32C(crc);
	*size = 0;
	PG_TRY();
	{
		if (sha256)
			digest = rocks_host->digest_begin();
		in = OpenTransientFile(src, O_RDONLY | PG_BINARY);
		if (in < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not open file \"%s\": %m", src)));
		if (!crc_only)
		{
			/*
			 * A file of ours left by an interrupted copy goes; then the
			 * temporary name must be new, so a link of another name there
			 * is never written through.
			 */
			snprintf(tmp, sizeof(tmp), "%s.tmp", dst);
			if (unlink(tmp) != 0 && errno != ENOENT)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not remove file \"%s\": %m", tmp)));
			out = OpenTransientFile(tmp, O_CREAT | O_EXCL | O_WRONLY | PG_BINARY);
			if (out < 0)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not create file \"%s\": %m", tmp)));
		}
		while ((n = read(in, buf, COPY_CHUNK)) > 0)
		{
			rocks_host->progress();
			COMP_CRC32C(crc, buf, n);
			if (digest)
				rocks_host->digest_add(digest, buf, n);
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
		if (digest)
		{
			rocks_host->digest_end(digest, sha256);
			digest = NULL;
		}
	}
	PG_FINALLY();
	{
		rocks_host->digest_discard(digest);
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
void
rocks_instance_tag(char *buf, Size len)
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

/*
 * rocks_files_copy copies one file of the staging checkpoint into the
 * snapshot (an SST file of a checkpoint into shared_dir, once) and lists it
 * in FILES.
 */
void
rocks_files_copy(CopiedFiles *cp, const char *stagedir, const char *name,
				 const char *rdir, const char *shared_dir, const char *tag)
{
	char		src[MAXPGPATH];
	char		dst[MAXPGPATH];
	CheckpointFile *cf;
	bool		sst = strlen(name) > 4 && strcmp(name + strlen(name) - 4, ".sst") == 0;
	pg_crc32c	crc;
	int64		size;
	char		sha256[STATE_DIGEST_HEX_LEN];
	struct stat st;

	if (cp->n == cp->cap)
	{
		cp->cap *= 2;
		cp->files = repalloc(cp->files, sizeof(CheckpointFile) * cp->cap);
	}
	cf = &cp->files[cp->n++];
	strlcpy(cf->name, name, sizeof(cf->name));
	snprintf(src, sizeof(src), "%s/%s", stagedir, name);
	if (sst && shared_dir)
	{
		snprintf(cf->where, sizeof(cf->where), "../shared/%s-%s", tag, name);
		snprintf(dst, sizeof(dst), "%s/%s-%s", shared_dir, tag, name);
		if (stat(dst, &st) == 0)
		{
			crc = rocks_copy_file(dst, NULL, true, &size, sha256);
			cp->reused = true;
		}
		else
		{
			crc = rocks_copy_file(src, dst, false, &size, sha256);
			cp->written += size;
		}
	}
	else
	{
		snprintf(cf->where, sizeof(cf->where), "rocksdb/%s", name);
		snprintf(dst, sizeof(dst), "%s/%s", rdir, name);
		crc = rocks_copy_file(src, dst, false, &size, sha256);
		cp->written += size;
	}
	appendStringInfo(&cp->text, "%s %s %s " INT64_FORMAT " %08X %s\n",
					 sst ? "sst" : "meta", name, cf->where, size, crc, sha256);
}

/*
 * rocks_files_write_list writes a state's list file (its family, its SST
 * files among those copied, its entry count) and reports it to the
 * snapshot writer.
 */
void
rocks_files_write_list(CopiedFiles *cp, const StateInfo *state,
					   const rocksdb_livefiles_t *live, int64 entries, SnapshotWriter *w)
{
	StringInfoData lst;
	char		family[32];
	char	   *path = rocks_host->native_path(w, state->id);
	struct stat st;

	rocks_family_name(family, sizeof(family), state);
	initStringInfo(&lst);
	appendStringInfo(&lst, "state_backend sst list\nfiles rocksdb/%s %s\nfamily %s\n",
					 FILES_NAME, cp->files_sha256, family);
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
	appendStringInfo(&lst, "entries " INT64_FORMAT "\n", entries);
	write_text_file(path, &lst);
	if (stat(path, &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", path)));
	rocks_host->native_written(w, state->id, st.st_size, entries, cp->written + st.st_size);
	cp->written = 0;
	pfree(lst.data);
	pfree(path);
}

/* rocks_files_begin starts the list of a snapshot's RocksDB files. */
void
rocks_files_begin(CopiedFiles *cp)
{
	memset(cp, 0, sizeof(CopiedFiles));
	cp->cap = 64;
	cp->files = palloc(sizeof(CheckpointFile) * cp->cap);
	initStringInfo(&cp->text);
	appendStringInfoString(&cp->text, "state_backend rocksdb files\n");
}

/* rocks_files_finish writes <dir>/rocksdb/FILES, the files copied. */
void
rocks_files_finish(CopiedFiles *cp, const char *dir)
{
	char		path[MAXPGPATH];

	snprintf(path, sizeof(path), "%s/rocksdb/%s", dir, FILES_NAME);
	cp->written += cp->text.len;
	write_text_file(path, &cp->text);
	/* Each state's list names it by its digest (the signed chain). */
	rocks_host->digest_file(path, cp->files_sha256);
}

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
	if (strlen(text.data) != (size_t) text.len)
		list_corrupt(path, "The file holds a NUL byte.");
	text.data[text.len - 1] = '\0';
	last = strrchr(text.data, '\n');
	text.data[text.len - 1] = '\n';
	if (last == NULL || sscanf(last + 1, "crc32c %X", &want) != 1)
		list_corrupt(path, "The file has no checksum line.");
	/* Exactly as written: every byte of the file is checked. */
	if (strcmp(last + 1, psprintf("crc32c %08X\n", want)) != 0)
		list_corrupt(path, "Its checksum line is malformed.");
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, text.data, last + 1 - text.data);
	FIN_CRC32C(crc);
	if (crc != want)
		list_corrupt(path, psprintf("Its checksum is %08X; the file says %08X.", crc, want));
	last[1] = '\0';
	return text.data;
}

/* The longest file name RocksDB gives a file of a checkpoint, and then some. */
#define MAX_FILE_NAME	128

/*
 * plain_file_name: a name that can only mean a file of the directory it is
 * joined to: not empty, bounded, no '/', no "..", and not one of the
 * temporary names rocks_copy_file writes through ("<name>.tmp").
 */
static bool
plain_file_name(const char *name)
{
	size_t		len = strlen(name);

	return len > 0 && len <= MAX_FILE_NAME && strchr(name, '/') == NULL &&
		strstr(name, "..") == NULL &&
		!(len >= 4 && strcmp(name + len - 4, ".tmp") == 0);
}

/*
 * check_listed_file refuses a FILES line whose names could reach outside
 * the restore's own directories: the name (what the file is called in the
 * scratch copy) must be a plain file name, and where it is in the snapshot
 * either rocksdb/<plain name> or ../shared/<plain name>.
 */
static void
check_listed_file(const char *path, const ListedFile *f)
{
	const char *rest = NULL;

	if (strncmp(f->where, "rocksdb/", 8) == 0)
		rest = f->where + 8;
	else if (strncmp(f->where, "../shared/", 10) == 0)
		rest = f->where + 10;
	if (!plain_file_name(f->name))
		list_corrupt(path, psprintf("It names the file \"%s\", which is not a plain file name.",
									f->name));
	if (rest == NULL || !plain_file_name(rest))
		list_corrupt(path, psprintf("It names the file \"%s\" outside the snapshot.", f->where));
}

/*
 * rocks_files_read reads (and checks the checksum of) a snapshot's rocksdb/FILES;
 * returns how many files it lists, in *files (palloc'd).  "path" receives
 * its name, for messages.
 */
int
rocks_files_read(const char *snapdir, ListedFile **files, char *path, Size pathlen)
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
		f->sha256[0] = '\0';
		if (sscanf(line, "%7s %1023s %1023s %lld %X %64s", kind, f->name, f->where,
				   &f->size, &f->crc, f->sha256) < 5 ||
			(strcmp(kind, "sst") != 0 && strcmp(kind, "meta") != 0))
			continue;
		check_listed_file(path, f);
		/* Each name once: a copy or link made under it must be the only one. */
		for (int i = 0; i < n; i++)
			if (strcmp((*files)[i].name, f->name) == 0)
				list_corrupt(path, psprintf("It lists the file \"%s\" twice.", f->name));
		f->sst = strcmp(kind, "sst") == 0;
		n++;
	}
	return n;
}

/*
 * rocks_files_verify checks a native snapshot's RocksDB files: FILES
 * and every file it lists (size and CRC-32C), and each state list.
 */
void
rocks_files_verify(const char *snapdir, const char *const *lists, int nlists)
{
	char		path[MAXPGPATH];
	ListedFile *files;
	int			n = rocks_files_read(snapdir, &files, path, sizeof(path));
	char		sha256[STATE_DIGEST_HEX_LEN];
	char		files_sha256[STATE_DIGEST_HEX_LEN];

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
		actual = rocks_copy_file(file, NULL, true, &got, sha256);
		if (actual != files[i].crc)
			list_corrupt(file, psprintf("Its checksum is %08X; %s says %08X.",
										actual, path, files[i].crc));
		if (files[i].sha256[0] != '\0' && strcmp(sha256, files[i].sha256) != 0)
			list_corrupt(file, psprintf("Its SHA-256 digest is %s; %s says %s.",
										sha256, path, files[i].sha256));
		CHECK_FOR_INTERRUPTS();
	}
	/*
	 * A list that names FILES by its digest (a signed MANIFEST names the
	 * list's) must name this FILES.
	 */
	rocks_host->digest_file(path, files_sha256);
	for (int i = 0; i < nlists; i++)
	{
		char		list[MAXPGPATH];
		char	   *text;
		char	   *line;
		char		named[STATE_DIGEST_HEX_LEN];

		snprintf(list, sizeof(list), "%s/%s", snapdir, lists[i]);
		text = read_list(list);
		line = strstr(text, "\nfiles ");
		if (line && sscanf(line, "\nfiles %*s %64s", named) == 1 &&
			strcmp(named, files_sha256) != 0)
			list_corrupt(list, psprintf("It names a FILES of digest %s; %s has %s.",
										named, path, files_sha256));
		pfree(text);
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
		int			n = rocks_files_read(dir, &files, path, sizeof(path));

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
 * rocks_files_sweep deletes the files of <root>/shared that no
 * checkpoint under root lists any more.
 */
void
rocks_files_sweep(const char *root)
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
