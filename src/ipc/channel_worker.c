/*
 * ipc/channel_worker.c
 *		The state worker's side of the request and reply streams
 *		(ipc/channel.c has the session's side and the rings).
 *
 * The worker drains every slot's requests in turn into local memory, hands
 * each whole request to a dispatcher (worker.c), and writes the replies
 * back, keeping what does not fit in the reply ring yet; nobody ever
 * blocks on one ring while others wait.  A request it has no memory for is
 * refused with an error reply, and a session that asked to resynchronise
 * its slot has everything held for it dropped.  Long work of the worker
 * shows sessions that it makes progress (its heartbeat).
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "portability/instr_time.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/memutils.h"

#include "common/catch.h"
#include "common/latch_sleep.h"
#include "common/membuf.h"
#include "common/spin_wait.h"
#include "ipc/channel.h"
#include "ipc/channel_internal.h"

typedef struct WorkerSlot
{
	uint32		gen;
	StringInfoData in;			/* request bytes taken from the ring */
	int			in_off;			/* start of the next unread message in "in" */
	StringInfoData out;			/* reply bytes not yet in the ring */
	int			out_off;
	uint64		skip;			/* bytes of a refused request still in the ring */
	uint32		window;			/* the last window its requests were served in */
	bool		held;			/* its replies wait for the pass's commit */
	bool		stale;			/* mid-message when the last worker went: input
								 * dropped until the session resynchronises */
	uint32		held_seq;		/* its last request of the pass */
} WorkerSlot;

static WorkerSlot *wslots = NULL;
static bool worker_process = false;	/* this is the state worker */

/*
 * After a round that served requests, the worker spins for the next before
 * it sleeps (up to state_backend.spin_wait): a session alone sends its next
 * statement's request a few tens of microseconds after its reply.  The
 * worker is one process, and is not counted among the sessions that spin.
 */
static SpinWait request_spin;
static bool served_lately = false;

/*
 * The sessions the worker served lately: distinct slots served in a window
 * of CHANNEL_ACTIVE_WINDOW_US, published when the window ends.
 */
#define CHANNEL_ACTIVE_WINDOW_US	10000
static uint32 window_no = 1;
static uint32 window_sessions = 0;
static instr_time window_start;

/*
 * Some slot's replies wait for the pass's commit (worker_pass_end).  Still
 * set at the next pass only if an error cut the last one short: that pass
 * is ended first, so that no held reply goes out before its commit.
 */
static bool pass_holds = false;

/* The slot whose requests the worker runs now, if any. */
static ChannelSlot *serving = NULL;

static void worker_wake_client(ChannelSlot *s);

void
channel_worker_attach(void)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	wslots = palloc0(sizeof(WorkerSlot) * channel_shared->nslots);
	/*
	 * A previous worker may have left requests half-taken: start every
	 * stream afresh.  Sessions notice the new generation and resynchronise
	 * their reply stream before their next request.  A session that was
	 * writing a message (dirty, set before its first byte) may go on with
	 * the rest of it, which is no request: its slot's input is dropped
	 * until it resynchronises.  Dirty is read after the drop, so that a
	 * message whose first bytes were dropped is seen.
	 */
	for (int i = 0; i < channel_shared->nslots; i++)
	{
		ChannelSlot *s = &channel_shared->slots[i];

		initStringInfo(&wslots[i].in);
		initStringInfo(&wslots[i].out);
		pg_atomic_write_u64(&s->req.tail, pg_atomic_read_u64(&s->req.head));
		pg_memory_barrier();
		wslots[i].stale = pg_atomic_read_u32(&s->dirty) != 0;
		wslots[i].gen = pg_atomic_read_u32(&s->client_gen);
		pg_atomic_write_u32(&s->worker_gen, wslots[i].gen);
	}
	MemoryContextSwitchTo(old);
	pg_atomic_fetch_add_u32(&channel_shared->worker_generation, 1);
	channel_shared->worker_latch = MyLatch;
	/* Sessions that see the pid see the latch and the generation too. */
	pg_write_barrier();
	pg_atomic_write_u32(&channel_shared->worker_pid, MyProcPid);
	for (int i = 0; i < channel_shared->nslots; i++)
		worker_wake_client(&channel_shared->slots[i]);
	/*
	 * A snapshot asked for while it started woke nobody (channel_wake_worker
	 * wakes a serving worker only): its first round need not wait for it.
	 */
	SetLatch(MyLatch);
}

