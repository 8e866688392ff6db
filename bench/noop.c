/*
 * noop.c
 *		The benchmark's floor: a C function that does nothing.
 *
 * bench/run builds it into a temporary directory (no extension, no install)
 * and declares it as bench.noop(text, text), so the floor statement
 * "SELECT bench.noop($1, $2)" has the shape of "SELECT state.value_set('s',
 * $1, $2)": same call path, same parameters, no work.
 */
#include "postgres.h"

#include "fmgr.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(bench_noop);

Datum
bench_noop(PG_FUNCTION_ARGS)
{
	PG_RETURN_VOID();
}
