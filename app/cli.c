/* cli.c - the shared command line: parsing and sessions; see cli.h (the help,
 * usage errors and cli_finish are in cli_help.c). */
#include "app/cli.h"
#include "app/cli_tables.h"
#include "app/term.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/forgedir.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/secret.h"
#include "data/config.h"
#include "data/stream.h"
#include "git/git.h"
#include "llm/llm.h"
#include "os/heap.h"
#include "os/sandbox.h"
#include "store/store.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void add_long(struct option *lo, size_t *n, struct buf *shorts, const struct cli_option *o)
{
	for (; o && o->name; o++) {
		lo[*n].name = o->name;
		lo[*n].has_arg = o->arg ? required_argument : no_argument;
		lo[*n].flag = NULL;
		lo[*n].val = o->id;
		(*n)++;
		if (o->short_name) {
			buf_addch(shorts, (char)o->short_name);
			if (o->arg)
				buf_addch(shorts, ':');
		}
	}
}

/*
 * What is wrong with the long option arg ("--NAME" or "--NAME=VALUE", as
 * typed) that getopt_long refused, into msg: an option that takes no
 * argument given one (before: "unknown option '-q'" for --quiet=1, a short
 * option not typed, or "unknown option '--json=1'" for one that exists), a
 * prefix of several options (before: "unknown option '--b'" where --base
 * and --base-url both begin so), or an option there is none of.
 */
static void long_option_error(char *msg, size_t size, const struct option *lo, const char *arg)
{
	const char *name = arg + 2;
	size_t len = strcspn(name, "=");
	const struct option *hit = NULL;
	struct buf all = BUF_INIT;
	int n = 0;

	for (const struct option *o = lo; o->name && !hit; o++)
		if (strncmp(o->name, name, len) == 0 && o->name[len] == '\0')
			hit = o;
	for (const struct option *o = lo; o->name && !hit && len > 0; o++) {
		if (strncmp(o->name, name, len) != 0)
			continue;
		buf_addf(&all, "%s--%s", n ? ", " : "", o->name);
		n++;
	}
	if (!hit && n == 1) {
		for (const struct option *o = lo; o->name && !hit; o++)
			if (strncmp(o->name, name, len) == 0)
				hit = o;
	}
	if (hit && name[len] == '=' && hit->has_arg == no_argument)
		snprintf(msg, size, "option '--%s' takes no argument", hit->name);
	else if (!hit && n > 1)
		snprintf(msg, size, "option '--%.*s' is ambiguous; possibilities: %s", (int)len, name, all.buf);
	else
		snprintf(msg, size, "unknown option '%s'", arg);
	buf_release(&all);
}

/* Returns 1 when opt was a common option and has been handled. */
static int handle_common(struct cli_common *c, const struct cli_spec *spec, int opt, const char *arg)
{
	switch (opt) {
	case 'h':
		cli_usage(spec, stdout);
		exit(cli_finish(spec->name, FORGE_EXIT_OK));
	case OPT_VERSION:
		printf("%s (forge) %s\n", spec->name, FORGE_VERSION);
		exit(cli_finish(spec->name, FORGE_EXIT_OK));
	case OPT_HELP_MAN:
		cli_man(spec, stdout);
		exit(cli_finish(spec->name, FORGE_EXIT_OK));
	case OPT_HELP_WORDS:
		cli_words(spec, stdout);
		exit(cli_finish(spec->name, FORGE_EXIT_OK));
	case OPT_REPO: c->repo = arg; return 1;
	case OPT_DB: c->db = arg; return 1;
	case OPT_CONFIG: c->config = arg; return 1;
	case 'q': c->verbosity = -1; return 1;
	case 'v': c->verbosity = c->verbosity < 0 ? 1 : c->verbosity + 1; return 1;
	case OPT_PROVIDER: c->provider = arg; return 1;
	case OPT_MODEL: c->model = arg; return 1;
	case OPT_BASE_URL: c->base_url = arg; return 1;
	case OPT_CASSETTE: c->cassette = arg; return 1;
	}
	return 0;
}

