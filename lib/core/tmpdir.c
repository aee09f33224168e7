/* tmpdir.c - temporary directories removed on every exit path; see tmpdir.h. */
#include "core/tmpdir.h"
#include "core/buf.h"
#include "core/forge.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * The list: a slot's path is written before `used` is set and `used`
 * cleared before the path is freed, so a signal handler that interrupts
 * either sees a whole path or none.  `lock` orders the threads that make
 * and remove directories; the signal handler takes no lock.  Each
 * directory is held open with an flock(2) on it while it is listed: the
 * kernel drops the lock however the process ends, which is how
 * tmpdir_sweep() tells a killed process's directory from a live one's.
 */
static struct {
	char path[PATH_MAX];
	int fd;
} slots[TMPDIR_MAX];
/* `used` apart from the slots, which are a page each: every exit looks at
 * all of them, and a flag in each slot had it fault in 64 untouched pages
 * (a tenth of a session's page faults). */
static volatile sig_atomic_t used[TMPDIR_MAX];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool at_exit_set;

/* Directories met on the walk that could not be removed (a chmod 0 one, a
 * mount point): skipped when met again, forgotten once the walk leaves
 * their parent.  A tree with more of them than this at once is left. */
#define RM_STUCK_MAX 256

struct rm_stuck {
	ino_t ino;
	size_t depth; /* of the directory itself: its parent's depth + 1 */
};

static bool is_stuck(const struct rm_stuck *stuck, size_t n, ino_t ino, size_t depth)
{
	for (size_t i = 0; i < n; i++)
		if (stuck[i].ino == ino && stuck[i].depth == depth)
			return true;
	return false;
}

/* Remove the directory of inode ino from dir, when it is empty now.
 * True when it is gone (or no longer there). */
static bool rmdir_ino(int dir, ino_t ino, char *buf, size_t size)
{
	ssize_t n;

	if (lseek(dir, 0, SEEK_SET) < 0)
		return false;
	while ((n = getdents64(dir, buf, size)) > 0) {
		for (ssize_t off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(void *)(buf + off);
			off += d->d_reclen;
			if (d->d_ino == ino && strcmp(d->d_name, ".") && strcmp(d->d_name, ".."))
				return unlinkat(dir, d->d_name, AT_REMOVEDIR) == 0 || errno == ENOENT;
		}
	}
	return true;
}

/*
 * Open the directory name in dir for the walk, never following a symbolic
 * link; when its mode keeps this user out (EACCES: a command's chmod 000)
 * and it is on dev, it is made u+rwx first (fchmodat without following a
 * link).  Then u+rwx too when it is not (a chmod 500 directory keeps what
 * it holds).  -1 with errno.
 */
static int open_walk_dir(int dir, const char *name, dev_t dev)
{
	struct stat st;
	int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 && errno == EACCES) {
		if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) || st.st_dev != dev ||
		    fchmodat(dir, name, (st.st_mode & 07777) | S_IRWXU, AT_SYMLINK_NOFOLLOW) < 0) {
			errno = EACCES;
			return -1;
		}
		fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev && (st.st_mode & S_IRWXU) != S_IRWXU)
		(void)fchmod(fd, (st.st_mode & 07777) | S_IRWXU);	/* (not this user's: it stays) */
	return fd;
}

/*
 * Remove name (in dirfd) and, when it is a directory, what it holds, to
 * any depth.  Not recursive, and in a fixed stack: it runs in a signal
 * handler too, and a command may well make a tree thousands deep (before,
 * 32 levels were removed and the rest, and so the temp dir, left).  The
 * walk goes down with openat(O_NOFOLLOW), never following a symbolic link
 * nor crossing into another file system, and back up by "..", checking
 * that it comes back to the directory it started from.  A directory this
 * user cannot read, search or write is made so on the way (before, a
 * command's chmod 000 kept the temp dir).  0 when it is gone, else -1 with
 * errno.
 */
