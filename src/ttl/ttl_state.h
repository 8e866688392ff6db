/*
 * ttl/ttl_state.h
 *		State TTL: the layer over a TTL state's backend (ttl_state.c), and
 *		its cleanup of what expired.
 */
#ifndef STATE_BACKEND_TTL_STATE_H
#define STATE_BACKEND_TTL_STATE_H

#include "backend/keyed_backend.h"

extern bool ttl_state_sweep(void);

#endif							/* STATE_BACKEND_TTL_STATE_H */
