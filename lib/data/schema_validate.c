/*
 * schema_validate.c - validate a jv instance against a compiled schema.
 *
 * Validation walks the node graph and the instance together.  It stops at the
 * first error, or with `all` goes on past it to the next member, item and
 * keyword, up to SCHEMA_MAX_ERRORS; a message names the instance path in jq
 * syntax.  Sub-checks whose failure is not itself an error (the branches of
 * anyOf/oneOf/not) run "quiet", building neither paths nor messages.
 */
#include "data/schema_internal.h"
#include "core/forge.h"
#include "core/json.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ validation -- */

struct vctx {
	int quiet;              /* answer only: no paths, no messages */
	int depth;
	struct buf path;        /* jq-style path of the current instance */
	char *msg;              /* the first error, "path: what" */
	bool all;               /* every error, into errors */
	bool more;              /* all: errors past SCHEMA_MAX_ERRORS were met */
	jv errors;              /* all: the distinct "path: what" met so far */
};

/* all: after an error, go on to the next member, item or keyword. */
static bool keep_going(const struct vctx *v)
{
	return v->all && !v->more;
}

/* all: keep msg (consumed) unless it is there already. */
static void add_error(struct vctx *v, char *msg)
{
	int n = jv_array_length(jv_copy(v->errors));

	for (int i = 0; i < n; i++) {
		jv e = jv_array_get(jv_copy(v->errors), i);
		bool same = strcmp(jv_string_value(e), msg) == 0;

		jv_free(e);
		if (same) {
			free(msg);
			return;
		}
	}
	if (n < SCHEMA_MAX_ERRORS)
		v->errors = jv_array_append(v->errors, jv_string(msg));
	else
		v->more = true;
	free(msg);
}

