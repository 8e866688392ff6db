/*
 * backend/providers.c
 *		The registered backends: registration, lookup by id and by name,
 *		and the worker's calls into every backend.  The services a backend
 *		gets from the host are in provider_host.c.
 *
 * memory, filesystem (both the heap, backend/heap/heap_backend.c) and rocksdb
 * (backend/rocksdb/rocks_provider.c) register here like any library's
 * backend, in _PG_init; a library in shared_preload_libraries after
 * state_backend registers through the table that the rendezvous variable
 * "state_backend_api" holds.  Ids are what descriptors, WAL records and
 * RocksDB store; names are what settings, create_state and MANIFESTs say.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "backend/heap/heap_table.h"
#include "backend/keyed_backend.h"
#include "backend/providers.h"
#include "backend/rocksdb/rocks.h"
#include "catalog/registry.h"
#include "common/fault.h"
#include "common/progress.h"
#include "format/records.h"
#include "format/state_wal.h"
#include "ipc/channel.h"

/* Ids below this are the host's own (memory, filesystem, rocksdb). */
#define PROVIDER_FIRST_FOREIGN_ID	16
#define PROVIDER_MAX_ID				32767
#define MAX_PROVIDERS				STATE_BACKEND_MAX_PROVIDERS

static const StateBackendProvider *providers[MAX_PROVIDERS];
static int	nproviders = 0;

/* The same by id, for the ids a state's every call looks up. */
#define PROVIDER_FAST_IDS			64
static const StateBackendProvider *by_id[PROVIDER_FAST_IDS];

/* Each distinct KeyedStateBackend once, the heap last (its cut is the instant). */
static const KeyedStateBackend *implementations[MAX_PROVIDERS];
static int	nimplementations = 0;

static Size heap_provider_shmem_size(void);
static void heap_provider_shmem_init(void);

static const StateBackendProvider memory_provider = {
	STATE_BACKEND_PROVIDER_BUILT("memory"),
	.id = STATE_BACKEND_MEMORY_ID,
	.flags = STATE_PROVIDER_MEMORY_SNAPSHOTS | STATE_PROVIDER_OPERATOR_STATE |
	STATE_PROVIDER_STANDBY_READS,
	.ops = &heap_keyed_backend,
	.shmem_size = heap_provider_shmem_size,
	.shmem_init = heap_provider_shmem_init,
};

/* The heap again; its snapshots are never kept in shared memory. */
static const StateBackendProvider filesystem_provider = {
	STATE_BACKEND_PROVIDER_BUILT("filesystem"),
	.id = STATE_BACKEND_FILESYSTEM_ID,
	.flags = STATE_PROVIDER_OPERATOR_STATE | STATE_PROVIDER_STANDBY_READS,
	.ops = &heap_keyed_backend,
};

static Size
heap_provider_shmem_size(void)
{
	return heap_state_shmem_size();
}

static void
heap_provider_shmem_init(void)
{
	heap_state_shmem_init();
}


/* ------------------------------------------------------------ registration */

/* A name a setting can carry: lower-case letters, digits and "_". */
static bool
provider_name_ok(const char *name)
{
	size_t		len = strlen(name);

	if (len == 0 || len >= NAMEDATALEN || !(name[0] >= 'a' && name[0] <= 'z'))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
			  name[i] == '_'))
			return false;
	return true;
}

