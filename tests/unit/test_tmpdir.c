/* test_tmpdir.c - temporary directories removed on every exit path
 * (lib/core/tmpdir.h): made under $TMPDIR, removed with what they hold, also
 * by the signal-safe sweep and at exit. */
#include "core/forge.h"
#include "core/tmpdir.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char base[256];

static int entries(void)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", base);
	return system(cmd) == 0 ? 0 : 1;
}

/* A tree with a deep path, a read-only directory and a symlink out. */
static void fill(const char *dir)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd,
		 "cd '%s' && mkdir -p a/b/c/d/e/f/g/h && touch a/b/c/d/e/f/g/h/x a/y && "
		 "for i in $(seq 300); do touch a/many-$i; done && mkdir ro && touch ro/z && chmod 500 ro && "
		 "ln -s / escape",
		 dir);
	CHECK(system(cmd) == 0);
}

static void test_make_and_remove(void)
{
	char *d = NULL, *e = NULL;
	struct stat st;

	CHECK_MSG(tmpdir_make(&d, "forge-t") == 0, "%s", forge_last_error());
	CHECK(strncmp(d, base, strlen(base)) == 0);
	CHECK(strstr(d, "/forge-t-") != NULL);
	CHECK(stat(d, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
	fill(d);
	CHECK(tmpdir_make(&e, "forge-t") == 0);
	tmpdir_remove(d);
	tmpdir_remove(e);
	tmpdir_remove(NULL);
	CHECK(entries() == 0);
}

/* levels directories "d" one in the other below dir, a file "f" in each;
 * a link "out" to target at the bottom. */
static void deep_tree(const char *dir, int levels, const char *target)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), nfd;

	for (int i = 0; i < levels && fd >= 0; i++) {
		CHECK(mkdirat(fd, "d", 0700) == 0);
		nfd = openat(fd, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (nfd >= 0)
			close(nfd);
		nfd = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = nfd;
	}
	CHECK(fd >= 0);
	if (fd >= 0 && target)
		CHECK(symlinkat(target, fd, "out") == 0 && symlinkat("../../..", fd, "up") == 0);
	if (fd >= 0)
		close(fd);
}

/* A tree of any depth goes, a link out of it is not followed (before:
 * past 32 levels the rest, and the temp dir, were left behind). */
static void test_remove_deep(void)
{
	char *d = NULL, keep[300], canary[340];
	struct stat st;
	int fd;

	snprintf(keep, sizeof keep, "%s-keep", base);
	snprintf(canary, sizeof canary, "%s/canary", keep);
	CHECK(mkdir(keep, 0700) == 0);
	fd = open(canary, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	CHECK(tmpdir_make(&d, "forge-t") == 0);
	deep_tree(d, 3000, keep);
	tmpdir_remove(d);
	CHECK_MSG(entries() == 0, "%s", "a deep tree was left");
	CHECK(stat(canary, &st) == 0);
	CHECK(unlink(canary) == 0 && rmdir(keep) == 0);
	/* and by the signal-safe path too */
	CHECK(tmpdir_make(&d, "forge-t") == 0);
	deep_tree(d, 100, NULL);
	tmpdir_remove_all_signal_safe();
	CHECK(entries() == 0);
	free(d);
}

static void test_signal_sweep(void)
{
	char *d = NULL, *e = NULL;

	CHECK(tmpdir_make(&d, "forge-t") == 0);
	CHECK(tmpdir_make(&e, "forge-u") == 0);
	fill(d);
	tmpdir_remove_all_signal_safe();
	CHECK(entries() == 0);
	free(d);
	free(e);
}

static void test_at_exit(void)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		char *d = NULL;
		if (tmpdir_make(&d, "forge-exit") == 0)
			fill(d);
		exit(0);	/* without removing it */
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
	CHECK(entries() == 0);
}

static void test_full(void)
{
	char *d[TMPDIR_MAX + 1] = { 0 };
	int made = 0;

	for (int i = 0; i <= TMPDIR_MAX; i++)
		made += tmpdir_make(&d[i], "forge-many") == 0;
	CHECK_INT(made, TMPDIR_MAX);
	CHECK(strstr(forge_last_error(), "more than") != NULL);
	for (int i = 0; i <= TMPDIR_MAX; i++)
		tmpdir_remove(d[i]);
	CHECK(entries() == 0);
}

static void collect(const char *path, int err, void *payload)
{
	char *list = payload;
	const char *name = strrchr(path, '/') + 1;

	if (err != TMPDIR_FOUND) {
		CHECK_INT(err, 0);
		return;
	}
	CHECK(strncmp(path, base, strlen(base)) == 0);
	strncat(list, name, 255 - strlen(list));
	strncat(list, " ", 255 - strlen(list));
}

/* path's modification time set to an hour ago. */
static void age(const char *path)
{
	struct timespec t[2] = { { time(NULL) - 3600, 0 }, { time(NULL) - 3600, 0 } };

	CHECK(utimensat(AT_FDCWD, path, t, 0) == 0);
}

static void test_sweep(void)
{
	char *live = NULL, path[512], found[256] = "";
	pid_t pid;
	int status;

	/* a live directory (held by this process), aged */
	CHECK(tmpdir_make(&live, "forge-cmd") == 0);
	age(live);
	/* a killed process's: made and held by a child that dies by SIGKILL */
	int pipefd[2];
	CHECK(pipe(pipefd) == 0);
	pid = fork();
	if (pid == 0) {
		char *d = NULL;
		if (tmpdir_make(&d, "forge-implement") == 0) {
			fill(d);
			(void)!write(pipefd[1], d, strlen(d) + 1);
		}
		pause();
		_exit(0);
	}
	char dead[512] = "";
	CHECK(read(pipefd[0], dead, sizeof dead - 1) > 0);
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status));
	close(pipefd[0]);
	close(pipefd[1]);
	/* a dead one that is young: its maker may not have locked it yet */
	snprintf(path, sizeof path, "%s/forge-test-young1", base);
	CHECK(mkdir(path, 0700) == 0);
	/* names that are not Forge's, aged: a user's, not touched */
	snprintf(path, sizeof path, "%s/forge-mine-abcdef", base);
	CHECK(mkdir(path, 0700) == 0);
	age(path);
	snprintf(path, sizeof path, "%s/forge-cmd-toolong1", base);
	CHECK(mkdir(path, 0700) == 0);
	age(path);
	/* (the dead one's tree changed when it was filled: aged after) */
	age(dead);

	/* a dry run names it and removes nothing */
	CHECK_INT(tmpdir_sweep(true, collect, found), 1);
	char expect[256];
	snprintf(expect, sizeof expect, "%s ", strrchr(dead, '/') + 1);
	CHECK_STR(found, expect);
	CHECK(access(dead, F_OK) == 0);
	found[0] = '\0';
	CHECK_INT(tmpdir_sweep(false, collect, found), 1);
	CHECK(access(dead, F_OK) != 0);
	CHECK(access(live, F_OK) == 0);
	snprintf(path, sizeof path, "%s/forge-test-young1", base);
	CHECK(access(path, F_OK) == 0 && rmdir(path) == 0);
	snprintf(path, sizeof path, "%s/forge-mine-abcdef", base);
	CHECK(access(path, F_OK) == 0 && rmdir(path) == 0);
	snprintf(path, sizeof path, "%s/forge-cmd-toolong1", base);
	CHECK(access(path, F_OK) == 0 && rmdir(path) == 0);
	CHECK_INT(tmpdir_sweep(false, NULL, NULL), 0);
	tmpdir_remove(live);
	CHECK(entries() == 0);
}

