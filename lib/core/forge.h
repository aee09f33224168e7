/*
 * forge.h - conventions shared by every module of libforge-common.
 *
 * Errors.  A library function that can fail returns an int: 0 (or a count)
 * on success, -1 on failure after recording a one-line message with
 * forge_error().  The caller reads it with forge_last_error() and decides
 * what to do; nothing in lib/ prints to stderr on its own or exits.
 *
 * Ownership.  Output parameters come first and are named `out`.  An object
 * returned through `**out` is owned by the caller and released with the
 * module's *_free(), which accepts NULL.  A pointer returned as the value of
 * a function is borrowed from its argument and lives as long as it does.
 * For libjq values the rule is in json.h: a jv argument is CONSUMED unless
 * the comment says "borrows".
 *
 * Names.  A module M has struct M, M_init() (set up without allocating the
 * struct), M_release() (free contents), M_free() (contents and struct).
 */
#ifndef FORGE_H
#define FORGE_H

#include <stddef.h>
#include <stdarg.h>

#define FORGE_VERSION "0.1.0"
#define FORGE_PROTOCOL_VERSION 1

/* Exit status of every forge program (DESIGN.md section 2). */
enum forge_exit {
	FORGE_EXIT_OK = 0,          /* phase passed */
	FORGE_EXIT_REJECTED = 1,    /* phase said no, or its guard did not hold */
	FORGE_EXIT_USAGE = 2,       /* usage error or bad input */
	FORGE_EXIT_TRIPPED = 3,     /* a circuit breaker tripped */
	FORGE_EXIT_HUMAN = 4,       /* a human is needed */
	FORGE_EXIT_DEPENDENCY = 5,  /* LLM provider, git or the database failed */
	FORGE_EXIT_INTERRUPTED = 130, /* SIGINT/SIGTERM */
	FORGE_EXIT_PIPE = 141       /* stdout's reader went away (as SIGPIPE would) */
};

/*
 * Record a printf-style message as the last error of this thread and
 * return -1, so library code can write `return forge_error("...")`.
 * Messages are lowercase, name the subject in quotes and end without a
 * full stop: "cannot open 'x.db': permission denied".
 */
int forge_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int forge_verror(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* The last message recorded by forge_error() ("" when none); borrowed. */
const char *forge_last_error(void);

/* Prefix the last error with more context: "opening db: <old message>". */
int forge_error_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A library the build linked against cannot be loaded (core/lazylib.h):
 * "forge: MESSAGE" on stderr, exit 5 -- what the dynamic loader does at a
 * program's start. */
void forge_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Allocation that cannot fail: on exhaustion the process ends (exit 5). */
void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/* The directory `path` names an entry of, as written ("." for a bare name,
 * "/" for an entry of the root; trailing slashes do not count); malloc'd. */
char *path_parent(const char *path);

/* Parse a whole decimal number / a decimal number (digits, a point, an
 * exponent: no hex, no leading blanks); -1 with a message if s is not one
 * (nor a finite one: nan and inf are refused). */
int forge_parse_long(long *out, const char *s, long min, long max);
int forge_parse_double(double *out, const char *s);

#endif
