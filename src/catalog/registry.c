/*
 * catalog/registry.c
 *		The registry of state descriptors: one slot per state, in shared
 *		memory, with each backend keeping a cache of the states it resolved.
 *
 * A state is named per database and has an id that is never reused.  Every
 * change to the registry bumps a version counter; a backend whose cached
 * version differs drops its cache.  Dropping a state marks its slot
 * (registry_mark_dropping), then, once its backend removed its data, frees
 * the slot (registry_free_slot); a writer holding an old id sees the mark
 * (registry_alive) and stops.  The registry never calls a backend: the data
 * is kept by the backends behind backend/keyed_backend.h, and state_ops.c
 * does both halves of a drop.  Who may use a state is in privileges.c,
 * what DDL may not do under a state in ddl_guards.c.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/wait_event.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/regproc.h"

#include "catalog/registry.h"
#include "catalog/stats.h"
#include "common/codec.h"
#include "common/locks.h"
#include "common/pause.h"
#include "common/settings.h"
#include "format/state_wal.h"

typedef struct RegistrySlot
{
	StateDesc	desc;
	bool		dropping;		/* being dropped: no longer resolvable */
	bool		hidden;			/* being restored: not resolvable yet */
	XLogRecPtr	publish_end;	/* the end of the PUBLISH record of the restore
								 * that published or drops it (0: none) */

	/*
	 * A state alter_state replaced, hidden until its data goes: replaced_by
	 * is the state that took its place; with keep_until_checkpoint, its data
	 * stays (and a crash brings it back) until a checkpoint holds that one,
	 * and log_drop says its drop, when it goes, is logged then.
	 */
	uint32		replaced_by;
	bool		keep_until_checkpoint;
	bool		log_drop_later;
	pg_atomic_uint64 entries;
	pg_atomic_uint64 bytes;
} RegistrySlot;

typedef struct RegistryShared
{
	pg_atomic_uint64 version;
	bool		ready;			/* the worker has restored what it had to */
	bool		standby;		/* it applies a standby's WAL (logged_standby.c) */
	slock_t		blocked_mutex;	/* protects the four below */
	bool		blocked;		/* what cannot be applied stops the start, a
								 * promotion or a standby's apply */
	XLogRecPtr	blocked_at;		/* the WAL record it stops before (or where
								 * the replay is; 0: a checkpoint's load) */
	int64		blocked_checkpoint; /* the checkpoint whose load failed (0: none) */
	char		blocked_why[256];	/* a sentence for errdetail */
	pg_atomic_uint32 logged_pending;	/* logged states being created */
	pg_atomic_uint64 publish_pending;	/* the end of a PUBLISH record not seen
										 * flushed yet (0: none) */
	uint32		next_id;
	int			nslots;
	RegistrySlot slots[FLEXIBLE_ARRAY_MEMBER];
} RegistryShared;

static RegistryShared *registry = NULL;

/* Backend-local cache of resolved states of the current database. */
typedef struct CachedState
{
	NameData	name;			/* hash key */
	StateDesc	desc;
	int			slot;
} CachedState;

static HTAB *state_cache = NULL;
static uint64 state_cache_version = 0;

static Size
registry_shmem_size(void)
{
	return add_size(offsetof(RegistryShared, slots),
					mul_size(state_backend_max_states, sizeof(RegistrySlot)));
}

/* registry_init: no state, not ready, in shared memory just made. */
static void
registry_init(void *fresh)
{
	RegistryShared *reg = fresh;

	pg_atomic_init_u64(&reg->version, 1);
	reg->ready = false;
	reg->standby = false;
	SpinLockInit(&reg->blocked_mutex);
	reg->blocked = false;
	reg->blocked_at = InvalidXLogRecPtr;
	reg->blocked_checkpoint = 0;
	reg->blocked_why[0] = '\0';
	pg_atomic_init_u32(&reg->logged_pending, 0);
	pg_atomic_init_u64(&reg->publish_pending, 0);
	reg->next_id = 1;
	reg->nslots = state_backend_max_states;
	for (int i = 0; i < reg->nslots; i++)
	{
		memset(&reg->slots[i].desc, 0, sizeof(StateDesc));
		reg->slots[i].dropping = false;
		reg->slots[i].hidden = false;
		reg->slots[i].publish_end = InvalidXLogRecPtr;
		pg_atomic_init_u64(&reg->slots[i].entries, 0);
		pg_atomic_init_u64(&reg->slots[i].bytes, 0);
	}
}

const ShmemPart registry_part = {
	"state_backend registry", 0, registry_shmem_size, registry_init, (void **) &registry
};

/*
 * Readers' marks: per server process, the registry version a state call
 * began under (0: none under way), so that alter_state can wait for the
 * calls that may still use the state it replaced (registry_wait_readers).
 * Each process writes its own mark alone.
 */
typedef struct ReaderMarks
{
	int			n;
	pg_atomic_uint64 marks[FLEXIBLE_ARRAY_MEMBER];
} ReaderMarks;

static ReaderMarks *readers = NULL;

static Size
readers_shmem_size(void)
{
	return add_size(offsetof(ReaderMarks, marks),
					mul_size(MaxBackends, sizeof(pg_atomic_uint64)));
}

