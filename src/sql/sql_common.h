/*
 * sql/sql_common.h
 *		What every SQL-callable function does first: resolve the state named
 *		by its first argument, check kind and privileges, and turn its typed
 *		arguments into images and images back into typed results.
 *
 * A StateCall is kept in the call site's fn_extra, and across executions of
 * a plan by sql_call_cache.c; it is revalidated against the registry
 * version on every call.
 */
#ifndef STATE_BACKEND_SQL_COMMON_H
#define STATE_BACKEND_SQL_COMMON_H

#include "fmgr.h"
#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "nodes/execnodes.h"
#include "utils/array.h"

#include "common/codec.h"
#include "backend/keyed_backend.h"

/* How an argument of one type becomes a datum of the state's type. */
typedef struct Coercion
{
	bool		ready;
	Oid			from;
	int			method;
	FmgrInfo	fn;
	int			nargs;
	FmgrInfo	out;
} Coercion;

/* The roles of a typed argument, for coercions and messages. */
typedef enum StateArgRole
{
	ARG_KEY,
	ARG_MAP_KEY,
	ARG_VALUE,
	ARG_ROLE_COUNT
} StateArgRole;

/*
 * A typed argument: a function's (state_call_arg), or a column of a row
 * a table feeds to a state (sql_feed.c).  type is invalid when isnull.
 */
typedef struct StateArg
{
	Datum		value;
	bool		isnull;
	Oid			type;
} StateArg;

typedef struct StateCall
{
	NameData	name;
	uint64		version;
	StateDesc	desc;
	StateTarget target;
	const KeyedStateBackend *backend;
	MemoryContext own;			/* holds the call itself and its buffers */
	MemoryContext mcxt;			/* codecs and coercions; reset on change */
	uint64		gen;			/* catalog generation it was made in */
	uint32		context_key;	/* role and search_path it was made under */

	TypeCodec	codecs[ARG_ROLE_COUNT];
	Coercion	coerce_in[ARG_ROLE_COUNT];
	/* declared type to the call's result type, per role */
	Coercion	coerce_out[ARG_ROLE_COUNT];
	TypeCodec	result_codecs[ARG_ROLE_COUNT];
	/* declared types that are domains, and domain_check's cache for each */
	bool		domain[ARG_ROLE_COUNT];
	void	   *domain_cache[ARG_ROLE_COUNT];

	StateKey	key;
	StringInfoData keybuf;
	StringInfoData buf;			/* value or map-key image scratch */
	StringInfoData buf2;

	void	   *extra;			/* per-kind data (reducer set-up) */
} StateCall;

extern StateCall *state_call_begin(FunctionCallInfo fcinfo, int kind, uint8 privs);
extern void state_call_check_server(void);
extern void state_call_name_new(const char *name, NameData *out);
extern bool state_interval_usecs(const Interval *iv, int64 *usecs);
extern void state_call_resolve(StateCall *call, const char *name, int kind, uint8 privs);
extern void state_standby_check_ready(void);
extern StateCall *state_call_detached(const StateDesc *desc);
extern void state_call_setup_detached(StateCall *call, const StateDesc *desc);
extern Datum state_call_default(StateCall *call, FunctionCallInfo fcinfo, int argno);

/* sql_call_cache.c */
extern StateCall *state_call_site(FunctionCallInfo fcinfo);
extern StateCall *state_call_new(MemoryContext parent);
extern bool state_call_fresh(const StateCall *call, uint32 context_key);
extern uint32 state_call_context(void);
extern StateArg state_call_arg(FunctionCallInfo fcinfo, int argno);
extern bool state_call_accepts_type(Oid from, Oid to);
extern void state_call_key(StateCall *call, FunctionCallInfo fcinfo, int argno);
extern void state_call_key_arg(StateCall *call, const StateArg *arg);
extern StateCall *state_call_keyed(FunctionCallInfo fcinfo, int kind, uint8 privs);
extern void state_call_key_image(StateCall *call, FunctionCallInfo fcinfo, int argno);
extern void state_call_encode(StateCall *call, FunctionCallInfo fcinfo, int argno,
							  StateArgRole role, StringInfo out);
extern void state_call_encode_arg(StateCall *call, const StateArg *arg, StateArgRole role,
								  StringInfo out);
extern void state_call_encode_datum(StateCall *call, Datum value, Oid type,
									StateArgRole role, StringInfo out);
extern Datum state_call_coerce(StateCall *call, Datum value, Oid from,
							   StateArgRole role);
extern Datum state_call_coerce_arg(StateCall *call, Coercion *co, TypeCodec *target,
								   void **domain_cache, Datum value, Oid from,
								   const char *what);
extern void state_call_check_domain(StateCall *call, Datum value, StateArgRole role);
extern Datum state_call_result(StateCall *call, const char *image, uint32 len,
							   Oid restype);
extern Datum state_call_result_datum(StateCall *call, Datum value, Oid from,
									 StateArgRole role, Oid restype);
extern ArrayType *state_call_array_arg(StateCall *call, FunctionCallInfo fcinfo,
									   int argno, StateArgRole role, Oid *elemtype);
extern Oid	state_call_argtype(FunctionCallInfo fcinfo, int argno);
extern void state_call_reject_kind(StateCall *call, StateKind wanted);
extern int	state_array_elems(ArrayType *arr, Datum **elems, bool **nulls);
extern void state_call_list_image(StateCall *call, ArrayType *arr, Oid arrtype,
								  StringInfo out);
extern void state_call_require_arg(FunctionCallInfo fcinfo, int argno, const char *what);
extern char *state_call_name_arg(FunctionCallInfo fcinfo);

/*
 * The bodies of the functions that write one key (call->key, read
 * already), shared by the functions and a table's feed (sql_feed.c).
 */
