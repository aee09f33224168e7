/* store.c - the SQLite database of Forge; see store.h for the contract. */
#include "store/store.h"
#include "store/db.h"
#include "store/store_int.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/forgedir.h"
#include "core/json.h"
#include "core/jsonscan.h"
#include "core/secret.h"
#include "core/resource.h"
#include "core/ids.h"
#include "core/owner.h"
#include "os/proc.h"

#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* The statements of the SQLite event path, kept prepared (store_int.h). */
static const char *const stmt_sql[S_COUNT] = {
	/* The view events reads the other columns from the record (009-events-lean). */
	[S_EVENT_PUT] =
		"INSERT INTO event_log (id, trace_id, ts, type, record) VALUES (?1, ?2, ?3, ?4, ?5)"
		" ON CONFLICT (id) DO NOTHING",
	/* S_EVENT_PUT + k: 2^k rows of S_EVENT_PUT's five columns, built by
	 * stmt_get(). */
	[S_OVERWRITE_OFF] = "PRAGMA secure_delete = 0",
	[S_OVERWRITE_ON] = "PRAGMA secure_delete = 1",
};

/*
 * Events put inside a transaction wait in a queue and are inserted
 * QUEUE_MAX at a time by one statement: within one statement SQLite keeps
 * its cursors on the table and the indexes where the last row went, and a
 * row that goes after it (ids and timestamps increase along a stream) is
 * placed without a search from the root of each B-tree: about half the
 * CPU time of an insert.  The queue is flushed before any other statement
 * runs on the connection, and at commit.  (struct event_queue and struct
 * store: store_int.h.)
 */

/* The statements of the run store (runs, checkpoints, traces), written
 * once for both backends (db.h). */
static const char sql_traces[] =
	"WITH ev AS (SELECT trace_id, count(*) AS n, min(ts) AS first_ts,"
	"            max(ts) AS last_ts FROM event_log GROUP BY trace_id),"
	" ids AS (SELECT trace_id FROM ev UNION SELECT id FROM runs)"
	" SELECT ids.trace_id, coalesce(ev.n, 0),"
	"  coalesce(ev.first_ts, r.started_at) AS first_ts,"
	"  coalesce(ev.last_ts, r.updated_at) AS last_ts, r.task, r.status"
	" FROM ids LEFT JOIN ev ON ev.trace_id = ids.trace_id"
	" LEFT JOIN runs r ON r.id = ids.trace_id"
	" ORDER BY last_ts DESC, ids.trace_id DESC LIMIT ?1";
static const char sql_run_create[] =
	"INSERT INTO runs (id, task, repo, status, config, started_at, updated_at)"
	" VALUES (?1, ?2, ?3, 'pending', ?4, ?5, ?5)";
/* A cancelled run stays cancelled: a live run's own updates lose. */
static const char sql_run_update[] =
	"UPDATE runs SET status = CASE WHEN status = 'cancelled' THEN status ELSE coalesce(CAST(?2 AS TEXT), status) END,"
	" current_phase = coalesce(CAST(?3 AS TEXT), current_phase),"
	" error = CASE WHEN status = 'cancelled' THEN error ELSE coalesce(CAST(?4 AS TEXT), error) END, updated_at = ?5,"
	" completed_at = CASE WHEN status = 'cancelled' THEN completed_at"
	"  WHEN coalesce(CAST(?2 AS TEXT), status) IN ('completed', 'failed', 'cancelled')"
	"  THEN coalesce(completed_at, ?5) ELSE NULL END"
	" WHERE id = ?1";
static const char sql_run_set_cost[] =
	"UPDATE runs SET total_tokens = ?2, total_cost_usd = ?3, updated_at = ?4 WHERE id = ?1";
#define RUN_COLUMNS_(config, spent) \
	"SELECT id, task, repo, status, current_phase, " config ", started_at," \
	" updated_at, completed_at, " spent ", error FROM runs"
#define RUN_SPENT_LITE_ STORE_RUN_USD_SQL_LITE ", " STORE_RUN_TOKENS_SQL_LITE
#define RUN_SPENT_PG_ STORE_RUN_USD_SQL_PG ", " STORE_RUN_TOKENS_SQL_PG
static const char *const sql_run_get[] = {
	[DB_SQLITE] = RUN_COLUMNS_("config", RUN_SPENT_LITE_) " WHERE id = ?1",
	[DB_POSTGRES] = RUN_COLUMNS_("config", RUN_SPENT_PG_) " WHERE id = ?1",
};
static const char *const sql_run_get_brief[] = {
	[DB_SQLITE] = RUN_COLUMNS_("NULL", RUN_SPENT_LITE_) " WHERE id = ?1",
	[DB_POSTGRES] = RUN_COLUMNS_("NULL", RUN_SPENT_PG_) " WHERE id = ?1",
};
static const char *const sql_runs_list[] = {
	[DB_SQLITE] = RUN_COLUMNS_("NULL", RUN_SPENT_LITE_) " ORDER BY started_at DESC, id DESC LIMIT ?1",
	[DB_POSTGRES] = RUN_COLUMNS_("NULL", RUN_SPENT_PG_) " ORDER BY started_at DESC, id DESC LIMIT ?1",
};
static const char sql_ckpt_save[] =
	"INSERT INTO checkpoints (id, trace_id, phase, status, ts, state)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
/* A trace's checkpoints and events in the order they were written (seq,
 * 017-history-order), never by ts: a clock stepped back, or another
 * machine's behind, made an older one the newest. */
static const char sql_ckpt_latest[] =
	"SELECT state FROM checkpoints WHERE trace_id = ?1 ORDER BY seq DESC LIMIT 1";
static const char sql_ckpt_load[] =
	"SELECT id, trace_id, phase, status, ts, state FROM checkpoints WHERE id = ?1";
static const char sql_ckpt_list[] =
	"SELECT id, trace_id, phase, status, ts FROM checkpoints WHERE trace_id = ?1 ORDER BY seq";



/* ---- errors -------------------------------------------------------- */

int store_fail(struct store *st, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = store_failv(st, fmt, ap);
	va_end(ap);
	return rc;
}

/* ---- SQLite's temporary files ------------------------------------------ */

/*
 * The longest directory SQLite can make its temporary files in: its file
 * names are at most 512 bytes (the unix VFS's mxPathname), and a temporary
 * file is DIR/etilqs_ and 16 hex digits.  In a longer one every temporary
 * file fails with SQLITE_ERROR, "SQL logic error", which names nothing.
 */
#define SQLITE_TEMP_DIR_MAX 488

/* The directory SQLite makes its temporary files in, picked as its unix
 * VFS picks it: $SQLITE_TMPDIR, $TMPDIR, /var/tmp, /usr/tmp, /tmp, ".",
 * the first that is a directory this process may write in.  *var: the
 * variable that named it, or NULL. */
static const char *sqlite_temp_dir(const char **var)
{
	static const char *const vars[] = { "SQLITE_TMPDIR", "TMPDIR" };
	static const char *const fixed[] = { "/var/tmp", "/usr/tmp", "/tmp", "." };
	struct stat sb;

	*var = NULL;
	for (size_t i = 0; i < sizeof vars / sizeof *vars + sizeof fixed / sizeof *fixed; i++) {
		bool named = i < sizeof vars / sizeof *vars;
		const char *dir = named ? getenv(vars[i]) : fixed[i - sizeof vars / sizeof *vars];

		if (dir && stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) && access(dir, W_OK | X_OK) == 0) {
			*var = named ? vars[i] : NULL;
			return dir;
		}
	}
	return NULL;
}

/* Whether the file system holding path has no room left. */
static bool fs_full(const char *path)
{
	struct statvfs sv;

	return statvfs(path, &sv) == 0 && sv.f_bavail == 0;
}

/*
 * Append to b why SQLite's failure (code) is its temporary directory's
 * doing, if it is: a directory too long for SQLite's temporary file names
 * (any failure to make a file), or, for SQLITE_FULL, one whose file system
 * is full while the database's is not -- "database or disk is full" blamed
 * the database.  false, b unchanged, when neither.
 */
static bool temp_dir_trouble(struct buf *b, const char *db_path, int code)
{
	const char *var, *dir = sqlite_temp_dir(&var);
	char set[64];

	code &= 0xff;
	if (!dir || (code != SQLITE_ERROR && code != SQLITE_IOERR && code != SQLITE_CANTOPEN &&
		     code != SQLITE_FULL))
		return false;
	snprintf(set, sizeof set, "set %s to", var ? var : "TMPDIR");
	if (strlen(dir) > SQLITE_TEMP_DIR_MAX) {
		buf_addf(b, "SQLite's temporary directory '%s'%s%s%s is %zu characters long, too long for "
			 "the names of its temporary files (at most %d): %s a shorter path", dir,
			 var ? " (" : "", var ? var : "", var ? ")" : "", strlen(dir), SQLITE_TEMP_DIR_MAX, set);
		return true;
	}
	if (code != SQLITE_FULL || !fs_full(dir))
		return false;
	char *db_dir = xstrdup(db_path), *slash = strrchr(db_dir, '/');

	if (slash)
		slash[slash == db_dir] = '\0';
	bool db_full = fs_full(slash ? db_dir : ".");

	free(db_dir);
	if (db_full)
		return false;
	buf_addf(b, "the disk of SQLite's temporary directory '%s'%s%s%s is full, not the database's: "
		 "free some space there, or %s a directory with room", dir,
		 var ? " (" : "", var ? var : "", var ? ")" : "", set);
	return true;
}

/* SQLite's I/O error with what the system said: "disk I/O error" alone
 * does not tell a full quota from a file-size limit from a failing disk.
 * (SQLite reports ENOSPC as SQLITE_FULL, but EFBIG and EDQUOT as
 * SQLITE_IOERR_WRITE.) */
static void io_error_why(struct buf *b, struct store *st, int code)
{
	int e = sqlite3_system_errno(st->db);
	struct rlimit fsize;

	/* (SQLite reads errno when it reports the error, after other calls,
	 * often without the write's: a finite file-size limit is named for any
	 * failed write) */
	if (e == EFBIG || (code == SQLITE_IOERR_WRITE && getrlimit(RLIMIT_FSIZE, &fsize) == 0 &&
			   fsize.rlim_cur != RLIM_INFINITY))
		buf_addf(b, "the database file cannot grow past this process's file-size limit "
			 "(ulimit -f, RLIMIT_FSIZE): raise the limit and try again (sqlite code %d)", code);
	else if (e == EDQUOT)
		buf_addf(b, "the disk quota of this user is used up: free some space or have it "
			 "raised, and try again (sqlite code %d)", code);
	else if (e > 0)
		buf_addf(b, "%s: %s (sqlite code %d)", sqlite3_errmsg(st->db), strerror(e), code);
	else
		buf_addf(b, "%s (sqlite code %d)", sqlite3_errmsg(st->db), code);
}

/* Appends to b, after "; ", which file or directory of the database at
 * path this user may not write (the database, or its -wal or -shm beside
 * it, which SQLite makes and writes too: a directory made read-only, a
 * read-only mount), and where else to keep it; false, b unchanged, when
 * none stands out. */
static bool explain_unwritable(struct buf *b, const char *path)
{
	static const char *const sides[] = { "", "-wal", "-shm" };
	struct buf p = BUF_INIT;
	size_t at = b->len;
	bool found = false;

	buf_adds(b, "; ");
	for (size_t i = 0; i < sizeof sides / sizeof sides[0] && !found; i++) {
		buf_reset(&p);
		buf_addf(&p, "%s%s", path, sides[i]);
		found = owner_explain(b, p.buf, true);
	}
	buf_release(&p);
	if (found)
		buf_adds(b, "; " STORE_ELSEWHERE_HINT);
	else
		buf_truncate(b, at);
	return found;
}

/* Why SQLite's last call failed, in words that say what to do, and its
 * extended code; err is sqlite3_exec's message (NULL: the connection's). */
static void sqlite_why(struct buf *b, struct store *st, const char *err)
{
	int code = sqlite3_extended_errcode(st->db);

	/* (hunt65 #6: SQLite's words alone said neither what nor what to do) */
	if ((code & 0xff) == SQLITE_BUSY)
		buf_addf(b, "another process holds the database's write lock (another forge command, or a "
			 "sqlite3 shell in a transaction) and did not let it go within %d s: wait for it to "
			 "finish and try again (fuser '%s' names the processes that have it open) (%s, sqlite "
			 "code %d)", STORE_BUSY_TIMEOUT_MS / 1000, st->path, sqlite3_errstr(code), code);
	else if (((code & 0xff) == SQLITE_READONLY || (code & 0xff) == SQLITE_CANTOPEN) &&
		 strcmp(st->path, ":memory:") != 0) {
		buf_addf(b, "%s (sqlite code %d)", err ? err : sqlite3_errmsg(st->db), code);
		explain_unwritable(b, st->path);
	} else if (temp_dir_trouble(b, st->path, code))
		buf_addf(b, " (sqlite code %d)", code);
	else if ((code & 0xff) == SQLITE_FULL)
		buf_addf(b, "the disk is full (or the database reached its size limit): free some "
			 "space and try again (sqlite code %d)", code);
	else if ((code & 0xff) == SQLITE_IOERR)
		io_error_why(b, st, code);
	else
		buf_addf(b, "%s (sqlite code %d)", err ? err : sqlite3_errmsg(st->db), code);
}

int store_failv(struct store *st, const char *fmt, va_list ap)
{
	char what[512];

	vsnprintf(what, sizeof what, fmt, ap);
	if (st->backend == DB_POSTGRES)
		return forge_error("database '%s': %s: %s%s%s%s", st->path, what,
				   st->pg_msg ? st->pg_msg : "unknown PostgreSQL error",
				   st->pg_state[0] ? " (SQLSTATE " : "", st->pg_state, st->pg_state[0] ? ")" : "");

	struct buf b = BUF_INIT;

	buf_addf(&b, "database '%s': %s: ", st->path, what);
	sqlite_why(&b, st, NULL);
	forge_error("%s", b.buf);
	buf_release(&b);
	return -1;
}

/* The last error, followed by the directory or file on the way to the
 * database at path that this user may not use, if any (core/owner.h: a
 * .forge/ that `sudo forge` left root's, as a rule), and, to write, where
 * else the database can be (STORE_ELSEWHERE_HINT); rc (-1). */
static int explain_denied(int rc, const char *path, bool write)
{
	struct buf b = BUF_INIT;

	buf_addf(&b, "%s; ", forge_last_error());
	if (owner_explain(&b, path, write)) {
		if (write)
			buf_adds(&b, "; " STORE_ELSEWHERE_HINT);
		forge_error("%s", b.buf);
	}
	buf_release(&b);
	return rc;
}

