/*
 * common/fold.c
 *		The fold of ReducingState, and which folds need no catalog.
 */
#include "postgres.h"

#include "access/transam.h"
#include "catalog/pg_type.h"

#include "common/fold.h"

/*
 * state_fold returns cur <reducer> in: fn(cur, in) for sum; for min and
 * max, fn is a three-way comparison and the smaller (larger) one is
 * returned, the current value on a tie.
 */
Datum
state_fold(StateReducer kind, FmgrInfo *fn, Oid collation, Datum cur, Datum in)
{
	int32		cmp;

	if (kind == STATE_REDUCER_SUM)
		return FunctionCall2Coll(fn, collation, cur, in);
	cmp = DatumGetInt32(FunctionCall2Coll(fn, collation, cur, in));
	if (kind == STATE_REDUCER_MIN)
		return cmp <= 0 ? cur : in;
	return cmp >= 0 ? cur : in;
}

/*
 * state_fold_type_ok tells whether a fold of values of this type with this
 * function runs without any catalog access: built-in functions of types
 * whose "+" and comparison only look at the bytes (numbers, dates, times).
 * Ranges, arrays, enums or text would look up types, collations or enum
 * order in the catalog, which the state worker cannot read.
 */
bool
state_fold_type_ok(Oid type, Oid fn)
{
	if (fn >= FirstGenbkiObjectId)
		return false;
	switch (type)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
		case DATEOID:
		case TIMEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case INTERVALOID:
			return true;
		default:
			return false;
	}
}
