/*
 * snapshot.c
 *		The snapshot format: how a snapshot is laid out, written, verified
 *		and read.
 *
 *	<root>/MANIFEST				text, written last (temp file, fsync, rename,
 *								fsync of the directory); ends with a CRC-32C
 *	<root>/db-<oid>/<id>.kg		one file per state, its entries by key group
 *
 * A .kg file is a header, then blocks, then an index and a trailer:
 *	header	"SBKG" version format state-id key-groups crc
 *	block	"SBBK" key-group entries payload-length crc, then the payload:
 *			entries of one key group, each [key length][value length][key]
 *			[value] (images as codec.c makes them)
 *	index	"SBIX" key-groups, then per key group (offset, length, entries),
 *			crc
 *	trailer	index offset, "SBTR", crc
 * Every CRC is CRC-32C; integers are in the server's byte order.  The
 * MANIFEST names every database and state (names live only there) with its
 * types, owner and grants, file, size and entry count, so a snapshot is
 * self-describing and can be moved.  A directory without a MANIFEST is not
 * a snapshot.
 *
 * Which entries go in is decided elsewhere (heap_backend.c makes the cut,
 * snapshot_control.c drives the writer); restore.c reads through here.
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file_perm.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "utils/wait_event.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "snapshot.h"

#define KG_MAGIC		0x474B4253	/* "SBKG" */
#define BLOCK_MAGIC		0x4B424253	/* "SBBK" */
#define INDEX_MAGIC		0x58494253	/* "SBIX" */
#define TRAILER_MAGIC	0x52544253	/* "SBTR" */
#define MEMIMAGE_MAGIC	0x494D4253	/* "SBMI" */

#define BLOCK_TARGET	(64 * 1024)
#define MANIFEST_NAME	"MANIFEST"

typedef struct KgFileHeader
{
	uint32		magic;
	uint32		version;
	uint32		format;
	uint32		state_id;
	uint32		key_groups;
	uint32		crc;
} KgFileHeader;

typedef struct KgBlockHeader
{
	uint32		magic;
	uint32		key_group;
	uint32		entries;
	uint32		len;
	uint32		crc;			/* of key_group, entries, len, payload */
} KgBlockHeader;

typedef struct KgIndexEntry
{
	uint64		offset;
	uint64		length;
	uint64		entries;
} KgIndexEntry;

typedef struct KgTrailer
{
	uint64		index_offset;
	uint32		magic;
	uint32		crc;
} KgTrailer;

static pg_crc32c
crc_of(const void *data, Size len)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data, len);
	FIN_CRC32C(crc);
	return crc;
}

static pg_crc32c
block_crc(const KgBlockHeader *h, const char *payload)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, &h->key_group, 3 * sizeof(uint32));
	COMP_CRC32C(crc, payload, h->len);
	FIN_CRC32C(crc);
	return crc;
}

/* ---------------------------------------------------------------- names */

/* Percent-encode a MANIFEST value: everything but [A-Za-z0-9_.-]. */
static void
append_encoded(StringInfo buf, const char *s)
{
	if (*s == '\0')
	{
		appendStringInfoChar(buf, '%');
		return;
	}
	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-')
			appendStringInfoChar(buf, c);
		else
			appendStringInfo(buf, "%%%02X", c);
	}
}

static bool
decode_value(const char *in, char *out, Size outlen)
{
	Size		n = 0;

	if (strcmp(in, "%") == 0)
	{
		out[0] = '\0';
		return true;
	}
	while (*in)
	{
		char		c = *in++;

		if (c == '%')
		{
			unsigned int v;

			if (!isxdigit((unsigned char) in[0]) || !isxdigit((unsigned char) in[1]) ||
				sscanf(in, "%2x", &v) != 1)
				return false;
			c = (char) v;
			in += 2;
		}
		if (n + 1 >= outlen)
			return false;
		out[n++] = c;
	}
	out[n] = '\0';
	return true;
}

/* ---------------------------------------------------------------- writer */

typedef struct StateOut
{
	const StateDesc *desc;
	char		relpath[MAXPGPATH];
	bool		external;		/* a rocksdb file list, written elsewhere */
	File		vfd;			/* -1 when writing to memory */
	StringInfoData mem;
	off_t		size;
	StringInfoData block;
	uint32		block_entries;
	int			block_kg;
	off_t		kg_start;
	int64		kg_entries;
	int64		entries;
	KgIndexEntry *index;
} StateOut;

typedef struct StateOutRef
{
	uint32		state_id;		/* hash key */
	int			n;
} StateOutRef;

struct SnapshotWriter
{
	char	   *dir;			/* NULL: in memory */
	int64		id;
	SnapshotFormat format;
	int			key_groups;
	int			nstates;
	StateOut   *states;
	HTAB	   *by_id;
	int			ndbs;
	Oid		   *dboids;
	char	  **dbnames;
	int64		entries;
	int64		bytes;
	StringInfoData manifest;
	char	   *memimage;
	Size		memimage_len;
};

static void
out_write(SnapshotWriter *w, StateOut *so, const void *data, Size len)
{
	if (so->vfd < 0)
		appendBinaryStringInfo(&so->mem, data, len);
	else
	{
		int			n;

		errno = 0;
		n = FileWrite(so->vfd, (char *) data, (int) len, so->size, PG_WAIT_EXTENSION);
		if (n != (int) len)
		{
			if (n >= 0 && errno == 0)
				errno = ENOSPC;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write snapshot file \"%s/%s\": %m",
							w->dir, so->relpath)));
		}
	}
	so->size += len;
	w->bytes += len;
}

