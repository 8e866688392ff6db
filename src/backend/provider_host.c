/*
 * backend/provider_host.c
 *		What the host offers a backend through the provider API
 *		(api/state_backend_api.h, StateBackendHost): WAL, accounting, the
 *		image layouts, the channel to the state worker, its descriptors of
 *		states, snapshot files and settings.  Every backend, the built-in
 *		rocksdb as a library's, reaches the host only through these.
 */
#include "postgres.h"

#include "backend/keyed_backend.h"
#include "backend/providers.h"
#include "catalog/registry.h"
#include "common/codec.h"
#include "common/fault.h"
#include "common/fold.h"
#include "common/key_group.h"
#include "common/progress.h"
#include "common/settings.h"
#include "common/signing.h"
#include "common/types.h"
#include "format/desc_image.h"
#include "format/records.h"
#include "format/snapshot_format.h"
#include "format/state_wal.h"
#include "ipc/channel.h"

static XLogRecPtr
host_log_change(const StateTarget *st, uint8 kind, const StateKey *key,
				const char *mkey, uint32 mkeylen, const char *value, uint32 len, bool isnull)
{
	if (!st->info.logged)
		return InvalidXLogRecPtr;
	if (kind != STATE_CHANGE_PUT && kind != STATE_CHANGE_APPEND && kind != STATE_CHANGE_REMOVE &&
		kind != STATE_CHANGE_MAP_PUT && kind != STATE_CHANGE_MAP_REMOVE &&
		kind != STATE_CHANGE_TRUNCATE)
		elog(ERROR, "state_backend: unknown change kind 0x%x", kind);
	return state_wal_log(kind, st->info.id, key ? key->data : NULL, key ? key->len : 0,
						 mkey, mkeylen, value, len, isnull);
}

static void
host_add_usage(const StateTarget *st, int64 entries, int64 bytes)
{
	registry_add_usage(st->slot, entries, bytes);
}

static void
host_usage(const StateTarget *st, int64 *entries, int64 *bytes)
{
	registry_usage(st->slot, entries, bytes);
}

static void
host_put_entry(StringInfo records, uint32 state_id, const char *key, uint32 keylen,
			   const char *image, uint32 imagelen)
{
	record_put_entry(records, state_id, key, keylen, image, imagelen);
}

static void
map_image_corrupt(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("a stored map image is damaged")));
}

/*
 * map_image_scan walks a map image once, raising data_corrupted where it is
 * malformed; returns its pairs, and the pair of mkey (when given and there:
 * *at its offset, -1 when absent).
 */
static int64
map_image_scan(const char *img, uint32 len, const char *mkey, uint32 mkeylen,
			   RecordPair *pair, int64 *at)
{
	uint32		off = 0;
	uint32		start = 0;
	RecordPair	p;
	RecordRead	r;
	int64		n = 0;

	if (at)
		*at = -1;
	while ((r = record_next_pair(img, len, &off, &p)) == RECORD_OK)
	{
		if (mkey && *at < 0 && p.keylen == mkeylen && memcmp(p.key, mkey, mkeylen) == 0)
		{
			*pair = p;
			*at = start;
		}
		start = off;
		n++;
	}
	if (r != RECORD_END)
		map_image_corrupt();
	return n;
}

static bool
host_map_image_find(const char *img, uint32 len, const char *mkey, uint32 mkeylen,
					const char **value, uint32 *vallen, bool *isnull)
{
	RecordPair	p;
	int64		at;

	(void) map_image_scan(img, len, mkey, mkeylen, &p, &at);
	if (at < 0)
		return false;
	*value = p.value;
	*vallen = p.vallen;
	*isnull = p.value == NULL;
	return true;
}

/* out gets img without the pair of mkey; false (nothing written) when absent. */
static bool
map_image_without(StringInfo out, const char *img, uint32 len, const char *mkey,
				  uint32 mkeylen)
{
	RecordPair	p;
	int64		at;

	(void) map_image_scan(img, len, mkey, mkeylen, &p, &at);
	if (at < 0)
		return false;
	appendBinaryStringInfo(out, img, (int) at);
	appendBinaryStringInfo(out, img + at + p.rawlen, (int) (len - at - p.rawlen));
	return true;
}

