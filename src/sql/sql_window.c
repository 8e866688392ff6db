/*
 * sql/sql_window.c
 *		SQL functions of window states: the options of create_state,
 *		window_add, window_get and windows.
 *
 * A window state keeps, per key, the key's open windows with their
 * contents in one image (sql_window_fold.c), so that everything a state
 * has (snapshots, restores, rescales, WAL, transactions) holds windows
 * too.  A value joins its windows by the state's assigner; a window that
 * appears, or changes after it fired, is told to the database's timer
 * worker (timers/timer_queue.c), which fires it (timers/timer_worker.c).
 */
#include "postgres.h"

#include "catalog/pg_aggregate.h"
#include "catalog/pg_collation.h"
#include "common/int.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/timestamp.h"

#include "catalog/stats.h"
#include "common/codec.h"
#include "common/timer_handler.h"
#include "format/records.h"
#include "state_ops.h"
#include "sql/sql_window.h"
#include "timers/timer_queue.h"

PG_FUNCTION_INFO_V1(state_window_add);
PG_FUNCTION_INFO_V1(state_window_get);
PG_FUNCTION_INFO_V1(state_windows);

/* Argument positions of create_state's window options. */
#define ARG_REDUCER		6
#define ARG_AGGREGATE	11
#define ARG_ASSIGNER	15
#define ARG_SIZE		16
#define ARG_SLIDE		17
#define ARG_GAP			18
#define ARG_COLLECT		19
#define ARG_LATENESS	20
#define ARG_EMIT		21
#define ARG_LAST		ARG_EMIT
#define ARG_OUT_OF_ORDERNESS 22
#define ARG_IDLE_TIMEOUT 23
#define ARG_LATE		24
#define ARG_EMIT_TABLE	25

/* Microseconds since 2000-01-01 (timestamptz) of the Unix epoch, windows' origin. */
#define UNIX_EPOCH_US	(-((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY))

static bool
has_arg(FunctionCallInfo fcinfo, int argno)
{
	return PG_NARGS() > argno && !PG_ARGISNULL(argno);
}

/* An interval option in microseconds: no months, at most a century. */
static int64
interval_arg(FunctionCallInfo fcinfo, int argno, const char *what, bool zero_ok)
{
	Interval   *iv = PG_GETARG_INTERVAL_P(argno);
	int64		us;

	if (iv->month != 0 ||
		pg_mul_s64_overflow((int64) iv->day, USECS_PER_DAY, &us) ||
		pg_add_s64_overflow(us, iv->time, &us) ||
		us < 0 || (us == 0 && !zero_ok) || us > WINDOW_MAX_TIME)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be %s and at most 100 years, in days, hours and less", what,
						zero_ok ? "zero or positive" : "positive"),
				 errdetail("The interval given is %s.",
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   IntervalPGetDatum(iv)))),
				 iv->month != 0 ? errhint("Months and years have no fixed length; write 30 days, for example.") : 0));
	return us;
}

/* A window option that must be given: what it is missing says, and a hint. */
static void
need_option(FunctionCallInfo fcinfo, int argno, const char *missing, const char *hint)
{
	if (!has_arg(fcinfo, argno))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s", missing),
				 errhint("%s", hint)));
}

static void
refuse_option(bool given, const char *option, const char *assigner)
{
	if (given)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s does not apply to %s windows", option, assigner),
				 errhint("Tumbling windows take size, sliding windows size and slide, session windows gap.")));
}

