/*
 * sql/sql_state.c
 *		SQL functions on states as a whole: create_state, drop_state, the
 *		states view, clear, truncate, keys, key_group, grant/revoke.
 *
 * Per-kind operations are in sql_value.c, sql_list.c, sql_map.c and
 * sql_reducing.c.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "backend/keyed_backend.h"
#include "catalog/registry.h"
#include "catalog/stats.h"
#include "common/aggregate.h"
#include "common/locks.h"
#include "common/settings.h"
#include "common/ttl_clock.h"
#include "format/records.h"
#include "ipc/channel.h"
#include "logged/logged.h"
#include "sql/sql_common.h"
#include "sql/sql_window.h"
#include "state_ops.h"
#include "timers/timer_queue.h"
#include "txn/txn_state.h"

PG_FUNCTION_INFO_V1(state_create_state);
PG_FUNCTION_INFO_V1(state_drop_state);
PG_FUNCTION_INFO_V1(state_advance_ttl_clock);
PG_FUNCTION_INFO_V1(state_states);
PG_FUNCTION_INFO_V1(state_clear);
PG_FUNCTION_INFO_V1(state_truncate);
PG_FUNCTION_INFO_V1(state_compact);
PG_FUNCTION_INFO_V1(state_keys);
PG_FUNCTION_INFO_V1(state_stats);
PG_FUNCTION_INFO_V1(state_reset_stats);
PG_FUNCTION_INFO_V1(state_worker);
PG_FUNCTION_INFO_V1(state_key_group);
PG_FUNCTION_INFO_V1(state_grant_access);
PG_FUNCTION_INFO_V1(state_revoke_access);

/* A kind name, or invalid_parameter_value. */
static StateKind
parse_kind(const char *kind)
{
	StateKind	k;

	if (!state_kind_parse(kind, &k))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown state kind \"%s\"", kind),
				 errhint("Valid kinds are value, list, map, reducing, aggregating, timers, window, operator_list, union_list and broadcast.")));
	return k;
}

/* A reducer name, or invalid_parameter_value. */
static StateReducer
parse_reducer(const char *reducer)
{
	StateReducer r = state_reducer_parse(reducer);

	if (r == STATE_REDUCER_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown reducer \"%s\"", reducer),
				 errhint("Valid reducers are sum, min and max.")));
	return r;
}

static Oid
regtype_arg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	state_call_require_arg(fcinfo, argno, what);
	return PG_GETARG_OID(argno);
}

/*
 * inherit_range: a keyed state created on a server that holds one part of
 * the database's keyed state (a restore of one part) holds the same part,
 * so that its keys go where the others' go and the parts merge back.
 */
static void
inherit_range(StateDesc *desc)
{
	StateDesc  *descs;
	int		   *slots;
	int			n;

	if (state_kind_is_operator(desc->kind))
		return;
	n = registry_list(MyDatabaseId, &descs, &slots);
	for (int i = 0; i < n; i++)
		if (descs[i].range_parts > 0)
		{
			desc->range_parts = descs[i].range_parts;
			desc->range_first = descs[i].range_first;
			desc->range_last = descs[i].range_last;
			break;
		}
	pfree(descs);
	pfree(slots);
}

/* ttl_interval shows a TTL in microseconds as an interval, days justified. */
static Datum
ttl_interval(int64 ttl)
{
	Interval   *iv = palloc0(sizeof(Interval));

	iv->time = ttl;
	return DirectFunctionCall1(interval_justify_hours, IntervalPGetDatum(iv));
}


/*
 * parse_ttl reads create_state's ttl, ttl_update and ttl_visibility
 * (arguments 7, 9 and 10) into desc.  A month counts 30 days, as in
 * interval arithmetic.
 */
