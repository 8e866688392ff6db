/*
 * snapshot/restore.c
 *		Restore: replace a database's states with a snapshot's section for it.
 *
 * Everything is checked before anything changes: the MANIFEST, every
 * state's file (sizes, checksums, structure), and that every type named
 * exists with the same storage.  The states are then loaded as hidden
 * states, invisible to every session, and published at one instant in
 * place of the database's current ones (state_ops_publish).  If loading
 * fails (memory limit), the hidden states are discarded and the current
 * ones were never touched.  States that a backend keeps in native files of
 * its own are checked and copied by that backend's snapshot strategy.
 *
 * state.restore() runs this in the calling backend, resolving types by
 * name.  At server start the state worker runs it for every database of the
 * newest checkpoint, trusting the OIDs it recorded (same cluster; the
 * worker has no database to look names up in).
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "backend/keyed_backend.h"
#include "catalog/registry.h"
#include "common/aggregate.h"
#include "common/catch.h"
#include "common/codec.h"
#include "common/fault.h"
#include "common/settings.h"
#include "format/records.h"
#include "snapshot/canonical.h"
#include "snapshot/checkpoint.h"
#include "snapshot/rescale.h"
#include "snapshot/restore.h"
#include "snapshot/restore_internal.h"
#include "snapshot/snapshot_control.h"
#include "state_ops.h"

typedef struct LoadContext
{
	StateTarget target;
	const KeyedStateBackend *backend;
	int64		n;
	EntryReader reader;
	int			kg_first;		/* -1: every key group (rescale.h) */
	int			kg_last;
	bool		append;			/* add to an earlier snapshot's list */
	KeyedBatch	batch;			/* the entries put, handed over at once */
} LoadContext;

static void
load_entry(void *arg, const char *key, uint32 keylen, const char *value, uint32 vallen)
{
	LoadContext *c = arg;
	StateKey	k;

	entry_reader_native(&c->reader, &key, &keylen, &value, &vallen);
	state_key_set(&k, key, keylen);
	if (c->kg_first >= 0 && (k.key_group < c->kg_first || k.key_group > c->kg_last))
		return;					/* another part's */
	c->n++;
	if (c->append)
		c->backend->append(&c->target, &k, value, vallen);
	else
		(void) keyed_batch_add(&c->batch, key, keylen, value, vallen);
}

/*
 * restore_native_files has each backend with native files of its own copy
 * a snapshot's states out of them into the merged hidden states, as the
 * plan says (loads); returns the keys.
 */
static int64
restore_native_files(const char *dir, const Section *sec, const RescaleLoad *loads,
					 const StateDesc *merged, const int *slots)
{
	NativeRestoreItem *items = palloc(sizeof(NativeRestoreItem) * Max(sec->n, 1));
	int			nb;
	const KeyedStateBackend *const *all = keyed_backend_all(&nb);
	int64		total = 0;

	for (int b = 0; b < nb; b++)
	{
		int			count = 0;

		for (int i = 0; i < sec->n; i++)
		{
			const RescaleLoad *l = &loads[i];

			if (!sec->native[i] || l->skip ||
				keyed_backend_by_id(sec->descs[i].backend) != all[b])
				continue;
			items[count].from_id = sec->states[i]->desc.id;
			items[count].to_id = merged[l->merged].id;
			items[count].to_slot = slots[l->merged];
			items[count].kind = sec->descs[i].kind;
			items[count].kg_first = l->kg_first >= 0 ? l->kg_first : 0;
			items[count].kg_last = l->kg_first >= 0 ? l->kg_last : state_backend_max_parallelism - 1;
			count++;
		}
		if (count > 0)
			total += all[b]->snapshot->restore_native(dir, items, count);
	}
	pfree(items);
	return total;
}

/*
 * check_section picks the states of section source_dbid that are to be
 * restored into target_dbid and checks all of them, files included, before
 * anything changes.  At server start (trust_oids) states of backends that
 * kept their data keep it, and so does a state named like one that did.
 */
