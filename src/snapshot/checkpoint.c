/*
 * snapshot/checkpoint.c
 *		Checkpoints: snapshots the worker takes (or state.snapshot() with no
 *		path) as chk-<id> directories under state_backend.checkpoint_dir.
 *
 * A checkpoint is complete when its MANIFEST exists (format/).  Once a
 * newer one completes, all but the newest state_backend.checkpoints_retained
 * complete ones are deleted, and so is any incomplete one older than it (a
 * checkpoint a crash interrupted); then each backend's snapshot strategy
 * drops the files it shared between checkpoints that none uses any more.
 * A checkpoint a standby is loading (its LEASE file touched in the last
 * CHECKPOINT_LEASE_SECONDS) is kept meanwhile: the primary's retention
 * runs while the standby reads it from the directory both share.  A
 * standby whose WAL begins after the newest checkpoint's cut asks for a
 * new one the same way (checkpoint_request, a file the primary's worker
 * looks for each second).
 */
#include "postgres.h"

#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "common/file_perm.h"
#include "storage/fd.h"

#include "backend/keyed_backend.h"
#include "common/fault.h"
#include "common/settings.h"
#include "format/snapshot_format.h"
#include "snapshot/checkpoint.h"

/*
 * Where a failed final checkpoint is noted, in the data directory, until a
 * later checkpoint completes: the next start must not come up on older
 * state without saying so.
 */
#define FINAL_FAILED_DIR	"pg_state_backend"
#define FINAL_FAILED_FILE	FINAL_FAILED_DIR "/final_checkpoint_failed"

/*
 * checkpoint_final_failed reports that the checkpoint taken at shutdown
 * failed, loudly, and notes it for the next start.
 */
void
checkpoint_final_failed(int64 id, const char *error)
{
	int64		newest;
	char	   *dir = checkpoint_newest(state_backend_checkpoint_dir, &newest);
	char	   *note;
	FILE	   *f;

	note = dir ? psprintf("final checkpoint " INT64_FORMAT " failed: %s; the newest complete checkpoint is %s",
						  id, error, dir) :
		psprintf("final checkpoint " INT64_FORMAT " failed: %s; there is no complete checkpoint",
				 id, error);
	ereport(WARNING,
			(errmsg("state_backend could not write its final checkpoint: heap states written since the last checkpoint will be lost"),
			 errdetail("%s.", note),
			 errhint("Free the checkpoint directory's disk, then restart; or start the server and restore what was lost from your own copy. The next start reports this again.")));
	(void) pg_mkdir_p(FINAL_FAILED_DIR, pg_dir_create_mode);
	f = AllocateFile(FINAL_FAILED_FILE, "w");
	if (f != NULL)
	{
		fprintf(f, "%s\n", note);
		FreeFile(f);
	}
}

/*
 * checkpoint_warn_final_failed is called at start: if the last shutdown's
 * final checkpoint failed, say so, since the heap states just loaded (from
 * loaded_dir, or none) miss what was written after it.
 */
void
checkpoint_warn_final_failed(const char *loaded_dir)
{
	char		note[1024];
	FILE	   *f = AllocateFile(FINAL_FAILED_FILE, "r");

	if (f == NULL)
		return;
	if (fgets(note, sizeof(note), f) == NULL)
		note[0] = '\0';
	FreeFile(f);
	note[strcspn(note, "\n")] = '\0';
	ereport(WARNING,
			(errmsg("state_backend's final checkpoint at the last shutdown failed: heap states were loaded from %s and miss what was written after it",
					loaded_dir ? loaded_dir : "no checkpoint"),
			 errdetail("%s.", note),
			 errhint("This is reported at every start until a checkpoint completes (remove \"%s\" to stop it).",
					 FINAL_FAILED_FILE)));
}

/* checkpoint_path returns the directory of checkpoint id (palloc'd). */
char *
checkpoint_path(int64 id)
{
	return psprintf("%s/chk-" INT64_FORMAT, state_backend_checkpoint_dir, id);
}

/* Parse "chk-<id>"; -1 if the name is something else. */
static int64
checkpoint_id_of(const char *name)
{
	char	   *end;
	int64		id;

	if (strncmp(name, "chk-", 4) != 0 || name[4] == '\0')
		return -1;
	id = strtoll(name + 4, &end, 10);
	return (*end == '\0' && id > 0) ? id : -1;
}