int cli_parse(struct cli_common *common, const struct cli_spec *spec, int argc, char **argv,
	      int (*on_option)(int id, const char *arg, void *payload), void *payload)
{
	size_t total = cli_count_options(cli_common_options) + cli_count_options(cli_model_options) +
		       cli_count_options(cli_hidden_options) + cli_count_options(spec->options) + 1;
	struct option *lo = xcalloc(total, sizeof *lo);
	struct buf shorts = BUF_INIT;
	size_t n = 0;
	int opt;

	/* Before anything else: no key in /proc/PID/environ, not dumpable,
	 * every key known for redaction (llm.h). */
	llm_secret_protect();
	/* Past a file-size limit (ulimit -f, systemd's LimitFSIZE) a write
	 * fails with EFBIG and is reported (exit 5); the default SIGXFSZ
	 * killed the program without a word (exit 153) as it made the
	 * database.  The commands it runs get the default back (proc.h,
	 * spawn.h: every disposition SIG_DFL in the child). */
	signal(SIGXFSZ, SIG_IGN);
	/* What the library says on stderr (this file's warnings) names the
	 * program as its own messages and usage errors do: spec->name, "forge
	 * history" when forge-supervisor runs as forge history (before:
	 * "forge:", the name it was executed by). */
	static char prog[128];

	snprintf(prog, sizeof prog, "%s", spec->name);
	program_invocation_short_name = prog;
	memset(common, 0, sizeof *common);
	buf_addch(&shorts, ':');	/* report a missing argument as ':' */
	add_long(lo, &n, &shorts, spec->options);
	add_long(lo, &n, &shorts, cli_common_options);
	add_long(lo, &n, &shorts, cli_hidden_options);
	if (spec->flags & (CLI_MODEL_OPTIONS | CLI_MODEL_OPTIONS_UNUSED))
		add_long(lo, &n, &shorts, cli_model_options);

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, shorts.buf, lo, NULL)) != -1) {
		if (opt == '?' || opt == ':') {
			const char *bad = argv[optind - 1];
			char msg[1024];

			if (opt == ':')
				snprintf(msg, sizeof msg, "option '%s' needs an argument", bad);
			else if (strncmp(bad, "--", 2) == 0)
				long_option_error(msg, sizeof msg, lo, bad);
			else if (optopt && optopt < 256)
				snprintf(msg, sizeof msg, "unknown option '-%c'", optopt);
			else
				snprintf(msg, sizeof msg, "unknown option '%s'", bad);
			free(lo);
			buf_release(&shorts);
			cli_usage_error(spec, "%s", msg);
		}
		/* An empty --db or --cassette (--db "$DB" with DB unset) is a
		 * usage error (before: taken as not given -- the repository's
		 * database, $FORGE_CASSETTE -- without a word). */
		if ((opt == OPT_DB || opt == OPT_CASSETTE) && optarg && !*optarg) {
			free(lo);
			buf_release(&shorts);
			cli_usage_error(spec, "option '--%s' needs %s, and was given an empty one (leave the option "
					"out for the default)", opt == OPT_DB ? "db" : "cassette",
					opt == OPT_DB ? "a database's path" : "a cassette file");
		}
		/* A program option's short form comes back as its letter: use its id. */
		for (const struct cli_option *o = spec->options; o && o->name; o++)
			if (o->short_name && opt == o->short_name)
				opt = o->id;
		if (handle_common(common, spec, opt, optarg))
			continue;
		if (!on_option || on_option(opt, optarg, payload) < 0) {
			char msg[1024];
			snprintf(msg, sizeof msg, "%s", forge_last_error());
			free(lo);
			buf_release(&shorts);
			cli_usage_error(spec, "%s", msg);
		}
	}
	free(lo);
	buf_release(&shorts);
	return optind;
}

jv cli_model_flags(const struct cli_common *c)
{
	jv llm = jv_object();

	if (c->provider)
		llm = json_set(llm, "provider", jv_string(c->provider));
	if (c->model)
		llm = json_set(llm, "model", jv_string(c->model));
	if (c->base_url)
		llm = json_set(llm, "base_url", jv_string(c->base_url));
	if (c->cassette)
		llm = json_set(llm, "cassette", jv_string(c->cassette));
	return llm;
}

