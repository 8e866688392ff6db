/*
 * timers/timer_windows.c
 *		What the timer worker does for window states: one look at a key
 *		per batch, and a look, which calls emit for the windows due
 *		(sql/sql_window_fold.c has the rest).
 */
#include "postgres.h"

#include "common/hashfn.h"

#include "common/fault.h"
#include "sql/sql_window.h"
#include "timers/timer_firing.h"
#include "txn/txn_state.h"

/* timer_windows_begin readies the set of a batch of at most max. */
void
timer_windows_begin(BatchKeys *seen, int max)
{
	seen->size = 16;
	while (seen->size < 2 * max + 1)
		seen->size *= 2;
	seen->slot = palloc0(sizeof(int) * seen->size);
}

/* The slot of a state's key: where it is, or the free one where it goes. */
static int
seen_probe(const BatchKeys *seen, const Firing *batch, const Fired *fs, const char *key,
		   uint32 keylen)
{
	uint32		h = hash_bytes((const unsigned char *) key, (int) keylen) ^ fs->id;
	int			i = (int) (h & (uint32) (seen->size - 1));

	for (;; i = (i + 1) & (seen->size - 1))
	{
		const Firing *b;

		if (seen->slot[i] == 0)
			return i;
		b = &batch[seen->slot[i] - 1];
		if (b->fs == fs && b->t.keylen == keylen && memcmp(b->t.key, key, keylen) == 0)
			return i;
	}
}

/* timer_windows_seen: is a window state's key in the batch already? */
bool
timer_windows_seen(BatchKeys *seen, const Firing *batch, const Fired *fs, const Pending *p)
{
	return seen->slot[seen_probe(seen, batch, fs, p->key, p->keylen)] != 0;
}

/* timer_windows_add notes that batch[i], a window state's key, is in the batch. */
void
timer_windows_add(BatchKeys *seen, const Firing *batch, int i)
{
	int			s = seen_probe(seen, batch, batch[i].fs, batch[i].t.key, batch[i].t.keylen);

	if (seen->slot[s] == 0)
		seen->slot[s] = i + 1;
}

/* emit(key, window start, window end, result) of one window. */
static void
emit_window(void *arg, int64 start, int64 end, Datum result, bool isnull)
{
	Firing	   *f = arg;
	LOCAL_FCINFO(fcinfo, 4);

	/* A strict function is not called with a NULL, as SQL does not call it. */
	if (isnull && f->fs->handler.fn_strict)
	{
		f->emitted++;
		return;
	}
	InitFunctionCallInfoData(*fcinfo, &f->fs->handler, 4, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = codec_decode(&f->fs->key_codec, f->t.key, f->t.keylen);
	fcinfo->args[0].isnull = false;
	fcinfo->args[1].value = TimestampTzGetDatum(start);
	fcinfo->args[1].isnull = false;
	fcinfo->args[2].value = TimestampTzGetDatum(end);
	fcinfo->args[2].isnull = false;
	fcinfo->args[3].value = result;
	fcinfo->args[3].isnull = isnull;
	FAULT_POINT("window.before_emit");
	(void) FunctionCallInvoke(fcinfo);
	FAULT_POINT("window.after_emit");
	f->emitted++;
}

/*
 * timer_windows_fire calls emit for the windows of a window state's key due by
 * the clock of the batch, in the subtransaction the caller opened (as the
 * state's owner, under the timeout); what it fired folds into the key
 * with the handler's writes for a transactional state, after the commit
 * otherwise.  False when nothing was due (an index entry gone stale).
 */
bool
timer_windows_fire(Firing *f, const StateTarget *st, const StateKey *key)
{
	WindowRun  *run = window_run_kept(&f->fs->desc);
	StringInfoData img;
	bool		any;

	initStringInfo(&img);
	if (!keyed_state_ops(st->desc)->get(st, key, &img))
		return false;
	any = window_fire_image(run, img.data, img.len, f->clock, emit_window, f, &f->mark,
							&f->revisit);
	if (any && st->desc->transactional)
		window_mark_fired(run, st, key, f->mark.data, f->mark.len);
	return any;
}

