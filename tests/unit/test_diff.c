/* test_diff.c - the unified diff parser (lib/git/diff.h). */
#include "git/diff.h"
#include "core/buf.h"
#include "core/forge.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct diff *parse(const char *text)
{
	struct diff *d = NULL;

	if (diff_parse(&d, text, strlen(text)) < 0)
		return NULL;
	return d;
}

static void test_git_diff(void)
{
	struct diff *d = parse(
		"diff --git a/src/a.c b/src/a.c\n"
		"index 83db48f..bf269f4 100644\n"
		"--- a/src/a.c\n"
		"+++ b/src/a.c\n"
		"@@ -1,4 +1,5 @@ int main(void)\n"
		" one\n"
		"-two\n"
		"+TWO\n"
		"+two and a half\n"
		" three\n"
		"\n"
		"diff --git a/new.sh b/new.sh\n"
		"new file mode 100644\n"
		"index 0000000..e69de29\n"
		"--- /dev/null\n"
		"+++ b/new.sh\n"
		"@@ -0,0 +1,2 @@\n"
		"+#!/bin/sh\n"
		"+echo hi\n"
		"\\ No newline at end of file\n");
	CHECK(d);
	CHECK_INT(d->nfiles, 2);
	CHECK_STR(d->files[0].path, "src/a.c");
	CHECK_INT(d->files[0].additions, 2);
	CHECK_INT(d->files[0].deletions, 1);
	CHECK_STR(d->files[0].hunks[0].section, "int main(void)");
	CHECK(diff_added_line(&d->files[0], 1) == NULL);      /* context */
	CHECK_STR(diff_added_line(&d->files[0], 2), "TWO");
	CHECK_STR(diff_added_line(&d->files[0], 3), "two and a half");
	CHECK_STR(diff_new_line(&d->files[0], 4), "three");
	CHECK_STR(diff_new_line(&d->files[0], 5), "");        /* an empty context line */
	CHECK(diff_in_hunk(&d->files[0], 5));
	CHECK(!diff_in_hunk(&d->files[0], 6));
	CHECK(d->files[1].created);
	CHECK_STR(d->files[1].path, "new.sh");
	CHECK_STR(diff_added_line(diff_find(d, "./new.sh"), 2), "echo hi");
	CHECK_INT(d->additions, 4);
	diff_free(d);
}

static void test_plain_and_rename(void)
{
	struct diff *d = parse(
		"From 1234 Mon Sep 17 00:00:00 2001\n"
		"Subject: [PATCH] x\n\n"
		"--- old/x.py\t2024-01-01 00:00:00\n"
		"+++ new/x.py\t2024-01-02 00:00:00\n"
		"@@ -3 +3 @@\n"
		"-a = 1\n"
		"+a = 2\n"
		"diff --git a/old name.txt b/new name.txt\n"
		"similarity index 90%\n"
		"rename from old name.txt\n"
		"rename to new name.txt\n"
		"diff --git a/img.png b/img.png\n"
		"Binary files a/img.png and b/img.png differ\n"
		"diff --git a/gone.c b/gone.c\n"
		"deleted file mode 100644\n"
		"--- a/gone.c\n"
		"+++ /dev/null\n"
		"@@ -1 +0,0 @@\n"
		"-int x;\n");
	CHECK(d);
	CHECK_INT(d->nfiles, 4);
	CHECK_STR(d->files[0].path, "new/x.py");
	CHECK_STR(diff_added_line(&d->files[0], 3), "a = 2");
	CHECK(d->files[1].renamed);
	CHECK_STR(d->files[1].path, "new name.txt");
	CHECK_STR(d->files[1].old_path, "old name.txt");
	CHECK(d->files[2].binary);
	CHECK(d->files[3].deleted);
	CHECK_STR(d->files[3].path, "gone.c");
	diff_free(d);
}

