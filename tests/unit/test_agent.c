/*
 * test_agent.c - the agent loop against scripted models (replay cassettes)
 * and a fake tool executor: the happy path and every termination path.
 */
#include "agent/agent.h"
#include "agent/agent_internal.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "llm/llm.h"
#include "core/tokens.h"
#include "data/stream.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/forge-agent-XXXXXX";

/* ---- a scripted model ---------------------------------------------------- */

static char *write_cassette(const char *name, const char *text)
{
	char *path = NULL;
	size_t n = strlen(tmpdir) + strlen(name) + 2;

	path = xmalloc(n);
	snprintf(path, n, "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

static struct llm_client *client(const char *cassette_text, const char *phase)
{
	static int seq;
	char name[64];
	struct llm_options opt;
	struct llm_client *c = NULL;

	snprintf(name, sizeof name, "cassette-%d.jsonl", ++seq);
	char *path = write_cassette(name, cassette_text);
	llm_options_init(&opt);
	opt.provider = "replay";
	opt.cassette = path;
	opt.phase = phase;
	opt.attempt = 1;
	opt.model = "claude-sonnet-4-5";
	if (llm_client_new(&c, &opt) < 0)
		printf("# client: %s\n", forge_last_error());
	free(path);
	return c;
}

/* ---- a fake tool executor --------------------------------------------- */

struct fake {
	int calls;
	int fail_first;         /* this many transient failures before success */
	int always_fail;        /* every call fails, not retryable */
	const char *fail_on;    /* a call whose input holds this fails, not retryable */
	const char *gate;       /* every call needs approval */
	char log[1024];
};

static int fake_exec(struct agent_tool_outcome *out, const char *name, jv input, void *payload)
{
	struct fake *f = payload;
	char *in = json_dumps(jv_copy(input), true);

	f->calls++;
	size_t used = strlen(f->log);
	snprintf(f->log + used, sizeof f->log - used, "%s ", name);
	out->event = jv_null();
	if (f->gate) {
		out->ok = false;
		out->gate = xstrdup(f->gate);
		out->text = xstrdup("needs approval");
	} else if (f->always_fail || (f->fail_on && strstr(in, f->fail_on))) {
		out->ok = false;
		out->text = xstrdup("No such file");
	} else if (f->fail_first > 0) {
		f->fail_first--;
		out->ok = false;
		out->retryable = true;
		out->text = xstrdup("temporarily unavailable");
	} else {
		out->ok = true;
		size_t n = strlen(name) + strlen(in) + 16;
		out->text = xmalloc(n);
		snprintf(out->text, n, "%s(%s) ok", name, in);
	}
	free(in);
	return 0;
}

/* ---- running --------------------------------------------------------------- */

struct run {
	struct agent_result res;
	char *events;
	size_t len;
	struct fake fake;
	double slept[16];
	int nsleep;
	long long now;
	long long tick;         /* the fake clock advances this much per reading */
	int remembered;
	double remembered_confidence;
};

static void fake_sleep(void *payload, double s)
{
	struct run *r = payload;

	if (r->nsleep < 16)
		r->slept[r->nsleep++] = s;
}

static long long fake_clock(void *payload)
{
	struct run *r = payload;

	r->now += r->tick;
	return r->now;
}

static int remember(void *payload, jv learning)
{
	struct run *r = payload;

	r->remembered++;
	r->remembered_confidence = json_get_num(learning, "confidence", -1);
	jv_free(learning);
	return 0;
}

#define PLAN_SCHEMA_DEF "plan"
static void run_agent(struct run *r, struct agent_config *cfg, struct llm_client *llm,
		      struct llm_client *fast)
{
	FILE *mem = open_memstream(&r->events, &r->len);
	struct stream_out out;
	struct agent_env env = {
		.llm = llm, .fast = fast, .out = &out,
		.exec = fake_exec, .exec_payload = &r->fake,
		.remember = remember, .remember_payload = r,
		.sleep_fn = fake_sleep, .clock_ms = fake_clock, .test_payload = r,
	};

	stream_out_init(&out, mem, "test", cfg->phase);
	stream_out_set_trace(&out, "01JDB2AGENTAAAAAAAAAAAAAAA");
	agent_run(&r->res, cfg, &env, "Plan: add a --version flag");
	fclose(mem);
}

static void config(struct agent_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->phase = "plan";
	cfg->system_prompt = "You plan.";
	cfg->tools = jv_parse("[{\"name\":\"read_file\",\"description\":\"read\",\"input_schema\":{\"type\":\"object\"}}]");
	cfg->result_schema = jv_parse("{\"type\":\"object\"}");
	cfg->result_schema_name = "state.schema.json";
	cfg->result_schema_def = PLAN_SCHEMA_DEF;
	cfg->max_cost_usd = -1;
	cfg->budget_remaining_usd = -1;
}

static void done(struct run *r)
{
	agent_result_release(&r->res);
	free(r->events);
}

static int count_events(const struct run *r, const char *type)
{
	char needle[128];
	int n = 0;

	snprintf(needle, sizeof needle, "\"type\":\"%s\"", type);
	for (const char *p = r->events; p && (p = strstr(p, needle)); p++)
		n++;
	return n;
}

#define CALL(name, input) "{\"response\":{\"tool_calls\":[{\"id\":\"c1\",\"name\":\"" name "\",\"input\":" input "}],\"usage\":{\"input_tokens\":100,\"output_tokens\":20}}}\n"
#define FINISH_VALID "{\"response\":{\"tool_calls\":[{\"id\":\"f\",\"name\":\"finish\",\"input\":" \
	"{\"summary\":\"add a flag\",\"tasks\":[{\"id\":\"t1\",\"title\":\"flag\",\"description\":\"d\",\"files\":[\"main.c\"],\"depends_on\":[],\"acceptance\":[\"works\"]}],\"risk\":{\"level\":\"low\",\"score\":0.1,\"reasons\":[]}}" \
	"}],\"usage\":{\"input_tokens\":100,\"output_tokens\":50}}}\n"

static void test_happy_path(void)
{
	struct run r = { .tick = 1 };
	struct agent_config cfg;
	struct llm_client *llm = client(CALL("read_file", "{\"path\":\"main.c\"}")
					CALL("edit_file", "{\"path\":\"main.c\",\"old\":\"a\",\"new\":\"b\"}")
					CALL("run_command", "{\"command\":\"make test\"}")
					FINISH_VALID, "plan");

	config(&cfg);
	run_agent(&r, &cfg, llm, NULL);
	CHECK_MSG(r.res.outcome == AGENT_DONE, "%s: %s", agent_outcome_name(r.res.outcome), r.res.reason);
	CHECK_STR(r.fake.log, "read_file edit_file run_command ");
	CHECK_STR(json_get_str(r.res.result, "summary"), "add a flag");
	CHECK_INT(r.res.iterations, 4);
	CHECK_INT(count_events(&r, "tool.executed"), 3);
	CHECK_INT(count_events(&r, "llm.called"), 4);
	/* The cassette's answers name no model: the event names the one asked. */
	CHECK_MSG(strstr(r.events, "\"type\":\"llm.called\",\"payload\":{\"provider\":\"replay\","
			 "\"model\":\"claude-sonnet-4-5\"") != NULL, "%s", r.events);
	CHECK(strstr(r.events, "\"model\":null") == NULL);
	CHECK_INT(count_events(&r, "agent.iteration"), 4);
	CHECK(r.res.cost_known && r.res.cost_usd > 0);
	CHECK_INT(r.res.tokens, 4 * 100 + 3 * 20 + 50);
	/* The conversation the model saw: user, then assistant/tool pairs. */
	CHECK_INT(jv_array_length(jv_copy(r.res.messages)), 1 + 2 * 4);
	done(&r);
	llm_client_free(llm);
}

static void test_invalid_result_goes_back_to_the_model(void)
{
	struct run r = { .tick = 1 };
	struct agent_config cfg;
	struct llm_client *llm = client(CALL("finish", "{\"summary\":\"no tasks\"}") FINISH_VALID, "plan");

	config(&cfg);
	run_agent(&r, &cfg, llm, NULL);
	CHECK(r.res.outcome == AGENT_DONE);
	CHECK_INT(count_events(&r, "agent.finish_rejected"), 1);
	/* The schema error reached the model as an error tool result. */
	jv m = jv_array_get(jv_copy(r.res.messages), 2);
	CHECK(json_get_bool(m, "is_error", false));
	CHECK_MSG(strstr(json_get_str(m, "content"), "required property 'tasks'") != NULL, "%s",
		  json_get_str(m, "content"));
	jv_free(m);
	done(&r);
	llm_client_free(llm);
}

static void test_ask_human_escalates(void)
{
	struct run r = { .tick = 1 };
	struct agent_config cfg;
	struct llm_client *llm = client(CALL("ask_human", "{\"question\":\"which license?\"}"), "plan");

	config(&cfg);
	run_agent(&r, &cfg, llm, NULL);
	CHECK(r.res.outcome == AGENT_ESCALATED);
	CHECK_MSG(strstr(r.res.reason, "which license?") != NULL, "%s", r.res.reason);
	CHECK_STR(r.res.question, "which license?");
	CHECK_INT(count_events(&r, "agent.escalated"), 1);
	done(&r);
	llm_client_free(llm);

	/* the answers it offers and what it found reach the person, in the
	 * question's text (before: dropped, the question alone) */
	struct run r2 = { .tick = 1 };
	llm = client(CALL("ask_human", "{\"question\":\"which license?\",\"options\":[\"MIT\",\"GPL-2.0\"],"
			  "\"context\":\"no LICENSE file\"}"), "plan");
	run_agent(&r2, &cfg, llm, NULL);
	CHECK(r2.res.outcome == AGENT_ESCALATED);
	CHECK_STR(r2.res.question, "which license? (options: MIT | GPL-2.0) (context: no LICENSE file)");
	CHECK_MSG(strstr(r2.res.reason, "(options: MIT | GPL-2.0)") != NULL, "%s", r2.res.reason);
	done(&r2);
	llm_client_free(llm);
}

/* ask_human's input is checked against its schema as every tool's is: a
 * call without a question, with a number, one too long for a gate or with
 * a property of its own goes back to the model, which asks again or goes
 * on; the run does not stop in front of a human (hunt57 #4). */
static void test_ask_human_input_checked(void)
{
	struct run r = { .tick = 1 };
	struct agent_config cfg;
	char *big = xmalloc(8194), *cassette;
	struct buf b = BUF_INIT;

	memset(big, 'q', 8193);
	big[8193] = '\0';
	buf_adds(&b, CALL("ask_human", "{}") CALL("ask_human", "{\"question\":42}")
		 CALL("ask_human", "{\"question\":\"ok?\",\"bogus\":1}"));
	buf_addf(&b, CALL("ask_human", "{\"question\":\"%s\"}"), big);
	buf_adds(&b, CALL("ask_human", "{\"question\":\"which license?\"}"));
	cassette = buf_detach(&b, NULL);
	struct llm_client *llm = client(cassette, "plan");

	config(&cfg);
	run_agent(&r, &cfg, llm, NULL);
	CHECK_MSG(r.res.outcome == AGENT_ESCALATED, "%s: %s", agent_outcome_name(r.res.outcome), r.res.reason);
	CHECK_STR(r.res.question, "which license?");
	CHECK_INT(r.res.iterations, 5);
	CHECK_INT(count_events(&r, "agent.escalated"), 1);
	CHECK_INT(count_events(&r, "tool.failed"), 4);
	CHECK_INT(r.res.tool_errors, 4);
	CHECK(r.fake.calls == 0);
	/* what the model was told: the schema's complaint, as a tool error */
	jv m = jv_array_get(jv_copy(r.res.messages), 2);
	CHECK(json_get_bool(m, "is_error", false));
	CHECK_MSG(strstr(json_get_str(m, "content"), "ask_human: invalid input") != NULL &&
		  strstr(json_get_str(m, "content"), "question") != NULL, "%s", json_get_str(m, "content"));
	jv_free(m);
	done(&r);
	llm_client_free(llm);

	/* an invalid ask_human fails its answer: a finish beside it is not taken */
	struct run r2 = { .tick = 1 };
	llm = client("{\"response\":{\"tool_calls\":[{\"id\":\"a\",\"name\":\"ask_human\",\"input\":{}},"
		     "{\"id\":\"f\",\"name\":\"finish\",\"input\":{\"summary\":\"s\",\"tasks\":[],"
		     "\"risk\":{\"level\":\"low\"}}}]}}\n" FINISH_VALID, "plan");
	config(&cfg);
	run_agent(&r2, &cfg, llm, NULL);
	CHECK_MSG(r2.res.outcome == AGENT_DONE, "%s: %s", agent_outcome_name(r2.res.outcome), r2.res.reason);
	CHECK_STR(json_get_str(r2.res.result, "summary"), "add a flag");
	CHECK_INT(count_events(&r2, "agent.escalated"), 0);
	done(&r2);
	llm_client_free(llm);
	free(big);
	free(cassette);
}

static void test_iteration_breaker(void)
{
	struct run r = { .tick = 1 };
	struct agent_config cfg;
	struct llm_client *llm = client(CALL("read_file", "{\"path\":\"a\"}") CALL("read_file", "{\"path\":\"b\"}")
					CALL("read_file", "{\"path\":\"c\"}") CALL("read_file", "{\"path\":\"d\"}"),
					"plan");

	config(&cfg);
	cfg.max_iterations = 3;
	run_agent(&r, &cfg, llm, NULL);
	CHECK(r.res.outcome == AGENT_TRIPPED);
	CHECK_STR(r.res.breaker, "iterations");
	CHECK_INT(r.res.iterations, 3);
	CHECK_INT(count_events(&r, "breaker.tripped"), 1);
	done(&r);
	llm_client_free(llm);
}

static void test_cost_breaker_uses_the_lower_limit(void)
{
	struct run r = { .tick = 1 };
	struct agent_config cfg;
	/* 1M input tokens per answer costs dollars, whatever the exact price. */
	struct llm_client *llm = client(
		"{\"response\":{\"tool_calls\":[{\"id\":\"a\",\"name\":\"read_file\",\"input\":{\"path\":\"a\"}}],\"usage\":{\"input_tokens\":1000000,\"output_tokens\":10}}}\n"
		"{\"response\":{\"tool_calls\":[{\"id\":\"b\",\"name\":\"read_file\",\"input\":{\"path\":\"b\"}}],\"usage\":{\"input_tokens\":1000000,\"output_tokens\":10}}}\n",
		"plan");

	config(&cfg);
	cfg.max_cost_usd = 100;
	cfg.budget_remaining_usd = 0.5;   /* the run's budget is the lower limit */
	run_agent(&r, &cfg, llm, NULL);
	CHECK(r.res.outcome == AGENT_TRIPPED);
	CHECK_STR(r.res.breaker, "cost");
	CHECK_INT(r.res.iterations, 1);
	done(&r);
	llm_client_free(llm);
}

static void test_time_breaker(void)
{
	struct run r = { .tick = 400000 };   /* the clock jumps 400 s per reading */
	struct agent_config cfg;
	struct llm_client *llm = client(CALL("read_file", "{\"path\":\"a\"}") CALL("read_file", "{\"path\":\"b\"}"), "plan");

	config(&cfg);
	cfg.max_time_ms = 1000000;
	run_agent(&r, &cfg, llm, NULL);
	CHECK(r.res.outcome == AGENT_TRIPPED);
	CHECK_STR(r.res.breaker, "time");
	done(&r);
	llm_client_free(llm);
}

static void test_error_rate_breaker(void)
{
	struct run r = { .tick = 1 };
	struct agent_config cfg;
	struct llm_client *llm = client(CALL("read_file", "{\"path\":\"a\"}") CALL("read_file", "{\"path\":\"b\"}")
					CALL("read_file", "{\"path\":\"c\"}") CALL("read_file", "{\"path\":\"d\"}")
					CALL("read_file", "{\"path\":\"e\"}") CALL("read_file", "{\"path\":\"f\"}")
					CALL("read_file", "{\"path\":\"g\"}") CALL("read_file", "{\"path\":\"h\"}")
					CALL("read_file", "{\"path\":\"i\"}") CALL("read_file", "{\"path\":\"j\"}")
					CALL("read_file", "{\"path\":\"k\"}"), "plan");

	config(&cfg);
	cfg.max_iterations = 20;
	r.fake.always_fail = 1;
	run_agent(&r, &cfg, llm, NULL);
	CHECK(r.res.outcome == AGENT_TRIPPED);
	CHECK_STR(r.res.breaker, "error_rate");
	CHECK_INT(r.res.tool_calls, AGENT_ERROR_RATE_MIN_CALLS);
	CHECK_INT(count_events(&r, "tool.failed"), AGENT_ERROR_RATE_MIN_CALLS);
	done(&r);
	llm_client_free(llm);
}

/* One recoverable error among a session's first calls (an edit whose `old`
 * was ambiguous) is no runaway: the default limits (25% critical) are
 * judged only over AGENT_ERROR_RATE_MIN_CALLS calls (before: 1 in 4 tripped). */
static void test_error_rate_needs_enough_calls(void)
{
	struct run r = { .tick = 1 };
	struct agent_config cfg;
	struct llm_client *llm = client(CALL("read_file", "{\"path\":\"a\"}") CALL("read_file", "{\"path\":\"MISS\"}")
					CALL("read_file", "{\"path\":\"b\"}") CALL("read_file", "{\"path\":\"c\"}")
					CALL("read_file", "{\"path\":\"d\"}") FINISH_VALID, "plan");

	config(&cfg);
	r.fake.fail_on = "MISS";
	run_agent(&r, &cfg, llm, NULL);
	CHECK_MSG(r.res.outcome == AGENT_DONE, "%s: %s", agent_outcome_name(r.res.outcome), r.res.reason);
	CHECK_INT(count_events(&r, "tool.failed"), 1);
	done(&r);
	llm_client_free(llm);
}

static void test_stagnation_escalates(void)
{
	struct run r = { .tick = 1 };
	struct agent_config cfg;
	/* The same call with the same answer, again and again. */
	struct llm_client *llm = client(CALL("read_file", "{\"path\":\"a\"}") CALL("read_file", "{\"path\":\"a\"}")
					CALL("read_file", "{\"path\":\"a\"}") CALL("read_file", "{\"path\":\"a\"}")
					CALL("read_file", "{\"path\":\"a\"}"), "plan");

	config(&cfg);
	run_agent(&r, &cfg, llm, NULL);
	CHECK_MSG(r.res.outcome == AGENT_ESCALATED, "%s", agent_outcome_name(r.res.outcome));
	CHECK_MSG(strstr(r.res.reason, "stagnation") != NULL, "%s", r.res.reason);
	CHECK_INT(count_events(&r, "agent.stagnation_detected"), 1);
	CHECK_INT(r.res.iterations, 4);   /* first repeat at 2, third at 4 */
	done(&r);
	llm_client_free(llm);
}

static void test_transient_tool_errors_are_retried_with_backoff(void)
{
	struct run r = { .tick = 1 };
	struct agent_config cfg;
	struct llm_client *llm = client(CALL("read_file", "{\"path\":\"a\"}") FINISH_VALID, "plan");

	config(&cfg);
	r.fake.fail_first = 2;
	run_agent(&r, &cfg, llm, NULL);
	CHECK(r.res.outcome == AGENT_DONE);
	CHECK_INT(r.fake.calls, 3);
	CHECK_INT(r.nsleep, 2);
	CHECK(r.slept[0] == 1 && r.slept[1] == 2);
	CHECK(strstr(r.events, "\"attempts\":3") != NULL);
	done(&r);
	llm_client_free(llm);
}

static void test_gate_from_the_policy_escalates(void)
{
	struct run r = { .tick = 1 };
	struct agent_config cfg;
	struct llm_client *llm = client(CALL("run_command", "{\"command\":\"git push\"}"), "plan");

	config(&cfg);
	r.fake.gate = "git push is on the ask list";
	run_agent(&r, &cfg, llm, NULL);
	CHECK(r.res.outcome == AGENT_ESCALATED);
	CHECK(strstr(r.res.reason, "git push is on the ask list") != NULL);
	done(&r);
	llm_client_free(llm);
}

/* A cassette with no answer for the run's request fails the run, in words
 * that name the cassette: no provider was asked (before: "the model could
 * not be reached"; hunt57 #1). */
static void test_cassette_out_fails(void)
{
	struct run r = { .tick = 1 };
	struct agent_config cfg;
	struct llm_client *llm = client(CALL("read_file", "{\"path\":\"a\"}"), "plan");

	config(&cfg);
	run_agent(&r, &cfg, llm, NULL);   /* the cassette runs out on the second call */
	CHECK(r.res.outcome == AGENT_FAILED);
	CHECK_MSG(strstr(r.res.reason, "the cassette does not match this run's requests: replay: ") == r.res.reason,
		  "%s", r.res.reason);
	CHECK_MSG(strstr(r.res.reason, "could not be reached") == NULL, "%s", r.res.reason);
	done(&r);
	llm_client_free(llm);
}

static void test_context_overflow_compresses_and_retries(void)
{
	struct run r = { .tick = 1 };
	struct agent_config cfg;
	struct llm_client *llm = client(CALL("read_file", "{\"path\":\"a\"}") CALL("read_file", "{\"path\":\"b\"}")
					CALL("read_file", "{\"path\":\"c\"}")
					"{\"error\":{\"kind\":\"context_length\",\"message\":\"prompt is too long\"}}\n"
					FINISH_VALID, "plan");
	struct llm_client *fast = client("{\"response\":{\"text\":\"- read a, b and c\"}}\n", "plan-fast");

	config(&cfg);
	run_agent(&r, &cfg, llm, fast);
	CHECK_MSG(r.res.outcome == AGENT_DONE, "%s: %s", agent_outcome_name(r.res.outcome), r.res.reason);
	CHECK_INT(count_events(&r, "memory.compressed"), 1);
	CHECK(strstr(r.events, "\"summarised_by\":\"model\"") != NULL);
	jv first = jv_array_get(jv_copy(r.res.messages), 0);
	CHECK(strstr(json_get_str(first, "content"), "- read a, b and c") != NULL);
	jv_free(first);
	/* The kept tail starts with an assistant turn, never an orphan tool result. */
	jv second = jv_array_get(jv_copy(r.res.messages), 1);
	CHECK_STR(json_get_str(second, "role"), "assistant");
	jv_free(second);
	done(&r);
	llm_client_free(llm);
	llm_client_free(fast);
}

static void test_compression_at_ninety_percent(void)
{
	struct run r = { .tick = 1 };
	struct agent_config cfg;
	struct llm_client *llm = client(CALL("read_file", "{\"path\":\"a\"}") CALL("read_file", "{\"path\":\"b\"}")
					CALL("read_file", "{\"path\":\"c\"}") CALL("read_file", "{\"path\":\"d\"}")
					CALL("read_file", "{\"path\":\"e\"}") CALL("read_file", "{\"path\":\"f\"}")
					CALL("read_file", "{\"path\":\"g\"}") CALL("read_file", "{\"path\":\"h\"}")
					FINISH_VALID, "plan");
	/* No fast answer: compression falls back to a mechanical summary. */
	struct llm_client *fast = client("", "plan-fast");

	config(&cfg);
	cfg.context_tokens = 1600;
	run_agent(&r, &cfg, llm, fast);
	CHECK_MSG(r.res.outcome == AGENT_DONE, "%s", r.res.reason);
	CHECK(count_events(&r, "memory.compressed") >= 1);
	CHECK(strstr(r.events, "\"summarised_by\":\"fallback\"") != NULL);
	done(&r);
	llm_client_free(llm);
	llm_client_free(fast);
}

static void test_reflection_stores_capped_learnings(void)
{
	struct run r = { .tick = 1 };
	struct agent_config cfg;
	/* Enough tokens that the run is not "trivial". */
	struct llm_client *llm = client(
		"{\"response\":{\"tool_calls\":[{\"id\":\"f\",\"name\":\"finish\",\"input\":"
		"{\"summary\":\"add a flag\",\"tasks\":[],\"risk\":{\"level\":\"low\"}}}],"
		"\"usage\":{\"input_tokens\":200000,\"output_tokens\":10}}}\n", "plan");
	struct llm_client *fast = client(
		"{\"response\":{\"tool_calls\":[{\"id\":\"r\",\"name\":\"record_learnings\",\"input\":"
		"{\"learnings\":[{\"type\":\"procedural\",\"content\":\"read the Makefile first\","
		"\"context\":\"C projects\",\"confidence\":0.9,\"tags\":[\"c\"]}]}}]}}\n", "plan-fast");

	config(&cfg);
	cfg.reflect = true;
	run_agent(&r, &cfg, llm, fast);
	CHECK(r.res.outcome == AGENT_DONE);
	CHECK_INT(r.remembered, 1);
	CHECK(r.remembered_confidence == 0.5);   /* an LLM's learning starts at 0.5 */
	CHECK_INT(count_events(&r, "agent.reflected"), 1);
	done(&r);
	llm_client_free(llm);
	llm_client_free(fast);
}

static void test_malformed_reflection_stores_nothing(void)
{
	struct run r = { .tick = 1 };
	struct agent_config cfg;
	struct llm_client *llm = client(
		"{\"response\":{\"tool_calls\":[{\"id\":\"f\",\"name\":\"finish\",\"input\":"
		"{\"summary\":\"s\",\"tasks\":[],\"risk\":{\"level\":\"low\"}}}],"
		"\"usage\":{\"input_tokens\":200000,\"output_tokens\":10}}}\n", "plan");
	struct llm_client *fast = client(
		"{\"response\":{\"tool_calls\":[{\"id\":\"r\",\"name\":\"record_learnings\",\"input\":"
		"{\"learnings\":[{\"type\":\"wisdom\",\"content\":\"x\"}]}}]}}\n", "plan-fast");

	config(&cfg);
	cfg.reflect = true;
	run_agent(&r, &cfg, llm, fast);
	CHECK(r.res.outcome == AGENT_DONE);
	CHECK_INT(r.remembered, 0);
	CHECK_INT(count_events(&r, "agent.reflection_failed"), 1);
	done(&r);
	llm_client_free(llm);
	llm_client_free(fast);
}

static void test_trivial_success_skips_reflection(void)
{
	struct run r = { .tick = 1 };
	struct agent_config cfg;
	struct llm_client *llm = client(FINISH_VALID, "plan");
	struct llm_client *fast = client("", "plan-fast");

	config(&cfg);
	cfg.reflect = true;
	run_agent(&r, &cfg, llm, fast);
	CHECK(r.res.outcome == AGENT_DONE);
	CHECK_INT(count_events(&r, "agent.reflection_skipped"), 1);
	CHECK_INT(r.remembered, 0);
	done(&r);
	llm_client_free(llm);
	llm_client_free(fast);
}

static void test_hash_ignores_call_ids(void)
{
	jv a = jv_parse("[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"x1\",\"name\":\"read_file\",\"input\":{\"path\":\"a\"}}]},"
			"{\"role\":\"tool\",\"tool_call_id\":\"x1\",\"content\":\"hi\"}]");
	jv b = jv_parse("[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"y2\",\"name\":\"read_file\",\"input\":{\"path\":\"a\"}}]},"
			"{\"role\":\"tool\",\"tool_call_id\":\"y2\",\"content\":\"hi\"}]");
	jv c = jv_parse("[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"y2\",\"name\":\"read_file\",\"input\":{\"path\":\"b\"}}]},"
			"{\"role\":\"tool\",\"tool_call_id\":\"y2\",\"content\":\"hi\"}]");

	CHECK(agent_messages_hash(a, 3) == agent_messages_hash(b, 3));
	CHECK(agent_messages_hash(a, 3) != agent_messages_hash(c, 3));
	jv_free(a);
	jv_free(b);
	jv_free(c);
}

/* write TEXT to <tmpdir>/.forge/prompts/reflect.md */
static void write_overlay(const char *text)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof path, "mkdir -p '%s/.forge/prompts'", tmpdir);
	CHECK(system(path) == 0);
	snprintf(path, sizeof path, "%s/.forge/prompts/reflect.md", tmpdir);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* .forge/prompts/PHASE.md is added under a heading; "replace: true" (first
 * line, or in a front matter) replaces the built-in prompt instead. */
static void test_prompt_overlay(void)
{
	char *p = NULL;
	enum agent_prompt_how how = AGENT_PROMPT_REPLACED;

	CHECK(agent_prompt_load_how(&p, &how, NULL, "reflect") == 0 && strstr(p, "record_learnings"));
	CHECK(how == AGENT_PROMPT_BUILTIN);
	free(p);

	write_overlay("custom prompt\n");
	CHECK(agent_prompt_load_how(&p, &how, tmpdir, "reflect") == 0);
	CHECK(how == AGENT_PROMPT_APPENDED);
	CHECK(p && strstr(p, "record_learnings") != NULL);
	CHECK(p && strstr(p, "\n\n## Project prompt (.forge/prompts/reflect.md)\n\ncustom prompt\n") != NULL);
	free(p);

	write_overlay("replace: true\ncustom prompt\n");
	CHECK(agent_prompt_load_how(&p, &how, tmpdir, "reflect") == 0);
	CHECK(how == AGENT_PROMPT_REPLACED);
	CHECK_STR(p, "custom prompt\n");
	free(p);

	write_overlay("---\ntitle: ours\nreplace:   true  \n---\nonly this\n");
	CHECK(agent_prompt_load(&p, tmpdir, "reflect") == 0);
	CHECK_STR(p, "only this\n");
	free(p);

	write_overlay("---\nreplace: false\n---\nextra\n");
	CHECK(agent_prompt_load_how(&p, &how, tmpdir, "reflect") == 0);
	CHECK(how == AGENT_PROMPT_APPENDED && strstr(p, "record_learnings") && strstr(p, "\nextra\n"));
	CHECK(p && !strstr(p, "---"));
	free(p);

	write_overlay("replace: yes\nx\n");
	p = NULL;
	CHECK(agent_prompt_load(&p, tmpdir, "reflect") == -1 && p == NULL);
	CHECK(strstr(forge_last_error(), ".forge/prompts/reflect.md") &&
	      strstr(forge_last_error(), "replace takes true or false"));

	CHECK(agent_prompt_load(&p, tmpdir, "no-such-phase") == -1);
}

static void test_prompt_overlay_parse(void)
{
	const char *body;
	bool replace;

	CHECK(agent_prompt_overlay_parse(&body, &replace, "") == 0 && !replace && !strcmp(body, ""));
	CHECK(agent_prompt_overlay_parse(&body, &replace, "replace: true") == 0 && replace && !strcmp(body, ""));
	CHECK(agent_prompt_overlay_parse(&body, &replace, "replace: true\r\nA") == 0 && replace &&
	      !strcmp(body, "A"));
	/* "replace: true" further down is text, not a directive */
	CHECK(agent_prompt_overlay_parse(&body, &replace, "A\nreplace: true\n") == 0 && !replace &&
	      !strcmp(body, "A\nreplace: true\n"));
	/* a front matter without its closing fence is text */
	CHECK(agent_prompt_overlay_parse(&body, &replace, "---\nreplace: true\nB") == 0 && !replace &&
	      !strcmp(body, "---\nreplace: true\nB"));
	CHECK(agent_prompt_overlay_parse(&body, &replace, "---\n---\nC") == 0 && !replace && !strcmp(body, "C"));
	CHECK(agent_prompt_overlay_parse(&body, &replace, "replace: maybe\n") == -1);
}

/* The messages' estimate kept across turns is the sum of each message's,
 * as when counted afresh: after appends, and after the messages were
 * replaced (compression) with ones of other sizes at the same places. */
static void test_message_estimates_kept_across_turns(void)
{
	struct agent a = { 0 };
	const char *texts[] = { "fix the parser", "read src/parse.c: 1200 lines of C",
				"the tests pass", "done: one line changed" };
	size_t fresh = 0;

	a.messages = jv_array();
	CHECK_INT(agent_messages_tokens(&a), 0);
	for (int i = 0; i < 4; i++) {
		jv m = llm_msg_user(texts[i]);
		fresh += tokens_estimate_jv(m) + (i ? 1 : 0);
		a.messages = jv_array_append(a.messages, m);
		CHECK_INT(agent_messages_tokens(&a), fresh);
	}
	jv_free(a.messages);
	a.messages = jv_array_append(jv_array(), llm_msg_user("[Summary of the earlier work] all four steps"));
	agent_messages_replaced(&a);
	jv only = jv_array_get(jv_copy(a.messages), 0);
	CHECK_INT(agent_messages_tokens(&a), tokens_estimate_jv(only));
	jv_free(only);
	jv_free(a.messages);
	free(a.message_tokens);
}

int main(void)
{
	if (!mkdtemp(tmpdir))
		return 1;
	RUN(test_happy_path);
	RUN(test_invalid_result_goes_back_to_the_model);
	RUN(test_ask_human_escalates);
	RUN(test_ask_human_input_checked);
	RUN(test_iteration_breaker);
	RUN(test_cost_breaker_uses_the_lower_limit);
	RUN(test_time_breaker);
	RUN(test_error_rate_breaker);
	RUN(test_error_rate_needs_enough_calls);
	RUN(test_stagnation_escalates);
	RUN(test_transient_tool_errors_are_retried_with_backoff);
	RUN(test_gate_from_the_policy_escalates);
	RUN(test_cassette_out_fails);
	RUN(test_context_overflow_compresses_and_retries);
	RUN(test_compression_at_ninety_percent);
	RUN(test_reflection_stores_capped_learnings);
	RUN(test_malformed_reflection_stores_nothing);
	RUN(test_trivial_success_skips_reflection);
	RUN(test_hash_ignores_call_ids);
	RUN(test_prompt_overlay);
	RUN(test_message_estimates_kept_across_turns);
	RUN(test_prompt_overlay_parse);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		return 1;
	return unit_done();
}
