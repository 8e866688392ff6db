/*
 * sql/sql_aggregating.c
 *		AggregatingState: aggregate() folds a value into a key's transition
 *		state with the state's PostgreSQL aggregate, atomically; value_get
 *		(sql_value.c) returns the aggregate's result.
 *
 * The aggregate runs in the session (common/aggregate.c), inside the
 * backend's merge: with no lock held, and its result stored only if the
 * key has not changed meanwhile, so concurrent calls never lose a value.
 * An aggregate of several arguments takes the further ones after the value
 * (VARIADIC "any", or VARIADIC text[] for untyped ones).
 */
#include "postgres.h"

#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"

#include "common/aggregate.h"
#include "sql/sql_common.h"

PG_FUNCTION_INFO_V1(state_aggregate);
PG_FUNCTION_INFO_V1(state_aggregate_text);

/*
 * A call site's aggregate: how it runs, and how the further arguments of
 * an aggregate of several (after the value) become datums of its types.
 */
typedef struct AggCall
{
	AggregateRun *run;
	int			nmore;			/* run->nargs - 1 */
	Coercion   *coerce;			/* per further argument */
	TypeCodec  *codecs;
	bool	   *domain;			/* the argument's type is a domain */
	void	  **domain_cache;
	char	  **what;			/* "argument 2 of its aggregate" */
	Datum	   *more;			/* one call's further arguments */
	bool	   *more_null;
} AggCall;

/* One fold: the value, decoded by the merge from its image. */
typedef struct AggFold
{
	StateCall  *call;
	AggCall    *agg;
} AggFold;


static AggCall *
call_agg(StateCall *call)
{
	AggCall    *ac = call->extra;
	MemoryContext old;

	if (ac != NULL)
		return ac;
	old = MemoryContextSwitchTo(call->mcxt);
	ac = palloc0(sizeof(AggCall));
	ac->run = aggregate_run_init(&call->desc, call->mcxt);
	ac->nmore = ac->run->nargs - 1;
	ac->coerce = palloc0(sizeof(Coercion) * Max(ac->nmore, 1));
	ac->codecs = palloc0(sizeof(TypeCodec) * Max(ac->nmore, 1));
	ac->domain = palloc0(sizeof(bool) * Max(ac->nmore, 1));
	ac->domain_cache = palloc0(sizeof(void *) * Max(ac->nmore, 1));
	ac->what = palloc0(sizeof(char *) * Max(ac->nmore, 1));
	ac->more = palloc0(sizeof(Datum) * Max(ac->nmore, 1));
	ac->more_null = palloc0(sizeof(bool) * Max(ac->nmore, 1));
	for (int i = 0; i < ac->nmore; i++)
	{
		Oid			type = ac->run->argtypes[i + 1];

		codec_init(&ac->codecs[i], type, call->mcxt);
		ac->domain[i] = get_typtype(type) == TYPTYPE_DOMAIN;
		ac->what[i] = psprintf("argument %d of its aggregate to be", i + 2);
	}
	MemoryContextSwitchTo(old);
	call->extra = ac;
	return ac;
}

/* StateMergeFn of aggregating states: out := transition(cur, in, more...). */
static void
aggregating_merge(const char *cur, uint32 curlen, const char *in, uint32 inlen,
				  StringInfo out, void *arg)
{
	AggFold    *f = arg;
	Datum		value = codec_decode(&f->call->codecs[ARG_VALUE], in, inlen);

	aggregate_fold(f->agg->run, cur, curlen, value, f->agg->more, f->agg->more_null, out);
}

/*
 * One further argument, of type "from", into the call's datums; NULL is
 * kept as NULL (but for a domain that refuses it, as CoerceToDomain
 * would).  Returns whether it was NULL.
 */
static bool
take_more(StateCall *call, AggCall *ac, int i, Datum d, bool isnull, Oid from)
{
	ac->more_null[i] = isnull;
	ac->more[i] = (Datum) 0;
	if (isnull)
	{
		if (ac->domain[i])
			domain_check((Datum) 0, true, ac->codecs[i].typid, &ac->domain_cache[i],
						 call->mcxt);
		return true;
	}
	ac->more[i] = state_call_coerce_arg(call, &ac->coerce[i], &ac->codecs[i],
										ac->domain[i] ? &ac->domain_cache[i] : NULL,
										d, from, ac->what[i]);
	return false;
}

/* A call with the wrong number of further arguments. */
static void
check_more_count(StateCall *call, AggCall *ac, int given)
{
	if (given != ac->nmore)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg_plural("aggregate %s of state \"%s\" takes %d argument, not %d",
							   "aggregate %s of state \"%s\" takes %d arguments, not %d",
							   ac->run->nargs,
							   format_procedure(call->desc.aggregate), NameStr(call->desc.name),
							   ac->run->nargs, given + 1),
				 errhint(ac->nmore == 0 ? "Pass only the value." :
						 "Pass the value, then the aggregate's further arguments in its order.")));
}

/*
 * count_more checks the number of further arguments of a call, from
 * argument 3 on: one by one, or in one array (a VARIADIC call, or text read
 * with the types' input functions), counted before it is taken apart.
 */
static void
count_more(StateCall *call, AggCall *ac, FunctionCallInfo fcinfo, bool array)
{
	ArrayType  *arr;

	if (!array)
	{
		check_more_count(call, ac, Max(PG_NARGS() - 3, 0));
		return;
	}
	if (PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the VARIADIC argument of aggregate() must not be null")));
	arr = PG_GETARG_ARRAYTYPE_P(3);
	check_more_count(call, ac, ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr)));
}

