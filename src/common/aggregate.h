/*
 * common/aggregate.h
 *		The PostgreSQL aggregate of an aggregating state (aggregate.c).
 */
#ifndef STATE_BACKEND_AGGREGATE_H
#define STATE_BACKEND_AGGREGATE_H

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/execnodes.h"

#include "common/codec.h"
#include "common/types.h"

/* What running one state's aggregate needs, set up once per call site. */
typedef struct AggregateRun
{
	int			nargs;			/* the aggregate's arguments, the value first */
	Oid		   *argtypes;
	Datum	   *no_values;		/* nargs NULLs, for a final function's extras */
	bool	   *all_null;
	Oid			transtype;
	int16		translen;
	bool		transbyval;
	bool		strict;			/* of the transition function */
	FmgrInfo	transfn;
	FmgrInfo	finalfn;
	int			final_nargs;	/* 0: no final function */
	Oid			result_type;	/* the final function's, or transtype */
	int16		result_len;
	bool		result_byval;
	FmgrInfo	combinefn;		/* fn_oid InvalidOid: none */
	FmgrInfo	serialfn;		/* transtype internal only */
	FmgrInfo	deserialfn;
	bool		init_null;
	Datum		init_value;		/* agginitval, read once; copied per key */
	Oid			collation;
	TypeCodec	image;			/* of the images: transtype, or bytea */
	ExprContext *aggcontext;	/* per-tuple memory: the transition state */
	ExprContext *tmpcontext;
	AggState   *aggstate;		/* the functions' stand-in context */
} AggregateRun;

extern void aggregate_describe(Oid aggfnoid, Oid input_type, Oid owner, StateDesc *desc);
extern void aggregate_resolve(StateDesc *desc);
extern Oid	aggregate_transtype(Oid aggfnoid);
extern AggregateRun *aggregate_run_init(const StateDesc *desc, MemoryContext mcxt);
extern void aggregate_fold(AggregateRun *run, const char *cur, uint32 curlen, Datum value,
						   const Datum *more, const bool *more_null, StringInfo out);
extern Datum aggregate_result(AggregateRun *run, const char *img, uint32 len, bool *isnull);
extern bool aggregate_has_combine(Oid aggfnoid);
extern char *aggregate_problem(Oid aggfnoid, Oid user);
extern void aggregate_combine(AggregateRun *run, const char *a, uint32 alen, const char *b,
							  uint32 blen, StringInfo out);

#endif							/* STATE_BACKEND_AGGREGATE_H */
