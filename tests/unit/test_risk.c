/*
 * test_risk.c - risk levels, their score bands, and a plan's risk read as
 * one unit (lib/data/risk.h).
 */
#include "core/json.h"
#include "data/risk.h"
#include "unit.h"

#include <math.h>
#include <stdlib.h>

static void test_levels_and_bands(void)
{
	static const struct {
		double score;
		enum risk_level level;
	} at[] = {
		{ -1, RISK_LOW }, { 0, RISK_LOW }, { 0.24, RISK_LOW }, { 0.2499, RISK_LOW },
		{ 0.25, RISK_MEDIUM }, { 0.49, RISK_MEDIUM }, { 0.4999, RISK_MEDIUM },
		{ 0.5, RISK_HIGH }, { 0.74, RISK_HIGH }, { 0.75, RISK_CRITICAL }, { 1, RISK_CRITICAL },
		{ 2, RISK_CRITICAL },
	};
	enum risk_level l;

	for (size_t i = 0; i < sizeof at / sizeof *at; i++)
		CHECK_MSG(risk_level_of(at[i].score) == at[i].level, "%g", at[i].score);
	CHECK(risk_level_of(NAN) == RISK_LOW);
	for (int i = RISK_LOW; i <= RISK_CRITICAL; i++) {
		double lo, hi;

		risk_band(&lo, &hi, (enum risk_level)i);
		/* each end of a band is of that band's level */
		CHECK_MSG(risk_level_of(lo) == (enum risk_level)i && risk_level_of(hi) == (enum risk_level)i,
			  "%s: %g-%g", risk_level_name((enum risk_level)i), lo, hi);
		CHECK(risk_level_parse(&l, risk_level_name((enum risk_level)i)) == 0 && (int)l == i);
	}
	CHECK(risk_level_parse(&l, "severe") == -1);
	CHECK(risk_level_parse(&l, NULL) == -1);
	CHECK(risk_clamp(RISK_MEDIUM, 0.5) == 0.49);
	CHECK(risk_clamp(RISK_MEDIUM, 0.495) == 0.49);   /* shown as 0.50 it would read high */
	CHECK(risk_clamp(RISK_MEDIUM, 0.1) == 0.25);
	CHECK(risk_clamp(RISK_MEDIUM, 0.3) == 0.3);
	CHECK(risk_clamp(RISK_HIGH, 0.2) == 0.5);
	CHECK(risk_clamp(RISK_LOW, 0.3) == 0.24);
	CHECK(risk_clamp(RISK_CRITICAL, 1) == 1);
	CHECK(risk_clamp(RISK_CRITICAL, NAN) == 0.75);
}

static jv plan_risk(const char *level, double score)
{
	jv r = json_set(jv_object(), "reasons", jv_array());

	if (level)
		r = json_set(r, "level", jv_string(level));
	return score < 0 ? r : json_set(r, "score", jv_number(score));
}

/* hunt69 #1: {medium, 0.5} was a high review with the reason "medium". */
static void test_plan_risk_is_one_unit(void)
{
	static const struct {
		const char *level;
		double given, score;
		enum risk_level want;
	} at[] = {
		{ "medium", 0.5, 0.49, RISK_MEDIUM }, { "medium", 0.3, 0.3, RISK_MEDIUM },
		{ "low", 0.3, 0.24, RISK_LOW }, { "high", 0.2, 0.5, RISK_HIGH },
		{ "critical", 0.1, 0.75, RISK_CRITICAL }, { "low", 0, 0, RISK_LOW },
		{ "high", -1, 0.5, RISK_HIGH },   /* no score: its band's lowest */
	};
	enum risk_level l;
	double score, stated;

	for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
		jv r = plan_risk(at[i].level, at[i].given);

		CHECK(risk_of_plan(&l, &score, &stated, r) == 0);
		CHECK_MSG(l == at[i].want && score == at[i].score && risk_level_of(score) == l,
			  "{%s, %g}: %s %g", at[i].level, at[i].given, risk_level_name(l), score);
		CHECK(stated == at[i].given);
		jv_free(r);
	}
	jv r = plan_risk(NULL, 0.9);
	CHECK(risk_of_plan(&l, &score, &stated, r) == -1 && l == RISK_LOW && score == 0);
	jv_free(r);
	r = plan_risk("severe", 0.9);
	CHECK(risk_of_plan(&l, &score, &stated, r) == -1);
	jv_free(r);
	CHECK(risk_of_plan(&l, &score, &stated, jv_null()) == -1);
}

static void test_plan_normalise(void)
{
	bool moved;
	jv r = risk_plan_normalise(plan_risk("medium", 0.5), &moved);

	CHECK(moved);
	CHECK(json_get_num(r, "score", -1) == 0.49);
	CHECK_STR(json_get_str(r, "level"), "medium");
	CHECK(json_has(r, "reasons"));
	/* written as 0.49, not 0.48999999999999999 */
	char *text = json_dumps(jv_copy(r), false);
	CHECK_MSG(strstr(text, "\"score\":0.49") != NULL, "%s", text);
	free(text);
	jv_free(r);

	r = risk_plan_normalise(plan_risk("medium", 0.3), &moved);
	CHECK(!moved && json_get_num(r, "score", -1) == 0.3);
	jv_free(r);
	/* no score, no level: as they are */
	r = risk_plan_normalise(plan_risk("high", -1), &moved);
	CHECK(!moved && !json_has(r, "score"));
	jv_free(r);
	r = risk_plan_normalise(plan_risk(NULL, 0.9), &moved);
	CHECK(!moved && json_get_num(r, "score", -1) == 0.9);
	jv_free(r);
	r = risk_plan_normalise(plan_risk("low", 0.8), NULL);
	CHECK(json_get_num(r, "score", -1) == 0.24);
	jv_free(r);
}

int main(void)
{
	RUN(test_levels_and_bands);
	RUN(test_plan_risk_is_one_unit);
	RUN(test_plan_normalise);
	return unit_done();
}
