/* test_tmpdir.c - temporary directories removed on every exit path
 * (lib/core/tmpdir.h): made under $TMPDIR, removed with what they hold, also
 * by the signal-safe sweep and at exit. */
#include "core/forge.h"
#include "core/tmpdir.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

int main(void)
{
	char t[] = "/tmp/forge-tmpdir-test-XXXXXX";

	snprintf(base, sizeof base, "%s", mkdtemp(t));
	setenv("TMPDIR", base, 1);
	RUN(test_make_and_remove);
	RUN(test_signal_sweep);
	RUN(test_at_exit);
	RUN(test_full);
	rmdir(base);
	return unit_done();
}
