/*
 * forge-compile - `forge compile`: an idea becomes a product (issue 16 part
 * C; seed 004 §6, the product compiler).
 *
 *   forge compile IDEA [--dir DIR] [--lang LANG] [--answers FILE] …
 *   forge compile --edit REQUEST [--dir DIR] …
 *   forge compile --show KIND [--doc-version N] [--dir DIR]
 *   forge compile --docs [--dir DIR] [--json]
 *
 * A compile is a run of the pipeline pipelines/compile.json through the
 * supervisor (app/supervise.h): the same run records, events, gates, exit
 * codes and `forge resume` as `forge run`.  DIR (default: the current
 * directory) is the project: it is made a git repository with an empty
 * initial commit when it is not one.  The first state holds `compile`
 * {mode, idea, language?, answers?, request?}; an edit's also holds the
 * project's newest documents (the database's, else .forge/compile/), so
 * the stages the delta does not name keep them.
 */
#include "app/cli.h"
#include "app/supervise.h"
#include "compile/docs.h"
#include "compile/lang.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "data/stream.h"
#include "data/config.h"
#include "engine/graph.h"
#include "git/git.h"
#include "llm/llm.h"
#include "store/store.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { OPT_DIR = 256, OPT_LANG, OPT_ANSWERS, OPT_EDIT, OPT_AUTO_APPROVE, OPT_LEVEL, OPT_BUDGET, OPT_JSON,
       OPT_SHOW, OPT_VERSION_N, OPT_DOCS, OPT_PIPELINE };

static const struct cli_option options[] = {
	{ "dir", 0, "DIR", "the project (default: the current directory; made a git repository when it is not one)", OPT_DIR },
	{ "lang", 0, "LANG", "the product's language: c, python or another of compile.languages (default: the interview's, else compile.language)", OPT_LANG },
	{ "answers", 0, "FILE", "answers to the interview's questions, in order: a JSON array of strings, or one a line", OPT_ANSWERS },
	{ "edit", 0, "REQUEST", "change a compiled project: only the stages the change affects run again", OPT_EDIT },
	{ "auto-approve", 0, NULL, "a human's yes to the gates (the rule set, the database schema)", OPT_AUTO_APPROVE },
	{ "level", 0, "N", "the automation level 0-4 for this run (default safety.automation_level)", OPT_LEVEL },
	{ "budget", 0, "USD", "the run's budget (default budget.usd)", OPT_BUDGET },
	{ "pipeline", 0, "FILE|NAME", "the pipeline to run (default compile: forge pipeline show compile)", OPT_PIPELINE },
	{ "show", 0, "KIND", "print the project's newest document KIND (intent, flows, contracts, rules, db_schema, …)", OPT_SHOW },
	{ "doc-version", 0, "N", "with --show: that version of the document instead of the newest", OPT_VERSION_N },
	{ "docs", 0, NULL, "list the project's documents and their versions", OPT_DOCS },
	{ "json", 0, NULL, "JSON lines on stdout instead of text", OPT_JSON },
	{ NULL, 0, NULL, NULL, 0 }
};

static struct cli_spec spec = {
	.name = "forge-compile",
	.synopsis = "IDEA [--dir DIR] [--lang LANG] [--answers FILE] [--auto-approve] [--level N] [--json]\n"
		    "--edit REQUEST [--dir DIR] [--auto-approve] [--level N] [--json]\n"
		    "--show KIND [--doc-version N] [--dir DIR] [--json]\n"
		    "--docs [--dir DIR] [--json]",
	.description = "The product compiler: an idea becomes a working product through typed documents, each\n"
		       "checked against its schema: interview (the IntentDocument), flows, contracts, rules\n"
		       "(IF/THEN), gate 1 (a person approves the rules), schema (the database), gate 2 (a\n"
		       "person approves the schema), tests (one failing test per rule), code (the tests made\n"
		       "green), integrate, review.  It is a run of the pipeline `compile` through the\n"
		       "supervisor: forge status, forge resume, forge gate and the exit codes are forge run's\n"
		       "(a run waiting at a gate exits 4: forge gate approve ID, then forge resume TRACE).\n"
		       "The interview asks on the terminal when there is one, else takes --answers in order,\n"
		       "else the model decides and says what it assumed.  DIR becomes a git repository (an\n"
		       "empty initial commit) when it is not one; the product is built on the run's branch, one\n"
		       "commit a stage, and a new product whose review passed lands on DIR's branch (an edit\n"
		       "stays on the run's branch: forge merge TRACE).\n"
		       "Every document is kept as a version in the database and in DIR/.forge/compile/.\n"
		       "--edit changes a compiled project: the change stage says which rules are preserved,\n"
		       "changed, new or removed, and only the stages that affects run again.",
	.options = options,
	.flags = CLI_MODEL_OPTIONS,
	.extra_help = "Exit status: 0 compiled, 1 rejected, 2 bad input (no idea, an unknown language, a missing\n"
		      "answers file, --edit on a project never compiled), 3 breaker, 4 waiting for a human,\n"
		      "5 failed.\n"
		      "\nExamples:\n"
		      "  forge compile --dir todo \"a todo-list HTTP API\"\n"
		      "  forge compile --dir todo --answers answers.txt --auto-approve \\\n"
		      "    \"a todo-list HTTP API\"\n"
		      "  forge compile --dir todo --edit \"items get an optional due date\"\n"
		      "  forge compile --dir todo --show rules; forge compile --dir todo --docs\n",
};

