/*
 * txn/txn_state.c
 *		Transactional states: the layer between the SQL functions and the
 *		backend of a state created with transactional => true.
 *
 * Like the TTL layer, it is a KeyedStateBackend over the state's own one
 * (or over the TTL layer, for a state with a TTL); keyed_state_ops hands
 * it out for every transactional state, so other states go through none
 * of it.  A write is kept in this session, in TopTransactionContext (see
 * txn_internal.h for what is kept per key); a read looks at the
 * transaction's own writes over the committed state; the commit applies
 * them (txn_commit.c), and an abort forgets them.
 *
 * Subtransactions (SAVEPOINT, PL/pgSQL exception blocks): the first write
 * of a key in a subtransaction saves what the key had pending before on
 * an undo stack; ROLLBACK TO pops the subtransaction's saves back, and its
 * commit hands them to its parent.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "common/local_hash.h"
#include "format/records.h"
#include "ttl/ttl_state.h"
#include "txn/txn_internal.h"

/* What a key had pending when a subtransaction first wrote it. */
typedef struct PendUndo
{
	SubTransactionId subid;
	PendKey    *pk;
	SubTransactionId prev_subid;
	PendBase	base;
	bool		has_tail;
	char	   *image;
	uint32		imagelen;
	char	   *tail;
	uint32		taillen;
	char	   *mapops;
	uint32		mapopslen;
	struct PendUndo *next;
} PendUndo;

/*
 * The transaction's keys.  The table lives across transactions (made once
 * per session, emptied at each end), so that a transaction of one call
 * does not pay for making one; a transaction that wrote many keys leaves
 * it to be made afresh.  What its entries point to is the transaction's.
 */
#define PENDING_KEEP_KEYS	256

static HTAB *pending = NULL;
static MemoryContext pending_cxt = NULL;
static bool frozen = false;		/* being committed: no more writes */
static PendState *states = NULL;
static PendUndo *undo = NULL;
static TxnCombineSetup combine_setup = NULL;

void
txn_state_set_combine(TxnCombineSetup setup)
{
	combine_setup = setup;
}

static uint32
pend_hash(const void *key, Size keysize)
{
	const PendKeyId *k = key;

	return k->hash ^ (k->state_id * 0x9E3779B1U);
}

static int
pend_match(const void *a, const void *b, Size keysize)
{
	const PendKeyId *x = a;
	const PendKeyId *y = b;

	if (x->state_id != y->state_id || x->hash != y->hash || x->len != y->len)
		return 1;
	return memcmp(x->data, y->data, x->len);
}

PendState *
txn_pending_states(void)
{
	return states;
}

bool
pend_key_empty(const PendKey *pk)
{
	return pk->base == PEND_OVER && !pk->has_tail && pk->mapops.len == 0;
}

/* Has the transaction any write left to apply? */
bool
txn_pending_any(void)
{
	for (PendState *ps = states; ps != NULL; ps = ps->next)
		for (PendKey *pk = ps->first; pk != NULL; pk = pk->next)
			if (!pend_key_empty(pk))
				return true;
	return false;
}

/* While the commit applies the writes, no more may come. */
void
txn_pending_freeze(bool on)
{
	frozen = on;
}

/* The transaction ended: its memory goes with TopTransactionContext. */
void
txn_pending_forget(void)
{
	if (pending != NULL && hash_get_num_entries(pending) > PENDING_KEEP_KEYS)
	{
		MemoryContextReset(pending_cxt);
		pending = NULL;
	}
	else if (pending != NULL && states != NULL)
	{
		for (PendState *ps = states; ps != NULL; ps = ps->next)
			for (PendKey *pk = ps->first; pk != NULL; pk = pk->next)
				(void) hash_search(pending, &pk->id, HASH_REMOVE, NULL);
		/* An entry that no state lists (an error as it was made): start afresh. */
		if (hash_get_num_entries(pending) != 0)
		{
			MemoryContextReset(pending_cxt);
			pending = NULL;
		}
	}
	states = NULL;
	undo = NULL;
}

