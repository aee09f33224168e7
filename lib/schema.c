/*
 * schema.c - a JSON Schema (draft 2020-12 subset) validator over jv values.
 *
 * schema_compile() turns the document into a graph of `struct node`, one per
 * subschema, after checking every keyword: anything this file does not
 * implement is refused, because a validator that skips a keyword it does not
 * know says "valid" to data the schema author meant to reject.  Every node is
 * also registered under its JSON pointer, which is how local $refs are
 * resolved (after the whole document is compiled, so forward references
 * work) and how schema_validate_def() finds "#/$defs/<name>".
 *
 * Validation walks the node graph and the instance together.  It stops at the
 * first error; the message names the instance path in jq syntax.  Sub-checks
 * whose failure is not itself an error (the branches of anyOf/oneOf/not) run
 * "quiet", building neither paths nor messages.
 */
#include "schema.h"
#include "buf.h"
#include "forge.h"
#include "json.h"
#include "resource.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Deeper than any sane schema; guards the C stack against hostile input. */
#define MAX_SCHEMA_DEPTH 256
#define MAX_VALIDATE_DEPTH 2048

enum type_bit {
	T_NULL = 1 << 0,
	T_BOOLEAN = 1 << 1,
	T_OBJECT = 1 << 2,
	T_ARRAY = 1 << 3,
	T_NUMBER = 1 << 4,
	T_STRING = 1 << 5,
	T_INTEGER = 1 << 6
};

static const struct {
	const char *name;
	unsigned bit;
} type_names[] = {
	{ "null", T_NULL }, { "boolean", T_BOOLEAN }, { "object", T_OBJECT },
	{ "array", T_ARRAY }, { "number", T_NUMBER }, { "string", T_STRING },
	{ "integer", T_INTEGER },
};

/* Numeric limits, indexed into node.lim[]; a bit in node.has says it is set. */
enum limit {
	L_MIN_ITEMS, L_MAX_ITEMS, L_MIN_LENGTH, L_MAX_LENGTH, L_MIN_PROPS, L_MAX_PROPS,
	L_MINIMUM, L_MAXIMUM, L_EXCL_MIN, L_EXCL_MAX, L_MULTIPLE_OF, L_COUNT
};

struct regex {
	char *source;
	pcre2_code *code;
	pcre2_match_data *md;   /* reused: validation is single-threaded */
};

struct pattern_prop {
	struct regex re;
	struct node *schema;
};

struct node_list {
	struct node **v;
	size_t n;
};

struct node {
	int is_bool;            /* a boolean schema: true or false */
	int bool_value;
	unsigned types;         /* 0 = any type */
	double lim[L_COUNT];
	unsigned has;           /* 1 << enum limit */
	int has_enum, has_const, unique;
	jv enum_vals, const_val;
	jv prop_index;          /* object: name -> index into props (or null) */
	struct node_list props;
	struct pattern_prop *pprops;
	size_t npprops;
	struct node *additional;
	jv required;            /* array of strings, or null */
	struct node_list prefix;
	struct node *items;
	struct regex *pattern;
	struct node_list all_of, any_of, one_of;
	struct node *not_;
	char *ref;              /* the $ref pointer, percent-decoded, without '#' */
	char *ref_text;         /* as written, for messages */
	struct node *ref_target;
	char *pointer;          /* where this node is in the document ("" = root) */
	size_t index;           /* position in schema.nodes */
};

struct schema {
	struct node **nodes;    /* every node, owned; nodes[0] is the root */
	size_t n, alloc;
	char *id;               /* the root's $id, or NULL */
};

struct compiler {
	struct schema *s;
	struct buf ptr;         /* JSON pointer of the node being compiled */
};

/* ---------------------------------------------------------------- nodes -- */

static struct node *node_new(struct compiler *c)
{
	struct node *n = xcalloc(1, sizeof *n);

	n->enum_vals = jv_null();
	n->const_val = jv_null();
	n->prop_index = jv_null();
	n->required = jv_null();
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
	jv_free(n->prop_index);
	jv_free(n->required);
	free(n->props.v);
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
	free(s);
}

/* ------------------------------------------------------------- compiling -- */

/* "#/properties/x" for messages: the pointer of the node being compiled plus
 * an optional keyword. */
