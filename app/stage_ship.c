/*
 * stage_ship.c - forge compile's integrate and review stages (app/stage.h).
 *
 * integrate: the agent adds the entry point, the build files and a README;
 * the stage checks that every file the document names (and the profile's
 * build files) exists in the project, that no test file changed, and that
 * the tests still pass.  Document: integration (with the stage's test run).
 *
 * review: the language's static tools really run over the project and the
 * tests run once more; the model judges each rule (read-only tools) and its
 * judgment is cross-checked with the real results: a rule whose test fails
 * is "violated" whatever the model says, a rule the model left out is
 * "unclear".  passed = no violated rule and no error-level finding; status
 * rejected when not passed, so a pipeline's bounce can send it back.
 * Document: compile_review.
 */
#include "app/stage.h"
#include "app/stage_work.h"

#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define LIST_MAX 8

/* ---- integrate ----------------------------------------------------------- */

static const char *integrate_guard(struct phase *ph)
{
	return stage_has(ph, "implementation") ? NULL
	       : "no implementation in the state: the integrate stage needs `implementation`";
}

/* Append path to missing when it is not a file or directory in dir. */
static jv check_exists(jv missing, const char *dir, const char *path)
{
	struct buf b = BUF_INIT;
	struct stat st;

	if (!path)
		return missing;
	buf_addf(&b, "%s/%s", dir, path);
	if (strstr(path, "..") || stat(b.buf, &st) != 0) {
		jv s = jv_string(path);
		bool dup = false;
		jv_array_foreach(missing, i, m) {
			dup = dup || json_equal(m, s);
			jv_free(m);
		}
		missing = dup ? missing : jv_array_append(missing, jv_copy(s));
		jv_free(s);
	}
	buf_release(&b);
	return missing;
}

static jv missing_files(struct stage_work *w, jv doc)
{
	jv missing = jv_array(), build = json_get(doc, "build_files");

	missing = check_exists(missing, w->dir, json_get_str(doc, "entry_point"));
	missing = check_exists(missing, w->dir, json_get_str(doc, "readme"));
	jv_array_foreach(build, i, f) {
		missing = check_exists(missing, w->dir, jv_get_kind(f) == JV_KIND_STRING ? jv_string_value(f) : NULL);
		jv_free(f);
	}
	jv_free(build);
	return missing;
}

static char *integrate_prompt(struct stage_work *w)
{
	static const char *const docs[] = { "intent", "contracts", "db_schema", NULL };
	struct buf b = BUF_INIT;

	buf_adds(&b, "# Integrate the product: entry point, build files, README\n\n");
	buf_adds(&b, "The build files the language needs: ");
	compile_lang_build_files_text(&b, w->lang);
	buf_adds(&b, "\n\n");
	stage_context(&b, w, docs);
	jv files = json_get_path(w->ph->state, "implementation.files");
	buf_adds(&b, "## The code written\n\n");
	stage_list(&b, files, 100);
	buf_adds(&b, "\n");
	jv_free(files);
	return buf_detach(&b, NULL);
}

/* Summary of a run for a document: {command, passed, failed}. */
static jv run_summary(jv run)
{
	jv s = json_set(jv_object(), "command", json_get(run, "command"));

	s = json_set(s, "passed", json_get(run, "passed"));
	return json_set(s, "failed", json_get(run, "failed"));
}

static const char *integrate_run(struct phase *ph)
{
	struct stage_work w;
	const char *status = "failed";
	jv doc = jv_null(), run = jv_null();
	char *prompt = NULL;
	struct buf why = BUF_INIT;

	if (stage_work_open(&w, ph, "compile-integrate", stage_write_tools) < 0)
		goto out;
	prompt = integrate_prompt(&w);
	status = stage_agent(&doc, &w, prompt, "integration", NULL);
	if (state_status_of(status) != STATE_OK)
		goto out;
	status = "failed";
	jv missing = missing_files(&w, doc), changed = stage_changed_tests(&w);
	jv no_build = compile_lang_missing_build_files(w.lang, w.dir);
	if (jv_array_length(jv_copy(missing)) > 0) {
		buf_adds(&why, "files that do not exist: ");
		stage_list(&why, missing, LIST_MAX);
	}
	if (jv_array_length(jv_copy(no_build)) > 0) {
		buf_addf(&why, "%sno build file: the %s profile needs ", why.len ? "; " : "", w.lang->name);
		stage_list(&why, no_build, LIST_MAX);
	}
	jv_free(no_build);
	if (jv_array_length(jv_copy(changed)) > 0) {
		buf_addf(&why, "%sthe integrate stage changed the tests: ", why.len ? "; " : "");
		stage_list(&why, changed, LIST_MAX);
	}
	jv_free(missing);
	jv_free(changed);
	if (why.len) {
		phase_reason(ph, "%s", why.buf);
		goto out;
	}
	if (stage_run_tests(&run, &w) < 0)
		goto out;
	int failed = (int)json_get_num(run, "failed", 0), passed = (int)json_get_num(run, "passed", 0);
	phase_set(ph, "integration", json_set(jv_copy(doc), "tests", run_summary(run)));
	if (failed > 0 || passed == 0) {
		phase_reason(ph, "the tests no longer pass after integration: %d failed, %d passed", failed, passed);
		goto out;
	}
	phase_reason(ph, "%s starts it; %d tests pass", json_get_str(doc, "run_command"), passed);
	status = stage_commit(&w, "forge compile: entry point, build files, README") < 0 ? "failed" : "ok";
out:
	buf_release(&why);
	free(prompt);
	jv_free(doc);
	jv_free(run);
	stage_work_release(&w);
	return status;
}

