/*
 * deploy.h - the deploy phase's machinery (DESIGN.md §3 forge-deploy, seed
 * 000 §7.5, §8.2-8.3): strategies, canary steps and health checks, and the
 * human gate.  filters/forge-deploy.c wires them to the stream.
 *
 * Split:
 *   deploy.c           names, risk levels, canary steps, the child
 *                      environment, running one command
 *   deploy_strategy.c  branch, merge, push, command (canary + rollback)
 *   deploy_health.c    the HTTP health check of one canary step
 *   deploy_gate.c      which human gate a deploy must pass, and asking on
 *                      the terminal
 *
 * Strategies.  Each fills *out with a new `deployment` object (state schema
 * $defs/deployment: status, strategy, environment, steps, metrics, url,
 * ref, commit, reason) and returns the phase status: "ok" (healthy),
 * "rejected" (rolled back, degraded, or refused: a merge whose base moved
 * and no longer fast-forwards, a build that failed) or "failed" (git or
 * the configuration failed: the message is in ctx->reason).  ctx->reason
 * always says what happened.  They never print; events go through
 * ctx->emit.
 *
 *   branch   leave the run's branch where it is; ref = the branch, commit =
 *            its tip.
 *   merge    fast-forward the base branch (the branch the run started
 *            from: task.base_branch, else task.base_ref; "HEAD" with
 *            neither = the branch the main checkout is on) to the run's
 *            branch with forge_git_merge_ff(), which also updates the
 *            files of the checkout that branch is checked out in.  When
 *            the base moved since the run's
 *            base commit a deploy.base_moved event says so; the merge is
 *            still done when it is a fast-forward and refused otherwise.
 *            ref = refs/heads/BASE, commit = the new tip.
 *   push     push refs/heads/BRANCH to the remote (deploy.remote or
 *            --remote: a configured remote, a URL or a path); url = the
 *            remote, ref = refs/heads/BRANCH.
 *   command  run the build command (tools.build_command, else detected;
 *            none: no build), then tools.deploy_command once per canary
 *            step with FORGE_DEPLOY_PERCENT=<step> in its environment,
 *            each followed by a health check of tools.health_url; the
 *            first unhealthy step (failed command or failed check) runs
 *            tools.rollback_command: status rolled_back when it exits 0,
 *            degraded when it fails or none is configured.  Without a
 *            health_url a step is judged by the deploy command's exit
 *            status alone (a deploy.unchecked event says so).  metrics:
 *            steps_completed, percent (the last healthy step), samples,
 *            errors and error_rate over all checks, p50_ms of the last
 *            check, p95_ms of the worst, rolled_back, duration_ms.
 *
 * Ownership: jv arguments follow json.h (consumed unless "borrows");
 * strings in the structs below are borrowed from the caller and must
 * outlive the call.
 */
#ifndef FORGE_DEPLOY_H
#define FORGE_DEPLOY_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>

struct config;

/* ---- names, risk, canary steps (deploy.c) ---------------------------- */

enum deploy_strategy { DEPLOY_BRANCH, DEPLOY_MERGE, DEPLOY_PUSH, DEPLOY_COMMAND };

/* "branch", "merge", "push", "command"; -1 with a message for anything else. */
int deploy_strategy_parse(enum deploy_strategy *out, const char *name);
const char *deploy_strategy_name(enum deploy_strategy s);

/* 0 low, 1 medium, 2 high, 3 critical; -1 for NULL or anything else. */
int deploy_risk_rank(const char *level);

/*
 * The risk the canary follows: the highest of plan.risk.level and
 * review.risk.level in the state (borrows state); "medium" when neither is
 * there (an unknown risk is not treated as low).  Returns a static string.
 */
const char *deploy_risk_of(jv state);

/*
 * The canary steps for `risk` from deploy.canary.<risk> (cfg may be NULL:
 * the built-in ladders low [100], medium [5,25,100], high and critical
 * [5,10,25,50,100]).  *out is an array of numbers in (0, 100].  -1 with a
 * message for an unknown risk.
 */
int deploy_canary_steps(jv *out, const struct config *cfg, const char *risk);

/* ---- running commands (deploy.c) ------------------------------------- */

/*
 * The environment of deploy, build and rollback commands: the caller's
 * (environ) without the model keys (llm_scrub_env), with the NAME=VALUE
 * strings of `extra` set as deploy_env_set() does (NULL-terminated, may be
 * NULL; copied).  The caller's other variables stay, FORGE_DEPLOY_* ones
 * (FORGE_DEPLOY_DIR, …) included.  Free with deploy_env_free().
 */
char **deploy_env_new(const char *const *extra);
/*
 * Set the NAME=VALUE strings of vars (NULL-terminated, may be NULL; copied)
 * in env: an entry of the same name is replaced, a new name is appended,
 * every other entry stays as it is.  env (NULL or a malloc'd NULL-terminated
 * array of malloc'd strings, e.g. from deploy_env_new() or
 * sandbox_build_env()) is consumed; returns the new array, to free the same
 * way.
 */
char **deploy_env_set(char **env, const char *const *vars);
void deploy_env_free(char **env);

struct deploy_cmd_result {
	int exit_code;          /* 128 + signal when killed; -1 when it could not start */
	bool timed_out;
	long duration_ms;
	char *output;           /* stdout and stderr, capped (malloc'd) */
};

