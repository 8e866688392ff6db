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
#include "storage/lwlock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "backend/keyed_backend.h"
#include "catalog/registry.h"
#include "common/aggregate.h"
#include "common/codec.h"
#include "common/settings.h"
#include "format/records.h"
#include "format/state_wal.h"
#include "snapshot/canonical.h"
#include "snapshot/checkpoint.h"
#include "snapshot/rescale.h"
#include "snapshot/restore.h"
#include "snapshot/snapshot_control.h"
#include "state_ops.h"

/*
 * An EntryReader hands on a snapshot state's entries as native images:
 * canonical images converted with the types' receive functions, native ones
 * from a file not ours checked for their shape first.
 */
typedef struct EntryReader
{
	const StateDesc *desc;
	const char *source;			/* for messages */
	bool		canonical;
	bool		check;
	StateCodecs codecs;
	StringInfoData key;
	StringInfoData value;
	MemoryContext tmp;
} EntryReader;

static void
reader_init(EntryReader *r, const SnapshotSource *src, const SnapshotManifest *m,
			const StateDesc *desc, bool check)
{
	r->desc = desc;
	r->source = src->name;
	r->canonical = m->format == SNAPSHOT_CANONICAL;
	r->check = !r->canonical && check;
	if (r->canonical || r->check)
		canonical_codecs_init(&r->codecs, desc, CurrentMemoryContext);
	if (r->canonical)
	{
		initStringInfo(&r->key);
		initStringInfo(&r->value);
		r->tmp = AllocSetContextCreate(CurrentMemoryContext, "restore entry",
									   ALLOCSET_DEFAULT_SIZES);
	}
}

/* reader_native turns an entry into native images, in place. */
static void
reader_native(EntryReader *r, const char **key, uint32 *keylen, const char **value,
			  uint32 *vallen)
{
	if (r->canonical)
	{
		MemoryContext old = MemoryContextSwitchTo(r->tmp);

		resetStringInfo(&r->key);
		resetStringInfo(&r->value);
		canonical_to_native(&r->codecs, true, *key, *keylen, &r->key);
		canonical_to_native(&r->codecs, false, *value, *vallen, &r->value);
		MemoryContextSwitchTo(old);
		MemoryContextReset(r->tmp);
		*key = r->key.data;
		*keylen = r->key.len;
		*value = r->value.data;
		*vallen = r->value.len;
	}
	else if (r->check)
	{
		bool		key_ok = state_image_ok(&r->codecs, true, *key, *keylen);

		if (!key_ok || !state_image_ok(&r->codecs, false, *value, *vallen))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("snapshot \"%s\" holds a malformed entry of state \"%s\"",
							r->source, NameStr(r->desc->name)),
					 errdetail("Its %s image does not have the shape of a %s.",
							   key_ok ? "value" : "key",
							   format_type_be(key_ok ? state_desc_image_type(r->desc) :
											  r->desc->key_type))));
	}
}

typedef struct LoadContext
{
	StateTarget target;
	const KeyedStateBackend *backend;
	int64		n;
	EntryReader reader;
	int			kg_first;		/* -1: every key group (rescale.h) */
	int			kg_last;
	bool		append;			/* add to an earlier snapshot's list */
} LoadContext;

static void
load_entry(void *arg, const char *key, uint32 keylen, const char *value, uint32 vallen)
{
	LoadContext *c = arg;
	StateKey	k;

	reader_native(&c->reader, &key, &keylen, &value, &vallen);
	state_key_set(&k, key, keylen);
	if (c->kg_first >= 0 && (k.key_group < c->kg_first || k.key_group > c->kg_last))
		return;					/* another part's */
	if (c->append)
		c->backend->append(&c->target, &k, value, vallen);
	else
		c->backend->put(&c->target, &k, value, vallen);
	c->n++;
}

/*
 * resolve_types points a restored descriptor at this cluster's types, found
 * by name.  Native images were written for the exact types of the cluster
 * that took them (enum values and arrays carry type OIDs), so a native
 * snapshot needs the same OIDs; a canonical one only the same names.
 */
