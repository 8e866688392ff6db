/*
 * backend/rocksdb/rocks_instance.c
 *		The state worker's RocksDB instance: one under
 *		state_backend.rocksdb_dir, a column family per state, and the
 *		descriptors of rocksdb states kept in its default column family, so
 *		that they come back with their data after a crash.
 *
 * RocksDB's threads only run the merge operator and the compaction filter,
 * which are plain C with malloc: no PostgreSQL code.  They start at open,
 * with every signal blocked, so signals keep going to the worker's own
 * thread.  The options are made in rocks_options.c, compactions asked for
 * run in rocks_compact.c, requests are served in rocks_requests.c,
 * snapshots in rocks_snapshot.c.
 */
#include "postgres.h"

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "access/xlog.h"
#include "common/file_perm.h"
#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "rocks_internal.h"

RocksInstance rocks = {0};

/* A column family the worker has open, by state id. */
typedef struct RocksFamily
{
	uint32		id;				/* hash key */
	rocksdb_column_family_handle_t *handle;
	bool		persisted;		/* its descriptor is in the default family */
	bool		unadopted;		/* stored, but not in the registry: left alone */
	char	   *image;			/* its descriptor as persisted (the host's
								 * image, in TopMemoryContext), or NULL */
	uint32		image_len;
	char		name[32];		/* rocks_ttl.c: rocks_family_name */
} RocksFamily;

static HTAB *families = NULL;

/*
 * The worker's own RocksDB perf context: RocksDB counts, per thread, the
 * blocks its reads found in the block cache and those it read from files.
 * The state worker makes every read of the instance, so these are its
 * block cache hits and misses since the worker started.
 */
static rocksdb_perfcontext_t *perf = NULL;
static uint64 synced_version = 0;

#define DESC_KEY_PREFIX		"desc:"

/*
 * The end of the last WAL record whose change the instance holds, written
 * in the same batch as the change: recovery skips what is already here.
 */
#define APPLIED_LSN_KEY		"applied_lsn"

/*
 * The number of key groups the instance's keys are stored under (each key
 * starts with its key group).  When state_backend.max_parallelism is not
 * that number, its states' keys would not be found: they are left alone,
 * unused, and no state is created in the instance (written_key_groups > 0)
 * until the setting is put back.
 */
#define KEY_GROUPS_KEY		"key_groups"

static int32 written_key_groups = 0;

/*
 * Set, durably, before the first column family that a start-up load from a
 * checkpoint creates (rocks_begin_load), and removed once the loaded
 * states' descriptors are stored (rocks_end_load).  Until then the states
 * are hidden and have no descriptor: an instance found with it was left by
 * a start that did not finish, and holds nothing that is kept; the states
 * come from the checkpoint again (rocks_adopt_states).
 */
#define LOADING_KEY			"loading_from_checkpoint"

static bool load_running = false;	/* between rocks_begin_load and _end_ */
static bool states_adopted = false; /* rocks_adopt_states found an instance */
static bool loading_marked = false; /* LOADING_KEY was written */

/* Write or remove LOADING_KEY, synced. */
static void
mark_loading(bool on)
{
	rocksdb_writeoptions_t *sync = rocksdb_writeoptions_create();
	char	   *err = NULL;

	rocksdb_writeoptions_set_sync(sync, 1);
	if (on)
		rocksdb_put_cf(rocks.db, sync, rocks.deflt, LOADING_KEY, strlen(LOADING_KEY), "1", 1, &err);
	else
		rocksdb_delete_cf(rocks.db, sync, rocks.deflt, LOADING_KEY, strlen(LOADING_KEY), &err);
	rocksdb_writeoptions_destroy(sync);
	rocks_check(err, on ? "mark a load from a checkpoint" : "end a load from a checkpoint");
	loading_marked = on;
}

/* Store this server's key-group count as the instance's. */
static void
record_key_groups(void)
{
	int32		n = (*rocks_host->max_parallelism);
	char	   *err = NULL;

	rocksdb_put_cf(rocks.db, rocks.wopts, rocks.deflt, KEY_GROUPS_KEY, strlen(KEY_GROUPS_KEY),
				   (const char *) &n, sizeof(n), &err);
	rocks_check(err, "record its key groups");
	written_key_groups = 0;
}

/*
 * check_key_groups reads the key groups the open instance was written
 * with, and records this server's when it has none yet.
 */
static void
check_key_groups(void)
{
	size_t		vlen;
	char	   *v = rocks_get(rocks.deflt, KEY_GROUPS_KEY, strlen(KEY_GROUPS_KEY), &vlen);
	int32		n = 0;

	if (v != NULL && vlen == sizeof(n))
		memcpy(&n, v, sizeof(n));
	if (v != NULL)
		rocksdb_free(v);
	if (n > 0 && n != (*rocks_host->max_parallelism))
		written_key_groups = n;
	else if (n == 0)
		record_key_groups();
}


/*
 * rocks_check turns a RocksDB error into an ERROR with its message.  The C
 * API returns errors as malloc'd strings, never as exceptions.
 */
