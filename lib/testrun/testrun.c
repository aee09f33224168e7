/* testrun.c - test results, format detection, reruns, environment
 * signatures; see testrun.h. */
#include "testrun/testrun.h"
#include "core/buf.h"
#include "core/forge.h"
#include "testrun/junit.h"
#include "testrun/tap.h"
#include "testrun/testrun_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void testrun_init(struct testrun *r)
{
	memset(r, 0, sizeof *r);
}

void testrun_release(struct testrun *r)
{
	for (size_t i = 0; i < r->ncases; i++) {
		struct testcase *c = &r->cases[i];
		free(c->name);
		free(c->suite);
		free(c->file);
		free(c->message);
		free(c->output);
	}
	free(r->cases);
	testrun_init(r);
}

static char *cut_dup(const char *s, size_t len, size_t max)
{
	static const char cut[] = "[…]";

	if (len <= max)
		return xstrndup(s, len);
	/* Cut on a UTF-8 boundary. */
	size_t n = max;
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	char *out = xmalloc(n + sizeof cut);
	memcpy(out, s, n);
	memcpy(out + n, cut, sizeof cut);
	return out;
}

/* s[0..len) into b with a NUL byte as the six characters \u0000, as
 * run_command's output shows one: the fields are C strings, and a NUL kept
 * would end the text there (before: "expected abc\0def" was the message
 * "expected abc", the rest of its line lost from the output too).  Stops
 * once b holds more than max bytes (the caller cuts). */
static void add_escaped(struct buf *b, const char *s, size_t len, size_t max)
{
	const char *end = s + len, *nul;

	while ((nul = memchr(s, '\0', (size_t)(end - s))) != NULL && b->len <= max) {
		buf_add(b, s, (size_t)(nul - s));
		buf_adds(b, "\\u0000");
		s = nul + 1;
	}
	if (b->len <= max)
		buf_add(b, s, (size_t)(end - s));
}

/* s[0..len) as a C string of at most max bytes and the cut mark, a NUL
 * byte escaped (add_escaped). */
static char *bounded_dup(const char *s, size_t len, size_t max)
{
	if (!memchr(s, '\0', len))
		return cut_dup(s, len, max);
	struct buf b = BUF_INIT;
	add_escaped(&b, s, len, max);
	char *out = cut_dup(b.buf, b.len, max);
	buf_release(&b);
	return out;
}

static struct testcase *add_case(struct testrun *r, const char *name, size_t len, enum tc_status st)
{
	if (r->ncases == r->alloc) {
		r->alloc = r->alloc ? r->alloc * 2 : 16;
		r->cases = xrealloc(r->cases, r->alloc * sizeof *r->cases);
	}
	struct testcase *c = &r->cases[r->ncases++];
	memset(c, 0, sizeof *c);
	while (len && (*name == ' ' || *name == '\t')) {
		name++;
		len--;
	}
	while (len && (name[len - 1] == ' ' || name[len - 1] == '\t'))
		len--;
	if (len == 0) {
		name = "(unnamed)";
		len = strlen(name);
	}
	c->name = bounded_dup(name, len, TESTRUN_MAX_NAME);
	c->status = st;
	c->time_ms = -1;
	return c;
}

struct testcase *testrun_add(struct testrun *r, const char *name, size_t len, enum tc_status st)
{
	/* the cap bounds memory, not the counts: a refused case still counts
	 * (before: it was lost, a failing one with it) */
	if (r->ncases >= TESTRUN_MAX_CASES) {
		r->truncated = true;
		r->dropped[st]++;
		return NULL;
	}
	return add_case(r, name, len, st);
}

struct testcase *testrun_add_whole(struct testrun *r, const char *name, enum tc_status st)
{
	struct testcase *c = add_case(r, name, strlen(name), st);

	c->synthetic = true;
	return c;
}

struct testcase *testrun_add_synthetic(struct testrun *r, const char *name, const char *message,
				       const char *output)
{
	/* never refused: the command's own verdict (exit status, timeout,
	 * plan) must not be lost to a run of many passing tests */
	struct testcase *c = testrun_add_whole(r, name, TC_FAIL);

	if (message)
		testcase_set(&c->message, message, strlen(message));
	if (output)
		testcase_set(&c->output, output, strlen(output));
	r->total++;
	r->failed++;
	return c;
}

