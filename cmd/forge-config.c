/*
 * forge-config - the effective configuration (`forge config`).
 *
 *   forge-config                 the merged configuration as pretty JSON
 *   forge-config --explain       what the automation level means (its row of
 *                                safety.ladder) and where it came from, then
 *                                one line per leaf: where its value came from
 *   forge-config get PATH        one value (strings raw); exit 1 when not set,
 *                                2 when the schema has no such key
 *   forge-config path            the files read and whether each exists
 *   forge-config init [--force]  write a commented starter .forge/config.json
 *   forge-config set [--global] PATH VALUE
 *                                set one key in .forge/config.json (or the
 *                                user's file), checked against the schema
 *
 * A configuration that does not load (bad JSON, a schema error, a bad
 * FORGE_* number) is bad input: the message goes to stderr, exit 2.  So
 * is `init` over an existing file without --force, and a `set` whose key
 * or value the schema refuses (the file is left as it was).
 */
#include "core/buf.h"
#include "app/cli.h"
#include "data/config.h"
#include "core/forge.h"
#include "core/owner.h"
#include "core/forgedir.h"
#include "core/json.h"
#include "data/project.h"
#include "engine/gates.h"
#include "llm/llm.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "forge-config"

enum { OPT_EXPLAIN = 256, OPT_JSON, OPT_SET, OPT_FORCE, OPT_GLOBAL };

static const struct cli_option options[] = {
	{ "explain", 0, NULL, "what the automation level means, and where every value comes from", OPT_EXPLAIN },
	{ "json", 0, NULL, "JSON output: --explain as an array, get and path as JSON", OPT_JSON },
	{ "set", 0, "PATH=VALUE", "override one value (VALUE is JSON, else a string); repeatable",
	  OPT_SET },
	{ "force", 0, NULL, "init: overwrite an existing .forge/config.json", OPT_FORCE },
	{ "global", 0, NULL, "set: write the user's file (~/.config/forge/config.json)", OPT_GLOBAL },
	{ NULL, 0, NULL, NULL, 0 }
};

struct args {
	bool explain;
	bool json;
	bool force;
	bool global;
	jv flags;               /* the flags layer, built from --set and the model options */
};

static int on_option(int id, const char *arg, void *payload)
{
	struct args *a = payload;

	switch (id) {
	case OPT_EXPLAIN:
		a->explain = true;
		return 0;
	case OPT_JSON:
		a->json = true;
		return 0;
	case OPT_SET:
		return config_flag_assign(&a->flags, arg);
	case OPT_FORCE:
		a->force = true;
		return 0;
	case OPT_GLOBAL:
		a->global = true;
		return 0;
	}
	return forge_error("unhandled option");
}

/* The help text after the options; built from config_env_vars() so it
 * cannot disagree with what is read.  malloc'd. */
static char *extra_help(void)
{
	struct buf b = BUF_INIT;

	buf_adds(&b, "Commands:\n"
		     "  (none)      print the effective configuration as JSON\n"
		     "  get PATH    print the value at PATH (\"llm.model\", \"gates.0.id\"): strings\n"
		     "              raw, other values as JSON; exit 1 when PATH is not set,\n"
		     "              2 when the schema has no key PATH (a typo)\n"
		     "  path        list the configuration files and whether each exists\n"
		     "  init        write a commented starter .forge/config.json for this repository\n"
		     "              (the test command detected from Makefile, package.json, …);\n"
		     "              an existing file is refused (exit 2) unless --force\n"
		     "  set PATH VALUE  set one key in .forge/config.json (--global: the user's\n"
		     "              file); VALUE is JSON, else a string; a key or value the\n"
		     "              schema refuses is exit 2 and the file is left as it was\n"
		     "\nLayers, lowest first (objects merge, other values and arrays replace):\n"
		     "  default   built-in defaults\n"
		     "  user      $XDG_CONFIG_HOME/forge/config.json (~/.config/forge/config.json)\n"
		     "  project   <repo>/.forge/config.json\n"
		     "  file      --config FILE\n"
		     "  env       the variables below (empty = unset)\n"
		     "  flags     --set, --provider, --model, --base-url, --cassette\n"
		     "\nEnvironment:\n");
	for (const struct config_env_var *v = config_env_vars(); v->name; v++)
		buf_addf(&b, "  %-24s %s%s\n", v->name, v->path, v->number ? "  (number)" : "");
	return buf_detach(&b, NULL);
}

