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
 * it started is not: it has no way to know -- unless `contain`).
 * The three fds are the caller's (O_CLOEXEC; in_fd is non-blocking); an
 * exec failure is reported here, not as an exit status.  Reap the child
 * with proc_spawn_reap() (not waitpid), so proc_spawn_kill_all() forgets it.
 *
 * CONTAIN.  A server run as `npx ...`, `uvx ...` or `sh -c 'node s.js'`
 * is a launcher whose children do the work; PR_SET_PDEATHSIG reaches only
 * the launcher, so a caller killed by SIGKILL left them running for good.
 * With `contain` the pid returned is a small init, a copy of the caller
 * that closes every fd but the child's and never execs, which runs the
 * command as its child, reaps what is left to it, and exits with the
 * command's status once the command has exited (proc_spawn_reap() gives the
 * command's own wait status, passed over a pipe).  What the command started
 * then ends too, also what left its process group (setsid, a double fork):
 * - PID namespace (s->pidns): the init is PID 1 of a new PID namespace --
 *   root makes one directly, a user in a new user namespace too (its uid
 *   and gid mapped onto themselves).  When the init dies, by exiting, by
 *   SIGKILL from the caller, or by PR_SET_PDEATHSIG SIGKILL when the
 *   caller dies, the kernel kills every process of the namespace.  The
 *   command sees the host's files and /proc; its own pid is a small number
 *   (getpid() inside is not the host's pid); a user's command sees other
 *   users' files as owned by nobody, its supplementary groups as nogroup,
 *   and no set-user-id program gains privileges (sudo does not work).
 * - Without one (namespaces refused: a container without CAP_SYS_ADMIN,
 *   Ubuntu's AppArmor for users, a user namespace limit): the init is a
 *   child subreaper (os/reaper.h) with PR_SET_PDEATHSIG SIGTERM: what the
 *   command detaches becomes its child, and it kills all of it when the
 *   command exits and when the caller dies.  Should the init itself be
 *   killed by SIGKILL (the caller's SIGKILL of the group after a grace,
 *   for a command that ignores SIGTERM; another process; the OOM killer),
 *   what left the group outlives it.
 * Signals to the group reach the command and what stayed in its group;
 * the init ignores them (and ^C never reaches it: its group is its own).
 * A contained child costs a fork of the caller (its pages become
 * copy-on-write), which an uncontained one does not (os/clonevm.h).
 */
#ifndef FORGE_SPAWN_H
#define FORGE_SPAWN_H

#include <stdbool.h>
#include <sys/types.h>

struct spawn_opts {
	const char *const *argv;       /* required */
	char *const *envp;
	const char *cwd;               /* NULL = the caller's */
	bool contain;                  /* nothing it starts outlives it: CONTAIN above */
};

struct spawned {
	pid_t pid;                     /* with contain: the init's */
	int in_fd, out_fd, err_fd;
	bool pidns;                    /* contained by a PID namespace (else by a reaper) */
};

/* 0 with *out filled, or -1 with a message (*out's fds are -1). */
int proc_spawn(struct spawned *out, const struct spawn_opts *opts);

/* Send sig to the child's process group: the child and what it started. */
void proc_spawn_signal(pid_t pid, int sig);

/*
 * Wait up to ms (0: only look) for the child to exit.  Once it has, what
 * it left running in its group gets SIGKILL and the child is reaped: true,
 * *status its wait status (with contain, the command's, or the init's when
 * the init was killed before it could say; -1 when it was not there to
 * wait for).  False while it runs.
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