/* assigner, size, slide and gap. */
static void
parse_assigner(FunctionCallInfo fcinfo, StateDesc *desc)
{
	char	   *assigner;

	need_option(fcinfo, ARG_ASSIGNER, "a window state needs an assigner",
				"Pass assigner => 'tumbling', 'sliding' or 'session'.");
	assigner = text_to_cstring(PG_GETARG_TEXT_PP(ARG_ASSIGNER));
	if (strcmp(assigner, "tumbling") == 0)
		desc->window_assigner = STATE_WINDOW_TUMBLING;
	else if (strcmp(assigner, "sliding") == 0)
		desc->window_assigner = STATE_WINDOW_SLIDING;
	else if (strcmp(assigner, "session") == 0)
		desc->window_assigner = STATE_WINDOW_SESSION;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown window assigner \"%s\"", assigner),
				 errhint("Valid assigners are tumbling, sliding and session.")));
	if (desc->window_assigner == STATE_WINDOW_SESSION)
	{
		refuse_option(has_arg(fcinfo, ARG_SIZE), "size", assigner);
		refuse_option(has_arg(fcinfo, ARG_SLIDE), "slide", assigner);
		need_option(fcinfo, ARG_GAP, "session windows need a gap",
					"Pass gap => interval '30 minutes', for example.");
		desc->window_gap = interval_arg(fcinfo, ARG_GAP, "a session gap", false);
		return;
	}
	refuse_option(has_arg(fcinfo, ARG_GAP), "gap", assigner);
	need_option(fcinfo, ARG_SIZE, psprintf("%s windows need a size", assigner),
				"Pass size => interval '1 minute', for example.");
	desc->window_size = interval_arg(fcinfo, ARG_SIZE, "a window's size", false);
	if (desc->window_assigner == STATE_WINDOW_TUMBLING)
	{
		refuse_option(has_arg(fcinfo, ARG_SLIDE), "slide", assigner);
		return;
	}
	need_option(fcinfo, ARG_SLIDE, "sliding windows need a slide",
				"Pass slide => interval '1 minute', for example.");
	desc->window_slide = interval_arg(fcinfo, ARG_SLIDE, "a window's slide", false);
	if (desc->window_slide > desc->window_size)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a window's slide must not be larger than its size"),
				 errhint("Windows that slide by more than their size leave values out; use a smaller slide.")));
	if (desc->window_size / desc->window_slide > WINDOW_MAX_SLIDES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("sliding windows put each value in at most %d windows", WINDOW_MAX_SLIDES),
				 errhint("Use a larger slide.")));
}

/* What the windows hold: the reducer's fold, an aggregate's, or a list. */
static void
parse_contents(FunctionCallInfo fcinfo, StateDesc *desc)
{
	bool		collect = has_arg(fcinfo, ARG_COLLECT);
	int			given = (desc->reducer != STATE_REDUCER_NONE) + has_arg(fcinfo, ARG_AGGREGATE) + collect;

	if (given != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a window state needs one of reducer, aggregate and collect"),
				 errhint("Pass reducer => 'sum', aggregate => 'avg(float8)' or collect => 'list'.")));
	if (collect)
	{
		if (strcmp(text_to_cstring(PG_GETARG_TEXT_PP(ARG_COLLECT)), "list") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("windows collect only into a list"),
					 errhint("Pass collect => 'list'.")));
		desc->window_contents = STATE_WINDOW_LIST;
		state_ops_check_list_type(desc->types[STATE_TYPE_VALUE].oid);
		return;
	}
	if (desc->reducer != STATE_REDUCER_NONE)
	{
		desc->window_contents = STATE_WINDOW_REDUCE;
		reducer_check_type(desc->reducer, desc->types[STATE_TYPE_VALUE].oid);
		return;
	}
	desc->window_contents = STATE_WINDOW_AGGREGATE;
	if (get_func_nargs(desc->aggregate) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a window state's aggregate takes one argument, the value"),
				 errdetail("Aggregate %s takes %d.", format_procedure(desc->aggregate),
						   get_func_nargs(desc->aggregate))));
	if (desc->window_assigner == STATE_WINDOW_SESSION && !aggregate_has_combine(desc->aggregate))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate %s has no combine function, which session windows need",
						format_procedure(desc->aggregate)),
				 errdetail("Session windows that meet merge, their transition states combined."),
				 errhint("Use an aggregate with a combine function, or tumbling or sliding windows.")));
}

/*
 * sql_window_parse_create completes a descriptor create_state is making:
 * for kind "window" its assigner, contents, lateness, time domain and emit
 * function; for any other kind, no window option.  The reducer and the
 * aggregate (create_state's own options) are read already.
 */
void
sql_window_parse_create(FunctionCallInfo fcinfo, StateDesc *desc)
{
	if (desc->kind != STATE_KIND_WINDOW)
	{
		bool		any = has_arg(fcinfo, ARG_EMIT_TABLE);

		for (int i = ARG_ASSIGNER; i <= ARG_LAST; i++)
			any |= has_arg(fcinfo, i);
		if (any)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("assigner, size, slide, gap, collect, allowed_lateness, emit and emit_table apply only to window states"),
					 errhint("Use kind => 'window', or leave them NULL.")));
		return;
	}
	if (desc->ttl > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("window states have no TTL"),
				 errhint("A window's state goes when it has fired and its allowed lateness has passed.")));
	parse_assigner(fcinfo, desc);
	parse_contents(fcinfo, desc);
	if (has_arg(fcinfo, ARG_LATENESS))
		desc->window_lateness = interval_arg(fcinfo, ARG_LATENESS, "allowed lateness", true);
	desc->timer_event_time = sql_time_domain_is_event(fcinfo, true);
	if (has_arg(fcinfo, ARG_EMIT) == has_arg(fcinfo, ARG_EMIT_TABLE))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg(has_arg(fcinfo, ARG_EMIT) ?
						"a window state takes an emit function or an emit table, not both" :
						"a window state needs an emit table or an emit function"),
				 errhint("Pass emit_table => 'a table whose first columns are (%s, timestamptz, timestamptz, %s)', into which each fired window is inserted, or emit => 'on_window(%s, timestamptz, timestamptz, %s)', called with each window's key, start, end and result.",
						 format_type_be(desc->types[STATE_TYPE_KEY].oid),
						 format_type_be(window_result_type(desc)),
						 format_type_be(desc->types[STATE_TYPE_KEY].oid),
						 format_type_be(window_result_type(desc)))));
	if (has_arg(fcinfo, ARG_EMIT_TABLE))
		emit_table_describe(PG_GETARG_OID(ARG_EMIT_TABLE), desc);
	else
		timer_handler_describe(PG_GETARG_OID(ARG_EMIT), desc->owner, desc);
}

