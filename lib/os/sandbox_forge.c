/*
 * sandbox_forge.c - the root's .forge put back after a command.  With the
 * mount view .forge is bound read-only (sandbox_exec.c); without it
 * Landlock cannot make a directory of a writable tree read-only, so a
 * command could rewrite .forge/config.json, a skill or a prompt of the
 * worktree, which a person who merges the branch, or a later phase that
 * reads the worktree, would take as Forge's configuration.  A command may
 * do nothing there: what it changed is put back as it was before it, what
 * it made is removed (sandbox.h, sandbox_run).
 */
#include "os/sandbox.h"
#include "os/sandbox_internal.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/tmpdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A .forge bigger than this (a person's own files in a checkout) is not
 * guarded: the copy is kept in memory for each command. */
enum { FORGE_GUARD_ENTRIES_MAX = 4096, FORGE_GUARD_DEPTH_MAX = 32 };
#define FORGE_GUARD_BYTES_MAX (16u << 20)

/* What Forge itself writes in the main working tree's .forge while a
 * command runs (core/forgedir.c's .gitignore: the database, vectors,
 * runs' worktrees, logs): neither copied nor put back there.  A linked
 * worktree's .forge holds none (every worktree shares the main one's,
 * app/cli.c): one a command makes there (a database a person who merges
 * would get) is removed like any other file. */
static const char *const forge_runtime[] = {
	"*.db", "*.db-wal", "*.db-shm", "*.db-journal", "*.vectors", "*.vectors.lock",
	"*.vectors.tmp.*", "*.accesses", "worktrees", "logs", "*.log", NULL,
};

static bool is_runtime(const struct forge_guard *g, int depth, const char *name)
{
	if (!g->main_tree || depth != 0)
		return false;
	for (size_t i = 0; forge_runtime[i]; i++)
		if (fnmatch(forge_runtime[i], name, FNM_PERIOD) == 0)
			return true;
	return false;
}

/* Open the directory name in dfd, following no link; one this user may
 * not read or search (a command's chmod 000) is made u+rwx first when fix,
 * its mode before in *was.  -1 when it cannot. */
static int guard_open(int dfd, const char *name, bool fix, mode_t *was)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0 && errno == EACCES && fix && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode) && fchmodat(dfd, name, (st.st_mode & 07777) | S_IRWXU, 0) == 0) {
		if (was)
			*was = st.st_mode;
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	return fd;
}

/* The content of the regular file name in dfd (at most max bytes; -1 when
 * bigger, or when it is no longer the file st said). */
static int read_at(struct buf *out, int dfd, const char *name, const struct stat *st, size_t max)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat now;
	char chunk[8192];
	ssize_t n;

	if (fd < 0)
		return -1;
	if (fstat(fd, &now) < 0 || !S_ISREG(now.st_mode) || now.st_ino != st->st_ino ||
	    now.st_dev != st->st_dev) {
		close(fd);
		return -1;
	}
	while ((n = read(fd, chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR)) {
		if (n < 0)
			continue;
		if (out->len + (size_t)n > max) {
			close(fd);
			return -1;
		}
		buf_add(out, chunk, (size_t)n);
	}
	close(fd);
	return n < 0 ? -1 : 0;
}

/* Whether name in dfd is a directory with nothing in it. */
static bool empty_dir(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	bool empty = d != NULL;

	if (fd >= 0 && !d)
		close(fd);
	while (d && empty && (e = readdir(d)))
		empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return empty;
}

/* Let this user make and remove entries in the directory fd (a command's
 * chmod 500): the modes of .forge's directories are put back last. */
static void dir_writable(int fd)
{
	struct stat st;

	if (fstat(fd, &st) == 0 && (st.st_mode & S_IRWXU) != S_IRWXU)
		(void)fchmod(fd, (st.st_mode & 07777) | S_IRWXU);
}

static void guard_clear(struct forge_guard *g)
{
	for (size_t i = 0; i < g->n; i++) {
		free(g->v[i].rel);
		free(g->v[i].data);
	}
	free(g->v);
	g->v = NULL;
	g->n = 0;
}

