/*
 * sql/sql_value.c
 *		ValueState: value_set and value_get.  value_get reads reducing and
 *		aggregating states too (sql_reducing.c, sql_aggregating.c write them).
 */
#include "postgres.h"

#include "sql/sql_common.h"

PG_FUNCTION_INFO_V1(state_value_set);
PG_FUNCTION_INFO_V1(state_value_get);

/*
 * sql_value_set stores value as call->key's value; a NULL value clears
 * the key (value_set, and a table's feed).
 */
void
sql_value_set(StateCall *call, const StateArg *value)
{
	if (value->isnull)
	{
		call->backend->remove(&call->target, &call->key);
		return;
	}
	resetStringInfo(&call->buf);
	state_call_encode_arg(call, value, ARG_VALUE, &call->buf);
	call->backend->put(&call->target, &call->key, call->buf.data, call->buf.len);
}

/* value_set(name, key, value): a NULL value clears the key. */
Datum
state_value_set(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_keyed(fcinfo, STATE_KIND_VALUE, STATE_PRIV_WRITE);
	StateArg	value = state_call_arg(fcinfo, 2);

	sql_value_set(call, &value);
	PG_RETURN_VOID();
}

/* value_get(name, key, default): the value, or default when absent. */
Datum
state_value_get(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_begin(fcinfo, ANY_KIND, STATE_PRIV_READ);

	if (call->desc.kind != STATE_KIND_VALUE && call->desc.kind != STATE_KIND_REDUCING &&
		call->desc.kind != STATE_KIND_AGGREGATING)
		state_call_reject_kind(call, STATE_KIND_VALUE);
	state_call_key(call, fcinfo, 1);
	if (call->desc.kind == STATE_KIND_AGGREGATING)
		return sql_aggregating_get(call, fcinfo);
	resetStringInfo(&call->buf);
	if (call->backend->get(&call->target, &call->key, &call->buf))
		return state_call_result(call, call->buf.data, call->buf.len,
								 get_fn_expr_rettype(fcinfo->flinfo));
	return state_call_default(call, fcinfo, 2);
}
