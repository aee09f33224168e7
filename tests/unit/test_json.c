/* test_json.c - jv helpers, UTF-8 validation, buffers, ids. */
#include "core/buf.h"
#include "core/forge.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/resource.h"
#include "core/tokens.h"
#include "unit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void test_get_helpers(void)
{
	const char *text = "{\"a\":{\"b\":\"x\",\"n\":3,\"t\":true}}";
	jv o = json_parse(text, strlen(text));

	CHECK(jv_is_valid(o));
	jv a = json_get(o, "a");
	CHECK_STR(json_get_str(a, "b"), "x");
	CHECK(json_get_num(a, "n", 0) == 3);
	CHECK(json_get_num(a, "missing", 7) == 7);
	CHECK(json_get_bool(a, "t", false));
	CHECK(json_get_str(a, "n") == NULL);
	CHECK(json_has(a, "b") && !json_has(a, "zz"));
	jv p = json_get_path(o, "a.b");
	CHECK_STR(jv_string_value(p), "x");
	jv_free(p);
	p = json_get_path(o, "a.nope.deeper");
	CHECK(jv_get_kind(p) == JV_KIND_NULL);
	jv_free(p);
	/* Borrowing: o and a are still usable and freed once each. */
	CHECK(json_get_str(o, "a") == NULL);
	jv_free(a);
	jv_free(o);
}

static void test_parse_errors_are_short(void)
{
	const char *bad = "{\"a\": tru";
	jv v = json_parse(bad, strlen(bad));

	CHECK(!jv_is_valid(v));
	char *m = json_invalid_msg(v);
	CHECK_MSG(strstr(m, "while parsing") == NULL, "message repeats the input: %s", m);
	free(m);
}

/*
 * Found by fuzz_stream: libjq 1.6 leaks a string that follows a value in a
 * container with no separator; json_parse() gives jq's message without
 * letting it parse that far (the ASan build checks for the leak).  An
 * earlier error is still the one reported.
 */