static void
check_section(const SnapshotSource *src, const SnapshotManifest *m, Section *sec,
			  Oid source_dbid, Oid target_dbid, int backend_override,
			  bool trust_oids)
{
	int			cap = Max(m->nstates, 1);

	sec->n = 0;
	sec->states = palloc(sizeof(SnapshotState *) * cap);
	sec->descs = palloc(sizeof(StateDesc) * cap);
	sec->source_backends = palloc(sizeof(int) * cap);
	sec->slots = palloc(sizeof(int) * cap);
	sec->native = palloc0(sizeof(bool) * cap);
	for (int i = 0; i < m->nstates; i++)
	{
		SnapshotState *st = &m->states[i];
		StateDesc  *d = &sec->descs[sec->n];
		int			backend;

		if (st->desc.dbid != source_dbid)
			continue;
		*d = st->desc;
		backend = snapshot_state_backend(src, st, backend_override >= 0);
		if (trust_oids && keyed_backend_kept_data(backend))
			continue;
		if (trust_oids && registry_exists(target_dbid, NameStr(d->name)))
			continue;
		if (!trust_oids)
			resolve_desc(d, m);
		d->backend = backend_override >= 0 ? backend_override : backend;
		/* Operator state lives in shared memory, whatever backend is asked for. */
		if (state_kind_is_operator(d->kind))
			d->backend = keyed_backend_operator_backend(d->backend);
		d->dbid = target_dbid;
		sec->source_backends[sec->n] = backend;
		sec->native[sec->n] = st->native;
		if (!trust_oids && !snapshot_trusted(src, m))
			check_untrusted_state(src, m, st, d);
		FAULT_POINT("restore.verify_state");
		if (st->native)
			check_native_state(d, backend);
		else
			snapshot_verify_state(src, m, st);
		sec->states[sec->n++] = st;
	}
	FAULT_POINT("restore.verify_native_files");
	verify_native_files(src->dir, sec->states, sec->source_backends, sec->native, sec->n);
	/* After the checksums, which name where a file is damaged. */
	for (int i = 0; i < sec->n; i++)
		snapshot_verify_digest(src, m, sec->states[i]);
}

/*
 * Load one state's key-group file into its hidden state.  With check, every
 * native image is checked against the state's types and kind first (not at
 * server start: the worker has no catalog, and the checkpoint is its own).
 */
static int64
load_state(const SnapshotSource *src, const SnapshotManifest *m,
		   const SnapshotState *st, const StateDesc *desc, int slot, bool check,
		   const RescaleLoad *load)
{
	LoadContext *c = palloc(sizeof(LoadContext));
	int64		n;

	c->target = state_target(desc, slot);
	c->backend = keyed_backend_by_id(desc->backend);
	c->n = 0;
	c->kg_first = load->kg_first;
	c->kg_last = load->kg_last;
	c->append = load->append;
	keyed_batch_init(&c->batch, c->backend, &c->target);
	entry_reader_init(&c->reader, src, m, desc, check);
	snapshot_read_state(src, m, st, load_entry, c);
	keyed_batch_flush(&c->batch);
	CHECK_FOR_INTERRUPTS();
	n = c->n;
	pfree(c->batch.bytes.data);
	pfree(c);
	return n;
}

/*
 * log_restored writes the logged states a restore loaded to WAL, as
 * hidden states and their entries, before they are published.  The
 * publication is one PUBLISH record, flushed before the replaced states'
 * data goes (state_ops_publish): the restore is durable from that instant,
 * all of it or none after a crash, and when it returns.  No snapshot is cut
 * meanwhile (snapshot_control_hold_cuts), so a checkpoint holds all of
 * these records' effect or none.
 */
static void
log_restored(const StateDesc *descs, const int *slots, int n)
{
	for (int i = 0; i < n; i++)
		if (descs[i].logged)
			state_ops_log_hidden(&descs[i], slots[i]);
}

