/*
 * format/records.c
 *		The writers and readers of list images, pairs (map images, snapshot
 *		blocks) and entries: see format/records.h, which has the inline ones.
 */
#include "postgres.h"

#include "common/types.h"
#include "format/records.h"

/* ---------------------------------------------------------------- lists */

/*
 * record_elem_begin starts an element whose bytes the caller appends next;
 * record_elem_end, given what begin returned, fills in its length.
 */
int
record_elem_begin(StringInfo out)
{
	int			begin = out->len;
	uint32		zero = 0;

	appendBinaryStringInfo(out, (const char *) &zero, sizeof(uint32));
	return begin;
}

void
record_elem_end(StringInfo out, int begin)
{
	uint32		len = (uint32) (out->len - begin - RECORD_ELEM_HDR);

	memcpy(out->data + begin, &len, sizeof(uint32));
}

/*
 * record_next_elem reads the element at *off of a list image and moves *off
 * past it.
 */
RecordRead
record_next_elem(const char *buf, uint32 len, uint32 *off, const char **data,
				 uint32 *datalen)
{
	uint32		n;

	if (*off >= len)
		return RECORD_END;
	if (len - *off < RECORD_ELEM_HDR)
		return RECORD_TRUNCATED;
	memcpy(&n, buf + *off, sizeof(uint32));
	if (n > len - *off - RECORD_ELEM_HDR)
		return RECORD_TRUNCATED;
	*data = buf + *off + RECORD_ELEM_HDR;
	*datalen = n;
	*off += RECORD_ELEM_HDR + n;
	return RECORD_OK;
}

/* record_count_elems counts a list image's elements (up to a bad one). */
int64
record_count_elems(const char *buf, uint32 len)
{
	uint32		off = 0;
	const char *data;
	uint32		n;
	int64		count = 0;

	while (record_next_elem(buf, len, &off, &data, &n) == RECORD_OK)
		count++;
	return count;
}

/* ---------------------------------------------------------------- pairs */




/*
 * record_pair_begin starts a pair whose key, then value, the caller
 * appends next; record_pair_end fills in the lengths, given the key's
 * length and whether the value is NULL (then nothing follows the key).
 */
int
record_pair_begin(StringInfo out)
{
	int			begin = out->len;
	uint32		zero[2] = {0, 0};

	appendBinaryStringInfo(out, (const char *) zero, sizeof(zero));
	return begin;
}

void
record_pair_end(StringInfo out, int begin, uint32 keylen, bool isnull)
{
	uint32		vl = isnull ? RECORD_NULL :
		(uint32) (out->len - begin - RECORD_PAIR_HDR - keylen);

	memcpy(out->data + begin, &keylen, sizeof(uint32));
	memcpy(out->data + begin + sizeof(uint32), &vl, sizeof(uint32));
}


/*
 * record_find_pair returns the offset of the pair with this key in a map
 * image, or -1; *size gets the pair's size.
 */
int64
record_find_pair(const char *buf, uint32 len, const char *key, uint32 keylen,
				 uint32 *size)
{
	uint32		off = 0;
	RecordPair	p;

	for (;;)
	{
		uint32		at = off;

		if (record_next_pair(buf, len, &off, &p) != RECORD_OK)
			return -1;
		if (p.keylen == keylen && memcmp(p.key, key, keylen) == 0)
		{
			*size = off - at;
			return at;
		}
	}
}

/* record_count_pairs counts a map image's pairs (up to a bad one). */
int64
record_count_pairs(const char *buf, uint32 len)
{
	uint32		off = 0;
	RecordPair	p;
	int64		count = 0;

	while (record_next_pair(buf, len, &off, &p) == RECORD_OK)
		count++;
	return count;
}



/* ---------------------------------------------------------------- TTL */

