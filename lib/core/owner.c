/* owner.c - whose Forge's own files are (core/owner.h). */
#include "core/owner.h"
#include "core/buf.h"
#include "core/forge.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* A uid or gid of sudo's environment: decimal, and not (id_t)-1, which
 * chown reads as "unchanged". */
static bool parse_id(unsigned long *out, const char *s)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno == 0 && !*end && *out < (unsigned long)(uid_t)-1;
}

/* The user sudo was run by, when this process is root and it is not root. */
static bool sudo_ids(uid_t *uid, gid_t *gid)
{
	unsigned long u, g;

	if (geteuid() != 0 || !parse_id(&u, getenv("SUDO_UID")) || u == 0)
		return false;
	*uid = (uid_t)u;
	*gid = parse_id(&g, getenv("SUDO_GID")) ? (gid_t)g : (gid_t)-1;
	return true;
}

void owner_follow(int fd, const char *path)
{
	struct stat dir, st;
	uid_t uid;
	gid_t gid;
	int own = -1;

	if (!sudo_ids(&uid, &gid))
		return;
	char *parent = path_parent(path);
	bool theirs = stat(parent, &dir) == 0 && dir.st_uid == uid;

	free(parent);
	if (!theirs)
		return;
	if (fd < 0) {
		own = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (own < 0)
			return;
		fd = own;
	}
	/* The checks and the change are made on the one open file: a name
	 * swapped meanwhile in the user's directory changes nothing else.  A
	 * second name could be the user's link to a file of root's elsewhere. */
	if (fstat(fd, &st) == 0 && st.st_uid == 0 &&
	    (S_ISDIR(st.st_mode) || (S_ISREG(st.st_mode) && st.st_nlink == 1))) {
		if (fchown(fd, uid, gid) < 0) {
			/* best effort: it stays root's, as before */
		}
	}
	if (own >= 0)
		close(own);
}

static void add_user(struct buf *b, uid_t uid)
{
	struct passwd *pw = getpwuid(uid);

	if (pw && pw->pw_name && *pw->pw_name)
		buf_adds(b, pw->pw_name);
	else
		buf_addf(b, "%lu", (unsigned long)uid);
}

/*
 * What to give back: at, or, when a directory of this user's is above it,
 * the highest directory between them that is at's owner's as well -- the
 * whole tree root made there (.git/worktrees for .git/worktrees/T/gitdir),
 * never more than what lies below a directory of this user's.  malloc'd.
 */
static char *top_of(const char *at, uid_t owner)
{
	char *top = xstrdup(at), *dir = path_parent(at);
	struct stat st;

	while (stat(dir, &st) == 0 && st.st_uid == owner && strcmp(dir, top) != 0) {
		free(top);
		top = dir;
		dir = path_parent(top);
	}
	if (stat(dir, &st) < 0 || st.st_uid != geteuid() || strcmp(dir, top) == 0) {
		free(top);
		top = xstrdup(at);
	}
	free(dir);
	return top;
}

/* Whether at is on a file system mounted read-only (a container's
 * `-v src:/src:ro`): then no chown or chmod lets anyone write there. */
static bool on_read_only_fs(const char *at)
{
	struct statvfs vfs;

	return statvfs(at, &vfs) == 0 && (vfs.f_flag & ST_RDONLY);
}

/* What stands in the way: at, with st, which this user may not `verb`. */
static void tell(struct buf *b, const char *at, const struct stat *st, const char *verb)
{
	uid_t me = geteuid();
	bool ro = on_read_only_fs(at);
	char *top;

	buf_addf(b, "'%s' ", at);
	if (ro && strncmp(verb, "write", 5) == 0) {
		buf_adds(b, "is on a read-only file system: no chown or chmod lets it be written");
		return;
	}
	if (st->st_uid == me) {
		buf_addf(b, "(mode %04o) does not let its owner %s it", (unsigned)(st->st_mode & 07777), verb);
		if (ro) {
			buf_adds(b, "; it is on a read-only file system: no chmod can change that");
			return;
		}
		buf_adds(b, "; to allow it: chmod u+rwX ");
		buf_add_shell_quoted(b, at);
		return;
	}
	buf_adds(b, "belongs to ");
	add_user(b, st->st_uid);
	buf_addf(b, " (mode %04o), and user ", (unsigned)(st->st_mode & 07777));
	add_user(b, me);
	buf_addf(b, " may not %s it", verb);
	if (ro) {
		/* (the advice would fail there: a chown is a write too) */
		buf_adds(b, "; it is on a read-only file system: no chown or chmod can change that");
		return;
	}
	buf_addf(b, "%s; give it back with: sudo chown -R ",
		 st->st_uid == 0 ? " (made by a command run with sudo?)" : "");
	add_user(b, me);
	buf_addch(b, ' ');
	top = top_of(at, st->st_uid);
	buf_add_shell_quoted(b, top);
	free(top);
}

/* (EROFS: root, whom no permission stops, on a read-only mount) */
static bool denied(const char *path, int mode)
{
	return faccessat(AT_FDCWD, path, mode, AT_EACCESS) < 0 &&
	       (errno == EACCES || errno == EPERM || ((mode & W_OK) && errno == EROFS));
}

bool owner_explain(struct buf *b, const char *path, bool write)
{
	char *p;
	struct stat st;
	bool found = false;

	if (!*path)
		return false;
	p = xstrdup(path);
	/* the directories on the way, from the top: the first one that cannot
	 * be entered hides everything below it */
	for (char *s = strchr(p + 1, '/'); s && !found; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (stat(p, &st) < 0) {
			*s = '/';
			break;
		}
		if (S_ISDIR(st.st_mode) && denied(p, X_OK)) {
			tell(b, p, &st, "enter");
			found = true;
		}
		*s = '/';
	}
	if (found)
		goto out;
	if (stat(path, &st) == 0) {
		int mode = (S_ISDIR(st.st_mode) ? R_OK | X_OK : R_OK) | (write ? W_OK : 0);

		if (denied(path, mode)) {
			tell(b, path, &st, write ? "write" : "read");
			found = true;
		}
	} else if (errno == ENOENT && write) {
		char *parent = path_parent(path);

		if (stat(parent, &st) == 0 && denied(parent, W_OK | X_OK)) {
			tell(b, parent, &st, "write in");
			found = true;
		}
		free(parent);
	}
out:
	free(p);
	return found;
}

int owner_error(int err, const char *path, bool write, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	buf_addf(&b, ": %s", strerror(err));
	if (err == EACCES || err == EPERM) {
		size_t at = b.len;

		buf_adds(&b, "; ");
		if (!owner_explain(&b, path, write))
			buf_truncate(&b, at);
	}
	forge_error("%s", b.buf);
	buf_release(&b);
	errno = err;
	return -1;
}
