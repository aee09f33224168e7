/* test_project.c - project kind and command detection. */
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "data/project.h"
#include "unit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[] = "/tmp/forge-project-XXXXXX";

static void put(const char *name, const char *text)
{
	char path[512];

	snprintf(path, sizeof path, "%s/%s", root, name);
	char *slash = strrchr(path, '/');
	*slash = '\0';
	mkdir(path, 0755);
	*slash = '/';
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

static void clean(void)
{
	char cmd[600];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'/* '%s'/.[!.]* 2>/dev/null", root, root);
	if (system(cmd) != 0) {
		/* nothing to remove is fine */
	}
}

static void check_test(const char *want)
{
	char *got = project_command(root, NULL, "test");

	if (!want) {
		if (got)
			printf("#   unexpected test command %s\n", got);
		unit_current_failed |= got != NULL;
		free(got);
		return;
	}
	if (!got || strcmp(got, want) != 0) {
		printf("#   test command %s, want %s\n", got ? got : "(none)", want);
		unit_current_failed = 1;
	}
	free(got);
}

static void test_make_check_before_make_test(void)
{
	clean();
	put("Makefile", "all:\n\tcc -o x x.c\ntest: all\n\t./x\ncheck: test\n");
	check_test("make check");
	clean();
	put("Makefile", "CFLAGS := -O2\nall:\n\ttrue\ntest:\n\t./run\n");
	check_test("make test");
	clean();
	put("Makefile", "check := 1\nall:\n\ttrue\n");   /* a variable, not a target */
	check_test(NULL);
}

/* GNU make reads GNUmakefile, makefile, Makefile, the first there is
 * (before: a lower-case makefile was not seen, hunt48 #6); a FIFO under one
 * of the names is passed over. */
static void test_lower_case_makefile(void)
{
	char path[512];

	clean();
	put("makefile", "check:\n\t./t.sh\n");
	check_test("make check");
	char *build = project_command(root, NULL, "build");
	CHECK_STR(build, "make");
	free(build);
	jv d;
	CHECK(project_describe(&d, root, NULL) == 0);
	jv files = json_get(d, "build_files");
	CHECK(jv_get_kind(files) == JV_KIND_ARRAY && jv_array_length(jv_copy(files)) == 1);
	jv f0 = jv_array_get(jv_copy(files), 0);
	CHECK_STR(jv_string_value(f0), "makefile");
	jv_free(f0);
	jv_free(files);
	jv_free(d);
	/* make reads makefile before Makefile, GNUmakefile before both */
	put("Makefile", "test:\n\t./t.sh\n");
	check_test("make check");
	put("GNUmakefile", "all:\n\ttrue\n");
	check_test(NULL);
	/* a FIFO makefile hides neither the Makefile nor opens */
	clean();
	snprintf(path, sizeof path, "%s/makefile", root);
	CHECK(mkfifo(path, 0644) == 0);
	put("Makefile", "test:\n\t./t.sh\n");
	check_test("make test");
}

/* npm init's placeholder "test" script is no test command (before: run,
 * and its exit 1 a real failure, hunt48 #3); only its exact words. */
static void test_npm_placeholder_test(void)
{
	clean();
	put("package.json", "{\"name\":\"x\",\"scripts\":{\"test\":"
			    "\"echo \\\"Error: no test specified\\\" && exit 1\"}}");
	check_test(NULL);
	/* the next detector still has its say */
	put("tests/basic.bats", "@test x { true; }\n");
	check_test("bats tests");
	clean();
	put("package.json", "{\"scripts\":{\"test\":\"echo \\\"Error: no test specified\\\" && exit 1 "
			    "|| node --test\"}}");
	check_test("npm test");
	clean();
	put("package.json", "{\"scripts\":{\"test\":\"echo no tests yet && exit 1\"}}");
	check_test("npm test");
}

static void test_other_ecosystems(void)
{
	clean();
	put("package.json", "{\"scripts\":{\"test\":\"node --test\",\"lint\":\"eslint .\"}}");
	check_test("npm test");
	char *lint = project_command(root, NULL, "lint");
	CHECK_STR(lint, "npm run lint");
	free(lint);
	clean();
	put("package.json", "{\"name\":\"no-tests\"}");
	check_test(NULL);
	clean();
	put("Cargo.toml", "[package]\nname='x'\n");
	check_test("cargo test --no-fail-fast");
	clean();
	put("go.mod", "module x\n");
	check_test("go test ./...");
	clean();
	put("pyproject.toml", "[project]\nname='x'\n");
	check_test("python3 -m pytest");
	/* pytest's own layout without a file naming it (before: no test
	 * command, "nothing tested" for a project with tests) */
	clean();
	put("requirements.txt", "requests\n");
	put("tests/test_calc.py", "def test_x():\n    pass\n");
	check_test("python3 -m pytest");
	clean();
	put("calc_test.py", "def test_x():\n    pass\n");
	check_test("python3 -m pytest");
	clean();
	put("conftest.py", "\n");
	check_test("python3 -m pytest");
	clean();
	put("tests/helpers.py", "\n");
	put("test_data/x.py", "\n");
	put("testing.py", "\n");
	check_test(NULL);
	/* a build file that runs the tests says how */
	clean();
	put("test_calc.py", "def test_x():\n    pass\n");
	put("Makefile", "check:\n\tpython3 -m unittest\n");
	check_test("make check");
	clean();
	put("tests/basic.bats", "@test x { true; }\n");
	check_test("bats tests");
	/* a fresh worktree has no build/: configured and built first (before:
	 * ctest alone, "Failed to change working directory" a real failure) */
	clean();
	put("CMakeLists.txt", "cmake_minimum_required(VERSION 3.13)\nproject(x C)\n");
	check_test("cmake -S . -B build && cmake --build build && ctest --test-dir build");
}

static void test_describe_counts_languages(void)
{
	jv d;

	clean();
	put("Makefile", "check:\n\t./t.sh\n");
	put("src/a.c", "int a;\n");
	put("src/b.c", "int b;\n");
	put("src/a.h", "int a;\n");
	put("t.sh", "true\n");
	put(".git/config", "[core]\n");
	CHECK(project_describe(&d, root, NULL) == 0);
	jv langs = json_get(d, "languages");
	CHECK(json_get_num(langs, "c", 0) == 3);
	CHECK(json_get_num(langs, "shell", 0) == 1);
	jv_free(langs);
	jv cmds = json_get(d, "commands");
	CHECK_STR(json_get_str(cmds, "test"), "make check");
	CHECK_STR(json_get_str(cmds, "build"), "make");
	jv_free(cmds);
	jv src = json_get(d, "sources");
	CHECK_STR(json_get_str(src, "test"), "detected");
	jv_free(src);
	jv_free(d);
	CHECK(project_describe(&d, "/nonexistent/forge", NULL) == -1);
}

/* What a command left in a run's worktree under a build file's name -- a
 * FIFO -- is not opened (before: GNUmakefile a FIFO, forge-test blocked in
 * its open for ever, hunt27 #3): detection goes on past it. */
static void test_fifo_build_files_skipped(void)
{
	char path[512];

	clean();
	snprintf(path, sizeof path, "%s/GNUmakefile", root);
	CHECK(mkfifo(path, 0644) == 0);
	snprintf(path, sizeof path, "%s/package.json", root);
	CHECK(mkfifo(path, 0644) == 0);
	put("tests/basic.bats", "@test x { true; }\n");
	check_test("bats tests");
	char *build = project_command(root, NULL, "build");
	CHECK(build == NULL);
	free(build);
	/* nor does it hide the Makefile beside it */
	put("Makefile", "check:\n\t./t.sh\n");
	check_test("make check");
}

/* A build file that is a symbolic link is read when it ends inside the
 * project ("Makefile -> mk/Makefile"), not when it points out of it. */
static void test_symlinked_build_file(void)
{
	char path[512], out[] = "/tmp/forge-project-out-XXXXXX";

	clean();
	put("mk/Makefile", "check:\n\t./t.sh\n");
	snprintf(path, sizeof path, "%s/Makefile", root);
	CHECK(symlink("mk/Makefile", path) == 0);
	check_test("make check");
	/* out of the project: not read (only its name is known: make test) */
	CHECK(unlink(path) == 0);
	CHECK(mkdtemp(out) != NULL);
	char target[600];
	snprintf(target, sizeof target, "%s/Makefile", out);
	FILE *f = fopen(target, "w");
	CHECK(f != NULL);
	fputs("check:\n\t./t.sh\n", f);
	fclose(f);
	CHECK(symlink(target, path) == 0);
	char *cmd = project_command(root, NULL, "test");
	CHECK(cmd == NULL || strcmp(cmd, "make check") != 0);
	free(cmd);
	unlink(target);
	rmdir(out);
}

/* buf_read_regular: a regular file whole; a FIFO, a symbolic link and a
 * file over the limit refused with their errno, the buffer unchanged. */
static void test_read_regular(void)
{
	char path[512], link[512];
	struct buf b = BUF_INIT;

	clean();
	put("f.txt", "hello\n");
	snprintf(path, sizeof path, "%s/f.txt", root);
	CHECK(buf_read_regular(&b, path, 6) == 0);
	CHECK_STR(b.buf, "hello\n");
	CHECK(buf_read_regular(&b, path, 5) == -1 && errno == EFBIG);
	CHECK_STR(b.buf, "hello\n");
	snprintf(link, sizeof link, "%s/l.txt", root);
	CHECK(symlink(path, link) == 0);
	CHECK(buf_read_regular(&b, link, 100) == -1 && errno == ELOOP);
	/* said as a link (before: "Too many levels of symbolic links", hunt61 #4) */
	CHECK_MSG(strstr(forge_last_error(), "l.txt': it is a symbolic link (not followed)") != NULL, "%s",
		  forge_last_error());
	snprintf(path, sizeof path, "%s/fifo", root);
	CHECK(mkfifo(path, 0644) == 0);
	CHECK(buf_read_regular(&b, path, 100) == -1 && errno == EINVAL);
	CHECK(strstr(forge_last_error(), "not a regular file") != NULL);
	snprintf(path, sizeof path, "%s/none", root);
	CHECK(buf_read_regular(&b, path, 100) == -1 && errno == ENOENT);
	CHECK_STR(b.buf, "hello\n");
	buf_release(&b);
}

static void test_language_by_extension(void)
{
	CHECK_STR(project_language("lib/x.c"), "c");
	CHECK_STR(project_language("a/b/script.sh"), "shell");
	CHECK_STR(project_language("app.test.ts"), "typescript");
	CHECK(project_language("Makefile") == NULL);
	CHECK(project_language("dir.d/file") == NULL);
}

int main(void)
{
	if (!mkdtemp(root))
		return 1;
	RUN(test_make_check_before_make_test);
	RUN(test_other_ecosystems);
	RUN(test_lower_case_makefile);
	RUN(test_npm_placeholder_test);
	RUN(test_describe_counts_languages);
	RUN(test_fifo_build_files_skipped);
	RUN(test_symlinked_build_file);
	RUN(test_read_regular);
	RUN(test_language_by_extension);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	if (system(cmd) != 0)
		return 1;
	return unit_done();
}
