/*
 * backend/rocksdb/rocks_files.h
 *		The files of rocksdb states in a native snapshot (rocks_files.c).
 */
#ifndef STATE_BACKEND_ROCKS_FILES_H
#define STATE_BACKEND_ROCKS_FILES_H

#include "port/pg_crc32c.h"


#include "rocks_internal.h"

/* One line of rocksdb/FILES. */
typedef struct ListedFile
{
	bool		sst;
	char		name[MAXPGPATH];
	char		where[MAXPGPATH];	/* relative to the snapshot root */
	long long	size;
	unsigned int crc;
	char		sha256[STATE_DIGEST_HEX_LEN];	/* "" when not given */
} ListedFile;

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
	char		files_sha256[STATE_DIGEST_HEX_LEN];	/* of FILES, once written */
} CopiedFiles;


extern pg_crc32c rocks_copy_file(const char *src, const char *dst, bool crc_only,
								 int64 *size, char *sha256);
extern void rocks_instance_tag(char *buf, Size len);

/* Writing a snapshot's files. */
extern void rocks_files_begin(CopiedFiles *cp);
extern void rocks_files_copy(CopiedFiles *cp, const char *stagedir, const char *name,
							 const char *rdir, const char *shared_dir, const char *tag);
extern void rocks_files_finish(CopiedFiles *cp, const char *dir);
extern void rocks_files_write_list(CopiedFiles *cp, const StateInfo *state,
								   const rocksdb_livefiles_t *live, int64 entries,
								   SnapshotWriter *w);

/* Reading them. */
extern int	rocks_files_read(const char *snapdir, ListedFile **files, char *path,
							 Size pathlen);
extern void rocks_files_verify(const char *snapdir, const char *const *lists, int nlists);
extern void rocks_files_sweep(const char *root);

#endif							/* STATE_BACKEND_ROCKS_FILES_H */
