/*
 * contrib/lmdb/lmdb_env.c
 *		The LMDB environment of lmdb states: settings, opening it in each
 *		process, its transactions, the key layout, and LMDB's errors as
 *		PostgreSQL errors.
 */
#include "postgres.h"

#include <limits.h>
#include <sys/stat.h>

#include "common/cryptohash.h"
#include "common/file_perm.h"
#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "utils/guc.h"
#include "utils/resowner.h"

#include "lmdb_internal.h"

char	   *lmdb_dir = NULL;
int			lmdb_map_size_mb = 1024;
bool		lmdb_sync = false;

MDB_dbi		lmdb_dbi;

static MDB_env *env = NULL;
static size_t max_key_size = 0;	/* of env: an LMDB key's limit */
static pid_t env_pid = 0;
static MDB_txn *rtxn = NULL;
static bool rtxn_active = false;
static MDB_txn *wtxn = NULL;

void
lmdb_define_settings(void)
{
	DefineCustomStringVariable("state_backend_lmdb.dir",
							   "Directory of the LMDB environment that holds lmdb states.",
							   "Relative to the data directory unless absolute.",
							   &lmdb_dir,
							   "pg_state_backend/lmdb",
							   PGC_POSTMASTER,
							   0,
							   NULL, NULL, NULL);
	DefineCustomIntVariable("state_backend_lmdb.map_size",
							"Largest size of the LMDB environment (its memory map).",
							"Writes that would pass it fail with program_limit_exceeded; nothing stored is lost.",
							&lmdb_map_size_mb,
							1024,
							16,
							INT_MAX / 2,
							PGC_POSTMASTER,
							GUC_UNIT_MB,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("state_backend_lmdb.sync",
							 "Flush LMDB's files to disk (fsync) at every write.",
							 "Off: a crash of the operating system may lose the last writes; lmdb states come back from checkpoints and logged states' WAL at a start either way.",
							 &lmdb_sync,
							 false,
							 PGC_POSTMASTER,
							 0,
							 NULL, NULL, NULL);
	MarkGUCPrefixReserved("state_backend_lmdb");
}

/*
 * lmdb_fail raises an LMDB error: a full map or a too-long value as
 * program_limit_exceeded, a full disk as disk_full, an I/O error (LMDB's
 * report of a short write too) as io_error, the rest as internal.
 */
void
lmdb_fail(int rc, const char *what)
{
	if (rc == MDB_MAP_FULL)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the LMDB environment of lmdb states is full"),
				 errdetail("It may grow to state_backend_lmdb.map_size (%d MB); the write was not made.",
						   lmdb_map_size_mb),
				 errhint("Raise state_backend_lmdb.map_size and restart the server, or remove states.")));
	if (rc == MDB_READERS_FULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("the LMDB environment of lmdb states has no reader slot left")));
	if (rc == ENOSPC)
		ereport(ERROR,
				(errcode(ERRCODE_DISK_FULL),
				 errmsg("no space left for the LMDB environment of lmdb states")));
	/* LMDB reports a short write (a full disk, most often) as EIO. */
	if (rc == EIO)
		ereport(ERROR,
				(errcode(ERRCODE_IO_ERROR),
				 errmsg("LMDB failed to %s: %s", what, mdb_strerror(rc)),
				 errhint("A full file system under state_backend_lmdb.dir gives this error too.")));
	ereport(ERROR,
			(errcode(ERRCODE_INTERNAL_ERROR),
			 errmsg("LMDB failed to %s: %s", what, mdb_strerror(rc))));
}

static void
lmdb_on_exit(int code, Datum arg)
{
	lmdb_close();
}