/*
 * sql_watermark_parse_create completes a descriptor create_state is
 * making, after its kind's own options: out_of_orderness and idle_timeout
 * (event-time window and timers states) and late (event-time window
 * states).
 */
void
sql_watermark_parse_create(FunctionCallInfo fcinfo, StateDesc *desc)
{
	bool		event_time = state_desc_fires(desc) && desc->timer_event_time;

	if ((has_arg(fcinfo, ARG_OUT_OF_ORDERNESS) || has_arg(fcinfo, ARG_IDLE_TIMEOUT)) && !event_time)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("out_of_orderness and idle_timeout apply only to window and timers states in event time"),
				 errhint("A state in processing time fires by the clock; other kinds have no watermark.")));
	if (has_arg(fcinfo, ARG_OUT_OF_ORDERNESS))
	{
		desc->watermark_by_data = true;
		desc->watermark_lag = interval_arg(fcinfo, ARG_OUT_OF_ORDERNESS, "out_of_orderness", true);
	}
	if (has_arg(fcinfo, ARG_IDLE_TIMEOUT))
	{
		if (!desc->watermark_by_data)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("idle_timeout needs out_of_orderness"),
					 errdetail("An idle stream's watermark follows the clock from the last event time seen, which only a watermark from the data has."),
					 errhint("Pass out_of_orderness too ('0' if events come in order).")));
		desc->idle_timeout = interval_arg(fcinfo, ARG_IDLE_TIMEOUT, "idle_timeout", false);
	}
	if (has_arg(fcinfo, ARG_LATE))
	{
		if (desc->kind != STATE_KIND_WINDOW || !event_time)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("late applies only to window states in event time"),
					 errhint("Only a window state's watermark makes a value late.")));
		late_fn_describe(PG_GETARG_OID(ARG_LATE), desc);
	}
}

/* ------------------------------------------------------------ window_add */

/*
 * align_start is the start of the window of length len (positive) that
 * holds t, windows lying side by side from the Unix epoch (as Flink's
 * TimeWindow.getWindowStartWithOffset lays them): t less (t - epoch) mod
 * len, rounded down before the epoch too.  The modulo is taken of t and of
 * the epoch apart, so that nothing overflows over the whole range of
 * timestamptz; the start may lie before the range (at most len before).
 */
static int64
align_start(int64 t, int64 len)
{
	int64		r;

	Assert(len > 0);
	r = (t % len - UNIX_EPOCH_US % len) % len;
	if (r < 0)
		r += len;
	return t - r;
}

static void
put_raw(WindowSet *in, int64 start, int64 end, const char *value, uint32 len)
{
	WindowEntry *w = &in->w[in->n++];

	w->start = start;
	w->end = end;
	w->version = 0;
	w->flags = WINDOW_RAW;
	w->acc = value;
	w->acclen = len;
}

/*
 * The windows a value at t joins, by the state's assigner, into in.  An end
 * past the range of timestamptz is 'infinity' (window_time_add,
 * format/window_image.h).
 */
