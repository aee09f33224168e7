/* test_graph.c - pipelines as data: loading, validation, ready sets, order. */
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/resource.h"
#include "data/config.h"
#include "engine/gates.h"
#include "engine/graph.h"
#include "engine/pipeline.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct config *cfg;
static char tmp[] = "/tmp/forge-graph-XXXXXX";

/* Load a pipeline from JSON text with the configuration. */
static struct graph *load(const char *text)
{
	struct graph_env env = { .cfg = cfg, .base_dir = tmp };
	struct graph *g;

	graph_from_json(&g, jv_parse(text), "t.json", NULL, &env);
	return g;
}

/* Every error as "node: message\n" ("-" for the file's own). */
static char *errors(const struct graph *g)
{
	struct buf b = BUF_INIT;

	for (size_t i = 0; i < g->nerrors; i++)
		buf_addf(&b, "%s: %s\n", g->errors[i].node ? g->errors[i].node : "-", g->errors[i].message);
	return buf_detach(&b, NULL);
}

/* NULL when the pipeline `text` has exactly one error, naming node `who`
 * (NULL: the file) and containing want; else what it has (malloc'd). */
static char *one_error(const char *text, const char *who, const char *want)
{
	struct graph *g = load(text);
	char *e = errors(g);
	const char *node = g->nerrors ? g->errors[0].node : NULL;
	bool ok = g->nerrors == 1 && strstr(e, want) && (who ? node && !strcmp(node, who) : !node);
	struct buf m = BUF_INIT;

	graph_free(g);
	if (ok) {
		free(e);
		return NULL;
	}
	buf_addf(&m, "want one error of %s with '%s', got:\n%s", who ? who : "the file", want, e);
	free(e);
	return buf_detach(&m, NULL);
}

#define CHECK_ONE_ERROR(text, who, want) do { \
	char *m_ = one_error((text), (who), (want)); \
	CHECK_MSG(!m_, "%s", m_); \
} while (0)

#define HEAD "{\"pipeline\":\"t\",\"version\":1,\"nodes\":["

static void test_status_names(void)
{
	for (int s = 0; s < NODE_NSTATUS; s++)
		CHECK(node_status_of(node_status_name((enum node_status)s)) == (enum node_status)s);
	CHECK_STR(node_status_name(NODE_BLOCKED), "blocked");
	CHECK(node_status_of("DONE") == NODE_NSTATUS);
	CHECK(node_status_of(NULL) == NODE_NSTATUS);
}

/* default.json is pipeline_decide's sequence: the five phases in order,
 * their result keys, the two bounces to implement with the config's bounds. */
static void test_default_is_todays_sequence(void)
{
	struct graph_env env = { .cfg = cfg };
	struct graph *g;

	CHECK(graph_load(&g, "default", NULL, &env) == 0);
	CHECK_INT(g->n, 5);
	CHECK_INT(g->norder, 5);
	CHECK_INT(g->nlayers, 5);
	CHECK_STR(g->source, "default (built-in)");
	for (size_t i = 0; i < 5; i++) {
		const struct graph_node *nd = &g->nodes[g->order[i]];
		const char *next = pipeline_next_phase(nd->phase, NULL);

		CHECK_STR(nd->phase, pipeline_phases[i]);
		CHECK_STR(nd->result_key, pipeline_result_key(nd->phase));
		CHECK_INT(nd->layer, (int)i + 1);
		/* the next phase needs this one and nothing else */
		if (next) {
			int j = graph_index(g, next);
			CHECK(j >= 0 && g->nodes[j].nneeds == 1 && g->nodes[j].needs[0] == g->order[i]);
		}
		bool bounces = !strcmp(nd->phase, "review") || !strcmp(nd->phase, "test");
		CHECK(nd->has_bounce == bounces);
		if (!bounces)
			continue;
		char key[64];
		snprintf(key, sizeof key, "bounces.%s_max", nd->phase);
		CHECK_STR(nd->bounce.to_id, "implement");
		CHECK_INT(nd->bounce.max, (int)config_get_num(cfg, key));
		CHECK_STR(nd->bounce.max_from, key);
		snprintf(key, sizeof key, "bounces.%s_condition", nd->phase);
		CHECK_STR(nd->bounce.when, config_get_str(cfg, key));
		CHECK_STR(nd->bounce.when_from, key);
	}
	CHECK_INT(g->nbounces, 2);
	graph_free(g);
}

