/* db.c - the statement interface over SQLite and PostgreSQL; see db.h. */
#include "store/db.h"
#include "store/store_int.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

struct db_stmt {
	struct store *st;
	sqlite3_stmt *lite;             /* DB_SQLITE */
	struct db_cached *cached;       /* the cache slot lite belongs to, or NULL */
	/* DB_POSTGRES: the SQL with $N, the parameters as text (NULL: SQL
	 * NULL), the whole result once run; row is the current one. */
	char *sql;
	char **val;
	int nval;
	Oid *types;                     /* 0 (inferred), or text for a $N the SQL leaves out */
	PGresult *res;
	int row, nrows;
	long changes;
	unsigned char *blob;            /* the last db_col_blob, decoded */
};

/* ---- what names a PostgreSQL database --------------------------------- */

/* libpq's connection keywords (PostgreSQL 16's list): a conninfo string
 * is "keyword = value ...", and one that starts with any of them names a
 * server, whatever its spacing ("dbname = x" is libpq's too). */
static const char *const conninfo_keys[] = {
	"host", "hostaddr", "port", "dbname", "user", "password", "passfile", "channel_binding",
	"connect_timeout", "client_encoding", "options", "application_name",
	"fallback_application_name", "keepalives", "keepalives_idle", "keepalives_interval",
	"keepalives_count", "tcp_user_timeout", "replication", "gssencmode", "sslmode",
	"requiressl", "sslcompression", "sslcert", "sslkey", "sslpassword", "sslcertmode",
	"sslrootcert", "sslcrl", "sslcrldir", "sslsni", "requirepeer", "require_auth",
	"ssl_min_protocol_version", "ssl_max_protocol_version", "krbsrvname", "gsslib",
	"gssdelegation", "service", "target_session_attrs", "load_balance_hosts",
};

static bool conninfo_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* The length of the keyword at p when it is one of libpq's followed by
 * "=" (spaces allowed before it), and in *value where its value starts
 * (after the spaces that may follow "="); 0 when it is not. */
static size_t conninfo_key(const char *p, const char **value)
{
	size_t n = 0;

	while ((p[n] >= 'a' && p[n] <= 'z') || p[n] == '_')
		n++;
	for (size_t i = 0; n && i < sizeof conninfo_keys / sizeof *conninfo_keys; i++) {
		if (strlen(conninfo_keys[i]) != n || strncmp(p, conninfo_keys[i], n) != 0)
			continue;
		const char *q = p + n;

		while (conninfo_space(*q))
			q++;
		if (*q != '=')
			return 0;
		q++;
		while (conninfo_space(*q))
			q++;
		if (value)
			*value = q;
		return n;
	}
	return 0;
}

bool db_is_postgres(const char *path)
{
	if (!path)
		return false;
	/* (white space around a URI too: a CI secret pasted with a newline
	 * made a SQLite file named after the URI, its password included) */
	while (conninfo_space(*path))
		path++;
	if (strncmp(path, "postgres://", 11) == 0 || strncmp(path, "postgresql://", 13) == 0)
		return true;
	return conninfo_key(path, NULL) > 0;
}

char *db_pg_trim(const char *path)
{
	size_t n;

	while (conninfo_space(*path))
		path++;
	n = strlen(path);
	while (n > 0 && conninfo_space(path[n - 1]))
		n--;
	return xstrndup(path, n);
}

enum db_backend store_backend(const struct store *st)
{
	return st->backend;
}

/* Append the text of a password at p (up to its end) as "***"; returns
 * what follows it.  Quoted conninfo values ('a b') end at their quote. */
static const char *hide_value(struct buf *b, const char *p, const char *stops)
{
	buf_adds(b, "***");
	if (*p == '\'') {
		for (p++; *p && *p != '\''; p++)
			if (*p == '\\' && p[1])
				p++;
		return *p ? p + 1 : p;
	}
	while (*p && !strchr(stops, *p))
		p++;
	return p;
}

