/*
 * sql/sql_feed.c
 *		state.feed: a trigger function that folds the rows an INSERT adds to
 *		a table into a keyed state, in C, in the inserting transaction.
 *
 * Each row's columns become the arguments of the body of the function that
 * writes the state's kind (value_set, list_add, map_put, reduce, aggregate,
 * window_add, timer_register: sql_value.c and its siblings), resolved and
 * checked as those functions do (sql_common.c: the same type rules, the
 * same privilege checks, as the user whose statement fired the trigger).
 * This file finds the trigger's columns, checks them once per statement,
 * and walks the rows: a statement trigger's transition table, or a row
 * trigger's row.
 */
#include "postgres.h"

#include "access/tupdesc.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "parser/parse_coerce.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/tuplestore.h"

#include "catalog/stats.h"
#include "sql/sql_common.h"
#include "sql/sql_window.h"

PG_FUNCTION_INFO_V1(state_feed);

/* What a column of the table gives the state, in the order of the arguments. */
typedef enum FeedRole
{
	FEED_KEY,
	FEED_TIME,
	FEED_MAP_KEY,
	FEED_VALUE,
	FEED_ROLES
} FeedRole;

/*
 * A trigger's feed, kept in its FmgrInfo for the statement: the state's
 * call, and the columns as checked against the table and the state at the
 * registry version it was checked at.
 */
typedef struct Feed
{
	StateCall  *call;
	uint64		checked;		/* call->version the columns were checked at */
	Oid			relid;			/* the table they were found in */
	AttrNumber	attno[FEED_ROLES];	/* 0: the state takes none */
	Oid			type[FEED_ROLES];
	/* what folds a value into the kinds that take a value alone */
	void		(*value_body) (StateCall *call, const StateArg *value);
	Coercion	time_coerce;	/* the time column to timestamptz */
	TypeCodec	time_codec;
	MemoryContext rowcxt;		/* one row's work, reset before the next */
} Feed;

/* The columns a state of desc's kind takes after the key, in order. */
static int
feed_roles(const StateDesc *d, FeedRole *roles)
{
	int			n = 0;

	if (state_desc_is_timers(d))
		roles[n++] = FEED_TIME;
	else if (d->kind == STATE_KIND_WINDOW)
	{
		if (d->timer_event_time)
			roles[n++] = FEED_TIME;
		roles[n++] = FEED_VALUE;
	}
	else
	{
		if (d->kind == STATE_KIND_MAP)
			roles[n++] = FEED_MAP_KEY;
		roles[n++] = FEED_VALUE;
	}
	return n;
}

/* The arguments after the state's name, as a hint spells them. */
static const char *
feed_usage(const StateDesc *d)
{
	static const char *const names[FEED_ROLES] = {
		"key_column", "time_column", "map_key_column", "value_column"
	};
	FeedRole	roles[FEED_ROLES];
	int			n = feed_roles(d, roles);
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfoString(&s, names[FEED_KEY]);
	for (int i = 0; i < n; i++)
		appendStringInfo(&s, ", %s", names[roles[i]]);
	return s.data;
}

/* The trigger's table, schema-qualified and quoted. */
static const char *
feed_table_name(Relation rel)
{
	return quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
									  RelationGetRelationName(rel));
}

/*
 * The CREATE TRIGGER that feeds the trigger's state from its table: a
 * statement trigger with a transition table.
 */
static const char *
feed_create_trigger(const TriggerData *td)
{
	const Trigger *tg = td->tg_trigger;
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfo(&s, "CREATE TRIGGER %s AFTER INSERT ON %s REFERENCING NEW TABLE AS new_rows "
					 "FOR EACH STATEMENT EXECUTE FUNCTION state.feed(",
					 quote_identifier(tg->tgname), feed_table_name(td->tg_relation));
	for (int i = 0; i < tg->tgnargs; i++)
		appendStringInfo(&s, "%s%s", i > 0 ? ", " : "", quote_literal_cstr(tg->tgargs[i]));
	appendStringInfoChar(&s, ')');
	return s.data;
}

/* A trigger defined so that state.feed cannot run in it: why, and the one that works. */
static void
feed_refuse_trigger(const TriggerData *td, const char *problem, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
			 errmsg("trigger \"%s\" on table \"%s\" cannot run state.feed: %s",
					td->tg_trigger->tgname, RelationGetRelationName(td->tg_relation), problem),
			 errdetail("%s", detail),
			 errhint("%s", feed_create_trigger(td))));
}

