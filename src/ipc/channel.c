/*
 * ipc/channel.c
 *		Request and reply streams between sessions and the state worker.
 *
 * Every backend owns one slot (by its PGPROC number) of two single-producer
 * single-consumer byte rings in shared memory.  A message is a header
 * (payload length, sequence number, and the op or the reply's SQLSTATE)
 * followed by its payload; messages larger than a ring stream through it.
 * The worker drains every slot's requests in turn, hands each to a
 * dispatcher, and writes replies back, keeping what does not fit yet in
 * local memory; nobody ever blocks on one ring while others wait.
 *
 * A session never waits without a timeout (state_backend.request_timeout)
 * and stays cancellable while no message is half-read.  If it gives up in
 * the middle of a message, the slot is resynchronised: the session bumps
 * the slot's generation, the worker drops what it held for the slot and
 * acknowledges, and both streams restart clean.
 *
 * The requests' meaning is in backend/rocksdb/ (sender, server) and
 * worker.c (dispatcher); this file only moves bytes.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/membuf.h"
#include "common/settings.h"
#include "ipc/channel.h"

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
	Latch	   *client_latch;
	ChannelRing req;
	ChannelRing rep;
} ChannelSlot;

typedef struct ChannelShared
{
	Latch	   *worker_latch;
	pg_atomic_uint32 worker_pid;
	pg_atomic_uint32 worker_generation;	/* bumped at every worker start */
	pg_atomic_uint64 heartbeat; /* bumped while the worker makes progress */
	int			nslots;
	ChannelSlot slots[FLEXIBLE_ARRAY_MEMBER];
} ChannelShared;

/* Message headers. */
typedef struct RequestHeader
{
	uint32		len;
	uint32		seq;
	uint32		op;				/* ChannelOp, CHANNEL_WANT_REPLY */
} RequestHeader;

#define CHANNEL_WANT_REPLY		0x100

typedef struct ReplyHeader
{
	uint32		len;
	uint32		seq;
	int32		sqlerrcode;		/* 0: success, else the payload is the message */
} ReplyHeader;

static ChannelShared *channel = NULL;

/* Session state. */
static ChannelSlot *my_slot = NULL;
static uint32 next_seq = 0;
static uint32 error_floor = 0;	/* error replies up to this seq are dropped */
static bool have_pending = false;	/* posted since the last round trip */
static uint32 sending_call = 0;	/* seq of a round trip being written, or 0 */
static uint32 last_generation = 0;	/* the worker of the last request */

/* The first error of a posted request taken while sending (see below). */
static int	deferred_code = 0;
static uint32 deferred_seq = 0;
static char *deferred_message = NULL;
static uint32 pending_generation = 0;	/* the worker they were posted to */

Size
channel_shmem_size(void)
{
	return add_size(offsetof(ChannelShared, slots),
					mul_size(sizeof(ChannelSlot), MaxBackends));
}

void
channel_shmem_init(void)
{
	bool		found;

	channel = ShmemInitStruct("state_backend channel", channel_shmem_size(), &found);
	if (found)
		return;
	channel->worker_latch = NULL;
	pg_atomic_init_u32(&channel->worker_pid, 0);
	pg_atomic_init_u32(&channel->worker_generation, 0);
	pg_atomic_init_u64(&channel->heartbeat, 0);
	channel->nslots = MaxBackends;
	for (int i = 0; i < channel->nslots; i++)
	{
		ChannelSlot *s = &channel->slots[i];

		pg_atomic_init_u32(&s->client_gen, 0);
		pg_atomic_init_u32(&s->worker_gen, 0);
		pg_atomic_init_u32(&s->client_waiting, 0);
		pg_atomic_init_u32(&s->worker_blocked, 0);
		pg_atomic_init_u32(&s->last_seq, 0);
		pg_atomic_init_u32(&s->dirty, 0);
		s->client_latch = NULL;
		pg_atomic_init_u64(&s->req.head, 0);
		pg_atomic_init_u64(&s->req.tail, 0);
		pg_atomic_init_u64(&s->rep.head, 0);
		pg_atomic_init_u64(&s->rep.tail, 0);
	}
}

