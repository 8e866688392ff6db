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

#include "api/state_backend_api.h"

/* The sizes of descriptors stored before "logged", "ttl", "range_*", "agg*" came. */
#define STATE_DESC_SIZE_1_0		offsetof(StateDesc, logged)
#define STATE_DESC_SIZE_LOGGED	offsetof(StateDesc, ttl_update)
#define STATE_DESC_SIZE_TTL		offsetof(StateDesc, range_parts)
#define STATE_DESC_SIZE_RANGE	offsetof(StateDesc, aggregate)
/* That layout ended in padding to its int64's alignment, which was stored too. */
#define STATE_DESC_SIZE_RANGE_PADDED MAXALIGN(STATE_DESC_SIZE_RANGE)

/* Does a descriptor's stored size name a layout this version reads? */
static inline bool
state_desc_size_ok(Size size)
{
	return size == sizeof(StateDesc) || size == STATE_DESC_SIZE_RANGE ||
		size == STATE_DESC_SIZE_RANGE_PADDED || size == STATE_DESC_SIZE_TTL ||
		size == STATE_DESC_SIZE_LOGGED || size == STATE_DESC_SIZE_1_0;
}

/*
 * state_desc_read fills a descriptor from a stored one of a size that
 * state_desc_size_ok accepts; fields a layout lacks are zero, and its
 * padding is not read as the fields that came after it.
 */
static inline void
state_desc_read(StateDesc *d, const char *stored, Size size)
{
	memset(d, 0, sizeof(StateDesc));
	if (size == STATE_DESC_SIZE_RANGE_PADDED && size != sizeof(StateDesc))
		size = STATE_DESC_SIZE_RANGE;
	memcpy(d, stored, Min(size, sizeof(StateDesc)));
}

/* The type a state's value images hold. */
static inline Oid
state_desc_image_type(const StateDesc *d)
{
	return d->kind == STATE_KIND_AGGREGATING ? d->agg_type.oid : d->value_type;
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

	return (d->kind == STATE_KIND_AGGREGATING) == (named && OidIsValid(d->agg_type.oid));
}

extern const char *state_desc_problem(const StateDesc *d, int key_groups);

/* Names, for messages, views and the snapshot MANIFEST (common/types.c). */
extern const char *state_kind_name(StateKind kind);
extern bool state_kind_parse(const char *name, StateKind *kind);
extern const char *state_reducer_name(StateReducer reducer);
extern StateReducer state_reducer_parse(const char *name);
extern const char *state_ttl_update_name(StateTtlUpdate u);
extern bool state_ttl_update_parse(const char *name, StateTtlUpdate *u);
extern const char *state_ttl_visibility_name(StateTtlVisibility v);
extern bool state_ttl_visibility_parse(const char *name, StateTtlVisibility *v);

#endif							/* STATE_BACKEND_TYPES_H */
