/* agent.c - the perceive/reason/act/learn loop; see agent.h. */
#include "agent/agent_internal.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/money.h"
#include "core/resource.h"
#include "data/schema.h"
#include "data/stream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_TOOL_RETRIES 3

void agent_result_init(struct agent_result *r)
{
	memset(r, 0, sizeof *r);
	r->result = jv_null();
	r->messages = jv_null();
	r->cost_known = true;
}

void agent_result_release(struct agent_result *r)
{
	if (!r)
		return;
	jv_free(r->result);
	jv_free(r->messages);
	free(r->reason);
	free(r->question);
	agent_result_init(r);
}

const char *agent_outcome_name(enum agent_outcome o)
{
	switch (o) {
	case AGENT_DONE: return "done";
	case AGENT_ESCALATED: return "escalated";
	case AGENT_TRIPPED: return "tripped";
	case AGENT_FAILED: return "failed";
	}
	return "unknown";
}

static void emit(struct agent *a, const char *type, jv payload)
{
	if (a->env->out)
		stream_emit(a->env->out, type, payload);
	else
		jv_free(payload);
}

/* End the loop with an outcome and a reason (printf-style). */
static void finish_with(struct agent *a, enum agent_outcome o, const char *breaker,
			const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void finish_with(struct agent *a, enum agent_outcome o, const char *breaker,
			const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	a->res->outcome = o;
	a->res->breaker = breaker;
	free(a->res->reason);
	a->res->reason = buf_detach(&b, NULL);
}

/* ---- tools sent to the model ------------------------------------------ */

/*
 * The tool of resource_name ("tools/ask_human.json") as the other tools go
 * (tool_spec): its input schema the file without the members that are for
 * its author ($schema, $id, title, $comment) and its description, which is
 * the tool's; input_schema (consumed) in its place unless it is null.
 */
static jv tool_definition(const char *resource_name, jv input_schema)
{
	jv desc, doc = schema_tool_input(&desc, resource_name);
	const char *name = strrchr(resource_name, '/');
	char tool[64];

	snprintf(tool, sizeof tool, "%s", name ? name + 1 : resource_name);
	char *dot = strrchr(tool, '.');
	if (dot)
		*dot = '\0';
	if (jv_get_kind(desc) != JV_KIND_STRING) {
		jv_free(desc);
		desc = jv_string(tool);
	}
	if (jv_get_kind(input_schema) == JV_KIND_NULL) {
		jv_free(input_schema);
		input_schema = jv_get_kind(doc) == JV_KIND_OBJECT ? jv_copy(doc) : jv_object();
	}
	jv_free(doc);
	jv def = json_set(jv_object(), "name", jv_string(tool));
	def = json_set(def, "description", desc);
	return json_set(def, "input_schema", input_schema);
}

/* The phase's tools plus finish (with the phase's result schema) and ask_human. */
static jv all_tools(struct agent_config *cfg)
{
	jv tools = jv_get_kind(cfg->tools) == JV_KIND_ARRAY ? cfg->tools : jv_array();

	if (jv_get_kind(cfg->tools) != JV_KIND_ARRAY)
		jv_free(cfg->tools);
	cfg->tools = jv_null();
	jv result = cfg->result_schema;
	cfg->result_schema = jv_null();
	if (jv_get_kind(result) != JV_KIND_OBJECT) {
		jv_free(result);
		result = json_set(jv_object(), "type", jv_string("object"));
	}
	tools = jv_array_append(tools, tool_definition("tools/finish.json", result));
	return jv_array_append(tools, tool_definition("tools/ask_human.json", jv_null()));
}

/* ---- breakers ----------------------------------------------------------- */

/* Tool calls in the error-rate window: times and whether they failed. */
struct call_window {
	long long *at;
	bool *failed;
	size_t n, alloc;
	bool warned;
};

static void window_add(struct call_window *w, long long now, bool failed)
{
	if (w->n == w->alloc) {
		w->alloc = w->alloc ? w->alloc * 2 : 32;
		w->at = xrealloc(w->at, w->alloc * sizeof *w->at);
		w->failed = xrealloc(w->failed, w->alloc * sizeof *w->failed);
	}
	w->at[w->n] = now;
	w->failed[w->n++] = failed;
}

/* Error rate over the window; *calls receives how many calls it saw. */
static double window_rate(const struct call_window *w, long long now, long long span, size_t *calls)
{
	size_t seen = 0, errors = 0;

	for (size_t i = 0; i < w->n; i++) {
		if (now - w->at[i] > span)
			continue;
		seen++;
		errors += w->failed[i];
	}
	*calls = seen;
	return seen ? (double)errors / (double)seen : 0;
}

static void trip(struct agent *a, const char *breaker, jv detail, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void trip(struct agent *a, const char *breaker, jv detail, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	detail = json_set(detail, "breaker", jv_string(breaker));
	detail = json_set(detail, "reason", jv_string(b.buf));
	emit(a, "breaker.tripped", detail);
	finish_with(a, AGENT_TRIPPED, breaker, "%s", b.buf);
	buf_release(&b);
	agent_reflect(a, "breaker", a->res->reason);
}

/* The time breaker: false, tripped, once the phase's or the run's time is out. */
static bool time_holds(struct agent *a)
{
	struct agent_config *cfg = a->cfg;
	long long ran = agent_now(a) - a->start_ms, elapsed = cfg->spent_ms + ran;

	if (agent_time_left(a) != 0)
		return true;
	if (cfg->max_time_ms > 0 && elapsed >= cfg->max_time_ms)
		trip(a, "time", json_set(jv_object(), "limit_ms", jv_number((double)cfg->max_time_ms)),
		     "%lld ms elapsed (limit %lld ms)", elapsed, cfg->max_time_ms);
	else
		trip(a, "time", json_set(jv_object(), "run_time_left_ms", jv_number((double)cfg->run_time_left_ms)),
		     "the run's time limit (safety.time_s.total) is reached: %lld ms of it were left "
		     "when the phase began", cfg->run_time_left_ms);
	return false;
}

/* Returns true when a breaker stops the loop before the next call. */
static bool breakers_hold(struct agent *a, struct call_window *w)
{
	struct agent_config *cfg = a->cfg;
	long long now = agent_now(a);
	const char *limit_source = NULL;
	double limit = agent_cost_limit_named(&limit_source, cfg), cost = agent_phase_cost(a);
	int max_iter = cfg->max_iterations > 0 ? cfg->max_iterations : 10;
	int iterations = cfg->spent_iterations + a->res->iterations;

	/* (the phase's totals: an earlier run of the loop in it counts) */
	if (iterations >= max_iter) {
		trip(a, "iterations", json_set(jv_object(), "max", jv_number(max_iter)),
		     "%d iterations without finishing (limit %d)", iterations, max_iter);
		return false;
	}
	if (limit >= 0 && cost >= limit) {
		char spent[MONEY_LEN], allowed[MONEY_LEN], phase_key[96];

		/* (which limit: a user raising the wrong one gets nowhere) */
		snprintf(phase_key, sizeof phase_key, "safety.cost.per_phase.%s",
			 cfg->phase ? cfg->phase : "PHASE");
		trip(a, "cost", json_set(json_set(jv_object(), "limit_usd", jv_number(limit)),
					 "cost_usd", jv_number(cost)),
		     "cost $%s reached the limit of $%s (%s)", money_fmt(spent, sizeof spent, cost),
		     money_fmt(allowed, sizeof allowed, limit), limit_source ? limit_source : phase_key);
		return false;
	}
	if (!time_holds(a))
		return false;
	size_t calls;
	long long span = cfg->error_window_ms > 0 ? cfg->error_window_ms : 300000;
	double rate = window_rate(w, now, span, &calls);
	double warning = cfg->error_rate_warning > 0 ? cfg->error_rate_warning : 0.10;
	double critical = cfg->error_rate_critical > 0 ? cfg->error_rate_critical : 0.25;
	if (calls >= AGENT_ERROR_RATE_MIN_CALLS && rate >= critical) {
		trip(a, "error_rate", json_set(json_set(jv_object(), "rate", jv_number(rate)),
					       "calls", jv_number((double)calls)),
		     "tool error rate %.0f%% over the last %zu calls (limit %.0f%%)", rate * 100,
		     calls, critical * 100);
		return false;
	}
	if (calls >= AGENT_ERROR_RATE_MIN_CALLS && rate >= warning && !w->warned) {
		w->warned = true;
		emit(a, "breaker.warning", json_set(json_set(json_set(jv_object(), "breaker",
			jv_string("error_rate")), "rate", jv_number(rate)), "calls", jv_number((double)calls)));
	}
	return true;
}

/* ---- act ---------------------------------------------------------------- */

static void sleep_seconds(struct agent *a, double s)
{
	if (a->env->sleep_fn) {
		a->env->sleep_fn(a->env->test_payload, s);
		return;
	}
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void outcome_release(struct agent_tool_outcome *o)
{
	free(o->text);
	free(o->gate);
	jv_free(o->event);
	memset(o, 0, sizeof *o);
	o->event = jv_null();
}

/*
 * Run one tool through the executor, retrying transient failures.  Returns
 * 0 with *o filled, -1 when the executor itself failed.
 */
static int execute(struct agent *a, struct agent_tool_outcome *o, const char *name, jv input,
		   int *attempts)
{
	double delay = 1;

	for (*attempts = 1;; (*attempts)++) {
		memset(o, 0, sizeof *o);
		o->event = jv_null();
		o->deadline_ms = agent_deadline(a);
		o->max_text_bytes = agent_result_cap(a) * 4;	/* (~4 bytes a token) */
		if (a->env->exec(o, name, input, a->env->exec_payload) < 0)
			return -1;
		if (o->ok || !o->retryable || *attempts > MAX_TOOL_RETRIES || agent_time_left(a) == 0)
			return 0;
		outcome_release(o);
		sleep_seconds(a, delay);
		delay = delay * 2 > 10 ? 10 : delay * 2;
	}
}

static jv tool_event(const char *name, jv input, const struct agent_tool_outcome *o,
		     int attempts, long long ms)
{
	jv p = jv_object();

	if (jv_get_kind(o->event) == JV_KIND_OBJECT)
		p = jv_object_merge(p, jv_copy(o->event));
	p = json_set(p, "tool", jv_string(name));
	p = json_set(p, "input", agent_sanitize(input));
	p = json_set(p, "ok", jv_bool(o->ok));
	p = json_set(p, "attempts", jv_number(attempts));
	p = json_set(p, "duration_ms", jv_number((double)ms));
	if (!o->ok) {
		jv msg = jv_string(o->text ? o->text : "failed");
		p = json_set(p, "error", agent_sanitize(msg));
		jv_free(msg);
		p = json_set(p, "retryable", jv_bool(o->retryable));
	}
	return p;
}

/* The finish tool: the phase result, checked against the phase's schema. */
static int take_finish(struct agent *a, jv input, char **error)
{
	struct agent_config *cfg = a->cfg;
	int rc;

	*error = NULL;
	if (!cfg->result_schema_name)
		rc = 0;
	else if (cfg->result_schema_def)
		rc = schema_validate_def_all(NULL, cfg->result_schema_name, cfg->result_schema_def, input);
	else {
		const struct schema *s = schema_get(cfg->result_schema_name);
		rc = s ? schema_validate_all(NULL, s, input) : -1;
	}
	if (rc < 0) {
		struct buf b = BUF_INIT;
		buf_addf(&b, "The result does not match the %s schema: %s. Fix it and call finish again.",
			 cfg->phase, forge_last_error());
		*error = buf_detach(&b, NULL);
		emit(a, "agent.finish_rejected", json_set(jv_object(), "error", jv_string(forge_last_error())));
		return -1;
	}
	if (cfg->result_check && cfg->result_check(input) < 0) {
		struct buf b = BUF_INIT;
		buf_addf(&b, "The %s result is not consistent: %s. Fix it and call finish again.",
			 cfg->phase, forge_last_error());
		*error = buf_detach(&b, NULL);
		emit(a, "agent.finish_rejected", json_set(jv_object(), "error", jv_string(forge_last_error())));
		return -1;
	}
	a->res->result = jv_copy(input);
	return 0;
}

enum turn { TURN_CONTINUE, TURN_END };

/* A call refused for its input (text, consumed, for the model; error for
 * the event): nothing runs, and it counts as a tool error (the breakers
 * see a model that keeps doing it). */
static void refuse_input(struct agent *a, const struct llm_tool_call *call, char *text, const char *error,
			 struct call_window *w)
{
	struct agent_tool_outcome o = { 0 };

	o.text = text;
	o.event = json_set(json_set(jv_object(), "kind", jv_string("input")), "error", jv_string(error));
	a->res->tool_calls++;
	a->res->tool_errors++;
	window_add(w, agent_now(a), true);
	emit(a, "tool.failed", tool_event(call->name, call->input, &o, 1, 0));
	a->messages = jv_array_append(a->messages, llm_msg_tool_result(call->id, o.text, true));
	outcome_release(&o);	/* a slip of the model's, no lesson: not reflected on */
}

/* A call whose arguments were not a JSON object (a model's slip): the
 * model is told, as for input that fails the tool's schema. */
static void bad_arguments(struct agent *a, const struct llm_tool_call *call, struct call_window *w)
{
	struct buf b = BUF_INIT;

	buf_addf(&b, "%s: %s; call it again with the arguments as one JSON object matching its schema",
		 call->name, call->input_error);
	refuse_input(a, call, buf_detach(&b, NULL), call->input_error, w);
}

/*
 * A call cut by the answer's token limit before its arguments were whole:
 * nothing runs, the model is told to make the change in smaller calls (the
 * same call again would be cut again), and a tool.cut event says so.  The
 * limit is forge's own (llm.max_tokens, or the room the window left), not
 * a tool that failed: it is no tool call and no tool error, so the
 * error-rate breakers do not count it (before: three cut calls tripped
 * the run's breaker after implement had finished ok, and a resume went on
 * with nothing changed).  A loop of cut answers ends as stagnation, saying
 * to raise llm.max_tokens.
 */
static void cut_call(struct agent *a, const struct llm_tool_call *call)
{
	struct buf b = BUF_INIT;

	buf_addf(&b, "%s: your answer reached the limit of %d output tokens before this call's "
		 "arguments were complete (%s); nothing was done.  Make the change in smaller calls: "
		 "edit_file on a part of the file, or a shorter text", call->name, a->answer_tokens,
		 call->input_error);
	emit(a, "tool.cut", json_set(json_set(json_set(jv_object(), "tool", jv_string(call->name)),
					      "max_tokens", jv_number(a->answer_tokens)),
				     "error", jv_string(call->input_error)));
	if (a->env->on_cut)
		a->env->on_cut(a->env->progress_payload, call->name, a->answer_tokens);
	a->messages = jv_array_append(a->messages, llm_msg_tool_result(call->id, b.buf, true));
	buf_release(&b);
}

/*
 * ask_human's input against schemas/tools/ask_human.json, as the executor
 * checks every other tool's (tools.h): a call without a question, or with
 * one too long for a gate, goes back to the model instead of stopping the
 * run in front of a human with "(no question)".  0, or -1 with the model
 * told (a tool error).
 */
static int check_ask_human(struct agent *a, const struct llm_tool_call *call, struct call_window *w)
{
	const struct schema *s = schema_get("tools/ask_human.json");
	struct buf b = BUF_INIT;

	if (s && schema_validate(s, call->input) == 0)
		return 0;
	char *error = xstrdup(s ? forge_last_error() : "no schema for ask_human");
	buf_addf(&b, "ask_human: invalid input: %s; call it again with input that matches its schema "
		 "(a \"question\" of 1 to 8192 characters; \"context\" and \"options\" optional)", error);
	refuse_input(a, call, buf_detach(&b, NULL), error, w);
	free(error);
	return -1;
}

/*
 * What an ask_human call (input, borrowed; checked against its schema)
 * asks, as one text a person reads at the gate: the question, then the
 * answers it offers and what the agent found, when given -- "Which file?
 * (options: a | b) (context: …)".  Before: options and context were
 * dropped, the person saw the question alone.  Malloc'd.
 */
static char *asked_text(jv input)
{
	struct buf b = BUF_INIT;
	const char *q = json_get_str(input, "question"), *ctx = json_get_str(input, "context");
	jv opts = json_get(input, "options");

	buf_adds(&b, q && *q ? q : "(no question)");
	if (jv_get_kind(opts) == JV_KIND_ARRAY && jv_array_length(jv_copy(opts)) > 0) {
		buf_adds(&b, " (options: ");
		jv_array_foreach(opts, i, o) {
			if (i > 0)
				buf_adds(&b, " | ");
			if (jv_get_kind(o) == JV_KIND_STRING)
				buf_adds(&b, jv_string_value(o));
			jv_free(o);
		}
		buf_adds(&b, ")");
	}
	jv_free(opts);
	if (ctx && *ctx)
		buf_addf(&b, " (context: %s)", ctx);
	return buf_detach(&b, NULL);
}

/*
 * finish or ask_human, the turn's other calls run (failed: whether one of
 * them failed).  A finish after a failed call of its own turn is not taken:
 * the model has not seen that result yet.
 */
static enum turn end_call(struct agent *a, const struct llm_tool_call *call, bool failed)
{
	char *error = NULL;

	if (strcmp(call->name, "ask_human") == 0) {
		char *q = asked_text(call->input);

		a->messages = jv_array_append(a->messages,
			llm_msg_tool_result(call->id, "Waiting for a human.", false));
		jv e = json_set(jv_object(), "question", json_get(call->input, "question"));
		if (json_has(call->input, "options"))
			e = json_set(e, "options", json_get(call->input, "options"));
		if (json_has(call->input, "context"))
			e = json_set(e, "context", json_get(call->input, "context"));
		emit(a, "agent.escalated", e);
		finish_with(a, AGENT_ESCALATED, NULL, "the agent asks: %s", q);
		free(a->res->question);
		a->res->question = q;
		agent_reflect(a, "escalation", a->res->reason);
		return TURN_END;
	}
	if (failed) {
		a->messages = jv_array_append(a->messages, llm_msg_tool_result(call->id,
			"Not taken: another call of the same answer failed.  Read its result, then finish.", true));
		return TURN_CONTINUE;
	}
	if (take_finish(a, call->input, &error) == 0) {
		a->messages = jv_array_append(a->messages, llm_msg_tool_result(call->id, "Result accepted.", false));
		finish_with(a, AGENT_DONE, NULL, "finished");
		return TURN_END;
	}
	a->messages = jv_array_append(a->messages, llm_msg_tool_result(call->id, error, true));
	free(error);
	return TURN_CONTINUE;
}

static bool ends_turn(const struct llm_tool_call *call)
{
	return !call->input_error && (strcmp(call->name, "finish") == 0 || strcmp(call->name, "ask_human") == 0);
}

/*
 * Act on every tool call of one answer; appends the tool results.  The
 * calls of one answer are not a sequence the model promises: a finish or
 * an ask_human is taken after the others ran, wherever it stands (before:
 * a write_file after a finish was dropped unsaid, the phase ok without it).
 * Only the first of them is taken; another is answered as not taken.
 */
static enum turn act(struct agent *a, const struct llm_response *resp, struct call_window *w)
{
	const struct llm_tool_call *end = NULL;
	bool failed = false;

	for (size_t i = 0; i < resp->ncalls; i++) {
		const struct llm_tool_call *call = &resp->calls[i];

		if (call->input_error) {
			if (resp->stop == LLM_STOP_MAX_TOKENS)
				cut_call(a, call);
			else
				bad_arguments(a, call, w);
			failed = true;
			continue;
		}
		if (ends_turn(call)) {
			/* (finish is checked when taken, against the phase's result schema) */
			if (strcmp(call->name, "ask_human") == 0 && check_ask_human(a, call, w) < 0) {
				failed = true;
				continue;
			}
			if (!end)
				end = call;
			else
				a->messages = jv_array_append(a->messages, llm_msg_tool_result(call->id,
					"Not taken: one finish or ask_human an answer.", true));
			continue;
		}

		struct agent_tool_outcome o;
		int attempts;
		long long t0 = agent_now(a);
		if (execute(a, &o, call->name, call->input, &attempts) < 0) {
			finish_with(a, AGENT_FAILED, NULL, "tool '%s' could not run: %s", call->name,
				    forge_last_error());
			return TURN_END;
		}
		long long ms = agent_now(a) - t0;
		/* A key a command printed never reaches the model or an event:
		 * redacted by value (llm.h). */
		llm_redact(o.text);
		o.event = llm_redact_jv(o.event);
		/* One result is held to a share of the model's window, whatever
		 * the tool (before: a 256 KiB read_file was sent to a 32K model,
		 * which refused it, and compression kept it whole) */
		size_t cap = agent_result_cap(a);
		if (cap && o.text && strlen(o.text) > cap * 4) {
			char *shrunk = agent_shrink_text(o.text, cap, a->cfg->context_tokens);
			free(o.text);
			o.text = shrunk;
		}
		a->res->tool_calls++;
		a->res->cost_usd += o.cost_usd;
		a->res->tokens += o.tokens;
		if (o.cost_unknown)
			a->res->cost_known = false;
		if (!o.ok) {
			a->res->tool_errors++;
			failed = true;
		}
		window_add(w, agent_now(a), !o.ok);
		emit(a, o.ok ? "tool.executed" : "tool.failed", tool_event(call->name, call->input, &o, attempts, ms));
		if (a->env->on_tool)
			a->env->on_tool(a->env->progress_payload, call->name, call->input, o.ok, o.text);
		if (a->env->progress)
			a->env->progress(a->env->progress_payload, a->res->iterations, call->name, a->res->cost_usd);
		a->messages = jv_array_append(a->messages,
			llm_msg_tool_result(call->id, o.text ? o.text : (o.ok ? "ok" : "failed"), !o.ok));
		if (o.gate) {
			emit(a, "agent.escalated", json_set(json_set(jv_object(), "tool", jv_string(call->name)),
							   "gate", jv_string(o.gate)));
			finish_with(a, AGENT_ESCALATED, NULL, "%s needs human approval: %s", call->name, o.gate);
			outcome_release(&o);
			return TURN_END;
		}
		if (!o.ok)
			agent_reflect(a, "error", o.text);
		outcome_release(&o);
	}
	return end ? end_call(a, end, failed) : TURN_CONTINUE;
}

/* ---- reason ------------------------------------------------------------- */

/* The least room for an answer a request must leave in the window:
 * AGENT_ANSWER_MIN, or a quarter of a window smaller than 4K. */
static size_t answer_min(size_t window)
{
	return window / 4 < AGENT_ANSWER_MIN ? window / 4 : AGENT_ANSWER_MIN;
}

/* Whether the request, as forge estimates it (with a tenth more: the
 * server counts exactly), leaves the model's window room for an answer
 * (answer_min). */
static bool request_fits(struct agent *a, size_t *fixed, size_t *messages)
{
	size_t window = a->cfg->context_tokens, prompt;

	*fixed = agent_fixed_tokens(a);
	*messages = agent_messages_tokens(a);
	prompt = *fixed + *messages;
	prompt += prompt / 10;
	return !window || prompt + answer_min(window) <= window;
}

/*
 * The provider refused the request as too long (llm: LLM_ERR_CONTEXT)
 * and compressing the working memory did not help or could not be done:
 * msg (the client's error) with what the user can change.  The client's
 * own tip, to shorten the prompt, is for a prompt of the user's (forge
 * llm); here the prompt is the agent's, sized to the window forge takes
 * the model to have, which the provider's refusal says is too large.
 */
static void context_refused(const struct agent *a, const char *msg, bool compressed)
{
	static const char tip[] = "; shorten the prompt";
	size_t n = strlen(msg), t = sizeof tip - 1;

	if (n >= t && !strcmp(msg + n - t, tip))
		n -= t;
	forge_error("%.*s; the working memory %s: when the model's context window is smaller than "
		    "the %zu tokens forge takes it to have, say so in llm.context_window (or "
		    "llm.pricing's context_window for a model forge knows) so that the agent "
		    "compresses in time; else give a smaller task (or lower memory.context_tokens)",
		    (int)n, msg, compressed ? "was compressed and the request still refused"
					    : "could not be compressed further",
		    a->cfg->context_tokens);
}

/*
 * One call with the working memory; on a context overflow, compress and
 * retry once.  A request that cannot fit the window, compressed as far as
 * it goes, is not sent: -2 with a message naming the window.
 */
static int reason(struct agent *a, struct llm_response *resp)
{
	struct llm_request req;
	size_t fixed, messages;
	int rc;

	if (!request_fits(a, &fixed, &messages) &&
	    (!agent_compress(a, true) || !request_fits(a, &fixed, &messages))) {
		llm_response_init(resp);
		forge_error("the request does not fit the model's context window of %zu tokens "
			    "(llm.context_window, or llm.pricing's context_window for a model forge knows): "
			    "the system prompt and the tools take about %zu tokens and the working memory, "
			    "compressed as far as it goes, about %zu, with at least %zu left for the answer; "
			    "use a model with a larger window (or, when the model's window is larger, say so "
			    "in llm.context_window), or a smaller task or memory.context_tokens",
			    a->cfg->context_tokens, fixed, messages, answer_min(a->cfg->context_tokens));
		return -2;
	}
	for (int tries = 0;; tries++) {
		llm_request_init(&req);
		req.system = a->cfg->system_prompt;
		req.messages = jv_copy(a->messages);
		req.tools = jv_copy(a->tools);
		req.tool_choice = LLM_TOOL_ANY;
		req.max_tokens = a->answer_tokens = agent_answer_room(a);
		req.temperature = a->cfg->temperature;
		/* (each turn sends this one's prefix again: read from the
		 * provider's prompt cache at a tenth of the input price) */
		req.cache_prefix = true;
		/* (the time limits bound a call in flight: a stream kept alive
		 * by pings, or retries, ran on past them) */
		req.deadline_ms = agent_deadline(a);
		if (a->env->on_text) {
			req.stream = true;
			req.on_text = a->env->on_text;
			req.payload = a->env->progress_payload;
			req.progress_only = true;	/* the live view; the answer is resp */
		}
		if (a->env->on_call)
			a->env->on_call(a->env->progress_payload, true);
		rc = llm_call(resp, a->env->llm, &req);
		if (a->env->on_call)
			a->env->on_call(a->env->progress_payload, false);
		llm_request_release(&req);
		if (rc == 0 || llm_client_error(a->env->llm) != LLM_ERR_CONTEXT)
			return rc;
		char msg[1024];
		snprintf(msg, sizeof msg, "%s", forge_last_error());
		if (tries > 0) {
			context_refused(a, msg, true);
			return rc;
		}
		llm_response_release(resp);
		if (!agent_compress(a, true)) {
			context_refused(a, msg, false);
			return -1;
		}
	}
}

/* An answer with no tool call: remind the model how the loop ends. */
static void nudge(struct agent *a, const struct llm_response *resp)
{
	const char *text = resp->stop == LLM_STOP_MAX_TOKENS
		? "Your answer was cut off at the token limit. Continue with a tool call and keep "
		  "each answer short."
		: "Use the tools to make progress. When the work is complete, call `finish` with the "
		  "result; if you are blocked, call `ask_human`.";
	a->messages = jv_array_append(a->messages, llm_msg_user(text));
}

/* ---- the loop ----------------------------------------------------------- */

/*
 * An answer cut where the model's context window ended (the request and
 * the answer filled it): it is left out, and the step asked again with the
 * working memory compressed, as after a context-length error.  When there
 * is nothing left to compress the loop ends: a larger llm.max_tokens would
 * only make it worse.  Returns true to go on.
 */
static bool context_full(struct agent *a)
{
	if (agent_compress(a, true))
		return true;
	finish_with(a, AGENT_FAILED, NULL, "the conversation no longer fits the model's context "
		    "window (%zu tokens as forge takes it): the answer was cut where the window ended, "
		    "and the working memory could not be compressed further; use a model with a "
		    "larger context window or give a smaller task (or lower memory.context_tokens "
		    "and context.instructions_tokens; when the model's window is smaller, say so "
		    "in llm.context_window, or llm.pricing's context_window for a model forge knows, "
		    "so that the agent compresses in time)",
		    a->cfg->context_tokens ? a->cfg->context_tokens : (size_t)100000);
	return false;
}

/* Escalate a loop stuck on the same step `same` times, naming the cause
 * when the answers show one: the last `cut` were cut at max_tokens, the
 * last `silent` called no tool. */
static void stagnation(struct agent *a, int same, int cut, int silent)
{
	int max_tokens = a->cfg->max_tokens > 0 ? a->cfg->max_tokens : 8192;

	if (cut >= same)
		finish_with(a, AGENT_ESCALATED, NULL, "stagnation: the same step %d times running: every "
			    "answer was cut at llm.max_tokens (%d) before it was whole; raise llm.max_tokens",
			    same, max_tokens);
	else if (silent >= same)
		finish_with(a, AGENT_ESCALATED, NULL, "stagnation: the same step %d times running: the "
			    "model answered %d times without calling a tool (does it support tool calls?)",
			    same, silent);
	else
		finish_with(a, AGENT_ESCALATED, NULL,
			    "stagnation: the same step %d times running without progress", same);
}

static void loop(struct agent *a)
{
	struct call_window w = { 0 };
	unsigned long long last_hash = 0;
	int same = 0, cut = 0, silent = 0;   /* answers running: the same, cut, without a call */
	int threshold = a->cfg->stagnation_threshold > 0 ? a->cfg->stagnation_threshold : 3;

	for (;;) {
		if (!breakers_hold(a, &w))
			break;
		a->res->iterations++;
		emit(a, "agent.iteration", json_set(json_set(jv_object(), "iteration",
			jv_number(a->res->iterations)), "cost_usd", jv_number(a->res->cost_usd)));
		if (a->env->progress)
			a->env->progress(a->env->progress_payload, a->res->iterations, NULL, a->res->cost_usd);
		agent_compress(a, false);

		struct llm_response resp;
		int rc = reason(a, &resp);
		if (rc == -2) {
			llm_response_release(&resp);
			finish_with(a, AGENT_FAILED, NULL, "%s", forge_last_error());
			break;
		}
		if (rc < 0) {
			char *why = llm_client_failure(a->env->llm);
			/* what it was billed before it broke counts, as any call's */
			if (resp.usage_seen) {
				agent_account(a, &resp);
				agent_emit_llm_called(a, a->env->llm, &resp);
			}
			llm_response_release(&resp);
			/* ended by the time limit (the call was cut at it): the
			 * time breaker's, as between calls, not the provider's */
			if (time_holds(a))
				finish_with(a, AGENT_FAILED, NULL, "%s", why);
			free(why);
			break;
		}
		agent_account(a, &resp);
		agent_emit_llm_called(a, a->env->llm, &resp);
		if (resp.stop == LLM_STOP_CONTEXT_WINDOW) {
			llm_response_release(&resp);
			if (!context_full(a))
				break;
			continue;
		}
		a->messages = jv_array_append(a->messages, llm_msg_assistant(&resp));
		if (resp.stop == LLM_STOP_REFUSAL && resp.ncalls == 0) {
			finish_with(a, AGENT_ESCALATED, NULL, "the model refused: %s",
				    resp.stop_detail && *resp.stop_detail ? resp.stop_detail :
				    *resp.text ? resp.text : "(it gave no reason)");
			llm_response_release(&resp);
			break;
		}
		enum turn t = TURN_CONTINUE;
		cut = resp.stop == LLM_STOP_MAX_TOKENS ? cut + 1 : 0;
		silent = resp.ncalls == 0 ? silent + 1 : 0;
		if (resp.ncalls == 0)
			nudge(a, &resp);
		else
			t = act(a, &resp, &w);
		llm_response_release(&resp);
		if (t == TURN_END)
			break;

		/* Stagnation: the same last three messages, `threshold` times running. */
		unsigned long long h = agent_messages_hash(a->messages, 3);
		same = h == last_hash ? same + 1 : 1;
		last_hash = h;
		if (same >= threshold) {
			emit(a, "agent.stagnation_detected", json_set(jv_object(), "iterations",
				jv_number(a->res->iterations)));
			stagnation(a, same, cut, silent);
			agent_reflect(a, "error", "the agent appeared stuck");
			break;
		}
	}
	free(w.at);
	free(w.failed);
}

int agent_run(struct agent_result *out, struct agent_config *cfg, struct agent_env *env,
	      const char *prompt)
{
	struct agent a = { .cfg = cfg, .env = env, .res = out };

	agent_result_init(out);
	if (!env->llm || !env->exec) {
		jv_free(cfg->tools);
		jv_free(cfg->result_schema);
		cfg->tools = cfg->result_schema = jv_null();
		return forge_error("agent: a model client and a tool executor are needed");
	}
	a.start_ms = agent_now(&a);
	a.tools = all_tools(cfg);
	a.messages = jv_array_append(jv_array(), llm_msg_user(prompt));
	loop(&a);
	if (out->outcome == AGENT_DONE)
		agent_reflect(&a, "success", NULL);
	out->duration_ms = agent_now(&a) - a.start_ms;
	out->messages = a.messages;
	jv_free(a.tools);
	free(a.message_tokens);
	return 0;
}

/* A "replace: VALUE" line (trimmed) of an overlay: 1 when it is one,
 * setting *replace; 0 when it is not; -1 for a bad value. */
static int replace_line(bool *replace, const char *line, size_t len)
{
	while (len && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r'))
		len--;
	while (len && (*line == ' ' || *line == '\t')) {
		line++;
		len--;
	}
	if (len < 8 || strncmp(line, "replace:", 8) != 0)
		return 0;
	line += 8;
	len -= 8;
	while (len && (*line == ' ' || *line == '\t')) {
		line++;
		len--;
	}
	if (len == 4 && !strncmp(line, "true", 4))
		*replace = true;
	else if (len == 5 && !strncmp(line, "false", 5))
		*replace = false;
	else
		return forge_error("'replace: %.*s': replace takes true or false", (int)(len > 40 ? 40 : len), line);
	return 1;
}

/* The length of the line at p, without its newline. */
static size_t line_len(const char *p)
{
	return strcspn(p, "\n");
}

static const char *next_line(const char *p)
{
	p += line_len(p);
	return *p ? p + 1 : p;
}

static bool is_fence(const char *p)
{
	size_t n = line_len(p);

	while (n && (p[n - 1] == '\r' || p[n - 1] == ' '))
		n--;
	return n == 3 && !strncmp(p, "---", 3);
}

int agent_prompt_overlay_parse(const char **body, bool *replace, const char *text)
{
	*replace = false;
	*body = text;
	if (is_fence(text)) {
		/* front matter: up to the closing fence; without one it is text */
		const char *p = next_line(text);

		for (const char *q = p; *q; q = next_line(q)) {
			if (!is_fence(q))
				continue;
			for (; p < q; p = next_line(p))
				if (replace_line(replace, p, line_len(p)) < 0)
					return -1;
			*body = next_line(q);
			return 0;
		}
		return 0;
	}
	int r = replace_line(replace, text, line_len(text));

	if (r < 0)
		return -1;
	if (r > 0)
		*body = next_line(text);
	return 0;
}

int agent_prompt_load(char **out, const char *repo, const char *phase)
{
	return agent_prompt_load_how(out, NULL, repo, phase);
}

/* The overlay's text in *b: 1 read, 0 none, -1 error. */
static int read_overlay(struct buf *b, const char *repo, const char *phase)
{
	char path[4096];

	if (!repo)
		return 0;
	snprintf(path, sizeof path, "%s/.forge/prompts/%s.md", repo, phase);
	if (buf_read_file(b, path) == 0)
		return 1;
	return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
}

int agent_prompt_load_how(char **out, enum agent_prompt_how *how, const char *repo, const char *phase)
{
	char name[128];
	struct buf overlay = BUF_INIT, text = BUF_INIT;
	enum agent_prompt_how h = AGENT_PROMPT_BUILTIN;
	const char *body = NULL;
	bool replace = false;
	int rc = -1, has;

	*out = NULL;
	snprintf(name, sizeof name, "prompts/%s.md", phase);
	const struct resource *r = resource_find(name);

	has = read_overlay(&overlay, repo, phase);
	if (has < 0)
		goto out;
	if (has > 0 && agent_prompt_overlay_parse(&body, &replace, overlay.buf) < 0) {
		forge_error_prefix(".forge/prompts/%s.md", phase);
		goto out;
	}
	if (has > 0 && (replace || !r)) {
		h = AGENT_PROMPT_REPLACED;
		buf_adds(&text, body);
	} else if (!r) {
		forge_error("no prompt for phase '%s'", phase);
		goto out;
	} else {
		buf_add(&text, r->data, r->len);
		if (has > 0) {
			h = AGENT_PROMPT_APPENDED;
			while (text.len && text.buf[text.len - 1] == '\n')
				buf_truncate(&text, text.len - 1);
			buf_addf(&text, "\n\n## Project prompt (.forge/prompts/%s.md)\n\n%s", phase, body);
		}
	}
	*out = buf_detach(&text, NULL);
	if (how)
		*how = h;
	rc = 0;
out:
	buf_release(&overlay);
	buf_release(&text);
	return rc;
}
