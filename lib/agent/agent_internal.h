/*
 * agent_internal.h - shared by agent.c (the loop), agent_budget.c (time and
 * money spent and left), agent_memory.c (working memory: size, hashing,
 * compression) and agent_reflect.c (reflection).
 * Not part of the library's public interface.
 */
#ifndef FORGE_AGENT_INTERNAL_H
#define FORGE_AGENT_INTERNAL_H

#include "agent/agent.h"
#include "llm/llm.h"

#include <jv.h>
#include <stdbool.h>

/* One run of the loop. */
struct agent {
	struct agent_config *cfg;
	struct agent_env *env;
	struct agent_result *res;
	jv messages;                /* working memory (owned) */
	jv tools;                   /* everything sent to the model (owned) */
	/* Estimates kept across turns: the fixed part of a request (0 until
	 * first asked: tools do not change during a run) and each message's
	 * (messages[0..n_estimated): messages are only appended, so a prefix
	 * once estimated stays valid until compression replaces them all).
	 * Before, each turn serialised the whole conversation four times to
	 * count it: a session's estimating grew with the square of its length. */
	size_t fixed_tokens;
	size_t *message_tokens;
	int n_estimated, cap_estimated;
	long long start_ms;
	double reflect_spent;       /* USD spent on reflection */
	int fast_calls;             /* calls made on the fast client */
	int answer_tokens;          /* the max_tokens the last request asked for */
};

/* The time (ms) left before the phase's or the run's time limit, the
 * smaller (0: it is out); -1 when neither has one. */
long long agent_time_left(struct agent *a);
/* That time as a monotonic_ms() deadline for a model call or a command,
 * which end with it (0: no limit). */
long long agent_deadline(struct agent *a);
long long agent_now(struct agent *a);

/* The cost limit (the lower of the phase's and the run's remaining
 * budget), -1 when there is none. */
double agent_cost_limit(const struct agent_config *cfg);
/* The same, and in *source which limit it is, for the breaker's message:
 * the run's (cfg->budget_source or a default text), or NULL when the
 * limit is the phase's own (max_cost_usd) or there is none. */
double agent_cost_limit_named(const char **source, const struct agent_config *cfg);

/* What the phase has spent: earlier runs of the loop (cfg->spent_usd) and
 * this one. */
double agent_phase_cost(const struct agent *a);

/* Add a response's cost and tokens to the result. */
void agent_account(struct agent *a, const struct llm_response *resp);

/* An llm.called event for resp, a call on client c (the agent's or the
 * fast one: then "fast": true), with its cost: every paid call has one, so
 * a phase's calls add up to its cost. */
void agent_emit_llm_called(struct agent *a, const struct llm_client *c, const struct llm_response *resp);

/* One call on the fast client with the given system prompt and user text;
 * *out owned by the caller.  Forced tool `tool` (a definition, consumed)
 * when not jv_null(). */
int agent_fast_call(struct llm_response *out, struct agent *a, const char *system,
		    const char *user, jv tool);

/* Compress working memory when it passes 90 % of the budget (or always when
 * `force`): the middle is summarised, then, when what is kept is still over
 * three quarters of the budget, its largest tool results are cut to their
 * head and tail with a note saying so (even the last ones: a single result
 * can be larger than the window).  Returns 1 when it compressed, 0 when not
 * needed or not possible. */
int agent_compress(struct agent *a, bool force);
/* What a request holds besides its messages (the system prompt, the tool
 * definitions), estimated in tokens. */
size_t agent_fixed_tokens(struct agent *a);
/* The messages, estimated in tokens: each message's estimate (as
 * tokens_estimate_jv) plus one for each separator between them.  Messages
 * estimated before are not estimated again. */
size_t agent_messages_tokens(struct agent *a);
/* The tokens the messages may take: the window (cfg->context_tokens, 0 =
 * 100000) less the fixed part and room for an answer. */
size_t agent_message_budget(struct agent *a);
/* The most tokens one tool result may take: a third of the model's window,
 * at most half the message budget; 0 when the window is not known
 * (cfg->context_tokens 0: no cap but the tools' own). */
size_t agent_result_cap(struct agent *a);
/* text cut to its head and tail with a note between them naming the
 * window (`window` tokens) and how to ask for less, so that it estimates
 * at most max_tokens (just the note when even that is more); a copy when
 * it fits already.  malloc'd. */
char *agent_shrink_text(const char *text, size_t max_tokens, size_t window);
/* Forget the kept estimates of the messages (after they were replaced). */
void agent_messages_replaced(struct agent *a);
/* The tokens an answer may take: llm.max_tokens (cfg->max_tokens), but no
 * more than the model's window (cfg->context_tokens) leaves after the
 * request, and at least AGENT_ANSWER_MIN. */
#define AGENT_ANSWER_MIN 1024
int agent_answer_room(struct agent *a);

/* Reflect on the outcome ("success", "error", "escalation", "breaker");
 * `detail` may be NULL.  Never fails the loop. */
void agent_reflect(struct agent *a, const char *outcome, const char *detail);

/* A built-in prompt from schemas/prompts/NAME.md (borrowed, static). */
const char *agent_builtin_prompt(const char *name);

/* A copy of v for events: long strings cut, secrets redacted.  Borrows v. */
jv agent_sanitize(jv v);

#endif