static void
readers_init(void *fresh)
{
	ReaderMarks *r = fresh;

	r->n = MaxBackends;
	for (int i = 0; i < r->n; i++)
		pg_atomic_init_u64(&r->marks[i], 0);
}

const ShmemPart registry_readers_part = {
	"state_backend readers", 0, readers_shmem_size, readers_init, (void **) &readers
};

static pg_atomic_uint64 *
my_mark(void)
{
	if (readers == NULL || MyProc == NULL || MyProc->pgprocno >= readers->n)
		return NULL;
	return &readers->marks[MyProc->pgprocno];
}

/*
 * registry_reader_enter marks this process as in a state call from now on,
 * under the registry's version now (before the caller looks at the
 * registry); registry_reader_exit marks it out of any.
 */
void
registry_reader_enter(void)
{
	pg_atomic_uint64 *m = my_mark();

	if (m == NULL)
		return;
	pg_atomic_write_u64(m, Max(pg_atomic_read_u64(&registry->version), 1));
	pg_memory_barrier();
}

void
registry_reader_exit(void)
{
	pg_atomic_uint64 *m = my_mark();

	if (m != NULL && pg_atomic_read_u64(m) != 0)
		pg_atomic_write_u64(m, 0);
}

/*
 * registry_wait_readers returns once no other process is in a state call
 * that began before the registry reached version "since": every call that
 * may have resolved a state replaced before it has ended.
 */
void
registry_wait_readers(uint64 since)
{
	for (int i = 0; i < readers->n; i++)
	{
		pg_atomic_uint64 *m = &readers->marks[i];

		if (m == my_mark())
			continue;
		for (;;)
		{
			uint64		v = pg_atomic_read_u64(m);

			if (v == 0 || v >= since)
				break;
			CHECK_FOR_INTERRUPTS();
			pg_usleep(1000L);
		}
	}
}

/*
 * set_flag and read_flag write and read, under the registry lock, one of
 * the flags the worker sets for every session to see (ready, standby).
 */
static void
set_flag(bool *flag, bool on)
{
	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_EXCLUSIVE);
	*flag = on;
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
}

static bool
read_flag(const bool *flag)
{
	bool		on;

	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_SHARED);
	on = *flag;
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
	return on;
}

/*
 * The state worker marks the registry ready once it has restored states at
 * server start; until then sessions wait, so that nothing they write is
 * replaced by the restore.
 */
void
registry_set_ready(void)
{
	set_flag(&registry->ready, true);
}

/* Has the worker already restored since shared memory was made? */
bool
registry_is_ready(void)
{
	return read_flag(&registry->ready);
}

/*
 * registry_set_standby: the worker applies a hot standby's WAL to the
 * states (on), or has applied what the promoted server's WAL held (off).
 */
void
registry_set_standby(bool on)
{
	set_flag(&registry->standby, on);
}

/* Does the registry say its states are a standby's (being applied)? */
bool
registry_is_standby(void)
{
	return read_flag(&registry->standby);
}

/*
 * registry_set_blocked: the state worker cannot apply the WAL record at
 * lsn, or load checkpoint (0: none), for the reason detail (a sentence,
 * for errdetail); both 0: it goes on again.  Sessions waiting for the
 * registry are told instead of waiting.  logged.c sets it.
 */
void
registry_set_blocked(XLogRecPtr lsn, int64 checkpoint, const char *detail)
{
	SpinLockAcquire(&registry->blocked_mutex);
	registry->blocked = lsn != InvalidXLogRecPtr || checkpoint != 0;
	registry->blocked_at = lsn;
	registry->blocked_checkpoint = checkpoint;
	strlcpy(registry->blocked_why,
			!registry->blocked ? "" :
			detail && detail[0] != '\0' ? detail :
			"The state worker cannot load or apply what its start needs.",
			sizeof(registry->blocked_why));
	SpinLockRelease(&registry->blocked_mutex);
}

/*
 * registry_blocked: whether the worker's start or apply is stopped; *lsn
 * and *checkpoint get where (either may be NULL), detail (len bytes, may
 * be NULL) the reason.
 */
bool
registry_blocked(XLogRecPtr *lsn, int64 *checkpoint, char *detail, Size len)
{
	bool		blocked;

	SpinLockAcquire(&registry->blocked_mutex);
	blocked = registry->blocked;
	if (lsn != NULL)
		*lsn = registry->blocked_at;
	if (checkpoint != NULL)
		*checkpoint = registry->blocked_checkpoint;
	if (detail != NULL && len > 0)
		strlcpy(detail, registry->blocked_why, len);
	SpinLockRelease(&registry->blocked_mutex);
	return blocked;
}

/*
 * Sessions wait until the worker is ready; once the server is promoted,
 * also until the worker has applied the rest of the standby's WAL, so that
 * no write comes before a change logged earlier.  Every state's lookup
 * waits here, and so do snapshots and restores (sql_snapshot.c), which
 * would otherwise run beside the start.
 */