/*
 * The model keys as llm_choose() resolves them (a key in the environment
 * chooses the provider, the provider its default model, the model the fast
 * model; a base URL goes only to the provider named with it), so that
 * forge config shows what forge run and forge doctor use.  Each {path,
 * value, why} where the resolution differs from the layers' value (none
 * for a key it cannot resolve; llm.base_url null, why says why).  A new
 * array.
 */
static jv resolved_models(const struct config *cfg)
{
	struct llm_choice ch;
	jv out = jv_array();

	llm_choose(&ch, cfg, NULL);
	const struct { const char *path, *value, *why; } keys[] = {
		{ "llm.provider", ch.provider, ch.provider_why },
		{ "llm.model", ch.model, ch.model_why },
		{ "llm.fast_model", ch.fast_model, ch.fast_why },
	};

	/* a base URL set for another provider than the one in effect: null */
	if (!ch.base_url && config_get_str(cfg, "llm.base_url") && *config_get_str(cfg, "llm.base_url")) {
		jv e = json_set(json_set(jv_object(), "path", jv_string("llm.base_url")), "value", jv_null());
		out = jv_array_append(out, json_set(e, "why", jv_string(ch.base_url_why)));
	}
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		const char *now = config_get_str(cfg, keys[i].path);

		/* no provider chosen yet (no key): the configured defaults stand */
		if (!keys[i].value || (now && !strcmp(now, keys[i].value)))
			continue;
		jv e = json_set(jv_object(), "path", jv_string(keys[i].path));
		e = json_set(e, "value", json_str_or_null(keys[i].value));
		out = jv_array_append(out, json_set(e, "why", jv_string(keys[i].why)));
	}
	return out;
}

/* The effective configuration with the resolved model keys.  A new object. */
static jv effective(const struct config *cfg)
{
	jv all = config_effective(cfg), res = resolved_models(cfg);

	jv_array_foreach(res, i, r) {
		const char *path = json_get_str(r, "path");
		all = jv_setpath(all, jv_array_append(jv_array_append(jv_array(), jv_string("llm")),
						      jv_string(path + 4)), json_get(r, "value"));
		jv_free(r);
	}
	jv_free(res);
	return all;
}

/* Print v compactly, without a newline.  Consumes v. */
static void print_compact(jv v)
{
	char *s = json_dumps(v, false);

	fputs(s, stdout);
	free(s);
}

/*
 * What automation level `level` means, from its row of safety.ladder:
 * {"level", "name", "auto": [...], "ask": [...], "human": [...]}, each list
 * the decision points with that rule ("approved_review.low" for a point
 * decided by risk).  A new object.
 */
static jv level_meaning(const struct config *cfg, int level)
{
	static const char *const risks[] = { "low", "medium", "high", "critical" };
	jv by_rule[3] = { jv_array(), jv_array(), jv_array() };
	const char *name = ladder_level_name(cfg, level);

	for (const struct ladder_point *p = ladder_points(); p->key; p++) {
		for (int i = 0; i < (p->by_risk ? 4 : 1); i++) {
			char key[96];
			enum ladder_rule r = ladder_rule(cfg, level, p->key, p->by_risk ? risks[i] : NULL);

			snprintf(key, sizeof key, "%s%s%s", p->key, p->by_risk ? "." : "", p->by_risk ? risks[i] : "");
			by_rule[r] = jv_array_append(by_rule[r], jv_string(key));
		}
	}
	jv m = json_set(json_set(jv_object(), "level", jv_number(level)), "name", json_str_or_null(name));
	for (int r = LADDER_AUTO; r <= LADDER_HUMAN; r++)
		m = json_set(m, ladder_rule_name((enum ladder_rule)r), by_rule[r]);
	return m;
}

/* The points of one rule of a meaning (borrowed) in words, one a line; a
 * point decided by risk once, with the risk levels it covers. */
