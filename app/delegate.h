/*
 * delegate.h - the `delegate` tool (README "Subagents"): an agent hands a
 * sub-task to a helper agent, a forge-agent process of its own, and gets
 * its result back as the tool's result.
 *
 * phase_run_agent() hooks it in (delegate_hook) when agent.subagents.enabled
 * and the phase is one of agent.subagents.phases (forge-agent: when its
 * parent gave it delegate): the tool is offered while the depth allows, and
 * the executor is wrapped so a `delegate` call comes here; every other call
 * goes on to the phase's own executor.  A call:
 *   1. is checked (lib/agent/delegate.h): depth and count, the tools (a
 *      subset of this agent's own that tools.permissions of its phase
 *      neither denies nor asks a human for), the budget share; a refusal
 *      is a tool error for the model, and nothing is started;
 *   2. write mode: the agent's files as they are now (committed or not) are
 *      committed on no branch (the "base") and checked out in a child
 *      worktree in a temp directory;
 *   3. starts forge-agent with the sub-task on stdin (subagent.schema.json
 *      $defs/task) and forwards every event it writes into this program's
 *      stream, with `span` (the sub-agent's id) and `parent_span` (this
 *      agent's, null for the phase's own) added unless the event has them
 *      (a deeper sub-agent's);
 *   4. takes its last line, the result ($defs/result); write mode: what it
 *      changed in the child worktree, read from there as a diff against
 *      the base (any size: it does not travel on the sub-agent's stdout,
 *      whose lines are read up to 16 MiB), is applied to this agent's
 *      files when it applies cleanly (git apply), else the conflict is
 *      named in the tool result and nothing changes;
 *   5. returns the result as the tool's result, its cost and tokens in the
 *      outcome (agent.h), so the loop's breakers and the phase's cost count
 *      them.  A sub-agent that crashed or was killed is a tool error saying
 *      so (its spend so far, from its llm.called events, still counts).
 * Events: subagent.started {span, parent_span, depth, number, task, mode,
 * tools, budget_usd} and subagent.completed {span, parent_span, depth,
 * status ok|escalated|tripped|failed|crashed, reason, summary, cost_usd,
 * tokens, iterations, duration_ms, applied, conflict, files} -- from them
 * `forge status` and `forge show` draw the tree (runview.h).
 */
#ifndef FORGE_APP_DELEGATE_H
#define FORGE_APP_DELEGATE_H

#include <jv.h>
#include <stdbool.h>

#include "agent/agent.h"
#include "agent/delegate.h"

struct phase;

/*
 * Who this process's agent is.  The default is the phase's own agent
 * (span NULL, depth 0, call phase = the phase's name, delegating when the
 * phase is listed).  forge-agent calls this before phase_run_agent():
 * its span and depth, whether its parent gave it delegate, and the phase
 * its model calls count as ("implement-sub").  Strings are copied.
 */
void delegate_self(const char *span, int depth, bool may_delegate, const char *call_phase);
/* Whether this process's agent is a sub-agent (delegate_self() was called). */
bool delegate_is_sub(void);
/* This process's agent's span: a sub-agent's (delegate_self()), NULL for a
 * phase's own agent.  Borrowed, valid until the next delegate_self(). */
const char *delegate_self_span(void);

struct delegate {
	struct phase *ph;
	agent_exec_fn exec;                 /* the phase's executor */
	void *exec_payload;
	const struct agent_result *live;    /* the loop's running totals */
	double limit_usd;                   /* the loop's cost limit; < 0 none */
	long long deadline_ms;              /* monotonic end of the loop's time; 0 none */
	jv tools;                           /* this agent's tool names */
	struct delegate_limits lim;
	bool offered;                       /* the tool is among this agent's */
};

/*
 * Before agent_run(): when sub-agents are on for this agent, add the
 * delegate tool to cfg->tools (while the depth allows) and point *exec and
 * *payload at the wrapper; d keeps the old ones.  live is the result the
 * loop fills (its cost so far decides the budget share).  cfg's breakers
 * must be set already.  delegate_unhook() releases d.
 */
void delegate_hook(struct delegate *d, struct phase *ph, struct agent_config *cfg,
		   const struct agent_result *live, agent_exec_fn *exec, void **payload);
void delegate_unhook(struct delegate *d);

/*
 * Ctrl-C while a sub-agent runs (for cli_catch_model_interrupts, from a
 * signal handler: async-signal-safe): sig is passed on to it, which stops
 * its model call and records it (its llm.called comes through this
 * program's stream) before it ends, and true is returned: the delegate
 * tool then ends this program (phase_leave_if_interrupted) once the
 * sub-agent has.  False when none runs.
 */
bool delegate_interrupt(int sig);

/*
 * Whether path is where a write-mode sub-agent's child worktree is made:
 * $TMPDIR/forge-sub-XXXXXX/worktree (core/tmpdir.h).  Such a worktree is
 * removed with its registration in the repository when the sub-agent
 * ends; a process killed with SIGKILL (or a temporary directory cleared)
 * leaves the registration, which forge gc forgets once the directory is
 * gone (git/git.h forge_git_worktrees_prune).
 */
bool delegate_worktree_path(const char *path);
/* The child worktree's directory in a sub-agent's temporary directory tmp
 * (forge-sub-XXXXXX): tmp/worktree.  malloc'd. */
char *delegate_worktree_in(const char *tmp);

#endif
