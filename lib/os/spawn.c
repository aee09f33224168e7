/* spawn.c - a long-lived child with pipes to its stdio; see spawn.h. */
#include "os/spawn.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/ids.h"
#include "os/clonevm.h"
#include "os/nsview.h"
#include "os/proc_child.h"
#include "os/reaper.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* ---- the children started and not reaped yet, for proc_spawn_kill_all() ---- */

#define MAX_SPAWNED 64
/* pid is what proc_spawn_kill_all() reads (a signal handler); status_fd,
 * with contain, the read end of the pipe the init passes the command's
 * wait status over (-1 when none) */
static struct {
	pid_t pid;
	int status_fd;
} spawned[MAX_SPAWNED];

/* Remember pid (its status pipe comes later: spawned_set_status()). */
static void spawned_add(pid_t pid)
{
	for (size_t i = 0; i < MAX_SPAWNED; i++) {
		pid_t zero = 0;
		if (__atomic_compare_exchange_n(&spawned[i].pid, &zero, pid, false, __ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST)) {
			spawned[i].status_fd = -1;
			return;
		}
	}
}

/* With contain: the status pipe of pid, once it runs; false when pid is
 * not in the table (full). */
static bool spawned_set_status(pid_t pid, int status_fd)
{
	for (size_t i = 0; i < MAX_SPAWNED; i++)
		if (__atomic_load_n(&spawned[i].pid, __ATOMIC_SEQ_CST) == pid) {
			spawned[i].status_fd = status_fd;
			return true;
		}
	return false;
}

/* Forget pid: its status pipe's fd (the caller's to close), or -1. */
static int spawned_del(pid_t pid)
{
	for (size_t i = 0; i < MAX_SPAWNED; i++) {
		if (__atomic_load_n(&spawned[i].pid, __ATOMIC_SEQ_CST) != pid)
			continue;
		int fd = spawned[i].status_fd;
		spawned[i].status_fd = -1;
		__atomic_store_n(&spawned[i].pid, 0, __ATOMIC_SEQ_CST);
		return fd;
	}
	return -1;
}

/* The child's group, or the child alone before it has one. */
static void signal_group(pid_t pid, int sig)
{
	if (kill(-pid, sig) < 0 && errno == ESRCH)
		kill(pid, sig);
}

enum state { RUNNING, EXITED, GONE };

/* Whether pid has exited: EXITED, a zombie (so its group id is still its
 * own); GONE when it is not there to wait for (reaped by someone else).
 * Async-signal-safe. */
static enum state state_of(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof si);
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return errno == EINTR ? RUNNING : GONE;
	return si.si_pid == pid ? EXITED : RUNNING;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

void proc_spawn_signal(pid_t pid, int sig)
{
	if (pid > 0)
		signal_group(pid, sig);
}

/* The command's wait status its init wrote to fd before it exited, else
 * st (the init was killed first); closes fd. */
static int command_status(int fd, int st)
{
	int cmd;
	ssize_t n;

	if (fd < 0)
		return st;
	while ((n = read(fd, &cmd, sizeof cmd)) < 0 && errno == EINTR)
		;
	close(fd);
	return n == (ssize_t)sizeof cmd ? cmd : st;
}

bool proc_spawn_reap(pid_t pid, int *status, long ms)
{
	long long end = monotonic_ms() + ms;
	int st, fd;

	enum state now;

	*status = -1;
	while ((now = state_of(pid)) == RUNNING) {
		if (monotonic_ms() >= end)
			return false;
		sleep_ms(10);
	}
	fd = spawned_del(pid);
	if (now == GONE) {
		if (fd >= 0)
			close(fd);
		return true;    /* (its group id may be another's by now: no kill) */
	}
	/* what it left running in its group (a launcher's child, a job it
	 * started) ends with it: nobody else would stop it */
	kill(-pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			if (fd >= 0)
				close(fd);
			return true;
		}
	}
	*status = command_status(fd, st);
	return true;
}