static void test_malformed(void)
{
	struct diff *d = NULL;
	const char *bad[] = {
		"hello world\n",
		"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n",                 /* truncated */
		"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n+c\n",              /* longer than its header */
		"--- a/x\n+++ b/x\n@@ -1,x +1 @@\n-a\n+b\n",                 /* bad header */
		"@@ -1 +1 @@\n-a\n+b\n",                                    /* no file */
		"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n?b\n",              /* bad marker */
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CHECK_MSG(diff_parse(&d, bad[i], strlen(bad[i])) < 0, "case %zu parsed", i);
		CHECK(d == NULL);
		CHECK(*forge_last_error());
	}
	CHECK(strstr(forge_last_error(), "line 5") != NULL);
}

/* The paths of the diffs git writes with its other settings: a name it
 * quotes in a header with no ---/+++ (a binary or mode change), the
 * mnemonic prefixes, no prefixes; a combined diff is refused, not read
 * as nothing (before: a file without a path, or paths with "w/"). */
static void test_header_paths(void)
{
	struct diff *d = NULL;
	static const char quoted[] =
		"diff --git \"a/logo \\303\\251.png\" \"b/logo \\303\\251.png\"\n"
		"index e69de29..0c1b2d3 100644\nBinary files \"a/logo \\303\\251.png\" and "
		"\"b/logo \\303\\251.png\" differ\n"
		"diff --git a/run.sh \"b/d\\303\\251ploy.sh\"\nsimilarity index 100%\n"
		"rename from run.sh\nrename to \"d\\303\\251ploy.sh\"\n";
	CHECK_MSG(diff_parse(&d, quoted, strlen(quoted)) == 0, "%s", forge_last_error());
	CHECK(d && d->nfiles == 2);
	CHECK_STR(d->files[0].path, "logo \xc3\xa9.png");
	CHECK(d->files[0].binary);
	CHECK_STR(d->files[1].path, "d\xc3\xa9ploy.sh");
	CHECK_STR(d->files[1].old_path, "run.sh");
	diff_free(d);

	static const char mnemonic[] =
		"diff --git i/x.sh w/x.sh\nold mode 100644\nnew mode 100755\n"
		"diff --git c/y.c w/y.c\nindex 1..2 100644\n--- c/y.c\n+++ w/y.c\n@@ -1 +1 @@\n-a\n+b\n"
		"diff --git c/n.c w/n.c\nnew file mode 100644\n--- /dev/null\n+++ w/n.c\n@@ -0,0 +1 @@\n+n\n";
	CHECK_MSG(diff_parse(&d, mnemonic, strlen(mnemonic)) == 0, "%s", forge_last_error());
	CHECK(d && d->nfiles == 3);
	CHECK_STR(d->files[0].path, "x.sh");
	CHECK_STR(d->files[1].path, "y.c");
	CHECK_STR(d->files[1].old_path, "y.c");
	CHECK_STR(d->files[2].path, "n.c");
	diff_free(d);

	static const char noprefix[] = "diff --git x.sh x.sh\nold mode 100644\nnew mode 100755\n";
	CHECK_MSG(diff_parse(&d, noprefix, strlen(noprefix)) == 0, "%s", forge_last_error());
	CHECK(d && d->nfiles == 1);
	CHECK_STR(d->files[0].path, "x.sh");
	diff_free(d);

	static const char combined[] =
		"diff --cc a.c\nindex 1,2..3\n--- a/a.c\n+++ b/a.c\n@@@ -1,1 -1,1 +1,2 @@@\n  a\n++b\n";
	CHECK(diff_parse(&d, combined, strlen(combined)) < 0);
	CHECK(d == NULL);
	CHECK(strstr(forge_last_error(), "line 1: a combined diff") != NULL);
}

/* Every C escape git writes in a quoted path, as git wrote it for a file
 * named x BEL BS TAB VT FF CR " \ ESC y.c (before: \a \b \v \f \r undone as
 * the letters, the name matched no file and the file was not linted,
 * hunt27 #5). */
