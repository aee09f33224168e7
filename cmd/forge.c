/*
 * forge - the command a person types; dispatches like git: `forge CMD ARGS`
 * runs the program forge-CMD found beside this executable (`make install`
 * puts them all in one bin directory).  `forge run|resume|status|history|cancel`
 * go to forge-supervisor, `forge clean` to forge-gc.
 */
#include "app/cli.h"
#include "core/buf.h"
#include "core/forge.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
	const char *name;
	const char *program;    /* the executable, when not forge-NAME */
	const char *help;
} commands[] = {
	{ "run", "forge-supervisor", "carry a task through plan, implement, review, test and deploy" },
	{ "resume", "forge-supervisor", "continue a paused or interrupted run from its last checkpoint" },
	{ "status", "forge-supervisor", "show a run's state" },
	{ "history", "forge-supervisor", "list recent runs" },
	{ "cancel", "forge-supervisor", "cancel a run" },
	{ "clean", "forge-gc", "the same as gc" },
	{ "show", NULL, "a run: summary, plan, diff stat, findings, tests, cost, timeline" },
	{ "diff", NULL, "a run's changes as a unified diff" },
	{ "merge", NULL, "merge a completed run's branch into the branch it started from" },
	{ "gc", NULL, "remove worktrees and branches of cancelled, failed (not resumable), merged and no-change runs" },
	{ "report", NULL, "a run as one self-contained HTML page" },
	{ "compile", NULL, "the product compiler: an idea becomes a product through typed documents" },
	{ "stage", NULL, "one stage of forge compile as a filter (interview, flows, contracts, rules, …)" },
	{ "plan", NULL, "phase filter: task -> plan" },
	{ "implement", NULL, "phase filter: plan -> changes in the run's worktree" },
	{ "review", NULL, "phase filter: changes or a diff -> findings and a decision" },
	{ "test", NULL, "phase filter: run the tests and analyse failures" },
	{ "deploy", NULL, "phase filter: ship approved, tested changes" },
	{ "events", NULL, "store, replay and list stream events" },
	{ "config", NULL, "show the effective configuration; init, set KEY VALUE" },
	{ "llm", NULL, "ask a model from the command line" },
	{ "gate", NULL, "approve or reject a waiting human gate" },
	{ "memory", NULL, "inspect and manage what forge has learned" },
	{ "findings", NULL, "list and dismiss review findings" },
	{ "feedback", NULL, "production feedback: anomalies and errors after a deploy" },
	{ "skills", NULL, "list the skills offered to a phase" },
	{ "mcp", NULL, "list the configured MCP servers and their tools; call one tool" },
	{ "pipeline", NULL, "check, draw and list pipelines: graphs of phases and programs" },
	{ "metrics", NULL, "feedback-loop figures" },
	{ "doctor", NULL, "what this machine gives forge" },
	{ "db", NULL, "the database: backend, schema version, pending migrations; migrate" },
	{ "tui", NULL, "a full-screen terminal interface: runs, live views, gates, commands, models" },
	{ "supervisor", NULL, "run whole pipelines (used by run/resume/...)" },
	{ "agent", NULL, "a sub-agent: one delegated sub-task with its tools (used by the delegate tool)" },
};

static const struct cli_spec spec = {
	.name = "forge",
	.synopsis = "[--help] [--version] [COMMON OPTIONS] COMMAND [ARGS]",
	.description = "Forge carries a software task through plan, implement, review, test and\n"
		       "deploy with LLM agents, inside a git repository.  Each command is its own\n"
		       "program; `forge COMMAND --help` shows its options.  The options below,\n"
		       "given before COMMAND, go to it (a command that calls no model refuses\n"
		       "the model options).",
	/* (the common and model options before the command go to it) */
	.flags = CLI_MODEL_OPTIONS,
};

static const char *const *search_dirs(void)
{
	static const char *dirs[2];
	static char *self;

	if (!self) {
		self = cli_self_dir();
		dirs[0] = self;
	}
	return dirs;
}

/* Path of an executable called program, or NULL (malloc'd). */
static char *find_program(const char *program)
{
	for (const char *const *d = search_dirs(); *d; d++) {
		char path[PATH_MAX];

		if ((size_t)snprintf(path, sizeof path, "%s/%s", *d, program) >= sizeof path)
			continue;
		if (access(path, X_OK) == 0)
			return xstrdup(path);
	}
	return NULL;
}

static const char *help_for(const char *name)
{
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(commands[i].name, name) == 0)
			return commands[i].help;
	return "";
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the forge-* executables found (without "forge-"), sorted;
 * *n how many.  Each malloc'd. */