/* Whether a libpq keyword (n bytes at key) is a secret: the password, or
 * the passphrase of the client's SSL key. */
static bool secret_key(const char *key, size_t n)
{
	return (n == 8 && strncmp(key, "password", 8) == 0) || (n == 11 && strncmp(key, "sslpassword", 11) == 0);
}

/* Whether the URI query key at key (n bytes) is a secret once
 * percent-decoded, as libpq decodes it (pass%77ord= is password=). */
static bool secret_query_key(const char *key, size_t n)
{
	char plain[16];
	size_t len = 0;

	for (size_t i = 0; i < n; i++) {
		char c = key[i];

		if (c == '%' && i + 2 < n && isxdigit((unsigned char)key[i + 1]) &&
		    isxdigit((unsigned char)key[i + 2])) {
			char hex[3] = { key[i + 1], key[i + 2], '\0' };

			c = (char)strtol(hex, NULL, 16);
			i += 2;
		}
		if (len == sizeof plain)
			return false;   /* longer than any secret's keyword */
		plain[len++] = c;
	}
	return secret_key(plain, len);
}

/* A URI's query (after its '?') with the values of its secrets hidden. */
static void hide_query(struct buf *b, const char *p)
{
	while (*p) {
		size_t n = strcspn(p, "=&");
		bool secret = secret_query_key(p, n);

		buf_add(b, p, n);
		p += n;
		if (*p == '=') {
			buf_addch(b, *p++);
			n = strcspn(p, "&");
			if (secret)
				buf_adds(b, "***");
			else
				buf_add(b, p, n);
			p += n;
		}
		if (*p == '&')
			buf_addch(b, *p++);
	}
}

/* A URI with its password (userinfo, query) hidden. */
static char *display_uri(const char *path)
{
	struct buf b = BUF_INIT;
	const char *p = path, *host = strstr(path, "://") + 3;
	const char *at = strchr(host, '@'), *slash = strchr(host, '/');
	const char *colon = at ? memchr(host, ':', (size_t)(at - host)) : NULL;
	const char *query;

	if (at && (!slash || at < slash) && colon) {
		buf_add(&b, path, (size_t)(colon + 1 - path));
		buf_adds(&b, "***");
		p = at;
	}
	query = strchr(p, '?');
	if (!query) {
		buf_adds(&b, p);
		return buf_detach(&b, NULL);
	}
	buf_add(&b, p, (size_t)(query + 1 - p));
	hide_query(&b, query + 1);
	return buf_detach(&b, NULL);
}

/* A conninfo string with its secrets' values hidden. */
static char *display_conninfo(const char *path)
{
	struct buf b = BUF_INIT;
	const char *p = path;

	/* a conninfo string: "key = value" pairs, values quoted or up to a space */
	while (*p) {
		const char *value;
		size_t n;

		if (conninfo_space(*p) || (p > path && !conninfo_space(p[-1])) || !(n = conninfo_key(p, &value))) {
			buf_addch(&b, *p++);
			continue;
		}
		buf_add(&b, p, (size_t)(value - p));
		if (secret_key(p, n)) {
			p = hide_value(&b, value, " \t\n\r\f\v");
		} else if (*value == '\'') {
			const char *q = value + 1;

			while (*q && *q != '\'')
				q += *q == '\\' && q[1] ? 2 : 1;
			q += *q == '\'';
			buf_add(&b, value, (size_t)(q - value));
			p = q;
		} else {
			p = value;
		}
	}
	return buf_detach(&b, NULL);
}

char *db_display_path(const char *path)
{
	if (!db_is_postgres(path))
		return xstrdup(path);

	char *text = db_pg_trim(path);
	bool uri = strncmp(text, "postgres://", 11) == 0 || strncmp(text, "postgresql://", 13) == 0;
	char *shown = uri ? display_uri(text) : display_conninfo(text);

	free(text);
	return shown;
}