/* Ring primitives: one producer, one consumer. */

static uint64
ring_used(ChannelRing *r)
{
	uint64		head = pg_atomic_read_u64(&r->head);

	pg_read_barrier();
	return head - pg_atomic_read_u64(&r->tail);
}

/* ring_put copies as much of src as fits; returns how much. */
static Size
ring_put(ChannelRing *r, const char *src, Size len)
{
	uint64		head = pg_atomic_read_u64(&r->head);
	uint64		tail = pg_atomic_read_u64(&r->tail);
	Size		room = CHANNEL_RING_SIZE - (Size) (head - tail);
	Size		n = Min(len, room);
	Size		off = head % CHANNEL_RING_SIZE;
	Size		first = Min(n, CHANNEL_RING_SIZE - off);

	if (n == 0)
		return 0;
	pg_memory_barrier();		/* read tail before overwriting what it freed */
	memcpy(r->data + off, src, first);
	memcpy(r->data, src + first, n - first);
	pg_write_barrier();
	pg_atomic_write_u64(&r->head, head + n);
	return n;
}

/* ring_peek copies len bytes at offset skip without consuming them. */
static void
ring_peek(ChannelRing *r, Size skip, char *dst, Size len)
{
	uint64		tail = pg_atomic_read_u64(&r->tail);
	Size		off = (tail + skip) % CHANNEL_RING_SIZE;
	Size		first = Min(len, CHANNEL_RING_SIZE - off);

	pg_read_barrier();
	memcpy(dst, r->data + off, first);
	memcpy(dst + first, r->data, len - first);
}

static void
ring_consume(ChannelRing *r, Size len)
{
	pg_memory_barrier();		/* finish reading before the space is reused */
	pg_atomic_write_u64(&r->tail, pg_atomic_read_u64(&r->tail) + len);
}

/* ------------------------------------------------------------------------
 * Session side
 * ------------------------------------------------------------------------
 */

/* channel_wake_worker sets the state worker's latch. */
void
channel_wake_worker(void)
{
	Latch	   *latch = channel ? channel->worker_latch : NULL;

	if (latch)
		SetLatch(latch);
}

static void
channel_attach(void)
{
	if (my_slot)
		return;
	if (channel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("state_backend must be loaded via \"shared_preload_libraries\"")));
	if (MyProc == NULL || MyProc->pgprocno >= channel->nslots)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("rocksdb states cannot be used from this process")));
	my_slot = &channel->slots[MyProc->pgprocno];
	my_slot->client_latch = MyLatch;
	last_generation = pg_atomic_read_u32(&channel->worker_generation);
	next_seq = pg_atomic_read_u32(&my_slot->last_seq);
	/* What an earlier owner left unread may end mid-reply. */
	if (ring_used(&my_slot->rep) > 0)
		pg_atomic_write_u32(&my_slot->dirty, 1);
	error_floor = next_seq;
	have_pending = false;
}

/*
 * channel_timed_out raises the error a session gets when the worker does
 * not answer within state_backend.request_timeout.
 */
static void
channel_timed_out(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("state worker did not answer within %d ms", state_backend_request_timeout_ms),
			 errdetail("rocksdb states are served by the state worker, which is %s. The request may still be carried out when it resumes.",
					   pg_atomic_read_u32(&channel->worker_pid) == 0 ? "not running" : "busy"),
			 errhint("Check the server log, or raise state_backend.request_timeout.")));
}

/*
 * channel_worker_restarted raises the error of a session whose request was
 * sent to a worker that has since been replaced: the new worker dropped
 * what the old one had not done.
 */
static void
channel_worker_restarted(void)
{
	pg_atomic_write_u32(&my_slot->dirty, 1);
	have_pending = false;
	error_floor = next_seq;
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("the state worker restarted while serving this session"),
			 errdetail("Changes to rocksdb states made by this statement may not have been applied.")));
}

/*
 * A wait of a session for the worker.  A request gives up after
 * state_backend.request_timeout; a long-running one (a restore, a
 * snapshot's cut, a count of a large state) only after the worker showed
 * no sign of progress (its heartbeat) for that long.
 */
