/*
 * txn/txn_commit.c
 *		The commit of a transaction's writes to transactional states.
 *
 * Before the commit (XACT_EVENT_PRE_COMMIT), where an error still aborts
 * the transaction cleanly:
 *	1. lock every key written (a heavyweight lock per state and key hash,
 *	   in one order: state ids, then hashes; a transaction that wrote more
 *	   than TXN_MAX_KEY_LOCKS keys of a state locks the whole state), so
 *	   that no other commit changes them until this one has applied its
 *	   writes: commits of one key follow each other;
 *	2. fold what must be folded against the value committed by then
 *	   (reduce, aggregate), giving each key what the apply will write;
 *	3. ask each state's backend to set aside what the apply will take
 *	   (KeyedStateBackend.reserve: the heap's memory, lmdb's map space,
 *	   rocksdb's disk), or to refuse the commit (54000, 53100) now;
 *	4. pass the gate (below), then log the writes of logged states to WAL
 *	   with the transaction's xid, which recovery applies only if it meets
 *	   the transaction's commit record;
 *	5. stage the writes of rocksdb states (logged or not, with a TTL or
 *	   not): the state worker keeps them aside and makes them durable as one
 *	   intent record (backend/rocksdb/rocks_stage.c), or the commit fails.
 * After the commit (XACT_EVENT_COMMIT), where nothing may fail: apply the
 * writes through the states' backends; ask the worker to apply the staged
 * ones in one RocksDB write, and wait until it has (a cancel or terminate
 * ends the wait with a WARNING: the worker applies them by itself once it
 * sees the transaction committed, and a start applies an intent record a
 * crash left); leave the gate.  The locks go at the end of the
 * transaction, after the apply.  A crash at any step leaves the commit
 * whole: before the commit record nothing was applied; after it, logged
 * states get their writes from WAL and staged ones from their intent.
 *
 * The gate: a snapshot's cut must not fall between a transaction's WAL
 * records and the end of its apply (it would hold part of the
 * transaction, and WAL replayed from the cut would miss the rest).  The
 * state worker asks txn_state_cut_ready before a cut; it sets "cut wanted"
 * for a moment and says whether no commit is inside; commits wait at the
 * gate while a cut is wanted.  The worker never waits for the gate (a
 * commit inside may need it to serve its writes): a cut that cannot be made
 * yet is asked for again.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "replication/message.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/proc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/snapmgr.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "catalog/registry.h"
#include "common/catch.h"
#include "common/fault.h"
#include "format/records.h"
#include "format/state_wal.h"
#include "txn/txn_internal.h"

/* More keys of one state than this in a transaction: lock the state. */
#define TXN_MAX_KEY_LOCKS	64

/* How long a cut stops commits at the gate unless asked again. */
#define TXN_CUT_WANTED_US	(200 * 1000)

typedef struct TxnGate
{
	pg_atomic_uint32 inside;	/* commits between their WAL and their apply */
	pg_atomic_uint64 cut_wanted_until;	/* a timestamp; 0: none */
	ConditionVariable cv;
} TxnGate;

static TxnGate *gate = NULL;

static bool committing = false;	/* from our pre-commit to the end */
static bool in_gate = false;
static uint64 staged_fxid = 0;	/* this commit's writes are staged */

/* The stage routines of the backends whose writes this commit staged. */
static const StateStageRoutine *staged_by[STATE_BACKEND_MAX_PROVIDERS];
static int	nstaged = 0;

/* ---------------------------------------------------------------- gate */

/* gate_init: no commit inside, and no cut wanted, in shared memory just made. */
static void
gate_init(void *fresh)
{
	TxnGate    *g = fresh;

	pg_atomic_init_u32(&g->inside, 0);
	pg_atomic_init_u64(&g->cut_wanted_until, 0);
	ConditionVariableInit(&g->cv);
}

const ShmemPart txn_gate_part = {
	"state_backend transactional commits", sizeof(TxnGate), NULL, gate_init, (void **) &gate
};

static bool
cut_wanted(void)
{
	uint64		until = pg_atomic_read_u64(&gate->cut_wanted_until);

	return until != 0 && (uint64) GetCurrentTimestamp() < until;
}

