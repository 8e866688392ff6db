/*
 * sql/sql_list.c
 *		ListState: list_add, list_add_all, list_update, list_get,
 *		list_length.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/array.h"
#include "utils/lsyscache.h"

#include "format/records.h"
#include "sql/sql_common.h"

PG_FUNCTION_INFO_V1(state_list_length);

/*
 * sql_list_add_arg appends value to the list of call->key (list_add,
 * operator list states, and a table's feed).
 */
void
sql_list_add_arg(StateCall *call, const StateArg *value)
{
	int			begin;

	if (value->isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("list of state \"%s\" cannot hold null values",
						NameStr(call->desc.name))));
	resetStringInfo(&call->buf);
	begin = record_elem_begin(&call->buf);
	state_call_encode_arg(call, value, ARG_VALUE, &call->buf);
	record_elem_end(&call->buf, begin);
	call->backend->append(&call->target, &call->key, call->buf.data, call->buf.len);
}

/*
 * sql_list_add appends argument argno to the list of call->key (ListState
 * and operator list states share it, with their arguments where they are).
 */
Datum
sql_list_add(StateCall *call, FunctionCallInfo fcinfo, int argno)
{
	StateArg	value = state_call_arg(fcinfo, argno);

	sql_list_add_arg(call, &value);
	PG_RETURN_VOID();
}

/* list_add(name, key, value) */
STATE_KEYED_FUNCTION(state_list_add, STATE_KIND_LIST, STATE_PRIV_WRITE, sql_list_add);

/* The list image of the array argument argno, in call->buf. */
static void
list_arg_image(StateCall *call, FunctionCallInfo fcinfo, int argno)
{
	Oid			elemtype;
	ArrayType  *arr = state_call_array_arg(call, fcinfo, argno, ARG_VALUE, &elemtype);

	resetStringInfo(&call->buf);
	state_call_list_image(call, arr, elemtype, &call->buf);
}

/* sql_list_add_all appends every element of array argument argno, in order. */
Datum
sql_list_add_all(StateCall *call, FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("values for state \"%s\" must not be null",
						NameStr(call->desc.name))));
	list_arg_image(call, fcinfo, argno);
	if (call->buf.len > 0)
		call->backend->append(&call->target, &call->key, call->buf.data, call->buf.len);
	PG_RETURN_VOID();
}

/* list_add_all(name, key, values): appends every element, in order. */
STATE_KEYED_FUNCTION(state_list_add_all, STATE_KIND_LIST, STATE_PRIV_WRITE, sql_list_add_all);

/* sql_list_update replaces the list with array argument argno; NULL or {} clears it. */
Datum
sql_list_update(StateCall *call, FunctionCallInfo fcinfo, int argno)
{
	if (!PG_ARGISNULL(argno))
		list_arg_image(call, fcinfo, argno);
	if (PG_ARGISNULL(argno) || call->buf.len == 0)
		call->backend->remove(&call->target, &call->key);
	else
		call->backend->put(&call->target, &call->key, call->buf.data, call->buf.len);
	PG_RETURN_VOID();
}

/* list_update(name, key, values): replaces the list; NULL or {} clears it. */
STATE_KEYED_FUNCTION(state_list_update, STATE_KIND_LIST, STATE_PRIV_WRITE, sql_list_update);

/* sql_list_get: the list as an array, or argument argno (the default). */
Datum
sql_list_get(StateCall *call, FunctionCallInfo fcinfo, int argno)
{
	resetStringInfo(&call->buf);
	if (!call->backend->get(&call->target, &call->key, &call->buf))
		return state_call_default(call, fcinfo, argno);
	return sql_list_datum(call, call->buf.data, call->buf.len,
						  get_fn_expr_rettype(fcinfo->flinfo));
}

/* sql_list_datum: a list image as an array, cast to restype. */
Datum
sql_list_datum(StateCall *call, const char *img, uint32 imglen, Oid restype)
{
	TypeCodec  *codec = &call->codecs[ARG_VALUE];
	Oid			arrtype;
	ArrayBuildState *astate;
	uint32		off = 0;
	const char *elem;
	uint32		len;
	RecordRead	r;

	astate = initArrayResult(codec->typid, CurrentMemoryContext, false);
	while ((r = record_next_elem(img, imglen, &off, &elem, &len)) == RECORD_OK)
	{
		astate = accumArrayResult(astate, codec_decode(codec, elem, len),
								  false, codec->typid, CurrentMemoryContext);
		CHECK_FOR_INTERRUPTS();
	}
	if (r != RECORD_END)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the list of state \"%s\" is damaged", NameStr(call->desc.name))));
	arrtype = get_array_type(codec->typid);
	return state_call_result_datum(call, makeArrayResult(astate, CurrentMemoryContext),
								   arrtype, ARG_VALUE, restype);
}

/* list_get(name, key, default): the list as an array, or default. */
STATE_KEYED_FUNCTION(state_list_get, STATE_KIND_LIST, STATE_PRIV_READ, sql_list_get);

/* list_length(name, key) */
Datum
state_list_length(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_keyed(fcinfo, STATE_KIND_LIST, STATE_PRIV_READ);

	PG_RETURN_INT64(call->backend->length(&call->target, &call->key));
}
