/* error.c - the last-error slot, checked allocation and number parsing. */
#include "core/forge.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char last_error[1024];

int forge_verror(const char *fmt, va_list ap)
{
	vsnprintf(last_error, sizeof last_error, fmt, ap);
	return -1;
}

int forge_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	forge_verror(fmt, ap);
	va_end(ap);
	return -1;
}

int forge_error_prefix(const char *fmt, ...)
{
	/* Room for both parts, so the compiler can see nothing is cut mid-way;
	 * the result is then cut to the slot's size. */
	char combined[sizeof last_error + 512 + 2];
	int n;
	va_list ap;

	va_start(ap, fmt);
	n = vsnprintf(combined, 512, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if (n > 511)
		n = 511;
	combined[n++] = ':';
	combined[n++] = ' ';
	memcpy(combined + n, last_error, sizeof last_error);
	memcpy(last_error, combined, sizeof last_error - 1);
	last_error[sizeof last_error - 1] = '\0';
	return -1;
}

const char *forge_last_error(void)
{
	return last_error;
}

void forge_fatal(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "forge: %s\n", msg);
	exit(FORGE_EXIT_DEPENDENCY);
}

static void out_of_memory(size_t n)
{
	fprintf(stderr, "forge: out of memory allocating %zu bytes\n", n);
	exit(FORGE_EXIT_DEPENDENCY);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		out_of_memory(n);
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p;

	if (size && nmemb > SIZE_MAX / size)
		out_of_memory(SIZE_MAX);
	p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		out_of_memory(nmemb * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		out_of_memory(n);
	return q;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *path_parent(const char *path)
{
	size_t n = strlen(path);

	while (n > 1 && path[n - 1] == '/')
		n--;
	while (n > 0 && path[n - 1] != '/')
		n--;
	while (n > 1 && path[n - 1] == '/')
		n--;
	return n ? xstrndup(path, n) : xstrdup(".");
}

int forge_parse_long(long *out, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (!*s || *end || errno == ERANGE)
		return forge_error("'%s' is not a whole number", s);
	if (v < min || v > max)
		return forge_error("'%s' is out of range (%ld to %ld)", s, min, max);
	*out = v;
	return 0;
}

int forge_parse_double(double *out, const char *s)
{
	char *end;
	double v;

	/* decimal only: strtod also takes hex ("0x10" would be 16) and leading
	 * blanks */
	if (!*s || isspace((unsigned char)*s) || strpbrk(s, "xXpP"))
		return forge_error("'%s' is not a number", s);
	errno = 0;
	v = strtod(s, &end);
	if (*end || errno == ERANGE || !isfinite(v))   /* (nan, inf: no amount) */
		return forge_error("'%s' is not a number", s);
	*out = v;
	return 0;
}
