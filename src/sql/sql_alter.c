/*
 * sql/sql_alter.c
 *		alter_state: change a state's name, types, TTL, backend, logging or
 *		transactions, all or nothing, while sessions go on using it.
 *
 * The arguments are checked first, against the state and the kinds' rules,
 * as create_state checks them.  Then the state's change lock keeps its
 * writers out (they wait) and its entries are copied into a new state
 * (state_evolve.c), each converted here: key, value, list element, map key
 * and map value decoded with the old type's codec, put through the
 * conversion (the USING expression, or the column name alone, so that the
 * type's assignment cast applies), and encoded with the new one; TTL
 * deadlines moved to the new TTL.  Expressions are parsed as ALTER TABLE's
 * USING is (EXPR_KIND_ALTER_COL_TRANSFORM), with the names key, value and
 * map_key standing for parameters, and run as the caller, who owns the
 * state or is a superuser.
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/int.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/params.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parse_collate.h"
#include "parser/parse_expr.h"
#include "parser/parse_node.h"
#include "parser/parser.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "backend/keyed_backend.h"
#include "catalog/registry.h"
#include "common/aggregate.h"
#include "common/codec.h"
#include "common/locks.h"
#include "common/settings.h"
#include "common/ttl_clock.h"
#include "format/records.h"
#include "logged/logged.h"
#include "sql/sql_common.h"
#include "state_evolve.h"
#include "state_ops.h"
#include "timers/timer_queue.h"
#include "txn/txn_state.h"

PG_FUNCTION_INFO_V1(state_alter_state);

/* The names an expression may use, and their parameter numbers. */
#define PARAM_KEY		1
#define PARAM_VALUE		2
#define PARAM_MAP_KEY	3
#define NPARAMS			3

/* One conversion: an expression's compiled form, or none (copied as is). */
typedef struct Conversion
{
	bool		active;
	const char *what;			/* "key", "value", "map key" */
	ExprState  *expr;
	TypeCodec	from;
	TypeCodec	to;
} Conversion;

typedef struct AlterContext
{
	const StateDesc *old;
	const StateDesc *newd;
	StateKind	layout;
	bool		convert_images;	/* values, elements or map entries change */
	Conversion	key;
	Conversion	value;
	Conversion	map_key;
	/* the names' types, for parse_columnref */
	Oid			param_types[NPARAMS];
	bool		param_allowed[NPARAMS];
	ExprContext *econtext;
	ParamListInfo params;
	int64		now;			/* the TTL clock, once */
	StringInfoData scratch;
	StringInfoData scratch2;
	/* the entry being converted, for the error's detail */
	const char *cur_key;
	uint32		cur_keylen;
} AlterContext;

static AlterContext *parse_ctx;


/* The names key, value and map_key of an expression are its parameters. */
static Node *
parse_columnref(ParseState *pstate, ColumnRef *cref)
{
	AlterContext *ctx = parse_ctx;
	const char *name;
	int			id;
	Param	   *p;

	if (list_length(cref->fields) != 1 || !IsA(linitial(cref->fields), String))
		return NULL;
	name = strVal(linitial(cref->fields));
	if (strcmp(name, "key") == 0)
		id = PARAM_KEY;
	else if (strcmp(name, "value") == 0)
		id = PARAM_VALUE;
	else if (strcmp(name, "map_key") == 0)
		id = PARAM_MAP_KEY;
	else
		return NULL;
	if (!ctx->param_allowed[id - 1])
		return NULL;
	p = makeNode(Param);
	p->paramkind = PARAM_EXTERN;
	p->paramid = id;
	p->paramtype = ctx->param_types[id - 1];
	p->paramtypmod = -1;
	p->paramcollid = get_typcollation(p->paramtype);
	p->location = cref->location;
	return (Node *) p;
}

/*
 * conversion_compile parses "source" (an expression over the names
 * allowed) and makes it yield type "to" by assignment; what names the
 * argument in errors.
 */
