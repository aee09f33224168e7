/*
 * llm_openai.c - OpenAI Chat Completions (POST {base}/chat/completions) and
 * compatible servers: request building, response and SSE parsing, error
 * decoding (OpenAI's nested error, vLLM's flat one, Ollama's string).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/forge.h"
#include "core/json.h"
#include "llm/llm_internal.h"

/* ---- request ----------------------------------------------------------- */

static jv msg(const char *role)
{
	return json_set(jv_object(), "role", jv_string(role));
}

static jv assistant_msg(jv m)
{
	jv o = msg("assistant");
	const char *text = json_get_str(m, "content");
	jv calls = json_get(m, "tool_calls");
	bool has_calls = jv_get_kind(calls) == JV_KIND_ARRAY && jv_array_length(jv_copy(calls)) > 0;

	o = json_set(o, "content", text && (*text || !has_calls) ? jv_string(text) : jv_null());
	if (json_get_str(m, "reasoning"))   /* DeepSeek's thinking mode wants it back */
		o = json_set(o, "reasoning_content", jv_string(json_get_str(m, "reasoning")));
	if (has_calls) {
		jv out = jv_array();
		jv_array_foreach(calls, i, c) {
			jv fn = json_set(jv_object(), "name", json_get(c, "name"));
			jv input = json_get(c, "input");
			char *args = json_dumps(jv_get_kind(input) == JV_KIND_OBJECT ? input
						: (jv_free(input), jv_object()), false);
			fn = json_set(fn, "arguments", jv_string(args));
			free(args);
			jv tc = json_set(jv_object(), "id", json_get(c, "id"));
			tc = json_set(tc, "type", jv_string("function"));
			out = jv_array_append(out, json_set(tc, "function", fn));
			jv_free(c);
		}
		o = json_set(o, "tool_calls", out);
	}
	jv_free(calls);
	return o;
}

static jv tool_msg(jv m)
{
	jv o = json_set(msg("tool"), "tool_call_id", json_get(m, "tool_call_id"));
	const char *content = json_get_str(m, "content");

	/* OpenAI has no is_error flag: say it in the text */
	if (json_get_bool(m, "is_error", false)) {
		struct buf b = BUF_INIT;
		buf_addf(&b, "ERROR: %s", content ? content : "");
		o = json_set(o, "content", jv_string(b.buf));
		buf_release(&b);
	} else {
		o = json_set(o, "content", jv_string(content ? content : ""));
	}
	return o;
}

static jv convert_messages(const char *system, jv msgs)
{
	jv out = jv_array();

	if (system && *system)
		out = jv_array_append(out, json_set(msg("system"), "content", jv_string(system)));
	jv_array_foreach(msgs, i, m) {
		const char *role = json_get_str(m, "role");

		if (role && !strcmp(role, "assistant"))
			out = jv_array_append(out, assistant_msg(m));
		else if (role && !strcmp(role, "tool"))
			out = jv_array_append(out, tool_msg(m));
		else
			out = jv_array_append(out, json_set(msg("user"), "content", json_get(m, "content")));
		jv_free(m);
	}
	jv_free(msgs);
	return out;
}

static jv convert_tools(jv tools)
{
	jv out = jv_array();

	jv_array_foreach(tools, i, t) {
		jv fn = json_set(jv_object(), "name", json_get(t, "name"));
		jv schema = json_get(t, "input_schema");

		if (json_has(t, "description"))
			fn = json_set(fn, "description", json_get(t, "description"));
		fn = json_set(fn, "parameters", jv_get_kind(schema) == JV_KIND_OBJECT ? schema
			      : (jv_free(schema), json_set(jv_object(), "type", jv_string("object"))));
		out = jv_array_append(out, json_set(json_set(jv_object(), "type", jv_string("function")),
						    "function", fn));
		jv_free(t);
	}
	jv_free(tools);
	return out;
}

static jv tool_choice(const struct llm_request *req)
{
	switch (req->tool_choice) {
	case LLM_TOOL_ANY: return jv_string("required");
	case LLM_TOOL_NONE: return jv_string("none");
	case LLM_TOOL_FORCED:
		return json_set(json_set(jv_object(), "type", jv_string("function")), "function",
				json_set(jv_object(), "name", jv_string(req->tool_name ? req->tool_name : "")));
	default: return jv_string("auto");
	}
}

