/*
 * format/desc_image.c
 *		The stored image of a state descriptor: what WAL records of a new
 *		state and RocksDB's own copy of its descriptors hold.
 *
 * An image is a header, [magic, uint32][version, uint16][0, uint16], then
 * the descriptor's fields one after another in a fixed order, each at a
 * fixed width (integers in the server's byte order; names as a length byte
 * and their bytes).  Nothing of
 * the in-memory layout (padding, field order, array sizes) is stored, so
 * the struct may change without a new reader for every old size.
 *
 * Descriptors stored before this image was defined are the struct itself,
 * at one of six sizes; they are read by their size into a frozen copy of
 * that struct (StoredDesc), whatever the descriptor in memory has become.  Every reader checks each length
 * against the bytes it has.
 */
#include "postgres.h"

#include "format/desc_image.h"

#define DESC_IMAGE_MAGIC	0x53424431	/* "SBD1" */

/*
 * The struct as releases 1.0 to 1.2 stored it, frozen here so that the
 * descriptor in memory may change: the fields came in this order, and an
 * older release stored a prefix of them (the sizes below).
 */
typedef struct StoredDesc
{
	uint32		id;
	Oid			dbid;
	NameData	name;
	StateKind	kind;
	int			backend;
	StateReducer reducer;
	Oid			key_type;
	Oid			value_type;
	Oid			map_key_type;
	StateType	types[3];
	Oid			owner;
	NameData	owner_name;
	int			ngrants;
	StateGrant	grants[STATE_MAX_GRANTS];
	bool		logged;
	StateTtlUpdate ttl_update;
	StateTtlVisibility ttl_visibility;
	int64		ttl;
	int32		range_parts;
	int32		range_first;
	int32		range_last;
	Oid			aggregate;
	char		agg_signature[STATE_AGG_SIGNATURE_LEN];
	StateType	agg_type;
} StoredDesc;

/* The sizes of those stored before "logged", "ttl", "range_*", "agg*" came. */
#define STORED_SIZE_1_0			offsetof(StoredDesc, logged)
#define STORED_SIZE_LOGGED		offsetof(StoredDesc, ttl_update)
#define STORED_SIZE_TTL			offsetof(StoredDesc, range_parts)
#define STORED_SIZE_RANGE		offsetof(StoredDesc, aggregate)
/* That layout ended in padding to its int64's alignment, which was stored too. */
#define STORED_SIZE_RANGE_PADDED MAXALIGN(STORED_SIZE_RANGE)

/*
 * stored_desc_read fills d from a struct as an older release stored it;
 * false for a size none stored.  Fields a layout lacks are zero, and its
 * padding is not read as the fields that came after it.
 */
static bool
stored_desc_read(StateDesc *d, const char *stored, Size size)
{
	StoredDesc	o;

	if (size != sizeof(StoredDesc) && size != STORED_SIZE_RANGE &&
		size != STORED_SIZE_RANGE_PADDED && size != STORED_SIZE_TTL &&
		size != STORED_SIZE_LOGGED && size != STORED_SIZE_1_0)
		return false;
	memset(&o, 0, sizeof(o));
	if (size == STORED_SIZE_RANGE_PADDED && size != sizeof(StoredDesc))
		size = STORED_SIZE_RANGE;
	memcpy(&o, stored, Min(size, sizeof(StoredDesc)));
	d->id = o.id;
	d->dbid = o.dbid;
	d->name = o.name;
	d->kind = o.kind;
	d->backend = o.backend;
	d->reducer = o.reducer;
	/* The OIDs were kept twice then; the fields were the ones read. */
	memcpy(d->types, o.types, sizeof(d->types));
	d->types[STATE_TYPE_KEY].oid = o.key_type;
	d->types[STATE_TYPE_VALUE].oid = o.value_type;
	d->types[STATE_TYPE_MAP_KEY].oid = o.map_key_type;
	d->owner = o.owner;
	d->owner_name = o.owner_name;
	d->ngrants = o.ngrants;
	memcpy(d->grants, o.grants, sizeof(d->grants));
	d->logged = o.logged;
	d->ttl_update = o.ttl_update;
	d->ttl_visibility = o.ttl_visibility;
	d->ttl = o.ttl;
	d->range_parts = o.range_parts;
	d->range_first = o.range_first;
	d->range_last = o.range_last;
	d->aggregate = o.aggregate;
	memcpy(d->agg_signature, o.agg_signature, sizeof(d->agg_signature));
	d->agg_type = o.agg_type;
	d->version = 1;
	return true;
}

/* ------------------------------------------------------------ writing */

static void
put_u32(StringInfo out, uint32 v)
{
	appendBinaryStringInfo(out, (const char *) &v, sizeof(v));
}