static void test_file_overrides_config_bounds(void)
{
	struct graph *g = load(HEAD "{\"id\":\"i\",\"phase\":\"implement\"},"
			       "{\"id\":\"r\",\"phase\":\"review\",\"needs\":[\"i\"],"
			       "\"bounce\":{\"to\":\"i\",\"max\":7,\"when\":\".review.x\"}}]}");

	CHECK_INT(g->nerrors, 0);
	CHECK_INT(g->nodes[1].bounce.max, 7);
	CHECK_STR(g->nodes[1].bounce.max_from, "file");
	CHECK_STR(g->nodes[1].bounce.when, ".review.x");
	CHECK_STR(g->nodes[1].bounce.when_from, "file");
	graph_free(g);
}

/* review-and-test: review and test are ready together. */
static void test_ready_sets(void)
{
	struct graph_env env = { .cfg = cfg };
	enum node_status st[5];
	size_t ready[5];
	struct graph *g;

	CHECK(graph_load(&g, "review-and-test", NULL, &env) == 0);
	int plan = graph_index(g, "plan"), impl = graph_index(g, "implement"), rev = graph_index(g, "review");
	int test = graph_index(g, "test"), dep = graph_index(g, "deploy");
	for (int i = 0; i < 5; i++)
		st[i] = NODE_PENDING;
	CHECK(graph_ready(g, st, ready) == 1 && ready[0] == (size_t)plan);
	st[plan] = NODE_RUNNING;
	CHECK(graph_ready(g, st, ready) == 0);
	st[plan] = NODE_DONE;
	CHECK(graph_ready(g, st, ready) == 1 && ready[0] == (size_t)impl);
	st[impl] = NODE_DONE;
	CHECK(graph_ready(g, st, ready) == 2 && ready[0] == (size_t)rev && ready[1] == (size_t)test);
	st[rev] = NODE_RUNNING;
	CHECK(graph_ready(g, st, ready) == 1 && ready[0] == (size_t)test);
	st[test] = NODE_SKIPPED;        /* a skipped need counts as finished */
	st[rev] = NODE_DONE;
	CHECK(graph_ready(g, st, ready) == 1 && ready[0] == (size_t)dep);
	st[rev] = NODE_BLOCKED;         /* said no: deploy waits */
	CHECK(graph_ready(g, st, ready) == 0);
	st[rev] = NODE_FAILED;
	CHECK(graph_ready(g, st, ready) == 0);
	CHECK(!graph_is_complete(g, st));
	st[rev] = NODE_DONE;
	st[dep] = NODE_DONE;
	CHECK(graph_is_complete(g, st));   /* done, and skipped */
	st[test] = NODE_FAILED;
	CHECK(!graph_is_complete(g, st));
	CHECK_INT(g->nodes[rev].layer, 3);
	CHECK_INT(g->nodes[test].layer, 3);
	graph_free(g);
}

/* Topological order follows needs; among equals, the file's order. */
static void test_topological_order(void)
{
	struct graph *g = load(HEAD "{\"id\":\"d\",\"phase\":\"deploy\",\"needs\":[\"c\",\"b\"]},"
			       "{\"id\":\"c\",\"phase\":\"test\",\"needs\":[\"a\"]},"
			       "{\"id\":\"b\",\"phase\":\"review\",\"needs\":[\"a\"]},"
			       "{\"id\":\"a\",\"phase\":\"implement\"},"
			       "{\"id\":\"x\",\"program\":\"sh\",\"result_key\":\"x\"}]}");
	const char *want[] = { "a", "c", "b", "d", "x" };

	CHECK_INT(g->nerrors, 0);
	CHECK_INT(g->norder, 5);
	for (int i = 0; i < 5; i++)
		CHECK_STR(g->nodes[g->order[i]].id, want[i]);
	CHECK_INT(g->nodes[0].layer, 3);
	CHECK_INT(g->nodes[4].layer, 1);
	CHECK_INT(g->nlayers, 3);
	CHECK_INT(g->nedges, 4);
	graph_free(g);
}

