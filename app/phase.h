/*
 * phase.h - what every phase filter shares (DESIGN.md §2-3): the command
 * line, the input stream, the state, the guard, events, the exit status.
 *
 * A filter describes itself in a struct phase_spec and calls phase_main(),
 * which:
 *   1. parses the common options and the phase's own (cli.h) and loads the
 *      layered config (config.h);
 *   2. takes its input: --task TEXT, else stdin read to the end with every
 *      event forwarded (stream.h) - the last state, a bare {"task": …},
 *      plain text, or raw input the spec's raw_hook claims (a diff).  Empty
 *      input is bad input when spec->needs_input; a terminal on stdin is not
 *      read when the phase can run alone (spec->runs_alone), nor is it
 *      with --no-input;
 *   3. builds the working state: the input state, or a new one for the task
 *      (a new trace id, the repository, base ref, budget);
 *   4. emits phase.started, checks the guard (a guard that does not hold
 *      forwards the state with status "skipped", a phase.skipped event and
 *      exit 1), runs the phase, emits phase.completed;
 *   5. writes exactly one state record (checked against its schema) and
 *      exits with the status's code: ok 0, rejected/skipped 1, tripped 3,
 *      escalated 4, failed 5 (and 2 for bad input, 130 on SIGINT/SIGTERM).
 *
 * Ownership: jv arguments follow json.h (consumed unless "borrows").
 */
#ifndef FORGE_PHASE_H
#define FORGE_PHASE_H

#include <jv.h>
#include <stdbool.h>

/* Set by the supervisor for a phase it runs: the wall-clock time (ms since
 * the epoch) at which the run's time limit, safety.time_s.total, runs out.
 * The phase's agent stops there, a model call or command in flight too. */
#define PHASE_RUN_DEADLINE_ENV "FORGE_RUN_DEADLINE_MS"
/* Set by the supervisor for a phase it runs: the USD this node may spend,
 * its share of what the run's limits leave (the budget left, per_run and
 * per_day less what was spent) after what the nodes already running hold.
 * Nodes that run at the same time share it, so together they do not spend
 * more than the run may (each at most one model call past its share). */
#define PHASE_RUN_MONEY_ENV "FORGE_RUN_MONEY_USD"
#include <stddef.h>

#include "agent/agent.h"
#include "app/cli.h"
#include "data/stream.h"

struct buf;
struct config;
struct llm_client;
struct llm_response;
struct store;

struct phase;

struct phase_spec {
	const char *name;               /* "plan": the state key is this name's result key */
	const char *program;            /* "forge-plan" */
	const char *synopsis;
	const char *description;
	const char *extra_help;
	const struct cli_option *options;   /* the phase's own; ids 256..999 */
	int (*on_option)(struct phase *ph, int id, const char *arg);
	/* Claims input that is not JSON lines (see stream.h); may be NULL. */
	int (*raw_hook)(const char *text, size_t len, void *payload);
	const char *raw_what, *raw_hint;   /* see stream_options */
	bool needs_input;               /* empty input is bad input */
	const char *empty_input;        /* what an empty stdin is said to be, with what to do
					 * instead (NULL: expected a state or a task) */
	const char *tty_input;          /* the same when stdin is a terminal and the phase
					 * cannot work alone (NULL: pipe a state or a task) */
	const char *no_input;           /* the same for --no-input when the phase cannot work
					 * alone as its options stand (NULL: nothing to work on) */
	/*
	 * The phase can work on the repository alone: it takes --no-input (do
	 * not read stdin), and runs alone when stdin is a terminal.  An empty
	 * stdin that is not a terminal is bad input all the same: a pipeline
	 * whose earlier phase wrote nothing must not act on the repository.
	 */
	bool runs_alone;
	/*
	 * Works on a repository: with none to work on - no --repo, no git
	 * repository containing the current directory, and no task.repo of
	 * the input that is here - it refuses, exit 2 with "'.' is not in a
	 * git repository …" and an input.rejected event, before any work (a
	 * model call paid for blind).  Input raw_hook took (a diff on stdin)
	 * is worked on without one.
	 */
	bool needs_repo;
	bool model_options;             /* uses --provider/--model/--base-url/--cassette; a phase
					 * without accepts and ignores them (a supervisor passes
					 * them to every phase) */
	/* Works in the run's worktree: takes the trace's lease (store.h) when
	 * given a state, and refuses (exit 4) while another process holds it -
	 * except its own forge-supervisor, whose lease is $FORGE_LEASE. */
	bool lease;
	/* Works on the files of the commit the state names (changes.commit) in
	 * the run's worktree: a branch that went on past it is put back at it
	 * first, with a warning (README "Runs on several machines"). */
	bool pins_commit;
	/* Can work from the state's own text (changes.diff) when the run's
	 * worktree is gone and neither its branch nor its commit is in this
	 * repository, with no git.push_remote to fetch them from: adopt_run()
	 * then warns and goes on, task.worktree still naming the gone tree
	 * (a run.worktree_gone event), instead of failing the phase (exit 5).
	 * Such a phase must then read no file of the checkout as the run's:
	 * forge-review reviews the state's diff, the files unlinted. */
	bool state_text;
	/* NULL when the guard holds, else why not. */
	const char *(*guard)(struct phase *ph);
	/*
	 * Do the phase's work: set its part of ph->state (phase_set) and return
	 * its status: "ok", "rejected", "escalated", "tripped" or "failed"; or
	 * "bad_input" (with phase_reason) when what the user gave cannot be
	 * used (a ref that does not resolve): then no state is written, an
	 * input.rejected event is, and the exit status is 2.
	 */
	const char *(*run)(struct phase *ph);
};

