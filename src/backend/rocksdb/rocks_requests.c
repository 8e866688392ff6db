/*
 * backend/rocksdb/rocks_requests.c
 *		The state worker's side of rocksdb states: the requests sessions send
 *		about them (rocks_client.c builds them), served against the instance
 *		(rocks_instance.c).
 *
 * Writes that answer nothing are gathered in the instance's write batch
 * and committed before the next read and at the end of the worker's pass
 * over every session (STATE_REQUEST_PASS_END): one write, and with
 * state_backend.rocksdb_sync one fsync, for every session whose writes
 * came in that pass (and, for logged states, one WAL flush).  A session's
 * replies of the pass, a sync's among them, wait for that commit.  The
 * worker is the only writer, so a read and the write that follows it are
 * atomic.
 * What is stored, byte by byte, is rocks_keys.c's.
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "rocks_internal.h"

typedef struct Request
{
	RocksRequest h;
	const char *key;
	const char *rest;			/* what follows the key */
	uint32		restlen;
	rocksdb_column_family_handle_t *cf;
	StringInfoData rkey;		/* the RocksDB key */
} Request;

static void
request_parse(const char *payload, uint32 len, Request *r)
{
	if (len < sizeof(RocksRequest))
		elog(ERROR, "state_backend: short request");
	memcpy(&r->h, payload, sizeof(RocksRequest));
	if (len < sizeof(RocksRequest) + r->h.keylen)
		elog(ERROR, "state_backend: short request");
	r->key = payload + sizeof(RocksRequest);
	r->rest = r->key + r->h.keylen;
	r->restlen = len - sizeof(RocksRequest) - r->h.keylen;
	r->cf = rocks_family(r->h.state_id, r->h.slot);
	initStringInfo(&r->rkey);
	rocks_key(&r->rkey, r->h.key_group, r->key, r->h.keylen);
}

/*
 * The keys the batch holds writes of, so that a read of another key need
 * not commit the batch first: the read-modify-writes of distinct keys
 * (reduce, aggregate, a CAS) in a pass then share one commit, and one WAL
 * flush.  A key is a hash of its state and RocksDB key; a collision costs a
 * commit, never a stale read.  The set speaks for the batch only while the
 * batch is the one it saw (batch_clears) with the entries it saw
 * (covered): a write made otherwise (the worker's own, a truncate) leaves
 * the count past "covered", and every read then commits first.
 */
#define PENDING_KEY_SLOTS	1024	/* a power of two; half of it is used at most */

static uint64 pending_keys[PENDING_KEY_SLOTS];
static int	pending_nkeys = 0;
static uint64 pending_clears = 0;
static int	pending_covered = -1;	/* -1: the set does not speak for the batch */

static uint64
pending_key_hash(const Request *r)
{
	return hash_bytes_extended((const unsigned char *) r->rkey.data, r->rkey.len,
							   r->h.state_id) | 1;
}

/* Whether the key's hash is in the set; with add, it is once this returns. */
static bool
pending_key_find(uint64 h, bool add)
{
	uint32		i = (uint32) (h >> 32) & (PENDING_KEY_SLOTS - 1);

	for (;;)
	{
		if (pending_keys[i] == h)
			return true;
		if (pending_keys[i] == 0)
		{
			if (add)
			{
				pending_keys[i] = h;
				pending_nkeys++;
			}
			return false;
		}
		i = (i + 1) & (PENDING_KEY_SLOTS - 1);
	}
}

/*
 * pending_key_written: a keyed write request ran; "before" is what the
 * batch counted when it began.
 */
static void
pending_key_written(const Request *r, int before)
{
	int			count = rocksdb_writebatch_count(rocks.batch);

	if (before == 0 || pending_clears != rocks.batch_clears)
	{
		/* A batch the set has not seen: start it afresh. */
		memset(pending_keys, 0, sizeof(pending_keys));
		pending_nkeys = 0;
		pending_clears = rocks.batch_clears;
		pending_covered = (before == 0) ? 0 : -1;
	}
	if (count == 0)
		return;					/* committed already */
	if (pending_covered != before || pending_nkeys >= PENDING_KEY_SLOTS / 2)
	{
		pending_covered = -1;
		return;
	}
	(void) pending_key_find(pending_key_hash(r), true);
	pending_covered = count;
}

/* Whether a read of the request's key only may skip committing the batch first. */
static bool
pending_key_absent(const Request *r)
{
	return pending_covered >= 0 &&
		pending_clears == rocks.batch_clears &&
		pending_covered == rocksdb_writebatch_count(rocks.batch) &&
		!pending_key_find(pending_key_hash(r), false);
}

/*
 * Where the batch stood when the session served now began its round (at
 * the previous session's end of round): whether its own writes wait in the
 * batch at the end of its round, so that only such a session's replies
 * wait for the pass's commit.  A commit since (batch_clears moved) leaves
 * in the batch only what this session wrote after it.
 */
static uint64 round_clears = 0;
static int	round_count = 0;