static void
gate_enter(void)
{
	for (;;)
	{
		if (cut_wanted())
		{
			ConditionVariableTimedSleep(&gate->cv, 10, PG_WAIT_EXTENSION);
			continue;
		}
		/* A full barrier: the worker sees it, or this sees the worker's wish. */
		pg_atomic_fetch_add_u32(&gate->inside, 1);
		if (!cut_wanted())
			break;
		pg_atomic_fetch_sub_u32(&gate->inside, 1);
	}
	ConditionVariableCancelSleep();
	in_gate = true;
}

static void
gate_leave(void)
{
	if (!in_gate)
		return;
	in_gate = false;
	pg_atomic_fetch_sub_u32(&gate->inside, 1);
}

bool
txn_state_cut_ready(void)
{
	pg_atomic_write_u64(&gate->cut_wanted_until,
						(uint64) GetCurrentTimestamp() + TXN_CUT_WANTED_US);
	pg_memory_barrier();
	if (pg_atomic_read_u32(&gate->inside) != 0)
		return false;
	/* Ready: commits wait, however long the cut takes, until cut_done. */
	pg_atomic_write_u64(&gate->cut_wanted_until, PG_UINT64_MAX);
	return true;
}

void
txn_state_cut_done(void)
{
	pg_atomic_write_u64(&gate->cut_wanted_until, 0);
	ConditionVariableBroadcast(&gate->cv);
}

/* --------------------------------------------------------------- locks */

static int
cmp_key_hash(const void *a, const void *b)
{
	uint32		x = (*(PendKey *const *) a)->key.hash;
	uint32		y = (*(PendKey *const *) b)->key.hash;

	return x < y ? -1 : x > y;
}

static int
cmp_state_id(const void *a, const void *b)
{
	uint32		x = (*(PendState *const *) a)->state_id;
	uint32		y = (*(PendState *const *) b)->state_id;

	return x < y ? -1 : x > y;
}

/* Lock the keys one state's commit writes (or the state). */
static void
lock_state_keys(PendState *ps)
{
	PendKey   **keys;
	int			n = 0;

	if (ps->nkeys > TXN_MAX_KEY_LOCKS)
	{
		txn_use_state_whole(&ps->target);
		return;
	}
	txn_use_state(&ps->target);
	keys = palloc(sizeof(PendKey *) * ps->nkeys);
	for (PendKey *pk = ps->first; pk != NULL; pk = pk->next)
		if (!pend_key_empty(pk))
			keys[n++] = pk;
	qsort(keys, n, sizeof(PendKey *), cmp_key_hash);
	for (int i = 0; i < n; i++)
	{
		if (i > 0 && keys[i]->key.hash == keys[i - 1]->key.hash)
			continue;
		txn_lock_key(ps->state_id, keys[i]->key.hash);
	}
	pfree(keys);
}

/* ---------------------------------------------------------- pre-commit */

/*
 * finalize_key turns a key's pending writes into what the apply writes: a
 * whole image (PEND_SET), a removal (PEND_CLEARED), elements to append, or
 * map entries to set and remove.  Reductions fold against the value
 * committed now (the key is locked, so it stays so until the apply).
 */
static void
finalize_key(PendKey *pk)
{
	PendState  *ps = pk->state;
	StateKind	layout = state_kind_layout(ps->desc.kind);
	StringInfoData cur;
	bool		have = false;

	if (!pk->has_tail || layout == STATE_KIND_MAP)
		return;
	if (layout == STATE_KIND_LIST)
	{
		/*
		 * Appended at commit as they come, but for a logged state, whose
		 * records must hold whole images (replayed twice, they change
		 * nothing more).
		 */
		if (pk->base == PEND_OVER && !ps->desc.logged)
			return;
		if (pk->base == PEND_OVER)
			(void) ps->inner->get(&ps->target, &pk->key, &pk->image);
		appendBinaryStringInfo(&pk->image, pk->tail.data, pk->tail.len);
	}
	else
	{
		initStringInfo(&cur);
		if (pk->base == PEND_OVER)
			have = ps->inner->get(&ps->target, &pk->key, &cur);
		else if (pk->base == PEND_SET)
		{
			appendBinaryStringInfo(&cur, pk->image.data, pk->image.len);
			have = true;
		}
		pend_combine(ps, have ? cur.data : NULL, cur.len, pk->tail.data, pk->tail.len,
					 &pk->image);
		pfree(cur.data);
	}
	pk->base = PEND_SET;
	pk->has_tail = false;
	resetStringInfo(&pk->tail);
}