/*
 * gather_more reads the further arguments of a call (counted already) into
 * the call's datums.  Returns whether any is NULL.
 */
static bool
gather_more(StateCall *call, AggCall *ac, FunctionCallInfo fcinfo, bool array)
{
	bool		any_null = false;

	if (!array)
	{
		for (int i = 0; i < ac->nmore; i++)
			any_null |= take_more(call, ac, i, PG_GETARG_DATUM(3 + i), PG_ARGISNULL(3 + i),
								  state_call_argtype(fcinfo, 3 + i));
	}
	else
	{
		ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(3);
		Oid			elemtype = ARR_ELEMTYPE(arr);
		Datum	   *elems;
		bool	   *nulls;
		int			n = state_array_elems(arr, &elems, &nulls);

		for (int i = 0; i < n && i < ac->nmore; i++)
			any_null |= take_more(call, ac, i, elems[i], nulls[i], elemtype);
	}
	return any_null;
}

/* Folds value (not NULL) into call->key's state with the further arguments gathered. */
static void
aggregate_fold_value(StateCall *call, AggCall *ac, const StateArg *value)
{
	AggFold		f;

	f.call = call;
	f.agg = ac;
	resetStringInfo(&call->buf);
	state_call_encode_arg(call, value, ARG_VALUE, &call->buf);
	call->backend->merge(&call->target, &call->key, call->buf.data, call->buf.len,
						 aggregating_merge, &f, NULL, &call->buf2);
}

/*
 * aggregate(name, key, value [, further arguments]): fold value into the
 * key's state.  state_aggregate_text is the overload whose further
 * arguments are text (untyped literals and bind parameters), read with the
 * types' input functions.
 */
static Datum
aggregate_call(FunctionCallInfo fcinfo, bool text_more)
{
	StateCall  *call = state_call_begin(fcinfo, STATE_KIND_AGGREGATING,
										STATE_PRIV_READ | STATE_PRIV_WRITE);
	AggCall    *ac = call_agg(call);
	StateArg	value;
	bool		more_null = false;
	bool		array = PG_NARGS() > 3 &&
		(text_more || get_fn_expr_variadic(fcinfo->flinfo));

	state_call_key(call, fcinfo, 1);
	count_more(call, ac, fcinfo, array);
	/* NULL values are skipped, as SQL's aggregates skip them. */
	if (PG_ARGISNULL(2))
		PG_RETURN_VOID();
	if (ac->nmore > 0)
		more_null = gather_more(call, ac, fcinfo, array);
	/*
	 * So is a row with a NULL among the further arguments when the
	 * transition function is strict, as an Agg node skips it; a non-strict
	 * one is given the NULL.
	 */
	if (more_null && ac->run->strict)
		PG_RETURN_VOID();
	value = state_call_arg(fcinfo, 2);
	aggregate_fold_value(call, ac, &value);
	PG_RETURN_VOID();
}

/*
 * sql_aggregate_check_args raises invalid_parameter_value unless the
 * state's aggregate takes "given" arguments besides the value.
 */
void
sql_aggregate_check_args(StateCall *call, int given)
{
	check_more_count(call, call_agg(call), given);
}

/*
 * sql_aggregate_arg folds value into call->key's state, for an aggregate of
 * the value alone (sql_aggregate_check_args); a NULL value is skipped, as
 * aggregate() skips it (a table's feed).
 */
void
sql_aggregate_arg(StateCall *call, const StateArg *value)
{
	AggCall    *ac = call_agg(call);

	check_more_count(call, ac, 0);
	if (!value->isnull)
		aggregate_fold_value(call, ac, value);
}

/* StateMergeFn of a transactional state's commit: out := combine(cur, in). */
static void
aggregating_combine(const char *cur, uint32 curlen, const char *in, uint32 inlen,
					StringInfo out, void *arg)
{
	aggregate_combine((AggregateRun *) arg, cur, curlen, in, inlen, out);
}

void
sql_aggregating_combine(StateCall *call, StateMergeFn *fn, void **arg)
{
	if (call->extra == NULL)
		call->extra = aggregate_run_init(&call->desc, call->mcxt);
	*fn = aggregating_combine;
	*arg = call->extra;
}

Datum
state_aggregate(PG_FUNCTION_ARGS)
{
	return aggregate_call(fcinfo, false);
}

Datum
state_aggregate_text(PG_FUNCTION_ARGS)
{
	return aggregate_call(fcinfo, true);
}

/*
 * sql_aggregating_get is value_get of an aggregating state: the
 * aggregate's result for the key's transition state, cast to the type of
 * the default; the default when the key has no state.
 */
Datum
sql_aggregating_get(StateCall *call, FunctionCallInfo fcinfo)
{
	Datum		result;
	bool		isnull;

	resetStringInfo(&call->buf);
	if (!call->backend->get(&call->target, &call->key, &call->buf))
		return state_call_default(call, fcinfo, 2);
	result = sql_aggregating_datum(call, call->buf.data, call->buf.len,
								   get_fn_expr_rettype(fcinfo->flinfo), &isnull);
	if (isnull)
		PG_RETURN_NULL();
	return result;
}

/* sql_aggregating_datum: the aggregate's result for an image, cast to restype. */
Datum
sql_aggregating_datum(StateCall *call, const char *img, uint32 len, Oid restype, bool *isnull)
{
	AggregateRun *run = call_agg(call)->run;
	Datum		result = aggregate_result(run, img, len, isnull);

	if (*isnull)
		return (Datum) 0;
	return state_call_result_datum(call, result, run->result_type, ARG_VALUE, restype);
}
