/*
 * format/snapshot_format.h
 *		The snapshot format: MANIFEST and per-state key-group files, their
 *		writer and their verifying reader.  A snapshot lives in a directory,
 *		or in shared memory (see snapshot/snapshot_control.c).  Record
 *		layouts are in format/records.h.
 */
#ifndef STATE_BACKEND_SNAPSHOT_H
#define STATE_BACKEND_SNAPSHOT_H

#include "access/xlogdefs.h"
#include "lib/stringinfo.h"

#include "common/signing.h"
#include "common/types.h"

#define SNAPSHOT_FORMAT_VERSION	1

/*
 * A state that its backend keeps in native files of its own has a list
 * file of this suffix instead of a key-group file (the name is the first
 * such backend's, kept so that older snapshots read as they were written).
 */
#define SNAPSHOT_NATIVE_LIST_SUFFIX	".sst.lst"

typedef enum SnapshotFormat
{
	SNAPSHOT_NATIVE,
	SNAPSHOT_CANONICAL
} SnapshotFormat;

/* One state of a snapshot, as its MANIFEST describes it. */
typedef struct SnapshotState
{
	StateDesc	desc;			/* desc.backend is not set: see "backend" */
	char		backend[NAMEDATALEN];	/* its backend's name */
	char		dbname[NAMEDATALEN];
	char		file[MAXPGPATH];	/* relative to the snapshot root */
	bool		native;			/* a list of its backend's own files */
	int64		size;
	int64		entries;
	char		sha256[SIGNING_HEX_LEN];	/* of its file; "" if not given */
	int			ngrants;
	NameData	grant_roles[STATE_MAX_GRANTS];
	uint8		grant_privs[STATE_MAX_GRANTS];
} SnapshotState;

typedef struct SnapshotManifest
{
	int64		id;
	SnapshotFormat format;
	int			server_version_num;
	uint64		system_identifier;	/* of the cluster that took it; 0 if
									 * the MANIFEST does not say */
	int			key_groups;
	XLogRecPtr	wal_position;	/* WAL position of the cut, if recorded */
	int			nstates;
	SnapshotState *states;
	int			ndbs;
	Oid		   *db_oids;
	char	  **db_names;
	bool		signed_by_key;	/* its signature is this server's key's */
} SnapshotManifest;

/*
 * Where a snapshot's files are: a directory, or an in-memory image (the
 * concatenated files of a snapshot kept in shared memory).
 */
typedef struct SnapshotSource
{
	const char *dir;			/* NULL for memory */
	const char *mem;
	Size		memlen;
	const char *name;			/* for messages */
	bool		trusted;		/* written by this server: in shared memory
								 * or under state_backend.checkpoint_dir */
} SnapshotSource;

/* Writing (the state worker). */
typedef struct SnapshotWriter SnapshotWriter;

extern SnapshotWriter *snapshot_writer_begin(const char *dir, int64 id,
											 SnapshotFormat format,
											 const StateDesc *descs,
											 const char *const *backends,
											 const bool *native, int ndescs,
											 const Oid *dboids, char **dbnames,
											 int ndbs);
extern void snapshot_writer_set_wal_position(SnapshotWriter *w, XLogRecPtr lsn);
extern void snapshot_writer_mark_checkpoint(SnapshotWriter *w);
extern char *snapshot_writer_native_path(SnapshotWriter *w, uint32 state_id);
extern void snapshot_writer_set_native(SnapshotWriter *w, uint32 state_id,
									   int64 list_size, int64 entries,
									   int64 bytes_written);
extern void snapshot_writer_add(SnapshotWriter *w, int key_group,
								const char *records, int len);
extern void snapshot_writer_close_files(SnapshotWriter *w);
extern void snapshot_writer_refresh_sizes(SnapshotWriter *w);
extern void snapshot_writer_finish(SnapshotWriter *w);
extern void snapshot_writer_abort(SnapshotWriter *w);
extern void snapshot_writer_progress(SnapshotWriter *w, int64 *entries, int64 *bytes);
extern char *snapshot_writer_memory_image(SnapshotWriter *w, Size *len);

/* Reading and verifying (restore). */
extern SnapshotManifest *snapshot_read_manifest(const SnapshotSource *src);
extern bool snapshot_trusted(const SnapshotSource *src, const SnapshotManifest *m);
extern void snapshot_verify_digest(const SnapshotSource *src, const SnapshotManifest *m,
								   const SnapshotState *st);
extern void snapshot_verify_state(const SnapshotSource *src,
								  const SnapshotManifest *m,
								  const SnapshotState *st);

typedef void (*SnapshotEntryFn) (void *arg, const char *key, uint32 keylen,
								 const char *value, uint32 vallen);
extern int64 snapshot_read_state(const SnapshotSource *src,
								 const SnapshotManifest *m,
								 const SnapshotState *st,
								 SnapshotEntryFn fn, void *arg);

typedef void (*SnapshotConvertFn) (void *arg, const char *key, uint32 keylen,
								   const char *value, uint32 vallen,
								   StringInfo key_out, StringInfo value_out);
extern void snapshot_rewrite_state(const char *dir, const StateDesc *desc,
								   int key_groups, SnapshotFormat to,
								   SnapshotConvertFn fn, void *arg);

extern bool snapshot_dir_is_complete(const char *dir);

#endif							/* STATE_BACKEND_SNAPSHOT_H */
