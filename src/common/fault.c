/*
 * common/fault.c
 *		Reads state_backend.fault_points and acts when an armed point is
 *		reached.  The points themselves are FAULT_POINT("...") in the code
 *		(common/fault.h).
 *
 * The setting is a comma-separated list of name:action[:n].  Actions:
 *	error	raise an ERROR (a PANIC inside a critical section)
 *	exit	the process exits as a terminated one does (FATAL)
 *	crash	the process kills itself with SIGKILL, as kill -9 would, so the
 *			postmaster restarts the cluster
 *	sleep	sleep n milliseconds (1000 without n)
 * For error, exit and crash, n makes the point act at its n-th arrival in
 * the process (counted since the setting last changed) instead of at every
 * arrival.  Every action is logged first, so a test can tell which points
 * its load reached.
 */
#include "postgres.h"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include "miscadmin.h"
#include "utils/timestamp.h"

#include "common/fault.h"

#define FAULT_NAME_LEN	64
#define FAULT_MAX		32

typedef enum FaultAction
{
	FAULT_ERROR,
	FAULT_EXIT,
	FAULT_CRASH,
	FAULT_SLEEP
} FaultAction;

typedef struct FaultPoint
{
	char		name[FAULT_NAME_LEN];
	FaultAction action;
	int			n;				/* sleep: ms; others: the arrival to act at, 0 every */
	int			arrivals;
} FaultPoint;

typedef struct FaultList
{
	int			count;
	FaultPoint	points[FAULT_MAX];
} FaultList;

bool		state_backend_faults_armed = false;
static FaultList *armed = NULL;

static const char *const action_names[] = {"error", "exit", "crash", "sleep"};

/* One item, name:action[:n]; false, with the reason in *why, when malformed. */
static bool
parse_item(char *item, FaultPoint *fp, const char **why)
{
	char	   *name = item;
	char	   *action = strchr(item, ':');
	char	   *num = NULL;
	size_t		len;
	int			a;

	if (action == NULL)
	{
		*why = "an item is not name:action";
		return false;
	}
	*action++ = '\0';
	num = strchr(action, ':');
	if (num != NULL)
		*num++ = '\0';
	len = strlen(name);
	if (len == 0 || len >= FAULT_NAME_LEN ||
		strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_.") != len)
	{
		*why = "a point's name is 1 to 63 characters of a-z, 0-9, underscore and dot";
		return false;
	}
	for (a = 0; a < lengthof(action_names); a++)
		if (strcmp(action, action_names[a]) == 0)
			break;
	if (a == lengthof(action_names))
	{
		*why = "an action is not error, exit, crash or sleep";
		return false;
	}
	memset(fp, 0, sizeof(*fp));
	strlcpy(fp->name, name, sizeof(fp->name));
	fp->action = (FaultAction) a;
	fp->n = fp->action == FAULT_SLEEP ? 1000 : 0;
	if (num != NULL)
	{
		char	   *end;
		long		v;

		errno = 0;
		v = strtol(num, &end, 10);
		if (*num == '\0' || *end != '\0' || errno != 0 || v < 1 || v > INT_MAX / 2)
		{
			*why = "a count or a number of milliseconds is not a positive integer";
			return false;
		}
		fp->n = (int) v;
	}
	return true;
}

/*
 * fault_points_check parses the setting into a FaultList (malloc'd, as
 * the GUC machinery owns it).
 */
bool
fault_points_check(char **newval, void **extra, GucSource source)
{
	FaultList  *list;
	char	   *copy;
	char	   *item;
	char	   *save = NULL;

	list = malloc(sizeof(FaultList));
	if (list == NULL)
		return false;
	list->count = 0;
	copy = pstrdup(*newval ? *newval : "");
	for (item = strtok_r(copy, ", \t\n", &save); item != NULL;
		 item = strtok_r(NULL, ", \t\n", &save))
	{
		const char *why = NULL;

		if (list->count == FAULT_MAX)
		{
			GUC_check_errdetail("At most %d points can be armed at once.", FAULT_MAX);
			free(list);
			pfree(copy);
			return false;
		}
		if (!parse_item(item, &list->points[list->count], &why))
		{
			GUC_check_errdetail("The setting is a list of name:action[:n] (action error, exit, crash or sleep): %s.", why);
			free(list);
			pfree(copy);
			return false;
		}
		list->count++;
	}
	pfree(copy);
	*extra = list;
	return true;
}

void
fault_points_assign(const char *newval, void *extra)
{
	armed = extra;
	state_backend_faults_armed = armed != NULL && armed->count > 0;
}

/*
 * fault_point_reached acts on the point name when it is armed.  Called
 * only through FAULT_POINT, when something is armed.
 */
void
fault_point_reached(const char *name)
{
	FaultPoint *fp = NULL;

	if (armed == NULL)
		return;
	for (int i = 0; i < armed->count; i++)
		if (strcmp(armed->points[i].name, name) == 0)
		{
			fp = &armed->points[i];
			break;
		}
	if (fp == NULL)
		return;
	fp->arrivals++;
	if (fp->action != FAULT_SLEEP && fp->n > 0 && fp->arrivals != fp->n)
		return;
	ereport(LOG,
			(errmsg("state_backend fault point \"%s\" reached: %s",
					name, action_names[fp->action])));
	switch (fp->action)
	{
		case FAULT_ERROR:
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("fault point \"%s\" reached", name),
					 errdetail("state_backend.fault_points armed it.")));
			break;
		case FAULT_EXIT:
			ereport(FATAL,
					(errcode(ERRCODE_ADMIN_SHUTDOWN),
					 errmsg("fault point \"%s\" reached: the process exits", name)));
			break;
		case FAULT_CRASH:
			(void) kill(getpid(), SIGKILL);
			pg_usleep(10 * 1000 * 1000L);	/* SIGKILL cannot be caught */
			abort();
			break;
		case FAULT_SLEEP:
			{
				/* The whole time, whatever signal comes (pg_usleep ends at one). */
				TimestampTz end = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), fp->n);
				TimestampTz now;

				while ((now = GetCurrentTimestamp()) < end)
					pg_usleep((long) Min(end - now, 100000));
			}
			break;
	}
}