static void
make_dir(const char *path)
{
	if (MakePGDirectory(path) != 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create snapshot directory \"%s\": %m", path)));
}

/*
 * snapshot_writer_begin starts a snapshot of the given states: in directory
 * dir (which must not exist yet), or in memory when dir is NULL.  dboids
 * and dbnames name every database that has states.
 */
SnapshotWriter *
snapshot_writer_begin(const char *dir, int64 id, SnapshotFormat format,
					  const StateDesc *descs, int ndescs,
					  const Oid *dboids, char **dbnames, int ndbs,
					  const bool *external)
{
	SnapshotWriter *w = palloc0(sizeof(SnapshotWriter));
	HASHCTL		ctl;

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

	ctl.keysize = sizeof(uint32);
	ctl.entrysize = sizeof(StateOutRef);
	ctl.hcxt = CurrentMemoryContext;
	w->by_id = hash_create("snapshot states", Max(ndescs, 16), &ctl,
						   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	if (w->dir)
	{
		struct stat st;

		if (stat(w->dir, &st) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_FILE),
					 errmsg("snapshot path \"%s\" already exists", w->dir)));
		make_dir(w->dir);
		for (int i = 0; i < ndbs; i++)
		{
			char		path[MAXPGPATH];

			snprintf(path, sizeof(path), "%s/db-%u", w->dir, dboids[i]);
			make_dir(path);
		}
	}

	for (int i = 0; i < ndescs; i++)
	{
		StateOut   *so = &w->states[i];
		StateOutRef *ref;
		bool		found;
		KgFileHeader h;

		so->desc = &descs[i];
		snprintf(so->relpath, sizeof(so->relpath), "db-%u/%u.kg",
				 descs[i].dbid, descs[i].id);
		so->vfd = -1;
		if (external && external[i])
		{
			/* rocksdb_snapshot.c writes the list; nothing to open here. */
			so->external = true;
			snprintf(so->relpath, sizeof(so->relpath), "db-%u/%u%s",
					 descs[i].dbid, descs[i].id, SNAPSHOT_SST_LIST_SUFFIX);
			so->index = palloc0(sizeof(KgIndexEntry) * w->key_groups);
			initStringInfo(&so->block);
			so->block_kg = -1;
		}
		else if (w->dir)
		{
			char		path[MAXPGPATH];

			snprintf(path, sizeof(path), "%s/%s", w->dir, so->relpath);
			so->vfd = PathNameOpenFile(path, O_CREAT | O_EXCL | O_WRONLY | PG_BINARY);
			if (so->vfd < 0)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not create snapshot file \"%s\": %m", path)));
		}
		else
			initStringInfo(&so->mem);
		ref = hash_search(w->by_id, &descs[i].id, HASH_ENTER, &found);
		ref->n = i;
		if (so->external)
			continue;
		initStringInfo(&so->block);
		so->block_kg = -1;
		so->index = palloc0(sizeof(KgIndexEntry) * w->key_groups);

		/* Written natively; canonical.c may convert the file later. */
		h.magic = KG_MAGIC;
		h.version = SNAPSHOT_FORMAT_VERSION;
		h.format = (uint32) SNAPSHOT_NATIVE;
		h.state_id = descs[i].id;
		h.key_groups = (uint32) w->key_groups;
		h.crc = crc_of(&h, offsetof(KgFileHeader, crc));
		out_write(w, so, &h, sizeof(h));
	}
	return w;
}

static void
flush_block(SnapshotWriter *w, StateOut *so)
{
	KgBlockHeader h;

	if (so->block_entries == 0)
		return;
	h.magic = BLOCK_MAGIC;
	h.key_group = (uint32) so->block_kg;
	h.entries = so->block_entries;
	h.len = (uint32) so->block.len;
	h.crc = block_crc(&h, so->block.data);
	out_write(w, so, &h, sizeof(h));
	out_write(w, so, so->block.data, so->block.len);
	resetStringInfo(&so->block);
	so->block_entries = 0;
}

/*
 * snapshot_writer_add writes one key group: records as
 * heap_snapshot_collect makes them ([state id][key length][value length]
 * [key][value]).  Key groups come in increasing order, so each state's
 * file holds them in order, each contiguous.
 */
void
snapshot_writer_add(SnapshotWriter *w, int key_group, const char *records, int len)
{
	int			off = 0;

	for (int i = 0; i < w->nstates; i++)
	{
		w->states[i].kg_start = w->states[i].size;
		w->states[i].kg_entries = 0;
		w->states[i].block_kg = key_group;
	}

	while (off < len)
	{
		uint32		id;
		uint32		klen;
		uint32		vlen;
		StateOutRef *ref;
		StateOut   *so;

		memcpy(&id, records + off, sizeof(uint32));
		memcpy(&klen, records + off + 4, sizeof(uint32));
		memcpy(&vlen, records + off + 8, sizeof(uint32));
		off += 12;
		ref = hash_search(w->by_id, &id, HASH_FIND, NULL);
		if (ref != NULL && !w->states[ref->n].external)
		{
			so = &w->states[ref->n];
			appendBinaryStringInfo(&so->block, records + off - 8, 8 + klen + vlen);
			so->block_entries++;
			so->kg_entries++;
			so->entries++;
			w->entries++;
			if (so->block.len >= BLOCK_TARGET)
				flush_block(w, so);
		}
		off += klen + vlen;
	}

	for (int i = 0; i < w->nstates; i++)
	{
		StateOut   *so = &w->states[i];

		if (so->external)
			continue;
		flush_block(w, so);
		so->index[key_group].offset = (uint64) so->kg_start;
		so->index[key_group].length = (uint64) (so->size - so->kg_start);
		so->index[key_group].entries = (uint64) so->kg_entries;
	}
}

