/*
 * agent_budget.c - the session's time and money: what it has spent and
 * what it has left before the phase's or the run's limits.  Below the
 * loop (agent.c) and its working memory (agent_memory.c), which both ask.
 */
#include "agent/agent_internal.h"
#include "core/forge.h"
#include "core/ids.h"

#include <limits.h>

long long agent_now(struct agent *a)
{
	if (a->env->clock_ms)
		return a->env->clock_ms(a->env->test_payload);
	return monotonic_ms();
}

/* See agent_internal.h. */
long long agent_time_left(struct agent *a)
{
	struct agent_config *cfg = a->cfg;
	long long ran = agent_now(a) - a->start_ms, left = LLONG_MAX;

	if (cfg->max_time_ms <= 0 && cfg->run_time_left_ms <= 0)
		return -1;
	if (cfg->max_time_ms > 0)
		left = cfg->max_time_ms - cfg->spent_ms - ran;
	if (cfg->run_time_left_ms > 0 && cfg->run_time_left_ms - ran < left)
		left = cfg->run_time_left_ms - ran;
	return left > 0 ? left : 0;
}

/* See agent_internal.h. */
long long agent_deadline(struct agent *a)
{
	long long left = agent_time_left(a);

	return left < 0 ? 0 : monotonic_ms() + left;
}

double agent_cost_limit(const struct agent_config *cfg)
{
	return agent_cost_limit_named(NULL, cfg);
}

double agent_cost_limit_named(const char **source, const struct agent_config *cfg)
{
	double limit = cfg->max_cost_usd >= 0 ? cfg->max_cost_usd : -1;
	const char *what = NULL;

	if (cfg->budget_remaining_usd >= 0 && (limit < 0 || cfg->budget_remaining_usd < limit)) {
		limit = cfg->budget_remaining_usd;
		what = cfg->budget_source ? cfg->budget_source : "what the run's budget left the phase";
	}
	if (source)
		*source = what;
	return limit;
}

double agent_phase_cost(const struct agent *a)
{
	return a->cfg->spent_usd + a->res->cost_usd;
}

void agent_account(struct agent *a, const struct llm_response *resp)
{
	a->res->tokens += llm_usage_tokens(&resp->usage);
	if (resp->cost_known)
		a->res->cost_usd += resp->cost_usd;
	else
		a->res->cost_known = false;
}
