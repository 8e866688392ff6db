/*
 * state_ops.c
 *		A state's life as a whole: the registry (catalog/registry.c) and the
 *		state's backend (backend/keyed_backend.h) changed together.
 *
 * The registry never calls a backend and a backend never changes the
 * registry's slots, so each change that concerns both is made here: a
 * create adds the descriptor, then has the backend set up its storage; a
 * drop marks the slot (no session resolves the state any more), has the
 * backend remove the data, then frees the slot.  Called by sql/ and by
 * snapshot/restore.c; module.c calls state_ops_drop_database.
 */
#include "postgres.h"

#include "access/xact.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/memutils.h"

#include "access/htup_details.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "backend/keyed_backend.h"
#include "catalog/registry.h"
#include "common/settings.h"
#include "common/fault.h"
#include "format/state_wal.h"
#include "state_ops.h"

/*
 * state_ops_check_type refuses types a state cannot hold: pseudo-types,
 * types without binary send/receive functions when the state stores their
 * values (snapshots in canonical format need them; an aggregating state
 * stores only transition states, not its input values), and types the
 * current role has no USAGE on (as CREATE TABLE refuses).  Checked when a
 * state is created or restored.
 */
void
state_ops_check_type(Oid type, const char *what, bool stored)
{
	HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
	Form_pg_type typ;
	bool		pseudo;
	bool		binary_io;

	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("type with OID %u does not exist", type)));
	typ = (Form_pg_type) GETSTRUCT(tup);
	pseudo = typ->typtype == TYPTYPE_PSEUDO;
	binary_io = OidIsValid(typ->typsend) && OidIsValid(typ->typreceive);
	ReleaseSysCache(tup);

	if (pseudo)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s cannot be of pseudo-type %s", what, format_type_be(type))));
	if (stored && !binary_io)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("%s cannot be of type %s", what, format_type_be(type)),
				 errdetail("State types need binary send and receive functions.")));
	/* As CREATE TABLE does for a column's type. */
	if (pg_type_aclcheck(type, GetUserId(), ACL_USAGE) != ACLCHECK_OK)
		aclcheck_error_type(ACLCHECK_NO_PRIV, type);
}

/*
 * state_ops_check_list_type refuses a list state's element type when
 * list_get could not return the elements: as an array of the type, which
 * must have one (arrays and some others have no array type of their own).
 */
void
state_ops_check_list_type(Oid type)
{
	if (!OidIsValid(get_array_type(type)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a list state cannot hold values of type %s", format_type_be(type)),
				 errdetail("list_get returns a list as an array, and type %s has no array type.",
						   format_type_be(type)),
				 errhint("Keep arrays in a value state, or wrap them in a composite type.")));
}

/* Remove a marked state's data, then free its slot. */
static void
finish_drop(const StateDesc *desc, int slot, bool confirm)
{
	StateTarget target;

	target = state_target(desc, slot);
	keyed_backend_by_id(desc->backend)->drop(&target, confirm);
	registry_free_slot(desc, slot);
}

/*
 * state_ops_create adds a new state of the current database (desc filled
 * in but for its id, set here) and sets up its storage; returns its slot.
 * If the backend fails, the state is gone again.
 */
