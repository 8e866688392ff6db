/*
 * proxy/sql_proxy.c
 *		The proxy database's functions (DESIGN 16): every function that
 *		state.create_proxy makes in a proxy schema, with the name, arguments
 *		and result of a state.* function, runs here; PL/Proxy carries the
 *		call to the part that owns its key, or to every part.
 *
 * PL/Proxy takes no polymorphic argument, so a proxy function passes its
 * arguments as text to an internal PL/Proxy function of the same name with
 * a leading underscore (made by create_proxy, in the same schema), and
 * reads the text it returns with the input function of the type the caller
 * asked for, as a state reads an untyped literal.  The part of a key is
 * computed here, as state.part_for computes it on a part: the key read as
 * the state's key type, its image's key group, the part of the cluster's
 * partition count that holds it.  A state's key type (and the parts'
 * max_parallelism) come from part 0 the first time a session routes a key
 * of it, and are kept until the cluster's foreign server changes.
 *
 * The key is read in the caller's settings (as the state would read it),
 * everything else travels as text in fixed settings (ISO dates, exact
 * floats) that create_proxy gives the parts' connections too.  Every proxy
 * call holds a share lock on the cluster's foreign server while it runs
 * (and only then); state.pause_proxy takes it exclusively, so that a
 * rescale (state.rescale_proxy) changes the parts while no call runs.  The
 * CLUSTER clause of every internal PL/Proxy function is the gate
 * (_proxy_gate), which lets a call through only in a session that holds
 * that lock: the internal functions run inside a proxy call or a rescale,
 * never alone.  A call of a cluster whose rescale was interrupted refuses
 * until it is put right (sql_proxy_journal.c).  The SQL half (create_proxy,
 * alter_proxy, rescale_proxy, repair_proxy) is in the extension script;
 * state._proxy_rescale_step marks its steps with fault points.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include "common/codec.h"
#include "common/fault.h"
#include "common/key_group.h"
#include "common/local_hash.h"
#include "proxy/sql_proxy.h"

PG_FUNCTION_INFO_V1(state_proxy_call);
PG_FUNCTION_INFO_V1(state_proxy_pause);
PG_FUNCTION_INFO_V1(state_proxy_gate);
PG_FUNCTION_INFO_V1(state_proxy_rescale_step);

/* What a session knows of a state of a cluster, to route its keys. */
typedef struct ProxyStateKey
{
	NameData	cluster;
	NameData	state;
} ProxyStateKey;

typedef struct ProxyState
{
	ProxyStateKey key;
	int			max_parallelism;	/* the parts' */
	TypeCodec	codec;			/* of the state's key type, in proxy_cxt */
} ProxyState;

static HTAB *proxy_states = NULL;
static MemoryContext proxy_cxt = NULL;
static bool proxy_stale = false;

/* How a proxy function reaches its parts. */
typedef struct ProxyCall
{
	char	   *schema;
	char	   *cluster;
	Oid			server;
	char	   *name;			/* the function's */
	int			nargs;
	int			key_arg;		/* -1: a whole-state call, run on every part */
	int			keys_arg;		/* a batch call: its array of keys, split by part */
	bool		routed;			/* key_arg or keys_arg: the part(s) come first */
	bool	   *is_array;		/* an array argument of a batch call, sent as text[] */
	bool		sum;			/* a count from every part, summed */
	SPIPlanPtr	plan;
	FmgrInfo   *out;			/* output function per argument */
	Oid		   *out_type;		/* the type out[] is for */
} ProxyCall;

/*
 * What a session knows of its proxy functions, by function oid: kept for
 * the session (a prepared plan each), as plpgsql keeps a function's.
 */
typedef struct ProxyCallEntry
{
	Oid			fn;
	struct ProxyCall *pc;
} ProxyCallEntry;

static HTAB *proxy_calls = NULL;
static MemoryContext proxy_calls_cxt = NULL;

/*
 * A foreign server, a type or a relation changed: what this session knows
 * of states (their key types, a composite key type's attributes) may be
 * stale.  It is forgotten at the next routing that uses none of it.
 */