void
rocks_check(char *err, const char *what)
{
	char	   *msg;

	if (err == NULL)
		return;
	msg = pstrdup(err);
	rocksdb_free(err);
	ereport(ERROR,
			(errcode(ERRCODE_IO_ERROR),
			 errmsg("rocksdb could not %s: %s", what, msg)));
}


static bool
rocks_dir_exists(void)
{
	char		current[MAXPGPATH];
	struct stat st;

	snprintf(current, sizeof(current), "%s/CURRENT", state_backend_rocksdb_dir);
	return stat(current, &st) == 0;
}

/*
 * rocks_set_aside moves the instance's directory out of the way, unopened,
 * to <rocksdb_dir>.set-aside (replacing an older one there), because of
 * why: after a standby's promotion, what the directory holds is the copy
 * pg_basebackup took of a running primary's files, not a consistent
 * instance; after a start that did not finish loading, a part of a
 * checkpoint.  rocksdb states are loaded from the newest checkpoint.
 */
void
rocks_set_aside(const char *why)
{
	char		aside[MAXPGPATH];
	struct stat st;

	Assert(rocks.db == NULL);
	if (!rocks_dir_exists())
		return;
	snprintf(aside, sizeof(aside), "%s.set-aside", state_backend_rocksdb_dir);
	if (stat(aside, &st) == 0)
		(void) rmtree(aside, true);
	if (rename(state_backend_rocksdb_dir, aside) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rename \"%s\" to \"%s\": %m",
						state_backend_rocksdb_dir, aside)));
	ereport(LOG,
			(errmsg("state_backend set the rocksdb directory aside as \"%s\": %s, so rocksdb states are loaded from the newest checkpoint",
					aside, why)));
}

/*
 * The room RocksDB may need on the file system of rocksdb_dir beyond what
 * a write adds: a flush of every write buffer (twice, for the compaction
 * that may follow) and its logs and MANIFEST.  RocksDB does not survive a
 * write that fails for want of space (it aborts at the next one), so it
 * is given none to fail: below this much free space, nothing is written.
 */
static uint64
space_needed(void)
{
	return ((uint64) state_backend_rocksdb_write_buffer_mb * 2 + 8) * 1024 * 1024;
}

/*
 * rocks_check_space raises disk_full, before RocksDB is asked to write,
 * when the file system of rocksdb_dir has less room than space_needed.
 */
void
rocks_check_space(void)
{
	rocks_check_space_for(0);
}

/*
 * space_short: whether the file system of rocksdb_dir has less room than
 * RocksDB keeps free plus extra bytes (what it has in *avail); false when
 * it cannot be measured (RocksDB will say).
 */
static bool
space_short(uint64 extra, uint64 *avail)
{
	struct statvfs fs;
	char		dir[MAXPGPATH];

	strlcpy(dir, state_backend_rocksdb_dir, sizeof(dir));
	/* Before the instance exists: the nearest directory that does. */
	while (statvfs(dir, &fs) != 0)
	{
		char	   *slash = strrchr(dir, '/');

		if (errno != ENOENT || slash == NULL)
			return false;
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
		if (strcmp(dir, "/") == 0 && statvfs(dir, &fs) != 0)
			return false;
	}
	*avail = (uint64) fs.f_bavail * fs.f_frsize;
	return *avail < space_needed() + extra;
}

/*
 * rocks_check_space_for: rocks_check_space, with room for "extra" bytes to
 * be written besides (a transactional commit's, checked in its session
 * before its commit record).
 */
void
rocks_check_space_for(uint64 extra)
{
	uint64		avail;

	if (space_short(extra, &avail))
		ereport(ERROR,
				(errcode(ERRCODE_DISK_FULL),
				 errmsg("rocksdb states cannot be written: the file system of \"%s\" has %llu kB free, and %llu kB must stay free",
						state_backend_rocksdb_dir, (unsigned long long) (avail / 1024),
						(unsigned long long) ((space_needed() + extra) / 1024)),
				 errdetail("RocksDB keeps room for a flush of its write buffers (twice state_backend.rocksdb_write_buffer_size, and 8 MB)."),
				 errhint("Free space on that file system; rocksdb states are written again once there is room.")));
}

/* After a failed write RocksDB must not be written again: see space_needed. */
void
rocks_check_not_failed(void)
{
	if (rocks.failed)
		ereport(ERROR,
				(errcode(ERRCODE_IO_ERROR),
				 errmsg("the rocksdb instance stopped after a failed write"),
				 errdetail("The state worker restarts, and opens it again once there is room.")));
}

/* Whether a write failed: the worker then restarts (worker.c). */
bool
rocks_failed(void)
{
	return rocks.failed;
}

/*
 * RocksDB keeps a directory handle open per column family, besides its
 * table files (max_open_files) and logs: with a thousand rocksdb states
 * the worker reached the usual soft limit of 1024 open files, and a flush
 * failed with "Too many open files".  The worker runs with the hard limit.
 */
