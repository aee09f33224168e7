/* deploy_strategy.c - branch, merge, push and command deploys; see deploy.h. */
#include "deploy/deploy.h"
#include "core/forge.h"
#include "git/git.h"
#include "core/ids.h"
#include "core/json.h"

#include <git2.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void deploy_ctx_init(struct deploy_ctx *ctx)
{
	memset(ctx, 0, sizeof *ctx);
	ctx->steps = jv_null();
	ctx->error_rate_max = 0.05;
	ctx->latency_ms_max = 1000;
	ctx->health.samples = 5;
	ctx->health.timeout_ms = 5000;
	ctx->command_timeout_ms = 900000;
	ctx->output_cap = 65536;
}

static void emit(struct deploy_ctx *ctx, const char *type, jv data)
{
	if (ctx->emit)
		ctx->emit(ctx->emit_payload, type, data);
	else
		jv_free(data);
}

static void reason(struct deploy_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reason(struct deploy_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctx->reason, sizeof ctx->reason, fmt, ap);
	va_end(ap);
}

/* The deployment object every strategy starts from. */
static jv deployment_new(enum deploy_strategy s, const struct deploy_ctx *ctx)
{
	jv d = jv_object();

	d = json_set(d, "status", jv_string("skipped"));
	d = json_set(d, "strategy", jv_string(deploy_strategy_name(s)));
	d = json_set(d, "environment", json_str_or_null(ctx->environment));
	d = json_set(d, "steps", jv_array());
	d = json_set(d, "metrics", jv_object());
	d = json_set(d, "url", jv_null());
	return d;
}

int deploy_head_branch(char **out, bool *unborn, const char *root)
{
	git_repository *repo = NULL;
	git_reference *head = NULL;
	git_oid id;
	int rc = -1, e;

	*out = NULL;
	if (unborn)
		*unborn = false;
	forge_git_init();
	if ((e = forge_git_repo_open(&repo, root, 0)) != 0) {
		if (e == -1)    /* (else said: another user's, a format libgit2 refuses) */
			forge_error("'%s' is not in a git repository", root);
		goto out;
	}
	if (git_reference_lookup(&head, repo, "HEAD") < 0 ||
	    git_reference_type(head) != GIT_REFERENCE_SYMBOLIC) {
		forge_error("HEAD of '%s' is not on a branch: name the base branch (task.base_ref)", root);
		goto out;
	}
	const char *target = git_reference_symbolic_target(head);
	if (unborn)
		*unborn = git_reference_name_to_id(&id, repo, target) == GIT_ENOTFOUND;
	if (strncmp(target, "refs/heads/", 11) == 0)
		target += 11;
	*out = xstrdup(target);
	rc = 0;
out:
	git_reference_free(head);
	git_repository_free(repo);
	return rc;
}

/* ---- branch ---------------------------------------------------------- */

static const char *deploy_branch(jv *d, struct forge_git *g, struct deploy_ctx *ctx)
{
	char *tip = NULL;

	if (forge_git_resolve(&tip, g, ctx->branch) < 0) {
		reason(ctx, "the run's branch '%s' is not there: %s", ctx->branch, forge_last_error());
		return "failed";
	}
	*d = json_set(*d, "status", jv_string("healthy"));
	*d = json_set(*d, "ref", jv_string(ctx->branch));
	*d = json_set(*d, "commit", jv_string(tip));
	reason(ctx, "branch '%s' left at %.12s", ctx->branch, tip);
	free(tip);
	return "ok";
}

/* ---- merge ----------------------------------------------------------- */

