/*
 * test_compile_lang.c - forge compile's language profiles (lib/compile/
 * lang.h): the test-name convention, TAP and JUnit runs mapped to rules, a
 * profile's errors, static tool output read as findings, the command's
 * placeholders, file digests.
 */
#include "compile/lang.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/tmpdir.h"
#include "testrun/testrun.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_rule_of(void)
{
	char r[16];

	CHECK(compile_rule_of(r, sizeof r, "test_r1_stores_the_item") == 0);
	CHECK_STR(r, "R1");
	CHECK(compile_rule_of(r, sizeof r, "r12: an empty string is refused") == 0);
	CHECK_STR(r, "R12");
	CHECK(compile_rule_of(r, sizeof r, "R3 lists") == 0);
	CHECK_STR(r, "R3");
	/* "error_r2": the r of "error" is inside a word; r2 is the rule */
	CHECK(compile_rule_of(r, sizeof r, "test_error_r2") == 0);
	CHECK_STR(r, "R2");
	CHECK(compile_rule_of(r, sizeof r, "test_r2x_not_a_word") == -1);
	CHECK(compile_rule_of(r, sizeof r, "test_rr") == -1);
	CHECK(compile_rule_of(r, sizeof r, "test_more_r") == -1);
	CHECK(compile_rule_of(r, sizeof r, "") == -1);
	/* too long for the buffer: not a rule */
	CHECK(compile_rule_of(r, 4, "r123") == -1);
}

static const char tap_profile[] =
	"{\"framework\":\"tap\",\"test_command\":\"make -s test\",\"output\":\"tap\",\"timeout_s\":5,"
	"\"layout\":\"src/ and tests/\",\"test_name\":\"r1: …\",\"build_files\":[\"Makefile\"],"
	"\"static_tools\":[{\"name\":\"cc\",\"command\":\"cc {tmp}\"}]}";

static struct compile_lang *profile(const char *name, const char *text)
{
	struct compile_lang *l = NULL;
	jv p = json_parse(text, strlen(text));
	int rc = compile_lang_from_json(&l, name, p);

	jv_free(p);
	return rc == 0 ? l : NULL;
}

static void test_profile(void)
{
	struct compile_lang *l = profile("c", tap_profile);

	CHECK(l);
	CHECK_STR(l->framework, "tap");
	CHECK(!l->junit);
	CHECK(l->timeout_ms == 5000);
	CHECK_STR(l->build_files[0], "Makefile");
	CHECK(l->build_files[1] == NULL);
	CHECK(l->ntools == 1);
	CHECK_STR(l->tools[0].severity, "warning");
	compile_lang_free(l);

	CHECK(!profile("x", "{\"framework\":\"tap\"}"));
	CHECK_STR(forge_last_error(), "compile.languages.x.test_command: expected a non-empty string");
	CHECK(!profile("py", "{\"framework\":\"pytest\",\"test_command\":\"pytest\",\"output\":\"junit\","
			     "\"layout\":\"l\",\"test_name\":\"t\"}"));
	CHECK_STR(forge_last_error(), "compile.languages.py.test_command: output junit needs {junit} in the command");
	CHECK(!profile("py", "{\"framework\":\"pytest\",\"test_command\":\"pytest\",\"output\":\"xml\","
			     "\"layout\":\"l\",\"test_name\":\"t\"}"));
	CHECK_STR(forge_last_error(), "compile.languages.py.output: expected \"tap\" or \"junit\"");
	CHECK(!profile("py", "[]"));
}

