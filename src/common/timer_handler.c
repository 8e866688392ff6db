/*
 * common/timer_handler.c
 *		The handler of a timers state: a plain function of (the state's key
 *		type, timestamptz) that its owner may execute, checked when the state
 *		is created, found again by its signature when a snapshot is restored
 *		elsewhere, and checked again before every batch of timers it fires
 *		(it may have been dropped or replaced meanwhile).  A window state's
 *		late function, of (key, timestamptz, value), is checked, named and
 *		found the same way.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/builtins.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

#include "common/aggregate.h"
#include "common/timer_handler.h"

/*
 * window_result_type: the type of a window state's results, emit's last
 * argument: the value type for a reducer, the aggregate's result type, or
 * an array of values.
 */
Oid
window_result_type(const StateDesc *desc)
{
	Oid			value = desc->types[STATE_TYPE_VALUE].oid;

	if (desc->window_contents == STATE_WINDOW_AGGREGATE)
		return get_func_rettype(desc->aggregate);
	if (desc->window_contents == STATE_WINDOW_LIST)
		return get_array_type(value);
	return value;
}

static const char *window_aggregate_problem(const StateDesc *desc);
static char *emit_table_problem(Oid relid, const StateDesc *desc, int *sqlstate);

/* The arguments a state's handler takes: (key, instant), or emit's four. */
static int
handler_argtypes(const StateDesc *desc, Oid *types)
{
	types[0] = desc->types[STATE_TYPE_KEY].oid;
	types[1] = TIMESTAMPTZOID;
	if (desc->kind != STATE_KIND_WINDOW)
		return 2;
	types[2] = TIMESTAMPTZOID;
	types[3] = window_result_type(desc);
	return 4;
}

static char *
argtypes_text(const Oid *types, int n)
{
	StringInfoData s;

	initStringInfo(&s);
	for (int i = 0; i < n; i++)
		appendStringInfo(&s, "%s%s", i > 0 ? ", " : "", format_type_be(types[i]));
	return s.data;
}

/* The arguments a window state's late function takes: (key, instant, value). */
static int
late_argtypes(const StateDesc *desc, Oid *types)
{
	types[0] = desc->types[STATE_TYPE_KEY].oid;
	types[1] = TIMESTAMPTZOID;
	types[2] = desc->types[STATE_TYPE_VALUE].oid;
	return 3;
}

/*
 * function_problem: NULL when fn is a plain function of the n arguments
 * types, not returning a set, else what it is instead.
 */
static char *
function_problem(Oid fn, const Oid *types, int n)
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	Form_pg_proc proc;
	char	   *problem = NULL;

	if (!HeapTupleIsValid(tup))
		return pstrdup("it does not exist");
	proc = (Form_pg_proc) GETSTRUCT(tup);
	if (proc->prokind != PROKIND_FUNCTION)
		problem = pstrdup("it is not a plain function (an aggregate, window function or procedure)");
	else if (proc->proretset)
		problem = pstrdup("it returns a set");
	else if (proc->pronargs != n ||
			 memcmp(proc->proargtypes.values, types, sizeof(Oid) * n) != 0)
		problem = psprintf("its arguments are not (%s)", argtypes_text(types, n));
	ReleaseSysCache(tup);
	return problem;
}

/* handler_problem: function_problem for the state's handler or emit function. */
static char *
handler_problem(Oid fn, const StateDesc *desc)
{
	Oid			types[4];
	int			n = handler_argtypes(desc, types);

	return function_problem(fn, types, n);
}

/*
 * function_lookup finds the function a descriptor read from a snapshot
 * names by its signature ("what" says which), or raises that it does not
 * exist on this server.
 */
static Oid
function_lookup(const StateDesc *desc, const char *signature, Size room, const char *what)
{
	LOCAL_FCINFO(fcinfo, 1);
	Datum		oid;

	if (memchr(signature, '\0', room) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("state \"%s\" names its %s with no end", NameStr(desc->name), what)));
	InitFunctionCallInfoData(*fcinfo, NULL, 1, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = CStringGetTextDatum(signature);
	fcinfo->args[0].isnull = false;
	oid = to_regprocedure(fcinfo);
	if (fcinfo->isnull || !OidIsValid(DatumGetObjectId(oid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("%s %s of %s state \"%s\" does not exist on this server",
						what, signature, state_desc_kind_name(desc), NameStr(desc->name)),
				 errhint("Create the function in this database before restoring the snapshot.")));
	return DatumGetObjectId(oid);
}

/* The signature a state names a function by, or raises that it is too long. */
static char *
function_signature(Oid fn, Size room)
{
	char	   *sig = format_procedure_qualified(fn);

	if (strlen(sig) >= room)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("the signature of function %s is too long", sig),
				 errdetail("A state names the functions it calls in at most %d bytes.",
						   (int) room - 1)));
	return sig;
}

/*
 * timer_handler_describe checks fn as the handler of a timers state (or
 * the emit function of a window state) desc describes, owned by owner,
 * and records it in desc.  Raises what is wrong.
 */