/* In a child as an unprivileged user when this is root (root ignores the
 * modes: the test would pass without what it checks): fn's result. */
static int as_user(int (*fn)(void))
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		if (geteuid() == 0 && (chown(base, 65534, 65534) < 0 || setgroups(0, NULL) < 0 ||
				       setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0))
			_exit(3);
		_exit(fn());
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	if (getuid() == 0 && chown(base, 0, 0) < 0)
		return -2;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -3;
}

static int remove_chmodded(void)
{
	char *d = NULL, cmd[1024];

	if (tmpdir_make(&d, "forge-implement") < 0)
		return 4;
	/* what a command did to its HOME: a chmod 500 directory holding a
	 * file, in a chmod 000 one, deep down; and the temp dir itself 000 */
	snprintf(cmd, sizeof cmd,
		 "cd '%s' && mkdir -p a/b && touch a/b/f && chmod 500 a/b && chmod 000 a && "
		 "mkdir -p x/y/z && touch x/y/z/f && chmod 400 x/y/z && chmod 100 x/y && chmod 000 '%s'",
		 d, d);
	if (system(cmd) != 0)
		return 5;
	tmpdir_remove(d);
	return entries() == 0 ? 0 : 1;
}

/* Directories a command made unreadable go with the temp dir (before,
 * as a user, the temp dir stayed). */
static void test_remove_chmod(void)
{
	CHECK_INT(as_user(remove_chmodded), 0);
}

static void collect_err(const char *path, int err, void *payload)
{
	(void)path;
	if (err != TMPDIR_FOUND)
		*(int *)payload = err;
}

static int sweep_stuck(void)
{
	int err = -1;

	/* (the tree below is another user's: it cannot go) */
	if (tmpdir_sweep(false, collect_err, &err) != 1)
		return 1;
	return err == ENOTEMPTY ? 0 : 2;
}

/* What the sweep cannot remove is said so, with the reason (before, gc
 * printed "removed" for a directory still there). */
static void test_sweep_stuck(void)
{
	char path[512];

	if (getuid() != 0)
		return;	/* (making a directory another user's takes root) */
	snprintf(path, sizeof path, "%s/forge-cmd-stuck1", base);
	CHECK(mkdir(path, 0700) == 0);
	snprintf(path, sizeof path, "%s/forge-cmd-stuck1/roots", base);
	CHECK(mkdir(path, 0755) == 0);
	snprintf(path, sizeof path, "%s/forge-cmd-stuck1/roots/f", base);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof path, "%s/forge-cmd-stuck1", base);
	CHECK(chown(path, 65534, 65534) == 0);
	age(path);
	CHECK_INT(as_user(sweep_stuck), 0);
	CHECK(access(path, F_OK) == 0);
	CHECK(system("rm -rf \"$TMPDIR\"/forge-cmd-stuck1") == 0);
	CHECK(entries() == 0);
}

int main(void)
{
	char t[] = "/tmp/forge-tmpdir-test-XXXXXX";

	snprintf(base, sizeof base, "%s", mkdtemp(t));
	setenv("TMPDIR", base, 1);
	RUN(test_make_and_remove);
	RUN(test_remove_deep);
	RUN(test_signal_sweep);
	RUN(test_at_exit);
	RUN(test_full);
	RUN(test_sweep);
	RUN(test_remove_chmod);
	RUN(test_sweep_stuck);
	rmdir(base);
	return unit_done();
}