/*
 * ttl_extra: the bytes the TTL layer adds to what a write of "len" bytes
 * stores: a deadline (and a map value's NULL flag), one per element for a
 * list, whose every element carries its own deadline.
 */
static uint64
ttl_extra(const PendState *ps, const char *data, uint32 len)
{
	if (ps->desc.ttl == 0)
		return 0;
	if (state_kind_layout(ps->desc.kind) == STATE_KIND_LIST)
		return (uint64) RECORD_TTL_HDR * (uint64) record_count_elems(data, len);
	return 16;
}

/*
 * reserve_key describes what the apply will write to a key (its backend's
 * reserve sizes it): a whole image or a removal, then list elements or map
 * entries.  For a state with a TTL each write, or each list element,
 * carries a deadline more.
 */
static void
reserve_key(const PendKey *pk, StateReserveKey *rk)
{
	uint32		off = 0;
	PendMapOp	op;
	const PendState *ps = pk->state;

	rk->key = &pk->key;
	rk->replaced = pk->base != PEND_OVER;
	rk->image_len = pk->base == PEND_SET ?
		(uint32) Min((uint64) pk->image.len + ttl_extra(ps, pk->image.data, pk->image.len),
					 (uint64) PG_UINT32_MAX) : 0;
	rk->grow_len = 0;
	rk->writes = pk->base != PEND_OVER ? 1 : 0;
	if (pk->has_tail)
	{
		rk->grow_len += (uint64) pk->tail.len + ttl_extra(ps, pk->tail.data, pk->tail.len);
		rk->writes++;
	}
	while (pend_mapop_next(pk, &off, &op))
	{
		rk->grow_len += (uint64) op.mkeylen + op.vallen + 2 * sizeof(uint32) +
			ttl_extra(ps, NULL, 0);
		rk->writes++;
	}
}

/*
 * reserve_state asks the state's backend to set aside what the apply of the
 * transaction's writes to it will take, or to refuse the commit now.
 */
static void
reserve_state(PendState *ps)
{
	const KeyedStateBackend *b = keyed_backend_by_id(ps->desc.backend);
	StateReserveKey *keys;
	int			n = 0;
	void	   *handle;

	if (b->reserve == NULL)
		return;
	keys = palloc(sizeof(StateReserveKey) * Max(ps->nkeys, 1));
	for (PendKey *pk = ps->first; pk != NULL; pk = pk->next)
		if (!pend_key_empty(pk))
			reserve_key(pk, &keys[n++]);
	if (n > 0)
	{
		handle = b->reserve(&ps->target, keys, n);
		ps->reservation = handle;
		ps->reserved = true;
	}
	pfree(keys);
}

/* unreserve_state gives a state's reservation back (before its apply, or at the end). */
static void
unreserve_state(PendState *ps)
{
	if (!ps->reserved)
		return;
	ps->reserved = false;
	if (ps->reservation != NULL)
		keyed_backend_by_id(ps->desc.backend)->unreserve(ps->reservation);
	ps->reservation = NULL;
}

/* Log a key's writes (a logged state's): what the apply will do. */
static void
log_key(const PendKey *pk)
{
	uint32		id = pk->state->state_id;
	uint32		off = 0;
	PendMapOp	op;

	if (pk->base == PEND_SET)
		(void) state_wal_log_txn(STATE_WAL_PUT, id, pk->key.data, pk->key.len, NULL, 0,
								 pk->image.data, pk->image.len, false);
	else if (pk->base == PEND_CLEARED)
		(void) state_wal_log_txn(STATE_WAL_REMOVE, id, pk->key.data, pk->key.len, NULL, 0,
								 NULL, 0, false);
	if (pk->has_tail)
		(void) state_wal_log_txn(STATE_WAL_APPEND, id, pk->key.data, pk->key.len, NULL, 0,
								 pk->tail.data, pk->tail.len, false);
	while (pend_mapop_next(pk, &off, &op))
	{
		if (op.tag == PEND_MAP_REMOVED)
			(void) state_wal_log_txn(STATE_WAL_MAP_REMOVE, id, pk->key.data, pk->key.len,
									 op.mkey, op.mkeylen, NULL, 0, false);
		else
			(void) state_wal_log_txn(STATE_WAL_MAP_PUT, id, pk->key.data, pk->key.len,
									 op.mkey, op.mkeylen, op.value, op.vallen,
									 op.tag == PEND_MAP_PUT_NULL);
	}
}