static void
proxy_server_changed(Datum arg, int cacheid, uint32 hashvalue)
{
	proxy_stale = true;
}

static void
proxy_relation_changed(Datum arg, Oid relid)
{
	proxy_stale = true;
}

/* Routings running in this session (one may run inside another's input function). */
static int	proxy_busy = 0;

static void
proxy_cache_init(void)
{
	if (proxy_cxt == NULL)
	{
		proxy_cxt = AllocSetContextCreate(TopMemoryContext, "state_backend proxy",
										  ALLOCSET_SMALL_SIZES);
		CacheRegisterSyscacheCallback(FOREIGNSERVEROID, proxy_server_changed, (Datum) 0);
		CacheRegisterSyscacheCallback(TYPEOID, proxy_server_changed, (Datum) 0);
		CacheRegisterRelcacheCallback(proxy_relation_changed, (Datum) 0);
	}
	else if (proxy_stale && proxy_busy == 0)
		MemoryContextReset(proxy_cxt);
	else if (proxy_states != NULL)
		return;
	proxy_stale = false;
	proxy_states = local_hash_create("state_backend proxy states", 64, sizeof(ProxyStateKey),
									 sizeof(ProxyState), proxy_cxt);
}

/*
 * proxy_part_count is the number of partitions of a PL/Proxy cluster
 * defined with SQL/MED: options p<N> or partition_<N>.
 */
static int
proxy_part_count(ForeignServer *server)
{
	ListCell   *lc;
	int			n = 0;

	foreach(lc, server->options)
	{
		DefElem    *def = lfirst(lc);
		const char *digits = NULL;

		if (strncmp(def->defname, "partition_", 10) == 0)
			digits = def->defname + 10;
		else if (def->defname[0] == 'p')
			digits = def->defname + 1;
		if (digits != NULL && *digits != '\0' && strspn(digits, "0123456789") == strlen(digits))
			n++;
	}
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cluster \"%s\" has no parts", server->servername),
				 errhint("Give it parts with state.alter_proxy.")));
	return n;
}

/*
 * proxy_canonical_begin sets, until proxy_canonical_end, the settings that
 * make values as text unambiguous between the proxy and its parts (whose
 * connections create_proxy gives the same): ISO dates, PostgreSQL's
 * intervals, floats that read back exactly.  As postgres_fdw does.
 */