static void
assign_windows(StateCall *call, TimestampTz t, const char *value, uint32 len, WindowSet *in)
{
	const StateDesc *d = &call->desc;

	in->w = palloc(sizeof(WindowEntry) * (d->window_assigner == STATE_WINDOW_SLIDING ?
										  d->window_size / d->window_slide + 1 : 1));
	if (d->window_assigner == STATE_WINDOW_SESSION)
	{
		put_raw(in, t, window_time_add(t, d->window_gap), value, len);
		return;
	}
	if (d->window_assigner == STATE_WINDOW_TUMBLING)
	{
		int64		start = align_start(t, d->window_size);

		put_raw(in, start, window_time_add(start, d->window_size), value, len);
		return;
	}
	/* Sliding: every window of the slide's grid that holds t, oldest first. */
	{
		int64		last = align_start(t, d->window_slide);
		int64		first = last;

		int64		n;

		/* At most size / slide steps back, from a finite t: no overflow. */
		while (first - d->window_slide > t - d->window_size)
			first -= d->window_slide;
		/* Counted, as a step past the last start may pass what int64 holds. */
		n = (last - first) / d->window_slide + 1;
		for (int64 i = 0; i < n; i++)
		{
			int64		start = first + i * d->window_slide;

			put_raw(in, start, window_time_add(start, d->window_size), value, len);
		}
	}
}

/*
 * The search_path a late function runs with: the default one, with pg_temp
 * last.  The caller's own would let the caller choose which function,
 * operator or table an unqualified name in the owner's code means, and so
 * run code of the caller's as the owner (CVE-2018-1058); pg_temp, searched
 * first for tables unless it is named, holds the caller's tables.
 */
#define LATE_SEARCH_PATH	"\"$user\", public, pg_temp"

/*
 * late_value hands a value dropped as late to the state's late function,
 * if it has one, with its key and event time: as the owner, in a security
 * restricted operation (a deferred trigger it queues is refused, so none
 * runs later as the caller) at a GUC nest level of its own with a
 * search_path the caller does not choose, in the caller's transaction.  A
 * late function that cannot run fails the call: the value is not lost
 * unseen.
 */
static void
late_value(StateCall *call, TimestampTz t)
{
	const StateDesc *d = &call->desc;
	const char *problem;
	FmgrInfo	flinfo;
	Oid			save_user;
	int			save_sec;
	int			save_nest;

	LOCAL_FCINFO(fc, 3);

	if (!OidIsValid(d->late_fn))
		return;
	if ((problem = late_fn_problem(d)) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s", problem),
				 errdetail("A value of the key was late and could not be handed to it.")));
	fmgr_info(d->late_fn, &flinfo);
	InitFunctionCallInfoData(*fc, &flinfo, 3, DEFAULT_COLLATION_OID, NULL, NULL);
	fc->args[0].value = codec_decode(&call->codecs[ARG_KEY], call->key.data, call->key.len);
	fc->args[0].isnull = false;
	fc->args[1].value = TimestampTzGetDatum(t);
	fc->args[1].isnull = false;
	fc->args[2].value = codec_decode(&call->codecs[ARG_VALUE], call->buf.data, call->buf.len);
	fc->args[2].isnull = false;
	GetUserIdAndSecContext(&save_user, &save_sec);
	SetUserIdAndSecContext(d->owner, save_sec | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	save_nest = NewGUCNestLevel();
	(void) set_config_option("search_path", LATE_SEARCH_PATH, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) FunctionCallInvoke(fc);
	AtEOXact_GUC(false, save_nest);
	SetUserIdAndSecContext(save_user, save_sec);
}

/*
 * sql_window_add_arg: value joins every window of call->key that holds
 * event_time, a timestamptz (processing time: the clock's time, event_time
 * NULL); a value too late for all of them is dropped, counted
 * (state.stats.late) and handed to the late function.  A state whose
 * watermark follows the data moves it first.  window_add and a table's
 * feed.
 */
