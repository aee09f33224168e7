/*
 * test_tap.c - the TAP reader: plans (leading, trailing, several documents,
 * missing tests, 1..0), directives (SKIP/TODO, case, escapes, a '#' that is
 * not one), YAML diagnostics, subtests, bail out; hostile input.
 */
#include "core/buf.h"
#include "core/forge.h"
#include "testrun/tap.h"
#include "testrun/testrun.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

static int parse(struct testrun *r, const char *text)
{
	testrun_init(r);
	return tap_parse(r, text, strlen(text));
}

static void test_plans(void)
{
	struct testrun r;

	CHECK(parse(&r, "1..3\nok 1 a\nnot ok 2 b\nok 3 c\n") == 1);
	CHECK_INT(r.total, 3);
	CHECK_INT(r.failed, 1);
	CHECK_STR(r.format, "tap");
	testrun_release(&r);
	/* trailing plan, then a second document (a make check running two programs) */
	CHECK(parse(&r, "ok 1 a\nok 2 b\n1..2\nnoise\n1..1\nnot ok 1 c\n") == 1);
	CHECK_INT(r.total, 3);
	CHECK_INT(r.passed, 2);
	CHECK_INT(r.failed, 1);
	testrun_release(&r);
	/* a run that stopped early: the missing tests are a failure */
	CHECK(parse(&r, "TAP version 14\n1..4\nok 1 a\nok 2 b\n") == 1);
	CHECK_INT(r.failed, 1);
	CHECK(testrun_find(&r, "TAP plan") && testrun_find(&r, "TAP plan")->synthetic);
	CHECK(strstr(r.note, "2 planned tests did not run"));
	testrun_release(&r);
	/* output cut in the middle (too long to keep whole): the tests there
	 * are not seen, not "did not run" (before: a passing run failed) */
	CHECK(parse(&r, "TAP version 14\n1..5\nok 1 a\n[\xe2\x80\xa6 900 bytes omitted \xe2\x80\xa6]\nok 5 e\n") == 1);
	CHECK_INT(r.failed, 0);
	CHECK(!testrun_find(&r, "TAP plan"));
	CHECK(strstr(r.note, "the output was cut in the middle: 3 planned tests not seen"));
	testrun_release(&r);
	/* no plan after a version line */
	CHECK(parse(&r, "TAP version 13\nok 1 a\n") == 1);
	CHECK_INT(r.failed, 1);
	testrun_release(&r);
	/* 1..0: everything skipped, nothing failed */
	CHECK(parse(&r, "1..0 # skip no database\n") == 1);
	CHECK_INT(r.total, 0);
	CHECK_INT(r.failed, 0);
	testrun_release(&r);
	/* not TAP: "ok" lines without a plan and without numbers or dashes
	 * (go test's package lines) */
	CHECK(parse(&r, "ok  \texample.com/x\t0.1s\nok maybe\n") == 0);
	CHECK_INT(r.ncases, 0);
	testrun_release(&r);
	/* plan-less TAP from a check script */
	CHECK(parse(&r, "sh tests/check.sh\nok - add\nnot ok - div by zero\n") == 1);
	CHECK_INT(r.total, 2);
	CHECK_INT(r.failed, 1);
	CHECK_STR(r.note, "TAP without a plan");
	testrun_release(&r);
}

static void test_directives(void)
{
	struct testrun r;

	CHECK(parse(&r, "1..6\n"
			"ok 1 - skipped # SKIP no network\n"
			"not ok 2 - not yet # TODO later\n"
			"ok 3 - done early # todo\n"
			"not ok 4 - bats tap13 skip # skip why\n"
			"ok 5 - url page.html#skip and a # hash\n"
			"not ok 6 - escaped \\# SKIP is a description\n") == 1);
	CHECK_INT(r.total, 6);
	CHECK_INT(r.skipped, 3);
	CHECK_INT(r.passed, 2);
	CHECK_INT(r.failed, 1);
	CHECK_STR(testrun_find(&r, "skipped")->message, "no network");
	CHECK(testrun_find(&r, "url page.html#skip and a # hash"));
	CHECK(testrun_find(&r, "escaped # SKIP is a description")->status == TC_FAIL);
	testrun_release(&r);
	/* Bail out! stops the run with a failure */
	CHECK(parse(&r, "1..3\nok 1 a\nBail out! database down\nok 2 b\n") == 1);
	CHECK(testrun_find(&r, "Bail out!"));
	CHECK_STR(testrun_find(&r, "Bail out!")->message, "database down");
	CHECK(testrun_find(&r, "b") == NULL);
	CHECK_INT(r.failed, 1);
	testrun_release(&r);
}