static void
parse_ttl(FunctionCallInfo fcinfo, StateDesc *desc)
{
	Interval   *iv;
	int64		ttl;
	/* The install script of an older build declares fewer arguments. */
	char	   *update = PG_NARGS() <= 9 || PG_ARGISNULL(9) ? NULL :
		text_to_cstring(PG_GETARG_TEXT_PP(9));
	char	   *visibility = PG_NARGS() <= 10 || PG_ARGISNULL(10) ? NULL :
		text_to_cstring(PG_GETARG_TEXT_PP(10));

	if (update && !state_ttl_update_parse(update, &desc->ttl_update))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown ttl_update \"%s\"", update),
				 errhint("Use on_create_and_write or on_read_and_write.")));
	if (visibility && !state_ttl_visibility_parse(visibility, &desc->ttl_visibility))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown ttl_visibility \"%s\"", visibility),
				 errhint("Use never_return_expired or return_expired_if_not_cleaned_up.")));
	if (PG_ARGISNULL(7))
	{
		if (desc->ttl_update != STATE_TTL_ON_CREATE_AND_WRITE ||
			desc->ttl_visibility != STATE_TTL_NEVER_RETURN_EXPIRED)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("ttl_update and ttl_visibility apply only to states with a ttl"),
					 errhint("Pass ttl => an interval, or leave them at their defaults.")));
		return;
	}
	iv = PG_GETARG_INTERVAL_P(7);
	if (!state_interval_usecs(iv, &ttl))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl is out of range")));
	if (ttl <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl must be positive"),
				 errdetail("The ttl given is %s.",
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   IntervalPGetDatum(iv))))));
	desc->ttl = ttl;
}

/*
 * transactional => true: the state's writes commit and roll back with the
 * transaction (txn/txn_state.c).  Any state with keys, but not logged
 * and with a TTL together (the records of its commits could not give the
 * deadlines the commit gave), and an aggregate only with a combine
 * function (a transaction's transition state is combined at its commit
 * with the one committed meanwhile).
 */
static void
parse_transactional(FunctionCallInfo fcinfo, StateDesc *desc)
{
	desc->transactional = PG_NARGS() > 12 && !PG_ARGISNULL(12) && PG_GETARG_BOOL(12);
	if (!desc->transactional)
		return;
	if (state_kind_is_operator(desc->kind))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s states cannot be transactional", state_kind_name(desc->kind)),
				 errhint("States with keys can: value, list, map, reducing and aggregating.")));
	if (desc->logged && desc->ttl > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a transactional state cannot be logged and have a TTL"),
				 errhint("Leave out one of logged => true and ttl.")));
	if (OidIsValid(desc->aggregate) && !aggregate_has_combine(desc->aggregate))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate %s has no combine function, which a transactional state needs",
						format_procedure(desc->aggregate)),
				 errdetail("At commit, the transition state of a transaction's values is combined with the one committed meanwhile, as a parallel aggregation combines its workers' states."),
				 errhint("Use an aggregate with a combine function, or transactional => false.")));
}

/*
 * create_state(name, kind, key_type, value_type, backend, map_key_type,
 *				reducer, ttl, logged, ttl_update, ttl_visibility, aggregate,
 *				transactional)
 */
