/* human.c - text for a person beside the JSON lines; see human.h. */
#include "app/human.h"
#include "app/term.h"

#include "core/buf.h"
#include "core/json.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINE_MAX_BYTES 240      /* a line of test output shown, at most */

#define SGR_RESET "\033[m"
#define SGR_BOLD "\033[1m"

bool human_colour(FILE *f)
{
	return term_color(fileno(f));
}

static void sgr(FILE *f, bool colour, const char *code)
{
	if (colour)
		fputs(code, f);
}

/*
 * At most max bytes of s[0..n) on f, each control character (C0, DEL, and
 * C1 as UTF-8 encodes it: C2 80..9F) a space, so no escape sequence from a
 * linter, a test or a model reaches the terminal.  Cut on a UTF-8 boundary.
 */
static void put_clean(FILE *f, const char *s, size_t n, size_t max)
{
	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 && (unsigned char)s[i + 1] <= 0x9F) {
			fputc(' ', f);
			i++;
		} else {
			fputc(c < 0x20 || c == 0x7F ? ' ' : c, f);
		}
	}
}

/* s on one line: its lines joined by spaces, surrounding blanks dropped. */
static void put_one_line(FILE *f, const char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	put_clean(f, s, n, n);
}

static const char *severity_sgr(const char *sev)
{
	if (!strcmp(sev, "critical"))
		return "\033[1;31m";
	if (!strcmp(sev, "error"))
		return "\033[31m";
	if (!strcmp(sev, "warning"))
		return "\033[35m";
	return "\033[36m";
}

/* "file:line:" (bold), "file:" without a line, "prog:" without a file. */
static void location(FILE *f, const char *prog, jv x, bool colour)
{
	const char *file = json_get_str(x, "file");
	double line = json_get_num(x, "line", 0);

	sgr(f, colour, SGR_BOLD);
	if (file && *file) {
		char *quoted = buf_path_quoted(file);   /* (as git shows a name) */

		put_one_line(f, quoted);
		free(quoted);
		if (line >= 1)
			fprintf(f, ":%.0f", line);
	} else {
		fputs(prog, f);
	}
	fputc(':', f);
	sgr(f, colour, SGR_RESET);
}

static void finding_line(FILE *f, const char *prog, jv x, bool colour)
{
	const char *sev = json_get_str(x, "severity") ? json_get_str(x, "severity") : "info";
	const char *msg = json_get_str(x, "message"), *rule = json_get_str(x, "rule");

	location(f, prog, x, colour);
	fputc(' ', f);
	sgr(f, colour, severity_sgr(sev));
	put_one_line(f, sev);
	sgr(f, colour, SGR_RESET);
	fputs(": ", f);
	put_one_line(f, msg ? msg : "");
	if (rule && *rule) {
		fputs(" [", f);
		put_one_line(f, rule);
		fputc(']', f);
	}
	fputc('\n', f);
}

void human_findings(FILE *f, const char *prog, jv findings, bool colour)
{
	if (jv_get_kind(findings) != JV_KIND_ARRAY)
		return;
	jv_array_foreach(findings, i, x) {
		(void)i;
		if (jv_get_kind(x) == JV_KIND_OBJECT)
			finding_line(f, prog, x, colour);
		jv_free(x);
	}
}

void human_decision(FILE *f, const char *prog, const char *decision, const char *text, bool colour)
{
	const char *c = !strcmp(decision, "approve") ? "\033[32m" : !strcmp(decision, "request_changes")
			? "\033[31m" : "\033[33m";

	fprintf(f, "%s: ", prog);
	sgr(f, colour, c);
	fputs(decision, f);
	sgr(f, colour, SGR_RESET);
	fputs(": ", f);
	put_one_line(f, text);
	fputc('\n', f);
}

/* s[0..n) without its leading and trailing blanks. */
static void trim_blanks(const char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t' || **s == '\r'))
		(*s)++, (*n)--;
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t' || (*s)[*n - 1] == '\r'))
		(*n)--;
}

/* Whether text has a line that, without its blanks, is s[0..n). */
static bool has_line(const char *text, const char *s, size_t n)
{
	for (const char *p = text; p && *p;) {
		size_t len = strcspn(p, "\n");
		const char *l = p;

		trim_blanks(&l, &len);
		if (len == n && memcmp(l, s, n) == 0)
			return true;
		p += strcspn(p, "\n");
		p += *p == '\n';
	}
	return false;
}

/* The keys of a TAP YAML diagnostic block (node --test's, tape's) that
 * tell a person nothing the failure's line does not: how long, where (the
 * location line says it), the kind of failure, the error's text again
 * (the message), its code and class, the stack. */
