/*
 * proc.h - the one process engine: run a child process to completion with a
 * time limit, resource limits, capped output capture or line streaming, and
 * optional kernel confinement (in the spirit of git's run-command.h).
 *
 * THE CONTRACT
 *
 *	struct proc_opts o = PROC_OPTS_INIT;
 *	struct proc_result r;
 *	const char *argv[] = { "/bin/sh", "-c", "make test", NULL };
 *	o.argv = argv;
 *	o.cwd = worktree;
 *	o.timeout_ms = 120000;
 *	o.out_cap = 65536;
 *	o.merge_stderr = true;
 *	if (proc_run(&r, &o) < 0)
 *		... forge_last_error(): the child could not be started ...
 *	... r.exit_code, r.timed_out, r.out.buf ...
 *	proc_result_release(&r);
 *
 * - proc_run() returns -1 (with a message) only when the child could not be
 *   started: the program does not exist or is not executable, cwd is bad,
 *   fork/pipe failed, or a confinement marked `required` could not be
 *   applied.  A child that ran and failed, was killed or timed out is a 0
 *   return; look at the result.  r is always initialised (also on -1) and
 *   must be released.
 * - argv[0] is executed as given (execve, no PATH search), so pass a path.
 *   envp NULL means the caller's environment; pass a built environment to
 *   keep secrets out (sandbox_build_env()).
 * - stdin is /dev/null unless `input` is set, in which case input[0..input_len)
 *   is written to the child's stdin (without blocking: the output is read
 *   at the same time) and stdin is then closed.
 * - stdout and stderr are read through O_CLOEXEC pipes in a poll() loop, so
 *   no amount of input or output can deadlock the two processes.
 *   With merge_stderr both go to one pipe (order preserved, r.err empty).
 *   Each stream keeps at most out_cap bytes: the first half and the last
 *   half, joined by a line "[… N bytes omitted …]"; r.out_bytes/err_bytes
 *   count everything the child wrote.  out_cap 0 keeps everything.
 *   cut_count, when set, counts lines of stdout's omitted middle.
 * - Streaming (the supervisor running a phase): with on_stdout (on_stderr)
 *   set, that stream is not captured; every complete line is handed to the
 *   callback as soon as it arrives (without its newline, NUL-terminated,
 *   `cut` when it was longer than max_line, which defaults to 16 MiB; the
 *   line is borrowed for the call), and a last line without a newline is
 *   handed over at the end.  on_idle, when set, is called whenever neither
 *   output has data ready (a moment to commit).  Callbacks run in the
 *   calling thread, never in the child.
 * - The child leads its own process group (setpgid), unless keep_pgrp: then
 *   it stays in the caller's group (Ctrl-C on a terminal reaches both), and
 *   only the child itself is signalled on timeout and by proc_kill_running()
 *   (what it started is not tracked).  Otherwise, on timeout the whole
 *   group gets SIGTERM, then SIGKILL after kill_grace_ms; when the child
 *   exits normally, whatever it left running in its group (background jobs)
 *   is killed too, so nothing outlives proc_run().  Processes that leave
 *   the group (setsid) are not tracked, but they lose the pipes -- unless
 *   `contain`: then, where there is no PID namespace, the child is a small
 *   reaper (a child subreaper, os/reaper.h) that runs the command in a
 *   group of its own, passes the caller's signals on to it, and when it
 *   exits kills whatever it left (setsid and double forks included) before
 *   it exits with the command's status.  On timeout it sends SIGKILL
 *   after kill_grace_ms itself; the caller kills the reaper only 3 s later.
 * - Signals: the child starts with every signal at its default disposition
 *   and an empty signal mask.  The parent's SIGPIPE handling is unchanged
 *   (writes to a dead child's stdin are caught, never raise SIGPIPE).
 * - Resource limits (setrlimit in the child, 0 = leave as inherited; never
 *   raised above the inherited hard limit): CPU seconds, address space,
 *   file size, open files, processes of the user.
 * - Confinement, prepared before fork and applied in the child before exec
 *   with async-signal-safe calls only: a Landlock ruleset (landlock.h) and
 *   a new network namespace.  When one cannot be applied in the child and
 *   its `*_required` flag is false, the child runs without it and
 *   r.unconfined says what is missing ("network: unshare: Operation not
 *   permitted"); with the flag set proc_run fails and nothing runs.
 * - Namespaces (new_ns, nsview.h): the child is created with clone() in new
 *   user, PID, mount and IPC namespaces (and network with new_netns).  It is
 *   PID 1 there: it builds the file-system view (`view`: only the listed
 *   paths exist, plus a minimal /dev and a fresh /proc showing only the
 *   command's processes; view NULL keeps the host's files but still mounts a
 *   fresh /proc), then forks the command (which runs with no capabilities)
 *   and waits for it.  When the command exits, PID 1 exits with its status
 *   and the kernel kills everything else in the namespace: nothing the
 *   command started (setsid, double fork) outlives it; PID 1 also dies
 *   (PR_SET_PDEATHSIG) should the calling process be killed.  Signals sent
 *   to the group on timeout reach every process.  When the namespaces cannot be
 *   made (clone or a mount fails) and ns_required is false the command runs
 *   as without them and r.unconfined says why; with ns_required it fails;
 *   with ns_no_fallback proc_run returns -1 with r.ns_failed set and the
 *   reason in r.unconfined, having run nothing (the caller may then prepare
 *   a confinement that does not count on the namespaces and run again).
 * - Processes: with limits.nproc and a writable pids cgroup (cgroup v1 pids
 *   hierarchy, or v2 with the pids controller delegated) the child runs in
 *   a cgroup of its own with pids.max = nproc (this binds root, which
 *   RLIMIT_NPROC does not), removed after the run.  Running as root without
 *   such a cgroup is noted in r.unconfined.
 * - Between fork and exec the child calls only async-signal-safe functions
 *   and raw system calls (setpgid, sigaction, sigprocmask, setrlimit,
 *   unshare, clone, open/write of /proc/self maps and the cgroup, open/read
 *   of /proc/self/status (os/procself.h), prctl,
 *   capset, mkdir, symlink, mount, umount2, pivot_root, landlock syscalls,
 *   dup2, chdir, waitpid, kill, execve, write, _exit); everything it needs
 *   (paths, the view, the ruleset, the cgroup fd) is prepared before fork.
 *   With namespaces the child is made by a raw clone(), so no atfork
 *   handler runs.  Exec and setup failures come back to the parent over an
 *   O_CLOEXEC pipe.
 */