/* Copy the entry name of dfd (rel its path below .forge) and, for a
 * directory, what is in it.  -1 when .forge is too big to be kept. */
static int guard_copy(struct forge_guard *g, size_t *bytes, int dfd, const char *name,
		      struct buf *rel, int depth)
{
	struct forge_guard_entry e = { 0 };
	struct stat st;
	struct buf data = BUF_INIT;
	int rc = 0;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (g->n >= FORGE_GUARD_ENTRIES_MAX)
		return -1;
	if (S_ISREG(st.st_mode)) {
		if (read_at(&data, dfd, name, &st, FORGE_GUARD_BYTES_MAX - *bytes) < 0) {
			buf_release(&data);
			return -1;
		}
	} else if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dfd, name, target, sizeof target);

		if (n < 0 || (size_t)n >= sizeof target)
			return -1;
		buf_add(&data, target, (size_t)n);
	}
	*bytes += data.len;
	e.rel = xstrdup(rel->buf);
	e.mode = st.st_mode;
	e.uid = st.st_uid;
	e.gid = st.st_gid;
	e.len = data.len;
	e.data = S_ISDIR(st.st_mode) ? (buf_release(&data), NULL) : buf_detach(&data, NULL);
	g->v = xrealloc(g->v, (g->n + 1) * sizeof *g->v);
	g->v[g->n++] = e;
	if (S_ISDIR(st.st_mode)) {
		int fd = depth < FORGE_GUARD_DEPTH_MAX ? guard_open(dfd, name, false, NULL) : -1;
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		struct dirent *de;
		size_t len = rel->len;

		if (fd >= 0 && !d)
			close(fd);
		if (!d)
			return depth < FORGE_GUARD_DEPTH_MAX ? -1 : 0;
		while (rc == 0 && (de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
			    is_runtime(g, depth, de->d_name))
				continue;
			buf_addf(rel, "%s%s", rel->len ? "/" : "", de->d_name);
			rc = guard_copy(g, bytes, dirfd(d), de->d_name, rel, depth + 1);
			buf_truncate(rel, len);
		}
		closedir(d);
	}
	return rc;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct forge_guard_entry *)a)->rel,
		      ((const struct forge_guard_entry *)b)->rel);
}

static struct forge_guard_entry *guard_find(struct forge_guard *g, const char *rel)
{
	struct forge_guard_entry key = { .rel = (char *)rel };

	return bsearch(&key, g->v, g->n, sizeof *g->v, entry_cmp);
}

void forge_guard_save(struct forge_guard *g, const char *root)
{
	struct buf rel = BUF_INIT;
	struct stat st;
	size_t bytes = 0;
	int fd;

	memset(g, 0, sizeof *g);
	/* (.forge outside a git working tree is nobody's configuration) */
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstatat(fd, ".git", &st, AT_SYMLINK_NOFOLLOW) < 0) {
		close(fd);
		return;
	}
	g->on = true;
	g->main_tree = S_ISDIR(st.st_mode);
	buf_adds(&rel, "");
	if (guard_copy(g, &bytes, fd, ".forge", &rel, 0) < 0) {
		guard_clear(g);
		g->on = false;
	}
	buf_release(&rel);
	close(fd);
	if (g->n)
		qsort(g->v, g->n, sizeof *g->v, entry_cmp);
}

struct guard_notes {
	const char *root;
	struct buf changed, made, failed;
	size_t nchanged, nmade, nfailed;
};

static void guard_name(struct buf *b, size_t *count, const char *root, const char *rel)
{
	sandbox_note_path(b, count, "%s/.forge%s%s", root, *rel ? "/" : "", rel);
}

/* Whether what is at name of dfd is the entry e (its mode before a fix in
 * *was, 0: st's). */
