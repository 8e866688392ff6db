/*
 * common/types.c
 *		Names of state kinds and reducers, both ways.
 *
 * Backend names are in backend/keyed_backend.c, with the backends.
 */
#include "postgres.h"

#include "catalog/pg_type.h"

#include "common/types.h"

static const char *const kind_names[] = {
	[STATE_KIND_VALUE] = "value",
	[STATE_KIND_LIST] = "list",
	[STATE_KIND_MAP] = "map",
	[STATE_KIND_REDUCING] = "reducing",
	[STATE_KIND_OPERATOR_LIST] = "operator_list",
	[STATE_KIND_UNION_LIST] = "union_list",
	[STATE_KIND_BROADCAST] = "broadcast",
	[STATE_KIND_AGGREGATING] = "aggregating",
	[STATE_KIND_WINDOW] = "window",
};

static const char *const reducer_names[] = {
	[STATE_REDUCER_NONE] = NULL,
	[STATE_REDUCER_SUM] = "sum",
	[STATE_REDUCER_MIN] = "min",
	[STATE_REDUCER_MAX] = "max",
};

static const char *const ttl_update_names[] = {
	[STATE_TTL_ON_CREATE_AND_WRITE] = "on_create_and_write",
	[STATE_TTL_ON_READ_AND_WRITE] = "on_read_and_write",
};

static const char *const ttl_visibility_names[] = {
	[STATE_TTL_NEVER_RETURN_EXPIRED] = "never_return_expired",
	[STATE_TTL_RETURN_EXPIRED_IF_NOT_CLEANED_UP] = "return_expired_if_not_cleaned_up",
};

/* The name at index i of names[n]; unknown when there is no such index. */
static const char *
name_at(const char *const *names, int n, int i, const char *unknown)
{
	return i >= 0 && i < n ? names[i] : unknown;
}

/* The index of name in names[n], or -1. */
static int
name_index(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(name, names[i]) == 0)
			return i;
	return -1;
}

const char *
state_kind_name(StateKind kind)
{
	return name_at(kind_names, STATE_KIND_LAST + 1, (int) kind, "unknown");
}

/* What a state is called in the states view and messages: timers or its kind. */
const char *
state_desc_kind_name(const StateDesc *d)
{
	return state_desc_is_timers(d) ? "timers" : state_kind_name(d->kind);
}

/* state_kind_parse reads a kind name; false when it names none. */
bool
state_kind_parse(const char *name, StateKind *kind)
{
	int			k = name_index(kind_names, STATE_KIND_LAST + 1, name);

	if (k >= 0)
		*kind = (StateKind) k;
	return k >= 0;
}

/* state_reducer_name returns NULL for STATE_REDUCER_NONE. */
const char *
state_reducer_name(StateReducer reducer)
{
	return name_at(reducer_names, lengthof(reducer_names), (int) reducer, NULL);
}

/* state_reducer_parse reads a reducer name; STATE_REDUCER_NONE if none. */
StateReducer
state_reducer_parse(const char *name)
{
	for (int r = STATE_REDUCER_SUM; r < (int) lengthof(reducer_names); r++)
		if (strcmp(name, reducer_names[r]) == 0)
			return (StateReducer) r;
	return STATE_REDUCER_NONE;
}

const char *
state_ttl_update_name(StateTtlUpdate u)
{
	return name_at(ttl_update_names, lengthof(ttl_update_names), (int) u, "unknown");
}

bool
state_ttl_update_parse(const char *name, StateTtlUpdate *u)
{
	int			i = name_index(ttl_update_names, lengthof(ttl_update_names), name);

	if (i >= 0)
		*u = (StateTtlUpdate) i;
	return i >= 0;
}

const char *
state_ttl_visibility_name(StateTtlVisibility v)
{
	return name_at(ttl_visibility_names, lengthof(ttl_visibility_names), (int) v, "unknown");
}

bool
state_ttl_visibility_parse(const char *name, StateTtlVisibility *v)
{
	int			i = name_index(ttl_visibility_names, lengthof(ttl_visibility_names), name);

	if (i >= 0)
		*v = (StateTtlVisibility) i;
	return i >= 0;
}

/* A name field that ends within its NAMEDATALEN bytes. */
static bool
name_ok(const NameData *n)
{
	return memchr(NameStr(*n), '\0', NAMEDATALEN) != NULL;
}

/* A type's length as PostgreSQL could have it (none: InvalidOid). */
static bool
type_shape_ok(const StateType *t)
{
	if (!name_ok(&t->nspname) || !name_ok(&t->typname))
		return false;
	if (!OidIsValid(t->oid))
		return true;
	if (!(t->typlen > 0 || t->typlen == -1 || t->typlen == -2))
		return false;
	return !t->typbyval || t->typlen == 1 || t->typlen == 2 || t->typlen == 4 || t->typlen == 8;
}

/*
 * A window state has an assigner with its times, contents and an emit
 * function; no other state has any of them.
 */
