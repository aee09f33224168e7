/*
 * sandbox.c - path confinement, command policy, command environment and
 * sandboxed execution.  See sandbox.h.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "os/sandbox.h"
#include "os/sandbox_internal.h"
#include "data/config.h"
#include "core/forge.h"
#include "core/json.h"
#include "os/landlock.h"
#include "core/secret.h"
#include "os/nsview.h"
#include "os/proc.h"
#include "os/seccomp.h"
#include "core/resource.h"
#include "core/tmpdir.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/openat2.h>
#include <locale.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif

extern char **environ;

/* ================================================================ paths */

int sandbox_fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	forge_verror(fmt, ap);
	va_end(ap);
	return code;
}

static bool is_git_name(const char *s, size_t n)
{
	return n == 4 && strncasecmp(s, ".git", 4) == 0;
}

bool sandbox_path_is_git(const char *rel)
{
	const char *p = rel;

	while (*p) {
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (is_git_name(p, n))
			return true;
		if (!e)
			break;
		p = e + 1;
	}
	return false;
}

bool sandbox_path_is_forge(const char *rel)
{
	size_t n = strcspn(rel, "/");

	return n == 6 && strncasecmp(rel, ".forge", 6) == 0;
}

int sandbox_path_clean(char **out, const char *path, bool allow_root)
{
	struct buf b = BUF_INIT;
	const char *p = path;

	*out = NULL;
	if (!path)
		return sandbox_fail(SANDBOX_EINVAL, "no path given");
	if (path[0] == '/') {
		forge_error("'%s': absolute paths are not allowed; give a path relative to the repository root",
			    path);
		return SANDBOX_EDENIED;
	}
	if (path[0] == '~') {
		forge_error("'%s': paths outside the repository are not allowed", path);
		return SANDBOX_EDENIED;
	}
	while (*p) {
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);

		if (n == 0 || (n == 1 && p[0] == '.')) {
			/* skip "" and "." */
		} else if (n == 2 && p[0] == '.' && p[1] == '.') {
			buf_release(&b);
			forge_error("'%s': '..' is not allowed; paths stay inside the repository", path);
			return SANDBOX_EDENIED;
		} else if (is_git_name(p, n)) {
			buf_release(&b);
			forge_error("'%s': the .git directory is off limits (use git_status / git_diff)",
				    path);
			return SANDBOX_EDENIED;
		} else {
			if (b.len)
				buf_addch(&b, '/');
			buf_add(&b, p, n);
		}
		if (!e)
			break;
		p = e + 1;
	}
	if (!b.len && !allow_root) {
		buf_release(&b);
		forge_error("'%s': names the repository root, not a file", path);
		return SANDBOX_EINVAL;
	}
	*out = buf_detach(&b, NULL);
	return 0;
}

int sandbox_root_open(struct sandbox_root **out, const char *dir)
{
	struct sandbox_root *r;
	char *real = realpath(dir, NULL);
	int fd;

	*out = NULL;
	if (!real)
		return forge_error("cannot open '%s': %s", dir, strerror(errno));
	fd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		free(real);
		return forge_error("cannot open '%s': %s", dir, strerror(e));
	}
	r = xcalloc(1, sizeof(*r));
	r->fd = fd;
	r->path = real;
	if (!strcmp(real, "/"))
		r->path[0] = '\0';
	*out = r;
	return 0;
}

void sandbox_root_free(struct sandbox_root *root)
{
	if (!root)
		return;
	if (root->fd >= 0)
		close(root->fd);
	free(root->path);
	free(root);
}

static int have_openat2 = -1;

/* openat2 beneath root, or openat + the real-path check alone. */
static int open_beneath(const struct sandbox_root *root, const char *rel, int flags)
{
	const char *p = *rel ? rel : ".";

	if (have_openat2 != 0) {
		struct open_how how = { 0 };
		long fd;

		how.flags = (unsigned long long)(flags | O_CLOEXEC);
		how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
		fd = syscall(SYS_openat2, root->fd, p, &how, sizeof(how));
		if (fd >= 0 || errno != ENOSYS) {
			have_openat2 = 1;
			return (int)fd;
		}
		have_openat2 = 0;
	}
	return openat(root->fd, p, flags | O_CLOEXEC);
}

/* Check where fd really is.  0, or SANDBOX_EDENIED.  *real_rel (may be NULL)
 * gets the real path relative to the root. */
static int check_fd(char **real_rel, const struct sandbox_root *root, int fd, const char *shown)
{
	char link[64], real[PATH_MAX];
	size_t rl = strlen(root->path);
	ssize_t n;
	const char *rest;

	if (real_rel)
		*real_rel = NULL;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, real, sizeof(real) - 1);
	if (n < 0) {
		forge_error("'%s': cannot check where it leads: %s", shown, strerror(errno));
		return SANDBOX_EDENIED;
	}
	real[n] = '\0';
	if (strncmp(real, root->path, rl) != 0 || (real[rl] != '/' && real[rl] != '\0')) {
		forge_error("'%s': leads outside the repository", shown);
		return SANDBOX_EDENIED;
	}
	rest = real[rl] == '/' ? real + rl + 1 : real + rl;
	if (sandbox_path_is_git(rest)) {
		forge_error("'%s': leads into .git, which is off limits", shown);
		return SANDBOX_EDENIED;
	}
	if (real_rel)
		*real_rel = xstrdup(rest);
	return 0;
}

static int open_error(const char *shown, int err)
{
	switch (err) {
	case ENOENT:
		forge_error("'%s': no such file or directory", shown);
		return SANDBOX_ENOENT;
	case EXDEV:
	case ELOOP:
		forge_error("'%s': a symbolic link leads outside the repository", shown);
		return SANDBOX_EDENIED;
	case ENOTDIR:
		forge_error("'%s': a component of the path is not a directory", shown);
		return SANDBOX_ENOENT;
	case EISDIR:
		forge_error("'%s': is a directory", shown);
		return SANDBOX_EINVAL;
	case EACCES:
	case EPERM:
		forge_error("'%s': permission denied", shown);
		return SANDBOX_EDENIED;
	}
	forge_error("'%s': %s", shown, strerror(err));
	return SANDBOX_EIO;
}

/* O_PATH open of a clean rel with every check; *real_rel optional. */
static int open_checked(int *out_fd, char **real_rel, const struct sandbox_root *root,
			const char *rel, const char *shown)
{
	int fd = open_beneath(root, rel, O_PATH);
	int rc;

	*out_fd = -1;
	if (fd < 0)
		return open_error(shown, errno);
	if ((rc = check_fd(real_rel, root, fd, shown)) < 0) {
		close(fd);
		return rc;
	}
	*out_fd = fd;
	return 0;
}

int sandbox_stat(struct stat *st, const struct sandbox_root *root, const char *rel)
{
	char *clean = NULL;
	int fd = -1, rc;

	if ((rc = sandbox_path_clean(&clean, rel, true)) < 0)
		return rc;
	if ((rc = open_checked(&fd, NULL, root, clean, rel)) < 0)
		goto out;
	if (fstat(fd, st) < 0)
		rc = open_error(rel, errno);
out:
	if (fd >= 0)
		close(fd);
	free(clean);
	return rc;
}

int sandbox_dangling_link(char **out_target, const struct sandbox_root *root, const char *rel)
{
	const char *slash = strrchr(rel, '/');
	char *dir = slash ? xstrndup(rel, (size_t)(slash - rel)) : xstrdup("");
	const char *name = slash ? slash + 1 : rel;
	struct stat st;
	char target[PATH_MAX];
	ssize_t n;
	int dfd = -1, rc = 0;

	*out_target = NULL;
	/* (the directory through every check: the link itself is not followed) */
	if (!*name || open_checked(&dfd, NULL, root, dir, rel) < 0)
		goto out;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode) ||
	    fstatat(dfd, name, &st, 0) == 0 || errno != ENOENT)
		goto out;
	n = readlinkat(dfd, name, target, sizeof target - 1);
	if (n < 0)
		goto out;
	target[n] = '\0';
	*out_target = xstrdup(target);
	rc = 1;
out:
	if (dfd >= 0)
		close(dfd);
	free(dir);
	return rc;
}

int sandbox_open_read(int *out_fd, struct stat *st, const struct sandbox_root *root,
		      const char *rel)
{
	char *clean = NULL, link[64];
	int pfd = -1, fd, rc;

	*out_fd = -1;
	if ((rc = sandbox_path_clean(&clean, rel, false)) < 0)
		return rc;
	if ((rc = open_checked(&pfd, NULL, root, clean, rel)) < 0)
		goto out;
	if (fstat(pfd, st) < 0) {
		rc = open_error(rel, errno);
		goto out;
	}
	if (S_ISDIR(st->st_mode)) {
		rc = sandbox_fail(SANDBOX_EINVAL, "'%s': is a directory (use list_files)", rel);
		goto out;
	}
	if (!S_ISREG(st->st_mode)) {
		rc = sandbox_fail(SANDBOX_EINVAL, "'%s': not a regular file", rel);
		goto out;
	}
	/* Reopen the very inode the checks were made on. */
	snprintf(link, sizeof(link), "/proc/self/fd/%d", pfd);
	fd = open(link, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = open_error(rel, errno);
		goto out;
	}
	*out_fd = fd;
out:
	if (pfd >= 0)
		close(pfd);
	free(clean);
	return rc;
}

int sandbox_read_file(struct buf *out, const struct sandbox_root *root, const char *rel,
		      size_t max)
{
	struct stat st;
	char chunk[65536];
	int fd, rc;

	if ((rc = sandbox_open_read(&fd, &st, root, rel)) < 0)
		return rc;
	if (max && (size_t)st.st_size > max) {
		close(fd);
		forge_error("'%s': too large (%lld bytes, limit %zu)", rel, (long long)st.st_size, max);
		return SANDBOX_EINVAL;
	}
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = open_error(rel, errno);
			break;
		}
		if (n == 0)
			break;
		if ((max && out->len + (size_t)n > max) || buf_add(out, chunk, (size_t)n) < 0) {
			rc = sandbox_fail(SANDBOX_EINVAL, "'%s': too large (limit %zu bytes)", rel, max);
			break;
		}
	}
	close(fd);
	return rc;
}

/* ================================================================ txn */

