/*
 * module.c
 *		Entry point of the library: _PG_init, the shared memory hooks, the
 *		hooks on DROP, and the registration of the state worker.
 *
 * The shared structures are defined by their owners; this file only sizes
 * and initialises them at the right moments.  Nothing includes it, and it
 * is the one place, with worker.c, that names every part.
 */
#include "postgres.h"

#include "executor/executor.h"

#include "access/xact.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "parser/parse_func.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "backend/keyed_move.h"
#include "backend/providers.h"
#include "catalog/registry.h"
#include "catalog/stats.h"
#include "common/area.h"
#include "common/locks.h"
#include "common/settings.h"
#include "common/shmem_parts.h"
#include "common/ttl_clock.h"
#include "format/state_wal.h"
#include "ipc/channel.h"
#include "logged/logged.h"
#include "snapshot/restore.h"
#include "snapshot/snapshot_control.h"
#include "sql/sql_common.h"
#include "sql/sql_window.h"
#include "state_ops.h"
#include "timers/timer_fire.h"
#include "timers/timer_queue.h"
#include "txn/txn_state.h"
#include "worker.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static object_access_hook_type prev_object_access_hook = NULL;
static ProcessUtility_hook_type prev_process_utility_hook = NULL;
static ExecutorStart_hook_type prev_executor_start = NULL;
static ExecutorEnd_hook_type prev_executor_end = NULL;
static int	executor_depth = 0;

/* Statements running that may add, drop or retype columns (nesting depth). */
static int	column_changes = 0;

/* A database whose states go when the dropping transaction commits. */
static Oid	pending_drop_dbid = InvalidOid;
/* The subtransaction that made the drop: its abort undoes it. */
static SubTransactionId pending_drop_subid = InvalidSubTransactionId;
static List *pending_altered_roles = NIL;	/* in TopTransactionContext */

/*
 * The structs of static shared memory that their owners describe as a
 * ShmemPart (common/shmem_parts.h).  The providers' (each sets up its own)
 * and the timer queue's are sized and set up by their own calls below.
 */
static const ShmemPart *const shmem_parts[] = {
	&state_area_part,
	&registry_part,
	&snapshot_control_part,
	&snapshot_cut_descs_part,
	&channel_part,
	&state_stats_part,
	&ttl_clock_part,
	&logged_standby_part,
	&txn_gate_part,
	&txn_uses_part,
	&keyed_move_part,
	&registry_readers_part,
};

static void
state_backend_shmem_request(void)
{
	Size		size = 0;

	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	for (int i = 0; i < lengthof(shmem_parts); i++)
		size = add_size(size, shmem_part_size(shmem_parts[i]));
	size = add_size(size, keyed_backends_shmem_size());
	size = add_size(size, timer_queue_shmem_size());
	RequestAddinShmemSpace(size);
	state_locks_request();
}

/*
 * At every start of shared memory (the first, and after a crash), in the
 * postmaster: each struct found or made, and set up when made.  Children
 * inherit the pointers.
 */
static void
state_backend_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	state_locks_init();
	for (int i = 0; i < lengthof(shmem_parts); i++)
		shmem_part_attach(shmem_parts[i]);
	keyed_backends_shmem_init();
	timer_queue_shmem_init();
	LWLockRelease(AddinShmemInitLock);
}

/* Record the names, as committed, of the roles this transaction altered. */
static void
note_role_names(void)
{
	ListCell   *lc;

	foreach(lc, pending_altered_roles)
	{
		Oid			role = lfirst_oid(lc);
		const char *name = GetUserNameFromId(role, true);

		if (name != NULL)
			registry_set_owner_name(role, name);
	}
	pending_altered_roles = NIL;
}

/*
 * note_drop notes that the current (sub)transaction drops the states of a
 * database, at its commit.  ROLLBACK TO SAVEPOINT, or an exception block,
 * forgets it again (state_backend_subxact_callback).
 */
static void
note_drop(Oid dbid)
{
	pending_drop_dbid = dbid;
	pending_drop_subid = GetCurrentSubTransactionId();
}

/*
 * A subtransaction that noted a drop: its abort forgets the drop, its
 * commit hands it to its parent.
 */
