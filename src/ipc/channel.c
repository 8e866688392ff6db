/*
 * ipc/channel.c
 *		Request and reply streams between sessions and the state worker:
 *		their shared memory, the byte rings, and the session's side.
 *
 * Every backend owns one slot (by its PGPROC number) of two single-producer
 * single-consumer byte rings in shared memory.  A message is a header
 * (payload length, sequence number, and the envelope or the reply's SQLSTATE)
 * followed by its payload; messages larger than a ring stream through it.
 * The worker drains every slot's requests in turn, hands each to a
 * dispatcher, and writes replies back, keeping what does not fit yet in
 * local memory; nobody ever blocks on one ring while others wait.  That
 * side is in ipc/channel_worker.c; the layout both share is in
 * ipc/channel_internal.h.
 *
 * A session never waits without a timeout (state_backend.request_timeout)
 * and stays cancellable while no message is half-read.  If it gives up in
 * the middle of a message, the slot is resynchronised: the session bumps
 * the slot's generation, the worker drops what it held for the slot and
 * acknowledges, and both streams restart clean.
 *
 * A request is an envelope (target, kind); its meaning is its target's
 * (a backend, or the worker's snapshots), handed on by worker.c's
 * dispatcher: these files only move bytes.
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

#include "common/latch_sleep.h"
#include "common/settings.h"
#include "common/spin_wait.h"
#include "ipc/channel.h"
#include "ipc/channel_internal.h"

ChannelShared *channel_shared = NULL;

/* Session state. */
static ChannelSlot *my_slot = NULL;
static uint32 next_seq = 0;
static uint32 error_floor = 0;	/* error replies up to this seq are dropped */
static bool have_pending = false;	/* posted since the last round trip */
static bool posts_unapplied = false;	/* posted, and not known to be done */
static uint32 sending_call = 0;	/* seq of a round trip being written, or 0 */
static uint32 last_generation = 0;	/* the worker of the last request */

/* The first error of a posted request taken while sending (see below). */
static int	deferred_code = 0;
static uint32 deferred_seq = 0;
static char *deferred_message = NULL;
static uint32 pending_generation = 0;	/* the worker they were posted to */

/*
 * A session spins for its reply before it sleeps on its latch (up to
 * state_backend.spin_wait): a round trip to a worker that is not busy
 * elsewhere takes a few microseconds of its work, and a sleep and wake-up
 * of each side 10-30 on an idle machine, more on a busy one.  One core is
 * left to the worker: at most cores - 1 sessions spin at once.
 */
static SpinWait reply_spin;

static Size
channel_shmem_size(void)
{
	return add_size(offsetof(ChannelShared, slots),
					mul_size(sizeof(ChannelSlot), MaxBackends));
}

/*
 * channel_init: no worker, and every ring empty, in shared memory just made
 * (channel_shared already points at it).
 */
static void
channel_init(void *fresh)
{
	Assert(fresh == channel_shared);
	channel_shared->worker_latch = NULL;
	pg_atomic_init_u32(&channel_shared->worker_sleeping, 0);
	pg_atomic_init_u32(&channel_shared->worker_pid, 0);
	pg_atomic_init_u32(&channel_shared->worker_generation, 0);
	pg_atomic_init_u64(&channel_shared->requests, 0);
	pg_atomic_init_u64(&channel_shared->passes, 0);
	pg_atomic_init_u64(&channel_shared->busy_us, 0);
	pg_atomic_init_u64(&channel_shared->heartbeat, 0);
	pg_atomic_init_u32(&channel_shared->spinners, 0);
	pg_atomic_init_u32(&channel_shared->active_sessions, 0);
	pg_atomic_init_u64(&channel_shared->spins, 0);
	pg_atomic_init_u64(&channel_shared->spins_seen, 0);
	pg_atomic_init_u64(&channel_shared->reloads, 0);
	channel_shared->nslots = MaxBackends;
	for (int i = 0; i < channel_shared->nslots; i++)
	{
		ChannelSlot *s = &channel_shared->slots[i];

		pg_atomic_init_u32(&s->client_gen, 0);
		pg_atomic_init_u32(&s->worker_gen, 0);
		pg_atomic_init_u32(&s->client_waiting, 0);
		pg_atomic_init_u32(&s->worker_blocked, 0);
		pg_atomic_init_u32(&s->last_seq, 0);
		pg_atomic_init_u32(&s->dirty, 0);
		pg_atomic_init_u32(&s->client_sleeping, 0);
		pg_atomic_init_u64(&s->wal_lsn, 0);
		s->client_latch = NULL;
		pg_atomic_init_u64(&s->req.head, 0);
		pg_atomic_init_u64(&s->req.tail, 0);
		pg_atomic_init_u64(&s->rep.head, 0);
		pg_atomic_init_u64(&s->rep.tail, 0);
	}
}

