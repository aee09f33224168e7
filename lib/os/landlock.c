/*
 * landlock.c - Landlock rulesets and network namespaces for child processes.
 *
 * Raw system calls through <linux/landlock.h>; the constants of ABIs newer
 * than the installed header are defined here.
 */
#include "os/landlock.h"
#include "core/forge.h"
#include "os/nsview.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif
#define FS_READ (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | \
	LANDLOCK_ACCESS_FS_READ_DIR)
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

/* Rights that change the file system: the ones a ruleset "handles", so
 * that they are denied except beneath a rule. */
#define FS_WRITE_V1 (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | \
	LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR | \
	LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG | \
	LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | \
	LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM)

int landlock_abi(void)
{
	static int cached = -1;

	if (cached < 0) {
		long v = syscall(SYS_landlock_create_ruleset, NULL, 0,
				 LANDLOCK_CREATE_RULESET_VERSION);
		cached = v > 0 ? (int)v : 0;
	}
	return cached;
}

static uint64_t handled_fs(int abi)
{
	uint64_t m = FS_WRITE_V1;

	if (abi >= 2)
		m |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		m |= LANDLOCK_ACCESS_FS_TRUNCATE;
	return m;
}

static uint64_t file_rights(int abi, bool reads)
{
	return LANDLOCK_ACCESS_FS_WRITE_FILE | (abi >= 3 ? LANDLOCK_ACCESS_FS_TRUNCATE : 0) |
	       (reads ? LANDLOCK_ACCESS_FS_READ_FILE : 0);
}

/* The create_ruleset attribute of ABI 6 (the installed header may be older). */
struct ruleset_attr6 {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

/* The rights a rule on a file may have (the others are a directory's). */
#define FILE_RIGHTS (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE | \
		     LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_EXECUTE)

static int add_rule(int rs_fd, int fd, uint64_t rights)
{
	struct landlock_path_beneath_attr pb = { 0 };

	pb.allowed_access = rights;
	pb.parent_fd = fd;
	return (int)syscall(SYS_landlock_add_rule, rs_fd, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
}

/*
 * Add a path-beneath rule; a missing path is skipped (returns 0).  A rule
 * with a directory's rights is tried first without looking at the path:
 * the kernel refuses those rights on anything but a directory (EINVAL),
 * so it is added only where the fstat would have found one (most paths;
 * one system call fewer each, ~30 a command).
 */
static int add_path(int rs_fd, const char *path, uint64_t rights, bool must_be_dir)
{
	struct stat st;
	int fd, rc = 0;

	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return forge_error("landlock: cannot open '%s': %s", path, strerror(errno));
	}
	if ((rights & ~(uint64_t)FILE_RIGHTS) && add_rule(rs_fd, fd, rights) == 0)
		goto out;
	if (fstat(fd, &st) < 0) {
		rc = forge_error("landlock: cannot stat '%s': %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		if (must_be_dir) {
			rc = forge_error("landlock: '%s' is not a directory", path);
			goto out;
		}
		rights &= FILE_RIGHTS;
	}
	if (add_rule(rs_fd, fd, rights) < 0)
		rc = forge_error("landlock: cannot add a rule for '%s': %s", path, strerror(errno));
out:
	close(fd);
	return rc;
}

int landlock_ruleset_new(struct landlock_ruleset **out, const char *const *writable)
{
	struct landlock_spec spec = { .writable = writable };

	return landlock_ruleset_build(out, &spec);
}

