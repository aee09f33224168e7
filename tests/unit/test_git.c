/* test_git.c - unit tests of lib/git (libgit2): real temporary repositories
 * made with the git command line, checked with it too. */
#include "core/buf.h"
#include "core/forge.h"
#include "git/git.h"
#include "core/json.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];

/* A call that must succeed (return 0), showing forge's message when not. */
#define CHECK_OK(expr) CHECK_MSG((expr) == 0, "%s", forge_last_error())
static int repo_seq;

/* Run a shell command built from fmt; its exit status. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	struct buf cmd = BUF_INIT;
	va_list ap;
	int st;

	va_start(ap, fmt);
	buf_vaddf(&cmd, fmt, ap);
	va_end(ap);
	st = system(cmd.buf);
	buf_release(&cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The output of a shell command (stderr dropped), trailing newlines cut;
 * the last 8 results stay valid. */
static const char *out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *out(const char *fmt, ...)
{
	static struct buf results[8];
	static unsigned next;
	struct buf *r = &results[next++ % 8];
	struct buf cmd = BUF_INIT;
	char chunk[4096];
	size_t n;
	FILE *p;
	va_list ap;

	buf_release(r);
	buf_init(r, 0);
	va_start(ap, fmt);
	buf_vaddf(&cmd, fmt, ap);
	va_end(ap);
	buf_adds(&cmd, " 2>/dev/null");
	p = popen(cmd.buf, "r");
	if (p) {
		while ((n = fread(chunk, 1, sizeof chunk, p)) > 0)
			buf_add(r, chunk, n);
		pclose(p);
	}
	while (r->len > 0 && r->buf[r->len - 1] == '\n')
		r->buf[--r->len] = '\0';
	buf_release(&cmd);
	return r->buf;
}

/* A fresh directory name under tmpdir (not created); the last 4 stay valid. */
static const char *fresh(const char *what)
{
	static char paths[4][512];
	static unsigned next;
	char *p = paths[next++ % 4];

	snprintf(p, sizeof paths[0], "%s/%s%d", tmpdir, what, ++repo_seq);
	return p;
}

/* A repository on main with two commits (README, a.txt, gone.txt; tag v1 at
 * the first). */
static const char *make_repo(void)
{
	const char *dir = fresh("repo");

	if (sh("set -e; git init -q -b main '%s'; cd '%s'; echo hello >README;"
	       "printf 'one\\ntwo\\nthree\\n' >a.txt; git add .; git commit -q -m first; git tag v1;"
	       "echo bye >gone.txt; git add gone.txt; git commit -q -m second", dir, dir) != 0)
		return NULL;
	return dir;
}

static void write_file(const char *dir, const char *name, const char *text)
{
	sh("mkdir -p \"$(dirname '%s/%s')\" && printf '%%s' '%s' >'%s/%s'", dir, name, text, dir, name);
}

/* What must not change in the user's checkout. */
static char *checkout_snapshot(const char *dir)
{
	struct buf b = BUF_INIT;

	buf_addf(&b, "HEAD=%s\n", out("git -C '%s' rev-parse HEAD", dir));
	buf_addf(&b, "ref=%s\n", out("git -C '%s' symbolic-ref HEAD", dir));
	buf_addf(&b, "status=%s\n", out("git -C '%s' status --porcelain", dir));
	buf_addf(&b, "cached=%s\n", out("git -C '%s' diff --cached", dir));
	buf_addf(&b, "diff=%s\n", out("git -C '%s' diff", dir));
	buf_addf(&b, "files=%s\n", out("cd '%s' && find . -path ./.git -prune -o -path ./.forge "
				       "-prune -o -type f -print | sort | xargs cat", dir));
	return buf_detach(&b, NULL);
}

static bool contains(const char *hay, const char *needle)
{
	return hay && strstr(hay, needle) != NULL;
}

/* The field of the array element whose "path" is path, as a new jv. */
static jv entry_of(jv arr, const char *path)
{
	jv found = jv_null();

	jv_array_foreach(arr, i, e) {
		(void)i;
		const char *p = json_get_str(e, "path");

		if (p && strcmp(p, path) == 0 && json_is(found, JV_KIND_NULL)) {
			jv_free(found);
			found = jv_copy(e);
		}
		jv_free(e);
	}
	return found;
}

static const char *str_of(jv arr, const char *path, const char *key)
{
	static char value[256];
	jv e = entry_of(arr, path);
	const char *s = json_get_str(e, key);

	snprintf(value, sizeof value, "%s", s ? s : "(none)");
	jv_free(e);
	return value;
}

static double num_of(jv arr, const char *path, const char *key)
{
	jv e = entry_of(arr, path);
	double v = json_get_num(e, key, -1);

	jv_free(e);
	return v;
}

static void test_open_errors(void)
{
	struct forge_git *g = NULL;
	const char *plain = fresh("plain"), *bare = fresh("bare");

	CHECK(sh("mkdir -p '%s' && git init -q --bare '%s'", plain, bare) == 0);
	CHECK_INT(forge_git_open(&g, plain), -1);
	CHECK(g == NULL);
	CHECK_MSG(contains(forge_last_error(), "is not in a git repository"), "%s",
		  forge_last_error());
	CHECK_INT(forge_git_open(&g, bare), -1);
	CHECK_MSG(contains(forge_last_error(), "is a bare repository"), "%s", forge_last_error());
	CHECK_INT(forge_git_open(&g, "/nonexistent/forge/path"), -1);
	CHECK(contains(forge_last_error(), "/nonexistent/forge/path"));
	forge_git_free(NULL);
	forge_git_worktree_free(NULL);
}

/* A repository opened with the process's table of open files full
 * (ulimit -n): said so, not "is not in a git repository" (hunt65 #6). */
