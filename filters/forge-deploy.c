/*
 * forge-deploy - approved, tested changes -> `deployment` (DESIGN.md §3,
 * seed 000 §7.5): the production gate, then a strategy (branch, merge,
 * push, command with canary steps, health checks and rollback).  The
 * machinery is lib/deploy/deploy.h; this file reads the state, the config and the
 * flags, asks the gate, and writes the result.
 */
#include "data/config.h"
#include "deploy/deploy.h"
#include "engine/gates.h"
#include "engine/pipeline.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/secret.h"
#include "app/phase.h"
#include "app/prompt.h"
#include "data/project.h"
#include "memory/memory.h"
#include "os/sandbox.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { OPT_STRATEGY = 256, OPT_ENVIRONMENT, OPT_REMOTE, OPT_RISK, OPT_APPROVE, OPT_NO_PROMPT, OPT_FORCE };

struct args {
	const char *strategy;
	const char *environment;
	const char *remote;
	const char *risk;
	bool approve;
	bool no_prompt;
	bool force;             /* a human overrode the guard (forge-supervisor) */
	char why[512];          /* the guard's reason */
};

static const struct cli_option options[] = {
	{ "strategy", 0, "S", "branch (default), merge, push or command (deploy.strategy)", OPT_STRATEGY },
	{ "environment", 0, "ENV", "where the deploy goes (deploy.environment; task.environment wins)", OPT_ENVIRONMENT },
	{ "remote", 0, "R", "push: a remote name, URL or path (deploy.remote)", OPT_REMOTE },
	{ "risk", 0, "LEVEL", "low|medium|high|critical: the canary ladder (default: the plan's or review's)", OPT_RISK },
	{ "approve", 0, NULL, "a human approves the deploy gate (production, critical risk)", OPT_APPROVE },
	{ "no-prompt", 0, NULL, "never ask on the terminal: a gate then waits (exit 4)", OPT_NO_PROMPT },
	{ "force", 0, NULL, "deploy although the review did not approve or tests failed (not a gate approval)", OPT_FORCE },
	{ NULL, 0, NULL, NULL, 0 },
};

static int on_option(struct phase *ph, int id, const char *arg)
{
	struct args *a = ph->payload;
	enum deploy_strategy s;

	switch (id) {
	case OPT_STRATEGY:
		if (deploy_strategy_parse(&s, arg) < 0)
			return -1;
		a->strategy = arg;
		return 0;
	case OPT_ENVIRONMENT:
		if (!*arg)
			return forge_error("--environment needs a name");
		a->environment = arg;
		return 0;
	case OPT_REMOTE:
		a->remote = arg;
		return 0;
	case OPT_RISK:
		if (deploy_risk_rank(arg) < 0)
			return forge_error("unknown risk level '%s': use low, medium, high or critical", arg);
		a->risk = arg;
		return 0;
	case OPT_APPROVE:
		a->approve = true;
		return 0;
	case OPT_NO_PROMPT:
		a->no_prompt = true;
		return 0;
	case OPT_FORCE:
		a->force = true;
		return 0;
	}
	return forge_error("unhandled option");
}

static jv skipped(const char *strategy, const char *why)
{
	jv d = jv_object();

	d = json_set(d, "status", jv_string("skipped"));
	if (strategy)
		d = json_set(d, "strategy", jv_string(strategy));
	return json_set(d, "reason", jv_string(why));
}

/* Whether the input state's last phase is `phase` and it ended rejected or
 * escalated with no one's override: its own verdict stands even where its
 * figures (a decision, a count) would pass. */
static bool said_no(const struct phase *ph, const char *phase, bool overridden)
{
	const char *last = json_get_str(ph->in.state, "phase");
	enum state_status st = state_status_of(json_get_str(ph->in.state, "status"));

	return !overridden && last && strcmp(last, phase) == 0 && (st == STATE_REJECTED || st == STATE_ESCALATED);
}

/* A pipeline's state must carry an approved review and passing tests (or
 * a recorded override of either: review.approved_by, tests.approved_by); a
 * run on the repository alone (no state nor task on stdin) deploys what is
 * there.  --force (a human overrode the "no") deploys anyway, with an
 * event; it never passes a gate.  A state that names no run branch (made
 * by a filter from a diff or a task, not in a run's worktree) has nothing
 * to deploy, forced or not. */
