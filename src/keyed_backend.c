/*
 * keyed_backend.c
 *		Which KeyedStateBackend implementation serves a state backend.
 *
 * The implementations themselves are in heap_backend.c (memory and
 * filesystem) and rocksdb_client.c.
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
			return &rocksdb_keyed_backend;
	}
	elog(ERROR, "state_backend: unknown backend %d", (int) backend);
	return NULL;
}