static int compile_error(struct compiler *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int compile_error(struct compiler *c, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	va_list ap;

	buf_addf(&msg, "#%s: ", c->ptr.buf);
	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	forge_error("%s", msg.buf);
	buf_release(&msg);
	return -1;
}

/* Append "/token" with RFC 6901 escaping; returns the length to restore. */
static size_t ptr_push(struct buf *b, const char *token)
{
	size_t old = b->len;

	buf_addch(b, '/');
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

static void buf_truncate(struct buf *b, size_t len)
{
	if (len < b->len) {
		b->len = len;
		b->buf[len] = '\0';
	}
}

static struct node *compile_node(struct compiler *c, jv doc, int depth);

/* Compile doc[key] (a subschema) with the pointer extended by `key`. */
static struct node *compile_child(struct compiler *c, jv sub, const char *key, int depth)
{
	size_t old = ptr_push(&c->ptr, key);
	struct node *n = compile_node(c, sub, depth + 1);

	buf_truncate(&c->ptr, old);
	return n;
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
		return compile_error(c, "invalid regular expression '%s' at offset %zu: %s",
				     src, (size_t)off, (const char *)text);
	}
	re->md = pcre2_match_data_create_from_pattern(re->code, NULL);
	re->source = xstrndup(src, len);
	return 0;
}

/* JSON Schema regexes are not anchored: a match anywhere counts. */
static bool regex_search(const struct regex *re, const char *s, size_t len)
{
	return pcre2_match(re->code, (PCRE2_SPTR)s, len, 0, 0, re->md, NULL) >= 0;
}

/* ---- keyword handlers: each checks its value and fills the node. ---- */

typedef int (*keyword_fn)(struct compiler *c, struct node *n, jv val, const char *kw, int depth);

static int kw_annotation(struct compiler *c, struct node *n, jv val, const char *kw, int depth)
{
	(void)c;
	(void)n;
	(void)val;
	(void)kw;
	(void)depth;
	return 0;
}

static int kw_string_annotation(struct compiler *c, struct node *n, jv val, const char *kw,
				int depth)
{
	(void)n;
	(void)depth;
	if (jv_get_kind(val) != JV_KIND_STRING)
		return compile_error(c, "'%s' must be a string", kw);
	return 0;
}

/* $id only names the document: below the root it would start an embedded
 * resource with its own base URI, which changes what "#/..." refers to. */
static int kw_id(struct compiler *c, struct node *n, jv val, const char *kw, int depth)
{
	if (kw_string_annotation(c, n, val, kw, depth) < 0)
		return -1;
	if (c->ptr.len != 0)
		return compile_error(c, "unsupported keyword '$id' below the root "
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
	for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++) {
		if (strcmp(jv_string_value(name), type_names[i].name) == 0) {
			*out = type_names[i].bit;
			return 0;
		}
	}
	return -1;
}

static int kw_type(struct compiler *c, struct node *n, jv val, const char *kw, int depth)
{
	unsigned bit;

	(void)kw;
	(void)depth;
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

static int kw_enum(struct compiler *c, struct node *n, jv val, const char *kw, int depth)
{
	(void)kw;
	(void)depth;
	if (jv_get_kind(val) != JV_KIND_ARRAY)
		return compile_error(c, "'enum' must be an array");
	n->has_enum = 1;
	n->enum_vals = jv_copy(val);
	return 0;
}

static int kw_const(struct compiler *c, struct node *n, jv val, const char *kw, int depth)
{
	(void)c;
	(void)kw;
	(void)depth;
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

static int kw_limit(struct compiler *c, struct node *n, jv val, const char *kw, int depth)
{
	(void)depth;
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
	return compile_error(c, "unsupported keyword '%s'", kw);
}

static int kw_unique(struct compiler *c, struct node *n, jv val, const char *kw, int depth)
{
	(void)kw;
	(void)depth;
	if (jv_get_kind(val) != JV_KIND_TRUE && jv_get_kind(val) != JV_KIND_FALSE)
		return compile_error(c, "'uniqueItems' must be a boolean");
	n->unique = jv_get_kind(val) == JV_KIND_TRUE;
	return 0;
}

static int kw_required(struct compiler *c, struct node *n, jv val, const char *kw, int depth)
{
	(void)kw;
	(void)depth;
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

static int kw_pattern(struct compiler *c, struct node *n, jv val, const char *kw, int depth)
{
	(void)kw;
	(void)depth;
	if (jv_get_kind(val) != JV_KIND_STRING)
		return compile_error(c, "'pattern' must be a string");
	n->pattern = xcalloc(1, sizeof *n->pattern);
	return regex_compile(c, n->pattern, jv_string_value(val),
			     (size_t)jv_string_length_bytes(jv_copy(val)));
}

/* A keyword whose value is one subschema. */
static int kw_schema(struct compiler *c, struct node *n, jv val, const char *kw, int depth)
{
	struct node *sub = compile_child(c, jv_copy(val), kw, depth);

	if (!sub)
		return -1;
	if (strcmp(kw, "additionalProperties") == 0)
		n->additional = sub;
	else if (strcmp(kw, "items") == 0)
		n->items = sub;
	else
		n->not_ = sub;
	return 0;
}

/* A keyword whose value is an array of subschemas. */
static int kw_schema_array(struct compiler *c, struct node *n, jv val, const char *kw, int depth)
{
	struct node_list *list = strcmp(kw, "allOf") == 0 ? &n->all_of :
				 strcmp(kw, "anyOf") == 0 ? &n->any_of :
				 strcmp(kw, "oneOf") == 0 ? &n->one_of : &n->prefix;
	int len;

	if (jv_get_kind(val) != JV_KIND_ARRAY || (len = jv_array_length(jv_copy(val))) == 0)
		return compile_error(c, "'%s' must be a non-empty array of schemas", kw);
	list->v = xcalloc((size_t)len, sizeof *list->v);
	size_t old = ptr_push(&c->ptr, kw);
	for (int i = 0; i < len; i++) {
		size_t mid = ptr_push_index(&c->ptr, (size_t)i);
		struct node *sub = compile_node(c, jv_array_get(jv_copy(val), i), depth + 1);

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

/* properties, patternProperties, $defs and definitions: name -> subschema. */
static int kw_schema_map(struct compiler *c, struct node *n, jv val, const char *kw, int depth)
{
	int rc = 0;
	int is_props = strcmp(kw, "properties") == 0;
	int is_pattern = strcmp(kw, "patternProperties") == 0;

	if (jv_get_kind(val) != JV_KIND_OBJECT)
		return compile_error(c, "'%s' must be an object of schemas", kw);
	int len = jv_object_length(jv_copy(val));
	if (is_props) {
		n->props.v = xcalloc((size_t)len, sizeof *n->props.v);
		n->prop_index = jv_object();
	}
	if (is_pattern)
		n->pprops = xcalloc((size_t)len, sizeof *n->pprops);
	size_t old = ptr_push(&c->ptr, kw);
	jv_object_foreach(val, key, sub) {
		if (rc == 0) {
			struct node *child = compile_child(c, jv_copy(sub), jv_string_value(key), depth);

			if (!child) {
				rc = -1;
			} else if (is_props) {
				n->prop_index = jv_object_set(n->prop_index, jv_copy(key),
							      jv_number((double)n->props.n));
				n->props.v[n->props.n++] = child;
			} else if (is_pattern) {
				struct pattern_prop *pp = &n->pprops[n->npprops];

				size_t mid = ptr_push(&c->ptr, jv_string_value(key));

				pp->schema = child;
				rc = regex_compile(c, &pp->re, jv_string_value(key),
						   (size_t)jv_string_length_bytes(jv_copy(key)));
				buf_truncate(&c->ptr, mid);
				if (rc == 0)
					n->npprops++;
			}
		}
		jv_free(key);
		jv_free(sub);
	}
	buf_truncate(&c->ptr, old);
	return rc;
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

static int kw_ref(struct compiler *c, struct node *n, jv val, const char *kw, int depth)
{
	(void)kw;
	(void)depth;
	if (jv_get_kind(val) != JV_KIND_STRING)
		return compile_error(c, "'$ref' must be a string");
	n->ref_text = xstrdup(jv_string_value(val));
	return 0;
}

static int kw_items(struct compiler *c, struct node *n, jv val, const char *kw, int depth)
{
	if (jv_get_kind(val) == JV_KIND_ARRAY)
		return compile_error(c, "unsupported 'items' array (draft 2019-09 and older); "
				     "use 'prefixItems'");
	return kw_schema(c, n, val, kw, depth);
}

static const struct {
	const char *name;
	keyword_fn fn;
} keywords[] = {
	{ "$schema", kw_string_annotation }, { "$id", kw_id },
	{ "$comment", kw_string_annotation }, { "title", kw_string_annotation },
	{ "description", kw_string_annotation }, { "format", kw_string_annotation },
	{ "default", kw_annotation }, { "examples", kw_annotation },
	{ "deprecated", kw_annotation }, { "readOnly", kw_annotation },
	{ "writeOnly", kw_annotation },
	{ "type", kw_type }, { "enum", kw_enum }, { "const", kw_const },
	{ "properties", kw_schema_map }, { "patternProperties", kw_schema_map },
	{ "$defs", kw_schema_map }, { "definitions", kw_schema_map },
	{ "additionalProperties", kw_schema }, { "not", kw_schema },
	{ "items", kw_items }, { "prefixItems", kw_schema_array },
	{ "allOf", kw_schema_array }, { "anyOf", kw_schema_array }, { "oneOf", kw_schema_array },
	{ "required", kw_required }, { "pattern", kw_pattern }, { "uniqueItems", kw_unique },
	{ "minItems", kw_limit }, { "maxItems", kw_limit }, { "minLength", kw_limit },
	{ "maxLength", kw_limit }, { "minProperties", kw_limit }, { "maxProperties", kw_limit },
	{ "minimum", kw_limit }, { "maximum", kw_limit }, { "exclusiveMinimum", kw_limit },
	{ "exclusiveMaximum", kw_limit }, { "multipleOf", kw_limit },
	{ "$ref", kw_ref },
};

static int compile_keyword(struct compiler *c, struct node *n, const char *kw, jv val, int depth)
{
	for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
		if (strcmp(kw, keywords[i].name) == 0)
			return keywords[i].fn(c, n, val, kw, depth);
	return compile_error(c, "unsupported keyword '%s'", kw);
}

/* Compile one subschema.  Consumes doc.  NULL with a message on error. */
static struct node *compile_node(struct compiler *c, jv doc, int depth)
{
	struct node *n;
	int rc = 0;

	if (depth > MAX_SCHEMA_DEPTH) {
		jv_free(doc);
		compile_error(c, "schema nested deeper than %d levels", MAX_SCHEMA_DEPTH);
		return NULL;
	}
	switch (jv_get_kind(doc)) {
	case JV_KIND_TRUE:
	case JV_KIND_FALSE:
		n = node_new(c);
		n->is_bool = 1;
		n->bool_value = jv_get_kind(doc) == JV_KIND_TRUE;
		jv_free(doc);
		return n;
	case JV_KIND_OBJECT:
		break;
	default:
		jv_free(doc);
		compile_error(c, "a schema must be an object or a boolean");
		return NULL;
	}
	n = node_new(c);
	jv_object_foreach(doc, key, val) {
		if (rc == 0)
			rc = compile_keyword(c, n, jv_string_value(key), val, depth);
		jv_free(key);
		jv_free(val);
	}
	jv_free(doc);
	return rc == 0 ? n : NULL;
}

static struct node *find_pointer(const struct schema *s, const char *pointer)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->nodes[i]->pointer, pointer) == 0)
			return s->nodes[i];
	return NULL;
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

static int resolve_ref(struct schema *s, struct node *n)
{
	const char *frag = local_fragment(s, n->ref_text);

	if (!frag)
		return forge_error("#%s: unsupported $ref '%s' (only refs within this document "
				   "are supported)", n->pointer, n->ref_text);
	if (frag[1] != '\0' && frag[1] != '/')
		return forge_error("#%s: unsupported $ref '%s' (anchors are not supported)",
				   n->pointer, n->ref_text);
	if (percent_decode(&n->ref, frag + 1) < 0)
		return forge_error("#%s: malformed percent-escape in $ref '%s'", n->pointer,
				   n->ref_text);
	n->ref_target = find_pointer(s, n->ref);
	if (!n->ref_target)
		return forge_error("#%s: $ref '%s' does not point to a schema in this document",
				   n->pointer, n->ref_text);
	return 0;
}

/* After the whole document is compiled, so refs may point forward. */
static int resolve_refs(struct schema *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->nodes[i]->ref_text && resolve_ref(s, s->nodes[i]) < 0)
			return -1;
	return 0;
}

/*
 * $ref, allOf, anyOf, oneOf and not apply their subschemas to the same
 * instance; a cycle made only of those edges would recurse forever on any
 * input, so it is refused here (depth-first search, 1 = on the stack).
 */
static int check_cycles_from(const struct schema *s, struct node *n, unsigned char *state)
{
	const struct node_list *lists[] = { &n->all_of, &n->any_of, &n->one_of };
	struct node *single[] = { n->ref_target, n->not_ };

	if (state[n->index] == 2)
		return 0;
	if (state[n->index] == 1)
		return forge_error("#%s: $ref cycle that never descends into the instance",
				   n->pointer);
	state[n->index] = 1;
	for (size_t i = 0; i < 2; i++)
		if (single[i] && check_cycles_from(s, single[i], state) < 0)
			return -1;
	for (size_t l = 0; l < 3; l++)
		for (size_t i = 0; i < lists[l]->n; i++)
			if (check_cycles_from(s, lists[l]->v[i], state) < 0)
				return -1;
	state[n->index] = 2;
	return 0;
}

static int check_cycles(const struct schema *s)
{
	unsigned char *state = xcalloc(s->n, 1);
	int rc = 0;

	for (size_t i = 0; i < s->n && rc == 0; i++)
		rc = check_cycles_from(s, s->nodes[i], state);
	free(state);
	return rc;
}

int schema_compile(struct schema **out, jv doc)
{
	struct compiler c = { xcalloc(1, sizeof *c.s), BUF_INIT };

	*out = NULL;
	if (!compile_node(&c, doc, 0) || resolve_refs(c.s) < 0 || check_cycles(c.s) < 0) {
		buf_release(&c.ptr);
		schema_free(c.s);
		return -1;
	}
	buf_release(&c.ptr);
	*out = c.s;
	return 0;
}

/* ------------------------------------------------------------ validation -- */

struct vctx {
	int quiet;              /* answer only: no paths, no messages */
	int depth;
	struct buf path;        /* jq-style path of the current instance */
	char *msg;              /* the first error, "path: what" */
};

static bool fail(struct vctx *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool fail(struct vctx *v, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;

	if (v->quiet || v->msg)
		return false;
	buf_adds(&b, v->path.len ? v->path.buf : ".");
	buf_adds(&b, ": ");
	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	v->msg = buf_detach(&b, NULL);
	return false;
}

static bool is_identifier(const char *s, size_t len)
{
	if (len == 0 || !(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
		return false;
	for (size_t i = 1; i < len; i++)
		if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

/* Extend the path with .key (or ."odd key"); borrows key. */
static size_t path_push_key(struct vctx *v, jv key)
{
	size_t old = v->path.len;
	const char *s = jv_string_value(key);
	size_t len = (size_t)jv_string_length_bytes(jv_copy(key));

	if (v->quiet)
		return old;
	buf_addch(&v->path, '.');
	if (is_identifier(s, len)) {
		buf_add(&v->path, s, len);
	} else {
		jv q = jv_dump_string(jv_copy(key), 0);
		buf_adds(&v->path, jv_string_value(q));
		jv_free(q);
	}
	return old;
}

static size_t path_push_index(struct vctx *v, int i)
{
	size_t old = v->path.len;

	if (!v->quiet)
		buf_addf(&v->path, "%s[%d]", v->path.len ? "" : ".", i);
	return old;
}

static const char *kind_name(jv x)
{
	switch (jv_get_kind(x)) {
	case JV_KIND_NULL: return "null";
	case JV_KIND_TRUE:
	case JV_KIND_FALSE: return "boolean";
	case JV_KIND_NUMBER: return "number";
	case JV_KIND_STRING: return "string";
	case JV_KIND_ARRAY: return "array";
	case JV_KIND_OBJECT: return "object";
	default: return "invalid";
	}
}

static bool is_integer(double d)
{
	return isfinite(d) && d == floor(d);
}

static unsigned instance_types(jv x)
{
	switch (jv_get_kind(x)) {
	case JV_KIND_NULL: return T_NULL;
	case JV_KIND_TRUE:
	case JV_KIND_FALSE: return T_BOOLEAN;
	case JV_KIND_NUMBER:
		return T_NUMBER | (is_integer(jv_number_value(x)) ? T_INTEGER : 0);
	case JV_KIND_STRING: return T_STRING;
	case JV_KIND_ARRAY: return T_ARRAY;
	case JV_KIND_OBJECT: return T_OBJECT;
	default: return 0;
	}
}

/* A short rendering of a value for messages: strings bare, others as JSON,
 * cut at `max` bytes. */
static void add_value(struct buf *b, jv x, size_t max)
{
	jv s = jv_get_kind(x) == JV_KIND_STRING ? jv_copy(x) : jv_dump_string(jv_copy(x), 0);
	size_t len = (size_t)jv_string_length_bytes(jv_copy(s));

	if (len > max) {
		buf_add(b, jv_string_value(s), max);
		buf_adds(b, "...");
	} else {
		buf_add(b, jv_string_value(s), len);
	}
	jv_free(s);
}

static bool check_type(struct vctx *v, const struct node *n, jv x)
{
	struct buf want = BUF_INIT;
	unsigned got = instance_types(x);

	if (!n->types || (n->types & got))
		return true;
	for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++) {
		if (n->types & type_names[i].bit) {
			if (want.len)
				buf_adds(&want, " or ");
			buf_adds(&want, type_names[i].name);
		}
	}
	fail(v, "expected %s, got %s", want.buf, kind_name(x));
	buf_release(&want);
	return false;
}

static bool check_enum(struct vctx *v, const struct node *n, jv x)
{
	struct buf list = BUF_INIT;
	int len = jv_array_length(jv_copy(n->enum_vals));

	for (int i = 0; i < len; i++) {
		jv e = jv_array_get(jv_copy(n->enum_vals), i);
		bool eq = jv_equal(e, jv_copy(x));

		if (eq)
			return true;
	}
	if (v->quiet)
		return false;
	for (int i = 0; i < len && list.len < 160; i++) {
		jv e = jv_array_get(jv_copy(n->enum_vals), i);

		if (i)
			buf_adds(&list, ", ");
		add_value(&list, e, 40);
		jv_free(e);
		if (i + 1 < len && list.len >= 160)
			buf_adds(&list, ", ...");
	}
	fail(v, "value is not one of the allowed values (%s)", list.buf);
	buf_release(&list);
	return false;
}

static bool check_const(struct vctx *v, const struct node *n, jv x)
{
	struct buf want = BUF_INIT;

	if (jv_equal(jv_copy(n->const_val), jv_copy(x)))
		return true;
	if (!v->quiet) {
		add_value(&want, n->const_val, 80);
		fail(v, "value must be %s", want.buf);
		buf_release(&want);
	}
	return false;
}

static bool validate(struct vctx *v, const struct node *n, jv x);

/* Validate x against n with the path extended; borrows x. */
static bool validate_at_key(struct vctx *v, const struct node *n, jv key, jv x)
{
	size_t old = path_push_key(v, key);
	bool ok = validate(v, n, x);

	buf_truncate(&v->path, old);
	return ok;
}

static bool validate_at_index(struct vctx *v, const struct node *n, int i, jv x)
{
	size_t old = path_push_index(v, i);
	bool ok = validate(v, n, x);

	buf_truncate(&v->path, old);
	return ok;
}

/* One member of an object: properties, then patternProperties, and
 * additionalProperties only when neither named it. */
static bool check_member(struct vctx *v, const struct node *n, jv key, jv val)
{
	bool matched = false;
	const char *k = jv_string_value(key);
	size_t klen = (size_t)jv_string_length_bytes(jv_copy(key));

	if (jv_get_kind(n->prop_index) == JV_KIND_OBJECT) {
		jv idx = jv_object_get(jv_copy(n->prop_index), jv_copy(key));

		if (jv_get_kind(idx) == JV_KIND_NUMBER) {
			matched = true;
			if (!validate_at_key(v, n->props.v[(size_t)jv_number_value(idx)], key, val)) {
				jv_free(idx);
				return false;
			}
		}
		jv_free(idx);
	}
	for (size_t i = 0; i < n->npprops; i++) {
		if (!regex_search(&n->pprops[i].re, k, klen))
			continue;
		matched = true;
		if (!validate_at_key(v, n->pprops[i].schema, key, val))
			return false;
	}
	if (matched || !n->additional)
		return true;
	if (n->additional->is_bool && !n->additional->bool_value) {
		struct buf name = BUF_INIT;

		if (!v->quiet) {
			add_value(&name, key, 80);
			fail(v, "unexpected property '%s'", name.buf);
			buf_release(&name);
		}
		return false;
	}
	return validate_at_key(v, n->additional, key, val);
}

static bool check_count(struct vctx *v, const struct node *n, double count, enum limit min,
			enum limit max, const char *what)
{
	if ((n->has & (1u << min)) && count < n->lim[min])
		return fail(v, "expected at least %.0f %s, got %.0f", n->lim[min], what, count);
	if ((n->has & (1u << max)) && count > n->lim[max])
		return fail(v, "expected at most %.0f %s, got %.0f", n->lim[max], what, count);
	return true;
}

static bool check_object(struct vctx *v, const struct node *n, jv x)
{
	bool ok = true;

	if (!check_count(v, n, jv_object_length(jv_copy(x)), L_MIN_PROPS, L_MAX_PROPS, "properties"))
		return false;
	if (jv_get_kind(n->required) == JV_KIND_ARRAY) {
		jv_array_foreach(n->required, i, name) {
			if (ok && !jv_object_has(jv_copy(x), jv_copy(name)))
				ok = fail(v, "required property '%s' is missing", jv_string_value(name));
			jv_free(name);
		}
		if (!ok)
			return false;
	}
	if (!n->props.n && !n->npprops && !n->additional)
		return true;
	for (int it = jv_object_iter(x); ok && jv_object_iter_valid(x, it);
	     it = jv_object_iter_next(x, it)) {
		jv key = jv_object_iter_key(x, it);
		jv val = jv_object_iter_value(x, it);

		ok = check_member(v, n, key, val);
		jv_free(key);
		jv_free(val);
	}
	return ok;
}

static bool check_unique(struct vctx *v, jv x, int len)
{
	for (int i = 0; i < len; i++) {
		jv a = jv_array_get(jv_copy(x), i);

		for (int j = i + 1; j < len; j++) {
			if (jv_equal(jv_copy(a), jv_array_get(jv_copy(x), j))) {
				jv_free(a);
				return fail(v, "items [%d] and [%d] are equal, items must be unique", i, j);
			}
		}
		jv_free(a);
	}
	return true;
}

static bool check_array(struct vctx *v, const struct node *n, jv x)
{
	int len = jv_array_length(jv_copy(x));

	if (!check_count(v, n, len, L_MIN_ITEMS, L_MAX_ITEMS, "items"))
		return false;
	if (n->unique && !check_unique(v, x, len))
		return false;
	for (int i = 0; i < len; i++) {
		const struct node *sub = (size_t)i < n->prefix.n ? n->prefix.v[i] : n->items;
		bool ok;

		if (!sub)
			break;
		jv item = jv_array_get(jv_copy(x), i);
		ok = validate_at_index(v, sub, i, item);
		jv_free(item);
		if (!ok)
			return false;
	}
	return true;
}

static bool check_string(struct vctx *v, const struct node *n, jv x)
{
	if (n->has & ((1u << L_MIN_LENGTH) | (1u << L_MAX_LENGTH))) {
		/* JSON Schema counts characters (code points), not bytes. */
		int cps = jv_string_length_codepoints(jv_copy(x));

		if (!check_count(v, n, cps, L_MIN_LENGTH, L_MAX_LENGTH, "characters"))
			return false;
	}
	if (n->pattern && !regex_search(n->pattern, jv_string_value(x),
					 (size_t)jv_string_length_bytes(jv_copy(x))))
		return fail(v, "string does not match pattern '%s'", n->pattern->source);
	return true;
}

/*
 * x is a multiple of m when x/m is an integer.  Binary floating point makes
 * 0.0075/0.0001 come out as 74.99999999999999, so a quotient within a
 * relative 1e-9 of an integer counts; an infinite quotient (1e308/0.123)
 * cannot be judged and is not a multiple.
 */
static bool is_multiple(double x, double m)
{
	double q = x / m;

	if (!isfinite(q))
		return false;
	return fabs(q - nearbyint(q)) <= 1e-9 * fmax(1.0, fabs(q));
}

static bool check_number(struct vctx *v, const struct node *n, jv x)
{
	double d = jv_number_value(x);
	const double *lim = n->lim;

	if ((n->has & (1u << L_MINIMUM)) && d < lim[L_MINIMUM])
		return fail(v, "%.15g is less than the minimum %.15g", d, lim[L_MINIMUM]);
	if ((n->has & (1u << L_MAXIMUM)) && d > lim[L_MAXIMUM])
		return fail(v, "%.15g is greater than the maximum %.15g", d, lim[L_MAXIMUM]);
	if ((n->has & (1u << L_EXCL_MIN)) && d <= lim[L_EXCL_MIN])
		return fail(v, "%.15g is not greater than %.15g", d, lim[L_EXCL_MIN]);
	if ((n->has & (1u << L_EXCL_MAX)) && d >= lim[L_EXCL_MAX])
		return fail(v, "%.15g is not less than %.15g", d, lim[L_EXCL_MAX]);
	if ((n->has & (1u << L_MULTIPLE_OF)) && !is_multiple(d, lim[L_MULTIPLE_OF]))
		return fail(v, "%.15g is not a multiple of %.15g", d, lim[L_MULTIPLE_OF]);
	return true;
}

/* Run n quietly: for branches whose own failure is not the error. */
static bool matches(struct vctx *v, const struct node *n, jv x)
{
	struct vctx q = { 1, v->depth, BUF_INIT, NULL };

	return validate(&q, n, x);
}

static bool check_combinators(struct vctx *v, const struct node *n, jv x)
{
	for (size_t i = 0; i < n->all_of.n; i++)
		if (!validate(v, n->all_of.v[i], x))
			return false;
	if (n->any_of.n) {
		size_t i = 0;

		while (i < n->any_of.n && !matches(v, n->any_of.v[i], x))
			i++;
		if (i == n->any_of.n)
			return fail(v, "value does not match any of the %zu schemas in anyOf",
				    n->any_of.n);
	}
	if (n->one_of.n) {
		size_t hits = 0;

		for (size_t i = 0; i < n->one_of.n && hits < 2; i++)
			hits += matches(v, n->one_of.v[i], x);
		if (hits == 0)
			return fail(v, "value does not match any of the %zu schemas in oneOf",
				    n->one_of.n);
		if (hits > 1)
			return fail(v, "value matches more than one schema in oneOf");
	}
	if (n->not_ && matches(v, n->not_, x))
		return fail(v, "value must not match the schema in 'not'");
	return true;
}

static bool check_kind(struct vctx *v, const struct node *n, jv x)
{
	switch (jv_get_kind(x)) {
	case JV_KIND_OBJECT: return check_object(v, n, x);
	case JV_KIND_ARRAY: return check_array(v, n, x);
	case JV_KIND_STRING: return check_string(v, n, x);
	case JV_KIND_NUMBER: return check_number(v, n, x);
	default: return true;
	}
}

/* Borrows x. */
static bool validate(struct vctx *v, const struct node *n, jv x)
{
	bool ok;

	if (n->is_bool)
		return n->bool_value ? true : fail(v, "no value is allowed here");
	if (v->depth >= MAX_VALIDATE_DEPTH)
		return fail(v, "schema recursion deeper than %d levels", MAX_VALIDATE_DEPTH);
	v->depth++;
	ok = (!n->ref_target || validate(v, n->ref_target, x)) &&
	     check_type(v, n, x) &&
	     (!n->has_enum || check_enum(v, n, x)) &&
	     (!n->has_const || check_const(v, n, x)) &&
	     check_kind(v, n, x) &&
	     check_combinators(v, n, x);
	v->depth--;
	return ok;
}

static int validate_node(const struct node *n, jv instance)
{
	struct vctx v = { 0, 0, BUF_INIT, NULL };
	int rc = 0;

	if (!validate(&v, n, instance)) {
		forge_error("%s", v.msg ? v.msg : ".: value is not valid");
		rc = -1;
	}
	buf_release(&v.path);
	free(v.msg);
	return rc;
}

int schema_validate(const struct schema *s, jv instance)
{
	return validate_node(s->nodes[0], instance);
}

bool schema_is_valid(const struct schema *s, jv instance)
{
	struct vctx v = { 1, 0, BUF_INIT, NULL };

	return validate(&v, s->nodes[0], instance);
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
	struct schema *s;

	for (size_t i = 0; i < ncache; i++)
		if (strcmp(cache[i].name, name) == 0)
			return cache[i].schema;
	r = resource_find(name);
	if (!r) {
		forge_error("no embedded schema '%s'", name);
		return NULL;
	}
	jv doc = json_parse(r->data, r->len);
	if (!jv_is_valid(doc)) {
		char *m = json_invalid_msg(doc);

		forge_error("schema '%s': %s", name, m);
		free(m);
		return NULL;
	}
	if (schema_compile(&s, doc) < 0) {
		forge_error_prefix("schema '%s'", name);
		return NULL;
	}
	cache = xrealloc(cache, (ncache + 1) * sizeof *cache);
	cache[ncache].name = xstrdup(name);
	cache[ncache].schema = s;
	return cache[ncache++].schema;
}

int schema_validate_def(const char *name, const char *def, jv instance)
{
	const struct schema *s = schema_get(name);
	struct buf ptr = BUF_INIT;
	const struct node *n;

	if (!s)
		return -1;
	buf_adds(&ptr, "/$defs");
	ptr_push(&ptr, def);
	n = find_pointer(s, ptr.buf);
	buf_release(&ptr);
	if (!n)
		return forge_error("schema '%s' has no definition '%s'", name, def);
	return validate_node(n, instance);
}
