/*
 * proxy/sql_proxy.h
 *		What the proxy calls (sql_proxy.c) ask of the journal of a proxy's
 *		rescale (sql_proxy_journal.c).
 */
#ifndef STATE_BACKEND_SQL_PROXY_H
#define STATE_BACKEND_SQL_PROXY_H

extern void proxy_journal_check(const char *cluster);

#endif							/* STATE_BACKEND_SQL_PROXY_H */