static void test_open_out_of_files(void)
{
	struct forge_git *g = NULL;
	const char *dir = make_repo();
	struct rlimit was, low;
	int fds[64], n = 0;

	CHECK(dir != NULL);
	CHECK(getrlimit(RLIMIT_NOFILE, &was) == 0);
	low = was;
	low.rlim_cur = 64;
	CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
	while (n < 64 && (fds[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		n++;
	CHECK(n < 64 && errno == EMFILE);
	int rc = forge_git_open(&g, dir);
	char *msg = xstrdup(forge_last_error());

	while (n > 0)
		close(fds[--n]);
	CHECK(setrlimit(RLIMIT_NOFILE, &was) == 0);
	CHECK_INT(rc, -1);
	CHECK(g == NULL);
	CHECK_MSG(contains(msg, "cannot open the git repository of '") &&
		  contains(msg, "; too many open files: this process may have 64 open at once (ulimit -n, "
			   "RLIMIT_NOFILE): raise the limit and try again") &&
		  !contains(msg, "is not in a git repository"), "%s", msg);
	free(msg);
	forge_git_free(g);
}

/* read_blob: git show REV:PATH without a process. */
static void test_read_blob(void)
{
	struct forge_git *g = NULL;
	struct buf b = BUF_INIT;
	const char *dir = make_repo();

	CHECK(dir && sh("set -e; cd '%s'; mkdir -p sub; printf 'deep\\n' >sub/x.c; ln -s x.c sub/l.sh;"
			"git add sub; git commit -q -m third", dir) == 0);
	CHECK_INT(forge_git_open(&g, dir), 0);
	CHECK_INT(forge_git_read_blob(&b, g, "HEAD", "sub/x.c"), 0);
	CHECK_STR(b.buf, "deep\n");
	buf_reset(&b);
	CHECK_INT(forge_git_read_blob(&b, g, "v1", "a.txt"), 0);
	CHECK_STR(b.buf, "one\ntwo\nthree\n");
	buf_reset(&b);
	CHECK_INT(forge_git_read_blob(&b, g, "v1", "gone.txt"), -1);      /* added after v1 */
	CHECK_MSG(contains(forge_last_error(), "gone.txt"), "%s", forge_last_error());
	CHECK_INT(forge_git_read_blob(&b, g, "HEAD", "sub"), -1);         /* a directory */
	CHECK_MSG(contains(forge_last_error(), "is not a file"), "%s", forge_last_error());
	/* a symbolic link: its blob is "x.c", no file's content (hunt61 #4) */
	CHECK_INT(forge_git_read_blob(&b, g, "HEAD", "sub/l.sh"), -2);
	CHECK_MSG(contains(forge_last_error(), "'sub/l.sh' is a symbolic link in 'HEAD', not a file"), "%s",
		  forge_last_error());
	CHECK_INT(forge_git_read_blob(&b, g, "no-such-ref", "a.txt"), -1);
	CHECK_MSG(contains(forge_last_error(), "no-such-ref"), "%s", forge_last_error());
	CHECK_INT((int)b.len, 0);
	buf_release(&b);
	forge_git_free(g);
}

static void test_open_from_anywhere(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL, *g2 = NULL, *g3 = NULL;
	struct forge_git_worktree *wt = NULL;
	char *sha = NULL;
	struct buf sub = BUF_INIT;

	CHECK(repo);
	buf_addf(&sub, "%s/deep/er", repo);
	CHECK(sh("mkdir -p '%s'", sub.buf) == 0);
	CHECK_OK(forge_git_open(&g, sub.buf));
	CHECK_STR(forge_git_root(g), out("cd '%s' && pwd -P", repo));
	CHECK_OK(forge_git_worktree_open(&wt, g, "T1", NULL));
	CHECK_OK(forge_git_open(&g2, forge_git_worktree_path(wt)));
	CHECK_STR(forge_git_root(g2), forge_git_root(g));
	CHECK(sh("git -C '%s' worktree add -q ../other%d -b other", repo, repo_seq) == 0);
	CHECK_OK(forge_git_open(&g3, out("echo '%s'/../other%d", repo, repo_seq)));
	CHECK_STR(forge_git_root(g3), forge_git_root(g));
	CHECK_OK(forge_git_resolve(&sha, g, "v1"));
	CHECK_STR(sha, out("git -C '%s' rev-parse v1^{commit}", repo));
	free(sha);
	sha = NULL;
	CHECK_INT(forge_git_resolve(&sha, g, "no-such-thing"), -1);
	CHECK(contains(forge_last_error(), "cannot resolve 'no-such-thing'"));
	forge_git_worktree_free(wt);
	forge_git_free(g3);
	forge_git_free(g2);
	forge_git_free(g);
	buf_release(&sub);
}

/* forge_git_has_object: a commit there; one that nothing refers to once
 * git has pruned it (what a resume of a run forge gc removed then finds,
 * hunt68 #3c); not an object id. */
static void test_has_object(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	char *gone = NULL;

	CHECK(repo);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_INT(forge_git_has_object(g, out("git -C '%s' rev-parse v1^{commit}", repo)), 1);
	CHECK(sh("git -C '%s' commit -q --allow-empty -m lost && git -C '%s' reset -q --hard HEAD~1", repo,
		 repo) == 0);
	gone = xstrdup(out("git -C '%s' rev-parse HEAD@{1}", repo));
	CHECK_INT(forge_git_has_object(g, gone), 1);
	CHECK(sh("git -C '%s' reflog expire --expire=now --all && git -C '%s' gc -q --prune=now", repo, repo) == 0);
	forge_git_free(g);
	g = NULL;
	CHECK_OK(forge_git_open(&g, repo));     /* (libgit2 caches the packs it read) */
	CHECK_INT(forge_git_has_object(g, gone), 0);
	CHECK_INT(forge_git_has_object(g, "HEAD"), -1);
	CHECK(contains(forge_last_error(), "'HEAD' is not an object id"));
	free(gone);
	forge_git_free(g);
}

/* A repository whose main working tree git does not know -- a bare one with
 * linked worktrees, a --separate-git-dir one's linked worktree -- has the
 * checkout as its root: .forge is there, the runs' worktrees in its own git
 * directory (forge/root names the checkout), and a run's worktree opens
 * back to it (hunt45 #1: before, the root was the directory holding the
 * git directory, outside any checkout). */
static void test_open_without_main_tree(void)
{
	const char *src = make_repo(), *proj = fresh("proj"), *sep = fresh("sep");
	struct forge_git *g = NULL, *g2 = NULL;
	struct forge_git_worktree *wt = NULL;
	char real[4096], *root = NULL;
	struct buf p = BUF_INIT;

	CHECK(src);
	CHECK(sh("set -e; mkdir -p '%s'; git clone -q --bare '%s' '%s/repo.git';"
		 "git -C '%s/repo.git' worktree add -q '%s/main' main", proj, src, proj, proj, proj) == 0);
	snprintf(real, sizeof real, "%s", out("cd '%s/main' && pwd -P", proj));
	CHECK_OK(forge_git_open(&g, real));
	CHECK_STR(forge_git_root(g), real);
	CHECK_STR(forge_git_checkout(g), real);
	CHECK_INT(forge_git_find_root(&root, real), -1);        /* libgit2 decides */
	CHECK_OK(forge_git_worktree_open(&wt, g, "B1", NULL));
	/* in the worktrees base, in a runs dir of this checkout's own, whose
	 * root file names it */
	buf_addf(&p, "%s/B1", forge_git_runs_dir(g));
	CHECK_STR(forge_git_worktree_path(wt), p.buf);
	CHECK_STR(out("dirname '%s'", forge_git_runs_dir(g)), out("cd \"$FORGE_WORKTREES\" && pwd -P"));
	CHECK_STR(out("basename '%s' | sed 's/-[0-9a-f]\\{16\\}$/-HEX/'", forge_git_runs_dir(g)), "main-HEX");
	CHECK_STR(out("cat '%s/root'", forge_git_runs_dir(g)), real);
	CHECK_STR(out("git -C '%s' rev-parse --git-common-dir", p.buf), out("cd '%s/repo.git' && pwd -P", proj));
	CHECK_STR(out("git -C '%s' rev-parse --abbrev-ref HEAD", p.buf), "forge/B1");
	CHECK_OK(forge_git_open(&g2, p.buf));
	CHECK_STR(forge_git_root(g2), real);
	CHECK_STR(forge_git_checkout(g2), real);
	CHECK_STR(out("ls -A '%s'", proj), "main\nrepo.git");
	forge_git_free(g2);
	g2 = NULL;
	forge_git_worktree_free(wt);
	wt = NULL;
	forge_git_free(g);
	g = NULL;

	/* a bare repository kept as .git (core.bare true) is no main tree either */
	CHECK(sh("set -e; mkdir -p '%s/b'; git clone -q --bare '%s' '%s/b/.git';"
		 "git -C '%s/b/.git' worktree add -q '%s/b/wt' main", proj, src, proj, proj, proj) == 0);
	CHECK_OK(forge_git_open(&g, out("echo '%s/b/wt'", proj)));
	CHECK_STR(forge_git_root(g), out("cd '%s/b/wt' && pwd -P", proj));
	forge_git_free(g);
	g = NULL;

	/* --separate-git-dir: its linked worktree is its own root; the main tree is
	 * the root of its own runs' worktrees */
	CHECK(sh("set -e; mkdir -p '%s/gitdirs'; git init -q -b main --separate-git-dir '%s/gitdirs/s.git' '%s/main';"
		 "cd '%s/main'; echo a >a; git add a; git commit -q -m a; git worktree add -q ../wt -b other",
		 sep, sep, sep, sep) == 0);
	snprintf(real, sizeof real, "%s", out("cd '%s/wt' && pwd -P", sep));
	CHECK_OK(forge_git_open(&g, real));
	CHECK_STR(forge_git_root(g), real);
	CHECK_OK(forge_git_worktree_open(&wt, g, "S1", NULL));
	CHECK_OK(forge_git_open(&g2, forge_git_worktree_path(wt)));
	CHECK_STR(forge_git_root(g2), real);
	CHECK_STR(out("ls -A '%s/gitdirs'", sep), "s.git");
	forge_git_free(g2);
	g2 = NULL;
	forge_git_worktree_free(wt);
	wt = NULL;
	forge_git_free(g);
	g = NULL;
	snprintf(real, sizeof real, "%s", out("cd '%s/main' && pwd -P", sep));
	CHECK_OK(forge_git_open(&g, real));
	CHECK_STR(forge_git_root(g), real);
	CHECK_OK(forge_git_worktree_open(&wt, g, "S2", NULL));
	CHECK_OK(forge_git_open(&g2, forge_git_worktree_path(wt)));
	CHECK_STR(forge_git_root(g2), real);
	CHECK_STR(forge_git_checkout(g2), real);
	forge_git_free(g2);
	forge_git_worktree_free(wt);
	forge_git_free(g);
	buf_release(&p);
}

/* git's ownership rule (safe.directory): another user's repository is
 * refused with the command that trusts it, and opened when the global
 * configuration names it or says '*' (hunt45 #3: libgit2 1.5 ignored '*'
 * and said "config value 'safe.directory' was not found"). */
static void test_open_other_owner(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	struct buf want = BUF_INIT;
	char real[4096];
	jv files = jv_null();
	size_t total;

	if (geteuid() != 0)
		SKIP("needs root to give the repository to another user");
	CHECK(repo);
	snprintf(real, sizeof real, "%s", out("cd '%s' && pwd -P", repo));
	CHECK(sh("chown -R 65534:65534 '%s'", real) == 0);
	CHECK(forge_git_open(&g, real) < 0);
	buf_addf(&want, "the repository at '%s' is owned by another user (uid 65534); if you trust it, "
		 "run `git config --global --add safe.directory %s`", real, real);
	CHECK_STR(forge_last_error(), want.buf);
	CHECK_INT(forge_git_tracked_files(&files, &total, real, 10), -1);
	CHECK_STR(forge_last_error(), want.buf);
	/* named exactly, or '*', in the global configuration: as git takes it */
	CHECK(sh("git config --global --add safe.directory '%s'", real) == 0);
	CHECK_OK(forge_git_open(&g, real));
	forge_git_free(g);
	g = NULL;
	CHECK(sh("git config --global --unset-all safe.directory; git config --global --add safe.directory '*'") == 0);
	CHECK_OK(forge_git_open(&g, out("echo '%s/.'", real)));
	CHECK_STR(forge_git_root(g), real);
	forge_git_free(g);
	g = NULL;
	CHECK_OK(forge_git_tracked_files(&files, &total, real, 10));
	jv_free(files);
	files = jv_null();
	/* what git refuses too: a trailing slash, '*' cleared by an empty value,
	 * the repository's own configuration */
	CHECK(sh("git config --global --add safe.directory ''") == 0);
	CHECK(forge_git_open(&g, real) < 0);
	CHECK(sh("git config --global --unset-all safe.directory; git config --global --add safe.directory '%s/'",
		 real) == 0);
	CHECK(forge_git_open(&g, real) < 0);
	CHECK(sh("git config --global --unset-all safe.directory; git config -f '%s/.git/config' safe.directory '*'",
		 real) == 0);
	CHECK(forge_git_open(&g, real) < 0);
	CHECK_STR(forge_last_error(), want.buf);
	CHECK(g == NULL);
	CHECK(sh("chown -R 0:0 '%s'", real) == 0);
	buf_release(&want);
}

/* forge_git_tracked_files: the index of the repository at dir itself (a
 * linked worktree's own), at most max paths, the entry count. */
static void test_tracked_files(void)
{
	const char *repo = make_repo();
	jv files;
	size_t total;
	char *s;

	CHECK(repo);
	CHECK_OK(forge_git_tracked_files(&files, &total, repo, 100));
	s = json_dumps(files, false);
	CHECK_STR(s, "[\"README\",\"a.txt\",\"gone.txt\"]");
	free(s);
	CHECK_INT((int)total, 3);
	CHECK_OK(forge_git_tracked_files(&files, &total, repo, 2));
	s = json_dumps(files, false);
	CHECK_STR(s, "[\"README\",\"a.txt\"]");
	free(s);
	CHECK_INT((int)total, 3);
	CHECK(sh("set -e; git -C '%s' worktree add -q ../tracked%d -b tracked; cd '%s'/../tracked%d;"
		 "echo new >new.txt; git add new.txt", repo, repo_seq, repo, repo_seq) == 0);
	CHECK_OK(forge_git_tracked_files(&files, &total, out("echo '%s'/../tracked%d", repo, repo_seq), 100));
	s = json_dumps(files, false);
	CHECK_STR(s, "[\"README\",\"a.txt\",\"gone.txt\",\"new.txt\"]");
	free(s);
	CHECK_INT(forge_git_tracked_files(&files, &total, tmpdir, 100), -1);
	CHECK(jv_get_kind(files) == JV_KIND_NULL);
	CHECK_MSG(contains(forge_last_error(), "cannot read the index of"), "%s", forge_last_error());
	s = forge_git_library_version();
	int maj = -1, min = -1, rev = -1;
	CHECK(s && sscanf(s, "%d.%d.%d", &maj, &min, &rev) == 3 && maj >= 1);
	free(s);
}

/* forge_git_find_root: without libgit2, the root forge_git_open finds. */
static void test_find_root(void)
{
	const char *repo = make_repo(), *plain = fresh("plain"), *bare = fresh("bare");
	const char *sub_repo = fresh("sub");
	char real[4096], *root = NULL;
	struct buf p = BUF_INIT;
	struct stat a, b;

	CHECK(repo);
	snprintf(real, sizeof real, "%s", out("cd '%s' && pwd -P", repo));
	/* the root, a subdirectory */
	CHECK_INT(forge_git_find_root(&root, real), 1);
	CHECK_STR(root, real);
	free(root);
	buf_addf(&p, "%s/deep/er", real);
	CHECK(sh("mkdir -p '%s'", p.buf) == 0);
	CHECK_INT(forge_git_find_root(&root, p.buf), 1);
	CHECK_STR(root, real);
	free(root);
	/* a linked worktree (a .git file), and a directory in it */
	CHECK(sh("git -C '%s' worktree add -q '%s/wt' -b wt", real, real) == 0);
	buf_reset(&p);
	buf_addf(&p, "%s/wt", real);
	CHECK_INT(forge_git_find_root(&root, p.buf), 1);
	CHECK_STR(root, real);
	free(root);
	CHECK(sh("mkdir -p '%s/wt/x/y'", real) == 0);
	buf_adds(&p, "/x/y");
	CHECK_INT(forge_git_find_root(&root, p.buf), 1);
	CHECK_STR(root, real);
	free(root);
	/* GIT_DIR is not read (forge_git_open does not read it either) */
	setenv("GIT_DIR", "/nonexistent", 1);
	CHECK_INT(forge_git_find_root(&root, real), 1);
	unsetenv("GIT_DIR");
	CHECK_STR(root, real);
	free(root);
	/* not in a repository: 0, a file system boundary on the way or not */
	CHECK(sh("mkdir -p '%s'", plain) == 0);
	CHECK_INT(forge_git_find_root(&root, out("cd '%s' && pwd -P", plain)), 0);
	CHECK(root == NULL);
	/* a directory on a mount of its own (/dev/shm, a tmpfs under /dev):
	 * 0 without libgit2, which stops at the boundary too */
	char shm[] = "/dev/shm/forge-find-root.XXXXXX";

	if (stat("/dev/shm", &a) == 0 && stat("/dev", &b) == 0 && a.st_dev != b.st_dev && mkdtemp(shm)) {
		struct forge_git *g = NULL;

		CHECK_INT(forge_git_find_root(&root, shm), 0);
		CHECK(root == NULL);
		CHECK(forge_git_open(&g, shm) < 0);
		forge_git_free(g);
		rmdir(shm);
	}
	/* libgit2 decides: a bare repository, inside .git, a relative path, a .git
	 * file without commondir (as in a submodule), core.bare set */
	CHECK(sh("git init -q --bare '%s'", bare) == 0);
	CHECK_INT(forge_git_find_root(&root, out("cd '%s' && pwd -P", bare)), -1);
	buf_reset(&p);
	buf_addf(&p, "%s/.git/refs", real);
	CHECK_INT(forge_git_find_root(&root, p.buf), -1);
	CHECK_INT(forge_git_find_root(&root, "relative/dir"), -1);
	CHECK(sh("mkdir -p '%s' && printf 'gitdir: %s/.git\n' >'%s/.git'", sub_repo, real, sub_repo) == 0);
	CHECK_INT(forge_git_find_root(&root, out("cd '%s' && pwd -P", sub_repo)), -1);
	CHECK(sh("git -C '%s' config core.bare true", real) == 0);
	CHECK_INT(forge_git_find_root(&root, real), -1);
	CHECK(sh("git -C '%s' config core.bare false", real) == 0);
	CHECK_INT(forge_git_find_root(&root, real), 1);
	free(root);
	buf_release(&p);
}

static void test_trace_names(void)
{
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	const char *repo = make_repo();

	CHECK(forge_git_trace_valid("01JDB2ABCDEF"));
	CHECK(forge_git_trace_valid("run_1-a"));
	/* what state.schema.json's trace_id allows */
	CHECK(forge_git_trace_valid("-a"));
	CHECK(forge_git_trace_valid("JIRA-12.1"));
	CHECK(forge_git_trace_valid("rel:1"));
	CHECK(forge_git_trace_valid(".."));
	CHECK(!forge_git_trace_valid(""));
	CHECK(!forge_git_trace_valid(NULL));
	CHECK(!forge_git_trace_valid("../x"));
	CHECK(!forge_git_trace_valid("a/b"));
	CHECK(!forge_git_trace_valid("a b"));
	CHECK(!forge_git_trace_valid("a\xc3\xa9"));
	CHECK(repo);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_INT(forge_git_worktree_open(&wt, g, "../evil", NULL), -1);
	CHECK(wt == NULL);
	CHECK(contains(forge_last_error(), "not a trace id"));
	CHECK_INT(forge_git_worktree_remove(g, "a/b", 0), -1);
	forge_git_free(g);
}

/* Every trace id the schema allows names a run in git: ULIDs and plain
 * ids keep their names; others get a safe one, each its own. */
static void test_run_names(void)
{
	static const char *const odd[] = { "JIRA-12.1", "JIRA-12:1", "rel:1", "a.b", "-a", "..", ":",
					   "x.lock", "a..b", ".hidden" };
	char name[FORGE_GIT_RUN_NAME_SIZE], again[FORGE_GIT_RUN_NAME_SIZE], seen[16][FORGE_GIT_RUN_NAME_SIZE];
	char long_id[FORGE_GIT_TRACE_MAX + 2];
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	const char *repo = make_repo();
	size_t n = 0;

	CHECK_OK(forge_git_run_name(name, "01JDB2ABCDEFGHJKMNPQRSTVWX"));
	CHECK_STR(name, "01JDB2ABCDEFGHJKMNPQRSTVWX");
	CHECK_OK(forge_git_run_name(name, "run_1-a"));
	CHECK_STR(name, "run_1-a");
	CHECK_INT(forge_git_run_name(name, "a/b"), -1);
	CHECK_INT(forge_git_run_name(name, NULL), -1);
	for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
		CHECK_OK(forge_git_run_name(name, odd[i]));
		CHECK_MSG(strcmp(name, odd[i]) != 0, "%s", odd[i]);
		CHECK_MSG(forge_git_run_name_valid(name), "%s -> %s", odd[i], name);
		CHECK(!strstr(name, "..") && !strchr(name, ':') && name[0] != '.' && name[0] != '-');
		CHECK_OK(forge_git_run_name(again, name));     /* a name is its own name */
		CHECK_STR(again, name);
		CHECK_OK(forge_git_run_name(again, odd[i]));   /* the same every time */
		CHECK_STR(again, name);
		for (size_t k = 0; k < n; k++)
			CHECK_MSG(strcmp(seen[k], name) != 0, "%s", name);
		snprintf(seen[n++], sizeof seen[0], "%s", name);
	}
	for (size_t k = 0; k < n; k++)  /* the plain id its unsafe characters become */
		CHECK_MSG(strcmp(seen[k], "JIRA-12_1") != 0, "%s", seen[k]);
	/* the longest ids: a plain one of 101 to 128 characters is mapped too */
	memset(long_id, 'r', FORGE_GIT_TRACE_MAX);
	long_id[FORGE_GIT_TRACE_MAX] = '\0';
	CHECK_OK(forge_git_run_name(name, long_id));
	CHECK(strlen(name) < FORGE_GIT_RUN_NAME_SIZE && strncmp(name, long_id, 64) == 0 && name[64] == '.');
	long_id[100] = '\0';
	CHECK_OK(forge_git_run_name(name, long_id));
	CHECK_STR(name, long_id);
	memset(long_id, 'r', FORGE_GIT_TRACE_MAX + 1);
	long_id[FORGE_GIT_TRACE_MAX + 1] = '\0';
	CHECK_INT(forge_git_run_name(name, long_id), -1);
	CHECK(!forge_git_run_name_valid("a.b") && !forge_git_run_name_valid("../x") && !forge_git_run_name_valid(""));

	/* a worktree, its branch and refs under that name; reopened by it */
	CHECK(repo);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_run_name(name, "JIRA-12.1"));
	CHECK_OK(forge_git_worktree_open(&wt, g, "JIRA-12.1", NULL));
	CHECK(contains(forge_git_worktree_path(wt), name));
	CHECK(strncmp(forge_git_worktree_branch(wt), "forge/", 6) == 0);
	CHECK_STR(forge_git_worktree_branch(wt) + 6, name);
	CHECK_STR(forge_git_worktree_trace(wt), "JIRA-12.1");
	CHECK(sh("git -C '%s' rev-parse -q --verify 'refs/forge/%s/base' >/dev/null", repo, name) == 0);
	forge_git_worktree_free(wt);
	wt = NULL;
	CHECK_OK(forge_git_worktree_open(&wt, g, name, NULL));
	CHECK(forge_git_worktree_reopened(wt));
	forge_git_worktree_free(wt);
	wt = NULL;
	jv list = jv_invalid();
	CHECK_OK(forge_git_worktree_list(&list, g, "JIRA-12.1"));
	CHECK_INT(jv_array_length(jv_copy(list)), 1);
	jv first = jv_array_get(jv_copy(list), 0);
	CHECK_STR(json_get_str(first, "name"), name);
	jv_free(first);
	jv_free(list);
	CHECK_OK(forge_git_run_refs(&list, g, "JIRA-12.1"));
	CHECK_INT(jv_array_length(jv_copy(list)), 2);
	jv_free(list);
	CHECK_OK(forge_git_worktree_remove(g, "JIRA-12.1", FORGE_GIT_REMOVE_FORCE | FORGE_GIT_REMOVE_BRANCH));
	CHECK_OK(forge_git_run_refs(&list, g, "JIRA-12.1"));
	CHECK_INT(jv_array_length(jv_copy(list)), 0);
	jv_free(list);
	forge_git_free(g);
}

/*
 * Runs started at once make their worktrees at once: twelve processes,
 * each its own trace, all succeed (libgit2 took a half-made sibling for a
 * checked-out branch before worktrees were made under a lock).
 */
static void test_worktrees_at_once(void)
{
	enum { N = 12 };
	const char *repo = make_repo();
	pid_t pids[N];
	int ok = 0;

	CHECK(repo);
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			struct forge_git *g = NULL;
			struct forge_git_worktree *wt = NULL;
			char trace[16];

			snprintf(trace, sizeof trace, "P%d", i);
			int rc = forge_git_open(&g, repo) == 0 && forge_git_worktree_open(&wt, g, trace, NULL) == 0;
			if (!rc)
				fprintf(stderr, "# %s: %s\n", trace, forge_last_error());
			_exit(rc ? 0 : 1);
		}
	}
	for (int i = 0; i < N; i++) {
		int st;

		if (pids[i] > 0 && waitpid(pids[i], &st, 0) == pids[i] && WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
	}
	CHECK_INT(ok, N);
	CHECK_STR(out("git -C '%s' worktree list | grep -c 'forge/P'", repo), "12");
}

