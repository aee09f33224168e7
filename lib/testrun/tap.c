/* tap.c - TAP 13/14 reader; see tap.h. */
#include "testrun/tap.h"
#include "core/buf.h"
#include "core/forge.h"
#include "testrun/testrun.h"
#include "testrun/testrun_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TAP_MAX_DEPTH 32
#define TAP_MAX_YAML (64u << 10)

struct tap {
	struct testrun *r;
	bool seen_marker;            /* a plan or version line at depth 0 */
	bool seen_test;
	long strong;                 /* test points with a number or " - " */
	/* the document at depth 0 */
	bool has_plan, leading, plan_zero;
	long plan_n, ntests;
	long missing;
	long extra;                  /* test points past their document's plan */
	bool orphan;                 /* this document began with a point past a
				      * complete leading plan */
	bool version_without_plan;
	/* subtests */
	long children[TAP_MAX_DEPTH + 1];
	bool child_failed[TAP_MAX_DEPTH + 1];
	char *sub_name[TAP_MAX_DEPTH + 1];
	/* the last test point, for its diagnostics */
	long last;                   /* case index or -1 */
	size_t last_indent;
	/* node's trailer */
	long trailer[6];             /* tests pass fail cancelled skipped todo */
	bool has_trailer[6];
	/* A test point counted through its subtests waits for its YAML,
	 * which says "type: 'suite'" for a describe(): node's trailer counts
	 * a test() with subtests as a test of its own, a suite not ("#
	 * suites"); the leaves are what is counted here, as node's JUnit
	 * reporter counts them. */
	int parent_st;               /* its status (enum tc_status), or -1 */
	size_t parent_indent;
	long parents[3];             /* the parent tests: passed, failed, skipped */
	bool bailed;
};

static void close_doc(struct tap *t)
{
	if (t->has_plan && t->ntests < t->plan_n)
		t->missing += t->plan_n - t->ntests;
	/* more points than planned is a bad plan, as prove says (before: a
	 * pass); points after a complete plan that no plan of their own
	 * follows are such points, not a second document */
	if (t->has_plan && t->ntests > t->plan_n)
		t->extra += t->ntests - t->plan_n;
	else if (!t->has_plan && t->orphan)
		t->extra += t->ntests;
	t->orphan = false;
	t->has_plan = t->leading = false;
	t->plan_n = t->ntests = 0;
}

/* ---- a minimal YAML reader for diagnostics --------------------------------- */

static size_t indent_of(const char *s, size_t len)
{
	size_t i = 0;
	while (i < len && s[i] == ' ')
		i++;
	return i;
}

/* Unquote a scalar into b. */
static void yaml_scalar(struct buf *b, const char *v, size_t n)
{
	tr_trim(&v, &n);
	if (n >= 2 && v[0] == '\'' && v[n - 1] == '\'') {
		for (size_t i = 1; i + 1 < n; i++) {
			buf_addch(b, v[i]);
			if (v[i] == '\'' && i + 2 < n && v[i + 1] == '\'')
				i++;
		}
	} else if (n >= 2 && v[0] == '"' && v[n - 1] == '"') {
		for (size_t i = 1; i + 1 < n; i++) {
			if (v[i] == '\\' && i + 2 < n) {
				i++;
				buf_addch(b, v[i] == 'n' ? '\n' : v[i] == 't' ? '\t' : v[i]);
			} else {
				buf_addch(b, v[i]);
			}
		}
	} else {
		buf_add(b, v, n);
	}
}

/*
 * The value of `key` among the lines of yaml[0..len) indented exactly
 * `indent` spaces (a block scalar | or > is read from the lines indented
 * deeper).  Sets sub and sublen to the deeper lines after the key (a nested
 * mapping).  False when the key is absent.
 */
