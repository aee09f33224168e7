/*
 * supervise.h - run whole pipelines (DESIGN.md §4): spawn each phase filter
 * with the current state on stdin, persist every event it writes as it
 * arrives, checkpoint the state it returns, and decide what comes next
 * (pipeline.h): the next phase, a bounce back to implement, a human gate
 * (gates.h), or the end.  Run-level breakers (cost per run and per day,
 * total time, tool error rate) are checked before every phase.
 *
 * Every transition is checked against the state machine and emitted as
 * pipeline.state_changed.  A run that needs a human and has no terminal is
 * paused (exit 4) with its gate recorded; `forge gate approve ID` then
 * `forge resume TRACE` continues from the last checkpoint without running a
 * finished phase again.  After a crash the run's worktree is brought back
 * to the checkpoint's commit, its partial changes saved under
 * refs/forge/TRACE/saved/N.  After every run an episode and its lessons
 * are recorded in memory; the reflection triggers of seed 000 §10.4 are
 * checked after every phase result and at the end, and one that fires
 * reflects with the fast model (Loop 3, reflect_run.h).
 *
 * A run and a resume hold the run's lease (store.h) while they work, passed
 * to the phases as $FORGE_LEASE; one that finds the run held by a living
 * process exits 4.  A gate's approval over a phase's "no" is written into
 * the state (review.approved_by, tests.approved_by) for the guards after
 * it.  `forge cancel` marks the run cancelled and signals its holder: the
 * run stops at once (or before its next phase) with 130.  Breakers that
 * cannot read what they guard trip.
 *
 * The run's automation level (gates.h, the ladder) is --level when given,
 * else for a resume the level the run started with (kept in its row's
 * configuration), else safety.automation_level; run.started and run.resumed
 * record it ({"automation_level", "level_from"}), and the phases get it as
 * FORGE_AUTOMATION_LEVEL.  The phases see FORGE_INTERACTIVE=1 when the
 * supervisor has a human at a terminal (opts->interactive): a stage that asks
 * questions (forge compile's interview) asks them on /dev/tty then.
 *
 * Before a run makes anything (its row, worktree or branch), every phase
 * it will run that needs a model (plan, implement) must be able to make its
 * client (llm_client_new: a provider and its key; nothing is sent): else
 * exit 2 naming what to set.  A checkout with uncommitted changes to
 * tracked files gets a warning (the run starts from its base commit) and a
 * run.checkout_dirty event.  A dry run (dry_run) runs the plan phase alone
 * on the checkout, makes no worktree or branch, and prints the plan
 * (human.h; its JSON alone with json); its run.started says dry_run, and a
 * resume of it stays a dry run.
 *
 * Every run follows a pipeline as data (app/supervise_graph.c; README
 * "Running a pipeline"): opts->graph, else the one named default (the
 * project's .forge/pipelines/default.json, else the built-in), with only
 * the phases opts->phases names (a dry run: plan).  Its nodes start as soon
 * as their needs are done, at most opts->jobs (else pipeline.jobs) at the
 * same time, their statuses in state.nodes and node.status events.
 * run.started records the pipeline ({"pipeline": {"name", "source",
 * "path", "doc"}}), and a resume of such a run loads that record again
 * (exit 2, its errors listed, when it no longer validates: a program gone);
 * a run recorded before (no pipeline in its run.started) resumes as the
 * default pipeline.  A default pipeline with errors: exit 2, nothing made.
 */
#ifndef FORGE_SUPERVISE_H
#define FORGE_SUPERVISE_H

#include <jv.h>
#include <stdbool.h>

struct config;
struct graph;
struct store;

struct supervise_opts {
	const char *repo;               /* the repository root (required) */
	const char *checkout;           /* where the person is (NULL: the current
					 * directory): a linked worktree of theirs is
					 * where the run starts from (git/git.h) */
	const char *db_path;            /* passed to the phases as --db */
	const char *bindir;             /* where forge-<phase> are */
	const char *const *phase_args;  /* more arguments for every phase (NULL-terminated) */
	const char *const *phases;      /* the requested phases (NULL = all) */
	const char *base_ref;           /* NULL = the config's or HEAD */
	bool dry_run;                   /* the plan phase alone, no worktree: the plan
					 * is the output (readable, or its JSON with json) */
	bool auto_approve;
	bool json;                      /* every record on stdout as JSON lines */
	bool interactive;               /* a human at a terminal can answer gates */
	bool progress;                  /* show progress on stderr */
	bool quiet;                     /* -q: no warnings on stderr either */
	double budget_usd;              /* < 0: budget.usd from the config (resume: the run's own) */
	bool level_given;               /* --level: level overrides the automation level */
	int level;                      /* 0..4 when level_given */
	const struct graph *graph;      /* run: the pipeline (engine/graph.h, without errors), or
					 * NULL: the default one; resume loads the run's own */
	int jobs;                       /* nodes at once; 0: pipeline.jobs */
	bool steal;                     /* resume: take the lease of a live holder on another host */
	jv initial;                     /* run: more of the first state (an object, borrowed:
					 * forge compile's `compile` and documents); another
					 * kind (a zeroed jv is invalid): nothing */
	struct config *cfg;             /* borrowed */
	struct store *store;            /* borrowed */
};

/* Start a run of `task`.  Returns the exit status (DESIGN.md §2). */
int supervise_run(const struct supervise_opts *o, const char *task);

/* Continue a run from its last checkpoint.  Returns the exit status. */
int supervise_resume(const struct supervise_opts *o, const char *trace);

/* A pipeline's errors on stderr, one a line as `forge pipeline check` lists
 * them ("FILE: node 'x': needs unknown node 'y'"). */
void supervise_graph_errors(const struct graph *g);

/* Forward SIGINT/SIGTERM to the running phase and stop a model call of
 * the supervisor's own (llm_interrupt: a reflection's), then stop with
 * 130.  For the program's signal handler. */
void supervise_interrupt(int sig);

/*
 * The automation level run `trace` goes on with: the one its last resume
 * ran at (a `forge resume --level N` holds for the resumes after it), else
 * the one it started with (run, its store_run_get() row, records it in its
 * config); -1 when neither says.  Borrows run.
 */
struct store;
int supervise_run_level(struct store *st, const char *trace, jv run);

#endif
