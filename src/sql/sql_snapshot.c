/*
 * sql/sql_snapshot.c
 *		SQL functions of snapshots: snapshot, the snapshots view,
 *		wait_snapshot, cancel_snapshot, restore.
 *
 * The cut and the writing are in snapshot/snapshot_driver.c, the history
 * in snapshot/snapshot_control.c, the format in format/, loading in
 * snapshot/restore.c.
 */
#include "postgres.h"

#include <sys/stat.h>

#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "backend/keyed_backend.h"
#include "catalog/registry.h"
#include "common/locks.h"
#include "common/pause.h"
#include "common/settings.h"
#include "snapshot/checkpoint.h"
#include "snapshot/restore.h"
#include "snapshot/snapshot_control.h"
#include "snapshot/snapshot_driver.h"
#include "sql/sql_common.h"

PG_FUNCTION_INFO_V1(state_snapshot);
PG_FUNCTION_INFO_V1(state_snapshots);
PG_FUNCTION_INFO_V1(state_wait_snapshot);
PG_FUNCTION_INFO_V1(state_cancel_snapshot);
PG_FUNCTION_INFO_V1(state_restore);
PG_FUNCTION_INFO_V1(state_restore_merge);
PG_FUNCTION_INFO_V1(state_snapshot_states);
PG_FUNCTION_INFO_V1(state_snapshot_entries);

/* Paths are absolute; file:// URLs are taken as their path. */
static char *
path_arg(text *t)
{
	char	   *path = text_to_cstring(t);

	if (strncmp(path, "file://", 7) == 0)
		path += 7;
	if (!is_absolute_path(path))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snapshot path \"%s\" is not absolute", path)));
	canonicalize_path(path);
	return path;
}

/* Explicit paths need what COPY to or from a file needs. */
static void
check_path_privilege(Oid role, const char *what)
{
	if (!superuser() && !has_privs_of_role(GetUserId(), role))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to %s a snapshot path", what),
				 errhint("Only superusers and members of %s may do so.",
						 role == ROLE_PG_WRITE_SERVER_FILES ? "pg_write_server_files" : "pg_read_server_files")));
}

/*
 * path_in_checkpoint_dir tells whether a path lies in
 * state_backend.checkpoint_dir, where only the server writes: both resolved
 * (symbolic links and "..") to what they name on disk.
 */
static bool
path_in_checkpoint_dir(const char *path)
{
	char	   *dir;
	char	   *target;
	bool		inside = false;

	if (state_backend_checkpoint_dir[0] == '\0')
		return false;
	/* realpath() with NULL allocates what the path needs (malloc). */
	dir = realpath(state_backend_checkpoint_dir, NULL);
	target = realpath(path, NULL);
	if (dir != NULL && target != NULL)
	{
		size_t		len = strlen(dir);

		inside = strncmp(target, dir, len) == 0 &&
			(target[len] == '/' || target[len] == '\0');
	}
	free(dir);
	free(target);
	return inside;
}

static SnapshotFormat
parse_format(const char *format)
{
	if (strcmp(format, "native") == 0)
		return SNAPSHOT_NATIVE;
	if (strcmp(format, "canonical") == 0)
		return SNAPSHOT_CANONICAL;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown snapshot format \"%s\"", format),
			 errhint("Valid formats are native and canonical.")));
	return SNAPSHOT_NATIVE;
}

/*
 * A snapshot kept in shared memory cannot hold a state whose backend's
 * snapshots go to a path (filesystem).
 */
static void
check_memory_snapshot_allowed(void)
{
	StateDesc  *descs = palloc(sizeof(StateDesc) * state_backend_max_states);
	int			n = registry_copy_all(descs, NULL);

	for (int i = 0; i < n; i++)
		if (!keyed_backend_memory_snapshots(descs[i].backend))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("state \"%s\" uses the %s backend, whose snapshots need a path",
							NameStr(descs[i].name), keyed_backend_name(descs[i].backend)),
					 errhint("Set state_backend.checkpoint_dir, or give state.snapshot() a path.")));
}