/*
 * record_ttl_compact removes what expired at now from the image of a TTL
 * state of the given kind (StateKind), in place, and returns the length
 * left: 0 when nothing is left, len when nothing expired.  A value or
 * reducing image is whole or gone; a list keeps its live elements, a map
 * its live pairs, in order.  What cannot be read (a damaged tail) is kept
 * as it is, for the readers to report.
 */
uint32
record_ttl_compact(int kind, char *img, uint32 len, int64 now)
{
	uint32		off = 0;
	uint32		keep = 0;

	if (kind != STATE_KIND_LIST && kind != STATE_KIND_MAP)
		return record_ttl_expired(img, len, now) ? 0 : len;
	for (;;)
	{
		uint32		at = off;
		const char *data;
		uint32		n;
		RecordPair	pair;
		bool		live;

		if (kind == STATE_KIND_LIST)
		{
			if (record_next_elem(img, len, &off, &data, &n) != RECORD_OK)
				break;
			live = !record_ttl_expired(data, n, now);
		}
		else
		{
			if (record_next_pair(img, len, &off, &pair) != RECORD_OK)
				break;
			live = pair.value == NULL || !record_ttl_expired(pair.value, pair.vallen, now);
		}
		if (live)
		{
			if (keep != at)
				memmove(img + keep, img + at, off - at);
			keep += off - at;
		}
	}
	/* A damaged tail stays. */
	if (off < len)
	{
		if (keep != off)
			memmove(img + keep, img + off, len - off);
		keep += len - off;
	}
	return keep;
}

/*
 * record_ttl_min_deadline returns the earliest deadline in the image of a
 * TTL state of the given kind (StateKind), or PG_INT64_MAX when it holds
 * none.
 */
int64
record_ttl_min_deadline(int kind, const char *img, uint32 len)
{
	uint32		off = 0;
	const char *data;
	uint32		n;
	RecordPair	pair;
	int64		min = PG_INT64_MAX;
	int64		d;

	if (kind == STATE_KIND_LIST)
	{
		while (record_next_elem(img, len, &off, &data, &n) == RECORD_OK)
			if (record_ttl_read(data, n, &d) && d < min)
				min = d;
	}
	else if (kind == STATE_KIND_MAP)
	{
		while (record_next_pair(img, len, &off, &pair) == RECORD_OK)
			if (pair.value && record_ttl_read(pair.value, pair.vallen, &d) && d < min)
				min = d;
	}
	else if (record_ttl_read(img, len, &d))
		min = d;
	return min;
}

/*
 * record_ttl_compact_entries appends the entry records of in to out, with
 * what expired at now left out of the states that have a TTL: ttl_kind
 * returns the StateKind of such a state, -1 for any other.  An entry left
 * with nothing is left out.  Returns how many entries were left out.
 */
int64
record_ttl_compact_entries(const char *in, uint32 len, StringInfo out,
						   int (*ttl_kind) (uint32 state_id, void *arg), void *arg,
						   int64 now)
{
	uint32		off = 0;
	uint32		id;
	RecordPair	pair;
	int64		dropped = 0;

	for (;;)
	{
		uint32		at = off;
		int			kind;
		int			start = out->len;
		uint32		valoff;
		uint32		keep;

		if (record_next_entry(in, len, &off, &id, &pair) != RECORD_OK)
		{
			appendBinaryStringInfo(out, in + at, len - at);
			return dropped;
		}
		kind = ttl_kind(id, arg);
		appendBinaryStringInfo(out, in + at, off - at);
		if (kind < 0 || pair.value == NULL)
			continue;
		valoff = (uint32) start + sizeof(uint32) + RECORD_PAIR_HDR + pair.keylen;
		keep = record_ttl_compact(kind, out->data + valoff, pair.vallen, now);
		if (keep == pair.vallen)
			continue;
		if (keep == 0)
		{
			out->len = start;
			dropped++;
		}
		else
		{
			memcpy(out->data + start + 2 * sizeof(uint32), &keep, sizeof(uint32));
			out->len = (int) (valoff + keep);
		}
		out->data[out->len] = '\0';
	}
}
