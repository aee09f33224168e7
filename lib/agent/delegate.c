/* delegate.c - the pure rules of the delegate tool; see delegate.h. */
#include "agent/delegate.h"
#include "agent/tools.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"

#include <stdlib.h>
#include <string.h>

int delegate_may_start(const struct delegate_limits *lim, int depth, int started)
{
	if (depth + 1 > lim->max_depth)
		return forge_error("delegate: refused: this agent is a sub-agent at depth %d and sub-agents "
				   "nest at most %d deep (agent.subagents.max_depth); do the sub-task yourself",
				   depth, lim->max_depth);
	if (started >= lim->max_count)
		return forge_error("delegate: refused: this agent already started %d sub-agent%s, the limit "
				   "(agent.subagents.max_count); do the rest yourself", started,
				   started == 1 ? "" : "s");
	return 0;
}

bool delegate_may_nest(const struct delegate_limits *lim, int depth)
{
	return depth + 1 <= lim->max_depth;
}

static bool has_name(jv list, const char *name)
{
	bool found = false;

	jv_array_foreach(list, i, v) {
		if (jv_get_kind(v) == JV_KIND_STRING && strcmp(jv_string_value(v), name) == 0)
			found = true;
		jv_free(v);
	}
	return found;
}

/* A tool every agent can be given: one of tools_find()'s or the loop's own. */
static bool builtin(const char *name)
{
	return tools_find(name) || strcmp(name, "finish") == 0 || strcmp(name, "ask_human") == 0 ||
	       strcmp(name, "delegate") == 0;
}

/* Why `name` (one the parent has, or one not built in) cannot go to the
 * sub-agent, or NULL. */
static const char *why_not(const char *name, bool write_mode, bool nest)
{
	const struct tool *t = tools_find(name);

	if (strcmp(name, "finish") == 0 || strcmp(name, "ask_human") == 0)
		return "every agent has it already";
	if (strcmp(name, "delegate") == 0)
		return nest ? NULL : "the sub-agent would be at the deepest level (agent.subagents.max_depth)";
	if (!t)
		return "sub-agents have the built-in tools only";
	if (t->writes && !write_mode)
		return "it changes files and the mode is read (use mode \"write\")";
	return NULL;
}

static bool parent_writes(jv parent)
{
	bool writes = false;

	jv_array_foreach(parent, i, v) {
		const struct tool *t = jv_get_kind(v) == JV_KIND_STRING ? tools_find(jv_string_value(v)) : NULL;
		if (t && t->writes)
			writes = true;
		jv_free(v);
	}
	return writes;
}

int delegate_tools(jv *out, jv requested, jv parent, bool write_mode, bool nest)
{
	bool explicit = jv_get_kind(requested) == JV_KIND_ARRAY;
	jv names;

	*out = jv_null();
	if (write_mode && !parent_writes(parent))
		return forge_error("delegate: refused: mode \"write\" needs tools that change files, and this "
				   "agent has none; use mode \"read\"");
	names = jv_array();
	if (explicit) {
		jv_array_foreach(requested, i, v) {
			const char *name = jv_string_value(v);
			/* a tool not built in is refused for that, whether or
			 * not parent lists it (a phase's MCP tools are added to
			 * its agent after the list delegate is given) */
			const char *why = has_name(parent, name) || !builtin(name) ? why_not(name, write_mode, nest)
										 : "this agent does not have it";
			if (why) {
				forge_error("delegate: refused: the sub-agent cannot have '%s': %s", name, why);
				jv_free(v);
				jv_free(names);
				return -1;
			}
			jv_free(v);
		}
	}
	jv_array_foreach(parent, i, v) {
		const char *name = jv_get_kind(v) == JV_KIND_STRING ? jv_string_value(v) : NULL;
		if (name && (explicit ? has_name(requested, name) : !why_not(name, write_mode, nest)) &&
		    !has_name(names, name))
			names = jv_array_append(names, jv_copy(v));
		jv_free(v);
	}
	*out = names;
	return 0;
}

double delegate_budget(double share, double share_max, double remaining)
{
	if (remaining < 0)
		return -1;
	if (share <= 0 || share > share_max)
		share = share_max;
	return remaining * share;
}

char *delegate_call_phase(const char *parent)
{
	struct buf b = BUF_INIT;

	buf_addf(&b, "%s-sub", parent && *parent ? parent : "agent");
	return buf_detach(&b, NULL);
}
