/*
 * store.h - the database of Forge: runs, events, checkpoints (and, from
 * later modules, findings, memories, llm_calls, ...).
 *
 * Two backends (db.h): a SQLite file (the default; what follows describes
 * it) and PostgreSQL, when the path is a postgres:// or postgresql:// URI
 * or a libpq conninfo string.  On PostgreSQL the same functions work for
 * the run store (events, runs, checkpoints, leases, traces; gates, plans
 * and the model-call log through db.h); the migrations are schemas/pg/,
 * recorded in the table forge_schema and applied under an advisory lock,
 * and every write is its own transaction unless inside store_begin().
 * Modules that still keep SQLite statements (store_prepare(), store_db())
 * fail on PostgreSQL with a message saying so.
 *
 * One connection per process: WAL journal, busy timeout, foreign keys on.
 * Every write runs in BEGIN IMMEDIATE so concurrent writers queue on the
 * busy handler instead of failing.  Migrations are the files
 * schemas/sql/NNN-name.sql compiled into the library (resource.h); opening
 * applies the missing ones in one transaction and records the count in
 * PRAGMA user_version.  A database whose user_version is newer than this
 * program knows is refused.
 *
 * All functions return 0 (or a count) on success and -1 with forge_error()
 * on failure.  A write that fails because the disk is full (SQLITE_FULL)
 * says so.  jv arguments follow json.h's rule (consumed unless
 * "borrows").
 */
#ifndef FORGE_STORE_H
#define FORGE_STORE_H

#include <jv.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct json_event;

/*
 * The database path to use: `flag` (from --db) when set, else $FORGE_DB when
 * set and not empty, else "<repo>/.forge/forge.db".  Returns a malloc'd
 * string.  repo may be NULL when flag or FORGE_DB is set; otherwise -1.
 */
int store_resolve_path(char **out, const char *flag, const char *repo);

/* What a message says to do when the database cannot be made or written
 * where it is (a read-only checkout, another user's directory). */
#define STORE_ELSEWHERE_HINT "keep the database where it can be written: --db PATH or FORGE_DB=PATH"

/*
 * Open (creating the file and its parent directories when missing) and
 * migrate to the newest schema.  New directories are made 0700 and a new
 * file 0600: the database holds LLM transcripts.  Refuses a database from a
 * newer Forge and a file that is not a database.  ":memory:" opens a
 * private in-memory database (for tests).  When the file or its directory
 * cannot be made or opened for want of permission or on a read-only file
 * system, the message ends with STORE_ELSEWHERE_HINT.
 */
int store_open(struct store **out, const char *path);

/*
 * Open for a command that only reads (status, history, events, findings
 * and memory lists, metrics, gate list): read-only, so that a database in
 * a read-only place (a read-only mount, another user's files) still
 * serves them; a WAL database whose -shm cannot be created there is read
 * as an immutable file.  A file that does not exist is read as an empty
 * database (in memory, store_absent()); nothing is created.  One whose
 * schema is older than this program's is opened with store_open() instead
 * (migrated).  Writes through a read-only store fail with SQLITE_READONLY.
 */
int store_open_readonly(struct store **out, const char *path);

/* Whether st is the empty stand-in store_open_readonly() gives for a file
 * that does not exist (false for NULL). */
bool store_absent(const struct store *st);

/* Whether path names a SQLite file (not ":memory:", not PostgreSQL) that
 * does not exist. */
bool store_file_absent(const char *path);

/* Whether st was opened read-only, or is read-only because this user may
 * not write its file (false for NULL). */
bool store_readonly(const struct store *st);
void store_free(struct store *st);   /* NULL-safe; finalizes statements */

/* The raw SQLite handle, for modules that keep their own prepared
 * statements (finalize them before store_free()); NULL on PostgreSQL,
 * where such modules are not supported yet (store_require_sqlite()). */
sqlite3 *store_db(struct store *st);

/*
 * The durability of a SQLite store's write-ahead log; no-ops on PostgreSQL,
 * where each commit is durable when it returns.
 * store_sync_log: sync the log to disk now (the store commits with
 * synchronous = NORMAL, which syncs it only at its checkpoints): 0 done or
 * nothing to do (no log: not in WAL mode, where commits sync themselves),
 * -1 when the sync failed.
 * store_checkpoint_log: copy the log into the database now (a passive
 * checkpoint: it syncs the log, then the database); true when all of it
 * was copied, so nothing is left to sync (false on PostgreSQL).
 */
