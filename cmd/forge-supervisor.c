/*
 * forge-supervisor - run whole pipelines (DESIGN.md §4).  `forge run`,
 * `forge resume`, `forge status`, `forge history` and `forge cancel` come
 * here through the forge dispatcher.
 */
#include "core/buf.h"
#include "app/cli.h"
#include "app/runclean.h"
#include "app/runview.h"
#include "core/money.h"
#include "git/git.h"
#include "data/config.h"
#include "core/forge.h"
#include "engine/gates.h"
#include "core/json.h"
#include "store/db.h"
#include "store/store.h"
#include "data/stream.h"
#include "app/supervise.h"
#include "app/term.h"
#include "engine/graph.h"
#include "os/heap.h"
#include "core/tmpdir.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OPT_PHASES = 256, OPT_DRY_RUN, OPT_AUTO_APPROVE, OPT_BUDGET, OPT_JSON, OPT_BASE, OPT_LIMIT, OPT_LEVEL, OPT_PIPELINE, OPT_JOBS, OPT_STEAL };

static const struct cli_option options[] = {
	{ "phases", 0, "LIST", "run: only these phases, comma-separated (plan,implement,…)", OPT_PHASES },
	{ "dry-run", 0, NULL, "run: the plan phase alone, no worktree; print the plan (--json: its JSON)", OPT_DRY_RUN },
	{ "auto-approve", 0, NULL, "a human's yes to every gate that may pass unasked (never a production deploy nor an agent's question)", OPT_AUTO_APPROVE },
	{ "level", 0, "N", "run, resume: the automation level 0-4 for this run (default safety.automation_level; resume: the run's)", OPT_LEVEL },
	{ "budget", 0, "USD", "run: the run's budget (default budget.usd); resume: a new budget for the run", OPT_BUDGET },
	{ "base", 0, "REF", "run: the base ref of the run's branch (default HEAD)", OPT_BASE },
	{ "pipeline", 0, "FILE|NAME", "run: the pipeline to run (a path, or a name: .forge/pipelines/NAME.json, else a built-in one; forge pipeline list)", OPT_PIPELINE },
	{ "jobs", 'j', "N", "run, resume: at most N pipeline nodes at the same time (default pipeline.jobs)", OPT_JOBS },
	{ "steal", 0, NULL, "resume: take the run's lease from a process on another host even when it was renewed lately (its machine is gone); never from a live process of this host", OPT_STEAL },
	{ "json", 0, NULL, "JSON lines on stdout instead of text", OPT_JSON },
	{ "limit", 'n', "N", "history: at most N runs (default 20)", OPT_LIMIT },
	{ NULL, 0, NULL, NULL, 0 }
};

/* An option of the table above as a bit of a command's set. */
#define OPT_BIT(id) (1u << ((id) - OPT_PHASES))

#define RUN_OPTIONS (OPT_BIT(OPT_PHASES) | OPT_BIT(OPT_DRY_RUN) | OPT_BIT(OPT_AUTO_APPROVE) | OPT_BIT(OPT_LEVEL) | \
		     OPT_BIT(OPT_BUDGET) | OPT_BIT(OPT_BASE) | OPT_BIT(OPT_PIPELINE) | OPT_BIT(OPT_JOBS) | \
		     OPT_BIT(OPT_JSON))
#define RESUME_OPTIONS (OPT_BIT(OPT_JOBS) | OPT_BIT(OPT_AUTO_APPROVE) | OPT_BIT(OPT_LEVEL) | OPT_BIT(OPT_BUDGET) | \
			OPT_BIT(OPT_STEAL) | OPT_BIT(OPT_JSON))

/*
 * The commands: synopsis, description (NULL: the program's) and the options
 * each takes, so that `forge CMD` parses, shows (--help) and completes
 * (--help-words) its own alone: an option of another command is refused
 * (exit 2), never taken and ignored (`forge cancel --dry-run` cancelled).
 * run and resume start phases: they take the model options to pass on.
 */
static const struct command {
	const char *name, *synopsis, *description;
	unsigned takes;         /* OPT_BIT()s */
	unsigned flags;         /* cli_flags */
} commands[] = {
	{ "run", "TASK [--pipeline FILE|NAME] [--jobs N] [--phases LIST] [--dry-run] [--auto-approve] [--level N] [--budget USD] [--base REF] [--json]",
	  NULL, RUN_OPTIONS, CLI_MODEL_OPTIONS },
	{ "resume", "TRACE [--jobs N] [--auto-approve] [--level N] [--budget USD] [--steal] [--json]",
	  "Continue a run from its last checkpoint without repeating the phases it finished: any run\n"
	  "not completed or cancelled (a failed one too), with the pipeline it started with (a dry\n"
	  "run stays one) and its automation level unless --level is given; --budget gives it a new\n"
	  "budget.  A run another live process holds is refused with exit 4 (--steal takes\n"
	  "it from another host's, whose machine is gone).  A run waiting for a human exits 4 again:\n"
	  "approve with `forge gate approve ID`, then resume.  TRACE may be any unique prefix of a\n"
	  "trace id.", RESUME_OPTIONS, CLI_MODEL_OPTIONS },
	{ "status", "[TRACE] [--json]",
	  "Show a run (the newest without TRACE): its status, phase, task, branch, cost, pending\n"
	  "gates and sub-agents; --json prints it as one object {run, state (the last checkpoint),\n"
	  "pending_gates, subagents, merged}.  A run whose process died is shown as interrupted;\n"
	  "no run yet is exit 1.  TRACE may be any unique prefix of a trace id (none: exit 2; a\n"
	  "trace of phases run by hand, a shell pipeline, is no run: exit 2, forge show shows it).",
	  OPT_BIT(OPT_JSON), 0 },
	{ "history", "[-n N] [--json]",
	  "List the latest runs, newest first, one a line: trace id, status (merged when merged),\n"
	  "phase, cost, start time and task (the columns that fit the terminal); --json prints one\n"
	  "object a run.  A run whose process died is shown as interrupted.",
	  OPT_BIT(OPT_LIMIT) | OPT_BIT(OPT_JSON), 0 },
	{ "cancel", "TRACE",
	  "Cancel a run that is not completed, failed or cancelled: its pending gates are decided no,\n"
	  "a live run stops (it exits 130) and it stays cancelled; the run's worktree is removed\n"
	  "(uncommitted changes kept on refs/forge/TRACE/saved/N) and its branch unless the branch\n"
	  "has commits (forge gc removes those).  Exit 1 when the run has already ended.  TRACE may\n"
	  "be any unique prefix of a trace id.", 0, 0 },
};