static void test_yaml_and_subtests(void)
{
	struct testrun r;
	const char *doc =
		"TAP version 14\n"
		"# Subtest: outer\n"
		"    ok 1 - inner ok\n"
		"    not ok 2 - inner bad\n"
		"      ---\n"
		"      message: \"it's \\\"broken\\\"\"\n"
		"      at:\n"
		"        file: src/x.c\n"
		"        line: 42\n"
		"      data: |\n"
		"        one\n"
		"        two\n"
		"      ...\n"
		"    1..2\n"
		"not ok 1 - outer\n"
		"not ok 2 - hook failed\n"
		"  ---\n"
		"  error: 'before hook: can''t connect'\n"
		"  location: '/p/a.test.js:7:3'\n"
		"  ...\n"
		"1..2\n";

	CHECK(parse(&r, doc) == 1);
	CHECK_INT(r.total, 3);   /* outer counts through its subtests */
	CHECK_INT(r.failed, 2);
	struct testcase *c = testrun_find(&r, "outer > inner bad");
	CHECK(c);
	CHECK_STR(c->message, "it's \"broken\"");
	CHECK_STR(c->file, "src/x.c");
	CHECK_INT(c->line, 42);
	CHECK(strstr(c->output, "data: |"));
	c = testrun_find(&r, "hook failed");
	CHECK_STR(c->message, "before hook: can't connect");
	CHECK_STR(c->file, "/p/a.test.js");
	CHECK_INT(c->line, 7);
	CHECK(testrun_find(&r, "outer") == NULL);
	testrun_release(&r);
	/* a parent that fails with every subtest passing counts itself */
	CHECK(parse(&r, "    ok 1 - a\n    1..1\nnot ok 1 - p\n1..1\n") == 1);
	CHECK_INT(r.total, 2);
	CHECK(testrun_find(&r, "p") && testrun_find(&r, "p")->status == TC_FAIL);
	testrun_release(&r);
}

/* Test::More's location after a failing point, as C's libtap prints it
 * (before: file and line null, the location only in the output). */
static void test_at_file_line(void)
{
	struct testrun r;
	const char *doc =
		"1..4\n"
		"not ok 1 - trims trailing spaces\n"
		"#   Failed test 'trims trailing spaces'\n"
		"#   at test_str.c line 12.\n"
		"#          got: '3'\n"
		"#     expected: '2'\n"
		"not ok 2\n"
		"#   Failed test at t/basic.t line 7.\n"
		"not ok 3 - prose\n"
		"#   stopped at the end of line 3.\n"
		"ok 4\n"
		"# Looks like you failed 3 tests of 4.\n";

	CHECK(parse(&r, doc) == 1);
	CHECK_INT(r.failed, 3);
	struct testcase *c = testrun_find(&r, "trims trailing spaces");
	CHECK(c);
	CHECK_STR(c->file, "test_str.c");
	CHECK_INT(c->line, 12);
	CHECK_STR(c->message, "Failed test 'trims trailing spaces'");
	CHECK(strstr(c->output, "expected: '2'"));
	c = &r.cases[1];
	CHECK_STR(c->file, "t/basic.t");
	CHECK_INT(c->line, 7);
	c = testrun_find(&r, "prose");
	CHECK(c && c->file == NULL && c->line == 0);
	testrun_release(&r);
}

