/*
 * forge-plan - task → plan (DESIGN.md §3; seed 000 §7.1).
 *
 * Reads a task (a state, {"task": …}, plain text, or --task), looks at the
 * repository - the run's worktree when the state has one, else the checkout
 * - (tracked files, build files, README, languages and commands; memories
 * and skills through phase_perceive) and runs the agent loop with
 * read-only tools (read_file, list_files, grep).  The agent's `finish`
 * input is the plan, checked against state.schema.json $defs/plan (a plan
 * that does not match goes back to the model with the error).  Every plan
 * is kept as an append-only version (plan_versions, lib/store/plans.h): version 1
 * "initial plan", a re-plan of the same trace adds N+1 with a changelog of
 * what changed; plan.versioned is emitted and plan.version set.
 */
#include "core/buf.h"
#include "data/config.h"
#include "data/schema.h"
#include "core/forge.h"
#include "git/git.h"
#include "core/ids.h"
#include "core/json.h"
#include "app/phase.h"
#include "app/runshare.h"
#include "store/plans.h"
#include "data/project.h"
#include "data/risk.h"
#include "os/sandbox.h"
#include "store/store.h"
#include "agent/tools.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FILES_MAX 300           /* tracked files listed in the prompt */
#define README_MAX 4000         /* bytes of the README's head */
#define BUILD_FILE_MAX 3000     /* bytes of each build file */

static const char *const plan_tools[] = { "read_file", "list_files", "grep", NULL };

/* ---- the result schema ---------------------------------------------------- */

/* state.schema.json $defs/plan as one schema without $refs (or jv_null()). */
static jv plan_schema(void)
{
	jv plan = schema_for_model("state.schema.json", "plan");

	/* the version is Forge's to set, not the model's */
	jv props = json_get(plan, "properties");
	if (jv_get_kind(props) == JV_KIND_OBJECT)
		plan = json_set(plan, "properties", jv_object_delete(props, jv_string("version")));
	else
		jv_free(props);
	return plan;
}

/* ---- what the schema cannot say ------------------------------------------- */

#define PLAN_PROBLEMS_MAX 8     /* problems named in one answer to the model */

/* Whether a task's file stays inside the repository: a relative path whose
 * ".." components never climb above its root. */
static bool inside_repo(const char *path)
{
	int depth = 0;

	if (*path == '/')
		return false;
	for (const char *c = path; *c;) {
		size_t n = strcspn(c, "/");

		if (n == 2 && c[0] == '.' && c[1] == '.') {
			if (--depth < 0)
				return false;
		} else if (n && !(n == 1 && c[0] == '.')) {
			depth++;
		}
		c += n + (c[n] == '/');
	}
	return true;
}

/* The index of the task with id, or -1. */
static int task_index(const char *const *ids, int n, const char *id)
{
	for (int i = 0; i < n; i++)
		if (ids[i] && strcmp(ids[i], id) == 0)
			return i;
	return -1;
}