static void print_points(jv meaning, const char *rule, const char *heading)
{
	jv keys = json_get(meaning, rule);

	if (jv_array_length(jv_copy(keys)) > 0)
		printf("  %s\n", heading);
	for (const struct ladder_point *p = ladder_points(); p->key; p++) {
		struct buf risk = BUF_INIT;
		bool any = false;
		size_t n = strlen(p->key);

		jv_array_foreach(keys, i, k) {
			const char *key = jv_string_value(k);
			if (strncmp(key, p->key, n) == 0 && (key[n] == '\0' || key[n] == '.')) {
				any = true;
				if (key[n] == '.')
					buf_addf(&risk, "%s%s", risk.len ? ", " : "", key + n + 1);
			}
			jv_free(k);
		}
		if (any)
			printf("    - %s%s%s%s\n", p->words, risk.len ? " (" : "", risk.len ? risk.buf : "",
			       risk.len ? " risk)" : "");
		buf_release(&risk);
	}
	jv_free(keys);
}

/* The automation level's paragraph of --explain. */
static void print_level(const struct config *cfg)
{
	const char *layer = "default", *source = "built-in";
	int level = (int)config_get_num(cfg, "safety.automation_level");
	jv m = level_meaning(cfg, level);

	config_leaf_layer(cfg, "safety.automation_level", &layer, &source);
	printf("Automation level %d: %s (safety.automation_level, %s: %s; forge run --level N for one run)\n",
	       level, json_get_str(m, "name") ? json_get_str(m, "name") : "?", layer, source);
	print_points(m, "auto", "runs by itself:");
	print_points(m, "ask", "asks a human (--auto-approve answers yes):");
	print_points(m, "human", "always asks a human in person (--auto-approve does not):");
	putchar('\n');
	jv_free(m);
}

static void print_explain(const struct config *cfg, bool json)
{
	jv entries = config_explain(cfg), res = resolved_models(cfg);

	/* A resolved model key shows its value and why, as layer "resolved". */
	jv_array_foreach(res, i, r) {
		jv_array_foreach(entries, j, e) {
			if (!strcmp(json_get_str(e, "path"), json_get_str(r, "path"))) {
				e = json_set(e, "value", json_get(r, "value"));
				e = json_set(e, "layer", jv_string("resolved"));
				e = json_set(e, "source", json_get(r, "why"));
				entries = jv_array_set(entries, j, e);
			} else {
				jv_free(e);
			}
		}
		jv_free(r);
	}
	jv_free(res);
	if (json) {
		/* The level's entry carries what it means. */
		jv_array_foreach(entries, i, e) {
			if (!strcmp(json_get_str(e, "path"), "safety.automation_level"))
				entries = jv_array_set(entries, i, json_set(e, "meaning", level_meaning(cfg,
						(int)config_get_num(cfg, "safety.automation_level"))));
			else
				jv_free(e);
		}
		json_write_pretty(stdout, entries);
		return;
	}
	print_level(cfg);
	jv_array_foreach(entries, i, e) {
		printf("%s = ", json_get_str(e, "path"));
		print_compact(json_get(e, "value"));
		printf("  (%s: %s)\n", json_get_str(e, "layer"), json_get_str(e, "source"));
		jv_free(e);
	}
	jv_free(entries);
}

/*
 * `get` of a path with no value: a key the schema does not have (a typo:
 * every key it has is in the defaults or optional) is bad input and said
 * so, as `set` says it; one it has that nothing sets is exit 1.  The
 * schema is asked by checking a layer setting the path, as `set` checks.
 */
static int unset_key(const char *path)
{
	jv probe = jv_object();
	int status = FORGE_EXIT_REJECTED;

	if (config_flag_set(&probe, path, jv_null()) < 0) {
		fprintf(stderr, PROG ": %s: %s\n", path, forge_last_error());
		status = FORGE_EXIT_USAGE;
	} else if (config_layer_check(probe, "") < 0 && strstr(forge_last_error(), "unexpected property")) {
		const char *why = forge_last_error();

		why += strncmp(why, ": ", 2) == 0 ? 2 : 0;   /* (the source, "", first) */
		fprintf(stderr, PROG ": no key '%s' in the configuration (%s); `forge config --explain` "
			"lists every key\n", path, why);
		status = FORGE_EXIT_USAGE;
	} else {
		fprintf(stderr, PROG ": %s is not set (it has no default)\n", path);
	}
	jv_free(probe);
	return status;
}