/*
 * channel_worker_heartbeat shows sessions that wait on a long request that
 * the worker is making progress.  Long loops of the worker call it.
 */
void
channel_worker_heartbeat(void)
{
	if (channel_is_worker())
		pg_atomic_fetch_add_u64(&channel_shared->heartbeat, 1);
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
	spin_wait_init(&request_spin);
	INSTR_TIME_SET_CURRENT(window_start);
}

/* Whether the worker's latch was set: a session sent something (or a signal came). */
static bool
latch_set(void *arg)
{
	return ((volatile Latch *) MyLatch)->is_set;
}

/*
 * channel_worker_spin: before the worker sleeps on its latch, a short spin
 * for the next request when its last round served some.  A session's
 * SetLatch of a worker that spins is a store, not a signal.
 */
void
channel_worker_spin(void)
{
	if (served_lately && channel_spin_pays() && !((volatile Latch *) MyLatch)->is_set)
		channel_count_spin(spin_wait(&request_spin, NULL, 0, latch_set, NULL));
	served_lately = false;
}

/*
 * channel_worker_sleep: the worker's sleep until a session (or a signal)
 * sets its latch, or timeout_ms passed (< 0: no timeout).  Sessions wake it
 * with a futex wake (channel_wake_worker), not a signal.
 */
void
channel_worker_sleep(long timeout_ms)
{
	(void) latch_sleep(&channel_shared->worker_sleeping, timeout_ms, PG_WAIT_EXTENSION);
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
	if (channel_shared == NULL)
		return;
	pg_atomic_write_u32(&channel_shared->worker_pid, 0);
	channel_shared->worker_latch = NULL;
}

static void
worker_wake_client(ChannelSlot *s)
{
	Latch	   *latch = s->client_latch;

	if (latch)
		latch_wake(latch, &s->client_sleeping);
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
	uint64		avail = channel_ring_used(&s->req);
	Size		room;

	if (ws->skip > 0 && avail > 0)
	{
		uint64		n = Min(avail, ws->skip);

		channel_ring_consume(&s->req, n);
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
		channel_ring_peek(&s->req, 0, ws->in.data + ws->in.len, room);
		channel_ring_consume(&s->req, room);
		ws->in.len += room;
		ws->in.data[ws->in.len] = '\0';
	}
	pg_memory_barrier();	/* tail before client_waiting: no lost wakeup */
	if (pg_atomic_read_u32(&s->client_waiting))
		worker_wake_client(s);
}

/*
 * worker_wants_input tells whether to take more of a slot's ring now.  What
 * is held but not yet run stays under a ring's worth, and the session waits
 * for room instead: the unrun bytes move to the front at every take, and a
 * session that sends faster than its budget runs would otherwise have them
 * grow without bound and moved again at every round.  A request at the front
 * that is not whole yet is always taken on with.
 */
static bool
worker_wants_input(const WorkerSlot *ws)
{
	Size		held = (Size) (ws->in.len - ws->in_off);
	RequestHeader hdr;

	if (held < CHANNEL_RING_SIZE)
		return true;
	memcpy(&hdr, ws->in.data + ws->in_off, sizeof(hdr));
	return held < sizeof(hdr) + (Size) hdr.len;
}