void
registry_wait_ready(void)
{
	while (!registry->ready || (registry->standby && !RecoveryInProgress()))
	{
		char		detail[256];

		/* Stopped by what it cannot load or apply: say why, do not hang. */
		if (registry_blocked(NULL, NULL, detail, sizeof(detail)))
			ereport(ERROR,
					(errcode(ERRCODE_CANNOT_CONNECT_NOW),
					 errmsg("state_backend serves no state yet: the state worker cannot load or apply what its start needs"),
					 errdetail_internal("%s", detail),
					 errhint("Free what the error names (disk space, LMDB map size, state_backend.memory_limit). The state worker tries again meanwhile, and nothing is lost.")));
		state_pause(10L);
		pg_read_barrier();
	}
}

static void
registry_bump_version(void)
{
	pg_atomic_fetch_add_u64(&registry->version, 1);
}

/*
 * registry_version is the registry's version counter.  A restore's
 * publication changes what registry_get_stored shows once its PUBLISH
 * record is flushed, by whomever: the first look after that bumps the
 * counter, so that backends that store descriptors look again even when
 * the restore's session is gone.
 */
uint64
registry_version(void)
{
	uint64		pending = pg_atomic_read_u64(&registry->publish_pending);

	if (pending != 0 && (XLogRecPtr) pending <= GetFlushRecPtr(NULL) &&
		pg_atomic_compare_exchange_u64(&registry->publish_pending, &pending, 0))
		registry_bump_version();
	return pg_atomic_read_u64(&registry->version);
}

static int	registry_insert(StateDesc *desc, bool hidden, bool keep_id);

/* A logged state's drop goes to WAL when it stops being found. */
static void
log_drop(const StateDesc *desc)
{
	(void) state_wal_log(STATE_WAL_DROP, desc->id, NULL, 0, NULL, 0, NULL, 0, false);
}


/*
 * registry_find_slot returns the slot of the named state of a database, or
 * -1.  The caller holds the registry lock.
 */
static int
registry_find_slot(Oid dbid, const char *name)
{
	for (int i = 0; i < registry->nslots; i++)
	{
		RegistrySlot *s = &registry->slots[i];

		if (s->desc.id != 0 && !s->dropping && !s->hidden && s->desc.dbid == dbid &&
			strcmp(NameStr(s->desc.name), name) == 0)
			return i;
	}
	return -1;
}

static void
state_cache_reset(uint64 version)
{
	HASHCTL		ctl;

	if (state_cache)
		hash_destroy(state_cache);
	ctl.keysize = NAMEDATALEN;
	ctl.entrysize = sizeof(CachedState);
	ctl.hcxt = TopMemoryContext;
	state_cache = hash_create("state_backend state cache", 64, &ctl,
							  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	state_cache_version = version;
}

/*
 * registry_lookup finds a state of the current database by name and copies
 * its descriptor to *desc.  Returns false when there is no such state.
 */
bool
registry_lookup(const char *name, StateDesc *desc, int *slot)
{
	uint64		version;
	CachedState *entry;
	NameData	key;
	int			i;

	state_backend_check_loaded();
	registry_wait_ready();
	if (strlen(name) >= NAMEDATALEN)
		return false;

	version = registry_version();
	if (state_cache == NULL || version != state_cache_version)
		state_cache_reset(version);

	namestrcpy(&key, name);
	entry = hash_search(state_cache, &key, HASH_FIND, NULL);
	if (entry == NULL)
	{
		LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_SHARED);
		i = registry_find_slot(MyDatabaseId, name);
		if (i < 0)
		{
			LWLockRelease(state_backend_lock(LOCK_REGISTRY));
			return false;
		}
		entry = hash_search(state_cache, &key, HASH_ENTER, NULL);
		entry->desc = registry->slots[i].desc;
		entry->slot = i;
		LWLockRelease(state_backend_lock(LOCK_REGISTRY));
	}
	*desc = entry->desc;
	*slot = entry->slot;
	return true;
}

/* registry_resolve is registry_lookup that raises an error when not found. */
void
registry_resolve(const char *name, StateDesc *desc, int *slot)
{
	if (!registry_lookup(name, desc, slot))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("state \"%s\" does not exist", name),
				 RecoveryInProgress() ?
				 errdetail("This server is a standby: it knows the logged states its primary's WAL brings, and the states of the checkpoint it loaded; an unlogged state created since is on the primary only.") : 0));
}

/*
 * registry_create adds a state to a database.  The caller fills in
 * everything but the id, which is set here.  A hidden state (one being
 * restored) cannot be resolved by name until registry_publish.
 */
int
registry_create(StateDesc *desc, bool hidden)
{
	return registry_insert(desc, hidden, false);
}

/*
 * registry_create_as adds a hidden state that keeps the id desc has: the
 * state worker, bringing back at start the states of a checkpoint and of
 * WAL, which name them by id.  Ids given later come after it.
 */
int
registry_create_as(const StateDesc *desc)
{
	StateDesc	d = *desc;

	return registry_insert(&d, true, true);
}

