/* test_jqexpr.c - jq expressions over a state. */
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
	CHECK(jqexpr_check(".a | .b") == 0);
	CHECK(jqexpr_check(".a |") == -1);
	jv_free(s);
}

/* Prepared together: the same answers and errors as each alone, and an
 * error raised by one leaves the others working. */
static void test_prepared(void)
{
	jv s = jv_parse(state);
	bool b = true;
	jv v;
	const char *exprs[] = {
		".plan.risk.level == \"high\" # a comment to the end of the line",
		".cost.usd > .budget.usd * 0.9",
		"[] | .[]",
		"def twice: . * 2; .cost.usd | twice",
		".cost.usd | keys",
		NULL,
		".cost.usd > .budget.usd * 0.9",        /* twice: once in the program */
	};

	CHECK(jqexpr_prepare(exprs, sizeof exprs / sizeof exprs[0]) == 5);
	CHECK(jqexpr_prepare(exprs, 2) == 0);          /* already there */
	CHECK(jqexpr_test(&b, exprs[0], s) == 0 && b);
	CHECK(jqexpr_test(&b, exprs[1], s) == 0 && !b);
	CHECK(jqexpr_test(&b, exprs[2], s) == 0 && !b);
	CHECK(jqexpr_first(&v, exprs[3], s) == 0 && jv_get_kind(v) == JV_KIND_NUMBER &&
	      jv_number_value(v) == 82);
	jv_free(v);
	CHECK(jqexpr_test(&b, exprs[4], s) == -1);
	CHECK_MSG(strstr(forge_last_error(), "has no keys") != NULL, "%s", forge_last_error());
	/* the failed program went; the others compile again, alone */
	CHECK(jqexpr_test(&b, exprs[0], s) == 0 && b);
	CHECK(jqexpr_first(&v, exprs[3], s) == 0 && jv_number_value(v) == 82);
	jv_free(v);
	/* one that does not compile: nothing is prepared, each reports alone */
	const char *bad[] = { ".a ==", ".b == 1", ".c" };
	CHECK(jqexpr_prepare(bad, 3) == 0);
	CHECK(jqexpr_test(&b, ".a ==", s) == -1);
	CHECK_MSG(strstr(forge_last_error(), "does not compile") != NULL, "%s", forge_last_error());
	CHECK(jqexpr_test(&b, ".b == 1", s) == 0 && !b);
	jv_free(s);
}

int main(void)
{
	RUN(test_truthiness);
	RUN(test_errors_are_reported);
	RUN(test_prepared);
	return unit_done();
}