/*
 * snapshot_writer_set_external records what rocksdb_snapshot.c wrote for
 * a state kept as RocksDB files: its list's size, the entries, and the
 * bytes it wrote (files shared with earlier checkpoints not counted).
 */
void
snapshot_writer_set_external(SnapshotWriter *w, uint32 state_id, int64 list_size,
							 int64 entries, int64 bytes_written)
{
	StateOutRef *ref = hash_search(w->by_id, &state_id, HASH_FIND, NULL);

	if (ref == NULL || !w->states[ref->n].external)
		elog(ERROR, "state_backend: state %u is not kept as RocksDB files", state_id);
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
write_index(SnapshotWriter *w, StateOut *so)
{
	uint32		head[2];
	pg_crc32c	crc;
	KgTrailer	t;
	off_t		index_offset = so->size;

	head[0] = INDEX_MAGIC;
	head[1] = (uint32) w->key_groups;
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, head, sizeof(head));
	COMP_CRC32C(crc, so->index, sizeof(KgIndexEntry) * w->key_groups);
	FIN_CRC32C(crc);
	out_write(w, so, head, sizeof(head));
	out_write(w, so, so->index, sizeof(KgIndexEntry) * w->key_groups);
	out_write(w, so, &crc, sizeof(crc));

	t.index_offset = (uint64) index_offset;
	t.magic = TRAILER_MAGIC;
	t.crc = crc_of(&t, offsetof(KgTrailer, crc));
	out_write(w, so, &t, sizeof(t));
}

static void
append_type(StringInfo buf, const char *label, const StateType *t)
{
	appendStringInfo(buf, " %s=", label);
	if (!OidIsValid(t->oid))
	{
		appendStringInfoChar(buf, '-');
		return;
	}
	append_encoded(buf, NameStr(t->nspname));
	appendStringInfoChar(buf, '/');
	append_encoded(buf, NameStr(t->typname));
	appendStringInfo(buf, "/%u/%d/%d", t->oid, t->typlen, t->typbyval ? 1 : 0);
}

static void
build_manifest(SnapshotWriter *w)
{
	StringInfo	m = &w->manifest;

	appendStringInfoString(m, "state_backend snapshot\n");
	appendStringInfo(m, "format_version %d\n", SNAPSHOT_FORMAT_VERSION);
	appendStringInfo(m, "snapshot_id " INT64_FORMAT "\n", w->id);
	appendStringInfo(m, "format %s\n", w->format == SNAPSHOT_NATIVE ? "native" : "canonical");
	appendStringInfo(m, "server_version_num %d\n", PG_VERSION_NUM);
	appendStringInfo(m, "key_groups %d\n", w->key_groups);
	appendStringInfo(m, "created %s\n", timestamptz_to_str(GetCurrentTimestamp()));
	for (int i = 0; i < w->ndbs; i++)
	{
		appendStringInfo(m, "database %u ", w->dboids[i]);
		append_encoded(m, w->dbnames[i]);
		appendStringInfoChar(m, '\n');
	}
	for (int i = 0; i < w->nstates; i++)
	{
		StateOut   *so = &w->states[i];
		const StateDesc *d = so->desc;

		appendStringInfo(m, "state db=%u id=%u name=", d->dbid, d->id);
		append_encoded(m, NameStr(d->name));
		appendStringInfo(m, " kind=%s backend=%s", state_kind_name(d->kind),
						 state_backend_name(d->backend));
		append_type(m, "key", &d->types[STATE_TYPE_KEY]);
		append_type(m, "value", &d->types[STATE_TYPE_VALUE]);
		append_type(m, "map_key", &d->types[STATE_TYPE_MAP_KEY]);
		appendStringInfo(m, " reducer=%s owner=",
						 d->reducer == STATE_REDUCER_NONE ? "-" : state_reducer_name(d->reducer));
		append_encoded(m, NameStr(d->owner_name));
		appendStringInfo(m, " owner_oid=%u file=%s size=" INT64_FORMAT " entries=" INT64_FORMAT "\n",
						 d->owner, so->relpath, (int64) so->size, so->entries);
		for (int g = 0; g < d->ngrants; g++)
			appendStringInfo(m, "grant state=%u role_oid=%u privs=%u\n",
							 d->id, d->grants[g].role, d->grants[g].privs);
	}
	appendStringInfo(m, "crc32c %08X\n", crc_of(m->data, m->len));
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

		if (so->external)
			continue;
		write_index(w, so);
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

/* After files were rewritten (canonical form), take their new sizes. */
void
snapshot_writer_refresh_sizes(SnapshotWriter *w)
{
	int64		bytes = 0;

	for (int i = 0; i < w->nstates; i++)
	{
		StateOut   *so = &w->states[i];
		char		path[MAXPGPATH];
		struct stat st;

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
	build_manifest(w);

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
		(void) durable_rename(tmp, final, ERROR);
		fsync_dir(w->dir);
	}
	else
	{
		/* The memory image: "SBMI" nfiles, then (name length, name, size, bytes). */
		StringInfoData img;
		uint32		n = (uint32) w->nstates + 1;
		uint32		magic = MEMIMAGE_MAGIC;

		initStringInfo(&img);
		appendBinaryStringInfo(&img, (char *) &magic, sizeof(magic));
		appendBinaryStringInfo(&img, (char *) &n, sizeof(n));
		for (int i = 0; i <= w->nstates; i++)
		{
			const char *name = i < w->nstates ? w->states[i].relpath : MANIFEST_NAME;
			StringInfo	data = i < w->nstates ? &w->states[i].mem : &w->manifest;
			uint32		nlen = (uint32) strlen(name);
			uint64		size = (uint64) data->len;

			appendBinaryStringInfo(&img, (char *) &nlen, sizeof(nlen));
			appendBinaryStringInfo(&img, name, nlen);
			appendBinaryStringInfo(&img, (char *) &size, sizeof(size));
			appendBinaryStringInfo(&img, data->data, data->len);
		}
		w->memimage = img.data;
		w->memimage_len = img.len;
	}
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
 * directory.  It never raises an error: it runs while one is handled.
 */
void
snapshot_writer_abort(SnapshotWriter *w)
{
	for (int i = 0; i < w->nstates; i++)
		if (w->states[i].vfd >= 0)
		{
			FileClose(w->states[i].vfd);
			w->states[i].vfd = -1;
		}
	if (w->dir)
		(void) rmtree(w->dir, true);
}

/* ---------------------------------------------------------------- reader */

typedef struct SrcFile
{
	const SnapshotSource *src;
	char		name[MAXPGPATH];	/* for messages */
	File		vfd;
	const char *mem;
	off_t		size;
} SrcFile;

static void
corrupt(const SrcFile *f, off_t offset, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("snapshot file \"%s\" is corrupted at offset " INT64_FORMAT,
					f->name, (int64) offset),
			 errdetail("%s", what)));
}

