/*
 * llm_config.c - which provider and model a program or phase uses
 * (llm_choose) and llm_options from the layered configuration (config.h),
 * so every program that calls a model, forge config and forge doctor
 * resolve them the same way.
 */
#include "data/config.h"
#include "core/json.h"
#include "llm/llm.h"
#include "llm/llm_internal.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The layers in precedence order (config.h); -1 when unknown. */
static int layer_rank(const char *layer)
{
	static const char *const order[] = { "default", "user", "project", "file", "env", "flags" };

	for (int i = 0; layer && i < (int)(sizeof order / sizeof *order); i++)
		if (!strcmp(layer, order[i]))
			return i;
	return -1;
}

/* Which layer set path: its rank (0 = the built-in defaults, -1 = nowhere),
 * and "LAYER: SOURCE" in why (may be NULL), as config_explain() says. */
static int set_at(char *why, size_t size, const struct config *cfg, const char *path)
{
	const char *layer, *source;

	if (config_leaf_layer(cfg, path, &layer, &source) < 0)
		return -1;
	if (why)
		snprintf(why, size, "%s (%s: %s)", path, layer, source);
	return layer_rank(layer);
}

static const char *str_or_null(const struct config *cfg, const char *path)
{
	const char *s = config_get_str(cfg, path);

	return s && *s ? s : NULL;
}

static const char *env_or_null(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static bool is(const char *a, const char *b);

/* The provider without a phase: a setting, else what the environment
 * offers, as llm_client_new() would pick it.  *by_key: the variable that
 * chose it when only which one is set did (NULL when a layer names it, a
 * cassette chooses replay, or there is none). */
static const char *global_provider(char *why, size_t size, const struct config *cfg, const char **by_key)
{
	static const struct { const char *var, *provider; } keys[] = {
		{ "ANTHROPIC_API_KEY", "anthropic" }, { "FORGE_ANTHROPIC_KEY_FILE", "anthropic" },
		{ "OPENAI_API_KEY", "openai" }, { "FORGE_OPENAI_KEY_FILE", "openai" },
		{ "OPENAI_BASE_URL", "openai" },
	};

	int named = set_at(why, size, cfg, "llm.provider");
	char cwhy[120];

	*by_key = NULL;
	if (named > 0 && str_or_null(cfg, "llm.provider")) {
		/* A cassette named in a layer above the provider's (--cassette
		 * beside FORGE_PROVIDER, FORGE_CASSETTE beside a configured
		 * provider) replays it, as the layers rank every other setting
		 * (before: the provider below was asked, the cassette unused
		 * without a word).  In the same layer the provider named wins. */
		if (str_or_null(cfg, "llm.cassette") && set_at(cwhy, sizeof cwhy, cfg, "llm.cassette") > named &&
		    !is(str_or_null(cfg, "llm.provider"), "replay")) {
			snprintf(why, size, "a cassette is set (%s) above llm.provider", cwhy);
			return "replay";
		}
		return str_or_null(cfg, "llm.provider");
	}
	/* The defaults name anthropic; a cassette or a key for another
	 * provider still chooses that provider. */
	if (str_or_null(cfg, "llm.cassette")) {
		snprintf(why, size, "a cassette is set (llm.cassette)");
		return "replay";
	}
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		if (env_or_null(keys[i].var)) {
			snprintf(why, size, "%s is set", keys[i].var);
			*by_key = keys[i].var;
			return keys[i].provider;
		}
	}
	snprintf(why, size, "none: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or pass --provider");
	return NULL;
}