static RestoreLoggedHook restore_logged_hook = NULL;

void
restore_set_logged_hook(RestoreLoggedHook hook)
{
	restore_logged_hook = hook;
}

static bool
any_logged(const StateDesc *descs, int n)
{
	for (int i = 0; i < n; i++)
		if (descs[i].logged)
			return true;
	return false;
}

/*
 * section_keep_unlogged leaves in sec its unlogged states whose name no
 * state of the database has (a logged state of that name came later).
 */
static void
section_keep_unlogged(Section *sec, Oid dbid)
{
	StateDesc  *live = palloc(sizeof(StateDesc) * Max(state_backend_max_states, 1));
	int			nlive = registry_copy_all(live, NULL);
	int			kept = 0;

	for (int i = 0; i < sec->n; i++)
	{
		bool		taken = sec->descs[i].logged;

		for (int j = 0; j < nlive && !taken; j++)
			taken = live[j].dbid == dbid &&
				strcmp(NameStr(live[j].name), NameStr(sec->descs[i].name)) == 0;
		if (taken)
			continue;
		sec->states[kept] = sec->states[i];
		sec->descs[kept] = sec->descs[i];
		sec->source_backends[kept] = sec->source_backends[i];
		sec->slots[kept] = sec->slots[i];
		sec->native[kept] = sec->native[i];
		kept++;
	}
	sec->n = kept;
	pfree(live);
}

/*
 * plan_inputs checks every input's section and merges their states
 * (rescale_plan); returns the merged states' count.
 */
static int
plan_inputs(RestoreInput *in, int nin, Oid target_dbid, int backend_override,
			const RestoreSplit *split, bool trust_oids,
			StateDesc **merged, bool *whole)
{
	int			nflat = 0;
	RescaleInput *flat;
	RescaleLoad *loads;
	int			nm;
	int			k = 0;

	for (int i = 0; i < nin; i++)
	{
		if (in[i].m->format != SNAPSHOT_NATIVE && trust_oids)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a canonical checkpoint cannot be loaded at server start"),
					 errhint("Restore it with state.restore().")));
		check_section(in[i].src, in[i].m, &in[i].sec, in[i].source_dbid, target_dbid,
					  backend_override, trust_oids);
		if (in[i].unlogged_only)
			section_keep_unlogged(&in[i].sec, target_dbid);
		nflat += in[i].sec.n;
	}
	flat = palloc(sizeof(RescaleInput) * Max(nflat, 1));
	loads = palloc(sizeof(RescaleLoad) * Max(nflat, 1));
	for (int i = 0; i < nin; i++)
	{
		in[i].loads = &loads[k];
		for (int j = 0; j < in[i].sec.n; j++, k++)
		{
			flat[k].source = in[i].src->name;
			flat[k].desc = &in[i].sec.descs[j];
		}
	}
	nm = rescale_plan(flat, nflat, split, merged, loads, whole);
	pfree(flat);
	return nm;
}

/*
 * chunk_operator_lists leaves each merged operator_list with its part's
 * chunk, when the restore keeps one part of several.
 */
typedef struct ChunkArg
{
	const StateTarget *target;
	const RestoreSplit *split;
} ChunkArg;

static void
chunk_entry(void *arg, const char *key, uint32 keylen, const char *value, uint32 vallen)
{
	ChunkArg   *a = arg;
	StateKey	k;
	StringInfoData chunk;
	const KeyedStateBackend *b = keyed_backend_by_id(a->target->desc->backend);

	state_key_set(&k, key, keylen);
	initStringInfo(&chunk);
	if (rescale_chunk(value, vallen, a->split->parallelism, a->split->part, &chunk))
		b->put(a->target, &k, chunk.data, chunk.len);
	else
		b->remove(a->target, &k);
	pfree(chunk.data);
}

