/*
 * rusage-run - run a command and print what it cost, for the benches.
 *
 *   rusage-run [-i IN] [-o OUT] [-C DIR] COMMAND [ARG...]
 *
 * Runs COMMAND (found on PATH) with stdin from IN and stdout to OUT (default:
 * inherited), in DIR, waits for it and prints one line on stderr:
 *
 *   rusage wall_ms=W cpu_ms=C user_ms=U sys_ms=S maxrss_kib=R status=X
 *
 * wall_ms is the monotonic time from fork to the end of wait; cpu_ms the
 * user+sys time of the command and of every descendant it waited for
 * (wait4's rusage, so the processes it ran are counted as well); maxrss_kib
 * the largest resident set among them (the command itself when its children
 * are smaller).  Exits with the command's status (128+N for signal N; 127
 * when it cannot be started, 2 on a usage error).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static double tv_ms(struct timeval tv)
{
	return (double)tv.tv_sec * 1e3 + (double)tv.tv_usec / 1e3;
}

static int usage(void)
{
	fprintf(stderr, "usage: rusage-run [-i IN] [-o OUT] [-C DIR] COMMAND [ARG...]\n");
	return 2;
}

/* Open path onto fd (in the child). */
static void redirect(const char *path, int fd, int flags)
{
	int f = open(path, flags, 0644);

	if (f < 0 || dup2(f, fd) < 0) {
		fprintf(stderr, "rusage-run: %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	close(f);
}

int main(int argc, char **argv)
{
	const char *in = NULL, *out = NULL, *dir = NULL;
	struct rusage ru;
	int opt, status;
	pid_t pid;
	double t0, t1;

	while ((opt = getopt(argc, argv, "+i:o:C:")) != -1) {
		if (opt == 'i')
			in = optarg;
		else if (opt == 'o')
			out = optarg;
		else if (opt == 'C')
			dir = optarg;
		else
			return usage();
	}
	if (optind >= argc)
		return usage();
	t0 = now_ms();
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "rusage-run: fork: %s\n", strerror(errno));
		return 127;
	}
	if (pid == 0) {
		if (in)
			redirect(in, STDIN_FILENO, O_RDONLY);
		if (out)
			redirect(out, STDOUT_FILENO, O_WRONLY | O_CREAT | O_TRUNC);
		if (dir && chdir(dir) < 0) {
			fprintf(stderr, "rusage-run: %s: %s\n", dir, strerror(errno));
			_exit(127);
		}
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "rusage-run: %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "rusage-run: wait: %s\n", strerror(errno));
			return 127;
		}
	}
	t1 = now_ms();
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	fprintf(stderr, "rusage wall_ms=%.3f cpu_ms=%.3f user_ms=%.3f sys_ms=%.3f maxrss_kib=%ld status=%d\n",
		t1 - t0, tv_ms(ru.ru_utime) + tv_ms(ru.ru_stime), tv_ms(ru.ru_utime), tv_ms(ru.ru_stime),
		ru.ru_maxrss, code);
	return code;
}
