/*
 * forge-stage - one stage of `forge compile` as a filter (app/stage.h):
 * `forge-stage NAME [options] < STATE`.
 *
 * Every stage that ends ok has its document (the state's value at the
 * stage's result key) kept here, in one place for all of them: appended
 * to the database as the next version of its kind for the project
 * (lib/compile/docs.h; the project is the state's task.repo), and written
 * to <project>/.forge/compile/KIND.json.  A compile.document event says
 * {kind, version, path}; without a database (no repository and no --db or
 * FORGE_DB) the file is still written and the event has no version.
 */
#include "app/cli.h"
#include "app/cli_tables.h"
#include "app/stage.h"
#include "compile/docs.h"
#include "core/forge.h"
#include "core/json.h"
#include "store/store.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const struct phase_spec *spec;
	const char *key;        /* the result key (app/stage.h) */
} stages[] = {
	{ &stage_interview, "intent" }, { &stage_change, "delta" },     { &stage_flows, "flows" },
	{ &stage_contracts, "contracts" }, { &stage_rules, "rules" },   { &stage_schema, "db_schema" },
	{ &stage_tests, "test_suite" },   { &stage_code, "implementation" }, { &stage_integrate, "integration" },
	{ &stage_review, "compile_review" },
};
enum { NSTAGES = sizeof stages / sizeof stages[0] };

static size_t current;          /* the stage running */

/* The project the documents belong to: task.repo, else the phase's
 * repository, as a real path (malloc'd), or NULL. */
static char *project_root(struct phase *ph)
{
	jv task = json_get(ph->state, "task");
	const char *repo = json_get_str(task, "repo");
	char *given = repo ? xstrdup(repo) : phase_repo(ph);
	char real[PATH_MAX];
	char *out = given && realpath(given, real) ? xstrdup(real) : NULL;

	free(given);
	jv_free(task);
	return out;
}

/* Whether the stage runs in a run's worktree (task.worktree): then the
 * documents' files are the stages' commits' to write (stage_commit()). */
static bool in_run(struct phase *ph)
{
	jv task = json_get(ph->state, "task");
	bool yes = json_get_str(task, "worktree") != NULL;

	jv_free(task);
	return yes;
}

/*
 * Keep the stage's document: the database's next version; by hand, the
 * project's file too.  In a run the file is written in the run's worktree
 * and committed by the stages that commit (stage_commit(): the tests,
 * code, integrate and review stages, each with every document so far), so
 * it reaches the project with the product, never as an untracked file in
 * the person's checkout.
 */
static void keep_document(struct phase *ph, const char *kind)
{
	jv doc = json_get(ph->state, kind);
	char *root = project_root(ph);
	char *dbpath = NULL;
	int version = 0;

	if (jv_get_kind(doc) != JV_KIND_OBJECT || !root) {
		jv_free(doc);
		free(root);
		return;
	}
	jv ev = json_set(jv_object(), "kind", jv_string(kind));
	/* a database only where one is configured: --db, FORGE_DB or the repository's */
	if (store_resolve_path(&dbpath, ph->common.db, root) == 0 && phase_store(ph)) {
		if (docs_append(&version, phase_store(ph), root, kind, json_get_str(ph->state, "trace_id"), doc) < 0)
			ev = json_set(ev, "error", jv_string(forge_last_error()));
		else
			ev = json_set(ev, "version", jv_number(version));
	}
	free(dbpath);
	if (in_run(ph)) {
		;       /* the stages' commits write it */
	} else if (docs_write_file(root, kind, doc) < 0) {
		ev = json_set(ev, "file_error", jv_string(forge_last_error()));
	} else {
		char path[64];
		snprintf(path, sizeof path, ".forge/compile/%s.json", kind);
		ev = json_set(ev, "path", jv_string(path));
	}
	phase_emit(ph, "compile.document", ev);
	jv_free(doc);
	free(root);
}

static const char *run_and_keep(struct phase *ph)
{
	const char *status = stages[current].spec->run(ph);

	if (state_status_of(status) == STATE_OK) {
		keep_document(ph, stages[current].key);
		/* gate 1's approval, which the schema stage writes into the rules,
		 * makes the approved rule set a version of its own */
		if (strcmp(stages[current].key, "db_schema") == 0)
			keep_document(ph, "rules");
	}
	return status;
}