/* Find a file of an in-memory snapshot image. */
static bool
mem_find(const SnapshotSource *src, const char *relpath, const char **data, off_t *size)
{
	const char *p = src->mem;
	const char *end = src->mem + src->memlen;
	uint32		magic;
	uint32		n;

	if (src->memlen < 8)
		return false;
	memcpy(&magic, p, 4);
	memcpy(&n, p + 4, 4);
	if (magic != MEMIMAGE_MAGIC)
		return false;
	p += 8;
	for (uint32 i = 0; i < n && p + 4 <= end; i++)
	{
		uint32		nlen;
		uint64		len;

		memcpy(&nlen, p, 4);
		p += 4;
		if (p + nlen + 8 > end)
			return false;
		memcpy(&len, p + nlen, 8);
		if (nlen == strlen(relpath) && memcmp(p, relpath, nlen) == 0)
		{
			if (p + nlen + 8 + len > end)
				return false;
			*data = p + nlen + 8;
			*size = (off_t) len;
			return true;
		}
		p += nlen + 8 + len;
	}
	return false;
}

static void
src_open(const SnapshotSource *src, const char *relpath, SrcFile *f)
{
	memset(f, 0, sizeof(SrcFile));
	f->src = src;
	f->vfd = -1;
	if (src->dir)
	{
		snprintf(f->name, sizeof(f->name), "%s/%s", src->dir, relpath);
		f->vfd = PathNameOpenFile(f->name, O_RDONLY | PG_BINARY);
		if (f->vfd < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not open snapshot file \"%s\": %m", f->name)));
		f->size = FileSize(f->vfd);
		if (f->size < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read snapshot file \"%s\": %m", f->name)));
	}
	else
	{
		snprintf(f->name, sizeof(f->name), "%s/%s", src->name, relpath);
		if (!mem_find(src, relpath, &f->mem, &f->size))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("snapshot file \"%s\" is missing", f->name)));
	}
}

static void
src_close(SrcFile *f)
{
	if (f->vfd >= 0)
		FileClose(f->vfd);
	f->vfd = -1;
}

/* Read len bytes at offset, or report the file as truncated there. */
static void
src_read(SrcFile *f, void *buf, Size len, off_t offset)
{
	if (offset < 0 || offset + (off_t) len > f->size)
		corrupt(f, offset, "The file is truncated.");
	if (f->vfd >= 0)
	{
		int			n = FileRead(f->vfd, buf, (int) len, offset, PG_WAIT_EXTENSION);

		if (n < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read snapshot file \"%s\": %m", f->name)));
		if (n != (int) len)
			corrupt(f, offset, "The file is truncated.");
	}
	else
		memcpy(buf, f->mem + offset, len);
}

/* ------------------------------------------------------- manifest parsing */

static bool
parse_type(const char *v, StateType *t)
{
	char		nsp[3 * NAMEDATALEN];
	char		typ[3 * NAMEDATALEN];
	char		dnsp[NAMEDATALEN];
	char		dtyp[NAMEDATALEN];
	unsigned int oid;
	int			len;
	int			byval;

	memset(t, 0, sizeof(StateType));
	if (strcmp(v, "-") == 0)
		return true;
	if (sscanf(v, "%191[^/]/%191[^/]/%u/%d/%d", nsp, typ, &oid, &len, &byval) != 5)
		return false;
	if (!decode_value(nsp, dnsp, sizeof(dnsp)) || !decode_value(typ, dtyp, sizeof(dtyp)))
		return false;
	namestrcpy(&t->nspname, dnsp);
	namestrcpy(&t->typname, dtyp);
	t->oid = oid;
	t->typlen = (int16) len;
	t->typbyval = byval != 0;
	return true;
}

