/*
 * stage_work.c - the shared part of forge compile's build stages
 * (stage_work.h).
 */
#include "app/stage_work.h"
#include "app/stage.h"

#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/resource.h"
#include "core/tmpdir.h"
#include "data/config.h"
#include "os/sandbox.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const stage_write_tools[] = {
	"read_file", "list_files", "grep", "write_file", "edit_file", "run_command", NULL
};
const char *const stage_read_tools[] = { "read_file", "list_files", "grep", NULL };

bool stage_has(struct phase *ph, const char *key)
{
	jv v = json_get(ph->state, key);
	bool ok = jv_get_kind(v) == JV_KIND_OBJECT;

	jv_free(v);
	return ok;
}

/* The project's directory: task.worktree, else the cwd.  malloc'd or NULL. */
static char *project_dir(struct phase *ph)
{
	jv task = json_get(ph->state, "task");
	const char *wt = json_get_str(task, "worktree");
	char *dir = NULL;

	if (wt && *wt) {
		dir = realpath(wt, NULL);
		if (!dir)
			forge_error("the run's worktree %s: %s", wt, strerror(errno));
	} else {
		dir = getcwd(NULL, 0);
		if (!dir)
			forge_error("the current directory: %s", strerror(errno));
	}
	jv_free(task);
	return dir;
}

/* The language: compile.language, else intent.language.  Borrowed from the state. */
static const char *language(struct phase *ph)
{
	jv c = json_get(ph->state, "compile"), i = json_get(ph->state, "intent");
	const char *l = json_get_str(c, "language");

	if (!l)
		l = json_get_str(i, "language");
	jv_free(c);
	jv_free(i);
	return l;
}

int stage_work_open(struct stage_work *w, struct phase *ph, const char *prompt,
		    const char *const *tools)
{
	jv delta = json_get(ph->state, "delta");

	memset(w, 0, sizeof *w);
	w->ph = ph;
	w->tools = tools;
	w->edit = jv_get_kind(delta) == JV_KIND_OBJECT;
	jv_free(delta);
	const char *lang = language(ph);
	if (!lang) {
		phase_reason(ph, "no language: the state has neither compile.language nor intent.language");
		return -1;
	}
	if (!(w->dir = project_dir(ph)) || compile_lang_load(&w->lang, ph->cfg, lang) < 0 ||
	    sandbox_policy_from_config(&w->policy, ph->cfg) < 0 ||
	    tmpdir_make(&w->tmp, "forge-stage") < 0 || phase_system_prompt(&w->system, ph, NULL, prompt) < 0) {
		phase_reason(ph, "%s", forge_last_error());
		return -1;
	}
	w->ctx.root = w->dir;
	w->ctx.tmp_dir = w->tmp;
	w->ctx.policy = w->policy;
	phase_progress(ph, "%s project in %s", w->lang->name, w->dir);
	return 0;
}

void stage_work_release(struct stage_work *w)
{
	if (w->tmp)
		tmpdir_remove(w->tmp);
	free(w->system);
	free(w->dir);
	compile_lang_free(w->lang);
	sandbox_policy_free(w->policy);
	memset(w, 0, sizeof *w);
}

static int exec_tools(struct agent_tool_outcome *out, const char *name, jv input, void *payload)
{
	struct stage_work *w = payload;

	for (size_t i = 0; w->tools[i]; i++)
		if (strcmp(name, w->tools[i]) == 0)
			return tools_agent_exec(out, name, input, &w->ctx);
	memset(out, 0, sizeof *out);
	out->text = xstrdup("this tool is not available in this stage");
	out->event = json_set(jv_object(), "kind", jv_string("denied"));
	return 0;
}

