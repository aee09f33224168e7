/*
 * test_gateview.c - the renderers of the human gates (app/gateview.h): one
 * per kind of gate, pure functions from the gate and the state to text.
 */
#include "app/gateview.h"
#include "core/forge.h"
#include "core/json.h"
#include "data/config.h"
#include "unit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct config *cfg;

static jv parse(const char *s)
{
	return json_parse(s, strlen(s));
}

static jv gate(const char *id, const char *prompt)
{
	return json_set(json_set(jv_object(), "id", jv_string(id)), "prompt", jv_string(prompt));
}

static int count(const char *s, const char *what)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

static void test_kinds(void)
{
	CHECK_INT(gateview_kind_of("architecture_approval"), GATEVIEW_PLAN);
	CHECK_INT(gateview_kind_of("plan_result_1"), GATEVIEW_PLAN);
	CHECK_INT(gateview_kind_of("review_changes_2"), GATEVIEW_REVIEW);
	CHECK_INT(gateview_kind_of("review_approved_1"), GATEVIEW_REVIEW);
	CHECK_INT(gateview_kind_of("security_findings"), GATEVIEW_REVIEW);
	CHECK_INT(gateview_kind_of("escalation_review"), GATEVIEW_REVIEW);
	CHECK_INT(gateview_kind_of("test_failures_1"), GATEVIEW_TESTS);
	CHECK_INT(gateview_kind_of("escalation_test"), GATEVIEW_TESTS);
	CHECK_INT(gateview_kind_of("production_deploy"), GATEVIEW_DEPLOY);
	CHECK_INT(gateview_kind_of("staging_deploy"), GATEVIEW_DEPLOY);
	CHECK_INT(gateview_kind_of("cost_overrun"), GATEVIEW_OTHER);
	CHECK_INT(gateview_kind_of(NULL), GATEVIEW_OTHER);
	CHECK_STR(gateview_kind_name(GATEVIEW_TESTS), "tests");
}

static const char plan_state[] =
	"{\"plan\":{\"summary\":\"Add mul\",\"risk\":{\"level\":\"high\",\"score\":0.6,"
	"\"reasons\":[\"changes the CLI\"]},\"estimates\":{\"complexity\":\"low\",\"effort\":\"15m\"},"
	"\"architecture\":{\"components\":[\"calc.c: calc_mul\"],\"decisions\":[{\"name\":\"long\",\"description\":\"as add\"}]},"
	"\"tasks\":[{\"id\":\"t1\",\"title\":\"Add calc_mul\",\"description\":\"beside calc_add\",\"files\":[\"calc.c\",\"calc.h\"]},"
	"{\"id\":\"t2\",\"title\":\"Test mul\",\"description\":\"in check.sh\",\"files\":[\"tests/check.sh\"],"
	"\"depends_on\":[\"t1\"],\"acceptance\":[\"make check passes\"]}]}}";

static void test_plan(void)
{
	jv g = gate("architecture_approval", "Review proposed architecture.");
	jv st = parse(plan_state);
	char *s = gateview_summary(g, st, cfg, false), *f = gateview_full(g, st, cfg);

	CHECK(strstr(s, "forge run: gate architecture_approval: Review proposed architecture.\n") != NULL);
	CHECK(strstr(s, "  Plan: Add mul\n") != NULL);
	CHECK(strstr(s, "  Risk: high (score 0.60)\n    - changes the CLI\n") != NULL);
	CHECK(strstr(s, "  Estimate: complexity low, effort 15m\n") != NULL);
	CHECK(strstr(s, "  Tasks (2):\n    t1  Add calc_mul\n        files: calc.c, calc.h\n") != NULL);
	CHECK(strstr(s, "beside calc_add") == NULL);	/* descriptions only in the full view */
	CHECK(strchr(s, '\033') == NULL);		/* no colour asked */
	CHECK(strstr(f, "        beside calc_add\n") != NULL);
	CHECK(strstr(f, "        after: t1\n") != NULL);
	CHECK(strstr(f, "        ✓ make check passes\n") != NULL);
	CHECK(strstr(f, "    - calc.c: calc_mul\n") != NULL);
	CHECK(strstr(f, "    - long: as add\n") != NULL);
	CHECK(strstr(f, "The plan as JSON:") != NULL);
	CHECK(strchr(f, '\033') == NULL);
	free(s);
	free(f);
	s = gateview_summary(g, st, cfg, true);
	CHECK(strstr(s, "Risk: \033[31mhigh\033[0m") != NULL);
	free(s);
	jv_free(st);
	jv_free(g);
}

