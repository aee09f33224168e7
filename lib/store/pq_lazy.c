/* pq_lazy.c - libpq loaded on first use (core/lazylib.h): the functions
 * the store calls, each looking up the real one on its first call.  libpq
 * (with OpenSSL, Kerberos, LDAP: ~24 libraries) is then loaded by the
 * first --db postgres://..., not at every program's start: loaded at start
 * it took forge-events --version from 12.7 to 42 ms CPU (scripts, README
 * "PostgreSQL"). */
#include "core/lazylib.h"

#include <libpq-fe.h>

#ifndef FORGE_PQ_SONAME
#define FORGE_PQ_SONAME "libpq.so.5"
#endif

static struct lazylib pq = LAZYLIB_INIT(FORGE_PQ_SONAME);

#define LAZY(name) \
	static __typeof__(name) *p_##name; \
	if (!p_##name) \
		*(void **)&p_##name = lazylib_sym(&pq, #name);

PGconn *PQconnectdb(const char *conninfo)
{
	LAZY(PQconnectdb)
	return p_PQconnectdb(conninfo);
}

PGconn *PQconnectdbParams(const char *const *keywords, const char *const *values, int expand_dbname)
{
	LAZY(PQconnectdbParams)
	return p_PQconnectdbParams(keywords, values, expand_dbname);
}

ConnStatusType PQstatus(const PGconn *conn)
{
	LAZY(PQstatus)
	return p_PQstatus(conn);
}

char *PQerrorMessage(const PGconn *conn)
{
	LAZY(PQerrorMessage)
	return p_PQerrorMessage(conn);
}

void PQfinish(PGconn *conn)
{
	LAZY(PQfinish)
	p_PQfinish(conn);
}

PQnoticeProcessor PQsetNoticeProcessor(PGconn *conn, PQnoticeProcessor proc, void *arg)
{
	LAZY(PQsetNoticeProcessor)
	return p_PQsetNoticeProcessor(conn, proc, arg);
}

PGresult *PQexec(PGconn *conn, const char *query)
{
	LAZY(PQexec)
	return p_PQexec(conn, query);
}

PGresult *PQexecParams(PGconn *conn, const char *command, int nParams, const Oid *paramTypes,
		       const char *const *paramValues, const int *paramLengths, const int *paramFormats,
		       int resultFormat)
{
	LAZY(PQexecParams)
	return p_PQexecParams(conn, command, nParams, paramTypes, paramValues, paramLengths,
			      paramFormats, resultFormat);
}

ExecStatusType PQresultStatus(const PGresult *res)
{
	LAZY(PQresultStatus)
	return p_PQresultStatus(res);
}

char *PQresultErrorMessage(const PGresult *res)
{
	LAZY(PQresultErrorMessage)
	return p_PQresultErrorMessage(res);
}

char *PQresultErrorField(const PGresult *res, int fieldcode)
{
	LAZY(PQresultErrorField)
	return p_PQresultErrorField(res, fieldcode);
}

void PQclear(PGresult *res)
{
	LAZY(PQclear)
	p_PQclear(res);
}

int PQntuples(const PGresult *res)
{
	LAZY(PQntuples)
	return p_PQntuples(res);
}

char *PQgetvalue(const PGresult *res, int tup_num, int field_num)
{
	LAZY(PQgetvalue)
	return p_PQgetvalue(res, tup_num, field_num);
}

int PQgetlength(const PGresult *res, int tup_num, int field_num)
{
	LAZY(PQgetlength)
	return p_PQgetlength(res, tup_num, field_num);
}

int PQgetisnull(const PGresult *res, int tup_num, int field_num)
{
	LAZY(PQgetisnull)
	return p_PQgetisnull(res, tup_num, field_num);
}

char *PQcmdTuples(PGresult *res)
{
	LAZY(PQcmdTuples)
	return p_PQcmdTuples(res);
}

PQconninfoOption *PQconninfoParse(const char *conninfo, char **errmsg)
{
	LAZY(PQconninfoParse)
	return p_PQconninfoParse(conninfo, errmsg);
}

void PQconninfoFree(PQconninfoOption *connOptions)
{
	LAZY(PQconninfoFree)
	p_PQconninfoFree(connOptions);
}

void PQfreemem(void *ptr)
{
	LAZY(PQfreemem)
	p_PQfreemem(ptr);
}

PGTransactionStatusType PQtransactionStatus(const PGconn *conn)
{
	LAZY(PQtransactionStatus)
	return p_PQtransactionStatus(conn);
}