/* Move pending replies into the ring; returns whether all fit. */
static bool
worker_flush_replies(ChannelSlot *s, WorkerSlot *ws)
{
	Size		n;

	if (ws->out_off >= ws->out.len)
		return true;
	n = channel_ring_put(&s->rep, ws->out.data + ws->out_off, ws->out.len - ws->out_off);
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
	ws->stale = false;
	resetStringInfo(&ws->out);
	ws->out_off = 0;
	pg_atomic_write_u64(&s->req.tail, pg_atomic_read_u64(&s->req.head));
	pg_atomic_write_u32(&s->worker_blocked, 0);
	ws->gen = gen;
	pg_write_barrier();
	pg_atomic_write_u32(&s->worker_gen, gen);
	worker_wake_client(s);
}

/* An error reply to the request "hdr" of a slot. */
static void
worker_add_error(WorkerSlot *ws, const RequestHeader *hdr, const ErrorData *edata)
{
	StringInfoData msg;

	initStringInfo(&msg);
	appendStringInfoString(&msg, edata->message);
	if (edata->detail)
	{
		appendStringInfoChar(&msg, '\0');
		appendStringInfoString(&msg, edata->detail);
	}
	worker_add_reply(ws, hdr->seq, edata->sqlerrcode ? edata->sqlerrcode :
					 ERRCODE_INTERNAL_ERROR, msg.data, msg.len);
	pfree(msg.data);
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
	bool		want_reply = (hdr->kind & CHANNEL_WANT_REPLY) != 0;
	uint16		kind = hdr->kind & ~CHANNEL_WANT_REPLY;

	resetStringInfo(reply);
	PG_TRY();
	{
		bool		answered = handler(hdr->target, kind, payload, hdr->len, reply);

		if (want_reply || answered)
			worker_add_reply(ws, hdr->seq, 0, reply->data, reply->len);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		/* A handler holds no lock across requests: catch_error drops any it left. */
		edata = catch_error(cxt);
		worker_add_error(ws, hdr, edata);
		FreeErrorData(edata);
	}
	PG_END_TRY();
}

/*
 * worker_round_end runs STATE_REQUEST_ROUND_END after a slot's requests of
 * a pass: whether a backend kept the writes it gathered for the pass's
 * commit (the slot's replies then wait for it).  An error is the failure
 * of the slot's last request of the pass.
 */
static bool
worker_round_end(ChannelHandler handler, WorkerSlot *ws, uint32 seq, StringInfo reply)
{
	RequestHeader hdr;
	MemoryContext cxt = CurrentMemoryContext;
	bool		keeps = false;

	hdr.seq = seq;
	hdr.target = CHANNEL_TARGET_ALL;
	hdr.kind = STATE_REQUEST_ROUND_END;
	hdr.len = 0;
	PG_TRY();
	{
		resetStringInfo(reply);
		keeps = handler(CHANNEL_TARGET_ALL, STATE_REQUEST_ROUND_END, NULL, 0, reply);
	}
	PG_CATCH();
	{
		ErrorData  *edata = catch_error(cxt);

		worker_add_error(ws, &hdr, edata);
		FreeErrorData(edata);
	}
	PG_END_TRY();
	return keeps;
}

/*
 * worker_pass_end commits what backends kept from the pass
 * (STATE_REQUEST_PASS_END), then hands every slot that waited for it its
 * replies.  Should the commit fail, none of those replies goes out: each
 * such slot gets the error instead, as the failure of its last request of
 * the pass (the one its session waits on, or a posted one it raises at its
 * next call).  Returns whether every reply fit in its ring.
 */
static bool
worker_pass_end(ChannelHandler handler, StringInfo reply)
{
	RequestHeader hdr;
	ErrorData  *edata = NULL;
	MemoryContext cxt = CurrentMemoryContext;
	bool		all_out = true;

	PG_TRY();
	{
		resetStringInfo(reply);
		(void) handler(CHANNEL_TARGET_ALL, STATE_REQUEST_PASS_END, NULL, 0, reply);
	}
	PG_CATCH();
	{
		edata = catch_error(cxt);
	}
	PG_END_TRY();
	for (int i = 0; i < channel_shared->nslots; i++)
	{
		WorkerSlot *ws = &wslots[i];

		if (!ws->held)
			continue;
		ws->held = false;
		if (edata != NULL)
		{
			/* Its replies were all held: nothing of this pass went out. */
			Assert(ws->out_off == 0);
			resetStringInfo(&ws->out);
			hdr.seq = ws->held_seq;
			worker_add_error(ws, &hdr, edata);
		}
		if (!worker_flush_replies(&channel_shared->slots[i], ws))
			all_out = false;
	}
	pass_holds = false;
	if (edata != NULL)
		FreeErrorData(edata);
	return all_out;
}