static void
provider_add(const StateBackendProvider *p)
{
	bool		seen = false;

	for (int i = 0; i < nproviders; i++)
	{
		if (providers[i]->id == p->id)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("state backend id %d of \"%s\" is already registered by backend \"%s\"",
							p->id, p->name, providers[i]->name)));
		if (strcmp(providers[i]->name, p->name) == 0 || strcmp(p->name, "jobmanager") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("state backend \"%s\" is already registered", p->name)));
	}
	if (nproviders == MAX_PROVIDERS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many state backends registered (at most %d)", MAX_PROVIDERS)));
	providers[nproviders++] = p;
	if (p->id < PROVIDER_FAST_IDS)
		by_id[p->id] = p;

	for (int i = 0; i < nimplementations; i++)
		seen |= implementations[i] == p->ops;
	if (!seen)
	{
		/* The heap stays last. */
		int			at = nimplementations;

		if (at > 0 && implementations[at - 1] == &heap_keyed_backend)
		{
			implementations[at] = implementations[at - 1];
			at--;
		}
		implementations[at] = p->ops;
		nimplementations++;
	}
}

/*
 * A struct whose size a provider was built with differs from the host's:
 * the error names it and both sizes.
 */
static void
refuse_size(const StateBackendProvider *p, const char *what, uint32 theirs, Size ours)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("state backend \"%s\" was built with another layout of provider API version %d",
					p->name ? p->name : "?", STATE_BACKEND_API_VERSION),
			 errdetail("Its %s has %u bytes, this server's has %u.", what, theirs, (uint32) ours),
			 errhint("Rebuild it against the installed state_backend_api.h.")));
}

/*
 * check_built_for refuses a provider built against another release of the
 * API: its version (read from the fields that never move), then the size of
 * every struct the two exchange.
 */
static void
check_built_for(const StateBackendProvider *p)
{
	const StateBackendSizes ours = STATE_BACKEND_SIZES;

	if (p == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a state backend was registered without its table")));
	if (p->api_version != STATE_BACKEND_API_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("state backend \"%s\" was built for provider API version %u, this server offers version %d",
						p->name ? p->name : "?", p->api_version, STATE_BACKEND_API_VERSION),
				 errhint("Rebuild it against the installed state_backend_api.h.")));
	if (p->size != sizeof(StateBackendProvider))
		refuse_size(p, "StateBackendProvider", p->size, sizeof(StateBackendProvider));
#define CHECK_SIZE(field, type) \
	if (p->sizes.field != ours.field) \
		refuse_size(p, #type, p->sizes.field, ours.field)
	CHECK_SIZE(provider, StateBackendProvider);
	CHECK_SIZE(ops, KeyedStateBackend);
	CHECK_SIZE(strategy, SnapshotStrategy);
	CHECK_SIZE(info, StateInfo);
	CHECK_SIZE(target, StateTarget);
	CHECK_SIZE(key, StateKey);
	CHECK_SIZE(fold, StateFold);
	CHECK_SIZE(reserve_key, StateReserveKey);
	CHECK_SIZE(restore_item, NativeRestoreItem);
	CHECK_SIZE(stage, StateStageRoutine);
	CHECK_SIZE(host, StateBackendHost);
#undef CHECK_SIZE
}

/*
 * keyed_backend_register is the API's register_backend: a library's backend, in
 * its _PG_init while shared_preload_libraries is being loaded.
 */
void
keyed_backend_register(const StateBackendProvider *p)
{
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("state backend \"%s\" must be registered while shared_preload_libraries is loaded",
						p && p->name ? p->name : "?"),
				 errhint("Add its library to shared_preload_libraries, after state_backend, and restart the server.")));
	check_built_for(p);
	if (p->name == NULL || !provider_name_ok(p->name))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("invalid state backend name \"%s\"", p->name ? p->name : ""),
				 errdetail("A backend's name is lower-case letters, digits and underscores, starting with a letter.")));
	if (p->id < PROVIDER_FIRST_FOREIGN_ID || p->id > PROVIDER_MAX_ID)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("state backend \"%s\" has id %d, outside %d..%d",
						p->name, p->id, PROVIDER_FIRST_FOREIGN_ID, PROVIDER_MAX_ID)));
	if (p->ops == NULL || p->ops->get == NULL || p->ops->put == NULL ||
		p->ops->snapshot == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("state backend \"%s\" has no data operations or snapshot strategy",
						p->name)));
	provider_add(p);
}

