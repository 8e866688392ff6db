/*
 * format/records.h
 *		Every record layout of a state's images and of snapshots, with its
 *		one writer and its one reader.  Integers are uint32 in the server's
 *		byte order.  Readers trust no length: each checks what it reads
 *		against the buffer that holds it.
 *
 *	list image	elements back to back, each [length][bytes]
 *	pair		[key length][value length, or RECORD_NULL][key][value]:
 *				a map image is pairs (map key, value), one per map key; a
 *				key-group block of a snapshot file is pairs (key, image)
 *	entry		[state id] then a pair: what a backend's snapshot collect
 *				hands to the snapshot writer
 *
 * A state with a TTL stores a deadline with each value it keeps:
 *
 *	ttl value	[deadline, int64][value image]: the image of a value or
 *				reducing state, and each element of a list image
 *	ttl map value [deadline][flag byte, 1: NULL][value image]: each pair
 *				value of a map image (never a NULL pair value)
 *
 * A deadline is a TimestampTz: the value expires once the clock reaches
 * it.  The TTL readers and the compaction of images in place call nothing
 * of PostgreSQL's, so a backend's own threads (a storage engine's
 * compaction) may run them.
 *
 * Each backend's own storage layout is its own (backend/); the snapshot
 * files' framing (headers, blocks, index) in format/format_internal.h.
 */
#ifndef STATE_BACKEND_RECORDS_H
#define STATE_BACKEND_RECORDS_H

#include <sys/time.h>

#include "datatype/timestamp.h"
#include "lib/stringinfo.h"

#include "common/ttl_clock.h"

/* A pair's value length that stands for NULL (a map entry's NULL value). */
#define RECORD_NULL			PG_UINT32_MAX

#define RECORD_ELEM_HDR		sizeof(uint32)
#define RECORD_PAIR_HDR		(2 * sizeof(uint32))
#define RECORD_ENTRY_HDR	(3 * sizeof(uint32))

/* What a reader returns: a record, the end of the buffer, or a bad record. */
typedef enum RecordRead
{
	RECORD_END = 0,
	RECORD_OK,
	RECORD_TRUNCATED
} RecordRead;

typedef struct RecordPair
{
	const char *key;
	uint32		keylen;
	const char *value;			/* NULL for a NULL value */
	uint32		vallen;			/* 0 for a NULL value */
	const char *raw;			/* the whole record, header included */
	uint32		rawlen;
} RecordPair;

/* List images. */
extern int	record_elem_begin(StringInfo out);
extern void record_elem_end(StringInfo out, int begin);
extern RecordRead record_next_elem(const char *buf, uint32 len, uint32 *off,
								   const char **data, uint32 *datalen);
extern int64 record_count_elems(const char *buf, uint32 len);

/* Pairs, and map images made of them. */
extern int	record_pair_begin(StringInfo out);
extern void record_pair_end(StringInfo out, int begin, uint32 keylen, bool isnull);
extern int64 record_find_pair(const char *buf, uint32 len, const char *key,
							  uint32 keylen, uint32 *size);
extern int64 record_count_pairs(const char *buf, uint32 len);

/*
 * The writers and readers of pairs and entries are inline: snapshots run
 * them once per entry, millions of times.
 */

/* record_pair_size is the size of a pair; value NULL for a NULL value. */
static inline Size
record_pair_size(uint32 keylen, const char *value, uint32 vallen)
{
	return RECORD_PAIR_HDR + (Size) keylen + (value ? (Size) vallen : 0);
}

/* record_write_pair writes a pair at dst (record_pair_size bytes). */
static inline void
record_write_pair(char *dst, const char *key, uint32 keylen,
				  const char *value, uint32 vallen)
{
	uint32		vl = value ? vallen : RECORD_NULL;

	memcpy(dst, &keylen, sizeof(uint32));
	memcpy(dst + sizeof(uint32), &vl, sizeof(uint32));
	memcpy(dst + RECORD_PAIR_HDR, key, keylen);
	if (value)
		memcpy(dst + RECORD_PAIR_HDR + keylen, value, vallen);
}

/* record_put_pair appends a pair to out. */
static inline void
record_put_pair(StringInfo out, const char *key, uint32 keylen,
				const char *value, uint32 vallen)
{
	Size		size = record_pair_size(keylen, value, vallen);

	enlargeStringInfo(out, (int) size);
	record_write_pair(out->data + out->len, key, keylen, value, vallen);
	out->len += (int) size;
	out->data[out->len] = '\0';
}