void
sql_window_add_arg(StateCall *call, const StateArg *event_time, const StateArg *value)
{
	WindowRun  *run = window_run(call);
	const StateDesc *d = &call->desc;
	TimestampTz t;
	WindowSet	in;

	if (!d->timer_event_time)
	{
		if (!event_time->isnull)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("window state \"%s\" is in processing time: a value's time is the clock's",
							NameStr(d->name)),
					 errhint("Pass NULL as the event time, or create the state with time_domain => 'event'.")));
		t = record_ttl_now();
	}
	else if (event_time->isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("a value's event time must not be null")));
	else
	{
		t = DatumGetTimestampTz(event_time->value);
		if (TIMESTAMP_NOT_FINITE(t))
			ereport(ERROR,
					(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
					 errmsg("a value's event time must be finite")));
	}
	if (value->isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("value of state \"%s\" must not be null", NameStr(d->name))));
	resetStringInfo(&call->buf);
	state_call_encode_arg(call, value, ARG_VALUE, &call->buf);
	if (d->watermark_by_data &&
		timer_watermark_observe(call->target.slot, d->id, t, d->watermark_lag))
		timer_queue_wake(d->dbid);

	window_set_init(&in);
	assign_windows(call, t, call->buf.data, call->buf.len, &in);
	/* Windows whose lateness the watermark passed take nothing. */
	if (d->timer_event_time)
	{
		TimestampTz w;

		/*
		 * Judged by the watermark; a transactional state's value on time
		 * holds its windows from firing until its transaction ends.
		 */
		if (timer_window_judge(call->target.slot, d->id, in.w[0].end,
							   window_time_add(in.w[in.n - 1].end, d->window_lateness),
							   d->transactional, &w))
		{
			state_stats_count(call->target.slot, STATE_STAT_LATE, 1);
			pfree(in.w);
			late_value(call, t);
			return;
		}
		if (w != DT_NOBEGIN)
			in.cleaned_to = w;
	}
	resetStringInfo(&run->image);
	window_set_write(&run->image, &in);
	call->backend->merge(&call->target, &call->key, run->image.data, run->image.len, window_merge,
						 window_fold_arg(run, d->transactional), NULL, &call->buf2);
	if (run->folded.dropped)
	{
		state_stats_count(call->target.slot, STATE_STAT_LATE, 1);
		late_value(call, t);
	}
	for (int i = 0; i < run->folded.nwake; i++)
	{
		if (d->transactional)
			timer_queue_note(d, call->target.slot, call->key.data, call->key.len,
							 run->folded.wake[i]);
		else
			timer_queue_push(d, call->target.slot, call->key.data, call->key.len,
							 run->folded.wake[i]);
	}
	pfree(in.w);
}

/*
 * window_add(name, key, event_time, value): the value joins every window
 * of the key that holds event_time (sql_window_add_arg).
 */
Datum
state_window_add(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_begin(fcinfo, STATE_KIND_WINDOW,
										STATE_PRIV_READ | STATE_PRIV_WRITE);
	StateArg	event_time;
	StateArg	value;

	(void) window_run(call);
	state_call_key(call, fcinfo, 1);
	event_time = state_call_arg(fcinfo, 2);
	value = state_call_arg(fcinfo, 3);
	sql_window_add_arg(call, &event_time, &value);
	PG_RETURN_VOID();
}

/* ------------------------------------------------------------ reading */

/*
 * window_get(name, key, window_start, default): the result of the key's
 * open window that starts at window_start, or default.
 */
Datum
state_window_get(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_begin(fcinfo, STATE_KIND_WINDOW, STATE_PRIV_READ);
	WindowRun  *run = window_run(call);
	TimestampTz start;
	WindowSet	s;

	state_call_key(call, fcinfo, 1);
	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("a window's start must not be null")));
	start = PG_GETARG_TIMESTAMPTZ(2);
	resetStringInfo(&call->buf);
	if (call->backend->get(&call->target, &call->key, &call->buf))
	{
		window_read_or_fail(run, call->buf.data, call->buf.len, &s);
		/* Of sliding windows starting before the range, the first ends first. */
		for (int i = 0; i < s.n; i++)
			if (window_shown_start(s.w[i].start) == start)
			{
				bool		isnull;
				Datum		result = window_result(run, s.w[i].acc, s.w[i].acclen,
												   get_fn_expr_rettype(fcinfo->flinfo),
												   &isnull);

				if (isnull)
					PG_RETURN_NULL();
				return result;
			}
	}
	return state_call_default(call, fcinfo, 3);
}

/* One key's windows as rows (key, window_start, window_end, fired). */
static void
windows_collect(void *arg, const char *key, uint32 keylen, const char *img, uint32 len)
{
	KeyRows    *ctx = arg;
	StateCall  *call = ctx->rows.call;
	ReturnSetInfo *rsinfo = ctx->rows.rsinfo;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};
	WindowSet	s;

	CHECK_FOR_INTERRUPTS();
	window_read_or_fail(window_run(call), img, len, &s);
	values[0] = key_rows_key(ctx, key, keylen);
	for (int i = 0; i < s.n; i++)
	{
		values[1] = TimestampTzGetDatum(window_shown_start(s.w[i].start));
		values[2] = TimestampTzGetDatum(s.w[i].end);
		values[3] = BoolGetDatum((s.w[i].flags & WINDOW_FIRED) != 0);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/* windows(name, key_default): every open window as (key, start, end, fired). */
Datum
state_windows(PG_FUNCTION_ARGS)
{
	KeyRows		ctx;

	return key_rows_each(&ctx, state_call_begin(fcinfo, STATE_KIND_WINDOW, STATE_PRIV_READ), fcinfo,
						 get_fn_expr_argtype(fcinfo->flinfo, 1), windows_collect);
}