static void
resolve_type(const StateDesc *d, StateType *t, bool native, const char *what, bool stored)
{
	StateType	now;
	Oid			oid;

	if (!OidIsValid(t->oid))
		return;
	oid = codec_find_type(t);
	if (!OidIsValid(oid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("type %s.%s of state \"%s\" does not exist",
						NameStr(t->nspname), NameStr(t->typname), NameStr(d->name)),
				 errhint("Create the type before restoring the snapshot.")));
	codec_describe_type(oid, &now);
	if (native && oid != t->oid)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("type %s.%s of state \"%s\" is not the type the native snapshot was taken with",
						NameStr(t->nspname), NameStr(t->typname), NameStr(d->name)),
				 errdetail("Its OID is %u; the snapshot recorded %u. Native images may embed type OIDs.",
						   oid, t->oid),
				 errhint("Restore from a canonical snapshot (format => 'canonical').")));
	state_ops_check_type(oid, what, stored);
	if (now.typlen != t->typlen || now.typbyval != t->typbyval)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("type %s.%s of state \"%s\" is stored differently than when the snapshot was taken",
						NameStr(t->nspname), NameStr(t->typname), NameStr(d->name))));
	*t = now;
}

static void
resolve_types(StateDesc *d, bool native)
{
	resolve_type(d, &d->types[STATE_TYPE_KEY], native, "a key", true);
	resolve_type(d, &d->types[STATE_TYPE_VALUE], native, "a value",
				 d->kind != STATE_KIND_AGGREGATING);
	resolve_type(d, &d->types[STATE_TYPE_MAP_KEY], native, "a map key", true);
	resolve_type(d, &d->agg_type, native, "an aggregate's transition state", true);
	d->key_type = d->types[STATE_TYPE_KEY].oid;
	d->value_type = d->types[STATE_TYPE_VALUE].oid;
	d->map_key_type = d->types[STATE_TYPE_MAP_KEY].oid;
	if (state_kind_layout(d->kind) == STATE_KIND_LIST)
		state_ops_check_list_type(d->value_type);
}

/*
 * resolve_roles maps a restored state's owner and grants to roles of this
 * cluster.  A snapshot of this cluster (same system identifier) names
 * roles by OID, which renames do not change; the owner named by the
 * snapshot's OID is kept if that role still exists.  A snapshot of another
 * cluster names the owner by name, and its grants, whose OIDs mean nothing
 * here, are dropped.  An owner not found becomes the restoring role, and
 * so does any owner the restoring role could not have created the state
 * as: a restore gives no role more than it could do itself.
 */
static void
resolve_roles(StateDesc *d, bool same_cluster)
{
	Oid			owner = InvalidOid;
	int			n = 0;

	if (same_cluster && SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(d->owner)))
		owner = d->owner;
	else if (!same_cluster)
		owner = get_role_oid(NameStr(d->owner_name), true);
	if (!OidIsValid(owner) || !has_privs_of_role(GetUserId(), owner))
		owner = GetUserId();
	d->owner = owner;
	namestrcpy(&d->owner_name, GetUserNameFromId(owner, false));

	for (int g = 0; g < d->ngrants; g++)
		if (same_cluster &&
			SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(d->grants[g].role)))
			d->grants[n++] = d->grants[g];
	if (n < d->ngrants)
		ereport(NOTICE,
				(errmsg("%d grants of state \"%s\" were not restored",
						d->ngrants - n, NameStr(d->name)),
				 errdetail(same_cluster ? "Their roles no longer exist." :
						   "The snapshot was taken by another cluster, whose role OIDs mean nothing here."),
				 errhint("Grant them again with state.grant_access().")));
	d->ngrants = n;
}

/*
 * resolve_desc maps a snapshot's state descriptor onto this server: its
 * types, roles and (for an aggregating state) aggregate.
 */
static void
resolve_desc(StateDesc *d, const SnapshotManifest *m)
{
	resolve_types(d, m->format == SNAPSHOT_NATIVE);
	resolve_roles(d, m->system_identifier == GetSystemIdentifier());
	if (d->kind == STATE_KIND_AGGREGATING)
		aggregate_resolve(d);
}

/* The states of one section of a snapshot being restored. */
typedef struct Section
{
	int			n;
	SnapshotState **states;		/* as the snapshot has them */
	StateDesc  *descs;			/* as they will be here */
	int		   *source_backends;	/* their backend in the snapshot */
	int		   *slots;
	bool	   *native;			/* in their backend's own files */
} Section;

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
 * check_native_state checks that a state kept in its backend's own files
 * is restored into that backend.
 */
