/*
 * common/fault.h
 *		Fault points: named places in a commit, an apply, a replay, a
 *		checkpoint, a restore, a timer's firing, a standby's apply, a
 *		rescale or a backend write where a test can make the process fail.
 *
 * Armed by the superuser-only developer setting state_backend.fault_points
 * ('name:action[:n], ...'; common/fault.c reads it).  When nothing is
 * armed a point costs one test of a global.  Points are reached only from
 * threads PostgreSQL started (never from RocksDB's).  test/t/041_fault_points.pl
 * finds every FAULT_POINT("...") of the source and walks it with the load
 * its first word names:
 *	commit.		a transactional state's commit, up to its commit record
 *	apply.		a commit's apply to the backends, after its commit record
 *	write.		a backend's write (heap, rocksdb, a provider's), and a session's
 *				store of what it read into the rocksdb entry cache
 *	replay.		the start's replay of logged states' WAL
 *	checkpoint.	a checkpoint
 *	restore.	a restore of a snapshot or checkpoint
 *	timer.		a timer's firing
 *	window.		a window's emit, and a feed's merge of its batch into a key
 *	standby.	a hot standby's apply of logged states
 *	rescale.	a rescale (of snapshots, or of a proxy's parts)
 *	alter.		a state's change (alter_state)
 */
#ifndef STATE_BACKEND_FAULT_H
#define STATE_BACKEND_FAULT_H

#include "utils/guc.h"

extern PGDLLIMPORT bool state_backend_faults_armed;

#define FAULT_POINT(name) \
	do { \
		if (unlikely(state_backend_faults_armed)) \
			fault_point_reached(name); \
	} while (0)

extern void fault_point_reached(const char *name);

/* The setting's hooks (common/settings.c defines the setting). */
extern bool fault_points_check(char **newval, void **extra, GucSource source);
extern void fault_points_assign(const char *newval, void *extra);

#endif							/* STATE_BACKEND_FAULT_H */
