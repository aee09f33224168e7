/* test_pipeline.c - the run's state machine, bounce decisions and gates. */
#include "data/config.h"
#include "core/forge.h"
#include "engine/gates.h"
#include "core/json.h"
#include "engine/pipeline.h"
#include "store/store.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct config *cfg;

static void test_transitions(void)
{
	CHECK(pipeline_can_transition(PL_IDLE, PL_PLANNING));
	/* --phases implement,review,test starts a run in implementing */
	CHECK(pipeline_can_transition(PL_IDLE, PL_IMPLEMENTING));
	CHECK(pipeline_can_transition(PL_IDLE, PL_TESTING));
	CHECK(!pipeline_can_transition(PL_IDLE, PL_COMPLETED));
	CHECK(!pipeline_can_transition(PL_IDLE, PL_PAUSED));
	CHECK(pipeline_can_transition(PL_REVIEWING, PL_IMPLEMENTING));
	CHECK(pipeline_can_transition(PL_TESTING, PL_IMPLEMENTING));
	CHECK(!pipeline_can_transition(PL_DEPLOYING, PL_IMPLEMENTING));
	CHECK(pipeline_can_transition(PL_PAUSED, PL_TESTING));
	CHECK(!pipeline_can_transition(PL_COMPLETED, PL_PLANNING));
	CHECK(pipeline_state_of("review") == PL_REVIEWING);
	CHECK(pipeline_state_of("nope") == PL_NSTATES);
	CHECK_STR(pipeline_state_name(PL_PAUSED), "paused");
}

static void test_next_phase_and_lists(void)
{
	const char *const some[] = { "plan", "review", NULL };
	struct pipeline_decision d;
	jv s = jv_parse("{}");

	CHECK_STR(pipeline_next_phase("plan", NULL), "implement");
	CHECK(pipeline_next_phase("deploy", NULL) == NULL);
	CHECK_STR(pipeline_next_phase("plan", some), "review");
	CHECK(pipeline_decide(&d, cfg, s, "plan", "ok", NULL, true) == 0);
	CHECK(d.action == PL_ACT_DONE);          /* a dry run stops after plan */
	CHECK(pipeline_decide(&d, cfg, s, "deploy", "ok", NULL, false) == 0 && d.action == PL_ACT_DONE);
	CHECK(pipeline_decide(&d, cfg, s, "implement", "skipped", NULL, false) == 0 && d.action == PL_ACT_REJECTED);
	CHECK(strstr(d.reason, "guard of implement") != NULL);
	CHECK(pipeline_decide(&d, cfg, s, "test", "tripped", NULL, false) == 0 && d.action == PL_ACT_TRIPPED);
	CHECK(pipeline_decide(&d, cfg, s, "plan", "escalated", NULL, false) == 0 && d.action == PL_ACT_HUMAN);
	jv_free(s);
}

/* changes.empty, or (a state of an older forge-implement) no file and no
 * commit past the base; a change, or no changes, is not empty */
static void test_changes_empty(void)
{
	static const struct {
		const char *state;
		bool empty;
	} cases[] = {
		{ "{\"changes\":{\"files\":[],\"empty\":true,\"commit\":\"a\",\"base_commit\":\"a\"}}", true },
		{ "{\"changes\":{\"files\":[],\"commit\":\"a\",\"base_commit\":\"a\"}}", true },
		{ "{\"changes\":{\"files\":[],\"empty\":true,\"commit\":\"b\",\"base_commit\":\"a\"}}", true },
		{ "{\"changes\":{\"files\":[],\"commit\":\"b\",\"base_commit\":\"a\"}}", false },
		{ "{\"changes\":{\"files\":[{\"path\":\"x\"}],\"commit\":\"a\",\"base_commit\":\"a\"}}", false },
		{ "{\"changes\":{\"files\":[]}}", false },
		{ "{}", false },
		{ "null", false },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		jv s = jv_parse(cases[i].state);
		CHECK(pipeline_changes_empty(s) == cases[i].empty);
		jv_free(s);
	}
}

