/* test_stream.c - the stream contract of DESIGN.md §2 at the library level. */
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "data/schema.h"
#include "data/stream.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A FILE positioned at the start of `text` (len bytes), readable by fd. */
static FILE *input(const char *text, size_t len)
{
	FILE *f = tmpfile();

	fwrite(text, 1, len, f);
	fflush(f);
	lseek(fileno(f), 0, SEEK_SET);
	return f;
}

struct run {
	struct stream_input in;
	struct stream_out out;
	char *mem;
	size_t memlen;
	FILE *memf;
	int rc;
	char err[512];
};

static void run_opts(struct run *r, const char *text, size_t len, struct stream_options *opt)
{
	FILE *f = input(text, len);

	memset(r, 0, sizeof *r);
	stream_input_init(&r->in);
	r->memf = open_memstream(&r->mem, &r->memlen);
	stream_out_init(&r->out, r->memf, "test", NULL);
	r->rc = stream_read(&r->in, f, &r->out, opt);
	snprintf(r->err, sizeof r->err, "%s", forge_last_error());
	fclose(f);
	fflush(r->memf);
}

static void run_text(struct run *r, const char *text)
{
	struct stream_options opt = { .validate = true };

	run_opts(r, text, strlen(text), &opt);
}

static void done(struct run *r)
{
	fclose(r->memf);
	free(r->mem);
	stream_input_release(&r->in);
}

#define EV(id) "{\"kind\":\"event\",\"id\":\"" id "\",\"trace_id\":\"01JDB2AAAAAAAAAAAAAAAAAAAA\"," \
	"\"ts\":\"2026-11-21T21:30:00.123Z\",\"source\":\"t\",\"phase\":null,\"type\":\"x.y\",\"payload\":{}}"
#define ST(status) "{\"kind\":\"state\",\"v\":1,\"trace_id\":\"01JDB2AAAAAAAAAAAAAAAAAAAA\",\"phase\":\"plan\"," \
	"\"status\":\"" status "\",\"task\":{\"description\":\"do it\"}}"

static void test_forwards_events_byte_for_byte(void)
{
	struct run r;
	/* Odd spacing and an escape: forwarded as they were, not re-serialised. */
	const char *ev = "{ \"kind\":\"event\", \"id\":\"01JDB3AAAAAAAAAAAAAAAAAAAA\",\"trace_id\":\"01JDB2AAAAAAAAAAAAAAAAAAAA\","
			 "\"ts\":\"2026-11-21T21:30:00.123Z\",\"source\":\"t\",\"type\":\"x.y\",\"payload\":{\"s\":\"\\u00e9\",\"n\":1.50}}";
	char text[2048];

	snprintf(text, sizeof text, "%s\n" ST("ok") "\n{\"kind\":\"future\",\"x\":1}\n", ev);
	run_text(&r, text);
	CHECK_MSG(r.rc == 0, "%s", r.err);
	char want[2048];
	snprintf(want, sizeof want, "%s\n{\"kind\":\"future\",\"x\":1}\n", ev);
	CHECK_STR(r.mem, want);
	CHECK_STR(json_get_str(r.in.state, "status"), "ok");
	CHECK(r.in.forwarded == 2);
	done(&r);
}

static void test_last_state_wins(void)
{
	struct run r;

	run_text(&r, ST("ok") "\n" EV("01JDB3AAAAAAAAAAAAAAAAAAAB") "\n" ST("rejected") "\n");
	CHECK_MSG(r.rc == 0, "%s", r.err);
	CHECK_STR(json_get_str(r.in.state, "status"), "rejected");
	CHECK_STR(r.in.trace_id, "01JDB2AAAAAAAAAAAAAAAAAAAA");
	done(&r);
}

