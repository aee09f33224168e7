/* testrun_summary.c - the summary lines of go test (-json and plain),
 * cargo test, pytest, ctest, node's spec reporter and bats' pretty
 * formatter; see testrun.h. */
#include "testrun/testrun.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "testrun/testrun_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------------ */

/* The case named name (in suite, may be NULL) through an index object
 * {key: position}; created with status st when absent. */
static struct testcase *lookup(struct testrun *r, jv *index, const char *suite, const char *name,
			       size_t len, enum tc_status st, bool create)
{
	struct buf key = BUF_INIT;
	struct testcase *c = NULL;

	if (suite)
		buf_adds(&key, suite);
	buf_addch(&key, '\x1f');
	buf_add(&key, name, len);
	jv pos = jv_object_get(jv_copy(*index), jv_string_sized(key.buf, (int)key.len));
	if (jv_get_kind(pos) == JV_KIND_NUMBER) {
		c = &r->cases[(size_t)jv_number_value(pos)];
	} else if (create) {
		c = testrun_add(r, name, len, st);
		if (c) {
			if (suite)
				testcase_set(&c->suite, suite, strlen(suite));
			*index = jv_object_set(*index, jv_string_sized(key.buf, (int)key.len),
					       jv_number((double)(c - r->cases)));
		}
	}
	jv_free(pos);
	buf_release(&key);
	return c;
}

/* Take "file.go:13: message" from an output line for a failing case. */
static void take_location(struct testcase *c, const char *s, size_t n)
{
	const char *file;
	size_t flen;
	long line;

	tr_trim(&s, &n);
	if (c->file || !tr_file_line(s, n, &file, &flen, &line) || file != s)
		return;
	testcase_set(&c->file, file, flen);
	c->line = line;
	/* the message after "file:line: " */
	const char *m = s + flen + 1;
	size_t mn = n - flen - 1;
	while (mn && *m >= '0' && *m <= '9') {
		m++;
		mn--;
	}
	if (mn && *m == ':') {
		m++;
		mn--;
	}
	tr_trim(&m, &mn);
	if (mn && !c->message)
		testcase_set(&c->message, m, mn);
}

/* Drop parents (a case named P when "P/…" exists in the same suite) unless
 * they failed with no failing subtest. */
static void drop_parents(struct testrun *r)
{
	bool *drop = xcalloc(r->ncases + 1, sizeof *drop);
	size_t w = 0;

	for (size_t i = 0; i < r->ncases; i++) {
		const struct testcase *c = &r->cases[i];
		size_t n = strlen(c->name);
		bool children = false, child_failed = false;
		for (size_t j = 0; j < r->ncases && !c->synthetic; j++) {
			const struct testcase *d = &r->cases[j];
			if (j == i || strncmp(d->name, c->name, n) != 0 || d->name[n] != '/')
				continue;
			if ((c->suite == NULL) != (d->suite == NULL) || (c->suite && strcmp(c->suite, d->suite) != 0))
				continue;
			children = true;
			child_failed |= d->status == TC_FAIL;
		}
		drop[i] = children && !(c->status == TC_FAIL && !child_failed);
	}
	for (size_t i = 0; i < r->ncases; i++) {
		struct testcase *c = &r->cases[i];
		if (drop[i]) {
			free(c->name);
			free(c->suite);
			free(c->file);
			free(c->message);
			free(c->output);
			continue;
		}
		r->cases[w++] = *c;
	}
	r->ncases = w;
	free(drop);
}

/* ---- go test -json ---------------------------------------------------------------- */

#define UNFINISHED "the test did not finish: its process ended under it (a panic, os.Exit or the -timeout)"

static void mark_ended(struct buf *ended, size_t i)
{
	while (ended->len <= i)
		buf_addch(ended, 0);
	ended->buf[i] = 1;
}

