/*
 * common/aggregate.c
 *		The PostgreSQL aggregate an aggregating state folds its values with:
 *		which aggregates a state can hold (aggregate_describe, at create and
 *		restore), and running one outside an Agg node (aggregate_fold,
 *		aggregate_result).
 *
 * A key's image is the aggregate's transition state: the datum image of
 * its transition type, or, for a transition type of internal, the bytea
 * its serial function makes, which its deserial function reads back.  So
 * every image is plain bytes that snapshots, WAL and every backend keep as
 * they keep any value.
 *
 * Transition, serial, deserial and final functions run with a stand-in
 * AggState as their context, as a plain aggregate's would in an Agg node:
 * AggCheckCallContext then succeeds and hands them the fold's memory
 * context, which is reset before every fold.  An aggregate may take
 * several arguments: the state's value is the first, the call passes the
 * others.  Aggregates that need more of an Agg node (ordered-set ones,
 * polymorphic ones) are refused when the state is created.  The input
 * values are never stored, so their types need no binary I/O; the
 * transition state's image must have it, for canonical snapshots.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "parser/parse_coerce.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "common/aggregate.h"

/* The aggregate's catalog row, or an error naming what oid is. */
static Form_pg_aggregate
aggregate_form(Oid aggfnoid, HeapTuple *tup)
{
	*tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
	if (!HeapTupleIsValid(*tup))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("function %s is not an aggregate", format_procedure(aggfnoid))));
	return (Form_pg_aggregate) GETSTRUCT(*tup);
}

/*
 * Whether a type has binary send and receive functions, and so do the
 * types it is made of.
 */
static bool
type_has_binary_io(Oid type)
{
	HeapTuple	tup;
	Form_pg_type typ;
	bool		ok;
	Oid			elem;
	Oid			base;
	Oid			relid;

	check_stack_depth();
	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
	if (!HeapTupleIsValid(tup))
		return false;
	typ = (Form_pg_type) GETSTRUCT(tup);
	ok = OidIsValid(typ->typsend) && OidIsValid(typ->typreceive);
	elem = IsTrueArrayType(typ) ? typ->typelem : InvalidOid;
	base = typ->typtype == TYPTYPE_DOMAIN ? typ->typbasetype : InvalidOid;
	relid = typ->typtype == TYPTYPE_COMPOSITE ? typ->typrelid : InvalidOid;
	ReleaseSysCache(tup);
	/* Arrays, domains and rows send their elements, base and columns too. */
	if (ok && OidIsValid(elem))
		ok = type_has_binary_io(elem);
	if (ok && OidIsValid(base))
		ok = type_has_binary_io(base);
	if (ok && OidIsValid(relid))
	{
		TupleDesc	td = lookup_rowtype_tupdesc(type, -1);

		for (int i = 0; i < td->natts && ok; i++)
			if (!TupleDescAttr(td, i)->attisdropped)
				ok = type_has_binary_io(TupleDescAttr(td, i)->atttypid);
		ReleaseTupleDesc(td);
	}
	return ok;
}

static void
refuse(Oid aggfnoid, const char *why, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("aggregate %s cannot be held by an aggregating state", format_procedure(aggfnoid)),
			 errdetail("%s", why),
			 hint ? errhint("%s", hint) : 0));
}

/* Whether a type is a pseudo-type (internal, polymorphic ones included). */
static bool
pseudo_type(Oid type)
{
	return get_typtype(type) == TYPTYPE_PSEUDO;
}

/* One of an aggregate's functions, which its owner must be able to execute. */
static void
check_component(Oid aggfnoid, Oid owner, Oid fn)
{
	if (OidIsValid(fn) && pg_proc_aclcheck(fn, owner, ACL_EXECUTE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function %s", format_procedure(fn)),
				 errdetail("It is a function of aggregate %s, whose owner must be able to execute it.",
						   format_procedure(aggfnoid))));
}

