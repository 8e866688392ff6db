/*
 * restore.c
 *		Restore: replace a database's states with a snapshot's section for it.
 *
 * Everything is checked before anything changes: the MANIFEST, every
 * state's file (sizes, checksums, structure), and that every type named
 * exists with the same storage.  The states are then loaded as hidden
 * states, invisible to every session, and published at one instant in
 * place of the database's current ones (registry_publish).  If loading
 * fails (memory limit), the hidden states are discarded and the current
 * ones were never touched.
 *
 * state.restore() runs this in the calling backend, resolving types by
 * name.  At server start the state worker runs it for every database of the
 * newest checkpoint, trusting the OIDs it recorded (same cluster; the
 * worker has no database to look names up in).
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "canonical.h"
#include "checkpoint.h"
#include "channel.h"
#include "codec.h"
#include "key_group.h"
#include "keyed_backend.h"
#include "registry.h"
#include "restore.h"
#include "rocksdb_backend.h"
#include "snapshot_control.h"

typedef struct LoadContext
{
	StateTarget target;
	const KeyedStateBackend *backend;
	int64		n;
	bool		canonical;
	StateCodecs codecs;
	StringInfoData key;
	StringInfoData value;
	MemoryContext tmp;
} LoadContext;

static void
load_entry(void *arg, const char *key, uint32 keylen, const char *value, uint32 vallen)
{
	LoadContext *c = arg;
	StateKey	k;

	if (c->canonical)
	{
		MemoryContext old = MemoryContextSwitchTo(c->tmp);

		resetStringInfo(&c->key);
		resetStringInfo(&c->value);
		canonical_to_native(&c->codecs, true, key, keylen, &c->key);
		canonical_to_native(&c->codecs, false, value, vallen, &c->value);
		MemoryContextSwitchTo(old);
		MemoryContextReset(c->tmp);
		key = c->key.data;
		keylen = c->key.len;
		value = c->value.data;
		vallen = c->value.len;
	}
	k.data = key;
	k.len = keylen;
	k.hash = key_image_hash(key, keylen);
	k.key_group = key_group_for_hash(k.hash, state_backend_max_parallelism);
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
resolve_types(StateDesc *d, bool native)
{
	for (int i = 0; i < 3; i++)
	{
		StateType  *t = &d->types[i];
		StateType	now;
		Oid			oid;

		if (!OidIsValid(t->oid))
			continue;
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
		if (now.typlen != t->typlen || now.typbyval != t->typbyval)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("type %s.%s of state \"%s\" is stored differently than when the snapshot was taken",
							NameStr(t->nspname), NameStr(t->typname), NameStr(d->name))));
		*t = now;
	}
	d->key_type = d->types[STATE_TYPE_KEY].oid;
	d->value_type = d->types[STATE_TYPE_VALUE].oid;
	d->map_key_type = d->types[STATE_TYPE_MAP_KEY].oid;
}

/* Map the owner and grants to roles of this cluster. */
static void
resolve_roles(StateDesc *d)
{
	Oid			owner = get_role_oid(NameStr(d->owner_name), true);
	int			n = 0;

	if (!OidIsValid(owner))
	{
		owner = GetUserId();
		namestrcpy(&d->owner_name, GetUserNameFromId(owner, false));
	}
	d->owner = owner;
	for (int g = 0; g < d->ngrants; g++)
		if (SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(d->grants[g].role)))
			d->grants[n++] = d->grants[g];
	d->ngrants = n;
}

/*
 * restore_rocksdb_files copies the rocksdb states kept as RocksDB files in
 * a native snapshot into their hidden states (by the state worker, which
 * owns RocksDB).  Returns the keys copied.
 */
static int64
restore_rocksdb_files(const char *dir, SnapshotState **states, const StateDesc *descs,
					  const int *slots, const bool *native, int n)
{
	int			count = 0;
	uint32	   *from = palloc(sizeof(uint32) * Max(n, 1));
	uint32	   *to = palloc(sizeof(uint32) * Max(n, 1));
	int		   *to_slots = palloc(sizeof(int) * Max(n, 1));
	int		   *kinds = palloc(sizeof(int) * Max(n, 1));

	for (int i = 0; i < n; i++)
	{
		if (!native[i])
			continue;
		from[count] = states[i]->desc.id;
		to[count] = descs[i].id;
		to_slots[count] = slots[i];
		kinds[count] = (int) descs[i].kind;
		count++;
	}
	return rocksdb_client_restore_files(dir, from, to, to_slots, kinds, count);
}

/*
 * restore_section replaces the states of database target_dbid with the
 * states of section source_dbid of a snapshot.  Returns the entries loaded.
 */
