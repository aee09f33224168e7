/*
 * forge-mcp - the configured MCP servers, for debugging (`forge mcp`).
 *
 *   forge-mcp list [--json]              every server of mcp.servers: started,
 *                                        its state, its tools (SERVER__TOOL)
 *   forge-mcp call SERVER TOOL [JSON]    call one tool (its server's own name
 *                                        for it, or SERVER__TOOL), print the result
 *
 * Servers start in the repository root with the command environment (no API
 * keys), as a phase starts them (app/toolset.h).  Exit: 0; 1 when the tool
 * reports an error (isError); 2 bad input (usage, unknown server or tool,
 * arguments that are not a JSON object); 5 a server that cannot start,
 * dies, times out or answers with a JSON-RPC error.  --db is taken, as
 * every program takes it, and not opened: nothing here is recorded (its
 * --help says so).
 */
#include "app/cli.h"
#include "app/term.h"
#include "app/toolset.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/secret.h"
#include "mcp/mcp.h"
#include "os/spawn.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "forge-mcp"

enum { OPT_JSON = 256 };

static const struct cli_option options[] = {
	{ "json", 0, NULL, "list: JSON output; call: the whole result as JSON", OPT_JSON },
	{ NULL, 0, NULL, NULL, 0 }
};

static const struct cli_spec spec = {
	.name = PROG,
	.synopsis = "list [--json]\ncall SERVER TOOL [JSON] [--json]",
	.description = "Start the MCP servers configured in mcp.servers and list their tools, or\n"
		       "call one tool of one server: for trying a server before a phase uses it.",
	.options = options,
	.extra_help = "Commands:\n"
		      "  list             every configured server: its state (running, failed,\n"
		      "                   disabled) and its tools as the model sees them\n"
		      "  call S T [JSON]  call tool T of server S with the arguments JSON (an\n"
		      "                   object; default {}) and print its text\n"
		      "\n"
		      "The configuration (--config) is read and checked as by every program; --db\n"
		      "is taken and not opened: a server tried here is not a run, nothing is\n"
		      "recorded in the database.\n"
		      "\n"
		      "Exit status: 0 ok; 1 the tool reported an error; 2 bad input (unknown\n"
		      "server or tool, arguments that are not a JSON object); 5 the server could\n"
		      "not start, died, timed out or answered with an error.\n",
};

static bool json_out;

static int on_option(int id, const char *arg, void *payload)
{
	(void)arg;
	(void)payload;
	if (id == OPT_JSON) {
		json_out = true;
		return 0;
	}
	return forge_error("unhandled option");
}

/* What a server wrote (its stderr, names, descriptions) reaches the
 * terminal without its control characters (term.h: term_clean), and
 * without an API key it echoed (redacted as the events redact it). */
static void say(const char *prefix, const char *msg)
{
	char *shown = llm_redact(xstrdup(msg));

	term_clean(shown, strlen(shown));
	fprintf(stderr, PROG ": %s%s\n", prefix, shown);
	free(shown);
}

/* ^C or SIGTERM: the servers (each in a process group of its own, which
 * the terminal's ^C does not reach) are stopped before leaving. */
static void on_signal(int sig)
{
	static const char msg[] = PROG ": interrupted\n";

	(void)sig;
	proc_spawn_kill_all(MCP_KILL_GRACE_MS);
	if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
		/* nothing more to do */
	}
	_exit(FORGE_EXIT_INTERRUPTED);
}

static void catch_signals(void)
{
	cli_catch_interrupts(on_signal);
}

static void warn(void *payload, const char *msg)
{
	const struct cli_common *c = payload;

	if (c->verbosity >= 0)
		say("warning: ", msg);
}

static int list(const struct session *ses, const struct cli_common *common)
{
	struct toolset_opts o = { .cfg = ses->cfg, .root = ses->repo, .all = true,
				  .warn = warn, .warn_payload = (void *)common };
	struct toolset *ts;

	toolset_open(&ts, &o);
	jv all = toolset_servers_json(ts);
	if (json_out) {
		json_write_pretty(stdout, all);
		toolset_close(ts);
		return FORGE_EXIT_OK;
	}
	all = term_safe(all);
	if (jv_array_length(jv_copy(all)) == 0)
		printf("no MCP servers configured (mcp.servers)\n");
	jv_array_foreach(all, i, s) {
		const char *state = json_get_str(s, "state");
		jv tools = json_get(s, "tools");
		printf("%s  %s", json_get_str(s, "name"), state);
		if (json_get_str(s, "protocol"))
			printf(" (protocol %s)", json_get_str(s, "protocol"));
		if (json_get_str(s, "error"))
			printf(": %s", json_get_str(s, "error"));
		putchar('\n');
		jv_array_foreach(tools, j, t) {
			printf("  %-32s %s\n", json_get_str(t, "name"), json_get_str(t, "description"));
			jv_free(t);
			(void)j;
		}
		jv_free(tools);
		/* the tools a model is not offered, and why (also warned) */
		jv refused = json_get(s, "refused");
		jv_array_foreach(refused, j, r) {
			char *tool = xstrdup(json_get_str(r, "tool") ? json_get_str(r, "tool") : "");
			term_clean_line(tool, strlen(tool));
			printf("  (left out) %s: %s\n", tool, json_get_str(r, "reason"));
			free(tool);
			jv_free(r);
			(void)j;
		}
		jv_free(refused);
		jv_free(s);
		(void)i;
	}
	jv_free(all);
	toolset_close(ts);
	return FORGE_EXIT_OK;
}

