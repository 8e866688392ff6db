/*
 * format/kg_file.c
 *		The framing of key-group (.kg) files, written and read (layout in
 *		format/format_internal.h), the image of a snapshot kept in memory,
 *		and reading any file of a snapshot with every offset checked.
 *
 * Records inside blocks are pairs (format/records.h); which files a
 * snapshot has is the writer's (snapshot_writer.c) and the MANIFEST's
 * (manifest.c) business.
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "format/format_internal.h"
#include "format/records.h"

#define KG_MAGIC		0x474B4253	/* "SBKG" */
#define BLOCK_MAGIC		0x4B424253	/* "SBBK" */
#define INDEX_MAGIC		0x58494253	/* "SBIX" */
#define TRAILER_MAGIC	0x52544253	/* "SBTR" */
#define MEMIMAGE_MAGIC	0x494D4253	/* "SBMI" */

#define BLOCK_TARGET	(64 * 1024)

/*
 * Files are written in pieces of about WRITE_TARGET bytes, or when the
 * writer moves on to another state's file: the kernel copies a few large
 * writes into its page cache several times faster than many small ones.
 */
#define WRITE_TARGET	(1024 * 1024)

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

typedef struct KgTrailer
{
	uint64		index_offset;
	uint32		magic;
	uint32		crc;
} KgTrailer;

pg_crc32c
kg_crc(const void *data, Size len)
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

/* ---------------------------------------------------------------- writing */

/*
 * kg_state_relpath names a state's file, relative to the snapshot root: its
 * key-group file, or the list of a state its backend keeps in native files.
 */
void
kg_state_relpath(char *buf, Size len, const StateDesc *desc, bool native)
{
	snprintf(buf, len, "db-%u/%u%s", desc->dbid, desc->id,
			 native ? SNAPSHOT_NATIVE_LIST_SUFFIX : KG_FILE_SUFFIX);
}

/* kg_out_flush writes what the writer holds of a state's file. */
static void
kg_out_flush(SnapshotWriter *w)
{
	StateOut   *so = w->wbuf_owner;
	int			n;

	if (so == NULL || w->wbuf.len == 0)
		return;
	/* The digest the MANIFEST names is taken as the bytes go out. */
	if (so->digest)
		file_digest_add(so->digest, w->wbuf.data, w->wbuf.len);
	errno = 0;
	n = FileWrite(so->vfd, w->wbuf.data, w->wbuf.len, so->size - w->wbuf.len,
				  PG_WAIT_EXTENSION);
	if (n != w->wbuf.len)
	{
		if (n >= 0 && errno == 0)
			errno = ENOSPC;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write snapshot file \"%s/%s\": %m",
						w->dir, so->relpath)));
	}
	/*
	 * The kernel starts writing it out now, while the next bytes are made,
	 * rather than all of it at the file's fsync.
	 */
	FileWriteback(so->vfd, so->size - w->wbuf.len, w->wbuf.len, PG_WAIT_EXTENSION);
	resetStringInfo(&w->wbuf);
	w->wbuf_owner = NULL;
}

/* kg_out_write appends bytes to a state's file (or its memory copy). */
static void
kg_out_write(SnapshotWriter *w, StateOut *so, const void *data, Size len)
{
	if (so->vfd < 0)
		appendBinaryStringInfo(&so->mem, data, len);
	else
	{
		if (w->wbuf_owner != so)
			kg_out_flush(w);
		if (w->wbuf.data == NULL)
			initStringInfo(&w->wbuf);
		appendBinaryStringInfo(&w->wbuf, data, len);
		w->wbuf_owner = so;
	}
	so->size += len;
	w->bytes += len;
	if (w->wbuf.len >= WRITE_TARGET)
		kg_out_flush(w);
}

/*
 * kg_write_header starts a state's file: its header, then its blocks
 * follow, key group by key group.
 */
