/* test_sse.c - the SSE parser over recorded provider streams and edge cases. */
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/forge.h"
#include "net/sse.h"
#include "unit.h"

struct seen {
	struct buf log;   /* "event|data\n" per event */
	int n;
	int stop_after;
};

static int on_event(void *payload, const char *event, const char *data, size_t len)
{
	struct seen *s = payload;

	s->n++;
	buf_addf(&s->log, "%s|%.*s\n", event, (int)len, data);
	return s->stop_after && s->n >= s->stop_after ? 7 : 0;
}

static char *slurp(const char *path, size_t *len)
{
	struct buf b = BUF_INIT;

	if (buf_read_file(&b, path) < 0) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, len);
}

/* Parse text in chunks of `step` bytes; returns the event log. */
static char *parse(const char *text, size_t len, size_t step, int *count)
{
	struct seen s = { BUF_INIT, 0, 0 };
	struct sse_parser p;

	sse_init(&p, 1 << 20, on_event, &s);
	for (size_t i = 0; i < len; i += step)
		sse_feed(&p, text + i, i + step > len ? len - i : step);
	sse_finish(&p);
	sse_release(&p);
	*count = s.n;
	return buf_detach(&s.log, NULL);
}

static void test_anthropic_fixture_any_split(void)
{
	size_t len;
	char *text = slurp("tests/fixtures/llm/anth_tool_use.sse", &len);
	int n1, n2, n3;

	CHECK(text);
	char *whole = parse(text, len, len, &n1);
	char *bytes = parse(text, len, 1, &n2);
	char *odd = parse(text, len, 7, &n3);
	int ok = n1 == 15 && n2 == n1 && n3 == n1 && !strcmp(whole, bytes) && !strcmp(whole, odd)
		 && !strncmp(whole, "message_start|{\"type\":\"message_start\"",
			     strlen("message_start|{\"type\":\"message_start\""))
		 && strstr(whole, "\nping|{\"type\": \"ping\"}\n");
	free(bytes);
	free(odd);
	free(text);
	free(whole);
	CHECK_MSG(ok, "events %d %d %d", n1, n2, n3);
}

static void test_openai_fixture_done(void)
{
	size_t len;
	char *text = slurp("tests/fixtures/llm/oai_e2aad469b71d.sse", &len);
	int n;

	CHECK(text);
	char *log = parse(text, len, 3, &n);
	int ok = strstr(log, "message|[DONE]\n") != NULL;
	free(log);
	free(text);
	CHECK(ok);
}

static void test_comments_crlf_multiline(void)
{
	const char *in = ": OPENROUTER PROCESSING\r\n\r\n"
			 "event: a\r\ndata: one\r\ndata:two\r\nid: 5\r\nretry: 10\r\n\r\n"
			 "data: x\rdata:  y\r\r"
			 "data\n\n"
			 "event: empty\n\n";
	int n;
	char *log = parse(in, strlen(in), 1, &n);

	CHECK_INT(n, 3);
	CHECK_STR(log, "a|one\ntwo\nmessage|x\n y\nmessage|\n");
	free(log);
}

static void test_unterminated_last_event(void)
{
	const char *in = "data: {\"a\":1}";
	int n;
	char *log = parse(in, strlen(in), 4, &n);

	CHECK_INT(n, 1);
	CHECK_STR(log, "message|{\"a\":1}\n");
	free(log);
}

static void test_stop_and_limit(void)
{
	struct seen s = { BUF_INIT, 0, 1 };
	struct sse_parser p;
	const char *in = "data: 1\n\ndata: 2\n\n";

	sse_init(&p, 16, on_event, &s);
	CHECK_INT(sse_feed(&p, in, strlen(in)), 7);
	sse_release(&p);
	buf_release(&s.log);

	s.stop_after = 0;
	sse_init(&p, 16, on_event, &s);
	CHECK_INT(sse_feed(&p, "data: 0123456789abcdefXYZ\n\n", 27), -1);
	CHECK(strstr(forge_last_error(), "too long") != NULL);
	sse_release(&p);
	buf_release(&s.log);
}

int main(void)
{
	RUN(test_anthropic_fixture_any_split);
	RUN(test_openai_fixture_done);
	RUN(test_comments_crlf_multiline);
	RUN(test_unterminated_last_event);
	RUN(test_stop_and_limit);
	return unit_done();
}