/*
 * feed_check_trigger refuses a firing feed cannot take: not by the
 * trigger manager, for another event than INSERT alone, INSTEAD OF or
 * BEFORE, or a statement trigger without a transition table of the new
 * rows.
 */
static TriggerData *
feed_check_trigger(FunctionCallInfo fcinfo)
{
	TriggerData *td;
	int16		type;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("state.feed was not called by the trigger manager"),
				 errhint("Use it in CREATE TRIGGER ... AFTER INSERT ... EXECUTE FUNCTION state.feed(...).")));
	td = (TriggerData *) fcinfo->context;
	type = td->tg_trigger->tgtype;
	if (!TRIGGER_FOR_INSERT(type) || TRIGGER_FOR_UPDATE(type) || TRIGGER_FOR_DELETE(type) ||
		TRIGGER_FOR_TRUNCATE(type) || TRIGGER_FOR_INSTEAD(type))
		feed_refuse_trigger(td, "it does not fire after or before INSERT alone",
							"A feed folds the rows a statement inserts into a state; it has nothing to do with updates, deletes or truncations, or instead of an insert.");
	/*
	 * Before the row is stored, what becomes of it is not known yet: a later
	 * BEFORE trigger may change or skip it, ON CONFLICT may not insert it,
	 * a constraint may refuse it.  Only AFTER triggers see what the table
	 * took.
	 */
	if (TRIGGER_FIRED_BEFORE(td->tg_event))
		feed_refuse_trigger(td, "it fires before the row is stored",
							"A feed folds only the rows the table took: use AFTER INSERT ... FOR EACH ROW, or AFTER INSERT ... REFERENCING NEW TABLE AS n FOR EACH STATEMENT.");
	if (!TRIGGER_FIRED_FOR_ROW(td->tg_event) && td->tg_newtable == NULL)
		feed_refuse_trigger(td, "it is a statement trigger without a transition table of the new rows",
							"A statement trigger sees the inserted rows only through REFERENCING NEW TABLE.");
	return td;
}

/* The state's feed of this trigger, made at its first firing in the statement. */
static Feed *
feed_of(FunctionCallInfo fcinfo)
{
	FmgrInfo   *flinfo = fcinfo->flinfo;
	Feed	   *feed = flinfo->fn_extra;

	if (feed != NULL)
		return feed;
	feed = MemoryContextAllocZero(flinfo->fn_mcxt, sizeof(Feed));
	feed->call = state_call_new(flinfo->fn_mcxt);
	feed->rowcxt = AllocSetContextCreate(flinfo->fn_mcxt, "state_backend feed row",
										 ALLOCSET_DEFAULT_SIZES);
	flinfo->fn_extra = feed;
	return feed;
}

/* The number of a column of the table by its name; undefined_column if none. */
static AttrNumber
feed_column(Relation rel, const char *name)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return att->attnum;
	}
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("column \"%s\" of relation \"%s\" does not exist",
					name, RelationGetRelationName(rel)),
			 errhint("The arguments of state.feed after the state's name are column names of the trigger's table, as they are spelled in its definition.")));
	return InvalidAttrNumber;	/* keep the compiler quiet */
}

/*
 * feed_check_columns finds the trigger's columns in its table and checks
 * their number and types against the state: a column of the key, map key
 * or value must be of a type the matching function takes (the declared
 * type, text, or one with an implicit cast to it: state_call_accepts_type),
 * a time column timestamptz or a type with an implicit cast to it.
 */
