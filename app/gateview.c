/* gateview.c - what a human gate shows; see gateview.h. */
#include "app/gateview.h"
#include "app/term.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "data/config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SUMMARY_ITEMS 8         /* tasks, findings, failures shown before "… N more" */
#define DIFFSTAT_FILES 12
#define DOCUMENT_LINES 40       /* of a node gate's document, before "… N more" */

static bool starts(const char *s, const char *prefix)
{
	return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

enum gateview_kind gateview_kind_of(const char *id)
{
	if (!id)
		return GATEVIEW_OTHER;
	if (starts(id, "architecture_approval") || starts(id, "plan_") || starts(id, "escalation_plan"))
		return GATEVIEW_PLAN;
	if (starts(id, "review_") || starts(id, "security_findings") || starts(id, "implement_") ||
	    starts(id, "escalation_review") || starts(id, "escalation_implement"))
		return GATEVIEW_REVIEW;
	if (starts(id, "test_") || starts(id, "escalation_test"))
		return GATEVIEW_TESTS;
	if (strstr(id, "_deploy") || starts(id, "deploy_") || starts(id, "escalation_deploy"))
		return GATEVIEW_DEPLOY;
	return GATEVIEW_OTHER;
}

const char *gateview_kind_name(enum gateview_kind k)
{
	static const char *const names[] = { "plan", "review", "tests", "deploy", "other" };
	return names[k];
}

/* ---- pieces -------------------------------------------------------------- */

struct view {
	struct buf b;
	bool color;
	bool full;              /* everything, not a summary */
};

static const char *sgr(struct view *v, enum term_style st)
{
	return term_sgr(v->color, st);
}

static void heading(struct view *v, const char *title)
{
	buf_addf(&v->b, "  %s%s%s\n", sgr(v, TERM_BOLD), title, sgr(v, TERM_RESET));
}

/* An indented text, each of its lines (the first `max` lines; 0: all). */
static void lines(struct view *v, const char *indent, const char *text, int max)
{
	int n = 0;

	for (const char *p = text; p && *p && (max <= 0 || n < max); n++) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		buf_addf(&v->b, "%s%.*s\n", indent, (int)len, p);
		p = nl ? nl + 1 : NULL;
	}
}

static void more(struct view *v, int shown, int total)
{
	if (total > shown)
		buf_addf(&v->b, "    … %d more ([v] shows all)\n", total - shown);
}

/* obj.key when it is an array, else an empty one (new reference). */
static jv array_of(jv obj, const char *key)
{
	jv a = json_get(obj, key);

	if (jv_get_kind(a) == JV_KIND_ARRAY)
		return a;
	jv_free(a);
	return jv_array();
}

static int length(jv a)
{
	return jv_get_kind(a) == JV_KIND_ARRAY ? jv_array_length(jv_copy(a)) : 0;
}

static enum term_style risk_style(const char *level)
{
	if (level && (strcmp(level, "high") == 0 || strcmp(level, "critical") == 0))
		return TERM_RED;
	return level && strcmp(level, "medium") == 0 ? TERM_YELLOW : TERM_GREEN;
}

static enum term_style severity_style(const char *sev)
{
	if (sev && (strcmp(sev, "critical") == 0 || strcmp(sev, "error") == 0))
		return TERM_RED;
	return sev && strcmp(sev, "warning") == 0 ? TERM_YELLOW : TERM_DIM;
}

/* A number or string field as text ("" when absent). */
static void scalar(char *out, size_t n, jv obj, const char *key)
{
	jv x = json_get(obj, key);

	out[0] = '\0';
	if (jv_get_kind(x) == JV_KIND_STRING)
		snprintf(out, n, "%s", jv_string_value(x));
	else if (jv_get_kind(x) == JV_KIND_NUMBER)
		snprintf(out, n, "%g", jv_number_value(x));
	jv_free(x);
}