int testrun_parse_gojson(struct testrun *out, const char *text, size_t len)
{
	struct tr_lines it;
	const char *line;
	size_t n;
	jv index = jv_object(), pkgs = jv_object();
	long events = 0;
	struct buf ended = BUF_INIT;   /* a byte a case: it got pass, fail or skip */

	tr_lines_init(&it, text, len);
	while (tr_next_line(&it, &line, &n)) {
		if (n < 2 || line[0] != '{' || !tr_find(line, n, "\"Action\""))
			continue;
		jv ev = json_parse(line, n);
		const char *action = json_get_str(ev, "Action");
		const char *pkg = json_get_str(ev, "Package");
		const char *test = json_get_str(ev, "Test");
		const char *output = json_get_str(ev, "Output");
		/* its length from JSON: "\u0000" in it is a NUL byte, which
		 * testcase_set shows (strlen would end the text there) */
		jv ov = json_get(ev, "Output");
		size_t olen = output ? (size_t)jv_string_length_bytes(jv_copy(ov)) : 0;
		jv_free(ov);
		if (!action) {
			jv_free(ev);
			continue;
		}
		events++;
		if (!test) {
			/* package level: keep its output for a build failure */
			if (pkg && strcmp(action, "output") == 0 && output) {
				jv have = json_get(pkgs, pkg);
				jv s = jv_get_kind(have) == JV_KIND_STRING ? have : (jv_free(have), jv_string(""));
				int have_len = jv_string_length_bytes(jv_copy(s));
				if (have_len < TESTRUN_MAX_FIELD) {
					struct buf b = BUF_INIT;
					buf_add(&b, jv_string_value(s), (size_t)have_len);
					buf_add(&b, output, olen);
					jv_free(s);
					s = jv_string_sized(b.buf, (int)b.len);
					buf_release(&b);
				}
				pkgs = jv_object_set(pkgs, jv_string(pkg), s);
			} else if (pkg && strcmp(action, "fail") == 0) {
				pkgs = jv_object_set(pkgs, jv_string_fmt("\x1f%s", pkg), jv_true());
			}
			jv_free(ev);
			continue;
		}
		struct testcase *c = lookup(out, &index, pkg, test, strlen(test), TC_PASS, true);
		if (c) {
			if (strcmp(action, "output") == 0 && output) {
				size_t on = olen;
				if (on && output[on - 1] == '\n')
					on--;
				if (!tr_prefix(output, on, "=== ") && !tr_find(output, on, "--- PASS") &&
				    !tr_find(output, on, "--- FAIL") && !tr_find(output, on, "--- SKIP")) {
					testcase_append(&c->output, output, on);
					take_location(c, output, on);
				}
			} else if (strcmp(action, "fail") == 0) {
				c->status = TC_FAIL;
				mark_ended(&ended, (size_t)(c - out->cases));
			} else if (strcmp(action, "skip") == 0) {
				if (c->status != TC_FAIL)
					c->status = TC_SKIP;
				mark_ended(&ended, (size_t)(c - out->cases));
			} else if (strcmp(action, "pass") == 0) {
				/* (go test -count=N runs a test N times: one that
				 * failed once has failed, whatever comes after;
				 * before: the last run's pass hid it, and the
				 * package's fail was "build failure?") */
				if (c->status != TC_FAIL)
					c->status = TC_PASS;
				mark_ended(&ended, (size_t)(c - out->cases));
			}
			double el = json_get_num(ev, "Elapsed", -1);
			if (el >= 0)
				c->time_ms = el * 1000;
		}
		jv_free(ev);
	}
	jv_free(index);
	if (events == 0) {
		jv_free(pkgs);
		buf_release(&ended);
		return 0;
	}
	/* A test that started and never ended: its process died under it (a
	 * panic in another goroutine, os.Exit, go test's -timeout), and go
	 * test -json says so only of the package.  It did not pass. */
	for (size_t i = 0; i < out->ncases; i++)
		if (i >= ended.len || !ended.buf[i]) {
			struct testcase *c = &out->cases[i];
			c->status = TC_FAIL;
			c->error = true;
			testcase_set(&c->message, UNFINISHED, strlen(UNFINISHED));
		}
	buf_release(&ended);
	drop_parents(out);
	for (size_t i = 0; i < out->ncases; i++)
		if (out->cases[i].status != TC_FAIL) {
			free(out->cases[i].message);
			out->cases[i].message = NULL;
		}
	testrun_count(out);
	/* a package that failed with no failing test: a build failure */
	jv_object_foreach(pkgs, key, val) {
		const char *k = jv_string_value(key);
		if (k[0] == '\x1f') {
			bool named = false;
			for (size_t i = 0; i < out->ncases; i++)
				if (out->cases[i].status == TC_FAIL && out->cases[i].suite &&
				    strcmp(out->cases[i].suite, k + 1) == 0)
					named = true;
			if (!named) {
				jv o = json_get(pkgs, k + 1);
				char *name = NULL;
				struct buf b = BUF_INIT;
				buf_addf(&b, "package %s", k + 1);
				name = buf_detach(&b, NULL);
				struct testcase *c = testrun_add_synthetic(out, name, "the package failed (build failure?)",
									   NULL);
				if (jv_get_kind(o) == JV_KIND_STRING)
					testcase_set(&c->output, jv_string_value(o),
						     (size_t)jv_string_length_bytes(jv_copy(o)));
				free(name);
				jv_free(o);
			}
		}
		jv_free(key);
		jv_free(val);
	}
	jv_free(pkgs);
	snprintf(out->format, sizeof out->format, "go");
	return 1;
}

/* ---- go test (plain and -v) ----------------------------------------------------- */

