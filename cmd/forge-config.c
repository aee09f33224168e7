/*
 * forge-config - the effective configuration (`forge config`).
 *
 *   forge-config                 the merged configuration as pretty JSON
 *   forge-config --explain       what the automation level means (its row of
 *                                safety.ladder) and where it came from, then
 *                                one line per leaf: where its value came from
 *   forge-config get PATH        one value (strings raw); exit 1 when not set
 *   forge-config path            the files read and whether each exists
 *
 * A configuration that does not load (bad JSON, a schema error, a bad
 * FORGE_* number) is bad input: the message goes to stderr, exit 2.
 */
#include "core/buf.h"
#include "app/cli.h"
#include "data/config.h"
#include "core/forge.h"
#include "core/json.h"
#include "engine/gates.h"
#include "llm/llm.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "forge-config"

enum { OPT_EXPLAIN = 256, OPT_JSON, OPT_SET };

static const struct cli_option options[] = {
	{ "explain", 0, NULL, "what the automation level means, and where every value comes from", OPT_EXPLAIN },
	{ "json", 0, NULL, "JSON output: --explain as an array, get and path as JSON", OPT_JSON },
	{ "set", 0, "PATH=VALUE", "override one value (VALUE is JSON, else a string); repeatable",
	  OPT_SET },
	{ NULL, 0, NULL, NULL, 0 }
};

struct args {
	bool explain;
	bool json;
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
		     "              raw, other values as JSON; exit 1 when PATH is not set\n"
		     "  path        list the configuration files and whether each exists\n"
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
 * model), so that forge config shows what forge run and forge doctor use.
 * Each {path, value, why} where the resolution differs from the layers'
 * value (none for a key it cannot resolve).  A new array.
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

/* Print v as indented JSON and a newline.  Consumes v. */
static void print_pretty(jv v)
{
	jv s = jv_dump_string(v, JV_PRINT_INDENT_FLAGS(2));

	fputs(jv_string_value(s), stdout);
	putchar('\n');
	jv_free(s);
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
		print_pretty(entries);
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

/* `get PATH`: 0 when printed, 1 when not set. */
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
			return FORGE_EXIT_REJECTED;
		v = config_get(cfg, path);
	}
	if (!json && jv_get_kind(v) == JV_KIND_STRING) {
		printf("%s\n", jv_string_value(v));
		jv_free(v);
	} else {
		print_pretty(v);
	}
	return FORGE_EXIT_OK;
}

static void print_paths(const struct config_sources *src, bool json)
{
	jv files = config_files(src);

	if (json) {
		print_pretty(files);
		return;
	}
	jv_array_foreach(files, i, f) {
		printf("%-8s %s  (%s)\n", json_get_str(f, "layer"), json_get_str(f, "path"),
		       json_get_bool(f, "exists", false) ? "exists" : "missing");
		jv_free(f);
	}
	jv_free(files);
}

static int run(const struct cli_spec *spec, struct args *a, const struct cli_common *common,
	       int nops, char **ops)
{
	struct config_sources src = { NULL, common->config, jv_null() };
	struct session ses;
	int status;

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
		print_pretty(effective(cfg));
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
		.synopsis = "[--explain [--json]] [--set PATH=VALUE]...\nget PATH\npath",
		.description = "Print Forge's effective configuration: the built-in defaults overlaid\n"
			       "with the user, project and --config files, FORGE_* variables and flags.",
		.options = options,
		.flags = CLI_MODEL_OPTIONS,
		.extra_help = help,
	};
	struct cli_common common;
	struct args a = { false, false, jv_null() };
	int first = cli_parse(&common, &spec, argc, argv, on_option, &a);
	int status;

	status = run(&spec, &a, &common, argc - first, argv + first);
	jv_free(a.flags);
	free(help);
	return cli_finish(PROG, status);
}
