/* test_jsonscan.c - the strict JSON scanner (core/jsonscan.h): what it
 * accepts libjq accepts, and the fields of an event it reads. */
#include "core/buf.h"
#include "core/json.h"
#include "core/jsonscan.h"
#include "unit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static enum json_scan_kind scan(const char *text)
{
	return json_scan(text, strlen(text), NULL, NULL);
}

/* Whether libjq (json_parse) takes text. */
static bool jq_takes(const char *text, size_t len)
{
	jv v = json_parse(text, len);
	bool ok = jv_is_valid(v);

	jv_free(v);
	return ok;
}

static void test_valid_texts(void)
{
	static const char *const ok[] = {
		"{}", " { } ", "[]", "0", "-0", "1.5e-3", "-12E+4", "true", "false", "null", "\"\"",
		"{\"a\":[1,{\"b\":null}],\"c\":\"x\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\"}",
		"\"\\ud83d\\ude00\"", "\"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"", "[1, 2 ,3]\n",
		"\"\x7f\"", "1e999",
	};

	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		CHECK_MSG(scan(ok[i]) != JSON_SCAN_INVALID, "refused: %s", ok[i]);
		CHECK_MSG(jq_takes(ok[i], strlen(ok[i])), "libjq refuses: %s", ok[i]);
	}
	CHECK_INT(scan("{\"a\":1}"), JSON_SCAN_OBJECT);
	CHECK_INT(scan("[1]"), JSON_SCAN_ARRAY);
	CHECK_INT(scan("\"s\""), JSON_SCAN_STRING);
	CHECK_INT(scan("-1"), JSON_SCAN_NUMBER);
}