static void
chunk_operator_lists(const StateDesc *merged, const int *slots, int nm,
					 const RestoreSplit *split)
{
	for (int j = 0; j < nm && split->parallelism > 0; j++)
	{
		/* Not logged: a logged state's records begin at its publication. */
		StateDesc	quiet = merged[j];
		StateTarget target;
		ChunkArg	a = {&target, split};

		quiet.logged = false;
		target = state_target(&quiet, slots[j]);
		if (merged[j].kind == STATE_KIND_OPERATOR_LIST)
			keyed_backend_by_id(merged[j].backend)->iterate(&target, -1, chunk_entry, &a);
	}
}

/*
 * load_inputs loads every input's states into the merged hidden states, as
 * the plan says; returns the entries loaded.
 */
static int64
load_inputs(RestoreInput *in, int nin, const StateDesc *merged, const int *slots,
			bool trust_oids)
{
	int64		total = 0;

	for (int i = 0; i < nin; i++)
	{
		bool		any_native = false;

		for (int j = 0; j < in[i].sec.n; j++)
		{
			const RescaleLoad *l = &in[i].loads[j];
			StateDesc	load;

			if (l->skip)
				continue;
			if (in[i].sec.native[j])
			{
				any_native = true;	/* below, all at once */
				continue;
			}
			/* Loading is not logged: a logged state's records begin at its publication. */
			FAULT_POINT("restore.load_state");
			load = merged[l->merged];
			load.logged = false;
			total += load_state(in[i].src, in[i].m, in[i].sec.states[j], &load,
								slots[l->merged], !trust_oids, l);
		}
		if (any_native)
		{
			FAULT_POINT("restore.load_native_files");
			total += restore_native_files(in[i].src->dir, &in[i].sec, in[i].loads,
										  merged, slots);
		}
	}
	return total;
}

/*
 * The hidden states a restore in this process has made and not yet
 * published, for its exit: an ERROR discards them where it is caught; a
 * process that exits (FATAL, a terminate) discards them here, so that
 * their data does not stay behind, nor (when their creation went to WAL)
 * their ids on standbys.
 */
static StateDesc *exit_hidden = NULL;
static int *exit_hidden_slots = NULL;
static volatile int exit_nhidden = 0;
static bool exit_registered = false;

static void
restore_at_exit(int code, Datum arg)
{
	int			n = exit_nhidden;

	exit_nhidden = 0;
	if (n > 0)
		LWLockReleaseAll();		/* as an abort would, before it */
	for (int j = 0; j < n; j++)
		state_ops_discard(&exit_hidden[j], exit_hidden_slots[j]);
}

/*
 * restore_inputs replaces the states of database target_dbid with the
 * states of the inputs' sections, merged, and of them the part split says
 * (rescale.c).  Returns the entries loaded.
 */
