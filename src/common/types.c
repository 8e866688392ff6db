/*
 * common/types.c
 *		Names of state kinds and reducers, both ways.
 *
 * Backend names are in backend/keyed_backend.c, with the backends.
 */
#include "postgres.h"

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
};

static const char *const reducer_names[] = {
	[STATE_REDUCER_NONE] = NULL,
	[STATE_REDUCER_SUM] = "sum",
	[STATE_REDUCER_MIN] = "min",
	[STATE_REDUCER_MAX] = "max",
};

const char *
state_kind_name(StateKind kind)
{
	if ((int) kind < 0 || (int) kind > STATE_KIND_LAST)
		return "unknown";
	return kind_names[kind];
}

/* state_kind_parse reads a kind name; false when it names none. */
bool
state_kind_parse(const char *name, StateKind *kind)
{
	for (int k = 0; k <= STATE_KIND_LAST; k++)
		if (strcmp(name, kind_names[k]) == 0)
		{
			*kind = (StateKind) k;
			return true;
		}
	return false;
}

/* state_reducer_name returns NULL for STATE_REDUCER_NONE. */
const char *
state_reducer_name(StateReducer reducer)
{
	if ((int) reducer < 0 || (int) reducer >= (int) lengthof(reducer_names))
		return NULL;
	return reducer_names[reducer];
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

static const char *const ttl_update_names[] = {
	[STATE_TTL_ON_CREATE_AND_WRITE] = "on_create_and_write",
	[STATE_TTL_ON_READ_AND_WRITE] = "on_read_and_write",
};

static const char *const ttl_visibility_names[] = {
	[STATE_TTL_NEVER_RETURN_EXPIRED] = "never_return_expired",
	[STATE_TTL_RETURN_EXPIRED_IF_NOT_CLEANED_UP] = "return_expired_if_not_cleaned_up",
};

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
state_ttl_update_name(StateTtlUpdate u)
{
	if ((int) u < 0 || (int) u >= (int) lengthof(ttl_update_names))
		return "unknown";
	return ttl_update_names[u];
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
	if ((int) v < 0 || (int) v >= (int) lengthof(ttl_visibility_names))
		return "unknown";
	return ttl_visibility_names[v];
}

bool
state_ttl_visibility_parse(const char *name, StateTtlVisibility *v)
{
	int			i = name_index(ttl_visibility_names, lengthof(ttl_visibility_names), name);

	if (i >= 0)
		*v = (StateTtlVisibility) i;
	return i >= 0;
}
