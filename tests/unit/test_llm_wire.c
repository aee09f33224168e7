/* test_llm_wire.c - the recorded provider fixtures parse into the expected
 * normalised responses; requests are built as the providers expect. */
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "llm/llm_internal.h"
#include "net/sse.h"
#include "unit.h"

static char *slurp(const char *path, size_t *len)
{
	struct buf b = BUF_INIT;

	if (buf_read_file(&b, path) < 0) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, len);
}

struct ctx {
	const struct llm_provider *p;
	struct llm_stream s;
	struct buf progress;
};

static int on_event(void *payload, const char *event, const char *data, size_t len)
{
	struct ctx *c = payload;

	return c->p->event(&c->s, event, data, len);
}

/* The text as it came, "|" where a block was said to be whole (len 0). */
static void on_text(void *payload, const char *t, size_t len)
{
	buf_add(&((struct ctx *)payload)->progress, len ? t : "|", len ? len : 1);
}

/* Stream a fixture through the SSE parser in `step`-byte pieces. */
static int stream(struct llm_response *out, const struct llm_provider *p, const char *path,
		  size_t step, char **progress)
{
	struct ctx c = { p, { 0 }, BUF_INIT };
	struct sse_parser sp;
	size_t len;
	char *text = slurp(path, &len);
	int rc = 0;

	llm_response_init(out);
	llm_stream_init(&c.s, out);
	c.s.on_text = on_text;
	c.s.payload = &c;
	sse_init(&sp, 1 << 20, on_event, &c);
	for (size_t i = 0; text && i < len && rc == 0; i += step)
		rc = sse_feed(&sp, text + i, i + step > len ? len - i : step);
	if (rc == 0)
		rc = sse_finish(&sp);
	if (rc == 0 && !c.s.done)
		rc = forge_error("stream ended early");
	if (rc == 0)
		rc = llm_stream_finish(&c.s);
	sse_release(&sp);
	llm_stream_release(&c.s);
	free(text);
	*progress = buf_detach(&c.progress, NULL);
	return text ? rc : -1;
}

/* A base URL written with the path's first part is not doubled. */
static void test_url_join(void)
{
	char *u;

	u = llm_url("https://api.anthropic.com", "/v1/messages");
	CHECK_STR(u, "https://api.anthropic.com/v1/messages");
	free(u);
	u = llm_url("https://api.anthropic.com/v1/", "/v1/messages");
	CHECK_STR(u, "https://api.anthropic.com/v1/messages");
	free(u);
	u = llm_url("http://127.0.0.1:8080/v1", "/chat/completions");
	CHECK_STR(u, "http://127.0.0.1:8080/v1/chat/completions");
	free(u);
	u = llm_url("http://proxy/v10", "/v1/messages");
	CHECK_STR(u, "http://proxy/v10/v1/messages");
	free(u);
}

static void test_anth_stream_basic(void)
{
	struct llm_response r;
	char *prog;

	CHECK_INT(stream(&r, &llm_anthropic, "tests/fixtures/llm/anth_basic.sse", 5, &prog), 0);
	CHECK_STR(r.text, "Hello there!");
	CHECK_STR(prog, "Hello there!|");   /* whole once: content_block_stop (message_stop adds none) */
	CHECK_INT(r.ncalls, 0);
	CHECK_INT(r.stop, LLM_STOP_END_TURN);
	CHECK_INT(r.usage.input_tokens, 11);
	CHECK_INT(r.usage.output_tokens, 6);
	CHECK_STR(r.model, "claude-3-opus-latest");
	free(prog);
	llm_response_release(&r);
}

static void test_anth_stream_tool_use(void)
{
	struct llm_response r;
	char *prog;

	CHECK_INT(stream(&r, &llm_anthropic, "tests/fixtures/llm/anth_tool_use.sse", 1, &prog), 0);
	CHECK_STR(r.text, "I'll check the current weather in Paris for you.");
	CHECK_INT(r.ncalls, 1);
	CHECK_STR(r.calls[0].id, "toolu_01NRLabsLyVHZPKxbKvkfSMn");
	CHECK_STR(r.calls[0].name, "get_weather");
	CHECK_STR(json_get_str(r.calls[0].input, "location"), "Paris");
	CHECK_INT(r.stop, LLM_STOP_TOOL_USE);
	CHECK_INT(r.usage.input_tokens, 377);
	CHECK_INT(r.usage.output_tokens, 65);
	CHECK_INT(r.usage.cache_read_tokens, 0);
	/* the text is whole before the tool call's JSON streams, and said so once */
	CHECK_STR(prog, "I'll check the current weather in Paris for you.|");
	free(prog);
	llm_response_release(&r);
}

static void test_anth_stream_refusal(void)
{
	struct llm_response r;
	char *prog;

	CHECK_INT(stream(&r, &llm_anthropic, "tests/fixtures/llm/anth_refusal.sse", 64, &prog), 0);
	CHECK_INT(r.stop, LLM_STOP_REFUSAL);
	CHECK_STR(r.stop_detail, "This request was refused due to policy.");
	CHECK_STR(r.text, "");
	free(prog);
	llm_response_release(&r);
}

static void test_oai_stream_text(void)
{
	struct llm_response r;
	char *prog;

	CHECK_INT(stream(&r, &llm_openai, "tests/fixtures/llm/oai_e2aad469b71d.sse", 13, &prog), 0);
	CHECK(strncmp(r.text, "I'm", 3) == 0);
	CHECK(strlen(prog) == strlen(r.text) + 1 && !strncmp(prog, r.text, strlen(r.text)));
	CHECK_STR(prog + strlen(r.text), "|");   /* whole at finish_reason */
	CHECK_INT(r.stop, LLM_STOP_END_TURN);
	CHECK_INT(r.usage.input_tokens, 14);
	CHECK_INT(r.usage.output_tokens, 30);
	CHECK_STR(r.model, "gpt-4o-2024-08-06");
	free(prog);
	llm_response_release(&r);
}

static void test_oai_stream_tool(void)
{
	struct llm_response r;
	char *prog;

	CHECK_INT(stream(&r, &llm_openai, "tests/fixtures/llm/oai_c6aa7e397b71.sse", 1, &prog), 0);
	CHECK_INT(r.ncalls, 1);
	CHECK_STR(r.calls[0].id, "call_c91SqDXlYFuETYv8mUHzz6pp");
	CHECK_STR(r.calls[0].name, "GetWeatherArgs");
	CHECK_STR(json_get_str(r.calls[0].input, "city"), "Edinburgh");
	CHECK_STR(json_get_str(r.calls[0].input, "units"), "c");
	CHECK_INT(r.stop, LLM_STOP_TOOL_USE);
	CHECK_INT(r.usage.input_tokens, 76);
	CHECK_INT(r.usage.output_tokens, 24);
	CHECK_STR(prog, "");   /* no text, so no block to call whole */
	free(prog);
	llm_response_release(&r);
}

static void test_oai_stream_parallel_tools(void)
{
	struct llm_response r;
	char *prog;

	CHECK_INT(stream(&r, &llm_openai, "tests/fixtures/llm/oai_f82268f2fefd.sse", 100, &prog), 0);
	CHECK_INT(r.ncalls, 2);
	CHECK_STR(r.calls[1].id, "call_DNYTawLBoN8fj3KN6qU9N1Ou");
	CHECK_STR(r.calls[1].name, "get_stock_price");
	CHECK(json_get_str(r.calls[1].input, "exchange") != NULL);
	CHECK_INT(r.usage.input_tokens, 149);
	CHECK_INT(r.usage.output_tokens, 60);
	free(prog);
	llm_response_release(&r);
}

/* Stream the SSE text `text` (whole) through provider p. */
static int stream_text(struct llm_response *out, const struct llm_provider *p, const char *text)
{
	struct ctx c = { p, { 0 }, BUF_INIT };
	struct sse_parser sp;
	int rc;

	llm_response_init(out);
	llm_stream_init(&c.s, out);
	sse_init(&sp, 1 << 20, on_event, &c);
	rc = sse_feed(&sp, text, strlen(text));
	if (rc == 0)
		rc = sse_finish(&sp);
	if (rc == 0 && !c.s.done && !c.s.finished)
		rc = forge_error("stream ended early");
	if (rc == 0)
		rc = llm_stream_finish(&c.s);
	sse_release(&sp);
	llm_stream_release(&c.s);
	buf_release(&c.progress);
	return rc;
}