static const char *guard(struct phase *ph)
{
	struct args *a = ph->payload;
	jv decision, failed;

	if (phase_alone(ph))
		return NULL;
	decision = json_get_path(ph->state, "review.decision");
	failed = json_get_path(ph->state, "tests.summary.failed");
	/* A human's (or --auto-approve's) override of a "no" is in the state. */
	jv review_ok = json_get_path(ph->state, "review.approved_by");
	jv tests_ok = json_get_path(ph->state, "tests.approved_by");
	bool review_overridden = jv_get_kind(review_ok) == JV_KIND_OBJECT;
	bool tests_overridden = jv_get_kind(tests_ok) == JV_KIND_OBJECT;
	jv_free(review_ok);
	jv_free(tests_ok);
	if (jv_get_kind(decision) != JV_KIND_STRING)
		snprintf(a->why, sizeof a->why, "no review in the state: deploy needs an approved review");
	else if (strcmp(jv_string_value(decision), "approve") != 0 && !review_overridden)
		snprintf(a->why, sizeof a->why, "the review did not approve (review.decision is '%s')",
			 jv_string_value(decision));
	else if (jv_get_kind(failed) != JV_KIND_NUMBER)
		snprintf(a->why, sizeof a->why, "no test results in the state: deploy needs passing tests");
	else if (jv_number_value(failed) != 0 && !tests_overridden)
		snprintf(a->why, sizeof a->why, "%g test%s failed", jv_number_value(failed),
			 jv_number_value(failed) == 1 ? "" : "s");
	else if (said_no(ph, "review", review_overridden) || said_no(ph, "test", tests_overridden))
		snprintf(a->why, sizeof a->why, "the input state's %s phase ended '%s' and no one approved "
			 "it: deploy needs an approved review and passing tests", json_get_str(ph->in.state, "phase"),
			 json_get_str(ph->in.state, "status"));
	else
		a->why[0] = '\0';
	/* An approval and a pass are of the commit they saw: a state whose
	 * implement ran again (and failed) keeps the old ones (DESIGN §2). */
	char why[400];
	jv review = json_get(ph->state, "review"), tests = json_get(ph->state, "tests");
	if (!a->why[0] && (phase_input_unfinished(ph, why, sizeof why) ||
			   phase_part_stale(ph, review, "review", why, sizeof why) ||
			   phase_part_stale(ph, tests, "test run", why, sizeof why)))
		snprintf(a->why, sizeof a->why, "%s: nothing reviewed and tested to deploy; run forge-implement "
			 "and the phases after it again", why);
	jv_free(review);
	jv_free(tests);
	jv_free(decision);
	jv_free(failed);
	jv branch = json_get_path(ph->state, "task.branch");
	bool no_branch = jv_get_kind(branch) != JV_KIND_STRING;

	jv_free(branch);
	if ((!a->why[0] || a->force) && no_branch)
		snprintf(a->why, sizeof a->why, "the state names no run branch (task.branch): it was not made in a "
			 "run's worktree (forge-implement, forge run), so there is no run to deploy; to deploy the "
			 "checkout, run forge-deploy --no-input");
	else if (a->why[0] && a->force) {
		phase_emit(ph, "deploy.forced", json_set(jv_object(), "guard", jv_string(a->why)));
		return NULL;
	}
	if (!a->why[0])
		return NULL;
	phase_set(ph, "deployment", skipped(NULL, a->why));
	return a->why;
}

/* ---- the gate ------------------------------------------------------------ */

static jv gate_summary(struct phase *ph, const struct deploy_ctx *ctx, const char *strategy,
		       const char *risk)
{
	jv s = jv_object();
	jv files = json_get_path(ph->state, "changes.files");
	jv findings = json_get_path(ph->state, "review.findings");
	jv tests = json_get_path(ph->state, "tests.summary");

	s = json_set(s, "strategy", jv_string(strategy));
	s = json_set(s, "environment", jv_string(ctx->environment));
	s = json_set(s, "branch", json_str_or_null(ctx->branch));
	s = json_set(s, "risk", jv_string(risk));
	s = json_set(s, "files", jv_number(jv_get_kind(files) == JV_KIND_ARRAY ? jv_array_length(jv_copy(files)) : 0));
	s = json_set(s, "findings", jv_number(jv_get_kind(findings) == JV_KIND_ARRAY
					      ? jv_array_length(jv_copy(findings)) : 0));
	s = json_set(s, "tests", jv_get_kind(tests) == JV_KIND_OBJECT ? jv_copy(tests) : jv_null());
	jv_free(files);
	jv_free(findings);
	jv_free(tests);
	return s;
}

