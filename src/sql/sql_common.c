/*
 * sql/sql_common.c
 *		The shared first half of every SQL-callable function: resolve the
 *		state, check its kind and the caller's privileges, and move typed
 *		arguments and results to and from images.
 *
 * Keys, map keys and values arrive as whatever type the caller bound.  The
 * declared type's own values pass as they are; text (untyped literals and
 * untyped bind parameters end up as text through the overloads of the
 * install script) is read with the declared type's input function; other
 * types go through an implicit cast, or are refused with datatype_mismatch.
 * Results go from the declared type to the type of the call's default
 * argument by an assignment cast.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "funcapi.h"
#include "parser/parse_coerce.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "backend/providers.h"
#include "common/key_group.h"
#include "catalog/registry.h"
#include "catalog/stats.h"
#include "common/locks.h"
#include "format/records.h"
#include "common/settings.h"
#include "sql/sql_common.h"
#include "state_ops.h"
#include "txn/txn_state.h"

enum
{
	COERCE_NONE,
	COERCE_INPUT,
	COERCE_FUNC,
	COERCE_VIA_IO
};

static const char *const arg_role_names[ARG_ROLE_COUNT] = {
	"a key", "a map key", "a value"
};

/*
 * state_call_require_arg rejects a null argument argno of a function that
 * needs it; what names the argument in the message ("state name").
 */
void
state_call_require_arg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", what)));
}

/* state_call_name_arg returns the state name argument (the first one). */
char *
state_call_name_arg(FunctionCallInfo fcinfo)
{
	state_call_require_arg(fcinfo, 0, "state name");
	return text_to_cstring(PG_GETARG_TEXT_PP(0));
}

/*
 * state_interval_usecs is an interval in microseconds, a month counting 30
 * days as in interval arithmetic; false when that is out of range.
 */
bool
state_interval_usecs(const Interval *iv, int64 *usecs)
{
	return !pg_mul_s64_overflow((int64) iv->month * DAYS_PER_MONTH + iv->day, USECS_PER_DAY,
								usecs) &&
		!pg_add_s64_overflow(*usecs, iv->time, usecs);
}

/*
 * state_call_name_new checks the name a state is to take (create_state,
 * alter_state's rename_to) and copies it into out.
 */
void
state_call_name_new(const char *name, NameData *out)
{
	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("state name must not be empty")));
	if (strlen(name) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("state name \"%s\" is too long", name),
				 errdetail("State names may have at most %d bytes.", NAMEDATALEN - 1)));
	namestrcpy(out, name);
}

static void reject_kind_named(StateCall *call, const char *want) pg_attribute_noreturn();

/* "a" or "an", before a kind's name. */
static const char *
kind_article(const char *kind)
{
	return strchr("aeiou", kind[0]) ? "an" : "a";
}

/*
 * state_call_setup fills a call for a newly resolved state: its codecs live
 * in the call's own context, which is reset whenever the state changes.
 */
static void
state_call_setup(StateCall *call, const StateDesc *desc, int slot)
{
	/* Until it is complete, the next call sets it up again. */
	call->version = 0;
	MemoryContextReset(call->mcxt);
	memset(call->codecs, 0, sizeof(call->codecs));
	memset(call->coerce_in, 0, sizeof(call->coerce_in));
	memset(call->coerce_out, 0, sizeof(call->coerce_out));
	memset(call->result_codecs, 0, sizeof(call->result_codecs));
	memset(call->domain, 0, sizeof(call->domain));
	memset(call->domain_cache, 0, sizeof(call->domain_cache));
	call->extra = NULL;

	call->desc = *desc;
	call->target = state_target(&call->desc, slot);
	call->backend = keyed_state_ops(desc);
	codec_init(&call->codecs[ARG_KEY], desc->types[STATE_TYPE_KEY].oid, call->mcxt);
	codec_init(&call->codecs[ARG_VALUE], desc->types[STATE_TYPE_VALUE].oid, call->mcxt);
	if (OidIsValid(desc->types[STATE_TYPE_MAP_KEY].oid))
		codec_init(&call->codecs[ARG_MAP_KEY], desc->types[STATE_TYPE_MAP_KEY].oid, call->mcxt);
	for (int r = 0; r < ARG_ROLE_COUNT; r++)
		call->domain[r] = OidIsValid(call->codecs[r].typid) &&
			get_typtype(call->codecs[r].typid) == TYPTYPE_DOMAIN;
}