const char *stage_agent(jv *doc, struct stage_work *w, const char *prompt, const char *doc_name,
			const char *def)
{
	struct agent_config cfg = { 0 };
	struct agent_result res;
	char name[128];

	*doc = jv_null();
	snprintf(name, sizeof name, "compile/%s.schema.json", doc_name);
	cfg.system_prompt = w->system;
	cfg.tools = tool_specs(w->tools);
	cfg.result_schema_name = name;
	cfg.result_schema_def = def;
	/* what the model is shown: the schema itself (at def), checked by the same file */
	jv schema = jv_null();
	if (stage_doc_schema(&schema, w->ph, doc_name, def) < 0) {
		jv_free(cfg.tools);
		phase_reason(w->ph, "%s", forge_last_error());
		return "failed";
	}
	cfg.result_schema = schema;
	const char *status = phase_run_agent(&res, w->ph, &cfg, prompt, exec_tools, w);
	w->iterations = res.iterations;
	if (res.outcome == AGENT_DONE)
		*doc = jv_copy(res.result);
	agent_result_release(&res);
	return status;
}

int stage_run_tests(jv *run, struct stage_work *w)
{
	phase_progress(w->ph, "running the tests: %s", w->lang->test_command);
	if (compile_run_tests(run, w->lang, w->dir, w->policy, w->tmp) < 0) {
		phase_reason(w->ph, "cannot run the tests: %s", forge_last_error());
		return -1;
	}
	jv ev = json_set(jv_object(), "stage", jv_string(w->ph->spec->name));
	ev = json_set(ev, "command", json_get(*run, "command"));
	ev = json_set(ev, "exit_status", json_get(*run, "exit_status"));
	ev = json_set(ev, "passed", json_get(*run, "passed"));
	ev = json_set(ev, "failed", json_get(*run, "failed"));
	phase_emit(w->ph, "compile.tests_run", ev);
	return 0;
}

void stage_context(struct buf *b, struct stage_work *w, const char *const *keys)
{
	for (size_t i = 0; keys[i]; i++) {
		jv v = json_get(w->ph->state, keys[i]);
		if (jv_get_kind(v) == JV_KIND_NULL) {
			jv_free(v);
			continue;
		}
		char *s = json_dumps(v, true);
		buf_addf(b, "## %s\n\n%s\n\n", keys[i], s);
		free(s);
	}
	buf_addf(b, "## The language: %s\n\nLayout: %s\n\nTest names: %s\n\nThe test command (run in the "
		    "project's root): %s\n\n", w->lang->name, w->lang->layout, w->lang->test_name,
		 w->lang->test_command);
}

jv stage_rule_ids(struct phase *ph)
{
	jv rules = json_get_path(ph->state, "rules.rules"), ids = jv_array();

	if (jv_get_kind(rules) == JV_KIND_ARRAY)
		jv_array_foreach(rules, i, r) {
			const char *id = json_get_str(r, "id");
			if (id)
				ids = jv_array_append(ids, jv_string(id));
			jv_free(r);
		}
	jv_free(rules);
	return ids;
}

jv stage_changed_tests(struct stage_work *w)
{
	jv held = json_get_path(w->ph->state, "test_suite.digests"), paths = jv_array(), changed = jv_array();

	if (jv_get_kind(held) != JV_KIND_OBJECT) {
		jv_free(held);
		jv_free(paths);
		return changed;
	}
	jv_object_foreach(held, k, v) {
		paths = jv_array_append(paths, k);
		jv_free(v);
	}
	jv now = compile_digests(w->dir, paths);
	jv_array_foreach(paths, i, p) {
		jv a = json_get(held, jv_string_value(p)), b = json_get(now, jv_string_value(p));
		if (!json_equal(a, b))
			changed = jv_array_append(changed, jv_copy(p));
		jv_free(a);
		jv_free(b);
		jv_free(p);
	}
	jv_free(now);
	jv_free(paths);
	jv_free(held);
	return changed;
}

void stage_list(struct buf *b, jv names, int max)
{
	int n = jv_get_kind(names) == JV_KIND_ARRAY ? jv_array_length(jv_copy(names)) : 0;

	for (int i = 0; i < n && i < max; i++) {
		jv s = jv_array_get(jv_copy(names), i);
		buf_addf(b, "%s%s", i ? ", " : "", jv_get_kind(s) == JV_KIND_STRING ? jv_string_value(s) : "?");
		jv_free(s);
	}
	if (n > max)
		buf_addf(b, " (and %d more)", n - max);
}