int tmpdir_rmtree_at(int dirfd, const char *name)
{
	char buf[2048];
	struct rm_stuck stuck[RM_STUCK_MAX];
	size_t nstuck = 0, depth = 0;
	struct stat top, st, here;
	int cur, fd, err = 0;

	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	if (fstatat(dirfd, name, &top, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	cur = open_walk_dir(dirfd, name, top.st_dev);
	if (cur < 0)
		return -1;
	if (fstat(cur, &top) < 0)
		goto fail;
	for (;;) {
		bool removed = false, down = false;
		ssize_t n;

		/* Removing entries while reading the directory may hide
		 * others from this pass: read it again until a pass removes
		 * nothing. */
		if (lseek(cur, 0, SEEK_SET) < 0)
			goto fail;
		while (!down && (n = getdents64(cur, buf, sizeof buf)) > 0) {
			for (ssize_t off = 0; off < n && !down;) {
				struct dirent64 *d = (struct dirent64 *)(void *)(buf + off);
				off += d->d_reclen;
				if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
					continue;
				if (unlinkat(cur, d->d_name, 0) == 0 || errno == ENOENT ||
				    ((d->d_type == DT_DIR || d->d_type == DT_UNKNOWN) &&
				     unlinkat(cur, d->d_name, AT_REMOVEDIR) == 0)) {
					removed = true;
					continue;
				}
				if ((d->d_type != DT_DIR && d->d_type != DT_UNKNOWN) ||
				    is_stuck(stuck, nstuck, d->d_ino, depth + 1))
					continue;
				fd = open_walk_dir(cur, d->d_name, top.st_dev);
				if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == top.st_dev) {
					close(cur);
					cur = fd;
					depth++;
					down = true;
					continue;
				}
				if (fd >= 0)
					close(fd);
				else if (errno == ENOTDIR || errno == ELOOP)
					continue; /* a file that stays: not a directory to skip */
				if (nstuck == RM_STUCK_MAX) {
					errno = ENOTEMPTY;
					goto fail;
				}
				stuck[nstuck++] = (struct rm_stuck){ d->d_ino, depth + 1 };
			}
		}
		if (down || removed)
			continue;
		/* nothing more goes from here: up, and remove it if it can */
		if (depth == 0)
			break;
		if (fstat(cur, &st) < 0)
			goto fail;
		fd = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		err = errno;
		close(cur);
		cur = fd;
		if (cur < 0) {
			errno = err;
			return -1;
		}
		depth--;
		/* (a directory moved meanwhile: stop rather than remove
		 * whatever "..", now somewhere else, holds) */
		if (fstat(cur, &here) < 0)
			goto fail;
		if (here.st_dev != top.st_dev || (depth == 0 && here.st_ino != top.st_ino)) {
			errno = ESTALE;
			goto fail;
		}
		while (nstuck && stuck[nstuck - 1].depth > depth + 1)
			nstuck--;
		if (!rmdir_ino(cur, st.st_ino, buf, sizeof buf)) {
			if (nstuck == RM_STUCK_MAX) {
				errno = ENOTEMPTY;
				goto fail;
			}
			stuck[nstuck++] = (struct rm_stuck){ st.st_ino, depth + 1 };
		}
	}
	close(cur);
	return unlinkat(dirfd, name, AT_REMOVEDIR);
fail:
	err = errno;
	close(cur);
	errno = err;
	return -1;
}

static void remove_tree(const char *path)
{
	/* (best effort: a mount point inside, another user's directory) */
	(void)tmpdir_rmtree_at(AT_FDCWD, path);
}

void tmpdir_remove_all_signal_safe(void)
{
	for (size_t i = 0; i < TMPDIR_MAX; i++)
		if (used[i]) {
			remove_tree(slots[i].path);
			used[i] = 0;
			close(slots[i].fd);
		}
}

static void remove_all_at_exit(void)
{
	tmpdir_remove_all_signal_safe();
}

/* $TMPDIR when it is absolute, else /tmp. */
static const char *tmp_parent(void)
{
	const char *tmp = getenv("TMPDIR");

	return tmp && *tmp == '/' ? tmp : "/tmp";
}

int tmpdir_make(char **out, const char *prefix)
{
	struct buf b = BUF_INIT;
	size_t i;
	int fd, rc = -1;

	*out = NULL;
	pthread_mutex_lock(&lock);
	for (i = 0; i < TMPDIR_MAX && used[i]; i++)
		;
	if (i == TMPDIR_MAX) {
		forge_error("more than %d temporary directories at once", TMPDIR_MAX);
		goto out;
	}
	buf_addf(&b, "%s/%s-XXXXXX", tmp_parent(), prefix);
	if (b.len >= sizeof slots[i].path) {
		forge_error("TMPDIR '%s' is too long", tmp_parent());
		goto out;
	}
	if (!mkdtemp(b.buf)) {
		forge_error("cannot make a temporary directory '%s': %s", b.buf, strerror(errno));
		goto out;
	}
	fd = open(b.buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
		forge_error("cannot hold the temporary directory '%s': %s", b.buf, strerror(errno));
		if (fd >= 0)
			close(fd);
		(void)rmdir(b.buf);
		goto out;
	}
	if (!at_exit_set) {
		atexit(remove_all_at_exit);
		at_exit_set = true;
	}
	memcpy(slots[i].path, b.buf, b.len + 1);
	slots[i].fd = fd;
	used[i] = 1;
	*out = buf_detach(&b, NULL);
	rc = 0;
out:
	pthread_mutex_unlock(&lock);
	buf_release(&b);
	return rc;
}

void tmpdir_remove(char *path)
{
	if (!path)
		return;
	pthread_mutex_lock(&lock);
	/* Removed before it is unlisted: a signal meanwhile removes the rest. */
	remove_tree(path);
	for (size_t i = 0; i < TMPDIR_MAX; i++)
		if (used[i] && !strcmp(slots[i].path, path)) {
			used[i] = 0;
			close(slots[i].fd);
			break;
		}
	pthread_mutex_unlock(&lock);
	free(path);
}

/* The prefixes of tmpdir_make(): a sweep touches nothing else. */
static const char *const prefixes[] = { TMPDIR_PREFIXES, NULL };

static bool known_prefix(const char *prefix, size_t n)
{
	for (size_t i = 0; prefixes[i]; i++)
		if (strlen(prefixes[i]) == n && !strncmp(prefixes[i], prefix, n))
			return true;
	return false;
}

/* Whether name is one tmpdir_make() gives: "PREFIX-XXXXXX". */
static bool made_name(const char *name)
{
	size_t n = strlen(name);

	return n > 7 && name[n - 7] == '-' && known_prefix(name, n - 7);
}

/* The directory name in dir, opened for tmpdir_sweep(); one this user
 * cannot read (a command's chmod 000 on its HOME), when it is this user's
 * and old enough to be swept, made u+rwx first.  -1 when it cannot. */
static int sweep_open(int dir, const char *name, time_t now)
{
	struct stat st;
	int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 && errno == EACCES && fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode) && st.st_uid == geteuid() && st.st_mtime <= now - TMPDIR_SWEEP_AGE_S &&
	    fchmodat(dir, name, (st.st_mode & 07777) | S_IRWXU, AT_SYMLINK_NOFOLLOW) == 0)
		fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd;
}

