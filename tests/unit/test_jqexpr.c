/* test_jqexpr.c - jq expressions over a state. */
#include "core/buf.h"
#include "core/forge.h"
#include "core/jqexpr.h"
#include "unit.h"

#include <string.h>

static const char state[] =
	"{\"plan\":{\"risk\":{\"level\":\"high\"}},\"cost\":{\"usd\":41},\"budget\":{\"usd\":50},"
	"\"review\":{\"findings\":[{\"severity\":\"critical\",\"category\":\"security\"}]}}";

static void test_truthiness(void)
{
	jv s = jv_parse(state);
	bool b;

	CHECK(jqexpr_test(&b, ".plan.risk.level == \"high\" or .plan.risk.level == \"critical\"", s) == 0 && b);
	CHECK(jqexpr_test(&b, ".cost.usd > .budget.usd * 0.8", s) == 0 && b);
	CHECK(jqexpr_test(&b, "[.review.findings[]? | select(.severity==\"critical\" and .category==\"security\")] | length > 0", s) == 0 && b);
	CHECK(jqexpr_test(&b, ".deployment.environment == \"production\"", s) == 0 && !b);
	CHECK(jqexpr_test(&b, ".missing", s) == 0 && !b);      /* null is false */
	CHECK(jqexpr_test(&b, "empty", s) == 0 && !b);         /* no output is false */
	CHECK(jqexpr_test(&b, ".cost.usd", s) == 0 && b);      /* a number is true */
	jv_free(s);
}

static void test_errors_are_reported(void)
{
	jv s = jv_parse(state);
	bool b;

	CHECK(jqexpr_test(&b, ".plan.risk.level ==", s) == -1);
	CHECK_MSG(strstr(forge_last_error(), "does not compile") != NULL, "%s", forge_last_error());
	CHECK(jqexpr_test(&b, "error(\"boom\")", s) == -1);
	CHECK_MSG(strstr(forge_last_error(), "boom") != NULL, "%s", forge_last_error());
	CHECK(jqexpr_test(&b, ".cost.usd | keys", s) == -1);
	/* halt stops without an output, but it is not "false" (a node's when
	 * of halt_error skipped the node silently) */
	CHECK(jqexpr_test(&b, "halt", s) == -1);
	CHECK_MSG(strstr(forge_last_error(), "halted") != NULL, "%s", forge_last_error());
	CHECK(jqexpr_test(&b, "\"x\" | halt_error(1)", s) == -1);
	CHECK(jqexpr_check(".a | .b") == 0);
	CHECK(jqexpr_check(".a |") == -1);
	/* libjq 1.6's debug callback and module search: a crash (SIGSEGV) and
	 * an abort before, on an expression a user may write */
	CHECK(jqexpr_test(&b, "debug | .plan != null", s) == 0 && b);
	CHECK(jqexpr_check("include \"x\"; true") == -1);
	CHECK_MSG(strstr(forge_last_error(), "module not found") != NULL, "%s", forge_last_error());
	CHECK(jqexpr_check("import \"x\" as x; true") == -1);
	/* libjq 1.6 left the input callback unset: `input` crashed */
	CHECK(jqexpr_test(&b, "input", s) == -1);
	CHECK_MSG(strstr(forge_last_error(), "no more inputs") != NULL, "%s", forge_last_error());
	CHECK(jqexpr_test(&b, "[inputs] | length == 0", s) == 0 && b);
	CHECK(jqexpr_test(&b, "first(inputs)", s) == 0 && !b);
	jv_free(s);
}

/* The built-in gate and bounce conditions (config.defaults.json) and more
 * of the subset evaluated in C. */