static bool fail(struct vctx *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool fail(struct vctx *v, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;

	if (v->quiet || (v->msg && !v->all))
		return false;
	buf_adds(&b, v->path.len ? v->path.buf : ".");
	buf_adds(&b, ": ");
	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (v->all)
		add_error(v, buf_detach(&b, NULL));
	else
		v->msg = buf_detach(&b, NULL);
	return false;
}

static bool is_identifier(const char *s, size_t len)
{
	if (len == 0 || !(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
		return false;
	for (size_t i = 1; i < len; i++)
		if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

/* Extend the path with .key (or ."odd key"); borrows key. */
static size_t path_push_key(struct vctx *v, jv key)
{
	size_t old = v->path.len;
	const char *s = jv_string_value(key);
	size_t len = (size_t)jv_string_length_bytes(jv_copy(key));

	if (v->quiet)
		return old;
	buf_addch(&v->path, '.');
	if (is_identifier(s, len)) {
		buf_add(&v->path, s, len);
	} else {
		jv q = jv_dump_string(jv_copy(key), 0);
		buf_adds(&v->path, jv_string_value(q));
		jv_free(q);
	}
	return old;
}

/* Extend the path with [i] (.[i] at the top), without printf's cost. */
static size_t path_push_index(struct vctx *v, int i)
{
	size_t old = v->path.len;
	char digits[16], *p = digits + sizeof digits;
	unsigned u = (unsigned)i;

	if (v->quiet)
		return old;
	do
		*--p = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (!v->path.len)
		buf_addch(&v->path, '.');
	buf_addch(&v->path, '[');
	buf_add(&v->path, p, (size_t)(digits + sizeof digits - p));
	buf_addch(&v->path, ']');
	return old;
}

static const char *kind_name(jv x)
{
	switch (jv_get_kind(x)) {
	case JV_KIND_NULL: return "null";
	case JV_KIND_TRUE:
	case JV_KIND_FALSE: return "boolean";
	case JV_KIND_NUMBER: return "number";
	case JV_KIND_STRING: return "string";
	case JV_KIND_ARRAY: return "array";
	case JV_KIND_OBJECT: return "object";
	default: return "invalid";
	}
}

static bool is_integer(double d)
{
	return isfinite(d) && d == floor(d);
}

static unsigned instance_types(jv x)
{
	switch (jv_get_kind(x)) {
	case JV_KIND_NULL: return T_NULL;
	case JV_KIND_TRUE:
	case JV_KIND_FALSE: return T_BOOLEAN;
	case JV_KIND_NUMBER:
		return T_NUMBER | (is_integer(jv_number_value(x)) ? T_INTEGER : 0);
	case JV_KIND_STRING: return T_STRING;
	case JV_KIND_ARRAY: return T_ARRAY;
	case JV_KIND_OBJECT: return T_OBJECT;
	default: return 0;
	}
}

/* A short rendering of a value for messages: strings bare, others as JSON,
 * cut at `max` bytes. */
static void add_value(struct buf *b, jv x, size_t max)
{
	jv s = jv_get_kind(x) == JV_KIND_STRING ? jv_copy(x) : jv_dump_string(jv_copy(x), 0);
	size_t len = (size_t)jv_string_length_bytes(jv_copy(s));

	if (len > max) {
		buf_add(b, jv_string_value(s), max);
		buf_adds(b, "...");
	} else {
		buf_add(b, jv_string_value(s), len);
	}
	jv_free(s);
}

static bool check_type(struct vctx *v, const struct node *n, jv x)
{
	struct buf want = BUF_INIT;
	unsigned got = instance_types(x);

	if (!n->types || (n->types & got))
		return true;
	for (size_t i = 0; i < sizeof schema_type_names / sizeof schema_type_names[0]; i++) {
		if (n->types & schema_type_names[i].bit) {
			if (want.len)
				buf_adds(&want, " or ");
			buf_adds(&want, schema_type_names[i].name);
		}
	}
	fail(v, "expected %s, got %s", want.buf, kind_name(x));
	buf_release(&want);
	return false;
}

static bool check_enum(struct vctx *v, const struct node *n, jv x)
{
	struct buf list = BUF_INIT;
	int len = jv_array_length(jv_copy(n->enum_vals));

	for (int i = 0; i < len; i++) {
		jv e = jv_array_get(jv_copy(n->enum_vals), i);
		bool eq = jv_equal(e, jv_copy(x));

		if (eq)
			return true;
	}
	if (v->quiet)
		return false;
	for (int i = 0; i < len && list.len < 160; i++) {
		jv e = jv_array_get(jv_copy(n->enum_vals), i);

		if (i)
			buf_adds(&list, ", ");
		add_value(&list, e, 40);
		jv_free(e);
		if (i + 1 < len && list.len >= 160)
			buf_adds(&list, ", ...");
	}
	fail(v, "value is not one of the allowed values (%s)", list.buf);
	buf_release(&list);
	return false;
}

static bool check_const(struct vctx *v, const struct node *n, jv x)
{
	struct buf want = BUF_INIT;

	if (jv_equal(jv_copy(n->const_val), jv_copy(x)))
		return true;
	if (!v->quiet) {
		add_value(&want, n->const_val, 80);
		fail(v, "value must be %s", want.buf);
		buf_release(&want);
	}
	return false;
}

static bool validate(struct vctx *v, const struct node *n, jv x);

/* Validate x against n with the path extended; borrows x. */
static bool validate_at_key(struct vctx *v, const struct node *n, jv key, jv x)
{
	size_t old = path_push_key(v, key);
	bool ok = validate(v, n, x);

	buf_truncate(&v->path, old);
	return ok;
}

static bool validate_at_index(struct vctx *v, const struct node *n, int i, jv x)
{
	size_t old = path_push_index(v, i);
	bool ok = validate(v, n, x);

	buf_truncate(&v->path, old);
	return ok;
}

static int prop_cmp(const void *a, const void *b)
{
	const struct prop *x = a, *y = b;
	int r = memcmp(x->name, y->name, x->len < y->len ? x->len : y->len);

	return r ? r : (x->len > y->len) - (x->len < y->len);
}

/* One member of an object: properties, then patternProperties, and
 * additionalProperties only when neither named it. */
static bool check_member(struct vctx *v, const struct node *n, jv key, jv val)
{
	bool matched = false, ok = true;
	const char *k = jv_string_value(key);
	size_t klen = (size_t)jv_string_length_bytes(jv_copy(key));

	if (n->nprops) {
		struct prop want = { (char *)k, klen, NULL };
		const struct prop *p = bsearch(&want, n->props, n->nprops, sizeof *n->props, prop_cmp);

		if (p) {
			matched = true;
			ok = validate_at_key(v, p->schema, key, val);
		}
	}
	for (size_t i = 0; i < n->npprops && (ok || keep_going(v)); i++) {
		if (!schema_regex_search(&n->pprops[i].re, k, klen))
			continue;
		matched = true;
		ok = validate_at_key(v, n->pprops[i].schema, key, val) && ok;
	}
	if (matched || !n->additional)
		return ok;
	if (n->additional->is_bool && !n->additional->bool_value) {
		struct buf name = BUF_INIT;

		if (!v->quiet) {
			add_value(&name, key, 80);
			fail(v, "unexpected property '%s'", name.buf);
			buf_release(&name);
		}
		return false;
	}
	return validate_at_key(v, n->additional, key, val);
}

static bool check_count(struct vctx *v, const struct node *n, double count, enum limit min,
			enum limit max, const char *what)
{
	if ((n->has & (1u << min)) && count < n->lim[min])
		return fail(v, "expected at least %.0f %s, got %.0f", n->lim[min], what, count);
	if ((n->has & (1u << max)) && count > n->lim[max])
		return fail(v, "expected at most %.0f %s, got %.0f", n->lim[max], what, count);
	return true;
}

static bool check_object(struct vctx *v, const struct node *n, jv x)
{
	bool ok = true;

	if ((n->has & ((1u << L_MIN_PROPS) | (1u << L_MAX_PROPS))) &&
	    !check_count(v, n, jv_object_length(jv_copy(x)), L_MIN_PROPS, L_MAX_PROPS, "properties")) {
		if (!keep_going(v))
			return false;
		ok = false;
	}
	if (jv_get_kind(n->required) == JV_KIND_ARRAY) {
		jv_array_foreach(n->required, i, name) {
			if ((ok || keep_going(v)) && !jv_object_has(jv_copy(x), jv_copy(name)))
				ok = fail(v, "required property '%s' is missing", jv_string_value(name));
			jv_free(name);
		}
		if (!ok && !keep_going(v))
			return false;
	}
	if (!n->nprops && !n->npprops && !n->additional)
		return ok;
	for (int it = jv_object_iter(x); (ok || keep_going(v)) && jv_object_iter_valid(x, it);
	     it = jv_object_iter_next(x, it)) {
		jv key = jv_object_iter_key(x, it);
		jv val = jv_object_iter_value(x, it);

		ok = check_member(v, n, key, val) && ok;
		jv_free(key);
		jv_free(val);
	}
	return ok;
}

struct str_item {
	const char *s;
	int len, index;
};

static int str_item_cmp(const void *pa, const void *pb)
{
	const struct str_item *a = pa, *b = pb;

	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	int c = memcmp(a->s, b->s, (size_t)a->len);

	return c ? c : (a->index > b->index) - (a->index < b->index);
}

/* uniqueItems over an array of strings (a pipeline's needs, tags): sorted,
 * not compared pair by pair (a 1000-node pipeline whose nodes need all the
 * ones before took 22 s in the pairs).  The pair named is the one the
 * pairwise scan names: the smallest first index, then its first equal.
 * -1 when an item is not a string. */
static int unique_strings(struct vctx *v, jv x, int len, bool *ok)
{
	struct str_item *it = xcalloc((size_t)len, sizeof *it);
	int best_i = -1, best_j = -1;

	*ok = true;
	for (int i = 0; i < len; i++) {
		jv a = jv_array_get(jv_copy(x), i);

		if (jv_get_kind(a) != JV_KIND_STRING) {
			jv_free(a);
			free(it);
			return -1;
		}
		/* (the array holds the string: its text stays while x does) */
		it[i].s = jv_string_value(a);
		it[i].len = jv_string_length_bytes(jv_copy(a));
		it[i].index = i;
		jv_free(a);
	}
	qsort(it, (size_t)len, sizeof *it, str_item_cmp);
	for (int k = 0; k + 1 < len; k++) {
		if (it[k].len != it[k + 1].len || memcmp(it[k].s, it[k + 1].s, (size_t)it[k].len))
			continue;
		if (best_i < 0 || it[k].index < best_i) {
			best_i = it[k].index;
			best_j = it[k + 1].index;
		}
		while (k + 1 < len && it[k].len == it[k + 1].len && !memcmp(it[k].s, it[k + 1].s, (size_t)it[k].len))
			k++;
	}
	free(it);
	if (best_i >= 0)
		*ok = fail(v, "items [%d] and [%d] are equal, items must be unique", best_i, best_j);
	return 0;
}

static bool check_unique(struct vctx *v, jv x, int len)
{
	bool ok;

	if (len > 8 && unique_strings(v, x, len, &ok) == 0)
		return ok;
	for (int i = 0; i < len; i++) {
		jv a = jv_array_get(jv_copy(x), i);

		for (int j = i + 1; j < len; j++) {
			if (jv_equal(jv_copy(a), jv_array_get(jv_copy(x), j))) {
				jv_free(a);
				return fail(v, "items [%d] and [%d] are equal, items must be unique", i, j);
			}
		}
		jv_free(a);
	}
	return true;
}

static bool check_array(struct vctx *v, const struct node *n, jv x)
{
	int len = jv_array_length(jv_copy(x));
	bool ok = check_count(v, n, len, L_MIN_ITEMS, L_MAX_ITEMS, "items");

	if (ok || keep_going(v))
		ok = (!n->unique || check_unique(v, x, len)) && ok;
	for (int i = 0; i < len && (ok || keep_going(v)); i++) {
		const struct node *sub = (size_t)i < n->prefix.n ? n->prefix.v[i] : n->items;

		if (!sub)
			break;
		jv item = jv_array_get(jv_copy(x), i);
		ok = validate_at_index(v, sub, i, item) && ok;
		jv_free(item);
	}
	return ok;
}

/* "format": "regex": x compiles as a PCRE2 pattern. */
static bool check_regex(struct vctx *v, jv x)
{
	int err;
	PCRE2_SIZE off;
	pcre2_code *code = pcre2_compile((PCRE2_SPTR)jv_string_value(x),
					 (PCRE2_SIZE)jv_string_length_bytes(jv_copy(x)), 0, &err, &off, NULL);
	PCRE2_UCHAR text[256];

	if (code) {
		pcre2_code_free(code);
		return true;
	}
	pcre2_get_error_message(err, text, sizeof text);
	return fail(v, "'%s' is not a regular expression: %s at offset %zu", jv_string_value(x),
		    (const char *)text, (size_t)off);
}

static bool check_string(struct vctx *v, const struct node *n, jv x)
{
	if (n->has & ((1u << L_MIN_LENGTH) | (1u << L_MAX_LENGTH))) {
		/* JSON Schema counts characters (code points), not bytes: in the
		 * valid UTF-8 of a jv string, the bytes that start one. */
		const char *str = jv_string_value(x);
		int len = jv_string_length_bytes(jv_copy(x)), cps = 0;

		for (int i = 0; i < len; i++)
			cps += ((unsigned char)str[i] & 0xC0) != 0x80;

		if (!check_count(v, n, cps, L_MIN_LENGTH, L_MAX_LENGTH, "characters"))
			return false;
	}
	if (n->pattern && !schema_regex_search(n->pattern, jv_string_value(x),
					 (size_t)jv_string_length_bytes(jv_copy(x))))
		return fail(v, "string does not match pattern '%s'", n->pattern->source);
	if (n->format_regex)
		return check_regex(v, x);
	return true;
}

/*
 * x is a multiple of m when x/m is an integer.  Binary floating point makes
 * 0.0075/0.0001 come out as 74.99999999999999, so a quotient within a
 * relative 1e-9 of an integer counts; an infinite quotient (1e308/0.123)
 * cannot be judged and is not a multiple.
 */
static bool is_multiple(double x, double m)
{
	double q = x / m;

	if (!isfinite(q))
		return false;
	return fabs(q - nearbyint(q)) <= 1e-9 * fmax(1.0, fabs(q));
}

static bool check_number(struct vctx *v, const struct node *n, jv x)
{
	double d = jv_number_value(x);
	const double *lim = n->lim;

	if ((n->has & (1u << L_MINIMUM)) && d < lim[L_MINIMUM])
		return fail(v, "%.15g is less than the minimum %.15g", d, lim[L_MINIMUM]);
	if ((n->has & (1u << L_MAXIMUM)) && d > lim[L_MAXIMUM])
		return fail(v, "%.15g is greater than the maximum %.15g", d, lim[L_MAXIMUM]);
	if ((n->has & (1u << L_EXCL_MIN)) && d <= lim[L_EXCL_MIN])
		return fail(v, "%.15g is not greater than %.15g", d, lim[L_EXCL_MIN]);
	if ((n->has & (1u << L_EXCL_MAX)) && d >= lim[L_EXCL_MAX])
		return fail(v, "%.15g is not less than %.15g", d, lim[L_EXCL_MAX]);
	if ((n->has & (1u << L_MULTIPLE_OF)) && !is_multiple(d, lim[L_MULTIPLE_OF]))
		return fail(v, "%.15g is not a multiple of %.15g", d, lim[L_MULTIPLE_OF]);
	return true;
}

/* Run n quietly: for branches whose own failure is not the error. */
static bool matches(struct vctx *v, const struct node *n, jv x)
{
	struct vctx q = { .quiet = 1, .depth = v->depth, .path = BUF_INIT };

	return validate(&q, n, x);
}

static bool check_combinators(struct vctx *v, const struct node *n, jv x)
{
	bool ok = true;

	for (size_t i = 0; i < n->all_of.n && (ok || keep_going(v)); i++)
		ok = validate(v, n->all_of.v[i], x) && ok;
	if (!ok)
		return false;
	if (n->any_of.n) {
		size_t i = 0;

		while (i < n->any_of.n && !matches(v, n->any_of.v[i], x))
			i++;
		if (i == n->any_of.n)
			return fail(v, "value does not match any of the %zu schemas in anyOf",
				    n->any_of.n);
	}
	if (n->one_of.n) {
		size_t hits = 0;

		for (size_t i = 0; i < n->one_of.n && hits < 2; i++)
			hits += matches(v, n->one_of.v[i], x);
		if (hits == 0)
			return fail(v, "value does not match any of the %zu schemas in oneOf",
				    n->one_of.n);
		if (hits > 1)
			return fail(v, "value matches more than one schema in oneOf");
	}
	if (n->not_ && matches(v, n->not_, x))
		return fail(v, "value must not match the schema in 'not'");
	return true;
}

static bool check_kind(struct vctx *v, const struct node *n, jv x)
{
	switch (jv_get_kind(x)) {
	case JV_KIND_OBJECT: return check_object(v, n, x);
	case JV_KIND_ARRAY: return check_array(v, n, x);
	case JV_KIND_STRING: return check_string(v, n, x);
	case JV_KIND_NUMBER: return check_number(v, n, x);
	default: return true;
	}
}

/* Borrows x. */
static bool validate(struct vctx *v, const struct node *n, jv x)
{
	bool ok;

	/* a lazy schema's node is compiled the first time it is reached */
	if (n->mark != 2 && schema_node_ready((struct node *)n) < 0)
		return false;
	if (n->is_bool)
		return n->bool_value ? true : fail(v, "no value is allowed here");
	if (v->depth >= MAX_VALIDATE_DEPTH)
		return fail(v, "schema recursion deeper than %d levels", MAX_VALIDATE_DEPTH);
	v->depth++;
	ok = !n->ref_target || validate(v, n->ref_target, x);
	if (ok || keep_going(v))
		ok = check_type(v, n, x) &&
		     (!n->has_enum || check_enum(v, n, x)) &&
		     (!n->has_const || check_const(v, n, x)) &&
		     check_kind(v, n, x) &&
		     check_combinators(v, n, x) && ok;
	v->depth--;
	return ok;
}

/* The message of an `all` validation: its errors joined by "; ". */
static void set_all_message(const struct vctx *v)
{
	struct buf b = BUF_INIT;

	jv_array_foreach(v->errors, i, e) {
		buf_adds(&b, i ? "; " : "");
		buf_adds(&b, jv_string_value(e));
		jv_free(e);
	}
	if (v->more)
		buf_addf(&b, "; and more (only the first %d are listed)", SCHEMA_MAX_ERRORS);
	forge_error("%s", b.buf);
	buf_release(&b);
}

/* errors NULL: stop at the first error; otherwise collect them there. */
static int validate_node(const struct node *n, jv instance, jv *errors)
{
	struct vctx v = { .path = BUF_INIT, .all = errors != NULL,
			  .errors = errors ? jv_array() : jv_invalid() };
	int rc = 0;
	bool ok = validate(&v, n, instance);

	/* a bad part of a lazy schema, met on the way: the schema's error */
	if (n->owner->error) {
		if (v.all) {
			jv_free(v.errors);
			v.errors = jv_array_append(jv_array(), jv_string(n->owner->error));
		}
		forge_error("%s", n->owner->error);
		rc = -1;
	} else if (!ok) {
		if (v.all && jv_array_length(jv_copy(v.errors)) == 0)
			v.errors = jv_array_append(v.errors, jv_string(".: value is not valid"));
		if (v.all)
			set_all_message(&v);
		else
			forge_error("%s", v.msg ? v.msg : ".: value is not valid");
		rc = -1;
	}
	if (errors)
		*errors = v.errors;
	buf_release(&v.path);
	free(v.msg);
	return rc;
}

int schema_validate_node(const struct node *n, jv instance)
{
	return validate_node(n, instance, NULL);
}

int schema_validate_all(jv *errors, const struct schema *s, jv instance)
{
	jv unused;
	int rc;

	pthread_mutex_lock(&schema_mutex);
	rc = validate_node(s->nodes[0], instance, errors ? errors : &unused);
	pthread_mutex_unlock(&schema_mutex);
	if (!errors)
		jv_free(unused);
	return rc;
}

int schema_validate(const struct schema *s, jv instance)
{
	int rc;

	pthread_mutex_lock(&schema_mutex);
	rc = schema_validate_node(s->nodes[0], instance);
	pthread_mutex_unlock(&schema_mutex);
	return rc;
}

bool schema_is_valid(const struct schema *s, jv instance)
{
	struct vctx v = { .quiet = 1, .path = BUF_INIT };
	bool ok;

	pthread_mutex_lock(&schema_mutex);
	ok = validate(&v, s->nodes[0], instance) && !s->error;
	pthread_mutex_unlock(&schema_mutex);
	return ok;
}

/* schema_validate_def (errors NULL) or schema_validate_def_all (*errors
 * set when a node was found). */
static int validate_def(const char *name, const char *def, jv instance, jv *errors)
{
	/* schema_get's schema is the cache's; finding a node may compile it */
	struct schema *s = (struct schema *)schema_get(name);
	struct buf ptr = BUF_INIT;
	struct node *n;
	int rc;

	if (!s)
		return -1;
	buf_adds(&ptr, "/$defs");
	schema_ptr_push(&ptr, def);
	pthread_mutex_lock(&schema_mutex);
	rc = schema_find_pointer(&n, s, ptr.buf);
	if (rc == 0 && !n)
		rc = forge_error("schema '%s' has no definition '%s'", name, def);
	else if (rc == 0)
		rc = validate_node(n, instance, errors);
	pthread_mutex_unlock(&schema_mutex);
	buf_release(&ptr);
	return rc;
}

int schema_validate_def(const char *name, const char *def, jv instance)
{
	return validate_def(name, def, instance, NULL);
}

int schema_validate_def_all(jv *errors, const char *name, const char *def, jv instance)
{
	jv found = jv_invalid();
	int rc = validate_def(name, def, instance, &found);

	/* no node to validate against: its message is the one error */
	if (!jv_is_valid(found))
		found = rc < 0 ? JV_ARRAY(jv_string(forge_last_error())) : jv_array();
	if (errors)
		*errors = found;
	else
		jv_free(found);
	return rc;
}