static PendState *
pend_state(const StateTarget *st, bool create)
{
	PendState  *ps;

	for (ps = states; ps != NULL; ps = ps->next)
		if (ps->state_id == st->desc->id)
			return ps;
	if (!create)
		return NULL;
	ps = MemoryContextAllocZero(TopTransactionContext, sizeof(PendState));
	ps->state_id = st->desc->id;
	ps->desc = *st->desc;
	ps->target = state_target(&ps->desc, st->slot);
	ps->quiet = *st->desc;
	ps->quiet.logged = false;
	ps->quiet_target = state_target(&ps->quiet, st->slot);
	ps->inner = keyed_state_ops_applied(st->desc);
	ps->next = states;
	states = ps;
	return ps;
}

static inline const KeyedStateBackend *
inner(const StateTarget *st)
{
	return keyed_state_ops_applied(st->desc);
}

/* The key's pending writes, or NULL (create: a new, empty entry). */
static PendKey *
pend_key(const StateTarget *st, const StateKey *key, bool create)
{
	PendKeyId	id;
	PendKey    *pk;
	bool		found;
	PendState  *ps;
	MemoryContext old;
	char	   *copy;
	StringInfoData image;
	StringInfoData tail;
	StringInfoData mapops;

	if (pending == NULL)
	{
		HASHCTL		ctl;

		if (!create)
			return NULL;
		if (pending_cxt == NULL)
			pending_cxt = AllocSetContextCreate(TopMemoryContext,
												"state_backend pending keys",
												ALLOCSET_DEFAULT_SIZES);
		ctl.keysize = sizeof(PendKeyId);
		ctl.entrysize = sizeof(PendKey);
		ctl.hash = pend_hash;
		ctl.match = pend_match;
		ctl.hcxt = pending_cxt;
		pending = hash_create("state_backend pending writes", 64, &ctl,
							  HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
	}
	id.state_id = st->desc->id;
	id.hash = key->hash;
	id.len = key->len;
	id.data = key->data;
	if (!create && states == NULL)
		return NULL;
	if (!create)
		return hash_search(pending, &id, HASH_FIND, NULL);
	pk = hash_search(pending, &id, HASH_FIND, NULL);
	if (pk != NULL)
		return pk;

	/* Everything that may fail comes before the entry is made. */
	ps = pend_state(st, true);
	old = MemoryContextSwitchTo(TopTransactionContext);
	copy = palloc(key->len + 1);
	memcpy(copy, key->data, key->len);
	initStringInfo(&image);
	initStringInfo(&tail);
	initStringInfo(&mapops);
	MemoryContextSwitchTo(old);
	id.data = copy;
	pk = hash_search(pending, &id, HASH_ENTER, &found);
	Assert(!found);
	pk->key = *key;
	pk->key.data = copy;
	pk->state = ps;
	pk->base = PEND_OVER;
	pk->image = image;
	pk->tail = tail;
	pk->mapops = mapops;
	pk->has_tail = false;
	pk->subid = InvalidSubTransactionId;
	pk->next = NULL;
	if (ps->last)
		ps->last->next = pk;
	else
		ps->first = pk;
	ps->last = pk;
	ps->nkeys++;
	return pk;
}

static char *
copy_bytes(const StringInfoData *s)
{
	char	   *p = MemoryContextAlloc(TopTransactionContext, s->len + 1);

	memcpy(p, s->data, s->len);
	return p;
}

static void
restore_bytes(StringInfo s, const char *p, uint32 len)
{
	resetStringInfo(s);
	appendBinaryStringInfo(s, p, (int) len);
}

/*
 * pend_write returns the key's entry, ready for a write: in a
 * subtransaction, what it had pending is saved first.
 */
static PendKey *
pend_write(const StateTarget *st, const StateKey *key)
{
	PendKey    *pk;
	SubTransactionId sub = GetCurrentSubTransactionId();

	if (frozen)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("cannot write transactional state \"%s\" while the transaction commits",
						NameStr(st->desc->name)),
				 errdetail("A fold or aggregate run at commit wrote to a transactional state.")));
	pk = pend_key(st, key, true);
	if (pk->subid != sub && GetCurrentTransactionNestLevel() > 1)
	{
		PendUndo   *u = MemoryContextAlloc(TopTransactionContext, sizeof(PendUndo));

		u->subid = sub;
		u->pk = pk;
		u->prev_subid = pk->subid;
		u->base = pk->base;
		u->has_tail = pk->has_tail;
		u->image = copy_bytes(&pk->image);
		u->imagelen = pk->image.len;
		u->tail = copy_bytes(&pk->tail);
		u->taillen = pk->tail.len;
		u->mapops = copy_bytes(&pk->mapops);
		u->mapopslen = pk->mapops.len;
		u->next = undo;
		undo = u;
	}
	pk->subid = sub;
	return pk;
}

