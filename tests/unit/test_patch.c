/* test_patch.c - apply_patch and edit_file matching (lib/agent/patch.h). */
#include "core/forge.h"
#include "core/json.h"
#include "agent/patch.h"
#include "os/sandbox.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIX "tests/fixtures/patch"

static char scratch[256];

static void sh(const char *cmd)
{
	if (system(cmd) != 0)
		printf("# command failed: %s\n", cmd);
}

static void rm_scratch(void)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
	sh(cmd);
}

static void fresh(void)
{
	char tmpl[] = "/tmp/forge-patch-XXXXXX";
	if (scratch[0])
		rm_scratch();
	snprintf(scratch, sizeof(scratch), "%s", mkdtemp(tmpl));
	{
		char cmd[512];
		snprintf(cmd, sizeof(cmd), "cp -R " FIX "/orig/. '%s'", scratch);
		sh(cmd);
	}
}

static bool same_tree(const char *expected)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "diff -r '%s' '%s' >/dev/null", expected, scratch);
	return system(cmd) == 0;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	struct buf b = BUF_INIT;
	char chunk[4096];
	size_t n;

	if (!f)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(&b, chunk, n);
	fclose(f);
	return buf_detach(&b, NULL);
}

static int apply_fixture(char **summary, jv *files, const char *name)
{
	struct sandbox_root *root;
	char path[256];
	char *text;
	int rc;

	snprintf(path, sizeof(path), FIX "/%s", name);
	text = slurp(path);
	if (!text || sandbox_root_open(&root, scratch) < 0)
		return -99;
	rc = patch_apply(summary, files, root, text);
	sandbox_root_free(root);
	free(text);
	return rc;
}

static int apply_text(char **summary, jv *files, const char *text)
{
	struct sandbox_root *root;
	int rc;

	if (sandbox_root_open(&root, scratch) < 0)
		return -99;
	rc = patch_apply(summary, files, root, text);
	sandbox_root_free(root);
	return rc;
}

/* ---- seek passes ---- */

static void test_seek_passes(void)
{
	char *lines[] = { "a", "  b  ", "\tc\t", ("say \xe2\x80\x9c" "hi\xe2\x80\x9d \xe2\x80\x94 ok"), "end" };
	char *p_exact[] = { "a" }, *p_rstrip[] = { "  b" }, *p_strip[] = { "c" };
	char *p_punct[] = { "say \"hi\" - ok" }, *p_none[] = { "zzz" }, *p_eof[] = { "end" };
	enum patch_fuzz f;

	CHECK_INT(patch_seek(lines, 5, p_exact, 1, 0, false, &f), 0);
	CHECK_INT(f, PATCH_EXACT);
	CHECK_INT(patch_seek(lines, 5, p_rstrip, 1, 0, false, &f), 1);
	CHECK_INT(f, PATCH_RSTRIP);
	CHECK_INT(patch_seek(lines, 5, p_strip, 1, 0, false, &f), 2);
	CHECK_INT(f, PATCH_STRIP);
	CHECK_INT(patch_seek(lines, 5, p_punct, 1, 0, false, &f), 3);
	CHECK_INT(f, PATCH_PUNCT);
	CHECK_INT(patch_seek(lines, 5, p_none, 1, 0, false, &f), -1);
	CHECK_INT(patch_seek(lines, 5, p_eof, 1, 0, true, &f), 4);
	/* the cursor only moves forward */
	CHECK_INT(patch_seek(lines, 5, p_exact, 1, 1, false, &f), -1);
	/* an empty pattern matches at start */
	CHECK_INT(patch_seek(lines, 5, NULL, 0, 2, false, &f), 2);
}

static void test_seek_prefers_stricter_pass(void)
{
	/* The strip pass would match at 0, but exact matches at 1: exact wins. */
	char *lines[] = { "  x", "x" }, *pat[] = { "x" };
	enum patch_fuzz f;

	CHECK_INT(patch_seek(lines, 2, pat, 1, 0, false, &f), 1);
	CHECK_INT(f, PATCH_EXACT);
}

/* ---- edit_file ---- */