void proc_spawn_kill_all(long grace_ms)
{
	int saved = errno;
	bool running = false;

	for (size_t i = 0; i < MAX_SPAWNED; i++) {
		pid_t p = __atomic_load_n(&spawned[i].pid, __ATOMIC_SEQ_CST);
		if (p > 0) {
			signal_group(p, SIGTERM);
			running = true;
		}
	}
	for (long waited = 0; running && waited < grace_ms; waited += 10) {
		running = false;
		for (size_t i = 0; i < MAX_SPAWNED && !running; i++) {
			pid_t p = __atomic_load_n(&spawned[i].pid, __ATOMIC_SEQ_CST);
			running = p > 0 && state_of(p) == RUNNING;
		}
		if (running)
			sleep_ms(10);
	}
	for (size_t i = 0; i < MAX_SPAWNED; i++) {
		pid_t p = __atomic_load_n(&spawned[i].pid, __ATOMIC_SEQ_CST);
		if (p > 0)
			signal_group(p, SIGKILL);
	}
	errno = saved;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* prog, or its path found in this process's PATH (malloc'd), or NULL. */
static char *resolve(const char *prog)
{
	const char *path = getenv("PATH");

	if (strchr(prog, '/'))
		return xstrdup(prog);
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");
		struct buf b = BUF_INIT;
		buf_addf(&b, "%.*s/%s", (int)n, n ? p : ".", prog);
		if (access(b.buf, X_OK) == 0)
			return buf_detach(&b, NULL);
		buf_release(&b);
		p += n;
		if (*p == ':')
			p++;
	}
	return NULL;
}

/* How the child is started: PLAIN (no contain); with contain, its init
 * is PID 1 of a new PID namespace (NS as root, NS_USER in a new user
 * namespace too) or, where none can be made, a child subreaper (REAPER). */
enum mode { PLAIN, NS, NS_USER, REAPER };

/* What the child reports over the exec pipe before it execs. */
enum { REP_EXEC, REP_NS };    /* exec, dup2 or chdir failed; the id maps refused */
struct report {
	int stage;
	int err;
};

/* What the child needs, made before it starts. */
struct child_plan {
	const char *prog;
	const struct spawn_opts *o;
	pid_t parent;
	int in, out, err, ex;
	int status;                    /* contain: the status pipe's write end */
	enum mode mode;
	uid_t uid;                     /* NS_USER: mapped onto themselves */
	gid_t gid;
};

static void report(int fd, int stage, int err)
{
	struct report r = { stage, err };

	if (write(fd, &r, sizeof r) < 0) {
		/* nothing more to say */
	}
}

/* Unblock every signal and exec the command; on failure report to ex. */
static __attribute__((noreturn)) void exec_command(const struct child_plan *c, int ex)
{
	static char *const empty_env[] = { NULL };
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(c->prog, (char *const *)c->o->argv, c->o->envp ? c->o->envp : empty_env);
	report(ex, REP_EXEC, errno);
	_exit(127);
}

/*
 * In the child, started with every signal blocked (by clone_shared(), or
 * by fork() when it cannot): system calls only, and every disposition is
 * SIG_DFL before a signal is unblocked (os/clonevm.h).  Never returns.
 */
static int child(void *arg)
{
	const struct child_plan *c = arg;
	const struct spawn_opts *o = c->o;

	child_default_signals();
	/* SIGKILL, not SIGTERM: a caller killed by SIGKILL stops nothing, so
	 * this is all that ends a server that ignores SIGTERM (getppid: the
	 * caller may have died before the prctl) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != c->parent)
		_exit(127);
	/* a group of its own: stopping it stops what it starts, and the
	 * terminal's ^C reaches the caller, who stops it in order */
	setpgid(0, 0);
	if (dup2(c->in, 0) < 0 || dup2(c->out, 1) < 0 || dup2(c->err, 2) < 0 || (o->cwd && chdir(o->cwd) < 0))
		report(c->ex, REP_EXEC, errno);
	else
		exec_command(c, c->ex);
	_exit(127);
}

/* ---- the init of a contained child ---- */

/* The init's own copies (it is a fork: its writes stay its own). */
static pid_t init_parent;
static enum mode init_mode;

/*
 * The caller's SIGTERM or ^C reaches the command through its group; the
 * init waits for the command.  Without a namespace the caller's death
 * comes as SIGTERM (PR_SET_PDEATHSIG): then the init ends the command and
 * all it started, and leaves.  Async-signal-safe.
 */