static void
conversion_compile(AlterContext *ctx, Conversion *conv, const char *what, const char *source,
				   const char *argname, Oid from, Oid to)
{
	List	   *raw;
	SelectStmt *select;
	ResTarget  *target;
	ParseState *pstate;
	Node	   *expr;
	Oid			exprtype;
	Node	   *coerced;
	char	   *sql = psprintf("SELECT %s", source);

	conv->active = true;
	conv->what = what;
	codec_init(&conv->from, from, CurrentMemoryContext);
	codec_init(&conv->to, to, CurrentMemoryContext);

	raw = raw_parser(sql, RAW_PARSE_DEFAULT);
	if (list_length(raw) != 1 ||
		!IsA(((RawStmt *) linitial(raw))->stmt, SelectStmt))
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("%s must be one expression", argname)));
	select = (SelectStmt *) ((RawStmt *) linitial(raw))->stmt;
	if (list_length(select->targetList) != 1 || select->fromClause != NIL ||
		select->whereClause != NULL || select->groupClause != NIL ||
		select->havingClause != NULL || select->windowClause != NIL ||
		select->distinctClause != NIL || select->sortClause != NIL ||
		select->limitCount != NULL || select->limitOffset != NULL ||
		select->withClause != NULL || select->valuesLists != NIL ||
		select->op != SETOP_NONE || select->intoClause != NULL ||
		select->lockingClause != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("%s must be one expression", argname),
				 errdetail("It is \"%s\".", source)));
	target = linitial(select->targetList);
	if (target->name != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("%s must be one expression", argname)));

	pstate = make_parsestate(NULL);
	pstate->p_sourcetext = sql;
	pstate->p_pre_columnref_hook = parse_columnref;
	parse_ctx = ctx;
	expr = transformExpr(pstate, target->val, EXPR_KIND_ALTER_COL_TRANSFORM);
	parse_ctx = NULL;
	exprtype = exprType(expr);
	coerced = coerce_to_target_type(pstate, expr, exprtype, to, -1,
									COERCION_ASSIGNMENT, COERCE_IMPLICIT_CAST, -1);
	if (coerced == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the %s of state \"%s\" cannot be converted from %s to %s",
						what, NameStr(ctx->old->name), format_type_be(exprtype),
						format_type_be(to)),
				 errhint("Give %s, an expression over %s that yields %s.", argname,
						 strcmp(what, "key") == 0 ? "key" :
						 strcmp(what, "map key") == 0 ? "key and map_key" :
						 ctx->layout == STATE_KIND_MAP ? "key, map_key and value" : "key and value",
						 format_type_be(to))));
	assign_expr_collations(pstate, coerced);
	free_parsestate(pstate);
	conv->expr = ExecInitExpr((Expr *) expression_planner((Expr *) coerced), NULL);
}

/*
 * Run a conversion on a datum image into out; true when it gave NULL,
 * which only a map value may be (null_ok): else 23502.
 */
static bool
convert_datum(AlterContext *ctx, Conversion *conv, int param, const char *img, uint32 len,
			  StringInfo out, bool null_ok)
{
	Datum		result;
	bool		isnull;

	ctx->params->params[param - 1].value = codec_decode(&conv->from, img, len);
	ctx->params->params[param - 1].isnull = false;
	result = ExecEvalExprSwitchContext(conv->expr, ctx->econtext, &isnull);
	if (isnull && null_ok)
		return true;
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("the conversion gave a null %s", conv->what),
				 errdetail("A state holds no null %ss.", conv->what)));
	codec_encode(&conv->to, result, out);
	return false;
}

/* The new deadline of a value whose old one is "deadline" (0: none). */
static int64
new_deadline(AlterContext *ctx, int64 deadline)
{
	int64		d;

	if (ctx->newd->ttl == 0)
		return 0;
	if (ctx->old->ttl == 0)
		d = ctx->now;
	else if (pg_sub_s64_overflow(deadline, ctx->old->ttl, &d))
		d = ctx->now;
	if (pg_add_s64_overflow(d, ctx->newd->ttl, &d))
		d = PG_INT64_MAX;
	return d;
}

