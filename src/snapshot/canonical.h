/*
 * snapshot/canonical.h
 *		The canonical (send/receive) form of keys and state images, and the
 *		per-database worker that rewrites a snapshot's files into it.
 */
#ifndef STATE_BACKEND_CANONICAL_H
#define STATE_BACKEND_CANONICAL_H

#include "common/codec.h"

/* The codecs of one state's key, value and map key types. */
typedef struct StateCodecs
{
	StateKind	kind;
	bool		ttl;			/* values carry deadlines (format/records.h) */
	TypeCodec	key;
	TypeCodec	value;
	TypeCodec	map_key;
} StateCodecs;

extern void canonical_codecs_init(StateCodecs *c, const StateDesc *desc,
								  MemoryContext mcxt);
extern bool state_image_ok(const StateCodecs *c, bool is_key, const char *img,
						   uint32 len);
extern void canonical_from_native(StateCodecs *c, bool is_key, const char *img,
								  uint32 len, StringInfo out);
extern void canonical_to_native(StateCodecs *c, bool is_key, const char *img,
								uint32 len, StringInfo out);

extern void canonical_convert_snapshot(int64 id, const StateDesc *descs, int ndescs);

#endif							/* STATE_BACKEND_CANONICAL_H */
