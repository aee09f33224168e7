/*
 * llm_anthropic.c - the Anthropic Messages API (POST {base}/v1/messages):
 * request building, response and SSE parsing, error decoding.
 */
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "core/json.h"
#include "llm/llm_internal.h"

/*
 * The API version we speak, sent as `anthropic-version`, with the key in
 * `x-api-key` (llm-wire.md).  The current official SDKs send a newer date
 * (2026-10-21) and `Authorization: Bearer`; the API still accepts this
 * pair, and every response shape parsed below was checked against it.
 * Change the date only together with the fixtures in tests/fixtures/llm.
 * Streams come back as `text/event-stream; charset=utf-8` (any parameters
 * and case are accepted: llm_is_event_stream()).
 */
#define LLM_ANTHROPIC_VERSION "2023-06-01"

/* ---- request ----------------------------------------------------------- */

/* Whether text has anything but white space: the API refuses a text block
 * without ("text content blocks must contain non-whitespace text"). */
static bool visible_text(const char *text)
{
	for (; text && *text; text++)
		if (!strchr(" \t\r\n\v\f", *text))
			return true;
	return false;
}

static jv assistant_blocks(jv m)
{
	jv blocks = jv_array();
	const char *text = json_get_str(m, "content");
	jv calls = json_get(m, "tool_calls");

	if (visible_text(text))
		blocks = jv_array_append(blocks, json_set(json_set(jv_object(), "type", jv_string("text")),
							  "text", jv_string(text)));
	if (jv_get_kind(calls) == JV_KIND_ARRAY) {
		jv_array_foreach(calls, i, c) {
			jv b = json_set(jv_object(), "type", jv_string("tool_use"));
			jv input = json_get(c, "input");

			b = json_set(b, "id", json_get(c, "id"));
			b = json_set(b, "name", json_get(c, "name"));
			b = json_set(b, "input", jv_get_kind(input) == JV_KIND_OBJECT ? input
					: (jv_free(input), jv_object()));
			blocks = jv_array_append(blocks, b);
			jv_free(c);
		}
	}
	jv_free(calls);
	return blocks;
}

/* Whether an assistant message m (borrowed) has neither text nor a tool call. */
static bool empty_answer(jv m)
{
	jv blocks = assistant_blocks(m);
	bool empty = jv_array_length(blocks) == 0;

	return empty;
}

static jv tool_result_block(jv m)
{
	jv b = json_set(jv_object(), "type", jv_string("tool_result"));

	b = json_set(b, "tool_use_id", json_get(m, "tool_call_id"));
	b = json_set(b, "content", json_get(m, "content"));
	if (json_get_bool(m, "is_error", false))
		b = json_set(b, "is_error", jv_true());
	return b;
}

/* Points where the conversion of messages into turns starts afresh
 * (struct llm_turns). */
struct turn_points {
	struct llm_turn_mark *p;
	size_t n, cap;
};

static void point_add(struct turn_points *pts, size_t at, size_t turns)
{
	if (pts->n == pts->cap) {
		pts->cap = pts->cap ? pts->cap * 2 : 16;
		pts->p = xrealloc(pts->p, pts->cap * sizeof(*pts->p));
	}
	pts->p[pts->n++] = (struct llm_turn_mark){ at, turns, 0 };
}

/* Normalised messages → Anthropic turns: consecutive tool results (and a
 * user text right after them) share one user turn.  From message `start`
 * on, no tool results pending there (a point of pts).  With pts, each
 * point after a message where none are pending is added to it, its turns
 * counted from base.  Consumes msgs. */