static void test_edit_exact_unique(void)
{
	char *out;
	enum patch_fuzz f;
	int n;

	CHECK(patch_edit(&out, &f, &n, "a\nfoo(1);\nb\n", "x.c", "foo(1);", "foo(2);", false) == 0);
	CHECK_STR(out, "a\nfoo(2);\nb\n");
	CHECK_INT(n, 1);
	CHECK_INT(f, PATCH_EXACT);
	free(out);
}

static void test_edit_ambiguous_and_replace_all(void)
{
	char *out;
	enum patch_fuzz f;
	int n;

	CHECK(patch_edit(&out, &f, &n, "x=1\ny\nx=1\n", "f", "x=1", "x=2", false) < 0);
	CHECK(strstr(forge_last_error(), "occurs 2 times (lines 1, 3)"));
	CHECK(out == NULL);
	CHECK(patch_edit(&out, &f, &n, "x=1\ny\nx=1\n", "f", "x=1", "x=2", true) == 0);
	CHECK_STR(out, "x=2\ny\nx=2\n");
	CHECK_INT(n, 2);
	free(out);
	/* Found by fuzz_patch_edit: an empty `old` read past the end of the
	 * content (tests/fuzz/corpus/fuzz_patch_edit/crash-empty-old). */
	CHECK(patch_edit(&out, &f, &n, "x=1\n", "f", "", "x=2", true) < 0);
	CHECK(strstr(forge_last_error(), "`old` is empty"));
	CHECK(out == NULL);
}

static void test_edit_rstrip_pass(void)
{
	char *out;
	enum patch_fuzz f;
	int n;

	CHECK(patch_edit(&out, &f, &n, "int a;   \nint b;\n", "f", "int a;\nint b;\n", "int c;\n", false) == 0);
	CHECK_INT(f, PATCH_RSTRIP);
	CHECK_STR(out, "int c;\n");
	free(out);
}

static void test_edit_strip_pass_reindents(void)
{
	char *out;
	enum patch_fuzz f;
	int n;
	const char *file = "def f():\n    if x:\n        y()\n    return 1\n";

	/* The model dropped the indentation; the new lines get it back. */
	CHECK(patch_edit(&out, &f, &n, file, "f.py", "if x:\n    y()", "if x:\n    z()\n    w()", false) == 0);
	CHECK_INT(f, PATCH_STRIP);
	CHECK_STR(out, "def f():\n    if x:\n        z()\n        w()\n    return 1\n");
	free(out);
	/* The model indented with spaces where the file has a TAB (a Makefile
	 * recipe), or deeper than the file: the new lines get the file's. */
	CHECK(patch_edit(&out, &f, &n, "all:\n\techo one\n\techo two\n", "Makefile", "    echo two",
			 "    echo two\n    echo three", false) == 0);
	CHECK_INT(f, PATCH_STRIP);
	CHECK_STR(out, "all:\n\techo one\n\techo two\n\techo three\n");
	free(out);
	CHECK(patch_edit(&out, &f, &n, "class A:\n    def m(self):\n        a = 0\n        return a\n", "a.py",
			 "            a = 0", "            a = 0\n            if a:\n                a = 1", false) == 0);
	CHECK_STR(out, "class A:\n    def m(self):\n        a = 0\n        if a:\n            a = 1\n        return a\n");
	free(out);
}

static void test_edit_punct_pass(void)
{
	char *out;
	enum patch_fuzz f;
	int n;

	CHECK(patch_edit(&out, &f, &n, "s = \xe2\x80\x98" "a\xe2\x80\x99 \xe2\x80\x93 b\n", "f",
			 "s = 'a' - b", "s = 'c'", false) == 0);
	CHECK_INT(f, PATCH_PUNCT);
	CHECK_STR(out, "s = 'c'\n");
	free(out);
}

/* Text the file holds decomposed (NFD: e + U+0301, Hangul jamo) matches
 * the model's composed text (NFC) in the loosest pass. */