static void test_worktree_create(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL, *wt2 = NULL, *wt3 = NULL;
	char *before = NULL, *after = NULL, *head = NULL;

	CHECK(repo);
	/* The user is mid-work: a local change and an untracked file. */
	write_file(repo, "README", "local edit\n");
	write_file(repo, "scratch.txt", "mine\n");
	before = checkout_snapshot(repo);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_worktree_open(&wt, g, "T1", NULL));
	CHECK(!forge_git_worktree_reopened(wt));
	CHECK_STR(forge_git_worktree_branch(wt), "forge/T1");
	CHECK_STR(forge_git_worktree_trace(wt), "T1");
	/* out of the checkout, where the project's test runners never look:
	 * $FORGE_WORKTREES/KEY/T1, its root file naming the checkout */
	CHECK_STR(out("dirname \"$(dirname '%s')\"", forge_git_worktree_path(wt)),
		  out("cd \"$FORGE_WORKTREES\" && pwd -P"));
	CHECK_STR(out("basename '%s'", forge_git_worktree_path(wt)), "T1");
	CHECK_STR(out("cat \"$(dirname '%s')/root\"", forge_git_worktree_path(wt)), out("cd '%s' && pwd -P", repo));
	CHECK_STR(out("cd '%s' && find . -name README -print", repo), "./README");
	CHECK_STR(forge_git_worktree_base(wt), out("git -C '%s' rev-parse main", repo));
	CHECK_STR(out("git -C '%s' symbolic-ref HEAD", forge_git_worktree_path(wt)),
		  "refs/heads/forge/T1");
	CHECK_STR(out("git -C '%s' rev-parse refs/forge/T1/base", repo), forge_git_worktree_base(wt));
	/* The worktree has the committed files, not the user's local ones. */
	CHECK_STR(out("cat '%s/README'", forge_git_worktree_path(wt)), "hello");
	CHECK_INT(access(out("echo '%s/scratch.txt'", forge_git_worktree_path(wt)), F_OK), -1);
	CHECK_STR(out("grep -c -x -e '[*].db' -e '/worktrees/' '%s/.forge/.gitignore'", repo), "2");
	CHECK_OK(forge_git_worktree_head(&head, wt));
	CHECK_STR(head, forge_git_worktree_base(wt));
	/* From a tag and from a SHA. */
	CHECK_OK(forge_git_worktree_open(&wt2, g, "T2", "v1"));
	CHECK_STR(forge_git_worktree_base(wt2), out("git -C '%s' rev-parse v1^{commit}", repo));
	CHECK_INT(access(out("echo '%s/gone.txt'", forge_git_worktree_path(wt2)), F_OK), -1);
	CHECK_OK(forge_git_worktree_open(&wt3, g, "T3",
					  out("git -C '%s' rev-parse --short main~1", repo)));
	CHECK_STR(forge_git_worktree_base(wt3), forge_git_worktree_base(wt2));
	/* An unknown base. */
	forge_git_worktree_free(wt3);
	wt3 = NULL;
	CHECK_INT(forge_git_worktree_open(&wt3, g, "T4", "nope"), -1);
	CHECK(contains(forge_last_error(), "cannot resolve 'nope'"));
	after = checkout_snapshot(repo);
	CHECK_STR(after, before);
	CHECK_STR(out("git -C '%s' status --porcelain --untracked-files=all", repo),
		  " M README\n?? scratch.txt");
	free(head);
	free(before);
	free(after);
	forge_git_worktree_free(wt);
	forge_git_worktree_free(wt2);
	forge_git_worktree_free(wt3);
	forge_git_free(g);
}

static void test_worktree_reopen(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL, *again = NULL;
	char *base = NULL;

	CHECK(repo);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_worktree_open(&wt, g, "R1", "main"));
	base = xstrdup(forge_git_worktree_base(wt));
	write_file(forge_git_worktree_path(wt), "work.txt", "in progress\n");
	forge_git_worktree_free(wt);
	wt = NULL;
	/* The base branch moves on; a resume keeps the recorded base and the work. */
	CHECK(sh("cd '%s' && echo more >>README && git commit -qam third", repo) == 0);
	CHECK_OK(forge_git_worktree_open(&again, g, "R1", "main"));
	CHECK(forge_git_worktree_reopened(again));
	CHECK_STR(forge_git_worktree_base(again), base);
	CHECK_STR(out("cat '%s/work.txt'", forge_git_worktree_path(again)), "in progress");
	forge_git_worktree_free(again);
	again = NULL;
	/* Directory deleted by hand: made again on the same branch. */
	CHECK(sh("rm -rf '%s/R1'", forge_git_runs_dir(g)) == 0);
	CHECK_OK(forge_git_worktree_open(&again, g, "R1", NULL));
	CHECK(!forge_git_worktree_reopened(again));
	CHECK_STR(forge_git_worktree_base(again), base);
	CHECK_STR(out("git -C '%s' rev-parse HEAD", forge_git_worktree_path(again)), base);
	forge_git_worktree_free(again);
	again = NULL;

	/* A run an older Forge made in .forge/worktrees is used where it is,
	 * listed, opened back to its repository, and found again after the
	 * repository moved with it. */
	CHECK(sh("set -e; cd '%s'; mkdir -p .forge/worktrees; git worktree move '%s/R1' "
		 ".forge/worktrees/R1; echo old >.forge/worktrees/R1/old.txt", repo, forge_git_runs_dir(g)) == 0);
	forge_git_free(g);
	g = NULL;
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_worktree_open(&again, g, "R1", NULL));
	CHECK(forge_git_worktree_reopened(again));
	CHECK_STR(forge_git_worktree_path(again), out("echo \"$(cd '%s' && pwd -P)/.forge/worktrees/R1\"", repo));
	CHECK(forge_git_is_run_worktree(g, forge_git_worktree_path(again)));
	{
		jv list = jv_null();
		struct forge_git *g2 = NULL;

		CHECK_OK(forge_git_worktree_list(&list, g, "R1"));
		CHECK_INT(jv_array_length(list), 1);
		CHECK_OK(forge_git_open(&g2, forge_git_worktree_path(again)));
		CHECK_STR(forge_git_checkout(g2), forge_git_root(g));
		forge_git_free(g2);
	}
	forge_git_worktree_free(again);
	again = NULL;
	forge_git_free(g);
	g = NULL;
	CHECK(sh("mv '%s' '%s.moved'", repo, repo) == 0);
	CHECK_OK(forge_git_open(&g, out("echo '%s.moved'", repo)));
	CHECK_OK(forge_git_worktree_open(&again, g, "R1", NULL));
	CHECK(forge_git_worktree_reopened(again));
	CHECK_STR(out("cat '%s/old.txt'", forge_git_worktree_path(again)), "old");
	CHECK_STR(out("git -C '%s' rev-parse --abbrev-ref HEAD", forge_git_worktree_path(again)), "forge/R1");
	free(base);
	forge_git_worktree_free(again);
	forge_git_free(g);
}

/*
 * The runs dir of a checkout in the worktrees base: KEY its name (at most
 * 32 bytes, [A-Za-z0-9._-], others as '_') and 16 hex digits of a hash of
 * its common directory, the same from a subdirectory or a run's worktree;
 * a checkout moved after its run began finds the run's worktree where it
 * was made (git's record), linked back to it, and the old runs dir's root
 * file then names the new place.
 */
