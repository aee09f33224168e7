/* schema_inline.c - a schema made self-contained for a model; see schema.h. */
#include "data/schema.h"
#include "core/json.h"
#include "core/resource.h"

#include <string.h>

#define INLINE_DEPTH_MAX 32     /* a definition that refers to itself stops here */

static bool dropped(const char *key)
{
	return !strcmp(key, "$comment") || !strcmp(key, "$schema") || !strcmp(key, "$id") || !strcmp(key, "$defs");
}

static jv inline_at(jv node, jv defs, int depth)
{
	if (depth > INLINE_DEPTH_MAX)
		return node;
	if (jv_get_kind(node) == JV_KIND_ARRAY) {
		jv out = jv_array();
		jv_array_foreach(node, i, item)
			out = jv_array_append(out, inline_at(item, defs, depth + 1));
		jv_free(node);
		return out;
	}
	if (jv_get_kind(node) != JV_KIND_OBJECT)
		return node;
	const char *ref = json_get_str(node, "$ref");
	if (ref && strncmp(ref, "#/$defs/", 8) == 0) {
		jv def = json_get(defs, ref + 8);
		if (jv_get_kind(def) == JV_KIND_OBJECT)
			node = jv_object_merge(def, jv_object_delete(node, jv_string("$ref")));
		else
			jv_free(def);
	}
	jv out = jv_object();
	jv_object_foreach(node, key, value) {
		if (!dropped(jv_string_value(key)))
			out = jv_object_set(out, jv_copy(key), inline_at(value, defs, depth + 1));
		else
			jv_free(value);
		jv_free(key);
	}
	jv_free(node);
	return out;
}

jv schema_inline(jv node, jv defs)
{
	return inline_at(node, defs, 0);
}

jv schema_for_model(const char *name, const char *def)
{
	const struct resource *r = resource_find(name);
	jv doc = r ? json_parse(r->data, r->len) : jv_null();
	jv out = jv_null();

	if (jv_get_kind(doc) != JV_KIND_OBJECT)
		goto out;
	jv defs = json_get(doc, "$defs");
	jv node = def ? json_get(defs, def) : jv_copy(doc);
	if (jv_get_kind(node) == JV_KIND_OBJECT)
		out = schema_inline(node, defs);
	else
		jv_free(node);
	jv_free(defs);
out:
	jv_free(doc);
	return out;
}
