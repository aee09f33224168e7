/*
 * llm_model.c - the provider-neutral request/response model of llm.h and
 * the helpers its providers share.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "core/json.h"
#include "llm/llm_internal.h"

static const char *const stop_names[] = {
	[LLM_STOP_END_TURN] = "end_turn", [LLM_STOP_TOOL_USE] = "tool_use",
	[LLM_STOP_MAX_TOKENS] = "max_tokens", [LLM_STOP_STOP_SEQUENCE] = "stop_sequence",
	[LLM_STOP_REFUSAL] = "refusal", [LLM_STOP_PAUSE_TURN] = "pause_turn",
	[LLM_STOP_ERROR] = "error",
	[LLM_STOP_CONTEXT_WINDOW] = "model_context_window_exceeded",
};

static const char *const error_names[] = {
	[LLM_OK] = "ok", [LLM_ERR_CONFIG] = "config", [LLM_ERR_AUTH] = "auth",
	[LLM_ERR_MODEL] = "model", [LLM_ERR_CONTEXT] = "context_length",
	[LLM_ERR_BAD_REQUEST] = "bad_request", [LLM_ERR_QUOTA] = "quota",
	[LLM_ERR_RATE_LIMIT] = "rate_limit", [LLM_ERR_OVERLOADED] = "overloaded",
	[LLM_ERR_SERVER] = "server", [LLM_ERR_NETWORK] = "network",
	[LLM_ERR_TIMEOUT] = "timeout", [LLM_ERR_PROTOCOL] = "protocol",
	[LLM_ERR_REPLAY] = "replay", [LLM_ERR_INTERRUPTED] = "interrupted",
};

const char *llm_stop_name(enum llm_stop s)
{
	return (unsigned)s < sizeof(stop_names) / sizeof(*stop_names) ? stop_names[s] : "error";
}

int llm_stop_parse(enum llm_stop *out, const char *name)
{
	for (size_t i = 0; name && i < sizeof(stop_names) / sizeof(*stop_names); i++)
		if (!strcmp(stop_names[i], name)) {
			*out = (enum llm_stop)i;
			return 0;
		}
	return -1;
}

const char *llm_error_name(enum llm_error e)
{
	return (unsigned)e < sizeof(error_names) / sizeof(*error_names) ? error_names[e] : "unknown";
}

int llm_error_parse(enum llm_error *out, const char *name)
{
	for (size_t i = 1; name && i < sizeof(error_names) / sizeof(*error_names); i++)
		if (!strcmp(error_names[i], name)) {
			*out = (enum llm_error)i;
			return 0;
		}
	return -1;
}

/* ---- request ----------------------------------------------------------- */

void llm_request_init(struct llm_request *req)
{
	memset(req, 0, sizeof(*req));
	req->messages = jv_null();
	req->tools = jv_null();
	req->stop = jv_null();
	req->temperature = -1;
}

void llm_request_release(struct llm_request *req)
{
	if (!req)
		return;
	jv_free(req->messages);
	jv_free(req->tools);
	jv_free(req->stop);
	req->messages = req->tools = req->stop = jv_null();
}

static const char *choice_name(enum llm_tool_choice c)
{
	switch (c) {
	case LLM_TOOL_ANY: return "any";
	case LLM_TOOL_FORCED: return "tool";
	case LLM_TOOL_NONE: return "none";
	default: return "auto";
	}
}

jv llm_request_to_json(const struct llm_request *req)
{
	jv j = jv_object();

	if (req->system)
		j = json_set(j, "system", jv_string(req->system));
	j = json_set(j, "messages", jv_copy(req->messages));
	if (jv_get_kind(req->tools) == JV_KIND_ARRAY && jv_array_length(jv_copy(req->tools)) > 0) {
		j = json_set(j, "tools", jv_copy(req->tools));
		j = json_set(j, "tool_choice", jv_string(choice_name(req->tool_choice)));
		if (req->tool_choice == LLM_TOOL_FORCED && req->tool_name)
			j = json_set(j, "tool_name", jv_string(req->tool_name));
	}
	j = json_set(j, "max_tokens", jv_number(req->max_tokens > 0 ? req->max_tokens : 4096));
	if (req->temperature >= 0)
		j = json_set(j, "temperature", jv_number(req->temperature));
	if (jv_get_kind(req->stop) == JV_KIND_ARRAY)
		j = json_set(j, "stop", jv_copy(req->stop));
	return j;
}

jv llm_msg_user(const char *text)
{
	return json_set(json_set(jv_object(), "role", jv_string("user")), "content",
			jv_string(text ? text : ""));
}

