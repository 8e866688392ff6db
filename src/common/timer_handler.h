/*
 * common/timer_handler.h
 *		The handler of a timers state: the function a due timer calls, and a
 *		window state's late function (timer_handler.c).
 */
#ifndef STATE_BACKEND_TIMER_HANDLER_H
#define STATE_BACKEND_TIMER_HANDLER_H

#include "access/tupdesc.h"

#include "common/types.h"

extern void timer_handler_describe(Oid fn, Oid owner, StateDesc *desc);
extern Oid	window_result_type(const StateDesc *desc);
extern void timer_handler_resolve(StateDesc *desc);
extern const char *timer_handler_problem(const StateDesc *desc);
extern void late_fn_describe(Oid fn, StateDesc *desc);
extern void late_fn_resolve(StateDesc *desc);
extern const char *late_fn_problem(const StateDesc *desc);
extern char *emit_table_columns_problem(TupleDesc tupdesc, const StateDesc *desc);
extern void emit_table_describe(Oid relid, StateDesc *desc);
extern void emit_table_resolve(StateDesc *desc);

#endif							/* STATE_BACKEND_TIMER_HANDLER_H */
