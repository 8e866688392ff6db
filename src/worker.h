/*
 * worker.h
 *		The state worker: registered by module.c, its loop in worker.c.
 */
#ifndef STATE_BACKEND_WORKER_H
#define STATE_BACKEND_WORKER_H

extern void state_worker_register(void);

#endif							/* STATE_BACKEND_WORKER_H */
