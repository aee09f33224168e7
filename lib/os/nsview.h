/*
 * nsview.h - the namespaces of a confined command: its own user, PID,
 * mount and IPC namespaces (and network, when asked), a private root file
 * system built from an allow-list of bind mounts, a fresh /proc and a
 * minimal /dev; and a per-command cgroup with a process limit.
 *
 * Used by proc.c.  Everything is prepared in the parent (nsview_prepare(),
 * cgroup_pids_new()); the *_child functions run between clone and exec and
 * make raw system calls only: no allocation, no locks, no stdio.  They
 * return 0 or a negative errno value.
 *
 * THE VIEW.  The child (PID 1 of the new PID namespace, with every
 * capability of its new user namespace) mounts a tmpfs, pivots into it
 * with the old root at /oldroot, bind-mounts each allowed path under
 * /newroot (read-only unless marked writable; a "hide" entry covers a file
 * with an empty one, a directory with an empty tmpfs), adds /dev (null, zero, full, random,
 * urandom, tty and the /dev/fd links) and a fresh /proc, detaches the old
 * root and pivots into /newroot.  What is not in the list does not exist
 * for the command: host sockets under /tmp or /run, other users' homes,
 * /dev/shm.  The command itself runs with no capabilities (bounding set
 * emptied), so it cannot undo a mount.
 */
#ifndef FORGE_NSVIEW_H
#define FORGE_NSVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum { NSVIEW_RO, NSVIEW_RW, NSVIEW_HIDE, NSVIEW_LINK /* prepared only: a symlink */, NSVIEW_DATA };

/*
 * One entry of the view as the caller gives it.  NSVIEW_DATA covers the
 * regular file dst with a read-only file holding data, which the child
 * writes into the view's own tmpfs: it exists nowhere on the host, so no
 * command can remove, replace or plant anything in its place.
 */
struct nsview_bind {
	const char *src;   /* host path (absolute); NSVIEW_DATA: unused */
	const char *dst;   /* path inside; NULL = src */
	int kind;          /* NSVIEW_RO, NSVIEW_RW, NSVIEW_HIDE, NSVIEW_DATA */
	const char *data;  /* NSVIEW_DATA: the file's text (NUL-terminated; borrowed) */
};

/* A prepared view: absolute paths with their prefixes, sorted parents first. */
struct nsview_op {
	char *src;              /* "/oldroot/..." (NSVIEW_LINK: the link's target) */
	char *dst;              /* "/newroot/..." */
	int kind;
	bool is_dir;
	unsigned long flags;    /* locked mount flags of the source (MS_NOSUID ...) */
	const char *data;       /* NSVIEW_DATA: the text (borrowed), src its file in the tmpfs */
	size_t len;
};

struct nsview {
	struct nsview_op *ops;
	size_t n;
	unsigned long dev_flags;        /* locked mount flags of the host's /dev */
};

/*
 * Prepare binds[0..n) for the child: sources that do not exist are left
 * out; HIDE entries whose target does not exist are left out, and DATA
 * entries whose dst is not a regular file; a read-only
 * source that is a symlink (/bin -> usr/bin) becomes the same symlink in
 * the view.  Never fails.
 */
void nsview_prepare(struct nsview *v, const struct nsview_bind *binds, size_t n);
void nsview_release(struct nsview *v);

/* Stages of the child's setup, for error reports. */
enum {
	NSV_MAPS = 1, NSV_PRIVATE, NSV_TMPFS, NSV_PIVOT, NSV_BIND, NSV_DEV, NSV_PROC, NSV_DETACH,
	NSV_CAPS
};
const char *nsview_stage_name(int stage);

/*
 * In the child just created with CLONE_NEWUSER (and the other namespaces):
 * map uid and gid onto themselves.  Returns 0 or -errno.
 */
int nsview_maps_child(uid_t uid, gid_t gid);

/*
 * Whether child(arg), run in a forked child, returns 0 (it returns 0 or
 * -errno and may change the child's namespaces freely).  When not, reason
 * (size bytes) says "WHAT: ERROR" (or "fork: ERROR").  For the
 * *_available() probes of kernel features.
 */
bool nsview_probe(char *reason, size_t size, const char *what, int (*child)(void *), void *arg);

/*
 * In the child (PID 1 of the namespace, after nsview_maps_child): build
 * the view and pivot into it.  *stage gets the failing step.  0 or -errno.
 */
int nsview_enter_child(const struct nsview *v, int *stage);

/* In the command's process just before exec: drop every capability.  0 or -errno. */
int nsview_drop_caps_child(void);

/*
 * True when this process can create user, PID, mount and IPC namespaces
 * (probed once in a short-lived child, then cached); *why gets a static
 * reason when not.
 */
bool nsview_available(const char **why);

/*
 * nsview_available() without the probe (a fork of this whole process) when
 * none ran yet: true unless a probe said no.  For a caller that finds out by
 * trying and falls back when the namespaces cannot be made (sandbox_run()
 * with proc's ns_failed); *why as above.
 */
bool nsview_likely(const char **why);

/*
 * A cgroup that limits the processes of the commands (pids.max): cgroup v1
 * with a writable pids hierarchy, or cgroup v2 where the pids controller is
 * delegated to this process's cgroup.  One group "forge-PID" per Forge
 * process, made at the first use (groups of Forge processes that are gone
 * are removed then), pids.max set to max, removed at exit (making and
 * removing a cgroup per command costs ~10 ms; commands this process runs
 * at the same time share the limit).  cgroup_pids_new() sets cg->procs_fd to an
 * O_WRONLY|O_CLOEXEC fd and returns 0, or -1 when there is no such cgroup
 * (*why gets a static reason).  With cg->self set (cgroup v1) it is the
 * group's tasks file, and the child moves itself in before it forks or
 * execs: cgroup_pids_join_child(), between clone and exec.  Else (v2) it is
 * the group's cgroup.procs: the parent writes the child's pid to it.  A
 * pid written to cgroup.procs write-locks the kernel's threadgroup rwsem,
 * which waits for an RCU grace period (7-20 ms a command on Linux 6.18, in
 * forge-implement's run_command); the calling thread moving itself ("0")
 * through v1's tasks file does not take that lock (0.05 ms there; a kernel
 * that still takes it waits as before, in the child).  cgroup_pids_free()
 * closes the fd.
 */
struct cgroup_pids {
	int procs_fd;
	bool self;
	char path[600];
};
int cgroup_pids_new(struct cgroup_pids *cg, unsigned long max, const char **why);
void cgroup_pids_free(struct cgroup_pids *cg);
/* Between clone and exec: move the calling process (its one thread) into
 * the group whose tasks file fd is (cg->procs_fd with cg->self); 0, or
 * -errno. */
int cgroup_pids_join_child(int fd);
/* Where pids cgroups can be made ("/sys/fs/cgroup/pids/..."), or NULL with *why. */
const char *cgroup_pids_base(const char **why);

#endif