static const char *const yaml_noise[] = {
	"duration_ms", "location", "failureType", "error", "message", "code", "name", "stack", "at",
	"severity", "type", "datetime", NULL
};

/* The key of a line "KEY: …" at column 0 (letters, digits, '_'), its length
 * in *klen; false when the line is not one. */
static bool yaml_key_line(const char *p, size_t n, size_t *klen)
{
	size_t k = 0;

	while (k < n && (isalnum((unsigned char)p[k]) || p[k] == '_'))
		k++;
	*klen = k;
	return k > 0 && k < n && p[k] == ':' && (k + 1 == n || p[k + 1] == ' ');
}

/* Whether line p[0..n) is a yaml_noise key's; *block: its value is a
 * block (|, |-, >) or on the lines below, which go with it. */
static bool yaml_noise_line(const char *p, size_t n, bool *block)
{
	size_t k;

	if (!yaml_key_line(p, n, &k))
		return false;
	for (size_t i = 0; yaml_noise[i]; i++) {
		if (strlen(yaml_noise[i]) == k && memcmp(p, yaml_noise[i], k) == 0) {
			const char *v = p + k + 1;
			size_t vn = n - k - 1;

			trim_blanks(&v, &vn);
			*block = vn == 0 || v[0] == '|' || v[0] == '>';
			return true;
		}
	}
	return false;
}

/*
 * The non-blank lines of text, indented, until *left lines have been
 * shown.  A line of `shown` (the message, already shown) is left out, and
 * when text is a TAP YAML diagnostic block (diag: a TAP runner's output,
 * and its first line "KEY: …") the lines of yaml_noise keys with theirs
 * below them: what is left is what a person reads (expected, actual,
 * operator; before: duration_ms, location, failureType and "error: |-"
 * filled the lines, hunt69 #2).  Only then: "error: could not find
 * `Cargo.toml`" is a reason, the only one a failed command may give.
 */
static void show_lines(FILE *f, const char *text, const char *shown, bool diag, int *left)
{
	size_t k0, first = text ? strcspn(text, "\n") : 0;
	bool yaml = diag && text && yaml_key_line(text, first, &k0), in_block = false;

	for (const char *p = text; p && *p && *left > 0;) {
		size_t n = strcspn(p, "\n"), len = n;
		const char *l = p;
		bool block;

		if (in_block && (n == 0 || p[0] == ' ' || p[0] == '\t')) {
			p += n + (p[n] == '\n');
			continue;	/* (a block of a noise key, its blank lines too) */
		}
		in_block = false;
		trim_blanks(&l, &len);
		if (yaml && yaml_noise_line(p, n, &block)) {
			in_block = block;
		} else if (len > 0 && !(shown && has_line(shown, l, len))) {
			fputs("    ", f);
			put_clean(f, l, len, LINE_MAX_BYTES);
			fputc('\n', f);
			(*left)--;
		}
		p += n + (p[n] == '\n');
	}
}

/* The next line of *p to show: not blank, not one of `shown`'s; its text
 * without blanks in *l, *len.  False at the end. */
static bool next_shown(const char **p, const char *shown, const char **l, size_t *len)
{
	while (*p && **p) {
		size_t n = strcspn(*p, "\n");

		*l = *p;
		*len = n;
		*p += n + ((*p)[n] == '\n');
		trim_blanks(l, len);
		if (*len > 0 && !(shown && has_line(shown, *l, *len)))
			return true;
	}
	return false;
}

/*
 * The last *left lines of text that next_shown() gives, indented, after a
 * line saying how many came before them: the end of a whole command's
 * output is where it says what went wrong (the assertion, make's "***
 * [check] Error 2", after the compiler's lines).
 */
static void show_last_lines(FILE *f, const char *text, const char *shown, int *left)
{
	const char *p = text, *l;
	size_t len;
	long lines = 0, skip;

	while (next_shown(&p, shown, &l, &len))
		lines++;
	skip = lines > *left ? lines - *left : 0;
	if (skip > 0)
		fprintf(f, "    [… %ld line%s before]\n", skip, skip == 1 ? "" : "s");
	for (p = text; *left > 0 && next_shown(&p, shown, &l, &len);) {
		if (skip > 0) {
			skip--;
			continue;
		}
		fputs("    ", f);
		put_clean(f, l, len, LINE_MAX_BYTES);
		fputc('\n', f);
		(*left)--;
	}
}

/* Whether failure t stands for the whole test command (forge-test's own:
 * its exit status, its timeout, failures the output counted but did not
 * name), so that its output is the command's, not one test's. */
