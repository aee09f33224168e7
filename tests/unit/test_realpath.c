/* test_realpath.c - realpath() resolved through /proc/self/fd
 * (lib/core/realpath.h) answers as glibc's does: the same name, the same
 * errno and the same buffer semantics, in three system calls. */
#include "core/realpath.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[PATH_MAX];

/* dir/a/b/file, dir/a/b/exe, dir/lnk -> a/b, dir/flink -> lnk/file,
 * dir/abs -> dir/a (absolute), dir/dangling -> nowhere, dir/loop -> loop,
 * dir/sp ace/x */
static int make_tree(void)
{
	char p[PATH_MAX + 64], q[PATH_MAX + 64];

	snprintf(dir, sizeof dir, "%s/forge-realpath.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	snprintf(p, sizeof p, "%s/a", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/a/b", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/a/b/file", dir);
	close(open(p, O_CREAT | O_WRONLY, 0644));
	snprintf(p, sizeof p, "%s/sp ace", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/sp ace/x", dir);
	close(open(p, O_CREAT | O_WRONLY, 0644));
	snprintf(p, sizeof p, "%s/lnk", dir);
	if (symlink("a/b", p) != 0)
		return -1;
	snprintf(p, sizeof p, "%s/flink", dir);
	if (symlink("lnk/file", p) != 0)
		return -1;
	snprintf(p, sizeof p, "%s/abs", dir);
	snprintf(q, sizeof q, "%s/a", dir);
	if (symlink(q, p) != 0)
		return -1;
	snprintf(p, sizeof p, "%s/dangling", dir);
	if (symlink("nowhere", p) != 0)
		return -1;
	snprintf(p, sizeof p, "%s/loop", dir);
	return symlink("loop", p);
}

/* The wrapper and glibc agree on `path`, given a buffer and not. */
static int same_as_glibc(const char *path)
{
	char mine[PATH_MAX], theirs[PATH_MAX];
	int err_mine, err_theirs;

	errno = 0;
	char *m = __wrap_realpath(path, mine);
	err_mine = errno;
	errno = 0;
	char *t = __real_realpath(path, theirs);
	err_theirs = errno;
	if (!m != !t || (m && strcmp(mine, theirs) != 0) || (!m && err_mine != err_theirs)) {
		printf("# %s: mine %s (%s), glibc's %s (%s)\n", path, m ? mine : "NULL", strerror(err_mine),
		       t ? theirs : "NULL", strerror(err_theirs));
		return 0;
	}
	if (m && m != mine)
		return 0;
	errno = 0;
	m = __wrap_realpath(path, NULL);
	err_mine = errno;
	errno = 0;
	t = __real_realpath(path, NULL);
	err_theirs = errno;
	int same = !m == !t && (m ? strcmp(m, t) == 0 : err_mine == err_theirs);
	free(m);
	free(t);
	return same;
}

static void test_same_answers_as_glibc(void)
{
	static const char *const rel[] = {
		"", "a", "a/", "a/b/file", "a/b/../b/./file", "lnk", "lnk/", "lnk/file", "lnk/..", "lnk/../..",
		"flink", "abs", "abs/b/file", "abs/..", "sp ace/x", "dangling", "loop", "missing", "a/missing",
		"a/missing/..", "a/b/file/", "a/b/file/..", "a/b/file/x", "/", "//", "/.", "/..", "/proc/self",
		"/proc/self/fd/0", "/dev/null", ".", "..",
	};
	char p[PATH_MAX + 64];

	CHECK(make_tree() == 0);
	for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
		snprintf(p, sizeof p, "%s%s%s", rel[i][0] == '/' ? "" : dir, rel[i][0] && rel[i][0] != '/' ? "/" : "", rel[i]);
		CHECK_MSG(same_as_glibc(p), "%s", p);
	}
	/* relative to the working directory, and the working directory itself */
	char cwd[PATH_MAX];
	CHECK(getcwd(cwd, sizeof cwd) != NULL);
	CHECK(chdir(dir) == 0);
	for (size_t i = 0; i < sizeof rel / sizeof *rel; i++)
		CHECK_MSG(same_as_glibc(rel[i]), "./%s", rel[i]);
	CHECK(chdir(cwd) == 0);
	errno = 0;
	CHECK(__wrap_realpath(NULL, NULL) == NULL && errno == EINVAL);
	unit_rmtree(dir);
}

/* The kernel's name, not glibc's walk: a symbolic link resolved, errno left
 * as it was on success; a deleted working directory goes to glibc. */
static void test_success_keeps_errno_and_deleted_falls_back(void)
{
	char out[PATH_MAX], p[PATH_MAX + 64], cwd[PATH_MAX];

	CHECK(make_tree() == 0);
	snprintf(p, sizeof p, "%s/flink", dir);
	errno = ENOTTY;
	CHECK(__wrap_realpath(p, out) == out);
	CHECK(errno == ENOTTY);
	snprintf(p, sizeof p, "%s/a/b/file", dir);
	char *real = __real_realpath(p, NULL);
	CHECK_STR(out, real);
	free(real);

	/* a working directory removed: the kernel says "... (deleted)", glibc ENOENT */
	CHECK(getcwd(cwd, sizeof cwd) != NULL);
	snprintf(p, sizeof p, "%s/gone", dir);
	CHECK(mkdir(p, 0755) == 0 && chdir(p) == 0 && rmdir(p) == 0);
	int same = same_as_glibc(".");
	CHECK(chdir(cwd) == 0);
	CHECK(same);
	unit_rmtree(dir);
}

/* Every program is linked with the wrap: realpath() itself is this one. */
static void test_realpath_is_wrapped(void)
{
	char out[PATH_MAX];

	CHECK(make_tree() == 0);
	char p[PATH_MAX + 64];
	snprintf(p, sizeof p, "%s/lnk/file", dir);
	char *(*volatile rp)(const char *, char *) = realpath;
	CHECK(rp == __wrap_realpath);
	CHECK(realpath(p, out) == out);
	unit_rmtree(dir);
}

int main(void)
{
	RUN(test_same_answers_as_glibc);
	RUN(test_success_keeps_errno_and_deleted_falls_back);
	RUN(test_realpath_is_wrapped);
	return unit_done();
}