/* ---- PostgreSQL connection --------------------------------------------- */

/* NOTICEs (CREATE ... IF NOT EXISTS, say) are not the user's business. */
static void quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

void db_pg_error(struct store *st, const PGresult *res)
{
	const char *msg = res ? PQresultErrorMessage(res) : PQerrorMessage(st->pg);
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	size_t n;

	free(st->pg_msg);
	st->pg_msg = xstrdup(msg && *msg ? msg : "unknown PostgreSQL error");
	n = strlen(st->pg_msg);
	while (n > 0 && isspace((unsigned char)st->pg_msg[n - 1]))
		st->pg_msg[--n] = '\0';
	snprintf(st->pg_state, sizeof st->pg_state, "%s", state ? state : "");
}

int db_pg_connect(struct store *st, const char *conninfo)
{
	/* The program's name as the connection's application_name unless
	 * conninfo gives one: pg_stat_activity and the server's log then say
	 * which of Forge's programs holds a connection or a lock.  The
	 * executable's name (forge run's supervisor is forge-supervisor, though
	 * called "forge"). */
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	const char *name = program_invocation_short_name;

	if (n > 0) {
		exe[n] = '\0';
		name = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
	}
	const char *keys[4], *values[4];
	size_t k = 0;

	/* A server that accepts and never answers (stopped with SIGSTOP, a
	 * hung host) kept every command waiting for ever: libpq waits without
	 * limit unless told.  DB_CONNECT_TIMEOUT_S by default; before dbname,
	 * so that a connect_timeout in conninfo wins, and not at all when
	 * PGCONNECT_TIMEOUT says what the user wants. */
	if (!getenv("PGCONNECT_TIMEOUT")) {
		keys[k] = "connect_timeout";
		values[k++] = DB_CONNECT_TIMEOUT_S;
	}
	keys[k] = "dbname";
	values[k++] = conninfo;
	keys[k] = "fallback_application_name";
	values[k++] = name;
	keys[k] = values[k] = NULL;

	st->backend = DB_POSTGRES;
	st->pg = PQconnectdbParams(keys, values, 1);
	if (!st->pg)
		return forge_error("cannot connect to database '%s': out of memory", st->path);
	if (PQstatus(st->pg) != CONNECTION_OK) {
		db_pg_error(st, NULL);
		return forge_error("cannot connect to database '%s': %s", st->path, st->pg_msg);
	}
	PQsetNoticeProcessor(st->pg, quiet, NULL);
	return 0;
}

int db_pg_exec(struct store *st, const char *sql)
{
	PGresult *res = PQexec(st->pg, sql);
	ExecStatusType t = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	int rc = 0;

	if (t != PGRES_COMMAND_OK && t != PGRES_TUPLES_OK) {
		db_pg_error(st, res);
		rc = forge_error("database '%s': '%.60s' failed: %s", st->path, sql, st->pg_msg);
	}
	PQclear(res);
	return rc;
}

/* ---- statements -------------------------------------------------------- */

/* sql with ?N (and bare ?, numbered on) as $N outside '...' and "...";
 * *max the highest parameter number; (*used)[n - 1] whether $n occurs
 * (malloc'd, *max of them).  malloc'd. */
static char *pg_sql(const char *sql, int *max, bool **used)
{
	size_t cap = 0;

	struct buf b = BUF_INIT;
	int next = 1;
	char quote = 0;

	*max = 0;
	for (const char *p = sql; *p; p++) {
		if (quote) {
			quote = *p == quote ? 0 : quote;
			buf_addch(&b, *p);
		} else if (*p == '\'' || *p == '"') {
			quote = *p;
			buf_addch(&b, *p);
		} else if (*p == '?') {
			int n = 0;

			while (isdigit((unsigned char)p[1]) && n < 10000)
				n = n * 10 + (*++p - '0');
			if (!n)
				n = next;
			next = n + 1;
			if (n > *max)
				*max = n;
			if ((size_t)n > cap) {
				size_t old = cap;

				cap = (size_t)n * 2;
				*used = xrealloc(*used, cap * sizeof **used);
				memset(*used + old, 0, (cap - old) * sizeof **used);
			}
			(*used)[n - 1] = true;
			buf_addf(&b, "$%d", n);
		} else {
			buf_addch(&b, *p);
		}
	}
	return buf_detach(&b, NULL);
}