static void test_quoted_escapes(void)
{
	struct diff *d = NULL;
	static const char text[] =
		"diff --git \"a/x\\a\\b\\t\\v\\f\\r\\\"\\\\\\033y.c\" \"b/x\\a\\b\\t\\v\\f\\r\\\"\\\\\\033y.c\"\n"
		"new file mode 100644\nindex 0000000..4e610c0\n--- /dev/null\n"
		"+++ \"b/x\\a\\b\\t\\v\\f\\r\\\"\\\\\\033y.c\"\n@@ -0,0 +1 @@\n+int a;\n"
		"diff --git \"a/n\\nl\" \"b/n\\nl\"\ndeleted file mode 100644\n";
	CHECK_MSG(diff_parse(&d, text, strlen(text)) == 0, "%s", forge_last_error());
	CHECK(d && d->nfiles == 2);
	CHECK_STR(d->files[0].path, "x\a\b\t\v\f\r\"\\\033y.c");
	CHECK_STR(d->files[1].path, "n\nl");
	diff_free(d);
}

static void test_looks_like(void)
{
	CHECK(diff_looks_like("diff --git a/x b/x\n", 19));
	CHECK(diff_looks_like("x\n--- a\n+++ b\n", 14));
	CHECK(!diff_looks_like("add a --version flag\n", 21));
	CHECK(!diff_looks_like("--- just dashes\n", 16));
}

/* A git patch of `n` files: f0.txt with `big` lines, the others with 2. */
static char *patch_of(size_t n, size_t big, const char *odd)
{
	struct buf b = BUF_INIT;

	for (size_t i = 0; i < n; i++) {
		char name[64];
		size_t lines = i == 0 ? big : 2;

		if (i == n - 1 && odd)
			snprintf(name, sizeof name, "%s", odd);
		else
			snprintf(name, sizeof name, "f%zu.txt", i);
		buf_addf(&b, "diff --git a/%s b/%s\nnew file mode 100644\nindex 0000000..1111111\n"
			 "--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%zu @@\n", name, name, name, lines);
		for (size_t k = 0; k < lines; k++)
			buf_addf(&b, "+line %zu of %s\n", k, name);
	}
	return buf_detach(&b, NULL);
}

/* A cut keeps whole files (the small ones after a big one too), names the
 * rest, stays under its size and parses back, saying what was left out. */
static void test_cut(void)
{
	char *p = patch_of(4, 5000, "sp ace\"q.txt"), *c;
	struct diff *d = NULL;

	c = diff_cut(p, strlen(p), 1u << 20);
	CHECK_STR(c, p);                        /* under max: as it is */
	free(c);
	c = diff_cut(p, strlen(p), 8192);
	CHECK(strlen(c) <= 8192);
	CHECK_MSG(diff_parse(&d, c, strlen(c)) == 0, "%s", forge_last_error());
	CHECK(d && d->cut);
	CHECK_INT(d->nfiles, 3);                /* f1, f2 and the odd one: f0 is too big */
	CHECK_STR(d->files[0].path, "f1.txt");
	CHECK_STR(d->files[2].path, "sp ace\"q.txt");
	CHECK_INT(d->omitted_total, 1);
	CHECK_INT(d->nomitted, 1);
	CHECK_STR(d->omitted[0].path, "f0.txt");
	CHECK(d->omitted[0].bytes > 8192);
	CHECK(strstr(c, "[\u2026 not shown: f0.txt (") != NULL);
	diff_free(d);
	free(c);
	free(p);

	/* one file alone over max: only the markers, still a diff */
	p = patch_of(1, 5000, NULL);
	c = diff_cut(p, strlen(p), 4096);
	CHECK(diff_looks_like(c, strlen(c)));
	CHECK_MSG(diff_parse(&d, c, strlen(c)) == 0, "%s", forge_last_error());
	CHECK(d && d->cut && d->nfiles == 0 && d->nomitted == 1);
	diff_free(d);
	free(c);
	free(p);

	/* more files left out than can be named: the count says the rest */
	struct buf b = BUF_INIT;
	for (int i = 0; i < 400; i++)
		buf_addf(&b, "diff --git a/dir/a-long-file-name-%03d.txt b/dir/a-long-file-name-%03d.txt\n"
			 "--- a/dir/a-long-file-name-%03d.txt\n+++ b/dir/a-long-file-name-%03d.txt\n"
			 "@@ -1 +1 @@\n-%0200d\n+%0200d\n", i, i, i, i, i, i + 1);
	c = diff_cut(b.buf, b.len, 4096);
	CHECK(strlen(c) <= 4096);
	CHECK_MSG(diff_parse(&d, c, strlen(c)) == 0, "%s", forge_last_error());
	CHECK(d && d->nfiles > 0 && d->nomitted > 0);
	CHECK_INT(d->nfiles + d->omitted_total, 400);
	CHECK(d->nomitted < d->omitted_total);
	CHECK(strstr(c, "more files not shown") != NULL);
	diff_free(d);
	free(c);
	buf_release(&b);
}