static jv convert_messages(jv msgs, int start, struct turn_points *pts, size_t base)
{
	jv out = jv_array();
	jv pending = jv_null();   /* content blocks of an open user turn */

	jv_array_foreach(msgs, i, m) {
		const char *role = json_get_str(m, "role");

		if (i < start) {
			jv_free(m);
			continue;
		}

		if (role && !strcmp(role, "tool")) {
			if (jv_get_kind(pending) != JV_KIND_ARRAY)
				pending = jv_array();
			pending = jv_array_append(pending, tool_result_block(m));
		} else if (role && !strcmp(role, "user") && jv_get_kind(pending) == JV_KIND_ARRAY) {
			pending = jv_array_append(pending, json_set(json_set(jv_object(), "type",
				jv_string("text")), "text", json_get(m, "content")));
		} else if (role && !strcmp(role, "assistant") && empty_answer(m)) {
			/* The API answers with no content at times (stop_reason
			 * end_turn, "particularly after tool results"), and refuses
			 * it sent back: "all messages must have non-empty content
			 * except for the optional final assistant message".  Left
			 * out; the user turns around it are taken as one. */
		} else {
			if (jv_get_kind(pending) == JV_KIND_ARRAY)
				out = jv_array_append(out, json_set(json_set(jv_object(), "role",
					jv_string("user")), "content", pending));
			pending = jv_null();
			if (role && !strcmp(role, "assistant"))
				out = jv_array_append(out, json_set(json_set(jv_object(), "role",
					jv_string("assistant")), "content", assistant_blocks(m)));
			else
				out = jv_array_append(out, json_set(json_set(jv_object(), "role",
					jv_string("user")), "content", json_get(m, "content")));
		}
		if (pts && jv_get_kind(pending) != JV_KIND_ARRAY)
			point_add(pts, (size_t)i + 1, base + (size_t)jv_array_length(jv_copy(out)));
		jv_free(m);
	}
	if (jv_get_kind(pending) == JV_KIND_ARRAY)
		out = jv_array_append(out, json_set(json_set(jv_object(), "role", jv_string("user")),
						    "content", pending));
	else
		jv_free(pending);
	jv_free(msgs);
	return out;
}

static jv convert_tools(jv tools)
{
	jv out = jv_array();

	jv_array_foreach(tools, i, t) {
		jv o = json_set(jv_object(), "name", json_get(t, "name"));
		jv schema = json_get(t, "input_schema");

		if (json_has(t, "description"))
			o = json_set(o, "description", json_get(t, "description"));
		o = json_set(o, "input_schema", jv_get_kind(schema) == JV_KIND_OBJECT ? schema
			     : (jv_free(schema), json_set(jv_object(), "type", jv_string("object"))));
		out = jv_array_append(out, o);
		jv_free(t);
	}
	jv_free(tools);
	return out;
}

static jv tool_choice(const struct llm_request *req)
{
	switch (req->tool_choice) {
	case LLM_TOOL_ANY: return json_set(jv_object(), "type", jv_string("any"));
	case LLM_TOOL_NONE: return json_set(jv_object(), "type", jv_string("none"));
	case LLM_TOOL_FORCED:
		return json_set(json_set(jv_object(), "type", jv_string("tool")), "name",
				jv_string(req->tool_name ? req->tool_name : ""));
	default: return json_set(jv_object(), "type", jv_string("auto"));
	}
}

/* ---- prompt caching ------------------------------------------------------
 *
 * A request that asks for it (llm_request.cache_prefix, on a client with
 * LLM_PROMPT_CACHE: llm.prompt_cache) marks with a cache_control
 * breakpoint, {"type":"ephemeral"} (kept 5 minutes), the end of each part
 * of the prefix an agent sends again every turn: the last tool
 * definition, the system prompt (then a text block array), the last
 * content block of the conversation -- what the next turn reads back --
 * and the last block of the user turn before the last answer, where the
 * previous request put its own: the API looks for a hit only about 20
 * blocks back from a breakpoint, fewer than an answer of many parallel
 * calls and their results add.  The cache prefix runs tools, system,
 * messages; the API takes at most 4 breakpoints (LLM_CACHE_BREAKPOINTS_MAX,
 * whatever the tools: only the last is marked), and a part shorter than
 * the model's minimum (1024 to 4096 tokens) is simply not cached.  Written
 * at 1.25x the input price, read at 0.1x (cache_creation_input_tokens,
 * cache_read_input_tokens: take_usage).
 */

static jv ephemeral(void)
{
	return json_set(jv_object(), "type", jv_string("ephemeral"));
}

/* arr (an array) with a breakpoint on its last element, counted in *marks
 * while they are fewer than the API takes.  Consumes arr. */
static jv mark_last(jv arr, int *marks)
{
	int n = jv_array_length(jv_copy(arr));
	jv last;

	if (n == 0 || *marks >= LLM_CACHE_BREAKPOINTS_MAX)
		return arr;
	last = jv_array_get(jv_copy(arr), n - 1);
	if (jv_get_kind(last) != JV_KIND_OBJECT) {
		jv_free(last);
		return arr;
	}
	(*marks)++;
	return jv_array_set(arr, n - 1, json_set(last, "cache_control", ephemeral()));
}

