/*
 * agent_reflect.c - reflection (seed 003 §8): after success, a tool error,
 * an escalation or a breaker trip, ask the fast model what is worth
 * remembering, within a reflection budget, and hand each well-formed
 * learning to the caller's memory.
 */
#include "agent/agent_internal.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "data/schema.h"
#include "data/stream.h"

#include <stdlib.h>
#include <string.h>

#define TRACE_MAX_BYTES 12000       /* the part of the working memory shown */
#define LLM_CONFIDENCE 0.5          /* seed 002 §9: what an LLM learned, unconfirmed */

static void emit(struct agent *a, const char *type, jv payload)
{
	if (a->env->out)
		stream_emit(a->env->out, type, payload);
	else
		jv_free(payload);
}

/* The forced tool: its input schema and description from the file, as
 * every tool's go (schema_tool_input: no $schema, $id, title, $comment). */
static jv record_tool(void)
{
	jv desc, schema = schema_tool_input(&desc, "tools/record_learnings.json");
	jv tool = json_set(jv_object(), "name", jv_string("record_learnings"));

	if (jv_get_kind(schema) != JV_KIND_OBJECT) {
		jv_free(schema);
		schema = json_set(jv_object(), "type", jv_string("object"));
	}
	if (jv_get_kind(desc) != JV_KIND_STRING) {
		jv_free(desc);
		desc = jv_string("Record what is worth remembering from this run.");
	}
	tool = json_set(tool, "description", desc);
	return json_set(tool, "input_schema", schema);
}

/* The end of the working memory, compact, at most TRACE_MAX_BYTES. */
static char *recent_trace(jv messages)
{
	char *all = json_dumps(jv_copy(messages), false);
	size_t n = strlen(all);

	if (n <= TRACE_MAX_BYTES)
		return all;
	size_t start = n - TRACE_MAX_BYTES;
	while (start < n && ((unsigned char)all[start] & 0xC0) == 0x80)
		start++;
	char *tail = xstrdup(all + start);
	free(all);
	return tail;
}

static bool should_reflect(struct agent *a, const char *outcome)
{
	double budget = a->cfg->reflect_budget_usd > 0 ? a->cfg->reflect_budget_usd : 0.50;
	double min_cost = a->cfg->reflect_min_cost_usd > 0 ? a->cfg->reflect_min_cost_usd : 0.10;
	const char *why = NULL;

	double limit = agent_cost_limit(a->cfg);

	if (!a->cfg->reflect)
		return false;
	/* a reached cost limit (a cost breaker, a spent budget) allows no
	 * more calls, a reflection's neither */
	if (limit >= 0 && agent_phase_cost(a) >= limit)
		why = "budget spent (the phase's cost limit is reached)";
	/* so does a reached time limit (a call past it is cut at once) */
	else if (agent_time_left(a) == 0)
		why = "time spent (the phase's or the run's time limit is reached)";
	else if (a->reflect_spent >= budget)
		why = "reflection budget spent";
	else if (strcmp(outcome, "success") == 0 && a->res->cost_usd < min_cost)
		why = "trivial run (cost below the reflection threshold)";
	if (why) {
		emit(a, "agent.reflection_skipped", json_set(json_set(jv_object(), "outcome",
			jv_string(outcome)), "reason", jv_string(why)));
		return false;
	}
	return true;
}

/* Store each learning that is well formed; returns how many. */
static int store_learnings(struct agent *a, jv learnings, const char *outcome)
{
	int stored = 0;

	jv_array_foreach(learnings, i, l) {
		double claimed = json_get_num(l, "confidence", LLM_CONFIDENCE);
		jv tags = json_get(l, "tags");
		if (jv_get_kind(tags) != JV_KIND_ARRAY) {
			jv_free(tags);
			tags = jv_array();
		}
		tags = jv_array_concat(jv_array_append(jv_array_append(jv_array(),
			jv_string(a->cfg->phase)), jv_string(outcome)), tags);
		l = json_set(l, "tags", tags);
		l = json_set(l, "claimed_confidence", jv_number(claimed));
		l = json_set(l, "confidence", jv_number(claimed < LLM_CONFIDENCE ? claimed : LLM_CONFIDENCE));
		l = json_set(l, "source", jv_string_fmt("%s.reflection", a->cfg->phase));
		if (a->env->remember(a->env->remember_payload, l) == 0)
			stored++;
	}
	return stored;
}

void agent_reflect(struct agent *a, const char *outcome, const char *detail)
{
	struct llm_response resp;
	double before = a->res->cost_usd;

	if (!a->env->remember || !should_reflect(a, outcome))
		return;
	char *trace = recent_trace(a->messages);
	struct buf user = BUF_INIT;
	buf_addf(&user, "Phase: %s\nOutcome: %s\n", a->cfg->phase, outcome);
	if (detail)
		buf_addf(&user, "Detail: %.2000s\n", detail);
	buf_addf(&user, "\nThe end of the agent's working memory (JSON):\n%s\n", trace);
	free(trace);

	int rc = agent_fast_call(&resp, a, agent_builtin_prompt("reflect"), user.buf, record_tool());
	buf_release(&user);
	a->reflect_spent += a->res->cost_usd - before;
	if (rc < 0 || resp.ncalls != 1) {
		emit(a, "agent.reflection_failed", json_set(json_set(jv_object(), "outcome",
			jv_string(outcome)), "error", jv_string(rc < 0 ? forge_last_error() : "no learnings recorded")));
		llm_response_release(&resp);
		return;
	}
	/* A reflection that does not match its schema stores nothing rather than junk. */
	const struct schema *s = schema_get("tools/record_learnings.json");
	if (!s || schema_validate(s, resp.calls[0].input) < 0) {
		emit(a, "agent.reflection_failed", json_set(json_set(jv_object(), "outcome",
			jv_string(outcome)), "error", jv_string(forge_last_error())));
		llm_response_release(&resp);
		return;
	}
	jv learnings = json_get(resp.calls[0].input, "learnings");
	int stored = store_learnings(a, learnings, outcome);
	jv_free(learnings);
	llm_response_release(&resp);
	emit(a, "agent.reflected", json_set(json_set(json_set(jv_object(), "outcome", jv_string(outcome)),
		"learnings", jv_number(stored)), "cost_usd", jv_number(a->res->cost_usd - before)));
}
