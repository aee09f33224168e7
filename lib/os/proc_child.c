/*
 * proc_child.c - a sandboxed command's last steps and its PID 1.  See
 * proc_child.h.
 */
#include "os/proc_child.h"
#include "core/forge.h"
#include "os/landlock.h"
#include "os/nsview.h"
#include "os/procself.h"
#include "os/reaper.h"
#include "os/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* forge-sandbox-init's first arguments: its name, then the format's. */
#define INIT_NAME "forge-sandbox-init"
#define INIT_FORMAT "1"

void child_report(int fd, int kind, int stage, int err)
{
	struct child_rec r = { kind, stage, err };
	ssize_t w = write(fd, &r, sizeof(r));
	(void)w;
}

void child_fail(int fd, int stage, int err)
{
	child_report(fd, REC_FATAL, stage, err);
	_exit(127);
}

/* (open and write, and the digits by hand: snprintf is not
 * async-signal-safe) */
void child_raise_oom_score(int adj)
{
	char num[16], rev[8];
	int n = 0, r = 0, fd;

	if (adj <= 0 || (fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC)) < 0)
		return;
	if (adj > 1000)
		adj = 1000;
	do {
		rev[r++] = (char)('0' + adj % 10);
		adj /= 10;
	} while (adj && r < (int)sizeof rev);
	while (r)
		num[n++] = rev[--r];
	num[n++] = '\n';
	(void)!write(fd, num, (size_t)n);
	close(fd);
}

/* cgroup v1 moves this process in at once; v2 waits until the caller has
 * (it does so while the namespaces are built, as a move by pid waits for
 * an RCU grace period). */
void cmd_tail_wait_go(const struct cmd_tail *t)
{
	char c;
	ssize_t n;
	int r;

	if (t->join_fd >= 0 && (r = cgroup_pids_join_child(t->join_fd)) < 0)
		child_report(t->rep_fd, REC_WARN, ST_CGROUP, -r);
	if (t->go_fd < 0)
		return;
	while ((n = read(t->go_fd, &c, 1)) < 0 && errno == EINTR)
		;
	/* end of file: the caller died before it let us go; nobody would
	 * wait for the command, so it does not run (an orphan blocked here
	 * for ever was seen when a test killed forge-test at that moment) */
	if (n != 1)
		_exit(127);
}

void cmd_tail_landlock(const struct cmd_tail *t)
{
	int r;

	if (t->landlock_fd < 0 || (r = landlock_enforce_child(t->landlock_fd)) >= 0)
		return;
	if (t->landlock_required)
		child_fail(t->rep_fd, ST_LANDLOCK, -r);
	child_report(t->rep_fd, REC_WARN, ST_LANDLOCK, -r);
}

/* A failure is a warning. */
void cmd_tail_seccomp(const struct cmd_tail *t)
{
	enum seccomp_net net = SECCOMP_NET_OPEN;
	int stage = ST_SECCOMP, r;

	if (t->deny_net) {
		net = t->deny_unix ? SECCOMP_NET_CUT_NO_UNIX : SECCOMP_NET_CUT;
		stage = t->deny_unix ? ST_SECCOMP_UNIX : ST_SECCOMP_NET;
	}
	if (t->deny_keys && (r = seccomp_deny_child(net)) < 0)
		child_report(t->rep_fd, REC_WARN, stage, -r);
}

void cmd_tail_limits(const struct cmd_tail *t)
{
	for (int i = 0; i < t->nrl; i++)
		if (setrlimit(t->rl[i].res, &t->rl[i].rl) < 0)
			child_report(t->rep_fd, REC_WARN, ST_RLIMIT, errno);
}

/* (a failed try of the direct program changes nothing: argv, the shell,
 * then runs as ever and says what went wrong) */
void cmd_tail_exec(const struct cmd_tail *t)
{
	if (t->direct_path && t->direct_argv)
		execve(t->direct_path, t->direct_argv, t->direct_envp ? t->direct_envp : t->envp);
	execve(t->argv[0], t->argv, t->envp);
}