static void test_bare_task_and_plain_text(void)
{
	struct run r;

	run_text(&r, "{\"task\":\"add a --version flag\"}\n");
	CHECK_MSG(r.rc == 0, "%s", r.err);
	CHECK_STR(json_get_str(r.in.task, "description"), "add a --version flag");
	done(&r);

	run_text(&r, "  fix the crash\nin parse_date\n\n");
	CHECK_MSG(r.rc == 0, "%s", r.err);
	CHECK_STR(json_get_str(r.in.task, "description"), "fix the crash\nin parse_date");
	done(&r);

	/* a task written on Windows: CRLF line ends are LF (before: the \r stayed) */
	run_text(&r, "fix the crash\r\nin parse_date\r\n");
	CHECK_MSG(r.rc == 0, "%s", r.err);
	CHECK_STR(json_get_str(r.in.task, "description"), "fix the crash\nin parse_date");
	done(&r);

	run_text(&r, "{\"task\":\"\"}\n");
	CHECK(r.rc == -1);
	done(&r);
}

static int take_diffs(const char *text, size_t len, void *payload)
{
	(void)payload;
	return len > 10 && strncmp(text, "diff --git", 10) == 0;
}

static void test_raw_hook(void)
{
	struct run r;
	struct stream_options opt = { .raw_hook = take_diffs };
	const char *diff = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n";

	run_opts(&r, diff, strlen(diff), &opt);
	CHECK(r.rc == 0);
	CHECK_STR(jv_string_value(r.in.raw), diff);
	CHECK(jv_get_kind(r.in.task) == JV_KIND_NULL);
	done(&r);
}

/* A diff of many short lines is bounded as a whole (STREAM_RAW_MAX), not
 * as one line: before, the whole text was held to max_line and refused
 * as "line 1: input is longer than the limit" (hunt45 bug 5). */
static void test_raw_text_limits(void)
{
	struct run r;
	struct stream_options opt = { .raw_hook = take_diffs, .max_line = 64, .raw_what = "a diff",
				       .raw_hint = "review it with --commit SHA" };
	struct buf text = BUF_INIT;

	buf_adds(&text, "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,200 +1,200 @@\n");
	for (int i = 0; i < 200; i++)
		buf_addf(&text, "+line %d of the file, under 64 bytes\n", i);
	run_opts(&r, text.buf, text.len, &opt);
	CHECK_MSG(r.rc == 0, "%s", r.err);
	CHECK_INT((long)jv_string_length_bytes(jv_copy(r.in.raw)), (long)text.len);
	done(&r);

	/* a line over max_line is still refused, by its own number (a CRLF
	 * line's CR does not count, as in a record) */
	buf_reset(&text);
	buf_adds(&text, "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n");
	buf_addf(&text, "+%063d\r\n", 0);
	buf_addf(&text, "+%0100d\n+short\n", 0);
	run_opts(&r, text.buf, text.len, &opt);
	CHECK(r.rc == -1);
	CHECK_INT(r.in.error_line, 6);
	CHECK_MSG(strstr(r.err, "a line of the text is longer than the limit of 64 bytes (stream.max_line_bytes)"),
		  "%s", r.err);
	done(&r);
	/* ... also as the last line, without a newline */
	buf_reset(&text);
	buf_adds(&text, "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n+short\n");
	buf_addf(&text, "+%0100d", 1);
	run_opts(&r, text.buf, text.len, &opt);
	CHECK(r.rc == -1);
	CHECK_INT(r.in.error_line, 6);
	done(&r);

	/* past STREAM_RAW_MAX in all: refused, said of the whole text (no
	 * line), with what it is and what to do */
	buf_reset(&text);
	buf_adds(&text, "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n");
	while (text.len <= STREAM_RAW_MAX)
		buf_adds(&text, "+0123456789012345678901234567890123456789012345678901234567890\n");
	run_opts(&r, text.buf, text.len, &opt);
	CHECK(r.rc == -1);
	CHECK_INT(r.in.error_line, 0);
	CHECK_MSG(strstr(r.err, "the text on stdin is longer than the limit of 67108864 bytes (64 MiB) for a "
			 "diff on stdin: review it with --commit SHA"), "%s", r.err);
	done(&r);
	buf_release(&text);
}

