/*
 * checkpointer.c - WAL checkpoints from a thread of their own, for a
 * process that writes events in a stream (store_checkpoint_in_background).
 *
 * A commit that finds the WAL past the autocheckpoint size copies the log
 * into the database and syncs both files before it returns: in a bulk
 * writer that was half of the time inside lib/store (300,000 events,
 * store-writer: 2.9 s with the checkpoints, 1.4 s without).  Here the
 * commit only wakes a thread, which checkpoints through its own
 * connection (SQLITE_CHECKPOINT_PASSIVE: it takes no lock a writer
 * waits on) while the writer goes on.
 *
 * The log is restarted from its beginning only by a writer whose
 * transaction began when every frame was already copied, which a thread
 * copying beside a writer that never pauses does not bring about on its
 * own.  So once the thread has copied all but a few frames, the commit
 * copies those few itself (a short checkpoint) and the next transaction
 * restarts the log: it stays near the autocheckpoint size.  A thread that
 * falls far behind (the log at 3 times the size) gets the same help in
 * full, so the log stays bounded whatever the disk does.
 *
 * Another process writing the same database defeats both: its
 * transactions, always under way, hold frames not yet copied, and a
 * PASSIVE copy never finds the whole log copied at a transaction's start
 * (two bulk writers: the log grew to hundreds of MB).  Past 8 times the
 * size a commit copies with SQLITE_CHECKPOINT_RESTART, which waits (the
 * busy timeout) for the other's transaction and holds off its next until
 * the log starts again from its beginning.
 */
#include "core/forge.h"
#include "store/store.h"
#include "store/store_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct store_ckpt {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t wake;    /* to the thread: copy (busy) or stop */
	pthread_cond_t idle;    /* from it: a copy ended */
	bool started;           /* the thread runs (made at the first wake) */
	bool busy;              /* it is copying */
	bool stop;              /* store_free: finish */
	char *path;             /* the database file */
	int size;               /* frames: the autocheckpoint size */
	/* The log as the writer's commits see it: a log that got shorter
	 * was restarted, which makes generation grow. */
	int last_frames;
	unsigned generation;
	/* The thread's last copy: frames copied of that generation's log. */
	unsigned done_generation;
	int done_frames;
	bool has_done;
};

static void *checkpointer(void *arg)
{
	struct store_ckpt *c = arg;
	sqlite3 *db = NULL;

	/* (a connection of its own: one per thread; opened here so that the
	 * writer never waits for it) */
	/* (a read of the header opens the connection's WAL, without which a
	 * checkpoint is a no-op; the schema it does not parse) */
	if (sqlite3_open_v2(c->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, "PRAGMA schema_version", NULL, NULL, NULL) != SQLITE_OK) {
		sqlite3_close_v2(db);
		db = NULL;
	}
	pthread_mutex_lock(&c->mu);
	for (;;) {
		while (!c->busy && !c->stop)
			pthread_cond_wait(&c->wake, &c->mu);
		if (c->stop)
			break;
		unsigned generation = c->generation;
		int log = 0, copied = 0;

		pthread_mutex_unlock(&c->mu);
		/* (SQLITE_BUSY when another process checkpoints: then that
		 * one copies, and nothing is recorded here) */
		bool ok = db && sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_PASSIVE, &log,
							   &copied) == SQLITE_OK;
		pthread_mutex_lock(&c->mu);
		if (ok) {
			c->done_generation = generation;
			c->done_frames = copied;
			c->has_done = true;
		}
		c->busy = false;
		pthread_cond_broadcast(&c->idle);
	}
	pthread_mutex_unlock(&c->mu);
	sqlite3_close_v2(db);
	return NULL;
}

/* Wake the thread (made now when it is not there yet); mu held. */
static bool wake(struct store_ckpt *c)
{
	if (!c->started) {
		if (pthread_create(&c->thread, NULL, checkpointer, c) != 0)
			return false;
		c->started = true;
	}
	c->busy = true;
	pthread_cond_signal(&c->wake);
	return true;
}