static void
raise_open_files_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		elog(LOG, "state_backend: could not raise the limit of open files: %m");
}

/*
 * rocks_open opens (creating if need be) the instance with every column
 * family it has.  Opening writes (a log, a MANIFEST): not below
 * space_needed.
 */
void
rocks_open(void)
{
	char	   *err = NULL;
	char	  **names = NULL;
	size_t		nnames = 0;
	char	  **listed = NULL;
	size_t		nlisted = 0;
	const rocksdb_options_t **cfopts;
	rocksdb_column_family_handle_t **handles;
	sigset_t	saved;
	HASHCTL		ctl;
	uint64		avail;

	if (rocks.db)
		return;
	rocks_check_not_failed();
	rocks_check_space();
	rocks_options_ready();
	rocks_apply_settings();
	raise_open_files_limit();
	if (pg_mkdir_p(state_backend_rocksdb_dir, pg_dir_create_mode) != 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", state_backend_rocksdb_dir)));

	if (rocks_dir_exists())
	{
		listed = rocksdb_list_column_families(rocks.options, state_backend_rocksdb_dir,
											  &nlisted, &err);
		rocks_check(err, "list its column families");
		names = listed;
		nnames = nlisted;
	}
	if (nnames == 0)
	{
		static char *deflt[] = {"default"};

		names = deflt;
		nnames = 1;
	}
	cfopts = palloc(sizeof(rocksdb_options_t *) * nnames);
	handles = palloc0(sizeof(rocksdb_column_family_handle_t *) * nnames);
	for (size_t i = 0; i < nnames; i++)
		cfopts[i] = rocks_family_options(names[i]);

	rocks_block_signals(&saved);
	rocks.db = rocksdb_open_column_families(rocks.options, state_backend_rocksdb_dir,
											(int) nnames, (const char *const *) names,
											cfopts, handles, &err);
	rocks_restore_signals(&saved);
	if (err && listed)
		rocksdb_list_column_families_destroy(listed, nlisted);
	rocks_check(err, "open its database");

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(uint32);
	ctl.entrysize = sizeof(RocksFamily);
	ctl.hcxt = TopMemoryContext;
	families = hash_create("state_backend rocksdb families", 64, &ctl,
						   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	for (size_t i = 0; i < nnames; i++)
	{
		uint32		id;
		RocksFamily *f;
		bool		found;

		if (strcmp(names[i], "default") == 0)
		{
			rocks.deflt = handles[i];
			continue;
		}
		if (!rocks_family_id(names[i], &id))
			continue;
		f = hash_search(families, &id, HASH_ENTER, &found);
		f->handle = handles[i];
		f->image = NULL;
		f->persisted = false;
		f->unadopted = false;
		strlcpy(f->name, names[i], sizeof(f->name));
	}
	if (names && nnames > 0 && rocks.deflt != handles[0] && strcmp(names[0], "default") != 0)
		elog(LOG, "state_backend: rocksdb instance without a default column family");
	/* The names RocksDB listed are its to free, however many there were. */
	if (listed)
		rocksdb_list_column_families_destroy(listed, nlisted);
	rocks.batch = rocksdb_writebatch_create();
	if (perf == NULL)
		perf = rocksdb_perfcontext_create();
	check_key_groups();
	/*
	 * What an earlier worker cached may not be what the instance holds.
	 * Views are told first: sessions then store nothing of what they read.
	 */
	rocks_view_new_instance();
	rocks_cache_clear();
	/* What RocksDB replayed of its log, in table files for sessions' views. */
	if (!space_short(0, &avail))
		rocks_flush_all();
	rocks.applied_lsn = rocks_applied_lsn();
	ereport(LOG, (errmsg("state_backend opened rocksdb instance \"%s\"", state_backend_rocksdb_dir)));
}

/* Batches written, and how many of them the last flush holds. */
static uint64 batches_written = 0;
static uint64 batches_flushed = 0;

/*
 * rocks_flush_idle, between rounds: once the instance has written nothing
 * for ROCKS_IDLE_FLUSH_MS, its memtables go to table files.  Sessions'
 * views then open without replaying the log and keep no copy of it (a
 * view replays every live log into memtables of its own), their reads
 * skip the memtables, and a start has nothing to replay.  Not when the
 * file system is short of room: writes are refused then anyway.
 */
void
rocks_flush_idle(void)
{
	static uint64 seen = 0;
	static TimestampTz seen_at = 0;
	TimestampTz now;
	uint64		avail;

	if (rocks.db == NULL || rocks.failed || batches_written == batches_flushed)
		return;
	now = GetCurrentTimestamp();
	if (batches_written != seen)
	{
		seen = batches_written;
		seen_at = now;
		return;
	}
	if (!TimestampDifferenceExceeds(seen_at, now, ROCKS_IDLE_FLUSH_MS) || space_short(0, &avail))
		return;
	rocks_commit();
	rocks_flush_all();
	batches_flushed = batches_written;
}

/* rocks_flush_all writes every family's memtable to SST files. */
void
rocks_flush_all(void)
{
	HASH_SEQ_STATUS seq;
	RocksFamily *f;
	char	   *err = NULL;
	uint64		epoch = rocks_view_epoch();	/* what the flush holds */

	rocks_check_space();

	rocksdb_flush_cf(rocks.db, rocks.flushopts, rocks.deflt, &err);
	rocks_check(err, "flush");
	hash_seq_init(&seq, families);
	while ((f = hash_seq_search(&seq)) != NULL)
	{
		rocks_host->progress();
		rocksdb_flush_cf(rocks.db, rocks.flushopts, f->handle, &err);
		if (err)
		{
			hash_seq_term(&seq);
			rocks_check(err, "flush");
		}
	}
	rocks_view_flushed(epoch);
}

bool
rocks_is_open(void)
{
	return rocks.db != NULL;
}

/*
 * rocks_open_existing opens the instance if there is one on disk (a
 * fresh server has none until the first rocksdb state).  Returns whether
 * it is open.
 */
bool
rocks_open_existing(void)
{
	if (!rocks.db && rocks_dir_exists())
		rocks_open();
	return rocks.db != NULL;
}

/*
 * rocks_close_commit: the writes the batch holds go into the instance
 * before it closes, whatever ends the worker (an error that ends the
 * process, a shutdown).  Their logged changes' records are in WAL, and a
 * worker that starts again on its own replays none: a batch lost here would
 * leave the instance behind WAL, and behind its standbys, for good (the
 * next commit stamps a later applied position).  A staged commit's writes
 * gathered for it are not made (rocks_commit_held): the next start applies
 * the stage again.
 */
static void
rocks_close_commit(void)
{
	MemoryContext cxt = CurrentMemoryContext;

	if (rocks.failed)
		return;
	PG_TRY();
	{
		rocks_commit();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		EmitErrorReport();
		FlushErrorState();
	}
	PG_END_TRY();
}

/*
 * rocks_restart_for_replay: changes of logged states whose records are in
 * WAL were not written to the instance, and never will be by this process
 * (its writes failed).  A worker that starts again on its own replays no
 * WAL, and the next commit would stamp a later applied position: the
 * instance would stay behind WAL and its standbys for good.  So the
 * server's processes restart (exit code 2, as for a crash), and the start
 * replays WAL from the position the instance holds.  Should its writes
 * fail again there, the start waits for the cause to be fixed
 * (logged_start_wait) rather than restarting again.
 */
static void
rocks_restart_for_replay(void)
{
	ereport(LOG,
			(errmsg("state_backend restarts the server's processes: changes of logged rocksdb states that are in WAL could not be written to the instance"),
			 errdetail("The start replays them from WAL.")));
	_exit(2);
}

void
rocks_close(void)
{
	HASH_SEQ_STATUS seq;
	RocksFamily *f;

	if (!rocks.db)
		return;
	rocks_close_commit();
	rocks_compact_forget(0);
	rocksdb_cancel_all_background_work(rocks.db, 1);
	/* After a failed write, closing would write: the process ends instead. */
	if (rocks.failed)
	{
		if (rocks.lost_logged || rocks.batch_lsn != InvalidXLogRecPtr)
			rocks_restart_for_replay();
		return;
	}
	/* Every column family handle goes before the instance. */
	hash_seq_init(&seq, families);
	while ((f = hash_seq_search(&seq)) != NULL)
	{
		rocksdb_column_family_handle_destroy(f->handle);
		if (f->image)
			pfree(f->image);
	}
	hash_destroy(families);
	families = NULL;
	if (rocks.deflt)
		rocksdb_column_family_handle_destroy(rocks.deflt);
	rocks.deflt = NULL;
	rocksdb_close(rocks.db);
	rocks.db = NULL;
	rocks.applied_lsn = InvalidXLogRecPtr;
	rocks_view_new_instance();
	rocks_cache_clear();
}

static void
desc_key(uint32 id, char *buf, Size len)
{
	snprintf(buf, len, DESC_KEY_PREFIX "%08x", id);
}

/* family_keep_image remembers the descriptor image a family's state has stored. */
static void
family_keep_image(RocksFamily *f, const char *image, uint32 len)
{
	if (f->image)
		pfree(f->image);
	f->image = MemoryContextAlloc(TopMemoryContext, Max(len, 1));
	memcpy(f->image, image, len);
	f->image_len = len;
	f->persisted = true;
}

/*
 * rocks_wal_flush: WAL before data, as PostgreSQL's buffer manager flushes
 * WAL up to a page's LSN before it writes the page.  What the instance
 * writes outlives a crash of the server's processes (RocksDB's own log), so
 * WAL is flushed to "upto" first: else a crash that loses the end of WAL
 * (synchronous_commit off, or a session that had not committed yet) leaves
 * the instance ahead of WAL, of the other logged states and of standbys,
 * for good.  Nothing while replaying or in recovery: that WAL is in.
 */
void
rocks_wal_flush(XLogRecPtr upto)
{
	if (upto != InvalidXLogRecPtr && rocks_host->replaying() == InvalidXLogRecPtr &&
		!RecoveryInProgress())
		XLogFlush(upto);
}

/*
 * wal_flush_inserted, before a state's descriptor is stored or removed: the
 * record that creates or drops a logged state was written before the worker
 * got here (by the session, or by the registry), so every record inserted
 * so far is flushed: no crash leaves the instance with a state that WAL
 * never created, or without one that WAL still has.
 */
static void
wal_flush_inserted(void)
{
	rocks_wal_flush(GetXLogInsertEndRecPtr());
}

static void
family_persist(RocksFamily *f, const StringInfo image)
{
	char		key[32];
	char	   *err = NULL;

	wal_flush_inserted();
	desc_key(f->id, key, sizeof(key));
	rocksdb_put_cf(rocks.db, rocks.wopts, rocks.deflt, key, strlen(key),
				   image->data, image->len, &err);
	rocks_check(err, "store a state descriptor");
	family_keep_image(f, image->data, (uint32) image->len);
}

/*
 * family_sync stores the descriptor of a family's state when it is new or
 * changed, as the host gives it to keep (a state a restore is still filling
 * waits).  False when the state is gone.
 */
static bool
family_sync(RocksFamily *f)
{
	StringInfoData image;
	bool		hidden;
	bool		live;

	initStringInfo(&image);
	live = rocks_host->state_stored(f->id, &image, &hidden);
	if (live && !hidden &&
		(!f->persisted || f->image_len != (uint32) image.len ||
		 memcmp(f->image, image.data, image.len) != 0))
		family_persist(f, &image);
	pfree(image.data);
	return live;
}

static void
family_drop(RocksFamily *f)
{
	char		key[32];
	char	   *err = NULL;
	uint32		id = f->id;

	/* Writes gathered for it are made first: a batch naming a dropped family fails. */
	rocks_commit();
	wal_flush_inserted();

	desc_key(id, key, sizeof(key));
	rocksdb_delete_cf(rocks.db, rocks.wopts, rocks.deflt, key, strlen(key), &err);
	rocks_check(err, "remove a state descriptor");
	rocksdb_drop_column_family(rocks.db, f->handle, &err);
	rocks_compact_forget(id);
	/* A view would go on reading a dropped family: every view opens again. */
	rocks_view_new_instance();
	rocks_cache_forget_state(id);
	rocks_check(err, "drop a column family");
	rocksdb_column_family_handle_destroy(f->handle);
	if (f->image)
		pfree(f->image);
	hash_search(families, &id, HASH_REMOVE, NULL);
}

/*
 * rocks_family returns the column family of a state, creating it on the
 * state's first use.  The state must be live in the registry.
 */
rocksdb_column_family_handle_t *
rocks_family(uint32 id, int slot)
{
	RocksFamily *f;
	bool		found;
	StateInfo	info;
	bool		hidden;
	char		name[32];
	char	   *err = NULL;

	rocks_open();
	f = hash_search(families, &id, HASH_FIND, NULL);
	if (f && !f->unadopted)
		return f->handle;
	if (!rocks_host->state_get(slot, id, &info, &hidden))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("state was dropped while this statement used it")));
	/* Reserved (rocks_adopt_states): never a new state's. */
	if (f)
		elog(ERROR, "state_backend: state %u names a rocksdb column family left unused", id);
	if (written_key_groups > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("rocksdb states cannot be created: the rocksdb instance holds keys of %d key groups, and state_backend.max_parallelism is %d",
						written_key_groups, (*rocks_host->max_parallelism)),
				 errhint("Set state_backend.max_parallelism back to %d and restart the server.",
						 written_key_groups)));
	rocks_family_name(name, sizeof(name), &info);
	if (load_running && !loading_marked)
		mark_loading(true);
	f = hash_search(families, &id, HASH_ENTER, &found);
	f->handle = rocksdb_create_column_family(rocks.db, rocks_family_options(name), name, &err);
	if (err)
		hash_search(families, &id, HASH_REMOVE, NULL);
	rocks_check(err, "create a column family");
	f->image = NULL;
	f->persisted = false;
	f->unadopted = false;
	strlcpy(f->name, name, sizeof(f->name));
	if (!hidden)
		(void) family_sync(f);
	return f->handle;
}