/* An Anthropic turn with a breakpoint on its last content block; a string
 * content becomes one text block (unmarked when it is white space only:
 * the API refuses such a block).  Consumes turn. */
static jv mark_turn(jv turn, int *marks)
{
	jv content = json_get(turn, "content");

	if (jv_get_kind(content) == JV_KIND_STRING) {
		if (!visible_text(jv_string_value(content))) {
			jv_free(content);
			return turn;
		}
		content = jv_array_append(jv_array(), json_set(json_set(jv_object(), "type",
						jv_string("text")), "text", content));
	}
	if (jv_get_kind(content) != JV_KIND_ARRAY) {
		jv_free(content);
		return turn;
	}
	return json_set(turn, "content", mark_last(content, marks));
}

/* msgs (Anthropic turns) with the breakpoints of the conversation: on its
 * last turn and on the user turn before the last answer (where the
 * previous request put its own), counted in *marks.  Consumes msgs. */
static jv mark_messages(jv msgs, int *marks)
{
	int n = jv_get_kind(msgs) == JV_KIND_ARRAY ? jv_array_length(jv_copy(msgs)) : 0;
	int prev = n - 2;

	if (n == 0)
		return msgs;
	while (prev >= 0) {
		jv m = jv_array_get(jv_copy(msgs), prev);
		bool user = json_get_str(m, "role") && !strcmp(json_get_str(m, "role"), "user");
		jv_free(m);
		if (user)
			break;
		prev--;
	}
	msgs = jv_array_set(msgs, n - 1, mark_turn(jv_array_get(jv_copy(msgs), n - 1), marks));
	if (prev >= 0)
		msgs = jv_array_set(msgs, prev, mark_turn(jv_array_get(jv_copy(msgs), prev), marks));
	return msgs;
}

/* The variants of the constant parts (llm_part): whether they carry the
 * prompt cache's breakpoint, and the tool choice. */
#define PART_MARKED 1u
#define PART_CHOICE_SHIFT 1

/* {"system": S}, S a marked text block array when PART_MARKED.  The
 * system prompt is str; src is null. */
static jv system_part(jv src, const char *str, unsigned variant)
{
	jv text = jv_string(str);
	int marks = 0;

	jv_free(src);
	if (variant & PART_MARKED)
		text = mark_last(jv_array_append(jv_array(), json_set(json_set(jv_object(), "type",
			jv_string("text")), "text", text)), &marks);
	return json_set(jv_object(), "system", text);
}

/* {"tools": …, "tool_choice": …} for the tools src (a non-empty array);
 * str: the forced tool's name. */
static jv tools_part(jv src, const char *str, unsigned variant)
{
	struct llm_request req = { .tool_choice = (enum llm_tool_choice)(variant >> PART_CHOICE_SHIFT),
				   .tool_name = str };
	jv tools = convert_tools(src);
	int marks = 0;

	if (variant & PART_MARKED)
		tools = mark_last(tools, &marks);
	return json_set(json_set(jv_object(), "tools", tools), "tool_choice", tool_choice(&req));
}

/* The members after the conversation and the tools. */
static jv tail_members(const struct llm_request *req)
{
	jv tail = jv_object();

	if (req->temperature >= 0)
		tail = json_set(tail, "temperature", jv_number(req->temperature));
	if (jv_get_kind(req->stop) == JV_KIND_ARRAY)
		tail = json_set(tail, "stop_sequences", jv_copy(req->stop));
	if (req->stream)
		tail = json_set(tail, "stream", jv_true());
	return tail;
}

/* How many leading messages of msgs (an array, borrowed) are those t
 * holds. */
static size_t turns_same(const struct llm_turns *t, jv msgs)
{
	int n = jv_array_length(jv_copy(msgs)), k = 0;

	if (!t->held)
		return 0;
	n = n < jv_array_length(jv_copy(t->msgs)) ? n : jv_array_length(jv_copy(t->msgs));
	while (k < n && jv_identical(jv_array_get(jv_copy(msgs), k), jv_array_get(jv_copy(t->msgs), k)))
		k++;
	return (size_t)k;
}

