/* pipeline.c - the run's state machine and decisions; see pipeline.h. */
#include "engine/pipeline.h"
#include "data/config.h"
#include "core/forge.h"
#include "core/jqexpr.h"
#include "core/json.h"
#include "data/stream.h"

#include <stdio.h>
#include <string.h>

const char *const pipeline_phases[5] = { "plan", "implement", "review", "test", "deploy" };

static const char *const state_names[PL_NSTATES] = {
	"idle", "planning", "implementing", "reviewing", "testing", "deploying",
	"completed", "failed", "paused",
};

#define T(s) (1u << (s))
static const unsigned transitions[PL_NSTATES] = {
	[PL_IDLE] = T(PL_PLANNING) | T(PL_IMPLEMENTING) | T(PL_REVIEWING) | T(PL_TESTING) | T(PL_DEPLOYING),
	[PL_PLANNING] = T(PL_IMPLEMENTING) | T(PL_COMPLETED) | T(PL_FAILED) | T(PL_PAUSED),
	[PL_IMPLEMENTING] = T(PL_REVIEWING) | T(PL_TESTING) | T(PL_DEPLOYING) | T(PL_COMPLETED) |
			    T(PL_FAILED) | T(PL_PAUSED),
	[PL_REVIEWING] = T(PL_IMPLEMENTING) | T(PL_TESTING) | T(PL_DEPLOYING) | T(PL_COMPLETED) |
			 T(PL_FAILED) | T(PL_PAUSED),
	[PL_TESTING] = T(PL_IMPLEMENTING) | T(PL_DEPLOYING) | T(PL_COMPLETED) | T(PL_FAILED) | T(PL_PAUSED),
	[PL_DEPLOYING] = T(PL_COMPLETED) | T(PL_FAILED) | T(PL_PAUSED),
	[PL_PAUSED] = T(PL_PLANNING) | T(PL_IMPLEMENTING) | T(PL_REVIEWING) | T(PL_TESTING) |
		      T(PL_DEPLOYING) | T(PL_FAILED),
	[PL_COMPLETED] = T(PL_IDLE),
	[PL_FAILED] = T(PL_IDLE),
};

const char *pipeline_state_name(enum pipeline_state s)
{
	return s < PL_NSTATES ? state_names[s] : "unknown";
}

enum pipeline_state pipeline_state_of(const char *phase)
{
	for (int i = 0; i < 5; i++)
		if (phase && strcmp(phase, pipeline_phases[i]) == 0)
			return (enum pipeline_state)(PL_PLANNING + i);
	return PL_NSTATES;
}

bool pipeline_can_transition(enum pipeline_state from, enum pipeline_state to)
{
	return from < PL_NSTATES && to < PL_NSTATES && (transitions[from] & T(to));
}

const char *pipeline_result_key(const char *phase)
{
	static const char *const keys[5] = { "plan", "changes", "review", "tests", "deployment" };

	for (int i = 0; i < 5; i++)
		if (strcmp(phase, pipeline_phases[i]) == 0)
			return keys[i];
	return phase;
}

bool pipeline_changes_empty(jv state)
{
	jv changes = json_get(state, "changes"), files = json_get(changes, "files");
	const char *commit = json_get_str(changes, "commit"), *base = json_get_str(changes, "base_commit");
	bool empty = json_get_bool(changes, "empty", false) ||
		     (jv_get_kind(files) == JV_KIND_ARRAY && jv_array_length(jv_copy(files)) == 0 && commit &&
		      base && strcmp(commit, base) == 0);

	jv_free(files);
	jv_free(changes);
	return empty;
}

int pipeline_bounces(jv state, const char *from)
{
	jv bounces = json_get(state, "bounces");
	int n = 0;

	if (jv_get_kind(bounces) == JV_KIND_ARRAY) {
		jv_array_foreach(bounces, i, b) {
			const char *f = json_get_str(b, "from");
			n += f && strcmp(f, from) == 0;
			jv_free(b);
		}
	}
	jv_free(bounces);
	return n;
}

static bool requested(const char *phase, const char *const *phases)
{
	if (!phases)
		return true;
	for (; *phases; phases++)
		if (strcmp(*phases, phase) == 0)
			return true;
	return false;
}

const char *pipeline_next_phase(const char *phase, const char *const *phases)
{
	int i = 0;

	while (i < 5 && strcmp(pipeline_phases[i], phase) != 0)
		i++;
	for (i++; i < 5; i++)
		if (requested(pipeline_phases[i], phases))
			return pipeline_phases[i];
	return NULL;
}

static jv bounce_record(const char *from, int n, const char *reason)
{
	jv b = jv_object();

	b = json_set(b, "from", jv_string(from));
	b = json_set(b, "to", jv_string("implement"));
	b = json_set(b, "n", jv_number(n));
	return json_set(b, "reason", jv_string(reason));
}

/* Test failures a bounce can fix: a suggested fix with confidence above the threshold. */
static int fixable_failures(jv state, double threshold)
{
	jv tests = json_get(state, "tests");
	jv failures = json_get(tests, "failures");
	int n = 0;

	if (jv_get_kind(failures) == JV_KIND_ARRAY) {
		jv_array_foreach(failures, i, f) {
			const char *fix = json_get_str(f, "suggested_fix");
			const char *cls = json_get_str(f, "classification");
			if (fix && *fix && json_get_num(f, "confidence", 0) > threshold &&
			    !(cls && strcmp(cls, "flaky") == 0))
				n++;
			jv_free(f);
		}
	}
	jv_free(failures);
	jv_free(tests);
	return n;
}

