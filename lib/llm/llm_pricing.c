/*
 * llm_pricing.c - cost of a call from schemas/pricing.json (USD per
 * million tokens), overridable from the config.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "core/json.h"
#include "llm/llm.h"
#include "core/resource.h"

static jv builtin;   /* parsed once: {"models":{…}} */

static jv table(void)
{
	if (jv_get_kind(builtin) == JV_KIND_INVALID || jv_get_kind(builtin) == JV_KIND_NULL) {
		const struct resource *r = resource_find("pricing.json");
		jv_free(builtin);
		builtin = r ? json_parse(r->data, r->len) : jv_object();
		if (jv_get_kind(builtin) != JV_KIND_OBJECT) {
			jv_free(builtin);
			builtin = jv_object();
		}
	}
	return builtin;
}

/* The entry for name in models (borrowed objects); 0 when found. */
static int lookup(struct llm_price *out, jv models, const char *name)
{
	jv e = json_get(models, name);
	int rc = -1;

	if (jv_get_kind(e) == JV_KIND_OBJECT && json_has(e, "input") && json_has(e, "output")) {
		out->input = json_get_num(e, "input", 0);
		out->output = json_get_num(e, "output", 0);
		out->cache_read = json_get_num(e, "cache_read", out->input);
		out->cache_write = json_get_num(e, "cache_write", out->input);
		out->context_window = (long)json_get_num(e, "context_window", 0);
		out->no_temperature = !json_get_bool(e, "temperature", true);
		rc = 0;
	}
	jv_free(e);
	return rc;
}

/* True when s matches pat, where '9' stands for any digit. */
static bool shape(const char *s, const char *pat)
{
	for (; *pat; s++, pat++)
		if (*pat == '9' ? !isdigit((unsigned char)*s) : *s != *pat)
			return false;
	return *s == '\0';
}

/* Length of name without a date suffix: -YYYYMMDD or -YYYY-MM-DD. */
static size_t undated_len(const char *name)
{
	size_t n = strlen(name);

	if (n > 9 && shape(name + n - 9, "-99999999"))
		return n - 9;
	if (n > 11 && shape(name + n - 11, "-9999-99-99"))
		return n - 11;
	return n;
}

static int find_in(struct llm_price *out, jv src, const char *model)
{
	jv models = json_has(src, "models") ? json_get(src, "models") : jv_copy(src);
	size_t n = undated_len(model);
	int rc = lookup(out, models, model);

	if (rc < 0 && n < strlen(model)) {
		char *base = xstrndup(model, n);
		rc = lookup(out, models, base);
		free(base);
	}
	jv_free(models);
	return rc;
}

int llm_price_find(struct llm_price *out, jv overrides, const char *model)
{
	if (!model)
		return -1;
	if (jv_get_kind(overrides) == JV_KIND_OBJECT && find_in(out, overrides, model) == 0)
		return 0;
	return find_in(out, table(), model);
}

long llm_usage_tokens(const struct llm_usage *u)
{
	return u->input_tokens + u->output_tokens + u->cache_read_tokens + u->cache_write_tokens;
}

double llm_price_cost(const struct llm_price *p, const struct llm_usage *u)
{
	return ((double)u->input_tokens * p->input + (double)u->output_tokens * p->output +
		(double)u->cache_read_tokens * p->cache_read +
		(double)u->cache_write_tokens * p->cache_write) / 1e6;
}