/* Whether the registry changed since the instance was last brought in line with it. */
bool
rocks_registry_changed(void)
{
	return rocks.db != NULL && rocks_host->states_version() != synced_version;
}

/*
 * rocks_sync_registry brings the instance in line with the registry:
 * descriptors of new or changed states are stored, column families of
 * dropped states are dropped.  Cheap when nothing changed.
 */
void
rocks_sync_registry(void)
{
	HASH_SEQ_STATUS seq;
	RocksFamily *f;
	uint64		version = rocks_host->states_version();
	uint32	   *gone;
	int			ngone = 0;

	/* A failed instance is not written again (the worker exits). */
	if (!rocks.db || rocks.failed || version == synced_version)
		return;
	gone = palloc(sizeof(uint32) * (hash_get_num_entries(families) + 1));
	hash_seq_init(&seq, families);
	while ((f = hash_seq_search(&seq)) != NULL)
	{
		if (f->unadopted)
			continue;
		/* A restore's publication is stored once it is durable in WAL. */
		if (!family_sync(f))
			gone[ngone++] = f->id;
	}
	for (int i = 0; i < ngone; i++)
	{
		f = hash_search(families, &gone[i], HASH_FIND, NULL);
		family_drop(f);
	}
	pfree(gone);
	synced_version = version;
}

