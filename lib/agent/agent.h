/*
 * agent.h - the loop every phase runs (seed 003): perceive → reason → act →
 * learn, with its termination rules.
 *
 * The caller (a phase) does the perceiving: it builds the first user message
 * from the task, the state, recalled memories, skills and environment
 * (context.h fits them into the token budget).  agent_run() then loops:
 *
 *   reason  one LLM call with the phase's system prompt and tools, plus the
 *           two tools every phase has: `finish` (its input is the phase
 *           result, checked against the phase's schema) and `ask_human`;
 *   act     each tool call goes to the executor (tools.h validates the input
 *           against the tool's schema and applies the sandbox); transient
 *           failures are retried with backoff (1 s, 2 s, 4 s; at most 3
 *           retries), every call is reported as tool.executed or
 *           tool.failed with its sanitised input;
 *   learn   the call and its result join the working memory; a tool error
 *           triggers a reflection (within the reflection budget).
 *
 * It ends, each way with its event (DESIGN.md §2 gives the exit codes):
 *   AGENT_DONE       `finish` with a result that matches the phase schema
 *                    (a result that does not is sent back to the model with
 *                    the schema error and the loop goes on)     -> exit 0/1
 *   AGENT_ESCALATED  `ask_human`, a command the policy says needs approval,
 *                    or stagnation: the same hash of the last three messages
 *                    three times running (agent.stagnation_detected) -> exit 4
 *   AGENT_TRIPPED    a breaker (breaker.tripped): iterations, cost (the
 *                    phase's limit or the run's remaining budget, whichever is
 *                    lower), time (these three count the earlier runs of the
 *                    phase: cfg->spent_*), or error rate (tool errors in a sliding
 *                    window: a warning event at `error_rate_warning`, a trip
 *                    at `error_rate_critical`, judged once the window holds
 *                    at least AGENT_ERROR_RATE_MIN_CALLS calls) -> exit 3
 *   AGENT_FAILED     the model could not be reached after the client's
 *                    retries, or answered in a way that cannot be used   -> exit 5
 *
 * Working memory is compressed when its estimated size passes 90 % of the
 * token budget: the first message and the last three are kept, the middle is
 * summarised by the fast model (memory.compressed); tool results still too
 * large are then cut to their head and tail.  One tool result is held to a
 * share of the model's window as it comes (agent_result_cap).  A request
 * that cannot fit the window even so (the system prompt and the tools
 * alone, or the task) ends the loop as AGENT_FAILED naming
 * llm.context_window.  A context-length error
 * from the provider triggers a compression and one retry of the call.
 *
 * Reflection (seed 003 §8) asks the fast model for learnings on success
 * (skipped when the phase cost less than reflect_min_cost_usd), on a tool
 * error, on escalation and on a breaker trip, while the reflection spend stays
 * under reflect_budget_usd and the cost limit is not reached (a spent
 * budget makes no more calls: agent.reflection_skipped).  Learnings are parsed from a forced tool call,
 * checked, and handed to env->remember; a reflection that does not parse
 * stores nothing.  The caller makes the fast client with the phase name
 * "<phase>-fast" (llm_options.phase), so a cassette keeps the answers for
 * compression and reflection apart from the phase's own.
 *
 * Ownership: jv arguments follow json.h (consumed unless "borrows").
 */
#ifndef FORGE_AGENT_H
#define FORGE_AGENT_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>

struct llm_client;
struct store;
struct stream_out;

/* Calls the error-rate window must hold before its rate is judged: with
 * the default 25%, one recoverable error among a session's first calls (an
 * ambiguous edit, a failing test run) is not a runaway; three in ten is. */
#define AGENT_ERROR_RATE_MIN_CALLS 10

