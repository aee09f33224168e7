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

int main(void)
{
	RUN(test_truthiness);
	RUN(test_errors_are_reported);
	return unit_done();
}
