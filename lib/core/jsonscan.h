/*
 * jsonscan.h - a strict JSON (RFC 8259) checker that makes no jv, for the
 * hot paths that need a few fields of a record: the event lines a stream
 * forwards and the store persists.  libjq's parser builds every value of a
 * line; this reads the line once, in place, allocating nothing.
 *
 * Strict: the grammar of RFC 8259 and nothing more (no NaN, no leading
 * zeros, no comments, no control characters in strings), valid UTF-8 in
 * strings (no overlongs, no encoded surrogates), escaped surrogates only
 * in pairs, nesting at most JSON_SCAN_MAX_DEPTH deep where an array counts
 * 1 and an object 2 (libjq's own count, whose limit is 256).  Whatever it
 * accepts, json_parse() and SQLite's JSON functions accept too; what it
 * refuses, the caller hands to json_parse(), which decides and says why
 * (libjq 1.6 takes some text RFC 8259 does not: nan, 01, .5, +1).
 */
#ifndef FORGE_JSONSCAN_H
#define FORGE_JSONSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf;

#define JSON_SCAN_MAX_DEPTH 128

enum json_scan_kind {
	JSON_SCAN_INVALID = -1,
	JSON_SCAN_NULL, JSON_SCAN_FALSE, JSON_SCAN_TRUE, JSON_SCAN_NUMBER, JSON_SCAN_STRING,
	JSON_SCAN_ARRAY, JSON_SCAN_OBJECT
};

/* A member of the top-level object, pointing into the scanned text. */
struct json_member {
	const char *key;          /* the key's bytes between its quotes, as written */
	size_t key_len;
	bool key_escaped;         /* the key holds an escape (\n, \u0069...) */
	enum json_scan_kind kind; /* of the value */
	const char *value;        /* the value's text; a string's without its quotes */
	size_t value_len;
	bool value_escaped;       /* a string value holds an escape */
};

/*
 * Check that text[0..len) is exactly one JSON text (white space around it
 * allowed).  Returns the kind of its value, or JSON_SCAN_INVALID when it
 * is not one (or nests deeper than JSON_SCAN_MAX_DEPTH).  When the value
 * is an object and `member` is not NULL, member(m, payload) is called for
 * each of its own members (not nested ones), in order, duplicates
 * included, as they are read: a later byte may still make the text
 * invalid, so the caller keeps what it learns only on success.
 */
enum json_scan_kind json_scan(const char *text, size_t len,
			      void (*member)(const struct json_member *m, void *payload), void *payload);

/*
 * json_scan() with another nesting limit, counted the same way (an array
 * 1, an object 2), for texts that may nest deeper than events do: a JSON
 * Schema (schema_compile).  The scan recurses once per level: the caller
 * picks a limit its stack affords.
 */
enum json_scan_kind json_scan_depth(const char *text, size_t len, int max_depth);

/*
 * The top-level members of an object known to be valid JSON (the program's
 * own resources, which a test checks with json_scan), found without
 * checking them: strings are skipped with memchr and the rest with
 * strcspn, several times faster than json_scan.  text[0..len) must be
 * followed by a NUL (text[len] == '\0', as resources are).  member(key,
 * key_len, value, value_len, payload) for each member in order; key is the
 * bytes between the quotes as written, value the value's whole text
 * (quotes and brackets included).  0, or -1 when text is not shaped like
 * an object; on text that is not valid JSON the members reported are
 * unspecified (but lie within text).
 */
int json_skim_members(const char *text, size_t len,
		      void (*member)(const char *key, size_t key_len, const char *value,
				     size_t value_len, void *payload),
		      void *payload);

/*
 * json_skim_members() for an array: element(value, value_len, payload) for
 * each element of the array at text, in order (the value's whole text).
 * The same conditions (text[len] == '\0'; on text that is not valid JSON
 * the elements reported are unspecified but lie within text).  0, or -1
 * when text is not shaped like an array.
 */
int json_skim_elements(const char *text, size_t len,
		       void (*element)(const char *value, size_t value_len, void *payload), void *payload);

/*
 * How deep text nests, counted as libjq counts it (an array 1, an object 2;
 * libjq 1.6 reads at most 256): the deepest point of its brackets, those in
 * strings skipped.  One pass, no recursion, for any text (on text that is
 * not JSON, of its brackets as they stand).
 */
size_t json_nesting(const char *text, size_t len);

/*
 * The lexical pieces, shared with json.c's parser that builds jv (one
 * tokenizer for both).  json_scan_string: past the string whose opening
 * quote is at p (strict, as above), or NULL; *escaped says whether it
 * holds an escape.  json_scan_number: past the number at p
 * (-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?), or NULL.
 * json_scan_unescape: appends to out the UTF-8 text of a string body
 * (between its quotes) that json_scan_string accepted.
 */
const char *json_scan_string(const char *p, const char *end, bool *escaped);
const char *json_scan_number(const char *p, const char *end);
void json_scan_unescape(struct buf *out, const char *body, size_t len);

/*
 * The fields of an event record (DESIGN.md section 2) that the stream and
 * the store use, read by json_event_scan().  Strings point into the line,
 * without quotes, not NUL-terminated; NULL when absent.
 */
struct json_event {
	const char *kind, *id, *trace_id, *ts, *source, *phase, *type;
	size_t kind_len, id_len, trace_id_len, ts_len, source_len, phase_len, type_len;
	enum json_scan_kind phase_kind;   /* JSON_SCAN_INVALID when absent */
	const char *payload;      /* the payload's JSON text, NULL when absent or null */
	size_t payload_len;
	bool payload_object;      /* the payload is an object */
	bool has_tokens;          /* cost.tokens, an integer in [0, 10^15) */
	int64_t tokens;
	bool has_usd;             /* cost.usd, a number; NAN for null */
	double usd;
	bool has_duration;        /* duration_ms, an integer in [0, 10^15) */
	int64_t duration_ms;
	/* span and parent_span (a sub-agent's events): their kinds
	 * (JSON_SCAN_INVALID when absent) and, for strings, their text */
	const char *span, *parent_span;
	size_t span_len, parent_span_len;
	enum json_scan_kind span_kind, parent_span_kind;
};

/*
 * Scan an event line: true when it is valid JSON (json_scan()), an object
 * and the fields above could be read exactly; then *ev holds them.  False
 * when it is not JSON, not an object, or holds something this does not
 * read the way libjq would, which the caller leaves to json_parse(): a
 * duplicate of one of these keys, a key written with an escape, one of
 * these strings written with an escape, a "cost" that is not an object,
 * a cost.tokens or duration_ms that is not written as a plain integer
 * below 10^15, a cost.usd that is neither a number nor null.  Checks no schema: a false "kind" or
 * a missing "id" is the caller's to judge.
 */
bool json_event_scan(struct json_event *ev, const char *line, size_t len);

#endif
