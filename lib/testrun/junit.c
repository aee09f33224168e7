/* junit.c - a bounded XML scanner, the JUnit report reader and writer; see
 * junit.h. */
#include "testrun/junit.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "testrun/testrun.h"
#include "testrun/testrun_internal.h"

#include <errno.h>
#include <expat.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the scanner: expat, behind a lenient pre-pass ------------------------ */

/*
 * Bytes expat would refuse or rewrite travel through it as code points of
 * plane 16's private use area, U+10FF00 + the byte, and are turned back
 * into the byte in everything handed to the callbacks: control characters,
 * NUL, a raw CR (expat would make it LF), tab and newline inside an
 * attribute value (expat would make them spaces), bytes that are not UTF-8,
 * and the character references expat refuses (&#1;).
 */
#define PUA_LEAD0 '\xf4'
#define PUA_LEAD1 '\x8f'

static void put_pua(struct buf *b, unsigned char c)
{
	char u[4] = { PUA_LEAD0, PUA_LEAD1, (char)(0xBC + (c >> 6)), (char)(0x80 + (c & 0x3F)) };

	buf_add(b, u, sizeof u);
}

/* Append s[0..len) to b with the bytes put_pua() carried turned back. */
static void unmap(struct buf *b, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		const unsigned char *u = (const unsigned char *)s + i;
		if (s[i] == PUA_LEAD0 && i + 3 < len && s[i + 1] == PUA_LEAD1 && u[2] >= 0xBC && u[2] <= 0xBF &&
		    u[3] >= 0x80 && u[3] <= 0xBF) {
			buf_addch(b, (char)(((u[2] - 0xBC) << 6) | (u[3] - 0x80)));
			i += 3;
		} else {
			buf_addch(b, s[i]);
		}
	}
}