static int
registry_insert(StateDesc *desc, bool hidden, bool keep_id)
{
	int			free_slot = -1;
	StateDesc	check = *desc;
	const char *why;

	/* What every reader of a stored descriptor holds it to (its id comes below). */
	if (check.id == 0)
		check.id = 1;
	if ((why = state_desc_problem(&check, state_backend_max_parallelism)) != NULL)
		elog(ERROR, "state_backend: state \"%s\" would be stored with %s",
			 NameStr(desc->name), why);

	state_backend_check_loaded();
	if (!hidden)
		registry_wait_ready();

	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_EXCLUSIVE);
	if (!hidden && registry_find_slot(desc->dbid, NameStr(desc->name)) >= 0)
	{
		LWLockRelease(state_backend_lock(LOCK_REGISTRY));
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("state \"%s\" already exists", NameStr(desc->name))));
	}
	for (int i = 0; i < registry->nslots; i++)
	{
		if (keep_id && registry->slots[i].desc.id == desc->id)
		{
			LWLockRelease(state_backend_lock(LOCK_REGISTRY));
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("state id %u is in use", desc->id)));
		}
		if (registry->slots[i].desc.id == 0 && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0)
	{
		LWLockRelease(state_backend_lock(LOCK_REGISTRY));
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many states"),
				 errdetail("The server holds at most %d states (state_backend.max_states).",
						   state_backend_max_states),
				 errhint("Drop unused states, or raise state_backend.max_states and restart the server.")));
	}

	if (desc->version == 0)
		desc->version = 1;
	if (!keep_id)
		desc->id = registry->next_id++;
	else if (registry->next_id <= desc->id)
		registry->next_id = desc->id + 1;
	if (registry->next_id == 0)
		registry->next_id = 1;
	registry->slots[free_slot].desc = *desc;
	registry->slots[free_slot].dropping = false;
	registry->slots[free_slot].hidden = hidden;
	registry->slots[free_slot].publish_end = InvalidXLogRecPtr;
	registry->slots[free_slot].replaced_by = 0;
	registry->slots[free_slot].keep_until_checkpoint = false;
	registry->slots[free_slot].log_drop_later = false;
	pg_atomic_write_u64(&registry->slots[free_slot].entries, 0);
	pg_atomic_write_u64(&registry->slots[free_slot].bytes, 0);
	state_stats_reset(free_slot);

	/*
	 * A logged state's creation is logged at the instant it can be found,
	 * under the lock a cut copies descriptors under: no change of it comes
	 * before its creation in WAL, and a cut holds it exactly when the cut's
	 * WAL position comes after the record.
	 */
	if (!hidden && desc->logged)
		(void) state_wal_log_create(desc, false);
	registry_bump_version();
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
	return free_slot;
}

/*
 * registry_mark_dropping makes a state unresolvable at once, the first half
 * of a drop.  Returns false when it was already gone or being dropped (by
 * someone else).
 */
bool
registry_mark_dropping(const StateDesc *desc, int slot)
{
	RegistrySlot *s = &registry->slots[slot];

	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_EXCLUSIVE);
	if (s->desc.id != desc->id || s->dropping)
	{
		LWLockRelease(state_backend_lock(LOCK_REGISTRY));
		return false;
	}
	s->dropping = true;
	/* From here on, WAL has no change of it (format/state_wal.h). */
	if (s->desc.logged && (!s->hidden || s->log_drop_later))
		log_drop(&s->desc);
	registry_bump_version();
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
	return true;
}

/*
 * registry_free_slot frees the slot of a state marked as dropping, once its
 * backend has removed what it kept of it: the second half of a drop.
 */
void
registry_free_slot(const StateDesc *desc, int slot)
{
	RegistrySlot *s = &registry->slots[slot];

	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_EXCLUSIVE);
	Assert(s->desc.id == desc->id && s->dropping);
	memset(&s->desc, 0, sizeof(StateDesc));
	s->dropping = false;
	s->hidden = false;
	s->replaced_by = 0;
	s->keep_until_checkpoint = false;
	s->log_drop_later = false;
	pg_atomic_write_u64(&s->entries, 0);
	pg_atomic_write_u64(&s->bytes, 0);
	registry_bump_version();
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
}

/*
 * registry_publish makes a restore take effect: at one instant every visible
 * state of the database is marked as dropping and the hidden states given
 * (created by the restore) become visible.  States that keep (if given;
 * called under the registry lock, so it takes none) says to keep stay.
 * The states marked go to *old
 * and *oldslots (palloc'd; the count is returned): the caller removes their
 * data and frees their slots.  When logged states are dropped or published,
 * one PUBLISH record says so (replay applies all of it or nothing), and
 * *logged_end gets its end (InvalidXLogRecPtr: none): the restore is
 * durable once WAL is flushed to it, and until then registry_get_stored
 * shows the states as they were before (registry_version changes when it
 * is flushed).
 */
/*
 * registry_publish_replacing publishes one hidden state, newd, in place of
 * one visible state, old (alter_state): every other state stays.  The old
 * one becomes hidden, not dropped: its data stays for the calls that may
 * still read it, until the caller drops it (registry_mark_dropping), or,
 * with keep_until_checkpoint, until a checkpoint holds the new one
 * (registry_replaced_in).  When either is logged, one PUBLISH record says
 * so, naming the old one as dropped unless keep_until_checkpoint (its drop
 * is logged when it goes).  The name newd has must be free but for old's:
 * 42710 else, and nothing changes.  Returns old's slot, or -1 when it was
 * dropped meanwhile (nothing changes).
 */