void testcase_set(char **field, const char *s, size_t len)
{
	free(*field);
	*field = bounded_dup(s, len, TESTRUN_MAX_FIELD);
}

void testcase_append(char **field, const char *s, size_t len)
{
	size_t have = *field ? strlen(*field) : 0;

	if (have >= TESTRUN_MAX_FIELD)
		return;
	/* (a NUL escaped as in testcase_set, the cut after it) */
	struct buf esc = BUF_INIT;
	if (memchr(s, '\0', len)) {
		add_escaped(&esc, s, len, TESTRUN_MAX_FIELD - have);
		s = esc.buf;
		len = esc.len;
	}
	if (len > TESTRUN_MAX_FIELD - have)
		len = TESTRUN_MAX_FIELD - have;
	char *n = xrealloc(*field, have + len + 2);
	memcpy(n + have, s, len);
	n[have + len] = '\n';
	n[have + len + 1] = '\0';
	*field = n;
	buf_release(&esc);
}

void testrun_count(struct testrun *r)
{
	r->total = r->passed = r->failed = r->skipped = r->flaky = 0;
	for (size_t i = 0; i < r->ncases; i++) {
		const struct testcase *c = &r->cases[i];
		r->total++;
		if (c->status == TC_PASS)
			r->passed++;
		else if (c->status == TC_FAIL)
			r->failed++;
		else
			r->skipped++;
		if (c->flaky)
			r->flaky++;
	}
	r->passed += r->dropped[TC_PASS];
	r->failed += r->dropped[TC_FAIL];
	r->skipped += r->dropped[TC_SKIP];
	r->total += r->dropped[TC_PASS] + r->dropped[TC_FAIL] + r->dropped[TC_SKIP];
}

void testrun_relative_files(struct testrun *r, const char *root)
{
	size_t n = root ? strlen(root) : 0;

	while (n > 1 && root[n - 1] == '/')
		n--;
	if (n == 0 || root[0] != '/')
		return;
	for (size_t i = 0; i < r->ncases; i++) {
		char *f = r->cases[i].file;

		/* (root itself, or a name that only starts as root does --
		 * /repo-old/x for /repo -- is not inside it) */
		if (f && strncmp(f, root, n) == 0 && f[n] == '/' && f[n + 1])
			memmove(f, f + n + 1, strlen(f + n + 1) + 1);
	}
}

struct testcase *testrun_find(const struct testrun *r, const char *name)
{
	for (size_t i = 0; i < r->ncases; i++)
		if (strcmp(r->cases[i].name, name) == 0)
			return &r->cases[i];
	return NULL;
}

/* Both say one and they differ. */
static bool differ(const char *a, const char *b)
{
	return a && b && strcmp(a, b) != 0;
}

enum tc_match testrun_match(const struct testrun *r, const struct testcase *c, const struct testcase **found)
{
	size_t n = 0;

	*found = NULL;
	for (size_t i = 0; i < r->ncases; i++) {
		const struct testcase *o = &r->cases[i];
		if (o->synthetic != c->synthetic || strcmp(o->name, c->name) != 0 || differ(o->suite, c->suite) ||
		    differ(o->file, c->file))
			continue;
		if (n++ == 0 || (o->status == TC_FAIL && (*found)->status != TC_FAIL))
			*found = o;
	}
	if (n > 1 && (*found)->status != TC_FAIL) {
		*found = NULL;
		return TC_AMBIGUOUS;
	}
	return n ? TC_FOUND : TC_ABSENT;
}