struct args {
	const char *dir, *lang, *answers, *edit, *show, *pipeline;
	jv answer_list;         /* --answers read, or jv_null() */
	bool auto_approve, json, docs;
	long level, version;
	double budget;
};

static int on_option(int id, const char *arg, void *payload)
{
	struct args *a = payload;

	switch (id) {
	case OPT_DIR: a->dir = arg; return 0;
	case OPT_LANG:
		a->lang = arg;          /* checked against compile.languages once the config is loaded */
		return 0;
	case OPT_ANSWERS: a->answers = arg; return 0;
	case OPT_EDIT:
		if (!*arg)
			return forge_error("--edit wants the change to make");
		a->edit = arg;
		return 0;
	case OPT_AUTO_APPROVE: a->auto_approve = true; return 0;
	case OPT_JSON: a->json = true; return 0;
	case OPT_DOCS: a->docs = true; return 0;
	case OPT_SHOW: a->show = arg; return 0;
	case OPT_PIPELINE: a->pipeline = arg; return 0;
	case OPT_VERSION_N:
		if (forge_parse_long(&a->version, arg, 1, 1000000) < 0)
			return forge_error("--doc-version wants a version number (1, 2, …), not '%s'", arg);
		return 0;
	case OPT_LEVEL:
		if (forge_parse_long(&a->level, arg, 0, 4) < 0)
			return forge_error("--level wants an automation level from 0 to 4, not '%s'", arg);
		return 0;
	case OPT_BUDGET:
		/* 0 too: a run that may spend nothing trips before its first
		 * call (before: accepted, the run made and stopped at once) */
		if (forge_parse_double(&a->budget, arg) < 0 || !(a->budget > 0))
			return forge_error("--budget wants a positive amount in USD, not '%s'", arg);
		return 0;
	}
	return forge_error("unhandled option");
}

static void on_signal(int sig)
{
	supervise_interrupt(sig);
}

/* ---- the project ---------------------------------------------------------- */

/* DIR made a git repository with an empty initial commit, unless it is the root of one. */
static int ensure_repo(const char *dir)
{
	char *root = NULL, real[PATH_MAX];

	if (mkdir(dir, 0777) < 0 && errno != EEXIST)
		return forge_error("cannot make %s: %s", dir, strerror(errno));
	/* DIR itself, not a repository above it: a new project inside a checkout is its own */
	if (cli_repo_root(&root, dir) == 0 && realpath(dir, real) && strcmp(root, real) == 0) {
		free(root);
		return 0;
	}
	free(root);
	return forge_git_init_repo(dir, "forge compile: initial commit");
}

/* The project's newest document of kind: the database's, else its file.  jv_null() when none. */
static jv newest_doc(struct session *e, const char *kind)
{
	jv row = jv_null(), doc = jv_null();

	if (e->store && docs_get(&row, e->store, e->repo, kind, 0) == 0 && jv_get_kind(row) == JV_KIND_OBJECT)
		doc = json_get(row, "doc");
	jv_free(row);
	if (jv_get_kind(doc) != JV_KIND_OBJECT) {
		jv_free(doc);
		if (docs_read_file(&doc, e->repo, kind) < 0)
			doc = jv_null();
	}
	return doc;
}