/*
 * keyed_backends_init registers the built-in backends and publishes the
 * host's table for other libraries.  From _PG_init.
 */
void
keyed_backends_init(void)
{
	void	  **slot = find_rendezvous_variable(STATE_BACKEND_API_RENDEZVOUS);

	provider_add(&memory_provider);
	provider_add(&filesystem_provider);
	provider_add(rocks_provider(&state_backend_host));
	*slot = (void *) &state_backend_host;
}

/* ------------------------------------------------------------ lookups */

/* keyed_backend_provider returns the registered backend of an id, or NULL. */
const StateBackendProvider *
keyed_backend_provider(int backend)
{
	if (backend >= 0 && backend < PROVIDER_FAST_IDS)
		return by_id[backend];
	for (int i = 0; i < nproviders; i++)
		if (providers[i]->id == backend)
			return providers[i];
	return NULL;
}

/*
 * keyed_backend_by_id returns the implementation behind a backend id: what
 * stores a state's images as they are (with their deadlines, for a state
 * with a TTL).  Restores, replays and snapshots move these.
 */
const KeyedStateBackend *
keyed_backend_by_id(int backend)
{
	const StateBackendProvider *p = keyed_backend_provider(backend);

	if (p == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("state backend %d is not registered on this server", backend),
				 errhint("Add the library that provides it to shared_preload_libraries.")));
	return p->ops;
}

/*
 * keyed_backend_flush_all waits until every write this session made, in
 * every backend, is applied; the error of one that failed is raised.
 */
void
keyed_backend_flush_all(void)
{
	int			n;
	const KeyedStateBackend *const *all = keyed_backend_all(&n);

	for (int i = 0; i < n; i++)
		if (all[i]->flush)
			all[i]->flush();
}

/* keyed_backend_all returns every implementation once; *n gets how many. */
const KeyedStateBackend *const *
keyed_backend_all(int *n)
{
	*n = nimplementations;
	return implementations;
}

const char *
keyed_backend_name(int backend)
{
	const StateBackendProvider *p = keyed_backend_provider(backend);

	return p ? p->name : "unknown";
}

/* keyed_backend_lookup reads a backend name; false when it names none. */
bool
keyed_backend_lookup(const char *name, int *backend)
{
	if (strcmp(name, "jobmanager") == 0)
		name = "memory";		/* Flink's name of the memory backend */
	for (int i = 0; i < nproviders; i++)
		if (strcmp(providers[i]->name, name) == 0)
		{
			*backend = providers[i]->id;
			return true;
		}
	return false;
}

/* keyed_backend_names lists the registered names, for messages. */
char *
keyed_backend_names(void)
{
	StringInfoData s;

	initStringInfo(&s);
	for (int i = 0; i < nproviders; i++)
		appendStringInfo(&s, "%s%s%s", i == 0 ? "" : ", ",
						 i == nproviders - 1 && i > 0 ? "and " : "",
						 providers[i]->name);
	return s.data;
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
				 errhint("The backends registered on this server are %s (memory is also called jobmanager).",
						 keyed_backend_names())));
	return backend;
}

/* Can a state of this backend be in a snapshot kept in shared memory? */
bool
keyed_backend_memory_snapshots(int backend)
{
	const StateBackendProvider *p = keyed_backend_provider(backend);

	return p != NULL && (p->flags & STATE_PROVIDER_MEMORY_SNAPSHOTS) != 0;
}

/*
 * keyed_backend_operator_backend is where an operator state asked for in
 * a backend lives: operator state is in shared memory unless the backend
 * says it keeps it, as Flink's DefaultOperatorStateBackend is a heap
 * backend whatever the keyed one is.
 */
int
keyed_backend_operator_backend(int backend)
{
	const StateBackendProvider *p = keyed_backend_provider(backend);

	if (p != NULL && (p->flags & STATE_PROVIDER_OPERATOR_STATE) != 0)
		return backend;
	return STATE_BACKEND_MEMORY_ID;
}