typedef struct ChannelWait
{
	TimestampTz since;			/* start, or the last heartbeat seen */
	uint64		beat;
	bool		long_running;
	uint32		generation;		/* of the worker the request went to */
} ChannelWait;

static void
channel_wait_begin(ChannelWait *w, bool long_running, uint32 generation)
{
	w->since = GetCurrentTimestamp();
	w->beat = pg_atomic_read_u64(&channel->heartbeat);
	w->long_running = long_running;
	w->generation = generation;
}

/*
 * channel_wait sleeps until the worker signals progress (or a second
 * passed), and raises the error of a timeout or a worker restart.
 * Interrupts (cancel, terminate) are served.
 */
static void
channel_wait(ChannelWait *w)
{
	long		left = 1000;
	int			rc;
	TimestampTz now = GetCurrentTimestamp();

	if (pg_atomic_read_u32(&channel->worker_generation) != w->generation)
		channel_worker_restarted();
	if (w->long_running)
	{
		uint64		beat = pg_atomic_read_u64(&channel->heartbeat);

		if (beat != w->beat)
		{
			w->beat = beat;
			w->since = now;
		}
	}
	if (state_backend_request_timeout_ms > 0)
	{
		left = state_backend_request_timeout_ms - (long) ((now - w->since) / 1000);
		if (left <= 0)
			channel_timed_out();
	}
	rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
				   Min(left, 1000L), PG_WAIT_EXTENSION);
	if (rc & WL_LATCH_SET)
		ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/*
 * channel_resync makes both streams of the slot clean again after the
 * session left a message half-written or half-read (an error or cancel
 * while it waited): the session bumps the slot's generation, the worker
 * drops what it holds for the slot and acknowledges, and the session skips
 * what is left in its reply ring.  It waits like any request; if it fails,
 * the next request tries again.
 */
static void
channel_resync(void)
{
	uint32		gen = pg_atomic_add_fetch_u32(&my_slot->client_gen, 1);
	ChannelWait w;

	channel_wait_begin(&w, false, pg_atomic_read_u32(&channel->worker_generation));
	channel_wake_worker();
	while (pg_atomic_read_u32(&my_slot->worker_gen) != gen)
		channel_wait(&w);
	pg_read_barrier();
	pg_atomic_write_u64(&my_slot->rep.tail, pg_atomic_read_u64(&my_slot->rep.head));
	pg_atomic_write_u32(&my_slot->dirty, 0);
}

/*
 * channel_drain_replies takes the whole replies waiting in the reply ring
 * while the session waits for room to send.  Only errors of posted
 * requests (and stale replies) can be there, since a round trip reads its
 * reply before the next request (but for the reply of the call being
 * written, which is left where it is); if the session did not take them, the
 * worker, blocked on a full reply ring, would stop taking requests and
 * both would wait.  The first error is raised at the next round trip.
 */
static void
channel_drain_replies(void)
{
	for (;;)
	{
		ReplyHeader hdr;
		uint64		used = ring_used(&my_slot->rep);

		if (used < sizeof(hdr))
			return;
		ring_peek(&my_slot->rep, 0, (char *) &hdr, sizeof(hdr));
		if (used < sizeof(hdr) + hdr.len)
			return;				/* only whole replies */
		if (sending_call != 0 && hdr.seq == sending_call)
			return;				/* the answer of the call being sent, left for it */
		if (hdr.sqlerrcode != 0 && deferred_code == 0 &&
			(int32) (hdr.seq - error_floor) > 0)
		{
			char	   *msg = MemoryContextAllocZero(TopMemoryContext, hdr.len + 1);

			ring_peek(&my_slot->rep, sizeof(hdr), msg, hdr.len);
			deferred_code = hdr.sqlerrcode;
			deferred_seq = hdr.seq;
			deferred_message = msg;
		}
		ring_consume(&my_slot->rep, sizeof(hdr) + hdr.len);
		pg_memory_barrier();
		if (pg_atomic_read_u32(&my_slot->worker_blocked))
			channel_wake_worker();
	}
}

