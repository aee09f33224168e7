/* project.c - project kind and commands; see project.h. */
#include "data/project.h"
#include "core/buf.h"
#include "data/config.h"
#include "core/forge.h"
#include "core/json.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
	const char *ext;
	const char *lang;
} languages[] = {
	{ ".c", "c" }, { ".h", "c" }, { ".cc", "cpp" }, { ".cpp", "cpp" }, { ".hpp", "cpp" },
	{ ".py", "python" }, { ".js", "javascript" }, { ".mjs", "javascript" }, { ".cjs", "javascript" },
	{ ".ts", "typescript" }, { ".tsx", "typescript" }, { ".go", "go" }, { ".rs", "rust" },
	{ ".sh", "shell" }, { ".bash", "shell" }, { ".bats", "shell" }, { ".rb", "ruby" },
	{ ".java", "java" }, { ".kt", "kotlin" }, { ".swift", "swift" }, { ".php", "php" },
};

const char *project_language(const char *path)
{
	const char *dot = strrchr(path, '.');
	const char *slash = strrchr(path, '/');

	if (!dot || (slash && dot < slash))
		return NULL;
	for (size_t i = 0; i < sizeof languages / sizeof languages[0]; i++)
		if (strcmp(dot, languages[i].ext) == 0)
			return languages[i].lang;
	return NULL;
}

/* Whether root/name is a regular file (through symbolic links): a FIFO a
 * command left under a build file's name does not hide the real one (a
 * FIFO GNUmakefile: the Makefile's command is still found, and fails when
 * make waits on the FIFO, rather than no test command at all). */
static bool exists(const char *root, const char *name)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof path, "%s/%s", root, name);
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Read a small file whole (at most 1 MiB); NULL when absent, larger, or
 * not a regular file: root may be a run's worktree, where a command could
 * have left a FIFO under the name (opening it would wait for ever).  A
 * symbolic link is followed when it ends beneath root (a repository's
 * "Makefile -> build/Makefile"), not out of it. */
static char *slurp(const char *root, const char *name)
{
	char path[4096];
	char *real = NULL, *top = NULL, *text = NULL;
	struct buf b = BUF_INIT;
	size_t n;

	snprintf(path, sizeof path, "%s/%s", root, name);
	if ((real = realpath(path, NULL)) == NULL || (top = realpath(root, NULL)) == NULL)
		goto out;
	n = strlen(top);
	if (strncmp(real, top, n) != 0 || (real[n] != '/' && strcmp(top, "/") != 0))
		goto out;
	if (buf_read_regular(&b, real, 1 << 20) == 0)
		text = buf_detach(&b, NULL);
out:
	buf_release(&b);
	free(real);
	free(top);
	return text;
}

/* A rule for target `name` in a Makefile: a line "name:" or "name other:"
 * ("name::" too), but not an assignment "name := …" / "name ?= …". */
static bool make_target(const char *makefile, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = makefile; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, name, n) != 0 || (p[n] != ':' && p[n] != ' ' && p[n] != '\t'))
			continue;
		const char *q = p + n;
		while (*q && *q != ':' && *q != '=' && *q != '\n')
			q++;
		if (*q == ':' && q[1] != '=')
			return true;
	}
	return false;
}

/* The test script `npm init` writes: it fails whatever the code does, so it
 * is no test command (before: "npm test" ran it, a real failure sent back
 * to implement).  Only npm's exact words: a script of the project's own
 * that fails is still its tests. */
#define NPM_PLACEHOLDER_TEST "echo \"Error: no test specified\" && exit 1"

static bool npm_script(const char *root, const char *script)
{
	char *text = slurp(root, "package.json");
	bool found = false;

	if (!text)
		return false;
	jv pkg = json_parse(text, strlen(text));
	free(text);
	if (jv_is_valid(pkg)) {
		jv scripts = json_get(pkg, "scripts");
		const char *cmd = json_get_str(scripts, script);
		found = cmd && !(strcmp(script, "test") == 0 && strcmp(cmd, NPM_PLACEHOLDER_TEST) == 0);
		jv_free(scripts);
	}
	jv_free(pkg);
	return found;
}