/* The index of the turn of msgs (Anthropic turns, borrowed) that
 * mark_messages() marks first: the user turn before the last answer, else
 * the last; -1 when that is no turn of msgs (the user turn before is
 * earlier, or there are none). */
static int first_marked(jv msgs, bool whole)
{
	int n = jv_array_length(jv_copy(msgs));

	for (int i = n - 2; i >= 0; i--) {
		jv m = jv_array_get(jv_copy(msgs), i);
		bool user = json_get_str(m, "role") && !strcmp(json_get_str(m, "role"), "user");

		jv_free(m);
		if (user)
			return i;
	}
	return whole && n > 0 ? n - 1 : -1;
}

/*
 * Append the member "messages": the turns of msgs (normalised messages,
 * an array, borrowed) as json_dumps() writes them, marked when `marked`
 * (mark_messages(), counted in *marks), the turns before the last point
 * of t whose messages are the very ones t holds from t's texts; t keeps
 * msgs' texts now, up to the first turn marked.
 */
static void add_turns(struct buf *b, struct llm_turns *t, jv msgs, bool marked, int *marks)
{
	struct turn_points pts = { 0 };
	size_t same = turns_same(t, msgs), c = 0, start = 0, base = 0, prefix = 0, kept;
	jv turns;
	int nt, cut;

	while (c < t->nmarks && t->marks[c].at <= same)
		c++;
	if (c > 0) {
		start = t->marks[c - 1].at;
		base = t->marks[c - 1].turns;
		prefix = t->marks[c - 1].len;
	}
	turns = convert_messages(jv_copy(msgs), (int)start, &pts, base);
	nt = jv_array_length(jv_copy(turns));
	cut = marked ? first_marked(turns, start == 0) : nt;
	if (cut < 0) {
		/* a mark falls on a turn kept: all made again */
		jv_free(turns);
		pts.n = 0;
		c = start = base = prefix = 0;
		turns = convert_messages(jv_copy(msgs), 0, &pts, 0);
		nt = jv_array_length(jv_copy(turns));
		cut = first_marked(turns, true);
		if (cut < 0)
			cut = 0;
	}
	if (marked)
		turns = mark_messages(turns, marks);
	if (b->len && b->buf[b->len - 1] != '{')
		buf_addch(b, ',');
	buf_adds(b, "\"messages\":[");
	buf_truncate(&t->text, prefix);
	buf_add(b, t->text.buf ? t->text.buf : "", prefix);
	kept = base;
	for (int i = 0; i < nt; i++) {
		char *text = json_dumps(jv_array_get(jv_copy(turns), i), false);

		if (base + (size_t)i > 0)
			buf_addch(b, ',');
		buf_adds(b, text);
		if (i < cut) {
			if (base + (size_t)i > 0)
				buf_addch(&t->text, ',');
			buf_adds(&t->text, text);
			kept++;
			/* (a point right after this turn ends here) */
			for (size_t j = 0; j < pts.n; j++)
				if (pts.p[j].turns == kept)
					pts.p[j].len = t->text.len;
		}
		free(text);
	}
	buf_addch(b, ']');
	jv_free(turns);
	/* the points kept: t's up to start, then the new ones within the kept turns */
	t->nmarks = c;
	for (size_t j = 0; j < pts.n; j++) {
		if (pts.p[j].turns > kept)
			break;
		if (pts.p[j].turns == base)
			pts.p[j].len = prefix;
		if (t->nmarks == t->cap) {
			t->cap = t->cap ? t->cap * 2 : 16;
			t->marks = xrealloc(t->marks, t->cap * sizeof(*t->marks));
		}
		t->marks[t->nmarks++] = pts.p[j];
	}
	free(pts.p);
	if (t->held)
		jv_free(t->msgs);
	t->msgs = jv_copy(msgs);
	t->held = true;
}

/*
 * The body's members in the order the API has always been sent them:
 * model, max_tokens, system, messages, tools, tool_choice, temperature,
 * stop_sequences, stream.  The system prompt and the tools come from
 * parts (kept serialised across turns).  With the prompt cache the tools'
 * breakpoint comes first, then the system's, then the conversation's
 * (the API takes LLM_CACHE_BREAKPOINTS_MAX: these make 4 at most).
 */