/* A task title that would redraw the screen: "Risk: high" turned into
 * "Risk: low" by cursor moves (a model's words; before: printed raw). */
static void test_plan_escapes(void)
{
	jv g = gate("architecture_approval", "Review proposed architecture.");
	jv st = parse(plan_state), plan = json_get(st, "plan"), tasks = json_get(plan, "tasks");
	jv t0 = jv_array_get(jv_copy(tasks), 0);

	t0 = json_set(t0, "title", jv_string("Add calc_mul\0337\033[4A\r\033[2K  Risk: low (score 0.10)\0338\xc2\x9b" "2J"));
	tasks = jv_array_set(tasks, 0, t0);
	plan = json_set(plan, "tasks", tasks);
	st = json_set(st, "plan", plan);
	char *s = gateview_summary(g, st, cfg, false);

	CHECK_MSG(strchr(s, '\033') == NULL && strchr(s, '\r') == NULL && strstr(s, "\xc2\x9b") == NULL, "%s", s);
	CHECK(strstr(s, "  Risk: high (score 0.60)\n") != NULL);
	free(s);
	jv_free(st);
	jv_free(g);
}

static void test_plan_many_tasks(void)
{
	jv g = gate("architecture_approval", "?");
	jv tasks = jv_array();
	for (int i = 0; i < 11; i++) {
		char id[16];
		snprintf(id, sizeof id, "t%d", i + 1);
		tasks = jv_array_append(tasks, json_set(json_set(jv_object(), "id", jv_string(id)), "title",
							jv_string("x")));
	}
	jv st = json_set(jv_object(), "plan", json_set(json_set(jv_object(), "summary", jv_string("big")), "tasks", tasks));
	char *s = gateview_summary(g, st, cfg, false), *f = gateview_full(g, st, cfg);

	CHECK(strstr(s, "  Tasks (11):\n") != NULL);
	CHECK(strstr(s, "    … 3 more ([v] shows all)\n") != NULL);
	CHECK(strstr(s, "t9 ") == NULL);
	CHECK(strstr(f, "    t11  x\n") != NULL);
	CHECK(strstr(s, "Risk: not assessed") != NULL);
	free(s);
	free(f);
	jv_free(st);
	jv_free(g);
}

static void test_review(void)
{
	jv g = gate("review_changes_1", "The review asks for changes: back to implement?");
	jv st = parse("{\"review\":{\"decision\":\"request_changes\",\"findings\":["
		"{\"file\":\"calc.c\",\"line\":12,\"severity\":\"error\",\"message\":\"non-constant format\",\"fix\":\"use %s\"},"
		"{\"file\":\"calc.h\",\"severity\":\"warning\",\"message\":\"no prototype\"}]},"
		"\"changes\":{\"files\":[{\"path\":\"calc.c\",\"action\":\"modify\",\"additions\":8,\"deletions\":1},"
		"{\"path\":\"calc.h\",\"action\":\"create\",\"additions\":2,\"deletions\":0}],"
		"\"diff\":\"diff --git a/calc.c b/calc.c\\n+++ b/calc.c\\n+printf(s);\\n\"}}");
	char *s = gateview_summary(g, st, cfg, false), *f = gateview_full(g, st, cfg);

	CHECK(strstr(s, "  Review: request_changes\n") != NULL);
	CHECK(strstr(s, "    calc.c  +8 -1\n    calc.h  +2 -0  create\n") != NULL);
	CHECK(strstr(s, "    2 files changed, 10 insertions(+), 1 deletion(-)\n") != NULL);
	CHECK(strstr(s, "  Findings (2):\n    calc.c:12: error: non-constant format\n    calc.h: warning: no prototype\n") != NULL);
	CHECK(strstr(s, "fix: use %s") == NULL);
	CHECK(strstr(f, "        fix: use %s\n") != NULL);
	CHECK(strstr(f, "+printf(s);\n") != NULL);	/* the whole diff */
	free(s);
	free(f);
	jv_free(st);
	jv_free(g);
}

