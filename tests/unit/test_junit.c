/*
 * test_junit.c - the XML scanner and the JUnit reader/writer: entities,
 * CDATA, comments, DOCTYPE, nested suites, counts from suite attributes,
 * flaky reruns; forge-test's JUnit output round-trips through the reader;
 * truncated and garbage documents never crash.
 */
#include "core/forge.h"
#include "testrun/junit.h"
#include "testrun/testrun.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse(struct testrun *r, const char *xml)
{
	testrun_init(r);
	return junit_parse(r, xml, strlen(xml));
}

static void test_reader(void)
{
	struct testrun r;
	const char *xml =
		"<?xml version=\"1.0\"?>\n<!DOCTYPE x [ <!ENTITY e \"boom\"> ]>\n<!-- a <comment> -->\n"
		"<testsuites><testsuite name='outer' tests='5' failures='2' errors='0' skipped='1'>\n"
		"  <testsuite name=\"inner\">\n"
		"    <testcase name=\"a &amp; b\" classname=\"k.C\" time=\"0.5\" file=\"t/a.py\" line=\"12\"/>\n"
		"    <testcase name=\"fails\"><failure message=\"x &lt; y &#x263A; &#9731; &e; &#0; &bogus;\">"
		"<![CDATA[trace <raw> & stuff\n  at t/b.py:34: in fails]]></failure>"
		"<system-out>printed</system-out></testcase>\n"
		"  </testsuite>\n"
		"  <testcase name=\"retry\"><flakyFailure message=\"first try\"/></testcase>\n"
		"</testsuite></testsuites>\n";

	CHECK(parse(&r, xml) == 1);
	CHECK_STR(r.format, "junit");
	/* 3 cases listed; the suite says 5 with 2 failures and 1 skipped */
	CHECK_INT(r.total, 5);
	CHECK_INT(r.failed, 2);
	CHECK_INT(r.skipped, 1);
	CHECK_INT(r.passed, 2);
	CHECK_INT(r.flaky, 1);
	struct testcase *c = testrun_find(&r, "a & b");
	CHECK(c && c->status == TC_PASS && c->line == 12 && c->time_ms == 500);
	CHECK_STR(c->suite, "k.C");
	c = testrun_find(&r, "fails");
	CHECK(c && c->status == TC_FAIL);
	CHECK_STR(c->message, "x < y \xe2\x98\xba \xe2\x98\x83 &e; &#0; &bogus;");
	CHECK(strstr(c->output, "trace <raw> & stuff"));
	CHECK(strstr(c->output, "printed"));
	CHECK_STR(c->file, "t/b.py");
	CHECK_INT(c->line, 34);
	CHECK(testrun_find(&r, "retry")->flaky);
	testrun_release(&r);

	/* ctest's statuses; a skipped test that also failed (node todo) is skipped */
	CHECK(parse(&r, "<testsuite><testcase name='n' status='notrun'/><testcase name='t'>"
			"<skipped type='todo'/><failure message='no'/></testcase></testsuite>") == 1);
	CHECK_INT(r.skipped, 2);
	CHECK_INT(r.failed, 0);
	testrun_release(&r);

	CHECK(parse(&r, "<html><body>hi</body></html>") == 0);
	CHECK(strstr(forge_last_error(), "not a JUnit report"));
	testrun_release(&r);
	CHECK(parse(&r, "") == 0);
	testrun_release(&r);
}

static void test_truncated(void)
{
	struct testrun r;
	const char *xml = "<testsuites><testsuite tests='9'><testcase name='a'/><testcase name='b'><failure>half";

	CHECK(parse(&r, xml) == 1);
	CHECK(strstr(r.note, "incomplete"));
	CHECK(testrun_find(&r, "b") && testrun_find(&r, "b")->status == TC_FAIL);
	CHECK_INT(r.total, 9);
	testrun_release(&r);
	CHECK(parse(&r, "<testsuite><testcase name='a'></testsuite>") == 1);   /* mismatched */
	testrun_release(&r);
}