static void
host_map_image_put(StringInfo out, const char *img, uint32 len, const char *mkey,
				   uint32 mkeylen, const char *value, uint32 vallen, bool isnull)
{
	if (!map_image_without(out, img, len, mkey, mkeylen))
		appendBinaryStringInfo(out, img, (int) len);
	record_put_pair(out, mkey, mkeylen, isnull ? NULL : value, vallen);
}

static bool
host_map_image_remove(StringInfo out, const char *img, uint32 len, const char *mkey,
					  uint32 mkeylen)
{
	return map_image_without(out, img, len, mkey, mkeylen);
}

static int64
host_map_image_count(const char *img, uint32 len)
{
	return map_image_scan(img, len, NULL, 0, NULL, NULL);
}

static void
host_map_image_iterate(const char *img, uint32 len, StateEntryFn fn, void *arg)
{
	uint32		off = 0;
	RecordPair	p;

	/* Checked whole first: fn never sees part of a damaged image. */
	(void) map_image_scan(img, len, NULL, 0, NULL, NULL);
	while (record_next_pair(img, len, &off, &p) == RECORD_OK)
		fn(arg, p.key, p.keylen, p.value, p.vallen);
}

static int64
host_list_image_count(const char *img, uint32 len)
{
	uint32		off = 0;
	const char *data;
	uint32		datalen;
	int64		n = 0;
	RecordRead	r;

	while ((r = record_next_elem(img, len, &off, &data, &datalen)) == RECORD_OK)
		n++;
	if (r != RECORD_END)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("a stored list image is damaged")));
	return n;
}

static void
host_channel_call(int32 provider_id, uint16 kind, const char *payload, uint32 len,
				  StringInfo reply, bool long_running)
{
	if (kind >= STATE_REQUEST_MAX_KIND && kind != STATE_REQUEST_SYNC)
		elog(ERROR, "state_backend: request kind %u is the host's", kind);
	channel_call((uint16) provider_id, kind, payload, len, reply, long_running);
}

static void
host_channel_post(int32 provider_id, uint16 kind, const char *payload, uint32 len)
{
	if (kind >= STATE_REQUEST_MAX_KIND)
		elog(ERROR, "state_backend: request kind %u is the host's", kind);
	channel_post((uint16) provider_id, kind, payload, len);
}

/* ------------------------------------------------------------ the worker and WAL */

static void
host_applied_lsn(XLogRecPtr lsn)
{
	/* Only what the worker wrote for a session's requests is waited for. */
	if (state_wal_replaying() == InvalidXLogRecPtr)
		channel_worker_note_lsn(lsn);
}

/* ------------------------------------------------------------ states by id */

static bool
host_state_get(int slot, uint32 id, StateInfo *info, bool *hidden)
{
	StateDesc	desc;

	if (!registry_get(slot, id, &desc, hidden))
		return false;
	state_info_of(&desc, info);
	return true;
}

static int
host_state_find(uint32 id, StateInfo *info)
{
	StateDesc	desc;
	int			slot = registry_find(id, &desc);

	if (slot >= 0)
		state_info_of(&desc, info);
	return slot;
}

static bool
host_state_stored(uint32 id, StringInfo image, bool *hidden)
{
	StateDesc	desc;

	if (!registry_get_stored(id, &desc, hidden))
		return false;
	state_desc_image_put(image, &desc);
	return true;
}

static bool
host_image_info(const char *image, uint32 len, StateInfo *info, const char **problem)
{
	StateDesc	desc;

	if (!state_desc_image_get(&desc, image, len))
		return false;
	state_info_of(&desc, info);
	*problem = state_desc_problem(&desc, state_backend_max_parallelism);
	return true;
}

static bool
host_adopt(const char *image, uint32 len)
{
	StateDesc	desc;

	if (!state_desc_image_get(&desc, image, len) ||
		state_desc_problem(&desc, state_backend_max_parallelism) != NULL)
		elog(ERROR, "state_backend: a backend adopts a descriptor this server cannot take");
	return registry_adopt(&desc);
}