static void test_edit_matches_across_unicode_composition(void)
{
	char *out;
	enum patch_fuzz f;
	int n;

	CHECK_MSG(patch_edit(&out, &f, &n, "menu:\ncafe\xcc\x81 au lait\n", "menu.txt", "caf\xc3\xa9 au lait",
			     "th\xc3\xa9 vert", false) == 0, "%s", forge_last_error());
	CHECK_INT(f, PATCH_PUNCT);
	CHECK_STR(out, "menu:\nth\xc3\xa9 vert\n");
	free(out);
	/* 한 (U+D55C) decomposed: U+1112 U+1161 U+11AB */
	CHECK_MSG(patch_edit(&out, &f, &n, "x\n\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab\n", "k.txt", "\xed\x95\x9c", "y",
			     false) == 0, "%s", forge_last_error());
	CHECK_STR(out, "x\ny\n");
	free(out);
	/* a different accent is still a difference */
	CHECK(patch_edit(&out, &f, &n, "cafe\xcc\x80\n", "m", "caf\xc3\xa9", "x", false) < 0);
}

static void test_edit_no_match_shows_closest(void)
{
	char *out;
	enum patch_fuzz f;
	int n;
	const char *file = "one\ntwo\nstatic int parse_date(const char *s)\n{\n\treturn 0;\n}\nthree\n";

	CHECK(patch_edit(&out, &f, &n, file, "d.c", "static int parse_date(char *s)\n{\n\treturn 1;\n}",
			 "x", false) < 0);
	CHECK(strstr(forge_last_error(), "was not found"));
	CHECK_MSG(strstr(forge_last_error(), "closest lines in d.c are 3-6"), "%s", forge_last_error());
	CHECK(strstr(forge_last_error(), "     3\tstatic int parse_date(const char *s)"));
	CHECK(strstr(forge_last_error(), "First difference: line 3 of the file"));
}

static void test_edit_keeps_crlf_and_missing_final_newline(void)
{
	char *out;
	enum patch_fuzz f;
	int n;

	CHECK(patch_edit(&out, &f, &n, "a\r\nb\r\nc\r\n", "f", "a\nb", "x\ny", false) == 0);
	CHECK_STR(out, "x\r\ny\r\nc\r\n");
	free(out);
	CHECK(patch_edit(&out, &f, &n, "a \nb", "f", "a\nb", "c", false) == 0);
	CHECK_STR(out, "c");
	free(out);
	/* an exact match within one line: the lines `new` adds end in CRLF too */
	CHECK(patch_edit(&out, &f, &n, "l1\r\nl2\r\nl3\r\n", "f", "l2", "l2\nl2b", false) == 0);
	CHECK_INT(f, PATCH_EXACT);
	CHECK_STR(out, "l1\r\nl2\r\nl2b\r\nl3\r\n");
	free(out);
	CHECK(patch_edit(&out, &f, &n, "l1\r\nl2\r\nl3\r\n", "f", "l2\r\n", "l2\nl2b\r\n", false) == 0);
	CHECK_STR(out, "l1\r\nl2\r\nl2b\r\nl3\r\n");
	free(out);
	/* an LF file is left as it is */
	CHECK(patch_edit(&out, &f, &n, "l1\nl2\n", "f", "l2", "l2\nl2b", false) == 0);
	CHECK_STR(out, "l1\nl2\nl2b\n");
	free(out);
}

/* ---- apply_patch ---- */

static void test_apply_multi(void)
{
	char *summary = NULL;
	jv files;

	fresh();
	CHECK_MSG(apply_fixture(&summary, &files, "multi.patch") == 0, "%s", forge_last_error());
	if (!same_tree(FIX "/expected/multi")) {
		char c[512];
		snprintf(c, sizeof(c), "diff -r " FIX "/expected/multi %s | sed 's/^/# /'", scratch);
		sh(c);
	}
	CHECK(same_tree(FIX "/expected/multi"));
	CHECK(strstr(summary, "Success. Updated the following files:"));
	CHECK(strstr(summary, "A docs/new.md"));
	CHECK(strstr(summary, "D old.txt"));
	CHECK(strstr(summary, "M src/app.py (moved from app.py)"));
	CHECK_INT(jv_array_length(jv_copy(files)), 3);
	free(summary);
	jv_free(files);
}

/* A move keeps the file's mode: a script stays executable, moved as it is
 * or changed on the way; a moved plain file stays plain. */
