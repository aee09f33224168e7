/*
 * stage_work.h - what forge compile's build stages (tests, code, integrate,
 * review; app/stage.h) share: the project they work in, its language
 * profile, the agent with file tools confined to the project, the real test
 * runs, the documents they read.
 *
 * THE PROJECT.  The stages write the compiled product's files in the
 * directory the supervisor runs program nodes in: the run's worktree, which
 * app/supervise_graph.c passes as the node's cwd and which the state names
 * as task.worktree (a git worktree of the project's repository on branch
 * forge/TRACE).  So: the state's task.worktree when it is set, else the
 * current directory (a stage run by hand).
 *
 * Ownership: a struct stage_work owns everything it points to
 * (stage_work_release); jv arguments follow json.h.
 */
#ifndef FORGE_STAGE_WORK_H
#define FORGE_STAGE_WORK_H

#include <jv.h>
#include <stdbool.h>

#include "agent/tools.h"
#include "core/buf.h"
#include "app/phase.h"
#include "compile/lang.h"

struct sandbox_policy;

struct stage_work {
	struct phase *ph;
	char *dir;                      /* the project's directory (absolute) */
	struct compile_lang *lang;
	struct sandbox_policy *policy;
	char *tmp;                      /* this stage's temp dir (removed at the end) */
	char *system;                   /* the system prompt */
	struct tool_ctx ctx;            /* the file tools, rooted at dir */
	const char *const *tools;       /* the tools the agent may use (static) */
	bool edit;                      /* edit mode: the state has a delta */
	int iterations;                 /* the agent's, after stage_agent() */
};

/* The file tools of the stages that write (tests, code, integrate) and
 * the read-only ones (review). */
extern const char *const stage_write_tools[];
extern const char *const stage_read_tools[];

/*
 * Set up w for ph: the project's directory (which must exist), the
 * language (state compile.language, else intent.language) and its profile,
 * the sandbox policy, a temp dir, the system prompt `prompt`
 * (schemas/prompts/PROMPT.md).  0, or -1 with the phase's reason set.
 */
int stage_work_open(struct stage_work *w, struct phase *ph, const char *prompt,
		    const char *const *tools);
void stage_work_release(struct stage_work *w);

/*
 * Run the agent with `prompt`; its finish input is checked against
 * schemas/compile/DOC.schema.json (at $defs/DEF when def is not NULL).
 * *doc gets the finish input (or jv_null()).  Returns the phase status.
 */
const char *stage_agent(jv *doc, struct stage_work *w, const char *prompt, const char *doc_name,
			const char *def);

/* Run the tests for real (compile_run_tests); -1 with the reason set.  An
 * event compile.tests_run {stage, command, exit_status, passed, failed}. */
int stage_run_tests(jv *run, struct stage_work *w);

/* Append the documents of the state named (NULL-terminated keys) as
 * "## key" sections of JSON, and the language's profile. */
void stage_context(struct buf *b, struct stage_work *w, const char *const *keys);

/* The rule ids of the state's rule set (a new array of strings). */
jv stage_rule_ids(struct phase *ph);

/* The test files of the state's test_suite whose digests changed or whose
 * files are gone since the tests stage: a new array (empty when none). */
jv stage_changed_tests(struct stage_work *w);

/* "a, b, c (and N more)" of an array of strings, into b. */
void stage_list(struct buf *b, jv names, int max);

/* The state's key is an object (guard helper). */
bool stage_has(struct phase *ph, const char *key);

/*
 * Commit the project's files on the run's branch (forge/TRACE) with
 * `message` and emit compile.committed {stage, branch, commit}, when w
 * works in the run's worktree; a stage run by hand leaves the files as
 * they are.  Nothing to commit is fine.  0, or -1 with the phase's reason
 * set.
 */
int stage_commit(struct stage_work *w, const char *message);

/*
 * A new product whose review passed lands on the project's branch: the
 * branch the project's checkout is on fast-forwarded to the run's
 * (forge_git_merge_ff), event compile.landed {from, branch, commit}, or
 * {from, refused} when it cannot be (the checkout has changes, the branch
 * moved).  An edit stays on the run's branch for forge merge.  What became
 * of it is appended to note ("; …") for the stage's reason.
 */
void stage_land(struct stage_work *w, struct buf *note);

#endif
