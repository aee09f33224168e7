/*
 * stage_build.c - forge compile's tests and code stages (app/stage.h).
 *
 * tests: the agent writes one test per rule into the project (stage_work.h
 * says where), then the stage runs the test command for real: every rule
 * must have a test and every one of them must fail, since nothing is
 * implemented.  A rule without a test, a test that passes already, a test
 * naming a rule the rule set lacks or a test file the document names that
 * does not exist fails the stage with a reason naming them.  Edit mode (the
 * state has a delta): only the tests of new and changed rules are written
 * (and must fail), the tests of removed rules are removed (and must be
 * gone), the other rules keep theirs.  Document: test_suite, rebuilt from
 * the real run, with the SHA-256 of every test file (digests).
 *
 * code: the agent implements until the tests pass; then the stage checks
 * that no test file changed (the digests) and runs the tests itself: ok
 * only when every test passes, else failed naming the failing tests, so the
 * node's retry runs it again (the prompt of a rerun starts with the last
 * run's failures).  Document: implementation.
 */
#include "app/stage.h"
#include "app/stage_work.h"

#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"

#include <stdlib.h>
#include <string.h>

#define LIST_MAX 8

/* ids (array of strings, borrowed) holds id. */
static bool has_id(jv ids, const char *id)
{
	bool found = false;

	if (jv_get_kind(ids) != JV_KIND_ARRAY || !id)
		return false;
	jv_array_foreach(ids, i, s) {
		if (!found && jv_get_kind(s) == JV_KIND_STRING && strcmp(jv_string_value(s), id) == 0)
			found = true;
		jv_free(s);
	}
	return found;
}

/* The ids of delta.KEY (an array of ids, or of {id, …}). */
static jv delta_ids(struct phase *ph, const char *key)
{
	jv delta = json_get(ph->state, "delta"), list = json_get(delta, key), ids = jv_array();

	jv_free(delta);

	if (jv_get_kind(list) == JV_KIND_ARRAY)
		jv_array_foreach(list, i, x) {
			const char *id = jv_get_kind(x) == JV_KIND_STRING ? jv_string_value(x) : json_get_str(x, "id");
			if (id)
				ids = jv_array_append(ids, jv_string(id));
			jv_free(x);
		}
	jv_free(list);
	return ids;
}

/* The failure of a run that read no test at all, for a reason. */
static void add_run_failure(struct buf *b, jv run)
{
	jv results = json_get(run, "results");

	jv_array_foreach(results, i, r) {
		const char *st = json_get_str(r, "status");
		if (!json_get_str(r, "rule") && json_get_str(r, "message") && st && strcmp(st, "failed") == 0)
			buf_addf(b, "; %s: %s", json_get_str(r, "test"), json_get_str(r, "message"));
		jv_free(r);
	}
	jv_free(results);
}

/* ---- tests --------------------------------------------------------------- */

static const char *tests_guard(struct phase *ph)
{
	return stage_has(ph, "rules") ? NULL : "no rule set in the state: the tests stage needs `rules`";
}

static char *tests_prompt(struct stage_work *w, jv red, jv removed)
{
	static const char *const docs[] = { "intent", "flows", "contracts", "rules", "db_schema", NULL };
	struct buf b = BUF_INIT;

	buf_adds(&b, "# Write the product's tests\n\n");
	if (w->edit) {
		buf_adds(&b, "This is a change to a compiled product (its delta below). Write tests only for the "
			     "new and changed rules: ");
		stage_list(&b, red, 1000);
		buf_adds(&b, ". Keep the other rules' tests as they are");
		if (jv_array_length(jv_copy(removed)) > 0) {
			buf_adds(&b, "; delete the tests of the removed rules: ");
			stage_list(&b, removed, 1000);
		}
		buf_adds(&b, ".\n\n");
	} else {
		buf_adds(&b, "Write one test for each rule: ");
		stage_list(&b, red, 1000);
		buf_adds(&b, ".\n\n");
	}
	stage_context(&b, w, docs);
	if (w->edit) {
		static const char *const more[] = { "delta", "test_suite", NULL };
		buf_adds(&b, "# The change\n\n");
		for (size_t i = 0; more[i]; i++) {
			jv v = json_get(w->ph->state, more[i]);
			if (jv_get_kind(v) != JV_KIND_NULL) {
				char *s = json_dumps(v, true);
				buf_addf(&b, "## %s\n\n%s\n\n", more[i], s);
				free(s);
			} else {
				jv_free(v);
			}
		}
	}
	return buf_detach(&b, NULL);
}