void
txn_pending_subxact_commit(SubTransactionId mine, SubTransactionId parent)
{
	for (PendUndo *u = undo; u != NULL && u->subid == mine; u = u->next)
		u->subid = parent;
}

void
txn_pending_subxact_abort(SubTransactionId mine)
{
	while (undo != NULL && undo->subid == mine)
	{
		PendUndo   *u = undo;
		PendKey    *pk = u->pk;

		pk->subid = u->prev_subid;
		pk->base = u->base;
		pk->has_tail = u->has_tail;
		restore_bytes(&pk->image, u->image, u->imagelen);
		restore_bytes(&pk->tail, u->tail, u->taillen);
		restore_bytes(&pk->mapops, u->mapops, u->mapopslen);
		undo = u->next;
		pfree(u->image);
		pfree(u->tail);
		pfree(u->mapops);
		pfree(u);
	}
}

/* ------------------------------------------------------------ the fold */

/*
 * pend_combine writes to out the committed image cur (NULL: none) with the
 * transaction's fold delta combined into it.
 */
void
pend_combine(PendState *ps, const char *cur, uint32 curlen, const char *delta,
			 uint32 dlen, StringInfo out)
{
	if (cur == NULL)
	{
		resetStringInfo(out);
		appendBinaryStringInfo(out, delta, (int) dlen);
		return;
	}
	if (ps->combine == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

		if (combine_setup == NULL)
			elog(ERROR, "state_backend: no fold for transactional states");
		combine_setup(&ps->desc, &ps->combine, &ps->combine_arg);
		MemoryContextSwitchTo(old);
	}
	ps->combine(cur, curlen, delta, dlen, out, ps->combine_arg);
}

/* --------------------------------------------------------- map changes */

/* The pending change of a map key: its tag, or 0 when none. */
static char
mapop_find(const PendKey *pk, const char *mkey, uint32 mkeylen, const char **value,
		   uint32 *vallen)
{
	uint32		size;
	int64		off = record_find_pair(pk->mapops.data, pk->mapops.len, mkey, mkeylen, &size);
	uint32		p = 0;
	RecordPair	pair;

	if (off < 0)
		return 0;
	p = (uint32) off;
	if (record_next_pair(pk->mapops.data, pk->mapops.len, &p, &pair) != RECORD_OK ||
		pair.value == NULL || pair.vallen < 1)
		elog(ERROR, "state_backend: damaged pending map change");
	*value = pair.value + 1;
	*vallen = pair.vallen - 1;
	return pair.value[0];
}

static void
mapop_set(PendKey *pk, const char *mkey, uint32 mkeylen, char tag, const char *value,
		  uint32 vallen)
{
	uint32		size;
	int64		off = record_find_pair(pk->mapops.data, pk->mapops.len, mkey, mkeylen, &size);
	int			begin;

	if (off >= 0)
	{
		memmove(pk->mapops.data + off, pk->mapops.data + off + size,
				pk->mapops.len - off - size);
		pk->mapops.len -= (int) size;
	}
	begin = record_pair_begin(&pk->mapops);
	appendBinaryStringInfo(&pk->mapops, mkey, (int) mkeylen);
	appendStringInfoChar(&pk->mapops, tag);
	if (tag == PEND_MAP_PUT)
		appendBinaryStringInfo(&pk->mapops, value, (int) vallen);
	record_pair_end(&pk->mapops, begin, mkeylen, false);
}

/*
 * pend_mapop_next reads the map change at *off and moves past it: its map
 * key, its tag (PEND_MAP_*) and, for a put, its value (NULL for a NULL
 * value).  False at the end.
 */