static char *summary_text(jv s /* borrows */)
{
	jv tests = json_get(s, "tests");
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f) {
		jv_free(tests);
		return NULL;
	}
	fprintf(f, "forge-deploy: %s deploy of '%s' to %s\n", json_get_str(s, "strategy"),
		json_get_str(s, "branch") ? json_get_str(s, "branch") : "?", json_get_str(s, "environment"));
	fprintf(f, "  risk:     %s\n", json_get_str(s, "risk"));
	fprintf(f, "  changes:  %g file(s)\n", json_get_num(s, "files", 0));
	fprintf(f, "  findings: %g\n", json_get_num(s, "findings", 0));
	if (jv_get_kind(tests) == JV_KIND_OBJECT)
		fprintf(f, "  tests:    %g passed, %g failed\n", json_get_num(tests, "passed", 0),
			json_get_num(tests, "failed", 0));
	fclose(f);
	jv_free(tests);
	return text;
}

/* Returns NULL when the deploy may go on, else the phase status. */
static const char *pass_gate(struct phase *ph, const struct deploy_ctx *ctx, const char *strategy,
			     const char *risk, bool production, jv *gate_out)
{
	struct args *a = ph->payload;
	struct deploy_gate gate;
	int level = (int)config_get_num(ph->cfg, "safety.automation_level");

	*gate_out = jv_null();
	deploy_gate_for(&gate, ph->cfg, production, risk);
	if (!gate.id)
		return NULL;
	jv g = json_set(json_set(jv_object(), "id", jv_string(gate.id)), "prompt", jv_string(gate.prompt));
	if (a->approve) {
		phase_emit(ph, "gate.approved", json_set(json_set(jv_object(), "gate_id", jv_string(gate.id)),
							 "by", jv_string("flag")));
		*gate_out = json_set(json_set(g, "status", jv_string("approved")), "by", jv_string("flag"));
		return NULL;
	}
	jv summary = gate_summary(ph, ctx, strategy, risk);
	jv req = jv_object();
	req = json_set(req, "gate_id", jv_string(gate.id));
	req = json_set(req, "phase", jv_string("deploy"));
	req = json_set(req, "prompt", jv_string(gate.prompt));
	req = json_set(req, "reason", jv_string(gate.why));
	req = json_set(req, "timeout_s", jv_number(gate.timeout_s));
	req = json_set(req, "automation_level", jv_number(level));
	/* What the ladder says of this gate at this level: never "auto" for a
	 * production deploy (the schema holds it "human"); critical_deploy is
	 * not a ladder point and always asks. */
	req = json_set(req, "auto_approvable", jv_bool(ladder_is_point(gate.id) &&
						       ladder_rule(ph->cfg, level, gate.id, risk) == LADDER_AUTO));
	req = json_set(req, "summary", jv_copy(summary));
	phase_emit(ph, "gate.requested", req);

	enum prompt_answer answer = PROMPT_NO_TTY;
	if (!a->no_prompt) {
		char *text = summary_text(summary);
		answer = deploy_gate_ask(&gate, text, NULL);
		free(text);
	}
	jv_free(summary);
	if (answer == PROMPT_APPROVE) {
		phase_emit(ph, "gate.approved", json_set(json_set(jv_object(), "gate_id", jv_string(gate.id)),
							 "by", jv_string("terminal")));
		*gate_out = json_set(json_set(g, "status", jv_string("approved")), "by", jv_string("terminal"));
		return NULL;
	}
	if (answer == PROMPT_REJECT) {
		phase_emit(ph, "gate.rejected", json_set(json_set(jv_object(), "gate_id", jv_string(gate.id)),
							 "by", jv_string("terminal")));
		phase_reason(ph, "gate %s: declined on the terminal; nothing was deployed", gate.id);
		jv d = skipped(strategy, ph->reason);
		d = json_set(d, "environment", jv_string(ctx->environment));
		d = json_set(d, "gate", json_set(g, "status", jv_string("rejected")));
		phase_set(ph, "deployment", d);
		return "rejected";
	}
	/* Ctrl-C at the prompt decides nothing: the gate stays pending and the
	 * phase ends interrupted (exit 130), to be approved and run again. */
	if (answer == PROMPT_INTERRUPTED) {
		ph->interrupted = true;
		phase_reason(ph, "interrupted at gate %s (%s): nothing was deployed; run again to answer, "
			     "or approve with --approve", gate.id, gate.prompt);
	} else {
		/* forge-supervisor records the gate for `forge gate approve`;
		 * run alone, nothing does: a rerun with --approve is the way */
		const char *sup = getenv("FORGE_SUPERVISOR_PID");
		phase_reason(ph, "waiting for a human: gate %s (%s) - %s; nothing was deployed", gate.id, gate.prompt,
			     sup && *sup ? "approve with 'forge gate approve'"
					 : "run it again with --approve (or on a terminal, to answer y/n)");
	}
	jv d = skipped(strategy, ph->reason);
	d = json_set(d, "environment", jv_string(ctx->environment));
	d = json_set(d, "gate", json_set(g, "status", jv_string("pending")));
	phase_set(ph, "deployment", d);
	return "escalated";
}

