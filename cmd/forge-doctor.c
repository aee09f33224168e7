/*
 * forge-doctor - what this machine gives Forge (`forge doctor`).
 *
 *   forge-doctor            human-readable sections
 *   forge-doctor --json     one JSON object with the same content
 *
 * Sections: forge (version, where the programs are), libraries (linked
 * versions), config (files and whether it loads), database (path, schema
 * version against the one this forge knows, size), provider (provider,
 * model, base URL, cassette, whether a key is configured - never the key),
 * sandbox (sandbox_features() and what the configuration asks for), tools
 * (linters and test runners on PATH with the first line of their version)
 * and project (project_describe() of the repository, when inside one).
 *
 * A check that cannot run is reported in its section, never fatal: the
 * exit status is 0, or 2 for a usage error.
 */
#include "agent/skills.h"
#include "core/buf.h"
#include "app/cli.h"
#include "data/config.h"
#include "core/forge.h"
#include "core/json.h"
#include "llm/llm.h"
#include "os/proc.h"
#include "data/project.h"
#include "data/schema.h"
#include "git/git.h"
#include "net/http.h"
#include "os/sandbox.h"
#include "store/store.h"
#include "store/db.h"

#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "forge-doctor"
#define TOOL_TIMEOUT_MS 5000
#define VERSION_MAX 160

extern char **environ;

enum { OPT_JSON = 256, OPT_ONLY };

static const struct cli_option options[] = {
	{ "json", 0, NULL, "print one JSON object instead of sections", OPT_JSON },
	{ "only", 0, "LIST", "only these sections (comma-separated; see below)", OPT_ONLY },
	{ NULL, 0, NULL, NULL, 0 }
};

/* The report's sections, in the order they are printed. */
static const char *const section_names[] = {
	"forge", "libraries", "config", "database", "provider", "sandbox", "tools", "project",
};
#define NSECTIONS (sizeof section_names / sizeof section_names[0])
#define ALL_SECTIONS ((1u << NSECTIONS) - 1)

struct args {
	bool json;
	unsigned sections;      /* bit i: section_names[i] is reported */
};

/* The bit of section `name` (len bytes); 0 when there is none. */
static unsigned section_bit(const char *name, size_t len)
{
	for (size_t i = 0; i < NSECTIONS; i++)
		if (strlen(section_names[i]) == len && !strncmp(section_names[i], name, len))
			return 1u << i;
	return 0;
}

/* --only LIST: the sections named in it (several --only add up). */
static int parse_only(struct args *a, const char *list)
{
	unsigned bits = 0;

	for (const char *p = list;; p++) {
		size_t len = strcspn(p, ",");
		unsigned bit = section_bit(p, len);

		if (!bit)
			return forge_error("--only: unknown section '%.*s' (sections: forge, libraries, "
					   "config, database, provider, sandbox, tools, project)", (int)len, p);
		bits |= bit;
		p += len;
		if (!*p)
			break;
	}
	a->sections = (a->sections == ALL_SECTIONS ? 0 : a->sections) | bits;
	return 0;
}

static int on_option(int id, const char *arg, void *payload)
{
	struct args *a = payload;

	if (id == OPT_JSON) {
		a->json = true;
		return 0;
	}
	if (id == OPT_ONLY)
		return parse_only(a, arg);
	return forge_error("unhandled option");
}

/* ---------------------------------------------------------------- helpers */

/* The first non-blank line of s, trimmed, without control characters and
 * at most VERSION_MAX bytes, into out; its length (0: there is none). */
static size_t first_line_c(char out[VERSION_MAX + 1], const char *s, size_t len)
{
	size_t i = 0, end;
	size_t n = 0;

	while (i < len) {
		while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
			i++;
		if (i < len && s[i] != '\n')
			break;
		i++;
	}
	end = i;
	while (end < len && s[end] != '\n')
		end++;
	while (end > i && (s[end - 1] == ' ' || s[end - 1] == '\t' || s[end - 1] == '\r'))
		end--;
	for (; i < end && n < VERSION_MAX; i++)
		out[n++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' : s[i];
	out[n] = '\0';
	return n;
}

/* The same as a jv string, or null when there is none. */
static jv first_line(const char *s, size_t len)
{
	char out[VERSION_MAX + 1];

	return first_line_c(out, s, len) ? jv_string(out) : jv_null();
}

/* The path of program on $PATH (malloc'd), or NULL. */
static char *which(const char *program)
{
	const char *path = getenv("PATH");
	struct buf b = BUF_INIT;
	char *found = NULL;

	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (!found) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);
		struct stat st;

		buf_reset(&b);
		if (n == 0)
			buf_adds(&b, ".");
		else
			buf_add(&b, path, n);
		buf_addf(&b, "/%s", program);
		if (stat(b.buf, &st) == 0 && S_ISREG(st.st_mode) && access(b.buf, X_OK) == 0)
			found = xstrdup(b.buf);
		if (!colon)
			break;
		path = colon + 1;
	}
	buf_release(&b);
	return found;
}

/* The environment for the version probes: ours without the secrets. */
static char **probe_env(void)
{
	size_t n = 0;
	char **env;

	while (environ[n])
		n++;
	env = xcalloc(n + 1, sizeof(*env));
	memcpy(env, environ, n * sizeof(*env));
	llm_scrub_env(env);
	return env;
}

/* What a probe gave: its output or why there is none (plain C, no jv, so
 * that probes can run in threads). */
struct probe {
	char *out;       /* what it printed (stdout and stderr), or NULL */
	char *why;       /* why not, or NULL */
};

