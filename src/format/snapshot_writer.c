/*
 * format/snapshot_writer.c
 *		Writing a snapshot: its directory (or memory image), one key-group
 *		file per state (format/kg_file.c), the list file that a backend
 *		writing its own native files names per state, and the MANIFEST,
 *		written last.
 *
 *	<root>/MANIFEST				text, written last (temp file, fsync, rename,
 *								fsync of the directory); ends with a CRC-32C
 *	<root>/db-<oid>/<id>.kg		one file per state, its entries by key group
 *	<root>/db-<oid>/<id>.sst.lst	the list of a state that its backend keeps
 *								in native files of its own
 *
 * Which entries go in is decided elsewhere (the backends' snapshot
 * strategies make the cut, snapshot/snapshot_driver.c drives the writer).
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file_perm.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/wait_event.h"

#include "common/fault.h"
#include "common/local_hash.h"
#include "common/settings.h"
#include "format/format_internal.h"
#include "format/records.h"

/* The states snapshot_writer_add remembers while it splits a key group. */
#define SEEN_STATES		16

typedef struct StateOutRef
{
	uint32		state_id;		/* hash key */
	int			n;
} StateOutRef;

static void
make_dir(const char *path)
{
	if (MakePGDirectory(path) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create snapshot directory \"%s\": %m", path)));
}

/* Open a state's file (or memory buffer) and write its header. */
static void
open_state_file(SnapshotWriter *w, StateOut *so)
{
	if (w->dir)
	{
		char		path[MAXPGPATH];

		snprintf(path, sizeof(path), "%s/%s", w->dir, so->relpath);
		so->vfd = PathNameOpenFile(path, O_CREAT | O_EXCL | O_WRONLY | PG_BINARY);
		if (so->vfd < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not create snapshot file \"%s\": %m", path)));
		so->digest = file_digest_begin();
	}
	else
		initStringInfo(&so->mem);
	/* Written natively; snapshot_rewrite_state may convert it later. */
	kg_write_header(w, so, SNAPSHOT_NATIVE);
}

/*
 * snapshot_writer_begin starts a snapshot of the given states: in directory
 * dir (which must not exist yet), or in memory when dir is NULL.  backends
 * names each state's backend; native tells which states their backend
 * writes in files of its own (it reports them with
 * snapshot_writer_set_native).  dboids and dbnames name every database that
 * has states.
 */
SnapshotWriter *
snapshot_writer_begin(const char *dir, int64 id, SnapshotFormat format,
					  const StateDesc *descs, const char *const *backends,
					  const bool *native, int ndescs,
					  const Oid *dboids, char **dbnames, int ndbs)
{
	SnapshotWriter *w = palloc0(sizeof(SnapshotWriter));

	w->dir = dir ? pstrdup(dir) : NULL;
	w->id = id;
	w->format = format;
	w->key_groups = state_backend_max_parallelism;
	w->nstates = ndescs;
	w->states = palloc0(sizeof(StateOut) * Max(ndescs, 1));
	w->ndbs = ndbs;
	w->dboids = (Oid *) dboids;
	w->dbnames = dbnames;
	initStringInfo(&w->manifest);

	w->by_id = local_hash_create("snapshot states", Max(ndescs, 16), sizeof(uint32),
								 sizeof(StateOutRef), CurrentMemoryContext);

	for (int i = 0; i < ndescs; i++)
	{
		StateOut   *so = &w->states[i];
		StateOutRef *ref;
		bool		found;

		so->desc = &descs[i];
		strlcpy(so->backend, backends[i], sizeof(so->backend));
		so->native = native[i];
		kg_state_relpath(so->relpath, sizeof(so->relpath), &descs[i], so->native);
		so->vfd = -1;
		ref = hash_search(w->by_id, &descs[i].id, HASH_ENTER, &found);
		ref->n = i;
	}

	if (w->dir)
	{
		struct stat st;

		if (stat(w->dir, &st) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_FILE),
					 errmsg("snapshot path \"%s\" already exists", w->dir)));
	}

	/* From the directory on, a failure removes whatever was made. */
	PG_TRY();
	{
		if (w->dir)
		{
			make_dir(w->dir);
			w->made_dir = true;
			for (int i = 0; i < ndbs; i++)
			{
				char		path[MAXPGPATH];

				snprintf(path, sizeof(path), "%s/db-%u", w->dir, dboids[i]);
				make_dir(path);
			}
		}
		for (int i = 0; i < ndescs; i++)
			if (!w->states[i].native)
				open_state_file(w, &w->states[i]);
	}
	PG_CATCH();
	{
		snapshot_writer_abort(w);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return w;
}

