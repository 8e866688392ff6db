/*
 * backend/rocksdb/rocks_stage.c
 *		A transactional commit's writes to rocksdb states, applied whole
 *		or not at all, and never lost once committed: the state worker's
 *		side of staged commits (rocks_client.c stages them, txn/txn_commit.c
 *		drives them).
 *
 * Before its commit record the committing session sends its writes
 * tagged with its stage (ROCKS_REQ_STAGE); the worker keeps them aside,
 * in memory, untouched.  ROCKS_REQ_STAGE_PREPARE writes them to RocksDB as
 * one intent record (the default family, key "txn_intent:" and the
 * transaction's full xid), synced, before the session writes its commit
 * record: an error (a full disk) refuses the commit.  Once the transaction
 * has committed, the writes are applied in one RocksDB write batch
 * together with the intent record's removal: all of them or none, at
 * once.  The worker applies them when the session asks
 * (ROCKS_REQ_STAGE_APPLY), or by itself as soon as it sees, between rounds,
 * that the transaction is no longer running (the session may have been
 * cancelled or terminated after its commit, or have died): committed, it
 * applies them; aborted, it forgets them.  A start finds the intent
 * records left by a crash and does the same by the transaction's status.
 * The stage ends by telling the session, through a board in shared memory
 * (per PGPROC, the last commit whose writes were applied) that the
 * provider sets up with its shared memory (rocks_stage_shmem_size) and the
 * transactional layer waits on through the backend's stage routines
 * (rocks_stage_wait).
 *
 * A worker that restarts alone (it exited after a failed write, or on a
 * FATAL) loses the stages it held in memory, and not the sessions that
 * sent them.  So the prepare carries how many writes the session staged,
 * and a worker that holds another number (it started while they were
 * sent) refuses the commit; the recovery keeps an intent record whose
 * transaction is still running as a prepared stage of that transaction's
 * session (found from its PGPROC), to be applied or forgotten once the
 * transaction ends as any other; an apply asked for a stage the worker
 * does not hold (the recovery applied it) is answered at once; and the
 * session puts the commit it will wait for on the board once its stage is
 * prepared, so that a recovery applying that commit tells it.
 */
#include "postgres.h"

#include "access/clog.h"
#include "access/transam.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/condition_variable.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "utils/wait_event.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "rocks.h"
#include "rocks_internal.h"

#define INTENT_PREFIX	"txn_intent:"
#define INTENT_PREFIX_LEN	(sizeof(INTENT_PREFIX) - 1)

typedef struct Stage
{
	uint32		stage;			/* hash key */
	uint64		fxid;
	bool		prepared;		/* its intent record is written */
	bool		recovered;		/* read back from its intent at a restart */
	uint32		count;			/* how many writes it holds */
	StringInfoData writes;		/* [uint16 kind][uint32 len][request] each */
} Stage;

static HTAB *stages = NULL;

static void intent_remove(uint64 fxid);

/* Per PGPROC, the last staged commit (a full xid) whose writes are applied. */
typedef struct StageBoard
{
	ConditionVariable cv;
	/* applied, then (expected) per PGPROC the commit it prepared last */
	pg_atomic_uint64 applied[FLEXIBLE_ARRAY_MEMBER];
} StageBoard;

#define EXPECTED(i)		(&board->applied[MaxBackends + (i)])

static StageBoard *board = NULL;

Size
rocks_stage_shmem_size(void)
{
	return add_size(offsetof(StageBoard, applied),
					mul_size(2 * MaxBackends, sizeof(pg_atomic_uint64)));
}

void
rocks_stage_shmem_init(void)
{
	bool		found;

	board = ShmemInitStruct("state_backend staged commits", rocks_stage_shmem_size(), &found);
	if (!found)
	{
		ConditionVariableInit(&board->cv);
		for (int i = 0; i < 2 * MaxBackends; i++)
			pg_atomic_init_u64(&board->applied[i], 0);
	}
}

/*
 * stage_applied: the state worker applied (or, for a transaction that did
 * not commit, forgot) the staged writes of commit fxid of the session whose
 * stage is "stage" (its PGPROC number + 1).
 */
static void
stage_applied(uint32 stage, uint64 fxid)
{
	if (stage == 0 || stage > (uint32) MaxBackends)
		return;
	pg_atomic_write_u64(&board->applied[stage - 1], fxid);
	ConditionVariableBroadcast(&board->cv);
}