bool tr_file_line(const char *s, size_t len, const char **file, size_t *flen, long *line)
{
	/* Scan each ':' followed by digits; the file is the run of non-space
	 * characters before it. */
	for (size_t i = 1; i + 1 < len; i++) {
		if (s[i] != ':' || !isdigit((unsigned char)s[i + 1]))
			continue;
		size_t start = i;
		while (start > 0 && !strchr(" \t\r\n('\"", s[start - 1]))
			start--;
		if (start == i)
			continue;
		const char *p = s + i + 1;
		size_t left = len - i - 1;
		long n;
		if (!tr_number(&p, &left, &n))
			continue;
		if (left && *p != ':' && *p != ' ' && *p != ')' && *p != '\'' && *p != '"' && *p != ',')
			continue;
		/* a file has a '.' or '/' (not "at 12:30") */
		if (!memchr(s + start, '.', i - start) && !memchr(s + start, '/', i - start))
			continue;
		*file = s + start;
		*flen = i - start;
		*line = n;
		return true;
	}
	return false;
}

void testrun_strip_ansi(char *s, size_t *len)
{
	size_t r = 0, w = 0, n = *len;

	while (r < n) {
		if (s[r] == 0x1b && r + 1 < n && s[r + 1] == '[') {
			r += 2;
			while (r < n && !((unsigned char)s[r] >= 0x40 && (unsigned char)s[r] <= 0x7e))
				r++;
			if (r < n)
				r++;
			continue;
		}
		if (s[r] == 0x1b && r + 1 < n && s[r + 1] == ']') {
			r += 2;
			while (r < n && s[r] != 0x07 && !(s[r] == 0x1b && r + 1 < n && s[r + 1] == '\\'))
				r++;
			r += (r < n && s[r] == 0x07) ? 1 : 2;
			continue;
		}
		s[w++] = s[r++];
	}
	if (w < n)
		s[w] = '\0';
	*len = w;
}

/* The named failures of `from` that `to` has not, into `to` (counted). */
static void take_failures(struct testrun *to, const struct testrun *from)
{
	for (size_t i = 0; i < from->ncases; i++) {
		const struct testcase *c = &from->cases[i];
		const struct testcase *have;
		struct testcase *n;

		/* already there: the same test failing (a passing one of the
		 * same name in another file is another test) */
		if (c->status != TC_FAIL || c->synthetic ||
		    (testrun_match(to, c, &have) == TC_FOUND && have->status == TC_FAIL))
			continue;
		n = testrun_add(to, c->name, strlen(c->name), TC_FAIL);
		if (!n) {
			to->failed++;
			to->total++;
			continue;
		}
		n->error = c->error;
		n->line = c->line;
		if (c->message)
			testcase_set(&n->message, c->message, strlen(c->message));
		if (c->output)
			testcase_set(&n->output, c->output, strlen(c->output));
		if (c->file)
			testcase_set(&n->file, c->file, strlen(c->file));
		to->failed++;
		to->total++;
	}
}

int testrun_parse(struct testrun *out, const char *text, size_t len)
{
	typedef int (*parser)(struct testrun *, const char *, size_t);
	static const parser parsers[] = {
		testrun_parse_gojson, testrun_parse_cargo, testrun_parse_pytest, tap_parse,
		testrun_parse_ctest, testrun_parse_node_spec, testrun_parse_gotest,
		testrun_parse_bats_pretty,
	};
	char *copy = xmalloc(len + 1);
	int found = 0;

	testrun_init(out);
	memcpy(copy, text, len);
	copy[len] = '\0';
	testrun_strip_ansi(copy, &len);
	size_t i;
	for (i = 0; i < sizeof parsers / sizeof parsers[0]; i++) {
		if (parsers[i](out, copy, len) == 1) {
			found = 1;
			break;
		}
		testrun_release(out);
	}
	/* One command may run two kinds of test (a TAP script, then pytest):
	 * the failures the other formats name are the run's too (before: the
	 * first format that matched was all, the others' failures lost). */
	for (size_t k = i + 1; found && k < sizeof parsers / sizeof parsers[0]; k++) {
		struct testrun other;

		testrun_init(&other);
		if (parsers[k](&other, copy, len) == 1)
			take_failures(out, &other);
		testrun_release(&other);
	}
	free(copy);
	return found;
}

/* ---- runners and reruns -------------------------------------------------- */

/* The words of a command (split on white space and shell operators; quotes
 * are not interpreted, which is enough to recognise a runner). */