Datum
state_create_state(PG_FUNCTION_ARGS)
{
	char	   *name = state_call_name_arg(fcinfo);
	StateDesc	desc;
	bool		has_aggregate = PG_NARGS() > 11 && !PG_ARGISNULL(11);
	bool		timers;

	state_backend_check_writable("state.create_state()");
	memset(&desc, 0, sizeof(desc));

	state_call_name_new(name, &desc.name);

	state_call_require_arg(fcinfo, 1, "state kind");
	/* A timers state is a map of instants, with no values. */
	timers = strcmp(text_to_cstring(PG_GETARG_TEXT_PP(1)), "timers") == 0;
	desc.kind = timers ? STATE_KIND_MAP : parse_kind(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	/* Operator state has no key: one fixed key of type int4 holds it. */
	desc.types[STATE_TYPE_KEY].oid = state_kind_is_operator(desc.kind) ? INT4OID :
		regtype_arg(fcinfo, 2, "key_type");
	desc.types[STATE_TYPE_VALUE].oid = timers ? BOOLOID : regtype_arg(fcinfo, 3, "value_type");
	desc.backend = keyed_backend_parse(PG_ARGISNULL(4) ? state_backend_default_backend :
									   text_to_cstring(PG_GETARG_TEXT_PP(4)));
	if (state_kind_is_operator(desc.kind))
		desc.backend = keyed_backend_operator_backend(desc.backend);
	if (state_kind_layout(desc.kind) == STATE_KIND_MAP)
		desc.types[STATE_TYPE_MAP_KEY].oid = timers ? TIMESTAMPTZOID :
			regtype_arg(fcinfo, 5, "map_key_type");

	if (!PG_ARGISNULL(6))
	{
		desc.reducer = parse_reducer(text_to_cstring(PG_GETARG_TEXT_PP(6)));
		if (desc.kind != STATE_KIND_REDUCING && desc.kind != STATE_KIND_WINDOW)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a reducer applies only to reducing states"),
					 errhint("Use kind => 'reducing', or leave reducer NULL.")));
	}
	else if (desc.kind == STATE_KIND_REDUCING)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a reducing state needs a reducer"),
				 errhint("Pass reducer => 'sum', 'min' or 'max'.")));

	if (has_aggregate && desc.kind != STATE_KIND_AGGREGATING && desc.kind != STATE_KIND_WINDOW)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("an aggregate applies only to aggregating states"),
				 errhint("Use kind => 'aggregating', or leave aggregate NULL.")));
	if (!has_aggregate && desc.kind == STATE_KIND_AGGREGATING)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("an aggregating state needs an aggregate"),
				 errhint("Pass aggregate => 'avg(float8)', for example.")));

	parse_ttl(fcinfo, &desc);
	if (desc.ttl > 0 && state_kind_is_operator(desc.kind))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s states have no TTL", state_kind_name(desc.kind)),
				 errhint("TTL applies to value, list, map and reducing states.")));
	state_ops_check_type(desc.types[STATE_TYPE_KEY].oid, "a state key", true);
	state_ops_check_type(desc.types[STATE_TYPE_VALUE].oid, "a state value",
						 desc.kind != STATE_KIND_AGGREGATING && !has_aggregate);
	if (state_kind_layout(desc.kind) == STATE_KIND_MAP)
		state_ops_check_type(desc.types[STATE_TYPE_MAP_KEY].oid, "a map key", true);
	if (desc.kind == STATE_KIND_REDUCING)
		reducer_check_type(desc.reducer, desc.types[STATE_TYPE_VALUE].oid);
	if (state_kind_layout(desc.kind) == STATE_KIND_LIST)
		state_ops_check_list_type(desc.types[STATE_TYPE_VALUE].oid);

	codec_describe_type(desc.types[STATE_TYPE_KEY].oid, &desc.types[STATE_TYPE_KEY]);
	codec_describe_type(desc.types[STATE_TYPE_VALUE].oid, &desc.types[STATE_TYPE_VALUE]);
	if (state_kind_layout(desc.kind) == STATE_KIND_MAP)
		codec_describe_type(desc.types[STATE_TYPE_MAP_KEY].oid, &desc.types[STATE_TYPE_MAP_KEY]);
	desc.owner = GetUserId();
	namestrcpy(&desc.owner_name, GetUserNameFromId(desc.owner, false));
	if (has_aggregate)
		aggregate_describe(PG_GETARG_OID(11), desc.types[STATE_TYPE_VALUE].oid, desc.owner, &desc);
	desc.dbid = MyDatabaseId;
	desc.logged = PG_NARGS() > 8 && !PG_ARGISNULL(8) && PG_GETARG_BOOL(8);
	sql_timers_parse_create(fcinfo, timers, &desc);
	sql_window_parse_create(fcinfo, &desc);
	sql_watermark_parse_create(fcinfo, &desc);
	parse_transactional(fcinfo, &desc);
	inherit_range(&desc);
	if (desc.logged)
		(void) logged_create(&desc);
	else
		(void) state_ops_create(&desc);
	if (state_desc_fires(&desc))
		timer_queue_launch(MyDatabaseId);
	PG_RETURN_VOID();
}

