/*
 * gateview.h - what a human gate shows: one renderer per kind of gate,
 * turning the gate and the run's state into text, and the prompt that asks
 * with it (app/prompt.h).
 *
 * The kind comes from the gate's id (gates.h, config "gates"):
 *   plan     architecture_approval, plan_result_N, escalation_plan: the
 *            plan's summary, tasks and their files, risk level and reasons,
 *            estimate;
 *   review   review_changes_N, review_approved_N, security_findings,
 *            implement_result_N, escalation_implement/review: the decision,
 *            the diff stat and the findings (file:line: severity: message);
 *   tests    test_failures_N, test_result_N, escalation_test: the failing
 *            tests and their suggested fixes;
 *   deploy   production_deploy, staging_deploy, escalation_deploy: the
 *            environment, strategy, canary steps and health check URL;
 *   other    cost_overrun and the user's gates: the condition and the
 *            run's cost, budget and tokens.
 * A pipeline node's own gate (supervise_graph.c) names in "shows" the
 * result keys of the nodes it needs: those documents are shown, whatever
 * its id (compile's gate 1 shows the rules, gate 2 the db_schema).
 * The summary is what the prompt shows first (lists cut to a few items,
 * saying how many more); the full text ([v]iew) has everything: the whole
 * plan, every finding, the whole diff, the tests' output.
 *
 * The renderers are pure: they read gate, state and cfg (borrowed), write
 * nothing, and return a string the caller frees.
 */
#ifndef FORGE_GATEVIEW_H
#define FORGE_GATEVIEW_H

#include "app/prompt.h"

#include <jv.h>
#include <stdbool.h>

struct config;

enum gateview_kind { GATEVIEW_PLAN, GATEVIEW_REVIEW, GATEVIEW_TESTS, GATEVIEW_DEPLOY, GATEVIEW_OTHER };

enum gateview_kind gateview_kind_of(const char *gate_id);
/* "plan", "review", "tests", "deploy", "other". */
const char *gateview_kind_name(enum gateview_kind k);

/* The text shown above the question; color: with escape sequences
 * (term.h).  Caller frees. */
char *gateview_summary(jv gate, jv state, const struct config *cfg, bool color);
/* Everything about the decision, for the pager (no colour).  Caller frees. */
char *gateview_full(jv gate, jv state, const struct config *cfg);

/*
 * Ask gate on the terminal with its summary, offering [y]es / [n]o /
 * [e]dit note / [v]iew full / [?] (prompt_ask()); *note as there.
 * watch (NULL: none) ends the question when the gate is decided elsewhere
 * (PROMPT_SETTLED).
 */
enum prompt_answer gateview_ask(jv gate, jv state, const struct config *cfg, char **note,
				const struct prompt_watch *watch);

#endif