static void test_runs_dir(void)
{
	const char *repo = make_repo(), *key;
	struct forge_git *g = NULL, *g2 = NULL;
	struct forge_git_worktree *wt = NULL;
	char *runs = NULL, *path = NULL;
	struct buf long_name = BUF_INIT;

	CHECK(repo);
	CHECK(sh("set -e; d='%s/we ird:n\xc3\xa9me.0123456789012345678901234567890'; mv '%s' \"$d\";"
		 "mkdir -p \"$d/sub/deeper\"", tmpdir, repo) == 0);
	buf_addf(&long_name, "%s/we ird:n\xc3\xa9me.0123456789012345678901234567890", tmpdir);
	CHECK_OK(forge_git_open(&g, long_name.buf));
	runs = xstrdup(forge_git_runs_dir(g));
	key = strrchr(runs, '/') + 1;
	CHECK_STR(out("dirname '%s'", runs), out("cd \"$FORGE_WORKTREES\" && pwd -P"));
	CHECK_INT((int)strlen(key), 32 + 1 + 16);
	CHECK(strncmp(key, "we_ird_n__me.0123456789012345678-", 33) == 0);
	CHECK(strspn(key + 33, "0123456789abcdef") == 16);
	buf_addf(&long_name, "/sub/deeper");
	CHECK_OK(forge_git_open(&g2, long_name.buf));
	CHECK_STR(forge_git_runs_dir(g2), runs);
	forge_git_free(g2);
	g2 = NULL;
	/* (nothing is made before a worktree is) */
	CHECK_INT(access(runs, F_OK), -1);
	CHECK_OK(forge_git_worktree_open(&wt, g, "M1", NULL));
	path = xstrdup(forge_git_worktree_path(wt));
	write_file(path, "work.txt", "in progress\n");
	CHECK_OK(forge_git_open(&g2, path));            /* from the run's worktree */
	CHECK_STR(forge_git_runs_dir(g2), runs);
	CHECK_STR(forge_git_root(g2), forge_git_root(g));
	forge_git_free(g2);
	g2 = NULL;
	forge_git_worktree_free(wt);
	wt = NULL;
	forge_git_free(g);
	g = NULL;

	/* moved: another key, the run's worktree found where it is */
	CHECK(sh("mv '%s/we ird:n\xc3\xa9me.0123456789012345678901234567890' '%s/moved-here'", tmpdir, tmpdir) == 0);
	CHECK_OK(forge_git_open(&g, out("echo '%s/moved-here'", tmpdir)));
	CHECK(strcmp(forge_git_runs_dir(g), runs) != 0);
	CHECK_OK(forge_git_worktree_open(&wt, g, "M1", NULL));
	CHECK(forge_git_worktree_reopened(wt));
	CHECK_STR(forge_git_worktree_path(wt), path);
	CHECK_STR(out("cat '%s/work.txt'", path), "in progress");
	CHECK_STR(out("git -C '%s' rev-parse --abbrev-ref HEAD", path), "forge/M1");
	CHECK_STR(out("cat '%s/root'", runs), out("cd '%s/moved-here' && pwd -P", tmpdir));
	CHECK(forge_git_is_run_worktree(g, path));
	CHECK_OK(forge_git_open(&g2, path));
	CHECK_STR(forge_git_root(g2), forge_git_root(g));
	forge_git_free(g2);
	forge_git_worktree_free(wt);
	CHECK_OK(forge_git_worktree_remove(g, "M1", FORGE_GIT_REMOVE_FORCE));
	CHECK_INT(access(path, F_OK), -1);
	forge_git_free(g);
	free(runs);
	free(path);
	buf_release(&long_name);
}

static void test_status_and_diff(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	jv st = jv_invalid(), files = jv_invalid();
	char *patch = NULL;
	const char *w;

	CHECK(repo);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_worktree_open(&wt, g, "S1", NULL));
	w = forge_git_worktree_path(wt);
	CHECK_OK(forge_git_status(&st, wt));
	CHECK_INT(jv_array_length(jv_copy(st)), 0);
	jv_free(st);
	CHECK_OK(forge_git_diff(&patch, &files, wt, NULL));
	CHECK_STR(patch, "");
	CHECK_INT(jv_array_length(jv_copy(files)), 0);
	jv_free(files);
	free(patch);
	patch = NULL;

	write_file(w, "a.txt", "one\nTWO\nthree\nfour\n");
	write_file(w, "src/new.c", "int x;\n");
	CHECK(sh("rm '%s/gone.txt' && printf 'a\\0b\\0' >'%s/blob.bin'", w, w) == 0);
	CHECK(sh("cd '%s' && echo staged >staged.txt && git add staged.txt", w) == 0);
	CHECK_OK(forge_git_status(&st, wt));
	CHECK_INT(jv_array_length(jv_copy(st)), 5);
	CHECK_STR(str_of(st, "a.txt", "status"), "modified");
	CHECK_STR(str_of(st, "src/new.c", "status"), "untracked");
	CHECK_STR(str_of(st, "gone.txt", "status"), "deleted");
	CHECK_STR(str_of(st, "staged.txt", "status"), "added");
	CHECK_STR(str_of(st, "blob.bin", "status"), "untracked");

	CHECK_OK(forge_git_diff(&patch, &files, wt, NULL));
	CHECK_INT(jv_array_length(jv_copy(files)), 5);
	CHECK_STR(str_of(files, "a.txt", "action"), "modify");
	CHECK_INT(num_of(files, "a.txt", "additions"), 2);
	CHECK_INT(num_of(files, "a.txt", "deletions"), 1);
	CHECK_STR(str_of(files, "src/new.c", "action"), "create");
	CHECK_INT(num_of(files, "src/new.c", "additions"), 1);
	CHECK_STR(str_of(files, "gone.txt", "action"), "delete");
	CHECK_INT(num_of(files, "gone.txt", "deletions"), 1);
	CHECK_STR(str_of(files, "staged.txt", "action"), "create");
	CHECK_STR(str_of(files, "blob.bin", "action"), "create");
	jv bin = entry_of(files, "blob.bin");
	CHECK(json_get_bool(bin, "binary", false));
	jv_free(bin);
	jv txt = entry_of(files, "a.txt");
	CHECK(!json_has(txt, "binary"));
	jv_free(txt);
	CHECK_MSG(contains(patch, "diff --git a/a.txt b/a.txt\n"), "%s", patch);
	CHECK(contains(patch, "-two\n+TWO\n"));
	CHECK(contains(patch, "diff --git a/src/new.c b/src/new.c\nnew file mode 100644\n"));
	CHECK(contains(patch, "+int x;\n"));
	CHECK(contains(patch, "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n"));
	CHECK(contains(patch, "Binary files /dev/null and b/blob.bin differ"));
	/* The patch is one git applies to the base. */
	FILE *f = fopen(out("echo '%s/s1.patch'", tmpdir), "w");
	CHECK(f);
	fputs(patch, f);
	fclose(f);
	CHECK(sh("cd '%s' && git stash -q -u && git apply --check --exclude=blob.bin '%s/s1.patch'",
		 w, tmpdir) == 0);
	CHECK(sh("cd '%s' && git stash pop -q", w) == 0);
	jv_free(files);
	free(patch);
	patch = NULL;
	/* Against another base. */
	CHECK_OK(forge_git_diff(NULL, &files, wt, "v1"));
	CHECK_STR(str_of(files, "gone.txt", "action"), "(none)");
	jv_free(files);
	files = jv_invalid();
	CHECK_INT(forge_git_diff(&patch, NULL, wt, "nope"), -1);
	CHECK(patch == NULL);
	jv_free(st);
	forge_git_worktree_free(wt);
	forge_git_free(g);
}

static void test_commit(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	char *sha = NULL, *again = NULL, *before = NULL, *after = NULL;
	const char *w;

	CHECK(repo);
	CHECK(sh("git -C '%s' config user.name 'Someone Else'", repo) == 0);
	before = checkout_snapshot(repo);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_worktree_open(&wt, g, "C1", NULL));
	w = forge_git_worktree_path(wt);
	CHECK_INT(forge_git_commit_all(&sha, wt, "nothing yet"), FORGE_GIT_NOTHING);
	CHECK(sha == NULL);
	write_file(w, "a.txt", "changed\n");
	write_file(w, "dir/new.txt", "new\n");
	CHECK(sh("rm '%s/gone.txt'", w) == 0);
	CHECK_OK(forge_git_commit_all(&sha, wt, "forge: attempt 1"));
	CHECK(sha && strlen(sha) == 40);
	CHECK_STR(out("git -C '%s' rev-parse HEAD", w), sha);
	CHECK_STR(out("git -C '%s' rev-parse forge/C1", repo), sha);
	CHECK_STR(out("git -C '%s' log -1 --format='%%an <%%ae>|%%cn|%%s|%%P' HEAD", w),
		  out("echo 'Forge <forge@localhost>|Forge|forge: attempt 1|%s'",
		      forge_git_worktree_base(wt)));
	CHECK_STR(out("git -C '%s' ls-tree -r --name-only HEAD | tr '\\n' ' '", w),
		  "README a.txt dir/new.txt ");
	CHECK_STR(out("git -C '%s' status --porcelain", w), "");
	/* right after a commit HEAD's tree is the one staging would make */
	{
		char *head_tree = NULL, *staged = NULL;

		CHECK_OK(forge_git_worktree_head_tree(&head_tree, wt));
		CHECK_OK(forge_git_worktree_tree(&staged, wt));
		CHECK_STR(head_tree, staged);
		CHECK_STR(head_tree, out("git -C '%s' rev-parse 'HEAD^{tree}'", w));
		free(head_tree);
		free(staged);
	}
	CHECK_INT(forge_git_commit_all(&again, wt, "again"), FORGE_GIT_NOTHING);
	CHECK(again == NULL);
	CHECK_INT(forge_git_commit_all(&again, wt, ""), -1);
	CHECK(contains(forge_last_error(), "message"));
	after = checkout_snapshot(repo);
	CHECK_STR(after, before);
	free(sha);
	free(before);
	free(after);
	forge_git_worktree_free(wt);
	forge_git_free(g);
}

/* A repository a command made inside the worktree (with a commit, or
 * bare `git init`) is left out of the commit and of the diff's files; the
 * rest is committed (before: "invalid path", nothing committed). */
static void test_commit_nested_repo(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	char *sha = NULL, *patch = NULL;
	jv files, status;
	const char *w;

	CHECK(repo);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_worktree_open(&wt, g, "C9", NULL));
	w = forge_git_worktree_path(wt);
	CHECK(sh("cd '%s' && mkdir -p fx/repo && cd fx/repo && git init -q . && echo x >f && git add f && "
		 "git -c user.name=a -c user.email=a@b commit -qm fixture && cd '%s' && git init -q empty",
		 w, w) == 0);
	write_file(w, "src/feature.c", "int f;\n");
	CHECK_OK(forge_git_status(&status, wt));
	CHECK_STR(str_of(status, "fx/repo/", "status"), "untracked");
	jv_free(status);
	CHECK_OK(forge_git_diff(&patch, &files, wt, NULL));
	CHECK_INT(jv_array_length(jv_copy(files)), 1);
	CHECK_STR(str_of(files, "src/feature.c", "action"), "create");
	CHECK(!contains(patch, "fx/repo"));
	jv_free(files);
	free(patch);
	CHECK_OK(forge_git_commit_all(&sha, wt, "attempt 1"));
	CHECK_STR(out("git -C '%s' ls-tree -r --name-only HEAD | tr '\\n' ' '", w), "README a.txt gone.txt src/feature.c ");
	free(sha);
	forge_git_worktree_free(wt);
	forge_git_free(g);
}

/* The run's branch deleted under the run (its worktree's HEAD unborn): no
 * root commit; the error names the branch and the commit to put it back
 * at (the last one from HEAD's reflog, else the base); reopening the
 * worktree says the same; put back, the commit has its parent. */
static void test_commit_branch_gone(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL, *again = NULL;
	char *sha = NULL, *c1 = NULL;
	struct buf want = BUF_INIT;
	const char *w;

	CHECK(repo);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_worktree_open(&wt, g, "G1", NULL));
	w = forge_git_worktree_path(wt);
	/* nothing committed yet: the base is where the branch was */
	CHECK(sh("git -C '%s' update-ref -d refs/heads/forge/G1", repo) == 0);
	write_file(w, "a.txt", "changed\n");
	CHECK_INT(forge_git_commit_all(&sha, wt, "attempt 1"), -1);
	CHECK(sha == NULL);
	buf_addf(&want, "`git branch forge/G1 %s`", forge_git_worktree_base(wt));
	CHECK(contains(forge_last_error(), "the run's branch 'forge/G1' is gone"));
	CHECK(contains(forge_last_error(), want.buf));
	CHECK(contains(forge_last_error(), "`forge resume G1`"));
	CHECK_INT(sh("git -C '%s' rev-parse -q --verify HEAD >/dev/null", w) == 0, 0);
	CHECK_INT(forge_git_worktree_open(&again, g, "G1", NULL), -1);
	CHECK(contains(forge_last_error(), want.buf));
	/* put back, committed on it; deleted again: the last commit is named */
	CHECK(sh("git -C '%s' branch forge/G1 %s", repo, forge_git_worktree_base(wt)) == 0);
	CHECK_OK(forge_git_commit_all(&c1, wt, "attempt 1"));
	CHECK_STR(out("git -C '%s' log -1 --format=%%P HEAD", w), forge_git_worktree_base(wt));
	CHECK(sh("git -C '%s' update-ref -d refs/heads/forge/G1", repo) == 0);
	write_file(w, "a.txt", "changed again\n");
	CHECK_INT(forge_git_commit_all(&sha, wt, "attempt 2"), -1);
	buf_reset(&want);
	buf_addf(&want, "`git branch forge/G1 %s`", c1);
	CHECK(contains(forge_last_error(), want.buf));
	buf_release(&want);
	free(c1);
	forge_git_worktree_free(wt);
	forge_git_free(g);
}