static void
state_backend_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
							   SubTransactionId parentSubid, void *arg)
{
	if (!OidIsValid(pending_drop_dbid) || pending_drop_subid != mySubid)
		return;
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		pending_drop_dbid = InvalidOid;
		pending_drop_subid = InvalidSubTransactionId;
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
		pending_drop_subid = parentSubid;
}

/*
 * A type that a state holds, or a role that owns a state or has access to
 * one, cannot be dropped, and the attributes of a row type that a state's
 * types contain cannot be added, dropped or retyped.  DROP EXTENSION
 * state_backend drops the database's states, and DROP DATABASE frees them.  The drop is noted here and carried out just before
 * the dropping transaction commits, so a drop that fails or is rolled back
 * leaves the states alone.
 */
static void
state_backend_object_access(ObjectAccessType access, Oid classId,
							Oid objectId, int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	/*
	 * A column dropped, or added or altered by a statement that changes
	 * columns (not a rename, a default or a constraint): a table's or a
	 * composite type's.
	 */
	if (classId == RelationRelationId && subId > 0 &&
		(access == OAT_DROP ||
		 (column_changes > 0 && (access == OAT_POST_CREATE || access == OAT_POST_ALTER))))
	{
		Oid			rowtype = get_rel_type_id(objectId);

		if (OidIsValid(rowtype))
			registry_check_type_unused(rowtype, true);
		return;
	}
	/* A role renamed (or otherwise altered): its states' owner name */
	if (classId == AuthIdRelationId && access == OAT_POST_ALTER)
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

		pending_altered_roles = list_append_unique_oid(pending_altered_roles, objectId);
		MemoryContextSwitchTo(old);
		return;
	}
	if (access != OAT_DROP)
		return;
	if (classId == TypeRelationId)
		registry_check_type_unused(objectId, false);
	else if (classId == AuthIdRelationId)
		registry_check_role_unused(objectId);
	else if (classId == ProcedureRelationId)
		registry_check_aggregate_unused(objectId, "drop");
	else if (classId == DatabaseRelationId)
	{
		note_drop(objectId);
		/* Its timer worker would keep it in use. */
		timer_queue_stop(objectId);
	}
	else if (classId == ExtensionRelationId &&
			 objectId == get_extension_oid("state_backend", true))
		note_drop(MyDatabaseId);
}

/* Whether a statement may add, drop or change the type of columns. */
static bool
changes_columns(const Node *stmt)
{
	ListCell   *lc;

	if (IsA(stmt, ViewStmt))
		return ((const ViewStmt *) stmt)->replace;
	if (!IsA(stmt, AlterTableStmt))
		return false;
	foreach(lc, ((const AlterTableStmt *) stmt)->cmds)
	{
		switch (((AlterTableCmd *) lfirst(lc))->subtype)
		{
			case AT_AddColumn:
			case AT_AddColumnToView:
			case AT_DropColumn:
			case AT_AlterColumnType:
			case AT_AddOf:
			case AT_DropOf:
				return true;
			default:
				break;
		}
	}
	return false;
}

/*
 * An aggregate that a state folds with keeps its name and schema: its
 * snapshots name it by its signature.  A rename or move of it, or a rename
 * of its schema, is refused before it runs.
 */
static void
check_aggregate_renames(const Node *stmt)
{
	ObjectType	type;
	Node	   *object;
	const char *action;

	if (IsA(stmt, RenameStmt))
	{
		type = ((const RenameStmt *) stmt)->renameType;
		object = ((const RenameStmt *) stmt)->object;
		action = "rename";
		if (type == OBJECT_SCHEMA)
		{
			Oid			nsp = get_namespace_oid(((const RenameStmt *) stmt)->subname, true);
			StateDesc  *descs;
			int		   *slots;
			int			n = OidIsValid(nsp) ? registry_list(MyDatabaseId, &descs, &slots) : 0;

			for (int i = 0; i < n; i++)
				if (OidIsValid(descs[i].aggregate) &&
					get_func_namespace(descs[i].aggregate) == nsp)
					registry_check_aggregate_unused(descs[i].aggregate, "rename the schema of");
			return;
		}
	}
	else if (IsA(stmt, AlterObjectSchemaStmt))
	{
		type = ((const AlterObjectSchemaStmt *) stmt)->objectType;
		object = ((const AlterObjectSchemaStmt *) stmt)->object;
		action = "move";
	}
	else
		return;
	if (type == OBJECT_AGGREGATE || type == OBJECT_ROUTINE || type == OBJECT_FUNCTION)
	{
		Oid			fn = LookupFuncWithArgs(type, castNode(ObjectWithArgs, object), true);

		if (OidIsValid(fn))
			registry_check_aggregate_unused(fn, action);
	}
}