/* A full context window is its own stop, not max_tokens: a larger
 * max_tokens would make it worse (hunt46 #7). */
static void test_anth_context_window_stop(void)
{
	static const char sse[] =
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_x\","
		"\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\","
		"\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":199990,\"output_tokens\":1}}}\n\n"
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
		"\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
		"\"delta\":{\"type\":\"text_delta\",\"text\":\"Let me\"}}\n\n"
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
		"\"model_context_window_exceeded\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":10}}\n\n"
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
	static const char body[] =
		"{\"id\":\"msg_y\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\","
		"\"content\":[{\"type\":\"text\",\"text\":\"Let me\"}],\"stop_reason\":\"model_context_window_exceeded\","
		"\"stop_sequence\":null,\"usage\":{\"input_tokens\":199990,\"output_tokens\":10}}";
	struct llm_response r, back;
	jv j;

	CHECK_INT(stream_text(&r, &llm_anthropic, sse), 0);
	CHECK_STR(llm_stop_name(r.stop), "model_context_window_exceeded");
	CHECK(r.stop != LLM_STOP_MAX_TOKENS);
	CHECK_STR(r.text, "Let me");
	/* and so it is in a cassette, read back */
	j = llm_response_to_json(&r);
	CHECK_STR(json_get_str(j, "stop_reason"), "model_context_window_exceeded");
	CHECK_INT(llm_response_from_json(&back, j), 0);
	CHECK_INT(back.stop, r.stop);
	llm_response_release(&back);
	jv_free(j);
	llm_response_release(&r);

	llm_response_init(&r);
	CHECK_INT(llm_anthropic.parse(&r, body, strlen(body)), 0);
	CHECK_STR(llm_stop_name(r.stop), "model_context_window_exceeded");
	llm_response_release(&r);
}

/* An OpenAI chunk of a call delta (arguments JSON-escaped by the caller). */
#define OAI_CALL(idx, fields) \
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\"," \
	"\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":" #idx "," fields "}]}," \
	"\"finish_reason\":null}]}\n\n"
#define OAI_END \
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\"," \
	"\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"

/* A server that sends each parallel call whole at index 0 and without an
 * id (as Ollama does, less the ids): a name after a whole call's arguments
 * is another call, not more of the same. */
static void test_oai_stream_whole_calls_without_ids(void)
{
	static const char sse[] =
		OAI_CALL(0, "\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}")
		OAI_CALL(0, "\"type\":\"function\",\"function\":{\"name\":\"list_files\",\"arguments\":\"{}\"}")
		OAI_END;
	/* the usual deltas: the name once, then the arguments in pieces */
	static const char pieces[] =
		OAI_CALL(0, "\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}")
		OAI_CALL(0, "\"function\":{\"arguments\":\"{\\\"path\\\"\"}")
		OAI_CALL(0, "\"function\":{\"arguments\":\":\\\"a\\\"}\"}")
		OAI_CALL(1, "\"type\":\"function\",\"function\":{\"name\":\"list_files\",\"arguments\":\"{}\"}")
		OAI_END;
	struct llm_response r;

	CHECK_INT(stream_text(&r, &llm_openai, sse), 0);
	CHECK_INT(r.ncalls, 2);
	if (r.ncalls == 2) {
		CHECK_STR(r.calls[0].name, "read_file");
		CHECK_STR(json_get_str(r.calls[0].input, "path"), "a");
		CHECK(r.calls[0].input_error == NULL);
		CHECK_STR(r.calls[1].name, "list_files");
	}
	llm_response_release(&r);

	CHECK_INT(stream_text(&r, &llm_openai, pieces), 0);
	CHECK_INT(r.ncalls, 2);
	if (r.ncalls == 2) {
		CHECK_STR(json_get_str(r.calls[0].input, "path"), "a");
		CHECK(r.calls[0].input_error == NULL);
		CHECK_STR(r.calls[1].name, "list_files");
	}
	llm_response_release(&r);
}

/* A tool_use whose whole input comes with content_block_start (some
 * gateways), and no delta after it, keeps that input, as the official
 * SDKs do; deltas after a start's input build the input alone; an input
 * in a string is read as its JSON text; one that is no object is a call
 * the model hears about (before: each ran with {}; hunt57 #2). */
static void test_anth_tool_input_at_start(void)
{
	struct llm_response r;
	char *prog;

	CHECK_INT(stream(&r, &llm_anthropic, "tests/fixtures/llm/anth_tool_input_at_start.sse", 7, &prog), 0);
	CHECK_INT(r.ncalls, 4);
	if (r.ncalls == 4) {
		CHECK_STR(r.calls[0].name, "write_file");
		CHECK_STR(json_get_str(r.calls[0].input, "path"), "notes.txt");
		CHECK_STR(json_get_str(r.calls[0].input, "content"), "hello\n");
		CHECK(r.calls[0].input_error == NULL);
		CHECK_STR(json_get_str(r.calls[1].input, "path"), "a.txt");
		CHECK(r.calls[1].input_error == NULL);
		CHECK_STR(r.calls[2].name, "list_files");
		CHECK_STR(json_get_str(r.calls[2].input, "path"), "src");
		CHECK(r.calls[3].input_error != NULL &&
		      strstr(r.calls[3].input_error, "tool input is not a JSON object") != NULL);
	}
	CHECK_INT(r.stop, LLM_STOP_TOOL_USE);
	free(prog);
	llm_response_release(&r);
}

/* Not streamed: an input sent as a string is read as the JSON text it
 * holds; one that is no JSON object is a call the model hears about, as
 * OpenAI's arguments are (before: {}, and "path is missing"; hunt57 #2). */
static void test_anth_nonstream_tool_input_kinds(void)
{
	static const char body[] =
		"{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\","
		"\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"write_file\","
		"\"input\":\"{\\\"path\\\":\\\"notes.txt\\\",\\\"content\\\":\\\"hi\\\"}\"},"
		"{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"read_file\",\"input\":\"not json\"},"
		"{\"type\":\"tool_use\",\"id\":\"toolu_3\",\"name\":\"read_file\",\"input\":42},"
		"{\"type\":\"tool_use\",\"id\":\"toolu_4\",\"name\":\"list_files\"}],"
		"\"stop_reason\":\"tool_use\",\"usage\":{\"input_tokens\":10,\"output_tokens\":5}}";
	struct llm_response r;

	llm_response_init(&r);
	CHECK_INT(llm_anthropic.parse(&r, body, strlen(body)), 0);
	CHECK_INT(r.ncalls, 4);
	if (r.ncalls == 4) {
		CHECK_STR(json_get_str(r.calls[0].input, "path"), "notes.txt");
		CHECK(r.calls[0].input_error == NULL);
		for (int i = 1; i <= 2; i++) {
			CHECK_MSG(r.calls[i].input_error &&
				  strstr(r.calls[i].input_error, "tool input is not a JSON object"),
				  "call %d: %s", i, r.calls[i].input_error ? r.calls[i].input_error : "(none)");
			CHECK_INT(jv_object_length(jv_copy(r.calls[i].input)), 0);
		}
		CHECK(r.calls[3].input_error == NULL);   /* no input: a call without arguments */
	}
	llm_response_release(&r);
}

/* An answer with no choice is still billed for the usage it reports, as
 * Anthropic's is (before: 0 tokens; hunt57 #6). */
static void test_oai_no_choices_billed(void)
{
	static const char body[] =
		"{\"id\":\"c\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"gpt-4o-mini\","
		"\"choices\":[],\"usage\":{\"prompt_tokens\":120000,\"completion_tokens\":50,\"total_tokens\":120050}}";
	struct llm_response r;

	llm_response_init(&r);
	CHECK(llm_openai.parse(&r, body, strlen(body)) < 0);
	CHECK(strstr(forge_last_error(), "no choices[0].message") != NULL);
	CHECK(r.usage_seen && !r.usage_bad);
	CHECK_INT(r.usage.input_tokens, 120000);
	CHECK_INT(r.usage.output_tokens, 50);
	CHECK_STR(r.model, "gpt-4o-mini");
	llm_response_release(&r);
}

/* A tool name streamed in pieces is joined, as the official SDKs join the
 * strings of a delta (before: cut to "write_"; hunt57 #7); a server that
 * repeats the whole name in each delta names it once. */
