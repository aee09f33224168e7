/*
 * proc_child.h - the last steps of a sandboxed command before its exec, and
 * its PID 1.  Internal to lib/os: shared by proc.c, whose child runs them
 * in a copy of the caller, and by forge-sandbox-init, the program PID 1 of
 * a command's namespaces becomes on proc.c's fast path (proc.h).
 *
 * Everything here but cmd_tail_encode() runs in a child between clone and
 * exec: system calls only, nothing allocated, no lock (async-signal-safe),
 * and no write outside its own stack (a child may share the caller's
 * memory).  A failure is reported on the report pipe as a child_rec, which
 * the caller reads until the pipe closes at the command's exec.
 */
#ifndef FORGE_OS_PROC_CHILD_H
#define FORGE_OS_PROC_CHILD_H

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

enum { REC_WARN = 0, REC_FATAL = 1 };
enum { ST_NETNS = 1, ST_LANDLOCK, ST_CHDIR, ST_EXEC, ST_DUP, ST_RLIMIT, ST_CAPS, ST_LOOPBACK,
       ST_REAPER, ST_SECCOMP, ST_SECCOMP_UNIX, ST_SECCOMP_NET, ST_CGROUP, ST_INIT, ST_JOIN,
       ST_NS = 100 /* + an NSV_* stage of nsview.h */ };

/* One report on the report pipe. */
struct child_rec {
	int kind, stage, err;
};

#define CMD_TAIL_LIMITS 5

/* What the command's last steps need; every pointer is borrowed. */
struct cmd_tail {
	int rep_fd;              /* the report pipe: close-on-exec at the command's exec */
	int status_fd;           /* PID 1 writes the command's wait status here, or -1 */
	int go_fd;               /* the caller has put the child in its cgroup: one byte, or -1 */
	int join_fd;             /* the child moves itself into its cgroup: its tasks file, or -1 */
	const char *cwd;         /* NULL: where it is */
	int landlock_fd;         /* a ruleset to enforce, or -1 */
	bool landlock_required;
	bool deny_keys, deny_net, deny_unix;   /* the seccomp filter (proc.h) */
	struct { int res; struct rlimit rl; } rl[CMD_TAIL_LIMITS];
	int nrl;
	const char *direct_path; /* tried first when set (proc.h) */
	char *const *direct_argv;
	char *const *direct_envp; /* NULL: envp */
	char *const *argv;
	char *const *envp;
};

void child_report(int fd, int kind, int stage, int err);
__attribute__((noreturn)) void child_fail(int fd, int stage, int err);

/* /proc/self/oom_score_adj to adj (1..1000); best effort. */
void child_raise_oom_score(int adj);

/* Enter the pids cgroup (join_fd), or wait until the caller has put this
 * process there (go_fd); before anything forks or execs. */
void cmd_tail_wait_go(const struct cmd_tail *t);

void cmd_tail_landlock(const struct cmd_tail *t);
void cmd_tail_seccomp(const struct cmd_tail *t);
/* The resource limits, set last before the exec (proc.c says why). */
void cmd_tail_limits(const struct cmd_tail *t);
/* exec the command: the direct program first when there is one.  Returns
 * only when both failed, with errno of the last. */
void cmd_tail_exec(const struct cmd_tail *t);

/*
 * The command's process in a PID namespace: the forwarded signals back to
 * SIG_DFL, then every signal unblocked; its directory, a session of its
 * own (no controlling terminal), the Landlock domain, no capabilities, the
 * seccomp filter and the limits; then the exec.  Never returns.
 */
__attribute__((noreturn)) void cmd_tail_run(const struct cmd_tail *t);

/* PID 1: pass SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 on to
 * every process of the namespace. */
void init_forward_signals(void);
/* In the command's process: the dispositions init_forward_signals() set
 * back to SIG_DFL. */
void init_default_signals(void);
/*
 * Between fork (or clone) and exec, with every signal blocked: every
 * disposition back to SIG_DFL, so that no handler of the caller's runs in
 * the child (on the caller's memory, os/clonevm.h) and nothing ignored
 * stays ignored across the exec.  Only the signals /proc/self/status says
 * the process ignores or catches are reset (~8 system calls, against ~62
 * for all of them; all of them without /proc), then glibc's own
 * (child_default_reserved_signals()).  Async-signal-safe.
 */
void child_default_signals(void);
/* Between fork and exec: glibc's own signals (32 up to SIGRTMIN:
 * SIGCANCEL, SIGSETXID) back to SIG_DFL, with the system call itself.
 * glibc's sigaction() refuses them, yet a disposition inherited as SIG_IGN
 * would pass on across exec to the command.  Async-signal-safe. */
void child_default_reserved_signals(void);
/* Write wait status st to status_fd (when there is one) and exit with it. */
__attribute__((noreturn)) void child_pass_status(const struct cmd_tail *t, int st);
/* PID 1 once the command runs: reap everything until cmd exits, write its
 * wait status to status_fd, and exit with its status (which ends the rest
 * of the namespace). */
__attribute__((noreturn)) void init_finish(const struct cmd_tail *t, pid_t cmd);

/*
 * forge-sandbox-init's arguments for t: a NULL-terminated vector (argv[0]
 * the program's name), allocated (cmd_tail_encoded_free); its environment
 * is t->envp.  In the caller, before the clone.
 */
char **cmd_tail_encode(const struct cmd_tail *t);
void cmd_tail_encoded_free(char **argv);
/* In forge-sandbox-init: t from its argv and envp (borrowed).  0, or -1
 * when they are not cmd_tail_encode()'s. */
int cmd_tail_decode(struct cmd_tail *t, int argc, char **argv, char **envp);

#endif
