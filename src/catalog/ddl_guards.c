/*
 * catalog/ddl_guards.c
 *		What the registry refuses to let DDL do under stored states: drop
 *		or alter a type a state holds, drop, rename or move an aggregate a
 *		state folds with, drop a role a state depends on.  module.c's hooks
 *		call these; they read the registry's descriptors and the catalog.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/regproc.h"

#include "catalog/registry.h"
#include "common/codec.h"

/*
 * registry_check_type_unused raises an error when a state of the current
 * database (restores in progress included) holds keys or values whose
 * images depend on a type: dropping it (dependent_objects_still_exist) or
 * changing its attributes (feature_not_supported, as PostgreSQL refuses for
 * a type that a table column uses) would leave the stored images
 * undecodable.  A dropped type must be held directly; a changed one may be
 * held through domains, arrays, ranges or other composites.
 */
void
registry_check_type_unused(Oid type, bool altering)
{
	StateDesc  *descs;
	int			n = registry_copy_database(MyDatabaseId, &descs);

	/* The catalog is read with no lock held. */
	for (int i = 0; i < n; i++)
	{
		Oid			held[4] = {descs[i].types[STATE_TYPE_KEY].oid, descs[i].types[STATE_TYPE_VALUE].oid, descs[i].types[STATE_TYPE_MAP_KEY].oid,
		descs[i].agg_type.oid};

		for (int k = 0; k < 4; k++)
		{
			if (!OidIsValid(held[k]) ||
				!(altering ? codec_type_contains(held[k], type) : held[k] == type))
				continue;
			if (altering)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot alter type %s because state \"%s\" uses it",
								format_type_be(type), NameStr(descs[i].name)),
						 errdetail("The state holds images of %s values, which a change of its attributes would leave unreadable.",
								   format_type_be(held[k])),
						 errhint("Take a canonical snapshot, drop the state, alter the type, then create the state again and fill it.")));
			ereport(ERROR,
					(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
					 errmsg("cannot drop type %s because state \"%s\" uses it",
							format_type_be(type), NameStr(descs[i].name)),
					 errhint("Drop the state first with state.drop_state().")));
		}
	}
	pfree(descs);
}


/* A state of this database that folds with aggregate *arg. */
static bool
folds_with(const StateDesc *d, const void *arg)
{
	return d->dbid == MyDatabaseId && OidIsValid(d->aggregate) &&
		d->aggregate == *(const Oid *) arg;
}

/* A state, of any database, that role *arg owns or holds a grant on. */
static bool
depends_on_role(const StateDesc *d, const void *arg)
{
	Oid			role = *(const Oid *) arg;

	if (d->owner == role)
		return true;
	for (int g = 0; g < d->ngrants; g++)
		if (d->grants[g].role == role)
			return true;
	return false;
}

/*
 * registry_check_aggregate_unused refuses to drop, rename or move an
 * aggregate that a state of this database folds with: its reads would
 * find no aggregate, and its snapshots name the aggregate by its
 * signature.  action is "drop", "rename" or "move".
 */
void
registry_check_aggregate_unused(Oid aggfnoid, const char *action)
{
	NameData	holder;

	if (registry_find_match(folds_with, &aggfnoid, &holder))
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot %s aggregate %s because state \"%s\" uses it",
						action, format_procedure(aggfnoid), NameStr(holder)),
				 errhint("Drop the state first with state.drop_state().")));
}

/*
 * registry_check_role_unused raises dependent_objects_still_exist when a
 * role owns a state or holds a grant on one, in any database.
 */
void
registry_check_role_unused(Oid role)
{
	NameData	holder;

	if (registry_find_match(depends_on_role, &role, &holder))
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("role \"%s\" cannot be dropped because state \"%s\" depends on it",
						GetUserNameFromId(role, false), NameStr(holder)),
				 errhint("Drop the state, or revoke the role's access to it, first.")));
}
