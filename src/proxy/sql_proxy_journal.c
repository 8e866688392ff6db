/*
 * proxy/sql_proxy_journal.c
 *		The journal of a proxy's rescale: a file of the proxy server's data
 *		directory that says what state.rescale_proxy is changing, so that a
 *		rescale a failure or a dead session left half done is put right.
 *
 * A rescale restores the new parts on their servers (each restore commits
 * there at once) before the proxy's own transaction switches state.proxies
 * to them, so neither side's transaction can say what was done.  Before its
 * first restore, rescale_proxy writes the journal (the old parts, their
 * version, the new parts, the snapshots) durably, outside its transaction;
 * once every new part is restored and the switch is made, it marks the
 * journal switched, again durably: that is the rescale's point of no
 * return.  The journal goes when the outcome is settled: at once when the
 * old parts are back, or when the transaction that switched commits.
 * While a journal is there, proxy calls of its cluster refuse
 * (proxy_journal_check) and state.repair_proxy (run by alter_proxy,
 * rescale_proxy and drop_proxy first) puts the old parts back or finishes
 * the switch.  The SQL half is in the extension script; the proxy calls
 * are in sql_proxy.c.
 *
 * A transaction that switched a proxy's parts by a journal (a rescale, or
 * a repair that finished one) needs that journal again if it aborts, until
 * its end, whatever else it does: a later rescale of the cluster in it
 * writes its own journal over the file (of a version the abort takes
 * back, which repair_proxy recognises), and what asks for that journal to
 * go at once waits for the commit instead.
 *
 * The file, pg_state_backend/proxy_rescale/<database oid>_<cluster>, is a
 * header line and the journal's text (jsonb, made and read by the SQL
 * half), written to a temporary file and renamed into place, fsynced.
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "access/xact.h"
#include "common/file_perm.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "proxy/sql_proxy.h"

PG_FUNCTION_INFO_V1(state_proxy_journal_read);
PG_FUNCTION_INFO_V1(state_proxy_journal_write);
PG_FUNCTION_INFO_V1(state_proxy_journal_remove);

#define JOURNAL_DIR			"pg_state_backend/proxy_rescale"
#define JOURNAL_HEADER		"state_backend proxy rescale journal 1\n"
#define JOURNAL_MAX_BYTES	(1024 * 1024)

/*
 * Journals to remove when the transaction commits: each with the
 * subtransaction that asked for it, so that a rollback to a savepoint (or
 * an exception block's end) that undoes the switch keeps the journal.
 */
typedef struct PendingRemoval
{
	char		path[MAXPGPATH];
	SubTransactionId subid;
} PendingRemoval;

static List *pending_removals = NIL;	/* of PendingRemoval, in TopMemoryContext */

/*
 * Journals that this transaction's abort needs (their paths, in
 * TopMemoryContext): each asked to go at commit, after a switch of the
 * proxy that an abort undoes.  Kept to the end of the top transaction
 * whatever its subtransactions do: a journal kept too long costs a repair,
 * one removed too soon loses the keys.
 */
static List *needed_journals = NIL;
static bool callbacks_registered = false;

/*
 * journal_path gives the journal's path of a cluster of this database into
 * buf, after checking that the name is a cluster's (a lower-case
 * identifier, as state._proxy_options checks it): the name becomes part of
 * a file name.
 */
static void
journal_path(const char *cluster, char *buf)
{
	size_t		len = strlen(cluster);

	if (len == 0 || len > 63 || !(cluster[0] == '_' || (cluster[0] >= 'a' && cluster[0] <= 'z')))
		goto bad;
	for (size_t i = 1; i < len; i++)
		if (!(cluster[i] == '_' || (cluster[i] >= 'a' && cluster[i] <= 'z') ||
			  (cluster[i] >= '0' && cluster[i] <= '9')))
			goto bad;
	snprintf(buf, MAXPGPATH, "%s/%u_%s", JOURNAL_DIR, MyDatabaseId, cluster);
	return;

bad:
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid cluster name \"%s\"", cluster),
			 errdetail("A cluster name is a lower-case identifier: letters, digits and underscores.")));
}

