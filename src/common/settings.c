/*
 * common/settings.c
 *		Every setting of the extension, with its bounds and description.
 *
 * Settings are read where they are used; this file only defines them.
 */
#include "postgres.h"

#include <limits.h>

#include "postmaster/interrupt.h"
#include "utils/guc.h"

#include "common/fault.h"
#include "common/settings.h"

char	   *state_backend_default_backend = NULL;
int			state_backend_memory_limit_kb = 256 * 1024;
int			state_backend_max_parallelism = 128;
int			state_backend_max_states = 1024;
char	   *state_backend_checkpoint_dir = NULL;
char	   *state_backend_signing_key_file = NULL;
int			state_backend_checkpoint_interval_s = 0;
int			state_backend_checkpoints_retained = 1;
int			state_backend_snapshot_cpu_percent = 50;
int			state_backend_ttl_cleanup_key_groups = 8;
bool		state_backend_restore_on_start = true;
bool		state_backend_track_stats = true;
bool		state_backend_snapshot_hold = false;
bool		state_backend_start_hold = false;
int			state_backend_max_state_size_kb = 5 * 1024;
int			state_backend_request_timeout_ms = 30000;
int			state_backend_spin_wait_us = 100;
bool		state_backend_wal_rmgr_128 = false;
int			state_backend_timer_batch_size = 500;
int			state_backend_timer_max_retries = 3;
int			state_backend_timer_retry_delay_ms = 1000;
int			state_backend_timer_statement_timeout_ms = 60000;
int			state_backend_timer_queue_kb = 1024;
char	   *state_backend_fault_points = NULL;
int			state_backend_max_timer_databases = 8;

/*
 * checkpoint_dir is an absolute path, or a file:// URL of one, which is
 * stored as the plain path.
 */
static bool
check_checkpoint_dir(char **newval, void **extra, GucSource source)
{
	const char *path = *newval;

	if (path == NULL || path[0] == '\0')
		return true;
	if (strncmp(path, "file://", 7) == 0)
	{
		/* GUC string values are malloc'd (PG15). */
		char	   *plain = strdup(path + 7);

		if (plain == NULL)
			return false;
		free(*newval);
		*newval = plain;
		path = plain;
	}
	if (!is_absolute_path(path))
	{
		GUC_check_errdetail("state_backend.checkpoint_dir must be an absolute path or a file:// URL.");
		return false;
	}
	return true;
}

/*
 * Settings of snapshots and checkpoints: where checkpoints go, how often,
 * how many are kept, whether they are loaded at start, and how much of a
 * core the state worker may spend writing one.
 */