static void test_round_trip(void)
{
	struct testrun r, back;
	char *xml = NULL;
	size_t len = 0;

	testrun_init(&r);
	struct testcase *c = testrun_add(&r, "plain", 5, TC_PASS);
	c->time_ms = 1250;
	c = testrun_add(&r, "quotes \"<&>' and\ttab", 21, TC_FAIL);
	testcase_set(&c->file, "src/a b.c", 9);
	c->line = 7;
	testcase_set(&c->message, "line one\nline two", 17);
	const char *out = "out <x> & \"y\"\nbad utf8 \xff\xfe end\x01";
	testcase_set(&c->output, out, strlen(out));
	c->classification = "real";
	c = testrun_add(&r, "crashed", 7, TC_FAIL);
	c->error = true;
	c->classification = "environment";
	testcase_set(&c->message, "segfault", 8);
	c = testrun_add(&r, "sometimes", 9, TC_PASS);
	c->flaky = true;
	c->classification = "flaky";
	testcase_set(&c->message, "failed once", 11);
	c = testrun_add(&r, "later", 5, TC_SKIP);
	testcase_set(&c->message, "not yet", 7);
	testrun_count(&r);
	/* 3 more passing tests the runner only counted */
	r.total += 3;
	r.passed += 3;

	FILE *f = open_memstream(&xml, &len);
	CHECK(junit_write(f, &r, "make check", 2.5) == 0);
	fclose(f);
	CHECK(parse(&back, xml) == 1);
	CHECK_INT(back.total, r.total);
	CHECK_INT(back.passed, r.passed);
	CHECK_INT(back.failed, r.failed);
	CHECK_INT(back.skipped, r.skipped);
	CHECK_INT(back.flaky, 1);
	CHECK_INT(back.ncases, r.ncases);
	for (size_t i = 0; i < r.ncases; i++) {
		const struct testcase *a = &r.cases[i], *b = &back.cases[i];
		CHECK_STR(b->name, a->name);
		CHECK_INT(b->status, a->status);
		CHECK_INT(b->line, a->line);
		CHECK_INT(b->error, a->error);
		CHECK_INT(b->flaky, a->flaky);
		CHECK((a->file == NULL) == (b->file == NULL));
		if (a->file)
			CHECK_STR(b->file, a->file);
		if (a->message)
			CHECK_STR(b->message, a->message);
	}
	CHECK_STR(back.cases[1].output, "out <x> & \"y\"\nbad utf8 ?? end?");
	CHECK_STR(back.cases[0].suite, "make check");
	CHECK(back.cases[0].time_ms > 1249 && back.cases[0].time_ms < 1251);
	CHECK(strstr(xml, "type=\"environment\""));
	CHECK(strstr(xml, "<error message=\"segfault\""));
	testrun_release(&back);
	testrun_release(&r);
	free(xml);
}

/* A real report cut at every length and with bytes flipped. */
static void test_garbage(void)
{
	FILE *f = fopen("tests/fixtures/testout/pytest_junit.xml", "rb");
	char text[65536];
	CHECK(f);
	size_t len = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	unsigned seed = 99;

	for (size_t cut = 0; cut <= len; cut += 7) {
		struct testrun r;
		testrun_init(&r);
		junit_parse(&r, text, cut);
		CHECK(r.total >= 0 && r.passed >= 0);
		testrun_release(&r);
	}
	char *mut = xmalloc(len);
	for (int round = 0; round < 500; round++) {
		memcpy(mut, text, len);
		for (int k = 0; k < 8; k++) {
			seed = seed * 1103515245u + 12345u;
			mut[(seed >> 8) % len] = "<>&;'\"/!?[]x\0"[(seed >> 20) % 13];
		}
		struct testrun r;
		testrun_init(&r);
		junit_parse(&r, mut, len);
		CHECK(r.passed >= 0 && r.failed >= 0);
		testrun_release(&r);
	}
	free(mut);
	/* deep nesting is bounded */
	size_t n = 300 * 3;
	char *deep = xmalloc(n + 1);
	for (size_t i = 0; i < 300; i++)
		memcpy(deep + i * 3, "<a>", 3);
	deep[n] = '\0';
	struct testrun r;
	CHECK(parse(&r, deep) == 0);
	testrun_release(&r);
	free(deep);
}

/* What expat alone would refuse or rewrite reads as the bytes written;
 * reports may follow one another; a DTD defines nothing; size is bounded. */
static void test_lenient(void)
{
	struct testrun r;
	const char xml[] = "junk<testsuite><testcase name=\"a\tb\r\nc\" classname=\"x&nbsp;y\">"
			   "<failure message=\"&#1;&#xFFFE;\">t\x01\xff\r\n</failure></testcase></testsuite>\n"
			   "<!DOCTYPE t [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;\">]>"
			   "<testsuite><testcase name=\"&b;\"><skipped/></testcase></testsuite>trailing";

	testrun_init(&r);
	CHECK(junit_parse(&r, xml, sizeof xml - 1) == 1);
	CHECK_INT(r.total, 2);
	CHECK_INT(r.failed, 1);
	CHECK_INT(r.skipped, 1);
	struct testcase *c = testrun_find(&r, "a\tb\r\nc");
	CHECK(c != NULL);
	if (c) {
		CHECK_STR(c->suite, "x&nbsp;y");
		CHECK_STR(c->message, "\x01\xef\xbf\xbe");
		CHECK(strstr(c->output, "t\x01\xff\r\n") != NULL);
	}
	CHECK(testrun_find(&r, "&b;") != NULL);	/* not expanded */
	testrun_release(&r);

	struct junit_xml_handler h = { 0 };
	CHECK(junit_xml_scan(xml, (size_t)JUNIT_MAX_BYTES + 1, &h, NULL) == -1);
	CHECK(strstr(forge_last_error(), "MiB") != NULL);
}

int main(void)
{
	RUN(test_reader);
	RUN(test_truncated);
	RUN(test_round_trip);
	RUN(test_garbage);
	RUN(test_lenient);
	return unit_done();
}
