/*
 * test_reflect_run.c - run reflection, Loop 3 (app/reflect_run.h): each
 * trigger at its threshold and just below it, "fired once" in the state,
 * the state a firing leaves (learnings kept for implement, cost counted),
 * the digest the model reads, and the facts read from a real store (tool
 * calls, a human's approval over a phase's "no").
 */
#include <stdlib.h>
#include <string.h>

#include "app/reflect_run.h"
#include "core/forge.h"
#include "core/ids.h"
#include "core/json.h"
#include "engine/gates.h"
#include "store/store.h"
#include "unit.h"

static jv parse(const char *s)
{
	return json_parse(s, strlen(s));
}

/* The triggers that hold for STATE (JSON) and facts, as compact JSON (static). */
static const char *holding(const char *state, long calls, long failed, bool human)
{
	static char out[512];
	struct reflect_facts f = { .tool_calls = calls, .tool_failed = failed, .human_override = human };
	jv st = parse(state);
	char *s = json_dumps(reflect_triggers(st, &f), false);

	snprintf(out, sizeof out, "%s", s);
	free(s);
	jv_free(st);
	return out;
}

#define B(from) "{\"from\":\"" from "\",\"to\":\"implement\",\"n\":1}"

static void test_bounces(void)
{
	CHECK_STR(holding("{\"bounces\":[]}", 0, 0, false), "[]");
	CHECK_STR(holding("{\"bounces\":[" B("review") "]}", 0, 0, false), "[]");
	CHECK_STR(holding("{\"bounces\":[" B("review") "," B("review") "]}", 0, 0, false), "[\"2+ bounces\"]");
	/* review and test bounces count together */
	CHECK_STR(holding("{\"bounces\":[" B("review") "," B("test") "]}", 0, 0, false), "[\"2+ bounces\"]");
	CHECK_STR(holding("{}", 0, 0, false), "[]");
}

static void test_budget(void)
{
	CHECK_STR(holding("{\"cost\":{\"usd\":25},\"budget\":{\"usd\":50}}", 0, 0, false), "[]");
	CHECK_STR(holding("{\"cost\":{\"usd\":25.01},\"budget\":{\"usd\":50}}", 0, 0, false), "[\">50% of budget\"]");
	/* no budget (0 or none): nothing to be over half of */
	CHECK_STR(holding("{\"cost\":{\"usd\":3},\"budget\":{\"usd\":0}}", 0, 0, false), "[]");
	CHECK_STR(holding("{\"cost\":{\"usd\":3}}", 0, 0, false), "[]");
}

static void test_tool_errors(void)
{
	/* too few calls to speak of a rate */
	CHECK_STR(holding("{}", REFLECT_MIN_TOOL_CALLS - 1, 5, false), "[]");
	/* exactly 10% is not over 10% */
	CHECK_STR(holding("{}", 10, 1, false), "[]");
	CHECK_STR(holding("{}", 20, 2, false), "[]");
	CHECK_STR(holding("{}", 10, 2, false), "[\">10% tool error rate\"]");
	CHECK_STR(holding("{}", 21, 3, false), "[\">10% tool error rate\"]");
}

static void test_all_in_order(void)
{
	CHECK_STR(holding("{\"bounces\":[" B("test") "," B("test") "],\"cost\":{\"usd\":40},\"budget\":{\"usd\":50}}",
			  10, 5, true),
		  "[\"2+ bounces\",\">50% of budget\",\">10% tool error rate\",\"human override\"]");
	CHECK_STR(reflect_trigger_id("2+ bounces"), "bounces");
	CHECK_STR(reflect_trigger_id(">50% of budget"), "budget");
	CHECK_STR(reflect_trigger_id(">10% tool error rate"), "tool_errors");
	CHECK_STR(reflect_trigger_id("human override"), "human_override");
	CHECK(reflect_trigger_id("run completed") == NULL);
}

static void test_fired_once(void)
{
	jv st = parse("{\"reflection\":{\"fired\":[\"2+ bounces\"]}}");
	bool a = reflect_fired(st, "2+ bounces"), b = reflect_fired(st, "human override");

	jv_free(st);
	CHECK(a && !b);
	st = parse("{}");
	a = reflect_fired(st, "2+ bounces");
	jv_free(st);
	CHECK(!a);
}

/* A firing: what fired, the learnings with their trigger, calls and cost. */
static void test_record(void)
{
	jv st = parse("{\"cost\":{\"usd\":1.5,\"tokens\":1000},\"budget\":{\"usd\":50,\"remaining_usd\":48.5}}");

	st = reflect_record(st, "2+ bounces",
			    parse("[{\"id\":\"A\",\"type\":\"procedural\",\"content\":\"c\",\"context\":\"x\"}]"),
			    true, 0.25, 300);
	st = reflect_record(st, "human override", jv_array(), false, 0, 0);
	jv want = parse("{\"cost\":{\"usd\":1.75,\"tokens\":1300},\"budget\":{\"usd\":50,\"remaining_usd\":48.25},"
			"\"reflection\":{\"fired\":[\"2+ bounces\",\"human override\"],"
			"\"learnings\":[{\"id\":\"A\",\"type\":\"procedural\",\"content\":\"c\",\"context\":\"x\","
			"\"trigger\":\"2+ bounces\"}],\"calls\":1,\"cost_usd\":0.25}}");
	bool same = json_equal(st, want);
	char *got = json_dumps(jv_copy(st), true);

	jv_free(want);
	jv_free(st);
	CHECK_MSG(same, "%s", got);
	free(got);
}

