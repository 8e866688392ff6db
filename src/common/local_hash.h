/*
 * common/local_hash.h
 *		A backend-local hash table of fixed-size keys (dynahash with
 *		HASH_BLOBS), allocated in a memory context the caller names.  Tables
 *		with string keys, their own hash function or their own allocator
 *		still call hash_create themselves.
 */
#ifndef STATE_BACKEND_LOCAL_HASH_H
#define STATE_BACKEND_LOCAL_HASH_H

#include "utils/hsearch.h"

extern HTAB *local_hash_create(const char *name, long nelem, Size keysize, Size entrysize,
							   MemoryContext cxt);

#endif							/* STATE_BACKEND_LOCAL_HASH_H */