void
kg_write_header(SnapshotWriter *w, StateOut *so, SnapshotFormat format)
{
	KgFileHeader h;

	h.magic = KG_MAGIC;
	h.version = SNAPSHOT_FORMAT_VERSION;
	h.format = (uint32) format;
	h.state_id = so->desc->id;
	h.key_groups = (uint32) w->key_groups;
	h.crc = kg_crc(&h, offsetof(KgFileHeader, crc));
	initStringInfo(&so->block);
	so->block_kg = -1;
	so->index = palloc0(sizeof(KgIndexEntry) * w->key_groups);
	kg_out_write(w, so, &h, sizeof(h));
}

/* kg_flush_block writes the block gathered so far, if any. */
static void
kg_flush_block(SnapshotWriter *w, StateOut *so)
{
	KgBlockHeader h;

	if (so->block_entries == 0)
		return;
	h.magic = BLOCK_MAGIC;
	h.key_group = (uint32) so->block_kg;
	h.entries = so->block_entries;
	h.len = (uint32) so->block.len;
	h.crc = block_crc(&h, so->block.data);
	kg_out_write(w, so, &h, sizeof(h));
	kg_out_write(w, so, so->block.data, so->block.len);
	resetStringInfo(&so->block);
	so->block_entries = 0;
}

/* Count one entry added to the block; flush the block when it is full. */
static inline void
kg_added(SnapshotWriter *w, StateOut *so)
{
	so->block_entries++;
	so->kg_entries++;
	so->entries++;
	w->entries++;
	if (so->block.len >= BLOCK_TARGET)
		kg_flush_block(w, so);
}

/*
 * kg_add_pair adds one entry to the key group being written (so->block_kg,
 * which the caller set, with kg_start and kg_entries, when it began).
 */
void
kg_add_pair(SnapshotWriter *w, StateOut *so, const char *key, uint32 keylen,
			const char *value, uint32 vallen)
{
	record_put_pair(&so->block, key, keylen, value, vallen);
	kg_added(w, so);
}

/* kg_add_record is kg_add_pair for a pair that is already a record. */
void
kg_add_record(SnapshotWriter *w, StateOut *so, const RecordPair *pair)
{
	appendBinaryStringInfo(&so->block, pair->raw, pair->rawlen);
	kg_added(w, so);
}

/* kg_end_key_group ends a key group: its last block and its index entry. */
void
kg_end_key_group(SnapshotWriter *w, StateOut *so, int key_group)
{
	kg_flush_block(w, so);
	so->index[key_group].offset = (uint64) so->kg_start;
	so->index[key_group].length = (uint64) (so->size - so->kg_start);
	so->index[key_group].entries = (uint64) so->kg_entries;
}

/*
 * kg_write_index ends a state's file: the index, then the trailer; all of
 * it is written to the file.
 */
void
kg_write_index(SnapshotWriter *w, StateOut *so)
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
	kg_out_write(w, so, head, sizeof(head));
	kg_out_write(w, so, so->index, sizeof(KgIndexEntry) * w->key_groups);
	kg_out_write(w, so, &crc, sizeof(crc));

	t.index_offset = (uint64) index_offset;
	t.magic = TRAILER_MAGIC;
	t.crc = kg_crc(&t, offsetof(KgTrailer, crc));
	kg_out_write(w, so, &t, sizeof(t));
	kg_out_flush(w);
}

/*
 * memimage_build makes the image of a snapshot kept in shared memory: the
 * concatenated files, "SBMI" nfiles, then per file (name length, name,
 * size, bytes), the MANIFEST last.
 */
void
memimage_build(SnapshotWriter *w)
{
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

/* ---------------------------------------------------------------- reading */

void
snapshot_file_corrupt(const SrcFile *f, off_t offset, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("snapshot file \"%s\" is corrupted at offset " INT64_FORMAT,
					f->name, (int64) offset),
			 errdetail("%s", what)));
	pg_unreachable();
}