/* ", "-joined strings of an array. */
static void joined(struct view *v, jv arr)
{
	int i = 0;

	if (jv_get_kind(arr) != JV_KIND_ARRAY)
		return;
	jv_array_foreach(arr, k, x) {
		if (jv_get_kind(x) == JV_KIND_STRING)
			buf_addf(&v->b, "%s%s", i++ ? ", " : "", jv_string_value(x));
		jv_free(x);
		(void)k;
	}
}

static void risk(struct view *v, jv r)
{
	const char *level = json_get_str(r, "level");
	jv reasons = array_of(r, "reasons");

	buf_addf(&v->b, "  Risk: %s%s%s", sgr(v, risk_style(level)), level ? level : "not assessed",
		 sgr(v, TERM_RESET));
	if (json_has(r, "score"))
		buf_addf(&v->b, " (score %.2f)", json_get_num(r, "score", 0));
	buf_addch(&v->b, '\n');
	jv_array_foreach(reasons, i, x) {
		if (jv_get_kind(x) == JV_KIND_STRING)
			buf_addf(&v->b, "    - %s\n", jv_string_value(x));
		jv_free(x);
		(void)i;
	}
	jv_free(reasons);
}

/* ---- plan ---------------------------------------------------------------- */

static void plan_task(struct view *v, jv t)
{
	const char *id = json_get_str(t, "id"), *title = json_get_str(t, "title");
	jv files = array_of(t, "files"), deps = array_of(t, "depends_on");

	buf_addf(&v->b, "    %s%s%s  %s\n", sgr(v, TERM_CYAN), id ? id : "-", sgr(v, TERM_RESET),
		 title ? title : "(no title)");
	if (length(files)) {
		buf_adds(&v->b, "        files: ");
		joined(v, files);
		buf_addch(&v->b, '\n');
	}
	if (v->full) {
		lines(v, "        ", json_get_str(t, "description"), 0);
		if (length(deps)) {
			buf_adds(&v->b, "        after: ");
			joined(v, deps);
			buf_addch(&v->b, '\n');
		}
		jv acc = array_of(t, "acceptance");
		jv_array_foreach(acc, i, x) {
			if (jv_get_kind(x) == JV_KIND_STRING)
				buf_addf(&v->b, "        ✓ %s\n", jv_string_value(x));
			jv_free(x);
			(void)i;
		}
		jv_free(acc);
	}
	jv_free(files);
	jv_free(deps);
}

/* architecture: {components, interfaces, decisions}: [text or {name, description}] */
static void architecture(struct view *v, jv arch)
{
	static const char *const parts[] = { "components", "interfaces", "decisions" };

	for (size_t p = 0; p < 3; p++) {
		jv list = array_of(arch, parts[p]);
		if (length(list))
			buf_addf(&v->b, "  Architecture, %s:\n", parts[p]);
		jv_array_foreach(list, i, x) {
			const char *name = jv_get_kind(x) == JV_KIND_STRING ? jv_string_value(x) : json_get_str(x, "name");
			const char *d = json_get_str(x, "description");
			if (!name && !d) {
				char *js = json_dumps(jv_copy(x), false);
				buf_addf(&v->b, "    - %s\n", js);
				free(js);
			} else {
				buf_addf(&v->b, "    - %s%s%s\n", name ? name : "", name && d ? ": " : "", d ? d : "");
			}
			jv_free(x);
			(void)i;
		}
		jv_free(list);
	}
}