/* Malformed text, and text libjq 1.6 takes but RFC 8259 does not. */
static void test_invalid_texts(void)
{
	static const char *const bad[] = {
		"", " ", "{", "}", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "[1,]", "[1 2]", "{\"a\" \"b\"}",
		"{a:1}", "{'a':1}", "01", "1.", ".5", "+1", "-", "1e", "1e+", "nan", "NaN", "-nan",
		"tru", "nul", "True", "{} {}", "[] x", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\u12g4\"",
		"\"a\tb\"", "\"a\nb\"", "\"\\ud800\"", "\"\\ud800x\"", "\"\\ud800\\u0041\"", "\"\\udc00\"",
		"\"\xff\"", "\"\xc0\xaf\"", "\"\xe0\x80\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"",
		"\"\xc3\"", "\xc3\xa9", "[1]]", "{\"a\":1}}",
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK_MSG(scan(bad[i]) == JSON_SCAN_INVALID, "taken: %s", bad[i]);
	/* a NUL byte is no white space */
	CHECK(json_scan("{}\0", 3, NULL, NULL) == JSON_SCAN_INVALID);
	CHECK(json_scan("\"a\0b\"", 5, NULL, NULL) == JSON_SCAN_INVALID);
}

/* Nesting: an array counts 1, an object 2, up to JSON_SCAN_MAX_DEPTH;
 * whatever is taken, libjq (limit 256 by the same count) takes too. */
static void test_depth(void)
{
	char text[4096];

	for (int depth = 1; depth <= 200; depth++) {
		size_t n = 0;
		for (int i = 0; i < depth; i++)
			text[n++] = '[';
		for (int i = 0; i < depth; i++)
			text[n++] = ']';
		bool taken = json_scan(text, n, NULL, NULL) == JSON_SCAN_ARRAY;
		CHECK_MSG(taken == (depth <= JSON_SCAN_MAX_DEPTH), "arrays %d deep", depth);
		if (taken)
			CHECK(jq_takes(text, n));
	}
	for (int depth = 1; depth <= 100; depth++) {
		size_t n = 0;
		for (int i = 0; i < depth; i++)
			n += (size_t)snprintf(text + n, sizeof text - n, "{\"a\":");
		text[n++] = '1';
		for (int i = 0; i < depth; i++)
			text[n++] = '}';
		bool taken = json_scan(text, n, NULL, NULL) == JSON_SCAN_OBJECT;
		CHECK_MSG(taken == (2 * depth <= JSON_SCAN_MAX_DEPTH), "objects %d deep", depth);
		if (taken)
			CHECK(jq_takes(text, n));
	}
	/* json_scan_depth: another limit by the same count (a schema's text) */
	for (int depth = 1; depth <= 1100; depth += 99) {
		size_t n = 0;
		for (int i = 0; i < depth; i++)
			text[n++] = '[';
		for (int i = 0; i < depth; i++)
			text[n++] = ']';
		CHECK(json_scan_depth(text, n, 1000) == (depth <= 1000 ? JSON_SCAN_ARRAY : JSON_SCAN_INVALID));
		CHECK(json_scan_depth(text, n, depth) == JSON_SCAN_ARRAY);
		CHECK(json_scan_depth(text, n, depth - 1) == JSON_SCAN_INVALID);
	}
}

struct members {
	int n;
	char keys[8][16];
	enum json_scan_kind kinds[8];
	char values[8][32];
};

static void note_member(const struct json_member *m, void *payload)
{
	struct members *ms = payload;

	if (ms->n < 8) {
		snprintf(ms->keys[ms->n], sizeof ms->keys[0], "%.*s", (int)m->key_len, m->key);
		snprintf(ms->values[ms->n], sizeof ms->values[0], "%.*s", (int)m->value_len, m->value);
		ms->kinds[ms->n] = m->kind;
	}
	ms->n++;
}

/* The top-level members, in order, duplicates included; nested ones not. */
static void test_members(void)
{
	const char *text = " {\"a\" : \"x\\\"y\" , \"b\":{\"c\":1},\"a\":[true] ,\"d\":-2.5e1}";
	struct members ms = { .n = 0 };

	CHECK_INT(json_scan(text, strlen(text), note_member, &ms), JSON_SCAN_OBJECT);
	CHECK_INT(ms.n, 4);
	CHECK_STR(ms.keys[0], "a");
	CHECK_STR(ms.values[0], "x\\\"y");
	CHECK_INT(ms.kinds[0], JSON_SCAN_STRING);
	CHECK_STR(ms.keys[1], "b");
	CHECK_STR(ms.values[1], "{\"c\":1}");
	CHECK_INT(ms.kinds[1], JSON_SCAN_OBJECT);
	CHECK_STR(ms.values[2], "[true]");
	CHECK_STR(ms.values[3], "-2.5e1");
	CHECK_INT(ms.kinds[3], JSON_SCAN_NUMBER);
}

#define EVENT_HEAD "{\"kind\":\"event\",\"id\":\"01JDB3AAAAAAAAAAAAAAAAAAAA\",\"trace_id\":\"T\"," \
	"\"ts\":\"2026-01-01T00:00:00.000Z\",\"source\":\"s\",\"type\":\"a.b\""

static bool event_scan(struct json_event *ev, const char *line)
{
	return json_event_scan(ev, line, strlen(line));
}

static void test_event_fields(void)
{
	const char *line = EVENT_HEAD ",\"phase\":\"plan\",\"payload\":{\"k\":\"v\"},\"extra\":[1],"
			   "\"cost\":{\"tokens\":1234,\"usd\":0.5,\"other\":\"x\"},\"duration_ms\":812}";
	struct json_event ev;

	CHECK(event_scan(&ev, line));
	CHECK(ev.kind_len == 5 && memcmp(ev.kind, "event", 5) == 0);
	CHECK(ev.id_len == 26 && memcmp(ev.id, "01JDB3", 6) == 0);
	CHECK(ev.trace_id_len == 1 && *ev.trace_id == 'T');
	CHECK(ev.ts_len == 24);
	CHECK(ev.type_len == 3 && memcmp(ev.type, "a.b", 3) == 0);
	CHECK(ev.phase_kind == JSON_SCAN_STRING && ev.phase_len == 4);
	CHECK(ev.payload_object && ev.payload_len == 9 && memcmp(ev.payload, "{\"k\":\"v\"}", 9) == 0);
	CHECK(ev.has_tokens && ev.tokens == 1234);
	CHECK(ev.has_usd && ev.usd == 0.5);
	CHECK(ev.has_duration && ev.duration_ms == 812);
	/* absent and null */
	CHECK(event_scan(&ev, EVENT_HEAD ",\"phase\":null,\"payload\":null,\"cost\":{\"usd\":null}}"));
	CHECK(ev.phase_kind == JSON_SCAN_NULL && !ev.phase);
	CHECK(!ev.payload && !ev.has_tokens && ev.has_usd && isnan(ev.usd) && !ev.has_duration);
	CHECK(event_scan(&ev, "{\"payload\":\"s\"}"));
	CHECK(!ev.payload_object && ev.payload_len == 3 && memcmp(ev.payload, "\"s\"", 3) == 0);
	CHECK(event_scan(&ev, "{}"));
	CHECK(!ev.id && ev.phase_kind == JSON_SCAN_INVALID);
	/* a field that is not a string: NULL, for the caller to judge */
	CHECK(event_scan(&ev, "{\"id\":5,\"type\":[\"a\"]}"));
	CHECK(!ev.id && !ev.type);
}

/* What libjq would read otherwise is left to libjq. */
static void test_event_left_to_libjq(void)
{
	static const char *const odd[] = {
		EVENT_HEAD ",\"type\":\"c.d\"}",                 /* a duplicate key: libjq keeps the last */
		EVENT_HEAD ",\"p\\u0061yload\":{}}",              /* a key written with an escape */
		"{\"id\":\"a\\u0062\"}",                          /* a field written with an escape */
		EVENT_HEAD ",\"duration_ms\":1.0}",               /* not a plain integer */
		EVENT_HEAD ",\"duration_ms\":-1}",
		EVENT_HEAD ",\"duration_ms\":1000000000000000}",  /* 10^15 */
		EVENT_HEAD ",\"cost\":{\"tokens\":1e3}}",
		EVENT_HEAD ",\"cost\":{\"tokens\":1,\"tokens\":2}}",
		EVENT_HEAD ",\"cost\":{\"usd\":\"1\"}}",
		EVENT_HEAD ",\"cost\":[]}",
		EVENT_HEAD ",\"payload\":{\"n\":01}}",            /* libjq takes it; RFC 8259 does not */
		"[1]", "\"event\"", "{\"kind\":\"event\"",
	};
	struct json_event ev;

	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++)
		CHECK_MSG(!event_scan(&ev, odd[i]), "read: %s", odd[i]);
	/* an escape in the payload is the payload's business */
	CHECK(event_scan(&ev, EVENT_HEAD ",\"payload\":{\"k\":\"\\u00e9\"}}"));
}