const ShmemPart channel_part = {
	"state_backend channel", 0, channel_shmem_size, channel_init, (void **) &channel_shared
};

/* Ring primitives: one producer, one consumer. */

uint64
channel_ring_used(ChannelRing *r)
{
	uint64		head = pg_atomic_read_u64(&r->head);

	pg_read_barrier();
	return head - pg_atomic_read_u64(&r->tail);
}

/* channel_ring_put copies as much of src as fits; returns how much. */
Size
channel_ring_put(ChannelRing *r, const char *src, Size len)
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

/* channel_ring_peek copies len bytes at offset skip without consuming them. */
void
channel_ring_peek(ChannelRing *r, Size skip, char *dst, Size len)
{
	uint64		tail = pg_atomic_read_u64(&r->tail);
	Size		off = (tail + skip) % CHANNEL_RING_SIZE;
	Size		first = Min(len, CHANNEL_RING_SIZE - off);

	pg_read_barrier();
	memcpy(dst, r->data + off, first);
	memcpy(dst + first, r->data, len - first);
}

void
channel_ring_consume(ChannelRing *r, Size len)
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
	Latch	   *latch = channel_shared ? channel_shared->worker_latch : NULL;

	if (latch)
		latch_wake(latch, &channel_shared->worker_sleeping);
}

static void
channel_attach(void)
{
	if (my_slot)
		return;
	if (channel_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("state_backend must be loaded via \"shared_preload_libraries\"")));
	if (MyProc == NULL || MyProc->pgprocno >= channel_shared->nslots)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("states served by the state worker cannot be used from this process")));
	my_slot = &channel_shared->slots[MyProc->pgprocno];
	my_slot->client_latch = MyLatch;
	pg_atomic_write_u32(&my_slot->client_sleeping, 0);	/* an earlier owner may have died asleep */
	spin_wait_init(&reply_spin);
	last_generation = pg_atomic_read_u32(&channel_shared->worker_generation);
	next_seq = pg_atomic_read_u32(&my_slot->last_seq);
	/* What an earlier owner left unread may end mid-reply. */
	if (channel_ring_used(&my_slot->rep) > 0)
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
			 errdetail("These states are served by the state worker, which is %s. The request may still be carried out when it resumes.",
					   pg_atomic_read_u32(&channel_shared->worker_pid) == 0 ? "not running" : "busy"),
			 errhint("Check the server log, or raise state_backend.request_timeout.")));
}

/*
 * channel_no_worker raises the error of a session that waited
 * state_backend.request_timeout for a worker to serve the channel, and sent
 * nothing.
 */
static void
channel_no_worker(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("no state worker has served within %d ms", state_backend_request_timeout_ms),
			 errdetail("The state worker exited and the next one has not started serving; the request was not sent."),
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
			 errdetail("Changes to states served by the state worker made by this statement may not have been applied.")));
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
	w->beat = pg_atomic_read_u64(&channel_shared->heartbeat);
	w->long_running = long_running;
	w->generation = generation;
}

/*
 * channel_sleep sleeps up to max_ms, or until the latch is set, and raises
 * timed_out's error once state_backend.request_timeout has passed since
 * since.  Interrupts (cancel, terminate) are served.
 */