static const char *deploy_merge(jv *d, struct forge_git *g, struct deploy_ctx *ctx)
{
	char *base = NULL, *tip = NULL, *base_tip = NULL, *since = NULL, *merged = NULL;
	const char *status = "failed";
	bool moved = false, ff = false, locked = false;

	/* No other merge into the repository (forge merge, another merge
	 * deploy) moves the base or writes its checkout between the look
	 * below and the fast-forward (before: the one whose branch move lost
	 * failed, its files left staged on the other's commit). */
	if (forge_git_merge_lock(g) < 0) {
		reason(ctx, "%s", forge_last_error());
		goto out;
	}
	locked = true;
	if (ctx->base_ref && *ctx->base_ref && strcmp(ctx->base_ref, "HEAD") != 0)
		base = xstrdup(strncmp(ctx->base_ref, "refs/heads/", 11) == 0 ? ctx->base_ref + 11
									       : ctx->base_ref);
	else if (deploy_head_branch(&base, NULL, ctx->repo) < 0) {
		reason(ctx, "%s", forge_last_error());
		goto out;
	}
	if (forge_git_resolve(&tip, g, ctx->branch) < 0) {
		reason(ctx, "the run's branch '%s' is not there: %s", ctx->branch, forge_last_error());
		goto out;
	}
	*d = json_set(*d, "ref", jv_string_fmt("refs/heads/%s", base));
	if (forge_git_resolve(&base_tip, g, base) == 0) {
		/* Where the run started: its recorded base, else the merge base. */
		if (ctx->base_commit && *ctx->base_commit)
			since = xstrdup(ctx->base_commit);
		else if (forge_git_merge_base(&since, g, base, tip) < 0)
			since = NULL;
		if (since && forge_git_base_moved(&moved, g, base, since) < 0) {
			reason(ctx, "cannot tell whether '%s' moved: %s", base, forge_last_error());
			goto out;
		}
		if (moved)
			emit(ctx, "deploy.base_moved",
			     json_set(json_set(json_set(jv_object(), "base", jv_string(base)), "from",
					       jv_string(since)), "to", jv_string(base_tip)));
		/* (forge_git_contains walks a shallow clone's history too) */
		if (forge_git_contains(&ff, g, tip, base_tip) < 0) {
			reason(ctx, "cannot tell whether '%s' fast-forwards '%s': %s", ctx->branch, base,
			       forge_last_error());
			goto out;
		}
		if (!ff) {
			/* (what forge show's next reads: only this refusal needs --no-ff) */
			*d = json_set(*d, "diverged", jv_true());
			reason(ctx, "'%s' moved since the run started (%.12s -> %.12s) and '%s' no longer "
			       "fast-forwards it: rebase the run's branch or merge by hand",
			       base, since ? since : "?", base_tip, ctx->branch);
			status = "rejected";
			goto out;
		}
	}
	int rc = forge_git_merge_ff(&merged, g, base, tip);
	if (rc == FORGE_GIT_MOVED) {
		/* a git command moved it since the look above: refused as when it
		 * had moved before (mergeable; --no-ff only when diverged) */
		free(base_tip);
		base_tip = NULL;
		ff = true;
		if (forge_git_resolve(&base_tip, g, base) == 0)
			forge_git_contains(&ff, g, tip, base_tip);
		if (!ff)
			*d = json_set(*d, "diverged", jv_true());
		reason(ctx, "cannot merge '%s' into '%s': %s", ctx->branch, base, forge_last_error());
		status = "rejected";
		goto out;
	}
	if (rc < 0 || rc == FORGE_GIT_BLOCKED) {
		reason(ctx, "cannot merge '%s' into '%s': %s", ctx->branch, base, forge_last_error());
		if (rc == FORGE_GIT_BLOCKED)
			status = "rejected";	/* the person's files: theirs to move */
		goto out;
	}
	*d = json_set(*d, "status", jv_string("healthy"));
	*d = json_set(*d, "commit", jv_string(merged ? merged : tip));
	*d = json_set(*d, "base_moved", jv_bool(moved));
	reason(ctx, rc == FORGE_GIT_NOTHING ? "'%s' was already at '%s' (%.12s)"
					    : "fast-forwarded '%s' to '%s' (%.12s)",
	       base, ctx->branch, merged ? merged : tip);
	status = "ok";
out:
	if (locked)
		forge_git_merge_unlock(g);
	free(base);
	free(tip);
	free(base_tip);
	free(since);
	free(merged);
	return status;
}

/* ---- push ------------------------------------------------------------ */

/*
 * Whether remote is a path on this machine that is not there: no
 * configured remote of that name (its URL would differ), no ':' (libgit2
 * takes "host:path" and "scheme://" for a remote) and nothing at the path.
 * libgit2 says only "unsupported URL protocol" of such a path.
 */
static bool remote_path_missing(struct forge_git *g, const char *remote)
{
	char *url = NULL;
	struct stat st;
	bool missing = false;

	if (forge_git_remote_url(&url, g, remote) == 0 && strcmp(url, remote) == 0 && !strchr(remote, ':'))
		missing = stat(remote, &st) != 0;
	free(url);
	return missing;
}