/*
 * Strings are read 8 bytes a step: a byte that is not plain ASCII (a
 * quote, a backslash, a control character, UTF-8, a byte that is not
 * UTF-8) is found at every place in and across those steps, and the
 * answer is libjq's (and the byte-by-byte reading's) at each.
 */
static void test_string_steps(void)
{
	static const struct { const char *bytes; bool valid; } odd[] = {
		{ "\\n", true }, { "\\u00e9", true }, { "\\\"", true }, { "\xc3\xa9", true },
		{ "\xe2\x82\xac", true }, { "\xf0\x9f\x98\x80", true }, { "\x7f", true }, { " ", true },
		{ "\x01", false }, { "\x1f", false }, { "\n", false }, { "\xc3", false },
		{ "\x80", false }, { "\xff", false }, { "\xc0\xaf", false }, { "\\x", false },
		{ "\xed\xa0\x80", false },
	};
	char text[64];

	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
		for (int at = 0; at <= 20; at++) {
			for (int after = 0; after <= 9; after += 3) {
				int n = snprintf(text, sizeof text, "\"%.*s%s%.*s\"", at,
						 "abcdefghijklmnopqrstuvwxyz", odd[i].bytes, after, "ABCDEFGHIJ");
				bool escaped = false;
				const char *past = json_scan_string(text, text + n, &escaped);

				CHECK_MSG((json_scan(text, (size_t)n, NULL, NULL) == JSON_SCAN_STRING) == odd[i].valid,
					  "odd byte %zu at %d, %d after: %s", i, at, after, text);
				CHECK_MSG(!odd[i].valid || past == text + n, "not past the string: %s", text);
				CHECK_MSG(!odd[i].valid || escaped == (odd[i].bytes[0] == '\\'), "escape: %s", text);
				if (odd[i].valid)
					CHECK_MSG(jq_takes(text, (size_t)n), "libjq refuses: %s", text);
			}
			/* the closing quote, and a string cut short, at every place */
			int n = snprintf(text, sizeof text, "\"%.*s\"", at, "abcdefghijklmnopqrstuvwxyz");
			CHECK_MSG(json_scan(text, (size_t)n, NULL, NULL) == JSON_SCAN_STRING, "refused: %s", text);
			CHECK_MSG(json_scan(text, (size_t)n - 1, NULL, NULL) == JSON_SCAN_INVALID, "took: %.*s", n - 1, text);
		}
	}
}

/* json_scan's members as note_skim writes them: a string with its quotes. */
static void note_scan(const struct json_member *m, void *payload)
{
	const char *q = m->kind == JSON_SCAN_STRING ? "\"" : "";

	buf_addf(payload, "%.*s=%s%.*s%s;", (int)m->key_len, m->key, q, (int)m->value_len, m->value, q);
}

/* json_skim_members: "key=value;" for each member. */
static void note_skim(const char *key, size_t key_len, const char *value, size_t value_len,
		      void *payload)
{
	struct buf *b = payload;

	buf_addf(b, "%.*s=%.*s;", (int)key_len, key, (int)value_len, value);
}

static int skim(struct buf *out, const char *text, size_t len)
{
	buf_reset(out);
	return json_skim_members(text, len, note_skim, out);
}

/* The skimmer finds what the strict scanner finds on valid text, strings
 * holding quotes, brackets and backslashes included; text not shaped like
 * an object, or not followed by a NUL, is refused. */