/*
 * check_component_functions checks, as an Agg node does, that the
 * aggregate's owner may execute its transition, final, serial and deserial
 * functions (EXECUTE can be revoked on them apart from the aggregate).
 */
static void
check_component_functions(Oid aggfnoid, Form_pg_aggregate agg)
{
	HeapTuple	proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(aggfnoid));
	Oid			owner;

	if (!HeapTupleIsValid(proc))
		elog(ERROR, "cache lookup failed for function %u", aggfnoid);
	owner = ((Form_pg_proc) GETSTRUCT(proc))->proowner;
	ReleaseSysCache(proc);
	check_component(aggfnoid, owner, agg->aggtransfn);
	check_component(aggfnoid, owner, agg->aggfinalfn);
	check_component(aggfnoid, owner, agg->aggserialfn);
	check_component(aggfnoid, owner, agg->aggdeserialfn);
}

/*
 * aggregate_problem: NULL when user may execute aggregate aggfnoid and the
 * aggregate's owner its transition, final, combine, serial and deserial
 * functions, else what is wrong (palloc'd).  It raises nothing: the timer
 * worker checks a window state's aggregate before each batch with it.
 */
char *
aggregate_problem(Oid aggfnoid, Oid user)
{
	HeapTuple	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
	HeapTuple	proc;
	Form_pg_aggregate agg;
	Oid			owner;
	Oid			fns[5];
	char	   *problem = NULL;

	if (!HeapTupleIsValid(tup))
		return psprintf("aggregate %u does not exist", aggfnoid);
	proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(aggfnoid));
	if (!HeapTupleIsValid(proc))
	{
		ReleaseSysCache(tup);
		return psprintf("aggregate %u does not exist", aggfnoid);
	}
	owner = ((Form_pg_proc) GETSTRUCT(proc))->proowner;
	ReleaseSysCache(proc);
	agg = (Form_pg_aggregate) GETSTRUCT(tup);
	fns[0] = agg->aggtransfn;
	fns[1] = agg->aggfinalfn;
	fns[2] = agg->aggcombinefn;
	fns[3] = agg->aggserialfn;
	fns[4] = agg->aggdeserialfn;
	ReleaseSysCache(tup);
	if (pg_proc_aclcheck(aggfnoid, user, ACL_EXECUTE) != ACLCHECK_OK)
		return psprintf("permission denied for aggregate %s", format_procedure(aggfnoid));
	for (int i = 0; i < lengthof(fns); i++)
		if (OidIsValid(fns[i]) && pg_proc_aclcheck(fns[i], owner, ACL_EXECUTE) != ACLCHECK_OK)
		{
			problem = psprintf("the owner of aggregate %s may not execute its function %s",
							   format_procedure(aggfnoid), format_procedure(fns[i]));
			break;
		}
	return problem;
}

/*
 * aggregate_describe checks that an aggregating state of input_type owned
 * by owner can hold aggregate aggfnoid, and fills the descriptor's
 * aggregate, agg_signature and agg_type.  Raises what is wrong.
 */
