/*
 * backend/rocksdb/rocks_keys.c
 *		What rocksdb states store in RocksDB, byte by byte, with its one
 *		writer and its one reader.
 *
 *	key			[key group, 2 bytes][key length, 4 bytes][key image], all
 *				big-endian, then, for a map state, the map key; so a key
 *				group, one key's map and a whole state are each a
 *				contiguous range
 *	value		a value or reducing state: the value image; a list: the
 *				list image (format/records.h), appended to by the merge
 *				operator; a map entry: a flag byte (1: NULL) and the value
 *				image
 *
 * Readers trust no length: a key written by someone else (a snapshot's
 * files) is checked before it is split.
 */
#include "postgres.h"

#include "common/hashfn.h"

#include "port/pg_bswap.h"

#include "rocks_internal.h"

#define KEY_HDR		(sizeof(uint16) + sizeof(uint32))

/* rocks_key builds the RocksDB key of a state key in buf. */
void
rocks_key(StringInfo buf, uint16 key_group, const char *key, uint32 keylen)
{
	uint16		kg = pg_hton16(key_group);
	uint32		len = pg_hton32(keylen);

	resetStringInfo(buf);
	appendBinaryStringInfo(buf, (const char *) &kg, sizeof(kg));
	appendBinaryStringInfo(buf, (const char *) &len, sizeof(len));
	appendBinaryStringInfo(buf, key, keylen);
}

/* rocks_map_key builds the RocksDB key of one map entry in buf. */
void
rocks_map_key(StringInfo buf, const StringInfo prefix, const char *mkey, uint32 mklen)
{
	resetStringInfo(buf);
	appendBinaryStringInfo(buf, prefix->data, prefix->len);
	appendBinaryStringInfo(buf, mkey, mklen);
}

/*
 * rocks_split_key finds the key image and the map key (empty but for map
 * states) of a RocksDB key k, pointers into k, or raises data_corrupted.
 */
void
rocks_split_key(const char *k, size_t klen, RocksRowKey *out)
{
	uint32		len;

	if (klen < KEY_HDR)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("rocksdb key of %zu bytes is too short", klen)));
	memcpy(&len, k + sizeof(uint16), sizeof(uint32));
	len = pg_ntoh32(len);
	if (len > klen - KEY_HDR)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("rocksdb key of %zu bytes claims a key image of %u bytes", klen, len)));
	out->key = k + KEY_HDR;
	out->keylen = len;
	out->mkey = k + KEY_HDR + len;
	out->mklen = (uint32) (klen - KEY_HDR - len);
}

/* rocks_key_prefix_len: the bytes of a RocksDB key that name the state key. */
size_t
rocks_key_prefix_len(const char *k, size_t klen)
{
	RocksRowKey rk;

	rocks_split_key(k, klen, &rk);
	return KEY_HDR + rk.keylen;
}

/* The range [from, to) of the keys of one key group. */
void
rocks_key_group_range(int key_group, StringInfo from, StringInfo to)
{
	rocks_key_groups_range(key_group, key_group, from, to);
}

/* The range [from, to) of the keys of key groups first to last. */
void
rocks_key_groups_range(int first, int last, StringInfo from, StringInfo to)
{
	uint16		kg = pg_hton16((uint16) first);
	uint16		next = pg_hton16((uint16) (last + 1));

	resetStringInfo(from);
	resetStringInfo(to);
	appendBinaryStringInfo(from, (const char *) &kg, sizeof(kg));
	appendBinaryStringInfo(to, (const char *) &next, sizeof(next));
}

/* The range [from, to) of every key of a state. */
void
rocks_state_range(StringInfo from, StringInfo to)
{
	resetStringInfo(from);
	resetStringInfo(to);
	appendBinaryStringInfo(to, "\xff\xff\xff\xff\xff\xff", KEY_HDR);
}

/* rocks_prefix_end: the smallest key after every key that starts with prefix. */
void
rocks_prefix_end(StringInfo prefix, StringInfo end)
{
	int			n = prefix->len;

	resetStringInfo(end);
	appendBinaryStringInfo(end, prefix->data, prefix->len);
	while (n > 0 && (unsigned char) end->data[n - 1] == 0xff)
		n--;
	Assert(n > 0);
	end->data[n - 1]++;
	end->len = n;
}

