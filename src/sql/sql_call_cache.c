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
 * of types, functions and casts, which its codecs and coercions come from,
 * empty the cache.  Its size is bounded: expressions of one-shot plans
 * come and go.
 */
#include "postgres.h"

#include "utils/catcache.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "sql/sql_common.h"

/* Set-ups kept at most; more are freed when given back. */
#define CALL_CACHE_MAX		256

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
	call_cache = hash_create("state_backend call set-ups", 64, &ctl,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	CacheRegisterSyscacheCallback(TYPEOID, call_cache_invalidate, (Datum) 0);
	CacheRegisterSyscacheCallback(PROCOID, call_cache_invalidate, (Datum) 0);
	CacheRegisterSyscacheCallback(CASTSOURCETARGET, call_cache_invalidate, (Datum) 0);
}

/* A new, empty set-up in a context of its own. */
static StateCall *
call_new(void)
{
	MemoryContext own = AllocSetContextCreate(call_cache_cxt, "state_backend call",
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

/* The FmgrInfo that had a set-up is gone: keep it for the next execution. */
static void
call_give_back(void *arg)
{
	CallReturn *ret = arg;
	CallCacheEntry *e;
	bool		found;

	if (ret->call->gen != call_cache_gen || ret->site == NULL)
	{
		call_free(ret->call);
		return;
	}
	e = hash_search(call_cache, &ret->site, HASH_FIND, NULL);
	if (e == NULL && hash_get_num_entries(call_cache) >= CALL_CACHE_MAX)
	{
		HASH_SEQ_STATUS seq;
		CallCacheEntry *victim;

		/* Any one goes: one-shot plans' expressions are never asked again. */
		hash_seq_init(&seq, call_cache);
		victim = hash_seq_search(&seq);
		hash_seq_term(&seq);
		if (victim->call)
			call_free(victim->call);
		hash_search(call_cache, &victim->site, HASH_REMOVE, NULL);
	}
	/* No error here: this may run while a transaction aborts. */
	e = hash_search(call_cache, &ret->site, HASH_ENTER_NULL, &found);
	if (e == NULL || (found && e->call != NULL))
		call_free(ret->call);	/* no room, or another use came back first */
	else
		e->call = ret->call;
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

	if (flinfo->fn_extra != NULL)
		return (StateCall *) flinfo->fn_extra;
	if (call_cache == NULL)
		call_cache_init();
	if (site != NULL)
	{
		CallCacheEntry *e = hash_search(call_cache, &site, HASH_FIND, NULL);

		if (e != NULL)
		{
			call = e->call;
			hash_search(call_cache, &site, HASH_REMOVE, NULL);
			if (call != NULL && call->gen != call_cache_gen)
			{
				call_free(call);
				call = NULL;
			}
		}
	}
	if (call == NULL)
		call = call_new();

	ret = MemoryContextAlloc(flinfo->fn_mcxt, sizeof(CallReturn));
	ret->site = site;
	ret->call = call;
	ret->cb.func = call_give_back;
	ret->cb.arg = ret;
	MemoryContextRegisterResetCallback(flinfo->fn_mcxt, &ret->cb);
	flinfo->fn_extra = call;
	return call;
}