static void init_on_signal(int sig)
{
	(void)sig;
	if (init_mode == REAPER && getppid() != init_parent) {
		reaper_end_children();
		_exit(128 + SIGKILL);
	}
}

/* Whether someone still reads the pipe whose write end is fd (the caller,
 * alive: in a PID namespace getppid() says 0 whoever the parent is). */
static bool read_end_open(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	return poll(&p, 1, 0) < 0 || !(p.revents & POLLERR);
}

/* Close every fd from `from` up. */
static void close_from(int from)
{
	struct rlimit rl;

	if (syscall(SYS_close_range, (unsigned)from, ~0U, 0U) == 0)
		return;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 65536)
		rl.rlim_cur = 65536;
	for (int fd = from; fd < (int)rl.rlim_cur; fd++)
		close(fd);
}

/* The fds of the init: the command's stdio, then the exec report and the
 * status pipe (both close at the command's exec). */
enum { INIT_EX = 3, INIT_STATUS = 4, INIT_FDS = 5 };

/*
 * The init (spawn.h, CONTAIN), started with every signal blocked: a fork
 * of the caller, so system calls only.  Sets up, starts the command as its
 * child, waits for it, ends what it left (in a namespace the kernel does,
 * when this exits), passes its wait status on and exits.  Never returns.
 */
static __attribute__((noreturn)) void init_main(const struct child_plan *c)
{
	static const int handled[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE };
	int fds[INIT_FDS] = { c->in, c->out, c->err, c->ex, c->status };
	struct sigaction sa;
	sigset_t none;
	pid_t cmd, self;
	int r, st;

	child_default_signals();
	if (c->mode == NS_USER && (r = nsview_maps_child(c->uid, c->gid)) < 0) {
		report(c->ex, REP_NS, -r);
		_exit(127);
	}
	/* a copy of the caller's memory, its secrets too: the command must
	 * not read it (/proc/PID/mem, ptrace); exec makes the command's own
	 * process dumpable again */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* In a namespace SIGKILL, which takes the namespace along; without
	 * one SIGTERM, which the init handles by ending everything. */
	prctl(PR_SET_PDEATHSIG, c->mode == REAPER ? SIGTERM : SIGKILL);
	init_parent = c->parent;
	init_mode = c->mode;
	setpgid(0, 0);
	/* Only the child's fds stay open: a copy of the caller's fds here
	 * would keep its other pipes open (another server's stdin would
	 * never see its end of file) for as long as this runs.  Moved out of
	 * the way first, so that none overwrites another. */
	for (int i = 0; i < INIT_FDS; i++)
		if ((fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 16)) < 0) {
			report(c->ex, REP_EXEC, errno);
			_exit(127);
		}
	for (int i = 0; i < INIT_FDS; i++)
		if (dup3(fds[i], i, i < INIT_EX ? 0 : O_CLOEXEC) < 0) {
			report(c->ex, REP_EXEC, errno);
			_exit(127);
		}
	close_from(INIT_FDS);
	/* the caller may have died before the prctl */
	if (c->mode == REAPER ? getppid() != c->parent : !read_end_open(INIT_EX))
		_exit(127);
	if (c->o->cwd && chdir(c->o->cwd) < 0) {
		report(INIT_EX, REP_EXEC, errno);
		_exit(127);
	}
	/* (without it only what stays in the group ends with the command) */
	if (c->mode == REAPER)
		(void)reaper_become();
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = init_on_signal;
	sigfillset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof handled / sizeof handled[0]; i++)
		sigaction(handled[i], &sa, NULL);
	self = getpid();
	cmd = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
	if (cmd < 0) {
		report(INIT_EX, REP_EXEC, errno);
		_exit(127);
	}
	if (cmd == 0) {
		child_default_signals();
		/* (without a namespace: should the init be killed) */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != self)
			_exit(127);
		close(INIT_STATUS);
		exec_command(c, INIT_EX);
	}
	/* the pipes' ends are the command's alone now */
	for (int fd = 0; fd <= INIT_EX; fd++)
		close(fd);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	st = reaper_wait_for(cmd);
	if (c->mode == REAPER)
		reaper_end_children();
	if (write(INIT_STATUS, &st, sizeof st) < 0) {
		/* the caller sees the exit status below */
	}
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