static void test_path_to_root_and_rerun(void)
{
	struct graph_env env = { .cfg = cfg };
	struct graph *g;
	size_t out[5], n;

	CHECK(graph_load(&g, "review-and-test", NULL, &env) == 0);
	n = graph_path_to_root(g, (size_t)graph_index(g, "deploy"), out);
	CHECK_INT(n, 4);
	CHECK_STR(g->nodes[out[0]].id, "plan");
	CHECK_STR(g->nodes[out[1]].id, "implement");
	CHECK_STR(g->nodes[out[2]].id, "review");
	CHECK_STR(g->nodes[out[3]].id, "test");
	n = graph_path_to_root(g, (size_t)graph_index(g, "test"), out);
	CHECK(n == 2 && !strcmp(g->nodes[out[1]].id, "implement"));
	CHECK_INT(graph_path_to_root(g, (size_t)graph_index(g, "plan"), out), 0);
	/* a bounce to implement runs it again with everything after it */
	n = graph_rerun(g, (size_t)graph_index(g, "implement"), out);
	CHECK_INT(n, 4);
	CHECK_STR(g->nodes[out[0]].id, "implement");
	CHECK_STR(g->nodes[out[3]].id, "deploy");
	CHECK(graph_needs(g, (size_t)graph_index(g, "deploy"), (size_t)graph_index(g, "plan")));
	CHECK(!graph_needs(g, (size_t)graph_index(g, "review"), (size_t)graph_index(g, "test")));
	graph_free(g);
}

