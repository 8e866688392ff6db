/*
 * format/snapshot_reader.c
 *		Reading a snapshot: verifying and reading a state's key-group file,
 *		and rewriting one in another format (canonical conversion).  The
 *		MANIFEST is read in manifest.c, the framing in kg_file.c.
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "utils/wait_event.h"

#include "format/format_internal.h"
#include "format/records.h"

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

/*
 * snapshot_trusted: whether a snapshot's images may be handed to their
 * types' own functions as they are, as the server's own data is.  It is
 * so for what this server wrote where only it writes (shared memory, its
 * checkpoint_dir), and for a snapshot signed with its key
 * (common/signing.c), once snapshot_verify_digest has checked the files
 * used.  Anything else is checked image by image or refused
 * (snapshot/restore.c).
 */
bool
snapshot_trusted(const SnapshotSource *src, const SnapshotManifest *m)
{
	return src->trusted || m->signed_by_key;
}

/*
 * snapshot_verify_digest checks a state's file against the digest that a
 * signed MANIFEST gives for it, when the snapshot's trust comes from its
 * signature: a file changed after it was signed is data_corrupted.
 */
void
snapshot_verify_digest(const SnapshotSource *src, const SnapshotManifest *m,
					   const SnapshotState *st)
{
	char		path[MAXPGPATH];
	char		actual[SIGNING_HEX_LEN];

	if (src->trusted || !m->signed_by_key || src->dir == NULL)
		return;
	snprintf(path, sizeof(path), "%s/%s", src->dir, st->file);
	if (st->sha256[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("snapshot \"%s\" gives no digest of its file \"%s\"", src->name, st->file)));
	file_digest_of(path, actual);
	if (strcmp(actual, st->sha256) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("snapshot file \"%s\" was changed after its snapshot was signed", path),
				 errdetail("Its SHA-256 digest is %s; the signed MANIFEST says %s.", actual, st->sha256)));
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
	n = kg_walk(&c, m, NULL, NULL);
	if (n != st->entries)
		snapshot_file_corrupt(&c.f, 0, psprintf("The file has " INT64_FORMAT " entries; the MANIFEST says " INT64_FORMAT ".",
								  n, st->entries));
	snapshot_file_close(&c.f);
}

/* snapshot_read_state hands every entry of a (verified) state to fn. */
int64
snapshot_read_state(const SnapshotSource *src, const SnapshotManifest *m,
					const SnapshotState *st, SnapshotEntryFn fn, void *arg)
{
	KgFileCheck c;
	int64		n;

	kg_open(src, m, st, &c);
	n = kg_walk(&c, m, fn, arg);
	snapshot_file_close(&c.f);
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

static void
rewrite_entry(void *arg, const char *key, uint32 keylen, const char *value, uint32 vallen)
{
	RewriteContext *r = arg;
	StateOut   *so = r->so;

	resetStringInfo(&r->key);
	resetStringInfo(&r->value);
	r->fn(r->arg, key, keylen, value, vallen, &r->key, &r->value);
	if (so->block_kg != r->c->cur_kg)
	{
		so->block_kg = r->c->cur_kg;
		so->kg_start = so->size;
		so->kg_entries = 0;
	}
	kg_add_pair(r->w, so, r->key.data, r->key.len, r->value.data, r->value.len);
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
	kg_end_key_group(r->w, so, key_group);
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
	kg_state_relpath(st.file, sizeof(st.file), desc, false);
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
	so.vfd = PathNameOpenFile(tmp, O_CREAT | O_TRUNC | O_WRONLY | PG_BINARY);
	if (so.vfd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create snapshot file \"%s\": %m", tmp)));
	kg_write_header(&w, &so, to);

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
	snapshot_file_close(&c.f);

	kg_write_index(&w, &so);
	if (FileSync(so.vfd, PG_WAIT_EXTENSION) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync snapshot file \"%s\": %m", tmp)));
	FileClose(so.vfd);
	(void) durable_rename(tmp, final, ERROR);
}