/*
 * Run argv (argv[0] a path) with a short timeout and its stdout and stderr
 * merged; fill *p (release with probe_release).  Safe to call from several
 * threads at once.
 */
static void probe_exec(struct probe *p, const char *const *argv, char **env)
{
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;
	struct buf why = BUF_INIT;

	p->out = p->why = NULL;
	o.argv = argv;
	o.envp = env;
	o.merge_stderr = true;
	o.out_cap = 16384;
	o.timeout_ms = TOOL_TIMEOUT_MS;
	o.kill_grace_ms = 500;
	if (proc_run(&r, &o) < 0) {
		buf_adds(&why, forge_last_error());
	} else if (r.timed_out) {
		buf_addf(&why, "no answer within %d s", TOOL_TIMEOUT_MS / 1000);
	} else if (r.exit_code != 0) {
		char line[VERSION_MAX + 1];
		if (first_line_c(line, r.out.buf ? r.out.buf : "", r.out.len))
			buf_addf(&why, "exit status %d: %s", r.exit_code, line);
		else
			buf_addf(&why, "exit status %d", r.exit_code);
	} else {
		p->out = xstrndup(r.out.buf ? r.out.buf : "", r.out.len);
	}
	if (!p->out)
		p->why = buf_detach(&why, NULL);
	buf_release(&why);
	proc_result_release(&r);
}

static void probe_release(struct probe *p)
{
	free(p->out);
	free(p->why);
	p->out = p->why = NULL;
}

/*
 * Run argv (argv[0] a path) with a short timeout and its stdout and stderr
 * merged.  What it printed (malloc'd, NUL-terminated), or NULL with *err set
 * to why it gave no answer (could not start, timed out, failed).
 */
static char *run_probe(const char *const *argv, char **env, jv *err)
{
	struct probe p;
	char *out;

	probe_exec(&p, argv, env);
	if (p.why)
		*err = jv_string(p.why);
	out = p.out;
	p.out = NULL;
	probe_release(&p);
	return out;
}

/* The first line of what argv printed, or null with *err set. */
static jv run_first_line(const char *const *argv, char **env, jv *err)
{
	char *out = run_probe(argv, env, err);
	jv line = jv_null();

	if (out) {
		line = first_line(out, strlen(out));
		if (jv_get_kind(line) != JV_KIND_STRING)
			*err = jv_string("printed nothing");
		free(out);
	}
	return line;
}

/* ---------------------------------------------------------------- forge */

static int cmp_jv_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The forge programs in dir, sorted. */
static jv programs_in(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char *names[256];
	size_t n = 0;
	jv out = jv_array();

	if (!d)
		return out;
	while ((e = readdir(d)) && n < 256) {
		struct buf p = BUF_INIT;

		if ((strcmp(e->d_name, "forge") && strncmp(e->d_name, "forge-", 6)) ||
		    strchr(e->d_name, '.'))
			continue;
		buf_addf(&p, "%s/%s", dir, e->d_name);
		if (access(p.buf, X_OK) == 0)
			names[n++] = xstrdup(e->d_name);
		buf_release(&p);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_jv_str);
	for (size_t i = 0; i < n; i++) {
		out = jv_array_append(out, jv_string(names[i]));
		free(names[i]);
	}
	return out;
}

static jv check_forge(void)
{
	jv f = jv_object();
	char *dir = cli_self_dir();

	f = json_set(f, "version", jv_string(FORGE_VERSION));
	f = json_set(f, "protocol", jv_number(FORGE_PROTOCOL_VERSION));
	f = json_set(f, "bindir", json_str_or_null(dir));
	f = json_set(f, "programs", dir ? programs_in(dir) : jv_array());
	free(dir);
	return f;
}

/* ---------------------------------------------------------------- libraries */

static jv jq_version(char **env)
{
	char *dq = which("dpkg-query");
	jv v = jv_null(), err = jv_null();

	if (dq) {
		const char *argv[] = { dq, "-W", "-f=${Version}", "libjq1", NULL };
		v = run_first_line(argv, env, &err);
		free(dq);
	}
	jv_free(err);
	if (jv_get_kind(v) == JV_KIND_STRING && jv_string_length_bytes(jv_copy(v)) > 0) {
		jv s = jv_string_fmt("%s (libjq1 package)", jv_string_value(v));
		jv_free(v);
		return s;
	}
	jv_free(v);
	return jv_string("1.6 (linked)");
}

/* A malloc'd version string (consumed) as a jv string, NULL as null. */
static jv version_json(char *v)
{
	jv j = v ? jv_string(v) : jv_null();

	free(v);
	return j;
}

static jv check_libraries(char **env)
{
	jv l = jv_object();

	l = json_set(l, "sqlite3", jv_string(store_sqlite_version()));
	l = json_set(l, "curl", version_json(http_library_version()));
	l = json_set(l, "libgit2", version_json(forge_git_library_version()));
	l = json_set(l, "jq", jq_version(env));
	l = json_set(l, "pcre2", schema_regex_version());
	l = json_set(l, "libyaml", jv_string(skills_yaml_version()));
	return l;
}

/* ---------------------------------------------------------------- config */

struct ctx {
	struct cli_common *common;
	char *root;              /* repository root or NULL */
	jv root_error;           /* why there is no root, or null */
	struct config *cfg;      /* NULL when it did not load */
	jv problems;             /* array of strings: what needs attention */
};

static void problem(struct ctx *c, jv msg)
{
	c->problems = jv_array_append(c->problems, msg);
}

