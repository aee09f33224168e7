/*
 * tools.h - the tools an agent may call: registry, input validation,
 * execution in the sandbox, results and sanitised inputs for events.
 *
 * Tools: read_file, list_files, grep, write_file, edit_file, apply_patch,
 * run_command, git_diff, git_status, finish, ask_human.  Each has a JSON
 * Schema, schemas/tools/NAME.json; the very same schema is sent to the
 * model (tool_spec()) and checks the input (tool_validate()); the tool's
 * description is the schema's top-level "description".
 *
 *	const struct tool *t = tools_find(call->name);
 *	struct tool_result r;
 *	tool_execute(&r, t, &ctx, call->input);     // validates, then runs
 *	... r.ok, r.output, r.error, r.kind, r.data ...
 *	tool_result_release(&r);
 *
 * Results.  Every execution fills a struct tool_result, also on failure
 * (tool_execute() itself never fails): `ok`, `output` (text for the model,
 * already capped) or `error` (a message for the model), `kind` (what sort of
 * outcome, below), `retryable` (transient: worth calling again unchanged,
 * e.g. a fork that failed with EAGAIN) and `data` (structured details for
 * events and the phase: files changed, exit status, ...).  How the agent
 * loop treats each kind:
 *   TOOL_OK           success
 *   TOOL_ERR_INPUT    the model's input is wrong (schema, missing file, no
 *                     match): the error names the problem and the model
 *                     fixes its input; never retried unchanged
 *   TOOL_ERR_FAILED   the tool ran and failed (a command's non-zero exit,
 *                     a timeout): the output is for the model
 *   TOOL_ERR_DENIED   the sandbox refused (path outside the worktree,
 *                     .git, a denied command, confinement required but
 *                     unavailable): a permission error, not retried
 *   TOOL_ERR_INTERNAL a failure of Forge or the system (I/O, git)
 *   TOOL_ASK          run_command matched the ask list: data has
 *                     {"command","rule"}; the loop asks a human and, when
 *                     approved, calls again with ctx.approved set
 *   TOOL_FINISH       finish: data is the phase result (the loop validates
 *                     it against the phase's schema)
 *   TOOL_ASK_HUMAN    ask_human: data is the question object
 */
#ifndef FORGE_TOOLS_H
#define FORGE_TOOLS_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>

struct sandbox_policy;
struct sandbox_root;
struct agent_tool_outcome;

enum tool_kind {
	TOOL_OK = 0,
	TOOL_ERR_INPUT,
	TOOL_ERR_FAILED,
	TOOL_ERR_DENIED,
	TOOL_ERR_INTERNAL,
	TOOL_ASK,
	TOOL_FINISH,
	TOOL_ASK_HUMAN
};

/* "ok", "input", "failed", "denied", "internal", "ask", "finish", "ask_human" */
const char *tool_kind_name(enum tool_kind k);

struct tool_result {
	bool ok;
	enum tool_kind kind;
	bool retryable;       /* transient: calling again unchanged may work */
	char *output;         /* text for the model when ok (malloc'd), or NULL */
	char *error;          /* message for the model when !ok (malloc'd), or NULL */
	jv data;              /* details ({} when none); owned by the result */
};

/* read_file's bytes per answer unless tool_ctx.read_cap says otherwise. */
#define TOOL_READ_CAP_DEFAULT (256u << 10)

/* Where and how tools run.  Borrowed by tool_execute(); nothing is freed. */
struct tool_ctx {
	const char *root;                     /* the run's worktree (absolute) */
	const char *tmp_dir;                  /* the run's temp dir: HOME and TMPDIR of commands */
	const struct sandbox_policy *policy;  /* NULL = built-in defaults */
	char *const *env;                     /* base environment of commands; NULL = environ */
	bool approved;                        /* a human approved this (ask) call */
	size_t read_cap;                      /* read_file bytes per answer; 0 = TOOL_READ_CAP_DEFAULT */
	long long deadline_ms;                /* monotonic_ms() by which a command must end (a
	                                         time limit's; its timeout is cut to it); 0: none */
};