static bool
round_left_writes(void)
{
	int			count = rocksdb_writebatch_count(rocks.batch);
	bool		mine;

	mine = (rocks.batch_clears == round_clears) ? count > round_count : count > 0;
	round_clears = rocks.batch_clears;
	round_count = count;
	return mine;
}

/* Set while the request being run came from a session, in a pass of the worker. */
bool		rocks_serving_session = false;

/*
 * rocks_commit_written ends a request that wrote and replies that it did:
 * the write is committed now, or, for a session's request in a pass, with
 * the pass (STATE_REQUEST_PASS_END), the reply held until then.  What the
 * worker runs itself is committed now: its callers read RocksDB next.
 */
static void
rocks_commit_written(void)
{
	if (!rocks_serving_session)
		rocks_commit();
}

/*
 * A logged state's write goes to WAL as it joins the batch: the worker is
 * the only writer and makes every cut between requests, so a cut's WAL
 * position parts the writes it holds from those it does not.
 */
static void
request_log(const Request *r, uint8 kind, const char *mkey, uint32 mkeylen,
			const char *value, uint32 len, bool isnull)
{
	XLogRecPtr	end;
	StateTarget st;
	StateKey	key;

	if (!(r->h.flags & ROCKS_REQUEST_LOGGED))
		return;
	memset(&st, 0, sizeof(st));
	st.info.id = r->h.state_id;
	st.info.logged = true;
	st.slot = r->h.slot;
	memset(&key, 0, sizeof(key));
	key.data = r->key;
	key.len = r->h.keylen;
	key.key_group = r->h.key_group;
	end = rocks_host->log_change(&st, kind, &key,
								 mkey, mkeylen, value, len, isnull);
	if (end == InvalidXLogRecPtr)
	{
		/* Not logged again: replayed from WAL (see rocks_commit), or suppressed. */
		if (rocks_host->replaying() != InvalidXLogRecPtr)
			rocks.batch_replayed = true;
		return;
	}
	if (end > rocks.batch_lsn)
		rocks.batch_lsn = end;
	/* The session waits for it at commit (the batch's commit comes later in the pass). */
	rocks_host->applied_lsn(end);
}



/* Whole map image of one key, from its entries. */
typedef struct MapImage
{
	size_t		prefixlen;
	StringInfo	out;			/* NULL: count only */
	int64		count;
	int64		limit;			/* stop after this many (0: all) */
} MapImage;

static bool
map_image_add(void *arg, const char *k, size_t klen, const char *v, size_t vlen)
{
	MapImage   *m = arg;

	if (m->out)
		rocks_map_record(m->out, k + m->prefixlen, (uint32) (klen - m->prefixlen), v, vlen);
	m->count++;
	return m->limit == 0 || m->count < m->limit;
}

/*
 * map_image appends a key's map entries to out (NULL: only counts them, up
 * to limit when it is not 0); returns how many.
 */
static int64
map_image(rocksdb_column_family_handle_t *cf, StringInfo prefix, StringInfo out, int64 limit)
{
	StringInfoData end;
	MapImage	m;

	initStringInfo(&end);
	rocks_prefix_end(prefix, &end);
	m.prefixlen = prefix->len;
	m.out = out;
	m.count = 0;
	m.limit = limit;
	rocks_scan(rocks.db, rocks.ropts, cf, prefix->data, prefix->len, end.data, end.len,
			   map_image_add, &m);
	pfree(end.data);
	return m.count;
}

/* One map entry of an image, as a row of its own (map_store_image). */
typedef struct MapRows
{
	rocksdb_column_family_handle_t *cf;
	StringInfo	prefix;
	StringInfoData k;
	StringInfoData v;
} MapRows;

static void
map_store_entry(void *arg, const char *mkey, uint32 mklen, const char *value, uint32 vallen)
{
	MapRows    *m = arg;

	rocks_map_key(&m->k, m->prefix, mkey, mklen);
	resetStringInfo(&m->v);
	rocks_map_value(&m->v, value, vallen);
	rocksdb_writebatch_put_cf(rocks.batch, m->cf, m->k.data, m->k.len, m->v.data, m->v.len);
}

/* Store a whole map image as separate entries (after deleting the old). */
static void
map_store_image(rocksdb_column_family_handle_t *cf, StringInfo prefix,
				const char *image, uint32 len)
{
	StringInfoData end;
	MapRows		m;

	/* Checked whole first: a damaged image neither removes the old map nor writes. */
	(void) rocks_host->map_image_count(image, len);
	initStringInfo(&end);
	rocks_prefix_end(prefix, &end);
	rocksdb_writebatch_delete_range_cf(rocks.batch, cf, prefix->data, prefix->len, end.data, end.len);
	m.cf = cf;
	m.prefix = prefix;
	initStringInfo(&m.k);
	initStringInfo(&m.v);
	rocks_host->map_image_iterate(image, len, map_store_entry, &m);
	pfree(end.data);
	pfree(m.k.data);
	pfree(m.v.data);
}