int store_sync_log(struct store *st);
bool store_checkpoint_log(struct store *st);

/* The SQLite library's version ("3.46.1"). */
const char *store_sqlite_version(void);

/*
 * 0 when st is a SQLite store; else -1 with "WHAT is not supported on
 * PostgreSQL yet (...)": what the modules that still keep SQLite
 * statements (memory) say before they start.
 */
int store_require_sqlite(struct store *st, const char *what);

/*
 * What `forge db status` shows, without changing the database:
 * {"backend":"sqlite"|"postgresql","database" (a URI's password hidden),
 * "version","known","pending":[migration names]}.  A SQLite file that
 * does not exist yet has version 0.
 */
int store_db_status(jv *out, const char *path);

/* How many migrations opening st applied (0: the schema was up to date,
 * or another process migrated it while this one waited). */
int store_migrations_applied(const struct store *st);

/* The path the store was opened with, for messages; borrowed. */
const char *store_path(struct store *st);

/* Number of migrations compiled in / the database's user_version. */
int store_schema_version_known(void);
int store_schema_version(struct store *st);

/*
 * BEGIN IMMEDIATE / COMMIT / ROLLBACK.  Transactions do not nest:
 * store_begin() fails when one is open.  A failed commit rolls back.
 * store_rollback() with no transaction open is a no-op, so cleanup paths may
 * call it unconditionally.
 */
int store_begin(struct store *st);
int store_commit(struct store *st);
int store_rollback(struct store *st);

/*
 * For a process that writes many transactions in a row (forge-events
 * store): from now on the WAL is copied into the database by a thread of
 * this handle's own, with a connection of its own, instead of inside the
 * commit that finds the log past its autocheckpoint size (32 MiB); the
 * commit only wakes it, and copies the last few pages itself so that the
 * log restarts.  Durability is the same (the thread syncs the log before
 * it copies and the database after).  The thread starts at the first such
 * commit and stops in store_free().  A no-op on PostgreSQL, in memory,
 * read-only and when SQLite is built without threads.
 */
int store_checkpoint_in_background(struct store *st);

/*
 * Inside a transaction: serialise the transactions that take the same key
 * until this one ends, so a read-then-write (the next version number, a
 * free lease) is not interleaved.  SQLite: nothing to do (BEGIN IMMEDIATE
 * already serialises writers); PostgreSQL (READ COMMITTED): an advisory
 * transaction lock on hashtext(key).
 */
int store_lock(struct store *st, const char *key);

/* Run SQL with no result rows (DDL, pragmas). */
int store_exec(struct store *st, const char *sql);

/*
 * SQLite helpers: the one set, for this file and for the modules that keep
 * their tables in the store (plans, gates, llm_calls, memories, findings)
 * and use store_db()'s handle.
 *
 * store_fail: record "database 'PATH': WHAT: SQLITE MESSAGE (sqlite code
 * N)" (or that the disk is full; for SQLITE_BUSY that another process
 * holds the write lock and what to do; for SQLITE_READONLY and
 * SQLITE_CANTOPEN, after the message, which file or directory of the
 * database may not be written, and STORE_ELSEWHERE_HINT, when one stands
 * out) and return -1.  Call it right after the
 * failing sqlite3 call: the next call overwrites sqlite3_errmsg().
 * store_prepare: sqlite3_prepare_v2 of sql on st's handle; on failure *out
 * is NULL and the message quotes the start of sql.  The caller finalizes.
 * store_step_done: step s once, expecting no row (an INSERT, UPDATE,
 * DELETE), and finalize it in every case; fmt... names the failure.
 * store_bind_text: text (copied) or SQL NULL when NULL.
 * store_bind_jv_text: a jv string's bytes, not copied (borrows v, which
 * must outlive the statement's next step); SQL NULL when not a string.
 * store_col_str / store_col_num: column i as a jv string / number, null
 * when SQL NULL.  store_col_json: column i parsed as JSON, null when SQL
 * NULL or not JSON (columns are CHECKed as JSON when written).
 */