/* The environment's directory, made if missing. */
static char *
lmdb_path(void)
{
	char	   *path;

	if (is_absolute_path(lmdb_dir))
		path = pstrdup(lmdb_dir);
	else
		path = psprintf("%s/%s", DataDir, lmdb_dir);
	if (pg_mkdir_p(path, pg_dir_create_mode) != 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", path)));
	return path;
}

/*
 * lmdb_env opens the environment in this process on its first use (never
 * in the postmaster, so no process inherits an open one).
 */
MDB_env *
lmdb_env(void)
{
	MDB_env    *e;
	MDB_txn    *txn;
	char	   *path;
	int			rc;
	unsigned int flags = MDB_NOTLS | (lmdb_sync ? 0 : MDB_NOSYNC | MDB_NOMETASYNC);

	if (env != NULL && env_pid == MyProcPid)
		return env;
	env = NULL;					/* one of another process: never ours */
	rtxn = wtxn = NULL;
	rtxn_active = false;
	path = lmdb_path();
	rc = mdb_env_create(&e);
	if (rc != 0)
		lmdb_fail(rc, "create its environment");
	if ((rc = mdb_env_set_mapsize(e, (size_t) lmdb_map_size_mb * 1024 * 1024)) != 0 ||
		(rc = mdb_env_set_maxreaders(e, (unsigned int) MaxBackends + 64)) != 0 ||
		(rc = mdb_env_open(e, path, flags, pg_file_create_mode)) != 0)
	{
		mdb_env_close(e);
		if (rc == EACCES || rc == ENOENT || rc == ENOSPC)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not open the LMDB environment \"%s\": %s", path,
							mdb_strerror(rc))));
		lmdb_fail(rc, "open its environment");
	}
	rc = mdb_txn_begin(e, NULL, 0, &txn);
	if (rc == 0)
	{
		rc = mdb_dbi_open(txn, NULL, 0, &lmdb_dbi);
		if (rc == 0)
			rc = mdb_txn_commit(txn);
		else
			mdb_txn_abort(txn);
	}
	if (rc != 0)
	{
		mdb_env_close(e);
		lmdb_fail(rc, "open its database");
	}
	if (env_pid != MyProcPid)
		on_proc_exit(lmdb_on_exit, (Datum) 0);
	env = e;
	env_pid = MyProcPid;
	max_key_size = (size_t) mdb_env_get_maxkeysize(e);
	return env;
}

/* lmdb_close closes this process's environment, ending its transactions. */
void
lmdb_close(void)
{
	if (env == NULL || env_pid != MyProcPid)
		return;
	if (wtxn)
		mdb_txn_abort(wtxn);
	if (rtxn)
		mdb_txn_abort(rtxn);
	wtxn = rtxn = NULL;
	rtxn_active = false;
	mdb_env_close(env);
	env = NULL;
}

/*
 * lmdb_empty removes every entry, at a start with fresh shared memory: the
 * states come back from the newest checkpoint and logged states' WAL, as
 * heap states do.  Readers left by processes of before the restart go too.
 */
void
lmdb_empty(void)
{
	MDB_txn    *txn = lmdb_write_begin();
	int			rc = mdb_drop(txn, lmdb_dbi, 0);
	int			dead;

	if (rc != 0)
	{
		lmdb_write_abort();
		lmdb_fail(rc, "empty its database");
	}
	lmdb_write_commit(txn);
	(void) mdb_reader_check(lmdb_env(), &dead);
}

/*
 * The read transaction of this process, reused (reset and renewed).  One
 * left active by an error is reset at the next begin.
 */
MDB_txn *
lmdb_read_begin(void)
{
	MDB_env    *e = lmdb_env();
	int			rc;

	if (rtxn_active)
		lmdb_read_end();
	rc = rtxn ? mdb_txn_renew(rtxn) : mdb_txn_begin(e, NULL, MDB_RDONLY, &rtxn);
	if (rc != 0)
	{
		if (rtxn)
			mdb_txn_abort(rtxn);
		rtxn = NULL;
		lmdb_fail(rc, "begin a read");
	}
	rtxn_active = true;
	return rtxn;
}

void
lmdb_read_end(void)
{
	if (rtxn_active)
		mdb_txn_reset(rtxn);
	rtxn_active = false;
}

/*
 * The write transaction: LMDB's one writer lock is taken here, and given
 * back by lmdb_write_commit or lmdb_write_abort, which the caller calls on
 * every path (an error between them is caught and aborts first).
 */
MDB_txn *
lmdb_write_begin(void)
{
	MDB_env    *e = lmdb_env();
	int			rc;

	if (wtxn)
		lmdb_write_abort();
	rc = mdb_txn_begin(e, NULL, 0, &wtxn);
	if (rc != 0)
	{
		wtxn = NULL;
		lmdb_fail(rc, "begin a write");
	}
	return wtxn;
}

