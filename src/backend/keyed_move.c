/*
 * backend/keyed_move.c
 *		A state being moved (alter_state copies it into a new state while
 *		its writers go on): its writes, and the keys they wrote.
 *
 * While a state moves, its descriptor names a move (StateDesc.moving) and
 * its writes go through keyed_move_backend, over its own backend: each
 * write, once done (a posted write once applied), adds its key to the
 * move's log, a ring in shared memory.  The copier (state_evolve.c) copies
 * the state and then takes the keys out of the log and copies each again as
 * it is by then: a key written after the copier read it is copied again,
 * since its write was done before its key was logged.  Writers that find
 * the log half full wait for the copier.  A log that filled up all the
 * same (or a truncate) says so, and the copier then copies everything
 * again.  Reads go to the state's own backend.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/shmem.h"

#include "backend/keyed_backend.h"
#include "backend/keyed_move.h"
#include "common/locks.h"

/* Moves at once, and each one's log. */
#define MOVE_SLOTS		2
#define MOVE_LOG_SIZE	(2 * 1024 * 1024)
/* A key longer than this overflows the log instead. */
#define MOVE_MAX_KEY	8192
/*
 * Keys logged beyond which writers wait for the copier (about a key group
 * of a 1M-entry state's worth of bigint keys): the copy then goes on at
 * least as fast as the writes it copies again.  How long a writer waits at
 * most, in ms.
 */
#define MOVE_LOG_PACE	(64 * 1024)
#define MOVE_WAIT_MS	1000

typedef struct MoveSlot
{
	uint32		state_id;		/* 0: free */
	Oid			dbid;
	int			pid;			/* the copier's */
	uint64		head;			/* bytes added, ever */
	uint64		tail;			/* bytes taken out, ever */
	bool		overflow;		/* a key could not be logged */
	char		log[MOVE_LOG_SIZE];
} MoveSlot;

typedef struct MoveShared
{
	MoveSlot	slots[MOVE_SLOTS];
} MoveShared;

static MoveShared *moves = NULL;

static void
moves_init(void *fresh)
{
	MoveShared *m = fresh;

	for (int i = 0; i < MOVE_SLOTS; i++)
	{
		m->slots[i].state_id = 0;
		m->slots[i].pid = 0;
	}
}

const ShmemPart keyed_move_part = {
	.name = "state_backend moves",
	.size = sizeof(MoveShared),
	.init = moves_init,
	.where = (void **) &moves,
};

/*
 * keyed_move_begin claims a move for a state; returns its number (1 and
 * up, what StateDesc.moving holds), or 0 when every move is taken.
 */
int
keyed_move_begin(const StateDesc *desc)
{
	int			found = 0;

	LWLockAcquire(state_backend_lock(LOCK_MOVE), LW_EXCLUSIVE);
	for (int i = 0; i < MOVE_SLOTS && found == 0; i++)
	{
		MoveSlot   *s = &moves->slots[i];

		/* A copier that died left its slot. */
		if (s->state_id != 0 && s->pid != 0 && kill(s->pid, 0) != 0 && errno == ESRCH)
			s->state_id = 0;
		if (s->state_id == 0)
		{
			s->state_id = desc->id;
			s->dbid = desc->dbid;
			s->pid = MyProcPid;
			s->head = s->tail = 0;
			s->overflow = false;
			found = i + 1;
		}
	}
	LWLockRelease(state_backend_lock(LOCK_MOVE));
	return found;
}

/* keyed_move_end gives a move back. */
void
keyed_move_end(int move)
{
	MoveSlot   *s = &moves->slots[move - 1];

	LWLockAcquire(state_backend_lock(LOCK_MOVE), LW_EXCLUSIVE);
	s->state_id = 0;
	s->pid = 0;
	LWLockRelease(state_backend_lock(LOCK_MOVE));
}

static MoveSlot *
slot_of(const StateTarget *st)
{
	int			m = st->desc->moving;

	Assert(m >= 1 && m <= MOVE_SLOTS);
	return &moves->slots[m - 1];
}

