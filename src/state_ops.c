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
#include "common/fault.h"
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
	const KeyedStateBackend *synced[STATE_BACKEND_MAX_PROVIDERS];
	int			nsynced = 0;
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

	for (int i = 0; i < n && sync_catalogs; i++)
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