jv llm_msg_tool_result(const char *tool_call_id, const char *content, bool is_error)
{
	jv m = json_set(jv_object(), "role", jv_string("tool"));

	m = json_set(m, "tool_call_id", jv_string(tool_call_id ? tool_call_id : ""));
	m = json_set(m, "content", jv_string(content ? content : ""));
	return json_set(m, "is_error", jv_bool(is_error));
}

static jv calls_to_json(const struct llm_response *r)
{
	jv a = jv_array();

	for (size_t i = 0; i < r->ncalls; i++) {
		jv c = json_set(jv_object(), "id", jv_string(r->calls[i].id ? r->calls[i].id : ""));
		c = json_set(c, "name", jv_string(r->calls[i].name ? r->calls[i].name : ""));
		a = jv_array_append(a, json_set(c, "input", jv_copy(r->calls[i].input)));
	}
	return a;
}

jv llm_msg_assistant(const struct llm_response *resp)
{
	jv m = json_set(jv_object(), "role", jv_string("assistant"));

	m = json_set(m, "content", jv_string(resp->text ? resp->text : ""));
	if (resp->ncalls)
		m = json_set(m, "tool_calls", calls_to_json(resp));
	if (resp->reasoning)
		m = json_set(m, "reasoning", jv_string(resp->reasoning));
	return m;
}

/* ---- response ---------------------------------------------------------- */

void llm_response_init(struct llm_response *r)
{
	memset(r, 0, sizeof(*r));
	r->text = xstrdup("");
	r->rate_limit = jv_null();
}

void llm_response_release(struct llm_response *r)
{
	if (!r)
		return;
	free(r->text);
	for (size_t i = 0; i < r->ncalls; i++) {
		free(r->calls[i].id);
		free(r->calls[i].name);
		jv_free(r->calls[i].input);
		free(r->calls[i].input_error);
	}
	free(r->calls);
	free(r->stop_detail);
	free(r->reasoning);
	free(r->model);
	free(r->request_id);
	jv_free(r->rate_limit);
	memset(r, 0, sizeof(*r));
	r->rate_limit = jv_null();
}

void llm_response_add_call(struct llm_response *r, const char *id, const char *name, jv input)
{
	r->calls = xrealloc(r->calls, (r->ncalls + 1) * sizeof(*r->calls));
	r->calls[r->ncalls].id = xstrdup(id ? id : "");
	r->calls[r->ncalls].name = xstrdup(name ? name : "");
	r->calls[r->ncalls].input = input;
	r->calls[r->ncalls].input_error = NULL;
	r->ncalls++;
}

/* Whether a call of r other than call `self` has id. */
static bool id_taken(const struct llm_response *r, size_t self, const char *id)
{
	for (size_t i = 0; i < r->ncalls; i++)
		if (i != self && !strcmp(r->calls[i].id, id))
			return true;
	return false;
}

void llm_response_name_calls(struct llm_response *r, jv messages)
{
	int turn = 1;

	if (jv_get_kind(messages) == JV_KIND_ARRAY) {
		jv_array_foreach(messages, i, m) {
			const char *role = json_get_str(m, "role");
			turn += role && !strcmp(role, "assistant");
			jv_free(m);
		}
	}
	for (size_t i = 0; i < r->ncalls; i++) {
		bool dup = false;
		char id[64];

		/* (only an earlier call's id makes this one a duplicate: the
		 * first of two calls that share one keeps it) */
		for (size_t j = 0; j < i && !dup; j++)
			dup = !strcmp(r->calls[j].id, r->calls[i].id);
		if (*r->calls[i].id && !dup)
			continue;
		snprintf(id, sizeof(id), "call_forge_%d_%zu", turn, i + 1);
		/* (a server's own id could be the very same text) */
		for (int k = 2; id_taken(r, i, id); k++)
			snprintf(id, sizeof(id), "call_forge_%d_%zu_%d", turn, i + 1, k);
		free(r->calls[i].id);
		r->calls[i].id = xstrdup(id);
	}
}

void llm_response_add_bad_call(struct llm_response *r, const char *id, const char *name)
{
	char *why = xstrdup(forge_last_error());

	llm_response_add_call(r, id, name, jv_object());
	r->calls[r->ncalls - 1].input_error = why;
}