static void
channel_sleep(TimestampTz since, long max_ms, void (*timed_out) (void))
{
	long		left = max_ms;
	int			rc;

	if (state_backend_request_timeout_ms > 0)
	{
		left = state_backend_request_timeout_ms -
			(long) ((GetCurrentTimestamp() - since) / 1000);
		if (left <= 0)
			timed_out();
	}
	rc = latch_sleep(&my_slot->client_sleeping, Min(left, max_ms), PG_WAIT_EXTENSION);
	if (rc & WL_LATCH_SET)
		ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/*
 * channel_wait sleeps until the worker signals progress (or a second
 * passed), and raises the error of a timeout or a worker restart.
 */
static void
channel_wait(ChannelWait *w)
{
	if (pg_atomic_read_u32(&channel_shared->worker_generation) != w->generation)
		channel_worker_restarted();
	if (w->long_running)
	{
		uint64		beat = pg_atomic_read_u64(&channel_shared->heartbeat);

		if (beat != w->beat)
		{
			w->beat = beat;
			w->since = GetCurrentTimestamp();
		}
	}
	channel_sleep(w->since, 1000L, channel_timed_out);
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

	channel_wait_begin(&w, false, pg_atomic_read_u32(&channel_shared->worker_generation));
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
		uint64		used = channel_ring_used(&my_slot->rep);

		if (used < sizeof(hdr))
			return;
		channel_ring_peek(&my_slot->rep, 0, (char *) &hdr, sizeof(hdr));
		if (used < sizeof(hdr) + hdr.len)
			return;				/* only whole replies */
		if (sending_call != 0 && hdr.seq == sending_call)
			return;				/* the answer of the call being sent, left for it */
		if (hdr.sqlerrcode != 0 && deferred_code == 0 &&
			(int32) (hdr.seq - error_floor) > 0)
		{
			char	   *msg = MemoryContextAllocZero(TopMemoryContext, hdr.len + 1);

			channel_ring_peek(&my_slot->rep, sizeof(hdr), msg, hdr.len);
			deferred_code = hdr.sqlerrcode;
			deferred_seq = hdr.seq;
			deferred_message = msg;
		}
		channel_ring_consume(&my_slot->rep, sizeof(hdr) + hdr.len);
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
		Size		n = channel_ring_put(&my_slot->req, data, len);

		data += n;
		len -= n;
		if (n > 0)
			channel_wake_worker();
		if (len == 0)
			break;
		pg_atomic_write_u32(&my_slot->client_waiting, 1);
		pg_memory_barrier();
		if (channel_ring_used(&my_slot->req) < CHANNEL_RING_SIZE)
			continue;
		pg_atomic_write_u32(&my_slot->dirty, 1);
		channel_drain_replies();
		channel_wait(w);
	}
	pg_atomic_write_u32(&my_slot->client_waiting, 0);
}

/*
 * channel_await_worker waits, up to state_backend.request_timeout, while no
 * worker serves the channel: one exited and the postmaster has not started
 * the next, or the next is still starting.  A request written meanwhile
 * would be dropped by the next worker, which starts every stream afresh,
 * and its session told that the worker restarted while serving it; the
 * request that waits goes to the worker that will read it.  A worker that
 * exits after this look, before it reads the request, is that restart.
 */
static void
channel_await_worker(void)
{
	TimestampTz since = 0;

	/*
	 * Not where interrupts are held (a transaction's staged rocksdb writes
	 * posted after its commit record): such a wait could not be cancelled
	 * nor the session terminated, and the next worker applies committed
	 * stages itself.
	 */
	if (!INTERRUPTS_CAN_BE_PROCESSED())
		return;
	while (pg_atomic_read_u32(&channel_shared->worker_pid) == 0)
	{
		if (since == 0)
			since = GetCurrentTimestamp();
		channel_sleep(since, 100L, channel_no_worker);
	}
	/* The worker publishes its pid after its generation (channel_worker_attach). */
	pg_read_barrier();
}

