/*
 * backend/keyed_backend.c
 *		What every caller and implementation of a KeyedStateBackend
 *		shares: keys, and the fold that merges run.
 *
 * The registered backends are in providers.c; the implementations in
 * heap_backend.c (memory and filesystem, which differ only in where
 * snapshots go), rocksdb/ and other libraries; the TTL layer over any of
 * them is ttl/ttl_state.c.
 */
#include "postgres.h"

#include "backend/keyed_backend.h"
#include "common/key_group.h"
#include "common/settings.h"

/*
 * state_key_set fills a key from its image: its hash and its key group
 * among state_backend.max_parallelism, as every caller of the interface
 * passes them.
 */
void
state_key_set(StateKey *key, const char *data, uint32 len)
{
	key->data = data;
	key->len = len;
	key->hash = key_image_hash(data, len);
	key->key_group = (uint16) key_group_for_hash(key->hash, state_backend_max_parallelism);
}

/*
 * The merges whose fold runs in this process, innermost last.  A fold is
 * PostgreSQL code and may call state functions; one that merges into the
 * very key it folds would leave the outer merge folding again forever (the
 * key changed under it each time), so it is refused.
 */
#define MAX_NESTED_FOLDS	16

typedef struct Folding
{
	uint32		state_id;
	const StateKey *key;
} Folding;

static Folding folding[MAX_NESTED_FOLDS];
static int	nfolding = 0;

/*
 * keyed_fold_call runs a merge's fold for key of state st: backends call
 * their StateMergeFn through it.
 */
void
keyed_fold_call(StateMergeFn fn, const StateTarget *st, const StateKey *key,
				const char *cur, uint32 curlen, const char *in, uint32 inlen,
				StringInfo out, void *arg)
{
	for (int i = 0; i < nfolding; i++)
		if (folding[i].state_id == st->desc->id && folding[i].key->len == key->len &&
			folding[i].key->hash == key->hash &&
			memcmp(folding[i].key->data, key->data, key->len) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("the fold of a key of state \"%s\" merges into that same key",
							NameStr(st->desc->name)),
					 errdetail("Its reducer or aggregate calls reduce or aggregate on the key it folds, which would never end."),
					 errhint("Fold into another key or state.")));
	if (nfolding == MAX_NESTED_FOLDS)
	{
		fn(cur, curlen, in, inlen, out, arg);
		return;
	}
	folding[nfolding].state_id = st->desc->id;
	folding[nfolding].key = key;
	nfolding++;
	PG_TRY();
	{
		fn(cur, curlen, in, inlen, out, arg);
	}
	PG_FINALLY();
	{
		nfolding--;
	}
	PG_END_TRY();
}

/* keyed_batch_init starts an empty batch for a state's backend. */
void
keyed_batch_init(KeyedBatch *b, const KeyedStateBackend *backend, const StateTarget *target)
{
	b->backend = backend;
	b->target = *target;
	initStringInfo(&b->bytes);
	b->n = 0;
}

/*
 * keyed_batch_add adds a key's whole image; a full batch goes to the
 * backend at once (then it returns true).
 */
bool
keyed_batch_add(KeyedBatch *b, const char *key, uint32 keylen, const char *value, uint32 vallen)
{
	b->keyoff[b->n] = (uint32) b->bytes.len;
	b->keylen[b->n] = keylen;
	appendBinaryStringInfo(&b->bytes, key, (int) keylen);
	b->valoff[b->n] = (uint32) b->bytes.len;
	b->vallen[b->n] = vallen;
	appendBinaryStringInfo(&b->bytes, value, (int) vallen);
	if (++b->n < KEYED_BATCH_ENTRIES && b->bytes.len < KEYED_BATCH_BYTES)
		return false;
	keyed_batch_flush(b);
	return true;
}

/* keyed_batch_flush hands what the batch holds to the backend. */
void
keyed_batch_flush(KeyedBatch *b)
{
	StateKey   *keys;
	const char **values;

	if (b->n == 0)
		return;
	keys = palloc(sizeof(StateKey) * b->n);
	values = palloc(sizeof(char *) * b->n);
	for (int i = 0; i < b->n; i++)
	{
		state_key_set(&keys[i], b->bytes.data + b->keyoff[i], b->keylen[i]);
		values[i] = b->bytes.data + b->valoff[i];
	}
	if (b->backend->put_many != NULL)
		b->backend->put_many(&b->target, keys, values, b->vallen, b->n);
	else
		for (int i = 0; i < b->n; i++)
			b->backend->put(&b->target, &keys[i], values[i], b->vallen[i]);
	pfree(keys);
	pfree(values);
	b->n = 0;
	resetStringInfo(&b->bytes);
}
