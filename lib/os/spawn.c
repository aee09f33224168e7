/* spawn.c - a long-lived child with pipes to its stdio; see spawn.h. */
#include "os/spawn.h"
#include "core/buf.h"
#include "core/forge.h"
#include "os/clonevm.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

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
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != c->parent)
		_exit(127);
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
