/* jsonscan.c - a strict JSON checker that makes no jv; see jsonscan.h. */
#include "core/jsonscan.h"
#include "core/buf.h"
#include "core/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct scan {
	const unsigned char *end;
	bool escaped;             /* the last string read held an escape */
	int max_depth;            /* JSON_SCAN_MAX_DEPTH, or json_scan_depth()'s */
};

static const unsigned char *skip_ws(const unsigned char *p, const unsigned char *end)
{
	while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	return p;
}

static int hex(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
		return (c | 0x20) - 'a' + 10;
	return -1;
}

/* The code unit of the \uXXXX escape whose 'u' is at p, or -1. */
static long unit(const unsigned char *p, const unsigned char *end)
{
	long u = 0;

	if (end - p < 5)
		return -1;
	for (int i = 1; i <= 4; i++) {
		int h = hex(p[i]);
		if (h < 0)
			return -1;
		u = u * 16 + h;
	}
	return u;
}

/* The bytes a string holds as they are: printable ASCII but '"' and '\\'. */
#define R16(x) x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x
static const bool plain[256] = {
	R16(0), R16(0),                          /* 0x00-0x1f: control characters */
	1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  /* 0x20-0x2f: '"' at 0x22 */
	R16(1), R16(1),                          /* 0x30-0x4f */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,  /* 0x50-0x5f: '\\' at 0x5c */
	R16(1), R16(1),                          /* 0x60-0x7f */
	R16(0), R16(0), R16(0), R16(0), R16(0), R16(0), R16(0), R16(0),  /* 0x80-0xff: UTF-8 */
};

/*
 * How many of the 8 bytes at p are plain (above) before the first that is
 * not: 8 when all are.  Eight bytes a step instead of one (a string's
 * bytes are most of an event line).  A byte's high bit in `flagged` is set
 * when the byte is at 0x80 or above (w), below 0x20 (w - 0x20), '"' or
 * '\\' (its xor is 0, minus 1); a borrow only runs upwards, from a byte
 * that is flagged itself, so the lowest flagged byte is exactly the first
 * byte that is not plain.  Byte by byte on a big-endian machine.
 */
static size_t plain_prefix8(const unsigned char *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t ones = 0x0101010101010101u;
	uint64_t w, flagged;

	memcpy(&w, p, sizeof w);
	flagged = (w | (w - ones * 0x20) | ((w ^ (ones * '"')) - ones) | ((w ^ (ones * '\\')) - ones)) &
		  0x8080808080808080u;
	return flagged ? (size_t)__builtin_ctzll(flagged) / 8 : 8;
#else
	size_t n = 0;

	while (n < 8 && plain[p[n]])
		n++;
	return n;
#endif
}

/* Past the string whose opening quote is at p, or NULL; s->escaped says
 * whether it held an escape. */
static const unsigned char *scan_string(struct scan *s, const unsigned char *p)
{
	const unsigned char *end = s->end;

	s->escaped = false;
	for (p++; p < end; ) {
		if (end - p >= 8) {
			size_t n = plain_prefix8(p);

			p += n;
			if (n == 8)
				continue;
		}
		unsigned char c = *p;

		if (plain[c]) {
			p++;
			continue;
		}
		if (c == '"')
			return p + 1;
		if (c < 0x20)
			return NULL;
		if (c < 0x80 && c != '\\') {
			p++;
			continue;
		}
		if (c >= 0x80) {
			if (!(p = json_utf8_seq(p, end)))
				return NULL;
			continue;
		}
		s->escaped = true;
		if (++p >= end)
			return NULL;
		switch (*p) {
		case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
			p++;
			break;
		case 'u': {
			long u = unit(p, end);
			if (u < 0 || (u >= 0xDC00 && u <= 0xDFFF))
				return NULL;	/* a lone low surrogate: libjq makes it U+FFFD */
			p += 5;
			if (u >= 0xD800 && u <= 0xDBFF) {
				/* a high surrogate: its low half must follow (libjq refuses it alone) */
				if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || (u = unit(p + 1, end)) < 0xDC00 || u > 0xDFFF)
					return NULL;
				p += 6;
			}
			break;
		}
		default:
			return NULL;
		}
	}
	return NULL;
}