static void view_plan(struct view *v, jv state)
{
	jv plan = json_get(state, "plan"), r = json_get(plan, "risk"), est = json_get(plan, "estimates");
	jv tasks = array_of(plan, "tasks");
	const char *summary = json_get_str(plan, "summary");
	char cx[64], effort[64];
	int n = length(tasks), shown = 0;

	if (jv_get_kind(plan) != JV_KIND_OBJECT) {
		buf_adds(&v->b, "  (the run has no plan yet)\n");
		goto out;
	}
	buf_addf(&v->b, "  %sPlan:%s %s\n", sgr(v, TERM_BOLD), sgr(v, TERM_RESET), summary ? summary : "(no summary)");
	risk(v, r);
	scalar(cx, sizeof cx, est, "complexity");
	scalar(effort, sizeof effort, est, "effort");
	if (*cx || *effort)
		buf_addf(&v->b, "  Estimate: %s%s%s%s%s\n", *cx ? "complexity " : "", cx, *cx && *effort ? ", " : "",
			 *effort ? "effort " : "", effort);
	buf_addf(&v->b, "  Tasks (%d):\n", n);
	jv_array_foreach(tasks, i, t) {
		if (v->full || shown < SUMMARY_ITEMS) {
			plan_task(v, t);
			shown++;
		}
		jv_free(t);
		(void)i;
	}
	more(v, shown, n);
	if (v->full) {
		jv arch = json_get(plan, "architecture");
		architecture(v, arch);
		jv_free(arch);
		char *js = json_dumps(jv_copy(plan), true);
		buf_addf(&v->b, "\n  The plan as JSON:\n");
		lines(v, "    ", js, 0);
		free(js);
	}
out:
	jv_free(plan);
	jv_free(r);
	jv_free(est);
	jv_free(tasks);
}

/* ---- review -------------------------------------------------------------- */

/* The diff stat: changes.files when it has counts, else counted from the diff. */
static void diffstat(struct view *v, jv changes)
{
	jv files = array_of(changes, "files");
	const char *diff = json_get_str(changes, "diff");
	long add = 0, del = 0;
	int n = 0;

	if (length(files)) {
		jv_array_foreach(files, i, f) {
			long a = (long)json_get_num(f, "additions", 0), d = (long)json_get_num(f, "deletions", 0);
			const char *path = json_get_str(f, "path"), *action = json_get_str(f, "action");
			if (v->full || n < DIFFSTAT_FILES)
				buf_addf(&v->b, "    %s  %s+%ld%s %s-%ld%s%s%s\n", path ? path : "?", sgr(v, TERM_GREEN), a,
					 sgr(v, TERM_RESET), sgr(v, TERM_RED), d, sgr(v, TERM_RESET),
					 action && strcmp(action, "modify") != 0 ? "  " : "",
					 action && strcmp(action, "modify") != 0 ? action : "");
			add += a;
			del += d;
			n++;
			jv_free(f);
			(void)i;
		}
	} else if (diff) {
		/* one "+++ b/PATH" per file; lines after it count */
		for (const char *p = diff; *p;) {
			const char *nl = strchr(p, '\n');
			size_t len = nl ? (size_t)(nl - p) : strlen(p);
			if (len > 6 && strncmp(p, "+++ b/", 6) == 0) {
				if (v->full || n < DIFFSTAT_FILES)
					buf_addf(&v->b, "    %.*s\n", (int)(len - 6), p + 6);
				n++;
			} else if (len && p[0] == '+' && strncmp(p, "+++", 3) != 0) {
				add++;
			} else if (len && p[0] == '-' && strncmp(p, "---", 3) != 0) {
				del++;
			}
			p = nl ? nl + 1 : p + len;
		}
	}
	if (!v->full && n > DIFFSTAT_FILES)
		buf_addf(&v->b, "    … %d more files\n", n - DIFFSTAT_FILES);
	if (n)
		buf_addf(&v->b, "    %d file%s changed, %ld insertion%s(+), %ld deletion%s(-)\n", n, n == 1 ? "" : "s",
			 add, add == 1 ? "" : "s", del, del == 1 ? "" : "s");
	else
		buf_adds(&v->b, "    (no changes)\n");
	jv_free(files);
}

static void finding(struct view *v, jv f)
{
	const char *file = json_get_str(f, "file"), *sev = json_get_str(f, "severity");
	const char *msg = json_get_str(f, "message"), *fix = json_get_str(f, "fix");
	char line[32] = "";

	if (json_has(f, "line"))
		snprintf(line, sizeof line, ":%ld", (long)json_get_num(f, "line", 0));
	buf_addf(&v->b, "    %s%s: %s%s%s: %s\n", file ? file : "(no file)", line, sgr(v, severity_style(sev)),
		 sev ? sev : "info", sgr(v, TERM_RESET), msg ? msg : "");
	if (v->full && fix)
		lines(v, "        fix: ", fix, 0);
}