static jv check_config(struct ctx *c)
{
	struct config_sources src = { c->root, c->common->config, jv_null() };
	jv out = jv_object(), model = cli_model_flags(c->common);

	out = json_set(out, "files", config_files(&src));
	if (jv_get_kind(model) == JV_KIND_OBJECT && jv_object_length(jv_copy(model)) > 0) {
		if (config_flag_set(&src.flags, "llm", model) < 0) {
			jv_free(src.flags);
			src.flags = jv_null();
		}
	} else {
		jv_free(model);
	}
	if (config_load(&c->cfg, &src) < 0) {
		c->cfg = NULL;
		out = json_set(out, "loaded", jv_false());
		out = json_set(out, "error", jv_string(forge_last_error()));
		problem(c, jv_string_fmt("configuration does not load: %s", forge_last_error()));
	} else {
		out = json_set(out, "loaded", jv_true());
	}
	jv_free(src.flags);
	return out;
}

/* ---------------------------------------------------------------- database */

/* A PostgreSQL database: reachable, and its schema against this forge's. */
/* The schema of the database at path (either backend), as store_db_status()
 * reads it without creating or migrating anything, into d. */
static jv check_schema(struct ctx *c, jv d, const char *path)
{
	char *shown = db_display_path(path);
	jv st;

	if (store_db_status(&st, path) < 0) {
		d = json_set(d, "status", jv_string("unreadable"));
		d = json_set(d, "error", jv_string(forge_last_error()));
		problem(c, jv_string_fmt("%s", forge_last_error()));
	} else {
		int v = (int)json_get_num(st, "version", 0), known = (int)json_get_num(st, "known", 0);

		d = json_set(d, "schema_known", jv_number(known));
		d = json_set(d, "schema_version", jv_number(v));
		d = json_set(d, "status", jv_string(v == known ? "current" : v < known ?
						    "older (migrated when next opened)" : "newer than this forge"));
		if (v > known)
			problem(c, jv_string_fmt("database '%s' has schema %d, newer than this forge "
						 "knows (%d): upgrade forge", shown, v, known));
		jv_free(st);
	}
	free(shown);
	return d;
}

static jv check_database(struct ctx *c)
{
	jv d = jv_object();
	char *path = NULL;
	struct stat st;

	d = json_set(d, "schema_known", jv_number(store_schema_version_known()));
	d = json_set(d, "schema_version", jv_null());
	if (store_resolve_path(&path, c->common->db, c->root) < 0) {
		d = json_set(d, "path", jv_null());
		d = json_set(d, "status", jv_string("none"));
		/* outside a repository, no database here is what is so, not a
		 * problem (the summary would say none): a note (--repo DIR
		 * that is no repository is one, reported as such) */
		d = json_set(d, c->root || c->common->repo ? "error" : "note",
			     jv_string("not in a repository and FORGE_DB is not set"));
		return d;
	}
	if (db_is_postgres(path)) {
		char *shown = db_display_path(path);

		d = json_set(d, "path", jv_string(shown));
		d = json_set(d, "backend", jv_string("postgresql"));
		free(shown);
	} else {
		d = json_set(d, "path", jv_string(path));
		if (stat(path, &st) != 0) {
			d = json_set(d, "exists", jv_false());
			d = json_set(d, "status", jv_string("not created yet (the first run creates it)"));
			d = json_set(d, "size_bytes", jv_number(0));
			free(path);
			return d;
		}
		d = json_set(d, "exists", jv_true());
		d = json_set(d, "size_bytes", jv_number((double)st.st_size));
	}
	d = check_schema(c, d, path);
	free(path);
	return d;
}

/* ---------------------------------------------------------------- provider */

/* "set" / "set (FILEVAR)" / "not set" / "unreadable: …" for one provider;
 * the key itself is wiped and freed at once. */
static jv key_status(const char *provider, const char *var, const char *file_var)
{
	char *key = NULL;
	const char *v = getenv(var);
	jv s;

	if (llm_key_load(&key, provider) < 0)
		return jv_string_fmt("unreadable: %s", forge_last_error());
	if (!key)
		s = jv_string("not set");
	else if (v && *v)
		s = jv_string("set");
	else
		s = jv_string_fmt("set (from %s)", file_var);
	if (key) {
		volatile char *p = key;
		while (*p)
			*p++ = '\0';
		free(key);
	}
	return s;
}