/* ---- statements ---------------------------------------------------- */

/* "INSERT OR IGNORE ... VALUES (?,?,?,?,?), ..." of `rows` rows; malloc'd. */
static char *event_put_many_sql(int rows)
{
	struct buf b = BUF_INIT;

	/* OR IGNORE, not ON CONFLICT (id) DO NOTHING: then no constraint can
	 * abort the statement halfway (the columns are never NULL), and SQLite
	 * writes no statement journal to undo part of its 64 rows. */
	buf_adds(&b, "INSERT OR IGNORE INTO event_log (id, trace_id, ts, type, record) VALUES ");
	for (int i = 0; i < rows; i++)
		buf_adds(&b, i ? ",(?,?,?,?,?)" : "(?,?,?,?,?)");
	return buf_detach(&b, NULL);
}

static int stmt_get(sqlite3_stmt **out, struct store *st, enum stmt_id id)
{
	assert(id < S_COUNT);
	if (id > S_OVERWRITE_ON && store_queue_flush(st) < 0)
		return -1;
	if (!st->stmt[id]) {
		char *many = id > S_EVENT_PUT && id <= S_EVENT_PUT_MANY
			     ? event_put_many_sql(1 << (id - S_EVENT_PUT)) : NULL;
		int rc = sqlite3_prepare_v3(st->db, many ? many : stmt_sql[id], -1,
					    SQLITE_PREPARE_PERSISTENT, &st->stmt[id], NULL);

		free(many);
		if (rc != SQLITE_OK)
			return store_fail(st, "cannot prepare statement %d", (int)id);
	}
	*out = st->stmt[id];
	return 0;
}

/* Make a kept statement ready for its next use and drop borrowed bindings. */
static void stmt_done(sqlite3_stmt *s)
{
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
}

void store_bind_text(sqlite3_stmt *s, int i, const char *text)
{
	if (text)
		sqlite3_bind_text(s, i, text, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(s, i);
}

void store_bind_jv_text(sqlite3_stmt *s, int i, jv v)
{
	if (jv_get_kind(v) == JV_KIND_STRING)
		sqlite3_bind_text64(s, i, jv_string_value(v),
				    (sqlite3_uint64)jv_string_length_bytes(jv_copy(v)),
				    SQLITE_STATIC, SQLITE_UTF8);
	else
		sqlite3_bind_null(s, i);
}

jv store_col_str(sqlite3_stmt *s, int i)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	if (!t)
		return jv_null();
	return jv_string_sized((const char *)t, sqlite3_column_bytes(s, i));
}

jv store_col_json(sqlite3_stmt *s, int i)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	if (!t)
		return jv_null();
	jv v = json_parse((const char *)t, (size_t)sqlite3_column_bytes(s, i));

	return jv_is_valid(v) ? v : (jv_free(v), jv_null());
}

jv store_col_num(sqlite3_stmt *s, int i)
{
	if (sqlite3_column_type(s, i) == SQLITE_NULL)
		return jv_null();
	return jv_number(sqlite3_column_double(s, i));
}

/* What a module that keeps SQLite statements says on PostgreSQL. */
static int not_on_postgres(struct store *st)
{
	return forge_error("database '%s': this is not supported on PostgreSQL yet (there: runs, "
			   "events, checkpoints, gates, leases, plans, the model-call log, findings and "
			   "compile documents); use a SQLite --db FILE for it", st->path);
}

int store_require_sqlite(struct store *st, const char *what)
{
	if (st->backend == DB_SQLITE)
		return 0;
	return forge_error("%s is not supported on PostgreSQL yet (database '%s'; there: runs, "
			   "events, checkpoints, gates, leases, plans, the model-call log, findings and "
			   "compile documents); use a SQLite --db FILE for it", what, st->path);
}

int store_prepare(sqlite3_stmt **out, struct store *st, const char *sql)
{
	*out = NULL;
	if (st->backend == DB_POSTGRES)
		return not_on_postgres(st);
	if (store_queue_flush(st) < 0)
		return -1;
	if (sqlite3_prepare_v2(st->db, sql, -1, out, NULL) != SQLITE_OK) {
		*out = NULL;
		return store_fail(st, "cannot prepare '%.60s'", sql);
	}
	return 0;
}

int store_step_done(struct store *st, sqlite3_stmt *s, const char *fmt, ...)
{
	int rc = 0;

	if (sqlite3_step(s) != SQLITE_DONE) {
		va_list ap;

		va_start(ap, fmt);
		rc = store_failv(st, fmt, ap);
		va_end(ap);
	}
	sqlite3_finalize(s);
	return rc;
}

/* ---- opening and migrating ----------------------------------------- */

/*
 * A database in a repository's .forge/ must not show up as untracked in the
 * user's checkout: .forge/.gitignore ignores it (forge_dir_ignore()).
 */
static void ignore_forge_dir(const char *dir)
{
	const char *base = strrchr(dir, '/');

	if (strcmp(base ? base + 1 : dir, ".forge") != 0)
		return;
	/* best effort: the database works without it */
	(void)forge_dir_ignore(dir);
}

/* rc (-1), the last error followed by STORE_ELSEWHERE_HINT when err says
 * the place cannot be written (permission, a read-only file system). */
static int elsewhere(int rc, int err)
{
	if (err == EACCES || err == EPERM || err == EROFS) {
		struct buf b = BUF_INIT;

		buf_addf(&b, "%s; " STORE_ELSEWHERE_HINT, forge_last_error());
		forge_error("%s", b.buf);
		buf_release(&b);
	}
	return rc;
}

/* mkdir -p of the directory holding path; new directories are 0700
 * because the database holds LLM transcripts. */
static int make_parent_dirs(const char *path)
{
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	int rc = 0;

	if (!slash || slash == dir)
		goto out;
	*slash = '\0';
	for (char *p = dir + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;

		*p = '\0';
		if (mkdir(dir, 0700) == 0) {
			owner_follow(-1, dir);
		} else if (errno != EEXIST) {
			int err = errno;

			rc = elsewhere(owner_error(err, dir, true, "cannot create directory '%s' for database '%s'",
						   dir, path), err);
			goto out;
		}
		*p = saved;
		if (saved == '\0')
			break;
	}
	ignore_forge_dir(dir);
out:
	free(dir);
	return rc;
}

/*
 * A path that names something other than a file -- a directory (a --db
 * given the directory it means the database to be in), a device (/dev/null
 * for "no database") -- refused with what it is and what to give instead
 * (before: "disk I/O error (sqlite code 10)", or, for /dev/null, "'COMMIT'
 * failed: disk I/O error ... its schema is older than this forge's").  A
 * path that does not exist, or cannot be looked at, is left to the open.
 */
static int not_a_file(const char *path)
{
	struct stat sb;

	if (stat(path, &sb) != 0 || S_ISREG(sb.st_mode))
		return 0;
	if (S_ISDIR(sb.st_mode))
		return forge_error("cannot open database '%s': it is a directory; give --db (or FORGE_DB) the path "
				   "of a file, such as '%s%sforge.db'", path, path,
				   path[strlen(path) - 1] == '/' ? "" : "/");
	return forge_error("cannot open database '%s': it is not a regular file (a %s); give --db (or FORGE_DB) "
			   "the path of a file", path,
			   S_ISCHR(sb.st_mode) ? "character device" : S_ISBLK(sb.st_mode) ? "block device" :
			   S_ISFIFO(sb.st_mode) ? "named pipe" : S_ISSOCK(sb.st_mode) ? "socket" : "special file");
}

/* Create the file 0600 before sqlite does (it would use 0644 & ~umask);
 * its -wal and -shm files copy the mode, and, when SQLite runs as root,
 * the owner: under sudo, the user's (core/owner.h). */
static int create_private(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0) {
		int err = errno;

		if (err == EEXIST)
			return 0;
		return elsewhere(owner_error(err, path, true, "cannot create database '%s'", path), err);
	}
	owner_follow(fd, path);
	close(fd);
	return 0;
}

/* Migrations: schemas/sql/NNN-name.sql (SQLite), schemas/pg/NNN-name.sql
 * (PostgreSQL), embedded as "sql/..." and "pg/...". */
static const char *migration_dir(enum db_backend b)
{
	return b == DB_POSTGRES ? "pg/" : "sql/";
}

static bool is_migration(const char *name, const char *dir)
{
	size_t n = strlen(name), d = strlen(dir);

	return n > d + 8 && strncmp(name, dir, d) == 0 &&
	       name[d] >= '0' && name[d] <= '9' && name[d + 1] >= '0' && name[d + 1] <= '9' &&
	       name[d + 2] >= '0' && name[d + 2] <= '9' && name[d + 3] == '-' &&
	       strcmp(name + n - 4, ".sql") == 0;
}

/* The n-th (1-based) migration of dir in name order, or NULL. */
static const struct resource *migration_nth(const char *dir, int n)
{
	for (const struct resource *r = resource_all(); r->name; r++)
		if (is_migration(r->name, dir) && --n == 0)
			return r;
	return NULL;
}

static int migrations_known(enum db_backend b)
{
	const char *dir = migration_dir(b);
	int n = 0;

	for (const struct resource *r = resource_all(); r->name; r++)
		n += is_migration(r->name, dir);
	return n;
}

int store_schema_version_known(void)
{
	return migrations_known(DB_SQLITE);
}

/* Migration v+1 of dir, checked to be numbered so. */
static const struct resource *migration_next(struct store *st, const char *dir, int v)
{
	const struct resource *m = migration_nth(dir, v + 1);
	size_t d = strlen(dir);

	assert(m && is_migration(m->name, dir));
	int num = (m->name[d] - '0') * 100 + (m->name[d + 1] - '0') * 10 + (m->name[d + 2] - '0');
	if (num != v + 1) {
		forge_error("database '%s': migration '%s' is out of sequence: expected number %03d",
			    st->path, m->name, v + 1);
		return NULL;
	}
	return m;
}

static int user_version(int *out, struct store *st)
{
	sqlite3_stmt *s = NULL;
	int rc = -1;

	if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &s, NULL) != SQLITE_OK) {
		store_fail(st, "cannot read schema version");
		goto out;
	}
	if (sqlite3_step(s) != SQLITE_ROW) {
		store_fail(st, "cannot read schema version");
		goto out;
	}
	*out = sqlite3_column_int(s, 0);
	rc = 0;
out:
	sqlite3_finalize(s);
	return rc;
}

static int refuse_newer(struct store *st, int version, int known)
{
	return forge_error("database '%s' was written by a newer forge (schema %d, this program "
			   "knows %d); upgrade forge or use another --db", st->path, version, known);
}

/* Apply migration number v+1 and record it; inside the caller's transaction. */
static int migrate_one(struct store *st, int v)
{
	const struct resource *m = migration_next(st, "sql/", v);
	char pragma[64];
	char *err = NULL;

	if (!m)
		return -1;
	if (sqlite3_exec(st->db, m->data, NULL, NULL, &err) != SQLITE_OK) {
		struct buf why = BUF_INIT;

		sqlite_why(&why, st, err);
		forge_error("database '%s': migration '%s' failed: %s", st->path, m->name, why.buf);
		buf_release(&why);
		sqlite3_free(err);
		return -1;
	}
	snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", v + 1);
	if (store_exec(st, pragma) < 0)
		return -1;
	st->applied++;
	return 0;
}

/*
 * Bring the schema up to date.  BEGIN IMMEDIATE serialises processes that
 * open a fresh database at the same time: the second one waits, then sees
 * the version the first one wrote and has nothing left to do.
 */
static int migrate(struct store *st)
{
	int known = store_schema_version_known();
	int v, rc = -1;

	if (user_version(&v, st) < 0)
		return -1;
	if (v > known)
		return refuse_newer(st, v, known);
	if (v == known)
		return 0;
	/*
	 * A new database's statement journals in memory: they spill past
	 * 64 KiB into temporary files (008's DROP of an FTS table does), and
	 * a TMPDIR SQLite cannot use -- too long a path, a full disk -- kept
	 * any database from being made.  Its tables are empty: a few hundred
	 * KiB.  An existing database keeps SQLite's default, files, as its
	 * journal grows with the rows a migration rewrites; when that fails,
	 * the message names the temporary directory (temp_dir_trouble).  (Set
	 * outside the transaction: SQLite refuses it inside one once its
	 * temporary storage is open.)
	 */
	bool fresh = v == 0;

	if (fresh && store_exec(st, "PRAGMA temp_store = MEMORY") < 0)
		return -1;
	if (store_begin(st) < 0 || user_version(&v, st) < 0)
		goto fail;
	if (v > known) {
		refuse_newer(st, v, known);
		goto fail;
	}
	for (; v < known; v++)
		if (migrate_one(st, v) < 0)
			goto fail;
	rc = store_commit(st);
	goto out;
fail:
	store_rollback(st);
out:
	if (fresh && rc == 0)
		rc = store_exec(st, "PRAGMA temp_store = DEFAULT");
	else if (fresh)         /* (keeping the migration's message) */
		(void)sqlite3_exec(st->db, "PRAGMA temp_store = DEFAULT", NULL, NULL, NULL);
	return rc;
}

/* ---- PostgreSQL: schema and opening ------------------------------------ */

/* The advisory lock that serialises migrations of one PostgreSQL database
 * (from any number of machines): "forge" in ASCII. */
#define PG_MIGRATE_LOCK "435459175015"

/* One integer out of a query without parameters; -1 on failure. */
static int pg_int(long long *out, struct store *st, const char *sql)
{
	struct db_stmt *s;
	int rc = -1;

	if (db_prepare(&s, st, sql) < 0)
		return -1;
	if (db_step(s) == DB_ROW) {
		*out = db_col_int64(s, 0);
		rc = 0;
	} else {
		store_fail(st, "cannot read the schema version");
	}
	db_finalize(s);
	return rc;
}

/* The applied migrations (forge_schema's newest), 0 for a new database. */
static int pg_version(int *out, struct store *st)
{
	long long exists = 0, v = 0;

	if (pg_int(&exists, st, "SELECT CAST(to_regclass('forge_schema') IS NOT NULL AS integer)") < 0 ||
	    (exists && pg_int(&v, st, "SELECT coalesce(max(version), 0) FROM forge_schema") < 0))
		return -1;
	*out = (int)v;
	return 0;
}