static void test_each_error(void)
{
	CHECK_ONE_ERROR("[1]", NULL, "a pipeline is a JSON object");
	CHECK_ONE_ERROR(HEAD "]}", NULL, "no nodes");
	CHECK_ONE_ERROR("{\"pipeline\":\"t\",\"version\":2,\"nodes\":[{\"id\":\"a\",\"phase\":\"plan\"}]}",
			NULL, ".version");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"phase\":\"plan\"},{\"id\":\"a\",\"phase\":\"plan\"}]}",
			"a", "ids must be unique");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"phase\":\"lint\"}]}", "a", "unknown phase 'lint'");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"phase\":\"plan\",\"colour\":1}]}", "a", "unexpected property 'colour'");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"program\":\"forge-no-such-program\"}]}", "a",
			"program 'forge-no-such-program' not found");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"program\":\"./missing.sh\"}]}", "a", "not an executable file");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"phase\":\"plan\",\"program\":\"sh\"}]}", "a", "give one");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\"}]}", "a", "neither a phase");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"phase\":\"plan\",\"needs\":[\"y\"]}]}", "a", "needs unknown node 'y'");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"phase\":\"plan\",\"needs\":[\"a\"]}]}", "a", "needs itself");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"review\",\"phase\":\"review\"},{\"id\":\"b\",\"phase\":\"plan\",\"needs\":[\"reveiw\"]}]}",
			"b", "needs unknown node 'reveiw' (did you mean 'review'?)");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"phase\":\"plan\",\"needs\":[\"c\"]},"
			"{\"id\":\"b\",\"phase\":\"implement\",\"needs\":[\"a\"]},"
			"{\"id\":\"c\",\"phase\":\"review\",\"needs\":[\"b\"]}]}",
			"a", "cycle ('a' needs 'c', 'c' needs 'b', 'b' needs 'a')");
	/* after a cycle: unreachable from the roots (and the cycle's own error) */
	/* more nodes than the schema allows: one error, the nodes not read */
	struct buf big = BUF_INIT;
	buf_adds(&big, HEAD);
	for (int i = 0; i < 1001; i++)
		buf_addf(&big, "%s{\"id\":\"n%d\",\"phase\":\"plan\"}", i ? "," : "", i);
	buf_adds(&big, "]}");
	char *m = one_error(big.buf, NULL, ".nodes: expected at most 1000 items, got 1001");
	buf_release(&big);
	CHECK_MSG(!m, "%s", m);
	struct graph *g = load(HEAD "{\"id\":\"r\",\"phase\":\"plan\"},"
			       "{\"id\":\"a\",\"phase\":\"implement\",\"needs\":[\"b\",\"r\"]},"
			       "{\"id\":\"b\",\"phase\":\"review\",\"needs\":[\"a\"]},"
			       "{\"id\":\"d\",\"phase\":\"deploy\",\"needs\":[\"b\"]}]}");
	CHECK_INT(g->nerrors, 2);
	CHECK_STR(g->errors[0].node, "a");
	CHECK_STR(g->errors[1].node, "d");
	CHECK(strstr(g->errors[1].message, "unreachable from the roots: it needs 'b'"));
	graph_free(g);
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"phase\":\"implement\"},{\"id\":\"b\",\"phase\":\"review\",\"needs\":[\"a\"]},"
			"{\"id\":\"c\",\"phase\":\"test\",\"needs\":[\"a\"],\"bounce\":{\"to\":\"b\"}}]}",
			"c", "bounce to 'b', which is not before it");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"phase\":\"review\",\"bounce\":{\"to\":\"q\"}}]}", "a",
			"bounce to unknown node 'q'\n");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"implement\",\"phase\":\"implement\"},{\"id\":\"r\",\"phase\":\"review\","
			"\"needs\":[\"implement\"],\"bounce\":{\"to\":\"nowhere\"}}]}", "r", "bounce to unknown node 'nowhere'\n");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"phase\":\"review\",\"bounce\":{\"to\":\"a\"}}]}", "a", "bounce to itself");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"phase\":\"implement\"},"
			"{\"id\":\"b\",\"program\":\"sh\",\"needs\":[\"a\"],\"bounce\":{\"to\":\"a\"}}]}",
			"b", "bounce to 'a' has no bound: give it a max");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"phase\":\"implement\"},"
			"{\"id\":\"b\",\"phase\":\"deploy\",\"needs\":[\"a\"],\"bounce\":{\"to\":\"a\"}}]}",
			"b", "has no bound");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"phase\":\"plan\",\"when\":\".x ==\"}]}", "a", "when: jq expression");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"phase\":\"implement\"},{\"id\":\"b\",\"phase\":\"review\",\"needs\":[\"a\"],"
			"\"bounce\":{\"to\":\"a\",\"when\":\"][\"}}]}", "b", "bounce when: jq expression");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"phase\":\"deploy\",\"gate\":{\"ladder\":\"staging_deploy\",\"when\":\"(\"}}]}",
			"a", "gate when: jq expression");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"phase\":\"deploy\",\"gate\":{\"ladder\":\"nope\"}}]}", "a", ".gate.ladder");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"phase\":\"implement\"},{\"id\":\"b\",\"phase\":\"review\",\"needs\":[\"a\"],"
			"\"retry\":{\"max\":1,\"on\":[\"rejected\"]},\"bounce\":{\"to\":\"a\"}}]}", "b", "keep one");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"phase\":\"plan\",\"result_key\":\"task\"}]}", "a", "the state's own");
	CHECK_ONE_ERROR(HEAD "{\"id\":\"a\",\"phase\":\"implement\"},{\"id\":\"b\",\"phase\":\"review\",\"needs\":[\"a\"]},"
			"{\"id\":\"c\",\"phase\":\"review\",\"needs\":[\"a\"]}]}",
			"c", "result_key 'review' is also written by 'b', which may run at the same time");
	/* one after the other, the same key is fine */
	g = load(HEAD "{\"id\":\"a\",\"phase\":\"review\"},{\"id\":\"b\",\"phase\":\"review\",\"needs\":[\"a\"]}]}");
	CHECK_INT(g->nerrors, 0);
	graph_free(g);
}

/* Every error is listed, in the order of the file; forge_error has the first. */
static void test_every_error_listed(void)
{
	struct graph *g;
	struct graph_env env = { .cfg = cfg };

	CHECK(graph_from_json(&g, jv_parse(HEAD "{\"id\":\"a\",\"phase\":\"plan\",\"needs\":[\"zz\"]},"
					   "{\"id\":\"b\",\"phase\":\"lint\"},"
					   "{\"id\":\"c\",\"program\":\"forge-none-such\",\"needs\":[\"a\"]}]}"),
			      "f.json", NULL, &env) == -1);
	CHECK_INT(g->nerrors, 3);
	CHECK_STR(g->errors[0].node, "a");
	CHECK_STR(g->errors[1].node, "b");
	CHECK_STR(g->errors[2].node, "c");
	CHECK_STR(forge_last_error(), "f.json: node 'a': needs unknown node 'zz'");
	graph_free(g);
}