void
aggregate_describe(Oid aggfnoid, Oid input_type, Oid owner, StateDesc *desc)
{
	HeapTuple	tup;
	Form_pg_aggregate agg = aggregate_form(aggfnoid, &tup);
	Oid			transtype = agg->aggtranstype;
	bool		serial = OidIsValid(agg->aggserialfn) && OidIsValid(agg->aggdeserialfn);
	char		kind = agg->aggkind;
	Oid			finalfn = agg->aggfinalfn;
	Oid		   *argtypes;
	int			nargs;
	char	   *sig;

	check_component_functions(aggfnoid, agg);
	ReleaseSysCache(tup);
	if (kind != AGGKIND_NORMAL)
		refuse(aggfnoid, "It is an ordered-set or hypothetical-set aggregate.",
			   "Use a plain aggregate.");
	if (transtype == INTERNALOID && !serial)
		refuse(aggfnoid, "Its transition state is of type internal and it has no serial and deserial functions, so the state cannot be stored.",
			   NULL);
	(void) get_func_signature(aggfnoid, &argtypes, &nargs);
	if (nargs < 1)
		refuse(aggfnoid, "It takes no argument; an aggregating state folds a value at a time.",
			   "Use an aggregate whose first argument is the state's value type.");
	for (int i = 0; i < nargs; i++)
		if (IsPolymorphicType(argtypes[i]))
			refuse(aggfnoid, "It is polymorphic.", "Use an aggregate declared for the state's value type.");
		else if (pseudo_type(argtypes[i]))
			refuse(aggfnoid, psprintf("Its argument %d is of pseudo-type %s.", i + 1,
									  format_type_be(argtypes[i])),
				   "Use an aggregate declared for the state's value type.");
	if ((transtype != INTERNALOID && pseudo_type(transtype)) ||
		(OidIsValid(finalfn) && pseudo_type(get_func_rettype(finalfn))))
		refuse(aggfnoid, "It is polymorphic.", "Use an aggregate declared for the state's value type.");
	if (transtype != INTERNALOID && !type_has_binary_io(transtype))
		refuse(aggfnoid, psprintf("Its transition type %s has no binary send and receive functions, so snapshots in canonical format could not hold the state.",
								  format_type_be(transtype)),
			   NULL);
	/* As for a state's own types: a restore checks it again. */
	if (transtype != INTERNALOID && pg_type_aclcheck(transtype, owner, ACL_USAGE) != ACLCHECK_OK)
		aclcheck_error_type(ACLCHECK_NO_PRIV, transtype);
	if (argtypes[0] != input_type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("aggregate %s folds values of type %s, not %s",
						format_procedure(aggfnoid), format_type_be(argtypes[0]),
						format_type_be(input_type)),
				 errhint("Give value_type => '%s'.", format_type_be(argtypes[0]))));
	if (pg_proc_aclcheck(aggfnoid, owner, ACL_EXECUTE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for aggregate %s", format_procedure(aggfnoid)),
				 errdetail("The state's owner must be able to execute its aggregate.")));
	sig = format_procedure_qualified(aggfnoid);
	if (strlen(sig) >= STATE_AGG_SIGNATURE_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("the signature of aggregate %s is too long", sig),
				 errdetail("A state names its aggregate in at most %d bytes.",
						   STATE_AGG_SIGNATURE_LEN - 1)));
	desc->aggregate = aggfnoid;
	strlcpy(desc->agg_signature, sig, sizeof(desc->agg_signature));
	codec_describe_type(transtype == INTERNALOID ? BYTEAOID : transtype, &desc->agg_type);
}

/*
 * aggregate_resolve finds, on this server, the aggregate a descriptor read
 * from a snapshot names by its signature, and checks it as create does and
 * that its images are of the same type.  Types are resolved already.
 */
void
aggregate_resolve(StateDesc *desc)
{
	LOCAL_FCINFO(fcinfo, 1);
	Datum		oid;
	Oid			image_type = desc->agg_type.oid;

	if (memchr(desc->agg_signature, '\0', sizeof(desc->agg_signature)) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("state \"%s\" names its aggregate with no end", NameStr(desc->name))));
	/* to_regprocedure returns NULL for a name that resolves to nothing. */
	InitFunctionCallInfoData(*fcinfo, NULL, 1, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = CStringGetTextDatum(desc->agg_signature);
	fcinfo->args[0].isnull = false;
	oid = to_regprocedure(fcinfo);
	if (fcinfo->isnull || !OidIsValid(DatumGetObjectId(oid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("aggregate %s of state \"%s\" does not exist on this server",
						desc->agg_signature, NameStr(desc->name))));
	aggregate_describe(DatumGetObjectId(oid), desc->types[STATE_TYPE_VALUE].oid, desc->owner, desc);
	if (desc->agg_type.oid != image_type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("aggregate %s of state \"%s\" keeps a transition state of another type here",
						desc->agg_signature, NameStr(desc->name))));
}