void
lmdb_write_commit(MDB_txn *txn)
{
	int			rc;

	Assert(txn == wtxn);
	wtxn = NULL;
	rc = mdb_txn_commit(txn);
	if (rc != 0)
		lmdb_fail(rc, "commit a write");
}

void
lmdb_write_abort(void)
{
	if (wtxn)
		mdb_txn_abort(wtxn);
	wtxn = NULL;
}

/*
 * The writes lock, a named LWLock: a write holds it from before its LMDB
 * transaction until its WAL records are written (LMDB has one writer at a
 * time anyway, and a change's record must follow the previous change's);
 * a snapshot's cut holds it across its instant.  Taken before LMDB's
 * writer lock, always.
 */
#define LMDB_WRITES_TRANCHE	"state_backend_lmdb writes"

static LWLock *writes_lock = NULL;

/* In the shmem_request_hook. */
void
lmdb_writes_lock_request(void)
{
	RequestNamedLWLockTranche(LMDB_WRITES_TRANCHE, 1);
}

static LWLock *
writes(void)
{
	if (writes_lock == NULL)
		writes_lock = &(GetNamedLWLockTranche(LMDB_WRITES_TRANCHE))->lock;
	return writes_lock;
}

void
lmdb_writes_lock(void)
{
	LWLockAcquire(writes(), LW_EXCLUSIVE);
}

/* Lets go of the writes lock if this process holds it (an error may have). */
void
lmdb_writes_unlock(void)
{
	if (writes_lock != NULL && LWLockHeldByMe(writes_lock))
		LWLockRelease(writes_lock);
}

/* ------------------------------------------------------------ keys */

/*
 * key_digest writes the SHA-256 of a key image.  PostgreSQL's hashes are
 * tracked by the current resource owner, which the state worker lacks
 * between transactions (its restores and replays): then one of ours.
 */
static void
key_digest(const StateKey *key, uint8 *out)
{
	static ResourceOwner own = NULL;
	ResourceOwner saved = CurrentResourceOwner;
	pg_cryptohash_ctx *volatile ctx = NULL;

	if (CurrentResourceOwner == NULL)
	{
		if (own == NULL)
			own = ResourceOwnerCreate(NULL, "state_backend_lmdb keys");
		CurrentResourceOwner = own;
	}
	PG_TRY();
	{
		ctx = pg_cryptohash_create(PG_SHA256);
		if (ctx == NULL || pg_cryptohash_init(ctx) < 0 ||
			pg_cryptohash_update(ctx, (const uint8 *) key->data, key->len) < 0 ||
			pg_cryptohash_final(ctx, out, LMDB_DIGEST_LEN) < 0)
			elog(ERROR, "state_backend_lmdb: could not hash a key");
	}
	PG_FINALLY();
	{
		if (ctx != NULL)
			pg_cryptohash_free(ctx);
		CurrentResourceOwner = saved;
	}
	PG_END_TRY();
}

void
lmdb_key_prefix(char *buf, uint32 state_id, int key_group)
{
	uint32		id = pg_hton32(state_id);
	uint16		kg = pg_hton16((uint16) key_group);

	memcpy(buf, &id, sizeof(id));
	memcpy(buf + sizeof(id), &kg, sizeof(kg));
}

uint32
lmdb_key_state(const MDB_val *k)
{
	uint32		id;

	if (k->mv_size < LMDB_KEY_PREFIX)
		return 0;
	memcpy(&id, k->mv_data, sizeof(id));
	return pg_ntoh32(id);
}

/*
 * lmdb_key_make builds the LMDB key of a state's key: inline when it fits
 * an LMDB key, else its SHA-256 (the value then carries the key).
 */
void
lmdb_key_make(LmdbKey *k, uint32 state_id, const StateKey *key)
{
	(void) lmdb_env();
	if (LMDB_KEY_PREFIX + 1 + (size_t) key->len <= max_key_size)
	{
		k->len = LMDB_KEY_PREFIX + 1 + key->len;
		k->data = palloc(k->len);
		lmdb_key_prefix(k->data, state_id, key->key_group);
		k->data[LMDB_KEY_PREFIX] = LMDB_FORM_INLINE;
		memcpy(k->data + LMDB_KEY_PREFIX + 1, key->data, key->len);
		k->digest = false;
	}
	else
	{
		k->len = LMDB_KEY_PREFIX + 1 + LMDB_DIGEST_LEN;
		k->data = palloc(k->len);
		lmdb_key_prefix(k->data, state_id, key->key_group);
		k->data[LMDB_KEY_PREFIX] = LMDB_FORM_DIGEST;
		key_digest(key, (uint8 *) k->data + LMDB_KEY_PREFIX + 1);
		k->digest = true;
	}
}

