/*
 * nsview.c - namespaces, the private root file system of a command, and a
 * per-command pids cgroup.  See nsview.h.
 */
#include "os/nsview.h"
#include "os/procself.h"
#include "core/buf.h"
#include "core/forge.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* ---------------------------------------------------------------- parent */

static int op_cmp(const void *a, const void *b)
{
	const struct nsview_op *x = a, *y = b;
	size_t lx = strlen(x->dst), ly = strlen(y->dst);

	if (lx != ly)
		return lx < ly ? -1 : 1;
	return x->kind - y->kind;
}

/* The flags of the mount path is on that a user namespace may not clear
 * (they are locked): a read-only remount of a bind of it must repeat them. */
static unsigned long locked_flags(const char *path)
{
	struct statvfs sv;
	unsigned long f = 0;

	if (statvfs(path, &sv) < 0)
		return 0;
	if (sv.f_flag & ST_NOSUID)
		f |= MS_NOSUID;
	if (sv.f_flag & ST_NODEV)
		f |= MS_NODEV;
	if (sv.f_flag & ST_NOEXEC)
		f |= MS_NOEXEC;
	if (sv.f_flag & ST_NOATIME)
		f |= MS_NOATIME;
	if (sv.f_flag & ST_NODIRATIME)
		f |= MS_NODIRATIME;
	if (!(sv.f_flag & (ST_NOATIME | ST_RELATIME)))
		f |= MS_STRICTATIME;
	return f;
}

void nsview_prepare(struct nsview *v, const struct nsview_bind *binds, size_t n)
{
	v->ops = xcalloc(n ? n : 1, sizeof(*v->ops));
	v->n = 0;
	v->dev_flags = locked_flags("/dev/null");
	for (size_t i = 0; i < n; i++) {
		const char *dst = binds[i].dst ? binds[i].dst : binds[i].src;
		struct nsview_op *op = &v->ops[v->n];
		struct stat st;
		struct buf b = BUF_INIT;

		if (binds[i].kind == NSVIEW_DATA) {
			/* The file is made by the child, at the tmpfs's root. */
			if (!binds[i].dst || dst[0] != '/' || !binds[i].data ||
			    stat(dst, &st) < 0 || !S_ISREG(st.st_mode))
				continue;
			op->kind = NSVIEW_DATA;
			op->data = binds[i].data;
			op->len = strlen(binds[i].data);
			op->flags = MS_NOSUID | MS_NODEV;
			buf_addf(&b, "/forge-data-%zu", v->n);
			op->src = buf_detach(&b, NULL);
			buf_addf(&b, "/newroot%s", dst);
			op->dst = buf_detach(&b, NULL);
			v->n++;
			continue;
		}
		if (!binds[i].src || binds[i].src[0] != '/' || dst[0] != '/' ||
		    lstat(binds[i].src, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode) && binds[i].kind == NSVIEW_RO) {
			char target[PATH_MAX];
			ssize_t len = readlink(binds[i].src, target, sizeof(target) - 1);
			if (len <= 0)
				continue;
			target[len] = '\0';
			op->kind = NSVIEW_LINK;
			op->src = xstrdup(target);
			buf_addf(&b, "/newroot%s", dst);
			op->dst = buf_detach(&b, NULL);
			v->n++;
			continue;
		}
		/* (what it links to; anything else lstat() said already) */
		if (S_ISLNK(st.st_mode) && stat(binds[i].src, &st) < 0)
			continue;
		if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode))
			continue;
		op->kind = binds[i].kind;
		op->is_dir = S_ISDIR(st.st_mode);
		op->flags = locked_flags(binds[i].src);
		buf_addf(&b, "/oldroot%s", strcmp(binds[i].src, "/") ? binds[i].src : "");
		op->src = buf_detach(&b, NULL);
		buf_addf(&b, "/newroot%s", strcmp(dst, "/") ? dst : "");
		op->dst = buf_detach(&b, NULL);
		v->n++;
	}
	qsort(v->ops, v->n, sizeof(*v->ops), op_cmp);
}

