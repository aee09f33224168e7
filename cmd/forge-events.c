/*
 * forge-events - the event log of runs.
 *
 *   forge-events store        persist every event of the stream on stdin and pass
 *                             the whole stream through unchanged
 *   forge-events replay TRACE print a run's events in order, as they were stored
 *   forge-events replay TRACE --state [--from CHECKPOINT]
 *                             print the run's state rebuilt from a checkpoint and
 *                             the state.updated events after it (engine/snapshot.h)
 *   forge-events list         list traces with event counts and time span
 */
#include "app/cli.h"
#include "app/runview.h"
#include "app/term.h"
#include "core/forge.h"
#include "core/json.h"
#include "store/store.h"
#include "data/config.h"
#include "data/stream.h"
#include "engine/snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OPT_BATCH = 256, OPT_JSON, OPT_LIMIT, OPT_STATE, OPT_FROM };

static const struct cli_option options[] = {
	{ "batch", 0, "N", "store: events per transaction at most (default 1000)", OPT_BATCH },
	{ "json", 0, NULL, "list: JSON lines instead of a table", OPT_JSON },
	{ "limit", 'n', "N", "list: at most N traces, newest first (default 50)", OPT_LIMIT },
	{ "state", 0, NULL, "replay: print the run's state rebuilt from its newest checkpoint and the "
	  "state.updated events after it, instead of the events", OPT_STATE },
	{ "from", 0, "CHECKPOINT", "replay --state: start from this checkpoint (its id, as state.updated "
	  "events name it) instead of the newest", OPT_FROM },
	{ NULL, 0, NULL, NULL, 0 }
};

static const struct cli_spec spec = {
	.name = "forge-events",
	.synopsis = "store [--batch N]\nreplay TRACE [--state [--from CHECKPOINT]]\nlist [-n N] [--json]",
	.description = "The event log of forge runs, kept in the database.\n"
		       "  store   persist every event read on stdin and pass the whole stream through\n"
		       "          unchanged, so it can sit anywhere in a pipeline (idempotent by event id)\n"
		       "  replay  print the events of trace TRACE in order, byte for byte as stored;\n"
		       "          with --state, the state rebuilt from a snapshot (checkpoint) plus the\n"
		       "          state.updated events after it, as one JSON line\n"
		       "  list    list traces with their event counts and time span",
	.options = options,
	.extra_help = "Example:\n  forge-plan --task 'add --version' | forge-events store | forge-implement\n",
};

struct args {
	long batch;
	long limit;
	bool json, state;
	const char *from;
};

static int on_option(int id, const char *arg, void *payload)
{
	struct args *a = payload;

	switch (id) {
	case OPT_BATCH:
		return forge_parse_long(&a->batch, arg, 1, 1000000);
	case OPT_LIMIT:
		return forge_parse_long(&a->limit, arg, 1, 1000000);
	case OPT_JSON:
		a->json = true;
		return 0;
	case OPT_STATE:
		a->state = true;
		return 0;
	case OPT_FROM:
		a->from = arg;
		return 0;
	}
	return forge_error("unhandled option");
}

/* The database, and the configuration every program loads (--config, the
 * layers, FORGE_MAX_LINE_BYTES): *max_line (may be NULL) is the line limit
 * it sets, for store to take what the phases around it take. */
static int open_store(struct store **out, size_t *max_line, const struct cli_common *common, bool readonly)
{
	struct session ses;
	int status = session_open(&ses, common, SESSION_CONFIG | SESSION_STORE | (readonly ? SESSION_READONLY : 0),
				  jv_null());

	if (status)
		fprintf(stderr, "forge-events: %s\n", forge_last_error());
	else if (max_line)
		*max_line = (size_t)config_get_num(ses.cfg, "stream.max_line_bytes");
	*out = ses.store;
	ses.store = NULL;
	session_close(&ses);
	return status;
}

/* ---- store ---- */

struct batch {
	struct store *st;
	long max;
	long pending;           /* events in the open transaction */
	bool failed;
};

static int batch_commit(struct batch *b)
{
	if (!b->pending)
		return 0;
	b->pending = 0;
	if (store_commit(b->st) < 0) {
		b->failed = true;
		return -1;
	}
	return 0;
}

static void on_idle(void *payload)
{
	/* The writer is quiet: commit now rather than hold the write lock while waiting. */
	batch_commit(payload);
}

/* Persist one event: scanned (ev) when the stream read it without libjq,
 * else parsed (rec). */
static int persist(struct batch *b, const struct json_event *ev, jv rec, const char *line, size_t len)
{
	if (!b->pending && store_begin(b->st) < 0)
		goto fail;
	b->pending++;
	if ((ev ? store_event_put_scanned(b->st, ev, line, len, NULL)
		: store_event_put(b->st, rec, line, len, NULL)) < 0)
		goto fail;
	if (b->pending >= b->max && batch_commit(b) < 0)
		goto fail;
	return 0;
fail:
	b->failed = true;
	return 1;
}

