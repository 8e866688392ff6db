/*
 * sql/sql_window_fold.c
 *		The fold of a window state: values and firings folded into a key's
 *		windows (format/window_image.h), and the windows' results.
 *
 * A key's image holds its open windows, each with its contents (the
 * reducer's fold, the aggregate's transition state, or a list of the
 * values).  window_add folds in the windows of one value (its raw image);
 * the timer worker folds in the marks of what it emitted, which clear
 * those windows' "changed" flag unless a value came meanwhile, and removes
 * the windows whose lateness has passed.  Both go through the backend's
 * merge, so that concurrent calls on one key lose nothing, in every
 * backend; for a transactional state the same fold builds the
 * transaction's pending windows and marks ("pending": marks are kept), and
 * sql_window_combine applies them to the committed windows at commit.
 * The timer worker fires a window state through window_fire_routine
 * (timers/timer_fire.h): a timer names a key whose windows are due.
 *
 * Session windows merge as Flink's MergingWindowSet merges them: a window
 * that meets others (touching counts) takes them in, contents combined.
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "rewrite/rewriteHandler.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/inval.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "common/fault.h"
#include "common/timer_handler.h"
#include "format/records.h"
#include "sql/sql_window.h"
#include "txn/txn_state.h"

/* ------------------------------------------------------------ set-up */

static WindowRun *
run_init(StateCall *call)
{
	WindowRun  *run = MemoryContextAllocZero(call->mcxt, sizeof(WindowRun));
	MemoryContext old = MemoryContextSwitchTo(call->mcxt);

	run->call = call;
	if (call->desc.window_contents == STATE_WINDOW_REDUCE)
		sql_reducer_setup(call, &run->reduce, &run->reduce_arg);
	else if (call->desc.window_contents == STATE_WINDOW_AGGREGATE)
		run->agg = aggregate_run_init(&call->desc, call->mcxt);
	run->result_type = window_result_type(&call->desc);
	initStringInfo(&run->scratch);
	initStringInfo(&run->image);
	run->apply.run = run->pending.run = run->commit.run = run;
	run->pending.delta = true;
	run->commit.judged = true;
	MemoryContextSwitchTo(old);
	return run;
}

/* window_run: the set-up of a call site (kept in the call). */
WindowRun *
window_run(StateCall *call)
{
	if (call->extra == NULL)
		call->extra = run_init(call);
	return call->extra;
}

/* window_run_kept: the set-up of a descriptor, kept across transactions. */
static WindowRun *
window_run_kept(const StateDesc *desc)
{
	return window_run(sql_kept_call(desc));
}

/* The StateMergeFn argument that folds into committed windows or pending writes. */
void *
window_fold_arg(WindowRun *run, bool delta)
{
	run->folded.dropped = false;
	run->folded.nwake = 0;
	return delta ? (void *) &run->pending : (void *) &run->apply;
}

/* ------------------------------------------------------------ contents */

/* Contents of one value (its image v). */
static void
acc_of_value(WindowRun *run, const char *v, uint32 vl, StringInfo out)
{
	int			begin;

	resetStringInfo(out);
	switch ((StateWindowContents) run->call->desc.window_contents)
	{
		case STATE_WINDOW_REDUCE:
			appendBinaryStringInfo(out, v, (int) vl);
			break;
		case STATE_WINDOW_LIST:
			begin = record_elem_begin(out);
			appendBinaryStringInfo(out, v, (int) vl);
			record_elem_end(out, begin);
			break;
		case STATE_WINDOW_AGGREGATE:
			aggregate_fold(run->agg, NULL, 0, codec_decode(&run->call->codecs[ARG_VALUE], v, vl),
						   NULL, NULL, out);
			break;
	}
}