static bool yaml_get(struct buf *out, const char *yaml, size_t len, size_t indent, const char *key,
		     const char **sub, size_t *sublen)
{
	struct tr_lines it;
	const char *line;
	size_t n, klen = strlen(key);

	tr_lines_init(&it, yaml, len);
	while (tr_next_line(&it, &line, &n)) {
		if (indent_of(line, n) != indent || n < indent + klen + 1)
			continue;
		const char *k = line + indent;
		if (memcmp(k, key, klen) != 0 || k[klen] != ':')
			continue;
		const char *v = k + klen + 1;
		size_t vn = n - indent - klen - 1;
		tr_trim(&v, &vn);
		/* the deeper lines that follow */
		const char *start = it.p, *stop = it.p;
		struct tr_lines it2 = it;
		const char *l2;
		size_t n2, block_indent = 0;
		while (tr_next_line(&it2, &l2, &n2)) {
			size_t in = indent_of(l2, n2);
			if (in < n2 && in <= indent)
				break;
			if (in < n2 && !block_indent)
				block_indent = in;
			stop = it2.p;
		}
		if (sub) {
			*sub = start;
			*sublen = (size_t)(stop - start);
		}
		if (vn && (v[0] == '|' || v[0] == '>')) {
			struct tr_lines it3;
			tr_lines_init(&it3, start, (size_t)(stop - start));
			bool first = true;
			while (tr_next_line(&it3, &l2, &n2)) {
				if (!first)
					buf_addch(out, '\n');
				first = false;
				if (n2 > block_indent)
					buf_add(out, l2 + block_indent, n2 - block_indent);
			}
			while (out->len && (out->buf[out->len - 1] == '\n' || out->buf[out->len - 1] == ' '))
				buf_truncate(out, out->len - 1);
		} else {
			yaml_scalar(out, v, vn);
		}
		return true;
	}
	return false;
}

/* Read what a failing test's YAML block says. */
static void read_yaml(struct testcase *c, const char *yaml, size_t len)
{
	struct buf v = BUF_INIT;
	const char *sub;
	size_t sublen;

	testcase_set(&c->output, yaml, len);
	if (yaml_get(&v, yaml, len, 0, "message", NULL, NULL) ||
	    yaml_get(&v, yaml, len, 0, "error", NULL, NULL)) {
		if (v.len)
			testcase_set(&c->message, v.buf, v.len);
	}
	buf_reset(&v);
	const char *file;
	size_t flen;
	long line;
	if (yaml_get(&v, yaml, len, 0, "location", NULL, NULL) && tr_file_line(v.buf, v.len, &file, &flen, &line)) {
		testcase_set(&c->file, file, flen);
		c->line = line;
	} else {
		buf_reset(&v);
		if (yaml_get(&v, yaml, len, 0, "at", &sub, &sublen)) {
			size_t in = indent_of(sub, sublen);
			buf_reset(&v);
			if (yaml_get(&v, sub, sublen, in, "file", NULL, NULL) && v.len)
				testcase_set(&c->file, v.buf, v.len);
			buf_reset(&v);
			if (yaml_get(&v, sub, sublen, in, "line", NULL, NULL)) {
				const char *p = v.buf;
				size_t n = v.len;
				long ln;
				if (tr_number(&p, &n, &ln))
					c->line = ln;
			}
		}
		buf_reset(&v);
		if (!c->file && yaml_get(&v, yaml, len, 0, "file", NULL, NULL) && v.len)
			testcase_set(&c->file, v.buf, v.len);
		buf_reset(&v);
		if (!c->line && yaml_get(&v, yaml, len, 0, "line", NULL, NULL)) {
			const char *p = v.buf;
			size_t n = v.len;
			long ln;
			if (tr_number(&p, &n, &ln))
				c->line = ln;
		}
		buf_reset(&v);
	}
	/* bats -F tap13: message: "(in test file t.bats, line 4)" */
	if (!c->file && c->message) {
		const char *m = strstr(c->message, "(in test file ");
		if (m) {
			m += strlen("(in test file ");
			const char *comma = strstr(m, ", line ");
			if (comma) {
				testcase_set(&c->file, m, (size_t)(comma - m));
				const char *p = comma + 7;
				size_t n = strlen(p);
				long ln;
				if (tr_number(&p, &n, &ln))
					c->line = ln;
			}
		}
	}
	buf_release(&v);
}

/*
 * Test::More's location, as C's libtap and Perl print it after a failing
 * point: "at FILE line N." ("Failed test at FILE line N." without a name).
 * FILE has no blank and a '.' or '/' ("at the end of line 3" is none).
 */