/*
 * On a hot standby, logged states are read as the state worker has
 * applied their WAL (logged_standby.c), once it serves them.
 */
void
state_standby_check_ready(void)
{
	/* Once ready, for as long as this session's shared memory lives. */
	static bool ready = false;

	state_backend_check_loaded();
	if (!ready)
		ready = registry_is_ready();
	if (!ready)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("states are not readable on this standby yet"),
				 errdetail("The state worker waits for a checkpoint of the primary whose WAL this standby holds, or still loads it."),
				 errhint("Use the primary, or try again shortly.")));
}

/* A standby reads logged states only, and writes none. */
static void
standby_check_call(StateCall *call, uint8 privs)
{
	if (!call->desc.logged)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("state \"%s\" is not logged, so this standby has no copy of it",
						NameStr(call->desc.name)),
				 errdetail("A standby serves the states whose changes travel in WAL."),
				 errhint("Use the primary, or create the state with logged => true.")));
	if (!(keyed_backend_provider(call->desc.backend)->flags & STATE_PROVIDER_STANDBY_READS))
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("state \"%s\" is not readable on a standby: backend \"%s\" does not serve reads there",
						NameStr(call->desc.name), keyed_backend_name(call->desc.backend)),
				 errhint("Use the primary.")));
	if (privs & STATE_PRIV_WRITE)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot change state \"%s\" on a standby", NameStr(call->desc.name)),
				 errdetail("This server is a standby: it reads logged states as its primary's WAL brings them."),
				 errhint("Write on the primary.")));
}

/*
 * state_call_begin resolves the state named by argument 0 and checks that
 * it is of the given kind (or kinds: ANY_KIND, KEYED_KIND, OPERATOR_LISTS)
 * and that the caller has "privs"
 * on it.  The returned call belongs to the call site (state_call_site).
 */
StateCall *
state_call_begin(FunctionCallInfo fcinfo, int kind, uint8 privs)
{
	char	   *name = state_call_name_arg(fcinfo);
	StateCall  *call;

	state_call_check_server();
	call = state_call_site(fcinfo);
	state_call_resolve(call, name, kind, privs);
	state_stats_count(call->target.slot,
					  (privs & STATE_PRIV_WRITE) ? STATE_STAT_WRITES : STATE_STAT_READS, 1);
	return call;
}

/*
 * state_call_check_server raises an error when this server cannot serve
 * states now: the library is not loaded, or a standby is not ready yet.
 */
void
state_call_check_server(void)
{
	if (RecoveryInProgress())
		state_standby_check_ready();
	else
		state_backend_check_available();
}

/*
 * state_call_resolve points call at the state named "name", set up anew
 * when the registry changed since it last did, and checks its kind and
 * that the current user has "privs" on it, as state_call_begin does for
 * a function (whose call counts in state.stats; callers of this count
 * their own).
 */