/* channel_raise_deferred raises an error channel_drain_replies kept. */
static void
channel_raise_deferred(void)
{
	char	   *msg = deferred_message;
	int			code = deferred_code;

	if (code == 0)
		return;
	deferred_code = 0;
	deferred_message = NULL;
	if ((int32) (deferred_seq - error_floor) <= 0)
	{
		pfree(msg);
		return;					/* from an aborted transaction */
	}
	error_floor = next_seq;
	ereport(ERROR, (errcode(code), errmsg_internal("%s", msg)));
}

/*
 * channel_write streams len bytes into the request ring, waiting for room
 * as the worker takes what is there.  A message left half-written (an
 * error or cancel while waiting) marks the slot for a resync.
 */
static void
channel_write(const char *data, Size len, ChannelWait *w)
{
	while (len > 0)
	{
		Size		n = ring_put(&my_slot->req, data, len);

		data += n;
		len -= n;
		if (n > 0)
			channel_wake_worker();
		if (len == 0)
			break;
		pg_atomic_write_u32(&my_slot->client_waiting, 1);
		pg_memory_barrier();
		if (ring_used(&my_slot->req) < CHANNEL_RING_SIZE)
			continue;
		pg_atomic_write_u32(&my_slot->dirty, 1);
		channel_drain_replies();
		channel_wait(w);
	}
	pg_atomic_write_u32(&my_slot->client_waiting, 0);
}

/* channel_send writes one whole request; returns its sequence number. */
static uint32
channel_send(ChannelOp op, bool want_reply, const char *payload, uint32 len,
			 uint32 *sent_generation)
{
	RequestHeader hdr;
	ChannelWait w;

	if (len > CHANNEL_MAX_PAYLOAD)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("request of %u bytes is too large for the state worker", len),
				 errdetail("A key and value sent to a rocksdb state may take at most %zu bytes.",
						   (Size) CHANNEL_MAX_PAYLOAD)));
	channel_attach();

	/*
	 * A worker that started since this session's last request may have
	 * left a reply half-written: start the reply stream afresh.
	 */
	if (pg_atomic_read_u32(&channel->worker_generation) != last_generation)
		pg_atomic_write_u32(&my_slot->dirty, 1);
	if (pg_atomic_read_u32(&my_slot->dirty))
		channel_resync();
	last_generation = pg_atomic_read_u32(&channel->worker_generation);
	channel_wait_begin(&w, false, pg_atomic_read_u32(&channel->worker_generation));
	hdr.len = len;
	hdr.seq = ++next_seq;
	hdr.op = op | (want_reply ? CHANNEL_WANT_REPLY : 0);
	pg_atomic_write_u32(&my_slot->last_seq, next_seq);

	/* Wait for room for the header, so a message starts whole. */
	while (CHANNEL_RING_SIZE - ring_used(&my_slot->req) < sizeof(hdr))
	{
		pg_atomic_write_u32(&my_slot->client_waiting, 1);
		pg_memory_barrier();
		if (CHANNEL_RING_SIZE - ring_used(&my_slot->req) >= sizeof(hdr))
			break;
		channel_wake_worker();
		channel_drain_replies();
		channel_wait(&w);
	}
	/*
	 * The worker may answer a call before it has all of it (a request it
	 * cannot hold is refused at once): that answer stays in the ring for
	 * channel_read_reply while the rest is written.
	 */
	sending_call = want_reply ? hdr.seq : 0;
	channel_write((const char *) &hdr, sizeof(hdr), &w);
	channel_write(payload, len, &w);
	sending_call = 0;
	pg_atomic_write_u32(&my_slot->dirty, 0);	/* the whole message is in */
	*sent_generation = w.generation;
	return hdr.seq;
}

/*
 * channel_read_reply reads the next whole reply into out; waits until one
 * is there.  Returns its header.
 */