struct txn_op {
	char *rel;           /* as given */
	bool remove;
	char *data;
	size_t len;
	char *like;          /* a new file takes this file's mode, or NULL */
	/* staged */
	int dirfd;           /* O_PATH fd of the target's directory */
	char *name;          /* target's name in dirfd */
	char *tmp;           /* staged temporary file in dirfd */
	/* committed */
	char *bak;           /* the target's original, kept in dirfd until the commit ends */
	bool created;        /* the target did not exist: undone by removing it */
	bool done;           /* renamed or unlinked */
};

struct sandbox_txn {
	const struct sandbox_root *root;
	struct txn_op *ops;
	size_t n;
	char **made_dirs;    /* directories created while staging (real rel) */
	size_t nmade;
	bool partial;        /* a failed commit left a change it could not undo */
};

struct sandbox_txn *sandbox_txn_new(const struct sandbox_root *root)
{
	struct sandbox_txn *t = xcalloc(1, sizeof(*t));
	t->root = root;
	return t;
}

static struct txn_op *txn_push(struct sandbox_txn *t, const char *rel)
{
	struct txn_op *op;

	t->ops = xrealloc(t->ops, (t->n + 1) * sizeof(*t->ops));
	op = &t->ops[t->n++];
	memset(op, 0, sizeof(*op));
	op->rel = xstrdup(rel);
	op->dirfd = -1;
	return op;
}

void sandbox_txn_write(struct sandbox_txn *t, const char *rel, const char *data, size_t len)
{
	struct txn_op *op = txn_push(t, rel);
	op->data = xmalloc(len + 1);
	memcpy(op->data, data, len);
	op->len = len;
}

void sandbox_txn_write_like(struct sandbox_txn *t, const char *rel, const char *data, size_t len,
			    const char *like)
{
	sandbox_txn_write(t, rel, data, len);
	t->ops[t->n - 1].like = xstrdup(like);
}

void sandbox_txn_remove(struct sandbox_txn *t, const char *rel)
{
	txn_push(t, rel)->remove = true;
}

void sandbox_txn_free(struct sandbox_txn *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		struct txn_op *op = &t->ops[i];
		if (op->tmp && op->dirfd >= 0)
			unlinkat(op->dirfd, op->tmp, 0);
		if (op->bak && op->dirfd >= 0)
			unlinkat(op->dirfd, op->bak, 0);
		if (op->dirfd >= 0)
			close(op->dirfd);
		free(op->rel);
		free(op->bak);
		free(op->data);
		free(op->like);
		free(op->name);
		free(op->tmp);
	}
	for (size_t i = 0; i < t->nmade; i++)
		free(t->made_dirs[i]);
	free(t->made_dirs);
	free(t->ops);
	free(t);
}

/* Open (creating when missing) the directory dir (clean rel) beneath the
 * root; returns an O_PATH fd or a negative code. */