int testrun_parse_gotest(struct testrun *out, const char *text, size_t len)
{
	struct tr_lines it;
	const char *line;
	size_t n;
	jv index = jv_object();
	bool found = false;
	struct testcase *collecting = NULL;
	size_t collect_indent = 0;
	char *pkg_fail = NULL;

	tr_lines_init(&it, text, len);
	while (tr_next_line(&it, &line, &n)) {
		const char *s = line;
		size_t sn = n;
		tr_skip_ws(&s, &sn);
		size_t indent = (size_t)(s - line);
		const char *res[] = { "--- PASS: ", "--- FAIL: ", "--- SKIP: " };
		int which = -1;
		for (int k = 0; k < 3; k++)
			if (tr_prefix(s, sn, res[k]))
				which = k;
		if (which >= 0) {
			found = true;
			const char *name = s + 10;
			size_t nn = sn - 10;
			const char *paren = tr_find(name, nn, " (");
			if (paren)
				nn = (size_t)(paren - name);
			enum tc_status st = which == 0 ? TC_PASS : which == 1 ? TC_FAIL : TC_SKIP;
			struct testcase *c = lookup(out, &index, NULL, name, nn, st, true);
			if (c)
				c->status = st;
			collecting = st == TC_FAIL ? c : NULL;
			collect_indent = indent;
			continue;
		}
		if (tr_prefix(line, n, "ok  \t") || tr_prefix(line, n, "?   \t")) {
			found = true;
			collecting = NULL;
			continue;
		}
		if (tr_prefix(line, n, "FAIL\t")) {
			found = true;
			collecting = NULL;
			if (tr_find(line, n, "[build failed]") || tr_find(line, n, "[setup failed]")) {
				free(pkg_fail);
				pkg_fail = xstrndup(line + 5, n - 5);
			}
			continue;
		}
		if (tr_prefix(s, sn, "=== ") || (n == 4 && memcmp(line, "FAIL", 4) == 0) ||
		    (n == 4 && memcmp(line, "PASS", 4) == 0)) {
			collecting = NULL;
			continue;
		}
		if (collecting && indent > collect_indent) {
			testcase_append(&collecting->output, s, sn);
			take_location(collecting, s, sn);
		}
	}
	jv_free(index);
	if (!found) {
		free(pkg_fail);
		return 0;
	}
	/* -v prints a failure's messages before its result line: find them */
	for (size_t i = 0; i < out->ncases; i++) {
		struct testcase *c = &out->cases[i];
		if (c->status != TC_FAIL || c->output)
			continue;
		struct buf want = BUF_INIT;
		buf_addf(&want, "=== RUN   %s", c->name);
		const char *at = tr_find(text, len, want.buf);
		buf_release(&want);
		if (!at)
			continue;
		struct tr_lines it2;
		tr_lines_init(&it2, at, len - (size_t)(at - text));
		tr_next_line(&it2, &line, &n);
		while (tr_next_line(&it2, &line, &n)) {
			const char *s = line;
			size_t sn = n;
			tr_skip_ws(&s, &sn);
			if (tr_prefix(s, sn, "=== ") || tr_prefix(s, sn, "--- "))
				break;
			testcase_append(&c->output, s, sn);
			take_location(c, s, sn);
		}
	}
	drop_parents(out);
	testrun_count(out);
	if (pkg_fail)
		testrun_add_synthetic(out, pkg_fail, "the package did not build", NULL);
	free(pkg_fail);
	snprintf(out->format, sizeof out->format, "go");
	if (out->total == 0)
		snprintf(out->note, sizeof out->note, "go test without -v or -json names only failing tests");
	return 1;
}

/* ---- cargo test ---------------------------------------------------------------------- */