int
registry_publish_replacing(const StateDesc *newd, const StateDesc *oldd,
						   bool keep_until_checkpoint, XLogRecPtr *logged_end)
{
	int			at;
	int			oldat;
	RegistrySlot *o;
	uint32		logged_old = oldd->id;
	uint32		logged_new = newd->id;
	XLogRecPtr	end = InvalidXLogRecPtr;

	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_EXCLUSIVE);
	at = registry_find_slot(newd->dbid, NameStr(newd->name));
	if (at >= 0 && registry->slots[at].desc.id != oldd->id)
	{
		LWLockRelease(state_backend_lock(LOCK_REGISTRY));
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("state \"%s\" already exists", NameStr(newd->name))));
	}
	oldat = registry_find_slot(oldd->dbid, NameStr(oldd->name));
	if (oldat < 0 || registry->slots[oldat].desc.id != oldd->id)
	{
		LWLockRelease(state_backend_lock(LOCK_REGISTRY));
		*logged_end = InvalidXLogRecPtr;
		return -1;
	}
	at = -1;
	for (int i = 0; i < registry->nslots && at < 0; i++)
		if (registry->slots[i].desc.id == newd->id && registry->slots[i].hidden &&
			!registry->slots[i].dropping)
			at = i;
	Assert(at >= 0);
	o = &registry->slots[oldat];

	/* Grants and the owner's name as they are now, not as the change began. */
	registry->slots[at].desc.ngrants = o->desc.ngrants;
	memcpy(registry->slots[at].desc.grants, o->desc.grants, sizeof(o->desc.grants));
	registry->slots[at].desc.owner = o->desc.owner;
	registry->slots[at].desc.owner_name = o->desc.owner_name;
	if ((o->desc.logged && !keep_until_checkpoint) || newd->logged)
		end = state_wal_log_publish(newd->dbid, &logged_old,
									o->desc.logged && !keep_until_checkpoint ? 1 : 0,
									&logged_new, newd->logged ? 1 : 0);
	o->hidden = true;
	o->replaced_by = newd->id;
	o->keep_until_checkpoint = keep_until_checkpoint;
	o->log_drop_later = keep_until_checkpoint && o->desc.logged;
	o->desc.moving = 0;
	registry->slots[at].hidden = false;
	if (end != InvalidXLogRecPtr)
	{
		o->publish_end = end;
		registry->slots[at].publish_end = end;
		if ((XLogRecPtr) pg_atomic_read_u64(&registry->publish_pending) < end)
			pg_atomic_write_u64(&registry->publish_pending, end);	/* under the lock */
	}
	registry_bump_version();
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
	*logged_end = end;
	return oldat;
}

/*
 * registry_log_drop_of_hidden: a hidden logged state whose creation went to
 * WAL (CREATE_HIDDEN) logs its drop when it is dropped, so that replay and
 * standbys drop it too rather than keep it hidden, holding its id.
 */
void
registry_log_drop_of_hidden(int slot, uint32 id)
{
	RegistrySlot *s = &registry->slots[slot];

	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_EXCLUSIVE);
	if (s->desc.id == id && s->hidden && !s->dropping)
		s->log_drop_later = true;
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
}

/*
 * registry_replaced_in: the states alter_state replaced that wait for a
 * checkpoint (registry_publish_replacing's keep_until_checkpoint) whose
 * replacement is among the n states a checkpoint just made durable holds:
 * their descriptors go to *out and their slots to *slots (palloc'd); the
 * caller drops them.  Returns how many.
 */
int
registry_replaced_in(const StateDesc *held, int n, StateDesc **out, int **slots)
{
	int			count = 0;

	*out = palloc(sizeof(StateDesc) * registry->nslots);
	*slots = palloc(sizeof(int) * registry->nslots);
	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_SHARED);
	for (int i = 0; i < registry->nslots; i++)
	{
		RegistrySlot *s = &registry->slots[i];

		if (s->desc.id == 0 || s->dropping || !s->keep_until_checkpoint)
			continue;
		for (int j = 0; j < n; j++)
			if (held[j].id == s->replaced_by)
			{
				(*out)[count] = s->desc;
				(*slots)[count++] = i;
				break;
			}
	}
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
	return count;
}