static jv check_provider(struct ctx *c)
{
	jv p = jv_object(), keys = jv_object();
	struct llm_options opt;
	struct llm_client *client = NULL;
	const char *cfg_provider = NULL;

	keys = json_set(keys, "ANTHROPIC_API_KEY",
			key_status("anthropic", "ANTHROPIC_API_KEY", "FORGE_ANTHROPIC_KEY_FILE"));
	keys = json_set(keys, "OPENAI_API_KEY",
			key_status("openai", "OPENAI_API_KEY", "FORGE_OPENAI_KEY_FILE"));
	struct llm_choice ch = { 0 };

	llm_options_init(&opt);
	if (c->cfg) {
		llm_choose(&ch, c->cfg, NULL);
		llm_options_from_config(&opt, c->cfg);
		cfg_provider = opt.provider;
	}
	opt.max_retries = 0;
	if (llm_client_new(&client, &opt) == 0) {
		p = json_set(p, "provider", jv_string(llm_client_provider(client)));
		p = json_set(p, "model", json_str_or_null(llm_client_model(client)));
		p = json_set(p, "fast_model", json_str_or_null(ch.fast_model ? ch.fast_model
									  : llm_client_model(client)));
		p = json_set(p, "usable", jv_true());
	} else {
		const char *e = forge_last_error();

		p = json_set(p, "provider", json_str_or_null(cfg_provider));
		p = json_set(p, "model", json_str_or_null(opt.model));
		p = json_set(p, "fast_model", json_str_or_null(ch.fast_model));
		p = json_set(p, "usable", jv_false());
		p = json_set(p, "error", jv_string(e));
		problem(c, jv_string_fmt("no usable model provider: %s", e));
	}
	{
		const char *prov = client ? llm_client_provider(client) : cfg_provider;
		const char *url = opt.base_url;

		if ((!url || !*url) && prov && !strcmp(prov, "anthropic"))
			url = getenv("ANTHROPIC_BASE_URL");
		else if ((!url || !*url) && prov && !strcmp(prov, "openai"))
			url = getenv("OPENAI_BASE_URL");
		p = json_set(p, "base_url", url && *url ? jv_string(url)
			     : jv_string("(the provider's default)"));
		/* where it comes from; a configured one that is not used, why */
		if (c->cfg)
			p = json_set(p, "base_url_why", jv_string(ch.base_url_why));
		if (ch.base_url_unused)
			problem(c, jv_string(ch.base_url_why));
	}
	{
		const char *cas = opt.cassette ? opt.cassette : getenv("FORGE_CASSETTE");
		p = json_set(p, "cassette", cas && *cas ? jv_string(cas) : jv_null());
	}
	llm_client_free(client);
	p = json_set(p, "keys", keys);
	jv_free(opt.pricing);
	return p;
}

/* ---------------------------------------------------------------- sandbox */

/*
 * Append to notes (consumed, returned) what a sandbox feature that is not
 * available means: with mode `strict` commands do not run (a problem too);
 * with "auto" they run without it.
 */
static jv missing_feature(struct ctx *c, jv notes, bool available, const char *mode,
			  const char *strict, const char *strict_note, const char *problem_text,
			  const char *auto_note)
{
	if (available || !mode)
		return notes;
	if (!strcmp(mode, strict)) {
		notes = jv_array_append(notes, jv_string(strict_note));
		problem(c, jv_string(problem_text));
	} else if (!strcmp(mode, "auto")) {
		notes = jv_array_append(notes, jv_string(auto_note));
	}
	return notes;
}

static jv check_sandbox(struct ctx *c)
{
	struct sandbox_policy *pol = NULL;
	jv f = jv_null();
	int rc = c->cfg ? sandbox_policy_from_config(&pol, c->cfg)
			: sandbox_policy_new(&pol, jv_null());

	if (rc < 0) {
		problem(c, jv_string_fmt("sandbox policy does not build: %s", forge_last_error()));
		pol = NULL;
	}
	sandbox_features(&f, pol);
	sandbox_policy_free(pol);

	jv ll = json_get(f, "landlock"), ns = json_get(f, "network_namespace");
	const char *llm = json_get_str(ll, "mode"), *nsm = json_get_str(ns, "mode");
	bool lla = json_get_bool(ll, "available", false);
	bool nsa = json_get_bool(ns, "available", false);
	jv notes = jv_array();

	notes = missing_feature(c, notes, lla, llm, "require",
				"sandbox.landlock is 'require' but this system offers no Landlock: "
				"commands will NOT run (set sandbox.landlock to auto or off)",
				"required Landlock confinement is unavailable",
				"no Landlock: commands run without file-system confinement");
	notes = missing_feature(c, notes, nsa, nsm, "deny",
				"sandbox.network is 'deny' but network namespaces are unavailable: "
				"commands will NOT run (set sandbox.network to auto or allow)",
				"required network confinement is unavailable",
				"no network namespace: commands run with the network");
	{
		jv nsj = json_get(f, "namespaces"), cg = json_get(f, "cgroup_pids");
		const char *m = json_get_str(nsj, "mode");
		bool a = json_get_bool(nsj, "available", false);
		notes = missing_feature(c, notes, a, m, "require",
					"sandbox.namespaces is 'require' but user/PID/mount namespaces are "
					"unavailable: commands will NOT run (set sandbox.namespaces to auto or off)",
					"required namespaces are unavailable",
					"no user/PID/mount namespaces: commands see every process (/proc), the "
					"host's files (reads confined by Landlock only) and its unix sockets, and "
					"what they start may outlive them");
		if (lla && !json_get_bool(ll, "scope", false))
			notes = jv_array_append(notes, jv_string(
				"Landlock ABI < 6: abstract unix sockets and signals are not scoped"));
		if (!json_get_bool(cg, "available", false) && geteuid() == 0) {
			const char *r = json_get_str(cg, "reason");
			notes = jv_array_append(notes, jv_string_fmt(
				"no pids cgroup (%s): the process limit does not bind root",
				r ? r : "unknown"));
		}
		jv_free(nsj);
		jv_free(cg);
	}
	jv_free(ll);
	jv_free(ns);
	return json_set(f, "notes", notes);
}

/* ---------------------------------------------------------------- tools */

