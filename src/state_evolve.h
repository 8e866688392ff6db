/*
 * state_evolve.h
 *		A state changed as a whole (alter_state): copied, converted, into a
 *		new state that takes its place at one instant.
 */
#ifndef STATE_BACKEND_STATE_EVOLVE_H
#define STATE_BACKEND_STATE_EVOLVE_H

#include "lib/stringinfo.h"

#include "common/types.h"

/*
 * Converts one entry of the old state (its key and image) into the new
 * state's, appended to key and image; false leaves the entry out (its TTL
 * ran out).  With image NULL (the key is not in the old state), it
 * converts the key alone and returns false.  It may raise an error, which fails the whole change.
 */
typedef bool (*StateEvolveFn) (void *arg, const char *key, uint32 keylen,
							   const char *image, uint32 len,
							   StringInfo newkey, StringInfo newimage);

extern int64 state_evolve(const StateDesc *old, int oldslot, StateDesc *newd,
						  bool logged_pending, bool online,
						  StateEvolveFn convert, void *arg);

#endif							/* STATE_BACKEND_STATE_EVOLVE_H */