static void test_apply_move_keeps_mode(void)
{
	char *summary = NULL, path[512], cmd[600];
	struct stat st;
	jv files;

	fresh();
	snprintf(cmd, sizeof cmd, "cd '%s' && printf 'echo run\\n' >run.sh && printf 'echo b\\n' >b.sh && "
		 "chmod 755 run.sh b.sh", scratch);
	sh(cmd);
	CHECK_MSG(apply_text(&summary, &files, "*** Begin Patch\n*** Update File: run.sh\n*** Move to: tools/run.sh\n"
			     "*** Update File: b.sh\n*** Move to: tools/b.sh\n@@\n-echo b\n+echo build\n"
			     "*** Update File: notes.md\n*** Move to: doc/notes.md\n*** End Patch\n") == 0,
		  "%s", forge_last_error());
	snprintf(path, sizeof path, "%s/tools/run.sh", scratch);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0755);
	snprintf(path, sizeof path, "%s/tools/b.sh", scratch);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0755);
	snprintf(path, sizeof path, "%s/doc/notes.md", scratch);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0111) == 0);
	free(summary);
	jv_free(files);
}

/* apply_patch's lines added to a chunk matched ignoring indentation get
 * the file's indentation too (a TAB in a Makefile recipe). */
static void test_apply_reindents_loose_match(void)
{
	char *summary = NULL, path[512], cmd[600];
	jv files;

	fresh();
	snprintf(cmd, sizeof cmd, "cd '%s' && printf 'all:\\n\\techo one\\n\\techo two\\n' >Makefile", scratch);
	sh(cmd);
	CHECK_MSG(apply_text(&summary, &files, "*** Begin Patch\n*** Update File: Makefile\n@@\n"
			     "     echo one\n+    echo mid\n     echo two\n*** End Patch\n") == 0,
		  "%s", forge_last_error());
	snprintf(path, sizeof path, "%s/Makefile", scratch);
	char *text = slurp(path);
	CHECK_STR(text, "all:\n\techo one\n\techo mid\n\techo two\n");
	free(text);
	free(summary);
	jv_free(files);
}

static void test_apply_all_or_nothing(void)
{
	char *summary = NULL;
	jv files;

	fresh();
	CHECK(apply_fixture(&summary, &files, "third_hunk_fails.patch") < 0);
	CHECK(summary == NULL);
	CHECK(jv_get_kind(files) == JV_KIND_NULL);
	CHECK(strstr(forge_last_error(), "nothing was changed"));
	CHECK_MSG(strstr(forge_last_error(), "notes.md: failed to find the expected lines of chunk 1"), "%s",
		  forge_last_error());
	CHECK(strstr(forge_last_error(), "this line is not in the file"));
	CHECK(strstr(forge_last_error(), "closest lines in notes.md"));
	/* not the added file, not the good update: the tree is as it was */
	CHECK(same_tree(FIX "/orig"));
	CHECK(access("added.txt", F_OK) != 0);
}

static void test_apply_fuzzy(void)
{
	char *summary = NULL;
	jv files;

	fresh();
	CHECK_MSG(apply_fixture(&summary, &files, "fuzzy.patch") == 0, "%s", forge_last_error());
	CHECK(same_tree(FIX "/expected/fuzzy"));
	CHECK_MSG(strstr(summary, "ignoring indentation and typographic punctuation"), "%s", summary);
	free(summary);
	jv_free(files);
}

static void test_apply_each_pass(void)
{
	static const char *const cases[][3] = {
		/* file, patch body, expected */
		{ "a\nb\nc\n", " a\n-b\n+B\n c\n", "a\nB\nc\n" },
		{ "a  \nb\t\nc\n", " a\n-b\n+B\n c\n", "a  \nB\nc\n" },
		{ "  a\n    b\n  c\n", " a\n-b\n+B\n c\n", "  a\nB\n  c\n" },
		{ "x = \xe2\x80\x9c" "q\xe2\x80\x9d\n", "-x = \"q\"\n+x = 'q'\n", "x = 'q'\n" },
	};
	static const enum patch_fuzz want[] = { PATCH_EXACT, PATCH_RSTRIP, PATCH_STRIP, PATCH_PUNCT };

	for (size_t i = 0; i < 4; i++) {
		char patch[512], path[300], *summary = NULL, *got;
		FILE *f;
		jv files;

		fresh();
		snprintf(path, sizeof(path), "%s/t.txt", scratch);
		f = fopen(path, "w");
		fputs(cases[i][0], f);
		fclose(f);
		snprintf(patch, sizeof(patch), "*** Begin Patch\n*** Update File: t.txt\n%s*** End Patch\n",
			 cases[i][1]);
		CHECK_MSG(apply_text(&summary, &files, patch) == 0, "case %zu: %s", i, forge_last_error());
		got = slurp(path);
		CHECK_STR(got, cases[i][2]);
		free(got);
		CHECK(want[i] == PATCH_EXACT ? !strstr(summary, "loosely") :
		      strstr(summary, patch_fuzz_name(want[i])) != NULL);
		free(summary);
		jv_free(files);
	}
}

