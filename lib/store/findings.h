/*
 * findings.h - review and test findings, and a human's dismissal of one
 * (seed 000 sections 5 and 10.5; DESIGN.md section 3 forge-review): table
 * findings of schemas/sql/004-findings.sql (SQLite) and
 * schemas/pg/005-findings-docs.sql (PostgreSQL), read and written through
 * db.h's statements, so the same on both backends.
 *
 * forge-review stores what it finds (findings_put) and leaves out what a
 * human dismissed before (findings_list with include_dismissed); `forge
 * findings` lists, adds and dismisses them.  What the memory learns from a
 * dismissal is memory_dismiss_finding()'s (lib/memory); findings_dismiss()
 * is only the mark on the row.
 *
 * A finding as JSON: {"id","run_id","trace_id","phase","layer","severity",
 * "category","rule","message","file","line","confidence","fixable","fix",
 * "fingerprint","created_at","dismissed","dismissed_by","dismissed_reason",
 * "dismissed_at"}, null for what is not set; fixable and dismissed are
 * booleans, line and confidence numbers.
 *
 * Conventions (forge.h): 0 on success, -1 after forge_error(); output
 * parameters first; jv arguments follow json.h (consumed unless "borrows");
 * jv returned through out are the caller's.
 */
#ifndef FORGE_FINDINGS_H
#define FORGE_FINDINGS_H

#include <jv.h>
#include <stdbool.h>

#include "core/ids.h"

struct store;

/* findings_dismiss(): the finding was already dismissed / there is none. */
enum { FINDINGS_ALREADY_DISMISSED = 1, FINDINGS_NOT_FOUND = 2 };

/*
 * Store a finding (forge-review's form: id optional, severity, category,
 * message required; layer, rule, file, line, confidence, fixable, fix,
 * phase (default "review"), trace_id (else run_id), run_id).  Consumes
 * finding.  The fingerprint is the finding's own, else one made from rule,
 * file and message.  A trace keeps one row per fingerprint, also with
 * several writers at once (one statement; on PostgreSQL a unique index
 * settles a race): a finding its trace has already is not stored again and
 * id_out (may be NULL) receives the kept row's id.
 */
int findings_put(char id_out[ULID_LEN + 1], struct store *st, jv finding);

/* The finding id as JSON (above), or jv_null() when there is none. */
int findings_get(jv *out, struct store *st, const char *id);

/* Newest first; trace_id (a trace's or a run's id) may be NULL for all;
 * dismissed ones only with include_dismissed; limit <= 0 = all. */
int findings_list(jv *out, struct store *st, const char *trace_id, bool include_dismissed,
		  int limit);

/* The dismissed findings of every trace, the latest dismissal first (what
 * a review leaves out); limit <= 0 = all. */
int findings_list_dismissed(jv *out, struct store *st, int limit);

/*
 * Mark finding id dismissed by `by` (e.g. "human") at time `at` (ISO-8601
 * text) with reason (may be NULL), once: 0 marked now,
 * FINDINGS_ALREADY_DISMISSED (the first dismissal is kept),
 * FINDINGS_NOT_FOUND, or -1.
 */
int findings_dismiss(struct store *st, const char *id, const char *by, const char *reason,
		     const char *at);

#endif
