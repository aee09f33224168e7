/*
 * reaper.c - adopt a command's orphans and end them with it.  See reaper.h.
 */
#include "os/reaper.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Children killed per round; more wait for the next round. */
#define REAPER_BATCH 512

int reaper_become(void)
{
	return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0 ? -errno : 0;
}

/* Append the decimal numbers of text[0..n) to pids (at most max in all). */
static int parse_pids(const char *text, size_t n, pid_t *pids, int count, int max)
{
	long v = -1;

	for (size_t i = 0; i <= n && count < max; i++) {
		if (i < n && text[i] >= '0' && text[i] <= '9') {
			v = (v < 0 ? 0 : v * 10) + (text[i] - '0');
			if (v > INT32_MAX)
				v = -1;
			continue;
		}
		if (v > 0)
			pids[count++] = (pid_t)v;
		v = -1;
	}
	return count;
}

/* This thread's children, as the kernel lists them; -errno when it does not. */
static int children_listed(pid_t *pids, int max)
{
	char text[8192];
	size_t len = 0;
	ssize_t n;
	int fd = open("/proc/thread-self/children", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (len < sizeof(text) && (n = read(fd, text + len, sizeof(text) - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
		len += (size_t)n;
	}
	close(fd);
	/* a number cut at the end of a full buffer is left for the next round */
	if (len == sizeof(text))
		while (len > 0 && text[len - 1] != ' ')
			len--;
	return parse_pids(text, len, pids, 0, max);
}

/* The parent pid in the text of /proc/PID/stat ("pid (comm) S ppid ..."). */
static long stat_ppid(const char *text, size_t n)
{
	size_t i = n;
	long v = 0;

	while (i > 0 && text[i - 1] != ')')	/* comm may hold ')' and spaces */
		i--;
	if (i == 0 || i + 3 >= n)
		return -1;
	for (i += 3; i < n && text[i] == ' '; i++)
		;
	for (; i < n && text[i] >= '0' && text[i] <= '9'; i++)
		v = v * 10 + (text[i] - '0');
	return v;
}

struct dirent64_raw {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* The children found by their parent pid in every /proc/PID/stat. */
static int children_scanned(pid_t *pids, int max)
{
	char dents[8192], path[64], text[512];
	long self = (long)getpid();
	int count = 0, dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long n;

	if (dfd < 0)
		return -errno;
	while (count < max && (n = syscall(SYS_getdents64, dfd, dents, sizeof(dents))) > 0) {
		for (long off = 0; off < n && count < max; ) {
			const struct dirent64_raw *d = (const struct dirent64_raw *)(dents + off);
			size_t len = strlen(d->d_name);
			ssize_t got;
			int fd;

			off += d->d_reclen;
			if (d->d_name[0] < '1' || d->d_name[0] > '9' || len + 6 > sizeof(path))
				continue;
			memcpy(path, d->d_name, len);
			memcpy(path + len, "/stat", 6);
			if ((fd = openat(dfd, path, O_RDONLY | O_CLOEXEC)) < 0)
				continue;	/* gone meanwhile */
			got = read(fd, text, sizeof(text));
			close(fd);
			if (got > 0 && stat_ppid(text, (size_t)got) == self)
				count = parse_pids(d->d_name, len, pids, count, max);
		}
	}
	close(dfd);
	return count;
}

static int children(pid_t *pids, int max)
{
	int n = children_listed(pids, max);

	return n < 0 ? children_scanned(pids, max) : n;
}

int reaper_wait_for(pid_t cmd)
{
	for (;;) {
		int st = 0;
		pid_t w = waitpid(-1, &st, 0);

		if (w == cmd)
			return st;
		if (w < 0 && errno != EINTR)
			return 0;
	}
}

int reaper_end_children(void)
{
	pid_t kids[REAPER_BATCH];
	int killed = 0, n;

	while ((n = children(kids, REAPER_BATCH)) > 0) {
		int ended = 0;

		for (int i = 0; i < n; i++)
			if (kill(kids[i], SIGKILL) < 0 && errno != ESRCH)
				kids[i] = 0;	/* not ours to end (it changed its uid) */
		/* each death hands its own orphans to us: the next round's */
		for (int i = 0; i < n; i++) {
			if (kids[i] <= 0)
				continue;
			while (waitpid(kids[i], NULL, 0) < 0 && errno == EINTR)
				;
			ended++;
		}
		killed += ended;
		if (!ended)
			break;	/* only children it may not signal are left */
	}
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	return n < 0 ? n : killed;
}