/*
 * aggregate_run_init sets up running a state's aggregate, in mcxt, for the
 * current user, who must be able to execute it.  The aggregate must still
 * be the one the state was made with (CREATE OR REPLACE AGGREGATE can
 * change its transition type under the same OID): its images must read
 * as its transition state.
 */
AggregateRun *
aggregate_run_init(const StateDesc *desc, MemoryContext mcxt)
{
	AggregateRun *run = MemoryContextAllocZero(mcxt, sizeof(AggregateRun));
	HeapTuple	tup;
	Form_pg_aggregate agg = aggregate_form(desc->aggregate, &tup);
	Datum		initval;
	bool		isnull;
	MemoryContext old;
	Oid		   *argtypes;
	int			nargs;
	Oid			image_type = agg->aggtranstype == INTERNALOID ? BYTEAOID : agg->aggtranstype;

	(void) get_func_signature(desc->aggregate, &argtypes, &nargs);
	if (agg->aggkind != AGGKIND_NORMAL || nargs < 1 || argtypes[0] != desc->types[STATE_TYPE_VALUE].oid ||
		image_type != desc->agg_type.oid ||
		(agg->aggtranstype == INTERNALOID &&
		 (!OidIsValid(agg->aggserialfn) || !OidIsValid(agg->aggdeserialfn))))
	{
		ReleaseSysCache(tup);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("aggregate %s of state \"%s\" changed since the state was created",
						format_procedure(desc->aggregate), NameStr(desc->name)),
				 errdetail("The state keeps transition states of type %s, which the aggregate no longer reads.",
						   format_type_be(desc->agg_type.oid)),
				 errhint("Drop the state, or put the aggregate back as it was.")));
	}
	if (pg_proc_aclcheck(desc->aggregate, GetUserId(), ACL_EXECUTE) != ACLCHECK_OK)
	{
		ReleaseSysCache(tup);
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for aggregate %s", format_procedure(desc->aggregate))));
	}
	check_component_functions(desc->aggregate, agg);
	old = MemoryContextSwitchTo(mcxt);

	run->nargs = nargs;
	run->argtypes = palloc(sizeof(Oid) * nargs);
	memcpy(run->argtypes, argtypes, sizeof(Oid) * nargs);
	/* A final function's extra arguments: NULLs, as an Agg node passes. */
	run->no_values = palloc0(sizeof(Datum) * nargs);
	run->all_null = palloc(sizeof(bool) * nargs);
	memset(run->all_null, true, sizeof(bool) * nargs);
	run->transtype = agg->aggtranstype;
	get_typlenbyval(run->transtype, &run->translen, &run->transbyval);
	fmgr_info_cxt(agg->aggtransfn, &run->transfn, mcxt);
	run->strict = run->transfn.fn_strict;
	if (OidIsValid(agg->aggfinalfn))
	{
		fmgr_info_cxt(agg->aggfinalfn, &run->finalfn, mcxt);
		run->final_nargs = agg->aggfinalextra ? 1 + nargs : 1;
		run->result_type = get_func_rettype(agg->aggfinalfn);
	}
	else
		run->result_type = run->transtype;
	get_typlenbyval(run->result_type, &run->result_len, &run->result_byval);
	run->combinefn.fn_oid = InvalidOid;
	if (OidIsValid(agg->aggcombinefn))
		fmgr_info_cxt(agg->aggcombinefn, &run->combinefn, mcxt);
	if (run->transtype == INTERNALOID)
	{
		fmgr_info_cxt(agg->aggserialfn, &run->serialfn, mcxt);
		fmgr_info_cxt(agg->aggdeserialfn, &run->deserialfn, mcxt);
	}
	initval = SysCacheGetAttr(AGGFNOID, tup, Anum_pg_aggregate_agginitval, &isnull);
	run->init_null = isnull;
	if (!isnull)
	{
		Oid			typinput;
		Oid			ioparam;

		getTypeInputInfo(run->transtype, &typinput, &ioparam);
		run->init_value = OidInputFunctionCall(typinput, TextDatumGetCString(initval),
											   ioparam, -1);
	}
	ReleaseSysCache(tup);

	codec_init(&run->image, desc->agg_type.oid, mcxt);
	/* As an Agg node gives its aggregates, when any argument is collatable. */
	run->collation = InvalidOid;
	for (int i = 0; i < nargs; i++)
		if (type_is_collatable(argtypes[i]))
			run->collation = DEFAULT_COLLATION_OID;
	/*
	 * As an Agg node has them: an ExprContext whose per-tuple memory holds
	 * the transition state (AggCheckCallContext's aggcontext, where
	 * AggRegisterCallback's callbacks hang), and a scratch one.
	 */
	run->aggcontext = CreateStandaloneExprContext();
	run->tmpcontext = CreateStandaloneExprContext();
	run->aggstate = makeNode(AggState);
	run->aggstate->curaggcontext = run->aggcontext;
	run->aggstate->tmpcontext = run->tmpcontext;
	MemoryContextSwitchTo(old);
	return run;
}