static bool xml_char(unsigned long cp)
{
	return cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
	       (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
}

/* At p (after '&'): the length of a predefined entity or a character
 * reference up to its ';', 0 when it is neither (kept as written); *cp is
 * the character of a reference (0 for an entity). */
static size_t reference(const char *p, size_t left, unsigned long *cp)
{
	static const char *const ents[] = { "lt;", "gt;", "amp;", "quot;", "apos;" };

	*cp = 0;
	for (size_t k = 0; k < sizeof ents / sizeof ents[0]; k++)
		if (tr_prefix(p, left, ents[k]))
			return strlen(ents[k]);
	if (left < 3 || p[0] != '#')
		return 0;
	bool hex = p[1] == 'x';
	size_t j = hex ? 2 : 1, digits = 0;
	for (; j < left && digits < 8; j++, digits++) {
		char c = p[j];
		int v = c >= '0' && c <= '9' ? c - '0'
		      : hex && c >= 'a' && c <= 'f' ? c - 'a' + 10
		      : hex && c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (v < 0)
			break;
		*cp = *cp * (hex ? 16 : 10) + (unsigned long)v;
	}
	if (!digits || j >= left || p[j] != ';' || *cp == 0 || *cp > 0x10FFFF || (*cp >= 0xD800 && *cp <= 0xDFFF))
		return 0;
	return j + 1;
}

/* The length of a UTF-8 sequence expat accepts at p, 0 when there is none. */
static size_t utf8_len(const unsigned char *p, size_t left)
{
	size_t n = p[0] >= 0xF0 ? 4 : p[0] >= 0xE0 ? 3 : p[0] >= 0xC2 ? 2 : 0;

	if (!n || n > left || !json_utf8_valid((const char *)p, n))
		return 0;
	if (n == 3 && p[0] == 0xEF && p[1] == 0xBF && p[2] >= 0xBE)
		return 0;	/* U+FFFE, U+FFFF */
	return n;
}

/*
 * Prepare xml for expat the way the old hand-written scanner read it: a
 * DOCTYPE is dropped (no entity is ever defined, nothing is fetched), an
 * '&' that starts no predefined entity or valid character reference is
 * kept as written (&amp;), and the bytes listed above are carried through.
 */
static void prepare(struct buf *b, const char *xml, size_t len)
{
	enum { TEXT, TAG, VALUE } st = TEXT;
	char quote = 0;

	for (size_t i = 0; i < len;) {
		const char *p = xml + i;
		size_t left = len - i, n;
		const char *e;
		unsigned long cp;
		unsigned char c = (unsigned char)*p;

		if (st == TEXT && c == '<') {
			bool cdata = tr_prefix(p, left, "<![CDATA[");
			if (tr_prefix(p, left, "<!--") || cdata || tr_prefix(p, left, "<?")) {
				const char *end = cdata ? "]]>" : p[1] == '?' ? "?>" : "-->";
				size_t skip = cdata ? 9 : p[1] == '?' ? 2 : 4;
				e = tr_find(p + skip, left - skip, end);
				n = e ? (size_t)(e - p) + strlen(end) : left;
				{
					buf_add(b, p, skip);
					for (size_t k = skip; k < n - (e ? strlen(end) : 0);) {
						size_t u = utf8_len((const unsigned char *)p + k, n - k);
						unsigned char ch = (unsigned char)p[k];
						if (ch >= 0x80 && !u) {
							put_pua(b, ch);
							k++;
						} else if (ch < 0x80 && ch < 0x20 && ch != '\t' && ch != '\n') {
							put_pua(b, ch);
							k++;
						} else {
							u = u ? u : 1;
							buf_add(b, p + k, u);
							k += u;
						}
					}
					if (e)
						buf_adds(b, end);
				}
				i += n;
				continue;
			}
			if (tr_prefix(p, left, "<!")) {
				/* <!DOCTYPE …> with an internal subset in [ ]: dropped */
				size_t j = 2;
				int bracket = 0;
				while (j < left && !(p[j] == '>' && bracket == 0)) {
					if (p[j] == '[')
						bracket++;
					else if (p[j] == ']' && bracket > 0)
						bracket--;
					j++;
				}
				if (j >= left) {
					buf_add(b, p, left);	/* unterminated: expat says so */
					break;
				}
				i += j + 1;
				continue;
			}
			st = TAG;
			buf_addch(b, '<');
			i++;
			continue;
		}
		if (st == TAG && (c == '"' || c == '\'')) {
			st = VALUE;
			quote = (char)c;
		} else if (st == VALUE && c == (unsigned char)quote) {
			st = TAG;
		} else if (st == TAG && c == '>') {
			st = TEXT;
		}
		if (c == '&' && st != TAG) {
			n = reference(p + 1, left - 1, &cp);
			if (n && (!cp || xml_char(cp))) {
				buf_add(b, p, n + 1);
			} else if (n) {
				/* a character expat refuses (&#1;, &#xFFFE;): its UTF-8 bytes */
				char u[4];
				size_t k = 0;
				if (cp < 0x80) {
					u[k++] = (char)cp;
				} else if (cp < 0x800) {
					u[k++] = (char)(0xC0 | (cp >> 6));
					u[k++] = (char)(0x80 | (cp & 0x3F));
				} else {
					u[k++] = (char)(0xE0 | (cp >> 12));
					u[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
					u[k++] = (char)(0x80 | (cp & 0x3F));
				}
				for (size_t m = 0; m < k; m++)
					put_pua(b, (unsigned char)u[m]);
			} else {
				buf_adds(b, "&amp;");
				n = 0;
			}
			i += n + 1;
			continue;
		}
		if (c >= 0x80) {
			n = utf8_len((const unsigned char *)p, left);
			if (n) {
				buf_add(b, p, n);
				i += n;
			} else {
				put_pua(b, c);
				i++;
			}
			continue;
		}
		if ((c < 0x20 && c != '\t' && c != '\n') || c == '\r' || (st == VALUE && (c == '\t' || c == '\n')))
			put_pua(b, c);
		else
			buf_addch(b, (char)c);
		i++;
	}
}

struct scan {
	XML_Parser p;
	const struct junit_xml_handler *h;
	void *payload;
	int rc;
	size_t depth;
	struct buf text;          /* character data not yet delivered */
	struct buf tmp;
	struct buf *vals;         /* JUNIT_MAX_ATTRS attribute values */
	struct junit_xml_attr attrs[JUNIT_MAX_ATTRS];
};

static void stop(struct scan *s, int rc)
{
	if (s->rc == 0)
		s->rc = rc;
	XML_StopParser(s->p, XML_FALSE);
}

static void flush_text(struct scan *s)
{
	if (s->text.len && s->depth > 0 && s->h->text && s->rc == 0) {
		buf_reset(&s->tmp);
		unmap(&s->tmp, s->text.buf, s->text.len);
		int rc = s->h->text(s->payload, s->tmp.buf, s->tmp.len);
		if (rc)
			stop(s, rc);
	}
	buf_reset(&s->text);
}

static void XMLCALL xml_on_start(void *data, const XML_Char *name, const XML_Char **atts)
{
	struct scan *s = data;
	size_t n = 0;

	flush_text(s);
	if (s->rc)
		return;
	if (s->depth >= JUNIT_MAX_DEPTH) {
		stop(s, forge_error("elements nested deeper than %d", JUNIT_MAX_DEPTH));
		return;
	}
	s->depth++;
	for (; atts[0] && n < JUNIT_MAX_ATTRS; atts += 2, n++) {
		struct buf *v = &s->vals[n];
		buf_reset(v);
		unmap(v, atts[1], strlen(atts[1]));
		s->attrs[n] = (struct junit_xml_attr){ atts[0], strlen(atts[0]), v->buf, v->len };
	}
	if (s->h->start) {
		int rc = s->h->start(s->payload, name, strlen(name), s->attrs, n);
		if (rc)
			stop(s, rc);
	}
}

static void XMLCALL xml_on_end(void *data, const XML_Char *name)
{
	struct scan *s = data;

	flush_text(s);
	if (s->rc)
		return;
	s->depth--;
	if (s->h->end) {
		int rc = s->h->end(s->payload, name, strlen(name));
		if (rc)
			stop(s, rc);
	}
}

static void XMLCALL xml_on_text(void *data, const XML_Char *text, int len)
{
	struct scan *s = data;

	if (s->rc == 0 && len > 0)
		buf_add(&s->text, text, (size_t)len);
}

/* Anything declared in a DTD is refused (the pre-pass drops DOCTYPEs). */
static void XMLCALL xml_on_entity(void *data, const XML_Char *name, int pe, const XML_Char *value, int vlen,
			      const XML_Char *base, const XML_Char *sys, const XML_Char *pub,
			      const XML_Char *notation)
{
	(void)name, (void)pe, (void)value, (void)vlen, (void)base, (void)sys, (void)pub, (void)notation;
	stop(data, forge_error("entity declarations are not read"));
}

int junit_xml_scan(const char *xml, size_t len, const struct junit_xml_handler *h, void *payload)
{
	struct scan s = { .h = h, .payload = payload };
	struct buf doc = BUF_INIT;
	const char *lt;
	size_t off;

	if (len > JUNIT_MAX_BYTES)
		return forge_error("XML document of %zu bytes: more than %u MiB", len, JUNIT_MAX_BYTES >> 20);
	prepare(&doc, xml, len);
	s.vals = xcalloc(JUNIT_MAX_ATTRS, sizeof *s.vals);
	for (size_t k = 0; k < JUNIT_MAX_ATTRS; k++)
		buf_init(&s.vals[k], 0);
	buf_init(&s.text, 0);
	buf_init(&s.tmp, 0);
	/*
	 * Text outside the elements is ignored, and documents may follow one
	 * another (reports concatenated): each runs from a '<' to the end of
	 * its root element, then the next starts at the next '<'.
	 */
	off = 0;
	while (s.rc == 0 && off < doc.len && (lt = memchr(doc.buf + off, '<', doc.len - off))) {
		enum XML_Error e;
		off = (size_t)(lt - doc.buf);
		if (!(s.p = XML_ParserCreate("UTF-8"))) {
			s.rc = forge_error("cannot make an XML parser: out of memory");
			break;
		}
		XML_SetUserData(s.p, &s);
		XML_SetElementHandler(s.p, xml_on_start, xml_on_end);
		XML_SetCharacterDataHandler(s.p, xml_on_text);
		XML_SetEntityDeclHandler(s.p, xml_on_entity);
		XML_SetParamEntityParsing(s.p, XML_PARAM_ENTITY_PARSING_NEVER);
		if (XML_Parse(s.p, lt, (int)(doc.len - off), XML_TRUE) == XML_STATUS_OK) {
			XML_ParserFree(s.p);
			break;
		}
		e = XML_GetErrorCode(s.p);
		if (s.rc == 0 && e == XML_ERROR_JUNK_AFTER_DOC_ELEMENT && XML_GetCurrentByteIndex(s.p) > 0) {
			off += (size_t)XML_GetCurrentByteIndex(s.p);
			XML_ParserFree(s.p);
			continue;
		}
		flush_text(&s);	/* what came before the error is delivered */
		if (s.rc == 0)
			s.rc = forge_error("XML: %s at line %lu, column %lu", XML_ErrorString(e),
					   (unsigned long)XML_GetCurrentLineNumber(s.p),
					   (unsigned long)XML_GetCurrentColumnNumber(s.p) + 1);
		XML_ParserFree(s.p);
	}
	for (size_t k = 0; k < JUNIT_MAX_ATTRS; k++)
		buf_release(&s.vals[k]);
	free(s.vals);
	buf_release(&s.text);
	buf_release(&s.tmp);
	buf_release(&doc);
	return s.rc;
}

/* ---- the JUnit reader ------------------------------------------------------- */

struct suite {
	long a_tests, a_fail, a_skip;  /* attributes (a_tests -1: absent) */
	long n_total, n_fail, n_skip;  /* counted below it */
};

enum capture { CAP_NONE, CAP_FAILURE, CAP_SKIPPED, CAP_OUT, CAP_RERUN };

struct reader {
	struct testrun *r;
	struct suite *suites;     /* JUNIT_MAX_DEPTH */
	size_t nsuites;
	long cur;                 /* case index or -1 */
	bool cur_skipped, cur_failed;
	bool dropping;            /* in a case refused by the cap (testrun_add) */
	enum capture cap;
	struct buf text;
	bool seen;                /* a JUnit element */
	long extra_total, extra_fail, extra_skip;
};

static bool is(const char *name, size_t len, const char *want)
{
	return strlen(want) == len && memcmp(name, want, len) == 0;
}

static const char *attr(const struct junit_xml_attr *a, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (is(a[i].name, a[i].name_len, name))
			return a[i].value;
	return NULL;
}

static long attr_num(const struct junit_xml_attr *a, size_t n, const char *name)
{
	const char *v = attr(a, n, name);
	long out;

	if (!v)
		return -1;
	size_t len = strlen(v);
	tr_trim(&v, &len);
	if (!tr_number(&v, &len, &out) || len)
		return -1;
	return out;
}

static struct testcase *current(struct reader *rd)
{
	return rd->cur >= 0 ? &rd->r->cases[rd->cur] : NULL;
}

static void open_case(struct reader *rd, const struct junit_xml_attr *a, size_t n)
{
	const char *nm = attr(a, n, "name");
	struct testcase *c = testrun_add(rd->r, nm ? nm : "", nm ? strlen(nm) : 0, TC_PASS);
	const char *v;
	double t;

	rd->cur = c ? (long)(c - rd->r->cases) : -1;
	rd->cur_skipped = rd->cur_failed = false;
	rd->dropping = !c;
	if (!c)
		return;
	if ((v = attr(a, n, "classname")) && *v)
		testcase_set(&c->suite, v, strlen(v));
	if ((v = attr(a, n, "file")) && *v)
		testcase_set(&c->file, v, strlen(v));
	long line = attr_num(a, n, "line");
	if (line > 0)
		c->line = line;
	if ((v = attr(a, n, "time")) && forge_parse_double(&t, v) == 0 && t >= 0 && t < 1e9)
		c->time_ms = t * 1000;
	if ((v = attr(a, n, "status")) && (strcmp(v, "notrun") == 0 || strcmp(v, "disabled") == 0))
		rd->cur_skipped = true;
}

static int on_start(void *payload, const char *name, size_t len, const struct junit_xml_attr *a, size_t n)
{
	struct reader *rd = payload;
	struct testcase *c = current(rd);

	if (is(name, len, "testsuites") || is(name, len, "testsuite")) {
		rd->seen = true;
		if (rd->nsuites < JUNIT_MAX_DEPTH) {
			struct suite *s = &rd->suites[rd->nsuites++];
			long skipped = attr_num(a, n, "skipped"), disabled = attr_num(a, n, "disabled");
			long fail = attr_num(a, n, "failures"), err = attr_num(a, n, "errors");
			*s = (struct suite){ .a_tests = attr_num(a, n, "tests") };
			s->a_fail = (fail < 0 ? 0 : fail) + (err < 0 ? 0 : err);
			s->a_skip = (skipped < 0 ? 0 : skipped) + (disabled < 0 ? 0 : disabled);
		}
		return 0;
	}
	if (is(name, len, "testcase")) {
		rd->seen = true;
		open_case(rd, a, n);
		return 0;
	}
	if (!c && rd->dropping) {
		/* its status still counts (testrun_add counted it passing) */
		rd->cur_failed |= is(name, len, "failure") || is(name, len, "error");
		rd->cur_skipped |= is(name, len, "skipped");
	}
	if (!c)
		return 0;
	buf_reset(&rd->text);
	if (is(name, len, "failure") || is(name, len, "error")) {
		rd->cur_failed = true;
		if (is(name, len, "error"))
			c->error = true;
		const char *m = attr(a, n, "message");
		if (m && *m && !c->message)
			testcase_set(&c->message, m, strlen(m));
		rd->cap = CAP_FAILURE;
	} else if (is(name, len, "skipped")) {
		rd->cur_skipped = true;
		const char *m = attr(a, n, "message");
		if (m && *m && !c->message)
			testcase_set(&c->message, m, strlen(m));
		rd->cap = CAP_SKIPPED;
	} else if (is(name, len, "flakyFailure") || is(name, len, "flakyError")) {
		c->flaky = true;
		const char *m = attr(a, n, "message");
		if (m && *m && !c->message)
			testcase_set(&c->message, m, strlen(m));
		rd->cap = CAP_RERUN;
	} else if (is(name, len, "rerunFailure") || is(name, len, "rerunError")) {
		rd->cap = CAP_RERUN;
	} else if (is(name, len, "system-out") || is(name, len, "system-err")) {
		rd->cap = CAP_OUT;
	}
	return 0;
}

static int on_text(void *payload, const char *text, size_t len)
{
	struct reader *rd = payload;

	if (rd->cap != CAP_NONE && rd->text.len < TESTRUN_MAX_FIELD) {
		size_t room = TESTRUN_MAX_FIELD - rd->text.len;
		buf_add(&rd->text, text, len < room ? len : room);
	}
	return 0;
}

/* A case refused by the cap ends: counted by its status, as close_case
 * counts a kept one. */
static void close_dropped(struct reader *rd)
{
	enum tc_status st = rd->cur_skipped ? TC_SKIP : rd->cur_failed ? TC_FAIL : TC_PASS;

	rd->dropping = false;
	rd->r->dropped[TC_PASS]--;
	rd->r->dropped[st]++;
	for (size_t i = 0; i < rd->nsuites; i++) {
		rd->suites[i].n_total++;
		rd->suites[i].n_fail += st == TC_FAIL;
		rd->suites[i].n_skip += st == TC_SKIP;
	}
}

static void close_case(struct reader *rd, struct testcase *c)
{
	if (rd->cur_skipped)
		c->status = TC_SKIP;
	else if (rd->cur_failed)
		c->status = TC_FAIL;
	if (c->flaky && c->status != TC_PASS)
		c->flaky = false;
	if (c->status == TC_FAIL && c->output) {
		const char *file;
		size_t flen;
		long line;
		if (!c->file && tr_file_line(c->output, strlen(c->output), &file, &flen, &line)) {
			testcase_set(&c->file, file, flen);
			c->line = line;
		}
		if (!c->message) {
			const char *s = c->output;
			while (*s == '\n' || *s == ' ' || *s == '\t')
				s++;
			size_t n = strcspn(s, "\n");
			if (n)
				testcase_set(&c->message, s, n);
		}
	}
	for (size_t i = 0; i < rd->nsuites; i++) {
		rd->suites[i].n_total++;
		rd->suites[i].n_fail += c->status == TC_FAIL;
		rd->suites[i].n_skip += c->status == TC_SKIP;
	}
}

/* A suite ends: count what its attributes say it held beyond its cases. */
static void close_suite(struct reader *rd)
{
	struct suite s = rd->suites[--rd->nsuites];
	long et = 0, ef = 0, es = 0;

	if (s.a_tests > s.n_total) {
		et = s.a_tests - s.n_total;
		ef = s.a_fail - s.n_fail;
		ef = ef < 0 ? 0 : ef > et ? et : ef;
		es = s.a_skip - s.n_skip;
		es = es < 0 ? 0 : es > et - ef ? et - ef : es;
		rd->extra_total += et;
		rd->extra_fail += ef;
		rd->extra_skip += es;
	}
	if (rd->nsuites > 0) {
		/* the parent counted this suite's cases as they closed */
		struct suite *parent = &rd->suites[rd->nsuites - 1];
		parent->n_total += et;
		parent->n_fail += ef;
		parent->n_skip += es;
	}
}

static int on_end(void *payload, const char *name, size_t len)
{
	struct reader *rd = payload;
	struct testcase *c = current(rd);

	if (is(name, len, "testsuites") || is(name, len, "testsuite")) {
		if (rd->nsuites > 0)
			close_suite(rd);
		return 0;
	}
	if (is(name, len, "testcase")) {
		if (c)
			close_case(rd, c);
		else if (rd->dropping)
			close_dropped(rd);
		rd->cur = -1;
		return 0;
	}
	if (!c)
		return 0;
	const char *t = rd->text.buf;
	size_t n = rd->text.len;
	if (rd->cap == CAP_FAILURE && n) {
		while (n && (*t == '\n' || *t == '\r')) {
			t++;
			n--;
		}
		if (c->output)
			testcase_append(&c->output, t, n);
		else
			testcase_set(&c->output, t, n);
	} else if (rd->cap == CAP_SKIPPED && n && !c->message) {
		tr_trim(&t, &n);
		if (n)
			testcase_set(&c->message, t, n);
	} else if ((rd->cap == CAP_OUT || rd->cap == CAP_RERUN) && n) {
		testcase_append(&c->output, t, n);
	}
	rd->cap = CAP_NONE;
	buf_reset(&rd->text);
	return 0;
}

int junit_parse(struct testrun *out, const char *xml, size_t len)
{
	struct reader rd = { .r = out, .cur = -1 };
	struct junit_xml_handler h = { on_start, on_end, on_text };
	int rc;

	rd.suites = xcalloc(JUNIT_MAX_DEPTH, sizeof *rd.suites);
	buf_init(&rd.text, 0);
	rc = junit_xml_scan(xml, len, &h, &rd);
	/* a truncated document: close what is open so its counts stand */
	if (rc != 0) {
		if (rd.cur >= 0)
			close_case(&rd, current(&rd));
		else if (rd.dropping)
			close_dropped(&rd);
		while (rd.nsuites > 0)
			close_suite(&rd);
	}
	buf_release(&rd.text);
	free(rd.suites);
	if (!rd.seen) {
		testrun_release(out);
		if (rc == 0)
			forge_error("not a JUnit report: no testsuites, testsuite or testcase element");
		return 0;
	}
	testrun_count(out);
	out->total += rd.extra_total;
	out->failed += rd.extra_fail;
	out->skipped += rd.extra_skip;
	out->passed += rd.extra_total - rd.extra_fail - rd.extra_skip;
	snprintf(out->format, sizeof out->format, "junit");
	if (rc != 0)
		snprintf(out->note, sizeof out->note, "the report is incomplete: %.200s", forge_last_error());
	return 1;
}

/* ---- the writer ------------------------------------------------------------- */

/* XML-escape s: valid UTF-8 only (other bytes become '?'), no control
 * characters but tab and newline (escaped in attributes). */
static void put_escaped(FILE *f, const char *s, bool in_attr)
{
	size_t len = s ? strlen(s) : 0;

	for (size_t i = 0; i < len;) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x80) {
			switch (c) {
			case '&': fputs("&amp;", f); break;
			case '<': fputs("&lt;", f); break;
			case '>': fputs("&gt;", f); break;
			case '"': fputs(in_attr ? "&quot;" : "\"", f); break;
			case '\n': fputs(in_attr ? "&#10;" : "\n", f); break;
			case '\t': fputs(in_attr ? "&#9;" : "\t", f); break;
			case '\r': fputs("&#13;", f); break;
			default: fputc(c >= 0x20 && c != 0x7f ? (int)c : '?', f); break;
			}
			i++;
			continue;
		}
		size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
		if (i + n <= len && json_utf8_valid(s + i, n)) {
			fwrite(s + i, 1, n, f);
			i += n;
		} else {
			fputc('?', f);
			i++;
		}
	}
}