/*
 * The writes of a state whose backend has stage routines (rocksdb's) are
 * staged: made durable before the commit record and applied by the state
 * worker at once after it (backend/rocksdb/rocks_stage.c), so that a crash
 * or a worker that restarts alone at any step leaves the commit whole.  A
 * logged state's too: its WAL records keep it whole through a crash, not
 * through a worker that restarts alone while the session hands it the
 * writes (no replay follows); after a crash the replay applies them again
 * over the stage, which changes nothing (they hold whole images,
 * finalize_key).  A state's with a TTL too: its layer's writes read
 * nothing (each image gets its deadline as it is staged), so they are
 * staged as they come.
 */
static const StateStageRoutine *
state_stage(const PendState *ps)
{
	return keyed_backend_by_id(ps->desc.backend)->stage;
}

static void apply_key(PendState *ps, PendKey *pk);

/*
 * stage_backend stages the writes of the commit's states of one backend;
 * false when it stages nothing here.
 */
static bool
stage_backend(const StateStageRoutine *stage, PendState **ps, int n, uint64 fxid)
{
	/* A stage is a PGPROC's among the first MaxBackends (sessions, background workers). */
	if (MyProc->pgprocno >= MaxBackends ||
		!stage->begin((uint32) MyProc->pgprocno + 1, fxid))
		return false;
	staged_by[nstaged++] = stage;
	PG_TRY();
	{
		for (int i = 0; i < n; i++)
		{
			if (state_stage(ps[i]) != stage)
				continue;
			ps[i]->staged = true;
			for (PendKey *pk = ps[i]->first; pk != NULL; pk = pk->next)
			{
				FAULT_POINT("commit.stage_key");
				apply_key(ps[i], pk);
			}
		}
	}
	PG_FINALLY();
	{
		stage->end();
	}
	PG_END_TRY();
	return true;
}

/* Stage the writes of the commit's states that are staged, then make them durable. */
static void
stage_writes(PendState **ps, int n, uint64 fxid)
{
	bool		any = false;

	for (int i = 0; i < n; i++)
	{
		const StateStageRoutine *stage = state_stage(ps[i]);
		bool		seen = false;

		for (int j = 0; j < nstaged && !seen; j++)
			seen = staged_by[j] == stage;
		if (stage != NULL && !seen)
			any |= stage_backend(stage, ps, n, fxid);
	}
	if (!any)
		return;

	/*
	 * The intent record names the transaction by its xid, and a crash must
	 * not give that xid to a later transaction, whose commit would then
	 * apply these writes: a record that carries it is made durable first,
	 * so that the next xid after a crash lies beyond it (the transaction may
	 * have written no WAL of its own).
	 */
	XLogFlush(LogLogicalMessage("state_backend", "", 0, true));
	FAULT_POINT("commit.before_stage_prepare");
	for (int j = 0; j < nstaged; j++)
		staged_by[j]->prepare(fxid);
	staged_fxid = fxid;
}