/* The answers file: a JSON array of strings, else one answer a line. */
static int read_answers(jv *out, const char *path)
{
	struct buf b = BUF_INIT;

	*out = jv_null();
	if (buf_read_file(&b, path) < 0) {
		buf_release(&b);
		return forge_error("--answers: cannot read %s: %s", path, strerror(errno));
	}
	const char *p = b.buf + strspn(b.buf, " \t\r\n");
	if (*p == '[') {
		jv v = json_parse(b.buf, b.len);
		bool ok = jv_get_kind(v) == JV_KIND_ARRAY;
		jv_array_foreach(ok ? v : jv_array(), i, x) {
			ok = ok && jv_get_kind(x) == JV_KIND_STRING;
			jv_free(x);
		}
		buf_release(&b);
		if (!ok) {
			jv_free(v);
			return forge_error("--answers: %s starts with '[' but is not a JSON array of strings", path);
		}
		*out = v;
		return 0;
	}
	jv list = jv_array();
	for (char *line = b.buf, *save = NULL, *tok; (tok = strtok_r(line, "\n", &save)); line = NULL) {
		size_t n = strlen(tok);
		while (n && (tok[n - 1] == '\r' || tok[n - 1] == ' ' || tok[n - 1] == '\t'))
			tok[--n] = '\0';
		if (n)
			list = jv_array_append(list, jv_string(tok));
	}
	buf_release(&b);
	*out = list;
	return 0;
}

/* The first state's additions: `compile` and, editing, the project's documents. */
static int initial_state(jv *out, struct session *e, const struct args *a, const char *idea)
{
	jv compile = json_set(jv_object(), "mode", jv_string(a->edit ? "edit" : "new"));
	jv st = jv_object();

	*out = jv_null();
	if (a->edit) {
		for (size_t i = 0; docs_kinds[i]; i++) {
			if (strcmp(docs_kinds[i], "delta") == 0)
				continue;       /* an edit makes its own */
			jv d = newest_doc(e, docs_kinds[i]);
			if (jv_get_kind(d) == JV_KIND_OBJECT)
				st = json_set(st, docs_kinds[i], d);
			else
				jv_free(d);
		}
		if (!json_has(st, "intent") || !json_has(st, "rules")) {
			jv_free(st);
			jv_free(compile);
			return forge_error("%s is not a compiled project: no intent and rules in the database or in "
					   ".forge/compile/ (forge compile IDEA makes them)", e->repo);
		}
		jv intent = json_get(st, "intent");
		const char *summary = json_get_str(intent, "summary");
		compile = json_set(compile, "idea", jv_string(summary ? summary : json_get_str(intent, "product")));
		compile = json_set(compile, "request", jv_string(a->edit));
		/* the language: --lang, else the project's */
		const char *lang = a->lang ? a->lang : json_get_str(intent, "language");
		compile = json_set(compile, "language", jv_string(lang ? lang : config_get_str(e->cfg, "compile.language")));
		jv_free(intent);
	} else {
		compile = json_set(compile, "idea", jv_string(idea));
		if (a->lang)
			compile = json_set(compile, "language", jv_string(a->lang));
		else if (config_get_str(e->cfg, "compile.language"))
			compile = json_set(compile, "language_default", jv_string(config_get_str(e->cfg, "compile.language")));
		if (jv_get_kind(a->answer_list) == JV_KIND_ARRAY)
			compile = json_set(compile, "answers", jv_copy(a->answer_list));
	}
	*out = json_set(st, "compile", compile);
	return 0;
}

/* ---- run ------------------------------------------------------------------ */

/* lang has a profile in the configuration of the project (or, before the
 * project exists, of the user): checked before anything is made. */
static int check_language(const struct cli_common *common, const char *lang)
{
	struct cli_common c = *common;
	struct session e;
	struct compile_lang *l = NULL;
	char *root = NULL;
	int rc;

	if (cli_repo_root(&root, c.repo) < 0)
		c.repo = NULL;          /* not made yet: the user's layers only */
	free(root);
	if (session_open(&e, &c, SESSION_CONFIG, jv_null()) != 0)
		return -1;
	rc = compile_lang_load(&l, e.cfg, lang);
	compile_lang_free(l);
	session_close(&e);
	return rc;
}

/*
 * Before a new project is made: a model to compile it with (the
 * configuration as it is outside the project: the user's, the
 * environment's, the flags).  Every stage asks one; without it the
 * repository, the run and its worktree were made and the interview failed,
 * exit 5.  0, or exit 2 saying what is missing.
 */
