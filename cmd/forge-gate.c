/*
 * forge-gate - human gates of paused runs: list them, approve or reject.
 *
 *   forge gate list [TRACE] [--all] [--json]
 *   forge gate approve ID [--note TEXT]   (ID: a unique prefix will do)
 *   forge gate reject ID [--note TEXT]
 *
 * An approval with a note is also stored as a procedural memory (what the
 * human wanted changed), so later runs learn from it.
 */
#include "app/cli.h"
#include "core/buf.h"
#include "app/gatedecide.h"
#include "app/runview.h"
#include "data/config.h"
#include "core/forge.h"
#include "engine/gates.h"
#include "core/json.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_NOTE = 256, OPT_ALL, OPT_JSON };

static const struct cli_option options[] = {
	{ "note", 0, "TEXT", "approve/reject: what the human says (an approval's note is remembered)", OPT_NOTE },
	{ "all", 0, NULL, "list: decided gates too", OPT_ALL },
	{ "json", 0, NULL, "list: JSON lines", OPT_JSON },
	{ NULL, 0, NULL, NULL, 0 }
};

static const struct cli_spec spec = {
	.name = "forge-gate",
	.synopsis = "list [TRACE] [--all] [--json]\napprove ID [--note TEXT]\nreject ID [--note TEXT]",
	.description = "Human gates of forge runs.  A run that waits at a gate is paused (exit 4);\n"
		       "decide the gate here, then continue the run with `forge resume TRACE`.\n"
		       "A run asking at its own terminal sees the decision and goes on (or stops) by itself.",
	.options = options,
};

struct args {
	const char *note;
	bool all, json;
};

static int on_option(int id, const char *arg, void *payload)
{
	struct args *a = payload;

	switch (id) {
	case OPT_NOTE: a->note = arg; return 0;
	case OPT_ALL: a->all = true; return 0;
	case OPT_JSON: a->json = true; return 0;
	}
	return forge_error("unhandled option");
}

static int list(struct store *st, const char *trace, const struct args *a)
{
	jv gates;

	if (gate_list(&gates, st, trace, !a->all) < 0) {
		fprintf(stderr, "forge-gate: %s\n", forge_last_error());
		return FORGE_EXIT_DEPENDENCY;
	}
	jv_array_foreach(gates, i, g) {
		if (a->json) {
			json_write_line(stdout, g, false);
			continue;
		}
		printf("%s  %-22s %-9s %s  run %s\n", json_get_str(g, "id"), json_get_str(g, "gate"),
		       json_get_str(g, "status"), json_get_str(g, "prompt"), json_get_str(g, "trace_id"));
		jv_free(g);
	}
	jv_free(gates);
	return FORGE_EXIT_OK;
}

/*
 * The whole gate id for what a person typed: the id itself, else the start
 * of exactly one gate's id, as a trace id may be shortened
 * (store_resolve_trace()).  0 with *out malloc'd, else the exit status
 * after the message: FORGE_EXIT_USAGE when no gate or several match (an
 * unknown id is bad input, as everywhere), FORGE_EXIT_DEPENDENCY on a
 * database error.
 */