static void test_oai_stream_name_in_pieces(void)
{
	static const char pieces[] =
		OAI_CALL(0, "\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"write_\",\"arguments\":\"\"}")
		OAI_CALL(0, "\"function\":{\"name\":\"file\",\"arguments\":\"{\\\"path\\\":\\\"a.txt\\\"\"}")
		OAI_CALL(0, "\"function\":{\"arguments\":\",\\\"content\\\":\\\"x\\\"}\"}")
		OAI_END;
	static const char repeated[] =
		OAI_CALL(0, "\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}")
		OAI_CALL(0, "\"id\":\"call_1\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\"\"}")
		OAI_CALL(0, "\"id\":\"call_1\",\"function\":{\"name\":\"read_file\",\"arguments\":\":\\\"a\\\"}\"}")
		OAI_END;
	struct llm_response r;

	CHECK_INT(stream_text(&r, &llm_openai, pieces), 0);
	CHECK_INT(r.ncalls, 1);
	if (r.ncalls == 1) {
		CHECK_STR(r.calls[0].name, "write_file");
		CHECK_STR(json_get_str(r.calls[0].input, "path"), "a.txt");
		CHECK_STR(json_get_str(r.calls[0].input, "content"), "x");
	}
	llm_response_release(&r);

	CHECK_INT(stream_text(&r, &llm_openai, repeated), 0);
	CHECK_INT(r.ncalls, 1);
	if (r.ncalls == 1) {
		CHECK_STR(r.calls[0].name, "read_file");
		CHECK_STR(json_get_str(r.calls[0].input, "path"), "a");
	}
	llm_response_release(&r);
}

/* Calls without an id, or with an earlier call's, get ids of their own,
 * named by the turn and the call's place; a server's ids are kept (hunt46 #4). */