/*
 * The cache sessions read in place (rocks_cache.c): request_cache stores
 * what RocksDB holds for a request's key (value NULL: no state), as just
 * read; request_cache_write comes before a write of the key joins the
 * batch, and stores its image once the batch is committed.  A map's whole
 * image is never cached, its entries are (request_entry_cache,
 * request_entry_write): a write of a map's whole key takes all its entries
 * out.
 */
static void
request_cache_key(const Request *r, const char *mkey, uint32 mklen, RocksCacheKey *ck)
{
	rocks_cache_key(ck, r->h.state_id, r->key, r->h.keylen,
					rocks_host->key_hash(r->key, r->h.keylen), mkey, mklen);
}

/*
 * Whether the worker stores what it reads and writes of a request's key:
 * not for a state whose keys sessions do not read in the cache, where they
 * would only take the place of others (and a compaction may change them).
 * Its writes still take the key out.
 */
static bool
request_stores(const Request *r)
{
	return !(r->h.flags & ROCKS_REQUEST_UNCACHED);
}

static void
request_cache(const Request *r, const char *value, uint32 len)
{
	RocksCacheKey ck;

	if (!rocks_cache_kind(r->h.kind) || r->h.kind == STATE_KIND_MAP || !request_stores(r))
		return;
	request_cache_key(r, NULL, 0, &ck);
	rocks_cache_store(&ck, value, len);
}

static void
request_cache_write(const Request *r, const char *value, uint32 len)
{
	RocksCacheKey ck;

	if (!rocks_cache_kind(r->h.kind))
		return;
	if (r->h.kind == STATE_KIND_MAP)
	{
		rocks_cache_forget_key(r->h.state_id, r->key, r->h.keylen);
		return;
	}
	request_cache_key(r, NULL, 0, &ck);
	rocks_cache_write(&ck, value, len, !request_stores(r));
}

/* A write whose image only RocksDB makes (a merge): the key stays out. */
static void
request_cache_forget(const Request *r)
{
	RocksCacheKey ck;

	if (!rocks_cache_kind(r->h.kind))
		return;
	request_cache_key(r, NULL, 0, &ck);
	rocks_cache_write(&ck, NULL, 0, true);
}

/* A map entry as RocksDB stores it (rocks_map_value), or NULL: none. */
static void
request_entry_cache(const Request *r, const char *mkey, uint32 mklen,
					const char *stored, uint32 len)
{
	RocksCacheKey ck;

	if (!request_stores(r))
		return;
	request_cache_key(r, mkey, mklen, &ck);
	rocks_cache_store(&ck, stored, len);
}

static void
request_entry_write(const Request *r, const char *mkey, uint32 mklen,
					const char *stored, uint32 len)
{
	RocksCacheKey ck;

	request_cache_key(r, mkey, mklen, &ck);
	rocks_cache_write(&ck, stored, len, !request_stores(r));
}

static void
reply_bool(StringInfo reply, bool b)
{
	appendStringInfoChar(reply, b ? 1 : 0);
}

static void
reply_int64(StringInfo reply, int64 v)
{
	appendBinaryStringInfo(reply, (const char *) &v, sizeof(v));
}

/* GET: [found][image] */
static void
handle_get(Request *r, StringInfo reply)
{
	if (r->h.kind == STATE_KIND_MAP)
	{
		int			at;

		reply_bool(reply, true);
		at = reply->len;
		if (map_image(r->cf, &r->rkey, reply, 0) == 0)
		{
			reply->len = at - 1;
			reply_bool(reply, false);
		}
	}
	else
	{
		size_t		vlen;
		char	   *v = rocks_get(r->cf, r->rkey.data, r->rkey.len, &vlen);

		reply_bool(reply, v != NULL);
		request_cache(r, v, (uint32) vlen);
		if (v)
		{
			appendBinaryStringInfo(reply, v, vlen);
			rocksdb_free(v);
		}
	}
}

/* Does a key have state?  (Any map entry, for a map.) */
static bool
key_exists(Request *r)
{
	size_t		vlen;
	char	   *v;

	if (r->h.kind == STATE_KIND_MAP)
		return map_image(r->cf, &r->rkey, NULL, 1) > 0;
	v = rocks_get(r->cf, r->rkey.data, r->rkey.len, &vlen);
	if (v)
		rocksdb_free(v);
	return v != NULL;
}

static void
key_delete(Request *r)
{
	if (r->h.kind == STATE_KIND_MAP)
	{
		StringInfoData end;

		initStringInfo(&end);
		rocks_prefix_end(&r->rkey, &end);
		rocksdb_writebatch_delete_range_cf(rocks.batch, r->cf, r->rkey.data, r->rkey.len,
										   end.data, end.len);
		pfree(end.data);
	}
	else
		rocksdb_writebatch_delete_cf(rocks.batch, r->cf, r->rkey.data, r->rkey.len);
}