static ReplyHeader
channel_read_reply(StringInfo out, ChannelWait *w)
{
	ReplyHeader hdr;
	Size		got = 0;

	/* The worker sets our latch after every reply it writes. */
	while (ring_used(&my_slot->rep) < sizeof(hdr))
		channel_wait(w);
	pg_atomic_write_u32(&my_slot->dirty, 1);	/* until the whole reply is read */
	ring_peek(&my_slot->rep, 0, (char *) &hdr, sizeof(hdr));
	ring_consume(&my_slot->rep, sizeof(hdr));

	resetStringInfo(out);
	enlargeStringInfo(out, hdr.len);
	while (got < hdr.len)
	{
		Size		avail = Min(ring_used(&my_slot->rep), hdr.len - got);

		if (avail > 0)
		{
			ring_peek(&my_slot->rep, 0, out->data + got, avail);
			ring_consume(&my_slot->rep, avail);
			got += avail;
			pg_memory_barrier();
			if (pg_atomic_read_u32(&my_slot->worker_blocked))
				channel_wake_worker();
			continue;
		}
		pg_atomic_write_u32(&my_slot->dirty, 1);	/* until the rest is read */
		channel_wait(w);
	}
	pg_atomic_write_u32(&my_slot->dirty, 0);
	pg_memory_barrier();
	if (pg_atomic_read_u32(&my_slot->worker_blocked))
		channel_wake_worker();
	out->len = hdr.len;
	out->data[out->len] = '\0';
	return hdr;
}

/* Raise the error a reply carries. */
static void
channel_raise(const ReplyHeader *hdr, StringInfo msg)
{
	const char *text = msg->data;
	const char *detail = memchr(text, '\0', msg->len);

	if (detail && detail + 1 < msg->data + msg->len)
		ereport(ERROR, (errcode(hdr->sqlerrcode), errmsg_internal("%s", text),
						errdetail_internal("%s", detail + 1)));
	ereport(ERROR, (errcode(hdr->sqlerrcode), errmsg_internal("%s", text)));
}

/*
 * channel_post sends a request that wants no reply: the session goes on
 * at once.  If it fails, the next channel_call or channel_sync raises it.
 */
void
channel_post(ChannelOp op, const char *payload, uint32 len)
{
	uint32		generation;

	(void) channel_send(op, false, payload, len, &generation);
	if (!have_pending)
		pending_generation = generation;
	else if (pending_generation != generation)
		channel_worker_restarted();
	have_pending = true;
}

/*
 * channel_call sends a request and waits for its reply, which goes to
 * "reply".  An earlier posted request that failed raises its error here.
 * A long-running request (a restore, a snapshot) waits for as long as the
 * worker lives instead of state_backend.request_timeout.
 */
void
channel_call(ChannelOp op, const char *payload, uint32 len, StringInfo reply,
			 bool long_running)
{
	uint32		generation;
	uint32		seq = channel_send(op, true, payload, len, &generation);
	ChannelWait w;

	/* Posted requests that a restarted worker dropped would be lost. */
	if (have_pending && pending_generation != generation)
		channel_worker_restarted();
	have_pending = false;
	channel_wait_begin(&w, long_running, generation);
	for (;;)
	{
		ReplyHeader hdr = channel_read_reply(reply, &w);

		if (hdr.seq == seq)
		{
			if (hdr.sqlerrcode != 0)
				channel_raise(&hdr, reply);
			channel_raise_deferred();
			return;
		}
		/* An error of an earlier posted request, or a stale reply. */
		if (hdr.sqlerrcode != 0 && (int32) (hdr.seq - error_floor) > 0 &&
			(int32) (seq - hdr.seq) > 0)
		{
			error_floor = seq;
			channel_raise(&hdr, reply);
		}
	}
}

/*
 * channel_call_int64 is channel_call for a request whose reply is one
 * int64 (a count, an id).
 */
int64
channel_call_int64(ChannelOp op, const char *payload, uint32 len, bool long_running)
{
	StringInfoData reply;
	int64		n;

	initStringInfo(&reply);
	channel_call(op, payload, len, &reply, long_running);
	if (reply.len != sizeof(n))
		elog(ERROR, "state_backend: malformed reply from the state worker");
	memcpy(&n, reply.data, sizeof(n));
	pfree(reply.data);
	return n;
}

