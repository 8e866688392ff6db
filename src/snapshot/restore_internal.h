/*
 * snapshot/restore_internal.h
 *		What the files of a restore share: a snapshot's section being
 *		read, the reader of its entries, and the checks of
 *		snapshot/restore_check.c that restore.c and snapshot_query.c run.
 */
#ifndef STATE_BACKEND_RESTORE_INTERNAL_H
#define STATE_BACKEND_RESTORE_INTERNAL_H

#include "format/snapshot_format.h"
#include "snapshot/canonical.h"
#include "snapshot/rescale.h"

/*
 * An EntryReader hands on a snapshot state's entries as native images:
 * canonical images converted with the types' receive functions, native ones
 * from a file not ours checked for their shape first.
 */
typedef struct EntryReader
{
	const StateDesc *desc;
	const char *source;			/* for messages */
	bool		canonical;
	bool		check;
	StateCodecs codecs;
	StringInfoData key;
	StringInfoData value;
	MemoryContext tmp;
} EntryReader;

/* The states of one section of a snapshot being restored. */
typedef struct Section
{
	int			n;
	SnapshotState **states;		/* as the snapshot has them */
	StateDesc  *descs;			/* as they will be here */
	int		   *source_backends;	/* their backend in the snapshot */
	int		   *slots;
	bool	   *native;			/* in their backend's own files */
} Section;

/* One snapshot a restore reads: its section of one database. */
typedef struct RestoreInput
{
	const SnapshotSource *src;
	SnapshotManifest *m;
	Oid			source_dbid;
	Section		sec;
	RescaleLoad *loads;			/* per state of sec: rescale_plan's */
	bool		unlogged_only;	/* a promotion's: its unlogged states, beside the rest */
} RestoreInput;

/* restore_check.c */
extern void entry_reader_init(EntryReader *r, const SnapshotSource *src,
							  const SnapshotManifest *m, const StateDesc *desc, bool check);
extern void entry_reader_native(EntryReader *r, const char **key, uint32 *keylen,
								const char **value, uint32 *vallen);
extern void resolve_desc(StateDesc *d, const SnapshotManifest *m);
extern void check_native_state(const StateDesc *d, int source_backend);
extern void verify_native_files(const char *dir, SnapshotState **states,
								const int *source_backends, const bool *native, int n);
extern int	snapshot_state_backend(const SnapshotSource *src, const SnapshotState *st, bool into);
extern const char *manifest_unregistered(const SnapshotManifest *m);
extern void check_untrusted_state(const SnapshotSource *src, const SnapshotManifest *m,
								  const SnapshotState *st, const StateDesc *d);
extern void pick_section(const SnapshotSource *src, const char *from_database,
						 RestoreInput *in);
extern bool manifest_has_ranges(const SnapshotManifest *m);
extern bool manifest_has_native(const SnapshotManifest *m);

#endif							/* STATE_BACKEND_RESTORE_INTERNAL_H */
