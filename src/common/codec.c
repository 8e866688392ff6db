/*
 * common/codec.c
 *		Typed datums to byte images and back, in the form states keep them.
 *
 * An image is a datum's bytes without any header: byval and fixed-length
 * types give their typlen bytes, varlena types their detoasted,
 * uncompressed payload, composites a null flag and length-prefixed image
 * per attribute.  Equal values of a type thus have equal images, which is
 * what keys need (equality and hashing are on images), and no image refers
 * to TOAST.  The canonical, send/receive form of snapshots is not here.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/tupmacs.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "mb/pg_wchar.h"
#include "utils/fmgroids.h"
#include "utils/builtins.h"
#include "utils/syscache.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "common/codec.h"

/*
 * codec_init fills a codec for a type.  Everything it allocates lives in
 * mcxt, so a codec can be cached in a function's fn_extra.
 */
void
codec_init(TypeCodec *codec, Oid typid, MemoryContext mcxt)
{
	Oid			basetype = getBaseType(typid);

	memset(codec, 0, sizeof(TypeCodec));
	codec->typid = typid;
	codec->mcxt = mcxt;
	get_typlenbyvalalign(typid, &codec->typlen, &codec->typbyval,
						 &codec->typalign);
	codec->text_like = basetype == TEXTOID || basetype == VARCHAROID ||
		basetype == BPCHAROID || codec->typlen == -2;

	if (type_is_rowtype(basetype) && basetype != RECORDOID)
	{
		MemoryContext old = MemoryContextSwitchTo(mcxt);

		codec->tupdesc = lookup_rowtype_tupdesc_copy(basetype, -1);
		codec->atts = palloc0(sizeof(TypeCodec) * codec->tupdesc->natts);
		MemoryContextSwitchTo(old);
		for (int i = 0; i < codec->tupdesc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(codec->tupdesc, i);

			if (!att->attisdropped)
				codec_init(&codec->atts[i], att->atttypid, mcxt);
		}
	}
}

static void
codec_encode_composite(const TypeCodec *codec, Datum value, StringInfo buf)
{
	HeapTupleHeader th = DatumGetHeapTupleHeader(value);
	HeapTupleData tuple;
	int			natts = codec->tupdesc->natts;
	Datum	   *values = palloc(sizeof(Datum) * natts);
	bool	   *nulls = palloc(sizeof(bool) * natts);

	tuple.t_len = HeapTupleHeaderGetDatumLength(th);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = th;
	heap_deform_tuple(&tuple, codec->tupdesc, values, nulls);

	for (int i = 0; i < natts; i++)
	{
		char		isnull;
		uint32		len;
		int			lenpos;

		if (TupleDescAttr(codec->tupdesc, i)->attisdropped)
			continue;
		isnull = nulls[i] ? 1 : 0;
		appendBinaryStringInfo(buf, &isnull, 1);
		if (nulls[i])
			continue;
		lenpos = buf->len;
		len = 0;
		appendBinaryStringInfo(buf, (char *) &len, sizeof(len));
		codec_encode(&codec->atts[i], values[i], buf);
		len = buf->len - lenpos - sizeof(len);
		memcpy(buf->data + lenpos, &len, sizeof(len));
	}
	pfree(values);
	pfree(nulls);
}

/*
 * codec_encode appends the image of a (non-NULL) datum to buf.
 */
void
codec_encode(const TypeCodec *codec, Datum value, StringInfo buf)
{
	if (codec->tupdesc != NULL)
		codec_encode_composite(codec, value, buf);
	else if (codec->typbyval)
	{
		char		tmp[sizeof(Datum)];

		store_att_byval(tmp, value, codec->typlen);
		appendBinaryStringInfo(buf, tmp, codec->typlen);
	}
	else if (codec->typlen > 0)
		appendBinaryStringInfo(buf, DatumGetPointer(value), codec->typlen);
	else if (codec->typlen == -1)
	{
		struct varlena *v = PG_DETOAST_DATUM_PACKED(value);

		appendBinaryStringInfo(buf, VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
		if ((Pointer) v != DatumGetPointer(value))
			pfree(v);
	}
	else
	{
		/* cstring */
		const char *s = DatumGetCString(value);

		appendBinaryStringInfo(buf, s, strlen(s));
	}
}

static pg_attribute_noreturn() void
codec_image_damaged(const TypeCodec *codec)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("damaged image of a value of type %s", format_type_be(codec->typid))));
}