/* The options of `takes` from the table, in own (sized as options). */
static void own_options(struct cli_option *own, unsigned takes)
{
	size_t n = 0;

	for (const struct cli_option *o = options; o->name; o++)
		if (takes & OPT_BIT(o->id))
			own[n++] = *o;
	own[n] = (struct cli_option){ NULL, 0, NULL, NULL, 0 };
}

/* The name in messages: "forge-supervisor", or "forge CMD" when the forge
 * dispatcher ran it (argv[0] "forge"), the name the user typed. */
static const char *prog = "forge-supervisor";

static struct cli_spec spec = {
	.name = "forge-supervisor",
	.synopsis = "run TASK [--pipeline FILE|NAME] [--jobs N] [--phases LIST] [--dry-run] [--auto-approve] [--level N]\n"
		    "    [--budget USD] [--base REF] [--json]\n"
		    "resume TRACE [--jobs N] [--auto-approve] [--level N] [--budget USD] [--steal] [--json]\n"
		    "status [TRACE] [--json]\n"
		    "history [-n N] [--json]\n"
		    "cancel TRACE",
	.description = "Carry a task through plan, implement, review, test and deploy: each phase runs as its\n"
		       "own program with the state on its stdin; every event is stored, every state is a\n"
		       "checkpoint; review and test failures go back to implement; gates ask a human;\n"
		       "breakers stop a run that costs or takes too much.  The automation level (0-4, a row\n"
		       "of safety.ladder; `forge config --explain` says what it means) decides which gates\n"
		       "ask; --level sets it for one run, and resume keeps the run's.  A run waiting for a\n"
		       "human exits 4: approve with `forge gate approve ID`, then `forge resume TRACE`.\n"
		       "At the terminal a gate takes y, n or e (a note, then approve) and asks again on\n"
		       "anything else; Ctrl-D leaves it waiting (exit 4), Ctrl-C too but exits 130; resume\n"
		       "asks again.\n"
		       "resume continues any run not completed or cancelled (a failed one too); a run another\n"
		       "live process holds is refused with exit 4 (--steal takes it from another host's,\n"
		       "whose machine is gone).  cancel stops a live run (it exits 130) and it stays\n"
		       "cancelled; it removes the run's worktree (uncommitted changes kept on\n"
		       "refs/forge/TRACE/saved/N) and its branch unless the branch has commits (forge gc\n"
		       "removes those).  status and history show a run whose process died as interrupted.\n"
		       "run checks each model phase's provider and key before it makes anything (exit 2 names\n"
		       "the variable to set) and warns when the checkout has uncommitted changes the run will\n"
		       "not see.  --dry-run runs the plan phase alone on the checkout as it is and prints the\n"
		       "plan; the run is recorded (forge show TRACE) without a worktree or branch, and a resume\n"
		       "of it stays a dry run.\n"
		       "A run follows a pipeline as data (forge pipeline show NAME draws it): --pipeline's,\n"
		       "else the one named default (.forge/pipelines/default.json, else the built-in one;\n"
		       "--phases keeps only those phases of it).  A node starts as soon as what it needs is\n"
		       "done, at most --jobs at a time; a pipeline with errors is refused (exit 2) before the\n"
		       "run exists, and resume runs the pipeline the run recorded when it started.\n"
		       "TRACE may be any unique prefix of a trace id.",
	.options = options,
	.flags = CLI_MODEL_OPTIONS,
	.extra_help = "Examples:\n"
		      "  forge run \"add a --version flag\"\n"
		      "  forge run --dry-run \"fix the crash in parse_date\"\n"
		      "  forge run --level 1 \"…\"    (a human decides on each review and test failure)\n"
		      "  forge run --auto-approve --budget 5 --json \"…\" > run.jsonl\n"
		      "  forge status; forge history -n 5; forge resume 01JDB2…\n",
};

struct args {
	const char *pipeline;   /* --pipeline, or NULL */
	long jobs;              /* 0: not given */
	char *phases_text;
	const char *phases[6];
	bool dry_run, auto_approve, json, steal;
	long level;             /* -1: not given */
	double budget;
	const char *base;
	long limit;
	unsigned given;         /* OPT_BIT()s of the options given */
};