/* An older cut, inside a hunk, ends the hunk there: the file is marked cut. */
static void test_cut_inside_hunk(void)
{
	const char *t = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,4 @@\n a\n+b\n"
			"[\u2026 diff cut: 1234 more bytes \u2026]\n";
	struct diff *d = NULL;

	CHECK_MSG(diff_parse(&d, t, strlen(t)) == 0, "%s", forge_last_error());
	CHECK(d && d->cut && d->files[0].cut);
	CHECK_INT(d->omitted_total, 0);
	CHECK_INT(d->files[0].hunks[0].new_count, 2);
	CHECK_STR(diff_added_line(&d->files[0], 2), "b");
	CHECK(!diff_in_hunk(&d->files[0], 3));
	diff_free(d);
}


/* Two patches of f.txt (a b c -> a B1 B2 c -> top a B1 c d) and a new
 * g.txt, as git format-patch -2 --stdout writes them (a diffstat, a
 * "- bullet" in a message, signatures). */
static const char series[] =
	"From 04dc4f217c31899d1b9bd9e62e1190ec7f18fc38 Mon Sep 17 00:00:00 2001\n"
	"From: t <t@e>\n"
	"Subject: [PATCH 1/2] one\n"
	"\n"
	"- bullet\n"
	"---\n"
	" f.txt | 3 ++-\n"
	" 1 file changed, 2 insertions(+), 1 deletion(-)\n"
	"\n"
	"diff --git a/f.txt b/f.txt\n"
	"index de98044..de1e085 100644\n"
	"--- a/f.txt\n"
	"+++ b/f.txt\n"
	"@@ -1,3 +1,4 @@\n"
	" a\n"
	"-b\n"
	"+B1\n"
	"+B2\n"
	" c\n"
	"-- \n"
	"2.39.5\n"
	"\n"
	"\n"
	"From 6c45c1dfeb8da10a48dfa5e14f2765facea647ee Mon Sep 17 00:00:00 2001\n"
	"From: t <t@e>\n"
	"Subject: [PATCH 2/2] two\n"
	"\n"
	"- add g\n"
	"+ and more\n"
	"---\n"
	" f.txt | 3 ++-\n"
	" g.txt | 1 +\n"
	" 2 files changed, 3 insertions(+), 1 deletion(-)\n"
	"\n"
	"diff --git a/f.txt b/f.txt\n"
	"index de1e085..bb0a4d3 100644\n"
	"--- a/f.txt\n"
	"+++ b/f.txt\n"
	"@@ -1,4 +1,5 @@\n"
	"+top\n"
	" a\n"
	" B1\n"
	"-B2\n"
	" c\n"
	"+d\n"
	"diff --git a/g.txt b/g.txt\n"
	"new file mode 100644\n"
	"index 0000000..587be6b\n"
	"--- /dev/null\n"
	"+++ b/g.txt\n"
	"@@ -0,0 +1 @@\n"
	"+x\n"
	"-- \n"
	"2.39.5\n";

