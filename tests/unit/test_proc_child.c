/* test_proc_child.c - forge-sandbox-init's arguments (lib/os/proc_child.h):
 * what cmd_tail_encode() writes cmd_tail_decode() reads back whole, NULLs
 * and empty strings kept apart, and anything else refused. */
#include "core/forge.h"
#include "os/proc_child.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

static int count(char **v)
{
	int n = 0;

	while (v[n])
		n++;
	return n;
}

/* cmd_tail_decode() on a copy of the vector enc (it rearranges the one it
 * is given, as forge-sandbox-init's own argv); *copy to free after. */
static int decode(struct cmd_tail *t, char ***copy, char **enc, int argc, char **envp)
{
	int n = count(enc);

	*copy = calloc((size_t)n + 1, sizeof **copy);
	memcpy(*copy, enc, (size_t)n * sizeof **copy);
	return cmd_tail_decode(t, argc, *copy, envp);
}

static void check_vec(char *const *got, char *const *want)
{
	CHECK((got == NULL) == (want == NULL));
	if (!want)
		return;
	for (size_t i = 0;; i++) {
		CHECK((got[i] == NULL) == (want[i] == NULL));
		if (!want[i])
			break;
		CHECK_STR(got[i], want[i]);
	}
}

static void test_round_trip(void)
{
	char *argv[] = { "/bin/sh", "-c", "make test", "", NULL };
	char *direct_argv[] = { "make", "test", NULL };
	char *direct_envp[] = { "A=1", NULL };
	char *envp[] = { "PATH=/usr/bin", "HOME=/h", NULL };
	struct cmd_tail t = { 0 }, back;
	char **enc;

	t.rep_fd = 7;
	t.status_fd = 9;
	t.go_fd = -1;
	t.join_fd = 12;
	t.cwd = "/work/a dir";
	t.landlock_fd = 5;
	t.landlock_required = true;
	t.deny_keys = true;
	t.deny_net = true;
	t.deny_unix = false;
	t.nrl = 2;
	t.rl[0].res = RLIMIT_CPU;
	t.rl[0].rl.rlim_cur = 60;
	t.rl[0].rl.rlim_max = 65;
	t.rl[1].res = RLIMIT_AS;
	t.rl[1].rl.rlim_cur = RLIM_INFINITY;
	t.rl[1].rl.rlim_max = RLIM_INFINITY;
	t.direct_path = "/usr/bin/make";
	t.direct_argv = direct_argv;
	t.direct_envp = direct_envp;
	t.argv = argv;
	t.envp = envp;
	enc = cmd_tail_encode(&t);
	CHECK_STR(enc[0], "forge-sandbox-init");
	char **copy;
	CHECK(decode(&back, &copy, enc, count(enc), envp) == 0);
	CHECK_INT(back.rep_fd, 7);
	CHECK_INT(back.status_fd, 9);
	CHECK_INT(back.go_fd, -1);
	CHECK_INT(back.join_fd, 12);
	CHECK_STR(back.cwd, "/work/a dir");
	CHECK_INT(back.landlock_fd, 5);
	CHECK(back.landlock_required && back.deny_keys && back.deny_net && !back.deny_unix);
	CHECK_INT(back.nrl, 2);
	CHECK(back.rl[0].res == RLIMIT_CPU && back.rl[0].rl.rlim_cur == 60 && back.rl[0].rl.rlim_max == 65);
	CHECK(back.rl[1].res == RLIMIT_AS && back.rl[1].rl.rlim_cur == RLIM_INFINITY &&
	      back.rl[1].rl.rlim_max == RLIM_INFINITY);
	CHECK_STR(back.direct_path, "/usr/bin/make");
	check_vec(back.direct_argv, direct_argv);
	check_vec(back.direct_envp, direct_envp);
	check_vec(back.argv, argv);
	CHECK(back.envp == envp);
	free(copy);
	cmd_tail_encoded_free(enc);
}

/* NULL (no cwd, no direct program, no direct environment) is not "". */
static void test_nulls(void)
{
	char *argv[] = { "/bin/true", NULL };
	char *empty[] = { NULL };
	struct cmd_tail t = { 0 }, back;
	char **enc, **copy;

	t.status_fd = -1;
	t.go_fd = t.join_fd = t.landlock_fd = -1;
	t.direct_argv = empty;
	t.argv = argv;
	enc = cmd_tail_encode(&t);
	CHECK(decode(&back, &copy, enc, count(enc), NULL) == 0);
	CHECK(back.cwd == NULL);
	CHECK(back.direct_path == NULL);
	CHECK(back.direct_argv != NULL && back.direct_argv[0] == NULL);
	CHECK(back.direct_envp == NULL);
	check_vec(back.argv, argv);
	CHECK_INT(back.nrl, 0);
	free(copy);
	cmd_tail_encoded_free(enc);

	t.cwd = "";
	enc = cmd_tail_encode(&t);
	CHECK(decode(&back, &copy, enc, count(enc), NULL) == 0);
	CHECK(back.cwd != NULL && back.cwd[0] == '\0');
	free(copy);
	cmd_tail_encoded_free(enc);
}

/* What cmd_tail_encode() did not write is refused, whole. */
static bool refused(const struct cmd_tail *t, int cut, int at, char *with)
{
	struct cmd_tail back;
	char **enc = cmd_tail_encode(t), **copy;
	int n = count(enc), argc = n + cut, rc;

	copy = calloc((size_t)n + 2, sizeof *copy);
	memcpy(copy, enc, (size_t)n * sizeof *copy);
	if (cut > 0)
		copy[n] = "extra";
	if (at > 0)
		copy[at] = with;
	rc = cmd_tail_decode(&back, argc, copy, NULL);
	free(copy);
	cmd_tail_encoded_free(enc);
	return rc < 0;
}

static void test_refused(void)
{
	char *argv[] = { "/bin/true", NULL };
	struct cmd_tail t = { 0 };

	t.status_fd = t.go_fd = t.join_fd = t.landlock_fd = -1;
	t.argv = argv;
	CHECK(!refused(&t, 0, 0, NULL));        /* as written */
	CHECK(refused(&t, -1, 0, NULL));        /* cut short */
	CHECK(refused(&t, 1, 0, NULL));         /* one more */
	CHECK(refused(&t, 0, 1, "0"));          /* another format */
	CHECK(refused(&t, 0, 2, "7x"));         /* not a number */
	CHECK(refused(&t, 0, 2, "-3"));         /* out of range */
	CHECK(refused(&t, 0, 11, "5"));         /* limits: more than there are */
	CHECK(refused(&t, 0, 12, "x/dir"));     /* neither NULL nor a string */
	CHECK(refused(&t, 1 - count(argv) - 2, 0, NULL)); /* no command */
}

int main(void)
{
	RUN(test_round_trip);
	RUN(test_nulls);
	RUN(test_refused);
	return unit_done();
}
