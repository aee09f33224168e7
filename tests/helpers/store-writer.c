/*
 * store-writer - persist the event lines on stdin with lib/store, in batches,
 * and report the rate.  A test and benchmark helper: several of them started
 * at once on one database exercise concurrent writers.
 *
 *   store-writer --db PATH [--batch N] [--quiet] <events.jsonl
 *
 * Lines are read as `forge-events store` reads them (json_event_scan(),
 * libjq only for a line the scanner leaves to it), and as there the WAL is
 * copied into the database by a thread of its own
 * (store_checkpoint_in_background): the time in lib/store is the writer's,
 * the CPU time of the process counts both.
 * Prints one line on stdout, the whole rate (reading, parsing, storing) and
 * the rate of the time spent inside lib/store alone:
 *   store-writer: N events (M new) in S s: R events/s (batch B); in lib/store S2 s: R2 events/s
 * Exit 0, 2 on usage or a malformed line, 5 when the database fails.
 */
#include "core/forge.h"
#include "core/json.h"
#include "core/jsonscan.h"
#include "store/store.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct args {
	const char *db;
	long batch;
	bool quiet;
};

static void usage(void)
{
	fputs("usage: store-writer --db PATH [--batch N] [--quiet] <events.jsonl\n", stderr);
	exit(FORGE_EXIT_USAGE);
}

static void parse_args(struct args *out, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "batch", required_argument, NULL, 'b' },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	*out = (struct args){ .batch = 1000 };
	while ((c = getopt_long(argc, argv, "d:b:q", opts, NULL)) != -1) {
		if (c == 'd') {
			out->db = optarg;
		} else if (c == 'b') {
			if (forge_parse_long(&out->batch, optarg, 1, 10000000) < 0) {
				fprintf(stderr, "store-writer: --batch: %s\n", forge_last_error());
				usage();
			}
		} else if (c == 'q') {
			out->quiet = true;
		} else {
			usage();
		}
	}
	if (!out->db || optind != argc)
		usage();
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Seconds spent inside lib/store, apart from reading and parsing. */
static double store_secs;

/*
 * Store one line (without its newline); 2 on a bad line, 5 on the db.
 * The way `forge-events store` does: a line the scanner reads goes to the
 * store without a jv (store_event_put_scanned); libjq parses the others.
 */
static int store_line(struct store *st, const char *line, size_t len, long lineno)
{
	struct json_event scanned;
	jv ev;
	int rc = 0;
	double t0;

	if (json_event_scan(&scanned, line, len)) {
		t0 = now_s();
		rc = store_event_put_scanned(st, &scanned, line, len, NULL);
		store_secs += now_s() - t0;
		if (rc < 0) {
			fprintf(stderr, "store-writer: line %ld: %s\n", lineno, forge_last_error());
			return FORGE_EXIT_DEPENDENCY;
		}
		return 0;
	}
	ev = json_parse(line, len);
	if (!jv_is_valid(ev)) {
		char *msg = json_invalid_msg(ev);

		fprintf(stderr, "store-writer: line %ld: %s\n", lineno, msg);
		free(msg);
		return FORGE_EXIT_USAGE;
	}
	t0 = now_s();
	rc = store_event_put(st, ev, line, len, NULL);   /* queued: new ones are counted at the end */
	store_secs += now_s() - t0;
	if (rc < 0) {
		fprintf(stderr, "store-writer: line %ld: %s\n", lineno, forge_last_error());
		rc = FORGE_EXIT_DEPENDENCY;
	}
	jv_free(ev);
	return rc;
}

/* begin or commit, timed into store_secs; 5 with a message on failure. */
static int timed(int (*op)(struct store *), struct store *st)
{
	double t0 = now_s();
	int rc = op(st);

	store_secs += now_s() - t0;
	if (rc < 0) {
		fprintf(stderr, "store-writer: %s\n", forge_last_error());
		return FORGE_EXIT_DEPENDENCY;
	}
	return 0;
}

/* Read stdin to the end, committing every a->batch events. */
static int run(struct store *st, const struct args *a, long *n_out, long *new_out)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	long in_batch = 0;
	int rc = 0;

	while (rc == 0 && (len = getline(&line, &cap, stdin)) != -1) {
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len == 0)
			continue;
		if (in_batch == 0 && (rc = timed(store_begin, st)) != 0)
			break;
		rc = store_line(st, line, (size_t)len, *n_out + 1);
		(*n_out)++;
		if (rc == 0 && ++in_batch == a->batch) {
			in_batch = 0;
			rc = timed(store_commit, st);
		}
	}
	if (rc == 0 && in_batch > 0)
		rc = timed(store_commit, st);
	if (rc != 0)
		store_rollback(st);
	else
		*new_out = store_events_added(st);
	free(line);
	return rc;
}

int main(int argc, char **argv)
{
	struct args a;
	struct store *st = NULL;
	long n = 0, added = 0;
	double t0, secs;
	int rc;

	parse_args(&a, argc, argv);
	if (store_open(&st, a.db) < 0) {
		fprintf(stderr, "store-writer: %s\n", forge_last_error());
		return FORGE_EXIT_DEPENDENCY;
	}
	(void)store_checkpoint_in_background(st);	/* as forge-events store does */
	t0 = now_s();
	rc = run(st, &a, &n, &added);
	secs = now_s() - t0;
	store_free(st);
	if (rc == 0 && !a.quiet)
		printf("store-writer: %ld events (%ld new) in %.3f s: %.0f events/s (batch %ld);"
		       " in lib/store %.3f s: %.0f events/s\n", n, added, secs,
		       secs > 0 ? (double)n / secs : 0.0, a.batch, store_secs,
		       store_secs > 0 ? (double)n / store_secs : 0.0);
	return rc;
}