/* Whether the directory dir of root ("" for root itself) holds an entry
 * that match() takes: match(root, dir/NAME or NAME, NAME). */
static bool dir_holds(const char *root, const char *dir, bool (*match)(const char *, const char *, const char *))
{
	char path[4096];
	DIR *d;
	struct dirent *e;
	bool found = false;

	snprintf(path, sizeof path, "%s%s%s", root, *dir ? "/" : "", dir);
	if (!(d = opendir(path)))
		return false;
	while (!found && (e = readdir(d))) {
		char rel[512];

		snprintf(rel, sizeof rel, "%s%s%s", dir, *dir ? "/" : "", e->d_name);
		found = match(root, rel, e->d_name);
	}
	closedir(d);
	return found;
}

static bool bats_file(const char *root, const char *rel, const char *name)
{
	size_t n = strlen(name);

	(void)root;
	(void)rel;
	return n > 5 && strcmp(name + n - 5, ".bats") == 0;
}

static const char *bats_dir(const char *root)
{
	static const char *const dirs[] = { "test", "tests" };

	for (size_t i = 0; i < 2; i++)
		if (dir_holds(root, dirs[i], bats_file))
			return dirs[i];
	return NULL;
}

/* Whether name is a file pytest collects by default: test_*.py or
 * *_test.py, a regular one. */
static bool pytest_file(const char *root, const char *rel, const char *name)
{
	size_t n = strlen(name);

	return n > 3 && strcmp(name + n - 3, ".py") == 0 &&
	       (strncmp(name, "test_", 5) == 0 || (n > 8 && strcmp(name + n - 8, "_test.py") == 0)) &&
	       exists(root, rel);
}

/* Python tests laid out for pytest without a file that names it: a
 * conftest.py at root, or a test_*.py / *_test.py (a regular file) at root
 * or in tests/ or test/ -- a project with a requirements.txt, or none,
 * whose tests were "nothing tested: no test command" (before). */
static bool pytest_layout(const char *root)
{
	static const char *const dirs[] = { "", "tests", "test" };

	if (exists(root, "conftest.py"))
		return true;
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		if (dir_holds(root, dirs[i], pytest_file))
			return true;
	return false;
}

/* The make file make reads at root: GNU make's order, GNUmakefile, makefile,
 * Makefile (before: a lower-case makefile was not seen, its suite "nothing
 * tested"); the first regular one, so a FIFO under a name is passed over.
 * NULL when none. */
static const char *make_file(const char *root)
{
	static const char *const names[] = { "GNUmakefile", "makefile", "Makefile" };

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (exists(root, names[i]))
			return names[i];
	return NULL;
}

static char *detect_test(const char *root)
{
	const char *mkname = make_file(root);
	char *mk = mkname ? slurp(root, mkname) : NULL;

	if (mk) {
		const char *cmd = make_target(mk, "check") ? "make check"
				: make_target(mk, "test") ? "make test" : NULL;
		free(mk);
		if (cmd)
			return xstrdup(cmd);
	}
	if (npm_script(root, "test"))
		return xstrdup("npm test");
	/* every test target, not up to the first that fails: cargo stops
	 * there by default, and the integration tests and doc-tests after it
	 * went uncounted and their failures unseen until a later bounce */
	if (exists(root, "Cargo.toml"))
		return xstrdup("cargo test --no-fail-fast");
	if (exists(root, "go.mod"))
		return xstrdup("go test ./...");
	if (exists(root, "pyproject.toml") || exists(root, "setup.py") || exists(root, "pytest.ini") ||
	    exists(root, "tox.ini") || exists(root, "setup.cfg"))
		return xstrdup("python3 -m pytest");
	/* configured and built first: a fresh worktree has no build/ (it is
	 * not committed), and one left from before holds the old code's tests */
	if (exists(root, "CMakeLists.txt"))
		return xstrdup("cmake -S . -B build && cmake --build build && ctest --test-dir build");
	const char *bats = bats_dir(root);
	if (bats) {
		struct buf b = BUF_INIT;
		buf_addf(&b, "bats %s", bats);
		return buf_detach(&b, NULL);
	}
	/* (last: a build file that runs the tests names how) */
	return pytest_layout(root) ? xstrdup("python3 -m pytest") : NULL;
}

