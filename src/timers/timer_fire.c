/*
 * timers/timer_fire.c
 *		The routines the timer worker fires states through, by the state's
 *		kind (registered at load, module.c), and a timers state's own: its
 *		timers are the instants of a map per key, and each one due calls
 *		the handler with (key, instant).  A window state's routines are
 *		with the window code's fold, which module.c registers too.
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "format/records.h"
#include "timers/timer_fire.h"
#include "txn/txn_state.h"

static const StateFireRoutine *routines[STATE_KIND_LAST + 1];

/* timer_fire_register: states of kind fire through routine (in _PG_init). */
void
timer_fire_register(StateKind kind, const StateFireRoutine *routine)
{
	Assert(kind >= 0 && kind <= STATE_KIND_LAST);
	routines[kind] = routine;
}

/* timer_fire_routine: what a state that fires fires through. */
const StateFireRoutine *
timer_fire_routine(const StateDesc *desc)
{
	const StateFireRoutine *r = NULL;

	if (desc->kind >= 0 && desc->kind <= STATE_KIND_LAST)
		r = routines[desc->kind];
	if (r == NULL)
		elog(ERROR, "state_backend: state \"%s\" has no routine to fire its timers",
			 NameStr(desc->name));
	return r;
}

/* A key's timers: the keys of its map, instants. */
static void
timers_due_times(const TimerFire *tf, const char *img, uint32 len, TimerDueFn fn, void *arg)
{
	uint32		off = 0;
	RecordPair	pair;

	while (record_next_pair(img, len, &off, &pair) == RECORD_OK)
		fn(arg, DatumGetTimestampTz(codec_decode(tf->at_codec, pair.key, pair.keylen)));
}

static bool
timers_present(const TimerFire *tf)
{
	StringInfoData scratch;
	bool		isnull;

	initStringInfo(&scratch);
	return keyed_state_ops(tf->st->desc)->map_get(tf->st, tf->key, tf->atimg->data,
												  tf->atimg->len, &scratch, &isnull);
}

/* The handler, with (key, instant): its result, NULL or not, is not looked at. */
static bool
timers_fire(TimerFire *tf)
{
	LOCAL_FCINFO(fcinfo, 2);

	InitFunctionCallInfoData(*fcinfo, tf->handler, 2, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = codec_decode(tf->key_codec, tf->key->data, tf->key->len);
	fcinfo->args[0].isnull = false;
	fcinfo->args[1].value = TimestampTzGetDatum(tf->at);
	fcinfo->args[1].isnull = false;
	(void) FunctionCallInvoke(fcinfo);
	tf->emitted++;
	return true;
}

/* A timer, fired or failed, leaves its key's map. */
static bool
timers_done(TimerFire *tf, bool fired)
{
	keyed_state_ops(tf->st->desc)->map_remove(tf->st, tf->key, tf->atimg->data,
											  tf->atimg->len);
	return false;
}

/* Each timer is one call of the handler. */
const StateFireRoutine timers_fire_routine = {
	"handler", false, timers_due_times, timers_present, timers_fire, timers_done
};
