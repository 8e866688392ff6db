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
 * RocksDB's own key layout is in backend/rocksdb/rocks_keys.c; the
 * snapshot files' framing (headers, blocks, index) in format/format_internal.h.
 */
#ifndef STATE_BACKEND_RECORDS_H
#define STATE_BACKEND_RECORDS_H

#include "lib/stringinfo.h"

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
} RecordPair;

/* List images. */
extern int	record_elem_begin(StringInfo out);
extern void record_elem_end(StringInfo out, int begin);
extern RecordRead record_next_elem(const char *buf, uint32 len, uint32 *off,
								   const char **data, uint32 *datalen);
extern int64 record_count_elems(const char *buf, uint32 len);

/* Pairs, and map images made of them. */
extern Size record_pair_size(uint32 keylen, const char *value, uint32 vallen);
extern void record_write_pair(char *dst, const char *key, uint32 keylen,
							  const char *value, uint32 vallen);
extern void record_put_pair(StringInfo out, const char *key, uint32 keylen,
							const char *value, uint32 vallen);
extern int	record_pair_begin(StringInfo out);
extern void record_pair_end(StringInfo out, int begin, uint32 keylen, bool isnull);
extern RecordRead record_next_pair(const char *buf, uint32 len, uint32 *off,
								   RecordPair *pair);
extern int64 record_find_pair(const char *buf, uint32 len, const char *key,
							  uint32 keylen, uint32 *size);
extern int64 record_count_pairs(const char *buf, uint32 len);

/* Entries (state id and pair). */
extern void record_put_entry(StringInfo out, uint32 state_id, const char *key,
							 uint32 keylen, const char *value, uint32 vallen);
extern RecordRead record_next_entry(const char *buf, uint32 len, uint32 *off,
									uint32 *state_id, RecordPair *pair);

#endif							/* STATE_BACKEND_RECORDS_H */