static void
txn_pre_commit(void)
{
	PendState  *list = txn_pending_states();
	PendState **ps;
	int			n = 0;
	bool		any_logged = false;
	bool		any_staged = false;

	committing = true;
	txn_pending_freeze(true);
	for (PendState *s = list; s != NULL; s = s->next)
		n++;
	ps = palloc(sizeof(PendState *) * n);
	n = 0;
	for (PendState *s = list; s != NULL; s = s->next)
		ps[n++] = s;
	qsort(ps, n, sizeof(PendState *), cmp_state_id);

	FAULT_POINT("commit.begin");
	/* An aggregate's combine function may run SQL: it needs a snapshot. */
	PushActiveSnapshot(GetTransactionSnapshot());
	for (int i = 0; i < n; i++)
	{
		lock_state_keys(ps[i]);
		if (!registry_alive(ps[i]->target.slot, ps[i]->state_id))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("state \"%s\" does not exist", NameStr(ps[i]->desc.name)),
					 errdetail("It was dropped before this transaction committed its writes to it.")));
		for (PendKey *pk = ps[i]->first; pk != NULL; pk = pk->next)
			finalize_key(pk);
		any_logged |= ps[i]->desc.logged;
	}
	PopActiveSnapshot();
	FAULT_POINT("commit.before_reserve");

	/*
	 * What the apply needs, set aside in every backend now: after the commit
	 * record nothing may fail.
	 */
	for (int i = 0; i < n; i++)
		reserve_state(ps[i]);
	FAULT_POINT("commit.after_reserve");
	for (int i = 0; i < n; i++)
		any_staged |= state_stage(ps[i]) != NULL;
	if (any_logged || any_staged)
		(void) GetTopTransactionId();
	gate_enter();
	FAULT_POINT("commit.in_gate");
	for (int i = 0; i < n; i++)
		if (ps[i]->desc.logged)
			for (PendKey *pk = ps[i]->first; pk != NULL; pk = pk->next)
				log_key(pk);
	if (any_staged)
		stage_writes(ps, n, U64FromFullTransactionId(GetTopFullTransactionId()));
	pfree(ps);
	/* The last step before PostgreSQL writes the commit record. */
	FAULT_POINT("commit.before_commit_record");
}

/* -------------------------------------------------------------- commit */

static void
apply_key(PendState *ps, PendKey *pk)
{
	const StateTarget *st = &ps->quiet_target;
	uint32		off = 0;
	PendMapOp	op;

	if (pk->base == PEND_SET)
		ps->inner->put(st, &pk->key, pk->image.data, pk->image.len);
	else if (pk->base == PEND_CLEARED)
		(void) ps->inner->remove(st, &pk->key);
	if (pk->has_tail)
		ps->inner->append(st, &pk->key, pk->tail.data, pk->tail.len);
	while (pend_mapop_next(pk, &off, &op))
	{
		if (op.tag == PEND_MAP_REMOVED)
			(void) ps->inner->map_remove(st, &pk->key, op.mkey, op.mkeylen);
		else
			ps->inner->map_put(st, &pk->key, op.mkey, op.mkeylen, op.value ? op.value : "",
							   op.vallen, op.tag == PEND_MAP_PUT_NULL);
	}
}

/* How many times a key's writes are tried after the commit record. */
#define APPLY_TRIES		4

/*
 * apply_key_retrying applies a key's writes, and tries them again a few
 * times, a little later each, when they fail: the transaction has
 * committed, so giving up loses them.  Trying again is safe: each of the
 * backend's writes fails whole, and the writes of a key before the one that
 * failed put what they put again (an image, a map entry, a removal), while
 * a list's elements come last.  The last failure is raised.
 */
static void
apply_key_retrying(PendState *ps, PendKey *pk, MemoryContext cxt)
{
	for (int attempt = 1;; attempt++)
	{
		volatile bool done = false;

		PG_TRY();
		{
			FAULT_POINT("apply.key");
			apply_key(ps, pk);
			done = true;
		}
		PG_CATCH();
		{
			if (attempt >= APPLY_TRIES)
				PG_RE_THROW();
			MemoryContextSwitchTo(cxt);
			FlushErrorState();
			LWLockReleaseAll();
		}
		PG_END_TRY();
		if (done)
			return;
		pg_usleep(10000L * attempt);
	}
}

/*
 * apply_staged has the state worker apply the staged writes, and waits
 * until it has, so that the keys stay locked meanwhile.  PostgreSQL holds
 * interrupts here, so the wait looks for a cancel or a terminate itself:
 * the transaction has committed, and the worker applies the writes whole
 * by itself once it sees that, so the wait ends with a WARNING; a cancel
 * is spent on it, a terminate ends the session after its commit.  A worker
 * that restarted since the prepare applies the commit itself (its recovery,
 * or its round for a stage the recovery kept) and tells the session.
 */