__attribute__((format(printf, 2, 3)))
int store_fail(struct store *st, const char *fmt, ...);
int store_prepare(sqlite3_stmt **out, struct store *st, const char *sql);
__attribute__((format(printf, 3, 4)))
int store_step_done(struct store *st, sqlite3_stmt *s, const char *fmt, ...);
void store_bind_text(sqlite3_stmt *s, int i, const char *text);
void store_bind_jv_text(sqlite3_stmt *s, int i, jv v);
jv store_col_str(sqlite3_stmt *s, int i);
jv store_col_num(sqlite3_stmt *s, int i);
jv store_col_json(sqlite3_stmt *s, int i);

/*
 * Persist one event record (table event_log; the view events reads the
 * other columns from it).  `raw` is the record's exact line as read from a
 * stream (without the newline), kept so that replay gives back the same
 * bytes; when raw is NULL, or is text libjq takes but RFC 8259 does not
 * (nan, 01) or has a top-level key twice or written with an escape (SQLite
 * would read those otherwise), the record is serialised from ev; raw that
 * is not a JSON object is refused.  Idempotent by
 * the event's id: storing an id again is a no-op that returns 0.  Borrows
 * ev.  *inserted (may be NULL) tells whether a row was added.  Fails with a
 * message when ev lacks a string id, trace_id, ts or type.  Call it inside
 * store_begin()/store_commit() to batch; alone it commits each row.
 */
int store_event_put(struct store *st, jv ev, const char *raw, size_t raw_len, bool *inserted);

/*
 * Inside a transaction, a put with inserted NULL only queues the event: it
 * is inserted with the next ones, 64 in one statement (far cheaper than
 * one by one; on PostgreSQL one round trip to the server for them all),
 * at the latest before the store runs any other statement
 * (store_db() included) or commits; an error of those inserts shows then
 * (a put, or the commit, fails).  Ask *inserted only when the answer is
 * needed: it inserts at once.
 *
 * store_events_added: rows the event puts of st have added since it was
 * opened (the queue inserted first), counting those of transactions rolled
 * back later; -1 when the queued events cannot be stored.
 */
long store_events_added(struct store *st);

/*
 * The same for an event line that json_event_scan() (core/jsonscan.h) read
 * into ev, with no jv: what forge-events store persists.  raw is the line
 * ev was scanned from (required, kept as it is).  Borrows ev.
 */
int store_event_put_scanned(struct store *st, const struct json_event *ev, const char *raw,
			    size_t raw_len, bool *inserted);

/*
 * Call fn for each event of trace in the order they were stored (never by
 * ts: a clock that went back, or another machine's, does not reorder a
 * trace) with the stored line (NUL-terminated, borrowed for the call).  An
 * event stored again (the same id) keeps its first place.  A non-zero
 * return from fn stops the walk and is returned.
 */
int store_events_foreach(struct store *st, const char *trace_id,
			 int (*fn)(const char *line, size_t len, void *payload), void *payload);
/* The same for the events of trace whose type is type only: what looks for
 * a few events of a long trace reads those, not every line of it. */
int store_events_foreach_type(struct store *st, const char *trace_id, const char *type,
			      int (*fn)(const char *line, size_t len, void *payload), void *payload);

/*
 * Traces known to the database (from events or runs), newest last_ts first:
 * an array of {"trace_id","events","first_ts","last_ts","task","status"};
 * task and status are null for a trace without a run, and the times of a run
 * without events are its started_at/updated_at.  limit <= 0: all of them.
 */
int store_traces(jv *out, struct store *st, int limit);

/*
 * Runs.  create: a new run with status "pending"; fails when trace_id
 * exists; repo may be NULL; consumes config (an object, or jv_null()).
 * update: NULL arguments leave their column as it is; status must be one of
 * pending|running|paused|completed|failed|cancelled; a terminal status
 * (completed, failed, cancelled) sets completed_at, any other clears it; a
 * cancelled run keeps its status, error and completed_at (a live run's own
 * updates do not undo a cancel); fails when there is no such run.  set_cost: the run's totals (the state's
 * cost so far).  get: {"trace_id","task","repo","status","current_phase",
 * "config","started_at","updated_at","completed_at","total_cost_usd",
 * "total_tokens","error"}, or null when absent; the totals as
 * STORE_RUN_USD_SQL_* and STORE_RUN_TOKENS_SQL_* (below) count them.  Known API keys in the
 * task, config and error are stored redacted (llm_redact).
 */