static void test_calls_named(void)
{
	static const char sse[] =
		OAI_CALL(0, "\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}")
		OAI_CALL(0, "\"function\":{\"arguments\":\"{}\"}")
		OAI_CALL(1, "\"type\":\"function\",\"function\":{\"name\":\"list_files\",\"arguments\":\"{}\"}")
		OAI_END;
	static const char dup[] =
		"{\"id\":\"c\",\"object\":\"chat.completion\",\"model\":\"m\",\"choices\":[{\"index\":0,"
		"\"message\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
		"{\"id\":\"x\",\"type\":\"function\",\"function\":{\"name\":\"a\",\"arguments\":\"{}\"}},"
		"{\"id\":\"x\",\"type\":\"function\",\"function\":{\"name\":\"b\",\"arguments\":\"{}\"}},"
		"{\"id\":\"call_forge_1_2\",\"type\":\"function\",\"function\":{\"name\":\"c\",\"arguments\":\"{}\"}},"
		"{\"type\":\"function\",\"function\":{\"name\":\"d\",\"arguments\":\"{}\"}}]},"
		"\"finish_reason\":\"tool_calls\"}]}";
	static const char anth[] =
		"{\"id\":\"msg_y\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":["
		"{\"type\":\"tool_use\",\"name\":\"read_file\",\"input\":{}}],\"stop_reason\":\"tool_use\","
		"\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}";
	struct llm_response r;
	jv msgs = jv_array();

	/* two turns before this one */
	msgs = jv_array_append(msgs, llm_msg_user("task"));
	for (int i = 0; i < 2; i++) {
		msgs = jv_array_append(msgs, json_set(json_set(jv_object(), "role", jv_string("assistant")),
						      "content", jv_string("x")));
		msgs = jv_array_append(msgs, llm_msg_user("go on"));
	}
	CHECK_INT(stream_text(&r, &llm_openai, sse), 0);
	CHECK_INT(r.ncalls, 2);
	llm_response_name_calls(&r, msgs);
	CHECK_STR(r.calls[0].id, "call_forge_3_1");
	CHECK_STR(r.calls[1].id, "call_forge_3_2");
	/* the assistant turn sent back names them too */
	jv m = llm_msg_assistant(&r);
	char *s = json_dumps(m, true);
	CHECK(strstr(s, "\"id\":\"call_forge_3_1\"") && strstr(s, "\"id\":\"call_forge_3_2\""));
	free(s);                /* (json_dumps took m) */
	llm_response_release(&r);

	llm_response_init(&r);
	CHECK_INT(llm_openai.parse(&r, dup, strlen(dup)), 0);
	CHECK_INT(r.ncalls, 4);
	llm_response_name_calls(&r, jv_null());
	CHECK_STR(r.calls[0].id, "x");
	CHECK_STR(r.calls[1].id, "call_forge_1_2_2");   /* (call_forge_1_2 is the server's) */
	CHECK_STR(r.calls[2].id, "call_forge_1_2");
	CHECK_STR(r.calls[3].id, "call_forge_1_4");
	llm_response_release(&r);

	/* Anthropic's always come with one; a proxy's without gets one too */
	llm_response_init(&r);
	CHECK_INT(llm_anthropic.parse(&r, anth, strlen(anth)), 0);
	llm_response_name_calls(&r, msgs);
	CHECK_STR(r.calls[0].id, "call_forge_3_1");
	llm_response_release(&r);
	jv_free(msgs);
}

/* Non-streaming: the recorded Anthropic cassette's response bodies. */
static jv cassette(const char *path)
{
	return json_parse_file(path);
}

/* cassette[i].<path> as a new reference; borrows c. */
static jv at(jv c, int i, const char *path)
{
	jv e = jv_array_get(jv_copy(c), i);
	jv v = json_get_path(e, path);

	jv_free(e);
	return v;
}

static void test_anth_nonstream_tool_loop(void)
{
	jv c = cassette("tests/fixtures/llm/anth_cassette_tool_loop_is_error.json");
	jv b0 = at(c, 0, "response.body");
	jv b1 = at(c, 1, "response.body");
	char *s0 = json_dumps(b0, false), *s1 = json_dumps(b1, false);
	struct llm_response r0, r1;
	int ok;

	llm_response_init(&r0);
	llm_response_init(&r1);
	ok = llm_anthropic.parse(&r0, s0, strlen(s0)) == 0 && llm_anthropic.parse(&r1, s1, strlen(s1)) == 0;
	free(s0);
	free(s1);
	ok = ok && r0.ncalls == 1 && !strcmp(r0.calls[0].name, "get_weather")
	     && !strcmp(json_get_str(r0.calls[0].input, "units"), "f")
	     && r0.stop == LLM_STOP_TOOL_USE && r0.usage.input_tokens == 656 && r0.usage.output_tokens == 74
	     && r1.stop == LLM_STOP_END_TURN && !strncmp(r1.text, "I apologize", 11) && r1.ncalls == 0;

	/* rebuild exchange 2's request from the normalised conversation */
	struct llm_request req;
	struct llm_wire w;
	llm_request_init(&req);
	req.messages = jv_array();
	req.messages = jv_array_append(req.messages, llm_msg_user("What is the weather in SF?"));
	req.messages = jv_array_append(req.messages, llm_msg_assistant(&r0));
	req.messages = jv_array_append(req.messages, llm_msg_tool_result(r0.calls[0].id,
				       "RuntimeError('Unexpected error, try again')", true));
	req.max_tokens = 1024;
	llm_anthropic.build(&w, NULL, "http://127.0.0.1:1/", "sk-ant-secret", "claude-haiku-4-5", &req, 0);
	jv got = json_parse(w.body, w.body_len);
	jv want = at(c, 1, "request.body");
	jv gm = json_get(got, "messages"), wm = json_get(want, "messages");
	jv g2 = jv_array_get(jv_copy(gm), 2), w2 = jv_array_get(jv_copy(wm), 2);
	ok = ok && json_equal(g2, w2) && !strcmp(w.url, "http://127.0.0.1:1/v1/messages")
	     && jv_array_length(jv_copy(gm)) == 3;
	bool key_hdr = false;
	for (int i = 0; w.headers[i]; i++)
		key_hdr |= !strcmp(w.headers[i], "x-api-key: sk-ant-secret");
	jv_free(g2); jv_free(w2); jv_free(gm); jv_free(wm); jv_free(got); jv_free(want);
	llm_wire_release(&w);
	llm_request_release(&req);
	llm_response_release(&r0);
	llm_response_release(&r1);
	jv_free(c);
	CHECK(ok);
	CHECK(key_hdr);
}

/* An empty answer (content [], end_turn: the API gives one at times), or
 * one of white space only, is not sent back: the API refuses "all messages
 * must have non-empty content except for the optional final assistant
 * message" and "text content blocks must contain non-whitespace text". */
static void test_anth_empty_answer_left_out(void)
{
	static const char *const answers[] = {
		"{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":"
		"\"claude-haiku-4-5\",\"content\":[],\"stop_reason\":\"end_turn\",\"usage\":"
		"{\"input_tokens\":10,\"output_tokens\":2}}",
		"{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":"
		"\"claude-haiku-4-5\",\"content\":[{\"type\":\"text\",\"text\":\"\\n\\n \"}],"
		"\"stop_reason\":\"end_turn\",\"usage\":{\"input_tokens\":10,\"output_tokens\":2}}",
	};

	for (size_t a = 0; a < sizeof answers / sizeof *answers; a++) {
		struct llm_response r;
		struct llm_request req;
		struct llm_wire w;

		llm_response_init(&r);
		CHECK(llm_anthropic.parse(&r, answers[a], strlen(answers[a])) == 0);
		llm_request_init(&req);
		req.messages = jv_array();
		req.messages = jv_array_append(req.messages, llm_msg_user("do the task"));
		req.messages = jv_array_append(req.messages, llm_msg_assistant(&r));
		req.messages = jv_array_append(req.messages, llm_msg_user("use the tools"));
		req.max_tokens = 1024;
		llm_anthropic.build(&w, NULL, "http://127.0.0.1:1/", "k", "claude-haiku-4-5", &req, 0);
		jv got = json_parse(w.body, w.body_len);
		jv roles = jv_array(), msgs = json_get(got, "messages");
		jv_array_foreach(msgs, i, m) {
			jv content = json_get(m, "content");
			CHECK(!(jv_get_kind(content) == JV_KIND_ARRAY && jv_array_length(jv_copy(content)) == 0));
			roles = jv_array_append(roles, json_get(m, "role"));
			jv_free(content);
			jv_free(m);
		}
		char *r_s = json_dumps(roles, false);
		CHECK_MSG(!strcmp(r_s, "[\"user\",\"user\"]"), "answer %zu: roles %s", a, r_s);
		free(r_s);
		jv_free(msgs);
		jv_free(got);
		llm_wire_release(&w);
		llm_request_release(&req);
		llm_response_release(&r);
	}
}

/* The cache_control breakpoints of an Anthropic body (borrowed), where
 * they are: "tools.N", "system.N", "messages.M.N", space-separated (one
 * not {"type":"ephemeral"} adds "(not ephemeral)"); their count in *n. */
static char *breakpoints(jv body, int *n)
{
	struct buf b = BUF_INIT;
	static const char *const parts[] = { "tools", "system", "messages" };

	*n = 0;
	for (size_t p = 0; p < 3; p++) {
		jv arr = json_get(body, parts[p]);
		if (jv_get_kind(arr) != JV_KIND_ARRAY) {
			jv_free(arr);
			continue;
		}
		jv_array_foreach(arr, i, e) {
			jv content = p == 2 ? json_get(e, "content") : jv_array_append(jv_array(), jv_copy(e));
			if (jv_get_kind(content) == JV_KIND_ARRAY) {
				jv_array_foreach(content, k, blk) {
					jv cc = json_get(blk, "cache_control");
					const char *type = json_get_str(cc, "type");
					if (jv_get_kind(cc) == JV_KIND_OBJECT) {
						(*n)++;
						if (!type || strcmp(type, "ephemeral"))
							buf_adds(&b, " (not ephemeral)");
						if (p == 2)
							buf_addf(&b, "%smessages.%d.%d", b.len ? " " : "", i, k);
						else
							buf_addf(&b, "%s%s.%d", b.len ? " " : "", parts[p], i);
					}
					jv_free(cc);
					jv_free(blk);
				}
			}
			jv_free(content);
			jv_free(e);
		}
		jv_free(arr);
	}
	return buf_detach(&b, NULL);
}

/* Build req with flags; the breakpoints of its body (see breakpoints()). */
static char *built_breakpoints(const struct llm_request *req, unsigned flags, int *n)
{
	struct llm_wire w;
	char *where;

	llm_anthropic.build(&w, NULL, "http://127.0.0.1:1/", "k", "claude-haiku-4-5", req, flags);
	jv body = json_parse(w.body, w.body_len);
	where = breakpoints(body, n);
	jv_free(body);
	llm_wire_release(&w);
	return where;
}

/* Prompt caching: an agent's request (cache_prefix) on a client that caches
 * (LLM_PROMPT_CACHE) marks the last tool, the system prompt (then a block
 * array), the conversation's last block and the last block of the user
 * turn before the last answer: never more than the API's 4, whatever the
 * tools (an MCP server's 30, a forced result tool) or the turns; a one-off
 * request, or a client with llm.prompt_cache off, sends none. */
static void test_anth_cache_breakpoints(void)
{
	struct llm_request req;
	struct llm_response r;
	char *where;
	int n;

	llm_request_init(&req);
	req.system = "You are the planner";
	req.tools = jv_array();
	for (int i = 0; i < 30; i++) {
		char name[32];
		snprintf(name, sizeof name, "mcp__tool%d", i);
		req.tools = jv_array_append(req.tools, json_set(json_set(jv_object(), "name", jv_string(name)),
				"input_schema", json_set(jv_object(), "type", jv_string("object"))));
	}
	req.tool_choice = LLM_TOOL_FORCED;
	req.tool_name = "mcp__tool29";
	req.messages = jv_array_append(jv_array(), llm_msg_user("the task"));
	req.cache_prefix = true;

	/* the first turn: its one message, a string, becomes a marked block */
	where = built_breakpoints(&req, LLM_PROMPT_CACHE, &n);
	CHECK_STR(where, "tools.29 system.0 messages.0.0");
	CHECK_INT(n, 3);
	free(where);

	/* turns later: an answer of three calls and text, their results, a
	 * nudge (one user turn with them), an answer, its result */
	llm_response_init(&r);
	llm_response_add_call(&r, "toolu_1", "mcp__tool1", jv_object());
	llm_response_add_call(&r, "toolu_2", "mcp__tool2", jv_object());
	llm_response_add_call(&r, "toolu_3", "mcp__tool3", jv_object());
	free(r.text);
	r.text = xstrdup("reading");
	req.messages = jv_array_append(req.messages, llm_msg_assistant(&r));
	req.messages = jv_array_append(req.messages, llm_msg_tool_result("toolu_1", "one", false));
	req.messages = jv_array_append(req.messages, llm_msg_tool_result("toolu_2", "two", true));
	req.messages = jv_array_append(req.messages, llm_msg_tool_result("toolu_3", "three", false));
	req.messages = jv_array_append(req.messages, llm_msg_user("go on"));
	llm_response_release(&r);
	llm_response_init(&r);
	llm_response_add_call(&r, "toolu_4", "mcp__tool4", jv_object());
	req.messages = jv_array_append(req.messages, llm_msg_assistant(&r));
	req.messages = jv_array_append(req.messages, llm_msg_tool_result("toolu_4", "four", false));
	llm_response_release(&r);
	where = built_breakpoints(&req, LLM_PROMPT_CACHE, &n);
	/* (Anthropic turns: 0 user, 1 assistant, 2 user (3 results + text),
	 * 3 assistant, 4 user (a result)) */
	CHECK_STR(where, "tools.29 system.0 messages.2.3 messages.4.0");
	CHECK_INT(n, LLM_CACHE_BREAKPOINTS_MAX);
	free(where);

	/* no system prompt, no tools: the conversation's two */
	const char *system = req.system;
	jv tools = req.tools;
	req.system = NULL;
	req.tools = jv_null();
	where = built_breakpoints(&req, LLM_PROMPT_CACHE, &n);
	CHECK_STR(where, "messages.2.3 messages.4.0");
	free(where);
	req.system = system;
	req.tools = tools;

	/* a last user text of white space only is no block the API takes */
	jv_free(req.messages);
	req.messages = jv_array_append(jv_array(), llm_msg_user(" \n"));
	where = built_breakpoints(&req, LLM_PROMPT_CACHE, &n);
	CHECK_STR(where, "tools.29 system.0");
	free(where);

	/* a one-off request, or a client that does not cache: none, and the
	 * system prompt stays a string */
	req.cache_prefix = false;
	where = built_breakpoints(&req, LLM_PROMPT_CACHE, &n);
	CHECK_INT(n, 0);
	free(where);
	req.cache_prefix = true;
	struct llm_wire w;
	llm_anthropic.build(&w, NULL, "http://127.0.0.1:1/", "k", "claude-haiku-4-5", &req, 0);
	CHECK(!strstr(w.body, "cache_control"));
	CHECK(strstr(w.body, "\"system\":\"You are the planner\"") != NULL);
	llm_wire_release(&w);
	llm_request_release(&req);
}

/* Usage figures a call cannot have (negative, past LLM_USAGE_MAX, not a
 * number) or none at all are not taken: the client estimates them. */
static void test_usage_believed_or_not(void)
{
	static const struct {
		const char *usage;
		bool seen, bad;
		long input;
	} cases[] = {
		{ ",\"usage\":{\"input_tokens\":10,\"output_tokens\":2}", true, false, 10 },
		{ ",\"usage\":{\"input_tokens\":-100000000,\"output_tokens\":2}", true, true, 0 },
		{ ",\"usage\":{\"input_tokens\":1e20,\"output_tokens\":2}", true, true, 0 },
		{ ",\"usage\":{\"input_tokens\":\"10\",\"output_tokens\":2}", true, true, 0 },
		{ "", false, false, 0 },
	};

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct llm_response r;
		struct buf body = BUF_INIT;

		buf_addf(&body, "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\","
			 "\"model\":\"claude-haiku-4-5\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],"
			 "\"stop_reason\":\"end_turn\"%s}", cases[i].usage);
		llm_response_init(&r);
		CHECK(llm_anthropic.parse(&r, body.buf, body.len) == 0);
		CHECK_MSG(r.usage_seen == cases[i].seen && r.usage_bad == cases[i].bad &&
			  r.usage.input_tokens == cases[i].input, "case %zu: seen %d bad %d input %ld", i,
			  r.usage_seen, r.usage_bad, r.usage.input_tokens);
		llm_response_release(&r);
		buf_release(&body);
	}
	/* OpenAI's: half a usage (no prompt_tokens) is estimated, not a prompt of 0 */
	static const struct {
		const char *usage;
		bool bad;
	} oai[] = {
		{ ",\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":2,\"total_tokens\":12}", false },
		{ ",\"usage\":{\"completion_tokens\":2}", true },
		{ ",\"usage\":{\"prompt_tokens\":10}", true },
	};
	for (size_t i = 0; i < sizeof oai / sizeof *oai; i++) {
		struct llm_response r;
		struct buf body = BUF_INIT;

		buf_addf(&body, "{\"id\":\"c1\",\"object\":\"chat.completion\",\"model\":\"gpt-4o-mini\","
			 "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},"
			 "\"finish_reason\":\"stop\"}]%s}", oai[i].usage);
		llm_response_init(&r);
		CHECK(llm_openai.parse(&r, body.buf, body.len) == 0);
		CHECK_MSG(r.usage_bad == oai[i].bad, "openai case %zu: bad %d", i, r.usage_bad);
		llm_response_release(&r);
		buf_release(&body);
	}
}

