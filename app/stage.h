/*
 * stage.h - the stages of `forge compile` (issue 16 part C, seed 004 §6):
 * each is a filter run as `forge-stage NAME [options]` by the shipped
 * pipeline pipelines/compile.json.  A stage is a phase (app/phase.h): the
 * state on stdin, events and one state on stdout, the exit codes of
 * DESIGN.md.  Its typed document goes to the state under the stage's
 * result key (the `result_key` of its node in compile.json) and is checked
 * against schemas/compile/KEY.schema.json.
 *
 *   stage      result key       document
 *   interview  intent           IntentDocument: entities, actions, failure rules, …
 *   change     delta            DeltaRuleSet (edit mode): preserve/change/new/remove
 *   flows      flows            UserFlowTree
 *   contracts  contracts        APIContracts
 *   rules      rules            RuleSet (IF/THEN); gate 1 approves it
 *   schema     db_schema        DatabaseSchema; gate 2 approves it
 *   tests      test_suite       FailingTestSuite: one test per rule, all red
 *   code       implementation   the tests made green
 *   integrate  integration      entry point, build files, README
 *   review     compile_review   static tools + rule compliance
 *
 * The state's `compile` object is what `forge compile` was asked:
 * {mode: "new"|"edit", idea, language, answers?, request?}.
 *
 * app/stage_spec.c defines interview, change, flows, contracts, rules and
 * schema; app/stage_build.c defines tests, code, integrate and review.
 */
#ifndef FORGE_STAGE_H
#define FORGE_STAGE_H

#include "app/phase.h"

extern const struct phase_spec stage_interview, stage_change, stage_flows, stage_contracts,
	stage_rules, stage_schema;
extern const struct phase_spec stage_tests, stage_code, stage_integrate, stage_review;

/*
 * schemas/compile/KIND.schema.json (at $defs/DEF when def is not NULL) as
 * the model is shown it: one self-contained schema (every "#/$defs/NAME"
 * $ref inlined; no $schema, $id, $defs, title, $comment), and for the
 * intent, the languages of the configuration (compile.languages) as the
 * language's enum.  The same file checks the document.  ph may be NULL
 * (then the intent offers no language).  0, or -1 with a message.
 */
int stage_doc_schema(jv *out, struct phase *ph, const char *kind, const char *def);

#endif
