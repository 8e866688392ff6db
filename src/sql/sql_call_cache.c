/*
 * sql/sql_call_cache.c
 *		Call set-ups that survive executions of a prepared statement.
 *
 * Every execution of a plan gets fresh FmgrInfos, so a set-up kept only in
 * fn_extra would resolve the state and build its codecs and coercions again
 * each time: most of a short statement's cost.  The plan's expression node
 * (fn_expr) outlives executions, so set-ups are kept in a backend-local
 * cache keyed by it.  An FmgrInfo checks a set-up out for as long as it
 * lives (its memory context's reset callback gives it back), so two uses of
 * one expression at the same time (a recursive call) never share one; the
 * second makes its own.  A set-up is revalidated on every call anyway
 * (registry version, state name, argument types: sql_common.c), and changes
 * of types, functions, casts, operators, operator classes and schemas,
 * which its codecs, coercions and reducers come from, empty the cache.  A
 * set-up is reused only by the same role with the same search_path (a
 * reducer's operator is looked up by name), never after the transaction
 * that used it failed (it may be half built), and not when its buffers grew
 * large.  Its size is bounded: expressions of one-shot plans come and go.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "utils/catcache.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "sql/sql_common.h"

/* Set-ups kept at most; more are freed when given back. */
#define CALL_CACHE_MAX		256

/* A set-up whose buffers grew past this is not kept. */
#define CALL_CACHE_MAX_BUFFER	(64 * 1024)

typedef struct CallCacheEntry
{
	const void *site;			/* hash key: the plan's expression node */
	StateCall  *call;
} CallCacheEntry;

/* What an FmgrInfo's memory context gives back when it goes. */
typedef struct CallReturn
{
	MemoryContextCallback cb;
	const void *site;
	StateCall  *call;
} CallReturn;

static HTAB *call_cache = NULL;
static MemoryContext call_cache_cxt = NULL;
static uint64 call_cache_gen = 1;

static void
call_free(StateCall *call)
{
	MemoryContextDelete(call->own);
}

/* Who may reuse a set-up: the role and search_path it was made under. */
static uint32
call_context_key(void)
{
	const char *path = namespace_search_path ? namespace_search_path : "";

	return hash_bytes((const unsigned char *) path, strlen(path)) ^ (uint32) GetUserId();
}

/* The cache's own memory: an entry it cannot get is not an error. */
static void *
call_cache_alloc(Size size)
{
	return MemoryContextAllocExtended(call_cache_cxt, size, MCXT_ALLOC_NO_OOM);
}

/* A catalog change: set-ups made before it are not reused. */
static void
call_cache_invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	call_cache_gen++;
}

static void
call_cache_init(void)
{
	HASHCTL		ctl;

	call_cache_cxt = AllocSetContextCreate(TopMemoryContext, "state_backend call set-ups",
										   ALLOCSET_DEFAULT_SIZES);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(void *);
	ctl.entrysize = sizeof(CallCacheEntry);
	ctl.hcxt = call_cache_cxt;
	ctl.alloc = call_cache_alloc;
	CacheRegisterSyscacheCallback(TYPEOID, call_cache_invalidate, (Datum) 0);
	CacheRegisterSyscacheCallback(PROCOID, call_cache_invalidate, (Datum) 0);
	CacheRegisterSyscacheCallback(CASTSOURCETARGET, call_cache_invalidate, (Datum) 0);
	CacheRegisterSyscacheCallback(OPEROID, call_cache_invalidate, (Datum) 0);
	CacheRegisterSyscacheCallback(CLAOID, call_cache_invalidate, (Datum) 0);
	CacheRegisterSyscacheCallback(AMPROCNUM, call_cache_invalidate, (Datum) 0);
	CacheRegisterSyscacheCallback(NAMESPACEOID, call_cache_invalidate, (Datum) 0);
	call_cache = hash_create("state_backend call set-ups", 64, &ctl,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT | HASH_ALLOC);
}

/*
 * state_call_new makes an empty set-up in a context of its own under
 * parent (the cache's for call sites, the caller's for a detached call).
 */