/* A file's name holding a newline is one entry, quoted as git quotes it:
 * raw, its second line read as another file (or finding) at the gate. */
static void test_review_quoted_names(void)
{
	jv g = gate("review_changes_1", "The review asks for changes: back to implement?");
	jv st = parse("{\"review\":{\"decision\":\"request_changes\",\"findings\":["
		"{\"file\":\"a\\nb.c\",\"line\":3,\"severity\":\"error\",\"message\":\"bad\"}]},"
		"\"changes\":{\"files\":[{\"path\":\"a\\nb.c\",\"action\":\"create\",\"additions\":1,\"deletions\":0},"
		"{\"path\":\"x\\u001b[2Jy.c\",\"action\":\"modify\",\"additions\":1,\"deletions\":1}]}}");
	char *s = gateview_summary(g, st, cfg, false);

	CHECK_MSG(strstr(s, "    \"a\\nb.c\"  +1 -0  create\n    \"x\\033[2Jy.c\"  +1 -1\n") != NULL, "%s", s);
	CHECK_MSG(strstr(s, "  Findings (1):\n    \"a\\nb.c\":3: error: bad\n") != NULL, "%s", s);
	free(s);
	jv_free(st);
	jv_free(g);
}

/* Without changes.files the stat is counted from the diff. */
static void test_review_stat_from_diff(void)
{
	jv g = gate("security_findings", "Critical security finding requires human review.");
	jv st = parse("{\"review\":{\"findings\":[{\"file\":\"a.c\",\"line\":3,\"severity\":\"critical\","
		"\"category\":\"security\",\"message\":\"hard-coded key\"}]},"
		"\"changes\":{\"diff\":\"--- a/a.c\\n+++ b/a.c\\n@@ -1 +1,2 @@\\n-x\\n+y\\n+z\\n\"}}");
	char *s = gateview_summary(g, st, cfg, false);

	CHECK(strstr(s, "    a.c\n    1 file changed, 2 insertions(+), 1 deletion(-)\n") != NULL);
	CHECK(strstr(s, "    a.c:3: critical: hard-coded key\n") != NULL);
	free(s);
	jv_free(st);
	jv_free(g);
}

static void test_tests(void)
{
	jv g = gate("test_failures_1", "Tests fail: back to implement with the fixes?");
	jv st = parse("{\"tests\":{\"command\":\"make check\",\"summary\":{\"total\":5,\"passed\":4,\"failed\":1},"
		"\"failures\":[{\"test\":\"mul\",\"file\":\"tests/check.sh\",\"line\":9,"
		"\"message\":\"expected 42\\ngot 13\",\"suggested_fix\":\"multiply, do not add\",\"confidence\":0.9,"
		"\"output\":\"FAIL mul\"}]}}");
	char *s = gateview_summary(g, st, cfg, false), *f = gateview_full(g, st, cfg);

	CHECK(strstr(s, "  Tests: make check\n  5 run, 4 passed, 1 failed, 0 skipped\n") != NULL);
	CHECK(strstr(s, "  Failing (1):\n    ✗ mul  (tests/check.sh:9)\n        expected 42\n") != NULL);
	CHECK(strstr(s, "got 13") == NULL);	/* the message's first line only */
	CHECK(strstr(s, "        suggested fix (confidence 0.90):\n          multiply, do not add\n") != NULL);
	CHECK(strstr(f, "        got 13\n") != NULL);
	CHECK(strstr(f, "        | FAIL mul\n") != NULL);
	free(s);
	free(f);
	jv_free(st);
	jv_free(g);
}

