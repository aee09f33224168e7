/* spawn.c - a long-lived child with pipes to its stdio; see spawn.h. */
#include "os/spawn.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/ids.h"
#include "os/clonevm.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the children started and not reaped yet, for proc_spawn_kill_all() ---- */

#define MAX_SPAWNED 64
static pid_t spawned[MAX_SPAWNED];

static void spawned_add(pid_t pid)
{
	for (size_t i = 0; i < MAX_SPAWNED; i++) {
		pid_t zero = 0;
		if (__atomic_compare_exchange_n(&spawned[i], &zero, pid, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			return;
	}
}

static void spawned_del(pid_t pid)
{
	for (size_t i = 0; i < MAX_SPAWNED; i++) {
		pid_t p = pid;
		if (__atomic_compare_exchange_n(&spawned[i], &p, 0, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			return;
	}
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

bool proc_spawn_reap(pid_t pid, int *status, long ms)
{
	long long end = monotonic_ms() + ms;
	int st;

	enum state now;

	*status = -1;
	while ((now = state_of(pid)) == RUNNING) {
		if (monotonic_ms() >= end)
			return false;
		sleep_ms(10);
	}
	spawned_del(pid);
	if (now == GONE)
		return true;    /* (its group id may be another's by now: no kill) */
	/* what it left running in its group (a launcher's child, a job it
	 * started) ends with it: nobody else would stop it */
	kill(-pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return true;
	*status = st;
	return true;
}

void proc_spawn_kill_all(long grace_ms)
{
	int saved = errno;
	bool running = false;

	for (size_t i = 0; i < MAX_SPAWNED; i++) {
		pid_t p = __atomic_load_n(&spawned[i], __ATOMIC_SEQ_CST);
		if (p > 0) {
			signal_group(p, SIGTERM);
			running = true;
		}
	}
	for (long waited = 0; running && waited < grace_ms; waited += 10) {
		running = false;
		for (size_t i = 0; i < MAX_SPAWNED && !running; i++) {
			pid_t p = __atomic_load_n(&spawned[i], __ATOMIC_SEQ_CST);
			running = p > 0 && state_of(p) == RUNNING;
		}
		if (running)
			sleep_ms(10);
	}
	for (size_t i = 0; i < MAX_SPAWNED; i++) {
		pid_t p = __atomic_load_n(&spawned[i], __ATOMIC_SEQ_CST);
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

/* What the child needs, made before it starts. */
struct child_plan {
	const char *prog;
	const struct spawn_opts *o;
	pid_t parent;
	int in, out, err, ex;
};

/*
 * In the child, started with every signal blocked (by clone_shared(), or
 * by fork() when it cannot): system calls only, and every disposition is
 * SIG_DFL before a signal is unblocked (os/clonevm.h).  Never returns.
 */
static int child(void *arg)
{
	static char *const empty_env[] = { NULL };
	const struct child_plan *c = arg;
	const struct spawn_opts *o = c->o;
	struct sigaction dfl;
	sigset_t none;
	int e;

	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* SIGKILL, not SIGTERM: a caller killed by SIGKILL stops nothing, so
	 * this is all that ends a server that ignores SIGTERM (getppid: the
	 * caller may have died before the prctl) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != c->parent)
		_exit(127);
	/* a group of its own: stopping it stops what it starts, and the
	 * terminal's ^C reaches the caller, who stops it in order */
	setpgid(0, 0);
	if (dup2(c->in, 0) < 0 || dup2(c->out, 1) < 0 || dup2(c->err, 2) < 0 || (o->cwd && chdir(o->cwd) < 0)) {
		e = errno;
	} else {
		execve(c->prog, (char *const *)o->argv, o->envp ? o->envp : empty_env);
		e = errno;
	}
	if (write(c->ex, &e, sizeof e) < 0) {
		/* nothing more to say */
	}
	_exit(127);
}

int proc_spawn(struct spawned *s, const struct spawn_opts *o)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 }, ex[2] = { -1, -1 };
	char *prog = NULL;
	int rc = -1, e = 0;
	pid_t parent = getpid();
	ssize_t n;

	s->pid = 0;
	s->in_fd = s->out_fd = s->err_fd = -1;
	if (!o->argv || !o->argv[0] || !*o->argv[0])
		return forge_error("no command to run");
	if (!(prog = resolve(o->argv[0])))
		return forge_error("command '%s' not found in PATH", o->argv[0]);
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
	    pipe2(ex, O_CLOEXEC) < 0) {
		forge_error("pipe: %s", strerror(errno));
		goto out;
	}
	struct child_plan plan = { prog, o, parent, in[0], out[1], err[1], ex[1] };
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if ((s->pid = clone_shared(child, &plan)) < 0 && (s->pid = fork()) == 0)
		child(&plan);
	e = errno;
	if (s->pid > 0) {
		/* (before a signal can come: a handler's proc_spawn_kill_all()
		 * must find it and its group; EACCES once it has exec'd) */
		setpgid(s->pid, s->pid);
		spawned_add(s->pid);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (s->pid < 0) {
		forge_error("fork: %s", strerror(e));
		s->pid = 0;
		goto out;
	}
	close_fd(&ex[1]);
	while ((n = read(ex[0], &e, sizeof e)) < 0 && errno == EINTR)
		;
	if (n == (ssize_t)sizeof e) {
		forge_error("cannot run '%s'%s%s: %s", prog, o->cwd ? " in " : "", o->cwd ? o->cwd : "",
			    strerror(e));
		while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
			;
		spawned_del(s->pid);
		s->pid = 0;
		goto out;
	}
	s->in_fd = in[1], in[1] = -1;
	s->out_fd = out[0], out[0] = -1;
	s->err_fd = err[0], err[0] = -1;
	fcntl(s->in_fd, F_SETFL, fcntl(s->in_fd, F_GETFL) | O_NONBLOCK);
	rc = 0;
out:
	close_fd(&in[0]), close_fd(&in[1]), close_fd(&out[0]), close_fd(&out[1]);
	close_fd(&err[0]), close_fd(&err[1]), close_fd(&ex[0]), close_fd(&ex[1]);
	free(prog);
	return rc;
}
