/*
 * state_backend.h
 *		Shared definitions of the extension: state kinds, backends, the
 *		per-state descriptor kept in shared memory, and the locks.
 *
 * The descriptor registry itself is in registry.c, the heap hash table in
 * heap_backend.c, settings in guc.c.
 */
#ifndef STATE_BACKEND_H
#define STATE_BACKEND_H

#include "postgres.h"

#include "port/atomics.h"
#include "storage/lwlock.h"

/* Number of heap hash partitions, each with its own LWLock. */
#define HEAP_PARTITIONS			128

/* LWLocks of the "state_backend" tranche. */
#define LOCK_REGISTRY			HEAP_PARTITIONS
#define LOCK_AREA				(HEAP_PARTITIONS + 1)
#define LOCK_SNAPSHOT			(HEAP_PARTITIONS + 2)
#define STATE_BACKEND_NUM_LOCKS	(HEAP_PARTITIONS + 3)

typedef enum StateKind
{
	STATE_KIND_VALUE,
	STATE_KIND_LIST,
	STATE_KIND_MAP,
	STATE_KIND_REDUCING
} StateKind;

typedef enum StateBackendId
{
	STATE_BACKEND_MEMORY,
	STATE_BACKEND_FILESYSTEM,
	STATE_BACKEND_ROCKSDB
} StateBackendId;

typedef enum StateReducer
{
	STATE_REDUCER_NONE,
	STATE_REDUCER_SUM,
	STATE_REDUCER_MIN,
	STATE_REDUCER_MAX
} StateReducer;

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
	StateBackendId backend;
	StateReducer reducer;
	Oid			key_type;
	Oid			value_type;
	Oid			map_key_type;	/* InvalidOid unless kind is map */
	StateType	types[3];		/* key, value, map key: see state_type_fill */
	Oid			owner;
	NameData	owner_name;
	int			ngrants;
	StateGrant	grants[STATE_MAX_GRANTS];
} StateDesc;

/* Names, for messages and the states view. */
extern const char *state_kind_name(StateKind kind);
extern const char *state_backend_name(StateBackendId backend);
extern StateBackendId state_backend_parse(const char *name);
extern const char *state_reducer_name(StateReducer reducer);

/* Indexes of StateDesc.types */
#define STATE_TYPE_KEY		0
#define STATE_TYPE_VALUE	1
#define STATE_TYPE_MAP_KEY	2

/* state_backend.c */
extern LWLock *state_backend_lock(int n);
extern void state_backend_check_loaded(void);

/* guc.c */
extern int	state_backend_default_backend;
extern int	state_backend_memory_limit_kb;
extern int	state_backend_max_parallelism;
extern int	state_backend_max_states;
extern char *state_backend_checkpoint_dir;
extern int	state_backend_checkpoint_interval_s;
extern int	state_backend_checkpoints_retained;
extern bool state_backend_restore_on_start;
extern int	state_backend_max_state_size_kb;
extern void state_backend_define_gucs(void);

/* worker.c */
extern void state_worker_register(void);
extern bool state_worker_serve(int max_rounds);

#endif							/* STATE_BACKEND_H */
