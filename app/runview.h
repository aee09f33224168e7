/*
 * runview.h - one run as a person looks at it afterwards: what `forge
 * show`, `forge report`, `forge diff` and `forge merge` read (runview.c).
 */
#ifndef FORGE_RUNVIEW_H
#define FORGE_RUNVIEW_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>

#include "app/cli.h"

struct store;
struct forge_git;

/*
 * What `forge show`, `report` and `diff` start from: the session (config
 * and the database, read-only), the repository (NULL when there is none),
 * the whole trace id and the run's view (runview_load()).
 */
struct runview_open {
	struct session ses;
	struct forge_git *g;
	char *trace;
	jv view;
};

/*
 * Open the session, resolve `typed` to a whole trace id, open the
 * repository and load the view (with_patch as runview_load()).  Returns 0,
 * or the exit status after printing "PROG: MESSAGE" on stderr.  Either way
 * runview_close() releases what *v holds.
 */
int runview_open(struct runview_open *v, const struct cli_common *common, const char *prog,
		 const char *typed, bool with_patch);
void runview_close(struct runview_open *v);

/*
 * The whole trace id for what a person typed (a unique prefix,
 * store_resolve_trace()).  Returns 0 with *out malloc'd, or the exit status
 * after printing "PROG: MESSAGE" on stderr: FORGE_EXIT_USAGE when no run or
 * several match, FORGE_EXIT_DEPENDENCY on a database error.
 */
int runview_resolve(char **out, struct store *st, const char *prog, const char *typed);

/*
 * The status a person is shown for a run: the run row's own, but
 * "interrupted" when the row says pending or running and no living process
 * holds its lease (none, or its holder died: killed, the machine went down,
 * its failure could not be written); `forge resume` continues it.  What
 * forge status, forge history, forge show and forge tui show.  run is a
 * store_run_get() or store_runs_list() row; consumed, returned with
 * "status" replaced when so (as it was on a database error).
 */
jv runview_shown(struct store *st, jv run);

/*
 * v (consumed; any JSON) with every amount of money in it rounded as the
 * views print money (money_round: 0.3, not 0.30000000000000004, the
 * noise of a float sum): each number whose key is "usd" or ends in "_usd",
 * at any depth.  What forge history, forge status and forge show write
 * with --json, and runview_load() returns.
 */
jv runview_money(jv v);

/*
 * Everything known about run `trace` (a whole id), as one object:
 *   trace_id, run (store_run_get() without config; null for a trace of
 *   phases run by hand), status (the run's as runview_shown() says, "merged"
 *   when a run.merged event says so, "pipeline" when there is no run: a trace
 *   of phases run by hand, runview_pipeline()), pipeline (that, as a bool),
 *   merged (that event's payload or null), task (for a trace of phases run
 *   by hand without a checkpoint: runview_pipeline_place()), plan, review,
 *   tests, deployment, bounces,
 *   cost (from the newest checkpoint, its usd and tokens the run row's
 *     (llm_calls') where those are more; null when neither has any),
 *   diff {"base","head","files","patch","from"} -- "from" is "git" (the
 *     run's branch against refs/forge/TRACE/base in the repository `g`) or
 *     "checkpoint" (the state's changes, when the branch is gone or g is
 *     NULL) -- or null when neither has one; patch only when with_patch,
 *   removed {"branch","worktree"} (runview_removed(): what of them is gone),
 *   saved (runview_saved(): work kept on its saved refs that its branch lacks;
 *     [] when g is NULL),
 *   dry_run (its run.started says --dry-run: no worktree or branch made),
 *   phase_cost [{"phase","usd","tokens","calls"}] summed from the events,
 *   timeline [{"ts","phase","type","text"}]: run start and end, phase
 *     start and end, model calls, gates, bounces, breakers, merge,
 *   gates (every gate row of the run, newest first),
 *   subagents (runview_subagents()).
 * g may be NULL.  Returns 0, or -1 with forge_error() (the database).
 * *out is the caller's.
 */
int runview_load(jv *out, struct store *st, struct forge_git *g, const char *trace, bool with_patch);

/*
 * The run's sub-agents (app/delegate.h), from its subagent.started and
 * subagent.completed events, in the order they started: [{span,
 * parent_span (null: started by the phase's own agent), phase, depth,
 * number, task, mode, tools, budget_usd, started_at, status ("running"
 * until it ended; then ok|escalated|tripped|failed|crashed), reason,
 * summary, cost_usd, tokens, iterations, duration_ms, applied, conflict,
 * files}].  0, or -1 with forge_error() (the database).
 */
int runview_subagents(jv *out, struct store *st, const char *trace);

/* The sub-agents as a tree, a line each: under each phase the ones its
 * agent started, each one's own below it, indented by depth: mode, status,
 * cost, the span's last 8 characters, the task -- each row on one line
 * without control characters (term_clean_line(): the task is the
 * model's).  Borrows list. */
struct buf;
void runview_subagent_tree(struct buf *out, jv list);

/*
 * Whether run `trace` has work a person may still merge: it completed, or
 * it failed only because its `merge` deploy refused to land it (the newest
 * checkpoint: phase deploy rejected, deployment.strategy merge -- the base
 * branch moved and no longer fast-forwards, or that checkout was in the
 * way).  That work passed review and tests; `forge merge` (--no-ff) lands
 * it and `forge gc` keeps it as it keeps a completed, unmerged run.
 */
bool runview_mergeable(struct store *st, const char *trace);