/*
 * _advance_ttl_clock(by): move the clock of state TTL forward by an
 * interval for every session and the worker, until the server restarts,
 * so that tests expire values without waiting (common/ttl_clock.c).
 * Superuser only.  Returns the TTL clock's time.
 */
Datum
state_advance_ttl_clock(PG_FUNCTION_ARGS)
{
	int64		by;

	state_backend_check_writable("state._advance_ttl_clock()");
	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to move the TTL clock"),
				 errdetail("Only superusers may move it.")));
	if (!state_interval_usecs(PG_GETARG_INTERVAL_P(0), &by) || by <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the TTL clock moves only forward, by a positive interval")));
	if (ttl_clock_advance(by) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("the TTL clock cannot move that far"),
				 errdetail("It moves at most 1000 years ahead of the server's clock.")));
	/* Standbys measure logged states' expiry on this clock: they follow. */
	logged_clock_moved();
	PG_RETURN_TIMESTAMPTZ(record_ttl_now());
}

/* drop_state(name, if_exists) */
Datum
state_drop_state(PG_FUNCTION_ARGS)
{
	char	   *name = state_call_name_arg(fcinfo);
	bool		if_exists = PG_GETARG_BOOL(1);
	StateDesc	desc;
	int			slot;

	state_backend_check_writable("state.drop_state()");

	/* A concurrent drop between lookup and drop counts as "not there". */
	if (registry_lookup(name, &desc, &slot))
	{
		StateTarget st = state_target(&desc, slot);
		volatile bool dropped = false;

		registry_check_owner(&desc);
		/* A commit of it under way finishes first (txn_state.h). */
		txn_state_drop_begin(&st);
		PG_TRY();
		{
			dropped = state_ops_drop(&desc, slot);
		}
		PG_FINALLY();
		{
			txn_state_drop_end(&st);
		}
		PG_END_TRY();
		if (dropped)
			PG_RETURN_VOID();
	}
	if (!if_exists)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("state \"%s\" does not exist", name)));
	ereport(NOTICE,
			(errmsg("state \"%s\" does not exist, skipping", name)));
	PG_RETURN_VOID();
}

/*
 * A view's start: its tuplestore, and the current database's states; on a
 * hot standby, its logged states, the ones it serves.
 */
static int
view_states(FunctionCallInfo fcinfo, StateDesc **descs, int **slots)
{
	int			n;
	int			kept = 0;

	if (!RecoveryInProgress())
	{
		state_backend_check_available();
		InitMaterializedSRF(fcinfo, 0);
		return registry_list(MyDatabaseId, descs, slots);
	}
	state_standby_check_ready();
	InitMaterializedSRF(fcinfo, 0);
	n = registry_list(MyDatabaseId, descs, slots);
	for (int i = 0; i < n; i++)
		if ((*descs)[i].logged)
		{
			(*descs)[kept] = (*descs)[i];
			(*slots)[kept++] = (*slots)[i];
		}
	return kept;
}

/*
 * A view's row of one state (ViewRowFn): values and nulls (all false when
 * called) of the state d in registry slot slot, which holds entries keys
 * in bytes bytes.
 */
typedef void (*ViewRowFn) (const StateDesc *d, int slot, int64 entries, int64 bytes,
						   Datum *values, bool *nulls);

/*
 * view_rows returns the rows of a view of ncols columns, one a state of
 * the current database (view_states), that fn fills in.
 */