static const unsigned char *digits(const unsigned char *p, const unsigned char *end)
{
	const unsigned char *start = p;

	while (p < end && *p >= '0' && *p <= '9')
		p++;
	return p > start ? p : NULL;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static const unsigned char *scan_number(const unsigned char *p, const unsigned char *end)
{
	if (p < end && *p == '-')
		p++;
	if (p < end && *p == '0')
		p++;
	else if (!(p = digits(p, end)))
		return NULL;
	if (p < end && *p == '.' && !(p = digits(p + 1, end)))
		return NULL;
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (!(p = digits(p, end)))
			return NULL;
	}
	return p;
}

const char *json_scan_string(const char *p, const char *end, bool *escaped)
{
	struct scan s = { .end = (const unsigned char *)end };
	const unsigned char *q = scan_string(&s, (const unsigned char *)p);

	*escaped = s.escaped;
	return (const char *)q;
}

const char *json_scan_number(const char *p, const char *end)
{
	return (const char *)scan_number((const unsigned char *)p, (const unsigned char *)end);
}

static void utf8_put(struct buf *b, unsigned long cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | cp >> 6);
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | cp >> 12);
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | cp >> 18);
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	buf_add(b, u, n);
}

/* The body was accepted by scan_string: every escape is complete and every
 * high surrogate has its low half, so nothing here can fail. */
void json_scan_unescape(struct buf *out, const char *body, size_t len)
{
	const unsigned char *p = (const unsigned char *)body, *end = p + len, *run = p;

	while (p < end) {
		if (*p != '\\') {
			p++;
			continue;
		}
		buf_add(out, run, (size_t)(p - run));
		switch (p[1]) {
		case 'b': buf_addch(out, '\b'); break;
		case 'f': buf_addch(out, '\f'); break;
		case 'n': buf_addch(out, '\n'); break;
		case 'r': buf_addch(out, '\r'); break;
		case 't': buf_addch(out, '\t'); break;
		case 'u': {
			unsigned long u = (unsigned long)unit(p + 1, end);

			if (u >= 0xD800 && u <= 0xDBFF) {
				u = 0x10000 + ((u - 0xD800) << 10) + ((unsigned long)unit(p + 7, end) - 0xDC00);
				p += 6;
			}
			utf8_put(out, u);
			p += 6;
			run = p;
			continue;
		}
		default:        /* '"', '\\', '/' */
			buf_addch(out, (char)p[1]);
			break;
		}
		p += 2;
		run = p;
	}
	buf_add(out, run, (size_t)(p - run));
}

static const unsigned char *literal(const unsigned char *p, const unsigned char *end, const char *word,
				    size_t n)
{
	return (size_t)(end - p) >= n && memcmp(p, word, n) == 0 ? p + n : NULL;
}

static const unsigned char *scan_value(struct scan *s, const unsigned char *p, int depth,
				       enum json_scan_kind *kind);

/* Past the array or object at p (its bracket), or NULL.  Members of an
 * object at the top go to member(). */
static const unsigned char *scan_container(struct scan *s, const unsigned char *p, int depth,
					   void (*member)(const struct json_member *m, void *payload),
					   void *payload)
{
	const unsigned char *end = s->end;
	bool object = *p == '{';
	unsigned char close = object ? '}' : ']';
	enum json_scan_kind kind;

	depth += object ? 2 : 1;
	if (depth > s->max_depth)
		return NULL;
	p = skip_ws(p + 1, end);
	if (p < end && *p == close)
		return p + 1;
	for (;;) {
		struct json_member m;

		if (object) {
			if (p >= end || *p != '"')
				return NULL;
			const unsigned char *k = p + 1;
			if (!(p = scan_string(s, p)))
				return NULL;
			m.key = (const char *)k;
			m.key_len = (size_t)(p - 1 - k);
			m.key_escaped = s->escaped;
			p = skip_ws(p, end);
			if (p >= end || *p != ':')
				return NULL;
			p = skip_ws(p + 1, end);
		}
		const unsigned char *v = p;
		if (!(p = scan_value(s, p, depth, &kind)))
			return NULL;
		if (object && member) {
			m.kind = kind;
			m.value = (const char *)v;
			m.value_len = (size_t)(p - v);
			m.value_escaped = false;
			if (kind == JSON_SCAN_STRING) {
				m.value++;
				m.value_len -= 2;
				m.value_escaped = s->escaped;
			}
			member(&m, payload);
		}
		p = skip_ws(p, end);
		if (p < end && *p == close)
			return p + 1;
		if (p >= end || *p != ',')
			return NULL;
		p = skip_ws(p + 1, end);
	}
}