static const char *deploy_push(jv *d, struct forge_git *g, struct deploy_ctx *ctx)
{
	char *tip = NULL;
	const char *status = "failed";

	if (!ctx->remote || !*ctx->remote) {
		reason(ctx, "no remote to push to: set deploy.remote or pass --remote");
		return status;
	}
	if (remote_path_missing(g, ctx->remote)) {
		reason(ctx, "cannot push '%s' to '%s': no such remote, and the path '%s' does not exist "
		       "(give a configured remote, a URL, or the path of a repository: deploy.remote or --remote)",
		       ctx->branch, ctx->remote, ctx->remote);
		return status;
	}
	if (forge_git_resolve(&tip, g, ctx->branch) < 0) {
		reason(ctx, "the run's branch '%s' is not there: %s", ctx->branch, forge_last_error());
		return status;
	}
	jv ref = jv_string_fmt("refs/heads/%s", ctx->branch);
	jv spec = jv_string_fmt("%s:%s", jv_string_value(ref), jv_string_value(ref));
	*d = json_set(*d, "url", jv_string(ctx->remote));
	*d = json_set(*d, "remote", jv_string(ctx->remote));
	*d = json_set(*d, "ref", jv_copy(ref));
	*d = json_set(*d, "commit", jv_string(tip));
	if (forge_git_push(g, ctx->remote, jv_string_value(spec)) < 0) {
		reason(ctx, "cannot push '%s' to '%s': %s", ctx->branch, ctx->remote, forge_last_error());
	} else {
		*d = json_set(*d, "status", jv_string("healthy"));
		reason(ctx, "pushed '%s' (%.12s) to '%s'", jv_string_value(ref), tip, ctx->remote);
		status = "ok";
	}
	jv_free(ref);
	jv_free(spec);
	free(tip);
	return status;
}

/* ---- command --------------------------------------------------------- */

/* The tail of a command's output for an event (at most 4 KiB). */
static jv output_tail(const char *s)
{
	size_t len = s ? strlen(s) : 0;

	if (len <= 4096)
		return jv_string(s ? s : "");
	/* Start on a UTF-8 character boundary. */
	const char *p = s + len - 4096;
	while (((unsigned char)*p & 0xC0) == 0x80)
		p++;
	return jv_string(p);
}

static jv command_event(const char *what, const char *cmd, const struct deploy_cmd_result *r)
{
	jv e = jv_object();

	e = json_set(e, "command", jv_string(what));
	e = json_set(e, "run", jv_string(cmd));
	e = json_set(e, "exit_code", jv_number(r->exit_code));
	e = json_set(e, "timed_out", jv_bool(r->timed_out));
	e = json_set(e, "duration_ms", jv_number((double)r->duration_ms));
	return json_set(e, "output", output_tail(r->output));
}

/* Run one of the commands with FORGE_DEPLOY_* set.  0 when it exited 0. */
static int run_step_command(struct deploy_ctx *ctx, const char *what, const char *cmd,
			    double percent, int step, int nsteps, int *exit_code)
{
	char v_percent[64], v_step[64], v_steps[64], v_env[320], v_ref[1100], v_trace[200];
	const char *extra[] = { v_percent, v_step, v_steps, v_env, v_ref, v_trace, NULL };
	struct deploy_cmd_result r;

	snprintf(v_percent, sizeof v_percent, "FORGE_DEPLOY_PERCENT=%g", percent);
	snprintf(v_step, sizeof v_step, "FORGE_DEPLOY_STEP=%d", step);
	snprintf(v_steps, sizeof v_steps, "FORGE_DEPLOY_STEPS=%d", nsteps);
	snprintf(v_env, sizeof v_env, "FORGE_DEPLOY_ENVIRONMENT=%s", ctx->environment ? ctx->environment : "");
	snprintf(v_ref, sizeof v_ref, "FORGE_DEPLOY_REF=%s", ctx->branch ? ctx->branch : "");
	snprintf(v_trace, sizeof v_trace, "FORGE_DEPLOY_TRACE=%s", ctx->trace_id ? ctx->trace_id : "");
	char **env = deploy_env_new(extra);
	int rc = deploy_run_command(&r, cmd, ctx->workdir, env, ctx->command_timeout_ms, ctx->output_cap,
				    ctx->sandbox, strcmp(what, "build") != 0);
	jv ev = command_event(what, cmd, &r);
	if (step > 0)
		ev = json_set(ev, "percent", jv_number(percent));
	emit(ctx, rc == 0 ? "deploy.command" : "deploy.command_failed", ev);
	if (exit_code)
		*exit_code = r.exit_code;
	deploy_cmd_result_release(&r);
	deploy_env_free(env);
	return rc;
}

