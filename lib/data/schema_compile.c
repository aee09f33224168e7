/*
 * schema_compile.c - JSON Schema document -> node graph (see schema.h).
 *
 * A schema is a graph of `struct node`, one per subschema, each compiled from
 * its own part of the document's text after checking every keyword: anything
 * this file does not implement is refused, because a validator that skips a
 * keyword it does not know says "valid" to data the schema author meant to
 * reject.  The text is indexed, not parsed (schema_text.c); a node is
 * compiled when first reached: its keywords read, its subschemas made lazy
 * nodes, its $ref resolved by walking the pointer from the root (compiling
 * the nodes on the way), the $ref cycle check run over what it reaches.
 *
 * Embedded schemas (schema_get) compile so as validation reaches them: a
 * phase process that validates one state never compiles the definitions that
 * state does not use.  schema_compile() serialises its document and compiles
 * every node at once (schema_compile_rest), so it judges a whole document.
 */
#include "data/schema_internal.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/jsonscan.h"
#include "core/resource.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct type_name schema_type_names[7] = {
	{ "null", T_NULL }, { "boolean", T_BOOLEAN }, { "object", T_OBJECT },
	{ "array", T_ARRAY }, { "number", T_NUMBER }, { "string", T_STRING },
	{ "integer", T_INTEGER },
};

/* ---------------------------------------------------------------- nodes -- */

static struct node *node_new(struct compiler *c)
{
	struct node *n = xcalloc(1, sizeof *n);

	n->enum_vals = jv_null();
	n->const_val = jv_null();
	n->required = jv_null();
	n->owner = c->s;
	n->pointer = xstrdup(c->ptr.buf);
	if (c->s->n == c->s->alloc) {
		c->s->alloc = c->s->alloc ? c->s->alloc * 2 : 16;
		c->s->nodes = xrealloc(c->s->nodes, c->s->alloc * sizeof *c->s->nodes);
	}
	n->index = c->s->n;
	c->s->nodes[c->s->n++] = n;
	return n;
}

static void regex_release(struct regex *re)
{
	free(re->source);
	pcre2_match_data_free(re->md);
	pcre2_code_free(re->code);
}

/* Frees a node's own storage; the nodes it points to are freed separately,
 * being in schema.nodes themselves. */
static void node_free(struct node *n)
{
	jv_free(n->enum_vals);
	jv_free(n->const_val);
	jv_free(n->required);
	for (size_t i = 0; i < n->nprops; i++)
		free(n->props[i].name);
	free(n->props);
	for (size_t i = 0; i < n->npprops; i++)
		regex_release(&n->pprops[i].re);
	free(n->pprops);
	free(n->prefix.v);
	if (n->pattern) {
		regex_release(n->pattern);
		free(n->pattern);
	}
	free(n->all_of.v);
	free(n->any_of.v);
	free(n->one_of.v);
	free(n->ref);
	free(n->ref_text);
	free(n->pointer);
	free(n);
}

void schema_free(struct schema *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		node_free(s->nodes[i]);
	free(s->nodes);
	free(s->id);
	schema_text_release(&s->text);
	free(s->text_owned);
	free(s->name);
	free(s->error);
	free(s);
}

/* ------------------------------------------------------------- compiling -- */

/* "#/properties/x: ..." for messages: the pointer of the node being compiled
 * (its middle elided when long, so a message about a deep schema still fits
 * forge_last_error's buffer). */