static int
proxy_canonical_begin(void)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("datestyle", "ISO, YMD", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("intervalstyle", "postgres", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("extra_float_digits", "3", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return level;
}

static void
proxy_canonical_end(int level)
{
	AtEOXact_GUC(true, level);
}

/*
 * proxy_state_info returns what routing needs of a state: asked of part 0
 * (through the schema's _state_info) the first time.  Called inside SPI.
 */
static ProxyState *
proxy_state_info(const char *schema, const char *cluster, const char *state)
{
	ProxyStateKey key;
	ProxyState *ps;
	ProxyState	fresh;
	bool		found;
	char	   *query;
	Datum		arg = CStringGetTextDatum(state);
	Oid			argtype = TEXTOID;
	char	   *typname;
	char	   *maxpar;
	char	   *encoding;
	Oid			keytype;
	Oid			base;
	int			max_parallelism;

	proxy_cache_init();
	memset(&key, 0, sizeof(key));
	namestrcpy(&key.cluster, cluster);
	namestrcpy(&key.state, state);
	ps = hash_search(proxy_states, &key, HASH_FIND, NULL);
	if (ps != NULL)
		return ps;

	query = psprintf("SELECT key_type, max_parallelism, encoding FROM %s._state_info($1)",
					 quote_identifier(schema));
	if (SPI_execute_with_args(query, 1, &argtype, &arg, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read state \"%s\" of cluster \"%s\"", state, cluster);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("state \"%s\" does not exist", state),
				 errdetail("Part 0 of cluster \"%s\" has no state of that name.", cluster)));
	typname = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	maxpar = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	encoding = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);
	if (typname == NULL || maxpar == NULL || encoding == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("part 0 of cluster \"%s\" described state \"%s\" with a NULL",
						cluster, state)));
	if (strcmp(encoding, GetDatabaseEncodingName()) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the parts of cluster \"%s\" use encoding %s, this database %s",
						cluster, encoding, GetDatabaseEncodingName()),
				 errdetail("A key's key group is computed from its bytes, which depend on the encoding."),
				 errhint("Make the proxy database with the parts' encoding.")));
	max_parallelism = pg_strtoint32(maxpar);
	if (max_parallelism < 1 || max_parallelism > 32768)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("part 0 of cluster \"%s\" reports a max_parallelism of %d", cluster,
						max_parallelism)));
	keytype = DatumGetObjectId(DirectFunctionCall1(to_regtype, CStringGetTextDatum(typname)));
	if (!OidIsValid(keytype))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("type %s of the keys of state \"%s\" does not exist in this database",
						typname, state),
				 errhint("The proxy reads keys as the parts do: create the type here too.")));
	/* Types whose values are OIDs differ from database to database. */
	base = getBaseType(keytype);
	if (get_typtype(base) == TYPTYPE_ENUM || base == OIDOID || base == REGPROCOID ||
		base == REGPROCEDUREOID || base == REGOPEROID || base == REGOPERATOROID ||
		base == REGCLASSOID || base == REGTYPEOID || base == REGROLEOID ||
		base == REGNAMESPACEOID || base == REGCONFIGOID || base == REGDICTIONARYOID ||
		base == REGCOLLATIONOID)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a proxy cannot route keys of type %s", typname),
				 errdetail("Values of that type are object identifiers, which differ between the proxy and the parts."),
				 errhint("Call the parts directly, routing with state.part_for.")));

	/* Built whole before it is entered, so that an error leaves no half entry. */
	memset(&fresh, 0, sizeof(fresh));
	fresh.key = key;
	fresh.max_parallelism = max_parallelism;
	codec_init(&fresh.codec, keytype, proxy_cxt);
	ps = hash_search(proxy_states, &key, HASH_ENTER, &found);
	*ps = fresh;
	return ps;
}

/*
 * proxy_route is the part of nparts that holds a key of a state, given as
 * text and read with the state's key type under the caller's settings (as
 * the state would read it); *canonical is set to the key as text again, in
 * the settings of proxy_canonical_begin, for the part.  Called inside SPI.
 */
static int
proxy_route(ProxyCall *pc, const char *state, char *keytext, int nparts, char **canonical)
{
	ProxyState *ps = proxy_state_info(pc->schema, pc->cluster, state);
	StringInfoData image;
	Datum volatile key = (Datum) 0;
	uint32		hash;
	int			kg;
	int			level;

	if (nparts > ps->max_parallelism)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cluster \"%s\" has %d parts, more than its key groups (%d)",
						pc->cluster, nparts, ps->max_parallelism)));
	/* A domain's check may call a proxy function: the cache stays until it returns. */
	proxy_busy++;
	PG_TRY();
	{
		key = codec_input(&ps->codec, keytext);
	}
	PG_FINALLY();
	{
		proxy_busy--;
	}
	PG_END_TRY();
	initStringInfo(&image);
	codec_encode(&ps->codec, key, &image);
	level = proxy_canonical_begin();
	*canonical = codec_output(&ps->codec, key);
	proxy_canonical_end(level);
	hash = key_image_hash(image.data, image.len);
	kg = key_group_for_hash(hash, ps->max_parallelism);
	pfree(image.data);
	return key_group_part(ps->max_parallelism, nparts, kg);
}

/*
 * The proxy of schema nsp: its cluster and foreign server, or an error.
 * Strings are copied into cxt (SPI leaves its own context current).
 */