static void test_anth_errors(void)
{
	jv c = cassette("tests/fixtures/llm/anth_cassette_429_then_200.json");
	jv b = at(c, 0, "response.body");
	char *s = json_dumps(b, false);
	struct llm_fault f;

	llm_anthropic.fault(&f, 429, s, strlen(s));
	free(s);
	jv_free(c);
	CHECK_INT(f.kind, LLM_ERR_RATE_LIMIT);
	CHECK_STR(f.type, "rate_limit_error");
	llm_fault_release(&f);

	const char *ctx = "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\","
			  "\"message\":\"prompt is too long: 210000 tokens > 200000 maximum\"}}";
	llm_anthropic.fault(&f, 400, ctx, strlen(ctx));
	CHECK_INT(f.kind, LLM_ERR_CONTEXT);
	llm_fault_release(&f);
	llm_anthropic.fault(&f, 529, "", 0);
	CHECK_INT(f.kind, LLM_ERR_OVERLOADED);
	llm_fault_release(&f);
	llm_anthropic.fault(&f, 401, "<html>", 6);
	CHECK_INT(f.kind, LLM_ERR_AUTH);
	llm_fault_release(&f);

	/* an account out of money, as Anthropic says it: a 429 spend cap (not
	 * a rate limit: no retry), the same as a 400, a 400 credit balance, a
	 * 402; an ordinary rate limit stays one */
	static const struct { long status; const char *type, *message; enum llm_error kind; } money[] = {
		{ 429, "rate_limit_error", "You have reached your specified API usage limits. You will regain "
		  "access on 2026-04-01 at 00:00 UTC.", LLM_ERR_QUOTA },
		{ 400, "invalid_request_error", "You have reached your specified API usage limits. You will "
		  "regain access on 2025-07-01 at 00:00 UTC.", LLM_ERR_QUOTA },
		{ 400, "invalid_request_error", "Your credit balance is too low to access the Anthropic API. "
		  "Please go to Plans & Billing to upgrade or purchase credits.", LLM_ERR_QUOTA },
		{ 402, "billing_error", "Payment required.", LLM_ERR_QUOTA },
		{ 429, "rate_limit_error", "This request would exceed your account's rate limit. Please try "
		  "again later.", LLM_ERR_RATE_LIMIT },
	};
	for (size_t i = 0; i < sizeof(money) / sizeof(*money); i++) {
		jv e = json_set(json_set(jv_object(), "type", jv_string(money[i].type)), "message",
				jv_string(money[i].message));
		char *body = json_dumps(json_set(json_set(jv_object(), "type", jv_string("error")), "error", e), false);

		llm_anthropic.fault(&f, money[i].status, body, strlen(body));
		CHECK_MSG(f.kind == money[i].kind, "money case %zu: kind %d", i, (int)f.kind);
		llm_fault_release(&f);
		free(body);
	}
}