/* rocks_map_value appends the stored value of a map entry (NULL: NULL). */
void
rocks_map_value(StringInfo buf, const char *value, uint32 len)
{
	appendStringInfoChar(buf, value ? 0 : 1);
	if (value)
		appendBinaryStringInfo(buf, value, len);
}

/*
 * rocks_map_value_read reads a stored map entry's value: *value is NULL
 * for a NULL value.
 */
void
rocks_map_value_read(const char *v, size_t vlen, const char **value, uint32 *len)
{
	if (vlen >= 1 && v[0] == 0)
	{
		*value = v + 1;
		*len = (uint32) (vlen - 1);
	}
	else
	{
		*value = NULL;
		*len = 0;
	}
}

/*
 * rocks_map_value_out turns a stored map entry's value, in buf, into the
 * value itself (empty, with *isnull, for NULL).
 */
void
rocks_map_value_out(StringInfo buf, bool *isnull)
{
	const char *value;
	uint32		len;

	rocks_map_value_read(buf->data, buf->len, &value, &len);
	*isnull = value == NULL;
	if (value)
		memmove(buf->data, value, len);
	buf->len = value ? (int) len : 0;
	buf->data[buf->len] = '\0';
}

/*
 * rocks_put_pair appends one pair to a map image (or to a reply laid out as
 * one): the host's map_image_put of an empty image.  value NULL: a NULL
 * value.
 */
void
rocks_put_pair(StringInfo out, const char *key, uint32 keylen, const char *value, uint32 len)
{
	rocks_host->map_image_put(out, NULL, 0, key, keylen, value, len, value == NULL);
}

/*
 * rocks_map_record appends to a map image the pair of a
 * stored map entry: its map key and its stored value.
 */
void
rocks_map_record(StringInfo out, const char *mkey, uint32 mklen, const char *v, size_t vlen)
{
	const char *value;
	uint32		len;

	rocks_map_value_read(v, vlen, &value, &len);
	rocks_put_pair(out, mkey, mklen, value, len);
}

void
rocks_rows_init(RocksKeyRows *rows)
{
	initStringInfo(&rows->key);
	initStringInfo(&rows->image);
	rows->open = false;
}

/* Does key begin another key than the one being read (or the first)? */
bool
rocks_rows_new_key(const RocksKeyRows *rows, const char *key, uint32 keylen)
{
	return !rows->open || rows->key.len != (int) keylen ||
		memcmp(rows->key.data, key, keylen) != 0;
}

/*
 * rocks_rows_follow notes the key of the row being read, with no image:
 * whether it begins another key (rows of any kind, counted by key).
 */
bool
rocks_rows_follow(RocksKeyRows *rows, const char *key, uint32 keylen)
{
	if (!rocks_rows_new_key(rows, key, keylen))
		return false;
	resetStringInfo(&rows->key);
	appendBinaryStringInfo(&rows->key, key, keylen);
	rows->open = true;
	return true;
}

/*
 * rocks_rows_add adds a stored row (RocksDB key k, value v) of a map state:
 * when it begins another key, fn first gets the whole image of the one
 * before.
 */
void
rocks_rows_add(RocksKeyRows *rows, const char *k, size_t klen, const char *v, size_t vlen,
			   RocksImageFn fn, void *arg)
{
	RocksRowKey rk;

	rocks_split_key(k, klen, &rk);
	if (rocks_rows_new_key(rows, rk.key, rk.keylen))
	{
		rocks_rows_end(rows, fn, arg);
		appendBinaryStringInfo(&rows->key, rk.key, rk.keylen);
		rows->open = true;
	}
	rocks_map_record(&rows->image, rk.mkey, rk.mklen, v, vlen);
}

/* rocks_rows_end hands fn the image of the key being read, if any. */
void
rocks_rows_end(RocksKeyRows *rows, RocksImageFn fn, void *arg)
{
	if (rows->open && rows->image.len > 0)
		fn(arg, rows->key.data, rows->key.len, rows->image.data, rows->image.len);
	resetStringInfo(&rows->key);
	resetStringInfo(&rows->image);
	rows->open = false;
}

void
rocks_rows_free(RocksKeyRows *rows)
{
	pfree(rows->key.data);
	pfree(rows->image.data);
}

/*
 * rocks_key_slot spreads a key of a state over slots (the shared entry
 * cache's sets, the views' buckets): the host's key hash mixed with the
 * state's id.
 */
uint32
rocks_key_slot(uint32 state_id, uint32 key_hash)
{
	return murmurhash32(key_hash ^ (state_id * 0x9E3779B9U));
}