int store_run_create(struct store *st, const char *trace_id, const char *task,
		     const char *repo, jv config);
int store_run_update(struct store *st, const char *trace_id, const char *status,
		     const char *phase, const char *error);
int store_run_set_cost(struct store *st, const char *trace_id, int64_t tokens, double usd);
int store_run_get(jv *out, struct store *st, const char *trace_id);
/* store_run_get with "config" null: what needs the run's status or totals
 * does not read (and parse) its whole recorded configuration. */
int store_run_get_brief(jv *out, struct store *st, const char *trace_id);
/*
 * A run's spend in SQL, for a query over the runs table (named runs): its
 * total_cost_usd or total_tokens, or what its rows in llm_calls (the
 * model-call log, written as each call returns) add up to when that is more.
 * A run whose supervisor died (kill -9, a machine that went down) wrote no
 * totals after its last checkpoint, nor, with its events lost to a full
 * disk, any llm.called event for a call llm_calls holds; forge resume adds
 * them to the run's cost, and until then these count them (before: status,
 * history, show and metrics left them out).  Per backend: on PostgreSQL
 * runs.id (COLLATE "C") is compared in llm_calls.trace_id's collation, so
 * that the llm_calls_trace index serves the lookup.  What store_run_get and
 * store_runs_list give as total_cost_usd and total_tokens.
 */
#define STORE_RUN_SPENT_SQL_(eq, col, sum) \
	"(SELECT CASE WHEN " sum " > runs." col " THEN " sum " ELSE runs." col " END" \
	" FROM llm_calls c WHERE c.trace_id = runs.id" eq ")"
#define STORE_RUN_TOKENS_SUM_ \
	"CAST(sum(c.input_tokens + c.output_tokens + c.cache_read_tokens + c.cache_write_tokens) AS bigint)"
#define STORE_RUN_USD_SQL_LITE STORE_RUN_SPENT_SQL_("", "total_cost_usd", "sum(c.cost_usd)")
#define STORE_RUN_USD_SQL_PG STORE_RUN_SPENT_SQL_(" COLLATE \"default\"", "total_cost_usd", "sum(c.cost_usd)")
#define STORE_RUN_TOKENS_SQL_LITE STORE_RUN_SPENT_SQL_("", "total_tokens", STORE_RUN_TOKENS_SUM_)
#define STORE_RUN_TOKENS_SQL_PG STORE_RUN_SPENT_SQL_(" COLLATE \"default\"", "total_tokens", STORE_RUN_TOKENS_SUM_)

/* Runs, newest first, in store_run_get's shape (config left null);
 * limit <= 0 = all. */
int store_runs_list(jv *out, struct store *st, int limit);
/* How many runs the store holds. */
int store_runs_count(long *out, struct store *st);

/*
 * Checkpoints: the whole state after a phase.  Borrows state (an object);
 * phase NULL takes state.phase; the status column is state.status.  The id
 * is a ULID and ts this machine's time, both kept as data: "latest" and
 * "oldest first" are the order the checkpoints were saved in, whatever
 * the clocks said.  *id_out (may be NULL) receives a malloc'd checkpoint id.
 */
int store_checkpoint_save(struct store *st, const char *trace_id, const char *phase,
			  jv state, char **id_out);
/* The state of trace's checkpoint saved last, or jv_null() when none. */
int store_checkpoint_latest(jv *out, struct store *st, const char *trace_id);
/* A checkpoint by id: {"id","trace_id","phase","status","ts","state"}, or null. */
int store_checkpoint_load(jv *out, struct store *st, const char *id);
/* Checkpoints of a trace, oldest first, without their states:
 * [{"id","trace_id","phase","status","ts"}]. */
int store_checkpoint_list(jv *out, struct store *st, const char *trace_id);

/*
 * What the run-level breakers read.  cost_between: what the model calls of
 * every run made from the timestamp `from` up to (not including) `to` cost:
 * the summed cost.usd of the llm.called events then, by their ts (a run
 * resumed days after it started counts on the day it spends).
 * tool_outcomes: the tool.executed + tool.failed events of trace since the
 * timestamp `since` (*calls) and how many of them failed, leaving out those
 * of a phase that `before` (consumed: an object {phase: timestamp}, or
 * null) names, stamped before its timestamp (the calls of a phase that
 * has since ended ok, which the run's error-rate breaker does not count).
 */