/* What a tool execution returned, filled by the executor. */
struct agent_tool_outcome {
	bool ok;
	bool retryable;         /* transient: worth calling again unchanged */
	char *text;             /* for the model (malloc'd; the agent frees it) */
	char *gate;             /* non-NULL: needs human approval, why (malloc'd) */
	jv event;               /* extra fields for tool.executed/tool.failed, or jv_null() */
	/* What the tool spent on models (a delegated sub-agent): added to the
	 * loop's cost and tokens, so its breakers and the phase count it. */
	double cost_usd;
	long tokens;
	bool cost_unknown;      /* some of that spend had no price */
	/* In, set by the agent before the call: a monotonic_ms() time by
	 * which the tool must end (what is left of the phase's and the run's
	 * time limits; 0: none).  An executor that runs commands shortens
	 * their timeout to it (tools_agent_exec). */
	long long deadline_ms;
	/* In, too: the most bytes the text should have, a share of the
	 * model's context window (0: no limit but the tools' own).  An
	 * executor may cut to it where it can say how to read on (read_file:
	 * tools_agent_exec); the agent cuts a longer text to its head and tail
	 * in any case. */
	size_t max_text_bytes;
};

/*
 * Execute tool `name` with `input` (borrowed).  Returns 0 with *out filled
 * (ok or not: a failing command is still a result for the model), or -1 for
 * a failure of the executor itself, which ends the loop as AGENT_FAILED.
 */
typedef int (*agent_exec_fn)(struct agent_tool_outcome *out, const char *name, jv input,
			     void *payload);

/* The tools agent_run() adds to cfg->tools: finish and ask_human. */
#define AGENT_OWN_TOOLS 2

struct agent_config {
	const char *phase;              /* "plan", "implement", … */
	const char *system_prompt;
	jv tools;                       /* definitions [{name, description, input_schema}]
	                                   without finish/ask_human; consumed by agent_run */
	jv result_schema;               /* the finish tool's input schema (consumed) */
	const char *result_schema_name; /* embedded schema file that validates the result */
	const char *result_schema_def;  /* its $defs entry, e.g. "plan"; NULL = the whole schema */
	/*
	 * What the schema cannot say about a result that matches it (a plan's
	 * task ids unique, its dependencies known and acyclic); may be NULL.
	 * Borrows result; 0, or -1 after forge_error() with what is wrong,
	 * which goes back to the model as a schema error does.
	 */
	int (*result_check)(jv result);
	int max_iterations;             /* 0 = 10 */
	double max_cost_usd;            /* phase limit; < 0 = none, 0 = nothing may be spent */
	double budget_remaining_usd;    /* the run's remaining budget; < 0 = none */
	const char *budget_source;      /* what set budget_remaining_usd, named in the
	                                   cost breaker's message; NULL = "the run's budget" */
	long long max_time_ms;          /* 0 = none */
	long long run_time_left_ms;     /* what the run's own time limit (safety.time_s.total)
	                                   leaves it as the loop starts; 0 = none */
	/*
	 * What earlier runs of the loop in the same phase spent (a phase that
	 * runs it again: fix rounds, TDD): the limits above are the phase's,
	 * so the breakers count it with this run's spend.  0 for a first run.
	 */
	double spent_usd;
	int spent_iterations;
	long long spent_ms;
	int stagnation_threshold;       /* 0 = 3 */
	double error_rate_warning;      /* 0 = 0.10 */
	double error_rate_critical;     /* 0 = 0.25 */
	long long error_window_ms;      /* 0 = 300000 */
	size_t context_tokens;          /* working-memory budget; 0 = 100000 */
	int max_tokens;                 /* per answer; 0 = 8192 */
	double temperature;             /* of every call (llm_temperature); < 0 = none sent */
	bool reflect;                   /* run reflections */
	double reflect_min_cost_usd;    /* 0 = 0.10 */
	double reflect_budget_usd;      /* 0 = 0.50 */
};

