/*
 * delegate.h - the rules of the `delegate` tool (README "Subagents") that
 * need no process: whether an agent may start a sub-agent, which tools the
 * sub-agent gets, and what it may spend.  app/delegate.c starts the
 * sub-agent (forge-agent) and applies these rules first.
 *
 * Depth: the phase's own agent is at depth 0, a sub-agent it starts at 1,
 * and so on; a sub-agent may exist only at a depth <= max_depth.
 *
 * Ownership: jv arguments follow json.h (borrowed here unless said).
 */
#ifndef FORGE_DELEGATE_H
#define FORGE_DELEGATE_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>

struct delegate_limits {
	int max_depth;                  /* deepest sub-agent: 1 = only the phase's agent delegates */
	int max_count;                  /* sub-agents one agent may start in one phase run */
	double budget_share_max;        /* of the delegating agent's remaining budget, (0, 1] */
};

/*
 * May an agent at `depth` that already started `started` sub-agents start
 * another?  0 when it may; -1 with forge_error() set to the refusal as the
 * model should read it (the limit, its config key, what to do instead).
 */
int delegate_may_start(const struct delegate_limits *lim, int depth, int started);

/* May a sub-agent at `depth` (>= 1) be given delegate itself? */
bool delegate_may_nest(const struct delegate_limits *lim, int depth);

/*
 * The sub-agent's tools.  `requested` is the tool input's "tools" (an array
 * of names, or null/absent: every tool of the parent's the mode allows);
 * `parent` the names the delegating agent has (an array).  A sub-agent never
 * gets a tool its parent lacks; finish and ask_human are every agent's own
 * and are left out; in read mode no tool that writes (tools.h: writes) is
 * given; "delegate" only when `nest`; tools that are not built in (MCP
 * tools) are not delegated.  Asking for any of these by name is refused
 * (-1, forge_error() says which and why); left to the default they are
 * quietly left out.  Write mode needs a parent that can write.  0 with *out
 * the names (a new array, in the parent's order).
 */
int delegate_tools(jv *out, jv requested, jv parent, bool write_mode, bool nest);

/*
 * The sub-agent's budget in USD: share (<= 0: the maximum) of remaining,
 * share clamped to share_max.  remaining < 0 (no limit) gives -1: the
 * sub-agent has no cost limit of its own either (the run's breakers still
 * count its spend as the parent's).
 */
double delegate_budget(double share, double share_max, double remaining);

/* The cassette phase of a sub-agent's model calls: "PHASE-sub" for the
 * phase's own agent's helpers, one "-sub" more per level below.  parent is
 * the delegating agent's call phase ("implement", "implement-sub").
 * malloc'd. */
char *delegate_call_phase(const char *parent);

#endif