/* `get PATH`: 0 when printed, 1 when not set, 2 when no such key. */
static int print_get(const struct config *cfg, const char *path, bool json)
{
	jv res = resolved_models(cfg), v = jv_invalid();

	jv_array_foreach(res, i, r) {
		if (!strcmp(json_get_str(r, "path"), path)) {
			jv_free(v);
			v = json_get(r, "value");
		}
		jv_free(r);
	}
	jv_free(res);
	if (!jv_is_valid(v)) {
		jv_free(v);
		if (!config_has(cfg, path))
			return unset_key(path);
		v = config_get(cfg, path);
	}
	if (!json && jv_get_kind(v) == JV_KIND_STRING) {
		printf("%s\n", jv_string_value(v));
		jv_free(v);
	} else {
		json_write_pretty(stdout, v);
	}
	return FORGE_EXIT_OK;
}

static void print_paths(const struct config_sources *src, bool json)
{
	jv files = config_files(src);

	if (json) {
		json_write_pretty(stdout, files);
		return;
	}
	jv_array_foreach(files, i, f) {
		printf("%-8s %s  (%s)\n", json_get_str(f, "layer"), json_get_str(f, "path"),
		       json_get_bool(f, "exists", false) ? "exists" : "missing");
		jv_free(f);
	}
	jv_free(files);
}

/* ---- init and set ------------------------------------------------------- */

/* A JSON string literal for s.  malloc'd. */
static char *json_quote(const char *s)
{
	return json_dumps(jv_string(s), false);
}

/* The starter configuration for the repository at root: notes ("$comment",
 * which the configuration keeps out of its values) and the test command
 * detected there.  The automation level and the budget are described, not
 * written: a repository's file may only lower them (config.h, the project
 * guard), so the shipped values written here would be "ignored" with a
 * warning on every command of whoever lowered them in their own file.
 * Writing the file changes nothing a run does until someone edits it.
 * malloc'd. */
static char *starter_config(const char *root)
{
	struct buf b = BUF_INIT;
	char *test = project_command(root, NULL, "test");
	char *quoted = test ? json_quote(test) : NULL;

	buf_adds(&b, "{\n"
		"  \"$comment\": [\"Forge's settings for this repository; commit this file.\",\n"
		"    \"Every key and its default: forge config --explain.  Change one: forge config set KEY VALUE.\",\n"
		"    \"Keys starting with $ are notes like this one.  API keys never go here: they stay in the environment.\"],\n"
		"  \"llm\": {\n"
		"    \"$comment\": [\"The model.  ANTHROPIC_API_KEY or OPENAI_API_KEY in the environment picks the provider and its default model.\",\n"
		"      \"Another model: \\\"provider\\\": \\\"openai\\\", \\\"model\\\": \\\"gpt-4.1\\\".\",\n"
		"      \"A local OpenAI-compatible server (Ollama): \\\"provider\\\": \\\"openai\\\" and its model here; its address goes in your own file, since this one may not say where your key is sent: forge config set --global llm.base_url http://localhost:11434/v1\"]\n"
		"  },\n"
		"  \"tools\": {\n");
	if (quoted)
		buf_addf(&b, "    \"$comment\": \"The project's commands; test_command was detected when this file was written. "
			     "Also build_command, lint_command, deploy_command.\",\n"
			     "    \"test_command\": %s\n", quoted);
	else
		buf_adds(&b, "    \"$comment\": \"No test command was detected: set test_command (and build_command, "
			     "lint_command) so the implement and test phases can check the changes.\"\n");
	buf_adds(&b, "  },\n"
		"  \"safety\": {\n"
		"    \"$comment\": [\"The automation ladder, 0-4: how much passes without asking a human (a production deploy always asks).\",\n"
		"      \"4, the shipped level: reviews and fixable test failures go back to implement by themselves; high-risk plans and critical security findings ask.\",\n"
		"      \"1: a human decides on each review and test failure.  forge config --explain says what the level means.\",\n"
		"      \"This file can only lower it for everyone (\\\"automation_level\\\": 2); each person's own file sets it for them.\"]\n"
		"  },\n"
		"  \"budget\": {\n"
		"    \"$comment\": \"What one forge run may spend on the model, in USD (forge run --budget; forge config get budget.usd says the limit in force). This file can only lower it (\\\"usd\\\": 10).\"\n"
		"  }\n"
		"}\n");
	free(test);
	free(quoted);
	return buf_detach(&b, NULL);
}