static void test_apply_context_eof_and_insert(void)
{
	char *summary = NULL, *got, path[300];
	jv files;
	const char *patch =
		"<<'EOF'\n"
		"*** Begin Patch\n"
		"*** Update File: app.py\n"
		"@@ -1,3 +1,4 @@ def main():\n"
		"+    print('start')\n"
		"@@\n"
		" if __name__ == \"__main__\":\n"
		"-    main()\n"
		"+    sys.exit(main())\n"
		"*** End of File\n"
		"*** End Patch\n"
		"EOF\n";

	fresh();
	CHECK_MSG(apply_text(&summary, &files, patch) == 0, "%s", forge_last_error());
	snprintf(path, sizeof(path), "%s/app.py", scratch);
	got = slurp(path);
	CHECK(strstr(got, "def main():\n    print('start')\n    greet(sys.argv[1])\n"));
	CHECK(strstr(got, "    sys.exit(main())\n"));
	free(got);
	free(summary);
	jv_free(files);
}

static void test_apply_errors(void)
{
	char *summary = NULL;
	jv files;

	fresh();
	CHECK(apply_text(&summary, &files, "*** Update File: a\n") < 0);
	CHECK(strstr(forge_last_error(), "must start with '*** Begin Patch'"));
	CHECK(apply_text(&summary, &files, "*** Begin Patch\n*** Add File: a\n+x\n") < 0);
	CHECK(strstr(forge_last_error(), "must end with '*** End Patch'"));
	CHECK(apply_text(&summary, &files, "*** Begin Patch\n*** Frobnicate: a\n*** End Patch\n") < 0);
	CHECK(strstr(forge_last_error(), "is not a valid hunk header"));
	CHECK(apply_text(&summary, &files, "*** Begin Patch\n*** Add File: app.py\n+x\n*** End Patch\n") < 0);
	CHECK(strstr(forge_last_error(), "already exists"));
	CHECK(apply_text(&summary, &files, "*** Begin Patch\n*** Delete File: nope\n*** End Patch\n") < 0);
	CHECK(strstr(forge_last_error(), "Delete File 'nope': no such file"));
	CHECK(apply_text(&summary, &files, "*** Begin Patch\n*** Update File: nope\n-a\n+b\n*** End Patch\n") < 0);
	CHECK(strstr(forge_last_error(), "use Add File"));
	CHECK(apply_text(&summary, &files, "*** Begin Patch\n*** Update File: app.py\n@@ no such context\n-a\n+b\n*** End Patch\n") < 0);
	CHECK(strstr(forge_last_error(), "failed to find context 'no such context'"));
	CHECK(same_tree(FIX "/orig"));
}

static void test_apply_refuses_escapes(void)
{
	char *summary = NULL;
	jv files;

	fresh();
	CHECK_INT(apply_text(&summary, &files, "*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch\n"),
		  SANDBOX_EDENIED);
	CHECK_INT(apply_text(&summary, &files, "*** Begin Patch\n*** Add File: .git/hooks/pre-commit\n+x\n*** End Patch\n"),
		  SANDBOX_EDENIED);
	CHECK_INT(apply_text(&summary, &files, "*** Begin Patch\n*** Add File: /tmp/x\n+x\n*** End Patch\n"),
		  SANDBOX_EDENIED);
	CHECK(same_tree(FIX "/orig"));
}


/* Write len bytes to name in the scratch tree. */
static void put(const char *name, const char *bytes, size_t len)
{
	char path[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", scratch, name);
	f = fopen(path, "wb");
	if (f) {
		fwrite(bytes, 1, len, f);
		fclose(f);
	}
}

/* The content of name in the scratch tree (malloc'd). */
static char *got_file(const char *name)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/%s", scratch, name);
	return slurp(path);
}