/* Contents acc with one more value (its image v). */
static void
acc_add_value(WindowRun *run, const char *acc, uint32 acclen, const char *v, uint32 vl,
			  StringInfo out)
{
	int			begin;

	resetStringInfo(out);
	switch ((StateWindowContents) run->call->desc.window_contents)
	{
		case STATE_WINDOW_REDUCE:
			run->reduce(acc, acclen, v, vl, out, run->reduce_arg);
			break;
		case STATE_WINDOW_LIST:
			appendBinaryStringInfo(out, acc, (int) acclen);
			begin = record_elem_begin(out);
			appendBinaryStringInfo(out, v, (int) vl);
			record_elem_end(out, begin);
			break;
		case STATE_WINDOW_AGGREGATE:
			aggregate_fold(run->agg, acc, acclen,
						   codec_decode(&run->call->codecs[ARG_VALUE], v, vl),
						   NULL, NULL, out);
			break;
	}
}

/* Two windows' contents as one (sessions merging, a commit). */
static void
acc_combine(WindowRun *run, const char *a, uint32 alen, const char *b, uint32 blen,
			StringInfo out)
{
	resetStringInfo(out);
	switch ((StateWindowContents) run->call->desc.window_contents)
	{
		case STATE_WINDOW_REDUCE:
			run->reduce(a, alen, b, blen, out, run->reduce_arg);
			break;
		case STATE_WINDOW_LIST:
			appendBinaryStringInfo(out, a, (int) alen);
			appendBinaryStringInfo(out, b, (int) blen);
			break;
		case STATE_WINDOW_AGGREGATE:
			aggregate_combine(run->agg, a, alen, b, blen, out);
			break;
	}
}

/* A copy of a StringInfo's bytes, for a window's contents. */
static void
set_acc(WindowEntry *w, StringInfo from)
{
	char	   *copy = palloc(Max(from->len, 1));

	memcpy(copy, from->data, from->len);
	w->acc = copy;
	w->acclen = (uint32) from->len;
}

/* w's contents take in x's (a value's raw image, or contents). */
static void
join_into(WindowRun *run, WindowEntry *w, const WindowEntry *x)
{
	if (x->flags & WINDOW_RAW)
		acc_add_value(run, w->acc, w->acclen, x->acc, x->acclen, &run->scratch);
	else
		acc_combine(run, w->acc, w->acclen, x->acc, x->acclen, &run->scratch);
	set_acc(w, &run->scratch);
}

/*
 * window_result: a window's contents as the result emit and window_get
 * give, of type restype (the state's result type, or a getter's default's).
 */
Datum
window_result(WindowRun *run, const char *acc, uint32 acclen, Oid restype, bool *isnull)
{
	StateCall  *call = run->call;
	Datum		result;

	*isnull = false;
	switch ((StateWindowContents) call->desc.window_contents)
	{
		case STATE_WINDOW_REDUCE:
			return state_call_result(call, acc, acclen, restype);
		case STATE_WINDOW_LIST:
			return sql_list_datum(call, acc, acclen, restype);
		case STATE_WINDOW_AGGREGATE:
			result = aggregate_result(run->agg, acc, acclen, isnull);
			if (*isnull)
				return (Datum) 0;
			return state_call_result_datum(call, result, run->agg->result_type, ARG_VALUE,
										   restype);
	}
	elog(ERROR, "state_backend: unknown window contents");
}

/* ------------------------------------------------------------ the fold */

/* window_read_or_fail parses a key's image of windows, or raises data_corrupted. */
void
window_read_or_fail(WindowRun *run, const char *img, uint32 len, WindowSet *s)
{
	if (!window_set_read(img, len, s))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the windows of a key of state \"%s\" are damaged",
						NameStr(run->call->desc.name))));
}

/* Room for one more window in s (its array is the fold's own). */
static void
insert_at(WindowSet *s, int *max, int pos, const WindowEntry *w)
{
	if (s->n == *max)
	{
		*max = Max(8, *max * 2);
		s->w = s->w ? repalloc(s->w, sizeof(WindowEntry) * *max) :
			palloc(sizeof(WindowEntry) * *max);
	}
	memmove(&s->w[pos + 1], &s->w[pos], sizeof(WindowEntry) * (s->n - pos));
	s->w[pos] = *w;
	s->n++;
}