struct heartbeat;

struct phase {
	const struct phase_spec *spec;
	struct cli_common common;
	struct config *cfg;
	struct stream_out out;
	struct stream_input in;
	jv state;                       /* the working state (owned) */
	char *repo;                     /* the main repository's root, or NULL */
	char *task_text;                /* --task */
	bool no_input;                  /* --no-input */
	struct store *store;            /* see phase_store() */
	long long start_ms;
	double cost_usd;                /* this phase's model spend */
	bool cost_known;
	long tokens;
	int agent_iterations;           /* its runs of the agent loop: iterations, */
	long long agent_ms;             /* and time (the breakers are the phase's) */
	bool progress;                  /* stderr is a terminal and not -q */
	/*
	 * The filter tells a person what it found on stderr (app/human.h: the
	 * findings, the failing tests): not -q, and not run by forge-supervisor
	 * ($FORGE_SUPERVISOR_PID), whose summary says it once for the run.
	 */
	bool report;
	bool reported;                  /* the filter printed its own closing line:
					 * phase_main does not add "PROG: STATUS: REASON" */
	char reason[1024];              /* why the phase ended as it did */
	char lease[32];                 /* the lease this process took, or "" */
	struct heartbeat *beat;         /* renews it (app/heartbeat.h), or NULL */
	bool interrupted;               /* a human interrupted it (Ctrl-C at a prompt): exit 130 after the state */
	void *payload;                  /* the filter's own */
};

int phase_main(const struct phase_spec *spec, int argc, char **argv, void *payload);

/*
 * Whether the phase works on the repository alone: it was given no state
 * and no task (--no-input, a terminal on stdin; forge-review: a diff).  A
 * task ({"task": …}, --task, plain text) is no run alone: the state made
 * for it has what the task has and no more, and the guards judge it
 * (forge-test: no approved review; forge-deploy: no review, no tests).
 */
bool phase_alone(const struct phase *ph);

/*
 * For a phase that works on what an earlier one made (forge-review,
 * forge-test, forge-deploy): whether the input state's own phase finished
 * its work.  NULL when it did, or when there is no input state; else why
 * not, written to buf (n bytes): its status is failed, tripped or skipped,
 * or (plan, implement) rejected or escalated with no human's approval of
 * its result (approved_by).  A review's or tests' "no" is in their result,
 * which the guards read themselves.  The calling phase's own run that
 * failed is finished enough: it runs again on what it was given.
 */
const char *phase_input_unfinished(const struct phase *ph, char *buf, size_t n);

/*
 * Whether part (borrowed: the state's "review" or "tests") was made on the
 * commit the state's changes name: NULL when it was, or when either does
 * not say; else why not, in buf (n bytes).
 */
const char *phase_part_stale(const struct phase *ph, jv part, const char *what, char *buf, size_t n);

/* Set key (the phase's result part, "plan") in the state.  Consumes v. */
void phase_set(struct phase *ph, const char *key, jv v);