static int on_event(jv rec, const char *line, size_t len, void *payload)
{
	return persist(payload, NULL, rec, line, len);
}

static int on_scanned_event(const struct json_event *ev, const char *line, size_t len, void *payload)
{
	return persist(payload, ev, jv_null(), line, len);
}

/* Text that is not JSON lines is not a stream to store: refused, where it
 * used to be taken as a task and dropped with exit 0. */
static int refuse_text(const char *text, size_t len, void *payload)
{
	(void)text;
	(void)len;
	(void)payload;
	return forge_error("not JSON lines: forge events store reads events and states, one JSON object "
			   "a line");
}

static int cmd_store(const struct cli_common *common, const struct args *a)
{
	struct stream_out out;
	struct stream_input in;
	struct batch b = { .max = a->batch };
	struct stream_options opt = {
		.forward_states = true,
		.validate = true,
		.on_record = on_event,
		.on_event = on_scanned_event,
		.on_idle = on_idle,
		.raw_hook = refuse_text,
		.payload = &b,
	};
	int status;

	/* Forwarded lines are flushed when the input pauses (stream_read):
	 * in between, 64 KiB writes instead of stdio's 4 KiB ones to a pipe. */
	static char outbuf[1 << 16];	/* glibc ignores the size without a buffer */

	setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
	stream_out_init(&out, stdout, "forge-events", NULL);
	status = open_store(&b.st, &opt.max_line, common, false);
	if (status)
		return status;
	/* (a stream of events: the log is copied beside the writer; should
	 * no thread start, the commits copy it as before) */
	(void)store_checkpoint_in_background(b.st);
	stream_input_init(&in);
	int rc = stream_read(&in, stdin, &out, &opt);
	if (!b.failed && batch_commit(&b) < 0)
		b.failed = true;
	if (b.failed) {
		fprintf(stderr, "forge-events: %s\n", forge_last_error());
		if (b.pending)
			store_rollback(b.st);
		status = FORGE_EXIT_DEPENDENCY;
	} else if (rc == -1) {
		status = cli_reject(&out, &in, forge_last_error());
	} else {
		status = FORGE_EXIT_OK;
	}
	stream_input_release(&in);
	store_free(b.st);
	return cli_out_status(&out, status);
}

/* ---- replay ---- */

struct replay {
	struct stream_out out;
	long printed;
};

static int print_line(const char *line, size_t len, void *payload)
{
	struct replay *r = payload;

	r->printed++;
	return stream_write_raw(&r->out, line, len) < 0 ? 1 : 0;
}

/*
 * The whole trace id for a unique prefix (store_resolve_trace()); several
 * matches are a usage error (2).  A trace nothing matches is left as typed:
 * replay then says "no events" with status 1, as grep would.  *out is
 * malloc'd.
 */
static int resolve(char **out, struct store *st, const char *typed)
{
	int rc = store_resolve_trace(out, st, typed);

	if (rc == STORE_TRACE_NONE) {
		*out = xstrdup(typed);
		return 0;
	}
	if (rc != 0)
		fprintf(stderr, "forge-events: %s\n", forge_last_error());
	return rc == 0 ? 0 : rc < 0 ? FORGE_EXIT_DEPENDENCY : FORGE_EXIT_USAGE;
}

static int cmd_replay(const struct cli_common *common, const char *typed)
{
	struct replay r = { .printed = 0 };
	struct store *st;
	char *trace = NULL;
	int status;

	stream_out_init(&r.out, stdout, "forge-events", NULL);
	status = open_store(&st, NULL, common, true);
	if (status)
		return status;
	if ((status = resolve(&trace, st, typed)) != 0) {
		store_free(st);
		return status;
	}
	int rc = store_events_foreach(st, trace, print_line, &r);
	if (rc < 0) {
		fprintf(stderr, "forge-events: %s\n", forge_last_error());
		status = FORGE_EXIT_DEPENDENCY;
	} else if (rc == 0 && r.printed == 0) {
		/* Nothing was printed: say so, the way grep does with status 1. */
		jv run;
		if (store_run_get(&run, st, trace) == 0 && jv_get_kind(run) == JV_KIND_NULL) {
			fprintf(stderr, "forge-events: no events for trace '%s'\n", trace);
			status = FORGE_EXIT_REJECTED;
		}
		jv_free(run);
	}
	free(trace);
	store_free(st);
	return cli_out_status(&r.out, status);
}

