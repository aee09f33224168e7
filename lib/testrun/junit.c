/* junit.c - a bounded XML scanner, the JUnit report reader and writer; see
 * junit.h. */
#include "testrun/junit.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "testrun/testrun.h"
#include "testrun/testrun_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the scanner ------------------------------------------------------------ */

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == '-' || c == '.' || c == ':' || (unsigned char)c >= 0x80;
}

static bool space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void add_utf8(struct buf *b, unsigned long cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xC0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xE0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		u[0] = (char)(0xF0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[3] = (char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	buf_add(b, u, n);
}

/* Decode s[0..len) (entities, character references) into b. */
static void decode(struct buf *b, const char *s, size_t len)
{
	static const struct {
		const char *name;
		char c;
	} ents[] = { { "lt;", '<' }, { "gt;", '>' }, { "amp;", '&' }, { "quot;", '"' }, { "apos;", '\'' } };

	for (size_t i = 0; i < len; i++) {
		if (s[i] != '&') {
			buf_addch(b, s[i]);
			continue;
		}
		const char *p = s + i + 1;
		size_t left = len - i - 1;
		bool done = false;
		for (size_t k = 0; k < sizeof ents / sizeof ents[0] && !done; k++) {
			size_t n = strlen(ents[k].name);
			if (left >= n && memcmp(p, ents[k].name, n) == 0) {
				buf_addch(b, ents[k].c);
				i += n;
				done = true;
			}
		}
		if (!done && left >= 3 && p[0] == '#') {
			bool hex = p[1] == 'x' || p[1] == 'X';
			size_t j = hex ? 2 : 1;
			unsigned long cp = 0;
			size_t digits = 0;
			for (; j < left && digits < 8; j++, digits++) {
				char c = p[j];
				int v = c >= '0' && c <= '9' ? c - '0'
				      : hex && c >= 'a' && c <= 'f' ? c - 'a' + 10
				      : hex && c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
				if (v < 0)
					break;
				cp = cp * (hex ? 16 : 10) + (unsigned long)v;
			}
			if (digits && j < left && p[j] == ';' && cp > 0 && cp <= 0x10FFFF &&
			    !(cp >= 0xD800 && cp <= 0xDFFF)) {
				add_utf8(b, cp);
				i += j + 1;
				done = true;
			}
		}
		if (!done)
			buf_addch(b, '&');
	}
}

struct open_el {
	const char *name;
	size_t len;
};

/* Parse a start tag at p (after '<'); returns its length, or 0 when malformed. */
static size_t start_tag(const char *p, size_t left, struct junit_xml_attr *attrs, struct buf *vals,
			size_t *nattrs, bool *empty)
{
	size_t j = 1;

	while (j < left && name_char(p[j]))
		j++;
	if (j == 1)
		return 0;
	*nattrs = 0;
	*empty = false;
	while (j < left) {
		while (j < left && space(p[j]))
			j++;
		if (j < left && p[j] == '>')
			return j + 1;
		if (j + 1 < left && p[j] == '/' && p[j + 1] == '>') {
			*empty = true;
			return j + 2;
		}
		size_t an = j;
		while (j < left && name_char(p[j]))
			j++;
		if (j == an)
			return 0;
		size_t alen = j - an;
		while (j < left && space(p[j]))
			j++;
		if (j >= left || p[j] != '=')
			return 0;
		j++;
		while (j < left && space(p[j]))
			j++;
		if (j >= left || (p[j] != '"' && p[j] != '\''))
			return 0;
		char q = p[j++];
		const char *v = p + j;
		const char *e = memchr(v, q, left - j);
		if (!e)
			return 0;
		j = (size_t)(e - p) + 1;
		if (*nattrs < JUNIT_MAX_ATTRS) {
			struct buf *b = &vals[*nattrs];
			buf_reset(b);
			decode(b, v, (size_t)(e - v));
			attrs[*nattrs] = (struct junit_xml_attr){ p + an, alen, b->buf, b->len };
			(*nattrs)++;
		}
	}
	return 0;
}

/* Skip a comment, CDATA, PI or declaration at p; returns its length (0:
 * unterminated); cdata and cdata_len are set for CDATA. */
static size_t markup(const char *p, size_t left, const char **cdata, size_t *cdata_len)
{
	const char *e;

	*cdata = NULL;
	if (tr_prefix(p, left, "<!--"))
		return (e = tr_find(p + 4, left - 4, "-->")) ? (size_t)(e + 3 - p) : 0;
	if (tr_prefix(p, left, "<![CDATA[")) {
		if (!(e = tr_find(p + 9, left - 9, "]]>")))
			return 0;
		*cdata = p + 9;
		*cdata_len = (size_t)(e - (p + 9));
		return (size_t)(e + 3 - p);
	}
	if (tr_prefix(p, left, "<?"))
		return (e = tr_find(p + 2, left - 2, "?>")) ? (size_t)(e + 2 - p) : 0;
	/* <!DOCTYPE …> and friends, with an internal subset in [ ] */
	size_t j = 2;
	int bracket = 0;
	while (j < left && !(p[j] == '>' && bracket == 0)) {
		if (p[j] == '[')
			bracket++;
		else if (p[j] == ']' && bracket > 0)
			bracket--;
		j++;
	}
	return j < left ? j + 1 : 0;
}

int junit_xml_scan(const char *xml, size_t len, const struct junit_xml_handler *h, void *payload)
{
	struct open_el *stack = xcalloc(JUNIT_MAX_DEPTH, sizeof *stack);
	struct junit_xml_attr attrs[JUNIT_MAX_ATTRS];
	struct buf *vals = xcalloc(JUNIT_MAX_ATTRS, sizeof *vals);
	struct buf text = BUF_INIT;
	size_t depth = 0, i = 0;
	int rc = 0;

	for (size_t k = 0; k < JUNIT_MAX_ATTRS; k++)
		buf_init(&vals[k], 0);
	while (i < len && rc == 0) {
		if (xml[i] != '<') {
			const char *lt = memchr(xml + i, '<', len - i);
			size_t n = lt ? (size_t)(lt - (xml + i)) : len - i;
			if (depth > 0 && h->text) {
				buf_reset(&text);
				decode(&text, xml + i, n);
				rc = h->text(payload, text.buf, text.len);
			}
			i += n;
			continue;
		}
		const char *p = xml + i;
		size_t left = len - i;
		if (tr_prefix(p, left, "<!") || tr_prefix(p, left, "<?")) {
			const char *cdata;
			size_t cdata_len = 0;
			size_t n = markup(p, left, &cdata, &cdata_len);
			if (n == 0) {
				rc = forge_error("unterminated markup at byte %zu", i);
				break;
			}
			if (cdata && depth > 0 && h->text)
				rc = h->text(payload, cdata, cdata_len);
			i += n;
			continue;
		}
		if (tr_prefix(p, left, "</")) {
			size_t j = 2;
			while (j < left && name_char(p[j]))
				j++;
			const char *name = p + 2;
			size_t nlen = j - 2;
			while (j < left && space(p[j]))
				j++;
			if (j >= left || p[j] != '>') {
				rc = forge_error("malformed end tag at byte %zu", i);
				break;
			}
			if (depth == 0 || stack[depth - 1].len != nlen || memcmp(stack[depth - 1].name, name, nlen) != 0) {
				rc = forge_error("mismatched end tag '</%.*s>' at byte %zu", (int)(nlen > 64 ? 64 : nlen),
						 name, i);
				break;
			}
			depth--;
			if (h->end)
				rc = h->end(payload, name, nlen);
			i += j + 1;
			continue;
		}
		size_t nattrs = 0;
		bool empty = false;
		size_t n = start_tag(p, left, attrs, vals, &nattrs, &empty);
		if (n == 0) {
			rc = forge_error("malformed tag at byte %zu", i);
			break;
		}
		const char *name = p + 1;
		size_t nlen = 0;
		while (nlen < left - 1 && name_char(name[nlen]))
			nlen++;
		if (!empty && depth >= JUNIT_MAX_DEPTH) {
			rc = forge_error("elements nested deeper than %d", JUNIT_MAX_DEPTH);
			break;
		}
		if (h->start)
			rc = h->start(payload, name, nlen, attrs, nattrs);
		if (rc == 0 && empty && h->end)
			rc = h->end(payload, name, nlen);
		if (!empty)
			stack[depth++] = (struct open_el){ name, nlen };
		i += n;
	}
	if (rc == 0 && depth > 0)
		rc = forge_error("the document ends inside '<%.*s>'",
				 (int)(stack[depth - 1].len > 64 ? 64 : stack[depth - 1].len), stack[depth - 1].name);
	for (size_t k = 0; k < JUNIT_MAX_ATTRS; k++)
		buf_release(&vals[k]);
	free(vals);
	buf_release(&text);
	free(stack);
	return rc;
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
