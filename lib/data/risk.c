/* risk.c - risk levels and their score bands; see risk.h. */
#include "data/risk.h"
#include "core/json.h"

#include <math.h>
#include <string.h>

static const char *const names[] = { "low", "medium", "high", "critical" };

/* Each band's lowest and highest score (two decimals: a band ends one
 * hundredth below the next one's start, written out so that the JSON a
 * clamped score is written as says 0.49, not 0.48999999999999999). */
static const double lowest[] = { 0, 0.25, 0.5, 0.75 };
static const double highest[] = { 0.24, 0.49, 0.74, 1 };

#define LEVELS ((int)(sizeof names / sizeof *names))

const char *risk_level_name(enum risk_level l)
{
	return (int)l >= 0 && (int)l < LEVELS ? names[l] : "critical";
}

int risk_level_parse(enum risk_level *out, const char *name)
{
	for (int i = 0; name && i < LEVELS; i++) {
		if (strcmp(name, names[i]) == 0) {
			*out = (enum risk_level)i;
			return 0;
		}
	}
	return -1;
}

enum risk_level risk_level_of(double score)
{
	int l = LEVELS - 1;

	while (l > 0 && !(score >= lowest[l]))
		l--;
	return (enum risk_level)l;
}

void risk_band(double *lo, double *hi, enum risk_level l)
{
	int i = (int)l >= 0 && (int)l < LEVELS ? (int)l : LEVELS - 1;

	*lo = lowest[i];
	*hi = highest[i];
}

double risk_clamp(enum risk_level l, double score)
{
	double lo, hi;

	risk_band(&lo, &hi, l);
	if (isnan(score) || score < lo)
		return lo;
	/* (0.495 is medium's by risk_level_of, but shown to two decimals it
	 * reads 0.50, a high score: the band's end is its two-decimal top) */
	return score > hi ? hi : score;
}

int risk_of_plan(enum risk_level *level, double *score, double *stated, jv plan_risk)
{
	*level = RISK_LOW;
	*score = 0;
	*stated = -1;
	if (jv_get_kind(plan_risk) != JV_KIND_OBJECT ||
	    risk_level_parse(level, json_get_str(plan_risk, "level")) < 0)
		return -1;
	*stated = json_get_num(plan_risk, "score", -1);
	*score = risk_clamp(*level, *stated < 0 ? NAN : *stated);
	return 0;
}

jv risk_plan_normalise(jv plan_risk, bool *moved)
{
	enum risk_level level;
	double score, stated;

	if (moved)
		*moved = false;
	if (risk_of_plan(&level, &score, &stated, plan_risk) < 0 || stated < 0 || score == stated)
		return plan_risk;
	if (moved)
		*moved = true;
	return json_set(plan_risk, "score", jv_number(score));
}
