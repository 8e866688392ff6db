/*
 * catalog/privileges.c
 *		Who may read, write or manage a state: its owner (and members of
 *		the owner, and superusers), and the roles it was granted to
 *		(StateDesc.grants, changed by registry_set_grant).
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/acl.h"

#include "catalog/registry.h"

static bool
registry_is_owner(const StateDesc *desc, Oid user)
{
	return user == desc->owner || superuser_arg(user) ||
		has_privs_of_role(user, desc->owner);
}

/*
 * registry_check_access raises insufficient_privilege unless the current
 * user owns the state (or is a member of its owner, or a superuser) or was
 * granted all of "privs".
 */
void
registry_check_access(const StateDesc *desc, uint8 privs)
{
	Oid			user = GetUserId();
	uint8		have = 0;

	if (user == desc->owner)
		return;
	if (registry_is_owner(desc, user))
		return;
	for (int i = 0; i < desc->ngrants; i++)
		if (has_privs_of_role(user, desc->grants[i].role))
			have |= desc->grants[i].privs;
	if ((have & privs) != privs)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for state \"%s\"", NameStr(desc->name)),
				 errdetail("This needs %s access.",
						   privs == STATE_PRIV_READ ? "read" :
						   privs == STATE_PRIV_WRITE ? "write" : "read and write"),
				 errhint("The owner can grant it with state.grant_access().")));
}

/* registry_check_owner raises insufficient_privilege unless owner. */
void
registry_check_owner(const StateDesc *desc)
{
	if (!registry_is_owner(desc, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of state \"%s\"", NameStr(desc->name))));
}