static void test_review_bounces_until_the_limit(void)
{
	struct pipeline_decision d;
	jv s = jv_parse("{\"review\":{\"decision\":\"request_changes\",\"findings\":[{\"id\":\"f1\"}]},\"bounces\":[]}");

	CHECK(pipeline_decide(&d, cfg, s, "review", "rejected", NULL, false) == 0);
	CHECK(d.action == PL_ACT_BOUNCE);
	CHECK_STR(d.next, "implement");
	CHECK(json_get_num(d.bounce, "n", 0) == 1);
	CHECK_STR(json_get_str(d.bounce, "from"), "review");
	for (int i = 0; i < 3; i++)
		s = json_set(s, "bounces", jv_array_append(json_get(s, "bounces"), jv_copy(d.bounce)));
	jv_free(d.bounce);
	CHECK(pipeline_bounces(s, "review") == 3);
	CHECK(pipeline_decide(&d, cfg, s, "review", "rejected", NULL, false) == 0);
	CHECK(d.action == PL_ACT_HUMAN);
	CHECK(strstr(d.reason, "after 3 bounces") != NULL);
	jv_free(s);
}

static void test_test_bounces_only_with_fixable_failures(void)
{
	struct pipeline_decision d;
	jv s = jv_parse("{\"tests\":{\"summary\":{\"failed\":2},\"failures\":["
			"{\"test\":\"a\",\"suggested_fix\":\"x\",\"confidence\":0.9,\"classification\":\"real\"},"
			"{\"test\":\"b\",\"suggested_fix\":\"y\",\"confidence\":0.5,\"classification\":\"real\"}]},\"bounces\":[]}");

	CHECK(pipeline_decide(&d, cfg, s, "test", "rejected", NULL, false) == 0);
	CHECK(d.action == PL_ACT_BOUNCE);
	CHECK(strstr(d.reason, "1 fixable") != NULL);
	jv_free(d.bounce);
	jv_free(s);
	s = jv_parse("{\"tests\":{\"summary\":{\"failed\":1},\"failures\":["
		     "{\"test\":\"b\",\"suggested_fix\":\"y\",\"confidence\":0.7}]}}");
	CHECK(pipeline_decide(&d, cfg, s, "test", "rejected", NULL, false) == 0);
	CHECK(d.action == PL_ACT_HUMAN);      /* 0.7 is not above 0.7 */
	jv_free(s);
}

static void test_gates_fire_by_phase_and_condition(void)
{
	jv fired;
	jv s = jv_parse("{\"plan\":{\"risk\":{\"level\":\"high\"}},\"cost\":{\"usd\":1},\"budget\":{\"usd\":50},"
			"\"task\":{\"environment\":\"production\"}}");

	CHECK(gates_fired(&fired, cfg, s, "plan", "implement") == 0);
	CHECK_INT(jv_array_length(jv_copy(fired)), 1);
	jv g = jv_array_get(jv_copy(fired), 0);
	CHECK_STR(json_get_str(g, "id"), "architecture_approval");
	CHECK(gate_auto_decision(cfg, g, 1, true) == GATE_AUTO_FLAG);
	CHECK(gate_auto_decision(cfg, g, 4, false) == GATE_ASK);       /* auto_approve_level null */
	jv_free(g);
	jv_free(fired);
	CHECK(gates_fired(&fired, cfg, s, "test", "deploy") == 0);
	g = jv_array_get(jv_copy(fired), 0);
	CHECK_STR(json_get_str(g, "id"), "production_deploy");
	CHECK(gate_auto_decision(cfg, g, 4, true) == GATE_ASK);        /* never unasked */
	jv_free(g);
	jv_free(fired);
	s = json_set(s, "cost", json_set(jv_object(), "usd", jv_number(45)));
	CHECK(gates_fired(&fired, cfg, s, "implement", "review") == 0);
	g = jv_array_get(jv_copy(fired), 0);
	CHECK_STR(json_get_str(g, "id"), "cost_overrun");
	CHECK(gate_auto_decision(cfg, g, 4, false) == GATE_AUTO_LEVEL);
	CHECK(gate_auto_decision(cfg, g, 3, false) == GATE_ASK);
	/* in person (an agent's question): neither the flag nor the level */
	g = json_set(g, "in_person", jv_true());
	CHECK(gate_auto_decision(cfg, g, 4, true) == GATE_ASK);
	CHECK(gate_auto_decision(cfg, g, 4, false) == GATE_ASK);
	jv_free(g);
	g = jv_parse("{\"id\":\"escalation_implement\",\"prompt\":\"implement needs a human\"}");
	CHECK(gate_auto_decision(cfg, g, 4, true) == GATE_AUTO_FLAG);
	g = json_set(g, "in_person", jv_true());
	CHECK(gate_auto_decision(cfg, g, 4, true) == GATE_ASK);
	jv_free(g);
	jv_free(fired);
	jv_free(s);
}