int testrun_parse_cargo(struct testrun *out, const char *text, size_t len)
{
	struct tr_lines it;
	const char *line;
	size_t n;
	jv index = jv_object();
	long sums[3] = { 0, 0, 0 };  /* passed failed ignored */
	bool found = false;
	struct testcase *section = NULL;

	tr_lines_init(&it, text, len);
	while (tr_next_line(&it, &line, &n)) {
		if (tr_prefix(line, n, "test result: ")) {
			const char *p = line + 13;
			size_t left = n - 13;
			const char *keys[] = { " passed", " failed", " ignored" };
			found = true;
			section = NULL;
			for (int k = 0; k < 3; k++) {
				const char *at = tr_find(p, left, keys[k]);
				if (!at)
					continue;
				const char *d = at;
				while (d > p && d[-1] >= '0' && d[-1] <= '9')
					d--;
				size_t dl = (size_t)(at - d);
				long v;
				if (tr_number(&d, &dl, &v))
					sums[k] += v;
			}
			continue;
		}
		if (tr_prefix(line, n, "test ") && n > 9) {
			const char *dots = tr_find(line, n, " ... ");
			if (dots) {
				const char *name = line + 5;
				size_t nn = (size_t)(dots - name);
				const char *st = dots + 5;
				/* libtest writes a test's mode after its name
				 * ("x - should panic", "x - compile fail"): the
				 * name is what --exact selects */
				static const char *const modes[] = { " - should panic", " - compile fail",
								     " - compile", NULL };
				for (int k = 0; modes[k]; k++) {
					size_t ml = strlen(modes[k]);
					if (nn > ml && !memcmp(name + nn - ml, modes[k], ml)) {
						nn -= ml;
						break;
					}
				}
				size_t stn = n - (size_t)(st - line);
				enum tc_status s = tr_prefix(st, stn, "ok") ? TC_PASS
						 : tr_prefix(st, stn, "FAILED") ? TC_FAIL
						 : tr_prefix(st, stn, "ignored") ? TC_SKIP : (enum tc_status)-1;
				if ((int)s >= 0) {
					struct testcase *c = lookup(out, &index, NULL, name, nn, s, true);
					if (c)
						c->status = s;
				}
				section = NULL;
				continue;
			}
		}
		if (tr_prefix(line, n, "---- ") && tr_find(line, n, " stdout ----")) {
			const char *name = line + 5;
			size_t nn = (size_t)(tr_find(line, n, " stdout ----") - name);
			section = lookup(out, &index, NULL, name, nn, TC_FAIL, false);
			continue;
		}
		if (n == 9 && memcmp(line, "failures:", 9) == 0) {
			section = NULL;
			continue;
		}
		if (section) {
			testcase_append(&section->output, line, n);
			const char *pan = tr_find(line, n, "panicked at ");
			if (pan && !section->file) {
				const char *f = pan + 12;
				size_t fl = n - (size_t)(f - line);
				const char *file;
				size_t flen;
				long ln;
				if (tr_file_line(f, fl, &file, &flen, &ln)) {
					testcase_set(&section->file, file, flen);
					section->line = ln;
				}
				/* the message is on the next line (Rust >= 1.73) or after a quote */
				const char *next = it.p;
				const char *nl = memchr(next, '\n', (size_t)(it.end - next));
				size_t ml = nl ? (size_t)(nl - next) : (size_t)(it.end - next);
				if (ml && !section->message)
					testcase_set(&section->message, next, ml);
			}
		}
	}
	jv_free(index);
	if (!found) {
		testrun_release(out);
		return 0;
	}
	out->passed = sums[0];
	out->failed = sums[1];
	out->skipped = sums[2];
	out->total = sums[0] + sums[1] + sums[2];
	snprintf(out->format, sizeof out->format, "cargo");
	return 1;
}

/* ---- pytest ------------------------------------------------------------------------------ */

/* "2 failed, 2 passed, 1 skipped, 1 xfailed, 1 error in 0.02s" (maybe
 * centred in '='); false when line is not one. */
static bool pytest_summary(const char *s, size_t n, long *counts /* failed passed skipped */)
{
	static const struct {
		const char *word;
		int slot;
	} words[] = {
		{ "failed", 0 }, { "passed", 1 }, { "skipped", 2 }, { "deselected", -1 }, { "xfailed", 2 },
		{ "xpassed", 1 }, { "warnings", -1 }, { "warning", -1 }, { "errors", 0 }, { "error", 0 },
		{ "rerun", -1 }, { "subtests passed", -1 }, { "subtests failed", -1 }, { "subtests skipped", -1 },
	};
	long c[3] = { 0, 0, 0 };

	while (n && *s == '=') {
		s++;
		n--;
	}
	while (n && s[n - 1] == '=')
		n--;
	tr_trim(&s, &n);
	const char *in = NULL;
	for (const char *p = s; (p = tr_find(p, n - (size_t)(p - s), " in ")) != NULL; p += 4)
		in = p;
	if (!in)
		return false;
	/* " in 0.02s" or " in 61.20s (0:01:01)" */
	const char *t = in + 4;
	size_t tl = n - (size_t)(t - s);
	long sec;
	if (!tr_number(&t, &tl, &sec))
		return false;
	size_t head = (size_t)(in - s);
	if (head >= 12 && memcmp(s, "no tests ran", 12) == 0) {
		counts[0] = counts[1] = counts[2] = 0;
		return true;
	}
	const char *p = s;
	size_t left = head;
	bool any = false;
	while (left) {
		long v;
		if (!tr_number(&p, &left, &v) || !left || *p != ' ')
			return false;
		p++;
		left--;
		const char *comma = tr_find(p, left, ", ");
		size_t wl = comma ? (size_t)(comma - p) : left;
		bool known = false;
		for (size_t k = 0; k < sizeof words / sizeof words[0]; k++) {
			if (strlen(words[k].word) == wl && memcmp(p, words[k].word, wl) == 0) {
				known = true;
				if (words[k].slot >= 0)
					c[words[k].slot] += v;
			}
		}
		/* an unknown stat from a plugin is fine, a sentence is not */
		if (!known && (wl == 0 || wl > 24))
			return false;
		any = true;
		p += wl;
		left -= wl;
		if (comma) {
			p += 2;
			left -= 2;
		}
	}
	if (!any)
		return false;
	memcpy(counts, c, sizeof c);
	return true;
}

/* The last part of a node id as pytest's section headers name it:
 * "tests/t.py::TestA::test_b[1]" -> "TestA.test_b[1]". */
static void header_name(struct buf *b, const char *id)
{
	const char *p = strstr(id, "::");
	if (!p) {
		buf_adds(b, id);
		return;
	}
	for (p += 2; *p; p++) {
		if (p[0] == ':' && p[1] == ':') {
			buf_addch(b, '.');
			p++;
		} else {
			buf_addch(b, *p);
		}
	}
}

