/*
 * forge-show - one run, all of it: summary, plan, diff stat, findings,
 * tests, deployment, cost per phase, sub-agents, timeline, and what to do next.
 *
 *   forge show TRACE [--json]
 *   forge show TRACE --call N      the run's N-th model call, its request whole
 */
#include "app/cli.h"
#include "app/runview.h"
#include "app/term.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/money.h"
#include "git/git.h"
#include "llm/llm.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_JSON = 256, OPT_CALL };

static const struct cli_option options[] = {
	{ "json", 0, NULL, "the whole view as one JSON object (with the patch)", OPT_JSON },
	{ "call", 0, "N", "the run's N-th model call as JSON, its request whole", OPT_CALL },
	{ NULL, 0, NULL, NULL, 0 }
};

struct show_opts {
	bool json;
	long call;      /* 0: none */
};

static const struct cli_spec spec = {
	.name = "forge-show",
	.synopsis = "TRACE [--json]\nTRACE --call N",
	.description = "Show a run: its task, status, branch, worktree and base; the plan (tasks, risk,\n"
		       "estimate); the diff stat of its branch against the commit it started from; the\n"
		       "review's findings; the tests (failing ones by name); the deployment; the cost of\n"
		       "each phase; the sub-agents its agents delegated to, as a tree under their phase;\n"
		       "a timeline of phases, model calls, gates and bounces (local times);\n"
		       "and the next command to run.  TRACE may be any unique prefix of a trace id.",
	.options = options,
	.extra_help = "A trace of phases run by hand (a shell pipeline: forge-plan | forge-implement | …,\n"
		      "its events stored) is no run: it is shown with the branch and worktree git has of\n"
		      "it, and what to do with them (forge diff, git merge; git worktree remove and git\n"
		      "branch -D remove them: forge gc does not).\n"
		      "--call N prints the run's N-th model call as its llm_calls row has it (in the order\n"
		      "they were logged: phase, attempt, call, model, tokens, cost, response), with the\n"
		      "request whole: the messages and tools a row names (as_in) rather than holds are\n"
		      "read back from the rows that have them.\n"
		      "Exit status: 0 shown, 2 no run or several match TRACE (or no call N), 5 the database\n"
		      "failed (or a row a call's request names is not in it).",
};

static void kv(const char *key, const char *val)
{
	printf("%-9s %s\n", key, val ? val : "-");
}

/* The run's branch or worktree: its name, or that it was removed. */
static void place(const char *key, const char *name, bool removed)
{
	if (name && removed)
		printf("%-9s removed (was %s)\n", key, name);
	else
		kv(key, name);
}

static bool view_flag(jv v, const char *path)
{
	jv b = json_get_path(v, path);
	bool yes = jv_get_kind(b) == JV_KIND_TRUE;

	jv_free(b);
	return yes;
}

/* A completed run whose branch holds no change against its base (the
 * agent changed no file): nothing to diff or merge, and said so. */
static bool no_change(jv v)
{
	jv files = json_get_path(v, "diff.files");
	const char *status = json_get_str(v, "status");
	bool none = status && !strcmp(status, "completed") && jv_get_kind(files) == JV_KIND_ARRAY &&
		    jv_array_length(jv_copy(files)) == 0;

	jv_free(files);
	return none;
}

/* A line for each saved ref whose work the branch lacks (view.saved,
 * runview_saved): an interrupted attempt's edits a resume reset away, which
 * the run's own diff does not show. */
static void print_saved(jv v)
{
	jv saved = json_get(v, "saved");

	if (jv_get_kind(saved) == JV_KIND_ARRAY) {
		jv_array_foreach(saved, i, e) {
			struct buf line = BUF_INIT;

			runview_saved_text(&line, e);
			term_clean_line(line.buf, line.len);
			printf("%-9s work saved from an interrupted attempt, not on the branch: %s\n", "saved", line.buf);
			buf_release(&line);
			jv_free(e);
			(void)i;
		}
	}
	jv_free(saved);
}