static void
put_i64(StringInfo out, int64 v)
{
	appendBinaryStringInfo(out, (const char *) &v, sizeof(v));
}

static void
put_u8(StringInfo out, uint8 v)
{
	appendStringInfoChar(out, (char) v);
}

static void
put_name(StringInfo out, const char *name, Size room)
{
	size_t		len = strnlen(name, room - 1);

	put_u8(out, (uint8) len);
	appendBinaryStringInfo(out, name, (int) len);
}

static void
put_type(StringInfo out, const StateType *t)
{
	put_u32(out, t->oid);
	put_name(out, NameStr(t->nspname), NAMEDATALEN);
	put_name(out, NameStr(t->typname), NAMEDATALEN);
	put_u32(out, (uint32) (int32) t->typlen);
	put_u8(out, t->typbyval ? 1 : 0);
}

/* state_desc_image_put appends the image of a descriptor to out. */
void
state_desc_image_put(StringInfo out, const StateDesc *d)
{
	uint16		version = STATE_DESC_IMAGE_VERSION;
	uint16		zero = 0;
	size_t		siglen = strnlen(d->agg_signature, sizeof(d->agg_signature) - 1);

	put_u32(out, DESC_IMAGE_MAGIC);
	appendBinaryStringInfo(out, (const char *) &version, sizeof(version));
	appendBinaryStringInfo(out, (const char *) &zero, sizeof(zero));
	put_u32(out, d->id);
	put_u32(out, d->dbid);
	put_name(out, NameStr(d->name), NAMEDATALEN);
	put_u32(out, (uint32) d->kind);
	put_u32(out, (uint32) d->backend);
	put_u32(out, (uint32) d->reducer);
	for (int i = 0; i < 3; i++)
		put_type(out, &d->types[i]);
	put_u32(out, d->owner);
	put_name(out, NameStr(d->owner_name), NAMEDATALEN);
	put_u32(out, (uint32) d->ngrants);
	for (int i = 0; i < d->ngrants && i < STATE_MAX_GRANTS; i++)
	{
		put_u32(out, d->grants[i].role);
		put_u8(out, d->grants[i].privs);
	}
	put_u8(out, d->logged ? 1 : 0);
	put_u32(out, (uint32) d->ttl_update);
	put_u32(out, (uint32) d->ttl_visibility);
	put_i64(out, d->ttl);
	put_u32(out, (uint32) d->range_parts);
	put_u32(out, (uint32) d->range_first);
	put_u32(out, (uint32) d->range_last);
	put_u32(out, d->aggregate);
	put_u32(out, (uint32) siglen);
	appendBinaryStringInfo(out, d->agg_signature, (int) siglen);
	put_type(out, &d->agg_type);
	put_u8(out, d->transactional ? 1 : 0);
	put_u32(out, d->timer_handler);
	siglen = strnlen(d->timer_signature, sizeof(d->timer_signature) - 1);
	put_u32(out, (uint32) siglen);
	appendBinaryStringInfo(out, d->timer_signature, (int) siglen);
	put_u8(out, d->timer_event_time ? 1 : 0);
	put_u8(out, d->window_assigner);
	put_u8(out, d->window_contents);
	put_i64(out, d->window_size);
	put_i64(out, d->window_slide);
	put_i64(out, d->window_gap);
	put_i64(out, d->window_lateness);
	put_u8(out, d->watermark_by_data ? 1 : 0);
	put_i64(out, d->watermark_lag);
	put_i64(out, d->idle_timeout);
	put_u32(out, d->late_fn);
	siglen = strnlen(d->late_signature, sizeof(d->late_signature) - 1);
	put_u32(out, (uint32) siglen);
	appendBinaryStringInfo(out, d->late_signature, (int) siglen);
	put_u32(out, d->emit_table);
	siglen = strnlen(d->emit_table_name, sizeof(d->emit_table_name) - 1);
	put_u32(out, (uint32) siglen);
	appendBinaryStringInfo(out, d->emit_table_name, (int) siglen);
	put_u32(out, d->version);
	put_u32(out, d->replaces);
}

/* ------------------------------------------------------------ reading */

typedef struct Reader
{
	const char *p;
	Size		left;
	bool		ok;
} Reader;

static void
get_bytes(Reader *r, void *dst, Size n)
{
	if (!r->ok || r->left < n)
	{
		r->ok = false;
		memset(dst, 0, n);
		return;
	}
	memcpy(dst, r->p, n);
	r->p += n;
	r->left -= n;
}

static uint32
get_u32(Reader *r)
{
	uint32		v;

	get_bytes(r, &v, sizeof(v));
	return v;
}

static uint8
get_u8(Reader *r)
{
	uint8		v;

	get_bytes(r, &v, sizeof(v));
	return v;
}