static void
apply_staged(void)
{
	MemoryContext cxt = CurrentMemoryContext;

	FAULT_POINT("apply.stage_before_ask");
	for (int j = 0; j < nstaged; j++)
	{
		PG_TRY();
		{
			staged_by[j]->apply();
		}
		PG_CATCH();
		{
			/* The worker applies them anyway, once it sees the commit. */
			MemoryContextSwitchTo(cxt);
			FlushErrorState();
		}
		PG_END_TRY();
	}
	FAULT_POINT("apply.stage_wait");
	for (int j = 0; j < nstaged; j++)
		staged_by[j]->wait(staged_fxid);
}

/*
 * txn_apply writes what the pre-commit readied.  The transaction has
 * committed: an error cannot abort it any more, so a state whose writes
 * fail (its backend failed meanwhile) is reported and the others go on.
 */
static void
txn_apply(void)
{
	MemoryContext cxt = CurrentMemoryContext;

	FAULT_POINT("apply.begin");
	for (PendState *ps = txn_pending_states(); ps != NULL; ps = ps->next)
	{
		FAULT_POINT("apply.state_before");
		/* What was set aside goes back just before the writes take it. */
		unreserve_state(ps);
		if (ps->staged)
			continue;			/* the state worker applies them: below */
		PG_TRY();
		{
			for (PendKey *pk = ps->first; pk != NULL; pk = pk->next)
				apply_key_retrying(ps, pk, cxt);
			FAULT_POINT("apply.state_written");
			if (keyed_backend_by_id(ps->desc.backend)->flush)
				keyed_backend_by_id(ps->desc.backend)->flush();
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			edata = catch_error(cxt);
			ereport(WARNING,
					(errcode(edata->sqlerrcode),
					 errmsg("the committed writes of transactional state \"%s\" could not all be applied: %s",
							NameStr(ps->desc.name), edata->message)));
			FreeErrorData(edata);
		}
		PG_END_TRY();
		FAULT_POINT("apply.state_after");
	}
	if (staged_fxid != 0)
		apply_staged();
	FAULT_POINT("apply.end");
}

/* The end of the transaction, however it ended. */
static void
txn_end(void)
{
	gate_leave();
	txn_locks_release();
	for (PendState *ps = txn_pending_states(); ps != NULL; ps = ps->next)
		unreserve_state(ps);
	for (int j = 0; j < nstaged; j++)
		staged_by[j]->end();
	nstaged = 0;
	staged_fxid = 0;
	committing = false;
	txn_pending_freeze(false);
	txn_pending_forget();
}

/* What the end of a transaction tells the layer above (txn_state.h). */
static TxnEndHook end_hook = NULL;

void
txn_state_set_end_hook(TxnEndHook hook)
{
	end_hook = hook;
}

/* The end of the transaction, then what the layer above hears of it. */
static void
txn_end_and_tell(bool committed)
{
	txn_end();
	if (end_hook != NULL)
		end_hook(committed);
}

static void
txn_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (txn_pending_any())
				txn_pre_commit();
			break;
		case XACT_EVENT_COMMIT:
			if (committing)
				txn_apply();
			/* Its timers are in their states now: their worker may look. */
			txn_end_and_tell(true);
			break;
		case XACT_EVENT_ABORT:
			txn_standby_read_release();
			txn_end_and_tell(false);
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (txn_pending_any())
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that wrote to transactional states"),
						 errhint("Commit it instead; PREPARE TRANSACTION is not supported with transactional states.")));
			/* A truncate's lock of the state would outlive the session. */
			if (txn_locks_state_held())
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that truncated a transactional state"),
						 errhint("Commit it instead; PREPARE TRANSACTION is not supported with transactional states.")));
			break;
		case XACT_EVENT_PREPARE:
			txn_end_and_tell(false);
			break;
		default:
			break;
	}
}

static void
txn_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					 SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_COMMIT_SUB)
		txn_pending_subxact_commit(mySubid, parentSubid);
	else if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		txn_standby_read_release();
		txn_pending_subxact_abort(mySubid);
	}
}

/*
 * txn_state_init registers the transaction callbacks (in _PG_init): in a
 * transaction that wrote no transactional state they look at one pointer
 * and return.
 */
void
txn_state_init(void)
{
	RegisterXactCallback(txn_xact_callback, NULL);
	RegisterSubXactCallback(txn_subxact_callback, NULL);
}