static const char *const subset[] = {
	".plan.risk.level == \"high\" or .plan.risk.level == \"critical\"",
	".task.environment == \"production\"",
	"[.review.findings[]? | select(.severity == \"critical\" and .category == \"security\")] | length > 0",
	".cost.usd > .budget.usd * 0.8",
	".review.decision == \"request_changes\"",
	".tests.summary.failed > 0",
	".", ".a", "length", ".a.b == null", "1 < 2", "\"a\" < \"b\"", ".x * 2", "[.a[]?] | length",
	"(.a or .b) and .c", ".a != .b", ".n >= 3", ".n <= 3", "[.a[]? | select(.x)] | length",
	".a | length > 1", "1e2 == 100", ".5 < 1", "null == .zz", "true and false", ".a < .b",
	".x*.n", "[.]", "[.a[]?|select(.)]", ".a[]?", ".a?", ".if", "0x10", ".a.b.c.d.e",
};

static const char *const states[] = {
	"null", "{}", "5", "\"str\"", "true", "[1,2]",
	"{\"plan\":{\"risk\":{\"level\":\"critical\"}}}", "{\"plan\":3}", "{\"plan\":{\"risk\":[1]}}",
	"{\"cost\":{\"usd\":45},\"budget\":{\"usd\":50}}", "{\"cost\":{\"usd\":45}}",
	"{\"cost\":{\"usd\":\"x\"},\"budget\":{\"usd\":50}}", "{\"cost\":{\"usd\":1},\"budget\":{\"usd\":\"ab\"}}",
	"{\"review\":{\"findings\":[{\"severity\":\"critical\",\"category\":\"security\"},null,{}]}}",
	"{\"review\":{\"findings\":[{\"severity\":\"low\"},7]}}",
	"{\"review\":{\"findings\":{\"a\":{\"severity\":\"critical\",\"category\":\"security\"}}}}",
	"{\"review\":{\"findings\":\"str\"}}", "{\"review\":\"str\"}", "{\"tests\":{\"summary\":{\"failed\":2}}}",
	"{\"tests\":{\"summary\":{\"failed\":\"2\"}}}", "{\"task\":{\"environment\":\"production\"}}",
	"{\"a\":[1,2],\"b\":null,\"c\":true,\"n\":3,\"x\":4}", "{\"a\":{\"b\":1},\"b\":{\"b\":1},\"n\":\"3\",\"x\":\"ab\"}",
	"{\"a\":[{\"x\":false},{\"x\":1},[]],\"n\":2.5}", "{\"a\":\"s\",\"x\":{\"k\":1},\"n\":null}",
};

/* expr over state: rc, the value or the message. */
static void eval_one(int *rc, jv *value, char *msg, size_t n, const char *expr, jv input)
{
	*rc = jqexpr_first(value, expr, input);
	snprintf(msg, n, "%s", *rc < 0 ? forge_last_error() : "");
}

/* Every expression of the subset gives what libjq gives: value, or error
 * and libjq's message.  Where the C evaluator leaves an input to libjq
 * (jqexpr_native_first() 1) jqexpr_first() takes libjq mode's own path, so
 * only the others are evaluated twice: a libjq program that raised an error
 * is compiled again (~30 ms), and most of the matrix's errors are left to
 * libjq.  The fallback's own results are checked once per expression. */
