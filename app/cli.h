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
#include <sys/types.h>

enum cli_flags {
	CLI_MODEL_OPTIONS = (1 << 0),
	/* Accept the model options and ignore them: a program a supervisor
	 * runs with the model options of the whole pipeline (forge-deploy)
	 * but that calls no model itself. */
	CLI_MODEL_OPTIONS_UNUSED = (1 << 1),
};

struct config;

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
 * Every program calls it first: it also ignores SIGXFSZ for the program
 * (a write past a file-size limit fails with EFBIG instead of killing it),
 * and sets program_invocation_short_name, the name the library's messages
 * begin with, to spec->name (a copy): "forge history" when forge-supervisor
 * runs as forge history, not the "forge" it was executed as.
 */
int cli_parse(struct cli_common *common, const struct cli_spec *spec, int argc, char **argv,
	      int (*on_option)(int id, const char *arg, void *payload), void *payload);

/*
 * Whether argv[i] is a common or a model option (above), for a program
 * that hands them on to another (forge COMMON COMMAND): how many of
 * argv[i..] it takes -- 1, or 2 with its argument apart ("--repo DIR") --,
 * 0 when it is neither (--help, -h and --version included: the caller's),
 * -1 when its argument is missing.  Exact names only (no abbreviations);
 * short options bundled ("-qv") count as one.
 */
int cli_common_option(int argc, char **argv, int i);

/*
 * The common or model option (above; --help and --version included) the
 * long option arg ("--NAME" or "--NAME=VALUE", as typed) names, as
 * cli_parse takes one after a command: its whole name, or a prefix only
 * one of them begins with ("--conf" is --config).  Returns that option's
 * name without "--" ("config"), a static string; NULL when none does, or
 * -- cands then non-empty -- when several begin so: their names
 * ("--config, --cassette") are put in cands (size bytes; "" otherwise).
 */
const char *cli_common_long_name(const char *arg, char *cands, size_t size);

/*
 * The model options given on the command line as the "llm" part of a
 * config flags layer: {"provider":…,"model":…,"base_url":…,"cassette":…},
 * only the keys that were given.  A new reference.
 */
jv cli_model_flags(const struct cli_common *common);

/*
 * A configured base URL that phase's model calls do not use because the
 * provider was only inferred from which key is set (llm.h: llm_choose,
 * base_url_unused) is said on stderr once, with how to name its provider:
 * the programs this one starts (forge run's phases) inherit
 * FORGE_BASE_URL_UNUSED_SAID and do not say it again.  phase may be NULL.
 * Not when quiet (-q); never an error.
 */
void cli_say_base_url_unused(const struct config *cfg, const char *phase, bool quiet);

/*
 * The common options given, as arguments for another Forge program this
 * one runs: --config, --provider, --model, --base-url, --cassette, -q/-v,
 * and with `places` also --repo and --db.  Fills argv (strings borrowed
 * from common) with at most max - 1 entries and a NULL; returns how many.
 */
int cli_common_argv(const char **argv, int max, const struct cli_common *common, bool places);

/* The directory this executable is in (/proc/self/exe), where the other
 * Forge programs are installed; malloc'd, NULL when it cannot be read. */
char *cli_self_dir(void);