/* channel_sync waits until every request posted so far is done. */
void
channel_sync(void)
{
	StringInfoData reply;

	if (!have_pending)
		return;
	initStringInfo(&reply);
	channel_call(CHANNEL_OP_SYNC, NULL, 0, &reply, false);
	pfree(reply.data);
}

/*
 * channel_forget_pending drops the errors of requests posted so far (the
 * transaction that posted them is aborting); they are still carried out.
 */
void
channel_forget_pending(void)
{
	error_floor = next_seq;
	have_pending = false;
}

/* ------------------------------------------------------------------------
 * Worker side
 * ------------------------------------------------------------------------
 */

typedef struct WorkerSlot
{
	uint32		gen;
	StringInfoData in;			/* request bytes taken from the ring */
	int			in_off;			/* start of the next unread message in "in" */
	StringInfoData out;			/* reply bytes not yet in the ring */
	int			out_off;
	uint64		skip;			/* bytes of a refused request still in the ring */
} WorkerSlot;

static WorkerSlot *wslots = NULL;
static bool worker_process = false;	/* this is the state worker */

static void worker_wake_client(ChannelSlot *s);

void
channel_worker_attach(void)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	wslots = palloc0(sizeof(WorkerSlot) * channel->nslots);
	/*
	 * A previous worker may have left requests half-taken: start every
	 * stream afresh.  Sessions notice the new generation and resynchronise
	 * their reply stream before their next request.
	 */
	for (int i = 0; i < channel->nslots; i++)
	{
		ChannelSlot *s = &channel->slots[i];

		initStringInfo(&wslots[i].in);
		initStringInfo(&wslots[i].out);
		pg_atomic_write_u64(&s->req.tail, pg_atomic_read_u64(&s->req.head));
		wslots[i].gen = pg_atomic_read_u32(&s->client_gen);
		pg_atomic_write_u32(&s->worker_gen, wslots[i].gen);
	}
	MemoryContextSwitchTo(old);
	pg_atomic_fetch_add_u32(&channel->worker_generation, 1);
	channel->worker_latch = MyLatch;
	pg_atomic_write_u32(&channel->worker_pid, MyProcPid);
	for (int i = 0; i < channel->nslots; i++)
		worker_wake_client(&channel->slots[i]);
}

/*
 * channel_worker_heartbeat shows sessions that wait on a long request that
 * the worker is making progress.  Long loops of the worker call it.
 */
void
channel_worker_heartbeat(void)
{
	if (channel_is_worker())
		pg_atomic_fetch_add_u64(&channel->heartbeat, 1);
}

/*
 * channel_worker_begin marks this process as the state worker, from its
 * start: what it would ask the worker (a restore at server start, before it
 * serves the channel) it does itself.
 */
void
channel_worker_begin(void)
{
	worker_process = true;
}

/* channel_is_worker tells whether this process is the state worker. */
bool
channel_is_worker(void)
{
	return worker_process;
}

void
channel_worker_detach(void)
{
	if (channel == NULL)
		return;
	pg_atomic_write_u32(&channel->worker_pid, 0);
	channel->worker_latch = NULL;
}

static void
worker_wake_client(ChannelSlot *s)
{
	Latch	   *latch = s->client_latch;

	if (latch)
		SetLatch(latch);
}

/*
 * Append a reply to a slot's pending output.  A reply that the worker has
 * no memory for becomes an error reply: the worker raises nothing here.
 */
static void
worker_add_reply(WorkerSlot *ws, uint32 seq, int sqlerrcode, const char *data, uint32 len)
{
	static const char too_large[] = "reply too large for the state worker's memory";
	ReplyHeader hdr;

	if (!membuf_room(&ws->out, sizeof(hdr) + (Size) len))
	{
		sqlerrcode = ERRCODE_PROGRAM_LIMIT_EXCEEDED;
		data = too_large;
		len = sizeof(too_large) - 1;
		if (!membuf_room(&ws->out, sizeof(hdr) + len))
		{
			/* Not even that: the session's call times out instead. */
			ereport(LOG,
					(errmsg("state_backend worker dropped a reply: out of memory")));
			return;
		}
	}
	hdr.len = len;
	hdr.seq = seq;
	hdr.sqlerrcode = sqlerrcode;
	appendBinaryStringInfo(&ws->out, (const char *) &hdr, sizeof(hdr));
	if (len > 0)
		appendBinaryStringInfo(&ws->out, data, len);
}

