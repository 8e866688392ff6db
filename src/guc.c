/*
 * guc.c
 *		Every setting of the extension, with its bounds and description.
 *
 * Settings are read where they are used; this file only defines them.
 */
#include "postgres.h"

#include "utils/guc.h"

#include "state_backend.h"

int			state_backend_default_backend = STATE_BACKEND_MEMORY;
int			state_backend_memory_limit_kb = 256 * 1024;
int			state_backend_max_parallelism = 128;
int			state_backend_max_states = 1024;

/* "jobmanager" is Flink's name for the memory backend. */
static const struct config_enum_entry backend_options[] = {
	{"memory", STATE_BACKEND_MEMORY, false},
	{"jobmanager", STATE_BACKEND_MEMORY, true},
	{"filesystem", STATE_BACKEND_FILESYSTEM, false},
	{"rocksdb", STATE_BACKEND_ROCKSDB, false},
	{NULL, 0, false}
};

/*
 * state_backend_define_gucs registers the settings.  Called from _PG_init
 * while the library is preloaded.
 */
void
state_backend_define_gucs(void)
{
	DefineCustomEnumVariable("state_backend.backend",
							 "Backend of states created without an explicit backend.",
							 "memory (alias jobmanager), filesystem or rocksdb.",
							 &state_backend_default_backend,
							 STATE_BACKEND_MEMORY,
							 backend_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("state_backend.memory_limit",
							"Shared memory available to all heap states together.",
							"Writes that would exceed it fail; stored state stays readable.",
							&state_backend_memory_limit_kb,
							256 * 1024,
							1024,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("state_backend.max_parallelism",
							"Number of key groups that keys are hashed into.",
							NULL,
							&state_backend_max_parallelism,
							128,
							1,
							32768,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("state_backend.max_states",
							"Maximum number of states across all databases.",
							NULL,
							&state_backend_max_states,
							1024,
							1,
							1000000,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("state_backend");
}
