/*
 * tokens.c - the token estimator (rules in tokens.h).
 */
#include "core/tokens.h"
#include "core/json.h"

#include <stdlib.h>
#include <string.h>

enum tclass { T_NONE, T_ALPHA, T_DIGIT, T_PUNCT, T_SPACE, T_NEWLINE, T_CTRL, T_UTF8 };

static enum tclass classify(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return T_ALPHA;
	if (c >= '0' && c <= '9')
		return T_DIGIT;
	if (c == ' ' || c == '\t')
		return T_SPACE;
	if (c == '\n' || c == '\r')
		return T_NEWLINE;
	if (c < 0x20 || c == 0x7f)
		return T_CTRL;
	if (c < 0x80)
		return T_PUNCT;
	return T_UTF8;
}

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

size_t tokens_estimate(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t total = 0, run = 0;
	enum tclass cur = T_NONE;

	if (!s)
		return 0;
	for (size_t i = 0; i < len; i++) {
		enum tclass k = classify(p[i]);

		if (k == T_CTRL) {
			total += run_cost(cur, run) + 1;
			cur = T_NONE;
			run = 0;
			continue;
		}
		if (k == T_UTF8) {
			total += run_cost(cur, run) + utf8_byte_cost(p[i]);
			cur = T_NONE;
			run = 0;
			continue;
		}
		if (k != cur) {
			total += run_cost(cur, run);
			cur = k;
			run = 0;
		}
		run++;
	}
	return total + run_cost(cur, run);
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

size_t tokens_estimate_jv(jv v)
{
	char *s = json_dumps(jv_copy(v), false);
	size_t n = tokens_estimate(s, strlen(s));

	free(s);
	return n;
}

size_t tokens_estimate_text(jv v)
{
	if (jv_get_kind(v) == JV_KIND_STRING)
		return tokens_estimate(jv_string_value(v), (size_t)jv_string_length_bytes(jv_copy(v)));
	return tokens_estimate_jv(v);
}