bool
pend_mapop_next(const PendKey *pk, uint32 *off, PendMapOp *op)
{
	RecordPair	pair;

	if (record_next_pair(pk->mapops.data, pk->mapops.len, off, &pair) != RECORD_OK)
		return false;
	if (pair.value == NULL || pair.vallen < 1)
		elog(ERROR, "state_backend: damaged pending map change");
	op->mkey = pair.key;
	op->mkeylen = pair.keylen;
	op->tag = pair.value[0];
	op->value = op->tag == PEND_MAP_PUT ? pair.value + 1 : NULL;
	op->vallen = op->tag == PEND_MAP_PUT ? pair.vallen - 1 : 0;
	return true;
}

/* Visit the map puts pending (value NULL for a NULL value). */
static void
mapops_visit_puts(const PendKey *pk, StateEntryFn fn, void *arg)
{
	uint32		off = 0;
	PendMapOp	op;

	while (pend_mapop_next(pk, &off, &op))
		if (op.tag != PEND_MAP_REMOVED)
			fn(arg, op.mkey, op.mkeylen, op.value, op.vallen);
}

/* A committed map entry, unless the transaction changed that map key. */
typedef struct MapOver
{
	const PendKey *pk;
	StateEntryFn fn;
	void	   *arg;
} MapOver;

static void
map_over_entry(void *arg, const char *mkey, uint32 mkeylen, const char *value, uint32 vallen)
{
	MapOver    *m = arg;
	const char *v;
	uint32		vl;

	if (mapop_find(m->pk, mkey, mkeylen, &v, &vl) == 0)
		m->fn(m->arg, mkey, mkeylen, value, vallen);
}

/* Visit the map's entries as the transaction sees them. */
static void
pend_map_visit(const PendKey *pk, StateEntryFn fn, void *arg)
{
	if (pk->base == PEND_OVER)
	{
		MapOver		m = {pk, fn, arg};

		inner(&pk->state->target)->map_iterate(&pk->state->target, &pk->key,
											   map_over_entry, &m);
	}
	mapops_visit_puts(pk, fn, arg);
}

static void
collect_pair(void *arg, const char *k, uint32 kl, const char *v, uint32 vl)
{
	record_put_pair((StringInfo) arg, k, kl, v, vl);
}

/* The same over a committed map image (NULL: none). */
static void
pend_map_image(const PendKey *pk, const char *img, uint32 len, StringInfo out)
{
	uint32		off = 0;
	RecordPair	pair;

	resetStringInfo(out);
	if (img != NULL)
		while (record_next_pair(img, len, &off, &pair) == RECORD_OK)
		{
			const char *v;
			uint32		vl;

			if (mapop_find(pk, pair.key, pair.keylen, &v, &vl) == 0)
				appendBinaryStringInfo(out, pair.raw, (int) pair.rawlen);
		}
	mapops_visit_puts(pk, collect_pair, out);
}

static void
count_entry(void *arg, const char *k, uint32 kl, const char *v, uint32 vl)
{
	(*(int64 *) arg)++;
}

/* ------------------------------------------------------------ reading */

/*
 * pend_view writes to out the key's whole image as the transaction sees
 * it, over the committed image (committed/committed_len; NULL: none).
 * Returns false when the key has no state.
 */
static bool
pend_view(PendKey *pk, const char *committed, uint32 committed_len, StringInfo out)
{
	PendState  *ps = pk->state;
	StateKind	layout = state_kind_layout(ps->desc.kind);
	const char *base = NULL;	/* what the writes go over; NULL: nothing */
	uint32		baselen = 0;

	if (pk->base == PEND_SET)
	{
		base = pk->image.data;
		baselen = pk->image.len;
	}
	else if (pk->base == PEND_OVER)
	{
		base = committed;
		baselen = committed_len;
	}
	resetStringInfo(out);
	if (layout == STATE_KIND_MAP)
	{
		pend_map_image(pk, base, baselen, out);
		return out->len > 0;
	}
	if (pk->has_tail && layout != STATE_KIND_LIST)
	{
		pend_combine(ps, base, baselen, pk->tail.data, pk->tail.len, out);
		return true;
	}
	if (base != NULL)
		appendBinaryStringInfo(out, base, baselen);
	if (pk->has_tail)
		appendBinaryStringInfo(out, pk->tail.data, pk->tail.len);
	return base != NULL || pk->has_tail;
}

