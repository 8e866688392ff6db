/*
 * txn/txn_state.h
 *		Transactional states: the layer over a state's backend that keeps
 *		a transaction's writes until it commits (txn_state.c) and applies
 *		them then (txn_commit.c).
 */
#ifndef STATE_BACKEND_TXN_STATE_H
#define STATE_BACKEND_TXN_STATE_H

#include "backend/keyed_backend.h"
#include "common/shmem_parts.h"

/*
 * How a transaction's fold of reduced values combines with the committed
 * image at its commit (sum, min and max fold again; an aggregate runs its
 * combine function).  The SQL layer installs it (module.c): it sets up the
 * same fold a call would, from the descriptor, in CurrentMemoryContext.
 */
typedef void (*TxnCombineSetup) (const StateDesc *desc, StateMergeFn *fn, void **arg);

extern void txn_state_set_combine(TxnCombineSetup setup);

extern const KeyedStateBackend txn_keyed_backend;

/*
 * What a state's operations go through: the transactional layer for a
 * transactional state, else what its writes are applied through
 * (ttl/ttl_state.h, keyed_state_ops_applied).
 */
extern const KeyedStateBackend *keyed_state_ops(const StateDesc *desc);

/* In _PG_init: the transaction callbacks that commit and forget (txn_commit.c). */
extern void txn_state_init(void);

/*
 * What the end of every transaction tells the layer above that set it
 * (the timer queue: the timers a transaction registered in transactional
 * states, told to their workers only once its commit applied them):
 * committed, once the commit applied its writes; not, at an abort or a
 * prepare.  Called after this layer's own end of the transaction.
 */
typedef void (*TxnEndHook) (bool committed);

extern void txn_state_set_end_hook(TxnEndHook hook);

/*
 * The snapshot's cut and the commits of transactional states: a cut may
 * be made only when no transaction is between logging its writes and
 * applying them all (txn_state_cut_ready asks, and stops new ones for a
 * moment: ask again soon, or they go on); txn_state_cut_done lets them go.
 */
extern bool txn_state_cut_ready(void);
extern void txn_state_cut_done(void);

/*
 * A hot standby's worker applies a transactional commit between these, so
 * that no read sees half of it (txn_locks.c).
 */
extern void txn_standby_apply_begin(void);
extern void txn_standby_apply_end(void);

/*
 * A drop of a transactional state waits for the commits of it under way
 * (txn_state_drop_begin), and holds off new ones until its transaction
 * ends, where they find the state gone before their commit record
 * (txn_state_drop_end, once the drop is done, or failed).
 */
extern void txn_state_drop_begin(const StateTarget *st);
extern void txn_state_drop_end(const StateTarget *st);

/* The transactional layer's shared memory: the gate, and the uses of states. */
extern const ShmemPart txn_gate_part;
extern const ShmemPart txn_uses_part;

#endif							/* STATE_BACKEND_TXN_STATE_H */
