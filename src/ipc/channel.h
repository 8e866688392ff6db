/*
 * ipc/channel.h
 *		Request and reply streams between sessions and the state worker.
 *
 * Each backend has a slot of two byte rings in shared memory: requests
 * to the worker, replies from it.  A request either wants a reply (a round
 * trip) or is pipelined (the session goes on; a failure is reported as an
 * error reply that surfaces at the next round trip or sync of the same
 * statement).  Every request is an envelope: the target it is for (a
 * backend's id, or the worker's own requests) and a kind that the target
 * defines; what it means is up to the target.  The worker's dispatcher
 * (worker.c) hands it on.
 */
#ifndef STATE_BACKEND_CHANNEL_H
#define STATE_BACKEND_CHANNEL_H

#include "access/xlogdefs.h"
#include "lib/stringinfo.h"

#include "api/state_backend_api.h"
#include "common/shmem_parts.h"

/*
 * Targets besides a backend's id: the worker's own requests (snapshots),
 * and every backend that serves requests (the end of a round or a pass, a
 * sync; the kinds STATE_REQUEST_ROUND_END, STATE_REQUEST_PASS_END and
 * STATE_REQUEST_SYNC of the provider API).
 */
#define CHANNEL_TARGET_WORKER	0xFFFF
#define CHANNEL_TARGET_ALL		0xFFFE

/* The worker's own request kinds (CHANNEL_TARGET_WORKER). */
#define CHANNEL_WORKER_SNAPSHOT	1

extern const ShmemPart channel_part;

/* Session side. */
extern void channel_post(uint16 target, uint16 kind, const char *payload, uint32 len);
extern void channel_call(uint16 target, uint16 kind, const char *payload, uint32 len,
						 StringInfo reply, bool long_running);
extern int64 channel_call_int64(uint16 target, uint16 kind, const char *payload, uint32 len,
								bool long_running);
extern void channel_sync(void);
extern void channel_wake_worker(void);
extern void channel_forget_pending(void);
extern bool channel_posts_applied(void);
extern void channel_worker_figures(int *pid, uint64 *requests, uint64 *passes, uint64 *busy_us,
								  uint64 *spins, uint64 *spins_seen);
extern void channel_worker_reloaded(void);
extern uint64 channel_worker_reloads(void);
extern XLogRecPtr channel_session_lsn(void);

/* Worker side. */
/*
 * A handler runs one request and says whether it produced a reply.  After
 * a slot's requests of one pass it is called with CHANNEL_TARGET_ALL and
 * STATE_REQUEST_ROUND_END: true means writes gathered wait for the pass's
 * commit, and the slot's replies with them.  After a pass that kept any it
 * is called with STATE_REQUEST_PASS_END, the commit; its error is reported
 * to each session that waited as the failure of its last request of the
 * pass, and then none of their replies of the pass goes out.
 */
typedef bool (*ChannelHandler) (uint16 target, uint16 kind, const char *payload,
								uint32 len, StringInfo reply);
extern void channel_worker_begin(void);
extern void channel_worker_attach(void);
extern void channel_worker_detach(void);
extern void channel_worker_heartbeat(void);
extern bool channel_is_worker(void);
extern void channel_worker_spin(void);
extern void channel_worker_sleep(long timeout_ms);
extern bool channel_worker_serve(ChannelHandler handler, int budget);
extern void channel_worker_note_lsn(XLogRecPtr lsn);

#endif							/* STATE_BACKEND_CHANNEL_H */