static const struct tool {
	const char *name;       /* shown */
	const char *program;    /* looked up on PATH */
	const char *args[3];    /* after the program */
} tools[] = {
	{ "cppcheck", "cppcheck", { "--version" } },
	{ "clang-tidy", "clang-tidy", { "--version" } },
	{ "shellcheck", "shellcheck", { "--version" } },
	{ "flawfinder", "flawfinder", { "--version" } },
	{ "bandit", "bandit", { "--version" } },
	{ "eslint", "eslint", { "--version" } },
	{ "ruff", "ruff", { "--version" } },
	{ "flake8", "flake8", { "--version" } },
	{ "bats", "bats", { "--version" } },
	{ "pytest", "python3", { "-m", "pytest", "--version" } },
	{ "node", "node", { "--version" } },
	{ "npm", "npm", { "--version" } },
	{ "go", "go", { "version" } },
	{ "cargo", "cargo", { "--version" } },
	{ "cmake", "cmake", { "--version" } },
	{ "ctest", "ctest", { "--version" } },
	{ "make", "make", { "--version" } },
};

/*
 * The version line of a tool from what `TOOL --version` gave: its first
 * line, except that a line "version: X" (ShellCheck's first line is only
 * its title) gives "TITLE-WORD X".  Null with *err set when there is none.
 */
static jv version_from(const struct tool *t, const struct probe *p, jv *err)
{
	const char *out = p->out;
	jv v;

	if (!out) {
		*err = jv_string(p->why ? p->why : "no answer");
		return jv_null();
	}
	v = first_line(out, strlen(out));
	{
		const char *ver = strstr(out, "\nversion: ");
		if (ver) {
			jv num;
			ver += 10;
			num = first_line(ver, strlen(ver));
			if (jv_get_kind(num) == JV_KIND_STRING) {
				jv_free(v);
				v = jv_string_fmt("%s %s", t->name, jv_string_value(num));
			}
			jv_free(num);
		}
	}
	if (jv_get_kind(v) != JV_KIND_STRING)
		*err = jv_string("printed nothing");
	return v;
}

/*
 * The tool probes run at the same time, each in a thread of its own, while
 * the other sections are checked: `forge doctor` takes as long as its
 * slowest probe, not the sum of them.
 */
static const struct tool pytest_alt = { "pytest", "pytest", { "--version" } };

struct tool_probe {
	const struct tool *t;
	char **env;
	char *path;             /* the program on PATH, or NULL */
	struct probe p;         /* what `PATH ARGS` gave */
	char *alt_path;         /* pytest: the pytest program when the module is not there */
	struct probe alt;
	pthread_t thread;
	bool threaded;
};

static void tool_probe_exec(struct probe *p, const struct tool *t, const char *path, char **env)
{
	const char *argv[6] = { NULL };
	size_t n = 0;

	argv[n++] = path;
	for (size_t i = 0; i < 3 && t->args[i]; i++)
		argv[n++] = t->args[i];
	probe_exec(p, argv, env);
}

static void *tool_probe_run(void *arg)
{
	struct tool_probe *tp = arg;
	char line[VERSION_MAX + 1];

	tool_probe_exec(&tp->p, tp->t, tp->path, tp->env);
	/* `python3 -m pytest` without the module: a pytest program, else not found */
	if (!strcmp(tp->t->name, "pytest") &&
	    (!tp->p.out || !first_line_c(line, tp->p.out, strlen(tp->p.out)))) {
		tp->alt_path = which("pytest");
		if (tp->alt_path)
			tool_probe_exec(&tp->alt, &pytest_alt, tp->alt_path, tp->env);
	}
	return NULL;
}

#define NTOOLS (sizeof tools / sizeof tools[0])

/* Start the probes of the tools on PATH (env must live until tools_finish). */
static struct tool_probe *tools_start(char **env)
{
	struct tool_probe *tps = xcalloc(NTOOLS, sizeof(*tps));

	for (size_t i = 0; i < NTOOLS; i++) {
		struct tool_probe *tp = &tps[i];

		tp->t = &tools[i];
		tp->env = env;
		tp->path = which(tp->t->program);
		if (!tp->path)
			continue;
		tp->threaded = pthread_create(&tp->thread, NULL, tool_probe_run, tp) == 0;
		if (!tp->threaded)
			tool_probe_run(tp);
	}
	return tps;
}

/* Wait for the probes; the tools section.  Frees tps. */
static jv tools_finish(struct tool_probe *tps)
{
	jv list = jv_array();

	for (size_t i = 0; i < NTOOLS; i++) {
		struct tool_probe *tp = &tps[i];
		const struct tool *t = tp->t;
		jv e = jv_object(), err = jv_null();

		if (tp->threaded)
			pthread_join(tp->thread, NULL);
		e = json_set(e, "name", jv_string(t->name));
		if (!tp->path) {
			e = json_set(e, "found", jv_false());
			e = json_set(e, "path", jv_null());
			e = json_set(e, "version", jv_null());
			list = jv_array_append(list, e);
			continue;
		}
		jv v = version_from(t, &tp->p, &err);
		const char *path = tp->path;
		bool found = true;
		if (!strcmp(t->name, "pytest") && jv_get_kind(v) != JV_KIND_STRING) {
			found = false;
			if (tp->alt_path) {
				jv err2 = jv_null();
				jv_free(v);
				v = version_from(&pytest_alt, &tp->alt, &err2);
				found = jv_get_kind(v) == JV_KIND_STRING;
				jv_free(err2);
				path = tp->alt_path;
			}
		}
		e = json_set(e, "found", jv_bool(found));
		e = json_set(e, "path", found ? jv_string(path) : jv_null());
		e = json_set(e, "version", v);
		if (found && jv_get_kind(err) == JV_KIND_STRING)
			e = json_set(e, "error", err);
		else
			jv_free(err);
		list = jv_array_append(list, e);
	}
	for (size_t i = 0; i < NTOOLS; i++) {
		free(tps[i].path);
		free(tps[i].alt_path);
		probe_release(&tps[i].p);
		probe_release(&tps[i].alt);
	}
	free(tps);
	return list;
}