static char *body_text(size_t *len, struct llm_parts *parts, const char *model,
		       const struct llm_request *req, unsigned flags)
{
	struct buf b = BUF_INIT;
	bool marked = req->cache_prefix && (flags & LLM_PROMPT_CACHE);
	bool tools = jv_get_kind(req->tools) == JV_KIND_ARRAY && jv_array_length(jv_copy(req->tools)) > 0;
	bool system = req->system && *req->system;
	unsigned variant = marked ? PART_MARKED : 0;
	int marks = (tools ? 1 : 0) + (system ? 1 : 0);

	buf_addch(&b, '{');
	llm_members_add(&b, json_set(json_set(jv_object(), "model", jv_string(model)), "max_tokens",
				     jv_number(req->max_tokens > 0 ? req->max_tokens : 4096)));
	if (system)
		llm_part_add(&b, parts ? &parts->system : NULL, jv_null(), variant, req->system, system_part);
	if (parts && jv_get_kind(req->messages) == JV_KIND_ARRAY) {
		add_turns(&b, &parts->turns, req->messages, marked, &marks);
	} else {
		jv msgs = convert_messages(jv_copy(req->messages), 0, NULL, 0);

		if (marked)
			msgs = mark_messages(msgs, &marks);
		llm_members_add(&b, json_set(jv_object(), "messages", msgs));
	}
	if (tools)
		llm_part_add(&b, parts ? &parts->tools : NULL, req->tools,
			     variant | (unsigned)req->tool_choice << PART_CHOICE_SHIFT,
			     req->tool_choice == LLM_TOOL_FORCED ? req->tool_name : NULL, tools_part);
	llm_members_add(&b, tail_members(req));
	buf_addch(&b, '}');
	return buf_detach(&b, len);
}

static int build(struct llm_wire *out, struct llm_parts *parts, const char *base_url, const char *key,
		 const char *model, const struct llm_request *req, unsigned flags)
{
	size_t h = 0;

	memset(out, 0, sizeof(*out));
	out->body = body_text(&out->body_len, parts, model, req, flags);
	out->url = llm_url(base_url, "/v1/messages");
	out->headers[h++] = xstrdup("content-type: application/json");
	out->headers[h++] = xstrdup("anthropic-version: " LLM_ANTHROPIC_VERSION);
	out->headers[h++] = xstrdup(req->stream ? "accept: text/event-stream" : "accept: application/json");
	if (key)
		out->headers[h++] = llm_header("x-api-key", key);
	return 0;
}

/* ---- response ---------------------------------------------------------- */

static enum llm_stop map_stop(const char *s)
{
	enum llm_stop st = LLM_STOP_END_TURN;

	/* (model_context_window_exceeded is its own: the window, not
	 * max_tokens, cut the answer) */
	if (!s)
		return st;
	if (llm_stop_parse(&st, s) < 0)
		return LLM_STOP_END_TURN;
	return st;
}

/* A whole answer's usage without input_tokens (a proxy's message_delta
 * with output_tokens only) is no figure: estimated from the sizes, as
 * none is, rather than priced as a prompt of 0 tokens. */
static void usage_whole(struct llm_response *r)
{
	if (r->usage_seen && !r->input_seen)
		r->usage_bad = true;
}

/* usage fields present in u overwrite r's (message_delta usage is cumulative). */
static void take_usage(struct llm_response *r, jv u)
{
	if (jv_get_kind(u) != JV_KIND_OBJECT)
		return;
	if (json_has(u, "input_tokens"))
		r->input_seen = true;
	llm_usage_take(&r->usage.input_tokens, r, u, "input_tokens");
	llm_usage_take(&r->usage.output_tokens, r, u, "output_tokens");
	llm_usage_take(&r->usage.cache_read_tokens, r, u, "cache_read_input_tokens");
	llm_usage_take(&r->usage.cache_write_tokens, r, u, "cache_creation_input_tokens");
}

static void take_stop(struct llm_response *r, jv obj)
{
	const char *reason = json_get_str(obj, "stop_reason");
	jv details = json_get(obj, "stop_details");
	const char *detail = json_get_str(details, "explanation");

	if (reason)
		r->stop = map_stop(reason);
	if (!detail)
		detail = json_get_str(obj, "stop_sequence");
	if (detail) {
		free(r->stop_detail);
		r->stop_detail = xstrdup(detail);
	}
	jv_free(details);
}