static int condition(bool *out, const struct config *cfg, const char *key, const char *dflt, jv state,
		     const struct pipeline_bounce_rule *rule)
{
	const char *expr = rule && rule->when ? rule->when : config_get_str(cfg, key);

	return jqexpr_test(out, expr ? expr : dflt, state);
}

static int bound(const struct config *cfg, const char *key, const struct pipeline_bounce_rule *rule)
{
	return rule && rule->max >= 0 ? rule->max : (int)config_get_num(cfg, key);
}

static int decide_review(struct pipeline_decision *d, const struct config *cfg, jv state,
			 const struct pipeline_bounce_rule *rule)
{
	bool again;
	int max = bound(cfg, "bounces.review_max", rule);
	int done = pipeline_bounces(state, "review");

	if (condition(&again, cfg, "bounces.review_condition", ".review.decision == \"request_changes\"", state,
		      rule) < 0)
		return -1;
	if (!again) {
		d->action = PL_ACT_REJECTED;
		snprintf(d->reason, sizeof d->reason, "review said no and its bounce condition does not hold");
		return 0;
	}
	if (done >= max) {
		d->action = PL_ACT_HUMAN;
		snprintf(d->reason, sizeof d->reason,
			 "review still requests changes after %d bounce%s (limit %d)", done, done == 1 ? "" : "s", max);
		return 0;
	}
	jv review = json_get(state, "review");
	jv findings = json_get(review, "findings");
	int n = jv_get_kind(findings) == JV_KIND_ARRAY ? jv_array_length(jv_copy(findings)) : 0;
	jv_free(findings);
	jv_free(review);
	d->action = PL_ACT_BOUNCE;
	d->next = "implement";
	snprintf(d->reason, sizeof d->reason, "review requested changes (%d finding%s)", n, n == 1 ? "" : "s");
	d->bounce = bounce_record("review", done + 1, d->reason);
	return 0;
}

static int decide_test(struct pipeline_decision *d, const struct config *cfg, jv state,
		       const struct pipeline_bounce_rule *rule)
{
	bool again;
	int max = bound(cfg, "bounces.test_max", rule);
	int done = pipeline_bounces(state, "test");
	double threshold = config_get_num(cfg, "bounces.test_fix_confidence");

	if (condition(&again, cfg, "bounces.test_condition", ".tests.summary.failed > 0", state, rule) < 0)
		return -1;
	if (!again) {
		d->action = PL_ACT_REJECTED;
		snprintf(d->reason, sizeof d->reason, "tests said no and their bounce condition does not hold");
		return 0;
	}
	int fixable = fixable_failures(state, threshold);
	if (fixable == 0) {
		d->action = PL_ACT_HUMAN;
		snprintf(d->reason, sizeof d->reason,
			 "tests failed and no failure has a suggested fix with confidence > %.2f", threshold);
		return 0;
	}
	if (done >= max) {
		d->action = PL_ACT_HUMAN;
		snprintf(d->reason, sizeof d->reason, "tests still fail after %d bounce%s (limit %d)",
			 done, done == 1 ? "" : "s", max);
		return 0;
	}
	d->action = PL_ACT_BOUNCE;
	d->next = "implement";
	snprintf(d->reason, sizeof d->reason, "%d fixable test failure%s", fixable, fixable == 1 ? "" : "s");
	d->bounce = bounce_record("test", done + 1, d->reason);
	return 0;
}

static int decide(struct pipeline_decision *d, const struct config *cfg, jv state, const char *phase,
		  const char *status, const char *const *phases, bool dry_run, const struct pipeline_bounce_rule *rule)
{
	enum state_status st = state_status_of(status);

	memset(d, 0, sizeof *d);
	d->bounce = jv_null();
	if (st == STATE_OK) {
		d->next = dry_run && strcmp(phase, "plan") == 0 ? NULL : pipeline_next_phase(phase, phases);
		d->action = d->next ? PL_ACT_NEXT : PL_ACT_DONE;
		snprintf(d->reason, sizeof d->reason, "%s %s", phase,
			 dry_run && !d->next ? "done (dry run)" : "passed");
		return 0;
	}
	if (st == STATE_REJECTED) {
		if (strcmp(phase, "review") == 0)
			return decide_review(d, cfg, state, rule);
		if (strcmp(phase, "test") == 0)
			return decide_test(d, cfg, state, rule);
		d->action = PL_ACT_REJECTED;
		snprintf(d->reason, sizeof d->reason, "%s said no", phase);
		return 0;
	}
	if (st == STATE_ESCALATED) {
		d->action = PL_ACT_HUMAN;
		snprintf(d->reason, sizeof d->reason, "%s needs a human", phase);
		return 0;
	}
	if (st == STATE_TRIPPED) {
		d->action = PL_ACT_TRIPPED;
		snprintf(d->reason, sizeof d->reason, "a circuit breaker tripped in %s", phase);
		return 0;
	}
	/* A guard that did not hold is a "no" (exit 1), not a failure. */
	if (st == STATE_SKIPPED) {
		d->action = PL_ACT_REJECTED;
		snprintf(d->reason, sizeof d->reason, "the guard of %s did not hold", phase);
		return 0;
	}
	d->action = PL_ACT_FAILED;
	snprintf(d->reason, sizeof d->reason, "%s failed", phase);
	return 0;
}

int pipeline_decide(struct pipeline_decision *d, const struct config *cfg, jv state,
		    const char *phase, const char *status, const char *const *phases, bool dry_run)
{
	return decide(d, cfg, state, phase, status, phases, dry_run, NULL);
}

int pipeline_decide_with(struct pipeline_decision *d, const struct config *cfg, jv state,
			 const char *phase, const char *status, const struct pipeline_bounce_rule *rule)
{
	return decide(d, cfg, state, phase, status, NULL, false, rule);
}
