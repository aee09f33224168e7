/*
 * gates.h - human gates (DESIGN.md §4; seed 000 §8.2-8.3).
 *
 * A gate is configured in "gates" (config.h): id, phase, condition (a jq
 * expression over the state, jqexpr.h), prompt, timeout_s and
 * auto_approve_level.  Before the supervisor starts a phase it checks every
 * gate whose phase is the phase just finished, the phase about to start, or
 * "*"; a gate whose condition holds fires once per run.
 *
 * The automation ladder (seed 000 §8.3) is one table, safety.ladder: a row
 * per level 0..4 (safety.automation_level, or `forge run --level N`) giving
 * each decision point a rule: "auto" (runs by itself), "ask" (waits for a
 * human; --auto-approve is a human's yes given in advance) or "human"
 * (waits for a human in person; --auto-approve does not pass it).  The
 * decision points are ladder_points(); a point that is a configured gate's
 * id (architecture_approval, production_deploy, security_findings) takes its
 * rule from the ladder instead of auto_approve_level; the others are gates
 * the supervisor makes when their rule is not "auto" (gates_ladder,
 * gate_for_bounce), so at a level where a point runs by itself nothing is
 * recorded for it.
 *
 * Who may pass a fired gate without asking (gate_auto_decision):
 *   - a gate marked "in_person": true (the supervisor's gate for a question a
 *     phase's agent asked, or for a phase that escalated again after the
 *     re-runs --auto-approve allowed): nobody;
 *   - a ladder point whose rule is "human" (production_deploy at every level):
 *     nobody; nor a missing rule (fails closed);
 *   - any other gate passes with --auto-approve ("flag"), or by the level
 *     ("automation_level"): a ladder point whose rule is "auto", another
 *     gate when the level is at least its auto_approve_level (null: never).
 * Otherwise a human decides: on a terminal at once, else the gate is
 * recorded as pending and the run pauses until `forge gate approve|reject`.
 * A pending gate past its timeout counts as rejected ("expired").
 */
#ifndef FORGE_GATES_H
#define FORGE_GATES_H

#include <jv.h>
#include <stdbool.h>

#include "core/ids.h"

struct config;
struct store;

/*
 * The configured gates that fire for a step from phase `done` (may be NULL
 * at the start) to phase `next` (may be NULL at the end), over state
 * (borrowed): an array of gate objects from the config.  A condition that
 * fails to evaluate is an error (-1 with the gate's id and libjq's message):
 * a broken safety check must not pass silently.
 */
int gates_fired(jv *out, const struct config *cfg, jv state, const char *done, const char *next);

/* ---- the automation ladder ------------------------------------------- */

enum ladder_rule { LADDER_AUTO, LADDER_ASK, LADDER_HUMAN };

/* A decision point of the ladder: its key in a row, and what it decides in
 * words (for `forge config --explain`).  By_risk: the row's value is an
 * object {low, medium, high, critical} of rules. */
struct ladder_point {
	const char *key;
	const char *words;
	bool by_risk;
};

/* The decision points in the order --explain shows them; static, ends with
 * a {NULL} entry. */
const struct ladder_point *ladder_points(void);

/* Whether name is a decision point's key. */
bool ladder_is_point(const char *name);

/*
 * The rule of `point` at `level` from cfg's safety.ladder; risk names the
 * entry of a by_risk point (NULL or an unknown level: "critical", the
 * strictest).  LADDER_HUMAN when the table has no such rule (cfg NULL, a
 * level outside 0..4): a missing rule never passes anything unasked.
 */
enum ladder_rule ladder_rule(const struct config *cfg, int level, const char *point, const char *risk);

/* "auto", "ask", "human".  Static. */
const char *ladder_rule_name(enum ladder_rule r);

/* The row's name ("AI suggests, a human decides"), borrowed from cfg, or
 * NULL. */
const char *ladder_level_name(const struct config *cfg, int level);

/*
 * The ladder's gates between phase `done` (NULL at the start) and `next`
 * (NULL at the end) over state (borrowed), appended to *fired (an array,
 * consumed and replaced): staging_deploy before a deploy that does not go to
 * production; when no other gate fires here (others false, and no
 * staging_deploy) the result of `done`, which the caller says ended ok (a
 * step after parallel nodes asks once for each: state.phase names only the
 * last of them): review_approved by
 * the review's risk level (medium when it has none), else <done>_result.
 * Only gates whose rule at `level` is not "auto".  A result's gate id ends in
 * _N for the Nth attempt (after N-1 bounces), so each attempt asks again.
 * Each gate is {id, ladder, phase, prompt, timeout_s[, risk]}.
 */
jv gates_ladder(jv fired, const struct config *cfg, int level, jv state, const char *done,
		const char *next, bool others);

/*
 * The gate a bounce (borrowed: {"from","n",…} from pipeline_decide) must pass
 * at `level` before it goes back: review_changes (from review) or
 * test_failures (from test, and any other node, whose id follows:
 * test_failures_lint), id suffixed _N for the Nth bounce from there, or
 * jv_null() when the ladder lets it bounce by itself.  Approving it takes
 * the AI's proposal: back to implement (the bounce's "to").
 */
jv gate_for_bounce(const struct config *cfg, int level, jv bounce);

enum gate_auto { GATE_ASK, GATE_AUTO_FLAG, GATE_AUTO_LEVEL };

/* Whether a fired gate (borrowed) passes unasked at automation_level (see
 * above); cfg gives the ladder. */
enum gate_auto gate_auto_decision(const struct config *cfg, jv gate, int automation_level,
				  bool auto_approve_flag);

/* Record a fired gate as pending; *id_out is the new gate row's id. */
int gate_request(char id_out[ULID_LEN + 1], struct store *st, const char *trace_id, jv gate,
		 const char *phase);

/*
 * Decide a pending gate: approve or reject, by whom ("human", "auto",
 * "flag"), with an optional note.  GATE_REFUSED (< 0) with a message when
 * the gate is unknown, already decided, or past its expiry (it counts as
 * rejected); -1 with a message when the database failed.
 */
#define GATE_REFUSED (-2)
/* Whether a pending gate row (borrowed) is past its expiry now: it counts
 * as expired, recorded so or not yet. */
bool gate_past_expiry(jv row);
int gate_decide(struct store *st, const char *id, bool approve, const char *by, const char *note);

/*
 * The latest row of gate `gate` for trace: {"id","trace_id","gate","phase",
 * "prompt","status","decided_by","note","requested_at","expires_at",
 * "decided_at"}, or jv_null().  A pending row past its expiry is marked
 * "expired" first.
 */
int gate_latest(jv *out, struct store *st, const char *trace_id, const char *gate);

/* A gate row by id (same shape), or jv_null(). */
int gate_get(jv *out, struct store *st, const char *id);

/* Gate rows, newest first; trace_id NULL = every trace; only pending ones
 * when pending_only.  A pending row past its expiry is listed "expired"
 * (recorded so too, unless the store is read-only). */
int gate_list(jv *out, struct store *st, const char *trace_id, bool pending_only);

/* A gate row's status: one enum, the strings the store keeps. */
enum gate_status { GATE_PENDING, GATE_APPROVED, GATE_REJECTED, GATE_EXPIRED, GATE_UNKNOWN };
/* "pending", "approved", "rejected", "expired"; "unknown".  Static. */
const char *gate_status_name(enum gate_status s);
/* The status name names; GATE_UNKNOWN for NULL or another string. */
enum gate_status gate_status_of(const char *name);

#endif