static bool at_file_line(const char *s, size_t n, const char **file, size_t *flen, long *line)
{
	for (size_t i = 0; i + 3 <= n; i++) {
		if (memcmp(s + i, "at ", 3) != 0 || (i > 0 && s[i - 1] != ' ' && s[i - 1] != '\t'))
			continue;
		const char *f = s + i + 3, *e = s + n;
		const char *sp = memchr(f, ' ', (size_t)(e - f));
		if (!sp || sp == f || (size_t)(e - sp) < 7 || memcmp(sp, " line ", 6) != 0)
			continue;
		const char *p = sp + 6;
		size_t left = (size_t)(e - p);
		long ln;
		if (!tr_number(&p, &left, &ln) || (left && !(left == 1 && *p == '.')))
			continue;
		if (memchr(f, '\t', (size_t)(sp - f)) ||
		    (!memchr(f, '.', (size_t)(sp - f)) && !memchr(f, '/', (size_t)(sp - f))))
			continue;
		*file = f;
		*flen = (size_t)(sp - f);
		*line = ln;
		return true;
	}
	return false;
}

/* A "#" diagnostic line after a failing test point. */
static void read_comment(struct testcase *c, const char *s, size_t n)
{
	const char *file;
	size_t flen;
	long line;

	testcase_append(&c->output, s, n);
	const char *m = tr_find(s, n, "(in test file ");
	if (m && !c->file) {
		const char *p = m + strlen("(in test file ");
		size_t left = n - (size_t)(p - s);
		const char *comma = tr_find(p, left, ", line ");
		if (comma) {
			testcase_set(&c->file, p, (size_t)(comma - p));
			const char *q = comma + 7;
			size_t ql = n - (size_t)(q - s);
			long ln;
			if (tr_number(&q, &ql, &ln))
				c->line = ln;
		}
		return;
	}
	if (!c->file && (tr_file_line(s, n, &file, &flen, &line) || at_file_line(s, n, &file, &flen, &line))) {
		testcase_set(&c->file, file, flen);
		c->line = line;
	}
	if (!c->message) {
		tr_trim(&s, &n);
		if (n)
			testcase_set(&c->message, s, n);
	}
}

/* ---- test points ----------------------------------------------------------- */

/* 1 (SKIP) or 2 (TODO) when s[i] is the "#" of a directive: unescaped,
 * after a blank or first, "skip…"/"todo…" after it; 0 when not. */
static int directive_at(const char *s, size_t n, size_t i)
{
	if (s[i] != '#' || (i != 0 && s[i - 1] != ' ' && s[i - 1] != '\t'))
		return 0;
	const char *d = s + i + 1;
	size_t dn = n - i - 1;
	tr_skip_ws(&d, &dn);
	if (dn >= 4 && strncasecmp(d, "skip", 4) == 0)
		return 1;
	return dn >= 4 && strncasecmp(d, "todo", 4) == 0 ? 2 : 0;
}

