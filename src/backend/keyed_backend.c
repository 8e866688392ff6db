/*
 * backend/keyed_backend.c
 *		The backends a state can live in: their ids, names, and the
 *		KeyedStateBackend implementation behind each.
 *
 * The implementations themselves are in heap_backend.c (memory and
 * filesystem, which differ only in where snapshots go) and rocksdb/; the
 * TTL layer over either is ttl_state.c.
 */
#include "postgres.h"

#include "backend/keyed_backend.h"
#include "common/key_group.h"
#include "common/settings.h"

typedef struct BackendInfo
{
	const char *name;
	const KeyedStateBackend *impl;
	bool		memory_snapshots;	/* snapshots may be kept in shared memory */
	bool		shared_memory;	/* its states live in shared memory */
} BackendInfo;

static const BackendInfo backends[STATE_BACKEND_COUNT] = {
	[STATE_BACKEND_MEMORY] = {"memory", &heap_keyed_backend, true, true},
	[STATE_BACKEND_FILESYSTEM] = {"filesystem", &heap_keyed_backend, false, true},
	[STATE_BACKEND_ROCKSDB] = {"rocksdb", &rocks_keyed_backend, true, false},
};

/*
 * Every implementation once, in the order the snapshot driver cuts them:
 * rocksdb freezes its states in "prepare" and stays still until the heap's
 * instant, which is last.
 */
static const KeyedStateBackend *const implementations[] = {
	&rocks_keyed_backend,
	&heap_keyed_backend,
};

/* The values of state_backend.backend; "jobmanager" is Flink's "memory". */
const struct config_enum_entry keyed_backend_options[] = {
	{"memory", STATE_BACKEND_MEMORY, false},
	{"jobmanager", STATE_BACKEND_MEMORY, true},
	{"filesystem", STATE_BACKEND_FILESYSTEM, false},
	{"rocksdb", STATE_BACKEND_ROCKSDB, false},
	{NULL, 0, false}
};

/*
 * state_key_set fills a key from its image: its hash and its key group
 * among state_backend.max_parallelism, as every caller of the interface
 * passes them.
 */
void
state_key_set(StateKey *key, const char *data, uint32 len)
{
	key->data = data;
	key->len = len;
	key->hash = key_image_hash(data, len);
	key->key_group = (uint16) key_group_for_hash(key->hash, state_backend_max_parallelism);
}

/*
 * keyed_backend_by_id returns the implementation behind a backend id: what
 * stores a state's images as they are (with their deadlines, for a state
 * with a TTL).  Restores, replays and snapshots move these.
 */
const KeyedStateBackend *
keyed_backend_by_id(int backend)
{
	if (backend < 0 || backend >= STATE_BACKEND_COUNT)
		elog(ERROR, "state_backend: unknown backend %d", backend);
	return backends[backend].impl;
}

/*
 * keyed_state_ops returns what a state's operations go through: its
 * backend, or for a state with a TTL the TTL layer over it (ttl_state.c).
 * Images pass below it with their deadlines: what restores, replays and
 * snapshots move is the backend's own (keyed_backend_by_id).
 */
const KeyedStateBackend *
keyed_state_ops(const StateDesc *desc)
{
	return desc->ttl > 0 ? &ttl_keyed_backend : keyed_backend_by_id(desc->backend);
}

/*
 * keyed_backend_kept_data: whether the states of a backend came back from
 * its own storage at this start (KeyedStateBackend.kept_data).
 */
bool
keyed_backend_kept_data(int backend)
{
	const KeyedStateBackend *b = keyed_backend_by_id(backend);

	return b->kept_data != NULL && b->kept_data();
}

/* keyed_backend_all returns every implementation once; *n gets how many. */
const KeyedStateBackend *const *
keyed_backend_all(int *n)
{
	*n = lengthof(implementations);
	return implementations;
}

const char *
keyed_backend_name(int backend)
{
	if (backend < 0 || backend >= STATE_BACKEND_COUNT)
		return "unknown";
	return backends[backend].name;
}

/* keyed_backend_lookup reads a backend name; false when it names none. */
bool
keyed_backend_lookup(const char *name, int *backend)
{
	for (const struct config_enum_entry *o = keyed_backend_options; o->name; o++)
		if (strcmp(name, o->name) == 0)
		{
			*backend = o->val;
			return true;
		}
	return false;
}

/*
 * keyed_backend_parse reads a backend name (Flink's "jobmanager" is the
 * memory backend), or raises invalid_parameter_value.
 */
int
keyed_backend_parse(const char *name)
{
	int			backend;

	if (!keyed_backend_lookup(name, &backend))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown state backend \"%s\"", name),
				 errhint("Valid backends are memory (or jobmanager), filesystem and rocksdb.")));
	return backend;
}

/* Can a state of this backend be in a snapshot kept in shared memory? */
bool
keyed_backend_memory_snapshots(int backend)
{
	return backend >= 0 && backend < STATE_BACKEND_COUNT &&
		backends[backend].memory_snapshots;
}

/*
 * keyed_backend_operator_backend is where an operator state asked for in
 * a backend lives: operator state is always in shared memory, as Flink's
 * DefaultOperatorStateBackend is a heap backend whatever the keyed one is.
 */
int
keyed_backend_operator_backend(int backend)
{
	if (backend >= 0 && backend < STATE_BACKEND_COUNT && backends[backend].shared_memory)
		return backend;
	return STATE_BACKEND_MEMORY;
}

/*
 * keyed_backend_flush_all waits until every write this session made, in
 * every backend, is applied; the error of one that failed is raised.
 */
void
keyed_backend_flush_all(void)
{
	for (int i = 0; i < lengthof(implementations); i++)
		if (implementations[i]->flush)
			implementations[i]->flush();
}

/*
 * The merges whose fold runs in this process, innermost last.  A fold is
 * PostgreSQL code and may call state functions; one that merges into the
 * very key it folds would leave the outer merge folding again forever (the
 * key changed under it each time), so it is refused.
 */
#define MAX_NESTED_FOLDS	16

typedef struct Folding
{
	uint32		state_id;
	const StateKey *key;
} Folding;

static Folding folding[MAX_NESTED_FOLDS];
static int	nfolding = 0;

/*
 * keyed_fold_call runs a merge's fold for key of state st: backends call
 * their StateMergeFn through it.
 */
void
keyed_fold_call(StateMergeFn fn, const StateTarget *st, const StateKey *key,
				const char *cur, uint32 curlen, const char *in, uint32 inlen,
				StringInfo out, void *arg)
{
	for (int i = 0; i < nfolding; i++)
		if (folding[i].state_id == st->desc->id && folding[i].key->len == key->len &&
			folding[i].key->hash == key->hash &&
			memcmp(folding[i].key->data, key->data, key->len) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("the fold of a key of state \"%s\" merges into that same key",
							NameStr(st->desc->name)),
					 errdetail("Its reducer or aggregate calls reduce or aggregate on the key it folds, which would never end."),
					 errhint("Fold into another key or state.")));
	if (nfolding == MAX_NESTED_FOLDS)
	{
		fn(cur, curlen, in, inlen, out, arg);
		return;
	}
	folding[nfolding].state_id = st->desc->id;
	folding[nfolding].key = key;
	nfolding++;
	PG_TRY();
	{
		fn(cur, curlen, in, inlen, out, arg);
	}
	PG_FINALLY();
	{
		nfolding--;
	}
	PG_END_TRY();
}