/* s->lite from the cache when a free statement of sql is there: 0, or -1. */
static int cache_take(struct db_stmt *s, struct store *st, const char *sql)
{
	for (int i = 0; i < DB_STMT_CACHE; i++) {
		struct db_cached *c = &st->cache[i];

		if (c->sql && !c->busy && strcmp(c->sql, sql) == 0) {
			c->busy = true;
			c->used = ++st->cache_clock;
			s->lite = c->lite;
			s->cached = c;
			return 0;
		}
	}
	return -1;
}

/* Keep s->lite, just prepared from sql, in a free slot or in place of the
 * least recently used idle one; when every slot is busy, s stays its own. */
static void cache_put(struct db_stmt *s, struct store *st, const char *sql)
{
	struct db_cached *victim = NULL;

	for (int i = 0; i < DB_STMT_CACHE; i++) {
		struct db_cached *c = &st->cache[i];

		if (!c->sql) {
			victim = c;
			break;
		}
		if (!c->busy && (!victim || c->used < victim->used))
			victim = c;
	}
	if (!victim)
		return;
	if (victim->sql) {
		sqlite3_finalize(victim->lite);
		free(victim->sql);
	}
	*victim = (struct db_cached){ xstrdup(sql), s->lite, true, ++st->cache_clock };
	s->cached = victim;
}

void db_cache_free(struct store *st)
{
	for (int i = 0; i < DB_STMT_CACHE; i++) {
		struct db_cached *c = &st->cache[i];

		sqlite3_finalize(c->lite);
		free(c->sql);
		*c = (struct db_cached){ 0 };
	}
}

int db_prepare(struct db_stmt **out, struct store *st, const char *sql)
{
	struct db_stmt *s = xcalloc(1, sizeof *s);

	*out = NULL;
	s->st = st;
	if (store_queue_flush(st) < 0) {
		free(s);
		return -1;
	}
	if (st->backend == DB_POSTGRES) {
		bool *used = NULL;

		s->sql = pg_sql(sql, &s->nval, &used);
		s->val = xcalloc((size_t)s->nval + 1, sizeof *s->val);
		/* PostgreSQL cannot tell the type of a parameter the SQL does
		 * not name (?3 used, ?1 not): it goes as text */
		s->types = xcalloc((size_t)s->nval + 1, sizeof *s->types);
		for (int i = 0; i < s->nval; i++)
			s->types[i] = used[i] ? 0 : 25;   /* 25: text's type id */
		free(used);
		s->row = -1;
		*out = s;
		return 0;
	}
	if (cache_take(s, st, sql) == 0)
		goto done;
	if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s->lite, NULL) != SQLITE_OK) {
		free(s);
		return store_fail(st, "cannot prepare '%.60s'", sql);
	}
	cache_put(s, st, sql);
done:
	*out = s;
	return 0;
}

/* The text slot of parameter i (PostgreSQL), freed of its old value. */
static char **pg_slot(struct db_stmt *s, int i)
{
	if (i < 1 || i > s->nval)
		return NULL;
	free(s->val[i - 1]);
	s->val[i - 1] = NULL;
	return &s->val[i - 1];
}

void db_bind_textn(struct db_stmt *s, int i, const char *text, size_t n)
{
	if (s->lite) {
		sqlite3_bind_text64(s->lite, i, text, (sqlite3_uint64)n, SQLITE_TRANSIENT, SQLITE_UTF8);
		return;
	}
	char **slot = pg_slot(s, i);

	if (slot)
		*slot = xstrndup(text, n);
}

