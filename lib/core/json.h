/*
 * json.h - helpers over libjq's jv values.
 *
 * THE OWNERSHIP RULE (for all of Forge, not only this file)
 * --------------------------------------------------------
 * A jv passed to a function is CONSUMED by it: the caller gives up its
 * reference and must not use or free the value afterwards.  The only
 * exceptions are parameters marked "borrows" in the comment; those are left
 * untouched and remain the caller's.  A jv returned by a function is a new
 * reference owned by the caller, who frees it (jv_free) or passes it on.
 * A `const char *` returned from a borrowed jv lives as long as that jv.
 *
 * This is libjq's own rule (every jv_* function consumes its arguments,
 * except jv_copy, jv_get_kind, jv_string_value, jv_number_value and the
 * iterator functions); note that jv_object_get, jv_array_length,
 * jv_object_has, jv_equal and jv_dump_string consume too, so keep a value
 * with jv_copy() before handing it to them.
 *
 * Numbers in libjq 1.6 are doubles: ids, hashes and any counter that may
 * pass 2^53 are carried as strings in every Forge schema.
 */
#ifndef FORGE_JSON_H
#define FORGE_JSON_H

#include <jv.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>

struct buf;

/* The value jv_null() returns, made without calling libjq, which is loaded
 * on its first call (core/jq_lazy.c): for initialisers that run before a
 * program reads its options, so --version and --help do not load it.  The
 * layout is jv.h's public struct; test_json checks it equals jv_null(). */
#define JSON_NULL ((jv){ .kind_flags = JV_KIND_NULL })

/* obj.key as a new reference, or jv_null() when obj is not an object or has
 * no such key.  Borrows obj. */
jv json_get(jv obj, const char *key);

/* Follow a dotted path of object keys ("task.repo").  Borrows obj. */
jv json_get_path(jv obj, const char *path);

/* obj.key as a C string borrowed from obj, or NULL when absent or not a
 * string.  Borrows obj. */
const char *json_get_str(jv obj, const char *key);

/* obj.key as a number, or dflt when absent or not a number.  Borrows obj. */
double json_get_num(jv obj, const char *key, double dflt);

/* obj.key as a boolean, or dflt when absent or not a boolean.  Borrows obj. */
bool json_get_bool(jv obj, const char *key, bool dflt);

/* True when obj is an object that has key.  Borrows obj. */
bool json_has(jv obj, const char *key);

/* obj with key set to val; consumes obj and val. */
jv json_set(jv obj, const char *key, jv val);

/* True when v is of kind k.  Borrows v. */
static inline bool json_is(jv v, jv_kind k)
{
	return jv_get_kind(v) == k;
}

/* A string, or null when s is NULL. */
jv json_str_or_null(const char *s);

/*
 * A file's name as a JSON string, without loss: as it is when it is UTF-8
 * and does not start with '"'; else quoted as buf_add_path_quoted() shows
 * it ("caf\351.txt" for the Latin-1 name caf\xe9.txt, which JSON would
 * otherwise turn into caf\uFFFD.txt, one string for many names).
 * buf_path_unquoted() gives the name back; a string of this kind that
 * starts with '"' is always a quoted one.  Null when name is NULL.
 */
jv json_path(const char *name);
/* Append a name json_path() made to b as buf_add_path_quoted() shows the
 * name (a quoted one is shown as it is). */
void json_path_add_shown(struct buf *b, const char *jname);

/*
 * Write v as one compact line followed by '\n'.  Consumes v.  Keys keep
 * their insertion order unless `sorted`.  Returns 0, or -1 with errno set
 * when the stream failed (EPIPE when the reader went away).
 */
int json_write_line(FILE *out, jv v, bool sorted);

/* Write v indented by two spaces (jq's layout), then '\n': for a person
 * reading it.  Consumes v.  Returns 0, or -1 with errno set. */
int json_write_pretty(FILE *out, jv v);

/* Serialise compactly into a malloc'd C string (free(3) it).  Consumes v. */
char *json_dumps(jv v, bool sorted);

/*
 * Parse exactly one JSON text.  On error returns an invalid jv carrying a
 * message (without jq 1.6's "while parsing '<whole input>'" tail, which
 * would repeat the input).  Never aborts on bad input.
 */
jv json_parse(const char *text, size_t len);

/*
 * json_parse() without the notes: the object members whose key begins with
 * '$' ("$comment", "$schema"), at any depth, as json_strip_notes() leaves
 * it, in one pass (the built-in configuration is half notes).
 */
jv json_parse_without_notes(const char *text, size_t len);

/* v without the members whose key begins with '$', at any depth.  Consumes v. */
jv json_strip_notes(jv v);

/* Read and parse a whole file; an invalid jv with a message on error. */
jv json_parse_file(const char *path);

/* The message of an invalid jv as a malloc'd string (free(3) it); "invalid
 * value" when it has none.  Consumes v. */
char *json_invalid_msg(jv v);

/* Deep equality.  Borrows both. */
bool json_equal(jv a, jv b);

/* True when s[0..len) is well-formed UTF-8 (no overlongs, no surrogates). */
bool json_utf8_valid(const char *s, size_t len);
/* The offset of the first byte of s[0..len) that is not valid UTF-8, or len. */
size_t json_utf8_invalid_at(const char *s, size_t len);
/* The end of the one multi-byte UTF-8 sequence at p (*p >= 0x80, p < end),
 * or NULL when it is not well-formed (overlong, surrogate, cut short). */
const unsigned char *json_utf8_seq(const unsigned char *p, const unsigned char *end);

/*
 * Find a string holding a NUL character (JSON "\u0000") anywhere in v
 * (object keys too).  Such a string cannot become a C string - a path, a
 * command - without being cut short.  Returns 0 when there is none, else -1
 * and *where (malloc'd) names it: "path", "files[2].name", "" for v itself.
 * Borrows v.
 */
int json_find_nul(char **where, jv v);

/* v (consumed) with fn applied to every string in it, object keys too:
 * fn consumes its string and returns what stands in its place. */
jv json_map_strings(jv v, jv (*fn)(jv s, void *payload), void *payload);

#endif