void
timer_handler_describe(Oid fn, Oid owner, StateDesc *desc)
{
	char	   *problem = handler_problem(fn, desc);
	bool		window = desc->kind == STATE_KIND_WINDOW;
	Oid			types[4];
	int			n = handler_argtypes(desc, types);
	char	   *sig;

	if (problem != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
				 errmsg("function %s cannot %s: %s", format_procedure(fn),
						window ? "emit windows" : "handle timers", problem),
				 window ?
				 errhint("An emit function is a function of (%s), called with a window's key, start, end and result.",
						 argtypes_text(types, n)) :
				 errhint("A handler is a function of (%s, timestamptz), called with a timer's key and instant.",
						 format_type_be(types[0]))));
	if (pg_proc_aclcheck(fn, owner, ACL_EXECUTE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function %s", format_procedure(fn)),
				 errdetail("The state's owner must be able to execute its %s, which runs as the owner.",
						   window ? "emit function" : "handler")));
	sig = function_signature(fn, sizeof(desc->timer_signature));
	desc->timer_handler = fn;
	strlcpy(desc->timer_signature, sig, sizeof(desc->timer_signature));
}

/*
 * timer_handler_resolve finds, on this server, the handler a descriptor
 * read from a snapshot names by its signature, and checks it as create
 * does.  Types are resolved already.
 */
void
timer_handler_resolve(StateDesc *desc)
{
	timer_handler_describe(function_lookup(desc, desc->timer_signature,
										   sizeof(desc->timer_signature),
										   desc->kind == STATE_KIND_WINDOW ? "emit function" : "handler"),
						   desc->owner, desc);
}

/*
 * late_fn_describe checks fn as the late function of the window state desc
 * describes (a plain function of (key, timestamptz, value) its owner may
 * execute) and records it in desc.  Raises what is wrong.
 */
void
late_fn_describe(Oid fn, StateDesc *desc)
{
	Oid			types[3];
	int			n = late_argtypes(desc, types);
	char	   *problem = function_problem(fn, types, n);

	if (problem != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
				 errmsg("function %s cannot take late values: %s", format_procedure(fn), problem),
				 errhint("A late function is a function of (%s), called with each value dropped as late: its key, event time and value.",
						 argtypes_text(types, n))));
	if (pg_proc_aclcheck(fn, desc->owner, ACL_EXECUTE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function %s", format_procedure(fn)),
				 errdetail("The state's owner must be able to execute its late function, which runs as the owner.")));
	strlcpy(desc->late_signature, function_signature(fn, sizeof(desc->late_signature)),
			sizeof(desc->late_signature));
	desc->late_fn = fn;
}

/* late_fn_resolve: timer_handler_resolve for a window state's late function. */
void
late_fn_resolve(StateDesc *desc)
{
	late_fn_describe(function_lookup(desc, desc->late_signature, sizeof(desc->late_signature),
									 "late function"),
					 desc);
}

/*
 * late_fn_problem: NULL when a window state's late function may run now,
 * else why not (it may have been dropped or replaced since).
 */
const char *
late_fn_problem(const StateDesc *desc)
{
	Oid			types[3];
	int			n = late_argtypes(desc, types);
	char	   *problem = function_problem(desc->late_fn, types, n);

	if (problem != NULL)
		return psprintf("late function %s of window state \"%s\" cannot run: %s",
						desc->late_signature, NameStr(desc->name), problem);
	if (pg_proc_aclcheck(desc->late_fn, desc->owner, ACL_EXECUTE) != ACLCHECK_OK)
		return psprintf("the owner of window state \"%s\" may not execute its late function %s",
						NameStr(desc->name), desc->late_signature);
	return NULL;
}

/* A window state's aggregate runs in the worker too (its final function). */
static const char *
window_aggregate_problem(const StateDesc *desc)
{
	char	   *problem;

	if (desc->kind != STATE_KIND_WINDOW || desc->window_contents != STATE_WINDOW_AGGREGATE)
		return NULL;
	problem = aggregate_problem(desc->aggregate, desc->owner);
	if (problem != NULL)
		return psprintf("the aggregate of window state \"%s\" cannot run: %s",
						NameStr(desc->name), problem);
	return NULL;
}

/*
 * emit_table_columns_problem: NULL when the first four columns of tupdesc
 * (dropped ones left out) are of the key's type, timestamptz, timestamptz
 * and the result's type of the window state desc describes, none of them
 * generated; else which is not.
 */
char *
emit_table_columns_problem(TupleDesc tupdesc, const StateDesc *desc)
{
	Oid			types[4];
	const char *names[4] = {"key", "window start", "window end", "result"};
	int			col = 0;

	(void) handler_argtypes(desc, types);
	for (int i = 0; i < tupdesc->natts && col < 4; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		if (att->attisdropped)
			continue;
		if (att->atttypid != types[col] || att->attgenerated != '\0')
			return psprintf("its column \"%s\" is %s%s, not %s (the %s)",
							NameStr(att->attname), format_type_be(att->atttypid),
							att->attgenerated != '\0' ? " (generated)" : "",
							format_type_be(types[col]), names[col]);
		col++;
	}
	if (col < 4)
		return psprintf("it has %d columns; it needs (%s) first", col, argtypes_text(types, 4));
	return NULL;
}