static void print_summary(jv v)
{
	jv task = json_get(v, "task"), run = json_get(v, "run"), merged = json_get(v, "merged");
	char when[64];

	kv("run", json_get_str(v, "trace_id"));
	kv("task", json_get_str(run, "task"));
	if (jv_get_kind(merged) == JV_KIND_OBJECT)
		printf("%-9s merged into %s at %.12s\n", "status", json_get_str(merged, "branch"),
		       json_get_str(merged, "commit"));
	else if (json_get_bool(v, "pipeline", false))
		printf("%-9s none: not a forge run but a trace of phases run by hand (a shell pipeline)\n", "status");
	else
		printf("%-9s %s%s%s%s\n", "status", json_get_str(v, "status"),
		       json_get_str(run, "current_phase") ? " at " : "",
		       json_get_str(run, "current_phase") ? json_get_str(run, "current_phase") : "",
		       no_change(v) ? " (no change)" : "");
	if (json_get_str(run, "error") && *json_get_str(run, "error")) {
		/* (it may hold a model's words: a question it asked) */
		char *reason = xstrdup(json_get_str(run, "error"));

		term_clean_line(reason, strlen(reason));
		kv("reason", reason);
		free(reason);
	}
	runview_local_time(when, sizeof when, json_get_str(run, "started_at"), true);
	kv("started", when);
	/* (what forge gc or forge cancel removed is said so, not named as if
	 * there; a dry run made neither) */
	if (json_get_bool(v, "dry_run", false)) {
		kv("branch", "none (a dry run makes no worktree or branch)");
	} else {
		place("branch", json_get_str(task, "branch"), view_flag(v, "removed.branch"));
		place("worktree", json_get_str(task, "worktree"), view_flag(v, "removed.worktree"));
	}
	print_saved(v);
	if (json_get_str(task, "base_ref") && json_get_str(task, "base_commit"))
		printf("%-9s %s (%.12s)\n", "base", json_get_str(task, "base_ref"), json_get_str(task, "base_commit"));
	else if (json_get_str(task, "base_ref"))	/* (a dry run resolves it to no commit) */
		printf("%-9s %s (%s)\n", "base", json_get_str(task, "base_ref"),
		       json_get_bool(v, "dry_run", false) ? "a dry run: not resolved to a commit" : "no commit recorded");
	jv_free(task);
	jv_free(run);
	jv_free(merged);
}

static void print_plan(jv plan)
{
	jv tasks = json_get(plan, "tasks"), risk = json_get(plan, "risk"), est = json_get(plan, "estimates");

	if (jv_get_kind(plan) != JV_KIND_OBJECT)
		goto out;
	printf("\nplan      %s\n", json_get_str(plan, "summary") ? json_get_str(plan, "summary") : "");
	printf("          risk %s (%.2f), estimate %s, %s\n", json_get_str(risk, "level") ? json_get_str(risk, "level") : "?",
	       json_get_num(risk, "score", 0), json_get_str(est, "complexity") ? json_get_str(est, "complexity") : "?",
	       json_get_str(est, "effort") ? json_get_str(est, "effort") : "?");
	if (jv_get_kind(tasks) == JV_KIND_ARRAY) {
		jv_array_foreach(tasks, i, t) {
			jv files = json_get(t, "files");
			struct buf f = BUF_INIT;
			if (jv_get_kind(files) == JV_KIND_ARRAY) {
				jv_array_foreach(files, k, p) {
					buf_addf(&f, "%s%s", k ? ", " : "", jv_get_kind(p) == JV_KIND_STRING ? jv_string_value(p) : "?");
					jv_free(p);
				}
			}
			printf("  %-4s %s%s%s%s\n", json_get_str(t, "id") ? json_get_str(t, "id") : "-",
			       json_get_str(t, "title") ? json_get_str(t, "title") : "", f.len ? " [" : "", f.buf, f.len ? "]" : "");
			buf_release(&f);
			jv_free(files);
			jv_free(t);
		}
	}
out:
	jv_free(tasks);
	jv_free(risk);
	jv_free(est);
}