static const char *deploy_command(jv *d, struct deploy_ctx *ctx)
{
	int nsteps = jv_get_kind(ctx->steps) == JV_KIND_ARRAY ? jv_array_length(jv_copy(ctx->steps)) : 0;
	int total_samples = 0, total_errors = 0, done = 0;
	double p95_max = 0, last_p50 = 0, last_percent = 0;
	const char *status = "failed";
	char err[512];
	long long t0 = monotonic_ms();

	if (!ctx->deploy_cmd || !*ctx->deploy_cmd) {
		reason(ctx, "no deploy command: set tools.deploy_command");
		return status;
	}
	if (nsteps == 0) {
		reason(ctx, "no canary steps: set deploy.canary");
		return status;
	}
	if (ctx->health.url)
		*d = json_set(*d, "url", jv_string(ctx->health.url));
	*d = json_set(*d, "ref", json_str_or_null(ctx->branch));
	if (ctx->build_cmd && *ctx->build_cmd &&
	    run_step_command(ctx, "build", ctx->build_cmd, 0, 0, nsteps, NULL) < 0) {
		reason(ctx, "the build failed, nothing was deployed: %s", forge_last_error());
		return "rejected";
	}
	if (!ctx->health.url)
		emit(ctx, "deploy.unchecked",
		     json_set(jv_object(), "reason",
			      jv_string("no tools.health_url: steps are judged by the deploy command's exit status")));
	jv steps = jv_array();
	bool healthy = true;
	err[0] = '\0';
	for (int i = 0; i < nsteps && healthy; i++) {
		jv pv = jv_array_get(jv_copy(ctx->steps), i);
		double percent = jv_number_value(pv);
		char started[TIMESTAMP_LEN + 1];
		long long s0 = monotonic_ms();
		int exit_code = 0;
		jv step = jv_object();

		jv_free(pv);
		timestamp_now(started);
		step = json_set(step, "percent", jv_number(percent));
		step = json_set(step, "started_at", jv_string(started));
		bool ok = run_step_command(ctx, "deploy", ctx->deploy_cmd, percent, i + 1, nsteps, &exit_code) == 0;
		if (!ok)
			snprintf(err, sizeof err, "the deploy command failed at %g%%: %s", percent,
				 forge_last_error());
		step = json_set(step, "exit_code", jv_number(exit_code));
		if (ok && ctx->health.url) {
			struct deploy_health h;
			if (deploy_health_check(&h, &ctx->health) < 0) {
				ok = false;
				snprintf(err, sizeof err, "%s", forge_last_error());
				step = json_set(step, "health", jv_null());
			} else {
				ok = deploy_health_ok(&h, ctx->error_rate_max, ctx->latency_ms_max);
				if (!ok)
					snprintf(err, sizeof err,
						 "unhealthy at %g%%: error rate %.2f (max %.2f), p95 %.0f ms (max %.0f ms)%s%s",
						 percent, h.error_rate, ctx->error_rate_max, h.p95_ms,
						 ctx->latency_ms_max, h.errors ? ", last error " : "",
						 h.errors ? h.last_error : "");
				total_samples += h.samples;
				total_errors += h.errors;
				last_p50 = h.p50_ms;
				if (h.p95_ms > p95_max)
					p95_max = h.p95_ms;
				step = json_set(step, "health", deploy_health_json(&h));
			}
		} else {
			step = json_set(step, "health", jv_null());
		}
		step = json_set(step, "duration_ms", jv_number((double)(monotonic_ms() - s0)));
		step = json_set(step, "ok", jv_bool(ok));
		emit(ctx, ok ? "deploy.step" : "deploy.unhealthy", jv_copy(step));
		steps = jv_array_append(steps, step);
		done++;
		if (ok)
			last_percent = percent;
		healthy = ok;
	}

	jv metrics = jv_object();
	metrics = json_set(metrics, "steps_completed", jv_number(healthy ? done : done - 1));
	metrics = json_set(metrics, "percent", jv_number(last_percent));
	if (ctx->health.url) {
		metrics = json_set(metrics, "samples", jv_number(total_samples));
		metrics = json_set(metrics, "errors", jv_number(total_errors));
		metrics = json_set(metrics, "error_rate",
				   jv_number(total_samples ? round((double)total_errors / total_samples * 10000) / 10000 : 0));
		metrics = json_set(metrics, "p50_ms", jv_number(round(last_p50 * 10) / 10));
		metrics = json_set(metrics, "p95_ms", jv_number(round(p95_max * 10) / 10));
	}

	if (healthy) {
		*d = json_set(*d, "status", jv_string("healthy"));
		reason(ctx, "deployed to %g%% in %d step%s, healthy", last_percent, done, done == 1 ? "" : "s");
		status = "ok";
	} else if (ctx->rollback_cmd && *ctx->rollback_cmd) {
		int rc = run_step_command(ctx, "rollback", ctx->rollback_cmd, 0, 0, nsteps, NULL);
		metrics = json_set(metrics, "rolled_back", jv_bool(rc == 0));
		*d = json_set(*d, "status", jv_string(rc == 0 ? "rolled_back" : "degraded"));
		reason(ctx, "%s; %s", err, rc == 0 ? "rolled back" : "the rollback command failed too");
		status = "rejected";
	} else {
		*d = json_set(*d, "status", jv_string("degraded"));
		reason(ctx, "%s; no rollback command (tools.rollback_command) to undo it", err);
		status = "rejected";
	}
	metrics = json_set(metrics, "duration_ms", jv_number((double)(monotonic_ms() - t0)));
	*d = json_set(*d, "steps", steps);
	*d = json_set(*d, "metrics", metrics);
	return status;
}

