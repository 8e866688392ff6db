/*
 * test/modules/test_provider/test_provider.c
 *		A provider for the tests of registration (test/t/031_provider_registration.pl):
 *		it registers, from _PG_init, a backend with the name, id and API
 *		version its settings give, and a StateInfo size short by what one
 *		says (as a build against another release of the header would have),
 *		so that a test can try a duplicate name, a duplicate id, a bad name,
 *		another API version, another layout or a registration outside the
 *		preload.  Its data operations refuse every call: the tests never
 *		create a state in it.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "state_backend_api.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static char *provider_name = NULL;
static int	provider_id = 100;
static int	provider_version = STATE_BACKEND_API_VERSION;
static int	info_short = 0;

static bool
refuse_get(const StateTarget *st, const StateKey *key, StringInfo out)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("the test provider holds no state")));
	return false;
}

static void
refuse_put(const StateTarget *st, const StateKey *key, const char *value, uint32 len)
{
	(void) refuse_get(st, key, NULL);
}

static const SnapshotStrategy no_snapshot = {0};

static const KeyedStateBackend test_ops = {
	.name = "test_provider",
	.get = refuse_get,
	.put = refuse_put,
	.snapshot = &no_snapshot,
};

static StateBackendProvider provider = {
	.size = sizeof(StateBackendProvider),
	.sizes = STATE_BACKEND_SIZES,
	.ops = &test_ops,
};

void
_PG_init(void)
{
	const StateBackendHost *host;

	DefineCustomStringVariable("test_provider.name", "Name the test provider registers.",
							   NULL, &provider_name, "test_provider", PGC_SIGHUP, 0,
							   NULL, NULL, NULL);
	DefineCustomIntVariable("test_provider.id", "Id the test provider registers.",
							NULL, &provider_id, 100, -1, 100000, PGC_SIGHUP, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("test_provider.api_version", "API version the test provider claims.",
							NULL, &provider_version, STATE_BACKEND_API_VERSION, 0, 100,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("test_provider.info_short", "Bytes the test provider's StateInfo is short of the host's.",
							NULL, &info_short, 0, 0, 64, PGC_SIGHUP, 0, NULL, NULL, NULL);
	MarkGUCPrefixReserved("test_provider");
	provider.api_version = (uint32) provider_version;
	provider.sizes.info -= (uint32) info_short;
	provider.name = provider_name;
	provider.id = provider_id;
	host = state_backend_host_find();
	host->register_backend(&provider);
}
