/* schema_inline.c - a schema made self-contained for a model; see schema.h. */
#include "data/schema.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/jsonscan.h"
#include "core/resource.h"

#include <stdlib.h>
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

/* The members of an object's text, as json_skim_members() reads them. */
struct members {
	struct member {
		const char *key, *value;
		size_t key_len, value_len;
	} *v;
	size_t n, alloc;
	bool escaped;           /* a key is written with an escape */
};

static void add_member(const char *key, size_t key_len, const char *value, size_t value_len, void *payload)
{
	struct members *m = payload;

	if (memchr(key, '\\', key_len))
		m->escaped = true;
	if (m->n == m->alloc) {
		m->alloc = m->alloc ? m->alloc * 2 : 32;
		m->v = xrealloc(m->v, m->alloc * sizeof *m->v);
	}
	m->v[m->n++] = (struct member){ key, value, key_len, value_len };
}

/* The members of the object at text, in a resource (NUL-terminated) that
 * ends at end: json_skim_members stops at the object's closing brace, so
 * what follows it is not read.  -1 when they cannot be read exactly (not
 * an object, a key written with an escape): the caller parses the whole. */
static int members_read(struct members *m, const char *text, const char *end)
{
	memset(m, 0, sizeof *m);
	if (json_skim_members(text, (size_t)(end - text), add_member, m) < 0 || m->escaped) {
		free(m->v);
		m->v = NULL;
		return -1;
	}
	return 0;
}

/* The member called key: the last of them, as libjq's parser keeps the
 * last of equal keys; NULL when there is none. */
static const struct member *member_find(const struct members *m, const char *key)
{
	size_t len = strlen(key);

	for (size_t i = m->n; i-- > 0;)
		if (m->v[i].key_len == len && !memcmp(m->v[i].key, key, len))
			return &m->v[i];
	return NULL;
}

/* names with the NAME of every "#/$defs/NAME" that node's "$ref"s name
 * appended.  Consumes names, borrows node. */
static jv refs_of(jv names, jv node)
{
	if (jv_get_kind(node) == JV_KIND_ARRAY) {
		jv_array_foreach(node, i, item) {
			names = refs_of(names, item);
			jv_free(item);
		}
	} else if (jv_get_kind(node) == JV_KIND_OBJECT) {
		jv_object_foreach(node, key, value) {
			const char *ref = jv_get_kind(value) == JV_KIND_STRING ? jv_string_value(value) : NULL;

			if (!strcmp(jv_string_value(key), "$ref") && ref && !strncmp(ref, "#/$defs/", 8))
				names = jv_array_append(names, jv_string(ref + 8));
			else
				names = refs_of(names, value);
			jv_free(key);
			jv_free(value);
		}
	}
	return names;
}

/*
 * The definitions among the $defs members m that def needs -- def and,
 * transitively, those their $refs name -- each parsed from its own text:
 * an object that answers every lookup schema_inline() makes as the whole
 * $defs would (one that is missing is null in it).  An invalid jv when a
 * text does not parse: the caller parses the whole.
 */
static jv needed_defs(const struct members *m, const char *def)
{
	jv defs = jv_object(), todo = jv_array_append(jv_array(), jv_string(def));

	for (int i = 0; i < jv_array_length(jv_copy(todo)); i++) {
		jv name = jv_array_get(jv_copy(todo), i);
		const struct member *d = member_find(m, jv_string_value(name));

		if (json_has(defs, jv_string_value(name))) {
			jv_free(name);
			continue;
		}
		jv value = d ? json_parse(d->value, d->value_len) : jv_null();
		if (!jv_is_valid(value)) {
			jv_free(name);
			jv_free(defs);
			defs = value;
			break;
		}
		todo = refs_of(todo, value);
		defs = jv_object_set(defs, name, value);
	}
	jv_free(todo);
	return defs;
}

/*
 * schema_for_model() of a definition, reading the resource's text for the
 * members of $defs and parsing only those the definition needs: parsing
 * and freeing the whole state schema cost 1.9M instructions for its one
 * definition.  Relies on the resource being valid JSON (test_schema checks
 * every one), as json_skim_members() does.  An invalid jv when the text
 * cannot be read that way.
 */
static jv def_for_model(const struct resource *r, const char *def)
{
	const char *end = r->data + r->len;
	struct members top, members;
	const struct member *d;
	jv defs, node, out = jv_null();

	if (members_read(&top, r->data, end) < 0)
		return jv_invalid();
	if (!(d = member_find(&top, "$defs"))) {
		defs = jv_null();       /* json_get(null, def): null, as with no such def */
	} else if (members_read(&members, d->value, end) < 0) {
		defs = jv_invalid();
	} else {
		defs = needed_defs(&members, def);
		free(members.v);
	}
	free(top.v);
	if (!jv_is_valid(defs))
		return defs;
	node = json_get(defs, def);
	if (jv_get_kind(node) == JV_KIND_OBJECT)
		out = schema_inline(node, defs);
	else
		jv_free(node);
	jv_free(defs);
	return out;
}

/* schema_for_model() from the whole document parsed. */
static jv whole_for_model(const struct resource *r, const char *def)
{
	jv doc = json_parse(r->data, r->len);
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

jv schema_for_model(const char *name, const char *def)
{
	const struct resource *r = resource_find(name);
	jv out;

	if (!r)
		return jv_null();
	out = def ? def_for_model(r, def) : jv_invalid();
	if (jv_is_valid(out))
		return out;
	jv_free(out);
	return whole_for_model(r, def);
}