/* ---------------------------------------------------------------- project */

static jv check_project(struct ctx *c)
{
	jv p = jv_null();

	if (!c->root) {
		jv o = jv_object();
		o = json_set(o, "root", jv_null());
		/* no project where doctor ran: information, not an error */
		return json_set(o, c->common->repo ? "error" : "note", jv_copy(c->root_error));
	}
	if (project_describe(&p, c->root, c->cfg) < 0) {
		jv o = jv_object();
		o = json_set(o, "root", jv_string(c->root));
		return json_set(o, "error", jv_string(forge_last_error()));
	}
	return json_set(p, "root", jv_string(c->root));
}

/* ---------------------------------------------------------------- text */

static void kv(struct buf *b, const char *key, const char *value)
{
	buf_addf(b, "  %-18s %s\n", key, value ? value : "-");
}

static const char *str_or(jv obj, const char *key, const char *dflt)
{
	const char *s = json_get_str(obj, key);
	return s ? s : dflt;
}

static void text_forge(struct buf *b, jv f)
{
	jv progs = json_get(f, "programs");

	buf_addf(b, "Forge %s (protocol %d)\n", str_or(f, "version", "?"),
		 (int)json_get_num(f, "protocol", 0));
	kv(b, "programs in", str_or(f, "bindir", "(unknown)"));
	if (jv_get_kind(progs) == JV_KIND_ARRAY && jv_array_length(jv_copy(progs)) > 0) {
		buf_addf(b, "  %-18s", "");
		jv_array_foreach(progs, i, name) {
			buf_addf(b, " %s", jv_string_value(name));
			jv_free(name);
		}
		buf_addch(b, '\n');
	}
	jv_free(progs);
	kv(b, "libexec dir", str_or(f, "libexecdir", "-"));
}

static void text_libraries(struct buf *b, jv l)
{
	buf_adds(b, "\nLibraries\n");
	jv_object_foreach(l, k, v) {
		kv(b, jv_string_value(k), jv_get_kind(v) == JV_KIND_STRING
		   ? jv_string_value(v) : "unknown");
		jv_free(k);
		jv_free(v);
	}
}

static void text_config(struct buf *b, jv cfg)
{
	jv files = json_get(cfg, "files");

	buf_adds(b, "\nConfiguration\n");
	jv_array_foreach(files, i, f) {
		buf_addf(b, "  %-18s %s (%s)\n", str_or(f, "layer", "?"), str_or(f, "path", "?"),
			 json_get_bool(f, "exists", false) ? "exists" : "missing");
		jv_free(f);
	}
	jv_free(files);
	if (!json_get_bool(cfg, "loaded", false))
		kv(b, "error", str_or(cfg, "error", "does not load"));
	else
		kv(b, "status", "loads and validates");
}

static void text_database(struct buf *b, jv d)
{
	struct buf s = BUF_INIT;
	jv ver = json_get(d, "schema_version");

	buf_adds(b, "\nDatabase\n");
	kv(b, "path", str_or(d, "path", "(none)"));
	kv(b, "status", str_or(d, "status", "?"));
	if (jv_get_kind(ver) == JV_KIND_NUMBER)
		buf_addf(&s, "%d (this forge knows %d)", (int)jv_number_value(ver),
			 (int)json_get_num(d, "schema_known", 0));
	else
		buf_addf(&s, "- (this forge knows %d)", (int)json_get_num(d, "schema_known", 0));
	jv_free(ver);
	kv(b, "schema", s.buf);
	if (json_get_bool(d, "exists", false)) {
		buf_reset(&s);
		buf_addf(&s, "%.0f bytes", json_get_num(d, "size_bytes", 0));
		kv(b, "size", s.buf);
	}
	buf_release(&s);
	if (json_has(d, "error"))
		kv(b, "error", str_or(d, "error", ""));
	if (json_has(d, "note"))
		kv(b, "note", str_or(d, "note", ""));
}

static void text_provider(struct buf *b, jv p)
{
	jv keys = json_get(p, "keys");

	buf_adds(b, "\nModel provider\n");
	kv(b, "provider", str_or(p, "provider", "(none)"));
	kv(b, "model", str_or(p, "model", "(provider default)"));
	kv(b, "fast model", str_or(p, "fast_model", "(the model)"));
	kv(b, "base URL", str_or(p, "base_url", "-"));
	if (json_has(p, "base_url_why"))
		kv(b, "base URL from", str_or(p, "base_url_why", "-"));
	kv(b, "cassette", str_or(p, "cassette", "(none)"));
	jv_object_foreach(keys, k, v) {
		buf_addf(b, "  %s: %s\n", jv_string_value(k), jv_string_value(v));
		jv_free(k);
		jv_free(v);
	}
	jv_free(keys);
	if (json_get_bool(p, "usable", false)) {
		kv(b, "status", "ready");
	} else {
		struct buf s = BUF_INIT;
		buf_addf(&s, "not usable: %s", str_or(p, "error", "?"));
		kv(b, "status", s.buf);
		buf_release(&s);
	}
}

