/* test_delegate.c - the pure rules of the delegate tool (lib/agent/delegate.h):
 * depth and count, the sub-agent's tools, its budget share; and where a
 * write-mode sub-agent's worktree is (app/delegate.h), which forge gc
 * forgets once its directory is gone. */
#include "agent/delegate.h"
#include "app/delegate.h"
#include "core/forge.h"
#include "core/json.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

static const struct delegate_limits lim = { .max_depth = 2, .max_count = 3, .budget_share_max = 0.5 };

static jv names(const char *json)
{
	return json_parse(json, strlen(json));
}

/* The tools as compact JSON (malloc'd), or the refusal's text. */
static char *tools_of(const char *requested, const char *parent, bool write, bool nest)
{
	jv out, req = names(requested), par = names(parent);
	int rc = delegate_tools(&out, req, par, write, nest);
	char *s = rc == 0 ? json_dumps(out, false) : xstrdup(forge_last_error());

	if (rc < 0)
		jv_free(out);
	jv_free(req);
	jv_free(par);
	return s;
}

static void test_depth_and_count(void)
{
	CHECK(delegate_may_start(&lim, 0, 0) == 0);
	CHECK(delegate_may_start(&lim, 1, 2) == 0);
	CHECK(delegate_may_start(&lim, 2, 0) < 0);
	CHECK(strstr(forge_last_error(), "at depth 2") && strstr(forge_last_error(), "agent.subagents.max_depth"));
	CHECK(delegate_may_start(&lim, 0, 3) < 0);
	CHECK(strstr(forge_last_error(), "already started 3 sub-agents") &&
	      strstr(forge_last_error(), "agent.subagents.max_count"));
	CHECK(delegate_may_nest(&lim, 0));
	CHECK(delegate_may_nest(&lim, 1));
	CHECK(!delegate_may_nest(&lim, 2));
}

static void test_tools_default(void)
{
	static const char parent[] = "[\"read_file\",\"grep\",\"edit_file\",\"run_command\",\"delegate\",\"srv__x\"]";
	char *s;

	/* read mode: what the parent has that does not write; delegate while nesting is allowed */
	s = tools_of("null", parent, false, true);
	CHECK_STR(s, "[\"read_file\",\"grep\",\"delegate\"]");
	free(s);
	s = tools_of("null", parent, false, false);
	CHECK_STR(s, "[\"read_file\",\"grep\"]");
	free(s);
	/* write mode: all the parent's built-in tools */
	s = tools_of("null", parent, true, false);
	CHECK_STR(s, "[\"read_file\",\"grep\",\"edit_file\",\"run_command\"]");
	free(s);
}

static void test_tools_asked(void)
{
	static const char parent[] = "[\"read_file\",\"grep\",\"edit_file\",\"delegate\",\"srv__x\"]";
	char *s;

	s = tools_of("[\"grep\",\"read_file\"]", parent, false, true);
	CHECK_STR(s, "[\"read_file\",\"grep\"]");    /* in the parent's order */
	free(s);
	s = tools_of("[\"run_command\"]", parent, true, true);
	CHECK(strstr(s, "cannot have 'run_command': this agent does not have it"));
	free(s);
	s = tools_of("[\"edit_file\"]", parent, false, true);
	CHECK(strstr(s, "cannot have 'edit_file'") && strstr(s, "mode is read"));
	free(s);
	s = tools_of("[\"delegate\"]", parent, false, false);
	CHECK(strstr(s, "cannot have 'delegate'") && strstr(s, "max_depth"));
	free(s);
	s = tools_of("[\"srv__x\"]", parent, false, true);
	CHECK(strstr(s, "built-in tools only"));
	free(s);
	/* an MCP tool the list does not name (a phase's agent gets them after
	 * delegate's list is made): the same reason (before: "this agent does
	 * not have it") */
	s = tools_of("[\"srv__y\"]", parent, false, true);
	CHECK_STR(s, "delegate: refused: the sub-agent cannot have 'srv__y': sub-agents have the built-in tools only");
	free(s);
	s = tools_of("[\"finish\"]", "[\"finish\",\"read_file\"]", false, true);
	CHECK(strstr(s, "every agent has it"));
	free(s);
	/* write mode needs a parent that writes */
	s = tools_of("null", "[\"read_file\",\"grep\"]", true, true);
	CHECK(strstr(s, "mode \"write\" needs tools that change files"));
	free(s);
}

static void test_budget(void)
{
	CHECK(delegate_budget(0, 0.5, 4) == 2);
	CHECK(delegate_budget(0.25, 0.5, 4) == 1);
	CHECK(delegate_budget(0.9, 0.5, 4) == 2);       /* clamped to the maximum */
	CHECK(delegate_budget(0.5, 0.5, -1) == -1);     /* no limit: none for the child either */
	CHECK(delegate_budget(0.5, 0.5, 0) == 0);
}

static void test_call_phase(void)
{
	char *p = delegate_call_phase("implement"), *q = delegate_call_phase(p);

	CHECK_STR(p, "implement-sub");
	CHECK_STR(q, "implement-sub-sub");
	free(p);
	free(q);
}

static void test_worktree_path(void)
{
	char *wt = delegate_worktree_in("/tmp/forge-sub-Ab12Cd");

	CHECK_STR(wt, "/tmp/forge-sub-Ab12Cd/worktree");
	CHECK(delegate_worktree_path(wt));
	free(wt);
	CHECK(delegate_worktree_path("/run/user/1000/tmp/forge-sub-000000/worktree"));
	/* a person's own worktrees are not a sub-agent's */
	CHECK(!delegate_worktree_path("/tmp/forge-sub-Ab12Cd/worktree/x"));
	CHECK(!delegate_worktree_path("/tmp/forge-sub-Ab12C/worktree"));
	CHECK(!delegate_worktree_path("/tmp/forge-sub-Ab12Cde/worktree"));
	CHECK(!delegate_worktree_path("/tmp/forge-sub-Ab.2Cd/worktree"));
	CHECK(!delegate_worktree_path("/tmp/forge-cmd-Ab12Cd/worktree"));
	CHECK(!delegate_worktree_path("/tmp/my-forge-sub-Ab12Cd/worktree"));
	CHECK(!delegate_worktree_path("forge-sub-Ab12Cd/worktree"));
	CHECK(!delegate_worktree_path("/home/me/src/project-worktree"));
	CHECK(!delegate_worktree_path("/worktree"));
	CHECK(!delegate_worktree_path(""));
}

int main(void)
{
	RUN(test_depth_and_count);
	RUN(test_tools_default);
	RUN(test_tools_asked);
	RUN(test_budget);
	RUN(test_call_phase);
	RUN(test_worktree_path);
	return unit_done();
}