void
state_call_resolve(StateCall *call, const char *name, int kind, uint8 privs)
{
	uint64		version;

	/* A change that replaces the state waits for this call to end. */
	registry_reader_enter();
again:
	version = registry_version();
	if (call->version != version || strcmp(NameStr(call->name), name) != 0)
	{
		StateDesc	desc;
		int			slot;

		registry_resolve(name, &desc, &slot);
		if (desc.id != call->desc.id || slot != call->target.slot ||
			call->version == 0)
			state_call_setup(call, &desc, slot);
		else
		{
			call->desc = desc;	/* grants, or a move, may have changed */
			call->target = state_target(&call->desc, slot);
			call->backend = keyed_state_ops(&call->desc);
		}
		namestrcpy(&call->name, name);
		call->version = version;
	}

	/*
	 * A read-only transaction changes no state, before any lock is taken, as
	 * PostgreSQL's executor refuses a write before it checks privileges.  (A
	 * read that moves a TTL deadline is still a read.)
	 */
	if ((privs & STATE_PRIV_WRITE) && XactReadOnly && !RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot change state \"%s\" in a read-only transaction",
						NameStr(call->desc.name))));

	/*
	 * A writer (a read that moves a TTL deadline writes too) holds the
	 * state's writers' lock to the end of its transaction
	 * (state_ops_lock_writes): an alter_state it waited for has replaced the
	 * state meanwhile, so it looks again.
	 */
	if (((privs & STATE_PRIV_WRITE) ||
		 (call->desc.ttl > 0 && call->desc.ttl_update == STATE_TTL_ON_READ_AND_WRITE)) &&
		!RecoveryInProgress())
	{
		state_ops_lock_writes(&call->desc);
		if (registry_version() != version)
			goto again;
	}

	if (kind == KEYED_KIND && state_kind_is_operator(call->desc.kind))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("state \"%s\" is %s %s state, which has no keys",
						NameStr(call->desc.name), kind_article(state_kind_name(call->desc.kind)),
						state_kind_name(call->desc.kind))));
	else if (kind == OPERATOR_LISTS && call->desc.kind != STATE_KIND_OPERATOR_LIST &&
			 call->desc.kind != STATE_KIND_UNION_LIST)
		state_call_reject_kind(call, STATE_KIND_OPERATOR_LIST);
	else if (kind == TIMERS_KIND && !state_desc_is_timers(&call->desc))
		reject_kind_named(call, "timers");
	else if (kind == FIRED_KIND && !state_desc_fires(&call->desc))
		reject_kind_named(call, "timers or window");
	else if (kind >= 0 && (call->desc.kind != (StateKind) kind ||
						   state_desc_is_timers(&call->desc)))
		state_call_reject_kind(call, (StateKind) kind);
	if (RecoveryInProgress())
		standby_check_call(call, privs);
	registry_check_access(&call->desc, privs);
}

/*
 * state_call_detached sets up a call for a descriptor that is in no
 * registry (a state read out of a snapshot): codecs, casts and buffers,
 * under the current memory context, and no backend.
 */
StateCall *
state_call_detached(const StateDesc *desc)
{
	StateCall  *call = state_call_new(CurrentMemoryContext);

	state_call_setup_detached(call, desc);
	return call;
}

/* The same for an empty set-up made already (state_call_new). */
void
state_call_setup_detached(StateCall *call, const StateDesc *desc)
{
	state_call_setup(call, desc, -1);
	call->backend = NULL;
}

/*
 * state_call_default is a read's result when the key has no state: the
 * default, argument argno, counted as a miss (state.stats).
 */
Datum
state_call_default(StateCall *call, FunctionCallInfo fcinfo, int argno)
{
	state_stats_count(call->target.slot, STATE_STAT_MISSES, 1);
	if (PG_ARGISNULL(argno))
		PG_RETURN_NULL();
	return PG_GETARG_DATUM(argno);
}

/* state_call_reject_kind raises wrong_object_type for an operation. */
void
state_call_reject_kind(StateCall *call, StateKind wanted)
{
	reject_kind_named(call, state_kind_name(wanted));
}

static void
reject_kind_named(StateCall *call, const char *want)
{
	const char *have = state_desc_kind_name(&call->desc);

	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("state \"%s\" is %s %s state, not %s %s state",
					NameStr(call->desc.name), kind_article(have), have,
					kind_article(want), want)));
}

/* state_call_argtype returns the type an argument was bound with. */
Oid
state_call_argtype(FunctionCallInfo fcinfo, int argno)
{
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, argno);

	if (!OidIsValid(type))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("could not determine the type of argument %d", argno + 1)));
	return type;
}

/*
 * coercion_build sets up co to convert datums of type "from" to type "to":
 * an implicit cast for arguments, whose errors name the argument as
 * "what" ("a key"), or an assignment cast for results, whose errors name
 * what the state holds ("values").
 */