/* The state an entry belongs to, if it is written as a key-group file. */
static StateOut *
state_out(SnapshotWriter *w, uint32 state_id)
{
	StateOutRef *ref = hash_search(w->by_id, &state_id, HASH_FIND, NULL);

	if (ref == NULL || w->states[ref->n].native)
		return NULL;
	return &w->states[ref->n];
}

/*
 * snapshot_writer_add writes one key group: the entries the backends
 * collected for it (format/records.h).  Key groups come in increasing
 * order, so each state's file holds them in order, each contiguous.
 */
void
snapshot_writer_add(SnapshotWriter *w, int key_group, const char *records, int len)
{
	uint32		off = 0;
	uint32		state_id;
	RecordPair	pair;
	RecordRead	r;
	/*
	 * The states of the entries met, by id: a heap backend's entries of
	 * several states come mixed, in the order of their slots.
	 */
	uint32		seen_id[SEEN_STATES] = {0};
	StateOut   *seen[SEEN_STATES] = {0};
	StateOut   *last;

	for (int i = 0; i < w->nstates; i++)
	{
		w->states[i].kg_start = w->states[i].size;
		w->states[i].kg_entries = 0;
		w->states[i].block_kg = key_group;
	}
	while ((r = record_next_entry(records, (uint32) len, &off, &state_id, &pair)) == RECORD_OK)
	{
		int			h = state_id % SEEN_STATES;

		if (seen_id[h] != state_id || state_id == 0)
		{
			seen[h] = state_out(w, state_id);
			seen_id[h] = state_id;
		}
		last = seen[h];
		if (last != NULL)
			kg_add_record(w, last, &pair);
	}
	if (r != RECORD_END)
		elog(ERROR, "state_backend: a collected entry of key group %d is truncated", key_group);
	for (int i = 0; i < w->nstates; i++)
		if (!w->states[i].native)
			kg_end_key_group(w, &w->states[i], key_group);
}

/*
 * snapshot_writer_set_wal_position records the WAL position of the cut in
 * the MANIFEST: recovery replays logged states' records from there.
 */
void
snapshot_writer_set_wal_position(SnapshotWriter *w, XLogRecPtr lsn)
{
	w->wal_position = lsn;
}

/* snapshot_writer_mark_checkpoint: it writes a checkpoint (its fault points are checkpoint.*). */
void
snapshot_writer_mark_checkpoint(SnapshotWriter *w)
{
	w->checkpoint = true;
}

/*
 * snapshot_writer_native_path returns (palloc'd) the full path of the list
 * file of a state whose backend writes its own files.
 */
char *
snapshot_writer_native_path(SnapshotWriter *w, uint32 state_id)
{
	StateOutRef *ref = hash_search(w->by_id, &state_id, HASH_FIND, NULL);

	if (ref == NULL || !w->states[ref->n].native || w->dir == NULL)
		elog(ERROR, "state_backend: state %u has no native files in this snapshot", state_id);
	return psprintf("%s/%s", w->dir, w->states[ref->n].relpath);
}

/*
 * snapshot_writer_set_native records what a backend wrote for a state kept
 * in its own files: its list file's size, the entries, and the bytes it
 * wrote (files shared with earlier checkpoints not counted).
 */
void
snapshot_writer_set_native(SnapshotWriter *w, uint32 state_id, int64 list_size,
						   int64 entries, int64 bytes_written)
{
	StateOutRef *ref = hash_search(w->by_id, &state_id, HASH_FIND, NULL);

	if (ref == NULL || !w->states[ref->n].native)
		elog(ERROR, "state_backend: state %u has no native files in this snapshot", state_id);
	w->states[ref->n].size = list_size;
	w->states[ref->n].entries = entries;
	w->entries += entries;
	w->bytes += bytes_written;
}

void
snapshot_writer_progress(SnapshotWriter *w, int64 *entries, int64 *bytes)
{
	*entries = w->entries;
	*bytes = w->bytes;
}

static void
fsync_dir(const char *path)
{
	(void) fsync_fname_ext(path, true, false, ERROR);
}

/*
 * snapshot_writer_close_files ends every state file: index and trailer,
 * synced and closed.  The files are complete; the snapshot is not until
 * snapshot_writer_finish.
 */