static int cmd_init(const struct args *a, const struct cli_common *common)
{
	struct session ses;
	int status = session_open(&ses, common, SESSION_NEED_REPO, jv_null());
	char *path = NULL, *text = NULL;
	struct stat st;

	if (status)
		return status;
	path = config_project_file(ses.repo);
	status = FORGE_EXIT_USAGE;
	if (!a->force && lstat(path, &st) == 0) {
		forge_error("'%s' exists; `forge config init --force` overwrites it", path);
		goto out;
	}
	text = starter_config(ses.repo);
	jv v = json_parse(text, strlen(text));
	int bad = !jv_is_valid(v) || config_layer_check(v, path) < 0;

	jv_free(v);
	status = FORGE_EXIT_DEPENDENCY;
	if (bad || config_make_parent(path) < 0)
		goto out;
	char *dir = xstrdup(path);
	int ign = forge_dir_ignore(dirname(dir));

	free(dir);
	if (ign < 0 || buf_replace_file(path, text, strlen(text)) < 0)
		goto out;
	owner_follow(-1, path);
	if (common->verbosity >= 0)
		fprintf(stderr, PROG ": wrote %s\n", path);
	status = FORGE_EXIT_OK;
out:
	free(text);
	free(path);
	session_close(&ses);
	return status;
}

/* The file `set` writes: the user's with --global, else the project's. */
static int set_target(char **out, const struct args *a, const struct cli_common *common)
{
	struct session ses;
	int status;

	*out = NULL;
	if (a->global) {
		*out = config_user_file();
		return *out ? 0 : (forge_error("neither XDG_CONFIG_HOME nor HOME is set to an absolute path"), FORGE_EXIT_USAGE);
	}
	status = session_open(&ses, common, SESSION_NEED_REPO, jv_null());
	if (status)
		return status;
	*out = config_project_file(ses.repo);
	session_close(&ses);
	return 0;
}

/*
 * After `set` wrote key into the repository's file: when the configuration
 * now drops it there (config_ignored(): a key a repository may not set or
 * loosen without trust_project, config.h), every command would ignore it.
 * Say so, and where it would hold.  Never an error: the value is written,
 * and it may hold for someone who trusts the repository.
 */
static void warn_unless_kept(const struct cli_common *common, const char *key, const char *said,
			     const char *file)
{
	struct session ses;
	size_t n = strlen(key);

	/* this warning names the key: not the general one of every command */
	setenv("FORGE_CONFIG_IGNORED_SAID", file, 1);
	if (session_open(&ses, common, SESSION_NEED_REPO | SESSION_CONFIG, jv_null()))
		return;
	jv ignored = config_ignored(ses.cfg);
	bool dropped = false;

	jv_array_foreach(ignored, i, e) {
		const char *p = json_get_str(e, "path");
		size_t m = p ? strlen(p) : 0;

		/* the key itself, a leaf under it or the entry it is in */
		if (p && ((strncmp(p, key, n) == 0 && (p[n] == '\0' || p[n] == '.')) ||
			  (strncmp(key, p, m) == 0 && key[m] == '.')))
			dropped = true;
		jv_free(e);
	}
	jv_free(ignored);
	if (dropped)
		fprintf(stderr, PROG ": warning: %s is ignored in %s: a repository's configuration may not "
			"choose where your API key is sent, nor loosen your sandbox, tool permissions, gates, "
			"automation level, prices or limits; to have it hold for you: forge config set --global "
			"%s '%s' (or set \"trust_project\": true in your own configuration)\n",
			key, file, key, said);
	session_close(&ses);
}