static void
check_native_state(const StateDesc *d, int source_backend)
{
	const KeyedStateBackend *from = keyed_backend_by_id(source_backend);

	if (keyed_backend_by_id(d->backend) != from || from->snapshot->restore_native == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("state \"%s\" is kept as %s files in this native snapshot",
						NameStr(d->name),
						from->snapshot->native_files_name ? from->snapshot->native_files_name : from->name),
				 errdetail("A native snapshot restores %s states into the %s backend only.",
						   keyed_backend_name(source_backend), keyed_backend_name(source_backend)),
				 errhint("Take a canonical snapshot (format => 'canonical') to move states across backends.")));
}

/* Every backend with native files verifies those of its states. */
static void
verify_native_files(const char *dir, SnapshotState **states, const int *source_backends,
					const bool *native, int n)
{
	const char **lists = palloc(sizeof(char *) * Max(n, 1));
	int			nb;
	const KeyedStateBackend *const *all = keyed_backend_all(&nb);

	for (int b = 0; b < nb; b++)
	{
		int			nlists = 0;

		for (int i = 0; i < n; i++)
			if (native[i] && keyed_backend_by_id(source_backends[i]) == all[b])
				lists[nlists++] = states[i]->file;
		if (nlists > 0)
			all[b]->snapshot->verify_native(dir, lists, nlists);
	}
	pfree(lists);
}

/*
 * The backend a snapshot names for a state.  One not registered here (its
 * library is not loaded) is refused, unless the state is in key-group
 * files and goes to another backend (into > 0): then -1, as those files
 * are read the same whatever backend wrote them.
 */
static int
snapshot_state_backend(const SnapshotSource *src, const SnapshotState *st, bool into)
{
	int			backend;

	if (keyed_backend_lookup(st->backend, &backend))
		return backend;
	if (!st->native && into)
		return -1;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("snapshot \"%s\" holds state \"%s\" of backend \"%s\", which is not registered on this server",
					src->name, NameStr(st->desc.name), st->backend),
			 errdetail("The backends registered here are %s.", keyed_backend_names()),
			 st->native ?
			 errhint("Load the library that provides it (shared_preload_libraries), or restore a canonical snapshot of it.") :
			 errhint("Load the library that provides it (shared_preload_libraries), or restore it into another backend (backend => 'memory').")));
	return -1;					/* keep the compiler quiet */
}

/* The first backend a MANIFEST names that is not registered here, or NULL. */
static const char *
manifest_unregistered(const SnapshotManifest *m)
{
	int			backend;

	for (int i = 0; i < m->nstates; i++)
		if (!keyed_backend_lookup(m->states[i].backend, &backend))
			return m->states[i].backend;
	return NULL;
}

/* untrusted_refused: the error for what an untrusted snapshot cannot give. */
static void
untrusted_refused(const SnapshotSource *src, const StateDesc *d, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("snapshot \"%s\" is not trusted, and state \"%s\" holds %s",
					src->name, NameStr(d->name), what),
			 errdetail("A snapshot is trusted when it is under state_backend.checkpoint_dir or signed with this server's key (state_backend.signing_key_file); the images of any other are checked before use, and these cannot be."),
			 errhint("Restore a canonical snapshot (format => 'canonical'), or give this server the signing key file of the server that took the snapshot.")));
}

/*
 * check_untrusted_state refuses a state of an untrusted snapshot whose
 * images would reach a type's or aggregate's own functions unchecked:
 * states in a backend's own files (not read entry by entry before use),
 * native images of types whose image is more than its shape (a jsonb's,
 * a numeric's, an array's structure: codec_images_checked), and the
 * serialized transition states of an aggregate, which its deserialization
 * function trusts.  Canonical images of other types go through the types'
 * receive functions, which check them.
 */