static void test_oai_nonstream_and_errors(void)
{
	const char *body = "{\"id\":\"chatcmpl-abc123\",\"object\":\"chat.completion\",\"model\":\"gpt-4o-mini\","
		"\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":"
		"[{\"id\":\"call_abc123\",\"type\":\"function\",\"function\":{\"name\":\"get_current_weather\","
		"\"arguments\":\"{\\n\\\"location\\\": \\\"Boston, MA\\\"\\n}\"}}]},\"logprobs\":null,"
		"\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":82,\"completion_tokens\":17,"
		"\"total_tokens\":99,\"prompt_tokens_details\":{\"cached_tokens\":80}}}";
	struct llm_response r;
	struct llm_fault f;

	llm_response_init(&r);
	CHECK_INT(llm_openai.parse(&r, body, strlen(body)), 0);
	CHECK_INT(r.ncalls, 1);
	CHECK_STR(json_get_str(r.calls[0].input, "location"), "Boston, MA");
	CHECK_INT(r.stop, LLM_STOP_TOOL_USE);
	CHECK_INT(r.usage.input_tokens, 2);
	CHECK_INT(r.usage.cache_read_tokens, 80);
	llm_response_release(&r);

	const char *refusal = "{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":null,"
			      "\"refusal\":\"I'm very sorry, but I can't assist with that.\"},\"finish_reason\":\"stop\"}]}";
	llm_response_init(&r);
	CHECK_INT(llm_openai.parse(&r, refusal, strlen(refusal)), 0);
	CHECK_INT(r.stop, LLM_STOP_REFUSAL);
	CHECK_STR(r.stop_detail, "I'm very sorry, but I can't assist with that.");
	llm_response_release(&r);

	const char *e1 = "{\"error\":{\"message\":\"This model's maximum context length is 4097 tokens.\","
			 "\"type\":\"invalid_request_error\",\"param\":\"messages\",\"code\":\"context_length_exceeded\"}}";
	llm_openai.fault(&f, 400, e1, strlen(e1));
	CHECK_INT(f.kind, LLM_ERR_CONTEXT);
	llm_fault_release(&f);
	/* llama.cpp's server, with its type, and from a build before it (500, no type) */
	const char *e1b = "{\"error\":{\"code\":400,\"message\":\"the request exceeds the available context "
			  "size. try increasing the context size or enable context shift\",\"type\":"
			  "\"exceed_context_size_error\",\"n_prompt_tokens\":9000,\"n_ctx\":8192}}";
	llm_openai.fault(&f, 400, e1b, strlen(e1b));
	CHECK_INT(f.kind, LLM_ERR_CONTEXT);
	llm_fault_release(&f);
	const char *e1c = "{\"error\":{\"code\":500,\"message\":\"the request exceeds the available context size. "
			  "try increasing the context size or enable context shift\",\"type\":\"server_error\"}}";
	llm_openai.fault(&f, 500, e1c, strlen(e1c));
	CHECK_INT(f.kind, LLM_ERR_CONTEXT);
	llm_fault_release(&f);
	const char *e2 = "{\"error\":{\"message\":\"You exceeded your current quota\",\"type\":\"insufficient_quota\","
			 "\"param\":null,\"code\":\"insufficient_quota\"}}";
	llm_openai.fault(&f, 429, e2, strlen(e2));
	CHECK_INT(f.kind, LLM_ERR_QUOTA);
	llm_fault_release(&f);
	const char *e3 = "{\"object\":\"error\",\"message\":\"The model `x` does not exist.\",\"type\":\"NotFoundError\","
			 "\"param\":null,\"code\":404}";
	llm_openai.fault(&f, 404, e3, strlen(e3));
	CHECK_INT(f.kind, LLM_ERR_MODEL);
	CHECK_STR(f.message, "The model `x` does not exist.");
	llm_fault_release(&f);
	/* a 404 is an unknown model only when it says so; else a wrong URL (hunt43 #2) */
	static const struct { const struct llm_provider *p; const char *body; enum llm_error want; } nf[] = {
		{ &llm_openai, "404 page not found", LLM_ERR_CONFIG },
		{ &llm_openai, "", LLM_ERR_CONFIG },
		{ &llm_openai, "{\"error\":{\"message\":\"model \\\"qwen9\\\" not found, try pulling it first\","
			       "\"type\":\"not_found_error\",\"param\":null,\"code\":null}}", LLM_ERR_MODEL },
		{ &llm_openai, "{\"error\":{\"message\":\"The model `gpt-9` does not exist or you do not have "
			       "access to it.\",\"type\":\"invalid_request_error\",\"param\":null,"
			       "\"code\":\"model_not_found\"}}", LLM_ERR_MODEL },
		{ &llm_anthropic, "{\"type\":\"error\",\"error\":{\"type\":\"not_found_error\","
				  "\"message\":\"Not Found\"}}", LLM_ERR_CONFIG },
		{ &llm_anthropic, "{\"type\":\"error\",\"error\":{\"type\":\"not_found_error\","
				  "\"message\":\"model: claude-nope\"}}", LLM_ERR_MODEL },
		{ &llm_anthropic, "Not Found", LLM_ERR_CONFIG },
	};
	for (size_t i = 0; i < sizeof(nf) / sizeof(*nf); i++) {
		nf[i].p->fault(&f, 404, nf[i].body, strlen(nf[i].body));
		CHECK_MSG(f.kind == nf[i].want, "404 %s: kind %d", nf[i].body, (int)f.kind);
		llm_fault_release(&f);
	}
	llm_openai.fault(&f, 401, "{\"error\":\"unauthorized\"}", 24);
	CHECK_INT(f.kind, LLM_ERR_AUTH);
	llm_fault_release(&f);
}

static void test_oai_build(void)
{
	struct llm_request req;
	struct llm_wire w;
	struct llm_response r;

	llm_response_init(&r);
	llm_response_add_call(&r, "call_1", "read_file", json_set(jv_object(), "path", jv_string("a.c")));
	llm_request_init(&req);
	req.system = "be brief";
	req.messages = jv_array_append(jv_array(), llm_msg_user("hi"));
	req.messages = jv_array_append(req.messages, llm_msg_assistant(&r));
	req.messages = jv_array_append(req.messages, llm_msg_tool_result("call_1", "no such file", true));
	req.tools = jv_array_append(jv_array(), json_set(json_set(jv_object(), "name", jv_string("finish")),
				    "input_schema", json_set(jv_object(), "type", jv_string("object"))));
	req.tool_choice = LLM_TOOL_FORCED;
	req.tool_name = "finish";
	req.stream = true;
	llm_openai.build(&w, NULL, "http://127.0.0.1:1/v1", "sk-test", "m", &req, 0);
	jv b = json_parse(w.body, w.body_len);
	CHECK_STR(w.url, "http://127.0.0.1:1/v1/chat/completions");
	jv m = json_get(b, "messages");
	jv m0 = jv_array_get(jv_copy(m), 0);
	int ok = jv_array_length(jv_copy(m)) == 4
		 && !strcmp(json_get_str(m0, "role") ?: "", "system");
	jv_free(m0);
	jv a = jv_array_get(jv_copy(m), 2);
	jv tcs = json_get(a, "tool_calls");
	jv tc0 = jv_array_get(tcs, 0);
	jv fn = json_get(tc0, "function");
	ok = ok && !strcmp(json_get_str(fn, "arguments"), "{\"path\":\"a.c\"}");
	jv t = jv_array_get(jv_copy(m), 3);
	ok = ok && !strcmp(json_get_str(t, "content"), "ERROR: no such file")
	     && json_has(b, "max_completion_tokens") && json_get_bool(b, "stream", false);
	jv choice = json_get_path(b, "tool_choice.function");
	ok = ok && !strcmp(json_get_str(choice, "name") ?: "", "finish");
	jv_free(choice); jv_free(t); jv_free(fn); jv_free(tc0); jv_free(a); jv_free(m); jv_free(b);
	llm_wire_release(&w);
	llm_openai.build(&w, NULL, "http://127.0.0.1:1/v1", NULL, "m", &req, LLM_OPENAI_MAX_TOKENS);
	b = json_parse(w.body, w.body_len);
	ok = ok && json_has(b, "max_tokens") && !json_has(b, "max_completion_tokens");
	jv_free(b);
	llm_wire_release(&w);
	llm_request_release(&req);
	llm_response_release(&r);
	CHECK(ok);
}

/* p's body for req with the parts kept in parts (malloc'd); *same: it is
 * the body built without them, byte for byte. */
static char *built_with(bool *same, const struct llm_provider *p, struct llm_parts *parts,
			const struct llm_request *req, unsigned flags)
{
	struct llm_wire w, fresh;
	char *body;

	p->build(&w, parts, "http://127.0.0.1:1/", "k", "m", req, flags);
	p->build(&fresh, NULL, "http://127.0.0.1:1/", "k", "m", req, flags);
	*same = w.body_len == strlen(w.body) && w.body_len == fresh.body_len &&
		!memcmp(w.body, fresh.body, w.body_len);
	body = w.body;
	w.body = NULL;
	llm_wire_release(&w);
	llm_wire_release(&fresh);
	return body;
}

static jv tool_named(const char *name)
{
	return json_set(json_set(jv_object(), "name", jv_string(name)), "input_schema",
			json_set(jv_object(), "type", jv_string("object")));
}

/* The tools and the system prompt an agent sends every turn are
 * serialised once per client (llm_parts), and made again when anything
 * that shapes them changes: the tools (a new jv, or the same one changed
 * since: the part holds a reference, so a change copies it), the tool
 * choice, the forced tool, the prompt cache's mark, the system prompt's
 * text (also in the same buffer). */