int landlock_ruleset_build(struct landlock_ruleset **out, const struct landlock_spec *spec)
{
	/* Not /dev/pts: its terminals are the person's (without the mount
	 * view, the host's /dev), written to and read by name; a pty the
	 * command makes through /dev/ptmx is reached by TIOCGPTPEER. */
	static const char *const devices[] = {
		"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", NULL,
	};
	static const char *const readable_devices[] = { "/dev/random", "/dev/urandom", NULL };
	struct ruleset_attr6 attr = { 0 };
	struct landlock_ruleset *rs;
	int abi = landlock_abi();
	uint64_t rw;

	*out = NULL;
	if (abi < 1)
		return forge_error("landlock: not supported by this kernel");
	rs = xcalloc(1, sizeof(*rs));
	rs->abi = abi;
	rs->reads = spec->reads;
	rw = handled_fs(abi) | (spec->reads ? FS_READ : 0);
	attr.handled_access_fs = rw;
	if (abi >= 6) {
		attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
		rs->scoped = true;
	}
	rs->fd = (int)syscall(SYS_landlock_create_ruleset, &attr,
			      abi >= 6 ? sizeof(attr) : sizeof(attr.handled_access_fs), 0);
	if (rs->fd < 0) {
		int e = errno;
		free(rs);
		return forge_error("landlock: cannot create a ruleset: %s", strerror(e));
	}
	fcntl(rs->fd, F_SETFD, FD_CLOEXEC);
	for (size_t i = 0; spec->writable && spec->writable[i]; i++)
		if (add_path(rs->fd, spec->writable[i], rw, true) < 0)
			goto fail;
	for (size_t i = 0; spec->reads && spec->readable && spec->readable[i]; i++)
		if (add_path(rs->fd, spec->readable[i], FS_READ, false) < 0)
			goto fail;
	for (size_t i = 0; devices[i]; i++)
		if (add_path(rs->fd, devices[i], file_rights(abi, spec->reads), false) < 0)
			goto fail;
	for (size_t i = 0; spec->reads && readable_devices[i]; i++)
		if (add_path(rs->fd, readable_devices[i], LANDLOCK_ACCESS_FS_READ_FILE, false) < 0)
			goto fail;
	*out = rs;
	return 0;
fail:
	landlock_ruleset_free(rs);
	return -1;
}

int landlock_allow_child(int rs_fd, const char *path, bool list_only)
{
	struct landlock_path_beneath_attr pb = { 0 };
	int fd = open(path, O_PATH | O_CLOEXEC | O_DIRECTORY), rc = 0;

	if (fd < 0)
		return -errno;
	pb.allowed_access = list_only ? LANDLOCK_ACCESS_FS_READ_DIR
				      : LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
	pb.parent_fd = fd;
	if (syscall(SYS_landlock_add_rule, rs_fd, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

void landlock_ruleset_free(struct landlock_ruleset *rs)
{
	if (!rs)
		return;
	if (rs->fd >= 0)
		close(rs->fd);
	free(rs);
}

int landlock_enforce_child(int rs_fd)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (syscall(SYS_landlock_restrict_self, rs_fd, 0) < 0)
		return -errno;
	return 0;
}

int netns_enter_child(bool privileged, uid_t uid, gid_t gid)
{
	if (privileged && unshare(CLONE_NEWNET) == 0)
		return 0;
	if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
		return -errno;
	return nsview_maps_child(uid, gid);
}

int netns_loopback_up_child(void)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof ifr);
	memcpy(ifr.ifr_name, "lo", 3);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
		rc = -errno;
	} else if (!(ifr.ifr_flags & IFF_UP)) {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
			rc = -errno;
	}
	close(fd);
	return rc;
}

bool netns_privileged(void)
{
	return geteuid() == 0;
}

/* The probe's child: a network namespace as a sandboxed command gets it. */
static int netns_probe_child(void *priv)
{
	return netns_enter_child(*(bool *)priv, getuid(), getgid());
}

bool netns_available(const char **why)
{
	static int cached = -1;
	static char reason[128];

	if (cached < 0) {
		bool priv = netns_privileged();

		cached = nsview_probe(reason, sizeof reason, "unshare(CLONE_NEWUSER|CLONE_NEWNET)",
				      netns_probe_child, &priv);
	}
	if (why)
		*why = cached ? NULL : reason;
	return cached == 1;
}