int cli_repo_root(char **out, const char *dir)
{
	struct forge_git *g = NULL;
	char resolved[PATH_MAX];

	*out = NULL;
	if (dir && !realpath(dir, resolved))
		return forge_error("cannot use repository '%s': %s", dir, strerror(errno));
	/* The plain cases without libgit2 (its initialisation alone is ~1.4M
	 * instructions); libgit2 decides the others, and says why not. */
	if (dir || getcwd(resolved, sizeof resolved)) {
		int found = forge_git_find_root(out, resolved);

		if (found > 0)
			return 0;
		if (found == 0) {
			/* libgit2's words for it */
			forge_error("'%s' is not in a git repository: could not find repository from '%s'",
				    dir ? dir : ".", dir ? resolved : ".");
			return -1;
		}
	}
	/* forge_git_open() opens the main repository even from a linked
	 * worktree, so every worktree of a run shares one .forge/ and database. */
	int rc = forge_git_open(&g, dir);

	if (rc < 0)
		return rc;
	*out = xstrdup(forge_git_root(g));
	forge_git_free(g);
	return 0;
}

/* ---- session ------------------------------------------------------------ */

void session_close(struct session *s)
{
	if (!s)
		return;
	store_free(s->store);
	config_free(s->cfg);
	free(s->repo);
	free(s->db);
	memset(s, 0, sizeof *s);
}

/* Set the model options over the flags layer *flags. */
static int session_model_flags(jv *flags, const struct cli_common *common)
{
	jv llm = cli_model_flags(common);
	int rc = 0;

	jv_object_foreach(llm, k, v) {
		struct buf key = BUF_INIT;

		buf_addf(&key, "llm.%s", jv_string_value(k));
		if (rc == 0)
			rc = config_flag_set(flags, key.buf, v);   /* consumes v */
		else
			jv_free(v);
		buf_release(&key);
		jv_free(k);
	}
	jv_free(llm);
	return rc;
}

/* The heap a session's work fills first (os/heap.h): a phase, the
 * supervisor or forge-review uses 0.5-2 MiB; a megabyte made resident in
 * one call took a whole run from 3113 to 2070 page faults. */
#define SESSION_HEAP_WARM (1u << 20)

int session_open_store(struct session *s, const struct cli_common *common, unsigned flags)
{
	bool reads = (flags & SESSION_READONLY) ||
		     ((flags & SESSION_READ_IF_ABSENT) && store_file_absent(s->db));

	if ((reads ? store_open_readonly : store_open)(&s->store, s->db) < 0)
		return -1;
	/* (--db only: FORGE_DB is set once for many commands, some before
	 * anything is recorded; a path typed on the command line is checked) */
	if (store_absent(s->store) && common->db)
		fprintf(stderr, "%s: no database at '%s': nothing has been recorded there yet "
			"(read as empty; check --db or FORGE_DB)\n", program_invocation_short_name, s->db);
	return 0;
}

/*
 * What the repository's .forge/config.json may not set and did (config.h:
 * config_ignored) is said on stderr once: a line for the file, naming its
 * keys and the setting that lets them through.  The programs this one
 * starts (forge run's phases) inherit FORGE_CONFIG_IGNORED_SAID, the
 * file's path, and do not say it again.  Not with -q; never an error.
 */
static void warn_ignored(const struct config *cfg, const struct cli_common *common)
{
	jv ignored = config_ignored(cfg);
	const char *said = getenv("FORGE_CONFIG_IGNORED_SAID");
	struct buf keys = BUF_INIT;
	const char *source = NULL;

	jv_array_foreach(ignored, i, e) {
		buf_addf(&keys, "%s%s", i ? ", " : "", json_get_str(e, "path"));
		if (!source)   /* (borrowed from ignored, which still holds e) */
			source = json_get_str(e, "source");
		jv_free(e);
	}
	if (keys.len && !(said && source && !strcmp(said, source))) {
		if (common->verbosity >= 0)
			fprintf(stderr, "%s: warning: ignoring %s of %s: a repository's configuration may not "
				"choose where your API key is sent, nor loosen your sandbox, tool permissions, "
				"gates, automation level, prices or limits; to let it, set \"trust_project\": "
				"true in your own configuration "
				"(forge config set --global trust_project true, or a --config file)\n",
				program_invocation_short_name, keys.buf, source);
		setenv("FORGE_CONFIG_IGNORED_SAID", source, 1);
	}
	buf_release(&keys);
	jv_free(ignored);
}