/* f.txt of `series` combined: what its two patches did together. */
static void check_series_f(const struct diff *d)
{
	const struct diff_file *f = diff_find(d, "f.txt");

	CHECK(f && !f->created && !f->deleted && !f->renamed);
	CHECK_INT(f->additions, 3);
	CHECK_INT(f->deletions, 1);
	CHECK_STR(diff_added_line(f, 1), "top");
	CHECK_STR(diff_new_line(f, 2), "a");
	CHECK(diff_added_line(f, 2) == NULL);
	CHECK_STR(diff_added_line(f, 3), "B1");             /* added by the first, kept by the second */
	CHECK_STR(diff_new_line(f, 4), "c");
	CHECK(diff_added_line(f, 4) == NULL);
	CHECK_STR(diff_added_line(f, 5), "d");
	CHECK_INT(f->ndropped, 1);                          /* added, then removed */
	CHECK_STR(f->dropped[0].text, "B2");
	CHECK_INT(f->nhunks, 1);
	CHECK_INT(f->hunks[0].old_start, 1);
	CHECK_INT(f->hunks[0].old_count, 3);
	CHECK_INT(f->hunks[0].new_start, 1);
	CHECK_INT(f->hunks[0].new_count, 5);
	CHECK_INT(d->additions, 4);
	CHECK_INT(d->deletions, 1);
}

/* A format-patch series: the text between patches is no hunk's (before:
 * "hunk is longer than its header says" at the next patch's "---", or at a
 * "- " line of its message, hunt61 #1), and a file both patches change is
 * one file, the change of both (before: the first patch's alone, hunt61 #2). */
static void test_series(void)
{
	struct diff *d = NULL;

	CHECK_MSG(diff_parse(&d, series, strlen(series)) == 0, "%s", forge_last_error());
	CHECK_INT(d->nfiles, 2);
	CHECK_STR(d->files[0].path, "f.txt");
	CHECK_STR(d->files[1].path, "g.txt");
	CHECK(d->files[1].created);
	check_series_f(d);
	diff_free(d);
	/* without the signatures (--no-signature) the next "From " line ends the patch */
	struct buf b = BUF_INIT;
	for (const char *p = series; *p;) {
		const char *nl = strchr(p, '\n');
		if (strncmp(p, "-- \n", 4) != 0 && strncmp(p, "2.39.5\n", 7) != 0)
			buf_add(&b, p, (size_t)(nl - p) + 1);
		p = nl + 1;
	}
	CHECK_MSG(diff_parse(&d, b.buf, b.len) == 0, "%s", forge_last_error());
	check_series_f(d);
	diff_free(d);
	buf_release(&b);
	/* a hunk longer than its header is still one */
	static const char longer[] = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n-c\n";
	CHECK(diff_parse(&d, longer, strlen(longer)) == -1);
	CHECK(strstr(forge_last_error(), "line 7: hunk is longer than its header says") != NULL);
}

/* The same commits as `git log -p --stat` writes them, newest first: taken
 * oldest first, since the "index" blobs chain only that way. */
