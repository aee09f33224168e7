/* heartbeat.c - a run's lease renewed from a thread of its own; see heartbeat.h. */
#include "app/heartbeat.h"
#include "core/forge.h"
#include "core/ids.h"
#include "store/store.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct heartbeat {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;          /* signalled by heartbeat_stop */
	bool stop;
	struct store *st;           /* owned: the thread's own connection, opened at its first beat */
	char *db;                   /* owned */
	char trace[128], holder[ULID_LEN + 1], program[64];
	double every_s;
	bool quiet, warned;
	void (*on_lost)(void *);    /* called once, from the thread, when the lease was taken */
	void *lost_arg;
	bool lost;
};

/* One renewal on the thread's connection, opened first if need be; a
 * connection a renewal failed on is closed, for the next to open anew. */
static int renew_once(struct heartbeat *h)
{
	int r;

	if (!h->st && store_open(&h->st, h->db) < 0)
		return -1;
	if ((r = store_lease_renew(h->st, h->trace, h->holder)) >= 0)
		return r;
	store_free(h->st);
	h->st = NULL;
	return -1;
}

/* The lease is another's now (a resume elsewhere judged this run dead:
 * its host asleep past the TTL, or a clock behind by more): said once, the
 * owner told, and no more renewals -- renewing would not give it back. */
static void lost(struct heartbeat *h)
{
	h->lost = true;
	if (!h->quiet)
		fprintf(stderr, "%s: the run's lease was taken over by another process (forge resume "
				"elsewhere); this one stops\n", h->program);
	if (h->on_lost)
		h->on_lost(h->lost_arg);
}

/* Renew the lease.  The lease was taken (or renewed) just before the
 * thread started, so the first renewal waits a whole interval: a phase
 * shorter than that opens no second connection (its schema read alone is
 * ~1.7M instructions).  A renewal that fails (the database restarted, a
 * connection dropped) is tried again at once on a new connection, and at
 * every beat after: a lease not renewed for its TTL is another host's to
 * take over while this run still works.  Said once a failing streak, and
 * when it renews again. */
static void renew(struct heartbeat *h)
{
	int r = renew_once(h);

	if (r < 0)
		r = renew_once(h);
	if (r == STORE_LEASE_LOST) {
		lost(h);
		return;
	}
	if (r == 0) {
		if (h->warned && !h->quiet)
			fprintf(stderr, "%s: the run's lease is renewed again\n", h->program);
		h->warned = false;
		return;
	}
	if (!h->quiet && !h->warned)
		fprintf(stderr, "%s: warning: the run's lease is not renewed (trying again every %gs): %s\n",
			h->program, h->every_s, forge_last_error());
	h->warned = true;
}

static void *beat(void *arg)
{
	struct heartbeat *h = arg;
	struct timespec at;

	pthread_mutex_lock(&h->mu);
	while (!h->stop) {
		clock_gettime(CLOCK_MONOTONIC, &at);
		long long ns = at.tv_nsec + (long long)(h->every_s * 1e9);
		at.tv_sec += (time_t)(ns / 1000000000LL);
		at.tv_nsec = (long)(ns % 1000000000LL);
		while (!h->stop && pthread_cond_timedwait(&h->cv, &h->mu, &at) != ETIMEDOUT)
			;
		if (h->stop)
			break;
		pthread_mutex_unlock(&h->mu);
		renew(h);
		pthread_mutex_lock(&h->mu);
		if (h->lost)
			break;
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

void heartbeat_start(struct heartbeat **out, const char *db, const char *trace, const char *holder,
		     double every_s, const char *program, bool quiet, void (*on_lost)(void *),
		     void *lost_arg)
{
	struct heartbeat *h;
	pthread_condattr_t ca;
	sigset_t all, was;

	*out = NULL;
	if (!db || strcmp(db, ":memory:") == 0)
		return;
	h = xcalloc(1, sizeof *h);
	h->db = xstrdup(db);
	snprintf(h->program, sizeof h->program, "%s", program);
	h->quiet = quiet;
	h->on_lost = on_lost;
	h->lost_arg = lost_arg;
	snprintf(h->trace, sizeof h->trace, "%s", trace);
	snprintf(h->holder, sizeof h->holder, "%s", holder);
	h->every_s = every_s;
	pthread_mutex_init(&h->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->cv, &ca);
	pthread_condattr_destroy(&ca);
	/* signals go to the program's own thread, never to the heartbeat */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &was);
	int rc = pthread_create(&h->th, NULL, beat, h);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	if (rc != 0) {
		if (!quiet)
			fprintf(stderr, "%s: warning: the run's lease is not renewed: cannot start a thread: %s\n",
				program, strerror(rc));
		pthread_cond_destroy(&h->cv);
		pthread_mutex_destroy(&h->mu);
		store_free(h->st);
		free(h->db);
		free(h);
		return;
	}
	*out = h;
}

void heartbeat_stop(struct heartbeat *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	h->stop = true;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
	pthread_join(h->th, NULL);
	pthread_cond_destroy(&h->cv);
	pthread_mutex_destroy(&h->mu);
	store_free(h->st);
	free(h->db);
	free(h);
}
