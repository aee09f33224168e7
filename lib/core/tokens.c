/*
 * tokens.c - the token estimator (rules in tokens.h).
 */
#include "core/tokens.h"
#include "core/json.h"

#include <stdlib.h>
#include <string.h>

enum tclass { T_NONE, T_ALPHA, T_DIGIT, T_PUNCT, T_SPACE, T_NEWLINE, T_CTRL, T_UTF8, T_ESCAPE };

/* A byte's class, as a constant expression for the tables below. */
#define CLASS(c) \
	(((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z') ? T_ALPHA : \
	 (c) >= '0' && (c) <= '9' ? T_DIGIT : \
	 (c) == ' ' || (c) == '\t' ? T_SPACE : \
	 (c) == '\n' || (c) == '\r' ? T_NEWLINE : \
	 (c) < 0x20 || (c) == 0x7f ? T_CTRL : \
	 (c) < 0x80 ? T_PUNCT : T_UTF8)
/* In a JSON string json_dumps() writes: the bytes it escapes apart. */
#define STRING_CLASS(c) ((c) < 0x20 || (c) == '"' || (c) == '\\' || (c) == 0x7f ? T_ESCAPE : CLASS(c))

#define ROW(F, b) F(b), F(b + 1), F(b + 2), F(b + 3), F(b + 4), F(b + 5), F(b + 6), F(b + 7), \
	F(b + 8), F(b + 9), F(b + 10), F(b + 11), F(b + 12), F(b + 13), F(b + 14), F(b + 15)
#define TABLE(F) { ROW(F, 0x00), ROW(F, 0x10), ROW(F, 0x20), ROW(F, 0x30), ROW(F, 0x40), \
	ROW(F, 0x50), ROW(F, 0x60), ROW(F, 0x70), ROW(F, 0x80), ROW(F, 0x90), ROW(F, 0xa0), \
	ROW(F, 0xb0), ROW(F, 0xc0), ROW(F, 0xd0), ROW(F, 0xe0), ROW(F, 0xf0) }

/* A table, not a chain of tests: the estimate reads every byte of the
 * prompts, the tools and each message. */
static const unsigned char byte_class[256] = TABLE(CLASS);
static const unsigned char string_class[256] = TABLE(STRING_CLASS);

static size_t run_cost(enum tclass k, size_t n)
{
	switch (k) {
	case T_ALPHA:
		return (n + 3) / 4;
	case T_DIGIT:
		return (n + 2) / 3;
	case T_PUNCT:
	case T_NEWLINE:
		return (n + 1) / 2;
	case T_SPACE:
		return n ? (n + 2) / 4 : 0;    /* ceil((n - 1) / 4) */
	default:
		return 0;
	}
}

/* Cost of one non-ASCII byte: counted at the lead byte of a sequence, so a
 * prefix cut anywhere costs no more than the whole. */
static size_t utf8_byte_cost(unsigned char c)
{
	if (c >= 0x80 && c < 0xc0)
		return 0;       /* continuation (a stray one is counted at its lead) */
	if (c < 0xe0)
		return 1;
	return 2;
}

/* The estimate part way through a text: the runs ended so far and the
 * one going on, so that a text may be fed in pieces (tokens_estimate_jv). */
struct tokens_run {
	size_t total, run;
	enum tclass cur;
};

/* Byte c of class k (neither T_ESCAPE nor, the common case, the class of
 * the run going on, which its caller just counts). */
static void run_other(struct tokens_run *r, enum tclass k, unsigned char c)
{
	if (k == T_CTRL || k == T_UTF8) {
		r->total += run_cost(r->cur, r->run) + (k == T_CTRL ? 1 : utf8_byte_cost(c));
		r->cur = T_NONE;
		r->run = 0;
		return;
	}
	r->total += run_cost(r->cur, r->run);
	r->cur = k;
	r->run = 1;
}

static inline void run_byte(struct tokens_run *r, unsigned char c)
{
	enum tclass k = byte_class[c];

	if (k == r->cur)        /* never T_CTRL or T_UTF8: those end a run */
		r->run++;
	else
		run_other(r, k, c);
}

static void run_bytes(struct tokens_run *r, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		run_byte(r, (unsigned char)s[i]);
}

static size_t run_end(const struct tokens_run *r)
{
	return r->total + run_cost(r->cur, r->run);
}

size_t tokens_estimate(const char *s, size_t len)
{
	struct tokens_run r = { 0, 0, T_NONE };

	if (!s)
		return 0;
	run_bytes(&r, s, len);
	return run_end(&r);
}

size_t tokens_estimate_str(const char *s)
{
	size_t n = 0;

	if (!s)
		return 0;
	while (s[n])
		n++;
	return tokens_estimate(s, n);
}

/* A string's bytes as json_dumps() writes them (json.c's dump_string:
 * the escapes are jq's, \u00XX in lowercase, DEL included). */
static void run_string(struct tokens_run *r, jv s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)jv_string_value(s);
	const unsigned char *end = p + jv_string_length_bytes(jv_copy(s));

	run_byte(r, '"');
	for (; p < end; p++) {
		unsigned char c = *p;
		enum tclass k = string_class[c];

		if (k == r->cur) {
			r->run++;
			continue;
		}
		if (k != T_ESCAPE) {
			run_other(r, k, c);
			continue;
		}
		const char *e = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\b' ? "\\b" : c == '\f' ? "\\f" :
				c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
		if (e) {
			run_bytes(r, e, 2);
		} else {
			char u[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };

			run_bytes(r, u, sizeof u);
		}
	}
	run_byte(r, '"');
}

/* v's compact JSON text (json_dumps(v, false)) fed to r, without writing
 * it: containers and strings are walked; numbers, which json.c formats
 * with care, are written by json_dumps.  Borrows v. */
static void run_jv(struct tokens_run *r, jv v)
{
	bool first = true;

	switch (jv_get_kind(v)) {
	case JV_KIND_STRING:
		run_string(r, v);
		return;
	case JV_KIND_NULL:
		run_bytes(r, "null", 4);
		return;
	case JV_KIND_TRUE:
		run_bytes(r, "true", 4);
		return;
	case JV_KIND_FALSE:
		run_bytes(r, "false", 5);
		return;
	case JV_KIND_ARRAY:
		run_byte(r, '[');
		jv_array_foreach(v, i, e) {
			if (i)
				run_byte(r, ',');
			run_jv(r, e);
			jv_free(e);
		}
		run_byte(r, ']');
		return;
	case JV_KIND_OBJECT:
		run_byte(r, '{');
		for (int it = jv_object_iter(v); jv_object_iter_valid(v, it); it = jv_object_iter_next(v, it)) {
			jv k = jv_object_iter_key(v, it), e = jv_object_iter_value(v, it);

			if (!first)
				run_byte(r, ',');
			first = false;
			run_string(r, k);
			run_byte(r, ':');
			run_jv(r, e);
			jv_free(k);
			jv_free(e);
		}
		run_byte(r, '}');
		return;
	default: {
		char *text = json_dumps(jv_copy(v), false);

		run_bytes(r, text, strlen(text));
		free(text);
	}
	}
}

/* The text is not written: the tools an agent sends (12 KB of schemas)
 * cost 0.74M instructions to serialise and then estimate. */
size_t tokens_estimate_jv(jv v)
{
	struct tokens_run r = { 0, 0, T_NONE };

	run_jv(&r, v);
	return run_end(&r);
}

size_t tokens_estimate_text(jv v)
{
	if (jv_get_kind(v) == JV_KIND_STRING)
		return tokens_estimate(jv_string_value(v), (size_t)jv_string_length_bytes(jv_copy(v)));
	return tokens_estimate_jv(v);
}