static void view_review(struct view *v, jv state)
{
	jv review = json_get(state, "review"), changes = json_get(state, "changes");
	jv findings = array_of(review, "findings"), r = json_get(review, "risk");
	const char *decision = json_get_str(review, "decision");
	int n = length(findings), shown = 0;

	if (decision)
		buf_addf(&v->b, "  %sReview:%s %s\n", sgr(v, TERM_BOLD), sgr(v, TERM_RESET), decision);
	if (jv_get_kind(r) == JV_KIND_OBJECT)
		risk(v, r);
	heading(v, "Changes:");
	diffstat(v, changes);
	buf_addf(&v->b, "  %sFindings (%d):%s\n", sgr(v, TERM_BOLD), n, sgr(v, TERM_RESET));
	jv_array_foreach(findings, i, f) {
		if (v->full || shown < SUMMARY_ITEMS) {
			finding(v, f);
			shown++;
		}
		jv_free(f);
		(void)i;
	}
	more(v, shown, n);
	if (v->full && json_get_str(changes, "diff")) {
		buf_adds(&v->b, "\n  The diff:\n");
		lines(v, "", json_get_str(changes, "diff"), 0);
	}
	jv_free(review);
	jv_free(changes);
	jv_free(findings);
	jv_free(r);
}

/* ---- tests --------------------------------------------------------------- */

static void failure(struct view *v, jv f)
{
	const char *test = json_get_str(f, "test"), *file = json_get_str(f, "file");
	const char *msg = json_get_str(f, "message"), *fix = json_get_str(f, "suggested_fix");
	const char *cause = json_get_str(f, "root_cause");

	buf_addf(&v->b, "    %s✗%s %s", sgr(v, TERM_RED), sgr(v, TERM_RESET), test ? test : "(unnamed test)");
	if (file)
		buf_addf(&v->b, "  (%s:%ld)", file, (long)json_get_num(f, "line", 0));
	buf_addch(&v->b, '\n');
	lines(v, "        ", msg, v->full ? 0 : 1);
	if (cause)
		lines(v, "        cause: ", cause, v->full ? 0 : 1);
	if (fix) {
		buf_addf(&v->b, "        suggested fix");
		if (json_has(f, "confidence"))
			buf_addf(&v->b, " (confidence %.2f)", json_get_num(f, "confidence", 0));
		buf_adds(&v->b, ":\n");
		lines(v, "          ", fix, v->full ? 0 : 3);
	}
	if (v->full && json_get_str(f, "output"))
		lines(v, "        | ", json_get_str(f, "output"), 0);
}

static void view_tests(struct view *v, jv state)
{
	jv tests = json_get(state, "tests"), sum = json_get(tests, "summary"), fails = array_of(tests, "failures");
	const char *cmd = json_get_str(tests, "command");
	int n = length(fails), shown = 0;

	if (cmd)
		buf_addf(&v->b, "  %sTests:%s %s\n", sgr(v, TERM_BOLD), sgr(v, TERM_RESET), cmd);
	if (jv_get_kind(sum) == JV_KIND_OBJECT)
		buf_addf(&v->b, "  %.0f run, %.0f passed, %.0f failed, %.0f skipped\n", json_get_num(sum, "total", 0),
			 json_get_num(sum, "passed", 0), json_get_num(sum, "failed", 0), json_get_num(sum, "skipped", 0));
	buf_addf(&v->b, "  %sFailing (%d):%s\n", sgr(v, TERM_BOLD), n, sgr(v, TERM_RESET));
	jv_array_foreach(fails, i, f) {
		if (v->full || shown < SUMMARY_ITEMS) {
			failure(v, f);
			shown++;
		}
		jv_free(f);
		(void)i;
	}
	more(v, shown, n);
	jv_free(tests);
	jv_free(sum);
	jv_free(fails);
}

/* ---- deploy -------------------------------------------------------------- */

