/*
 * db.h - one statement interface over the store's two backends: SQLite (a
 * file, the default) and PostgreSQL (libpq; --db postgres://..., any libpq
 * URI or conninfo string).
 *
 * Why a statement interface and not per-backend store functions: the
 * modules that keep tables in the store (runs, checkpoints, gates, plans,
 * the model-call log, and next memory, findings, compile docs) each write
 * their SQL once, with SQLite's ?N placeholders, and step through rows the
 * same way on both.  db_prepare() rewrites ?N (and bare ?) to PostgreSQL's
 * $N outside quoted text; nothing else is rewritten, so the SQL a module
 * writes must mean the same on both: ON CONFLICT ... DO NOTHING/DO UPDATE
 * (not INSERT OR IGNORE/REPLACE), IS DISTINCT FROM (not IS NOT), CAST(? AS
 * TEXT) where PostgreSQL cannot tell a parameter's type, LIMIT with a
 * positive count (DB_LIMIT_ALL for "no limit").  A parameter the SQL
 * does not name (?3 named, ?1 and ?2 not) may still be bound: it goes to
 * PostgreSQL as text, which it ignores.  What differs in the
 * schema (types, triggers, JSON operators) lives in the migrations:
 * schemas/sql/ for SQLite, schemas/pg/ for PostgreSQL, same tables, same
 * columns, same append-only rules.  The SQLite hot path (events streamed
 * in, store.c) keeps its own prepared statements.
 *
 * Values: parameters are copied when bound (the caller's buffers may go
 * at once); text columns are borrowed until the next db_step(),
 * db_reset() or db_finalize() of the statement.  On PostgreSQL every value
 * travels as text and the whole result is read at the first step.
 *
 * Errors: db_prepare() and db_step() return -1 with forge_error() naming
 * the database; store_fail() (store.h) after a failed db_step() gives the
 * backend's message with the caller's words.
 */
#ifndef FORGE_STORE_DB_H
#define FORGE_STORE_DB_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct db_stmt;

enum db_backend { DB_SQLITE, DB_POSTGRES };
enum { DB_DONE = 0, DB_ROW = 1 };

/* A LIMIT count meaning "all rows" on both backends. */
#define DB_LIMIT_ALL INT64_C(9223372036854775807)

/* Whether path names a PostgreSQL database: postgres:// or postgresql://
 * URIs, or a libpq conninfo string ("host=/run/pg dbname=forge"), white
 * space before them allowed (a value pasted with a newline: never a file
 * named after the URI). */
bool db_is_postgres(const char *path);

/* A PostgreSQL path without the white space around it: what is given to
 * libpq (which refuses it before a URI); malloc'd. */
char *db_pg_trim(const char *path);

/* The store's backend. */
enum db_backend store_backend(const struct store *st);

/* path with a URI's or conninfo's secrets (password, sslpassword; a URI's
 * query keys percent-decoded first, as libpq reads them) replaced by "***"
 * (for messages and `forge db status`); a PostgreSQL path without the
 * white space around it; malloc'd. */
char *db_display_path(const char *path);

/* Prepare sql (SQLite dialect, ?N placeholders) on st; the caller
 * db_finalize()s *out.  Events queued in a transaction are inserted first.
 * On SQLite the compiled statement is kept per connection (the 32 last used
 * texts): a later db_prepare() of the same text takes it back, reset and
 * with no value bound, instead of compiling it again; one that finds it in
 * use (not yet finalized) compiles a statement of its own.  db_finalize()
 * gives a kept statement back; store_free() frees them all.  So sql must be
 * the same text for the same query: build it with values as ?N parameters,
 * never printed into it. */
int db_prepare(struct db_stmt **out, struct store *st, const char *sql);

/* Bind parameter i (1-based); copied.  text NULL binds SQL NULL. */
void db_bind_text(struct db_stmt *s, int i, const char *text);
void db_bind_textn(struct db_stmt *s, int i, const char *text, size_t n);
void db_bind_int64(struct db_stmt *s, int i, int64_t v);
void db_bind_double(struct db_stmt *s, int i, double v);
void db_bind_null(struct db_stmt *s, int i);
/* Bytes (SQLite BLOB, PostgreSQL bytea: sent as hex text); copied. */
void db_bind_blob(struct db_stmt *s, int i, const void *data, size_t n);

/* DB_ROW (a row to read), DB_DONE, or -1 (the message: store_fail()). */
int db_step(struct db_stmt *s);

/* Rows the last INSERT/UPDATE/DELETE step changed. */
long db_changes(struct db_stmt *s);

/* Whether a transaction is open on st (also a failed one on PostgreSQL). */
bool db_in_transaction(struct store *st);

/* Whether the last failure was a UNIQUE/PRIMARY KEY violation. */
bool db_unique_violation(struct store *st);

/* Column i (0-based) of the current row.  text: NULL for SQL NULL. */
bool db_col_null(struct db_stmt *s, int i);
const char *db_col_text(struct db_stmt *s, int i);
size_t db_col_bytes(struct db_stmt *s, int i);
int64_t db_col_int64(struct db_stmt *s, int i);
double db_col_double(struct db_stmt *s, int i);
/* A BLOB / bytea column: its bytes (*n of them; NULL and 0 for SQL NULL),
 * borrowed like text (on PostgreSQL decoded from its hex text). */
const void *db_col_blob(struct db_stmt *s, int i, size_t *n);
/* As jv: a string / a number / parsed JSON, null for SQL NULL (and for
 * text that is not JSON). */
jv db_col_str(struct db_stmt *s, int i);
jv db_col_num(struct db_stmt *s, int i);
jv db_col_json(struct db_stmt *s, int i);

/* Ready for new bindings and steps (the bindings are cleared). */
void db_reset(struct db_stmt *s);
void db_finalize(struct db_stmt *s);   /* NULL-safe */

/* Step s once expecting no row, then finalize it in every case; the
 * failure is named by fmt... (store_fail()). */
__attribute__((format(printf, 3, 4)))
int db_step_done(struct store *st, struct db_stmt *s, const char *fmt, ...);

#endif