/* {"tools": …, "tool_choice": …} for the tools src (a non-empty array):
 * the part kept across turns (llm_part); variant is the tool choice, str
 * the forced tool's name. */
static jv tools_part(jv src, const char *str, unsigned variant)
{
	struct llm_request req = { .tool_choice = (enum llm_tool_choice)variant, .tool_name = str };

	return json_set(json_set(jv_object(), "tools", convert_tools(src)), "tool_choice", tool_choice(&req));
}

/* The members after the tools. */
static jv tail_members(const struct llm_request *req, unsigned flags)
{
	jv tail = json_set(jv_object(), flags & LLM_OPENAI_MAX_TOKENS ? "max_tokens" : "max_completion_tokens",
			   jv_number(req->max_tokens > 0 ? req->max_tokens : 4096));

	if (req->temperature >= 0)
		tail = json_set(tail, "temperature", jv_number(req->temperature));
	if (jv_get_kind(req->stop) == JV_KIND_ARRAY)
		tail = json_set(tail, "stop", jv_copy(req->stop));
	if (req->stream) {
		tail = json_set(tail, "stream", jv_true());
		tail = json_set(tail, "stream_options", json_set(jv_object(), "include_usage", jv_true()));
	}
	return tail;
}

/* The body's members in the order they have always been sent: model,
 * messages (the system prompt first), tools, tool_choice, the output
 * limit, temperature, stop, stream, stream_options; the tools from
 * parts. */
static char *body_text(size_t *len, struct llm_parts *parts, const char *model,
		       const struct llm_request *req, unsigned flags)
{
	struct buf b = BUF_INIT;

	buf_addch(&b, '{');
	llm_members_add(&b, json_set(json_set(jv_object(), "model", jv_string(model)), "messages",
				     convert_messages(req->system, jv_copy(req->messages))));
	if (jv_get_kind(req->tools) == JV_KIND_ARRAY && jv_array_length(jv_copy(req->tools)) > 0)
		llm_part_add(&b, parts ? &parts->tools : NULL, req->tools, (unsigned)req->tool_choice,
			     req->tool_choice == LLM_TOOL_FORCED ? req->tool_name : NULL, tools_part);
	llm_members_add(&b, tail_members(req, flags));
	buf_addch(&b, '}');
	return buf_detach(&b, len);
}

static int build(struct llm_wire *out, struct llm_parts *parts, const char *base_url, const char *key,
		 const char *model, const struct llm_request *req, unsigned flags)
{
	size_t h = 0;

	memset(out, 0, sizeof(*out));
	out->body = body_text(&out->body_len, parts, model, req, flags);
	out->url = llm_url(base_url, "/chat/completions");
	out->headers[h++] = xstrdup("content-type: application/json");
	out->headers[h++] = xstrdup(req->stream ? "accept: text/event-stream" : "accept: application/json");
	if (key) {
		struct buf b = BUF_INIT;
		buf_addf(&b, "Bearer %s", key);
		out->headers[h++] = llm_header("authorization", b.buf);
		buf_release(&b);
	}
	return 0;
}

unsigned llm_openai_flags(const char *base_url)
{
	static const char official[] = "api.openai.com";
	const char *host = strstr(base_url, "://");
	size_t n;

	host = host ? host + 3 : base_url;
	n = strcspn(host, "/?#");
	/* (userinfo before an '@' is not the host) */
	for (size_t i = n; i > 0; i--)
		if (host[i - 1] == '@') {
			host += i;
			n -= i;
			break;
		}
	n = strcspn(host, ":/?#") < n ? strcspn(host, ":/?#") : n;
	return n == sizeof(official) - 1 && !strncasecmp(host, official, n) ? 0 : LLM_OPENAI_MAX_TOKENS;
}

/* ---- response ---------------------------------------------------------- */

static enum llm_stop map_finish(const char *f, enum llm_stop dflt)
{
	if (!f)
		return dflt;
	if (!strcmp(f, "stop"))
		return LLM_STOP_END_TURN;
	if (!strcmp(f, "tool_calls") || !strcmp(f, "function_call"))
		return LLM_STOP_TOOL_USE;
	if (!strcmp(f, "length"))
		return LLM_STOP_MAX_TOKENS;
	if (!strcmp(f, "content_filter"))
		return LLM_STOP_REFUSAL;
	return LLM_STOP_END_TURN;
}