/*
 * proxy_journal_check refuses a proxy call of a cluster whose rescale was
 * interrupted: its servers may hold the key groups of the parts it was
 * moving to, which state.proxies does not name.  Called with the cluster's
 * gate held (share), so a rescale running now is over, settled or not.
 */
void
proxy_journal_check(const char *cluster)
{
	char		path[MAXPGPATH];
	struct stat st;

	journal_path(cluster, path);
	if (stat(path, &st) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("a rescale of cluster \"%s\" was interrupted", cluster),
				 errdetail("Its servers may hold the key groups of other parts than the proxy names, so its calls are refused until the rescale is undone or finished."),
				 errhint("Call state.repair_proxy('%s') as a superuser (alter_proxy, rescale_proxy and drop_proxy of the cluster do it first).",
						 cluster)));
	if (errno != ENOENT)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", path)));
}

/*
 * _proxy_journal_read(cluster): the journal's text of the cluster, or NULL
 * when it has none.
 */
Datum
state_proxy_journal_read(PG_FUNCTION_ARGS)
{
	char		path[MAXPGPATH];
	int			fd;
	struct stat st;
	char	   *buf;
	size_t		hlen = strlen(JOURNAL_HEADER);
	ssize_t		got;

	journal_path(text_to_cstring(PG_GETARG_TEXT_PP(0)), path);
	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			PG_RETURN_NULL();
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	}
	if (fstat(fd, &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", path)));
	if (st.st_size < (off_t) hlen || st.st_size > JOURNAL_MAX_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("file \"%s\" is not a rescale journal: it has %lld bytes",
						path, (long long) st.st_size)));
	buf = palloc(st.st_size + 1);
	got = read(fd, buf, st.st_size);
	if (got != st.st_size)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", path)));
	CloseTransientFile(fd);
	buf[got] = '\0';
	if (memcmp(buf, JOURNAL_HEADER, hlen) != 0 || strlen(buf) != (size_t) got ||
		!pg_verifymbstr(buf + hlen, got - hlen, true))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("file \"%s\" is not a rescale journal", path)));
	PG_RETURN_TEXT_P(cstring_to_text(buf + hlen));
}

/*
 * journal_needed tells whether this transaction's abort needs the journal
 * at path (see needed_journals).
 */
static bool
journal_needed(const char *path)
{
	ListCell   *lc;

	foreach(lc, needed_journals)
		if (strcmp((char *) lfirst(lc), path) == 0)
			return true;
	return false;
}

/*
 * journal_forget_removals forgets the removals at commit asked for the
 * journal at path: what is written there now is a change of its own,
 * whose outcome is not settled (its writer asks again when it is).
 */
static void
journal_forget_removals(const char *path)
{
	ListCell   *lc;

	foreach(lc, pending_removals)
	{
		PendingRemoval *r = lfirst(lc);

		if (strcmp(r->path, path) != 0)
			continue;
		pending_removals = foreach_delete_current(pending_removals, lc);
		pfree(r);
	}
}

/*
 * _proxy_journal_write(cluster, journal): the cluster's journal is now
 * journal, durably (a temporary file fsynced, renamed into place, the
 * directory fsynced), whatever this transaction does next.  A removal at
 * commit asked for the journal it replaces is forgotten.
 */