/* The phase's reason line (shown in phase.completed and the exit message). */
void phase_reason(struct phase *ph, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * What a signal that stops the phase (Ctrl-C, SIGTERM) has it say, made
 * now from the state (a signal handler formats nothing): under a
 * supervisor, or on a run's state, "interrupted; the last checkpoint
 * stands"; run by hand (a shell pipeline: no run, no checkpoint) that no
 * state was written and, once the state names the worktree and branch
 * forge-implement made, those two and the git command that removes them.
 * Called when the input is read; a phase that makes the worktree calls it
 * again then.
 */
void phase_note_left(struct phase *ph);

/* The database, opened on first use (--db, $FORGE_DB, <repo>/.forge/forge.db);
 * NULL with a message when it cannot be opened.  Borrowed. */
struct store *phase_store(struct phase *ph);

/*
 * The database for what the phase must keep (plan versions, findings):
 * *out is phase_store()'s (borrowed), NULL when there is no database to
 * use (no --db, $FORGE_DB nor repository).  -1 with a message naming it
 * when there is one but it cannot be opened, or only for reading (a
 * read-only checkout, another user's file), with where else to keep it
 * (--db, FORGE_DB): a loss, not to go unsaid, and said before the work.
 */
int phase_store_needed(struct store **out, struct phase *ph);

/*
 * A model client for this phase from the config, as llm_choose() resolves
 * it for the phase (llm.phases.<name>.* override llm.*); `fast` uses the
 * fast model and the cassette phase "<name>-fast".  The cassette attempt is the state's
 * count of earlier runs of this phase plus one ($FORGE_ATTEMPT wins).
 * Calls are logged to the database when one can be opened.  A model
 * without a price (llm_client_require_price) is refused with a message saying how
 * to give it one: the cost limits could not hold over its calls.
 */
int phase_llm(struct llm_client **out, struct phase *ph, bool fast);

/* The llm.called event of a call the phase made itself on c (not through
 * an agent, which says its own): every paid call has one, so what it cost
 * is found after a crash.  Borrows c and resp. */
void phase_llm_called(struct phase *ph, const struct llm_client *c, const struct llm_response *resp);
/* A SIGINT or SIGTERM came while a model call ran (llm_interrupt), or a
 * sub-agent's (delegate_interrupt; cli_catch_model_interrupts): the
 * phase ends now with exit 130, as at once for a signal at any other time
 * (commands and servers stopped, lease released, no state written).  Call
 * it once the call is recorded; phase_llm_called(), phase_run_agent() and
 * the delegate tool do. */
void phase_leave_if_interrupted(void);

/*
 * The phase's standard output can no longer be written: its reader went
 * away (EPIPE: `forge-plan … | head -n 1`, a next stage that failed at
 * once, a supervisor that is gone) or a write failed (ENOSPC: > /dev/full).
 * Nothing the phase does from here would reach anyone (a phase run alone
 * checkpoints nothing; under forge-supervisor, its pipe is the checkpoint's
 * way in), so it stops at this step boundary instead of paying for its
 * model calls and running its tools to the end: the commands and servers
 * it started are stopped, the lease released, no state written, and it
 * exits 141 (EPIPE, quietly: as SIGPIPE would have ended it) or 5 (the
 * error on stderr).  Returns when the output is still good.  Called before
 * each model call (phase_llm's clients), before each tool of the agent, as
 * the phase starts its work, and between a phase's own long steps (a
 * review's layers, implement's validation, the test rerun): never in the
 * middle of one (an edit and its commit, a deploy's steps).
 */
void phase_leave_if_output_gone(struct phase *ph);

/*
 * What the phase may still spend on models: the lower of its limit
 * (safety.cost.per_phase.PHASE; 0 = nothing), the run's remaining
 * budget in the state and the supervisor's allowance for the node
 * (PHASE_RUN_MONEY_ENV), less what the phase spent so far
 * (ph->cost_usd); at least 0, -1 when neither applies.
 */
double phase_money_left(struct phase *ph);

/*
 * Whether a phase that calls a model outside the agent (the review's AI
 * layer, the test analysis) must skip it: nothing is left to spend
 * (phase_money_left 0).  Then `event` {reason} is emitted (a copy in
 * *out when out is not NULL: the phase's result may say it too; else
 * *out is left alone), and `what` is said skipped on stderr (not under
 * -q).  The agent's breakers do the same for the agent phases.
 */
bool phase_money_spent(jv *out, struct phase *ph, const char *event, const char *what);

/*
 * Run the agent loop for this phase: breakers from the config (iterations,
 * per-phase cost, the run's remaining budget from the state, time),
 * reflection into memory, progress on a terminal.  Adds the spend to the
 * state's cost and budget.  Consumes cfg->tools and cfg->result_schema.
 * The model clients are made by the first call and reused by later ones in
 * the process, so cassette calls keep counting across runs of the loop.
 * Returns the status the outcome maps to ("ok" for AGENT_DONE).
 */
const char *phase_run_agent(struct agent_result *out, struct phase *ph, struct agent_config *cfg,
			    const char *prompt, agent_exec_fn exec, void *exec_payload);

/*
 * The phase whose tools.permissions apply to this process's agent (toolset.h):
 * the phase's name; a sub-agent's is that of the phase that delegated (its
 * stream's phase: "implement", never "implement-sub"), so a helper can
 * have no tool its phase denies and must ask for one it asks for.  Borrowed.
 */
const char *phase_policy_name(const struct phase *ph);
/*
 * Perceive (seed 003 §4): recall memories for the phase and task, match
 * skills, and fit them with the environment parts (an object of named
 * texts, consumed; put the most important first) into the context budget
 * (memory.context_tokens, split by memory.token_budget).  *out is the
 * prompt text (malloc'd).  A memory or skills failure is reported as an
 * event and the prompt is built without them.
 */
int phase_perceive(char **out, struct phase *ph, jv environment);

/*
 * The system prompt of this phase's model calls, from the repository root
 * (NULL: ph->repo; the main checkout, so uncommitted files count, as for
 * skills): agent_prompt_load_how() of `prompt` (the built-in prompt with
 * root's .forge/prompts/PROMPT.md appended, or replacing it), then the
 * project's instructions (context.h: context_instructions(), budget
 * context.instructions_tokens, the files of the state's plan tasks and
 * changes as the touched files).  Events: prompt.overlay {prompt, path,
 * mode: "appended"|"replaced"} when an overlay was used;
 * context.instructions (the report) when an instruction file was found.
 * *out malloc'd.  -1 with a message when the prompt cannot be loaded.
 */
int phase_system_prompt(char **out, struct phase *ph, const char *root, const char *prompt);

/* How many times this phase already ran in this pipeline, from the state's
 * bounces: every bounce reruns implement and then review; test reruns after
 * its own bounces; plan and deploy run once.  The cassette attempt is this
 * plus one. */
int phase_previous_runs(const struct phase *ph);

/* The repository to work on: --repo, else the state's task.repo, else the
 * one containing the cwd.  malloc'd, or NULL when there is none. */
char *phase_repo(struct phase *ph);

/* The context window of llm's model in tokens (llm_context_window(), else
 * llm.phases.PHASE.context_window or llm.context_window); the first call
 * of a process emits a context.window event saying which. */
size_t phase_context_window(struct phase *ph, struct llm_client *llm);

/* The tree the phase's agent reads and works in: the run's worktree
 * (task.worktree) when the state has one, so every phase of a run sees the
 * run's base and its commits, not the user's checkout; else phase_repo()
 * (a phase run by hand on a checkout).  malloc'd, or NULL when neither. */
char *phase_workdir(struct phase *ph);

/*
 * A command Forge runs in a run's worktree dir -- forge-test's tests,
 * implement's validation, forge-review's lint command, forge-deploy's
 * commands -- leaves there no untracked file that a commit, a saved ref or
 * a diff would take for the run's work (git.h: forge_git_command_before,
 * _after, _recover; one mechanism for all of them).
 * phase_command_recover(): what such a command left when the process that
 * ran it died (its note is still there) is moved to the worktree's
 * forge-leftovers/ULID/, with a worktree.cleaned event {removed, kept_in};
 * -1 with a message when it could not be (the caller says it).
 * phase_command_before(): the untracked files now, noted (a warning when
 * they could not be noted); jv_null() when they cannot be listed (nothing
 * is removed after then).  phase_command_after(): consumes before; the
 * files that appeared since are removed, and their paths returned (an
 * array, empty when none); "warning: what WHAT left in the worktree was
 * not removed" when they could not be.
 */
int phase_command_recover(struct phase *ph, const char *dir);
jv phase_command_before(struct phase *ph, const char *dir);
jv phase_command_after(struct phase *ph, const char *dir, jv before, const char *what);

/* Emit an event from the phase.  Consumes payload. */
void phase_emit(struct phase *ph, const char *type, jv payload);

/* What an llm.retry event's payload (borrowed) says, into b: "provider
 * overloaded (529), retrying in 4 s (attempt 2 of 3)" -- the line of
 * forge run's view ("    implement: ...") and of a phase run by hand
 * ("forge-implement: ..."), worded once. */
void phase_retry_text(struct buf *b, jv payload);

/* A line on stderr, "PROG: " and the text, with its control characters
 * spaces (term_clean): for any line that quotes what came from outside --
 * a remote's or a command's words, a model's, a state's -- whose escape
 * sequences must not drive the person's terminal.  (The events and the
 * state keep the text as it was, JSON-escaped.)  Printed whatever the
 * verbosity: the caller decides. */
void phase_say(struct phase *ph, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A progress line on stderr when interactive ("forge-plan: …"). */
void phase_progress(struct phase *ph, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