static void
proxy_of_schema(ProxyCall *pc, Oid nsp, MemoryContext cxt)
{
	char	   *schema = get_namespace_name(nsp);
	char	   *query;
	char	   *cluster;

	query = psprintf("SELECT cluster FROM state.proxies WHERE schema = %s",
					 quote_literal_cstr(schema));
	if (SPI_execute(query, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read state.proxies");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("schema \"%s\" is not the schema of a proxy", schema),
				 errhint("Proxy functions are made by state.create_proxy.")));
	cluster = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	pc->schema = MemoryContextStrdup(cxt, schema);
	pc->cluster = MemoryContextStrdup(cxt, cluster);
	pc->server = GetForeignServerByName(cluster, false)->serverid;
}

/*
 * proxy_call_init reads what a proxy function is (its own pg_proc row) and
 * prepares the call of its internal PL/Proxy function.  Called inside SPI;
 * everything kept lives in proxy_calls_cxt.
 */
static ProxyCall *
proxy_call_init(FunctionCallInfo fcinfo)
{
	MemoryContext cxt = proxy_calls_cxt;
	ProxyCall  *pc = MemoryContextAllocZero(cxt, sizeof(ProxyCall));
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fcinfo->flinfo->fn_oid));
	Form_pg_proc proc;
	Oid		   *types;
	char	  **names;
	char	   *modes;
	int			n;
	StringInfoData q;
	Oid		   *argtypes;
	int			first;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for function %u", fcinfo->flinfo->fn_oid);
	proc = (Form_pg_proc) GETSTRUCT(tup);
	pc->name = MemoryContextStrdup(cxt, NameStr(proc->proname));
	n = get_func_arg_info(tup, &types, &names, &modes);
	pc->nargs = proc->pronargs;
	pc->key_arg = -1;
	pc->keys_arg = -1;
	pc->is_array = MemoryContextAllocZero(cxt, sizeof(bool) * Max(pc->nargs, 1));
	/* The argument "key", or "keys" (not a result column of that name). */
	for (int i = 0, in = 0; i < n; i++)
	{
		if (modes != NULL && modes[i] != PROARGMODE_IN && modes[i] != PROARGMODE_INOUT &&
			modes[i] != PROARGMODE_VARIADIC)
			continue;
		if (names != NULL && names[i] != NULL && strcmp(names[i], "key") == 0)
			pc->key_arg = in;
		if (names != NULL && names[i] != NULL && strcmp(names[i], "keys") == 0)
			pc->keys_arg = in;
		in++;
	}
	for (int i = 0, in = 0; i < n && pc->keys_arg >= 0; i++)
		if (modes == NULL || modes[i] == PROARGMODE_IN || modes[i] == PROARGMODE_INOUT ||
			modes[i] == PROARGMODE_VARIADIC)
			pc->is_array[in++] = types[i] == ANYARRAYOID || types[i] == ANYCOMPATIBLEARRAYOID;
	pc->routed = pc->key_arg >= 0 || pc->keys_arg >= 0;
	pc->sum = pc->key_arg < 0 && !proc->proretset && proc->prorettype == INT8OID;
	ReleaseSysCache(tup);
	proxy_of_schema(pc, get_func_namespace(fcinfo->flinfo->fn_oid), cxt);

	/*
	 * SELECT * FROM schema._name([$1,] $2, ...): the part (or for a batch
	 * call the part of each key), then the arguments as text (or text[]).
	 */
	first = pc->routed ? 1 : 0;
	argtypes = palloc(sizeof(Oid) * (pc->nargs + 1));
	initStringInfo(&q);
	appendStringInfo(&q, "SELECT * FROM %s.%s(", quote_identifier(pc->schema),
					 quote_identifier(psprintf("_%s", pc->name)));
	if (first)
	{
		argtypes[0] = pc->keys_arg >= 0 ? INT4ARRAYOID : INT4OID;
		appendStringInfoString(&q, "$1");
	}
	for (int i = 0; i < pc->nargs; i++)
	{
		argtypes[first + i] = pc->is_array[i] ? TEXTARRAYOID : TEXTOID;
		appendStringInfo(&q, "%s$%d", first + i > 0 ? ", " : "", first + i + 1);
	}
	appendStringInfoChar(&q, ')');
	pc->plan = SPI_prepare(q.data, pc->nargs + first, argtypes);
	if (pc->plan == NULL)
		elog(ERROR, "could not prepare \"%s\": %s", q.data, SPI_result_code_string(SPI_result));
	SPI_keepplan(pc->plan);
	pc->out = MemoryContextAllocZero(cxt, sizeof(FmgrInfo) * Max(pc->nargs, 1));
	pc->out_type = MemoryContextAllocZero(cxt, sizeof(Oid) * Max(pc->nargs, 1));
	return pc;
}