static int compile_error(struct compiler *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int compile_error(struct compiler *c, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	size_t len = c->ptr.len;
	va_list ap;

	if (len <= 400)
		buf_addf(&msg, "#%s: ", c->ptr.buf);
	else
		buf_addf(&msg, "#%.200s...%s: ", c->ptr.buf, c->ptr.buf + len - 100);
	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	forge_error("%s", msg.buf);
	buf_release(&msg);
	return -1;
}

/* An error about what this validator does not implement (a keyword it does
 * not know, a $ref it cannot follow), not about a schema that breaks JSON
 * Schema: said so by schema_compile_checked() when it is the first. */
static void mark_unsupported(struct schema *s)
{
	if (!s->error)
		s->unsupported = true;
}

static int unsupported_error(struct compiler *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int unsupported_error(struct compiler *c, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	mark_unsupported(c->s);
	compile_error(c, "%s", msg.buf);
	buf_release(&msg);
	return -1;
}

/* Append "/token" with RFC 6901 escaping; returns the length to restore. */
size_t schema_ptr_push(struct buf *b, const char *token)
{
	size_t old = b->len;

	buf_addch(b, '/');
	if (!strpbrk(token, "~/")) {
		buf_adds(b, token);
		return old;
	}
	for (const char *p = token; *p; p++) {
		if (*p == '~')
			buf_adds(b, "~0");
		else if (*p == '/')
			buf_adds(b, "~1");
		else
			buf_addch(b, *p);
	}
	return old;
}

static size_t ptr_push_index(struct buf *b, size_t i)
{
	size_t old = b->len;

	buf_addf(b, "/%zu", i);
	return old;
}

static bool is_nonneg_integer(jv v)
{
	if (jv_get_kind(v) != JV_KIND_NUMBER)
		return false;
	double d = jv_number_value(v);
	return isfinite(d) && d >= 0 && d == floor(d);
}

static int regex_compile(struct compiler *c, struct regex *re, const char *src, size_t len)
{
	int err;
	PCRE2_SIZE off;

	re->code = pcre2_compile((PCRE2_SPTR)src, len, PCRE2_UTF | PCRE2_UCP, &err, &off, NULL);
	if (!re->code) {
		PCRE2_UCHAR text[256];

		pcre2_get_error_message(err, text, sizeof text);
		/* (PCRE2 is not ECMA-262, the dialect JSON Schema names:
		 * "[^]" and "\\u0041" are patterns there) */
		return unsupported_error(c, "invalid regular expression '%s' at offset %zu: %s",
				     src, (size_t)off, (const char *)text);
	}
	re->md = pcre2_match_data_create_from_pattern(re->code, NULL);
	re->source = xstrndup(src, len);
	return 0;
}

/* JSON Schema regexes are not anchored: a match anywhere counts. */
bool schema_regex_search(const struct regex *re, const char *s, size_t len)
{
	return pcre2_match(re->code, (PCRE2_SPTR)s, len, 0, 0, re->md, NULL) >= 0;
}

/* ---- keywords given their value parsed: each checks it and fills the node. ---- */

typedef int (*value_fn)(struct compiler *c, struct node *n, jv val, const char *kw);

static int string_value(struct compiler *c, jv val, const char *kw)
{
	if (jv_get_kind(val) != JV_KIND_STRING)
		return compile_error(c, "'%s' must be a string", kw);
	return 0;
}

/* "format" is an annotation, except "regex", which this validator asserts:
 * a string that is not a PCRE2 pattern fails (config's sandbox rules, so a
 * bad one is refused when the configuration is read, and the validation
 * cache spares the programs that run on it compiling them all up front). */
static int kw_format(struct compiler *c, struct node *n, jv val, const char *kw)
{
	if (string_value(c, val, kw) < 0)
		return -1;
	n->format_regex = strcmp(jv_string_value(val), "regex") == 0;
	return 0;
}

/* $id only names the document: below the root it would start an embedded
 * resource with its own base URI, which changes what "#/..." refers to. */
static int kw_id(struct compiler *c, struct node *n, jv val, const char *kw)
{
	(void)n;
	if (string_value(c, val, kw) < 0)
		return -1;
	if (c->ptr.len != 0)
		return unsupported_error(c, "unsupported keyword '$id' below the root "
				     "(embedded schema resources)");
	/* "http://x/s.json#" names the same document as "http://x/s.json". */
	size_t len = (size_t)jv_string_length_bytes(jv_copy(val));
	const char *id = jv_string_value(val);
	free(c->s->id);
	c->s->id = xstrndup(id, len && id[len - 1] == '#' ? len - 1 : len);
	return 0;
}

static int type_bit(unsigned *out, jv name)
{
	if (jv_get_kind(name) != JV_KIND_STRING)
		return -1;
	for (size_t i = 0; i < sizeof schema_type_names / sizeof schema_type_names[0]; i++) {
		if (strcmp(jv_string_value(name), schema_type_names[i].name) == 0) {
			*out = schema_type_names[i].bit;
			return 0;
		}
	}
	return -1;
}

static int kw_type(struct compiler *c, struct node *n, jv val, const char *kw)
{
	unsigned bit;

	(void)kw;
	if (jv_get_kind(val) == JV_KIND_STRING) {
		if (type_bit(&bit, val) < 0)
			return compile_error(c, "unknown type '%s'", jv_string_value(val));
		n->types = bit;
		return 0;
	}
	if (jv_get_kind(val) != JV_KIND_ARRAY)
		return compile_error(c, "'type' must be a string or an array of strings");
	jv_array_foreach(val, i, t) {
		int bad = type_bit(&bit, t) < 0 || (n->types & bit);
		jv_free(t);
		if (bad)
			return compile_error(c, "'type' item %d is not a distinct type name", i);
		n->types |= bit;
	}
	if (!n->types)
		return compile_error(c, "'type' must not be empty");
	return 0;
}

static int kw_enum(struct compiler *c, struct node *n, jv val, const char *kw)
{
	(void)kw;
	if (jv_get_kind(val) != JV_KIND_ARRAY)
		return compile_error(c, "'enum' must be an array");
	n->has_enum = 1;
	n->enum_vals = jv_copy(val);
	return 0;
}

static int kw_const(struct compiler *c, struct node *n, jv val, const char *kw)
{
	(void)c;
	(void)kw;
	n->has_const = 1;
	n->const_val = jv_copy(val);
	return 0;
}

static const struct {
	const char *name;
	enum limit lim;
	int count;      /* a non-negative integer (else any number) */
} limit_keywords[] = {
	{ "minItems", L_MIN_ITEMS, 1 }, { "maxItems", L_MAX_ITEMS, 1 },
	{ "minLength", L_MIN_LENGTH, 1 }, { "maxLength", L_MAX_LENGTH, 1 },
	{ "minProperties", L_MIN_PROPS, 1 }, { "maxProperties", L_MAX_PROPS, 1 },
	{ "minimum", L_MINIMUM, 0 }, { "maximum", L_MAXIMUM, 0 },
	{ "exclusiveMinimum", L_EXCL_MIN, 0 }, { "exclusiveMaximum", L_EXCL_MAX, 0 },
	{ "multipleOf", L_MULTIPLE_OF, 0 },
};

static int kw_limit(struct compiler *c, struct node *n, jv val, const char *kw)
{
	for (size_t i = 0; i < sizeof limit_keywords / sizeof limit_keywords[0]; i++) {
		if (strcmp(kw, limit_keywords[i].name) != 0)
			continue;
		if (limit_keywords[i].count && !is_nonneg_integer(val))
			return compile_error(c, "'%s' must be a non-negative integer", kw);
		if (jv_get_kind(val) != JV_KIND_NUMBER || !isfinite(jv_number_value(val)))
			return compile_error(c, "'%s' must be a number", kw);
		if (limit_keywords[i].lim == L_MULTIPLE_OF && !(jv_number_value(val) > 0))
			return compile_error(c, "'multipleOf' must be greater than 0");
		n->lim[limit_keywords[i].lim] = jv_number_value(val);
		n->has |= 1u << limit_keywords[i].lim;
		return 0;
	}
	return unsupported_error(c, "unsupported keyword '%s'", kw);
}

static int kw_unique(struct compiler *c, struct node *n, jv val, const char *kw)
{
	(void)kw;
	if (jv_get_kind(val) != JV_KIND_TRUE && jv_get_kind(val) != JV_KIND_FALSE)
		return compile_error(c, "'uniqueItems' must be a boolean");
	n->unique = jv_get_kind(val) == JV_KIND_TRUE;
	return 0;
}

static int kw_required(struct compiler *c, struct node *n, jv val, const char *kw)
{
	(void)kw;
	if (jv_get_kind(val) != JV_KIND_ARRAY)
		return compile_error(c, "'required' must be an array of strings");
	jv_array_foreach(val, i, name) {
		int bad = jv_get_kind(name) != JV_KIND_STRING;
		jv_free(name);
		if (bad)
			return compile_error(c, "'required' item %d is not a string", i);
	}
	n->required = jv_copy(val);
	return 0;
}

static int kw_pattern(struct compiler *c, struct node *n, jv val, const char *kw)
{
	(void)kw;
	if (jv_get_kind(val) != JV_KIND_STRING)
		return compile_error(c, "'pattern' must be a string");
	n->pattern = xcalloc(1, sizeof *n->pattern);
	return regex_compile(c, n->pattern, jv_string_value(val),
			     (size_t)jv_string_length_bytes(jv_copy(val)));
}

/* Where the subschema of additionalProperties, items or not goes. */
static struct node **schema_slot(struct node *n, const char *kw)
{
	return strcmp(kw, "additionalProperties") == 0 ? &n->additional :
	       strcmp(kw, "items") == 0 ? &n->items : &n->not_;
}

static struct node_list *schema_list(struct node *n, const char *kw)
{
	return strcmp(kw, "allOf") == 0 ? &n->all_of :
	       strcmp(kw, "anyOf") == 0 ? &n->any_of :
	       strcmp(kw, "oneOf") == 0 ? &n->one_of : &n->prefix;
}

static void prop_add(struct node *n, const char *name, size_t len, struct node *child)
{
	struct prop *p = &n->props[n->nprops++];

	p->name = xmalloc(len + 1);
	memcpy(p->name, name, len);
	p->name[len] = '\0';
	p->len = len;
	p->schema = child;
}

static int prop_cmp(const void *a, const void *b)
{
	const struct prop *x = a, *y = b;
	int r = memcmp(x->name, y->name, x->len < y->len ? x->len : y->len);

	return r ? r : (x->len > y->len) - (x->len < y->len);
}

/* Sorted for bsearch at validation (a jv object cost an allocation a name). */
static int props_sort(struct compiler *c, struct node *n)
{
	qsort(n->props, n->nprops, sizeof *n->props, prop_cmp);
	for (size_t i = 1; i < n->nprops; i++)
		if (prop_cmp(&n->props[i - 1], &n->props[i]) == 0)
			return compile_error(c, "duplicate property '%s' in 'properties'",
					     n->props[i].name);
	return 0;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decode %XX escapes (a $ref is a URI reference); -1 on a bad escape. */
static int percent_decode(char **out, const char *s)
{
	struct buf b = BUF_INIT;

	if (!strchr(s, '%')) {
		*out = xstrdup(s);
		return 0;
	}
	for (const char *p = s; *p; p++) {
		if (*p != '%') {
			buf_addch(&b, *p);
			continue;
		}
		int hi = hex_value(p[1]);
		int lo = hi < 0 ? -1 : hex_value(p[2]);

		if (lo < 0 || (hi == 0 && lo == 0)) {
			buf_release(&b);
			return -1;
		}
		buf_addch(&b, (char)(hi * 16 + lo));
		p += 2;
	}
	*out = buf_detach(&b, NULL);
	return 0;
}

static int kw_ref(struct compiler *c, struct node *n, jv val, const char *kw)
{
	(void)kw;
	if (jv_get_kind(val) != JV_KIND_STRING)
		return compile_error(c, "'$ref' must be a string");
	n->ref_text = xstrdup(jv_string_value(val));
	return 0;
}

/* ---- keywords that read their value's text: subschemas, string annotations ---- */

typedef int (*text_fn)(struct compiler *c, struct node *n, const char *kw, size_t off, int depth);

static const char *text_at(const struct compiler *c, size_t off)
{
	return c->s->text.text + off;
}

/* $schema, $comment, title, description: checked, not kept. */
static int lz_string(struct compiler *c, struct node *n, const char *kw, size_t off, int depth)
{
	(void)n;
	(void)depth;
	return *text_at(c, off) == '"' ? 0 : compile_error(c, "'%s' must be a string", kw);
}

/* The subschema whose text starts at off: a boolean one now, an object one
 * as a lazy node.  NULL with a message (at the current pointer). */
static struct node *lazy_node(struct compiler *c, size_t off, int depth)
{
	char ch = *text_at(c, off);
	struct node *n;

	if (depth > MAX_SCHEMA_DEPTH) {
		compile_error(c, "schema nested deeper than %d levels", MAX_SCHEMA_DEPTH);
		return NULL;
	}
	if (ch != '{' && ch != 't' && ch != 'f') {
		compile_error(c, "a schema must be an object or a boolean");
		return NULL;
	}
	n = node_new(c);
	n->depth = depth;
	n->is_bool = ch != '{';
	n->bool_value = ch == 't';
	n->state = ch == '{' ? NODE_LAZY : NODE_READY;
	n->text_off = off;
	return n;
}

static struct node *lazy_child(struct compiler *c, size_t off, const char *key, int depth)
{
	size_t old = schema_ptr_push(&c->ptr, key);
	struct node *n = lazy_node(c, off, depth + 1);

	buf_truncate(&c->ptr, old);
	return n;
}

static int lz_schema(struct compiler *c, struct node *n, const char *kw, size_t off, int depth)
{
	struct node *sub = lazy_child(c, off, kw, depth);

	if (!sub)
		return -1;
	*schema_slot(n, kw) = sub;
	return 0;
}

static int lz_items(struct compiler *c, struct node *n, const char *kw, size_t off, int depth)
{
	if (*text_at(c, off) == '[')
		return unsupported_error(c, "unsupported 'items' array (draft 2019-09 and older); "
				     "use 'prefixItems'");
	return lz_schema(c, n, kw, off, depth);
}

static int lz_schema_array(struct compiler *c, struct node *n, const char *kw, size_t off, int depth)
{
	struct node_list *list = schema_list(n, kw);
	struct text_iter it;
	size_t len, ioff, ilen;

	if (*text_at(c, off) != '[' || (len = schema_text_count(&c->s->text, off)) == 0)
		return compile_error(c, "'%s' must be a non-empty array of schemas", kw);
	list->v = xcalloc(len, sizeof *list->v);
	size_t old = schema_ptr_push(&c->ptr, kw);
	schema_text_iter(&it, &c->s->text, off);
	while (schema_text_next(&it, NULL, &ioff, &ilen)) {
		size_t mid = ptr_push_index(&c->ptr, list->n);
		struct node *sub = lazy_node(c, ioff, depth + 1);

		buf_truncate(&c->ptr, mid);
		if (!sub) {
			buf_truncate(&c->ptr, old);
			return -1;
		}
		list->v[list->n++] = sub;
	}
	buf_truncate(&c->ptr, old);
	return 0;
}

static int lz_schema_map(struct compiler *c, struct node *n, const char *kw, size_t off, int depth)
{
	int is_props = strcmp(kw, "properties") == 0;
	int is_pattern = strcmp(kw, "patternProperties") == 0;
	struct buf key = BUF_INIT;
	struct text_iter it;
	size_t len, voff, vlen;
	int rc = 0;

	if (*text_at(c, off) != '{')
		return compile_error(c, "'%s' must be an object of schemas", kw);
	len = schema_text_count(&c->s->text, off);
	if (is_props)
		n->props = xcalloc(len, sizeof *n->props);
	if (is_pattern)
		n->pprops = xcalloc(len, sizeof *n->pprops);
	size_t old = schema_ptr_push(&c->ptr, kw);
	schema_text_iter(&it, &c->s->text, off);
	while (rc == 0 && schema_text_next(&it, &key, &voff, &vlen)) {
		struct node *child = lazy_child(c, voff, key.buf, depth);

		if (!child) {
			rc = -1;
		} else if (is_props) {
			prop_add(n, key.buf, key.len, child);
		} else if (is_pattern) {
			struct pattern_prop *pp = &n->pprops[n->npprops];
			size_t mid = schema_ptr_push(&c->ptr, key.buf);

			pp->schema = child;
			rc = regex_compile(c, &pp->re, key.buf, key.len);
			buf_truncate(&c->ptr, mid);
			if (rc == 0)
				n->npprops++;
		}
	}
	buf_truncate(&c->ptr, old);
	buf_release(&key);
	return rc == 0 && is_props ? props_sort(c, n) : rc;
}

/* Neither handler: an annotation, whatever its value. */
static const struct {
	const char *name;
	text_fn text;           /* reads its value's text */
	value_fn value;         /* gets its value parsed (small values) */
} keywords[] = {
	{ "$schema", lz_string, NULL }, { "$id", NULL, kw_id },
	{ "$comment", lz_string, NULL }, { "title", lz_string, NULL },
	{ "description", lz_string, NULL }, { "format", NULL, kw_format },
	{ "default", NULL, NULL }, { "examples", NULL, NULL },
	{ "deprecated", NULL, NULL }, { "readOnly", NULL, NULL },
	{ "writeOnly", NULL, NULL },
	{ "type", NULL, kw_type }, { "enum", NULL, kw_enum }, { "const", NULL, kw_const },
	{ "properties", lz_schema_map, NULL }, { "patternProperties", lz_schema_map, NULL },
	{ "$defs", lz_schema_map, NULL }, { "definitions", lz_schema_map, NULL },
	{ "additionalProperties", lz_schema, NULL }, { "not", lz_schema, NULL },
	{ "items", lz_items, NULL }, { "prefixItems", lz_schema_array, NULL },
	{ "allOf", lz_schema_array, NULL }, { "anyOf", lz_schema_array, NULL },
	{ "oneOf", lz_schema_array, NULL },
	{ "required", NULL, kw_required }, { "pattern", NULL, kw_pattern },
	{ "uniqueItems", NULL, kw_unique },
	{ "minItems", NULL, kw_limit }, { "maxItems", NULL, kw_limit },
	{ "minLength", NULL, kw_limit }, { "maxLength", NULL, kw_limit },
	{ "minProperties", NULL, kw_limit }, { "maxProperties", NULL, kw_limit },
	{ "minimum", NULL, kw_limit }, { "maximum", NULL, kw_limit },
	{ "exclusiveMinimum", NULL, kw_limit }, { "exclusiveMaximum", NULL, kw_limit },
	{ "multipleOf", NULL, kw_limit },
	{ "$ref", NULL, kw_ref },
};

static int keyword_index(const char *kw)
{
	for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
		if (kw[0] == keywords[i].name[0] && strcmp(kw, keywords[i].name) == 0)
			return (int)i;
	return -1;
}

/* The value at off as json_parse() would make it, a plain string (most:
 * "type", "$ref", "pattern") without parsing it. */
static jv lazy_value(const struct compiler *c, size_t off, size_t len)
{
	const char *v = text_at(c, off);

	if (v[0] == '"' && !memchr(v + 1, '\\', len - 2))
		return jv_string_sized(v + 1, (int)len - 2);
	return json_parse(v, len);
}

/* One member of a lazy node: the subschema keywords read their text; the
 * annotations need no value; the rest get theirs parsed (small values).
 * (Text from schema_compile() is json_dumps' and has no duplicate keys.) */
static int lazy_keyword(struct compiler *c, struct node *n, const char *kw, size_t off, size_t len,
			uint64_t *seen)
{
	int i = keyword_index(kw);
	int rc;

	if (i < 0)
		return unsupported_error(c, "unsupported keyword '%s'", kw);
	/* libjq keeps the last of two equal keys; the text would show both */
	if (*seen & (UINT64_C(1) << i))
		return compile_error(c, "duplicate keyword '%s'", kw);
	*seen |= UINT64_C(1) << i;
	if (keywords[i].text)
		return keywords[i].text(c, n, kw, off, n->depth);
	if (!keywords[i].value)
		return 0;
	jv val = lazy_value(c, off, len);
	if ((*text_at(c, off) == '[' || *text_at(c, off) == '{') && !jv_is_valid(val)) {
		/* valid JSON (json_scan_depth), deeper than libjq parses */
		char *why = json_invalid_msg(val);

		rc = compile_error(c, "'%s' cannot be read: %s", kw, why);
		free(why);
		return rc;
	}
	rc = keywords[i].value(c, n, val, kw);
	jv_free(val);
	return rc;
}

/* A lazy schema's first error, whole, kept: every later validation reports it. */
static int lazy_failed(struct schema *s)
{
	struct buf b = BUF_INIT;

	if (s->error)
		return forge_error("%s", s->error);
	if (s->name)
		buf_addf(&b, "schema '%s': ", s->name);
	buf_adds(&b, forge_last_error());
	s->error = buf_detach(&b, NULL);
	return -1;
}

static int resolve_ref(struct schema *s, struct node *n);

/* Compile a lazy node from its text: its keywords, its subschemas as lazy
 * nodes (its children, made together), then its $ref. */
static int compile_lazy(struct node *n)
{
	struct schema *s = n->owner;
	struct compiler c = { s, BUF_INIT };
	struct buf key = BUF_INIT;
	struct text_iter it;
	uint64_t seen = 0;
	size_t off, len;
	int rc = 0;

	buf_adds(&c.ptr, n->pointer);
	n->first_child = s->n;
	schema_text_iter(&it, &s->text, n->text_off);
	while (rc == 0 && schema_text_next(&it, &key, &off, &len))
		rc = lazy_keyword(&c, n, key.buf, off, len, &seen);
	n->nchildren = s->n - n->first_child;
	/* ready before its $ref is followed: the ref may lead through it */
	n->state = rc == 0 ? NODE_READY : NODE_BAD;
	if (rc == 0 && n->ref_text && resolve_ref(s, n) < 0) {
		n->state = NODE_BAD;
		rc = -1;
	}
	buf_release(&key);
	buf_release(&c.ptr);
	return rc < 0 ? lazy_failed(s) : 0;
}

/* From the root down the children whose pointer starts the one sought,
 * compiling them on the way. */
int schema_find_pointer(struct node **out, struct schema *s, const char *pointer)
{
	struct node *cur = s->nodes[0];

	*out = NULL;
	while (strcmp(cur->pointer, pointer) != 0) {
		struct node *next = NULL;

		if (cur->state == NODE_LAZY && compile_lazy(cur) < 0)
			return -1;
		if (cur->state == NODE_BAD)
			return lazy_failed(s);
		for (size_t i = 0; i < cur->nchildren && !next; i++) {
			struct node *ch = s->nodes[cur->first_child + i];
			size_t plen = strlen(ch->pointer);

			if (strncmp(ch->pointer, pointer, plen) == 0 &&
			    (pointer[plen] == '/' || pointer[plen] == '\0'))
				next = ch;
		}
		if (!next)
			return 0;
		cur = next;
	}
	*out = cur;
	return 0;
}

/*
 * The fragment of a $ref that stays inside this document: "#..." itself, or
 * the part after the root's own $id ("urn:x#/$defs/a" in a schema whose $id
 * is "urn:x").  NULL for anything else (another document).
 */
static const char *local_fragment(const struct schema *s, const char *ref)
{
	size_t idlen = s->id ? strlen(s->id) : 0;

	if (ref[0] == '#')
		return ref;
	if (idlen && strncmp(ref, s->id, idlen) == 0 && ref[idlen] == '\0')
		return "#";
	if (idlen && strncmp(ref, s->id, idlen) == 0 && ref[idlen] == '#')
		return ref + idlen;
	return NULL;
}

/* Resolve n's $ref, compiling the nodes on the pointer's way. */
static int resolve_ref(struct schema *s, struct node *n)
{
	const char *frag = local_fragment(s, n->ref_text);

	if (!frag || (frag[1] != '\0' && frag[1] != '/'))
		mark_unsupported(s);
	if (!frag)
		return forge_error("#%s: unsupported $ref '%s' (only refs within this document "
				   "are supported)", n->pointer, n->ref_text);
	if (frag[1] != '\0' && frag[1] != '/')
		return forge_error("#%s: unsupported $ref '%s' (anchors are not supported)",
				   n->pointer, n->ref_text);
	if (percent_decode(&n->ref, frag + 1) < 0)
		return forge_error("#%s: malformed percent-escape in $ref '%s'", n->pointer,
				   n->ref_text);
	if (schema_find_pointer(&n->ref_target, s, n->ref) < 0)
		return -1;
	if (!n->ref_target)
		return forge_error("#%s: $ref '%s' does not point to a schema in this document",
				   n->pointer, n->ref_text);
	return 0;
}

/*
 * $ref, allOf, anyOf, oneOf and not apply their subschemas to the same
 * instance; a cycle made only of those edges would recurse forever on any
 * input, so it is refused here (depth-first search over node.mark, 1 = on
 * the stack).  The nodes it reaches are compiled on the way.
 */
static int check_cycles_from(struct node *n, int depth)
{
	if (n->mark == 2)
		return 0;
	if (n->mark == 1) {
		mark_unsupported(n->owner);
		return forge_error("#%s: $ref cycle that never descends into the instance",
				   n->pointer);
	}
	/* a chain of these is as long as the document makes it ($defs d0 ->
	 * d1 -> ... in a shallow text): bounded here, as validation bounds its
	 * recursion, so that a hostile schema (an MCP server's) cannot overflow
	 * the stack */
	if (depth >= MAX_VALIDATE_DEPTH) {
		mark_unsupported(n->owner);
		return forge_error("#%s: $ref, allOf, anyOf, oneOf and not chained deeper than %d levels",
				   n->pointer, MAX_VALIDATE_DEPTH);
	}
	if (n->state == NODE_LAZY && compile_lazy(n) < 0)
		return -1;
	if (n->state == NODE_BAD)
		return lazy_failed(n->owner);

	const struct node_list *lists[] = { &n->all_of, &n->any_of, &n->one_of };
	struct node *single[] = { n->ref_target, n->not_ };

	n->mark = 1;
	for (size_t i = 0; i < 2; i++)
		if (single[i] && check_cycles_from(single[i], depth + 1) < 0)
			return -1;
	for (size_t l = 0; l < 3; l++)
		for (size_t i = 0; i < lists[l]->n; i++)
			if (check_cycles_from(lists[l]->v[i], depth + 1) < 0)
				return -1;
	n->mark = 2;
	return 0;
}

int schema_node_ready(struct node *n)
{
	if (n->mark == 2)
		return 0;
	if (check_cycles_from(n, 0) < 0)
		return lazy_failed(n->owner);
	return 0;
}

static int schema_compile_lazy_checked(struct schema **out, const char *text, size_t len, bool *unsupported)
{
	struct compiler c = { xcalloc(1, sizeof *c.s), BUF_INIT };
	struct node *root = NULL;

	*out = NULL;
	if (schema_text_index(&c.s->text, text, len) == 0)
		root = lazy_node(&c, schema_text_start(&c.s->text), 0);
	buf_release(&c.ptr);
	/* the root now: its $id says which $refs stay in the document */
	if (!root || (root->state == NODE_LAZY && compile_lazy(root) < 0)) {
		if (unsupported)
			*unsupported = c.s->unsupported;
		schema_free(c.s);
		return -1;
	}
	*out = c.s;
	return 0;
}

int schema_compile_lazy(struct schema **out, const char *text, size_t len)
{
	return schema_compile_lazy_checked(out, text, len, NULL);
}

pthread_mutex_t schema_mutex = PTHREAD_MUTEX_INITIALIZER;

int schema_compile_rest(struct schema *s)
{
	int rc = 0;

	pthread_mutex_lock(&schema_mutex);
	/* s->n grows as the loop compiles: each new node is reached too */
	for (size_t i = 0; i < s->n && rc == 0; i++)
		rc = schema_node_ready(s->nodes[i]);
	pthread_mutex_unlock(&schema_mutex);
	return rc;
}

/* The lazy compiler over the document's own text, then the rest of it:
 * eager, every error reported now. */
int schema_compile_checked(struct schema **out, jv doc, bool *unsupported)
{
	char *text = json_dumps(doc, false);
	struct schema *s;

	*out = NULL;
	if (unsupported)
		*unsupported = false;
	if (schema_compile_lazy_checked(&s, text, strlen(text), unsupported) < 0) {
		free(text);
		return -1;
	}
	s->text_owned = text;
	if (schema_compile_rest(s) < 0) {
		if (unsupported)
			*unsupported = s->unsupported;
		schema_free(s);
		return -1;
	}
	*out = s;
	return 0;
}

int schema_compile(struct schema **out, jv doc)
{
	return schema_compile_checked(out, doc, NULL);
}

/* ----------------------------------------------------- embedded schemas -- */

static struct cached {
	char *name;
	struct schema *schema;
} *cache;
static size_t ncache;

const struct schema *schema_get(const char *name)
{
	const struct resource *r;
	struct schema *s = NULL;

	pthread_mutex_lock(&schema_mutex);
	for (size_t i = 0; i < ncache; i++)
		if (strcmp(cache[i].name, name) == 0) {
			s = cache[i].schema;
			goto out;
		}
	r = resource_find(name);
	if (!r) {
		forge_error("no embedded schema '%s'", name);
		goto out;
	}
	if (schema_compile_lazy(&s, r->data, r->len) < 0) {
		forge_error_prefix("schema '%s'", name);
		s = NULL;
		goto out;
	}
	s->name = xstrdup(name);
	cache = xrealloc(cache, (ncache + 1) * sizeof *cache);
	cache[ncache].name = xstrdup(name);
	cache[ncache++].schema = s;
out:
	pthread_mutex_unlock(&schema_mutex);
	return s;
}

/* A member a tool's schema has for its author, not for the model. */
static bool tool_note(const char *key, size_t len)
{
	static const char *const drop[] = { "$schema", "$id", "title", "description", "$comment" };

	for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
		if (strlen(drop[i]) == len && !memcmp(drop[i], key, len))
			return true;
	return false;
}

struct tool_text {
	jv input, description;
	bool failed;            /* a key with an escape, a value that does not parse */
};

static void tool_member(const char *key, size_t key_len, const char *value, size_t value_len, void *payload)
{
	struct tool_text *t = payload;
	bool description = key_len == 11 && !memcmp(key, "description", 11);
	jv v;

	t->failed = t->failed || memchr(key, '\\', key_len);
	if (t->failed || (!description && tool_note(key, key_len)))
		return;
	v = json_parse(value, value_len);
	if (!jv_is_valid(v)) {
		jv_free(v);
		t->failed = true;
	} else if (description) {
		jv_free(t->description);
		t->description = v;
	} else {        /* a key met again keeps its place, as libjq's parser does */
		t->input = jv_object_set(t->input, jv_string_sized(key, (int)key_len), v);
	}
}

/* The whole document parsed, then the notes deleted. */
static jv tool_input_parsed(jv *description, const struct resource *r)
{
	static const char *const drop[] = { "$schema", "$id", "title", "description", "$comment", NULL };
	jv s = json_parse(r->data, r->len);

	*description = json_get(s, "description");
	for (size_t i = 0; drop[i]; i++)
		if (json_has(s, drop[i]))
			s = jv_object_delete(s, jv_string(drop[i]));
	return s;
}

jv schema_tool_input(jv *description, const char *name)
{
	const struct resource *r = resource_find(name);
	struct tool_text t = { JSON_NULL, JSON_NULL, false };

	*description = jv_null();
	if (!r)
		return jv_invalid();
	t.input = jv_object();
	if (json_skim_members(r->data, r->len, tool_member, &t) < 0 || t.failed) {
		jv_free(t.input);
		jv_free(t.description);
		return tool_input_parsed(description, r);
	}
	*description = t.description;
	return t.input;
}

jv schema_tool_spec(const char *name)
{
	char path[256];
	jv desc;

	snprintf(path, sizeof path, "tools/%s.json", name);
	jv s = schema_tool_input(&desc, path);
	if (jv_get_kind(s) != JV_KIND_OBJECT) {
		jv_free(s);
		jv_free(desc);
		desc = jv_null();
		s = json_set(jv_object(), "type", jv_string("object"));
	}
	if (jv_get_kind(desc) != JV_KIND_STRING) {
		jv_free(desc);
		desc = jv_string(name);
	}
	jv spec = json_set(jv_object(), "name", jv_string(name));

	spec = json_set(spec, "description", desc);
	return json_set(spec, "input_schema", s);
}

jv schema_regex_version(void)
{
	char v[64] = "";

	/* PCRE2_CONFIG_VERSION writes a string of at most 24 code units */
	if (pcre2_config(PCRE2_CONFIG_VERSION, v) <= 0)
		return jv_null();
	return jv_string(v);
}
