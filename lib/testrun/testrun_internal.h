/*
 * testrun_internal.h - small text helpers shared by the test-output parsers
 * (testrun*.c, tap.c, junit.c).  Everything works on (pointer, length)
 * slices of the caller's text; nothing here allocates.
 */
#ifndef FORGE_TESTRUN_INTERNAL_H
#define FORGE_TESTRUN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* A cursor over lines: tr_next_line() gives each line without its "\n"
 * (and without a trailing "\r"). */
struct tr_lines {
	const char *p, *end;
};

static inline void tr_lines_init(struct tr_lines *it, const char *text, size_t len)
{
	it->p = text;
	it->end = text + len;
}

static inline bool tr_next_line(struct tr_lines *it, const char **line, size_t *len)
{
	if (it->p >= it->end)
		return false;
	const char *nl = memchr(it->p, '\n', (size_t)(it->end - it->p));
	const char *stop = nl ? nl : it->end;
	*line = it->p;
	*len = (size_t)(stop - it->p);
	if (*len && (*line)[*len - 1] == '\r')
		(*len)--;
	it->p = nl ? nl + 1 : it->end;
	return true;
}

static inline bool tr_prefix(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);
	return len >= n && memcmp(s, prefix, n) == 0;
}

/* Skip spaces and tabs. */
static inline void tr_skip_ws(const char **s, size_t *len)
{
	while (*len && (**s == ' ' || **s == '\t')) {
		(*s)++;
		(*len)--;
	}
}

static inline void tr_trim(const char **s, size_t *len)
{
	tr_skip_ws(s, len);
	while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t' || (*s)[*len - 1] == '\r'))
		(*len)--;
}

/* Read a decimal number (at most 15 digits kept; more are consumed and
 * saturate).  Returns false when there is no digit. */
static inline bool tr_number(const char **s, size_t *len, long *out)
{
	long v = 0;
	size_t n = 0;

	while (*len && **s >= '0' && **s <= '9') {
		if (v < 100000000000000L)
			v = v * 10 + (**s - '0');
		(*s)++;
		(*len)--;
		n++;
	}
	*out = v;
	return n > 0;
}

/* Find needle in s[0..len); NULL when absent. */
static inline const char *tr_find(const char *s, size_t len, const char *needle)
{
	size_t n = strlen(needle);

	if (n == 0 || len < n)
		return NULL;
	for (size_t i = 0; i + n <= len; i++)
		if (s[i] == needle[0] && memcmp(s + i, needle, n) == 0)
			return s + i;
	return NULL;
}

/* Parse "FILE:LINE" (a path without spaces, then ':' and digits) at the end
 * of s or followed by ':' / ' ' — e.g. "tests/test_a.py:8: AssertionError",
 * "/x/a.test.js:4:1".  Sets file, flen and line; false when not one. */
bool tr_file_line(const char *s, size_t len, const char **file, size_t *flen, long *line);

#endif
