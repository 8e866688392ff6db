/*
 * keyed_backend.c
 *		Which KeyedStateBackend implementation serves a state backend.
 *
 * The implementations themselves are in heap_backend.c (memory and
 * filesystem).
 */
#include "postgres.h"

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
			break;
	}
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("the rocksdb state backend is not available in this build")));
	return NULL;
}
