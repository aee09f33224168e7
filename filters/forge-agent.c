/*
 * forge-agent - a sub-agent: the helper the `delegate` tool starts
 * (app/delegate.h; README "Subagents").  Not a phase of the pipeline and
 * not meant to be run by hand.
 *
 * Reads one sub-task document on stdin (subagent.schema.json $defs/task):
 * the task, the tools it may use (a subset of its parent's, checked there
 * and enforced again here: any other tool is refused, and the delegating
 * phase's tools.permissions apply, not PARENT-sub's; no MCP server is
 * started), the mode, the
 * directory its tools work in, its budget and iterations, its span and its
 * parent.  Runs the agent loop (phase_run_agent: the same breakers, the
 * sandbox policy of the configuration, its budget as the cost limit) with
 * the system prompt prompts/subagent.md, and writes its events on stdout
 * -- trace_id the parent's, phase the delegating phase's, source
 * forge-agent -- then one last line, the result ($defs/result): status,
 * summary, output, reason, cost, iterations.  In write mode its work stays
 * in its worktree (root), where the delegating agent, which made it,
 * reads it as a diff once this process has ended: a change of any size,
 * not a line of this stream.  Its model calls count as
 * phase PARENT-sub (cassettes, llm_calls) with the attempt $FORGE_ATTEMPT,
 * its number among its parent's sub-agents.  Reflection into memory is
 * off: the delegating phase reflects on the whole.
 *
 * Exit status: 0 done, 2 bad input, 3 a breaker tripped, 4 it asks a human,
 * 5 the model failed; 130 when interrupted.
 */
#include "app/cli.h"
#include "app/delegate.h"
#include "app/phase.h"
#include "agent/tools.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/tmpdir.h"
#include "data/config.h"
#include "data/schema.h"
#include "data/stream.h"
#include "os/proc.h"
#include "os/sandbox.h"
#include "store/store.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define TASK_MAX (1u << 20)

static void on_signal(int sig)
{
	static const char msg[] = "forge-agent: interrupted\n";

	proc_kill_running(sig == SIGINT ? SIGINT : SIGTERM);
	tmpdir_remove_all_signal_safe();
	if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
		/* nothing more to do */
	}
	_exit(FORGE_EXIT_INTERRUPTED);
}

/* A sub-agent never outlives the agent that waits for it.  A model call
 * of its own, or of a sub-agent of its own, that the signal (its parent
 * passes on a Ctrl-C) cuts off is recorded first, as a phase's is
 * (phase_run_agent, the delegate tool: phase_leave_if_interrupted). */
static void catch_signals(void)
{
	cli_catch_model_interrupts(on_signal, delegate_interrupt, 0);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/* The sub-task document from stdin, checked; jv_invalid() after a message. */
static jv read_task(void)
{
	struct buf b = BUF_INIT;
	char chunk[65536];
	size_t n;
	jv doc;

	while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0 && b.len <= TASK_MAX)
		buf_add(&b, chunk, n);
	if (b.len > TASK_MAX) {
		buf_release(&b);
		forge_error("the sub-task document is over %u bytes", TASK_MAX);
		return jv_invalid();
	}
	doc = b.len ? json_parse(b.buf, b.len) : jv_invalid();
	buf_release(&b);
	if (jv_get_kind(doc) != JV_KIND_OBJECT) {
		jv_free(doc);
		forge_error("expected a sub-task document (subagent.schema.json) on stdin");
		return jv_invalid();
	}
	if (schema_validate_def("subagent.schema.json", "task", doc) < 0) {
		jv_free(doc);
		forge_error_prefix("the sub-task document");
		return jv_invalid();
	}
	return doc;
}

struct child {
	jv tools;               /* the names it was given */
	struct tool_ctx ctx;
};

static bool given(jv tools, const char *name)
{
	bool found = false;

	jv_array_foreach(tools, i, v) {
		if (strcmp(jv_string_value(v), name) == 0)
			found = true;
		jv_free(v);
	}
	return found;
}

