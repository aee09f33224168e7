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
 * dispositions and an empty mask, leads a process group of its own (what
 * it starts is stopped with it; the terminal's ^C goes to the caller
 * only), and is sent SIGKILL should the caller die (PR_SET_PDEATHSIG; what
 * it started is not: it has no way to know).
 * The three fds are the caller's (O_CLOEXEC; in_fd is non-blocking); an
 * exec failure is reported here, not as an exit status.  Reap the child
 * with proc_spawn_reap() (not waitpid), so proc_spawn_kill_all() forgets it.
 */
#ifndef FORGE_SPAWN_H
#define FORGE_SPAWN_H

#include <stdbool.h>
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

/* Send sig to the child's process group: the child and what it started. */
void proc_spawn_signal(pid_t pid, int sig);

/*
 * Wait up to ms (0: only look) for the child to exit.  Once it has, what
 * it left running in its group gets SIGKILL and the child is reaped: true,
 * *status its wait status (-1 when it was not there to wait for).  False
 * while it runs.
 */
bool proc_spawn_reap(pid_t pid, int *status, long ms);

/*
 * For a signal handler, before the caller exits (async-signal-safe): end
 * every child proc_spawn() started and nobody reaped -- SIGTERM to its
 * group, up to grace_ms for the children to exit, then SIGKILL to the
 * groups, so none outlives the caller, nor what it started.
 */
void proc_spawn_kill_all(long grace_ms);

#endif