/* The session's ProxyCall of a proxy function, made on its first call. */
static ProxyCall *
proxy_call_get(FunctionCallInfo fcinfo)
{
	Oid			fn = fcinfo->flinfo->fn_oid;
	ProxyCallEntry *e;
	ProxyCall  *pc;
	bool		found;

	if (proxy_calls == NULL)
	{
		proxy_calls_cxt = AllocSetContextCreate(TopMemoryContext, "state_backend proxy calls",
												ALLOCSET_SMALL_SIZES);
		proxy_calls = local_hash_create("state_backend proxy calls", 64, sizeof(Oid),
										sizeof(ProxyCallEntry), proxy_calls_cxt);
	}
	e = hash_search(proxy_calls, &fn, HASH_FIND, NULL);
	if (e != NULL)
		return e->pc;
	pc = proxy_call_init(fcinfo);
	e = hash_search(proxy_calls, &fn, HASH_ENTER, &found);
	e->pc = pc;
	return e->pc;
}

/* An argument as text, NULL as NULL. */
static Datum
proxy_arg_text(ProxyCall *pc, FunctionCallInfo fcinfo, int i, char *nulls)
{
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, i);
	bool		isvarlena;
	Oid			outfn;

	nulls[i] = PG_ARGISNULL(i) ? 'n' : ' ';
	if (PG_ARGISNULL(i))
		return (Datum) 0;
	if (type == UNKNOWNOID)
		return CStringGetTextDatum(DatumGetCString(PG_GETARG_DATUM(i)));
	if (type == TEXTOID)
		return PG_GETARG_DATUM(i);
	if (!OidIsValid(type))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("could not determine the type of argument %d of %s", i + 1, pc->name)));
	if (pc->out_type[i] != type)
	{
		getTypeOutputInfo(type, &outfn, &isvarlena);
		fmgr_info_cxt(outfn, &pc->out[i], proxy_calls_cxt);
		pc->out_type[i] = type;
	}
	return CStringGetTextDatum(OutputFunctionCall(&pc->out[i], PG_GETARG_DATUM(i)));
}

/*
 * The arguments of a batch call: every array argument as text[] (its keys
 * read under the caller's settings and written again in the canonical
 * ones; its values written in the canonical ones), and the part of each
 * key (args[0], int[]).  Arrays must be of one dimension and as long as the
 * keys; keys must not be NULL.
 */
