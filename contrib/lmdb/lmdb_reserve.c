/*
 * contrib/lmdb/lmdb_reserve.c
 *		Map space set aside for transactional commits (KeyedStateBackend's
 *		reserve and unreserve): a commit applies its writes after its
 *		commit record, where a full map would lose them.
 *
 * Before the commit record the committing session sizes what the apply
 * will write and adds it to a counter in shared memory, under LMDB's
 * writer lock, if the map's free space (pages never used, and pages on
 * LMDB's free list) holds it beside what others set aside; otherwise the
 * commit fails with 54000.  While anything is set aside, every other write
 * checks, before it commits, that it leaves the room set aside free; the
 * session's own writes may use its own.  What a session set aside stays
 * counted until its transaction ends (the apply is over then): a resource
 * release callback takes it off, on commit and abort alike.
 *
 * The room is the map's and the file system's both: LMDB grows its data
 * file as pages past its end are written, so the pages a commit takes
 * beyond those inside the file (free, or never used) must fit in what the
 * file system of the environment's directory has left (statvfs), or the
 * commit fails with 53100; a full disk would otherwise fail the apply after
 * the commit record.
 *
 * The size is an estimate, generous for how LMDB stores: each of a key's
 * writes is one write transaction that copies its image and the pages on
 * its path, and the pages a write frees are reused by the next once no
 * reader needs them, so a key takes about twice its final image and a few
 * pages per write.
 */
#include "postgres.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "lmdb_internal.h"

typedef struct LmdbReserveShared
{
	pg_atomic_uint64 reserved;	/* bytes set aside by commits under way */
} LmdbReserveShared;

static LmdbReserveShared *shared = NULL;

/* Bytes of shared->reserved that this process's transaction set aside. */
static uint64 mine = 0;

/* Pages each write may copy besides its image (its path in the tree). */
#define LMDB_PAGES_PER_WRITE	4

Size
lmdb_reserve_shmem_size(void)
{
	return MAXALIGN(sizeof(LmdbReserveShared));
}

void
lmdb_reserve_shmem_init(void)
{
	bool		found;

	shared = ShmemInitStruct("state_backend_lmdb reservations", sizeof(LmdbReserveShared),
							 &found);
	if (!found)
		pg_atomic_init_u64(&shared->reserved, 0);
}

/* At the end of a transaction, what it set aside goes back. */
static void
release_at_end(ResourceReleasePhase phase, bool isCommit, bool isTopLevel, void *arg)
{
	if (phase != RESOURCE_RELEASE_AFTER_LOCKS || !isTopLevel || mine == 0)
		return;
	pg_atomic_fetch_sub_u64(&shared->reserved, mine);
	mine = 0;
}

void
lmdb_reserve_init(void)
{
	RegisterResourceReleaseCallback(release_at_end, NULL);
}

/*
 * disk_room: the bytes the data file may still grow by, as the file system
 * of the environment's directory has them for an unprivileged user, beside
 * how large the file is now; UINT64_MAX when the file system cannot tell.
 */
static uint64
disk_room(uint64 *file_size)
{
	const char *dir;
	char	   *file;
	struct statvfs fs;
	struct stat st;
	uint64		room = UINT64_MAX;

	*file_size = 0;
	if (mdb_env_get_path(lmdb_env(), &dir) != 0)
		return room;
	file = psprintf("%s/data.mdb", dir);
	if (stat(file, &st) == 0)
		*file_size = (uint64) st.st_size;
	if (statvfs(dir, &fs) == 0)
		room = (uint64) fs.f_bavail * (uint64) fs.f_frsize;
	pfree(file);
	return room;
}

/*
 * free_bytes is the room left for writes as last committed: the map's
 * pages never used, and those on LMDB's free list (which only a read
 * transaction may look at; the caller holds the writer lock, so it is the
 * writer's); *disk_bound says whether the file system, not the map, bounds
 * it (the pages past the data file's end must fit on the disk).
 */
static uint64
free_bytes_of(bool *disk_bound)
{
	MDB_txn    *txn;
	MDB_envinfo info;
	MDB_stat	stat;
	MDB_cursor *cur;
	MDB_val		k;
	MDB_val		v;
	uint64		pages = 0;
	uint64		used;
	int			rc;

	if ((rc = mdb_env_info(lmdb_env(), &info)) != 0 ||
		(rc = mdb_env_stat(lmdb_env(), &stat)) != 0)
		lmdb_fail(rc, "read its size");
	/* The free list is database 0; each record is [count][page numbers]. */
	txn = lmdb_read_begin();
	rc = mdb_cursor_open(txn, 0, &cur);
	if (rc != 0)
	{
		lmdb_read_end();
		lmdb_fail(rc, "read its free pages");
	}
	while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0)
	{
		size_t		count;

		if (v.mv_size < sizeof(size_t))
			continue;
		memcpy(&count, v.mv_data, sizeof(size_t));
		pages += count;
	}
	mdb_cursor_close(cur);
	lmdb_read_end();
	if (rc != MDB_NOTFOUND)
		lmdb_fail(rc, "read its free pages");
	used = ((uint64) info.me_last_pgno + 1) * stat.ms_psize;
	if (used > info.me_mapsize)
		used = info.me_mapsize;
	{
		uint64		map_room = info.me_mapsize - used + pages * stat.ms_psize;
		uint64		file_size;
		uint64		disk = disk_room(&file_size);
		uint64		in_file = (file_size > used ? file_size - used : 0) + pages * stat.ms_psize;

		*disk_bound = false;
		if (disk != UINT64_MAX && in_file + disk < map_room)
		{
			*disk_bound = true;
			return in_file + disk;
		}
		return map_room;
	}
}

