/*
 * common/types.h
 *		The domain types every layer shares.  The state kinds, reducers,
 *		privileges and the per-state descriptor kept in the registry are
 *		part of the provider API (api/state_backend_api.h); here are the
 *		host's rules about them: stored layouts, checks and names.
 *
 * Which backends exist, and their ids, belong to backend/keyed_backend.h;
 * a descriptor only carries the id.  Lock numbers are in common/locks.h,
 * settings in common/settings.h.
 */
#ifndef STATE_BACKEND_TYPES_H
#define STATE_BACKEND_TYPES_H

#include "postgres.h"

#include "catalog/pg_type.h"
#include "datatype/timestamp.h"

#include "common/state_desc.h"

/* Descriptors as stored (WAL, RocksDB): format/desc_image.h. */

/*
 * The type a state's value images hold, for whatever moves them without
 * knowing the kind (canonical snapshots): a window state's are its own
 * layout (format/window_image.h), opaque bytes to everything else.
 */
static inline Oid
state_desc_image_type(const StateDesc *d)
{
	if (d->kind == STATE_KIND_WINDOW)
		return BYTEAOID;
	return d->kind == STATE_KIND_AGGREGATING ? d->agg_type.oid : d->types[STATE_TYPE_VALUE].oid;
}

/* Does a stored descriptor hold a key-group range of max_parallelism? */
static inline bool
state_desc_range_ok(const StateDesc *d, int max_parallelism)
{
	return d->range_parts == 0 ||
		(d->range_parts >= 1 && d->range_parts <= max_parallelism &&
		 d->range_first >= 0 && d->range_first <= d->range_last &&
		 d->range_last < max_parallelism);
}

/* Does the state hold key group kg on this server? */
static inline bool
state_desc_holds(const StateDesc *d, int kg)
{
	return d->range_parts == 0 || (kg >= d->range_first && kg <= d->range_last);
}

/* Are a stored descriptor's TTL settings ones this version knows? */
static inline bool
state_desc_ttl_ok(const StateDesc *d)
{
	return d->ttl >= 0 &&
		(d->ttl_update == STATE_TTL_ON_CREATE_AND_WRITE ||
		 d->ttl_update == STATE_TTL_ON_READ_AND_WRITE) &&
		(d->ttl_visibility == STATE_TTL_NEVER_RETURN_EXPIRED ||
		 d->ttl_visibility == STATE_TTL_RETURN_EXPIRED_IF_NOT_CLEANED_UP);
}

/* Does a stored descriptor name an aggregate exactly when it is aggregating? */
static inline bool
state_desc_agg_ok(const StateDesc *d)
{
	bool		named = d->agg_signature[0] != '\0' &&
		memchr(d->agg_signature, '\0', sizeof(d->agg_signature)) != NULL;

	bool		wanted = d->kind == STATE_KIND_AGGREGATING ||
		(d->kind == STATE_KIND_WINDOW && d->window_contents == STATE_WINDOW_AGGREGATE);

	return wanted == (named && OidIsValid(d->agg_type.oid));
}

/* The most windows a sliding window state puts one value in (size / slide). */
#define WINDOW_MAX_SLIDES	1000
/* The longest window, slide, gap or lateness: a century, in microseconds. */
#define WINDOW_MAX_TIME		(INT64CONST(100) * 366 * USECS_PER_DAY)

extern const char *state_desc_problem(const StateDesc *d, int key_groups);

/* Names, for messages, views and the snapshot MANIFEST (common/types.c). */
extern const char *state_kind_name(StateKind kind);
extern const char *state_desc_kind_name(const StateDesc *d);
extern bool state_kind_parse(const char *name, StateKind *kind);
extern const char *state_reducer_name(StateReducer reducer);
extern StateReducer state_reducer_parse(const char *name);
extern const char *state_ttl_update_name(StateTtlUpdate u);
extern bool state_ttl_update_parse(const char *name, StateTtlUpdate *u);
extern const char *state_ttl_visibility_name(StateTtlVisibility v);
extern bool state_ttl_visibility_parse(const char *name, StateTtlVisibility *v);

#endif							/* STATE_BACKEND_TYPES_H */