/* forge_git_worktree_tree: the tree a commit would make, the index untouched. */
static void test_worktree_tree(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	char *t0 = NULL, *t1 = NULL, *t2 = NULL, *t3 = NULL, *sha = NULL;
	const char *w;

	CHECK(repo);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_worktree_open(&wt, g, "TT", NULL));
	w = forge_git_worktree_path(wt);
	CHECK_OK(forge_git_worktree_tree(&t0, wt));
	CHECK_STR(t0, out("git -C '%s' rev-parse 'HEAD^{tree}'", w));
	write_file(w, "a.txt", "changed\n");
	write_file(w, "new.txt", "new\n");
	CHECK_OK(forge_git_worktree_tree(&t1, wt));
	CHECK(strcmp(t1, t0) != 0);
	/* nothing staged on disk: git still sees the change as unstaged */
	CHECK_STR(out("git -C '%s' status --porcelain | tr '\\n' ' '", w), " M a.txt ?? new.txt ");
	CHECK_OK(forge_git_worktree_tree(&t2, wt));
	CHECK_STR(t2, t1);
	/* an ignored file does not change it; the commit has that very tree */
	CHECK(sh("echo scratch >>'%s/.git/info/exclude'", repo) == 0);
	write_file(w, "scratch", "x\n");
	CHECK_OK(forge_git_worktree_tree(&t3, wt));
	CHECK_STR(t3, t1);
	CHECK_OK(forge_git_commit_all(&sha, wt, "forge: attempt 1"));
	CHECK_STR(out("git -C '%s' rev-parse 'HEAD^{tree}'", w), t1);
	free(t0);
	free(t1);
	free(t2);
	free(t3);
	free(sha);
	forge_git_worktree_free(wt);
	forge_git_free(g);
}

/* A command's untracked set noted before it, its process dead before it
 * cleaned up: the next recovery (or save) removes what the command made,
 * never what was there before it, and the note. */
static void test_command_recover(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	jv before, removed;
	char *s, *ref = NULL, *kept = NULL;
	const char *w;

	CHECK(repo);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_worktree_open(&wt, g, "Z9", NULL));
	w = forge_git_worktree_path(wt);
	/* nothing noted: nothing removed, and no leftovers to speak of */
	CHECK_OK(forge_git_command_recover(&removed, &kept, w));
	CHECK_INT(jv_array_length(removed), 0);
	CHECK(kept == NULL);
	CHECK_OK(forge_git_command_leftovers(&kept, w));
	CHECK(kept == NULL);
	write_file(w, "mine.txt", "mine\n");
	CHECK_OK(forge_git_command_before(&before, w));
	jv_free(before);
	CHECK_STR(out("cat '%s/.git/worktrees/Z9/forge-command-untracked.json'", repo), "{\"mine.txt\":true}");
	/* what the command made; then its process died */
	write_file(w, "report/results.xml", "<testsuite/>\n");
	write_file(w, "zz.cache", "c\n");
	CHECK_OK(forge_git_command_recover(&removed, &kept, w));
	s = json_dumps(removed, false);
	CHECK_STR(s, "[\"report/results.xml\",\"zz.cache\"]");
	free(s);
	CHECK_STR(out("cat '%s/mine.txt'", w), "mine");
	CHECK_INT(access(out("echo '%s/report'", w), F_OK), -1);
	/* moved aside, not deleted: a person's file there looks the same */
	CHECK(kept && strstr(kept, "/.git/worktrees/Z9/forge-leftovers/"));
	CHECK_STR(out("cat '%s/report/results.xml'", kept), "<testsuite/>");
	CHECK_STR(out("cat '%s/zz.cache'", kept), "c");
	/* where they all are, for forge status and forge gc to say */
	char *left = NULL;
	CHECK_OK(forge_git_command_leftovers(&left, w));
	CHECK(left && strlen(left) < strlen(kept) && !strncmp(left, kept, strlen(left)) &&
	      !strcmp(kept + strlen(left), strrchr(kept, '/')));
	free(left);
	free(kept);
	kept = NULL;
	CHECK_INT(access(out("echo '%s/.git/worktrees/Z9/forge-command-untracked.json'", repo), F_OK), -1);
	/* once: a file made after the recovery is no command's */
	write_file(w, "later.txt", "l\n");
	CHECK_OK(forge_git_command_recover(&removed, &kept, w));
	CHECK_INT(jv_array_length(removed), 0);
	CHECK(kept == NULL);
	/* after, in process: cleans and removes the note */
	CHECK_OK(forge_git_command_before(&before, w));
	write_file(w, "made.o", "o\n");
	CHECK_OK(forge_git_command_after(&removed, w, before));
	s = json_dumps(removed, false);
	CHECK_STR(s, "[\"made.o\"]");
	free(s);
	CHECK_INT(access(out("echo '%s/.git/worktrees/Z9/forge-command-untracked.json'", repo), F_OK), -1);
	/* a save of a worktree a command was cut short in leaves its files out */
	CHECK_OK(forge_git_command_before(&before, w));
	jv_free(before);
	write_file(w, "test-results.xml", "<testsuite/>\n");
	CHECK_OK(forge_git_save_and_reset(&ref, wt, NULL));
	CHECK_STR(ref, "refs/forge/Z9/saved/1");
	CHECK_STR(out("git -C '%s' show %s:mine.txt", repo, ref), "mine");
	CHECK_STR(out("git -C '%s' show %s:later.txt", repo, ref), "l");
	CHECK(sh("git -C '%s' cat-file -e %s:test-results.xml 2>/dev/null", repo, ref) != 0);
	free(ref);
	forge_git_worktree_free(wt);
	forge_git_free(g);
}

static void test_save_and_reset(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	char *c1 = NULL, *c2 = NULL, *ref = NULL, *before = NULL, *after = NULL;
	const char *w;

	CHECK(repo);
	before = checkout_snapshot(repo);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_worktree_open(&wt, g, "Z1", NULL));
	w = forge_git_worktree_path(wt);
	CHECK_INT(forge_git_save_and_reset(&ref, wt, NULL), FORGE_GIT_NOTHING);
	CHECK(ref == NULL);
	write_file(w, "a.txt", "attempt one\n");
	CHECK_OK(forge_git_commit_all(&c1, wt, "attempt 1"));
	/* A partial phase: an edit, a deletion, new files (one in a new dir), an ignored file. */
	write_file(w, "a.txt", "half done\n");
	write_file(w, "untracked.txt", "draft\n");
	write_file(w, "newdir/deep.txt", "deep\n");
	write_file(w, ".gitignore", "*.o\n");
	CHECK(sh("git -C '%s' add .gitignore && git -C '%s' commit -qm ignore", w, w) == 0);
	free(c1);
	c1 = xstrdup(out("git -C '%s' rev-parse HEAD", w));
	write_file(w, "build.o", "object\n");
	CHECK(sh("rm '%s/README'", w) == 0);
	CHECK_OK(forge_git_save_and_reset(&ref, wt, NULL));
	CHECK_STR(ref, "refs/forge/Z1/saved/1");
	CHECK_STR(out("git -C '%s' show %s:a.txt", repo, ref), "half done");
	CHECK_STR(out("git -C '%s' show %s:untracked.txt", repo, ref), "draft");
	CHECK_STR(out("git -C '%s' show %s:newdir/deep.txt", repo, ref), "deep");
	CHECK(sh("git -C '%s' cat-file -e %s:README 2>/dev/null", repo, ref) != 0);
	CHECK(sh("git -C '%s' cat-file -e %s:build.o 2>/dev/null", repo, ref) != 0);
	CHECK_STR(out("git -C '%s' rev-parse %s^", repo, ref), c1);
	/* The worktree is clean at c1; the ignored file stays. */
	CHECK_STR(out("git -C '%s' status --porcelain --untracked-files=all", w), "");
	CHECK_STR(out("git -C '%s' rev-parse HEAD", w), c1);
	CHECK_STR(out("cat '%s/a.txt'", w), "attempt one");
	CHECK_STR(out("cat '%s/README'", w), "hello");
	CHECK_INT(access(out("echo '%s/newdir/deep.txt'", w), F_OK), -1);
	CHECK_STR(out("cat '%s/build.o'", w), "object");
	free(ref);
	ref = NULL;
	/* Back to the base: the dropped commits are kept, with no new commit. */
	write_file(w, "a.txt", "attempt two\n");
	CHECK_OK(forge_git_commit_all(&c2, wt, "attempt 2"));
	CHECK_OK(forge_git_save_and_reset(&ref, wt, forge_git_worktree_base(wt)));
	CHECK_STR(ref, "refs/forge/Z1/saved/2");
	CHECK_STR(out("git -C '%s' rev-parse %s", repo, ref), c2);
	CHECK_STR(out("git -C '%s' rev-parse forge/Z1", repo), forge_git_worktree_base(wt));
	CHECK_STR(out("git -C '%s' status --porcelain --untracked-files=all", w), "");
	free(ref);
	ref = NULL;
	CHECK_INT(forge_git_save_and_reset(&ref, wt, "nope"), -1);
	CHECK(ref == NULL);
	after = checkout_snapshot(repo);
	CHECK_STR(after, before);
	free(c1);
	free(c2);
	free(before);
	free(after);
	forge_git_worktree_free(wt);
	forge_git_free(g);
}

/* The refs list of forge_git_run_saved() as "REF:FILE,FILE REF:…". */
static char *saved_list(struct forge_git *g, const char *trace, const char *tip)
{
	struct buf b = BUF_INIT;
	jv list = jv_null();

	if (forge_git_run_saved(&list, g, trace, tip) < 0) {
		jv_free(list);
		return xstrdup("error");
	}
	jv_array_foreach(list, i, e) {
		jv files = json_get(e, "files");

		buf_addf(&b, "%s%s:", i ? " " : "", json_get_str(e, "ref"));
		jv_array_foreach(files, k, f) {
			buf_addf(&b, "%s%s", k ? "," : "", json_get_str(f, "path"));
			jv_free(f);
		}
		jv_free(files);
		jv_free(e);
	}
	jv_free(list);
	return buf_detach(&b, NULL);
}

/* A run's saved refs whose change its branch lacks (hunt69 #1): measured
 * from where they left the branch's history; one whose every file the
 * branch has as the ref has it (done again) is left out, also once the
 * branch moved on; listed by N as a number; none: []. */
static void test_run_saved(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	char *ref = NULL, *sha = NULL, *list = NULL;
	const char *w;
	jv e = jv_null();

	CHECK(repo);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_worktree_open(&wt, g, "Z2", NULL));
	w = forge_git_worktree_path(wt);
	CHECK_STR((list = saved_list(g, "Z2", "refs/heads/forge/Z2")), "");
	free(list);
	write_file(w, "a.txt", "one\n");
	CHECK_OK(forge_git_save_and_reset(&ref, wt, NULL));
	CHECK_STR(ref, "refs/forge/Z2/saved/1");
	CHECK_STR((list = saved_list(g, "Z2", "refs/heads/forge/Z2")), "refs/forge/Z2/saved/1:a.txt");
	free(list);
	jv l = jv_null();
	CHECK_OK(forge_git_run_saved(&l, g, "Z2", "refs/heads/forge/Z2"));
	e = jv_array_get(l, 0);
	CHECK_STR(json_get_str(e, "from"), forge_git_worktree_base(wt));
	jv_free(e);
	/* done again and committed: held, also after the branch moved on */
	write_file(w, "a.txt", "one\n");
	CHECK_OK(forge_git_commit_all(&sha, wt, "attempt 2"));
	free(sha);
	CHECK_STR((list = saved_list(g, "Z2", "refs/heads/forge/Z2")), "");
	free(list);
	write_file(w, "b.txt", "more\n");
	CHECK_OK(forge_git_commit_all(&sha, wt, "attempt 3"));
	free(sha);
	CHECK_STR((list = saved_list(g, "Z2", "refs/heads/forge/Z2")), "");
	free(list);
	/* the branch has other content there: not held */
	write_file(w, "a.txt", "two\n");
	CHECK_OK(forge_git_commit_all(&sha, wt, "attempt 4"));
	free(sha);
	CHECK_STR((list = saved_list(g, "Z2", "refs/heads/forge/Z2")), "refs/forge/Z2/saved/1:a.txt");
	free(list);
	/* by N as a number; a ref that is no N of Forge's is not one */
	CHECK(sh("git -C '%s' update-ref refs/forge/Z2/saved/10 %s && git -C '%s' update-ref refs/forge/Z2/saved/2 %s"
		 " && git -C '%s' update-ref refs/forge/Z2/saved/x %s", repo, ref, repo, ref, repo, ref) == 0);
	CHECK_STR((list = saved_list(g, "Z2", "refs/heads/forge/Z2")),
		  "refs/forge/Z2/saved/1:a.txt refs/forge/Z2/saved/2:a.txt refs/forge/Z2/saved/10:a.txt");
	free(list);
	CHECK_STR((list = saved_list(g, "Z2", "nope")), "error");
	free(list);
	/* a saved ref to an object the repository lacks (a damaged or partial
	 * clone): an error naming it, and nothing leaked on the way (before:
	 * libgit2 1.5's git_revparse_single leaked resolving it, and
	 * LeakSanitizer failed the program) */
	CHECK(sh("mkdir -p '%s/.git/refs/forge/Z2/saved' && echo 0123456789abcdef0123456789abcdef01234567 "
		 ">'%s/.git/refs/forge/Z2/saved/3'", repo, repo) == 0);
	CHECK_STR((list = saved_list(g, "Z2", "refs/heads/forge/Z2")), "error");
	CHECK_STR(forge_last_error(), "cannot resolve 'refs/forge/Z2/saved/3': it names "
		  "0123456789abcdef0123456789abcdef01234567, an object the repository does not have");
	free(list);
	free(ref);
	forge_git_worktree_free(wt);
	forge_git_free(g);
}

/*
 * Sandboxed code (a command of the model's) replaced tracked directories of
 * the run's worktree by a symbolic link to a directory outside (at the top
 * and deeper) and by a file: the recovery, run unconfined, writes nothing
 * through them (hunt66 #1), makes them directories again, and keeps the
 * link on the saved ref.
 */
