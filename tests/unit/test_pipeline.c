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
	CHECK(gate_auto_decision(g, 1, true) == GATE_AUTO_FLAG);
	CHECK(gate_auto_decision(g, 4, false) == GATE_ASK);       /* auto_approve_level null */
	jv_free(g);
	jv_free(fired);
	CHECK(gates_fired(&fired, cfg, s, "test", "deploy") == 0);
	g = jv_array_get(jv_copy(fired), 0);
	CHECK_STR(json_get_str(g, "id"), "production_deploy");
	CHECK(gate_auto_decision(g, 4, true) == GATE_ASK);        /* never unasked */
	jv_free(g);
	jv_free(fired);
	s = json_set(s, "cost", json_set(jv_object(), "usd", jv_number(45)));
	CHECK(gates_fired(&fired, cfg, s, "implement", "review") == 0);
	g = jv_array_get(jv_copy(fired), 0);
	CHECK_STR(json_get_str(g, "id"), "cost_overrun");
	CHECK(gate_auto_decision(g, 4, false) == GATE_AUTO_LEVEL);
	CHECK(gate_auto_decision(g, 3, false) == GATE_ASK);
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
	CHECK(gate_decide(st, id, false, "human", NULL) == -1);   /* decided once */
	CHECK(strstr(forge_last_error(), "already approved") != NULL);
	CHECK(gate_get(&row, st, id) == 0);
	CHECK_STR(json_get_str(row, "note"), "ship it");
	jv_free(row);
	CHECK(gate_decide(st, "NOPE", true, "human", NULL) == -1);
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
	RUN(test_review_bounces_until_the_limit);
	RUN(test_test_bounces_only_with_fixable_failures);
	RUN(test_gates_fire_by_phase_and_condition);
	RUN(test_gate_rows);
	config_free(cfg);
	rmdir(dir);
	return unit_done();
}
