/*
 * gatedecide.h - a human's decision on a pending gate, the one way
 * `forge gate approve|reject` and `forge tui` make it (gatedecide.c).
 */
#ifndef FORGE_GATEDECIDE_H
#define FORGE_GATEDECIDE_H

#include <jv.h>
#include <stdbool.h>

struct config;
struct store;

/*
 * Approve or reject gate row `id` as "human" with an optional note
 * (gate_decide()), store the gate.approved / gate.rejected event of its run
 * (source `source`), and remember an approval's note as a procedural memory
 * (cfg's memory options) so later runs learn from it.  Prints nothing.
 * Returns 0 with *gate (may be NULL) the gate row as it was before (the
 * caller frees it); GATE_REFUSED with forge_error() when there is no such
 * gate or it is decided or expired already, or the note is not valid UTF-8
 * (nothing decided); -1 when the database failed.
 */
int gatedecide_human(jv *gate, struct store *st, const struct config *cfg, const char *source,
		     const char *id, bool approve, const char *note);

/*
 * What the person who decided gate row `gate` (borrowed) does next, for
 * `forge gate` and `forge tui` to print (caller frees): when its run is
 * live (its lease's holder, asking at its own terminal), the run goes on or
 * stops by itself; else `forge resume TRACE` continues it (approved) or
 * records the end (rejected).
 */
char *gatedecide_next(struct store *st, jv gate, bool approve);

#endif