static int64
restore_section(const SnapshotSource *src, const SnapshotManifest *m,
				Oid source_dbid, Oid target_dbid, int backend_override,
				bool trust_oids, bool keep_rocksdb)
{
	int			n = 0;
	SnapshotState **states = palloc(sizeof(SnapshotState *) * Max(m->nstates, 1));
	StateDesc  *descs = palloc(sizeof(StateDesc) * Max(m->nstates, 1));
	int		   *slots = palloc(sizeof(int) * Max(m->nstates, 1));
	uint32	   *ids = palloc(sizeof(uint32) * Max(m->nstates, 1));
	bool	   *native_rocksdb = palloc0(sizeof(bool) * Max(m->nstates, 1));
	const char **lists = palloc(sizeof(char *) * Max(m->nstates, 1));
	int			nlists = 0;
	volatile int created = 0;
	int64		total = 0;

	if (m->format != SNAPSHOT_NATIVE && trust_oids)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a canonical checkpoint cannot be loaded at server start"),
				 errhint("Restore it with state.restore().")));

	/* Check everything first. */
	for (int i = 0; i < m->nstates; i++)
	{
		SnapshotState *st = &m->states[i];
		StateDesc  *d = &descs[n];

		if (st->desc.dbid != source_dbid)
			continue;
		*d = st->desc;

		/*
		 * At server start rocksdb states keep their working data: from the
		 * checkpoint only when the instance is gone (then all of them).  A
		 * state named like one that kept its data is not loaded either.
		 */
		if (keep_rocksdb && d->backend == STATE_BACKEND_ROCKSDB)
			continue;
		if (trust_oids && registry_exists(target_dbid, NameStr(d->name)))
			continue;
		if (!trust_oids)
		{
			resolve_types(d, m->format == SNAPSHOT_NATIVE);
			resolve_roles(d);
		}
		if (backend_override >= 0)
			d->backend = (StateBackendId) backend_override;
		d->dbid = target_dbid;
		native_rocksdb[n] = snapshot_state_is_sst_list(st);
		if (native_rocksdb[n])
		{
			if (d->backend != STATE_BACKEND_ROCKSDB)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("state \"%s\" is kept as RocksDB files in this native snapshot",
								NameStr(d->name)),
						 errdetail("A native snapshot restores rocksdb states into the rocksdb backend only."),
						 errhint("Take a canonical snapshot (format => 'canonical') to move states across backends.")));
			lists[nlists++] = st->file;
		}
		else
			snapshot_verify_state(src, m, st);
		states[n++] = st;
	}
	if (nlists > 0)
		rocksdb_snapshot_verify(src->dir, lists, nlists);

	/* Load into hidden states; publish them all at once. */
	PG_TRY();
	{
		for (int i = 0; i < n; i++)
		{
			LoadContext c;

			slots[i] = registry_create(&descs[i], true);
			ids[i] = descs[i].id;
			created = i + 1;
			if (native_rocksdb[i])
				continue;		/* below, all at once */
			c.target.desc = &descs[i];
			c.target.slot = slots[i];
			c.backend = keyed_backend_for(descs[i].backend);
			c.n = 0;
			c.canonical = m->format == SNAPSHOT_CANONICAL;
			if (c.canonical)
			{
				canonical_codecs_init(&c.codecs, &descs[i], CurrentMemoryContext);
				initStringInfo(&c.key);
				initStringInfo(&c.value);
				c.tmp = AllocSetContextCreate(CurrentMemoryContext, "restore entry",
											  ALLOCSET_DEFAULT_SIZES);
			}
			snapshot_read_state(src, m, states[i], load_entry, &c);
			total += c.n;
			CHECK_FOR_INTERRUPTS();
		}
		if (nlists > 0)
			total += restore_rocksdb_files(src->dir, states, descs, slots, native_rocksdb, n);
		/* Writes to rocksdb states were posted: they must all be in. */
		if (!trust_oids)
			channel_sync();
	}
	PG_CATCH();
	{
		for (int i = 0; i < created; i++)
			registry_discard(&descs[i], slots[i]);
		PG_RE_THROW();
	}
	PG_END_TRY();

	registry_publish(target_dbid, ids, n, trust_oids);
	for (int i = 0; i < n && !trust_oids; i++)
		if (descs[i].backend == STATE_BACKEND_ROCKSDB)
		{
			rocksdb_client_sync_registry();
			break;
		}
	return total;
}

/*
 * restore_into_database restores the current database from a snapshot:
 * the section of database from_database (default: the one named like the
 * current database, or the only one).  backend_override < 0 keeps each
 * state's backend.
 */
int64
restore_into_database(const SnapshotSource *src, const char *from_database,
					  int backend_override)
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
	if (!found && !(from_database == NULL && m->ndbs == 0))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("snapshot \"%s\" has no states of database \"%s\"", src->name, want),
				 m->ndbs > 1 ? errhint("Name the database to restore from with from_database.") : 0));
	return restore_section(src, m, source, MyDatabaseId, backend_override, false, false);
}

/*
 * restore_on_start loads every database's heap states from the newest
 * complete checkpoint, in the state worker at server start, and its rocksdb
 * states too when RocksDB had no data (rocksdb_has_data false: the
 * instance was lost).  A section that cannot be loaded is reported and
 * skipped: the server must come up.
 */
void
restore_on_start(bool rocksdb_has_data)
{
	char	   *dir;
	int64		id;
	SnapshotSource src;
	SnapshotManifest *m;
	MemoryContext cxt = CurrentMemoryContext;

	if (state_backend_checkpoint_dir[0] == '\0')
		return;
	snapshot_bump_next_id(checkpoint_max_id(state_backend_checkpoint_dir));
	if (!state_backend_restore_on_start)
		return;
	dir = checkpoint_newest(state_backend_checkpoint_dir, &id);
	if (dir == NULL)
		return;

	memset(&src, 0, sizeof(src));
	src.dir = dir;
	src.name = dir;
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
		return;
	}
	PG_END_TRY();

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
			int64		n = restore_section(&src, m, dbid, dbid, -1, true,
											   rocksdb_has_data);

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
}