/* Find a file of an in-memory snapshot image. */
static bool
memimage_find(const SnapshotSource *src, const char *relpath, const char **data,
			  off_t *size)
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
	for (uint32 i = 0; i < n && end - p >= 4; i++)
	{
		uint32		nlen;
		uint64		len;

		memcpy(&nlen, p, 4);
		p += 4;
		if ((uint64) (end - p) < (uint64) nlen + 8)
			return false;
		memcpy(&len, p + nlen, 8);
		if ((uint64) (end - p) - nlen - 8 < len)
			return false;
		if (nlen == strlen(relpath) && memcmp(p, relpath, nlen) == 0)
		{
			*data = p + nlen + 8;
			*size = (off_t) len;
			return true;
		}
		p += nlen + 8 + len;
	}
	return false;
}

/* snapshot_file_open opens a file of a snapshot, relative to its root. */
void
snapshot_file_open(const SnapshotSource *src, const char *relpath, SrcFile *f)
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
		if (!memimage_find(src, relpath, &f->mem, &f->size))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("snapshot file \"%s\" is missing", f->name)));
	}
}

void
snapshot_file_close(SrcFile *f)
{
	if (f->vfd >= 0)
		FileClose(f->vfd);
	f->vfd = -1;
}

/* Read len bytes at offset, or report the file as truncated there. */
void
snapshot_file_read(SrcFile *f, void *buf, Size len, off_t offset)
{
	if (offset < 0 || offset + (off_t) len > f->size)
		snapshot_file_corrupt(f, offset, "The file is truncated.");
	if (f->vfd >= 0)
	{
		int			n = FileRead(f->vfd, buf, (int) len, offset, PG_WAIT_EXTENSION);

		if (n < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read snapshot file \"%s\": %m", f->name)));
		if (n != (int) len)
			snapshot_file_corrupt(f, offset, "The file is truncated.");
	}
	else
		memcpy(buf, f->mem + offset, len);
}

/* kg_open opens a state's file and checks its header, trailer and index. */
void
kg_open(const SnapshotSource *src, const SnapshotManifest *m,
		const SnapshotState *st, KgFileCheck *c)
{
	KgFileHeader h;
	KgTrailer	t;
	uint32		head[2];
	pg_crc32c	crc;
	pg_crc32c	stored;
	Size		idxlen = sizeof(KgIndexEntry) * m->key_groups;

	snapshot_file_open(src, st->file, &c->f);
	if (c->f.size != st->size)
		snapshot_file_corrupt(&c->f, Min(c->f.size, st->size),
					psprintf("The file has " INT64_FORMAT " bytes; the MANIFEST says " INT64_FORMAT ".",
							 (int64) c->f.size, st->size));
	snapshot_file_read(&c->f, &h, sizeof(h), 0);
	if (h.magic != KG_MAGIC || h.crc != kg_crc(&h, offsetof(KgFileHeader, crc)))
		snapshot_file_corrupt(&c->f, 0, "The file header is damaged.");
	if (h.version != SNAPSHOT_FORMAT_VERSION || h.state_id != st->desc.id ||
		h.key_groups != (uint32) m->key_groups || h.format != (uint32) m->format)
		snapshot_file_corrupt(&c->f, 0, "The file header does not match the MANIFEST.");

	snapshot_file_read(&c->f, &t, sizeof(t), c->f.size - (off_t) sizeof(t));
	if (t.magic != TRAILER_MAGIC || t.crc != kg_crc(&t, offsetof(KgTrailer, crc)))
		snapshot_file_corrupt(&c->f, c->f.size - (off_t) sizeof(t), "The file trailer is damaged.");
	c->index_offset = (off_t) t.index_offset;
	if (c->index_offset < (off_t) sizeof(h) ||
		c->index_offset + (off_t) (sizeof(head) + idxlen + sizeof(crc) + sizeof(t)) != c->f.size)
		snapshot_file_corrupt(&c->f, c->f.size - (off_t) sizeof(t), "The file trailer points outside the file.");

	c->index = palloc(idxlen);
	snapshot_file_read(&c->f, head, sizeof(head), c->index_offset);
	snapshot_file_read(&c->f, c->index, idxlen, c->index_offset + sizeof(head));
	snapshot_file_read(&c->f, &stored, sizeof(stored), c->index_offset + sizeof(head) + idxlen);
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, head, sizeof(head));
	COMP_CRC32C(crc, c->index, idxlen);
	FIN_CRC32C(crc);
	if (head[0] != INDEX_MAGIC || head[1] != (uint32) m->key_groups || crc != stored)
		snapshot_file_corrupt(&c->f, c->index_offset, "The key group index is damaged.");
	c->kg_done = NULL;
}