/* Whether the open instance was left by a load that did not finish. */
static bool
load_was_interrupted(void)
{
	size_t		vlen;
	char	   *v = rocks_get(rocks.deflt, LOADING_KEY, strlen(LOADING_KEY), &vlen);

	if (v == NULL)
		return false;
	rocksdb_free(v);
	return true;
}

/*
 * rocks_begin_load: the states restored at start until rocks_end_load come
 * from a checkpoint, into an instance that keeps none of its own.
 */
void
rocks_begin_load(void)
{
	load_running = true;
}

/*
 * rocks_end_load, once every state is loaded and published: their
 * descriptors are stored, then the instance is marked whole again.
 */
void
rocks_end_load(void)
{
	load_running = false;
	if (!loading_marked || !rocks.db)
		return;
	rocks_commit();
	rocks_sync_registry();
	mark_loading(false);
}

/*
 * rocks_adopt_states puts the descriptors kept in the instance back into
 * a fresh registry (server start, crash restart), and drops column
 * families that have none (states dropped or being restored at the crash).
 * An instance that a start-up load left unfinished is set aside instead:
 * returns false, as for no instance, and the checkpoint's rocksdb states
 * are loaded again.
 */
bool
rocks_adopt_states(void)
{
	rocksdb_iterator_t *it;
	HASH_SEQ_STATUS seq;
	RocksFamily *f;
	uint32	   *orphans;
	int			norphans = 0;
	int			nforeign = 0;
	char	   *err = NULL;

	if (!rocks_open_existing())
		return false;
	if (load_was_interrupted())
	{
		rocks_close();
		rocks_set_aside("a start that loaded rocksdb states from a checkpoint did not finish");
		return false;
	}
	it = rocksdb_create_iterator_cf(rocks.db, rocks.ropts, rocks.deflt);
	for (rocksdb_iter_seek(it, DESC_KEY_PREFIX, strlen(DESC_KEY_PREFIX));
		 rocksdb_iter_valid(it); rocksdb_iter_next(it))
	{
		size_t		klen;
		size_t		vlen;
		const char *k = rocksdb_iter_key(it, &klen);
		const char *v = rocksdb_iter_value(it, &vlen);
		StateInfo	info;
		const char *problem;
		uint32		id;
		char		expected[32];

		if (klen < strlen(DESC_KEY_PREFIX) || memcmp(k, DESC_KEY_PREFIX, strlen(DESC_KEY_PREFIX)) != 0)
			break;
		/* Older descriptors (the struct as stored) lack what came later. */
		if (vlen > PG_UINT32_MAX || !rocks_host->image_info(v, (uint32) vlen, &info, &problem))
			continue;
		id = info.id;
		f = hash_search(families, &id, HASH_FIND, NULL);
		if (f == NULL)
			continue;
		family_keep_image(f, v, (uint32) vlen);
		if (written_key_groups > 0)
		{
			/* Its keys are under other key groups: keep them, unused. */
			f->unadopted = true;
			nforeign++;
			continue;
		}
		rocks_family_name(expected, sizeof(expected), &info);
		if (problem != NULL ||
			strcmp(f->name, expected) != 0)
		{
			/* Read in the wrong layout, its values would be lost: keep them. */
			f->unadopted = true;
			ereport(WARNING,
					(errmsg("the stored descriptor of rocksdb state %u does not match its column family \"%s\"",
							id, f->name),
					 errdetail("Its data stays on disk, unused.")));
			continue;
		}
		/* A state that does not fit (max_states) keeps its data on disk. */
		f->unadopted = !rocks_host->adopt(v, (uint32) vlen);
		if (f->unadopted)
			ereport(WARNING,
					(errmsg("state \"%s\" of the rocksdb backend does not fit in state_backend.max_states",
							NameStr(info.name)),
					 errdetail("Its data stays on disk."),
					 errhint("Raise state_backend.max_states and restart the server.")));
	}
	rocksdb_iter_get_error(it, &err);
	rocksdb_iter_destroy(it);
	rocks_check(err, "read the state descriptors");
	/* States left unused keep their ids: no new state may take one. */
	hash_seq_init(&seq, families);
	while ((f = hash_seq_search(&seq)) != NULL)
		if (f->unadopted)
			rocks_host->reserve_id(f->id);
	if (nforeign > 0)
		ereport(WARNING,
				(errmsg("%d rocksdb states are not loaded: their keys are stored under %d key groups, and state_backend.max_parallelism is %d",
						nforeign, written_key_groups, (*rocks_host->max_parallelism)),
				 errdetail("Their data stays on disk, unused, and no rocksdb state can be created meanwhile."),
				 errhint("Set state_backend.max_parallelism back to %d and restart the server; to change it, move the states with a canonical snapshot first.",
						 written_key_groups)));
	else if (written_key_groups > 0)
		record_key_groups();	/* no state left of the old count */

	orphans = palloc(sizeof(uint32) * (hash_get_num_entries(families) + 1));
	hash_seq_init(&seq, families);
	while ((f = hash_seq_search(&seq)) != NULL)
		if (!f->persisted)
			orphans[norphans++] = f->id;
	for (int i = 0; i < norphans; i++)
	{
		f = hash_search(families, &orphans[i], HASH_FIND, NULL);
		family_drop(f);
	}
	synced_version = rocks_host->states_version();
	states_adopted = true;
	return true;
}