static int64
restore_inputs(RestoreInput *in, int nin, Oid target_dbid, int backend_override,
			   const RestoreSplit *split, bool trust_oids)
{
	StateDesc  *merged;
	int		   *slots;
	int			nm;
	volatile int created = 0;
	volatile bool holding = false;
	volatile bool pending = false;
	int64		total = 0;
	bool		whole;

	nm = plan_inputs(in, nin, target_dbid, backend_override, split, trust_oids,
					 &merged, &whole);
	slots = palloc(sizeof(int) * Max(nm, 1));
	if (!trust_oids && any_logged(merged, nm) && restore_logged_hook)
	{
		restore_logged_hook();
		pending = true;
	}

	if (!exit_registered)
	{
		before_shmem_exit(restore_at_exit, (Datum) 0);
		exit_registered = true;
	}
	exit_hidden = merged;
	exit_hidden_slots = slots;

	/* Load into hidden states; publish them all at once. */
	PG_TRY();
	{
		for (int j = 0; j < nm; j++)
		{
			/* At start, states keep their ids: WAL names them so. */
			FAULT_POINT("restore.create_hidden");
			/* Another cluster's ids (or new ones here) replace nothing here. */
			if (!trust_oids)
				merged[j].replaces = 0;
			slots[j] = trust_oids ? registry_create_as(&merged[j]) :
				registry_create(&merged[j], true);
			created = j + 1;
			exit_nhidden = created;
		}
		if (pending)
		{
			pending = false;
			registry_logged_pending(-1);
		}
		total = load_inputs(in, nin, merged, slots, trust_oids);
		/* An operator list is shared out of the whole job's only. */
		if (whole)
			chunk_operator_lists(merged, slots, nm, split);
		/* Writes may have been posted: they must all be in. */
		if (!trust_oids)
			keyed_backend_flush_all();
		if (!trust_oids && any_logged(merged, nm))
		{
			snapshot_control_hold_cuts(true);
			holding = true;
			FAULT_POINT("restore.log_restored");
			log_restored(merged, slots, nm);
		}
		FAULT_POINT("restore.before_publish");
	}
	PG_CATCH();
	{
		exit_nhidden = 0;
		if (pending)
			registry_logged_pending(-1);
		if (holding)
			snapshot_control_hold_cuts(false);
		for (int j = 0; j < created; j++)
			state_ops_discard(&merged[j], slots[j]);
		PG_RE_THROW();
	}
	PG_END_TRY();

	PG_TRY();
	{
		/* Published from here: nothing discards them any more. */
		exit_nhidden = 0;
		state_ops_publish(target_dbid, merged, nm,
						  in[0].unlogged_only ? STATE_PUBLISH_KEEP_ALL :
						  trust_oids ? STATE_PUBLISH_KEEP_KEPT : STATE_PUBLISH_REPLACE,
						  !trust_oids);
	}
	PG_FINALLY();
	{
		if (holding)
			snapshot_control_hold_cuts(false);
	}
	PG_END_TRY();
	FAULT_POINT("restore.after_publish");
	return total;
}

/*
 * restore_into_database restores the current database from one snapshot,
 * or from several merged (nsrcs > 1, the snapshots of several parts), and
 * of that the part split names (parallelism 0: all of it).
 * backend_override < 0 keeps each state's backend.
 */
int64
restore_into_database(const SnapshotSource *srcs, int nsrcs, const char *from_database,
					  int backend_override, const RestoreSplit *split)
{
	RestoreInput *in = palloc(sizeof(RestoreInput) * Max(nsrcs, 1));

	for (int i = 0; i < nsrcs; i++)
	{
		pick_section(&srcs[i], from_database, &in[i]);
		/*
		 * Key-group ranges, a split, and keys stored with their key group
		 * (a backend's own files) count this server's key groups.
		 */
		if ((nsrcs > 1 || split->parallelism > 0 || manifest_has_ranges(in[i].m) ||
			 manifest_has_native(in[i].m)) &&
			in[i].m->key_groups != state_backend_max_parallelism)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("snapshot \"%s\" was taken with %d key groups, and this server has %d",
							srcs[i].name, in[i].m->key_groups, state_backend_max_parallelism),
					 errdetail(manifest_has_native(in[i].m) ?
							   "The keys in its backends' own files are stored under their key groups, which this server would not find." :
							   "Parts of a snapshot are numbered in key groups."),
					 errhint("Set state_backend.max_parallelism to %d, or restore a canonical snapshot.",
							 in[i].m->key_groups)));
	}
	return restore_inputs(in, nsrcs, MyDatabaseId, backend_override, split, false);
}

/*
 * restore_database_at_start restores database d of the checkpoint m at
 * src into the database of that oid, if it exists (its unlogged states
 * only, beside the rest: unlogged_only).  Returns NULL, or the error
 * message of a failure (palloc'd), reported at WARNING when report.  A
 * failure leaves nothing of the load behind (restore_inputs), so it can
 * be tried again.  In the state worker, at start or at a promotion.
 */
