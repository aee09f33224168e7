/* json.c - jv helpers; see json.h for the ownership rule. */
#include "core/json.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/jsonscan.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

jv json_get(jv obj, const char *key)
{
	if (jv_get_kind(obj) != JV_KIND_OBJECT)
		return jv_null();
	jv v = jv_object_get(jv_copy(obj), jv_string(key));
	if (!jv_is_valid(v)) {
		jv_free(v);
		return jv_null();
	}
	return v;
}

jv json_get_path(jv obj, const char *path)
{
	jv cur = jv_copy(obj);
	const char *p = path;

	while (*p) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		char key[256];

		if (n >= sizeof key) {
			jv_free(cur);
			return jv_null();
		}
		memcpy(key, p, n);
		key[n] = '\0';
		jv next = json_get(cur, key);
		jv_free(cur);
		cur = next;
		p += n;
		if (*p == '.')
			p++;
	}
	return cur;
}

const char *json_get_str(jv obj, const char *key)
{
	if (jv_get_kind(obj) != JV_KIND_OBJECT)
		return NULL;
	/*
	 * jv_object_get returns a new reference to the member; the member is
	 * still held by obj, so dropping our reference leaves the string alive
	 * for as long as obj is.
	 */
	jv v = json_get(obj, key);
	const char *s = jv_get_kind(v) == JV_KIND_STRING ? jv_string_value(v) : NULL;
	jv_free(v);
	return s;
}

double json_get_num(jv obj, const char *key, double dflt)
{
	jv v = json_get(obj, key);
	double d = jv_get_kind(v) == JV_KIND_NUMBER ? jv_number_value(v) : dflt;

	jv_free(v);
	return d;
}

bool json_get_bool(jv obj, const char *key, bool dflt)
{
	jv v = json_get(obj, key);
	bool b = dflt;

	if (jv_get_kind(v) == JV_KIND_TRUE)
		b = true;
	else if (jv_get_kind(v) == JV_KIND_FALSE)
		b = false;
	jv_free(v);
	return b;
}

bool json_has(jv obj, const char *key)
{
	if (jv_get_kind(obj) != JV_KIND_OBJECT)
		return false;
	return jv_object_has(jv_copy(obj), jv_string(key));
}

jv json_set(jv obj, const char *key, jv val)
{
	return jv_object_set(obj, jv_string(key), val);
}

jv json_str_or_null(const char *s)
{
	return s ? jv_string(s) : jv_null();
}

jv json_path(const char *name)
{
	char *q;
	jv v;

	if (!name)
		return jv_null();
	if (name[0] != '"' && json_utf8_valid(name, strlen(name)))
		return jv_string(name);
	/* (a name starting with '"' is quoted too, '"' being one of the
	 * characters that are: a string that starts with one is then always a
	 * quoted name, never taken for another) */
	q = buf_path_quoted(name);
	v = jv_string(q);
	free(q);
	return v;
}

void json_path_add_shown(struct buf *b, const char *jname)
{
	if (jname && jname[0] == '"')
		buf_adds(b, jname);
	else
		buf_add_path_quoted(b, jname ? jname : "?");
}

/*
 * The serialiser: the same text as jq 1.6's jv_dump_string() (flags 0 or
 * JV_PRINT_SORTED) -- key order, escapes (\uXXXX in lowercase, DEL
 * included), numbers -- written straight into a buffer.  jq's copies every
 * string codepoint by codepoint through jv strings and reallocs: it was a
 * third of a session's user-space instructions (a request is serialised to
 * be sent and again to be logged).  Numbers other than integers below 2^53
 * and fractions of at most 15 digits (dump_short_double), and invalid
 * values, are left to jq's own formatting.
 */
static void dump_jq(struct buf *b, jv v)
{
	jv s = jv_dump_string(jv_copy(v), 0);

	buf_add(b, jv_string_value(s), (size_t)jv_string_length_bytes(jv_copy(s)));
	jv_free(s);
}

/* Whether a JSON string holds byte c as it is (jq escapes DEL too). */
static inline bool verbatim(unsigned char c)
{
	return c >= 0x20 && c != '"' && c != '\\' && c != 0x7f;
}

