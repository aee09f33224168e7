/*
 * forge-findings - review and test findings, and dismissing them (the human
 * feedback loop, seed 000 section 10.5).
 *
 *   forge-findings list [--trace T] [--all] [-n N] [--json]
 *   forge-findings dismiss ID [--reason TEXT] [--json]
 *   forge-findings add   (JSON objects on stdin, one per line: for tests and tools;
 *                         an empty stdin, or a terminal, is bad input: exit 2)
 *
 * dismiss marks the finding, lowers the confidence of the semantic memories
 * that match it by 0.2, and stores the dismissal as a semantic memory
 * (confidence 0.7).  The findings are the store's (store/findings.h), on
 * SQLite or PostgreSQL; where the memory cannot be opened on PostgreSQL
 * (not ported there yet), dismiss marks the finding and records the event
 * only, with a warning.  Exit status: 0 done; 1 no such finding; 2 usage or
 * bad input; 5 the database failed.
 */
#include "app/cli.h"
#include "app/runview.h"
#include "app/term.h"
#include "core/forge.h"
#include "core/ids.h"
#include "core/json.h"
#include "memory/memory.h"
#include "store/db.h"
#include "store/findings.h"
#include "store/store.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OPT_JSON = 256, OPT_TRACE, OPT_ALL, OPT_REASON };

static const struct cli_option options[] = {
	{ "json", 0, NULL, "JSON lines instead of text", OPT_JSON },
	{ "trace", 0, "TRACE", "list: only the findings of this run (a unique prefix will do)", OPT_TRACE },
	{ "all", 0, NULL, "list: dismissed findings too", OPT_ALL },
	{ "limit", 'n', "N", "list: at most N, newest first (default 50)", 'n' },
	{ "reason", 0, "TEXT", "dismiss: why (learnt as a memory)", OPT_REASON },
	{ NULL, 0, NULL, NULL, 0 }
};

static const struct cli_spec spec = {
	.name = "forge-findings",
	.synopsis = "list [--trace TRACE] [--all] [-n N] [--json]\ndismiss ID [--reason TEXT] [--json]\n"
		    "add < findings.jsonl",
	.description = "Findings of forge-review and forge-test, and the human feedback on them.\n"
		       "  dismiss  mark a finding as wrong: the memories that produced it lose confidence\n"
		       "           and the dismissal is remembered",
	.options = options,
	.extra_help = "Exit status: 0 done, 1 no such finding, 2 usage or bad input, 5 database failure.\n",
};

struct args {
	bool json, all;
	const char *trace, *reason;
	long limit;
};

static int on_option(int id, const char *arg, void *payload)
{
	struct args *a = payload;

	switch (id) {
	case OPT_JSON: a->json = true; return 0;
	case OPT_TRACE: a->trace = arg; return 0;
	case OPT_ALL: a->all = true; return 0;
	case 'n': return forge_parse_long(&a->limit, arg, 1, 100000000);
	case OPT_REASON: a->reason = arg; return 0;
	}
	return forge_error("unhandled option");
}

static int fail(int status)
{
	fprintf(stderr, "forge-findings: %s\n", forge_last_error());
	return status;
}

static int cmd_list(struct session *c, const struct args *a)
{
	char *trace = NULL;
	jv out;
	int rc;

	/* --trace takes a unique prefix of a run's id, like every TRACE a person
	 * types; a whole id is taken as it is (findings added outside a run
	 * have a trace no run has) */
	if (a->trace && strlen(a->trace) < ULID_LEN &&
	    (rc = runview_resolve(&trace, c->store, "forge-findings", a->trace)) != 0)
		return rc;
	if (a->trace && !trace)
		trace = xstrdup(a->trace);
	rc = findings_list(&out, c->store, trace, a->all, (int)a->limit);
	free(trace);
	if (rc < 0)
		return fail(FORGE_EXIT_DEPENDENCY);
	jv_array_foreach(out, i, f) {
		if (a->json) {
			json_write_line(stdout, f, false);
			continue;
		}
		/* a finding's message and file come from a model, a linter or
		 * whoever added it: never their escape sequences (term_safe) */
		f = term_safe(term_quote_paths(f));
		const char *file = json_get_str(f, "file");

		printf("%s  %-8s %-11s %s:%.0f  %s%s\n", json_get_str(f, "id"), json_get_str(f, "severity"),
		       json_get_str(f, "category"), file ? file : "-", json_get_num(f, "line", 0),
		       json_get_str(f, "message"), json_get_bool(f, "dismissed", false) ? "  [dismissed]" : "");
		jv_free(f);
		(void)i;
	}
	jv_free(out);
	return 0;
}

/* memory_dismiss_finding() with the configured memory: the mark, the
 * feedback.human_dismissed event and what the memory learns from it. */