/* Programs: beside forge (bindir), on PATH, or a path relative to the file. */
static void test_programs_found(void)
{
	char exe[256];
	FILE *f;
	struct graph_env env = { .cfg = cfg, .bindir = tmp, .base_dir = tmp };
	struct graph *g;

	snprintf(exe, sizeof exe, "%s/my-step", tmp);
	CHECK((f = fopen(exe, "w")) != NULL);
	fputs("#!/bin/sh\ncat\n", f);
	fclose(f);
	CHECK(chmod(exe, 0755) == 0);
	CHECK(graph_from_json(&g, jv_parse(HEAD "{\"id\":\"a\",\"program\":\"my-step\",\"args\":[\"-x\"]},"
					   "{\"id\":\"b\",\"program\":\"./my-step\",\"needs\":[\"a\"]},"
					   "{\"id\":\"c\",\"program\":\"sh\",\"needs\":[\"b\"]}]}"),
			      "p.json", NULL, &env) == 0);
	CHECK_STR(g->nodes[0].path, exe);
	CHECK_INT(g->nodes[0].nargs, 1);
	CHECK_STR(g->nodes[0].result_key, "a");    /* a program's result: under its id */
	CHECK(strstr(g->nodes[1].path, "/my-step") != NULL);
	CHECK(g->nodes[2].path != NULL && strstr(g->nodes[2].path, "/sh") != NULL);
	graph_free(g);
	/* not executable: not a program */
	CHECK(chmod(exe, 0644) == 0);
	CHECK(graph_from_json(&g, jv_parse(HEAD "{\"id\":\"a\",\"program\":\"my-step\"}]}"), "p.json", NULL,
			      &env) == -1);
	graph_free(g);
	unlink(exe);
}

/* The schema's enums are the code's lists. */
static void test_schema_lists_match_the_code(void)
{
	const struct resource *r = resource_find("pipeline.schema.json");
	jv s = jv_parse(r->data);
	jv phases = json_get_path(s, "$defs.node.properties.phase.enum");
	jv points = json_get_path(s, "$defs.node.properties.gate.properties.ladder.enum");
	size_t n = 0;

	CHECK_INT(jv_array_length(jv_copy(phases)), 5);
	for (int i = 0; i < 5; i++) {
		jv p = jv_array_get(jv_copy(phases), i);
		bool same = !strcmp(jv_string_value(p), pipeline_phases[i]);
		jv_free(p);
		CHECK(same);
	}
	for (const struct ladder_point *p = ladder_points(); p->key; p++, n++) {
		jv v = jv_array_get(jv_copy(points), (int)n);
		bool same = jv_is_valid(v) && !strcmp(jv_string_value(v), p->key);
		jv_free(v);
		CHECK_MSG(same, "ladder point %s", p->key);
	}
	CHECK_INT(jv_array_length(jv_copy(points)), (int)n);
	jv_free(phases);
	jv_free(points);
	jv_free(s);
}