/* A CAS request, read: see handle_cas. */
typedef struct CasRequest
{
	uint8		flags;
	const char *mkey;
	uint32		mkeylen;
	const char *expected;
	uint32		explen;
	const char *image;
	uint32		imagelen;
} CasRequest;

static void
cas_parse(const Request *r, CasRequest *c)
{
	const char *p = r->rest;
	uint32		left = r->restlen;

	if (left < 1 + sizeof(uint32))
		elog(ERROR, "state_backend: short request");
	c->flags = (uint8) p[0];
	memcpy(&c->mkeylen, p + 1, sizeof(uint32));
	p += 1 + sizeof(uint32);
	left -= 1 + sizeof(uint32);
	if (left < c->mkeylen || left - c->mkeylen < sizeof(uint32))
		elog(ERROR, "state_backend: short request");
	c->mkey = p;
	p += c->mkeylen;
	left -= c->mkeylen;
	memcpy(&c->explen, p, sizeof(uint32));
	p += sizeof(uint32);
	left -= sizeof(uint32);
	if (left < c->explen)
		elog(ERROR, "state_backend: short request");
	c->expected = p;
	c->image = p + c->explen;
	c->imagelen = left - c->explen;
}

/*
 * CAS: [flags][map key length][map key][expected length][expected][new
 * image].  With ROCKS_CAS_EXPECTED the key (with ROCKS_CAS_MAP_ENTRY: its
 * map entry, whose value is then never NULL) must hold the expected image,
 * without it the key must have no state; then the new image is stored, or
 * the key removed (ROCKS_CAS_REMOVE).  Reply [done] and, if not,
 * [found][current image].
 */
static void
handle_cas(Request *r, StringInfo reply)
{
	CasRequest	c;
	StringInfoData k;
	size_t		curlen;
	char	   *cur;
	const char *curval;
	uint32		curvallen;
	bool		entry;
	bool		same;

	cas_parse(r, &c);
	entry = (c.flags & ROCKS_CAS_MAP_ENTRY) != 0;
	initStringInfo(&k);
	if (entry)
		rocks_map_key(&k, &r->rkey, c.mkey, c.mkeylen);
	else
		appendBinaryStringInfo(&k, r->rkey.data, r->rkey.len);
	cur = rocks_get(r->cf, k.data, k.len, &curlen);
	curval = cur;
	curvallen = (uint32) curlen;
	if (cur && entry)
		rocks_map_value_read(cur, curlen, &curval, &curvallen);
	same = (c.flags & ROCKS_CAS_EXPECTED) ?
		(curval != NULL && curvallen == c.explen && memcmp(curval, c.expected, c.explen) == 0) :
		cur == NULL && !entry;
	if (!same)
	{
		if (entry)
			request_entry_cache(r, c.mkey, c.mkeylen, cur, (uint32) curlen);
		else
			request_cache(r, cur, (uint32) curlen);
	}
	else if (c.flags & ROCKS_CAS_REMOVE)
	{
		if (entry)
			request_entry_write(r, c.mkey, c.mkeylen, NULL, 0);
		else
			request_cache_write(r, NULL, 0);
		if (cur)
		{
			rocksdb_writebatch_delete_cf(rocks.batch, r->cf, k.data, k.len);
			if (entry)
				request_log(r, STATE_CHANGE_MAP_REMOVE, c.mkey, c.mkeylen, NULL, 0, false);
			else
				request_log(r, STATE_CHANGE_REMOVE, NULL, 0, NULL, 0, false);
			rocks_commit_written();
		}
	}
	else if (entry)
	{
		StringInfoData v;

		initStringInfo(&v);
		rocks_map_value(&v, c.image, c.imagelen);
		request_entry_write(r, c.mkey, c.mkeylen, v.data, v.len);
		rocksdb_writebatch_put_cf(rocks.batch, r->cf, k.data, k.len, v.data, v.len);
		request_log(r, STATE_CHANGE_MAP_PUT, c.mkey, c.mkeylen, c.image, c.imagelen, false);
		rocks_commit_written();
		pfree(v.data);
	}
	else
	{
		request_cache_write(r, c.image, c.imagelen);
		rocksdb_writebatch_put_cf(rocks.batch, r->cf, k.data, k.len, c.image, c.imagelen);
		request_log(r, STATE_CHANGE_PUT, NULL, 0, c.image, c.imagelen, false);
		rocks_commit_written();
	}
	reply_bool(reply, same);
	if (!same)
	{
		reply_bool(reply, cur != NULL);
		if (cur)
			appendBinaryStringInfo(reply, cur, curlen);
	}
	if (cur)
		rocksdb_free(cur);
	pfree(k.data);
}

/*
 * FOLD: [StateFold][value image]; the worker folds the value into the
 * key's state with a built-in function and replies the result image.  The
 * worker is the only writer, so read, fold and write are atomic.
 */