/* Apply migration v+1 in a transaction of its own and record it. */
static int pg_migrate_one(struct store *st, int v)
{
	const struct resource *m = migration_next(st, "pg/", v);
	struct db_stmt *s = NULL;
	char now[TIMESTAMP_LEN + 1];

	if (!m || store_begin(st) < 0)
		return -1;
	if (db_pg_exec(st, m->data) < 0) {
		forge_error("database '%s': migration '%s' failed: %s", st->path, m->name, st->pg_msg);
		goto fail;
	}
	timestamp_now(now);
	if (db_prepare(&s, st, "INSERT INTO forge_schema (version, name, applied_at) VALUES (?1, ?2, ?3)") < 0)
		goto fail;
	db_bind_int64(s, 1, v + 1);
	db_bind_text(s, 2, m->name);
	db_bind_text(s, 3, now);
	if (db_step_done(st, s, "cannot record migration '%s'", m->name) < 0 || store_commit(st) < 0)
		goto fail;
	st->applied++;
	return 0;
fail:
	store_rollback(st);
	return -1;
}

/*
 * Bring a PostgreSQL schema up to date.  The session's advisory lock
 * serialises forges on any number of machines migrating one database: the
 * second one waits, then reads the version the first one wrote.
 */
static int pg_migrate(struct store *st)
{
	int known = migrations_known(DB_POSTGRES), v, rc = -1;

	if (pg_version(&v, st) < 0)
		return -1;
	if (v > known)
		return refuse_newer(st, v, known);
	if (v == known)
		return 0;
	if (db_pg_exec(st, "SELECT pg_advisory_lock(" PG_MIGRATE_LOCK ")") < 0)
		return -1;
	if (db_pg_exec(st, "CREATE TABLE IF NOT EXISTS forge_schema (version integer PRIMARY KEY,"
		       " name text NOT NULL, applied_at text NOT NULL)") < 0 || pg_version(&v, st) < 0)
		goto out;
	if (v > known) {
		refuse_newer(st, v, known);
		goto out;
	}
	for (; v < known; v++)
		if (pg_migrate_one(st, v) < 0)
			goto out;
	rc = 0;
out:
	if (db_pg_exec(st, "SELECT pg_advisory_unlock(" PG_MIGRATE_LOCK ")") < 0)
		rc = -1;
	return rc;
}

/* Connect to a PostgreSQL database; migrate unless only looking. */
static int pg_open(struct store **out, const char *conninfo, bool migrate_it)
{
	struct store *st = xcalloc(1, sizeof *st);
	char *text = db_pg_trim(conninfo);

	*out = NULL;
	st->backend = DB_POSTGRES;
	st->path = db_display_path(text);
	int rc = db_pg_connect(st, text);

	free(text);
	if (rc < 0 || (migrate_it && pg_migrate(st) < 0)) {
		store_free(st);
		return -1;
	}
	/* A role that may not write (a dashboard's, an auditor's): a store
	 * that says so, as SQLite's of a file this user may not write, so that
	 * a reader does not try to (a gate's expiry, a memory access) */
	struct db_stmt *s = NULL;

	if (migrate_it && db_prepare(&s, st, "SELECT CAST(has_table_privilege('event_log', 'INSERT') AND "
				     "has_table_privilege('memories', 'UPDATE') AS INTEGER)") == 0 &&
	    db_step(s) == DB_ROW && !db_col_null(s, 0) && db_col_int64(s, 0) == 0)
		st->readonly = true;
	db_finalize(s);
	*out = st;
	return 0;
}

/* Sleep a few milliseconds, varied so that waiting processes spread out. */
static void backoff(int attempt)
{
	unsigned char r = 0;
	struct timespec ts;

	(void)!getrandom(&r, 1, GRND_NONBLOCK);
	ts.tv_sec = 0;
	ts.tv_nsec = (long)(1 + (attempt < 5 ? attempt : 5) * 2 + r % 8) * 1000000L;
	nanosleep(&ts, NULL);
}

/*
 * Switch to WAL.  The mode is stored in the file, so usually it is already
 * set.  On a fresh file several processes may race to switch it, and the
 * loser gets SQLITE_BUSY at once (the change needs an exclusive lock and
 * does not wait on the busy handler), so retry for as long as the busy
 * timeout.  This is also the first read of the file: where a file that is
 * not a database shows itself.
 */
static int set_journal_mode(struct store *st)
{
	int64_t deadline = now_ms() + STORE_BUSY_TIMEOUT_MS;
	int sqlrc;

	for (int attempt = 0; ; attempt++) {
		sqlite3_stmt *s = NULL;

		sqlrc = sqlite3_prepare_v2(st->db, "PRAGMA journal_mode = WAL", -1, &s, NULL);
		if (sqlrc == SQLITE_OK)
			sqlrc = sqlite3_step(s);
		sqlite3_finalize(s);
		if ((sqlrc & 0xff) != SQLITE_BUSY || now_ms() >= deadline)
			break;
		backoff(attempt);
	}
	if ((sqlrc & 0xff) == SQLITE_NOTADB)
		return forge_error("cannot open database '%s': file is not a database (not SQLite, "
				   "or damaged); move it away or use another --db", st->path);
	if (sqlrc != SQLITE_ROW)
		return store_fail(st, "cannot set WAL journal mode");
	return 0;
}

/*
 * Before SQLite's first use in the process: no global count of the memory
 * it allocates (that count takes a mutex on every malloc and free, ~4% of
 * an insert; nothing reads it).  No bulk page cache either: by default each
 * connection's first page takes room for 20 (170 KiB with 8 KiB pages) and
 * threads a free list through all of them, a page fault each (~20 of a
 * forge memory search's ~280); pages are then allocated one at a time.
 * Refused, harmlessly, once SQLite runs.
 */
/*
 * The write-ahead log kept beside the database (keep_wal_files) is opened
 * by every process, and SQLite's unix VFS syncs the log's directory at the
 * first sync of any log it opened with SQLITE_OPEN_CREATE -- that is, of
 * every log, made now or years ago: one directory fsync per process that
 * writes (each phase, the supervisor before its lease and run.resumed;
 * 0.3-9 ms each on ext4 beside a busy directory).  The directory sync is
 * what makes a log made now findable after a crash; a log that was there
 * already has its name on disk.  So the default VFS here opens a log that
 * exists without SQLITE_OPEN_CREATE (no directory sync: nothing in the
 * directory changed), and a log it makes with it (SQLite syncs the
 * directory at its first sync, as before) and syncs the directory at once
 * as well, so that a log that exists was synced into its directory by
 * whoever made it, even by a process that never wrote (a reader's first
 * open makes it too).  A log removed between the look and the open is
 * made as before.
 */
static sqlite3_vfs wal_vfs;

static void sync_parent(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? xstrndup(path, slash == path ? 1 : (size_t)(slash - path)) : xstrdup(".");
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	free(dir);
}

static int wal_vfs_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags)
{
	sqlite3_vfs *base = vfs->pAppData;
	bool wal = (flags & SQLITE_OPEN_WAL) && (flags & SQLITE_OPEN_CREATE) && name;
	int rc;

	if (wal && access(name, F_OK) == 0 &&
	    base->xOpen(base, name, file, flags & ~SQLITE_OPEN_CREATE, out_flags) == SQLITE_OK)
		return SQLITE_OK;
	rc = base->xOpen(base, name, file, flags, out_flags);
	if (rc == SQLITE_OK && wal)
		sync_parent(name);
	return rc;
}

static void sqlite_once(void)
{
	static bool done;
	sqlite3_vfs *base;

	if (!done) {
		done = true;
		(void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
		(void)sqlite3_config(SQLITE_CONFIG_PAGECACHE, NULL, 0, 0);
		/* (no default VFS: SQLite's own, unchanged) */
		if ((base = sqlite3_vfs_find(NULL)) != NULL) {
			wal_vfs = *base;
			wal_vfs.zName = "forge-unix";
			wal_vfs.pAppData = base;
			wal_vfs.xOpen = wal_vfs_open;
			(void)sqlite3_vfs_register(&wal_vfs, 1);
		}
	}
}

/*
 * Keep the -wal and -shm files when the last connection closes, emptied
 * (SQLite's persistent WAL, with a size limit: the last close checkpoints
 * the log into the database and truncates it to 0 bytes).  Every Forge
 * command is a process of its own that opens the database: without this,
 * each one made both files and unlinked them again at exit, and shared
 * memory grew a page at a time.  On a disk file system that was a third
 * of a memory search's system time (ext4: ~0.3 ms a file made and
 * removed).  An empty log beside the database holds nothing to replay, so
 * copying or removing the database alone stays safe after a clean close.
 */
static void keep_wal_files(struct store *st)
{
	int persist = 1;

	(void)sqlite3_file_control(st->db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
	/* 64 MiB: above the autocheckpoint (32 MiB), so that a log a run
	 * fills is reused in place, not cut back after each checkpoint */
	(void)store_exec(st, "PRAGMA journal_size_limit = 67108864");
}

static int configure(struct store *st)
{
	sqlite3_extended_result_codes(st->db, 1);
	sqlite3_busy_timeout(st->db, STORE_BUSY_TIMEOUT_MS);
	/* For a new database, 8 KiB pages.  A commit writes each page it
	 * changed whole into the WAL, checksummed: a run's commits are small
	 * (the supervisor's ~75, each a few events into 4 B-trees), and with
	 * 16 KiB pages that checksum was 17% of the supervisor's instructions.
	 * Callgrind, 20,000 events (store-writer): in transactions of 5, 8 KiB
	 * pages take 17% fewer instructions than 16 KiB (4 KiB: 24%); in
	 * transactions of 1000 (forge-events store reading a file), 1% more
	 * (4 KiB: 5%).  A whole run: 111.7M -> 107.4M.  A database that exists
	 * keeps its page size. */
	if (store_exec(st, "PRAGMA page_size = 8192") < 0)
		return -1;
	if (set_journal_mode(st) < 0)
		return -1;
	/* NORMAL is durable across crashes of the process with WAL; only a power
	 * loss can drop the last transactions (checkpoints of a run's state are
	 * synced: store_checkpoint_save).  The WAL is copied into the database
	 * (and synced) every 32 MiB of pages (4096 of 8 KiB, 2048 of 16 KiB),
	 * not every 1000 pages: fewer fsyncs and page copies when events
	 * stream in. */
	char pragma[64];
	long long page = 0;
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(st->db, "PRAGMA page_size", -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		page = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	s = NULL;
	if (sqlite3_prepare_v2(st->db, "PRAGMA secure_delete", -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		st->secure_delete = sqlite3_column_int(s, 0) != 0;
	sqlite3_finalize(s);
	snprintf(pragma, sizeof pragma, "PRAGMA wal_autocheckpoint = %lld", (32LL << 20) / (page > 0 ? page : 4096));
	if (store_exec(st, "PRAGMA synchronous = NORMAL") < 0 || store_exec(st, pragma) < 0 ||
	    store_exec(st, "PRAGMA foreign_keys = ON") < 0)
		return -1;
	keep_wal_files(st);
	return 0;
}

int store_open(struct store **out, const char *path)
{
	struct store *st = xcalloc(1, sizeof *st);
	bool memory = strcmp(path, ":memory:") == 0;
	int rc = -1;

	*out = NULL;
	if (db_is_postgres(path)) {
		free(st);
		return pg_open(out, path, true);
	}
	st->path = xstrdup(path);
	if (!*path) {
		forge_error("database path is empty");
		goto out;
	}
	if (!memory && (not_a_file(path) < 0 || make_parent_dirs(path) < 0 || create_private(path) < 0))
		goto out;
	sqlite_once();
	if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
			    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		if (st->db)
			store_fail(st, "cannot open");  /* (CANTOPEN: sqlite_why says what is in the way) */
		else
			forge_error("cannot open database '%s': out of memory", path);
		goto out;
	}
	if (configure(st) < 0 || migrate(st) < 0)
		goto out;
	/* SQLite opens a file this user may not write for reading only (a
	 * database in another user's directory, its -wal and -shm there): a
	 * store that says so, so that a reader does not try to write */
	if (!memory && sqlite3_db_readonly(st->db, "main") == 1)
		st->readonly = true;
	*out = st;
	st = NULL;
	rc = 0;
out:
	store_free(st);
	return rc;
}

/* "file:PATH?QUERY" with the characters a URI gives a meaning escaped. */
static char *ro_uri(const char *path, const char *query)
{
	struct buf b = BUF_INIT;

	buf_adds(&b, "file:");
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if (*p == '%' || *p == '?' || *p == '#' || *p < 0x21 || *p >= 0x7f)
			buf_addf(&b, "%%%02X", *p);
		else
			buf_addch(&b, (char)*p);
	}
	buf_addf(&b, "?%s", query);
	return buf_detach(&b, NULL);
}

/*
 * Open read-only with `query` ("mode=ro" or "immutable=1") and read the
 * schema version: 1 when it is this program's, 0 when the database needs
 * migrating (or the version could not be read: *sqlrc says why), -1 with
 * a message for a database from a newer Forge.
 */
static int open_ro(struct store *st, const char *query, int *sqlrc)
{
	char *uri = ro_uri(st->path, query);
	int known = store_schema_version_known(), v, rc = 0;

	sqlite3_close_v2(st->db);
	st->db = NULL;
	sqlite_once();
	*sqlrc = sqlite3_open_v2(uri, &st->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
				 NULL);
	free(uri);
	if (*sqlrc != SQLITE_OK)
		return 0;
	sqlite3_extended_result_codes(st->db, 1);
	sqlite3_busy_timeout(st->db, STORE_BUSY_TIMEOUT_MS);
	if (user_version(&v, st) < 0) {
		*sqlrc = sqlite3_extended_errcode(st->db);
		return 0;
	}
	if (v > known)
		return refuse_newer(st, v, known);
	if (v == known && store_exec(st, "PRAGMA foreign_keys = ON") == 0)
		rc = 1;
	return rc;
}

bool store_file_absent(const char *path)
{
	return path && *path && strcmp(path, ":memory:") != 0 && !db_is_postgres(path) &&
	       access(path, F_OK) != 0 && errno == ENOENT;
}

/* The store a read of a database that does not exist reads: an empty one
 * in memory, named as the file, read-only; the file is not made (a read
 * command given a mistyped --db made the file and its directories). */
static int open_absent(struct store **out, const char *path)
{
	struct store *st;

	if (store_open(&st, ":memory:") < 0)
		return -1;
	/* read-only as a read-only file is: writes fail with SQLITE_READONLY */
	if (store_exec(st, "PRAGMA query_only = 1") < 0) {
		store_free(st);
		return -1;
	}
	free(st->path);
	st->path = xstrdup(path);
	st->readonly = true;
	st->absent = true;
	*out = st;
	return 0;
}

bool store_absent(const struct store *st)
{
	return st && st->absent;
}

int store_open_readonly(struct store **out, const char *path)
{
	struct store *st;
	int sqlrc, rc;

	*out = NULL;
	if (store_file_absent(path))
		return open_absent(out, path);
	/* PostgreSQL: opened as any store (the server's grants decide what
	 * this user may do), and read-only to Forge's own writes on the way
	 * (a gate's expiry recorded, a memory access counted), which a
	 * dashboard's or auditor's SELECT-only role may not make: what the
	 * commands that only read skip on a read-only SQLite file. */
	if (db_is_postgres(path)) {
		if (store_open(out, path) < 0)
			return -1;
		(*out)->readonly = true;
		return 0;
	}
	if (strcmp(path, ":memory:") == 0 || !*path || access(path, F_OK) != 0)
		return store_open(out, path);
	if (not_a_file(path) < 0)
		return -1;
	st = xcalloc(1, sizeof *st);
	st->path = xstrdup(path);
	st->readonly = true;
	rc = open_ro(st, "mode=ro", &sqlrc);
	/* A WAL database whose -shm cannot be made (a read-only directory):
	 * nothing can be writing to it there, so read the file as it is. */
	if (rc == 0 && ((sqlrc & 0xff) == SQLITE_CANTOPEN || sqlrc == SQLITE_READONLY_DIRECTORY))
		rc = open_ro(st, "immutable=1", &sqlrc);
	if (rc == 0 && sqlrc == SQLITE_OK) {
		/* An older schema: migrate it when the file can be written. */
		store_free(st);
		if (store_open(out, path) == 0)
			return 0;
		char why[512];
		snprintf(why, sizeof why, "%s", forge_last_error());
		return forge_error("%s (its schema is older than this forge's, and it cannot be "
				   "upgraded where it is)", why);
	}
	if (rc == 0 && (sqlrc & 0xff) == SQLITE_NOTADB)
		forge_error("cannot open database '%s': file is not a database (not SQLite, "
			    "or damaged); move it away or use another --db", path);
	else if (rc == 0)
		explain_denied(forge_error("cannot open database '%s' read-only: %s (sqlite code %d)", path,
					   sqlite3_errstr(sqlrc), sqlrc), path, false);
	if (rc <= 0) {
		store_free(st);
		return -1;
	}
	*out = st;
	return 0;
}

bool store_readonly(const struct store *st)
{
	return st && st->readonly;
}

void store_free(struct store *st)
{
	if (!st)
		return;
	store_ckpt_stop(st);
	for (int i = 0; i < S_COUNT; i++)
		sqlite3_finalize(st->stmt[i]);
	db_cache_free(st);
	/* close_v2: a statement another module prepared on store_db() and did
	 * not finalize keeps the connection alive (and shows up as a leak)
	 * instead of making the close fail. */
	sqlite3_close_v2(st->db);
	if (st->pg)
		PQfinish(st->pg);
	free(st->pg_msg);
	free(st->queue.text);
	free(st->fence_trace);
	free(st->fence_holder);
	free(st->path);
	free(st);
}

sqlite3 *store_db(struct store *st)
{
	if (st->backend == DB_POSTGRES)
		return NULL;
	/* A module's own statement sees the queued events (a failure shows at
	 * the next store call: the commit). */
	if (store_queue_flush(st) < 0)
		st->queue_failed = true;
	return st->db;
}

/* (store_db() gives the handle: queued events are written first.) */
int store_sync_log(struct store *st)
{
	sqlite3 *db = store_db(st);
	sqlite3_file *f = NULL;

	if (!db)
		return 0;       /* PostgreSQL: each commit is durable */
	if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &f) != SQLITE_OK || !f ||
	    !f->pMethods)
		return 0;       /* no log: not in WAL mode, where commits sync themselves */
	if (f->pMethods->xSync(f, SQLITE_SYNC_NORMAL) != SQLITE_OK)
		return forge_error("database '%s': cannot sync the write-ahead log to disk", st->path);
	return 0;
}

bool store_checkpoint_log(struct store *st)
{
	sqlite3 *db = store_db(st);
	int logged = 0, copied = 0;

	return db && sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, &logged, &copied) == SQLITE_OK &&
	       logged >= 0 && copied == logged;
}