int
registry_publish(Oid dbid, const uint32 *ids, int nids, RegistryKeepFn keep,
				 StateDesc **old, int **oldslots, XLogRecPtr *logged_end)
{
	int			nold = 0;
	uint32	   *logged_old = palloc(sizeof(uint32) * registry->nslots);
	uint32	   *logged_new = palloc(sizeof(uint32) * registry->nslots);
	int			nlogged_old = 0;
	int			nlogged_new = 0;
	int		   *changed = palloc(sizeof(int) * registry->nslots);
	int			nchanged = 0;
	XLogRecPtr	end = InvalidXLogRecPtr;

	*old = palloc(sizeof(StateDesc) * registry->nslots);
	*oldslots = palloc(sizeof(int) * registry->nslots);
	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_EXCLUSIVE);
	for (int i = 0; i < registry->nslots; i++)
	{
		RegistrySlot *s = &registry->slots[i];

		if (s->desc.id == 0 || s->desc.dbid != dbid || s->dropping || s->hidden)
			continue;
		if (keep && keep(&s->desc))
			continue;
		s->dropping = true;
		if (s->desc.logged)
			logged_old[nlogged_old++] = s->desc.id;
		changed[nchanged++] = i;
		(*old)[nold] = s->desc;
		(*oldslots)[nold++] = i;
	}
	/* Then the new ones appear. */
	for (int i = 0; i < registry->nslots; i++)
	{
		RegistrySlot *s = &registry->slots[i];

		if (s->desc.id == 0 || s->desc.dbid != dbid || s->dropping || !s->hidden)
			continue;
		for (int j = 0; j < nids; j++)
			if (ids[j] == s->desc.id)
			{
				s->hidden = false;
				if (s->desc.logged)
					logged_new[nlogged_new++] = s->desc.id;
				changed[nchanged++] = i;
			}
	}
	if (nlogged_old + nlogged_new > 0)
		end = state_wal_log_publish(dbid, logged_old, nlogged_old, logged_new, nlogged_new);
	/* Nothing logged while replaying, loading a checkpoint, or on a standby. */
	for (int i = 0; i < nchanged && end != InvalidXLogRecPtr; i++)
		registry->slots[changed[i]].publish_end = end;
	if (end != InvalidXLogRecPtr &&
		(XLogRecPtr) pg_atomic_read_u64(&registry->publish_pending) < end)
		pg_atomic_write_u64(&registry->publish_pending, end);	/* under the lock */
	registry_bump_version();
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
	pfree(logged_old);
	pfree(logged_new);
	pfree(changed);
	*logged_end = end;
	return nold;
}

/*
 * copy_slots copies the states that are not being dropped and are (hidden)
 * or are not (!hidden) hidden into out, and their slots into slots unless
 * it is NULL; it only copies.
 */
static int
copy_slots(bool hidden, StateDesc *out, int *slots, XLogRecPtr *wal_position)
{
	int			n = 0;

	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_SHARED);
	if (wal_position != NULL)
		*wal_position = RecoveryInProgress() ? InvalidXLogRecPtr : GetXLogInsertRecPtr();
	for (int i = 0; i < registry->nslots; i++)
	{
		RegistrySlot *s = &registry->slots[i];

		if (s->desc.id != 0 && !s->dropping && s->hidden == hidden)
		{
			if (slots)
				slots[n] = i;
			out[n++] = s->desc;
		}
	}
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
	return n;
}

/*
 * registry_copy_all copies every state of every database that is neither
 * being dropped nor being restored into out (room for max_states); returns
 * how many.  A snapshot's cut calls it with every partition locked, so it
 * must not fail: it only copies.  wal_position (if not NULL) gets the WAL
 * insert position at that instant: logged states' changes before it are in
 * the copy's states, those after it are not (format/state_wal.h).
 */
int
registry_copy_all(StateDesc *out, XLogRecPtr *wal_position)
{
	return copy_slots(false, out, NULL, wal_position);
}

/*
 * registry_copy_hidden copies the hidden states (made, not yet published,
 * not being dropped) into out and their slots into slots (room for
 * max_states each); returns how many.
 */
int
registry_copy_hidden(StateDesc *out, int *slots)
{
	return copy_slots(true, out, slots, NULL);
}

/*
 * registry_logged_pending counts a logged state that a session is about to
 * create (delta 1) or has created or failed to (-1): while one is, the
 * slot that keeps its WAL must stay (logged.c).
 */
void
registry_logged_pending(int delta)
{
	if (delta > 0)
		pg_atomic_fetch_add_u32(&registry->logged_pending, 1);
	else
		pg_atomic_fetch_sub_u32(&registry->logged_pending, 1);
}

/*
 * registry_any_logged: whether a logged state exists, hidden (being
 * restored) or being dropped included, or is being created.
 */
bool
registry_any_logged(void)
{
	bool		any = pg_atomic_read_u32(&registry->logged_pending) > 0;

	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_SHARED);
	for (int i = 0; i < registry->nslots && !any; i++)
		any = registry->slots[i].desc.id != 0 && registry->slots[i].desc.logged;
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
	return any;
}

/*
 * registry_find_match looks for a state that match(desc, arg) picks, in the
 * registry's slots, and copies its name to *name.  match runs under the
 * registry lock: it only compares fields.
 */
bool
registry_find_match(bool (*match) (const StateDesc *d, const void *arg), const void *arg,
					NameData *name)
{
	bool		found = false;

	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_SHARED);
	for (int i = 0; i < registry->nslots && !found; i++)
	{
		StateDesc  *d = &registry->slots[i].desc;

		found = d->id != 0 && match(d, arg);
		if (found)
			*name = d->name;
	}
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
	return found;
}

/*
 * registry_copy_database copies into a palloc'd array the descriptors of
 * every state of a database that holds a slot, hidden (being restored) and
 * dropping ones too; returns how many.
 */
int
registry_copy_database(Oid dbid, StateDesc **descs)
{
	int			n = 0;

	*descs = palloc(sizeof(StateDesc) * Max(registry->nslots, 1));
	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_SHARED);
	for (int i = 0; i < registry->nslots; i++)
	{
		RegistrySlot *s = &registry->slots[i];

		if (s->desc.id != 0 && s->desc.dbid == dbid)
			(*descs)[n++] = s->desc;
	}
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
	return n;
}

