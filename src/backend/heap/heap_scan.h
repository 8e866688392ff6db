/*
 * backend/heap/heap_scan.h
 *		What walks whole partitions of the heap table: the operations of
 *		heap states on a state as a whole, and the heap's snapshot strategy.
 */
#ifndef STATE_BACKEND_HEAP_SCAN_H
#define STATE_BACKEND_HEAP_SCAN_H

#include "backend/keyed_backend.h"

extern void heap_state_iterate(const StateTarget *st, int key_group, StateEntryFn fn, void *arg);
extern int64 heap_state_truncate(const StateTarget *st);
extern int64 heap_state_expire(const StateTarget *st, int key_group, int64 now,
							   int64 *min_deadline);
extern void heap_state_size(const StateTarget *st, int64 *entries, int64 *bytes);
extern void heap_state_drop(const StateTarget *st, bool confirm);
extern const SnapshotStrategy heap_snapshot_strategy;

#endif							/* STATE_BACKEND_HEAP_SCAN_H */