const struct phase_spec stage_integrate = {
	.name = "integrate",
	.program = "forge-stage integrate",
	.synopsis = "[OPTIONS] < STATE",
	.description = "forge compile's integration: the model adds the product's entry point, build files "
		       "and README in the project; the stage checks that every file it names exists, that no "
		       "test changed, and that the tests still pass. Output: the state with `integration`.",
	.extra_help = "Exit status: 0 integrated, 1 no implementation (skipped), 2 bad input, 3 breaker, "
		      "4 human needed, 5 a file missing, a test failing, or the model failed.\n",
	.needs_input = true,
	.model_options = true,
	.guard = integrate_guard,
	.run = integrate_run,
};

/* ---- review -------------------------------------------------------------- */

static const char *review_guard(struct phase *ph)
{
	return stage_has(ph, "rules") ? NULL : "no rule set in the state: the review stage needs `rules`";
}

static char *review_prompt(struct stage_work *w, jv run, jv findings)
{
	static const char *const docs[] = { "rules", "contracts", NULL };
	struct buf b = BUF_INIT;

	buf_adds(&b, "# Review the product against its rules\n\n");
	stage_context(&b, w, docs);
	char *r = json_dumps(json_get(run, "results"), true), *f = json_dumps(jv_copy(findings), true);
	buf_addf(&b, "## The tests, run by Forge\n\n%s\n\n## The static tools' findings\n\n%s\n", r, f);
	free(r);
	free(f);
	return buf_detach(&b, NULL);
}

/* The first failing test of rule in run, or NULL.  Borrowed from run. */
static const char *failing_test(jv run, const char *rule, const char **message)
{
	jv results = json_get(run, "results");
	const char *found = NULL;

	jv_array_foreach(results, i, r) {
		const char *rr = json_get_str(r, "rule"), *st = json_get_str(r, "status");
		if (!found && rr && strcmp(rr, rule) == 0 && st && strcmp(st, "failed") == 0) {
			found = json_get_str(r, "test");
			*message = json_get_str(r, "message");
		}
		jv_free(r);
	}
	jv_free(results);
	return found;
}

/* The model's entry for rule id, or jv_null(). */
static jv judged(jv rules, const char *id)
{
	jv found = jv_null();

	jv_array_foreach(rules, i, r) {
		const char *rid = json_get_str(r, "id");
		if (jv_get_kind(found) == JV_KIND_NULL && rid && strcmp(rid, id) == 0)
			found = jv_copy(r);
		jv_free(r);
	}
	return found;
}

/* The rules' verdicts: the model's, overruled by the real tests. */
static jv verdicts(struct phase *ph, jv doc, jv run, jv *violated)
{
	jv ids = stage_rule_ids(ph), model = json_get(doc, "rules"), out = jv_array();

	*violated = jv_array();
	jv_array_foreach(ids, i, id) {
		const char *rule = jv_string_value(id), *msg = NULL;
		const char *test = failing_test(run, rule, &msg);
		jv v = judged(model, rule);
		if (test) {
			jv_free(v);
			v = json_set(json_set(jv_object(), "id", jv_copy(id)), "status", jv_string("violated"));
			v = json_set(v, "evidence", jv_string_fmt("the test %s fails%s%s", test, msg ? ": " : "",
							  msg ? msg : ""));
		} else if (jv_get_kind(v) == JV_KIND_NULL) {
			jv_free(v);
			v = json_set(json_set(jv_object(), "id", jv_copy(id)), "status", jv_string("unclear"));
			v = json_set(v, "evidence", jv_string("the review did not judge this rule"));
		}
		const char *st = json_get_str(v, "status");
		if (st && strcmp(st, "violated") == 0)
			*violated = jv_array_append(*violated, jv_copy(id));
		out = jv_array_append(out, v);
		jv_free(id);
	}
	jv_free(ids);
	jv_free(model);
	return out;
}

