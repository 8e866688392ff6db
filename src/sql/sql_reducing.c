/*
 * sql/sql_reducing.c
 *		ReducingState: reduce() folds a value into a key's state with the
 *		state's reducer (sum, min or max), atomically.
 *
 * The fold runs inside the backend's merge, with no lock held, and the
 * result is stored only if the key has not changed meanwhile, so concurrent
 * reduce calls on one key never lose an update.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_collation.h"
#include "catalog/namespace.h"
#include "catalog/pg_operator.h"
#include "nodes/value.h"
#include "parser/parse_oper.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

#include "common/local_hash.h"
#include "sql/sql_common.h"

PG_FUNCTION_INFO_V1(state_reduce);

typedef struct Reducer
{
	StateReducer kind;
	FmgrInfo	fn;				/* "+" for sum, btree comparison for min/max */
	Oid			collation;
	TypeCodec  *codec;
	StateFold	fold;			/* the same, for a backend that folds elsewhere */
	bool		foldable;
	StateCall  *call;			/* for the value type's domain, if any */
} Reducer;

/*
 * The function of the "+" operator of a type that yields the type, or
 * InvalidOid.  A domain sums with its base type's "+", and each result is
 * checked against the domain's constraints.
 */
static Oid
sum_operator(Oid type)
{
	Oid			base = getBaseType(type);
	Oid			opr = OpernameGetOprid(list_make1(makeString("+")), base, base);

	if (!OidIsValid(opr) || get_op_rettype(opr) != base)
		return InvalidOid;
	return get_opcode(opr);
}

/*
 * reducer_check_type raises undefined_function when a reducer cannot fold
 * values of a type: sum needs "+" (T, T) returning T, min and max a btree
 * ordering.
 */
void
reducer_check_type(StateReducer reducer, Oid type)
{
	if (reducer == STATE_REDUCER_SUM)
	{
		if (!OidIsValid(sum_operator(type)))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("reducer sum cannot fold values of type %s", format_type_be(type)),
					 errdetail("There is no operator + (%s, %s) returning %s.",
							   format_type_be(type), format_type_be(type),
							   format_type_be(type))));
	}
	else
	{
		TypeCacheEntry *tce = lookup_type_cache(type, TYPECACHE_CMP_PROC);

		if (!OidIsValid(tce->cmp_proc))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("reducer %s cannot fold values of type %s",
							state_reducer_name(reducer), format_type_be(type)),
					 errdetail("Type %s has no default btree ordering.",
							   format_type_be(type))));
	}
}

static Reducer *
reducer_setup(StateCall *call)
{
	Reducer    *r = MemoryContextAllocZero(call->mcxt, sizeof(Reducer));
	Oid			type = call->desc.types[STATE_TYPE_VALUE].oid;
	Oid			fn;

	reducer_check_type(call->desc.reducer, type);
	r->kind = call->desc.reducer;
	r->call = call;
	r->codec = &call->codecs[ARG_VALUE];
	r->collation = type_is_collatable(type) ? DEFAULT_COLLATION_OID : InvalidOid;
	if (r->kind == STATE_REDUCER_SUM)
		fn = sum_operator(type);
	else
		fn = lookup_type_cache(type, TYPECACHE_CMP_PROC)->cmp_proc;
	fmgr_info_cxt(fn, &r->fn, call->mcxt);

	/* Folds that need no catalog can run in any process (the state worker). */
	r->fold.kind = r->kind;
	r->fold.type = type;
	r->fold.fn = fn;
	r->fold.collation = r->collation;
	r->fold.typlen = r->codec->typlen;
	r->fold.typbyval = r->codec->typbyval;
	r->foldable = state_fold_type_ok(type, fn);
	return r;
}

/* StateMergeFn of reducing states: out := cur <reducer> in. */
static void
reducer_merge(const char *cur, uint32 curlen, const char *in, uint32 inlen,
			  StringInfo out, void *arg)
{
	Reducer    *r = arg;
	Datum		a;
	Datum		b;
	Datum		result;

	resetStringInfo(out);
	if (cur == NULL)
	{
		appendBinaryStringInfo(out, in, inlen);
		return;
	}
	a = codec_decode(r->codec, cur, curlen);
	b = codec_decode(r->codec, in, inlen);
	result = state_fold(r->kind, &r->fn, r->collation, a, b);
	if (r->call->domain[ARG_VALUE])
		state_call_check_domain(r->call, result, ARG_VALUE);
	codec_encode(r->codec, result, out);
}

