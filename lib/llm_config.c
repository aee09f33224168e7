/*
 * llm_config.c - llm_options from the layered configuration (config.h), so
 * every program that calls a model reads the same keys the same way.
 */
#include "config.h"
#include "json.h"
#include "llm.h"

#include <stdbool.h>
#include <string.h>

/* True when a layer above the built-in defaults set path.  Borrows explain. */
static bool set_by_user(jv explain, const char *path)
{
	bool set = false;

	jv_array_foreach(explain, i, e) {
		const char *p = json_get_str(e, "path"), *layer = json_get_str(e, "layer");
		if (p && layer && !strcmp(p, path))
			set = strcmp(layer, "default") != 0;
		jv_free(e);
	}
	return set;
}

static const char *str_or_null(const struct config *cfg, const char *path)
{
	const char *s = config_get_str(cfg, path);

	return s && *s ? s : NULL;
}

static long seconds_ms(const struct config *cfg, const char *path)
{
	double s = config_get_num(cfg, path, 0);

	return s > 0 ? (long)(s * 1000.0 + 0.5) : 0;
}

/* Fill opt from the effective configuration (strings borrowed from cfg). */
void llm_options_from_config(struct llm_options *opt, const struct config *cfg)
{
	jv explain = config_explain(cfg);
	bool provider_set = set_by_user(explain, "llm.provider");
	bool model_set = set_by_user(explain, "llm.model");

	jv_free(explain);
	/* The defaults name anthropic and its model; a key for another provider
	 * (or a cassette) still chooses that provider and its default model. */
	opt->provider = provider_set ? str_or_null(cfg, "llm.provider") : NULL;
	/* A cassette replays answers of the configured model: price them so. */
	opt->model = model_set || (opt->provider && (!strcmp(opt->provider, "anthropic") ||
						     !strcmp(opt->provider, "replay")))
		     ? str_or_null(cfg, "llm.model") : NULL;
	opt->base_url = str_or_null(cfg, "llm.base_url");
	opt->cassette = str_or_null(cfg, "llm.cassette");
	opt->timeout_ms = seconds_ms(cfg, "llm.timeout_s");
	opt->stall_ms = seconds_ms(cfg, "llm.stall_timeout_s");
	opt->max_retries = (int)config_get_num(cfg, "llm.max_retries", -1);
	opt->max_retry_after = config_get_num(cfg, "llm.retry_max_delay_s", 0);
	jv_free(opt->pricing);
	opt->pricing = config_get(cfg, "llm.pricing");
}

