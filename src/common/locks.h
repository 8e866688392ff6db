/*
 * common/locks.h
 *		The extension's tranche of LWLocks, and whether the library was
 *		preloaded (without that there is no shared memory to keep state in).
 *
 * Lock order (docs/ARCHITECTURE.md): the snapshot lock, then partition
 * locks in increasing order, then the registry lock.  Nothing waits, or
 * calls user-definable code, while holding one.
 */
#ifndef STATE_BACKEND_LOCKS_H
#define STATE_BACKEND_LOCKS_H

#include "storage/lwlock.h"

/* Number of heap hash partitions, each with its own LWLock. */
#define HEAP_PARTITIONS			128

/* LWLocks of the "state_backend" tranche. */
#define LOCK_REGISTRY			HEAP_PARTITIONS
#define LOCK_AREA				(HEAP_PARTITIONS + 1)
#define LOCK_SNAPSHOT			(HEAP_PARTITIONS + 2)
#define LOCK_WAL_SLOT			(HEAP_PARTITIONS + 3)	/* taken alone */
#define LOCK_MOVE				(HEAP_PARTITIONS + 4)	/* taken alone */
#define STATE_BACKEND_NUM_LOCKS	(HEAP_PARTITIONS + 5)

extern void state_locks_request(void);
extern void state_locks_init(void);
extern LWLock *state_backend_lock(int n);

extern void state_backend_mark_loaded(void);
extern void state_backend_check_loaded(void);
extern void state_backend_check_available(void);
extern void state_backend_check_writable(const char *what);

#endif							/* STATE_BACKEND_LOCKS_H */