/*
 * Check one block's pairs, handing each to fn when there is one.  Returns
 * how many bytes they took.
 */
static uint32
kg_walk_block(KgFileCheck *c, off_t off, const char *payload, uint32 len,
			  uint32 entries, SnapshotEntryFn fn, void *arg)
{
	uint32		p = 0;
	RecordPair	pair;

	for (uint32 i = 0; i < entries; i++)
	{
		uint32		at = p;

		if (record_next_pair(payload, len, &p, &pair) != RECORD_OK || pair.value == NULL)
			snapshot_file_corrupt(&c->f, off + sizeof(KgBlockHeader) + at, "An entry runs past its block.");
		if (fn)
			fn(arg, pair.key, pair.keylen, pair.value, pair.vallen);
	}
	return p;
}

/*
 * kg_walk walks every block of a state's file, checking each; with fn, it
 * hands it every entry.  Returns the number of entries.
 */
int64
kg_walk(KgFileCheck *c, const SnapshotManifest *m, SnapshotEntryFn fn, void *arg)
{
	off_t		off = sizeof(KgFileHeader);
	int64		total = 0;
	char	   *payload = NULL;
	Size		cap = 0;

	for (int kg = 0; kg < m->key_groups; kg++)
	{
		KgIndexEntry *ie = &c->index[kg];
		off_t		end;
		uint64		entries = 0;

		c->cur_kg = kg;
		if (ie->offset != (uint64) off || ie->length > (uint64) (c->index_offset - off))
			snapshot_file_corrupt(&c->f, off, psprintf("The index entry of key group %d does not match the blocks.", kg));
		end = (off_t) (ie->offset + ie->length);
		while (off < end)
		{
			KgBlockHeader h;

			snapshot_file_read(&c->f, &h, sizeof(h), off);
			if (h.magic != BLOCK_MAGIC || h.key_group != (uint32) kg ||
				(off_t) h.len > end - off - (off_t) sizeof(h))
				snapshot_file_corrupt(&c->f, off, "A block header is damaged.");
			if (h.len > cap)
			{
				cap = Max(h.len, 2 * cap);
				payload = payload ? repalloc_huge(payload, cap) : palloc_extended(cap, MCXT_ALLOC_HUGE);
			}
			snapshot_file_read(&c->f, payload, h.len, off + sizeof(h));
			if (block_crc(&h, payload) != h.crc)
				snapshot_file_corrupt(&c->f, off, "A block checksum does not match.");
			if (kg_walk_block(c, off, payload, h.len, h.entries, fn, arg) != h.len)
				snapshot_file_corrupt(&c->f, off, "A block has bytes after its last entry.");
			entries += h.entries;
			off += sizeof(h) + h.len;
			CHECK_FOR_INTERRUPTS();
		}
		if (entries != ie->entries)
			snapshot_file_corrupt(&c->f, ie->offset, psprintf("Key group %d has " UINT64_FORMAT " entries; the index says " UINT64_FORMAT ".",
													kg, entries, ie->entries));
		total += entries;
		if (c->kg_done)
			c->kg_done(arg, kg);
	}
	if (off != c->index_offset)
		snapshot_file_corrupt(&c->f, off, "There are bytes between the last block and the index.");
	if (payload)
		pfree(payload);
	return total;
}
