/*
 * common/local_hash.c
 *		Creating a backend-local hash table of fixed-size keys; see
 *		local_hash.h.
 */
#include "postgres.h"

#include "common/local_hash.h"

/*
 * local_hash_create returns a new hash table named name, sized for nelem
 * entries of entrysize bytes whose first keysize bytes are the key,
 * compared as bytes.  The table and its entries live in cxt: deleting or
 * resetting cxt frees them, and hash_destroy frees them sooner.
 */
HTAB *
local_hash_create(const char *name, long nelem, Size keysize, Size entrysize,
				  MemoryContext cxt)
{
	HASHCTL		ctl;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = keysize;
	ctl.entrysize = entrysize;
	ctl.hcxt = cxt;
	return hash_create(name, nelem, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}