/* ---- at most once -------------------------------------------------------- */

/*
 * The deploy's outcome as deploy.finished, stored in the database before
 * it is written out: a run killed after the deploy but before the
 * supervisor checkpointed it (the phase still exiting, its lease being
 * released) knows at its resume that this commit is deployed (before: the
 * resume deployed it again).  The supervisor's copy of the event is a
 * no-op (same id).  Borrows d.
 */
/* Where a deploy of this strategy goes, as deploy.finished keeps it: the
 * remote (a URL's password as ***), the branch merged into, the deploy
 * command; "" for a branch.  Another target is another deploy.  malloc'd. */
static char *deploy_target(struct phase *ph, const struct deploy_ctx *ctx, const char *strategy)
{
	const char *t = NULL;

	if (strcmp(strategy, deploy_strategy_name(DEPLOY_PUSH)) == 0)
		return secret_url_shown(ctx->remote ? ctx->remote : "");
	if (strcmp(strategy, deploy_strategy_name(DEPLOY_MERGE)) == 0)
		t = ctx->base_ref;
	else if (strcmp(strategy, deploy_strategy_name(DEPLOY_COMMAND)) == 0)
		t = config_get_str(ph->cfg, "tools.deploy_command");
	return xstrdup(t ? t : "");
}

static void record_deploy(struct phase *ph, const struct deploy_ctx *ctx, const char *strategy,
			  const char *status, jv d)
{
	struct store *st = ctx->trace_id && ctx->commit ? phase_store(ph) : NULL;
	jv p = json_set(jv_object(), "commit", json_str_or_null(ctx->commit));
	char *target = deploy_target(ph, ctx, strategy);

	p = json_set(p, "strategy", jv_string(strategy));
	p = json_set(p, "target", jv_string(target));
	free(target);
	p = json_set(p, "environment", jv_string(ctx->environment));
	p = json_set(p, "status", jv_string(status));
	p = json_set(p, "reason", jv_string(ph->reason));
	p = json_set(p, "deployment", jv_copy(d));
	jv ev = stream_event_new(&ph->out, "deploy.finished", p);
	if (st && store_event_put(st, ev, NULL, 0, NULL) < 0)
		fprintf(stderr, "forge-deploy: warning: %s: a resume after a crash now may deploy again\n",
			forge_last_error());
	stream_write(&ph->out, ev);
}

/*
 * The payload of this run's deploy.finished when it deployed this very
 * commit the same way to the same target, successfully (a resume after a crash that came
 * before the supervisor's checkpoint), else null.  A failed or rolled-back
 * deploy is tried again.
 */
static jv deployed_before(struct phase *ph, const struct deploy_ctx *ctx, const char *strategy)
{
	struct store *st = ctx->trace_id && ctx->commit ? phase_store(ph) : NULL;
	jv ev = jv_null(), p;

	if (!st || store_event_last(&ev, st, ctx->trace_id, "deploy.finished") < 0) {
		jv_free(ev);
		return jv_null();
	}
	p = json_get(ev, "payload");
	jv_free(ev);
	const char *commit = json_get_str(p, "commit"), *how = json_get_str(p, "strategy");
	const char *env = json_get_str(p, "environment"), *status = json_get_str(p, "status");
	const char *target = json_get_str(p, "target");
	char *here = deploy_target(ph, ctx, strategy);
	jv d = json_get(p, "deployment");
	bool done = jv_get_kind(d) == JV_KIND_OBJECT && commit && how && env && status && target &&
		    strcmp(commit, ctx->commit) == 0 && strcmp(how, strategy) == 0 &&
		    strcmp(env, ctx->environment) == 0 && strcmp(target, here) == 0 &&
		    strcmp(status, "ok") == 0;

	free(here);
	jv_free(d);
	if (done)
		return p;
	jv_free(p);
	return jv_null();
}