/*
 * Log the key of a write that is done.  A writer that finds the log full
 * waits for the copier to take keys out (1 ms at a time, at most a
 * second): writers faster than the copy go at its pace instead of filling
 * the log, which would make it copy everything again (a log holding more
 * than MOVE_LOG_PACE bytes counts as full for this).  It is not
 * interrupted meanwhile: its write is made, and its key must be logged.
 */
static void
note_key(const StateTarget *st, const StateKey *key)
{
	MoveSlot   *s = slot_of(st);
	uint32		len = key->len;
	uint32		need = sizeof(uint32) + len;

	for (int waited = 0;; waited++)
	{
		LWLockAcquire(state_backend_lock(LOCK_MOVE), LW_EXCLUSIVE);
		if (s->state_id != st->info.id)
			break;				/* the move ended */
		if (len > MOVE_MAX_KEY || s->head - s->tail + need > MOVE_LOG_SIZE)
		{
			s->overflow = true;
			break;
		}
		if (s->head - s->tail + need <= MOVE_LOG_PACE || waited >= MOVE_WAIT_MS)
		{
			const char *src[2] = {(const char *) &len, key->data};
			uint32		n[2] = {sizeof(uint32), len};

			for (int part = 0; part < 2; part++)
				for (uint32 done = 0; done < n[part];)
				{
					uint32		at = (uint32) (s->head % MOVE_LOG_SIZE);
					uint32		room = Min(n[part] - done, MOVE_LOG_SIZE - at);

					memcpy(s->log + at, src[part] + done, room);
					done += room;
					s->head += room;
				}
			break;
		}
		LWLockRelease(state_backend_lock(LOCK_MOVE));
		pg_usleep(1000L);
	}
	LWLockRelease(state_backend_lock(LOCK_MOVE));
}

/* Every key may have changed (a truncate). */
static void
note_all(const StateTarget *st)
{
	MoveSlot   *s = slot_of(st);

	LWLockAcquire(state_backend_lock(LOCK_MOVE), LW_EXCLUSIVE);
	if (s->state_id == st->info.id)
		s->overflow = true;
	LWLockRelease(state_backend_lock(LOCK_MOVE));
}

/*
 * keyed_move_take takes the keys logged so far out of a move's log into
 * out (each [length, uint32][key]); returns false when the log overflowed
 * (then out holds nothing, and the copier copies everything again).
 */
bool
keyed_move_take(int move, StringInfo out)
{
	MoveSlot   *s = &moves->slots[move - 1];
	bool		ok;

	resetStringInfo(out);
	LWLockAcquire(state_backend_lock(LOCK_MOVE), LW_EXCLUSIVE);
	ok = !s->overflow;
	if (ok)
	{
		uint64		n = s->head - s->tail;

		enlargeStringInfo(out, (int) n);
		while (s->tail < s->head)
		{
			uint32		at = (uint32) (s->tail % MOVE_LOG_SIZE);
			uint32		room = (uint32) Min(s->head - s->tail, (uint64) (MOVE_LOG_SIZE - at));

			memcpy(out->data + out->len, s->log + at, room);
			out->len += (int) room;
			s->tail += room;
		}
		out->data[out->len] = '\0';
	}
	else
	{
		s->overflow = false;
		s->tail = s->head;
	}
	LWLockRelease(state_backend_lock(LOCK_MOVE));
	return ok;
}

/* ------------------------------------------------------------ the layer */

static const KeyedStateBackend *
inner(const StateTarget *st)
{
	return keyed_backend_by_id(st->desc->backend);
}

/* A write is done when the backend applied it: posted ones are waited for. */
static void
written(const StateTarget *st, const StateKey *key)
{
	const KeyedStateBackend *b = inner(st);

	if (b->flush)
		b->flush();
	note_key(st, key);
}

static bool
move_get(const StateTarget *st, const StateKey *key, StringInfo out)
{
	return inner(st)->get(st, key, out);
}

static void
move_put(const StateTarget *st, const StateKey *key, const char *value, uint32 len)
{
	inner(st)->put(st, key, value, len);
	written(st, key);
}