int store_cost_between(double *usd, struct store *st, const char *from, const char *to);
/*
 * cost_between over today, the local day (the one `forge history` shows:
 * from its first millisecond up to the next day's, a day of 23 or 25
 * hours taken in its stride): what safety.cost.per_day limits, and what
 * the advice that raises it reads (one figure for both).  0, or -1 with a
 * message.
 */
int store_cost_today(double *usd, struct store *st);
int store_tool_outcomes(long *calls, long *failed, struct store *st, const char *trace_id, const char *since,
			jv before);

/*
 * What the model calls of trace cost after its last checkpoint: the
 * llm.called events stored after it (*calls of them, *usd, *tokens).
 * A run whose supervisor died (kill -9, a machine that went down) wrote no
 * state after them; its resume adds them to the run's cost.
 */
int store_spent_since_checkpoint(double *usd, double *tokens, long *calls, struct store *st,
				 const char *trace_id);

/* What trace's model calls have cost so far by phase: {"plan": usd, …}
 * from its llm.called events (their "phase"). */
int store_cost_by_phase(jv *out, struct store *st, const char *trace_id);

/*
 * What trace's model-call log (llm_calls) holds beyond its llm.called
 * events, by phase: {"implement": {"usd", "tokens", "calls"}, ...}, only
 * the phases with more (a call whose event was never written: the
 * supervisor and its phase killed mid-call).  What forge resume recovers
 * into the run's cost, put to the phase whose calls they were.
 */
int store_unevented_by_phase(jv *out, struct store *st, const char *trace_id);

/* How long trace has been paused, in ms: from each run.paused event to the
 * run.resumed stored after it, by their ts (a pause the clock made negative
 * counts 0; the last pause, when not resumed yet, to now_ms), and the time
 * a killed run lay dead (a run.resumed's payload.dead_ms). */
int store_paused_ms(int64_t *out, struct store *st, const char *trace_id, int64_t now_ms);
/* The time (ts) of the event of trace stored last, in ms since the epoch;
 * -1 when none. */
int store_last_event_ms(int64_t *out, struct store *st, const char *trace_id);

/*
 * Leases: one process at a time works on a trace (forge-supervisor's run or
 * resume, or a phase filter run by hand on a state).  A lease is
 * {"trace_id","holder","pid","host","program","acquired_at","renewed_at",
 * "pid_start"}; holder is an id the taker made; renewed_at is null until
 * its holder renews it (forge-supervisor does, every
 * supervisor.lease_renew_s); pid_start is the taker's start identity
 * (os/proc.h proc_start_id; null without /proc, or written before it was
 * kept).
 *
 * Alive: on this host, while its pid is the process that took it (pid and
 * pid_start; without pid_start: its pid lives and its name is exactly the
 * program's); on another host (no pid can be checked there, and its
 * clock is not this one's), until this host has seen it unchanged -- same
 * holder, renewal count ("renewals", which each renew bumps) and
 * renewed_at -- for the store's TTL (store_set_lease_ttl,
 * supervisor.lease_ttl_s, default STORE_LEASE_TTL_S), by this host's
 * clock: take and get note what they see in lease_sightings and give it
 * as "seen_at" (a read-only store only reads it); alive_at decides from
 * "seen_at" (none: alive).  One never renewed is judged so too.  One whose
 * renewed_at (never renewed: acquired_at) is more than the TTL plus
 * STORE_LEASE_CLOCK_SLACK_S behind this host's clock is dead at once:
 * two machines' clocks are trusted to within that slack, not the TTL.
 *
 * take: in one BEGIN IMMEDIATE transaction (fails when one is open):
 * STORE_LEASE_TAKEN when it was free or holder holds it already (then it is
 * left as it is); STORE_LEASE_STOLEN when its holder was dead (*held
 * receives that lease, "alive": false); STORE_LEASE_HELD when a living
 * process holds it (*held receives its lease, "alive": true); -1 on error.
 * *held is null otherwise (caller frees *held).
 * take_steal with steal: a living holder on another host is taken too
 * (STORE_LEASE_STOLEN, *held "alive": true); one on this host never.
 * renew: sets renewed_at to now when holder holds it: 0; STORE_LEASE_LOST
 * when holder holds it no longer (another process took it over, or it was
 * released); -1 on error.
 * release: drops the lease when holder holds it (else nothing).
 * get: the lease with "alive", or null when none.
 * alive: whether the lease's holder lives, with the default TTL (borrows
 * lease); alive_at: with ttl_s (<= 0: the default) at now_ms (ms since the
 * epoch).  local: whether the lease's host is this one (borrows).
 * signal: sends sig to the lease's holder when it is a live process of
 * this host other than this one, checked by its identity up to the signal
 * itself (os/proc.h proc_signal_same), so a reused pid is never signalled:
 * 0 sent, -1 (no message) not (borrows lease).
 */