/* Visit the entries of a map image. */
static void
collect_visit(const char *img, uint32 len, StateEntryFn fn, void *arg)
{
	uint32		off = 0;
	RecordPair	pair;

	while (record_next_pair(img, len, &off, &pair) == RECORD_OK)
		fn(arg, pair.key, pair.keylen, pair.value, pair.vallen);
}

/* The same, reading the committed image from the backend. */
static bool
pend_read(PendKey *pk, StringInfo out)
{
	PendState  *ps = pk->state;
	StringInfoData cur;
	bool		have = false;
	bool		result;

	initStringInfo(&cur);
	if (pk->base == PEND_OVER)
	{
		/* A map's entries come one by one from every backend. */
		if (state_kind_layout(ps->desc.kind) == STATE_KIND_MAP)
		{
			ps->inner->map_iterate(&ps->target, &pk->key, collect_pair, &cur);
			have = cur.len > 0;
		}
		else
			have = ps->inner->get(&ps->target, &pk->key, &cur);
	}
	result = pend_view(pk, have ? cur.data : NULL, cur.len, out);
	pfree(cur.data);
	return result;
}

/* ---------------------------------------------------------- operations */

/*
 * On a hot standby nothing is pending (writes are refused) and reads see
 * the committed state, counted as standby reads so that no commit is seen
 * half applied (txn_locks.c); an error uncounts them at the abort.
 */
static bool
txn_get(const StateTarget *st, const StateKey *key, StringInfo out)
{
	PendKey    *pk;

	if (RecoveryInProgress())
	{
		bool		found;

		txn_standby_read_begin();
		found = inner(st)->get(st, key, out);
		txn_standby_read_end();
		return found;
	}
	pk = pend_key(st, key, false);
	if (pk == NULL)
		return inner(st)->get(st, key, out);
	return pend_read(pk, out);
}

static void
pend_reset(PendKey *pk, PendBase base)
{
	pk->base = base;
	pk->has_tail = false;
	resetStringInfo(&pk->image);
	resetStringInfo(&pk->tail);
	resetStringInfo(&pk->mapops);
}

static void
txn_put(const StateTarget *st, const StateKey *key, const char *value, uint32 len)
{
	PendKey    *pk = pend_write(st, key);

	pend_reset(pk, PEND_SET);
	appendBinaryStringInfo(&pk->image, value, (int) len);
}

static bool
txn_remove(const StateTarget *st, const StateKey *key)
{
	PendKey    *pk = pend_key(st, key, false);
	StringInfoData img;
	bool		had;

	initStringInfo(&img);
	if (pk != NULL)
		had = pend_read(pk, &img);
	else if (state_kind_layout(st->desc->kind) == STATE_KIND_MAP)
		had = inner(st)->length(st, key) > 0;
	else
		had = inner(st)->get(st, key, &img);
	pfree(img.data);
	pk = pend_write(st, key);
	pend_reset(pk, PEND_CLEARED);
	return had;
}

static void
txn_append(const StateTarget *st, const StateKey *key, const char *elems, uint32 len)
{
	PendKey    *pk = pend_write(st, key);

	pk->has_tail = true;
	appendBinaryStringInfo(&pk->tail, elems, (int) len);
}

/*
 * A reduce or aggregate: the value folds into the transaction's own fold
 * of the key (the call's fold, as it would into the state), and out gets
 * the result as the transaction sees it.
 */
static void
txn_merge(const StateTarget *st, const StateKey *key, const char *value, uint32 len,
		  StateMergeFn fn, void *arg, const StateFold *fold, StringInfo out)
{
	PendKey    *pk = pend_write(st, key);
	StringInfoData next;

	next.data = MemoryContextAlloc(TopTransactionContext, Max(pk->tail.maxlen, 64));
	next.maxlen = Max(pk->tail.maxlen, 64);
	resetStringInfo(&next);
	keyed_fold_call(fn, st, key, pk->has_tail ? pk->tail.data : NULL, pk->tail.len,
					value, len, &next, arg);
	pfree(pk->tail.data);
	pk->tail = next;
	pk->has_tail = true;
	(void) pend_read(pk, out);
}