/*
 * A merge deploy that landed the run is the run's merge into its base
 * branch: run.merged, as forge merge records it (how: "deploy"), stored
 * before it is written out, once (before: the run stayed "completed,
 * unmerged": next said forge merge, forge gc kept its worktree).
 */
static void record_merged(struct phase *ph, const struct deploy_ctx *ctx, jv d)
{
	struct store *st = ctx->trace_id ? phase_store(ph) : NULL;
	jv before = jv_null();

	if (st && store_event_last(&before, st, ctx->trace_id, "run.merged") == 0 &&
	    jv_get_kind(before) == JV_KIND_OBJECT) {
		jv_free(before);
		return;
	}
	jv_free(before);
	const char *branch = json_get_str(d, "ref");
	jv p = json_set(jv_object(), "branch", jv_string(branch && strncmp(branch, "refs/heads/", 11) == 0
							  ? branch + 11 : branch ? branch : ""));

	p = json_set(p, "commit", json_str_or_null(json_get_str(d, "commit")));
	p = json_set(json_set(p, "how", jv_string("deploy")), "run_branch", json_str_or_null(ctx->branch));
	jv ev = stream_event_new(&ph->out, "run.merged", p);
	if (st && store_event_put(st, ev, NULL, 0, NULL) < 0)
		fprintf(stderr, "forge-deploy: warning: the merge is not recorded as the run's: %s\n",
			forge_last_error());
	stream_write(&ph->out, ev);
}

/* ---- run ----------------------------------------------------------------- */

static void emit_cb(void *payload, const char *type, jv data)
{
	phase_emit(payload, type, data);
}

static bool is_dir(const char *path)
{
	struct stat st;

	return path && *path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * deploy_run(); with the command strategy in the run's worktree (the
 * state's task.worktree, not a checkout of the person's), what the build,
 * deploy and rollback commands leave there untracked -- a build output,
 * __pycache__/ -- is taken out after the last of them (a deploy.cleaned
 * event {removed}), as after forge-test's tests (app/phase.h,
 * phase_command_before): the deploy does not change the run's branch, and
 * a resume does not keep the files as the run's work.  One note for all
 * of them: the deploy commands use what the build made.  What such a
 * command left when the process that ran it died is moved out first
 * (worktree.cleaned).
 */
static const char *deploy_commands(jv *d, struct phase *ph, enum deploy_strategy strategy,
				   struct deploy_ctx *ctx, bool in_run)
{
	jv before = jv_null(), removed;
	const char *status;

	if (in_run && strategy == DEPLOY_COMMAND) {
		if (phase_command_recover(ph, ctx->workdir) < 0)
			phase_say(ph, "warning: what a stopped command left in the worktree was not removed: %s",
				  forge_last_error());
		before = phase_command_before(ph, ctx->workdir);
	}
	status = deploy_run(d, strategy, ctx);
	removed = phase_command_after(ph, ctx->workdir, before, "the deploy commands");
	if (jv_array_length(jv_copy(removed)) > 0)
		phase_emit(ph, "deploy.cleaned", json_set(jv_object(), "removed", removed));
	else
		jv_free(removed);
	return status;
}

/*
 * A rolled-back (or degraded) deploy is production feedback too (the
 * production loop): remembered like a reported production error, against
 * this run, so the next run on the same code recalls why this one was
 * undone.  Failing to remember does not change the deploy's outcome.
 */