static void test_log_order(void)
{
	static const char log[] =
		"commit 6c45c1dfeb8da10a48dfa5e14f2765facea647ee\n"
		"Author: t <t@e>\n"
		"\n"
		"    two\n"
		"---\n"
		" f.txt | 3 ++-\n"
		"\n"
		"diff --git a/f.txt b/f.txt\n"
		"index de1e085..bb0a4d3 100644\n"
		"--- a/f.txt\n"
		"+++ b/f.txt\n"
		"@@ -1,4 +1,5 @@\n"
		"+top\n"
		" a\n"
		" B1\n"
		"-B2\n"
		" c\n"
		"+d\n"
		"diff --git a/g.txt b/g.txt\n"
		"new file mode 100644\n"
		"index 0000000..587be6b\n"
		"--- /dev/null\n"
		"+++ b/g.txt\n"
		"@@ -0,0 +1 @@\n"
		"+x\n"
		"\n"
		"commit 04dc4f217c31899d1b9bd9e62e1190ec7f18fc38\n"
		"Author: t <t@e>\n"
		"\n"
		"    one\n"
		"---\n"
		" f.txt | 3 ++-\n"
		"\n"
		"diff --git a/f.txt b/f.txt\n"
		"index de98044..de1e085 100644\n"
		"--- a/f.txt\n"
		"+++ b/f.txt\n"
		"@@ -1,3 +1,4 @@\n"
		" a\n"
		"-b\n"
		"+B1\n"
		"+B2\n"
		" c\n";
	struct diff *d = NULL;

	CHECK_MSG(diff_parse(&d, log, strlen(log)) == 0, "%s", forge_last_error());
	CHECK_INT(d->nfiles, 2);
	CHECK_STR(d->files[0].path, "f.txt");
	check_series_f(d);
	diff_free(d);
}

/* Two diffs of one file that do not follow one another (the same diff
 * twice): -2, naming the file and where its sections are. */
static void test_sections_that_do_not_follow(void)
{
	static const char one[] =
		"diff --git a/f.txt b/f.txt\n"
		"index de98044..de1e085 100644\n"
		"--- a/f.txt\n"
		"+++ b/f.txt\n"
		"@@ -1,3 +1,4 @@\n"
		" a\n"
		"-b\n"
		"+B1\n"
		"+B2\n"
		" c\n";
	struct buf b = BUF_INIT;
	struct diff *d = NULL;

	buf_adds(&b, one);
	buf_adds(&b, one);
	CHECK_INT(diff_parse(&d, b.buf, b.len), -2);
	CHECK(d == NULL);
	CHECK_MSG(strstr(forge_last_error(), "'f.txt' is in more than one section of the diff (at lines 1 and 11) "
			 "and they do not follow one another") != NULL, "%s", forge_last_error());
	/* without blob ids: its lines say so (line 1 is "a", not "B1") */
	buf_reset(&b);
	for (int i = 0; i < 2; i++)
		buf_adds(&b, "--- a/f.txt\n+++ b/f.txt\n@@ -2,2 +2,2 @@\n-b\n+B1\n c\n");
	CHECK_INT(diff_parse(&d, b.buf, b.len), -2);
	CHECK_MSG(strstr(forge_last_error(), "old line 2 is not the line the earlier one left there") != NULL, "%s",
		  forge_last_error());
	/* ... and when they do, they are one change */
	buf_reset(&b);
	buf_adds(&b, "--- a/f.txt\n+++ b/f.txt\n@@ -2,2 +2,2 @@\n-b\n+B1\n c\n");
	buf_adds(&b, "--- a/f.txt\n+++ b/f.txt\n@@ -2,2 +2,2 @@\n-B1\n+B2\n c\n");
	CHECK_MSG(diff_parse(&d, b.buf, b.len) == 0, "%s", forge_last_error());
	CHECK_INT(d->nfiles, 1);
	CHECK_STR(diff_added_line(&d->files[0], 2), "B2");
	CHECK_INT(d->files[0].additions, 1);
	CHECK_INT(d->files[0].deletions, 1);
	CHECK_STR(d->files[0].dropped[0].text, "B1");
	diff_free(d);
	buf_release(&b);
}