static bool
txn_map_get(const StateTarget *st, const StateKey *key, const char *mkey, uint32 mkeylen,
			StringInfo out, bool *isnull)
{
	PendKey    *pk;
	const char *v;
	uint32		vl;

	*isnull = false;
	if (RecoveryInProgress())
	{
		bool		found;

		txn_standby_read_begin();
		found = inner(st)->map_get(st, key, mkey, mkeylen, out, isnull);
		txn_standby_read_end();
		return found;
	}
	pk = pend_key(st, key, false);
	if (pk != NULL)
	{
		switch (mapop_find(pk, mkey, mkeylen, &v, &vl))
		{
			case PEND_MAP_PUT:
				resetStringInfo(out);
				appendBinaryStringInfo(out, v, (int) vl);
				return true;
			case PEND_MAP_PUT_NULL:
				resetStringInfo(out);
				*isnull = true;
				return true;
			case PEND_MAP_REMOVED:
				return false;
		}
		if (pk->base != PEND_OVER)
			return false;
	}
	return inner(st)->map_get(st, key, mkey, mkeylen, out, isnull);
}

static void
txn_map_put(const StateTarget *st, const StateKey *key, const char *mkey, uint32 mkeylen,
			const char *value, uint32 len, bool isnull)
{
	PendKey    *pk = pend_write(st, key);

	mapop_set(pk, mkey, mkeylen, isnull ? PEND_MAP_PUT_NULL : PEND_MAP_PUT, value, len);
}

static bool
txn_map_remove(const StateTarget *st, const StateKey *key, const char *mkey, uint32 mkeylen)
{
	StringInfoData v;
	bool		isnull;
	bool		had;
	PendKey    *pk;

	initStringInfo(&v);
	had = txn_map_get(st, key, mkey, mkeylen, &v, &isnull);
	pfree(v.data);
	pk = pend_write(st, key);
	mapop_set(pk, mkey, mkeylen, PEND_MAP_REMOVED, NULL, 0);
	return had;
}

static void
txn_map_iterate(const StateTarget *st, const StateKey *key, StateEntryFn fn, void *arg)
{
	PendKey    *pk;

	if (RecoveryInProgress())
	{
		txn_standby_read_begin();
		inner(st)->map_iterate(st, key, fn, arg);
		txn_standby_read_end();
		return;
	}
	pk = pend_key(st, key, false);
	if (pk == NULL)
		inner(st)->map_iterate(st, key, fn, arg);
	else if (pk->base != PEND_SET)
		pend_map_visit(pk, fn, arg);
	else
	{
		StringInfoData img;

		initStringInfo(&img);
		if (pend_read(pk, &img))
			collect_visit(img.data, img.len, fn, arg);
		pfree(img.data);
	}
}

static int64
txn_length(const StateTarget *st, const StateKey *key)
{
	PendKey    *pk;
	StringInfoData img;
	int64		n = 0;

	if (RecoveryInProgress())
	{
		txn_standby_read_begin();
		n = inner(st)->length(st, key);
		txn_standby_read_end();
		return n;
	}
	pk = pend_key(st, key, false);
	if (pk == NULL)
		return inner(st)->length(st, key);
	if (state_kind_layout(st->desc->kind) == STATE_KIND_MAP)
	{
		txn_map_iterate(st, key, count_entry, &n);
		return n;
	}
	initStringInfo(&img);
	if (pend_read(pk, &img))
		n = record_count_elems(img.data, img.len);
	pfree(img.data);
	return n;
}

/* Every key of a state: the committed ones as the transaction sees them, then its new ones. */
typedef struct TxnIterate
{
	const StateTarget *st;
	StateEntryFn fn;
	void	   *arg;
	HTAB	   *seen;
	StringInfoData img;
} TxnIterate;

