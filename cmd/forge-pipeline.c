/*
 * forge-pipeline - pipelines as data (`forge pipeline`): check one, draw it,
 * list those found by name.
 *
 *   forge pipeline check PIPELINE [--json]   every error, each naming its node; exit 2 on any
 *   forge pipeline show PIPELINE [--dot|--json]  layers, parallel nodes, bounces, gates
 *   forge pipeline list [--json]             the built-in ones and the project's .forge/pipelines
 *
 * PIPELINE is a name (the project's .forge/pipelines/NAME.json, else the
 * built-in one) or a path (it contains '/' or ends in .json).  The
 * configuration gives the bounce defaults (bounces.*); programs are looked
 * for beside this executable, then on PATH (lib/engine/graph.h).  --db is
 * taken, as every program takes it, and not opened: pipelines are files,
 * not records (its --help says so).
 */
#include "app/cli.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "data/config.h"
#include "engine/graph.h"
#include "engine/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "forge-pipeline"

enum { OPT_JSON = 256, OPT_DOT };

static const struct cli_option options[] = {
	{ "json", 0, NULL, "check, show: the graph and its errors as JSON; list: an array", OPT_JSON },
	{ "dot", 0, NULL, "show: the graph in Graphviz's DOT language (dot -Tsvg draws it)", OPT_DOT },
	{ NULL, 0, NULL, NULL, 0 }
};

static const struct cli_spec spec = {
	.name = PROG,
	.synopsis = "check PIPELINE [--json]\nshow PIPELINE [--dot | --json]\nlist [--json]",
	.description = "Check, draw and list pipelines: the graphs of nodes (a phase or a program)\n"
		       "that forge runs.  PIPELINE is a name (.forge/pipelines/NAME.json of the\n"
		       "repository, else a built-in one: `forge pipeline list`) or a file's path.",
	.options = options,
	.extra_help = "check prints a one-line summary on stdout when the pipeline is valid; otherwise\n"
		      "every error on stderr, one a line, as a compiler does:\n"
		      "  FILE: node 'x': needs unknown node 'y'\n"
		      "show draws the layers in topological order: the nodes of a layer may run at\n"
		      "the same time (their inputs are ready together), then bounces and gates.\n"
		      "The configuration (--config) is read and checked as by every program; --db\n"
		      "is taken and not opened: pipelines are files, not records in the database.\n"
		      "\n"
		      "Exit status: 0 valid; 2 a usage error, or the pipeline is missing, malformed\n"
		      "or invalid (check and show); 5 stdout could not be written.\n",
};

struct args {
	bool json, dot;
};

static int on_option(int id, const char *arg, void *payload)
{
	struct args *a = payload;

	(void)arg;
	switch (id) {
	case OPT_JSON: a->json = true; return 0;
	case OPT_DOT: a->dot = true; return 0;
	}
	return forge_error("unhandled option");
}

static void print_errors(const struct graph *g)
{
	for (size_t i = 0; i < g->nerrors; i++) {
		if (g->errors[i].node)
			fprintf(stderr, "%s: node '%s': %s\n", g->source, g->errors[i].node, g->errors[i].message);
		else
			fprintf(stderr, "%s: %s\n", g->source, g->errors[i].message);
	}
}

/* The widest layer: how many nodes may run at once. */
static size_t widest(const struct graph *g)
{
	size_t most = 0;

	for (int l = 1; l <= g->nlayers; l++) {
		size_t n = 0;
		for (size_t i = 0; i < g->n; i++)
			n += g->nodes[i].layer == l;
		if (n > most)
			most = n;
	}
	return most;
}

static void summary(const struct graph *g)
{
	printf("%s: ok: pipeline '%s', %zu node%s in %d layer%s (at most %zu at once), %zu edge%s, %zu bounce%s\n",
	       g->source, g->name, g->n, g->n == 1 ? "" : "s", g->nlayers, g->nlayers == 1 ? "" : "s",
	       widest(g), g->nedges, g->nedges == 1 ? "" : "s", g->nbounces, g->nbounces == 1 ? "" : "s");
}

