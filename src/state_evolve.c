/*
 * state_evolve.c
 *		A state changed as a whole (alter_state): its entries copied, each
 *		converted, into a new hidden state, which then takes its place at
 *		one instant, as a restore's states do.
 *
 * The caller holds the state's change lock (state_ops_lock_change), so no
 * write reaches it meanwhile; readers go on reading it until the publish.
 * Nothing of the new state is visible before it: a failure (a value that
 * does not convert, a full memory limit, a cancel) discards it, and the
 * state is as it was.  A logged new state is written to WAL as a restored
 * one is, as a hidden state and its entries, then published by one
 * PUBLISH record that also drops the old one when it was logged: replay
 * and a standby come to one side of it, and a snapshot cut meanwhile holds
 * either the old state or the new one (snapshot_control_hold_cuts).
 */
#include "postgres.h"

#include "miscadmin.h"

#include "backend/keyed_backend.h"
#include "catalog/registry.h"
#include "common/fault.h"
#include "common/settings.h"
#include "format/records.h"
#include "format/state_wal.h"
#include "snapshot/snapshot_control.h"
#include "state_evolve.h"
#include "state_ops.h"
#include "txn/txn_state.h"

/* Entries handed to the new state's backend at once. */
#define EVOLVE_BATCH_ENTRIES	1024
#define EVOLVE_BATCH_BYTES		(1024 * 1024)

typedef struct EvolveCopy
{
	StateTarget target;			/* the new state */
	const KeyedStateBackend *backend;
	StateEvolveFn convert;
	void	   *arg;
	int64		copied;
	/* one key group's entries of the old state, as pairs */
	StringInfoData group;
	/* the batch: converted keys and images, as offsets into bytes */
	StringInfoData bytes;
	StringInfoData key;
	StringInfoData image;
	int			nbatch;
	uint32		keyoff[EVOLVE_BATCH_ENTRIES];
	uint32		keylen[EVOLVE_BATCH_ENTRIES];
	uint32		valoff[EVOLVE_BATCH_ENTRIES];
	uint32		vallen[EVOLVE_BATCH_ENTRIES];
} EvolveCopy;

static void
batch_flush(EvolveCopy *c)
{
	StateKey   *keys;
	const char **values;

	if (c->nbatch == 0)
		return;
	keys = palloc(sizeof(StateKey) * c->nbatch);
	values = palloc(sizeof(char *) * c->nbatch);
	for (int i = 0; i < c->nbatch; i++)
	{
		state_key_set(&keys[i], c->bytes.data + c->keyoff[i], c->keylen[i]);
		values[i] = c->bytes.data + c->valoff[i];
	}
	if (c->backend->put_many != NULL)
		c->backend->put_many(&c->target, keys, values, c->vallen, c->nbatch);
	else
		for (int i = 0; i < c->nbatch; i++)
			c->backend->put(&c->target, &keys[i], values[i], c->vallen[i]);
	pfree(keys);
	pfree(values);
	c->nbatch = 0;
	resetStringInfo(&c->bytes);
	FAULT_POINT("alter.copy");
}

/* An entry of the old state, kept until its key group is read whole. */
static void
group_entry(void *arg, const char *key, uint32 keylen, const char *value, uint32 vallen)
{
	EvolveCopy *c = arg;

	record_put_pair(&c->group, key, keylen, value, vallen);
}

/*
 * copy_group converts the entries of one key group of the old state, read
 * whole first: no backend's iteration is open while the conversion runs
 * PostgreSQL code, or while the new state is written.
 */
static void
copy_group(EvolveCopy *c)
{
	uint32		off = 0;
	RecordPair	pair;
	RecordRead	r;

	while ((r = record_next_pair(c->group.data, c->group.len, &off, &pair)) == RECORD_OK)
	{
		resetStringInfo(&c->key);
		resetStringInfo(&c->image);
		CHECK_FOR_INTERRUPTS();
		if (!c->convert(c->arg, pair.key, pair.keylen, pair.value, pair.vallen,
						&c->key, &c->image))
			continue;			/* expired */
		c->keyoff[c->nbatch] = (uint32) c->bytes.len;
		c->keylen[c->nbatch] = (uint32) c->key.len;
		appendBinaryStringInfo(&c->bytes, c->key.data, c->key.len);
		c->valoff[c->nbatch] = (uint32) c->bytes.len;
		c->vallen[c->nbatch] = (uint32) c->image.len;
		appendBinaryStringInfo(&c->bytes, c->image.data, c->image.len);
		c->copied++;
		if (++c->nbatch == EVOLVE_BATCH_ENTRIES || c->bytes.len >= EVOLVE_BATCH_BYTES)
			batch_flush(c);
	}
	if (r == RECORD_TRUNCATED)
		elog(ERROR, "state_backend: a key group of the state read back damaged");
	resetStringInfo(&c->group);
}