/*
 * Whether run `trace` is a failed run that `forge resume` continues: it has
 * a checkpoint, and the command runview_next names for it is a resume (a
 * provider that failed, a breaker, a refused key ...), not `forge run` again
 * (a rejected gate, a deploy that ended, a condition that does not
 * evaluate, its work gone).  What forge gc keeps unless told otherwise
 * (--resumable).  When so, that command is appended to command (NULL: not
 * wanted).  False on a database error.
 */
bool runview_resumable(struct buf *command, struct store *st, const char *trace);

/*
 * The configuration the person gave the run, as a JSON object layer: the
 * config_layer its last resume recorded (run.resumed: the run's layer with
 * that resume's --config and flags over it), else run.started's (its
 * --config file and flags).  New reference; null when none was recorded.
 */
jv runview_config_layer(struct store *st, const char *trace);

/*
 * Whether trace (a whole id, runview_resolve()'s) is no run but a trace of
 * phases run by hand -- a shell pipeline, forge-plan | forge-implement | …,
 * whose events were stored (forge-events store, forge-deploy) and which
 * has no run row: forge resume, status, merge and gc do not take it.  False
 * on a database error too.
 */
bool runview_pipeline(struct store *st, const char *trace);

/* "TRACE is not a forge run: phases run by hand (a shell pipeline) made
 * that trace; forge show TRACE says what is left of it", appended to out:
 * what a command that takes only runs says of such a trace. */
struct buf;
void runview_not_a_run(struct buf *out, const char *trace);

/* What git has of such a trace: {"branch": "forge/NAME" when that branch
 * is there, "worktree": its path when its worktree is, "kept_ref":
 * "refs/forge/NAME/base" when that ref is} (a new object, {} when g is
 * NULL). */
jv runview_pipeline_place(struct forge_git *g, const char *trace);

/* The run's branch and base commit as the store knows them (the newest
 * checkpoint's task, else forge/TRACE and refs/forge/TRACE/base): malloc'd
 * strings; *base may be NULL when unknown. */
void runview_refs(char **branch, char **base, struct store *st, const char *trace);

/*
 * The work kept on run `trace`'s refs/forge/NAME/saved/N (what a resume,
 * a cancel or an implement that started again reset away: an interrupted
 * attempt's edits, a person's) that its branch does not hold -- measured
 * against its branch, or its base commit when the branch is gone:
 * forge_git_run_saved()'s list.  [] when g is NULL or git cannot tell
 * (what show says is then said without it).  New reference.
 */
jv runview_saved(struct store *st, struct forge_git *g, const char *trace);

/*
 * runview_saved() for whoever must not take "cannot tell" for "none"
 * (forge gc, which would drop the refs): the list into *out (the
 * caller's; [] on failure), 0, or -1 with forge_error() when git could
 * not read a saved ref or its trees.
 */
int runview_saved_list(jv *out, struct store *st, struct forge_git *g, const char *trace);

/*
 * One saved ref of that list (borrowed) as a person reads it, appended to
 * out: "refs/forge/T/saved/1 (2 files, +5 -1: a.py, b.py): git diff
 * 1a2b3c4d5e6f refs/forge/T/saved/1 shows it".
 */
struct buf;
void runview_saved_text(struct buf *out, jv saved);

/*
 * What of the run's branch and worktree (those task names; borrowed) is gone
 * now -- forge gc, forge cancel or a person removed it: {"branch": bool,
 * "worktree": bool}.  false for what task does not name, and for the branch
 * when g is NULL (no repository at hand: it cannot be told).
 */
jv runview_removed(struct forge_git *g, jv task);

/*
 * The next command a person would run for the run, from where it stands in
 * the store, appended to out: a command only, that can be pasted into a
 * shell as it is ("forge gate approve ID && forge resume TRACE", "forge diff
 * TRACE && forge merge TRACE", "forge merge [--no-ff] TRACE", "git merge
 * forge/TRACE" (forge merge found its changes in conflict: run.merge_conflict),
 * "forge run
 * 'TASK'" (a rejected gate, a deploy rolled back: a resume does not go on),
 * "forge config set [--global] KEY VALUE && forge resume TRACE" (a limit
 * stopped it: raised, or a resume trips it again), "forge resume --budget
 * USD TRACE", "forge resume TRACE", "forge gc"); nothing when nothing is left
 * to do (cancelled or merged, and forge gc has nothing left of it).  What a
 * person needs to know besides (a placeholder, when it works) is appended to
 * why, nothing when there is nothing to say.  g (NULL: unknown) tells what
 * forge gc has left; cfg (NULL: unknown) the limit a breaker tripped and
 * the file that sets it.
 */
struct buf;
struct config;

/* The start of the reason a run is marked failed with when a resume finds
 * the commit of its last checkpoint gone from the repository (its branch
 * removed, then pruned by git): its work is lost, and runview_next says to
 * run the task again, not to resume it (app/supervise.c work_gone). */
#define RUNVIEW_WORK_GONE "the run's work is gone"

/* When a lease of another host that is alive (store_lease_get's, borrowed)
 * lets its run go for forge gc unless renewed: STORE_LEASE_TTL_S after this
 * host first saw it unrenewed (store.c: a holder whose host is gone is
 * judged dead so), "HH:MM:SS" local time into out (n bytes); false when the
 * lease is not alive, is this host's (its holder lets go when it stops) or
 * was not seen yet. */
bool runview_lease_until(char *out, size_t n, jv lease);
void runview_next(struct buf *out, struct buf *why, struct store *st, struct forge_git *g,
		  const struct config *cfg, const char *trace);

/* An event time ("2026-11-28T00:23:59.209Z", UTC) as local time
 * "2026-11-28 01:23:59" (with_date) or "01:23:59"; the input as it is when
 * it does not parse.  Writes at most n bytes to out. */
void runview_local_time(char *out, size_t n, const char *iso, bool with_date);

#endif