static void put_attr(FILE *f, const char *name, const char *value)
{
	if (!value)
		return;
	fprintf(f, " %s=\"", name);
	put_escaped(f, value, true);
	fputc('"', f);
}

static void put_case(FILE *f, const struct testcase *c, const char *suite_name)
{
	char num[64];

	fputs("    <testcase", f);
	put_attr(f, "name", c->name);
	put_attr(f, "classname", c->suite ? c->suite : suite_name);
	put_attr(f, "file", c->file);
	if (c->line > 0) {
		snprintf(num, sizeof num, "%ld", c->line);
		put_attr(f, "line", num);
	}
	if (c->time_ms >= 0) {
		snprintf(num, sizeof num, "%.3f", c->time_ms / 1000);
		put_attr(f, "time", num);
	}
	if (c->status == TC_PASS && !c->flaky) {
		fputs("/>\n", f);
		return;
	}
	const char *el = c->status == TC_SKIP ? "skipped"
		       : c->status == TC_PASS ? "flakyFailure"
		       : c->error ? "error" : "failure";
	fprintf(f, ">\n      <%s", el);
	put_attr(f, "message", c->message);
	if (c->status != TC_SKIP)
		put_attr(f, "type", c->classification ? c->classification : "failure");
	if (c->status == TC_SKIP || !c->output) {
		fputs("/>\n", f);
	} else {
		fputc('>', f);
		put_escaped(f, c->output, false);
		fprintf(f, "</%s>\n", el);
	}
	fputs("    </testcase>\n", f);
}

int junit_write(FILE *f, const struct testrun *r, const char *suite_name, double time_s)
{
	long errors = 0;
	char counts[200], tattr[64] = "";

	for (size_t i = 0; i < r->ncases; i++)
		errors += r->cases[i].status == TC_FAIL && r->cases[i].error;
	long failures = r->failed - errors < 0 ? 0 : r->failed - errors;
	snprintf(counts, sizeof counts, " tests=\"%ld\" failures=\"%ld\" errors=\"%ld\" skipped=\"%ld\"",
		 r->total, failures, errors, r->skipped);
	if (time_s >= 0)
		snprintf(tattr, sizeof tattr, " time=\"%.3f\"", time_s);

	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"forge-test\"", f);
	fprintf(f, "%s%s>\n  <testsuite", counts, tattr);
	put_attr(f, "name", suite_name ? suite_name : "forge-test");
	fprintf(f, "%s%s>\n", counts, tattr);
	for (size_t i = 0; i < r->ncases; i++)
		put_case(f, &r->cases[i], suite_name);
	fputs("  </testsuite>\n</testsuites>\n", f);
	if (fflush(f) != 0 || ferror(f))
		return -1;
	return 0;
}
