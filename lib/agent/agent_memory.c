/*
 * agent_memory.c - the agent's working memory: hashing for stagnation,
 * compression when it nears the token budget, sanitising for events, and
 * calls on the fast model.
 */
#include "agent/agent_internal.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/resource.h"
#include "data/stream.h"
#include "core/tokens.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define EVENT_STRING_MAX 200        /* longer strings in events are cut */
#define KEEP_RECENT 3               /* messages kept whole by compression */

static unsigned long long fnv1a(unsigned long long h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static unsigned long long hash_str(unsigned long long h, const char *s)
{
	return fnv1a(h, s ? s : "", s ? strlen(s) + 1 : 1);
}

/* Tool call ids differ on every call even when the step repeats, so they
 * are left out: the hash sees what was done and what came back. */
static unsigned long long hash_message(unsigned long long h, jv m)
{
	h = hash_str(h, json_get_str(m, "role"));
	h = hash_str(h, json_get_str(m, "content"));
	jv calls = json_get(m, "tool_calls");
	if (jv_get_kind(calls) == JV_KIND_ARRAY) {
		jv_array_foreach(calls, i, c) {
			h = hash_str(h, json_get_str(c, "name"));
			char *in = json_dumps(json_get(c, "input"), true);
			h = hash_str(h, in);
			free(in);
			jv_free(c);
		}
	}
	jv_free(calls);
	return hash_str(h, json_get_bool(m, "is_error", false) ? "error" : "ok");
}

unsigned long long agent_messages_hash(jv messages, int n)
{
	unsigned long long h = 14695981039346656037ULL;
	int len = jv_get_kind(messages) == JV_KIND_ARRAY ? jv_array_length(jv_copy(messages)) : 0;

	for (int i = len - n < 0 ? 0 : len - n; i < len; i++) {
		jv m = jv_array_get(jv_copy(messages), i);
		h = hash_message(h, m);
		jv_free(m);
	}
	return h;
}

const char *agent_builtin_prompt(const char *name)
{
	char path[128];

	snprintf(path, sizeof path, "prompts/%s.md", name);
	const struct resource *r = resource_find(path);
	return r ? r->data : "";
}

jv agent_sanitize(jv v)
{
	switch (jv_get_kind(v)) {
	case JV_KIND_STRING: {
		const char *s = jv_string_value(v);
		size_t n = strlen(s);
		char *copy = xstrdup(s);
		llm_redact(copy);
		if (n > EVENT_STRING_MAX) {
			size_t cut = EVENT_STRING_MAX;
			while (cut > 0 && ((unsigned char)copy[cut] & 0xC0) == 0x80)
				cut--;	/* never split a UTF-8 sequence */
			jv out = jv_string_fmt("%.*s…[%zu bytes]", (int)cut, copy, n);
			free(copy);
			return out;
		}
		jv out = jv_string(copy);
		free(copy);
		return out;
	}
	case JV_KIND_ARRAY: {
		jv out = jv_array();
		jv_array_foreach(v, i, x) {
			out = jv_array_append(out, agent_sanitize(x));
			jv_free(x);
		}
		return out;
	}
	case JV_KIND_OBJECT: {
		jv out = jv_object();
		jv_object_foreach(v, k, x) {
			out = jv_object_set(out, k, agent_sanitize(x));
			jv_free(x);
		}
		return out;
	}
	default:
		return jv_copy(v);
	}
}

void agent_emit_llm_called(struct agent *a, const struct llm_client *c, const struct llm_response *resp)
{
	jv p = llm_called_payload(c, resp);

	if (c != a->env->llm)
		p = json_set(p, "fast", jv_true());
	jv cost = llm_called_cost(resp);
	if (a->env->out)
		stream_emit_full(a->env->out, "llm.called", p, cost, (long long)resp->duration_ms);
	else {
		jv_free(p);
		jv_free(cost);
	}
}

int agent_fast_call(struct llm_response *out, struct agent *a, const char *system,
		    const char *user, jv tool)
{
	struct llm_client *c = a->env->fast ? a->env->fast : a->env->llm;
	struct llm_request req;
	int rc;

	llm_request_init(&req);
	req.system = system;
	req.messages = jv_array_append(jv_array(), llm_msg_user(user));
	if (jv_get_kind(tool) == JV_KIND_OBJECT) {
		req.tool_choice = LLM_TOOL_FORCED;
		req.tool_name = json_get_str(tool, "name");
		req.tools = jv_array_append(jv_array(), jv_copy(tool));
	}
	req.max_tokens = 2048;
	req.temperature = a->cfg->temperature;
	req.deadline_ms = agent_deadline(a);	/* (a compression's too) */
	rc = llm_call(out, c, &req);
	llm_request_release(&req);
	jv_free(tool);
	a->fast_calls++;
	if (rc == 0 || out->usage_seen) {	/* (a call that broke off after its usage was billed) */
		agent_account(a, out);
		agent_emit_llm_called(a, c, out);
	}
	return rc;
}

/* A summary made without the model: which tools ran and how they ended. */
static char *mechanical_summary(jv middle)
{
	struct buf b = BUF_INIT;

	buf_adds(&b, "Earlier steps (summarised without the model):\n");
	jv_array_foreach(middle, i, m) {
		const char *role = json_get_str(m, "role");
		jv calls = json_get(m, "tool_calls");
		if (jv_get_kind(calls) == JV_KIND_ARRAY) {
			jv_array_foreach(calls, j, c) {
				char *in = json_dumps(json_get(c, "input"), false);
				buf_addf(&b, "- called %s %.120s\n", json_get_str(c, "name"), in);
				free(in);
				jv_free(c);
			}
		} else if (role && strcmp(role, "tool") == 0) {
			const char *t = json_get_str(m, "content");
			buf_addf(&b, "  %s %.120s\n", json_get_bool(m, "is_error", false) ? "error:" : "->",
				 t ? t : "");
		}
		jv_free(calls);
		jv_free(m);
	}
	return buf_detach(&b, NULL);
}

static char *model_summary(struct agent *a, jv middle, size_t budget_tokens)
{
	char *log = json_dumps(jv_copy(middle), false);
	size_t max_bytes = budget_tokens * 2;	/* about half the budget */
	struct llm_response resp;
	char *summary = NULL;

	if (strlen(log) > max_bytes) {
		size_t cut = max_bytes;
		while (cut > 0 && ((unsigned char)log[cut] & 0xC0) == 0x80)
			cut--;
		log[cut] = '\0';
	}
	if (agent_fast_call(&resp, a, agent_builtin_prompt("compress"), log, jv_null()) == 0 &&
	    resp.text[0])
		summary = xstrdup(resp.text);
	llm_response_release(&resp);
	free(log);
	return summary;
}

size_t agent_fixed_tokens(struct agent *a)
{
	const char *system = a->cfg->system_prompt;

	if (!a->fixed_tokens)
		a->fixed_tokens = (system ? tokens_estimate_str(system) : 0) + tokens_estimate_jv(a->tools);
	return a->fixed_tokens;
}

size_t agent_messages_tokens(struct agent *a)
{
	int n = jv_array_length(jv_copy(a->messages));
	size_t total = n > 1 ? (size_t)n - 1 : 0;

	if (n > a->cap_estimated) {
		a->cap_estimated = n * 2;
		a->message_tokens = xrealloc(a->message_tokens, (size_t)a->cap_estimated * sizeof *a->message_tokens);
	}
	for (int i = a->n_estimated; i < n; i++) {
		jv m = jv_array_get(jv_copy(a->messages), i);

		a->message_tokens[i] = tokens_estimate_jv(m);
		jv_free(m);
	}
	if (n > a->n_estimated)
		a->n_estimated = n;
	for (int i = 0; i < n; i++)
		total += a->message_tokens[i];
	return total;
}

void agent_messages_replaced(struct agent *a)
{
	a->n_estimated = 0;
}

int agent_answer_room(struct agent *a)
{
	int want = a->cfg->max_tokens > 0 ? a->cfg->max_tokens : 8192;
	size_t window = a->cfg->context_tokens, prompt;

	if (!window)
		return want;
	prompt = agent_fixed_tokens(a) + agent_messages_tokens(a);
	prompt += prompt / 10;  /* (an estimate: the server counts exactly) */
	if (prompt + (size_t)want <= window)
		return want;
	return window > prompt + AGENT_ANSWER_MIN ? (int)(window - prompt) : AGENT_ANSWER_MIN;
}

int agent_compress(struct agent *a, bool force)
{
	size_t window = a->cfg->context_tokens ? a->cfg->context_tokens : 100000;
	/* The messages' share of the window: what the system prompt, the
	 * tools and room for an answer (a quarter of the window at most)
	 * leave; compressed at 90% of it. */
	size_t want = (size_t)(a->cfg->max_tokens > 0 ? a->cfg->max_tokens : 8192);
	size_t reserve = agent_fixed_tokens(a) + (want < window / 4 ? want : window / 4);
	size_t budget = window > reserve + window / 8 ? window - reserve : window / 8;
	size_t before = agent_messages_tokens(a);
	int n = jv_array_length(jv_copy(a->messages));

	if (!force && before * 10 < budget * 9)
		return 0;
	/*
	 * Keep the first message and the last KEEP_RECENT; the kept tail must
	 * not begin with a tool result, whose call would be summarised away
	 * (providers refuse an orphan tool result).
	 */
	int tail = n - KEEP_RECENT;
	while (tail > 1) {
		jv m = jv_array_get(jv_copy(a->messages), tail);
		const char *role = json_get_str(m, "role");
		bool ok = role && strcmp(role, "assistant") == 0;
		jv_free(m);
		if (ok)
			break;
		tail--;
	}
	if (tail <= 1)
		return 0;

	jv middle = jv_array_slice(jv_copy(a->messages), 1, tail);
	char *summary = model_summary(a, middle, budget);
	const char *by = summary ? "model" : "fallback";
	if (!summary)
		summary = mechanical_summary(middle);
	jv_free(middle);

	jv first = jv_array_get(jv_copy(a->messages), 0);
	const char *text = json_get_str(first, "content");
	jv merged = llm_msg_user("");
	merged = json_set(merged, "content", jv_string_fmt("%s\n\n[Summary of the earlier work]\n%s",
							    text ? text : "", summary));
	jv_free(first);
	free(summary);
	jv rest = jv_array_slice(jv_copy(a->messages), tail, n);
	jv_free(a->messages);
	a->messages = jv_array_concat(jv_array_append(jv_array(), merged), rest);
	agent_messages_replaced(a);

	size_t after = agent_messages_tokens(a);
	jv p = jv_object();
	p = json_set(p, "tokens_before", jv_number((double)before));
	p = json_set(p, "tokens_after", jv_number((double)after));
	p = json_set(p, "messages_before", jv_number(n));
	p = json_set(p, "messages_after", jv_number(jv_array_length(jv_copy(a->messages))));
	p = json_set(p, "summarised_by", jv_string(by));
	if (a->env->out)
		stream_emit(a->env->out, "memory.compressed", p);
	else
		jv_free(p);
	return 1;
}
