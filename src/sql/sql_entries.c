/*
 * sql/sql_entries.c
 *		entries(): every key of a state with its value, as a table.
 *
 * The rows go to a tuplestore, which spills to disk past work_mem, and
 * each entry is turned into a row in a memory context of its own, reset
 * after it: a state of any size is read in bounded memory.
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "sql/sql_common.h"

PG_FUNCTION_INFO_V1(state_entries);

/* StateEntryFn: one key and its value image, as a row. */
void
rows_put(void *arg, const char *key, uint32 keylen, const char *img, uint32 len)
{
	RowsContext *ctx = arg;
	StateCall  *call = ctx->rows.call;
	MemoryContext old = MemoryContextSwitchTo(ctx->row_cxt);
	Datum		values[2];
	bool		nulls[2] = {false, false};

	CHECK_FOR_INTERRUPTS();
	values[0] = state_call_result_datum(call, codec_decode(&call->codecs[ARG_KEY], key, keylen),
										call->desc.types[STATE_TYPE_KEY].oid, ARG_KEY, ctx->key_type);
	switch (call->desc.kind)
	{
		case STATE_KIND_LIST:
			values[1] = sql_list_datum(call, img, len, ctx->value_type);
			break;
		case STATE_KIND_AGGREGATING:
			values[1] = sql_aggregating_datum(call, img, len, ctx->value_type, &nulls[1]);
			break;
		default:
			values[1] = state_call_result(call, img, len, ctx->value_type);
			break;
	}
	tuplestore_putvalues(ctx->rows.rsinfo->setResult, ctx->rows.rsinfo->setDesc, values, nulls);
	MemoryContextSwitchTo(old);
	MemoryContextReset(ctx->row_cxt);
}

/*
 * rows_begin checks that a state's kind has entries() rows, and readies
 * the function's tuplestore for them.
 */
void
rows_begin(RowsContext *ctx, StateCall *call, FunctionCallInfo fcinfo)
{
	StateKind	kind = call->desc.kind;

	if (kind != STATE_KIND_VALUE && kind != STATE_KIND_REDUCING &&
		kind != STATE_KIND_AGGREGATING && kind != STATE_KIND_LIST)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("state \"%s\" cannot be read by entries, which reads value, reducing, aggregating and list states, not %s states",
						NameStr(call->desc.name), state_kind_name(kind)),
				 kind == STATE_KIND_MAP ?
				 errhint("Read a map's entries key by key with map_entries.") : 0));
	state_rows_begin(&ctx->rows, call, fcinfo);
	ctx->key_type = TupleDescAttr(ctx->rows.rsinfo->setDesc, 0)->atttypid;
	ctx->value_type = TupleDescAttr(ctx->rows.rsinfo->setDesc, 1)->atttypid;
	ctx->row_cxt = AllocSetContextCreate(CurrentMemoryContext, "state_backend entries",
										 ALLOCSET_DEFAULT_SIZES);
}

/*
 * key_rows_each fills the function's tuplestore (of its expected row type)
 * with the rows fn makes of each key of the call's state.  rows, fn's
 * argument (first in a caller's struct of its own, if it needs more), has
 * the call, the tuplestore and restype, what a key is shown as.  Returns
 * what the function returns.
 */
Datum
key_rows_each(KeyRows *rows, StateCall *call, FunctionCallInfo fcinfo, Oid restype,
			  StateEntryFn fn)
{
	state_rows_begin(&rows->rows, call, fcinfo);
	rows->restype = restype;
	call->backend->iterate(&call->target, -1, fn, rows);
	return (Datum) 0;
}

/* key_rows_key: a key's image as the datum its rows show. */
Datum
key_rows_key(const KeyRows *rows, const char *key, uint32 keylen)
{
	StateCall  *call = rows->rows.call;

	return state_call_result_datum(call, codec_decode(&call->codecs[ARG_KEY], key, keylen),
								   call->desc.types[STATE_TYPE_KEY].oid, ARG_KEY,
								   rows->restype);
}

/*
 * entries(name, key_default, value_default): every key of a value,
 * reducing, aggregating or list state with its value (a list's as an
 * array), typed by the defaults, in no particular order.
 */
Datum
state_entries(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_begin(fcinfo, ANY_KIND, STATE_PRIV_READ);
	RowsContext ctx;

	rows_begin(&ctx, call, fcinfo);
	call->backend->iterate(&call->target, -1, rows_put, &ctx);
	MemoryContextDelete(ctx.row_cxt);
	return (Datum) 0;
}
