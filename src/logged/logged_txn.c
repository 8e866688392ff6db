/*
 * logged/logged_txn.c
 *		Recovery of logged transactional states: the records of their
 *		commits are applied only once the transaction's commit record is
 *		met.
 *
 * A transaction's records (format/state_wal.h: STATE_WAL_TXN_OFFSET) come
 * before its commit record, which may never come: the server crashed in
 * between, or the commit failed after them.  Replay (logged_replay.c)
 * holds them here per xid; the transaction's commit record hands them back
 * to be applied, in the order they were logged, its abort record forgets
 * them, and whatever is still held when WAL ends is forgotten: those
 * transactions never committed.  The records hold whole images, map
 * entries, removals and the elements a commit appends to a list; a replay
 * that begins again before a commit it applied (a standby's worker
 * started again) forgets that commit's records instead of applying them
 * twice.
 */
#include "postgres.h"

#include "access/transam.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "common/local_hash.h"
#include "logged/logged_txn.h"

typedef struct HeldTxn
{
	TransactionId xid;			/* hash key */
	MemoryContext cxt;
	List	   *records;		/* of HeldRecord, in WAL order */
} HeldTxn;

static HTAB *held = NULL;

static char *
copy_image(MemoryContext cxt, const char *p, uint32 len)
{
	char	   *c;

	if (p == NULL)
		return NULL;
	c = MemoryContextAlloc(cxt, len + 1);
	memcpy(c, p, len);
	c[len] = '\0';
	return c;
}

/* replay_txn_hold keeps a transactional record until its xid ends. */
void
replay_txn_hold(const StateWalRecord *rec, XLogRecPtr start, XLogRecPtr end)
{
	HeldTxn    *t;
	HeldRecord *h;
	bool		found;
	MemoryContext old;

	if (held == NULL)
		held = local_hash_create("state_backend held transactions", 64,
								 sizeof(TransactionId), sizeof(HeldTxn), TopMemoryContext);
	t = hash_search(held, &rec->xid, HASH_ENTER, &found);
	if (!found)
	{
		t->cxt = AllocSetContextCreate(TopMemoryContext, "state_backend held transaction",
									   ALLOCSET_SMALL_SIZES);
		t->records = NIL;
	}
	old = MemoryContextSwitchTo(t->cxt);
	h = palloc(sizeof(HeldRecord));
	h->rec = *rec;
	h->rec.key = copy_image(t->cxt, rec->key, rec->keylen);
	h->rec.map_key = copy_image(t->cxt, rec->map_key, rec->map_keylen);
	h->rec.value = copy_image(t->cxt, rec->value, rec->valuelen);
	h->start = start;
	h->end = end;
	t->records = lappend(t->records, h);
	MemoryContextSwitchTo(old);
}

/* Is any transaction's record held (so that xact records matter)? */
bool
replay_txn_any(void)
{
	return held != NULL && hash_get_num_entries(held) > 0;
}

/* Where the oldest record held begins (InvalidXLogRecPtr: none held). */
XLogRecPtr
replay_txn_oldest(void)
{
	XLogRecPtr	oldest = InvalidXLogRecPtr;
	HASH_SEQ_STATUS seq;
	HeldTxn    *t;

	if (held == NULL)
		return InvalidXLogRecPtr;
	hash_seq_init(&seq, held);
	while ((t = hash_seq_search(&seq)) != NULL)
	{
		HeldRecord *h = linitial(t->records);

		if (oldest == InvalidXLogRecPtr || h->start < oldest)
			oldest = h->start;
	}
	return oldest;
}

/* The records held for xid (NIL: none); replay_txn_forget frees them. */
List *
replay_txn_take(TransactionId xid)
{
	HeldTxn    *t = held ? hash_search(held, &xid, HASH_FIND, NULL) : NULL;

	return t ? t->records : NIL;
}

/*
 * replay_txn_applied: the first n records held for xid are applied (its
 * commit record's apply failed at the next one): they are held no more,
 * so that the commit record's next reading applies only the rest.
 */
void
replay_txn_applied(TransactionId xid, int n)
{
	HeldTxn    *t = held ? hash_search(held, &xid, HASH_FIND, NULL) : NULL;

	if (t == NULL || n <= 0)
		return;
	t->records = list_delete_first_n(t->records, n);
	if (t->records == NIL)
	{
		MemoryContextDelete(t->cxt);
		(void) hash_search(held, &xid, HASH_REMOVE, NULL);
	}
}

void
replay_txn_forget(TransactionId xid)
{
	HeldTxn    *t = held ? hash_search(held, &xid, HASH_FIND, NULL) : NULL;

	if (t == NULL)
		return;
	MemoryContextDelete(t->cxt);
	(void) hash_search(held, &xid, HASH_REMOVE, NULL);
}

/*
 * replay_txn_forget_before forgets the transactions that precede xid, the
 * oldest one running on the primary (a RUNNING_XACTS record): those that
 * ended without a commit or abort record (a crash of the primary) would be
 * held for ever by a standby that goes on.
 */
void
replay_txn_forget_before(TransactionId xid)
{
	HASH_SEQ_STATUS seq;
	HeldTxn    *t;

	if (held == NULL || !TransactionIdIsNormal(xid))
		return;
	hash_seq_init(&seq, held);
	while ((t = hash_seq_search(&seq)) != NULL)
		if (TransactionIdPrecedes(t->xid, xid))
		{
			MemoryContextDelete(t->cxt);
			(void) hash_search(held, &t->xid, HASH_REMOVE, NULL);
		}
}

/* WAL ended: forget every transaction not committed; returns how many. */
int64
replay_txn_end(void)
{
	int64		n = 0;
	HASH_SEQ_STATUS seq;
	HeldTxn    *t;

	if (held == NULL)
		return 0;
	hash_seq_init(&seq, held);
	while ((t = hash_seq_search(&seq)) != NULL)
	{
		MemoryContextDelete(t->cxt);
		n++;
	}
	hash_destroy(held);
	held = NULL;
	return n;
}