static Datum
view_rows(FunctionCallInfo fcinfo, int ncols, ViewRowFn fn)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	StateDesc  *descs;
	int		   *slots;
	int			n = view_states(fcinfo, &descs, &slots);
	Datum	   *values = palloc(ncols * sizeof(Datum));
	bool	   *nulls = palloc(ncols * sizeof(bool));

	for (int i = 0; i < n; i++)
	{
		StateTarget target = state_target(&descs[i], slots[i]);
		int64		entries;
		int64		bytes;

		memset(nulls, 0, ncols * sizeof(bool));
		keyed_state_ops(&descs[i])->size(&target, &entries, &bytes);
		fn(&descs[i], slots[i], entries, bytes, values, nulls);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* ViewRowFn of state.states. */
static void
states_row(const StateDesc *d, int slot, int64 entries, int64 bytes,
		   Datum *values, bool *nulls)
{
	values[0] = CStringGetTextDatum(NameStr(d->name));
	values[1] = CStringGetTextDatum(state_desc_kind_name(d));
	values[2] = CStringGetTextDatum(keyed_backend_name(d->backend));
	values[3] = ObjectIdGetDatum(d->types[STATE_TYPE_KEY].oid);
	values[4] = ObjectIdGetDatum(d->types[STATE_TYPE_VALUE].oid);
	values[5] = ObjectIdGetDatum(d->types[STATE_TYPE_MAP_KEY].oid);
	nulls[5] = !OidIsValid(d->types[STATE_TYPE_MAP_KEY].oid);
	nulls[6] = d->reducer == STATE_REDUCER_NONE;
	if (!nulls[6])
		values[6] = CStringGetTextDatum(state_reducer_name(d->reducer));
	nulls[7] = d->ttl == 0;
	if (d->ttl > 0)
		values[7] = ttl_interval(d->ttl);
	values[8] = ObjectIdGetDatum(d->owner);
	values[9] = Int64GetDatum(entries);
	values[10] = Int64GetDatum(bytes);
	values[11] = BoolGetDatum(d->logged);
	nulls[12] = nulls[13] = d->ttl == 0;
	values[12] = CStringGetTextDatum(state_ttl_update_name(d->ttl_update));
	values[13] = CStringGetTextDatum(state_ttl_visibility_name(d->ttl_visibility));
	values[14] = d->range_parts > 0 ?
		key_group_range_datum(d->range_first, d->range_last) :
		key_group_range_datum(0, state_backend_max_parallelism - 1);
	values[15] = ObjectIdGetDatum(d->aggregate);
	nulls[15] = !OidIsValid(d->aggregate);
	values[16] = BoolGetDatum(d->transactional);
	values[17] = Int32GetDatum((int32) Max(d->version, 1));
}

/* The rows of the state.states view, for the current database. */
Datum
state_states(PG_FUNCTION_ARGS)
{
	return view_rows(fcinfo, 18, states_row);
}

/* clear(name, key): remove the key's state of any kind. */
Datum
state_clear(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_keyed(fcinfo, KEYED_KIND, STATE_PRIV_WRITE);

	PG_RETURN_BOOL(call->backend->remove(&call->target, &call->key));
}

/* truncate(name): remove every key; returns how many were removed. */
Datum
state_truncate(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_begin(fcinfo, ANY_KIND, STATE_PRIV_WRITE);

	PG_RETURN_INT64(call->backend->truncate(&call->target));
}

/*
 * compact(name): give back the storage of what expired now rather than
 * later: swept key by key, or, for a backend that compacts its own storage
 * (KeyedStateBackend.compact), compacted (its filter drops expired values).
 */
Datum
state_compact(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_begin(fcinfo, ANY_KIND, STATE_PRIV_WRITE);

	if (call->backend->compact)
		call->backend->compact(&call->target);
	PG_RETURN_VOID();
}

typedef struct KeysContext
{
	KeyRows		keys;
	bool		rowtype;		/* result rows are the key's columns */
} KeysContext;

static void
keys_collect(void *arg, const char *key, uint32 keylen, const char *value,
			 uint32 valuelen)
{
	KeysContext *ctx = arg;
	TupleDesc	desc = ctx->keys.rows.rsinfo->setDesc;
	Datum		d = key_rows_key(&ctx->keys, key, keylen);
	bool		isnull = false;

	if (ctx->rowtype)
	{
		/* SETOF a composite type returns the key's columns. */
		HeapTupleHeader th = DatumGetHeapTupleHeader(d);
		HeapTupleData tuple;
		Datum	   *values = palloc(sizeof(Datum) * desc->natts);
		bool	   *nulls = palloc(sizeof(bool) * desc->natts);

		tuple.t_len = HeapTupleHeaderGetDatumLength(th);
		ItemPointerSetInvalid(&tuple.t_self);
		tuple.t_tableOid = InvalidOid;
		tuple.t_data = th;
		heap_deform_tuple(&tuple, desc, values, nulls);
		tuplestore_putvalues(ctx->keys.rows.rsinfo->setResult, desc, values, nulls);
	}
	else
		tuplestore_putvalues(ctx->keys.rows.rsinfo->setResult, desc, &d, &isnull);
}

/* keys(name, default): every key of a state, in no particular order. */
Datum
state_keys(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_begin(fcinfo, KEYED_KIND, STATE_PRIV_READ);
	KeysContext ctx;
	Oid			restype = get_fn_expr_rettype(fcinfo->flinfo);

	ctx.rowtype = type_is_rowtype(restype);
	return key_rows_each(&ctx.keys, call, fcinfo, restype, keys_collect);
}

/* key_group(name, key): the key group the key belongs to. */
Datum
state_key_group(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_begin(fcinfo, KEYED_KIND, STATE_PRIV_READ);

	state_call_key_image(call, fcinfo, 1);
	PG_RETURN_INT32(call->key.key_group);
}

static uint8
parse_privilege(const char *priv)
{
	if (strcmp(priv, "read") == 0)
		return STATE_PRIV_READ;
	if (strcmp(priv, "write") == 0)
		return STATE_PRIV_WRITE;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown state privilege \"%s\"", priv),
			 errhint("Valid privileges are read and write.")));
	return 0;
}