static void
proxy_batch_args(ProxyCall *pc, FunctionCallInfo fcinfo, Datum *args, char *nulls, int nparts)
{
	const char *state = TextDatumGetCString(args[1]);
	int			nkeys = -1;
	Datum	   *parts = NULL;

	for (int i = 0; i < pc->nargs; i++)
	{
		ArrayType  *a;
		Oid			elemtype;
		int16		typlen;
		bool		typbyval;
		char		typalign;
		Datum	   *elems;
		bool	   *elemnulls;
		int			n;
		Oid			outfn;
		bool		isvarlena;
		bool		keys = i == pc->keys_arg;

		if (!pc->is_array[i])
			continue;
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("the arrays of a batch call must not be null")));
		a = PG_GETARG_ARRAYTYPE_P(i);
		if (ARR_NDIM(a) > 1)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("the arrays of a batch call must have one dimension")));
		elemtype = ARR_ELEMTYPE(a);
		get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
		deconstruct_array(a, elemtype, typlen, typbyval, typalign, &elems, &elemnulls, &n);
		if (nkeys >= 0 && n != nkeys)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the arrays of a batch call have %d and %d elements", nkeys, n),
					 errhint("Give one value per key.")));
		nkeys = n;
		getTypeOutputInfo(elemtype, &outfn, &isvarlena);
		if (keys)
			parts = palloc(sizeof(Datum) * Max(n, 1));
		for (int e = 0; e < n; e++)
		{
			CHECK_FOR_INTERRUPTS();
			if (elemnulls[e] && keys)
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("key of state \"%s\" must not be null", state)));
			if (elemnulls[e])
				continue;
			if (keys)
			{
				char	   *canonical;

				parts[e] = Int32GetDatum(proxy_route(pc, state,
													 OidOutputFunctionCall(outfn, elems[e]),
													 nparts, &canonical));
				elems[e] = CStringGetTextDatum(canonical);
			}
			else
			{
				int			level = proxy_canonical_begin();

				elems[e] = CStringGetTextDatum(OidOutputFunctionCall(outfn, elems[e]));
				proxy_canonical_end(level);
			}
		}
		{
			int			dims[1] = {n};
			int			lbs[1] = {1};

			args[1 + i] = PointerGetDatum(construct_md_array(elems, elemnulls, 1, dims, lbs,
															 TEXTOID, -1, false, TYPALIGN_INT));
		}
		nulls[1 + i] = ' ';
	}
	args[0] = PointerGetDatum(construct_array(parts, nkeys, INT4OID, sizeof(int32), true,
											  TYPALIGN_INT));
	nulls[0] = ' ';
}

/* A text a part returned, read as type (NULL stays NULL). */
static Datum
proxy_result(HeapTuple row, TupleDesc desc, int col, Oid type, int32 typmod, bool *isnull)
{
	char	   *s = SPI_getvalue(row, desc, col);
	Oid			infn;
	Oid			ioparam;

	*isnull = s == NULL;
	if (s == NULL)
		return (Datum) 0;
	getTypeInputInfo(type, &infn, &ioparam);
	return OidInputFunctionCall(infn, s, ioparam, typmod);
}

/* Rows of a set-returning proxy function, read as its result columns. */
static void
proxy_return_set(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TupleDesc	spidesc = SPI_tuptable->tupdesc;
	TupleDesc	desc;
	Oid			scalar;
	bool		composite;
	MemoryContext old;

	if (!(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("materialize mode required, but it is not allowed in this context")));
	old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	composite = get_call_result_type(fcinfo, &scalar, &desc) == TYPEFUNC_COMPOSITE;
	if (composite)
		desc = CreateTupleDescCopy(desc);
	else
	{
		desc = CreateTemplateTupleDesc(1);
		TupleDescInitEntry(desc, 1, "value", scalar, -1, 0);
	}
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setDesc = desc;
	rsinfo->setResult = tuplestore_begin_heap(rsinfo->allowedModes & SFRM_Materialize_Random,
											  false, work_mem);
	MemoryContextSwitchTo(old);
	if (spidesc->natts != desc->natts)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("a part returned %d columns, not %d", spidesc->natts, desc->natts),
				 errhint("Are the parts and the proxy at the same version of state_backend?")));
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	row = SPI_tuptable->vals[r];
		Datum	   *values = palloc(sizeof(Datum) * desc->natts);
		bool	   *nulls = palloc(sizeof(bool) * desc->natts);

		CHECK_FOR_INTERRUPTS();
		for (int c = 0; c < desc->natts; c++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, c);

			values[c] = proxy_result(row, spidesc, c + 1, att->atttypid, att->atttypmod,
									 &nulls[c]);
		}
		tuplestore_putvalues(rsinfo->setResult, desc, values, nulls);
		pfree(values);
		pfree(nulls);
	}
}

/*
 * The proxy functions that only read.  Every other one changes states on
 * the parts, whose sessions are not read-only: it is refused in a
 * read-only transaction of the proxy, as postgres_fdw refuses to change a
 * foreign table there.  (A function missing here is refused: the safe
 * side.)
 */