void cmd_tail_run(const struct cmd_tail *t)
{
	sigset_t none;
	int r;

	init_default_signals();
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (t->cwd && chdir(t->cwd) < 0)
		child_fail(t->rep_fd, ST_CHDIR, errno);
	/* no controlling terminal: the command cannot open /dev/tty to type
	 * into the person's shell (TIOCSTI) or write to their screen */
	(void)setsid();
	cmd_tail_landlock(t);
	if ((r = nsview_drop_caps_child()) < 0)
		child_fail(t->rep_fd, ST_CAPS, -r);
	cmd_tail_seccomp(t);
	cmd_tail_limits(t);
	/* everything above fd 2 closes at exec (the report pipe included) */
	syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
	cmd_tail_exec(t);
	child_fail(t->rep_fd, ST_EXEC, errno);
}

static const int forwarded[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

static void init_forward(int sig)
{
	kill(-1, sig);
}

static void set_forwarded(void (*handler)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigfillset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaction(forwarded[i], &sa, NULL);
}

void init_forward_signals(void)
{
	set_forwarded(init_forward);
}

void init_default_signals(void)
{
	set_forwarded(SIG_DFL);
}

void child_default_signals(void)
{
	struct procself ps;
	struct sigaction dfl;
	uint64_t set = ~(uint64_t)0;

	/* (SIGCHLD always: its SA_NOCLDWAIT would hold without a handler) */
	if (procself_read_child(&ps, PROCSELF_SIG_IGN | PROCSELF_SIG_CGT) == 0)
		set = ps.sig_ign | ps.sig_cgt | (uint64_t)1 << (SIGCHLD - 1);
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	for (int s = 1; s < NSIG && s <= 64; s++)
		if (s != SIGKILL && s != SIGSTOP && (set >> (s - 1) & 1))
			sigaction(s, &dfl, NULL);
	child_default_reserved_signals();
}

void child_default_reserved_signals(void)
{
	/* SIG_DFL is 0, and so is every other field of the kernel's struct
	 * sigaction (handler, flags, restorer where there is one, mask) in
	 * each architecture's layout: zeros whatever the layout */
	unsigned long zero[8] = { 0 };

	for (int s = 32; s < SIGRTMIN; s++)
		(void)syscall(SYS_rt_sigaction, s, zero, NULL, (size_t)8);
}

void child_pass_status(const struct cmd_tail *t, int st)
{
	/* (should the write fail, the caller has the exit status below) */
	if (t->status_fd >= 0)
		(void)!write(t->status_fd, &st, sizeof(st));
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

void init_finish(const struct cmd_tail *t, pid_t cmd)
{
	close(t->rep_fd);
	for (int fd = 0; fd < 3; fd++)
		close(fd);
	child_pass_status(t, reaper_wait_for(cmd));
}

/* ---- forge-sandbox-init's arguments ------------------------------------ */

static void add(char ***v, size_t *n, char *s)
{
	*v = xrealloc(*v, (*n + 2) * sizeof **v);
	(*v)[(*n)++] = s;
	(*v)[*n] = NULL;
}

static void add_num(char ***v, size_t *n, long long x)
{
	char num[24];

	snprintf(num, sizeof num, "%lld", x);
	add(v, n, xstrdup(num));
}

/* A string that may be NULL: "-" for NULL, else "=" and the string. */
static void add_opt(char ***v, size_t *n, const char *s)
{
	size_t len = s ? strlen(s) : 0;
	char *e = xmalloc(len + 2);

	e[0] = s ? '=' : '-';
	if (s)
		memcpy(e + 1, s, len);
	e[len + 1] = '\0';
	add(v, n, e);
}

/* A vector that may be NULL: its length (-1 for NULL), then its strings. */
static void add_vec(char ***v, size_t *n, char *const *vec)
{
	long long len = 0;

	if (!vec) {
		add_num(v, n, -1);
		return;
	}
	while (vec[len])
		len++;
	add_num(v, n, len);
	for (long long i = 0; i < len; i++)
		add(v, n, xstrdup(vec[i]));
}

char **cmd_tail_encode(const struct cmd_tail *t)
{
	char **v = NULL;
	size_t n = 0;

	add(&v, &n, xstrdup(INIT_NAME));
	add(&v, &n, xstrdup(INIT_FORMAT));
	add_num(&v, &n, t->rep_fd);
	add_num(&v, &n, t->status_fd);
	add_num(&v, &n, t->go_fd);
	add_num(&v, &n, t->join_fd);
	add_num(&v, &n, t->landlock_fd);
	add_num(&v, &n, t->landlock_required);
	add_num(&v, &n, t->deny_keys);
	add_num(&v, &n, t->deny_net);
	add_num(&v, &n, t->deny_unix);
	add_num(&v, &n, t->nrl);
	for (int i = 0; i < t->nrl; i++) {
		add_num(&v, &n, t->rl[i].res);
		/* (RLIM_INFINITY, all ones, as -1) */
		add_num(&v, &n, (long long)t->rl[i].rl.rlim_cur);
		add_num(&v, &n, (long long)t->rl[i].rl.rlim_max);
	}
	add_opt(&v, &n, t->cwd);
	add_opt(&v, &n, t->direct_path);
	add_vec(&v, &n, t->direct_argv);
	add_vec(&v, &n, t->direct_envp);
	add_vec(&v, &n, t->argv);
	return v;
}

void cmd_tail_encoded_free(char **argv)
{
	if (!argv)
		return;
	for (size_t i = 0; argv[i]; i++)
		free(argv[i]);
	free(argv);
}

struct reader {
	int argc, at;
	char **argv;
	bool bad;
};

static const char *next(struct reader *r)
{
	if (r->at >= r->argc) {
		r->bad = true;
		return NULL;
	}
	return r->argv[r->at++];
}

static long long next_num(struct reader *r, long long min, long long max)
{
	const char *s = next(r);
	char *end;
	long long x;

	if (!s)
		return 0;
	errno = 0;
	x = strtoll(s, &end, 10);
	if (errno || end == s || *end || x < min || x > max) {
		r->bad = true;
		return 0;
	}
	return x;
}

static const char *next_opt(struct reader *r)
{
	const char *s = next(r);

	if (!s || (s[0] != '-' && s[0] != '=') || (s[0] == '-' && s[1])) {
		r->bad = true;
		return NULL;
	}
	return s[0] == '=' ? s + 1 : NULL;
}

/* A vector: the strings of argv in place, NULL-terminated where the next
 * count was (the vectors are consecutive; the last one ends argv). */
static char *const *next_vec(struct reader *r)
{
	long long len = next_num(r, -1, INT_MAX);
	char **vec;

	if (r->bad || len < 0)
		return NULL;
	if (len > r->argc - r->at) {
		r->bad = true;
		return NULL;
	}
	/* the count's own slot takes the vector's strings one place down,
	 * so that the slot after them can end it */
	vec = r->argv + r->at - 1;
	for (long long i = 0; i < len; i++)
		vec[i] = r->argv[r->at + i];
	vec[len] = NULL;
	r->at += (int)len;
	return vec;
}

int cmd_tail_decode(struct cmd_tail *t, int argc, char **argv, char **envp)
{
	struct reader r = { argc, 1, argv, false };
	const char *format = next(&r);

	memset(t, 0, sizeof *t);
	if (!format || strcmp(format, INIT_FORMAT) != 0)
		return -1;
	t->rep_fd = (int)next_num(&r, 0, INT_MAX);
	t->status_fd = (int)next_num(&r, -1, INT_MAX);
	t->go_fd = (int)next_num(&r, -1, INT_MAX);
	t->join_fd = (int)next_num(&r, -1, INT_MAX);
	t->landlock_fd = (int)next_num(&r, -1, INT_MAX);
	t->landlock_required = next_num(&r, 0, 1);
	t->deny_keys = next_num(&r, 0, 1);
	t->deny_net = next_num(&r, 0, 1);
	t->deny_unix = next_num(&r, 0, 1);
	t->nrl = (int)next_num(&r, 0, CMD_TAIL_LIMITS);
	for (int i = 0; i < t->nrl && !r.bad; i++) {
		t->rl[i].res = (int)next_num(&r, 0, INT_MAX);
		t->rl[i].rl.rlim_cur = (rlim_t)next_num(&r, LLONG_MIN, LLONG_MAX);
		t->rl[i].rl.rlim_max = (rlim_t)next_num(&r, LLONG_MIN, LLONG_MAX);
	}
	t->cwd = next_opt(&r);
	t->direct_path = next_opt(&r);
	t->direct_argv = next_vec(&r);
	t->direct_envp = next_vec(&r);
	t->argv = next_vec(&r);
	t->envp = envp;
	if (r.bad || r.at != argc || !t->argv || !t->argv[0])
		return -1;
	return 0;
}