static void test_save_and_reset_symlinked_dir(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	char *c1 = NULL, *ref = NULL, *outside = NULL, *outside2 = NULL;
	const char *w;

	CHECK(repo);
	outside = xstrdup(fresh("outside"));
	outside2 = xstrdup(fresh("outside"));
	CHECK(sh("mkdir '%s' '%s'", outside, outside2) == 0);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_worktree_open(&wt, g, "Z7", NULL));
	w = forge_git_worktree_path(wt);
	write_file(w, "tests/check.sh", "#!/bin/sh\necho model\n");
	write_file(w, "lib/sub/deep.txt", "deep\n");
	write_file(w, "doc/a/b.txt", "b\n");
	CHECK(sh("chmod +x '%s/tests/check.sh'", w) == 0);
	CHECK_OK(forge_git_commit_all(&c1, wt, "attempt 1"));
	CHECK(sh("cd '%s' && rm -rf tests lib/sub doc README && ln -s '%s' tests && ln -s '%s' lib/sub && "
		 "echo file >doc && echo theirs >'%s/README' && ln -s '%s/README' README", w, outside, outside2,
		 outside2, outside2) == 0);
	CHECK_OK(forge_git_save_and_reset(&ref, wt, c1));
	/* nothing written outside (a tracked file that became a link: not through it either) */
	CHECK_STR(out("ls -A '%s' '%s'", outside, outside2), out("printf '%%s:\\n\\n%%s:\\nREADME' '%s' '%s'",
								outside, outside2));
	CHECK_STR(out("cat '%s/README'", outside2), "theirs");
	CHECK_STR(out("cd '%s' && find README -printf '%%y' && cat README", w), "fhello");
	/* the directories are back, as directories */
	CHECK_STR(out("cd '%s' && find tests lib doc -printf '%%y %%p\\n' | sort", w),
		  "d doc\nd doc/a\nd lib\nd lib/sub\nd tests\nf doc/a/b.txt\nf lib/sub/deep.txt\nf tests/check.sh");
	CHECK_STR(out("cat '%s/tests/check.sh'", w), "#!/bin/sh\necho model");
	CHECK_STR(out("git -C '%s' status --porcelain --untracked-files=all", w), "");
	/* the link is kept on the saved ref, as a link */
	CHECK_STR(out("git -C '%s' ls-tree %s tests | cut -f1 | cut -d' ' -f1", repo, ref), "120000");
	CHECK_STR(out("git -C '%s' show %s:tests", repo, ref), outside);
	CHECK_STR(out("git -C '%s' show %s:doc", repo, ref), "file");
	CHECK_STR(out("git -C '%s' ls-tree %s README | cut -d' ' -f1", repo, ref), "120000");
	free(c1);
	free(ref);
	free(outside);
	free(outside2);
	forge_git_worktree_free(wt);
	forge_git_free(g);
}

static void test_empty_repository(void)
{
	const char *repo = fresh("empty");
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	jv files = jv_invalid();
	char *sha = NULL, *merged = NULL, *before = NULL;
	bool moved = true;

	CHECK(sh("git init -q -b main '%s' && echo mine >'%s/notes.txt'", repo, repo) == 0);
	before = xstrdup(out("git -C '%s' status --porcelain; git -C '%s' symbolic-ref HEAD",
			     repo, repo));
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_worktree_open(&wt, g, "E1", NULL));
	/* An empty root commit on the run's branch only; main is still unborn. */
	CHECK_STR(out("git -C '%s' rev-parse forge/E1", repo), forge_git_worktree_base(wt));
	CHECK_STR(out("git -C '%s' ls-tree HEAD | wc -l", forge_git_worktree_path(wt)), "0");
	CHECK_STR(out("git -C '%s' log --format=%%s forge/E1", repo), "forge: empty base commit");
	CHECK(sh("git -C '%s' rev-parse --verify -q main >/dev/null", repo) != 0);
	CHECK_STR(out("git -C '%s' status --porcelain; git -C '%s' symbolic-ref HEAD", repo, repo),
		  before);
	CHECK_OK(forge_git_base_moved(&moved, g, "main", forge_git_worktree_base(wt)));
	CHECK(!moved);
	write_file(forge_git_worktree_path(wt), "hello.c", "int main(void) { return 0; }\n");
	CHECK_OK(forge_git_diff(NULL, &files, wt, NULL));
	CHECK_STR(str_of(files, "hello.c", "action"), "create");
	CHECK_OK(forge_git_commit_all(&sha, wt, "add hello"));
	/* Reopen by base "main" (the unborn branch) also works for a second run. */
	forge_git_worktree_free(wt);
	wt = NULL;
	CHECK_OK(forge_git_worktree_open(&wt, g, "E2", "main"));
	forge_git_worktree_free(wt);
	wt = NULL;
	/* Fast-forward creates main, and the user's checkout gets the files. */
	CHECK_OK(forge_git_merge_ff(&merged, g, "main", "forge/E1"));
	CHECK_STR(merged, sha);
	CHECK_STR(out("git -C '%s' rev-parse HEAD", repo), sha);
	CHECK_STR(out("git -C '%s' status --porcelain", repo), "?? notes.txt");
	CHECK(sh("test -f '%s/hello.c'", repo) == 0);
	free(sha);
	free(merged);
	free(before);
	jv_free(files);
	forge_git_free(g);
}

/* A run from an unborn HEAD is refused only when the checkout holds files
 * its empty base would not have. */
static void test_base_check(void)
{
	const char *repo = fresh("unborn");
	struct forge_git *g = NULL;

	CHECK(sh("git init -q -b main '%s'", repo) == 0);
	CHECK_OK(forge_git_open(&g, repo));
	/* nothing yet, or Forge's own directory alone: the empty base will do */
	CHECK(forge_git_base_check(g, NULL, "T1") == 0);
	CHECK(sh("mkdir '%s/.forge' && echo '{}' >'%s/.forge/config.json'", repo, repo) == 0);
	CHECK(forge_git_base_check(g, "main", "T1") == 0);
	/* a file, untracked, then staged */
	CHECK(sh("echo x >'%s/a.c'", repo) == 0);
	CHECK(forge_git_base_check(g, NULL, "T1") == 1);
	CHECK_MSG(contains(forge_last_error(), "no commits yet on main:") &&
		  contains(forge_last_error(), "(git add -A && git commit)"), "%s", forge_last_error());
	CHECK(sh("git -C '%s' add a.c", repo) == 0);
	CHECK(forge_git_base_check(g, "main", "T1") == 1);
	/* a base that names no unborn HEAD is forge_git_worktree_open()'s to judge */
	CHECK(forge_git_base_check(g, "no-such-ref", "T1") == 0);
	/* forge run checks that first (exit 2): an unborn HEAD is a base,
	 * a name of nothing is not */
	CHECK(forge_git_base_resolves(g, NULL) == 0);
	CHECK(forge_git_base_resolves(g, "main") == 0);
	CHECK(forge_git_base_resolves(g, "no-such-ref") == -1);
	CHECK_MSG(contains(forge_last_error(), "cannot resolve 'no-such-ref'"), "%s", forge_last_error());
	CHECK(sh("git -C '%s' commit -qm init", repo) == 0);
	CHECK(forge_git_base_check(g, NULL, "T1") == 0);
	CHECK(forge_git_base_check(g, "main", "T1") == 0);
	CHECK(forge_git_base_resolves(g, "main") == 0);
	CHECK(forge_git_base_resolves(g, "HEAD") == 0);
	CHECK(forge_git_base_resolves(g, "main:a.c") == -1);     /* a blob */
	CHECK_MSG(contains(forge_last_error(), "does not name a commit"), "%s", forge_last_error());
	CHECK(forge_git_base_resolves(g, "no-such-ref") == -1);
	forge_git_free(g);
}

/* A repository whose .forge is a file of the project cannot hold a run's
 * worktree: the person's to change (FORGE_GIT_SETUP), nothing made. */
static void test_forge_dir_file(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;

	CHECK(repo);
	write_file(repo, ".forge", "mine\n");
	CHECK(sh("git -C '%s' add .forge && git -C '%s' commit -qm forge", repo, repo) == 0);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK(forge_git_base_check(g, NULL, "T1") == 1);
	CHECK_MSG(contains(forge_last_error(), "the repository's .forge is a file, not a directory:") &&
		  contains(forge_last_error(), "git mv .forge NEW-NAME"), "%s", forge_last_error());
	CHECK_INT(forge_git_worktree_open(&wt, g, "T1", NULL), FORGE_GIT_SETUP);
	CHECK(!wt);
	CHECK_STR(out("git -C '%s' for-each-ref refs/heads/forge refs/forge", repo), "");
	CHECK_STR(out("cat '%s/.forge'", repo), "mine");
	forge_git_free(g);
}

static void test_list_and_remove(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	struct forge_git_worktree *a = NULL, *b = NULL;
	jv list = jv_invalid();
	char *pa = NULL;

	CHECK(repo);
	CHECK(sh("git -C '%s' worktree add -q '%s/../not-forge%d' -b not-forge", repo, repo,
		 repo_seq) == 0);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_worktree_list(&list, g, NULL));
	CHECK_INT(jv_array_length(jv_copy(list)), 0);
	jv_free(list);
	CHECK_OK(forge_git_worktree_open(&b, g, "L2", NULL));
	CHECK_OK(forge_git_worktree_open(&a, g, "L1", NULL));
	pa = xstrdup(forge_git_worktree_path(a));
	CHECK_OK(forge_git_worktree_list(&list, g, NULL));
	CHECK_INT(jv_array_length(jv_copy(list)), 2);
	jv first = jv_array_get(jv_copy(list), 0);
	CHECK_STR(json_get_str(first, "name"), "L1");
	CHECK_STR(json_get_str(first, "path"), pa);
	CHECK_STR(json_get_str(first, "branch"), "forge/L1");
	CHECK_STR(json_get_str(first, "head"), forge_git_worktree_base(a));
	CHECK(json_get_bool(first, "valid", false));
	CHECK(!json_get_bool(first, "locked", true));
	jv_free(first);
	jv_free(list);
	CHECK_OK(forge_git_worktree_list(&list, g, "L2"));
	CHECK_INT(jv_array_length(jv_copy(list)), 1);
	jv_free(list);
	list = jv_invalid();

	/* Uncommitted work is not thrown away without force. */
	write_file(pa, "wip.txt", "wip\n");
	CHECK_INT(forge_git_worktree_remove(g, "L1", 0), -1);
	CHECK_MSG(contains(forge_last_error(), "uncommitted changes"), "%s", forge_last_error());
	CHECK(sh("test -f '%s/wip.txt'", pa) == 0);
	forge_git_worktree_free(a);
	a = NULL;
	CHECK_OK(forge_git_worktree_remove(g, "L1", FORGE_GIT_REMOVE_FORCE));
	CHECK(sh("test -e '%s'", pa) != 0);
	CHECK(sh("git -C '%s' worktree list | grep -qF '[forge/L1]'", repo) != 0);
	CHECK(sh("git -C '%s' rev-parse -q --verify forge/L1 >/dev/null", repo) == 0);
	/* The kept branch is checked out again by a later open (resume). */
	CHECK(sh("git -C '%s' branch -f forge/L1 v1", repo) == 0);
	CHECK_OK(forge_git_worktree_open(&a, g, "L1", "main"));
	CHECK(!forge_git_worktree_reopened(a));
	CHECK_STR(out("git -C '%s' rev-parse HEAD", pa), out("git -C '%s' rev-parse v1^{commit}", repo));
	CHECK_STR(forge_git_worktree_base(a), out("git -C '%s' rev-parse main", repo));
	forge_git_worktree_free(a);
	a = NULL;
	CHECK_OK(forge_git_worktree_remove(g, "L1", 0));
	CHECK_INT(forge_git_worktree_remove(g, "L1", FORGE_GIT_REMOVE_BRANCH), FORGE_GIT_NOTHING);
	CHECK(sh("git -C '%s' rev-parse -q --verify forge/L1 >/dev/null", repo) != 0);
	CHECK(sh("git -C '%s' rev-parse -q --verify refs/forge/L1/base >/dev/null", repo) != 0);
	/* Clean worktree: removed with its branch in one go. */
	forge_git_worktree_free(b);
	b = NULL;
	CHECK_OK(forge_git_worktree_remove(g, "L2", FORGE_GIT_REMOVE_BRANCH));
	CHECK(sh("git -C '%s' rev-parse -q --verify forge/L2 >/dev/null", repo) != 0);
	CHECK_OK(forge_git_worktree_list(&list, g, NULL));
	CHECK_INT(jv_array_length(jv_copy(list)), 0);
	CHECK_INT(forge_git_worktree_remove(g, "L9", 0), FORGE_GIT_NOTHING);
	CHECK_STR(out("git -C '%s' worktree list | wc -l", repo), "2");
	jv_free(list);
	free(pa);
	forge_git_free(g);
}

/* A worktree holding a tree deeper than libgit2 walks (a model's
 * run_command: mkdir dd && cd dd, 200 times) and a chmod 000 directory is
 * removed, and forgotten only once it is gone (before: the removal failed
 * after libgit2 had dropped the registration, and the directory stayed,
 * known to nothing, for ever). */