static void test_empty_input(void)
{
	struct run r;

	run_text(&r, "");
	CHECK(r.rc == 0 && r.in.empty);
	done(&r);
	run_text(&r, "\n  \n\t\n");
	CHECK(r.rc == 0 && r.in.empty);
	done(&r);
}

static void test_malformed_line_names_line(void)
{
	struct run r;

	run_text(&r, EV("01JDB3AAAAAAAAAAAAAAAAAAAC") "\n{\"kind\": oops}\n" EV("01JDB3AAAAAAAAAAAAAAAAAAAD") "\n");
	CHECK(r.rc == -1);
	CHECK_INT(r.in.error_line, 2);
	CHECK_MSG(strstr(r.err, "malformed JSON") != NULL, "%s", r.err);
	/* The event before the bad line was forwarded, the one after was not read. */
	CHECK_STR(r.mem, EV("01JDB3AAAAAAAAAAAAAAAAAAAC") "\n");
	done(&r);
}

static void test_truncated_last_line(void)
{
	struct run r;

	run_text(&r, EV("01JDB3AAAAAAAAAAAAAAAAAAAE") "\n{\"kind\":\"event\",\"id\":\"01JD");
	CHECK(r.rc == -1);
	CHECK_INT(r.in.error_line, 2);
	CHECK_MSG(strstr(r.err, "truncated last line") != NULL, "%s", r.err);
	done(&r);
	/* A complete record without the final newline is fine. */
	run_text(&r, ST("ok"));
	CHECK_MSG(r.rc == 0, "%s", r.err);
	done(&r);
}

/* Plain text or JSON: what the first line of an input looks like decides
 * (hunt69 #3: "[bug] parser crashes" was malformed JSON, exit 2). */
static void test_looks_like_json(void)
{
	static const char *const json[] = {
		"{\"kind\":\"state\"", "  { \"task\": \"x\"}", "{}", "{ }", "{", "[", "  [  ",
		"[1, 2", "[-1]", "[\"a\"]", "[{\"a\":1}]", "[[]]", "[]", "[ ]", "[true]", "[false, 1]",
		"[null", "\t{\"a\"", "{\r", "[ 0.5 ]",
	};
	static const char *const text[] = {
		"[bug] parser crashes on empty input", "[UI] button misaligned", "{fix} the parser braces",
		"{ fix }", "[WIP] x", "[nullable] fields", "[truest] x", "[falsey]", "[_] x", "[ bug ]",
		"{a: 1}", "{'a': 1}", "fix it", "\"fix the parser\"", "42", "true", "", "   ", "[+1] x",
	};

	for (size_t i = 0; i < sizeof json / sizeof *json; i++)
		CHECK_MSG(stream_looks_like_json(json[i], strlen(json[i])), "JSON: '%s'", json[i]);
	for (size_t i = 0; i < sizeof text / sizeof *text; i++)
		CHECK_MSG(!stream_looks_like_json(text[i], strlen(text[i])), "text: '%s'", text[i]);
	/* the line's length bounds it: "[tru" of "[true]" is no literal */
	CHECK(!stream_looks_like_json("[true]", 4));
	CHECK(stream_looks_like_json("[true]", 5));
}