/* Print "NAME: MESSAGE" and "Try 'NAME --help'" on stderr, exit 2. */
void cli_usage_error(const struct cli_spec *spec, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/*
 * Print the full usage to f: the synopsis, description, options and
 * extra_help within 80 columns (cli_help_text; an option's description
 * goes on under its column).
 */
void cli_usage(const struct cli_spec *spec, void *f /* FILE * */);

/*
 * Free text (a description, extra_help) on f, each line ending in a newline,
 * within 80 columns.  A paragraph (unindented lines up to a blank or
 * indented one) or an indented item (a line and the lines under its
 * description's column, "  store   persist …") whose lines all fit is
 * printed as it is, so text wrapped by hand stays as written; one with a
 * longer line is word-wrapped whole, an item under its description's
 * column.  text borrowed.
 */
void cli_help_text(const char *text, void *f /* FILE * */);

/*
 * The same help as a man(7) page (section 1) on f, so the manual can never
 * disagree with --help: NAME (the page name is spec->name with spaces as
 * '-', "forge run" → forge-run; the summary is the description's first
 * clause), SYNOPSIS, DESCRIPTION, OPTIONS, MODEL OPTIONS, COMMON OPTIONS,
 * then extra_help: an unindented line ending in ':' becomes a subsection,
 * indented lines are shown as they are (no fill), a line starting "Exit
 * status"/"Exit:" begins EXIT STATUS (the generic one when there is none),
 * and SEE ALSO forge(1).  Every program prints it for the hidden common
 * option --help-man (scripts/gen-man makes the installed pages from it).
 */
void cli_man(const struct cli_spec *spec, void *f /* FILE * */);

/*
 * What shell completion offers, one tab-separated line each, for the hidden
 * common option --help-words:
 *   command	WORD	OPERAND   a subcommand: the first word of a synopsis
 *                                line when it is lower case; OPERAND is the
 *                                first upper-case operand after it ("TRACE",
 *                                "ID") or empty
 *   operand	OPERAND            a synopsis line that starts with an operand
 *   option	--NAME	ARG        every option (the program's, the model
 *                                options it takes, the common ones), and
 *   option	-X	ARG            the short forms; ARG is empty for a flag
 */
void cli_words(const struct cli_spec *spec, void *f /* FILE * */);

/*
 * Finish a program: flush and close stdout, turning a failed write into the
 * right status (EPIPE → FORGE_EXIT_PIPE quietly; other errors → a message
 * and FORGE_EXIT_DEPENDENCY).  Returns the status to exit with: `status`
 * unless closing stdout failed.
 */
int cli_finish(const char *name, int status);

/* SIGINT and SIGTERM to on_signal (no flags, nothing blocked while it
 * runs): the programs' "stop what runs, say so, exit 130". */
void cli_catch_interrupts(void (*on_signal)(int));

/*
 * SIGINT and SIGTERM of a program that calls models (a phase, a sub-agent,
 * forge llm), for its calls' cost: one that comes while a model call is
 * under way stops that call at once (llm_interrupt: it fails as
 * LLM_ERR_INTERRUPTED, billed for what arrived, its llm_calls row written)
 * and is kept: the program leaves once it has recorded the call,
 * cli_leave_if_interrupted().  So is one that comes while wait(sig) says
 * the program waits on a child that records its own call (a sub-agent:
 * wait passes the signal on to it and returns true; NULL: none).  Any
 * other signal, and a second one, is leave(sig) at once -- but a second
 * sent by relay (a pid; 0: none), the supervisor that passes on to its
 * phase the Ctrl-C the phase got from the terminal too.  leave and wait
 * run in the handler: async-signal-safe; leave ends the process.
 */
void cli_catch_model_interrupts(void (*leave)(int sig), bool (*wait)(int sig), pid_t relay);
/* A signal was kept (cli_catch_model_interrupts): stdout flushed (the
 * call's record), leave(sig) now.  Returns when none was. */
void cli_leave_if_interrupted(void);

struct stream_out;
struct stream_input;

/*
 * Report bad input the documented way: "PROG: line N: REASON" on stderr
 * and an input.rejected event {"line","reason"} on out.  Returns
 * FORGE_EXIT_USAGE (2).
 */
int cli_reject(struct stream_out *out, const struct stream_input *in, const char *reason);

/* The exit status for a program that wanted to exit with `status`: status,
 * or FORGE_EXIT_PIPE when the reader went away, or FORGE_EXIT_DEPENDENCY
 * when stdout failed otherwise (after a message on stderr). */
int cli_out_status(const struct stream_out *out, int status);

/*
 * The repository root for --repo DIR (or the cwd when dir is NULL):
 * forge_git_root() of the repository that contains it -- its main working
 * tree, also when DIR is a linked worktree.  malloc'd; -1 with a message when not in a repository,
 * FORGE_GIT_NOT_OWNED (git/git.h) with one when it is another user's that
 * safe.directory does not name, FORGE_GIT_SETUP when it is in a format
 * libgit2 cannot open (a format extension: sha256 objects, reftable).
 */
int cli_repo_root(char **out, const char *dir);

/*
 * A program's session: the repository, the configuration and the database,
 * opened the one way every program does it.
 *
 * repo: cli_repo_root(--repo).  Outside a repository repo is NULL (no
 * project layer) unless --repo was given, SESSION_NEED_REPO is set, or the
 * database path needs the repository (SESSION_STORE, no --db, FORGE_DB unset):
 * then FORGE_EXIT_USAGE ("'.' is not in a git repository", with "; use
 * --repo DIR or --db PATH" when only the database needed it).  In another
 * user's repository that safe.directory does not name: FORGE_EXIT_USAGE,
 * saying how to trust it; in one libgit2 cannot open (cli_repo_root's
 * FORGE_GIT_SETUP): FORGE_EXIT_USAGE, naming the format extension.  A repository whose .forge is not a directory (a
 * file of the project; forge_dir_check()) when the program reads its
 * configuration, needs the repository or keeps its database there:
 * FORGE_EXIT_USAGE, before anything else is done.
 * cfg (SESSION_CONFIG): config_load() with the project layer of repo, the
 * --config file and a flags layer: `flags` (consumed; jv_null() for none)
 * with the model options (cli_model_flags()) set over it as "llm.*";
 * FORGE_EXIT_USAGE on error.
 * db and store (SESSION_STORE, or SESSION_STORE_IF_NAMED when --db or
 * FORGE_DB names one): store_resolve_path() and store_open(), or
 * store_open_readonly() with SESSION_READONLY, or with
 * SESSION_READ_IF_ABSENT when the file does not exist (a command that
 * writes only to what is there: nothing to write, nothing made);
 * FORGE_EXIT_DEPENDENCY on error.  A database file that does not exist is
 * read as an empty one (store_absent()) and, when --db named it, stderr
 * says so: a mistyped path shows.  With SESSION_EXISTING (a command that
 * acts on a run, gate or finding already recorded: gate approve, resume,
 * cancel, merge, findings dismiss) a SQLite file that does not exist is FORGE_EXIT_USAGE,
 * saying where it looked and what to do, and nothing is made (before: an
 * empty database, and .forge, in whatever repository it was typed in).
 * The database may be a SQLite file or PostgreSQL (db.h): every program's
 * tables are on both.
 *
 * Returns 0, or the exit status with forge_error() set (the program prints
 * "PROG: MESSAGE"), everything released (s as session_close() leaves it).
 * session_close: NULL-safe; frees all four.
 */
enum session_flags {
	SESSION_NEED_REPO = 1 << 0,
	SESSION_CONFIG = 1 << 1,
	SESSION_STORE = 1 << 2,
	SESSION_STORE_IF_NAMED = 1 << 3,
	SESSION_READONLY = 1 << 4,
	SESSION_READ_IF_ABSENT = 1 << 5,
	SESSION_EXISTING = 1 << 6,
};

struct session {
	char *repo;             /* malloc'd; NULL outside a repository */
	char *db;               /* malloc'd database path; NULL without a store */
	struct config *cfg;
	struct store *store;
};

int session_open(struct session *s, const struct cli_common *common, unsigned flags,
		 jv config_flags);
/* session_open()'s database: store_open(), or store_open_readonly() as
 * flags say (SESSION_READONLY, SESSION_READ_IF_ABSENT), and the line on
 * stderr for a --db that does not exist.  For a program that
 * finds its repository and configuration another way (memory_cli.c). */
int session_open_store(struct session *s, const struct cli_common *common, unsigned flags);
void session_close(struct session *s);

#endif
