/*
 * common/membuf.h
 *		Growing a StringInfo without raising an error, for code that must
 *		not raise one: under an LWLock, or in the state worker's loop, where
 *		an error for one request must not take down the others.
 */
#ifndef STATE_BACKEND_MEMBUF_H
#define STATE_BACKEND_MEMBUF_H

#include "lib/stringinfo.h"

extern bool membuf_room(StringInfo buf, Size n);
extern void membuf_shrink(StringInfo buf, Size keep);

#endif							/* STATE_BACKEND_MEMBUF_H */