static char *detect_build(const char *root)
{
	if (make_file(root))
		return xstrdup("make");
	if (npm_script(root, "build"))
		return xstrdup("npm run build");
	if (exists(root, "Cargo.toml"))
		return xstrdup("cargo build");
	if (exists(root, "go.mod"))
		return xstrdup("go build ./...");
	if (exists(root, "CMakeLists.txt"))
		return xstrdup("cmake -S . -B build && cmake --build build");
	return NULL;
}

static char *detect(const char *root, const char *which)
{
	if (strcmp(which, "test") == 0)
		return detect_test(root);
	if (strcmp(which, "build") == 0)
		return detect_build(root);
	if (strcmp(which, "lint") == 0 && npm_script(root, "lint"))
		return xstrdup("npm run lint");
	if (strcmp(which, "typecheck") == 0 && npm_script(root, "typecheck"))
		return xstrdup("npm run typecheck");
	return NULL;
}

static const char *configured(const struct config *cfg, const char *which)
{
	char key[64];

	if (!cfg)
		return NULL;
	snprintf(key, sizeof key, "tools.%s_command", which);
	const char *v = config_get_str(cfg, key);
	return v && *v ? v : NULL;
}

char *project_command(const char *root, const struct config *cfg, const char *which)
{
	const char *c = configured(cfg, which);

	return c ? xstrdup(c) : detect(root, which);
}

static void count_languages(jv *langs, const char *root, const char *rel, int depth, size_t *seen)
{
	char path[4096];
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof path, "%s%s%s", root, *rel ? "/" : "", rel);
	if (depth > 12 || !(d = opendir(path)))
		return;
	while ((e = readdir(d)) && *seen < PROJECT_SCAN_MAX) {
		const char *n = e->d_name;
		char sub[4096];

		if (n[0] == '.' || strcmp(n, "node_modules") == 0 || strcmp(n, "build") == 0)
			continue;
		snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", n);
		if (e->d_type == DT_DIR) {
			count_languages(langs, root, sub, depth + 1, seen);
			continue;
		}
		(*seen)++;
		const char *lang = project_language(n);
		if (lang)
			*langs = json_set(*langs, lang, jv_number(json_get_num(*langs, lang, 0) + 1));
	}
	closedir(d);
}

int project_describe(jv *out, const char *root, const struct config *cfg)
{
	static const char *const build_files[] = {
		"Makefile", "GNUmakefile", "makefile", "package.json", "Cargo.toml", "go.mod", "pyproject.toml",
		"setup.py", "CMakeLists.txt", "meson.build", "build.gradle", "pom.xml",
	};
	static const char *const which[] = { "build", "test", "lint", "typecheck" };
	jv files = jv_array(), cmds = jv_object(), sources = jv_object(), langs = jv_object();
	size_t seen = 0;

	if (access(root, R_OK | X_OK) < 0) {
		jv_free(files);
		jv_free(cmds);
		jv_free(sources);
		jv_free(langs);
		return forge_error("cannot read the project at '%s'", root);
	}
	for (size_t i = 0; i < sizeof build_files / sizeof build_files[0]; i++)
		if (exists(root, build_files[i]))
			files = jv_array_append(files, jv_string(build_files[i]));
	for (size_t i = 0; i < 4; i++) {
		const char *c = configured(cfg, which[i]);
		char *d = c ? NULL : detect(root, which[i]);
		cmds = json_set(cmds, which[i], c ? jv_string(c) : json_str_or_null(d));
		sources = json_set(sources, which[i], c ? jv_string("config")
						      : d ? jv_string("detected") : jv_null());
		free(d);
	}
	count_languages(&langs, root, "", 0, &seen);
	*out = json_set(json_set(json_set(json_set(jv_object(), "languages", langs), "build_files", files),
				 "commands", cmds), "sources", sources);
	return 0;
}
