/*
 * snapshot/snapshot_query.c
 *		Reading one state of a snapshot with SQL (state.snapshot_entries):
 *		checked as a restore checks it (restore_check.c), read with the
 *		privileges the state itself asks for when the snapshot is kept in
 *		shared memory.
 */
#include "postgres.h"

#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/syscache.h"

#include "backend/keyed_backend.h"
#include "catalog/registry.h"
#include "format/records.h"
#include "snapshot/restore.h"
#include "snapshot/restore_internal.h"
#include "ttl/ttl_state.h"

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
 * server.  A state its backend keeps in native files of its own (in a
 * native snapshot) is read by that backend.
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

	entry_reader_native(&r->reader, &key, &keylen, &value, &vallen);
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

	entry_reader_init(&r.reader, q->src, q->m, &q->desc, true);
	r.desc = &q->desc;
	r.now = record_ttl_now();
	initStringInfo(&r.plain);
	r.fn = fn;
	r.arg = arg;
	if (q->st->native)
	{
		StateInfo	info;

		state_info_of(&q->st->desc, &info);
		return keyed_backend_by_id(q->desc.backend)->snapshot->read_native(q->src->dir, &info,
																		 query_entry, &r);
	}
	return snapshot_read_state(q->src, q->m, q->st, query_entry, &r);
}
