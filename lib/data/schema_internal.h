/*
 * schema_internal.h - the compiled form of a JSON Schema, shared by
 * schema_compile.c (document -> node graph) and schema_validate.c (node graph
 * x instance).  Not part of the library's public interface.
 */
#ifndef FORGE_SCHEMA_INTERNAL_H
#define FORGE_SCHEMA_INTERNAL_H

#include "core/buf.h"
#include "data/schema.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <pthread.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Deeper than any sane schema; guards the C stack against hostile input. */
#define MAX_SCHEMA_DEPTH 256
/* How deep a schema's text may nest, in json_scan's count (an object 2, an
 * array 1): a schema MAX_SCHEMA_DEPTH levels deep fits whichever keywords
 * nest it ("properties": two objects a level), and so does every document
 * json_parse() makes (libjq 1.6 stops at 256); json_scan recurses a frame
 * or two a level. */
#define SCHEMA_TEXT_MAX_DEPTH (4 * (MAX_SCHEMA_DEPTH + 1))
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

struct type_name {
	const char *name;
	unsigned bit;
};

extern const struct type_name schema_type_names[7];



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

/* A member of "properties"; node.props is sorted by name (bytes, then length). */
struct prop {
	char *name;
	size_t len;
	struct node *schema;
};

struct node_list {
	struct node **v;
	size_t n;
};

/* A lazy node is compiled when first reached (by validation, a $ref,
 * schema_compile_rest). */
enum node_state { NODE_READY, NODE_LAZY, NODE_BAD };

struct node {
	int is_bool;            /* a boolean schema: true or false */
	int bool_value;
	unsigned types;         /* 0 = any type */
	double lim[L_COUNT];
	unsigned has;           /* 1 << enum limit */
	int has_enum, has_const, unique;
	jv enum_vals, const_val;
	struct prop *props;     /* sorted, no two alike */
	size_t nprops;
	struct pattern_prop *pprops;
	size_t npprops;
	struct node *additional;
	jv required;            /* array of strings, or null */
	struct node_list prefix;
	struct node *items;
	struct regex *pattern;
	bool format_regex;      /* "format": "regex": the string must compile (PCRE2) */
	struct node_list all_of, any_of, one_of;
	struct node *not_;
	char *ref;              /* the $ref pointer, percent-decoded, without '#' */
	char *ref_text;         /* as written, for messages */
	struct node *ref_target;
	char *pointer;          /* where this node is in the document ("" = root) */
	size_t index;           /* position in schema.nodes */
	struct schema *owner;
	int depth;              /* of nesting in the document, for MAX_SCHEMA_DEPTH */
	enum node_state state;
	unsigned char mark;     /* cycle check: 0 not yet, 1 on the stack, 2 done (and compiled) */
	size_t text_off;        /* lazy: where its object starts in owner->text */
	size_t first_child, nchildren;  /* lazy: the nodes its compilation made */
};

/* A document's JSON text, indexed for walking it in place (schema_text.c). */
struct schema_text {
	const char *text;       /* borrowed: outlives the schema */
	size_t len;
	uint32_t *close;        /* at the offset of each '{' and '[': past its partner */
};

struct text_iter {
	const struct schema_text *t;
	size_t p, end;
	bool object;
};

struct schema {
	struct node **nodes;    /* every node, owned; nodes[0] is the root */
	size_t n, alloc;
	char *id;               /* the root's $id, or NULL */
	struct schema_text text;
	char *text_owned;       /* schema_compile()'s serialised document, or NULL */
	char *name;             /* for messages ("state.schema.json"), or NULL */
	char *error;            /* a lazy compile's first error, the whole message */
	bool unsupported;       /* that error is something this validator does not
				   implement, not a schema that breaks JSON Schema */
};

struct compiler {
	struct schema *s;
	struct buf ptr;         /* JSON pointer of the node being compiled */
};

/* Check text (strict JSON) and index its brackets; -1 with a message. */
int schema_text_index(struct schema_text *t, const char *text, size_t len);
void schema_text_release(struct schema_text *t);
/* The offset of the document's value. */
size_t schema_text_start(const struct schema_text *t);
/* Step through the members (object) or items (array) whose bracket is at
 * offset container: each value's offset and length, and for an object the
 * key, unescaped, in key when key is not NULL. */
void schema_text_iter(struct text_iter *it, const struct schema_text *t, size_t container);
bool schema_text_next(struct text_iter *it, struct buf *key, size_t *off, size_t *len);
size_t schema_text_count(const struct schema_text *t, size_t container);

/* Make n ready for validation: compiled (a lazy node now) and free of
 * in-place $ref cycles.  -1 when its part of the document is bad; the
 * message is then in n->owner->error. */
int schema_node_ready(struct node *n);

/* Unanchored search of s[0..len) (JSON Schema patterns are not anchored). */
bool schema_regex_search(const struct regex *re, const char *s, size_t len);

/* Held by each public entry that compiles or validates (schema.h): a lazy
 * schema compiles more of itself as validation reaches it, and a regex's
 * match data is reused, so one thread at a time works on schemas.  The
 * functions of this header take it not: their callers hold it. */
extern pthread_mutex_t schema_mutex;

/* The node at a JSON pointer ("" = root), or NULL.  Borrowed.  The nodes on
 * the way are compiled; -1 when one is bad. */
int schema_find_pointer(struct node **out, struct schema *s, const char *pointer);

/* Append "/token" (escaped as a JSON pointer) to b; returns the old length. */
size_t schema_ptr_push(struct buf *b, const char *token);

/* Validate instance (borrowed) against node n; 0 or -1 with the message. */
int schema_validate_node(const struct node *n, jv instance);

#endif