static void
move_put_many(const StateTarget *st, const StateKey *keys, const char *const *values,
			  const uint32 *lens, int n)
{
	const KeyedStateBackend *b = inner(st);

	if (b->put_many)
		b->put_many(st, keys, values, lens, n);
	else
		for (int i = 0; i < n; i++)
			b->put(st, &keys[i], values[i], lens[i]);
	if (b->flush)
		b->flush();
	for (int i = 0; i < n; i++)
		note_key(st, &keys[i]);
}

static bool
move_remove(const StateTarget *st, const StateKey *key)
{
	bool		r = inner(st)->remove(st, key);

	written(st, key);
	return r;
}

static bool
move_replace(const StateTarget *st, const StateKey *key, const char *mkey, uint32 mkeylen,
			 const char *expect, uint32 expectlen, const char *value, uint32 len)
{
	bool		r = inner(st)->replace(st, key, mkey, mkeylen, expect, expectlen, value, len);

	if (r)
		written(st, key);
	return r;
}

static void
move_append(const StateTarget *st, const StateKey *key, const char *elems, uint32 len)
{
	inner(st)->append(st, key, elems, len);
	written(st, key);
}

static void
move_merge(const StateTarget *st, const StateKey *key, const char *value, uint32 len,
		   StateMergeFn fn, void *arg, const StateFold *fold, StringInfo out)
{
	inner(st)->merge(st, key, value, len, fn, arg, fold, out);
	written(st, key);
}

static bool
move_map_get(const StateTarget *st, const StateKey *key, const char *mkey, uint32 mkeylen,
			 StringInfo out, bool *isnull)
{
	return inner(st)->map_get(st, key, mkey, mkeylen, out, isnull);
}

static void
move_map_put(const StateTarget *st, const StateKey *key, const char *mkey, uint32 mkeylen,
			 const char *value, uint32 len, bool isnull)
{
	inner(st)->map_put(st, key, mkey, mkeylen, value, len, isnull);
	written(st, key);
}

static bool
move_map_remove(const StateTarget *st, const StateKey *key, const char *mkey, uint32 mkeylen)
{
	bool		r = inner(st)->map_remove(st, key, mkey, mkeylen);

	written(st, key);
	return r;
}

static void
move_map_iterate(const StateTarget *st, const StateKey *key, StateEntryFn fn, void *arg)
{
	inner(st)->map_iterate(st, key, fn, arg);
}

static int64
move_length(const StateTarget *st, const StateKey *key)
{
	return inner(st)->length(st, key);
}

static void
move_iterate(const StateTarget *st, int key_group, StateEntryFn fn, void *arg)
{
	inner(st)->iterate(st, key_group, fn, arg);
}

static int64
move_truncate(const StateTarget *st)
{
	int64		n = inner(st)->truncate(st);

	note_all(st);
	return n;
}

static void
move_compact(const StateTarget *st)
{
	if (inner(st)->compact)
		inner(st)->compact(st);
}

static void
move_size(const StateTarget *st, int64 *entries, int64 *bytes)
{
	inner(st)->size(st, entries, bytes);
}

/*
 * The layer of a moving state's writes.  Transactional states are not
 * moved while written (their commits may be staged below any layer): their
 * writers wait for the copy.
 */
const KeyedStateBackend keyed_move_backend = {
	.name = "move",
	.get = move_get,
	.put = move_put,
	.put_many = move_put_many,
	.remove = move_remove,
	.replace = move_replace,
	.append = move_append,
	.merge = move_merge,
	.map_get = move_map_get,
	.map_put = move_map_put,
	.map_remove = move_map_remove,
	.map_iterate = move_map_iterate,
	.length = move_length,
	.iterate = move_iterate,
	.truncate = move_truncate,
	.compact = move_compact,
	.size = move_size,
};

/*
 * keyed_backend_of: the operations a state's writes and reads go through
 * below the TTL layer: its backend's, or, while it moves, this layer's.
 */
const KeyedStateBackend *
keyed_backend_of(const StateDesc *desc)
{
	return desc->moving ? &keyed_move_backend : keyed_backend_by_id(desc->backend);
}