static void take_header(struct llm_response *r, jv msg)
{
	if (json_get_str(msg, "model")) {
		free(r->model);
		r->model = xstrdup(json_get_str(msg, "model"));
	}
	if (json_get_str(msg, "id") && !r->request_id)
		r->request_id = xstrdup(json_get_str(msg, "id"));
}

/*
 * A tool_use block's input as the call's input, into *out.  The API sends
 * an object; a JSON text in a string (some proxies) is read as the
 * arguments OpenAI sends; a missing input is {}.  Anything else fails with
 * llm_parse_input's message ("tool input is not a JSON object: ..."), as
 * OpenAI's arguments do, for the call to be sent back with it rather than
 * run with {} (before: {}, and the model heard "path is missing" about a
 * call that had a path).  Consumes input.
 */
static int tool_input(jv *out, jv input)
{
	int rc = 0;

	switch (jv_get_kind(input)) {
	case JV_KIND_OBJECT:
		*out = input;
		return 0;
	case JV_KIND_INVALID: case JV_KIND_NULL:
		*out = jv_object();
		break;
	case JV_KIND_STRING:
		rc = llm_parse_input(out, jv_string_value(input), (size_t)jv_string_length_bytes(jv_copy(input)));
		break;
	default:
		rc = forge_error("tool input is not a JSON object: it is %s", jv_kind_name(jv_get_kind(input)));
		break;
	}
	jv_free(input);
	return rc;
}

static int parse(struct llm_response *out, const char *body, size_t len)
{
	jv j = json_parse(body, len);
	jv content, u;
	struct buf text = BUF_INIT;
	int rc = 0;

	if (jv_get_kind(j) != JV_KIND_OBJECT) {
		jv_free(j);
		return forge_error("the Anthropic response is not a JSON object");
	}
	take_header(out, j);
	take_stop(out, j);
	u = json_get(j, "usage");
	take_usage(out, u);
	usage_whole(out);
	jv_free(u);
	content = json_get(j, "content");
	if (jv_get_kind(content) == JV_KIND_ARRAY) {
		jv_array_foreach(content, i, b) {
			const char *type = json_get_str(b, "type");

			if (type && !strcmp(type, "text") && json_get_str(b, "text")) {
				buf_adds(&text, json_get_str(b, "text"));
			} else if (type && !strcmp(type, "tool_use")) {
				jv input;
				if (tool_input(&input, json_get(b, "input")) < 0)   /* the model hears why */
					llm_response_add_bad_call(out, json_get_str(b, "id"), json_get_str(b, "name"));
				else
					llm_response_add_call(out, json_get_str(b, "id"), json_get_str(b, "name"), input);
			}
			jv_free(b);
		}
	} else {
		rc = forge_error("the Anthropic response has no content");
	}
	jv_free(content);
	jv_free(j);
	free(out->text);
	out->text = buf_detach(&text, NULL);
	return rc;
}

/* ---- streaming --------------------------------------------------------- */

/*
 * The input a tool_use block starts with.  The API starts each with {} and
 * sends the input as input_json_delta events; some gateways send the whole
 * input here and no delta.  The official SDKs keep that input unless
 * non-empty deltas follow (they then build it from the deltas alone), and
 * so does this: its text goes to b->args, marked so that a first delta
 * replaces it (before: dropped, the call ran with {}).  A string is taken as the JSON
 * text it holds, anything else as its JSON, for llm_stream_finish() to
 * parse: a non-object is then sent back to the model as the tool's error.
 * Consumes input.
 */
static int start_input(struct llm_stream_block *b, jv input)
{
	jv_kind kind = jv_get_kind(input);
	char *text = NULL;
	int rc = 0;

	if (kind == JV_KIND_INVALID || kind == JV_KIND_NULL ||
	    (kind == JV_KIND_OBJECT && jv_object_length(jv_copy(input)) == 0)) {
		jv_free(input);
		return 0;
	}
	buf_reset(&b->args);
	b->args_from_start = true;
	if (kind == JV_KIND_STRING) {   /* (its bytes: a \u0000 in it stays for the parse to refuse) */
		rc = llm_stream_add(&b->args, jv_string_value(input),
				    (size_t)jv_string_length_bytes(jv_copy(input)));
	} else {
		text = json_dumps(jv_copy(input), false);
		rc = llm_stream_add(&b->args, text, strlen(text));
	}
	free(text);
	jv_free(input);
	return rc;
}