/* Apply "*** Begin Patch\n*** Update File: f\n" body "*** End Patch\n" to
 * f holding before; the result (malloc'd), or NULL when it failed. */
static char *patch_f(const char *before, const char *body)
{
	char *summary = NULL, *text;
	struct buf b = BUF_INIT;
	jv files;
	int rc;

	put("f", before, strlen(before));
	buf_addf(&b, "*** Begin Patch\n*** Update File: f\n%s*** End Patch\n", body);
	text = buf_detach(&b, NULL);
	rc = apply_text(&summary, &files, text);
	free(text);
	free(summary);
	if (rc < 0) {
		printf("# %s\n", forge_last_error());
		return NULL;
	}
	jv_free(files);
	return got_file("f");
}

#define CHECK_PATCH(before, body, after) do { \
	char *got_ = patch_f(before, body), show_[256]; \
	bool ok_ = got_ && !strcmp(got_, after); \
	snprintf(show_, sizeof show_, "%s", got_ ? got_ : "(failed)"); \
	free(got_); \
	CHECK_MSG(ok_, "got '%s'", show_); \
} while (0)

/* A file without a final newline keeps none (before: apply_patch always
 * ended the result with one, and a CRLF file's last line with a bare LF);
 * unified diff's "\ No newline at end of file" says otherwise. */
static void test_apply_keeps_missing_final_newline(void)
{
	fresh();
	/* the last line changed, a line in the middle, lines appended */
	CHECK_PATCH("a\nb", "@@\n a\n-b\n+c\n", "a\nc");
	CHECK_PATCH("a\nb\nc", "@@\n-a\n+A\n b\n", "A\nb\nc");
	CHECK_PATCH("a\nb", "+d\n", "a\nb\nd");
	CHECK_PATCH("a\nb", "@@\n a\n-b\n", "a");
	/* a file with its final newline keeps it */
	CHECK_PATCH("a\nb\n", "@@\n a\n-b\n+c\n", "a\nc\n");
	/* CRLF: the line ends stay CRLF and the end stays open */
	CHECK_PATCH("a\r\nb\r\nc", "@@\n-a\n+A\n", "A\r\nb\r\nc");
	CHECK_PATCH("a\r\nb\r\nc", "@@\n b\n-c\n+C\n+D\n", "a\r\nb\r\nC\r\nD");
	CHECK_PATCH("a\r\nb\r\nc", "+d\n", "a\r\nb\r\nc\r\nd");
	/* the marker: after the removed last line, the new one gets a newline */
	CHECK_PATCH("a\nb", "@@\n a\n-b\n\\ No newline at end of file\n+b\n", "a\nb\n");
	CHECK_PATCH("a\nb", "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n", "a\nc\n");
	/* after an added line, the file ends without one */
	CHECK_PATCH("a\nb\n", "@@\n a\n-b\n+b\n\\ No newline at end of file\n", "a\nb");
	/* after a context line: both sides lack it, so it stays so */
	CHECK_PATCH("a\nb", "@@\n-a\n+A\n b\n\\ No newline at end of file\n", "A\nb");
	/* a marked chunk is found at the end first */
	CHECK_PATCH("x\ny\nx\ny", "@@\n x\n-y\n+z\n\\ No newline at end of file\n", "x\ny\nx\nz");
	{
		char *summary = NULL, *got;
		jv files;
		CHECK_MSG(apply_text(&summary, &files, "*** Begin Patch\n*** Add File: n.txt\n+one\n+two\n"
				     "\\ No newline at end of file\n*** End Patch\n") == 0, "%s", forge_last_error());
		got = got_file("n.txt");
		CHECK_STR(got, "one\ntwo");
		free(got);
		free(summary);
		jv_free(files);
	}
}

/* A file that is not UTF-8 is patched as read_file shows it, Latin-1, and
 * keeps its bytes (before: its lines did not match the model's text at all,
 * "failed to find the expected lines"). */