static void test_deploy(void)
{
	jv g = gate("production_deploy", "Approve production deployment.");
	jv st = parse("{\"task\":{\"description\":\"x\",\"environment\":\"production\"},"
		      "\"plan\":{\"risk\":{\"level\":\"medium\"}},\"changes\":{\"commit\":\"abc123\"}}");
	char *s = gateview_summary(g, st, cfg, false), *f = gateview_full(g, st, cfg);

	CHECK(strstr(s, "  Environment: production\n  Strategy: command\n") != NULL);
	CHECK(strstr(s, "  Canary steps (medium risk): 5% → 25% → 100%\n") != NULL);
	CHECK(strstr(s, "  Health check: http://127.0.0.1:9/health\n") != NULL);
	CHECK(strstr(s, "    error rate ≤ 0.05, p95 latency ≤ 1000 ms, 5 samples a step\n") != NULL);
	CHECK(strstr(f, "  Commit: abc123\n") != NULL);
	free(s);
	free(f);
	jv_free(st);
	jv_free(g);
}

static void test_other(void)
{
	jv g = json_set(gate("cost_overrun", "Approaching cost budget. Continue?"), "condition",
			jv_string(".cost.usd > .budget.usd * 0.8"));
	jv st = parse("{\"cost\":{\"usd\":0.9,\"tokens\":1200},\"budget\":{\"usd\":1}}");
	char *s = gateview_summary(g, st, cfg, false);

	CHECK(strstr(s, "  Condition: .cost.usd > .budget.usd * 0.8\n") != NULL);
	CHECK(strstr(s, "  Cost so far: $0.9000 of a $1.00 budget (90%)\n  Tokens: 1200\n") != NULL);
	CHECK_INT(count(s, "forge run: gate cost_overrun"), 1);
	free(s);
	jv_free(st);
	jv_free(g);
}

/* A pipeline node's own gate (compile's gate 1, architecture_approval_NODE)
 * shows the documents it names, not the plan view of a run with no plan. */
static void test_node_gate_documents(void)
{
	jv g = json_set(gate("architecture_approval_schema", "Gate 1: approve the rule set"), "shows",
			parse("[\"rules\",\"nothing\"]"));
	jv st = parse("{\"rules\":{\"rules\":[{\"id\":\"R1\",\"if\":\"a client posts\",\"then\":\"201\"}]}}");
	char *s = gateview_summary(g, st, cfg, false);

	CHECK_MSG(strstr(s, "  rules:\n") != NULL && strstr(s, "\"if\": \"a client posts\"") != NULL, "%s", s);
	CHECK(strstr(s, "  nothing:\n    (not in the run's state)\n") != NULL);
	CHECK(strstr(s, "no plan") == NULL);
	free(s);
	jv_free(st);
	jv_free(g);
}

int main(void)
{
	char home[] = "/tmp/forge-gateview-test-XXXXXX";
	struct config_sources src = { NULL, NULL, jv_null() };

	/* the view's header begins with the program's name, as forge run's does */
	program_invocation_short_name = (char *)"forge run";
	/* no user's configuration: the defaults, and a command deploy with a health URL */
	setenv("HOME", mkdtemp(home), 1);
	setenv("XDG_CONFIG_HOME", home, 1);
	src.flags = parse("{\"deploy\":{\"strategy\":\"command\"},\"tools\":{\"health_url\":\"http://127.0.0.1:9/health\"}}");
	if (config_load(&cfg, &src) < 0) {
		printf("Bail out! %s\n", forge_last_error());
		return 1;
	}
	RUN(test_kinds);
	RUN(test_plan);
	RUN(test_plan_escapes);
	RUN(test_review_quoted_names);
	RUN(test_plan_many_tasks);
	RUN(test_review);
	RUN(test_review_stat_from_diff);
	RUN(test_tests);
	RUN(test_deploy);
	RUN(test_other);
	RUN(test_node_gate_documents);
	config_free(cfg);
	unit_rmtree(home);
	return unit_done();
}