/*
 * rocks_stage_expect, in the committing session once its stage is prepared
 * (before its commit record): the board says which commit it will wait
 * for, so that a worker that restarts and applies the commit in its
 * recovery can tell it.
 */
void
rocks_stage_expect(uint64 fxid)
{
	pg_atomic_write_u64(EXPECTED(MyProc->pgprocno), fxid);
}

/* The recovery applied commit fxid: the session that waits for it is told. */
static void
tell_expecting(uint64 fxid)
{
	for (int i = 0; i < MaxBackends; i++)
		if (pg_atomic_read_u64(EXPECTED(i)) == fxid)
			stage_applied((uint32) i + 1, fxid);
}

/*
 * rocks_stage_wait, in the committing session, until the worker applied
 * the staged writes of its commit fxid (told by the worker that holds its
 * stage, or by the recovery of one that restarted, rocks_stage_expect).
 * PostgreSQL holds interrupts in a commit, so the wait looks for a cancel
 * or a terminate itself: the transaction has committed and the worker
 * applies its writes whole by itself, so the wait ends with a WARNING.
 */
void
rocks_stage_wait(uint64 fxid)
{
	pg_atomic_uint64 *done = &board->applied[MyProc->pgprocno];

	while (pg_atomic_read_u64(done) != fxid)
	{
		if (ProcDiePending || QueryCancelPending)
		{
			ereport(WARNING,
					(errcode(ERRCODE_QUERY_CANCELED),
					 errmsg("canceling the wait for the apply of this transaction's writes to rocksdb states"),
					 errdetail("The transaction has already committed; the state worker applies its writes whole.")));
			QueryCancelPending = false;
			break;
		}
		(void) ConditionVariableTimedSleep(&board->cv, 100, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
}


static void
stages_init(void)
{
	HASHCTL		ctl;

	if (stages)
		return;
	ctl.keysize = sizeof(uint32);
	ctl.entrysize = sizeof(Stage);
	ctl.hcxt = TopMemoryContext;
	stages = hash_create("state_backend rocksdb stages", 16, &ctl,
						 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

static void
intent_key(StringInfo k, uint64 fxid)
{
	initStringInfo(k);
	appendBinaryStringInfo(k, INTENT_PREFIX, INTENT_PREFIX_LEN);
	appendBinaryStringInfo(k, (const char *) &fxid, sizeof(fxid));
}

static void
stage_forget(Stage *s)
{
	uint32		id = s->stage;

	pfree(s->writes.data);
	(void) hash_search(stages, &id, HASH_REMOVE, NULL);
}

/*
 * apply_writes runs a stage's writes into the instance's batch with its
 * commits held, adds the intent record's removal, and writes the batch:
 * one RocksDB write.  fix_slots: the writes come from before a restart,
 * so their registry slots are looked up again (a dropped state's writes
 * are skipped).  On an error nothing is written and the intent stays.
 */
static int
apply_writes(const char *data, uint32 len, uint64 fxid, bool fix_slots)
{
	StringInfoData reply;
	StringInfoData key;
	uint32		off = 0;
	int			skipped = 0;

	rocks_commit();				/* what was gathered before goes first, alone */
	initStringInfo(&reply);
	rocks_commit_held = true;
	PG_TRY();
	{
		while (off + sizeof(uint16) + sizeof(uint32) <= len)
		{
			uint16		kind;
			uint32		rlen;
			char	   *req;

			memcpy(&kind, data + off, sizeof(kind));
			memcpy(&rlen, data + off + sizeof(kind), sizeof(rlen));
			off += sizeof(kind) + sizeof(rlen);
			if (rlen > len - off || rlen < sizeof(RocksRequest))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("a staged commit of rocksdb states is damaged")));
			req = (char *) data + off;
			off += rlen;
			if (fix_slots)
			{
				RocksRequest h;
				StateInfo	info;
				int			slot;

				memcpy(&h, req, sizeof(h));
				slot = rocks_host->state_find(h.state_id, &info);
				if (slot < 0)
				{
					skipped++;
					continue;
				}
				h.slot = slot;
				req = palloc(rlen);
				memcpy(req, data + off - rlen, rlen);
				memcpy(req, &h, sizeof(h));
			}
			FAULT_POINT_HOST("apply.rocksdb_stage_write");
			resetStringInfo(&reply);
			(void) rocks_handle_request((RocksReqKind) kind, req, rlen, &reply);
		}
		intent_key(&key, fxid);
		rocksdb_writebatch_delete_cf(rocks.batch, rocks.deflt, key.data, key.len);
		pfree(key.data);
		/* Still held: a worker that exits here makes none of it (rocks_close). */
		FAULT_POINT_HOST("apply.rocksdb_stage_before_write");
	}
	PG_CATCH();
	{
		rocks_commit_held = false;
		rocksdb_writebatch_clear(rocks.batch);
		rocks.batch_clears++;
		rocks.batch_lsn = InvalidXLogRecPtr;
		rocks.batch_replayed = false;
		rocks_cache_committed(false);
		PG_RE_THROW();
	}
	PG_END_TRY();
	rocks_commit_held = false;
	rocks_commit();
	pfree(reply.data);
	return skipped;
}

/*
 * commit_durable: WAL before data.  An asynchronous commit (synchronous_commit
 * off) is seen as committed before its record is flushed; a crash that
 * loses the record aborts the transaction, so its writes must not be in the
 * instance before it is flushed.  The commit log gives the position to
 * flush to (nothing for a commit that flushed its record itself).
 */
static void
commit_durable(uint64 fxid)
{
	XLogRecPtr	lsn = InvalidXLogRecPtr;

	if (RecoveryInProgress())
		return;
	(void) TransactionIdGetStatus(XidFromFullTransactionId(FullTransactionIdFromU64(fxid)), &lsn);
	if (!XLogRecPtrIsInvalid(lsn))
		XLogFlush(lsn);
}

/* A stage's end: applied when its transaction committed, forgotten otherwise. */
static void
stage_resolve(Stage *s, bool committed)
{
	if (committed)
	{
		int			skipped;

		commit_durable(s->fxid);
		skipped = apply_writes(s->writes.data, s->writes.len, s->fxid, s->recovered);

		if (s->recovered)
			ereport(LOG,
					(errmsg("state_backend applied the writes to rocksdb states of transaction %llu, which committed after the state worker restarted",
							(unsigned long long) s->fxid),
					 skipped > 0 ? errdetail("%d writes to states dropped since were left out.", skipped) : 0));
	}
	else if (s->prepared)
		intent_remove(s->fxid);
	stage_applied(s->stage, s->fxid);
	stage_forget(s);
}

/* Whether a transaction (a full xid of this server's epoch) is still running. */
static bool
xact_running(uint64 fxid)
{
	return TransactionIdIsInProgress(XidFromFullTransactionId(FullTransactionIdFromU64(fxid)));
}

static bool
xact_committed(uint64 fxid)
{
	return TransactionIdDidCommit(XidFromFullTransactionId(FullTransactionIdFromU64(fxid)));
}

/*
 * rocks_serve_request runs one request in the worker: a staged commit's
 * here, any other by rocks_handle_request.  Returns whether a reply was
 * produced.
 */
bool
rocks_serve_request(RocksReqKind op, const char *payload, uint32 len, StringInfo reply)
{
	if (op == ROCKS_REQ_STAGE || op == ROCKS_REQ_STAGE_PREPARE || op == ROCKS_REQ_STAGE_APPLY)
		return rocks_stage_handle(op, payload, len, reply);
	return rocks_handle_request(op, payload, len, reply);
}

/*
 * rocks_stage_handle serves a staged-commit request (ROCKS_REQ_STAGE*);
 * returns whether a reply was produced.
 */
bool
rocks_stage_handle(RocksReqKind op, const char *payload, uint32 len, StringInfo reply)
{
	RocksStageHeader h;
	Stage	   *s;
	bool		found;

	if (len < sizeof(h))
		elog(ERROR, "state_backend: short staged request");
	memcpy(&h, payload, sizeof(h));
	stages_init();
	s = hash_search(stages, &h.stage, HASH_ENTER, &found);
	if (found && s->fxid != h.fxid)
	{
		/* The session's earlier commit: its end was not seen yet. */
		stage_resolve(s, !xact_running(s->fxid) && xact_committed(s->fxid));
		s = hash_search(stages, &h.stage, HASH_ENTER, &found);
	}
	if (!found)
	{
		s->fxid = h.fxid;
		s->prepared = false;
		s->recovered = false;
		s->count = 0;
		s->writes.data = MemoryContextAlloc(TopMemoryContext, 1024);
		s->writes.maxlen = 1024;
		s->writes.len = 0;
		s->writes.cursor = 0;
		s->writes.data[0] = '\0';
	}
	switch (op)
	{
		case ROCKS_REQ_STAGE:
			{
				uint16		kind;
				uint32		rlen;
				MemoryContext old;

				if (len < sizeof(h) + sizeof(kind))
					elog(ERROR, "state_backend: short staged request");
				memcpy(&kind, payload + sizeof(h), sizeof(kind));
				rlen = len - sizeof(h) - sizeof(kind);
				old = MemoryContextSwitchTo(TopMemoryContext);
				appendBinaryStringInfo(&s->writes, (const char *) &kind, sizeof(kind));
				appendBinaryStringInfo(&s->writes, (const char *) &rlen, sizeof(rlen));
				appendBinaryStringInfo(&s->writes, payload + sizeof(h) + sizeof(kind), rlen);
				MemoryContextSwitchTo(old);
				s->count++;
				return false;
			}
		case ROCKS_REQ_STAGE_PREPARE:
			{
				StringInfoData key;
				rocksdb_writeoptions_t *sync = rocksdb_writeoptions_create();
				char	   *err = NULL;

				FAULT_POINT_HOST("commit.rocksdb_stage_prepare");
				rocks_check_not_failed();
				if (s->count != h.count)
				{
					uint32		held = s->count;

					/* Its writes are incomplete: the transaction aborts. */
					stage_forget(s);
					ereport(ERROR,
							(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
							 errmsg("could not stage the writes of this transaction to rocksdb states"),
							 errdetail("The state worker restarted while they were sent: it holds %u of the %u writes.",
									   held, h.count),
							 errhint("The transaction can be retried.")));
				}
				rocks_check_space_for(2 * (uint64) s->writes.len);
				intent_key(&key, s->fxid);
				rocksdb_writeoptions_set_sync(sync, 1);
				rocksdb_put_cf(rocks.db, sync, rocks.deflt, key.data, key.len,
							   s->writes.data, s->writes.len, &err);
				rocksdb_writeoptions_destroy(sync);
				pfree(key.data);
				if (err)
					rocks.failed = true;
				rocks_check(err, "write a staged commit");
				s->prepared = true;
				return true;
			}
		default:

			/*
			 * ROCKS_REQ_STAGE_APPLY: its transaction has committed.  A stage
			 * this worker does not hold was applied by its recovery (the
			 * worker restarted after the commit record): the session is told
			 * all the same.
			 */
			if (s->prepared)
				stage_resolve(s, true);
			else
			{
				stage_forget(s);
				stage_applied(h.stage, h.fxid);
			}
			return false;
	}
}

/*
 * rocks_stage_round, between the worker's rounds: a stage whose
 * transaction is no longer running is applied (committed) or forgotten,
 * before any request is served that could read what it writes.
 */
void
rocks_stage_round(void)
{
	HASH_SEQ_STATUS seq;
	Stage	   *s;
	uint32		ids[64];
	int			n = 0;
	bool		receiving = false;
	bool		waiting = false;

	if (stages == NULL || hash_get_num_entries(stages) == 0)
		return;
	hash_seq_init(&seq, stages);
	while ((s = hash_seq_search(&seq)) != NULL)
	{
		if (!xact_running(s->fxid))
		{
			if (n < lengthof(ids))
				ids[n++] = s->stage;
		}
		else if (!s->recovered)
		{
			/* A stage being received, or prepared and waiting for its commit. */
			if (s->prepared)
				waiting = true;
			else
				receiving = true;
		}
	}
	if (receiving)
		FAULT_POINT_HOST("commit.rocksdb_stage_receiving");
	if (waiting)
		FAULT_POINT_HOST("commit.rocksdb_stage_waiting");
	for (int i = 0; i < n; i++)
	{
		s = hash_search(stages, &ids[i], HASH_FIND, NULL);
		if (s == NULL)
			continue;
		FAULT_POINT_HOST("apply.rocksdb_stage_resolve");
		stage_resolve(s, s->prepared && xact_committed(s->fxid));
	}
}

typedef struct Intent
{
	uint64		fxid;
	char	   *data;
	uint32		len;
} Intent;

typedef struct IntentList
{
	List	   *items;
} IntentList;

static bool
collect_intent(void *arg, const char *k, size_t klen, const char *v, size_t vlen)
{
	IntentList *l = arg;
	Intent	   *in;

	if (klen != INTENT_PREFIX_LEN + sizeof(uint64) ||
		memcmp(k, INTENT_PREFIX, INTENT_PREFIX_LEN) != 0)
		return true;
	in = palloc(sizeof(Intent));
	memcpy(&in->fxid, k + INTENT_PREFIX_LEN, sizeof(uint64));
	in->data = palloc(vlen);
	memcpy(in->data, v, vlen);
	in->len = (uint32) vlen;
	l->items = lappend(l->items, in);
	return true;
}

/* Removes an intent record: its transaction did not commit. */
static void
intent_remove(uint64 fxid)
{
	StringInfoData key;
	char	   *err = NULL;

	rocks_check_not_failed();
	intent_key(&key, fxid);
	rocksdb_delete_cf(rocks.db, rocks.wopts, rocks.deflt, key.data, key.len, &err);
	pfree(key.data);
	rocks_check(err, "remove a staged commit");
}

/*
 * intent_keep: the intent record of a transaction still running (the
 * worker restarted alone between its prepare and its commit record)
 * becomes again the prepared stage of its session, found from the
 * transaction's PGPROC (through its pid: PostgreSQL 15 has no lookup by
 * xid to the PGPROC itself); rocks_stage_round or the session's apply resolves
 * it once the transaction ends.  False when the transaction has ended
 * meanwhile (it left the proc array, so its status is final).
 */
static bool
intent_keep(Intent *in)
{
	TransactionId xid = XidFromFullTransactionId(FullTransactionIdFromU64(in->fxid));
	int			pid = BackendXidGetPid(xid);
	PGPROC	   *proc = pid != 0 ? BackendPidGetProc(pid) : NULL;
	uint32		id;
	Stage	   *s;
	bool		found;
	static uint32 sessionless = 0;

	if (proc != NULL)
		id = (uint32) proc->pgprocno + 1;
	else if (xact_running(in->fxid))
	{
		/* Not a session's (a prepared transaction): no one to tell. */
		id = (uint32) MaxBackends + 1 + sessionless++;
	}
	else
		return false;
	stages_init();
	s = hash_search(stages, &id, HASH_ENTER, &found);
	if (found)
		stage_forget(s);		/* cannot be: a session has one commit at a time */
	s = hash_search(stages, &id, HASH_ENTER, &found);
	s->fxid = in->fxid;
	s->prepared = true;
	s->recovered = true;
	s->count = 0;
	s->writes.data = MemoryContextAlloc(TopMemoryContext, in->len + 1);
	memcpy(s->writes.data, in->data, in->len);
	s->writes.data[in->len] = '\0';
	s->writes.len = in->len;
	s->writes.maxlen = in->len + 1;
	s->writes.cursor = 0;
	ereport(LOG,
			(errmsg("state_backend keeps the staged writes to rocksdb states of transaction %llu, still running, until it ends",
					(unsigned long long) in->fxid)));
	return true;
}

/*
 * rocks_stage_recover, at a start that kept the instance: the intent
 * records a crash or the worker's exit left are applied when their
 * transaction committed and removed when it aborted; one whose transaction
 * is still running (only when the worker restarted alone) is kept as a
 * prepared stage.  A session waiting for a commit applied here is told
 * (rocks_stage_expect).  Not on a standby (its instance is set aside).
 */
void
rocks_stage_recover(void)
{
	IntentList	l = {NIL};
	ListCell   *lc;
	StringInfoData prefix;
	StringInfoData to;

	if (RecoveryInProgress() || rocks.db == NULL)
		return;

	/*
	 * Every key that starts with the prefix, whatever the xid's bytes after
	 * it (a bound of the prefix and one byte 0xFF would leave out the xids
	 * whose first byte there is 0xFF).
	 */
	initStringInfo(&prefix);
	appendBinaryStringInfo(&prefix, INTENT_PREFIX, INTENT_PREFIX_LEN);
	initStringInfo(&to);
	rocks_prefix_end(&prefix, &to);
	rocks_scan(rocks.db, rocks.ropts, rocks.deflt, prefix.data, prefix.len,
			   to.data, to.len, collect_intent, &l);
	foreach(lc, l.items)
	{
		Intent	   *in = lfirst(lc);

		if (xact_running(in->fxid) && intent_keep(in))
			continue;
		FAULT_POINT_HOST("apply.rocksdb_stage_recover");
		if (xact_committed(in->fxid))
		{
			int			skipped;

			commit_durable(in->fxid);
			skipped = apply_writes(in->data, in->len, in->fxid, true);

			tell_expecting(in->fxid);
			ereport(LOG,
					(errmsg("state_backend applied the writes to rocksdb states of transaction %llu, which committed before the restart",
							(unsigned long long) in->fxid),
					 skipped > 0 ? errdetail("%d writes to states dropped since were left out.", skipped) : 0));
		}
		else
			intent_remove(in->fxid);
	}
}