static Datum
codec_decode_composite(const TypeCodec *codec, const char *image, uint32 len)
{
	int			natts = codec->tupdesc->natts;
	Datum	   *values = palloc0(sizeof(Datum) * natts);
	bool	   *nulls = palloc(sizeof(bool) * natts);
	const char *p = image;
	const char *end = image + len;
	HeapTuple	tuple;

	for (int i = 0; i < natts; i++)
	{
		uint32		alen;

		nulls[i] = true;
		if (TupleDescAttr(codec->tupdesc, i)->attisdropped)
			continue;
		if (p >= end)
			codec_image_damaged(codec);
		if (*p++ != 0)
			continue;
		if (end - p < (ptrdiff_t) sizeof(uint32))
			codec_image_damaged(codec);
		memcpy(&alen, p, sizeof(uint32));
		p += sizeof(uint32);
		if ((uint32) (end - p) < alen)
			codec_image_damaged(codec);
		values[i] = codec_decode(&codec->atts[i], p, alen);
		nulls[i] = false;
		p += alen;
	}
	tuple = heap_form_tuple(codec->tupdesc, values, nulls);
	return HeapTupleGetDatum(tuple);
}

/*
 * codec_image_ok tells whether an image has the shape codec_encode gives
 * values of the codec's type: the type's length for fixed-length types, no
 * NUL in a cstring, and for composites one well-framed image per attribute
 * and nothing after them, text in the server encoding.  What lies inside
 * other variable-length datums (an array's or a jsonb's own structure) is
 * not checked: see codec_images_checked.
 */
bool
codec_image_ok(const TypeCodec *codec, const char *image, uint32 len)
{
	const char *p = image;
	const char *end = image + len;

	if (codec->tupdesc == NULL)
	{
		if (codec->typlen > 0)
			return len == (uint32) codec->typlen;
		if (codec->typlen == -1 && len > MaxAllocSize - VARHDRSZ)
			return false;
		if (codec->typlen == -2 && memchr(image, '\0', len) != NULL)
			return false;
		return !codec->text_like || pg_verifymbstr(image, len, true);
	}
	check_stack_depth();
	for (int i = 0; i < codec->tupdesc->natts; i++)
	{
		uint32		alen;

		if (TupleDescAttr(codec->tupdesc, i)->attisdropped)
			continue;
		if (p >= end)
			return false;
		if (*p++ != 0)
			continue;
		if (end - p < (ptrdiff_t) sizeof(uint32))
			return false;
		memcpy(&alen, p, sizeof(uint32));
		p += sizeof(uint32);
		if ((uint32) (end - p) < alen || !codec_image_ok(&codec->atts[i], p, alen))
			return false;
		p += alen;
	}
	return p == end;
}

/*
 * codec_images_checked tells whether codec_image_ok proves an image safe to
 * hand to its type's own functions: any value of its shape is a value of
 * the type.  So it is for types passed by value, bytea and text's kinds,
 * a few fixed-length ones whose every bit pattern is a value, and
 * composites of those; not for numeric, jsonb, arrays, ranges and the
 * like, whose functions trust the structure inside the datum.
 */
bool
codec_images_checked(const TypeCodec *codec)
{
	Oid			basetype;

	if (codec->tupdesc != NULL)
	{
		for (int i = 0; i < codec->tupdesc->natts; i++)
			if (!TupleDescAttr(codec->tupdesc, i)->attisdropped &&
				!codec_images_checked(&codec->atts[i]))
				return false;
		return true;
	}
	if (codec->typbyval || codec->text_like)
		return true;
	basetype = getBaseType(codec->typid);
	return basetype == BYTEAOID || basetype == UUIDOID || basetype == MACADDROID ||
		basetype == MACADDR8OID || basetype == POINTOID || basetype == INTERVALOID ||
		basetype == TIMETZOID;
}

/*
 * codec_decode makes a datum, palloc'd in the current memory context, from
 * an image made by codec_encode.
 */
Datum
codec_decode(const TypeCodec *codec, const char *image, uint32 len)
{
	if (codec->tupdesc != NULL)
		return codec_decode_composite(codec, image, len);
	if (codec->typlen > 0 && len != (uint32) codec->typlen)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("image of %u bytes for a value of type %s, which has %d",
						len, format_type_be(codec->typid), codec->typlen)));
	if (codec->typbyval)
		return fetch_att(image, true, codec->typlen);
	if (codec->typlen > 0)
	{
		char	   *copy = palloc(codec->typlen);

		memcpy(copy, image, codec->typlen);
		return PointerGetDatum(copy);
	}
	if (codec->typlen == -1)
	{
		struct varlena *v = palloc(len + VARHDRSZ);

		SET_VARSIZE(v, len + VARHDRSZ);
		memcpy(VARDATA(v), image, len);
		return PointerGetDatum(v);
	}
	else
	{
		char	   *s = palloc(len + 1);

		memcpy(s, image, len);
		s[len] = '\0';
		return CStringGetDatum(s);
	}
}

static void
codec_setup_io(TypeCodec *codec)
{
	Oid			infunc;
	Oid			outfunc;
	bool		isvarlena;

	if (codec->io_ready)
		return;
	getTypeInputInfo(codec->typid, &infunc, &codec->typioparam);
	getTypeOutputInfo(codec->typid, &outfunc, &isvarlena);
	fmgr_info_cxt(infunc, &codec->input, codec->mcxt);
	fmgr_info_cxt(outfunc, &codec->output, codec->mcxt);
	codec->io_ready = true;
}