/*
 * Start and end of one use of the aggregate: the contexts' callbacks run
 * and their memory goes, as an Agg node's do between groups.
 */
static MemoryContext
agg_begin(AggregateRun *run)
{
	ReScanExprContext(run->aggcontext);
	ReScanExprContext(run->tmpcontext);
	return MemoryContextSwitchTo(run->aggcontext->ecxt_per_tuple_memory);
}

static void
agg_end(AggregateRun *run, MemoryContext old)
{
	MemoryContextSwitchTo(old);
	ReScanExprContext(run->aggcontext);
	ReScanExprContext(run->tmpcontext);
}

/*
 * Call one of the aggregate's functions with the stand-in AggState: with
 * arguments a and b, then, for the transition function, the values after
 * the first (more: run->nargs - 1 of them).
 */
static Datum
agg_call(AggregateRun *run, FmgrInfo *fn, int nargs, Datum a, bool anull, Datum b,
		 bool bnull, const Datum *more, const bool *more_null, bool *isnull)
{
	LOCAL_FCINFO(fcinfo, FUNC_MAX_ARGS);
	Datum		result;

	Assert(nargs <= FUNC_MAX_ARGS);
	InitFunctionCallInfoData(*fcinfo, fn, nargs, run->collation, (Node *) run->aggstate, NULL);
	fcinfo->args[0].value = a;
	fcinfo->args[0].isnull = anull;
	fcinfo->args[1].value = b;
	fcinfo->args[1].isnull = bnull;
	for (int i = 2; i < nargs; i++)
	{
		fcinfo->args[i].value = more[i - 2];
		fcinfo->args[i].isnull = more_null[i - 2];
	}
	result = FunctionCallInvoke(fcinfo);
	*isnull = fcinfo->isnull;
	return result;
}

/* The transition state an image holds, in the fold's context. */
static Datum
state_of_image(AggregateRun *run, const char *img, uint32 len)
{
	Datum		d = codec_decode(&run->image, img, len);
	bool		isnull;

	if (run->transtype != INTERNALOID)
		return d;
	d = agg_call(run, &run->deserialfn, 2, d, false, (Datum) 0, false, NULL, NULL, &isnull);
	if (isnull)
		elog(ERROR, "state_backend: deserial function of an aggregate returned NULL");
	return d;
}

/* The image of a transition state (serialized when internal), to out. */
static void
image_of_state(AggregateRun *run, Datum state, StringInfo out)
{
	resetStringInfo(out);
	if (run->transtype == INTERNALOID)
	{
		bool		snull;

		state = agg_call(run, &run->serialfn, 1, state, false, (Datum) 0, true, NULL, NULL,
						 &snull);
		if (snull)
			elog(ERROR, "state_backend: serial function of an aggregate returned NULL");
	}
	codec_encode(&run->image, state, out);
}

