/*
 * keyed_backend.c
 *		Which KeyedStateBackend implementation serves a state backend.
 *
 * The implementations themselves are in heap_backend.c (memory and
 * filesystem) and rocksdb_client.c.
 */
#include "postgres.h"

#include "access/transam.h"
#include "catalog/pg_type.h"

#include "keyed_backend.h"

/*
 * keyed_backend_for returns the implementation behind a backend name.  The
 * memory and filesystem backends differ only in where snapshots go.
 */
const KeyedStateBackend *
keyed_backend_for(StateBackendId backend)
{
	switch (backend)
	{
		case STATE_BACKEND_MEMORY:
		case STATE_BACKEND_FILESYSTEM:
			return &heap_keyed_backend;
		case STATE_BACKEND_ROCKSDB:
			return &rocksdb_keyed_backend;
	}
	elog(ERROR, "state_backend: unknown backend %d", (int) backend);
	return NULL;
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