static void
handle_fold(Request *r, StringInfo reply)
{
	StateFold	fold;
	const char *in;
	uint32		inlen;
	size_t		curlen;
	char	   *cur;

	if (r->restlen < sizeof(StateFold))
		elog(ERROR, "state_backend: short fold request");
	memcpy(&fold, r->rest, sizeof(StateFold));
	in = r->rest + sizeof(StateFold);
	inlen = r->restlen - sizeof(StateFold);

	cur = rocks_get(r->cf, r->rkey.data, r->rkey.len, &curlen);
	PG_TRY();
	{
		rocks_host->fold_builtin(&fold, cur, (uint32) curlen, in, inlen, reply);
	}
	PG_FINALLY();
	{
		if (cur)
			rocksdb_free(cur);
	}
	PG_END_TRY();
	request_cache_write(r, reply->data, reply->len);
	rocksdb_writebatch_put_cf(rocks.batch, r->cf, r->rkey.data, r->rkey.len, reply->data, reply->len);
	request_log(r, STATE_CHANGE_PUT, NULL, 0, reply->data, reply->len, false);
	rocks_commit_written();
}

/*
 * request_map_entry reads the map entry that a request's [map key] names:
 * its RocksDB key goes to k (initialised here, the caller's to free); the
 * stored value is returned (rocksdb_free it), or NULL when there is none.
 */
static char *
request_map_entry(Request *r, StringInfo k, size_t *vlen)
{
	initStringInfo(k);
	rocks_map_key(k, &r->rkey, r->rest, r->restlen);
	return rocks_get(r->cf, k->data, k->len, vlen);
}

/* MAP_GET: request [map key]; reply [found][isnull][value]. */
static void
handle_map_get(Request *r, StringInfo reply)
{
	StringInfoData k;
	size_t		vlen;
	char	   *v = request_map_entry(r, &k, &vlen);

	request_entry_cache(r, r->rest, r->restlen, v, (uint32) vlen);
	reply_bool(reply, v != NULL);
	if (v)
	{
		const char *value;
		uint32		len;

		rocks_map_value_read(v, vlen, &value, &len);
		reply_bool(reply, value == NULL);
		if (value)
			appendBinaryStringInfo(reply, value, len);
		rocksdb_free(v);
	}
	pfree(k.data);
}

/* MAP_PUT: request [map key length][map key][stored value (rocks_keys.c)]. */
static void
handle_map_put(Request *r)
{
	StringInfoData k;
	uint32		mklen;

	if (r->restlen < sizeof(uint32))
		elog(ERROR, "state_backend: short request");
	memcpy(&mklen, r->rest, sizeof(uint32));
	if (r->restlen < sizeof(uint32) + mklen + 1)
		elog(ERROR, "state_backend: short request");
	initStringInfo(&k);
	rocks_map_key(&k, &r->rkey, r->rest + sizeof(uint32), mklen);
	request_entry_write(r, r->rest + sizeof(uint32), mklen, r->rest + sizeof(uint32) + mklen,
						r->restlen - sizeof(uint32) - mklen);
	rocksdb_writebatch_put_cf(rocks.batch, r->cf, k.data, k.len,
							  r->rest + sizeof(uint32) + mklen,
							  r->restlen - sizeof(uint32) - mklen);
	if (r->h.flags & ROCKS_REQUEST_LOGGED)
	{
		const char *value;
		uint32		vlen;

		rocks_map_value_read(r->rest + sizeof(uint32) + mklen,
							 r->restlen - sizeof(uint32) - mklen, &value, &vlen);
		request_log(r, STATE_CHANGE_MAP_PUT, r->rest + sizeof(uint32), mklen,
					value, vlen, value == NULL);
	}
	pfree(k.data);
}

/* MAP_REMOVE: request [map key]; reply [existed]. */
static void
handle_map_remove(Request *r, StringInfo reply)
{
	StringInfoData k;
	size_t		vlen;
	char	   *v = request_map_entry(r, &k, &vlen);

	if (v)
	{
		rocksdb_free(v);
		request_entry_write(r, r->rest, r->restlen, NULL, 0);
		rocksdb_writebatch_delete_cf(rocks.batch, r->cf, k.data, k.len);
		request_log(r, STATE_CHANGE_MAP_REMOVE, r->rest, r->restlen, NULL, 0, false);
		rocks_commit_written();
	}
	else
		request_entry_cache(r, r->rest, r->restlen, NULL, 0);
	reply_bool(reply, v != NULL);
	pfree(k.data);
}

/* LENGTH: elements of a list, entries of a map. */
static void
handle_length(Request *r, StringInfo reply)
{
	int64		n = 0;

	if (r->h.kind == STATE_KIND_MAP)
		n = map_image(r->cf, &r->rkey, NULL, 0);
	else
	{
		size_t		vlen;
		char	   *v = rocks_get(r->cf, r->rkey.data, r->rkey.len, &vlen);

		PG_TRY();
		{
			if (v && r->h.kind == STATE_KIND_LIST)
				n = rocks_host->list_image_count(v, (uint32) vlen);
			else if (v)
				n = 1;
		}
		PG_FINALLY();
		{
			if (v)
				rocksdb_free(v);
		}
		PG_END_TRY();
	}
	reply_int64(reply, n);
}