static void
coercion_build(StateCall *call, Coercion *co, Oid from, Oid to,
			   CoercionContext context, const char *what)
{
	Oid			funcid = InvalidOid;

	memset(co, 0, sizeof(Coercion));
	co->from = from;
	if (from == to)
		co->method = COERCE_NONE;
	else if (context == COERCION_IMPLICIT &&
			 (from == TEXTOID || from == UNKNOWNOID))
		co->method = COERCE_INPUT;
	else
	{
		switch (find_coercion_pathway(to, from, context, &funcid))
		{
			case COERCION_PATH_RELABELTYPE:
				co->method = COERCE_NONE;
				break;
			case COERCION_PATH_FUNC:
				co->method = COERCE_FUNC;
				fmgr_info_cxt(funcid, &co->fn, call->mcxt);
				co->nargs = get_func_nargs(funcid);
				break;
			case COERCION_PATH_COERCEVIAIO:
			case COERCION_PATH_ARRAYCOERCE:
				{
					Oid			outfunc;
					bool		isvarlena;

					co->method = COERCE_VIA_IO;
					getTypeOutputInfo(from, &outfunc, &isvarlena);
					fmgr_info_cxt(outfunc, &co->out, call->mcxt);
					break;
				}
			case COERCION_PATH_NONE:
				if (context == COERCION_IMPLICIT)
					ereport(ERROR,
							(errcode(ERRCODE_DATATYPE_MISMATCH),
							 errmsg("state \"%s\" expects %s of type %s, not %s",
									NameStr(call->desc.name), what,
									format_type_be(to), format_type_be(from)),
							 errhint("Cast the argument to %s.", format_type_be(to))));
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("state \"%s\" holds %s of type %s, which cannot be returned as %s",
								NameStr(call->desc.name), what,
								format_type_be(from), format_type_be(to)),
						 errhint("Pass a default of type %s.", format_type_be(from))));
		}
	}
	co->ready = true;
}

static Datum
coercion_apply(Coercion *co, TypeCodec *target, Datum value)
{
	switch (co->method)
	{
		case COERCE_INPUT:
			{
				char	   *str = co->from == UNKNOWNOID ? DatumGetCString(value) :
				text_to_cstring(DatumGetTextPP(value));

				return codec_input(target, str);
			}
		case COERCE_FUNC:
			if (co->nargs == 1)
				return FunctionCall1(&co->fn, value);
			if (co->nargs == 2)
				return FunctionCall2(&co->fn, value, Int32GetDatum(-1));
			return FunctionCall3(&co->fn, value, Int32GetDatum(-1), BoolGetDatum(false));
		case COERCE_VIA_IO:
			return codec_input(target, OutputFunctionCall(&co->out, value));
		default:
			return value;
	}
}

/*
 * state_call_coerce_arg converts a datum of type "from" to target's type
 * with co (set up on first use, kept in the call's context), or raises
 * datatype_mismatch naming the argument as "what".  When that type is a
 * domain (domain_cache non-NULL), its constraints are checked.
 */
Datum
state_call_coerce_arg(StateCall *call, Coercion *co, TypeCodec *target, void **domain_cache,
					  Datum value, Oid from, const char *what)
{
	if (!co->ready || co->from != from)
		coercion_build(call, co, from, target->typid, COERCION_IMPLICIT, what);
	value = coercion_apply(co, target, value);
	/* A domain's input function has checked its constraints already. */
	if (domain_cache && co->method != COERCE_INPUT)
		domain_check(value, false, target->typid, domain_cache, call->mcxt);
	return value;
}

/*
 * state_call_coerce converts a datum of type "from" to the state's declared
 * type for an argument role, or raises datatype_mismatch.
 */
Datum
state_call_coerce(StateCall *call, Datum value, Oid from, StateArgRole role)
{
	return state_call_coerce_arg(call, &call->coerce_in[role], &call->codecs[role],
								 call->domain[role] ? &call->domain_cache[role] : NULL,
								 value, from, arg_role_names[role]);
}

/*
 * state_call_check_domain raises check_violation (or not_null_violation)
 * when a value breaks the constraints of its role's declared domain.  A
 * value that is already of the domain's type, or one that only needs a
 * relabelling cast, has not been checked by PostgreSQL on its way here.
 */
void
state_call_check_domain(StateCall *call, Datum value, StateArgRole role)
{
	if (call->domain[role])
		domain_check(value, false, call->codecs[role].typid,
					 &call->domain_cache[role], call->mcxt);
}