extern void sql_value_set(StateCall *call, const StateArg *value);
extern void sql_list_add_arg(StateCall *call, const StateArg *value);
extern void sql_map_put_arg(StateCall *call, const StateArg *map_key, const StateArg *value);
extern void sql_reduce_arg(StateCall *call, const StateArg *value);
extern void sql_aggregate_check_args(StateCall *call, int given);
extern void sql_aggregate_arg(StateCall *call, const StateArg *value);
extern void sql_timer_register_arg(StateCall *call, const StateArg *at);
extern void sql_window_add_arg(StateCall *call, const StateArg *event_time,
							   const StateArg *value);

/* sql_list.c, sql_map.c: the bodies operator states share */
extern Datum sql_list_add(StateCall *call, FunctionCallInfo fcinfo, int argno);
extern Datum sql_list_add_all(StateCall *call, FunctionCallInfo fcinfo, int argno);
extern Datum sql_list_update(StateCall *call, FunctionCallInfo fcinfo, int argno);
extern Datum sql_list_get(StateCall *call, FunctionCallInfo fcinfo, int argno);
extern Datum sql_list_datum(StateCall *call, const char *img, uint32 imglen, Oid restype);
extern Datum sql_map_put(StateCall *call, FunctionCallInfo fcinfo, int argno);
extern Datum sql_map_get(StateCall *call, FunctionCallInfo fcinfo, int argno);
extern Datum sql_map_remove(StateCall *call, FunctionCallInfo fcinfo, int argno);
extern Datum sql_map_entries(StateCall *call, FunctionCallInfo fcinfo);

/*
 * STATE_SQL_BODY_FUNCTION defines the SQL-callable function name that
 * resolves the state its call names with begin(fcinfo, kind, privs) and
 * runs one of the bodies above, whose own arguments start at argno.  It
 * declares the function to the function manager too (PG_FUNCTION_INFO_V1).
 * STATE_KEYED_FUNCTION is one of a keyed state, called (name, key, ...).
 */
#define STATE_SQL_BODY_FUNCTION(name, begin, kind, privs, body, argno) \
	PG_FUNCTION_INFO_V1(name); \
	Datum \
	name(PG_FUNCTION_ARGS) \
	{ \
		return body(begin(fcinfo, kind, privs), fcinfo, argno); \
	} \
	extern int	no_such_variable
#define STATE_KEYED_FUNCTION(name, kind, privs, body) \
	STATE_SQL_BODY_FUNCTION(name, state_call_keyed, kind, privs, body, 2)

/*
 * sql_reducing.c: how a transactional state's fold of a transaction's
 * reductions combines with its committed value (txn/txn_state.h).
 */
extern void sql_txn_combine(const StateDesc *desc, StateMergeFn *fn, void **arg);
extern void sql_aggregating_combine(StateCall *call, StateMergeFn *fn, void **arg);

/* sql_rescale.c */
extern Datum key_group_range_datum(int first, int last);
extern void state_check_parts(bool parallelism_null, int parallelism, bool part_null, int part);

/* Kinds state_call_begin accepts besides one StateKind. */
#define ANY_KIND		(-1)		/* every kind */
#define KEYED_KIND		(-2)		/* every kind with keys */
#define OPERATOR_LISTS	(-3)		/* operator_list and union_list */
#define TIMERS_KIND		(-4)		/* timers (maps of instants, fired) */
#define FIRED_KIND		(-5)		/* timers and window states: what fires */

/*
 * StateRows: where a function that returns a state's contents as rows puts
 * them (its call's tuplestore, of the row type the call expects), and the
 * call whose codecs decode them.  The context of each such function's
 * StateEntryFn begins with it; state_rows_begin readies it (sql_common.c).
 */
typedef struct StateRows
{
	StateCall  *call;
	ReturnSetInfo *rsinfo;
} StateRows;

extern void state_rows_begin(StateRows *rows, StateCall *call, FunctionCallInfo fcinfo);

/* sql_entries.c: one entry as a row of (key, value), for entries() and
 * snapshot_entries() */
typedef struct RowsContext
{
	StateRows	rows;
	Oid			key_type;		/* of the result's columns */
	Oid			value_type;
	MemoryContext row_cxt;		/* one entry's work, reset after it */
} RowsContext;

extern void rows_begin(RowsContext *ctx, StateCall *call, FunctionCallInfo fcinfo);
extern void rows_put(void *arg, const char *key, uint32 keylen, const char *img, uint32 len);

/* sql_entries.c: rows made of each key of a state, for keys(), timers(), windows() */
typedef struct KeyRows
{
	StateRows	rows;
	Oid			restype;		/* what a key is shown as */
} KeyRows;

extern Datum key_rows_each(KeyRows *rows, StateCall *call, FunctionCallInfo fcinfo, Oid restype,
						   StateEntryFn fn);
extern Datum key_rows_key(const KeyRows *rows, const char *key, uint32 keylen);

/* sql_aggregating.c */
extern Datum sql_aggregating_get(StateCall *call, FunctionCallInfo fcinfo);
extern Datum sql_aggregating_datum(StateCall *call, const char *img, uint32 len, Oid restype,
								   bool *isnull);

/* sql_reducing.c */
extern void sql_timers_parse_create(FunctionCallInfo fcinfo, bool timers, StateDesc *desc);
extern bool sql_time_domain_is_event(FunctionCallInfo fcinfo, bool by_default);
extern void sql_reducer_setup(StateCall *call, StateMergeFn *fn, void **arg);
extern StateCall *sql_kept_call(const StateDesc *desc);
extern void reducer_check_type(StateReducer reducer, Oid type);

#endif							/* STATE_BACKEND_SQL_COMMON_H */