/* By name: the project's .forge/pipelines first, then the built-in ones. */
static void test_load_by_name_and_list(void)
{
	char dir[300], file[400];
	FILE *f;
	struct graph *g;

	snprintf(dir, sizeof dir, "%s/.forge", tmp);
	mkdir(dir, 0755);
	snprintf(dir, sizeof dir, "%s/.forge/pipelines", tmp);
	CHECK(mkdir(dir, 0755) == 0);
	snprintf(file, sizeof file, "%s/default.json", dir);
	CHECK((f = fopen(file, "w")) != NULL);
	fputs(HEAD "{\"id\":\"only\",\"phase\":\"plan\"}]}", f);
	fclose(f);
	struct graph_env env = { .cfg = cfg };

	CHECK(graph_load(&g, "default", tmp, &env) == 0);
	CHECK_INT(g->n, 1);
	CHECK_STR(g->source, file);
	graph_free(g);
	CHECK(graph_load(&g, "default", NULL, &env) == 0);
	CHECK_INT(g->n, 5);
	graph_free(g);
	/* without the configuration a review's bounce has no bound */
	CHECK(graph_load(&g, "default", NULL, NULL) == -1);
	CHECK_STR(forge_last_error(), "default (built-in): node 'review': bounce to 'implement' has no bound: "
		  "give it a max (only a review or test phase takes bounces.PHASE_max from the configuration)");
	graph_free(g);
	CHECK(graph_load(&g, "nothing-here", tmp, NULL) == -1);
	CHECK(g->nerrors == 1 && strstr(g->errors[0].message, "no pipeline named 'nothing-here'"));
	graph_free(g);
	CHECK(graph_load(&g, "/nonexistent/x.json", NULL, NULL) == -1);
	CHECK_STR(g->errors[0].message, "no such file");
	graph_free(g);
	CHECK(graph_load(&g, file, NULL, NULL) == 0);
	graph_free(g);

	jv all = graph_list(tmp);
	char *s = json_dumps(all, true);
	CHECK_MSG(strstr(s, "{\"description\":\"plan, implement, review, test and deploy; review and test go back "
			 "to implement\",\"name\":\"default\",\"overridden\":true,\"where\":\"built-in\"}") != NULL, "%s", s);
	CHECK_MSG(strstr(s, "\"name\":\"default\",\"overridden\":false,\"path\":") != NULL, "%s", s);
	CHECK_MSG(strstr(s, "\"name\":\"review-and-test\",\"overridden\":false,\"where\":\"built-in\"") != NULL, "%s", s);
	free(s);
	unlink(file);
	rmdir(dir);
	snprintf(dir, sizeof dir, "%s/.forge", tmp);
	rmdir(dir);
}

static void test_json(void)
{
	struct graph *g;
	struct graph_env env = { .cfg = cfg };

	CHECK(graph_load(&g, "review-and-test", NULL, &env) == 0);
	jv j = graph_to_json(g);
	jv edges = json_get(j, "edges");
	char *s = json_dumps(jv_copy(edges), false);
	CHECK_INT(jv_array_length(jv_copy(edges)), 7);     /* 5 needs, 2 bounces */
	CHECK_MSG(strstr(s, "{\"from\":\"review\",\"to\":\"implement\",\"kind\":\"bounce\"}") != NULL, "%s", s);
	CHECK_MSG(strstr(s, "{\"from\":\"implement\",\"to\":\"test\",\"kind\":\"needs\"}") != NULL, "%s", s);
	free(s);
	jv_free(edges);
	jv_free(j);
	graph_free(g);
}

/* merge(base, the returned states as one JSON array) as compact JSON, or "error: WHY". */
static char *merge_of(const char *base, const char *returned)
{
	jv b = json_parse(base, strlen(base)), r = json_parse(returned, strlen(returned));
	int n = jv_array_length(jv_copy(r));
	jv rets[8], out;
	const char *names[8] = { "a", "b", "c", "d", "e", "f", "g", "h" };
	char why[300] = "", *text;

	for (int i = 0; i < n && i < 8; i++)
		rets[i] = jv_array_get(jv_copy(r), i);
	if (graph_merge_states(&out, b, rets, names, (size_t)n, why, sizeof why) == 0) {
		text = json_dumps(out, true);
	} else {
		/* *out is null on an error: anything else shows in the text */
		const char *leak = jv_get_kind(out) == JV_KIND_NULL ? "" : " (and *out set)";
		size_t len = strlen(why) + 32;

		jv_free(out);
		text = malloc(len);
		snprintf(text, len, "error: %s%s", why, leak);
	}
	for (int i = 0; i < n && i < 8; i++)
		jv_free(rets[i]);
	jv_free(b);
	jv_free(r);
	return text;
}

#define CHECK_MERGE(base, returned, want) do { \
	char *got_ = merge_of(base, returned); \
	CHECK_STR(got_, want); \
	free(got_); \
} while (0)