struct tool {
	const char *name;
	const char *schema;                   /* embedded schema: "tools/NAME.json" */
	bool writes;                          /* changes the worktree */
	void (*run)(struct tool_result *out, const struct tool_ctx *ctx,
		    const struct sandbox_root *root, jv input /* borrows */);
};

/* The tool called name, or NULL.  Borrowed, static. */
const struct tool *tools_find(const char *name);

/* Every tool (*n of them).  Borrowed, static. */
const struct tool *tools_all(size_t *n);

/*
 * The definition sent to the model: {"name","description","input_schema"}.
 * schema_override (consumed; jv_null() for none) replaces the input schema,
 * which is how finish gets the phase's result schema.
 */
jv tool_spec(const struct tool *t, jv schema_override);

/* Definitions of the named tools (a NULL-terminated list; NULL = all but
 * finish and ask_human).  Unknown names are an error: jv_invalid. */
jv tool_specs(const char *const *names);

/*
 * Check input against the tool's schema.  Borrows input.  0, or -1 with a
 * message for the model naming the tool and the JSON path ("read_file:
 * .start_line: expected integer, got string").
 */
int tool_validate(const struct tool *t, jv input);

/* Validate and run; always fills *out (see Results).  Borrows input. */
void tool_execute(struct tool_result *out, const struct tool *t, const struct tool_ctx *ctx,
		  jv input);

/* Look up name, then tool_execute(); an unknown name is TOOL_ERR_INPUT. */
void tools_run(struct tool_result *out, const char *name, const struct tool_ctx *ctx, jv input);

void tool_result_release(struct tool_result *r);

/*
 * The result as JSON for events: {"ok","kind","retryable","error"?,
 * "output_bytes","data"}.  The output text itself is left out.  Borrows r.
 */
jv tool_result_json(const struct tool_result *r);

/*
 * The input as it may appear in events and logs: strings longer than 200
 * characters are cut ("…[+1234 chars]"), values of keys that look like
 * secrets (key, token, secret, password, auth) become "[REDACTED]", and
 * known API keys are redacted everywhere (llm_redact).  Borrows input.
 */
jv tool_input_sanitize(jv input);

/*
 * An agent_exec_fn (agent.h) over this registry: payload is a
 * struct tool_ctx *.  finish and ask_human are the agent's own and are not
 * executed here.  Fills out->ok, ->retryable (transient only), ->text (the
 * output or the error), ->gate (for TOOL_ASK) and ->event ({"input":
 * sanitised, "result": tool_result_json}).  Returns 0.
 */
int tools_agent_exec(struct agent_tool_outcome *out, const char *name, jv input, void *payload);

/* ---- the individual tools (tool_files.c, tools.c) ---- */
void tool_read_file(struct tool_result *out, const struct tool_ctx *ctx,
		    const struct sandbox_root *root, jv input);
void tool_list_files(struct tool_result *out, const struct tool_ctx *ctx,
		     const struct sandbox_root *root, jv input);
void tool_grep(struct tool_result *out, const struct tool_ctx *ctx,
	       const struct sandbox_root *root, jv input);
void tool_write_file(struct tool_result *out, const struct tool_ctx *ctx,
		     const struct sandbox_root *root, jv input);

struct buf;
/*
 * Append n bytes of a command's or a file's output to b as text for the
 * model: a NUL byte, which would end the text there, is written as the six
 * characters \u0000 (a run of K of them once, with "[xK]") and the rest
 * follows.  The escapes never make the text more than 256 bytes longer
 * than n: past that, "[... N more bytes of binary output not shown]".
 */
void tool_text_add(struct buf *b, const char *s, size_t n);

/* Helpers for the tool implementations: fill out as a success or an error
 * (printf-style message), keeping data (consumed). */
void tool_ok(struct tool_result *out, char *output, jv data);
void tool_fail(struct tool_result *out, enum tool_kind kind, jv data, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Map a sandbox error code to a result kind. */
enum tool_kind tool_kind_of_sandbox(int code);

#endif