static int open_dir_mkdirs(struct sandbox_txn *t, const char *dir, const char *shown, int *out_fd)
{
	const struct sandbox_root *root = t->root;
	char *prefix = xstrdup(dir);
	size_t len = strlen(dir);
	int fd = -1, rc = 0;

	*out_fd = -1;
	/* Walk down component by component from the root. */
	for (size_t i = 0; i <= len; i++) {
		if (i < len && dir[i] != '/')
			continue;
		prefix[i] = '\0';
		if (fd >= 0)
			close(fd);
		fd = -1;
		rc = open_checked(&fd, NULL, root, prefix, shown);
		if (rc == SANDBOX_ENOENT) {
			/* Create it inside its (checked) parent. */
			char *slash = strrchr(prefix, '/');
			int pfd = -1;
			const char *name = slash ? slash + 1 : prefix;

			if (slash)
				*slash = '\0';
			rc = open_checked(&pfd, NULL, root, slash ? prefix : "", shown);
			if (slash)
				*slash = '/';
			if (rc < 0)
				goto out;
			if (mkdirat(pfd, name, 0777) < 0 && errno != EEXIST) {
				rc = open_error(shown, errno);
				close(pfd);
				goto out;
			}
			close(pfd);
			t->made_dirs = xrealloc(t->made_dirs, (t->nmade + 1) * sizeof(char *));
			t->made_dirs[t->nmade++] = xstrdup(prefix);
			rc = open_checked(&fd, NULL, root, prefix, shown);
		}
		if (rc < 0)
			goto out;
		{
			struct stat st;
			if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) {
				rc = sandbox_fail(SANDBOX_EINVAL, "'%s': '%s' is not a directory", shown, prefix);
				goto out;
			}
		}
		if (i < len)
			prefix[i] = '/';
	}
	*out_fd = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	free(prefix);
	return rc;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Refuse an op whose real target (dirfd's real path + name) lies under the
 * top-level .forge directory, also when reached through a symlink. */
static int check_not_forge(const struct sandbox_root *root, int dirfd, const char *name,
			   const char *shown)
{
	struct buf real = BUF_INIT;
	char *dir = NULL;
	int rc = check_fd(&dir, root, dirfd, shown);

	if (rc < 0)
		return rc;
	buf_addf(&real, "%s%s%s", dir, *dir ? "/" : "", name);
	if (sandbox_path_is_forge(real.buf))
		rc = sandbox_fail(SANDBOX_EDENIED, "'%s': .forge holds Forge's own configuration and "
				  "database; the agent may not change it", shown);
	buf_release(&real);
	free(dir);
	return rc;
}

/* Resolve the op's target (following in-tree symlinks of an existing file),
 * open its directory and, for a write, stage the temporary file. */
static int txn_stage(struct sandbox_txn *t, struct txn_op *op)
{
	char *clean = NULL, *target = NULL, *dir = NULL;
	const char *name;
	int fd = -1, rc;
	mode_t mode = 0666;
	bool exists = false, set_mode = false;   /* set_mode: give the new file `mode` */

	if ((rc = sandbox_path_clean(&clean, op->rel, false)) < 0)
		return rc;
	if (op->remove) {
		target = xstrdup(clean);
	} else {
		rc = open_checked(&fd, &target, t->root, clean, op->rel);
		if (rc == SANDBOX_ENOENT) {
			target = xstrdup(clean);
			rc = 0;
		} else if (rc < 0) {
			goto out;
		} else {
			struct stat st;
			if (fstat(fd, &st) < 0) {
				rc = open_error(op->rel, errno);
				goto out;
			}
			if (!S_ISREG(st.st_mode)) {
				rc = sandbox_fail(SANDBOX_EINVAL, "'%s': %s", op->rel, S_ISDIR(st.st_mode) ?
						 "is a directory" : "not a regular file");
				goto out;
			}
			mode = st.st_mode & 07777;
			exists = set_mode = true;
		}
		struct stat like;
		if (!exists && op->like && sandbox_stat(&like, t->root, op->like) == 0 &&
		    S_ISREG(like.st_mode)) {
			mode = like.st_mode & 0777;
			set_mode = true;
		}
	}
	name = strrchr(target, '/');
	dir = name ? xstrndup(target, (size_t)(name - target)) : xstrdup("");
	name = name ? name + 1 : target;
	if (op->remove) {
		struct stat st;
		rc = open_checked(&op->dirfd, NULL, t->root, dir, op->rel);
		if (rc < 0 || (rc = check_not_forge(t->root, op->dirfd, name, op->rel)) < 0)
			goto out;
		if (fstatat(op->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = open_error(op->rel, errno);
			goto out;
		}
		if (S_ISDIR(st.st_mode)) {
			rc = sandbox_fail(SANDBOX_EINVAL, "'%s': is a directory", op->rel);
			goto out;
		}
		op->name = xstrdup(name);
		goto out;
	}
	if (sandbox_path_is_forge(target)) {
		/* before creating any directory for it */
		rc = sandbox_fail(SANDBOX_EDENIED, "'%s': .forge holds Forge's own configuration and "
				  "database; the agent may not change it", op->rel);
		goto out;
	}
	size_t depth = 0;
	for (const char *p = target; (p = strchr(p, '/')); p++)
		depth++;
	if (depth > SANDBOX_DIR_DEPTH_MAX) {
		/* before creating any directory for it: written, the file would
		 * fail every status, diff and commit of the worktree after (the
		 * reason first: such a path is long, and an event cuts it) */
		rc = sandbox_fail(SANDBOX_EINVAL, "a path nested %zu directories deep, more than the %d git "
				  "(libgit2) can take: use a shallower one ('%s')", depth, SANDBOX_DIR_DEPTH_MAX,
				  op->rel);
		goto out;
	}
	if ((rc = open_dir_mkdirs(t, dir, op->rel, &op->dirfd)) < 0 ||
	    (rc = check_not_forge(t->root, op->dirfd, name, op->rel)) < 0)
		goto out;
	op->name = xstrdup(name);
	for (int attempt = 0; attempt < 100; attempt++) {
		char tmp[64];
		int wfd;

		snprintf(tmp, sizeof(tmp), ".forge-tmp-%ld-%d", (long)getpid(), rand() % 1000000);
		wfd = openat(op->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			     set_mode ? 0600 : 0666);
		if (wfd < 0 && errno == EEXIST)
			continue;
		if (wfd < 0) {
			rc = open_error(op->rel, errno);
			goto out;
		}
		op->tmp = xstrdup(tmp);
		if (write_all(wfd, op->data, op->len) < 0 || (set_mode && fchmod(wfd, mode) < 0)) {
			rc = open_error(op->rel, errno);
			close(wfd);
			goto out;
		}
		if (close(wfd) < 0) {
			rc = open_error(op->rel, errno);
			goto out;
		}
		break;
	}
	if (!op->tmp)
		rc = sandbox_fail(SANDBOX_EIO, "'%s': cannot create a temporary file", op->rel);
out:
	if (fd >= 0)
		close(fd);
	free(clean);
	free(target);
	free(dir);
	return rc;
}

/*
 * One transaction cannot write a file where another of its ops needs a
 * directory ("Add File: a" and "Add File: a/b"): staging the second made
 * the directory 'a', the first's rename then failed on it with "'a': is a
 * directory" -- after staging, so that directory stayed.  Refused before
 * anything is staged, naming both paths.
 */
static int txn_check_conflicts(const struct sandbox_txn *t)
{
	char **clean = xcalloc(t->n ? t->n : 1, sizeof(*clean));
	int rc = 0;

	/* (a path that does not clean is refused by its staging) */
	for (size_t i = 0; i < t->n; i++)
		if (sandbox_path_clean(&clean[i], t->ops[i].rel, false) < 0)
			clean[i] = NULL;
	for (size_t i = 0; i < t->n && rc == 0; i++) {
		size_t len = clean[i] ? strlen(clean[i]) : 0;

		if (!clean[i] || t->ops[i].remove)
			continue;
		for (size_t j = 0; j < t->n; j++)
			if (j != i && clean[j] && !strncmp(clean[j], clean[i], len) && clean[j][len] == '/') {
				rc = sandbox_fail(SANDBOX_EINVAL, "'%s' is written as a file and is also the directory "
						  "of '%s': one change cannot make a path both; write one of them",
						  t->ops[i].rel, t->ops[j].rel);
				break;
			}
	}
	for (size_t i = 0; i < t->n; i++)
		free(clean[i]);
	free(clean);
	return rc;
}

/*
 * Keep the original of op's target under a new name beside it (a hard
 * link, so the commit's rename or unlink leaves it there) until the commit
 * ends, for a later op's failure to put it back.  No original: op->created.
 * A file system without hard links keeps nothing: that op cannot be undone.
 */
static void txn_keep_original(struct txn_op *op)
{
	for (int attempt = 0; attempt < 100; attempt++) {
		char bak[64];

		snprintf(bak, sizeof(bak), ".forge-bak-%ld-%d", (long)getpid(), rand() % 1000000);
		if (linkat(op->dirfd, op->name, op->dirfd, bak, 0) == 0) {
			op->bak = xstrdup(bak);
			return;
		}
		if (errno == ENOENT)
			op->created = true;
		if (errno != EEXIST)
			return;
	}
}

static int txn_apply_op(struct txn_op *op)
{
	txn_keep_original(op);
	if (op->remove) {
		if (unlinkat(op->dirfd, op->name, 0) < 0 && errno != ENOENT)
			return open_error(op->rel, errno);
	} else {
		if (renameat(op->dirfd, op->tmp, op->dirfd, op->name) < 0)
			return open_error(op->rel, errno);
		free(op->tmp);
		op->tmp = NULL;
	}
	op->done = true;
	return 0;
}

/* Put back what the ops done so far changed, last first; names what could
 * not be put back in the message (t->partial). */
static void txn_undo(struct sandbox_txn *t)
{
	struct buf lost = BUF_INIT;

	for (size_t i = t->n; i > 0; i--) {
		struct txn_op *op = &t->ops[i - 1];
		bool undone;

		if (!op->done)
			continue;
		if (op->bak)
			undone = renameat(op->dirfd, op->bak, op->dirfd, op->name) == 0;
		else if (op->created)
			undone = unlinkat(op->dirfd, op->name, 0) == 0 || errno == ENOENT;
		else
			undone = false;
		if (!undone) {
			buf_addf(&lost, "%s'%s'", lost.len ? ", " : "", op->rel);
			/* the only copy of the original now: left for the user */
			if (op->bak)
				buf_addf(&lost, " (its original kept beside it as '%s')", op->bak);
		}
		free(op->bak);
		op->bak = NULL;
	}
	if (lost.len) {
		t->partial = true;
		forge_error_prefix("changed and not put back: %s", lost.buf);
	}
	buf_release(&lost);
}

int sandbox_txn_commit(struct sandbox_txn *t)
{
	int rc = 0;

	if ((rc = txn_check_conflicts(t)) < 0)
		return rc;
	for (size_t i = 0; i < t->n; i++)
		if ((rc = txn_stage(t, &t->ops[i])) < 0)
			goto abort;
	for (size_t i = 0; i < t->n; i++)
		if ((rc = txn_apply_op(&t->ops[i])) < 0) {
			/* (the failed op changed nothing: its original stays) */
			txn_undo(t);
			goto abort;
		}
	for (size_t i = 0; i < t->n; i++) {
		struct txn_op *op = &t->ops[i];
		if (op->bak)
			unlinkat(op->dirfd, op->bak, 0);
		free(op->bak);
		op->bak = NULL;
	}
	return 0;
abort:
	for (size_t i = 0; i < t->n; i++) {
		struct txn_op *op = &t->ops[i];
		if (op->tmp && op->dirfd >= 0)
			unlinkat(op->dirfd, op->tmp, 0);
		free(op->tmp);
		op->tmp = NULL;
		if (op->bak && !op->done && op->dirfd >= 0)
			unlinkat(op->dirfd, op->bak, 0);   /* the failed op's own */
		if (!op->done) {
			free(op->bak);
			op->bak = NULL;
		}
	}
	/* (a directory that still holds what could not be undone stays) */
	for (size_t i = t->nmade; i > 0; i--)
		unlinkat(t->root->fd, t->made_dirs[i - 1], AT_REMOVEDIR);
	return rc;
}

bool sandbox_txn_partial(const struct sandbox_txn *t)
{
	return t && t->partial;
}

/* ================================================================ policy */

struct sandbox_rule {
	char *src;
	pcre2_code *code;       /* NULL until compiled, or when it did not compile */
	bool tried;             /* compiled, or tried to */
	bool in_any;            /* one of its list's sandbox_any */
};

/*
 * The rules of a list that start with {cmd} (most of them), as one pattern:
 * {cmd}(?:BODY1|BODY2|...).  A command matches it exactly when it matches
 * one of those rules, so a command that matches none of a list -- nearly
 * every command -- is told apart by one match, after one compile of the
 * long {cmd} prefix instead of one a rule (1.5M of 2.2M instructions of a
 * session's first check).  Only a hit compiles the rules themselves, to
 * name the first one in the list's order that matched.
 */
struct sandbox_any {
	pcre2_code *code;
};

/* Lazily compiled policies may be checked from several threads. */
static pthread_mutex_t rules_lock = PTHREAD_MUTEX_INITIALIZER;

#define CMDPOS "(?:^|[;&|(`{\\n]|\\$\\(|\\b(?:then|do|else|sudo|exec|command|nohup|time|nice|env|xargs|builtin)\\s)\\s*(?:(?:-\\S+|\\w+=\\S*)\\s+)*(?:\\S*/)?"

/* Compile r->src into r->code: 0, or -1 with a message. */
static int rule_compile(struct sandbox_rule *r)
{
	r->tried = true;
	struct buf b = BUF_INIT;
	const char *src = r->src, *p = src, *q;
	int err;
	PCRE2_SIZE off;

	while ((q = strstr(p, "{cmd}"))) {
		buf_add(&b, p, (size_t)(q - p));
		buf_adds(&b, CMDPOS);
		p = q + 5;
	}
	buf_adds(&b, p);
	r->code = pcre2_compile((PCRE2_SPTR)b.buf, b.len, 0, &err, &off, NULL);
	buf_release(&b);
	if (!r->code) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(err, msg, sizeof(msg));
		return forge_error("sandbox: pattern '%s': %s at offset %zu", src, (char *)msg,
				   (size_t)off);
	}
	return 0;
}

/* Add list's patterns to rules, compiled unless lazy. */
static int rules_add(struct sandbox_rule **rules, size_t *n, jv list /* borrows */, bool lazy)
{
	if (!json_is(list, JV_KIND_ARRAY))
		return 0;
	for (int i = 0; i < jv_array_length(jv_copy(list)); i++) {
		jv s = jv_array_get(jv_copy(list), i);
		int rc = 0;
		if (json_is(s, JV_KIND_STRING)) {
			*rules = xrealloc(*rules, (*n + 1) * sizeof(**rules));
			memset(&(*rules)[*n], 0, sizeof(**rules));
			(*rules)[*n].src = xstrdup(jv_string_value(s));
			rc = lazy ? 0 : rule_compile(&(*rules)[*n]);
			(*n)++;
		}
		jv_free(s);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static char **strlist(jv list /* borrows */)
{
	int n = json_is(list, JV_KIND_ARRAY) ? jv_array_length(jv_copy(list)) : 0;
	char **v = xcalloc((size_t)n + 1, sizeof(char *));
	int k = 0;

	for (int i = 0; i < n; i++) {
		jv s = jv_array_get(jv_copy(list), i);
		if (json_is(s, JV_KIND_STRING))
			v[k++] = xstrdup(jv_string_value(s));
		jv_free(s);
	}
	return v;
}

static enum sandbox_mode mode_of(const char *s)
{
	if (!s || !strcmp(s, "auto"))
		return SANDBOX_AUTO;
	if (!strcmp(s, "require") || !strcmp(s, "deny"))
		return SANDBOX_REQUIRE;
	return SANDBOX_OFF;   /* "off", "allow" */
}

/* section.key, falling back to the built-in defaults. */
static jv pick(jv section, jv defaults, const char *key)
{
	if (json_has(section, key))
		return json_get(section, key);
	return json_get(defaults, key);
}

/* True when section has every key the policy reads.  A configuration's
 * section always has (its defaults layer gives them all), so the built-in
 * file, 25 KiB of JSON, is parsed only for a partial section (unit tests,
 * tools run without a configuration). */
static bool section_complete(jv section /* borrows */)
{
	static const char *const keys[] = {
		"command_timeout_s", "output_cap_bytes", "landlock", "network", "namespaces",
		"read_anywhere", "read_paths", "limits", "writable", "env",
		"deny", "deny_extra", "ask", "ask_extra",
	};

	static const char *const limit_keys[] = { "memory_mb", "file_size_mb", "open_files",
						   "processes" };
	bool complete = true;

	for (size_t i = 0; i < sizeof keys / sizeof *keys && complete; i++)
		complete = json_has(section, keys[i]);
	if (complete) {
		jv lim = json_get(section, "limits");
		for (size_t i = 0; i < sizeof limit_keys / sizeof *limit_keys && complete; i++)
			complete = json_has(lim, limit_keys[i]);
		jv_free(lim);
	}
	return complete;
}

static int policy_build(struct sandbox_policy **out, jv section, bool lazy_rules)
{
	const struct resource *res = NULL;
	struct sandbox_policy *p = xcalloc(1, sizeof(*p));
	jv all = jv_null(), defs;
	if (section_complete(section)) {
		defs = jv_copy(section);
	} else {
		res = resource_find("config.defaults.json");
		all = res ? json_parse(res->data, res->len) : jv_null();
		defs = json_get(all, "sandbox");
	}
	jv lim, v;
	int rc = -1;

	*out = NULL;
	p->timeout_ms = (long)(json_get_num(section, "command_timeout_s",
					    json_get_num(defs, "command_timeout_s", 120)) * 1000);
	p->output_cap = (size_t)json_get_num(section, "output_cap_bytes",
					     json_get_num(defs, "output_cap_bytes", 65536));
	p->landlock = mode_of(json_has(section, "landlock") ? json_get_str(section, "landlock")
				      : json_get_str(defs, "landlock"));
	p->network = mode_of(json_has(section, "network") ? json_get_str(section, "network")
				     : json_get_str(defs, "network"));
	p->namespaces = mode_of(json_has(section, "namespaces") ? json_get_str(section, "namespaces")
					: json_get_str(defs, "namespaces"));
	p->read_anywhere = json_get_bool(section, "read_anywhere",
					 json_get_bool(defs, "read_anywhere", false));
	v = pick(section, defs, "read_paths");
	p->read_paths = strlist(v);
	jv_free(v);
	lim = pick(section, defs, "limits");
	{
		jv dl = json_get(defs, "limits");
		double mem = json_get_num(lim, "memory_mb", json_get_num(dl, "memory_mb", 0));
		double fsz = json_get_num(lim, "file_size_mb", json_get_num(dl, "file_size_mb", 0));
		p->limits.as_bytes = (unsigned long long)mem * 1024ULL * 1024ULL;
		p->limits.fsize_bytes = (unsigned long long)fsz * 1024ULL * 1024ULL;
		p->limits.nofile = (unsigned long)json_get_num(lim, "open_files",
							       json_get_num(dl, "open_files", 0));
		p->limits.nproc = (unsigned long)json_get_num(lim, "processes",
							      json_get_num(dl, "processes", 0));
		jv_free(dl);
	}
	jv_free(lim);
	p->limits.cpu_s = (unsigned long)(p->timeout_ms / 1000) + 10;
	/* Out of memory, the kernel kills a command before Forge and its
	 * reaper, which end what the command leaves and record what happened. */
	p->limits.oom_score_adj = 500;
	v = pick(section, defs, "writable");
	p->writable = strlist(v);
	jv_free(v);
	v = pick(section, defs, "env");
	p->env_extra = strlist(v);
	jv_free(v);
	static const char *const deny_keys[] = { "deny", "deny_extra" };
	static const char *const ask_keys[] = { "ask", "ask_extra" };
	for (int i = 0; i < 2; i++) {
		int r1, r2;
		v = pick(section, defs, deny_keys[i]);
		r1 = rules_add(&p->deny, &p->ndeny, v, lazy_rules);
		jv_free(v);
		v = pick(section, defs, ask_keys[i]);
		r2 = rules_add(&p->ask, &p->nask, v, lazy_rules);
		jv_free(v);
		if (r1 < 0 || r2 < 0)
			goto out;
	}
	p->rules_compiled = !lazy_rules;
	*out = p;
	p = NULL;
	rc = 0;
out:
	sandbox_policy_free(p);
	jv_free(defs);
	jv_free(all);
	return rc;
}

int sandbox_policy_new(struct sandbox_policy **out, jv section)
{
	return policy_build(out, section, false);
}

int sandbox_policy_from_config(struct sandbox_policy **out, const struct config *cfg)
{
	jv section = cfg ? config_get(cfg, "sandbox") : jv_null();
	int rc = policy_build(out, section, cfg != NULL);
	jv_free(section);
	return rc;
}

/*
 * Whether a rule can go into its list's sandbox_any: it starts with {cmd},
 * has no other, no top-level |, and its body nothing whose meaning depends on the rest of
 * the pattern -- group numbers (\1, \g, \k, (?P=, (?&, (?1, (?(1)) or
 * backtracking verbs ((*COMMIT) and its like cut other alternatives short).
 * Conservative: a literal that looks like one keeps the rule on its own.
 */
/* Whether body has a | outside any group (then "{cmd}A|B" means
 * ({cmd}A)|B, which no (?:A|B) after {cmd} says), or \Q quoting, which
 * this does not follow. */
static bool top_level_bar(const char *body)
{
	int depth = 0;
	bool in_class = false;

	for (const char *q = body; *q; q++) {
		if (*q == '\\') {
			if (q[1] == 'Q')
				return true;
			if (q[1])
				q++;
		} else if (in_class) {
			in_class = *q != ']';
		} else if (*q == '[') {
			in_class = true;
			if (q[1] == '^')
				q++;
			if (q[1] == ']')
				q++;     /* a ] first in a class is one of its characters */
		} else if (*q == '(') {
			depth++;
		} else if (*q == ')') {
			depth--;
		} else if (*q == '|' && depth <= 0) {
			return true;
		}
	}
	return false;
}

static bool combinable(const char *src)
{
	static const char *const shifty[] = { "\\g", "\\k", "(?P", "(?&", "(?R", "(?(", "(*", "{cmd}" };
	const char *body = src + 5;

	if (strncmp(src, "{cmd}", 5) != 0 || top_level_bar(body))
		return false;
	for (size_t i = 0; i < sizeof shifty / sizeof *shifty; i++)
		if (strstr(body, shifty[i]))
			return false;
	for (const char *q = body; (q = strpbrk(q, "\\(")); q++)
		if ((*q == '\\' && q[1] >= '1' && q[1] <= '9') ||
		    (*q == '(' && q[1] == '?' && (isdigit((unsigned char)q[2]) || q[2] == '+' || q[2] == '-')))
			return false;
	return true;
}

/* The list's sandbox_any, or NULL when fewer than two rules combine or the
 * whole does not compile (then each rule is matched on its own). */
static struct sandbox_any *any_build(struct sandbox_rule *rules, size_t n)
{
	struct buf b = BUF_INIT;
	struct sandbox_any *any = NULL;
	size_t k = 0;
	int err;
	PCRE2_SIZE off;

	buf_adds(&b, CMDPOS "(?:");
	for (size_t i = 0; i < n; i++) {
		if (!combinable(rules[i].src))
			continue;
		buf_adds(&b, k++ ? ")|(?:" : "(?:");
		buf_adds(&b, rules[i].src + 5);
	}
	buf_adds(&b, "))");
	pcre2_code *code = k >= 2 ? pcre2_compile((PCRE2_SPTR)b.buf, b.len, 0, &err, &off, NULL) : NULL;

	if (code) {
		any = xcalloc(1, sizeof *any);
		any->code = code;
		for (size_t i = 0; i < n; i++)
			rules[i].in_any = combinable(rules[i].src);
	}
	buf_release(&b);
	return any;
}

static void any_free(struct sandbox_any *any)
{
	if (any) {
		pcre2_code_free(any->code);
		free(any);
	}
}

/* Ready p's rules, once: a list's sandbox_any, the rules outside it
 * compiled (a pattern that fails keeps code NULL). */
static void rules_compile_all(const struct sandbox_policy *p)
{
	struct sandbox_policy *w = (struct sandbox_policy *)p;   /* allocated writable */

	pthread_mutex_lock(&rules_lock);
	if (!p->rules_compiled) {
		w->any_deny = any_build(w->deny, w->ndeny);
		w->any_ask = any_build(w->ask, w->nask);
		for (size_t i = 0; i < p->ndeny; i++)
			if (!p->deny[i].in_any)
				(void)rule_compile(&p->deny[i]);
		for (size_t i = 0; i < p->nask; i++)
			if (!p->ask[i].in_any)
				(void)rule_compile(&p->ask[i]);
		w->rules_compiled = true;
	}
	pthread_mutex_unlock(&rules_lock);
}

static void rules_free(struct sandbox_rule *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(r[i].src);
		pcre2_code_free(r[i].code);
	}
	free(r);
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

void sandbox_policy_free(struct sandbox_policy *p)
{
	if (!p)
		return;
	rules_free(p->deny, p->ndeny);
	rules_free(p->ask, p->nask);
	any_free(p->any_deny);
	any_free(p->any_ask);
	strv_free(p->writable);
	strv_free(p->read_paths);
	strv_free(p->env_extra);
	free(p);
}

/* The normalised command text; with unquote, ' " and \ removed too. */
static char *normalise(const char *cmd, bool unquote)
{
	struct buf b = BUF_INIT;
	bool blank = false;

	for (const char *p = cmd; *p; p++) {
		char c = *p;
		if (c == '\\' && p[1] == '\n') {
			p++;
			c = ' ';
		}
		if (c == '\n') {
			while (b.len && b.buf[b.len - 1] == ' ')
				b.buf[--b.len] = '\0';
			if (b.len)
				buf_adds(&b, "; ");
			blank = true;
			continue;
		}
		if (unquote && (c == '\'' || c == '"' || c == '\\'))
			continue;
		if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
			blank = true;
			continue;
		}
		if (blank && b.len && b.buf[b.len - 1] != ' ')
			buf_addch(&b, ' ');
		blank = false;
		buf_addch(&b, c);
	}
	return buf_detach(&b, NULL);
}

/* Whether code matches a or b (the two normalised forms of a command). */
static bool matches(const pcre2_code *code, const char *a, const char *b)
{
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
	bool hit = pcre2_match(code, (PCRE2_SPTR)a, strlen(a), 0, 0, md, NULL) >= 0 ||
		   pcre2_match(code, (PCRE2_SPTR)b, strlen(b), 0, 0, md, NULL) >= 0;

	pcre2_match_data_free(md);
	return hit;
}

/* The first rule of the list that matches a or b, or NULL.  With any, the
 * rules in it are only looked at one by one when it matched. */
static const char *rules_match(struct sandbox_rule *rules, size_t n, const struct sandbox_any *any,
			       const char *a, const char *b)
{
	bool any_hit = any && matches(any->code, a, b);

	for (size_t i = 0; i < n; i++) {
		if (rules[i].in_any && !any_hit)
			continue;
		if (rules[i].in_any) {
			/* Compiled at its list's first hit, maybe by another
			 * thread right now: tried and code are read under the
			 * lock (the others were compiled by rules_compile_all,
			 * under it too, before this check began). */
			pthread_mutex_lock(&rules_lock);
			if (!rules[i].tried)
				(void)rule_compile(&rules[i]);
			pthread_mutex_unlock(&rules_lock);
		}
		if (!rules[i].code)
			return rules[i].src;    /* did not compile: fail closed */
		if (matches(rules[i].code, a, b))
			return rules[i].src;
	}
	return NULL;
}

enum sandbox_verdict sandbox_check_command(const struct sandbox_policy *p, const char *cmd,
					   const char **rule)
{
	char *a = normalise(cmd, false), *b = normalise(cmd, true);
	enum sandbox_verdict v = SANDBOX_ALLOW;
	const char *hit;

	rules_compile_all(p);

	if ((hit = rules_match(p->deny, p->ndeny, p->any_deny, a, b)))
		v = SANDBOX_DENY;
	else if ((hit = rules_match(p->ask, p->nask, p->any_ask, a, b)))
		v = SANDBOX_ASK;
	if (rule)
		*rule = hit;
	free(a);
	free(b);
	return v;
}

static const char *mode_name(enum sandbox_mode m, bool net)
{
	if (m == SANDBOX_AUTO)
		return "auto";
	if (m == SANDBOX_REQUIRE)
		return net ? "deny" : "require";
	return net ? "allow" : "off";
}

int sandbox_features(jv *out, const struct sandbox_policy *p)
{
	const char *why = NULL, *nswhy = NULL, *cgwhy = NULL, *cgbase;
	bool net = netns_available(&why), ns = nsview_available(&nswhy);
	int abi = landlock_abi();
	jv ll = jv_object(), nn = jv_object(), f = jv_object(), nsj = jv_object(), cg = jv_object();
	jv sc = jv_object();
	long pfd;

	ll = json_set(ll, "available", jv_bool(abi > 0));
	ll = json_set(ll, "abi", jv_number(abi));
	ll = json_set(ll, "writes", jv_bool(abi > 0));
	ll = json_set(ll, "reads", jv_bool(abi > 0));
	ll = json_set(ll, "scope", jv_bool(abi >= 6));
	if (abi <= 0)
		ll = json_set(ll, "reason", jv_string("the kernel offers no Landlock"));
	nn = json_set(nn, "available", jv_bool(net));
	if (!net)
		nn = json_set(nn, "reason", jv_string(why ? why : "unknown"));
	nsj = json_set(nsj, "available", jv_bool(ns));
	nsj = json_set(nsj, "user", jv_bool(ns));
	nsj = json_set(nsj, "pid", jv_bool(ns));
	nsj = json_set(nsj, "mount", jv_bool(ns));
	nsj = json_set(nsj, "ipc", jv_bool(ns));
	if (!ns)
		nsj = json_set(nsj, "reason", jv_string(nswhy ? nswhy : "unknown"));
	cgbase = cgroup_pids_base(&cgwhy);
	cg = json_set(cg, "available", jv_bool(cgbase != NULL));
	cg = cgbase ? json_set(cg, "path", jv_string(cgbase))
		    : json_set(cg, "reason", jv_string(cgwhy ? cgwhy : "unknown"));
	{
		int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
		sc = json_set(sc, "available", jv_bool(mode >= 0 && seccomp_known()));
		sc = json_set(sc, "used", jv_bool(mode >= 0 && seccomp_known()));
		jv names = jv_array();

		for (const char *const *r = seccomp_refused(); *r; r++)
			names = jv_array_append(names, jv_string(*r));
		sc = json_set(sc, "refuses", names);
	}
	if (p) {
		ll = json_set(ll, "mode", jv_string(mode_name(p->landlock, false)));
		nn = json_set(nn, "mode", jv_string(mode_name(p->network, true)));
		nsj = json_set(nsj, "mode", jv_string(mode_name(p->namespaces, false)));
		ll = json_set(ll, "read_anywhere", jv_bool(p->read_anywhere));
		cg = json_set(cg, "max", jv_number((double)p->limits.nproc));
	}
	f = json_set(f, "landlock", ll);
	f = json_set(f, "network_namespace", nn);
	f = json_set(f, "namespaces", nsj);
	f = json_set(f, "cgroup_pids", cg);
	f = json_set(f, "seccomp", sc);
	{
		/* a command's PID 1: forge-sandbox-init, or a copy of this process */
		const char *init_why = NULL, *init = proc_sandbox_init(&init_why);
		jv pid1 = json_set(jv_object(), "program", init ? jv_string(init) : jv_null());

		if (!init)
			pid1 = json_set(pid1, "reason", jv_string(init_why ? init_why : "unknown"));
		f = json_set(f, "pid1", pid1);
	}
	{
		struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_BENEATH };
		long fd = syscall(SYS_openat2, AT_FDCWD, ".", &how, sizeof(how));
		f = json_set(f, "openat2", jv_bool(fd >= 0 || errno != ENOSYS));
		if (fd >= 0)
			close((int)fd);
	}
	pfd = syscall(SYS_pidfd_open, getpid(), 0);
	f = json_set(f, "pidfd", jv_bool(pfd >= 0));
	if (pfd >= 0)
		close((int)pfd);
	*out = f;
	return 0;
}

/* ================================================================ env */

static bool name_is_secret(const char *name, size_t n)
{
	static const char *const words[] = {
		"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", NULL,
	};
	char up[256];

	if (n >= sizeof(up))
		return true;
	for (size_t i = 0; i < n; i++)
		up[i] = (char)toupper((unsigned char)name[i]);
	up[n] = '\0';
	for (size_t i = 0; words[i]; i++)
		if (strstr(up, words[i]))
			return true;
	for (size_t i = 0; llm_secret_env_names[i]; i++)
		if (!strcmp(up, llm_secret_env_names[i]))
			return true;
	return false;
}

/*
 * The variables that name a host socket or agent: with the network cut a
 * command is not to reach them (os/seccomp.h), nor learn where they are,
 * also when sandbox.env names one.
 */
static const char *const socket_names[] = {
	"SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS",
	"DBUS_SYSTEM_BUS_ADDRESS", "DOCKER_HOST", "CONTAINER_HOST", "XDG_RUNTIME_DIR",
	"DISPLAY", "WAYLAND_DISPLAY", NULL,
};

static bool name_allowed(const struct sandbox_policy *p, const char *name, size_t n)
{
	static const char *const keep[] = { "PATH", "LANG", "LANGUAGE", "TZ", "USER", "LOGNAME", NULL };

	if (name_is_secret(name, n))
		return false;
	for (size_t i = 0; p && p->network != SANDBOX_OFF && socket_names[i]; i++)
		if (strlen(socket_names[i]) == n && !strncmp(socket_names[i], name, n))
			return false;
	for (size_t i = 0; keep[i]; i++)
		if (strlen(keep[i]) == n && !strncmp(keep[i], name, n))
			return true;
	if (n > 3 && !strncmp(name, "LC_", 3))
		return true;
	for (size_t i = 0; p && p->env_extra && p->env_extra[i]; i++)
		if (strlen(p->env_extra[i]) == n && !strncmp(p->env_extra[i], name, n))
			return true;
	return false;
}

/* See sandbox_internal.h. */
const char *sandbox_env_value(char *const *env, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; env && env[i]; i++)
		if (!strncmp(env[i], name, n) && env[i][n] == '=')
			return env[i] + n + 1;
	return NULL;
}

