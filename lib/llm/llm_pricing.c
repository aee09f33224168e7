/*
 * llm_pricing.c - cost of a call from schemas/pricing.json (USD per
 * million tokens), overridable from the config.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "core/json.h"
#include "llm/llm.h"
#include "core/jsonscan.h"
#include "core/resource.h"
#include "data/config.h"

/*
 * The built-in table is read a model at a time: parsing all of
 * pricing.json into jv was ~0.5M instructions of every session (two
 * clients, one model each).  Its "models" member is skimmed
 * (json_skim_members: the resource is the program's own valid JSON, which
 * test_llm_client's test_pricing_table checks against a whole parse) and
 * only the entry asked for is parsed; what was found, or that nothing was,
 * is kept in `entries` ({"NAME": entry or null}).
 */
static jv entries;   /* {"NAME": {...} | null} */

struct skim_find {
	const char *key;
	size_t key_len;
	const char *value;   /* the last member of that key (a parser keeps the last) */
	size_t value_len;
};

static void skim_find(const char *key, size_t key_len, const char *value, size_t value_len,
		      void *payload)
{
	struct skim_find *f = payload;

	if (key_len == f->key_len && memcmp(key, f->key, key_len) == 0) {
		f->value = value;
		f->value_len = value_len;
	}
}

/* The built-in entry of model name (new reference), or null. */
static jv builtin_entry(const char *name)
{
	const struct resource *r;
	struct skim_find f = { "models", 6, NULL, 0 };
	jv e;

	if (jv_get_kind(entries) != JV_KIND_OBJECT) {
		jv_free(entries);
		entries = jv_object();
	}
	e = jv_object_get(jv_copy(entries), jv_string(name));
	if (jv_is_valid(e))
		return e;
	jv_free(e);
	e = jv_null();
	r = resource_find("pricing.json");
	if (r && json_skim_members(r->data, r->len, skim_find, &f) == 0 && f.value) {
		/* (the skim wants its text NUL-terminated) */
		size_t len = f.value_len;
		char *models = xstrndup(f.value, len);

		f = (struct skim_find){ name, strlen(name), NULL, 0 };
		if (json_skim_members(models, len, skim_find, &f) == 0 && f.value) {
			jv v = json_parse(f.value, f.value_len);

			if (jv_get_kind(v) == JV_KIND_OBJECT) {
				jv_free(e);
				e = v;
			} else {
				jv_free(v);
			}
		}
		free(models);
	}
	entries = jv_object_set(entries, jv_string(name), jv_copy(e));
	return e;
}

/* *out from entry e (borrowed); 0 when it is a price (input and output). */
static int entry_price(struct llm_price *out, jv e)
{
	if (jv_get_kind(e) != JV_KIND_OBJECT || !json_has(e, "input") || !json_has(e, "output"))
		return -1;
	out->input = json_get_num(e, "input", 0);
	out->output = json_get_num(e, "output", 0);
	out->cache_read = json_get_num(e, "cache_read", out->input);
	out->cache_write = json_get_num(e, "cache_write", out->input);
	out->context_window = (long)json_get_num(e, "context_window", 0);
	out->no_temperature = !json_get_bool(e, "temperature", true);
	return 0;
}

/* The price of name in the overrides src, or (src null) in the built-in
 * table; 0 when found. */
static int lookup(struct llm_price *out, jv src, const char *name)
{
	jv e;
	int rc;

	if (jv_get_kind(src) == JV_KIND_NULL) {
		e = builtin_entry(name);
	} else {
		jv models = json_has(src, "models") ? json_get(src, "models") : jv_copy(src);

		e = json_get(models, name);
		jv_free(models);
	}
	rc = entry_price(out, e);
	jv_free(e);
	return rc;
}

static int find_in(struct llm_price *out, jv src, const char *model)
{
	size_t n = config_model_undated_len(model);
	int rc = lookup(out, src, model);

	if (rc < 0 && n < strlen(model)) {
		char *base = xstrndup(model, n);
		rc = lookup(out, src, base);
		free(base);
	}
	return rc;
}

int llm_price_find(struct llm_price *out, jv overrides, const char *model)
{
	if (!model)
		return -1;
	if (jv_get_kind(overrides) == JV_KIND_OBJECT && find_in(out, overrides, model) == 0)
		return 0;
	return find_in(out, jv_null(), model);
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
