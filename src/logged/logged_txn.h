/*
 * logged/logged_txn.h
 *		Recovery of logged transactional states: their WAL records held
 *		until their transaction's end is met (logged_txn.c).
 */
#ifndef STATE_BACKEND_LOGGED_TXN_H
#define STATE_BACKEND_LOGGED_TXN_H

#include "nodes/pg_list.h"

#include "format/state_wal.h"

/* A record held: decoded, its images copied, with the end of its record. */
typedef struct HeldRecord
{
	StateWalRecord rec;
	XLogRecPtr	start;
	XLogRecPtr	end;
} HeldRecord;

extern void replay_txn_hold(const StateWalRecord *rec, XLogRecPtr start, XLogRecPtr end);
extern XLogRecPtr replay_txn_oldest(void);
extern bool replay_txn_any(void);
extern List *replay_txn_take(TransactionId xid);
extern void replay_txn_applied(TransactionId xid, int n);
extern void replay_txn_forget(TransactionId xid);
extern void replay_txn_forget_before(TransactionId xid);
extern int64 replay_txn_end(void);

#endif							/* STATE_BACKEND_LOGGED_TXN_H */