static int dismiss(jv *out, struct session *c, const char *id, const char *reason, int *status)
{
	struct memory_options mo;
	struct memory *m = NULL;
	int rc;

	memory_options_init(&mo);
	memory_options_from_config(&mo, c->cfg);
	if (memory_open(&m, c->store, &mo) < 0) {
		*status = FORGE_EXIT_USAGE;
		return -1;
	}
	rc = memory_dismiss_finding(out, m, id, reason);
	memory_free(m);
	return rc;
}

static int cmd_dismiss(struct session *c, const struct args *a, const char *id)
{
	jv out;
	int status = FORGE_EXIT_DEPENDENCY;
	int rc = dismiss(&out, c, id, a->reason, &status);

	if (rc < 0)
		return fail(status);
	if (rc == MEMORY_NOT_FOUND) {
		fprintf(stderr, "forge-findings: no finding '%s'\n", id);
		return FORGE_EXIT_REJECTED;
	}
	if (a->json) {
		json_write_line(stdout, out, false);
		return 0;
	}
	if (json_get_bool(out, "already_dismissed", false)) {
		printf("%s was already dismissed\n", id);
	} else {
		jv low = json_get(out, "lowered");

		printf("dismissed %s; remembered as %s; lowered %d related memor%s\n", id,
		       json_get_str(out, "memory_id"), jv_array_length(jv_copy(low)),
		       jv_array_length(jv_copy(low)) == 1 ? "y" : "ies");
		jv_free(low);
	}
	jv_free(out);
	return 0;
}

/*
 * add: the blank lines stdin begins with, read, so the first finding is
 * what comes next; -1 when stdin holds no finding at all (empty, white
 * space only) -- found before the database is opened, so nothing is made.
 */
static long skip_blank_lines(void)
{
	long lines = 0;
	int ch;

	while ((ch = getchar()) != EOF) {
		if (ch == '\n') {
			lines++;
		} else if (!strchr(" \t\r", ch)) {
			ungetc(ch, stdin);
			return lines;
		}
	}
	return -1;
}

/* lineno: the lines of stdin already read (skip_blank_lines). */
static int cmd_add(struct session *c, long lineno)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int status = 0;

	while (status == 0 && (len = getline(&line, &cap, stdin)) >= 0) {
		char id[ULID_LEN + 1];

		lineno++;
		if (strspn(line, " \t\r\n") == (size_t)len)
			continue;
		jv f = json_parse(line, (size_t)len);

		if (!jv_is_valid(f)) {
			char *msg = json_invalid_msg(f);

			fprintf(stderr, "forge-findings: line %ld: not JSON: %s\n", lineno, msg);
			free(msg);
			status = FORGE_EXIT_USAGE;
		} else if (findings_put(id, c->store, f) < 0) {
			fprintf(stderr, "forge-findings: line %ld: %s\n", lineno, forge_last_error());
			status = strstr(forge_last_error(), "database") ? FORGE_EXIT_DEPENDENCY : FORGE_EXIT_USAGE;
		} else {
			printf("%s\n", id);
		}
	}
	free(line);
	return status;
}

int main(int argc, char **argv)
{
	struct cli_common common;
	struct args a = { .limit = 50 };
	struct session c;
	int first = cli_parse(&common, &spec, argc, argv, on_option, &a), status;

	signal(SIGPIPE, SIG_IGN);
	if (first >= argc)
		cli_usage_error(&spec, "a command is needed: list, dismiss or add");
	const char *cmd = argv[first++];

	if (strcmp(cmd, "list") && strcmp(cmd, "dismiss") && strcmp(cmd, "add"))
		cli_usage_error(&spec, "unknown command '%s'", cmd);
	if (!strcmp(cmd, "dismiss") && argc - first != 1)
		cli_usage_error(&spec, "dismiss needs exactly one finding ID");
	if (strcmp(cmd, "dismiss") && argc - first != 0)
		cli_usage_error(&spec, "%s takes no operands", cmd);
	/* (add with nothing to add: before, exit 0, nothing said, and a
	 * database made for it) */
	long blank = 0;
	if (!strcmp(cmd, "add") && (isatty(STDIN_FILENO) || (blank = skip_blank_lines()) < 0)) {
		fprintf(stderr, "forge-findings: add: no finding given: it reads one JSON object a line from "
			"standard input (forge findings add < findings.jsonl)%s\n",
			isatty(STDIN_FILENO) ? ", not from a terminal" : ", which was empty");
		return cli_finish("forge-findings", FORGE_EXIT_USAGE);
	}
	status = session_open(&c, &common, SESSION_CONFIG | SESSION_STORE |
			      (!strcmp(cmd, "list") ? SESSION_READONLY : !strcmp(cmd, "dismiss") ?
			       SESSION_EXISTING : 0), jv_null());
	if (status)
		return cli_finish("forge-findings", fail(status));
	if (!strcmp(cmd, "list"))
		status = cmd_list(&c, &a);
	else if (!strcmp(cmd, "dismiss"))
		status = cmd_dismiss(&c, &a, argv[first]);
	else
		status = cmd_add(&c, blank);
	session_close(&c);
	return cli_finish("forge-findings", status);
}