static int cmd_set(const struct args *a, const struct cli_common *common, const char *key, const char *value)
{
	char *path = NULL, *said = NULL;
	jv v;
	int status = set_target(&path, a, common);

	if (status)
		goto out;
	v = json_parse(value, strlen(value));
	if (!jv_is_valid(v)) {
		/* not JSON: a bare word like claude-haiku-4-5 is meant as a string */
		jv_free(v);
		v = jv_string(value);
	} else if (jv_get_kind(v) == JV_KIND_NUMBER) {
		/* a number no double holds is refused, as --budget does: 1e999
		 * (libjq gives the largest, an unlimited budget in effect), nan
		 * and inf (libjq takes them: written null and the largest, a
		 * file no command then loads), 1e-400 (written 0) */
		char *end;

		errno = 0;
		double d = strtod(value, &end);
		bool range = errno == ERANGE;

		if (!isfinite(jv_number_value(v)) || !isfinite(d) || range) {
			if (range)
				forge_error("%s: %s is out of range", key, value);
			else
				forge_error("%s: %s is not a finite number", key, value);
			jv_free(v);
			status = FORGE_EXIT_USAGE;
			goto out;
		}
	}
	/* what is said is what the file holds: " 5" is 5, 1e2 is 100 */
	said = jv_get_kind(v) == JV_KIND_STRING ? xstrdup(jv_string_value(v)) : json_dumps(jv_copy(v), false);
	switch (config_file_set(path, key, v)) {
	case 0: status = FORGE_EXIT_OK; break;
	case CONFIG_FILE_UNWRITTEN: status = FORGE_EXIT_DEPENDENCY; break;
	default: status = FORGE_EXIT_USAGE; break;
	}
	if (status == FORGE_EXIT_OK && common->verbosity >= 0) {
		fprintf(stderr, PROG ": %s = %s in %s\n", key, said, path);
		if (!a->global)
			warn_unless_kept(common, key, said, path);
	}
out:
	free(said);
	free(path);
	return status;
}

static int run(const struct cli_spec *spec, struct args *a, const struct cli_common *common,
	       int nops, char **ops)
{
	struct config_sources src = { NULL, common->config, jv_null() };
	struct session ses;
	int status;

	if (nops > 0 && strcmp(ops[0], "init") == 0) {
		if (nops != 1)
			cli_usage_error(spec, "wrong number of arguments for 'init'");
		status = cmd_init(a, common);
		if (status)
			fprintf(stderr, PROG ": %s\n", forge_last_error());
		return status;
	}
	if (nops > 0 && strcmp(ops[0], "set") == 0) {
		if (nops != 3)
			cli_usage_error(spec, "usage: set PATH VALUE (one key, one value)");
		status = cmd_set(a, common, ops[1], ops[2]);
		if (status)
			fprintf(stderr, PROG ": %s\n", forge_last_error());
		return status;
	}
	if (nops > 0 && strcmp(ops[0], "get") != 0 && strcmp(ops[0], "path") != 0)
		cli_usage_error(spec, "unknown command '%s'", ops[0]);
	if ((nops > 0 && strcmp(ops[0], "get") == 0 && nops != 2) ||
	    (nops > 0 && strcmp(ops[0], "path") == 0 && nops != 1))
		cli_usage_error(spec, "wrong number of arguments for '%s'", ops[0]);
	if (nops > 0 && strcmp(ops[0], "path") == 0) {
		status = session_open(&ses, common, 0, jv_null());
		if (status)
			goto fail;
		src.repo = ses.repo;
		print_paths(&src, a->json);
		goto out;
	}
	status = session_open(&ses, common, SESSION_CONFIG, a->flags);
	a->flags = jv_null();
	if (status)
		goto fail;
	struct config *cfg = ses.cfg;
	if (nops > 0)
		status = print_get(cfg, ops[1], a->json);
	else if (a->explain)
		print_explain(cfg, a->json);
	else
		json_write_pretty(stdout, effective(cfg));
	goto out;
fail:
	fprintf(stderr, PROG ": %s\n", forge_last_error());
	return status;
out:
	session_close(&ses);
	return status;
}

int main(int argc, char **argv)
{
	char *help = extra_help();
	struct cli_spec spec = {
		.name = PROG,
		.synopsis = "[--explain [--json]] [--set PATH=VALUE]...\nget PATH\npath\ninit [--force]\nset [--global] PATH VALUE",
		.description = "Print Forge's effective configuration: the built-in defaults overlaid\n"
			       "with the user, project and --config files, FORGE_* variables and flags.\n"
			       "init writes a starter .forge/config.json; set changes one key in it.",
		.options = options,
		.flags = CLI_MODEL_OPTIONS,
		.extra_help = help,
	};
	struct cli_common common;
	struct args a = { .flags = JSON_NULL };
	int first = cli_parse(&common, &spec, argc, argv, on_option, &a);
	int status;

	status = run(&spec, &a, &common, argc - first, argv + first);
	jv_free(a.flags);
	free(help);
	return cli_finish(PROG, status);
}