/* channel_send writes one whole request; returns its sequence number. */
static uint32
channel_send(uint16 target, uint16 kind, bool want_reply, const char *payload, uint32 len,
			 uint32 *sent_generation)
{
	RequestHeader hdr;
	ChannelWait w;
	uint32		generation;

	if (len > CHANNEL_MAX_PAYLOAD)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("request of %u bytes is too large for the state worker", len),
				 errdetail("A key and value sent to the state worker may take at most %zu bytes.",
						   (Size) CHANNEL_MAX_PAYLOAD)));
	channel_attach();
	channel_await_worker();
	generation = pg_atomic_read_u32(&channel_shared->worker_generation);

	/*
	 * Requests posted to a worker that has since been replaced were dropped
	 * with its rings: fail now, before this request goes to the new one and
	 * is carried out only to be reported as failed.  The error the old one
	 * answered them with, if it is in the reply ring (a pass that failed to
	 * commit: the worker answers, then exits), comes first.
	 */
	if (have_pending && pending_generation != generation)
	{
		if (!pg_atomic_read_u32(&my_slot->dirty))
		{
			channel_drain_replies();
			channel_raise_deferred();
		}
		channel_worker_restarted();
	}

	/*
	 * A worker that started since this session's last request may have
	 * left a reply half-written: start the reply stream afresh.
	 */
	if (generation != last_generation)
		pg_atomic_write_u32(&my_slot->dirty, 1);
	if (pg_atomic_read_u32(&my_slot->dirty))
		channel_resync();
	last_generation = generation;
	channel_wait_begin(&w, false, generation);
	hdr.len = len;
	hdr.seq = ++next_seq;
	Assert((kind & CHANNEL_WANT_REPLY) == 0);
	hdr.target = target;
	hdr.kind = kind | (want_reply ? CHANNEL_WANT_REPLY : 0);
	pg_atomic_write_u32(&my_slot->last_seq, next_seq);

	/*
	 * Until the whole message is in: a worker that starts meanwhile drops
	 * what is in the ring, and must then drop the rest of this message too
	 * rather than read it as requests (channel_worker_attach).  The ring's
	 * writes come after this (channel_ring_put's barrier).
	 */
	pg_atomic_write_u32(&my_slot->dirty, 1);

	/* Wait for room for the header, so a message starts whole. */
	while (CHANNEL_RING_SIZE - channel_ring_used(&my_slot->req) < sizeof(hdr))
	{
		pg_atomic_write_u32(&my_slot->client_waiting, 1);
		pg_memory_barrier();
		if (CHANNEL_RING_SIZE - channel_ring_used(&my_slot->req) >= sizeof(hdr))
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
 * channel_spin_pays: whether a spin for the other side may pay now, on
 * either side.  It does while the sessions the worker served in its last
 * window of 10 ms are fewer than the cores this process may run on: then a
 * core is free for the spin while the other side works.  With more, the
 * cores are busy with those sessions (and their clients), and a spin takes
 * CPU from the process it waits for.
 */
bool
channel_spin_pays(void)
{
	return pg_atomic_read_u32(&channel_shared->active_sessions) <
		(uint32) spin_wait_cores();
}

/* channel_count_spin counts a spin (a SpinResult) for state.worker. */
void
channel_count_spin(int result)
{
	if (result == SPIN_SKIPPED)
		return;
	pg_atomic_fetch_add_u64(&channel_shared->spins, 1);
	if (result == SPIN_SEEN)
		pg_atomic_fetch_add_u64(&channel_shared->spins_seen, 1);
}

/* Whether a reply's header is in the session's reply ring. */
static bool
reply_ready(void *arg)
{
	return channel_ring_used(&my_slot->rep) >= sizeof(ReplyHeader);
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

	/*
	 * The worker sets our latch after every reply it writes.  A reply that
	 * comes within microseconds is waited for by spinning, which spares both
	 * sides the sleep and the wake-up.
	 */
	if (!reply_ready(NULL) && channel_spin_pays())
		channel_count_spin(spin_wait(&reply_spin, &channel_shared->spinners,
									 spin_wait_cores() - 1, reply_ready, NULL));
	while (!reply_ready(NULL))
		channel_wait(w);
	pg_atomic_write_u32(&my_slot->dirty, 1);	/* until the whole reply is read */
	channel_ring_peek(&my_slot->rep, 0, (char *) &hdr, sizeof(hdr));
	channel_ring_consume(&my_slot->rep, sizeof(hdr));

	resetStringInfo(out);
	enlargeStringInfo(out, hdr.len);
	while (got < hdr.len)
	{
		Size		avail = Min(channel_ring_used(&my_slot->rep), hdr.len - got);

		if (avail > 0)
		{
			channel_ring_peek(&my_slot->rep, 0, out->data + got, avail);
			channel_ring_consume(&my_slot->rep, avail);
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
channel_post(uint16 target, uint16 kind, const char *payload, uint32 len)
{
	uint32		generation;

	(void) channel_send(target, kind, false, payload, len, &generation);
	if (!have_pending)
		pending_generation = generation;	/* channel_send checks the others */
	have_pending = true;
	posts_unapplied = true;
}

/*
 * channel_worker_figures: the worker's pid (0: none), requests served, the
 * passes over the slots that served them, time busy, and the spins of
 * sessions and the worker (all, and those that saw what they waited for).
 */
void
channel_worker_figures(int *pid, uint64 *requests, uint64 *passes, uint64 *busy_us,
					   uint64 *spins, uint64 *spins_seen)
{
	*pid = (int) pg_atomic_read_u32(&channel_shared->worker_pid);
	*requests = pg_atomic_read_u64(&channel_shared->requests);
	*passes = pg_atomic_read_u64(&channel_shared->passes);
	*busy_us = pg_atomic_read_u64(&channel_shared->busy_us);
	*spins = pg_atomic_read_u64(&channel_shared->spins);
	*spins_seen = pg_atomic_read_u64(&channel_shared->spins_seen);
}

/*
 * channel_worker_reloaded: the worker has applied a configuration reload in
 * full (its settings are the file's, and its loop has applied them).
 * channel_worker_reloads: how many it has applied since the server started.
 */
void
channel_worker_reloaded(void)
{
	pg_atomic_fetch_add_u64(&channel_shared->reloads, 1);
}

uint64
channel_worker_reloads(void)
{
	return pg_atomic_read_u64(&channel_shared->reloads);
}

/*
 * channel_posts_applied: has the worker carried out every request this
 * session posted?  It has once it answers a later round trip (it serves a
 * session's requests in order), even if the transaction that posted them
 * aborted meanwhile.
 */
bool
channel_posts_applied(void)
{
	return !posts_unapplied;
}

/*
 * channel_call sends a request and waits for its reply, which goes to
 * "reply".  An earlier posted request that failed raises its error here.
 * A long-running request (a restore, a snapshot) waits for as long as the
 * worker lives instead of state_backend.request_timeout.
 */
void
channel_call(uint16 target, uint16 kind, const char *payload, uint32 len,
			 StringInfo reply, bool long_running)
{
	uint32		generation;
	uint32		seq = channel_send(target, kind, true, payload, len, &generation);
	ChannelWait w;

	have_pending = false;		/* answered in order before this (channel_send
								 * failed if a replaced worker dropped them) */
	channel_wait_begin(&w, long_running, generation);
	for (;;)
	{
		ReplyHeader hdr = channel_read_reply(reply, &w);

		if (hdr.seq == seq)
		{
			posts_unapplied = false;
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
channel_call_int64(uint16 target, uint16 kind, const char *payload, uint32 len,
				   bool long_running)
{
	StringInfoData reply;
	int64		n;

	initStringInfo(&reply);
	channel_call(target, kind, payload, len, &reply, long_running);
	if (reply.len != sizeof(n))
		elog(ERROR, "state_backend: malformed reply from the state worker");
	memcpy(&n, reply.data, sizeof(n));
	pfree(reply.data);
	return n;
}

/*
 * channel_session_lsn is the end of the WAL records the worker wrote for
 * this session's requests (logged states' changes), as of its last reply.
 */
XLogRecPtr
channel_session_lsn(void)
{
	channel_attach();
	return (XLogRecPtr) pg_atomic_read_u64(&my_slot->wal_lsn);
}

/* channel_sync waits until every request posted so far is done. */
void
channel_sync(void)
{
	StringInfoData reply;

	if (!have_pending)
		return;
	initStringInfo(&reply);
	channel_call(CHANNEL_TARGET_ALL, STATE_REQUEST_SYNC, NULL, 0, &reply, false);
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
