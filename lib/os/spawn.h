/*
 * spawn.h - start a long-lived child with pipes to its stdin, stdout and
 * stderr (a server that speaks over stdio; proc.h runs commands to
 * completion instead).
 *
 *	struct spawn_opts o = { .argv = argv, .envp = env, .cwd = dir };
 *	struct spawned s;
 *	if (proc_spawn(&s, &o) < 0)
 *		... forge_last_error(): not found, not executable, bad cwd ...
 *	... write(s.in_fd), read(s.out_fd), read(s.err_fd), waitpid(s.pid) ...
 *
 * argv[0] without a '/' is looked up in this process's PATH (not envp's).
 * The child gets envp (NULL = an empty environment), cwd, default signal
 * dispositions and an empty mask, stays in the caller's process group, and
 * is sent SIGTERM should the caller die (PR_SET_PDEATHSIG).  The three fds
 * are the caller's (O_CLOEXEC; in_fd is non-blocking); an exec failure is
 * reported here, not as an exit status.
 */
#ifndef FORGE_SPAWN_H
#define FORGE_SPAWN_H

#include <sys/types.h>

struct spawn_opts {
	const char *const *argv;       /* required */
	char *const *envp;
	const char *cwd;               /* NULL = the caller's */
};

struct spawned {
	pid_t pid;
	int in_fd, out_fd, err_fd;
};

/* 0 with *out filled, or -1 with a message (*out's fds are -1). */
int proc_spawn(struct spawned *out, const struct spawn_opts *opts);

#endif