static void view_deploy(struct view *v, jv gate, jv state, const struct config *cfg)
{
	jv task = json_get(state, "task"), plan = json_get(state, "plan"), r = json_get(plan, "risk");
	const char *env = json_get_str(task, "environment");
	const char *level = json_get_str(r, "level");
	const char *strategy = cfg ? config_get_str(cfg, "deploy.strategy") : NULL;
	const char *url = cfg ? config_get_str(cfg, "tools.health_url") : NULL;
	char key[64];

	if (!env && cfg)
		env = config_get_str(cfg, "deploy.environment");
	if (!level)
		level = json_get_str(gate, "risk");
	if (!level)
		level = "medium";
	buf_addf(&v->b, "  %sEnvironment:%s %s\n", sgr(v, TERM_BOLD), sgr(v, TERM_RESET), env ? env : "(not set)");
	buf_addf(&v->b, "  Strategy: %s\n", strategy ? strategy : "branch");
	snprintf(key, sizeof key, "deploy.canary.%s", level);
	jv steps = cfg ? config_get(cfg, key) : jv_null();
	buf_addf(&v->b, "  Canary steps (%s risk): ", level);
	if (length(steps)) {
		int k = 0;
		jv_array_foreach(steps, i, x) {
			buf_addf(&v->b, "%s%g%%", k++ ? " → " : "", jv_number_value(x));
			jv_free(x);
			(void)i;
		}
	} else {
		buf_adds(&v->b, "100%");
	}
	buf_addch(&v->b, '\n');
	buf_addf(&v->b, "  Health check: %s\n", url ? url : "(none: tools.health_url is not set)");
	if (url && cfg)
		buf_addf(&v->b, "    error rate ≤ %g, p95 latency ≤ %g ms, %g samples a step\n",
			 config_get_num(cfg, "deploy.health.error_rate_max"),
			 config_get_num(cfg, "deploy.health.latency_ms_max"), config_get_num(cfg, "deploy.health.samples"));
	if (v->full) {
		jv changes = json_get(state, "changes");
		const char *commit = json_get_str(changes, "commit");
		if (commit)
			buf_addf(&v->b, "  Commit: %s\n", commit);
		heading(v, "Changes:");
		diffstat(v, changes);
		jv_free(changes);
	}
	jv_free(steps);
	jv_free(task);
	jv_free(plan);
	jv_free(r);
}

/* ---- other --------------------------------------------------------------- */

static void view_other(struct view *v, jv gate, jv state)
{
	const char *cond = json_get_str(gate, "condition");
	jv cost = json_get(state, "cost"), budget = json_get(state, "budget");

	if (cond)
		buf_addf(&v->b, "  %sCondition:%s %s\n", sgr(v, TERM_BOLD), sgr(v, TERM_RESET), cond);
	buf_addf(&v->b, "  Cost so far: $%.4f", json_get_num(cost, "usd", 0));
	if (json_has(budget, "usd") && json_get_num(budget, "usd", 0) > 0)
		buf_addf(&v->b, " of a $%.2f budget (%.0f%%)", json_get_num(budget, "usd", 0),
			 100 * json_get_num(cost, "usd", 0) / json_get_num(budget, "usd", 1));
	buf_addch(&v->b, '\n');
	if (json_has(cost, "tokens"))
		buf_addf(&v->b, "  Tokens: %.0f\n", json_get_num(cost, "tokens", 0));
	if (v->full) {
		char *js = json_dumps(jv_copy(gate), true);
		buf_adds(&v->b, "\n  The gate:\n");
		lines(v, "    ", js, 0);
		free(js);
	}
	jv_free(cost);
	jv_free(budget);
}

/* ---- a node's gate --------------------------------------------------------- */

/* The documents a pipeline node's gate shows (its "shows": the result keys
 * of the nodes it needs, e.g. compile's rules or db_schema), each as JSON;
 * the summary cut to its first lines. */