/* The registry's executor, for the tools it was given only. */
static int exec_given(struct agent_tool_outcome *out, const char *name, jv input, void *payload)
{
	struct child *c = payload;

	if (strcmp(name, "delegate") != 0 && given(c->tools, name))
		return tools_agent_exec(out, name, input, &c->ctx);
	memset(out, 0, sizeof *out);
	out->text = jv_get_kind(c->tools) == JV_KIND_ARRAY
		? xstrdup("this tool was not given to this sub-agent; use the tools it has")
		: xstrdup("no such tool");
	out->event = json_set(jv_object(), "kind", jv_string("denied"));
	return 0;
}

/* Definitions of its tools but delegate (the hook adds that one). */
static jv tool_defs(jv tools)
{
	jv defs = jv_array();

	jv_array_foreach(tools, i, v) {
		const struct tool *t = tools_find(jv_string_value(v));
		if (t)
			defs = jv_array_append(defs, tool_spec(t, jv_null()));
		jv_free(v);
	}
	return defs;
}

static jv initial_state(jv doc, const char *repo)
{
	jv task = json_set(jv_object(), "description", json_get(doc, "task"));
	jv state = json_set(jv_object(), "trace_id", json_get_path(doc, "parent.trace_id"));
	jv budget = json_get(doc, "budget_usd");

	task = json_set(task, "worktree", json_get(doc, "root"));
	task = json_set(task, "repo", json_str_or_null(repo));
	state = json_set(state, "task", task);
	if (jv_get_kind(budget) == JV_KIND_NUMBER)
		state = json_set(state, "budget", json_set(json_set(jv_object(), "usd", jv_copy(budget)),
							   "remaining_usd", jv_copy(budget)));
	jv_free(budget);
	return state;
}

static char *first_prompt(jv doc)
{
	struct buf b = BUF_INIT;
	bool write = strcmp(json_get_str(doc, "mode"), "write") == 0;

	buf_addf(&b, "## Sub-task\n\n%s\n\n## Where\n\nroot: %s\nmode: %s\n", json_get_str(doc, "task"),
		 json_get_str(doc, "root"), write ? "write (your own copy of the files; your changes are "
		 "applied to the delegating agent's when you finish)" : "read (look, change nothing)");
	return buf_detach(&b, NULL);
}

/* The result line ($defs/result). */
static jv result_record(jv doc, const char *status, const struct agent_result *res)
{
	jv r = json_set(jv_object(), "kind", jv_string("subagent_result"));
	jv cost = json_set(jv_object(), "usd", jv_number(res->cost_usd));

	r = json_set(r, "span", json_get(doc, "span"));
	r = json_set(r, "status", jv_string(status));
	if (res->outcome == AGENT_DONE) {
		r = json_set(r, "summary", json_get_str(res->result, "summary")
			     ? json_get(res->result, "summary") : jv_string(""));
		r = json_set(r, "output", json_get_str(res->result, "output")
			     ? json_get(res->result, "output") : jv_string(""));
	}
	if (res->reason && res->outcome != AGENT_DONE)
		r = json_set(r, "reason", jv_string(res->reason));
	cost = json_set(cost, "tokens", jv_number((double)res->tokens));
	r = json_set(r, "cost", json_set(cost, "known", jv_bool(res->cost_known)));
	return json_set(r, "iterations", jv_number(res->iterations));
}

static int exit_of(const char *status)
{
	switch (state_status_of(status)) {
	case STATE_OK: return FORGE_EXIT_OK;
	case STATE_TRIPPED: return FORGE_EXIT_TRIPPED;
	case STATE_ESCALATED: return FORGE_EXIT_HUMAN;
	default: return FORGE_EXIT_DEPENDENCY;
	}
}

static const char result_schema[] = "{\"type\":\"object\",\"required\":[\"summary\"],\"properties\":{"
	"\"summary\":{\"type\":\"string\",\"description\":\"what you found or did, in a sentence or two\"},"
	"\"output\":{\"type\":\"string\",\"description\":\"everything the delegating agent needs\"}}}";