static void test_remove_deep(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	struct forge_git_worktree *a = NULL;
	jv list = jv_invalid();
	char *pa = NULL;

	CHECK(repo);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_worktree_open(&a, g, "D1", NULL));
	pa = xstrdup(forge_git_worktree_path(a));
	forge_git_worktree_free(a);
	CHECK(sh("cd '%s' && for i in $(seq 200); do mkdir dd && cd dd || exit 1; done && touch f", pa) == 0);
	CHECK(sh("cd '%s' && mkdir -p shut/in && touch shut/in/f && chmod 000 shut", pa) == 0);
	CHECK_MSG(forge_git_worktree_remove(g, "D1", FORGE_GIT_REMOVE_FORCE) == 0, "%s", forge_last_error());
	CHECK(sh("test -e '%s'", pa) != 0);
	CHECK_OK(forge_git_worktree_list(&list, g, NULL));
	CHECK_INT(jv_array_length(jv_copy(list)), 0);
	jv_free(list);
	CHECK(sh("git -C '%s' worktree list | grep -qF '[forge/D1]'", repo) != 0);
	free(pa);
	forge_git_free(g);
}

/* The merge lock: an flock other processes wait for, held until the last
 * of nested holds is released (and by no one after forge_git_free). */
/*
 * Links in the user's checkout where a run's change has a directory or a
 * file: a tracked one the change replaces is replaced, not written through;
 * an untracked one refuses the merge, nothing changed.
 */
static void test_merge_ff_through_links(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	char *sha = NULL, *merged = NULL, *outside = NULL, *base = NULL;
	const char *w;

	CHECK(repo);
	outside = xstrdup(fresh("outside"));
	CHECK(sh("mkdir '%s' && echo theirs >'%s/cfg' && cd '%s' && ln -s '%s' tests && ln -s '%s/cfg' cfg && "
		 "git add tests cfg && git commit -qm links", outside, outside, repo, outside, outside) == 0);
	base = xstrdup(out("git -C '%s' rev-parse HEAD", repo));
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_worktree_open(&wt, g, "L7", NULL));
	w = forge_git_worktree_path(wt);
	CHECK(sh("cd '%s' && rm tests cfg && mkdir tests && echo model >tests/x.sh && echo model >cfg", w) == 0);
	CHECK_OK(forge_git_commit_all(&sha, wt, "links made a directory and a file"));
	CHECK_OK(forge_git_merge_ff(&merged, g, "main", "forge/L7"));
	CHECK_STR(merged, sha);
	CHECK_STR(out("ls -A '%s'", outside), "cfg");
	CHECK_STR(out("cat '%s/cfg'", outside), "theirs");
	CHECK_STR(out("cd '%s' && find tests cfg -printf '%%y %%p\\n' | sort", repo), "d tests\nf cfg\nf tests/x.sh");
	CHECK_STR(out("git -C '%s' status --porcelain", repo), "");
	/* an untracked link (ignored too) where the change has a directory: refused */
	free(sha);
	free(merged);
	sha = merged = NULL;
	CHECK(sh("cd '%s' && echo /gen >.gitignore && git add .gitignore && git commit -qm ignore && "
		 "ln -s '%s' gen", repo, outside) == 0);
	free(base);
	base = xstrdup(out("git -C '%s' rev-parse HEAD", repo));
	CHECK(sh("cd '%s' && git reset -q --hard %s && mkdir gen && echo model >gen/x && "
		 "git add -f gen/x && git commit -qm gen", w, base) == 0);
	CHECK_INT(forge_git_merge_ff(&merged, g, "main", "forge/L7"), FORGE_GIT_BLOCKED);
	CHECK_MSG(contains(forge_last_error(), "is a symbolic link where the change has a directory"), "%s",
		  forge_last_error());
	CHECK_STR(out("ls -A '%s'", outside), "cfg");
	CHECK_STR(out("git -C '%s' rev-parse HEAD", repo), base);
	free(sha);
	free(merged);
	free(outside);
	free(base);
	forge_git_worktree_free(wt);
	forge_git_free(g);
}

static void test_merge_lock(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;

	CHECK(repo);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_merge_lock(g));
	CHECK(sh("flock -n '%s/.git/forge-merge.lock' true", repo) != 0);
	CHECK_OK(forge_git_merge_lock(g));
	forge_git_merge_unlock(g);
	CHECK(sh("flock -n '%s/.git/forge-merge.lock' true", repo) != 0);
	forge_git_merge_unlock(g);
	CHECK(sh("flock -n '%s/.git/forge-merge.lock' true", repo) == 0);
	forge_git_merge_unlock(g);   /* (one too many: nothing) */
	CHECK_OK(forge_git_merge_lock(g));
	forge_git_free(g);
	CHECK(sh("flock -n '%s/.git/forge-merge.lock' true", repo) == 0);
}

static void test_merge_ff(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL, *wt2 = NULL;
	char *sha = NULL, *merged = NULL, *mb = NULL, *sha2 = NULL;
	bool moved = true;

	CHECK(repo);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_worktree_open(&wt, g, "M1", NULL));
	CHECK_OK(forge_git_worktree_open(&wt2, g, "M2", NULL));
	write_file(forge_git_worktree_path(wt), "a.txt", "merged\n");
	CHECK_OK(forge_git_commit_all(&sha, wt, "change a"));
	write_file(forge_git_worktree_path(wt2), "README", "other\n");
	CHECK_OK(forge_git_commit_all(&sha2, wt2, "change readme"));
	CHECK_OK(forge_git_merge_base(&mb, g, "forge/M1", "forge/M2"));
	CHECK_STR(mb, forge_git_worktree_base(wt));
	CHECK_OK(forge_git_base_moved(&moved, g, "main", forge_git_worktree_base(wt)));
	CHECK(!moved);

	/* Refused while the user's checkout has a local change to a tracked file. */
	write_file(repo, "README", "user edit\n");
	CHECK_INT(forge_git_merge_ff(&merged, g, "main", "forge/M1"), FORGE_GIT_BLOCKED);
	CHECK_MSG(contains(forge_last_error(), "uncommitted changes"), "%s", forge_last_error());
	CHECK_STR(out("git -C '%s' rev-parse main", repo), forge_git_worktree_base(wt));
	CHECK_STR(out("cat '%s/README'", repo), "user edit");
	CHECK(sh("git -C '%s' checkout -q README", repo) == 0);
	/* An untracked file of the user does not block it. */
	write_file(repo, "untracked.txt", "x\n");
	CHECK_OK(forge_git_merge_ff(&merged, g, "main", "forge/M1"));
	CHECK_STR(merged, sha);
	CHECK_STR(out("git -C '%s' rev-parse HEAD", repo), sha);
	CHECK_STR(out("git -C '%s' symbolic-ref HEAD", repo), "refs/heads/main");
	CHECK_STR(out("cat '%s/a.txt'", repo), "merged");
	CHECK_STR(out("git -C '%s' status --porcelain", repo), "?? untracked.txt");
	free(merged);
	merged = NULL;
	CHECK_INT(forge_git_merge_ff(&merged, g, "main", "forge/M1"), FORGE_GIT_NOTHING);
	CHECK_STR(merged, sha);
	free(merged);
	merged = NULL;
	CHECK_OK(forge_git_base_moved(&moved, g, "main", forge_git_worktree_base(wt2)));
	CHECK(moved);
	/* Diverged: M2 does not descend from the new main (moved since the
	 * caller's look, as far as the merge knows). */
	CHECK_INT(forge_git_merge_ff(&merged, g, "refs/heads/main", "forge/M2"), FORGE_GIT_MOVED);
	CHECK_MSG(contains(forge_last_error(), "diverged"), "%s", forge_last_error());
	CHECK_STR(out("git -C '%s' rev-parse main", repo), sha);
	CHECK(merged == NULL);
	/* A branch not checked out anywhere moves without touching any files. */
	CHECK(sh("git -C '%s' branch side %s", repo, forge_git_worktree_base(wt2)) == 0);
	CHECK_OK(forge_git_merge_ff(NULL, g, "side", "forge/M2"));
	CHECK_STR(out("git -C '%s' rev-parse side", repo), sha2);
	CHECK_STR(out("git -C '%s' status --porcelain", repo), "?? untracked.txt");
	CHECK_INT(forge_git_merge_ff(NULL, g, "no-such-branch", "forge/M2"), -1);
	CHECK(contains(forge_last_error(), "no branch 'no-such-branch'"));
	free(sha);
	free(sha2);
	free(mb);
	forge_git_worktree_free(wt);
	forge_git_worktree_free(wt2);
	forge_git_free(g);
}

/* forge_git_merge_commit() in a shallow clone: libgit2's merge base walk
 * fails at the cut ("object not found"); the common commit is in the
 * clone, so the merge is made (hunt22 #9). */
static void test_merge_commit_shallow(void)
{
	const char *src = make_repo(), *clone = fresh("shallow");
	struct forge_git *g = NULL;
	char *merge = NULL;

	CHECK(src);
	CHECK(sh("set -e; cd '%s'; echo 3 >>README; git commit -qam third; git branch forge/S1;"
		 "git checkout -q forge/S1; echo run >run.txt; git add run.txt; git commit -qm run;"
		 "git checkout -q main; echo more >>a.txt; git commit -qam user", src) == 0);
	CHECK(sh("set -e; git clone -q --depth 2 'file://%s' '%s'; cd '%s';"
		 "git fetch -q --depth 2 origin forge/S1:forge/S1", src, clone, clone) == 0);
	CHECK_STR(out("git -C '%s' rev-parse --is-shallow-repository", clone), "true");
	CHECK_OK(forge_git_open(&g, clone));
	CHECK_OK(forge_git_merge_commit(&merge, g, "main", "forge/S1", "Merge forge/S1\n"));
	CHECK_STR(out("git -C '%s' rev-parse main", clone), merge);
	CHECK_STR(out("git -C '%s' log -1 --format=%%P main", clone),
		  out("echo $(git -C '%s' rev-parse main^1 forge/S1)", clone));
	CHECK_STR(out("cat '%s/run.txt'", clone), "run");
	CHECK_STR(out("git -C '%s' status --porcelain", clone), "");
	free(merge);
	forge_git_free(g);
}

/* The merge commit is the person's as git would make it: GIT_AUTHOR_* and
 * GIT_COMMITTER_* first, over user.name/user.email (hunt22 #12). */
static void test_merge_commit_identity(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	char *merge = NULL;

	CHECK(repo);
	CHECK(sh("set -e; cd '%s'; git config user.name Config; git config user.email config@example.com;"
		 "git checkout -qb forge/I1; echo run >run.txt; git add run.txt; git commit -qm run;"
		 "git checkout -q main; echo more >>a.txt; git commit -qam user", repo) == 0);
	static const char *const vars[] = { "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
					    "GIT_COMMITTER_EMAIL" };
	char *saved[4];

	for (int i = 0; i < 4; i++)
		saved[i] = getenv(vars[i]) ? xstrdup(getenv(vars[i])) : NULL;
	setenv("GIT_AUTHOR_NAME", "Alice Dev", 1);
	setenv("GIT_AUTHOR_EMAIL", "alice@example.com", 1);
	setenv("GIT_COMMITTER_NAME", "CI Bot", 1);
	unsetenv("GIT_COMMITTER_EMAIL");	/* that one from the configuration */
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_merge_commit(&merge, g, "main", "forge/I1", "Merge forge/I1\n"));
	CHECK_STR(out("git -C '%s' log -1 --format='%%an <%%ae> / %%cn <%%ce>' main", repo),
		  "Alice Dev <alice@example.com> / CI Bot <config@example.com>");
	for (int i = 0; i < 4; i++) {
		if (saved[i])
			setenv(vars[i], saved[i], 1);
		else
			unsetenv(vars[i]);
		free(saved[i]);
	}
	free(merge);
	forge_git_free(g);
}