static bool entry_same(const struct forge_guard_entry *e, int dfd, const char *name,
		       const struct stat *st, mode_t was)
{
	mode_t mode = was ? was : st->st_mode;
	struct buf data = BUF_INIT;
	bool same;

	if (mode != e->mode)
		return false;
	if (S_ISDIR(mode))
		return true;
	if (S_ISLNK(mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dfd, name, target, sizeof target);

		return n >= 0 && (size_t)n == e->len && !memcmp(target, e->data, e->len);
	}
	if (!S_ISREG(mode))
		return true;
	same = (size_t)st->st_size == e->len && read_at(&data, dfd, name, st, e->len) == 0 &&
	       data.len == e->len && !memcmp(data.buf, e->data, e->len);
	buf_release(&data);
	return same;
}

/* Walk what is at name of dfd now (rel its path below .forge): remove what
 * the copy does not hold, or holds as another kind of file; mark in
 * e->ok what is as it was. */
static void guard_check(struct forge_guard *g, struct guard_notes *n, int dfd, const char *name,
			struct buf *rel, int depth)
{
	struct forge_guard_entry *e = guard_find(g, rel->buf);
	struct stat st;
	mode_t was = 0;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	if (!e || (e->mode & S_IFMT) != (st.st_mode & S_IFMT)) {
		/* (fd-relative, following no link: the command is over) */
		bool gone;

		dir_writable(dfd);
		gone = tmpdir_rmtree_at(dfd, name) == 0;
		if (!gone)
			guard_name(&n->failed, &n->nfailed, n->root, rel->buf);
		else if (!e)
			guard_name(&n->made, &n->nmade, n->root, rel->buf);
		/* (one of another kind is put back, and named, after; one
		 * that stayed is named above) */
		if (e)
			e->ok = !gone;
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		int fd = depth < FORGE_GUARD_DEPTH_MAX ? guard_open(dfd, name, true, &was) : -1;
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		struct dirent *de;
		size_t len = rel->len;

		if (fd >= 0 && !d)
			close(fd);
		while (d && (de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
			    is_runtime(g, depth, de->d_name))
				continue;
			buf_addf(rel, "%s%s", rel->len ? "/" : "", de->d_name);
			guard_check(g, n, dirfd(d), de->d_name, rel, depth + 1);
			buf_truncate(rel, len);
		}
		if (d)
			closedir(d);
	}
	e->ok = entry_same(e, dfd, name, &st, was);
}

/* The directory of e (its parent below root/.forge) opened, or -1. */
static int parent_open(int rootfd, const char *rel)
{
	char *path = xstrdup(rel), *slash = strrchr(path, '/');
	int fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char *name = path;

	if (*rel) {
		int next = fd >= 0 ? guard_open(fd, ".forge", true, NULL) : -1;

		if (fd >= 0)
			close(fd);
		fd = next;
		if (slash)
			*slash = '\0';
		else
			name = NULL;
	} else {
		name = NULL;
	}
	while (fd >= 0 && name) {
		char *sep = strchr(name, '/');
		int next;

		if (sep)
			*sep = '\0';
		next = guard_open(fd, name, true, NULL);
		close(fd);
		fd = next;
		name = sep ? sep + 1 : NULL;
	}
	free(path);
	return fd;
}

/* Put e back as it was in the directory dfd (its last component name). */
static int entry_put(const struct forge_guard_entry *e, int dfd, const char *name)
{
	mode_t perm = e->mode & 07777;
	char tmp[64];
	int rc = -1;

	dir_writable(dfd);
	if (S_ISDIR(e->mode)) {
		struct stat st;

		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 && mkdirat(dfd, name, 0700) < 0)
			return -1;
		/* (as root: the owner it had) */
		if (geteuid() == 0 && fchownat(dfd, name, e->uid, e->gid, AT_SYMLINK_NOFOLLOW) < 0)
			return -1;
		return fchmodat(dfd, name, perm, 0);
	}
	snprintf(tmp, sizeof tmp, ".forge-put-%ld", (long)getpid());
	(void)unlinkat(dfd, tmp, 0);
	if (S_ISLNK(e->mode)) {
		char *target = xmalloc(e->len + 1);

		memcpy(target, e->data, e->len);
		target[e->len] = '\0';
		rc = symlinkat(target, dfd, tmp);
		free(target);
		if (rc == 0 && geteuid() == 0)
			rc = fchownat(dfd, tmp, e->uid, e->gid, AT_SYMLINK_NOFOLLOW);
	} else if (S_ISREG(e->mode)) {
		int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		size_t off = 0;

		if (fd < 0)
			return -1;
		while (off < e->len) {
			ssize_t w = write(fd, e->data + off, e->len - off);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break;
			off += (size_t)w;
		}
		rc = off == e->len && (geteuid() != 0 || fchown(fd, e->uid, e->gid) == 0) &&
		     fchmod(fd, perm) == 0 ? 0 : -1;
		close(fd);
	} else {
		errno = ENOTSUP;    /* (a fifo or a device: not made again) */
		return -1;
	}
	if (rc == 0 && renameat(dfd, tmp, dfd, name) < 0)
		rc = -1;
	if (rc < 0)
		(void)unlinkat(dfd, tmp, 0);
	return rc;
}

