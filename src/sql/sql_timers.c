/*
 * sql/sql_timers.c
 *		SQL functions of timers states: the options of create_state,
 *		timer_register, timer_delete, timers, advance_watermark, watermark
 *		and the rows of state.timer_status.
 *
 * A timers state is a map per key of the instants its timers are due at
 * (map key timestamptz, NULL values), so that everything a state has
 * (snapshots, restores, rescales, WAL, transactions) holds timers too.
 * Registering tells the database's timer worker (timers/timer_queue.c),
 * which fires them (timers/timer_worker.c).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "catalog/registry.h"
#include "catalog/stats.h"
#include "common/locks.h"
#include "common/timer_handler.h"
#include "format/records.h"
#include "sql/sql_common.h"
#include "timers/timer_queue.h"

PG_FUNCTION_INFO_V1(state_timer_register);
PG_FUNCTION_INFO_V1(state_timer_delete);
PG_FUNCTION_INFO_V1(state_timers);
PG_FUNCTION_INFO_V1(state_advance_watermark);
PG_FUNCTION_INFO_V1(state_watermark);
PG_FUNCTION_INFO_V1(state_timer_status);

/* Argument positions of create_state's timer options. */
#define ARG_HANDLER		13
#define ARG_TIME_DOMAIN	14

/*
 * sql_timers_parse_create completes a descriptor create_state is making:
 * for kind "timers" its handler and time domain (it is a map of instants
 * with no values); for any other kind, no timer option.
 */
void
sql_timers_parse_create(FunctionCallInfo fcinfo, bool timers, StateDesc *desc)
{
	bool		has_handler = PG_NARGS() > ARG_HANDLER && !PG_ARGISNULL(ARG_HANDLER);
	bool		has_domain = PG_NARGS() > ARG_TIME_DOMAIN && !PG_ARGISNULL(ARG_TIME_DOMAIN);

	if (!timers)
	{
		if (has_handler || (has_domain && desc->kind != STATE_KIND_WINDOW))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a handler and a time domain apply only to timers states"),
					 errhint("Use kind => 'timers', or leave handler and time_domain NULL; a window state takes emit and time_domain.")));
		return;
	}
	if (!has_handler)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a timers state needs a handler"),
				 errhint("Pass handler => 'on_timer(%s, timestamptz)', a function called with each due timer's key and instant.",
						 format_type_be(desc->types[STATE_TYPE_KEY].oid))));
	desc->timer_event_time = sql_time_domain_is_event(fcinfo, false);
	if (desc->ttl > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("timers states have no TTL"),
				 errhint("Delete a timer with state.timer_delete(), or let it fire.")));
	timer_handler_describe(PG_GETARG_OID(ARG_HANDLER), desc->owner, desc);
}

/*
 * sql_time_domain_is_event reads create_state's time_domain: event (the
 * watermark) or processing (the clock); NULL gives the kind's default.
 */
bool
sql_time_domain_is_event(FunctionCallInfo fcinfo, bool by_default)
{
	char	   *domain;

	if (PG_NARGS() <= ARG_TIME_DOMAIN || PG_ARGISNULL(ARG_TIME_DOMAIN))
		return by_default;
	domain = text_to_cstring(PG_GETARG_TEXT_PP(ARG_TIME_DOMAIN));
	if (strcmp(domain, "event") == 0)
		return true;
	if (strcmp(domain, "processing") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown time domain \"%s\"", domain),
				 errhint("Valid time domains are processing (the clock) and event (the watermark).")));
	return false;
}

/*
 * An instant: finite, or 'infinity' when infinity_ok (a watermark: the end
 * of event time), as an image in call->buf.
 */