/*
 * worker_refuse answers the request at the front of a slot's input with
 * program_limit_exceeded, without holding it: what of it is taken is
 * dropped, and the rest is dropped from the ring as it comes.
 */
static void
worker_refuse(WorkerSlot *ws, const RequestHeader *hdr)
{
	char		msg[128];
	Size		held = (Size) (ws->in.len - ws->in_off) - sizeof(RequestHeader);

	snprintf(msg, sizeof(msg), "the state worker has no memory for a request of %u bytes",
			 hdr->len);
	worker_add_reply(ws, hdr->seq, ERRCODE_PROGRAM_LIMIT_EXCEEDED, msg, strlen(msg));
	ws->skip = (uint64) hdr->len - Min(held, (Size) hdr->len);
	resetStringInfo(&ws->in);
	ws->in_off = 0;
}

/*
 * worker_take moves a slot's request bytes from its ring into its input
 * buffer: as many as there is memory for, the whole of a request once its
 * header is in, raising nothing.  A request whose bytes cannot be held is
 * refused.
 */
static void
worker_take(ChannelSlot *s, WorkerSlot *ws)
{
	uint64		avail = ring_used(&s->req);
	Size		room;

	if (ws->skip > 0 && avail > 0)
	{
		uint64		n = Min(avail, ws->skip);

		ring_consume(&s->req, n);
		ws->skip -= n;
		avail -= n;
	}
	if (avail > 0)
	{
		/* Keep only what is not yet run, at the front. */
		if (ws->in_off > 0)
		{
			memmove(ws->in.data, ws->in.data + ws->in_off, ws->in.len - ws->in_off);
			ws->in.len -= ws->in_off;
			ws->in_off = 0;
		}
		if (ws->in.len >= (int) sizeof(RequestHeader))
		{
			RequestHeader hdr;
			Size		whole;

			memcpy(&hdr, ws->in.data, sizeof(hdr));
			whole = sizeof(hdr) + (Size) hdr.len;
			if ((Size) ws->in.len < whole &&
				(hdr.len > CHANNEL_MAX_PAYLOAD ||
				 !membuf_room(&ws->in, whole - (Size) ws->in.len)))
			{
				worker_refuse(ws, &hdr);
				worker_take(s, ws);
				return;
			}
		}
		room = membuf_room(&ws->in, avail) ? avail :
			(Size) (ws->in.maxlen - ws->in.len - 1);
		room = Min(room, avail);
		ring_peek(&s->req, 0, ws->in.data + ws->in.len, room);
		ring_consume(&s->req, room);
		ws->in.len += room;
		ws->in.data[ws->in.len] = '\0';
	}
	pg_memory_barrier();	/* tail before client_waiting: no lost wakeup */
	if (pg_atomic_read_u32(&s->client_waiting))
		worker_wake_client(s);
}

/* Move pending replies into the ring; returns whether all fit. */
static bool
worker_flush_replies(ChannelSlot *s, WorkerSlot *ws)
{
	Size		n;

	if (ws->out_off >= ws->out.len)
		return true;
	n = ring_put(&s->rep, ws->out.data + ws->out_off, ws->out.len - ws->out_off);
	ws->out_off += n;
	if (n > 0)
		worker_wake_client(s);
	if (ws->out_off < ws->out.len)
	{
		pg_atomic_write_u32(&s->worker_blocked, 1);
		return false;
	}
	pg_atomic_write_u32(&s->worker_blocked, 0);
	resetStringInfo(&ws->out);
	ws->out_off = 0;
	membuf_shrink(&ws->out, CHANNEL_KEEP_BUFFER);
	return true;
}