static void test_skim_members(void)
{
	static const char *const texts[] = {
		"{}", " { } ",
		"{\"a\":1,\"b\":\"x\",\"c\":null,\"d\":true,\"e\":-1.5e3}",
		"{\"a\":{\"x\":[1,{\"y\":\"}]\"}],\"z\":\"{\"},\"b\":[]}",
		"{\"k\\\"ey\":\"v\\\\\",\"n\":\"a\\\\\\\"]}\"}",
		"{\n  \"s\": {\n    \"$comment\": \"[not {a} bracket\",\n    \"v\": [ 1 , 2 ]\n  } ,\n  \"t\" : 0\n}\n",
	};
	struct buf got = BUF_INIT;

	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		struct buf want = BUF_INIT;

		CHECK_MSG(json_scan(texts[i], strlen(texts[i]), NULL, NULL) == JSON_SCAN_OBJECT, "%s", texts[i]);
		CHECK_MSG(skim(&got, texts[i], strlen(texts[i])) == 0, "%s", texts[i]);
		/* json_scan's members, with a string's quotes put back */
		json_scan(texts[i], strlen(texts[i]), note_scan, &want);
		CHECK_MSG(strcmp(got.len ? got.buf : "", want.len ? want.buf : "") == 0, "%s: %s vs %s",
			  texts[i], got.buf, want.buf);
		buf_release(&want);
	}
	const char *t = "{\"a\":[1,{\"b\":\"]\"}],\"c\":\"x\\\"y\"}";

	CHECK(skim(&got, t, strlen(t)) == 0);
	CHECK_STR(got.buf, "a=[1,{\"b\":\"]\"}];c=\"x\\\"y\";");
	CHECK(skim(&got, "[1]", 3) == -1);
	CHECK(skim(&got, "{\"a\" 1}", 7) == -1);
	CHECK(skim(&got, "{\"a\":[1}", 8) == -1);       /* an unclosed bracket */
	CHECK(skim(&got, "{\"a\":\"x}", 8) == -1);      /* an unclosed string */
	CHECK(skim(&got, "{\"a\":1 \"b\":2}", 13) == -1);
	CHECK(skim(&got, "{}x", 2) == -1);            /* not followed by a NUL */
	CHECK(skim(&got, "{\"a\":[\0]}", 8) == -1);     /* a NUL inside */
	buf_release(&got);
}

/* json_skim_elements: "value;" for each element. */
static void note_element(const char *value, size_t value_len, void *payload)
{
	buf_addf(payload, "%.*s;", (int)value_len, value);
}

static int skim_elements(struct buf *out, const char *text, size_t len)
{
	buf_reset(out);
	return json_skim_elements(text, len, note_element, out);
}

static void test_skim_elements(void)
{
	struct buf got = BUF_INIT;
	const char *t = " [1, \"a]\\\"\", {\"b\":[2,\"]\"]}, [[]] , null ] ";

	CHECK(skim_elements(&got, t, strlen(t)) == 0);
	CHECK_STR(got.buf, "1;\"a]\\\"\";{\"b\":[2,\"]\"]};[[]];null;");
	CHECK(skim_elements(&got, "[]", 2) == 0 && got.len == 0);
	CHECK(skim_elements(&got, "{}", 2) == -1);
	CHECK(skim_elements(&got, "[1,]", 4) == -1);
	CHECK(skim_elements(&got, "[1 2]", 5) == -1);
	CHECK(skim_elements(&got, "[[1]", 4) == -1);
	CHECK(skim_elements(&got, "[1]x", 3) == -1);            /* not followed by a NUL */
	buf_release(&got);
}

/* json_nesting counts as libjq does (an array 1, an object 2), brackets in
 * strings skipped, on any text. */
static void test_nesting(void)
{
	CHECK_INT(json_nesting("1", 1), 0);
	CHECK_INT(json_nesting("[[[]]]", 6), 3);
	CHECK_INT(json_nesting("{\"a\":[{}]}", 10), 5);
	CHECK_INT(json_nesting("[\"[[[\\\"[[\"]", 11), 1);
	CHECK_INT(json_nesting("]]][[", 5), 2);                  /* not JSON: its brackets as they stand */
	struct buf b = BUF_INIT;
	for (int i = 0; i < 300; i++)
		buf_addch(&b, '[');
	for (int i = 0; i < 300; i++)
		buf_addch(&b, ']');
	CHECK_INT(json_nesting(b.buf, b.len), 300);
	buf_release(&b);
}

int main(void)
{
	RUN(test_valid_texts);
	RUN(test_invalid_texts);
	RUN(test_depth);
	RUN(test_members);
	RUN(test_event_fields);
	RUN(test_event_left_to_libjq);
	RUN(test_string_steps);
	RUN(test_skim_members);
	RUN(test_skim_elements);
	RUN(test_nesting);
	return unit_done();
}