/*
 * A value as a value, reducing or list element image holds it: its old
 * deadline (if the state had a TTL) and datum; false when it expired.
 */
static bool
split_ttl(AlterContext *ctx, const char *img, uint32 len, int hdr,
		  int64 *deadline, const char **datum, uint32 *datumlen)
{
	*deadline = 0;
	*datum = img;
	*datumlen = len;
	if (ctx->old->ttl == 0)
		return true;
	if (len < (uint32) hdr || !record_ttl_read(img, len, deadline))
		elog(ERROR, "state_backend: a value of state \"%s\" has no deadline",
			 NameStr(ctx->old->name));
	if (*deadline <= ctx->now)
		return false;
	*datum = img + hdr;
	*datumlen = len - hdr;
	return true;
}

/* One value (value or reducing image, or list element) into out. */
static bool
convert_one_value(AlterContext *ctx, const char *img, uint32 len, StringInfo out)
{
	int64		deadline;
	const char *datum;
	uint32		datumlen;

	if (!split_ttl(ctx, img, len, RECORD_TTL_HDR, &deadline, &datum, &datumlen))
		return false;
	if (ctx->newd->ttl > 0)
		record_ttl_put(out, new_deadline(ctx, deadline));
	if (ctx->value.active)
		(void) convert_datum(ctx, &ctx->value, PARAM_VALUE, datum, datumlen, out, false);
	else
		appendBinaryStringInfo(out, datum, datumlen);
	return true;
}

static bool
convert_list(AlterContext *ctx, const char *img, uint32 len, StringInfo out)
{
	uint32		off = 0;
	const char *elem;
	uint32		elemlen;
	RecordRead	r;
	bool		any = false;

	while ((r = record_next_elem(img, len, &off, &elem, &elemlen)) == RECORD_OK)
	{
		int			begin = record_elem_begin(out);

		if (convert_one_value(ctx, elem, elemlen, out))
		{
			record_elem_end(out, begin);
			any = true;
		}
		else
			out->len = begin;
	}
	if (r == RECORD_TRUNCATED)
		elog(ERROR, "state_backend: a list of state \"%s\" is damaged", NameStr(ctx->old->name));
	return any;
}

typedef struct MapKeyRef
{
	const char *data;
	uint32		len;
} MapKeyRef;