static const unsigned char *scan_value(struct scan *s, const unsigned char *p, int depth,
				       enum json_scan_kind *kind)
{
	const unsigned char *end = s->end;

	if (p >= end)
		return NULL;
	switch (*p) {
	case '"':
		*kind = JSON_SCAN_STRING;
		return scan_string(s, p);
	case '{':
		*kind = JSON_SCAN_OBJECT;
		return scan_container(s, p, depth, NULL, NULL);
	case '[':
		*kind = JSON_SCAN_ARRAY;
		return scan_container(s, p, depth, NULL, NULL);
	case 't':
		*kind = JSON_SCAN_TRUE;
		return literal(p, end, "true", 4);
	case 'f':
		*kind = JSON_SCAN_FALSE;
		return literal(p, end, "false", 5);
	case 'n':
		*kind = JSON_SCAN_NULL;
		return literal(p, end, "null", 4);
	default:
		*kind = JSON_SCAN_NUMBER;
		return scan_number(p, end);
	}
}

static enum json_scan_kind scan_text(const char *text, size_t len, int max_depth,
				     void (*member)(const struct json_member *m, void *payload),
				     void *payload)
{
	const unsigned char *p = (const unsigned char *)text, *end = p + len;
	struct scan s = { .end = end, .max_depth = max_depth };
	enum json_scan_kind kind = JSON_SCAN_INVALID;

	p = skip_ws(p, end);
	if (p < end && *p == '{') {
		kind = JSON_SCAN_OBJECT;
		p = scan_container(&s, p, 0, member, payload);
	} else {
		p = scan_value(&s, p, 0, &kind);
	}
	if (!p || skip_ws(p, end) != end)
		return JSON_SCAN_INVALID;
	return kind;
}

enum json_scan_kind json_scan(const char *text, size_t len,
			      void (*member)(const struct json_member *m, void *payload), void *payload)
{
	return scan_text(text, len, JSON_SCAN_MAX_DEPTH, member, payload);
}

enum json_scan_kind json_scan_depth(const char *text, size_t len, int max_depth)
{
	return scan_text(text, len, max_depth, NULL, NULL);
}

/* ---- skimming trusted text ---------------------------------------------- */

/* Past the string whose opening quote is at p, or NULL: its closing quote
 * is the first one not escaped (preceded by an even run of backslashes). */
static const char *skim_string(const char *p, const char *end)
{
	const char *q = p + 1;

	for (;;) {
		const char *b;

		if (!(q = memchr(q, '"', (size_t)(end - q))))
			return NULL;
		for (b = q; b > p + 1 && b[-1] == '\\'; b--)
			;
		if ((q - b) % 2 == 0)
			return q + 1;
		q++;
	}
}

/* Past the value at p, or NULL; a container ends at its matching bracket
 * (brackets inside strings skipped). */
static const char *skim_value(const char *p, const char *end)
{
	int depth = 0;

	if (*p == '"')
		return skim_string(p, end);
	if (*p != '{' && *p != '[') {
		p += strcspn(p, ",}] \t\r\n");
		return p <= end ? p : NULL;
	}
	for (;;) {
		p += strcspn(p, "\"{}[]");
		if (p >= end || *p == '\0')    /* (a NUL inside text: not JSON) */
			return NULL;
		if (*p == '"') {
			if (!(p = skim_string(p, end)))
				return NULL;
			continue;
		}
		depth += *p == '{' || *p == '[' ? 1 : -1;
		p++;
		if (depth == 0)
			return p;
	}
}

int json_skim_members(const char *text, size_t len,
		      void (*member)(const char *key, size_t key_len, const char *value,
				     size_t value_len, void *payload),
		      void *payload)
{
	const char *end = text + len, *p;

	if (text[len] != '\0')
		return -1;
	p = (const char *)skip_ws((const unsigned char *)text, (const unsigned char *)end);
	if (p >= end || *p != '{')
		return -1;
	p = (const char *)skip_ws((const unsigned char *)p + 1, (const unsigned char *)end);
	if (p < end && *p == '}')
		return 0;
	for (;;) {
		const char *key = p + 1, *value;

		if (p >= end || *p != '"' || !(p = skim_string(p, end)))
			return -1;
		size_t key_len = (size_t)(p - 1 - key);

		p = (const char *)skip_ws((const unsigned char *)p, (const unsigned char *)end);
		if (p >= end || *p != ':')
			return -1;
		value = p = (const char *)skip_ws((const unsigned char *)p + 1, (const unsigned char *)end);
		if (p >= end || !(p = skim_value(p, end)) || p == value)
			return -1;
		member(key, key_len, value, (size_t)(p - value), payload);
		p = (const char *)skip_ws((const unsigned char *)p, (const unsigned char *)end);
		if (p < end && *p == '}')
			return 0;
		if (p >= end || *p != ',')
			return -1;
		p = (const char *)skip_ws((const unsigned char *)p + 1, (const unsigned char *)end);
	}
}

