/* jqexpr.c - jq expressions over the state; see jqexpr.h. */
#include "core/jqexpr.h"
#include "core/buf.h"
#include "core/forge.h"

#include <jq.h>
#include <stdlib.h>
#include <string.h>

/* libjq reports compile errors through a callback, one message per call. */
static void collect_error(void *payload, jv msg)
{
	struct buf *b = payload;

	if (jv_get_kind(msg) == JV_KIND_STRING) {
		if (b->len)
			buf_adds(b, "; ");
		buf_adds(b, jv_string_value(msg));
	}
	jv_free(msg);
}

static void ignore_error(void *payload, jv msg)
{
	(void)payload;
	jv_free(msg);
}

static int compile(jq_state **out, const char *expr, struct buf *errors)
{
	jq_state *jq = jq_init();

	*out = NULL;
	if (!jq)
		return forge_error("cannot start libjq");
	jq_set_error_cb(jq, collect_error, errors);
	if (!jq_compile(jq, expr)) {
		forge_error("jq expression '%s' does not compile: %s", expr,
			    errors->len ? errors->buf : "syntax error");
		jq_teardown(&jq);
		return -1;
	}
	/* The collector points at the caller's buffer: do not keep it. */
	jq_set_error_cb(jq, ignore_error, NULL);
	*out = jq;
	return 0;
}

int jqexpr_check(const char *expr)
{
	struct buf errors = BUF_INIT;
	jq_state *jq;
	int rc = compile(&jq, expr, &errors);

	jq_teardown(&jq);
	buf_release(&errors);
	return rc;
}

/*
 * Compiled programs, kept for the life of the process: the supervisor checks
 * the same gate conditions before every phase, and compiling is the costly
 * part.  jq_start() resets a program for a new input.
 */
#define CACHE_MAX 64
static struct compiled {
	char *expr;
	jq_state *jq;
} cache[CACHE_MAX];

/* At exit: tear the cached programs down (libjq keeps memory a leak
 * checker would otherwise report). */
static void drop_cache(void)
{
	for (size_t i = 0; i < CACHE_MAX && cache[i].expr; i++) {
		jq_teardown(&cache[i].jq);
		free(cache[i].expr);
		cache[i].expr = NULL;
	}
}

static int compiled(jq_state **out, const char *expr, struct buf *errors)
{
	static bool registered;

	size_t i;

	for (i = 0; i < CACHE_MAX && cache[i].expr; i++)
		if (strcmp(cache[i].expr, expr) == 0) {
			*out = cache[i].jq;
			return 0;
		}
	if (compile(out, expr, errors) < 0)
		return -1;
	if (i < CACHE_MAX) {
		if (!registered) {
			atexit(drop_cache);
			registered = true;
		}
		cache[i].expr = xstrdup(expr);
		cache[i].jq = *out;
	}
	return 0;
}

/* Done with jq: keep a cached program, unless it failed - libjq 1.6 does
 * not reset a program that raised an error cleanly, so that one goes. */
static void release(jq_state *jq, bool failed)
{
	size_t i, n = 0;

	while (n < CACHE_MAX && cache[n].expr)
		n++;
	for (i = 0; i < n && cache[i].jq != jq; i++)
		;
	if (i < n && !failed) {
		/* libjq 1.6 leaks a program's pending outputs when it is reset:
		 * drain them (a few at most for a condition), else drop it. */
		int left = 1000;
		jv v;
		while (left-- > 0 && jv_is_valid(v = jq_next(jq)))
			jv_free(v);
		if (left >= 0) {
			jv_free(v);
			return;
		}
	}
	if (i < n) {
		free(cache[i].expr);
		cache[i] = cache[n - 1];
		cache[n - 1].expr = NULL;
		cache[n - 1].jq = NULL;
	}
	jq_teardown(&jq);
}

int jqexpr_first(jv *out, const char *expr, jv input)
{
	struct buf errors = BUF_INIT;
	jq_state *jq;
	int rc = 0;

	*out = jv_invalid();
	if (compiled(&jq, expr, &errors) < 0) {
		buf_release(&errors);
		return -1;
	}
	jq_start(jq, jv_copy(input), 0);
	jv result = jq_next(jq);
	if (!jv_is_valid(result)) {
		jv msg = jv_invalid_get_msg(result);
		if (jv_get_kind(msg) == JV_KIND_STRING)
			rc = forge_error("jq expression '%s' failed: %s", expr, jv_string_value(msg));
		else if (jv_get_kind(msg) != JV_KIND_NULL) {
			jv s = jv_dump_string(msg, 0);
			rc = forge_error("jq expression '%s' failed: %s", expr, jv_string_value(s));
			jv_free(s);
			msg = jv_null();
		} else {
			rc = forge_error("jq expression '%s' gave no output", expr);
		}
		jv_free(msg);
	} else {
		*out = result;
	}
	release(jq, rc < 0);
	buf_release(&errors);
	return rc;
}

int jqexpr_test(bool *out, const char *expr, jv input)
{
	jv v;

	*out = false;
	if (jqexpr_first(&v, expr, input) < 0)
		return strstr(forge_last_error(), "gave no output") ? 0 : -1;
	jv_kind k = jv_get_kind(v);
	*out = k != JV_KIND_FALSE && k != JV_KIND_NULL;
	jv_free(v);
	return 0;
}