static int cmd_replay_state(const struct cli_common *common, const struct args *a, const char *typed)
{
	struct store *st;
	jv state = jv_null(), how = jv_null();
	char *trace = NULL;
	int status = open_store(&st, NULL, common, true), rc;

	if (status)
		return status;
	if ((status = resolve(&trace, st, typed)) != 0) {
		store_free(st);
		return status;
	}
	rc = state_rebuild(&state, &how, st, trace, a->from);
	if (rc < 0) {
		fprintf(stderr, "forge-events: %s\n", forge_last_error());
		status = FORGE_EXIT_DEPENDENCY;
	} else if (rc > 0) {
		if (a->from)
			fprintf(stderr, "forge-events: %s\n", forge_last_error());
		else
			fprintf(stderr, "forge-events: run '%s' has no checkpoint and no state.updated event\n", trace);
		status = FORGE_EXIT_REJECTED;
	} else {
		if (common->verbosity > 0)
			fprintf(stderr, "forge-events: from checkpoint %s (%s) and %.0f state.updated events after it\n",
				json_get_str(how, "checkpoint") ? json_get_str(how, "checkpoint") : "(none)",
				json_get_str(how, "phase") ? json_get_str(how, "phase") : "-",
				json_get_num(how, "events_applied", 0));
		if (json_write_line(stdout, state, false) < 0)
			status = FORGE_EXIT_PIPE;
		state = jv_null();
	}
	jv_free(state);
	jv_free(how);
	free(trace);
	store_free(st);
	return status;
}

/* ---- list ---- */

static int cmd_list(const struct cli_common *common, const struct args *a)
{
	struct stream_out out;
	struct store *st;
	jv traces;
	int status;

	stream_out_init(&out, stdout, "forge-events", NULL);
	status = open_store(&st, NULL, common, true);
	if (status)
		return status;
	if (store_traces(&traces, st, (int)a->limit) < 0) {
		fprintf(stderr, "forge-events: %s\n", forge_last_error());
		store_free(st);
		return FORGE_EXIT_DEPENDENCY;
	}
	bool table = !a->json;
	if (table && jv_array_length(jv_copy(traces)) > 0)
		printf("%-28s %7s  %-19s  %-19s  %s\n", "TRACE", "EVENTS", "FIRST", "LAST", "TASK");
	jv_array_foreach(traces, i, t) {
		if (table) {
			/* the task on one line, without its control characters,
			 * cut to 60 columns (never in a character) */
			char *task = xstrdup(json_get_str(t, "task") ? json_get_str(t, "task") : "");
			size_t len = strlen(task);
			char first[64], last[64];

			term_clean_line(task, len);
			/* local time, as forge history and forge show print it
			 * (--json keeps the stored UTC) */
			runview_local_time(first, sizeof first, json_get_str(t, "first_ts"), true);
			runview_local_time(last, sizeof last, json_get_str(t, "last_ts"), true);
			printf("%-28s %7.0f  %-19s  %-19s  %.*s\n", json_get_str(t, "trace_id"),
			       json_get_num(t, "events", 0), first, last, (int)term_cut(task, len, 60), task);
			free(task);
			jv_free(t);
		} else {
			stream_write(&out, t);
		}
	}
	jv_free(traces);
	store_free(st);
	return cli_out_status(&out, status);
}

/* SIGINT or SIGTERM: exit 130 as every forge program does (DESIGN.md's
 * exit table), not a death by the signal.  `store` loses the batch not yet
 * committed (--batch): the database keeps what was. */
static void on_signal(int sig)
{
	static const char msg[] = "forge-events: interrupted\n";

	(void)sig;
	if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
		/* nothing more to do */
	}
	_exit(FORGE_EXIT_INTERRUPTED);
}

int main(int argc, char **argv)
{
	struct cli_common common;
	struct args a = { .batch = 1000, .limit = 50 };
	int first = cli_parse(&common, &spec, argc, argv, on_option, &a);
	int status;

	cli_catch_interrupts(on_signal);

	if (first >= argc)
		cli_usage_error(&spec, "a command is needed: store, replay or list");
	const char *cmd = argv[first];
	int nargs = argc - first - 1;

	if (strcmp(cmd, "store") == 0 && nargs == 0) {
		status = cmd_store(&common, &a);
	} else if ((a.state || a.from) && strcmp(cmd, "replay")) {
		cli_usage_error(&spec, "--state and --from go with replay");
	} else if (a.from && !a.state) {
		cli_usage_error(&spec, "--from goes with --state");
	} else if (strcmp(cmd, "replay") == 0 && nargs == 1) {
		status = a.state ? cmd_replay_state(&common, &a, argv[first + 1]) : cmd_replay(&common, argv[first + 1]);
	} else if (strcmp(cmd, "list") == 0 && nargs == 0) {
		status = cmd_list(&common, &a);
	} else if (strcmp(cmd, "store") == 0 || strcmp(cmd, "replay") == 0 || strcmp(cmd, "list") == 0) {
		cli_usage_error(&spec, "wrong number of arguments for '%s'", cmd);
	} else {
		cli_usage_error(&spec, "unknown command '%s'", cmd);
	}
	return cli_finish("forge-events", status);
}