static StateKind
parse_kind_name(const char *v, bool *ok)
{
	for (int k = STATE_KIND_VALUE; k <= STATE_KIND_REDUCING; k++)
		if (strcmp(v, state_kind_name((StateKind) k)) == 0)
			return (StateKind) k;
	*ok = false;
	return STATE_KIND_VALUE;
}

static bool
parse_state_line(char *line, SnapshotState *st)
{
	char	   *save = NULL;
	bool		ok = true;

	memset(st, 0, sizeof(SnapshotState));
	for (char *tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
	{
		char	   *eq = strchr(tok, '=');
		char	   *v;
		char		buf[MAXPGPATH];

		if (eq == NULL)
			return false;
		*eq = '\0';
		v = eq + 1;
		if (strcmp(tok, "db") == 0)
			st->desc.dbid = (Oid) strtoul(v, NULL, 10);
		else if (strcmp(tok, "id") == 0)
			st->desc.id = (uint32) strtoul(v, NULL, 10);
		else if (strcmp(tok, "name") == 0)
		{
			if (!decode_value(v, buf, NAMEDATALEN))
				return false;
			namestrcpy(&st->desc.name, buf);
		}
		else if (strcmp(tok, "kind") == 0)
			st->desc.kind = parse_kind_name(v, &ok);
		else if (strcmp(tok, "backend") == 0)
			st->desc.backend = strcmp(v, "filesystem") == 0 ? STATE_BACKEND_FILESYSTEM :
				strcmp(v, "rocksdb") == 0 ? STATE_BACKEND_ROCKSDB : STATE_BACKEND_MEMORY;
		else if (strcmp(tok, "key") == 0)
			ok &= parse_type(v, &st->desc.types[STATE_TYPE_KEY]);
		else if (strcmp(tok, "value") == 0)
			ok &= parse_type(v, &st->desc.types[STATE_TYPE_VALUE]);
		else if (strcmp(tok, "map_key") == 0)
			ok &= parse_type(v, &st->desc.types[STATE_TYPE_MAP_KEY]);
		else if (strcmp(tok, "reducer") == 0)
			st->desc.reducer = strcmp(v, "sum") == 0 ? STATE_REDUCER_SUM :
				strcmp(v, "min") == 0 ? STATE_REDUCER_MIN :
				strcmp(v, "max") == 0 ? STATE_REDUCER_MAX : STATE_REDUCER_NONE;
		else if (strcmp(tok, "owner") == 0)
		{
			if (!decode_value(v, buf, NAMEDATALEN))
				return false;
			namestrcpy(&st->desc.owner_name, buf);
		}
		else if (strcmp(tok, "owner_oid") == 0)
			st->desc.owner = (Oid) strtoul(v, NULL, 10);
		else if (strcmp(tok, "file") == 0)
			strlcpy(st->file, v, sizeof(st->file));
		else if (strcmp(tok, "size") == 0)
			st->size = strtoll(v, NULL, 10);
		else if (strcmp(tok, "entries") == 0)
			st->entries = strtoll(v, NULL, 10);
	}
	st->desc.key_type = st->desc.types[STATE_TYPE_KEY].oid;
	st->desc.value_type = st->desc.types[STATE_TYPE_VALUE].oid;
	st->desc.map_key_type = st->desc.types[STATE_TYPE_MAP_KEY].oid;
	/* file names are ours: db-<oid>/<id>.kg, nothing else */
	if (strstr(st->file, "..") != NULL || st->file[0] == '/' || st->file[0] == '\0')
		return false;
	return ok && st->desc.id != 0 && NameStr(st->desc.name)[0] != '\0';
}

/*
 * snapshot_read_manifest reads and checks a snapshot's MANIFEST.  A missing
 * MANIFEST means "not a snapshot"; a damaged one is data_corrupted.
 */
SnapshotManifest *
snapshot_read_manifest(const SnapshotSource *src)
{
	SnapshotManifest *m = palloc0(sizeof(SnapshotManifest));
	SrcFile		f;
	char	   *text;
	char	   *crcline;
	unsigned int crc;
	char	   *save = NULL;
	int			lineno = 0;
	off_t		lineoff = 0;

	if (src->dir)
	{
		char		path[MAXPGPATH];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", src->dir, MANIFEST_NAME);
		if (stat(path, &st) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FILE),
					 errmsg("\"%s\" is not a snapshot", src->dir),
					 errdetail("It has no MANIFEST: a snapshot that did not complete, or another directory.")));
	}
	src_open(src, MANIFEST_NAME, &f);
	if (f.size > 64 * 1024 * 1024)
		corrupt(&f, 0, "The MANIFEST is too large.");
	text = palloc(f.size + 1);
	src_read(&f, text, f.size, 0);
	text[f.size] = '\0';
	src_close(&f);

	/* The last line is "crc32c XXXXXXXX", of everything before it. */
	crcline = f.size > 0 ? text + f.size - 1 : text;
	if (f.size < 2 || *crcline != '\n')
		corrupt(&f, f.size, "The MANIFEST does not end with its checksum.");
	*crcline = '\0';
	crcline = strrchr(text, '\n');
	if (crcline == NULL || sscanf(crcline + 1, "crc32c %8X", &crc) != 1)
		corrupt(&f, crcline ? crcline - text + 1 : 0, "The MANIFEST does not end with its checksum.");
	if (crc_of(text, crcline + 1 - text) != (pg_crc32c) crc)
		corrupt(&f, crcline - text + 1, "The MANIFEST checksum does not match its contents.");
	*crcline = '\0';

	m->states = palloc0(sizeof(SnapshotState) * 16);
	m->db_oids = palloc0(sizeof(Oid) * 16);
	m->db_names = palloc0(sizeof(char *) * 16);
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
	{
		char		word[64];
		char	   *rest;

		lineoff = line - text;
		lineno++;
		if (lineno == 1)
		{
			if (strcmp(line, "state_backend snapshot") != 0)
				corrupt(&f, lineoff, "The MANIFEST does not start with \"state_backend snapshot\".");
			continue;
		}
		if (sscanf(line, "%63s", word) != 1)
			corrupt(&f, lineoff, "The MANIFEST has an empty line.");
		rest = line + strlen(word);
		while (*rest == ' ')
			rest++;
		if (strcmp(word, "format_version") == 0)
		{
			if (atoi(rest) != SNAPSHOT_FORMAT_VERSION)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("snapshot format version %d is not supported", atoi(rest)),
						 errdetail("This release reads version %d.", SNAPSHOT_FORMAT_VERSION)));
		}
		else if (strcmp(word, "snapshot_id") == 0)
			m->id = strtoll(rest, NULL, 10);
		else if (strcmp(word, "format") == 0)
			m->format = strcmp(rest, "canonical") == 0 ? SNAPSHOT_CANONICAL : SNAPSHOT_NATIVE;
		else if (strcmp(word, "server_version_num") == 0)
			m->server_version_num = atoi(rest);
		else if (strcmp(word, "key_groups") == 0)
			m->key_groups = atoi(rest);
		else if (strcmp(word, "database") == 0)
		{
			unsigned int oid;
			char		enc[4 * NAMEDATALEN];
			char		name[NAMEDATALEN];

			if (sscanf(rest, "%u %255s", &oid, enc) != 2 || !decode_value(enc, name, sizeof(name)))
				corrupt(&f, lineoff, "A database line of the MANIFEST is malformed.");
			if (m->ndbs % 16 == 0 && m->ndbs > 0)
			{
				m->db_oids = repalloc(m->db_oids, sizeof(Oid) * (m->ndbs + 16));
				m->db_names = repalloc(m->db_names, sizeof(char *) * (m->ndbs + 16));
			}
			m->db_oids[m->ndbs] = oid;
			m->db_names[m->ndbs] = pstrdup(name);
			m->ndbs++;
		}
		else if (strcmp(word, "state") == 0)
		{
			if (m->nstates % 16 == 0 && m->nstates > 0)
				m->states = repalloc(m->states, sizeof(SnapshotState) * (m->nstates + 16));
			if (!parse_state_line(rest, &m->states[m->nstates]))
				corrupt(&f, lineoff, "A state line of the MANIFEST is malformed.");
			m->nstates++;
		}
		else if (strcmp(word, "grant") == 0)
		{
			unsigned int id;
			unsigned int role;
			unsigned int privs;

			if (sscanf(rest, "state=%u role_oid=%u privs=%u", &id, &role, &privs) != 3)
				corrupt(&f, lineoff, "A grant line of the MANIFEST is malformed.");
			for (int i = 0; i < m->nstates; i++)
			{
				StateDesc  *d = &m->states[i].desc;

				if (d->id == id && d->ngrants < STATE_MAX_GRANTS)
				{
					d->grants[d->ngrants].role = role;
					d->grants[d->ngrants].privs = (uint8) privs;
					d->ngrants++;
				}
			}
		}
		/* Unknown lines are ignored: later minor versions may add some. */
	}
	if (m->key_groups <= 0)
		corrupt(&f, 0, "The MANIFEST has no key_groups line.");
	for (int i = 0; i < m->nstates; i++)
	{
		SnapshotState *st = &m->states[i];

		for (int d = 0; d < m->ndbs; d++)
			if (m->db_oids[d] == st->desc.dbid)
				strlcpy(st->dbname, m->db_names[d], sizeof(st->dbname));
	}
	return m;
}

