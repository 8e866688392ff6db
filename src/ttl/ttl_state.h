/*
 * ttl/ttl_state.h
 *		State TTL: the layer over a TTL state's backend (ttl_state.c), and
 *		its cleanup of what expired.
 */
#ifndef STATE_BACKEND_TTL_STATE_H
#define STATE_BACKEND_TTL_STATE_H

#include "backend/keyed_backend.h"

extern const KeyedStateBackend ttl_keyed_backend;
extern bool ttl_state_sweep(void);
extern bool ttl_image_visible(const StateDesc *desc, const char *img, uint32 len, int64 now,
							  StringInfo out);

/* What a state's writes go through once applied: the TTL layer or the backend. */
extern const KeyedStateBackend *keyed_state_ops_applied(const StateDesc *desc);

#endif							/* STATE_BACKEND_TTL_STATE_H */