/* One problem more for problems (at most PLAN_PROBLEMS_MAX are named). */
static void problem(struct buf *b, int *count, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void problem(struct buf *b, int *count, const char *fmt, ...)
{
	va_list ap;

	if ((*count)++ >= PLAN_PROBLEMS_MAX)
		return;
	if (b->len)
		buf_adds(b, "; ");
	va_start(ap, fmt);
	buf_vaddf(b, fmt, ap);
	va_end(ap);
}

/* The first of a task's dependencies not yet settled (there is one). */
static int first_unsettled(const int *deps, int ndeps, const bool *settled)
{
	for (int k = 0; k < ndeps; k++)
		if (!settled[deps[k]])
			return deps[k];
	return -1;
}

/*
 * A cycle in depends_on, "t1 -> t2 -> t1", appended to b; false when there
 * is none.  deps[i] lists the indexes task i depends on (ndeps[i] of them,
 * all known).  Tasks whose dependencies are all settled are taken out until
 * none is left; each one left then depends on another one left, so
 * following them from any one of them comes round to a cycle.
 */
static bool find_cycle(struct buf *b, const char *const *ids, int n, int *const *deps, const int *ndeps)
{
	bool *settled = xcalloc((size_t)n + 1, sizeof *settled);
	bool *seen = xcalloc((size_t)n + 1, sizeof *seen);
	bool changed = true, found = false;

	while (changed) {
		changed = false;
		for (int i = 0; i < n; i++) {
			bool ready = !settled[i];

			for (int k = 0; ready && k < ndeps[i]; k++)
				ready = settled[deps[i][k]];
			if (ready)
				settled[i] = changed = true;
		}
	}
	for (int start = 0; start < n && !found; start++) {
		if (settled[start])
			continue;
		int at = start;
		while (!seen[at]) {
			seen[at] = true;
			at = first_unsettled(deps[at], ndeps[at], settled);
		}
		/* at is on the cycle: the same steps again come back to it */
		int from = at;
		buf_adds(b, ids[from]);
		do {
			at = first_unsettled(deps[at], ndeps[at], settled);
			buf_addf(b, " -> %s", ids[at]);
		} while (at != from);
		found = true;
	}
	free(settled);
	free(seen);
	return found;
}

/*
 * The plan's tasks agree with each other (agent_config.result_check): ids
 * unique, each depends_on names earlier tasks of the plan (the prompt's
 * contract; implement carries the tasks out in their order), no cycle, the
 * files inside the repository.  Borrows plan; 0, or -1 after forge_error()
 * with every problem (up to PLAN_PROBLEMS_MAX), for the model to fix.
 */
static int plan_check(jv plan)
{
	jv tasks = json_get(plan, "tasks");
	int n = jv_get_kind(tasks) == JV_KIND_ARRAY ? jv_array_length(jv_copy(tasks)) : 0;
	const char **ids = xcalloc((size_t)n + 1, sizeof *ids);
	int **deps = xcalloc((size_t)n + 1, sizeof *deps);
	int *ndeps = xcalloc((size_t)n + 1, sizeof *ndeps);
	struct buf b = BUF_INIT, cycle = BUF_INIT;
	int count = 0, rc = 0;
	bool unsure = false;	/* a duplicate or unknown id: the order is not checked */

	/* (the strings stay alive: tasks holds them) */
	for (int i = 0; i < n; i++) {
		jv t = jv_array_get(jv_copy(tasks), i);

		ids[i] = json_get_str(t, "id");
		if (!ids[i])
			ids[i] = "";	/* (the schema asks for one) */
		jv_free(t);
		int dup = task_index(ids, i, ids[i]);
		if (dup >= 0) {
			problem(&b, &count, "tasks %d and %d both have the id '%s': give each task its own id",
				dup + 1, i + 1, ids[i]);
			unsure = true;
		}
	}
	for (int i = 0; i < n; i++) {
		jv t = jv_array_get(jv_copy(tasks), i);
		jv d = json_get(t, "depends_on"), files = json_get(t, "files");
		const char *id = ids[i];

		if (jv_get_kind(d) == JV_KIND_ARRAY) {
			deps[i] = xcalloc((size_t)jv_array_length(jv_copy(d)) + 1, sizeof **deps);
			jv_array_foreach(d, k, dep) {
				(void)k;
				const char *name = jv_get_kind(dep) == JV_KIND_STRING ? jv_string_value(dep) : "";
				int at = task_index(ids, n, name);

				if (at < 0) {
					problem(&b, &count, "task '%s' depends on '%s', which is not a task of this plan",
						id, name);
					unsure = true;
				} else if (at == i) {
					problem(&b, &count, "task '%s' depends on itself", id);
					unsure = true;
				} else {
					deps[i][ndeps[i]++] = at;
				}
				jv_free(dep);
			}
		}
		if (jv_get_kind(files) == JV_KIND_ARRAY) {
			jv_array_foreach(files, k, f) {
				(void)k;
				if (jv_get_kind(f) == JV_KIND_STRING && !inside_repo(jv_string_value(f)))
					problem(&b, &count, "task '%s' names the file '%s', which is outside the "
						"repository: name files by their path from the repository's root", id,
						jv_string_value(f));
				jv_free(f);
			}
		}
		jv_free(d);
		jv_free(files);
		jv_free(t);
	}
	if (!unsure && find_cycle(&cycle, ids, n, deps, ndeps))
		problem(&b, &count, "depends_on goes round in a cycle (%s): a task depends only on tasks "
			"before it", cycle.buf);
	else if (!unsure)
		for (int i = 0; i < n; i++)
			for (int k = 0; k < ndeps[i]; k++)
				if (deps[i][k] > i)
					problem(&b, &count, "task '%s' depends on '%s', which comes after it: the "
						"tasks are carried out in the order listed, so put '%s' before '%s'",
						ids[i], ids[deps[i][k]], ids[deps[i][k]], ids[i]);
	if (count > PLAN_PROBLEMS_MAX)
		buf_addf(&b, "; and %d more", count - PLAN_PROBLEMS_MAX);
	if (count)
		rc = forge_error("%s", b.buf);
	for (int i = 0; i < n; i++)
		free(deps[i]);
	free(deps);
	free(ndeps);
	free(ids);
	buf_release(&b);
	buf_release(&cycle);
	jv_free(tasks);
	return rc;
}

/* ---- the environment ------------------------------------------------------ */

/* Up to max bytes of root/name, cut at the last newline; NULL when absent
 * or not a regular file (a FIFO there would block the open for ever). */
static char *read_head(const char *root, const char *name, size_t max)
{
	struct buf path = BUF_INIT, b = BUF_INIT;
	char chunk[4096];
	size_t n;
	bool cut = false;

	buf_addf(&path, "%s/%s", root, name);
	int fd = buf_open_regular(path.buf);
	buf_release(&path);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "r");
	if (!f) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
		if (b.len + n > max) {
			buf_add(&b, chunk, max - b.len);
			cut = true;
			break;
		}
		buf_add(&b, chunk, n);
	}
	fclose(f);
	if (cut) {
		char *nl = strrchr(b.buf, '\n');
		if (nl)
			buf_truncate(&b, (size_t)(nl - b.buf) + 1);
		buf_adds(&b, "[…]\n");
	}
	if (!json_utf8_valid(b.buf, b.len)) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