Datum
state_proxy_journal_write(PG_FUNCTION_ARGS)
{
	char	   *cluster = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *journal = text_to_cstring(PG_GETARG_TEXT_PP(1));
	char		path[MAXPGPATH];
	char		tmp[MAXPGPATH];
	StringInfoData data;
	int			fd;

	journal_path(cluster, path);
	initStringInfo(&data);
	appendStringInfoString(&data, JOURNAL_HEADER);
	appendStringInfoString(&data, journal);
	if (data.len > JOURNAL_MAX_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the rescale journal of cluster \"%s\" would have %d bytes, more than %d",
						cluster, data.len, JOURNAL_MAX_BYTES)));
	if (MakePGDirectory("pg_state_backend") != 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", "pg_state_backend")));
	if (MakePGDirectory(JOURNAL_DIR) != 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", JOURNAL_DIR)));

	/* Our own temporary name: one a crash left is ours to remove. */
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (unlink(tmp) != 0 && errno != ENOENT)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m", tmp)));
	fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", tmp)));
	errno = 0;
	if (write(fd, data.data, data.len) != data.len)
	{
		int			save = errno ? errno : ENOSPC;

		CloseTransientFile(fd);
		unlink(tmp);
		errno = save;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", tmp)));
	}
	if (pg_fsync(fd) != 0)
	{
		int			save = errno;

		CloseTransientFile(fd);
		unlink(tmp);
		errno = save;
		ereport(data_sync_elevel(ERROR),
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", tmp)));
	}
	if (CloseTransientFile(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", tmp)));
	(void) durable_rename(tmp, path, ERROR);
	journal_forget_removals(path);
	PG_RETURN_VOID();
}

/*
 * journal_unlink removes a journal (none is fine) and fsyncs its directory,
 * reporting a failure at elevel.
 */
static void
journal_unlink(const char *path, int elevel)
{
	if (unlink(path) != 0)
	{
		if (errno != ENOENT)
			ereport(elevel,
					(errcode_for_file_access(),
					 errmsg("could not remove file \"%s\": %m", path)));
		return;
	}
	(void) fsync_fname_ext(JOURNAL_DIR, true, false, elevel);
}

/*
 * The removals asked for by a subtransaction that ends: kept by its parent
 * when it commits, forgotten when it aborts.
 */
static void
journal_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	if (event != SUBXACT_EVENT_COMMIT_SUB && event != SUBXACT_EVENT_ABORT_SUB)
		return;
	foreach(lc, pending_removals)
	{
		PendingRemoval *r = lfirst(lc);

		if (r->subid != mySubid)
			continue;
		if (event == SUBXACT_EVENT_COMMIT_SUB)
			r->subid = parentSubid;
		else
		{
			pending_removals = foreach_delete_current(pending_removals, lc);
			pfree(r);
		}
	}
}

/*
 * At commit the journals asked for go (after the commit record: a failure
 * is a WARNING, and the journal left says the switch was made, which
 * state.repair_proxy sees committed).  At abort they stay.  A transaction
 * that switched a proxy's parts cannot be prepared: its journal would wait
 * for an outcome no session decides.  Either way, no journal is needed by
 * this transaction any more.
 */
static void
journal_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (pending_removals != NIL || needed_journals != NIL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that changed the parts of a proxy")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			foreach(lc, pending_removals)
			{
				PendingRemoval *r = lfirst(lc);

				journal_unlink(r->path, WARNING);
			}
			/* FALLTHROUGH */
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			list_free_deep(pending_removals);
			pending_removals = NIL;
			list_free_deep(needed_journals);
			needed_journals = NIL;
			break;
		default:
			break;
	}
}

/*
 * _proxy_journal_remove(cluster, at_commit): the cluster's journal goes,
 * now (its outcome is settled on the servers: the old parts are back), or
 * with at_commit when this transaction commits, if the subtransaction that
 * asks is committed with it (the switch it made stands).  A journal this
 * transaction's abort needs (it switched the proxy by it) goes at commit
 * even when asked to go now: the outcome is settled only for the parts
 * this transaction gave the proxy.
 */
Datum
state_proxy_journal_remove(PG_FUNCTION_ARGS)
{
	char		path[MAXPGPATH];
	bool		at_commit = PG_GETARG_BOOL(1);
	MemoryContext old;
	PendingRemoval *r;

	journal_path(text_to_cstring(PG_GETARG_TEXT_PP(0)), path);
	if (!at_commit && !journal_needed(path))
	{
		journal_unlink(path, ERROR);
		PG_RETURN_VOID();
	}
	if (!callbacks_registered)
	{
		RegisterXactCallback(journal_xact_callback, NULL);
		RegisterSubXactCallback(journal_subxact_callback, NULL);
		callbacks_registered = true;
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	r = palloc(sizeof(PendingRemoval));
	strlcpy(r->path, path, MAXPGPATH);
	r->subid = GetCurrentSubTransactionId();
	pending_removals = lappend(pending_removals, r);
	if (at_commit && !journal_needed(path))
		needed_journals = lappend(needed_journals, pstrdup(path));
	MemoryContextSwitchTo(old);
	PG_RETURN_VOID();
}