static void test_native_matches_libjq(void)
{
	size_t left_to_libjq = 0;

	for (size_t e = 0; e < sizeof subset / sizeof subset[0]; e++)
		for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
			jv s = jv_parse(states[i]), a, b;
			char ma[512] = "", mb[512];
			int ra, rb;
			if (jqexpr_native_first(&a, subset[e], s) != 0) {
				CHECK(!jv_is_valid(a));
				jv_free(a);
				jv_free(s);
				left_to_libjq++;
				continue;
			}
			ra = 0;
			jqexpr_set_native(false);
			eval_one(&rb, &b, mb, sizeof mb, subset[e], s);
			jqexpr_set_native(true);
			jv da = jv_dump_string(jv_copy(a), 0);
			jv db = rb < 0 ? jv_string("") : jv_dump_string(jv_copy(b), 0);
			bool same = ra == rb && strcmp(ma, mb) == 0 &&
				    strcmp(jv_string_value(da), jv_string_value(db)) == 0;
			CHECK_MSG(same, "%s over %s: C %d %s %s, libjq %d %s %s", subset[e], states[i], ra,
				  jv_string_value(da), ma, rb, jv_string_value(db), mb);
			/* and jqexpr_first() gives the C result */
			jv c;
			CHECK(jqexpr_first(&c, subset[e], s) == 0 && jv_equal(jv_copy(a), c));
			jv_free(da);
			jv_free(db);
			jv_free(a);
			jv_free(b);
			jv_free(s);
		}
	/* the matrix has both kinds (errors are left to libjq) */
	CHECK_MSG(left_to_libjq > 0 && left_to_libjq < (sizeof subset / sizeof subset[0]) *
						     (sizeof states / sizeof states[0]),
		  "%zu left to libjq", left_to_libjq);
	/* the fallback: a state libjq fails on gives libjq's error and message in
	 * both modes */
	jv s = jv_parse("5"), a, b;
	char ma[512], mb[512];
	int ra, rb;
	CHECK(jqexpr_native_first(&a, ".a.b == null", s) == 1);
	eval_one(&ra, &a, ma, sizeof ma, ".a.b == null", s);
	jqexpr_set_native(false);
	eval_one(&rb, &b, mb, sizeof mb, ".a.b == null", s);
	jqexpr_set_native(true);
	CHECK_MSG(ra == -1 && rb == -1 && strcmp(ma, mb) == 0 && strstr(ma, "Cannot index number") != NULL,
		  "%d %s / %d %s", ra, ma, rb, mb);
	jv_free(a);
	jv_free(b);
	jv_free(s);
}

/* The built-in conditions over well-formed states compile nothing; another
 * expression is compiled once for any number of inputs. */
static void test_one_compile(void)
{
	static const char *const ok[] = {
		"{\"plan\":{\"risk\":{\"level\":\"low\"}},\"cost\":{\"usd\":1},\"budget\":{\"usd\":5},\"task\":{}}",
		"{\"review\":{\"decision\":\"approve\",\"findings\":[{\"severity\":\"high\"}]},\"tests\":{\"summary\":{\"failed\":0}},\"cost\":{\"usd\":0},\"budget\":{\"usd\":1}}",
		"{\"review\":{\"findings\":[]},\"cost\":{\"usd\":4.5},\"budget\":{\"usd\":5}}",
	};
	unsigned long before = jqexpr_compiles();
	bool b;

	for (int round = 0; round < 3; round++)
		for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
			jv s = jv_parse(ok[i]);
			for (size_t e = 0; e < 6; e++)
				CHECK_MSG(jqexpr_test(&b, subset[e], s) == 0, "%s: %s", subset[e], forge_last_error());
			jv_free(s);
		}
	CHECK_MSG(jqexpr_compiles() == before, "%lu compiles", jqexpr_compiles() - before);
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		jv s = jv_parse(ok[i]);
		CHECK(jqexpr_test(&b, "[paths] | length > 3", s) == 0);
		CHECK(jqexpr_test(&b, "any(.[]; . == null)", s) == 0);
		jv_free(s);
	}
	CHECK_MSG(jqexpr_compiles() == before + 2, "%lu compiles", jqexpr_compiles() - before);
}

/* Checking an expression of the subset compiles nothing with libjq (a
 * pipeline's conditions are checked on every run); anything else is still
 * compiled, and its errors are libjq's. */
static void test_check_subset_without_libjq(void)
{
	unsigned long before = jqexpr_compiles();

	for (size_t e = 0; e < 6; e++)
		CHECK_MSG(jqexpr_check(subset[e]) == 0, "%s: %s", subset[e], forge_last_error());
	CHECK_MSG(jqexpr_compiles() == before, "%lu compiles", jqexpr_compiles() - before);
	CHECK(jqexpr_check("[paths] | length > 3") == 0);
	CHECK(jqexpr_check(".a == ") == -1);
	CHECK_MSG(jqexpr_compiles() == before + 2, "%lu compiles", jqexpr_compiles() - before);
}

