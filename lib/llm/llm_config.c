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

/* The provider without a phase: a setting, else what the environment
 * offers, as llm_client_new() would pick it. */
static const char *global_provider(char *why, size_t size, const struct config *cfg)
{
	static const struct { const char *var, *provider; } keys[] = {
		{ "ANTHROPIC_API_KEY", "anthropic" }, { "FORGE_ANTHROPIC_KEY_FILE", "anthropic" },
		{ "OPENAI_API_KEY", "openai" }, { "FORGE_OPENAI_KEY_FILE", "openai" },
		{ "OPENAI_BASE_URL", "openai" },
	};

	if (set_at(why, size, cfg, "llm.provider") > 0 && str_or_null(cfg, "llm.provider"))
		return str_or_null(cfg, "llm.provider");
	/* The defaults name anthropic; a cassette or a key for another
	 * provider still chooses that provider. */
	if (str_or_null(cfg, "llm.cassette")) {
		snprintf(why, size, "a cassette is set (llm.cassette)");
		return "replay";
	}
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		if (env_or_null(keys[i].var)) {
			snprintf(why, size, "%s is set", keys[i].var);
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

void llm_choose(struct llm_choice *out, const struct config *cfg, const char *phase)
{
	char key[96], gwhy[sizeof out->provider_why];
	const char *global = global_provider(gwhy, sizeof gwhy, cfg);
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

	if (phase_model) {
		out->model = phase_model;
		snprintf(out->model_why, sizeof out->model_why, "llm.phases.%s.model", phase);
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
		snprintf(out->fast_why, sizeof out->fast_why, "llm.phases.%s.model", phase);
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

	out->base_url = phase_url ? phase_url : switched ? NULL : str_or_null(cfg, "llm.base_url");
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