static TimestampTz
instant_value(StateCall *call, const StateArg *arg, const char *what, bool infinity_ok)
{
	TimestampTz at;

	if (arg->isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", what)));
	at = DatumGetTimestampTz(arg->value);
	if (TIMESTAMP_IS_NOBEGIN(at) || (TIMESTAMP_IS_NOEND(at) && !infinity_ok))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("%s must be finite%s", what, infinity_ok ? " or infinity" : "")));
	if (call != NULL)
	{
		resetStringInfo(&call->buf);
		codec_encode(&call->codecs[ARG_MAP_KEY], TimestampTzGetDatum(at), &call->buf);
	}
	return at;
}

/* instant_value of argument argno, a timestamptz. */
static TimestampTz
instant_arg(StateCall *call, FunctionCallInfo fcinfo, int argno, const char *what,
			bool infinity_ok)
{
	StateArg	arg = state_call_arg(fcinfo, argno);

	return instant_value(call, &arg, what, infinity_ok);
}

/*
 * sql_timer_register_arg registers a timer of call->key at "at", a
 * timestamptz; one per key and instant, as Flink's timer service keeps
 * them (timer_register, and a table's feed).
 */
void
sql_timer_register_arg(StateCall *call, const StateArg *at_arg)
{
	TimestampTz at = instant_value(call, at_arg, "a timer's instant", false);
	bool		isnull;

	if (call->desc.watermark_by_data &&
		timer_watermark_observe(call->target.slot, call->desc.id, at, call->desc.watermark_lag))
		timer_queue_wake(call->desc.dbid);
	/* A timer registered again is there already: nothing to store or tell. */
	resetStringInfo(&call->buf2);
	if (call->backend->map_get(&call->target, &call->key, call->buf.data, call->buf.len,
							   &call->buf2, &isnull))
		return;
	call->backend->map_put(&call->target, &call->key, call->buf.data, call->buf.len,
						   NULL, 0, true);
	state_stats_count(call->target.slot, STATE_STAT_TIMERS_REGISTERED, 1);
	if (call->desc.transactional)
		timer_queue_note(&call->desc, call->target.slot, call->key.data, call->key.len, at);
	else
		timer_queue_push(&call->desc, call->target.slot, call->key.data, call->key.len, at);
}

/* timer_register(name, key, at): a timer of the key at that instant. */
Datum
state_timer_register(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_begin(fcinfo, TIMERS_KIND, STATE_PRIV_WRITE);
	StateArg	at;

	state_call_key(call, fcinfo, 1);
	at = state_call_arg(fcinfo, 2);
	sql_timer_register_arg(call, &at);
	PG_RETURN_VOID();
}

/* timer_delete(name, key, at): whether there was such a timer. */
Datum
state_timer_delete(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_begin(fcinfo, TIMERS_KIND, STATE_PRIV_WRITE);
	bool		removed;

	state_call_key(call, fcinfo, 1);
	(void) instant_arg(call, fcinfo, 2, "a timer's instant", false);
	removed = call->backend->map_remove(&call->target, &call->key,
										call->buf.data, call->buf.len);
	if (removed)
		timer_queue_note_deleted(call->target.slot, call->desc.id);
	PG_RETURN_BOOL(removed);
}

/* One key's timers as rows (key, at). */
static void
timers_collect(void *arg, const char *key, uint32 keylen, const char *img, uint32 len)
{
	KeyRows    *ctx = arg;
	StateCall  *call = ctx->rows.call;
	ReturnSetInfo *rsinfo = ctx->rows.rsinfo;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	uint32		off = 0;
	RecordPair	pair;

	values[0] = key_rows_key(ctx, key, keylen);
	while (record_next_pair(img, len, &off, &pair) == RECORD_OK)
	{
		values[1] = codec_decode(&call->codecs[ARG_MAP_KEY], pair.key, pair.keylen);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/* timers(name, key_default): every timer as (key, at), in no order. */
Datum
state_timers(PG_FUNCTION_ARGS)
{
	KeyRows		ctx;

	return key_rows_each(&ctx, state_call_begin(fcinfo, TIMERS_KIND, STATE_PRIV_READ), fcinfo,
						 get_fn_expr_argtype(fcinfo->flinfo, 1), timers_collect);
}

/* The event-time state named, for its watermark. */
static StateCall *
event_time_call(FunctionCallInfo fcinfo, uint8 privs)
{
	StateCall  *call = state_call_begin(fcinfo, FIRED_KIND, privs);

	if (!call->desc.timer_event_time)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s state \"%s\" is in processing time, which has no watermark",
						state_desc_kind_name(&call->desc), NameStr(call->desc.name)),
				 call->desc.kind == STATE_KIND_WINDOW ?
				 errhint("Its windows fire by the clock; create it with time_domain => 'event' to fire them by a watermark.") :
				 errhint("Its timers fire by the clock; create it with time_domain => 'event' to fire them by a watermark.")));
	return call;
}

