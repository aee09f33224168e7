/*
 * test_llm_choose.c - llm_choose(): which provider, model and fast model a
 * program or phase uses, from the configuration layers and the keys in the
 * environment (lib/llm/llm.h).
 */
#include "data/config.h"
#include "core/forge.h"
#include "core/json.h"
#include "llm/llm.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const env_names[] = {
	"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "FORGE_ANTHROPIC_KEY_FILE",
	"FORGE_OPENAI_KEY_FILE", "FORGE_PROVIDER", "FORGE_MODEL", "FORGE_FAST_MODEL",
	"FORGE_BASE_URL", "FORGE_CASSETTE", NULL
};

static void clean_env(void)
{
	for (int i = 0; env_names[i]; i++)
		unsetenv(env_names[i]);
	setenv("HOME", "/nonexistent-forge-test-home", 1);
	unsetenv("XDG_CONFIG_HOME");
}

/* A configuration of the defaults, the environment and flags (JSON text of
 * the flags layer, or NULL). */
static struct config *load(const char *flags)
{
	struct config_sources src = { NULL, NULL, flags ? jv_parse(flags) : jv_null() };
	struct config *cfg = NULL;

	if (config_load(&cfg, &src) < 0)
		printf("# config: %s\n", forge_last_error());
	return cfg;
}

static void test_defaults_need_a_key(void)
{
	struct llm_choice ch;
	struct config *cfg;

	clean_env();
	cfg = load(NULL);
	llm_choose(&ch, cfg, NULL);
	CHECK(ch.provider == NULL);
	CHECK(strstr(ch.provider_why, "ANTHROPIC_API_KEY") != NULL);
	config_free(cfg);

	setenv("ANTHROPIC_API_KEY", "k", 1);
	cfg = load(NULL);
	llm_choose(&ch, cfg, NULL);
	CHECK_STR(ch.provider, "anthropic");
	CHECK_STR(ch.provider_why, "ANTHROPIC_API_KEY is set");
	CHECK_STR(ch.model, "claude-sonnet-4-5");
	/* the default fast model goes with the default model */
	CHECK_STR(ch.fast_model, "claude-haiku-4-5");
	config_free(cfg);
}

static void test_an_openai_key_chooses_openai_and_its_model(void)
{
	struct llm_choice ch;
	struct config *cfg;

	clean_env();
	setenv("OPENAI_API_KEY", "k", 1);
	cfg = load(NULL);
	llm_choose(&ch, cfg, NULL);
	CHECK_STR(ch.provider, "openai");
	CHECK_STR(ch.model, "gpt-4o-mini");
	CHECK_STR(ch.fast_model, "gpt-4o-mini");
	config_free(cfg);
}

static void test_a_compatible_server_model_is_its_own_fast_model(void)
{
	struct llm_choice ch;
	struct config *cfg;

	clean_env();
	cfg = load("{\"llm\":{\"provider\":\"openai\",\"base_url\":\"http://127.0.0.1:11434/v1\","
		   "\"model\":\"qwen2.5-coder\"}}");
	llm_choose(&ch, cfg, "review");
	CHECK_STR(ch.provider, "openai");
	CHECK_STR(ch.model, "qwen2.5-coder");
	CHECK_STR(ch.fast_model, "qwen2.5-coder");
	CHECK_STR(ch.base_url, "http://127.0.0.1:11434/v1");
	CHECK(strstr(ch.provider_why, "flags") != NULL);
	config_free(cfg);

	/* the same from the environment */
	setenv("FORGE_PROVIDER", "openai", 1);
	setenv("FORGE_MODEL", "qwen2.5-coder", 1);
	cfg = load(NULL);
	llm_choose(&ch, cfg, "test");
	CHECK_STR(ch.fast_model, "qwen2.5-coder");
	config_free(cfg);
}

static void test_another_model_of_the_default_provider(void)
{
	struct llm_choice ch;
	struct config *cfg;

	clean_env();
	setenv("ANTHROPIC_API_KEY", "k", 1);
	cfg = load("{\"llm\":{\"model\":\"my-proxy-model\"}}");
	llm_choose(&ch, cfg, NULL);
	CHECK_STR(ch.provider, "anthropic");
	CHECK_STR(ch.model, "my-proxy-model");
	CHECK_STR(ch.fast_model, "my-proxy-model");
	config_free(cfg);

	/* a fast model that is configured is used */
	cfg = load("{\"llm\":{\"model\":\"claude-opus-4-1\",\"fast_model\":\"claude-haiku-4-5\"}}");
	llm_choose(&ch, cfg, NULL);
	CHECK_STR(ch.fast_model, "claude-haiku-4-5");
	config_free(cfg);
}

