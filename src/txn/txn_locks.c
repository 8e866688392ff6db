/*
 * txn/txn_locks.c
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
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/condition_variable.h"
#include "storage/lmgr.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

#include "common/progress.h"
#include "common/settings.h"
#include "txn/txn_internal.h"

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
	/* A hot standby: reads of transactional states, and a commit's apply. */
	pg_atomic_uint32 standby_readers;
	pg_atomic_uint32 standby_applying;
	ConditionVariable standby_cv;	/* an apply ended */
	TxnStateUse slots[FLEXIBLE_ARRAY_MEMBER];
} TxnUses;

static TxnUses *uses = NULL;

/* Reads of this process counted in standby_readers. */
static int	standby_reads_held = 0;
static bool standby_exit_registered = false;

/* The slots this transaction uses, of a few keys and as a whole. */
static List *few_slots = NIL;
static List *whole_slots = NIL;

/* The ids of the states whose lock this transaction took (PREPARE's check). */
static List *locked_states = NIL;

static Size
uses_shmem_size(void)
{
	return MAXALIGN(add_size(offsetof(TxnUses, slots),
							 mul_size(state_backend_max_states, sizeof(TxnStateUse))));
}

/* uses_init: no state in use, and no standby read, in shared memory just made. */
static void
uses_init(void *fresh)
{
	TxnUses    *u = fresh;

	ConditionVariableInit(&u->cv);
	pg_atomic_init_u32(&u->standby_readers, 0);
	pg_atomic_init_u32(&u->standby_applying, 0);
	ConditionVariableInit(&u->standby_cv);
	for (int i = 0; i < state_backend_max_states; i++)
	{
		pg_atomic_init_u32(&u->slots[i].few, 0);
		pg_atomic_init_u32(&u->slots[i].whole, 0);
	}
}

const ShmemPart txn_uses_part = {
	"state_backend transactional uses", 0, uses_shmem_size, uses_init, (void **) &uses
};

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
	remember(&locked_states, (int) st->desc->id);
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

/*
 * txn_locks_state_held says whether this transaction holds the lock of a
 * state (a truncate took it): PREPARE TRANSACTION would carry it across
 * restarts, so it is refused then.  A lock a rolled back subtransaction
 * took went with it.
 */
bool
txn_locks_state_held(void)
{
	ListCell   *lc;

	foreach(lc, locked_states)
	{
		LOCKTAG		tag;

		SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) lfirst_int(lc), 0, TXN_LOCK_STATE);
		if (LockHeldByMe(&tag, ExclusiveLock))
			return true;
	}
	return false;
}

/* The transaction ended: what it used, others may. */
void
txn_locks_release(void)
{
	ListCell   *lc;

	locked_states = NIL;		/* in TopTransactionContext, which goes too */
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

/* ------------------------------------------------------------ hot standby */

/*
 * On a hot standby the state worker applies a transactional commit's
 * records one by one (logged_standby.c); a read of a transactional state
 * must see all of them or none.  A read counts itself in standby_readers
 * for as long as it looks at the state, and waits while an apply is under
 * way; the apply raises standby_applying, then waits for the readers
 * counted to be gone.  Nothing else is counted, so reads of other states
 * and the primary pay nothing.  The apply serves sessions while it waits,
 * since a read of a state the worker holds waits for the worker.  A read
 * that fails is uncounted at the end
 * of its (sub)transaction, one that exits at the exit.
 */
static void
standby_reads_at_exit(int code, Datum arg)
{
	txn_standby_read_release();
}

void
txn_standby_read_begin(void)
{
	if (!standby_exit_registered)
	{
		before_shmem_exit(standby_reads_at_exit, (Datum) 0);
		standby_exit_registered = true;
	}
	/*
	 * A read within a read (an aggregate's final function reading a state
	 * while entries() scans): the apply waits for the outer one anyway.
	 */
	if (standby_reads_held > 0)
	{
		pg_atomic_fetch_add_u32(&uses->standby_readers, 1);
		standby_reads_held++;
		return;
	}
	for (;;)
	{
		/* A full barrier: the apply's flag is read after the count is seen. */
		pg_atomic_fetch_add_u32(&uses->standby_readers, 1);
		standby_reads_held++;
		if (pg_atomic_read_u32(&uses->standby_applying) == 0)
			return;
		txn_standby_read_end();
		ConditionVariablePrepareToSleep(&uses->standby_cv);
		while (pg_atomic_read_u32(&uses->standby_applying) != 0)
			ConditionVariableSleep(&uses->standby_cv, PG_WAIT_EXTENSION);
		ConditionVariableCancelSleep();
	}
}

void
txn_standby_read_end(void)
{
	Assert(standby_reads_held > 0);
	standby_reads_held--;
	pg_atomic_fetch_sub_u32(&uses->standby_readers, 1);
}

/* At an abort or exit: every read this process still counts ends. */
void
txn_standby_read_release(void)
{
	while (standby_reads_held > 0)
		txn_standby_read_end();
}

/*
 * txn_standby_apply_begin, in the state worker of a standby, before a
 * commit's records are applied: new reads wait, and the reads under way
 * end first.  It waits for them as a worker must: its latch, the
 * postmaster's death, a shutdown (then the apply goes on: the server is
 * stopping).
 */
void
txn_standby_apply_begin(void)
{
	pg_atomic_write_u32(&uses->standby_applying, 1);
	pg_memory_barrier();
	while (pg_atomic_read_u32(&uses->standby_readers) != 0 && !ShutdownRequestPending)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1L,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		/* The reads counted may wait for the worker (rocksdb states): serve them. */
		progress_yield();
	}
}

void
txn_standby_apply_end(void)
{
	pg_atomic_write_u32(&uses->standby_applying, 0);
	ConditionVariableBroadcast(&uses->standby_cv);
}