/* state_call_encode_datum appends the image of a typed datum to out. */
void
state_call_encode_datum(StateCall *call, Datum value, Oid type,
						StateArgRole role, StringInfo out)
{
	value = state_call_coerce(call, value, type, role);
	codec_encode(&call->codecs[role], value, out);
}

/*
 * state_call_accepts_type says whether an argument of type "from" is taken
 * for a role whose declared type is "to": the declared type itself, text
 * (read with the declared type's input function), or a type with an
 * implicit cast to it, as state_call_coerce converts them.
 */
bool
state_call_accepts_type(Oid from, Oid to)
{
	Oid			funcid;

	return from == to || from == TEXTOID || from == UNKNOWNOID ||
		find_coercion_pathway(to, from, COERCION_IMPLICIT, &funcid) != COERCION_PATH_NONE;
}

/*
 * state_call_arg returns argument argno of a call as a StateArg: its
 * datum, and the type it was bound with unless it is NULL.
 */
StateArg
state_call_arg(FunctionCallInfo fcinfo, int argno)
{
	StateArg	arg;

	arg.isnull = PG_ARGISNULL(argno);
	arg.value = arg.isnull ? (Datum) 0 : PG_GETARG_DATUM(argno);
	arg.type = arg.isnull ? InvalidOid : state_call_argtype(fcinfo, argno);
	return arg;
}

/*
 * state_call_encode_arg appends the image of arg, read in a role, to out.
 * Keys and map keys must not be NULL; callers handle NULL values.
 */
void
state_call_encode_arg(StateCall *call, const StateArg *arg, StateArgRole role, StringInfo out)
{
	if (arg->isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s of state \"%s\" must not be null",
						role == ARG_KEY ? "key" : role == ARG_MAP_KEY ? "map key" : "value",
						NameStr(call->desc.name))));
	state_call_encode_datum(call, arg->value, arg->type, role, out);
}

/* state_call_encode is state_call_encode_arg of argument argno. */
void
state_call_encode(StateCall *call, FunctionCallInfo fcinfo, int argno,
				  StateArgRole role, StringInfo out)
{
	StateArg	arg = state_call_arg(fcinfo, argno);

	state_call_encode_arg(call, &arg, role, out);
}

/* The key arg, read into call->key, whatever its key group. */
static void
key_image_arg(StateCall *call, const StateArg *arg)
{
	resetStringInfo(&call->keybuf);
	state_call_encode_arg(call, arg, ARG_KEY, &call->keybuf);
	state_key_set(&call->key, call->keybuf.data, call->keybuf.len);
}

/*
 * state_call_key_arg reads a key into call->key: its image, hash and key
 * group, which this server must hold (after a restore of one part of
 * several, invalid_parameter_value names the part that holds it).
 */
void
state_call_key_arg(StateCall *call, const StateArg *arg)
{
	key_image_arg(call, arg);
	if (unlikely(!state_desc_holds(&call->desc, call->key.key_group)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key of state \"%s\" is in key group %d, which part %d of %d holds",
						NameStr(call->desc.name), call->key.key_group,
						key_group_part(state_backend_max_parallelism, call->desc.range_parts,
									   call->key.key_group),
						call->desc.range_parts),
				 errdetail("This server holds key groups %d to %d of the state.",
						   call->desc.range_first, call->desc.range_last),
				 errhint("Send the call to the server that holds that part (state.part_for).")));
}

/* state_call_key is state_call_key_arg of argument argno. */
void
state_call_key(StateCall *call, FunctionCallInfo fcinfo, int argno)
{
	StateArg	arg = state_call_arg(fcinfo, argno);

	state_call_key_arg(call, &arg);
}

/*
 * state_call_keyed is state_call_begin for the functions of one key:
 * their arguments begin (name, key, ...), and the key is resolved and
 * checked (state_call_key) before the call is returned.
 */
StateCall *
state_call_keyed(FunctionCallInfo fcinfo, int kind, uint8 privs)
{
	StateCall  *call = state_call_begin(fcinfo, kind, privs);

	state_call_key(call, fcinfo, 1);
	return call;
}

/*
 * state_call_key_image reads the key argument into call->key, whether or
 * not this server holds its key group (state.key_group, state.part_for).
 */
