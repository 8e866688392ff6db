/*
 * sql/sql_window.h
 *		Window states (Flink's WindowOperator): what their SQL functions
 *		(sql_window.c) and their fold (sql_window_fold.c) share: the fold of
 *		values and firings into a key's windows, the results the emit
 *		function is called with, and the routines the timer worker fires
 *		a window state through.
 */
#ifndef STATE_BACKEND_SQL_WINDOW_H
#define STATE_BACKEND_SQL_WINDOW_H

#include "common/aggregate.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "format/window_image.h"
#include "sql/sql_common.h"
#include "timers/timer_fire.h"

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
		bool		judged;		/* in's windows were judged late or not when added */
		bool	   *kept;		/* NULL, or where to say which of in's windows were taken */
	}			apply, pending, commit;
} WindowRun;

/* sql_window_fold.c */
extern WindowRun *window_run(StateCall *call);
extern void window_merge(const char *cur, uint32 curlen, const char *in, uint32 inlen,
						 StringInfo out, void *arg);
extern void *window_fold_arg(WindowRun *run, bool delta);
extern bool window_batches(const WindowRun *run);
extern void window_join_local(WindowRun *run, WindowSet *s, int *max, const WindowEntry *x);
extern void window_read_or_fail(WindowRun *run, const char *img, uint32 len, WindowSet *s);
extern Datum window_result(WindowRun *run, const char *acc, uint32 acclen, Oid restype,
						   bool *isnull);
extern void sql_window_combine(const StateDesc *desc, StateMergeFn *fn, void **arg);

/* How the timer worker fires a window state (registered in _PG_init). */
extern const StateFireRoutine window_fire_routine;

/* sql_window.c */
extern void sql_window_parse_create(FunctionCallInfo fcinfo, StateDesc *desc);
extern void sql_watermark_parse_create(FunctionCallInfo fcinfo, StateDesc *desc);

/* A feed's batch of rows for a window state (sql_window.c, used by sql_feed.c). */
typedef struct WindowBatch WindowBatch;
extern WindowBatch *sql_window_batch_begin(StateCall *call);
extern void sql_window_batch_add(WindowBatch *b, const StateArg *event_time, const StateArg *value);
extern void sql_window_batch_end(WindowBatch *b);

#endif							/* STATE_BACKEND_SQL_WINDOW_H */