void forge_guard_restore(struct forge_guard *g, const char *root, jv *notes)
{
	struct guard_notes n = { .root = root, BUF_INIT, BUF_INIT, BUF_INIT, 0, 0, 0 };
	struct buf rel = BUF_INIT;
	int rootfd;

	if (!g->on || (rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return;
	buf_adds(&rel, "");
	if (g->n == 0) {
		/* none before: an empty directory is the mount point the
		 * view's walls make (sandbox_exec.c), left; anything else is
		 * the command's */
		struct stat st;

		if (fstatat(rootfd, ".forge", &st, AT_SYMLINK_NOFOLLOW) == 0 && !empty_dir(rootfd, ".forge")) {
			dir_writable(rootfd);
			if (tmpdir_rmtree_at(rootfd, ".forge") == 0)
				guard_name(&n.made, &n.nmade, root, "");
			else
				guard_name(&n.failed, &n.nfailed, root, "");
		}
	} else {
		for (size_t i = 0; i < g->n; i++)
			g->v[i].ok = false;
		guard_check(g, &n, rootfd, ".forge", &rel, 0);
		/* (sorted: a directory before what is in it) */
		for (size_t i = 0; i < g->n; i++) {
			struct forge_guard_entry *e = &g->v[i];
			const char *slash = strrchr(e->rel, '/');
			int dfd;

			if (e->ok)
				continue;
			dfd = parent_open(rootfd, e->rel);
			if (dfd >= 0 && entry_put(e, dfd, !*e->rel ? ".forge" : slash ? slash + 1 : e->rel) == 0)
				guard_name(&n.changed, &n.nchanged, root, e->rel);
			else
				guard_name(&n.failed, &n.nfailed, root, e->rel);
			if (dfd >= 0)
				close(dfd);
		}
		/* (a directory's mode last, what is in it written first: a
		 * 0500 one is left as it was) */
		for (size_t i = g->n; i-- > 0;) {
			struct forge_guard_entry *e = &g->v[i];
			const char *slash = strrchr(e->rel, '/');
			int dfd;

			if (!S_ISDIR(e->mode) || (dfd = parent_open(rootfd, e->rel)) < 0)
				continue;
			if (fchmodat(dfd, !*e->rel ? ".forge" : slash ? slash + 1 : e->rel, e->mode & 07777, 0) < 0 &&
			    e->ok)
				guard_name(&n.failed, &n.nfailed, root, e->rel);
			close(dfd);
		}
	}
	close(rootfd);
	sandbox_note_paths(notes, "the command changed", &n.changed, n.nchanged,
			   ", Forge's configuration, which no command may write: put back as it was before "
			   "the command");
	sandbox_note_paths(notes, "the command made", &n.made, n.nmade,
			   " in .forge, Forge's configuration, which no command may write: removed");
	sandbox_note_paths(notes, "the command changed", &n.failed, n.nfailed,
			   " in .forge, Forge's configuration, and it cannot be put back as it was: Forge "
			   "would read what the command wrote there");
	buf_release(&n.changed);
	buf_release(&n.made);
	buf_release(&n.failed);
	buf_release(&rel);
}

void forge_guard_release(struct forge_guard *g)
{
	guard_clear(g);
	memset(g, 0, sizeof *g);
}
