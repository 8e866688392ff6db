/*
 * format/records.c
 *		The writers and readers of list images, pairs (map images, snapshot
 *		blocks) and entries: see format/records.h, which has the inline ones.
 */
#include "postgres.h"

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