/* snapshot(path, format): starts a snapshot; returns its id at once. */
Datum
state_snapshot(PG_FUNCTION_ARGS)
{
	char	   *path = NULL;
	SnapshotFormat format;

	state_backend_check_available();
	/* Not beside the start: after it, and after its own checkpoint. */
	registry_wait_ready();
	format = parse_format(PG_ARGISNULL(1) ? "native" : text_to_cstring(PG_GETARG_TEXT_PP(1)));
	if (!PG_ARGISNULL(0))
	{
		struct stat st;

		path = path_arg(PG_GETARG_TEXT_PP(0));
		check_path_privilege(ROLE_PG_WRITE_SERVER_FILES, "write");
		if (stat(path, &st) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_FILE),
					 errmsg("snapshot path \"%s\" already exists", path),
					 errhint("A snapshot goes to a new directory.")));
	}
	else if (state_backend_checkpoint_dir[0] == '\0')
	{
		if (format == SNAPSHOT_CANONICAL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("canonical snapshots cannot be kept in shared memory"),
					 errhint("Give state.snapshot() a path, or set state_backend.checkpoint_dir.")));
		check_memory_snapshot_allowed();
	}
	PG_RETURN_INT64(snapshot_request_cut(path, format));
}

/* The rows of the state.snapshots view. */
Datum
state_snapshots(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SnapshotInfo *infos;
	int			n;

	state_backend_check_loaded();
	InitMaterializedSRF(fcinfo, 0);
	n = snapshot_list(&infos);
	for (int i = 0; i < n; i++)
	{
		SnapshotInfo *s = &infos[i];
		Datum		values[14];
		bool		nulls[14];

		memset(nulls, 0, sizeof(nulls));
		values[0] = Int64GetDatum(s->id);
		values[1] = CStringGetTextDatum(s->path);
		values[2] = CStringGetTextDatum(s->format == SNAPSHOT_NATIVE ? "native" : "canonical");
		values[3] = CStringGetTextDatum(snapshot_status_name(s->status));
		values[4] = TimestampTzGetDatum(s->started_at);
		values[5] = TimestampTzGetDatum(s->finished_at);
		nulls[5] = s->status == SNAPSHOT_RUNNING;
		values[6] = Int64GetDatum(s->states);
		values[7] = Int64GetDatum(s->entries);
		values[8] = Int64GetDatum(s->bytes);
		values[9] = BoolGetDatum(s->incremental);
		values[10] = CStringGetTextDatum(s->error);
		nulls[10] = s->error[0] == '\0';
		values[11] = CStringGetTextDatum(snapshot_phase_name(s->phase));
		nulls[11] = s->status != SNAPSHOT_RUNNING;
		values[12] = Int32GetDatum(s->key_groups_done);
		values[13] = Int32GetDatum(s->key_groups_total);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

static SnapshotInfo
snapshot_info_or_error(int64 id)
{
	SnapshotInfo info;

	if (!snapshot_get(id, &info))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("snapshot " INT64_FORMAT " does not exist", id),
				 errdetail("state.snapshots lists the snapshots this server knows.")));
	return info;
}

/*
 * deadline_after returns the time a wait of iv ends, from now: now for a
 * negative interval, and 0 (no deadline) for one too long to reach.  The
 * sum is taken in floating point, which cannot overflow.
 */
static TimestampTz
deadline_after(const Interval *iv)
{
	TimestampTz now = GetCurrentTimestamp();
	double		us = (double) iv->time + (double) iv->day * USECS_PER_DAY +
		(double) iv->month * DAYS_PER_MONTH * USECS_PER_DAY;

	if (us <= 0)
		return now;
	if (us >= (double) (PG_INT64_MAX - now))
		return 0;
	return now + (int64) us;
}