/* The document's file for the test named name: the entry whose name is the
 * name or ends with "::name"; else the first entry for rule.  Borrowed. */
static const char *test_file(jv tests, const char *name, const char *rule)
{
	const char *by_rule = NULL, *found = NULL;
	size_t n = strlen(name);

	jv_array_foreach(tests, i, t) {
		const char *tn = json_get_str(t, "name"), *f = json_get_str(t, "file");
		const char *tr = json_get_str(t, "rule");
		size_t m = tn ? strlen(tn) : 0;
		if (!found && tn && f && (strcmp(tn, name) == 0 ||
		    (m > n + 2 && strcmp(tn + m - n, name) == 0 && strncmp(tn + m - n - 2, "::", 2) == 0)))
			found = f;
		if (!by_rule && f && tr && rule && strcasecmp(tr, rule) == 0)
			by_rule = f;
		jv_free(t);
	}
	return found ? found : by_rule;
}

struct red_check {
	jv missing;             /* rules without a test */
	jv green;               /* tests (of rules that must be red) that pass */
	jv unknown;             /* tests naming a rule the rule set lacks */
	jv stale;               /* tests of removed rules */
	jv absent;              /* test files the document names that do not exist */
};

/* Check the real run against the rules; fills c (arrays of names). */
static void check_red(struct red_check *c, jv run, jv ids, jv red, jv removed, jv doc, const char *dir)
{
	jv results = json_get(run, "results");

	c->missing = jv_array();
	c->green = jv_array();
	c->unknown = jv_array();
	c->stale = jv_array();
	c->absent = jv_array();
	jv_array_foreach(ids, i, id) {
		bool tested = false;
		jv_array_foreach(results, k, r) {
			const char *rule = json_get_str(r, "rule");
			if (rule && strcmp(rule, jv_string_value(id)) == 0)
				tested = true;
			jv_free(r);
		}
		if (!tested)
			c->missing = jv_array_append(c->missing, jv_copy(id));
		jv_free(id);
	}
	jv_array_foreach(results, k, r) {
		const char *rule = json_get_str(r, "rule"), *st = json_get_str(r, "status");
		jv name = json_get(r, "test");
		if (!rule)
			jv_free(name);
		else if (has_id(removed, rule))
			c->stale = jv_array_append(c->stale, name);
		else if (!has_id(ids, rule))
			c->unknown = jv_array_append(c->unknown, name);
		else if (has_id(red, rule) && st && strcmp(st, "passed") == 0)
			c->green = jv_array_append(c->green, name);
		else
			jv_free(name);
		jv_free(r);
	}
	jv files = json_get(doc, "tests");
	jv seen = jv_array();
	jv_array_foreach(files, i, t) {
		const char *f = json_get_str(t, "file");
		if (f && !has_id(seen, f)) {
			seen = jv_array_append(seen, jv_string(f));
			jv one = jv_array_append(jv_array(), jv_string(f));
			jv got = compile_digests(dir, one), digest = json_get(got, f);
			if (jv_get_kind(digest) == JV_KIND_NULL)
				c->absent = jv_array_append(c->absent, jv_string(f));
			jv_free(digest);
			jv_free(got);
			jv_free(one);
		}
		jv_free(t);
	}
	jv_free(seen);
	jv_free(files);
	jv_free(results);
}

static void red_check_release(struct red_check *c)
{
	jv_free(c->missing);
	jv_free(c->green);
	jv_free(c->unknown);
	jv_free(c->stale);
	jv_free(c->absent);
}