/* Count the error-level findings. */
static int errors_in(jv findings)
{
	int n = 0;

	jv_array_foreach(findings, i, f) {
		const char *s = json_get_str(f, "severity");
		n += s && strcmp(s, "error") == 0;
		jv_free(f);
	}
	return n;
}

/* The model's findings, marked as the model's. */
static jv model_findings(jv doc)
{
	jv list = json_get(doc, "findings"), out = jv_array();

	if (jv_get_kind(list) == JV_KIND_ARRAY)
		jv_array_foreach(list, i, f) {
			out = jv_array_append(out, json_has(f, "tool") ? f : json_set(f, "tool", jv_string("model")));
		}
	jv_free(list);
	return out;
}

static const char *review_run(struct phase *ph)
{
	struct stage_work w;
	const char *status = "failed";
	jv doc = jv_null(), run = jv_null(), tools = jv_null(), findings = jv_null();
	char *prompt = NULL;

	if (stage_work_open(&w, ph, "compile-review", stage_read_tools) < 0)
		goto out;
	phase_progress(ph, "running the static tools");
	if (compile_run_tools(&tools, &findings, w.lang, w.dir, w.policy, w.tmp) < 0) {
		phase_reason(ph, "cannot run the static tools: %s", forge_last_error());
		goto out;
	}
	if (stage_run_tests(&run, &w) < 0)
		goto out;
	prompt = review_prompt(&w, run, findings);
	status = stage_agent(&doc, &w, prompt, "compile_review", "finish");
	if (state_status_of(status) != STATE_OK)
		goto out;
	jv violated;
	jv rules = verdicts(ph, doc, run, &violated);
	findings = jv_array_concat(findings, model_findings(doc));
	int errors = errors_in(findings), nviolated = jv_array_length(jv_copy(violated));
	bool passed = nviolated == 0 && errors == 0;
	jv review = json_set(jv_object(), "passed", jv_bool(passed));
	review = json_set(review, "tools", jv_copy(tools));
	review = json_set(review, "findings", jv_copy(findings));
	review = json_set(review, "rules", rules);
	review = json_set(review, "rules_violated", jv_copy(violated));
	review = json_set(review, "tests", run_summary(run));
	phase_set(ph, "compile_review", review);
	if (passed) {
		struct buf landed = BUF_INIT;
		if (stage_commit(&w, "forge compile: the review, every rule holding") < 0)
			goto out;
		stage_land(&w, &landed);
		phase_reason(ph, "passed: every rule holds, %d finding%s, none an error%s",
			     jv_array_length(jv_copy(findings)), jv_array_length(jv_copy(findings)) == 1 ? "" : "s",
			     landed.len ? landed.buf : "");
		buf_release(&landed);
		status = "ok";
	} else {
		struct buf b = BUF_INIT;
		if (nviolated) {
			buf_adds(&b, "rules violated: ");
			stage_list(&b, violated, LIST_MAX);
		}
		if (errors)
			buf_addf(&b, "%s%d error-level finding%s", b.len ? "; " : "", errors, errors == 1 ? "" : "s");
		phase_reason(ph, "not passed: %s", b.buf);
		buf_release(&b);
		status = "rejected";
	}
	jv_free(violated);
out:
	free(prompt);
	jv_free(doc);
	jv_free(run);
	jv_free(tools);
	jv_free(findings);
	stage_work_release(&w);
	return status;
}

const struct phase_spec stage_review = {
	.name = "review",
	.program = "forge-stage review",
	.synopsis = "[OPTIONS] < STATE",
	.description = "forge compile's review: the language's static tools (compile.languages.*."
		       "static_tools) really run over the project and the tests run once more; the model "
		       "judges every rule, and a rule whose test fails is violated whatever it says. Passed: "
		       "no violated rule and no error-level finding. Output: the state with `compile_review`.",
	.extra_help = "Exit status: 0 passed, 1 not passed (rejected) or no rule set (skipped), 2 bad input, "
		      "3 breaker, 4 human needed, 5 a tool or the model failed.\n",
	.needs_input = true,
	.model_options = true,
	.guard = review_guard,
	.run = review_run,
};