static void print_diff(jv v, jv diff)
{
	jv files = json_get(diff, "files");
	long add = 0, del = 0;
	const char *base = json_get_str(diff, "base") ? json_get_str(diff, "base") : "?";
	const char *head = json_get_str(diff, "head") ? json_get_str(diff, "head") : "?";

	if (jv_get_kind(files) != JV_KIND_ARRAY) {
		printf("\nchanges   none\n");
		jv_free(files);
		return;
	}
	if (no_change(v)) {
		if (!strcmp(base, head))
			printf("\nchanges   none: the run made no change (its branch is at its base %.12s)\n", base);
		else
			printf("\nchanges   none: the run made no change (%.12s..%.12s changes no file)\n", base, head);
		jv_free(files);
		return;
	}
	jv_array_foreach(files, i, f) {
		add += (long)json_get_num(f, "additions", 0);
		del += (long)json_get_num(f, "deletions", 0);
		jv_free(f);
	}
	int n = jv_array_length(jv_copy(files));
	printf("\nchanges   %d file%s (+%ld -%ld), %.12s..%.12s\n", n, n == 1 ? "" : "s", add, del, base, head);
	jv_array_foreach(files, i, f) {
		const char *a = json_get_str(f, "action");
		const char *path = json_get_str(f, "path") ? json_get_str(f, "path") : "?";
		/* padded by columns: a name of wide or accented characters keeps
		 * the counts in line */
		printf("  %c %s%*s +%.0f -%.0f\n", a && !strcmp(a, "create") ? 'A' : a && !strcmp(a, "delete") ? 'D' : 'M',
		       path, term_pad(path, 40), "", json_get_num(f, "additions", 0), json_get_num(f, "deletions", 0));
		jv_free(f);
	}
	jv_free(files);
}

static void print_findings(jv review)
{
	jv findings = json_get(review, "findings");

	if (jv_get_kind(review) == JV_KIND_OBJECT) {
		int n = jv_get_kind(findings) == JV_KIND_ARRAY ? jv_array_length(jv_copy(findings)) : 0;
		printf("\nreview    %s, %d finding%s\n", json_get_str(review, "decision") ? json_get_str(review, "decision") : "?",
		       n, n == 1 ? "" : "s");
		if (n) {
			jv_array_foreach(findings, i, f) {
				printf("  %s:%.0f: %s: %s\n", json_get_str(f, "file") ? json_get_str(f, "file") : "?",
				       json_get_num(f, "line", 0), json_get_str(f, "severity") ? json_get_str(f, "severity") : "?",
				       json_get_str(f, "message") ? json_get_str(f, "message") : "");
				jv_free(f);
			}
		}
	}
	jv_free(findings);
}