static jv check_json(const struct graph *g)
{
	jv o = json_set(jv_object(), "ok", jv_bool(g->nerrors == 0));
	jv gj = graph_to_json(g);

	o = json_set(o, "pipeline", json_get(gj, "pipeline"));
	o = json_set(o, "source", json_get(gj, "source"));
	o = json_set(o, "errors", graph_errors_json(g));
	o = json_set(o, "nodes", json_get(gj, "nodes"));
	o = json_set(o, "edges", json_get(gj, "edges"));
	jv_free(gj);
	return o;
}

/* ---- show: text -------------------------------------------------------- */

/* "phase review" or "program lint.sh --strict", into b. */
static void what_it_runs(struct buf *b, const struct graph_node *nd)
{
	buf_addf(b, "%s %s", nd->phase ? "phase" : "program", nd->phase ? nd->phase : nd->program);
	for (size_t k = 0; k < nd->nargs; k++)
		buf_addf(b, " %s", nd->args[k]);
}

/* "plan -> implement -> [review | test] -> deploy" */
static void flow_line(const struct graph *g)
{
	fputs("flow: ", stdout);
	for (int l = 1; l <= g->nlayers; l++) {
		size_t n = 0;

		for (size_t i = 0; i < g->n; i++)
			n += g->nodes[i].layer == l;
		printf("%s%s", l > 1 ? " -> " : "", n > 1 ? "[" : "");
		for (size_t i = 0, k = 0; i < g->n; i++)
			if (g->nodes[i].layer == l)
				printf("%s%s", k++ ? " | " : "", g->nodes[i].id);
		fputs(n > 1 ? "]" : "", stdout);
	}
	putchar('\n');
}

static void node_details(const struct graph_node *nd, int pad)
{
	const struct graph_bounce *bo = &nd->bounce;

	if (nd->when)
		printf("  %*s  runs when %s, else skipped\n", pad, "", nd->when);
	if (!nd->phase || strcmp(nd->result_key, pipeline_result_key(nd->phase)) != 0)
		printf("  %*s  result in .%s\n", pad, "", nd->result_key);
	if (nd->retry_max)
		printf("  %*s  retry on %s%s%s, at most %d more time%s\n", pad, "",
		       nd->retry_on & GRAPH_RETRY_FAILED ? "failed" : "",
		       nd->retry_on == (GRAPH_RETRY_FAILED | GRAPH_RETRY_REJECTED) ? " or " : "",
		       nd->retry_on & GRAPH_RETRY_REJECTED ? "rejected" : "", nd->retry_max,
		       nd->retry_max == 1 ? "" : "s");
	if (nd->has_bounce) {
		printf("  %*s  bounce back to %s", pad, "", bo->to_id);
		if (bo->when)
			printf(" when %s", bo->when);
		if (bo->when_from && strcmp(bo->when_from, "file") != 0)
			printf(" (%s)", bo->when_from);
		printf(", at most %d time%s", bo->max, bo->max == 1 ? "" : "s");
		if (bo->max_from && strcmp(bo->max_from, "file") != 0)
			printf(" (%s)", bo->max_from);
		printf(", then a human\n");
		/* pipeline_decide's rule for tests, kept by the supervisor */
		if (nd->phase && strcmp(nd->phase, "test") == 0)
			printf("  %*s  (only failures with a confident fix go back: bounces.test_fix_confidence;"
			       " none: a human)\n", pad, "");
	}
	if (nd->has_gate)
		printf("  %*s  gate %s before it runs%s%s%s%s\n", pad, "", nd->gate.ladder,
		       nd->gate.when ? " when " : "", nd->gate.when ? nd->gate.when : "",
		       nd->gate.prompt ? ": " : "", nd->gate.prompt ? nd->gate.prompt : "");
}

/*
 * The configured gates (config "gates") whose phase is `phase` ("*": those
 * of every node), one line each: they apply to the phase nodes as they do
 * to forge run's phases, checked before and after the phase.
 */