static void
define_snapshot_settings(void)
{
	DefineCustomStringVariable("state_backend.checkpoint_dir",
							   "Directory where state.snapshot() with no path writes chk-<id>.",
							   "An absolute path or a file:// URL. Empty: snapshots of memory states with no path stay in shared memory.",
							   &state_backend_checkpoint_dir,
							   "",
							   PGC_SIGHUP,
							   0,
							   check_checkpoint_dir, NULL, NULL);

	DefineCustomStringVariable("state_backend.signing_key_file",
							   "File holding the key this server signs its snapshots with.",
							   "Snapshots signed with this key are trusted as the server's own; servers that share the file trust each other's. Relative paths are under the data directory. The state worker creates the file when it does not exist.",
							   &state_backend_signing_key_file,
							   "state_backend.key",
							   PGC_SIGHUP,
							   GUC_SUPERUSER_ONLY,
							   NULL, NULL, NULL);

	DefineCustomIntVariable("state_backend.checkpoint_interval",
							"The state worker takes a checkpoint this often (0: never).",
							NULL,
							&state_backend_checkpoint_interval_s,
							0,
							0,
							INT_MAX / 1000,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("state_backend.checkpoints_retained",
							"Completed checkpoints kept under the checkpoint directory.",
							NULL,
							&state_backend_checkpoints_retained,
							1,
							1,
							1000,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("state_backend.wal_rmgr_128",
							 "Also register WAL resource manager id 128, under which releases up to 1.6.0 logged.",
							 "Needed only to replay WAL that such a release wrote: on a standby upgraded before its primary, or at the first start after an upgrade that followed a crash. Another extension that registers id 128 cannot be loaded meanwhile.",
							 &state_backend_wal_rmgr_128,
							 false,
							 PGC_POSTMASTER,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("state_backend.restore_on_start",
							 "Load heap states from the newest completed checkpoint at server start.",
							 NULL,
							 &state_backend_restore_on_start,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("state_backend.snapshot_cpu_percent",
							"Share of one core the state worker spends writing a snapshot's key groups.",
							"Below 100 the worker rests between key groups, serving sessions, so that writers keep their latency while snapshots run; the final checkpoint at shutdown is not paced.",
							&state_backend_snapshot_cpu_percent,
							50,
							1,
							100,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("state_backend.ttl_cleanup_key_groups",
							"Key groups of each heap state with a TTL that the background cleanup walks per tick.",
							"The state worker ticks every 100 ms while such a state exists, removing what expired in the next key groups; 0 turns the background cleanup off (reads and snapshots still drop expired values).",
							&state_backend_ttl_cleanup_key_groups,
							8,
							0,
							32768,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
}

static void
define_timer_settings(void)
{
	DefineCustomIntVariable("state_backend.timer_batch_size",
							"Due timers a timer worker fires in one transaction.",
							"Each handler call runs in its own subtransaction of the batch's transaction, so that one that fails does not undo the others.",
							&state_backend_timer_batch_size,
							500, 1, 100000,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("state_backend.timer_max_retries",
							"Times a timer whose handler fails is tried again before it goes to state.timer_failures.",
							NULL,
							&state_backend_timer_max_retries,
							3, 0, 1000,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("state_backend.timer_retry_delay",
							"Wait before the first retry of a failed timer; it doubles with each retry, up to 64 times as long.",
							NULL,
							&state_backend_timer_retry_delay_ms,
							1000, 1, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("state_backend.timer_statement_timeout",
							"Longest a timer's handler may run before it is cancelled (and retried); 0: no limit.",
							NULL,
							&state_backend_timer_statement_timeout_ms,
							60000, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("state_backend.timer_queue_size",
							"Shared memory per database for timers registered and not yet seen by its timer worker.",
							"When it is full, the worker reads its timers states whole once more.",
							&state_backend_timer_queue_kb,
							1024, 64, 1024 * 1024,
							PGC_POSTMASTER, GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("state_backend.max_timer_databases",
							"Databases that can have timers states fired at once (a timer worker each).",
							NULL,
							&state_backend_max_timer_databases,
							8, 1, 1024,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
}

/*
 * state_backend_define_settings registers the settings.  Called from
 * _PG_init while the library is preloaded.
 */
void
state_backend_define_settings(GucStringCheckHook backend_check)
{
	DefineCustomStringVariable("state_backend.backend",
							   "Backend of states created without an explicit backend.",
							   "A registered backend's name: memory (alias jobmanager), filesystem, rocksdb, or one a library in shared_preload_libraries registers.",
							   &state_backend_default_backend,
							   "memory",
							   PGC_USERSET,
							   0,
							   backend_check, NULL, NULL);

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

	define_snapshot_settings();
	define_timer_settings();

	DefineCustomIntVariable("state_backend.max_state_size",
							"Largest state a snapshot kept in shared memory may hold.",
							NULL,
							&state_backend_max_state_size_kb,
							5 * 1024,
							64,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("state_backend.track_stats",
							 "Count reads, writes, misses and expired values of every state (state.stats).",
							 NULL,
							 &state_backend_track_stats,
							 true,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("state_backend.start_hold",
							 "The state worker's start waits after loading the checkpoint, before replaying WAL, while this is on.",
							 "A developer option, for tests of a start that does not finish.",
							 &state_backend_start_hold,
							 false,
							 PGC_SIGHUP,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomStringVariable("state_backend.fault_points",
							   "Fault points armed in this process: name:action[:n], comma-separated.",
							   "A developer option, for tests of a failure at each step of a commit, apply, replay, checkpoint, restore, timer firing or rescale: action error, exit, crash (SIGKILL, as kill -9) or sleep (n ms); n of the others: act at the n-th arrival only.",
							   &state_backend_fault_points,
							   "",
							   PGC_SUSET,
							   GUC_NOT_IN_SAMPLE,
							   fault_points_check, fault_points_assign, NULL);

	DefineCustomBoolVariable("state_backend.snapshot_hold",
							 "Snapshots this session asks for wait after their cut until they are cancelled.",
							 "A developer option, for tests that need a snapshot to be still running: it holds the state as of its call and writes nothing until state.cancel_snapshot() ends it or the server shuts down.",
							 &state_backend_snapshot_hold,
							 false,
							 PGC_SUSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("state_backend.spin_wait",
							"Microseconds a session spins for the state worker's reply, and the worker for the next request, before sleeping.",
							"Only while a core is free for it (the worker serves fewer sessions than the cores this server may use). 0 turns spinning off.",
							&state_backend_spin_wait_us,
							100,
							0,
							10000,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("state_backend.request_timeout",
							"How long a session waits for the state worker to answer a request on a rocksdb state.",
							"0 waits as long as it takes.",
							&state_backend_request_timeout_ms,
							30000,
							0,
							INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
}

/*
 * state_settings_reload applies a configuration reload that this process
 * was signalled for (ConfigReloadPending), wherever it waits: the settings
 * (fault points included) are the file's from then on.  What a process does
 * with changed settings beyond that (the state worker's memory limit and
 * backends) is its main loop's, which compares state_settings_generation
 * with the one it applied last, so that a reload taken in a wait elsewhere
 * is not left half applied.
 */
static uint64 settings_generation = 0;

void
state_settings_reload(void)
{
	ConfigReloadPending = false;
	ProcessConfigFile(PGC_SIGHUP);
	settings_generation++;
}

uint64
state_settings_generation(void)
{
	return settings_generation;
}