static void print_tests(jv tests, jv dp)
{
	jv sum = json_get(tests, "summary"), failures = json_get(tests, "failures");

	if (json_get_str(tests, "not_run"))
		printf("\ntests     none run: %s\n", json_get_str(tests, "not_run"));
	else if (jv_get_kind(sum) == JV_KIND_OBJECT && json_get_num(sum, "flaky", 0) > 0)
		printf("\ntests     %.0f passed, %.0f failed, %.0f skipped, %.0f flaky (%s)\n",
		       json_get_num(sum, "passed", 0), json_get_num(sum, "failed", 0), json_get_num(sum, "skipped", 0),
		       json_get_num(sum, "flaky", 0), json_get_str(tests, "command") ? json_get_str(tests, "command") : "?");
	else if (jv_get_kind(sum) == JV_KIND_OBJECT)
		printf("\ntests     %.0f passed, %.0f failed, %.0f skipped (%s)\n", json_get_num(sum, "passed", 0),
		       json_get_num(sum, "failed", 0), json_get_num(sum, "skipped", 0),
		       json_get_str(tests, "command") ? json_get_str(tests, "command") : "?");
	else if (jv_get_kind(tests) == JV_KIND_OBJECT)
		printf("\ntests     none run%s%s\n", json_get_str(tests, "note") ? ": " : "",
		       json_get_str(tests, "note") ? json_get_str(tests, "note") : "");
	if (jv_get_kind(failures) == JV_KIND_ARRAY) {
		/* a flaky test passed on its rerun: it is listed, not failed
		 * (before: "FAIL name" in a completed run's view) */
		jv_array_foreach(failures, i, f) {
			const char *m = json_get_str(f, "message"), *class = json_get_str(f, "classification");
			const char *name = json_get_str(f, "test") ? json_get_str(f, "test") : "?";

			if (class && strcmp(class, "flaky") == 0)
				printf("  flaky %s (failed, then passed on rerun)\n", name);
			else
				printf("  FAIL %s (%s)%s%.*s\n", name, class ? class : "real", m && *m ? ": " : "",
				       m ? (int)strcspn(m, "\n") : 0, m ? m : "");
			/* the analysis a gate's human decides on (escalation_test) */
			const char *cause = json_get_str(f, "root_cause"), *fix = json_get_str(f, "suggested_fix");
			if (cause && *cause)
				printf("       cause: %.*s\n", (int)strcspn(cause, "\n"), cause);
			if (fix && *fix)
				printf("       fix (confidence %.2f): %.*s\n", json_get_num(f, "confidence", 0),
				       (int)strcspn(fix, "\n"), fix);
			jv_free(f);
		}
	}
	/* (a skipped deploy says why: a run with no change deployed nothing) */
	bool skipped = json_get_str(dp, "status") && !strcmp(json_get_str(dp, "status"), "skipped") &&
		       json_get_str(dp, "reason");
	if (json_get_str(dp, "status"))
		printf("deploy    %s (%s, %s)%s%s%s%s\n", json_get_str(dp, "status"),
		       json_get_str(dp, "strategy") ? json_get_str(dp, "strategy") : "?",
		       json_get_str(dp, "environment") ? json_get_str(dp, "environment") : "?",
		       json_get_str(dp, "url") ? " " : "", json_get_str(dp, "url") ? json_get_str(dp, "url") : "",
		       skipped ? ": " : "", skipped ? json_get_str(dp, "reason") : "");
	jv_free(sum);
	jv_free(failures);
}

static void print_cost(jv v)
{
	jv pc = json_get(v, "phase_cost"), cost = json_get(v, "cost");
	char usd[MONEY_LEN];

	printf("\ncost     ");
	jv_array_foreach(pc, i, p) {
		printf(" %s $%s (%.0f call%s) ·", json_get_str(p, "phase"), money_fmt(usd, sizeof usd, json_get_num(p, "usd", 0)),
		       json_get_num(p, "calls", 0), json_get_num(p, "calls", 0) == 1 ? "" : "s");
		jv_free(p);
	}
	printf(" total $%s (%.0f tokens)\n", money_fmt(usd, sizeof usd, json_get_num(cost, "usd", 0)),
	       json_get_num(cost, "tokens", 0));
	jv_free(pc);
	jv_free(cost);
}

/* The sub-agents as a tree under their phases, when there were any. */
static void print_subagents(jv v)
{
	jv list = json_get(v, "subagents");
	struct buf b = BUF_INIT;

	if (jv_get_kind(list) == JV_KIND_ARRAY && jv_array_length(jv_copy(list)) > 0) {
		runview_subagent_tree(&b, list);
		printf("\nsubagents\n%s", b.buf);
	}
	buf_release(&b);
	jv_free(list);
}

static void print_timeline(jv timeline)
{
	printf("\ntimeline\n");
	jv_array_foreach(timeline, i, e) {
		char when[32];
		const char *text = json_get_str(e, "text");
		/* a reason may be a model's words over several lines: a line
		 * each entry (the view is term_safe() already) */
		char *line = xstrdup(text ? text : "");

		term_clean_line(line, strlen(line));
		runview_local_time(when, sizeof when, json_get_str(e, "ts"), false);
		printf("  %s  %s\n", when, line);
		free(line);
		jv_free(e);
	}
}

