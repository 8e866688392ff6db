/*
 * contrib/lmdb/lmdb_ops.c
 *		The data operations of lmdb states (KeyedStateBackend): reads in
 *		place under the process's read transaction, writes under LMDB's one
 *		writer lock, each one write transaction.
 *
 * No PostgreSQL function that may wait or call user code runs inside a
 * write transaction: a merge folds outside it and stores the result only
 * if the key's image did not change meanwhile.  A logged state's change is
 * logged once LMDB committed it, so that WAL holds only what was written
 * (a commit can fail: a full map, a full disk); the writes lock
 * (lmdb_writes_lock, taken before LMDB's writer lock and let go of after
 * the log) keeps WAL in the order of the changes, and a snapshot's cut
 * holds it too, so that each change is in the snapshot with its record
 * after the cut's WAL position, or neither.  An error inside a write
 * transaction aborts it first, so nothing half-made is kept.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "nodes/pg_list.h"

#include "lmdb_internal.h"

/* What one write transaction changed in a state's keys and bytes. */
typedef struct LmdbUsage
{
	int64		entries;
	int64		bytes;
} LmdbUsage;

/* Store a key's image in txn, counting what changed. */
static void
store(MDB_txn *txn, const LmdbKey *k, const StateKey *key, const char *image, uint32 len,
	  LmdbUsage *u)
{
	MDB_val		mk = {k->len, k->data};
	MDB_val		mv;
	const char *old;
	uint32		oldlen;
	size_t		size = (k->digest ? sizeof(uint32) + key->len : 0) + len;
	int			rc;

	if (lmdb_get_in(txn, k, key, &old, &oldlen))
		u->bytes -= (int64) (k->len + oldlen);
	else
		u->entries++;
	u->bytes += (int64) (k->len + len);
	mv.mv_size = size;
	rc = mdb_put(txn, lmdb_dbi, &mk, &mv, MDB_RESERVE);
	if (rc != 0)
		lmdb_fail(rc, "write");
	if (k->digest)
	{
		memcpy(mv.mv_data, &key->len, sizeof(uint32));
		memcpy((char *) mv.mv_data + sizeof(uint32), key->data, key->len);
		memcpy((char *) mv.mv_data + sizeof(uint32) + key->len, image, len);
	}
	else
		memcpy(mv.mv_data, image, len);
}

/* Remove a key (whose image has oldlen bytes) in txn. */
static void
delete(MDB_txn *txn, const LmdbKey *k, uint32 oldlen, LmdbUsage *u)
{
	MDB_val		mk = {k->len, k->data};
	int			rc = mdb_del(txn, lmdb_dbi, &mk, NULL);

	if (rc != 0 && rc != MDB_NOTFOUND)
		lmdb_fail(rc, "remove");
	u->entries--;
	u->bytes -= (int64) (k->len + oldlen);
}

/*
 * One write: what it applies to and with, the scratch image it builds, and
 * what it changed.  Each kind of write is a WriteFn run by write_txn.
 */
typedef struct LmdbWrite
{
	const StateTarget *st;
	const StateKey *key;
	LmdbKey		k;
	const char *mkey;
	uint32		mkeylen;
	const char *value;
	uint32		len;
	bool		isnull;
	const char *expect;			/* replace, merge: the image it must find */
	uint32		expectlen;
	bool		expect_found;	/* merge: whether there was one */
	const void *batch;			/* put_many: its PutMany */
	bool		log_truncate;	/* remove_all: a truncate (a drop is logged by the host) */
	StringInfoData img;
	LmdbUsage	u;
	List	   *logs;			/* LmdbLog: to log once committed */
} LmdbWrite;

/* A change to log once the write transaction committed (pointers: the caller's). */
typedef struct LmdbLog
{
	uint8		kind;
	const StateKey *key;
	const char *mkey;
	uint32		mkeylen;
	const char *value;
	uint32		len;
	bool		isnull;
} LmdbLog;

/* A write's body, in txn: returns whether to commit (else it changed nothing). */
typedef bool (*WriteFn) (MDB_txn *txn, LmdbWrite *w);

static void
write_init(LmdbWrite *w, const StateTarget *st, const StateKey *key)
{
	memset(w, 0, sizeof(LmdbWrite));
	w->st = st;
	w->key = key;
	if (key)
		lmdb_key_make(&w->k, st->info.id, key);
	initStringInfo(&w->img);
}