/* A collection error's section ("ERROR collecting PATH": a test module
 * that does not import, a syntax error, a conftest.py that raises): its
 * place is in the project, not in importlib or pytest, which its traceback
 * goes through first; what its last "E" line says is its message (the
 * short summary names the module alone).  collected is what the header
 * names (a path, or "test session"). */
struct collect_error {
	const char *collected;
	size_t cn;
	const char *last_e;     /* the section's last "E   ..." line, after the E */
	size_t en;
};

/* Whether path (pn bytes) is collected, or ends in "/" and it (pytest's
 * SyntaxError names the module by its absolute path). */
static bool is_collected(const struct collect_error *ce, const char *path, size_t pn)
{
	if (pn < ce->cn || memcmp(path + pn - ce->cn, ce->collected, ce->cn) != 0)
		return false;
	return pn == ce->cn || path[pn - ce->cn - 1] == '/';
}

/* One line of a collection error's section (the case's output has it). */
static void collect_line(struct testcase *c, struct collect_error *ce, const char *line, size_t n)
{
	const char *file;
	size_t flen;
	long ln;

	/* a frame "tests/test_bad.py:1: in <module>" in the project (not
	 * "/usr/lib/…" or "<frozen importlib._bootstrap>:…"): the newest wins */
	if (n && line[0] != ' ' && line[0] != '/' && line[0] != '<' && tr_file_line(line, n, &file, &flen, &ln) &&
	    file == line) {
		testcase_set(&c->file, file, flen);
		c->line = ln;
		return;
	}
	if (n < 2 || line[0] != 'E' || line[1] != ' ')
		return;
	const char *e = line + 1;
	size_t en = n - 1;

	tr_trim(&e, &en);
	if (!en)
		return;
	ce->last_e = e;
	ce->en = en;
	/* a SyntaxError's 'File "/abs/tests/test_bad.py", line 4' */
	const char *at = tr_find(e, en, "\", line ");

	if (tr_prefix(e, en, "File \"") && at && is_collected(ce, e + 6, (size_t)(at - e - 6))) {
		const char *num = at + 8;
		size_t left = en - (size_t)(num - e);

		if (tr_number(&num, &left, &ln)) {
			testcase_set(&c->file, ce->collected, ce->cn);
			c->line = ln;
		}
	}
}

/* The end of a collection error's section: its message from its last "E"
 * line, and its file the module it collected when no frame named one. */
static void collect_end(struct testcase *c, struct collect_error *ce)
{
	if (!c || !ce->collected)
		return;
	if (!c->message && ce->last_e)
		testcase_set(&c->message, ce->last_e, ce->en);
	if (!c->file && ce->cn > 3 && !memcmp(ce->collected + ce->cn - 3, ".py", 3))
		testcase_set(&c->file, ce->collected, ce->cn);
}