/* The state keeps the newest REFLECT_STATE_LEARNINGS learnings. */
static void test_record_keeps_newest(void)
{
	jv st = jv_object(), many = jv_array();

	for (int i = 0; i < REFLECT_STATE_LEARNINGS + 3; i++)
		many = jv_array_append(many, json_set(json_set(jv_object(), "id", jv_string_fmt("L%d", i)),
						      "content", jv_string("c")));
	st = reflect_record(st, ">50% of budget", many, true, 0, 0);
	jv kept = json_get_path(st, "reflection.learnings");
	int n = jv_array_length(jv_copy(kept));
	jv first = jv_array_get(jv_copy(kept), 0);
	char id[16];

	snprintf(id, sizeof id, "%s", json_get_str(first, "id"));
	jv_free(first);
	jv_free(kept);
	jv_free(st);
	CHECK_INT(n, REFLECT_STATE_LEARNINGS);
	CHECK_STR(id, "L3");
}

/* One event record of the store's shape. */
static jv ev(const char *source, const char *type, const char *payload)
{
	jv e = json_set(json_set(jv_object(), "kind", jv_string("event")), "source", jv_string(source));

	e = json_set(e, "type", jv_string(type));
	return json_set(e, "payload", parse(payload));
}

#define FINDING "{\"rule\":\"insecure/c-format\",\"severity\":\"error\",\"file\":\"calc.c\",\"line\":24," \
	"\"message\":\"format string is not a constant\"}"

static void test_digest(void)
{
	jv events = jv_array();
	jv st = parse("{\"task\":{\"description\":\"add calc_trace\"},\"cost\":{\"usd\":2,\"tokens\":900},"
		      "\"budget\":{\"usd\":10}}");

	events = jv_array_append(events, ev("forge-supervisor", "phase.exited", "{\"phase\":\"plan\"}"));
	events = jv_array_append(events, ev("forge-implement", "tool.executed", "{\"tool\":\"write_file\"}"));
	events = jv_array_append(events, ev("forge-implement", "tool.failed",
					    "{\"tool\":\"run_command\",\"error\":\"make: *** [check] Error 1\\nmore\"}"));
	events = jv_array_append(events, ev("forge-supervisor", "phase.exited", "{\"phase\":\"implement\"}"));
	events = jv_array_append(events, ev("forge-supervisor", "loop.phase_bounce",
		"{\"from\":\"review\",\"to\":\"implement\",\"n\":1,\"reason\":\"changes requested\",\"findings\":[" FINDING "]}"));
	events = jv_array_append(events, ev("forge-supervisor", "loop.phase_bounce",
		"{\"from\":\"review\",\"to\":\"implement\",\"n\":2,\"reason\":\"changes requested\",\"findings\":[" FINDING "]}"));
	events = jv_array_append(events, ev("forge-supervisor", "loop.phase_bounce",
		"{\"from\":\"test\",\"to\":\"implement\",\"n\":1,\"reason\":\"1 failed\",\"failures\":[{\"test\":\"mul\","
		"\"message\":\"6 != 42\",\"root_cause\":\"adds\",\"suggested_fix\":\"multiply\"}]}"));
	events = jv_array_append(events, ev("forge-supervisor", "gate.approved",
		"{\"gate\":\"escalation_review\",\"by\":\"human\",\"note\":\"division by zero is handled\"}"));
	events = jv_array_append(events, ev("forge-supervisor", "gate.approved", "{\"gate\":\"cost_overrun\",\"by\":\"flag\"}"));
	events = jv_array_append(events, ev("forge-supervisor", "human.override",
		"{\"phase\":\"review\",\"reason\":\"the review needs a human\"}"));
	char *d = reflect_digest(st, events, "2+ bounces");

	jv_free(events);
	jv_free(st);
	CHECK(strstr(d, "Trigger: 2+ bounces. Why are fixes not sticking?\n") != NULL);
	CHECK(strstr(d, "Task: add calc_trace\n") != NULL);
	CHECK(strstr(d, "Phases run: plan → implement\n") != NULL);
	CHECK(strstr(d, "Cost so far: $2.0000 of a $10.00 budget (20%), 900 tokens\n") != NULL);
	CHECK(strstr(d, "1. review sent implement back (review bounce 1): changes requested\n"
			"   - calc.c:24 error [insecure/c-format]: format string is not a constant\n") != NULL);
	/* the same finding again: marked */
	CHECK(strstr(d, "2. review sent implement back (review bounce 2): changes requested\n"
			"   - calc.c:24 error [insecure/c-format]: format string is not a constant "
			"(AGAIN: it sent implement back before)\n") != NULL);
	CHECK(strstr(d, "   - (no file) [mul]: 6 != 42; root cause: adds; suggested fix: multiply\n") != NULL);
	/* newlines inside a message do not break the digest's lines */
	CHECK(strstr(d, "Failed tool calls: 1 of 2:\n- forge-implement run_command: make: *** [check] Error 1 more\n") != NULL);
	CHECK(strstr(d, "Human decisions:\n- gate escalation_review approved by a human, note: division by zero is handled\n"
			"- the run went on past review's \"no\": the review needs a human\n") != NULL);
	/* what a flag passed is not a human's decision */
	CHECK(strstr(d, "cost_overrun") == NULL);
	free(d);
}