/* The stop of finish_reason f on r, unless a refusal set it; a
 * content-filter stop without a refusal's words says what stopped it. */
static void take_finish(struct llm_response *r, const char *f)
{
	if (r->stop != LLM_STOP_REFUSAL)      /* (a refusal's message said so already) */
		r->stop = map_finish(f, LLM_STOP_END_TURN);
	if (f && !strcmp(f, "content_filter") && !r->stop_detail)
		r->stop_detail = xstrdup("the provider's content filter stopped the answer "
					 "(finish_reason content_filter)");
}

static void take_usage(struct llm_response *r, jv u)
{
	jv pd;
	long prompt = 0, cached = 0, written = 0, completion = 0;

	if (jv_get_kind(u) != JV_KIND_OBJECT)
		return;
	/* (half a usage -- completion_tokens without prompt_tokens, seen in a
	 * raw SSE body -- is no figure: estimated from the sizes, as none is,
	 * rather than a prompt of 0 tokens) */
	if (!json_has(u, "prompt_tokens") || !json_has(u, "completion_tokens"))
		r->usage_bad = true;
	pd = json_get(u, "prompt_tokens_details");
	llm_usage_take(&prompt, r, u, "prompt_tokens");
	llm_usage_take(&completion, r, u, "completion_tokens");
	if (jv_get_kind(pd) == JV_KIND_OBJECT) {
		llm_usage_take(&cached, r, pd, "cached_tokens");
		llm_usage_take(&written, r, pd, "cache_write_tokens");
	}
	jv_free(pd);
	r->usage.input_tokens = prompt - cached - written > 0 ? prompt - cached - written : 0;
	r->usage.cache_read_tokens = cached;
	r->usage.cache_write_tokens = written;
	r->usage.output_tokens = completion;
}

static void take_header(struct llm_response *r, jv j)
{
	if (json_get_str(j, "model") && !r->model)
		r->model = xstrdup(json_get_str(j, "model"));
	if (json_get_str(j, "id") && !r->request_id)
		r->request_id = xstrdup(json_get_str(j, "id"));
}

static void set_refusal(struct llm_response *r, const char *text)
{
	struct buf b = BUF_INIT;

	if (r->stop_detail)
		buf_adds(&b, r->stop_detail);
	buf_adds(&b, text);
	free(r->stop_detail);
	r->stop_detail = buf_detach(&b, NULL);
	r->stop = LLM_STOP_REFUSAL;
}

static int take_calls(struct llm_response *out, jv calls)
{
	int rc = 0;

	jv_array_foreach(calls, i, c) {
		jv fn = json_get(c, "function");
		const char *args = json_get_str(fn, "arguments");
		jv input = jv_null();
		jv a = json_get(fn, "arguments");

		if (jv_get_kind(a) == JV_KIND_OBJECT) {         /* a lenient server */
			input = a;
			a = jv_null();
		} else if (llm_parse_input(&input, args ? args : "", args ? strlen(args) : 0) < 0) {
			/* the model's mistake, not the server's: it hears why */
			llm_response_add_bad_call(out, json_get_str(c, "id"), json_get_str(fn, "name"));
			jv_free(a);
			jv_free(fn);
			jv_free(c);
			continue;
		}
		jv_free(a);
		if (rc == 0)
			llm_response_add_call(out, json_get_str(c, "id"), json_get_str(fn, "name"), input);
		else
			jv_free(input);
		jv_free(fn);
		jv_free(c);
		if (rc < 0)
			break;
	}
	jv_free(calls);
	return rc;
}

