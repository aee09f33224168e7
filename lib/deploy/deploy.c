/* deploy.c - strategy names, risk, canary steps and command running; see deploy.h. */
#include "deploy/deploy.h"
#include "data/config.h"
#include "core/forge.h"
#include "core/json.h"
#include "llm/llm.h"
#include "os/proc.h"
#include "os/sandbox_job.h"

#include <stdlib.h>
#include <string.h>

extern char **environ;

static const char *const strategy_names[] = { "branch", "merge", "push", "command" };
static const char *const risk_names[] = { "low", "medium", "high", "critical" };

int deploy_strategy_parse(enum deploy_strategy *out, const char *name)
{
	for (size_t i = 0; name && i < sizeof strategy_names / sizeof *strategy_names; i++) {
		if (strcmp(name, strategy_names[i]) == 0) {
			*out = (enum deploy_strategy)i;
			return 0;
		}
	}
	return forge_error("unknown deploy strategy '%s': use branch, merge, push or command",
			   name ? name : "");
}

const char *deploy_strategy_name(enum deploy_strategy s)
{
	return (unsigned)s < sizeof strategy_names / sizeof *strategy_names ? strategy_names[s] : "branch";
}

int deploy_risk_rank(const char *level)
{
	for (int i = 0; level && i < 4; i++)
		if (strcmp(level, risk_names[i]) == 0)
			return i;
	return -1;
}

const char *deploy_risk_of(jv state)
{
	static const char *const paths[] = { "plan.risk.level", "review.risk.level" };
	int best = -1;

	for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
		jv v = json_get_path(state, paths[i]);
		int r = jv_get_kind(v) == JV_KIND_STRING ? deploy_risk_rank(jv_string_value(v)) : -1;
		if (r > best)
			best = r;
		jv_free(v);
	}
	return risk_names[best < 0 ? 1 : best];
}

int deploy_canary_steps(jv *out, const struct config *cfg, const char *risk)
{
	static const double ladders[4][5] = {
		{ 100 }, { 5, 25, 100 }, { 5, 10, 25, 50, 100 }, { 5, 10, 25, 50, 100 },
	};
	static const int lengths[4] = { 1, 3, 5, 5 };
	int r = deploy_risk_rank(risk);
	char key[64];

	*out = jv_null();
	if (r < 0)
		return forge_error("unknown risk level '%s': use low, medium, high or critical",
				   risk ? risk : "");
	snprintf(key, sizeof key, "deploy.canary.%s", risk);
	jv steps = cfg ? config_get(cfg, key) : jv_null();
	if (jv_get_kind(steps) == JV_KIND_ARRAY && jv_array_length(jv_copy(steps)) > 0) {
		bool good = true;
		jv_array_foreach(steps, i, p) {
			if (jv_get_kind(p) != JV_KIND_NUMBER || jv_number_value(p) <= 0 ||
			    jv_number_value(p) > 100)
				good = false;
			jv_free(p);
		}
		if (good) {
			*out = steps;
			return 0;
		}
	}
	jv_free(steps);
	steps = jv_array();
	for (int i = 0; i < lengths[r]; i++)
		steps = jv_array_append(steps, jv_number(ladders[r][i]));
	*out = steps;
	return 0;
}

/* ---- commands ------------------------------------------------------------ */

/* The length of the name of a NAME=VALUE string (all of it when there is no '='). */
static size_t env_name_len(const char *entry)
{
	const char *eq = strchr(entry, '=');

	return eq ? (size_t)(eq - entry) : strlen(entry);
}

char **deploy_env_set(char **env, const char *const *vars)
{
	size_t n = 0, k = 0;

	while (env && env[n])
		n++;
	while (vars && vars[k])
		k++;
	env = xrealloc(env, (n + k + 1) * sizeof *env);
	env[n] = NULL;
	for (size_t i = 0; vars && vars[i]; i++) {
		size_t len = env_name_len(vars[i]);
		size_t j = 0;

		while (env[j] && !(env_name_len(env[j]) == len && strncmp(env[j], vars[i], len) == 0))
			j++;
		if (!env[j])
			env[j + 1] = NULL;	/* a new name: appended */
		free(env[j]);
		env[j] = xstrdup(vars[i]);
	}
	return env;
}

char **deploy_env_new(const char *const *extra)
{
	size_t n = 0, w = 0;

	while (environ && environ[n])
		n++;
	/* Scrub a borrowed view of environ, then copy what stays. */
	char **view = xcalloc(n + 1, sizeof *view);
	for (size_t i = 0; i < n; i++)
		view[i] = environ[i];
	llm_scrub_env(view);
	char **env = xcalloc(n + 1, sizeof *env);
	for (size_t i = 0; view[i]; i++)
		env[w++] = xstrdup(view[i]);
	free(view);
	env[w] = NULL;
	return deploy_env_set(env, extra);
}

void deploy_env_free(char **env)
{
	if (!env)
		return;
	for (size_t i = 0; env[i]; i++)
		free(env[i]);
	free(env);
}

int deploy_run_command(struct deploy_cmd_result *out, const char *command, const char *cwd,
		       char *const *env, long timeout_ms, size_t output_cap,
		       const struct sandbox_policy *policy, bool network)
{
	struct proc_result r;
	char **own = NULL;
	const char **pass = NULL;
	size_t n = 0, k = 0;
	int rc = -1;

	memset(out, 0, sizeof *out);
	out->exit_code = -1;
	if (!env)
		env = own = deploy_env_new(NULL);
	/* The sandbox keeps only the usual names of env: pass FORGE_DEPLOY_*. */
	while (env[n])
		n++;
	pass = xcalloc(n + 1, sizeof *pass);
	for (size_t i = 0; env[i]; i++) {
		const char *eq = strchr(env[i], '=');
		if (eq && strncmp(env[i], "FORGE_DEPLOY_", 13) == 0)
			pass[k++] = xstrndup(env[i], (size_t)(eq - env[i]));
	}
	struct sandbox_job job = {
		.policy = policy,
		.command = command,
		.root = cwd,
		.base_env = env,
		.pass_env = pass,
		.timeout_ms = timeout_ms > 0 ? timeout_ms : 24L * 3600 * 1000,
		.output_cap = output_cap ? output_cap : 64u << 20,
		.allow_network = network,
	};
	if (sandbox_job_run(&r, NULL, &job) < 0) {
		out->output = xstrdup(forge_last_error());
		forge_error_prefix("cannot run '%s'", command);
		goto out;
	}
	out->exit_code = r.exit_code;
	out->timed_out = r.timed_out;
	out->duration_ms = r.duration_ms;
	out->output = xstrndup(r.out.buf, r.out.len);
	if (r.timed_out)
		forge_error("'%s' timed out after %ld ms", command, timeout_ms);
	else if (r.term_signal)
		forge_error("'%s' was killed by signal %d", command, r.term_signal);
	else if (r.exit_code != 0)
		forge_error("'%s' exited with status %d", command, r.exit_code);
	else
		rc = 0;
out:
	proc_result_release(&r);
	deploy_env_free(own);
	for (size_t i = 0; i < k; i++)
		free((char *)pass[i]);
	free(pass);
	return rc;
}

void deploy_cmd_result_release(struct deploy_cmd_result *r)
{
	if (!r)
		return;
	free(r->output);
	r->output = NULL;
}