jv llm_response_to_json(const struct llm_response *r)
{
	jv j = json_set(jv_object(), "text", jv_string(r->text ? r->text : ""));
	jv u = jv_object();

	jv calls = calls_to_json(r);
	/* a call whose arguments did not parse (cut by the token limit, say)
	 * says so, rather than showing as a call with {} */
	for (size_t i = 0; i < r->ncalls; i++)
		if (r->calls[i].input_error)
			calls = jv_array_set(calls, (int)i, json_set(jv_array_get(jv_copy(calls), (int)i),
						   "input_error", jv_string(r->calls[i].input_error)));
	j = json_set(j, "tool_calls", calls);
	j = json_set(j, "stop_reason", jv_string(llm_stop_name(r->stop)));
	if (r->stop_detail)
		j = json_set(j, "stop_detail", jv_string(r->stop_detail));
	if (r->reasoning)
		j = json_set(j, "reasoning", jv_string(r->reasoning));
	u = json_set(u, "input_tokens", jv_number((double)r->usage.input_tokens));
	u = json_set(u, "output_tokens", jv_number((double)r->usage.output_tokens));
	u = json_set(u, "cache_read_tokens", jv_number((double)r->usage.cache_read_tokens));
	u = json_set(u, "cache_write_tokens", jv_number((double)r->usage.cache_write_tokens));
	if (r->usage.estimated)
		u = json_set(u, "estimated", jv_true());
	j = json_set(j, "usage", u);
	j = json_set(j, "cost_usd", r->cost_known ? jv_number(r->cost_usd) : jv_null());
	j = json_set(j, "model", json_str_or_null(r->model));
	j = json_set(j, "request_id", json_str_or_null(r->request_id));
	j = json_set(j, "duration_ms", jv_number(round(r->duration_ms)));
	j = json_set(j, "retries", jv_number(r->retries));
	return json_set(j, "rate_limit", jv_get_kind(r->rate_limit) == JV_KIND_OBJECT ?
			jv_copy(r->rate_limit) : jv_null());
}

static int calls_from_json(struct llm_response *out, jv calls)
{
	int rc = 0;

	if (jv_get_kind(calls) != JV_KIND_ARRAY)
		return 0;
	jv_array_foreach(calls, i, c) {
		jv input = json_get(c, "input");
		const char *name = json_get_str(c, "name");

		if (!name || jv_get_kind(c) != JV_KIND_OBJECT) {
			rc = forge_error("tool_calls[%d] has no name", i);
		} else {
			char idbuf[32];
			const char *id = json_get_str(c, "id");

			snprintf(idbuf, sizeof(idbuf), "call_%d", i + 1);
			if (jv_get_kind(input) == JV_KIND_STRING) {   /* OpenAI style, tolerated */
				jv parsed;
				if (llm_parse_input(&parsed, jv_string_value(input),
						    strlen(jv_string_value(input))) == 0) {
					jv_free(input);
					input = parsed;
				}
			}
			if (jv_get_kind(input) != JV_KIND_OBJECT) {
				jv_free(input);
				input = jv_object();
			}
			llm_response_add_call(out, id ? id : idbuf, name, input);
			input = jv_invalid();
			/* a call recorded with arguments that did not parse is
			 * replayed as one, for the model to hear why again (before:
			 * run with {}, and the replay left the recorded run) */
			if (json_get_str(c, "input_error"))
				out->calls[out->ncalls - 1].input_error = xstrdup(json_get_str(c, "input_error"));
		}
		jv_free(input);
		jv_free(c);
		if (rc < 0)
			break;
	}
	return rc;
}

static long usage_num(jv u, const char *a, const char *b)
{
	double v = json_get_num(u, a, -1);

	if (v < 0 && b)
		v = json_get_num(u, b, 0);
	return v < 0 ? 0 : (long)v;
}

