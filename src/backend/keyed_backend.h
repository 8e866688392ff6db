/*
 * backend/keyed_backend.h
 *		KeyedStateBackend: the one interface between the layers above
 *		(sql/, snapshot/, state_ops.c) and the places where keyed state is
 *		kept, with each backend's part in snapshots (SnapshotStrategy).
 *
 * The SQL layer resolves a state, turns keys and values into byte images
 * (common/codec.c) and calls through this interface; it never reaches a
 * backend's storage otherwise.  Images are opaque bytes here: equal keys
 * have equal images.  Their layouts (list and map images) are defined once,
 * in format/records.h.  The implementations are backend/heap/heap_backend.c
 * (memory, filesystem) and backend/rocksdb/ (rocksdb).
 */
#ifndef STATE_BACKEND_KEYED_BACKEND_H
#define STATE_BACKEND_KEYED_BACKEND_H

#include "access/xlogdefs.h"
#include "lib/stringinfo.h"
#include "utils/guc.h"

#include "common/state_desc.h"
#include "common/fold.h"
#include "common/types.h"
#include "backend/providers.h"
#include "format/snapshot_format.h"

/* state_key_set fills a key from its image: hash and key group (keyed_backend.c). */
extern void state_key_set(StateKey *key, const char *data, uint32 len);

extern const KeyedStateBackend heap_keyed_backend;

/*
 * A batch of whole images of one state's keys, handed to its backend at
 * once (put_many, or put for each where it has none): restores and changes
 * load states through it.
 */
#define KEYED_BATCH_ENTRIES	1024
#define KEYED_BATCH_BYTES	(1024 * 1024)

typedef struct KeyedBatch
{
	const KeyedStateBackend *backend;
	StateTarget target;
	StringInfoData bytes;		/* the keys and images, as offsets below */
	int			n;
	uint32		keyoff[KEYED_BATCH_ENTRIES];
	uint32		keylen[KEYED_BATCH_ENTRIES];
	uint32		valoff[KEYED_BATCH_ENTRIES];
	uint32		vallen[KEYED_BATCH_ENTRIES];
} KeyedBatch;

extern void keyed_batch_init(KeyedBatch *b, const KeyedStateBackend *backend,
							 const StateTarget *target);
extern bool keyed_batch_add(KeyedBatch *b, const char *key, uint32 keylen,
							const char *value, uint32 vallen);
extern void keyed_batch_flush(KeyedBatch *b);

/* backend/keyed_backend.c; the registered backends are in providers.h. */
extern void keyed_backend_flush_all(void);
extern bool keyed_backend_kept_data(int backend);
extern void keyed_fold_call(StateMergeFn fn, const StateTarget *st, const StateKey *key,
							const char *cur, uint32 curlen, const char *in, uint32 inlen,
							StringInfo out, void *arg);

#endif							/* STATE_BACKEND_KEYED_BACKEND_H */