static int
map_key_ref_cmp(const void *a, const void *b)
{
	const MapKeyRef *x = a;
	const MapKeyRef *y = b;
	int			c = memcmp(x->data, y->data, Min(x->len, y->len));

	return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

static bool
convert_map(AlterContext *ctx, const char *img, uint32 len, StringInfo out)
{
	uint32		off = 0;
	RecordPair	pair;
	RecordRead	r;
	int			n = 0;
	MapKeyRef  *keys = NULL;
	StringInfo	mk = &ctx->scratch;
	StringInfo	val = &ctx->scratch2;

	while ((r = record_next_pair(img, len, &off, &pair)) == RECORD_OK)
	{
		bool		isnull = pair.value == NULL;
		const char *datum = pair.value;
		uint32		datumlen = pair.vallen;
		int64		deadline = 0;

		resetStringInfo(mk);
		resetStringInfo(val);
		if (ctx->old->ttl > 0)
		{
			if (pair.value == NULL || pair.vallen < RECORD_TTL_MAP_HDR ||
				!record_ttl_read(pair.value, pair.vallen, &deadline))
				elog(ERROR, "state_backend: a map value of state \"%s\" has no deadline",
					 NameStr(ctx->old->name));
			if (deadline <= ctx->now)
				continue;
			isnull = pair.value[RECORD_TTL_HDR] == 1;
			datum = pair.value + RECORD_TTL_MAP_HDR;
			datumlen = pair.vallen - RECORD_TTL_MAP_HDR;
		}
		if (ctx->map_key.active)
		{
			ctx->params->params[PARAM_MAP_KEY - 1].value =
				codec_decode(&ctx->map_key.from, pair.key, pair.keylen);
			ctx->params->params[PARAM_MAP_KEY - 1].isnull = false;
			(void) convert_datum(ctx, &ctx->map_key, PARAM_MAP_KEY, pair.key, pair.keylen, mk,
								 false);
		}
		else
			appendBinaryStringInfo(mk, pair.key, pair.keylen);
		if (ctx->value.active && !isnull)
		{
			ctx->params->params[PARAM_MAP_KEY - 1].value =
				codec_decode(&ctx->map_key.from, pair.key, pair.keylen);
			ctx->params->params[PARAM_MAP_KEY - 1].isnull = false;
			isnull = convert_datum(ctx, &ctx->value, PARAM_VALUE, datum, datumlen, val, true);
		}
		else if (!isnull)
			appendBinaryStringInfo(val, datum, datumlen);
		if (ctx->newd->ttl > 0)
		{
			StringInfoData tv;

			initStringInfo(&tv);
			record_ttl_put(&tv, new_deadline(ctx, deadline));
			appendStringInfoChar(&tv, isnull ? 1 : 0);
			appendBinaryStringInfo(&tv, val->data, val->len);
			record_put_pair(out, mk->data, (uint32) mk->len, tv.data, (uint32) tv.len);
			pfree(tv.data);
		}
		else
			record_put_pair(out, mk->data, (uint32) mk->len, isnull ? NULL : val->data,
							(uint32) val->len);
		n++;
	}
	if (r == RECORD_TRUNCATED)
		elog(ERROR, "state_backend: a map of state \"%s\" is damaged", NameStr(ctx->old->name));

	/* Two map keys that became one would lose an entry. */
	if (ctx->map_key.active && n > 1)
	{
		uint32		o = 0;
		int			i = 0;

		keys = palloc(sizeof(MapKeyRef) * n);
		while (record_next_pair(out->data, out->len, &o, &pair) == RECORD_OK)
		{
			keys[i].data = pair.key;
			keys[i++].len = pair.keylen;
		}
		qsort(keys, i, sizeof(MapKeyRef), map_key_ref_cmp);
		for (int j = 1; j < i; j++)
			if (map_key_ref_cmp(&keys[j - 1], &keys[j]) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_UNIQUE_VIOLATION),
						 errmsg("the map key conversion makes two map keys of one key the same")));
		pfree(keys);
	}
	return n > 0;
}

static bool convert_entry_in(AlterContext *ctx, const char *key, uint32 keylen,
							 const char *image, uint32 len, StringInfo newkey,
							 StringInfo newimage);

/* StateEvolveFn of alter_state. */
static bool
convert_entry(void *arg, const char *key, uint32 keylen, const char *image, uint32 len,
			  StringInfo newkey, StringInfo newimage)
{
	AlterContext *ctx = arg;
	bool		keep;
	MemoryContext cxt;

	ctx->cur_key = key;
	ctx->cur_keylen = keylen;
	ResetExprContext(ctx->econtext);
	/* What decoding allocates goes with the entry. */
	cxt = MemoryContextSwitchTo(ctx->econtext->ecxt_per_tuple_memory);
	keep = convert_entry_in(ctx, key, keylen, image, len, newkey, newimage);
	MemoryContextSwitchTo(cxt);
	ctx->cur_key = NULL;
	return keep;
}

static bool
convert_entry_in(AlterContext *ctx, const char *key, uint32 keylen, const char *image,
				 uint32 len, StringInfo newkey, StringInfo newimage)
{
	bool		keep = true;

	for (int i = 0; i < NPARAMS; i++)
		ctx->params->params[i].isnull = true;
	if (ctx->key.active || ctx->value.active || ctx->map_key.active)
	{
		ctx->params->params[PARAM_KEY - 1].value =
			codec_decode(&ctx->key.from, key, keylen);
		ctx->params->params[PARAM_KEY - 1].isnull = false;
	}
	if (image == NULL)
		keep = false;
	else if (!ctx->convert_images)
		appendBinaryStringInfo(newimage, image, len);
	else if (ctx->layout == STATE_KIND_LIST)
		keep = convert_list(ctx, image, len, newimage);
	else if (ctx->layout == STATE_KIND_MAP)
		keep = convert_map(ctx, image, len, newimage);
	else
		keep = convert_one_value(ctx, image, len, newimage);

	/* The key goes over even when the entry does not (its absence). */
	if (ctx->key.active)
		(void) convert_datum(ctx, &ctx->key, PARAM_KEY, key, keylen, newkey, false);
	else
		appendBinaryStringInfo(newkey, key, keylen);
	return keep;
}

