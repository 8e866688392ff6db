/*
 * sql/sql_map.c
 *		MapState: map_put, map_put_all, map_get, map_remove, map_contains,
 *		map_entries, map_size, map_is_empty.
 */
#include "postgres.h"

#include "funcapi.h"
#include "utils/array.h"
#include "utils/lsyscache.h"

#include "sql/sql_common.h"

PG_FUNCTION_INFO_V1(state_map_put_all);
PG_FUNCTION_INFO_V1(state_map_contains);
PG_FUNCTION_INFO_V1(state_map_entries);
PG_FUNCTION_INFO_V1(state_map_size);
PG_FUNCTION_INFO_V1(state_map_is_empty);

/* The map key argument argno's image, in call->buf. */
static void
map_key_arg(StateCall *call, FunctionCallInfo fcinfo, int argno)
{
	resetStringInfo(&call->buf);
	state_call_encode(call, fcinfo, argno, ARG_MAP_KEY, &call->buf);
}

/*
 * sql_map_put_arg stores map_key -> value in the map of call->key; a NULL
 * value is stored as NULL (map_put, and a table's feed).
 */
void
sql_map_put_arg(StateCall *call, const StateArg *map_key, const StateArg *value)
{
	resetStringInfo(&call->buf);
	state_call_encode_arg(call, map_key, ARG_MAP_KEY, &call->buf);
	resetStringInfo(&call->buf2);
	if (!value->isnull)
		state_call_encode_arg(call, value, ARG_VALUE, &call->buf2);
	call->backend->map_put(&call->target, &call->key, call->buf.data, call->buf.len,
						   call->buf2.data, call->buf2.len, value->isnull);
}

/* sql_map_put stores map key argno -> value argno + 1 (NULL stays NULL). */
Datum
sql_map_put(StateCall *call, FunctionCallInfo fcinfo, int argno)
{
	StateArg	map_key = state_call_arg(fcinfo, argno);
	StateArg	value = state_call_arg(fcinfo, argno + 1);

	sql_map_put_arg(call, &map_key, &value);
	PG_RETURN_VOID();
}

/* map_put(name, key, map_key, value): a NULL value is stored as NULL. */
STATE_KEYED_FUNCTION(state_map_put, STATE_KIND_MAP, STATE_PRIV_WRITE, sql_map_put);

/* map_put_all(name, key, map_keys, values): pairs of equal-length arrays. */
Datum
state_map_put_all(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_keyed(fcinfo, STATE_KIND_MAP, STATE_PRIV_WRITE);
	Oid			ktype;
	Oid			vtype;
	ArrayType  *karr;
	ArrayType  *varr;
	Datum	   *keys;
	bool	   *knulls;
	Datum	   *vals;
	bool	   *vnulls;
	int			nk;
	int			nv;

	if (PG_ARGISNULL(2) || PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("map keys and values for state \"%s\" must not be null",
						NameStr(call->desc.name))));
	karr = state_call_array_arg(call, fcinfo, 2, ARG_MAP_KEY, &ktype);
	varr = state_call_array_arg(call, fcinfo, 3, ARG_VALUE, &vtype);
	nk = state_array_elems(karr, &keys, &knulls);
	nv = state_array_elems(varr, &vals, &vnulls);
	if (nk != nv)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("map_keys has %d elements but values has %d", nk, nv)));

	/* Convert everything first, so a bad element changes nothing. */
	{
		StringInfoData images;
		uint32	   *offs = palloc(sizeof(uint32) * (2 * nk + 1));

		initStringInfo(&images);
		for (int i = 0; i < nk; i++)
		{
			if (knulls[i])
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("map key of state \"%s\" must not be null",
								NameStr(call->desc.name))));
			offs[2 * i] = images.len;
			state_call_encode_datum(call, keys[i], ktype, ARG_MAP_KEY, &images);
			offs[2 * i + 1] = images.len;
			if (!vnulls[i])
				state_call_encode_datum(call, vals[i], vtype, ARG_VALUE, &images);
		}
		offs[2 * nk] = images.len;
		for (int i = 0; i < nk; i++)
			call->backend->map_put(&call->target, &call->key,
								   images.data + offs[2 * i],
								   offs[2 * i + 1] - offs[2 * i],
								   images.data + offs[2 * i + 1],
								   offs[2 * i + 2] - offs[2 * i + 1],
								   vnulls[i]);
	}
	PG_RETURN_VOID();
}