static void test_gate_rows(void)
{
	struct store *st;
	char id[ULID_LEN + 1];
	jv row, gate = jv_parse("{\"id\":\"architecture_approval\",\"prompt\":\"Review it.\",\"timeout_s\":3600}");

	CHECK(store_open(&st, ":memory:") == 0);
	CHECK(gate_request(id, st, "T1", gate, "plan") == 0);
	CHECK(gate_latest(&row, st, "T1", "architecture_approval") == 0);
	CHECK_STR(json_get_str(row, "status"), "pending");
	jv_free(row);
	CHECK(gate_list(&row, st, NULL, true) == 0 && jv_array_length(jv_copy(row)) == 1);
	jv_free(row);
	CHECK(gate_decide(st, id, true, "human", "ship it") == 0);
	CHECK(gate_decide(st, id, false, "human", NULL) == GATE_REFUSED);   /* decided once */
	CHECK(strstr(forge_last_error(), "already approved") != NULL);
	CHECK(gate_get(&row, st, id) == 0);
	CHECK_STR(json_get_str(row, "note"), "ship it");
	jv_free(row);
	CHECK(gate_decide(st, "NOPE", true, "human", NULL) == GATE_REFUSED);
	/* A gate past its timeout expires. */
	jv quick = jv_parse("{\"id\":\"cost_overrun\",\"prompt\":\"p\",\"timeout_s\":0.001}");
	CHECK(gate_request(id, st, "T1", quick, "*") == 0);
	jv_free(quick);
	usleep(20000);	/* past the 1 ms timeout */
	CHECK(gate_latest(&row, st, "T1", "cost_overrun") == 0);
	CHECK_STR(json_get_str(row, "status"), "expired");
	jv_free(row);
	jv_free(gate);
	store_free(st);
}

/* Gate statuses round-trip through their names. */
static void test_gate_status(void)
{
	static const char *const names[] = { "pending", "approved", "rejected", "expired" };

	for (int i = 0; i < 4; i++) {
		CHECK_INT(gate_status_of(names[i]), i);
		CHECK_STR(gate_status_name((enum gate_status)i), names[i]);
	}
	CHECK_INT(gate_status_of("Approved"), GATE_UNKNOWN);
	CHECK_INT(gate_status_of(NULL), GATE_UNKNOWN);
}