void nsview_release(struct nsview *v)
{
	if (!v || !v->ops)
		return;
	for (size_t i = 0; i < v->n; i++) {
		free(v->ops[i].src);
		free(v->ops[i].dst);
	}
	free(v->ops);
	v->ops = NULL;
	v->n = 0;
}

const char *nsview_stage_name(int stage)
{
	switch (stage) {
	case NSV_MAPS: return "namespaces: id maps";
	case NSV_PRIVATE: return "namespaces: private mounts";
	case NSV_TMPFS: return "namespaces: tmpfs root";
	case NSV_PIVOT: return "namespaces: pivot_root";
	case NSV_BIND: return "namespaces: bind mount";
	case NSV_DEV: return "namespaces: /dev";
	case NSV_PROC: return "namespaces: mount /proc";
	case NSV_DETACH: return "namespaces: detach the host root";
	case NSV_CAPS: return "drop capabilities";
	}
	return "namespaces";
}

/* ---------------------------------------------------------------- child */

/* Async-signal-safe: write "<id> <id> 1\n" to path. */
static int write_map(const char *path, unsigned long id)
{
	char line[64], num[24];
	size_t n = 0, k = 0;
	int fd;
	ssize_t w;

	do {
		num[k++] = (char)('0' + id % 10);
		id /= 10;
	} while (id && k < sizeof(num));
	for (int rep = 0; rep < 2; rep++) {
		for (size_t i = k; i > 0; i--)
			line[n++] = num[i - 1];
		line[n++] = ' ';
	}
	line[n++] = '1';
	line[n++] = '\n';
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	w = write(fd, line, n);
	if (w < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	close(fd);
	return 0;
}

int nsview_maps_child(uid_t uid, gid_t gid)
{
	/* An unprivileged process may write its own maps only while it is
	 * dumpable (/proc/self belongs to root otherwise), and every Forge
	 * program makes itself non-dumpable at start (the keys): dumpable for
	 * the writes, then as it was.  (Before, the probes of a user said
	 * "namespaces unavailable" where the kernel offered them.) */
	int was = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), fd, rc;

	if (was != 1)
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "deny", 4) < 0) {
			/* older kernels: nothing to do */
		}
		close(fd);
	}
	rc = write_map("/proc/self/uid_map", uid);
	if (rc == 0)
		rc = write_map("/proc/self/gid_map", gid);
	/* (2, root's only, cannot be set back: it stays 1, as it did when
	 * proc.c's child toggled it around this call) */
	if (was != 1)
		prctl(PR_SET_DUMPABLE, was, 0, 0, 0);
	return rc;
}

/*
 * The directories known to be there: each entry's path and its ancestors,
 * which a mkdir would find (EEXIST) -- made or found by mkdirs() since the
 * last mount above them.  On the child's stack: the view is a fresh tmpfs
 * a command, and each bind's parents were made from / again (~45 mkdir
 * calls a command that found them there).  Only a mount changes what lies
 * beneath a path here (the mounts are private): made_cover() forgets it.
 * The paths are in pool; when it is full, everything is forgotten (more
 * mkdir calls, the same view).
 */
#define MADE_MAX 32
struct made {
	char pool[PATH_MAX];
	size_t used, n;
	struct { size_t off, len; } e[MADE_MAX];
};

/* How much of path[0..n) entry i says is there: a length that ends a
 * directory of both (0: none). */
static size_t made_common(const struct made *m, size_t i, const char *path, size_t n)
{
	const char *dir = m->pool + m->e[i].off;
	size_t len = m->e[i].len, j = 0;

	while (j < len && j < n && dir[j] == path[j])
		j++;
	if ((j == len || dir[j] == '/') && (j == n || path[j] == '/'))
		return j;
	while (j > 0 && dir[--j] != '/')
		;
	return j;
}

