/*
 * format/window_image.c
 *		The one writer and reader of a window state's images.
 *
 * An image is a header, [version 1, uint8][0, uint8 x 3][cleaned_to,
 * int64][fire_clock, int64][nmarks, uint32][n, uint32], then nmarks marks
 * [start, int64][end, int64][version, uint32], then n windows [start,
 * int64][end, int64][version, uint32][flags, uint8][length, uint32] and the
 * contents' bytes, in the server's byte order.  The reader trusts no
 * length: windows must be in increasing order of start, each ending after
 * it starts, and the counts must fit the bytes.
 *
 * Times are timestamptz microseconds, but for the bounds past its range
 * (sql/sql_window.h): a start may lie before MIN_TIMESTAMP, an end past the
 * range is DT_NOEND.  An end of exactly END_TIMESTAMP, which releases before
 * 1.7 could write for the last window of the range, reads as DT_NOEND.
 */
#include "postgres.h"

#include "datatype/timestamp.h"
#include "utils/memutils.h"

#include "format/window_image.h"

#define WINDOW_IMAGE_VERSION	1
#define HEADER_SIZE		(4 + 8 + 8 + 4 + 4)
#define MARK_SIZE		(8 + 8 + 4)
#define WINDOW_HEAD		(8 + 8 + 4 + 1 + 4)

void
window_set_init(WindowSet *s)
{
	memset(s, 0, sizeof(*s));
	s->cleaned_to = WINDOW_NO_CLOCK;
	s->fire_clock = WINDOW_NO_CLOCK;
}

static void
take(const char **p, void *dst, Size n)
{
	memcpy(dst, *p, n);
	*p += n;
}

/* A window's end, an end past the range read as 'infinity'. */
static void
take_end(const char **p, int64 *end)
{
	take(p, end, 8);
	if (*end >= END_TIMESTAMP)
		*end = DT_NOEND;
}

/*
 * window_set_read parses img into s; windows and marks go to arrays in
 * the current memory context, the contents point into img.  False when
 * img is not such an image.
 */
bool
window_set_read(const char *img, uint32 len, WindowSet *s)
{
	const char *p = img;
	const char *end = img + len;
	uint32		nmarks;
	uint32		n;

	window_set_init(s);
	if (len < HEADER_SIZE || (uint8) p[0] != WINDOW_IMAGE_VERSION)
		return false;
	p += 4;
	take(&p, &s->cleaned_to, 8);
	take(&p, &s->fire_clock, 8);
	take(&p, &nmarks, 4);
	take(&p, &n, 4);
	if (nmarks > (uint32) (end - p) / MARK_SIZE || n > (uint32) (end - p) / WINDOW_HEAD)
		return false;
	s->marks = palloc(sizeof(WindowMark) * Max(nmarks, 1));
	for (uint32 i = 0; i < nmarks; i++)
	{
		if (end - p < MARK_SIZE)
			return false;
		take(&p, &s->marks[i].start, 8);
		take_end(&p, &s->marks[i].end);
		take(&p, &s->marks[i].version, 4);
	}
	s->nmarks = (int) nmarks;
	s->w = palloc(sizeof(WindowEntry) * Max(n, 1));
	for (uint32 i = 0; i < n; i++)
	{
		WindowEntry *w = &s->w[i];

		if (end - p < WINDOW_HEAD)
			return false;
		take(&p, &w->start, 8);
		take_end(&p, &w->end);
		take(&p, &w->version, 4);
		take(&p, &w->flags, 1);
		take(&p, &w->acclen, 4);
		if (w->acclen > (uint32) (end - p) || w->end <= w->start ||
			(i > 0 && w->start <= s->w[i - 1].start))
			return false;
		w->acc = p;
		p += w->acclen;
	}
	s->n = (int) n;
	return p == end;
}

/* put copies n bytes to *p and moves past them. */
static inline void
put(char **p, const void *src, Size n)
{
	memcpy(*p, src, n);
	*p += n;
}

/*
 * window_set_write appends the image of s to out: its size first, so that
 * out is enlarged once and each field is a copy of known size.
 */
void
window_set_write(StringInfo out, const WindowSet *s)
{
	char		head[4] = {WINDOW_IMAGE_VERSION, 0, 0, 0};
	uint32		nmarks = (uint32) s->nmarks;
	uint32		n = (uint32) s->n;
	Size		size = HEADER_SIZE + (Size) nmarks * MARK_SIZE;
	char	   *p;

	for (int i = 0; i < s->n; i++)
		size += WINDOW_HEAD + s->w[i].acclen;
	if (size > (Size) (MaxAllocSize - 1 - out->len))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the windows of a key would take more than 1 GB")));
	enlargeStringInfo(out, (int) size);
	p = out->data + out->len;
	put(&p, head, 4);
	put(&p, &s->cleaned_to, 8);
	put(&p, &s->fire_clock, 8);
	put(&p, &nmarks, 4);
	put(&p, &n, 4);
	for (int i = 0; i < s->nmarks; i++)
	{
		put(&p, &s->marks[i].start, 8);
		put(&p, &s->marks[i].end, 8);
		put(&p, &s->marks[i].version, 4);
	}
	for (int i = 0; i < s->n; i++)
	{
		const WindowEntry *w = &s->w[i];

		put(&p, &w->start, 8);
		put(&p, &w->end, 8);
		put(&p, &w->version, 4);
		put(&p, &w->flags, 1);
		put(&p, &w->acclen, 4);
		put(&p, w->acc, w->acclen);
	}
	Assert(p == out->data + out->len + size);
	out->len += (int) size;
	out->data[out->len] = '\0';
}
