/*
 * ipc/channel.h
 *		Request and reply streams between sessions and the state worker.
 *
 * Each backend has a slot of two byte rings in shared memory: requests
 * to the worker, replies from it.  A request either wants a reply (a round
 * trip) or is pipelined (the session goes on; a failure is reported as an
 * error reply that surfaces at the next round trip or sync of the same
 * statement).  What the requests mean is up to backend/rocksdb/ and the
 * worker's dispatcher (worker.c).
 */
#ifndef STATE_BACKEND_CHANNEL_H
#define STATE_BACKEND_CHANNEL_H

#include "access/xlogdefs.h"
#include "lib/stringinfo.h"

/* Request kinds. */
typedef enum ChannelOp
{
	CHANNEL_OP_FLUSH = 0,		/* worker-internal: end of one slot's requests */
	CHANNEL_OP_SYNC,			/* nothing: the reply says all before it is done */
	CHANNEL_OP_OPEN,			/* a new state: create its storage */
	CHANNEL_OP_GET,
	CHANNEL_OP_PUT,
	CHANNEL_OP_REMOVE,
	CHANNEL_OP_APPEND,
	CHANNEL_OP_CAS,
	CHANNEL_OP_FOLD,
	CHANNEL_OP_MAP_GET,
	CHANNEL_OP_MAP_PUT,
	CHANNEL_OP_MAP_REMOVE,
	CHANNEL_OP_SCAN,
	CHANNEL_OP_LENGTH,
	CHANNEL_OP_TRUNCATE,
	CHANNEL_OP_SIZE,
	CHANNEL_OP_SNAPSHOT,
	CHANNEL_OP_RESTORE_NATIVE,
	CHANNEL_OP_COMPACT,
	CHANNEL_OP_FIGURES			/* rocksdb's own figures (state.worker) */
} ChannelOp;

extern Size channel_shmem_size(void);
extern void channel_shmem_init(void);

/* Session side. */
extern void channel_post(ChannelOp op, const char *payload, uint32 len);
extern void channel_call(ChannelOp op, const char *payload, uint32 len,
						 StringInfo reply, bool long_running);
extern int64 channel_call_int64(ChannelOp op, const char *payload, uint32 len,
								bool long_running);
extern void channel_sync(void);
extern void channel_wake_worker(void);
extern void channel_forget_pending(void);
extern bool channel_posts_applied(void);
extern void channel_worker_figures(int *pid, uint64 *requests, uint64 *busy_us);
extern XLogRecPtr channel_session_lsn(void);

/* Worker side. */
/*
 * A handler runs one request and says whether it produced a reply.  After
 * a slot's requests of one round it is called with CHANNEL_OP_FLUSH, so
 * that writes it gathered can be committed; an error then is reported to
 * the session as the failure of its last request of the round.
 */
typedef bool (*ChannelHandler) (ChannelOp op, const char *payload, uint32 len,
								StringInfo reply);
extern void channel_worker_begin(void);
extern void channel_worker_attach(void);
extern void channel_worker_detach(void);
extern void channel_worker_heartbeat(void);
extern bool channel_is_worker(void);
extern bool channel_worker_serve(ChannelHandler handler, int budget);
extern void channel_worker_note_lsn(XLogRecPtr lsn);

#endif							/* STATE_BACKEND_CHANNEL_H */