/* The file system of the environment's directory has no room for a commit. */
static void
no_disk_room(const char *what)
{
	const char *dir = NULL;

	(void) mdb_env_get_path(lmdb_env(), &dir);
	ereport(ERROR,
			(errcode(ERRCODE_DISK_FULL),
			 errmsg("no space left for the LMDB environment of lmdb states"),
			 errdetail("The file system of \"%s\" has no room for %s.", dir ? dir : "", what),
			 errhint("Free space on that file system, or remove states.")));
}

static void
no_room(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("the LMDB environment of lmdb states is full"),
			 errdetail("It may grow to state_backend_lmdb.map_size (%d MB); %s.",
					   lmdb_map_size_mb, what),
			 errhint("Raise state_backend_lmdb.map_size and restart the server, or remove states.")));
}

/*
 * lmdb_reserve is KeyedStateBackend.reserve: it sizes what a commit's apply
 * will write to the keys and sets it aside, or refuses the commit.
 */
void *
lmdb_reserve(const StateTarget *st, const StateReserveKey *keys, int nkeys)
{
	uint64		need = 0;
	uint64	   *handle;
	MDB_txn    *txn;
	volatile bool fits = false;
	volatile bool disk_bound = false;

	/* The current images of keys the writes build on, read in place. */
	txn = lmdb_read_begin();
	PG_TRY();
	{
		MDB_stat	stat;

		if (mdb_env_stat(lmdb_env(), &stat) != 0)
			stat.ms_psize = 4096;
		for (int i = 0; i < nkeys; i++)
		{
			const StateReserveKey *k = &keys[i];
			uint64		cur = 0;

			if (!k->replaced && k->grow_len > 0)
			{
				LmdbKey		lk;
				const char *img;
				uint32		len;

				lmdb_key_make(&lk, st->info.id, k->key);
				if (lmdb_get_in(txn, &lk, k->key, &img, &len))
					cur = len;
				pfree(lk.data);
			}
			need += 2 * (cur + k->image_len + k->grow_len + k->key->len + LMDB_DIGEST_LEN + 16);
			need += (uint64) k->writes * LMDB_PAGES_PER_WRITE * stat.ms_psize;
		}
	}
	PG_FINALLY();
	{
		lmdb_read_end();
	}
	PG_END_TRY();
	if (need == 0)
		return NULL;

	/* Under the writer lock: no write commits between the check and the count. */
	(void) lmdb_write_begin();
	PG_TRY();
	{
		bool		bound;

		fits = pg_atomic_read_u64(&shared->reserved) + need <= free_bytes_of(&bound);
		disk_bound = bound;
		if (fits)
		{
			pg_atomic_fetch_add_u64(&shared->reserved, need);
			mine += need;
		}
	}
	PG_FINALLY();
	{
		lmdb_write_abort();
	}
	PG_END_TRY();
	if (!fits && disk_bound)
		no_disk_room("the writes of this transaction to transactional states");
	if (!fits)
		no_room("the writes of this transaction to transactional states would not fit in it");
	handle = MemoryContextAlloc(TopTransactionContext, sizeof(uint64));
	*handle = need;
	return handle;
}

/*
 * lmdb_unreserve is KeyedStateBackend.unreserve, just before the apply's
 * writes: they may use the room from now on, which stays counted (so that
 * no other write takes it) until the transaction ends.
 */
void
lmdb_unreserve(void *handle)
{
	pfree(handle);
}

/*
 * lmdb_reserve_check is called by a write before it commits txn, having
 * written about "bytes": while commits have room set aside it must leave
 * it free, or fail (54000) with nothing written.  This process's own room
 * is its writes'.
 */
void
lmdb_reserve_check(uint64 bytes)
{
	uint64		others = pg_atomic_read_u64(&shared->reserved);

	bool		disk_bound;

	others = others > mine ? others - mine : 0;
	if (others == 0)
		return;
	if (others + 2 * bytes + LMDB_PAGES_PER_WRITE * 4096 > free_bytes_of(&disk_bound))
	{
		if (disk_bound)
			no_disk_room("this write beside what is set aside for the commits of transactions under way");
		no_room("what is left is set aside for the commits of transactions under way");
	}
}