static void test_push(void)
{
	const char *repo = make_repo();
	const char *remote = fresh("remote");
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	char *sha = NULL, *sha2 = NULL, *remote_path = NULL;
	struct buf spec = BUF_INIT;

	CHECK(repo);
	remote_path = xstrdup(remote);
	CHECK(sh("git init -q --bare '%s'", remote_path) == 0);
	CHECK_OK(forge_git_open(&g, repo));
	CHECK_OK(forge_git_worktree_open(&wt, g, "P1", NULL));
	write_file(forge_git_worktree_path(wt), "a.txt", "pushed\n");
	CHECK_OK(forge_git_commit_all(&sha, wt, "to push"));
	CHECK_OK(forge_git_push(g, remote_path, "forge/P1"));
	CHECK_STR(out("git -C '%s' rev-parse refs/heads/forge/P1", remote_path), sha);
	/* By remote name, to another name. */
	CHECK(sh("git -C '%s' remote add origin '%s'", repo, remote_path) == 0);
	CHECK_OK(forge_git_push(g, "origin", "forge/P1:review/p1"));
	CHECK_STR(out("git -C '%s' rev-parse refs/heads/review/p1", remote_path), sha);
	/* A non-fast-forward is rejected, unless forced with '+'. */
	CHECK(sh("git -C '%s' commit -q --amend -m amended", forge_git_worktree_path(wt)) == 0);
	sha2 = xstrdup(out("git -C '%s' rev-parse HEAD", forge_git_worktree_path(wt)));
	CHECK_INT(forge_git_push(g, "origin", "forge/P1"), -1);
	CHECK_MSG(contains(forge_last_error(), "forge/P1"), "%s", forge_last_error());
	CHECK_STR(out("git -C '%s' rev-parse refs/heads/forge/P1", remote_path), sha);
	buf_addf(&spec, "+refs/heads/forge/P1:refs/heads/forge/P1");
	CHECK_OK(forge_git_push(g, "origin", spec.buf));
	CHECK_STR(out("git -C '%s' rev-parse refs/heads/forge/P1", remote_path), sha2);
	/* local work never read the CA bundle nor set TLS up; an https remote
	 * does both (once) */
	CHECK_INT(forge_git_ca_loads(), 0);
	if (forge_git_tls_inits() >= 0)
		CHECK_INT(forge_git_tls_inits(), 0);
	CHECK_INT(forge_git_push(g, "https://127.0.0.1:1/none.git", "forge/P1"), -1);
	CHECK_INT(forge_git_ca_loads(), 1);
	if (forge_git_tls_inits() >= 0)
		CHECK_INT(forge_git_tls_inits(), 1);
	CHECK_INT(forge_git_push(g, "https://127.0.0.1:1/none.git", "forge/P1"), -1);
	CHECK_INT(forge_git_ca_loads(), 1);
	if (forge_git_tls_inits() >= 0)
		CHECK_INT(forge_git_tls_inits(), 1);
	CHECK_INT(forge_git_push(g, out("echo '%s/nowhere.git'", tmpdir), "forge/P1"), -1);
	CHECK_INT(forge_git_push(g, "upstream", "forge/P1"), -1);
	CHECK_MSG(contains(forge_last_error(), "no remote 'upstream'"), "%s", forge_last_error());
	/* push and fetch check their words the one way */
	CHECK_INT(forge_git_push(g, "origin", ""), -1);
	CHECK_STR(forge_last_error(), "push needs a remote and a refspec");
	CHECK_INT(forge_git_fetch(g, NULL, "refs/heads/main"), -1);
	CHECK_STR(forge_last_error(), "fetch needs a remote and a refspec");
	CHECK_INT(forge_git_fetch(g, "upstream", "refs/heads/main"), -1);
	CHECK_MSG(contains(forge_last_error(), "no remote 'upstream'"), "%s", forge_last_error());
	free(sha);
	free(sha2);
	free(remote_path);
	buf_release(&spec);
	forge_git_worktree_free(wt);
	forge_git_free(g);
}

/* hooks/NAME of the repository at git_dir: a shell script. */
static void write_hook(const char *git_dir, const char *name, const char *script)
{
	CHECK(sh("printf '#!/bin/sh\\n%%s\\n' '%s' >'%s/hooks/%s' && chmod +x '%s/hooks/%s'", script, git_dir,
		 name, git_dir, name) == 0);
}

/* A push to a repository on this machine is the remote's receive-pack's to
 * take, as for git push: its hooks run and may decline, its receive.*
 * settings hold (libgit2's local transport wrote the refs past both).  The
 * hooks see no model key. */
static void test_push_local_hooks(void)
{
	const char *repo = make_repo();
	struct forge_git *g = NULL;
	char *remote = xstrdup(fresh("hooked")), *marker = xstrdup(fresh("marker"));
	char *sha = NULL, *url = NULL;
	struct buf u = BUF_INIT;

	CHECK(repo);
	CHECK(sh("git init -q --bare '%s'", remote) == 0);
	buf_addf(&u, "file://%s", remote);
	url = buf_detach(&u, NULL);
	CHECK_OK(forge_git_open(&g, repo));
	sha = xstrdup(out("git -C '%s' rev-parse main", repo));
	/* a pre-receive hook declines: nothing lands, its words in the message */
	write_hook(remote, "pre-receive", "echo policy: frozen >&2; exit 1");
	CHECK_INT(forge_git_push(g, remote, "main"), -1);
	CHECK_MSG(contains(forge_last_error(), "'refs/heads/main' rejected: pre-receive hook declined") &&
		  contains(forge_last_error(), "policy: frozen"), "%s", forge_last_error());
	CHECK_INT(forge_git_push(g, url, "main:other"), -1);
	CHECK_STR(out("git -C '%s' for-each-ref", remote), "");
	/* a post-receive hook (a push-to-deploy remote) runs, without the keys */
	CHECK(sh("rm '%s/hooks/pre-receive'", remote) == 0);
	buf_addf(&u, "cat >%s; env >%s.env", marker, marker);
	write_hook(remote, "post-receive", u.buf);
	buf_reset(&u);
	setenv("ANTHROPIC_API_KEY", "sk-ant-hook-must-not-see-this", 1);
	setenv("GIT_DIR", "/nonexistent", 1);	/* the caller's, not g's repository */
	CHECK_OK(forge_git_push(g, url, "main"));
	unsetenv("ANTHROPIC_API_KEY");
	unsetenv("GIT_DIR");
	CHECK_STR(out("cut -d' ' -f2- '%s'", marker), out("echo '%s refs/heads/main'", sha));
	CHECK_STR(out("grep -c ANTHROPIC_API_KEY '%s.env'", marker), "0");
	CHECK_STR(out("git -C '%s' rev-parse refs/heads/main", remote), sha);
	/* receive.denyNonFastForwards refuses a forced push that rewinds */
	CHECK(sh("git -C '%s' config receive.denyNonFastForwards true", remote) == 0);
	CHECK_INT(forge_git_push(g, remote, "+main~1:main"), -1);
	CHECK_MSG(contains(forge_last_error(), "'refs/heads/main' rejected"), "%s", forge_last_error());
	CHECK_STR(out("git -C '%s' rev-parse refs/heads/main", remote), sha);
	/* receive.denyCurrentBranch (git's default): the checked-out branch of
	 * a non-bare remote is refused */
	CHECK(sh("git clone -q '%s' '%s.co'", repo, remote) == 0);
	buf_addf(&u, "%s.co", remote);
	CHECK_INT(forge_git_push(g, u.buf, "+main~1:main"), -1);
	CHECK_MSG(contains(forge_last_error(), "'refs/heads/main' rejected"), "%s", forge_last_error());
	CHECK_STR(out("git -C '%s' rev-parse main", u.buf), sha);
	free(sha);
	free(url);
	free(remote);
	free(marker);
	buf_release(&u);
	forge_git_free(g);
}

/* Linked statically, libgit2's libssh2 and GSS-API stay unloaded until a
 * call needs them; the first libssh2 call loads the library and makes the
 * libssh2_init() libgit2 asked for. */
#ifdef FORGE_GIT2_STATIC
#include <libssh2.h>

static bool mapped(const char *lib)
{
	struct buf maps = BUF_INIT;
	bool found;

	if (buf_read_file(&maps, "/proc/self/maps") < 0)
		return false;
	found = strstr(maps.buf, lib) != NULL;
	buf_release(&maps);
	return found;
}

unsigned gss_indicate_mechs(unsigned *minor, void **set);
unsigned gss_release_oid_set(unsigned *minor, void **set);

static void test_static_lazy_parts(void)
{
	LIBSSH2_SESSION *s;
	void *mechs = NULL;
	unsigned minor = 0, major;

	forge_git_init();
	CHECK(!mapped("libssh2.so"));
	CHECK(!mapped("libgssapi_krb5.so"));
	s = libssh2_session_init_ex(NULL, NULL, NULL, NULL);
	CHECK(s != NULL);
	CHECK(mapped("libssh2.so"));
	libssh2_session_free(s);
	major = gss_indicate_mechs(&minor, &mechs);    /* loads Kerberos, where installed */
	CHECK(major == 0 ? mapped("libgssapi_krb5.so") : major == (16u << 16));
	if (major == 0)
		gss_release_oid_set(&minor, &mechs);
}
#endif

/* forge_git_identity() and forge_git_written_paths() share one handle of a
 * directory's repository for the process: what they say is still what is
 * on disk now -- the config as another process changed it, the index as
 * `git update-index` wrote it, the repository removed and made again. */
static void test_kept_handle_reads_fresh(void)
{
	const char *repo = make_repo();
	char *name = NULL, *email = NULL;
	jv ignored, inside, paths;

	CHECK(repo);
	CHECK(sh("git -C '%s' config user.name Ann && git -C '%s' config user.email ann@example.com", repo, repo) == 0);
	CHECK_OK(forge_git_identity(&name, &email, repo));
	CHECK_STR(name, "Ann");
	free(name);
	free(email);
	CHECK(sh("git -C '%s' config user.name 'Bob Bobson'", repo) == 0);
	CHECK_OK(forge_git_identity(&name, &email, repo));
	CHECK_STR(name, "Bob Bobson");
	free(name);
	free(email);

	write_file(repo, ".gitignore", "ign.txt\n");
	write_file(repo, "ign.txt", "x\n");
	paths = jv_parse("[\"ign.txt\", \"sub/x\"]");
	forge_git_written_paths(&ignored, &inside, repo, paths);
	CHECK_INT(jv_array_length(jv_copy(ignored)), 1);
	CHECK_INT(jv_array_length(jv_copy(inside)), 0);
	jv_free(ignored);
	jv_free(inside);
	CHECK(sh("cd '%s' && git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),sub", repo) == 0);
	forge_git_submodule_paths(&inside, repo, paths);     /* (no status first: the index as it is) */
	CHECK_INT(jv_array_length(jv_copy(inside)), 1);
	CHECK_STR(str_of(inside, "sub/x", "submodule"), "sub");
	jv_free(inside);
	/* the index file gone: no gitlink is left (before: the kept handle's
	 * old entries, as libgit2 keeps them unless forced) */
	CHECK(sh("rm '%s/.git/index'", repo) == 0);
	forge_git_submodule_paths(&inside, repo, paths);
	CHECK_INT(jv_array_length(jv_copy(inside)), 0);
	jv_free(inside);
	jv_free(paths);

	/* another repository at the same place */
	CHECK(sh("rm -rf '%s' && git init -q '%s' && git -C '%s' config user.name Cy && "
		 "git -C '%s' config user.email cy@example.com", repo, repo, repo, repo) == 0);
	CHECK_OK(forge_git_identity(&name, &email, repo));
	CHECK_STR(name, "Cy");
	free(name);
	free(email);
}

/* forge_git_gitlinks(): the index's gitlinks, relative to the working
 * tree's root; none below it or where there is none; -1 outside any
 * repository. */
static void test_gitlinks(void)
{
	const char *repo = make_repo();
	char **links = (char **)1;
	char sub[600];

	CHECK(repo);
	CHECK_OK(forge_git_gitlinks(&links, repo));
	CHECK(links == NULL);
	CHECK(sh("cd '%s' && mkdir -p lib && git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),lib/dep "
		 "--cacheinfo 160000,$(git rev-parse HEAD),top", repo) == 0);
	CHECK_OK(forge_git_gitlinks(&links, repo));
	CHECK(links && links[0] && links[1] && !links[2]);
	if (links && links[0] && links[1]) {
		CHECK_STR(links[0], "lib/dep");
		CHECK_STR(links[1], "top");
	}
	for (size_t i = 0; links && links[i]; i++)
		free(links[i]);
	free(links);
	snprintf(sub, sizeof sub, "%s/lib", repo);
	CHECK_OK(forge_git_gitlinks(&links, sub));
	CHECK(links == NULL);
	CHECK_INT(forge_git_gitlinks(&links, "/"), -1);
	CHECK(links == NULL);
}

int main(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof tmpdir, "%s/forge-test-git.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	/* The git command line must not read the developer's config. */
	setenv("HOME", tmpdir, 1);
	setenv("XDG_CONFIG_HOME", tmpdir, 1);
	{
		/* runs' worktrees made out of the checkouts (git.h forge_git_runs_dir) */
		char wts[sizeof tmpdir + 16];

		snprintf(wts, sizeof wts, "%s/worktrees", tmpdir);
		setenv("FORGE_WORKTREES", wts, 1);
	}
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("GIT_AUTHOR_NAME", "test", 1);
	setenv("GIT_AUTHOR_EMAIL", "test@example.com", 1);
	setenv("GIT_COMMITTER_NAME", "test", 1);
	setenv("GIT_COMMITTER_EMAIL", "test@example.com", 1);
	setenv("LC_ALL", "C", 1);

	RUN(test_open_errors);
	RUN(test_open_out_of_files);
	RUN(test_open_from_anywhere);
	RUN(test_has_object);
	RUN(test_find_root);
	RUN(test_open_without_main_tree);
	RUN(test_open_other_owner);
	RUN(test_trace_names);
	RUN(test_run_names);
	RUN(test_worktree_create);
	RUN(test_worktrees_at_once);
	RUN(test_worktree_reopen);
	RUN(test_runs_dir);
	RUN(test_status_and_diff);
	RUN(test_commit);
	RUN(test_commit_nested_repo);
	RUN(test_commit_branch_gone);
	RUN(test_worktree_tree);
	RUN(test_save_and_reset);
	RUN(test_command_recover);
	RUN(test_run_saved);
	RUN(test_save_and_reset_symlinked_dir);
	RUN(test_read_blob);
	RUN(test_tracked_files);
	RUN(test_empty_repository);
	RUN(test_base_check);
	RUN(test_forge_dir_file);
	RUN(test_list_and_remove);
	RUN(test_remove_deep);
	RUN(test_merge_ff);
	RUN(test_merge_ff_through_links);
	RUN(test_merge_lock);
	RUN(test_merge_commit_shallow);
	RUN(test_merge_commit_identity);
	RUN(test_kept_handle_reads_fresh);
	RUN(test_gitlinks);
	RUN(test_push);
	RUN(test_push_local_hooks);
#ifdef FORGE_GIT2_STATIC
	RUN(test_static_lazy_parts);
#endif

	unit_rmtree(tmpdir);
	return unit_done();
}