static void test_apply_latin1_file(void)
{
	char *summary = NULL, *got;
	jv files;

	fresh();
	put("l1.txt", "caf\xe9 au lait\nna\xefve\n", 19);
	CHECK_MSG(apply_text(&summary, &files, "*** Begin Patch\n*** Update File: l1.txt\n"
			     "@@\n-caf\xc3\xa9 au lait\n+th\xc3\xa9 \xc3\xa0 la menthe\n na\xc3\xafve\n"
			     "*** End Patch\n") == 0, "%s", forge_last_error());
	got = got_file("l1.txt");
	CHECK_STR(got, "th\xe9 \xe0 la menthe\nna\xefve\n");
	free(got);
	CHECK(summary && strstr(summary, "M l1.txt") && strstr(summary, "Latin-1"));
	{
		jv f0 = jv_array_get(jv_copy(files), 0);
		bool latin1 = json_get_str(f0, "encoding") && !strcmp(json_get_str(f0, "encoding"), "latin1");
		jv_free(f0);
		CHECK(latin1);
	}
	free(summary);
	jv_free(files);
	/* a move keeps the bytes too */
	CHECK_MSG(apply_text(&summary, &files, "*** Begin Patch\n*** Update File: l1.txt\n*** Move to: l2.txt\n"
			     "@@\n-na\xc3\xafve\n+na\xc3\xafvet\xc3\xa9\n*** End Patch\n") == 0, "%s", forge_last_error());
	got = got_file("l2.txt");
	CHECK_STR(got, "th\xe9 \xe0 la menthe\nna\xefvet\xe9\n");
	free(got);
	free(summary);
	jv_free(files);
	/* a character the file cannot hold is refused, and nothing changes;
	 * U+FFFD (what a lossy view showed) is named as such */
	CHECK(apply_text(&summary, &files, "*** Begin Patch\n*** Update File: l2.txt\n"
			 "@@\n-na\xc3\xafvet\xc3\xa9\n+caf\xc3\xa9 \xe2\x82\xac 2\n*** End Patch\n") < 0);
	CHECK_MSG(strstr(forge_last_error(), "'l2.txt' is not UTF-8") &&
		  strstr(forge_last_error(), "U+20AC") && strstr(forge_last_error(), "chunk 1 (patch line 3)"),
		  "%s", forge_last_error());
	CHECK(apply_text(&summary, &files, "*** Begin Patch\n*** Update File: l2.txt\n"
			 "@@\n-na\xef\xbf\xbdvet\xef\xbf\xbd\n+x\n*** End Patch\n") < 0);
	CHECK_MSG(strstr(forge_last_error(), "U+FFFD") && strstr(forge_last_error(), "read_file again"),
		  "%s", forge_last_error());
	got = got_file("l2.txt");
	CHECK_STR(got, "th\xe9 \xe0 la menthe\nna\xefvet\xe9\n");
	free(got);
	/* a UTF-8 file is as it was: written in UTF-8 */
	put("u.txt", "caf\xc3\xa9\n", 6);
	CHECK_MSG(apply_text(&summary, &files, "*** Begin Patch\n*** Update File: u.txt\n"
			     "@@\n-caf\xc3\xa9\n+th\xc3\xa9 \xe2\x82\xac\n*** End Patch\n") == 0, "%s", forge_last_error());
	got = got_file("u.txt");
	CHECK_STR(got, "th\xc3\xa9 \xe2\x82\xac\n");
	free(got);
	CHECK(!strstr(summary, "Latin-1"));
	free(summary);
	jv_free(files);
}

/* A file that starts with a UTF-8 byte-order mark (Windows, .NET) is
 * matched without it and keeps it, and its line ends (before: no pass
 * matched line 1, "\xef\xbb\xbfusing System;" against "using System;",
 * and the error showed two lines that look the same). */