static size_t found_programs(char **names, size_t max)
{
	size_t n = 0;

	for (const char *const *d = search_dirs(); *d; d++) {
		DIR *dir = opendir(*d);
		struct dirent *e;

		if (!dir)
			continue;
		while ((e = readdir(dir)) && n < max) {
			const char *name = e->d_name;
			char path[PATH_MAX];
			bool dup = false;

			if (strncmp(name, "forge-", 6) != 0 || strchr(name, '.'))
				continue;
			if ((size_t)snprintf(path, sizeof path, "%s/%s", *d, name) >= sizeof path ||
			    access(path, X_OK) != 0)
				continue;
			for (size_t i = 0; i < n; i++)
				dup = dup || strcmp(names[i], name + 6) == 0;
			if (!dup)
				names[n++] = xstrdup(name + 6);
		}
		closedir(dir);
	}
	qsort(names, n, sizeof names[0], cmp_str);
	return n;
}

/*
 * Every command `forge CMD` can run here, in --help's order: the programs
 * found, each followed by the table's commands it serves (forge-supervisor:
 * run, resume, …).  Calls each(name, program, help, payload); returns how
 * many.  The one list --help, --help-man, --help-words and --list-commands
 * print, so the manual and the completions pick up a new program or a new
 * entry of the table by themselves.
 */
static size_t each_command(void (*each)(const char *name, const char *program, const char *help, void *payload),
			   void *payload)
{
	char *names[256] = { NULL };
	size_t n = found_programs(names, 256), count = 0;

	for (size_t i = 0; i < n; i++) {
		char program[300];

		snprintf(program, sizeof program, "forge-%s", names[i]);
		each(names[i], program, help_for(names[i]), payload);
		count++;
		for (size_t j = 0; j < sizeof commands / sizeof commands[0]; j++)
			if (commands[j].program && !strcmp(commands[j].program, program)) {
				each(commands[j].name, commands[j].program, commands[j].help, payload);
				count++;
			}
		free(names[i]);
	}
	return count;
}

static void print_help_line(const char *name, const char *program, const char *help, void *payload)
{
	char line[1024];

	(void)program;
	snprintf(line, sizeof line, "  %-12s %s", name, help);
	cli_help_text(line, payload);	/* within 80 columns */
}

static void print_tsv(const char *name, const char *program, const char *help, void *payload)
{
	fprintf(payload, "%s\t%s\t%s\n", name, program, help);
}

static void print_word(const char *name, const char *program, const char *help, void *payload)
{
	(void)program;
	(void)help;
	fprintf(payload, "command\t%s\t\n", name);
}

static void add_help_line(const char *name, const char *program, const char *help, void *payload)
{
	(void)program;
	buf_addf(payload, "  %-12s %s\n", name, help);
}

/* List the commands found, with their descriptions. */
static void list_commands(FILE *f)
{
	fprintf(f, "\nCommands found:\n");
	if (!each_command(print_help_line, f))
		fprintf(f, "  (none: build with `make`)\n");
}

/* The hidden options the manual and the completions are made from (cli.h:
 * cli_man, cli_words); --list-commands: NAME, PROGRAM, HELP tab-separated. */
static int hidden(const char *opt)
{
	if (!strcmp(opt, "--list-commands")) {
		each_command(print_tsv, stdout);
	} else if (!strcmp(opt, "--help-words")) {
		each_command(print_word, stdout);
		cli_words(&spec, stdout);
	} else if (!strcmp(opt, "--help-man")) {
		struct buf b = BUF_INIT;
		struct cli_spec man = spec;

		buf_adds(&b, "Commands:\n");
		each_command(add_help_line, &b);
		buf_adds(&b, "\n`forge help COMMAND` (or `forge COMMAND --help`) shows a command's options;\n"
			     "each has its own page, forge-COMMAND(1).\n");
		man.extra_help = b.buf;
		cli_man(&man, stdout);
		buf_release(&b);
	} else {
		return -1;
	}
	return cli_finish("forge", FORGE_EXIT_OK);
}

/*
 * A long option before the command given as a prefix ("--conf X") is
 * written whole in argv[i] ("--config X"), as the command after it takes it
 * (cli.h: cli_common_long_name), so the command reads the option meant
 * and not another its own options make the prefix name.  A prefix several
 * begin with, and a value given to a flag ("--quiet=1"), are usage errors
 * saying so, as after the command.
 */
static void whole_name(int argc, char **argv, int i)
{
	const char *typed = argv[i];
	char cands[256];
	const char *name = cli_common_long_name(typed, cands, sizeof cands);
	size_t len = strcspn(typed + 2, "=");

	if (!name && cands[0])
		cli_usage_error(&spec, "option '%.*s' is ambiguous; possibilities: %s", (int)len + 2, typed,
				cands);
	if (!name)
		return;
	if (strlen(name) != len) {
		struct buf whole = BUF_INIT;

		buf_addf(&whole, "--%s%s", name, typed + 2 + len);
		argv[i] = buf_detach(&whole, NULL);
	}
	if (typed[2 + len] == '=' && !cli_common_option(argc, argv, i))
		cli_usage_error(&spec, "option '--%s' takes no argument", name);
}