static bool is(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/* Whether the layer named `layer` (config.h) sets llm.provider to
 * something other than provider. */
static bool layer_names_another(const struct config *cfg, const char *layer, const char *provider)
{
	jv v = config_layer_value(cfg, layer), p = json_get_path(v, "llm.provider");
	bool another = jv_get_kind(p) == JV_KIND_STRING && !is(jv_string_value(p), provider);

	jv_free(p);
	jv_free(v);
	return another;
}

/* How to name the provider beside a base URL set in layer (the guess:
 * openai for a URL ending in /v1, as compatible servers' do). */
static void bind_hint(char *out, size_t size, const char *layer, const char *source, const char *url)
{
	size_t n = strlen(url);
	const char *p;

	while (n && url[n - 1] == '/')
		n--;
	p = n >= 3 && !strncmp(url + n - 3, "/v1", 3) ? "openai" : "anthropic";
	if (is(layer, "user"))
		snprintf(out, size, "forge config set --global llm.provider %s", p);
	else
		snprintf(out, size, "forge config set llm.provider %s (in %s)", p, source);
}

/*
 * The base URL at path (llm.base_url, llm.phases.PHASE.base_url) for the
 * provider in effect (llm.h: llm_choose): NULL when none is set; when a
 * configuration file that stays (the user's, the repository's) sets it and
 * the provider was only inferred from a key in the environment (by_key);
 * or, unless the phase named its provider (phase_named), when the layer
 * that sets the URL names another llm.provider -- a key goes only to a
 * server set for its provider.  A URL given for this invocation
 * (--base-url, FORGE_BASE_URL, --config FILE) is the user's word beside
 * the key they set, and is used (DESIGN.md §5: every program takes it).
 */
static void choose_base_url(struct llm_choice *out, const struct config *cfg, const char *path,
			    const char *by_key, bool phase_named)
{
	const char *url = str_or_null(cfg, path), *layer = "?", *source = "?";
	char hint[200];

	if (!url) {
		snprintf(out->base_url_why, sizeof out->base_url_why, "none set: the provider's own "
			 "(its *_BASE_URL variable, else its official endpoint)");
		return;
	}
	config_leaf_layer(cfg, path, &layer, &source);
	if (by_key && (is(layer, "user") || is(layer, "project"))) {
		bind_hint(hint, sizeof hint, layer, source, url);
		snprintf(out->base_url_why, sizeof out->base_url_why,
			 "%s (%s: %s) is not used: a base URL gets a key only from a provider named "
			 "with it (llm.provider), and none is; %s is used at its own endpoint because %s "
			 "is set; to use the URL, name its provider: %s",
			 path, layer, source, out->provider, by_key, hint);
		out->base_url_unused = true;
		return;
	}
	if (!phase_named && layer_names_another(cfg, layer, out->provider)) {
		snprintf(out->base_url_why, sizeof out->base_url_why,
			 "%s (%s: %s) is for the provider set beside it, not %s (%s): its own endpoint",
			 path, layer, source, out->provider, out->provider_why);
		return;
	}
	out->base_url = url;
	snprintf(out->base_url_why, sizeof out->base_url_why, "%s (%s: %s)", path, layer, source);
}

void llm_choose(struct llm_choice *out, const struct config *cfg, const char *phase)
{
	char key[96], gwhy[sizeof out->provider_why];
	const char *by_key;
	const char *global = global_provider(gwhy, sizeof gwhy, cfg, &by_key);
	const char *phase_provider = NULL, *phase_model = NULL, *phase_url = NULL;
	int model_rank = set_at(NULL, 0, cfg, "llm.model");
	int fast_rank = set_at(NULL, 0, cfg, "llm.fast_model");
	bool switched, default_model = false;

	memset(out, 0, sizeof *out);
	if (phase) {
		snprintf(key, sizeof key, "llm.phases.%s.provider", phase);
		phase_provider = str_or_null(cfg, key);
		snprintf(key, sizeof key, "llm.phases.%s.model", phase);
		phase_model = str_or_null(cfg, key);
		snprintf(key, sizeof key, "llm.phases.%s.base_url", phase);
		phase_url = str_or_null(cfg, key);
	}
	/* A phase that names another provider leaves the global model, fast
	 * model and base URL behind: they belong to the other provider. */
	switched = phase_provider && !is(phase_provider, global);
	if (phase_provider) {
		out->provider = phase_provider;
		snprintf(out->provider_why, sizeof out->provider_why, "llm.phases.%s.provider", phase);
	} else {
		out->provider = global;
		snprintf(out->provider_why, sizeof out->provider_why, "%s", gwhy);
	}

	snprintf(out->model_key, sizeof out->model_key, "llm.model");
	snprintf(out->fast_key, sizeof out->fast_key, "llm.fast_model");
	if (phase_model) {
		out->model = phase_model;
		snprintf(key, sizeof key, "llm.phases.%s.model", phase);
		snprintf(out->model_why, sizeof out->model_why, "%s", key);
		set_at(out->model_why, sizeof out->model_why, cfg, key);   /* with its layer */
		snprintf(out->model_key, sizeof out->model_key, "%s", key);
	} else if (!switched && model_rank > 0) {
		out->model = str_or_null(cfg, "llm.model");
		set_at(out->model_why, sizeof out->model_why, cfg, "llm.model");
	} else if (is(out->provider, "anthropic") || is(out->provider, "replay")) {
		/* the built-in default belongs to anthropic (a cassette replays its answers) */
		out->model = model_rank <= 0 && str_or_null(cfg, "llm.model") ? str_or_null(cfg, "llm.model")
									       : llm_anthropic.default_model;
		default_model = true;
		snprintf(out->model_why, sizeof out->model_why, "the default model of %s", out->provider);
	} else if (is(out->provider, "openai")) {
		out->model = llm_openai.default_model;
		snprintf(out->model_why, sizeof out->model_why, "the default model of openai");
	}

	if (phase_model) {
		out->fast_model = phase_model;
		snprintf(out->fast_why, sizeof out->fast_why, "%s", out->model_why);
		snprintf(out->fast_key, sizeof out->fast_key, "%s", out->model_key);
	} else if (!switched && fast_rank > 0) {
		out->fast_model = str_or_null(cfg, "llm.fast_model");
		set_at(out->fast_why, sizeof out->fast_why, cfg, "llm.fast_model");
	} else if (default_model && fast_rank <= 0 && str_or_null(cfg, "llm.fast_model")) {
		/* the default fast model goes with the default model only */
		out->fast_model = str_or_null(cfg, "llm.fast_model");
		snprintf(out->fast_why, sizeof out->fast_why, "the default fast model of %s", out->provider);
	} else if (out->model) {
		out->fast_model = out->model;
		snprintf(out->fast_why, sizeof out->fast_why, "the same as the model (no fast model configured for it)");
	}

	if (phase_url) {
		/* (a phase that names its provider names it beside its URL) */
		snprintf(key, sizeof key, "llm.phases.%s.base_url", phase);
		choose_base_url(out, cfg, key, phase_provider ? NULL : by_key, phase_provider != NULL);
	} else if (switched) {
		snprintf(out->base_url_why, sizeof out->base_url_why, "the default of %s "
			 "(llm.base_url goes with the other provider)", out->provider);
	} else {
		choose_base_url(out, cfg, "llm.base_url", by_key, false);
	}
	out->cassette = str_or_null(cfg, "llm.cassette");
}

static long seconds_ms(const struct config *cfg, const char *path)
{
	double s = config_get_num(cfg, path);

	return s > 0 ? (long)(s * 1000.0 + 0.5) : 0;
}

void llm_options_for(struct llm_options *opt, const struct config *cfg, const char *phase, bool fast)
{
	struct llm_choice ch;

	llm_choose(&ch, cfg, phase);
	opt->provider = ch.provider;
	opt->model = fast ? ch.fast_model : ch.model;
	snprintf(opt->model_key, sizeof opt->model_key, "%s", fast ? ch.fast_key : ch.model_key);
	snprintf(opt->model_why, sizeof opt->model_why, "%s", fast ? ch.fast_why : ch.model_why);
	opt->base_url = ch.base_url;
	opt->cassette = ch.cassette;
	opt->timeout_ms = seconds_ms(cfg, "llm.timeout_s");
	opt->stall_ms = seconds_ms(cfg, "llm.stall_timeout_s");
	opt->max_retries = (int)config_get_num(cfg, "llm.max_retries");
	opt->max_retry_after = config_get_num(cfg, "llm.retry_max_delay_s");
	opt->no_prompt_cache = !config_get_bool(cfg, "llm.prompt_cache");
	jv_free(opt->pricing);
	opt->pricing = config_get(cfg, "llm.pricing");
}

/* The temperature at path; -1 (none) for null or unset. */
static double temperature_at(const struct config *cfg, const char *path)
{
	jv v = config_get(cfg, path);
	double t = jv_get_kind(v) == JV_KIND_NUMBER ? jv_number_value(v) : -1;

	jv_free(v);
	return t;
}

double llm_temperature(const struct config *cfg, const char *phase)
{
	char key[96];

	if (phase) {
		snprintf(key, sizeof key, "llm.phases.%s.temperature", phase);
		if (config_has(cfg, key))
			return temperature_at(cfg, key);
	}
	return temperature_at(cfg, "llm.temperature");
}

void llm_options_from_config(struct llm_options *opt, const struct config *cfg)
{
	llm_options_for(opt, cfg, NULL, false);
}