/* sql_map_get: the value of map key argno, or argument argno + 1. */
Datum
sql_map_get(StateCall *call, FunctionCallInfo fcinfo, int argno)
{
	bool		isnull = false;

	map_key_arg(call, fcinfo, argno);
	resetStringInfo(&call->buf2);
	if (call->backend->map_get(&call->target, &call->key, call->buf.data, call->buf.len,
							   &call->buf2, &isnull))
	{
		if (isnull)
			PG_RETURN_NULL();
		return state_call_result(call, call->buf2.data, call->buf2.len,
								 get_fn_expr_rettype(fcinfo->flinfo));
	}
	return state_call_default(call, fcinfo, argno + 1);
}

/* map_get(name, key, map_key, default) */
STATE_KEYED_FUNCTION(state_map_get, STATE_KIND_MAP, STATE_PRIV_READ, sql_map_get);

/* sql_map_remove removes map key argno: true if it was there. */
Datum
sql_map_remove(StateCall *call, FunctionCallInfo fcinfo, int argno)
{
	map_key_arg(call, fcinfo, argno);
	PG_RETURN_BOOL(call->backend->map_remove(&call->target, &call->key,
											 call->buf.data, call->buf.len));
}

/* map_remove(name, key, map_key): true if the map key was there. */
STATE_KEYED_FUNCTION(state_map_remove, STATE_KIND_MAP, STATE_PRIV_WRITE, sql_map_remove);

/* map_contains(name, key, map_key) */
Datum
state_map_contains(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_keyed(fcinfo, STATE_KIND_MAP, STATE_PRIV_READ);
	bool		isnull;

	map_key_arg(call, fcinfo, 2);
	resetStringInfo(&call->buf2);
	PG_RETURN_BOOL(call->backend->map_get(&call->target, &call->key,
										  call->buf.data, call->buf.len,
										  &call->buf2, &isnull));
}

typedef struct EntriesContext
{
	StateRows	rows;
	Oid			key_restype;
	Oid			value_restype;
} EntriesContext;

static void
entries_collect(void *arg, const char *mkey, uint32 mkeylen, const char *value,
				uint32 valuelen)
{
	EntriesContext *ctx = arg;
	StateCall  *call = ctx->rows.call;
	Datum		values[2];
	bool		nulls[2] = {false, value == NULL};

	values[0] = state_call_result_datum(call,
										codec_decode(&call->codecs[ARG_MAP_KEY], mkey, mkeylen),
										call->desc.types[STATE_TYPE_MAP_KEY].oid, ARG_MAP_KEY,
										ctx->key_restype);
	values[1] = value == NULL ? (Datum) 0 :
		state_call_result(call, value, valuelen, ctx->value_restype);
	tuplestore_putvalues(ctx->rows.rsinfo->setResult, ctx->rows.rsinfo->setDesc, values, nulls);
}

/* sql_map_entries returns the (map_key, value) rows of call->key's map. */
Datum
sql_map_entries(StateCall *call, FunctionCallInfo fcinfo)
{
	EntriesContext ctx;
	TupleDesc	tupdesc;

	state_rows_begin(&ctx.rows, call, fcinfo);
	tupdesc = ctx.rows.rsinfo->setDesc;
	ctx.key_restype = TupleDescAttr(tupdesc, 0)->atttypid;
	ctx.value_restype = TupleDescAttr(tupdesc, 1)->atttypid;
	call->backend->map_iterate(&call->target, &call->key, entries_collect, &ctx);
	return (Datum) 0;
}

/* map_entries(name, key, key_default, value_default): (map_key, value) rows. */
Datum
state_map_entries(PG_FUNCTION_ARGS)
{
	return sql_map_entries(state_call_keyed(fcinfo, STATE_KIND_MAP, STATE_PRIV_READ), fcinfo);
}

/* map_size(name, key): number of entries. */
Datum
state_map_size(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_keyed(fcinfo, STATE_KIND_MAP, STATE_PRIV_READ);

	PG_RETURN_INT64(call->backend->length(&call->target, &call->key));
}

/* map_is_empty(name, key) */
Datum
state_map_is_empty(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_keyed(fcinfo, STATE_KIND_MAP, STATE_PRIV_READ);

	PG_RETURN_BOOL(call->backend->length(&call->target, &call->key) == 0);
}