static bool
window_desc_ok(const StateDesc *d)
{
	if (d->kind != STATE_KIND_WINDOW)
		return d->window_assigner == STATE_WINDOW_NONE && d->window_contents == 0 &&
			d->window_size == 0 && d->window_slide == 0 && d->window_gap == 0 &&
			d->window_lateness == 0;
	if (!state_desc_fires(d) || d->ttl > 0 || d->window_lateness < 0 ||
		d->window_lateness > WINDOW_MAX_TIME || d->window_size > WINDOW_MAX_TIME ||
		d->window_gap > WINDOW_MAX_TIME ||
		d->window_contents < STATE_WINDOW_REDUCE || d->window_contents > STATE_WINDOW_LIST)
		return false;
	switch ((StateWindowAssigner) d->window_assigner)
	{
		case STATE_WINDOW_TUMBLING:
			return d->window_size > 0 && d->window_slide == 0 && d->window_gap == 0;
		case STATE_WINDOW_SLIDING:
			return d->window_size > 0 && d->window_slide > 0 &&
				d->window_slide <= d->window_size && d->window_gap == 0 &&
				d->window_size / d->window_slide <= WINDOW_MAX_SLIDES;
		case STATE_WINDOW_SESSION:
			return d->window_gap > 0 && d->window_size == 0 && d->window_slide == 0;
		case STATE_WINDOW_NONE:
			break;
	}
	return false;
}

/*
 * watermark_desc_ok: watermarks from the data on event-time window and
 * timers states only, times within a window's, and a late function, ended,
 * on window states only, named by its signature whenever it has an OID (a
 * restore finds it again by the signature alone: an OID without one would
 * name any function of this server).
 */
static bool
watermark_desc_ok(const StateDesc *d)
{
	bool		event_time = d->timer_event_time && state_desc_fires(d);

	if (memchr(d->late_signature, '\0', sizeof(d->late_signature)) == NULL ||
		(d->late_signature[0] != '\0' && d->kind != STATE_KIND_WINDOW) ||
		OidIsValid(d->late_fn) != (d->late_signature[0] != '\0'))
		return false;
	/* A window state emits through a function or into a table, not both. */
	if (memchr(d->emit_table_name, '\0', sizeof(d->emit_table_name)) == NULL ||
		(d->emit_table_name[0] != '\0' &&
		 (d->kind != STATE_KIND_WINDOW || d->timer_signature[0] != '\0')))
		return false;
	if (!d->watermark_by_data)
		return d->watermark_lag == 0 && d->idle_timeout == 0;
	return event_time && d->watermark_lag >= 0 && d->watermark_lag <= WINDOW_MAX_TIME &&
		d->idle_timeout >= 0 && d->idle_timeout <= WINDOW_MAX_TIME;
}

/*
 * state_desc_problem is the one rule a descriptor must hold to, wherever
 * it comes from (built by create_state, read from a MANIFEST, a WAL record
 * or a backend's own storage): NULL when it holds, else what is wrong.
 * key_groups is the key-group count its range must lie in.
 */
const char *
state_desc_problem(const StateDesc *d, int key_groups)
{
	if ((int) d->kind < 0 || d->kind > STATE_KIND_LAST)
		return "an unknown kind";
	if ((int) d->reducer < STATE_REDUCER_NONE || d->reducer > STATE_REDUCER_MAX ||
		(d->kind == STATE_KIND_REDUCING ||
		 (d->kind == STATE_KIND_WINDOW && d->window_contents == STATE_WINDOW_REDUCE)) !=
		(d->reducer != STATE_REDUCER_NONE))
		return "a reducer where its kind has none, or none where it needs one";
	if (d->id == 0 || !name_ok(&d->name) || NameStr(d->name)[0] == '\0' ||
		!name_ok(&d->owner_name))
		return "no id or no name";
	if (d->ngrants < 0 || d->ngrants > STATE_MAX_GRANTS)
		return "more grants than a state has";
	for (int i = 0; i < 3; i++)
	{
		const StateType *t = &d->types[i];
		bool		wanted = i != STATE_TYPE_MAP_KEY || state_kind_layout(d->kind) == STATE_KIND_MAP;

		if ((wanted && !OidIsValid(t->oid)) || !type_shape_ok(t))
			return "not the types its kind needs";
	}
	/* Operator states are heap states with no TTL and no key-group range. */
	if (state_kind_is_operator(d->kind) && (d->ttl > 0 || d->range_parts > 0))
		return "a TTL or a key-group range on an operator state";
	/* An aggregating state names its aggregate and the type of its images. */
	if (!state_desc_agg_ok(d) || !type_shape_ok(&d->agg_type))
		return "an aggregate where its kind has none, or none where it needs one";
	if (!state_desc_ttl_ok(d))
		return "TTL settings this version does not know";
	if (!state_desc_range_ok(d, key_groups))
		return "a key-group range outside its key groups";
	/* A timers state is a map of instants, named handler and all. */
	if (memchr(d->timer_signature, '\0', sizeof(d->timer_signature)) == NULL ||
		(state_desc_fires(d) && d->kind != STATE_KIND_MAP && d->kind != STATE_KIND_WINDOW) ||
		(state_desc_is_timers(d) &&
		 (d->kind != STATE_KIND_MAP || d->ttl > 0 ||
		  d->types[STATE_TYPE_MAP_KEY].oid != TIMESTAMPTZOID)))
		return "timers that are not a map of instants, or a handler with no end";
	if (!window_desc_ok(d))
		return "a window state's assigner, contents or times this version does not know";
	if (!watermark_desc_ok(d))
		return "watermarks, a late function or an emit table where its kind has none, or times out of range";
	return NULL;
}