/* A file renamed twice in a series is one file, from its first name. */
static void test_series_renames(void)
{
	static const char t[] =
		"From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n"
		"diff --git a/x.txt b/y.txt\n"
		"similarity index 75%\n"
		"rename from x.txt\n"
		"rename to y.txt\n"
		"index de98044..8422d40 100644\n"
		"--- a/x.txt\n"
		"+++ b/y.txt\n"
		"@@ -1,3 +1,4 @@\n"
		" a\n"
		" b\n"
		" c\n"
		"+d\n"
		"From 2222222222222222222222222222222222222222 Mon Sep 17 00:00:00 2001\n"
		"diff --git a/y.txt b/z.txt\n"
		"similarity index 80%\n"
		"rename from y.txt\n"
		"rename to z.txt\n"
		"index 8422d40..1eee74c 100644\n"
		"--- a/y.txt\n"
		"+++ b/z.txt\n"
		"@@ -2,3 +2,4 @@\n"
		" b\n"
		" c\n"
		" d\n"
		"+e\n";
	struct diff *d = NULL;

	CHECK_MSG(diff_parse(&d, t, strlen(t)) == 0, "%s", forge_last_error());
	CHECK_INT(d->nfiles, 1);
	CHECK_STR(d->files[0].old_path, "x.txt");
	CHECK_STR(d->files[0].path, "z.txt");
	CHECK(d->files[0].renamed);
	CHECK_STR(diff_added_line(&d->files[0], 4), "d");
	CHECK_STR(diff_added_line(&d->files[0], 5), "e");
	diff_free(d);
}

/* Symbolic links: a new one, a changed one, and a file that becomes one
 * (git shows a deletion and a creation of the same path: one file). */
static void test_symlinks(void)
{
	static const char t[] =
		"diff --git a/l.sh b/l.sh\n"
		"new file mode 120000\n"
		"index 0000000..ee0cd6c\n"
		"--- /dev/null\n"
		"+++ b/l.sh\n"
		"@@ -0,0 +1 @@\n"
		"+../bin/run.sh\n"
		"\\ No newline at end of file\n"
		"diff --git a/m.sh b/m.sh\n"
		"index 1b9e4d5..ee0cd6c 120000\n"
		"--- a/m.sh\n"
		"+++ b/m.sh\n"
		"@@ -1 +1 @@\n"
		"-old.sh\n"
		"\\ No newline at end of file\n"
		"+../bin/run.sh\n"
		"\\ No newline at end of file\n"
		"diff --git a/run.sh b/run.sh\n"
		"deleted file mode 100644\n"
		"index 3f7c4a2..0000000\n"
		"--- a/run.sh\n"
		"+++ /dev/null\n"
		"@@ -1,2 +0,0 @@\n"
		"-#!/bin/sh\n"
		"-echo run\n"
		"diff --git a/run.sh b/run.sh\n"
		"new file mode 120000\n"
		"index 0000000..ee0cd6c\n"
		"--- /dev/null\n"
		"+++ b/run.sh\n"
		"@@ -0,0 +1 @@\n"
		"+bin/run.sh\n"
		"\\ No newline at end of file\n"
		"diff --git a/plain.sh b/plain.sh\n"
		"index 3f7c4a2..4e1c2a3 100644\n"
		"--- a/plain.sh\n"
		"+++ b/plain.sh\n"
		"@@ -1 +1 @@\n"
		"-a\n"
		"+b\n";
	struct diff *d = NULL;

	CHECK_MSG(diff_parse(&d, t, strlen(t)) == 0, "%s", forge_last_error());
	CHECK_INT(d->nfiles, 4);
	CHECK(d->files[0].symlink && d->files[0].created);
	CHECK(d->files[1].symlink);
	CHECK_STR(d->files[2].path, "run.sh");
	CHECK(d->files[2].symlink && !d->files[2].created && !d->files[2].deleted);
	CHECK_STR(diff_added_line(&d->files[2], 1), "bin/run.sh");
	CHECK_INT(d->files[2].deletions, 2);
	CHECK(!d->files[3].symlink);
	diff_free(d);
}

int main(void)
{
	RUN(test_git_diff);
	RUN(test_plain_and_rename);
	RUN(test_malformed);
	RUN(test_header_paths);
	RUN(test_quoted_escapes);
	RUN(test_looks_like);
	RUN(test_cut);
	RUN(test_cut_inside_hunk);
	RUN(test_series);
	RUN(test_log_order);
	RUN(test_sections_that_do_not_follow);
	RUN(test_series_renames);
	RUN(test_symlinks);
	return unit_done();
}