/*
 * SCAN pages through a state, a key group of it, or one key's map:
 * request [key group or -1][one key's map?][resume after: length, key];
 * reply [more?][cursor: length, key] then pairs (format/records.h) up to
 * about SCAN_PAGE bytes, ending at a key boundary.  For whole keys a
 * pair's key is the key image and its value the whole image; for one
 * key's map, the map key and the value (NULL for NULL).  The cursor is the
 * last RocksDB key returned.
 */
#define SCAN_PAGE	(16 * 1024)

typedef struct ScanPage
{
	Request    *r;
	bool		map_of_key;
	const char *after;
	uint32		afterlen;
	StringInfo	reply;			/* the records */
	bool		more;
	RocksKeyRows rows;			/* map state: the key being gathered */
	StringInfoData last;		/* last RocksDB key taken */
} ScanPage;

static void
scan_put(void *arg, const char *key, uint32 keylen, const char *image, uint32 imagelen)
{
	ScanPage   *s = arg;

	rocks_put_pair(s->reply, key, keylen, image, imagelen);
}

static bool
scan_add(void *arg, const char *k, size_t klen, const char *v, size_t vlen)
{
	ScanPage   *s = arg;
	RocksRowKey rk;

	if (s->afterlen > 0 && klen == s->afterlen && memcmp(k, s->after, klen) == 0)
		return true;
	rocks_split_key(k, klen, &rk);

	if (s->map_of_key)
	{
		if (s->reply->len >= SCAN_PAGE)
		{
			s->more = true;
			return false;
		}
		rocks_map_record(s->reply, rk.mkey, rk.mklen, v, vlen);
	}
	else if (s->r->h.kind == STATE_KIND_MAP)
	{
		/* A page ends between keys: the next one starts with this row. */
		if (rocks_rows_new_key(&s->rows, rk.key, rk.keylen))
		{
			rocks_rows_end(&s->rows, scan_put, s);
			if (s->reply->len >= SCAN_PAGE)
			{
				s->more = true;
				return false;
			}
		}
		rocks_rows_add(&s->rows, k, klen, v, vlen, scan_put, s);
	}
	else
	{
		if (s->reply->len >= SCAN_PAGE)
		{
			s->more = true;
			return false;
		}
		rocks_put_pair(s->reply, rk.key, rk.keylen, v, (uint32) vlen);
	}
	resetStringInfo(&s->last);
	appendBinaryStringInfo(&s->last, k, klen);
	return true;
}

static void
handle_scan(Request *r, StringInfo reply)
{
	ScanPage	s;
	int32		key_group;
	const char *p = r->rest;
	StringInfoData from;
	StringInfoData to;
	StringInfoData recs;

	if (r->restlen < 9)
		elog(ERROR, "state_backend: short request");
	memcpy(&key_group, p, sizeof(int32));
	s.r = r;
	s.map_of_key = p[4] != 0;
	memcpy(&s.afterlen, p + 5, sizeof(uint32));
	if (r->restlen < 9 + s.afterlen)
		elog(ERROR, "state_backend: short request");
	s.after = p + 9;
	initStringInfo(&recs);
	s.reply = &recs;
	s.more = false;
	rocks_rows_init(&s.rows);
	initStringInfo(&s.last);
	initStringInfo(&from);
	initStringInfo(&to);

	if (s.map_of_key)
	{
		appendBinaryStringInfo(&from, r->rkey.data, r->rkey.len);
		rocks_prefix_end(&r->rkey, &to);
	}
	else if (key_group >= 0)
		rocks_key_group_range(key_group, &from, &to);
	else
		rocks_state_range(&from, &to);
	if (s.afterlen > 0)
	{
		resetStringInfo(&from);
		appendBinaryStringInfo(&from, s.after, s.afterlen);
	}

	rocks_scan(rocks.db, rocks.ropts, r->cf, from.data, from.len, to.data, to.len,
			   scan_add, &s);
	/* A map state's page ends between keys, so only the last key is left. */
	if (!s.map_of_key && r->h.kind == STATE_KIND_MAP && !s.more)
		rocks_rows_end(&s.rows, scan_put, &s);
	reply_bool(reply, s.more);
	appendBinaryStringInfo(reply, (const char *) &s.last.len, sizeof(uint32));
	appendBinaryStringInfo(reply, s.last.data, s.last.len);
	appendBinaryStringInfo(reply, recs.data, recs.len);
}