/* The shipped table, level by level, as README's ladder says it. */
static void test_ladder_rules(void)
{
	static const struct {
		const char *point, *risk;
		enum ladder_rule at[5];
	} want[] = {
		{ "phase_result", NULL, { LADDER_ASK, LADDER_AUTO, LADDER_AUTO, LADDER_AUTO, LADDER_AUTO } },
		{ "review_changes", NULL, { LADDER_ASK, LADDER_ASK, LADDER_AUTO, LADDER_AUTO, LADDER_AUTO } },
		{ "test_failures", NULL, { LADDER_ASK, LADDER_ASK, LADDER_AUTO, LADDER_AUTO, LADDER_AUTO } },
		{ "approved_review", "low", { LADDER_ASK, LADDER_ASK, LADDER_AUTO, LADDER_AUTO, LADDER_AUTO } },
		{ "approved_review", "medium", { LADDER_ASK, LADDER_ASK, LADDER_ASK, LADDER_ASK, LADDER_AUTO } },
		{ "approved_review", "critical", { LADDER_ASK, LADDER_ASK, LADDER_ASK, LADDER_ASK, LADDER_AUTO } },
		{ "staging_deploy", NULL, { LADDER_ASK, LADDER_ASK, LADDER_ASK, LADDER_AUTO, LADDER_AUTO } },
		{ "production_deploy", NULL, { LADDER_HUMAN, LADDER_HUMAN, LADDER_HUMAN, LADDER_HUMAN, LADDER_HUMAN } },
		{ "security_findings", NULL, { LADDER_ASK, LADDER_ASK, LADDER_ASK, LADDER_ASK, LADDER_ASK } },
		{ "architecture_approval", NULL, { LADDER_ASK, LADDER_ASK, LADDER_ASK, LADDER_ASK, LADDER_ASK } },
	};

	CHECK_INT(config_get_num(cfg, "safety.automation_level"), 4);
	for (size_t i = 0; i < sizeof want / sizeof *want; i++)
		for (int level = 0; level <= 4; level++)
			if (ladder_rule(cfg, level, want[i].point, want[i].risk) != want[i].at[level])
				CHECK_MSG(false, "%s %s at level %d: %s", want[i].point, want[i].risk ? want[i].risk : "",
					  level, ladder_rule_name(ladder_rule(cfg, level, want[i].point, want[i].risk)));
	/* an unknown risk is the strictest, no rule at all is a human's */
	CHECK(ladder_rule(cfg, 2, "approved_review", NULL) == LADDER_ASK);
	CHECK(ladder_rule(cfg, 2, "approved_review", "huge") == LADDER_ASK);
	CHECK(ladder_rule(cfg, 5, "phase_result", NULL) == LADDER_HUMAN);
	CHECK(ladder_rule(cfg, -1, "phase_result", NULL) == LADDER_HUMAN);
	CHECK(ladder_rule(cfg, 4, "no_such_point", NULL) == LADDER_HUMAN);
	CHECK(ladder_rule(NULL, 4, "phase_result", NULL) == LADDER_HUMAN);
	CHECK_STR(ladder_level_name(cfg, 1), "AI suggests, a human decides");
	CHECK(ladder_level_name(cfg, 7) == NULL);
}

/* Gate ids of an array of gates (borrowed), comma-separated, in buf. */
static const char *ids(char *buf, size_t n, jv gates)
{
	buf[0] = '\0';
	jv_array_foreach(gates, i, g) {
		size_t len = strlen(buf);
		snprintf(buf + len, n - len, "%s%s", i ? "," : "", json_get_str(g, "id"));
		jv_free(g);
	}
	return buf;
}