static int resolve_gate(char **out, struct store *st, const char *typed)
{
	enum { MAX_NAMED = 8 };
	jv gates, found = jv_array();
	struct buf names = BUF_INIT;
	size_t n = strlen(typed);
	int rc = FORGE_EXIT_USAGE, count;

	*out = NULL;
	if (gate_list(&gates, st, NULL, false) < 0) {
		fprintf(stderr, "forge-gate: %s\n", forge_last_error());
		jv_free(found);
		return FORGE_EXIT_DEPENDENCY;
	}
	jv_array_foreach(gates, i, g) {
		const char *id = json_get_str(g, "id");

		if (id && !*out && strcmp(id, typed) == 0)
			*out = xstrdup(id);   /* a whole id, also the start of others */
		else if (id && n > 0 && strncmp(id, typed, n) == 0)
			found = jv_array_append(found, jv_string(id));
		jv_free(g);
	}
	jv_free(gates);
	count = jv_array_length(jv_copy(found));
	if (!*out && count == 1) {
		jv id = jv_array_get(jv_copy(found), 0);
		*out = xstrdup(jv_string_value(id));
		jv_free(id);
	}
	if (*out) {
		rc = FORGE_EXIT_OK;
	} else if (count == 0) {
		fprintf(stderr, "forge-gate: no gate '%s' (`forge gate list --all` lists them; a unique "
			"prefix of an id will do)\n", typed);
	} else {
		jv_array_foreach(found, i, id) {
			if (i < MAX_NAMED)
				buf_addf(&names, "\n  %s", jv_string_value(id));
			jv_free(id);
		}
		fprintf(stderr, "forge-gate: '%s' matches %s%d gates; give more of the gate id:%s%s\n", typed,
			count > MAX_NAMED ? "more than " : "", count > MAX_NAMED ? MAX_NAMED : count, names.buf,
			count > MAX_NAMED ? "\n  …" : "");
		buf_release(&names);
	}
	jv_free(found);
	return rc;
}

static int decide(struct store *st, const struct config *cfg, const char *typed, bool approve, const char *note)
{
	jv gate;
	char *id = NULL;

	if (note && !json_utf8_valid(note, strlen(note))) {
		fprintf(stderr, "forge-gate: the note is not valid UTF-8 (a terminal in another encoding?); "
			"nothing was decided\n");
		return FORGE_EXIT_USAGE;
	}
	int status = resolve_gate(&id, st, typed);

	if (status)
		return status;
	int rc = gatedecide_human(&gate, st, cfg, "forge-gate", id, approve, note);

	if (rc < 0) {
		/* (GATE_REFUSED here: decided already, the gate's own "no") */
		fprintf(stderr, "forge-gate: %s\n", forge_last_error());
		free(id);
		return rc == GATE_REFUSED ? FORGE_EXIT_REJECTED : FORGE_EXIT_DEPENDENCY;
	}
	char *next = gatedecide_next(st, gate, approve);

	printf("%s %s; %s\n", approve ? "approved" : "rejected", id, next);
	free(next);
	free(id);
	jv_free(gate);
	return FORGE_EXIT_OK;
}

int main(int argc, char **argv)
{
	struct cli_common common;
	struct args a = { 0 };
	int first = cli_parse(&common, &spec, argc, argv, on_option, &a);
	struct session ses;
	int status;

	if (first >= argc)
		cli_usage_error(&spec, "a command is needed: list, approve or reject");
	const char *cmd = argv[first];
	int nargs = argc - first - 1;
	bool is_decide = strcmp(cmd, "approve") == 0 || strcmp(cmd, "reject") == 0;
	if (strcmp(cmd, "list") == 0 ? nargs > 1 : !is_decide)
		cli_usage_error(&spec, "unknown command '%s'", cmd);
	if (is_decide && nargs != 1)
		cli_usage_error(&spec, "%s needs one gate id", cmd);

	status = session_open(&ses, &common, SESSION_CONFIG | SESSION_STORE |
			      (is_decide ? SESSION_EXISTING : SESSION_READONLY), jv_null());
	if (status) {
		fprintf(stderr, "forge-gate: %s\n", forge_last_error());
		return cli_finish("forge-gate", status);
	}
	if (is_decide)
		status = decide(ses.store, ses.cfg, argv[first + 1], strcmp(cmd, "approve") == 0, a.note);
	else if (!nargs)
		status = list(ses.store, NULL, &a);
	else {
		char *trace = NULL;   /* a unique prefix of a trace id */
		status = runview_resolve(&trace, ses.store, "forge-gate", argv[first + 1]);
		if (!status)
			status = list(ses.store, trace, &a);
		free(trace);
	}
	session_close(&ses);
	return cli_finish("forge-gate", status);
}