/* The timer worker must look at a window at its end, at. */
static void
wake(WindowRun *run, int64 at)
{
	if (run->folded.nwake < lengthof(run->folded.wake))
		run->folded.wake[run->folded.nwake++] = window_due_at(at);
}

/*
 * A window x of an incoming image joins s: into the window of the same
 * start (tumbling, sliding), or merging with every window it meets
 * (sessions).  False when it is too late: it ended, and its lateness
 * passed, by "clock" (window_merge's judge).
 */
static bool
add_window(WindowRun *run, WindowSet *s, int *max, const WindowEntry *x, int64 clock)
{
	const StateDesc *d = &run->call->desc;
	WindowEntry merged;
	bool		met = false;
	int			pos = 0;
	int			first;

	if (clock != WINDOW_NO_CLOCK && window_time_add(x->end, d->window_lateness) <= clock)
		return false;
	if (d->window_assigner != STATE_WINDOW_SESSION)
	{
		while (pos < s->n && s->w[pos].start < x->start)
			pos++;
		if (pos < s->n && s->w[pos].start == x->start)
		{
			WindowEntry *o = &s->w[pos];

			join_into(run, o, x);
			o->version++;
			/* Fired, or due and not fired (its emit failed): look again. */
			if ((o->flags & WINDOW_FIRED) ||
				(clock != WINDOW_NO_CLOCK && o->end <= clock))
				wake(run, o->end);
			o->flags |= WINDOW_DIRTY;
			return true;
		}
		merged = *x;
	}
	else
	{
		/* Every window that meets x (touching counts) merges with it. */
		while (pos < s->n && s->w[pos].end < x->start)
			pos++;
		first = pos;
		for (; pos < s->n && s->w[pos].start <= x->end; pos++)
		{
			WindowEntry *o = &s->w[pos];

			if (!met)
			{
				merged = *o;
				join_into(run, &merged, x);
				merged.start = Min(o->start, x->start);
				merged.end = Max(o->end, x->end);
				met = true;
			}
			else
			{
				join_into(run, &merged, o);
				merged.end = Max(merged.end, o->end);
				merged.version = Max(merged.version, o->version);
				merged.flags |= o->flags & WINDOW_FIRED;
			}
		}
		memmove(&s->w[first], &s->w[pos], sizeof(WindowEntry) * (s->n - pos));
		s->n -= pos - first;
		pos = first;
		if (!met)
			merged = *x;
	}
	if (!met && (merged.flags & WINDOW_RAW))
	{
		acc_of_value(run, x->acc, x->acclen, &run->scratch);
		set_acc(&merged, &run->scratch);
		merged.version = 0;
		merged.flags = 0;
	}
	merged.version++;
	merged.flags = (merged.flags & WINDOW_FIRED) | WINDOW_DIRTY;
	insert_at(s, max, pos, &merged);
	wake(run, merged.end);
	return true;
}

/*
 * window_batches: whether a state's values can be folded together before
 * they reach the key's windows (a feed's batch): contents that combine,
 * which an aggregate's do only with a combine function.
 */
bool
window_batches(const WindowRun *run)
{
	return run->call->desc.window_contents != STATE_WINDOW_AGGREGATE ||
		OidIsValid(run->agg->combinefn.fn_oid);
}

/*
 * window_join_local: window x of a value joins s, a key's windows kept in
 * local memory (a feed's batch, sql_window.c), as it would join the key's
 * stored windows, without a clock: the value was judged when it came.
 */
void
window_join_local(WindowRun *run, WindowSet *s, int *max, const WindowEntry *x)
{
	(void) add_window(run, s, max, x, WINDOW_NO_CLOCK);
	run->folded.nwake = 0;
}

/*
 * Apply marks: what fired and did not change since clears its flag; what
 * ended, and whose lateness passed, by the clock goes, unless a value
 * changed it since it fired (it fires once more, then goes).
 */