/* The session asked to start over: drop everything held for the slot. */
static void
worker_resync(ChannelSlot *s, WorkerSlot *ws, uint32 gen)
{
	resetStringInfo(&ws->in);
	ws->in_off = 0;
	ws->skip = 0;
	resetStringInfo(&ws->out);
	ws->out_off = 0;
	pg_atomic_write_u64(&s->req.tail, pg_atomic_read_u64(&s->req.head));
	pg_atomic_write_u32(&s->worker_blocked, 0);
	ws->gen = gen;
	pg_write_barrier();
	pg_atomic_write_u32(&s->worker_gen, gen);
	worker_wake_client(s);
}

/*
 * Run one request.  The handler's errors become an error reply (for a
 * posted request too, which the session raises later).
 */
static void
worker_run_request(ChannelHandler handler, WorkerSlot *ws, const RequestHeader *hdr,
				   const char *payload, StringInfo reply)
{
	MemoryContext cxt = CurrentMemoryContext;
	bool		want_reply = (hdr->op & CHANNEL_WANT_REPLY) != 0;
	ChannelOp	op = (ChannelOp) (hdr->op & ~CHANNEL_WANT_REPLY);

	resetStringInfo(reply);
	PG_TRY();
	{
		bool		answered = handler(op, payload, hdr->len, reply);

		if (want_reply || answered)
			worker_add_reply(ws, hdr->seq, 0, reply->data, reply->len);
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		StringInfoData msg;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		/* A handler holds no lock across requests; drop any it left. */
		LWLockReleaseAll();
		initStringInfo(&msg);
		appendStringInfoString(&msg, edata->message);
		if (edata->detail)
		{
			appendStringInfoChar(&msg, '\0');
			appendStringInfoString(&msg, edata->detail);
		}
		worker_add_reply(ws, hdr->seq, edata->sqlerrcode ? edata->sqlerrcode :
						 ERRCODE_INTERNAL_ERROR, msg.data, msg.len);
		FreeErrorData(edata);
		pfree(msg.data);
	}
	PG_END_TRY();
}

/*
 * channel_worker_serve takes what every slot has sent and runs up to
 * "budget" requests per slot through the handler, then writes the replies.
 * Returns whether work remains (more requests, or replies that did not fit).
 */
bool
channel_worker_serve(ChannelHandler handler, int budget)
{
	bool		more = false;
	StringInfoData reply;

	channel_worker_heartbeat();

	initStringInfo(&reply);
	for (int i = 0; i < channel->nslots; i++)
	{
		ChannelSlot *s = &channel->slots[i];
		WorkerSlot *ws = &wslots[i];
		uint32		gen = pg_atomic_read_u32(&s->client_gen);
		uint64		avail;
		int			done = 0;
		RequestHeader last;

		if (gen != ws->gen)
			worker_resync(s, ws, gen);
		if (!worker_flush_replies(s, ws))
		{
			more = true;
			continue;			/* the session reads its replies first */
		}

		avail = ring_used(&s->req);
		if (avail == 0 && ws->in_off >= ws->in.len)
			continue;
		if (avail > 0)
			worker_take(s, ws);

		while (done < budget)
		{
			RequestHeader hdr;
			int			left = ws->in.len - ws->in_off;

			if (left < (int) sizeof(hdr))
				break;
			memcpy(&hdr, ws->in.data + ws->in_off, sizeof(hdr));
			if (left < (int) (sizeof(hdr) + hdr.len))
				break;
			worker_run_request(handler, ws, &hdr,
							   ws->in.data + ws->in_off + sizeof(hdr), &reply);
			ws->in_off += sizeof(hdr) + hdr.len;
			last.seq = hdr.seq;
			done++;
		}
		if (done > 0)
		{
			last.op = CHANNEL_OP_FLUSH;
			last.len = 0;
			worker_run_request(handler, ws, &last, NULL, &reply);
		}
		if (ws->in_off == ws->in.len)
		{
			resetStringInfo(&ws->in);
			ws->in_off = 0;
			membuf_shrink(&ws->in, CHANNEL_KEEP_BUFFER);
		}
		else if (done == budget)
			more = true;
		if (!worker_flush_replies(s, ws))
			more = true;
	}
	pfree(reply.data);
	return more;
}