static int block_start(struct llm_stream *s, jv ev)
{
	jv cb = json_get(ev, "content_block");
	const char *type = json_get_str(cb, "type");
	struct llm_stream_block *b = llm_stream_block(s, (long)json_get_num(ev, "index", 0), true);
	int rc = 0;

	if (type && !strcmp(type, "tool_use")) {
		llm_stream_text_end(s);
		b->is_tool = true;
		b->id = llm_strdup_or_null(json_get_str(cb, "id"));
		b->name = llm_strdup_or_null(json_get_str(cb, "name"));
		rc = start_input(b, json_get(cb, "input"));
	} else if (type && !strcmp(type, "text") && json_get_str(cb, "text")) {
		const char *t = json_get_str(cb, "text");
		rc = llm_stream_text(s, t, strlen(t));
	}
	jv_free(cb);
	return rc;
}

static int block_delta(struct llm_stream *s, jv ev)
{
	jv d = json_get(ev, "delta");
	const char *type = json_get_str(d, "type");
	const char *t;
	int rc = 0;

	if (type && !strcmp(type, "text_delta") && (t = json_get_str(d, "text"))) {
		rc = llm_stream_text(s, t, strlen(t));
	} else if (type && !strcmp(type, "input_json_delta") && (t = json_get_str(d, "partial_json"))) {
		struct llm_stream_block *b = llm_stream_block(s, (long)json_get_num(ev, "index", 0), true);
		b->is_tool = true;
		/* deltas build the input whole (start_input); an empty one, as
		 * the API sends first, leaves it (as the SDKs do) */
		if (b->args_from_start && *t) {
			buf_reset(&b->args);
			b->args_from_start = false;
		}
		rc = llm_stream_add(&b->args, t, strlen(t));
	}
	jv_free(d);
	return rc;
}

static void stream_fault(struct llm_stream *s, jv ev);

/* The events an answer is made of (as the official SDKs read them);
 * others -- ping, and any the API adds later -- are skipped unparsed
 * (llm-wire.md §0). */
static const char *const known_events[] = { "message_start", "content_block_start",
	"content_block_delta", "content_block_stop", "message_delta", "message_stop", "error" };

static bool known_event(const char *name)
{
	for (size_t i = 0; i < sizeof(known_events) / sizeof(*known_events); i++)
		if (!strcmp(name, known_events[i]))
			return true;
	return false;
}

static void message_delta(struct llm_stream *s, jv ev)
{
	jv sub = json_get(ev, "delta");
	bool stop = json_get_str(sub, "stop_reason") != NULL;

	take_stop(s->resp, sub);
	jv_free(sub);
	sub = json_get(ev, "usage");
	take_usage(s->resp, sub);
	jv_free(sub);
	/* a stop_reason ends the answer: a body that ends cleanly after it
	 * is whole without message_stop, as the SDKs take it */
	if (stop) {
		llm_stream_text_end(s);
		usage_whole(s->resp);
		s->finished = true;
	}
}

/* One event.  name: the SSE event name; "message" or NULL when the block
 * had none (a proxy's): then the data's type names it, and data that is
 * no event is skipped too. */
static int event(struct llm_stream *s, const char *name, const char *data, size_t len)
{
	bool named = name && strcmp(name, "message");
	jv ev, sub;
	const char *type;
	int rc = 0;

	if (named && !known_event(name))
		return 0;
	ev = json_parse(data, len);
	type = json_get_str(ev, "type");
	if (jv_get_kind(ev) != JV_KIND_OBJECT || (!named && !type)) {
		jv_free(ev);
		return named ? forge_error("unparseable Anthropic stream event '%s'", name) : 0;
	}
	if (named)
		type = name;
	if (!strcmp(type, "message_start")) {
		sub = json_get(ev, "message");
		take_header(s->resp, sub);
		jv u = json_get(sub, "usage");
		take_usage(s->resp, u);
		jv_free(u);
		jv_free(sub);
	} else if (!strcmp(type, "content_block_start")) {
		rc = block_start(s, ev);
	} else if (!strcmp(type, "content_block_delta")) {
		rc = block_delta(s, ev);
	} else if (!strcmp(type, "content_block_stop")) {
		llm_stream_text_end(s);
	} else if (!strcmp(type, "message_delta")) {
		message_delta(s, ev);
	} else if (!strcmp(type, "message_stop")) {
		llm_stream_text_end(s);
		usage_whole(s->resp);
		s->done = true;
	} else if (!strcmp(type, "error")) {
		stream_fault(s, ev);
	}
	jv_free(ev);
	return rc;
}