const char *store_sqlite_version(void)
{
	return sqlite3_libversion();
}

const char *store_path(struct store *st)
{
	return st->path;
}

int store_schema_version(struct store *st)
{
	int v;

	if (st->backend == DB_POSTGRES)
		return pg_version(&v, st) < 0 ? -1 : v;
	return user_version(&v, st) < 0 ? -1 : v;
}

/* ---- transactions -------------------------------------------------- */

int store_exec(struct store *st, const char *sql)
{
	char *err = NULL;

	if (store_queue_flush(st) < 0)
		return -1;
	if (st->backend == DB_POSTGRES)
		return db_pg_exec(st, sql);
	if (sqlite3_exec(st->db, sql, NULL, NULL, &err) != SQLITE_OK) {
		struct buf why = BUF_INIT;

		sqlite_why(&why, st, err);
		forge_error("database '%s': '%s' failed: %s", st->path, sql, why.buf);
		buf_release(&why);
		sqlite3_free(err);
		return -1;
	}
	return 0;
}

/* Whether a transaction is open (also a failed one on PostgreSQL). */
static bool in_transaction(struct store *st)
{
	if (st->backend == DB_POSTGRES)
		return PQtransactionStatus(st->pg) != PQTRANS_IDLE;
	return !sqlite3_get_autocommit(st->db);
}

/* ---- the lease's fence (store.h) ---------------------------------- */

void store_fence(struct store *st, const char *trace_id, const char *holder)
{
	free(st->fence_trace);
	free(st->fence_holder);
	st->fence_trace = trace_id && holder ? xstrdup(trace_id) : NULL;
	st->fence_holder = trace_id && holder ? xstrdup(holder) : NULL;
}

bool store_lease_fenced(const struct store *st)
{
	return st && st->fenced_out;
}

/*
 * Inside the transaction about to commit: 0 when there is no fence or its
 * holder still holds the lease, -1 (the message said) otherwise.  On
 * PostgreSQL (READ COMMITTED) FOR SHARE keeps the row as it was read until
 * the commit: a takeover's UPDATE of it waits for this transaction, and one
 * committed first shows here.  SQLite: BEGIN IMMEDIATE already keeps every
 * other writer out.
 */
static int fence_check(struct store *st)
{
	struct db_stmt *s;

	if (!st->fence_trace)
		return 0;
	if (db_prepare(&s, st, st->backend == DB_POSTGRES
		       ? "SELECT 1 FROM leases WHERE trace_id = ?1 AND holder = ?2 FOR SHARE"
		       : "SELECT 1 FROM leases WHERE trace_id = ?1 AND holder = ?2") < 0)
		return -1;
	db_bind_text(s, 1, st->fence_trace);
	db_bind_text(s, 2, st->fence_holder);
	int step = db_step(s);

	db_finalize(s);
	if (step == DB_ROW)
		return 0;
	if (step != DB_DONE)
		return store_fail(st, "cannot read the lease of trace '%s'", st->fence_trace);
	st->fenced_out = true;
	return forge_error("database '%s': the lease of run %s was taken over by another process: "
			   "this process's writes are no longer the run's (rolled back)", st->path,
			   st->fence_trace);
}

/*
 * A write of the run outside any transaction, while a fence is set, is
 * made in a transaction of its own so that the fence checks it: fence_open
 * begins one (*own true), fence_close commits it when rc is 0 (else rolls
 * it back) and returns rc, or -1 when the commit failed.
 */
static int fence_open(struct store *st, bool *own)
{
	*own = false;
	if (!st->fence_trace || in_transaction(st))
		return 0;
	if (store_begin(st) < 0)
		return -1;
	*own = true;
	return 0;
}

static int fence_close(struct store *st, bool own, int rc)
{
	if (!own)
		return rc;
	if (rc < 0) {
		store_rollback(st);
		return rc;
	}
	return store_commit(st) < 0 ? -1 : rc;
}

int store_begin(struct store *st)
{
	if (in_transaction(st))
		return forge_error("database '%s': a transaction is already open", st->path);
	/* PostgreSQL: READ COMMITTED; what must not interleave takes a lock
	 * of its own (leases, migrations). */
	return store_exec(st, st->backend == DB_POSTGRES ? "BEGIN" : "BEGIN IMMEDIATE");
}

int store_commit(struct store *st)
{
	if (st->queue_failed) {
		st->queue_failed = false;
		store_rollback(st);
		return forge_error("database '%s': events of this transaction could not be stored; "
				   "it is rolled back", st->path);
	}
	/* PostgreSQL answers COMMIT of a failed transaction with a ROLLBACK. */
	if (st->backend == DB_POSTGRES && PQtransactionStatus(st->pg) == PQTRANS_INERROR) {
		store_rollback(st);
		return forge_error("database '%s': a statement of this transaction failed; it is "
				   "rolled back", st->path);
	}
	if (fence_check(st) < 0) {
		store_rollback(st);
		return -1;
	}
	if (store_exec(st, "COMMIT") == 0)   /* store_exec flushes the queue first */
		return 0;
	/* A failed COMMIT can leave the transaction open; close it so the
	 * connection stays usable, keeping the COMMIT's message. */
	if (in_transaction(st)) {
		if (st->backend == DB_POSTGRES)
			PQclear(PQexec(st->pg, "ROLLBACK"));
		else
			sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	}
	return -1;
}

int store_rollback(struct store *st)
{
	st->queue.count = 0;	/* what waited goes with the transaction */
	st->queue.len = 0;
	if (!in_transaction(st))
		return 0;   /* nothing open: sqlite may already have rolled back */
	return store_exec(st, "ROLLBACK");
}

/* ---- events -------------------------------------------------------- */

static int event_field(struct store *st, const char *value, const char *key)
{
	if (!value)
		return forge_error("database '%s': cannot store event: '%s' is missing or not a "
				   "string", st->path, key);
	return 0;
}

/* text[0..n) as a parameter, borrowed (it must outlive the step). */
static void bind_span(sqlite3_stmt *s, int i, const char *text, size_t n)
{
	sqlite3_bind_text64(s, i, text, (sqlite3_uint64)n, SQLITE_STATIC, SQLITE_UTF8);
}

/* Bind the columns of one event (borrowed: they must outlive the step). */
static void bind_event(sqlite3_stmt *s, int first, const char *const col[EVENT_COLS],
		       const size_t n[EVENT_COLS])
{
	for (int c = 0; c < EVENT_COLS; c++)
		bind_span(s, first + c, col[c], n[c]);
}

/* Step the bound insert s of `what`; *inserted (may be NULL) whether
 * rows were added.  s is reset either way. */
static int event_step(struct store *st, sqlite3_stmt *s, const char *what, bool *inserted)
{
	int rc = 0;

	if (sqlite3_step(s) != SQLITE_DONE) {
		rc = store_fail(st, "cannot store %s", what);
	} else {
		st->events_added += sqlite3_changes(st->db);
		if (inserted)
			*inserted = sqlite3_changes(st->db) > 0;
	}
	stmt_done(s);
	return rc;
}

/* Insert the queued events and empty the queue, also when that fails. */
/*
 * PostgreSQL: the queued events in one multi-row INSERT, one round trip to
 * the server instead of one per event (q->count is already 0: the
 * statement's own flush finds nothing to do).
 */
static int pg_queue_flush(struct store *st, int count)
{
	struct event_queue *q = &st->queue;
	struct buf sql = BUF_INIT;
	struct db_stmt *s;
	int rc = 0;

	buf_adds(&sql, "INSERT INTO event_log (id, trace_id, ts, type, record) VALUES ");
	for (int j = 0; j < count; j++)
		buf_adds(&sql, j ? ",(?,?,?,?,?)" : "(?,?,?,?,?)");
	buf_adds(&sql, " ON CONFLICT (id) DO NOTHING");
	if (db_prepare(&s, st, sql.buf) < 0) {
		buf_release(&sql);
		return -1;
	}
	for (int j = 0; j < count; j++)
		for (int c = 0; c < EVENT_COLS; c++)
			db_bind_textn(s, 1 + j * EVENT_COLS + c, q->text + q->off[j][c], q->n[j][c]);
	if (db_step(s) != DB_DONE)
		rc = store_fail(st, "cannot store events");
	else
		st->events_added += db_changes(s);
	db_finalize(s);
	buf_release(&sql);
	return rc;
}

/*
 * secure_delete (on in Debian's SQLite: freed space is zeroed) off while
 * the queue's rows go in, on again after.  Appending to event_log deletes
 * nothing: what a page split frees is the old place of cells it moved, a
 * copy of rows still there, yet zeroing it was ~570 instructions an event
 * (callgrind, store-writer, 100,000 events: 5% of lib/store).  It stays
 * off from one full queue to the next (each PRAGMA is ~2,600 instructions:
 * per 64 events, 3% of a duplicate's cost) and is on again before anything
 * else runs on the connection: every other statement, the commit and the
 * rollback flush the queue first (store_queue_flush), so a memory deleted
 * or a lease dropped is zeroed as before.  Only when the connection has it
 * on (st->secure_delete, read by configure()).
 */
static int overwrite(struct store *st, bool on)
{
	sqlite3_stmt *s;
	int step;

	if (stmt_get(&s, st, on ? S_OVERWRITE_ON : S_OVERWRITE_OFF) < 0)
		return -1;
	step = sqlite3_step(s);
	sqlite3_reset(s);
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		return store_fail(st, "cannot set secure_delete");
	return 0;
}

/* Insert the queued events; keep_off: leave secure_delete off after them
 * (a full queue: more events follow). */
static int queue_insert(struct store *st, bool keep_off)
{
	struct event_queue *q = &st->queue;
	const char *col[EVENT_COLS];
	sqlite3_stmt *s;
	int rc = 0, count = q->count;

	q->count = 0;
	if (count && st->backend == DB_POSTGRES) {
		rc = pg_queue_flush(st, count);
		q->len = 0;
		return rc;
	}
	/*
	 * A full queue in one statement; what a commit finds in it (40 of a
	 * batch of 1000) in as few: 2^k rows at a time, largest first (32 + 8),
	 * not one by one, which costs an event about twice the instructions
	 * (each row's B-tree searches start from the roots).  Each size is
	 * prepared once, when first needed.
	 */
	if (count && st->secure_delete && !st->overwrite_off) {
		if (overwrite(st, false) < 0) {
			q->len = 0;
			return -1;
		}
		st->overwrite_off = true;
	}
	for (int i = 0, k = S_EVENT_PUT_MANY - S_EVENT_PUT; i < count && rc == 0; ) {
		while (1 << k > count - i)
			k--;
		if (stmt_get(&s, st, (enum stmt_id)(S_EVENT_PUT + k)) < 0) {
			rc = -1;
			break;
		}
		for (int j = i; j < i + (1 << k); j++) {
			for (int c = 0; c < EVENT_COLS; c++)
				col[c] = q->text + q->off[j][c];
			bind_event(s, 1 + (j - i) * EVENT_COLS, col, q->n[j]);
		}
		rc = event_step(st, s, "events", NULL);
		i += 1 << k;
	}
	if (!keep_off && st->overwrite_off) {
		st->overwrite_off = false;
		if (overwrite(st, true) < 0)
			rc = -1;
	}
	q->len = 0;
	return rc;
}

