/*
 * reflect_run.h - run reflection, Loop 3 (seed 000 §10.4; DESIGN.md §4):
 * the run reflects on itself while it runs, not only after.
 *
 * THE TRIGGERS (labels, stable: events, state and memories use them)
 *   "2+ bounces"            review and test sent implement back twice or
 *                           more ("why are fixes not sticking?")
 *   ">50% of budget"        the run has cost over half of budget.usd
 *   ">10% tool error rate"  over 10% of the run's tool calls failed, over at
 *                           least REFLECT_MIN_TOOL_CALLS calls
 *   "human override"        a human approved a gate over a phase's "no" (an
 *                           escalation_* gate decided by "human")
 * The supervisor asks reflect_run_check() after every phase result it has
 * checkpointed and decided on (a bounce added, a human asked), and once at
 * the end of an ended run.  Each trigger fires at most once per run:
 * state.reflection.fired records it, and the state is checkpointed, so a
 * resumed run does not fire it again.  No trigger, no model call.
 *
 * A FIRING makes one call on the fast model (llm_options_for(cfg, "reflect",
 * fast): llm.phases.reflect overrides it; cassettes and the llm_calls log
 * name it "reflect-fast", attempt = the run's reflection call number)
 * with the prompt schemas/prompts/reflect_run.md and a digest of the run's
 * events (reflect_digest), forced to call record_run_learnings, whose input
 * must match schemas/tools/record_learnings.json.  Each learning becomes a
 * memory: source "run_reflection", confidence at most 0.5 (seed 002 §9),
 * tags + "run_reflection" and "trigger:<id>", episode {"trace_id",
 * "trigger","phase"}.  The learnings (the newest REFLECT_STATE_LEARNINGS)
 * also go into state.reflection.learnings, which forge-implement puts into
 * its next prompt.  The call's cost is added to state.cost and
 * state.reflection.cost_usd; a firing is skipped (no call) when that has
 * reached reflect.budget (USD) or memory.reflect is false, and when the
 * run is being stopped (ctx->stopping: cancelled, interrupted).  Nothing
 * here fails the run: a skipped firing, a failed call, an answer that does
 * not match the schema each end in an event, and the run goes on.  A call
 * cut off by the run's stop (Ctrl-C, SIGTERM, forge cancel) is no failed
 * reflection: its firing is skipped, with what the cut call cost (llm_call
 * bills one whose request was sent: estimated from its size).
 *
 * EVENTS (through ctx->emit)
 *   run.reflection          {"trigger","phase","learnings":[ids],"cost","model"}
 *   run.reflection_skipped  {"trigger","phase","reason"}; for a call the
 *                           run's stop cut off also "cost", "model",
 *                           "cut_short": true and, when its usage was
 *                           estimated, "usage_estimated": true
 *   run.reflection_failed   {"trigger","phase","error","cost"}
 *   memory.stored           {"id","source":"run_reflection","trigger"}
 *   at the end, always:     run.reflection {"triggers":[the triggers that
 *                           hold at the end],"fired":[every one fired in
 *                           the run]} - the event's meaning before Loop 3
 *                           became a loop, with "fired" added.
 *
 * STATE (schemas/state.schema.json, "reflection")
 *   {"fired":[labels],"learnings":[{"id","type","content","context",
 *    "trigger"}],"calls":N,"cost_usd":USD}
 */
#ifndef FORGE_REFLECT_RUN_H
#define FORGE_REFLECT_RUN_H

#include <jv.h>
#include <stdbool.h>

struct config;
struct store;

#define REFLECT_MIN_TOOL_CALLS 10   /* fewer calls say little about a rate */
#define REFLECT_STATE_LEARNINGS 10  /* kept in the state for implement */
#define REFLECT_DEFAULT_BUDGET 0.50 /* USD, seed 003's reflection budget */

/* What the state alone does not say, read from the store. */
struct reflect_facts {
	long tool_calls, tool_failed;   /* the run's tool calls so far */
	bool human_override;            /* a human passed a gate over a "no" */
};

/* Read the facts of trace from st.  0, or -1 with a message. */
int reflect_facts_read(struct reflect_facts *f, struct store *st, const char *trace);

/* The labels of the triggers that hold for state and f, in the order of
 * the table above (a new array).  Pure; borrows state. */
jv reflect_triggers(jv state, const struct reflect_facts *f);

/* Whether state.reflection.fired holds label.  Borrows state. */
bool reflect_fired(jv state, const char *label);

/* The trigger's id for tags ("bounces", "budget", "tool_errors",
 * "human_override"), NULL for an unknown label.  Static. */
const char *reflect_trigger_id(const char *label);

/*
 * The digest the model reads: the trigger and its question, the task, the
 * phases run, cost against budget, each bounce with the findings or
 * failures that sent implement back (a finding that sent it back before is
 * marked "again"), the failed tool calls, what humans decided at gates.
 * At most about 12 KB.  Pure; borrows state and events (an array of event
 * records as the store keeps them); malloc'd.
 */
char *reflect_digest(jv state, jv events, const char *trigger);

/*
 * state with one firing recorded: trigger added to reflection.fired (NULL:
 * a firing the run's stop cut off, left to fire again, its cost counted),
 * `learnings` (an array of {"id","type","content","context"}, consumed)
 * appended to reflection.learnings with their trigger (the newest
 * REFLECT_STATE_LEARNINGS kept), `called` counted in reflection.calls,
 * usd and tokens added to reflection.cost_usd, cost.usd, cost.tokens and
 * taken from budget.remaining_usd.  Pure; consumes state.
 */
jv reflect_record(jv state, const char *trigger, jv learnings, bool called, double usd, double tokens);

struct reflect_ctx {
	const struct config *cfg;       /* borrowed */
	struct store *store;            /* borrowed; memories, events, the llm_calls log */
	const char *trace;
	const char *phase;              /* where the run stands: the phase just done, or "end" */
	/* Emit an event of the run (payload consumed).  Required.  It must
	 * leave no transaction open on store: memories and the llm_calls log
	 * are written in their own after it. */
	void (*emit)(void *payload, const char *type, jv event_payload);
	/* Emit the llm.called event of a firing's model call, under the
	 * phase "reflect" (every paid call has one: forge show and forge
	 * report sum a phase's cost from them): its payload and cost
	 * (llm_called_payload, llm_called_cost; both consumed) and how long it
	 * took.  Required; given emit_payload. */
	void (*called)(void *payload, jv event_payload, jv cost, long long duration_ms);
	void *emit_payload;
	/* Why the run is being stopped now, or NULL (the function, or what
	 * it returns): "cancelled" (forge cancel) or "interrupted" (Ctrl-C,
	 * SIGTERM).  Asked before a firing's call and after a call that was
	 * interrupted; given emit_payload. */
	const char *(*stopping)(void *payload);
};

/*
 * Evaluate the triggers now and fire each that holds and has not fired:
 * *state is updated (reflect_record) for every firing, called or skipped.
 * With `end`, the end-of-run run.reflection summary is emitted after.
 * Returns the number of firings (0: *state unchanged, nothing to
 * checkpoint).  Never fails: what went wrong is in an event.
 */
int reflect_run_check(jv *state, const struct reflect_ctx *c, bool end);

#endif
