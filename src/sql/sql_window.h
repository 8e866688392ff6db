/*
 * sql/sql_window.h
 *		Window states (Flink's WindowOperator): what their SQL functions
 *		(sql_window.c) and the timer worker that fires them share
 *		(sql_window_fold.c): the fold of values and firings into a key's
 *		windows, and the results the emit function is called with.
 */
#ifndef STATE_BACKEND_SQL_WINDOW_H
#define STATE_BACKEND_SQL_WINDOW_H

#include "common/aggregate.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "format/window_image.h"
#include "sql/sql_common.h"

/*
 * The ends of the range of timestamptz.  A window's start, end, or end plus
 * its allowed lateness may fall outside it (a value in the first or last
 * window of the range).  Such a window is kept, with its bounds as exact
 * as int64 holds them: a start before the range stays as it is (it is never
 * far before: at most a window's size) and is shown as '-infinity'; an end,
 * or an instant the window goes at, at or past the end of the range is
 * 'infinity' (DT_NOEND), which holds the same values, since no finite
 * instant lies beyond.  Such a window is due when the watermark reaches
 * 'infinity', which advance_watermark takes, as Flink's last watermark
 * (Long.MAX_VALUE) fires every window and cleans every one up.
 */

/* What one fold into a key's windows did, for its caller. */
typedef struct WindowFolded
{
	bool		dropped;		/* a value that joined no window: too late */
	int			nwake;			/* windows the timer worker must look at */
	int64		wake[WINDOW_MAX_SLIDES + 1];	/* at their ends */
} WindowFolded;

/* One state's set-up: its contents' functions, and how it folds. */
typedef struct WindowRun
{
	StateCall  *call;			/* codecs and descriptor */
	StateMergeFn reduce;		/* contents of a reducer: the reducer's merge */
	void	   *reduce_arg;
	AggregateRun *agg;			/* contents of an aggregate */
	Oid			result_type;	/* what emit and window_get return */
	StringInfoData scratch;		/* the fold's */
	StringInfoData image;		/* what window_add folds in */
	WindowFolded folded;
	/* StateMergeFn arguments: into committed windows, or into pending writes */
	struct WindowFoldArg
	{
		struct WindowRun *run;
		bool		delta;
	}			apply, pending;
} WindowRun;

/* sql_window_fold.c */
extern WindowRun *window_run(StateCall *call);
extern WindowRun *window_run_kept(const StateDesc *desc);
extern void window_merge(const char *cur, uint32 curlen, const char *in, uint32 inlen,
						 StringInfo out, void *arg);
extern void *window_fold_arg(WindowRun *run, bool delta);
extern void window_read_or_fail(WindowRun *run, const char *img, uint32 len, WindowSet *s);
extern Datum window_result(WindowRun *run, const char *acc, uint32 acclen, Oid restype,
						   bool *isnull);
extern void sql_window_combine(const StateDesc *desc, StateMergeFn *fn, void **arg);

/* The timer worker: what is due in a key's image, and firing it. */
typedef void (*WindowDueFn) (void *arg, int64 at);
typedef void (*WindowEmitFn) (void *arg, int64 start, int64 end, Datum result, bool isnull);
extern void window_due_times(const StateDesc *desc, const char *img, uint32 len,
							 WindowDueFn fn, void *arg);
extern bool window_fire_image(WindowRun *run, const char *img, uint32 len, int64 clock,
							  WindowEmitFn fn, void *arg, StringInfo mark, int64 *revisit);
extern bool window_mark_fired(WindowRun *run, const StateTarget *st, const StateKey *key,
							  const char *mark, uint32 len);

/* sql_window.c */
extern void sql_window_parse_create(FunctionCallInfo fcinfo, StateDesc *desc);

#endif							/* STATE_BACKEND_SQL_WINDOW_H */