/*
 * emit_table_problem: NULL when relid is a table a window state's owner
 * may insert its fired windows into: a plain table (not partitioned, not
 * a view or a foreign table) whose first four columns are a window's
 * (emit_table_columns_problem), into which the owner may INSERT, without
 * row-level security that applies to the owner.  Else what is wrong, and
 * its SQLSTATE in *sqlstate.
 */
static char *
emit_table_problem(Oid relid, const StateDesc *desc, int *sqlstate)
{
	Relation	rel = try_relation_open(relid, AccessShareLock);
	char	   *problem = NULL;

	*sqlstate = ERRCODE_WRONG_OBJECT_TYPE;
	if (rel == NULL)
		return pstrdup("it does not exist");
	if (rel->rd_rel->relkind != RELKIND_RELATION)
		problem = pstrdup("it is not a plain table (a partitioned table, view or foreign table cannot take them)");
	else if ((problem = emit_table_columns_problem(RelationGetDescr(rel), desc)) != NULL)
		*sqlstate = ERRCODE_DATATYPE_MISMATCH;
	else if (pg_class_aclcheck(relid, desc->owner, ACL_INSERT) != ACLCHECK_OK)
	{
		problem = pstrdup("the state's owner may not insert into it");
		*sqlstate = ERRCODE_INSUFFICIENT_PRIVILEGE;
	}
	else if (check_enable_rls(relid, desc->owner, true) == RLS_ENABLED)
		problem = pstrdup("row-level security applies to the state's owner on it");
	relation_close(rel, AccessShareLock);
	return problem;
}

/*
 * emit_table_describe checks relid as the emit table of the window state
 * desc describes and records it in desc.  Raises what is wrong: 42501
 * when the owner may not insert into it, 42804 for a column's type, else
 * 42809.
 */
void
emit_table_describe(Oid relid, StateDesc *desc)
{
	int			sqlstate;
	char	   *problem = emit_table_problem(relid, desc, &sqlstate);
	char	   *name;
	Oid			types[4];

	(void) handler_argtypes(desc, types);
	if (problem != NULL)
		ereport(ERROR,
				(errcode(sqlstate),
				 errmsg("relation %s cannot take the windows of window state \"%s\": %s",
						get_rel_name(relid) ? get_rel_name(relid) : "(none)",
						NameStr(desc->name), problem),
				 errhint("An emit table's first four columns are (%s): a fired window's key, start, end and result; further columns take their defaults.",
						 argtypes_text(types, 4))));
	name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
	if (strlen(name) >= sizeof(desc->emit_table_name))
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("the name of table %s is too long", name)));
	strlcpy(desc->emit_table_name, name, sizeof(desc->emit_table_name));
	desc->emit_table = relid;
}

/*
 * emit_table_resolve finds, on this server, the emit table a descriptor
 * read from a snapshot names, and checks it as create does.
 */
void
emit_table_resolve(StateDesc *desc)
{
	Oid			relid;

	if (memchr(desc->emit_table_name, '\0', sizeof(desc->emit_table_name)) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("state \"%s\" names its emit table with no end", NameStr(desc->name))));
	relid = RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(desc->emit_table_name)),
							 NoLock, true);
	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("emit table %s of window state \"%s\" does not exist on this server",
						desc->emit_table_name, NameStr(desc->name)),
				 errhint("Create the table in this database before restoring the snapshot.")));
	emit_table_describe(relid, desc);
}

/*
 * timer_handler_problem: NULL when a timers state's handler may run now,
 * else why not (the timer worker keeps the timers and says so).
 */
const char *
timer_handler_problem(const StateDesc *desc)
{
	char	   *problem;
	const char *kind = state_desc_kind_name(desc);
	const char *what = desc->kind == STATE_KIND_WINDOW ? "emit function" : "handler";

	if (desc->emit_table_name[0] != '\0')
	{
		int			sqlstate;

		if ((problem = emit_table_problem(desc->emit_table, desc, &sqlstate)) != NULL)
			return psprintf("emit table %s of window state \"%s\" cannot take rows: %s",
							desc->emit_table_name, NameStr(desc->name), problem);
		return window_aggregate_problem(desc);
	}
	problem = handler_problem(desc->timer_handler, desc);
	if (problem != NULL)
		return psprintf("%s %s of %s state \"%s\" cannot run: %s", what,
						desc->timer_signature, kind, NameStr(desc->name), problem);
	if (pg_proc_aclcheck(desc->timer_handler, desc->owner, ACL_EXECUTE) != ACLCHECK_OK)
		return psprintf("the owner of %s state \"%s\" may not execute its %s %s",
						kind, NameStr(desc->name), what, desc->timer_signature);
	return window_aggregate_problem(desc);
}
