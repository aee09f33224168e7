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
 * part.  jq_start() resets a program for a new input.  Entries made by
 * jqexpr_prepare() share one program: sel >= 0 picks theirs (the program
 * runs on [sel, input]); sel is -1 for a program of its own.
 */
#define CACHE_MAX 64
static struct compiled {
	char *expr;
	jq_state *jq;
	int sel;
} cache[CACHE_MAX];

static size_t cache_len(void)
{
	size_t n = 0;

	while (n < CACHE_MAX && cache[n].expr)
		n++;
	return n;
}

/* Forget every entry running jq and tear it down (once). */
static void cache_drop(jq_state *jq)
{
	size_t n = cache_len(), i = 0;

	while (i < n) {
		if (cache[i].jq == jq) {
			free(cache[i].expr);
			cache[i] = cache[n - 1];
			cache[n - 1].expr = NULL;
			cache[n - 1].jq = NULL;
			n--;
		} else {
			i++;
		}
	}
	jq_teardown(&jq);
}

/* At exit: tear the cached programs down (libjq keeps memory a leak
 * checker would otherwise report). */
static void drop_cache(void)
{
	while (cache[0].expr)
		cache_drop(cache[0].jq);
}

static void register_drop(void)
{
	static bool registered;

	if (!registered) {
		atexit(drop_cache);
		registered = true;
	}
}

static int compiled(jq_state **out, int *sel, const char *expr, struct buf *errors)
{
	size_t i;

	*sel = -1;
	for (i = 0; i < CACHE_MAX && cache[i].expr; i++)
		if (strcmp(cache[i].expr, expr) == 0) {
			*out = cache[i].jq;
			*sel = cache[i].sel;
			return 0;
		}
	if (compile(out, expr, errors) < 0)
		return -1;
	if (i < CACHE_MAX) {
		register_drop();
		cache[i].expr = xstrdup(expr);
		cache[i].jq = *out;
		cache[i].sel = -1;
	}
	return 0;
}

/* Done with jq: keep a cached program, unless it failed - libjq 1.6 does
 * not reset a program that raised an error cleanly, so that one goes (with
 * every expression it runs: they compile again, alone, when next used). */
static void release(jq_state *jq, bool failed)
{
	size_t i, n = cache_len();

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
	if (i < n)
		cache_drop(jq);
	else
		jq_teardown(&jq);
}

int jqexpr_prepare(const char *const *exprs, size_t n)
{
	struct buf prog = BUF_INIT, errors = BUF_INIT;
	const char *todo[CACHE_MAX];
	size_t k = 0, room = CACHE_MAX - cache_len();
	jq_state *jq = NULL;
	int sel;

	for (size_t i = 0; i < n && k < room; i++) {
		bool dup = false;
		if (!exprs[i])
			continue;
		for (size_t j = 0; j < k && !dup; j++)
			dup = strcmp(todo[j], exprs[i]) == 0;
		for (size_t j = 0; j < CACHE_MAX && cache[j].expr && !dup; j++)
			dup = strcmp(cache[j].expr, exprs[i]) == 0;
		if (!dup)
			todo[k++] = exprs[i];
	}
	if (k < 2)
		return 0;       /* nothing to share */
	/* Each expression is a function of its own (its text on lines of its
	 * own: a trailing comment cannot swallow the parenthesis). */
	for (size_t i = 0; i < k; i++)
		buf_addf(&prog, "def __forge_expr%zu: (\n%s\n);\n", i, todo[i]);
	buf_adds(&prog, ".[0] as $__forge_sel | .[1] | ");
	for (size_t i = 0; i < k; i++)
		buf_addf(&prog, "%sif $__forge_sel == %zu then __forge_expr%zu", i ? " el" : "", i, i);
	buf_adds(&prog, " else empty end");
	sel = 0;
	if (compile(&jq, prog.buf, &errors) < 0) {
		/* one of them has an error: each compiles alone when used and
		 * reports its own; nothing is reported here */
		sel = -1;
	} else {
		register_drop();
		for (size_t i = 0; i < k; i++) {
			size_t at = cache_len();
			cache[at].expr = xstrdup(todo[i]);
			cache[at].jq = jq;
			cache[at].sel = (int)i;
		}
	}
	buf_release(&prog);
	buf_release(&errors);
	return sel < 0 ? 0 : (int)k;
}

int jqexpr_first(jv *out, const char *expr, jv input)
{
	struct buf errors = BUF_INIT;
	jq_state *jq;
	int rc = 0, sel;

	*out = jv_invalid();
	if (compiled(&jq, &sel, expr, &errors) < 0) {
		buf_release(&errors);
		return -1;
	}
	if (sel >= 0)
		jq_start(jq, jv_array_append(jv_array_append(jv_array(), jv_number(sel)), jv_copy(input)), 0);
	else
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