static void test_per_phase_overrides(void)
{
	struct llm_choice ch;
	struct config *cfg;

	clean_env();
	setenv("ANTHROPIC_API_KEY", "k", 1);
	cfg = load("{\"llm\":{\"provider\":\"anthropic\",\"base_url\":\"http://127.0.0.1:1\",\"phases\":{"
		   "\"review\":{\"model\":\"reviewer\"},"
		   "\"test\":{\"provider\":\"openai\",\"base_url\":\"http://127.0.0.1:2/v1\"},"
		   "\"plan\":{\"provider\":\"openai\"}}}}");
	/* a phase's model serves its fast calls too */
	llm_choose(&ch, cfg, "review");
	CHECK_STR(ch.provider, "anthropic");
	CHECK_STR(ch.model, "reviewer");
	CHECK_STR(ch.fast_model, "reviewer");
	CHECK_STR(ch.base_url, "http://127.0.0.1:1");
	CHECK_STR(ch.model_why, "llm.phases.review.model (flags: command line)");
	/* the setting an error about the model names (before: none; "--model",
	 * which does not change a phase's own model) */
	CHECK_STR(ch.model_key, "llm.phases.review.model");
	CHECK_STR(ch.fast_key, "llm.phases.review.model");
	/* another provider: its own default model and base URL */
	llm_choose(&ch, cfg, "test");
	CHECK_STR(ch.provider, "openai");
	CHECK_STR(ch.provider_why, "llm.phases.test.provider");
	CHECK_STR(ch.model, "gpt-4o-mini");
	CHECK_STR(ch.fast_model, "gpt-4o-mini");
	CHECK_STR(ch.base_url, "http://127.0.0.1:2/v1");
	llm_choose(&ch, cfg, "plan");
	CHECK(ch.base_url == NULL);
	/* phases without overrides, and no phase */
	llm_choose(&ch, cfg, "implement");
	CHECK_STR(ch.model, "claude-sonnet-4-5");
	CHECK_STR(ch.fast_model, "claude-haiku-4-5");
	llm_choose(&ch, cfg, NULL);
	CHECK_STR(ch.provider, "anthropic");
	config_free(cfg);
}

/* A configuration whose user file (~/.config/forge/config.json) is text,
 * with flags (JSON text, or NULL) on top. */
static char user_dir[] = "/tmp/forge-llm-choose-XXXXXX";
static bool user_dir_made;      /* (not "no X left": mkdtemp's letters may be X) */

static struct config *load_user(const char *text, const char *flags)
{
	char *dir = user_dir;
	char path[256];
	FILE *f;

	if (!user_dir_made)
		user_dir_made = mkdtemp(dir) != NULL;
	if (user_dir_made) {
		snprintf(path, sizeof path, "%s/forge", dir);
		mkdir(path, 0700);
		snprintf(path, sizeof path, "%s/forge/config.json", dir);
		if ((f = fopen(path, "w"))) {
			fputs(text, f);
			fclose(f);
		}
	}
	setenv("XDG_CONFIG_HOME", dir, 1);
	return load(flags);
}