static void test_tap_mapped(void)
{
	struct compile_lang *l = profile("c", tap_profile);
	struct testrun r;
	const char out[] =
		"cc -o tests/test_str tests/test_str.c src/str.c\n"
		"1..3\nok 1 - r1: reverses a word\nnot ok 2 - r2: an empty string is refused\n"
		"  ---\n  message: expected -1, got 0\n  ...\n"
		"ok 3 - helper works\n";

	CHECK(l);
	CHECK(compile_parse_run(&r, l, out, sizeof out - 1, NULL, 0) == 1);
	jv res = compile_results(&r);
	char *s = json_dumps(res, true);
	CHECK_STR(s, "[{\"rule\":\"R1\",\"status\":\"passed\",\"test\":\"r1: reverses a word\"},"
		  "{\"message\":\"expected -1, got 0\",\"rule\":\"R2\",\"status\":\"failed\","
		  "\"test\":\"r2: an empty string is refused\"},"
		  "{\"rule\":null,\"status\":\"passed\",\"test\":\"helper works\"}]");
	free(s);
	testrun_release(&r);
	/* no TAP at all: nothing read */
	CHECK(compile_parse_run(&r, l, "make: *** No rule to make target 'test'.\n", 41, NULL, 0) == 0);
	CHECK(r.ncases == 0);
	testrun_release(&r);
	compile_lang_free(l);
}

static void test_junit_mapped(void)
{
	struct compile_lang *l = profile("python",
		"{\"framework\":\"pytest\",\"test_command\":\"pytest --junitxml={junit}\",\"output\":\"junit\","
		"\"layout\":\"l\",\"test_name\":\"t\"}");
	struct testrun r;
	const char xml[] =
		"<?xml version=\"1.0\"?><testsuites><testsuite name=\"pytest\" tests=\"2\" failures=\"1\">"
		"<testcase classname=\"tests.test_todo_api\" name=\"test_r1_creates\" time=\"0.01\"/>"
		"<testcase classname=\"tests.test_todo_api\" name=\"test_r4_completes\" time=\"0.01\">"
		"<failure message=\"NotImplementedError: complete\">trace</failure></testcase>"
		"</testsuite></testsuites>";

	CHECK(l);
	CHECK(l->junit);
	/* the output is not what is read for junit */
	CHECK(compile_parse_run(&r, l, "1..1\nok 1 - r9\n", 14, NULL, 0) == 0);
	testrun_release(&r);
	CHECK(compile_parse_run(&r, l, "", 0, xml, sizeof xml - 1) == 1);
	jv res = compile_results(&r);
	char *s = json_dumps(res, true);
	CHECK_STR(s, "[{\"rule\":\"R1\",\"status\":\"passed\",\"suite\":\"tests.test_todo_api\",\"test\":\"test_r1_creates\"},"
		  "{\"message\":\"NotImplementedError: complete\",\"rule\":\"R4\",\"status\":\"failed\","
		  "\"suite\":\"tests.test_todo_api\",\"test\":\"test_r4_completes\"}]");
	free(s);
	testrun_release(&r);
	CHECK(compile_parse_run(&r, l, "", 0, "<html>", 6) == 0);
	testrun_release(&r);
	compile_lang_free(l);
}

static void test_tool_findings(void)
{
	struct compile_tool t = { .name = "cppcheck", .command = "x", .severity = "error" };
	const char out[] =
		"./src/str.c:12:5: warning: Variable 'n' is assigned a value that is never used. [unreadVariable]\n"
		"    n = 0;\n    ^\n"
		"src/str.c:20:1: note: declared here\n"
		"tests/test_str.c:3:10: error: Null pointer dereference [nullPointer]\n"
		"pyapp/app.py:4:1: 'os' imported but unused\n"
		"Checking src/str.c ...\n";

	char *s = json_dumps(compile_tool_findings(&t, out, 1), true);
	CHECK_STR(s, "[{\"file\":\"src/str.c\",\"line\":12,\"message\":\"Variable 'n' is assigned a value that is "
		  "never used. [unreadVariable]\",\"severity\":\"warning\",\"tool\":\"cppcheck\"},"
		  "{\"file\":\"tests/test_str.c\",\"line\":3,\"message\":\"Null pointer dereference [nullPointer]\","
		  "\"severity\":\"error\",\"tool\":\"cppcheck\"},"
		  "{\"file\":\"pyapp/app.py\",\"line\":4,\"message\":\"'os' imported but unused\","
		  "\"severity\":\"error\",\"tool\":\"cppcheck\"}]");
	free(s);
	/* failed without a line to read: one finding with the head of the output */
	s = json_dumps(compile_tool_findings(&t, "  File \"a.py\", line 2\nSyntaxError: invalid syntax\n", 1), true);
	CHECK_STR(s, "[{\"message\":\"cppcheck exited 1:   File \\\"a.py\\\", line 2\\nSyntaxError: invalid syntax\\n\","
		  "\"severity\":\"error\",\"tool\":\"cppcheck\"}]");
	free(s);
	s = json_dumps(compile_tool_findings(&t, "all fine\n", 0), true);
	CHECK_STR(s, "[]");
	free(s);
}