/*
 * wait_snapshot(id, timeout): waits until the snapshot is no longer running
 * (or the timeout passes) and returns its status; raises the snapshot's
 * error if it failed.
 */
Datum
state_wait_snapshot(PG_FUNCTION_ARGS)
{
	int64		id;
	TimestampTz deadline = 0;
	SnapshotInfo info;

	state_backend_check_loaded();
	state_call_require_arg(fcinfo, 0, "snapshot id");
	id = PG_GETARG_INT64(0);
	if (!PG_ARGISNULL(1))
		deadline = deadline_after(PG_GETARG_INTERVAL_P(1));
	for (;;)
	{
		info = snapshot_info_or_error(id);
		if (info.status != SNAPSHOT_RUNNING)
			break;
		if (deadline != 0 && GetCurrentTimestamp() >= deadline)
			break;
		state_pause(10L);
	}
	if (info.status == SNAPSHOT_FAILED)
		ereport(ERROR,
				(errcode(info.sqlerrcode ? info.sqlerrcode : ERRCODE_INTERNAL_ERROR),
				 errmsg("snapshot " INT64_FORMAT " failed: %s", id, info.error)));
	PG_RETURN_TEXT_P(cstring_to_text(snapshot_status_name(info.status)));
}

/* cancel_snapshot(id): true if it was running and has been asked to stop. */
Datum
state_cancel_snapshot(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);

	state_backend_check_available();
	(void) snapshot_info_or_error(id);
	PG_RETURN_BOOL(snapshot_cancel(id));
}

/* source_of sets up the source a restore reads from a path argument. */
static void
source_of(text *arg_text, SnapshotSource *src)
{
	char	   *arg = text_to_cstring(arg_text);

	memset(src, 0, sizeof(SnapshotSource));
	if (strncmp(arg, "memory:", 7) == 0)
	{
		char	   *end;
		int64		id = strtoll(arg + 7, &end, 10);

		if (*end != '\0' || id <= 0 ||
			(src->mem = snapshot_memory_image(id, &src->memlen)) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("there is no snapshot \"%s\" in shared memory", arg)));
		src->name = arg;
		src->trusted = true;
	}
	else
	{
		char	   *path = path_arg(arg_text);

		check_path_privilege(ROLE_PG_READ_SERVER_FILES, "read");
		src->dir = path;
		if (!snapshot_dir_is_complete(path))
		{
			int64		id;
			char	   *newest = checkpoint_newest(path, &id);

			if (newest != NULL)
				src->dir = newest;
		}
		src->name = src->dir;
		src->trusted = path_in_checkpoint_dir(src->dir);
	}
}

/* source_arg: source_of for argument argno, which must not be NULL. */
static void
source_arg(FunctionCallInfo fcinfo, int argno, SnapshotSource *src)
{
	state_call_require_arg(fcinfo, argno, "snapshot path");
	source_of(PG_GETARG_TEXT_PP(argno), src);
}

/*
 * restore_sources restores from the sources with the arguments backend,
 * from_database, parallelism and part (1 to 4) of either form of restore.
 */
