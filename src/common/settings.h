/*
 * common/settings.h
 *		Every setting (GUC) of the extension.  They are defined in
 *		common/settings.c and read where they are used.
 */
#ifndef STATE_BACKEND_SETTINGS_H
#define STATE_BACKEND_SETTINGS_H

#include "utils/guc.h"

/* state_backend.backend: a registered backend's name (backend/providers.c). */
extern char *state_backend_default_backend;
extern int	state_backend_memory_limit_kb;
extern int	state_backend_max_parallelism;
extern int	state_backend_max_states;
extern char *state_backend_checkpoint_dir;
extern char *state_backend_signing_key_file;
extern int	state_backend_checkpoint_interval_s;
extern int	state_backend_checkpoints_retained;
extern int	state_backend_snapshot_cpu_percent;
extern int	state_backend_ttl_cleanup_key_groups;
extern bool state_backend_restore_on_start;
extern bool state_backend_track_stats;
extern bool state_backend_snapshot_hold;
extern bool state_backend_start_hold;
extern int	state_backend_max_state_size_kb;
extern int	state_backend_request_timeout_ms;
extern int	state_backend_spin_wait_us;
extern bool state_backend_wal_rmgr_128;
extern int	state_backend_timer_batch_size;
extern int	state_backend_timer_max_retries;
extern int	state_backend_timer_retry_delay_ms;
extern int	state_backend_timer_statement_timeout_ms;
extern int	state_backend_timer_queue_kb;
extern int	state_backend_max_timer_databases;
extern char *state_backend_fault_points;

/*
 * Called from _PG_init while the library is preloaded.  The backends'
 * names and ids come from their owner (backend/keyed_backend.c) through
 * module.c, so that this file names no backend.
 */
extern void state_backend_define_settings(GucStringCheckHook backend_check);
extern void state_settings_reload(void);
extern uint64 state_settings_generation(void);

#endif							/* STATE_BACKEND_SETTINGS_H */