void db_bind_text(struct db_stmt *s, int i, const char *text)
{
	if (!text)
		db_bind_null(s, i);
	else
		db_bind_textn(s, i, text, strlen(text));
}

void db_bind_int64(struct db_stmt *s, int i, int64_t v)
{
	char text[32];

	if (s->lite) {
		sqlite3_bind_int64(s->lite, i, v);
		return;
	}
	snprintf(text, sizeof text, "%" PRId64, v);
	db_bind_text(s, i, text);
}

void db_bind_double(struct db_stmt *s, int i, double v)
{
	char text[40];

	if (s->lite) {
		sqlite3_bind_double(s->lite, i, v);
		return;
	}
	snprintf(text, sizeof text, "%.17g", v);
	db_bind_text(s, i, text);
}

void db_bind_null(struct db_stmt *s, int i)
{
	if (s->lite)
		sqlite3_bind_null(s->lite, i);
	else
		(void)pg_slot(s, i);
}

void db_bind_blob(struct db_stmt *s, int i, const void *data, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = data;

	if (s->lite) {
		sqlite3_bind_blob64(s->lite, i, data, (sqlite3_uint64)n, SQLITE_TRANSIENT);
		return;
	}
	char **slot = pg_slot(s, i);

	if (!slot)
		return;
	/* bytea's hex input form: \x then two digits a byte */
	char *t = xmalloc(2 * n + 3);

	t[0] = '\\';
	t[1] = 'x';
	for (size_t k = 0; k < n; k++) {
		t[2 + 2 * k] = hex[p[k] >> 4];
		t[3 + 2 * k] = hex[p[k] & 15];
	}
	t[2 * n + 2] = '\0';
	*slot = t;
}

/* Run the statement (PostgreSQL): the whole result is kept. */
static int pg_run(struct db_stmt *s)
{
	struct store *st = s->st;
	ExecStatusType t;

	s->res = PQexecParams(st->pg, s->sql, s->nval, s->types, (const char *const *)s->val, NULL, NULL, 0);
	t = s->res ? PQresultStatus(s->res) : PGRES_FATAL_ERROR;
	if (t == PGRES_TUPLES_OK) {
		s->nrows = PQntuples(s->res);
	} else if (t == PGRES_COMMAND_OK) {
		const char *n = PQcmdTuples(s->res);

		s->changes = n && *n ? strtol(n, NULL, 10) : 0;
	} else {
		db_pg_error(st, s->res);
		PQclear(s->res);
		s->res = NULL;
		return -1;
	}
	return 0;
}

int db_step(struct db_stmt *s)
{
	if (s->lite) {
		int rc = sqlite3_step(s->lite);

		return rc == SQLITE_ROW ? DB_ROW : rc == SQLITE_DONE ? DB_DONE : -1;
	}
	if (!s->res && pg_run(s) < 0)
		return -1;
	s->row++;
	return s->row < s->nrows ? DB_ROW : DB_DONE;
}

long db_changes(struct db_stmt *s)
{
	return s->lite ? sqlite3_changes(s->st->db) : s->changes;
}

bool db_unique_violation(struct store *st)
{
	if (st->backend == DB_POSTGRES)
		return strcmp(st->pg_state, "23505") == 0;
	int ext = sqlite3_extended_errcode(st->db);

	return ext == SQLITE_CONSTRAINT_PRIMARYKEY || ext == SQLITE_CONSTRAINT_UNIQUE;
}

bool db_col_null(struct db_stmt *s, int i)
{
	if (s->lite)
		return sqlite3_column_type(s->lite, i) == SQLITE_NULL;
	return !s->res || s->row >= s->nrows || PQgetisnull(s->res, s->row, i);
}

const char *db_col_text(struct db_stmt *s, int i)
{
	if (s->lite)
		return (const char *)sqlite3_column_text(s->lite, i);
	return db_col_null(s, i) ? NULL : PQgetvalue(s->res, s->row, i);
}