static size_t made_known(const struct made *m, const char *path, size_t n)
{
	size_t k = 0, c;

	for (size_t i = 0; i < m->n; i++)
		if ((c = made_common(m, i, path, n)) > k)
			k = c;
	return k;
}

/* What is beneath dst changed (a mount on it): forget it. */
static void made_cover(struct made *m, const char *dst)
{
	size_t n = strlen(dst);

	for (size_t i = 0; i < m->n; i++)
		if (m->e[i].len > n && memcmp(m->pool + m->e[i].off, dst, n) == 0 &&
		    m->pool[m->e[i].off + n] == '/')
			m->e[i].len = n;
}

/* Where a path of n bytes goes in the pool (everything is forgotten when
 * it is full); made_keep() keeps it there. */
static char *made_slot(struct made *m, size_t n)
{
	if (m->n == MADE_MAX || m->used + n + 1 > sizeof(m->pool))
		m->n = m->used = 0;
	return m->pool + m->used;
}

static void made_keep(struct made *m, size_t n)
{
	m->e[m->n].off = m->used;
	m->e[m->n++].len = n;
	m->used += n + 1;
}

/* mkdir -p of path[0..n), async-signal-safe; from the first directory not
 * known to be there. */
static int mkdirs_n(struct made *m, const char *path, size_t n)
{
	size_t k;
	char *b;

	if (n >= sizeof(m->pool))
		return -ENAMETOOLONG;
	if ((k = made_known(m, path, n)) == n)
		return 0;
	b = made_slot(m, n);
	memcpy(b, path, n);
	for (size_t i = k + 1; i <= n; i++) {
		if (i < n && b[i] != '/')
			continue;
		b[i] = '\0';
		if (mkdir(b, 0755) < 0 && errno != EEXIST)
			return -errno;
		if (i < n)
			b[i] = '/';
	}
	made_keep(m, n);
	return 0;
}

static int mkdirs(struct made *m, const char *path)
{
	return mkdirs_n(m, path, strlen(path));
}

/* The length of path's parent ("/a/b": 2), 0 for one at the root. */
static size_t parent_len(const char *path)
{
	size_t n = strlen(path);

	while (n > 0 && path[n - 1] != '/')
		n--;
	return n > 1 ? n - 1 : 0;
}