/*
 * rustup's proxies (~/.cargo/bin/cargo, rustc, ...) find their toolchains
 * through RUSTUP_HOME, by default ~/.rustup of HOME: with HOME the
 * command's temp dir, every `cargo test` said "rustup could not choose a
 * version of cargo to run".  When PATH runs through a toolchain's
 * .cargo/bin, the command gets RUSTUP_HOME and CARGO_HOME as Forge has them
 * (from its environment, else that .cargo and the .rustup beside it);
 * sandbox_walls_build() makes them readable, never writable: the installed
 * toolchains and cached crates serve, and a download needs the network and
 * sandbox.writable anyway.  Appends to env at *k (room for two).
 */
static void add_rust_homes(char **env, size_t *k, char *const *src)
{
	const char *path = sandbox_env_value(env, "PATH"), *cargo = NULL;
	size_t cargo_len = 0;
	struct buf b = BUF_INIT;
	struct stat st;

	while (path && *path && !cargo) {
		size_t n = strcspn(path, ":");

		if (n > 11 && path[0] == '/' && !strncmp(path + n - 11, "/.cargo/bin", 11)) {
			cargo = path;
			cargo_len = n - 4;
		}
		path += n;
		if (*path == ':')
			path++;
	}
	if (!cargo)
		return;
	if (!sandbox_env_value(env, "CARGO_HOME")) {
		if (sandbox_env_value(src, "CARGO_HOME"))
			buf_addf(&b, "CARGO_HOME=%s", sandbox_env_value(src, "CARGO_HOME"));
		else
			buf_addf(&b, "CARGO_HOME=%.*s", (int)cargo_len, cargo);
		env[(*k)++] = buf_detach(&b, NULL);
	}
	if (!sandbox_env_value(env, "RUSTUP_HOME")) {
		if (sandbox_env_value(src, "RUSTUP_HOME")) {
			buf_addf(&b, "RUSTUP_HOME=%s", sandbox_env_value(src, "RUSTUP_HOME"));
		} else {
			buf_addf(&b, "RUSTUP_HOME=%.*s/.rustup", (int)(cargo_len - 7), cargo);
			if (stat(b.buf + 12, &st) < 0 || !S_ISDIR(st.st_mode))
				buf_reset(&b);
		}
		if (b.len)
			env[(*k)++] = buf_detach(&b, NULL);
	}
	buf_release(&b);
}

