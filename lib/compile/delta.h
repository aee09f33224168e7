/*
 * delta.h - an edit of a compiled project as a change to its rules (issue 16
 * part C, `forge compile --edit`; the DeltaRuleSet of
 * schemas/compile/delta.schema.json): which rules are preserved, changed,
 * new or removed, and which stages of the compile pipeline must run again.
 *
 * Pure: no I/O, no database.  Conventions (forge.h): 0 on success, -1 after
 * forge_error(); output parameters first; jv arguments are borrowed, jv
 * returned through out are the caller's.
 */
#ifndef FORGE_DELTA_H
#define FORGE_DELTA_H

#include <jv.h>

/*
 * Apply delta to rules (a RuleSet {rules:[{id, if, then, contract?,
 * entity?}], approved_at?, …}).  *out_rules is the new RuleSet: the
 * rules in their order with change's applied in place (a changed rule
 * keeps its id; a contract or entity the change gives replaces the old
 * one), remove's left out, and new's appended with ids that continue after
 * the highest (R7, R8, … after R6; the model's ids for new rules are
 * ignored).  The approval (approved_at, approved_by) does not carry over:
 * the new set has not been approved.  *out_delta is delta completed: new[]
 * with the ids given, preserve = every rule neither changed nor removed.
 * A change or remove naming a rule the set does not have, a rule both
 * changed and removed, or an id given twice is an error naming the ids.
 */
int delta_apply(jv *out_rules, jv *out_delta, jv rules, jv delta);

/*
 * The stages that must run again after delta (completed by delta_apply),
 * in pipeline order, as *out_rerun ["rules", "schema", …], and why, as
 * *out_why [{stage, because}]:
 *   rules      always (the delta is applied to the rule set);
 *   flows, contracts
 *              a new or changed rule names a contract that `contracts`
 *              does not have;
 *   schema     a new or changed rule names an entity ("todo") with no table
 *              in db_schema, or a field ("todo.due") with no such column;
 *   tests, code, integrate, review
 *              any rule was changed, added or removed.
 * contracts and db_schema may be null (then every contract or entity named
 * is missing).
 */
int delta_affected(jv *out_rerun, jv *out_why, jv delta, jv contracts, jv db_schema);

/* The number of a rule id ("R12" -> 12), or 0 when it is not one. */
int delta_rule_number(const char *id);

#endif