/*
 * How many of the 8 bytes at p are verbatim() before the first that is
 * not: 8 when all are.  Eight bytes a step instead of one: a dump is mostly
 * strings (prompts, files, tool output).  A byte's high bit in `flagged`
 * is set when it is below 0x20, or equal to '"', '\\' or DEL (x - 1 & ~x
 * of its xor); a borrow runs upwards only, from a byte flagged itself, so
 * the lowest flagged byte is exactly the first to escape.  Bytes of 0x80
 * and above (UTF-8) are verbatim.  Byte by byte on a big-endian machine.
 */
static size_t verbatim_prefix8(const unsigned char *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t ones = 0x0101010101010101u;
	uint64_t w, q, bs, del, flagged;

	memcpy(&w, p, sizeof w);
	q = w ^ (ones * '"');
	bs = w ^ (ones * '\\');
	del = w ^ (ones * 0x7f);
	flagged = (((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((bs - ones) & ~bs) | ((del - ones) & ~del)) &
		  0x8080808080808080u;
	return flagged ? (size_t)__builtin_ctzll(flagged) / 8 : 8;
#else
	size_t n = 0;

	while (n < 8 && verbatim(p[n]))
		n++;
	return n;
#endif
}

static void dump_string(struct buf *b, jv v)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)jv_string_value(v);
	const unsigned char *end = p + jv_string_length_bytes(jv_copy(v)), *run;

	buf_addch(b, '"');
	while (p < end) {
		size_t n = 8;

		for (run = p; end - p >= 8 && (n = verbatim_prefix8(p)) == 8; p += 8)
			;
		if (n < 8)
			p += n;
		else
			while (p < end && verbatim(*p))
				p++;
		buf_add(b, run, (size_t)(p - run));
		if (p == end)
			break;
		switch (*p) {
		case '"': buf_add(b, "\\\"", 2); break;
		case '\\': buf_add(b, "\\\\", 2); break;
		case '\b': buf_add(b, "\\b", 2); break;
		case '\f': buf_add(b, "\\f", 2); break;
		case '\n': buf_add(b, "\\n", 2); break;
		case '\r': buf_add(b, "\\r", 2); break;
		case '\t': buf_add(b, "\\t", 2); break;
		default: {
			char u[6] = { '\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15] };

			buf_add(b, u, sizeof(u));
		}
		}
		p++;
	}
	buf_addch(b, '"');
}

/*
 * dump_short_double's common case without snprintf and strtod: the fewest
 * decimals k such that m / 10^k is d for an integer m below 10^15 (IEEE
 * division rounds correctly, so the text "m with k decimals" reads back as
 * d; fewer decimals are fewer digits, so it is the shortest).  When a
 * neighbour of the rounded m also reads back as d, or reads back where m
 * does not, which digits jq picks is left to the careful path: false.
 * Recall's scores (six decimals) print so at ~200 instructions, not 2K.
 */
static bool dump_scaled_double(struct buf *b, double d, double a)
{
	static const double p10[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8,
				      1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15 };
	char digits[24], *p = digits + sizeof digits;
	unsigned long long m = 0;
	int k, len;

	for (k = 1; k <= 15; k++) {
		double scaled = a * p10[k], r = nearbyint(scaled);

		if (r >= 1e15)
			return false;
		bool here = r / p10[k] == a, below = r >= 1 && (r - 1) / p10[k] == a,
		     above = (r + 1) / p10[k] == a;

		if (below || above)
			return false;
		if (here) {
			m = (unsigned long long)r;
			break;
		}
	}
	if (k > 15)
		return false;
	do
		*--p = (char)('0' + m % 10);
	while ((m /= 10) != 0);
	len = (int)(digits + sizeof digits - p);
	if (d < 0)
		buf_addch(b, '-');
	if (len > k) {
		buf_add(b, p, (size_t)(len - k));
		buf_addch(b, '.');
		buf_add(b, p + len - k, (size_t)k);
	} else {
		buf_add(b, "0.", 2);
		for (int z = len; z < k; z++)
			buf_addch(b, '0');
		buf_add(b, p, (size_t)len);
	}
	return true;
}

/*
 * A number that is not an integer, as jq 1.6 prints it -- the shortest
 * digits that read back as d (jvp_dtoa_fmt), in fixed notation from 1e-4 to
 * 1e15 -- when those are at most 15 digits: then they are %.15g's with its
 * trailing zeros trimmed (a k-digit form that reads back is within half an
 * ulp, less than half a unit of the 15th digit, so it is the correctly
 * rounded 15-digit one).  false: leave it to jq (16 or 17 digits, an
 * exponent, a locale's decimal comma).  ~1K instructions where jq takes 5K.
 */
static bool dump_short_double(struct buf *b, double d)
{
	double a = fabs(d);
	char num[32];
	int n;

	if (!(a >= 1e-4 && a < 1e15))
		return false;
	if (dump_scaled_double(b, d, a))
		return true;
	n = snprintf(num, sizeof num, "%.15g", d);
	if (n <= 0 || n >= (int)sizeof num || strpbrk(num, "e,") || !strchr(num, '.') ||
	    strtod(num, NULL) != d)
		return false;
	buf_add(b, num, (size_t)n);
	return true;
}

/* Appends v (borrowed). */
static void dump(struct buf *b, jv v, bool sorted)
{
	switch (jv_get_kind(v)) {
	case JV_KIND_NULL:
		buf_add(b, "null", 4);
		break;
	case JV_KIND_TRUE:
		buf_add(b, "true", 4);
		break;
	case JV_KIND_FALSE:
		buf_add(b, "false", 5);
		break;
	case JV_KIND_NUMBER: {
		double d = jv_number_value(v);

		char num[32];
		int n, zeros = 0;

		/* an integer jq prints in full: below 2^53 (above, its shortest
		 * digits are not always the integer's: 99534459210317310 for
		 * ...312), at most five trailing zeros (1e+06 otherwise) */
		if (d > -9007199254740992.0 && d < 9007199254740992.0 && d == (double)(long long)d && !(d == 0 && signbit(d))) {
			n = snprintf(num, sizeof(num), "%lld", (long long)d);
			while (d != 0 && zeros < n && num[n - 1 - zeros] == '0')
				zeros++;
			if (zeros <= 5) {
				buf_add(b, num, (size_t)n);
				break;
			}
		} else if (dump_short_double(b, d)) {
			break;
		}
		dump_jq(b, v);
		break;
	}
	case JV_KIND_STRING:
		dump_string(b, v);
		break;
	case JV_KIND_ARRAY: {
		int n = jv_array_length(jv_copy(v));

		buf_addch(b, '[');
		for (int i = 0; i < n; i++) {
			jv e = jv_array_get(jv_copy(v), i);

			if (i)
				buf_addch(b, ',');
			dump(b, e, sorted);
			jv_free(e);
		}
		buf_addch(b, ']');
		break;
	}
	case JV_KIND_OBJECT:
		buf_addch(b, '{');
		if (sorted) {
			jv keys = jv_keys(jv_copy(v));
			int n = jv_array_length(jv_copy(keys));

			for (int i = 0; i < n; i++) {
				jv k = jv_array_get(jv_copy(keys), i);
				jv e = jv_object_get(jv_copy(v), jv_copy(k));

				if (i)
					buf_addch(b, ',');
				dump_string(b, k);
				buf_addch(b, ':');
				dump(b, e, sorted);
				jv_free(k);
				jv_free(e);
			}
			jv_free(keys);
		} else {
			bool first = true;

			for (int it = jv_object_iter(v); jv_object_iter_valid(v, it);
			     it = jv_object_iter_next(v, it)) {
				jv k = jv_object_iter_key(v, it);
				jv e = jv_object_iter_value(v, it);

				if (!first)
					buf_addch(b, ',');
				first = false;
				dump_string(b, k);
				buf_addch(b, ':');
				dump(b, e, sorted);
				jv_free(k);
				jv_free(e);
			}
		}
		buf_addch(b, '}');
		break;
	default:
		dump_jq(b, v);
	}
}

char *json_dumps(jv v, bool sorted)
{
	struct buf b = BUF_INIT;

	dump(&b, v, sorted);
	jv_free(v);
	return buf_detach(&b, NULL);
}

int json_write_line(FILE *out, jv v, bool sorted)
{
	struct buf b = BUF_INIT;
	int rc = 0;

	dump(&b, v, sorted);
	jv_free(v);
	buf_addch(&b, '\n');
	if (fwrite(b.buf, 1, b.len, out) != b.len || fflush(out) == EOF)
		rc = -1;
	buf_release(&b);
	return rc;
}

int json_write_pretty(FILE *out, jv v)
{
	jv s = jv_dump_string(v, JV_PRINT_INDENT_FLAGS(2));
	int rc = fputs(jv_string_value(s), out) == EOF || putc('\n', out) == EOF ? -1 : 0;

	jv_free(s);
	return rc;
}

/* jq 1.6 appends " (while parsing '<input>')" to parse errors; cut it. */
static jv strip_parse_tail(jv msg)
{
	const char *s = jv_string_value(msg);
	const char *tail = strstr(s, " (while parsing '");

	if (!tail)
		return msg;
	jv shorter = jv_string_sized(s, (int)(tail - s));
	jv_free(msg);
	return shorter;
}

/*
 * libjq 1.6 loses a string that follows a value inside an array or object
 * with no separator between them (["a" "b"], {"a" "b"}): the parser
 * returns "Expected separator between values" without freeing the string.
 * Find the first such string, as the byte offsets of its quotes; false
 * when there is none.  Only the structure is followed: jq itself finds
 * any other error that comes first.
 */
static bool lost_string(size_t *open, size_t *close, const char *s, size_t n)
{
	long depth = 0;
	bool after_value = false;

	for (size_t i = 0; i < n; i++) {
		switch (s[i]) {
		case ' ': case '\t': case '\r': case '\n':
			break;
		case '"': {
			size_t start = i;
			for (i++; i < n && s[i] != '"'; i++)
				if (s[i] == '\\')
					i++;
			if (i >= n)
				return false;	/* unfinished: no string value is made */
			if (depth > 0 && after_value) {
				*open = start;
				*close = i;
				return true;
			}
			after_value = true;
			break;
		}
		case '[': case '{':
			depth++;
			after_value = false;
			break;
		case ']': case '}':
			if (depth > 0)
				depth--;
			after_value = true;
			break;
		case ',': case ':':
			after_value = false;
			break;
		default:
			after_value = true;	/* a literal: number, true, false, null */
			break;
		}
	}
	return false;
}

/* The line and column of byte `at`, as jq counts them: from 1 on each line. */
static void line_column(int *line, size_t *col, const char *s, size_t at)
{
	*line = 1;
	*col = at + 1;
	for (size_t i = 0; i < at; i++)
		if (s[i] == '\n') {
			(*line)++;
			*col = at - i;
		}
}

/* The message jq gives at byte `at`. */
static jv separator_error(const char *s, size_t at)
{
	int line;
	size_t col;

	line_column(&line, &col, s, at);
	return jv_invalid_with_msg(jv_string_fmt("Expected separator between values at line %d, column %zu",
						 line, col));
}

/*
 * A strict RFC 8259 parser for the common case: what it accepts, jq 1.6's
 * parser makes into the same value (the same jv_object_set calls in the same
 * order, strtod's correctly rounded doubles), in a sixth of the
 * instructions.  Anything it does not accept -- errors, raw control
 * characters or lone surrogates in strings, nesting deeper than 200, a
 * locale whose decimal point is not '.' -- goes to jq's parser, which gives
 * the value or the error message it always gave.
 */
struct fast {
	const char *p, *end;
	int depth;
	bool drop_notes;        /* json_parse_without_notes() */
};

static void fast_ws(struct fast *f)
{
	while (f->p < f->end && (*f->p == ' ' || *f->p == '\n' || *f->p == '\r' || *f->p == '\t'))
		f->p++;
}

/* A string at f->p (its opening quote); *out on success (out NULL: only
 * checked and skipped, a note's text). */
static bool fast_string(struct fast *f, jv *out)
{
	bool escaped;
	const char *body = f->p + 1, *past = json_scan_string(f->p, f->end, &escaped);
	size_t len;

	if (!past)
		return false;
	len = (size_t)(past - 1 - body);
	if (out && !escaped) {
		*out = jv_string_sized(body, (int)len);
	} else if (out) {
		struct buf b = BUF_INIT;

		json_scan_unescape(&b, body, len);
		*out = jv_string_sized(b.buf ? b.buf : "", (int)b.len);
		buf_release(&b);
	}
	f->p = past;
	return true;
}

static bool fast_number(struct fast *f, jv *out)
{
	const char *past = json_scan_number(f->p, f->end);
	char tmp[64];
	size_t n;

	if (!past || (n = (size_t)(past - f->p)) >= sizeof(tmp))
		return false;
	memcpy(tmp, f->p, n);
	tmp[n] = '\0';
	*out = jv_number(strtod(tmp, NULL));
	f->p = past;
	return true;
}

static bool fast_literal(struct fast *f, const char *word, jv v, jv *out)
{
	size_t n = strlen(word);

	if ((size_t)(f->end - f->p) < n || memcmp(f->p, word, n))
		return false;
	f->p += n;
	*out = v;
	return true;
}

static bool fast_value(struct fast *f, jv *out)
{
	jv v, k, e;

	if (f->p >= f->end)
		return false;
	switch (*f->p) {
	case '"':
		return fast_string(f, out);
	case 't':
		return fast_literal(f, "true", jv_true(), out);
	case 'f':
		return fast_literal(f, "false", jv_false(), out);
	case 'n':
		return fast_literal(f, "null", jv_null(), out);
	case '[':
		if (++f->depth > 200)
			return false;
		f->p++;
		v = jv_array();
		fast_ws(f);
		if (f->p < f->end && *f->p == ']') {
			f->p++;
		} else {
			for (;;) {
				fast_ws(f);
				if (!fast_value(f, &e))
					goto fail;
				v = jv_array_append(v, e);
				fast_ws(f);
				if (f->p < f->end && *f->p == ',') {
					f->p++;
					continue;
				}
				if (f->p < f->end && *f->p == ']') {
					f->p++;
					break;
				}
				goto fail;
			}
		}
		f->depth--;
		*out = v;
		return true;
	case '{':
		if (++f->depth > 200)
			return false;
		f->p++;
		v = jv_object();
		fast_ws(f);
		if (f->p < f->end && *f->p == '}') {
			f->p++;
		} else {
			for (;;) {
				fast_ws(f);
				if (f->p >= f->end || *f->p != '"' || !fast_string(f, &k))
					goto fail;
				fast_ws(f);
				if (f->p >= f->end || *f->p != ':') {
					jv_free(k);
					goto fail;
				}
				f->p++;
				fast_ws(f);
				if (f->drop_notes && jv_string_value(k)[0] == '$') {
					/* a note: dropped, its text not even made */
					bool text = f->p < f->end && *f->p == '"';

					jv_free(k);
					if (text ? !fast_string(f, NULL) : !fast_value(f, &e))
						goto fail;
					if (!text)
						jv_free(e);
				} else {
					if (!fast_value(f, &e)) {
						jv_free(k);
						goto fail;
					}
					v = jv_object_set(v, k, e);
				}
				fast_ws(f);
				if (f->p < f->end && *f->p == ',') {
					f->p++;
					continue;
				}
				if (f->p < f->end && *f->p == '}') {
					f->p++;
					break;
				}
				goto fail;
			}
		}
		f->depth--;
		*out = v;
		return true;
	default:
		return fast_number(f, out);
	}
fail:
	jv_free(v);
	return false;
}

/* The value of text when the strict parser takes all of it. */
static bool fast_parse(jv *out, const char *text, size_t len, bool drop_notes)
{
	struct fast f = { text, text + len, 0, drop_notes };
	const struct lconv *lc = localeconv();

	if (!lc->decimal_point || strcmp(lc->decimal_point, "."))
		return false;
	fast_ws(&f);
	if (!fast_value(&f, out))
		return false;
	fast_ws(&f);
	if (f.p != f.end) {
		jv_free(*out);
		return false;
	}
	return true;
}

/*
 * jq's "Unexpected extra JSON values" (msg, consumed) with where the second
 * value begins, which jq does not say ("{} {}", two objects on two lines of
 * a config file): the strict parser finds the end of the first.  When it
 * does not take the first value (one only jq reads), msg as it is.
 */
static jv extra_values_error(jv msg, const char *text, size_t len)
{
	struct fast f = { text, text + len, 0, false };
	const struct lconv *lc = localeconv();
	jv first;
	int line;
	size_t col;

	if (!lc->decimal_point || strcmp(lc->decimal_point, "."))
		return jv_invalid_with_msg(msg);
	fast_ws(&f);
	if (!fast_value(&f, &first))
		return jv_invalid_with_msg(msg);
	jv_free(first);
	fast_ws(&f);
	if (f.p >= f.end)
		return jv_invalid_with_msg(msg);
	line_column(&line, &col, text, (size_t)(f.p - text));
	jv_free(msg);
	return jv_invalid_with_msg(jv_string_fmt("Unexpected extra JSON values: a second value begins at "
						 "line %d, column %zu (one JSON value is expected)", line, col));
}

jv json_parse(const char *text, size_t len)
{
	size_t open, close;
	jv fast;

	if (len > (size_t)INT32_MAX)
		return jv_invalid_with_msg(jv_string("input too large to parse"));
	if (!json_utf8_valid(text, len))
		return jv_invalid_with_msg(jv_string("invalid UTF-8"));
	if (fast_parse(&fast, text, len, false))
		return fast;
	if (lost_string(&open, &close, text, len)) {
		/* Parse up to that string: an earlier error is the one to report. */
		jv pre = jv_parse_sized(text, (int)open);
		jv msg = jv_invalid_get_msg(pre);
		bool earlier = jv_get_kind(msg) == JV_KIND_STRING &&
			       strncmp(jv_string_value(msg), "Unfinished JSON term", 20) != 0;
		if (earlier)
			return jv_invalid_with_msg(strip_parse_tail(msg));
		jv_free(msg);
		return separator_error(text, close);
	}
	jv v = jv_parse_sized(text, (int)len);
	if (jv_is_valid(v))
		return v;
	jv msg = jv_invalid_get_msg(v);
	if (jv_get_kind(msg) != JV_KIND_STRING) {
		jv_free(msg);
		return jv_invalid_with_msg(jv_string("malformed JSON"));
	}
	msg = strip_parse_tail(msg);
	if (!strcmp(jv_string_value(msg), "Unexpected extra JSON values"))
		return extra_values_error(msg, text, len);
	return jv_invalid_with_msg(msg);
}

/* v without the members whose key begins with '$', at any depth.  Consumes v. */
static jv strip_notes(jv v)
{
	if (jv_get_kind(v) == JV_KIND_OBJECT) {
		jv out = jv_object();

		jv_object_foreach(v, key, val) {
			if (jv_string_value(key)[0] == '$') {
				jv_free(key);
				jv_free(val);
			} else {
				out = jv_object_set(out, key, strip_notes(val));
			}
		}
		jv_free(v);
		return out;
	}
	if (jv_get_kind(v) == JV_KIND_ARRAY) {
		jv out = jv_array();

		jv_array_foreach(v, i, item)
			out = jv_array_append(out, strip_notes(item));
		jv_free(v);
		return out;
	}
	return v;
}

jv json_strip_notes(jv v)
{
	return strip_notes(v);
}

jv json_parse_without_notes(const char *text, size_t len)
{
	jv v;

	if (len <= (size_t)INT32_MAX && json_utf8_valid(text, len) && fast_parse(&v, text, len, true))
		return v;
	/* what the strict parser leaves to jq's, which keeps the notes */
	v = json_parse(text, len);
	return jv_is_valid(v) ? strip_notes(v) : v;
}

jv json_parse_file(const char *path)
{
	struct buf b = BUF_INIT;

	if (buf_read_file(&b, path) < 0) {
		buf_release(&b);
		return jv_invalid_with_msg(jv_string(forge_last_error()));
	}
	jv v = json_parse(b.buf, b.len);
	buf_release(&b);
	if (!jv_is_valid(v)) {
		char *m = json_invalid_msg(v);
		v = jv_invalid_with_msg(jv_string_fmt("%s: %s", path, m));
		free(m);
	}
	return v;
}

char *json_invalid_msg(jv v)
{
	jv msg = jv_invalid_get_msg(v);
	char *s;

	if (jv_get_kind(msg) == JV_KIND_STRING)
		s = xstrdup(jv_string_value(msg));
	else
		s = xstrdup("invalid value");
	jv_free(msg);
	return s;
}

bool json_equal(jv a, jv b)
{
	return jv_equal(jv_copy(a), jv_copy(b));
}

const unsigned char *json_utf8_seq(const unsigned char *p, const unsigned char *end)
{
	unsigned c = *p, cp;
	size_t n;

	if (c >= 0xC2 && c <= 0xDF) {
		n = 1;
		cp = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 2;
		cp = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 3;
		cp = c & 0x07;
	} else {
		return NULL;
	}
	if ((size_t)(end - p) <= n)
		return NULL;
	for (size_t i = 1; i <= n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return NULL;
		cp = (cp << 6) | (p[i] & 0x3F);
	}
	if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return NULL;
	return p + n + 1;
}

size_t json_utf8_invalid_at(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	const unsigned char *end = p + len, *next;

	while (p < end) {
		if (*p < 0x80)
			p++;
		else if (!(next = json_utf8_seq(p, end)))
			return (size_t)(p - (const unsigned char *)s);
		else
			p = next;
	}
	return len;
}

bool json_utf8_valid(const char *s, size_t len)
{
	return json_utf8_invalid_at(s, len) == len;
}

static bool str_has_nul(jv s)
{
	int n = jv_string_length_bytes(jv_copy(s));

	return memchr(jv_string_value(s), '\0', (size_t)n) != NULL;
}

static int find_nul(struct buf *where, jv v)
{
	size_t mark = where->len;

	switch (jv_get_kind(v)) {
	case JV_KIND_STRING:
		return str_has_nul(v) ? -1 : 0;
	case JV_KIND_ARRAY:
		jv_array_foreach(v, i, e) {
			buf_addf(where, "[%d]", i);
			int rc = find_nul(where, e);
			jv_free(e);
			if (rc < 0)
				return -1;
			buf_truncate(where, mark);
		}
		return 0;
	case JV_KIND_OBJECT: {
		int rc = 0;
		jv_object_foreach(v, k, e) {
			if (rc == 0) {
				if (str_has_nul(k)) {
					buf_addf(where, "%s(a key)", mark ? "." : "");
					rc = -1;
				} else {
					buf_addf(where, "%s%s", mark ? "." : "", jv_string_value(k));
					rc = find_nul(where, e);
					if (rc == 0)
						buf_truncate(where, mark);
				}
			}
			jv_free(k);
			jv_free(e);
		}
		return rc;
	}
	default:
		return 0;
	}
}

int json_find_nul(char **where, jv v)
{
	struct buf b = BUF_INIT;

	if (find_nul(&b, v) == 0) {
		buf_release(&b);
		*where = NULL;
		return 0;
	}
	*where = buf_detach(&b, NULL);
	return -1;
}

jv json_map_strings(jv v, jv (*fn)(jv s, void *payload), void *payload)
{
	switch (jv_get_kind(v)) {
	case JV_KIND_STRING:
		return fn(v, payload);
	case JV_KIND_ARRAY: {
		int len = jv_array_length(jv_copy(v));

		for (int i = 0; i < len; i++)
			v = jv_array_set(v, i, json_map_strings(jv_array_get(jv_copy(v), i), fn, payload));
		return v;
	}
	case JV_KIND_OBJECT: {
		jv out = jv_object();

		jv_object_foreach(v, k, val)
			out = jv_object_set(out, json_map_strings(k, fn, payload), json_map_strings(val, fn, payload));
		jv_free(v);
		return out;
	}
	default:
		return v;
	}
}