static void
apply_marks(WindowRun *run, WindowSet *s, const WindowMark *marks, int nmarks, int64 clock)
{
	int64		lateness = run->call->desc.window_lateness;
	int			n = 0;

	for (int m = 0; m < nmarks; m++)
		for (int i = 0; i < s->n; i++)
			if (s->w[i].start == marks[m].start && s->w[i].end == marks[m].end &&
				s->w[i].version == marks[m].version)
				s->w[i].flags = (s->w[i].flags & ~WINDOW_DIRTY) | WINDOW_FIRED;
	if (clock == WINDOW_NO_CLOCK)
		return;
	for (int i = 0; i < s->n; i++)
		if (window_time_add(s->w[i].end, lateness) > clock || (s->w[i].flags & WINDOW_DIRTY))
			s->w[n++] = s->w[i];
	s->n = n;
	s->cleaned_to = Max(s->cleaned_to, clock);
}

/*
 * window_merge is the StateMergeFn of window states: the image "in" (the
 * windows of a value, or a firing's marks) folded into the key's windows
 * "cur" (NULL: none yet), the result to out.
 */
void
window_merge(const char *cur, uint32 curlen, const char *in, uint32 inlen,
			 StringInfo out, void *arg)
{
	struct WindowFoldArg *fa = arg;
	WindowRun  *run = fa->run;
	WindowSet	s;
	WindowSet	x;
	int			max;
	int			kept = 0;
	int64		judge;

	run->folded.dropped = false;
	run->folded.nwake = 0;
	if (cur != NULL)
		window_read_or_fail(run, cur, curlen, &s);
	else
		window_set_init(&s);
	window_read_or_fail(run, in, inlen, &x);
	max = s.n;

	/*
	 * A value's windows are judged by the clock the key was cleaned to (by
	 * firings' marks) and the watermark the value saw when it was added;
	 * a transaction's pending windows, judged so when they were added, only
	 * by the key's clock at its commit, which the transaction's pins held
	 * back meanwhile.  A value's watermark does not clean the key: only a
	 * firing's clock does (apply_marks).
	 */
	judge = fa->judged ? s.cleaned_to : Max(s.cleaned_to, x.cleaned_to);
	for (int i = 0; i < x.n; i++)
	{
		bool		took = add_window(run, &s, &max, &x.w[i], judge);

		if (fa->kept)
			fa->kept[i] = took;
		kept += took ? 1 : 0;
	}
	run->folded.dropped = x.n > 0 && kept == 0;
	if (fa->delta)
	{
		/* Pending writes keep their marks, for the commit to apply. */
		WindowMark *marks = palloc(sizeof(WindowMark) * Max(s.nmarks + x.nmarks, 1));

		memcpy(marks, s.marks, sizeof(WindowMark) * s.nmarks);
		memcpy(marks + s.nmarks, x.marks, sizeof(WindowMark) * x.nmarks);
		s.marks = marks;
		s.nmarks += x.nmarks;
		s.fire_clock = Max(s.fire_clock, x.fire_clock);
	}
	else
	{
		apply_marks(run, &s, s.marks, s.nmarks, s.fire_clock);
		apply_marks(run, &s, x.marks, x.nmarks, x.fire_clock);
		s.nmarks = 0;
		s.fire_clock = WINDOW_NO_CLOCK;
	}
	resetStringInfo(out);
	window_set_write(out, &s);
}

/*
 * sql_window_combine: how a transactional window state's pending windows
 * and marks apply to the windows committed meanwhile, at its commit.
 */
void
sql_window_combine(const StateDesc *desc, StateMergeFn *fn, void **arg)
{
	WindowRun  *run = window_run_kept(desc);

	*fn = window_merge;
	(void) window_fold_arg(run, false);
	*arg = &run->commit;
}

/* ------------------------------------------------------------ firing */

/*
 * window_due_times calls fn with each instant the timer worker must look
 * at a key's windows (its image): a window's end while it has changed
 * since it fired, its end plus the lateness, when it goes, otherwise.
 */