static bool has_word(const char *command, const char *word, const char **after)
{
	size_t n = strlen(word);

	for (const char *p = command; (p = strstr(p, word)) != NULL; p += n) {
		bool start = p == command || strchr(" \t;&|(/", p[-1]);
		bool end = p[n] == '\0' || strchr(" \t;&|)", p[n]);
		if (start && end) {
			if (after)
				*after = p + n;
			return true;
		}
	}
	return false;
}

const char *testrun_runner(const char *command)
{
	const char *after;

	if (!command)
		return NULL;
	/* one command only: a pipeline or a list is run whole */
	if (strpbrk(command, ";|&`$\n"))
		return NULL;
	if (has_word(command, "bats", NULL))
		return "bats";
	if (has_word(command, "pytest", NULL) || has_word(command, "py.test", NULL))
		return "pytest";
	if (has_word(command, "go", &after) && strncmp(after, " test", 5) == 0)
		return "go";
	if (has_word(command, "cargo", &after) && strncmp(after, " test", 5) == 0)
		return "cargo";
	if (has_word(command, "ctest", NULL))
		return "ctest";
	if (has_word(command, "node", &after) && strstr(after, "--test"))
		return "node";
	return NULL;
}

/* s with the characters of an extended regex escaped. */
static void add_regex_literal(struct buf *b, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (strchr("\\.^$|?*+()[]{}", s[i]))
			buf_addch(b, '\\');
		buf_addch(b, s[i]);
	}
}

/* "^(a|b)$" of the names (go: the part before the first '/'). */
static char *alternation(const char *const *names, size_t n, bool top_level)
{
	struct buf re = BUF_INIT;

	buf_adds(&re, "^(");
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(names[i]);
		if (top_level && strchr(names[i], '/'))
			len = (size_t)(strchr(names[i], '/') - names[i]);
		if (i)
			buf_addch(&re, '|');
		add_regex_literal(&re, names[i], len);
	}
	buf_adds(&re, ")$");
	return buf_detach(&re, NULL);
}

/* What a name adds to the command at most: itself escaped for a regex
 * (or not), a separator and its quotes ('\'' for a quote). */
static size_t name_cost(const char *name, bool regex, bool top_level)
{
	size_t len = strlen(name), cost = 3;

	if (top_level && strchr(name, '/'))
		len = (size_t)(strchr(name, '/') - name);
	for (size_t i = 0; i < len; i++)
		cost += 1 + (regex && strchr("\\.^$|?*+()[]{}", name[i]) ? 1 : 0) + (name[i] == '\'' ? 3 : 0);
	return cost;
}

/* command with `extra` inserted right after the word `word` (so options
 * land before the runner's operands). */
static char *insert_after(const char *command, const char *word, const char *extra)
{
	const char *after = NULL;
	struct buf b = BUF_INIT;

	if (!has_word(command, word, &after))
		return NULL;
	buf_add(&b, command, (size_t)(after - command));
	buf_addch(&b, ' ');
	buf_adds(&b, extra);
	buf_adds(&b, after);
	return buf_detach(&b, NULL);
}