/* Nesting and chains the recursive C evaluator would overflow the stack
 * on (SIGSEGV before) are refused with a message; the message shows the
 * start of the expression, not all of it. */
static void test_deep_is_refused(void)
{
	struct buf e = BUF_INIT;
	jv s = jv_parse(state);
	bool b;

	for (int i = 0; i < 30000; i++)
		buf_adds(&e, "(");
	buf_adds(&e, "true");
	for (int i = 0; i < 30000; i++)
		buf_adds(&e, ")");
	CHECK(jqexpr_check(e.buf) == -1);
	CHECK_MSG(strstr(forge_last_error(), "nested too deeply") != NULL, "%.300s", forge_last_error());
	CHECK_MSG(strlen(forge_last_error()) < 600, "%zu bytes", strlen(forge_last_error()));
	CHECK(jqexpr_test(&b, e.buf, s) == -1);
	CHECK_MSG(strstr(forge_last_error(), "nested too deeply") != NULL, "%.300s", forge_last_error());
	buf_reset(&e);
	for (int i = 0; i < 100000; i++)
		buf_adds(&e, ".a");
	CHECK(jqexpr_check(e.buf) == -1);
	CHECK(jqexpr_test(&b, e.buf, s) == -1);
	CHECK_MSG(strstr(forge_last_error(), "nested too deeply") != NULL, "%.300s", forge_last_error());
	CHECK_MSG(strstr(forge_last_error(), "\xe2\x80\xa6'") != NULL, "%.300s", forge_last_error());
	buf_reset(&e);
	/* moderate depths are still the subset's */
	for (int i = 0; i < 150; i++)
		buf_adds(&e, "(");
	buf_adds(&e, ".cost.usd > 40");
	for (int i = 0; i < 150; i++)
		buf_adds(&e, ")");
	CHECK(jqexpr_test(&b, e.buf, s) == 0 && b);
	buf_reset(&e);
	/* libjq's messages do not repeat a long expression whole */
	for (int i = 0; i < 5000; i++)
		buf_adds(&e, "1 + ");
	CHECK(jqexpr_check(e.buf) == -1);
	CHECK_MSG(strlen(forge_last_error()) < 1000, "%zu bytes", strlen(forge_last_error()));
	buf_release(&e);
	jv_free(s);
}

static bool stop_now(void)
{
	return true;
}

/* A condition that never ends (libjq's jq_next() cannot be stopped) is cut
 * off with a message: past the time bound, or at once when the caller's
 * stop says so (a signal); before, the run hung for good. */
static void test_endless_is_bounded(void)
{
	jv s = jv_parse(state);
	bool b;

	jqexpr_set_bounds(200, NULL);
	CHECK(jqexpr_test(&b, "until(false; .)", s) == -1);
	CHECK_MSG(strstr(forge_last_error(), "did not end within 200 ms") != NULL, "%s", forge_last_error());
	jqexpr_set_bounds(600000, stop_now);
	CHECK(jqexpr_test(&b, "last(range(1e15))", s) == -1);
	CHECK_MSG(strstr(forge_last_error(), "was interrupted") != NULL, "%s", forge_last_error());
	jqexpr_set_bounds(0, NULL);
	/* the same program still answers afterwards */
	CHECK(jqexpr_test(&b, "[.review.findings[] | .severity] | index(\"critical\") == 0", s) == 0 && b);
	CHECK(jqexpr_test(&b, "[.review.findings[] | .severity] | index(\"critical\") == 0", s) == 0 && b);
	jv_free(s);
}

int main(void)
{
	RUN(test_truthiness);
	RUN(test_errors_are_reported);
	RUN(test_native_matches_libjq);
	RUN(test_one_compile);
	RUN(test_check_subset_without_libjq);
	RUN(test_deep_is_refused);
	RUN(test_endless_is_bounded);
	return unit_done();
}