static void test_ladder_gates(void)
{
	char buf[256];
	jv s = jv_parse("{\"phase\":\"plan\",\"status\":\"ok\",\"task\":{\"environment\":\"staging\"},"
			"\"bounces\":[]}");
	jv g;

	/* level 0: every result waits; one gate per step */
	g = gates_ladder(jv_array(), cfg, 0, s, "plan", "implement", false);
	CHECK_STR(ids(buf, sizeof buf, g), "plan_result");
	jv g0 = jv_array_get(jv_copy(g), 0);
	CHECK_STR(json_get_str(g0, "ladder"), "phase_result");
	CHECK(gate_auto_decision(cfg, g0, 0, false) == GATE_ASK);
	CHECK(gate_auto_decision(cfg, g0, 0, true) == GATE_AUTO_FLAG);
	CHECK(gate_auto_decision(cfg, g0, 1, false) == GATE_AUTO_LEVEL);
	jv_free(g0);
	jv_free(g);
	g = gates_ladder(jv_array(), cfg, 0, s, "plan", "implement", true);    /* another gate asks */
	CHECK_STR(ids(buf, sizeof buf, g), "");
	jv_free(g);
	g = gates_ladder(jv_array(), cfg, 1, s, "plan", "implement", false);
	CHECK_STR(ids(buf, sizeof buf, g), "");
	jv_free(g);
	/* the result of the node named, not of state.phase's: after review and
	 * test ran at once and test merged last, review's result still asks
	 * (the caller passes only nodes that ended ok) */
	s = json_set(json_set(s, "phase", jv_string("test")), "review",
		     jv_parse("{\"decision\":\"approve\",\"risk\":{\"level\":\"medium\"}}"));
	g = gates_ladder(jv_array(), cfg, 3, s, "review", "deploy", false);
	CHECK_STR(ids(buf, sizeof buf, g), "review_approved");
	jv_free(g);
	s = jv_object_delete(s, jv_string("review"));
	/* an approved review by its risk, attempt 2 after a bounce */
	s = json_set(json_set(s, "phase", jv_string("review")), "status", jv_string("ok"));
	s = json_set(s, "bounces", jv_parse("[{\"from\":\"review\",\"n\":1}]"));
	s = json_set(s, "review", jv_parse("{\"decision\":\"approve\",\"risk\":{\"level\":\"low\"}}"));
	g = gates_ladder(jv_array(), cfg, 2, s, "review", "test", false);
	CHECK_STR(ids(buf, sizeof buf, g), "");
	jv_free(g);
	g = gates_ladder(jv_array(), cfg, 1, s, "review", "test", false);
	CHECK_STR(ids(buf, sizeof buf, g), "review_approved_2");
	jv_free(g);
	s = json_set(s, "review", jv_parse("{\"decision\":\"approve\",\"risk\":{\"level\":\"medium\"}}"));
	g = gates_ladder(jv_array(), cfg, 3, s, "review", "test", false);
	CHECK_STR(ids(buf, sizeof buf, g), "review_approved_2");
	jv_free(g);
	g = gates_ladder(jv_array(), cfg, 4, s, "review", "test", false);
	CHECK_STR(ids(buf, sizeof buf, g), "");
	jv_free(g);
	/* staging deploys ask below 3, and then the tests' result is not asked again */
	s = json_set(json_set(s, "phase", jv_string("test")), "status", jv_string("ok"));
	g = gates_ladder(jv_array(), cfg, 0, s, "test", "deploy", false);
	CHECK_STR(ids(buf, sizeof buf, g), "staging_deploy");
	jv_free(g);
	g = gates_ladder(jv_array(), cfg, 2, s, "test", "deploy", false);
	CHECK_STR(ids(buf, sizeof buf, g), "staging_deploy");
	jv_free(g);
	g = gates_ladder(jv_array(), cfg, 3, s, "test", "deploy", false);
	CHECK_STR(ids(buf, sizeof buf, g), "");
	jv_free(g);
	/* production is the production_deploy gate's, not staging's */
	s = json_set(s, "task", jv_parse("{\"environment\":\"production\"}"));
	g = gates_ladder(jv_array(), cfg, 0, s, "test", "deploy", false);
	CHECK_STR(ids(buf, sizeof buf, g), "test_result_2");
	jv_free(g);
	jv_free(s);
}