char **sandbox_build_env(const struct sandbox_policy *p, char *const *base, const char *tmp)
{
	char *const *src = base ? base : environ;
	size_t n = 0, k = 0;
	char **env;
	bool have_path = false;
	struct buf b = BUF_INIT;

	while (src && src[n])
		n++;
	env = xcalloc(n + 8, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(src[i], '=');
		if (!eq || !name_allowed(p, src[i], (size_t)(eq - src[i])))
			continue;
		if (!strncmp(src[i], "PATH=", 5))
			have_path = true;
		env[k++] = xstrdup(src[i]);
	}
	if (!have_path)
		env[k++] = xstrdup("PATH=/usr/local/bin:/usr/bin:/bin");
	env[k] = NULL;
	add_rust_homes(env, &k, src);
	buf_addf(&b, "HOME=%s", tmp ? tmp : "/tmp");
	env[k++] = buf_detach(&b, NULL);
	buf_addf(&b, "TMPDIR=%s", tmp ? tmp : "/tmp");
	env[k++] = buf_detach(&b, NULL);
	env[k++] = xstrdup("TERM=dumb");
	env[k] = NULL;
	return env;
}

void sandbox_env_free(char **env)
{
	strv_free(env);
}

/* The locale of untranslated messages: C.UTF-8 where the system has it.
 * A category the C library cannot load fails a program's
 * setlocale(LC_ALL, ""), which then runs in C for every category; C is
 * always there. */
