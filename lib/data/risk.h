/*
 * risk.h - a risk's level and score: the one place their bands are defined
 * (DESIGN.md §3: a plan's risk {level, score 0-1, reasons}; a review's
 * risk {score, level}).
 *
 * A score falls in exactly one level's band, scores given to two decimals:
 *
 *   low       0    - 0.24   (score < 0.25)
 *   medium    0.25 - 0.49   (score < 0.5)
 *   high      0.5  - 0.74   (score < 0.75)
 *   critical  0.75 - 1
 *
 * A plan's risk is one unit: its stated level is what it says, and its
 * score is read inside that level's band (risk_of_plan), so a score never
 * implies a level the plan did not state and the level shown is never
 * contradicted by the score shown beside it.  forge-plan writes plans so
 * (risk_plan_normalise); forge-review reads any plan's risk so.
 *
 * Ownership: jv arguments follow json.h (consumed unless "borrows").
 */
#ifndef FORGE_RISK_H
#define FORGE_RISK_H

#include <jv.h>
#include <stdbool.h>

enum risk_level { RISK_LOW, RISK_MEDIUM, RISK_HIGH, RISK_CRITICAL };

/* "low", "medium", "high", "critical" (static). */
const char *risk_level_name(enum risk_level l);

/* 0, or -1 when name (may be NULL) is not a level. */
int risk_level_parse(enum risk_level *out, const char *name);

/* The level whose band holds score (below 0: low; above 1: critical). */
enum risk_level risk_level_of(double score);

/* The lowest and highest score of l's band, as the table above gives them. */
void risk_band(double *lo, double *hi, enum risk_level l);

/* score moved into l's band (its nearest end; NaN: its lowest). */
double risk_clamp(enum risk_level l, double score);

/*
 * A plan's risk (state.plan.risk; borrowed) as one unit: *level its
 * stated level, *score its score clamped into that level's band (the
 * band's lowest score when it gives none), *stated the score it gave (-1
 * when none; differs from *score when it was outside the band).  -1 when
 * it states no known level (jv_null(), not an object, no level): then it
 * says nothing, and the outputs are low, 0 and -1.
 */
int risk_of_plan(enum risk_level *level, double *score, double *stated, jv plan_risk);

/*
 * plan_risk (consumed) with its score moved into its level's band; *moved
 * (may be NULL) says whether it was.  A risk without a score or without a
 * known level is returned as it is.
 */
jv risk_plan_normalise(jv plan_risk, bool *moved);

#endif