/* KeyedStateBackend.kept_data: rocksdb states came back from the instance. */
bool
rocks_kept_data(void)
{
	return states_adopted;
}


/* While set, rocks_commit gathers instead of writing: one batch for a stage (rocks_stage.c). */
bool		rocks_commit_held = false;

/* Whether writes wait in the batch for a commit. */
bool
rocks_batch_waits(void)
{
	return rocksdb_writebatch_count(rocks.batch) > 0 || rocks.batch_lsn != InvalidXLogRecPtr;
}

/*
 * Commit the writes gathered (from every session served since the last
 * commit, or from what the worker ran itself).
 */
void
rocks_commit(void)
{
	char	   *err = NULL;
	XLogRecPtr	lsn = Max(rocks.batch_lsn, rocks_host->replaying());
	uint64		stamp = 0;

	/*
	 * Changes replayed from WAL are stamped with the end of the last record
	 * replayed wholly, also when an error cut the replay short and the
	 * batch is committed after it (a worker's exit): stamped lower, the next
	 * start would apply them again (an append twice).
	 */
	if (rocks.batch_replayed)
		lsn = Max(lsn, rocks_host->replayed());

	/* A staged commit's writes gather into one batch (rocks_stage.c). */
	if (rocks_commit_held)
		return;
	if (!rocks_batch_waits())
	{
		rocks_cache_committed(false);	/* nothing waits in an empty batch */
		rocks_view_publish();	/* changes made outside a batch, if any */
		return;
	}
	if (lsn != InvalidXLogRecPtr)
	{
		/*
		 * The position never goes back: a start's replay applies again the
		 * records of transactions committed before the position (their
		 * commit record says they are in, not the position), stamped with
		 * where it reads, and the records after them up to the position
		 * are in all the same.
		 */
		stamp = Max(lsn, rocks.applied_lsn);
		rocksdb_writebatch_put_cf(rocks.batch, rocks.deflt, APPLIED_LSN_KEY,
								  strlen(APPLIED_LSN_KEY), (const char *) &stamp, sizeof(stamp));
	}
	/* The records of the logged changes in the batch, first. */
	rocks_wal_flush(rocks.batch_lsn);
	rocks_check_not_failed();
	rocksdb_write(rocks.db, rocks.wopts, rocks.batch, &err);
	if (err)
	{
		rocks.failed = true;
		if (rocks.batch_lsn != InvalidXLogRecPtr)
			rocks.lost_logged = true;	/* see rocks_close */
	}
	rocksdb_writebatch_clear(rocks.batch);
	rocks.batch_clears++;
	rocks.batch_lsn = InvalidXLogRecPtr;
	rocks.batch_replayed = false;
	/* The batch's keys left the cache; they come back with what it wrote. */
	rocks_cache_committed(err == NULL);
	if (err == NULL)
	{
		rocks_view_publish();
		batches_written++;
	}
	rocks_check(err, "write");
	if (lsn != InvalidXLogRecPtr)
	{
		rocks.applied_lsn = (XLogRecPtr) stamp;
		/* The session whose writes these were waits for their WAL at commit. */
		rocks_host->applied_lsn(lsn);
	}
}