static const char *messages_locale(void)
{
	static int have = -1;

	if (have < 0) {
		locale_t l = newlocale(LC_MESSAGES_MASK, "C.UTF-8", (locale_t)0);

		have = l != (locale_t)0;
		if (l)
			freelocale(l);
	}
	return have ? "C.UTF-8" : "C";
}

/* Is s (NAME=VALUE) one of the names, or a locale category LC_ALL
 * overrides (the categories of POSIX and glibc; not LC_TERMINAL and the
 * like, which only share the prefix)? */
static bool overridden_by_lc_all(const char *s)
{
	static const char *const names[] = {
		"LANG", "LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE", "LC_MONETARY", "LC_MESSAGES",
		"LC_PAPER", "LC_NAME", "LC_ADDRESS", "LC_TELEPHONE", "LC_MEASUREMENT", "LC_IDENTIFICATION",
		NULL,
	};

	for (size_t i = 0; names[i]; i++) {
		size_t n = strlen(names[i]);
		if (!strncmp(s, names[i], n) && s[n] == '=')
			return true;
	}
	return false;
}

char **sandbox_env_untranslated(char *const *base)
{
	char *const *src = base ? base : environ;
	const char *all = sandbox_env_value(src, "LC_ALL");
	size_t n = 0, k = 0;
	char **env;
	struct buf b = BUF_INIT;

	if (all && !*all)
		all = NULL;     /* empty: as if unset */
	while (src && src[n])
		n++;
	env = xcalloc(n + 3, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(src[i], "LC_ALL=", 7) || !strncmp(src[i], "LANGUAGE=", 9) ||
		    !strncmp(src[i], "LC_MESSAGES=", 12) || (all && overridden_by_lc_all(src[i])))
			continue;
		env[k++] = xstrdup(src[i]);
	}
	if (all) {
		buf_addf(&b, "LANG=%s", all);
		env[k++] = buf_detach(&b, NULL);
	}
	buf_addf(&b, "LC_MESSAGES=%s", messages_locale());
	env[k++] = buf_detach(&b, NULL);
	env[k] = NULL;
	return env;
}

/* ================================================================ run */

/* path made absolute (its real path; as given when that fails). */
static char *abs_path(const char *path)
{
	char *r = path[0] == '/' ? NULL : realpath(path, NULL);
	return r ? r : xstrdup(path);
}

/*
 * root/.git as it was before a command, when it is a file (a linked
 * worktree's "gitdir: ..."): a command run without a mount view may
 * rewrite it, and what it names is where git -- also git run later
 * outside any sandbox, by Forge or by a person in the worktree -- takes
 * its configuration (hooks, fsmonitor, textconv) from.  Put back after the
 * command when it changed.
 */
struct git_link {
	char path[PATH_MAX];
	char text[1024];
	ssize_t len;              /* -1: not a regular file of at most sizeof text */
};

/* The content of path when it is a regular file of less than size bytes
 * (not followed through a symlink): its length, or -1. */
static ssize_t small_file(char *text, size_t size, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	ssize_t n = -1;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size < size)
		n = read(fd, text, size);
	close(fd);
	return n >= 0 && (size_t)n < size ? n : -1;
}

static void git_link_save(struct git_link *g, const char *root)
{
	snprintf(g->path, sizeof g->path, "%s/.git", root);
	g->len = small_file(g->text, sizeof g->text, g->path);
}

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	return (type == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT ? -1 : 0;
}

/* Put root/.git back when the command changed it: true when it did. */
static bool git_link_restore(const struct git_link *g)
{
	char now[sizeof g->text], tmp[PATH_MAX + 32];
	struct stat st;
	int fd;

	if (g->len < 0 || (small_file(now, sizeof now, g->path) == g->len &&
			   memcmp(now, g->text, (size_t)g->len) == 0))
		return false;
	if (lstat(g->path, &st) == 0 && S_ISDIR(st.st_mode))
		(void)nftw(g->path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	snprintf(tmp, sizeof tmp, "%s.forge-%ld", g->path, (long)getpid());
	(void)unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd >= 0) {
		bool ok = write(fd, g->text, (size_t)g->len) == g->len;

		if (close(fd) < 0 || !ok || rename(tmp, g->path) < 0)
			(void)unlink(tmp);
	}
	return true;
}

/*
 * The gitlinks of a command's root (sandbox_set_gitlinks_source) and
 * whether each directory held a .git before the command.
 */
static sandbox_gitlinks_fn gitlinks_source;

void sandbox_set_gitlinks_source(sandbox_gitlinks_fn fn)
{
	gitlinks_source = fn;
}

struct gitlinks {
	char **rel;               /* NULL-terminated; NULL: none */
	signed char *had;         /* rel[i]/.git before the command: 1 there,
				     0 not (the directory too: an earlier
				     command removed it), -1 unknown (a
				     directory on the way could not be opened) */
};

/*
 * The directory rel below root, each step opened without following a
 * symbolic link (git follows none in a tracked path either); -1 when
 * there is none.  With force, a directory on the way this user cannot
 * open (a command's chmod 000) is made u+rwx first, and so is the last
 * (chmod 500: nothing in it could be removed).  errno says why on -1.
 */
static int gitlink_dir(const char *root, const char *rel, bool force)
{
	int e = 0;
	char *path = xstrdup(rel), *name = path, *slash;
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;

	while (fd >= 0 && name) {
		int next = -1;

		slash = strchr(name, '/');
		if (slash)
			*slash = '\0';
		if (*name && strcmp(name, ".") && strcmp(name, "..")) {
			next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (next < 0 && errno == EACCES && force &&
			    fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
			    fchmodat(fd, name, (st.st_mode & 07777) | S_IRWXU, 0) == 0)
				next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (next < 0)
				e = errno;
		}
		close(fd);
		fd = next;
		name = slash ? slash + 1 : NULL;
	}
	free(path);
	if (fd >= 0 && force && fstat(fd, &st) == 0 && (st.st_mode & S_IRWXU) != S_IRWXU)
		(void)fchmod(fd, (st.st_mode & 07777) | S_IRWXU);
	if (fd < 0 && e)
		errno = e;
	return fd;
}

static void gitlinks_save(struct gitlinks *gl, const char *root)
{
	size_t n = 0;

	memset(gl, 0, sizeof *gl);
	if (!gitlinks_source || gitlinks_source(&gl->rel, root) < 0 || !gl->rel) {
		strv_free(gl->rel);
		gl->rel = NULL;
		return;
	}
	while (gl->rel[n])
		n++;
	gl->had = xcalloc(n + 1, sizeof *gl->had);
	for (size_t i = 0; i < n; i++) {
		int fd = gitlink_dir(root, gl->rel[i], false);
		struct stat st;

		/* (a directory that is not there holds no .git: one the command
		 * makes there with its directory is its own -- before, left) */
		if (fd < 0)
			gl->had[i] = errno == ENOENT ? 0 : -1;
		else
			gl->had[i] = fstatat(fd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0;
		if (fd >= 0)
			close(fd);
	}
}

/* Remove the .git the command made in a gitlink's directory (whatever it
 * did to the modes on the way); a note for each appended to *notes. */
static void gitlinks_restore(struct gitlinks *gl, const char *root, jv *notes)
{
	for (size_t i = 0; gl->rel && gl->rel[i]; i++) {
		struct buf b = BUF_INIT;
		struct stat st;
		int fd;

		if (gl->had[i] != 0 || (fd = gitlink_dir(root, gl->rel[i], true)) < 0)
			continue;
		if (fstatat(fd, ".git", &st, AT_SYMLINK_NOFOLLOW) < 0) {
			close(fd);
			continue;
		}
		/* (fd-relative, following no link: the command is over) */
		if (tmpdir_rmtree_at(fd, ".git") == 0)
			buf_addf(&b, "the command made %s/%s/.git, a git directory in a submodule's "
				 "directory (git would run what its configuration says whenever it looks at "
				 "the worktree): it is removed", root, gl->rel[i]);
		else
			buf_addf(&b, "the command made %s/%s/.git, a git directory in a submodule's "
				 "directory, and it cannot be removed (%s): git run in the worktree would "
				 "run what its configuration says", root, gl->rel[i], strerror(errno));
		*notes = jv_array_append(*notes, jv_string(b.buf));
		buf_release(&b);
		close(fd);
	}
}

static void gitlinks_release(struct gitlinks *gl)
{
	strv_free(gl->rel);
	free(gl->had);
	memset(gl, 0, sizeof *gl);
}

void sandbox_note_path(struct buf *b, size_t *count, const char *fmt, ...)
{
	va_list ap;

	if (++*count > SANDBOX_NOTE_SHOWN)
		return;
	if (b->len)
		buf_adds(b, ", ");
	va_start(ap, fmt);
	buf_vaddf(b, fmt, ap);
	va_end(ap);
}

void sandbox_note_paths(jv *notes, const char *head, const struct buf *list, size_t count,
			const char *tail)
{
	struct buf note = BUF_INIT;

	if (!count)
		return;
	buf_addf(&note, "%s %s", head, list->buf);
	if (count > SANDBOX_NOTE_SHOWN)
		buf_addf(&note, " and %zu more", count - SANDBOX_NOTE_SHOWN);
	buf_adds(&note, tail);
	*notes = jv_array_append(*notes, jv_string(note.buf));
	buf_release(&note);
}

/*
 * The git directories below a command's root that are not the root's own
 * (nested repositories: "src/.git"), before and after it.  Git finds a
 * .git by walking up from where it is run, so one a command leaves in
 * src/ is what a person's `git status` in the worktree's src/ takes its
 * configuration from -- core.fsmonitor, hooks, filter drivers --, outside
 * any sandbox.  Those the command made are removed after it (a gitlink's
 * directory is left to gitlinks_restore; what was there before, a
 * person's own nested clone in a checkout, is left).
 */
enum { NESTED_DEPTH_MAX = 128 };

struct nested_git {
	bool walk;                /* root is a git working tree */
	jv before;                /* the relative directories holding a .git */
};

/* Open the directory name in dfd without following a link, on dev; one
 * this user may not read or search (a command's chmod 000) is made u+rwx
 * first when fix.  -1 when it cannot (or is on another file system). */
static int nested_open(int dfd, const char *name, dev_t dev, bool fix)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0 && errno == EACCES && fix && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode) && fchmodat(dfd, name, (st.st_mode & 07777) | S_IRWXU, 0) == 0)
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_dev != dev)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Append to *found (an array) the directory rel (relative to root, "" the
 * root itself) of each .git in the tree at fd (consumed), below it too. */