static void
feed_check_columns(Feed *feed, TriggerData *td)
{
	static const char *const what[FEED_ROLES] = {
		"a key", "an event time", "a map key", "a value"
	};
	static const StateArgRole arg_role[FEED_ROLES] = {
		ARG_KEY, ARG_KEY, ARG_MAP_KEY, ARG_VALUE
	};
	StateCall  *call = feed->call;
	const Trigger *tg = td->tg_trigger;
	Relation	rel = td->tg_relation;
	FeedRole	roles[FEED_ROLES + 1];
	int			n;

	roles[0] = FEED_KEY;
	n = 1 + feed_roles(&call->desc, roles + 1);
	if (tg->tgnargs != n + 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("state.feed of %s state \"%s\" takes %d arguments, not %d",
						state_desc_kind_name(&call->desc), NameStr(call->desc.name),
						n + 1, tg->tgnargs),
				 errdetail("Trigger \"%s\" on table \"%s\" passes %d.", tg->tgname,
						   RelationGetRelationName(rel), tg->tgnargs),
				 errhint("Pass state.feed(%s, %s).", quote_literal_cstr(NameStr(call->desc.name)),
						 feed_usage(&call->desc))));
	if (call->desc.kind == STATE_KIND_AGGREGATING)
		sql_aggregate_check_args(call, 0);
	feed->value_body = call->desc.kind == STATE_KIND_VALUE ? sql_value_set :
		call->desc.kind == STATE_KIND_LIST ? sql_list_add_arg :
		call->desc.kind == STATE_KIND_REDUCING ? sql_reduce_arg : sql_aggregate_arg;

	memset(feed->attno, 0, sizeof(feed->attno));
	for (int i = 0; i < n; i++)
	{
		FeedRole	r = roles[i];
		const char *name = tg->tgargs[i + 1];
		AttrNumber	attno = feed_column(rel, name);
		Oid			type = TupleDescAttr(RelationGetDescr(rel), attno - 1)->atttypid;
		Oid			want;
		bool		ok;

		if (r == FEED_TIME)
		{
			want = TIMESTAMPTZOID;
			ok = can_coerce_type(1, &type, &want, COERCION_IMPLICIT);
		}
		else
		{
			want = call->codecs[arg_role[r]].typid;
			ok = state_call_accepts_type(type, want);
		}
		if (!ok)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of relation \"%s\" is of type %s, but state \"%s\" takes %s of type %s",
							name, RelationGetRelationName(rel), format_type_be(type),
							NameStr(call->desc.name),
							r == FEED_TIME && state_desc_is_timers(&call->desc) ?
							"a timer's instant" : what[r], format_type_be(want)),
					 errhint("Feed a column of type %s, or one with an implicit cast to it%s.",
							 format_type_be(want), r == FEED_TIME ? "" : ", or text")));
		feed->attno[r] = attno;
		feed->type[r] = type;
	}
	memset(&feed->time_coerce, 0, sizeof(feed->time_coerce));
	codec_init(&feed->time_codec, TIMESTAMPTZOID, call->mcxt);
	feed->relid = RelationGetRelid(rel);
	feed->checked = call->version;
}

/*
 * feed_begin resolves the trigger's state as the function that writes its
 * kind resolves it, and checks the current user's privileges on it as that
 * function does; the columns are checked at the first firing, and again
 * when the registry changed since.
 */
static StateCall *
feed_begin(Feed *feed, TriggerData *td)
{
	StateCall  *call = feed->call;
	const Trigger *tg = td->tg_trigger;
	const StateDesc *d = &call->desc;
	int			kind;
	uint8		privs = STATE_PRIV_WRITE;

	if (tg->tgnargs < 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("state.feed takes a state's name and a key column, then the columns its kind takes"),
				 errdetail("Trigger \"%s\" on table \"%s\" passes %d argument%s.", tg->tgname,
						   RelationGetRelationName(td->tg_relation), tg->tgnargs,
						   tg->tgnargs == 1 ? "" : "s"),
				 errhint("Pass state.feed('state_name', key_column [, time_column] [, value_column | map_key_column, value_column]).")));
	state_call_check_server();
	/* The kind first, then the kind's function's own checks. */
	state_call_resolve(call, tg->tgargs[0], KEYED_KIND, 0);
	kind = d->kind;
	if (state_desc_is_timers(d))
		kind = TIMERS_KIND;
	if (d->kind == STATE_KIND_REDUCING || d->kind == STATE_KIND_AGGREGATING ||
		d->kind == STATE_KIND_WINDOW)
		privs |= STATE_PRIV_READ;
	state_call_resolve(call, tg->tgargs[0], kind, privs);
	if (feed->checked != call->version || feed->relid != RelationGetRelid(td->tg_relation))
		feed_check_columns(feed, td);
	return call;
}

