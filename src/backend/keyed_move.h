/*
 * backend/keyed_move.h
 *		A state being moved by alter_state while its writers go on: the
 *		layer its writes go through, and the log of the keys they wrote.
 */
#ifndef STATE_BACKEND_KEYED_MOVE_H
#define STATE_BACKEND_KEYED_MOVE_H

#include "lib/stringinfo.h"

#include "common/shmem_parts.h"
#include "common/state_desc.h"

extern const ShmemPart keyed_move_part;
extern const KeyedStateBackend keyed_move_backend;

extern int	keyed_move_begin(const StateDesc *desc);
extern void keyed_move_end(int move);
extern bool keyed_move_take(int move, StringInfo out);
extern const KeyedStateBackend *keyed_backend_of(const StateDesc *desc);

#endif							/* STATE_BACKEND_KEYED_MOVE_H */