/* The tracked files of the repository at root, one a line, at most
 * FILES_MAX; NULL when root is not a git repository. */
static char *tracked_files(const char *root)
{
	struct buf b = BUF_INIT;
	size_t n;
	jv paths;

	if (forge_git_tracked_files(&paths, &n, root, FILES_MAX) < 0)
		return NULL;
	jv_array_foreach(paths, i, p) {
		buf_addf(&b, "%s\n", jv_string_value(p));
		jv_free(p);
		(void)i;
	}
	jv_free(paths);
	if (n > FILES_MAX)
		buf_addf(&b, "[… and %zu more files]\n", n - FILES_MAX);
	if (n == 0)
		buf_adds(&b, "(no tracked files yet)\n");
	return buf_detach(&b, NULL);
}

struct lang_count {
	const char *name;	/* borrowed from the languages object */
	int count;
};

/* Most files first; a tie by name, so that the line does not depend on the
 * order the file system lists a directory in (tmpfs and ext4 differ). */
static int lang_cmp(const void *a, const void *b)
{
	const struct lang_count *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* "c (12), shell (3)" from project_describe's languages. */
static void languages_line(struct buf *b, jv langs)
{
	jv keys = jv_get_kind(langs) == JV_KIND_OBJECT ? jv_keys(jv_copy(langs)) : jv_array();
	int n = jv_array_length(jv_copy(keys));
	struct lang_count *counts = xcalloc(n ? (size_t)n : 1, sizeof(*counts));

	for (int i = 0; i < n; i++) {
		jv k = jv_array_get(jv_copy(keys), i);	/* kept alive by keys */

		counts[i].name = jv_string_value(k);
		counts[i].count = (int)json_get_num(langs, counts[i].name, 0);
		jv_free(k);
	}
	qsort(counts, (size_t)n, sizeof(*counts), lang_cmp);
	for (int i = 0; i < n; i++)
		buf_addf(b, "%s%s (%d)", i ? ", " : "", counts[i].name, counts[i].count);
	if (!n)
		buf_adds(b, "unknown");
	free(counts);
	jv_free(keys);
}

/* The repository's parts of the prompt, most important first. */
static jv environment(struct phase *ph, const char *root, jv previous, int previous_version)
{
	jv env = jv_object();
	jv desc = jv_null();

	if (jv_get_kind(previous) == JV_KIND_OBJECT) {
		char *text = json_dumps(jv_copy(previous), false);
		struct buf b = BUF_INIT;
		buf_addf(&b, "This task already has a plan (version %d). Update it rather than starting "
			     "over: keep what still holds, change what the task or the code now needs, and "
			     "keep the ids of tasks that stay.\n\n%s", previous_version, text);
		env = json_set(env, "previous_plan", jv_string(b.buf));
		buf_release(&b);
		free(text);
	}
	if (!root) {
		env = json_set(env, "repository", jv_string("(no repository: plan from the task alone)"));
		return env;
	}
	if (project_describe(&desc, root, ph->cfg) == 0) {
		struct buf b = BUF_INIT;
		jv langs = json_get(desc, "languages");
		jv cmds = json_get(desc, "commands");
		buf_addf(&b, "root: %s\nlanguages: ", root);
		languages_line(&b, langs);
		static const char *const which[] = { "build", "test", "lint", "typecheck" };
		for (size_t i = 0; i < sizeof which / sizeof *which; i++) {
			const char *c = json_get_str(cmds, which[i]);
			buf_addf(&b, "\n%s command: %s", which[i], c ? c : "(none)");
		}
		buf_addch(&b, '\n');
		env = json_set(env, "repository", jv_string(b.buf));
		buf_release(&b);
		jv_free(langs);
		jv_free(cmds);
	}
	char *files = tracked_files(root);
	if (files)
		env = json_set(env, "tracked_files", jv_string(files));
	free(files);
	jv build = json_get(desc, "build_files");
	if (jv_get_kind(build) == JV_KIND_ARRAY) {
		struct buf b = BUF_INIT;
		jv_array_foreach(build, i, name) {
			if (jv_get_kind(name) == JV_KIND_STRING) {
				char *text = read_head(root, jv_string_value(name), BUILD_FILE_MAX);
				if (text)
					buf_addf(&b, "### %s\n\n```\n%s%s```\n\n", jv_string_value(name), text,
						 *text && text[strlen(text) - 1] != '\n' ? "\n" : "");
				free(text);
			}
			jv_free(name);
		}
		if (b.len)
			env = json_set(env, "build_files", jv_string(b.buf));
		buf_release(&b);
	}
	jv_free(build);
	static const char *const readmes[] = { "README.md", "README", "README.rst", "README.txt" };
	for (size_t i = 0; i < sizeof readmes / sizeof *readmes; i++) {
		char *text = read_head(root, readmes[i], README_MAX);
		if (text) {
			env = json_set(env, "readme", jv_string(text));
			free(text);
			break;
		}
	}
	jv_free(desc);
	return env;
}

/* ---- tools ---------------------------------------------------------------- */

struct plan_exec {
	struct tool_ctx ctx;
};

/* The registry's executor, refusing the tools this phase does not have. */
static int exec_read_only(struct agent_tool_outcome *out, const char *name, jv input, void *payload)
{
	struct plan_exec *x = payload;

	for (size_t i = 0; plan_tools[i]; i++)
		if (strcmp(name, plan_tools[i]) == 0)
			return tools_agent_exec(out, name, input, &x->ctx);
	memset(out, 0, sizeof *out);
	out->text = xstrdup("this tool is not available while planning: the tools are read_file, "
			    "list_files and grep (planning does not change files)");
	out->event = json_set(jv_object(), "kind", jv_string("denied"));
	return 0;
}

/* ---- the phase ------------------------------------------------------------ */

/*
 * The plan (consumed) with its risk's score in its level's band
 * (data/risk.h), and a plan.risk_normalised event when it was not: the
 * level the model stated stands, and the state, the stored version and
 * every reader of plan.risk (the review's depth, the gates, the canary
 * ladder) see a score that agrees with it.
 */
static jv normalise_risk(struct phase *ph, jv plan)
{
	jv risk = json_get(plan, "risk");
	double given = json_get_num(risk, "score", -1);
	bool moved;

	risk = risk_plan_normalise(risk, &moved);
	if (moved) {
		jv ev = json_set(jv_object(), "level", jv_string(json_get_str(risk, "level")));
		ev = json_set(ev, "score_given", jv_number(given));
		ev = json_set(ev, "score", jv_number(json_get_num(risk, "score", 0)));
		phase_emit(ph, "plan.risk_normalised", ev);
	}
	return json_set(plan, "risk", risk);
}

/*
 * The plan this one replaces: the trace's latest stored version, else the
 * input state's plan; jv_null() when this is the first.  *out_version is
 * its number (0 when none).
 */
static int previous_plan(jv *out, int *out_version, struct phase *ph, struct store *st)
{
	const char *trace = json_get_str(ph->state, "trace_id");

	*out = jv_null();
	*out_version = 0;
	if (st && plans_latest(out_version, out, st, trace) < 0)
		return -1;
	if (jv_get_kind(*out) == JV_KIND_OBJECT)
		return 0;
	jv_free(*out);
	*out = json_get(ph->state, "plan");
	if (jv_get_kind(*out) == JV_KIND_OBJECT)
		*out_version = (int)json_get_num(*out, "version", 1);
	return 0;
}

/* Store the plan as the trace's next version, with its changelog against
 * previous (borrowed), and set plan.version. */
static const char *version_plan(struct phase *ph, struct store *st, jv *plan, jv previous)
{
	const char *trace = json_get_str(ph->state, "trace_id");
	char id[ULID_LEN + 1];
	int version = 0;

	if (!st) {
		phase_emit(ph, "plan.unversioned", json_set(jv_object(), "reason",
			   jv_string("no database: no repository and no --db or FORGE_DB")));
		return "ok";
	}
	char *changelog = plans_changelog(previous, *plan);
	if (plans_append(&version, id, st, trace, *plan, changelog) < 0) {
		phase_reason(ph, "cannot keep the plan version: %s", forge_last_error());
		free(changelog);
		return "failed";
	}
	*plan = json_set(*plan, "version", jv_number(version));
	jv ev = jv_object();
	ev = json_set(ev, "version", jv_number(version));
	ev = json_set(ev, "id", jv_string(id));
	ev = json_set(ev, "changelog", jv_string(changelog));
	phase_emit(ph, "plan.versioned", ev);
	free(changelog);
	return "ok";
}

static const char *plan_run(struct phase *ph)
{
	struct plan_exec x = { .ctx = { 0 } };
	struct sandbox_policy *policy = NULL;
	struct agent_config cfg = { 0 };
	struct agent_result res;
	struct store *st = NULL;
	char *system = NULL, *prompt = NULL;
	const char *status = "failed";
	/*
	 * The plan is read from the tree implement will work on: the run's
	 * worktree (its base commit) under a supervisor, which makes it before
	 * the first phase; the checkout only when run by hand or by a dry run.
	 * Instructions and prompt overlays still come from the checkout
	 * (phase_repo), as for every phase.
	 */
	char *root = phase_workdir(ph), *repo = phase_repo(ph);
	jv previous = jv_null();
	int previous_version = 0;

	agent_result_init(&res);
	jv wt = json_get_path(ph->state, "task.worktree");
	bool gone = jv_get_kind(wt) == JV_KIND_STRING && !runshare_is_dir(jv_string_value(wt));
	jv_free(wt);
	if (gone) {
		/* not the checkout instead: it is not the tree implement works on */
		phase_reason(ph, "the run's worktree %s is not here (forge resume makes it again)", root);
		goto out;
	}
	if (phase_store_needed(&st, ph) < 0 || previous_plan(&previous, &previous_version, ph, st) < 0) {
		phase_reason(ph, "cannot read the plan versions: %s", forge_last_error());
		goto out;
	}
	if (phase_system_prompt(&system, ph, repo, "plan") < 0) {
		phase_reason(ph, "%s", forge_last_error());
		goto out;
	}
	if (sandbox_policy_from_config(&policy, ph->cfg) < 0) {
		phase_reason(ph, "%s", forge_last_error());
		goto out;
	}
	phase_progress(ph, "planning: %s", root ? root : "(no repository)");
	phase_perceive(&prompt, ph, environment(ph, root, previous, previous_version));

	x.ctx.root = root;
	x.ctx.policy = policy;
	cfg.system_prompt = system;
	cfg.tools = tool_specs(plan_tools);
	cfg.result_schema = plan_schema();
	cfg.result_schema_name = "state.schema.json";
	cfg.result_schema_def = "plan";
	cfg.result_check = plan_check;
	status = phase_run_agent(&res, ph, &cfg, prompt, exec_read_only, &x);
	if (state_status_of(status) != STATE_OK)
		goto out;

	jv plan = normalise_risk(ph, jv_copy(res.result));
	status = version_plan(ph, st, &plan, previous);
	if (state_status_of(status) != STATE_OK) {
		jv_free(plan);
		goto out;
	}
	jv tasks = json_get(plan, "tasks"), risk = json_get(plan, "risk");
	const char *level = json_get_str(risk, "level");
	int ntasks = jv_array_length(jv_copy(tasks));
	if (json_has(plan, "version"))
		phase_reason(ph, "plan v%.0f: %d task%s, risk %s", json_get_num(plan, "version", 0),
			     ntasks, ntasks == 1 ? "" : "s", level ? level : "unknown");
	else
		phase_reason(ph, "plan: %d task%s, risk %s", ntasks, ntasks == 1 ? "" : "s",
			     level ? level : "unknown");
	phase_progress(ph, "%s", ph->reason);
	jv_free(tasks);
	jv_free(risk);
	phase_set(ph, "plan", plan);
out:
	jv_free(previous);
	agent_result_release(&res);
	sandbox_policy_free(policy);
	free(system);
	free(prompt);
	free(root);
	free(repo);
	return status;
}

static const struct phase_spec spec = {
	.name = "plan",
	.program = "forge-plan",
	.synopsis = "[OPTIONS] [--task TEXT] < task-or-state",
	.description = "Turn a task into an implementation plan: summary, architecture, ordered tasks "
		       "with dependencies and acceptance criteria, risk and estimates. Reads the "
		       "repository with read-only tools; every plan is kept as an append-only "
		       "version (plan_versions) with a changelog. Input: a state, {\"task\": …}, plain "
		       "text, or --task. Output: the events, then the state with `plan`.",
	.extra_help = "Exit status: 0 planned, 2 bad input, 3 breaker, 4 human needed, 5 model or "
		      "database failed.\n\nExample:\n  forge-plan --task 'add a mul operation' | forge-implement\n",
	.needs_input = true,
	.needs_repo = true,      /* plans from the repository's files */
	.model_options = true,
	.run = plan_run,
};

int main(int argc, char **argv)
{
	return phase_main(&spec, argc, argv, NULL);
}