void cli_say_base_url_unused(const struct config *cfg, const char *phase, bool quiet)
{
	struct llm_choice ch;
	const char *said = getenv("FORGE_BASE_URL_UNUSED_SAID");

	if (!cfg || (said && *said))
		return;
	llm_choose(&ch, cfg, phase);
	if (!ch.base_url_unused)
		return;
	if (!quiet)
		fprintf(stderr, "%s: warning: %s\n", program_invocation_short_name, ch.base_url_why);
	setenv("FORGE_BASE_URL_UNUSED_SAID", "1", 1);
}

/* What a command that acts on something recorded says when the database
 * it would read is not there (SESSION_EXISTING): where it looked, and how
 * to name the right one. */
static void no_database(const char *db, bool named, const char *repo)
{
	if (named)
		forge_error("no database at '%s': no run has been recorded there (check --db or "
			    "FORGE_DB: name the database the run was recorded in)", db);
	else
		forge_error("no Forge database in '%s' (no %s): no run has been recorded in this "
			    "repository; cd to the repository the run was made in (or use --repo DIR), "
			    "or name its database with --db PATH or FORGE_DB", repo ? repo : ".", db);
}

int session_open(struct session *s, const struct cli_common *common, unsigned flags,
		 jv config_flags)
{
	bool db_named = common->db || (getenv("FORGE_DB") && *getenv("FORGE_DB"));
	bool want_store = (flags & SESSION_STORE) || ((flags & SESSION_STORE_IF_NAMED) && db_named);
	int status = FORGE_EXIT_USAGE;

	memset(s, 0, sizeof *s);
	if (flags & (SESSION_CONFIG | SESSION_STORE | SESSION_STORE_IF_NAMED))
		heap_warm(SESSION_HEAP_WARM);
	/* commands commit as git would here (asked only when one runs) */
	sandbox_set_identity_source(forge_git_identity);
	/* and what they make in a submodule's directory is removed after them */
	sandbox_set_gitlinks_source(forge_git_gitlinks);
	sandbox_set_run_root_source(forge_git_is_run_root);
	int found = cli_repo_root(&s->repo, common->repo);

	if (found < 0) {
		s->repo = NULL;
		/* another user's repository, or one in a format libgit2 cannot
		 * open, is no plain directory: refused for every program, as git
		 * refuses the first */
		if (common->repo || (flags & SESSION_NEED_REPO) || found < -1)
			goto fail;
		if (want_store && !db_named) {
			char *why = xstrdup(forge_last_error());

			forge_error("%s; use --repo DIR or --db PATH", why);
			free(why);
			goto fail;
		}
	}
	/* commands in a run's worktree borrow what the person installed
	 * here (node_modules, a virtualenv: os/sandbox.h) */
	sandbox_set_checkout(s->repo);
	/* Forge's files in the repository live in .forge/: a file of the
	 * project by that name would be found at the first write into it, a
	 * database or a run's worktree -- once a model has been paid for. */
	if (s->repo && ((flags & (SESSION_CONFIG | SESSION_NEED_REPO)) || (want_store && !db_named)) &&
	    forge_dir_check(s->repo) < 0)
		goto fail;
	if (flags & SESSION_CONFIG) {
		if (session_model_flags(&config_flags, common) < 0)
			goto fail;

		struct config_sources src = { .repo = s->repo, .file = common->config,
					      .flags = config_flags };

		config_flags = jv_null();
		if (config_load(&s->cfg, &src) < 0)
			goto fail;
		warn_ignored(s->cfg, common);
	}
	if (want_store) {
		if (store_resolve_path(&s->db, common->db, s->repo) < 0)
			goto fail;
		if ((flags & SESSION_EXISTING) && store_file_absent(s->db)) {
			no_database(s->db, db_named, s->repo);
			goto fail;
		}
		status = FORGE_EXIT_DEPENDENCY;
		if (session_open_store(s, common, flags) < 0)
			goto fail;
		/* whose lease of another host still lives (forge status's interrupted) */
		if (s->cfg)
			store_set_lease_ttl(s->store, config_get_num(s->cfg, "supervisor.lease_ttl_s"));
	}
	jv_free(config_flags);
	return 0;
fail:
	jv_free(config_flags);
	session_close(s);
	return status;
}

