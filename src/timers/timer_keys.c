/*
 * timers/timer_keys.c
 *		The keys a batch of the timer worker looks at, of states whose
 *		timers are keys to look at (timer_fire.h, by_key): each is looked
 *		at once a batch, however many of its timers are due.
 */
#include "postgres.h"

#include "common/hashfn.h"

#include "timers/timer_firing.h"

/* timer_keys_begin readies the set of a batch of at most max. */
void
timer_keys_begin(BatchKeys *seen, int max)
{
	seen->size = 16;
	while (seen->size < 2 * max + 1)
		seen->size *= 2;
	seen->slot = palloc0(sizeof(int) * seen->size);
}

/* The slot of a state's key: where it is, or the free one where it goes. */
static int
seen_probe(const BatchKeys *seen, const Firing *batch, const Fired *fs, const char *key,
		   uint32 keylen)
{
	uint32		h = hash_bytes((const unsigned char *) key, (int) keylen) ^ fs->id;
	int			i = (int) (h & (uint32) (seen->size - 1));

	for (;; i = (i + 1) & (seen->size - 1))
	{
		const Firing *b;

		if (seen->slot[i] == 0)
			return i;
		b = &batch[seen->slot[i] - 1];
		if (b->fs == fs && b->t.keylen == keylen && memcmp(b->t.key, key, keylen) == 0)
			return i;
	}
}

/* timer_keys_seen: is a state's key in the batch already? */
bool
timer_keys_seen(BatchKeys *seen, const Firing *batch, const Fired *fs, const Pending *p)
{
	return seen->slot[seen_probe(seen, batch, fs, p->key, p->keylen)] != 0;
}

/* timer_keys_add notes that batch[i], a key to look at, is in the batch. */
void
timer_keys_add(BatchKeys *seen, const Firing *batch, int i)
{
	int			s = seen_probe(seen, batch, batch[i].fs, batch[i].t.key, batch[i].t.keylen);

	if (seen->slot[s] == 0)
		seen->slot[s] = i + 1;
}