/*
 * advance_watermark(name, ts): event time has come to ts; timers due by
 * then fire.  A watermark never goes back.  'infinity' ends event time:
 * everything fires, as at Flink's last watermark.
 */
Datum
state_advance_watermark(PG_FUNCTION_ARGS)
{
	StateCall  *call = event_time_call(fcinfo, STATE_PRIV_WRITE);
	TimestampTz to = instant_arg(NULL, fcinfo, 1, "a watermark", true);
	TimestampTz was;

	if (!timer_watermark_advance(call->target.slot, call->desc.id, to, &was))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the watermark of %s state \"%s\" cannot go back",
						state_desc_kind_name(&call->desc), NameStr(call->desc.name)),
				 errdetail("It is %s; %s is earlier.",
						   pstrdup(timestamptz_to_str(was)), timestamptz_to_str(to))));
	timer_queue_wake(call->desc.dbid);
	PG_RETURN_VOID();
}

/* watermark(name): the state's watermark, NULL before the first. */
Datum
state_watermark(PG_FUNCTION_ARGS)
{
	StateCall  *call = event_time_call(fcinfo, STATE_PRIV_READ);
	TimestampTz w = timer_watermark(call->target.slot, call->desc.id, NULL);

	if (w == DT_NOBEGIN)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(w);
}

/* An interval of microseconds. */
static Datum
usecs_interval(int64 us)
{
	Interval   *iv = palloc0(sizeof(Interval));

	iv->time = us;
	return IntervalPGetDatum(iv);
}

/*
 * The rows of state.timer_status: per timers state of the database that
 * the user may read, what its worker holds and how it keeps up.
 */
Datum
state_timer_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	StateDesc  *descs;
	int		   *slots;
	int			n;

	state_backend_check_available();
	InitMaterializedSRF(fcinfo, 0);
	n = registry_list(MyDatabaseId, &descs, &slots);
	for (int i = 0; i < n; i++)
	{
		StateDesc  *d = &descs[i];
		TimerFigures f;
		Datum		values[9];
		bool		nulls[9] = {false};

		if (!state_desc_fires(d))
			continue;
		timer_figures_read(slots[i], d->id, &f);
		values[0] = CStringGetTextDatum(NameStr(d->name));
		values[1] = CStringGetTextDatum(d->timer_event_time ? "event" : "processing");
		values[2] = TimestampTzGetDatum(f.watermark);
		nulls[2] = !d->timer_event_time || f.watermark == DT_NOBEGIN;
		values[3] = Int64GetDatum(f.pending);
		/* A window due at 'infinity' is indexed just before it (window_due_at). */
		values[4] = TimestampTzGetDatum(f.next_due >= END_TIMESTAMP ? DT_NOEND : f.next_due);
		nulls[4] = f.next_due == DT_NOEND || f.pending == 0;
		values[5] = Int64GetDatum(f.retrying);
		values[6] = Float8GetDatum(f.fired_per_s);
		values[7] = usecs_interval(f.lag_p99_us);
		nulls[7] = f.lag_p99_us < 0;
		values[8] = CStringGetTextDatum(f.problem);
		nulls[8] = f.problem[0] == '\0';
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