static void test_expand(void)
{
	char *s = compile_expand("pytest --junitxml={junit} -o cache_dir={tmp}/c {x}", "/t/j.xml", "/t");

	CHECK_STR(s, "pytest --junitxml=/t/j.xml -o cache_dir=/t/c {x}");
	free(s);
}

static void test_digests(void)
{
	char *dir = NULL;
	struct buf path = BUF_INIT;

	CHECK(tmpdir_make(&dir, "unit-compile") == 0);
	buf_addf(&path, "%s/a.txt", dir);
	FILE *f = fopen(path.buf, "w");
	CHECK(f);
	fputs("abc", f);
	fclose(f);
	jv paths = json_parse("[\"a.txt\",\"gone.txt\"]", 20);
	char *s = json_dumps(compile_digests(dir, paths), true);
	CHECK_STR(s, "{\"a.txt\":\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\",\"gone.txt\":null}");
	free(s);
	jv_free(paths);
	buf_release(&path);
	tmpdir_remove(dir);
}

/* A file in dir. */
static void touch(const char *dir, const char *name)
{
	struct buf path = BUF_INIT;
	FILE *f;

	buf_addf(&path, "%s/%s", dir, name);
	f = fopen(path.buf, "w");
	CHECK(f);
	if (f)
		fclose(f);
	buf_release(&path);
}

/* build_files: "a|b" is either; the missing ones as the model is told them. */
static void test_build_files(void)
{
	struct compile_lang *l = profile("python",
		"{\"framework\":\"pytest\",\"test_command\":\"pytest --junitxml={junit}\",\"output\":\"junit\","
		"\"layout\":\"l\",\"test_name\":\"t\",\"build_files\":[\"pyproject.toml|requirements.txt\",\"README.md\"]}");
	struct buf text = BUF_INIT;
	char *dir = NULL, *s;

	CHECK(l);
	CHECK(tmpdir_make(&dir, "unit-compile") == 0);
	compile_lang_build_files_text(&text, l);
	CHECK_STR(text.buf, "pyproject.toml or requirements.txt, README.md");
	s = json_dumps(compile_lang_missing_build_files(l, dir), false);
	CHECK_STR(s, "[\"pyproject.toml or requirements.txt\",\"README.md\"]");
	free(s);
	/* pyproject.toml alone will do, requirements.txt alone too */
	touch(dir, "pyproject.toml");
	touch(dir, "README.md");
	s = json_dumps(compile_lang_missing_build_files(l, dir), false);
	CHECK_STR(s, "[]");
	free(s);
	tmpdir_remove(dir);
	dir = NULL;
	CHECK(tmpdir_make(&dir, "unit-compile") == 0);
	touch(dir, "requirements.txt");
	s = json_dumps(compile_lang_missing_build_files(l, dir), false);
	CHECK_STR(s, "[\"README.md\"]");
	free(s);
	tmpdir_remove(dir);
	buf_release(&text);
	compile_lang_free(l);
}

int main(void)
{
	RUN(test_rule_of);
	RUN(test_profile);
	RUN(test_tap_mapped);
	RUN(test_junit_mapped);
	RUN(test_tool_findings);
	RUN(test_expand);
	RUN(test_digests);
	RUN(test_build_files);
	return unit_done();
}
