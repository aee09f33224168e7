/*
 * toolset.h - the tools a phase's model may call: the phase's built-in tools
 * and the tools of the MCP servers configured for it (mcp.servers), under
 * one permission policy (tools.permissions).
 *
 *	struct toolset_opts o = { .phase = "implement", .cfg = cfg, .root = worktree,
 *				  .out = &ph->out, .warn = warn, .warn_payload = ph };
 *	struct toolset *ts;
 *	toolset_open(&ts, &o);                  // starts the phase's MCP servers
 *	cfg.tools = toolset_specs(ts, tool_specs(builtin));   // minus denied, plus MCP
 *	struct toolset_exec x = { ts, filter_exec, filter_payload };
 *	env.exec = toolset_exec_fn; env.exec_payload = &x;
 *	...
 *	toolset_close(ts);                      // stops them (mcp.server.stopped)
 *
 * Names: an MCP tool is offered as SERVER__TOOL, every character outside
 * [A-Za-z0-9_-] replaced by '_' (the models' tool-name charset), at most 64
 * characters.  A name that is too long or is already taken (a built-in tool,
 * another server's) is refused: an mcp.tool.refused event and a warning;
 * so is one whose input schema is over 64 KiB of JSON, one whose input
 * schema is not a JSON Schema at all ("properties": "nope": the provider
 * would refuse every request it is in; a keyword Forge's validator does not
 * implement is no reason, the server checks its input then), and one whose
 * definition nests deeper than Forge reads (mcp.h).  A description over
 * 16 KiB is cut there, with a warning.  Names in warnings are on one line.
 * A model call offers at most 128 tools (OpenAI's limit): the phase's own
 * first, then the MCP tools in order; those past it are left out (an
 * event each, a warning a server saying how many).  What a server echoed
 * in a warning, an error or forge mcp list (an API key passed in its env)
 * is redacted (core/secret.h), as the events are.
 *
 * Permissions (tools.permissions.PHASE and .default, each {allow, deny,
 * ask}: fnmatch globs): deny wins over ask over allow.  A tool no list
 * names is allowed when it is the phase's own or an MCP tool of a server
 * the phase starts; an allow list (the phase's, else default's), when
 * there is one, allows only what it names.  Denied tools are not offered;
 * a call to one anyway is refused (kind "denied").  An ask tool's call is
 * not run: it goes to a human (the outcome's gate: the phase escalates).
 *
 * Servers: each enabled server whose phases hold the phase (or "*") is
 * started with the command environment (sandbox_build_env: no API keys;
 * HOME and TMPDIR a temporary directory of its own) plus its env (a ${VAR}
 * value taken from Forge's environment only when the entry comes from the
 * user's own configuration, never from the repository's); in that
 * directory of its own, never in root (where python3 -m, npx, uvx would
 * take a module the model wrote for the server's), except a server the
 * repository's configuration defines or changes (mcp.trust_project),
 * started in root, whose files its command may name.
 * Events: mcp.server.started {server, protocol, server_info, tools, pid},
 * mcp.server.failed {server, error, stderr} (with a warning; the phase goes
 * on without its tools), mcp.server.stopped {server, status, stderr}; the
 * servers are stopped all at once (mcp_close_all).  A
 * server that dies during a call is reported the same way (mcp.server.failed,
 * "during": the tool) and its tools then fail at once.
 *
 * A tool call's event (tool.executed / tool.failed) gets {"kind", "data":
 * {"server","tool","output_bytes","truncated","structured"}}; its text is
 * capped at sandbox.output_cap_bytes like run_command's output.
 */
#ifndef FORGE_TOOLSET_H
#define FORGE_TOOLSET_H

#include <jv.h>
#include <stdbool.h>

#include "agent/agent.h"

struct config;
struct stream_out;
struct mcp_client;

enum tool_permission { TOOL_ALLOW, TOOL_ASK_FIRST, TOOL_DENY };

/* "allow", "ask", "deny". */
const char *tool_permission_name(enum tool_permission p);

/*
 * The policy's word on tool `name` in `phase` (see above); `own` says the
 * tool is in the phase's default set.  *rule (may be NULL) gets the list
 * that decided, "tools.permissions.plan.deny", or "default".
 */
enum tool_permission toolset_permission(const struct config *cfg, const char *phase, const char *name,
					bool own, const char **rule);

/* SERVER__TOOL into out (65 bytes), each character a model's name does not
 * allow one "_" (a UTF-8 sequence is one character); -1 with a message
 * when it is longer than 64 or the tool has no name (NULL or ""). */
int toolset_tool_name(char out[65], const char *server, const char *tool);

/* The input schema offered to the model for an MCP tool (borrowed): its
 * inputSchema, with "type": "object" added when it names no type (the
 * providers refuse a tool schema without it, and a whole request with
 * it), or {"type": "object"} when it has none (a tool that takes no
 * input).  -1 with a message when it is an object schema of another type
 * ("array", "string"): no provider takes one. */
int toolset_input_schema(jv *out, jv tool);

struct toolset_opts {
	const char *phase;              /* "plan"; NULL with `server` (forge mcp) */
	const struct config *cfg;       /* borrowed */
	const char *root;               /* the cwd of the repository's servers (the run's
					   worktree); NULL = cwd */
	struct stream_out *out;         /* events; may be NULL */
	void (*warn)(void *payload, const char *msg);   /* may be NULL */
	void *warn_payload;
	const char *server;             /* start this server only, whatever its phases and
					   enabled say (forge mcp call); NULL = the phase's */
	bool all;                       /* start every enabled server (forge mcp list) */
	bool builtin_only;              /* start no server: a sub-agent's tools (README
					   "Subagents": a helper never gets MCP tools) */
};

struct toolset;

/*
 * Start the servers the options select.  A server that cannot start is
 * reported (event, warning) and left out; 0 always, except -1 with a
 * message for a configuration that cannot be used (opts->server names no
 * server).  *out owned by the caller (toolset_close).
 */
int toolset_open(struct toolset **out, const struct toolset_opts *opts);

/*
 * The definitions to send to the model: builtin (consumed; the phase's own
 * tools as tool_specs() gives them) without the denied ones, then the MCP
 * tools that are not denied.  The names in builtin become the phase's own
 * set.  A new array.
 */
jv toolset_specs(struct toolset *ts, jv builtin);

/* The executor around a filter's: payload of toolset_exec_fn. */
struct toolset_exec {
	struct toolset *ts;
	agent_exec_fn inner;            /* the phase's built-in tools */
	void *inner_payload;
};

/* An agent_exec_fn (agent.h): permission check, then an MCP tool or the
 * inner executor. */
int toolset_exec_fn(struct agent_tool_outcome *out, const char *name, jv input, void *payload);

/*
 * The servers as JSON for forge mcp list: [{name, command, args, phases,
 * enabled, state: "running"|"failed"|"disabled"|"not started", error?,
 * protocol?, server_info?, tools: [{name, tool, description}], refused:
 * [{tool, reason}]}], registered API keys redacted.
 */
jv toolset_servers_json(struct toolset *ts);

/* The client of a running server, or NULL (with a message saying why). */
struct mcp_client *toolset_client(struct toolset *ts, const char *server);

/* Stop every server (mcp.server.stopped) and free ts (NULL is fine). */
void toolset_close(struct toolset *ts);

#endif