/* Parse "ok …" / "not ok …" at s; false when the line is not a test point. */
static bool test_point(struct tap *t, const char *s, size_t n, size_t indent)
{
	bool ok;

	if (tr_prefix(s, n, "ok")) {
		ok = true;
		s += 2;
		n -= 2;
	} else if (tr_prefix(s, n, "not ok")) {
		ok = false;
		s += 6;
		n -= 6;
	} else {
		return false;
	}
	if (n && *s != ' ' && *s != '\t')
		return false;
	tr_skip_ws(&s, &n);
	if (n && ((*s >= '0' && *s <= '9') || *s == '-'))
		t->strong++;
	long num;
	(void)tr_number(&s, &n, &num);
	tr_skip_ws(&s, &n);
	if (n && *s == '-') {
		s++;
		n--;
		tr_skip_ws(&s, &n);
	}
	/* the description ends at an unescaped " #" followed by SKIP/TODO */
	struct buf desc = BUF_INIT;
	int directive = 0; /* 1 skip, 2 todo */
	const char *reason = NULL;
	size_t reason_len = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\' && i + 1 < n && (s[i + 1] == '#' || s[i + 1] == '\\')) {
			buf_addch(&desc, s[++i]);
			continue;
		}
		if ((directive = directive_at(s, n, i)) != 0) {
			const char *d = s + i + 1;
			size_t dn = n - i - 1;
			tr_skip_ws(&d, &dn);
			while (dn && *d != ' ' && *d != '\t') {
				d++;
				dn--;
			}
			tr_trim(&d, &dn);
			reason = d;
			reason_len = dn;
			break;
		}
		buf_addch(&desc, s[i]);
	}

	size_t depth = indent / 4;
	if (depth > TAP_MAX_DEPTH - 1)
		depth = TAP_MAX_DEPTH - 1;
	bool has_children = t->children[depth + 1] > 0;
	bool children_failed = t->child_failed[depth + 1];
	t->children[depth + 1] = 0;
	t->child_failed[depth + 1] = false;
	t->children[depth]++;
	t->seen_test = true;
	if (depth == 0) {
		if (t->has_plan && t->leading && t->ntests >= t->plan_n) {
			close_doc(t);
			t->orphan = true;
		}
		t->ntests++;
	}

	enum tc_status st = directive == 1 ? TC_SKIP
			  : directive == 2 ? (ok ? TC_PASS : TC_SKIP)
			  : ok ? TC_PASS : TC_FAIL;
	if (st == TC_FAIL)
		t->child_failed[depth] = true;
	t->last = -1;
	if (has_children && !(st == TC_FAIL && !children_failed)) {
		buf_release(&desc);
		if (children_failed)
			t->child_failed[depth] = true;
		t->parent_st = (int)st;
		t->parent_indent = indent;
		return true;   /* counted through its subtests */
	}
	/* the name: enclosing subtests, then the description */
	struct buf name = BUF_INIT;
	for (size_t d = 0; d < depth; d++) {
		if (t->sub_name[d]) {
			buf_adds(&name, t->sub_name[d]);
			buf_adds(&name, " > ");
		}
	}
	buf_add(&name, desc.buf, desc.len);
	struct testcase *c = testrun_add(t->r, name.buf, name.len, st);
	if (c) {
		if (reason && reason_len && st != TC_PASS)
			testcase_set(&c->message, reason, reason_len);
		t->last = (long)(c - t->r->cases);
		t->last_indent = indent;
	}
	buf_release(&name);
	buf_release(&desc);
	return true;
}

/* The parent test point waiting (t->parent_st) is a test of node's
 * trailer unless its YAML said it is a suite. */
static void parent_done(struct tap *t, bool suite)
{
	if (t->parent_st >= 0 && !suite)
		t->parents[t->parent_st == TC_PASS ? 0 : t->parent_st == TC_FAIL ? 1 : 2]++;
	t->parent_st = -1;
}

/* yaml holds a line "type: 'suite'" (node's describe()). */
static bool yaml_suite(const char *yaml, size_t len)
{
	struct tr_lines it;
	const char *line;
	size_t n;

	tr_lines_init(&it, yaml, len);
	while (tr_next_line(&it, &line, &n)) {
		while (n && (line[n - 1] == ' ' || line[n - 1] == '\r'))
			n--;
		if ((n == 13 && !memcmp(line, "type: 'suite'", 13)) || (n == 11 && !memcmp(line, "type: suite", 11)))
			return true;
	}
	return false;
}

static void trailer(struct tap *t, const char *s, size_t n)
{
	static const char *const keys[] = { "tests ", "pass ", "fail ", "cancelled ", "skipped ", "todo " };

	for (size_t i = 0; i < 6; i++) {
		if (tr_prefix(s, n, keys[i])) {
			const char *p = s + strlen(keys[i]);
			size_t left = n - strlen(keys[i]);
			long v;
			/* one trailer a run: a command that runs node --test
			 * twice has both counted (before: the last one alone) */
			if (tr_number(&p, &left, &v) && left == 0) {
				t->trailer[i] += v;
				t->has_trailer[i] = true;
			}
		}
	}
}