int llm_response_from_json(struct llm_response *out, jv j)
{
	jv u = json_get(j, "usage");
	const char *s;
	int rc = 0;

	llm_response_init(out);
	if (jv_get_kind(j) != JV_KIND_OBJECT) {
		rc = forge_error("a response must be an object");
		goto out;
	}
	if ((s = json_get_str(j, "text"))) {
		free(out->text);
		out->text = xstrdup(s);
	}
	jv calls = json_get(j, "tool_calls");
	rc = calls_from_json(out, calls);
	jv_free(calls);
	if (rc < 0)
		goto out;
	s = json_get_str(j, "stop_reason");
	out->stop = out->ncalls ? LLM_STOP_TOOL_USE : LLM_STOP_END_TURN;
	if (s && llm_stop_parse(&out->stop, s) < 0) {
		rc = forge_error("unknown stop_reason '%s'", s);
		goto out;
	}
	out->stop_detail = llm_strdup_or_null(json_get_str(j, "stop_detail"));
	out->reasoning = llm_strdup_or_null(json_get_str(j, "reasoning"));
	out->usage.input_tokens = usage_num(u, "input_tokens", NULL);
	out->usage.output_tokens = usage_num(u, "output_tokens", NULL);
	out->usage.cache_read_tokens = usage_num(u, "cache_read_tokens", NULL);
	out->usage.cache_write_tokens = usage_num(u, "cache_write_tokens", NULL);
	out->model = llm_strdup_or_null(json_get_str(j, "model"));
	out->request_id = llm_strdup_or_null(json_get_str(j, "request_id"));
	jv rl = json_get(j, "rate_limit");
	if (jv_get_kind(rl) == JV_KIND_OBJECT) {
		jv_free(out->rate_limit);
		out->rate_limit = rl;
	} else {
		jv_free(rl);
	}
out:
	jv_free(u);
	jv_free(j);
	return rc;
}

/* ---- helpers ----------------------------------------------------------- */

char *llm_strdup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

void llm_usage_take(long *out, struct llm_response *r, jv u, const char *key)
{
	jv v = json_get(u, key);

	if (jv_get_kind(v) == JV_KIND_NUMBER) {
		double n = jv_number_value(v);

		if (n >= 0 && n <= (double)LLM_USAGE_MAX) {
			*out = (long)n;
			r->usage_seen = true;
		} else {
			r->usage_bad = true;
		}
	} else if (jv_get_kind(v) != JV_KIND_INVALID && jv_get_kind(v) != JV_KIND_NULL) {
		r->usage_bad = true;
	}
	jv_free(v);
}

const char *llm_jstr(jv v)
{
	return jv_get_kind(v) == JV_KIND_STRING ? jv_string_value(v) : NULL;
}

char *llm_header(const char *name, const char *value)
{
	struct buf b = BUF_INIT;

	buf_addf(&b, "%s: %s", name, value);
	return buf_detach(&b, NULL);
}

char *llm_url(const char *base, const char *path)
{
	struct buf b = BUF_INIT;
	size_t n = strlen(base);

	while (n > 0 && base[n - 1] == '/')
		n--;
	/* a base that already ends with the path's first part ("…/v1" for
	 * Anthropic's "/v1/messages", as OpenAI base URLs are written): not
	 * twice (POST /v1/v1/messages was a 404, "unknown model") */
	const char *seg_end = path[0] == '/' ? strchr(path + 1, '/') : NULL;
	if (seg_end) {
		size_t seg = (size_t)(seg_end - path);
		if (n >= seg && memcmp(base + n - seg, path, seg) == 0)
			path = seg_end;
	}
	buf_add(&b, base, n);
	buf_adds(&b, path);
	return buf_detach(&b, NULL);
}

int llm_parse_input(jv *out, const char *text, size_t len)
{
	size_t i = 0;

	while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r'))
		i++;
	if (i == len) {
		*out = jv_object();
		return 0;
	}
	jv v = json_parse(text, len);
	if (jv_get_kind(v) != JV_KIND_OBJECT) {
		char *msg = jv_is_valid(v) ? xstrdup("not an object") : json_invalid_msg(jv_copy(v));
		jv_free(v);
		forge_error("tool input is not a JSON object: %s", msg);
		free(msg);
		return -1;
	}
	*out = v;
	return 0;
}

void llm_wire_release(struct llm_wire *w)
{
	if (!w)
		return;
	free(w->url);
	for (size_t i = 0; i < sizeof(w->headers) / sizeof(*w->headers); i++)
		free(w->headers[i]);
	free(w->body);
	memset(w, 0, sizeof(*w));
}

void llm_fault_release(struct llm_fault *f)
{
	if (!f)
		return;
	free(f->type);
	free(f->message);
	f->type = f->message = NULL;
}

enum llm_error llm_fault_from_status(long status)
{
	switch (status) {
	case 401: case 403: return LLM_ERR_AUTH;
	case 402: return LLM_ERR_QUOTA;
	case 404: return LLM_ERR_CONFIG;   /* a body that names the model is LLM_ERR_MODEL */
	case 408: case 504: return LLM_ERR_TIMEOUT;
	case 413: return LLM_ERR_CONTEXT;
	case 429: return LLM_ERR_RATE_LIMIT;
	case 529: case 503: return LLM_ERR_OVERLOADED;
	default: return status >= 500 ? LLM_ERR_SERVER : LLM_ERR_BAD_REQUEST;
	}
}