#define STORE_LEASE_TTL_S 120.0
#define STORE_LEASE_CLOCK_SLACK_S 3600.0
enum { STORE_LEASE_TAKEN = 0, STORE_LEASE_HELD = 1, STORE_LEASE_STOLEN = 2, STORE_LEASE_LOST = 3 };
int store_lease_take(jv *held, struct store *st, const char *trace_id, const char *holder,
		     const char *program);
int store_lease_take_steal(jv *held, struct store *st, const char *trace_id, const char *holder,
			   const char *program, bool steal);
int store_lease_renew(struct store *st, const char *trace_id, const char *holder);
int store_lease_release(struct store *st, const char *trace_id, const char *holder);
int store_lease_get(jv *out, struct store *st, const char *trace_id);
void store_set_lease_ttl(struct store *st, double ttl_s);
bool store_lease_alive(jv lease);
bool store_lease_alive_at(jv lease, double ttl_s, int64_t now_ms);
bool store_lease_local(jv lease);
int store_lease_signal(jv lease, int sig);

/*
 * The fence of a lease's holder: once set, every transaction of st checks,
 * just before its COMMIT and inside it, that holder still holds trace's
 * lease (one lookup of the leases row by its key; on PostgreSQL the row is
 * locked FOR SHARE until the commit, so a takeover waits for it or is seen);
 * when another process took the lease over, the transaction is rolled back
 * and fails, and store_lease_fenced() is true from then on.  The run's
 * writes that are not inside a transaction (store_run_update,
 * store_run_set_cost, store_checkpoint_save, store_event_put*) are made in
 * one of their own while the fence is set, so they are checked too.  So a
 * holder whose lease was taken while it slept writes nothing more, whatever
 * its heartbeat saw.  trace_id NULL removes the fence (copies both).
 */
void store_fence(struct store *st, const char *trace_id, const char *holder);
bool store_lease_fenced(const struct store *st);

/*
 * The trace a person typed (traces.c): `prefix` is a whole trace id or the
 * start of exactly one (of runs and of traces with events); a whole id wins
 * over the longer ids it starts; a prefix in lower case that matches
 * nothing is tried in upper case (ULIDs are).  Returns 0 with *out the
 * whole id (malloc'd); STORE_TRACE_NONE when nothing matches ("no run
 * matches 'X'"); STORE_TRACE_AMBIGUOUS when several do (the message lists
 * up to 8 of them, one a line); -1 on a database error.  *out is NULL
 * unless 0; forge_last_error() has the message otherwise.  Callers exit 2
 * (usage) on the first two, 5 on -1.
 */
enum { STORE_TRACE_NONE = 1, STORE_TRACE_AMBIGUOUS = 2 };
int store_resolve_trace(char **out, struct store *st, const char *prefix);

/* The event of `type` in trace stored last, as its stored record (an
 * object), or null when there is none (traces.c). */
int store_event_last(jv *out, struct store *st, const char *trace_id, const char *type);

/* A run's status (runs.status): one enum, the strings the store keeps. */
enum run_status {
	RUN_PENDING, RUN_RUNNING, RUN_PAUSED, RUN_COMPLETED, RUN_FAILED, RUN_CANCELLED,
	RUN_UNKNOWN       /* any other string, or none */
};
/* "pending", "running", …; "unknown" for RUN_UNKNOWN.  Static. */
const char *run_status_name(enum run_status s);
/* The status name names; RUN_UNKNOWN for NULL or another string. */
enum run_status run_status_of(const char *name);
/* completed, failed and cancelled: the run is over. */
bool run_status_terminal(enum run_status s);

#endif