/* A name of at most room - 1 bytes, NUL-terminated into dst. */
static void
get_name(Reader *r, char *dst, Size room)
{
	uint32		len = get_u8(r);

	memset(dst, 0, room);
	if (len >= room)
		r->ok = false;
	else
		get_bytes(r, dst, len);
}

static void
get_type(Reader *r, StateType *t)
{
	t->oid = get_u32(r);
	get_name(r, NameStr(t->nspname), NAMEDATALEN);
	get_name(r, NameStr(t->typname), NAMEDATALEN);
	t->typlen = (int16) (int32) get_u32(r);
	t->typbyval = get_u8(r) != 0;
}

static bool
read_image(StateDesc *d, Reader *r, uint16 version)
{
	uint32		ngrants;
	uint32		siglen;

	d->id = get_u32(r);
	d->dbid = get_u32(r);
	get_name(r, NameStr(d->name), NAMEDATALEN);
	d->kind = (StateKind) get_u32(r);
	d->backend = (int) get_u32(r);
	d->reducer = (StateReducer) get_u32(r);
	for (int i = 0; i < 3; i++)
		get_type(r, &d->types[i]);
	d->owner = get_u32(r);
	get_name(r, NameStr(d->owner_name), NAMEDATALEN);
	ngrants = get_u32(r);
	if (ngrants > STATE_MAX_GRANTS)
		return false;
	d->ngrants = (int) ngrants;
	for (uint32 i = 0; i < ngrants; i++)
	{
		d->grants[i].role = get_u32(r);
		d->grants[i].privs = get_u8(r);
	}
	d->logged = get_u8(r) != 0;
	d->ttl_update = (StateTtlUpdate) get_u32(r);
	d->ttl_visibility = (StateTtlVisibility) get_u32(r);
	get_bytes(r, &d->ttl, sizeof(d->ttl));
	d->range_parts = (int32) get_u32(r);
	d->range_first = (int32) get_u32(r);
	d->range_last = (int32) get_u32(r);
	d->aggregate = get_u32(r);
	siglen = get_u32(r);
	if (siglen >= sizeof(d->agg_signature))
		return false;
	get_bytes(r, d->agg_signature, siglen);
	get_type(r, &d->agg_type);
	if (version >= 2)
		d->transactional = get_u8(r) != 0;
	if (version >= 3)
	{
		d->timer_handler = get_u32(r);
		siglen = get_u32(r);
		if (siglen >= sizeof(d->timer_signature))
			return false;
		get_bytes(r, d->timer_signature, siglen);
		d->timer_event_time = get_u8(r) != 0;
	}
	if (version >= 4)
	{
		d->window_assigner = get_u8(r);
		d->window_contents = get_u8(r);
		get_bytes(r, &d->window_size, sizeof(d->window_size));
		get_bytes(r, &d->window_slide, sizeof(d->window_slide));
		get_bytes(r, &d->window_gap, sizeof(d->window_gap));
		get_bytes(r, &d->window_lateness, sizeof(d->window_lateness));
	}
	if (version >= 5)
	{
		d->watermark_by_data = get_u8(r) != 0;
		get_bytes(r, &d->watermark_lag, sizeof(d->watermark_lag));
		get_bytes(r, &d->idle_timeout, sizeof(d->idle_timeout));
		d->late_fn = get_u32(r);
		siglen = get_u32(r);
		if (siglen >= sizeof(d->late_signature))
			return false;
		get_bytes(r, d->late_signature, siglen);
		d->emit_table = get_u32(r);
		siglen = get_u32(r);
		if (siglen >= sizeof(d->emit_table_name))
			return false;
		get_bytes(r, d->emit_table_name, siglen);
	}
	d->version = version >= 6 ? get_u32(r) : 1;
	d->replaces = version >= 6 ? get_u32(r) : 0;
	return r->ok && r->left == 0;
}

/*
 * state_desc_image_get fills d from a stored descriptor: an image of this
 * file's, or the struct as stored before (by its size).  False when it is
 * neither; the caller then checks what it read (state_desc_problem).
 */
bool
state_desc_image_get(StateDesc *d, const char *img, Size len)
{
	Reader		r = {img, len, true};
	uint32		magic;
	uint16		version;
	uint16		zero;

	memset(d, 0, sizeof(StateDesc));
	if (len >= 8)
	{
		memcpy(&magic, img, sizeof(magic));
		if (magic == DESC_IMAGE_MAGIC)
		{
			get_u32(&r);
			get_bytes(&r, &version, sizeof(version));
			get_bytes(&r, &zero, sizeof(zero));
			if (version >= 1 && version <= STATE_DESC_IMAGE_VERSION && zero == 0 &&
				read_image(d, &r, version))
				return true;
			/* Not an image: an older struct whose id happens to read so. */
			memset(d, 0, sizeof(StateDesc));
		}
	}
	return stored_desc_read(d, img, len);
}