static void text_sandbox(struct buf *b, jv f)
{
	jv ll = json_get(f, "landlock"), ns = json_get(f, "network_namespace");
	jv notes = json_get(f, "notes");
	struct buf s = BUF_INIT;

	buf_adds(b, "\nSandbox\n");
	if (json_get_bool(ll, "available", false))
		buf_addf(&s, "available (ABI %d)", (int)json_get_num(ll, "abi", 0));
	else
		buf_addf(&s, "unavailable (%s)", str_or(ll, "reason", "unknown"));
	buf_addf(&s, "; sandbox.landlock: %s", str_or(ll, "mode", "?"));
	kv(b, "landlock", s.buf);
	buf_reset(&s);
	if (json_get_bool(ns, "available", false))
		buf_adds(&s, "available");
	else
		buf_addf(&s, "unavailable (%s)", str_or(ns, "reason", "unknown"));
	buf_addf(&s, "; sandbox.network: %s", str_or(ns, "mode", "?"));
	kv(b, "network namespace", s.buf);
	{
		jv nsj = json_get(f, "namespaces"), cg = json_get(f, "cgroup_pids");
		jv sc = json_get(f, "seccomp");
		buf_reset(&s);
		if (json_get_bool(nsj, "available", false))
			buf_adds(&s, "available (user, pid, mount, ipc)");
		else
			buf_addf(&s, "unavailable (%s)", str_or(nsj, "reason", "unknown"));
		buf_addf(&s, "; sandbox.namespaces: %s", str_or(nsj, "mode", "?"));
		kv(b, "namespaces", s.buf);
		{
			jv pid1 = json_get(f, "pid1");
			const char *prog = json_get_str(pid1, "program");

			buf_reset(&s);
			if (prog)
				buf_addf(&s, "forge-sandbox-init (%s)", prog);
			else
				buf_addf(&s, "a copy of the program (%s)", str_or(pid1, "reason", "unknown"));
			kv(b, "a command's PID 1", s.buf);
			jv_free(pid1);
		}
		buf_reset(&s);
		buf_addf(&s, "reads %s, writes %s, scope %s",
			 json_get_bool(ll, "reads", false) ? "yes" : "no",
			 json_get_bool(ll, "writes", false) ? "yes" : "no",
			 json_get_bool(ll, "scope", false) ? "yes" : "no (ABI < 6)");
		if (json_get_bool(ll, "read_anywhere", false))
			buf_adds(&s, "; sandbox.read_anywhere: true");
		kv(b, "landlock walls", s.buf);
		buf_reset(&s);
		if (json_get_bool(cg, "available", false))
			buf_addf(&s, "available (%s)", str_or(cg, "path", "?"));
		else
			buf_addf(&s, "unavailable (%s)", str_or(cg, "reason", "unknown"));
		kv(b, "pids cgroup", s.buf);
		kv(b, "seccomp", json_get_bool(sc, "available", false) ? "available (not used)"
								      : "unavailable");
		jv_free(nsj);
		jv_free(cg);
		jv_free(sc);
	}
	buf_release(&s);
	kv(b, "openat2", json_get_bool(f, "openat2", false) ? "available" : "unavailable");
	kv(b, "pidfd", json_get_bool(f, "pidfd", false) ? "available" : "unavailable");
	jv_array_foreach(notes, i, n) {
		buf_addf(b, "  ! %s\n", jv_string_value(n));
		jv_free(n);
	}
	jv_free(notes);
	jv_free(ll);
	jv_free(ns);
}

/* Consumes tl. */
static void text_tools(struct buf *b, jv tl)
{
	buf_adds(b, "\nTools on PATH\n");
	jv_array_foreach(tl, i, t) {
		if (!json_get_bool(t, "found", false)) {
			kv(b, str_or(t, "name", "?"), "not found");
		} else {
			struct buf s = BUF_INIT;
			const char *v = json_get_str(t, "version");
			if (v)
				buf_addf(&s, "%s  (%s)", v, str_or(t, "path", "?"));
			else
				buf_addf(&s, "version unknown: %s  (%s)", str_or(t, "error", "?"),
					 str_or(t, "path", "?"));
			kv(b, str_or(t, "name", "?"), s.buf);
			buf_release(&s);
		}
		jv_free(t);
	}
}

static void text_project(struct buf *b, jv p)
{
	jv langs = json_get(p, "languages"), cmds = json_get(p, "commands");
	jv srcs = json_get(p, "sources"), bf = json_get(p, "build_files");

	buf_adds(b, "\nProject\n");
	kv(b, "root", str_or(p, "root", "(not in a repository)"));
	if (json_has(p, "error"))
		kv(b, "error", str_or(p, "error", ""));
	if (json_has(p, "note"))
		kv(b, "note", str_or(p, "note", ""));
	if (jv_get_kind(langs) == JV_KIND_OBJECT) {
		struct buf s = BUF_INIT;
		jv_object_foreach(langs, k, v) {
			buf_addf(&s, "%s%s %d", s.len ? ", " : "", jv_string_value(k),
				 (int)jv_number_value(v));
			jv_free(k);
			jv_free(v);
		}
		kv(b, "languages", s.len ? s.buf : "(none found)");
		buf_release(&s);
	}
	if (jv_get_kind(bf) == JV_KIND_ARRAY) {
		struct buf s = BUF_INIT;
		jv_array_foreach(bf, i, v) {
			buf_addf(&s, "%s%s", i ? ", " : "", jv_string_value(v));
			jv_free(v);
		}
		kv(b, "build files", s.len ? s.buf : "(none)");
		buf_release(&s);
	}
	if (jv_get_kind(cmds) == JV_KIND_OBJECT) {
		static const char *const which_cmd[] = { "build", "test", "lint", "typecheck", NULL };
		for (size_t i = 0; which_cmd[i]; i++) {
			const char *cmd = json_get_str(cmds, which_cmd[i]);
			struct buf s = BUF_INIT;
			if (cmd)
				buf_addf(&s, "%s (%s)", cmd, str_or(srcs, which_cmd[i], "?"));
			else
				buf_adds(&s, "(none)");
			kv(b, which_cmd[i], s.buf);
			buf_release(&s);
		}
	}
	jv_free(langs);
	jv_free(cmds);
	jv_free(srcs);
	jv_free(bf);
}