/*
 * channel_worker_note_lsn tells the session whose requests are being run
 * that WAL up to lsn holds their changes: it waits for that at commit.
 */
void
channel_worker_note_lsn(XLogRecPtr lsn)
{
	if (serving != NULL && lsn > pg_atomic_read_u64(&serving->wal_lsn))
		pg_atomic_write_u64(&serving->wal_lsn, lsn);
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
	uint64		served = 0;
	instr_time	start;
	instr_time	busy;

	channel_worker_heartbeat();
	INSTR_TIME_SET_CURRENT(start);

	initStringInfo(&reply);
	if (pass_holds && !worker_pass_end(handler, &reply))
		more = true;
	for (int i = 0; i < channel_shared->nslots; i++)
	{
		ChannelSlot *s = &channel_shared->slots[i];
		WorkerSlot *ws = &wslots[i];
		uint32		gen = pg_atomic_read_u32(&s->client_gen);
		uint64		avail;
		int			done = 0;
		RequestHeader last;

		if (gen != ws->gen)
			worker_resync(s, ws, gen);
		if (ws->stale)
		{
			/* The rest of a message cut by the last worker's exit. */
			channel_ring_consume(&s->req, channel_ring_used(&s->req));
			pg_memory_barrier();	/* tail before client_waiting */
			if (pg_atomic_read_u32(&s->client_waiting))
				worker_wake_client(s);
			continue;
		}
		if (!worker_flush_replies(s, ws))
		{
			more = true;
			continue;			/* the session reads its replies first */
		}

		avail = channel_ring_used(&s->req);
		if (avail == 0 && ws->in_off >= ws->in.len)
			continue;
		if (avail > 0 && worker_wants_input(ws))
			worker_take(s, ws);
		else if (avail > 0)
			more = true;		/* taken once what is held has run */
		serving = s;

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
		if (done > 0 && worker_round_end(handler, ws, last.seq, &reply))
		{
			ws->held = true;
			ws->held_seq = last.seq;
			pass_holds = true;
		}
		served += done;
		serving = NULL;
		if (done > 0)
		{
			served_lately = true;
			if (ws->window != window_no)
			{
				ws->window = window_no;
				window_sessions++;
			}
		}
		if (ws->in_off == ws->in.len)
		{
			resetStringInfo(&ws->in);
			ws->in_off = 0;
			membuf_shrink(&ws->in, CHANNEL_KEEP_BUFFER);
		}
		else if (done == budget)
			more = true;
		if (!ws->held && !worker_flush_replies(s, ws))
			more = true;
	}
	if (pass_holds && !worker_pass_end(handler, &reply))
		more = true;
	pfree(reply.data);
	if (served > 0)
	{
		instr_time	now;
		instr_time	window;

		INSTR_TIME_SET_CURRENT(now);
		busy = now;
		INSTR_TIME_SUBTRACT(busy, start);
		pg_atomic_fetch_add_u64(&channel_shared->requests, served);
		pg_atomic_fetch_add_u64(&channel_shared->passes, 1);
		pg_atomic_fetch_add_u64(&channel_shared->busy_us, INSTR_TIME_GET_MICROSEC(busy));
		/* How many sessions keep the worker busy: spinning pays when few do. */
		window = now;
		INSTR_TIME_SUBTRACT(window, window_start);
		if (INSTR_TIME_GET_MICROSEC(window) >= CHANNEL_ACTIVE_WINDOW_US)
		{
			pg_atomic_write_u32(&channel_shared->active_sessions, window_sessions);
			window_no++;
			window_sessions = 0;
			window_start = now;
		}
	}
	return more;
}