/*
 * convert_all runs the change; a conversion's error gets the key it failed
 * at in its detail.
 */
static int64
convert_all(const StateDesc *old, int slot, StateDesc *newd, bool pending, AlterContext *ctx)
{
	MemoryContext cxt = CurrentMemoryContext;
	int64		entries = 0;

	PG_TRY();
	{
		entries = state_evolve(old, slot, newd, pending,
							   !old->transactional && !state_desc_fires(old) &&
							   !ctx->key.active,
							   convert_entry, ctx);
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		char	   *keytext;

		if (ctx->cur_key == NULL)
			PG_RE_THROW();
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		keytext = codec_output(&ctx->key.from,
							   codec_decode(&ctx->key.from, ctx->cur_key, ctx->cur_keylen));
		ereport(ERROR,
				(errcode(edata->sqlerrcode),
				 errmsg("%s", edata->message),
				 edata->detail ?
				 errdetail("%s At the entry of key %s of state \"%s\"; the state is unchanged.",
						   edata->detail, keytext, NameStr(old->name)) :
				 errdetail("At the entry of key %s of state \"%s\"; the state is unchanged.",
						   keytext, NameStr(old->name)),
				 edata->hint ? errhint("%s", edata->hint) : 0));
	}
	PG_END_TRY();
	return entries;
}

/* ------------------------------------------------------------ arguments */



static void
refuse_for_kind(const StateDesc *d, const char *what, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot change the %s of state \"%s\", %s %s state", what,
					NameStr(d->name),
					state_desc_kind_name(d)[0] == 'a' || state_desc_kind_name(d)[0] == 'o' ||
					state_desc_kind_name(d)[0] == 'u' ? "an" : "a",
					state_desc_kind_name(d)),
			 errhint("%s", hint)));
}

static Oid
type_arg(FunctionCallInfo fcinfo, int argno)
{
	return PG_ARGISNULL(argno) ? InvalidOid : PG_GETARG_OID(argno);
}

static char *
text_arg(FunctionCallInfo fcinfo, int argno)
{
	return PG_ARGISNULL(argno) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

/*
 * Run "check" (a check that raises), turning its error into 42804 (the
 * kinds' rules on a type: a reducer's or an aggregate's) with its message.
 */
static void
check_as_mismatch(void (*check) (const StateDesc *, Oid), const StateDesc *d, Oid type)
{
	MemoryContext cxt = CurrentMemoryContext;

	PG_TRY();
	{
		check(d, type);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s", edata->message),
				 edata->detail ? errdetail("%s", edata->detail) : 0,
				 errhint("A reducing state's values are of a type its reducer folds; an aggregating state's are its aggregate's input type.")));
	}
	PG_END_TRY();
}

static void
check_reducer(const StateDesc *d, Oid type)
{
	reducer_check_type(d->reducer, type);
}

static void
check_aggregate(const StateDesc *d, Oid type)
{
	StateDesc	tmp = *d;

	aggregate_describe(d->aggregate, type, d->owner, &tmp);
	if (tmp.agg_type.oid != d->agg_type.oid)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("aggregate %s over %s keeps a transition state of type %s, not %s",
						d->agg_signature, format_type_be(type),
						format_type_be(tmp.agg_type.oid), format_type_be(d->agg_type.oid))));
}

/*
 * alter_state(name, rename_to, key_type, key_using, value_type,
 *			   value_using, ttl, backend, logged, transactional, map_key_type,
 *			   map_key_using)
 */
