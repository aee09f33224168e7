/*
 * forge-feedback - what production says about the code Forge shipped (the
 * production loop, seed 000 section 10.6).
 *
 *   forge-feedback production [FILE|-] [--create-task] [--phases LIST] [--json]
 *
 * Reads anomaly and error records as JSON lines (schemas/production.schema.json).
 * Every line is checked before anything is stored: one bad line and
 * nothing is.  Each record becomes a production.anomaly or production.error
 * event and an episodic memory (source "production", confidence 0.9) linked
 * to the run that shipped the code (memory.h, "PRODUCTION"); with
 * --create-task each also starts a `forge run` whose task quotes it.
 */
#include "app/cli.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/ids.h"
#include "core/json.h"
#include "data/stream.h"
#include "memory/memory.h"
#include "store/store.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LINE_MAX_BYTES (1u << 20)
#define RECORDS_MAX 10000
#define QUOTE_MAX (16u << 10)

enum { OPT_JSON = 256, OPT_CREATE_TASK, OPT_PHASES };

static const struct cli_option options[] = {
	{ "create-task", 0, NULL, "start a `forge run` for each record, its task quoting the record",
	  OPT_CREATE_TASK },
	{ "phases", 0, "LIST", "with --create-task: the phases those runs take (forge run --phases)",
	  OPT_PHASES },
	{ "json", 0, NULL, "one JSON line per record stored instead of text", OPT_JSON },
	{ NULL, 0, NULL, NULL, 0 }
};

static const struct cli_spec spec = {
	.name = "forge-feedback",
	.synopsis = "production [FILE|-] [--create-task [--phases LIST]] [--json]",
	.description =
		"Production feedback (the production loop): anomaly and error records, one JSON object\n"
		"per line, from FILE or stdin.\n"
		"  anomaly  {\"kind\":\"anomaly\",\"metric\":\"error_rate\",\"baseline\":0.01,\n"
		"            \"current\":0.09,\"deployment_id\":TRACE|COMMIT}  (or \"trace_id\")\n"
		"  error    {\"kind\":\"error\",\"stack\":\"…\",\"frequency\":42,\"first_seen\":\"2026-…Z\",\n"
		"            \"affected_users\":7,\"related_commit\":\"abc1234\"}\n"
		"The seed's camelCase names (deploymentId, relatedCommit, …) are accepted, and kind may be\n"
		"left out where metric (an anomaly) or stack (an error) says which: the record is checked\n"
		"against schemas/production.schema.json after that.  Each record is stored as an event\n"
		"of the run that shipped the code (found by trace id or commit) and as a production\n"
		"memory (confidence 0.9) that names the run's task, commit and files, so the next run\n"
		"on that code recalls it.  All lines are checked first: a bad line stores nothing.",
	.options = options,
	.extra_help = "Exit status: 0 stored, 2 usage or bad input (nothing stored), 5 database failure;\n"
		      "with --create-task, the status of the first run that did not complete; 130\n"
		      "interrupted (SIGINT/SIGTERM: the run it started is stopped, paused, first).\n",
};

struct args {
	bool json, create_task;
	const char *phases;
};

struct record {
	long line;
	jv rec;
	char *trace;            /* the run it is about, or NULL */
	char memory_id[ULID_LEN + 1];
	char event_id[ULID_LEN + 1];
	char event_trace[ULID_LEN + 1];
};

static int on_option(int id, const char *arg, void *payload)
{
	struct args *a = payload;

	switch (id) {
	case OPT_JSON: a->json = true; return 0;
	case OPT_CREATE_TASK: a->create_task = true; return 0;
	case OPT_PHASES: a->phases = arg; return 0;
	}
	return forge_error("unhandled option");
}