static void
check_untrusted_state(const SnapshotSource *src, const SnapshotManifest *m,
					  const SnapshotState *st, const StateDesc *d)
{
	if (st->native)
		untrusted_refused(src, d, psprintf("%s native files", st->backend));
	if (d->kind == STATE_KIND_AGGREGATING && aggregate_transtype(d->aggregate) == INTERNALOID)
		untrusted_refused(src, d, psprintf("serialized transition states of aggregate %s",
										   format_procedure(d->aggregate)));
	if (m->format == SNAPSHOT_NATIVE)
	{
		const Oid	types[3] = {d->key_type, state_desc_image_type(d), d->map_key_type};

		for (int i = 0; i < 3; i++)
		{
			TypeCodec	codec;

			if (!OidIsValid(types[i]))
				continue;
			codec_init(&codec, types[i], CurrentMemoryContext);
			if (!codec_images_checked(&codec))
				untrusted_refused(src, d, psprintf("native images of type %s",
												   format_type_be(types[i])));
		}
	}
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
		if (st->native)
			check_native_state(d, backend);
		else
			snapshot_verify_state(src, m, st);
		sec->states[sec->n++] = st;
	}
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
	LoadContext c;

	c.target.desc = desc;
	c.target.slot = slot;
	c.backend = keyed_backend_by_id(desc->backend);
	c.n = 0;
	c.kg_first = load->kg_first;
	c.kg_last = load->kg_last;
	c.append = load->append;
	reader_init(&c.reader, src, m, desc, check);
	snapshot_read_state(src, m, st, load_entry, &c);
	CHECK_FOR_INTERRUPTS();
	return c.n;
}

/* log_entry: one restored entry of a logged state goes to WAL. */
static void
log_entry(void *arg, const char *key, uint32 keylen, const char *value, uint32 valuelen)
{
	const StateDesc *d = arg;

	(void) state_wal_log(STATE_WAL_PUT, d->id, key, keylen, NULL, 0, value, valuelen, false);
	CHECK_FOR_INTERRUPTS();
}

/*
 * log_restored writes the logged states a restore loaded to WAL, as
 * hidden states and their entries, before they are published: the restore
 * is durable when it returns, as COPY into a table is.  No snapshot is cut
 * meanwhile (snapshot_control_hold_cuts), so a checkpoint holds all of
 * these records' effect or none.
 */
static void
log_restored(const StateDesc *descs, const int *slots, int n)
{
	for (int i = 0; i < n; i++)
	{
		StateTarget target;

		if (!descs[i].logged)
			continue;
		target.desc = &descs[i];
		target.slot = slots[i];
		(void) state_wal_log_create(&descs[i], true);
		keyed_backend_by_id(descs[i].backend)->iterate(&target, -1, log_entry,
													 unconstify(StateDesc *, &descs[i]));
	}
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

/* One snapshot a restore reads: its section of one database. */
typedef struct RestoreInput
{
	const SnapshotSource *src;
	SnapshotManifest *m;
	Oid			source_dbid;
	Section		sec;
	RescaleLoad *loads;			/* per state of sec: rescale_plan's */
} RestoreInput;

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
		StateTarget target = {&quiet, slots[j]};
		ChunkArg	a = {&target, split};

		quiet.logged = false;
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
			load = merged[l->merged];
			load.logged = false;
			total += load_state(in[i].src, in[i].m, in[i].sec.states[j], &load,
								slots[l->merged], !trust_oids, l);
		}
		if (any_native)
			total += restore_native_files(in[i].src->dir, &in[i].sec, in[i].loads,
										  merged, slots);
	}
	return total;
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

	/* Load into hidden states; publish them all at once. */
	PG_TRY();
	{
		for (int j = 0; j < nm; j++)
		{
			/* At start, states keep their ids: WAL names them so. */
			slots[j] = trust_oids ? registry_create_as(&merged[j]) :
				registry_create(&merged[j], true);
			created = j + 1;
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
			log_restored(merged, slots, nm);
		}
	}
	PG_CATCH();
	{
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
		state_ops_publish(target_dbid, merged, nm,
						  trust_oids ? STATE_PUBLISH_KEEP_KEPT : STATE_PUBLISH_REPLACE,
						  !trust_oids);
	}
	PG_FINALLY();
	{
		if (holding)
			snapshot_control_hold_cuts(false);
	}
	PG_END_TRY();
	return total;
}

/*
 * pick_section reads a snapshot's MANIFEST into an input and picks its
 * section of database from_database (default: the one named like the
 * current database, or the only one).
 */