/*
 * lmdb_entry_split reads a stored entry as a key image and a state image;
 * false when it is not one this backend wrote.
 */
bool
lmdb_entry_split(const MDB_val *k, const MDB_val *v, const char **key, uint32 *keylen,
				 const char **image, uint32 *imagelen)
{
	const char *kd = k->mv_data;
	const char *vd = v->mv_data;
	uint32		len;

	if (k->mv_size < LMDB_KEY_PREFIX + 1 || v->mv_size > PG_UINT32_MAX)
		return false;
	if (kd[LMDB_KEY_PREFIX] == LMDB_FORM_INLINE)
	{
		*key = kd + LMDB_KEY_PREFIX + 1;
		*keylen = (uint32) (k->mv_size - LMDB_KEY_PREFIX - 1);
		*image = vd;
		*imagelen = (uint32) v->mv_size;
		return true;
	}
	if (kd[LMDB_KEY_PREFIX] != LMDB_FORM_DIGEST || v->mv_size < sizeof(uint32))
		return false;
	memcpy(&len, vd, sizeof(uint32));
	if (len > v->mv_size - sizeof(uint32))
		return false;
	*key = vd + sizeof(uint32);
	*keylen = len;
	*image = vd + sizeof(uint32) + len;
	*imagelen = (uint32) (v->mv_size - sizeof(uint32) - len);
	return true;
}

/*
 * lmdb_scan visits, in key order, the entries of txn whose LMDB keys begin
 * with prefix, from the key from on (the prefix when NULL), as key and state
 * images, while fn returns true.  A malformed entry is data_corrupted; the
 * cursor is closed on every path.
 */
void
lmdb_scan(MDB_txn *txn, const char *prefix, size_t plen, const MDB_val *from,
		  LmdbScanFn fn, void *arg)
{
	MDB_cursor *volatile cur = NULL;
	int			rc = mdb_cursor_open(txn, lmdb_dbi, (MDB_cursor **) &cur);

	if (rc != 0)
		lmdb_fail(rc, "read");
	PG_TRY();
	{
		MDB_val		k = from ? *from : (MDB_val) {plen, (void *) prefix};
		MDB_val		v;

		for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
			 rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
		{
			const char *key;
			uint32		keylen;
			const char *img;
			uint32		imglen;

			if (k.mv_size < plen || memcmp(k.mv_data, prefix, plen) != 0)
				break;
			if (!lmdb_entry_split(&k, &v, &key, &keylen, &img, &imglen))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("an entry of lmdb state %u is damaged", lmdb_key_state(&k))));
			if (!fn(arg, &k, key, keylen, img, imglen))
				break;
		}
		if (rc != 0 && rc != MDB_NOTFOUND)
			lmdb_fail(rc, "read");
	}
	PG_FINALLY();
	{
		mdb_cursor_close(cur);
	}
	PG_END_TRY();
}

/*
 * lmdb_get_in looks a key up in txn: its image (pointing into LMDB's
 * map, valid until the transaction ends), or false when it has none.
 */
bool
lmdb_get_in(MDB_txn *txn, const LmdbKey *k, const StateKey *key, const char **image,
			uint32 *len)
{
	MDB_val		mk = {k->len, k->data};
	MDB_val		mv;
	const char *skey;
	uint32		skeylen;
	int			rc = mdb_get(txn, lmdb_dbi, &mk, &mv);

	if (rc == MDB_NOTFOUND)
		return false;
	if (rc != 0)
		lmdb_fail(rc, "read");
	if (!lmdb_entry_split(&mk, &mv, &skey, &skeylen, image, len) ||
		(k->digest && (skeylen != key->len || memcmp(skey, key->data, key->len) != 0)))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("an entry of the LMDB environment of lmdb states is damaged")));
	return true;
}
