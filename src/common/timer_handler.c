/*
 * common/timer_handler.c
 *		The handler of a timers state: a plain function of (the state's key
 *		type, timestamptz) that its owner may execute, checked when the state
 *		is created, found again by its signature when a snapshot is restored
 *		elsewhere, and checked again before every batch of timers it fires
 *		(it may have been dropped or replaced meanwhile).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/builtins.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

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

/*
 * handler_problem: NULL when fn is a plain function of the arguments the
 * state's handler (or emit function) takes, not returning a set, else
 * what it is instead.
 */
static char *
handler_problem(Oid fn, const StateDesc *desc)
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	Form_pg_proc proc;
	Oid			types[4];
	int			n = handler_argtypes(desc, types);
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
	sig = format_procedure_qualified(fn);
	if (strlen(sig) >= sizeof(desc->timer_signature))
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("the signature of function %s is too long", sig),
				 errdetail("A state names its handler in at most %d bytes.",
						   (int) sizeof(desc->timer_signature) - 1)));
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
	LOCAL_FCINFO(fcinfo, 1);
	Datum		oid;

	if (memchr(desc->timer_signature, '\0', sizeof(desc->timer_signature)) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("state \"%s\" names its handler with no end", NameStr(desc->name))));
	InitFunctionCallInfoData(*fcinfo, NULL, 1, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = CStringGetTextDatum(desc->timer_signature);
	fcinfo->args[0].isnull = false;
	oid = to_regprocedure(fcinfo);
	if (fcinfo->isnull || !OidIsValid(DatumGetObjectId(oid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("%s %s of %s state \"%s\" does not exist on this server",
						desc->kind == STATE_KIND_WINDOW ? "emit function" : "handler",
						desc->timer_signature, state_desc_kind_name(desc), NameStr(desc->name)),
				 errhint("Create the function in this database before restoring the snapshot.")));
	timer_handler_describe(DatumGetObjectId(oid), desc->owner, desc);
}

/*
 * timer_handler_problem: NULL when a timers state's handler may run now,
 * else why not (the timer worker keeps the timers and says so).
 */
const char *
timer_handler_problem(const StateDesc *desc)
{
	char	   *problem = handler_problem(desc->timer_handler, desc);
	const char *kind = state_desc_kind_name(desc);
	const char *what = desc->kind == STATE_KIND_WINDOW ? "emit function" : "handler";

	if (problem != NULL)
		return psprintf("%s %s of %s state \"%s\" cannot run: %s", what,
						desc->timer_signature, kind, NameStr(desc->name), problem);
	if (pg_proc_aclcheck(desc->timer_handler, desc->owner, ACL_EXECUTE) != ACLCHECK_OK)
		return psprintf("the owner of %s state \"%s\" may not execute its %s %s",
						kind, NameStr(desc->name), what, desc->timer_signature);
	/* A window state's aggregate runs in the worker too (its final function). */
	if (desc->kind == STATE_KIND_WINDOW && desc->window_contents == STATE_WINDOW_AGGREGATE)
	{
		problem = aggregate_problem(desc->aggregate, desc->owner);
		if (problem != NULL)
			return psprintf("the aggregate of %s state \"%s\" cannot run: %s",
							kind, NameStr(desc->name), problem);
	}
	return NULL;
}