/* codec_input reads a value from text with the type's input function. */
Datum
codec_input(TypeCodec *codec, char *str)
{
	codec_setup_io(codec);
	return InputFunctionCall(&codec->input, str, codec->typioparam, -1);
}

/* codec_output writes a value as text with the type's output function. */
char *
codec_output(TypeCodec *codec, Datum value)
{
	codec_setup_io(codec);
	return OutputFunctionCall(&codec->output, value);
}

static void
codec_setup_binary(TypeCodec *codec)
{
	Oid			sendfunc;
	Oid			recvfunc;
	bool		isvarlena;

	if (codec->binary_ready)
		return;
	getTypeBinaryOutputInfo(codec->typid, &sendfunc, &isvarlena);
	getTypeBinaryInputInfo(codec->typid, &recvfunc, &codec->binary_ioparam);
	fmgr_info_cxt(sendfunc, &codec->send, codec->mcxt);
	fmgr_info_cxt(recvfunc, &codec->receive, codec->mcxt);
	codec->binary_ready = true;
}

/* codec_send returns a value in its type's binary (send) form. */
bytea *
codec_send(TypeCodec *codec, Datum value)
{
	codec_setup_binary(codec);
	return SendFunctionCall(&codec->send, value);
}

/*
 * codec_receive reads a value from its type's binary form, which must be
 * consumed entirely.
 */
Datum
codec_receive(TypeCodec *codec, const char *data, uint32 len)
{
	StringInfoData buf;
	Datum		d;

	codec_setup_binary(codec);
	buf.data = (char *) data;
	buf.len = (int) len;
	buf.maxlen = (int) len;
	buf.cursor = 0;
	d = ReceiveFunctionCall(&codec->receive, &buf, codec->binary_ioparam, -1);
	if (buf.cursor != buf.len)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("incorrect binary data format for type %s",
						format_type_be(codec->typid))));
	return d;
}

/*
 * codec_describe_type records what identifies a type outside this cluster
 * (schema and name) and the storage properties its images depend on.
 */
void
codec_describe_type(Oid typid, StateType *out)
{
	HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	Form_pg_type typ;

	memset(out, 0, sizeof(StateType));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for type %u", typid);
	typ = (Form_pg_type) GETSTRUCT(tup);
	out->oid = typid;
	namestrcpy(&out->nspname, get_namespace_name(typ->typnamespace));
	namestrcpy(&out->typname, NameStr(typ->typname));
	out->typlen = typ->typlen;
	out->typbyval = typ->typbyval;
	ReleaseSysCache(tup);
}

/*
 * codec_find_type returns the OID of a described type in the current
 * database, or InvalidOid when there is no such type.
 */
Oid
codec_find_type(const StateType *t)
{
	Oid			nsp = get_namespace_oid(NameStr(t->nspname), true);

	if (!OidIsValid(nsp))
		return InvalidOid;
	return GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
						   CStringGetDatum(NameStr(t->typname)),
						   ObjectIdGetDatum(nsp));
}

/*
 * codec_type_contains tells whether values of "type" hold values of
 * "inner": the type itself, or through a domain, an array's elements, a
 * range's bounds or a composite's attributes, however deep.  Images of such
 * a type depend on the layout of "inner".
 */
bool
codec_type_contains(Oid type, Oid inner)
{
	HeapTuple	tup;
	Form_pg_type typ;
	bool		found = false;

	check_stack_depth();
	if (type == inner)
		return true;
	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
	if (!HeapTupleIsValid(tup))
		return false;
	typ = (Form_pg_type) GETSTRUCT(tup);
	if (typ->typtype == TYPTYPE_DOMAIN)
		found = codec_type_contains(typ->typbasetype, inner);
	else if (OidIsValid(typ->typelem) && IsTrueArrayType(typ))
		found = codec_type_contains(typ->typelem, inner);
	else if (typ->typtype == TYPTYPE_RANGE)
		found = codec_type_contains(get_range_subtype(type), inner);
	else if (typ->typtype == TYPTYPE_MULTIRANGE)
		found = codec_type_contains(get_multirange_range(type), inner);
	else if (typ->typtype == TYPTYPE_COMPOSITE && OidIsValid(typ->typrelid))
	{
		/* The attributes from the catalog cache: no lock on the relation. */
		for (AttrNumber a = 1; !found; a++)
		{
			HeapTuple	atup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(typ->typrelid),
											   Int16GetDatum(a));
			Form_pg_attribute att;

			if (!HeapTupleIsValid(atup))
				break;
			att = (Form_pg_attribute) GETSTRUCT(atup);
			if (!att->attisdropped)
				found = codec_type_contains(att->atttypid, inner);
			ReleaseSysCache(atup);
		}
	}
	ReleaseSysCache(tup);
	return found;
}