static void test_ladder_bounces(void)
{
	jv b = jv_parse("{\"from\":\"review\",\"to\":\"implement\",\"n\":1,\"reason\":\"review requested changes (1 finding)\"}");
	jv g;

	g = gate_for_bounce(cfg, 2, b);
	CHECK(jv_get_kind(g) == JV_KIND_NULL);
	jv_free(g);
	g = gate_for_bounce(cfg, 1, b);
	CHECK_STR(json_get_str(g, "id"), "review_changes");
	CHECK_STR(json_get_str(g, "phase"), "review");
	CHECK(strstr(json_get_str(g, "prompt"), "review requested changes (1 finding)") != NULL);
	CHECK(gate_auto_decision(cfg, g, 1, false) == GATE_ASK);
	CHECK(gate_auto_decision(cfg, g, 1, true) == GATE_AUTO_FLAG);
	jv_free(g);
	b = json_set(json_set(b, "from", jv_string("test")), "n", jv_number(2));
	g = gate_for_bounce(cfg, 0, b);
	CHECK_STR(json_get_str(g, "id"), "test_failures_2");
	jv_free(g);
	g = gate_for_bounce(cfg, 4, b);
	CHECK(jv_get_kind(g) == JV_KIND_NULL);
	jv_free(g);
	/* another node's bounce is another question: its id names it, and the
	 * prompt says where it goes back to, not "tests failed" */
	b = json_set(json_set(json_set(b, "from", jv_string("lint")), "to", jv_string("build")), "reason",
		     jv_string("node 'lint' said no"));
	g = gate_for_bounce(cfg, 1, b);
	CHECK_STR(json_get_str(g, "id"), "test_failures_lint_2");
	CHECK_STR(json_get_str(g, "ladder"), "test_failures");
	CHECK_STR(json_get_str(g, "prompt"), "node 'lint' said no. Approve to go back to build (its bounce); reject to end the run.");
	jv_free(g);
	jv_free(b);
}

/* A configured gate named like a ladder point takes the ladder's rule, not
 * its auto_approve_level; production_deploy never passes unasked. */
static void test_ladder_overrides_auto_approve_level(void)
{
	jv g = jv_parse("{\"id\":\"production_deploy\",\"auto_approve_level\":0}");

	CHECK(gate_auto_decision(cfg, g, 4, true) == GATE_ASK);
	CHECK(gate_auto_decision(NULL, g, 4, true) == GATE_ASK);
	jv_free(g);
	g = jv_parse("{\"id\":\"architecture_approval\",\"auto_approve_level\":0}");
	CHECK(gate_auto_decision(cfg, g, 4, false) == GATE_ASK);
	jv_free(g);
	g = jv_parse("{\"id\":\"my_gate\",\"auto_approve_level\":2}");
	CHECK(gate_auto_decision(cfg, g, 2, false) == GATE_AUTO_LEVEL);
	CHECK(gate_auto_decision(cfg, g, 1, false) == GATE_ASK);
	jv_free(g);
}

int main(void)
{
	RUN(test_gate_status);
	char dir[] = "/tmp/forge-pipeline-XXXXXX";
	struct config_sources src = { .flags = jv_null() };

	if (!mkdtemp(dir))
		return 1;
	setenv("XDG_CONFIG_HOME", dir, 1);
	setenv("HOME", dir, 1);
	if (config_load(&cfg, &src) < 0) {
		printf("# config: %s\n", forge_last_error());
		return 1;
	}
	RUN(test_transitions);
	RUN(test_next_phase_and_lists);
	RUN(test_changes_empty);
	RUN(test_review_bounces_until_the_limit);
	RUN(test_test_bounces_only_with_fixable_failures);
	RUN(test_gates_fire_by_phase_and_condition);
	RUN(test_gate_rows);
	RUN(test_ladder_rules);
	RUN(test_ladder_gates);
	RUN(test_ladder_bounces);
	RUN(test_ladder_overrides_auto_approve_level);
	config_free(cfg);
	unit_rmtree(dir);
	return unit_done();
}
