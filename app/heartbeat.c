/* heartbeat.c - a run's lease renewed from a thread of its own; see heartbeat.h. */
#include "app/heartbeat.h"
#include "core/forge.h"
#include "core/ids.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct heartbeat {
	pthread_t th;
	int wake[2];                /* pipe: a byte tells the thread to stop ('s') or release ('r') */
	int done[2];                /* pipe: the thread writes a byte when it ends */
	struct store *st;           /* owned: the thread's own connection, opened at its first beat */
	char *db;                   /* owned */
	char trace[128 + 1], holder[ULID_LEN + 1], program[64];   /* (a trace id: at most 128) */
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

static long long monotonic_ms_now(void)
{
	struct timespec at;

	clock_gettime(CLOCK_MONOTONIC, &at);
	return (long long)at.tv_sec * 1000 + at.tv_nsec / 1000000;
}

/* Drop the lease (the program was stopped by a signal: heartbeat.h). */
static void release(struct heartbeat *h)
{
	if ((h->st || store_open(&h->st, h->db) == 0) && !h->lost)
		store_lease_release(h->st, h->trace, h->holder);
}

/* Renew every every_s until told to stop or release (a byte on wake). */
static void *beat(void *arg)
{
	struct heartbeat *h = arg;
	long long every = (long long)(h->every_s * 1000), next = monotonic_ms_now() + every;
	char c = 0;

	while (!h->lost) {
		long long left = next - monotonic_ms_now();
		struct pollfd p = { .fd = h->wake[0], .events = POLLIN };

		if (left <= 0) {
			renew(h);
			next = monotonic_ms_now() + every;
			continue;
		}
		int n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && read(h->wake[0], &c, 1) != 0) {
			if (c == 'r')
				release(h);
			break;
		}
	}
	if (write(h->done[1], "d", 1) < 0) {
		/* a signal handler waiting for it gives up after its timeout */
	}
	return NULL;
}

static void close_pipes(struct heartbeat *h)
{
	for (int i = 0; i < 2; i++) {
		if (h->wake[i] >= 0)
			close(h->wake[i]);
		if (h->done[i] >= 0)
			close(h->done[i]);
	}
}

void heartbeat_start(struct heartbeat **out, const char *db, const char *trace, const char *holder,
		     double every_s, const char *program, bool quiet, void (*on_lost)(void *),
		     void *lost_arg)
{
	struct heartbeat *h;
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
	h->wake[0] = h->wake[1] = h->done[0] = h->done[1] = -1;
	int rc = pipe2(h->wake, O_CLOEXEC) < 0 || pipe2(h->done, O_CLOEXEC) < 0 ? errno : 0;

	if (rc == 0) {
		/* signals go to the program's own thread, never to the heartbeat */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &was);
		rc = pthread_create(&h->th, NULL, beat, h);
		pthread_sigmask(SIG_SETMASK, &was, NULL);
	}
	if (rc != 0) {
		if (!quiet)
			fprintf(stderr, "%s: warning: the run's lease is not renewed: cannot start a thread: %s\n",
				program, strerror(rc));
		close_pipes(h);
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
	if (write(h->wake[1], "s", 1) < 0) {
		/* a full pipe: the thread is told already */
	}
	pthread_join(h->th, NULL);
	close_pipes(h);
	store_free(h->st);
	free(h->db);
	free(h);
}

int heartbeat_release_signal_safe(struct heartbeat *h, int timeout_ms)
{
	struct pollfd p;

	if (!h || write(h->wake[1], "r", 1) != 1)
		return -1;
	p.fd = h->done[0];
	p.events = POLLIN;
	p.revents = 0;
	return poll(&p, 1, timeout_ms) == 1 ? 0 : -1;
}