static bool whole_command(jv t, const char *command)
{
	static const char *const names[] = { "exit status", "timeout", "unnamed failures" };
	const char *name = json_get_str(t, "test");

	if (!name || json_get_str(t, "file"))
		return false;
	if (command && strcmp(name, command) == 0)
		return true;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

/* Whether a runner of this format (the state's tests.format) writes TAP
 * YAML diagnostic blocks into a failure's output. */
static bool yaml_diagnostics(const char *format)
{
	return format && (strcmp(format, "tap") == 0 || strcmp(format, "node") == 0);
}

static void test_line(FILE *f, const char *prog, jv t, const char *command, const char *format, bool colour)
{
	const char *name = json_get_str(t, "test"), *class = json_get_str(t, "classification");
	bool flaky = class && !strcmp(class, "flaky");

	location(f, prog, t, colour);
	fputc(' ', f);
	sgr(f, colour, flaky ? "\033[33m" : "\033[1;31m");
	fputs(flaky ? "flaky" : "FAIL", f);
	sgr(f, colour, SGR_RESET);
	fputc(' ', f);
	put_one_line(f, name ? name : "?");
	if (flaky) {
		fputs(" (failed, then passed on rerun)\n", f);
		return;
	}
	fprintf(f, " (%s)\n", class ? class : "real");

	/* the message's lines (before: its first only: node's "Expected
	 * values to be strictly equal:" without the values), then the
	 * output's that are not the message's */
	const char *msg = json_get_str(t, "message"), *out = json_get_str(t, "output");
	int left = HUMAN_TEST_LINES;

	show_lines(f, msg, NULL, false, &left);
	if (whole_command(t, command))
		show_last_lines(f, out, msg, &left);
	else
		show_lines(f, out, msg, yaml_diagnostics(format), &left);
}

void human_tests(FILE *f, const char *prog, jv tests, bool colour)
{
	jv failures, sum;

	if (jv_get_kind(tests) != JV_KIND_OBJECT || json_has(tests, "not_run"))
		return;
	failures = json_get(tests, "failures");
	sum = json_get(tests, "summary");
	if (jv_get_kind(failures) == JV_KIND_ARRAY) {
		jv_array_foreach(failures, i, t) {
			(void)i;
			if (jv_get_kind(t) == JV_KIND_OBJECT)
				test_line(f, prog, t, json_get_str(tests, "command"), json_get_str(tests, "format"),
					  colour);
			jv_free(t);
		}
	}
	/* the failures past the ones the state lists: say so, and where
	 * they all are (the note) */
	if (json_get_num(tests, "failures_omitted", 0) > 0 && json_get_str(tests, "note")) {
		fprintf(f, "%s: ", prog);
		put_one_line(f, json_get_str(tests, "note"));
		fputc('\n', f);
	}
	double passed = json_get_num(sum, "passed", 0), failed = json_get_num(sum, "failed", 0);
	fprintf(f, "%s: ", prog);
	sgr(f, colour && passed > 0, "\033[32m");
	fprintf(f, "%.0f passed", passed);
	sgr(f, colour && passed > 0, SGR_RESET);
	fputs(", ", f);
	sgr(f, colour && failed > 0, "\033[1;31m");
	fprintf(f, "%.0f failed", failed);
	sgr(f, colour && failed > 0, SGR_RESET);
	fprintf(f, ", %.0f skipped, %.0f flaky", json_get_num(sum, "skipped", 0), json_get_num(sum, "flaky", 0));
	if (json_get_str(tests, "command")) {
		fputs(" (", f);
		put_one_line(f, json_get_str(tests, "command"));
		fputc(')', f);
	}
	fputc('\n', f);
	jv_free(failures);
	jv_free(sum);
}

void human_validation(FILE *f, const char *prog, jv validation, bool colour)
{
	const char *cmd = json_get_str(validation, "command"), *out = json_get_str(validation, "output");
	jv steps, last, status;
	int left = HUMAN_TEST_LINES, n;

	if (jv_get_kind(validation) != JV_KIND_OBJECT)
		return;
	fprintf(f, "%s: ", prog);
	sgr(f, colour, "\033[1;31m");
	fputs("not validated", f);
	sgr(f, colour, SGR_RESET);
	if (!cmd) {	/* (nothing to validate with: the output says so) */
		fputs(": ", f);
		put_one_line(f, out ? out : "no build or test command");
		fputc('\n', f);
		return;
	}
	steps = json_get(validation, "steps");
	n = jv_get_kind(steps) == JV_KIND_ARRAY ? jv_array_length(jv_copy(steps)) : 0;
	last = n > 0 ? jv_array_get(jv_copy(steps), n - 1) : jv_null();	/* the step that decided */
	status = json_get(validation, "exit_status");
	fputs(": `", f);
	put_one_line(f, cmd);
	if (json_get_bool(last, "timed_out", false))
		fputs("` timed out\n", f);
	else if (jv_get_kind(status) == JV_KIND_NUMBER)
		fprintf(f, "` exited with status %.0f\n", jv_number_value(status));
	else
		fputs("` could not run\n", f);
	show_last_lines(f, out ? out : "", NULL, &left);
	jv_free(status);
	jv_free(last);
	jv_free(steps);
}

/* ---- a plan ------------------------------------------------------------- */

static void label(FILE *f, const char *name, bool colour)
{
	sgr(f, colour, SGR_BOLD);
	fprintf(f, "%-9s", name);
	sgr(f, colour, SGR_RESET);
	fputc(' ', f);
}

/* A string or a number of an estimate; "?" otherwise. */
static void put_scalar(FILE *f, jv v)
{
	if (jv_get_kind(v) == JV_KIND_STRING)
		put_one_line(f, jv_string_value(v));
	else if (jv_get_kind(v) == JV_KIND_NUMBER)
		fprintf(f, "%g", jv_number_value(v));
	else
		fputc('?', f);
	jv_free(v);
}

static void plan_risk(FILE *f, jv risk, bool colour)
{
	const char *level = json_get_str(risk, "level");
	jv reasons = json_get(risk, "reasons");

	label(f, "risk", colour);
	put_one_line(f, level ? level : "?");
	if (json_has(risk, "score"))
		fprintf(f, " (%.2f)", json_get_num(risk, "score", 0));
	fputc('\n', f);
	if (jv_get_kind(reasons) == JV_KIND_ARRAY) {
		jv_array_foreach(reasons, i, r) {
			(void)i;
			if (jv_get_kind(r) == JV_KIND_STRING) {
				fputs("          - ", f);
				put_one_line(f, jv_string_value(r));
				fputc('\n', f);
			}
			jv_free(r);
		}
	}
	jv_free(reasons);
}

/* "a, b, c" of an array of strings into b. */
static void join(struct buf *b, jv list)
{
	if (jv_get_kind(list) == JV_KIND_ARRAY) {
		jv_array_foreach(list, i, x) {
			if (jv_get_kind(x) == JV_KIND_STRING)
				buf_addf(b, "%s%s", b->len ? ", " : "", jv_string_value(x));
			jv_free(x);
			(void)i;
		}
	}
	jv_free(list);
}

static void plan_task(FILE *f, jv t, bool first, bool colour)
{
	const char *id = json_get_str(t, "id") ? json_get_str(t, "id") : "-";
	struct buf files = BUF_INIT, after = BUF_INIT;

	join(&files, json_get(t, "files"));
	join(&after, json_get(t, "depends_on"));
	if (first)
		label(f, "tasks", colour);
	else
		fputs("          ", f);
	put_one_line(f, id);
	fputs("  ", f);
	put_one_line(f, json_get_str(t, "title") ? json_get_str(t, "title") : "");
	if (after.len) {
		fputs(" (after ", f);
		put_one_line(f, after.buf);
		fputc(')', f);
	}
	fputc('\n', f);
	if (files.len) {
		fprintf(f, "%*sfiles: ", (int)(10 + strlen(id) + 2), "");
		put_one_line(f, files.buf);
		fputc('\n', f);
	}
	buf_release(&files);
	buf_release(&after);
}

void human_plan(FILE *f, jv plan, bool colour)
{
	jv risk, est, tasks;

	if (jv_get_kind(plan) != JV_KIND_OBJECT)
		return;
	risk = json_get(plan, "risk");
	est = json_get(plan, "estimates");
	tasks = json_get(plan, "tasks");
	label(f, "plan", colour);
	put_one_line(f, json_get_str(plan, "summary") ? json_get_str(plan, "summary") : "");
	fputc('\n', f);
	if (jv_get_kind(risk) == JV_KIND_OBJECT)
		plan_risk(f, risk, colour);
	if (jv_get_kind(est) == JV_KIND_OBJECT) {
		label(f, "estimate", colour);
		fputs("complexity ", f);
		put_scalar(f, json_get(est, "complexity"));
		fputs(", effort ", f);
		put_scalar(f, json_get(est, "effort"));
		fputc('\n', f);
	}
	if (jv_get_kind(tasks) == JV_KIND_ARRAY) {
		jv_array_foreach(tasks, i, t) {
			if (jv_get_kind(t) == JV_KIND_OBJECT)
				plan_task(f, t, i == 0, colour);
			jv_free(t);
		}
	}
	jv_free(risk);
	jv_free(est);
	jv_free(tasks);
}