/*
 * rocks_applied_lsn is the end of the last WAL record whose change the
 * instance holds (InvalidXLogRecPtr: none, or no instance).
 */
XLogRecPtr
rocks_applied_lsn(void)
{
	size_t		vlen;
	char	   *v;
	uint64		lsn = 0;

	if (rocks.db == NULL)
		return InvalidXLogRecPtr;
	v = rocks_get(rocks.deflt, APPLIED_LSN_KEY, strlen(APPLIED_LSN_KEY), &vlen);
	if (v != NULL && vlen == sizeof(lsn))
		memcpy(&lsn, v, sizeof(lsn));
	if (v != NULL)
		rocksdb_free(v);
	return (XLogRecPtr) lsn;
}

/* Add a column family's properties to the figures that sum them. */
static void
add_family_figures(rocksdb_column_family_handle_t *cf, int64 *out)
{
	/* In the order of ROCKS_FIGURE_MEMTABLE, _PENDING_COMPACTION, _LIVE_DATA. */
	static const char *const props[] = {"rocksdb.cur-size-all-mem-tables",
	"rocksdb.estimate-pending-compaction-bytes", "rocksdb.estimate-live-data-size"};

	for (int p = 0; p < lengthof(props); p++)
		out[p] += rocks_property_int(cf, props[p]);
}