static void
pick_section(const SnapshotSource *src, const char *from_database, RestoreInput *in)
{
	SnapshotManifest *m = snapshot_read_manifest(src);
	char	   *current = get_database_name(MyDatabaseId);
	const char *want = from_database ? from_database : current;
	Oid			source = InvalidOid;
	bool		found = false;

	for (int d = 0; d < m->ndbs; d++)
		if (strcmp(m->db_names[d], want) == 0)
		{
			source = m->db_oids[d];
			found = true;
		}
	if (!found && from_database == NULL && m->ndbs == 1)
	{
		source = m->db_oids[0];
		found = true;
	}
	/*
	 * Native images are loaded as they are, as PostgreSQL loads its own data
	 * files.  A native snapshot that this server cannot trust (see
	 * snapshot_trusted) is for superusers, and even then only of types
	 * whose images can be checked (check_untrusted_state); canonical ones
	 * go through the types' receive functions.
	 */
	if (m->format == SNAPSHOT_NATIVE && !snapshot_trusted(src, m) && !superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to restore native snapshot \"%s\"", src->name),
				 errdetail("Only superusers may restore a native snapshot that is neither under state_backend.checkpoint_dir nor signed with this server's key."),
				 errhint("Restore a canonical snapshot (format => 'canonical') instead.")));
	if (!found && !(from_database == NULL && m->ndbs == 0))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("snapshot \"%s\" has no states of database \"%s\"", src->name, want),
				 m->ndbs > 1 ? errhint("Name the database to restore from with from_database.") : 0));
	memset(in, 0, sizeof(RestoreInput));
	in->src = src;
	in->m = m;
	in->source_dbid = source;
}

/* Does a snapshot hold a state of only some key groups? */
static bool
manifest_has_ranges(const SnapshotManifest *m)
{
	for (int i = 0; i < m->nstates; i++)
		if (m->states[i].desc.range_parts > 0)
			return true;
	return false;
}

/*
 * Whether a snapshot holds states in a backend's own files (rocksdb's),
 * whose keys carry the key group they were written in.
 */
static bool
manifest_has_native(const SnapshotManifest *m)
{
	for (int i = 0; i < m->nstates; i++)
		if (m->states[i].native)
			return true;
	return false;
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
							   "Its rocksdb states' keys are stored under their key groups, which this server would not find." :
							   "Parts of a snapshot are numbered in key groups."),
					 errhint("Set state_backend.max_parallelism to %d, or restore a canonical snapshot.",
							 in[i].m->key_groups)));
	}
	return restore_inputs(in, nsrcs, MyDatabaseId, backend_override, split, false);
}

/*
 * restore_on_start loads every database's states from the newest complete
 * checkpoint, in the state worker at server start, but for the states of
 * backends that kept their working data (keyed_backend_kept_data).  A
 * section that cannot be loaded is reported and skipped: the server must
 * come up.  Returns the checkpoint's directory, or NULL when none was read.
 * A checkpoint that holds states of a backend not registered here is not
 * loaded at all (*unregistered gets its name): the states could not be
 * kept, and the next checkpoint would lose them.
 */
char *
restore_on_start(const char **unregistered)
{
	char	   *dir;
	int64		id;
	SnapshotSource src;
	SnapshotManifest *m;
	MemoryContext cxt = CurrentMemoryContext;

	*unregistered = NULL;
	if (state_backend_checkpoint_dir[0] == '\0')
		return NULL;
	snapshot_bump_next_id(checkpoint_max_id(state_backend_checkpoint_dir));
	if (!state_backend_restore_on_start)
		return NULL;
	dir = checkpoint_newest(state_backend_checkpoint_dir, &id);
	checkpoint_warn_final_failed(dir);
	if (dir == NULL)
		return NULL;

	memset(&src, 0, sizeof(src));
	src.dir = dir;
	src.name = dir;
	src.trusted = true;			/* the server's own checkpoint */
	PG_TRY();
	{
		m = snapshot_read_manifest(&src);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		EmitErrorReport();
		FlushErrorState();
		ereport(WARNING,
				(errmsg("state_backend could not read checkpoint \"%s\"; heap states start empty", dir)));
		return NULL;
	}
	PG_END_TRY();
	*unregistered = manifest_unregistered(m);
	if (*unregistered != NULL)
		return NULL;

	for (int d = 0; d < m->ndbs; d++)
	{
		Oid			dbid = m->db_oids[d];
		bool		exists;

		StartTransactionCommand();
		exists = SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(dbid));
		CommitTransactionCommand();
		if (!exists)
			continue;
		PG_TRY();
		{
			RestoreInput in = {&src, m, dbid};
			RestoreSplit whole = {0, 0};
			int64		n = restore_inputs(&in, 1, dbid, -1, &whole, true);

			ereport(LOG,
					(errmsg("state_backend restored " INT64_FORMAT " entries of database \"%s\" from \"%s\"",
							n, m->db_names[d], dir)));
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(cxt);
			EmitErrorReport();
			FlushErrorState();
			LWLockReleaseAll();
			AbortOutOfAnyTransaction();
			ereport(WARNING,
					(errmsg("state_backend could not restore database \"%s\" from \"%s\"",
							m->db_names[d], dir)));
		}
		PG_END_TRY();
	}
	return dir;
}