static void test_parts_kept_and_renewed(void)
{
	const struct llm_provider *ps[] = { &llm_anthropic, &llm_openai };

	for (size_t i = 0; i < 2; i++) {
		const struct llm_provider *p = ps[i];
		struct llm_parts parts = { 0 };
		struct llm_request req;
		char system[] = "be brief", *body;
		const char *kept;
		bool same;

#define BUILT(flags) do { \
		free(body); \
		body = built_with(&same, p, &parts, &req, (flags)); \
		CHECK_MSG(same, "%s: %s", p->name, body); \
	} while (0)
		body = NULL;
		llm_request_init(&req);
		req.system = system;
		req.messages = jv_array_append(jv_array(), llm_msg_user("hi"));
		req.tools = jv_array_append(jv_array(), tool_named("read_file"));
		req.cache_prefix = true;
		BUILT(LLM_PROMPT_CACHE);
		kept = parts.tools.text;
		CHECK(kept != NULL);
		/* the next turn: the same tools, reused */
		req.messages = jv_array_append(req.messages, llm_msg_user("again"));
		BUILT(LLM_PROMPT_CACHE);
		CHECK(parts.tools.text == kept);
		/* the same jv, one tool more: made again */
		req.tools = jv_array_append(req.tools, tool_named("write_file"));
		BUILT(LLM_PROMPT_CACHE);
		CHECK(strstr(body, "write_file") != NULL);
		/* the choice, the forced name, the mark */
		req.tool_choice = LLM_TOOL_FORCED;
		req.tool_name = "read_file";
		BUILT(LLM_PROMPT_CACHE);
		req.tool_name = "write_file";
		BUILT(LLM_PROMPT_CACHE);
		CHECK(strstr(body, "\"name\":\"write_file\"}") != NULL);   /* the choice */
		BUILT(0);
		req.cache_prefix = false;
		BUILT(LLM_PROMPT_CACHE);
		/* a new jv of other tools */
		jv_free(req.tools);
		req.tools = jv_array_append(jv_array(), tool_named("finish"));
		req.tool_name = "finish";
		BUILT(0);
		CHECK(strstr(body, "finish") != NULL && !strstr(body, "read_file"));
		/* the system prompt changed in place */
		system[0] = 'B';
		BUILT(0);
		CHECK(strstr(body, "Be brief") != NULL);
#undef BUILT
		free(body);
		llm_parts_release(&parts);
		llm_parts_release(&parts);
		llm_parts_release(NULL);
		llm_request_release(&req);
	}
}

/* An assistant message with text and a call of read_file (id). */
static jv answer(const char *text, const char *id)
{
	jv call = json_set(json_set(json_set(jv_object(), "id", jv_string(id)), "name", jv_string("read_file")),
			   "input", json_set(jv_object(), "path", jv_string(id)));

	return json_set(json_set(json_set(jv_object(), "role", jv_string("assistant")), "content",
				 jv_string(text)), "tool_calls", jv_array_append(jv_array(), call));
}

/*
 * A conversation's turns are serialised once per client (llm_turns): each
 * request writes the turns before its last ones from the texts the one
 * before kept (before: every turn dumped again each call, O(N^2) for N
 * turns), byte for byte the body built without them, as the conversation
 * grows by answers and tool results (several a turn, a user text after
 * them, an empty answer the API refuses, left out), with and without the
 * prompt cache's marks, and as it is cut, compressed (its first messages
 * changed) or changed in place.
 */
static void test_turns_kept(void)
{
	struct llm_parts parts = { 0 };
	struct llm_request req;
	char *body = NULL, id[16], *poison;
	bool same;

	llm_request_init(&req);
	req.system = "sys";
	req.messages = jv_array_append(jv_array(), llm_msg_user("task"));
	req.cache_prefix = true;
	for (int i = 0; i < 40; i++) {
		unsigned flags = i % 3 == 1 ? 0 : LLM_PROMPT_CACHE;

		free(body);
		body = built_with(&same, &llm_anthropic, &parts, &req, flags);
		CHECK_MSG(same, "turn %d: %s", i, body);
		snprintf(id, sizeof id, "c%d", i);
		if (i % 7 == 3) {
			/* an empty answer, then the user again */
			req.messages = jv_array_append(req.messages, json_set(json_set(jv_object(), "role",
				jv_string("assistant")), "content", jv_string(" ")));
			req.messages = jv_array_append(req.messages, llm_msg_user("go on"));
			continue;
		}
		req.messages = jv_array_append(req.messages, answer(i % 2 ? "" : "let me see", id));
		req.messages = jv_array_append(req.messages, llm_msg_tool_result(id, "the file", i % 5 == 0));
		if (i % 4 == 2)
			req.messages = jv_array_append(req.messages, llm_msg_tool_result(id, "another", false));
		if (i % 6 == 5)
			req.messages = jv_array_append(req.messages, llm_msg_user("a note after the results"));
		if (i == 20) {
			/* compressed: the first message changed */
			req.messages = jv_array_set(req.messages, 0, llm_msg_user("summary of the work so far"));
		} else if (i == 26) {
			/* one in the middle changed in place */
			req.messages = jv_array_set(req.messages, 5, llm_msg_user("changed"));
		} else if (i == 32) {
			/* cut to its first messages */
			jv cut = jv_array_slice(jv_copy(req.messages), 0, 4);

			jv_free(req.messages);
			req.messages = cut;
		}
	}
	/* the next turn writes the texts kept, not the turns dumped again:
	 * one changed behind its back shows */
	req.messages = jv_array_append(req.messages, answer("", "c98"));
	req.messages = jv_array_append(req.messages, llm_msg_tool_result("c98", "x", false));
	free(body);
	body = built_with(&same, &llm_anthropic, &parts, &req, LLM_PROMPT_CACHE);
	CHECK(same && parts.turns.nmarks > 0);
	poison = parts.turns.text.buf ? strstr(parts.turns.text.buf, "summary") : NULL;
	CHECK(poison != NULL);
	if (poison)
		memcpy(poison, "SUMMARY", 7);
	req.messages = jv_array_append(req.messages, answer("", "c99"));
	req.messages = jv_array_append(req.messages, llm_msg_tool_result("c99", "x", false));
	free(body);
	body = built_with(&same, &llm_anthropic, &parts, &req, LLM_PROMPT_CACHE);
	CHECK(!same && strstr(body, "SUMMARY of the work") != NULL);
	/* a shorter conversation of other messages, an empty one */
	jv_free(req.messages);
	req.messages = jv_array_append(jv_array(), llm_msg_user("new"));
	free(body);
	body = built_with(&same, &llm_anthropic, &parts, &req, LLM_PROMPT_CACHE);
	CHECK_MSG(same, "%s", body);
	jv_free(req.messages);
	req.messages = jv_array();
	free(body);
	body = built_with(&same, &llm_anthropic, &parts, &req, 0);
	CHECK_MSG(same, "%s", body);
	free(body);
	req.system = NULL;
	llm_parts_release(&parts);
	llm_parts_release(&parts);
	llm_request_release(&req);
}

/* The output limit's field by base URL: max_completion_tokens for
 * api.openai.com only; max_tokens for the servers that read only it
 * (Ollama ignores max_completion_tokens: no limit reached it, hunt43 #1). */