void
state_call_key_image(StateCall *call, FunctionCallInfo fcinfo, int argno)
{
	StateArg	arg = state_call_arg(fcinfo, argno);

	key_image_arg(call, &arg);
}

/*
 * state_call_result_datum converts a datum of type "from" (what the state
 * holds for a role) to the call's result type by an assignment cast.
 */
Datum
state_call_result_datum(StateCall *call, Datum value, Oid from,
						StateArgRole role, Oid restype)
{
	Coercion   *co = &call->coerce_out[role];
	TypeCodec  *target = &call->result_codecs[role];

	if (from == restype)
		return value;
	if (!co->ready || co->from != from || target->typid != restype)
	{
		codec_init(target, restype, call->mcxt);
		coercion_build(call, co, from, restype, COERCION_ASSIGNMENT,
					   role == ARG_VALUE ? "values" : "keys");
	}
	return coercion_apply(co, target, value);
}

/*
 * state_call_result makes the call's result from a value image: decoded
 * with the state's value type, then cast to restype.  Palloc'd in the
 * current memory context.
 */
Datum
state_call_result(StateCall *call, const char *image, uint32 len, Oid restype)
{
	Datum		value = codec_decode(&call->codecs[ARG_VALUE], image, len);

	return state_call_result_datum(call, value, call->desc.types[STATE_TYPE_VALUE].oid,
								   ARG_VALUE, restype);
}

/*
 * state_call_array_arg returns an array argument and its element type.  An
 * untyped or text argument is read as an array of the role's declared type.
 */
ArrayType *
state_call_array_arg(StateCall *call, FunctionCallInfo fcinfo, int argno,
					 StateArgRole role, Oid *elemtype)
{
	Oid			argtype = state_call_argtype(fcinfo, argno);
	Oid			declared = call->codecs[role].typid;

	if (argtype == TEXTOID || argtype == UNKNOWNOID)
	{
		Oid			arrtype = get_array_type(declared);
		Oid			infunc;
		Oid			ioparam;
		char	   *str = argtype == UNKNOWNOID ? PG_GETARG_CSTRING(argno) :
		text_to_cstring(PG_GETARG_TEXT_PP(argno));

		if (!OidIsValid(arrtype))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("type %s has no array type", format_type_be(declared))));
		getTypeInputInfo(arrtype, &infunc, &ioparam);
		*elemtype = declared;
		return DatumGetArrayTypeP(OidInputFunctionCall(infunc, str, ioparam, -1));
	}
	*elemtype = get_element_type(argtype);
	if (!OidIsValid(*elemtype))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("state \"%s\" expects an array of %s, not %s",
						NameStr(call->desc.name), format_type_be(declared),
						format_type_be(argtype))));
	return PG_GETARG_ARRAYTYPE_P(argno);
}

/*
 * state_array_elems takes an array apart, whatever its element type:
 * returns how many elements, in *elems and *nulls (palloc'd).
 */
int
state_array_elems(ArrayType *arr, Datum **elems, bool **nulls)
{
	Oid			elemtype = ARR_ELEMTYPE(arr);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			n;

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(arr, elemtype, typlen, typbyval, typalign, elems, nulls, &n);
	return n;
}

/*
 * state_call_list_image appends the list image of an array's elements
 * (converted to the state's value type) to out.  NULL elements are refused:
 * a list holds values.
 */
void
state_call_list_image(StateCall *call, ArrayType *arr, Oid elemtype, StringInfo out)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n = state_array_elems(arr, &elems, &nulls);

	for (int i = 0; i < n; i++)
	{
		int			begin;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("list of state \"%s\" cannot hold null values",
							NameStr(call->desc.name))));
		begin = record_elem_begin(out);
		state_call_encode_datum(call, elems[i], elemtype, ARG_VALUE, out);
		record_elem_end(out, begin);
	}
}

/*
 * state_rows_begin readies fcinfo to return rows, materialized in a
 * tuplestore of the row type the call expects, and rows to receive them
 * for call.
 */
void
state_rows_begin(StateRows *rows, StateCall *call, FunctionCallInfo fcinfo)
{
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	rows->call = call;
	rows->rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
}