StateCall *
state_call_new(MemoryContext parent)
{
	MemoryContext own = AllocSetContextCreate(parent, "state_backend call",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(own);
	StateCall  *call = palloc0(sizeof(StateCall));

	call->own = own;
	call->mcxt = AllocSetContextCreate(own, "state_backend call codecs",
									   ALLOCSET_SMALL_SIZES);
	call->gen = call_cache_gen;
	initStringInfo(&call->keybuf);
	initStringInfo(&call->buf);
	initStringInfo(&call->buf2);
	MemoryContextSwitchTo(old);
	return call;
}

/*
 * state_call_fresh: may a set-up made before be used now (no catalog
 * change since, the same role and search_path as context_key says)?
 */
bool
state_call_fresh(const StateCall *call, uint32 context_key)
{
	return call->gen == call_cache_gen && context_key == call_context_key();
}

uint32
state_call_context(void)
{
	return call_context_key();
}

/* The FmgrInfo that had a set-up is gone: keep it for the next execution. */
static void
call_give_back(void *arg)
{
	CallReturn *ret = arg;
	StateCall  *call = ret->call;
	CallCacheEntry *e;
	bool		found;

	/*
	 * Not kept: made before a catalog change, used by a transaction that
	 * is failing (it may be half built), or holding large buffers.
	 */
	if (call->gen != call_cache_gen || ret->site == NULL || !IsTransactionState() ||
		call->keybuf.maxlen > CALL_CACHE_MAX_BUFFER ||
		call->buf.maxlen > CALL_CACHE_MAX_BUFFER ||
		call->buf2.maxlen > CALL_CACHE_MAX_BUFFER)
	{
		call_free(call);
		return;
	}
	e = hash_search(call_cache, &ret->site, HASH_FIND, NULL);
	if (e == NULL && hash_get_num_entries(call_cache) >= CALL_CACHE_MAX)
	{
		HASH_SEQ_STATUS seq;
		CallCacheEntry *victim;
		StateCall  *evicted;
		const void *site;

		/* Any one goes: one-shot plans' expressions are never asked again. */
		hash_seq_init(&seq, call_cache);
		victim = hash_seq_search(&seq);
		hash_seq_term(&seq);
		evicted = victim->call;
		site = victim->site;
		/* Out of the table before it is freed: freeing may give others back. */
		hash_search(call_cache, &site, HASH_REMOVE, NULL);
		if (evicted)
			call_free(evicted);
	}
	/* No error here: this may run while a transaction aborts. */
	e = hash_search(call_cache, &ret->site, HASH_ENTER_NULL, &found);
	if (e == NULL || (found && e->call != NULL))
		call_free(call);		/* no room, or another use came back first */
	else
		e->call = call;
}

/*
 * state_call_site returns the set-up of this call site: the one its
 * FmgrInfo holds, one an earlier execution of the same plan left, or a new
 * one.
 */
StateCall *
state_call_site(FunctionCallInfo fcinfo)
{
	FmgrInfo   *flinfo = fcinfo->flinfo;
	const void *site = flinfo->fn_expr;
	StateCall  *call = NULL;
	CallReturn *ret;
	uint32		context_key;

	if (flinfo->fn_extra != NULL)
		return (StateCall *) flinfo->fn_extra;
	if (call_cache == NULL)
		call_cache_init();
	ret = MemoryContextAlloc(flinfo->fn_mcxt, sizeof(CallReturn));
	context_key = call_context_key();
	if (site != NULL)
	{
		CallCacheEntry *e = hash_search(call_cache, &site, HASH_FIND, NULL);

		if (e != NULL)
		{
			call = e->call;
			hash_search(call_cache, &site, HASH_REMOVE, NULL);
			if (call != NULL &&
				(call->gen != call_cache_gen || call->context_key != context_key))
			{
				call_free(call);
				call = NULL;
			}
		}
	}
	if (call == NULL)
	{
		call = state_call_new(call_cache_cxt);
		call->context_key = context_key;
	}

	ret->site = site;
	ret->call = call;
	ret->cb.func = call_give_back;
	ret->cb.arg = ret;
	MemoryContextRegisterResetCallback(flinfo->fn_mcxt, &ret->cb);
	flinfo->fn_extra = call;
	return call;
}