static bool
proxy_call_reads(const char *name)
{
	static const char *const readers[] = {
		"value_get", "value_get_many", "key_group", "list_get", "list_length", "map_get",
		"map_contains", "map_entries", "map_size", "map_is_empty", "window_get", "keys",
		"entries", "windows", "timers", "states", "stats"
	};

	for (int i = 0; i < lengthof(readers); i++)
		if (strcmp(name, readers[i]) == 0)
			return true;
	return false;
}

/*
 * state_proxy_call is every proxy function: it sends the call, its
 * arguments as text, to the part that owns the key (or to every part) and
 * returns what came back, in the caller's types.
 */
Datum
state_proxy_call(PG_FUNCTION_ARGS)
{
	ProxyCall  *pc;
	Datum	   *args;
	char	   *nulls;
	int			first;
	Datum		result = (Datum) 0;
	bool		isnull = true;
	Oid			rettype = get_fn_expr_rettype(fcinfo->flinfo);
	bool		retset = fcinfo->resultinfo != NULL && IsA(fcinfo->resultinfo, ReturnSetInfo);
	int			level;
	int			nparts = 0;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	pc = fcinfo->flinfo->fn_extra;
	if (pc == NULL)
		fcinfo->flinfo->fn_extra = pc = proxy_call_get(fcinfo);
	if (XactReadOnly && !proxy_call_reads(pc->name))
		PreventCommandIfReadOnly(psprintf("%s.%s()", pc->schema, pc->name));
	/*
	 * Wait while the cluster is paused (a rescale); given back after the
	 * call, or by the abort of the (sub)transaction an error ends.  The
	 * internal PL/Proxy functions pass their gate while it is held.
	 */
	LockDatabaseObject(ForeignServerRelationId, pc->server, 0, AccessShareLock);
	/* Not while a rescale that died half done is not put right. */
	proxy_journal_check(pc->cluster);

	first = pc->routed ? 1 : 0;
	args = palloc(sizeof(Datum) * (pc->nargs + 1));
	nulls = palloc(pc->nargs + 1);
	if (first)
	{
		if (PG_ARGISNULL(0))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("state name must not be null")));
		args[1] = PG_GETARG_DATUM(0);
		nulls[1] = ' ';
		nparts = proxy_part_count(GetForeignServer(pc->server));
	}
	/* The keys first, read as the state reads them: in the caller's settings. */
	if (pc->keys_arg >= 0)
		proxy_batch_args(pc, fcinfo, args, nulls, nparts);
	else if (first)
	{
		char	   *canonical;
		Datum		keytext;

		if (PG_ARGISNULL(pc->key_arg))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("key of state \"%s\" must not be null",
							TextDatumGetCString(args[1]))));
		keytext = proxy_arg_text(pc, fcinfo, pc->key_arg, nulls + first);
		args[0] = Int32GetDatum(proxy_route(pc, TextDatumGetCString(args[1]),
											TextDatumGetCString(keytext), nparts, &canonical));
		nulls[0] = ' ';
		args[first + pc->key_arg] = CStringGetTextDatum(canonical);
	}
	/* The rest, and the results, in the settings the parts' sessions have. */
	level = proxy_canonical_begin();
	for (int i = 0; i < pc->nargs; i++)
		if (!pc->is_array[i] && i != pc->key_arg && !(first && i == 0))
			args[first + i] = proxy_arg_text(pc, fcinfo, i, nulls + first);
	if (SPI_execute_plan(pc->plan, args, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not call %s._%s", pc->schema, pc->name);

	if (retset)
		proxy_return_set(fcinfo);
	else if (pc->sum)
	{
		int64		total = 0;

		/* A count from every part (truncate, batch calls): their sum. */
		for (uint64 r = 0; r < SPI_processed; r++)
		{
			bool		n;
			Datum		d = proxy_result(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1,
										 INT8OID, -1, &n);

			if (!n)
				total += DatumGetInt64(d);
		}
		result = Int64GetDatum(total);
		isnull = false;
	}
	else if (rettype != VOIDOID && SPI_processed > 0)
	{
		result = proxy_result(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, rettype, -1,
							  &isnull);
		if (!isnull)
			result = SPI_datumTransfer(result, get_typbyval(rettype), get_typlen(rettype));
	}
	proxy_canonical_end(level);

	/* The call is done and committed on its parts: let a rescale proceed. */
	UnlockDatabaseObject(ForeignServerRelationId, pc->server, 0, AccessShareLock);
	/* A state made or dropped through the proxy: its key type is read again. */
	if (strcmp(pc->name, "create_state") == 0 || strcmp(pc->name, "drop_state") == 0)
		proxy_stale = true;
	SPI_finish();
	if (retset)
		return (Datum) 0;
	if (rettype == VOIDOID)
		PG_RETURN_VOID();
	if (isnull)
		PG_RETURN_NULL();
	return result;
}

/* The foreign server of the cluster named by argument 0. */
static ForeignServer *
proxy_cluster_arg(FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("cluster must not be null")));
	return GetForeignServerByName(text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
}

