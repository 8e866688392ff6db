/*
 * sql/sql_aggregating.c
 *		AggregatingState: aggregate() folds a value into a key's transition
 *		state with the state's PostgreSQL aggregate, atomically; value_get
 *		(sql_value.c) returns the aggregate's result.
 *
 * The aggregate runs in the session (common/aggregate.c), inside the
 * backend's merge: with no lock held, and its result stored only if the
 * key has not changed meanwhile, so concurrent calls never lose a value.
 */
#include "postgres.h"

#include "utils/lsyscache.h"

#include "common/aggregate.h"
#include "sql/sql_common.h"

PG_FUNCTION_INFO_V1(state_aggregate);

/* One fold: the value, decoded by the merge from its image. */
typedef struct AggFold
{
	StateCall  *call;
	AggregateRun *run;
} AggFold;


static AggregateRun *
call_run(StateCall *call)
{
	if (call->extra == NULL)
		call->extra = aggregate_run_init(&call->desc, call->mcxt);
	return call->extra;
}

/* StateMergeFn of aggregating states: out := transition(cur, in). */
static void
aggregating_merge(const char *cur, uint32 curlen, const char *in, uint32 inlen,
				  StringInfo out, void *arg)
{
	AggFold    *f = arg;
	Datum		value = codec_decode(&f->call->codecs[ARG_VALUE], in, inlen);

	aggregate_fold(f->run, cur, curlen, value, out);
}

/* aggregate(name, key, value): fold value into the key's state. */
Datum
state_aggregate(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_begin(fcinfo, STATE_KIND_AGGREGATING,
										STATE_PRIV_READ | STATE_PRIV_WRITE);
	AggFold		f;

	f.call = call;
	f.run = call_run(call);
	state_call_key(call, fcinfo, 1);
	/* NULLs are skipped, as SQL's aggregates skip them. */
	if (PG_ARGISNULL(2))
		PG_RETURN_VOID();
	resetStringInfo(&call->buf);
	state_call_encode(call, fcinfo, 2, ARG_VALUE, &call->buf);
	call->backend->merge(&call->target, &call->key, call->buf.data, call->buf.len,
						 aggregating_merge, &f, NULL, &call->buf2);
	PG_RETURN_VOID();
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
	AggregateRun *run = call_run(call);
	Datum		result = aggregate_result(run, img, len, isnull);

	if (*isnull)
		return (Datum) 0;
	return state_call_result_datum(call, result, run->result_type, ARG_VALUE, restype);
}