static int check_model(const struct cli_common *c)
{
	struct cli_common outside = *c;
	struct session ses;
	struct llm_options opt;
	struct llm_client *client = NULL;
	int code;

	char *root = NULL;
	bool project = cli_repo_root(&root, c->repo) == 0;

	free(root);
	if (project)
		return 0;   /* a project already: its own configuration decides, later */
	outside.repo = NULL;
	if ((code = session_open(&ses, &outside, SESSION_CONFIG, jv_null())) != 0) {
		fprintf(stderr, "forge compile: %s\n", forge_last_error());
		return code;
	}
	cli_say_base_url_unused(ses.cfg, "implement", c->verbosity < 0);
	llm_options_init(&opt);
	llm_options_for(&opt, ses.cfg, "implement", false);
	code = llm_client_new(&client, &opt) < 0 ? FORGE_EXIT_USAGE : 0;
	if (code)
		fprintf(stderr, "forge compile: no model to compile with: %s; nothing was made\n", forge_last_error());
	llm_client_free(client);
	session_close(&ses);
	return code;
}

static int run_compile(const struct cli_common *common, const struct args *a, const char *idea)
{
	struct cli_common c = *common;
	struct session e;
	struct graph *graph = NULL;
	jv initial = jv_null();
	char *dir = NULL, task[1200];
	int code;
	struct stat dst;

	c.repo = a->dir ? a->dir : ".";
	if (a->lang && check_language(&c, a->lang) < 0) {
		fprintf(stderr, "forge compile: --lang: %s\n", forge_last_error());
		return FORGE_EXIT_USAGE;
	}
	if (a->edit) {
		char *root = NULL;
		if (cli_repo_root(&root, c.repo) < 0) {
			fprintf(stderr, "forge compile: %s is not a compiled project: not a git repository "
					"(forge compile IDEA makes one)\n", c.repo);
			return FORGE_EXIT_USAGE;
		}
		free(root);
	} else if ((code = check_model(&c)) != 0) {
		return code;
	} else if (stat(c.repo, &dst) == 0 && !S_ISDIR(dst.st_mode)) {
		/* bad input, before anything is made (before: "failed to make
		 * directory: directory exists", exit 5) */
		fprintf(stderr, "forge compile: --dir %s is not a directory (name a new directory, or a "
			"project's)\n", c.repo);
		return FORGE_EXIT_USAGE;
	} else if (ensure_repo(c.repo) < 0) {
		fprintf(stderr, "forge compile: %s\n", forge_last_error());
		return FORGE_EXIT_DEPENDENCY;
	}
	if ((code = session_open(&e, &c, SESSION_CONFIG | SESSION_STORE | SESSION_NEED_REPO,
				 jv_null())) != 0) {
		fprintf(stderr, "forge compile: %s\n", forge_last_error());
		return code;
	}
	if (initial_state(&initial, &e, a, idea) < 0) {
		fprintf(stderr, "forge compile: %s\n", forge_last_error());
		code = FORGE_EXIT_USAGE;
		goto out;
	}
	dir = cli_self_dir();
	struct graph_env env = { .cfg = e.cfg, .bindir = dir ? dir : "." };
	if (graph_load(&graph, a->pipeline ? a->pipeline : "compile", e.repo, &env) < 0) {
		supervise_graph_errors(graph);
		fprintf(stderr, "forge compile: the pipeline has %zu error%s: nothing was started\n", graph->nerrors,
			graph->nerrors == 1 ? "" : "s");
		code = FORGE_EXIT_USAGE;
		goto out;
	}
	const char *pargs[16] = { NULL };
	cli_common_argv(pargs, 16, common, false);
	snprintf(task, sizeof task, "%s%.1000s", a->edit ? "compile --edit: " : "compile: ", a->edit ? a->edit : idea);
	struct supervise_opts o = {
		.repo = e.repo, .db_path = e.db, .bindir = dir ? dir : ".", .phase_args = pargs,
		.auto_approve = a->auto_approve, .json = a->json,
		.interactive = isatty(STDIN_FILENO) && isatty(STDERR_FILENO),
		.progress = !a->json && common->verbosity >= 0, .quiet = common->verbosity < 0,
		.budget_usd = a->budget, .cfg = e.cfg, .store = e.store,
		.level_given = a->level >= 0, .level = (int)a->level,
		.graph = graph, .initial = initial,
	};
	cli_catch_interrupts(on_signal);
	signal(SIGPIPE, SIG_IGN);
	code = supervise_run(&o, task);
out:
	jv_free(initial);
	graph_free(graph);
	free(dir);
	session_close(&e);
	return code;
}

/* ---- the documents -------------------------------------------------------- */