Datum
state_alter_state(PG_FUNCTION_ARGS)
{
	char	   *name = state_call_name_arg(fcinfo);
	char	   *rename_to = text_arg(fcinfo, 1);
	Oid			key_type = type_arg(fcinfo, 2);
	char	   *key_using = text_arg(fcinfo, 3);
	Oid			value_type = type_arg(fcinfo, 4);
	char	   *value_using = text_arg(fcinfo, 5);
	char	   *backend = text_arg(fcinfo, 7);
	Oid			map_key_type = type_arg(fcinfo, 10);
	char	   *map_key_using = text_arg(fcinfo, 11);
	StateDesc	old;
	StateDesc	newd;
	int			slot;
	AlterContext *ctx;
	bool		changed;
	bool		fires;
	bool		pending = false;
	int64		entries;

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot change a state on a standby"),
				 errhint("Change it on the primary; the change reaches the standby in WAL when the state is logged.")));
	state_backend_check_writable("state.alter_state()");
	if (timer_worker_is_me())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot change a state from a timer handler or an emit function"),
				 errdetail("A change of a timers or window state waits for the timer worker, which runs this code."),
				 errhint("Change states from a session.")));
	registry_resolve(name, &old, &slot);
	registry_check_owner(&old);

	if (key_using && !OidIsValid(key_type))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key_using needs key_type")));
	if (value_using && !OidIsValid(value_type))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("value_using needs value_type")));
	if (map_key_using && !OidIsValid(map_key_type))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("map_key_using needs map_key_type")));

	/*
	 * One change at a time; then the state is looked at again, since a
	 * change it waited for may have replaced it.
	 */
	for (;;)
	{
		StateDesc	cur;

		state_ops_lock_alter(&old);
		registry_resolve(name, &cur, &slot);
		if (cur.id == old.id)
		{
			old = cur;
			break;
		}
		registry_check_owner(&cur);
		old = cur;
	}
	if (old.transactional && state_ops_wrote(&old))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot change transactional state \"%s\" in a transaction that wrote to it",
						name),
				 errdetail("Its writes apply at the commit, to the state as it was."),
				 errhint("Commit or roll back first.")));

	newd = old;
	newd.id = 0;
	newd.moving = 0;
	newd.replaces = old.id;
	ctx = palloc0(sizeof(AlterContext));
	ctx->old = &old;
	ctx->newd = &newd;
	ctx->layout = state_kind_layout(old.kind);
	fires = state_desc_fires(&old);

	/* The name. */
	if (rename_to)
	{
		state_call_name_new(rename_to, &newd.name);
		if (strcmp(rename_to, NameStr(old.name)) != 0 && registry_exists(MyDatabaseId, rename_to))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("state \"%s\" already exists", rename_to)));
	}

	/* What each kind may change. */
	if ((OidIsValid(key_type) || OidIsValid(value_type) || OidIsValid(map_key_type)) && fires)
		refuse_for_kind(&old, "types", "The types of a timers or window state are the timers' and the windows'; it may be renamed, and change its backend and logging.");
	if (!PG_ARGISNULL(6) && (fires || state_kind_is_operator(old.kind)))
		refuse_for_kind(&old, "TTL", "TTL applies to value, list, map, reducing and aggregating states.");
	if (!PG_ARGISNULL(9) && (fires || state_kind_is_operator(old.kind)))
		refuse_for_kind(&old, "transactions", "Value, list, map, reducing and aggregating states can be transactional.");
	if (OidIsValid(key_type) && state_kind_is_operator(old.kind))
		refuse_for_kind(&old, "key type", "Operator states have no keys.");
	if ((backend || !PG_ARGISNULL(8)) && state_kind_is_operator(old.kind))
		refuse_for_kind(&old, backend ? "backend" : "logging", "An operator state may be renamed and change its value type.");
	if (OidIsValid(map_key_type) && state_kind_is_operator(old.kind))
		refuse_for_kind(&old, "map key type", "An operator state may be renamed and change its value type.");
	if (OidIsValid(map_key_type) && ctx->layout != STATE_KIND_MAP)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("state \"%s\" is a %s state, which has no map keys", name,
						state_desc_kind_name(&old)),
				 errhint("Leave map_key_type NULL.")));

	/* Types. */
	if (OidIsValid(key_type) && (key_type != old.types[STATE_TYPE_KEY].oid || key_using) &&
		old.range_parts > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot change the key type of state \"%s\", which holds key groups %d to %d only",
						name, old.range_first, old.range_last),
				 errdetail("Converted keys fall in other key groups, which other parts hold."),
				 errhint("Change it where the state holds every key group (restore the parts into one), then split it again.")));
	if (OidIsValid(key_type) && (key_type != old.types[STATE_TYPE_KEY].oid || key_using))
	{
		state_ops_check_type(key_type, "a state key", true);
		codec_describe_type(key_type, &newd.types[STATE_TYPE_KEY]);
	}
	if (OidIsValid(value_type) && (value_type != old.types[STATE_TYPE_VALUE].oid || value_using))
	{
		state_ops_check_type(value_type, "a state value", old.kind != STATE_KIND_AGGREGATING);
		if (ctx->layout == STATE_KIND_LIST)
			state_ops_check_list_type(value_type);
		if (old.kind == STATE_KIND_REDUCING)
			check_as_mismatch(check_reducer, &old, value_type);
		if (old.kind == STATE_KIND_AGGREGATING)
		{
			if (value_using)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("an aggregating state keeps transition states, which value_using cannot convert"),
						 errhint("Leave value_using NULL: the value type may change to another input type of the same aggregate.")));
			check_as_mismatch(check_aggregate, &old, value_type);
		}
		codec_describe_type(value_type, &newd.types[STATE_TYPE_VALUE]);
	}
	if (OidIsValid(map_key_type) &&
		(map_key_type != old.types[STATE_TYPE_MAP_KEY].oid || map_key_using))
	{
		state_ops_check_type(map_key_type, "a map key", true);
		codec_describe_type(map_key_type, &newd.types[STATE_TYPE_MAP_KEY]);
	}

	/* TTL, backend, logging, transactions. */
	if (!PG_ARGISNULL(6))
	{
		int64		ttl;

		if (!state_interval_usecs(PG_GETARG_INTERVAL_P(6), &ttl))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("ttl is out of range")));
		if (ttl < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("ttl must not be negative"),
					 errhint("Pass ttl => '0' to take the TTL away.")));
		newd.ttl = ttl;
		if (ttl == 0)
		{
			newd.ttl_update = STATE_TTL_ON_CREATE_AND_WRITE;
			newd.ttl_visibility = STATE_TTL_NEVER_RETURN_EXPIRED;
		}
	}
	if (backend)
		newd.backend = keyed_backend_parse(backend);
	if (!PG_ARGISNULL(8))
		newd.logged = PG_GETARG_BOOL(8);
	if (!PG_ARGISNULL(9))
		newd.transactional = PG_GETARG_BOOL(9);
	if (newd.transactional && newd.logged && newd.ttl > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a transactional state cannot be logged and have a TTL"),
				 errhint("Leave out one of logged => true, transactional => true and ttl.")));
	if (newd.transactional && !old.transactional && OidIsValid(old.aggregate) &&
		!aggregate_has_combine(old.aggregate))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate %s has no combine function, which a transactional state needs",
						old.agg_signature)));

	changed = strcmp(NameStr(newd.name), NameStr(old.name)) != 0 ||
		newd.types[STATE_TYPE_KEY].oid != old.types[STATE_TYPE_KEY].oid ||
		newd.types[STATE_TYPE_VALUE].oid != old.types[STATE_TYPE_VALUE].oid ||
		newd.types[STATE_TYPE_MAP_KEY].oid != old.types[STATE_TYPE_MAP_KEY].oid ||
		key_using || value_using || map_key_using ||
		newd.ttl != old.ttl || newd.backend != old.backend || newd.logged != old.logged ||
		newd.transactional != old.transactional;
	if (!changed)
	{
		StateTarget target = state_target(&old, slot);
		int64		bytes;

		keyed_state_ops(&old)->size(&target, &entries, &bytes);
		PG_RETURN_INT64(entries);
	}
	newd.version = old.version + 1;

	/* The conversions, in a context of their own. */
	ctx->param_types[PARAM_KEY - 1] = old.types[STATE_TYPE_KEY].oid;
	ctx->param_types[PARAM_VALUE - 1] = old.types[STATE_TYPE_VALUE].oid;
	ctx->param_types[PARAM_MAP_KEY - 1] = old.types[STATE_TYPE_MAP_KEY].oid;
	/* A key's new image comes from the key alone (a key gone goes too). */
	ctx->param_allowed[PARAM_KEY - 1] = true;
	ctx->param_allowed[PARAM_VALUE - 1] = false;
	ctx->param_allowed[PARAM_MAP_KEY - 1] = false;
	if (newd.types[STATE_TYPE_KEY].oid != old.types[STATE_TYPE_KEY].oid || key_using)
		conversion_compile(ctx, &ctx->key, "key", key_using ? key_using : "key", "key_using",
						   old.types[STATE_TYPE_KEY].oid, newd.types[STATE_TYPE_KEY].oid);
	else
		codec_init(&ctx->key.from, old.types[STATE_TYPE_KEY].oid, CurrentMemoryContext);
	ctx->param_allowed[PARAM_VALUE - 1] = true;
	ctx->param_allowed[PARAM_MAP_KEY - 1] = ctx->layout == STATE_KIND_MAP;
	if (OidIsValid(old.types[STATE_TYPE_MAP_KEY].oid))
		codec_init(&ctx->map_key.from, old.types[STATE_TYPE_MAP_KEY].oid, CurrentMemoryContext);
	if (old.kind != STATE_KIND_AGGREGATING &&
		(newd.types[STATE_TYPE_VALUE].oid != old.types[STATE_TYPE_VALUE].oid || value_using))
		conversion_compile(ctx, &ctx->value, ctx->layout == STATE_KIND_LIST ? "list element" :
						   "value", value_using ? value_using : "value", "value_using",
						   old.types[STATE_TYPE_VALUE].oid, newd.types[STATE_TYPE_VALUE].oid);
	else
		codec_init(&ctx->value.from, old.types[STATE_TYPE_VALUE].oid, CurrentMemoryContext);
	if (ctx->layout == STATE_KIND_MAP &&
		(newd.types[STATE_TYPE_MAP_KEY].oid != old.types[STATE_TYPE_MAP_KEY].oid || map_key_using))
	{
		ctx->param_allowed[PARAM_VALUE - 1] = false;
		conversion_compile(ctx, &ctx->map_key, "map key", map_key_using ? map_key_using : "map_key",
						   "map_key_using", old.types[STATE_TYPE_MAP_KEY].oid,
						   newd.types[STATE_TYPE_MAP_KEY].oid);
	}
	/* An aggregating state's transition states change only their deadlines. */
	ctx->convert_images = !fires &&
		(ctx->value.active || ctx->map_key.active || newd.ttl != old.ttl);
	ctx->econtext = CreateStandaloneExprContext();
	ctx->params = makeParamList(NPARAMS);
	ctx->params->numParams = NPARAMS;
	for (int i = 0; i < NPARAMS; i++)
	{
		ctx->params->params[i].ptype = ctx->param_types[i];
		ctx->params->params[i].pflags = PARAM_FLAG_CONST;
		ctx->params->params[i].isnull = true;
	}
	ctx->econtext->ecxt_param_list_info = ctx->params;
	ctx->now = record_ttl_now();
	initStringInfo(&ctx->scratch);
	initStringInfo(&ctx->scratch2);

	if (newd.logged)
	{
		logged_before_change();
		pending = true;
	}
	entries = convert_all(&old, slot, &newd, pending, ctx);
	FreeExprContext(ctx->econtext, true);
	if (state_desc_fires(&newd))
		timer_queue_launch(MyDatabaseId);
	PG_RETURN_INT64(entries);
}