static void remember_rollback(struct phase *ph, jv d, const struct deploy_ctx *ctx, jv changes)
{
	struct store *st = phase_store(ph);
	struct memory_options mo;
	struct memory *m = NULL;
	char id[ULID_LEN + 1];
	const char *commit = json_get_str(d, "commit") ? json_get_str(d, "commit") : json_get_str(changes, "commit");
	jv rec;

	if (!st)
		return;
	memory_options_init(&mo);
	memory_options_from_config(&mo, ph->cfg);
	if (memory_open(&m, st, &mo) < 0) {
		fprintf(stderr, "forge-deploy: warning: the rollback is not remembered: %s\n", forge_last_error());
		return;
	}
	rec = json_set(jv_object(), "kind", jv_string("rollback"));
	rec = json_set(rec, "status", json_get(d, "status"));
	rec = json_set(rec, "reason", jv_string(ctx->reason));
	rec = json_set(rec, "environment", json_str_or_null(ctx->environment));
	rec = json_set(rec, "commit", json_str_or_null(commit));
	rec = json_set(rec, "metrics", json_get(d, "metrics"));
	rec = json_set(rec, "task", json_get_path(ph->state, "task.description"));
	jv files = json_get(changes, "files"), paths = jv_array();

	if (jv_get_kind(files) == JV_KIND_ARRAY)
		jv_array_foreach(files, i, fc) {
			if (json_get_str(fc, "path"))
				paths = jv_array_append(paths, jv_string(json_get_str(fc, "path")));
			jv_free(fc);
			(void)i;
		}
	jv_free(files);
	rec = json_set(rec, "files", paths);
	if (memory_record_production(id, m, rec, ctx->trace_id) == 0)
		phase_emit(ph, "memory.stored", json_set(json_set(jv_object(), "id", jv_string(id)),
							  "source", jv_string("production")));
	else
		fprintf(stderr, "forge-deploy: warning: the rollback is not remembered: %s\n", forge_last_error());
	memory_free(m);
}