static void
window_due_times(const TimerFire *tf, const char *img, uint32 len, TimerDueFn fn, void *arg)
{
	WindowSet	s;

	if (!window_set_read(img, len, &s))
		return;					/* reported when the key is read to fire */
	for (int i = 0; i < s.n; i++)
		fn(arg, window_due_at((s.w[i].flags & WINDOW_DIRTY) ? s.w[i].end :
							  window_time_add(s.w[i].end, tf->st->desc->window_lateness)));
}

/*
 * An emit table kept open for the rows of one subtransaction (the timer
 * worker fires a batch of keys in one): the table under its lock, the
 * executor state and slot of a simple insert, and the columns' defaults.
 * The subtransaction's or transaction's end closes it (emit_sink_xact);
 * an abort only forgets it, as the abort releases what it held.
 */
typedef struct EmitSink
{
	Oid			relid;
	uint32		state_id;		/* the state whose types the columns were checked for */
	bool		stale;			/* the table's relcache entry changed since */
	SubTransactionId subxid;	/* opened in */
	ResourceOwner owner;		/* which holds the table's reference */
	Relation	rel;
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	ExprState **defaults;		/* per column: its default, or NULL */
} EmitSink;

static EmitSink *emit_sink = NULL;

static void
emit_sink_close(void)
{
	EmitSink   *k = emit_sink;
	ResourceOwner save = CurrentResourceOwner;

	emit_sink = NULL;
	CurrentResourceOwner = k->owner;
	ExecCloseIndices(k->rri);
	ExecResetTupleTable(k->estate->es_tupleTable, false);
	FreeExecutorState(k->estate);
	table_close(k->rel, NoLock);
	CurrentResourceOwner = save;
	pfree(k);
}

static void
emit_sink_subxact(SubXactEvent event, SubTransactionId mySubid,
				  SubTransactionId parentSubid, void *arg)
{
	if (emit_sink == NULL || emit_sink->subxid != mySubid)
		return;
	if (event == SUBXACT_EVENT_PRE_COMMIT_SUB)
		emit_sink_close();
	else if (event == SUBXACT_EVENT_ABORT_SUB)
		emit_sink = NULL;		/* the abort frees its memory and references */
}

/*
 * A change of the table's definition since the sink opened it (a trigger
 * created or dropped by a row's trigger, say): the next row opens it anew,
 * as a new INSERT would see it.
 */
static void
emit_sink_relcache(Datum arg, Oid relid)
{
	if (emit_sink != NULL && (relid == InvalidOid || relid == emit_sink->relid))
		emit_sink->stale = true;
}

static void
emit_sink_xact(XactEvent event, void *arg)
{
	if (emit_sink == NULL)
		return;
	if (event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PRE_PREPARE ||
		event == XACT_EVENT_PARALLEL_PRE_COMMIT)
		emit_sink_close();
	else if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		emit_sink = NULL;
}

/*
 * emit_columns_check: the first four columns of the table are those of the
 * window state d (emit_table_columns_problem), checked under the table's
 * lock, as they may have changed since the batch checked them.  The lock,
 * held to the end of the transaction, and the sink's reference to the
 * table, keep them so for the rows that follow.
 */
static void
emit_columns_check(Relation rel, const StateDesc *d)
{
	char	   *problem = emit_table_columns_problem(RelationGetDescr(rel), d);

	if (problem != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("emit table %s of window state \"%s\" cannot take rows: %s",
						d->emit_table_name, NameStr(d->name), problem)));
}

/*
 * emit_sink_open opens a window state's emit table for the rows of this
 * subtransaction, under RowExclusiveLock, or gives the sink open for it.
 * Another window state with the same table has its own types checked.
 */