static void view_documents(struct view *v, jv gate, jv state)
{
	jv shows = json_get(gate, "shows");

	jv_array_foreach(shows, k, key) {
		jv doc = jv_get_kind(key) == JV_KIND_STRING ? json_get(state, jv_string_value(key)) : jv_null();
		char title[200];

		snprintf(title, sizeof title, "%s:", jv_get_kind(key) == JV_KIND_STRING ? jv_string_value(key) : "?");
		heading(v, title);
		if (jv_get_kind(doc) == JV_KIND_NULL || jv_get_kind(doc) == JV_KIND_INVALID) {
			buf_adds(&v->b, "    (not in the run's state)\n");
		} else {
			jv js = jv_dump_string(jv_copy(doc), JV_PRINT_INDENT_FLAGS(2));
			int total = 1;

			for (const char *p = strchr(jv_string_value(js), '\n'); p; p = strchr(p + 1, '\n'))
				total++;
			lines(v, "    ", jv_string_value(js), v->full ? 0 : DOCUMENT_LINES);
			if (!v->full)
				more(v, DOCUMENT_LINES, total);
			jv_free(js);
		}
		jv_free(doc);
		jv_free(key);
		(void)k;
	}
	jv_free(shows);
	view_other(v, gate, state);
}

/* ---- the views ----------------------------------------------------------- */

static void view_of_kind(struct view *v, enum gateview_kind kind, jv gate, jv state, const struct config *cfg)
{
	switch (kind) {
	case GATEVIEW_PLAN: view_plan(v, state); break;
	case GATEVIEW_REVIEW: view_review(v, state); break;
	case GATEVIEW_TESTS: view_tests(v, state); break;
	case GATEVIEW_DEPLOY: view_deploy(v, gate, state, cfg); break;
	case GATEVIEW_OTHER: view_other(v, gate, state); break;
	}
}

static char *render(jv gate_in, jv state_in, const struct config *cfg, bool color, bool full)
{
	struct view v = { .color = color, .full = full };
	/* (the plan, findings and names are a model's and a repository's
	 * words: shown without their escape sequences, which could redraw
	 * what the person deciding reads; a file's name holding one, or a
	 * newline, quoted as git shows it) */
	jv gate = term_safe(term_quote_paths(jv_copy(gate_in)));
	jv state = term_safe(term_quote_paths(jv_copy(state_in)));
	const char *id = json_get_str(gate, "id"), *prompt = json_get_str(gate, "prompt");

	buf_init(&v.b, 0);
	/* (begun with the program's name, "forge run: gate ...", as the
	 * supervisor's other lines of the gate are: sup_say) */
	buf_addf(&v.b, "\n%s%s: gate %s: %s%s\n", sgr(&v, TERM_BOLD), program_invocation_short_name, id ? id : "?",
		 prompt ? prompt : "", sgr(&v, TERM_RESET));
	/* A pipeline node's own gate shows what the nodes before it made (its
	 * id, LADDER_NODE, named no view: compile's rule set was shown as
	 * "(the run has no plan yet)"). */
	jv shows = json_get(gate, "shows");
	bool documents = jv_get_kind(shows) == JV_KIND_ARRAY && jv_array_length(jv_copy(shows)) > 0;

	jv_free(shows);
	if (documents)
		view_documents(&v, gate, state);
	else
		view_of_kind(&v, gateview_kind_of(id), gate, state, cfg);
	jv_free(gate);
	jv_free(state);
	return buf_detach(&v.b, NULL);
}

char *gateview_summary(jv gate, jv state, const struct config *cfg, bool color)
{
	return render(gate, state, cfg, color, false);
}

char *gateview_full(jv gate, jv state, const struct config *cfg)
{
	return render(gate, state, cfg, false, true);
}

enum prompt_answer gateview_ask(jv gate, jv state, const struct config *cfg, char **note,
				const struct prompt_watch *watch)
{
	char *summary = gateview_summary(gate, state, cfg, term_color(STDERR_FILENO));
	char *full = gateview_full(gate, state, cfg);
	struct prompt_opts o = { .text = summary, .question = "  approve?", .note = true, .full = full,
				 .watch = watch };
	enum prompt_answer a = prompt_ask(note, &o);

	free(summary);
	free(full);
	return a;
}