/* Many long failures: the newest few, each cut, the whole digest bounded. */
static void test_digest_bounded(void)
{
	jv events = jv_array(), st = parse("{\"task\":{\"description\":\"t\"}}");
	char big[4000];

	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	for (int i = 0; i < 200; i++) {
		jv p = json_set(json_set(jv_object(), "tool", jv_string_fmt("tool%d", i)), "error", jv_string(big));
		events = jv_array_append(events, json_set(ev("forge-implement", "tool.failed", "{}"), "payload", p));
	}
	char *d = reflect_digest(st, events, ">10% tool error rate");
	size_t n = strlen(d);
	bool last = strstr(d, "tool199") != NULL, early = strstr(d, "tool191 ") != NULL || strstr(d, "tool191:") != NULL;

	jv_free(events);
	jv_free(st);
	CHECK(strstr(d, "Failed tool calls: 200 of 200 (the last 8):\n") != NULL);
	CHECK(strstr(d, "What is going wrong?") != NULL);
	free(d);
	CHECK(last && !early);
	CHECK(n <= 12000);
}

/* An event in the store (borrows nothing: made and freed here). */
static int put(struct store *st, const char *trace, const char *type)
{
	char id[ULID_LEN + 1];
	jv e = json_set(json_set(jv_object(), "kind", jv_string("event")), "id", jv_string((ulid_new(id), id)));

	e = json_set(e, "trace_id", jv_string(trace));
	e = json_set(e, "ts", jv_string("2026-01-01T00:00:00.000Z"));
	e = json_set(e, "source", jv_string("forge-implement"));
	e = json_set(e, "type", jv_string(type));
	e = json_set(e, "payload", json_set(jv_object(), "tool", jv_string("run_command")));
	char *line = json_dumps(jv_copy(e), false);
	int rc = store_event_put(st, e, line, strlen(line), NULL);

	free(line);
	jv_free(e);
	return rc;
}

/* The facts from a real store: tool calls of this trace only; a human's
 * approval of an escalation gate is an override, a flag's or a human's
 * approval of another gate is not. */
static void test_facts(void)
{
	struct store *st = NULL;
	struct reflect_facts f;
	char id[ULID_LEN + 1];
	jv gate = parse("{\"id\":\"architecture_approval\",\"prompt\":\"p\",\"timeout_s\":3600}");
	jv esc = parse("{\"id\":\"escalation_review\",\"prompt\":\"p\",\"timeout_s\":3600}");

	CHECK(store_open(&st, ":memory:") == 0);
	for (int i = 0; i < 9; i++)
		CHECK(put(st, "T1", "tool.executed") == 0);
	CHECK(put(st, "T1", "tool.failed") == 0);
	CHECK(put(st, "T1", "tool.failed") == 0);
	CHECK(put(st, "T2", "tool.failed") == 0);
	CHECK(reflect_facts_read(&f, st, "T1") == 0);
	CHECK_INT(f.tool_calls, 11);
	CHECK_INT(f.tool_failed, 2);
	CHECK(!f.human_override);
	/* a human passes the architecture gate: no "no" was overridden */
	CHECK(gate_request(id, st, "T1", gate, "plan") == 0 && gate_decide(st, id, true, "human", NULL) == 0);
	/* the review said no; a flag passed it */
	CHECK(gate_request(id, st, "T1", esc, "review") == 0 && gate_decide(st, id, true, "flag", NULL) == 0);
	CHECK(reflect_facts_read(&f, st, "T1") == 0 && !f.human_override);
	/* on another trace a human passed it; then on this one */
	CHECK(gate_request(id, st, "T2", esc, "review") == 0 && gate_decide(st, id, true, "human", NULL) == 0);
	CHECK(reflect_facts_read(&f, st, "T1") == 0 && !f.human_override);
	CHECK(gate_request(id, st, "T1", esc, "review") == 0 && gate_decide(st, id, true, "human", "ok") == 0);
	CHECK(reflect_facts_read(&f, st, "T1") == 0 && f.human_override);
	jv_free(gate);
	jv_free(esc);
	store_free(st);
}

int main(void)
{
	RUN(test_bounces);
	RUN(test_budget);
	RUN(test_tool_errors);
	RUN(test_all_in_order);
	RUN(test_fired_once);
	RUN(test_record);
	RUN(test_record_keeps_newest);
	RUN(test_digest);
	RUN(test_digest_bounded);
	RUN(test_facts);
	return unit_done();
}