/*
 * registry_set_owner_name records a role's new name in the states it owns,
 * so that snapshots name their owners as they are called now.
 */
void
registry_set_owner_name(Oid role, const char *name)
{
	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_EXCLUSIVE);
	for (int i = 0; i < registry->nslots; i++)
	{
		StateDesc  *d = &registry->slots[i].desc;

		if (d->id != 0 && d->owner == role)
			namestrcpy(&d->owner_name, name);
	}
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
}

/*
 * registry_set_grant grants (or revokes) privileges on a state to a role.
 */
void
registry_set_grant(const StateDesc *desc, int slot, Oid role, uint8 privs,
				   bool grant)
{
	RegistrySlot *s = &registry->slots[slot];
	StateDesc  *d = &s->desc;
	int			i;

	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_EXCLUSIVE);
	if (d->id != desc->id || s->dropping)
	{
		LWLockRelease(state_backend_lock(LOCK_REGISTRY));
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("state \"%s\" does not exist", NameStr(desc->name))));
	}
	for (i = 0; i < d->ngrants; i++)
		if (d->grants[i].role == role)
			break;

	if (grant)
	{
		if (i == d->ngrants)
		{
			if (d->ngrants >= STATE_MAX_GRANTS)
			{
				LWLockRelease(state_backend_lock(LOCK_REGISTRY));
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("state \"%s\" has too many grants", NameStr(d->name)),
						 errdetail("A state can be granted to at most %d roles.",
								   STATE_MAX_GRANTS),
						 errhint("Grant to a group role instead.")));
			}
			d->grants[i].role = role;
			d->grants[i].privs = 0;
			d->ngrants++;
		}
		d->grants[i].privs |= privs;
	}
	else if (i < d->ngrants)
	{
		d->grants[i].privs &= ~privs;
		if (d->grants[i].privs == 0)
		{
			d->grants[i] = d->grants[d->ngrants - 1];
			d->ngrants--;
		}
	}
	registry_bump_version();
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
}

/*
 * registry_set_moving marks a state as moving (move > 0: its writes log
 * their keys to that move, backend/keyed_move.c) or no longer (0); every
 * session looks at it again before its next write.  False when the state
 * is gone.
 */
bool
registry_set_moving(int slot, uint32 id, uint8 move)
{
	RegistrySlot *s = &registry->slots[slot];
	bool		ok;

	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_EXCLUSIVE);
	ok = s->desc.id == id && !s->dropping;
	if (ok)
	{
		s->desc.moving = move;
		registry_bump_version();
	}
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
	return ok;
}

/*
 * registry_alive tells whether the state with this id still holds its slot
 * and is not being dropped.  Backends call it under their own data lock
 * before they write, so a write cannot outlive a drop.
 */
bool
registry_alive(int slot, uint32 id)
{
	volatile RegistrySlot *s = &registry->slots[slot];

	return s->desc.id == id && !s->dropping;
}

void
registry_add_usage(int slot, int64 entries, int64 bytes)
{
	RegistrySlot *s = &registry->slots[slot];

	if (entries != 0)
		pg_atomic_fetch_add_u64(&s->entries, entries);
	if (bytes != 0)
		pg_atomic_fetch_add_u64(&s->bytes, bytes);
}

void
registry_usage(int slot, int64 *entries, int64 *bytes)
{
	RegistrySlot *s = &registry->slots[slot];

	*entries = (int64) pg_atomic_read_u64(&s->entries);
	*bytes = (int64) pg_atomic_read_u64(&s->bytes);
}

/*
 * registry_list copies the descriptors of a database's states, sorted by
 * name, into palloc'd arrays; returns how many.
 */
int
registry_list(Oid dbid, StateDesc **descs, int **slots)
{
	int			n = 0;

	state_backend_check_loaded();
	registry_wait_ready();
	*descs = palloc(sizeof(StateDesc) * registry->nslots);
	*slots = palloc(sizeof(int) * registry->nslots);

	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_SHARED);
	for (int i = 0; i < registry->nslots; i++)
	{
		RegistrySlot *s = &registry->slots[i];

		if (s->desc.id != 0 && !s->dropping && !s->hidden && s->desc.dbid == dbid)
		{
			(*descs)[n] = s->desc;
			(*slots)[n] = i;
			n++;
		}
	}
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));

	/* Insertion sort by name: a database holds few states. */
	for (int i = 1; i < n; i++)
	{
		for (int j = i; j > 0 &&
			 strcmp(NameStr((*descs)[j - 1].name), NameStr((*descs)[j].name)) > 0; j--)
		{
			StateDesc	td = (*descs)[j];
			int			ts = (*slots)[j];

			(*descs)[j] = (*descs)[j - 1];
			(*slots)[j] = (*slots)[j - 1];
			(*descs)[j - 1] = td;
			(*slots)[j - 1] = ts;
		}
	}
	return n;
}

/*
 * registry_timer_databases fills dbids with the databases that hold a
 * visible timers state (at most max of them); returns how many.  It needs
 * no database connection (the state worker calls it).
 */