int json_skim_elements(const char *text, size_t len,
		       void (*element)(const char *value, size_t value_len, void *payload), void *payload)
{
	const char *end = text + len, *p;

	if (text[len] != '\0')
		return -1;
	p = (const char *)skip_ws((const unsigned char *)text, (const unsigned char *)end);
	if (p >= end || *p != '[')
		return -1;
	p = (const char *)skip_ws((const unsigned char *)p + 1, (const unsigned char *)end);
	if (p < end && *p == ']')
		return 0;
	for (;;) {
		const char *value = p;

		if (p >= end || !(p = skim_value(p, end)) || p == value)
			return -1;
		element(value, (size_t)(p - value), payload);
		p = (const char *)skip_ws((const unsigned char *)p, (const unsigned char *)end);
		if (p < end && *p == ']')
			return 0;
		if (p >= end || *p != ',')
			return -1;
		p = (const char *)skip_ws((const unsigned char *)p + 1, (const unsigned char *)end);
	}
}

size_t json_nesting(const char *text, size_t len)
{
	size_t depth = 0, deepest = 0;
	bool in_string = false;

	for (size_t i = 0; i < len; i++) {
		char ch = text[i];

		if (in_string) {
			if (ch == '\\')
				i++;
			else if (ch == '"')
				in_string = false;
		} else if (ch == '"') {
			in_string = true;
		} else if (ch == '[' || ch == '{') {
			depth += ch == '{' ? 2 : 1;
			if (depth > deepest)
				deepest = depth;
		} else if (ch == ']' || ch == '}') {
			size_t d = ch == '}' ? 2 : 1;
			depth = depth > d ? depth - d : 0;
		}
	}
	return deepest;
}

/* ---- event records --------------------------------------------------- */

struct event_scan {
	struct json_event *ev;
	unsigned seen;            /* bits of the keys met */
	bool bad;                 /* something json_parse() must judge */
};

enum { K_KIND, K_ID, K_TRACE, K_TS, K_SOURCE, K_PHASE, K_TYPE, K_PAYLOAD, K_COST, K_DURATION,
       K_SPAN, K_PARENT_SPAN, K_TOKENS, K_USD, K_NONE };

static int key_of(const char *k, size_t n)
{
	static const char *const names[] = {
		[K_KIND] = "kind", [K_ID] = "id", [K_TRACE] = "trace_id", [K_TS] = "ts",
		[K_SOURCE] = "source", [K_PHASE] = "phase", [K_TYPE] = "type", [K_PAYLOAD] = "payload",
		[K_COST] = "cost", [K_DURATION] = "duration_ms", [K_SPAN] = "span", [K_PARENT_SPAN] = "parent_span",
	};
	static const unsigned char lens[] = {
		[K_KIND] = 4, [K_ID] = 2, [K_TRACE] = 8, [K_TS] = 2, [K_SOURCE] = 6, [K_PHASE] = 5,
		[K_TYPE] = 4, [K_PAYLOAD] = 7, [K_COST] = 4, [K_DURATION] = 11, [K_SPAN] = 4, [K_PARENT_SPAN] = 11,
	};

	for (int i = 0; i < K_TOKENS; i++)
		if (lens[i] == n && memcmp(names[i], k, n) == 0)
			return i;
	return K_NONE;
}

/* A plain integer (digits only, fewer than 16): its value, else -1. */
static int64_t plain_int(const struct json_member *m)
{
	int64_t v = 0;

	if (m->kind != JSON_SCAN_NUMBER || m->value_len == 0 || m->value_len > 15)
		return -1;
	for (size_t i = 0; i < m->value_len; i++) {
		if (m->value[i] < '0' || m->value[i] > '9')
			return -1;
		v = v * 10 + (m->value[i] - '0');
	}
	return v;
}