char *testrun_rerun_command(size_t *taken, const char *command, const char *const *names, size_t n)
{
	const char *runner = testrun_runner(command);
	struct buf extra = BUF_INIT;
	char *re = NULL, *out = NULL;
	bool pytest = runner && strcmp(runner, "pytest") == 0;
	bool cargo = runner && strcmp(runner, "cargo") == 0;
	bool go = runner && strcmp(runner, "go") == 0;

	*taken = 0;
	if (!runner || n == 0 || (cargo && strstr(command, " -- ")))
		return NULL;
	/* node ids only: a pytest name without "::" is not one */
	for (size_t i = 0; pytest && i < n; i++)
		if (!strstr(names[i], "::"))
			return NULL;
	/* The names that fit: the command is one argument (sh -c), and
	 * Linux refuses one over 128 KiB (MAX_ARG_STRLEN): a rerun naming
	 * thousands of failures could not start at all.  The cost is an upper
	 * bound: the command built stays under the limit. */
	size_t size = strlen(command) + sizeof " -- --exact -run '^()$'";
	size_t k = 0;
	for (; k < n; k++) {
		size_t cost = name_cost(names[k], !pytest && !cargo, go);
		if (k > 0 && size + cost > TESTRUN_RERUN_MAX)
			break;
		size += cost;
	}
	if (size > TESTRUN_RERUN_MAX)
		return NULL;
	if (strcmp(runner, "bats") == 0) {
		re = alternation(names, k, false);
		buf_adds(&extra, "-f ");
		buf_add_shell_quoted(&extra, re);
		out = insert_after(command, "bats", extra.buf);
	} else if (go) {
		re = alternation(names, k, true);
		buf_adds(&extra, "-run ");
		buf_add_shell_quoted(&extra, re);
		out = insert_after(command, "test", extra.buf);
	} else if (strcmp(runner, "ctest") == 0) {
		re = alternation(names, k, false);
		buf_adds(&extra, "-R ");
		buf_add_shell_quoted(&extra, re);
		out = insert_after(command, "ctest", extra.buf);
	} else if (pytest || cargo) {
		/* pytest: node ids replace the command's own selection only when
		 * it had none we can see: append them (pytest runs the union
		 * otherwise, which still includes them) */
		struct buf b = BUF_INIT;
		buf_adds(&b, command);
		if (cargo)
			buf_adds(&b, " -- --exact");
		for (size_t i = 0; i < k; i++) {
			buf_addch(&b, ' ');
			buf_add_shell_quoted(&b, names[i]);
		}
		out = buf_detach(&b, NULL);
	}
	if (out)
		*taken = k;
	free(re);
	buf_release(&extra);
	return out;
}

/* ---- environment signatures ----------------------------------------------- */

/* How a signature must stand in a line to be the environment speaking. */
enum sig_shape {
	SIG_PROGRAM_END,   /* a program's message ending the line: "sh: 1: x: not found" */
	SIG_OS_ERROR,      /* an OS error as a program or runtime prints it */
	SIG_SIGNAL,        /* a shell's report of a process the signal killed: the line
	                      alone ("File size limit exceeded"), or an SIG_OS_ERROR */
	SIG_ANYWHERE,      /* shaped by itself ("connect ECONNREFUSED", "(os error 2)") */
	SIG_WHOLE,         /* the runner's own failure only (a collection error) */
	SIG_MAKE_EXEC,     /* make running a recipe's program itself, without a shell:
			      "make: go: No such file or directory", with its
			      "Error 127" line */
	SIG_MAKE_127,      /* make's report of a recipe that exited 127, a program the
			      shell did not find: "make: *** [Makefile:2: test] Error 127" */
};

/* The length of make's "make: " or "make[2]: " (any program word ending in
 * make: gmake, /usr/bin/make) that starts the line s[0..n), or 0. */
static size_t make_prefix(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && (isalnum((unsigned char)s[i]) || strchr("_./+-", s[i])))
		i++;
	if (i < 4 || memcmp(s + i - 4, "make", 4) != 0)
		return 0;
	if (i < n && s[i] == '[') {
		size_t j = i + 1;
		while (j < n && isdigit((unsigned char)s[j]))
			j++;
		if (j == i + 1 || j >= n || s[j] != ']')
			return 0;
		i = j + 1;
	}
	return i + 1 < n && s[i] == ':' && s[i + 1] == ' ' ? i + 2 : 0;
}

/* "prog: …" or "/a/b.bats: line 3: …": the line starts with a program or
 * path word and a colon, as a shell, a loader or a tool prints its
 * diagnostics (not "E   KeyError: …", not an indented source line). */
static bool program_line(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && (isalnum((unsigned char)s[i]) || strchr("_./+-", s[i])))
		i++;
	return i > 0 && i + 1 < n && s[i] == ':' && s[i + 1] == ' ';
}

/* needle at s + at (in the line s[0..n)) as an OS error: "[Errno 111] X",
 * "X (os error 111)", or in a program's message line. */