static int on_option(int id, const char *arg, void *payload)
{
	struct args *a = payload;

	a->given |= OPT_BIT(id);
	switch (id) {
	case OPT_PHASES: {
		size_t n = 0;
		free(a->phases_text);
		a->phases_text = xstrdup(arg);
		for (char *p = a->phases_text, *save = NULL, *tok; (tok = strtok_r(p, ",", &save)); p = NULL) {
			static const char *const known[] = { "plan", "implement", "review", "test", "deploy" };
			bool ok = false;
			for (int i = 0; i < 5; i++)
				ok = ok || strcmp(tok, known[i]) == 0;
			if (!ok || n >= 5)
				return forge_error("--phases: unknown phase '%s' (plan, implement, review, test, deploy)", tok);
			a->phases[n++] = tok;
		}
		a->phases[n] = NULL;
		return n ? 0 : forge_error("--phases: no phase given");
	}
	case OPT_PIPELINE: a->pipeline = arg; return 0;
	case OPT_JOBS:
		if (forge_parse_long(&a->jobs, arg, 1, 64) < 0)
			return forge_error("--jobs wants a number of nodes from 1 to 64, not '%s'", arg);
		return 0;
	case OPT_DRY_RUN: a->dry_run = true; return 0;
	case OPT_STEAL: a->steal = true; return 0;
	case OPT_AUTO_APPROVE: a->auto_approve = true; return 0;
	case OPT_JSON: a->json = true; return 0;
	case OPT_BASE: a->base = arg; return 0;
	case OPT_BUDGET:
		/* 0 too: a run that may spend nothing trips before its first
		 * call (before: accepted, the run made and stopped at once) */
		if (forge_parse_double(&a->budget, arg) < 0 || !(a->budget > 0))
			return forge_error("--budget wants a positive amount in USD, not '%s'", arg);
		return 0;
	case OPT_LIMIT:
		return forge_parse_long(&a->limit, arg, 1, 100000);
	case OPT_LEVEL:
		if (forge_parse_long(&a->level, arg, 0, 4) < 0)
			return forge_error("--level wants an automation level from 0 to 4, not '%s'", arg);
		return 0;
	}
	return forge_error("unhandled option");
}

static void on_signal(int sig)
{
	supervise_interrupt(sig);
}

/* Options every phase gets again: config, verbosity, model options. */
static const char **phase_args(const struct cli_common *c)
{
	const char **a = xcalloc(16, sizeof *a);

	cli_common_argv(a, 16, c, false);
	return a;
}

/*
 * A --config that is no regular file (`--config <(…)`, a FIFO, /dev/stdin)
 * can be read once, and this process has read it: the phases, which read
 * their --config again, get what it held written to a private file (in
 * *dir, made here; tmpdir_remove() it after).  pargs: the phases'
 * arguments, whose --config value is replaced (by a string in *dir's
 * allocation: *file, freed by the caller).  (Before: "forge-plan: cannot
 * open '/dev/fd/63'", the run made and failed at its first phase, exit 5.)
 * 0, or an exit status said on stderr.
 */