static void test_text_starting_with_brackets(void)
{
	static const char *const tasks[] = {
		"[bug] parser crashes on empty input", "{fix} the parser braces", "[UI] button misaligned",
	};
	struct run r;
	char in[256];

	for (size_t i = 0; i < sizeof tasks / sizeof *tasks; i++) {
		snprintf(in, sizeof in, "%s\n", tasks[i]);
		run_text(&r, in);
		CHECK_MSG(r.rc == 0, "%s: %s", tasks[i], r.err);
		CHECK_STR(json_get_str(r.in.task, "description"), tasks[i]);
		CHECK_INT(r.in.text_line, 1);
		done(&r);
	}
	/* a text over lines, the first deciding */
	run_text(&r, "\n[bug] crash\n{\"a\": 1} is the input\n");
	CHECK_MSG(r.rc == 0, "%s", r.err);
	CHECK_STR(json_get_str(r.in.task, "description"), "[bug] crash\n{\"a\": 1} is the input");
	done(&r);

	/* a record cut short stays malformed JSON, with the hint */
	run_text(&r, "{\"kind\":\"state\",\"v\":1,\"tra\n");
	CHECK(r.rc == -1);
	CHECK_INT(r.in.error_line, 1);
	CHECK_MSG(strstr(r.err, "malformed JSON") && strstr(r.err, "use --task TEXT"), "%s", r.err);
	done(&r);
	run_text(&r, "[1, 2\n");
	CHECK(r.rc == -1);
	CHECK_MSG(strstr(r.err, "malformed JSON") && strstr(r.err, "plain text starting with [ or {"), "%s",
		  r.err);
	done(&r);
	/* only the first line decides: a later malformed line is an error,
	 * without the hint about text (the stream is JSON) */
	run_text(&r, EV("01JDB3AAAAAAAAAAAAAAAAAAAF") "\n[bug] crash\n");
	CHECK(r.rc == -1);
	CHECK_INT(r.in.error_line, 2);
	CHECK_MSG(strstr(r.err, "malformed JSON") && !strstr(r.err, "use --task"), "%s", r.err);
	done(&r);
	/* "{" alone: said to be pretty-printed JSON, not text */
	run_text(&r, "{\n  \"task\": \"x\"\n}\n");
	CHECK(r.rc == -1);
	CHECK_MSG(strstr(r.err, "use jq -c") && !strstr(r.err, "use --task"), "%s", r.err);
	done(&r);
}

static void test_oversized_line(void)
{
	struct run r;
	struct stream_options opt = { .max_line = 64 };
	char text[512];

	snprintf(text, sizeof text, "{\"task\":\"short\"}\n{\"task\":\"%0200d\"}\n{\"task\":\"after\"}\n", 0);
	run_opts(&r, text, strlen(text), &opt);
	CHECK(r.rc == -1);
	CHECK_INT(r.in.error_line, 2);
	CHECK_MSG(strstr(r.err, "longer than the limit of 64 bytes") != NULL, "%s", r.err);
	done(&r);
}

static void test_invalid_utf8(void)
{
	struct run r;

	run_text(&r, "{\"task\":\"caf\xe9\"}\n");
	CHECK(r.rc == -1);
	CHECK_MSG(strstr(r.err, "invalid UTF-8") != NULL, "%s", r.err);
	done(&r);
	run_text(&r, "plain text with a bad byte \xff\n");
	CHECK(r.rc == -1);
	done(&r);
}

static void test_newer_protocol_refused(void)
{
	struct run r;

	run_text(&r, "{\"kind\":\"state\",\"v\":2,\"trace_id\":\"t\",\"phase\":\"plan\",\"status\":\"ok\",\"task\":{\"description\":\"x\"}}\n");
	CHECK(r.rc == -1);
	CHECK_MSG(strstr(r.err, "protocol version 2") != NULL, "%s", r.err);
	done(&r);
}

static void test_schema_failure_names_path(void)
{
	struct run r;

	run_text(&r, "{\"kind\":\"event\",\"id\":\"01JDB3AAAAAAAAAAAAAAAAAAAF\",\"trace_id\":\"t\",\"ts\":\"2026-11-21T21:30:00.123Z\","
		     "\"source\":\"t\",\"type\":\"x.y\",\"payload\":[]}\n");
	CHECK(r.rc == -1);
	CHECK_MSG(strstr(r.err, ".payload") != NULL, "%s", r.err);
	done(&r);
	run_text(&r, "{\"kind\":\"event\"}\n");
	CHECK(r.rc == -1);
	CHECK_MSG(strstr(r.err, "schema") != NULL, "%s", r.err);
	done(&r);
	run_text(&r, "[1,2]\n");
	CHECK(r.rc == -1);
	CHECK_MSG(strstr(r.err, "expected a JSON object, got array") != NULL, "%s", r.err);
	done(&r);
}

static int count_events(jv rec, const char *line, size_t len, void *payload)
{
	(void)line;
	(void)len;
	if (strcmp(json_get_str(rec, "kind"), "event") != 0)
		return 1;	/* stops the read: the test sees rc != 0 */
	(*(int *)payload)++;
	return 0;
}