/* Run the sub-task; the exit status. */
static int run(struct phase *ph, jv doc)
{
	struct child c = { .tools = json_get(doc, "tools") };
	struct sandbox_policy *policy = NULL;
	struct agent_config cfg = { 0 };
	struct agent_result res;
	char *system = NULL, *prompt = NULL, *tmp = NULL;
	int code = FORGE_EXIT_DEPENDENCY;

	agent_result_init(&res);
	if (sandbox_policy_from_config(&policy, ph->cfg) < 0 || tmpdir_make(&tmp, "forge-agent") < 0 ||
	    phase_system_prompt(&system, ph, NULL, "subagent") < 0) {
		fprintf(stderr, "forge-agent: %s\n", forge_last_error());
		goto out;
	}
	c.ctx.root = json_get_str(doc, "root");
	c.ctx.tmp_dir = tmp;
	c.ctx.policy = policy;
	prompt = first_prompt(doc);
	cfg.system_prompt = system;
	cfg.tools = tool_defs(c.tools);
	cfg.result_schema = json_parse(result_schema, sizeof result_schema - 1);
	cfg.max_iterations = (int)json_get_num(doc, "max_iterations", 0);
	cfg.max_time_ms = (long long)(json_get_num(doc, "time_s", 0) * 1000);
	const char *status = phase_run_agent(&res, ph, &cfg, prompt, exec_given, &c);
	if (stream_write(&ph->out, result_record(doc, status, &res)) < 0)
		goto out;
	code = exit_of(status);
out:
	agent_result_release(&res);
	sandbox_policy_free(policy);
	tmpdir_remove(tmp);
	jv_free(c.tools);
	free(system);
	free(prompt);
	return code;
}

int main(int argc, char **argv)
{
	static const struct cli_spec cs = {
		.name = "forge-agent",
		.synopsis = "[OPTIONS] < sub-task",
		.description = "A sub-agent, started by the delegate tool of a phase's agent: runs one "
			       "sub-task (subagent.schema.json on stdin) with the tools it was given and "
			       "writes its events, then its result, on stdout. Not a pipeline phase.",
		.flags = CLI_MODEL_OPTIONS,
		.extra_help = "Exit status: 0 done, 2 bad input, 3 breaker, 4 human needed, 5 model failed.\n",
	};
	struct phase_spec spec = { .program = "forge-agent" };
	struct phase ph = { .spec = &spec, .state = JSON_NULL, .cost_known = true };
	struct session ses = { 0 };
	jv doc;
	int code;

	int first = cli_parse(&ph.common, &cs, argc, argv, NULL, NULL);
	if (first < argc)	/* (its sub-task is on stdin; an operand was dropped) */
		cli_usage_error(&cs, "unexpected operand '%s': forge-agent reads its sub-task on stdin", argv[first]);
	catch_signals();
	doc = read_task();
	if (!jv_is_valid(doc)) {
		fprintf(stderr, "forge-agent: %s\n", forge_last_error());
		return cli_finish("forge-agent", FORGE_EXIT_USAGE);
	}
	jv flags = json_set(jv_object(), "memory", json_set(jv_object(), "reflect", jv_false()));
	code = session_open(&ses, &ph.common, SESSION_CONFIG, flags);
	if (code) {
		fprintf(stderr, "forge-agent: %s\n", forge_last_error());
		goto out;
	}
	spec.name = json_get_str(doc, "call_phase") ? json_get_str(doc, "call_phase") : "agent-sub";
	ph.cfg = ses.cfg;
	ph.repo = ses.repo;
	stream_out_init(&ph.out, stdout, "forge-agent", json_get_str(doc, "phase"));
	jv parent = json_get(doc, "parent"), tools = json_get(doc, "tools");
	stream_out_set_trace(&ph.out, json_get_str(parent, "trace_id"));
	ph.state = initial_state(doc, ses.repo);
	delegate_self(json_get_str(doc, "span"), (int)json_get_num(parent, "depth", 0) + 1,
		      given(tools, "delegate"), spec.name);
	jv_free(parent);
	jv_free(tools);
	code = run(&ph, doc);
out:
	store_free(ph.store);
	jv_free(ph.state);
	jv_free(doc);
	session_close(&ses);
	return cli_finish("forge-agent", cli_out_status(&ph.out, code));
}