static int parse(struct llm_response *out, const char *body, size_t len)
{
	jv j = json_parse(body, len);
	jv choices = json_get(j, "choices");
	jv c0 = jv_get_kind(choices) == JV_KIND_ARRAY ? jv_array_get(jv_copy(choices), 0) : jv_null();
	jv m = json_get(c0, "message");
	jv u = json_get(j, "usage");
	jv calls = json_get(m, "tool_calls");
	int rc = 0;

	/* an answer without a message is still billed for what its usage
	 * says (before: 0 tokens, as if the call had cost nothing) */
	take_header(out, j);
	take_usage(out, u);
	if (jv_get_kind(m) != JV_KIND_OBJECT) {
		rc = forge_error("the OpenAI response has no choices[0].message");
		goto out;
	}
	if (json_get_str(m, "content")) {
		free(out->text);
		out->text = xstrdup(json_get_str(m, "content"));
	}
	if (jv_get_kind(calls) == JV_KIND_ARRAY)
		rc = take_calls(out, jv_copy(calls));
	if (json_get_str(m, "reasoning_content")) {
		free(out->reasoning);
		out->reasoning = xstrdup(json_get_str(m, "reasoning_content"));
	}
	if (json_get_str(m, "refusal"))
		set_refusal(out, json_get_str(m, "refusal"));
	take_finish(out, json_get_str(c0, "finish_reason"));
	if (out->ncalls && out->stop == LLM_STOP_END_TURN)
		out->stop = LLM_STOP_TOOL_USE;        /* some servers say "stop" */
out:
	jv_free(calls);
	jv_free(u);
	jv_free(m);
	jv_free(c0);
	jv_free(choices);
	jv_free(j);
	return rc;
}

/* ---- streaming --------------------------------------------------------- */

/* Whether the arguments of the call b are a whole JSON object already. */
static bool whole_args(const struct llm_stream_block *b)
{
	jv j = json_parse(b->args.buf ? b->args.buf : "", b->args.len);
	bool whole = jv_get_kind(j) == JV_KIND_OBJECT;

	jv_free(j);
	return whole;
}

static int tool_delta(struct llm_stream *s, jv tc)
{
	jv fn = json_get(tc, "function");
	long index = (long)json_get_num(tc, "index", 0);
	const char *id = json_get_str(tc, "id");
	struct llm_stream_block *b = llm_stream_block(s, index, true);
	const char *args = json_get_str(fn, "arguments");
	const char *name = json_get_str(fn, "name");
	int rc = 0;

	/* Ollama sends each parallel call whole, every one at index 0 (or
	 * without an index): another id there is another call; and so is,
	 * from a server that sends no ids, a name after a call whose
	 * arguments are whole (a name comes with a call's first delta) */
	if ((id && b->id && strcmp(id, b->id)) ||
	    (!id && !b->id && name && b->name && whole_args(b)))
		b = llm_stream_block_add(s, index);
	b->is_tool = true;
	if (id && !b->id)
		b->id = xstrdup(id);
	if (name && !b->name) {
		b->name = xstrdup(name);
	} else if (name && strcmp(name, b->name)) {
		/* the name in pieces, joined as the official SDKs join every
		 * string of a delta (before: cut to its first piece); a server
		 * that repeats the whole name in each delta says it once */
		size_t n = strlen(b->name), m = strlen(name);
		b->name = xrealloc(b->name, n + m + 1);
		memcpy(b->name + n, name, m + 1);
	}
	if (args)
		rc = llm_stream_add(&b->args, args, strlen(args));
	jv_free(fn);
	return rc;
}

static int choice_delta(struct llm_stream *s, jv c)
{
	jv d = json_get(c, "delta");
	jv calls = json_get(d, "tool_calls");
	const char *t;
	int rc = 0;

	if ((t = json_get_str(d, "content")))
		rc = llm_stream_text(s, t, strlen(t));
	if ((t = json_get_str(d, "reasoning_content"))) {
		rc |= llm_stream_add(&s->reasoning, t, strlen(t));
		s->reasoning_seen = true;
	}
	if ((t = json_get_str(d, "refusal")))
		set_refusal(s->resp, t);
	if (jv_get_kind(calls) == JV_KIND_ARRAY) {
		llm_stream_text_end(s);	/* the text before a tool call is whole */
		jv_array_foreach(calls, i, tc) {
			rc |= tool_delta(s, tc);
			jv_free(tc);
		}
	}
	if (json_get_str(c, "finish_reason")) {
		llm_stream_text_end(s);
		s->finished = true;
	}
	if ((t = json_get_str(c, "finish_reason")) && s->resp->stop != LLM_STOP_REFUSAL)
		take_finish(s->resp, t);
	jv_free(calls);
	jv_free(d);
	return rc < 0 ? -1 : 0;
}

static void decode(struct llm_fault *out, long status, jv j);

static bool blank(const char *data, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (data[i] != ' ' && data[i] != '\t' && data[i] != '\r' && data[i] != '\n')
			return false;
	return true;
}