/* An empty file at path (parents made), unless something is there already. */
static int touch(struct made *m, const char *path)
{
	size_t pn = parent_len(path);
	struct stat st;
	int fd, rc;

	if (stat(path, &st) == 0)
		return 0;
	if (pn && (rc = mkdirs_n(m, path, pn)) < 0)
		return rc;
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int bind_ro(const char *dst, unsigned long locked)
{
	if (mount(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | locked, NULL) < 0)
		return -errno;
	return 0;
}

#define FAIL(st) do { *stage = (st); return -errno; } while (0)
#define CHECK_RC(st, expr) do { int r_ = (expr); if (r_ < 0) { *stage = (st); return r_; } } while (0)

/* Whether dst lies beneath the view's /dev, which is a tmpfs of its own. */
static bool under_dev(const char *dst)
{
	return strncmp(dst, "/newroot/dev/", 13) == 0;
}

/* op->src (in the tmpfs that is the root here) holding op->data, read-only. */
static int write_data(const struct nsview_op *op)
{
	size_t off = 0;
	int fd = open(op->src, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444), rc = 0;

	if (fd < 0)
		return -errno;
	while (off < op->len) {
		ssize_t n = write(fd, op->data + off, op->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)n;
	}
	close(fd);
	return rc;
}

/*
 * Cover op->dst, when it is in the view: a directory with an empty tmpfs
 * (paths may be bound beneath it later), a file with an empty one nobody
 * may read, in a private tmpfs.  The mount is tried without looking
 * first (most hidden paths are there; a stat each before); when it fails,
 * a dst that is not there was not in the view anyway.
 */
static int hide(struct made *m, const struct nsview_op *op, int *stage)
{
	struct stat st;
	int e;

	if (op->is_dir ? mount("tmpfs", op->dst, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
		       : mount("/empty-file", op->dst, NULL, MS_BIND, NULL)) {
		e = errno;
		if (stat(op->dst, &st) < 0)
			return 0;
		*stage = NSV_BIND;
		return -e;
	}
	made_cover(m, op->dst);
	return 0;
}

/* Carry out one op of the view (a bind, a hidden path or a symbolic link). */
static int apply_op(struct made *m, const struct nsview_op *op, int *stage)
{
	if (op->kind == NSVIEW_LINK) {
		size_t pn = parent_len(op->dst);
		if (strlen(op->dst) >= PATH_MAX)
			return 0;
		if (pn)
			CHECK_RC(NSV_BIND, mkdirs_n(m, op->dst, pn));
		if (symlink(op->src, op->dst) < 0 && errno != EEXIST)
			FAIL(NSV_BIND);
		return 0;
	}
	if (op->kind == NSVIEW_HIDE)
		return hide(m, op, stage);
	if (op->kind == NSVIEW_DATA) {
		CHECK_RC(NSV_BIND, write_data(op));
		CHECK_RC(NSV_BIND, touch(m, op->dst));
	} else {
		CHECK_RC(NSV_BIND, op->is_dir ? mkdirs(m, op->dst) : touch(m, op->dst));
	}
	if (mount(op->src, op->dst, NULL, MS_BIND | MS_REC, NULL) < 0)
		FAIL(NSV_BIND);
	made_cover(m, op->dst);
	if (op->kind == NSVIEW_RO || op->kind == NSVIEW_DATA)
		CHECK_RC(NSV_BIND, bind_ro(op->dst, op->flags));
	return 0;
}

/*
 * The host's device node /dev/name at /newroot/dev/name, read-only, where
 * the host has it.  The view's /dev is a tmpfs just mounted, with nothing
 * in it yet: the file to bind on is made without looking first, and the
 * host's node is looked for only when the bind failed (two system calls a
 * node fewer).
 */
static int bind_dev(const char *name, unsigned long locked)
{
	char src[32] = "/oldroot/dev/", dst[32] = "/newroot/dev/";
	size_t ls = strlen(src), ld = strlen(dst), ln = strlen(name);
	struct stat st;
	int fd, e;

	memcpy(src + ls, name, ln + 1);
	memcpy(dst + ld, name, ln + 1);
	if ((fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0)
		return -errno;
	close(fd);
	if (mount(src, dst, NULL, MS_BIND, NULL) < 0) {
		e = errno;
		/* not on the host: not in the view either */
		if (stat(src, &st) < 0)
			return unlink(dst) < 0 ? -errno : 0;
		return -e;
	}
	/* Read-only: the node is the host's, and root's command owns it
	 * (uid 0 maps to the host's root) -- a chmod 000 of /dev/null would
	 * break the machine.  Reading and writing the device itself is not
	 * a write to the file system: unchanged. */
	return bind_ro(dst, locked);
}

int nsview_enter_child(const struct nsview *v, int *stage)
{
	static const char *const devs[] = { "null", "zero", "full", "random", "urandom", "tty", NULL };
	static const char *const links[][2] = {
		{ "/proc/self/fd", "/newroot/dev/fd" }, { "/proc/self/fd/0", "/newroot/dev/stdin" },
		{ "/proc/self/fd/1", "/newroot/dev/stdout" }, { "/proc/self/fd/2", "/newroot/dev/stderr" },
	};
	struct made made;
	int fd, rc;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		FAIL(NSV_PRIVATE);
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
		FAIL(NSV_TMPFS);
	if (chdir("/tmp") < 0 || mkdir("newroot", 0755) < 0 || mkdir("oldroot", 0755) < 0)
		FAIL(NSV_TMPFS);
	if ((fd = open("empty-file", O_WRONLY | O_CREAT | O_CLOEXEC, 0)) < 0)
		FAIL(NSV_TMPFS);
	close(fd);
	if (mount("newroot", "newroot", NULL, MS_BIND, NULL) < 0)
		FAIL(NSV_TMPFS);
	if (syscall(SYS_pivot_root, ".", "oldroot") < 0 || chdir("/") < 0)
		FAIL(NSV_PIVOT);
	/* (made above: a directory of the tmpfs, now the root) */
	made.n = made.used = 0;
	memcpy(made_slot(&made, 8), "/newroot", 8);
	made_keep(&made, 8);

	/* The binds in order, parents first; those beneath /dev after the
	 * view's own /dev is mounted, or its tmpfs would cover them (a
	 * worktree in /dev/shm). */
	for (size_t i = 0; i < v->n; i++)
		if (!under_dev(v->ops[i].dst) && (rc = apply_op(&made, &v->ops[i], stage)) < 0)
			return rc;

	CHECK_RC(NSV_DEV, mkdirs(&made, "/newroot/dev"));
	if (mount("tmpfs", "/newroot/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755") < 0)
		FAIL(NSV_DEV);
	made_cover(&made, "/newroot/dev");
	for (size_t i = 0; devs[i]; i++)
		CHECK_RC(NSV_DEV, bind_dev(devs[i], v->dev_flags));
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		if (symlink(links[i][0], links[i][1]) < 0 && errno != EEXIST)
			FAIL(NSV_DEV);
	for (size_t i = 0; i < v->n; i++)
		if (under_dev(v->ops[i].dst) && (rc = apply_op(&made, &v->ops[i], stage)) < 0)
			return rc;

	CHECK_RC(NSV_PROC, mkdirs(&made, "/newroot/proc"));
	if (mount("proc", "/newroot/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		FAIL(NSV_PROC);

	/* The old root goes with the tmpfs it hangs under: one detach (each
	 * waits for an RCU grace period). */
	if (chdir("/newroot") < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		FAIL(NSV_DETACH);
	return 0;
}

struct cap_header { uint32_t version; int pid; };
struct cap_data { uint32_t effective, permitted, inheritable; };

int nsview_drop_caps_child(void)
{
	struct cap_header h = { 0x20080522, 0 };	/* _LINUX_CAPABILITY_VERSION_3 */
	struct cap_data d[2];
	struct procself ps;

	/* (one already out of the bounding set is not dropped again: that
	 * needs CAP_SETPCAP, which a process whose set is empty lacks --
	 * forge-sandbox-init's command, os/proc_child.h).  The set comes
	 * from one read of /proc/self/status: asking for each capability
	 * took 64 system calls, and the command's set is empty already. */
	if (procself_read_child(&ps, PROCSELF_CAP_BND) == 0) {
		for (int c = 0; c < 64; c++)
			if ((ps.cap_bnd >> c & 1) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 &&
			    errno != EINVAL)
				return -errno;
	} else {
		/* the kernel numbers its capabilities densely: the first it
		 * does not know (EINVAL) ends them */
		for (int c = 0, r; c < 64 && (r = prctl(PR_CAPBSET_READ, c, 0, 0, 0)) >= 0; c++)
			if (r == 1 && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
				return -errno;
	}
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	return 0;
}

bool nsview_probe(char *reason, size_t size, const char *what, int (*child)(void *), void *arg)
{
	int st = 0;
	pid_t pid = fork();

	if (pid == 0) {
		int r = child(arg);
		_exit(r < 0 ? (-r & 0xff) : 0);
	}
	if (pid < 0) {
		snprintf(reason, size, "fork: %s", strerror(errno));
		return false;
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return true;
	snprintf(reason, size, "%s: %s", what, WIFEXITED(st) ? strerror(WEXITSTATUS(st)) : "probe died");
	return false;
}

/* The probe's child: the namespaces of a view and the id maps. */
static int probe_child(void *unused)
{
	uid_t uid = getuid();   /* before the new user namespace hides them */
	gid_t gid = getgid();

	(void)unused;
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC) < 0)
		return -errno;
	return nsview_maps_child(uid, gid);
}

static int ns_cached = -1;
static char ns_reason[160];

bool nsview_likely(const char **why)
{
	if (why)
		*why = ns_cached == 0 ? ns_reason : NULL;
	return ns_cached != 0;
}

bool nsview_available(const char **why)
{
	if (ns_cached < 0)
		ns_cached = nsview_probe(ns_reason, sizeof ns_reason,
					 "unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID|CLONE_NEWIPC)",
					 probe_child, NULL);
	if (why)
		*why = ns_cached ? NULL : ns_reason;
	return ns_cached == 1;
}

/* ---------------------------------------------------------------- cgroup */

/* This process's cgroup path in the hierarchy named by key ("pids" in v1,
 * "" for v2), read from /proc/self/cgroup; false when absent. */
static bool own_cgroup(char *out, size_t size, const char *key)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[1024];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
		size_t klen;
		if (!b)
			continue;
		klen = (size_t)(b - a - 1);
		line[strcspn(line, "\n")] = '\0';
		if (*key) {
			/* v1: the controller list may be "pids" or "cpu,pids" */
			char list[256];
			if (klen >= sizeof(list))
				continue;
			memcpy(list, a + 1, klen);
			list[klen] = '\0';
			for (char *t = list, *comma; t; t = comma ? comma + 1 : NULL) {
				comma = strchr(t, ',');
				if (comma)
					*comma = '\0';
				if (!strcmp(t, key))
					found = true;
			}
		} else {
			found = klen == 0 && !strncmp(line, "0:", 2);
		}
		if (found)
			snprintf(out, size, "%s", b + 1);
	}
	fclose(f);
	return found;
}

/* the base cgroup_pids_base() found is in a cgroup v1 hierarchy */
static bool base_v1;

const char *cgroup_pids_base(const char **why)
{
	static int cached = -1;
	static char base[512], reason[1400];

	if (cached < 0) {
		char rel[400];
		struct statfs sf;
		cached = 0;
		snprintf(reason, sizeof(reason), "no pids cgroup controller is mounted");
		if (own_cgroup(rel, sizeof(rel), "pids")) {
			snprintf(base, sizeof(base), "/sys/fs/cgroup/pids%s", strcmp(rel, "/") ? rel : "");
			base_v1 = true;
			if (access(base, W_OK) == 0)
				cached = 1;
			else
				snprintf(reason, sizeof(reason), "the pids cgroup '%s' is not writable", base);
		} else if (own_cgroup(rel, sizeof(rel), "")) {
			const char *mnt = statfs("/sys/fs/cgroup", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC
					? "/sys/fs/cgroup" : "/sys/fs/cgroup/unified";
			char ctl[600], data[256] = "";
			FILE *f;
			snprintf(base, sizeof(base), "%s%s", mnt, strcmp(rel, "/") ? rel : "");
			snprintf(ctl, sizeof(ctl), "%s/cgroup.subtree_control", base);
			if ((f = fopen(ctl, "re"))) {
				if (!fgets(data, sizeof(data), f))
					data[0] = '\0';
				fclose(f);
			}
			if (!strstr(data, "pids"))
				snprintf(reason, sizeof(reason),
					 "the pids controller is not delegated to cgroup '%s'", base);
			else if (access(base, W_OK) != 0)
				snprintf(reason, sizeof(reason), "the cgroup '%s' is not writable", base);
			else
				cached = 1;
		}
	}
	if (why)
		*why = cached ? NULL : reason;
	return cached ? base : NULL;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t w;

	if (fd < 0)
		return -1;
	w = write(fd, text, strlen(text));
	close(fd);
	return w < 0 ? -1 : 0;
}

/* The group of this process, made at the first use and removed at exit. */
static char own_group[600];
static unsigned long own_max;

static void own_group_remove(void)
{
	if (own_group[0])
		rmdir(own_group);
}

/*
 * End what is left in the group at path: cgroup.kill where the kernel has
 * it (v2, 5.14), else SIGKILL to each process cgroup.procs lists, again
 * while new ones appear (a fork between the read and the kill), a bounded
 * number of times.
 */
static void kill_group(const char *path)
{
	char file[1200];

	snprintf(file, sizeof(file), "%s/cgroup.kill", path);
	if (write_file(file, "1\n") == 0)
		return;
	snprintf(file, sizeof(file), "%s/cgroup.procs", path);
	for (int round = 0; round < 16; round++) {
		FILE *f = fopen(file, "re");
		long pid;
		int n = 0;

		if (!f)
			return;
		while (fscanf(f, "%ld", &pid) == 1)
			if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
				n++;
		fclose(f);
		if (!n)
			return;
	}
}

/*
 * Remove groups left by Forge processes that are gone, and end what runs in
 * them first: a command's detached processes outlive Forge when Forge and
 * its reaper are both killed (SIGKILL, the OOM killer) where there is no
 * PID namespace to take them down; the group still holds them.
 */
static void sweep_stale(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char *end;
		long pid;
		char path[1100];
		if (strncmp(e->d_name, "forge-", 6))
			continue;
		pid = strtol(e->d_name + 6, &end, 10);
		if (*end || pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "%s/%s", base, e->d_name);
		if (rmdir(path) < 0 && errno == EBUSY) {
			kill_group(path);
			/* (the killed leave the group as they are reaped: by their
			 * parent, or by init -- soon, not at once) */
			for (int i = 0; i < 100 && rmdir(path) < 0 && errno == EBUSY; i++)
				usleep(10000);
		}
	}
	closedir(d);
}

int cgroup_pids_new(struct cgroup_pids *cg, unsigned long max, const char **why)
{
	static char reason[1400];
	const char *base = cgroup_pids_base(why);
	char file[700], num[32];

	cg->procs_fd = -1;
	cg->self = false;
	cg->path[0] = '\0';
	if (!base)
		return -1;
	if (!own_group[0]) {
		sweep_stale(base);
		snprintf(own_group, sizeof(own_group), "%s/forge-%ld", base, (long)getpid());
		if (mkdir(own_group, 0755) < 0 && errno != EEXIST) {
			snprintf(reason, sizeof(reason), "cannot create cgroup '%s': %s", own_group,
				 strerror(errno));
			own_group[0] = '\0';
			*why = reason;
			return -1;
		}
		atexit(own_group_remove);
	}
	if (own_max != max) {
		snprintf(file, sizeof(file), "%s/pids.max", own_group);
		snprintf(num, sizeof(num), "%lu\n", max);
		if (write_file(file, num) < 0) {
			snprintf(reason, sizeof(reason), "cannot write '%s': %s", file, strerror(errno));
			*why = reason;
			return -1;
		}
		own_max = max;
	}
	/* v1: the child moves itself in through the tasks file (nsview.h) */
	snprintf(file, sizeof(file), "%s/%s", own_group, base_v1 ? "tasks" : "cgroup.procs");
	if ((cg->procs_fd = open(file, O_WRONLY | O_CLOEXEC)) < 0) {
		snprintf(reason, sizeof(reason), "cannot open '%s': %s", file, strerror(errno));
		*why = reason;
		return -1;
	}
	cg->self = base_v1;
	snprintf(cg->path, sizeof(cg->path), "%s", own_group);
	return 0;
}

int cgroup_pids_join_child(int fd)
{
	/* "0": the calling thread, which needs no lock on every thread group */
	return write(fd, "0\n", 2) < 0 ? -errno : 0;
}

void cgroup_pids_free(struct cgroup_pids *cg)
{
	if (!cg)
		return;
	if (cg->procs_fd >= 0)
		close(cg->procs_fd);
	cg->procs_fd = -1;
	cg->self = false;
	cg->path[0] = '\0';
}
