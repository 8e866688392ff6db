/*
 * snapshot/restore_check.c
 *		What a snapshot's states must be to be read on this server, by a
 *		restore (restore.c) or by snapshot_entries (snapshot_query.c): the
 *		section of a database picked, each state's backend registered here,
 *		its types, roles and aggregate found, an untrusted snapshot's
 *		images checkable, a backend's native files verified; and the
 *		reader that turns entries into native images.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
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
#include "common/timer_handler.h"
#include "format/records.h"
#include "snapshot/canonical.h"
#include "snapshot/restore_internal.h"
#include "state_ops.h"

void
entry_reader_init(EntryReader *r, const SnapshotSource *src, const SnapshotManifest *m,
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

/* entry_reader_native turns an entry into native images, in place. */
void
entry_reader_native(EntryReader *r, const char **key, uint32 *keylen, const char **value,
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
											  r->desc->types[STATE_TYPE_KEY].oid))));
	}
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
				 d->agg_signature[0] == '\0');
	resolve_type(d, &d->types[STATE_TYPE_MAP_KEY], native, "a map key", true);
	resolve_type(d, &d->agg_type, native, "an aggregate's transition state", true);
	if (state_kind_layout(d->kind) == STATE_KIND_LIST)
		state_ops_check_list_type(d->types[STATE_TYPE_VALUE].oid);
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
void
resolve_desc(StateDesc *d, const SnapshotManifest *m)
{
	resolve_types(d, m->format == SNAPSHOT_NATIVE);
	resolve_roles(d, m->system_identifier == GetSystemIdentifier());
	if (OidIsValid(d->aggregate) || d->agg_signature[0] != '\0')
		aggregate_resolve(d);
	if (d->timer_signature[0] != '\0')
		timer_handler_resolve(d);
	if (d->emit_table_name[0] != '\0')
		emit_table_resolve(d);
	if (d->late_signature[0] != '\0')
		late_fn_resolve(d);
}

/*
 * check_native_state checks that a state kept in its backend's own files
 * is restored into that backend.
 */
void
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
void
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
int
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
const char *
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
void
check_untrusted_state(const SnapshotSource *src, const SnapshotManifest *m,
					  const SnapshotState *st, const StateDesc *d)
{
	if (st->native)
		untrusted_refused(src, d, psprintf("%s native files", st->backend));
	if (d->kind == STATE_KIND_WINDOW)
		untrusted_refused(src, d, pstrdup("windows, whose contents are images of their types"));
	if (d->kind == STATE_KIND_AGGREGATING && aggregate_transtype(d->aggregate) == INTERNALOID)
		untrusted_refused(src, d, psprintf("serialized transition states of aggregate %s",
										   format_procedure(d->aggregate)));
	if (m->format == SNAPSHOT_NATIVE)
	{
		const Oid	types[3] = {d->types[STATE_TYPE_KEY].oid, state_desc_image_type(d), d->types[STATE_TYPE_MAP_KEY].oid};

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
 * pick_section reads a snapshot's MANIFEST into an input and picks its
 * section of database from_database (default: the one named like the
 * current database, or the only one).
 */
void
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
bool
manifest_has_ranges(const SnapshotManifest *m)
{
	for (int i = 0; i < m->nstates; i++)
		if (m->states[i].desc.range_parts > 0)
			return true;
	return false;
}

/*
 * Whether a snapshot holds states in a backend's own files,
 * whose keys carry the key group they were written in.
 */
bool
manifest_has_native(const SnapshotManifest *m)
{
	for (int i = 0; i < m->nstates; i++)
		if (m->states[i].native)
			return true;
	return false;
}