/*
 * check_memory_read: a snapshot kept in shared memory is read with no file
 * privilege, so reading one of its states takes what reading the state
 * itself takes: read access to it, as the snapshot describes its owner and
 * grants (this cluster's roles), and CONNECT on its database while that
 * exists.
 */
static void
check_memory_read(const StateDesc *d, Oid dbid)
{
	if (SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(dbid)) &&
		pg_database_aclcheck(dbid, GetUserId(), ACL_CONNECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for database \"%s\"", get_database_name(dbid)),
				 errdetail("Reading state \"%s\" of a snapshot kept in shared memory needs CONNECT on its database.",
						   NameStr(d->name))));
	registry_check_access(d, STATE_PRIV_READ);
}

/*
 * snapshot_query_open finds, for snapshot_entries(), state "name" of the
 * section of database from_database of a snapshot, checked as a restore
 * checks it: privileges, its file, its types and aggregate found on this
 * server.  A state its backend keeps in native files of its own (a rocksdb
 * state of a native snapshot) is read by that backend.
 */
void
snapshot_query_open(SnapshotQuery *q, const SnapshotSource *src, const char *from_database,
					const char *name)
{
	RestoreInput in;

	pick_section(src, from_database, &in);
	q->src = src;
	q->m = in.m;
	q->st = NULL;
	for (int i = 0; i < in.m->nstates; i++)
		if (in.m->states[i].desc.dbid == in.source_dbid &&
			strcmp(NameStr(in.m->states[i].desc.name), name) == 0)
			q->st = &in.m->states[i];
	if (q->st == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("snapshot \"%s\" has no state \"%s\"", src->name, name)));
	if (src->mem != NULL)
		check_memory_read(&q->st->desc, in.source_dbid);
	q->desc = q->st->desc;
	q->desc.backend = snapshot_state_backend(src, q->st, false);
	if (q->st->native &&
		(src->dir == NULL || keyed_backend_by_id(q->desc.backend)->snapshot->read_native == NULL))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("state \"%s\" of snapshot \"%s\" is kept in files its backend alone reads",
						name, src->name),
				 errhint("Read it from a canonical snapshot (format => 'canonical'), or restore it.")));
	resolve_desc(&q->desc, q->m);
	if (!snapshot_trusted(src, q->m))
		check_untrusted_state(src, q->m, q->st, &q->desc);
	if (q->st->native)
	{
		bool		native = true;

		verify_native_files(src->dir, &q->st, &q->desc.backend, &native, 1);
	}
	else
		snapshot_verify_state(src, q->m, q->st);
	snapshot_verify_digest(src, q->m, q->st);
}

typedef struct QueryRead
{
	EntryReader reader;
	const StateDesc *desc;
	int64		now;
	StringInfoData plain;		/* a TTL state's image as it shows */
	SnapshotEntryFn fn;
	void	   *arg;
} QueryRead;

static void
query_entry(void *arg, const char *key, uint32 keylen, const char *value, uint32 vallen)
{
	QueryRead  *r = arg;

	reader_native(&r->reader, &key, &keylen, &value, &vallen);
	if (r->desc->ttl > 0)
	{
		if (!ttl_image_visible(r->desc, value, vallen, r->now, &r->plain))
			return;
		value = r->plain.data;
		vallen = r->plain.len;
	}
	r->fn(r->arg, key, keylen, value, vallen);
}

/*
 * snapshot_query_read hands fn the entries of the state snapshot_query_open
 * found, as native images of the values they show (what expired by now
 * left out).  Returns how many entries the file holds.
 */
int64
snapshot_query_read(SnapshotQuery *q, SnapshotEntryFn fn, void *arg)
{
	QueryRead	r;

	reader_init(&r.reader, q->src, q->m, &q->desc, true);
	r.desc = &q->desc;
	r.now = record_ttl_now();
	initStringInfo(&r.plain);
	r.fn = fn;
	r.arg = arg;
	if (q->st->native)
		return keyed_backend_by_id(q->desc.backend)->snapshot->read_native(q->src->dir, &q->st->desc,
																		 query_entry, &r);
	return snapshot_read_state(q->src, q->m, q->st, query_entry, &r);
}