static int show_docs(const struct cli_common *common, const struct args *a)
{
	struct cli_common c = *common;
	struct session e;
	int code;

	c.repo = a->dir ? a->dir : (common->repo ? common->repo : ".");
	if ((code = session_open(&e, &c, SESSION_CONFIG | SESSION_STORE | SESSION_NEED_REPO |
				 SESSION_READONLY, jv_null())) != 0) {
		fprintf(stderr, "forge compile: %s\n", forge_last_error());
		return code;
	}
	if (a->docs) {
		jv list;
		if (docs_list(&list, e.store, e.repo) < 0) {
			fprintf(stderr, "forge compile: %s\n", forge_last_error());
			session_close(&e);
			return FORGE_EXIT_DEPENDENCY;
		}
		if (!a->json && jv_array_length(jv_copy(list)) > 0)
			printf("%-16s %7s  %-26s  %s\n", "KIND", "VERSION", "TRACE", "CREATED");
		jv_array_foreach(list, i, row) {
			if (a->json)
				json_write_line(stdout, row, false);
			else {
				printf("%-16s %7.0f  %-26s  %s\n", json_get_str(row, "kind"), json_get_num(row, "version", 0),
				       json_get_str(row, "trace_id") ? json_get_str(row, "trace_id") : "-",
				       json_get_str(row, "created_at"));
				jv_free(row);
			}
		}
		if (jv_array_length(jv_copy(list)) == 0)
			fprintf(stderr, "forge compile: no documents for %s yet (forge compile IDEA makes them)\n", e.repo);
		jv_free(list);
		session_close(&e);
		return FORGE_EXIT_OK;
	}
	jv row = jv_null();
	if (docs_get(&row, e.store, e.repo, a->show, (int)a->version) < 0) {
		fprintf(stderr, "forge compile: %s\n", forge_last_error());
		session_close(&e);
		return FORGE_EXIT_DEPENDENCY;
	}
	jv doc = json_get(row, "doc");
	/* a project that carries its spec without this database: its file */
	if (jv_get_kind(doc) != JV_KIND_OBJECT && !a->version) {
		jv_free(doc);
		if (docs_read_file(&doc, e.repo, a->show) < 0) {
			fprintf(stderr, "forge compile: %s\n", forge_last_error());
			jv_free(row);
			session_close(&e);
			return FORGE_EXIT_DEPENDENCY;
		}
	}
	if (jv_get_kind(doc) != JV_KIND_OBJECT) {
		if (a->version)
			fprintf(stderr, "forge compile: %s has no version %ld of %s\n", e.repo, a->version, a->show);
		else
			fprintf(stderr, "forge compile: %s has no %s document\n", e.repo, a->show);
		jv_free(doc);
		jv_free(row);
		session_close(&e);
		return FORGE_EXIT_REJECTED;
	}
	/* --json: the row ({kind, version, trace_id, created_at, doc}), or {kind, doc} from the file */
	if (a->json && jv_get_kind(row) != JV_KIND_OBJECT)
		row = json_set(json_set(jv_object(), "kind", jv_string(a->show)), "doc", jv_copy(doc));
	if (a->json) {
		json_write_line(stdout, row, false);
	} else {
		json_write_pretty(stdout, jv_copy(doc));
		jv_free(row);
	}
	jv_free(doc);
	session_close(&e);
	return FORGE_EXIT_OK;
}

int main(int argc, char **argv)
{
	struct cli_common common;
	struct args a = { .level = -1, .budget = -1, .answer_list = JSON_NULL };
	struct buf idea = BUF_INIT;
	int status;

	/* `forge compile …` runs this as forge-compile */
	int first = cli_parse(&common, &spec, argc, argv, on_option, &a);

	for (int i = first; i < argc; i++)
		buf_addf(&idea, "%s%s", i > first ? " " : "", argv[i]);
	if (a.show || a.docs) {
		if (idea.len || a.edit || (a.show && a.docs))
			cli_usage_error(&spec, "--show and --docs take no idea and no --edit, and not each other");
		status = show_docs(&common, &a);
	} else {
		if (a.version)
			cli_usage_error(&spec, "--doc-version N goes with --show KIND");
		if (!idea.len && !a.edit)
			cli_usage_error(&spec, "an idea is needed: forge compile \"a todo-list HTTP API\" (or --edit REQUEST)");
		if (idea.len && a.edit)
			cli_usage_error(&spec, "--edit changes a compiled project: give the change, not a new idea");
		if (a.edit && a.answers)
			cli_usage_error(&spec, "--answers are for the interview, which an edit does not have");
		if (a.answers && read_answers(&a.answer_list, a.answers) < 0)
			cli_usage_error(&spec, "%s", forge_last_error());
		if (idea.len && stream_task_check(idea.buf, idea.len) < 0)
			cli_usage_error(&spec, "%s", forge_last_error());
		status = run_compile(&common, &a, idea.buf);
	}
	buf_release(&idea);
	jv_free(a.answer_list);
	return cli_finish("forge compile", status);
}