struct agent_env {
	struct llm_client *llm;         /* the phase's model */
	struct llm_client *fast;        /* compression and reflection; NULL = llm */
	struct stream_out *out;         /* events */
	agent_exec_fn exec;
	void *exec_payload;
	/* Store one learning {type, content, context, confidence, tags}
	 * (consumed); may be NULL.  Returns 0 or -1. */
	int (*remember)(void *payload, jv learning);
	void *remember_payload;
	/* Progress (iteration, last tool, cost so far) for a terminal; may be NULL. */
	void (*progress)(void *payload, int iteration, const char *tool, double cost_usd);
	/* A model call starts (start true) or has ended; may be NULL. */
	void (*on_call)(void *payload, bool start);
	/* The model's text as it streams (borrowed), len 0 when a text block
	 * is whole (llm_request.on_text); may be NULL.  When set, the agent's
	 * calls stream (llm_request.stream). */
	void (*on_text)(void *payload, const char *text, size_t len);
	/* A tool call has run: its input and the head of its result (both
	 * borrowed); may be NULL. */
	void (*on_tool)(void *payload, const char *tool, jv input, bool ok, const char *result);
	/* A tool call cut at the answer's output limit, max_tokens, before
	 * its arguments were whole: nothing ran (a tool.cut event); may be
	 * NULL. */
	void (*on_cut)(void *payload, const char *tool, int max_tokens);
	void *progress_payload;     /* for progress, on_call, on_text, on_tool and on_cut */
	/* Tests: replace sleeping between tool retries and the clock. */
	void (*sleep_fn)(void *payload, double seconds);
	long long (*clock_ms)(void *payload);
	void *test_payload;
};

enum agent_outcome { AGENT_DONE, AGENT_ESCALATED, AGENT_TRIPPED, AGENT_FAILED };

struct agent_result {
	enum agent_outcome outcome;
	jv result;                      /* the finish input when DONE, else jv_null() */
	char *reason;                   /* why it escalated/tripped/failed (malloc'd) */
	char *question;                 /* what it asked a human (ask_human: the question, then
					 * "(options: a | b)" and "(context: …)" when given;
					 * malloc'd), or NULL */
	const char *breaker;            /* "iterations", "cost", "time", "error_rate" (static) */
	int iterations;
	double cost_usd;                /* phase calls, compression and reflection */
	bool cost_known;                /* false when some call had no price */
	long tokens;                    /* input + output tokens */
	int tool_calls, tool_errors;
	long long duration_ms;
	jv messages;                    /* the final working memory (for bounces and reflection) */
};

void agent_result_init(struct agent_result *r);
void agent_result_release(struct agent_result *r);

/* "done", "escalated", "tripped", "failed". */
const char *agent_outcome_name(enum agent_outcome o);

/*
 * Run the loop from the first user message `prompt` (copied).  Consumes
 * cfg->tools and cfg->result_schema.  *out is initialised here and owned by
 * the caller.  Returns 0 whenever the loop ended in one of the four ways
 * (read out->outcome); -1 only for misuse (no client, no executor).
 */
int agent_run(struct agent_result *out, struct agent_config *cfg, struct agent_env *env,
	      const char *prompt);

/*
 * The system prompt for phase: the built-in schemas/prompts/PHASE.md, with
 * the repository's <repo>/.forge/prompts/PHASE.md (its overlay), when it
 * exists, appended under the heading
 *   "## Project prompt (.forge/prompts/PHASE.md)"
 * An overlay that asks for it replaces the built-in prompt instead: its
 * first line is "replace: true", or it begins with a front matter block
 * ("---" line, "key: value" lines, "---" line) holding "replace: true".
 * The directive (the line, or the whole front matter) is not part of the
 * text; "replace: false" is the default.  A phase without a built-in
 * prompt takes the overlay as it is.  repo may be NULL.  *out malloc'd;
 * *how (may be NULL) is AGENT_PROMPT_BUILTIN, _APPENDED or _REPLACED.
 * -1 with a message when the overlay cannot be read, its replace value is
 * not true or false, or there is no prompt at all.
 */
enum agent_prompt_how { AGENT_PROMPT_BUILTIN, AGENT_PROMPT_APPENDED, AGENT_PROMPT_REPLACED };

int agent_prompt_load(char **out, const char *repo, const char *phase);
int agent_prompt_load_how(char **out, enum agent_prompt_how *how, const char *repo, const char *phase);

/*
 * Split an overlay's text into its directive and body: *body points into
 * text (borrowed) past the directive; *replace is its value.  -1 with a
 * message when a replace value is neither true nor false.  Pure.
 */
int agent_prompt_overlay_parse(const char **body, bool *replace, const char *text);

/* A short stable hash of the last `n` messages' roles, texts and tool
 * calls (ids excluded), for stagnation detection.  Borrows messages. */
unsigned long long agent_messages_hash(jv messages, int n);

#endif