int tmpdir_sweep(bool dry_run, tmpdir_found_fn found, void *payload)
{
	const char *parent = tmp_parent();
	DIR *d = opendir(parent);
	struct dirent *e;
	time_t now = time(NULL);
	int n = 0;

	if (!d)
		return forge_error("cannot read the temporary directory '%s': %s", parent, strerror(errno));
	while ((e = readdir(d))) {
		struct stat st;
		int fd;

		if (!made_name(e->d_name))
			continue;
		fd = sweep_open(dirfd(d), e->d_name, now);
		if (fd < 0)
			continue;
		/* another user's, a young one (made, not yet locked), or held
		 * by a live process: left */
		if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || st.st_mtime > now - TMPDIR_SWEEP_AGE_S ||
		    flock(fd, LOCK_EX | LOCK_NB) < 0) {
			close(fd);
			continue;
		}
		char path[PATH_MAX];
		int err = 0;

		snprintf(path, sizeof path, "%s/%s", parent, e->d_name);
		if (found)
			found(path, TMPDIR_FOUND, payload);
		if (!dry_run) {
			if (tmpdir_rmtree_at(dirfd(d), e->d_name) < 0)
				err = errno ? errno : EIO;
			if (found)
				found(path, err, payload);
		}
		close(fd);
		n++;
	}
	closedir(d);
	return n;
}