static const char *run(struct phase *ph)
{
	struct args *a = ph->payload;
	struct deploy_ctx ctx;
	enum deploy_strategy strategy = DEPLOY_BRANCH;
	const char *status = "failed";
	char *head = NULL, *build = NULL;
	struct sandbox_policy *policy = NULL;
	jv task = json_get(ph->state, "task");
	jv steps = jv_null(), gate = jv_null(), d = jv_null(), changes = jv_null();
	const char *sname = a->strategy ? a->strategy : config_get_str(ph->cfg, "deploy.strategy");

	deploy_ctx_init(&ctx);
	if (deploy_strategy_parse(&strategy, sname ? sname : "branch") < 0) {
		phase_reason(ph, "%s", forge_last_error());
		goto out;
	}
	sname = deploy_strategy_name(strategy);

	/* Where: a production anywhere (the task's or the config's) is production. */
	const char *task_env = json_get_str(task, "environment");
	const char *cfg_env = a->environment ? a->environment : config_get_str(ph->cfg, "deploy.environment");
	bool production = (task_env && strcmp(task_env, "production") == 0) ||
			  (cfg_env && strcmp(cfg_env, "production") == 0);
	ctx.environment = production ? "production" : task_env ? task_env : cfg_env ? cfg_env : "staging";
	const char *risk = a->risk ? a->risk : deploy_risk_of(ph->state);

	/* What: the run's branch, or the checkout's when run on the repository alone. */
	/* (never NULL: without a repository the phase was refused, needs_repo) */
	ctx.repo = json_get_str(task, "repo") ? json_get_str(task, "repo") : ph->repo;
	ctx.branch = json_get_str(task, "branch");
	bool unborn = false;
	if (phase_alone(ph) && deploy_head_branch(&head, &unborn, ctx.repo) == 0)
		ctx.branch = head;
	if (!ctx.branch && strategy != DEPLOY_COMMAND) {
		/* alone on a detached HEAD: no branch to leave, merge or push */
		phase_reason(ph, "HEAD of '%s' is not on a branch: nothing for the '%s' strategy to deploy "
			     "(check out a branch, or use --strategy command)", ctx.repo, sname);
		status = "skipped";
		goto out;
	}
	if (unborn && strategy != DEPLOY_COMMAND) {
		/* alone on a branch with no commit yet (a fresh git init, an
		 * orphan branch): nothing to deploy, and nothing failed (it
		 * used to say "the run's branch is not there", exit 5) */
		phase_reason(ph, "branch '%s' of '%s' has no commits yet: nothing for the '%s' strategy to "
			     "deploy (commit first, or use --strategy command)", ctx.branch, ctx.repo, sname);
		status = "skipped";
		goto out;
	}
	/* the branch the run started from, recorded then: HEAD now may be
	 * another branch, or another checkout's (a linked worktree) */
	ctx.base_ref = json_get_str(task, "base_branch") ? json_get_str(task, "base_branch")
							 : json_get_str(task, "base_ref");
	changes = json_get(ph->state, "changes");
	ctx.base_commit = json_get_str(changes, "base_commit");
	ctx.commit = jv_get_kind(ph->in.state) == JV_KIND_OBJECT ? json_get_str(changes, "commit") : NULL;
	ctx.trace_id = json_get_str(ph->state, "trace_id");
	bool in_run = is_dir(json_get_str(task, "worktree"));
	ctx.workdir = in_run ? json_get_str(task, "worktree") : ctx.repo;
	ctx.remote = a->remote ? a->remote : config_get_str(ph->cfg, "deploy.remote");

	/* A run that made no change (changes.empty, engine/pipeline.h) has nothing
	 * to deploy, and no gate to ask: its deployment says so, skipped, and
	 * the phase passes (exit 0: the run completes, with no change).
	 * Before: "healthy" after leaving, merging or pushing a branch at its
	 * base, or running the deploy command on the code as it was -- and a
	 * merge recorded the run as merged. */
	if (!phase_alone(ph) && pipeline_changes_empty(ph->state)) {
		phase_reason(ph, "nothing to deploy: the run made no change (%s is at its base %.12s)",
			     ctx.branch ? ctx.branch : "its branch", ctx.base_commit ? ctx.base_commit : "?");
		d = json_set(skipped(sname, ph->reason), "environment", jv_string(ctx.environment));
		phase_emit(ph, "deploy.skipped", json_set(json_set(jv_object(), "strategy", jv_string(sname)),
							  "reason", jv_string(ph->reason)));
		phase_progress(ph, "%s", ph->reason);
		status = "ok";
		goto out;
	}
	jv before = deployed_before(ph, &ctx, sname);
	if (jv_get_kind(before) == JV_KIND_OBJECT) {
		d = json_get(before, "deployment");
		phase_reason(ph, "%s (deployed before the run was interrupted: not deployed again)",
			     json_get_str(before, "reason") ? json_get_str(before, "reason") : "deployed");
		phase_emit(ph, "deploy.done_before", json_set(json_set(jv_object(), "commit", jv_string(ctx.commit)),
							      "strategy", jv_string(sname)));
		phase_progress(ph, "%.12s was deployed (%s) before the run was interrupted: not deployed again",
			       ctx.commit, sname);
		jv_free(before);
		status = "ok";
		goto out;
	}
	jv_free(before);
	status = pass_gate(ph, &ctx, sname, risk, production, &gate);
	if (status)
		goto out;

	if (deploy_canary_steps(&steps, ph->cfg, risk) < 0) {
		phase_reason(ph, "%s", forge_last_error());
		status = "failed";
		goto out;
	}
	if (strategy == DEPLOY_COMMAND) {
		/* the commands run the branch's code: in the sandbox (deploy.h) */
		if (sandbox_policy_from_config(&policy, ph->cfg) < 0) {
			phase_reason(ph, "bad sandbox configuration: %s", forge_last_error());
			goto out;
		}
		ctx.sandbox = policy;
		build = project_command(ctx.workdir, ph->cfg, "build");
		ctx.build_cmd = build;
		ctx.deploy_cmd = config_get_str(ph->cfg, "tools.deploy_command");
		ctx.rollback_cmd = config_get_str(ph->cfg, "tools.rollback_command");
		ctx.steps = steps;
		ctx.health.url = config_get_str(ph->cfg, "tools.health_url");
		ctx.health.samples = (int)config_get_num(ph->cfg, "deploy.health.samples");
		ctx.health.timeout_ms = (long)(config_get_num(ph->cfg, "deploy.health.timeout_s") * 1000);
		ctx.health.interval_ms = (long)(config_get_num(ph->cfg, "deploy.health.interval_s") * 1000);
		ctx.error_rate_max = config_get_num(ph->cfg, "deploy.health.error_rate_max");
		ctx.latency_ms_max = config_get_num(ph->cfg, "deploy.health.latency_ms_max");
		ctx.command_timeout_ms = (long)(config_get_num(ph->cfg, "safety.time_s.deploy") * 1000);
		ctx.output_cap = (size_t)config_get_num(ph->cfg, "sandbox.output_cap_bytes");
	}
	ctx.emit = emit_cb;
	ctx.emit_payload = ph;
	jv plan = jv_object();
	plan = json_set(plan, "strategy", jv_string(sname));
	plan = json_set(plan, "environment", jv_string(ctx.environment));
	plan = json_set(plan, "branch", json_str_or_null(ctx.branch));
	plan = json_set(plan, "workdir", jv_string(ctx.workdir));
	plan = json_set(plan, "risk", jv_string(risk));
	if (strategy == DEPLOY_COMMAND)
		plan = json_set(plan, "steps", jv_copy(steps));
	phase_emit(ph, "deploy.started", plan);
	phase_progress(ph, "%s deploy of %s to %s", sname, ctx.branch ? ctx.branch : "?", ctx.environment);

	status = deploy_commands(&d, ph, strategy, &ctx, in_run);
	d = json_set(d, "risk", jv_string(risk));
	phase_reason(ph, "%s", ctx.reason);
	record_deploy(ph, &ctx, sname, status, d);
	if (json_get_str(d, "status") && (strcmp(json_get_str(d, "status"), "rolled_back") == 0 ||
					   strcmp(json_get_str(d, "status"), "degraded") == 0))
		remember_rollback(ph, d, &ctx, changes);
out:
	if (strcmp(status, "ok") == 0 && strategy == DEPLOY_MERGE && jv_get_kind(d) == JV_KIND_OBJECT &&
	    !(json_get_str(d, "status") && strcmp(json_get_str(d, "status"), "skipped") == 0))
		record_merged(ph, &ctx, d);
	if (jv_get_kind(d) == JV_KIND_OBJECT) {
		if (jv_get_kind(gate) == JV_KIND_OBJECT)
			d = json_set(d, "gate", jv_copy(gate));
		phase_set(ph, "deployment", d);
	} else {
		jv_free(d);
		if (strcmp(status, "bad_input") != 0 &&
		    (!json_has(ph->state, "deployment") || strcmp(status, "failed") == 0))
			phase_set(ph, "deployment", skipped(sname, ph->reason));
	}
	jv_free(gate);
	jv_free(changes);
	jv_free(steps);
	jv_free(task);
	free(head);
	free(build);
	sandbox_policy_free(policy);
	return status;
}

