/*
 * landlock.h - kernel confinement for child processes: Landlock (write
 * access limited to a few directory trees) and a private network namespace
 * (no network at all).
 *
 * Both are prepared in the parent and applied in the child between fork()
 * and execve(), where only async-signal-safe calls are allowed: the *_child
 * functions below make raw system calls only, allocate nothing and touch no
 * locks.  They return 0 or a negative errno value instead of setting errno.
 *
 * What a confined child can do: read and execute anything it could before
 * (or, with a landlock_spec that confines reads, only beneath its readable
 * and writable paths); create, write, truncate, rename, link or remove
 * files only beneath the
 * directories given to landlock_ruleset_new() (plus the character devices
 * /dev/null, /dev/zero, /dev/full, /dev/tty and /dev/ptmx -- not /dev/pts,
 * whose terminals are the person's; a pty made through /dev/ptmx is
 * reached by TIOCGPTPEER, as openpty(3) does);
 * everything else fails with EACCES.  Rules survive exec and are inherited by
 * every descendant; no_new_privs is set, so setuid programs lose their power.
 */
#ifndef FORGE_LANDLOCK_H
#define FORGE_LANDLOCK_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * The Landlock ABI version the running kernel offers (1..N), or 0 when it
 * has none (not built in, disabled at boot, or blocked by seccomp).  Cached
 * after the first call.  Sets no message.
 */
int landlock_abi(void);

/* A ruleset ready to be enforced in a child.  Owns one O_CLOEXEC fd. */
struct landlock_ruleset {
	int fd;
	int abi;
	bool reads;     /* reads are confined too */
	bool scoped;    /* ABI >= 6: abstract unix sockets and signals scoped */
};

/*
 * What a ruleset allows.  With reads false only writes are confined (the
 * ruleset of landlock_ruleset_new()).  With reads true, reading, listing
 * and executing are allowed only beneath `readable` and `writable` (and on
 * the devices above plus /dev/random and /dev/urandom); a readable path
 * may be a file.  From ABI 6 the ruleset also scopes abstract unix sockets
 * and signals: the confined process can neither connect to an abstract
 * socket nor signal a process outside its own Landlock domain.
 */
struct landlock_spec {
	const char *const *writable;
	const char *const *readable;
	bool reads;
};

/*
 * Build a ruleset that allows writes only beneath each directory of
 * `writable` (a NULL-terminated list of absolute paths; a path that does
 * not exist is skipped, one that is not a directory is an error) and on the
 * usual harmless devices.  -1 with a message when Landlock is unavailable
 * ("landlock: not supported by this kernel") or a rule cannot be added.
 */
int landlock_ruleset_new(struct landlock_ruleset **out, const char *const *writable);
int landlock_ruleset_build(struct landlock_ruleset **out, const struct landlock_spec *spec);
void landlock_ruleset_free(struct landlock_ruleset *rs);

/*
 * In the child, before landlock_enforce_child(): allow reading (list_only:
 * only listing) beneath the directory path, which may exist only in the
 * child's mount namespace (its fresh /proc).  Async-signal-safe.  0 or -errno.
 */
int landlock_allow_child(int rs_fd, const char *path, bool list_only);

/*
 * In the child: set no_new_privs and enforce rs_fd on the calling process.
 * Async-signal-safe.  Returns 0 or -errno.
 */
int landlock_enforce_child(int rs_fd);

/*
 * True when the calling process can create a network namespace (probed once
 * in a short-lived child, then cached).  *why (may be NULL) gets a static
 * reason when it cannot ("unshare(CLONE_NEWUSER|CLONE_NEWNET): Operation not
 * permitted").
 */
bool netns_available(const char **why);

/*
 * In the child: move the calling process into a new, empty network
 * namespace (only a loopback device, down until netns_loopback_up_child).  A process with CAP_SYS_ADMIN
 * unshares CLONE_NEWNET alone; otherwise it also creates a user namespace
 * and maps uid and gid (the caller's real ids, passed in because
 * getuid() is called before fork) onto themselves, so files and `id` look
 * the same inside.  Async-signal-safe.  Returns 0 or -errno.
 */
int netns_enter_child(bool privileged, uid_t uid, gid_t gid);

/*
 * In the child, in a network namespace of its own: bring its loopback
 * device up, as bubblewrap does, so that a test suite's servers on
 * 127.0.0.1 and ::1 answer the command's own processes; nothing outside the
 * namespace is reachable either way.  Needs CAP_NET_ADMIN in the user
 * namespace that owns the network namespace.  Async-signal-safe.  Returns
 * 0 or -errno.
 */
int netns_loopback_up_child(void);

/* True when the process has CAP_SYS_ADMIN in its user namespace (it may
 * unshare a network namespace without a user namespace). */
bool netns_privileged(void);

#endif