static int config_for_phases(char **dir, char **file, const char **pargs, const struct cli_common *c,
			     const struct config *cfg)
{
	struct stat st;
	FILE *f = NULL;
	int fd, wrote, closed;

	*dir = NULL;
	*file = NULL;
	if (!c->config || (stat(c->config, &st) == 0 && S_ISREG(st.st_mode)))
		return 0;
	jv layer = config_layer_value(cfg, "file");
	struct buf path = BUF_INIT;

	if (jv_get_kind(layer) != JV_KIND_OBJECT) {
		jv_free(layer);
		layer = jv_object();
	}
	if (tmpdir_make(dir, "forge-config") < 0)
		goto fail;
	buf_addf(&path, "%s/config.json", *dir);
	fd = open(path.buf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		forge_error("cannot write %s: %s", path.buf, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto fail;
	}
	wrote = json_write_line(f, layer, true);
	layer = jv_null();
	closed = fclose(f);
	if (wrote < 0 || closed != 0) {
		forge_error("cannot write %s: %s", path.buf, strerror(errno));
		goto fail;
	}
	*file = buf_detach(&path, NULL);
	for (const char **a = pargs; a && a[0] && a[1]; a++)
		if (strcmp(a[0], "--config") == 0)
			a[1] = *file;
	return 0;
fail:
	fprintf(stderr, "%s: cannot keep --config %s for the phases: %s; nothing was started\n", prog, c->config,
		forge_last_error());
	jv_free(layer);
	buf_release(&path);
	tmpdir_remove(*dir);
	*dir = NULL;
	return FORGE_EXIT_DEPENDENCY;
}

/* The heap a run or a resume fills (os/heap.h), made resident in one call
 * before session_open()'s megabyte: a resume reaches 1.75 MiB before its
 * first phase starts (the run's row, events, checkpoint, the SQLite page
 * cache), a whole run ~1.5 MiB; past the first megabyte each page was a
 * page fault (~190 in a resume before its phase, at 7-15 us each here). */
#define SUPERVISOR_HEAP_WARM (2u << 20)

static int cmd_run_or_resume(const struct cli_common *c, const struct args *a, const char *what,
			     const char *arg)
{
	struct session e;
	heap_warm(SUPERVISOR_HEAP_WARM);
	/* (a resume acts on a run recorded: no database is made for it) */
	int code = session_open(&e, c, SESSION_CONFIG | SESSION_STORE | SESSION_NEED_REPO |
				(strcmp(what, "resume") == 0 ? SESSION_EXISTING : 0), jv_null());

	if (code) {
		fprintf(stderr, "%s: %s\n", prog, forge_last_error());
		return code;
	}
	char *resolved = NULL;
	if (strcmp(what, "resume") == 0) {
		if ((code = runview_resolve(&resolved, e.store, prog, arg)) != 0) {
			session_close(&e);
			return code;
		}
		arg = resolved;
	}
	char *dir = cli_self_dir();

	if (!dir)
		dir = xstrdup(".");
	/* The pipeline, checked before anything is made: its errors, as
	 * `forge pipeline check` lists them, and exit 2. */
	struct graph *graph = NULL;
	if (a->pipeline && strcmp(what, "run") == 0) {
		struct graph_env env = { .cfg = e.cfg, .bindir = dir };

		if (graph_load(&graph, a->pipeline, e.repo, &env) < 0) {
			supervise_graph_errors(graph);
			fprintf(stderr, "%s: the pipeline has %zu error%s: nothing was started\n", prog, graph->nerrors,
				graph->nerrors == 1 ? "" : "s");
			graph_free(graph);
			free(dir);
			session_close(&e);
			return FORGE_EXIT_USAGE;
		}
	}
	const char **pargs = phase_args(c);
	char *conf_dir = NULL, *conf_file = NULL;
	if ((code = config_for_phases(&conf_dir, &conf_file, pargs, c, e.cfg)) != 0) {
		free(pargs);
		free(dir);
		free(resolved);
		graph_free(graph);
		session_close(&e);
		return code;
	}
	/* The phases are given a PostgreSQL URI (it may hold a password) in
	 * their environment, not on a command line ps shows to every user. */
	if (e.db && db_is_postgres(e.db) && setenv("FORGE_DB", e.db, 1) < 0) {
		fprintf(stderr, "%s: cannot pass the database to the phases: %s\n", prog, strerror(errno));
		free(dir);
		session_close(&e);
		return FORGE_EXIT_DEPENDENCY;
	}
	struct supervise_opts o = {
		.repo = e.repo, .checkout = c->repo, .db_path = e.db, .bindir = dir, .phase_args = pargs,
		.phases = a->phases[0] ? a->phases : NULL, .base_ref = a->base,
		.dry_run = a->dry_run, .auto_approve = a->auto_approve, .json = a->json,
		.interactive = isatty(STDIN_FILENO) && isatty(STDERR_FILENO),
		.progress = !a->json && c->verbosity >= 0, .quiet = c->verbosity < 0,
		.budget_usd = a->budget, .cfg = e.cfg, .store = e.store,
		.level_given = a->level >= 0, .level = (int)a->level,
		.graph = graph, .jobs = (int)a->jobs, .steal = a->steal,
	};
	cli_catch_interrupts(on_signal);
	/* the terminal or the ssh session closed: paused as for SIGTERM
	 * (before: exit 129, the run left "running", nothing said) */
	struct sigaction hup = { .sa_handler = on_signal };
	sigemptyset(&hup.sa_mask);
	sigaction(SIGHUP, &hup, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* (a file-size limit (ulimit -f) reached by the database: a write that
	 * fails, EFBIG -- SIGXFSZ is ignored, cli_parse -- which stops the run
	 * saying so, sup_store_stop) */
	code = strcmp(what, "run") == 0 ? supervise_run(&o, arg) : supervise_resume(&o, arg);
	free(pargs);
	free(conf_file);
	tmpdir_remove(conf_dir);
	free(dir);
	free(resolved);
	graph_free(graph);
	session_close(&e);
	return code;
}

/* The run's automation level (supervise_run_level()) as
 * run.automation_level, when it has one.  Consumes run. */
static jv with_level(struct store *st, jv run)
{
	int level = supervise_run_level(st, json_get_str(run, "trace_id"), run);

	if (level >= 0)
		run = json_set(run, "automation_level", jv_number(level));
	return run;
}

/* The nodes line of a run's status: each node of state.nodes (borrowed),
 * in the pipeline's order, with its status as a mark ("plan ✓  implement
 * ✓  review …  test ·  deploy ·"); nothing for a state without nodes. */
/* The checkpoint's nodes; one "running" in a run that runs no more (paused,
 * interrupted, cancelled, failed: `live` false) stopped there (before: shown
 * running after the run was stopped or cancelled). */
static void print_nodes(jv checkpoint, bool live)
{
	static const struct { const char *status, *mark; } marks[] = {
		{ "done", "✓" }, { "running", "…" }, { "pending", "·" },
		{ "blocked", "✗ blocked" }, { "failed", "✗ failed" }, { "skipped", "– skipped" },
	};
	jv nodes = json_get(checkpoint, "nodes");
	bool first = true;

	if (jv_get_kind(nodes) != JV_KIND_OBJECT || jv_object_length(jv_copy(nodes)) == 0) {
		jv_free(nodes);
		return;
	}
	printf("nodes    ");
	jv_object_foreach(nodes, id, st) {
		const char *status = jv_get_kind(st) == JV_KIND_STRING ? jv_string_value(st) : "?";
		const char *mark = status;

		for (size_t k = 0; k < sizeof marks / sizeof marks[0]; k++)
			if (strcmp(marks[k].status, status) == 0)
				mark = marks[k].mark;
		if (!live && strcmp(status, "running") == 0)
			mark = "⏸ stopped";
		printf("%s%s %s", first ? "" : "  ", jv_string_value(id), mark);
		first = false;
		jv_free(id);
		jv_free(st);
	}
	putchar('\n');
	jv_free(nodes);
}

/* The run's branch or worktree: its name, or that it was removed (forge gc,
 * forge cancel; before: a name that was no longer there). */
static void print_place(const char *key, const char *name, jv removed, const char *which)
{
	if (!name)
		return;
	if (json_get_bool(removed, which, false))
		printf("%-8s removed (was %s)\n", key, name);
	else
		printf("%-8s %s\n", key, name);
}

/* Where the run's worktree keeps what stopped commands left there
 * (git.h, forge_git_command_leftovers), or NULL (malloc'd): they go with
 * the worktree, and a file of the person's may be among them. */
static char *leftovers_of(const char *worktree, jv removed)
{
	char *left = NULL;

	if (worktree && !json_get_bool(removed, "worktree", false) &&
	    forge_git_command_leftovers(&left, worktree) < 0)
		left = NULL;
	return left;
}

static void print_leftovers(const char *worktree, jv removed)
{
	char *left = leftovers_of(worktree, removed);

	if (left)
		printf("%-8s %s: what stopped commands left in the worktree (removed with it)\n", "leftover", left);
	free(left);
}

static const char *str_or_empty(jv v, const char *key)
{
	const char *s = json_get_str(v, key);

	return s ? s : "";
}

/* Borrows all five; merged is the run.merged event or null, removed
 * runview_removed()'s. */
static void print_run(jv run, jv checkpoint, jv gates, jv merged, jv removed)
{
	jv mp = json_get(merged, "payload");
	char when[64];

	printf("run      %s\n", json_get_str(run, "trace_id"));
	printf("task     %s\n", json_get_str(run, "task"));
	if (jv_get_kind(mp) == JV_KIND_OBJECT)
		printf("status   merged into %s at %.12s\n", json_get_str(mp, "branch"), json_get_str(mp, "commit"));
	else
		printf("status   %s%s%s\n", json_get_str(run, "status"), json_get_str(run, "current_phase") ? " at " : "",
		       json_get_str(run, "current_phase") ? json_get_str(run, "current_phase") : "");
	jv_free(mp);
	char usd[MONEY_LEN];

	printf("cost     $%s (%.0f tokens)\n", money_fmt(usd, sizeof usd, json_get_num(run, "total_cost_usd", 0)),
	       json_get_num(run, "total_tokens", 0));
	runview_local_time(when, sizeof when, json_get_str(run, "started_at"), true);
	printf("started  %s\n", when);
	if (json_has(run, "automation_level"))
		printf("level    %.0f\n", json_get_num(run, "automation_level", 0));
	if (json_get_str(run, "error") && *json_get_str(run, "error")) {
		/* (it may hold a model's words: a question it asked) */
		char *reason = xstrdup(json_get_str(run, "error"));

		term_clean_line(reason, strlen(reason));
		printf("reason   %s\n", reason);
		free(reason);
	}
	jv task = json_get(checkpoint, "task");
	print_place("branch", json_get_str(task, "branch"), removed, "branch");
	print_place("worktree", json_get_str(task, "worktree"), removed, "worktree");
	print_leftovers(json_get_str(task, "worktree"), removed);
	jv_free(task);
	jv bounces = json_get(checkpoint, "bounces");
	if (jv_get_kind(bounces) == JV_KIND_ARRAY && jv_array_length(jv_copy(bounces)) > 0)
		printf("bounces  %d\n", jv_array_length(jv_copy(bounces)));
	jv_free(bounces);
	print_nodes(checkpoint, run_status_of(json_get_str(run, "status")) == RUN_RUNNING);
	jv_array_foreach(gates, i, g) {
		struct buf line = BUF_INIT;

		/* the prompt may be a model's words (an escalation's reason, its
		 * question): one line without its escape sequences */
		buf_addf(&line, "gate     %s %s (%s): forge gate approve %s", str_or_empty(g, "gate"),
			 str_or_empty(g, "status"), str_or_empty(g, "prompt"), str_or_empty(g, "id"));
		term_clean_line(line.buf, line.len);
		printf("%s\n", line.buf);
		buf_release(&line);
		jv_free(g);
	}
}

/* The run's sub-agents as a tree under their phases (runview.h); nothing
 * when there were none.  Borrows list. */
static void print_subagents(jv list)
{
	struct buf b = BUF_INIT;

	if (jv_get_kind(list) != JV_KIND_ARRAY || jv_array_length(jv_copy(list)) == 0)
		return;
	runview_subagent_tree(&b, list);
	printf("subagents\n%s", b.buf);
	buf_release(&b);
}

static int cmd_status(const struct cli_common *c, const struct args *a, const char *trace)
{
	struct session e;
	jv run = jv_null(), cp = jv_null(), gates = jv_null(), merged = jv_null(), subs = jv_null();
	char *resolved = NULL;
	int code = session_open(&e, c, SESSION_CONFIG | SESSION_STORE | SESSION_READONLY, jv_null());

	if (code) {
		fprintf(stderr, "%s: %s\n", prog, forge_last_error());
		return code;
	}
	if (!trace) {
		jv runs;
		if (store_runs_list(&runs, e.store, 1) == 0 && jv_array_length(jv_copy(runs)) > 0) {
			jv newest = jv_array_get(jv_copy(runs), 0);
			/* the list leaves the configuration out: the row has it */
			store_run_get(&run, e.store, json_get_str(newest, "trace_id"));
			jv_free(newest);
		}
		jv_free(runs);
	} else {
		if ((code = runview_resolve(&resolved, e.store, prog, trace)) != 0)
			goto out;
		store_run_get(&run, e.store, resolved);
	}
	if (jv_get_kind(run) != JV_KIND_OBJECT && trace) {
		/* (the trace has events and no run: exit 2 as for a TRACE
		 * that matches nothing, its help says; before: 1, "no such
		 * run") */
		struct buf msg = BUF_INIT;

		runview_not_a_run(&msg, resolved);
		fprintf(stderr, "%s: %s\n", prog, msg.buf);
		buf_release(&msg);
		code = FORGE_EXIT_USAGE;
		goto out;
	}
	if (jv_get_kind(run) != JV_KIND_OBJECT) {
		fprintf(stderr, "%s: no runs yet\n", prog);
		code = FORGE_EXIT_REJECTED;
		goto out;
	}
	run = with_level(e.store, runview_shown(e.store, run));
	const char *id = json_get_str(run, "trace_id");
	store_checkpoint_latest(&cp, e.store, id);
	gate_list(&gates, e.store, id, true);
	store_event_last(&merged, e.store, id, "run.merged");
	runview_subagents(&subs, e.store, id);
	if (a->json) {
		jv o = json_set(json_set(json_set(jv_object(), "run", jv_copy(run)), "state", jv_copy(cp)),
				"pending_gates", jv_copy(gates));
		o = json_set(o, "subagents", jv_copy(subs));
		jv task = json_get(cp, "task");
		char *left = leftovers_of(json_get_str(task, "worktree"), jv_null());

		o = json_set(o, "leftovers", json_str_or_null(left));
		free(left);
		jv_free(task);
		json_write_line(stdout, runview_money(json_set(o, "merged", json_get(merged, "payload"))), false);
	} else {
		/* (the task, the reason and the names without their escape
		 * sequences: a task may come from a script or another machine) */
		jv shown_run = term_safe(jv_copy(run)), shown_cp = term_safe(jv_copy(cp));

		/* its gate expired since it paused: no one waits for a person
		 * now (before: "waiting for a human at a gate", none pending) */
		if (run_status_of(json_get_str(run, "status")) == RUN_PAUSED && json_get_str(run, "error") &&
		    strcmp(json_get_str(run, "error"), "waiting for a human at a gate") == 0 &&
		    jv_get_kind(gates) == JV_KIND_ARRAY && jv_array_length(jv_copy(gates)) == 0)
			shown_run = json_set(shown_run, "error", jv_string("its gate expired without a decision: it "
									 "counts as rejected, and a resume ends the run"));
		jv task = json_get(cp, "task"), removed;
		struct forge_git *g = NULL;

		if (e.repo && forge_git_open(&g, e.repo) < 0)
			g = NULL;	/* (then only the worktree can be told gone) */
		removed = runview_removed(g, task);
		forge_git_free(g);
		jv_free(task);
		print_run(shown_run, shown_cp, gates, merged, removed);
		jv_free(removed);
		jv_free(shown_run);
		jv_free(shown_cp);
		print_subagents(subs);
	}
out:
	free(resolved);
	jv_free(merged);
	jv_free(subs);
	jv_free(run);
	jv_free(cp);
	jv_free(gates);
	session_close(&e);
	return code;
}

/* The history table's columns: TRACE and STATUS always, PHASE, STARTED
 * and COST while the terminal has room for them and a task of at least
 * TASK_MIN columns (dropped in that order), then the task in what is left
 * (nothing at the narrowest).  Header and rows are printed from the same
 * layout, so each header sits over its column. */
enum { COL_PHASE = 1, COL_STARTED = 2, COL_COST = 4 };
#define TASK_MIN 20

struct layout {
	unsigned drop;          /* COL_* not shown */
	int task;               /* the task column's width */
};

static struct layout history_layout(void)
{
	static const struct { unsigned col; int width; } optional[] = {
		{ COL_PHASE, 2 + 9 }, { COL_STARTED, 2 + 19 }, { COL_COST, 2 + 9 },
	};
	struct layout l = { 0, 60 };
	struct winsize ws;
	int fixed = 26 + 2 + 11 + 2;    /* TRACE, STATUS (it fits "interrupted"), the task's gap */

	if (!isatty(STDOUT_FILENO) || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0)
		return l;               /* piped: every column */
	for (size_t k = 0; k < sizeof optional / sizeof optional[0]; k++)
		fixed += optional[k].width;
	/* one column spare: a full row would wrap on some terminals */
	for (size_t k = 0; k < sizeof optional / sizeof optional[0] && fixed + TASK_MIN > ws.ws_col - 1; k++) {
		l.drop |= optional[k].col;
		fixed -= optional[k].width;
	}
	l.task = ws.ws_col - 1 - fixed > 0 ? ws.ws_col - 1 - fixed : 0;
	return l;
}

/* One row (the header too): task is cut to the layout's width in display
 * columns (term_cut), "…" in the last when it is cut. */
static void history_row(const struct layout *l, const char *trace, const char *status, const char *phase,
			const char *cost, const char *started, const char *task)
{
	size_t len = strlen(task), w = (size_t)l->task;
	bool cut = term_columns(task, len) > w;
	size_t n = cut ? term_cut(task, len, w > 0 ? w - 1 : 0) : len;

	printf("%-26s  %-11s", trace, status);
	if (!(l->drop & COL_PHASE))
		printf("  %-9s", phase);
	if (!(l->drop & COL_COST))
		printf("  %9s", cost);
	if (!(l->drop & COL_STARTED))
		printf("  %-19s", started);
	if (w > 0)
		printf("  %.*s%s", (int)n, task, cut ? "…" : "");
	putchar('\n');
}

static void history_line(struct store *st, jv r, const struct layout *l)
{
	jv merged = jv_null();
	char when[64], cost[MONEY_LEN];
	/* one line a run: a task's newlines, and any control character (which
	 * could drive the terminal), as spaces */
	char *task = xstrdup(json_get_str(r, "task") ? json_get_str(r, "task") : "");

	term_clean_line(task, strlen(task));
	store_event_last(&merged, st, json_get_str(r, "trace_id"), "run.merged");
	runview_local_time(when, sizeof when, json_get_str(r, "started_at"), true);
	money_fmt(cost, sizeof cost, json_get_num(r, "total_cost_usd", 0));
	history_row(l, json_get_str(r, "trace_id"),
		    jv_get_kind(merged) == JV_KIND_OBJECT ? "merged" : json_get_str(r, "status"),
		    json_get_str(r, "current_phase") ? json_get_str(r, "current_phase") : "-", cost, when, task);
	free(task);
	jv_free(merged);
}

static int cmd_history(const struct cli_common *c, const struct args *a)
{
	struct session e;
	jv runs;
	struct layout l = history_layout();
	int code = session_open(&e, c, SESSION_CONFIG | SESSION_STORE | SESSION_READONLY, jv_null());

	if (code) {
		fprintf(stderr, "%s: %s\n", prog, forge_last_error());
		return code;
	}
	if (store_runs_list(&runs, e.store, (int)a->limit) < 0) {
		fprintf(stderr, "%s: %s\n", prog, forge_last_error());
		session_close(&e);
		return FORGE_EXIT_DEPENDENCY;
	}
	if (!a->json && jv_array_length(jv_copy(runs)) > 0)
		history_row(&l, "TRACE", "STATUS", "PHASE", "COST", "STARTED", "TASK");
	jv_array_foreach(runs, i, r) {
		r = runview_shown(e.store, r);
		if (a->json) {
			json_write_line(stdout, runview_money(r), false);
			continue;
		}
		history_line(e.store, r, &l);
		jv_free(r);
	}
	jv_free(runs);
	session_close(&e);
	return FORGE_EXIT_OK;
}

/*
 * The cancelled run's worktree goes now (runclean.h, RUNCLEAN_CANCEL):
 * uncommitted changes are kept on refs/forge/TRACE/saved/N first, and the
 * branch stays when it has commits (the work may be worth a look; `forge
 * gc` removes it).  A run still alive keeps its worktree until it has
 * stopped: its process may be writing there; `forge gc` removes it then.
 */
static void clean_cancelled(const char *repo, const char *trace, bool alive)
{
	struct forge_git *g = NULL;

	if (alive) {
		printf("the worktree stays until the run has stopped; forge gc removes it\n");
		return;
	}
	if (!repo)
		return;      /* a run recorded without its repository: nothing to find */
	if (forge_git_open(&g, repo) < 0 || runclean(g, trace, RUNCLEAN_CANCEL, false, stdout, NULL) < 0)
		fprintf(stderr, "%s: the run's worktree was not removed: %s\n", prog, forge_last_error());
	forge_git_free(g);
}

static int cmd_cancel(const struct cli_common *c, const char *typed)
{
	struct session e;
	jv run, gates;
	char *trace = NULL;
	bool alive = false;
	int code = session_open(&e, c, SESSION_CONFIG | SESSION_STORE | SESSION_EXISTING, jv_null());

	if (code) {
		fprintf(stderr, "%s: %s\n", prog, forge_last_error());
		return code;
	}
	if ((code = runview_resolve(&trace, e.store, prog, typed)) != 0) {
		session_close(&e);
		return code;
	}
	if (store_run_get(&run, e.store, trace) < 0 || jv_get_kind(run) != JV_KIND_OBJECT) {
		struct buf msg = BUF_INIT;

		if (runview_pipeline(e.store, trace))
			runview_not_a_run(&msg, trace);
		else
			buf_addf(&msg, "no run '%s'", trace);
		fprintf(stderr, "%s: %s\n", prog, msg.buf);
		buf_release(&msg);
		jv_free(run);
		free(trace);
		session_close(&e);
		return FORGE_EXIT_USAGE;
	}
	const char *status = json_get_str(run, "status");
	if (run_status_terminal(run_status_of(status))) {
		fprintf(stderr, "%s: run %s is already %s\n", prog, trace, status);
		code = FORGE_EXIT_REJECTED;
	} else {
		if (gate_list(&gates, e.store, trace, true) == 0) {
			jv_array_foreach(gates, i, g) {
				gate_decide(e.store, json_get_str(g, "id"), false, "cancel", "run cancelled");
				jv_free(g);
			}
		}
		jv_free(gates);
		if (store_run_update(e.store, trace, "cancelled", NULL, "cancelled by a human") < 0) {
			/* not cancelled: nothing is stopped or removed */
			fprintf(stderr, "%s: %s\n", prog, forge_last_error());
			jv_free(run);
			free(trace);
			session_close(&e);
			return FORGE_EXIT_DEPENDENCY;
		}
		/* A live run stops now: its holder (the supervisor, or a phase run
		 * by hand) sees the status and stops with 130. */
		jv lease;
		if (store_lease_get(&lease, e.store, trace) == 0 && json_get_bool(lease, "alive", false)) {
			double pid = json_get_num(lease, "pid", 0);

			alive = true;
			/* only the process that took the lease: never one that got
			 * its pid since (the signal checks who it is) */
			if (store_lease_signal(lease, SIGTERM) == 0)
				printf("stopping pid %.0f (%s)\n", pid, json_get_str(lease, "program") ?
				       json_get_str(lease, "program") : "forge");
			else
				fprintf(stderr, "%s: run %s is held by pid %.0f on %s: it stops at its "
						"next phase\n", prog, trace, pid, json_get_str(lease, "host"));
		}
		jv_free(lease);
		struct stream_out out;
		stream_out_init(&out, stdout, "forge-supervisor", NULL);
		stream_out_set_trace(&out, trace);
		jv ev = stream_event_new(&out, "run.cancelled", jv_object());
		store_event_put(e.store, ev, NULL, 0, NULL);
		jv_free(ev);
		printf("cancelled %s\n", trace);
		clean_cancelled(e.repo ? e.repo : json_get_str(run, "repo"), trace, alive);
	}
	jv_free(run);
	free(trace);
	session_close(&e);
	return code;
}

/* forge-supervisor OPTIONS CMD …: the command came after the options, all
 * of which were parsed; one it does not take is a usage error all the same. */
static void refuse_others(const char *cmd, const struct args *a)
{
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
		if (strcmp(cmd, commands[i].name) != 0)
			continue;
		for (const struct cli_option *o = options; o->name; o++)
			if ((a->given & OPT_BIT(o->id)) && !(commands[i].takes & OPT_BIT(o->id)))
				cli_usage_error(&spec, "%s takes no --%s (see forge %s --help)", cmd, o->name, cmd);
	}
}

int main(int argc, char **argv)
{
	struct cli_common common;
	struct args a = { .budget = -1, .limit = 20, .level = -1 };
	char name[64], synopsis[256];
	const char *cmd = NULL;

	/* forge CMD … (argv[0] "forge"), or forge-supervisor CMD …: the
	 * command comes first, and only its own options are parsed */
	const char *base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	const struct command *c = NULL;
	struct cli_option own[sizeof options / sizeof *options];

	for (size_t i = 0; argc > 1 && i < sizeof commands / sizeof *commands; i++)
		if (!strcmp(argv[1], commands[i].name))
			c = &commands[i];
	if (c) {
		if (!strcmp(base, "forge")) {
			snprintf(name, sizeof name, "forge %s", c->name);
			prog = spec.name = name;
			spec.synopsis = c->synopsis;
		} else {
			snprintf(synopsis, sizeof synopsis, "%s %s", c->name, c->synopsis);
			spec.synopsis = synopsis;
		}
		if (c->description) {   /* and no examples of forge run */
			spec.description = c->description;
			spec.extra_help = NULL;
		}
		own_options(own, c->takes);
		spec.options = own;
		spec.flags = c->flags;
		cmd = c->name;
	}
	/* with the command known, parse what follows it */
	int skip = cmd ? 1 : 0;
	int first = cli_parse(&common, &spec, argc - skip, argv + skip, on_option, &a) + skip;
	int status = FORGE_EXIT_USAGE;
	int nargs;
	char **rest;

	if (cmd) {
		/* argv[1] was the command; the operands follow the options */
		nargs = argc - first;
		rest = argv + first;
	} else {
		if (first >= argc)
			cli_usage_error(&spec, "a command is needed: run, resume, status, history or cancel");
		cmd = argv[first];
		nargs = argc - first - 1;
		rest = argv + first + 1;
		refuse_others(cmd, &a);
	}

	if (strcmp(cmd, "run") == 0) {
		if (nargs < 1)
			cli_usage_error(&spec, "run needs a task");
		struct buf task = BUF_INIT;
		for (int i = 0; i < nargs; i++)
			buf_addf(&task, "%s%s", i ? " " : "", rest[i]);
		/* Before anything is made: no run, worktree or branch for a bad task. */
		if (stream_task_check(task.buf, task.len) < 0)
			cli_usage_error(&spec, "%s", forge_last_error());
		if (a.dry_run && a.phases[0] && strcmp(a.phases[0], "plan") != 0)
			cli_usage_error(&spec, "--dry-run runs the plan phase alone: --phases must start with plan");
		if (a.pipeline && (a.phases[0] || a.dry_run))
			cli_usage_error(&spec, "--pipeline runs the pipeline's own nodes: not with --phases or --dry-run");
		status = cmd_run_or_resume(&common, &a, "run", task.buf);
		buf_release(&task);
	} else if (strcmp(cmd, "resume") == 0 && nargs == 1) {
		status = cmd_run_or_resume(&common, &a, "resume", rest[0]);
	} else if (strcmp(cmd, "status") == 0 && nargs <= 1) {
		status = cmd_status(&common, &a, nargs ? rest[0] : NULL);
	} else if (strcmp(cmd, "history") == 0 && nargs == 0) {
		status = cmd_history(&common, &a);
	} else if (strcmp(cmd, "cancel") == 0 && nargs == 1) {
		status = cmd_cancel(&common, rest[0]);
	} else if (!strcmp(cmd, "resume") || !strcmp(cmd, "status") || !strcmp(cmd, "history") ||
		   !strcmp(cmd, "cancel")) {
		cli_usage_error(&spec, "wrong number of arguments for '%s'", cmd);
	} else {
		cli_usage_error(&spec, "unknown command '%s'", cmd);
	}
	free(a.phases_text);
	return cli_finish(prog, status);
}
