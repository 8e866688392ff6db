/*
 * state_desc.h
 *		StateDesc, the host's whole descriptor of a state, and how the
 *		StateInfo a backend sees is drawn from it.
 *
 * Backends get StateInfo (api/state_backend_api.h): a descriptor's layout
 * is the host's to change between releases.
 */
#ifndef STATE_DESC_H
#define STATE_DESC_H

#include "api/state_backend_api.h"

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
 * StateDesc describes one named state of one database.  A backend sees
 * only the StateInfo drawn from it (state_info_of).
 */
typedef struct StateDesc
{
	uint32		id;
	Oid			dbid;
	NameData	name;
	StateKind	kind;
	int			backend;		/* the registered backend's id */
	StateReducer reducer;
	StateType	types[3];		/* key, value, map key (STATE_TYPE_*): the
								 * map key's oid is InvalidOid unless the
								 * kind is map */
	Oid			owner;
	NameData	owner_name;
	int			ngrants;
	StateGrant	grants[STATE_MAX_GRANTS];
	bool		logged;			/* changes go to WAL: log_change */
	StateTtlUpdate ttl_update;
	StateTtlVisibility ttl_visibility;
	int64		ttl;			/* time to live in microseconds; 0: none */

	/*
	 * The key groups this server holds of the state, after a restore of one
	 * part of several: range_parts is the number of parts, [range_first,
	 * range_last] the key groups.  0: every one.
	 */
	int32		range_parts;
	int32		range_first;
	int32		range_last;

	/*
	 * An aggregating state's aggregate (pg_aggregate.aggfnoid), its
	 * schema-qualified signature (how snapshots name it), and the type its
	 * images hold.
	 */
	Oid			aggregate;
	char		agg_signature[STATE_AGG_SIGNATURE_LEN];
	StateType	agg_type;

	/*
	 * Writes commit and roll back with the transaction: the host keeps them
	 * until the commit and applies them then through the backend's own
	 * operations, so a backend sees nothing new.
	 */
	bool		transactional;

	/*
	 * A timers state (Flink's timer service): a map, per key, of the
	 * instants its timers are due at (map key timestamptz, NULL values),
	 * fired by the host's timer worker through timer_handler(key,
	 * timestamptz), named in snapshots by its schema-qualified signature;
	 * due by the state's watermark (event time) or the clock.  A backend
	 * stores it as any map.  InvalidOid: not a timers state.
	 */
	Oid			timer_handler;
	char		timer_signature[STATE_AGG_SIGNATURE_LEN];
	bool		timer_event_time;

	/*
	 * A window state (kind window, Flink's WindowOperator): per key, its
	 * open windows and their contents, folded with the reducer, the
	 * aggregate or into a list; fired by the timer worker through its emit
	 * function (timer_handler above: key, window start, window end,
	 * result), by the watermark (timer_event_time) or the clock.  Times in
	 * microseconds.  A backend stores its images as any value's.
	 */
	uint8		window_assigner;	/* StateWindowAssigner */
	uint8		window_contents;	/* StateWindowContents */
	int64		window_size;		/* tumbling, sliding */
	int64		window_slide;		/* sliding */
	int64		window_gap;			/* session */
	int64		window_lateness;	/* allowed lateness */

	/*
	 * Watermarks from the data (window and event-time timers states): with
	 * watermark_by_data, each value or timer at event time t moves the
	 * watermark to t less watermark_lag (Flink's bounded out-of-orderness);
	 * after idle_timeout (0: never) with none, the watermark follows the
	 * clock from the last event time seen.  Microseconds.
	 */
	bool		watermark_by_data;
	int64		watermark_lag;
	int64		idle_timeout;

	/*
	 * A window state's late function (key, event time, value), called with
	 * each value dropped as late, in the caller's transaction, as the
	 * owner; named in snapshots by its signature.  InvalidOid: none.
	 */
	Oid			late_fn;
	char		late_signature[STATE_AGG_SIGNATURE_LEN];

	/*
	 * A window state's emit table, instead of an emit function: each fired
	 * window is a row (key, window start, window end, result) the timer
	 * worker inserts as the owner; named in snapshots by its qualified
	 * name.  InvalidOid: none.
	 */
	Oid			emit_table;
	char		emit_table_name[STATE_AGG_SIGNATURE_LEN];

	/*
	 * The descriptor's version: 1 at create_state, one more at each
	 * alter_state that changed the state (state.states shows it).
	 */
	uint32		version;

	/*
	 * The state this one replaced (alter_state), 0: none.  A start that
	 * finds both drops that one: a crash came between the change and its
	 * drop.
	 */
	uint32		replaces;

	/*
	 * While alter_state copies it with its writers going on, the move its
	 * writes log their keys to (backend/keyed_move.c); 0: none.  Never
	 * stored.
	 */
	uint8		moving;
} StateDesc;

typedef enum StateWindowAssigner
{
	STATE_WINDOW_NONE,
	STATE_WINDOW_TUMBLING,
	STATE_WINDOW_SLIDING,
	STATE_WINDOW_SESSION
} StateWindowAssigner;

typedef enum StateWindowContents
{
	STATE_WINDOW_REDUCE = 1,	/* the reducer's fold */
	STATE_WINDOW_AGGREGATE,		/* the aggregate's transition state */
	STATE_WINDOW_LIST			/* the values, a list image */
} StateWindowContents;

/* Is it a timers state (a map whose entries are timers)? */
static inline bool
state_desc_is_timers(const StateDesc *d)
{
	return d->timer_signature[0] != '\0' && d->kind == STATE_KIND_MAP;
}

/* Does the timer worker fire it: a timers state or a window state? */
static inline bool
state_desc_fires(const StateDesc *d)
{
	return d->timer_signature[0] != '\0' || d->emit_table_name[0] != '\0';
}
/* state_info_of fills what a backend sees of a state from its descriptor. */
static inline void
state_info_of(const StateDesc *d, StateInfo *info)
{
	info->id = d->id;
	info->kind = d->kind;
	info->layout = state_kind_layout(d->kind);
	info->name = d->name;
	info->logged = d->logged;
	info->ttl = d->ttl;
	info->ttl_visibility = d->ttl_visibility;
	info->key_type = d->types[STATE_TYPE_KEY].oid;
	info->value_type = d->types[STATE_TYPE_VALUE].oid;
}

/* state_target makes the target of operations on a state's slot. */
static inline StateTarget
state_target(const StateDesc *d, int slot)
{
	StateTarget st;

	state_info_of(d, &st.info);
	st.desc = d;
	st.slot = slot;
	return st;
}

#endif							/* STATE_DESC_H */
