/*
 * stage_schema.c - the document schemas of forge compile's stages as the
 * model is shown them; see app/stage.h.
 */
#include "app/stage.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/resource.h"
#include "data/config.h"
#include "data/schema.h"

#include <stdio.h>
#include <string.h>

/* The language names of compile.languages, as an array. */
static jv language_names(const struct config *cfg)
{
	jv langs = cfg ? config_get(cfg, "compile.languages") : jv_null(), names = jv_array();

	if (jv_get_kind(langs) == JV_KIND_OBJECT)
		jv_object_foreach(langs, k, v) {
			if (jv_string_value(k)[0] != '$')
				names = jv_array_append(names, jv_copy(k));
			jv_free(k);
			jv_free(v);
		}
	jv_free(langs);
	return names;
}

int stage_doc_schema(jv *out, struct phase *ph, const char *kind, const char *def)
{
	char name[128];

	*out = jv_null();
	snprintf(name, sizeof name, "compile/%s.schema.json", kind);
	const struct resource *r = resource_find(name);
	if (!r)
		return forge_error("no schema %s", name);
	jv doc = json_parse(r->data, r->len);
	if (!jv_is_valid(doc)) {
		jv_free(doc);
		return forge_error("schema %s does not parse", name);
	}
	jv defs = json_get(doc, "$defs");
	jv node = def ? json_get(defs, def) : jv_copy(doc);
	*out = schema_inline(node, defs);
	jv_free(defs);
	jv_free(doc);
	static const char *const drop[] = { "title", "$comment", NULL };
	for (size_t i = 0; drop[i] && jv_get_kind(*out) == JV_KIND_OBJECT; i++)
		if (json_has(*out, drop[i]))
			*out = jv_object_delete(*out, jv_string(drop[i]));
	/* the languages are the configuration's: the model is offered exactly those */
	if (strcmp(kind, "intent") == 0 && !def && json_has(*out, "properties"))
		*out = json_set(*out, "properties",
				json_set(json_get(*out, "properties"), "language",
					 json_set(jv_object(), "enum", language_names(ph ? ph->cfg : NULL))));
	return 0;
}