static void
handle_truncate(Request *r, StringInfo reply)
{
	int64		n = rocks_count_keys(rocks.db, rocks.ropts, r->cf, r->h.kind == STATE_KIND_MAP);
	char	   *err = NULL;
	StringInfoData from;
	StringInfoData to;

	initStringInfo(&from);
	initStringInfo(&to);
	rocks_state_range(&from, &to);
	rocks_commit();
	/*
	 * WAL first (rocks_wal_flush): the range is deleted for good at once.
	 * A deletion that then fails has the instance fail (no write after it);
	 * the next start applies the record again, which is harmless.
	 */
	if (r->h.flags & ROCKS_REQUEST_LOGGED)
	{
		request_log(r, STATE_CHANGE_TRUNCATE, NULL, 0, NULL, 0, false);
		rocks_wal_flush(rocks.batch_lsn);
	}
	rocksdb_delete_range_cf(rocks.db, rocks.wopts, r->cf, from.data, from.len,
							to.data, to.len, &err);
	/* Marked first: sessions then store nothing of the state in the cache. */
	rocks_view_mark_all();
	rocks_cache_forget_state(r->h.state_id);
	if (err)
		rocks.failed = true;
	rocks_check(err, "delete a range");
	/* The position the instance holds, with the record's end. */
	rocks_commit();
	reply_int64(reply, n);
}


static void
handle_size(Request *r, StringInfo reply)
{
	int64		n = rocks_count_keys(rocks.db, rocks.ropts, r->cf, r->h.kind == STATE_KIND_MAP);
	int64		bytes = rocks_property_int(r->cf, "rocksdb.total-sst-files-size") +
		rocks_property_int(r->cf, "rocksdb.cur-size-all-mem-tables");

	reply_int64(reply, n);
	reply_int64(reply, bytes);
}

/*
 * COMPACT: [start] [twice]: start a compaction of the state's column family
 * from end to end (start 1), in two passes (twice 1), or look at it (start
 * 0); reply the status (rocks_instance.c).  RocksDB's threads do the work
 * while the worker goes on serving.
 */
static void
handle_compact(Request *r, StringInfo reply)
{
	if (r->restlen < 2)
		elog(ERROR, "state_backend: short request");
	appendStringInfoChar(reply, (char) rocks_compact_request(rocks.db, r->h.state_id, r->cf,
															 r->rest[0] != 0, r->rest[1] != 0));
}

/* Whether a request reads nothing but its own key (a map's: its entries). */
static bool
op_reads_its_key(RocksReqKind op)
{
	switch (op)
	{
		case ROCKS_REQ_GET:
		case ROCKS_REQ_REMOVE:
		case ROCKS_REQ_CAS:
		case ROCKS_REQ_FOLD:
		case ROCKS_REQ_MAP_GET:
		case ROCKS_REQ_MAP_REMOVE:
		case ROCKS_REQ_LENGTH:
			return true;
		default:
			return false;
	}
}

/* Whether a request may write to the instance. */
static bool
op_writes(RocksReqKind op)
{
	switch (op)
	{
		case ROCKS_REQ_GET:
		case ROCKS_REQ_MAP_GET:
		case ROCKS_REQ_SCAN:
		case ROCKS_REQ_LENGTH:
		case ROCKS_REQ_SIZE:
			return false;
		default:
			return true;
	}
}

/*
 * Writes are refused before they reach RocksDB when its file system is
 * nearly full (rocks_check_space); the file system is looked at every
 * 10 ms while there is room, at every write while there is not.
 */
static void
check_space_now_and_then(void)
{
	static TimestampTz last_ok = 0;
	TimestampTz now;

	/* A staged commit's writes: their room was checked before its commit record. */
	if (rocks_commit_held)
		return;
	now = GetCurrentTimestamp();
	if (now - last_ok < 10 * 1000)
		return;
	rocks_check_space();
	last_ok = now;
}

/* handle_remove removes a key; the reply says whether it was there. */
static void
handle_remove(Request *r, StringInfo reply)
{
	bool		existed = key_exists(r);

	if (existed)
	{
		request_cache_write(r, NULL, 0);
		key_delete(r);
		request_log(r, STATE_CHANGE_REMOVE, NULL, 0, NULL, 0, false);
		rocks_commit_written();
	}
	else
		request_cache(r, NULL, 0);
	reply_bool(reply, existed);
}

/*
 * The requests that read, by kind: each handler answers in reply, after
 * the session's earlier writes are committed.
 */
typedef void (*RequestHandler) (Request *r, StringInfo reply);

static const RequestHandler read_handlers[] = {
	[ROCKS_REQ_GET] = handle_get,
	[ROCKS_REQ_REMOVE] = handle_remove,
	[ROCKS_REQ_CAS] = handle_cas,
	[ROCKS_REQ_FOLD] = handle_fold,
	[ROCKS_REQ_MAP_GET] = handle_map_get,
	[ROCKS_REQ_MAP_REMOVE] = handle_map_remove,
	[ROCKS_REQ_SCAN] = handle_scan,
	[ROCKS_REQ_LENGTH] = handle_length,
	[ROCKS_REQ_TRUNCATE] = handle_truncate,
	[ROCKS_REQ_SIZE] = handle_size,
	[ROCKS_REQ_COMPACT] = handle_compact,
};

/*
 * rocks_handle_request runs one state request from a session.  Writes
 * that answer nothing are gathered in a batch, committed before the next
 * read and at the end of the pass (STATE_REQUEST_PASS_END).  Returns
 * whether a reply was produced; at the end of a session's requests of a
 * round (STATE_REQUEST_ROUND_END), whether the batch holds writes of that
 * session, which its replies must wait for.
 */