static void test_merge_parallel_states(void)
{
	const char *base = "{\"phase\":\"init\",\"status\":\"ok\",\"task\":{\"d\":\"t\"},"
			   "\"cost\":{\"tokens\":10,\"usd\":1},\"budget\":{\"usd\":5,\"remaining_usd\":4}}";

	/* each node's result side by side; the costs add up; the last's status */
	CHECK_MERGE(base,
		    "[{\"phase\":\"review\",\"status\":\"rejected\",\"task\":{\"d\":\"t\"},\"review\":{\"x\":1},"
		    "\"cost\":{\"tokens\":15,\"usd\":1.5},\"budget\":{\"usd\":5,\"remaining_usd\":3.5}},"
		    "{\"phase\":\"test\",\"status\":\"ok\",\"task\":{\"d\":\"t\"},\"tests\":{\"y\":2},"
		    "\"cost\":{\"tokens\":30,\"usd\":2},\"budget\":{\"usd\":5,\"remaining_usd\":3}}]",
		    "{\"budget\":{\"remaining_usd\":2.5,\"usd\":5},\"cost\":{\"tokens\":35,\"usd\":2.5},"
		    "\"phase\":\"test\",\"review\":{\"x\":1},\"status\":\"ok\",\"task\":{\"d\":\"t\"},\"tests\":{\"y\":2}}");
	/* one node: its state as it is */
	CHECK_MERGE("{\"a\":1,\"b\":2}", "[{\"a\":1,\"c\":3}]", "{\"a\":1,\"c\":3}");
	/* a key both changed to different values is an error; to the same value is not */
	CHECK_MERGE("{\"k\":1}", "[{\"k\":2},{\"k\":3}]",
		    "error: key 'k' was changed by both 'a' and 'b', which ran at the same time");
	CHECK_MERGE("{\"k\":1}", "[{\"k\":2},{\"k\":2}]", "{\"k\":2}");
	/* a removal is a change too; a node that changed nothing changes nothing */
	CHECK_MERGE("{\"k\":1,\"j\":1}", "[{\"j\":1},{\"k\":1,\"j\":1}]", "{\"j\":1}");
	CHECK_MERGE("{\"k\":1}", "[{},{\"k\":5}]", "error: key 'k' was changed by both 'a' and 'b', which ran at the same time");
	/* inside an accumulator, numbers add up, other values merge as keys do */
	CHECK_MERGE("{\"usage\":{\"calls\":1,\"model\":\"m\"}}",
		    "[{\"usage\":{\"calls\":3,\"model\":\"m\"}},{\"usage\":{\"calls\":2,\"model\":\"n\",\"new\":4}}]",
		    "{\"usage\":{\"calls\":4,\"model\":\"n\",\"new\":4}}");
	CHECK_MERGE("{\"cost\":{\"usd\":0}}", "[{\"cost\":{\"usd\":1,\"by\":\"x\"}},{\"cost\":{\"usd\":1,\"by\":\"y\"}}]",
		    "error: key 'cost.by' was changed by both 'a' and 'b', which ran at the same time");
	/* a node that wrote no state is left out */
	CHECK_MERGE("{\"k\":1}", "[null,{\"k\":2}]", "{\"k\":2}");
}

int main(void)
{
	struct config_sources src = { .flags = jv_null() };

	if (!mkdtemp(tmp))
		return 1;
	setenv("XDG_CONFIG_HOME", tmp, 1);
	setenv("HOME", tmp, 1);
	if (config_load(&cfg, &src) < 0) {
		printf("# config: %s\n", forge_last_error());
		return 1;
	}
	RUN(test_status_names);
	RUN(test_default_is_todays_sequence);
	RUN(test_file_overrides_config_bounds);
	RUN(test_ready_sets);
	RUN(test_topological_order);
	RUN(test_path_to_root_and_rerun);
	RUN(test_each_error);
	RUN(test_every_error_listed);
	RUN(test_programs_found);
	RUN(test_schema_lists_match_the_code);
	RUN(test_load_by_name_and_list);
	RUN(test_json);
	RUN(test_merge_parallel_states);
	config_free(cfg);
	unit_rmtree(tmp);
	return unit_done();
}