/*
 * Call fn for every chk-<id> entry under root, with its path.  A root that
 * does not exist has no checkpoints.
 */
static void
checkpoint_scan(const char *root, void (*fn) (const char *path, int64 id, void *arg), void *arg)
{
	DIR		   *dir = AllocateDir(root);
	struct dirent *de;
	char		path[MAXPGPATH];

	if (dir == NULL && errno == ENOENT)
		return;
	while ((de = ReadDir(dir, root)) != NULL)
	{
		int64		id = checkpoint_id_of(de->d_name);

		if (id <= 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, de->d_name);
		fn(path, id, arg);
	}
	FreeDir(dir);
}

typedef struct NewestScan
{
	int64		id;
	int64		max_any;
} NewestScan;

static void
newest_cb(const char *path, int64 id, void *arg)
{
	NewestScan *s = arg;

	s->max_any = Max(s->max_any, id);
	if (id > s->id && snapshot_dir_is_complete(path))
		s->id = id;
}

/*
 * checkpoint_newest returns the directory of the newest complete checkpoint
 * under root, or NULL; *id gets its id.
 */
char *
checkpoint_newest(const char *root, int64 *id)
{
	NewestScan	s = {0, 0};

	checkpoint_scan(root, newest_cb, &s);
	*id = s.id;
	return s.id > 0 ? psprintf("%s/chk-" INT64_FORMAT, root, s.id) : NULL;
}

/*
 * checkpoint_read_manifest reads the MANIFEST of the server's own
 * checkpoint at dir, filling *src; NULL when it cannot be read (the error
 * is reported when report, else dropped).  For the worker, which must go
 * on whatever the checkpoint directory holds.
 */
SnapshotManifest *
checkpoint_read_manifest(const char *dir, SnapshotSource *src, bool report)
{
	MemoryContext cxt = CurrentMemoryContext;
	SnapshotManifest *volatile m = NULL;

	memset(src, 0, sizeof(*src));
	src->dir = dir;
	src->name = dir;
	src->trusted = true;		/* the server's own checkpoint */
	PG_TRY();
	{
		FAULT_POINT("restore.read_manifest");
		m = snapshot_read_manifest(src);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		if (report)
			EmitErrorReport();
		FlushErrorState();
	}
	PG_END_TRY();
	return m;
}

/* checkpoint_max_id returns the largest chk-<id> under root, complete or not. */
int64
checkpoint_max_id(const char *root)
{
	NewestScan	s = {0, 0};

	if (root == NULL || root[0] == '\0')
		return 0;
	checkpoint_scan(root, newest_cb, &s);
	return s.max_any;
}

typedef struct RetainScan
{
	int64		newest;
	int64	   *complete;
	int			ncomplete;
	int			cap;
} RetainScan;

static void
retain_cb(const char *path, int64 id, void *arg)
{
	RetainScan *s = arg;

	if (snapshot_dir_is_complete(path))
	{
		if (s->ncomplete == s->cap)
		{
			s->cap *= 2;
			s->complete = repalloc(s->complete, sizeof(int64) * s->cap);
		}
		s->complete[s->ncomplete++] = id;
	}
	else if (id < s->newest)
	{
		/* Left by a checkpoint that never completed. */
		FAULT_POINT("checkpoint.remove_incomplete");
		if (!rmtree(path, true))
			ereport(WARNING,
					(errmsg("could not remove incomplete checkpoint \"%s\"", path)));
	}
}

#define CHECKPOINT_LEASE_FILE		"LEASE"
#define CHECKPOINT_LEASE_SECONDS	600

/*
 * checkpoint_lease, on a standby about to load the checkpoint at dir: ask
 * the retention of whichever server takes checkpoints to keep it for
 * CHECKPOINT_LEASE_SECONDS; returns whether it is still complete (it may
 * have gone just before).
 */
bool
checkpoint_lease(const char *dir)
{
	char		path[MAXPGPATH];
	int			fd;

	snprintf(path, sizeof(path), "%s/%s", dir, CHECKPOINT_LEASE_FILE);
	fd = OpenTransientFile(path, O_WRONLY | O_CREAT | PG_BINARY);
	if (fd >= 0)
	{
		CloseTransientFile(fd);
		(void) utime(path, NULL);
	}
	return snapshot_dir_is_complete(dir);
}