int store_queue_flush(struct store *st)
{
	return queue_insert(st, false);
}

/* Copy an event's columns to the queue; flush it when full. */
static int queue_event(struct store *st, const char *const col[EVENT_COLS], const size_t n[EVENT_COLS])
{
	struct event_queue *q = &st->queue;
	size_t need = 0;

	for (int c = 0; c < EVENT_COLS; c++)
		need += n[c];
	if (q->len + need > q->cap) {
		q->cap = (q->len + need) * 2 > 1 << 16 ? (q->len + need) * 2 : 1 << 16;
		q->text = xrealloc(q->text, q->cap);
	}
	for (int c = 0; c < EVENT_COLS; c++) {
		q->off[q->count][c] = q->len;
		q->n[q->count][c] = n[c];
		memcpy(q->text + q->len, col[c], n[c]);
		q->len += n[c];
	}
	if (++q->count == QUEUE_MAX)
		return queue_insert(st, true);
	return 0;
}

/*
 * The event's row on PostgreSQL: one INSERT (idempotent by id: ON
 * CONFLICT DO NOTHING, so a row already there does not abort the caller's
 * transaction either).
 */
static int pg_event_insert(struct store *st, const char *const col[EVENT_COLS],
			   const size_t n[EVENT_COLS], const char *what, bool *inserted)
{
	struct db_stmt *s;
	int rc = 0;

	if (db_prepare(&s, st, stmt_sql[S_EVENT_PUT]) < 0)
		return -1;
	for (int c = 0; c < EVENT_COLS; c++)
		db_bind_textn(s, c + 1, col[c], n[c]);
	if (db_step(s) != DB_DONE) {
		rc = store_fail(st, "cannot store %s", what);
	} else {
		st->events_added += db_changes(s);
		if (inserted)
			*inserted = db_changes(s) > 0;
	}
	db_finalize(s);
	return rc;
}

/*
 * Insert the event whose indexed columns ev holds, with record raw (strict
 * JSON, so that SQLite reads the generated columns from it).  A key in it
 * is stored redacted, never verbatim (core/secret.h).  Inside a
 * transaction, when the caller does not ask whether a row was added, the
 * event is queued (struct event_queue).
 */
static int event_insert(struct store *st, const struct json_event *ev, const char *raw, size_t raw_len,
			bool *inserted)
{
	sqlite3_stmt *s;
	char *clean = NULL;
	char id[64];
	int rc = -1;

	if (llm_secret_in(raw, raw_len)) {
		clean = llm_redact_mem(raw, raw_len, &raw_len);
		raw = clean;
		if (json_scan(raw, raw_len, NULL, NULL) == JSON_SCAN_INVALID) {
			free(clean);
			snprintf(id, sizeof id, "%.*s", (int)ev->id_len, ev->id);
			return forge_error("database '%s': cannot store event '%s': it is not JSON once "
					   "the key in it is redacted", st->path, id);
		}
	}
	const char *col[EVENT_COLS] = { ev->id, ev->trace_id, ev->ts, ev->type, raw };
	const size_t n[EVENT_COLS] = { ev->id_len, ev->trace_id_len, ev->ts_len, ev->type_len, raw_len };

	if (!inserted && in_transaction(st)) {
		rc = queue_event(st, col, n);
		goto out;
	}
	snprintf(id, sizeof id, "event '%.*s'", (int)(ev->id_len < 40 ? ev->id_len : 40), ev->id);
	if (st->backend == DB_POSTGRES) {
		rc = pg_event_insert(st, col, n, id, inserted);
		goto out;
	}
	if (store_queue_flush(st) < 0 || stmt_get(&s, st, S_EVENT_PUT) < 0)
		goto out;
	bind_event(s, 1, col, n);
	/*
	 * Alone, this one statement is its own transaction and takes the write
	 * lock before reading, so it waits on the busy handler like BEGIN
	 * IMMEDIATE; inside store_begin() it joins the caller's batch.
	 */
	rc = event_step(st, s, id, inserted);
out:
	free(clean);
	return rc;
}

int store_event_put_scanned(struct store *st, const struct json_event *ev, const char *raw,
			    size_t raw_len, bool *inserted)
{
	if (inserted)
		*inserted = false;
	if (event_field(st, ev->id, "id") < 0 || event_field(st, ev->trace_id, "trace_id") < 0 ||
	    event_field(st, ev->ts, "ts") < 0 || event_field(st, ev->type, "type") < 0)
		return -1;
	bool own;

	if (fence_open(st, &own) < 0)
		return -1;
	return fence_close(st, own, event_insert(st, ev, raw, raw_len, inserted));
}

/* The top-level keys of a line, to find one written twice or with an escape. */
struct line_keys {
	const char *key[64];
	size_t len[64];
	int n;
	bool odd;
};

static void line_key(const struct json_member *m, void *payload)
{
	struct line_keys *k = payload;

	if (m->key_escaped || k->n == 64) {
		k->odd = true;
		return;
	}
	for (int i = 0; i < k->n && !k->odd; i++)
		k->odd = k->len[i] == m->key_len && memcmp(k->key[i], m->key, m->key_len) == 0;
	k->key[k->n] = m->key;
	k->len[k->n++] = m->key_len;
}

/*
 * Whether SQLite reads the line (the view's columns) as libjq does: strict
 * JSON (not libjq's nan or 01), no top-level key twice (SQLite takes the
 * first, libjq the last) or written with an escape (SQLite 3.40 matches a
 * path against the key as written).
 */
static bool sqlite_reads_alike(const char *line, size_t len)
{
	struct line_keys k = { .n = 0 };

	return json_scan(line, len, line_key, &k) == JSON_SCAN_OBJECT && !k.odd;
}

/* ev.key as its string and length (borrowed from ev), or NULL. */
static const char *event_str(size_t *len, jv ev, const char *key)
{
	const char *s = json_get_str(ev, key);

	*len = s ? strlen(s) : 0;
	return s;
}

int store_event_put(struct store *st, jv ev, const char *raw, size_t raw_len, bool *inserted)
{
	struct json_event cols;
	char *line = NULL;
	int rc;

	if (inserted)
		*inserted = false;
	if (jv_get_kind(ev) != JV_KIND_OBJECT)
		return forge_error("database '%s': cannot store event: not an object", st->path);
	/* The line read the way libjq read it: its columns come from it. */
	if (raw && json_event_scan(&cols, raw, raw_len))
		return store_event_put_scanned(st, &cols, raw, raw_len, inserted);
	if (raw && !sqlite_reads_alike(raw, raw_len)) {
		jv parsed = json_parse(raw, raw_len);
		bool json = jv_get_kind(parsed) == JV_KIND_OBJECT;

		jv_free(parsed);
		if (!json)
			return forge_error("database '%s': cannot store event '%s': its line is not a JSON "
					   "object", st->path, json_get_str(ev, "id") ? json_get_str(ev, "id") : "?");
		raw = NULL;	/* libjq took it: kept as libjq writes it */
	}
	if (!raw) {
		line = json_dumps(jv_copy(ev), false);   /* jq 1.6's text, byte for byte */
		raw = line;
		raw_len = strlen(line);
	}
	/* The columns from ev: a string written with an escape, say. */
	memset(&cols, 0, sizeof cols);
	cols.id = event_str(&cols.id_len, ev, "id");
	cols.trace_id = event_str(&cols.trace_id_len, ev, "trace_id");
	cols.ts = event_str(&cols.ts_len, ev, "ts");
	cols.type = event_str(&cols.type_len, ev, "type");
	rc = store_event_put_scanned(st, &cols, raw, raw_len, inserted);
	free(line);
	return rc;
}

long store_events_added(struct store *st)
{
	return store_queue_flush(st) < 0 ? -1 : st->events_added;
}

/* store_events_foreach, of the events of one type when type is not NULL. */
static int events_foreach(struct store *st, const char *trace_id, const char *type,
			  int (*fn)(const char *line, size_t len, void *payload), void *payload)
{
	struct db_stmt *s;
	int rc = 0, step;

	if (db_prepare(&s, st, type ? "SELECT record FROM event_log WHERE trace_id = ?1 AND type = ?2 ORDER BY seq"
			     : "SELECT record FROM event_log WHERE trace_id = ?1 ORDER BY seq") < 0)
		return -1;
	db_bind_text(s, 1, trace_id);
	if (type)
		db_bind_text(s, 2, type);
	while ((step = db_step(s)) == DB_ROW) {
		const char *line = db_col_text(s, 0);

		rc = fn(line ? line : "", db_col_bytes(s, 0), payload);
		if (rc != 0)
			break;
	}
	if (rc == 0 && step != DB_DONE)
		rc = store_fail(st, "cannot read events of trace '%s'", trace_id);
	db_finalize(s);   /* ends the read transaction, also after an early stop */
	return rc;
}

int store_events_foreach(struct store *st, const char *trace_id,
			 int (*fn)(const char *line, size_t len, void *payload), void *payload)
{
	return events_foreach(st, trace_id, NULL, fn, payload);
}

int store_events_foreach_type(struct store *st, const char *trace_id, const char *type,
			      int (*fn)(const char *line, size_t len, void *payload), void *payload)
{
	return events_foreach(st, trace_id, type, fn, payload);
}

int store_traces(jv *out, struct store *st, int limit)
{
	struct db_stmt *s;
	jv list = jv_array();
	int step;

	*out = jv_null();
	if (db_prepare(&s, st, sql_traces) < 0) {
		jv_free(list);
		return -1;
	}
	db_bind_int64(s, 1, limit > 0 ? limit : DB_LIMIT_ALL);
	while ((step = db_step(s)) == DB_ROW) {
		jv t = jv_object();

		t = json_set(t, "trace_id", db_col_str(s, 0));
		t = json_set(t, "events", db_col_num(s, 1));
		t = json_set(t, "first_ts", db_col_str(s, 2));
		t = json_set(t, "last_ts", db_col_str(s, 3));
		t = json_set(t, "task", db_col_str(s, 4));
		t = json_set(t, "status", db_col_str(s, 5));
		list = jv_array_append(list, t);
	}
	if (step != DB_DONE) {
		store_fail(st, "cannot list traces");
		jv_free(list);
	} else {
		*out = list;
	}
	db_finalize(s);
	return step == DB_DONE ? 0 : -1;
}

/* ---- runs ---------------------------------------------------------- */

static bool run_status_valid(const char *status)
{
	static const char *const valid[] = {
		"pending", "running", "paused", "completed", "failed", "cancelled",
	};

	for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++)
		if (strcmp(status, valid[i]) == 0)
			return true;
	return false;
}

int store_run_create(struct store *st, const char *trace_id, const char *task,
		     const char *repo, jv config)
{
	struct db_stmt *s = NULL;
	char now[TIMESTAMP_LEN + 1], *config_text = NULL;
	char *clean_task;
	int rc = -1;

	assert(trace_id && task);
	clean_task = llm_redact(xstrdup(task));   /* a key pasted in it: as in run.started */
	if (jv_get_kind(config) != JV_KIND_NULL)
		config_text = llm_redact(json_dumps(secret_url_passwords_hidden_jv(config), false));
	else
		jv_free(config);
	if (db_prepare(&s, st, sql_run_create) < 0)
		goto out;
	timestamp_now(now);
	db_bind_text(s, 1, trace_id);
	db_bind_text(s, 2, clean_task);
	db_bind_text(s, 3, repo);
	db_bind_text(s, 4, config_text);
	db_bind_text(s, 5, now);
	if (db_step(s) != DB_DONE) {
		if (db_unique_violation(st))
			forge_error("database '%s': run '%s' already exists", st->path, trace_id);
		else
			store_fail(st, "cannot create run '%s'", trace_id);
		goto out;
	}
	rc = 0;
out:
	db_finalize(s);
	free(config_text);
	free(clean_task);
	return rc;
}

/* Run the bound UPDATE s of run trace_id; exactly one row must change. */
static int run_update_step(struct store *st, struct db_stmt *s, const char *trace_id)
{
	int rc = 0;

	if (db_step(s) != DB_DONE)
		rc = store_fail(st, "cannot update run '%s'", trace_id);
	else if (db_changes(s) == 0)
		rc = forge_error("database '%s': no run '%s'", st->path, trace_id);
	db_finalize(s);
	return rc;
}

int store_run_update(struct store *st, const char *trace_id, const char *status,
		     const char *phase, const char *error)
{
	struct db_stmt *s;
	char now[TIMESTAMP_LEN + 1];
	char *clean_error = NULL;
	int rc;

	assert(trace_id);
	if (status && !run_status_valid(status))
		return forge_error("database '%s': invalid run status '%s' (want pending, running, "
				   "paused, completed, failed or cancelled)", st->path, status);
	if (db_prepare(&s, st, sql_run_update) < 0)
		return -1;
	timestamp_now(now);
	db_bind_text(s, 1, trace_id);
	db_bind_text(s, 2, status);
	db_bind_text(s, 3, phase);
	if (error)
		clean_error = llm_redact(xstrdup(error));
	db_bind_text(s, 4, clean_error);
	db_bind_text(s, 5, now);
	bool own;

	if (fence_open(st, &own) < 0) {
		db_finalize(s);
		rc = -1;
	} else {
		rc = fence_close(st, own, run_update_step(st, s, trace_id));
	}
	free(clean_error);
	return rc;
}

int store_run_set_cost(struct store *st, const char *trace_id, int64_t tokens, double usd)
{
	struct db_stmt *s;
	char now[TIMESTAMP_LEN + 1];

	assert(trace_id);
	if (db_prepare(&s, st, sql_run_set_cost) < 0)
		return -1;
	timestamp_now(now);
	db_bind_text(s, 1, trace_id);
	db_bind_int64(s, 2, tokens);
	db_bind_double(s, 3, usd);
	db_bind_text(s, 4, now);
	bool own;

	if (fence_open(st, &own) < 0) {
		db_finalize(s);
		return -1;
	}
	return fence_close(st, own, run_update_step(st, s, trace_id));
}

/* The current row of sql_run_get as an object. */
static jv run_row(struct db_stmt *s)
{
	static const char *const keys[] = {
		"trace_id", "task", "repo", "status", "current_phase", "config", "started_at",
		"updated_at", "completed_at", "total_cost_usd", "total_tokens", "error",
	};
	jv run = jv_object();

	for (int i = 0; i < (int)(sizeof keys / sizeof keys[0]); i++) {
		jv v;

		if (i == 5)
			v = db_col_json(s, i);
		else if (i == 9 || i == 10)
			v = db_col_num(s, i);
		else
			v = db_col_str(s, i);
		run = json_set(run, keys[i], v);
	}
	return run;
}