static EmitSink *
emit_sink_open(const StateDesc *d)
{
	static bool registered = false;
	SubTransactionId subxid = GetCurrentSubTransactionId();
	EmitSink   *k;
	MemoryContext old;
	RangeTblEntry *rte;
	TupleDesc	tupdesc;

	if (emit_sink != NULL && emit_sink->subxid == subxid && emit_sink->relid == d->emit_table &&
		!emit_sink->stale)
	{
		if (emit_sink->state_id != d->id)
		{
			emit_columns_check(emit_sink->rel, d);
			emit_sink->state_id = d->id;
		}
		return emit_sink;
	}
	if (emit_sink != NULL)
		emit_sink_close();
	if (!registered)
	{
		RegisterXactCallback(emit_sink_xact, NULL);
		RegisterSubXactCallback(emit_sink_subxact, NULL);
		CacheRegisterRelcacheCallback(emit_sink_relcache, (Datum) 0);
		registered = true;
	}
	/* In the subtransaction's memory, which its abort frees. */
	old = MemoryContextSwitchTo(CurTransactionContext);
	k = palloc0(sizeof(EmitSink));
	k->rel = table_open(d->emit_table, RowExclusiveLock);
	tupdesc = RelationGetDescr(k->rel);
	emit_columns_check(k->rel, d);
	k->state_id = d->id;
	k->relid = d->emit_table;
	k->subxid = subxid;
	k->owner = CurrentResourceOwner;
	k->estate = CreateExecutorState();
	rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_RELATION;
	rte->relid = k->relid;
	rte->relkind = k->rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	ExecInitRangeTable(k->estate, list_make1(rte));
	k->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(k->rri, k->rel, 1, NULL, 0);
	/* Where the AFTER triggers' queue finds it (as logical replication's apply does). */
	k->estate->es_opened_result_relations = list_make1(k->rri);
	k->slot = ExecInitExtraTupleSlot(k->estate, tupdesc, &TTSOpsVirtual);
	k->defaults = palloc0(sizeof(ExprState *) * Max(tupdesc->natts, 1));
	for (int i = 0, col = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);
		Node	   *def;

		if (att->attisdropped || att->attgenerated != '\0')
			continue;
		if (col++ < 4)
			continue;
		if ((def = build_column_default(k->rel, i + 1)) != NULL)
			k->defaults[i] = ExecPrepareExpr((Expr *) def, k->estate);
	}
	ExecOpenIndices(k->rri, false);
	MemoryContextSwitchTo(old);
	emit_sink = k;
	return k;
}

/*
 * emit_row inserts one fired window into the state's emit table, as the
 * user of the firing's transaction (the owner), through the executor's
 * simple insert, as logical replication's apply does: BEFORE and AFTER
 * row triggers (the AFTER ones at the row's end), constraints, indexes
 * and stored generated columns as for an INSERT, with no plan to make;
 * columns after the first four take their defaults, evaluated per row.
 */
static void
emit_row(TimerFire *tf, int64 start, int64 end, Datum result, bool isnull)
{
	EmitSink   *k = emit_sink_open(tf->st->desc);
	TupleDesc	tupdesc = RelationGetDescr(k->rel);
	TupleTableSlot *slot = k->slot;
	ExprContext *econtext = GetPerTupleExprContext(k->estate);
	Datum		first[4];
	bool		first_null[4] = {false, false, false, isnull};
	int			col = 0;

	first[0] = codec_decode(tf->key_codec, tf->key->data, tf->key->len);
	first[1] = TimestampTzGetDatum(start);
	first[2] = TimestampTzGetDatum(end);
	first[3] = result;
	k->estate->es_output_cid = GetCurrentCommandId(true);
	ExecClearTuple(slot);
	for (int i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		slot->tts_values[i] = (Datum) 0;
		slot->tts_isnull[i] = true;
		if (att->attisdropped || att->attgenerated != '\0')
			continue;
		if (col < 4)
		{
			slot->tts_values[i] = first[col];
			slot->tts_isnull[i] = first_null[col];
			col++;
		}
		else if (k->defaults[i] != NULL)
			slot->tts_values[i] = ExecEvalExpr(k->defaults[i], econtext, &slot->tts_isnull[i]);
	}
	ExecStoreVirtualTuple(slot);
	AfterTriggerBeginQuery();
	FAULT_POINT("window.before_emit");
	ExecSimpleRelationInsert(k->rri, k->estate, slot);
	AfterTriggerEndQuery(k->estate);
	FAULT_POINT("window.after_emit");
	ExecClearTuple(slot);
	ResetPerTupleExprContext(k->estate);
	tf->emitted++;
}