/* record_next_pair reads the pair at *off and moves *off past it. */
static inline RecordRead
record_next_pair(const char *buf, uint32 len, uint32 *off, RecordPair *pair)
{
	uint32		klen;
	uint32		vlen;
	uint32		left;
	uint32		size;

	if (*off >= len)
		return RECORD_END;
	left = len - *off;
	if (left < RECORD_PAIR_HDR)
		return RECORD_TRUNCATED;
	memcpy(&klen, buf + *off, sizeof(uint32));
	memcpy(&vlen, buf + *off + sizeof(uint32), sizeof(uint32));
	left -= RECORD_PAIR_HDR;
	if (klen > left || (vlen != RECORD_NULL && vlen > left - klen))
		return RECORD_TRUNCATED;
	pair->raw = buf + *off;
	pair->key = pair->raw + RECORD_PAIR_HDR;
	pair->keylen = klen;
	pair->value = vlen == RECORD_NULL ? NULL : pair->key + klen;
	pair->vallen = vlen == RECORD_NULL ? 0 : vlen;
	size = RECORD_PAIR_HDR + klen + pair->vallen;
	pair->rawlen = size;
	*off += size;
	return RECORD_OK;
}

/* Entries (state id and pair). */

/* record_put_entry appends an entry (the value is a whole image). */
static inline void
record_put_entry(StringInfo out, uint32 state_id, const char *key, uint32 keylen,
				 const char *value, uint32 vallen)
{
	Size		size = sizeof(uint32) + record_pair_size(keylen, value, vallen);

	enlargeStringInfo(out, (int) size);
	memcpy(out->data + out->len, &state_id, sizeof(uint32));
	record_write_pair(out->data + out->len + sizeof(uint32), key, keylen, value, vallen);
	out->len += (int) size;
	out->data[out->len] = '\0';
}

/* record_next_entry reads the entry at *off and moves *off past it. */
static inline RecordRead
record_next_entry(const char *buf, uint32 len, uint32 *off, uint32 *state_id,
				  RecordPair *pair)
{
	uint32		at;

	if (*off >= len)
		return RECORD_END;
	if (len - *off < sizeof(uint32))
		return RECORD_TRUNCATED;
	memcpy(state_id, buf + *off, sizeof(uint32));
	at = *off + sizeof(uint32);
	if (record_next_pair(buf, len, &at, pair) != RECORD_OK)
		return RECORD_TRUNCATED;
	*off = at;
	return RECORD_OK;
}

/* TTL values. */

#define RECORD_TTL_HDR		sizeof(int64)
#define RECORD_TTL_MAP_HDR	(sizeof(int64) + 1)

/*
 * record_ttl_now is the TTL clock (common/ttl_clock.c) as a TimestampTz,
 * read without PostgreSQL's help (a backend's own threads read it too).
 */
static inline int64
record_ttl_now(void)
{
	struct timeval tv;
	int64		pinned = ttl_clock_pinned();

	if (pinned != 0)
		return pinned;
	gettimeofday(&tv, NULL);
	return ((int64) tv.tv_sec -
			(int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY) *
		USECS_PER_SEC + tv.tv_usec + ttl_clock_offset();
}

/* record_ttl_deadline is now + ttl, saturating at the end of time. */
static inline int64
record_ttl_deadline(int64 now, int64 ttl)
{
	return now > PG_INT64_MAX - ttl ? PG_INT64_MAX : now + ttl;
}

/* record_ttl_read reads a TTL value's deadline; false when it is too short. */
static inline bool
record_ttl_read(const char *img, uint32 len, int64 *deadline)
{
	if (len < RECORD_TTL_HDR)
		return false;
	memcpy(deadline, img, sizeof(int64));
	return true;
}

/* record_ttl_put appends a deadline: the caller appends the value next. */
static inline void
record_ttl_put(StringInfo out, int64 deadline)
{
	appendBinaryStringInfo(out, (const char *) &deadline, sizeof(int64));
}

/* Is a TTL value (or map value) expired at now?  Too short: no. */
static inline bool
record_ttl_expired(const char *img, uint32 len, int64 now)
{
	int64		deadline;

	return record_ttl_read(img, len, &deadline) && deadline <= now;
}

extern uint32 record_ttl_compact(int kind, char *img, uint32 len, int64 now);
extern int64 record_ttl_min_deadline(int kind, const char *img, uint32 len);
extern int64 record_ttl_compact_entries(const char *in, uint32 len, StringInfo out,
										int (*ttl_kind) (uint32 state_id, void *arg),
										void *arg, int64 now);

#endif							/* STATE_BACKEND_RECORDS_H */