int main(int argc, char **argv)
{
	static const struct phase_spec spec = {
		.name = "deploy",
		.program = "forge-deploy",
		.synopsis = "[--strategy S] [--environment ENV] [--approve] < STATE\n"
			    "[--strategy S] [--environment ENV] [--approve] --no-input",
		.description =
			"Deploy approved, tested changes and add `deployment` to the state: leave the run's "
			"branch (branch), fast-forward the base branch (merge), push the branch (push), or run "
			"the project's build and deploy commands in canary steps with health checks and "
			"rollback (command).  A production deploy waits for a human's approval (exit 4) "
			"unless --approve is given or it is approved on the terminal.  With --no-input (or a "
			"terminal on stdin) it deploys the repository as it is; an empty stdin is bad input.",
		.extra_help =
			"Configuration:\n"
			"  deploy.strategy, deploy.environment, deploy.remote, deploy.canary.<risk>,\n"
			"  deploy.health.{error_rate_max,latency_ms_max,samples,timeout_s,interval_s},\n"
			"  tools.{build_command,deploy_command,rollback_command,health_url}\n"
			"The deploy command sees FORGE_DEPLOY_PERCENT, FORGE_DEPLOY_STEP, FORGE_DEPLOY_STEPS,\n"
			"FORGE_DEPLOY_ENVIRONMENT, FORGE_DEPLOY_REF and FORGE_DEPLOY_TRACE.\n"
			"The gate asks y/n on the terminal (Enter alone or a typo asks again); Ctrl-D or no\n"
			"terminal leaves it waiting (exit 4), Ctrl-C leaves it waiting too (exit 130).\n"
			"Exit: 0 healthy, or nothing to deploy because the run made no change (changes.empty:\n"
			"deployment.status skipped, with its reason), 1 rolled back/degraded/refused or guard\n"
			"not met, 2 bad input, 4 waiting for approval, 5 git or configuration failed,\n"
			"130 interrupted.\n",
		.options = options,
		.on_option = on_option,
		.needs_input = false,
		.runs_alone = true,
		.needs_repo = true,
		.guard = guard,
	.lease = true,
		.run = run,
	};
	struct args a = { 0 };

	return phase_main(&spec, argc, argv, &a);
}
