/*
 * snapshot.h - a run's state rebuilt from a snapshot plus the events after
 * it (seed 000 section 9: the event bus's snapshot() and replay()).
 *
 * Every time forge-supervisor checkpoints a run's state (a snapshot, in the
 * checkpoints table) it also emits a state.updated event:
 *   {"checkpoint": ID, "phase": P, "set": {KEY: VALUE, …}, "unset": [KEY, …]}
 * — the top-level keys whose values changed since the previous checkpoint,
 * with their whole new values, and the keys that went away.  So the state
 * at any point is any earlier snapshot with the later state.updated events
 * applied in order; the events alone (from the empty state) rebuild it too.
 *
 * jv arguments are borrowed unless marked "consumes" (core/json.h).
 */
#ifndef FORGE_SNAPSHOT_H
#define FORGE_SNAPSHOT_H

#include <jv.h>

struct store;

/* The change from `from` to `to` (objects; borrowed): {"set":{…},"unset":[…]}.
 * A non-object `from` counts as {}. */
jv state_patch(jv from, jv to);

/* state (consumed; a non-object counts as {}) with patch (borrowed) applied. */
jv state_patch_apply(jv state, jv patch);

/*
 * The state of run trace rebuilt from the checkpoint `from` (an id; NULL =
 * the newest) plus the state.updated events stored after the one that names
 * that checkpoint.  *out: the state; *how (may be NULL):
 * {"checkpoint": ID|null, "phase", "events_applied": N}.  With no checkpoint
 * at all, the events alone rebuild it from {}.  Returns 0; 1 when the trace
 * has neither checkpoints nor state.updated events (*out null), or `from`
 * names no checkpoint of the trace (with a message); -1 on a database error.
 */
int state_rebuild(jv *out, jv *how, struct store *st, const char *trace, const char *from);

#endif