static char *
restore_database_at_start(const SnapshotSource *src, SnapshotManifest *m, int d,
						  bool unlogged_only, bool report)
{
	Oid			dbid = m->db_oids[d];
	MemoryContext cxt = CurrentMemoryContext;
	char	   *volatile error = NULL;
	bool		exists;

	StartTransactionCommand();
	exists = SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(dbid));
	CommitTransactionCommand();
	if (!exists)
		return NULL;
	PG_TRY();
	{
		RestoreInput in = {src, m, dbid};
		RestoreSplit whole = {0, 0};
		int64		n;

		FAULT_POINT("restore.at_start_database");
		in.unlogged_only = unlogged_only;
		n = restore_inputs(&in, 1, dbid, -1, &whole, true);
		ereport(LOG,
				(errmsg("state_backend restored " INT64_FORMAT " entries of %sdatabase \"%s\" from \"%s\"",
						n, unlogged_only ? "unlogged states of " : "", m->db_names[d], src->dir)));
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		edata = catch_error(cxt);
		AbortOutOfAnyTransaction();
		if (report)
			ereport(WARNING,
					(errcode(edata->sqlerrcode),
					 errmsg("state_backend could not restore %sdatabase \"%s\" from \"%s\": %s",
							unlogged_only ? "the unlogged states of " : "", m->db_names[d], src->dir,
							edata->message),
					 edata->detail ? errdetail_internal("%s", edata->detail) : 0));
		error = pstrdup(edata->message);
		FreeErrorData(edata);
	}
	PG_END_TRY();
	return error;
}

/*
 * restore_database_retrying restores database d as restore_database_at_start
 * does; when it fails and wait is given, it says so (wait) and tries again
 * until it succeeds, or the checkpoint is gone (then false: the caller
 * decides).  Without wait a failure is reported and returns false.  A
 * failure is reported at WARNING once, and again when the error changes.
 */
static bool
restore_database_retrying(const SnapshotSource *src, SnapshotManifest *m, int d,
						  bool unlogged_only, int64 id, RestoreWaitFn wait)
{
	char	   *said = restore_database_at_start(src, m, d, unlogged_only, true);
	char	   *error = said;

	while (error != NULL && wait != NULL && snapshot_dir_is_complete(src->dir))
	{
		char	   *detail = psprintf("The %sstates of database \"%s\" could not be loaded from checkpoint \"%s\": %s.",
									  unlogged_only ? "unlogged " : "",
									  m->db_names[d], src->dir, error);

		wait(id, detail);
		pfree(detail);
		if (error != said)
			pfree(error);
		error = restore_database_at_start(src, m, d, unlogged_only, false);
		if (error != NULL && strcmp(error, said) != 0)
		{
			ereport(WARNING,
					(errmsg("state_backend could not restore %sdatabase \"%s\" from \"%s\": %s",
							unlogged_only ? "the unlogged states of " : "", m->db_names[d], src->dir,
							error)));
			pfree(said);
			said = pstrdup(error);
		}
	}
	if (error == NULL && said != NULL)
		ereport(LOG,
				(errmsg("state_backend restored %sdatabase \"%s\" from \"%s\", which had failed",
						unlogged_only ? "the unlogged states of " : "", m->db_names[d], src->dir)));
	return error == NULL;
}

/*
 * restore_on_start loads every database's states from the newest complete
 * checkpoint, in the state worker at server start, but for the states of
 * backends that kept their working data (keyed_backend_kept_data).  A
 * MANIFEST that cannot be read or a section that cannot be loaded (the
 * memory limit, a full file system, a damaged file) is reported, and with
 * wait tried again until it loads: the server's states stay unserved
 * meanwhile, since coming up without them would lose them at the next
 * checkpoint's retention.  Only a checkpoint gone meanwhile (moved aside)
 * ends that, with out->complete false (the worker then starts the
 * server's processes again, to load the newest one).  Without wait (no
 * caller yet) a failure is reported and the rest loaded.
 * Returns the checkpoint's directory, or NULL when none was read.
 * A checkpoint that holds states of a backend not registered here is not
 * loaded at all (out->unregistered gets its name): the states could not be
 * kept, and the next checkpoint would lose them.  out->manifest is the
 * checkpoint's MANIFEST as read, out->complete whether every section was
 * loaded.  A standby (standby) leases the checkpoint first, so that the
 * primary's retention keeps it while it is read (checkpoint_lease).
 */