static int event(struct llm_stream *s, const char *name, const char *data, size_t len)
{
	jv ev, choices, u;
	int rc = 0;

	(void)name;
	if (len >= 6 && !memcmp(data, "[DONE]", 6)) {
		s->done = true;
		return 0;
	}
	if (blank(data, len))
		return 0;   /* a keep-alive `data: ` line */
	ev = json_parse(data, len);
	if (jv_get_kind(ev) != JV_KIND_OBJECT) {
		jv_free(ev);
		return forge_error("unparseable OpenAI stream chunk");
	}
	if (json_has(ev, "error")) {
		llm_fault_release(&s->fault);
		decode(&s->fault, 500, ev);
		s->failed = true;
		jv_free(ev);
		return 0;
	}
	take_header(s->resp, ev);
	choices = json_get(ev, "choices");
	if (jv_get_kind(choices) == JV_KIND_ARRAY) {
		jv_array_foreach(choices, i, c) {
			if (json_get_num(c, "index", 0) == 0 && choice_delta(s, c) < 0)
				rc = -1;
			jv_free(c);
		}
	}
	u = json_get(ev, "usage");
	take_usage(s->resp, u);
	jv_free(u);
	jv_free(choices);
	jv_free(ev);
	return rc;
}

/* ---- errors ------------------------------------------------------------ */

static bool has(const char *s, const char *needle)
{
	return s && strstr(s, needle);
}

static enum llm_error classify(long status, const char *type, const char *code, const char *msg)
{
	if (has(code, "invalid_api_key") || has(type, "authentication") || status == 401 || status == 403)
		return LLM_ERR_AUTH;
	if (has(code, "insufficient_quota") || has(type, "insufficient_quota"))
		return LLM_ERR_QUOTA;
	/* (llama.cpp's server: type exceed_context_size_error, "the request
	 * exceeds the available context size", with code 400, or 500 from
	 * builds before it had a type) */
	if (has(code, "context_length_exceeded") || has(type, "exceed_context_size") ||
	    has(msg, "maximum context length") || has(msg, "context length") ||
	    has(msg, "context window") || has(msg, "available context size"))
		return LLM_ERR_CONTEXT;
	/* (only an error about the model: any other 404 -- "404 page not
	 * found" from Ollama without /v1 -- is a wrong URL) */
	if (has(code, "model_not_found") ||
	    (has(msg, "model") && (has(msg, "not found") || has(msg, "does not exist"))))
		return LLM_ERR_MODEL;
	/* (an error chunk mid-stream, decoded as a 500, that says the request
	 * is wrong: asking again will not help) */
	if (status >= 500 && has(type, "invalid_request_error"))
		return LLM_ERR_BAD_REQUEST;
	return llm_fault_from_status(status);
}

static void decode(struct llm_fault *out, long status, jv j)
{
	jv e = json_get(j, "error");
	jv code;
	char *type = NULL;             /* the error's type when it has a code too */

	memset(out, 0, sizeof(*out));
	if (jv_get_kind(e) == JV_KIND_STRING) {          /* Ollama native */
		out->message = xstrdup(jv_string_value(e));
	} else {
		jv src = jv_get_kind(e) == JV_KIND_OBJECT ? jv_copy(e) : jv_copy(j);   /* vLLM flat */
		out->message = llm_strdup_or_null(json_get_str(src, "message"));
		code = json_get(src, "code");
		if (jv_get_kind(code) == JV_KIND_STRING)
			out->type = xstrdup(jv_string_value(code));
		else if (json_get_str(src, "type"))
			out->type = xstrdup(json_get_str(src, "type"));
		type = llm_strdup_or_null(json_get_str(src, "type"));
		jv_free(code);
		jv_free(src);
	}
	out->kind = classify(status, type ? type : out->type, out->type, out->message);
	free(type);
	jv_free(e);
}

static void fault(struct llm_fault *out, long status, const char *body, size_t len)
{
	jv j = len ? json_parse(body, len) : jv_null();

	if (jv_get_kind(j) != JV_KIND_OBJECT) {
		jv_free(j);
		j = jv_null();
	}
	decode(out, status, j);
	jv_free(j);
}

const struct llm_provider llm_openai = {
	.name = "openai",
	.default_model = "gpt-4o-mini",
	.default_base_url = "https://api.openai.com/v1",
	.key_env = "OPENAI_API_KEY",
	.base_url_env = "OPENAI_BASE_URL",
	.build = build,
	.parse = parse,
	.event = event,
	.fault = fault,
};