/* ------------------------------------------------------ state files */

typedef struct KgFileCheck
{
	SrcFile		f;
	KgIndexEntry *index;
	off_t		index_offset;
	int			cur_kg;			/* key group being walked */
	void		(*kg_done) (void *arg, int key_group);
} KgFileCheck;

/* Open a state file and check its header, trailer and index. */
static void
kg_open(const SnapshotSource *src, const SnapshotManifest *m,
		const SnapshotState *st, KgFileCheck *c)
{
	KgFileHeader h;
	KgTrailer	t;
	uint32		head[2];
	pg_crc32c	crc;
	pg_crc32c	stored;
	Size		idxlen = sizeof(KgIndexEntry) * m->key_groups;

	src_open(src, st->file, &c->f);
	if (c->f.size != st->size)
		corrupt(&c->f, Min(c->f.size, st->size),
				psprintf("The file has " INT64_FORMAT " bytes; the MANIFEST says " INT64_FORMAT ".",
						 (int64) c->f.size, st->size));
	src_read(&c->f, &h, sizeof(h), 0);
	if (h.magic != KG_MAGIC || h.crc != crc_of(&h, offsetof(KgFileHeader, crc)))
		corrupt(&c->f, 0, "The file header is damaged.");
	if (h.version != SNAPSHOT_FORMAT_VERSION || h.state_id != st->desc.id ||
		h.key_groups != (uint32) m->key_groups || h.format != (uint32) m->format)
		corrupt(&c->f, 0, "The file header does not match the MANIFEST.");

	src_read(&c->f, &t, sizeof(t), c->f.size - (off_t) sizeof(t));
	if (t.magic != TRAILER_MAGIC || t.crc != crc_of(&t, offsetof(KgTrailer, crc)))
		corrupt(&c->f, c->f.size - (off_t) sizeof(t), "The file trailer is damaged.");
	c->index_offset = (off_t) t.index_offset;
	if (c->index_offset < (off_t) sizeof(h) ||
		c->index_offset + (off_t) (sizeof(head) + idxlen + sizeof(crc) + sizeof(t)) != c->f.size)
		corrupt(&c->f, c->f.size - (off_t) sizeof(t), "The file trailer points outside the file.");

	c->index = palloc(idxlen);
	src_read(&c->f, head, sizeof(head), c->index_offset);
	src_read(&c->f, c->index, idxlen, c->index_offset + sizeof(head));
	src_read(&c->f, &stored, sizeof(stored), c->index_offset + sizeof(head) + idxlen);
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, head, sizeof(head));
	COMP_CRC32C(crc, c->index, idxlen);
	FIN_CRC32C(crc);
	if (head[0] != INDEX_MAGIC || head[1] != (uint32) m->key_groups || crc != stored)
		corrupt(&c->f, c->index_offset, "The key group index is damaged.");
}

