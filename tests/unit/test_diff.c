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
	return unit_done();
}