size_t db_col_bytes(struct db_stmt *s, int i)
{
	if (s->lite)
		return (size_t)sqlite3_column_bytes(s->lite, i);
	return db_col_null(s, i) ? 0 : (size_t)PQgetlength(s->res, s->row, i);
}

int64_t db_col_int64(struct db_stmt *s, int i)
{
	const char *t;

	if (s->lite)
		return sqlite3_column_int64(s->lite, i);
	t = db_col_text(s, i);
	return t ? (int64_t)strtod(t, NULL) : 0;
}

double db_col_double(struct db_stmt *s, int i)
{
	const char *t;

	if (s->lite)
		return sqlite3_column_double(s->lite, i);
	t = db_col_text(s, i);
	return t ? strtod(t, NULL) : 0;
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

const void *db_col_blob(struct db_stmt *s, int i, size_t *n)
{
	const char *t;
	size_t len;

	*n = 0;
	if (s->lite) {
		const void *b = sqlite3_column_blob(s->lite, i);

		*n = b ? (size_t)sqlite3_column_bytes(s->lite, i) : 0;
		return b;
	}
	t = db_col_text(s, i);
	if (!t)
		return NULL;
	len = db_col_bytes(s, i);
	free(s->blob);
	s->blob = xmalloc(len / 2 + 1);
	if (len >= 2 && t[0] == '\\' && t[1] == 'x') {
		for (size_t k = 2; k + 1 < len; k += 2) {
			int hi = hexval(t[k]), lo = hexval(t[k + 1]);

			if (hi < 0 || lo < 0)
				break;
			s->blob[(*n)++] = (unsigned char)(hi << 4 | lo);
		}
	}
	return s->blob;
}

bool db_in_transaction(struct store *st)
{
	if (st->backend == DB_POSTGRES)
		return PQtransactionStatus(st->pg) != PQTRANS_IDLE;
	return !sqlite3_get_autocommit(st->db);
}

jv db_col_str(struct db_stmt *s, int i)
{
	const char *t = db_col_text(s, i);

	return t ? jv_string_sized(t, (int)db_col_bytes(s, i)) : jv_null();
}

jv db_col_num(struct db_stmt *s, int i)
{
	return db_col_null(s, i) ? jv_null() : jv_number(db_col_double(s, i));
}

jv db_col_json(struct db_stmt *s, int i)
{
	const char *t = db_col_text(s, i);

	if (!t)
		return jv_null();
	jv v = json_parse(t, db_col_bytes(s, i));

	return jv_is_valid(v) ? v : (jv_free(v), jv_null());
}

void db_reset(struct db_stmt *s)
{
	if (s->lite) {
		sqlite3_reset(s->lite);
		sqlite3_clear_bindings(s->lite);
		return;
	}
	PQclear(s->res);
	s->res = NULL;
	free(s->blob);
	s->blob = NULL;
	s->row = -1;
	s->nrows = 0;
	s->changes = 0;
	for (int i = 0; i < s->nval; i++) {
		free(s->val[i]);
		s->val[i] = NULL;
	}
}

void db_finalize(struct db_stmt *s)
{
	if (!s)
		return;
	if (s->cached) {
		/* back to the cache: unbound, reset, no lock held */
		sqlite3_reset(s->lite);
		sqlite3_clear_bindings(s->lite);
		s->cached->busy = false;
	} else if (s->lite) {
		sqlite3_finalize(s->lite);
	} else {
		db_reset(s);
		free(s->val);
		free(s->types);
		free(s->sql);
	}
	free(s);
}

int db_step_done(struct store *st, struct db_stmt *s, const char *fmt, ...)
{
	int rc = 0;

	if (db_step(s) != DB_DONE) {
		va_list ap;

		va_start(ap, fmt);
		rc = store_failv(st, fmt, ap);
		va_end(ap);
	}
	db_finalize(s);
	return rc;
}
