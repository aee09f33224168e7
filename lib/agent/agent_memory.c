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

size_t agent_message_budget(struct agent *a)
{
	size_t window = a->cfg->context_tokens ? a->cfg->context_tokens : 100000;
	/* The messages' share of the window: what the system prompt, the
	 * tools and room for an answer (a quarter of the window at most)
	 * leave. */
	size_t want = (size_t)(a->cfg->max_tokens > 0 ? a->cfg->max_tokens : 8192);
	size_t reserve = agent_fixed_tokens(a) + (want < window / 4 ? want : window / 4);

	return window > reserve + window / 8 ? window - reserve : window / 8;
}

size_t agent_result_cap(struct agent *a)
{
	size_t window = a->cfg->context_tokens, half;

	if (!window)
		return 0;
	/* A third of the window, and no more than half what the messages
	 * may hold: the task and the other results need the rest.  (With a
	 * 200K window this is above every tool's own cap: unchanged there.) */
	half = agent_message_budget(a) / 2;
	return window / 3 < half ? window / 3 : half;
}

/* The UTF-8 boundary at or before i in s. */
static size_t utf8_back(const char *s, size_t i)
{
	while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
		i--;
	return i;
}

/* s[0..head), the note, s[n - tail..n), into *b. */
static void head_tail(struct buf *b, const char *s, size_t n, size_t head, size_t tail, size_t window)
{
	buf_reset(b);
	buf_add(b, s, head);
	buf_addf(b, "\n[… %zu bytes of this result (of %zu) cut here, its beginning and end kept, so that "
		 "it fits the model's context window (%zu tokens, llm.context_window); to see the rest ask "
		 "for less at a time: read_file with start_line and max_lines, a command piped to head, tail "
		 "or grep …]\n", n - head - tail, n, window);
	buf_add(b, s + n - tail, tail);
}

char *agent_shrink_text(const char *text, size_t max_tokens, size_t window)
{
	size_t n = strlen(text), keep = n, est = tokens_estimate(text, n);
	struct buf b = BUF_INIT;

	if (est <= max_tokens)
		return xstrdup(text);
	/* a guess from the ratio, then smaller until the estimate fits (the
	 * estimate is monotone: a shorter head and tail never cost more) */
	keep = (size_t)((double)n * (double)max_tokens / (double)est);
	for (;;) {
		size_t head = utf8_back(text, keep * 2 / 3);
		size_t tail = keep - keep * 2 / 3;

		while (tail > 0 && ((unsigned char)text[n - tail] & 0xC0) == 0x80)
			tail--;
		head_tail(&b, text, n, head, tail, window);
		if (keep == 0 || tokens_estimate(b.buf, b.len) <= max_tokens)
			break;
		keep = keep * 4 / 5;
	}
	return buf_detach(&b, NULL);
}

/* Tool results are what grows without bound (a file, a command's output):
 * the largest of messages[1..] are cut to their head and tail until the
 * messages estimate at most `target` tokens, none below SHRINK_MIN.
 * Returns how many were cut. */
#define SHRINK_MIN 256
static int shrink_results(struct agent *a, size_t target)
{
	size_t window = a->cfg->context_tokens ? a->cfg->context_tokens : 100000;
	int n = jv_array_length(jv_copy(a->messages)), cut = 0;
	bool *tried = xcalloc(n > 0 ? (size_t)n : 1, sizeof *tried);

	for (;;) {
		size_t total = agent_messages_tokens(a), most = 0;
		int at = -1;

		if (total <= target)
			break;
		for (int i = 1; i < n; i++) {
			jv m = jv_array_get(jv_copy(a->messages), i);
			const char *role = json_get_str(m, "role");

			if (!tried[i] && role && strcmp(role, "tool") == 0 && a->message_tokens[i] > most &&
			    a->message_tokens[i] > SHRINK_MIN) {
				most = a->message_tokens[i];
				at = i;
			}
			jv_free(m);
		}
		if (at < 0)
			break;
		size_t excess = total - target;
		size_t want = most > excess + SHRINK_MIN ? most - excess : SHRINK_MIN;
		jv m = jv_array_get(jv_copy(a->messages), at);
		const char *text = json_get_str(m, "content");
		/* (the message's own fields cost a few tokens besides its text) */
		char *shrunk = agent_shrink_text(text ? text : "", want > 64 ? want - 64 : want, window);

		m = json_set(m, "content", jv_string(shrunk));
		free(shrunk);
		a->message_tokens[at] = tokens_estimate_jv(m);
		a->messages = jv_array_set(a->messages, at, m);
		tried[at] = a->message_tokens[at] <= want;	/* cut once more only if it did not reach want */
		if (a->message_tokens[at] >= most)
			tried[at] = true;	/* (no progress: never picked again) */
		cut++;
	}
	free(tried);
	return cut;
}

int agent_compress(struct agent *a, bool force)
{
	size_t budget = agent_message_budget(a);
	size_t before = agent_messages_tokens(a);
	int n = jv_array_length(jv_copy(a->messages));
	const char *by = NULL;

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
	if (tail > 1) {
		jv middle = jv_array_slice(jv_copy(a->messages), 1, tail);
		char *summary = model_summary(a, middle, budget);
		by = summary ? "model" : "fallback";
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
	}

	/* What is kept whole may still not fit (one tool result can be larger
	 * than the window): its largest tool results are cut to their head and
	 * tail, to three quarters of the budget (room for the next result), or
	 * to half what they were after a refusal the estimate did not foresee. */
	size_t after = agent_messages_tokens(a), target = budget * 3 / 4;
	int cut = 0;
	if (force && !by && after <= target)
		target = after / 2;
	if (after > target)
		cut = shrink_results(a, target);
	if (!by && !cut)
		return 0;

	after = agent_messages_tokens(a);
	jv p = jv_object();
	p = json_set(p, "tokens_before", jv_number((double)before));
	p = json_set(p, "tokens_after", jv_number((double)after));
	p = json_set(p, "messages_before", jv_number(n));
	p = json_set(p, "messages_after", jv_number(jv_array_length(jv_copy(a->messages))));
	p = json_set(p, "summarised_by", jv_string(by ? by : "none"));
	p = json_set(p, "results_cut", jv_number(cut));
	if (a->env->out)
		stream_emit(a->env->out, "memory.compressed", p);
	else
		jv_free(p);
	return 1;
}