#ifndef FORGE_PROC_H
#define FORGE_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/buf.h"

struct proc_limits {
	unsigned long cpu_s;          /* RLIMIT_CPU */
	unsigned long long as_bytes;  /* RLIMIT_AS (address space) */
	unsigned long long fsize_bytes; /* RLIMIT_FSIZE */
	unsigned long nofile;         /* RLIMIT_NOFILE */
	unsigned long nproc;          /* RLIMIT_NPROC */
	int oom_score_adj;            /* raised to this (1..1000) in the child; 0 = as inherited */
};

struct nsview_bind;

struct proc_opts {
	const char *const *argv;      /* argv[0] is a path; required */
	char *const *envp;            /* NULL = inherit */
	/* Tried first when set: execve(direct_path, direct_argv, direct_envp)
	 * in the confined child; should it fail (any errno), argv runs as
	 * usual.  For a command line the shell would run as one program
	 * (os/sandbox.h): the program is exec'd without the shell in between,
	 * and the shell still reports what it cannot run. */
	const char *direct_path;
	const char *const *direct_argv;
	char *const *direct_envp;     /* NULL = envp */
	const char *cwd;              /* NULL = the caller's */
	const char *input;            /* stdin data; NULL = /dev/null */
	size_t input_len;
	bool merge_stderr;            /* 2>&1 */
	size_t out_cap;               /* bytes kept per stream; 0 = all */
	long timeout_ms;              /* 0 = none */
	long kill_grace_ms;           /* SIGTERM -> SIGKILL; default 2000 */
	struct proc_limits limits;
	int landlock_fd;              /* a landlock ruleset fd, or -1 */
	bool landlock_required;
	bool new_netns;               /* cut the network */
	bool netns_required;
	bool new_ns;                  /* own user, PID, mount and IPC namespaces */
	bool ns_required;
	const struct nsview_bind *view; /* with new_ns: the paths the command sees */
	size_t nview;
	bool landlock_reads;          /* the ruleset confines reads: allow the fresh /proc */
	bool ns_no_fallback;          /* namespaces fail (not required): -1 and r.ns_failed,
					 nothing run, instead of running without them */
	bool keep_pgrp;               /* stay in the caller's process group */
	bool contain;                 /* nothing the command starts outlives it, also
					 without namespaces (a reaper: os/reaper.h) */
	bool deny_keys;               /* os/seccomp.h's filter: no keyring system calls */
	bool deny_net;                /* with deny_keys: sockets of the families a cut network
					 allows only (os/seccomp.h) */
	bool deny_unix;               /* with deny_net: no socket(AF_UNIX) either */
	/* Streaming: a complete line of stdout / stderr (NULL = capture). */
	void (*on_stdout)(void *payload, const char *line, size_t len, int cut);
	void (*on_stderr)(void *payload, const char *line, size_t len, int cut);
	void (*on_idle)(void *payload); /* neither output has data ready */
	/* The child runs (its exec succeeded) and has not been given a byte of
	 * its input yet: work here overlaps its start-up and comes before it
	 * reads anything.  Once per call; not when the child could not start. */
	void (*on_started)(void *payload);
	void *payload;
	size_t max_line;              /* longer lines are cut (and flagged); 0 = 16 MiB */
	/* With out_cap: the lines of stdout's omitted middle that this says
	 * yes to are counted (r.out_cut_counted), so that what they marked is
	 * not lost with them (a failing test point).  It sees each line
	 * without its newline, up to its first 4 KiB; NULL = none. */
	bool (*cut_count)(const char *line, size_t len);
};

