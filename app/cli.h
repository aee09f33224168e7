/*
 * cli.h - the command line every forge program shares (DESIGN.md section 2).
 *
 * Common options, accepted by every program:
 *   -h, --help          usage on stdout, exit 0
 *       --version       "PROG (forge) VERSION", exit 0
 *       --repo DIR      the repository (default: the one containing the cwd)
 *       --db PATH       the database (default $FORGE_DB, else <repo>/.forge/forge.db)
 *       --config PATH   an extra config file layered over the project's
 *   -q, --quiet / -v, --verbose
 * Model options, for programs whose spec sets CLI_MODEL_OPTIONS:
 *   --provider P, --model M, --base-url URL, --cassette FILE
 *   (their environment variables FORGE_PROVIDER, FORGE_MODEL, FORGE_BASE_URL,
 *   FORGE_CASSETTE are a layer of the configuration, config.h, not read
 *   here: struct cli_common holds only what the command line said)
 *
 * A program adds its own options in a table; usage text is built from the
 * tables, so --help can never disagree with what is parsed.  An unknown
 * option or a missing argument prints the error and a hint to --help on
 * stderr and exits 2.
 */
#ifndef FORGE_CLI_H
#define FORGE_CLI_H

#include <jv.h>
#include <stdbool.h>

enum cli_flags {
	CLI_MODEL_OPTIONS = (1 << 0),
	/* Accept the model options and ignore them: a program a supervisor
	 * runs with the model options of the whole pipeline (forge-deploy)
	 * but that calls no model itself. */
	CLI_MODEL_OPTIONS_UNUSED = (1 << 1),
};

struct cli_option {
	const char *name;       /* long name without "--" */
	int short_name;         /* 0 for none */
	const char *arg;        /* argument name in usage, NULL for a flag */
	const char *help;       /* one line */
	int id;                 /* passed to on_option: the short name, or 256..999 (1000+ are taken) */
};

struct cli_spec {
	const char *name;           /* program name, "forge-events" */
	const char *synopsis;       /* lines after "usage: NAME ", '\n'-separated */
	const char *description;    /* paragraph printed under the synopsis */
	const struct cli_option *options;   /* ends with {NULL}; may be NULL */
	unsigned flags;             /* enum cli_flags */
	const char *extra_help;     /* printed after the options (commands, examples); may be NULL;
				     * when it has a line starting "Exit", the generic exit status
				     * line is left out */
};

struct cli_common {
	const char *repo;
	const char *db;
	const char *config;
	int verbosity;              /* -1 quiet, 0 default, >0 verbose */
	const char *provider;
	const char *model;
	const char *base_url;
	const char *cassette;
};

/*
 * Parse argv.  Common options land in *common (strings borrowed from argv,
 * NULL when not given); each program option calls on_option(id, arg, payload),
 * which returns 0, or -1 after forge_error() to reject the value (usage
 * error, exit 2).  --help and --version print and exit 0.  Returns the index
 * of the first operand.  Options may follow operands (GNU order) unless
 * `stop_at_operand`.
 */
int cli_parse(struct cli_common *common, const struct cli_spec *spec, int argc, char **argv,
	      int (*on_option)(int id, const char *arg, void *payload), void *payload);

/*
 * The model options given on the command line as the "llm" part of a
 * config flags layer: {"provider":…,"model":…,"base_url":…,"cassette":…},
 * only the keys that were given.  A new reference.
 */
jv cli_model_flags(const struct cli_common *common);

/* Print "NAME: MESSAGE" and "Try 'NAME --help'" on stderr, exit 2. */
void cli_usage_error(const struct cli_spec *spec, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/* Print the full usage to f. */
void cli_usage(const struct cli_spec *spec, void *f /* FILE * */);

/*
 * Finish a program: flush and close stdout, turning a failed write into the
 * right status (EPIPE → FORGE_EXIT_PIPE quietly; other errors → a message
 * and FORGE_EXIT_DEPENDENCY).  Returns the status to exit with: `status`
 * unless closing stdout failed.
 */
int cli_finish(const char *name, int status);

/*
 * The repository root for --repo DIR (or the cwd when dir is NULL): the
 * main working tree of the repository that contains it, also when DIR is a
 * linked worktree.  malloc'd; -1 with a message when not in a repository.
 */
int cli_repo_root(char **out, const char *dir);

#endif