/* A column of the row, as an argument of the state's function. */
static void
feed_arg(Feed *feed, TupleTableSlot *slot, FeedRole r, StateArg *arg)
{
	arg->isnull = true;
	arg->value = (Datum) 0;
	arg->type = InvalidOid;
	if (feed->attno[r] == 0)
		return;
	arg->value = slot_getattr(slot, feed->attno[r], &arg->isnull);
	if (arg->isnull)
		return;
	arg->type = feed->type[r];
	if (r == FEED_TIME && arg->type != TIMESTAMPTZOID)
	{
		arg->value = state_call_coerce_arg(feed->call, &feed->time_coerce, &feed->time_codec,
										   NULL, arg->value, arg->type, "an event time");
		arg->type = TIMESTAMPTZOID;
	}
}

/*
 * feed_row folds one row into the state, as the function that writes its
 * kind would with the row's columns as arguments; its work is done in the
 * feed's row context.
 */
static void
feed_row(Feed *feed, TupleTableSlot *slot, WindowBatch *batch)
{
	StateCall  *call = feed->call;
	StateArg	args[FEED_ROLES];
	MemoryContext old;

	MemoryContextReset(feed->rowcxt);
	old = MemoryContextSwitchTo(feed->rowcxt);
	for (int r = 0; r < FEED_ROLES; r++)
		feed_arg(feed, slot, (FeedRole) r, &args[r]);
	state_call_key_arg(call, &args[FEED_KEY]);
	if (batch != NULL)
		sql_window_batch_add(batch, &args[FEED_TIME], &args[FEED_VALUE]);
	else if (state_desc_is_timers(&call->desc))
		sql_timer_register_arg(call, &args[FEED_TIME]);
	else if (call->desc.kind == STATE_KIND_MAP)
		sql_map_put_arg(call, &args[FEED_MAP_KEY], &args[FEED_VALUE]);
	else if (call->desc.kind == STATE_KIND_WINDOW)
		sql_window_add_arg(call, &args[FEED_TIME], &args[FEED_VALUE]);
	else
		feed->value_body(call, &args[FEED_VALUE]);
	MemoryContextSwitchTo(old);
}

/*
 * feed_new_rows folds every row of a statement trigger's transition table,
 * read through a read pointer of its own (other triggers read it too);
 * returns how many.  A window state takes them in batches (sql_window.c):
 * each key's values folded together, then one merge per key.
 */
static uint64
feed_new_rows(Feed *feed, TriggerData *td)
{
	Tuplestorestate *rows = td->tg_newtable;
	TupleTableSlot *slot = MakeSingleTupleTableSlot(RelationGetDescr(td->tg_relation),
													&TTSOpsMinimalTuple);
	WindowBatch *batch = NULL;
	uint64		n = 0;

	if (feed->call->desc.kind == STATE_KIND_WINDOW)
		batch = sql_window_batch_begin(feed->call);
	tuplestore_select_read_pointer(rows, tuplestore_alloc_read_pointer(rows, EXEC_FLAG_REWIND));
	tuplestore_rescan(rows);
	while (tuplestore_gettupleslot(rows, true, false, slot))
	{
		CHECK_FOR_INTERRUPTS();
		feed_row(feed, slot, batch);
		n++;
	}
	if (batch != NULL)
		sql_window_batch_end(batch);
	ExecDropSingleTupleTableSlot(slot);
	return n;
}

/*
 * state.feed(state_name, key_column [, time_column] [, value_column |
 * map_key_column, value_column]): a trigger function that folds the rows
 * an INSERT adds into the state, as a statement trigger with a transition
 * table (AFTER INSERT ... REFERENCING NEW TABLE ... FOR EACH STATEMENT) or
 * as a row trigger (AFTER INSERT ... FOR EACH ROW).
 */
Datum
state_feed(PG_FUNCTION_ARGS)
{
	TriggerData *td = feed_check_trigger(fcinfo);
	Feed	   *feed = feed_of(fcinfo);
	StateCall  *call = feed_begin(feed, td);
	uint64		n;

	if (TRIGGER_FIRED_FOR_ROW(td->tg_event))
	{
		feed_row(feed, td->tg_trigslot, NULL);
		n = 1;
	}
	else
		n = feed_new_rows(feed, td);
	MemoryContextReset(feed->rowcxt);
	state_stats_count(call->target.slot, STATE_STAT_WRITES, n);
	return PointerGetDatum(NULL);
}