int
state_ops_create(StateDesc *desc)
{
	const KeyedStateBackend *backend = keyed_backend_by_id(desc->backend);
	int			slot = registry_create(desc, false);
	StateTarget target;

	if (backend->create == NULL)
		return slot;
	target = state_target(desc, slot);
	PG_TRY();
	{
		backend->create(&target);
	}
	PG_CATCH();
	{
		state_ops_discard(desc, slot);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return slot;
}

/*
 * state_ops_drop drops a resolved state.  Returns false when another
 * session dropped it first.
 */
bool
state_ops_drop(const StateDesc *desc, int slot)
{
	if (!registry_mark_dropping(desc, slot))
		return false;
	finish_drop(desc, slot, true);
	return true;
}

/* log_entry: one entry of a hidden logged state goes to WAL. */
static void
log_entry(void *arg, const char *key, uint32 keylen, const char *value, uint32 valuelen)
{
	const StateDesc *d = arg;

	(void) state_wal_log(STATE_WAL_PUT, d->id, key, keylen, NULL, 0, value, valuelen, false);
	CHECK_FOR_INTERRUPTS();
}

/*
 * state_ops_log_hidden writes a hidden logged state (a restore's, a
 * change's copy) to WAL before its publication: its CREATE_HIDDEN record,
 * then a PUT per entry.  From then on its drop, if it is dropped before
 * its publication, is logged too, so that replay and standbys drop it
 * rather than keep it hidden under its id.
 */
void
state_ops_log_hidden(const StateDesc *desc, int slot)
{
	StateTarget target = state_target(desc, slot);

	registry_log_drop_of_hidden(slot, desc->id);
	(void) state_wal_log_create(desc, true);
	keyed_backend_by_id(desc->backend)->iterate(&target, -1, log_entry,
												 unconstify(StateDesc *, desc));
}

/*
 * state_ops_discard drops a state that will never be used: a hidden one of
 * a restore that failed, or one whose creation failed.  Nothing of it was
 * made durable, and its caller may be handling an error.
 */
void
state_ops_discard(const StateDesc *desc, int slot)
{
	if (registry_mark_dropping(desc, slot))
		finish_drop(desc, slot, false);
}

static void sync_backend_catalogs(const StateDesc *descs, int n);

/* A state whose backend kept its data across the restart. */
static bool
state_kept_by_backend(const StateDesc *desc)
{
	return keyed_backend_kept_data(desc->backend);
}

static bool
state_keep_every(const StateDesc *desc)
{
	return true;
}

/*
 * state_ops_publish makes a restore take effect: the hidden states descs
 * replace the database's states at one instant (but those keep says),
 * then the replaced states' data is removed.  With sync_catalogs, the backends of published states that
 * keep descriptors of their own store them before this returns.
 *
 * When logged states are dropped or published, the registry logs one
 * PUBLISH record, and the restore is durable once WAL is flushed to it:
 * replay brings every logged state to one side of it, and a backend that
 * keeps its states across a crash (rocksdb) stores nothing of the
 * publication before (registry_get_stored), so it comes back on the same
 * side.  Only then is the replaced states' data removed.
 */
void
state_ops_publish(Oid dbid, const StateDesc *descs, int n, StatePublishKeep keep,
				  bool sync_catalogs)
{
	uint32	   *ids = palloc(sizeof(uint32) * Max(n, 1));
	StateDesc  *old;
	int		   *oldslots;
	int			nold;
	XLogRecPtr	logged_end;

	for (int i = 0; i < n; i++)
		ids[i] = descs[i].id;
	nold = registry_publish(dbid, ids, n,
							keep == STATE_PUBLISH_KEEP_ALL ? state_keep_every :
							keep == STATE_PUBLISH_KEEP_KEPT ? state_kept_by_backend : NULL,
							&old, &oldslots, &logged_end);
	if (logged_end != InvalidXLogRecPtr)
	{
		FAULT_POINT("restore.publish_logged");
		XLogFlush(logged_end);
		FAULT_POINT("restore.publish_durable");
	}
	for (int i = 0; i < nold; i++)
		finish_drop(&old[i], oldslots[i], true);
	pfree(old);
	pfree(oldslots);
	pfree(ids);
	sync_backend_catalogs(descs, sync_catalogs ? n : 0);
}

/*
 * state_ops_publish_replacing publishes one hidden state in place of one
 * visible state (alter_state): from when it returns, sessions find the new
 * one.  The old state, hidden, keeps its data until
 * state_ops_finish_replacing (once the calls that may still read it have
 * ended), or with keep_until_checkpoint until a checkpoint holds the new
 * one (state_ops_checkpoint_done).  *logged_end gets the end of the PUBLISH
 * record when either is logged: state_ops_publish_durable then.  Returns
 * false, changing nothing, when the old state was dropped meanwhile;
 * raises 42710 when another state took the new one's name.
 */
bool
state_ops_publish_replacing(const StateDesc *newd, const StateDesc *oldd,
							bool keep_until_checkpoint, int *oldslot, XLogRecPtr *logged_end)
{
	*oldslot = registry_publish_replacing(newd, oldd, keep_until_checkpoint, logged_end);
	return *oldslot >= 0;
}

/*
 * state_ops_publish_durable makes a publication by
 * state_ops_publish_replacing durable: its PUBLISH record flushed, and the
 * new state's descriptor stored by its backend if it keeps them.
 */
void
state_ops_publish_durable(const StateDesc *newd, XLogRecPtr logged_end)
{
	if (logged_end != InvalidXLogRecPtr)
	{
		FAULT_POINT("restore.publish_logged");
		XLogFlush(logged_end);
		FAULT_POINT("restore.publish_durable");
	}
	sync_backend_catalogs(newd, 1);
}

/*
 * state_ops_finish_replacing removes the data of a state replaced by
 * state_ops_publish_replacing.
 */
void
state_ops_finish_replacing(const StateDesc *oldd, int oldslot)
{
	(void) state_ops_drop(oldd, oldslot);
}

/*
 * state_ops_checkpoint_done, in the state worker once a checkpoint is
 * durable: the states alter_state replaced that waited for one holding
 * their replacement go.
 */
void
state_ops_checkpoint_done(const StateDesc *held, int n)
{
	StateDesc  *old;
	int		   *slots;
	int			nold = registry_replaced_in(held, n, &old, &slots);

	for (int i = 0; i < nold; i++)
		(void) state_ops_drop(&old[i], slots[i]);
	pfree(old);
	pfree(slots);
}

/*
 * state_ops_drop_replaced, at the end of a start: a state that another
 * present one replaced (StateDesc.replaces: a crash came between the
 * change and the old state's drop) goes.
 */
void
state_ops_drop_replaced(void)
{
	StateDesc  *descs = palloc(sizeof(StateDesc) * Max(state_backend_max_states, 1));
	int			n = registry_copy_all(descs, NULL);

	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
		{
			StateDesc	cur;
			int			slot;

			if (j == i || descs[j].replaces != descs[i].id || descs[j].dbid != descs[i].dbid)
				continue;
			slot = registry_find(descs[i].id, &cur);
			if (slot >= 0)
			{
				ereport(LOG,
						(errmsg("state_backend dropped state \"%s\" (id %u), which a change replaced before the server stopped",
								NameStr(cur.name), cur.id)));
				(void) state_ops_drop(&cur, slot);
			}
			break;
		}
	pfree(descs);
}

/*
 * sync_backend_catalogs has the backends of the n states given that keep
 * descriptors of their own store them, once each.
 */
static void
sync_backend_catalogs(const StateDesc *descs, int n)
{
	const KeyedStateBackend *synced[STATE_BACKEND_MAX_PROVIDERS];
	int			nsynced = 0;

	for (int i = 0; i < n; i++)
	{
		const KeyedStateBackend *b = keyed_backend_by_id(descs[i].backend);
		bool		done = b->sync_catalog == NULL;

		for (int j = 0; j < nsynced && !done; j++)
			done = synced[j] == b;
		if (done)
			continue;
		b->sync_catalog();
		synced[nsynced++] = b;
	}
}

/*
 * A state's writers and alter_state keep apart by a heavyweight lock of
 * the state (an advisory lock's tag, in a space of its own: its fourth
 * field), held to the end of the transaction as a table's lock is: a write
 * takes it in ROW EXCLUSIVE mode, a change in EXCLUSIVE mode, so a change
 * waits for the transactions that wrote to the state, and writers wait for
 * the change (readers never do).  Deadlocks and lock_timeout are
 * PostgreSQL's.
 */
#define STATE_LOCK_SPACE	0x5342

static void
state_lock_tag(LOCKTAG *tag, const StateDesc *desc)
{
	SET_LOCKTAG_ADVISORY(*tag, desc->dbid, desc->id, 0, STATE_LOCK_SPACE);
}

/*
 * state_ops_lock_writes takes a state's writers' lock for the current
 * (sub)transaction; taken already in it, it costs a compare.  The caller
 * looks at the registry again after it: a change may have replaced the
 * state while it waited.
 */
/*
 * The states whose writers' lock this transaction took, so that a PREPARE
 * gives them back (state_ops_prepare): a state's writes are applied when
 * they are made, so a prepared transaction holds nothing a change must wait
 * for.  Kept in TopTransactionContext.
 */
static LOCKTAG *locked = NULL;
static int	nlocked = 0;
static int	locked_room = 0;
static LocalTransactionId locked_lxid = InvalidLocalTransactionId;

static void
note_locked(const StateDesc *desc)
{
	if (locked_lxid != MyProc->lxid)
	{
		locked = NULL;
		nlocked = locked_room = 0;
		locked_lxid = MyProc->lxid;
	}
	if (nlocked == locked_room)
	{
		locked_room = Max(8, locked_room * 2);
		locked = locked == NULL ?
			MemoryContextAlloc(TopTransactionContext, sizeof(LOCKTAG) * locked_room) :
			repalloc(locked, sizeof(LOCKTAG) * locked_room);
	}
	state_lock_tag(&locked[nlocked++], desc);
}

/*
 * state_ops_prepare, before a PREPARE TRANSACTION: the writers' locks of
 * the states the transaction wrote to go (a transactional state's writes
 * refuse PREPARE before this).
 */
void
state_ops_prepare(void)
{
	if (locked_lxid != MyProc->lxid)
		return;
	for (int i = 0; i < nlocked; i++)
		if (LockHeldByMe(&locked[i], RowExclusiveLock))
			LockRelease(&locked[i], RowExclusiveLock, false);
	nlocked = 0;
}

/* The state this session is changing (alter_state), if any. */
static uint32 altering_id = 0;

/*
 * state_ops_altering notes the state this session changes from now on
 * (NULL: none): the change's own code (a USING expression, a cast) may not
 * write to it, since those writes would go to the state it replaces.
 */
void
state_ops_altering(const StateDesc *desc)
{
	altering_id = desc ? desc->id : 0;
}

void
state_ops_lock_writes(const StateDesc *desc)
{
	static LocalTransactionId held_lxid = InvalidLocalTransactionId;
	static SubTransactionId held_subxid = InvalidSubTransactionId;
	static uint32 held_id = 0;
	LOCKTAG		tag;

	if (unlikely(altering_id != 0) && altering_id == desc->id)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot write to state \"%s\" while changing it", NameStr(desc->name)),
				 errdetail("The change's expressions and casts run while its entries are copied.")));

	if (held_id == desc->id && held_lxid == MyProc->lxid &&
		held_subxid == GetCurrentSubTransactionId())
		return;
	state_lock_tag(&tag, desc);
	if (LockAcquire(&tag, RowExclusiveLock, false, false) != LOCKACQUIRE_ALREADY_HELD)
		note_locked(desc);
	held_id = desc->id;
	held_lxid = MyProc->lxid;
	held_subxid = GetCurrentSubTransactionId();
}