static void configured_gates(const struct config *cfg, const char *phase, const char *indent)
{
	jv gates = config_get(cfg, "gates");

	if (jv_get_kind(gates) == JV_KIND_ARRAY) {
		jv_array_foreach(gates, i, gate) {
			const char *p = json_get_str(gate, "phase");

			if (p && strcmp(p, phase) == 0)
				printf("%sconfigured gate %s when %s\n", indent, json_get_str(gate, "id"),
				       json_get_str(gate, "condition"));
			jv_free(gate);
		}
	}
	jv_free(gates);
}

static void show_text(const struct graph *g, const struct config *cfg)
{
	int pad = 0;

	for (size_t i = 0; i < g->n; i++)
		if ((int)strlen(g->nodes[i].id) > pad)
			pad = (int)strlen(g->nodes[i].id);
	printf("pipeline %s", g->name);
	if (g->description)
		printf(": %s", g->description);
	printf("\nsource: %s\n", g->source);
	flow_line(g);
	configured_gates(cfg, "*", "at every node: ");
	for (int l = 1; l <= g->nlayers; l++) {
		size_t n = 0;

		for (size_t i = 0; i < g->n; i++)
			n += g->nodes[i].layer == l;
		printf("\nlayer %d%s\n", l, n > 1 ? " (these run at the same time)" : "");
		for (size_t i = 0; i < g->n; i++) {
			const struct graph_node *nd = &g->nodes[i];
			struct buf b = BUF_INIT;

			if (nd->layer != l)
				continue;
			what_it_runs(&b, nd);
			printf("  %-*s  %s", pad, nd->id, b.buf);
			for (size_t k = 0; k < nd->nneeds; k++)
				printf("%s%s", k ? ", " : "; needs ", g->nodes[nd->needs[k]].id);
			putchar('\n');
			buf_release(&b);
			node_details(nd, pad);
			if (nd->phase) {
				char indent[80];

				snprintf(indent, sizeof indent, "  %*s  ", pad, "");
				configured_gates(cfg, nd->phase, indent);
			}
		}
	}
}

/* ---- show: DOT --------------------------------------------------------- */

/* s as a DOT string's contents: quotes and backslashes escaped. */
static void dot_escaped(struct buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			buf_addch(b, '\\');
		buf_addch(b, *s == '\n' ? ' ' : *s);
	}
}

static void dot_node(const struct graph_node *nd)
{
	struct buf label = BUF_INIT, b = BUF_INIT;

	buf_adds(&label, nd->id);
	buf_adds(&label, "\n");
	what_it_runs(&label, nd);
	if (nd->when)
		buf_addf(&label, "\nwhen %s", nd->when);
	if (nd->has_gate)
		buf_addf(&label, "\ngate: %s", nd->gate.ladder);
	buf_adds(&b, "\t\"");
	dot_escaped(&b, nd->id);
	buf_adds(&b, "\" [label=\"");
	for (const char *p = label.buf; *p; p++) {
		if (*p == '\n') {
			buf_adds(&b, "\\n");
			continue;
		}
		if (*p == '"' || *p == '\\')
			buf_addch(&b, '\\');
		buf_addch(&b, *p);
	}
	buf_addf(&b, "\"%s];\n", nd->has_gate ? ", peripheries=2" : "");
	fputs(b.buf, stdout);
	buf_release(&label);
	buf_release(&b);
}

static void dot_edge(const char *from, const char *to, const char *attrs)
{
	struct buf b = BUF_INIT;

	buf_adds(&b, "\t\"");
	dot_escaped(&b, from);
	buf_adds(&b, "\" -> \"");
	dot_escaped(&b, to);
	buf_addf(&b, "\"%s;\n", attrs);
	fputs(b.buf, stdout);
	buf_release(&b);
}