static void test_on_record_sees_events_only(void)
{
	struct run r;
	int n = 0;
	struct stream_options opt = { .on_record = count_events, .payload = &n, .forward_states = true };
	const char *text = EV("01JDB3AAAAAAAAAAAAAAAAAAAG") "\n" ST("ok") "\n{\"kind\":\"other\"}\n" EV("01JDB3AAAAAAAAAAAAAAAAAAAH") "\n";

	run_opts(&r, text, strlen(text), &opt);
	CHECK(r.rc == 0);
	CHECK_INT(n, 2);
	CHECK_STR(r.mem, text);
	done(&r);
}

struct routed {
	int scanned, parsed;
};

static int on_scanned(const struct json_event *ev, const char *line, size_t len, void *payload)
{
	(void)line;
	(void)len;
	((struct routed *)payload)->scanned += ev->id_len == 26;
	return 0;
}

static int on_parsed(jv rec, const char *line, size_t len, void *payload)
{
	(void)line;
	(void)len;
	((struct routed *)payload)->parsed += json_get_str(rec, "id") != NULL;
	return 0;
}

/* An event read without libjq goes to on_event; one the scan cannot judge
 * (a duplicate key) through libjq to on_record; all pass through as they
 * were, and a bad one still stops the read. */
static void test_on_event_takes_scanned_events(void)
{
	struct run r;
	struct routed n = { 0, 0 };
	struct stream_options opt = { .on_record = on_parsed, .on_event = on_scanned, .payload = &n,
				      .validate = true, .forward_states = true };
	const char *text = EV("01JDB3AAAAAAAAAAAAAAAAAAAG") "\n" ST("ok") "\n"
			   "{\"kind\":\"event\",\"kind\":\"event\",\"id\":\"01JDB3AAAAAAAAAAAAAAAAAAAH\","
			   "\"trace_id\":\"T2\",\"ts\":\"2026-11-21T10:00:00.000Z\",\"source\":\"x\","
			   "\"type\":\"a.b\",\"payload\":{}}\n" EV("01JDB3AAAAAAAAAAAAAAAAAAAJ") "\n";

	run_opts(&r, text, strlen(text), &opt);
	CHECK(r.rc == 0);
	CHECK_INT(n.scanned, 2);
	CHECK_INT(n.parsed, 1);
	CHECK_STR(r.mem, text);
	done(&r);
	/* a line the scan refuses and libjq too: the same error as before */
	n = (struct routed){ 0, 0 };
	text = EV("01JDB3AAAAAAAAAAAAAAAAAAAG") "\n{\"kind\":\"event\",\"id\":01}x\n";
	run_opts(&r, text, strlen(text), &opt);
	CHECK(r.rc == -1);
	CHECK_MSG(strstr(r.err, "malformed JSON") != NULL, "%s", r.err);
	CHECK_INT(n.scanned, 1);
	done(&r);
	/* an event that fails its schema is refused, never taken the short way */
	text = "{\"kind\":\"event\",\"id\":\"x\"}\n";
	run_opts(&r, text, strlen(text), &opt);
	CHECK(r.rc == -1);
	CHECK_MSG(strstr(r.err, "schema") != NULL, "%s", r.err);
	CHECK_INT(n.scanned + n.parsed, 1);
	done(&r);
}

static void test_event_new_shape(void)
{
	struct stream_out out;
	char *mem = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&mem, &len);

	stream_out_init(&out, f, "forge-test", "test");
	stream_out_set_trace(&out, "01JDB2AAAAAAAAAAAAAAAAAAAA");
	CHECK(stream_emit_full(&out, "test.failed", json_set(jv_object(), "n", jv_number(1)),
			       json_set(json_set(jv_object(), "tokens", jv_number(5)), "usd", jv_number(0.01)), 12) == 0);
	fclose(f);
	jv ev = json_parse(mem, strlen(mem) - 1);
	CHECK(jv_is_valid(ev));
	CHECK_STR(json_get_str(ev, "kind"), "event");
	CHECK_STR(json_get_str(ev, "source"), "forge-test");
	CHECK_STR(json_get_str(ev, "phase"), "test");
	CHECK(ulid_valid(json_get_str(ev, "id")));
	CHECK(json_get_num(ev, "duration_ms", 0) == 12);
	CHECK(strlen(json_get_str(ev, "ts")) == TIMESTAMP_LEN);
	jv_free(ev);
	free(mem);
}