int
registry_timer_databases(Oid *dbids, int max)
{
	int			n = 0;

	if (!registry_is_ready())
		return 0;
	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_SHARED);
	for (int i = 0; i < registry->nslots; i++)
	{
		RegistrySlot *s = &registry->slots[i];
		bool		seen = false;

		if (s->desc.id == 0 || s->dropping || s->hidden || !state_desc_fires(&s->desc))
			continue;
		for (int j = 0; j < n && !seen; j++)
			seen = dbids[j] == s->desc.dbid;
		if (!seen && n < max)
			dbids[n++] = s->desc.dbid;
	}
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
	return n;
}

/*
 * registry_find returns the slot of the visible state with that id (not
 * hidden, not being dropped) and copies its descriptor, or returns -1.
 */
int
registry_find(uint32 id, StateDesc *desc)
{
	int			found = -1;

	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_SHARED);
	for (int i = 0; i < registry->nslots && found < 0; i++)
	{
		RegistrySlot *s = &registry->slots[i];

		if (s->desc.id == id && id != 0 && !s->dropping && !s->hidden)
		{
			*desc = s->desc;
			found = i;
		}
	}
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
	return found;
}

/*
 * registry_get copies the descriptor of a live state (not being dropped),
 * looked up by id in its slot, or in every slot when slot is -1.  Returns
 * false when there is no such state.  "hidden" tells whether it is still
 * being restored.
 */
bool
registry_get(int slot, uint32 id, StateDesc *desc, bool *hidden)
{
	bool		found = false;

	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_SHARED);
	for (int i = (slot >= 0 ? slot : 0); i < registry->nslots; i++)
	{
		RegistrySlot *s = &registry->slots[i];

		if (s->desc.id == id && !s->dropping)
		{
			*desc = s->desc;
			*hidden = s->hidden;
			found = true;
			break;
		}
		if (slot >= 0)
			break;
	}
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
	return found;
}

/*
 * registry_get_stored is registry_get (any slot) for a backend that stores
 * descriptors beside its data, which come back after a crash whatever WAL
 * holds: a restore's publication counts only once its PUBLISH record is
 * flushed (registry_publish).  Until then a state it drops is still there,
 * and one it publishes, hidden; so the backend's files never get ahead of
 * WAL, and a crash leaves them on the side of the publication that replay
 * brings every other state to.
 */
bool
registry_get_stored(uint32 id, StateDesc *desc, bool *hidden)
{
	bool		found = false;

	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_SHARED);
	for (int i = 0; i < registry->nslots; i++)
	{
		RegistrySlot *s = &registry->slots[i];
		bool		pending;

		if (s->desc.id != id)
			continue;
		pending = s->publish_end != InvalidXLogRecPtr &&
			s->publish_end > GetFlushRecPtr(NULL);
		if (!s->dropping || pending)
		{
			*desc = s->desc;
			*hidden = s->hidden || pending;
			found = true;
		}
		break;
	}
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
	return found;
}

/*
 * registry_adopt puts back a state whose descriptor survived a restart
 * with its data (kept by its backend), keeping its id.  The state worker calls
 * it on a fresh registry, before anything else creates states.  Returns
 * false when there is no free slot (the caller says what becomes of it).
 */
bool
registry_adopt(const StateDesc *desc)
{
	int			at = -1;

	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_EXCLUSIVE);
	/*
	 * A start that failed after it adopted a backend's states (the worker
	 * exited before it loaded anything, and starts again on the same shared
	 * memory) adopts them again: into the slots they took.
	 */
	for (int i = 0; i < registry->nslots && at < 0; i++)
		if (registry->slots[i].desc.id == desc->id)
			at = i;
	for (int i = at >= 0 ? at : 0; i < registry->nslots; i++)
	{
		RegistrySlot *s = &registry->slots[i];

		if (s->desc.id != 0 && s->desc.id != desc->id)
			continue;
		s->desc = *desc;
		s->dropping = false;
		s->hidden = false;
		s->publish_end = InvalidXLogRecPtr;
		s->replaced_by = 0;
		s->keep_until_checkpoint = false;
		s->log_drop_later = false;
		pg_atomic_write_u64(&s->entries, 0);
		pg_atomic_write_u64(&s->bytes, 0);
		state_stats_reset(i);
		if (registry->next_id <= desc->id)
			registry->next_id = desc->id + 1;
		registry_bump_version();
		LWLockRelease(state_backend_lock(LOCK_REGISTRY));
		return true;
	}
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
	return false;
}

/*
 * registry_reserve_id keeps id from being given to a new state: it names a
 * state whose data a backend keeps without it being in the registry.
 */
void
registry_reserve_id(uint32 id)
{
	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_EXCLUSIVE);
	if (registry->next_id <= id)
		registry->next_id = id + 1;
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
}

/* registry_exists tells whether a database has a live state of that name. */
bool
registry_exists(Oid dbid, const char *name)
{
	bool		found;

	LWLockAcquire(state_backend_lock(LOCK_REGISTRY), LW_SHARED);
	found = registry_find_slot(dbid, name) >= 0;
	LWLockRelease(state_backend_lock(LOCK_REGISTRY));
	return found;
}