/* log_entry: one entry of the new, logged state goes to WAL. */
static void
log_entry(void *arg, const char *key, uint32 keylen, const char *value, uint32 valuelen)
{
	const StateDesc *d = arg;

	(void) state_wal_log(STATE_WAL_PUT, d->id, key, keylen, NULL, 0, value, valuelen, false);
	CHECK_FOR_INTERRUPTS();
}

/* The new state's entries, as its backend counts them. */
static int64
count_entries(const StateTarget *target, const KeyedStateBackend *backend)
{
	int64		entries = 0;
	int64		bytes = 0;

	backend->size(target, &entries, &bytes);
	return entries;
}

/*
 * state_evolve copies state old (in registry slot oldslot) into a new
 * state described by newd (its id is set here), converting each entry
 * with convert, and publishes the new state in its place.  logged_pending:
 * the caller counted a logged state pending (registry_logged_pending), which
 * this uncounts once the new state is registered.  Returns the entries the
 * new state holds.  Raises 42710 if another state took newd's name
 * meanwhile, and 23505 if two keys became one.
 */
int64
state_evolve(const StateDesc *old, int oldslot, StateDesc *newd, bool logged_pending,
			 StateEvolveFn convert, void *arg)
{
	StateTarget from = state_target(old, oldslot);
	const KeyedStateBackend *old_backend = keyed_backend_by_id(old->backend);
	EvolveCopy *c = palloc0(sizeof(EvolveCopy));
	volatile int slot = -1;
	volatile bool pending = logged_pending;
	volatile bool holding = false;
	int64		entries;
	bool		published;

	PG_TRY();
	{
		FAULT_POINT("alter.create_hidden");
		slot = registry_create(newd, true);
		if (pending)
		{
			pending = false;
			registry_logged_pending(-1);
		}
		c->target = state_target(newd, slot);
		c->backend = keyed_backend_by_id(newd->backend);
		c->convert = convert;
		c->arg = arg;
		initStringInfo(&c->group);
		initStringInfo(&c->bytes);
		initStringInfo(&c->key);
		initStringInfo(&c->image);

		/* Posted writes to the old state are all in before it is read. */
		keyed_backend_flush_all();
		for (int kg = 0; kg < state_backend_max_parallelism; kg++)
		{
			old_backend->iterate(&from, kg, group_entry, c);
			copy_group(c);
		}
		batch_flush(c);
		keyed_backend_flush_all();
		entries = count_entries(&c->target, c->backend);
		if (entries != c->copied)
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("state \"%s\" would hold " INT64_FORMAT " keys for its " INT64_FORMAT,
							NameStr(old->name), entries, c->copied),
					 errdetail("The key conversion makes two keys one."),
					 errhint("Give a key_using expression that keeps keys apart.")));
		if (newd->logged)
		{
			snapshot_control_hold_cuts(true);
			holding = true;
			FAULT_POINT("alter.log_entries");
			(void) state_wal_log_create(newd, true);
			c->backend->iterate(&c->target, -1, log_entry, newd);
		}
		FAULT_POINT("alter.before_publish");
		published = state_ops_publish_replacing(newd, old);
		if (!published)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("state \"%s\" was dropped while it changed", NameStr(old->name))));
	}
	PG_CATCH();
	{
		if (pending)
			registry_logged_pending(-1);
		if (holding)
			snapshot_control_hold_cuts(false);
		if (slot >= 0)
			state_ops_discard(newd, slot);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (holding)
		snapshot_control_hold_cuts(false);
	FAULT_POINT("alter.after_publish");
	pfree(c->group.data);
	pfree(c->bytes.data);
	pfree(c->key.data);
	pfree(c->image.data);
	pfree(c);
	return entries;
}
