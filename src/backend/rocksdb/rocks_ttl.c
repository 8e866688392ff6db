/*
 * backend/rocksdb/rocks_ttl.c
 *		rocksdb states with a TTL: the names of their column families and
 *		the compaction filter that drops what expired.
 *
 * A state's column family is "s<id>"; with a TTL, "s<id>-ttl-<v|l|m>",
 * after what its values are (a value or reducing result, a list, a map
 * entry), so that the instance opens each family with the filter its
 * values need before any descriptor is read.
 *
 * The filter runs on RocksDB's compaction threads.  It calls nothing of
 * PostgreSQL's (no palloc, no ereport, no locks): only the host's TTL
 * services, which are plain C, and plain C of its own.  A list that keeps some of its elements
 * is rewritten into a buffer of the thread's own, which RocksDB copies.
 */
#include "postgres.h"

#include "rocks_internal.h"

typedef enum TtlValues
{
	TTL_VALUES_WHOLE,			/* value or reducing: [deadline][value] */
	TTL_VALUES_LIST,			/* a list image of TTL elements */
	TTL_VALUES_MAP_ENTRY,		/* [NULL flag] then a TTL map value */
	TTL_VALUES_COUNT
} TtlValues;

static const char ttl_letters[TTL_VALUES_COUNT] = {'v', 'l', 'm'};
static const char *const filter_names[TTL_VALUES_COUNT] = {
	"state_backend.ttl.value", "state_backend.ttl.list", "state_backend.ttl.map"
};

static rocksdb_options_t *ttl_options[TTL_VALUES_COUNT];

/* A buffer of each compaction thread's own, for rewritten lists. */
static __thread char *thread_buf = NULL;
static __thread size_t thread_cap = 0;

static unsigned char
ttl_filter(void *state, int level, const char *key, size_t klen,
		   const char *v, size_t vlen, char **new_value, size_t *new_len,
		   unsigned char *changed)
{
	TtlValues	values = (TtlValues) (intptr_t) state;
	int64		now = rocks_host->ttl_now();
	uint32		keep;

	*changed = 0;
	if (vlen > PG_UINT32_MAX)
		return 0;
	switch (values)
	{
		case TTL_VALUES_WHOLE:
			return rocks_host->ttl_expired(v, (uint32) vlen, now);
		case TTL_VALUES_MAP_ENTRY:
			return vlen > 1 && v[0] == 0 && rocks_host->ttl_expired(v + 1, (uint32) vlen - 1, now);
		case TTL_VALUES_LIST:
			if (vlen > thread_cap)
			{
				char	   *grown = realloc(thread_buf, vlen);

				if (grown == NULL)
					return 0;	/* kept, for a later compaction */
				thread_buf = grown;
				thread_cap = vlen;
			}
			memcpy(thread_buf, v, vlen);
			keep = rocks_host->ttl_compact(STATE_KIND_LIST, thread_buf, (uint32) vlen, now);
			if (keep == 0)
				return 1;
			if (keep < vlen)
			{
				*new_value = thread_buf;
				*new_len = keep;
				*changed = 1;
			}
			return 0;
		default:
			return 0;
	}
}

static const char *
ttl_filter_name(void *state)
{
	return filter_names[(TtlValues) (intptr_t) state];
}

static void
ttl_filter_destroy(void *state)
{
}

/*
 * rocks_ttl_make_options makes the options of TTL families: the instance's
 * own, with the filter.  Called once the instance's options are made.
 */
void
rocks_ttl_make_options(void)
{
	for (int i = 0; i < TTL_VALUES_COUNT; i++)
	{
		rocksdb_compactionfilter_t *f;

		if (ttl_options[i])
			continue;
		f = rocksdb_compactionfilter_create((void *) (intptr_t) i, ttl_filter_destroy,
											ttl_filter, ttl_filter_name);
		ttl_options[i] = rocksdb_options_create_copy(rocks.options);
		rocksdb_options_set_compaction_filter(ttl_options[i], f);
	}
}

/* rocks_family_name writes the name of a state's column family. */
void
rocks_family_name(char *buf, size_t size, const StateInfo *state)
{
	if (state->ttl == 0)
		snprintf(buf, size, "s%u", state->id);
	else
		snprintf(buf, size, "s%u-ttl-%c", state->id,
				 ttl_letters[state->kind == STATE_KIND_LIST ? TTL_VALUES_LIST :
							 state->kind == STATE_KIND_MAP ? TTL_VALUES_MAP_ENTRY :
							 TTL_VALUES_WHOLE]);
}

/* rocks_family_id reads the state id of a family's name; false: none. */
bool
rocks_family_id(const char *name, uint32 *id)
{
	char		tail[16];
	int			n = sscanf(name, "s%u%15s", id, tail);

	if (n == 1)
		return true;
	return n == 2 && strlen(tail) == 6 && strncmp(tail, "-ttl-", 5) == 0;
}

/* rocks_family_options returns the options to open a family with. */
rocksdb_options_t *
rocks_family_options(const char *name)
{
	const char *ttl = strstr(name, "-ttl-");

	if (ttl != NULL && name[0] == 's')
		for (int i = 0; i < TTL_VALUES_COUNT; i++)
			if (ttl[5] == ttl_letters[i] && ttl[6] == '\0')
				return ttl_options[i];
	return rocks.options;
}
