/*
 * txn/txn_internal.h
 *		What the two halves of transactional states share: the writes a
 *		transaction keeps (txn_state.c, which reads over them) and their
 *		commit (txn_commit.c).
 *
 * A transaction's writes are kept per key, in TopTransactionContext, as
 * what the key's state becomes over the state committed by the time the
 * transaction commits:
 *	- a base: the committed state (PEND_OVER), an image that replaces it
 *	  (PEND_SET: value_set, list_update), or nothing (PEND_CLEARED: clear);
 *	- then, for lists, elements appended (tail, a list image); for reducing
 *	  and aggregating states, the fold of the values reduced (tail, one
 *	  image, combined with the base at commit: sum, min and max fold so,
 *	  aggregates with their combine function); for maps, the map entries
 *	  set or removed (mapops, pairs whose value starts with a tag byte).
 */
#ifndef STATE_BACKEND_TXN_INTERNAL_H
#define STATE_BACKEND_TXN_INTERNAL_H

#include "access/xact.h"
#include "lib/stringinfo.h"
#include "storage/lockdefs.h"

#include "backend/keyed_backend.h"
#include "txn/txn_state.h"

typedef enum PendBase
{
	PEND_OVER,
	PEND_SET,
	PEND_CLEARED
} PendBase;

/* Tags of a map entry's pending change (first byte of its value in mapops). */
#define PEND_MAP_PUT		'v'
#define PEND_MAP_PUT_NULL	'n'
#define PEND_MAP_REMOVED	'r'

typedef struct PendState PendState;

/* The hash key of a pending key: the key image is the entry's own copy. */
typedef struct PendKeyId
{
	uint32		state_id;
	uint32		hash;
	uint32		len;
	const char *data;
} PendKeyId;

typedef struct PendKey
{
	PendKeyId	id;
	PendState  *state;
	StateKey	key;			/* over id.data */
	PendBase	base;
	StringInfoData image;		/* PEND_SET */
	bool		has_tail;
	StringInfoData tail;
	StringInfoData mapops;
	SubTransactionId subid;		/* its undo was saved in this subtransaction */
	struct PendKey *next;		/* the state's keys, in the order first written */
} PendKey;

/* A state the transaction wrote, as it was when first written. */
struct PendState
{
	uint32		state_id;
	StateDesc	desc;
	StateTarget target;			/* desc: &desc */
	StateDesc	quiet;			/* the same, not logged: the apply at commit */
	StateTarget quiet_target;
	const KeyedStateBackend *inner;
	void	   *reservation;	/* its backend's, for the commit's apply */
	bool		reserved;
	bool		staged;			/* its writes were staged (rocksdb) */
	StateMergeFn combine;		/* reducing, aggregating: set up when needed */
	void	   *combine_arg;
	PendKey    *first;
	PendKey    *last;
	int			nkeys;
	PendState  *next;
};

/* The transaction's writes (txn_state.c). */
extern PendState *txn_pending_states(void);
extern bool txn_pending_any(void);
extern void txn_pending_forget(void);
extern bool pend_key_empty(const PendKey *pk);

/* One pending map change, as pend_mapop_next reads it. */
typedef struct PendMapOp
{
	const char *mkey;
	uint32		mkeylen;
	char		tag;			/* PEND_MAP_* */
	const char *value;			/* PEND_MAP_PUT only */
	uint32		vallen;
} PendMapOp;

extern bool pend_mapop_next(const PendKey *pk, uint32 *off, PendMapOp *op);
extern void pend_combine(PendState *ps, const char *cur, uint32 curlen, const char *delta,
						 uint32 dlen, StringInfo out);

/* Subtransactions (txn_state.c): undo of what one wrote. */
extern void txn_pending_subxact_commit(SubTransactionId mine, SubTransactionId parent);
extern void txn_pending_subxact_abort(SubTransactionId mine);

extern void txn_pending_freeze(bool on);

/* What keeps commits apart (txn_locks.c). */
extern void txn_lock_key(uint32 state_id, uint32 hash);
extern void txn_use_state(const StateTarget *st);
extern void txn_use_state_whole(const StateTarget *st);
extern void txn_use_state_whole_end(const StateTarget *st);
extern void txn_locks_release(void);
extern bool txn_locks_state_held(void);
extern void txn_standby_read_begin(void);
extern void txn_standby_read_end(void);
extern void txn_standby_read_release(void);

#endif							/* STATE_BACKEND_TXN_INTERNAL_H */