/* The reason a red check failed into b; false when it did not. */
static bool red_reason(struct buf *b, struct red_check *c)
{
	static const char *const what[] = {
		"rules without a test", "tests that pass before the code exists",
		"tests naming a rule the rule set does not have", "tests of removed rules",
		"test files named in the suite that do not exist",
	};
	jv lists[] = { c->missing, c->green, c->unknown, c->stale, c->absent };
	bool any = false;

	for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
		if (jv_array_length(jv_copy(lists[i])) == 0)
			continue;
		buf_addf(b, "%s%s: ", any ? "; " : "", what[i]);
		stage_list(b, lists[i], LIST_MAX);
		any = true;
	}
	return any;
}

/* The test_suite document from the model's and the real run. */
static jv suite_document(struct stage_work *w, jv doc, jv run, jv ids)
{
	jv model = json_get(doc, "tests"), results = json_get(run, "results"), tests = jv_array();
	jv files = jv_array(), prev = json_get_path(w->ph->state, "test_suite.tests");
	int n = 0;

	/* edit mode: the model names the tests it wrote, the last suite the others */
	if (jv_get_kind(prev) == JV_KIND_ARRAY)
		model = jv_array_concat(model, jv_copy(prev));

	jv_array_foreach(results, i, r) {
		const char *rule = json_get_str(r, "rule"), *name = json_get_str(r, "test");
		if (rule && has_id(ids, rule)) {
			const char *f = test_file(model, name, rule);
			if (!f)
				f = json_get_str(r, "file");
			jv t = json_set(jv_object(), "id", jv_string_fmt("T%d", ++n));
			t = json_set(t, "rule", jv_string(rule));
			t = json_set(t, "name", jv_string(name));
			t = json_set(t, "file", jv_string(f ? f : "(unknown)"));
			t = json_set(t, "status", jv_string(strcmp(json_get_str(r, "status"), "passed") == 0
							    ? "passing" : "failing"));
			tests = jv_array_append(tests, t);
			if (f && !has_id(files, f))
				files = jv_array_append(files, jv_string(f));
		}
		jv_free(r);
	}
	jv_array_foreach(model, i, t) {
		const char *f = json_get_str(t, "file");
		if (f && !has_id(files, f))
			files = jv_array_append(files, jv_string(f));
		jv_free(t);
	}
	jv out = json_set(jv_copy(doc), "language", jv_string(w->lang->name));
	out = json_set(out, "framework", jv_string(w->lang->framework));
	out = json_set(out, "command", jv_string(w->lang->test_command));
	out = json_set(out, "tests", tests);
	out = json_set(out, "digests", compile_digests(w->dir, files));
	out = json_set(out, "run", jv_copy(run));
	jv_free(files);
	jv_free(model);
	jv_free(prev);
	jv_free(results);
	return out;
}

static const char *tests_run(struct phase *ph)
{
	struct stage_work w;
	const char *status = "failed";
	jv ids = stage_rule_ids(ph), red = jv_null(), removed = jv_null(), doc = jv_null(), run = jv_null();
	char *prompt = NULL;

	if (stage_work_open(&w, ph, "compile-tests", stage_write_tools) < 0)
		goto out;
	if (w.edit) {
		red = jv_array_concat(delta_ids(ph, "new"), delta_ids(ph, "change"));
		removed = delta_ids(ph, "remove");
	} else {
		red = jv_copy(ids);
		removed = jv_array();
	}
	prompt = tests_prompt(&w, red, removed);
	status = stage_agent(&doc, &w, prompt, "test_suite", NULL);
	if (state_status_of(status) != STATE_OK)
		goto out;
	status = "failed";
	if (stage_run_tests(&run, &w) < 0)
		goto out;
	struct red_check c;
	struct buf why = BUF_INIT;
	check_red(&c, run, ids, red, removed, doc, w.dir);
	bool bad = red_reason(&why, &c);
	red_check_release(&c);
	if (bad) {
		if (json_get_num(run, "passed", 0) + json_get_num(run, "failed", 0) <= 1)
			add_run_failure(&why, run);
		phase_reason(ph, "the tests are not a failing suite: %s", why.buf);
		buf_release(&why);
		goto out;
	}
	buf_release(&why);
	jv suite = suite_document(&w, doc, run, ids);
	phase_reason(ph, "%d tests for %d rules, %d failing as they must", jv_array_length(json_get(suite, "tests")),
		     jv_array_length(jv_copy(ids)), (int)json_get_num(run, "failed", 0));
	phase_set(ph, "test_suite", suite);
	status = stage_commit(&w, "forge compile: the tests, one per rule, failing") < 0 ? "failed" : "ok";
out:
	free(prompt);
	jv_free(ids);
	jv_free(red);
	jv_free(removed);
	jv_free(doc);
	jv_free(run);
	stage_work_release(&w);
	return status;
}

