/* tmpdir.c - temporary directories removed on every exit path; see tmpdir.h. */
#include "core/tmpdir.h"
#include "core/buf.h"
#include "core/forge.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * The list: a slot's path is written before `used` is set and `used`
 * cleared before the path is freed, so a signal handler that interrupts
 * either sees a whole path or none.
 */
static struct {
	char path[PATH_MAX];
	volatile sig_atomic_t used;
} slots[TMPDIR_MAX];
static bool at_exit_set;

/* Depth of the trees removed; deeper parts are left (32 x 2 KiB of stack). */
#define RM_DEPTH 32

/* Remove name (in dirfd) and, when it is a directory, what it holds.
 * True when it is gone. */
static bool remove_at(int dirfd, const char *name, int depth)
{
	char buf[2048];
	bool removed;
	int fd;

	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return true;
	if (depth >= RM_DEPTH)
		return false;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	/* Removing entries while reading the directory may hide others from
	 * this pass: read it again until a pass removes nothing. */
	do {
		ssize_t n;

		removed = false;
		if (lseek(fd, 0, SEEK_SET) < 0)
			break;
		while ((n = getdents64(fd, buf, sizeof buf)) > 0) {
			for (ssize_t off = 0; off < n;) {
				struct dirent64 *d = (struct dirent64 *)(void *)(buf + off);
				off += d->d_reclen;
				if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
					continue;
				if (remove_at(fd, d->d_name, depth + 1))
					removed = true;
			}
		}
	} while (removed);
	close(fd);
	return unlinkat(dirfd, name, AT_REMOVEDIR) == 0;
}

static void remove_tree(const char *path)
{
	/* (a chmod 0 directory inside may refuse its contents: best effort) */
	remove_at(AT_FDCWD, path, 0);
}

void tmpdir_remove_all_signal_safe(void)
{
	for (size_t i = 0; i < TMPDIR_MAX; i++)
		if (slots[i].used) {
			remove_tree(slots[i].path);
			slots[i].used = 0;
		}
}

static void remove_all_at_exit(void)
{
	tmpdir_remove_all_signal_safe();
}

int tmpdir_make(char **out, const char *prefix)
{
	const char *tmp = getenv("TMPDIR");
	struct buf b = BUF_INIT;
	size_t i;

	*out = NULL;
	for (i = 0; i < TMPDIR_MAX && slots[i].used; i++)
		;
	if (i == TMPDIR_MAX)
		return forge_error("more than %d temporary directories at once", TMPDIR_MAX);
	buf_addf(&b, "%s/%s-XXXXXX", tmp && *tmp == '/' ? tmp : "/tmp", prefix);
	if (b.len >= sizeof slots[i].path) {
		buf_release(&b);
		return forge_error("TMPDIR '%s' is too long", tmp);
	}
	if (!mkdtemp(b.buf)) {
		int e = errno;
		forge_error("cannot make a temporary directory '%s': %s", b.buf, strerror(e));
		buf_release(&b);
		return -1;
	}
	if (!at_exit_set) {
		atexit(remove_all_at_exit);
		at_exit_set = true;
	}
	memcpy(slots[i].path, b.buf, b.len + 1);
	slots[i].used = 1;
	*out = buf_detach(&b, NULL);
	return 0;
}

void tmpdir_remove(char *path)
{
	if (!path)
		return;
	/* Removed before it is unlisted: a signal meanwhile removes the rest. */
	remove_tree(path);
	for (size_t i = 0; i < TMPDIR_MAX; i++)
		if (slots[i].used && !strcmp(slots[i].path, path)) {
			slots[i].used = 0;
			break;
		}
	free(path);
}
