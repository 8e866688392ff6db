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
#include "utils/builtins.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "common/timer_handler.h"

/*
 * handler_problem: NULL when fn is a plain function of (key_type,
 * timestamptz), not returning a set, else what it is instead.
 */
static char *
handler_problem(Oid fn, Oid key_type)
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
	else if (proc->pronargs != 2 || proc->proargtypes.values[0] != key_type ||
			 proc->proargtypes.values[1] != TIMESTAMPTZOID)
		problem = psprintf("its arguments are not (%s, timestamp with time zone)",
						   format_type_be(key_type));
	ReleaseSysCache(tup);
	return problem;
}

/*
 * timer_handler_describe checks fn as a timers state's handler for a state
 * of key_type owned by owner, and records it in desc.  Raises what is wrong.
 */
void
timer_handler_describe(Oid fn, Oid key_type, Oid owner, StateDesc *desc)
{
	char	   *problem = handler_problem(fn, key_type);
	char	   *sig;

	if (problem != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
				 errmsg("function %s cannot handle timers: %s", format_procedure(fn), problem),
				 errhint("A handler is a function of (%s, timestamptz), called with a timer's key and instant.",
						 format_type_be(key_type))));
	if (pg_proc_aclcheck(fn, owner, ACL_EXECUTE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function %s", format_procedure(fn)),
				 errdetail("The state's owner must be able to execute its handler, which runs as the owner.")));
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
				 errmsg("handler %s of timers state \"%s\" does not exist on this server",
						desc->timer_signature, NameStr(desc->name)),
				 errhint("Create the function in this database before restoring the snapshot.")));
	timer_handler_describe(DatumGetObjectId(oid), desc->types[STATE_TYPE_KEY].oid,
						   desc->owner, desc);
}

/*
 * timer_handler_problem: NULL when a timers state's handler may run now,
 * else why not (the timer worker keeps the timers and says so).
 */
const char *
timer_handler_problem(const StateDesc *desc)
{
	char	   *problem = handler_problem(desc->timer_handler, desc->types[STATE_TYPE_KEY].oid);

	if (problem != NULL)
		return psprintf("handler %s of timers state \"%s\" cannot run: %s",
						desc->timer_signature, NameStr(desc->name), problem);
	if (pg_proc_aclcheck(desc->timer_handler, desc->owner, ACL_EXECUTE) != ACLCHECK_OK)
		return psprintf("the owner of timers state \"%s\" may not execute its handler %s",
						NameStr(desc->name), desc->timer_signature);
	return NULL;
}