const struct phase_spec stage_tests = {
	.name = "tests",
	.program = "forge-stage tests",
	.synopsis = "[OPTIONS] < STATE",
	.description = "forge compile's failing tests: the model writes one test per rule of the state's "
		       "rule set into the project (the run's worktree, task.worktree, else the current "
		       "directory), then the test command of the language's profile (compile.languages) "
		       "really runs: every rule needs a test and every test must fail, since nothing is "
		       "implemented. Output: the state with `test_suite`.",
	.extra_help = "Exit status: 0 a failing suite, 1 no rule set (skipped), 2 bad input, 3 breaker, "
		      "4 human needed, 5 a rule without a test, a test that passes, or the model failed.\n",
	.needs_input = true,
	.model_options = true,
	.guard = tests_guard,
	.run = tests_run,
};

/* ---- code ---------------------------------------------------------------- */

static const char *code_guard(struct phase *ph)
{
	return stage_has(ph, "test_suite") ? NULL : "no test suite in the state: the code stage needs `test_suite`";
}

/* The failing tests of run as "name (rule)" strings. */
static jv failing(jv run)
{
	jv results = json_get(run, "results"), out = jv_array();

	jv_array_foreach(results, i, r) {
		const char *st = json_get_str(r, "status"), *rule = json_get_str(r, "rule");
		if (st && strcmp(st, "failed") == 0)
			out = jv_array_append(out, rule ? jv_string_fmt("%s (%s)", json_get_str(r, "test"), rule)
							: json_get(r, "test"));
		jv_free(r);
	}
	jv_free(results);
	return out;
}

/* The suite's tests that the run does not report (deleted or renamed). */
static jv vanished(struct phase *ph, jv run)
{
	jv tests = json_get_path(ph->state, "test_suite.tests"), results = json_get(run, "results"), out = jv_array();

	jv_array_foreach(tests, i, t) {
		const char *name = json_get_str(t, "name");
		bool found = false;
		jv_array_foreach(results, k, r) {
			if (name && !found && strcmp(json_get_str(r, "test"), name) == 0)
				found = true;
			jv_free(r);
		}
		if (name && !found)
			out = jv_array_append(out, jv_string(name));
		jv_free(t);
	}
	jv_free(tests);
	jv_free(results);
	return out;
}

static char *code_prompt(struct stage_work *w)
{
	static const char *const docs[] = { "intent", "contracts", "rules", "db_schema", NULL };
	struct buf b = BUF_INIT;
	jv last = json_get_path(w->ph->state, "implementation.results");

	if (jv_get_kind(last) == JV_KIND_ARRAY) {
		jv run = json_set(jv_object(), "results", jv_copy(last)), f = failing(run);
		jv_free(run);
		if (jv_array_length(jv_copy(f)) > 0) {
			buf_adds(&b, "# Still failing after the last attempt\n\n");
			stage_list(&b, f, 50);
			buf_adds(&b, "\n\n");
		}
		jv_free(f);
	}
	jv_free(last);
	buf_adds(&b, "# Implement the product until every test passes\n\n");
	stage_context(&b, w, docs);
	jv suite = json_get(w->ph->state, "test_suite");
	jv tests = json_get(suite, "tests"), run = json_get(suite, "run");
	char *s = json_dumps(tests, true);
	buf_addf(&b, "## The tests (do not change them)\n\n%s\n\n", s);
	free(s);
	const char *out = json_get_str(run, "output");
	if (out && *out)
		buf_addf(&b, "## Their output now\n\n```\n%s\n```\n", out);
	jv_free(run);
	jv_free(suite);
	return buf_detach(&b, NULL);
}