static void
iterate_entry(void *arg, const char *key, uint32 keylen, const char *value, uint32 vallen)
{
	TxnIterate *it = arg;
	StateKey	k;
	PendKey    *pk;

	state_key_set(&k, key, keylen);
	pk = pend_key(it->st, &k, false);
	if (pk == NULL)
	{
		it->fn(it->arg, key, keylen, value, vallen);
		return;
	}
	(void) hash_search(it->seen, &pk, HASH_ENTER, NULL);
	if (pend_view(pk, value, vallen, &it->img))
		it->fn(it->arg, key, keylen, it->img.data, it->img.len);
}

static void
txn_iterate(const StateTarget *st, int key_group, StateEntryFn fn, void *arg)
{
	PendState  *ps;
	TxnIterate	it;

	if (RecoveryInProgress())
	{
		txn_standby_read_begin();
		inner(st)->iterate(st, key_group, fn, arg);
		txn_standby_read_end();
		return;
	}
	ps = pend_state(st, false);
	if (ps == NULL)
	{
		inner(st)->iterate(st, key_group, fn, arg);
		return;
	}
	it.st = st;
	it.fn = fn;
	it.arg = arg;
	it.seen = local_hash_create("state_backend keys seen", 64, sizeof(PendKey *),
								sizeof(PendKey *), CurrentMemoryContext);
	initStringInfo(&it.img);
	inner(st)->iterate(st, key_group, iterate_entry, &it);
	for (PendKey *pk = ps->first; pk != NULL; pk = pk->next)
	{
		if ((key_group >= 0 && pk->key.key_group != key_group) ||
			hash_search(it.seen, &pk, HASH_FIND, NULL) != NULL)
			continue;
		/* Not among the committed keys: over none. */
		if (pend_view(pk, NULL, 0, &it.img))
			fn(arg, pk->key.data, pk->key.len, it.img.data, it.img.len);
	}
	hash_destroy(it.seen);
	pfree(it.img.data);
}

/*
 * truncate acts at once, as it does for every state: once the commits
 * under way of the state's writes are done, and before any other comes.
 * What the transaction itself wrote stays pending.
 */
static int64
txn_truncate(const StateTarget *st)
{
	volatile int64 n = 0;

	if (frozen)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("cannot truncate transactional state \"%s\" while the transaction commits",
						NameStr(st->desc->name))));
	txn_use_state_whole(st);
	PG_TRY();
	{
		n = inner(st)->truncate(st);
	}
	PG_FINALLY();
	{
		txn_use_state_whole_end(st);
	}
	PG_END_TRY();
	return n;
}

static void
txn_compact(const StateTarget *st)
{
	if (inner(st)->compact)
		inner(st)->compact(st);
}

static void
txn_size(const StateTarget *st, int64 *entries, int64 *bytes)
{
	inner(st)->size(st, entries, bytes);
}

/*
 * keyed_state_ops returns what a state's operations go through: for a
 * transactional state this layer, which keeps its transaction's writes,
 * otherwise what its writes are applied through (the TTL layer or its
 * backend, keyed_state_ops_applied), which is under this layer too.
 */
const KeyedStateBackend *
keyed_state_ops(const StateDesc *desc)
{
	if (desc->transactional)
		return &txn_keyed_backend;
	return keyed_state_ops_applied(desc);
}

const KeyedStateBackend txn_keyed_backend = {
	.name = "transactional",
	.get = txn_get,
	.put = txn_put,
	.remove = txn_remove,
	.replace = NULL,
	.append = txn_append,
	.merge = txn_merge,
	.map_get = txn_map_get,
	.map_put = txn_map_put,
	.map_remove = txn_map_remove,
	.map_iterate = txn_map_iterate,
	.length = txn_length,
	.iterate = txn_iterate,
	.truncate = txn_truncate,
	.compact = txn_compact,
	.size = txn_size,
	.snapshot = NULL,
};

void
txn_state_drop_begin(const StateTarget *st)
{
	if (st->desc->transactional)
		txn_use_state_whole(st);
}

void
txn_state_drop_end(const StateTarget *st)
{
	if (st->desc->transactional)
		txn_use_state_whole_end(st);
}