/*
 * Run `command` with /bin/sh -c in cwd with env (NULL: deploy_env_new(NULL)),
 * a time limit (0: none) and an output cap (0: all).  The command comes
 * from the branch's configuration and runs the branch's code, so it runs
 * in the sandbox (sandbox_job.h) under policy (NULL: the built-in one):
 * the environment is scrubbed to the sandbox's names plus every
 * FORGE_DEPLOY_* variable of env, writes are confined to cwd, a temp dir
 * and sandbox.writable, and the network is kept only when `network` (the
 * deploy and rollback commands: they push and upload; a build does not).
 * Always fills *out (release with deploy_cmd_result_release); returns 0
 * when the command exited 0, else -1 with a message naming the command
 * and what happened.
 */
struct sandbox_policy;
int deploy_run_command(struct deploy_cmd_result *out, const char *command, const char *cwd,
		       char *const *env, long timeout_ms, size_t output_cap,
		       const struct sandbox_policy *policy, bool network);
void deploy_cmd_result_release(struct deploy_cmd_result *r);

/* ---- health checks (deploy_health.c) --------------------------------- */

struct deploy_health_opts {
	const char *url;        /* GET this; 200-399 is a success */
	int samples;            /* requests per check (>= 1) */
	long timeout_ms;        /* per request */
	long interval_ms;       /* pause between requests */
};

struct deploy_health {
	int samples;
	int errors;             /* no response, timeout, or status outside 200-399 */
	double error_rate;      /* errors / samples */
	double p50_ms, p95_ms;  /* latency percentiles (nearest rank) */
	long last_status;       /* HTTP status of the last request (0: none) */
	char last_error[256];   /* what the last failed request said, or "" */
};

/* Sample opts->url opts->samples times.  Only fails (-1 with a message)
 * when the HTTP client cannot be set up; unreachable is a result. */
int deploy_health_check(struct deploy_health *out, const struct deploy_health_opts *opts);

/* Healthy: error_rate <= error_rate_max and p95_ms <= latency_ms_max. */
bool deploy_health_ok(const struct deploy_health *h, double error_rate_max, double latency_ms_max);

/* {"samples","errors","error_rate","p50_ms","p95_ms"} (+ "status", "error"
 * of the last failure when there were errors). */
jv deploy_health_json(const struct deploy_health *h);

/* The nearest-rank percentile p (0-100) of sorted[0..n); 0 when n is 0. */
double deploy_percentile(const double *sorted, size_t n, double p);

/* ---- strategies (deploy_strategy.c) ---------------------------------- */

typedef void (*deploy_emit_fn)(void *payload, const char *type, jv data /* consumed */);

struct deploy_ctx {
	/* what and where */
	const char *repo;           /* the main repository's root */
	const char *workdir;        /* where commands run (the run's worktree, else repo) */
	const char *branch;         /* the run's branch ("forge/TRACE") */
	const char *base_ref;       /* the base branch ("main"; "HEAD" or NULL: the main checkout's) */
	const char *base_commit;    /* the run's base commit, or NULL (then the merge base) */
	const char *commit;         /* the commit reviewed and tested (changes.commit), or NULL:
	                               the branch must be at it, else nothing is deployed */
	const char *trace_id;
	const char *environment;    /* "staging", "production", ... */
	const char *remote;         /* push: remote name, URL or path */
	/* command */
	const char *build_cmd;      /* NULL: no build */
	const char *deploy_cmd;
	const char *rollback_cmd;   /* NULL: none */
	jv steps;                   /* canary percentages (borrowed) */
	struct deploy_health_opts health;   /* url NULL: no health check */
	double error_rate_max;
	double latency_ms_max;
	long command_timeout_ms;
	size_t output_cap;
	const struct sandbox_policy *sandbox;  /* commands' sandbox (NULL: built-in);
	                                          deploy and rollback keep the network */
	/* events */
	deploy_emit_fn emit;        /* may be NULL */
	void *emit_payload;
	/* out */
	char reason[1024];
};

/* Zero in, with jv_null() steps and the default thresholds. */
void deploy_ctx_init(struct deploy_ctx *ctx);

/* The name of the branch HEAD of the repository at root points at
 * ("main"), also when unborn (then *unborn, when not NULL, is set: the
 * branch has no commit yet); -1 when HEAD is detached or unreadable. */
int deploy_head_branch(char **out, bool *unborn, const char *root);

const char *deploy_run(jv *out, enum deploy_strategy s, struct deploy_ctx *ctx);

/* ---- the human gate (deploy_gate.c) ---------------------------------- */

/*
 * Seed 000 §8.2-8.3: the production_deploy gate fires when the deploy goes
 * to production, and no automation level passes it ("human gates ALWAYS
 * remain for production deploys"); only an explicit human approval does.
 * A critical-risk deploy gets the critical_deploy gate in any environment
 * (level 4 keeps human gates for medium+ risk; critical is the top of it).
 * The prompt and timeout come from the config's gates[] entry with the same
 * id when there is one.
 */
struct deploy_gate {
	const char *id;             /* "production_deploy", "critical_deploy", or NULL: no gate */
	char prompt[512];
	double timeout_s;           /* how long a terminal prompt waits */
	char why[256];
};

/* Which gate this deploy must pass (out->id NULL: none).  cfg may be NULL.
 * Asking a human is the application's part: deploy_gate_ask() in app/prompt.h. */
void deploy_gate_for(struct deploy_gate *out, const struct config *cfg, bool production,
		     const char *risk);

#endif