#define BOM "\xef\xbb\xbf"
static void test_apply_keeps_byte_order_mark(void)
{
	fresh();
	/* line 1 removed and added again, then context */
	CHECK_PATCH(BOM "using System;\r\nclass A {}\r\n",
		    "@@\n-using System;\n+using System;\n+using System.IO;\n class A {}\n",
		    BOM "using System;\r\nusing System.IO;\r\nclass A {}\r\n");
	/* line 1 as context, and as @@ context */
	CHECK_PATCH(BOM "using System;\r\nclass A {}\r\n", "@@\n using System;\n-class A {}\n+class B {}\n",
		    BOM "using System;\r\nclass B {}\r\n");
	CHECK_PATCH(BOM "using System;\nclass A {}\n", "@@ using System;\n-class A {}\n+class B {}\n",
		    BOM "using System;\nclass B {}\n");
	/* line 1 replaced outright, without a final newline */
	CHECK_PATCH(BOM "a\r\nb", "@@\n-a\n+c\n", BOM "c\r\nb");
	/* a patch that copied the mark (from read_file) works too: one mark */
	CHECK_PATCH(BOM "using System;\r\nclass A {}\r\n",
		    "@@\n-" BOM "using System;\n+" BOM "using System;\n+using System.IO;\n class A {}\n",
		    BOM "using System;\r\nusing System.IO;\r\nclass A {}\r\n");
	CHECK_PATCH(BOM "using System;\nclass A {}\n", "@@\n " BOM "using System;\n-class A {}\n+class B {}\n",
		    BOM "using System;\nclass B {}\n");
	/* a file without one gets none */
	CHECK_PATCH("a\nb\n", "@@\n-a\n+c\n", "c\nb\n");
}

static void test_edit_keeps_byte_order_mark(void)
{
	char *out = NULL;
	enum patch_fuzz f;
	int n;

	/* the whole-line passes: line 1 with trailing blanks in the model's text */
	CHECK_MSG(patch_edit(&out, &f, &n, BOM "using System;\r\nclass A {}\r\n", "A.cs",
			     "using System;  \nclass A {}", "using System;\nusing System.IO;\nclass A {}",
			     false) == 0, "%s", forge_last_error());
	CHECK_STR(out, BOM "using System;\r\nusing System.IO;\r\nclass A {}\r\n");
	free(out);
	out = NULL;
	/* exact, with and without the mark in `old` and `new`: one mark */
	CHECK(patch_edit(&out, &f, &n, BOM "using System;\nx\n", "A.cs", BOM "using System;",
			 BOM "using System.IO;", false) == 0);
	CHECK_STR(out, BOM "using System.IO;\nx\n");
	free(out);
	out = NULL;
	CHECK(patch_edit(&out, &f, &n, BOM "using System;\nx\n", "A.cs", "using System;", "using IO;",
			 false) == 0);
	CHECK_STR(out, BOM "using IO;\nx\n");
	free(out);
	out = NULL;
	CHECK(patch_edit(&out, &f, &n, BOM "using System;\nx\n", "A.cs", BOM "using System; \nx",
			 BOM "y\nx", false) == 0);
	CHECK_STR(out, BOM "y\nx\n");
	free(out);
	out = NULL;
	/* not found: the closest lines do not show the mark as a difference */
	CHECK(patch_edit(&out, &f, &n, BOM "using System;\nx\n", "A.cs", "using Sistem;\nx", "y",
			 false) < 0);
	CHECK_MSG(!strstr(forge_last_error(), BOM), "%s", forge_last_error());
}

int main(void)
{
	RUN(test_seek_passes);
	RUN(test_seek_prefers_stricter_pass);
	RUN(test_edit_exact_unique);
	RUN(test_edit_ambiguous_and_replace_all);
	RUN(test_edit_rstrip_pass);
	RUN(test_edit_strip_pass_reindents);
	RUN(test_edit_punct_pass);
	RUN(test_edit_no_match_shows_closest);
	RUN(test_edit_keeps_crlf_and_missing_final_newline);
	RUN(test_edit_matches_across_unicode_composition);
	RUN(test_apply_multi);
	RUN(test_apply_move_keeps_mode);
	RUN(test_apply_reindents_loose_match);
	RUN(test_apply_all_or_nothing);
	RUN(test_apply_fuzzy);
	RUN(test_apply_each_pass);
	RUN(test_apply_context_eof_and_insert);
	RUN(test_apply_errors);
	RUN(test_apply_refuses_escapes);
	RUN(test_apply_keeps_missing_final_newline);
	RUN(test_apply_latin1_file);
	RUN(test_apply_keeps_byte_order_mark);
	RUN(test_edit_keeps_byte_order_mark);
	if (scratch[0])
		rm_scratch();
	return unit_done();
}