#define CHECKPOINT_REQUEST_FILE		"checkpoint_request"

/*
 * checkpoint_request asks whichever server takes checkpoints in the
 * directory for a new one: a standby that has no checkpoint cut where its
 * WAL holds (one taken before its base backup began), or a change whose old
 * state waits for one (state_evolve.c).  A request already there stays as
 * it is.
 */
void
checkpoint_request(void)
{
	char		path[MAXPGPATH];
	int			fd;

	snprintf(path, sizeof(path), "%s/%s", state_backend_checkpoint_dir, CHECKPOINT_REQUEST_FILE);
	if (pg_mkdir_p(state_backend_checkpoint_dir, pg_dir_create_mode) != 0 && errno != EEXIST)
		return;
	fd = OpenTransientFile(path, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY);
	if (fd >= 0)
		CloseTransientFile(fd);
}

/*
 * checkpoint_take_request, in the worker of a primary: whether a standby or
 * a change asked for a checkpoint (checkpoint_request); the request is taken, and
 * the caller takes one.
 */
bool
checkpoint_take_request(void)
{
	char		path[MAXPGPATH];

	if (state_backend_checkpoint_dir[0] == '\0')
		return false;
	snprintf(path, sizeof(path), "%s/%s", state_backend_checkpoint_dir, CHECKPOINT_REQUEST_FILE);
	return unlink(path) == 0;
}

/* Is the checkpoint at path leased by a standby loading it? */
static bool
checkpoint_leased(const char *path)
{
	char		lease[MAXPGPATH];
	struct stat st;

	snprintf(lease, sizeof(lease), "%s/%s", path, CHECKPOINT_LEASE_FILE);
	return stat(lease, &st) == 0 && time(NULL) - st.st_mtime < CHECKPOINT_LEASE_SECONDS;
}

/*
 * remove_checkpoint deletes a checkpoint directory, its MANIFEST first so
 * that a deletion cut short never leaves something that looks complete.
 */
static bool
remove_checkpoint(const char *path)
{
	char		manifest[MAXPGPATH];

	snprintf(manifest, sizeof(manifest), "%s/MANIFEST", path);
	if (unlink(manifest) != 0 && errno != ENOENT)
		return false;
	return rmtree(path, true);
}

static int
cmp_desc(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x < y) ? 1 : (x > y) ? -1 : 0;
}

/*
 * checkpoint_retain deletes the complete checkpoints beyond the newest
 * state_backend.checkpoints_retained, after checkpoint newest_id completed.
 */
void
checkpoint_retain(int64 newest_id)
{
	RetainScan	s;
	int			n;
	const KeyedStateBackend *const *all;

	FAULT_POINT("checkpoint.retention");
	/* A checkpoint completed: a failed final one no longer matters. */
	if (unlink(FINAL_FAILED_FILE) != 0 && errno != ENOENT)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not remove \"%s\": %m", FINAL_FAILED_FILE)));
	s.newest = newest_id;
	s.cap = 16;
	s.ncomplete = 0;
	s.complete = palloc(sizeof(int64) * s.cap);
	checkpoint_scan(state_backend_checkpoint_dir, retain_cb, &s);
	qsort(s.complete, s.ncomplete, sizeof(int64), cmp_desc);
	for (int i = state_backend_checkpoints_retained; i < s.ncomplete; i++)
	{
		char	   *path = checkpoint_path(s.complete[i]);

		FAULT_POINT("checkpoint.remove_old");
		if (checkpoint_leased(path))
			ereport(DEBUG1, (errmsg("kept checkpoint \"%s\": a standby loads it", path)));
		else if (!remove_checkpoint(path))
			ereport(WARNING,
					(errmsg("could not remove old checkpoint \"%s\"", path)));
		else
			ereport(DEBUG1, (errmsg("removed checkpoint \"%s\"", path)));
	}
	pfree(s.complete);
	FAULT_POINT("checkpoint.after_retention");
	all = keyed_backend_all(&n);
	for (int i = 0; i < n; i++)
		if (all[i]->snapshot->after_retention)
			all[i]->snapshot->after_retention(state_backend_checkpoint_dir);
}
