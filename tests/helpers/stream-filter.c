/*
 * stream-filter - a minimal filter built on lib/stream, used by the bats
 * suites to check the stream contract of DESIGN.md §2 independently of any
 * phase: it forwards events, takes the last state (or a task), checks an
 * optional guard, emits its own events and ends with exactly one state.
 *
 *   stream-filter [--task TEXT] [--phase NAME] [--need KEY] [--status S]
 */
#include "app/cli.h"
#include "core/forge.h"
#include "core/ids.h"
#include "core/json.h"
#include "data/stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OPT_TASK = 256, OPT_PHASE, OPT_NEED, OPT_STATUS, OPT_MAX_LINE };

static const struct cli_option options[] = {
	{ "task", 0, "TEXT", "the task, instead of stdin", OPT_TASK },
	{ "phase", 0, "NAME", "phase to report (default plan)", OPT_PHASE },
	{ "need", 0, "KEY", "guard: the state must have KEY", OPT_NEED },
	{ "status", 0, "S", "status of the resulting state (default ok)", OPT_STATUS },
	{ "max-line", 0, "BYTES", "longest accepted line", OPT_MAX_LINE },
	{ NULL, 0, NULL, NULL, 0 }
};

static const struct cli_spec spec = {
	.name = "stream-filter",
	.synopsis = "[--task TEXT] [--phase NAME] [--need KEY] [--status S]",
	.description = "Test helper: the stream contract without a phase.",
	.options = options,
};

struct args {
	const char *task, *phase, *need, *status;
	long max_line;
};

static int on_option(int id, const char *arg, void *payload)
{
	struct args *a = payload;

	switch (id) {
	case OPT_TASK: a->task = arg; return 0;
	case OPT_PHASE: a->phase = arg; return 0;
	case OPT_NEED: a->need = arg; return 0;
	case OPT_STATUS: a->status = arg; return 0;
	case OPT_MAX_LINE: return forge_parse_long(&a->max_line, arg, 1, 1L << 30);
	}
	return -1;
}

static jv new_state(const char *trace, jv task)
{
	jv s = json_set(jv_object(), "kind", jv_string("state"));

	s = json_set(s, "v", jv_number(FORGE_PROTOCOL_VERSION));
	s = json_set(s, "trace_id", jv_string(trace));
	s = json_set(s, "phase", jv_string("init"));
	s = json_set(s, "status", jv_string("ok"));
	return json_set(s, "task", task);
}

int main(int argc, char **argv)
{
	struct cli_common common;
	struct args a = { .phase = "plan", .status = "ok" };
	struct stream_out out;
	struct stream_input in;
	struct stream_options opt = { .validate = true };
	int status = FORGE_EXIT_OK;

	cli_parse(&common, &spec, argc, argv, on_option, &a);
	opt.max_line = (size_t)a.max_line;
	stream_out_init(&out, stdout, "stream-filter", a.phase);
	stream_input_init(&in);
	if (a.task) {
		in.task = json_set(jv_object(), "description", jv_string(a.task));
	} else if (isatty(STDIN_FILENO)) {
		status = cli_reject(&out, NULL, "no input: give a state, {\"task\": …} or text on stdin, or --task");
		goto out;
	} else if (stream_read(&in, stdin, &out, &opt) != 0) {
		status = out.failed ? FORGE_EXIT_OK : cli_reject(&out, &in, forge_last_error());
		goto out;
	} else if (in.empty || (jv_get_kind(in.state) != JV_KIND_OBJECT && jv_get_kind(in.task) != JV_KIND_OBJECT)) {
		status = cli_reject(&out, &in, in.empty ? "empty input: expected a state, {\"task\": …} or a task description"
						       : "no state and no task in the input");
		goto out;
	}

	jv state;
	if (jv_get_kind(in.state) == JV_KIND_OBJECT) {
		state = jv_copy(in.state);
	} else {
		char trace[ULID_LEN + 1];
		ulid_new(trace);
		state = new_state(trace, jv_copy(in.task));
	}
	stream_out_set_trace(&out, json_get_str(state, "trace_id"));
	if (a.need && !json_has(state, a.need)) {
		stream_emit(&out, "phase.skipped", json_set(jv_object(), "reason",
			    jv_string_fmt("the state has no '%s'", a.need)));
		state = json_set(state, "status", jv_string("skipped"));
		status = FORGE_EXIT_REJECTED;
	} else {
		stream_emit(&out, "phase.started", jv_null());
		stream_emit_full(&out, "phase.completed", jv_null(), jv_null(), 0);
		state = json_set(state, "status", jv_string(a.status));
		status = strcmp(a.status, "ok") == 0 ? FORGE_EXIT_OK : FORGE_EXIT_REJECTED;
	}
	state = json_set(state, "phase", jv_string(a.phase));
	if (stream_write_state(&out, state) < 0) {
		fprintf(stderr, "stream-filter: %s\n", forge_last_error());
		status = FORGE_EXIT_DEPENDENCY;
	}
out:
	stream_input_release(&in);
	return cli_finish("stream-filter", cli_out_status(&out, status));
}
