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

/*
 * An operator state's functions run ListState's and MapState's bodies on
 * its one key, with their arguments after the state's name.
 */
#define OPERATOR_FUNCTION(name, kind, privs, body) \
	STATE_SQL_BODY_FUNCTION(name, operator_begin, kind, privs, body, 1)

/* operator_add(name, value) */
OPERATOR_FUNCTION(state_operator_add, OPERATOR_LISTS, STATE_PRIV_WRITE, sql_list_add);

/* operator_add_all(name, values) */
OPERATOR_FUNCTION(state_operator_add_all, OPERATOR_LISTS, STATE_PRIV_WRITE, sql_list_add_all);

/* operator_update(name, values): replaces the list; NULL or {} empties it. */
OPERATOR_FUNCTION(state_operator_update, OPERATOR_LISTS, STATE_PRIV_WRITE, sql_list_update);

/* operator_get(name, default): the list as an array, or default. */
OPERATOR_FUNCTION(state_operator_get, OPERATOR_LISTS, STATE_PRIV_READ, sql_list_get);

/* broadcast_put(name, map_key, value) */
OPERATOR_FUNCTION(state_broadcast_put, STATE_KIND_BROADCAST, STATE_PRIV_WRITE, sql_map_put);

/* broadcast_get(name, map_key, default) */
OPERATOR_FUNCTION(state_broadcast_get, STATE_KIND_BROADCAST, STATE_PRIV_READ, sql_map_get);

/* broadcast_remove(name, map_key): true if the map key was there. */
OPERATOR_FUNCTION(state_broadcast_remove, STATE_KIND_BROADCAST, STATE_PRIV_WRITE, sql_map_remove);

/* broadcast_entries(name, key_default, value_default): (map_key, value) rows. */
Datum
state_broadcast_entries(PG_FUNCTION_ARGS)
{
	return sql_map_entries(operator_begin(fcinfo, STATE_KIND_BROADCAST, STATE_PRIV_READ), fcinfo);
}
