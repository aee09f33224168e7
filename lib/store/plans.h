/*
 * plans.h - the append-only versions of a run's plan (DESIGN.md section 3,
 * forge-plan; seed 004 section 3.2): table plan_versions of
 * schemas/sql/005-plan-versions.sql (rows of kind 'plan').
 *
 * Each plan forge-plan makes for a trace is a new row: version 1 is the
 * first plan ("initial plan"), a re-plan of the same trace adds version N+1
 * with a changelog that says what changed (plans_changelog).  Rows are never
 * updated or deleted: the database refuses both (triggers).
 *
 * Conventions (forge.h): 0 on success, -1 after forge_error(); output
 * parameters first; jv arguments follow json.h (consumed unless "borrows");
 * jv and strings returned through out are the caller's.
 */
#ifndef FORGE_PLANS_H
#define FORGE_PLANS_H

#include <jv.h>

struct store;

/*
 * The newest version of trace's plan: *out_version (0 when there is none)
 * and *out_plan (may be NULL when not wanted; jv_null() when there is none).
 */
int plans_latest(int *out_version, jv *out_plan, struct store *st, const char *trace_id);

/*
 * Append plan (borrows; an object) as the next version of trace, in one
 * BEGIN IMMEDIATE transaction, so two writers get distinct numbers.
 * *out_version gets its number, out_id (may be NULL) its id, a ULID
 * (char[27]).  changelog may be NULL.
 */
int plans_append(int *out_version, char *out_id, struct store *st, const char *trace_id,
		 jv plan, const char *changelog);

/*
 * Every version of trace, oldest first:
 * [{"id","trace_id","version","plan","changelog","created_at"}].
 */
int plans_list(jv *out, struct store *st, const char *trace_id);

/*
 * A one-line changelog entry for going from old_plan to new_plan (both
 * borrowed): "initial plan" when old_plan is not an object, "no changes"
 * when they say the same, else the differences joined by "; ", e.g.
 *   "tasks added: t3; tasks removed: t2; tasks changed: t1;
 *    risk medium -> high (0.40 -> 0.70); summary changed"
 * malloc'd.
 */
char *plans_changelog(jv old_plan, jv new_plan);

#endif