int testrun_parse_pytest(struct testrun *out, const char *text, size_t len)
{
	struct tr_lines it;
	const char *line;
	size_t n;
	long counts[3];
	bool found = false;

	tr_lines_init(&it, text, len);
	while (tr_next_line(&it, &line, &n)) {
		/* one summary a session: a command that runs pytest twice
		 * has both counted (before: the last one alone) */
		if (pytest_summary(line, n, counts)) {
			found = true;
			out->failed += counts[0];
			out->passed += counts[1];
			out->skipped += counts[2];
		}
	}
	if (!found)
		return 0;
	long failed = out->failed, passed = out->passed, skipped = out->skipped;
	/* the short summary: FAILED id - message / ERROR id - message */
	tr_lines_init(&it, text, len);
	while (tr_next_line(&it, &line, &n)) {
		bool err = tr_prefix(line, n, "ERROR ");
		if (!err && !tr_prefix(line, n, "FAILED "))
			continue;
		const char *id = line + (err ? 6 : 7);
		size_t idn = n - (err ? 6 : 7);
		const char *dash = tr_find(id, idn, " - ");
		size_t nn = dash ? (size_t)(dash - id) : idn;
		/* "ERROR  - RuntimeError: …": the session's own collection
		 * failed (a conftest.py below the first one raised), named as
		 * its section is, "ERROR collecting test session" */
		if (err && nn <= 1 && dash) {
			id = "test session";
			nn = 12;
		} else if (!tr_find(id, nn, "::") && !tr_find(id, nn, ".py")) {
			continue;
		}
		char *nm = xstrndup(id, nn);
		bool dup = testrun_find(out, nm) != NULL;
		free(nm);
		if (dup || nn == 0)
			continue;
		struct testcase *c = testrun_add(out, id, nn, TC_FAIL);
		if (!c)
			break;
		c->error = err;
		if (dash)
			testcase_set(&c->message, dash + 3, idn - (size_t)(dash + 3 - (line + (err ? 6 : 7))));
		const char *sep = tr_find(id, nn, "::");
		if (sep)
			testcase_set(&c->file, id, (size_t)(sep - id));
	}
	/* the FAILURES / ERRORS sections: "____ name ____" then the traceback */
	struct testcase *section = NULL;
	struct collect_error ce = { 0 };
	tr_lines_init(&it, text, len);
	while (tr_next_line(&it, &line, &n)) {
		if (n > 8 && line[0] == '_' && line[1] == '_' && line[n - 1] == '_') {
			const char *h = line;
			size_t hn = n;
			while (hn && *h == '_') {
				h++;
				hn--;
			}
			while (hn && h[hn - 1] == '_')
				hn--;
			tr_trim(&h, &hn);
			if (tr_prefix(h, hn, "ERROR at setup of ") || tr_prefix(h, hn, "ERROR at teardown of ")) {
				const char *of = tr_find(h, hn, " of ");
				hn -= (size_t)(of + 4 - h);
				h = of + 4;
			}
			collect_end(section, &ce);
			ce = (struct collect_error){ 0 };
			bool collecting = tr_prefix(h, hn, "ERROR collecting ") && hn > 17;
			if (collecting) {
				h += 17;
				hn -= 17;
				ce.collected = h;
				ce.cn = hn;
			}
			section = NULL;
			for (size_t i = 0; i < out->ncases; i++) {
				struct buf want = BUF_INIT;
				header_name(&want, out->cases[i].name);
				bool match = want.len == hn && memcmp(want.buf, h, hn) == 0 && !out->cases[i].output;
				buf_release(&want);
				if (match) {
					section = &out->cases[i];
					break;
				}
			}
			/* (a run without the short summary, -rN: the section is
			 * all there is of it) */
			if (!section && collecting) {
				char *nm = xstrndup(h, hn);
				bool named = testrun_find(out, nm) != NULL;
				free(nm);
				if (!named && (section = testrun_add(out, h, hn, TC_FAIL)) != NULL)
					section->error = true;
			}
			if (!section)
				ce = (struct collect_error){ 0 };
			continue;
		}
		if (n && line[0] == '=') {
			collect_end(section, &ce);
			ce = (struct collect_error){ 0 };
			section = NULL;
			continue;
		}
		if (section && ce.collected) {
			testcase_append(&section->output, line, n);
			collect_line(section, &ce, line, n);
		} else if (section) {
			testcase_append(&section->output, line, n);
			const char *file;
			size_t flen;
			long ln;
			if (n && line[0] != ' ' && tr_file_line(line, n, &file, &flen, &ln) && file == line) {
				testcase_set(&section->file, file, flen);
				section->line = ln;
			}
		}
	}
	collect_end(section, &ce);
	out->failed = failed;
	out->passed = passed;
	out->skipped = skipped;
	out->total = failed + passed + skipped;
	snprintf(out->format, sizeof out->format, "pytest");
	return 1;
}

/* ---- ctest --------------------------------------------------------------------------------- */

int testrun_parse_ctest(struct testrun *out, const char *text, size_t len)
{
	struct tr_lines it;
	const char *line;
	size_t n;
	long total = -1, failed = 0;
	bool none = false;
	struct testcase *collecting = NULL;

	tr_lines_init(&it, text, len);
	while (tr_next_line(&it, &line, &n)) {
		const char *s = line;
		size_t sn = n;
		tr_skip_ws(&s, &sn);
		/* a project with no test (ctest prints no summary then, and
		 * exits 0): 0 tests, not the exit status's "1 passed" */
		if (tr_prefix(s, sn, "No tests were found!!!")) {
			none = true;
			collecting = NULL;
			continue;
		}
		/* "50% tests passed, 2 tests failed out of 4" */
		const char *tp = tr_find(s, sn, "% tests passed, ");
		if (tp) {
			const char *p = tp + 16;
			size_t left = sn - (size_t)(p - s);
			long f, t;
			if (tr_number(&p, &left, &f)) {
				const char *o = tr_find(p, left, "out of ");
				if (o) {
					p = o + 7;
					left = sn - (size_t)(p - s);
					if (tr_number(&p, &left, &t)) {
						failed = f;
						total = t;
					}
				}
			}
			collecting = NULL;
			continue;
		}
		/* "2/4 Test #2: fail_t .......***Failed    0.00 sec" */
		const char *test = tr_find(s, sn, " Test ");
		const char *hash = test ? tr_find(test, sn - (size_t)(test - s), "#") : NULL;
		if (test && hash && s[0] >= '0' && s[0] <= '9' && tr_find(s, sn, " sec")) {
			const char *colon = tr_find(hash, sn - (size_t)(hash - s), ": ");
			if (!colon)
				continue;
			const char *name = colon + 2;
			size_t left = sn - (size_t)(name - s), nn = 0;
			/* the name runs to ctest's dots (it may hold spaces:
			 * add_test(NAME "parse fails" ...)), else to a space */
			const char *dots = tr_find(name, left, " ..");
			if (dots) {
				nn = (size_t)(dots - name);
			} else {
				while (nn < left && name[nn] != ' ')
					nn++;
			}
			const char *rest = name + nn;
			size_t rl = sn - (size_t)(rest - s);
			enum tc_status st = TC_FAIL;
			if (tr_find(rest, rl, "Passed"))
				st = TC_PASS;
			else if (tr_find(rest, rl, "***Skipped") || tr_find(rest, rl, "***Not Run (Disabled)"))
				st = TC_SKIP;
			struct testcase *c = testrun_add(out, name, nn, st);
			collecting = NULL;
			if (c && st == TC_FAIL) {
				const char *stars = tr_find(rest, rl, "***");
				if (stars) {
					const char *m = stars + 3;
					size_t ml = rl - (size_t)(m - rest);
					const char *sec = tr_find(m, ml, "  ");
					testcase_set(&c->message, m, sec ? (size_t)(sec - m) : ml);
				}
				collecting = c;
			}
			continue;
		}
		if (tr_prefix(s, sn, "Start ") || tr_prefix(s, sn, "Total Test time") ||
		    tr_prefix(s, sn, "The following tests")) {
			collecting = NULL;
			continue;
		}
		if (collecting && sn)
			testcase_append(&collecting->output, line, n);
	}
	if (total < 0 && !none) {
		testrun_release(out);
		return 0;
	}
	if (total < 0)
		total = 0;
	testrun_count(out);
	long skipped = out->skipped;
	out->total = total;
	out->failed = failed;
	out->skipped = skipped;
	out->passed = total - failed - skipped < 0 ? 0 : total - failed - skipped;
	snprintf(out->format, sizeof out->format, "ctest");
	return 1;
}