/*
 * Walk every block of a state file, checking each; with fn, hand it every
 * entry.  Returns the number of entries.
 */
static int64
kg_walk(KgFileCheck *c, const SnapshotManifest *m, SnapshotEntryFn fn, void *arg)
{
	off_t		off = sizeof(KgFileHeader);
	int64		total = 0;
	char	   *payload = NULL;
	Size		cap = 0;

	for (int kg = 0; kg < m->key_groups; kg++)
	{
		KgIndexEntry *ie = &c->index[kg];
		off_t		end = (off_t) (ie->offset + ie->length);
		uint64		entries = 0;

		c->cur_kg = kg;
		if ((off_t) ie->offset != off || end > c->index_offset)
			corrupt(&c->f, off, psprintf("The index entry of key group %d does not match the blocks.", kg));
		while (off < end)
		{
			KgBlockHeader h;
			uint32		p = 0;

			src_read(&c->f, &h, sizeof(h), off);
			if (h.magic != BLOCK_MAGIC || h.key_group != (uint32) kg ||
				off + (off_t) sizeof(h) + h.len > end)
				corrupt(&c->f, off, "A block header is damaged.");
			if (h.len > cap)
			{
				cap = Max(h.len, 2 * cap);
				payload = payload ? repalloc_huge(payload, cap) : palloc_extended(cap, MCXT_ALLOC_HUGE);
			}
			src_read(&c->f, payload, h.len, off + sizeof(h));
			if (block_crc(&h, payload) != h.crc)
				corrupt(&c->f, off, "A block checksum does not match.");
			for (uint32 i = 0; i < h.entries; i++)
			{
				uint32		klen;
				uint32		vlen;

				if (p + 8 > h.len)
					corrupt(&c->f, off + sizeof(h) + p, "An entry runs past its block.");
				memcpy(&klen, payload + p, 4);
				memcpy(&vlen, payload + p + 4, 4);
				if ((uint64) p + 8 + klen + vlen > h.len)
					corrupt(&c->f, off + sizeof(h) + p, "An entry runs past its block.");
				if (fn)
					fn(arg, payload + p + 8, klen, payload + p + 8 + klen, vlen);
				p += 8 + klen + vlen;
			}
			if (p != h.len)
				corrupt(&c->f, off, "A block has bytes after its last entry.");
			entries += h.entries;
			off += sizeof(h) + h.len;
		}
		if (entries != ie->entries)
			corrupt(&c->f, ie->offset, psprintf("Key group %d has " UINT64_FORMAT " entries; the index says " UINT64_FORMAT ".",
												kg, entries, ie->entries));
		total += entries;
		if (c->kg_done)
			c->kg_done(arg, kg);
	}
	if (off != c->index_offset)
		corrupt(&c->f, off, "There are bytes between the last block and the index.");
	if (payload)
		pfree(payload);
	return total;
}

/*
 * snapshot_verify_state checks a state's file completely: size, header,
 * every block's checksum and structure, the index and the entry count.
 */
void
snapshot_verify_state(const SnapshotSource *src, const SnapshotManifest *m,
					  const SnapshotState *st)
{
	KgFileCheck c;
	int64		n;

	kg_open(src, m, st, &c);
	c.kg_done = NULL;
	n = kg_walk(&c, m, NULL, NULL);
	if (n != st->entries)
		corrupt(&c.f, 0, psprintf("The file has " INT64_FORMAT " entries; the MANIFEST says " INT64_FORMAT ".",
								  n, st->entries));
	src_close(&c.f);
}

/* snapshot_read_state hands every entry of a (verified) state to fn. */
int64
snapshot_read_state(const SnapshotSource *src, const SnapshotManifest *m,
					const SnapshotState *st, SnapshotEntryFn fn, void *arg)
{
	KgFileCheck c;
	int64		n;

	kg_open(src, m, st, &c);
	c.kg_done = NULL;
	n = kg_walk(&c, m, fn, arg);
	src_close(&c.f);
	return n;
}