/*
 * Set-ups of a descriptor kept across transactions, one per state: the
 * commit of a transactional state's reductions combines them with the
 * committed value through one, once in each transaction (sql_txn_combine).
 * Remade after a catalog change, or under another role or search_path.
 */
typedef struct KeptEntry
{
	uint32		state_id;		/* hash key */
	StateCall  *call;
	uint32		context_key;
} KeptEntry;

#define KEPT_MAX	256

static HTAB *kept = NULL;
static MemoryContext kept_cxt = NULL;

/*
 * A set-up gone stale leaves the table; in a transaction it lives on until
 * the transaction ends, since a pending commit's combine may still hold it.
 */
static void
kept_forget(KeptEntry *e)
{
	if (IsTransactionState())
		MemoryContextSetParent(e->call->own, TopTransactionContext);
	else
		MemoryContextDelete(e->call->own);
	(void) hash_search(kept, &e->state_id, HASH_REMOVE, NULL);
}

StateCall *
sql_kept_call(const StateDesc *desc)
{
	KeptEntry  *e;
	StateCall  *call;

	if (kept == NULL)
	{
		kept_cxt = AllocSetContextCreate(TopMemoryContext, "state_backend kept set-ups",
										 ALLOCSET_SMALL_SIZES);
		kept = local_hash_create("state_backend kept set-ups", 16, sizeof(uint32),
								 sizeof(KeptEntry), kept_cxt);
	}
	e = hash_search(kept, &desc->id, HASH_FIND, NULL);
	if (e != NULL && state_call_fresh(e->call, e->context_key))
		return e->call;
	if (e != NULL)
		kept_forget(e);
	/* Full: one for this transaction only (the caller's memory holds it). */
	if (hash_get_num_entries(kept) >= KEPT_MAX)
		return state_call_detached(desc);
	call = state_call_new(kept_cxt);
	PG_TRY();
	{
		state_call_setup_detached(call, desc);
	}
	PG_CATCH();
	{
		MemoryContextDelete(call->own);
		PG_RE_THROW();
	}
	PG_END_TRY();
	e = hash_search(kept, &desc->id, HASH_ENTER, NULL);
	e->call = call;
	e->context_key = state_call_context();
	return call;
}

/*
 * sql_txn_combine sets up, for a transactional reducing or aggregating
 * state, how the fold of a transaction's values combines with the value
 * committed when it commits: a reducer folds it as one more value (sum,
 * min and max do not mind the grouping), an aggregate combines the two
 * transition states.
 */
void
sql_txn_combine(const StateDesc *desc, StateMergeFn *fn, void **arg)
{
	StateCall  *call = sql_kept_call(desc);

	if (desc->kind == STATE_KIND_AGGREGATING)
	{
		sql_aggregating_combine(call, fn, arg);
		return;
	}
	if (call->extra == NULL)
		call->extra = reducer_setup(call);
	*fn = reducer_merge;
	*arg = call->extra;
}

/* sql_reducer_setup: a state's reducer, as a merge of value images. */
void
sql_reducer_setup(StateCall *call, StateMergeFn *fn, void **arg)
{
	*fn = reducer_merge;
	*arg = reducer_setup(call);
}

/*
 * sql_reduce_arg folds value into call->key's state with the reducer (set
 * up on first use); the new result's image is left in call->buf2 (reduce,
 * and a table's feed).
 */
void
sql_reduce_arg(StateCall *call, const StateArg *value)
{
	Reducer    *r;

	if (call->extra == NULL)
		call->extra = reducer_setup(call);
	r = call->extra;
	if (value->isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("value of state \"%s\" must not be null",
						NameStr(call->desc.name))));
	resetStringInfo(&call->buf);
	state_call_encode_arg(call, value, ARG_VALUE, &call->buf);
	call->backend->merge(&call->target, &call->key, call->buf.data, call->buf.len,
						 reducer_merge, r, r->foldable ? &r->fold : NULL, &call->buf2);
}

/* reduce(name, key, value): fold value in; returns the new result. */
Datum
state_reduce(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_begin(fcinfo, STATE_KIND_REDUCING,
										STATE_PRIV_READ | STATE_PRIV_WRITE);
	StateArg	value;

	if (call->extra == NULL)
		call->extra = reducer_setup(call);
	state_call_key(call, fcinfo, 1);
	value = state_call_arg(fcinfo, 2);
	sql_reduce_arg(call, &value);
	return state_call_result(call, call->buf2.data, call->buf2.len,
							 get_fn_expr_rettype(fcinfo->flinfo));
}