char *
restore_on_start(bool standby, RestoreWaitFn wait, RestoreStart *out)
{
	char	   *dir;
	int64		id;
	SnapshotSource src;
	SnapshotManifest *m;

	memset(out, 0, sizeof(*out));
	out->complete = true;
	if (state_backend_checkpoint_dir[0] == '\0')
		return NULL;
	snapshot_bump_next_id(checkpoint_max_id(state_backend_checkpoint_dir));
	if (!state_backend_restore_on_start)
		return NULL;
	for (;;)
	{
		dir = checkpoint_newest(state_backend_checkpoint_dir, &id);
		/* Gone since it was found: a newer one completed meanwhile. */
		if (dir == NULL || !standby || checkpoint_lease(dir))
			break;
		CHECK_FOR_INTERRUPTS();
	}
	checkpoint_warn_final_failed(dir);
	if (dir == NULL)
		return NULL;

	m = checkpoint_read_manifest(dir, &src, true);
	/* Starting empty would lose it at the next checkpoint: not while waiting helps. */
	while (m == NULL && wait != NULL && snapshot_dir_is_complete(dir))
	{
		char	   *detail = psprintf("The MANIFEST of checkpoint \"%s\" could not be read.", dir);

		wait(id, detail);
		pfree(detail);
		m = checkpoint_read_manifest(dir, &src, false);
	}
	if (m == NULL)
	{
		ereport(WARNING,
				(errmsg("state_backend could not read checkpoint \"%s\"; heap states start empty", dir)));
		out->complete = false;
		return wait != NULL ? dir : NULL;
	}
	out->unregistered = manifest_unregistered(m);
	if (out->unregistered != NULL)
		return NULL;
	out->manifest = m;
	for (int d = 0; d < m->ndbs; d++)
		if (!restore_database_retrying(&src, m, d, false, id, wait))
			out->complete = false;
	return dir;
}


/*
 * restore_unlogged_at_promotion, in the worker of a standby just promoted,
 * whose logged states are current (logged_standby.c): its unlogged states
 * come back as of the newest checkpoint, as after a crash.  Those of the
 * checkpoint it loaded at its start (loaded) go, and a newer checkpoint's
 * come in beside the logged states.  A MANIFEST that cannot be read leaves
 * the unlogged states as the older checkpoint had them; a database whose
 * restore fails is reported and tried again (wait) until it loads, so
 * that the promotion's checkpoint does not go without them.
 */
void
restore_unlogged_at_promotion(const char *loaded, RestoreWaitFn wait)
{
	int64		id;
	char	   *dir = state_backend_checkpoint_dir[0] != '\0' ?
		checkpoint_newest(state_backend_checkpoint_dir, &id) : NULL;
	SnapshotSource src;
	SnapshotManifest *m;
	StateDesc  *live;
	int			nlive;

	if (dir == NULL || (loaded != NULL && strcmp(dir, loaded) == 0))
		return;
	m = checkpoint_read_manifest(dir, &src, true);
	if (m == NULL)
	{
		ereport(WARNING,
				(errmsg("state_backend could not read checkpoint \"%s\"; unlogged states stay as an older checkpoint had them", dir)));
		return;
	}
	if (manifest_unregistered(m) != NULL)
		return;
	live = palloc(sizeof(StateDesc) * Max(state_backend_max_states, 1));
	nlive = registry_copy_all(live, NULL);
	for (int i = 0; i < nlive; i++)
	{
		StateDesc	cur;
		int			slot = live[i].logged ? -1 : registry_find(live[i].id, &cur);

		if (slot >= 0)
			(void) state_ops_drop(&cur, slot);
	}
	pfree(live);
	for (int d = 0; d < m->ndbs; d++)
		(void) restore_database_retrying(&src, m, d, true, id, wait);
}