/* ---- node --test-reporter=spec ------------------------------------------------------------- */

int testrun_parse_node_spec(struct testrun *out, const char *text, size_t len)
{
	static const char *const keys[] = { "ℹ tests ", "ℹ pass ", "ℹ fail ", "ℹ cancelled ", "ℹ skipped ",
					    "ℹ todo " };
	long v[6] = { 0, 0, 0, 0, 0, 0 };
	bool have[6] = { false };
	struct tr_lines it;
	const char *line;
	size_t n;
	struct testcase *collecting = NULL;
	bool in_failing_list = false;

	/* the suites open ("▶ name" at an indent): the "✖ name" that closes
	 * one is the suite's, not a failing test of its own */
	struct { const char *name; size_t len, indent; } suites[32];
	size_t nsuites = 0;
	long closed = 0, suites_n = 0;   /* the "▶" closed; "ℹ suites N" */
	bool have_suites = false;

	tr_lines_init(&it, text, len);
	while (tr_next_line(&it, &line, &n)) {
		const char *s = line;
		size_t sn = n;
		tr_skip_ws(&s, &sn);
		size_t indent = n - sn;
		if (tr_prefix(s, sn, "▶ ") && nsuites < sizeof suites / sizeof suites[0]) {
			suites[nsuites].name = s + strlen("▶ ");
			suites[nsuites].len = sn - strlen("▶ ");
			suites[nsuites++].indent = indent;
			collecting = NULL;
			continue;
		}
		for (int k = 0; k < 6; k++) {
			if (tr_prefix(s, sn, keys[k])) {
				const char *p = s + strlen(keys[k]);
				size_t left = sn - strlen(keys[k]);
				have[k] = tr_number(&p, &left, &v[k]);
			}
		}
		if (tr_prefix(s, sn, "✖ failing tests:")) {
			in_failing_list = true;
			collecting = NULL;
			continue;
		}
		if (tr_prefix(s, sn, "✖ ") && !in_failing_list) {
			const char *name = s + strlen("✖ ");
			size_t nn = sn - strlen("✖ ");
			const char *paren = NULL;
			for (const char *p = name; (p = tr_find(p, nn - (size_t)(p - name), " (")) != NULL; p += 2)
				paren = p;
			if (paren)
				nn = (size_t)(paren - name);
			if (nsuites && suites[nsuites - 1].indent == indent && suites[nsuites - 1].len == nn &&
			    !memcmp(suites[nsuites - 1].name, name, nn)) {
				nsuites--;
				closed++;
				collecting = NULL;
				continue;
			}
			bool todo = tr_find(s, sn, "# TODO") != NULL;
			collecting = testrun_add(out, name, nn, todo ? TC_SKIP : TC_FAIL);
			continue;
		}
		if (tr_prefix(s, sn, "✔ ") || tr_prefix(s, sn, "﹣ ") || tr_prefix(s, sn, "ℹ ")) {
			/* (a suite that passed closes too) */
			if (tr_prefix(s, sn, "✔ ") && nsuites && suites[nsuites - 1].indent == indent &&
			    sn - strlen("✔ ") >= suites[nsuites - 1].len &&
			    !memcmp(suites[nsuites - 1].name, s + strlen("✔ "), suites[nsuites - 1].len)) {
				nsuites--;
				closed++;
			}
			if (tr_prefix(s, sn, "ℹ suites ")) {
				const char *p = s + strlen("ℹ suites ");
				size_t left = sn - strlen("ℹ suites ");
				long v0;
				if (tr_number(&p, &left, &v0)) {
					suites_n += v0;
					have_suites = true;
				}
			}
			collecting = NULL;
			continue;
		}
		if (collecting && collecting->status == TC_FAIL && sn) {
			testcase_append(&collecting->output, s, sn);
			if (!collecting->message)
				testcase_set(&collecting->message, s, sn);
			const char *at = tr_find(s, sn, "(");
			const char *file;
			size_t flen;
			long ln;
			if (!collecting->file && at && tr_prefix(s, sn, "at ") &&
			    tr_file_line(at + 1, sn - (size_t)(at + 1 - s), &file, &flen, &ln) &&
			    !tr_prefix(file, flen, "node:")) {
				testcase_set(&collecting->file, file, flen);
				collecting->line = ln;
			}
		}
	}
	if (!have[0] || !have[1] || !have[2]) {
		testrun_release(out);
		return 0;
	}
	/* Node counts a test() with subtests as a test of its own ("▶
	 * parent" ... "✖ parent"), a describe() suite not ("ℹ suites"); the
	 * leaves are counted, as the failing ones are listed (before: "2 of 4
	 * failed (1 real, 0 environment)" for one failing leaf of three).  The
	 * parents that failed are node's failures less the failing leaves. */
	long parents = closed - (have_suites ? suites_n : 0), leaves_failed = 0;
	for (size_t i = 0; i < out->ncases; i++)
		leaves_failed += out->cases[i].status == TC_FAIL;
	long parents_failed = v[2] + v[3] - leaves_failed;
	if (parents_failed > parents)
		parents_failed = parents;
	if (parents < 0 || parents > v[0] || parents_failed < 0 || parents - parents_failed > v[1])
		parents = parents_failed = 0;   /* not node's counting (a cut output) */
	out->total = v[0] - parents;
	out->passed = v[1] - (parents - parents_failed);
	out->failed = v[2] + v[3] - parents_failed;
	out->skipped = v[4] + v[5];
	snprintf(out->format, sizeof out->format, "node");
	return 1;
}