static bool os_error_at(const char *s, size_t n, size_t at, size_t nlen)
{
	if (at >= 2 && s[at - 1] == ' ' && s[at - 2] == ']' && tr_find(s, at, "[Errno "))
		return true;
	if (tr_prefix(s + at + nlen, n - at - nlen, " (os error "))
		return true;
	return program_line(s, n);
}

/* needle at s + at starts a word: "sh: Resource temporarily unavailable"
 * is make's "/bin/sh: …", not a test's "flush: …". */
static bool word_at(const char *s, size_t at)
{
	return at == 0 || !isalnum((unsigned char)s[at]) || !isalnum((unsigned char)s[at - 1]);
}

/* needle somewhere in the line s[0..n) as an OS error (os_error_at), from
 * its first occurrence hit on. */
static bool os_error_in(const char *s, size_t n, const char *hit, const char *needle)
{
	size_t nlen = strlen(needle);

	for (; hit; hit = tr_find(hit + 1, n - (size_t)(hit + 1 - s), needle))
		if (word_at(s, (size_t)(hit - s)) && os_error_at(s, n, (size_t)(hit - s), nlen))
			return true;
	return false;
}

/* The line s[0..n) is needle alone, or needle " (core dumped)": how dash
 * reports a process a signal killed. */
static bool signal_line(const char *s, size_t n, const char *needle)
{
	size_t nlen = strlen(needle);

	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	return n >= nlen && !memcmp(s, needle, nlen) &&
	       (n == nlen || (n - nlen == 14 && !memcmp(s + nlen, " (core dumped)", 14)));
}

static bool sig_in_line(const char *s, size_t n, const char *needle, enum sig_shape shape)
{
	size_t nlen = strlen(needle);
	const char *hit = tr_find(s, n, needle);

	if (!hit)
		return false;
	switch (shape) {
	case SIG_PROGRAM_END:
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		return program_line(s, n) && n >= nlen && memcmp(s + n - nlen, needle, nlen) == 0 &&
		       word_at(s, n - nlen) && !memchr(s, '\'', n) && !memchr(s, '"', n);
	case SIG_SIGNAL:
		/* dash's line alone; bash's "bash: line 1: 9524 File size limit
		 * exceeded…" and make's "make: *** [all] …" as an OS error */
		return signal_line(s, n, needle) || os_error_in(s, n, hit, needle);
	case SIG_OS_ERROR:
		return os_error_in(s, n, hit, needle);
	case SIG_MAKE_EXEC: {
		/* "make: WORD: No such file or directory", WORD one word */
		size_t at = make_prefix(s, n);
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		if (!at || n < at + nlen + 1 || memcmp(s + n - nlen, needle, nlen) != 0)
			return false;
		for (size_t i = at; i < n - nlen; i++)
			if (s[i] == ' ' || s[i] == '\'' || s[i] == '"' || s[i] == ':')
				return false;
		return true;
	}
	case SIG_MAKE_127: {
		/* "make: *** [Makefile:2: test] Error 127" (not "… (ignored)") */
		size_t at = make_prefix(s, n);
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		return at && tr_prefix(s + at, n - at, "*** [") && n >= nlen &&
		       memcmp(s + n - nlen, needle, nlen) == 0;
	}
	case SIG_ANYWHERE:
	case SIG_WHOLE:
		return true;
	}
	return false;
}