/*
 * state_ops_unlock_alter gives back a change's locks of a state before its
 * transaction ends: once the state is replaced, its writers go to the new
 * one.
 */
void
state_ops_unlock_alter(const StateDesc *desc)
{
	LOCKTAG		tag;

	state_lock_tag(&tag, desc);
	if (LockHeldByMe(&tag, ExclusiveLock))
		LockRelease(&tag, ExclusiveLock, false);
	if (LockHeldByMe(&tag, ShareUpdateExclusiveLock))
		LockRelease(&tag, ShareUpdateExclusiveLock, false);
}

/* state_ops_wrote: whether this transaction holds a state's writers' lock. */
bool
state_ops_wrote(const StateDesc *desc)
{
	LOCKTAG		tag;

	state_lock_tag(&tag, desc);
	return LockHeldByMe(&tag, RowExclusiveLock);
}

/*
 * state_ops_lock_alter takes the lock one change of a state holds from its
 * start: changes wait for each other, writers do not wait for it.
 */
void
state_ops_lock_alter(const StateDesc *desc)
{
	LOCKTAG		tag;

	state_lock_tag(&tag, desc);
	(void) LockAcquire(&tag, ShareUpdateExclusiveLock, false, false);
}

/*
 * state_ops_wait_writers returns once every transaction that holds the
 * state's writers' lock now has ended (new writers wait meanwhile).
 */
void
state_ops_wait_writers(const StateDesc *desc)
{
	LOCKTAG		tag;

	state_lock_tag(&tag, desc);
	(void) LockAcquire(&tag, ShareLock, false, false);
	LockRelease(&tag, ShareLock, false);
}

/*
 * state_ops_lock_change takes the lock that keeps a state's writers out
 * until the end of the transaction, waiting for those that wrote to it.
 */
void
state_ops_lock_change(const StateDesc *desc)
{
	LOCKTAG		tag;

	state_lock_tag(&tag, desc);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * state_ops_drop_database drops every state of a database (DROP EXTENSION,
 * DROP DATABASE).
 */
void
state_ops_drop_database(Oid dbid)
{
	StateDesc  *descs;
	int		   *slots;
	int			n = registry_list(dbid, &descs, &slots);

	for (int i = 0; i < n; i++)
		(void) state_ops_drop(&descs[i], slots[i]);
	pfree(descs);
	pfree(slots);
}