/*
 * _proxy_gate(cluster): the cluster's name, for the CLUSTER clause of every
 * internal PL/Proxy function, in a session that holds the lock of the
 * cluster's foreign server: a proxy call that runs (share) or a rescale
 * (pause_proxy, exclusive).  The gate takes no lock of its own, so nothing
 * of it outlives the call; called in any other way (an internal function
 * called directly) it refuses.
 */
Datum
state_proxy_gate(PG_FUNCTION_ARGS)
{
	ForeignServer *server = proxy_cluster_arg(fcinfo);
	LOCKTAG		tag;

	SET_LOCKTAG_OBJECT(tag, MyDatabaseId, ForeignServerRelationId, server->serverid, 0);
	if (!LockHeldByMe(&tag, AccessShareLock) && !LockHeldByMe(&tag, AccessExclusiveLock))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the internal functions of cluster \"%s\" run only inside its proxy functions",
						server->servername),
				 errhint("Call the functions of the proxy's schema, as state_proxy.value_get.")));
	PG_RETURN_TEXT_P(PG_GETARG_TEXT_P_COPY(0));
}

/*
 * pause_proxy(cluster): no proxy call of the cluster runs from now until
 * this transaction ends (those running are waited for; new ones wait).
 */
Datum
state_proxy_pause(PG_FUNCTION_ARGS)
{
	ForeignServer *server = proxy_cluster_arg(fcinfo);

	LockDatabaseObject(ForeignServerRelationId, server->serverid, 0, AccessExclusiveLock);
	PG_RETURN_VOID();
}

/*
 * _proxy_rescale_step(step): state.rescale_proxy has done a step; each has
 * its fault point.  The names are written out, so that the list of points
 * read from the source has them.
 */
Datum
state_proxy_rescale_step(PG_FUNCTION_ARGS)
{
	char	   *step = text_to_cstring(PG_GETARG_TEXT_PP(0));

	if (strcmp(step, "calls_paused") == 0)
		FAULT_POINT("rescale.proxy_calls_paused");
	else if (strcmp(step, "timers_paused") == 0)
		FAULT_POINT("rescale.proxy_timers_paused");
	else if (strcmp(step, "part_snapshot") == 0)
		FAULT_POINT("rescale.proxy_part_snapshot");
	else if (strcmp(step, "journal_written") == 0)
		FAULT_POINT("rescale.proxy_journal_written");
	else if (strcmp(step, "part_restored") == 0)
		FAULT_POINT("rescale.proxy_part_restored");
	else if (strcmp(step, "switched") == 0)
		FAULT_POINT("rescale.proxy_switched");
	else if (strcmp(step, "switch_durable") == 0)
		FAULT_POINT("rescale.proxy_switch_durable");
	else if (strcmp(step, "part_put_back") == 0)
		FAULT_POINT("rescale.proxy_part_put_back");
	else if (strcmp(step, "journal_removed") == 0)
		FAULT_POINT("rescale.proxy_journal_removed");
	else if (strcmp(step, "timers_resumed") == 0)
		FAULT_POINT("rescale.proxy_timers_resumed");
	else
		elog(ERROR, "unknown step \"%s\" of a proxy rescale", step);
	PG_RETURN_VOID();
}