static void
set_grant(FunctionCallInfo fcinfo, bool grant)
{
	char	   *name = state_call_name_arg(fcinfo);
	Oid			role = PG_GETARG_OID(1);
	uint8		privs = parse_privilege(text_to_cstring(PG_GETARG_TEXT_PP(2)));
	StateDesc	desc;
	int			slot;

	state_backend_check_writable(grant ? "state.grant_access()" : "state.revoke_access()");
	/* regrole takes any number as a role OID: it must name a role. */
	if (!OidIsValid(role) || !SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("role with OID %u does not exist", role)));
	registry_resolve(name, &desc, &slot);
	registry_check_owner(&desc);
	registry_set_grant(&desc, slot, role, privs, grant);
}

/* grant_access(name, role, privilege) */
Datum
state_grant_access(PG_FUNCTION_ARGS)
{
	set_grant(fcinfo, true);
	PG_RETURN_VOID();
}

/* revoke_access(name, role, privilege) */
Datum
state_revoke_access(PG_FUNCTION_ARGS)
{
	set_grant(fcinfo, false);
	PG_RETURN_VOID();
}

/* ViewRowFn of state.stats. */
static void
stats_row(const StateDesc *d, int slot, int64 entries, int64 bytes,
		  Datum *values, bool *nulls)
{
	uint64		counts[STATE_STAT_COUNT];

	state_stats_read(slot, counts);
	values[0] = CStringGetTextDatum(NameStr(d->name));
	values[1] = CStringGetTextDatum(state_desc_kind_name(d));
	values[2] = Int64GetDatum((int64) counts[STATE_STAT_READS]);
	values[3] = Int64GetDatum((int64) counts[STATE_STAT_WRITES]);
	values[4] = Int64GetDatum((int64) counts[STATE_STAT_MISSES]);
	values[5] = Int64GetDatum((int64) counts[STATE_STAT_EXPIRED]);
	values[6] = Int64GetDatum(entries);
	values[7] = Int64GetDatum(bytes);
	values[8] = Int64GetDatum((int64) counts[STATE_STAT_TIMERS_REGISTERED]);
	values[9] = Int64GetDatum((int64) counts[STATE_STAT_TIMERS_FIRED]);
	values[10] = Int64GetDatum((int64) counts[STATE_STAT_TIMERS_FAILED]);
	nulls[8] = nulls[9] = nulls[10] = !state_desc_fires(d);
	values[11] = Int64GetDatum((int64) counts[STATE_STAT_LATE]);
	nulls[11] = d->kind != STATE_KIND_WINDOW;
}

