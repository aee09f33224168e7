/* test_config.c - layering, validation and explain of lib/config. */
#include "data/config.h"
#include "core/forge.h"
#include "core/buf.h"
#include "core/cachedir.h"
#include "core/json.h"
#include "core/jsonscan.h"
#include "core/resource.h"
#include "data/schema.h"
#include "unit.h"

#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[256];           /* this run's scratch directory */
static char path_buf[512];

/* tmp/rel, in a static buffer (one at a time). */
static const char *at(const char *rel)
{
	snprintf(path_buf, sizeof path_buf, "%s/%s", tmp, rel);
	return path_buf;
}

/* Write text to tmp/rel, making the directories on the way. */
static void put(const char *rel, const char *text)
{
	char dir[512];

	snprintf(dir, sizeof dir, "%s/%s", tmp, rel);
	for (char *p = dir + strlen(tmp) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(dir, 0700);
		*p = '/';
	}
	FILE *f = fopen(at(rel), "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* Start every test from nothing: an empty HOME, no FORGE_* variables. */
static void fresh(void)
{
	if (tmp[0])
		unit_rmtree(tmp);
	const char *base = getenv("TMPDIR");

	snprintf(tmp, sizeof tmp, "%s/forge-test-config.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmp))
		abort();
	setenv("HOME", at("home"), 1);
	setenv("XDG_CONFIG_HOME", at("home/.config"), 1);
	for (const struct config_env_var *v = config_env_vars(); v->name; v++)
		unsetenv(v->name);
}

/* Load with the given repo (relative to tmp), --config file and flags. */
static int load(struct config **out, const char *repo, const char *file, jv flags)
{
	char repo_path[512], file_path[512];
	struct config_sources src = { NULL, NULL, flags };

	if (repo) {
		snprintf(repo_path, sizeof repo_path, "%s/%s", tmp, repo);
		src.repo = repo_path;
	}
	if (file) {
		snprintf(file_path, sizeof file_path, "%s/%s", tmp, file);
		src.file = file_path;
	}
	return config_load(out, &src);
}

/* The explain entry for path, or null.  Borrows nothing. */
static jv explain_entry(const struct config *cfg, const char *path)
{
	jv all = config_explain(cfg);
	jv found = jv_null();

	jv_array_foreach(all, i, e) {
		const char *p = json_get_str(e, "path");

		if (jv_get_kind(found) == JV_KIND_NULL && p && strcmp(p, path) == 0) {
			jv_free(found);
			found = e;
		} else {
			jv_free(e);
		}
	}
	jv_free(all);
	return found;
}

static void test_defaults(void)
{
	struct config *cfg = NULL;

	fresh();
	CHECK_MSG(load(&cfg, NULL, NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_STR(config_get_str(cfg, "llm.provider"), "anthropic");
	CHECK_STR(config_get_str(cfg, "llm.model"), "claude-sonnet-4-5");
	CHECK_INT(config_get_num(cfg, "safety.automation_level"), 4);
	CHECK_INT(config_get_num(cfg, "bounces.review_max"), 3);
	CHECK_INT(config_get_num(cfg, "bounces.test_max"), 2);
	CHECK(config_get_num(cfg, "bounces.test_fix_confidence") == 0.7);
	CHECK_INT(config_get_num(cfg, "safety.time_s.total"), 7200);
	CHECK_STR(config_get_str(cfg, "gates.0.id"), "architecture_approval");
	CHECK_STR(config_get_str(cfg, "gates.3.phase"), "*");
	CHECK(config_has(cfg, "llm.base_url"));      /* present, null */
	CHECK(!config_has(cfg, "llm.api_key"));
	CHECK(!config_has(cfg, "gates.9"));
	CHECK(config_get_str(cfg, "llm.base_url") == NULL);
	CHECK(!config_get_bool(cfg, "llm.nothing"));	/* absent: no fallback, false */
	/* Notes are dropped on load. */
	CHECK(!config_has(cfg, "$comment"));
	CHECK(!config_has(cfg, "llm.$comment"));
	CHECK(!config_has(cfg, "gates.0.$comment"));
	config_free(cfg);
}

/* Answers asked again come from lookup()'s memo: the same values, absent
 * stays absent, a bad path is refused each time, and slots shared by many
 * paths (a collision replaces) still answer each path with its own value. */
static void test_lookup_memo(void)
{
	struct config *cfg = NULL;
	char path[64];

	fresh();
	CHECK_MSG(load(&cfg, NULL, NULL, jv_null()) == 0, "%s", forge_last_error());
	for (int round = 0; round < 3; round++) {
		CHECK_STR(config_get_str(cfg, "llm.provider"), "anthropic");
		CHECK_INT(config_get_num(cfg, "bounces.review_max"), 3);
		CHECK(!config_has(cfg, "llm.api_key"));
		CHECK(config_has(cfg, "llm.base_url"));
		jv bad = config_get(cfg, "llm.\"unterminated");
		CHECK(jv_get_kind(bad) == JV_KIND_NULL);
		jv_free(bad);
		for (int i = 0; i < 300; i++) {
			snprintf(path, sizeof path, "gates.%d.id", i % 7);
			jv v = config_get(cfg, path);
			CHECK(jv_equal(v, config_get(cfg, path)));
			snprintf(path, sizeof path, "nothing.%d", i);
			CHECK(!config_has(cfg, path));
		}
		CHECK_STR(config_get_str(cfg, "gates.0.id"), "architecture_approval");
		CHECK_STR(config_get_str(cfg, "gates.3.phase"), "*");
	}
	config_free(cfg);
}

/* config_load does not validate the built-in defaults alone (only as part
 * of the effective configuration): here they are, notes and all. */
static void test_defaults_valid_alone(void)
{
	const struct resource *r = resource_find("config.defaults.json");
	const struct schema *s = schema_get("config.schema.json");
	char *where = NULL;
	jv v;

	CHECK(r && s);
	v = json_parse(r->data, r->len);
	CHECK(json_is(v, JV_KIND_OBJECT));
	CHECK_MSG(schema_validate(s, v) == 0, "%s", forge_last_error());
	CHECK(json_find_nul(&where, v) == 0);
	jv_free(v);
}

/* A value that passed is not validated again; one that fails fails the
 * same way each time; the keys land in $XDG_CACHE_HOME/forge/config-valid. */
static void test_validation_cache(void)
{
	struct config *cfg = NULL;
	char first[600];
	int before;
	struct stat st;

	fresh();
	setenv("XDG_CACHE_HOME", at("cache"), 1);
	put("repo/.forge/config.json", "{\"llm\":{\"model\":\"cached-model\"}}");
	before = config_full_validations();
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK(config_full_validations() == before + 2);     /* the project layer, the whole */
	config_free(cfg);
	cfg = NULL;
	CHECK(stat(at("cache/forge/config-valid"), &st) == 0 && st.st_size >= 2 * 33 && st.st_size % 33 == 0);
	before = config_full_validations();
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_INT(config_full_validations(), before);
	CHECK_STR(config_get_str(cfg, "llm.model"), "cached-model");
	config_free(cfg);
	cfg = NULL;
	/* a value that fails is validated (and fails) every time */
	put("repo/.forge/config.json", "{\"safety\":{\"automation_level\":7}}");
	CHECK(load(&cfg, "repo", NULL, jv_null()) < 0);
	snprintf(first, sizeof first, "%s", forge_last_error());
	before = config_full_validations();
	CHECK(load(&cfg, "repo", NULL, jv_null()) < 0);
	CHECK_INT(config_full_validations(), before + 1);
	CHECK_STR(forge_last_error(), first);
	unsetenv("XDG_CACHE_HOME");
}

/* The cache is made below a directory that is there, never in place of
 * one: under a HOME that does not exist (HOME=/nonexistent, a removed one)
 * there is no cache, and nothing is made (before: run as root, the unit
 * tests made /nonexistent/.cache/forge/config-valid at the root). */
static void test_validation_cache_needs_home(void)
{
	struct config *cfg = NULL;
	struct stat st;
	char *p;

	fresh();
	unsetenv("XDG_CACHE_HOME");
	put("repo/.forge/config.json", "{\"llm\":{\"model\":\"homeless\"}}");
	CHECK(stat(at("home"), &st) < 0);
	CHECK(cache_path("config-valid") == NULL);
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_STR(config_get_str(cfg, "llm.model"), "homeless");
	config_free(cfg);
	cfg = NULL;
	CHECK(stat(at("home"), &st) < 0);
	/* an XDG_CACHE_HOME is made (the XDG spec), the directories above it are not */
	setenv("XDG_CACHE_HOME", at("gone/cache"), 1);
	CHECK(cache_path("config-valid") == NULL);
	setenv("XDG_CACHE_HOME", at("cache/"), 1);
	CHECK((p = cache_path("config-valid")) != NULL);
	free(p);
	/* a HOME that is there gets its ~/.cache/forge */
	unsetenv("XDG_CACHE_HOME");
	CHECK(mkdir(at("home"), 0700) == 0);
	put("repo/.forge/config.json", "{\"llm\":{\"model\":\"housed\"}}");
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	config_free(cfg);
	CHECK(stat(at("home/.cache/forge/config-valid"), &st) == 0);
}

/* The cache keys a configuration by what it is made from: another text of
 * a layer, another variable or other flags is validated again (a value
 * that fails is never taken for one that passed), the same ones are not. */
static void test_validation_cache_inputs(void)
{
	struct config *cfg = NULL;
	int before;

	fresh();
	setenv("XDG_CACHE_HOME", at("cache"), 1);
	put("repo/.forge/config.json", "{\"llm\":{\"model\":\"a\"}}");
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	config_free(cfg);
	cfg = NULL;
	before = config_full_validations();
	put("repo/.forge/config.json", "{\"llm\":{\"model\":\"b\"}}");
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_INT(config_full_validations(), before + 2);       /* the project layer, the whole */
	CHECK_STR(config_get_str(cfg, "llm.model"), "b");
	config_free(cfg);
	cfg = NULL;
	/* back to the first text: both passed before */
	before = config_full_validations();
	put("repo/.forge/config.json", "{\"llm\":{\"model\":\"a\"}}");
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_INT(config_full_validations(), before);
	CHECK_STR(config_get_str(cfg, "llm.model"), "a");
	config_free(cfg);
	cfg = NULL;
	/* a variable: its own layer and the whole are new; a bad value fails */
	setenv("FORGE_AUTOMATION_LEVEL", "2", 1);
	before = config_full_validations();
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_INT(config_full_validations(), before + 2);
	config_free(cfg);
	cfg = NULL;
	setenv("FORGE_AUTOMATION_LEVEL", "7", 1);
	CHECK(load(&cfg, "repo", NULL, jv_null()) < 0);
	CHECK(strstr(forge_last_error(), "FORGE_AUTOMATION_LEVEL") != NULL);
	unsetenv("FORGE_AUTOMATION_LEVEL");
	/* flags: the same, by their JSON */
	jv flags = jv_null();
	CHECK(config_flag_set(&flags, "llm.model", jv_string("c")) == 0);
	before = config_full_validations();
	CHECK_MSG(load(&cfg, "repo", NULL, jv_copy(flags)) == 0, "%s", forge_last_error());
	CHECK_INT(config_full_validations(), before + 2);
	CHECK_STR(config_get_str(cfg, "llm.model"), "c");
	config_free(cfg);
	cfg = NULL;
	before = config_full_validations();
	CHECK_MSG(load(&cfg, "repo", NULL, flags) == 0, "%s", forge_last_error());
	CHECK_INT(config_full_validations(), before);
	config_free(cfg);
	unsetenv("XDG_CACHE_HOME");
}

static void test_merge_is_recursive_arrays_replace(void)
{
	struct config *cfg = NULL;

	fresh();
	put("home/.config/forge/config.json",
	    "{\"$schema\":\"x\",\"llm\":{\"$comment\":\"mine\",\"model\":\"m-user\"},"
	    "\"deploy\":{\"canary\":{\"medium\":[50,100]}}}");
	CHECK_MSG(load(&cfg, NULL, NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_STR(config_get_str(cfg, "llm.model"), "m-user");
	/* Siblings of an overridden key stay. */
	CHECK_STR(config_get_str(cfg, "llm.fast_model"), "claude-haiku-4-5");
	CHECK_INT(config_get_num(cfg, "llm.max_tokens"), 8192);
	/* An array is replaced whole, not merged element by element. */
	jv medium = config_get(cfg, "deploy.canary.medium");
	jv want = jv_parse("[50,100]");
	bool same = json_equal(medium, want);
	jv_free(medium);
	jv_free(want);
	CHECK(same);
	CHECK_INT(config_get_num(cfg, "deploy.canary.high.4"), 100);
	/* Notes are allowed in a file and dropped like the defaults' own. */
	CHECK(!config_has(cfg, "$schema"));
	CHECK(!config_has(cfg, "llm.$comment"));
	config_free(cfg);
}

static void test_each_layer_overrides(void)
{
	struct config *cfg = NULL;
	jv flags = jv_null();

	fresh();
	put("home/.config/forge/config.json",
	    "{\"llm\":{\"model\":\"user\",\"fast_model\":\"user\",\"cassette\":\"user\","
	    "\"base_url\":\"http://user/v1\",\"max_tokens\":100}}");
	put("repo/.forge/config.json",
	    "{\"llm\":{\"model\":\"project\",\"fast_model\":\"project\",\"cassette\":\"project\","
	    "\"base_url\":\"http://project/v1\",\"max_retries\":1}}");
	put("extra.json", "{\"llm\":{\"model\":\"file\",\"fast_model\":\"file\",\"cassette\":\"file\"}}");
	setenv("FORGE_MODEL", "env", 1);
	setenv("FORGE_CASSETTE", "env", 1);
	CHECK(config_flag_set(&flags, "llm.model", jv_string("flags")) == 0);
	CHECK_MSG(load(&cfg, "repo", "extra.json", flags) == 0, "%s", forge_last_error());
	CHECK_INT(config_get_num(cfg, "llm.max_tokens"), 100);             /* user */
	CHECK_INT(config_get_num(cfg, "llm.max_retries"), 1);              /* project (fewer) */
	/* (not the project's base URL: where the key goes is the user's,
	 * test_project_guard) */
	CHECK_STR(config_get_str(cfg, "llm.base_url"), "http://user/v1");
	CHECK_STR(config_get_str(cfg, "llm.fast_model"), "file");             /* --config */
	CHECK_STR(config_get_str(cfg, "llm.cassette"), "env");                /* env */
	CHECK_STR(config_get_str(cfg, "llm.model"), "flags");                 /* flags */
	config_free(cfg);
}

static void test_missing_files(void)
{
	struct config *cfg = NULL;

	fresh();
	/* No user file, no project file: fine.  A missing --config: not. */
	CHECK_MSG(load(&cfg, "norepo", NULL, jv_null()) == 0, "%s", forge_last_error());
	config_free(cfg);
	cfg = NULL;
	CHECK(load(&cfg, NULL, "nope.json", jv_null()) < 0);
	CHECK(cfg == NULL);
	CHECK(strstr(forge_last_error(), "nope.json") != NULL);
	/* A relative XDG_CONFIG_HOME is ignored (XDG spec): ~/.config is used. */
	put("home/.config/forge/config.json", "{\"budget\":{\"usd\":7}}");
	setenv("XDG_CONFIG_HOME", "relative/dir", 1);
	CHECK_MSG(load(&cfg, NULL, NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_INT(config_get_num(cfg, "budget.usd"), 7);
	config_free(cfg);
}

static void test_env_numbers(void)
{
	struct config *cfg = NULL;

	fresh();
	setenv("FORGE_AUTOMATION_LEVEL", "3", 1);
	setenv("FORGE_BUDGET_USD", "12.5", 1);
	setenv("FORGE_MAX_LINE_BYTES", "", 1);          /* empty = unset */
	CHECK_MSG(load(&cfg, NULL, NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_INT(config_get_num(cfg, "safety.automation_level"), 3);
	CHECK(config_get_num(cfg, "budget.usd") == 12.5);
	CHECK_INT(config_get_num(cfg, "stream.max_line_bytes"), 16777216);
	config_free(cfg);
	cfg = NULL;

	setenv("FORGE_BUDGET_USD", "lots", 1);
	CHECK(load(&cfg, NULL, NULL, jv_null()) < 0);
	CHECK_MSG(strstr(forge_last_error(), "FORGE_BUDGET_USD") != NULL, "%s", forge_last_error());
	setenv("FORGE_BUDGET_USD", "nan", 1);
	CHECK(load(&cfg, NULL, NULL, jv_null()) < 0);
	unsetenv("FORGE_BUDGET_USD");

	/* A number that parses but breaks the schema names the variable too. */
	setenv("FORGE_AUTOMATION_LEVEL", "9", 1);
	CHECK(load(&cfg, NULL, NULL, jv_null()) < 0);
	CHECK_MSG(strncmp(forge_last_error(), "FORGE_AUTOMATION_LEVEL: .safety.automation_level",
			  48) == 0, "%s", forge_last_error());
	setenv("FORGE_AUTOMATION_LEVEL", "3", 1);
	setenv("FORGE_DEPLOY_STRATEGY", "yolo", 1);
	CHECK(load(&cfg, NULL, NULL, jv_null()) < 0);
	CHECK_MSG(strstr(forge_last_error(), "FORGE_DEPLOY_STRATEGY: .deploy.strategy") != NULL, "%s",
		  forge_last_error());
}

static void test_file_errors_name_file_and_path(void)
{
	struct config *cfg = NULL;
	char want[600];

	fresh();
	put("repo/.forge/config.json", "{\"safety\":{\"automation_level\":7}}");
	CHECK(load(&cfg, "repo", NULL, jv_null()) < 0);
	snprintf(want, sizeof want, "%s: .safety.automation_level: ", at("repo/.forge/config.json"));
	CHECK_MSG(strncmp(forge_last_error(), want, strlen(want)) == 0, "%s", forge_last_error());
	CHECK_MSG(strstr(forge_last_error(), "7") != NULL, "%s", forge_last_error());

	/* A typo in a section name is an error that names it. */
	put("repo/.forge/config.json", "{\"saftey\":{\"automation_level\":2}}");
	CHECK(load(&cfg, "repo", NULL, jv_null()) < 0);
	CHECK_MSG(strstr(forge_last_error(), "saftey") != NULL, "%s", forge_last_error());

	/* Malformed JSON names the file. */
	put("home/.config/forge/config.json", "{\"llm\": {\"model\": }");
	CHECK(load(&cfg, NULL, NULL, jv_null()) < 0);
	CHECK_MSG(strstr(forge_last_error(), at("home/.config/forge/config.json")) != NULL, "%s",
		  forge_last_error());

	/* Not an object at all. */
	put("home/.config/forge/config.json", "[1,2]");
	CHECK(load(&cfg, NULL, NULL, jv_null()) < 0);
	CHECK_MSG(strstr(forge_last_error(), at("home/.config/forge/config.json")) != NULL, "%s",
		  forge_last_error());

	/* A gate must be complete: arrays replace, nothing fills the gaps. */
	put("home/.config/forge/config.json", "{\"gates\":[{\"id\":\"x\",\"phase\":\"plan\"}]}");
	CHECK(load(&cfg, NULL, NULL, jv_null()) < 0);
	CHECK_MSG(strstr(forge_last_error(), ".gates[0]") != NULL, "%s", forge_last_error());
	CHECK(cfg == NULL);
}

static void test_flags_errors(void)
{
	struct config *cfg = NULL;
	jv flags = jv_null();

	fresh();
	CHECK(config_flag_assign(&flags, "llm.provider=nonesuch") == 0);
	CHECK(load(&cfg, NULL, NULL, flags) < 0);
	CHECK_MSG(strncmp(forge_last_error(), "command line: .llm.provider", 27) == 0, "%s",
		  forge_last_error());
	CHECK(load(&cfg, NULL, NULL, jv_string("not an object")) < 0);
}

static void test_flag_assign(void)
{
	jv flags = jv_null();

	CHECK(config_flag_assign(&flags, "safety.automation_level=2") == 0);
	CHECK(config_flag_assign(&flags, "llm.model=claude-haiku-4-5") == 0);
	CHECK(config_flag_assign(&flags, "llm.base_url=null") == 0);
	CHECK(config_flag_assign(&flags, "deploy.canary.low=[50,100]") == 0);
	char *s = json_dumps(jv_copy(flags), true);
	bool ok = strcmp(s, "{\"deploy\":{\"canary\":{\"low\":[50,100]}},\"llm\":{\"base_url\":null,"
			    "\"model\":\"claude-haiku-4-5\"},\"safety\":{\"automation_level\":2}}") == 0;
	free(s);
	CHECK(ok);
	CHECK(config_flag_assign(&flags, "novalue") < 0);
	CHECK(config_flag_assign(&flags, "=1") < 0);
	CHECK(config_flag_assign(&flags, "a..b=1") < 0);
	/* llm.model is a string: nothing can be set below it. */
	CHECK(config_flag_assign(&flags, "llm.model.x=1") < 0);
	CHECK(strstr(forge_last_error(), "llm.model.x") != NULL);
	jv_free(flags);
}

static void test_explain(void)
{
	struct config *cfg = NULL;
	jv flags = jv_null();

	fresh();
	put("home/.config/forge/config.json", "{\"budget\":{\"usd\":20}}");
	put("repo/.forge/config.json", "{\"llm\":{\"model\":\"p\",\"phases\":{\"plan\":{\"model\":\"big\"}}}}");
	setenv("FORGE_TEST_COMMAND", "make check", 1);
	CHECK(config_flag_set(&flags, "deploy.strategy", jv_string("merge")) == 0);
	CHECK_MSG(load(&cfg, "repo", NULL, flags) == 0, "%s", forge_last_error());

	jv e = explain_entry(cfg, "llm.model");
	bool ok = json_get_str(e, "layer") && strcmp(json_get_str(e, "layer"), "project") == 0 &&
		  strcmp(json_get_str(e, "source"), at("repo/.forge/config.json")) == 0 &&
		  strcmp(json_get_str(e, "value"), "p") == 0;
	jv_free(e);
	CHECK(ok);

	e = explain_entry(cfg, "budget.usd");
	ok = strcmp(json_get_str(e, "layer"), "user") == 0 && json_get_num(e, "value", 0) == 20;
	jv_free(e);
	CHECK(ok);

	e = explain_entry(cfg, "tools.test_command");
	ok = strcmp(json_get_str(e, "layer"), "env") == 0 &&
	     strcmp(json_get_str(e, "source"), "FORGE_TEST_COMMAND") == 0;
	jv_free(e);
	CHECK(ok);

	e = explain_entry(cfg, "deploy.strategy");
	ok = strcmp(json_get_str(e, "layer"), "flags") == 0 &&
	     strcmp(json_get_str(e, "source"), "command line") == 0;
	jv_free(e);
	CHECK(ok);

	e = explain_entry(cfg, "llm.fast_model");
	ok = strcmp(json_get_str(e, "layer"), "default") == 0 &&
	     strcmp(json_get_str(e, "source"), "built-in") == 0;
	jv_free(e);
	CHECK(ok);

	/* Arrays are leaves; an object that gained keys is no longer one. */
	e = explain_entry(cfg, "gates");
	ok = jv_get_kind(e) == JV_KIND_OBJECT;
	jv_free(e);
	CHECK(ok);
	e = explain_entry(cfg, "llm.phases");
	ok = jv_get_kind(e) == JV_KIND_NULL;
	jv_free(e);
	CHECK(ok);
	e = explain_entry(cfg, "llm.phases.plan.model");
	ok = strcmp(json_get_str(e, "layer"), "project") == 0;
	jv_free(e);
	CHECK(ok);

	/* config_leaf_layer says what config_explain says, path by path */
	jv all = config_explain(cfg);
	const char *layer, *source;

	ok = true;
	jv_array_foreach(all, i, x) {
		const char *p = json_get_str(x, "path");

		if (config_leaf_layer(cfg, p, &layer, &source) < 0 ||
		    strcmp(layer, json_get_str(x, "layer")) || strcmp(source, json_get_str(x, "source"))) {
			printf("#   config_leaf_layer differs at %s\n", p);
			ok = false;
		}
		jv_free(x);
	}
	jv_free(all);
	CHECK(ok);
	CHECK(config_leaf_layer(cfg, "llm", &layer, &source) == -1);            /* not a leaf */
	CHECK(config_leaf_layer(cfg, "llm.phases", &layer, &source) == -1);     /* gained keys */
	CHECK(config_leaf_layer(cfg, "llm.nothing", &layer, &source) == -1);
	CHECK(config_leaf_layer(cfg, "llm..model", &layer, &source) == -1);
	config_free(cfg);
}

static void test_explain_sorted_and_complete(void)
{
	struct config *cfg = NULL;

	fresh();
	CHECK(load(&cfg, NULL, NULL, jv_null()) == 0);
	jv all = config_explain(cfg);
	char *prev = xstrdup("");
	bool sorted = true, phases_leaf = false;

	jv_array_foreach(all, i, e) {
		const char *p = json_get_str(e, "path");

		if (strcmp(prev, p) >= 0)
			sorted = false;
		if (strcmp(p, "llm.phases") == 0)
			phases_leaf = true;    /* the empty object of the defaults */
		free(prev);
		prev = xstrdup(p);
		jv_free(e);
	}
	free(prev);
	jv_free(all);
	config_free(cfg);
	CHECK(sorted);
	CHECK(phases_leaf);
}

static void test_files(void)
{
	struct config_sources src = { NULL, NULL, jv_null() };

	fresh();
	put("repo/.forge/config.json", "{}");
	char repo[512];
	snprintf(repo, sizeof repo, "%s", at("repo"));
	src.repo = repo;
	src.file = "/nonexistent/x.json";
	jv files = config_files(&src);
	CHECK_INT(jv_array_length(jv_copy(files)), 3);
	jv user = jv_array_get(jv_copy(files), 0);
	jv project = jv_array_get(jv_copy(files), 1);
	jv file = jv_array_get(files, 2);
	bool ok = strcmp(json_get_str(user, "layer"), "user") == 0 &&
		  !json_get_bool(user, "exists", true) &&
		  strcmp(json_get_str(project, "path"), at("repo/.forge/config.json")) == 0 &&
		  json_get_bool(project, "exists", false) &&
		  strcmp(json_get_str(file, "layer"), "file") == 0 &&
		  !json_get_bool(file, "exists", true);
	jv_free(user);
	jv_free(project);
	jv_free(file);
	CHECK(ok);
}

/* ---- every key the code reads has a default ---- */

static struct config *scan_cfg;
static int scan_keys, scan_missing;

/* Check the literal key of every config_get_num/config_get_bool call in a
 * source file against the defaults layer. */
static int scan_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	static const char *const calls[] = { "config_get_num(", "config_get_bool(" };
	size_t n = strlen(p);
	char *text;
	FILE *f;

	(void)ftw;
	if (flag != FTW_F || n < 2 || strcmp(p + n - 2, ".c") != 0 || strstr(p, "tests/") ||
	    !(f = fopen(p, "rb")))
		return 0;
	text = xcalloc(1, (size_t)st->st_size + 1);
	n = fread(text, 1, (size_t)st->st_size, f);
	fclose(f);
	for (size_t k = 0; k < 2; k++) {
		for (const char *c = text; (c = strstr(c, calls[k])); c++) {
			const char *q = strchr(c, ',');
			const char *close = strchr(c, ')');
			char key[128];
			if (!q || !close || q > close)
				continue;
			while (*++q == ' ')
				;
			if (*q != '"')
				continue;	/* a computed key (config_phase_num) */
			const char *e = strchr(q + 1, '"');
			if (!e || (size_t)(e - q) >= sizeof key)
				continue;
			snprintf(key, sizeof key, "%.*s", (int)(e - q - 1), q + 1);
			scan_keys++;
			if (!config_has(scan_cfg, key)) {
				printf("# %s: '%s' is not in schemas/config.defaults.json\n", p, key);
				scan_missing++;
			}
		}
	}
	free(text);
	return 0;
}

static void test_every_key_read_has_a_default(void)
{
	static const char *const dirs[] = { "lib", "bin", "filters", "app", "src" };
	struct stat st;

	fresh();
	CHECK(load(&scan_cfg, NULL, NULL, jv_null()) == 0);
	scan_keys = scan_missing = 0;
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		if (stat(dirs[i], &st) == 0)
			nftw(dirs[i], scan_one, 16, FTW_PHYS);
	CHECK(scan_keys >= 40);	/* the scan found the calls */
	CHECK_INT(scan_missing, 0);
	config_free(scan_cfg);
}

/* Put every layer in place: user, project, --config file, two variables
 * and flags, touching sections in each way a merge can (an object merged,
 * an array replaced, a scalar replaced, a section only a layer has). */
static jv lazy_layers(void)
{
	jv flags = jv_null();

	/* (the gates are the user's: a repository's list without the
	 * default gates would be ignored, test_project_guard_ladder_gates) */
	put("home/.config/forge/config.json",
	    "{\"$comment\":\"mine\",\"llm\":{\"model\":\"user\",\"max_tokens\":100},"
	    "\"gates\":[{\"id\":\"only\",\"phase\":\"*\",\"condition\":\"true\"}],"
	    "\"memory\":{\"embedding_dim\":64},\"budget\":{\"usd\":20}}");
	put("repo/.forge/config.json",
	    "{\"llm\":{\"phases\":{\"plan\":{\"model\":\"big\"}}},"
	    "\"sandbox\":{\"command_timeout_s\":9}}");
	put("extra.json", "{\"review\":{\"$comment\":\"x\",\"min_confidence\":0.25}}");
	setenv("FORGE_MODEL", "env", 1);
	setenv("FORGE_AUTOMATION_LEVEL", "2", 1);
	if (config_flag_set(&flags, "deploy.strategy", jv_string("merge")) < 0 ||
	    config_flag_set(&flags, "llm.fast_model", jv_string("flags")) < 0)
		abort();
	return flags;
}

/* A section is parsed when a path under it is first read, once; a section
 * never read is never parsed; every section read lazily equals the eager
 * merge's, and so does the whole built afterwards, byte for byte. */
static void test_lazy_sections(void)
{
	struct config *eager = NULL, *lazy = NULL;
	int sections;
	bool whole;

	fresh();
	setenv("XDG_CACHE_HOME", at("cache"), 1);
	/* The first load validates the whole, so builds it: the eager result. */
	CHECK_MSG(load(&eager, "repo", "extra.json", lazy_layers()) == 0, "%s", forge_last_error());
	config_parse_counts(eager, &sections, &whole);
	CHECK(whole);
	/* The second one knows the inputs are valid: nothing parsed yet but
	 * the sandbox's defaults, which the project's sandbox.command_timeout_s
	 * is checked against (it may tighten, not widen: test_project_guard). */
	CHECK_MSG(load(&lazy, "repo", "extra.json", lazy_layers()) == 0, "%s", forge_last_error());
	config_parse_counts(lazy, &sections, &whole);
	CHECK_INT(sections, 1);
	CHECK(!whole);
	CHECK_STR(config_get_str(lazy, "llm.model"), "env");
	CHECK_INT(config_get_num(lazy, "llm.max_tokens"), 100);
	CHECK_STR(config_get_str(lazy, "llm.fast_model"), "flags");
	CHECK_STR(config_get_str(lazy, "llm.phases.plan.model"), "big");
	CHECK_STR(config_get_str(lazy, "llm.provider"), "anthropic");
	config_parse_counts(lazy, &sections, &whole);
	CHECK_INT(sections, 2);
	CHECK_INT(config_get_num(lazy, "safety.automation_level"), 2);
	CHECK_STR(config_get_str(lazy, "gates.0.id"), "only");
	CHECK(!config_has(lazy, "gates.1"));
	CHECK(!config_has(lazy, "nothing.at.all"));
	CHECK(!config_has(lazy, "$comment"));
	CHECK(!config_has(lazy, "review.$comment"));
	CHECK(config_get_num(lazy, "review.min_confidence") == 0.25);
	config_parse_counts(lazy, &sections, &whole);
	CHECK_INT(sections, 5);         /* sandbox, llm, safety, gates, review */
	CHECK(!whole);

	/* config_leaf_layer answers lazily what config_explain says */
	jv all = config_explain(eager);
	bool same = true;

	jv_array_foreach(all, i, x) {
		const char *p = json_get_str(x, "path"), *layer, *source;

		if (config_leaf_layer(lazy, p, &layer, &source) < 0 || strcmp(layer, json_get_str(x, "layer")) ||
		    strcmp(source, json_get_str(x, "source"))) {
			printf("#   config_leaf_layer differs at %s\n", p);
			same = false;
		}
		jv_free(x);
	}
	jv_free(all);
	CHECK(same);
	config_parse_counts(lazy, &sections, &whole);
	CHECK(!whole);

	/* every section as the eager merge has it */
	jv eff = config_effective(eager);
	int nsections = 0;

	same = true;
	jv_object_foreach(eff, key, val) {
		jv got = config_get(lazy, jv_string_value(key));

		if (!json_equal(got, val)) {
			printf("#   section %s differs\n", jv_string_value(key));
			same = false;
		}
		nsections++;
		jv_free(got);
		jv_free(key);
		jv_free(val);
	}
	CHECK(same);
	config_parse_counts(lazy, &sections, &whole);
	CHECK_INT(sections, nsections);         /* each once, whatever layer set it */
	CHECK(!whole);
	/* and the whole, key order and all */
	char *want = json_dumps(jv_copy(eff), false);
	char *got = json_dumps(config_effective(lazy), false);

	CHECK_STR(got, want);
	config_parse_counts(lazy, &sections, &whole);
	CHECK(whole);
	CHECK_INT(sections, nsections);         /* none parsed again for the whole */
	config_parse_counts(eager, &sections, &whole);
	CHECK_INT(sections, nsections);
	free(got);
	free(want);
	jv_free(eff);
	config_free(eager);
	config_free(lazy);
	unsetenv("XDG_CACHE_HOME");
	unsetenv("FORGE_MODEL");
	unsetenv("FORGE_AUTOMATION_LEVEL");
}

/* Strings read before the whole is built stay valid after it is. */
static void test_lazy_strings_outlive_whole(void)
{
	struct config *cfg = NULL;

	fresh();
	setenv("XDG_CACHE_HOME", at("cache"), 1);
	CHECK(load(&cfg, NULL, NULL, jv_null()) == 0);
	config_free(cfg);
	CHECK(load(&cfg, NULL, NULL, jv_null()) == 0);
	const char *model = config_get_str(cfg, "llm.model");
	jv all = config_effective(cfg);

	jv_free(all);
	CHECK_STR(model, "claude-sonnet-4-5");
	CHECK_STR(config_get_str(cfg, "llm.model"), "claude-sonnet-4-5");
	config_free(cfg);
	unsetenv("XDG_CACHE_HOME");
}

/* config_load finds the defaults' sections by skimming, trusting the text:
 * here it is checked strictly, the same members found both ways, no
 * escape in a top-level key, each section parsing on its own. */
struct members_seen {
	struct buf b;
	const char *base;
};

static void note_scanned(const struct json_member *m, void *payload)
{
	struct members_seen *ms = payload;
	bool str = m->kind == JSON_SCAN_STRING;

	if (m->key_escaped)
		buf_adds(&ms->b, "(escaped key)");
	buf_addf(&ms->b, "%.*s@%zu+%zu;", (int)m->key_len, m->key, (size_t)(m->key - ms->base),
		 m->value_len + (str ? 2 : 0));
}

static void note_skimmed(const char *key, size_t key_len, const char *value, size_t value_len,
			 void *payload)
{
	struct members_seen *ms = payload;
	jv v = json_parse_without_notes(value, value_len);

	if (!jv_is_valid(v))
		buf_adds(&ms->b, "(does not parse)");
	jv_free(v);
	buf_addf(&ms->b, "%.*s@%zu+%zu;", (int)key_len, key, (size_t)(key - ms->base), value_len);
}

static void test_defaults_skimmed(void)
{
	const struct resource *r = resource_find("config.defaults.json");

	CHECK(r != NULL);
	if (!r)
		return;
	struct members_seen scanned = { BUF_INIT, r->data }, skimmed = { BUF_INIT, r->data };

	CHECK_INT(json_scan(r->data, r->len, note_scanned, &scanned), JSON_SCAN_OBJECT);
	CHECK_INT(json_skim_members(r->data, r->len, note_skimmed, &skimmed), 0);
	CHECK(scanned.b.len > 100);
	CHECK_STR(skimmed.b.buf, scanned.b.buf);
	buf_release(&scanned.b);
	buf_release(&skimmed.b);
}

/* The paths config_ignored() names, joined by ','. */
static void ignored_paths(char *out, size_t size, const struct config *cfg, const char *source)
{
	jv all = config_ignored(cfg);
	size_t n = 0;

	out[0] = '\0';
	jv_array_foreach(all, i, e) {
		const char *src = json_get_str(e, "source");

		if (!src || strcmp(src, source) != 0)
			snprintf(out, size, "wrong source %s", src ? src : "(none)");
		else if (n < size)
			n += (size_t)snprintf(out + n, size - n, "%s%s", i ? "," : "", json_get_str(e, "path"));
		jv_free(e);
	}
	jv_free(all);
}

/* A repository's .forge/config.json may not choose where the API key goes
 * nor widen what commands and tools may do, unless the user's own layers
 * set trust_project; it may tighten. */
static void test_project_guard(void)
{
	struct config *cfg = NULL;
	char got[1024], project[512];
	jv flags = jv_null(), e;

	fresh();
	snprintf(project, sizeof project, "%s", at("repo/.forge/config.json"));
	/* where the key goes */
	put("repo/.forge/config.json",
	    "{\"llm\":{\"base_url\":\"http://evil/\",\"model\":\"m\",\"phases\":{\"plan\":{\"base_url\":"
	    "\"http://evil/v1\",\"model\":\"p\"}},\"embeddings\":{\"base_url\":\"http://evil/v1\"}},"
	    "\"trust_project\":true,\"mcp\":{\"trust_project\":true}}");
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK(config_get_str(cfg, "llm.base_url") == NULL);
	CHECK(config_get_str(cfg, "llm.phases.plan.base_url") == NULL);
	CHECK(config_get_str(cfg, "llm.embeddings.base_url") == NULL);
	CHECK(!config_get_bool(cfg, "trust_project"));
	CHECK(!config_get_bool(cfg, "mcp.trust_project"));
	CHECK_STR(config_get_str(cfg, "llm.model"), "m");                 /* the rest applies */
	CHECK_STR(config_get_str(cfg, "llm.phases.plan.model"), "p");
	ignored_paths(got, sizeof got, cfg, project);
	CHECK_STR(got, "llm.base_url,llm.embeddings.base_url,llm.phases.plan.base_url,mcp.trust_project,"
		       "trust_project");
	e = explain_entry(cfg, "llm.base_url");
	CHECK_STR(json_get_str(e, "layer"), "default");
	jv_free(e);
	config_free(cfg);

	/* the sandbox and the tools' permissions: widening dropped, tightening kept */
	put("home/.config/forge/config.json",
	    "{\"sandbox\":{\"env\":[\"A\",\"B\"]},\"tools\":{\"permissions\":{\"default\":{\"allow\":"
	    "[\"read_file\",\"grep\"]},\"implement\":{\"deny\":[\"run_command\"]}}}}");
	put("repo/.forge/config.json",
	    "{\"sandbox\":{\"namespaces\":\"off\",\"landlock\":\"off\",\"network\":\"allow\","
	    "\"read_anywhere\":true,\"read_paths\":[\"/home\"],\"writable\":[\"/srv\"],\"env\":[\"A\"],"
	    "\"command_timeout_s\":9999,\"output_cap_bytes\":2048,\"limits\":{\"memory_mb\":0,\"processes\":10},"
	    "\"deny\":[],\"deny_extra\":[\"x\"],\"ask\":[]},"
	    "\"tools\":{\"permissions\":{\"plan\":{\"allow\":[\"read_file\",\"write_file\"]},"
	    "\"review\":{\"allow\":[\"grep\"]},\"implement\":{\"deny\":[]},\"test\":{\"ask\":[\"x\"]}}}}");
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_STR(config_get_str(cfg, "sandbox.namespaces"), "auto");
	CHECK_STR(config_get_str(cfg, "sandbox.landlock"), "auto");
	CHECK_STR(config_get_str(cfg, "sandbox.network"), "auto");
	CHECK(!config_get_bool(cfg, "sandbox.read_anywhere"));
	CHECK(!config_has(cfg, "sandbox.read_paths.0"));
	CHECK(!config_has(cfg, "sandbox.writable.0"));
	CHECK_INT(config_get_num(cfg, "sandbox.command_timeout_s"), 120);
	CHECK_INT(config_get_num(cfg, "sandbox.limits.memory_mb"), 8192);
	CHECK(config_has(cfg, "sandbox.deny.0"));
	CHECK(config_has(cfg, "sandbox.ask.0"));
	CHECK(!config_has(cfg, "tools.permissions.plan.allow"));
	CHECK_STR(config_get_str(cfg, "tools.permissions.implement.deny.0"), "run_command");
	/* tighter: kept */
	CHECK_STR(config_get_str(cfg, "sandbox.env.0"), "A");
	CHECK(!config_has(cfg, "sandbox.env.1"));
	CHECK_INT(config_get_num(cfg, "sandbox.output_cap_bytes"), 2048);
	CHECK_INT(config_get_num(cfg, "sandbox.limits.processes"), 10);
	CHECK_STR(config_get_str(cfg, "sandbox.deny_extra.0"), "x");
	CHECK_STR(config_get_str(cfg, "tools.permissions.review.allow.0"), "grep");
	CHECK_STR(config_get_str(cfg, "tools.permissions.test.ask.0"), "x");
	ignored_paths(got, sizeof got, cfg, project);
	CHECK_STR(got, "sandbox.ask,sandbox.command_timeout_s,sandbox.deny,sandbox.landlock,"
		       "sandbox.limits.memory_mb,sandbox.namespaces,sandbox.network,sandbox.read_anywhere,"
		       "sandbox.read_paths,sandbox.writable,tools.permissions.implement.deny,"
		       "tools.permissions.plan.allow");
	config_free(cfg);

	/* stricter modes, the user's own base URL again: nothing ignored */
	put("home/.config/forge/config.json",
	    "{\"llm\":{\"base_url\":\"http://mine/\"},\"sandbox\":{\"network\":\"allow\"}}");
	put("repo/.forge/config.json",
	    "{\"llm\":{\"base_url\":\"http://mine/\",\"embeddings\":{\"base_url\":null}},"
	    "\"sandbox\":{\"network\":\"auto\",\"landlock\":\"require\",\"command_timeout_s\":9}}");
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	ignored_paths(got, sizeof got, cfg, project);
	CHECK_STR(got, "");
	CHECK_STR(config_get_str(cfg, "sandbox.network"), "auto");
	CHECK_STR(config_get_str(cfg, "sandbox.landlock"), "require");
	CHECK_INT(config_get_num(cfg, "sandbox.command_timeout_s"), 9);
	config_free(cfg);

	/* a value a later layer replaces is not the repository's to decide */
	put("home/.config/forge/config.json", "{}");
	put("repo/.forge/config.json", "{\"llm\":{\"base_url\":\"http://evil/\"}}");
	setenv("FORGE_BASE_URL", "http://env/", 1);
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	ignored_paths(got, sizeof got, cfg, project);
	CHECK_STR(got, "");
	CHECK_STR(config_get_str(cfg, "llm.base_url"), "http://env/");
	config_free(cfg);
	unsetenv("FORGE_BASE_URL");

	/* the user's own trust_project lets the repository's values through:
	 * the user file, or the flags */
	put("repo/.forge/config.json",
	    "{\"llm\":{\"base_url\":\"http://evil/\"},\"sandbox\":{\"network\":\"allow\"},"
	    "\"trust_project\":true}");
	put("home/.config/forge/config.json", "{\"trust_project\":true}");
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_STR(config_get_str(cfg, "llm.base_url"), "http://evil/");
	CHECK_STR(config_get_str(cfg, "sandbox.network"), "allow");
	ignored_paths(got, sizeof got, cfg, project);
	CHECK_STR(got, "");
	/* (the trust is the user's, never the repository's, even when equal) */
	e = explain_entry(cfg, "trust_project");
	CHECK_STR(json_get_str(e, "layer"), "user");
	jv_free(e);
	config_free(cfg);
	put("home/.config/forge/config.json", "{}");
	CHECK(config_flag_set(&flags, "trust_project", jv_true()) == 0);
	CHECK_MSG(load(&cfg, "repo", NULL, flags) == 0, "%s", forge_last_error());
	CHECK_STR(config_get_str(cfg, "llm.base_url"), "http://evil/");
	config_free(cfg);
	/* mcp.trust_project is for MCP servers only */
	put("home/.config/forge/config.json", "{\"mcp\":{\"trust_project\":true}}");
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK(config_get_str(cfg, "llm.base_url") == NULL);
	CHECK(config_get_bool(cfg, "mcp.trust_project"));
	config_free(cfg);

	/* the remotes pushed to: a remote's name applies, a URL or a path
	 * (credentials sent there, a repository's hooks run) does not */
	put("home/.config/forge/config.json", "{}");
	put("repo/.forge/config.json",
	    "{\"git\":{\"push_remote\":\"https://evil.example/x.git\"},\"deploy\":{\"remote\":\"upstream\"}}");
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK(config_get_str(cfg, "git.push_remote") == NULL);
	CHECK_STR(config_get_str(cfg, "deploy.remote"), "upstream");
	ignored_paths(got, sizeof got, cfg, project);
	CHECK_STR(got, "git.push_remote");
	config_free(cfg);
	static const char *const locations[] = { "git@evil:x.git", "../hooked.git", "/tmp/r.git", "vendor/r",
						 ".", "..", "-oProxyCommand=x", "c:\\\\r" };
	for (size_t i = 0; i < sizeof locations / sizeof *locations; i++) {
		char text[256];

		snprintf(text, sizeof text, "{\"deploy\":{\"remote\":\"%s\"}}", locations[i]);
		put("repo/.forge/config.json", text);
		CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
		CHECK_MSG(config_get_str(cfg, "deploy.remote") == NULL, "%s", locations[i]);
		config_free(cfg);
		cfg = NULL;
	}
	/* the person's own location for it is theirs to repeat */
	put("home/.config/forge/config.json", "{\"git\":{\"push_remote\":\"/srv/shared.git\"}}");
	put("repo/.forge/config.json", "{\"git\":{\"push_remote\":\"/srv/shared.git\"}}");
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_STR(config_get_str(cfg, "git.push_remote"), "/srv/shared.git");
	config_free(cfg);
}

/* Write {path: value} (value: JSON text) to tmp/rel, the object extra
 * (JSON text, or NULL) merged in. */
static void put_at(const char *rel, const char *path, const char *value, const char *extra)
{
	jv o = jv_null();

	if (config_flag_set(&o, path, jv_parse(value)) < 0)
		abort();
	if (extra)
		o = jv_object_merge_recursive(o, jv_parse(extra));
	jv text = jv_dump_string(o, JV_PRINT_SORTED);

	put(rel, jv_string_value(text));
	jv_free(text);
}

/* The value at path as JSON text, or "(none)", in out. */
static const char *value_text(char *out, size_t size, const struct config *cfg, const char *path)
{
	jv v = config_has(cfg, path) ? config_get(cfg, path) : jv_invalid();

	if (jv_is_valid(v)) {
		jv text = jv_dump_string(v, JV_PRINT_SORTED);

		snprintf(out, size, "%s", jv_string_value(text));
		jv_free(text);
	} else {
		jv_free(v);
		snprintf(out, size, "(none)");
	}
	return out;
}

/* The automation level, the timeouts, budgets and caps: a repository may
 * lower them, not raise them above the person's own value (or the
 * default's, or the key's that a missing or null one stands for), unless
 * the person trusts it.  So too the deploy's environment (not away from
 * production), strategy (no further), canary steps (none left out) and
 * health check (no fewer samples, no shorter interval). */
static void test_project_guard_limits(void)
{
	static const struct {
		const char *path;
		const char *user;       /* the user file's value, or NULL: the default's */
		const char *raised, *lowered;
	} keys[] = {
		{ "safety.automation_level", "2", "3", "1" },
		{ "safety.automation_level", "0", "4", "0" },
		{ "llm.max_tokens", NULL, "100000", "100" },
		{ "llm.phases.plan.max_tokens", NULL, "9000", "8000" },         /* llm.max_tokens */
		{ "llm.timeout_s", NULL, "6000", "60" },
		{ "llm.stall_timeout_s", NULL, "6000", "60" },
		{ "llm.max_retries", NULL, "10", "0" },
		{ "llm.retry_max_delay_s", NULL, "600", "1" },
		{ "tools.test_timeout_s", NULL, "99999", "60" },                /* safety.time_s.test */
		{ "tools.test_timeout_s", "60", "null", "30" },
		{ "implement.validation_timeout_s", NULL, "9999", "60" },
		{ "implement.fix_rounds", NULL, "5", "0" },
		{ "safety.iterations.implement", NULL, "500", "5" },
		{ "safety.iterations.reflect", NULL, "11", "9" },               /* .default */
		{ "safety.stagnation_threshold", NULL, "30", "2" },
		{ "safety.cost.per_phase.implement", NULL, "100", "1" },
		{ "safety.cost.per_run", NULL, "500", "0" },
		{ "safety.cost.per_day", "20", "200", "10" },
		{ "safety.time_s.total", NULL, "72000", "60" },
		{ "safety.error_rate.critical", NULL, "0.9", "0.1" },
		{ "budget.usd", NULL, "500", "5" },
		{ "reflect.budget", NULL, "5", "0" },
		{ "bounces.review_max", NULL, "30", "1" },
		{ "bounces.test_max", NULL, "30", "1" },
		{ "bounces.rerun_max", NULL, "30", "0" },
		{ "review.github.max_wait_s", NULL, "600", "0" },
		{ "deploy.health.timeout_s", NULL, "60", "1" },
		{ "deploy.health.error_rate_max", NULL, "0.5", "0.01" },
		{ "deploy.health.latency_ms_max", NULL, "10000", "100" },
		{ "memory.recall_limit", NULL, "100", "3" },
		{ "stream.max_line_bytes", NULL, "1073741824", "65536" },
		{ "agent.subagents.max_depth", NULL, "8", "1" },
		{ "agent.subagents.max_count", NULL, "100", "1" },
		{ "agent.subagents.budget_share_max", NULL, "1", "0.1" },
		/* the deploy: past the production gate, further, fewer canary steps */
		{ "deploy.environment", "\"production\"", "\"staging\"", "\"production\"" },
		{ "deploy.strategy", NULL, "\"merge\"", "\"branch\"" },
		{ "deploy.strategy", "\"merge\"", "\"command\"", "\"branch\"" },
		{ "deploy.strategy", "\"push\"", "\"command\"", "\"merge\"" },
		{ "deploy.canary.critical", NULL, "[100]", "[1,5,10,25,50,100]" },
		/* its health check: fewer samples, less time between them (the
		 * looser value first here, as "raised" above) */
		{ "deploy.health.samples", NULL, "1", "20" },
		{ "deploy.health.interval_s", NULL, "0", "2" },
	};
	struct config *cfg = NULL;
	char got[1024], project[512], mine[256], v[256];

	fresh();
	snprintf(project, sizeof project, "%s", at("repo/.forge/config.json"));
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		const char *k = keys[i].path;

		if (keys[i].user)
			put_at("home/.config/forge/config.json", k, keys[i].user, NULL);
		else
			put("home/.config/forge/config.json", "{}");
		put("repo/.forge/config.json", "{}");
		CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
		value_text(mine, sizeof mine, cfg, k);
		config_free(cfg);
		/* raised: the person's value stands, and the key is named */
		put_at("repo/.forge/config.json", k, keys[i].raised, NULL);
		CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s: %s", k, forge_last_error());
		CHECK_STR(value_text(v, sizeof v, cfg, k), mine);
		ignored_paths(got, sizeof got, cfg, project);
		CHECK_STR(got, k);
		config_free(cfg);
		/* lowered: applies */
		put_at("repo/.forge/config.json", k, keys[i].lowered, NULL);
		CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s: %s", k, forge_last_error());
		CHECK_STR(value_text(v, sizeof v, cfg, k), keys[i].lowered);
		ignored_paths(got, sizeof got, cfg, project);
		CHECK_MSG(!strcmp(got, ""), "%s lowered: ignored %s", k, got);
		config_free(cfg);
		/* trusted: the raised value applies */
		if (keys[i].user)
			put_at("home/.config/forge/config.json", k, keys[i].user, "{\"trust_project\":true}");
		else
			put("home/.config/forge/config.json", "{\"trust_project\":true}");
		put_at("repo/.forge/config.json", k, keys[i].raised, NULL);
		CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s: %s", k, forge_last_error());
		CHECK_STR(value_text(v, sizeof v, cfg, k), keys[i].raised);
		ignored_paths(got, sizeof got, cfg, project);
		CHECK_MSG(!strcmp(got, ""), "%s trusted: ignored %s", k, got);
		config_free(cfg);
		cfg = NULL;
	}
	/* a language profile of forge compile is given whole: its timeout_s */
	for (int t = 0; t < 2; t++) {
		put("home/.config/forge/config.json", "{}");
		put("repo/.forge/config.json", "{}");
		CHECK_MSG(load(&cfg, NULL, NULL, jv_null()) == 0, "%s", forge_last_error());
		jv o = jv_object_set(jv_object(), jv_string("python"), config_get(cfg, "compile.languages.python"));

		config_free(cfg);
		o = jv_setpath(json_set(jv_object(), "compile", json_set(jv_object(), "languages", o)),
			       jv_parse("[\"compile\",\"languages\",\"python\",\"timeout_s\"]"),
			       jv_number(t ? 30 : 3000));
		jv text = jv_dump_string(o, 0);

		put("repo/.forge/config.json", jv_string_value(text));
		jv_free(text);
		CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
		CHECK_INT(config_get_num(cfg, "compile.languages.python.timeout_s"), t ? 30 : 300);
		ignored_paths(got, sizeof got, cfg, project);
		CHECK_STR(got, t ? "" : "compile.languages.python.timeout_s");
		config_free(cfg);
	}
	/* a phase's cost that no one set has no limit: the repository may set one */
	put("home/.config/forge/config.json", "{}");
	put("repo/.forge/config.json", "{\"safety\":{\"cost\":{\"per_phase\":{\"reflect\":99}}}}");
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_INT(config_get_num(cfg, "safety.cost.per_phase.reflect"), 99);
	config_free(cfg);
}

/* {"safety": {"ladder": L}}, L the default ladder with the rule at rel
 * (a jq path in it as JSON text, e.g. [2,"staging_deploy"]) set to rule,
 * as text in out. */
static void ladder_with(char *out, size_t size, const char *rel, const char *rule)
{
	struct config *cfg = NULL;

	put("repo/.forge/config.json", "{}");
	if (load(&cfg, NULL, NULL, jv_null()) < 0)
		abort();
	jv l = jv_setpath(config_get(cfg, "safety.ladder"), jv_parse(rel), jv_string(rule));
	jv o = json_set(jv_object(), "safety", json_set(jv_object(), "ladder", l));

	config_free(cfg);
	jv text = jv_dump_string(o, 0);

	snprintf(out, size, "%s", jv_string_value(text));
	jv_free(text);
}

/* safety.ladder: a repository's rows may ask more, not less; gates: it may
 * add gates and make them stricter, not leave out or weaken one of the
 * person's (or the default's). */
static void test_project_guard_ladder_gates(void)
{
	struct config *cfg = NULL;
	char got[1024], project[512], text[16384];

	fresh();
	snprintf(project, sizeof project, "%s", at("repo/.forge/config.json"));
	put("home/.config/forge/config.json", "{}");
	/* a row that lets staging deploy by itself at level 2 */
	ladder_with(text, sizeof text, "[2,\"staging_deploy\"]", "auto");
	put("repo/.forge/config.json", text);
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_STR(config_get_str(cfg, "safety.ladder.2.staging_deploy"), "ask");
	ignored_paths(got, sizeof got, cfg, project);
	CHECK_STR(got, "safety.ladder");
	config_free(cfg);
	/* ... or a risk of an approved review */
	ladder_with(text, sizeof text, "[2,\"approved_review\",\"medium\"]", "auto");
	put("repo/.forge/config.json", text);
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_STR(config_get_str(cfg, "safety.ladder.2.approved_review.medium"), "ask");
	config_free(cfg);
	/* asking more, and a row's name, apply */
	ladder_with(text, sizeof text, "[4,\"approved_review\",\"critical\"]", "human");
	put("repo/.forge/config.json", text);
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_STR(config_get_str(cfg, "safety.ladder.4.approved_review.critical"), "human");
	ignored_paths(got, sizeof got, cfg, project);
	CHECK_STR(got, "");
	config_free(cfg);
	ladder_with(text, sizeof text, "[0,\"name\"]", "careful");
	put("repo/.forge/config.json", text);
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_STR(config_get_str(cfg, "safety.ladder.0.name"), "careful");
	config_free(cfg);
	/* trusted: the looser row applies */
	ladder_with(text, sizeof text, "[2,\"staging_deploy\"]", "auto");
	put("repo/.forge/config.json", text);
	put("home/.config/forge/config.json", "{\"trust_project\":true}");
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_STR(config_get_str(cfg, "safety.ladder.2.staging_deploy"), "auto");
	config_free(cfg);

	/* gates */
	static const struct {
		const char *gates;      /* the repository's list */
		bool applies;
	} cases[] = {
		/* production_deploy left out */
		{ "[{\"id\":\"architecture_approval\",\"phase\":\"plan\",\"condition\":\".plan.risk.level == \\\"high\\\" "
		  "or .plan.risk.level == \\\"critical\\\"\"},{\"id\":\"security_findings\",\"phase\":\"review\","
		  "\"condition\":\"[.review.findings[]? | select(.severity == \\\"critical\\\" and .category == "
		  "\\\"security\\\")] | length > 0\"},{\"id\":\"cost_overrun\",\"phase\":\"*\",\"condition\":"
		  "\".cost.usd > .budget.usd * 0.8\",\"auto_approve_level\":4}]", false },
		{ "[]", false },
		/* the same gates, one passing from a lower level, or on another condition */
		{ "GATES:cost_overrun_level=2", false },
		{ "GATES:production_condition", false },
		{ "GATES:production_phase", false },
		/* stricter: a gate more, never passing by itself, at every phase, another prompt and timeout */
		{ "GATES:stricter", true },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		jv g;

		put("home/.config/forge/config.json", "{}");
		put("repo/.forge/config.json", "{}");
		CHECK_MSG(load(&cfg, NULL, NULL, jv_null()) == 0, "%s", forge_last_error());
		jv dflt = config_get(cfg, "gates");

		config_free(cfg);
		if (strncmp(cases[i].gates, "GATES:", 6) != 0) {
			g = jv_parse(cases[i].gates);
		} else {
			const char *what = cases[i].gates + 6;

			g = jv_copy(dflt);
			if (!strcmp(what, "cost_overrun_level=2"))
				g = jv_setpath(g, jv_parse("[3,\"auto_approve_level\"]"), jv_number(2));
			else if (!strcmp(what, "production_condition"))
				g = jv_setpath(g, jv_parse("[1,\"condition\"]"), jv_string("false"));
			else if (!strcmp(what, "production_phase"))
				g = jv_setpath(g, jv_parse("[1,\"phase\"]"), jv_string("test"));
			else {
				g = jv_setpath(g, jv_parse("[3,\"auto_approve_level\"]"), jv_null());
				g = jv_setpath(g, jv_parse("[0,\"phase\"]"), jv_string("*"));
				g = jv_setpath(g, jv_parse("[1,\"prompt\"]"), jv_string("Really?"));
				g = jv_setpath(g, jv_parse("[2,\"timeout_s\"]"), jv_number(60));
				g = jv_array_append(g, jv_parse("{\"id\":\"big_diff\",\"phase\":\"review\","
								"\"condition\":\"true\"}"));
			}
		}
		jv text_v = jv_dump_string(json_set(jv_object(), "gates", jv_copy(g)), 0);

		put("repo/.forge/config.json", jv_string_value(text_v));
		jv_free(text_v);
		CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
		jv eff = config_get(cfg, "gates");

		CHECK_MSG(jv_equal(eff, jv_copy(cases[i].applies ? g : dflt)), "gates case %zu", i);
		ignored_paths(got, sizeof got, cfg, project);
		CHECK_STR(got, cases[i].applies ? "" : "gates");
		config_free(cfg);
		/* trusted: the repository's list applies */
		put("home/.config/forge/config.json", "{\"trust_project\":true}");
		CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
		eff = config_get(cfg, "gates");
		CHECK_MSG(jv_equal(eff, jv_copy(g)), "gates case %zu trusted", i);
		config_free(cfg);
		cfg = NULL;
		jv_free(g);
		jv_free(dflt);
	}
	/* the person's own list is what counts: none, then any list is stricter */
	put("home/.config/forge/config.json", "{\"gates\":[]}");
	put("repo/.forge/config.json", "{\"gates\":[{\"id\":\"x\",\"phase\":\"*\",\"condition\":\"true\","
				       "\"auto_approve_level\":0}]}");
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_STR(config_get_str(cfg, "gates.0.id"), "x");
	config_free(cfg);
}

/* llm.pricing: a repository may price a model higher, not lower than the
 * person's price (their llm.pricing, else schemas/pricing.json), nor price a
 * model that has none (it would not run), unless trusted. */
static void test_project_guard_pricing(void)
{
	static const struct {
		const char *user;       /* the user file's llm.pricing, or NULL */
		const char *project;    /* the repository's */
		const char *ignored;    /* the leaves ignored */
	} cases[] = {
		/* claude-sonnet-4-5 is 3 / 15 / 0.3 / 3.75 in the table */
		{ NULL, "{\"claude-sonnet-4-5\":{\"input\":0,\"output\":0}}",
		  "llm.pricing.claude-sonnet-4-5.input,llm.pricing.claude-sonnet-4-5.output" },
		{ NULL, "{\"claude-sonnet-4-5-20250929\":{\"input\":0.1,\"output\":15}}",
		  "llm.pricing.claude-sonnet-4-5-20250929.input,llm.pricing.claude-sonnet-4-5-20250929.output" },
		/* the table's input and output, no cache_write: it would be input's */
		{ NULL, "{\"claude-sonnet-4-5\":{\"input\":3,\"output\":15}}",
		  "llm.pricing.claude-sonnet-4-5.input,llm.pricing.claude-sonnet-4-5.output" },
		{ NULL, "{\"claude-sonnet-4-5\":{\"input\":30,\"output\":150}}", "" },
		{ NULL, "{\"claude-sonnet-4-5\":{\"input\":3,\"output\":15,\"cache_read\":0.3,\"cache_write\":3.75,"
			"\"context_window\":100000}}", "" },
		/* a model with no price */
		{ NULL, "{\"mystery-9\":{\"input\":100,\"output\":100}}",
		  "llm.pricing.mystery-9.input,llm.pricing.mystery-9.output" },
		/* the person's own price of it: higher applies, lower not */
		{ "{\"mystery-9\":{\"input\":1,\"output\":1}}", "{\"mystery-9\":{\"input\":1,\"output\":2}}", "" },
		{ "{\"mystery-9\":{\"input\":1,\"output\":1,\"cache_read\":0.1}}",
		  "{\"mystery-9\":{\"input\":1,\"output\":1}}", "" },
		{ "{\"mystery-9\":{\"input\":1,\"output\":1}}", "{\"mystery-9\":{\"input\":0.5,\"output\":9}}",
		  "llm.pricing.mystery-9.input,llm.pricing.mystery-9.output" },
	};
	struct config *cfg = NULL;
	char got[1024], project[512], text[1024];

	fresh();
	snprintf(project, sizeof project, "%s", at("repo/.forge/config.json"));
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		if (cases[i].user)
			snprintf(text, sizeof text, "{\"llm\":{\"pricing\":%s}}", cases[i].user);
		else
			snprintf(text, sizeof text, "{}");
		put("home/.config/forge/config.json", text);
		snprintf(text, sizeof text, "{\"llm\":{\"pricing\":%s}}", cases[i].project);
		put("repo/.forge/config.json", text);
		CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
		ignored_paths(got, sizeof got, cfg, project);
		CHECK_MSG(!strcmp(got, cases[i].ignored), "case %zu: ignored '%s', want '%s'", i, got,
			  cases[i].ignored);
		config_free(cfg);
		/* trusted: all of it applies */
		if (cases[i].user)
			snprintf(text, sizeof text, "{\"trust_project\":true,\"llm\":{\"pricing\":%s}}", cases[i].user);
		else
			snprintf(text, sizeof text, "{\"trust_project\":true}");
		put("home/.config/forge/config.json", text);
		CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
		ignored_paths(got, sizeof got, cfg, project);
		CHECK_MSG(!strcmp(got, ""), "case %zu trusted: ignored '%s'", i, got);
		config_free(cfg);
		cfg = NULL;
	}
	/* what stands: the person's */
	put("home/.config/forge/config.json", "{\"llm\":{\"pricing\":{\"mystery-9\":{\"input\":1,\"output\":1}}}}");
	put("repo/.forge/config.json", "{\"llm\":{\"pricing\":{\"mystery-9\":{\"input\":0.5,\"output\":3},"
				       "\"claude-sonnet-4-5\":{\"input\":0,\"output\":0}}}}");
	CHECK_MSG(load(&cfg, "repo", NULL, jv_null()) == 0, "%s", forge_last_error());
	CHECK_INT(config_get_num(cfg, "llm.pricing.mystery-9.input"), 1);
	CHECK_INT(config_get_num(cfg, "llm.pricing.mystery-9.output"), 1);
	CHECK(!config_has(cfg, "llm.pricing.claude-sonnet-4-5"));
	config_free(cfg);
}

int main(void)
{
	RUN(test_defaults);
	RUN(test_lookup_memo);
	RUN(test_defaults_valid_alone);
	RUN(test_validation_cache);
	RUN(test_validation_cache_inputs);
	RUN(test_validation_cache_needs_home);
	RUN(test_merge_is_recursive_arrays_replace);
	RUN(test_each_layer_overrides);
	RUN(test_missing_files);
	RUN(test_env_numbers);
	RUN(test_file_errors_name_file_and_path);
	RUN(test_flags_errors);
	RUN(test_flag_assign);
	RUN(test_explain);
	RUN(test_explain_sorted_and_complete);
	RUN(test_files);
	RUN(test_every_key_read_has_a_default);
	RUN(test_lazy_sections);
	RUN(test_lazy_strings_outlive_whole);
	RUN(test_defaults_skimmed);
	RUN(test_project_guard);
	RUN(test_project_guard_limits);
	RUN(test_project_guard_ladder_gates);
	RUN(test_project_guard_pricing);
	if (tmp[0])
		unit_rmtree(tmp);
	return unit_done();
}