static void nested_walk(jv *found, int fd, struct buf *rel, int depth, dev_t dev, bool fix)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;
	size_t len = rel->len;

	if (!d) {
		close(fd);
		return;
	}
	while ((e = readdir(d))) {
		bool dir = e->d_type == DT_DIR;
		struct stat st;
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!strcmp(e->d_name, ".git")) {
			if (depth > 0)
				*found = jv_array_append(*found, jv_string(rel->buf));
			continue;
		}
		if (e->d_type == DT_UNKNOWN)
			dir = fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
		if (!dir || depth >= NESTED_DEPTH_MAX ||
		    (sub = nested_open(dirfd(d), e->d_name, dev, fix)) < 0)
			continue;
		buf_addf(rel, "%s%s", rel->len ? "/" : "", e->d_name);
		nested_walk(found, sub, rel, depth + 1, dev, fix);
		buf_truncate(rel, len);
	}
	closedir(d);
}

/* The directories below root holding a .git (an array); fix: as after a
 * command, modes it took away on the way given back. */
static jv nested_find(const char *root, bool fix)
{
	struct buf rel = BUF_INIT;
	struct stat st;
	jv found = jv_array();
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0 && fstat(fd, &st) == 0) {
		buf_adds(&rel, "");
		nested_walk(&found, fd, &rel, 0, st.st_dev, fix);
	} else if (fd >= 0) {
		close(fd);
	}
	buf_release(&rel);
	return found;
}

static sandbox_run_root_fn run_root_source;

void sandbox_set_run_root_source(sandbox_run_root_fn fn)
{
	run_root_source = fn;
}

static void nested_git_save(struct nested_git *n, const char *root)
{
	char path[PATH_MAX];
	struct stat st;

	n->before = jv_null();
	n->walk = (size_t)snprintf(path, sizeof path, "%s/.git", root) < sizeof path &&
		  lstat(path, &st) == 0;
	if (!n->walk)
		return;
	/* A run's worktree was checked out by Forge from a commit, which
	 * holds no .git (git refuses the name) and whose gitlinks' directories
	 * are gitlinks_restore's: what is there before a command an earlier
	 * one made and could not remove -- no person's clone to keep --,
	 * named again after this one.  The walk before it, over the whole
	 * tree as the one after (13,000 entries: a third of Forge's time for
	 * `true`), is left out. */
	if (S_ISREG(st.st_mode) && run_root_source && run_root_source(root))
		n->before = jv_array();
	else
		n->before = nested_find(root, false);
}

/* Whether the array arr (consumed) holds the string s. */
static bool json_strs_have(jv arr, const char *s)
{
	bool yes = false;

	jv_array_foreach(arr, i, v) {
		yes = yes || !strcmp(jv_string_value(v), s);
		jv_free(v);
	}
	jv_free(arr);
	return yes;
}

/* Remove the .git the command made below root outside a gitlink's
 * directory; a note appended to *notes when there was one. */
static void nested_git_restore(struct nested_git *n, const struct gitlinks *gl, const char *root, jv *notes)
{
	struct buf removed = BUF_INIT, kept = BUF_INIT;
	size_t nremoved = 0, nkept = 0;
	jv after;

	if (!n->walk)
		return;
	after = nested_find(root, true);
	jv_array_foreach(after, i, v) {
		const char *rel = jv_string_value(v);
		bool gitlink = false;
		struct stat st;
		int fd;

		for (size_t k = 0; gl->rel && gl->rel[k] && !gitlink; k++)
			gitlink = !strcmp(gl->rel[k], rel);
		if (gitlink || json_strs_have(jv_copy(n->before), rel)) {
			jv_free(v);
			continue;
		}
		fd = gitlink_dir(root, rel, true);
		/* (fd-relative, following no link: the command is over) */
		bool gone = fd >= 0 && tmpdir_rmtree_at(fd, ".git") == 0 &&
			    fstatat(fd, ".git", &st, AT_SYMLINK_NOFOLLOW) < 0;
		if (gone)
			sandbox_note_path(&removed, &nremoved, "%s/%s/.git", root, rel);
		else
			sandbox_note_path(&kept, &nkept, "%s/%s/.git", root, rel);
		if (fd >= 0)
			close(fd);
		jv_free(v);
	}
	jv_free(after);
	sandbox_note_paths(notes, "the command made", &removed, nremoved,
			   ", a git directory below the worktree's own (git run there would run what its "
			   "configuration says: fsmonitor, hooks, filters): removed");
	sandbox_note_paths(notes, "the command made", &kept, nkept,
			   ", a git directory below the worktree's own, and it cannot be removed: git run "
			   "there would run what its configuration says");
	buf_release(&removed);
	buf_release(&kept);
}

/* Namespaces that failed at run time (a mount refused: /proc masked in a
 * container) are not tried again by this process. */
static bool ns_broken;
static char ns_broken_why[256];

static sandbox_identity_fn identity_source;
static pthread_mutex_t identity_lock = PTHREAD_MUTEX_INITIALIZER;
static char *identity_root, *identity_name, *identity_email;

void sandbox_set_identity_source(sandbox_identity_fn fn)
{
	identity_source = fn;
}

/* v as a git config value: quoted, with \ " and newlines escaped. */
static void add_config_value(struct buf *b, const char *v)
{
	buf_addch(b, '"');
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			buf_addch(b, '\\');
		if (*v == '\n')
			buf_adds(b, "\\n");
		else
			buf_addch(b, *v);
	}
	buf_addch(b, '"');
}

/* tmp/.gitconfig with the identity for root (sandbox_set_identity_source),
 * unless the file exists or there is none.  Best effort. */
