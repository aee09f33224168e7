/*
 * heartbeat.h - a run's lease renewed from a thread of its own.
 *
 * Whoever holds a run's lease (forge-supervisor for a whole run, a phase
 * filter run by hand or as a CI job on a state) renews it every
 * supervisor.lease_renew_s seconds, whatever its own thread is doing (a
 * phase may say nothing for minutes while tests run; a gate may wait for a
 * human), so that another machine tells a live holder from one whose
 * machine went down (store.h: a lease of another host not renewed for
 * supervisor.lease_ttl_s is dead).  The thread has its own connection to
 * the database and blocks every signal: they stay the program's.
 */
#ifndef FORGE_HEARTBEAT_H
#define FORGE_HEARTBEAT_H

#include <stdbool.h>

struct heartbeat;

/*
 * Start renewing holder's lease of trace in the database at db (a path or
 * a PostgreSQL URI, opened again by the thread at its first renewal) every
 * every_s seconds, the first after every_s: the caller has just taken or
 * renewed the lease.  *out is the caller's (heartbeat_stop()), or NULL
 * when there is nothing to renew (db NULL or ":memory:") or the thread
 * cannot start; then, unless quiet, a warning on stderr prefixed with
 * program: the lease stays never renewed, which another host takes over
 * once supervisor.lease_ttl_s has passed since it was taken.  The same warning, once, when the thread cannot open the
 * database.  A failed renewal (the server away a moment) is tried again at
 * the next beat.  A renewal that finds the lease another's (taken over by
 * a resume elsewhere) ends the renewals: unless quiet it is said, and
 * on_lost(lost_arg), when not NULL, is called once from the thread (it
 * must be thread-safe: set a flag, signal the owner's children).
 */
void heartbeat_start(struct heartbeat **out, const char *db, const char *trace, const char *holder,
		     double every_s, const char *program, bool quiet, void (*on_lost)(void *),
		     void *lost_arg);

/* Stop the thread (waiting for a renewal under way) and free h; NULL-safe. */
void heartbeat_stop(struct heartbeat *h);

/*
 * From a signal handler about to _exit: have the thread release the lease
 * (on its own connection) and end, waiting at most timeout_ms for it.
 * Async-signal-safe (a write and a poll on pipes); h is not freed.  0 when
 * the thread ended in time (the lease released, unless it was lost or the
 * database could not be reached), -1 otherwise or when h is NULL.
 */
int heartbeat_release_signal_safe(struct heartbeat *h, int timeout_ms);

#endif