static int run_get(jv *out, struct store *st, const char *trace_id, bool config)
{
	struct db_stmt *s;
	int step, rc = 0;

	*out = jv_null();
	if (db_prepare(&s, st, (config ? sql_run_get : sql_run_get_brief)[st->backend]) < 0)
		return -1;
	db_bind_text(s, 1, trace_id);
	step = db_step(s);
	if (step == DB_ROW)
		*out = run_row(s);
	else if (step != DB_DONE)
		rc = store_fail(st, "cannot read run '%s'", trace_id);
	db_finalize(s);
	return rc;
}

int store_run_get(jv *out, struct store *st, const char *trace_id)
{
	return run_get(out, st, trace_id, true);
}

int store_run_get_brief(jv *out, struct store *st, const char *trace_id)
{
	return run_get(out, st, trace_id, false);
}

int store_runs_list(jv *out, struct store *st, int limit)
{
	struct db_stmt *s;
	int step;

	*out = jv_array();
	if (db_prepare(&s, st, sql_runs_list[st->backend]) < 0)
		return -1;
	db_bind_int64(s, 1, limit > 0 ? limit : DB_LIMIT_ALL);
	while ((step = db_step(s)) == DB_ROW)
		*out = jv_array_append(*out, run_row(s));
	db_finalize(s);
	if (step != DB_DONE)
		return store_fail(st, "cannot list runs");
	return 0;
}

int store_runs_count(long *out, struct store *st)
{
	struct db_stmt *s;
	int step;

	*out = 0;
	if (db_prepare(&s, st, "SELECT count(*) FROM runs") < 0)
		return -1;
	step = db_step(s);
	if (step == DB_ROW)
		*out = (long)db_col_int64(s, 0);
	db_finalize(s);
	return step == DB_ROW ? 0 : store_fail(st, "cannot count runs");
}

/* ---- checkpoints --------------------------------------------------- */

/* Insert the bound checkpoint s; alone on SQLite, synced to disk. */
static int checkpoint_step(struct store *st, struct db_stmt *s)
{
	/* `forge resume` starts from the last checkpoint: alone, it is synced
	 * to disk when it commits (synchronous = NORMAL syncs the WAL only at
	 * its checkpoints, so a power loss could drop the latest rows).
	 * PostgreSQL syncs every commit. */
	bool alone = st->backend == DB_SQLITE && sqlite3_get_autocommit(st->db) && !st->readonly;
	int step;

	if (alone)
		store_exec(st, "PRAGMA synchronous = FULL");
	step = db_step(s);
	if (alone)
		store_exec(st, "PRAGMA synchronous = NORMAL");
	return step;
}

static int checkpoint_save(struct store *st, const char *trace_id, const char *phase,
			   jv state, char **id_out)
{
	struct db_stmt *s;
	char id[ULID_LEN + 1], ts[TIMESTAMP_LEN + 1];
	char *text = NULL;
	int rc = -1;

	assert(trace_id);
	if (id_out)
		*id_out = NULL;
	if (jv_get_kind(state) != JV_KIND_OBJECT)
		return forge_error("database '%s': cannot save checkpoint of trace '%s': state is "
				   "not an object", st->path, trace_id);
	if (db_prepare(&s, st, sql_ckpt_save) < 0)
		return -1;
	ulid_new(id);
	timestamp_format(ts, ulid_ms(id));
	text = json_dumps(jv_copy(state), false);
	if (llm_secret_in(text, strlen(text))) {
		free(text);
		text = json_dumps(llm_redact_jv(jv_copy(state)), false);
	}
	db_bind_text(s, 1, id);
	db_bind_text(s, 2, trace_id);
	db_bind_text(s, 3, phase ? phase : json_get_str(state, "phase"));
	db_bind_text(s, 4, json_get_str(state, "status"));
	db_bind_text(s, 5, ts);
	db_bind_textn(s, 6, text, strlen(text));
	if (checkpoint_step(st, s) != DB_DONE) {
		store_fail(st, "cannot save checkpoint of trace '%s'", trace_id);
		goto out;
	}
	if (id_out)
		*id_out = xstrdup(id);
	rc = 0;
out:
	db_finalize(s);
	free(text);
	return rc;
}

int store_checkpoint_save(struct store *st, const char *trace_id, const char *phase,
			  jv state, char **id_out)
{
	bool own, lite = st->backend == DB_SQLITE && !st->readonly;
	int rc;

	if (!st->fence_trace || in_transaction(st))
		return checkpoint_save(st, trace_id, phase, state, id_out);
	/* alone, in the fence's transaction: synced when it commits, as
	 * checkpoint_step() has it */
	if (lite)
		store_exec(st, "PRAGMA synchronous = FULL");
	rc = fence_open(st, &own) < 0 ? -1
	     : fence_close(st, own, checkpoint_save(st, trace_id, phase, state, id_out));
	if (lite)
		store_exec(st, "PRAGMA synchronous = NORMAL");
	if (rc < 0 && id_out) {
		free(*id_out);
		*id_out = NULL;
	}
	return rc;
}

/* Column i of s as JSON; the message names the checkpoint ("what 'name'"). */
static int col_state(jv *out, struct store *st, struct db_stmt *s, int i, const char *what,
		     const char *name)
{
	const char *t = db_col_text(s, i);
	jv v = t ? json_parse(t, db_col_bytes(s, i)) : jv_null();

	if (!jv_is_valid(v)) {
		char *msg = json_invalid_msg(v);

		forge_error("database '%s': stored state of %s '%s' is not JSON: %s", st->path,
			    what, name, msg);
		free(msg);
		return -1;
	}
	*out = v;
	return 0;
}

int store_checkpoint_latest(jv *out, struct store *st, const char *trace_id)
{
	struct db_stmt *s;
	int step, rc = 0;

	*out = jv_null();
	if (db_prepare(&s, st, sql_ckpt_latest) < 0)
		return -1;
	db_bind_text(s, 1, trace_id);
	step = db_step(s);
	if (step == DB_ROW)
		rc = col_state(out, st, s, 0, "the latest checkpoint of trace", trace_id);
	else if (step != DB_DONE)
		rc = store_fail(st, "cannot read the latest checkpoint of trace '%s'", trace_id);
	db_finalize(s);
	return rc;
}

/* The first columns id, trace_id, phase, status, ts of a checkpoint row. */
static jv checkpoint_head(struct db_stmt *s)
{
	jv c = jv_object();

	c = json_set(c, "id", db_col_str(s, 0));
	c = json_set(c, "trace_id", db_col_str(s, 1));
	c = json_set(c, "phase", db_col_str(s, 2));
	c = json_set(c, "status", db_col_str(s, 3));
	c = json_set(c, "ts", db_col_str(s, 4));
	return c;
}

int store_checkpoint_load(jv *out, struct store *st, const char *id)
{
	struct db_stmt *s;
	jv state;
	int step, rc = 0;

	*out = jv_null();
	if (db_prepare(&s, st, sql_ckpt_load) < 0)
		return -1;
	db_bind_text(s, 1, id);
	step = db_step(s);
	if (step == DB_ROW) {
		rc = col_state(&state, st, s, 5, "checkpoint", id);
		if (rc == 0)
			*out = json_set(checkpoint_head(s), "state", state);
	} else if (step != DB_DONE) {
		rc = store_fail(st, "cannot read checkpoint '%s'", id);
	}
	db_finalize(s);
	return rc;
}

int store_checkpoint_list(jv *out, struct store *st, const char *trace_id)
{
	struct db_stmt *s;
	jv list = jv_array();
	int step, rc = 0;

	*out = jv_null();
	if (db_prepare(&s, st, sql_ckpt_list) < 0) {
		jv_free(list);
		return -1;
	}
	db_bind_text(s, 1, trace_id);
	while ((step = db_step(s)) == DB_ROW)
		list = jv_array_append(list, checkpoint_head(s));
	if (step != DB_DONE) {
		rc = store_fail(st, "cannot list checkpoints of trace '%s'", trace_id);
		jv_free(list);
	} else {
		*out = list;
	}
	db_finalize(s);
	return rc;
}

/* ---- path ---------------------------------------------------------- */

int store_resolve_path(char **out, const char *flag, const char *repo)
{
	const char *env = getenv("FORGE_DB");
	const char *suffix = "/.forge/forge.db";
	size_t n;

	*out = NULL;
	if (flag && *flag) {
		*out = xstrdup(flag);
		return 0;
	}
	if (env && *env) {
		*out = xstrdup(env);
		return 0;
	}
	if (!repo || !*repo)
		return forge_error("no database: give --db PATH, set FORGE_DB, or run inside a "
				   "repository");
	n = strlen(repo);
	while (n > 0 && repo[n - 1] == '/')
		n--;
	*out = xmalloc(n + strlen(suffix) + 1);
	memcpy(*out, repo, n);
	memcpy(*out + n, suffix, strlen(suffix) + 1);
	return 0;
}

/* ---- what the run-level breakers read ------------------------------ */

/*
 * An event record's cost.usd (0 when it has none; NAN for null), read by
 * the scanner: every breaker check sums the day's llm.called records, of
 * every run, and parsing each into a jv cost ~60K instructions a record (8M
 * in a resume's two checks on a day of 16 runs).  A record the scanner
 * leaves to libjq (json_event_scan()) is parsed, with the same answer.
 */
static double record_usd(const char *text, size_t len)
{
	struct json_event ev;

	if (!text)
		return 0;
	if (json_event_scan(&ev, text, len))
		return ev.has_usd ? ev.usd : 0;
	jv rec = json_parse(text, len), cost = json_get(rec, "cost");
	double v = json_get_num(cost, "usd", 0);

	jv_free(cost);
	jv_free(rec);
	return v;
}

int store_cost_between(double *usd, struct store *st, const char *from, const char *to)
{
	struct db_stmt *s;
	int step;

	*usd = 0;
	/* (the records read here, not in SQL: the same on both backends) */
	if (db_prepare(&s, st, "SELECT record FROM event_log WHERE type = 'llm.called' AND ts >= ?1"
		       " AND ts < ?2") < 0)
		return forge_error_prefix("cannot sum the cost of the model calls since %s", from);
	db_bind_text(s, 1, from);
	db_bind_text(s, 2, to);
	while ((step = db_step(s)) == DB_ROW) {
		double v = record_usd(db_col_text(s, 0), db_col_bytes(s, 0));

		if (isfinite(v) && v > 0)
			*usd += v;
	}
	if (step != DB_DONE)
		store_fail(st, "cannot sum the cost of the model calls since %s", from);
	db_finalize(s);
	return step == DB_DONE ? 0 : -1;
}

int store_cost_today(double *usd, struct store *st)
{
	char from[TIMESTAMP_LEN + 1], to[TIMESTAMP_LEN + 1];
	time_t now = time(NULL);
	struct tm tm;

	/* (before: the UTC date of the runs' start, hunt19 #8) */
	localtime_r(&now, &tm);
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	tm.tm_isdst = -1;
	timestamp_format(from, (int64_t)mktime(&tm) * 1000);
	tm.tm_mday++;
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	tm.tm_isdst = -1;
	timestamp_format(to, (int64_t)mktime(&tm) * 1000);
	return store_cost_between(usd, st, from, to);
}

/* The phase of an event record: its text in *phase (not NUL-terminated),
 * its length returned; 0 when it has none (or not a string). */
static size_t record_phase(const char **phase, const char *text, size_t len, jv *parsed)
{
	struct json_event ev;

	if (json_event_scan(&ev, text, len)) {
		*phase = ev.phase_kind == JSON_SCAN_STRING ? ev.phase : NULL;
		return *phase ? ev.phase_len : 0;
	}
	*parsed = json_parse(text, len);
	*phase = jv_get_kind(*parsed) == JV_KIND_OBJECT ? json_get_str(*parsed, "phase") : NULL;
	return *phase ? strlen(*phase) : 0;
}

/* Whether a tool call of phase[0..len) stamped ts is one `before` leaves out. */
static bool tool_call_left_out(jv before, const char *phase, size_t len, const char *ts)
{
	bool out = false;

	if (!phase || !ts)
		return false;
	jv_object_foreach(before, k, v) {
		const char *name = jv_string_value(k);

		if (!out && strlen(name) == len && memcmp(name, phase, len) == 0 &&
		    jv_get_kind(v) == JV_KIND_STRING && strcmp(ts, jv_string_value(v)) < 0)
			out = true;
		jv_free(k);
		jv_free(v);
	}
	return out;
}

int store_tool_outcomes(long *calls, long *failed, struct store *st, const char *trace_id, const char *since,
			jv before)
{
	struct db_stmt *s;
	int step;
	bool by_phase = jv_get_kind(before) == JV_KIND_OBJECT && jv_object_length(jv_copy(before)) > 0;

	/* By the trace's index on SQLite: without statistics its planner
	 * took event_log_type, and read the tool events of every run the
	 * database ever held (a breaker check and a reflection each; `+type`
	 * keeps the index on type out).  PostgreSQL plans with statistics.
	 * With phases to leave out, each call's record is read for its phase
	 * (by the scanner, in C: the same on both backends); else counted in
	 * SQL. */
	*calls = *failed = 0;
	if (db_prepare(&s, st, by_phase
		       ? (st->backend == DB_POSTGRES
			  ? "SELECT type, 1, ts, record FROM event_log WHERE trace_id = ?1 AND ts >= ?2"
			    " AND type IN ('tool.executed', 'tool.failed')"
			  : "SELECT type, 1, ts, record FROM event_log WHERE trace_id = ?1 AND ts >= ?2"
			    " AND +type IN ('tool.executed', 'tool.failed')")
		       : st->backend == DB_POSTGRES
		       ? "SELECT type, COUNT(*) FROM event_log WHERE trace_id = ?1 AND ts >= ?2"
			 " AND type IN ('tool.executed', 'tool.failed') GROUP BY type"
		       : "SELECT type, COUNT(*) FROM event_log WHERE trace_id = ?1 AND ts >= ?2"
			 " AND +type IN ('tool.executed', 'tool.failed') GROUP BY type") < 0) {
		jv_free(before);
		return forge_error_prefix("cannot count the tool calls of trace '%s'", trace_id);
	}
	db_bind_text(s, 1, trace_id);
	db_bind_text(s, 2, since);
	while ((step = db_step(s)) == DB_ROW) {
		long n = (long)db_col_int64(s, 1);

		if (by_phase) {
			const char *text = db_col_text(s, 3), *phase;
			jv parsed = jv_invalid();
			size_t len = record_phase(&phase, text ? text : "", text ? db_col_bytes(s, 3) : 0, &parsed);
			bool out = tool_call_left_out(before, phase, len, db_col_text(s, 2));

			jv_free(parsed);
			if (out)
				continue;
		}
		*calls += n;
		if (strcmp(db_col_text(s, 0), "tool.failed") == 0)
			*failed += n;
	}
	if (step != DB_DONE)
		store_fail(st, "cannot count the tool calls of trace '%s'", trace_id);
	db_finalize(s);
	jv_free(before);
	return step == DB_DONE ? 0 : -1;
}