static void write_identity(const char *tmp, const char *root)
{
	struct buf path = BUF_INIT, text = BUF_INIT;
	struct stat st;
	int fd;

	if (!identity_source || !tmp || !root)
		return;
	buf_addf(&path, "%s/.gitconfig", tmp);
	if (lstat(path.buf, &st) == 0)
		goto out;
	pthread_mutex_lock(&identity_lock);
	if (!identity_root || strcmp(identity_root, root)) {
		free(identity_root);
		free(identity_name);
		free(identity_email);
		identity_name = identity_email = NULL;
		identity_root = xstrdup(root);
		if (identity_source(&identity_name, &identity_email, root) < 0) {
			free(identity_name);
			free(identity_email);
			identity_name = identity_email = NULL;
		}
	}
	if (identity_name && identity_email) {
		buf_adds(&text, "# written by Forge: who this command's git commits are by\n[user]\n\tname = ");
		add_config_value(&text, identity_name);
		buf_adds(&text, "\n\temail = ");
		add_config_value(&text, identity_email);
		buf_addch(&text, '\n');
	}
	pthread_mutex_unlock(&identity_lock);
	if (!text.len || (fd = open(path.buf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0)
		goto out;
	if (write(fd, text.buf, text.len) != (ssize_t)text.len) {
		/* a short write leaves a config git reports; it is the temp dir's */
	}
	close(fd);
out:
	buf_release(&path);
	buf_release(&text);
}

/*
 * A command line the shell would run as one program, found without it:
 * `make test`, `cargo build --release`, `./configure`.  /bin/sh -c costs a
 * process of its own per command (its exec, its dynamic linking, its fork
 * of the program): about as much as the program's own start.  Only plain
 * words qualify -- no quoting, expansion, redirection, operator, glob,
 * tilde or comment, no assignment first, no shell builtin or keyword (the
 * shell's echo or test is not /usr/bin's) -- and only when PATH (the
 * command's) names the program; dash exports PWD to what it runs, so the
 * direct environment has it too (not when one is inherited: the shell
 * would keep a logical one).  Anything else, or an exec that fails in the
 * child, goes through the shell as before (proc.h, direct_path).
 */
struct direct_cmd {
	char *path;               /* the program, as the shell would find it */
	char **argv;              /* the words; argv[0] as typed */
	char **envp;              /* env + PWD */
};

static void direct_cmd_release(struct direct_cmd *d)
{
	free(d->path);
	strv_free(d->argv);
	free(d->envp ? d->envp[0] : NULL);   /* the PWD entry; the rest is env's */
	free(d->envp);
	memset(d, 0, sizeof(*d));
}

static bool shell_word_char(char c)
{
	return isalnum((unsigned char)c) || strchr("_./:,+@%=-", c);
}

static bool shell_builtin(const char *w)
{
	static const char *const names[] = {
		".", ":", "[", "alias", "bg", "break", "case", "cd", "command", "continue",
		"do", "done", "echo", "elif", "else", "esac", "eval", "exec", "exit",
		"export", "false", "fc", "fg", "fi", "for", "getopts", "hash", "if", "in",
		"jobs", "kill", "local", "printf", "pwd", "read", "readonly", "return",
		"set", "shift", "test", "then", "times", "trap", "true", "type", "ulimit",
		"umask", "unalias", "unset", "until", "wait", "while", NULL,
	};

	for (size_t i = 0; names[i]; i++)
		if (!strcmp(w, names[i]))
			return true;
	return false;
}

/* d filled (true) when cmd is such a command line; env is the command's. */
static bool direct_cmd_build(struct direct_cmd *d, const char *cmd, char *const *env,
			     const char *cwd)
{
	const char *path_env = NULL;
	size_t nw = 0, ne = 0;
	char *real_cwd = NULL;
	struct buf pwd = BUF_INIT;

	memset(d, 0, sizeof(*d));
	for (const char *c = cmd; *c; c++)
		if (*c != ' ' && *c != '\t' && !shell_word_char(*c))
			return false;
	for (; env && env[ne]; ne++) {
		if (!strncmp(env[ne], "PWD=", 4))
			return false;
		if (!strncmp(env[ne], "PATH=", 5))
			path_env = env[ne] + 5;
	}
	d->argv = xcalloc(strlen(cmd) / 2 + 2, sizeof(char *));
	for (const char *c = cmd; *c;) {
		size_t n;
		c += strspn(c, " \t");
		if (!(n = strcspn(c, " \t")))
			break;
		d->argv[nw++] = xstrndup(c, n);
		c += n;
	}
	if (!nw || strchr(d->argv[0], '=') || shell_builtin(d->argv[0]))
		goto no;
	if (strchr(d->argv[0], '/')) {
		d->path = xstrdup(d->argv[0]);	/* as the shell: no search */
	} else {
		/* the shell's search: the first regular executable file; an
		 * empty entry (the current directory) is left to the shell */
		for (const char *dir = path_env; dir && !d->path;) {
			size_t n = strcspn(dir, ":");
			struct buf b = BUF_INIT;
			struct stat st;
			if (!n || dir[0] != '/')
				goto no;
			buf_addf(&b, "%.*s/%s", (int)n, dir, d->argv[0]);
			if (stat(b.buf, &st) == 0 && S_ISREG(st.st_mode) && access(b.buf, X_OK) == 0)
				d->path = buf_detach(&b, NULL);
			buf_release(&b);
			dir += n;
			if (*dir == ':')
				dir++;
			else
				break;
		}
		if (!d->path)
			goto no;
	}
	if (!(real_cwd = realpath(cwd, NULL)))
		goto no;
	d->envp = xcalloc(ne + 2, sizeof(char *));
	buf_addf(&pwd, "PWD=%s", real_cwd);
	d->envp[0] = buf_detach(&pwd, NULL);
	for (size_t i = 0; i < ne; i++)
		d->envp[i + 1] = env[i];
	free(real_cwd);
	return true;
no:
	free(real_cwd);
	direct_cmd_release(d);
	return false;
}

int sandbox_run(struct proc_result *out, jv *unconfined, const struct sandbox_policy *p,
		const struct sandbox_cmd *cmd)
{
	struct proc_opts o;
	struct landlock_ruleset *rs = NULL;
	struct sandbox_walls walls;
	struct sandbox_cmd abs;
	struct git_link git_link = { .len = -1 };
	struct gitlinks gitlinks = { 0 };
	struct nested_git nested = { .walk = false, .before = jv_null() };
	struct forge_guard forge_guard = { 0 };
	struct direct_cmd direct = { 0 };
	struct sandbox_deps deps = { 0 };
	bool view;
	char *root_abs = NULL, *cwd_abs = NULL, *tmp_abs = NULL;
	const char *argv[] = { "/bin/sh", "-c", cmd->command, NULL };
	char **env = NULL;
	jv notes = jv_null();
	int rc = -1;

	memset(out, 0, sizeof(*out));
	memset(&walls, 0, sizeof(walls));
	buf_init(&out->out, 0);
	buf_init(&out->err, 0);
	if (unconfined)
		*unconfined = jv_null();
	/* The view and PID 1's chdir need absolute paths. */
	abs = *cmd;
	abs.root = root_abs = abs_path(cmd->root);
	abs.cwd = cwd_abs = cmd->cwd ? abs_path(cmd->cwd) : NULL;
	abs.tmp = tmp_abs = cmd->tmp ? abs_path(cmd->tmp) : NULL;
	cmd = &abs;
	write_identity(cmd->tmp, cmd->root);
	git_link_save(&git_link, cmd->root);
	gitlinks_save(&gitlinks, cmd->root);
	nested_git_save(&nested, cmd->root);
	forge_guard_save(&forge_guard, cmd->root);
	sandbox_deps_find(&deps, cmd->root);
again:
	o = (struct proc_opts)PROC_OPTS_INIT;
	jv_free(notes);
	notes = jv_array();
	view = p->namespaces != SANDBOX_OFF && !ns_broken && nsview_likely(NULL);
	/* the checkout's dependencies are reached through the view or, without
	 * it, through the environment: both are made for the walls used */
	sandbox_env_free(env);
	env = sandbox_deps_env(&deps, sandbox_build_env(p, cmd->base_env, cmd->tmp), view);
	direct_cmd_release(&direct);
	(void)direct_cmd_build(&direct, cmd->command, env, cmd->cwd ? cmd->cwd : cmd->root);
	sandbox_walls_build(&walls, p, cmd, env, view);
	sandbox_walls_lend(&walls, &deps, cmd, view);
	for (size_t i = 0; walls.left_out && walls.left_out[i]; i++)
		notes = jv_array_append(notes, jv_string(walls.left_out[i]));
	if (p->namespaces != SANDBOX_OFF) {
		const char *why = NULL;
		/* no probe: proc_run reports ns_failed when they cannot be made,
		 * and the command runs again without (below) */
		if (ns_broken || !nsview_likely(&why)) {
			if (ns_broken)
				why = ns_broken_why;
			if (p->namespaces == SANDBOX_REQUIRE) {
				forge_error("namespaces are required (sandbox.namespaces) but %s; refusing to run the command",
					    why);
				goto out;
			}
			struct buf b = BUF_INIT;
			buf_addf(&b, "namespaces: none (%s); the command sees every process, the host's files and sockets, and .forge is writable (what it changes there is put back after it)",
				 why);
			notes = jv_array_append(notes, jv_string(b.buf));
			buf_release(&b);
		} else {
			o.new_ns = true;
			o.ns_required = p->namespaces == SANDBOX_REQUIRE;
			o.ns_no_fallback = !o.ns_required;
			o.view = walls.view;
			o.nview = walls.nview;
			if (walls.uncovered) {
				struct buf b = BUF_INIT;
				buf_addf(&b, "%s; so that its credentials stay unseen, the command sees it empty and unreadable",
					 walls.uncovered);
				notes = jv_array_append(notes, jv_string(b.buf));
				buf_release(&b);
			}
		}
	}
	if (p->landlock != SANDBOX_OFF) {
		if (landlock_abi() < 1) {
			if (p->landlock == SANDBOX_REQUIRE) {
				forge_error("landlock is required (sandbox.landlock) but this kernel has none; refusing to run the command");
				goto out;
			}
			notes = jv_array_append(notes, jv_string("landlock: the kernel offers none; writes are not confined"));
		} else {
			struct landlock_spec spec = {
				.writable = (const char *const *)walls.writable,
				.readable = (const char *const *)walls.readable,
				.reads = !p->read_anywhere,
			};
			if (landlock_ruleset_build(&rs, &spec) < 0) {
				if (p->landlock == SANDBOX_REQUIRE)
					goto out;
				notes = jv_array_append(notes, jv_string(forge_last_error()));
			} else {
				o.landlock_fd = rs->fd;
				o.landlock_required = p->landlock == SANDBOX_REQUIRE;
				o.landlock_reads = rs->reads;
			}
		}
	}
	if (p->network != SANDBOX_OFF) {
		const char *why = NULL;
		if (!o.new_ns && !netns_available(&why)) {
			if (p->network == SANDBOX_REQUIRE) {
				forge_error("the network must be cut (sandbox.network is deny) but %s; refusing to run the command",
					    why ? why : "network namespaces are unavailable");
				goto out;
			}
			struct buf b = BUF_INIT;
			buf_addf(&b, "network: not cut (%s)", why ? why : "namespaces unavailable");
			notes = jv_array_append(notes, jv_string(b.buf));
			buf_release(&b);
		} else {
			o.new_netns = true;
			o.netns_required = p->network == SANDBOX_REQUIRE;
		}
	}
	o.argv = argv;
	o.envp = env;
	o.direct_path = direct.path;
	o.direct_argv = (const char *const *)direct.argv;
	o.direct_envp = direct.envp;
	o.contain = true;	/* with or without a PID namespace */
	o.deny_keys = true;	/* os/seccomp.h */
	/* A network namespace does not cover vsock (a VM's host and its
	 * agents), AF_PACKET and the like: with the network cut, sockets of
	 * unix, inet, inet6 and netlink only. */
	o.deny_net = p->network != SANDBOX_OFF;
	if (o.deny_net && !seccomp_known())
		notes = jv_array_append(notes, jv_string("socket families: vsock and the others a network namespace does not cover can be used: no seccomp filter on this architecture"));
	/* Without the mount view the host's pathname unix sockets are there,
	 * and neither Landlock nor a network namespace keeps a command from
	 * connecting to one (the D-Bus session bus, ssh-agent, docker.sock):
	 * with the network denied, no unix socket can be made. */
	if (p->network != SANDBOX_OFF && !o.new_ns) {
		o.deny_unix = true;
		if (!seccomp_known() && p->network == SANDBOX_REQUIRE) {
			forge_error("the network must be cut (sandbox.network is deny) but without namespaces only a seccomp filter keeps the host's unix sockets out, and this architecture has none; refusing to run the command");
			goto out;
		}
		if (!seccomp_known())
			notes = jv_array_append(notes, jv_string("unix sockets: the host's (D-Bus, ssh-agent, docker.sock) can be reached: no seccomp filter on this architecture"));
	}
	o.cwd = cmd->cwd ? cmd->cwd : cmd->root;
	o.merge_stderr = true;
	o.out_cap = p->output_cap;
	o.cut_count = cmd->cut_count;
	o.timeout_ms = cmd->timeout_ms > 0 ? cmd->timeout_ms : p->timeout_ms;
	o.limits = p->limits;
	o.limits.cpu_s = (unsigned long)(o.timeout_ms / 1000) + 10;
	proc_result_release(out);
	rc = proc_run(out, &o);
	if (rc < 0 && out->ns_failed && !ns_broken) {
		/* Prepare walls that do not count on the view, and run without. */
		ns_broken = true;
		snprintf(ns_broken_why, sizeof(ns_broken_why), "%s",
			 strncmp(out->unconfined, "namespaces: ", 12) ? out->unconfined
								       : out->unconfined + 12);
		landlock_ruleset_free(rs);
		rs = NULL;
		sandbox_walls_release(&walls);
		goto again;
	}
	if (rc == 0 && out->unconfined[0])
		notes = jv_array_append(notes, jv_string(out->unconfined));
	if (git_link_restore(&git_link)) {
		struct buf b = BUF_INIT;
		buf_addf(&b, "the command changed %s, which only Forge may write (it names the git "
			 "directory): it is put back", git_link.path);
		notes = jv_array_append(notes, jv_string(b.buf));
		buf_release(&b);
	}
	gitlinks_restore(&gitlinks, cmd->root, &notes);
	nested_git_restore(&nested, &gitlinks, cmd->root, &notes);
	forge_guard_restore(&forge_guard, cmd->root, &notes);
out:
	if (unconfined && jv_array_length(jv_copy(notes)) > 0) {
		*unconfined = notes;
		notes = jv_null();
	}
	jv_free(notes);
	direct_cmd_release(&direct);
	gitlinks_release(&gitlinks);
	jv_free(nested.before);
	forge_guard_release(&forge_guard);
	sandbox_deps_release(&deps);
	sandbox_env_free(env);
	landlock_ruleset_free(rs);
	sandbox_walls_release(&walls);
	free(root_abs);
	free(cwd_abs);
	free(tmp_abs);
	return rc;
}