/*
 * The common options given before the command ("forge --repo X status",
 * "forge -v run …", "forge --provider openai llm hi"): how many of
 * argv[from..] they take, 0 at the command.  They go to the command, which
 * takes them as its own: the options every program takes and the model
 * options (cli.h), which a command that calls no model refuses itself; a
 * long one may be shortened as after the command (whole_name).  An option
 * that is neither is a usage error; --help and --version are handled by
 * main().
 */
static int common_before(int argc, char **argv, int from)
{
	int i = from;

	while (i < argc && argv[i][0] == '-' && argv[i][1]) {
		const char *a;
		int n;

		if (argv[i][1] == '-')
			whole_name(argc, argv, i);
		a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h") || !strcmp(a, "--version"))
			break;
		n = cli_common_option(argc, argv, i);
		if (n < 0)
			cli_usage_error(&spec, "option '%s' needs an argument", a);
		if (!n)
			return -(i + 1);
		i += n;
	}
	return i - from;
}

static void usage(FILE *f)
{
	cli_usage(&spec, f);
	list_commands(f);
}

int main(int argc, char **argv)
{
	const char *cmd;
	const char *program_name = NULL;
	char program[256];
	bool to_supervisor = false;
	/* A write past a file-size limit (the help into a file) fails and is
	 * reported, as in every forge program (cli_parse); the command starts
	 * with the disposition forge was given, as from a shell (an ignored
	 * one survives the exec). */
	struct sigaction ign = { .sa_handler = SIG_IGN }, given;

	sigemptyset(&ign.sa_mask);
	sigaction(SIGXFSZ, &ign, &given);
	if (argc < 2) {
		usage(stderr);
		return FORGE_EXIT_USAGE;
	}
	if (argc == 2 && argv[1][0] == '-') {
		int st = hidden(argv[1]);

		if (st >= 0)
			return st;
	}
	/* common options before the command move behind it */
	int npre = common_before(argc, argv, 1);
	if (npre < 0)
		cli_usage_error(&spec, "unknown option '%s'", argv[-npre - 1]);
	if (npre > 0 && 1 + npre >= argc)
		cli_usage_error(&spec, "a command is needed after the options (see 'forge --help')");
	char **pre = argv + 1;
	argv += npre;
	argc -= npre;
	cmd = argv[1];
	bool help_for_cmd = false;
	if (strcmp(cmd, "help") == 0 && argc > 2) {
		/* forge help CMD == forge CMD --help */
		cmd = argv[2];
		help_for_cmd = true;
	} else if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		usage(stdout);
		return cli_finish("forge", FORGE_EXIT_OK);
	} else if (strcmp(cmd, "--version") == 0) {
		printf("forge %s\n", FORGE_VERSION);
		return cli_finish("forge", FORGE_EXIT_OK);
	} else if (cmd[0] == '-') {
		cli_usage_error(&spec, "unknown option '%s'", cmd);
	}

	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(commands[i].name, cmd) == 0 && commands[i].program) {
			program_name = commands[i].program;
			to_supervisor = strcmp(program_name, "forge-supervisor") == 0;
		}
	if (!program_name) {
		snprintf(program, sizeof program, "forge-%s", cmd);
		program_name = program;
	}
	if (strchr(cmd, '/'))
		cli_usage_error(&spec, "'%s' is not a forge command", cmd);

	char *path = find_program(program_name);
	if (!path) {
		fprintf(stderr, "forge: '%s' is not a forge command (no %s beside forge).\n"
				"See 'forge --help'.\n", cmd, program_name);
		return FORGE_EXIT_USAGE;
	}

	/*
	 * argv for the program: forge-CMD [COMMON] ARGS, or forge-supervisor
	 * CMD [COMMON] ARGS with argv[0] "forge", which tells the supervisor to
	 * call itself "forge CMD" in its messages and help.
	 */
	char **args = xcalloc((size_t)argc + (size_t)npre + 2, sizeof *args);
	int n = 0;
	args[n++] = to_supervisor ? "forge" : (char *)program_name;
	if (to_supervisor)
		args[n++] = (char *)cmd;
	for (int i = 0; i < npre; i++)
		args[n++] = pre[i];
	if (help_for_cmd)
		args[n++] = "--help";
	else
		for (int i = 2; i < argc; i++)
			args[n++] = argv[i];
	args[n] = NULL;
	fflush(NULL);
	sigaction(SIGXFSZ, &given, NULL);
	execv(path, args);
	fprintf(stderr, "forge: cannot run '%s': %s\n", path, strerror(errno));
	free(args);
	free(path);
	return FORGE_EXIT_DEPENDENCY;
}