/*
 * The llm.called events of trace written after its last checkpoint: after
 * the state.updated event written with it (in its transaction), by seq,
 * whatever the clocks said (before: those stamped after the checkpoint's
 * ts, none of them once the clock had gone back).  A trace with no
 * state.updated (written before they were) by the checkpoint's ts, as then.
 */
static const char sql_calls_since_checkpoint[] =
	"SELECT record FROM event_log WHERE trace_id = ?1 AND type = 'llm.called' AND CASE"
	" WHEN EXISTS (SELECT 1 FROM event_log WHERE trace_id = ?1 AND type = 'state.updated')"
	" THEN seq > (SELECT max(seq) FROM event_log WHERE trace_id = ?1 AND type = 'state.updated')"
	" ELSE ts > (SELECT coalesce(max(ts), '') FROM checkpoints WHERE trace_id = ?1) END ORDER BY seq";

/* What the spending readers take of an llm.called record. */
struct model_call {
	double usd, tokens;     /* cost.usd and cost.tokens, 0 when absent or not numbers */
	const char *phase;      /* its phase (a string), or NULL */
};

/*
 * Each llm.called event of trace (after its last checkpoint when
 * since_checkpoint) to fn, as a struct model_call (borrowed for the call).
 * The records are read by the scanner (json_event_scan()), not parsed into
 * jv: a resume reads every call of its run two or three times (0.07M
 * instructions a call parsed, 0.01M scanned); a record the scanner leaves
 * to libjq is parsed, with the same answer.
 */
static int each_model_call(struct store *st, const char *trace_id, bool since_checkpoint,
			   void (*fn)(const struct model_call *call, void *payload), void *payload)
{
	struct db_stmt *s;
	int step;

	/* (the records read here, not in SQL: the same on both backends) */
	if (db_prepare(&s, st, since_checkpoint ? sql_calls_since_checkpoint
		       : "SELECT record FROM event_log WHERE trace_id = ?1 AND type = 'llm.called' ORDER BY seq") < 0)
		return forge_error_prefix("cannot read the model calls of trace '%s'", trace_id);
	db_bind_text(s, 1, trace_id);
	while ((step = db_step(s)) == DB_ROW) {
		const char *text = db_col_text(s, 0);
		size_t len = db_col_bytes(s, 0);
		struct json_event ev;
		struct model_call call = { 0 };

		if (!text)
			text = "", len = 0;
		if (json_event_scan(&ev, text, len)) {
			char *phase = ev.phase ? xstrndup(ev.phase, ev.phase_len) : NULL;

			call.usd = ev.has_usd && !isnan(ev.usd) ? ev.usd : 0;
			call.tokens = ev.has_tokens ? (double)ev.tokens : 0;
			call.phase = phase;
			fn(&call, payload);
			free(phase);
		} else {
			jv rec = json_parse(text, len), cost = json_get(rec, "cost");

			call.usd = json_get_num(cost, "usd", 0);
			call.tokens = json_get_num(cost, "tokens", 0);
			call.phase = json_get_str(rec, "phase");
			fn(&call, payload);
			jv_free(cost);
			jv_free(rec);
		}
	}
	if (step != DB_DONE)
		store_fail(st, "cannot read the model calls of trace '%s'", trace_id);
	db_finalize(s);
	return step == DB_DONE ? 0 : -1;
}

struct spent {
	double usd, tokens;
	long calls;
};

static void add_spent(const struct model_call *call, void *payload)
{
	struct spent *sp = payload;

	sp->usd += call->usd;
	sp->tokens += call->tokens;
	sp->calls++;
}

int store_spent_since_checkpoint(double *usd, double *tokens, long *calls, struct store *st,
				 const char *trace_id)
{
	struct spent sp = { 0 };
	int rc = each_model_call(st, trace_id, true, add_spent, &sp);

	*usd = sp.usd;
	*tokens = sp.tokens;
	*calls = sp.calls;
	return rc;
}

static void add_phase_cost(const struct model_call *call, void *payload)
{
	jv *out = payload;
	const char *phase = call->phase;

	if (phase && *phase)
		*out = json_set(*out, phase, jv_number(json_get_num(*out, phase, 0) + call->usd));
}

int store_cost_by_phase(jv *out, struct store *st, const char *trace_id)
{
	*out = jv_object();
	return each_model_call(st, trace_id, false, add_phase_cost, out);
}

/* llm.called events by phase ({phase: {usd, tokens, calls}}), into *payload. */
static void add_phase_spent(const struct model_call *call, void *payload)
{
	jv *out = payload;
	const char *phase = call->phase;
	jv pc = json_get(*out, phase ? phase : "");

	if (jv_get_kind(pc) != JV_KIND_OBJECT) {
		jv_free(pc);
		pc = jv_object();
	}
	pc = json_set(pc, "usd", jv_number(json_get_num(pc, "usd", 0) + call->usd));
	pc = json_set(pc, "tokens", jv_number(json_get_num(pc, "tokens", 0) + call->tokens));
	pc = json_set(pc, "calls", jv_number(json_get_num(pc, "calls", 0) + 1));
	*out = json_set(*out, phase ? phase : "", pc);
}

int store_unevented_by_phase(jv *out, struct store *st, const char *trace_id)
{
	jv events = jv_object();
	struct db_stmt *s;
	int step;

	*out = jv_object();
	if (each_model_call(st, trace_id, false, add_phase_spent, &events) < 0) {
		jv_free(events);
		return -1;
	}
	if (db_prepare(&s, st, "SELECT coalesce(phase, ''), coalesce(sum(cost_usd), 0), coalesce(sum(input_tokens + "
		       "output_tokens + cache_read_tokens + cache_write_tokens), 0), count(*) FROM llm_calls "
		       "WHERE trace_id = ?1 GROUP BY coalesce(phase, '')") < 0) {
		jv_free(events);
		return forge_error_prefix("cannot read the model-call log of trace '%s'", trace_id);
	}
	db_bind_text(s, 1, trace_id);
	while ((step = db_step(s)) == DB_ROW) {
		const char *phase = db_col_text(s, 0) ? db_col_text(s, 0) : "";
		jv ev = json_get(events, phase);
		double usd = db_col_double(s, 1) - json_get_num(ev, "usd", 0);
		double tokens = db_col_double(s, 2) - json_get_num(ev, "tokens", 0);
		double calls = db_col_double(s, 3) - json_get_num(ev, "calls", 0);

		jv_free(ev);
		if (*phase && (usd > 1e-9 || tokens > 0))
			*out = json_set(*out, phase, json_set(json_set(json_set(jv_object(), "usd", jv_number(fmax(usd, 0))),
				"tokens", jv_number(fmax(tokens, 0))), "calls", jv_number(fmax(calls, 0))));
	}
	if (step != DB_DONE)
		store_fail(st, "cannot read the model-call log of trace '%s'", trace_id);
	db_finalize(s);
	jv_free(events);
	return step == DB_DONE ? 0 : -1;
}

int store_last_event_ms(int64_t *out, struct store *st, const char *trace_id)
{
	struct db_stmt *s;
	int step, rc = 0;

	*out = -1;
	if (db_prepare(&s, st, "SELECT ts FROM event_log WHERE trace_id = ?1 ORDER BY seq DESC LIMIT 1") < 0)
		return -1;
	db_bind_text(s, 1, trace_id);
	step = db_step(s);
	if (step == DB_ROW && db_col_text(s, 0) && timestamp_parse(out, db_col_text(s, 0)) < 0)
		*out = -1;
	if (step != DB_ROW && step != DB_DONE)
		rc = store_fail(st, "cannot read the events of trace '%s'", trace_id);
	db_finalize(s);
	return rc;
}

int store_paused_ms(int64_t *out, struct store *st, const char *trace_id, int64_t now_ms)
{
	struct db_stmt *s;
	int64_t since = -1, at;
	int step;

	*out = 0;
	if (db_prepare(&s, st, "SELECT type, ts, record FROM event_log WHERE trace_id = ?1 AND type IN "
		       "('run.paused', 'run.resumed') ORDER BY seq") < 0)
		return forge_error_prefix("cannot read the pauses of trace '%s'", trace_id);
	db_bind_text(s, 1, trace_id);
	while ((step = db_step(s)) == DB_ROW) {
		bool paused = strcmp(db_col_text(s, 0), "run.paused") == 0;

		if (!paused) {
			/* a run killed, then resumed: the time it lay dead, which
			 * the resume measured (payload.dead_ms) */
			const char *rec = db_col_text(s, 2);
			jv r = rec ? json_parse(rec, strlen(rec)) : jv_null(), p = json_get(r, "payload");
			double dead = json_get_num(p, "dead_ms", 0);

			if (dead > 0)
				*out += (int64_t)dead;
			jv_free(p);
			jv_free(r);
		}
		if (timestamp_parse(&at, db_col_text(s, 1)) < 0)
			continue;
		if (paused) {
			if (since < 0)
				since = at;
		} else if (since >= 0) {
			*out += at > since ? at - since : 0;
			since = -1;
		}
	}
	if (step != DB_DONE)
		store_fail(st, "cannot read the pauses of trace '%s'", trace_id);
	db_finalize(s);
	if (step == DB_DONE && since >= 0 && now_ms > since)
		*out += now_ms - since;
	return step == DB_DONE ? 0 : -1;
}

/* ---- leases -------------------------------------------------------- */

static void host_name(char out[static 256])
{
	if (gethostname(out, 255) < 0)
		snprintf(out, 256, "%s", "localhost");
	out[255] = '\0';
}

/* Whether a holder on another host is seen renewing lease at now_ms:
 * this host saw the lease as it is (holder, renewal count, renewed_at)
 * first at seen_at, by this host's clock (lease_sight), and it is dead
 * once it stayed so for ttl_s.  Its renewed_at, written by the holder's
 * clock, is compared with this one's only past STORE_LEASE_CLOCK_SLACK_S
 * more than the TTL: clocks an hour apart are broken, not skewed, so a
 * machine that went down yesterday is taken over at the first look
 * (before: a reader whose clock ran ahead by more than the TTL took a
 * live run over).  Not seen before (no seen_at) and renewed within that:
 * alive, as one look cannot tell a stopped holder from one whose clock
 * differs; one killed before its first renewal is judged so too, by its
 * renewal count staying 0 and when it was taken. */
static bool seen_renewing(jv lease, double ttl_s, int64_t now_ms)
{
	int64_t at;

	if ((timestamp_parse(&at, json_get_str(lease, "renewed_at")) == 0 ||
	     timestamp_parse(&at, json_get_str(lease, "acquired_at")) == 0) &&
	    (double)(now_ms - at) > (ttl_s + STORE_LEASE_CLOCK_SLACK_S) * 1000.0)
		return false;
	if (timestamp_parse(&at, json_get_str(lease, "seen_at")) < 0)
		return true;
	return (double)(now_ms - at) < ttl_s * 1000.0;
}

/* Whether process pid (which is there) runs program: its name as the
 * kernel keeps it (/proc/PID/comm: the executable's name cut to 15 bytes)
 * is exactly program's cut so.  For a lease without the holder's start
 * identity (older ones): a pid reused by another program is told apart
 * (before, any name that was a prefix matched, so every `forge ...`
 * command passed for forge-supervisor).  true when it cannot be told (no
 * program recorded, no /proc). */