/* TOOL as the server names it: SERVER__TOOL is accepted too. */
static const char *server_tool(const char *server, const char *tool)
{
	size_t n = strlen(server);

	if (!strncmp(tool, server, n) && !strncmp(tool + n, "__", 2))
		return tool + n + 2;
	return tool;
}

static int call(const struct session *ses, const struct cli_common *common, const char *server,
		const char *tool, const char *args_text)
{
	struct toolset_opts o = { .cfg = ses->cfg, .root = ses->repo, .server = server };
	struct toolset *ts = NULL;
	struct mcp_call_result r;
	jv args = args_text ? json_parse(args_text, strlen(args_text)) : jv_object(), tools = jv_null();
	int status = FORGE_EXIT_DEPENDENCY, rc;

	memset(&r, 0, sizeof r);
	r.content = r.structured = jv_null();
	if (jv_get_kind(args) != JV_KIND_OBJECT) {
		char *why = jv_is_valid(args) ? xstrdup("not an object") : json_invalid_msg(jv_copy(args));
		fprintf(stderr, PROG ": the arguments must be a JSON object: %s\n", why);
		free(why);
		status = FORGE_EXIT_USAGE;
		goto out;
	}
	if (toolset_open(&ts, &o) < 0) {
		fprintf(stderr, PROG ": %s (forge mcp list shows them)\n", forge_last_error());
		status = FORGE_EXIT_USAGE;
		goto out;
	}
	struct mcp_client *c = toolset_client(ts, server);
	if (!c) {
		say("", forge_last_error());
		goto out;
	}
	tool = server_tool(server, tool);
	if (mcp_tools(&tools, c) < 0) {
		say("", forge_last_error());
		goto out;
	}
	bool known = false;
	struct buf names = BUF_INIT;
	/* (a tool too deep for Forge to read is the server's all the same) */
	tools = jv_array_concat(tools, jv_copy(mcp_tools_unreadable(c)));
	jv_array_foreach(tools, i, t) {
		const char *name = json_get_str(t, "name");
		if (name) {
			char *shown = xstrdup(name);
			term_clean_line(shown, strlen(shown));    /* one line each */
			known |= !strcmp(name, tool);
			buf_addf(&names, "%s%s", names.len ? ", " : "", shown);
			free(shown);
		}
		jv_free(t);
		(void)i;
	}
	if (!known) {
		struct buf msg = BUF_INIT;
		buf_addf(&msg, "MCP server '%s' has no tool '%s'; its tools: %s", server, tool,
			 names.len ? names.buf : "none");
		say("", msg.buf);
		buf_release(&msg);
		buf_release(&names);
		status = FORGE_EXIT_USAGE;
		goto out;
	}
	buf_release(&names);
	if ((rc = mcp_call(&r, c, tool, args)) < 0) {
		say("", forge_last_error());
		goto out;
	}
	/* (a key the tool's answer holds is redacted, as the events redact it) */
	if (json_out) {
		jv res = json_set(json_set(jv_object(), "isError", jv_bool(r.is_error)), "content", jv_copy(r.content));
		if (jv_get_kind(r.structured) != JV_KIND_NULL)
			res = json_set(res, "structuredContent", jv_copy(r.structured));
		json_write_pretty(stdout, llm_redact_jv(res));
	} else {
		llm_redact(r.text);
		size_t n = strlen(r.text);
		fputs(r.text, stdout);
		if (n && r.text[n - 1] != '\n')
			putchar('\n');
	}
	status = r.is_error ? FORGE_EXIT_REJECTED : FORGE_EXIT_OK;
	if (r.is_error && common->verbosity >= 0)
		fprintf(stderr, PROG ": %s__%s reported an error\n", server, tool);
out:
	mcp_call_result_release(&r);
	jv_free(tools);
	jv_free(args);
	toolset_close(ts);
	return status;
}

int main(int argc, char **argv)
{
	struct cli_common common;
	struct session ses;
	int first = cli_parse(&common, &spec, argc, argv, on_option, NULL);
	int nops = argc - first, status;
	const char *cmd = nops > 0 ? argv[first] : NULL;

	if (!cmd)
		cli_usage_error(&spec, "a command is needed: list or call");
	if (!strcmp(cmd, "list")) {
		if (nops > 1)
			cli_usage_error(&spec, "list: too many arguments: '%s'", argv[first + 1]);
	} else if (!strcmp(cmd, "call")) {
		if (nops < 3)
			cli_usage_error(&spec, "call: SERVER and TOOL are needed");
		if (nops > 4)
			cli_usage_error(&spec, "call: too many arguments: '%s'", argv[first + 4]);
	} else {
		cli_usage_error(&spec, "unknown command '%s' (list, call)", cmd);
	}
	catch_signals();
	status = session_open(&ses, &common, SESSION_CONFIG, jv_null());
	if (status) {
		fprintf(stderr, PROG ": %s\n", forge_last_error());
		return cli_finish(PROG, status);
	}
	if (!strcmp(cmd, "list"))
		status = list(&ses, &common);
	else
		status = call(&ses, &common, argv[first + 1], argv[first + 2], nops > 3 ? argv[first + 3] : NULL);
	session_close(&ses);
	return cli_finish(PROG, status);
}