static Datum
restore_sources(FunctionCallInfo fcinfo, SnapshotSource *srcs, int nsrcs)
{
	int			backend = -1;
	char	   *from_db = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	RestoreSplit split = {0, 0};

	/* Not beside the start, whose states a restore would replace. */
	registry_wait_ready();
	if (!PG_ARGISNULL(1))
		backend = keyed_backend_parse(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	if (PG_NARGS() > 4 && (!PG_ARGISNULL(3) || !PG_ARGISNULL(4)))
	{
		state_check_parts(PG_ARGISNULL(3), PG_ARGISNULL(3) ? 0 : PG_GETARG_INT32(3),
						  PG_ARGISNULL(4), PG_ARGISNULL(4) ? 0 : PG_GETARG_INT32(4));
		split.parallelism = PG_GETARG_INT32(3);
		split.part = PG_GETARG_INT32(4);
	}
	PG_RETURN_INT64(restore_into_database(srcs, nsrcs, from_db, backend, &split));
}

/*
 * restore(path, backend, from_database, parallelism, part): replace the
 * current database's states with a snapshot's, or with one part of it.
 */
Datum
state_restore(PG_FUNCTION_ARGS)
{
	SnapshotSource src;

	state_backend_check_writable("state.restore()");
	source_arg(fcinfo, 0, &src);
	return restore_sources(fcinfo, &src, 1);
}

/*
 * restore(paths[], backend, from_database, parallelism, part): the same
 * from the snapshots of several parts, merged (snapshot/rescale.c).
 */
Datum
state_restore_merge(PG_FUNCTION_ARGS)
{
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	SnapshotSource *srcs;

	state_backend_check_writable("state.restore()");
	state_call_require_arg(fcinfo, 0, "snapshot paths");
	arr = PG_GETARG_ARRAYTYPE_P(0);
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snapshot paths must name at least one snapshot")));
	srcs = palloc(sizeof(SnapshotSource) * n);
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("snapshot path must not be null")));
		source_of(DatumGetTextPP(elems[i]), &srcs[i]);
	}
	return restore_sources(fcinfo, srcs, n);
}

/* A type a snapshot names, as text: "type", or "schema.type" outside pg_catalog. */
static Datum
snapshot_type_text(const StateType *t, bool *isnull)
{
	*isnull = !OidIsValid(t->oid);
	if (*isnull)
		return (Datum) 0;
	if (strcmp(NameStr(t->nspname), "pg_catalog") == 0)
		return CStringGetTextDatum(NameStr(t->typname));
	return CStringGetTextDatum(quote_qualified_identifier(NameStr(t->nspname),
														  NameStr(t->typname)));
}

/*
 * snapshot_states(path): the states a snapshot holds, every database's, as
 * its MANIFEST (checksummed) describes them; nothing is restored.
 */
Datum
state_snapshot_states(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SnapshotSource src;
	SnapshotManifest *m;

	state_backend_check_available();
	source_arg(fcinfo, 0, &src);
	m = snapshot_read_manifest(&src);
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < m->nstates; i++)
	{
		const SnapshotState *st = &m->states[i];
		const StateDesc *d = &st->desc;
		Datum		values[9];
		bool		nulls[9] = {false};

		values[0] = CStringGetTextDatum(st->dbname);
		values[1] = CStringGetTextDatum(NameStr(d->name));
		values[2] = CStringGetTextDatum(state_kind_name(d->kind));
		values[3] = CStringGetTextDatum(st->backend);
		values[4] = snapshot_type_text(&d->types[STATE_TYPE_KEY], &nulls[4]);
		values[5] = snapshot_type_text(&d->types[STATE_TYPE_VALUE], &nulls[5]);
		values[6] = snapshot_type_text(&d->types[STATE_TYPE_MAP_KEY], &nulls[6]);
		values[7] = Int64GetDatum(st->entries);
		values[8] = Int64GetDatum(st->size);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * snapshot_entries(path, name, key_default, value_default, from_database):
 * every key of one state of a snapshot with its value, as entries() gives
 * them, read from the snapshot's file after the checks a restore makes;
 * nothing is restored.
 */
Datum
state_snapshot_entries(PG_FUNCTION_ARGS)
{
	SnapshotSource src;
	SnapshotQuery q;
	RowsContext ctx;
	char	   *from_db;

	state_backend_check_available();
	state_call_require_arg(fcinfo, 1, "state name");
	from_db = PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4));
	source_arg(fcinfo, 0, &src);
	snapshot_query_open(&q, &src, from_db, text_to_cstring(PG_GETARG_TEXT_PP(1)));
	rows_begin(&ctx, state_call_detached(&q.desc), fcinfo);
	(void) snapshot_query_read(&q, rows_put, &ctx);
	MemoryContextDelete(ctx.row_cxt);
	return (Datum) 0;
}
