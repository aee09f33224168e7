/* jqexpr.c - jq expressions over the state; see jqexpr.h. */
#include "core/jqexpr.h"
#include "core/buf.h"
#include "core/forge.h"

#include <errno.h>
#include <jq.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/*
 * text as shown in a message: whole when short, else its first cap bytes
 * (not cutting a UTF-8 character) and "…" - an expression of 200 KB was
 * echoed whole on one line of stderr, and libjq's own messages repeat it.
 * out holds cap + 4 bytes.
 */
#define SHOWN 200
#define SHOWN_ERRORS 400
static const char *shown(char *out, const char *text, size_t cap)
{
	size_t n = strlen(text);

	if (n <= cap)
		return text;
	n = cap;
	while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
		n--;
	memcpy(out, text, n);
	memcpy(out + n, "\xe2\x80\xa6", 4);	/* … and the NUL */
	return out;
}

/* A condition's only input is the state: `input` finds no more (libjq
 * 1.6 then raises "break", which `inputs` takes as its end). */
static jv no_input(jq_state *jq, void *payload)
{
	(void)jq;
	(void)payload;
	return jv_invalid();
}

static unsigned long compiles;

unsigned long jqexpr_compiles(void)
{
	return compiles;
}

static int compile(jq_state **out, const char *expr, struct buf *errors)
{
	jq_state *jq = jq_init();

	*out = NULL;
	compiles++;
	if (!jq)
		return forge_error("cannot start libjq");
	jq_set_error_cb(jq, collect_error, errors);
	/* libjq 1.6 calls a debug callback without checking that there is one
	 * (`debug` in a condition crashed the process), and looks for modules
	 * (`import`, `include`) in a library path it asserts is set: no
	 * module is taken from anywhere, and `debug` says nothing. */
	jq_set_debug_cb(jq, ignore_error, NULL);
	/* Nor does jq_init() set the input callback: `input` called a garbage
	 * pointer (SIGSEGV, or "break").  A condition has no inputs but the
	 * state: `input` fails with a message, `inputs` is empty. */
	jq_set_input_cb(jq, no_input, NULL);
	jq_set_attr(jq, jv_string("JQ_LIBRARY_PATH"), jv_array());
	if (!jq_compile(jq, expr)) {
		char e[SHOWN + 4], m[SHOWN_ERRORS + 4];
		forge_error("jq expression '%s' does not compile: %s", shown(e, expr, SHOWN),
			    errors->len ? shown(m, errors->buf, SHOWN_ERRORS) : "syntax error");
		jq_teardown(&jq);
		return -1;
	}
	/* The collector points at the caller's buffer: do not keep it. */
	jq_set_error_cb(jq, ignore_error, NULL);
	*out = jq;
	return 0;
}

struct node;
static struct node *parse(const char *expr, bool *too_deep);
static int refuse_deep(const char *expr);
static void node_free(struct node *n);
static bool native_on;