static bool runs_program(pid_t pid, const char *program)
{
	char path[64], comm[32], want[16];
	const char *base;
	size_t n;
	FILE *f;

	if (!program || !*program)
		return true;
	snprintf(path, sizeof path, "/proc/%ld/comm", (long)pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	n = fread(comm, 1, sizeof comm - 1, f);
	fclose(f);
	comm[n] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
	base = strrchr(program, '/');
	base = base ? base + 1 : program;
	snprintf(want, sizeof want, "%s", base);
	return strcmp(comm, want) == 0;
}

/* Whether the lease's holder, of this host, lives: its pid is the very
 * process that took the lease (its start identity, os/proc.h, recorded
 * then), so a pid reused since the holder died (a kill -9, an OOM kill, a
 * reboot) is not the holder, whatever it runs.  A lease without that
 * identity, or a process whose identity cannot be read: its pid lives and
 * runs the lease's program. */
static bool local_holder_alive(jv lease)
{
	const char *start = json_get_str(lease, "pid_start");
	double pid = json_get_num(lease, "pid", 0);
	char now[PROC_START_ID_LEN];

	if (pid < 1 || pid > 1 << 30)
		return false;
	/* ended, not yet reaped: gone (before: "already running" while a
	 * supervisor killed in a container whose PID 1 reaps nothing stayed a
	 * zombie, so its run could never be resumed) */
	if (proc_exited((pid_t)pid))
		return false;
	if (start && proc_start_id(now, (pid_t)pid))
		return strcmp(now, start) == 0;
	if (kill((pid_t)pid, 0) < 0 && errno != EPERM)
		return false;
	return runs_program((pid_t)pid, json_get_str(lease, "program"));
}

bool store_lease_alive_at(jv lease, double ttl_s, int64_t now_ms)
{
	char host[256];
	const char *h = json_get_str(lease, "host");

	if (jv_get_kind(lease) != JV_KIND_OBJECT)
		return false;
	host_name(host);
	if (!h || strcmp(h, host) != 0)
		return seen_renewing(lease, ttl_s > 0 ? ttl_s : STORE_LEASE_TTL_S, now_ms);
	return local_holder_alive(lease);
}

int store_lease_signal(jv lease, int sig)
{
	const char *start = json_get_str(lease, "pid_start");
	double pid = json_get_num(lease, "pid", 0);

	if (jv_get_kind(lease) != JV_KIND_OBJECT || !store_lease_local(lease) || pid < 2 || pid > 1 << 30 ||
	    (pid_t)pid == getpid())
		return -1;
	if (start) {
		char now[PROC_START_ID_LEN];

		/* (its identity unreadable: judged as a lease without one) */
		if (proc_start_id(now, (pid_t)pid))
			return proc_signal_same((pid_t)pid, start, sig) == 0 ? 0 : -1;
	}
	if (!local_holder_alive(lease))
		return -1;
	return kill((pid_t)pid, sig) == 0 ? 0 : -1;
}

bool store_lease_alive(jv lease)
{
	return store_lease_alive_at(lease, STORE_LEASE_TTL_S, now_ms());
}

void store_set_lease_ttl(struct store *st, double ttl_s)
{
	st->lease_ttl_s = ttl_s > 0 ? ttl_s : 0;
}

static bool lease_alive(const struct store *st, jv lease)
{
	return store_lease_alive_at(lease, st->lease_ttl_s, now_ms());
}

/* The lease row of trace, or null. */
static int lease_row(jv *out, struct store *st, const char *trace_id)
{
	struct db_stmt *s;
	int step;

	*out = jv_null();
	if (db_prepare(&s, st, "SELECT holder, pid, host, program, acquired_at, renewed_at, pid_start, renewals"
		       " FROM leases WHERE trace_id = ?1") < 0)
		return -1;
	db_bind_text(s, 1, trace_id);
	step = db_step(s);
	if (step == DB_ROW) {
		jv o = json_set(jv_object(), "trace_id", jv_string(trace_id));
		o = json_set(o, "holder", db_col_str(s, 0));
		o = json_set(o, "pid", db_col_num(s, 1));
		o = json_set(o, "host", db_col_str(s, 2));
		o = json_set(o, "program", db_col_str(s, 3));
		o = json_set(o, "acquired_at", db_col_str(s, 4));
		o = json_set(o, "renewed_at", db_col_str(s, 5));
		o = json_set(o, "pid_start", db_col_str(s, 6));
		*out = json_set(o, "renewals", db_col_num(s, 7));
	} else if (step != DB_DONE) {
		store_fail(st, "cannot read the lease of trace '%s'", trace_id);
	}
	db_finalize(s);
	return step == DB_ROW || step == DB_DONE ? 0 : -1;
}

/* Whether a's string field key is b's (both absent too). */
static bool same_str(jv a, jv b, const char *key)
{
	const char *x = json_get_str(a, key), *y = json_get_str(b, key);

	return x ? y && strcmp(x, y) == 0 : !y;
}

/* Note in *lease (a row of another host's lease, or anything else, which
 * is left alone) since when this host sees it as it is: "seen_at", from
 * this host's sighting of it (schemas/sql/016-lease-sightings.sql) when
 * that saw the same holder, renewal count and renewed_at; else the
 * sighting is written anew, at this host's now -- not by a read-only store
 * (forge status, history: a SELECT-only role), which only reads it, so
 * the commands that only look count from when a taker (forge resume, a
 * phase, gc, cancel) first saw it.  A sighting that cannot be read or
 * written leaves the lease unseen (alive): no error. */
static void lease_sight(struct store *st, jv *lease)
{
	char host[256], now[TIMESTAMP_LEN + 1];
	struct db_stmt *s;
	jv seen = jv_null();

	if (jv_get_kind(*lease) != JV_KIND_OBJECT || store_lease_local(*lease))
		return;
	host_name(host);
	if (db_prepare(&s, st, "SELECT holder, renewals, renewed_at, seen_at FROM lease_sightings"
		       " WHERE trace_id = ?1 AND observer = ?2") < 0)
		return;
	db_bind_text(s, 1, json_get_str(*lease, "trace_id"));
	db_bind_text(s, 2, host);
	if (db_step(s) == DB_ROW) {
		seen = json_set(jv_object(), "holder", db_col_str(s, 0));
		seen = json_set(seen, "renewals", db_col_num(s, 1));
		seen = json_set(seen, "renewed_at", db_col_str(s, 2));
		seen = json_set(seen, "seen_at", db_col_str(s, 3));
	}
	db_finalize(s);
	if (jv_get_kind(seen) == JV_KIND_OBJECT && same_str(seen, *lease, "holder") &&
	    same_str(seen, *lease, "renewed_at") &&
	    json_get_num(seen, "renewals", -1) == json_get_num(*lease, "renewals", 0)) {
		*lease = json_set(*lease, "seen_at", json_get(seen, "seen_at"));
		jv_free(seen);
		return;
	}
	jv_free(seen);
	if (st->readonly)
		return;
	/* first seen so now: it lives until this host sees it so for the TTL */
	timestamp_now(now);
	if (db_prepare(&s, st, "INSERT INTO lease_sightings (trace_id, observer, holder, renewals, renewed_at, seen_at)"
		       " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (trace_id, observer) DO UPDATE SET"
		       " holder = excluded.holder, renewals = excluded.renewals,"
		       " renewed_at = excluded.renewed_at, seen_at = excluded.seen_at") < 0)
		return;
	db_bind_text(s, 1, json_get_str(*lease, "trace_id"));
	db_bind_text(s, 2, host);
	db_bind_text(s, 3, json_get_str(*lease, "holder") ? json_get_str(*lease, "holder") : "");
	db_bind_int64(s, 4, (int64_t)json_get_num(*lease, "renewals", 0));
	db_bind_text(s, 5, json_get_str(*lease, "renewed_at"));
	db_bind_text(s, 6, now);
	if (db_step(s) == DB_DONE)
		*lease = json_set(*lease, "seen_at", jv_string(now));
	db_finalize(s);
}

/* Forget what any host saw of trace's lease (it was taken or released). */
static int lease_sightings_drop(struct store *st, const char *trace_id)
{
	struct db_stmt *s;

	if (db_prepare(&s, st, "DELETE FROM lease_sightings WHERE trace_id = ?1") < 0)
		return -1;
	db_bind_text(s, 1, trace_id);
	return db_step_done(st, s, "cannot update the lease of trace '%s'", trace_id);
}

int store_lease_get(jv *out, struct store *st, const char *trace_id)
{
	if (lease_row(out, st, trace_id) < 0)
		return -1;
	lease_sight(st, out);
	if (jv_get_kind(*out) == JV_KIND_OBJECT)
		*out = json_set(*out, "alive", jv_bool(lease_alive(st, *out)));
	return 0;
}

int store_lock(struct store *st, const char *key)
{
	struct db_stmt *s;

	if (st->backend != DB_POSTGRES)
		return 0;
	if (db_prepare(&s, st, "SELECT pg_advisory_xact_lock(hashtext(CAST(?1 AS TEXT)))") < 0)
		return -1;
	db_bind_text(s, 1, key);
	int step = db_step(s);

	db_finalize(s);
	return step == DB_ROW ? 0 : store_fail(st, "cannot lock '%s'", key);
}

/* Serialise the takers of trace's lease until the transaction ends, so
 * that two machines do not both find it free (store_lock on the trace id). */
static int lease_lock(struct store *st, const char *trace_id)
{
	return store_lock(st, trace_id);
}

/* Write holder's lease of trace (taking it over from a dead holder). */
static int lease_write(struct store *st, const char *trace_id, const char *holder, const char *program)
{
	char host[256], now[32], start[PROC_START_ID_LEN];
	bool started;
	struct db_stmt *s;

	host_name(host);
	timestamp_now(now);
	/* who this process is beyond its pid, so that a reused pid is not
	 * taken for it (NULL without /proc: judged by pid and program) */
	started = proc_start_id(start, getpid());
	if (db_prepare(&s, st, "INSERT INTO leases (trace_id, holder, pid, host, program, acquired_at, pid_start)"
		       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (trace_id) DO UPDATE SET"
		       " holder = excluded.holder, pid = excluded.pid, host = excluded.host,"
		       " program = excluded.program, acquired_at = excluded.acquired_at,"
		       " renewed_at = NULL, pid_start = excluded.pid_start, renewals = 0") < 0)
		return -1;
	db_bind_text(s, 1, trace_id);
	db_bind_text(s, 2, holder);
	db_bind_int64(s, 3, (int64_t)getpid());
	db_bind_text(s, 4, host);
	db_bind_text(s, 5, program);
	db_bind_text(s, 6, now);
	db_bind_text(s, 7, started ? start : NULL);
	if (db_step_done(st, s, "cannot take the lease of trace '%s'", trace_id) < 0)
		return -1;
	return lease_sightings_drop(st, trace_id);
}

int store_lease_take_steal(jv *held, struct store *st, const char *trace_id, const char *holder,
			   const char *program, bool steal)
{
	jv row = jv_null();
	bool alive = false;
	int rc = -1;

	assert(trace_id && holder);
	*held = jv_null();
	if (store_begin(st) < 0)
		return -1;
	if (lease_lock(st, trace_id) < 0 || lease_row(&row, st, trace_id) < 0)
		goto out;
	if (jv_get_kind(row) == JV_KIND_OBJECT) {
		const char *had = json_get_str(row, "holder");
		if (had && strcmp(had, holder) == 0) {
			rc = STORE_LEASE_TAKEN;	/* ours already (a phase of our supervisor) */
			goto out;
		}
		lease_sight(st, &row);
		alive = lease_alive(st, row);
		/* a living process of this host is never taken: its pid says it works */
		if (alive && (!steal || store_lease_local(row))) {
			/* (what this host saw of it is kept: it counts from then) */
			if (store_commit(st) < 0)
				goto out;
			*held = json_set(jv_copy(row), "alive", jv_true());
			rc = STORE_LEASE_HELD;
			goto out;
		}
	}
	if (lease_write(st, trace_id, holder, program) < 0 || store_commit(st) < 0)
		goto out;
	if (jv_get_kind(row) == JV_KIND_OBJECT) {
		*held = json_set(jv_copy(row), "alive", jv_bool(alive));
		rc = STORE_LEASE_STOLEN;
	} else {
		rc = STORE_LEASE_TAKEN;
	}
out:
	store_rollback(st);
	jv_free(row);
	return rc;
}

int store_lease_take(jv *held, struct store *st, const char *trace_id, const char *holder,
		     const char *program)
{
	return store_lease_take_steal(held, st, trace_id, holder, program, false);
}

bool store_lease_local(jv lease)
{
	char host[256];
	const char *h = json_get_str(lease, "host");

	host_name(host);
	return h && strcmp(h, host) == 0;
}

int store_lease_renew(struct store *st, const char *trace_id, const char *holder)
{
	char now[TIMESTAMP_LEN + 1];
	struct db_stmt *s;

	timestamp_now(now);
	if (db_prepare(&s, st, "UPDATE leases SET renewed_at = ?3, renewals = renewals + 1"
		       " WHERE trace_id = ?1 AND holder = ?2") < 0)
		return -1;
	db_bind_text(s, 1, trace_id);
	db_bind_text(s, 2, holder);
	db_bind_text(s, 3, now);
	if (db_step(s) != DB_DONE) {
		db_finalize(s);
		return store_fail(st, "cannot renew the lease of trace '%s'", trace_id);
	}
	long changed = db_changes(s);

	db_finalize(s);
	return changed > 0 ? 0 : STORE_LEASE_LOST;
}

int store_lease_release(struct store *st, const char *trace_id, const char *holder)
{
	struct db_stmt *s;

	if (db_prepare(&s, st, "DELETE FROM leases WHERE trace_id = ?1 AND holder = ?2") < 0)
		return -1;
	db_bind_text(s, 1, trace_id);
	db_bind_text(s, 2, holder);
	if (db_step_done(st, s, "cannot release the lease of trace '%s'", trace_id) < 0)
		return -1;
	/* (what hosts saw of it goes when it went) */
	if (db_prepare(&s, st, "DELETE FROM lease_sightings WHERE trace_id = ?1"
		       " AND NOT EXISTS (SELECT 1 FROM leases WHERE trace_id = ?1)") < 0)
		return -1;
	db_bind_text(s, 1, trace_id);
	return db_step_done(st, s, "cannot release the lease of trace '%s'", trace_id);
}

static const char *const run_status_names[] = {
	[RUN_PENDING] = "pending", [RUN_RUNNING] = "running", [RUN_PAUSED] = "paused",
	[RUN_COMPLETED] = "completed", [RUN_FAILED] = "failed", [RUN_CANCELLED] = "cancelled",
	[RUN_UNKNOWN] = "unknown",
};

const char *run_status_name(enum run_status s)
{
	return (unsigned)s <= RUN_UNKNOWN ? run_status_names[s] : "unknown";
}

enum run_status run_status_of(const char *name)
{
	for (int s = RUN_PENDING; name && s < RUN_UNKNOWN; s++)
		if (strcmp(name, run_status_names[s]) == 0)
			return (enum run_status)s;
	return RUN_UNKNOWN;
}

bool run_status_terminal(enum run_status s)
{
	return s == RUN_COMPLETED || s == RUN_FAILED || s == RUN_CANCELLED;
}

/* ---- forge db status ----------------------------------------------- */

/* The schema version of the SQLite file path without changing it: 0 when
 * the file does not exist yet. */
static int sqlite_file_version(int *v, const char *path)
{
	struct store st = { .backend = DB_SQLITE, .path = (char *)path };
	int rc = 0;

	*v = 0;
	if (strcmp(path, ":memory:") == 0 || access(path, F_OK) != 0)
		return 0;
	if (not_a_file(path) < 0)
		return -1;
	if (sqlite3_open_v2(path, &st.db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		rc = store_fail(&st, "cannot open");
	} else {
		sqlite3_busy_timeout(st.db, STORE_BUSY_TIMEOUT_MS);
		rc = user_version(v, &st);
	}
	sqlite3_close_v2(st.db);
	if (rc < 0 && strstr(forge_last_error(), "not a database"))
		forge_error("cannot open database '%s': file is not a database (not SQLite, or damaged)",
			    path);
	return rc;
}

int store_migrations_applied(const struct store *st)
{
	return st->applied;
}

int store_db_status(jv *out, const char *path)
{
	enum db_backend b = db_is_postgres(path) ? DB_POSTGRES : DB_SQLITE;
	int known = migrations_known(b), v = 0;
	char *shown = db_display_path(path);
	jv pending = jv_array();

	*out = jv_null();
	if (b == DB_POSTGRES) {
		struct store *st;

		if (pg_open(&st, path, false) < 0)
			goto fail;
		int rc = pg_version(&v, st);

		store_free(st);
		if (rc < 0)
			goto fail;
	} else if (sqlite_file_version(&v, path) < 0) {
		goto fail;
	}
	for (int i = v + 1; i <= known; i++)
		pending = jv_array_append(pending, jv_string(migration_nth(migration_dir(b), i)->name));
	*out = json_set(jv_object(), "backend", jv_string(b == DB_POSTGRES ? "postgresql" : "sqlite"));
	*out = json_set(*out, "database", jv_string(shown));
	*out = json_set(*out, "version", jv_number(v));
	*out = json_set(*out, "known", jv_number(known));
	*out = json_set(*out, "pending", pending);
	free(shown);
	return 0;
fail:
	jv_free(pending);
	free(shown);
	return -1;
}
