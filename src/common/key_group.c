/*
 * common/key_group.c
 *		Key images to key groups.
 *
 * A key's key group is a stable hash of its image modulo
 * state_backend.max_parallelism, as Flink assigns keys to key groups.  It
 * is computed by the session for every call (StateKey.key_group) and
 * passed to the backend, which may store it with an entry or derive it
 * (the heap derives it from the partition).
 */
#include "postgres.h"

#include "common/hashfn.h"

#include "common/key_group.h"

/*
 * key_image_hash returns the hash of a key image.  hash_bytes is a fixed
 * function of the bytes, so the result is the same in every process and
 * release of the server.
 */
uint32
key_image_hash(const char *image, uint32 len)
{
	return hash_bytes((const unsigned char *) image, (int) len);
}

/*
 * key_group_for_hash maps a key hash to a key group in [0, max_parallelism).
 * The hash is mixed once more so that the key group does not share its low
 * bits with the heap table's partition number.
 */
int
key_group_for_hash(uint32 hash, int max_parallelism)
{
	return (int) (murmurhash32(hash) % (uint32) max_parallelism);
}

/*
 * key_group_range_of_part gives the key groups [*first, *last] of part
 * "part" (0-based) of "parallelism" parts, as Flink's
 * KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex does; the
 * caller has checked 0 <= part < parallelism <= max_parallelism.
 */
void
key_group_range_of_part(int max_parallelism, int parallelism, int part, int *first, int *last)
{
	*first = (int) (((int64) part * max_parallelism + parallelism - 1) / parallelism);
	*last = (int) ((((int64) part + 1) * max_parallelism - 1) / parallelism);
}

/*
 * key_group_part is the part of "parallelism" parts that owns a key group
 * (Flink's computeOperatorIndexForKeyGroup).
 */
int
key_group_part(int max_parallelism, int parallelism, int key_group)
{
	return (int) ((int64) key_group * parallelism / max_parallelism);
}