int jqexpr_check(const char *expr)
{
	struct buf errors = BUF_INIT;
	jq_state *jq;
	/* The C subset is jq: what it parses compiles (a pipeline's
	 * conditions are checked on every run; libjq's compile is the cost). */
	bool deep;
	struct node *tree = parse(expr, &deep);

	if (deep)
		return refuse_deep(expr);
	node_free(tree);
	if (tree && native_on)
		return 0;
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

/* Done with jq: a cached program stays (it ran in a child only, see
 * bounded(): never started here), another goes. */
static void done_with(jq_state *jq)
{
	for (size_t i = 0; i < CACHE_MAX && cache[i].expr; i++)
		if (cache[i].jq == jq)
			return;
	jq_teardown(&jq);
}


/* ---- the subset evaluated in C ----------------------------------------- */

/*
 * The grammar (jq's own precedences; anything else is left to libjq):
 *   pipe := or ('|' or)*          or   := and ('or' and)*
 *   and  := cmp ('and' cmp)*      cmp  := mul [('=='|'!='|'<'|'<='|'>'|'>=') mul]
 *   mul  := post ('*' post)*      post := primary FIELD*
 *   primary := '.' | FIELD | NUMBER | "STRING" | null | true | false | length
 *            | '(' pipe ')' | '[' post '[' ']' '?' ['|' 'select' '(' pipe ')'] ']'
 * where FIELD is `.name` and a STRING has no escapes and only printable
 * ASCII.  Every node yields exactly one value.  Evaluation gives up
 * (NATIVE_UNSURE) exactly where libjq would raise an error, so the caller
 * runs libjq for that input and reports its message.
 */
enum node_kind { N_DOT, N_FIELD, N_LIT, N_LENGTH, N_OR, N_AND, N_CMP, N_MUL, N_PIPE, N_COLLECT };
enum cmp_op { OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE };

struct node {
	enum node_kind kind;
	enum cmp_op op;
	char *name;                 /* N_FIELD */
	jv lit;                     /* N_LIT */
	struct node *a, *b;         /* operands; N_FIELD: a is the indexed term;
				     * N_COLLECT: a iterated, b the select or NULL */
};

/*
 * Bounds on the C subset's trees: parse(), eval() and node_free() recurse,
 * once per level of nesting and once per term of a chain (`.a.a.a`, `a and
 * b and c`).  30,000 parentheses or 100,000 `.a` overflowed the stack
 * (SIGSEGV); beyond these an expression is refused with a message.
 */
#define MAX_NESTING 200
#define MAX_TERMS 10000

struct parser {
	const char *p;
	bool bad;
	bool too_deep;              /* over MAX_NESTING or MAX_TERMS */
	int nesting;
	int terms;
};

static int refuse_deep(const char *expr)
{
	char e[SHOWN + 4];

	return forge_error("jq expression '%s' is nested too deeply (more than %d levels of parentheses "
			   "or brackets, or %d terms): split it, or simplify it",
			   shown(e, expr, SHOWN), MAX_NESTING, MAX_TERMS);
}

static void node_free(struct node *n)
{
	if (!n)
		return;
	node_free(n->a);
	node_free(n->b);
	free(n->name);
	if (n->kind == N_LIT)
		jv_free(n->lit);
	free(n);
}

static struct node *node_new(struct parser *ps, enum node_kind kind, struct node *a, struct node *b)
{
	struct node *n = xcalloc(1, sizeof *n);

	if (++ps->terms > MAX_TERMS)
		ps->bad = ps->too_deep = true;

	n->kind = kind;
	n->a = a;
	n->b = b;
	return n;
}

static bool ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool ident_char(char c)
{
	return ident_start(c) || is_digit(c);
}

/* jq 1.6's keywords: `.name` with one of these is not a field there. */
static bool keyword(const char *s, size_t n)
{
	static const char *const words[] = {
		"as", "import", "include", "module", "def", "if", "then", "elif", "else", "end", "reduce",
		"foreach", "and", "or", "try", "catch", "label", "__loc__",
	};

	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		if (strlen(words[i]) == n && strncmp(words[i], s, n) == 0)
			return true;
	return false;
}

static void skip_space(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
		ps->p++;
}

/* Consume token tok (punctuation) when it comes next. */
static bool accept(struct parser *ps, const char *tok)
{
	size_t n = strlen(tok);

	skip_space(ps);
	if (strncmp(ps->p, tok, n) != 0)
		return false;
	ps->p += n;
	return true;
}

/* Consume keyword kw when it comes next as a whole word. */
static bool accept_word(struct parser *ps, const char *kw)
{
	size_t n = strlen(kw);

	skip_space(ps);
	if (strncmp(ps->p, kw, n) != 0 || ident_char(ps->p[n]))
		return false;
	ps->p += n;
	return true;
}

static struct node *parse_pipe(struct parser *ps);

/* A FIELD token `.name` next: the name (malloc'd), else NULL. */
static char *field(struct parser *ps)
{
	skip_space(ps);
	if (ps->p[0] != '.' || !ident_start(ps->p[1]))
		return NULL;
	const char *start = ps->p + 1, *end = start;
	while (ident_char(*end))
		end++;
	/* `.a::b`, `.a?`, `.if`: not this subset's */
	if (*end == ':' || *end == '?' || keyword(start, (size_t)(end - start))) {
		ps->bad = true;
		return NULL;
	}
	ps->p = end;
	return xstrndup(start, (size_t)(end - start));
}

static struct node *parse_post(struct parser *ps);

static struct node *parse_collect(struct parser *ps)
{
	struct node *n = node_new(ps, N_COLLECT, parse_post(ps), NULL);

	if (!accept(ps, "[") || !accept(ps, "]") || !accept(ps, "?")) {
		ps->bad = true;
		return n;
	}
	if (accept(ps, "|")) {
		if (!accept_word(ps, "select") || !accept(ps, "(")) {
			ps->bad = true;
			return n;
		}
		n->b = parse_pipe(ps);
		if (!accept(ps, ")"))
			ps->bad = true;
	}
	if (!accept(ps, "]"))
		ps->bad = true;
	return n;
}

static struct node *parse_primary(struct parser *ps)
{
	struct node *n;
	char *name;

	skip_space(ps);
	if (ps->bad)
		return NULL;
	if ((name = field(ps))) {
		n = node_new(ps, N_FIELD, node_new(ps, N_DOT, NULL, NULL), NULL);
		n->name = name;
		return n;
	}
	if (is_digit(*ps->p) || (*ps->p == '.' && is_digit(ps->p[1]))) {
		/* jq's number: ([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)? */
		const char *q = ps->p;
		while (is_digit(*q))
			q++;
		if (*q == '.')
			for (q++; is_digit(*q); q++)
				;
		if ((*q == 'e' || *q == 'E') && (is_digit(q[1]) || ((q[1] == '+' || q[1] == '-') && is_digit(q[2]))))
			for (q += 2; is_digit(*q); q++)
				;
		if (ident_char(*q) || *q == '.') {
			ps->bad = true;
			return NULL;
		}
		char *text = xstrndup(ps->p, (size_t)(q - ps->p));
		n = node_new(ps, N_LIT, NULL, NULL);
		n->lit = jv_number(strtod(text, NULL));
		free(text);
		ps->p = q;
		return n;
	}
	if (*ps->p == '.' && ps->p[1] != '.' && ps->p[1] != '[' && ps->p[1] != '"' && ps->p[1] != '?') {
		ps->p++;
		return node_new(ps, N_DOT, NULL, NULL);
	}
	if (*ps->p == '"') {
		const char *start = ++ps->p;
		while (*ps->p >= 0x20 && *ps->p < 0x7f && *ps->p != '"' && *ps->p != '\\')
			ps->p++;
		if (*ps->p != '"') {
			ps->bad = true;
			return NULL;
		}
		n = node_new(ps, N_LIT, NULL, NULL);
		n->lit = jv_string_sized(start, (int)(ps->p - start));
		ps->p++;
		return n;
	}
	if ((*ps->p == '(' || *ps->p == '[') && ++ps->nesting > MAX_NESTING) {
		ps->bad = ps->too_deep = true;
		return NULL;
	}
	if (accept(ps, "(")) {
		n = parse_pipe(ps);
		if (!accept(ps, ")"))
			ps->bad = true;
		ps->nesting--;
		return n;
	}
	if (accept(ps, "[")) {
		n = parse_collect(ps);
		ps->nesting--;
		return n;
	}
	static const struct { const char *word; jv_kind kind; } lits[] = {
		{ "null", JV_KIND_NULL }, { "true", JV_KIND_TRUE }, { "false", JV_KIND_FALSE },
	};
	for (size_t i = 0; i < sizeof lits / sizeof lits[0]; i++)
		if (accept_word(ps, lits[i].word)) {
			n = node_new(ps, N_LIT, NULL, NULL);
			n->lit = lits[i].kind == JV_KIND_NULL ? jv_null() : jv_bool(lits[i].kind == JV_KIND_TRUE);
			return n;
		}
	if (accept_word(ps, "length"))
		return node_new(ps, N_LENGTH, NULL, NULL);
	ps->bad = true;
	return NULL;
}

static struct node *parse_post(struct parser *ps)
{
	struct node *n = parse_primary(ps);
	char *name;

	while (!ps->bad && (name = field(ps))) {
		n = node_new(ps, N_FIELD, n, NULL);
		n->name = name;
	}
	return n;
}

static struct node *parse_mul(struct parser *ps)
{
	struct node *n = parse_post(ps);

	while (!ps->bad && accept(ps, "*"))
		n = node_new(ps, N_MUL, n, parse_post(ps));
	return n;
}

static struct node *parse_cmp(struct parser *ps)
{
	static const struct { const char *tok; enum cmp_op op; } ops[] = {
		{ "==", OP_EQ }, { "!=", OP_NE }, { "<=", OP_LE }, { ">=", OP_GE }, { "<", OP_LT }, { ">", OP_GT },
	};
	struct node *n = parse_mul(ps);

	for (size_t i = 0; !ps->bad && i < sizeof ops / sizeof ops[0]; i++)
		if (accept(ps, ops[i].tok)) {
			n = node_new(ps, N_CMP, n, parse_mul(ps));
			n->op = ops[i].op;
			break;
		}
	return n;
}

static struct node *parse_and(struct parser *ps)
{
	struct node *n = parse_cmp(ps);

	while (!ps->bad && accept_word(ps, "and"))
		n = node_new(ps, N_AND, n, parse_cmp(ps));
	return n;
}

static struct node *parse_or(struct parser *ps)
{
	struct node *n = parse_and(ps);

	while (!ps->bad && accept_word(ps, "or"))
		n = node_new(ps, N_OR, n, parse_and(ps));
	return n;
}

static struct node *parse_pipe(struct parser *ps)
{
	struct node *n = parse_or(ps);

	while (!ps->bad && accept(ps, "|"))
		n = node_new(ps, N_PIPE, n, parse_or(ps));
	return n;
}

/* The tree of expr, or NULL when expr is not in the subset; *too_deep
 * when it is nested or chained beyond the bounds above (refused). */
static struct node *parse(const char *expr, bool *too_deep)
{
	struct parser ps = { .p = expr };
	struct node *n = parse_pipe(&ps);

	skip_space(&ps);
	*too_deep = ps.too_deep;
	if (ps.bad || *ps.p) {
		node_free(n);
		return NULL;
	}
	return n;
}

enum { NATIVE_OK = 0, NATIVE_UNSURE = -1, NATIVE_REFUSED = -2 };

static bool truthy(jv v)
{
	jv_kind k = jv_get_kind(v);

	return k != JV_KIND_FALSE && k != JV_KIND_NULL;
}

/* n over in (borrowed): NATIVE_OK with *out (owned), or NATIVE_UNSURE. */
static int eval(jv *out, const struct node *n, jv in)
{
	jv a, b;
	int rc;

	*out = jv_invalid();
	switch (n->kind) {
	case N_DOT:
		*out = jv_copy(in);
		return NATIVE_OK;
	case N_LIT:
		*out = jv_copy(n->lit);
		return NATIVE_OK;
	case N_FIELD:
		if (eval(&a, n->a, in) < 0)
			return NATIVE_UNSURE;
		if (jv_get_kind(a) == JV_KIND_NULL) {
			*out = a;
			return NATIVE_OK;
		}
		if (jv_get_kind(a) != JV_KIND_OBJECT) {	/* "Cannot index ..." */
			jv_free(a);
			return NATIVE_UNSURE;
		}
		b = jv_object_get(a, jv_string(n->name));
		*out = jv_is_valid(b) ? b : jv_null();
		return NATIVE_OK;
	case N_LENGTH:
		switch (jv_get_kind(in)) {
		case JV_KIND_NULL: *out = jv_number(0); return NATIVE_OK;
		case JV_KIND_ARRAY: *out = jv_number(jv_array_length(jv_copy(in))); return NATIVE_OK;
		case JV_KIND_OBJECT: *out = jv_number(jv_object_length(jv_copy(in))); return NATIVE_OK;
		default: return NATIVE_UNSURE;
		}
	case N_OR:
	case N_AND:
		if (eval(&a, n->a, in) < 0)
			return NATIVE_UNSURE;
		bool first = truthy(a);
		jv_free(a);
		if (first == (n->kind == N_OR)) {	/* decided by the left side */
			*out = jv_bool(first);
			return NATIVE_OK;
		}
		if (eval(&b, n->b, in) < 0)
			return NATIVE_UNSURE;
		*out = jv_bool(truthy(b));
		jv_free(b);
		return NATIVE_OK;
	case N_CMP:
		if (eval(&a, n->a, in) < 0)
			return NATIVE_UNSURE;
		if (eval(&b, n->b, in) < 0) {
			jv_free(a);
			return NATIVE_UNSURE;
		}
		if (n->op == OP_EQ || n->op == OP_NE) {
			*out = jv_bool(jv_equal(a, b) == (n->op == OP_EQ));
		} else {
			int c = jv_cmp(a, b);
			*out = jv_bool(n->op == OP_LT ? c < 0 : n->op == OP_LE ? c <= 0 : n->op == OP_GT ? c > 0 : c >= 0);
		}
		return NATIVE_OK;
	case N_MUL:
		if (eval(&a, n->a, in) < 0)
			return NATIVE_UNSURE;
		if (eval(&b, n->b, in) < 0) {
			jv_free(a);
			return NATIVE_UNSURE;
		}
		rc = NATIVE_UNSURE;	/* strings, objects: libjq's other meanings */
		if (jv_get_kind(a) == JV_KIND_NUMBER && jv_get_kind(b) == JV_KIND_NUMBER) {
			*out = jv_number(jv_number_value(a) * jv_number_value(b));
			rc = NATIVE_OK;
		}
		jv_free(a);
		jv_free(b);
		return rc;
	case N_PIPE:
		if (eval(&a, n->a, in) < 0)
			return NATIVE_UNSURE;
		rc = eval(out, n->b, a);
		jv_free(a);
		return rc;
	case N_COLLECT: {
		if (eval(&a, n->a, in) < 0)
			return NATIVE_UNSURE;
		/* `[]?` yields nothing, silently, from what it cannot iterate. */
		jv items = jv_get_kind(a) == JV_KIND_OBJECT ? jv_array() : jv_copy(a);
		if (jv_get_kind(a) == JV_KIND_OBJECT) {
			jv_object_foreach(a, k, v) {
				items = jv_array_append(items, v);
				jv_free(k);
			}
		}
		jv_free(a);
		jv kept = jv_array();
		rc = NATIVE_OK;
		if (jv_get_kind(items) == JV_KIND_ARRAY) {
			jv_array_foreach(items, i, v) {
				bool keep = true;
				if (rc == NATIVE_OK && n->b) {
					rc = eval(&b, n->b, v);
					keep = rc == NATIVE_OK && truthy(b);
					jv_free(b);
				}
				if (rc == NATIVE_OK && keep)
					kept = jv_array_append(kept, jv_copy(v));
				jv_free(v);
			}
		}
		jv_free(items);
		if (rc < 0) {
			jv_free(kept);
			return NATIVE_UNSURE;
		}
		*out = kept;
		return NATIVE_OK;
	}
	}
	return NATIVE_UNSURE;
}

static bool native_on = true;

void jqexpr_set_native(bool on)
{
	native_on = on;
}

/* Parsed expressions, kept like the compiled ones (tree NULL: not in the
 * subset, libjq's). */
static struct parsed {
	char *expr;
	struct node *tree;
	bool too_deep;
} parsed[CACHE_MAX];

static void drop_parsed(void)
{
	for (size_t i = 0; i < CACHE_MAX && parsed[i].expr; i++) {
		node_free(parsed[i].tree);
		free(parsed[i].expr);
		parsed[i].expr = NULL;
	}
}

/* expr over input in C: NATIVE_OK with *out, NATIVE_UNSURE (libjq's), or
 * NATIVE_REFUSED with a message (too deep for either). */
static int native(jv *out, const char *expr, jv input)
{
	static bool registered;
	struct node *tree = NULL;
	bool deep;
	size_t i;

	*out = jv_invalid();
	if (!native_on)
		return NATIVE_UNSURE;
	for (i = 0; i < CACHE_MAX && parsed[i].expr; i++)
		if (strcmp(parsed[i].expr, expr) == 0)
			break;
	if (i < CACHE_MAX && parsed[i].expr) {
		tree = parsed[i].tree;
		deep = parsed[i].too_deep;
	} else {
		tree = parse(expr, &deep);
		if (i == CACHE_MAX) {	/* full: use it once */
			int rc = deep ? NATIVE_REFUSED : tree ? eval(out, tree, input) : NATIVE_UNSURE;
			node_free(tree);
			if (deep)
				refuse_deep(expr);
			return rc;
		}
		if (!registered) {
			atexit(drop_parsed);
			registered = true;
		}
		parsed[i].expr = xstrdup(expr);
		parsed[i].tree = tree;
		parsed[i].too_deep = deep;
	}
	if (deep) {
		refuse_deep(expr);
		return NATIVE_REFUSED;
	}
	return tree ? eval(out, tree, input) : NATIVE_UNSURE;
}

int jqexpr_native_first(jv *out, const char *expr, jv input)
{
	bool was = native_on;

	native_on = true;
	int rc = native(out, expr, input);
	native_on = was;
	if (rc == NATIVE_OK)
		return 0;
	jv_free(*out);
	*out = jv_invalid();
	return 1;
}

static unsigned bound_ms = JQEXPR_DEFAULT_MS;
static bool (*bound_stop)(void);

void jqexpr_set_bounds(unsigned timeout_ms, bool (*stop)(void))
{
	bound_ms = timeout_ms ? timeout_ms : JQEXPR_DEFAULT_MS;
	bound_stop = stop;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* In the child: jq's first output over input as one JSON text on fd,
 * [0, value] | [1, message] | [2] (halted) | [3] (no output). */
static void first_to(int fd, jq_state *jq, jv input)
{
	jv r = jv_array();

	jq_start(jq, input, 0);
	jv result = jq_next(jq);
	if (jv_is_valid(result)) {
		r = jv_array_append(jv_array_append(r, jv_number(0)), result);
	} else {
		jv msg = jv_invalid_get_msg(result);
		if (jv_get_kind(msg) == JV_KIND_STRING) {
			r = jv_array_append(jv_array_append(r, jv_number(1)), msg);
		} else if (jv_get_kind(msg) != JV_KIND_NULL) {
			r = jv_array_append(jv_array_append(r, jv_number(1)), jv_dump_string(msg, 0));
		} else {
			jv_free(msg);
			r = jv_array_append(r, jv_number(jq_halted(jq) ? 2 : 3));
		}
	}
	jv text = jv_dump_string(r, 0);
	const char *p = jv_string_value(text);
	size_t left = strlen(p);
	while (left > 0) {
		ssize_t w = write(fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		p += w;
		left -= (size_t)w;
	}
	jv_free(text);
}

/*
 * libjq's jq_next() cannot be interrupted, and a condition may never end
 * (`until(false; .)`): a run hung for good, deaf to SIGINT and SIGTERM.
 * jq runs in a child process, which is killed past bound_ms or when
 * bound_stop() says so.  The reply as first_to() writes it, or -1 with a
 * message.
 */
static int bounded(jv *reply, const char *expr, jq_state *jq, jv input)
{
	char e[SHOWN + 4];
	int fds[2];
	sigset_t all, old;
	struct buf got = BUF_INIT;
	int rc = -1;

	*reply = jv_invalid();
	if (pipe(fds) < 0)
		return forge_error("jq expression '%s': cannot make a pipe: %s", shown(e, expr, SHOWN), strerror(errno));
	/* no handler of this process's runs in the child */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = fork();
	if (pid == 0) {
		static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGALRM, SIGCHLD, SIGUSR1, SIGUSR2 };
		for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++)
			signal(sigs[k], SIG_DFL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		close(fds[0]);
		first_to(fds[1], jq, jv_copy(input));
		_exit(0);
	}
	int fork_errno = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return forge_error("jq expression '%s': cannot fork: %s", shown(e, expr, SHOWN), strerror(fork_errno));
	}
	int64_t deadline = now_ms() + bound_ms;
	const char *why = NULL;
	for (;;) {
		char chunk[4096];
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		if (bound_stop && bound_stop()) {
			why = "interrupted";
			break;
		}
		int64_t left = deadline - now_ms();
		if (left <= 0) {
			why = "timeout";
			break;
		}
		int n = poll(&pfd, 1, left < 100 ? (int)left : 100);
		if (n < 0 && errno != EINTR)
			break;
		if (n <= 0)
			continue;
		ssize_t r = read(fds[0], chunk, sizeof chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		buf_add(&got, chunk, (size_t)r);
	}
	close(fds[0]);
	if (why)
		kill(pid, SIGKILL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (why && strcmp(why, "interrupted") == 0) {
		rc = forge_error("jq expression '%s' was interrupted (SIGINT or SIGTERM)", shown(e, expr, SHOWN));
	} else if (why) {
		rc = forge_error("jq expression '%s' did not end within %u ms: a condition must be quick "
				 "(does it loop, e.g. until/while/repeat/recurse?)", shown(e, expr, SHOWN), bound_ms);
	} else if (!got.len || !jv_is_valid(*reply = jv_parse_sized(got.buf, (int)got.len))) {
		jv_free(*reply);
		*reply = jv_invalid();
		rc = forge_error("jq expression '%s' failed: libjq %s", shown(e, expr, SHOWN),
				 WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "gave no answer");
	} else {
		rc = 0;
	}
	buf_release(&got);
	return rc;
}

int jqexpr_first(jv *out, const char *expr, jv input)
{
	struct buf errors = BUF_INIT;
	jq_state *jq;
	int rc = 0;

	char e[SHOWN + 4];

	int nrc = native(out, expr, input);
	if (nrc == NATIVE_OK)
		return 0;
	if (nrc == NATIVE_REFUSED)
		return -1;
	if (compiled(&jq, expr, &errors) < 0) {
		buf_release(&errors);
		return -1;
	}
	jv reply;
	if (bounded(&reply, expr, jq, input) < 0) {
		rc = -1;
	} else {
		int kind = (int)jv_number_value(jv_array_get(jv_copy(reply), 0));
		jv val = jv_array_length(jv_copy(reply)) > 1 ? jv_array_get(jv_copy(reply), 1) : jv_null();
		if (kind == 0) {
			*out = val;
			val = jv_null();
		} else if (kind == 1 && strcmp(jv_string_value(val), "break") == 0) {
			rc = forge_error("jq expression '%s' failed: no more inputs (`input` reads past the state, "
					 "a condition's only input: use `.`)", shown(e, expr, SHOWN));
		} else if (kind == 1) {
			rc = forge_error("jq expression '%s' failed: %s", shown(e, expr, SHOWN), jv_string_value(val));
		} else if (kind == 2) {
			/* halt, halt_error: no output, but not "false" either (before:
			 * a when of halt_error skipped its node silently) */
			rc = forge_error("jq expression '%s' failed: it halted (halt, halt_error)", shown(e, expr, SHOWN));
		} else {
			rc = forge_error("jq expression '%s' gave no output", shown(e, expr, SHOWN));
		}
		jv_free(val);
		jv_free(reply);
	}
	done_with(jq);
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