/* Start the child as plan->mode says (blocking every signal meanwhile):
 * its pid, or -1 with errno.  A namespace the kernel refuses makes the
 * mode REAPER. */
static pid_t start(struct child_plan *plan)
{
	sigset_t all, old;
	pid_t pid = -1;
	int e;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (plan->mode == PLAIN) {
		if ((pid = clone_shared(child, plan)) < 0 && (pid = fork()) == 0)
			child(plan);
	} else {
		/* (a raw clone, as a fork without its atfork handlers: the
		 * init makes system calls only) */
		if (plan->mode != REAPER) {
			unsigned long flags = CLONE_NEWPID | (plan->mode == NS_USER ? CLONE_NEWUSER : 0UL);
			pid = (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
			if (pid < 0)
				plan->mode = REAPER;
		}
		if (plan->mode == REAPER)
			pid = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
		if (pid == 0)
			init_main(plan);
	}
	e = errno;
	if (pid > 0) {
		/* (before a signal can come: a handler's proc_spawn_kill_all()
		 * must find it and its group; EACCES once it has exec'd) */
		setpgid(pid, pid);
		spawned_add(pid);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return pid;
}

int proc_spawn(struct spawned *s, const struct spawn_opts *o)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 }, ex[2] = { -1, -1 };
	int status[2] = { -1, -1 };
	struct child_plan plan = { .o = o, .parent = getpid(), .uid = getuid(), .gid = getgid() };
	struct report rep;
	char *prog = NULL;
	int rc = -1;
	ssize_t n;

	s->pid = 0;
	s->in_fd = s->out_fd = s->err_fd = -1;
	s->pidns = false;
	if (!o->argv || !o->argv[0] || !*o->argv[0])
		return forge_error("no command to run");
	if (!(prog = resolve(o->argv[0])))
		return forge_error("command '%s' not found in PATH", o->argv[0]);
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
	    (o->contain && pipe2(status, O_CLOEXEC | O_NONBLOCK) < 0)) {
		forge_error("pipe: %s", strerror(errno));
		goto out;
	}
	plan.prog = prog;
	plan.in = in[0], plan.out = out[1], plan.err = err[1], plan.status = status[1];
	plan.mode = !o->contain ? PLAIN : geteuid() == 0 ? NS : NS_USER;
attempt:
	if (pipe2(ex, O_CLOEXEC) < 0) {
		forge_error("pipe: %s", strerror(errno));
		goto out;
	}
	plan.ex = ex[1];
	if ((s->pid = start(&plan)) < 0) {
		forge_error("fork: %s", strerror(errno));
		s->pid = 0;
		goto out;
	}
	close_fd(&ex[1]);
	while ((n = read(ex[0], &rep, sizeof rep)) < 0 && errno == EINTR)
		;
	close_fd(&ex[0]);
	if (n == (ssize_t)sizeof rep) {
		while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
			;
		spawned_del(s->pid);
		s->pid = 0;
		if (rep.stage == REP_NS) {
			/* the user namespace was made and its id maps refused
			 * (AppArmor): contained by a reaper instead */
			plan.mode = REAPER;
			goto attempt;
		}
		forge_error("cannot run '%s'%s%s: %s", prog, o->cwd ? " in " : "", o->cwd ? o->cwd : "",
			    strerror(rep.err));
		goto out;
	}
	/* (the init's status pipe, read when it is reaped) */
	if (o->contain && spawned_set_status(s->pid, status[0]))
		status[0] = -1;
	s->pidns = plan.mode == NS || plan.mode == NS_USER;
	s->in_fd = in[1], in[1] = -1;
	s->out_fd = out[0], out[0] = -1;
	s->err_fd = err[0], err[0] = -1;
	fcntl(s->in_fd, F_SETFL, fcntl(s->in_fd, F_GETFL) | O_NONBLOCK);
	rc = 0;
out:
	close_fd(&in[0]), close_fd(&in[1]), close_fd(&out[0]), close_fd(&out[1]);
	close_fd(&err[0]), close_fd(&err[1]), close_fd(&ex[0]), close_fd(&ex[1]);
	close_fd(&status[0]), close_fd(&status[1]);
	free(prog);
	return rc;
}
