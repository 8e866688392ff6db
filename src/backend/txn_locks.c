/*
 * backend/txn_locks.c
 *		What keeps the commits of transactional states apart: a lock per
 *		key written, and the use of a state as a whole.
 *
 * A commit locks the keys it writes (heavyweight locks, held to the end of
 * the transaction, so past the apply): advisory locks of field4
 * TXN_LOCK_KEY (SQL's advisory locks use 1 and 2), classid the state's id
 * and objid the key's hash; pg_locks shows them, and a wait for one is
 * cancelled and checked for deadlocks as any.  Every commit takes them in
 * one order (state id, then hash).
 *
 * A commit that writes more keys of a state than it would lock one by one,
 * and a truncate, use the state as a whole instead: no other commit of the
 * state may be between its locks and its apply meanwhile.  Commits of a
 * few keys count themselves in the state's "few" counter (in shared
 * memory, per registry slot: two atomic operations, where a heavyweight
 * lock per commit would cost a tenth of a reduce); a whole use takes the
 * state's own advisory lock (field4 TXN_LOCK_STATE, ExclusiveLock: whole
 * uses follow each other), raises the "whole" counter, and waits for the
 * few to be done.  Commits of a few keys wait while a whole use is under
 * way.  Each wait is for something later in the commits' order, or held by
 * commits that wait for nothing it holds, so none can close a circle.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/lmgr.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

#include "backend/txn_internal.h"
#include "common/settings.h"

#define TXN_LOCK_STATE		3
#define TXN_LOCK_KEY		4

typedef struct TxnStateUse
{
	pg_atomic_uint32 few;		/* commits of a few keys under way */
	pg_atomic_uint32 whole;		/* whole uses under way or waiting */
} TxnStateUse;

typedef struct TxnUses
{
	ConditionVariable cv;		/* whole uses ended */
	TxnStateUse slots[FLEXIBLE_ARRAY_MEMBER];
} TxnUses;

static TxnUses *uses = NULL;

/* The slots this transaction uses, of a few keys and as a whole. */
static List *few_slots = NIL;
static List *whole_slots = NIL;

Size
txn_locks_shmem_size(void)
{
	return MAXALIGN(add_size(offsetof(TxnUses, slots),
							 mul_size(state_backend_max_states, sizeof(TxnStateUse))));
}

void
txn_locks_shmem_init(void)
{
	bool		found;

	uses = ShmemInitStruct("state_backend transactional uses", txn_locks_shmem_size(), &found);
	if (!found)
	{
		ConditionVariableInit(&uses->cv);
		for (int i = 0; i < state_backend_max_states; i++)
		{
			pg_atomic_init_u32(&uses->slots[i].few, 0);
			pg_atomic_init_u32(&uses->slots[i].whole, 0);
		}
	}
}

void
txn_lock_key(uint32 state_id, uint32 hash)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, state_id, hash, TXN_LOCK_KEY);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

static TxnStateUse *
slot_use(const StateTarget *st)
{
	if (st->slot < 0 || st->slot >= state_backend_max_states)
		elog(ERROR, "state_backend: state \"%s\" has no registry slot",
			 NameStr(st->desc->name));
	return &uses->slots[st->slot];
}

static void
remember(List **list, int slot)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

	*list = lappend_int(*list, slot);
	MemoryContextSwitchTo(old);
}

/* txn_use_state: a commit of a few keys of st's state is under way. */
void
txn_use_state(const StateTarget *st)
{
	TxnStateUse *u = slot_use(st);

	if (list_member_int(whole_slots, st->slot) || list_member_int(few_slots, st->slot))
		return;
	/* Room first (-1: nothing counted yet), so that no error leaves a count. */
	remember(&few_slots, -1);
	for (;;)
	{
		while (pg_atomic_read_u32(&u->whole) != 0)
			(void) ConditionVariableTimedSleep(&uses->cv, 10, PG_WAIT_EXTENSION);
		ConditionVariableCancelSleep();
		/* A full barrier: a whole use sees it, or this sees the whole use. */
		pg_atomic_fetch_add_u32(&u->few, 1);
		if (pg_atomic_read_u32(&u->whole) == 0)
			break;
		pg_atomic_fetch_sub_u32(&u->few, 1);
	}
	llast_int(few_slots) = st->slot;
}

/* txn_use_state_whole: this transaction uses st's state as a whole. */
void
txn_use_state_whole(const StateTarget *st)
{
	TxnStateUse *u = slot_use(st);
	LOCKTAG		tag;

	if (list_member_int(whole_slots, st->slot))
		return;
	if (list_member_int(few_slots, st->slot))
		elog(ERROR, "state_backend: state \"%s\" is being committed by this transaction",
			 NameStr(st->desc->name));
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, st->desc->id, 0, TXN_LOCK_STATE);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	remember(&whole_slots, -1);
	pg_atomic_fetch_add_u32(&u->whole, 1);
	llast_int(whole_slots) = st->slot;
	while (pg_atomic_read_u32(&u->few) != 0)
	{
		CHECK_FOR_INTERRUPTS();
		pg_usleep(1000L);
	}
}

/*
 * txn_use_state_whole_end: the whole use of st's state is over before the
 * transaction ends (a truncate, which acts at once): commits go on, and
 * nothing of this transaction waits for them meanwhile.  The state's lock
 * stays, so other whole uses still wait for the transaction's end, where
 * the lock manager sees them.
 */
void
txn_use_state_whole_end(const StateTarget *st)
{
	ListCell   *lc;

	foreach(lc, whole_slots)
		if (lfirst_int(lc) == st->slot)
		{
			pg_atomic_fetch_sub_u32(&uses->slots[st->slot].whole, 1);
			whole_slots = foreach_delete_current(whole_slots, lc);
			ConditionVariableBroadcast(&uses->cv);
			return;
		}
}

/* The transaction ended: what it used, others may. */
void
txn_locks_release(void)
{
	ListCell   *lc;

	if (uses == NULL || (few_slots == NIL && whole_slots == NIL))
		return;
	foreach(lc, few_slots)
		if (lfirst_int(lc) >= 0)
			pg_atomic_fetch_sub_u32(&uses->slots[lfirst_int(lc)].few, 1);
	foreach(lc, whole_slots)
		if (lfirst_int(lc) >= 0)
			pg_atomic_fetch_sub_u32(&uses->slots[lfirst_int(lc)].whole, 1);
	if (whole_slots != NIL)
		ConditionVariableBroadcast(&uses->cv);
	few_slots = NIL;
	whole_slots = NIL;
}
