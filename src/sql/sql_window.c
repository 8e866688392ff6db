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
#include "common/fault.h"
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
 * late_value hands a value dropped as late (its image value, len) to the
 * state's late function, if it has one, with its key and event time: as the owner, in a security
 * restricted operation (a deferred trigger it queues is refused, so none
 * runs later as the caller) at a GUC nest level of its own with a
 * search_path the caller does not choose, in the caller's transaction.  A
 * late function that cannot run fails the call: the value is not lost
 * unseen.
 */
static void
late_value(StateCall *call, TimestampTz t, const char *value, uint32 len)
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
	fc->args[2].value = codec_decode(&call->codecs[ARG_VALUE], value, len);
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
 * window_value_time: the checks of a value and its event time (NULL: the
 * clock's time, for a state in processing time); the value's image goes to
 * call->buf.  Returns the value's time.
 */
static TimestampTz
window_value_time(StateCall *call, const StateArg *event_time, const StateArg *value)
{
	const StateDesc *d = &call->desc;
	TimestampTz t;

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
	return t;
}

/*
 * window_take: the windows of call->key a value at t (its image in
 * call->buf) joins, into *in, judged by the watermark (or floor, when that
 * is later: what a feed's batch has not published yet).  False when it is
 * too late for every one of them: it is dropped, counted, and handed to
 * the late function.
 */
static bool
window_take(StateCall *call, TimestampTz t, TimestampTz floor, WindowSet *in)
{
	const StateDesc *d = &call->desc;
	TimestampTz w;

	window_set_init(in);
	assign_windows(call, t, call->buf.data, call->buf.len, in);
	/* Windows whose lateness the watermark passed take nothing. */
	if (!d->timer_event_time)
		return true;

	/*
	 * Judged by the watermark; a transactional state's value on time holds
	 * its windows from firing until its transaction ends.
	 */
	if (timer_window_judge(call->target.slot, d->id, in->w[0].end,
						   window_time_add(in->w[in->n - 1].end, d->window_lateness),
						   d->transactional, floor, &w))
	{
		state_stats_count(call->target.slot, STATE_STAT_LATE, 1);
		pfree(in->w);
		late_value(call, t, call->buf.data, (uint32) call->buf.len);
		return false;
	}
	if (w != DT_NOBEGIN)
		in->cleaned_to = w;
	return true;
}

/* The timer worker must look at the windows the last fold woke, of key. */
static void
window_wake(StateCall *call, WindowRun *run, const StateKey *key)
{
	for (int i = 0; i < run->folded.nwake; i++)
	{
		if (call->desc.transactional)
			timer_queue_note(&call->desc, call->target.slot, key->data, key->len,
							 run->folded.wake[i]);
		else
			timer_queue_push(&call->desc, call->target.slot, key->data, key->len,
							 run->folded.wake[i]);
	}
}

/*
 * sql_window_add_arg: value joins every window of call->key that holds
 * event_time, a timestamptz (processing time: the clock's time, event_time
 * NULL); a value too late for all of them is dropped, counted
 * (state.stats.late) and handed to the late function.  A state whose
 * watermark follows the data moves it first.  window_add, and a table's
 * feed as a row trigger.
 */
void
sql_window_add_arg(StateCall *call, const StateArg *event_time, const StateArg *value)
{
	WindowRun  *run = window_run(call);
	const StateDesc *d = &call->desc;
	TimestampTz t = window_value_time(call, event_time, value);
	WindowSet	in;

	if (d->watermark_by_data &&
		timer_watermark_observe(call->target.slot, d->id, t, d->watermark_lag))
		timer_queue_wake(d->dbid);
	if (!window_take(call, t, DT_NOBEGIN, &in))
		return;
	resetStringInfo(&run->image);
	window_set_write(&run->image, &in);
	call->backend->merge(&call->target, &call->key, run->image.data, run->image.len, window_merge,
						 window_fold_arg(run, d->transactional), NULL, &call->buf2);
	if (run->folded.dropped)
	{
		state_stats_count(call->target.slot, STATE_STAT_LATE, 1);
		late_value(call, t, call->buf.data, (uint32) call->buf.len);
	}
	window_wake(call, run, &call->key);
	pfree(in.w);
}

/* ------------------------------------------------------------ a feed's batch */

/*
 * A statement trigger's feed (sql_feed.c) folds its rows into a window
 * state in batches, as Flink's mini-batch aggregation does: each row is
 * checked and judged late or on time in the rows' order, as window_add
 * would judge it (by the watermark, and by what the batch's earlier rows
 * move it to), and its windows join its key's windows in local memory;
 * then each key's windows go into the state with one merge, and the
 * watermark the batch's rows give is published.  A key's windows fire no
 * sooner than with one merge per row: the watermark moves only once the
 * rows are in.  A window another session's watermark closed meanwhile
 * drops what the batch brought it, as it would a row's: each row whose
 * windows all were dropped is late.
 */

/* At most this many rows, or this much memory, before the batch is folded. */
#define WINDOW_BATCH_ROWS		8192
#define WINDOW_BATCH_MEMORY		(8 * 1024 * 1024)
/* A state with an idle timeout is told that values are coming every so many rows. */
#define WINDOW_BATCH_ARRIVAL	256

/* A row of the batch, kept to find it if its windows are dropped. */
typedef struct BatchRow
{
	TimestampTz t;
	TimestampTz judged;			/* the watermark it was judged by (WINDOW_NO_CLOCK: none) */
	char	   *value;			/* its image */
	uint32		len;
	int			next;			/* its key's next row; -1: none */
} BatchRow;

/* A key of the batch: its windows so far, in local memory. */
typedef struct BatchKey
{
	StateKey	key;			/* its image, a copy */
	WindowSet	set;
	int			max;			/* room in set.w */
	int64		judged;			/* the lowest watermark its rows were judged by */
	int			first;			/* its rows; -1: none */
	int			last;
	struct BatchKey *next;		/* keys in the order they came */
} BatchKey;

struct WindowBatch
{
	StateCall  *call;
	WindowRun  *run;
	MemoryContext cxt;			/* the batch's, reset when it is folded */
	MemoryContext mergecxt;		/* one key's merge, reset after it */
	BatchKey  **table;			/* open addressing by the key's hash */
	uint32		mask;
	int			nkeys;
	BatchKey   *first;
	BatchKey   *last;
	BatchRow   *rows;
	int			nrows;
	int			maxrows;
	TimestampTz floor;			/* the watermark the batch's rows give; DT_NOBEGIN: none */
	TimestampTz latest;			/* the latest event time of its rows */
	bool		moved;			/* the rows move the watermark (latest is set) */
};

static void
batch_reset(WindowBatch *b)
{
	MemoryContextReset(b->cxt);
	b->mask = 255;
	b->table = MemoryContextAllocZero(b->cxt, sizeof(BatchKey *) * (b->mask + 1));
	b->nkeys = 0;
	b->first = b->last = NULL;
	b->maxrows = 256;
	b->rows = MemoryContextAlloc(b->cxt, sizeof(BatchRow) * b->maxrows);
	b->nrows = 0;
	b->moved = false;
	b->floor = DT_NOBEGIN;
	b->latest = DT_NOBEGIN;
}

/*
 * sql_window_batch_begin: a batch for the feed of call's window state, or
 * NULL when its values cannot be folded together (an aggregate without a
 * combine function): then each row is folded alone.
 */
WindowBatch *
sql_window_batch_begin(StateCall *call)
{
	WindowBatch *b;

	Assert(call->desc.kind == STATE_KIND_WINDOW);
	if (!window_batches(window_run(call)))
		return NULL;
	b = palloc0(sizeof(WindowBatch));
	b->call = call;
	b->run = window_run(call);
	b->cxt = AllocSetContextCreate(CurrentMemoryContext, "state.feed window batch",
								   ALLOCSET_DEFAULT_SIZES);
	b->mergecxt = AllocSetContextCreate(CurrentMemoryContext, "state.feed window merge",
										ALLOCSET_DEFAULT_SIZES);
	batch_reset(b);
	return b;
}

/* The batch's entry for call->key, made when it has none. */
static BatchKey *
batch_key(WindowBatch *b)
{
	const StateKey *k = &b->call->key;
	uint32		i = k->hash & b->mask;
	BatchKey   *g;
	char	   *copy;

	for (; (g = b->table[i]) != NULL; i = (i + 1) & b->mask)
		if (g->key.hash == k->hash && g->key.len == k->len &&
			memcmp(g->key.data, k->data, k->len) == 0)
			return g;
	g = MemoryContextAllocZero(b->cxt, sizeof(BatchKey));
	copy = MemoryContextAlloc(b->cxt, Max(k->len, 1));
	memcpy(copy, k->data, k->len);
	g->key = *k;
	g->key.data = copy;
	window_set_init(&g->set);
	g->judged = PG_INT64_MAX;
	g->first = g->last = -1;
	if (b->last)
		b->last->next = g;
	else
		b->first = g;
	b->last = g;
	b->table[i] = g;
	/* At most half full. */
	if (++b->nkeys > (int) (b->mask + 1) / 2)
	{
		uint32		mask = b->mask * 2 + 1;
		BatchKey  **table = MemoryContextAllocZero(b->cxt, sizeof(BatchKey *) * (mask + 1));

		for (BatchKey *o = b->first; o; o = o->next)
		{
			uint32		j = o->key.hash & mask;

			while (table[j])
				j = (j + 1) & mask;
			table[j] = o;
		}
		pfree(b->table);
		b->table = table;
		b->mask = mask;
	}
	return g;
}

/*
 * The rows of g whose windows the merge took none of (kept: which of the
 * windows it was given it took) are late, as each would have been alone.
 */
static void
batch_late_rows(WindowBatch *b, BatchKey *g, const WindowSet *given, const bool *kept)
{
	StateCall  *call = b->call;
	int64		lateness = call->desc.window_lateness;

	for (int r = g->first; r >= 0; r = b->rows[r].next)
	{
		BatchRow   *row = &b->rows[r];
		WindowSet	own;
		bool		taken = false;

		window_set_init(&own);
		assign_windows(call, row->t, row->value, row->len, &own);
		for (int i = 0; i < own.n && !taken; i++)
		{
			/* Judged too late when the row came: never in the batch. */
			if (row->judged != WINDOW_NO_CLOCK &&
				window_time_add(own.w[i].end, lateness) <= row->judged)
				continue;
			/* In the batch's window that holds it (a session's may be wider). */
			for (int j = 0; j < given->n; j++)
				if (given->w[j].start <= own.w[i].start && own.w[i].end <= given->w[j].end)
				{
					taken = kept[j];
					break;
				}
		}
		pfree(own.w);
		if (taken)
			continue;
		state_stats_count(call->target.slot, STATE_STAT_LATE, 1);
		late_value(call, row->t, row->value, row->len);
	}
}

/* Key g's windows of the batch go into the state, with one merge. */
static void
batch_merge_key(WindowBatch *b, BatchKey *g)
{
	StateCall  *call = b->call;
	WindowRun  *run = b->run;
	struct WindowFoldArg fa;
	bool	   *kept;
	MemoryContext old;

	if (g->set.n == 0)
		return;
	/* What the merge allocates (the key's image read, folded, written) goes with it. */
	old = MemoryContextSwitchTo(b->mergecxt);
	g->set.cleaned_to = g->judged == PG_INT64_MAX ? WINDOW_NO_CLOCK : g->judged;
	resetStringInfo(&run->image);
	window_set_write(&run->image, &g->set);
	kept = palloc(sizeof(bool) * g->set.n);
	fa = *(struct WindowFoldArg *) window_fold_arg(run, call->desc.transactional);
	fa.kept = kept;
	FAULT_POINT("window.feed_merge");
	call->key = g->key;
	call->backend->merge(&call->target, &g->key, run->image.data, run->image.len, window_merge,
						 &fa, NULL, &call->buf2);
	window_wake(call, run, &g->key);
	for (int i = 0; i < g->set.n; i++)
		if (!kept[i])
		{
			batch_late_rows(b, g, &g->set, kept);
			break;
		}
	MemoryContextSwitchTo(old);
	MemoryContextReset(b->mergecxt);
	/* The key starts again empty (a row that would overflow it folded it). */
	g->set.n = 0;
	g->judged = PG_INT64_MAX;
	g->first = g->last = -1;
}

/*
 * The batch goes into the state, key by key in the order they came; then
 * the watermark its rows give is published.
 */
static void
batch_fold(WindowBatch *b)
{
	const StateDesc *d = &b->call->desc;

	for (BatchKey *g = b->first; g; g = g->next)
	{
		CHECK_FOR_INTERRUPTS();
		batch_merge_key(b, g);
	}
	if (b->moved &&
		timer_watermark_observe(b->call->target.slot, d->id, b->latest, d->watermark_lag))
		timer_queue_wake(d->dbid);
	batch_reset(b);
}

/*
 * sql_window_batch_add: a row's value at event_time joins the batch, for
 * call->key (state_call_key_arg), judged as window_add would judge it.
 */
void
sql_window_batch_add(WindowBatch *b, const StateArg *event_time, const StateArg *value)
{
	StateCall  *call = b->call;
	const StateDesc *d = &call->desc;
	TimestampTz t = window_value_time(call, event_time, value);
	WindowSet	in;
	BatchKey   *g;
	BatchRow   *row;
	MemoryContext old;

	if (d->watermark_by_data)
	{
		b->floor = Max(b->floor, timer_watermark_of(t, d->watermark_lag));
		b->latest = b->moved ? Max(b->latest, t) : t;
		b->moved = true;
		/* Values are coming: an idle timeout must not pass while the batch grows. */
		if (d->idle_timeout > 0 && b->nrows % WINDOW_BATCH_ARRIVAL == 0)
			timer_watermark_arrival(call->target.slot, d->id);
	}
	if (!window_take(call, t, b->floor, &in))
		return;
	old = MemoryContextSwitchTo(b->cxt);
	if (b->nrows == b->maxrows)
	{
		b->maxrows *= 2;
		b->rows = repalloc(b->rows, sizeof(BatchRow) * b->maxrows);
	}
	row = &b->rows[b->nrows];
	row->t = t;
	row->judged = in.cleaned_to;
	row->len = (uint32) call->buf.len;
	row->value = palloc(Max(row->len, 1));
	memcpy(row->value, call->buf.data, row->len);
	row->next = -1;
	g = batch_key(b);
	/*
	 * A key whose windows would overflow what one merge wakes goes in first
	 * (it may hand rows to the late function: the row's own image is
	 * copied already).
	 */
	if (g->set.n + in.n > WINDOW_MAX_SLIDES + 1)
		batch_merge_key(b, g);
	if (g->last >= 0)
		b->rows[g->last].next = b->nrows;
	else
		g->first = b->nrows;
	g->last = b->nrows++;
	g->judged = Min(g->judged, in.cleaned_to);
	for (int i = 0; i < in.n; i++)
	{
		WindowEntry x = in.w[i];

		/* A window the watermark it was judged by closed takes nothing. */
		if (in.cleaned_to != WINDOW_NO_CLOCK &&
			window_time_add(x.end, d->window_lateness) <= in.cleaned_to)
			continue;
		x.acc = row->value;
		window_join_local(b->run, &g->set, &g->max, &x);
	}
	MemoryContextSwitchTo(old);
	pfree(in.w);
	if (b->nrows >= WINDOW_BATCH_ROWS || MemoryContextMemAllocated(b->cxt, false) >= WINDOW_BATCH_MEMORY)
		batch_fold(b);
}

/* sql_window_batch_end: what the batch holds goes into the state. */
void
sql_window_batch_end(WindowBatch *b)
{
	batch_fold(b);
	MemoryContextDelete(b->mergecxt);
	MemoryContextDelete(b->cxt);
	pfree(b);
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