static void test_hostile(void)
{
	struct testrun r;
	char *deep = xmalloc(200000);
	size_t n = 0;

	n += (size_t)snprintf(deep, 100, "1..1\n");
	for (int i = 0; i < 400 && n < 190000; i++) {
		memset(deep + n, ' ', (size_t)i * 4 % 2000);
		n += (size_t)i * 4 % 2000;
		n += (size_t)snprintf(deep + n, 100, "# Subtest: s%d\n", i);
	}
	n += (size_t)snprintf(deep + n, 100, "not ok 1 - x\n  ---\n  message: |\n");
	deep[n] = '\0';
	CHECK(tap_parse((testrun_init(&r), &r), deep, n) == 1);   /* an unterminated YAML block */
	testrun_release(&r);
	/* NUL bytes, a huge plan, numbers that overflow, lone markers */
	const char weird[] = "1..99999999999999999999\nok 184467440737095516160 \0x\nnot ok\n---\n...\n  ---\n";
	testrun_init(&r);
	CHECK(tap_parse(&r, weird, sizeof weird - 1) == 1);
	CHECK(r.total >= 2);
	testrun_release(&r);
	unsigned seed = 7;
	for (int round = 0; round < 2000; round++) {
		char buf[256];
		static const char *const parts[] = { "ok ", "not ok ", "1..", "# Subtest: ", "    ", "  ---\n",
						     "  ...\n", "# SKIP", "\\#", "\n", "Bail out!", "7", " - ", "#" };
		size_t len = 0;
		while (len < 200) {
			seed = seed * 1103515245u + 12345u;
			const char *p = parts[(seed >> 16) % (sizeof parts / sizeof parts[0])];
			size_t pl = strlen(p);
			memcpy(buf + len, p, pl);
			len += pl;
		}
		testrun_init(&r);
		tap_parse(&r, buf, len);
		CHECK(r.total >= 0 && r.failed >= 0 && r.skipped >= 0);
		testrun_release(&r);
	}
	free(deep);
}

/* More points than planned: a bad plan (prove: "Bad plan. You planned 2
 * tests but ran 3"), before accepted as a pass. */
static void test_too_many(void)
{
	struct testrun r;

	CHECK(parse(&r, "1..2\nok 1 a\nok 2 b\nok 3 c\n") == 1);
	CHECK_INT(r.passed, 3);
	CHECK_INT(r.failed, 1);
	CHECK(testrun_find(&r, "TAP plan") && testrun_find(&r, "TAP plan")->synthetic);
	CHECK(strstr(r.note, "bad plan: 1 test more than planned ran"));
	testrun_release(&r);
	/* a trailing plan smaller than the points */
	CHECK(parse(&r, "ok 1 a\nok 2 b\nok 3 c\n1..2\n") == 1);
	CHECK_INT(r.failed, 1);
	testrun_release(&r);
	/* a second document with its trailing plan is not extra */
	CHECK(parse(&r, "1..2\nok 1 a\nok 2 b\nok 1 c\n1..1\n") == 1);
	CHECK_INT(r.failed, 0);
	CHECK_INT(r.total, 3);
	testrun_release(&r);
}

/* Past TESTRUN_MAX_CASES the cases are counted, not kept: a failing one
 * and the plan's verdict are not lost (before: dropped, a pass). */
static void test_cap(void)
{
	struct testrun r;
	struct buf b = BUF_INIT;
	long n = TESTRUN_MAX_CASES + 5;

	buf_addf(&b, "1..%ld\n", n + 2);
	for (long i = 1; i < n; i++)
		buf_addf(&b, "ok %ld t%ld\n", i, i);
	buf_addf(&b, "not ok %ld the_last\n", n);
	testrun_init(&r);
	CHECK(tap_parse(&r, b.buf, b.len) == 1);
	CHECK(r.truncated);
	CHECK_INT(r.ncases, TESTRUN_MAX_CASES + 1);   /* and the synthetic "TAP plan" */
	CHECK_INT(r.total, n + 1);
	CHECK_INT(r.failed, 2);
	CHECK_INT(r.dropped[TC_FAIL], 1);
	CHECK_INT(r.dropped[TC_PASS], 4);
	CHECK(testrun_find(&r, "TAP plan"));
	testrun_release(&r);
	buf_release(&b);
}