/* Every state status round-trips through its name; others are unknown. */
static void test_state_status(void)
{
	static const char *const names[] = { "ok", "rejected", "escalated", "tripped", "failed", "skipped" };

	for (int i = 0; i < 6; i++) {
		CHECK_INT(state_status_of(names[i]), i);
		CHECK_STR(state_status_name((enum state_status)i), names[i]);
	}
	CHECK_INT(state_status_of("OK"), STATE_UNKNOWN);
	CHECK_INT(state_status_of(NULL), STATE_UNKNOWN);
	CHECK_STR(state_status_name(STATE_UNKNOWN), "unknown");
}

/* A run's first state is one every reader takes, with the task as given. */
static void test_state_initial(void)
{
	jv task = json_set(json_set(jv_object(), "description", jv_string("add mul")),
			   "repo", jv_string("/r"));
	jv st = stream_state_initial("01JDB2AAAAAAAAAAAAAAAAAAAA", task, 2.5);

	CHECK_MSG(stream_state_check(st) == 0, "%s", forge_last_error());
	CHECK_STR(json_get_str(st, "phase"), "init");
	CHECK_STR(json_get_str(st, "status"), "ok");
	CHECK_STR(json_get_str(st, "trace_id"), "01JDB2AAAAAAAAAAAAAAAAAAAA");
	jv t = json_get(st, "task"), b = json_get(st, "bounces"), budget = json_get(st, "budget");
	CHECK_STR(json_get_str(t, "description"), "add mul");
	CHECK_INT(jv_array_length(jv_copy(b)), 0);
	CHECK(json_get_num(budget, "usd", -1) == 2.5 && json_get_num(budget, "remaining_usd", -1) == 2.5);
	jv cost = json_get(st, "cost");
	CHECK(json_get_num(cost, "usd", -1) == 0 && json_get_num(cost, "tokens", -1) == 0);
	jv_free(cost);
	jv_free(t);
	jv_free(b);
	jv_free(budget);
	jv_free(st);
}

/* The event schema's checks written out agree with the validator: whatever
 * they accept, it accepts; and ordinary events take the short way. */