static void cost_member(const struct json_member *m, void *payload)
{
	struct event_scan *e = payload;
	bool tokens = m->key_len == 6 && memcmp(m->key, "tokens", 6) == 0;
	bool usd = m->key_len == 3 && memcmp(m->key, "usd", 3) == 0;

	if (m->key_escaped) {
		e->bad = true;
	} else if (tokens) {
		e->bad |= (e->seen & (1u << K_TOKENS)) || (e->ev->tokens = plain_int(m)) < 0;
		e->seen |= 1u << K_TOKENS;
		e->ev->has_tokens = true;
	} else if (usd) {
		char num[64];

		e->bad |= (e->seen & (1u << K_USD)) != 0;
		e->seen |= 1u << K_USD;
		e->ev->has_usd = true;
		if (m->kind == JSON_SCAN_NULL) {
			e->ev->usd = NAN;
		} else if (m->kind == JSON_SCAN_NUMBER && m->value_len < sizeof num) {
			memcpy(num, m->value, m->value_len);
			num[m->value_len] = '\0';
			e->ev->usd = strtod(num, NULL);
			e->bad |= !isfinite(e->ev->usd);
		} else {
			e->bad = true;
		}
	}
}

static void event_member(const struct json_member *m, void *payload)
{
	struct event_scan *e = payload;
	struct json_event *ev = e->ev;
	int k;

	if (e->bad)
		return;
	if (m->key_escaped) {
		e->bad = true;	/* it may spell one of the keys */
		return;
	}
	k = key_of(m->key, m->key_len);
	if (k == K_NONE)
		return;
	if (e->seen & (1u << k)) {
		e->bad = true;	/* libjq keeps the last one: leave it to libjq */
		return;
	}
	e->seen |= 1u << k;
	const char *str = m->kind == JSON_SCAN_STRING ? m->value : NULL;
	if (str && m->value_escaped && k != K_PAYLOAD) {
		e->bad = true;
		return;
	}
	switch (k) {
	case K_KIND: ev->kind = str; ev->kind_len = m->value_len; break;
	case K_ID: ev->id = str; ev->id_len = m->value_len; break;
	case K_TRACE: ev->trace_id = str; ev->trace_id_len = m->value_len; break;
	case K_TS: ev->ts = str; ev->ts_len = m->value_len; break;
	case K_SOURCE: ev->source = str; ev->source_len = m->value_len; break;
	case K_TYPE: ev->type = str; ev->type_len = m->value_len; break;
	case K_PHASE:
		ev->phase = str;
		ev->phase_len = m->value_len;
		ev->phase_kind = m->kind;
		break;
	case K_PAYLOAD:
		ev->payload = m->value - (str ? 1 : 0);
		ev->payload_len = m->value_len + (str ? 2 : 0);
		ev->payload_object = m->kind == JSON_SCAN_OBJECT;
		break;
	case K_COST:
		if (m->kind != JSON_SCAN_OBJECT ||
		    json_scan(m->value, m->value_len, cost_member, e) != JSON_SCAN_OBJECT)
			e->bad = true;
		break;
	case K_DURATION:
		ev->has_duration = true;
		e->bad |= (ev->duration_ms = plain_int(m)) < 0;
		break;
	case K_SPAN:
		ev->span = str;
		ev->span_len = m->value_len;
		ev->span_kind = m->kind;
		break;
	case K_PARENT_SPAN:
		ev->parent_span = str;
		ev->parent_span_len = m->value_len;
		ev->parent_span_kind = m->kind;
		break;
	}
}

bool json_event_scan(struct json_event *ev, const char *line, size_t len)
{
	struct event_scan e = { .ev = ev };

	memset(ev, 0, sizeof *ev);
	ev->usd = NAN;
	ev->phase_kind = ev->span_kind = ev->parent_span_kind = JSON_SCAN_INVALID;
	if (json_scan(line, len, event_member, &e) != JSON_SCAN_OBJECT || e.bad) {
		memset(ev, 0, sizeof *ev);
		ev->phase_kind = ev->span_kind = ev->parent_span_kind = JSON_SCAN_INVALID;
		return false;
	}
	if (ev->payload && !ev->payload_object && ev->payload_len == 4 && memcmp(ev->payload, "null", 4) == 0)
		ev->payload = NULL, ev->payload_len = 0;
	return true;
}