static void test_parse_separator_without_leak(void)
{
	static const struct { const char *in, *want; } cases[] = {
		{ "[\"a\" \"b\"]", "Expected separator between values at line 1, column 8" },
		{ "{\"a\" \"b\"}", "Expected separator between values at line 1, column 8" },
		{ "[{\"x\":1} \"y\"]", "Expected separator between values at line 1, column 12" },
		{ "[\"a\\\"\" \"b\"]", "Expected separator between values at line 1, column 10" },
		{ "[1,\n  2 \"x\"]", "Expected separator between values at line 2, column 7" },
		{ "[tru \"a\"]", "Invalid literal at line 1, column 5" },
		{ "[1 2 \"a\"]", "Expected separator between values at line 1, column 5" },
		{ "\"a\" \"b\"", "Unexpected extra JSON values: a second value begins at line 1, column 5 "
				   "(one JSON value is expected)" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		jv v = json_parse(cases[i].in, strlen(cases[i].in));
		CHECK(!jv_is_valid(v));
		char *m = json_invalid_msg(v);
		CHECK_STR(m, cases[i].want);
		free(m);
	}
}

/* Two values where one is expected (a config file "{} {}", or one object
 * per line): where the second begins, as jq says where its other errors
 * are (before: "Unexpected extra JSON values" and no place). */
static void test_parse_extra_values_where(void)
{
	static const struct { const char *in, *want; } cases[] = {
		{ "{} {}", "line 1, column 4" },
		{ "{\"a\":1}\n{\"b\":2}\n", "line 2, column 1" },
		{ "{\n  \"a\": [1, 2]\n}\n\n   [3]\n", "line 5, column 4" },
		{ "1 2", "line 1, column 3" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		jv v = json_parse(cases[i].in, strlen(cases[i].in));
		CHECK(!jv_is_valid(v));
		char *m = json_invalid_msg(v);
		char want[160];

		snprintf(want, sizeof want, "Unexpected extra JSON values: a second value begins at %s "
			 "(one JSON value is expected)", cases[i].want);
		CHECK_STR(m, want);
		free(m);
	}
}

static void test_utf8(void)
{
	CHECK(json_utf8_valid("plain", 5));
	CHECK(json_utf8_valid("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9));
	CHECK(!json_utf8_valid("\xc3", 1));             /* truncated */
	CHECK(!json_utf8_valid("\xc0\xaf", 2));         /* overlong */
	CHECK(!json_utf8_valid("\xed\xa0\x80", 3));     /* surrogate */
	CHECK(!json_utf8_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
	CHECK(!json_utf8_valid("\xff", 1));
	jv v = json_parse("\"\xff\"", 3);
	CHECK(!jv_is_valid(v));
	char *m = json_invalid_msg(v);
	CHECK_STR(m, "invalid UTF-8");
	free(m);
}

static void test_write_line(void)
{
	char *mem = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&mem, &len);

	CHECK(json_write_line(f, json_set(json_set(jv_object(), "b", jv_number(1)), "a", jv_null()), true) == 0);
	fclose(f);
	CHECK_STR(mem, "{\"a\":null,\"b\":1}\n");
	free(mem);
}

static void test_buf_limit(void)
{
	struct buf b;

	buf_init(&b, 8);
	CHECK(buf_adds(&b, "12345") == 0);
	CHECK(buf_adds(&b, "6789") == -1);
	CHECK_STR(b.buf, "12345");
	CHECK(buf_addf(&b, "%d", 678) == 0);
	CHECK_STR(b.buf, "12345678");
	size_t n;
	char *s = buf_detach(&b, &n);
	CHECK(n == 8 && b.len == 0 && b.buf[0] == '\0');
	free(s);
	buf_release(&b);
}

/* A file's name as git shows it: as it is, or C-quoted when it holds a
 * control character, '"' or '\\' -- one name reads as one, on one line. */
static void test_path_quoted(void)
{
	static const struct { const char *in, *want; } cases[] = {
		{ "src/calc.c", "src/calc.c" },
		{ "with space.txt", "with space.txt" },
		{ "caf\xc3\xa9.c", "caf\xc3\xa9.c" },          /* UTF-8 as it is (core.quotePath false) */
		{ "a\nb", "\"a\\nb\"" },
		{ "tab\there\r", "\"tab\\there\\r\"" },
		{ "bell\a\b\v\f", "\"bell\\a\\b\\v\\f\"" },
		{ "esc\x1b[31m", "\"esc\\033[31m\"" },
		{ "del\x7f", "\"del\\177\"" },
		{ "c1\xc2\x9b" "x", "\"c1\\302\\233x\"" },        /* CSI as UTF-8 encodes it */
		{ "say \"hi\"", "\"say \\\"hi\\\"\"" },
		{ "back\\slash", "\"back\\\\slash\"" },
		/* bytes that are not UTF-8 (a Latin-1 name, a cut or overlong
		 * sequence, a surrogate): quoted, not turned into U+FFFD */
		{ "caf\xe9.txt", "\"caf\\351.txt\"" },
		{ "x\xc3", "\"x\\303\"" },
		{ "\xc0\xaf\xed\xa0\x80", "\"\\300\\257\\355\\240\\200\"" },
		{ "\xf0\x9f\x98\x80.md", "\xf0\x9f\x98\x80.md" },
		{ "\"caf\\351.txt\"", "\"\\\"caf\\\\351.txt\\\"\"" },
	};
	struct buf b;

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *q = buf_path_quoted(cases[i].in), *back = buf_path_unquoted(q);
		jv j = json_path(cases[i].in);

		CHECK_STR(q, cases[i].want);
		CHECK(buf_path_needs_quotes(cases[i].in) == (strcmp(cases[i].in, cases[i].want) != 0));
		/* nothing is lost: the quoted name reads back as the name */
		CHECK_STR(back, cases[i].in);
		/* JSON: as it is when it is UTF-8 and does not start with '"' */
		CHECK_STR(jv_string_value(j), cases[i].in[0] != '"' &&
			  json_utf8_valid(cases[i].in, strlen(cases[i].in)) ? cases[i].in : cases[i].want);
		jv_free(j);
		free(back);
		free(q);
	}
	/* what is not a whole quoted name is a name as it is */
	static const char *const as_is[] = { "plain", "\"open", "\"a\"b\"", "\"bad\\q\"", "\"nul\\000\"",
					     "\"\\9\"", "x\"y\"" };
	for (size_t i = 0; i < sizeof as_is / sizeof *as_is; i++) {
		char *back = buf_path_unquoted(as_is[i]);
		CHECK_STR(back, as_is[i]);
		free(back);
	}
	CHECK(buf_path_unquoted(NULL) == NULL);
	/* over the buffer's limit: nothing half-quoted is left */
	buf_init(&b, 6);
	CHECK(buf_adds(&b, "x ") == 0);
	CHECK(buf_add_path_quoted(&b, "a\nb") == -1);
	CHECK_STR(b.buf, "x ");
	buf_release(&b);
}

static void test_ulid_monotonic(void)
{
	char prev[ULID_LEN + 1], cur[ULID_LEN + 1];

	ulid_new(prev);
	CHECK(ulid_valid(prev));
	for (int i = 0; i < 10000; i++) {
		ulid_new(cur);
		CHECK_MSG(strcmp(prev, cur) < 0, "%s !< %s", prev, cur);
		memcpy(prev, cur, sizeof cur);
	}
	CHECK(!ulid_valid("not-a-ulid"));
	CHECK(!ulid_valid("01JDB3ZZZZZZZZZZZZZZZZZZZI"));   /* I is not Crockford */
}

/* The random part of ids made in new milliseconds (each a fresh draw):
 * none the same, and a forked child draws none of its parent's (the
 * random bytes are fetched ahead for several ids). */
static void next_ms(void)
{
	int64_t ms = now_ms();

	while (now_ms() == ms) {
		struct timespec ts = { 0, 100000 };
		nanosleep(&ts, NULL);
	}
}

static void test_ulid_random_fresh(void)
{
	enum { N = 40 };
	char mine[N][ULID_LEN + 1], theirs[N][ULID_LEN + 1];
	int fds[2];
	pid_t pid;

	ulid_new(mine[0]);	/* the parent has bytes fetched ahead */
	CHECK(pipe(fds) == 0);
	pid = fork();
	if (pid == 0) {
		for (int i = 0; i < N; i++) {
			next_ms();
			ulid_new(theirs[i]);
		}
		_exit(write(fds[1], theirs, sizeof theirs) == (ssize_t)sizeof theirs ? 0 : 1);
	}
	CHECK(pid > 0);
	for (int i = 0; i < N; i++) {
		next_ms();
		ulid_new(mine[i]);
	}
	CHECK(read(fds[0], theirs, sizeof theirs) == (ssize_t)sizeof theirs);
	close(fds[0]);
	close(fds[1]);
	waitpid(pid, NULL, 0);
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++) {
			CHECK_MSG(memcmp(mine[i] + 10, theirs[j] + 10, 16) != 0, "%s and %s", mine[i], theirs[j]);
			CHECK_MSG(i == j || memcmp(mine[i] + 10, mine[j] + 10, 16) != 0, "%s and %s", mine[i],
				  mine[j]);
		}
}

static void test_timestamp(void)
{
	char ts[TIMESTAMP_LEN + 1];

	timestamp_format(ts, 1795296600123LL);
	CHECK_STR(ts, "2026-11-21T21:30:00.123Z");
	timestamp_format(ts, 0);
	CHECK_STR(ts, "1970-01-01T00:00:00.000Z");
	/* out of range (a database written by hand): the nearest end, not an abort */
	timestamp_format(ts, TIMESTAMP_MAX_MS);
	CHECK_STR(ts, "9999-12-31T23:59:59.999Z");
	timestamp_format(ts, TIMESTAMP_MAX_MS + 1);
	CHECK_STR(ts, "9999-12-31T23:59:59.999Z");
	timestamp_format(ts, INT64_MAX);
	CHECK_STR(ts, "9999-12-31T23:59:59.999Z");
	timestamp_format(ts, -5);
	CHECK_STR(ts, "1970-01-01T00:00:00.000Z");
	int64_t ms;
	CHECK(timestamp_parse(&ms, "2026-11-21T21:30:00.123Z") == 0 && ms == 1795296600123LL);
	CHECK(timestamp_parse(&ms, "2026-11-21T21:30:00Z") == 0 && ms == 1795296600000LL);
	CHECK(timestamp_parse(&ms, "2026-11-21 21:30") == -1);
	CHECK(timestamp_parse(&ms, NULL) == -1);
}

static void test_parse_long(void)
{
	long v;

	CHECK(forge_parse_long(&v, "42", 0, 100) == 0 && v == 42);
	CHECK(forge_parse_long(&v, "4x", 0, 100) == -1);
	CHECK(strstr(forge_last_error(), "'4x'") != NULL);
	CHECK(forge_parse_long(&v, "101", 0, 100) == -1);
	CHECK(forge_parse_long(&v, "", 0, 100) == -1);
}

static void test_path_parent(void)
{
	static const char *const cases[][2] = {
		{ "/a/b", "/a" }, { "/a/b/", "/a" }, { "/a//b", "/a" }, { "/a", "/" }, { "//a", "/" },
		{ "/", "/" }, { "a", "." }, { "a/b", "a" }, { "", "." },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *p = path_parent(cases[i][0]);
		CHECK_STR(p, cases[i][1]);
		free(p);
	}
}

/* json_dumps writes what jq's jv_dump_string writes: escapes, numbers,
 * nesting, insertion and sorted key order. */
static void test_dumps_as_jq(void)
{
	static const char *const texts[] = {
		"null", "true", "false", "0", "-0", "1", "-42", "10", "100000", "-100000", "1000000", "1200000",
		"120000000", "-1000000", "123456789012345", "1e16", "99999999999999999",
		"1e17", "1e300", "-1e-300", "0.1", "1.5", "0.0001", "0.00001", "3.141592653589793",
		"1.7976931348623157e308", "\"\"", "\"plain\"", "\"q\\\"b\\\\s/\"",
		"\"\\u0000\\u0001\\b\\f\\n\\r\\t\\u001f\\u007f \\u0080\"",
		"\"h\u00e9llo \u2603 \\ud83d\\ude00\"", "[]", "{}", "[1,[2,[3,{}]],\"x\"]",
		"{\"b\":1,\"a\":{\"d\":[true,null],\"c\":\"\\n\"},\"\":0,\"B\":2}",
	};

	for (size_t i = 0; i < sizeof(texts) / sizeof(*texts); i++) {
		for (int sorted = 0; sorted < 2; sorted++) {
			jv v = json_parse(texts[i], strlen(texts[i]));
			jv want;
			char *got;

			CHECK_MSG(jv_is_valid(v), "%s", texts[i]);
			want = jv_dump_string(jv_copy(v), sorted ? JV_PRINT_SORTED : 0);
			got = json_dumps(v, sorted);
			CHECK_MSG(!strcmp(got, jv_string_value(want)), "%s: got %s, jq %s", texts[i], got,
				  jv_string_value(want));
			free(got);
			jv_free(want);
		}
	}
}

/* Strings print as jq prints them with the byte to escape at every place
 * of a string up to 24 bytes: json.c scans 8 bytes a step, and the first
 * byte to escape in a step must be found exactly, whatever comes after it
 * (a borrow from it may flag the next byte) and whatever comes before
 * (UTF-8 bytes above 0x80, ' ' and '!' just above the control range). */
static void test_dumps_strings_as_jq(void)
{
	static const unsigned char specials[] = { '"', '\\', '\n', 0x01, 0x1f, 0x7f, 0x00 };
	static const unsigned char fillers[][2] = { { 'a', 'z' }, { ' ', '!' }, { 0xc3, 0xa9 }, { '~', '#' } };
	int compared = 0;

	for (size_t f = 0; f < sizeof fillers / sizeof *fillers; f++) {
		bool utf8 = fillers[f][0] == 0xc3;

		for (size_t len = 1; len <= 24; len++) {
			for (size_t at = 0; at < len; at++) {
				if (utf8 && at % 2)
					continue;    /* whole characters only */
				for (size_t k = 0; k < sizeof specials; k++) {
					unsigned char text[32];

					for (size_t i = 0; i < len; i++)
						text[i] = fillers[f][i % 2];
					if (utf8 && len % 2)
						text[len - 1] = 'x';
					text[at] = specials[k];
					if (utf8 && at + 1 < len)
						text[at + 1] = specials[(k + 1) % sizeof specials];
					jv v = jv_string_sized((const char *)text, (int)len);
					jv want = jv_dump_string(jv_copy(v), 0);
					char *got = json_dumps(v, false);

					CHECK_MSG(!strcmp(got, jv_string_value(want)),
						  "filler %zu, %zu bytes, byte %zu: got %s, jq %s", f, len, at, got,
						  jv_string_value(want));
					compared++;
					free(got);
					jv_free(want);
				}
			}
		}
	}
	CHECK(compared > 2000);
}

/* Numbers print as jq 1.6 prints them, over every magnitude and many digit
 * counts: what recall's scores (six decimals) and costs look like, random
 * doubles, and the edges of the range json.c prints without jq. */
static void test_numbers_as_jq(void)
{
	static const double fixed[] = {
		1e-4, -1e-4, 9.9999999999999e-5, 1.0000000000001e-4, 1e15 - 0.5, 999999999999999.9,
		0.1 + 0.2, 1.0 / 3, 2.0 / 3, 0.834521, 0.5, 1e-3, 123.456, 0.30000000000000004,
		4503599627370495.5, 1e15 + 0.5, 1234567.000001, 5e-324, 2.2250738585072014e-308,
	};
	unsigned long long x = 88172645463325252ULL;
	int checked = 0;

	for (int i = 0; i < 60000; i++) {
		double d;

		if (i < (int)(sizeof fixed / sizeof *fixed)) {
			d = fixed[i];
		} else {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			double unit = (double)(x >> 11) / 9007199254740992.0;    /* [0, 1) */
			int scale = (int)(x % 40) - 20;

			d = unit * pow(10, scale);
			if (i % 3 == 0)          /* six decimals, as recall rounds its scores */
				d = round(d * 1e6) / 1e6;
			if (i % 5 == 0)
				d = -d;
		}
		jv want = jv_dump_string(jv_number(d), 0);
		char *got = json_dumps(jv_number(d), false);

		if (strcmp(got, jv_string_value(want))) {
			CHECK_MSG(false, "%.17g: got %s, jq %s", d, got, jv_string_value(want));
			i = 60000;
		}
		checked++;
		free(got);
		jv_free(want);
	}
	CHECK(checked >= 60000);
}

/* json_parse's own parser gives what jq's gives (value and key order); what
 * it does not take, jq's parser still answers. */
static void test_parse_as_jq(void)
{
	static const char *const texts[] = {
		"null", " true ", "false", "0", "-0", "12", "-3.25e-2", "1E+2", "1e400", "0.1",
		"123456789012345678901234567890", "\"\"", "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"",
		"\"\\u00e9\\u2603\\ud83d\\ude00\\u0000x\"", "\"h\u00e9 \u2603\"", "[]", "{}",
		" [ 1 , [ ] , { } , \"x\" ] ", "{\"b\":1,\"a\":[true,null],\"b\":2,\"\":{\"c\":\"d\"}}",
		"{\"k\\u0041\":1}", "\n\t{\"a\":\r\n1}\n",
		"\"x\\ny\\u0041z\\ud83d\\ude00\\\\\\u00e9 tail\"", "[\"\\u20ac\\/\\\"\", \"plain\"]",
		"{\"\\u00e9\":\"\\ud834\\udd1e\"}", "[\"\\t\",\"\\u0000\",\"a\\\\\"]",
		/* not RFC 8259: jq's parser decides */
		"nan", "1.", ".5", "01", "[1,]", "{\"a\":1,}", "\"\\ud800\"", "\"tab\there\"", "[1 2]",
		"{\"a\" 1}", "", "  ", "[", "\"open", "1 2", "{\"a\":1}x", "tru", "-",
	};

	for (size_t i = 0; i < sizeof(texts) / sizeof(*texts); i++) {
		jv got = json_parse(texts[i], strlen(texts[i]));
		jv want = jv_parse_sized(texts[i], (int)strlen(texts[i]));

		CHECK_MSG(jv_is_valid(got) == jv_is_valid(want), "%s", texts[i]);
		if (jv_is_valid(got)) {
			jv a = jv_dump_string(jv_copy(got), 0), b = jv_dump_string(jv_copy(want), 0);
			bool same = !strcmp(jv_string_value(a), jv_string_value(b));   /* NaN != NaN */

			CHECK_MSG(same, "%s: got %s, jq %s", texts[i], jv_string_value(a), jv_string_value(b));
			jv_free(a);
			jv_free(b);
		}
		jv_free(got);
		jv_free(want);
	}
}

/* json_parse_without_notes: the value json_strip_notes(json_parse()) makes,
 * notes dropped at any depth (in arrays too, whatever their value), by the
 * strict parser and by jq's (a lone surrogate is left to it); errors as
 * json_parse gives them. */
static void test_parse_without_notes(void)
{
	static const char *const texts[] = {
		("{\"$comment\":\"a \\\"note\\\" \\u00e9\",\"a\":1,\"b\":{\"$c\":{\"x\":[1]},\"d\":\"$kept\"},"
		 "\"l\":[{\"$n\":null,\"e\":2},\"$s\"],\"$\":true}"),
		"{\"$c\":\"x\",\"a\":\"\\ud800\",\"b\":[{\"$d\":1,\"e\":2}]}",
		"[{\"$only\":1}]",
		"\"$plain string\"",
		"{\"a\":1,}",
		"{\"$c\":\"unterminated}",
	};

	for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
		jv want = json_parse(texts[i], strlen(texts[i]));
		jv got = json_parse_without_notes(texts[i], strlen(texts[i]));

		if (jv_is_valid(want)) {
			want = json_strip_notes(want);
			CHECK_MSG(jv_is_valid(got) && json_equal(got, want), "%s", texts[i]);
			jv_free(got);
			jv_free(want);
			continue;
		}
		char *wm = json_invalid_msg(want), *gm = json_invalid_msg(got);

		CHECK_STR(gm, wm);
		free(wm);
		free(gm);
	}
	jv v = json_parse_without_notes(texts[0], strlen(texts[0]));
	char *s = json_dumps(v, false);

	CHECK_STR(s, "{\"a\":1,\"b\":{\"d\":\"$kept\"},\"l\":[{\"e\":2},\"$s\"]}");
	free(s);
}

/* JSON_NULL is what jv_null() returns, and behaves as it does. */
static void test_json_null_constant(void)
{
	jv a = JSON_NULL, b = jv_null();

	CHECK(jv_get_kind(a) == JV_KIND_NULL);
	CHECK(memcmp(&a, &b, sizeof a) == 0);
	CHECK(jv_equal(jv_copy(a), jv_copy(b)));
	char *text = json_dumps(a, false);
	CHECK_STR(text, "null");
	free(text);
	jv_free(b);
}

/* The estimator as it was written before its byte classes became tables. */
enum ref_tclass { R_NONE, R_ALPHA, R_DIGIT, R_PUNCT, R_SPACE, R_NEWLINE, R_CTRL, R_UTF8 };

static enum ref_tclass ref_classify(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return R_ALPHA;
	if (c >= '0' && c <= '9')
		return R_DIGIT;
	if (c == ' ' || c == '\t')
		return R_SPACE;
	if (c == '\n' || c == '\r')
		return R_NEWLINE;
	if (c < 0x20 || c == 0x7f)
		return R_CTRL;
	if (c < 0x80)
		return R_PUNCT;
	return R_UTF8;
}

static size_t ref_run_cost(enum ref_tclass k, size_t n)
{
	switch (k) {
	case R_ALPHA:
		return (n + 3) / 4;
	case R_DIGIT:
		return (n + 2) / 3;
	case R_PUNCT:
	case R_NEWLINE:
		return (n + 1) / 2;
	case R_SPACE:
		return n ? (n + 2) / 4 : 0;    /* ceil((n - 1) / 4) */
	default:
		return 0;
	}
}

/* Cost of one non-ASCII byte: counted at the lead byte of a sequence, so a
 * prefix cut anywhere costs no more than the whole. */
static size_t ref_utf8_byte_cost(unsigned char c)
{
	if (c >= 0x80 && c < 0xc0)
		return 0;       /* continuation (a stray one is counted at its lead) */
	if (c < 0xe0)
		return 1;
	return 2;
}

static size_t ref_estimate(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t total = 0, run = 0;
	enum ref_tclass cur = R_NONE;

	if (!s)
		return 0;
	for (size_t i = 0; i < len; i++) {
		enum ref_tclass k = ref_classify(p[i]);

		if (k == R_CTRL) {
			total += ref_run_cost(cur, run) + 1;
			cur = R_NONE;
			run = 0;
			continue;
		}
		if (k == R_UTF8) {
			total += ref_run_cost(cur, run) + ref_utf8_byte_cost(p[i]);
			cur = R_NONE;
			run = 0;
			continue;
		}
		if (k != cur) {
			total += ref_run_cost(cur, run);
			cur = k;
			run = 0;
		}
		run++;
	}
	return total + ref_run_cost(cur, run);
}


/* tokens_estimate gives what the byte-by-byte estimator gave: on every
 * pair of bytes, and on every embedded resource's text. */
static void test_tokens_estimate_unchanged(void)
{
	char two[2];
	bool same = true;

	for (int a = 0; a < 256; a++)
		for (int b = 0; b < 256; b++) {
			two[0] = (char)a;
			two[1] = (char)b;
			same = same && tokens_estimate(two, 1) == ref_estimate(two, 1) &&
			       tokens_estimate(two, 2) == ref_estimate(two, 2);
		}
	CHECK(same);
	for (const struct resource *r = resource_all(); r->name; r++)
		CHECK_MSG(tokens_estimate(r->data, r->len) == ref_estimate(r->data, r->len), "%s", r->name);
}

/* tokens_estimate_jv(v) is the estimate of json_dumps(v)'s text.  Borrows v. */
static bool estimate_as_dumped(jv v)
{
	char *text = json_dumps(jv_copy(v), false);
	size_t want = tokens_estimate(text, strlen(text)), got = tokens_estimate_jv(v);

	if (got != want)
		printf("#   tokens_estimate_jv %zu, of the text %zu: %.200s\n", got, want, text);
	free(text);
	return got == want;
}

/* tokens_estimate_jv walks the value instead of writing its text: the
 * same number for every embedded JSON document, every escape, every kind
 * of number and the runs that cross from one value to the next. */
static void test_tokens_estimate_jv(void)
{
	static const char *const texts[] = {
		"null", "true", "false", "0", "-0", "1e300", "0.1", "123456789012345678", "1.5e-7",
		"\"\"", "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f\\u0080é€😀\"",
		"[]", "{}", "[1,2,[3,[]],{}]", "{\"a\":{\"b\":[\"  x  \",\"\\n\\n\"]},\"c\":12}",
		"[\"abc\",\"def\",123,\"456\",\"\\t\\t\",\"\\u0000\"]",
	};
	struct buf all = BUF_INIT;
	int n = 0;

	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		jv v = json_parse(texts[i], strlen(texts[i]));

		CHECK_MSG(jv_is_valid(v), "%s", texts[i]);
		CHECK(estimate_as_dumped(v));
		jv_free(v);
	}
	/* every byte from 1 to 127 in a string, and in a key */
	for (int c = 1; c < 128; c++)
		buf_addch(&all, (char)c);
	jv s = jv_string_sized(all.buf, (int)all.len);
	jv o = json_set(jv_object(), all.buf, jv_copy(s));
	CHECK(estimate_as_dumped(s) && estimate_as_dumped(o));
	jv_free(s);
	jv_free(o);
	buf_release(&all);
	for (const struct resource *r = resource_all(); r->name; r++) {
		size_t len = strlen(r->name);

		if (len < 5 || strcmp(r->name + len - 5, ".json") != 0)
			continue;
		jv v = json_parse(r->data, r->len);
		CHECK_MSG(estimate_as_dumped(v), "%s", r->name);
		jv_free(v);
		n++;
	}
	CHECK(n > 20);
}

int main(void)
{
	RUN(test_json_null_constant);
	RUN(test_tokens_estimate_unchanged);
	RUN(test_tokens_estimate_jv);
	RUN(test_parse_as_jq);
	RUN(test_parse_without_notes);
	RUN(test_dumps_as_jq);
	RUN(test_dumps_strings_as_jq);
	RUN(test_numbers_as_jq);
	RUN(test_get_helpers);
	RUN(test_parse_errors_are_short);
	RUN(test_parse_separator_without_leak);
	RUN(test_parse_extra_values_where);
	RUN(test_utf8);
	RUN(test_write_line);
	RUN(test_buf_limit);
	RUN(test_path_quoted);
	RUN(test_ulid_monotonic);
	RUN(test_ulid_random_fresh);
	RUN(test_timestamp);
	RUN(test_parse_long);
	RUN(test_path_parent);
	return unit_done();
}