static void test_event_check_agrees_with_schema(void)
{
	static const char base[] =
		"{\"kind\":\"event\",\"id\":\"01JDB3000000000000000000AB\",\"trace_id\":\"01JDB2TRACE\","
		"\"ts\":\"2026-11-21T10:00:00.123Z\",\"source\":\"forge-plan\",\"phase\":\"plan\","
		"\"type\":\"tool.executed\",\"payload\":{\"a\":1},\"cost\":{\"tokens\":3,\"usd\":0.5},\"duration_ms\":4}";
	static const char *const fields[][2] = {
		{ "kind", "\"events\"" }, { "kind", "1" }, { "id", "\"01JDB3000000000000000000AI\"" },
		{ "id", "\"01jdb3000000000000000000ab\"" }, { "id", "\"01JDB300000000000000000AB\"" },
		{ "trace_id", "\"\"" }, { "trace_id", "\"a b\"" }, { "trace_id", "\"t.1:x-_\"" }, { "trace_id", "7" },
		{ "ts", "\"2026-13-21T10:00:00.123Z\"" }, { "ts", "\"2026-11-21T24:00:00.123Z\"" },
		{ "ts", "\"2026-11-21T10:00:60.123Z\"" }, { "ts", "\"2026-11-21T10:00:00Z\"" },
		{ "ts", "\"2026-11-00T10:00:00.123Z\"" }, { "source", "\"\"" }, { "source", "\"é\"" },
		{ "source", "null" }, { "phase", "null" }, { "phase", "3" }, { "type", "\"tool\"" },
		{ "type", "\"Tool.x\"" }, { "type", "\"tool..x\"" }, { "type", "\"tool.x.\"" }, { "type", "\"a.b_c.d9\"" },
		{ "payload", "[]" }, { "payload", "null" }, { "cost", "{}" }, { "cost", "{\"tokens\":1.5}" },
		{ "cost", "{\"tokens\":-1}" }, { "cost", "{\"usd\":null}" }, { "cost", "{\"usd\":-0.1}" },
		{ "cost", "{\"usd\":\"1\"}" }, { "cost", "[]" }, { "duration_ms", "1.0" }, { "duration_ms", "-3" },
		{ "duration_ms", "\"4\"" }, { "extra", "{\"any\":[1]}" },
		/* a sub-agent's events (README "Subagents") */
		{ "span", "\"01JDB3000000000000000000AC\"" }, { "span", "\"01JDB3000000000000000000AI\"" },
		{ "span", "null" }, { "span", "7" }, { "parent_span", "null" },
		{ "parent_span", "\"01JDB3000000000000000000AD\"" }, { "parent_span", "\"short\"" },
		{ "parent_span", "[]" },
	};
	const struct schema *sc = schema_get("event.schema.json");
	jv ev = jv_parse(base);
	int fast = 0;

	CHECK(sc != NULL);
	CHECK_MSG(stream_event_surely_valid(ev), "a plain event is not taken the short way: was "
		  "schemas/event.schema.json changed? Review stream_event_surely_valid() and EVENT_SCHEMA_FNV");
	CHECK(schema_validate(sc, ev) == 0);
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		jv e = json_set(jv_copy(ev), fields[i][0], jv_parse(fields[i][1]));
		bool sure = stream_event_surely_valid(e);
		fast += sure;
		CHECK_MSG(!sure || schema_validate(sc, e) == 0, "%s = %s: %s", fields[i][0], fields[i][1],
			  forge_last_error());
		/* the same of the line, read without libjq */
		jv text = jv_dump_string(jv_copy(e), 0);
		struct json_event scanned;
		bool scan_sure = json_event_scan(&scanned, jv_string_value(text), strlen(jv_string_value(text))) &&
				 stream_event_scan_surely_valid(&scanned);
		jv_free(text);
		CHECK_MSG(!scan_sure || schema_validate(sc, e) == 0, "scanned: %s = %s: %s", fields[i][0],
			  fields[i][1], forge_last_error());
		CHECK_MSG(scan_sure == sure, "%s = %s: scanned %d, parsed %d", fields[i][0], fields[i][1],
			  scan_sure, sure);
		jv_free(e);
	}
	static const char *const required[] = { "kind", "id", "trace_id", "ts", "source", "type", "payload" };
	for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
		jv e = jv_object_delete(jv_copy(ev), jv_string(required[i]));
		CHECK_MSG(!stream_event_surely_valid(e), "without %s", required[i]);
		CHECK(schema_validate(sc, e) < 0);
		jv_free(e);
	}
	CHECK(fast >= 8);
	jv_free(ev);
}

int main(void)
{
	RUN(test_state_status);
	RUN(test_state_initial);
	RUN(test_forwards_events_byte_for_byte);
	RUN(test_last_state_wins);
	RUN(test_bare_task_and_plain_text);
	RUN(test_raw_hook);
	RUN(test_raw_text_limits);
	RUN(test_empty_input);
	RUN(test_malformed_line_names_line);
	RUN(test_truncated_last_line);
	RUN(test_looks_like_json);
	RUN(test_text_starting_with_brackets);
	RUN(test_oversized_line);
	RUN(test_invalid_utf8);
	RUN(test_newer_protocol_refused);
	RUN(test_schema_failure_names_path);
	RUN(test_on_record_sees_events_only);
	RUN(test_on_event_takes_scanned_events);
	RUN(test_event_new_shape);
	RUN(test_event_check_agrees_with_schema);
	return unit_done();
}
