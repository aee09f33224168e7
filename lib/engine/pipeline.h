/*
 * pipeline.h - the run's state machine (seed 001 §3.1) and what comes after
 * each phase (DESIGN.md §4; seed 001 §3.2).
 *
 * States and their transitions:
 *   idle         -> planning, or the first phase `--phases` asks for
 *   planning     -> implementing | completed (dry run) | failed | paused
 *   implementing -> reviewing | testing | deploying | completed | failed | paused
 *   reviewing    -> implementing (bounce) | testing | deploying | completed | failed | paused
 *   testing      -> implementing (bounce) | deploying | completed | failed | paused
 *   deploying    -> completed | failed | paused
 *   paused       -> planning | implementing | reviewing | testing | deploying | failed
 *   completed, failed -> idle
 * (seed 001's table, plus the shortcuts that `--phases` makes possible: a run
 * of plan,implement,review ends after review.)
 *
 * After a phase ends with a status, pipeline_decide() says what is next:
 *   ok        the next requested phase, or the end (a dry run ends after plan)
 *   rejected  review: back to implement while bounces.review_condition holds
 *               and fewer than bounces.review_max review bounces happened,
 *               then a human;
 *             test: back to implement with the failures whose suggested fix
 *               has confidence > bounces.test_fix_confidence, at most
 *               bounces.test_max times; no fixable failure -> a human;
 *             plan, implement, deploy: the run ends rejected
 *   escalated a human
 *   skipped   the run fails (a guard did not hold)
 *   tripped   the run stops (a breaker)
 *   failed    the run fails
 */
#ifndef FORGE_PIPELINE_H
#define FORGE_PIPELINE_H

#include <jv.h>
#include <stdbool.h>

struct config;

enum pipeline_state {
	PL_IDLE, PL_PLANNING, PL_IMPLEMENTING, PL_REVIEWING, PL_TESTING, PL_DEPLOYING,
	PL_COMPLETED, PL_FAILED, PL_PAUSED, PL_NSTATES
};

const char *pipeline_state_name(enum pipeline_state s);
/* The state a phase runs in: plan -> planning, …; PL_NSTATES when unknown. */
enum pipeline_state pipeline_state_of(const char *phase);
bool pipeline_can_transition(enum pipeline_state from, enum pipeline_state to);

/* The five phases in order. */
extern const char *const pipeline_phases[5];
/* The result key a phase writes into the state (plan, changes, review, tests, deployment). */
const char *pipeline_result_key(const char *phase);

enum pipeline_action {
	PL_ACT_NEXT,        /* run `next` */
	PL_ACT_BOUNCE,      /* run implement again; `bounce` goes into state.bounces */
	PL_ACT_HUMAN,   /* a human decides (reason) */
	PL_ACT_DONE,        /* the run completed */
	PL_ACT_REJECTED,    /* the run ended with a phase saying no */
	PL_ACT_TRIPPED,     /* a breaker stopped it */
	PL_ACT_FAILED       /* it failed */
};

struct pipeline_decision {
	enum pipeline_action action;
	const char *next;           /* static; PL_ACT_NEXT and PL_ACT_BOUNCE */
	char reason[512];
	jv bounce;                  /* PL_ACT_BOUNCE: {"from","to","n","reason"}; else null */
};

/*
 * Decide after `phase` ended with `status` (state borrowed).  `phases` is
 * the requested list (NULL-terminated; NULL = all five).  -1 with a message
 * when a configured condition does not evaluate.  out->bounce must be freed
 * (jv_free) by the caller.
 */
int pipeline_decide(struct pipeline_decision *out, const struct config *cfg, jv state,
		    const char *phase, const char *status, const char *const *phases, bool dry_run);

/*
 * A bounce rule that replaces the configuration's for review and test (a
 * pipeline file's bounce.when and bounce.max): when NULL or max < 0 keep
 * bounces.PHASE_condition / bounces.PHASE_max.
 */
struct pipeline_bounce_rule {
	const char *when;
	int max;
};

/* pipeline_decide() (all phases, not a dry run) with the bounce rule `rule` (NULL: the configuration's). */
int pipeline_decide_with(struct pipeline_decision *out, const struct config *cfg, jv state,
			 const char *phase, const char *status, const struct pipeline_bounce_rule *rule);

/* How many bounces from `from` the state records.  Borrows state. */
int pipeline_bounces(jv state, const char *from);

/*
 * Whether the state's changes are empty: the run's branch holds no change
 * against its base -- changes.empty (forge-implement's), or, in a state of
 * an older one, no file and changes.commit its base_commit (no commit).
 * False when the state has no changes.  Borrows state.
 */
bool pipeline_changes_empty(jv state);

/* The phase after `phase` in the requested list, or NULL. */
const char *pipeline_next_phase(const char *phase, const char *const *phases);

#endif