static void print_view(struct store *st, struct forge_git *g, const struct config *cfg, jv v)
{
	jv plan = json_get(v, "plan"), diff = json_get(v, "diff"), review = json_get(v, "review"),
	   tests = json_get(v, "tests"), dp = json_get(v, "deployment"), tl = json_get(v, "timeline");
	struct buf next = BUF_INIT, why = BUF_INIT;

	print_summary(v);
	print_plan(plan);
	print_diff(v, diff);
	print_findings(review);
	print_tests(tests, dp);
	print_cost(v);
	print_subagents(v);
	print_timeline(tl);
	runview_next(&next, &why, st, g, cfg, json_get_str(v, "trace_id"));
	if (next.len)
		printf("\nnext      %s\n", next.buf);
	if (why.len)    /* (not on the next line: that one is pasted) */
		printf("%swhy       %s\n", next.len ? "" : "\n", why.buf);
	buf_release(&next);
	buf_release(&why);
	jv_free(plan);
	jv_free(diff);
	jv_free(review);
	jv_free(tests);
	jv_free(dp);
	jv_free(tl);
}

static int on_option(int id, const char *arg, void *payload)
{
	struct show_opts *o = payload;

	if (id == OPT_JSON) {
		o->json = true;
		return 0;
	}
	if (id == OPT_CALL)
		return forge_parse_long(&o->call, arg, 1, 1000000000) < 0 ?
		       forge_error("--call wants a number from 1 (the run's first model call), not '%s'", arg) : 0;
	return forge_error("unhandled option");
}

/* forge show TRACE --call N: the call as llm_log_call_get() has it. */
static int show_call(const struct cli_common *common, const char *typed, long n)
{
	struct session ses;
	char *trace = NULL;
	jv call = jv_null();
	long count = 0;
	int status = session_open(&ses, common, SESSION_CONFIG | SESSION_STORE | SESSION_READONLY, jv_null());

	if (status) {
		fprintf(stderr, "forge-show: %s\n", forge_last_error());
		return status;
	}
	status = runview_resolve(&trace, ses.store, "forge-show", typed);
	if (status)
		goto out;
	switch (llm_log_call_get(&call, &count, ses.store, trace, n)) {
	case 0:
		json_write_line(stdout, call, false);
		call = jv_null();
		break;
	case 1:
		fprintf(stderr, "forge-show: run %s has %ld model call%s logged, no call %ld\n", trace, count,
			count == 1 ? "" : "s", n);
		status = FORGE_EXIT_USAGE;
		break;
	default:
		fprintf(stderr, "forge-show: %s\n", forge_last_error());
		status = FORGE_EXIT_DEPENDENCY;
		break;
	}
out:
	jv_free(call);
	free(trace);
	session_close(&ses);
	return status;
}

int main(int argc, char **argv)
{
	struct cli_common common;
	struct show_opts o = { 0 };
	int first = cli_parse(&common, &spec, argc, argv, on_option, &o);
	bool json = o.json;
	struct runview_open v;
	int status;

	if (argc - first != 1)
		cli_usage_error(&spec, "one trace id is needed");
	if (o.call)	/* (JSON, --json or not) */
		return cli_finish("forge-show", show_call(&common, argv[first], o.call));
	status = runview_open(&v, &common, "forge-show", argv[first], json);
	if (status == 0 && json)
		json_write_line(stdout, jv_copy(v.view), false);
	else if (status == 0) {
		/* (the task, names and outputs without their escape sequences;
		 * a file's name quoted as git shows it when it holds one) */
		jv shown = term_safe(term_quote_paths(jv_copy(v.view)));

		print_view(v.ses.store, v.g, v.ses.cfg, shown);
		jv_free(shown);
	}
	runview_close(&v);
	return cli_finish("forge-show", status);
}