/* The failing test points of a middle cut out of the output (os/proc.h's
 * cut_count): counted by tap_failing_line, a failure when told (hunt26). */
static void test_cut_failures(void)
{
	struct testrun r;
	static const char *const yes[] = { "not ok", "not ok 3 - x", "not ok\t4 a \\# TODO escaped",
					   "not ok 5 a#TODO not a directive" };
	static const char *const no[] = { "ok 1", "not okay", "  not ok 2 nested", "not ok 6 # TODO later",
					  "not ok 7 - x # skip no", "# not ok" };

	for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
		CHECK_MSG(tap_failing_line(yes[i], strlen(yes[i])), "%s", yes[i]);
	for (size_t i = 0; i < sizeof no / sizeof *no; i++)
		CHECK_MSG(!tap_failing_line(no[i], strlen(no[i])), "%s", no[i]);
	CHECK(parse(&r, "1..3\nok 1 a\n[\xe2\x80\xa6 99 bytes omitted \xe2\x80\xa6]\nok 3 c\n") == 1);
	CHECK_INT(r.failed, 0);
	tap_cut_failures(&r, 0);
	CHECK_INT(r.failed, 0);
	tap_cut_failures(&r, 2);
	CHECK_INT(r.failed, 1);
	CHECK_INT(r.total, 3);
	CHECK(testrun_find(&r, "TAP cut output"));
	CHECK_MSG(strstr(r.note, "1 planned test not seen; 2 failing test points (\"not ok\")"), "%s", r.note);
	testrun_release(&r);
}

/* A NUL byte in a diagnostic is shown as \u0000 (README), not the end of
 * the text (before: message "expected abc", output "expected abcsecond
 * line", hunt48 #8); a name holding one too. */
static void test_nul_bytes(void)
{
	struct testrun r;
	static const char text[] = "1..1\nnot ok 1 - b\0c\n# expected abc\0def but got xyz\n# second line\n";

	testrun_init(&r);
	CHECK(tap_parse(&r, text, sizeof text - 1) == 1);
	CHECK_INT(r.failed, 1);
	struct testcase *c = testrun_find(&r, "b\\u0000c");
	CHECK(c != NULL);
	if (c) {
		CHECK_STR(c->message, "expected abc\\u0000def but got xyz");
		CHECK_STR(c->output, "expected abc\\u0000def but got xyz\nsecond line\n");
	}
	testrun_release(&r);
	/* in a YAML block too, and through testcase_set's cut */
	static const char yaml[] = "1..1\nnot ok 1 - y\n  ---\n  message: 'a\0b'\n  ...\n";
	testrun_init(&r);
	CHECK(tap_parse(&r, yaml, sizeof yaml - 1) == 1);
	c = testrun_find(&r, "y");
	CHECK(c && c->message && strcmp(c->message, "a\\u0000b") == 0);
	testrun_release(&r);
	struct buf big = BUF_INIT;
	for (size_t i = 0; i < TESTRUN_MAX_FIELD; i++)
		buf_addch(&big, '\0');
	char *field = NULL;
	testcase_set(&field, big.buf, big.len);
	CHECK(field && strlen(field) <= TESTRUN_MAX_FIELD + 5 && strncmp(field, "\\u0000\\u0000", 12) == 0);
	free(field);
	field = NULL;
	testcase_append(&field, "x", 1);
	testcase_append(&field, big.buf, big.len);
	CHECK(field && strlen(field) <= TESTRUN_MAX_FIELD + 1 && strncmp(field, "x\n\\u0000", 8) == 0);
	free(field);
	buf_release(&big);
}

int main(void)
{
	RUN(test_cut_failures);
	RUN(test_plans);
	RUN(test_too_many);
	RUN(test_cap);
	RUN(test_directives);
	RUN(test_yaml_and_subtests);
	RUN(test_at_file_line);
	RUN(test_hostile);
	RUN(test_nul_bytes);
	return unit_done();
}