/* Read and check every record; 0, or FORGE_EXIT_USAGE after a message. */
static int read_records(struct record **out, size_t *n, FILE *f, const char *name)
{
	struct record *r = NULL;
	char *line = NULL;
	size_t cap = 0, count = 0;
	ssize_t len;
	long lineno = 0;
	int status = 0;

	while (status == 0 && (len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (strspn(line, " \t\r\n") == (size_t)len)
			continue;
		if ((size_t)len > LINE_MAX_BYTES) {
			fprintf(stderr, "forge-feedback: %s:%ld: the line is %zd bytes, more than %u\n", name,
				lineno, len, LINE_MAX_BYTES);
			status = FORGE_EXIT_USAGE;
			break;
		}
		if (count == RECORDS_MAX) {
			fprintf(stderr, "forge-feedback: %s:%ld: more than %d records: split the input\n", name,
				lineno, RECORDS_MAX);
			status = FORGE_EXIT_USAGE;
			break;
		}
		jv rec = json_parse(line, (size_t)len);

		if (!jv_is_valid(rec)) {
			char *msg = json_invalid_msg(rec);

			fprintf(stderr, "forge-feedback: %s:%ld: not JSON: %s\n", name, lineno, msg);
			free(msg);
			status = FORGE_EXIT_USAGE;
			break;
		}
		rec = production_normalise(rec);
		if (production_check(rec) < 0) {
			fprintf(stderr, "forge-feedback: %s:%ld: %s\n", name, lineno, forge_last_error());
			jv_free(rec);
			status = FORGE_EXIT_USAGE;
			break;
		}
		r = xrealloc(r, (count + 1) * sizeof *r);
		memset(&r[count], 0, sizeof r[count]);
		r[count].line = lineno;
		r[count++].rec = rec;
	}
	if (status == 0 && ferror(f)) {
		fprintf(stderr, "forge-feedback: %s: %s\n", name, strerror(errno));
		status = FORGE_EXIT_USAGE;
	}
	if (status == 0 && count == 0) {
		fprintf(stderr, "forge-feedback: %s: no records (one JSON object per line)\n", name);
		status = FORGE_EXIT_USAGE;
	}
	free(line);
	*out = r;
	*n = count;
	return status;
}

static void records_free(struct record *r, size_t n)
{
	for (size_t i = 0; r && i < n; i++) {
		jv_free(r[i].rec);
		free(r[i].trace);
	}
	free(r);
}

/* The event of one record, in the run it is about (else a trace of its own). */
static int store_event(struct record *r, struct store *st)
{
	struct stream_out out;
	const char *kind = json_get_str(r->rec, "kind");
	jv payload, ev;
	int rc;

	if (r->trace && strlen(r->trace) <= ULID_LEN)
		memcpy(r->event_trace, r->trace, strlen(r->trace) + 1);
	else
		ulid_new(r->event_trace);
	stream_out_init(&out, stdout, "forge-feedback", NULL);
	stream_out_set_trace(&out, r->trace ? r->trace : r->event_trace);
	payload = json_set(jv_copy(r->rec), "run", json_str_or_null(r->trace));
	payload = json_set(payload, "memory_id", jv_string(r->memory_id));
	ev = stream_event_new(&out, strcmp(kind, "anomaly") == 0 ? "production.anomaly" : "production.error",
			      payload);
	snprintf(r->event_id, sizeof r->event_id, "%s", json_get_str(ev, "id"));
	rc = store_event_put(st, ev, NULL, 0, NULL);
	jv_free(ev);
	return rc;
}

static int store_records(struct record *r, size_t n, struct memory *m, struct store *st)
{
	for (size_t i = 0; i < n; i++) {
		if (production_find_run(&r[i].trace, st, r[i].rec) < 0 ||
		    memory_record_production(r[i].memory_id, m, jv_copy(r[i].rec), r[i].trace) < 0 ||
		    store_event(&r[i], st) < 0) {
			fprintf(stderr, "forge-feedback: line %ld: %s (the %zu record%s before it %s stored)\n",
				r[i].line, forge_last_error(), i, i == 1 ? "" : "s", i == 1 ? "is" : "are");
			return FORGE_EXIT_DEPENDENCY;
		}
	}
	return 0;
}

static void report(const struct record *r, size_t n, bool json)
{
	for (size_t i = 0; i < n; i++) {
		const char *kind = json_get_str(r[i].rec, "kind");

		if (json) {
			jv o = json_set(jv_object(), "line", jv_number((double)r[i].line));

			o = json_set(o, "kind", jv_string(kind));
			o = json_set(o, "run", json_str_or_null(r[i].trace));
			o = json_set(o, "memory_id", jv_string(r[i].memory_id));
			o = json_set(o, "event_id", jv_string(r[i].event_id));
			o = json_set(o, "trace_id", jv_string(r[i].trace ? r[i].trace : r[i].event_trace));
			json_write_line(stdout, o, false);
			continue;
		}
		printf("line %ld: production %s remembered as %s; ", r[i].line, kind, r[i].memory_id);
		if (r[i].trace)
			printf("linked to run %s\n", r[i].trace);
		else
			printf("no Forge run shipped it (event trace %s)\n", r[i].event_trace);
	}
	fflush(stdout);
}

/* The task of the run a record opens: what happened, and the record itself. */
static char *task_of(const struct record *r, struct memory *m)
{
	struct buf b;
	jv mem = jv_null();
	char *quote = json_dumps(jv_copy(r->rec), false);

	buf_init(&b, 0);
	if (memory_get(&mem, m, r->memory_id) == 0 && json_get_str(mem, "content"))
		buf_addf(&b, "%s\n\n", json_get_str(mem, "content"));
	buf_adds(&b, "Find the cause of this production ");
	buf_adds(&b, json_get_str(r->rec, "kind"));
	buf_adds(&b, " in the code and fix it, with a test that would have caught it.\n\n"
		     "The record, as production reported it:\n");
	buf_add(&b, quote, strlen(quote) > QUOTE_MAX ? QUOTE_MAX : strlen(quote));
	if (strlen(quote) > QUOTE_MAX)
		buf_adds(&b, " …(cut)");
	buf_addch(&b, '\n');
	free(quote);
	jv_free(mem);
	return buf_detach(&b, NULL);
}

/* The forge-supervisor that start_run() waits for, or 0. */
static volatile pid_t running_run;

/* SIGINT or SIGTERM: the run --create-task started is stopped first (the
 * supervisor pauses it: `forge resume` goes on), then exit 130 as every
 * forge program does, not a death by the signal that leaves it running. */
static void on_signal(int sig)
{
	static const char msg[] = "forge-feedback: interrupted\n";
	pid_t pid = running_run;
	int st;

	if (pid > 0 && kill(pid, sig == SIGINT ? SIGINT : SIGTERM) == 0)
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
		/* nothing more to do */
	}
	_exit(FORGE_EXIT_INTERRUPTED);
}

