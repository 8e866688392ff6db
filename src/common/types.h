/*
 * common/types.h
 *		The domain types every layer shares: state kinds, reducers, the
 *		per-state descriptor kept in the registry, and privileges.
 *
 * Which backends exist, and their ids, belong to backend/keyed_backend.h;
 * a descriptor only carries the id.  Lock numbers are in common/locks.h,
 * settings in common/settings.h.
 */
#ifndef STATE_BACKEND_TYPES_H
#define STATE_BACKEND_TYPES_H

#include "postgres.h"

typedef enum StateKind
{
	STATE_KIND_VALUE,
	STATE_KIND_LIST,
	STATE_KIND_MAP,
	STATE_KIND_REDUCING,
	/* Operator state (Flink's OperatorStateBackend): no keys, heap only. */
	STATE_KIND_OPERATOR_LIST,	/* split evenly when a snapshot is split */
	STATE_KIND_UNION_LIST,		/* every part gets all of it */
	STATE_KIND_BROADCAST,		/* a map; every part gets all of it */
	/* Keyed again: a PostgreSQL aggregate's transition state per key. */
	STATE_KIND_AGGREGATING
} StateKind;

#define STATE_KIND_LAST		STATE_KIND_AGGREGATING

/* Is it operator state, which has no keys? */
static inline bool
state_kind_is_operator(StateKind kind)
{
	return kind >= STATE_KIND_OPERATOR_LIST && kind <= STATE_KIND_BROADCAST;
}

/*
 * The kind whose image layout a kind's state has: operator lists are kept
 * as a list under one key, broadcast state as a map (format/records.h);
 * an aggregating state's image is one value, as a reducing state's.
 */
static inline StateKind
state_kind_layout(StateKind kind)
{
	if (kind == STATE_KIND_OPERATOR_LIST || kind == STATE_KIND_UNION_LIST)
		return STATE_KIND_LIST;
	if (kind == STATE_KIND_BROADCAST)
		return STATE_KIND_MAP;
	return kind;
}

typedef enum StateReducer
{
	STATE_REDUCER_NONE,
	STATE_REDUCER_SUM,
	STATE_REDUCER_MIN,
	STATE_REDUCER_MAX
} StateReducer;

/*
 * State TTL (Flink's StateTtlConfig): what renews a value's time to live,
 * and whether a read may return a value that expired but is still stored.
 */
typedef enum StateTtlUpdate
{
	STATE_TTL_ON_CREATE_AND_WRITE,
	STATE_TTL_ON_READ_AND_WRITE
} StateTtlUpdate;

typedef enum StateTtlVisibility
{
	STATE_TTL_NEVER_RETURN_EXPIRED,
	STATE_TTL_RETURN_EXPIRED_IF_NOT_CLEANED_UP
} StateTtlVisibility;

/* Privileges a state's owner can grant to other roles. */
#define STATE_PRIV_READ		0x01
#define STATE_PRIV_WRITE	0x02

#define STATE_MAX_GRANTS	16

typedef struct StateGrant
{
	Oid			role;
	uint8		privs;
} StateGrant;

/*
 * A type as a state declares it: its OID in this cluster, and what a
 * snapshot records to find it again elsewhere and to check that its stored
 * form still matches.
 */
typedef struct StateType
{
	Oid			oid;
	NameData	nspname;
	NameData	typname;
	int16		typlen;
	bool		typbyval;
} StateType;

/* Indexes of StateDesc.types */
#define STATE_TYPE_KEY		0
#define STATE_TYPE_VALUE	1
#define STATE_TYPE_MAP_KEY	2

/* Room for an aggregate's schema-qualified signature, "nsp.name(type)". */
#define STATE_AGG_SIGNATURE_LEN	256

/*
 * StateDesc describes one named state of one database.  It lives in a slot
 * of the shared registry; backends work on a local copy and reach the slot's
 * counters through its index.  A slot whose id is 0 is free.  State ids are
 * never reused, so an id alone identifies a state across databases.
 */
typedef struct StateDesc
{
	uint32		id;
	Oid			dbid;
	NameData	name;
	StateKind	kind;
	int			backend;		/* a StateBackendId: backend/keyed_backend.h */
	StateReducer reducer;
	Oid			key_type;
	Oid			value_type;
	Oid			map_key_type;	/* InvalidOid unless kind is map */
	StateType	types[3];		/* key, value, map key (STATE_TYPE_*) */
	Oid			owner;
	NameData	owner_name;
	int			ngrants;
	StateGrant	grants[STATE_MAX_GRANTS];
	bool		logged;			/* changes go to WAL (format/state_wal.h) */
	StateTtlUpdate ttl_update;
	StateTtlVisibility ttl_visibility;
	int64		ttl;			/* time to live in microseconds; 0: none */

	/*
	 * The key groups this server holds of the state, after a restore of one
	 * part of several (snapshot/rescale.c): range_parts is the number of
	 * parts, [range_first, range_last] the key groups.  0: every one.
	 */
	int32		range_parts;
	int32		range_first;
	int32		range_last;

	/*
	 * An aggregating state's aggregate (pg_aggregate.aggfnoid), its
	 * schema-qualified signature (how snapshots name it), and the type its
	 * images hold: the transition type, or bytea when that is internal and
	 * goes through the aggregate's serial functions (common/aggregate.c).
	 */
	Oid			aggregate;
	char		agg_signature[STATE_AGG_SIGNATURE_LEN];
	StateType	agg_type;
} StateDesc;

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
