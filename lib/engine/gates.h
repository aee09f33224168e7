/*
 * gates.h - human gates (DESIGN.md §4; seed 000 §8.2-8.3).
 *
 * A gate is configured in "gates" (config.h): id, phase, condition (a jq
 * expression over the state, jqexpr.h), prompt, timeout_s and
 * auto_approve_level.  Before the supervisor starts a phase it checks every
 * gate whose phase is the phase just finished, the phase about to start, or
 * "*"; a gate whose condition holds fires once per run.
 *
 * Who may pass a fired gate without asking (gate_auto_decision):
 *   - production_deploy never: seed §8.3 keeps human gates for production
 *     deploys at every automation level, and --auto-approve does not pass it;
 *   - any other gate passes with --auto-approve, or when the automation level
 *     (safety.automation_level) is at least the gate's auto_approve_level
 *     (null: never by level).
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

enum gate_auto { GATE_ASK, GATE_AUTO_FLAG, GATE_AUTO_LEVEL };

/* Whether a fired gate (borrowed) passes unasked. */
enum gate_auto gate_auto_decision(jv gate, int automation_level, bool auto_approve_flag);

/* Record a fired gate as pending; *id_out is the new gate row's id. */
int gate_request(char id_out[ULID_LEN + 1], struct store *st, const char *trace_id, jv gate,
		 const char *phase);

/*
 * Decide a pending gate: approve or reject, by whom ("human", "auto",
 * "flag"), with an optional note.  -1 with a message when the gate is
 * unknown or already decided.
 */
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
 * when pending_only. */
int gate_list(jv *out, struct store *st, const char *trace_id, bool pending_only);

/* A gate row's status: one enum, the strings the store keeps. */
enum gate_status { GATE_PENDING, GATE_APPROVED, GATE_REJECTED, GATE_EXPIRED, GATE_UNKNOWN };
/* "pending", "approved", "rejected", "expired"; "unknown".  Static. */
const char *gate_status_name(enum gate_status s);
/* The status name names; GATE_UNKNOWN for NULL or another string. */
enum gate_status gate_status_of(const char *name);

#endif