/* ---- Ctrl-C while a model call runs ------------------------------------ */

static void (*model_leave)(int);
static bool (*model_wait)(int);
static pid_t model_relay;
/* the signal kept until the call it stopped is recorded; 0: none */
static volatile sig_atomic_t model_pending;

static void on_model_signal(int sig, siginfo_t *si, void *context)
{
	(void)context;
	if (model_pending && model_relay && si->si_pid == model_relay)
		return;
	if (!model_pending) {
		/* (both asked, not one or the other: no call of this process's
		 * is sent after it, and a child's is stopped too) */
		bool call = llm_interrupt();
		bool child = model_wait && model_wait(sig);

		if (call || child) {
			model_pending = sig;
			return;
		}
	}
	model_leave(sig);
}

void cli_catch_model_interrupts(void (*leave)(int sig), bool (*wait)(int sig), pid_t relay)
{
	struct sigaction sa;

	model_leave = leave;
	model_wait = wait;
	model_relay = relay;
	/* (as cli_catch_interrupts, with the sender) */
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_model_signal;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

void cli_leave_if_interrupted(void)
{
	if (!model_pending)
		return;
	fflush(stdout);
	model_leave(model_pending);
}

/* ---- reporting a stream program's end (data/stream.h) ---- */

int cli_reject(struct stream_out *out, const struct stream_input *in, const char *reason)
{
	jv payload = jv_object();
	/* the reason may quote the input (a state's repository, a line of
	 * it): shown without its escape sequences (term.h), kept in the event */
	char *shown = xstrdup(reason);

	term_clean(shown, strlen(shown));
	if (!out->trace_id[0]) {
		char id[ULID_LEN + 1];
		if (in && in->trace_id[0]) {
			stream_out_set_trace(out, in->trace_id);
		} else {
			ulid_new(id);
			stream_out_set_trace(out, id);
		}
	}
	if (in && in->error_line) {
		fprintf(stderr, "%s: line %lu: %s\n", out->source, in->error_line, shown);
		payload = json_set(payload, "line", jv_number((double)in->error_line));
	} else {
		fprintf(stderr, "%s: %s\n", out->source, shown);
		payload = json_set(payload, "line", jv_null());
	}
	free(shown);
	payload = json_set(payload, "reason", jv_string(reason));
	stream_emit(out, "input.rejected", payload);
	return FORGE_EXIT_USAGE;
}

int cli_out_status(const struct stream_out *out, int status)
{
	if (!out->failed)
		return status;
	if (out->err == EPIPE)
		return FORGE_EXIT_PIPE;
	fprintf(stderr, "%s: cannot write to standard output: %s\n", out->source, strerror(out->err));
	return FORGE_EXIT_DEPENDENCY;
}

int cli_common_argv(const char **argv, int max, const struct cli_common *c, bool places)
{
	const char *pairs[][2] = {
		{ "--repo", places ? c->repo : NULL }, { "--db", places ? c->db : NULL },
		{ "--config", c->config }, { "--provider", c->provider }, { "--model", c->model },
		{ "--base-url", c->base_url }, { "--cassette", c->cassette },
	};
	int n = 0;

	assert(max >= 1);
	for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
		if (!pairs[i][1] || n + 2 > max - 1)
			continue;
		argv[n++] = pairs[i][0];
		argv[n++] = pairs[i][1];
	}
	if (c->verbosity < 0 && n < max - 1)
		argv[n++] = "-q";
	for (int v = 0; v < c->verbosity && n < max - 1; v++)
		argv[n++] = "-v";
	argv[n] = NULL;
	return n;
}