/*
 * emit(key, window start, window end, result) of one window, or its row
 * in the emit table.
 */
static void
emit_window(TimerFire *tf, int64 start, int64 end, Datum result, bool isnull)
{
	LOCAL_FCINFO(fcinfo, 4);

	if (OidIsValid(tf->st->desc->emit_table))
	{
		emit_row(tf, start, end, result, isnull);
		return;
	}

	/* A strict function is not called with a NULL, as SQL does not call it. */
	if (isnull && tf->handler->fn_strict)
	{
		tf->emitted++;
		return;
	}
	InitFunctionCallInfoData(*fcinfo, tf->handler, 4, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = codec_decode(tf->key_codec, tf->key->data, tf->key->len);
	fcinfo->args[0].isnull = false;
	fcinfo->args[1].value = TimestampTzGetDatum(start);
	fcinfo->args[1].isnull = false;
	fcinfo->args[2].value = TimestampTzGetDatum(end);
	fcinfo->args[2].isnull = false;
	fcinfo->args[3].value = result;
	fcinfo->args[3].isnull = isnull;
	FAULT_POINT("window.before_emit");
	(void) FunctionCallInvoke(fcinfo);
	FAULT_POINT("window.after_emit");
	tf->emitted++;
}

/* The largest key image a firing's mark carries (fire_mark_write). */
#define FIRE_MARK_IMAGE_MAX		(64 * 1024)

/*
 * A firing's mark: the length of the marks (a window set of marks only, and
 * the clock that fired), the marks, then the key's image as the firing read
 * it (none when it is over FIRE_MARK_IMAGE_MAX).  window_done folds the
 * marks into that image and stores the result only if the key still holds
 * it, which saves reading the key again; when it changed meanwhile, or
 * the image is not there, the marks merge into what the key holds.
 */
static void
fire_mark_write(StringInfo mark, const WindowSet *m, const char *img, uint32 imglen)
{
	uint32		setlen = 0;

	/* A large image is not kept twice: its fold reads the key again. */
	if (imglen > FIRE_MARK_IMAGE_MAX)
		imglen = 0;
	resetStringInfo(mark);
	appendBinaryStringInfo(mark, (const char *) &setlen, sizeof(setlen));
	window_set_write(mark, m);
	setlen = (uint32) mark->len - sizeof(setlen);
	memcpy(mark->data, &setlen, sizeof(setlen));
	appendBinaryStringInfo(mark, img, (int) imglen);
}

/* The parts of a firing's mark (fire_mark_write); false when it is empty. */
static bool
fire_mark_read(const StringInfo mark, const char **set, uint32 *setlen,
			   const char **img, uint32 *imglen)
{
	if (mark->len < (int) sizeof(uint32))
		return false;
	memcpy(setlen, mark->data, sizeof(uint32));
	if (*setlen > (uint32) mark->len - sizeof(uint32))
		elog(ERROR, "state_backend: a window firing's mark is damaged");
	*set = mark->data + sizeof(uint32);
	*img = *set + *setlen;
	*imglen = (uint32) mark->len - sizeof(uint32) - *setlen;
	return true;
}

/*
 * window_fire calls emit with the result of each window of the key that
 * ended by the firing's clock and changed since it last fired (its start
 * as shown: window_shown_start), and writes to the firing's mark what to
 * fold into the key once that is done (its marks, and the clock that
 * removes what is past its lateness).  revisit: the next instant a window of it
 * goes, as window_due_at tells it (DT_NOEND: none).  False when there is
 * nothing to do (an index entry gone stale).
 */
static bool
window_fire(TimerFire *tf)
{
	WindowRun  *run = window_run_kept(tf->st->desc);
	int64		lateness = run->call->desc.window_lateness;
	int64		clock = tf->clock;
	StringInfoData img;
	WindowSet	s;
	WindowSet	m;
	bool		any = false;

	initStringInfo(&img);
	if (!keyed_state_ops(tf->st->desc)->get(tf->st, tf->key, &img))
		return false;
	window_read_or_fail(run, img.data, img.len, &s);
	window_set_init(&m);
	m.marks = palloc(sizeof(WindowMark) * Max(s.n, 1));
	tf->revisit = DT_NOEND;
	for (int i = 0; i < s.n; i++)
	{
		WindowEntry *w = &s.w[i];

		if (w->end > clock)
			continue;
		if (w->flags & WINDOW_DIRTY)
		{
			bool		isnull;
			Datum		result = window_result(run, w->acc, w->acclen, run->result_type, &isnull);

			emit_window(tf, window_shown_start(w->start), w->end, result, isnull);
			m.marks[m.nmarks++] = (WindowMark) {w->start, w->end, w->version};
			any = true;
		}
		if (window_time_add(w->end, lateness) <= clock)
			any = true;
		else
			tf->revisit = Min(tf->revisit, window_due_at(window_time_add(w->end, lateness)));
	}
	m.fire_clock = clock;
	fire_mark_write(tf->mark, &m, img.data, img.len);
	return any;
}

/*
 * window_done folds a firing's marks into the key (in the caller's
 * transaction for a transactional state: its pending writes), and removes
 * a key left with no window, if nothing came meanwhile.  Returns whether a
 * window the firing saw due changed meanwhile and is due again (for a
 * transactional state, the commit of the change tells the timer queue).
 * A window whose emit kept failing stays, to be tried at its next value.
 */
/* Whether a window of s that fired by the mark m's clock changed since. */
static bool
fired_window_changed(const WindowSet *s, const WindowSet *m)
{
	for (int i = 0; i < s->n; i++)
		if ((s->w[i].flags & WINDOW_DIRTY) && s->w[i].end <= m->fire_clock)
			return true;
	return false;
}

static bool
window_done(TimerFire *tf, bool fired)
{
	const StateTarget *st = tf->st;
	const StateKey *key = tf->key;
	const char *mark;
	uint32		len;
	const char *seen;
	uint32		seenlen;
	WindowRun  *run;
	const KeyedStateBackend *ops = keyed_state_ops(st->desc);
	StringInfoData out;
	WindowSet	s;
	WindowSet	m;

	if (!fired || !fire_mark_read(tf->mark, &mark, &len, &seen, &seenlen))
		return false;
	run = window_run_kept(st->desc);
	initStringInfo(&out);
	if (st->desc->transactional)
	{
		/* A transaction's pending writes cannot remove a key only if unchanged. */
		ops->merge(st, key, mark, len, window_merge, window_fold_arg(run, true), NULL, &out);
		return false;
	}
	window_read_or_fail(run, mark, len, &m);

	/*
	 * The marks fold into the image the firing read, stored if the key
	 * still holds it (removed when no window is left); the marks carry no
	 * value, so the fold calls no reducer.
	 */
	if (seenlen > 0 && ops->replace != NULL)
	{
		window_merge(seen, seenlen, mark, len, &out, window_fold_arg(run, false));
		window_read_or_fail(run, out.data, out.len, &s);
		if (ops->replace(st, key, NULL, 0, seen, seenlen, s.n == 0 ? NULL : out.data, out.len))
			return fired_window_changed(&s, &m);
		resetStringInfo(&out);
	}

	/*
	 * The key changed meanwhile (or its image is not in the mark): the marks
	 * merge into what it holds, and a key left with no window goes only if
	 * nothing came since.
	 */
	ops->merge(st, key, mark, len, window_merge, window_fold_arg(run, false), NULL, &out);
	window_read_or_fail(run, out.data, out.len, &s);
	if (s.n == 0 && ops->replace != NULL)
		(void) ops->replace(st, key, NULL, 0, out.data, out.len, NULL, 0);
	return fired_window_changed(&s, &m);
}

/* A timer names a key to look at (by_key); window_fire looks itself (no present). */
const StateFireRoutine window_fire_routine = {
	"emit function", true, window_due_times, NULL, window_fire, window_done
};