/* `forge-supervisor run TASK` beside this program; its exit status. */
static int start_run(const char *task, const struct cli_common *c, const struct args *a)
{
	const char *argv[32];
	char *dir = cli_self_dir(), path[4096];
	int n = 0, st;
	pid_t pid;

	if (!dir || (size_t)snprintf(path, sizeof path, "%s/forge-supervisor", dir) >= sizeof path) {
		free(dir);
		fprintf(stderr, "forge-feedback: cannot find forge-supervisor beside this program\n");
		return FORGE_EXIT_DEPENDENCY;
	}
	free(dir);
	argv[n++] = "forge-supervisor";
	argv[n++] = "run";
	n += cli_common_argv(argv + n, 24, c, true);
	if (a->phases) {
		argv[n++] = "--phases";
		argv[n++] = a->phases;
	}
	argv[n++] = "--";
	argv[n++] = task;
	argv[n] = NULL;
	fflush(NULL);
	/* no signal between the fork and running_run: on_signal would miss the run */
	sigset_t stop, was;

	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, &was);
	pid = fork();
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &was, NULL);
		execv(path, (char *const *)argv);
		fprintf(stderr, "forge-feedback: %s: %s\n", path, strerror(errno));
		_exit(FORGE_EXIT_DEPENDENCY);
	}
	int fork_errno = errno;

	running_run = pid > 0 ? pid : 0;
	sigprocmask(SIG_SETMASK, &was, NULL);
	if (pid < 0) {
		fprintf(stderr, "forge-feedback: fork: %s\n", strerror(fork_errno));
		return FORGE_EXIT_DEPENDENCY;
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			running_run = 0;
			return FORGE_EXIT_DEPENDENCY;
		}
	running_run = 0;
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

static int create_tasks(const struct record *r, size_t n, struct memory *m, const struct cli_common *c,
			const struct args *a)
{
	int first_bad = 0;

	for (size_t i = 0; i < n; i++) {
		char *task = task_of(&r[i], m);
		int st = start_run(task, c, a);

		free(task);
		if (st && !first_bad)
			first_bad = st;
	}
	return first_bad;
}

int main(int argc, char **argv)
{
	struct cli_common common;
	struct args a = { 0 };
	struct record *recs = NULL;
	struct memory_cli c = { 0 };
	size_t n = 0;
	int first = cli_parse(&common, &spec, argc, argv, on_option, &a), status;
	const char *name = "stdin";
	FILE *in = stdin;

	signal(SIGPIPE, SIG_IGN);
	cli_catch_interrupts(on_signal);
	if (first >= argc)
		cli_usage_error(&spec, "a command is needed: production");
	if (strcmp(argv[first], "production"))
		cli_usage_error(&spec, "unknown command '%s' (there is: production)", argv[first]);
	if (argc - first > 2)
		cli_usage_error(&spec, "production takes one FILE (or - for stdin)");
	if (a.phases && !a.create_task)
		cli_usage_error(&spec, "--phases goes with --create-task");
	if (argc - first == 2 && strcmp(argv[first + 1], "-")) {
		name = argv[first + 1];
		in = fopen(name, "r");
		if (!in) {
			fprintf(stderr, "forge-feedback: %s: %s\n", name, strerror(errno));
			return cli_finish("forge-feedback", FORGE_EXIT_USAGE);
		}
	}
	status = read_records(&recs, &n, in, name);
	if (in != stdin)
		fclose(in);
	if (status == 0 && memory_cli_open(&status, &c, &common) < 0)
		fprintf(stderr, "forge-feedback: %s\n", forge_last_error());
	else if (status == 0 && (status = store_records(recs, n, c.m, c.st)) == 0) {
		report(recs, n, a.json);
		if (a.create_task)
			status = create_tasks(recs, n, c.m, &common, &a);
	}
	memory_cli_close(&c);
	records_free(recs, n);
	return cli_finish("forge-feedback", status);
}