/* aggregate_has_combine: can two transition states of it be combined? */
bool
aggregate_has_combine(Oid aggfnoid)
{
	HeapTuple	tup;
	Form_pg_aggregate agg = aggregate_form(aggfnoid, &tup);
	bool		has = OidIsValid(agg->aggcombinefn);

	ReleaseSysCache(tup);
	return has;
}

/*
 * aggregate_combine writes to out the image of the transition state that
 * combines those of images a and b, with the aggregate's combine function
 * (as a parallel aggregation combines its workers' states).
 */
void
aggregate_combine(AggregateRun *run, const char *a, uint32 alen, const char *b, uint32 blen,
				  StringInfo out)
{
	MemoryContext old;
	Datum		state;
	bool		isnull;

	if (!OidIsValid(run->combinefn.fn_oid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the aggregate of a transactional state has no combine function")));
	old = agg_begin(run);
	state = agg_call(run, &run->combinefn, 2, state_of_image(run, a, alen), false,
					 state_of_image(run, b, blen), false, NULL, NULL, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the aggregate's combine function returned NULL")));
	image_of_state(run, state, out);
	agg_end(run, old);
}

/*
 * aggregate_fold folds one value (not NULL: callers skip NULLs, as SQL's
 * aggregates do) into the transition state of image cur (NULL: the key has
 * none yet, so the aggregate's initial value) and writes the new state's
 * image to out.  more and more_null are the aggregate's further arguments
 * (run->nargs - 1 of them); callers skip a row with a NULL among them when
 * the transition function is strict, as an Agg node does.
 */
void
aggregate_fold(AggregateRun *run, const char *cur, uint32 curlen, Datum value,
			   const Datum *more, const bool *more_null, StringInfo out)
{
	MemoryContext old;
	Datum		state;
	bool		state_null;

	old = agg_begin(run);
	if (cur != NULL)
	{
		state = state_of_image(run, cur, curlen);
		state_null = false;
	}
	else if (run->init_null)
	{
		state = (Datum) 0;
		state_null = true;
	}
	else
	{
		/* A copy: transition functions may change their state in place. */
		state = datumCopy(run->init_value, run->transbyval, run->translen);
		state_null = false;
	}
	if (state_null && run->strict)
	{
		/* The first value is the state (its type is the transition type). */
		state = datumCopy(value, run->transbyval, run->translen);
		state_null = false;
	}
	else
		state = agg_call(run, &run->transfn, run->nargs + 1, state, state_null, value, false,
						 more, more_null, &state_null);
	if (state_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the aggregate's transition function returned NULL"),
				 errdetail("An aggregating state keeps a transition state for every key it holds.")));
	image_of_state(run, state, out);
	agg_end(run, old);
}

/*
 * aggregate_result returns the aggregate's result for a transition state
 * image (the final function's, or the state itself), palloc'd in the
 * caller's memory context; its type is run->result_type.
 */
Datum
aggregate_result(AggregateRun *run, const char *img, uint32 len, bool *isnull)
{
	MemoryContext old;
	Datum		result;

	old = agg_begin(run);
	result = state_of_image(run, img, len);
	*isnull = false;
	/* A strict final function given its NULL extra argument: NULL, as nodeAgg does. */
	if (run->final_nargs > 1 && run->finalfn.fn_strict)
		*isnull = true;
	else if (run->final_nargs > 0)
		result = agg_call(run, &run->finalfn, run->final_nargs, result, false, (Datum) 0,
						  true, run->no_values, run->all_null, isnull);
	MemoryContextSwitchTo(old);
	if (!*isnull)
		result = datumCopy(result, run->result_byval, run->result_len);
	agg_end(run, CurrentMemoryContext);
	return *isnull ? (Datum) 0 : result;
}

/* aggregate_transtype: an aggregate's transition type (InvalidOid: none). */
Oid
aggregate_transtype(Oid aggfnoid)
{
	HeapTuple	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
	Oid			transtype;

	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	transtype = ((Form_pg_aggregate) GETSTRUCT(tup))->aggtranstype;
	ReleaseSysCache(tup);
	return transtype;
}