/*
 * Statements that change columns are marked while they run, so that the
 * object-access hook tells them from harmless ALTERs of a column (a
 * rename, statistics, NOT NULL), which fire the same hook.
 */
static void
state_backend_process_utility(PlannedStmt *pstmt, const char *queryString,
							  bool readOnlyTree, ProcessUtilityContext context,
							  ParamListInfo params, QueryEnvironment *queryEnv,
							  DestReceiver *dest, QueryCompletion *qc)
{
	bool		mark = changes_columns(pstmt->utilityStmt);

	check_aggregate_renames(pstmt->utilityStmt);
	if (mark)
		column_changes++;
	PG_TRY();
	{
		if (prev_process_utility_hook)
			prev_process_utility_hook(pstmt, queryString, readOnlyTree, context,
									  params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
	}
	PG_FINALLY();
	{
		if (mark)
			column_changes--;
	}
	PG_END_TRY();
}

static void
state_backend_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			note_role_names();
			if (OidIsValid(pending_drop_dbid))
			{
				Oid			dbid = pending_drop_dbid;

				pending_drop_dbid = InvalidOid;
				state_ops_drop_database(dbid);
			}
			logged_at_commit();
			break;
		case XACT_EVENT_PRE_PREPARE:
			logged_at_commit();
			state_ops_prepare();

			/*
			 * A prepared transaction commits later, elsewhere: its renames
			 * are noted when the role is next altered.
			 */
			pending_altered_roles = NIL;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			pending_drop_dbid = InvalidOid;
			pending_altered_roles = NIL;
			executor_depth = 0;
			registry_reader_exit();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PREPARE:
			executor_depth = 0;
			registry_reader_exit();
			break;
		default:
			break;
	}
}

/*
 * A session's state calls are over, for a change that waits for them
 * (registry_wait_readers), when its top-level statement ends.
 */
static void
state_backend_executor_start(QueryDesc *queryDesc, int eflags)
{
	executor_depth++;
	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

static void
state_backend_executor_end(QueryDesc *queryDesc)
{
	if (prev_executor_end)
		prev_executor_end(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
	if (executor_depth > 0 && --executor_depth == 0)
		registry_reader_exit();
}

/*
 * How a transactional state's pending folds combine with what is committed
 * at its commit (txn/txn_state.h): a window state's windows, or a
 * reducing or aggregating state's value.
 */
static void
txn_combine(const StateDesc *desc, StateMergeFn *fn, void **arg)
{
	if (desc->kind == STATE_KIND_WINDOW)
		sql_window_combine(desc, fn, arg);
	else
		sql_txn_combine(desc, fn, arg);
}

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;

	state_backend_mark_loaded();
	state_backend_define_settings(keyed_backend_setting_ok);
	state_wal_register();

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = state_backend_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = state_backend_shmem_startup;

	prev_object_access_hook = object_access_hook;
	object_access_hook = state_backend_object_access;
	prev_process_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = state_backend_process_utility;
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = state_backend_executor_start;
	prev_executor_end = ExecutorEnd_hook;
	ExecutorEnd_hook = state_backend_executor_end;
	restore_set_logged_hook(logged_before_restore);
	txn_state_set_combine(txn_combine);
	txn_state_init();
	timer_queue_init();
	timer_fire_register(STATE_KIND_MAP, &timers_fire_routine);
	timer_fire_register(STATE_KIND_WINDOW, &window_fire_routine);
	RegisterXactCallback(state_backend_xact_callback, NULL);
	RegisterSubXactCallback(state_backend_subxact_callback, NULL);
	keyed_backends_init();

	/* The built-in backends defined their settings: no other is ours. */
	MarkGUCPrefixReserved("state_backend");

	state_worker_register();
}

PG_FUNCTION_INFO_V1(state_require_preload);

/* The install script calls this so CREATE EXTENSION fails early. */
Datum
state_require_preload(PG_FUNCTION_ARGS)
{
	state_backend_check_loaded();
	PG_RETURN_VOID();
}