static void test_oai_max_field_by_url(void)
{
	static const struct { const char *url; unsigned want; } cases[] = {
		{ "https://api.openai.com/v1", 0 },
		{ "https://API.OpenAI.com:443/v1/", 0 },
		{ "https://user:pw@api.openai.com/v1", 0 },
		{ "http://localhost:11434/v1", LLM_OPENAI_MAX_TOKENS },
		{ "http://127.0.0.1:8000/v1", LLM_OPENAI_MAX_TOKENS },
		{ "https://openrouter.ai/api/v1", LLM_OPENAI_MAX_TOKENS },
		{ "https://api.openai.com.example.net/v1", LLM_OPENAI_MAX_TOKENS },
		{ "https://proxy.example/api.openai.com/v1", LLM_OPENAI_MAX_TOKENS },
		{ "https://api.openai.com@evil.example/v1", LLM_OPENAI_MAX_TOKENS },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
		CHECK_MSG(llm_openai_flags(cases[i].url) == cases[i].want, "%s", cases[i].url);
}

/* The reasoning_content of a body's message (borrowed r); "" when none. */
static const char *sent_reasoning(const struct llm_response *r, jv *keep)
{
	struct llm_request req;
	struct llm_wire w;

	llm_request_init(&req);
	req.messages = jv_array_append(jv_array(), llm_msg_user("hi"));
	req.messages = jv_array_append(req.messages, llm_msg_assistant(r));
	llm_openai.build(&w, NULL, "http://127.0.0.1:1/v1", NULL, "m", &req, 0);
	jv b = json_parse(w.body, w.body_len);
	jv m = json_get(b, "messages");
	jv a = jv_array_get(m, 1);

	*keep = json_get(a, "reasoning_content");
	jv_free(a);
	jv_free(b);
	llm_wire_release(&w);
	llm_request_release(&req);
	return jv_get_kind(*keep) == JV_KIND_STRING ? jv_string_value(*keep) : "";
}

/* DeepSeek's thinking mode: the reasoning_content of an answer, streamed or
 * not, goes back with its turn (the server refuses the next request
 * without it); none is sent when none came (hunt29 #3). */
static void test_oai_reasoning_sent_back(void)
{
	static const char body[] = "{\"id\":\"x\",\"model\":\"deepseek-reasoner\",\"choices\":[{\"index\":0,"
		"\"message\":{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"read it first\","
		"\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"read_file\","
		"\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}],"
		"\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":5}}";
	static const char *const chunks[] = {
		"{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"reasoning_content\":\"think \"}}]}",
		"{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"hard\"}}]}",
		("{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c2\","
		 "\"function\":{\"name\":\"read_file\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}"),
		"[DONE]",
	};
	struct llm_response r;
	struct llm_stream s;
	jv keep;

	llm_response_init(&r);
	CHECK_INT(llm_openai.parse(&r, body, strlen(body)), 0);
	CHECK_STR(r.reasoning, "read it first");
	CHECK_STR(sent_reasoning(&r, &keep), "read it first");
	jv_free(keep);
	llm_response_release(&r);

	llm_response_init(&r);
	llm_stream_init(&s, &r);
	for (size_t i = 0; i < sizeof chunks / sizeof *chunks; i++)
		CHECK_INT(llm_openai.event(&s, NULL, chunks[i], strlen(chunks[i])), 0);
	CHECK_INT(llm_stream_finish(&s), 0);
	llm_stream_release(&s);
	CHECK_STR(r.reasoning, "think hard");
	CHECK_INT(r.ncalls, 1);
	CHECK_STR(sent_reasoning(&r, &keep), "think hard");
	jv_free(keep);
	jv j = llm_response_to_json(&r);
	llm_response_release(&r);
	CHECK_INT(llm_response_from_json(&r, j), 0);   /* cassettes keep it */
	CHECK_STR(r.reasoning, "think hard");
	llm_response_release(&r);

	llm_response_init(&r);
	CHECK(r.reasoning == NULL);
	CHECK_STR(sent_reasoning(&r, &keep), "");
	CHECK(jv_get_kind(keep) == JV_KIND_NULL);   /* no reasoning_content key at all */
	jv_free(keep);
	llm_response_release(&r);
}

/* Streamed text past the cap (64 MiB) fails the answer with a message; it
 * is never kept cut (hunt29). */
static void test_stream_cap(void)
{
	static const char anth[] = "{\"type\":\"content_block_delta\",\"index\":0,"
		"\"delta\":{\"type\":\"text_delta\",\"text\":\"more\"}}";
	static const char oai[] = "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"more\"}}]}";
	const size_t chunk = 1u << 20;
	char *big = xmalloc(chunk);
	struct llm_response r;
	struct llm_stream s;
	int n = 0;

	memset(big, 'x', chunk);
	for (int pass = 0; pass < 2; pass++) {
		llm_response_init(&r);
		llm_stream_init(&s, &r);
		for (n = 0; n < 63; n++)
			CHECK_INT(llm_stream_text(&s, big, chunk), 0);
		CHECK_INT(llm_stream_text(&s, big, chunk - 2), 0);   /* 2 bytes left: "more" passes */
		if (pass == 0)
			CHECK_INT(llm_anthropic.event(&s, "content_block_delta", anth, strlen(anth)), -1);
		else
			CHECK_INT(llm_openai.event(&s, NULL, oai, strlen(oai)), -1);
		CHECK(strstr(forge_last_error(), "larger than 64 MiB") != NULL);
		llm_stream_release(&s);
		llm_response_release(&r);
	}
	free(big);
}

static void test_response_json_roundtrip(void)
{
	const char *in = "{\"text\":\"hi\",\"tool_calls\":[{\"id\":\"c1\",\"name\":\"finish\","
			 "\"input\":{\"ok\":true}}],\"usage\":{\"input_tokens\":3,\"output_tokens\":4}}";
	struct llm_response r;

	CHECK_INT(llm_response_from_json(&r, json_parse(in, strlen(in))), 0);
	CHECK_INT(r.stop, LLM_STOP_TOOL_USE);
	r.cost_known = false;
	jv j = llm_response_to_json(&r);
	CHECK_STR(json_get_str(j, "stop_reason"), "tool_use");
	CHECK(jv_get_kind(json_get(j, "cost_usd")) == JV_KIND_NULL);
	CHECK_INT(json_get_num(j, "output_tokens", 0), 0);
	jv u = json_get(j, "usage");
	CHECK_INT(json_get_num(u, "output_tokens", 0), 4);
	jv_free(u);
	CHECK(jv_get_kind(json_get(j, "rate_limit")) == JV_KIND_NULL);
	jv_free(j);
	llm_response_release(&r);

	/* rate_limit survives a cassette round trip */
	const char *rl = "{\"text\":\"x\",\"rate_limit\":{\"requests_remaining\":7}}";
	CHECK_INT(llm_response_from_json(&r, json_parse(rl, strlen(rl))), 0);
	j = llm_response_to_json(&r);
	jv got = json_get(j, "rate_limit");
	CHECK_INT(json_get_num(got, "requests_remaining", -1), 7);
	jv_free(got);
	jv_free(j);
	llm_response_release(&r);
	llm_response_release(&r);   /* reusable after release */

	/* a call whose arguments did not parse is read back as one: a replay
	 * tells the model why again, as the recorded run did (hunt57 #1) */
	const char *bad = "{\"text\":\"\",\"tool_calls\":[{\"id\":\"t1\",\"name\":\"write_file\","
			  "\"input\":{},\"input_error\":\"tool input is not a JSON object: Unfinished string\"},"
			  "{\"id\":\"t2\",\"name\":\"finish\",\"input\":{}}],\"stop_reason\":\"max_tokens\"}";
	CHECK_INT(llm_response_from_json(&r, json_parse(bad, strlen(bad))), 0);
	CHECK_INT(r.ncalls, 2);
	if (r.ncalls == 2) {
		CHECK_STR(r.calls[0].input_error, "tool input is not a JSON object: Unfinished string");
		CHECK(r.calls[1].input_error == NULL);
	}
	j = llm_response_to_json(&r);
	got = jv_array_get(json_get(j, "tool_calls"), 0);
	CHECK_STR(json_get_str(got, "input_error"), "tool input is not a JSON object: Unfinished string");
	jv_free(got);
	jv_free(j);
	llm_response_release(&r);
}

static void test_event_stream_type(void)
{
	CHECK(llm_is_event_stream("text/event-stream"));
	CHECK(llm_is_event_stream("text/event-stream; charset=utf-8"));
	CHECK(llm_is_event_stream("Text/Event-Stream;charset=UTF-8"));
	CHECK(llm_is_event_stream(" text/event-stream ; charset=utf-8"));
	CHECK(!llm_is_event_stream("application/json"));
	CHECK(!llm_is_event_stream("text/event-streamx"));
	CHECK(!llm_is_event_stream(NULL));
}

int main(void)
{
	RUN(test_url_join);
	RUN(test_anth_stream_basic);
	RUN(test_anth_stream_tool_use);
	RUN(test_anth_stream_refusal);
	RUN(test_oai_stream_text);
	RUN(test_oai_stream_tool);
	RUN(test_oai_stream_parallel_tools);
	RUN(test_anth_context_window_stop);
	RUN(test_oai_stream_whole_calls_without_ids);
	RUN(test_anth_tool_input_at_start);
	RUN(test_anth_nonstream_tool_input_kinds);
	RUN(test_oai_no_choices_billed);
	RUN(test_oai_stream_name_in_pieces);
	RUN(test_calls_named);
	RUN(test_oai_reasoning_sent_back);
	RUN(test_anth_nonstream_tool_loop);
	RUN(test_anth_empty_answer_left_out);
	RUN(test_anth_cache_breakpoints);
	RUN(test_usage_believed_or_not);
	RUN(test_anth_errors);
	RUN(test_oai_nonstream_and_errors);
	RUN(test_oai_build);
	RUN(test_oai_max_field_by_url);
	RUN(test_parts_kept_and_renewed);
	RUN(test_turns_kept);
	RUN(test_response_json_roundtrip);
	RUN(test_event_stream_type);
	RUN(test_stream_cap);
	return unit_done();
}
