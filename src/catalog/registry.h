/*
 * catalog/registry.h
 *		State descriptors per database: create, resolve by name, drop,
 *		owners and grants, and each state's usage counters.  The registry
 *		calls no backend; state_ops.c pairs its changes with theirs.
 */
#ifndef STATE_BACKEND_REGISTRY_H
#define STATE_BACKEND_REGISTRY_H

#include "access/xlogdefs.h"

#include "common/shmem_parts.h"
#include "common/types.h"

extern const ShmemPart registry_part;
extern const ShmemPart registry_readers_part;

extern void registry_set_ready(void);
extern bool registry_is_ready(void);
extern void registry_wait_ready(void);
extern void registry_set_standby(bool on);
extern bool registry_is_standby(void);
extern void registry_set_blocked(XLogRecPtr lsn, int64 checkpoint, const char *detail);
extern bool registry_blocked(XLogRecPtr *lsn, int64 *checkpoint, char *detail, Size len);
extern uint64 registry_version(void);
extern void registry_reader_enter(void);
extern void registry_reader_exit(void);
extern void registry_wait_readers(uint64 since);
extern void registry_resolve(const char *name, StateDesc *desc, int *slot);
extern bool registry_lookup(const char *name, StateDesc *desc, int *slot);
extern int	registry_create(StateDesc *desc, bool hidden);
extern int	registry_create_as(const StateDesc *desc);
extern bool registry_mark_dropping(const StateDesc *desc, int slot);
extern void registry_free_slot(const StateDesc *desc, int slot);
/* Whether registry_publish keeps a state the restore does not replace. */
typedef bool (*RegistryKeepFn) (const StateDesc *desc);
extern int	registry_publish(Oid dbid, const uint32 *ids, int nids, RegistryKeepFn keep,
							 StateDesc **old, int **oldslots, XLogRecPtr *logged_end);
extern int	registry_publish_replacing(const StateDesc *newd, const StateDesc *oldd,
									   bool keep_until_checkpoint, XLogRecPtr *logged_end);
extern void registry_log_drop_of_hidden(int slot, uint32 id);
extern int	registry_copy_hidden(StateDesc *out, int *slots);
extern int	registry_replaced_in(const StateDesc *held, int n, StateDesc **out, int **slots);
extern bool registry_get_stored(uint32 id, StateDesc *desc, bool *hidden);
extern bool registry_exists(Oid dbid, const char *name);
extern int	registry_copy_all(StateDesc *out, XLogRecPtr *wal_position);
extern void registry_logged_pending(int delta);
extern bool registry_any_logged(void);
extern void registry_check_type_unused(Oid type, bool altering);
extern void registry_check_role_unused(Oid role);
extern void registry_check_aggregate_unused(Oid aggfnoid, const char *action);
extern void registry_reserve_id(uint32 id);
extern void registry_set_owner_name(Oid role, const char *name);
extern bool registry_find_match(bool (*match) (const StateDesc *d, const void *arg),
								const void *arg, NameData *name);
extern int	registry_copy_database(Oid dbid, StateDesc **descs);
extern void registry_set_grant(const StateDesc *desc, int slot, Oid role,
							   uint8 privs, bool grant);
extern void registry_check_access(const StateDesc *desc, uint8 privs);
extern void registry_check_owner(const StateDesc *desc);

extern bool registry_alive(int slot, uint32 id);
extern bool registry_set_moving(int slot, uint32 id, uint8 move);
extern bool registry_get(int slot, uint32 id, StateDesc *desc, bool *hidden);
extern int	registry_find(uint32 id, StateDesc *desc);
extern bool registry_adopt(const StateDesc *desc);
extern void registry_add_usage(int slot, int64 entries, int64 bytes);

extern void registry_usage(int slot, int64 *entries, int64 *bytes);
extern int	registry_list(Oid dbid, StateDesc **descs, int **slots);
extern int	registry_timer_databases(Oid *dbids, int max);

#endif							/* STATE_BACKEND_REGISTRY_H */