/* ------------------------------------------------------------ keys, folds, TTL, digests */

static void
host_fold_builtin(const StateFold *fold, const char *cur, uint32 curlen,
				  const char *in, uint32 inlen, StringInfo out)
{
	TypeCodec	codec;
	FmgrInfo	flinfo;
	Datum		a;
	Datum		b;

	if (!state_fold_type_ok(fold->type, fold->fn))
		elog(ERROR, "state_backend: the worker cannot fold with function %u", fold->fn);
	if (cur == NULL)
	{
		appendBinaryStringInfo(out, in, inlen);
		return;
	}
	memset(&codec, 0, sizeof(codec));
	codec.typlen = fold->typlen;
	codec.typbyval = fold->typbyval;
	codec.mcxt = CurrentMemoryContext;
	a = codec_decode(&codec, cur, curlen);
	b = codec_decode(&codec, in, inlen);
	fmgr_info(fold->fn, &flinfo);
	codec_encode(&codec, state_fold(fold->kind, &flinfo, fold->collation, a, b), out);
}

static int64
host_ttl_now(void)
{
	return record_ttl_now();
}

static bool
host_ttl_expired(const char *img, uint32 len, int64 now)
{
	return record_ttl_expired(img, len, now);
}

static uint32
host_ttl_compact(StateKind layout, char *img, uint32 len, int64 now)
{
	return record_ttl_compact(layout, img, len, now);
}

static void *
host_digest_begin(void)
{
	return file_digest_begin();
}

static void
host_digest_add(void *digest, const void *data, size_t len)
{
	file_digest_add((FileDigest *) digest, data, len);
}

static void
host_digest_end(void *digest, char *hex)
{
	file_digest_end((FileDigest *) digest, hex);
}

static void
host_digest_discard(void *digest)
{
	file_digest_discard((FileDigest *) digest);
}

const StateBackendHost state_backend_host = {
	.api_version = STATE_BACKEND_API_VERSION,
	.size = sizeof(StateBackendHost),
	.register_backend = keyed_backend_register,
	.fold_call = keyed_fold_call,
	.log_change = host_log_change,
	.add_usage = host_add_usage,
	.usage = host_usage,
	.progress = progress_beat,
	.yield = progress_yield,
	.put_entry = host_put_entry,
	.map_image_find = host_map_image_find,
	.map_image_put = host_map_image_put,
	.map_image_remove = host_map_image_remove,
	.map_image_count = host_map_image_count,
	.map_image_iterate = host_map_image_iterate,
	.list_image_count = host_list_image_count,
	.channel_call = host_channel_call,
	.channel_post = host_channel_post,
	.faults_armed = &state_backend_faults_armed,
	.fault_point = fault_point_reached,
	.in_worker = channel_is_worker,
	.wake_worker = channel_wake_worker,
	.posts_sync = channel_sync,
	.posts_forget = channel_forget_pending,
	.posts_applied = channel_posts_applied,
	.remote_change = state_wal_note_remote,
	.applied_lsn = host_applied_lsn,
	.replaying = state_wal_replaying,
	.replayed = state_wal_replayed,
	.state_get = host_state_get,
	.state_find = host_state_find,
	.states_version = registry_version,
	.state_stored = host_state_stored,
	.image_info = host_image_info,
	.adopt = host_adopt,
	.reserve_id = registry_reserve_id,
	.native_path = snapshot_writer_native_path,
	.native_written = snapshot_writer_set_native,
	.max_parallelism = &state_backend_max_parallelism,
	.track_stats = &state_backend_track_stats,
	.key_hash = key_image_hash,
	.fold_builtin = host_fold_builtin,
	.ttl_now = host_ttl_now,
	.ttl_expired = host_ttl_expired,
	.ttl_compact = host_ttl_compact,
	.digest_begin = host_digest_begin,
	.digest_add = host_digest_add,
	.digest_end = host_digest_end,
	.digest_discard = host_digest_discard,
	.digest_file = file_digest_of,
};

StaticAssertDecl(STATE_DIGEST_HEX_LEN == SIGNING_HEX_LEN,
				 "the API's digest length is the host's");