/*
 * keyed_backend_kept_data: whether the states of a backend came back from
 * its own storage at this start (KeyedStateBackend.kept_data).
 */
bool
keyed_backend_kept_data(int backend)
{
	const StateBackendProvider *p = keyed_backend_provider(backend);

	return p != NULL && p->ops->kept_data != NULL && p->ops->kept_data();
}

/*
 * keyed_backend_setting_ok is the check of state_backend.backend: while the
 * libraries are preloaded a provider may not have registered yet, so any
 * name a backend could have passes; later only registered ones.
 */
bool
keyed_backend_setting_ok(char **newval, void **extra, GucSource source)
{
	int			backend;

	if (process_shared_preload_libraries_in_progress || nproviders == 0)
		return provider_name_ok(*newval);
	if (keyed_backend_lookup(*newval, &backend))
		return true;
	GUC_check_errdetail("The backends registered on this server are %s.", keyed_backend_names());
	return false;
}

/* ------------------------------------------------------------ the worker's calls */

/* Call a routine without arguments of every provider that has it, in order. */
#define CALL_EACH_PROVIDER(routine) \
	do { \
		for (int i_ = 0; i_ < nproviders; i_++) \
			if (providers[i_]->routine) \
				providers[i_]->routine(); \
	} while (0)

Size
keyed_backends_shmem_size(void)
{
	Size		size = 0;

	for (int i = 0; i < nproviders; i++)
		if (providers[i]->shmem_size)
			size = add_size(size, providers[i]->shmem_size());
	return size;
}

void
keyed_backends_shmem_init(void)
{
	CALL_EACH_PROVIDER(shmem_init);
}

void
keyed_backends_worker_start(StateWorkerStart how)
{
	for (int i = 0; i < nproviders; i++)
		if (providers[i]->worker_start)
			providers[i]->worker_start(how);
}

void
keyed_backends_worker_ready(void)
{
	CALL_EACH_PROVIDER(worker_ready);
}

/* On the way out: never raises. */
void
keyed_backends_worker_stop(void)
{
	for (int i = nproviders - 1; i >= 0; i--)
		if (providers[i]->worker_stop)
			providers[i]->worker_stop();
}

void
keyed_backends_worker_reload(void)
{
	CALL_EACH_PROVIDER(worker_reload);
}

void
keyed_backends_worker_round(void)
{
	CALL_EACH_PROVIDER(worker_round);
}

/* The name of a backend whose storage failed (the worker must exit), or NULL. */
const char *
keyed_backends_worker_failed(void)
{
	for (int i = 0; i < nproviders; i++)
		if (providers[i]->worker_failed && providers[i]->worker_failed())
			return providers[i]->name;
	return NULL;
}

/*
 * keyed_backends_handle_request runs a request addressed to a backend (its
 * id), or one for every backend that serves requests (CHANNEL_TARGET_ALL:
 * the end of a round or a pass, a sync): whether a reply was produced, or
 * at the end of a round, whether a backend keeps writes for the pass's end.
 */
bool
keyed_backends_handle_request(uint16 target, uint16 kind, const char *payload, uint32 len,
							  StringInfo reply)
{
	const StateBackendProvider *p;

	if (target == CHANNEL_TARGET_ALL)
	{
		bool		keeps = false;

		for (int i = 0; i < nproviders; i++)
			if (providers[i]->handle_request &&
				providers[i]->handle_request(kind, payload, len, reply))
				keeps = true;
		return kind == STATE_REQUEST_SYNC || (kind == STATE_REQUEST_ROUND_END && keeps);
	}
	p = keyed_backend_provider(target);
	if (p == NULL || p->handle_request == NULL)
		elog(ERROR, "state_backend: a request for backend %d, which serves none", (int) target);
	return p->handle_request(kind, payload, len, reply);
}