/* ---- errors ------------------------------------------------------------ */

/*
 * The account is out of credit or past its spend limit: asking again will
 * not help until someone adds credit or raises the limit.  Anthropic says
 * so as billing_error (402), as a 400 invalid_request_error ("Your credit
 * balance is too low to access the Anthropic API ...") or as a 429
 * rate_limit_error or 400 ("You have reached your specified API usage
 * limits. You will regain access on 2026-04-01 at 00:00 UTC."): the
 * message tells it from a rate limit (before: that 429 was retried as one
 * and reported as a provider that could not be reached).
 */
static bool out_of_credit(const char *msg)
{
	return msg && (strstr(msg, "credit balance") || strstr(msg, "API usage limits") ||
		       strstr(msg, "spend limit"));
}

static enum llm_error classify(long status, const char *type, const char *msg)
{
	if (!type)
		return llm_fault_from_status(status);
	if (!strcmp(type, "authentication_error") || !strcmp(type, "permission_error"))
		return LLM_ERR_AUTH;
	if (!strcmp(type, "billing_error") ||
	    ((!strcmp(type, "rate_limit_error") || !strcmp(type, "invalid_request_error")) && out_of_credit(msg)))
		return LLM_ERR_QUOTA;
	/* ("model: claude-x"; "Not Found" for a wrong path is a wrong URL) */
	if (!strcmp(type, "not_found_error"))
		return msg && strstr(msg, "model") ? LLM_ERR_MODEL : LLM_ERR_CONFIG;
	if (!strcmp(type, "rate_limit_error"))
		return LLM_ERR_RATE_LIMIT;
	if (!strcmp(type, "overloaded_error"))
		return LLM_ERR_OVERLOADED;
	if (!strcmp(type, "timeout_error"))
		return LLM_ERR_TIMEOUT;
	if (!strcmp(type, "request_too_large"))
		return LLM_ERR_CONTEXT;
	if (!strcmp(type, "invalid_request_error") && msg &&
	    (strstr(msg, "prompt is too long") || strstr(msg, "context limit") ||
	     strstr(msg, "context window")))
		return LLM_ERR_CONTEXT;
	if (!strcmp(type, "api_error"))
		return LLM_ERR_SERVER;
	/* (what an error event mid-stream, decoded as a 500, says of the
	 * request: asking again will not help) */
	if (!strcmp(type, "invalid_request_error"))
		return status >= 500 ? LLM_ERR_BAD_REQUEST : llm_fault_from_status(status);
	return llm_fault_from_status(status);
}

static void decode(struct llm_fault *out, long status, jv j)
{
	jv e = json_get(j, "error");

	memset(out, 0, sizeof(*out));
	out->type = llm_strdup_or_null(json_get_str(e, "type"));
	out->message = llm_strdup_or_null(json_get_str(e, "message"));
	out->kind = classify(status, out->type, out->message);
	jv_free(e);
}

static void stream_fault(struct llm_stream *s, jv ev)
{
	llm_fault_release(&s->fault);
	decode(&s->fault, 500, ev);
	s->failed = true;
}

static void fault(struct llm_fault *out, long status, const char *body, size_t len)
{
	jv j = len ? json_parse(body, len) : jv_null();

	decode(out, status, j);
	jv_free(j);
}

const struct llm_provider llm_anthropic = {
	.name = "anthropic",
	.default_model = "claude-sonnet-4-5",
	.default_base_url = "https://api.anthropic.com",
	.key_env = "ANTHROPIC_API_KEY",
	.base_url_env = "ANTHROPIC_BASE_URL",
	.build = build,
	.parse = parse,
	.event = event,
	.fault = fault,
};
