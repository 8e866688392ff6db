/*
 * sql/sql_operator.c
 *		Operator state (Flink's OperatorStateBackend): operator_list and
 *		union_list states (operator_add, operator_add_all, operator_update,
 *		operator_get) and broadcast states (broadcast_put, broadcast_get,
 *		broadcast_remove, broadcast_entries).
 *
 * An operator state has no keys.  It is a heap state whose one key is the
 * int4 0 (its declared key type): a list image, or a map image for
 * broadcast state, under that key.  So snapshots, checkpoints, restore,
 * privileges and state.states treat it as any heap state; what differs is
 * how a restore of one part of several shares it out (snapshot/rescale.c).
 * The bodies are ListState's and MapState's (sql_list.c, sql_map.c).
 */
#include "postgres.h"

#include "common/codec.h"
#include "sql/sql_common.h"

PG_FUNCTION_INFO_V1(state_operator_add);
PG_FUNCTION_INFO_V1(state_operator_add_all);
PG_FUNCTION_INFO_V1(state_operator_update);
PG_FUNCTION_INFO_V1(state_operator_get);
PG_FUNCTION_INFO_V1(state_broadcast_put);
PG_FUNCTION_INFO_V1(state_broadcast_get);
PG_FUNCTION_INFO_V1(state_broadcast_remove);
PG_FUNCTION_INFO_V1(state_broadcast_entries);

/* operator_begin resolves an operator state and sets call->key to its key. */
static StateCall *
operator_begin(FunctionCallInfo fcinfo, int kind, uint8 privs)
{
	StateCall  *call = state_call_begin(fcinfo, kind, privs);

	resetStringInfo(&call->keybuf);
	codec_encode(&call->codecs[ARG_KEY], Int32GetDatum(0), &call->keybuf);
	state_key_set(&call->key, call->keybuf.data, call->keybuf.len);
	return call;
}

/* operator_add(name, value) */
Datum
state_operator_add(PG_FUNCTION_ARGS)
{
	return sql_list_add(operator_begin(fcinfo, OPERATOR_LISTS, STATE_PRIV_WRITE), fcinfo, 1);
}

/* operator_add_all(name, values) */
Datum
state_operator_add_all(PG_FUNCTION_ARGS)
{
	return sql_list_add_all(operator_begin(fcinfo, OPERATOR_LISTS, STATE_PRIV_WRITE), fcinfo, 1);
}

/* operator_update(name, values): replaces the list; NULL or {} empties it. */
Datum
state_operator_update(PG_FUNCTION_ARGS)
{
	return sql_list_update(operator_begin(fcinfo, OPERATOR_LISTS, STATE_PRIV_WRITE), fcinfo, 1);
}

/* operator_get(name, default): the list as an array, or default. */
Datum
state_operator_get(PG_FUNCTION_ARGS)
{
	return sql_list_get(operator_begin(fcinfo, OPERATOR_LISTS, STATE_PRIV_READ), fcinfo, 1);
}

/* broadcast_put(name, map_key, value) */
Datum
state_broadcast_put(PG_FUNCTION_ARGS)
{
	return sql_map_put(operator_begin(fcinfo, STATE_KIND_BROADCAST, STATE_PRIV_WRITE), fcinfo, 1);
}

/* broadcast_get(name, map_key, default) */
Datum
state_broadcast_get(PG_FUNCTION_ARGS)
{
	return sql_map_get(operator_begin(fcinfo, STATE_KIND_BROADCAST, STATE_PRIV_READ), fcinfo, 1);
}

/* broadcast_remove(name, map_key): true if the map key was there. */
Datum
state_broadcast_remove(PG_FUNCTION_ARGS)
{
	return sql_map_remove(operator_begin(fcinfo, STATE_KIND_BROADCAST, STATE_PRIV_WRITE), fcinfo, 1);
}

/* broadcast_entries(name, key_default, value_default): (map_key, value) rows. */
Datum
state_broadcast_entries(PG_FUNCTION_ARGS)
{
	return sql_map_entries(operator_begin(fcinfo, STATE_KIND_BROADCAST, STATE_PRIV_READ), fcinfo);
}