/* ---- bats (pretty formatter) ---------------------------------------------------------------- */

int testrun_parse_bats_pretty(struct testrun *out, const char *text, size_t len)
{
	struct tr_lines it;
	const char *line;
	size_t n;
	long tests = -1, failures = 0, skipped = 0;
	struct testcase *collecting = NULL;

	tr_lines_init(&it, text, len);
	while (tr_next_line(&it, &line, &n)) {
		const char *s = line;
		size_t sn = n;
		tr_skip_ws(&s, &sn);
		long t;
		const char *p = s;
		size_t left = sn;
		if (tr_number(&p, &left, &t) && (tr_prefix(p, left, " tests, ") || tr_prefix(p, left, " test, "))) {
			const char *q = tr_find(p, left, ", ") + 2;
			size_t ql = sn - (size_t)(q - s);
			long f;
			if (tr_number(&q, &ql, &f) && tr_prefix(q, ql, " failure")) {
				tests = t;
				failures = f;
				skipped = 0;
				const char *sk = tr_find(q, ql, ", ");
				if (sk) {
					sk += 2;
					size_t skl = sn - (size_t)(sk - s);
					long k;
					if (tr_number(&sk, &skl, &k) && tr_prefix(sk, skl, " skipped"))
						skipped = k;
				}
			}
			collecting = NULL;
			continue;
		}
		/* the pretty formatter redraws its lines: the mark may come late */
		const char *mark = tr_find(s, sn, "✗ ");
		if (mark) {
			const char *nm = mark + strlen("✗ ");
			collecting = testrun_add(out, nm, sn - (size_t)(nm - s), TC_FAIL);
			continue;
		}
		if (tr_find(s, sn, "✓ ") || tr_prefix(s, sn, "- ") || tr_find(s, sn, " - ")) {
			collecting = NULL;
			continue;
		}
		if (collecting && sn) {
			testcase_append(&collecting->output, s, sn);
			const char *m = tr_find(s, sn, "(in test file ");
			if (m && !collecting->file) {
				const char *f = m + 14;
				const char *comma = tr_find(f, sn - (size_t)(f - s), ", line ");
				if (comma) {
					testcase_set(&collecting->file, f, (size_t)(comma - f));
					const char *q = comma + 7;
					size_t ql = sn - (size_t)(q - s);
					long ln;
					if (tr_number(&q, &ql, &ln))
						collecting->line = ln;
				}
			} else if (!collecting->message) {
				testcase_set(&collecting->message, s, sn);
			}
		}
	}
	if (tests < 0) {
		testrun_release(out);
		return 0;
	}
	out->total = tests;
	out->failed = failures;
	out->skipped = skipped;
	out->passed = tests - failures - skipped < 0 ? 0 : tests - failures - skipped;
	snprintf(out->format, sizeof out->format, "bats");
	return 1;
}
