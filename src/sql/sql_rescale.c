/*
 * sql/sql_rescale.c
 *		Splitting keyed state across servers, as Flink rescales with key
 *		groups (KeyGroupRangeAssignment): which key groups a part holds,
 *		and which part holds a key.
 *
 * A key's key group is fixed (state.key_group); of "parallelism" parts,
 * part i holds a contiguous range of key groups.  A restore of one part
 * (snapshot/rescale.c) keeps only its range; clients route each key to the
 * server holding it with state.part_for.  A proxy's rescale pauses the
 * firing of its parts' timers and windows meanwhile (state._pause_timers).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/rangetypes.h"
#include "utils/typcache.h"

#include "common/key_group.h"
#include "common/settings.h"
#include "sql/sql_common.h"
#include "timers/timer_queue.h"

PG_FUNCTION_INFO_V1(state_key_group_range);
PG_FUNCTION_INFO_V1(state_part_for);
PG_FUNCTION_INFO_V1(state_pause_timers);

/* key_group_range_datum is the int4range [first, last + 1). */
Datum
key_group_range_datum(int first, int last)
{
	TypeCacheEntry *typcache = lookup_type_cache(INT4RANGEOID, TYPECACHE_RANGE_INFO);
	RangeBound	lower = {Int32GetDatum(first), false, true, true};
	RangeBound	upper = {Int32GetDatum(last + 1), false, false, false};

	return RangeTypePGetDatum(make_range(typcache, &lower, &upper, false));
}

/*
 * state_check_parts raises invalid_parameter_value unless a parallelism and
 * a part (arguments, maybe NULL) name a part of this server's key groups.
 */
void
state_check_parts(bool parallelism_null, int parallelism, bool part_null, int part)
{
	int			max = state_backend_max_parallelism;

	if (parallelism_null)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parallelism must not be null")));
	if (part_null)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("part must not be null"),
				 errdetail("A part of %d parts is numbered 0 to %d.", parallelism, parallelism - 1)));
	if (parallelism < 1 || parallelism > max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parallelism %d is out of range", parallelism),
				 errdetail("It must be between 1 and state_backend.max_parallelism (%d).", max)));
	if (part < 0 || part >= parallelism)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("part %d is out of range", part),
				 errdetail("Parts of parallelism %d are numbered 0 to %d.",
						   parallelism, parallelism - 1)));
}

/* key_group_range(parallelism, part): the key groups part holds. */
Datum
state_key_group_range(PG_FUNCTION_ARGS)
{
	int			first;
	int			last;

	state_check_parts(PG_ARGISNULL(0), PG_ARGISNULL(0) ? 0 : PG_GETARG_INT32(0),
					  PG_ARGISNULL(1), PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1));
	key_group_range_of_part(state_backend_max_parallelism, PG_GETARG_INT32(0),
							PG_GETARG_INT32(1), &first, &last);
	return key_group_range_datum(first, last);
}

/* part_for(name, key, parallelism): the part that holds the key. */
Datum
state_part_for(PG_FUNCTION_ARGS)
{
	StateCall  *call = state_call_begin(fcinfo, KEYED_KIND, STATE_PRIV_READ);
	int			parallelism;

	state_check_parts(PG_ARGISNULL(2), PG_ARGISNULL(2) ? 0 : PG_GETARG_INT32(2), false, 0);
	parallelism = PG_GETARG_INT32(2);
	state_call_key_image(call, fcinfo, 1);
	PG_RETURN_INT32(key_group_part(state_backend_max_parallelism, parallelism,
								   call->key.key_group));
}

/*
 * _pause_timers(pause): with true, no timer or window of this database
 * fires until _pause_timers(false) in this session or its end; returns once
 * the batch its timer worker was firing is done.  A proxy's rescale pauses
 * every part so, from before its snapshots to after its restores: what a
 * handler wrote in between would be lost with the part's old contents.
 * Not for PUBLIC.
 */
Datum
state_pause_timers(PG_FUNCTION_ARGS)
{
	state_call_require_arg(fcinfo, 0, "pause");
	if (PG_GETARG_BOOL(0))
		timer_queue_pause();
	else
		timer_queue_resume();
	PG_RETURN_VOID();
}