static const struct cli_spec overall = {
	.name = "forge-stage",
	.synopsis = "STAGE [OPTIONS] < STATE",
	.description = "One stage of forge compile (the product compiler) as a filter: the state on "
		       "stdin, the events and one state on stdout, the exit codes of the other phases. "
		       "Each stage writes its document at its result key, checked against "
		       "schemas/compile/KEY.schema.json, and keeps it: the next version of its kind in "
		       "the database (forge compile --show KIND) and .forge/compile/KEY.json in the "
		       "project.",
	.flags = CLI_MODEL_OPTIONS,
	.extra_help = "Stages (result key):\n"
		      "  interview  intent          questions to the person, then the IntentDocument\n"
		      "  change     delta           edit mode: the DeltaRuleSet and the stages to rerun\n"
		      "  flows      flows           the UserFlowTree\n"
		      "  contracts  contracts       the APIContracts\n"
		      "  rules      rules           the RuleSet (IF/THEN); gate 1 approves it\n"
		      "  schema     db_schema       the DatabaseSchema; gate 2 approves it\n"
		      "  tests      test_suite      one failing test per rule\n"
		      "  code       implementation  the tests made green\n"
		      "  integrate  integration     entry point, build files, README\n"
		      "  review     compile_review  static tools and rule compliance\n"
		      "`forge-stage STAGE --help` describes one.\n"
		      "\nExit status: 0 done, 1 skipped, 2 bad input, 3 breaker, 4 human needed, 5 failed.\n"
		      "\nExample:\n  forge-stage flows --cassette spec.jsonl < state.json\n",
};

/* Whether option word w ("--repo", "-q") takes the next word as its value:
 * a common or model option with an argument, or a stage's own. */
static bool takes_value(const char *w)
{
	const struct cli_option *const tables[] = { cli_common_options, cli_model_options };

	if (strncmp(w, "--", 2) != 0 || strchr(w, '='))
		return false;
	for (size_t t = 0; t < 2; t++)
		for (const struct cli_option *o = tables[t]; o->name; o++)
			if (o->arg && strcmp(o->name, w + 2) == 0)
				return true;
	for (size_t i = 0; i < NSTAGES; i++)
		for (const struct cli_option *o = stages[i].spec->options; o && o->name; o++)
			if (o->arg && strcmp(o->name, w + 2) == 0)
				return true;
	return false;
}

/*
 * Where the stage's name is: first (forge-stage flows --cassette F), or
 * after the options forge-supervisor puts first (forge-stage --repo R
 * --db D flows): the first word that names a stage and is no option's
 * value.  -1 when none does.
 */
static int stage_at(int argc, char **argv, size_t *which)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return -1;
		if (argv[i][0] == '-') {
			i += takes_value(argv[i]);
			continue;
		}
		for (size_t k = 0; k < NSTAGES; k++) {
			if (strcmp(argv[i], stages[k].spec->name) == 0) {
				*which = k;
				return i;
			}
		}
		return -1;      /* an operand that is not a stage */
	}
	return -1;
}

int main(int argc, char **argv)
{
	size_t k = 0;
	int at = stage_at(argc, argv, &k);

	if (at < 0) {
		struct cli_common common;
		/* --help, --version, --help-man and unknown options, as every program */
		int first = cli_parse(&common, &overall, argc, argv, NULL, NULL);
		if (first >= argc)
			cli_usage_error(&overall, "a stage is needed: interview, change, flows, contracts, rules, "
						  "schema, tests, code, integrate or review");
		cli_usage_error(&overall, "unknown stage '%s' (interview, change, flows, contracts, rules, schema, "
					  "tests, code, integrate, review)", argv[first]);
	}
	/* the stage's own argv: its name first, then every other word in order */
	char **args = xcalloc((size_t)argc + 1, sizeof *args);
	int n = 0;
	args[n++] = argv[at];
	for (int i = 1; i < argc; i++)
		if (i != at)
			args[n++] = argv[i];
	struct phase_spec spec = *stages[k].spec;
	current = k;
	spec.run = run_and_keep;
	int code = phase_main(&spec, n, args, NULL);
	free(args);
	return code;
}