/* Does a directory hold a complete snapshot (a MANIFEST)? */
bool
snapshot_dir_is_complete(const char *dir)
{
	char		path[MAXPGPATH];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, MANIFEST_NAME);
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* ------------------------------------------------------ rewriting */

typedef struct RewriteContext
{
	SnapshotWriter *w;
	StateOut   *so;
	KgFileCheck *c;
	SnapshotConvertFn fn;
	void	   *arg;
	StringInfoData key;
	StringInfoData value;
} RewriteContext;

static void
rewrite_entry(void *arg, const char *key, uint32 keylen, const char *value, uint32 vallen)
{
	RewriteContext *r = arg;
	StateOut   *so = r->so;
	uint32		lens[2];

	resetStringInfo(&r->key);
	resetStringInfo(&r->value);
	r->fn(r->arg, key, keylen, value, vallen, &r->key, &r->value);
	if (so->block_kg != r->c->cur_kg)
	{
		so->block_kg = r->c->cur_kg;
		so->kg_start = so->size;
		so->kg_entries = 0;
	}
	lens[0] = (uint32) r->key.len;
	lens[1] = (uint32) r->value.len;
	appendBinaryStringInfo(&so->block, (char *) lens, sizeof(lens));
	appendBinaryStringInfo(&so->block, r->key.data, r->key.len);
	appendBinaryStringInfo(&so->block, r->value.data, r->value.len);
	so->block_entries++;
	so->kg_entries++;
	so->entries++;
	if (so->block.len >= BLOCK_TARGET)
		flush_block(r->w, so);
}

static void
rewrite_kg_done(void *arg, int key_group)
{
	RewriteContext *r = arg;
	StateOut   *so = r->so;

	if (so->block_kg != key_group)
	{
		so->kg_start = so->size;
		so->kg_entries = 0;
	}
	so->block_kg = key_group;
	flush_block(r->w, so);
	so->index[key_group].offset = (uint64) so->kg_start;
	so->index[key_group].length = (uint64) (so->size - so->kg_start);
	so->index[key_group].entries = (uint64) so->kg_entries;
	so->block_kg = -1;
}

/*
 * snapshot_rewrite_state rewrites one state's file of a snapshot directory
 * in another format, each entry passed through fn: written beside it,
 * synced, then renamed over it.  The file is verified as it is read.
 */
void
snapshot_rewrite_state(const char *dir, const StateDesc *desc, int key_groups,
					   SnapshotFormat to, SnapshotConvertFn fn, void *arg)
{
	SnapshotSource src;
	SnapshotManifest m;
	SnapshotState st;
	SnapshotWriter w;
	StateOut	so;
	KgFileCheck c;
	RewriteContext r;
	KgFileHeader h;
	char		final[MAXPGPATH];
	char		tmp[MAXPGPATH];
	struct stat sb;

	memset(&src, 0, sizeof(src));
	src.dir = dir;
	src.name = dir;
	memset(&m, 0, sizeof(m));
	m.format = SNAPSHOT_NATIVE;
	m.key_groups = key_groups;
	memset(&st, 0, sizeof(st));
	st.desc = *desc;
	snprintf(st.file, sizeof(st.file), "db-%u/%u.kg", desc->dbid, desc->id);
	snprintf(final, sizeof(final), "%s/%s", dir, st.file);
	snprintf(tmp, sizeof(tmp), "%s.tmp", final);
	if (stat(final, &sb) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat snapshot file \"%s\": %m", final)));
	st.size = sb.st_size;

	memset(&w, 0, sizeof(w));
	w.dir = (char *) dir;
	w.format = to;
	w.key_groups = key_groups;
	memset(&so, 0, sizeof(so));
	so.desc = desc;
	strlcpy(so.relpath, st.file, sizeof(so.relpath));
	strlcat(so.relpath, ".tmp", sizeof(so.relpath));
	initStringInfo(&so.block);
	so.block_kg = -1;
	so.index = palloc0(sizeof(KgIndexEntry) * key_groups);
	so.vfd = PathNameOpenFile(tmp, O_CREAT | O_TRUNC | O_WRONLY | PG_BINARY);
	if (so.vfd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create snapshot file \"%s\": %m", tmp)));
	h.magic = KG_MAGIC;
	h.version = SNAPSHOT_FORMAT_VERSION;
	h.format = (uint32) to;
	h.state_id = desc->id;
	h.key_groups = (uint32) key_groups;
	h.crc = crc_of(&h, offsetof(KgFileHeader, crc));
	out_write(&w, &so, &h, sizeof(h));

	kg_open(&src, &m, &st, &c);
	c.kg_done = rewrite_kg_done;
	r.w = &w;
	r.so = &so;
	r.c = &c;
	r.fn = fn;
	r.arg = arg;
	initStringInfo(&r.key);
	initStringInfo(&r.value);
	(void) kg_walk(&c, &m, rewrite_entry, &r);
	src_close(&c.f);

	write_index(&w, &so);
	if (FileSync(so.vfd, PG_WAIT_EXTENSION) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync snapshot file \"%s\": %m", tmp)));
	FileClose(so.vfd);
	(void) durable_rename(tmp, final, ERROR);
}

/* Is a state of a snapshot kept as a list of RocksDB files? */
bool
snapshot_state_is_sst_list(const SnapshotState *st)
{
	size_t		len = strlen(st->file);
	size_t		sfx = strlen(SNAPSHOT_SST_LIST_SUFFIX);

	return len > sfx && strcmp(st->file + len - sfx, SNAPSHOT_SST_LIST_SUFFIX) == 0;
}
