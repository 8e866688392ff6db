/*
 * ipc/channel_internal.h
 *		What the two files of the channel share: its shared memory (per
 *		backend, a slot of two byte rings), the message headers, and the
 *		ring primitives (channel.c); the session's side is in channel.c,
 *		the worker's in channel_worker.c.
 *
 * A message is a header (payload length, sequence number, and the envelope or
 * the reply's SQLSTATE) followed by its payload.  Each ring has one
 * producer and one consumer: the session writes requests and reads
 * replies, the worker the other way round.
 */
#ifndef STATE_BACKEND_CHANNEL_INTERNAL_H
#define STATE_BACKEND_CHANNEL_INTERNAL_H

#include "port/atomics.h"
#include "storage/latch.h"
#include "utils/memutils.h"

#define CHANNEL_RING_SIZE		(32 * 1024)

/*
 * The largest payload of a request: the worker holds a whole request in
 * one buffer, which cannot pass 1 GB.  Buffers that grew past
 * CHANNEL_KEEP_BUFFER for one large message are given back afterwards.
 */
#define CHANNEL_MAX_PAYLOAD		(MaxAllocSize - 64 * 1024)
#define CHANNEL_KEEP_BUFFER		(1024 * 1024)

typedef struct ChannelRing
{
	pg_atomic_uint64 head;		/* bytes ever written */
	pg_atomic_uint64 tail;		/* bytes ever read */
	char		data[CHANNEL_RING_SIZE];
} ChannelRing;

typedef struct ChannelSlot
{
	pg_atomic_uint32 client_gen;	/* bumped by the session to resync */
	pg_atomic_uint32 worker_gen;	/* the generation the worker caught up with */
	pg_atomic_uint32 client_waiting;	/* the session waits for room to send */
	pg_atomic_uint32 worker_blocked;	/* the worker has replies pending */
	pg_atomic_uint32 last_seq;	/* the last sequence number a session used */
	pg_atomic_uint32 dirty;		/* a message may be half-written or half-read */
	pg_atomic_uint32 client_sleeping;	/* the session sleeps in latch_sleep */
	pg_atomic_uint64 wal_lsn;	/* end of WAL the worker wrote for its requests */
	Latch	   *client_latch;
	ChannelRing req;
	ChannelRing rep;
} ChannelSlot;

typedef struct ChannelShared
{
	Latch	   *worker_latch;
	pg_atomic_uint32 worker_sleeping;	/* the worker sleeps in latch_sleep */
	pg_atomic_uint32 worker_pid;
	pg_atomic_uint32 worker_generation;	/* bumped at every worker start */
	pg_atomic_uint64 heartbeat; /* bumped while the worker makes progress */
	pg_atomic_uint64 requests;	/* served since the server started */
	pg_atomic_uint64 passes;	/* passes over the slots that served some */
	pg_atomic_uint64 busy_us;	/* spent serving them */
	pg_atomic_uint32 spinners;	/* sessions spinning for a reply */
	pg_atomic_uint32 active_sessions;	/* sessions the worker served lately */
	pg_atomic_uint64 spins;		/* spins of sessions and the worker, since start */
	pg_atomic_uint64 spins_seen;	/* those that saw what they waited for */
	pg_atomic_uint64 reloads;	/* configuration reloads the worker applied */
	int			nslots;
	ChannelSlot slots[FLEXIBLE_ARRAY_MEMBER];
} ChannelShared;

/* Message headers. */
typedef struct RequestHeader
{
	uint32		len;
	uint32		seq;
	uint16		target;			/* a backend's id, or CHANNEL_TARGET_* */
	uint16		kind;			/* the target's; CHANNEL_WANT_REPLY */
} RequestHeader;

extern bool channel_spin_pays(void);
extern void channel_count_spin(int result);

#define CHANNEL_WANT_REPLY		0x8000

typedef struct ReplyHeader
{
	uint32		len;
	uint32		seq;
	int32		sqlerrcode;		/* 0: success, else the payload is the message */
} ReplyHeader;

/* channel.c */
extern ChannelShared *channel_shared;

/* Ring primitives: one producer, one consumer. */
extern uint64 channel_ring_used(ChannelRing *r);
extern Size channel_ring_put(ChannelRing *r, const char *src, Size len);
extern void channel_ring_peek(ChannelRing *r, Size skip, char *dst, Size len);
extern void channel_ring_consume(ChannelRing *r, Size len);

#endif							/* STATE_BACKEND_CHANNEL_INTERNAL_H */