const char *testrun_env_signature(const char *text, size_t len, bool whole)
{
	/* Matched in the shape the shell, the loader or the OS gives them,
	 * not as any substring: a test's own output holds its source and its
	 * assertion text (KeyError("user 1: not found"), a mocked "Connection
	 * refused"), which were taken for the environment and kept from the
	 * analysis.  The missing-module kinds are the runner's collection or
	 * import error (`whole`): inside a test's traceback they are the
	 * test's. */
	static const struct {
		const char *needle, *what;
		enum sig_shape shape;
	} sigs[] = {
		{ "command not found", "command not found", SIG_PROGRAM_END },
		{ ": not found", "command not found", SIG_PROGRAM_END },
		{ "No such file or directory (os error 2)", "missing program", SIG_ANYWHERE },
		/* make runs a recipe without a shell when it can: the program
		 * missing is then make's own line, and the recipe's status 127
		 * (before: a real failure, the tests not run taken for failing) */
		{ ": No such file or directory", "missing program", SIG_MAKE_EXEC },
		{ "] Error 127", "command not found", SIG_MAKE_127 },
		{ "error while loading shared libraries", "missing shared library", SIG_OS_ERROR },
		{ "cannot open shared object file", "missing shared library", SIG_OS_ERROR },
		{ "Could not resolve host", "network unavailable", SIG_OS_ERROR },
		{ "Temporary failure in name resolution", "network unavailable", SIG_OS_ERROR },
		{ "Connection refused", "service unavailable", SIG_OS_ERROR },
		{ "connect ECONNREFUSED", "service unavailable", SIG_ANYWHERE },
		{ "No space left on device", "disk full", SIG_OS_ERROR },
		{ "Cannot allocate memory", "out of memory", SIG_OS_ERROR },
		{ "Too many open files", "resource limit", SIG_OS_ERROR },
		{ "Read-only file system", "read-only file system", SIG_OS_ERROR },
		{ "Disk quota exceeded", "disk quota exceeded", SIG_OS_ERROR },
		/* Go's and Node's: strerror's words in lower case ("go: writing
		 * stat cache: … no space left on device", "Error: ENOSPC: no space
		 * left on device, write") */
		{ "no space left on device", "disk full", SIG_OS_ERROR },
		{ "connection refused", "service unavailable", SIG_OS_ERROR },
		{ "cannot allocate memory", "out of memory", SIG_OS_ERROR },
		{ "too many open files", "resource limit", SIG_OS_ERROR },
		{ "read-only file system", "read-only file system", SIG_OS_ERROR },
		{ "disk quota exceeded", "disk quota exceeded", SIG_OS_ERROR },
		/* EFBIG where SIGXFSZ is ignored (Python); not "File too large"
		 * anywhere, an upload limit's own message */
		{ "[Errno 27] File too large", "file size limit", SIG_ANYWHERE },
		{ "File too large (os error 27)", "file size limit", SIG_ANYWHERE },
		{ "File size limit exceeded", "file size limit", SIG_SIGNAL },
		/* EAGAIN only where a process could not be made: on a socket it is
		 * a test's own non-blocking I/O */
		{ "fork: Resource temporarily unavailable", "process limit", SIG_OS_ERROR },
		{ "fork: retry: ", "process limit", SIG_OS_ERROR },
		{ "sh: Resource temporarily unavailable", "process limit", SIG_OS_ERROR },
		{ "Cannot fork", "process limit", SIG_PROGRAM_END },
		{ "ModuleNotFoundError", "missing Python module", SIG_WHOLE },
		{ "No module named ", "missing Python module", SIG_WHOLE },
		{ "Cannot find module '", "missing Node module", SIG_WHOLE },
		{ "ERR_MODULE_NOT_FOUND", "missing Node module", SIG_WHOLE },
		{ "error while loading shared libraries", "missing shared library", SIG_WHOLE },
		{ "cannot open shared object file", "missing shared library", SIG_WHOLE },
		{ "compilation terminated.", "missing header or build dependency", SIG_WHOLE },
		{ "cannot find package", "missing Go package", SIG_WHOLE },
		{ "no required module provides package", "missing Go package", SIG_WHOLE },
		{ "failed to download", "dependency download failed", SIG_WHOLE },
	};
	struct tr_lines it;
	const char *line;
	size_t n;

	if (!text)
		return NULL;
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		if ((sigs[i].shape == SIG_WHOLE && !whole) || !tr_find(text, len, sigs[i].needle))
			continue;
		/* (make's own "make: nosuch: No such file or directory" for a
		 * -f file it cannot read is not a program run) */
		if (sigs[i].shape == SIG_MAKE_EXEC && !tr_find(text, len, "] Error 127"))
			continue;
		tr_lines_init(&it, text, len);
		while (tr_next_line(&it, &line, &n))
			if (sig_in_line(line, n, sigs[i].needle, sigs[i].shape))
				return sigs[i].what;
	}
	return NULL;
}