static void show_dot(const struct graph *g)
{
	struct buf name = BUF_INIT;

	dot_escaped(&name, g->name);
	printf("digraph \"%s\" {\n\trankdir=TB;\n\tnode [shape=box, style=rounded];\n", name.buf);
	buf_release(&name);
	for (size_t i = 0; i < g->n; i++)
		dot_node(&g->nodes[i]);
	for (size_t i = 0; i < g->n; i++) {
		const struct graph_node *nd = &g->nodes[i];

		for (size_t k = 0; k < nd->nneeds; k++)
			dot_edge(g->nodes[nd->needs[k]].id, nd->id, "");
		if (nd->has_bounce) {
			char attrs[96];

			snprintf(attrs, sizeof attrs, " [style=dashed, constraint=false, label=\"bounce <= %d\"]",
				 nd->bounce.max);
			dot_edge(nd->id, nd->bounce.to_id, attrs);
		}
	}
	/* the nodes of a layer side by side: they may run at the same time */
	for (int l = 1; l <= g->nlayers; l++) {
		struct buf b = BUF_INIT;
		size_t n = 0;

		for (size_t i = 0; i < g->n; i++)
			if (g->nodes[i].layer == l) {
				buf_adds(&b, " \"");
				dot_escaped(&b, g->nodes[i].id);
				buf_adds(&b, "\";");
				n++;
			}
		if (n > 1)
			printf("\t{ rank=same;%s }\n", b.buf);
		buf_release(&b);
	}
	puts("}");
}

/* ---- list ---------------------------------------------------------------- */

static void list_text(jv all)
{
	jv_array_foreach(all, i, e) {
		const char *where = json_get_str(e, "where"), *err = json_get_str(e, "error");
		const char *desc = json_get_str(e, "description");

		printf("%-20s %-9s %s%s\n", json_get_str(e, "name"), where, err ? err : desc ? desc : "",
		       json_get_bool(e, "overridden", false) ? " (the project's file of this name comes first)" : "");
		jv_free(e);
	}
	jv_free(all);
}

static int cmd_list(const struct session *s, const struct args *a)
{
	jv all = graph_list(s->repo);

	if (a->json)
		json_write_pretty(stdout, all);
	else
		list_text(all);
	return FORGE_EXIT_OK;
}

static int cmd_check_or_show(const struct session *s, const char *sub, const char *what, const struct args *a)
{
	char *bindir = cli_self_dir();
	struct graph_env env = { .cfg = s->cfg, .bindir = bindir };
	struct graph *g;
	bool ok = graph_load(&g, what, s->repo, &env) == 0;
	bool check = strcmp(sub, "check") == 0;

	if (a->json)
		json_write_pretty(stdout, check ? check_json(g) : json_set(graph_to_json(g), "errors", graph_errors_json(g)));
	if (!ok && !a->json)
		print_errors(g);
	else if (!ok)
		;       /* the errors are in the JSON */
	else if (check && !a->json)
		summary(g);
	else if (!check && a->dot)
		show_dot(g);
	else if (!check && !a->json)
		show_text(g, s->cfg);
	graph_free(g);
	free(bindir);
	return ok ? FORGE_EXIT_OK : FORGE_EXIT_USAGE;
}

int main(int argc, char **argv)
{
	struct cli_common common;
	struct args a = { false, false };
	int first = cli_parse(&common, &spec, argc, argv, on_option, &a);
	int nops = argc - first;
	const char *sub = nops > 0 ? argv[first] : NULL;
	struct session s;
	int status;

	if (!sub)
		cli_usage_error(&spec, "a subcommand is needed: check, show or list");
	if (strcmp(sub, "list") == 0) {
		if (nops > 1)
			cli_usage_error(&spec, "list takes no operand: '%s'", argv[first + 1]);
	} else if (strcmp(sub, "check") == 0 || strcmp(sub, "show") == 0) {
		if (nops != 2)
			cli_usage_error(&spec, nops < 2 ? "%s needs a PIPELINE: a name or a file" :
					"%s takes one PIPELINE", sub);
	} else {
		cli_usage_error(&spec, "unknown subcommand '%s' (check, show, list)", sub);
	}
	if (a.dot && (a.json || strcmp(sub, "show") != 0))
		cli_usage_error(&spec, "--dot goes with show alone, without --json");
	if ((status = session_open(&s, &common, SESSION_CONFIG, jv_null())) != 0) {
		fprintf(stderr, PROG ": %s\n", forge_last_error());
		return cli_finish(PROG, status);
	}
	if (strcmp(sub, "list") == 0)
		status = cmd_list(&s, &a);
	else
		status = cmd_check_or_show(&s, sub, argv[first + 1], &a);
	session_close(&s);
	return cli_finish(PROG, status);
}