/*
 * A copy by the writer's connection.  A RESTART finds the checkpoint lock
 * taken whenever another process's thread (or this one's) is copying, and
 * SQLite's busy handler does not wait for that lock: it is tried again,
 * 1 ms apart, for up to a second, then left to the next commit.  Its wait
 * for readers to leave the log is cut to 50 ms: a reader that stays (a
 * long query) would otherwise hold every commit for the busy timeout.
 */
static void copy(sqlite3 *db, const char *name, int mode)
{
	int log = 0, rc;

	if (mode != SQLITE_CHECKPOINT_RESTART) {
		(void)sqlite3_wal_checkpoint_v2(db, name, mode, NULL, NULL);
		return;
	}
	sqlite3_busy_timeout(db, 50);
	rc = sqlite3_wal_checkpoint_v2(db, name, mode, &log, NULL);
	for (int i = 0; rc == SQLITE_BUSY && log == -1 && i < 1000; i++) {
		sqlite3_sleep(1);
		rc = sqlite3_wal_checkpoint_v2(db, name, mode, &log, NULL);
	}
	sqlite3_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
}

/*
 * SQLite's WAL hook: after each commit of the writer's connection, with
 * the frames the log now holds.  Decides who copies (see the top).
 */
static int on_commit(void *arg, sqlite3 *db, const char *name, int frames)
{
	struct store_ckpt *c = arg;
	bool copy_here = false;
	int mode = SQLITE_CHECKPOINT_PASSIVE;

	pthread_mutex_lock(&c->mu);
	if (frames < c->last_frames)
		c->generation++;
	c->last_frames = frames;
	if (frames >= 8 * c->size)
		mode = SQLITE_CHECKPOINT_RESTART;
	if (frames >= 3 * c->size) {
		/* (the thread has not caught up: the log is bounded here) */
		while (c->busy)
			pthread_cond_wait(&c->idle, &c->mu);
		copy_here = true;
	} else if (frames >= c->size && !c->busy) {
		copy_here = (c->has_done && c->done_generation == c->generation &&
			     frames - c->done_frames <= c->size / 2) || !wake(c);
	}
	pthread_mutex_unlock(&c->mu);
	if (copy_here)
		copy(db, name, mode);
	return SQLITE_OK;
}

/* The connection's autocheckpoint size in frames (PRAGMA
 * wal_autocheckpoint: configure()'s, or what a caller set), or 0. */
static int autocheckpoint_size(sqlite3 *db)
{
	sqlite3_stmt *s = NULL;
	int size = 0;

	if (sqlite3_prepare_v2(db, "PRAGMA wal_autocheckpoint", -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		size = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	return size;
}

int store_checkpoint_in_background(struct store *st)
{
	struct store_ckpt *c;
	const char *file;

	if (st->backend != DB_SQLITE || st->readonly || st->absent || st->ckpt)
		return 0;
	file = sqlite3_db_filename(st->db, "main");
	if (!file || !*file || !sqlite3_threadsafe())
		return 0;	/* in memory, or no threads: commits checkpoint */
	c = xcalloc(1, sizeof *c);
	c->path = xstrdup(file);
	c->size = autocheckpoint_size(st->db);
	if (c->size <= 0 || pthread_mutex_init(&c->mu, NULL) != 0) {
		/* (autocheckpoints off: nothing to move) */
		bool off = c->size <= 0;

		free(c->path);
		free(c);
		return off ? 0 : forge_error("database '%s': cannot set up checkpoints in the background",
					     st->path);
	}
	pthread_cond_init(&c->wake, NULL);
	pthread_cond_init(&c->idle, NULL);
	st->ckpt = c;
	sqlite3_wal_hook(st->db, on_commit, c);
	return 0;
}

void store_ckpt_stop(struct store *st)
{
	struct store_ckpt *c = st->ckpt;

	if (!c)
		return;
	/* (the writer's own commits from here: no hook pointing at freed memory) */
	sqlite3_wal_autocheckpoint(st->db, c->size);
	pthread_mutex_lock(&c->mu);
	c->stop = true;
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->mu);
	if (c->started)
		pthread_join(c->thread, NULL);
	pthread_cond_destroy(&c->wake);
	pthread_cond_destroy(&c->idle);
	pthread_mutex_destroy(&c->mu);
	free(c->path);
	free(c);
	st->ckpt = NULL;
}
