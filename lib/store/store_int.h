/*
 * store_int.h - what store.c and db.c share about a store (not for other
 * modules: they use store.h and db.h).
 */
#ifndef FORGE_STORE_INT_H
#define FORGE_STORE_INT_H

#include "store/db.h"
#include "store/store.h"

#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdarg.h>

/*
 * The prepared statements a SQLite store keeps; prepared on first use.
 * S_EVENT_PUT inserts one event; S_EVENT_PUT + k inserts 2^k queued events
 * in one statement, up to S_EVENT_PUT_MANY's QUEUE_MAX.  S_OVERWRITE_OFF
 * and S_OVERWRITE_ON turn secure_delete off and on around the queue's
 * inserts (store_queue_flush).
 */
enum stmt_id {
	S_EVENT_PUT,
	S_EVENT_PUT_MANY = S_EVENT_PUT + 6,
	S_OVERWRITE_OFF,
	S_OVERWRITE_ON,
	S_COUNT
};

/* A connection's busy timeout: long enough to outlast a burst of
 * concurrent batch writers. */
#define STORE_BUSY_TIMEOUT_MS 10000

/*
 * Events put inside a transaction wait in a queue and are inserted
 * QUEUE_MAX at a time by one statement (SQLite; see store.c).
 */
#define QUEUE_MAX (1 << (S_EVENT_PUT_MANY - S_EVENT_PUT))
#define EVENT_COLS 5

struct event_queue {
	char *text;                     /* the columns' bytes, one after another */
	size_t len, cap;
	size_t off[QUEUE_MAX][EVENT_COLS], n[QUEUE_MAX][EVENT_COLS];
	int count;
};

/*
 * SQLite statements db_prepare() made, kept for the next db_prepare() of the
 * same text: a query a long-lived process runs again and again (the
 * supervisor's checkpoints and gates, every model call's log row) is parsed
 * once.  busy: handed out, not db_finalize()d yet (then another
 * db_prepare() of the same text gets a statement of its own).
 */
#define DB_STMT_CACHE 32
struct db_cached {
	char *sql;                      /* owned; NULL: a free slot */
	sqlite3_stmt *lite;
	bool busy;
	unsigned long used;             /* when last handed out (least recent goes first) */
};

struct store {
	enum db_backend backend;
	sqlite3 *db;                    /* DB_SQLITE */
	PGconn *pg;                     /* DB_POSTGRES */
	char *pg_msg;                   /* the last PostgreSQL error, or NULL */
	char pg_state[6];               /* its SQLSTATE */
	char *path;                     /* as given, for messages (password hidden) */
	sqlite3_stmt *stmt[S_COUNT];    /* NULL until first use */
	bool readonly;                  /* opened by store_open_readonly() */
	bool secure_delete;             /* SQLite zeroes freed space (its build's default) */
	bool overwrite_off;             /* secure_delete is off for the queue (store.c) */
	bool absent;                    /* its file does not exist: an empty one in memory */
	struct event_queue queue;
	bool queue_failed;              /* a flush from store_db() failed: the commit fails */
	long events_added;              /* store_events_added() */
	int applied;                    /* migrations this open applied */
	double lease_ttl_s;             /* store_set_lease_ttl(); 0: STORE_LEASE_TTL_S */
	char *fence_trace, *fence_holder; /* store_fence(): owned; NULL: no fence */
	bool fenced_out;                /* a commit found the fence's lease another's */
	struct db_cached cache[DB_STMT_CACHE];
	unsigned long cache_clock;
	struct store_ckpt *ckpt;        /* store_checkpoint_in_background(); NULL: none */
};

/* Stop the checkpoint thread of store_checkpoint_in_background() (waiting
 * for a copy under way) and give the commits their checkpoints back; a
 * no-op without one.  checkpointer.c; store_free() calls it. */
void store_ckpt_stop(struct store *st);

/* Finalize the cached statements (before the connection closes); db.c. */
void db_cache_free(struct store *st);

/* store_fail() with a va_list (store.c): what db_step_done() and
 * store_step_done() report a failed step with. */
__attribute__((format(printf, 2, 0)))
int store_failv(struct store *st, const char *fmt, va_list ap);

/* Insert the queued events (SQLite); store.c. */
int store_queue_flush(struct store *st);

/* Seconds libpq may take to connect, unless conninfo or PGCONNECT_TIMEOUT
 * says otherwise. */
#define DB_CONNECT_TIMEOUT_S "10"
/* Connect st (path already set) to the PostgreSQL database conninfo;
 * db.c.  Run one statement with no parameters (several, ';'-separated,
 * when multi). */
int db_pg_connect(struct store *st, const char *conninfo);
int db_pg_exec(struct store *st, const char *sql);
/* Record the PostgreSQL error of res (or of the connection when NULL). */
void db_pg_error(struct store *st, const PGresult *res);

#endif