/*
 * rocks_figures fills the instance's own figures, summed over its column
 * families (ROCKS_FIGURE_*); false when no instance is open.
 */
bool
rocks_figures(int64 *out)
{
	HASH_SEQ_STATUS seq;
	RocksFamily *f;
	const rocksdb_livefiles_t *files;

	if (rocks.db == NULL)
		return false;
	memset(out, 0, sizeof(int64) * ROCKS_FIGURE_COUNT);
	add_family_figures(rocks.deflt, out);
	hash_seq_init(&seq, families);
	while ((f = hash_seq_search(&seq)) != NULL)
		add_family_figures(f->handle, out);
	files = rocksdb_livefiles(rocks.db);
	out[ROCKS_FIGURE_SST_FILES] = rocksdb_livefiles_count(files);
	rocksdb_livefiles_destroy(files);
	out[ROCKS_FIGURE_BLOCK_CACHE] = (int64) rocksdb_cache_get_usage(rocks.cache);
	if (perf != NULL)
	{
		out[ROCKS_FIGURE_CACHE_HITS] =
			(int64) rocksdb_perfcontext_metric(perf, rocksdb_block_cache_hit_count);
		out[ROCKS_FIGURE_CACHE_MISSES] =
			(int64) rocksdb_perfcontext_metric(perf, rocksdb_block_read_count);
	}
	return true;
}

/* Read one RocksDB value; NULL when absent.  Free with rocksdb_free. */
char *
rocks_get(rocksdb_column_family_handle_t *cf, const char *key, size_t keylen,
		  size_t *vallen)
{
	char	   *err = NULL;
	char	   *v = rocksdb_get_cf(rocks.db, rocks.ropts, cf, key, keylen, vallen, &err);

	rocks_check(err, "read");
	return v;
}

/*
 * rocks_scan calls fn for every RocksDB entry in [from, to) of a family,
 * and stops early when fn returns false.
 */
void
rocks_scan(rocksdb_t *db, rocksdb_readoptions_t *ropts,
		   rocksdb_column_family_handle_t *cf, const char *from, size_t fromlen,
		   const char *to, size_t tolen, RocksScanFn fn, void *arg)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(db, ropts, cf);
	char	   *err = NULL;
	uint32		n = 0;

	PG_TRY();
	{
		for (rocksdb_iter_seek(it, from, fromlen); rocksdb_iter_valid(it); rocksdb_iter_next(it))
		{
			size_t		klen;
			size_t		vlen;
			const char *k = rocksdb_iter_key(it, &klen);
			const char *v;

			if ((++n & 4095) == 0)
				rocks_host->progress();

			if (to && memcmp(k, to, Min(klen, tolen)) >= 0 &&
				(memcmp(k, to, Min(klen, tolen)) > 0 || klen >= tolen))
				break;
			v = rocksdb_iter_value(it, &vlen);
			if (!fn(arg, k, klen, v, vlen))
				break;
		}
		rocksdb_iter_get_error(it, &err);
	}
	PG_FINALLY();
	{
		rocksdb_iter_destroy(it);
	}
	PG_END_TRY();
	rocks_check(err, "iterate");
}

/* Counting keys (map entries of one key count once). */
typedef struct CountKeys
{
	int64		n;
	StringInfoData prev;
	bool		map;
} CountKeys;

static bool
count_key(void *arg, const char *k, size_t klen, const char *v, size_t vlen)
{
	CountKeys  *c = arg;

	if (c->map)
	{
		size_t		len = rocks_key_prefix_len(k, klen);

		if (c->prev.len == (int) len && memcmp(c->prev.data, k, len) == 0)
			return true;
		resetStringInfo(&c->prev);
		appendBinaryStringInfo(&c->prev, k, len);
	}
	c->n++;
	return true;
}

/*
 * rocks_count_keys counts a family's keys (a snapshot's staging copy is
 * counted on threads: rocks_count.c).
 */
int64
rocks_count_keys(rocksdb_t *db, rocksdb_readoptions_t *ropts,
				 rocksdb_column_family_handle_t *cf, bool map)
{
	CountKeys	c;

	c.n = 0;
	c.map = map;
	initStringInfo(&c.prev);
	rocks_scan(db, ropts, cf, "", 0, NULL, 0, count_key, &c);
	pfree(c.prev.data);
	return c.n;
}

/* rocks_property_int reads a numeric property of a column family. */
int64
rocks_property_int(rocksdb_column_family_handle_t *cf, const char *name)
{
	char	   *v = rocksdb_property_value_cf(rocks.db, cf, name);
	int64		n = 0;

	if (v)
	{
		n = strtoll(v, NULL, 10);
		rocksdb_free(v);
	}
	return n;
}
