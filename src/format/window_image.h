/*
 * format/window_image.h
 *		The image a window state keeps per key (window_image.c): the key's
 *		open windows, each with its contents, and what firing them left.
 *
 * The same layout carries what a window_add or a firing folds into a
 * key (windows of one value; the marks of what fired), so that one fold
 * (sql/sql_window_fold.c) serves every backend, the transactional layer's
 * pending writes and their commit.
 */
#ifndef STATE_BACKEND_WINDOW_IMAGE_H
#define STATE_BACKEND_WINDOW_IMAGE_H

#include "common/int.h"
#include "datatype/timestamp.h"
#include "lib/stringinfo.h"

/* Flags of a window. */
#define WINDOW_DIRTY	0x01		/* changed since it last fired */
#define WINDOW_FIRED	0x02		/* fired at least once */
#define WINDOW_RAW		0x04		/* contents: one value's image, not folded */

typedef struct WindowEntry
{
	int64		start;			/* microseconds, as timestamptz */
	int64		end;			/* exclusive */
	uint32		version;		/* moves with every value it takes */
	uint8		flags;
	const char *acc;			/* the contents' image */
	uint32		acclen;
} WindowEntry;

/* A window a firing emitted, as it was then. */
typedef struct WindowMark
{
	int64		start;
	int64		end;
	uint32		version;
} WindowMark;

typedef struct WindowSet
{
	int64		cleaned_to;		/* windows ending (plus lateness) by it are gone */
	int64		fire_clock;		/* a firing's clock; WINDOW_NO_CLOCK: none */
	int			nmarks;
	WindowMark *marks;
	int			n;				/* by start, increasing */
	WindowEntry *w;
} WindowSet;

#define WINDOW_NO_CLOCK		PG_INT64_MIN

extern void window_set_init(WindowSet *s);
extern bool window_set_read(const char *img, uint32 len, WindowSet *s);
extern void window_set_write(StringInfo out, const WindowSet *s);

/*
 * window_time_add is t (a window's bound) plus d (a size, gap or lateness,
 * not negative), 'infinity' when that passes the range.
 */
static inline int64
window_time_add(int64 t, int64 d)
{
	int64		sum;

	Assert(d >= 0);
	if (t >= END_TIMESTAMP || pg_add_s64_overflow(t, d, &sum) || sum >= END_TIMESTAMP)
		return DT_NOEND;
	return sum;
}

/* window_shown_start is a window's start as a timestamptz shows it. */
static inline int64
window_shown_start(int64 start)
{
	return start < MIN_TIMESTAMP ? DT_NOBEGIN : start;
}

/*
 * window_due_at is the instant the timer worker is told to look at a
 * window at: its end or when it goes.  The worker's index reads DT_NOEND
 * as "no instant"; an instant at 'infinity' is told as the one just before
 * it, which no finite watermark reaches (finite instants end before
 * END_TIMESTAMP) and 'infinity' passes.
 */
#define WINDOW_DUE_AT_END	(DT_NOEND - 1)

static inline int64
window_due_at(int64 at)
{
	return at >= END_TIMESTAMP ? WINDOW_DUE_AT_END : at;
}

#endif							/* STATE_BACKEND_WINDOW_IMAGE_H */