/* Borrows r. */
/* Print section `name` of r with fn (which borrows it), when r has it (--only). */
static void text_section(struct buf *b, jv r, const char *name, void (*fn)(struct buf *, jv))
{
	jv x = json_get(r, name);

	if (jv_get_kind(x) != JV_KIND_NULL)
		fn(b, x);
	jv_free(x);
}

static char *render_text(jv r)
{
	struct buf b = BUF_INIT;
	jv x;

	text_section(&b, r, "forge", text_forge);
	text_section(&b, r, "libraries", text_libraries);
	text_section(&b, r, "config", text_config);
	text_section(&b, r, "database", text_database);
	text_section(&b, r, "provider", text_provider);
	text_section(&b, r, "sandbox", text_sandbox);
	text_section(&b, r, "tools", text_tools);
	text_section(&b, r, "project", text_project);
	x = json_get(r, "problems");
	buf_adds(&b, "\nSummary\n");
	if (jv_array_length(jv_copy(x)) == 0)
		buf_adds(&b, "  no problems found\n");
	jv_array_foreach(x, i, m) {
		buf_addf(&b, "  ! %s\n", jv_string_value(m));
		jv_free(m);
	}
	jv_free(x);
	return buf_detach(&b, NULL);
}

/* ---------------------------------------------------------------- main */

#define WANT(name) (sections & section_bit(name, strlen(name)))

/* The report: the sections asked for (struct args) and the problems they
 * found.  The configuration is loaded either way: the database, provider
 * and sandbox sections read it. */
static jv report(struct cli_common *common, unsigned sections)
{
	struct ctx c = { common, NULL, jv_null(), NULL, jv_array() };
	char **env = probe_env();
	/* the tools are probed while the rest is checked: most of the time */
	struct tool_probe *tps = WANT("tools") ? tools_start(env) : NULL;
	jv r = jv_object(), cfg;

	if (cli_repo_root(&c.root, common->repo) < 0) {
		c.root = NULL;
		c.root_error = jv_string(forge_last_error());
		if (common->repo)
			problem(&c, jv_string_fmt("--repo: %s", forge_last_error()));
	}
	if (WANT("forge"))
		r = json_set(r, "forge", check_forge());
	if (WANT("libraries"))
		r = json_set(r, "libraries", check_libraries(env));
	cfg = check_config(&c);
	r = WANT("config") ? json_set(r, "config", cfg) : (jv_free(cfg), r);
	if (WANT("database"))
		r = json_set(r, "database", check_database(&c));
	if (WANT("provider"))
		r = json_set(r, "provider", check_provider(&c));
	if (WANT("sandbox"))
		r = json_set(r, "sandbox", check_sandbox(&c));
	if (tps)
		r = json_set(r, "tools", tools_finish(tps));
	if (WANT("project"))
		r = json_set(r, "project", check_project(&c));
	r = json_set(r, "problems", c.problems);
	config_free(c.cfg);
	free(c.root);
	jv_free(c.root_error);
	free(env);
	return r;
}

int main(int argc, char **argv)
{
	struct cli_spec spec = {
		.name = PROG,
		.synopsis = "[--json] [--only LIST] [--repo DIR] [--db PATH] [--config PATH]",
		.description = "Report what this machine gives Forge: linked libraries, the programs,\n"
			       "the database, the model provider (whether a key is set, never the key),\n"
			       "the sandbox walls this kernel gives run_command (namespaces, Landlock\n"
			       "reads/writes/scope, network namespace, pids cgroup, seccomp) and which\n"
			       "are missing, linters and test runners on PATH, and the project.",
		.options = options,
		.flags = CLI_MODEL_OPTIONS,
		.extra_help = "Sections: forge, libraries, config, database, provider, sandbox, tools\n"
			      "(probing every linter and test runner on PATH: most of the time), project.\n"
			      "--only provider,sandbox reports just those (and the configuration's\n"
			      "problems, which every section depends on).\n"
			      "A check that cannot run is reported in its section, never fatal.\n"
			      "Exit status: 0, whatever the checks found; 2 usage error.\n",
	};
	struct cli_common common;
	struct args a = { false, ALL_SECTIONS };
	int first = cli_parse(&common, &spec, argc, argv, on_option, &a);
	char *out;

	if (first < argc)
		cli_usage_error(&spec, "unexpected argument '%s'", argv[first]);
	jv r = report(&common, a.sections);
	if (a.json) {
		struct buf b = BUF_INIT;
		char *s = json_dumps(jv_copy(r), false);
		buf_adds(&b, s);
		buf_addch(&b, '\n');
		free(s);
		out = buf_detach(&b, NULL);
	} else {
		out = render_text(r);
	}
	jv_free(r);
	/* belt and braces: no key known to this process reaches stdout */
	llm_redact(out);
	fputs(out, stdout);
	free(out);
	return cli_finish(PROG, FORGE_EXIT_OK);
}