bool
rocks_handle_request(RocksReqKind op, const char *payload, uint32 len, StringInfo reply)
{
	Request		r;
	int			before;

	Assert(op != ROCKS_REQ_STAGE && op != ROCKS_REQ_STAGE_PREPARE && op != ROCKS_REQ_STAGE_APPLY);
	if (op == STATE_REQUEST_ROUND_END)
		return rocks.db != NULL && round_left_writes();
	if (op == STATE_REQUEST_PASS_END)
	{
		if (rocks.db == NULL)
			return false;

		/*
		 * The sessions whose replies wait are told of any error here instead:
		 * what the batch holds must then never be written, by a later commit
		 * or otherwise.  The instance fails, and the worker exits; if the
		 * batch held changes of logged states, whose records are in WAL, the
		 * server's processes restart and WAL's replay writes them
		 * (rocks_close), so that the instance is not left behind WAL and its
		 * standbys.  Unlogged changes are lost, as the errors said.
		 */
		PG_TRY();
		{
			/* A read's commit in the pass may have failed with others' writes in it. */
			rocks_check_not_failed();
			FAULT_POINT_HOST("write.rocksdb_group_commit");
			rocks_commit();
		}
		PG_CATCH();
		{
			rocks.failed = true;
			PG_RE_THROW();
		}
		PG_END_TRY();
		return false;
	}
	if (op == ROCKS_REQ_FIGURES)
	{
		int64		figures[ROCKS_FIGURE_COUNT];

		if (rocks_figures(figures))
			appendBinaryStringInfo(reply, (const char *) figures, sizeof(figures));
		return true;
	}
	if (op == STATE_REQUEST_SYNC)
	{
		/* Writes gathered wait for the pass's commit, and this reply with them. */
		if (rocks.db && rocks_registry_changed())
		{
			rocks_commit();
			rocks_sync_registry();
		}
		return true;
	}
	if (op_writes(op))
	{
		FAULT_POINT_HOST("write.rocksdb_request");
		/* Nothing more goes to WAL for a batch that will not be written. */
		rocks_check_not_failed();
		check_space_now_and_then();
	}
	request_parse(payload, len, &r);
	before = rocksdb_writebatch_count(rocks.batch);
	switch (op)
	{
		case ROCKS_REQ_OPEN:
			return true;		/* request_parse created the family */
		case ROCKS_REQ_PUT:
		case ROCKS_REQ_APPEND:
		case ROCKS_REQ_MAP_PUT:
			/* Sessions' views ask the worker for this key until the batch is in. */
			rocks_view_mark_key(r.h.state_id, r.key, r.h.keylen);
			break;
		default:
			break;
	}
	switch (op)
	{
		case ROCKS_REQ_PUT:
			/* A map's entries all leave the cache, its image is not kept. */
			request_cache_write(&r, r.rest, r.restlen);
			if (r.h.kind == STATE_KIND_MAP)
				map_store_image(r.cf, &r.rkey, r.rest, r.restlen);
			else
				rocksdb_writebatch_put_cf(rocks.batch, r.cf, r.rkey.data, r.rkey.len,
										  r.rest, r.restlen);
			request_log(&r, STATE_CHANGE_PUT, NULL, 0, r.rest, r.restlen, false);
			pending_key_written(&r, before);
			return false;
		case ROCKS_REQ_APPEND:
			request_cache_forget(&r);
			rocksdb_writebatch_merge_cf(rocks.batch, r.cf, r.rkey.data, r.rkey.len,
										r.rest, r.restlen);
			request_log(&r, STATE_CHANGE_APPEND, NULL, 0, r.rest, r.restlen, false);
			pending_key_written(&r, before);
			return false;
		case ROCKS_REQ_MAP_PUT:
			handle_map_put(&r);
			pending_key_written(&r, before);
			return false;
		default:
			break;
	}

	/*
	 * The rest read: the writes gathered go first, unless the request reads
	 * only its own key and none of them is of that key.
	 */
	if (!op_reads_its_key(op) || !pending_key_absent(&r))
	{
		rocks_commit();
		before = rocksdb_writebatch_count(rocks.batch);
	}
	if ((size_t) op >= lengthof(read_handlers) || read_handlers[op] == NULL)
		elog(ERROR, "state_backend: unexpected rocksdb request %d", (int) op);

	/*
	 * A read that may write marks its key now, after that commit published
	 * what came before: a mark must not be published before its write is
	 * in.  (A truncate marks every key once it is done.)
	 */
	if (op_writes(op) && op != ROCKS_REQ_COMPACT && op != ROCKS_REQ_TRUNCATE)
		rocks_view_mark_key(r.h.state_id, r.key, r.h.keylen);
	read_handlers[op] (&r, reply);
	if (op_writes(op) && op_reads_its_key(op))
		pending_key_written(&r, before);
	return true;
}
