/*
 * format/format_internal.h
 *		What the files of format/ share: the framing of a key-group (.kg)
 *		file, the writer's state, and reading a snapshot's files.
 *
 * A .kg file is a header, then blocks, then an index and a trailer:
 *	header	"SBKG" version format state-id key-groups crc
 *	block	"SBBK" key-group entries payload-length crc, then the payload:
 *			the pairs (key image, value image) of one key group
 *			(format/records.h)
 *	index	"SBIX" key-groups, then per key group (offset, length, entries),
 *			crc
 *	trailer	index offset, "SBTR", crc
 * Every CRC is CRC-32C; integers are in the server's byte order.  Their
 * one writer and one reader are in format/kg_file.c.
 */
#ifndef STATE_BACKEND_FORMAT_INTERNAL_H
#define STATE_BACKEND_FORMAT_INTERNAL_H

#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "utils/hsearch.h"

#include "common/signing.h"
#include "format/records.h"
#include "format/snapshot_format.h"

#define MANIFEST_NAME	"MANIFEST"
/* The MANIFEST's last line before its checksum, when signed. */
#define SIGNATURE_PREFIX	"signature hmac-sha256 "
#define KG_FILE_SUFFIX	".kg"

typedef struct KgIndexEntry
{
	uint64		offset;
	uint64		length;
	uint64		entries;
} KgIndexEntry;

/* One state's file being written (or, native, listed only). */
typedef struct StateOut
{
	const StateDesc *desc;
	char		backend[NAMEDATALEN];
	char		relpath[MAXPGPATH];
	bool		native;			/* its backend writes its own files */
	File		vfd;			/* -1 when writing to memory */
	StringInfoData mem;
	off_t		size;			/* bytes written, those in the writer's wbuf too */
	StringInfoData block;
	uint32		block_entries;
	int			block_kg;
	off_t		kg_start;
	int64		kg_entries;
	int64		entries;
	KgIndexEntry *index;
	char		sha256[SIGNING_HEX_LEN];	/* of the finished file */
	FileDigest *digest;			/* of the bytes written so far; NULL: none */
} StateOut;

struct SnapshotWriter
{
	char	   *dir;			/* NULL: in memory */
	bool		made_dir;		/* dir was made by this writer */
	bool		checkpoint;		/* a checkpoint's (its fault points) */
	int64		id;
	SnapshotFormat format;
	int			key_groups;
	XLogRecPtr	wal_position;	/* of the cut; InvalidXLogRecPtr: unknown */
	int			nstates;
	StateOut   *states;
	HTAB	   *by_id;			/* state id to index in states */
	int			ndbs;
	Oid		   *dboids;
	char	  **dbnames;
	int64		entries;
	int64		bytes;
	StringInfoData wbuf;		/* the end of wbuf_owner's file, to be written */
	StateOut   *wbuf_owner;
	StringInfoData manifest;
	char	   *memimage;
	Size		memimage_len;
};

/* A file of a snapshot being read: on disk, or inside a memory image. */
typedef struct SrcFile
{
	const SnapshotSource *src;
	char		name[MAXPGPATH];	/* for messages */
	File		vfd;
	const char *mem;
	off_t		size;
} SrcFile;

/* A .kg file being checked or read, key group by key group. */
typedef struct KgFileCheck
{
	SrcFile		f;
	KgIndexEntry *index;
	off_t		index_offset;
	int			cur_kg;			/* key group being walked */
	void		(*kg_done) (void *arg, int key_group);
} KgFileCheck;

/* kg_file.c: the .kg framing, and reading a snapshot's files */
extern pg_crc32c kg_crc(const void *data, Size len);
extern void kg_state_relpath(char *buf, Size len, const StateDesc *desc, bool native);
extern void kg_write_header(SnapshotWriter *w, StateOut *so, SnapshotFormat format);
extern void kg_add_pair(SnapshotWriter *w, StateOut *so, const char *key, uint32 keylen,
						const char *value, uint32 vallen);
extern void kg_add_record(SnapshotWriter *w, StateOut *so, const RecordPair *pair);
extern void kg_end_key_group(SnapshotWriter *w, StateOut *so, int key_group);
extern void kg_write_index(SnapshotWriter *w, StateOut *so);
extern void kg_open(const SnapshotSource *src, const SnapshotManifest *m,
					const SnapshotState *st, KgFileCheck *c);
extern int64 kg_walk(KgFileCheck *c, const SnapshotManifest *m,
					 SnapshotEntryFn fn, void *arg);
extern void memimage_build(SnapshotWriter *w);
extern pg_attribute_noreturn() void snapshot_file_corrupt(const SrcFile *f, off_t offset,
												const char *what);
extern void snapshot_file_open(const SnapshotSource *src, const char *relpath, SrcFile *f);
extern void snapshot_file_read(SrcFile *f, void *buf, Size len, off_t offset);
extern void snapshot_file_close(SrcFile *f);

/* manifest.c */
extern void manifest_build(SnapshotWriter *w);

#endif							/* STATE_BACKEND_FORMAT_INTERNAL_H */