/*
 * write_txn runs fn in one write transaction under LMDB's writer lock, and
 * commits what it did, or aborts when it did nothing or raised an error.
 * Returns fn's result.
 */
static bool
write_txn(LmdbWrite *w, WriteFn fn)
{
	MDB_txn    *txn;
	volatile bool keep = false;
	ListCell   *lc;

	list_free_deep(w->logs);
	w->logs = NIL;
	FAULT_POINT_HOST("write.lmdb_begin");
	lmdb_writes_lock();
	txn = lmdb_write_begin();
	PG_TRY();
	{
		keep = fn(txn, w);
		if (keep)
			lmdb_reserve_check((uint64) Max(w->u.bytes, 0) + w->img.len + w->len +
							   w->k.len);
	}
	PG_CATCH();
	{
		lmdb_write_abort();
		lmdb_writes_unlock();
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (!keep)
	{
		lmdb_write_abort();
		lmdb_writes_unlock();
		return false;
	}
	PG_TRY();
	{
		FAULT_POINT_HOST("write.lmdb_commit");
		lmdb_write_commit(txn);
	}
	PG_CATCH();
	{
		lmdb_write_abort();
		lmdb_writes_unlock();
		PG_RE_THROW();
	}
	PG_END_TRY();
	/* Written: now, and only now, WAL may say so. */
	foreach(lc, w->logs)
	{
		LmdbLog    *l = lfirst(lc);

		lmdb_host->log_change(w->st, l->kind, l->key, l->mkey, l->mkeylen, l->value, l->len,
							  l->isnull);
	}
	lmdb_writes_unlock();
	FAULT_POINT_HOST("write.lmdb_committed");
	if (w->u.entries != 0 || w->u.bytes != 0)
		lmdb_host->add_usage(w->st, w->u.entries, w->u.bytes);
	return true;
}

static void
write_done(LmdbWrite *w)
{
	list_free_deep(w->logs);
	pfree(w->img.data);
	if (w->k.data)
		pfree(w->k.data);
}

/* Note a change of a logged state, logged once the write committed. */
static void
log_key_change(LmdbWrite *w, uint8 kind, const StateKey *key, const char *value, uint32 len,
			   bool isnull)
{
	LmdbLog    *l;

	if (!w->st->info.logged)
		return;
	l = palloc(sizeof(LmdbLog));
	l->kind = kind;
	l->key = key;
	l->mkey = w->mkey;
	l->mkeylen = w->mkeylen;
	l->value = value;
	l->len = len;
	l->isnull = isnull;
	w->logs = lappend(w->logs, l);
}

static void
log_change(LmdbWrite *w, uint8 kind, const char *value, uint32 len, bool isnull)
{
	log_key_change(w, kind, w->key, value, len, isnull);
}

static bool
lm_get(const StateTarget *st, const StateKey *key, StringInfo out)
{
	LmdbKey		k;
	const char *img;
	uint32		len;
	bool		found;

	lmdb_key_make(&k, st->info.id, key);
	found = lmdb_get_in(lmdb_read_begin(), &k, key, &img, &len);
	if (found)
		appendBinaryStringInfo(out, img, (int) len);
	lmdb_read_end();
	pfree(k.data);
	return found;
}

static bool
w_put(MDB_txn *txn, LmdbWrite *w)
{
	store(txn, &w->k, w->key, w->value, w->len, &w->u);
	log_change(w, STATE_CHANGE_PUT, w->value, w->len, false);
	return true;
}

static void
lm_put(const StateTarget *st, const StateKey *key, const char *value, uint32 len)
{
	LmdbWrite	w;

	write_init(&w, st, key);
	w.value = value;
	w.len = len;
	(void) write_txn(&w, w_put);
	write_done(&w);
}

/* A restore's batch: what put_many stores, in one write transaction. */
typedef struct PutMany
{
	const StateKey *keys;
	const char *const *values;
	const uint32 *lens;
	int			n;
} PutMany;

static bool
w_put_many(MDB_txn *txn, LmdbWrite *w)
{
	const PutMany *p = w->batch;

	for (int i = 0; i < p->n; i++)
	{
		LmdbKey		k;

		lmdb_key_make(&k, w->st->info.id, &p->keys[i]);
		store(txn, &k, &p->keys[i], p->values[i], p->lens[i], &w->u);
		log_key_change(w, STATE_CHANGE_PUT, &p->keys[i], p->values[i], p->lens[i], false);
		pfree(k.data);
	}
	return true;
}

static void
lm_put_many(const StateTarget *st, const StateKey *keys, const char *const *values,
			const uint32 *lens, int n)
{
	LmdbWrite	w;
	PutMany		p = {keys, values, lens, n};

	write_init(&w, st, NULL);
	w.batch = &p;
	(void) write_txn(&w, w_put_many);
	write_done(&w);
}

static bool
w_remove(MDB_txn *txn, LmdbWrite *w)
{
	const char *img;
	uint32		len;

	if (!lmdb_get_in(txn, &w->k, w->key, &img, &len))
		return false;
	delete(txn, &w->k, len, &w->u);
	log_change(w, STATE_CHANGE_REMOVE, NULL, 0, false);
	return true;
}

static bool
lm_remove(const StateTarget *st, const StateKey *key)
{
	LmdbWrite	w;
	bool		found;

	write_init(&w, st, key);
	found = write_txn(&w, w_remove);
	write_done(&w);
	return found;
}

/*
 * One map entry's compare and set: its value must be expect (never a NULL
 * one); then it becomes value, or goes (value NULL), with the key when no
 * entry is left.
 */
static bool
w_replace_map_entry(MDB_txn *txn, LmdbWrite *w)
{
	const char *img;
	uint32		imglen;
	const char *cur;
	uint32		curlen;
	bool		isnull;

	if (w->expect == NULL || !lmdb_get_in(txn, &w->k, w->key, &img, &imglen) ||
		!lmdb_host->map_image_find(img, imglen, w->mkey, w->mkeylen, &cur, &curlen, &isnull) ||
		isnull || curlen != w->expectlen || memcmp(cur, w->expect, curlen) != 0)
		return false;
	if (w->value)
	{
		lmdb_host->map_image_put(&w->img, img, imglen, w->mkey, w->mkeylen, w->value, w->len,
								 false);
		store(txn, &w->k, w->key, w->img.data, w->img.len, &w->u);
		log_change(w, STATE_CHANGE_MAP_PUT, w->value, w->len, false);
		return true;
	}
	(void) lmdb_host->map_image_remove(&w->img, img, imglen, w->mkey, w->mkeylen);
	/* A map with no entries is no state, as in Flink. */
	if (w->img.len == 0)
		delete(txn, &w->k, imglen, &w->u);
	else
		store(txn, &w->k, w->key, w->img.data, w->img.len, &w->u);
	log_change(w, STATE_CHANGE_MAP_REMOVE, NULL, 0, false);
	return true;
}

/* A key's compare and set (expect NULL: the key has no state). */
static bool
w_replace(MDB_txn *txn, LmdbWrite *w)
{
	const char *img;
	uint32		imglen;
	bool		found = lmdb_get_in(txn, &w->k, w->key, &img, &imglen);

	if (w->expect ? !(found && imglen == w->expectlen &&
					  memcmp(img, w->expect, imglen) == 0) : found)
		return false;
	if (w->value)
		return w_put(txn, w);
	if (found)
	{
		delete(txn, &w->k, imglen, &w->u);
		log_change(w, STATE_CHANGE_REMOVE, NULL, 0, false);
	}
	return true;
}

static bool
lm_replace(const StateTarget *st, const StateKey *key, const char *mkey, uint32 mkeylen,
		   const char *expect, uint32 expectlen, const char *value, uint32 len)
{
	LmdbWrite	w;
	bool		same;

	write_init(&w, st, key);
	w.mkey = mkey;
	w.mkeylen = mkeylen;
	w.expect = expect;
	w.expectlen = expectlen;
	w.value = value;
	w.len = len;
	same = write_txn(&w, mkey ? w_replace_map_entry : w_replace);
	write_done(&w);
	return same;
}

static bool
w_append(MDB_txn *txn, LmdbWrite *w)
{
	const char *cur;
	uint32		curlen;

	if (lmdb_get_in(txn, &w->k, w->key, &cur, &curlen))
		appendBinaryStringInfo(&w->img, cur, (int) curlen);
	appendBinaryStringInfo(&w->img, w->value, (int) w->len);
	store(txn, &w->k, w->key, w->img.data, w->img.len, &w->u);
	log_change(w, STATE_CHANGE_APPEND, w->value, w->len, false);
	return true;
}

static void
lm_append(const StateTarget *st, const StateKey *key, const char *elems, uint32 len)
{
	LmdbWrite	w;

	write_init(&w, st, key);
	w.value = elems;
	w.len = len;
	(void) write_txn(&w, w_append);
	write_done(&w);
}

/* A merge's result is stored if the key's image is still the one folded. */
static bool
w_merge_store(MDB_txn *txn, LmdbWrite *w)
{
	const char *img;
	uint32		imglen;
	bool		now = lmdb_get_in(txn, &w->k, w->key, &img, &imglen);

	if (now != w->expect_found ||
		(now && (imglen != w->expectlen || memcmp(img, w->expect, imglen) != 0)))
		return false;
	return w_put(txn, w);
}

/*
 * A merge folds with no transaction open (the fold is PostgreSQL code),
 * then stores its result only if the key's image is still the one it
 * folded, and folds again otherwise.
 */
static void
lm_merge(const StateTarget *st, const StateKey *key, const char *value, uint32 len,
		 StateMergeFn fn, void *arg, const StateFold *fold, StringInfo out)
{
	LmdbWrite	w;
	StringInfoData cur;

	write_init(&w, st, key);
	initStringInfo(&cur);
	for (;;)
	{
		resetStringInfo(&cur);
		w.expect_found = lm_get(st, key, &cur);
		resetStringInfo(out);
		lmdb_host->fold_call(fn, st, key, w.expect_found ? cur.data : NULL, cur.len, value,
							 len, out, arg);
		w.expect = cur.data;
		w.expectlen = cur.len;
		w.value = out->data;
		w.len = out->len;
		if (write_txn(&w, w_merge_store))
			break;
		CHECK_FOR_INTERRUPTS();
	}
	pfree(cur.data);
	write_done(&w);
}

static bool
lm_map_get(const StateTarget *st, const StateKey *key, const char *mkey, uint32 mkeylen,
		   StringInfo out, bool *isnull)
{
	LmdbKey		k;
	const char *img;
	uint32		imglen;
	const char *v;
	uint32		vlen;
	bool		found;

	lmdb_key_make(&k, st->info.id, key);
	found = lmdb_get_in(lmdb_read_begin(), &k, key, &img, &imglen) &&
		lmdb_host->map_image_find(img, imglen, mkey, mkeylen, &v, &vlen, isnull);
	if (found && !*isnull)
		appendBinaryStringInfo(out, v, (int) vlen);
	lmdb_read_end();
	pfree(k.data);
	return found;
}

static bool
w_map_put(MDB_txn *txn, LmdbWrite *w)
{
	const char *cur = "";
	uint32		curlen = 0;

	(void) lmdb_get_in(txn, &w->k, w->key, &cur, &curlen);
	lmdb_host->map_image_put(&w->img, cur, curlen, w->mkey, w->mkeylen, w->value, w->len,
							 w->isnull);
	store(txn, &w->k, w->key, w->img.data, w->img.len, &w->u);
	log_change(w, STATE_CHANGE_MAP_PUT, w->value, w->len, w->isnull);
	return true;
}

static void
lm_map_put(const StateTarget *st, const StateKey *key, const char *mkey, uint32 mkeylen,
		   const char *value, uint32 len, bool isnull)
{
	LmdbWrite	w;

	write_init(&w, st, key);
	w.mkey = mkey;
	w.mkeylen = mkeylen;
	w.value = value;
	w.len = len;
	w.isnull = isnull;
	(void) write_txn(&w, w_map_put);
	write_done(&w);
}

static bool
w_map_remove(MDB_txn *txn, LmdbWrite *w)
{
	const char *cur;
	uint32		curlen;

	if (!lmdb_get_in(txn, &w->k, w->key, &cur, &curlen) ||
		!lmdb_host->map_image_remove(&w->img, cur, curlen, w->mkey, w->mkeylen))
		return false;
	/* A map with no entries is no state, as in Flink. */
	if (w->img.len == 0)
		delete(txn, &w->k, curlen, &w->u);
	else
		store(txn, &w->k, w->key, w->img.data, w->img.len, &w->u);
	log_change(w, STATE_CHANGE_MAP_REMOVE, NULL, 0, false);
	return true;
}

static bool
lm_map_remove(const StateTarget *st, const StateKey *key, const char *mkey, uint32 mkeylen)
{
	LmdbWrite	w;
	bool		found;

	write_init(&w, st, key);
	w.mkey = mkey;
	w.mkeylen = mkeylen;
	found = write_txn(&w, w_map_remove);
	write_done(&w);
	return found;
}

static void
lm_map_iterate(const StateTarget *st, const StateKey *key, StateEntryFn fn, void *arg)
{
	StringInfoData img;

	/* A copy: fn may call state functions, and must see no read open. */
	initStringInfo(&img);
	if (lm_get(st, key, &img))
		lmdb_host->map_image_iterate(img.data, img.len, fn, arg);
	pfree(img.data);
}

static int64
lm_length(const StateTarget *st, const StateKey *key)
{
	LmdbKey		k;
	const char *img;
	uint32		len;
	int64		n = 0;

	/* Counted in place (a damaged image raises with the read still open: reset at the next). */
	lmdb_key_make(&k, st->info.id, key);
	if (lmdb_get_in(lmdb_read_begin(), &k, key, &img, &len))
	{
		StateKind	layout = st->info.layout;

		n = layout == STATE_KIND_MAP ? lmdb_host->map_image_count(img, len) :
			layout == STATE_KIND_LIST ? lmdb_host->list_image_count(img, len) : 1;
	}
	lmdb_read_end();
	pfree(k.data);
	return n;
}

/* A batch of an iteration: [key length][image length][key][image] each. */
static void
batch_put(StringInfo b, const char *key, uint32 keylen, const char *img, uint32 imglen)
{
	appendBinaryStringInfo(b, (const char *) &keylen, sizeof(uint32));
	appendBinaryStringInfo(b, (const char *) &imglen, sizeof(uint32));
	appendBinaryStringInfo(b, key, (int) keylen);
	appendBinaryStringInfo(b, img, (int) imglen);
}

static void
batch_visit(const StringInfo b, StateEntryFn fn, void *arg)
{
	int			off = 0;

	while (off < b->len)
	{
		uint32		keylen;
		uint32		imglen;

		memcpy(&keylen, b->data + off, sizeof(uint32));
		memcpy(&imglen, b->data + off + sizeof(uint32), sizeof(uint32));
		off += 2 * sizeof(uint32);
		fn(arg, b->data + off, keylen, b->data + off + keylen, imglen);
		off += keylen + imglen;
	}
}

/* Entries copied per read transaction of an iteration. */
#define ITERATE_BATCH_BYTES		(1024 * 1024)
#define ITERATE_BATCH_ENTRIES	1024

/* One batch of an iteration, and where the next one starts. */
typedef struct IterateBatch
{
	StringInfoData entries;
	StringInfoData resume;		/* the LMDB key of the last entry taken */
	bool		skip_resume;	/* the first entry seen is that one */
	int			n;
	bool		more;
} IterateBatch;

static bool
iterate_entry(void *arg, const MDB_val *lkey, const char *key, uint32 keylen,
			  const char *img, uint32 imglen)
{
	IterateBatch *b = arg;

	if (b->skip_resume)
	{
		b->skip_resume = false;
		if (lkey->mv_size == (size_t) b->resume.len &&
			memcmp(lkey->mv_data, b->resume.data, b->resume.len) == 0)
			return true;
	}
	if (b->n >= ITERATE_BATCH_ENTRIES || b->entries.len >= ITERATE_BATCH_BYTES)
	{
		b->more = true;
		return false;
	}
	batch_put(&b->entries, key, keylen, img, imglen);
	resetStringInfo(&b->resume);
	appendBinaryStringInfo(&b->resume, lkey->mv_data, (int) lkey->mv_size);
	b->n++;
	return true;
}

/*
 * Every key of a state (or of one key group), in batches: each batch is
 * copied under a read transaction, which ends before fn sees it, since fn
 * may raise errors or call state functions.
 */
static void
lm_iterate(const StateTarget *st, int key_group, StateEntryFn fn, void *arg)
{
	char		prefix[LMDB_KEY_PREFIX];
	size_t		plen = key_group >= 0 ? LMDB_KEY_PREFIX : sizeof(uint32);
	IterateBatch b;

	lmdb_key_prefix(prefix, st->info.id, key_group >= 0 ? key_group : 0);
	initStringInfo(&b.entries);
	initStringInfo(&b.resume);
	appendBinaryStringInfo(&b.resume, prefix, (int) plen);
	b.skip_resume = false;
	do
	{
		MDB_val		from = {b.resume.len, b.resume.data};

		resetStringInfo(&b.entries);
		b.n = 0;
		b.more = false;
		lmdb_scan(lmdb_read_begin(), prefix, plen, &from, iterate_entry, &b);
		lmdb_read_end();
		batch_visit(&b.entries, fn, arg);
		b.skip_resume = true;
	} while (b.more);
	pfree(b.entries.data);
	pfree(b.resume.data);
}

/*
 * Remove every key of a state in one write transaction, counting them in
 * w->u, and log a truncate when asked.
 */
static bool
w_remove_all(MDB_txn *txn, LmdbWrite *w)
{
	char		prefix[LMDB_KEY_PREFIX];
	MDB_cursor *cur;
	MDB_val		k = {sizeof(uint32), prefix};
	MDB_val		v;
	int			rc = mdb_cursor_open(txn, lmdb_dbi, &cur);

	if (rc != 0)
		lmdb_fail(rc, "remove");
	lmdb_key_prefix(prefix, w->st->info.id, 0);
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
		 rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
	{
		if (k.mv_size < sizeof(uint32) || memcmp(k.mv_data, prefix, sizeof(uint32)) != 0)
			break;
		w->u.bytes -= (int64) (k.mv_size + v.mv_size);
		rc = mdb_cursor_del(cur, 0);
		if (rc != 0)
			break;
		w->u.entries--;
	}
	mdb_cursor_close(cur);
	if (rc != 0 && rc != MDB_NOTFOUND)
		lmdb_fail(rc, "remove");
	if (w->log_truncate)
		log_change(w, STATE_CHANGE_TRUNCATE, NULL, 0, false);
	return true;
}

static int64
remove_all(const StateTarget *st, bool log)
{
	LmdbWrite	w;

	write_init(&w, st, NULL);
	w.log_truncate = log;
	(void) write_txn(&w, w_remove_all);
	write_done(&w);
	return -w.u.entries;
}

static int64
lm_truncate(const StateTarget *st)
{
	return remove_all(st, true);
}

static void
lm_drop(const StateTarget *st, bool confirm)
{
	(void) remove_all(st, false);
}

static void
lm_size(const StateTarget *st, int64 *entries, int64 *bytes)
{
	lmdb_host->usage(st, entries, bytes);
}

/* The environment's figures, for state.worker. */
static void
lm_figures(StateFigureFn fn, void *arg)
{
	MDB_envinfo info;
	MDB_stat	stat;

	if (mdb_env_info(lmdb_env(), &info) != 0 || mdb_env_stat(lmdb_env(), &stat) != 0)
		return;
	fn(arg, "lmdb_map_bytes", (int64) info.me_mapsize, false);
	fn(arg, "lmdb_used_bytes", (int64) (info.me_last_pgno + 1) * stat.ms_psize, false);
	fn(arg, "lmdb_entries", (int64) stat.ms_entries, false);
	fn(arg, "lmdb_readers", (int64) info.me_numreaders, false);
}

const KeyedStateBackend lmdb_keyed_backend = {
	.name = "lmdb",
	.get = lm_get,
	.put = lm_put,
	.put_many = lm_put_many,
	.remove = lm_remove,
	.replace = lm_replace,
	.append = lm_append,
	.merge = lm_merge,
	.map_get = lm_map_get,
	.map_put = lm_map_put,
	.map_remove = lm_map_remove,
	.map_iterate = lm_map_iterate,
	.length = lm_length,
	.iterate = lm_iterate,
	.truncate = lm_truncate,
	.drop = lm_drop,
	.size = lm_size,
	.figures = lm_figures,
	.reserve = lmdb_reserve,
	.unreserve = lmdb_unreserve,
	.snapshot = &lmdb_snapshot_strategy,
};
