/*
 * stage_schema.c - the document schemas of forge compile's stages as the
 * model is shown them; see app/stage.h.
 */
#include "app/stage.h"
#include "core/forge.h"
#include "core/json.h"
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
	*out = schema_for_model(name, def);
	if (jv_get_kind(*out) != JV_KIND_OBJECT)
		return forge_error("no schema %s%s%s, or it does not parse", name, def ? " #/$defs/" : "",
				   def ? def : "");
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