static const char *code_run(struct phase *ph)
{
	struct stage_work w;
	const char *status = "failed";
	jv doc = jv_null(), run = jv_null();
	char *prompt = NULL;

	if (stage_work_open(&w, ph, "compile-code", stage_write_tools) < 0)
		goto out;
	prompt = code_prompt(&w);
	status = stage_agent(&doc, &w, prompt, "implementation", "finish");
	if (state_status_of(status) != STATE_OK)
		goto out;
	status = "failed";
	jv changed = stage_changed_tests(&w);
	if (jv_array_length(jv_copy(changed)) > 0) {
		struct buf b = BUF_INIT;
		stage_list(&b, changed, LIST_MAX);
		phase_reason(ph, "the code stage changed the tests: %s", b.buf);
		buf_release(&b);
		jv_free(changed);
		goto out;
	}
	jv_free(changed);
	if (stage_run_tests(&run, &w) < 0)
		goto out;
	jv fail = failing(run), gone = vanished(ph, run);
	bool passed = jv_array_length(jv_copy(fail)) == 0 && jv_array_length(jv_copy(gone)) == 0 &&
		      json_get_num(run, "passed", 0) > 0;
	jv impl = json_set(jv_object(), "passed", jv_bool(passed));
	impl = json_set(impl, "iterations", jv_number(w.iterations));
	impl = json_set(impl, "command", json_get(run, "command"));
	impl = json_set(impl, "results", json_get(run, "results"));
	impl = json_set(impl, "files", json_get(doc, "files"));
	if (json_get_str(doc, "summary"))
		impl = json_set(impl, "summary", json_get(doc, "summary"));
	phase_set(ph, "implementation", impl);
	if (passed) {
		phase_reason(ph, "all %d tests pass", (int)json_get_num(run, "passed", 0));
		status = stage_commit(&w, "forge compile: the code, every test passing") < 0 ? "failed" : "ok";
	} else {
		struct buf b = BUF_INIT;
		if (jv_array_length(jv_copy(fail)) > 0) {
			buf_addf(&b, "%d test%s fail: ", jv_array_length(jv_copy(fail)),
				 jv_array_length(jv_copy(fail)) == 1 ? "" : "s");
			stage_list(&b, fail, LIST_MAX);
		}
		if (jv_array_length(jv_copy(gone)) > 0) {
			buf_addf(&b, "%stests that did not run: ", b.len ? "; " : "");
			stage_list(&b, gone, LIST_MAX);
		}
		if (!b.len)
			buf_adds(&b, "no test ran");
		phase_reason(ph, "%s", b.buf);
		buf_release(&b);
	}
	jv_free(fail);
	jv_free(gone);
out:
	free(prompt);
	jv_free(doc);
	jv_free(run);
	stage_work_release(&w);
	return status;
}

const struct phase_spec stage_code = {
	.name = "code",
	.program = "forge-stage code",
	.synopsis = "[OPTIONS] < STATE",
	.description = "forge compile's implementation: the model writes the product's code in the project "
		       "until the tests of `test_suite` pass; the stage then checks that no test file changed "
		       "and runs the tests itself: ok only when every test passes. Output: the state with "
		       "`implementation`.",
	.extra_help = "Exit status: 0 every test passes, 1 no test suite (skipped), 2 bad input, 3 breaker, "
		      "4 human needed, 5 a test fails, a test file changed, or the model failed.\n",
	.needs_input = true,
	.model_options = true,
	.guard = code_guard,
	.run = code_run,
};