/* load_user's directory, once the tests are done with it. */
static void remove_user_dir(void)
{
	char path[256];

	if (!user_dir_made)
		return;
	snprintf(path, sizeof path, "%s/forge/config.json", user_dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/forge", user_dir);
	rmdir(path);
	rmdir(user_dir);
}

/* hunt67 #1: a base URL in a configuration file that stays (the user's)
 * goes only to the provider named with it, never to one only inferred
 * from which key is set; one given for this invocation is used. */
static void test_a_base_url_needs_a_named_provider(void)
{
	struct llm_choice ch;
	struct llm_options opt;
	struct config *cfg;

	clean_env();
	setenv("ANTHROPIC_API_KEY", "k", 1);
	cfg = load_user("{\"llm\":{\"base_url\":\"http://127.0.0.1:11434/v1\"}}", NULL);
	llm_choose(&ch, cfg, NULL);
	CHECK_STR(ch.provider, "anthropic");
	CHECK(ch.base_url == NULL);
	CHECK(ch.base_url_unused);
	CHECK(strstr(ch.base_url_why, "llm.base_url (user: ") != NULL);
	CHECK(strstr(ch.base_url_why, "is not used") != NULL);
	CHECK(strstr(ch.base_url_why, "ANTHROPIC_API_KEY is set") != NULL);
	CHECK(strstr(ch.base_url_why, "forge config set --global llm.provider openai") != NULL);
	/* every phase, and the options a client is made from */
	llm_choose(&ch, cfg, "plan");
	CHECK(ch.base_url == NULL && ch.base_url_unused);
	llm_options_init(&opt);
	llm_options_for(&opt, cfg, "implement", false);
	CHECK(opt.base_url == NULL);
	jv_free(opt.pricing);
	config_free(cfg);

	/* named in another place (here the command line): used */
	cfg = load_user("{\"llm\":{\"base_url\":\"http://127.0.0.1:11434/v1\"}}", "{\"llm\":{\"provider\":\"openai\"}}");
	llm_choose(&ch, cfg, "review");
	CHECK_STR(ch.provider, "openai");
	CHECK_STR(ch.base_url, "http://127.0.0.1:11434/v1");
	CHECK(!ch.base_url_unused);
	CHECK(strncmp(ch.base_url_why, "llm.base_url (user: ", 20) == 0);
	config_free(cfg);
	clean_env();
	setenv("ANTHROPIC_API_KEY", "k", 1);

	/* given for this invocation (FORGE_BASE_URL, --base-url): the user's
	 * word beside the key, used with the inferred provider */
	setenv("FORGE_BASE_URL", "http://127.0.0.1:9999", 1);
	cfg = load(NULL);
	llm_choose(&ch, cfg, NULL);
	CHECK_STR(ch.provider, "anthropic");
	CHECK_STR(ch.base_url, "http://127.0.0.1:9999");
	CHECK(!ch.base_url_unused);
	CHECK_STR(ch.base_url_why, "llm.base_url (env: FORGE_BASE_URL)");
	config_free(cfg);
	unsetenv("FORGE_BASE_URL");
	cfg = load("{\"llm\":{\"base_url\":\"http://127.0.0.1:8080\"}}");
	llm_choose(&ch, cfg, NULL);
	CHECK_STR(ch.base_url, "http://127.0.0.1:8080");
	CHECK(!ch.base_url_unused);
	config_free(cfg);

	/* the place that sets the URL names openai, a higher one anthropic:
	 * anthropic's own endpoint, and no warning (the provider is named) */
	setenv("FORGE_BASE_URL", "http://127.0.0.1:11434/v1", 1);
	setenv("FORGE_PROVIDER", "openai", 1);
	cfg = load("{\"llm\":{\"provider\":\"anthropic\"}}");
	llm_choose(&ch, cfg, NULL);
	CHECK_STR(ch.provider, "anthropic");
	CHECK(ch.base_url == NULL);
	CHECK(!ch.base_url_unused);
	CHECK(strstr(ch.base_url_why, "is for the provider set beside it, not anthropic") != NULL);
	config_free(cfg);
	unsetenv("FORGE_PROVIDER");
	unsetenv("FORGE_BASE_URL");

	/* a phase that names its provider takes its own URL; one in the user
	 * file that does not follows the rule */
	cfg = load_user("{\"llm\":{\"phases\":{\"test\":{\"provider\":\"openai\",\"base_url\":\"http://127.0.0.1:2/v1\"},"
			"\"review\":{\"base_url\":\"http://127.0.0.1:3\"}}}}", NULL);
	llm_choose(&ch, cfg, "test");
	CHECK_STR(ch.base_url, "http://127.0.0.1:2/v1");
	CHECK(!ch.base_url_unused);
	llm_choose(&ch, cfg, "review");
	CHECK(ch.base_url == NULL && ch.base_url_unused);
	CHECK(strstr(ch.base_url_why, "llm.phases.review.base_url") != NULL);
	llm_choose(&ch, cfg, NULL);
	CHECK(ch.base_url == NULL && !ch.base_url_unused);
	config_free(cfg);

	/* no key and no provider: nothing is sent anyway; the URL stands */
	clean_env();
	cfg = load_user("{\"llm\":{\"base_url\":\"http://127.0.0.1:11434/v1\"}}", NULL);
	llm_choose(&ch, cfg, NULL);
	CHECK(ch.provider == NULL);
	CHECK_STR(ch.base_url, "http://127.0.0.1:11434/v1");
	CHECK(!ch.base_url_unused);
	config_free(cfg);
	clean_env();
}

static void test_options_for_a_phase(void)
{
	struct llm_options opt;
	struct config *cfg;

	clean_env();
	cfg = load("{\"llm\":{\"provider\":\"openai\",\"model\":\"qwen2.5-coder\",\"max_retries\":4}}");
	llm_options_init(&opt);
	llm_options_for(&opt, cfg, "review", true);
	CHECK_STR(opt.provider, "openai");
	CHECK_STR(opt.model, "qwen2.5-coder");
	/* the fast model: llm.fast_model is the setting for another one */
	CHECK_STR(opt.model_key, "llm.fast_model");
	CHECK_INT(opt.max_retries, 4);
	jv_free(opt.pricing);
	config_free(cfg);

	/* a cassette replays the default model's answers (priced so) */
	cfg = load("{\"llm\":{\"cassette\":\"/x.jsonl\"}}");
	llm_options_init(&opt);
	llm_options_for(&opt, cfg, "plan", false);
	CHECK_STR(opt.provider, "replay");
	CHECK_STR(opt.model, "claude-sonnet-4-5");
	CHECK_STR(opt.cassette, "/x.jsonl");
	jv_free(opt.pricing);
	llm_options_init(&opt);
	llm_options_for(&opt, cfg, "plan", true);
	CHECK_STR(opt.model, "claude-haiku-4-5");
	CHECK_STR(opt.model_why, "the default fast model of replay");
	jv_free(opt.pricing);
	llm_options_init(&opt);
	llm_options_for(&opt, cfg, "plan", false);
	CHECK_STR(opt.model_key, "llm.model");
	CHECK_STR(opt.model_why, "the default model of replay");
	jv_free(opt.pricing);
	config_free(cfg);
}

/* A cassette named in a layer above the provider's replays it: --cassette
 * beside FORGE_PROVIDER (before: the provider in the environment was asked,
 * the cassette unused without a word); in the same layer the provider
 * named wins, as the README says. */
static void test_a_cassette_above_the_provider_replays(void)
{
	struct llm_choice ch;
	struct config *cfg;

	clean_env();
	setenv("ANTHROPIC_API_KEY", "k", 1);
	setenv("FORGE_PROVIDER", "anthropic", 1);
	cfg = load("{\"llm\":{\"cassette\":\"/x.jsonl\"}}");
	llm_choose(&ch, cfg, NULL);
	CHECK_STR(ch.provider, "replay");
	CHECK_MSG(strstr(ch.provider_why, "llm.cassette (flags") != NULL, "%s", ch.provider_why);
	CHECK_STR(ch.cassette, "/x.jsonl");
	config_free(cfg);
	/* a phase's own provider stands (llm.phases.PHASE.provider is the
	 * phase's word whatever the layers, as for the other settings) */
	cfg = load_user("{\"llm\":{\"phases\":{\"review\":{\"provider\":\"openai\"}}}}",
			"{\"llm\":{\"cassette\":\"/x.jsonl\"}}");
	llm_choose(&ch, cfg, "review");
	CHECK_STR(ch.provider, "openai");
	config_free(cfg);
	unsetenv("XDG_CONFIG_HOME");
	/* the same layer: the provider named wins */
	cfg = load("{\"llm\":{\"cassette\":\"/x.jsonl\",\"provider\":\"anthropic\"}}");
	llm_choose(&ch, cfg, NULL);
	CHECK_STR(ch.provider, "anthropic");
	config_free(cfg);
	setenv("FORGE_CASSETTE", "/y.jsonl", 1);
	cfg = load(NULL);
	llm_choose(&ch, cfg, NULL);
	CHECK_STR(ch.provider, "anthropic");
	config_free(cfg);
	/* a provider named above the cassette wins */
	cfg = load("{\"llm\":{\"provider\":\"openai\"}}");
	llm_choose(&ch, cfg, NULL);
	CHECK_STR(ch.provider, "openai");
	config_free(cfg);
	clean_env();
}

int main(void)
{
	RUN(test_defaults_need_a_key);
	RUN(test_an_openai_key_chooses_openai_and_its_model);
	RUN(test_a_compatible_server_model_is_its_own_fast_model);
	RUN(test_another_model_of_the_default_provider);
	RUN(test_per_phase_overrides);
	RUN(test_a_base_url_needs_a_named_provider);
	RUN(test_options_for_a_phase);
	RUN(test_a_cassette_above_the_provider_replays);
	remove_user_dir();
	return unit_done();
}