#define PROC_OPTS_INIT { .landlock_fd = -1, .kill_grace_ms = 2000 }

struct proc_result {
	int exit_code;       /* exit status, or 128 + signal when killed */
	int term_signal;     /* the signal that ended it, 0 if it exited */
	bool timed_out;      /* killed because the time limit passed */
	struct buf out;      /* captured stdout (and stderr when merged) */
	struct buf err;      /* captured stderr */
	size_t out_bytes;    /* everything written to stdout */
	size_t out_cut_counted; /* lines of out's omitted middle opts.cut_count said yes to */
	size_t err_bytes;
	long duration_ms;
	char unconfined[256]; /* "" or what could not be applied, "; "-joined */
	bool ns_failed;       /* with ns_no_fallback: the namespaces could not be made */
};

/* Run to completion; see the contract above.  0, or -1 with a message. */
int proc_run(struct proc_result *out, const struct proc_opts *opts);
void proc_result_release(struct proc_result *r);

/*
 * Send sig to every child proc_run() is running right now (from any
 * thread): to its process group, or to the child alone with keep_pgrp.  Async-signal-safe: meant for a SIGINT/SIGTERM
 * handler, so an interrupted program leaves no commands behind.
 */
void proc_kill_running(int sig);

/*
 * What a sandboxed command's PID 1 is: the path of forge-sandbox-init
 * (../libexec/forge/ from this program's directory), when proc_run() uses
 * it, or NULL when PID 1 is a copy of this process -- the program is not
 * there (*why says so), its exec failed once, or this build forks its
 * children (ASan).  Static storage.
 */
const char *proc_sandbox_init(const char **why);

/* How many children proc_kill_running() would signal now.  A child is
 * counted from just after it was started: a test waits for it before it
 * signals, as a command may have begun its work a moment before that. */
size_t proc_running_count(void);

/*
 * A process's start identity, which another process given the same pid
 * later (pid reuse after a kill -9, a reboot) does not share:
 * "BOOTID/TICKS", the kernel's boot id (/proc/sys/kernel/random/boot_id,
 * "-" when unreadable) and the process's start time in clock ticks since
 * that boot (field 22 of /proc/PID/stat).
 * proc_start_id: true with out filled; false (no message) when it cannot
 * be read: no such process, no /proc, a /proc that hides it.
 * proc_signal_same: sends sig to pid only while pid is still the process
 * whose identity is `id`; the check and the signal go through one pidfd,
 * so a pid reused between them is not signalled (where pidfds are missing,
 * a check just before kill()).  0 when sent; -1 (no message) when not:
 * errno ESRCH when pid is gone or is another process, else as kill() sets it.
 */
/*
 * Whether process pid has ended and only waits to be reaped (a zombie:
 * state Z or X in /proc/PID/stat): it holds nothing and does nothing
 * more, though kill(pid, 0) and its start identity still answer as for a
 * live one.  Its parent reaps it, or never does: a container whose PID 1
 * reaps no orphans keeps a killed supervisor a zombie.  false when it
 * runs, is gone, or cannot be read.
 */
bool proc_exited(pid_t pid);

#define PROC_START_ID_LEN 72
bool proc_start_id(char out[static PROC_START_ID_LEN], pid_t pid);
int proc_signal_same(pid_t pid, const char *id, int sig);

#endif