void
snapshot_writer_close_files(SnapshotWriter *w)
{
	for (int i = 0; i < w->nstates; i++)
	{
		StateOut   *so = &w->states[i];

		if (so->native)
			continue;
		kg_write_index(w, so);
		if (so->vfd < 0 && so->size > (off_t) state_backend_max_state_size_kb * 1024)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("state \"%s\" is too large for a snapshot kept in memory",
							NameStr(so->desc->name)),
					 errdetail("Its snapshot takes " INT64_FORMAT " bytes; state_backend.max_state_size is %d kB.",
							   (int64) so->size, state_backend_max_state_size_kb),
					 errhint("Use the filesystem backend: set state_backend.checkpoint_dir, or give state.snapshot() a path.")));
		if (so->vfd >= 0)
		{
			if (FileSync(so->vfd, PG_WAIT_EXTENSION) != 0)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not fsync snapshot file \"%s/%s\": %m",
								w->dir, so->relpath)));
			FileClose(so->vfd);
			so->vfd = -1;
		}
	}
}

/*
 * After files were rewritten (canonical form), take their new sizes; their
 * digests are taken from the files again.
 */
void
snapshot_writer_refresh_sizes(SnapshotWriter *w)
{
	int64		bytes = 0;

	for (int i = 0; i < w->nstates; i++)
	{
		StateOut   *so = &w->states[i];
		char		path[MAXPGPATH];
		struct stat st;

		file_digest_discard(so->digest);
		so->digest = NULL;

		snprintf(path, sizeof(path), "%s/%s", w->dir, so->relpath);
		if (stat(path, &st) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not stat snapshot file \"%s\": %m", path)));
		so->size = st.st_size;
		bytes += st.st_size;
	}
	w->bytes = bytes;
}

/*
 * snapshot_writer_finish completes a snapshot whose files are closed: the
 * MANIFEST is written to a temporary name, synced and renamed, and the
 * directory synced.  Only then is the snapshot complete.
 */
void
snapshot_writer_finish(SnapshotWriter *w)
{
	/*
	 * The MANIFEST names each file's digest, and is signed: a key-group
	 * file's was taken as it was written, a backend's list file is read.
	 */
	if (w->dir)
		for (int i = 0; i < w->nstates; i++)
		{
			StateOut   *so = &w->states[i];
			char		path[MAXPGPATH];

			if (so->digest)
			{
				FileDigest *d = so->digest;

				so->digest = NULL;
				file_digest_end(d, so->sha256);
				continue;
			}
			snprintf(path, sizeof(path), "%s/%s", w->dir, so->relpath);
			file_digest_of(path, so->sha256);
		}
	manifest_build(w);

	if (w->dir)
	{
		char		tmp[MAXPGPATH];
		char		final[MAXPGPATH];
		int			fd;

		for (int i = 0; i < w->ndbs; i++)
		{
			char		path[MAXPGPATH];

			snprintf(path, sizeof(path), "%s/db-%u", w->dir, w->dboids[i]);
			fsync_dir(path);
		}
		snprintf(tmp, sizeof(tmp), "%s/%s.tmp", w->dir, MANIFEST_NAME);
		snprintf(final, sizeof(final), "%s/%s", w->dir, MANIFEST_NAME);
		if (w->checkpoint)
			FAULT_POINT("checkpoint.manifest_write");
		fd = OpenTransientFile(tmp, O_CREAT | O_EXCL | O_WRONLY | PG_BINARY);
		if (fd < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not create file \"%s\": %m", tmp)));
		errno = 0;
		if (write(fd, w->manifest.data, w->manifest.len) != w->manifest.len)
		{
			if (errno == 0)
				errno = ENOSPC;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write file \"%s\": %m", tmp)));
		}
		if (pg_fsync(fd) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not fsync file \"%s\": %m", tmp)));
		CloseTransientFile(fd);
		if (w->checkpoint)
			FAULT_POINT("checkpoint.manifest_rename");
		(void) durable_rename(tmp, final, ERROR);
		if (w->checkpoint)
			FAULT_POINT("checkpoint.manifest_renamed");
		fsync_dir(w->dir);
		/* Complete and durable: nothing that fails after this removes it. */
		w->made_dir = false;
	}
	else
		memimage_build(w);
}

/* The image of a snapshot written to memory, after snapshot_writer_finish. */
char *
snapshot_writer_memory_image(SnapshotWriter *w, Size *len)
{
	*len = w->memimage_len;
	return w->memimage;
}

/*
 * snapshot_writer_abort closes what is open and removes a partial snapshot
 * directory (only one the writer made).  It never raises an error: it runs
 * while one is handled.
 */
void
snapshot_writer_abort(SnapshotWriter *w)
{
	w->wbuf_owner = NULL;
	for (int i = 0; i < w->nstates; i++)
	{
		if (w->states[i].vfd >= 0)
		{
			FileClose(w->states[i].vfd);
			w->states[i].vfd = -1;
		}
		file_digest_discard(w->states[i].digest);
		w->states[i].digest = NULL;
	}
	if (w->dir && w->made_dir)
		(void) rmtree(w->dir, true);
	w->made_dir = false;
}