int tap_parse(struct testrun *out, const char *text, size_t len)
{
	struct tap t = { .r = out, .last = -1, .parent_st = -1 };
	struct tr_lines it;
	const char *line;
	size_t n;
	struct buf yaml = BUF_INIT;

	tr_lines_init(&it, text, len);
	while (!t.bailed && tr_next_line(&it, &line, &n)) {
		size_t indent = indent_of(line, n);
		const char *s = line + indent;
		size_t sn = n - indent;
		while (sn && s[sn - 1] == ' ')
			sn--;

		bool yaml_start = sn == 3 && memcmp(s, "---", 3) == 0;
		if (t.parent_st >= 0 && !(yaml_start && indent > t.parent_indent))
			parent_done(&t, false);
		/* a YAML block under the last test point, or under a parent's */
		if ((t.last >= 0 || t.parent_st >= 0) && yaml_start &&
		    indent > (t.last >= 0 ? t.last_indent : t.parent_indent)) {
			size_t yindent = indent;
			buf_reset(&yaml);
			while (tr_next_line(&it, &line, &n)) {
				size_t in = indent_of(line, n);
				if (n - in == 3 && memcmp(line + in, "...", 3) == 0)
					break;
				if (in < n && in < yindent)
					break;   /* malformed: the block ended without "..." */
				if (yaml.len < TAP_MAX_YAML) {
					if (n > yindent)
						buf_add(&yaml, line + yindent, n - yindent);
					buf_addch(&yaml, '\n');
				}
			}
			if (t.parent_st >= 0) {
				parent_done(&t, yaml_suite(yaml.buf, yaml.len));
				continue;
			}
			struct testcase *c = &out->cases[t.last];
			if (c->status != TC_PASS)
				read_yaml(c, yaml.buf, yaml.len);
			t.last = -1;
			continue;
		}
		if (test_point(&t, s, sn, indent))
			continue;
		if (tr_prefix(s, sn, "TAP version ")) {
			if (indent == 0) {
				if (t.has_plan || t.ntests)
					close_doc(&t);
				t.seen_marker = true;
				t.version_without_plan = true;
			}
			continue;
		}
		if (tr_prefix(s, sn, "1..")) {
			const char *p = s + 3;
			size_t left = sn - 3;
			long plan;
			if (!tr_number(&p, &left, &plan))
				continue;
			tr_skip_ws(&p, &left);
			if (left && *p != '#')
				continue;
			t.last = -1;
			if (indent != 0)
				continue;
			t.seen_marker = true;
			t.version_without_plan = false;
			if (plan == 0)
				t.plan_zero = true;
			if (t.has_plan) {
				close_doc(&t);
				t.has_plan = t.leading = true;
				t.plan_n = plan;
			} else if (t.ntests == 0) {
				t.has_plan = t.leading = true;
				t.plan_n = plan;
			} else {
				t.has_plan = true;
				t.plan_n = plan;
				close_doc(&t);
			}
			continue;
		}
		if (strncasecmp(s, "Bail out!", sn < 9 ? sn : 9) == 0 && sn >= 9) {
			const char *why = s + 9;
			size_t wn = sn - 9;
			tr_trim(&why, &wn);
			char *msg = xstrndup(why, wn);
			testrun_add_synthetic(out, "Bail out!", wn ? msg : "the test run bailed out", NULL);
			free(msg);
			t.seen_marker = t.bailed = true;
			break;
		}
		if (sn && *s == '#') {
			const char *c = s + 1;
			size_t cn = sn - 1;
			tr_skip_ws(&c, &cn);
			if (tr_prefix(c, cn, "Subtest")) {
				size_t depth = indent / 4;
				if (depth > TAP_MAX_DEPTH - 1)
					depth = TAP_MAX_DEPTH - 1;
				const char *nm = c + 7;
				size_t nn = cn - 7;
				if (nn && *nm == ':') {
					nm++;
					nn--;
				}
				tr_trim(&nm, &nn);
				for (size_t d = depth; d < TAP_MAX_DEPTH + 1; d++) {
					free(t.sub_name[d]);
					t.sub_name[d] = NULL;
				}
				t.sub_name[depth] = xstrndup(nm, nn > TESTRUN_MAX_NAME ? TESTRUN_MAX_NAME : nn);
				t.last = -1;
				continue;
			}
			if (indent == 0 && t.last < 0)
				trailer(&t, c, cn);
			if (t.last >= 0 && out->cases[t.last].status == TC_FAIL)
				read_comment(&out->cases[t.last], c, cn);
			continue;
		}
		/* any other line: not TAP; it does not end a test point's diagnostics */
	}
	parent_done(&t, false);
	close_doc(&t);
	buf_release(&yaml);
	for (size_t d = 0; d < TAP_MAX_DEPTH + 1; d++)
		free(t.sub_name[d]);

	/* plan-less TAP ("ok 1 - x", "not ok - y" from a hand-written check
	 * script) counts when it numbers or dashes its test points */
	if (!t.seen_marker && t.strong > 0 && t.seen_test) {
		t.seen_marker = true;
		snprintf(out->note, sizeof out->note, "TAP without a plan");
	}
	if (!t.seen_marker || (!t.seen_test && !t.plan_zero && !t.bailed)) {
		testrun_release(out);
		return 0;
	}
	/* synthetic failures are counted by testrun_count too */
	testrun_count(out);
	snprintf(out->format, sizeof out->format, "tap");
	/* Output too long to keep whole has its middle cut (os/proc.h: "[…
	 * N bytes omitted …]"): the tests there ran, they are only not seen
	 * (before: "N planned tests did not run", a passing run failed). */
	bool cut = memmem(text, len, " bytes omitted \xe2\x80\xa6]\n", 19) != NULL;
	if (t.missing > 0 && !t.bailed && cut) {
		snprintf(out->note, sizeof out->note, "the output was cut in the middle: %ld planned test%s not seen",
			 t.missing, t.missing == 1 ? "" : "s");
	} else if (t.missing > 0 && !t.bailed) {
		char msg[128];
		snprintf(msg, sizeof msg, "%ld planned test%s did not run", t.missing, t.missing == 1 ? "" : "s");
		testrun_add_synthetic(out, "TAP plan", msg, NULL);
		snprintf(out->note, sizeof out->note, "%s", msg);
	} else if (t.extra > 0 && !t.bailed) {
		char msg[128];
		snprintf(msg, sizeof msg, "bad plan: %ld test%s more than planned ran", t.extra,
			 t.extra == 1 ? "" : "s");
		/* a cut that took a plan line leaves its points planless: a note */
		if (!cut)
			testrun_add_synthetic(out, "TAP plan", msg, NULL);
		snprintf(out->note, sizeof out->note, "%s%s", msg, cut ? " (the output was cut in the middle)" : "");
	} else if (t.version_without_plan && t.seen_test && !t.bailed) {
		testrun_add_synthetic(out, "TAP plan", "the TAP output has no plan: the run stopped early", NULL);
		snprintf(out->note, sizeof out->note, "no plan");
	}
	if (t.has_trailer[0] && t.has_trailer[1] && t.has_trailer[2]) {
		long synthetic = 0;
		for (size_t i = 0; i < out->ncases; i++)
			synthetic += out->cases[i].synthetic;
		/* node counts a test() with subtests and its subtests too (#
		 * tests 4, # fail 2 for one failing leaf of three): its leaves
		 * are counted, as the failures list them (before: "2 of 4
		 * failed (1 real, 0 environment)") */
		long tests = t.parents[0] + t.parents[1] + t.parents[2];
		if (tests > t.trailer[0] || t.parents[0] > t.trailer[1] ||
		    t.parents[1] > t.trailer[2] + t.trailer[3] || t.parents[2] > t.trailer[4] + t.trailer[5])
			tests = t.parents[0] = t.parents[1] = t.parents[2] = 0;   /* not node's counting */
		out->total = t.trailer[0] - tests + synthetic;
		out->passed = t.trailer[1] - t.parents[0];
		out->failed = t.trailer[2] + t.trailer[3] - t.parents[1] + synthetic;
		out->skipped = t.trailer[4] + t.trailer[5] - t.parents[2];
		snprintf(out->format, sizeof out->format, "node");
	}
	return 1;
}

bool tap_failing_line(const char *line, size_t len)
{
	if (!tr_prefix(line, len, "not ok") || (len > 6 && line[6] != ' ' && line[6] != '\t'))
		return false;
	for (size_t i = 6; i < len; i++) {
		if (line[i] == '\\' && i + 1 < len && (line[i + 1] == '#' || line[i + 1] == '\\'))
			i++;
		else if (directive_at(line, len, i))
			return false;
	}
	return true;
}

void tap_cut_failures(struct testrun *out, size_t n)
{
	char msg[160];
	size_t at = strlen(out->note);

	if (n == 0 || strcmp(out->format, "tap") != 0)
		return;
	snprintf(msg, sizeof msg, "%zu failing test point%s (\"not ok\") in the middle of the output, "
		 "which was cut", n, n == 1 ? "" : "s");
	testrun_add_synthetic(out, "TAP cut output", msg, NULL);
	testrun_count(out);
	snprintf(out->note + at, sizeof out->note - at, "%s%s", at ? "; " : "", msg);
}