/* The rows of the state.stats view, for the current database. */
Datum
state_stats(PG_FUNCTION_ARGS)
{
	return view_rows(fcinfo, 12, stats_row);
}

/*
 * reset_stats(name): set a state's counters (every state's of the current
 * database, name NULL) back to zero.
 */
Datum
state_reset_stats(PG_FUNCTION_ARGS)
{
	StateDesc  *descs;
	int		   *slots;
	int			n;

	state_backend_check_available();
	if (!PG_ARGISNULL(0))
	{
		StateDesc	desc;
		int			slot;

		registry_resolve(text_to_cstring(PG_GETARG_TEXT_PP(0)), &desc, &slot);
		state_stats_reset(slot);
		PG_RETURN_VOID();
	}
	n = registry_list(MyDatabaseId, &descs, &slots);
	for (int i = 0; i < n; i++)
		state_stats_reset(slots[i]);
	PG_RETURN_VOID();
}

/* StateFigureFn: one row of state.worker. */
static void
worker_row(void *arg, const char *name, int64 value, bool isnull)
{
	ReturnSetInfo *rsinfo = arg;
	Datum		values[2];
	bool		nulls[2] = {false, isnull};

	values[0] = CStringGetTextDatum(name);
	values[1] = Int64GetDatum(value);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * The rows of the state.worker view: the state worker's pid, the requests
 * it served and the time it spent on them since the server started, then
 * each backend's own figures (KeyedStateBackend.figures).
 */
Datum
state_worker(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			pid;
	uint64		requests;
	uint64		passes;
	uint64		busy_us;
	uint64		spins;
	uint64		spins_seen;
	int			n;
	const KeyedStateBackend *const *all = keyed_backend_all(&n);

	state_backend_check_loaded();
	InitMaterializedSRF(fcinfo, 0);
	channel_worker_figures(&pid, &requests, &passes, &busy_us, &spins, &spins_seen);
	worker_row(rsinfo, "pid", pid, pid == 0);
	worker_row(rsinfo, "requests", (int64) requests, false);
	worker_row(rsinfo, "passes", (int64) passes, false);
	worker_row(rsinfo, "busy_ms", (int64) (busy_us / 1000), false);
	worker_row(rsinfo, "spins", (int64) spins, false);
	worker_row(rsinfo, "spins_answered", (int64) spins_seen, false);
	worker_row(rsinfo, "reloads", (int64) channel_worker_reloads(), false);
	if (RecoveryInProgress())
	{
		XLogRecPtr	applied;
		int64		lag_bytes = 0;
		int64		lag_ms = 0;
		bool		applying = logged_standby_figures(&applied, &lag_bytes, &lag_ms);

		worker_row(rsinfo, "standby_applied_lsn", (int64) applied, !applying);
		worker_row(rsinfo, "standby_lag_bytes", lag_bytes, !applying);
		worker_row(rsinfo, "standby_lag_ms", lag_ms, !applying);
		/* Waiting for a checkpoint cut where its WAL holds, which it asked for. */
		if (logged_standby_awaits_checkpoint())
			worker_row(rsinfo, "standby_awaits_checkpoint", 1, false);
	}
	/* A WAL record of logged states the worker cannot apply stops it there. */
	{
		XLogRecPtr	blocked_at;
		int64		checkpoint;

		if (registry_blocked(&blocked_at, &checkpoint, NULL, 0))
		{
			if (blocked_at != InvalidXLogRecPtr)
				worker_row(rsinfo, "apply_blocked_lsn", (int64) blocked_at, false);
			if (checkpoint != 0)
				worker_row(rsinfo, "restore_blocked_checkpoint", checkpoint, false);
		}
	}
	/* A standby's worker that does not serve yet has no figures to give. */
	if (!registry_is_ready())
		return (Datum) 0;
	for (int i = 0; i < n; i++)
		if (all[i]->figures)
			all[i]->figures(worker_row, rsinfo);
	return (Datum) 0;
}
