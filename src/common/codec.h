/*
 * common/codec.h
 *		Typed keys and values to byte images and back.
 */
#ifndef STATE_BACKEND_CODEC_H
#define STATE_BACKEND_CODEC_H

#include "access/tupdesc.h"
#include "fmgr.h"
#include "lib/stringinfo.h"

#include "common/types.h"

typedef struct TypeCodec
{
	Oid			typid;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	bool		text_like;		/* of text's storage: images in the server encoding */
	/* composite types: a codec per attribute */
	TupleDesc	tupdesc;
	struct TypeCodec *atts;
	/* text I/O, set up on first use */
	bool		io_ready;
	Oid			typioparam;
	FmgrInfo	input;
	FmgrInfo	output;
	/* binary I/O, set up on first use */
	bool		binary_ready;
	Oid			binary_ioparam;
	FmgrInfo	send;
	FmgrInfo	receive;
	MemoryContext mcxt;
} TypeCodec;

extern void codec_init(TypeCodec *codec, Oid typid, MemoryContext mcxt);
extern void codec_encode(const TypeCodec *codec, Datum value, StringInfo buf);
extern bool codec_image_ok(const TypeCodec *codec, const char *image, uint32 len);
extern bool codec_images_checked(const TypeCodec *codec);
extern Datum codec_decode(const TypeCodec *codec, const char *image, uint32 len);
extern Datum codec_input(TypeCodec *codec, char *str);
extern bytea *codec_send(TypeCodec *codec, Datum value);
extern Datum codec_receive(TypeCodec *codec, const char *data, uint32 len);
extern void codec_describe_type(Oid typid, StateType *out);
extern Oid	codec_find_type(const StateType *t);
extern bool codec_type_contains(Oid type, Oid inner);
extern char *codec_output(TypeCodec *codec, Datum value);

#endif							/* STATE_BACKEND_CODEC_H */