/*
 * What was reviewed and tested is ctx->commit: a branch that moved since
 * (another push onto it) would deploy commits no gate saw.  True when the
 * branch is at it (or there is nothing to compare); else ctx->reason says why.
 */
static bool at_state_commit(struct deploy_ctx *ctx)
{
	struct forge_git *g = NULL;
	char *tip = NULL, *want = NULL;
	bool ok = false;

	if (!ctx->commit || !*ctx->commit || !ctx->branch || !*ctx->branch)
		return true;
	if (forge_git_open(&g, ctx->repo) < 0 || forge_git_resolve(&tip, g, ctx->branch) < 0) {
		reason(ctx, "the run's branch '%s' is not there: %s", ctx->branch, forge_last_error());
		goto out;
	}
	ok = forge_git_resolve(&want, g, ctx->commit) == 0 && strcmp(tip, want) == 0;
	if (!ok)
		reason(ctx, "the run's branch '%s' is at %.12s, not at the commit the state names (changes.commit "
		       "%.12s), which review and test passed: it moved since; nothing deployed", ctx->branch, tip,
		       ctx->commit);
out:
	free(tip);
	free(want);
	forge_git_free(g);
	return ok;
}

const char *deploy_run(jv *out, enum deploy_strategy s, struct deploy_ctx *ctx)
{
	struct forge_git *g = NULL;
	const char *status = "failed";
	jv d = deployment_new(s, ctx);

	ctx->reason[0] = '\0';
	if (!at_state_commit(ctx))
		goto out;
	if (s == DEPLOY_COMMAND) {
		status = deploy_command(&d, ctx);
		goto out;
	}
	if (!ctx->branch || !*ctx->branch) {
		reason(ctx, "no branch to deploy (task.branch)");
		goto out;
	}
	if (forge_git_open(&g, ctx->repo) < 0) {
		reason(ctx, "%s", forge_last_error());
		goto out;
	}
	if (s == DEPLOY_BRANCH)
		status = deploy_branch(&d, g, ctx);
	else if (s == DEPLOY_MERGE)
		status = deploy_merge(&d, g, ctx);
	else
		status = deploy_push(&d, g, ctx);
out:
	if (strcmp(status, "ok") != 0 && !json_has(d, "reason"))
		d = json_set(d, "reason", jv_string(ctx->reason));
	forge_git_free(g);
	*out = d;
	return status;
}
