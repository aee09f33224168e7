/*
 * proc.c - run a child with a time limit, rlimits, capped capture and
 * confinement.  See proc.h for the contract.
 */
#include "os/proc.h"
#include "os/seccomp.h"
#include "core/forge.h"
#include "os/clonevm.h"
#include "os/landlock.h"
#include "os/nsview.h"
#include "os/proc_child.h"
#include "os/reaper.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

extern char **environ;

/* ---- the table of running children, for proc_kill_running() ---- */

/* Each entry is what kill() takes: -pgid for a child leading its group,
 * the pid of a child that stays in the caller's group (keep_pgrp). */
#define MAX_RUNNING 64
static pid_t running[MAX_RUNNING];

static void running_add(pid_t pid)
{
	for (size_t i = 0; i < MAX_RUNNING; i++) {
		pid_t zero = 0;
		if (__atomic_compare_exchange_n(&running[i], &zero, pid, false,
						__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			return;
	}
}

static void running_del(pid_t pid)
{
	for (size_t i = 0; i < MAX_RUNNING; i++) {
		pid_t p = pid;
		if (__atomic_compare_exchange_n(&running[i], &p, 0, false,
						__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			return;
	}
}

/* Counts proc_kill_running()'s calls: a child with a group of its own that
 * is still there kill_grace_ms after one gets SIGKILL (proc_run). */
static unsigned kill_requests;

void proc_kill_running(int sig)
{
	int saved = errno;

	__atomic_add_fetch(&kill_requests, 1, __ATOMIC_SEQ_CST);

	for (size_t i = 0; i < MAX_RUNNING; i++) {
		pid_t p = __atomic_load_n(&running[i], __ATOMIC_SEQ_CST);
		if (p != 0)
			kill(p, sig);
	}
	errno = saved;
}

size_t proc_running_count(void)
{
	size_t n = 0;

	for (size_t i = 0; i < MAX_RUNNING; i++)
		n += __atomic_load_n(&running[i], __ATOMIC_SEQ_CST) != 0;
	return n;
}

/* ---- capture: keep the head and the tail of a stream ---- */

enum { CUT_COUNT_LINE = 4096 };  /* what proc_opts.cut_count sees of a line */

struct capture {
	size_t cap;          /* 0 = keep all */
	size_t total;
	struct buf head;     /* first cap/2 bytes (all bytes when cap == 0) */
	char *ring;          /* last cap - cap/2 bytes */
	size_t ring_cap, ring_len, ring_pos;
	/* cut_count: the lines of the whole stream it said yes to; those
	 * kept are taken off at the end, what is left was in the middle */
	bool (*count)(const char *line, size_t len);
	struct buf line;     /* the current line, up to CUT_COUNT_LINE bytes */
	size_t counted;
};

static void capture_init(struct capture *c, size_t cap, bool (*count)(const char *, size_t))
{
	memset(c, 0, sizeof(*c));
	c->cap = cap;
	c->count = cap ? count : NULL;
	buf_init(&c->head, 0);
	buf_init(&c->line, 0);
	if (cap) {
		c->ring_cap = cap - cap / 2;
		c->ring = xmalloc(c->ring_cap ? c->ring_cap : 1);
	}
}

/* Feed p[0..n) to the line counter: every line ended counts once. */
static void count_feed(struct capture *c, const char *p, size_t n)
{
	while (n > 0) {
		const char *nl = memchr(p, '\n', n);
		size_t take = nl ? (size_t)(nl - p) : n;
		size_t room = c->line.len < CUT_COUNT_LINE ? CUT_COUNT_LINE - c->line.len : 0;

		buf_add(&c->line, p, take < room ? take : room);
		if (!nl)
			return;
		if (c->count(c->line.buf ? c->line.buf : "", c->line.len))
			c->counted++;
		buf_reset(&c->line);
		p += take + 1;
		n -= take + 1;
	}
}

/* The lines of p[0..n) count says yes to (the last without its newline). */
static size_t count_lines(bool (*count)(const char *, size_t), const char *p, size_t n)
{
	size_t k = 0;

	while (n > 0) {
		const char *nl = memchr(p, '\n', n);
		size_t len = nl ? (size_t)(nl - p) : n;

		k += count(p, len < CUT_COUNT_LINE ? len : CUT_COUNT_LINE);
		if (!nl)
			break;
		p += len + 1;
		n -= len + 1;
	}
	return k;
}

static void capture_add(struct capture *c, const char *p, size_t n)
{
	c->total += n;
	if (c->count)
		count_feed(c, p, n);
	if (!c->cap) {
		buf_add(&c->head, p, n);
		return;
	}
	if (c->head.len < c->cap / 2) {
		size_t k = c->cap / 2 - c->head.len;
		if (k > n)
			k = n;
		buf_add(&c->head, p, k);
		p += k;
		n -= k;
	}
	if (!c->ring_cap)
		return;
	if (n >= c->ring_cap) {
		memcpy(c->ring, p + n - c->ring_cap, c->ring_cap);
		c->ring_len = c->ring_cap;
		c->ring_pos = 0;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		c->ring[c->ring_pos] = p[i];
		c->ring_pos = (c->ring_pos + 1) % c->ring_cap;
		if (c->ring_len < c->ring_cap)
			c->ring_len++;
	}
}

/* Move the captured text into out: head, marker, tail; *counted (may be
 * NULL) the lines of the omitted middle c->count said yes to. */
static void capture_finish(struct buf *out, size_t *counted, struct capture *c)
{
	struct buf tail = BUF_INIT;
	size_t start = c->ring_len < c->ring_cap ? 0 : c->ring_pos;
	size_t omitted, head_len, tail_off = 0;

	for (size_t i = 0; i < c->ring_len; i++)
		buf_addch(&tail, c->ring[(start + i) % c->ring_cap]);
	omitted = c->total - c->head.len - tail.len;
	head_len = c->head.len;
	if (omitted) {
		/* Cut at line boundaries when one is near. */
		char *nl = memrchr(c->head.buf, '\n', head_len);
		if (nl && (size_t)(nl - c->head.buf) + 1 >= head_len / 2)
			head_len = (size_t)(nl - c->head.buf) + 1;
		nl = memchr(tail.buf, '\n', tail.len);
		if (nl && (size_t)(nl - tail.buf) < tail.len / 2)
			tail_off = (size_t)(nl - tail.buf) + 1;
		omitted += (c->head.len - head_len) + tail_off;
	}
	if (c->count && omitted) {
		if (c->line.len && c->count(c->line.buf, c->line.len))
			c->counted++;
		size_t kept = count_lines(c->count, c->head.buf ? c->head.buf : "", head_len) +
			      count_lines(c->count, tail.buf ? tail.buf + tail_off : "", tail.len - tail_off);
		if (counted)
			*counted = c->counted > kept ? c->counted - kept : 0;
	}
	buf_release(&c->line);
	buf_add(out, c->head.buf, head_len);
	if (omitted) {
		if (out->len && out->buf[out->len - 1] != '\n')
			buf_addch(out, '\n');
		buf_addf(out, "[\xe2\x80\xa6 %zu bytes omitted \xe2\x80\xa6]\n", omitted);
	}
	buf_add(out, tail.buf + tail_off, tail.len - tail_off);
	buf_release(&tail);
	buf_release(&c->head);
	free(c->ring);
	c->ring = NULL;
}

/* ---- streaming: whole lines handed to a callback as they arrive ---- */

struct lines {
	struct buf line;
	int cut;
	void (*cb)(void *, const char *, size_t, int);
};

/* Hand over every complete line in data; keep the partial rest. */
static void lines_feed(struct lines *s, const char *data, size_t n, size_t max, void *payload)
{
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl - data) : n;
		size_t room = s->line.len < max ? max - s->line.len : 0;

		buf_add(&s->line, data, take < room ? take : room);
		if (take > room)
			s->cut = 1;
		if (nl) {
			s->cb(payload, s->line.buf, s->line.len, s->cut);
			buf_reset(&s->line);
			s->cut = 0;
			take++;
		}
		data += take;
		n -= take;
	}
}

/* The last line when it has no newline. */
static void lines_flush(struct lines *s, void *payload)
{
	if (s->line.len && s->cb)
		s->cb(payload, s->line.buf, s->line.len, s->cut);
	buf_release(&s->line);
}

/* ---- the child ---- */

struct child_plan {
	const struct proc_opts *o;
	struct cmd_tail t;       /* the command's last steps (os/proc_child.h) */
	int in_fd, out_fd, err_fd;
	bool priv;
	uid_t uid;
	gid_t gid;
	bool ns;                 /* this attempt makes namespaces */
	const struct nsview *view; /* NULL: the host's files, a fresh /proc */
	int parent_fds[2];       /* the parent's ends of the go and report pipes, or -1 */
	int init_fd;             /* forge-sandbox-init, to become PID 1 (the fast path), or -1 */
	char **init_argv;        /* its arguments (cmd_tail_encode) */
	int join_user, join_net; /* the kept user and network namespaces to enter, or -1 */
	pid_t joined;            /* PID 1 made in them (join_child), or -1 */
};

/*
 * No capabilities for the command without a user namespace (root's, or a
 * container's): with CAP_SYS_PTRACE Landlock lets it read any process's
 * /proc/PID/environ (the key in the shell that started Forge), and with
 * the others it sets the host's clock and name.  The bounding set goes
 * too, so that no execve (setuid root) gives them back.  A process with
 * none to drop has nothing to do here.
 */
static void drop_caps(const struct child_plan *p)
{
	struct { uint32_t version; int pid; } h = { 0x20080522, 0 };	/* version 3 */
	struct { uint32_t effective, permitted, inheritable; } d[2] = { { 0, 0, 0 }, { 0, 0, 0 } };

	if (syscall(SYS_capget, &h, d) == 0 && !d[0].permitted && !d[1].permitted)
		return;
	/* (the bounding set needs CAP_SETPCAP, which a container may lack:
	 * then no_new_privs keeps an execve from granting any) */
	for (int c = 0; c < 64; c++)
		/* (EINVAL: past the kernel's last capability, they are dense) */
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno == EINVAL)
			break;
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	memset(d, 0, sizeof d);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_capset, &h, d) < 0)
		child_fail(p->t.rep_fd, ST_CAPS, errno);
}

/* The command, started by PID 1 below with clone_shared() on PID 1's
 * memory, or in a fork of it. */
static int init_command(void *plan)
{
	cmd_tail_run(&((const struct child_plan *)plan)->t);
}

/* PID 1 of the namespace as a copy of Forge's process: start the command,
 * reap everything, exit with the command's status (which takes the rest of
 * the namespace along).  The command starts on PID 1's memory (a fork
 * would copy its page tables, and PID 1's pages written after would fault
 * again: ~0.3 ms a command). */
static __attribute__((noreturn)) void init_main(const struct child_plan *p)
{
	sigset_t all, none;
	pid_t cmd;

	init_forward_signals();
	cmd_tail_wait_go(&p->t);
	sigfillset(&all);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &all, NULL);
	cmd = clone_shared(init_command, (void *)p);
	if (cmd < 0)
		cmd = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
	if (cmd == 0)
		cmd_tail_run(&p->t);
	if (cmd < 0)
		child_fail(p->t.rep_fd, ST_EXEC, errno);
	sigprocmask(SIG_SETMASK, &none, NULL);
	init_finish(&p->t, cmd);
}

/*
 * The fast path: PID 1, still on the caller's memory (clone_shared_flags),
 * becomes forge-sandbox-init, which starts the command and stays as its
 * PID 1 (cmd/libexec/forge-sandbox-init.c) -- no copy of the caller's
 * page tables, and none of its pages to fault again.  The descriptors it
 * needs stay open across this exec.  Returns only when the exec failed:
 * nothing has run, and the caller tries again without it.
 */
static void init_exec(const struct child_plan *p)
{
	const int keep[] = { p->t.rep_fd, p->t.status_fd, p->t.go_fd, p->t.join_fd, p->t.landlock_fd };
	int r;

	/* Every capability goes now, the bounding set's too: the exec would
	 * take them from a user's PID 1 (not root in the namespace), before
	 * it could drop the bounding set, and leave them to root's */
	if ((r = nsview_drop_caps_child()) < 0)
		child_fail(p->t.rep_fd, ST_CAPS, -r);
	for (size_t i = 0; i < sizeof keep / sizeof *keep; i++)
		if (keep[i] >= 0)
			(void)fcntl(keep[i], F_SETFD, 0);
	syscall(SYS_execveat, p->init_fd, "", p->init_argv, p->t.envp, AT_EMPTY_PATH);
	child_fail(p->t.rep_fd, ST_INIT, errno);
}

/* The reaper's command (its own process group) and the seconds it gets
 * between SIGTERM and SIGKILL. */
static pid_t reaper_cmd;
static unsigned reaper_grace_s;

/* SIGTERM and the like go on to the command's group; SIGALRM, the grace
 * after a SIGTERM running out, ends it. */
static void reaper_pass_on(int sig)
{
	if (reaper_cmd <= 0)
		return;
	/* (before the command's setsid() its group is not there yet: the
	 * command alone, which has started nothing) */
	if (kill(-reaper_cmd, sig == SIGALRM ? SIGKILL : sig) < 0 && errno == ESRCH)
		kill(reaper_cmd, sig == SIGALRM ? SIGKILL : sig);
	if (sig == SIGTERM)
		alarm(reaper_grace_s);
}

/*
 * Without a PID namespace (o->contain): the command's parent, a child
 * subreaper (os/reaper.h), stays until the command exits, then ends
 * whatever it left running (setsid and double forks included) and exits
 * with its status.  The command leads a process group of its own; the
 * caller's signals reach this process's group, and it passes them on.
 * It is not in the Landlock domain (it reads /proc to find its children;
 * the command cannot signal it where Landlock scopes signals), and dies
 * with the caller by ending the command.
 */
static __attribute__((noreturn)) void reaper_main(const struct child_plan *p)
{
	const struct proc_opts *o = p->o;
	struct sigaction sa, dfl;
	sigset_t all, none;
	pid_t cmd;
	int st, r;

	if ((r = reaper_become()) < 0)
		child_report(p->t.rep_fd, REC_WARN, ST_REAPER, -r);
	reaper_grace_s = o->kill_grace_ms > 0 ? (unsigned)((o->kill_grace_ms + 999) / 1000) : 1;
	sigfillset(&all);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &all, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = reaper_pass_on;
	sigfillset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
	cmd = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
	if (cmd < 0)
		child_fail(p->t.rep_fd, ST_EXEC, errno);
	if (cmd == 0) {
		init_default_signals();
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigaction(SIGALRM, &dfl, NULL);
		prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
		/* A session of its own: no controlling terminal, so the command
		 * cannot open /dev/tty to type into the person's shell (TIOCSTI)
		 * or write to their screen; its group is its own as before. */
		(void)setsid();
		/* Without namespaces SysV IPC is the host's: root may still have
		 * an IPC namespace of its own (a user may not, without a user
		 * namespace: README, "Without namespaces") */
		if (!p->ns)
			(void)unshare(CLONE_NEWIPC);
		sigprocmask(SIG_SETMASK, &none, NULL);
		cmd_tail_landlock(&p->t);
		cmd_tail_seccomp(&p->t);
		cmd_tail_limits(&p->t);
		drop_caps(p);
		syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
		cmd_tail_exec(&p->t);
		child_fail(p->t.rep_fd, ST_EXEC, errno);
	}
	/* (not setpgid(cmd, cmd) here: a group leader could not setsid(),
	 * and the command would keep the terminal) */
	reaper_cmd = cmd;
	close(p->t.rep_fd);
	for (int fd = 0; fd < 3; fd++)
		close(fd);
	sigprocmask(SIG_SETMASK, &none, NULL);
	st = reaper_wait_for(cmd);
	reaper_cmd = 0;
	reaper_end_children();
	child_pass_status(&p->t, st);
}

/* Runs between fork and exec: async-signal-safe calls only. */
static __attribute__((noreturn)) void child_main(const struct child_plan *p)
{
	const struct proc_opts *o = p->o;
	sigset_t none;

	if (!o->keep_pgrp)
		setpgid(0, 0);
	/* the parent's ends: with them open here, the go pipe never reads
	 * end of file when the parent dies (cmd_tail_wait_go) */
	for (int i = 0; i < 2; i++)
		if (p->parent_fds[i] >= 0)
			close(p->parent_fds[i]);
	child_default_signals();
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	if (dup2(p->in_fd, 0) < 0 || dup2(p->out_fd, 1) < 0 || dup2(p->err_fd, 2) < 0)
		child_fail(p->t.rep_fd, ST_DUP, errno);
	/* (on the fast path too: a vfork child's score is its own, os/clonevm.h) */
	child_raise_oom_score(o->limits.oom_score_adj);
	if (p->ns) {
		int r = 0, stage = NSV_MAPS;
		/* The id maps can be written only while /proc/self is ours (the
		 * parent may be non-dumpable): nsview_maps_child() makes this
		 * process dumpable for the writes, then as it was.  Then PID 1,
		 * a copy of this process with its environment, becomes
		 * non-dumpable: the command must not read its /proc/1/environ
		 * or memory.  On the fast path the memory is the caller's: as
		 * it was, and forge-sandbox-init makes itself non-dumpable. */
		if (p->join_user < 0) {
			r = nsview_maps_child(p->uid, p->gid);
			if (p->init_fd < 0)
				prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
			if (r < 0)
				child_fail(p->t.rep_fd, ST_NS + NSV_MAPS, -r);
		}
		/* Should Forge die, the namespace dies with it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		/* the clone made the network namespace with the user namespace,
		 * whose root this process is (a kept one has its loopback up) */
		if (o->new_netns && p->join_net < 0 && (r = netns_loopback_up_child()) < 0)
			child_report(p->t.rep_fd, REC_WARN, ST_LOOPBACK, -r);
		if (p->view) {
			r = nsview_enter_child(p->view, &stage);
		} else if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
			r = -errno;
			stage = NSV_PRIVATE;
		} else if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
			r = -errno;
			stage = NSV_PROC;
		}
		if (r < 0)
			child_fail(p->t.rep_fd, ST_NS + stage, -r);
		if (o->landlock_fd >= 0 && o->landlock_reads) {
			landlock_allow_child(o->landlock_fd, "/proc", false);
			if (p->view)
				landlock_allow_child(o->landlock_fd, "/", true);
		}
		if (p->init_fd >= 0)
			init_exec(p);
		init_main(p);
	}
	if (o->cwd && chdir(o->cwd) < 0)
		child_fail(p->t.rep_fd, ST_CHDIR, errno);
	if (o->new_netns) {
		int r = netns_enter_child(p->priv, p->uid, p->gid);
		if (r < 0) {
			if (o->netns_required)
				child_fail(p->t.rep_fd, ST_NETNS, -r);
			child_report(p->t.rep_fd, REC_WARN, ST_NETNS, -r);
		} else if ((r = netns_loopback_up_child()) < 0) {
			child_report(p->t.rep_fd, REC_WARN, ST_LOOPBACK, -r);
		}
	}
	cmd_tail_wait_go(&p->t);
	if (o->contain)
		reaper_main(p);
	cmd_tail_landlock(&p->t);
	cmd_tail_limits(&p->t);
	/* Everything above fd 2 closes at exec (the report pipe included). */
	syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
	cmd_tail_exec(&p->t);
	child_fail(p->t.rep_fd, ST_EXEC, errno);
}

/* child_main for clone_shared() (os/clonevm.h): it makes system calls
 * only, and sets every signal's disposition to SIG_DFL before it unblocks
 * them, as clone_shared() asks. */
static int shared_child(void *plan)
{
	child_main(plan);
}

static const char *stage_name(int stage)
{
	switch (stage) {
	case ST_NETNS: return "network namespace";
	case ST_LANDLOCK: return "landlock";
	case ST_CHDIR: return "chdir";
	case ST_EXEC: return "exec";
	case ST_DUP: return "dup2";
	case ST_RLIMIT: return "setrlimit";
	case ST_CAPS: return "drop capabilities";
	case ST_SECCOMP: return "seccomp (the keyring system calls are not refused)";
	case ST_SECCOMP_UNIX:
		return "seccomp (the keyring system calls are not refused, and the host's unix sockets and vsock can be reached)";
	case ST_SECCOMP_NET:
		return "seccomp (the keyring system calls are not refused, and vsock and other socket families the network namespace does not cover can be reached)";
	case ST_LOOPBACK: return "loopback (127.0.0.1 and ::1 unreachable)";
	case ST_REAPER: return "reaper (what the command starts may outlive it)";
	case ST_CGROUP: return "processes: cannot join the pids cgroup";
	case ST_INIT: return "PID 1 (forge-sandbox-init)";
	case ST_JOIN: return "the kept namespaces";
	}
	if (stage > ST_NS)
		return nsview_stage_name(stage - ST_NS);
	return "setup";
}

/* ---- the parent ---- */

/* forge-sandbox-init: an O_PATH descriptor kept for the process, or -1
 * when there is none or it failed once (init_program_broken). */
static int init_program_fd = -1;
static char init_program_path[PATH_MAX];
static const char *init_program_why = "not looked for";
static bool init_program_broken;
static pthread_once_t init_program_once = PTHREAD_ONCE_INIT;

/* ../libexec/forge/forge-sandbox-init from this program's directory: the
 * layout of an installation and of the build tree (bin/, libexec/). */
static void init_program_find(void)
{
	char exe[PATH_MAX], path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	char *slash;
	struct stat st;
	int fd;

	init_program_why = "this program's path is unknown (/proc/self/exe)";
	if (n <= 0)
		return;
	exe[n] = '\0';
	if (!(slash = strrchr(exe, '/')))
		return;
	*slash = '\0';
	init_program_why = "its path is too long";
	if (snprintf(path, sizeof path, "%s/../libexec/forge/forge-sandbox-init", exe) >= (int)sizeof path)
		return;
	init_program_why = "no ../libexec/forge/forge-sandbox-init beside this program";
	if ((fd = open(path, O_PATH | O_CLOEXEC)) < 0)
		return;
	/* a regular file this user may run, that nobody else may change */
	init_program_why = "../libexec/forge/forge-sandbox-init is not an executable file that only "
			   "root or this user may change";
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & S_IXUSR) ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)) || (st.st_uid != 0 && st.st_uid != geteuid())) {
		close(fd);
		return;
	}
	snprintf(init_program_path, sizeof init_program_path, "%s", path);
	init_program_why = NULL;
	init_program_fd = fd;
}

static int init_program(void)
{
	pthread_once(&init_program_once, init_program_find);
	return __atomic_load_n(&init_program_broken, __ATOMIC_RELAXED) ? -1 : init_program_fd;
}

const char *proc_sandbox_init(const char **why)
{
	const char *unused = NULL;

	why = why ? why : &unused;
	if (!clone_shared_supported()) {
		*why = "this build forks its children (a sanitizer's)";
		return NULL;
	}
	if (init_program() < 0) {
		*why = init_program_broken ? "it could not be run (its exec failed)" : init_program_why;
		return NULL;
	}
	*why = NULL;
	return init_program_path;
}

/* the fast path's child (clone_shared_flags): child_main, which resets
 * every signal's disposition before it unblocks any */
static int init_child(void *plan)
{
	child_main(plan);
}

/*
 * The user and network namespaces of this process's first command on the
 * fast path, kept (descriptors) for the next ones with the network cut: a
 * new network namespace costs ~0.4 ms of the caller's CPU at its clone
 * (every pernet subsystem's init; its teardown more in a kernel worker),
 * the user namespace its id maps.  What one command could leave in them
 * for the next it cannot: its processes end with its PID namespace (their
 * sockets with them), and without capabilities it changes no setting of
 * either; mount, PID and IPC namespaces are each command's own.
 */
static int kept_user = -1, kept_net = -1;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

/* Keep the namespaces of pid (a PID 1 made with them whose command runs:
 * its report pipe closed without a word), when none are kept. */
static void ns_keep(pid_t pid)
{
	char path[64];
	int u, n;

	pthread_mutex_lock(&kept_lock);
	if (kept_user < 0) {
		snprintf(path, sizeof path, "/proc/%ld/ns/user", (long)pid);
		u = open(path, O_RDONLY | O_CLOEXEC);
		snprintf(path, sizeof path, "/proc/%ld/ns/net", (long)pid);
		n = u >= 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
		if (u >= 0 && n >= 0) {
			kept_user = u;
			kept_net = n;
		} else if (u >= 0) {
			close(u);
		}
	}
	pthread_mutex_unlock(&kept_lock);
}

/* The kept namespaces (dup'd for this command), or false. */
static bool ns_kept(int *user, int *net)
{
	bool ok = false;

	pthread_mutex_lock(&kept_lock);
	if (kept_user >= 0) {
		*user = fcntl(kept_user, F_DUPFD_CLOEXEC, 3);
		*net = *user >= 0 ? fcntl(kept_net, F_DUPFD_CLOEXEC, 3) : -1;
		ok = *user >= 0 && *net >= 0;
		if (!ok && *user >= 0)
			close(*user);
	}
	pthread_mutex_unlock(&kept_lock);
	return ok;
}

/* Entering them failed: make new ones from now on, and keep those. */
static void ns_forget(void)
{
	pthread_mutex_lock(&kept_lock);
	if (kept_user >= 0)
		close(kept_user);
	if (kept_net >= 0)
		close(kept_net);
	kept_user = kept_net = -1;
	pthread_mutex_unlock(&kept_lock);
}

/*
 * On the caller's memory (clone_shared): enter the kept user and network
 * namespaces, then make PID 1 in new mount, PID and IPC namespaces -- the
 * caller's child (CLONE_PARENT), which becomes forge-sandbox-init -- and
 * say its pid in the plan.  A failure is reported as ST_JOIN: nothing has
 * run, and the caller makes new namespaces instead.
 */
static int join_child(void *plan)
{
	struct child_plan *p = plan;
	pid_t pid;

	if (setns(p->join_user, CLONE_NEWUSER) < 0 || setns(p->join_net, CLONE_NEWNET) < 0)
		child_fail(p->t.rep_fd, ST_JOIN, errno);
	pid = clone_shared_flags(init_child, p, CLONE_PARENT | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC);
	if (pid < 0)
		child_fail(p->t.rep_fd, ST_JOIN, errno);
	p->joined = pid;
	_exit(0);
}


static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void add_limit(struct child_plan *p, int res, unsigned long long want, bool cpu)
{
	struct rlimit cur, rl;

	if (!want || getrlimit(res, &cur) < 0)
		return;
	rl.rlim_cur = want;
	if (cur.rlim_max != RLIM_INFINITY && rl.rlim_cur > cur.rlim_max)
		rl.rlim_cur = cur.rlim_max;
	rl.rlim_max = rl.rlim_cur;
	if (cpu) {
		/* SIGXCPU at the soft limit, SIGKILL 5 s later. */
		rl.rlim_max = rl.rlim_cur + 5;
		if (cur.rlim_max != RLIM_INFINITY && rl.rlim_max > cur.rlim_max)
			rl.rlim_max = cur.rlim_max;
	}
	assert(p->t.nrl < CMD_TAIL_LIMITS);
	p->t.rl[p->t.nrl].res = res;
	p->t.rl[p->t.nrl].rl = rl;
	p->t.nrl++;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void note_unconfined(struct proc_result *r, int stage, int err)
{
	size_t len = strlen(r->unconfined);
	int n = snprintf(r->unconfined + len, sizeof(r->unconfined) - len, "%s%s: %s",
			 len ? "; " : "", stage_name(stage), strerror(err));
	(void)n;
}

static void __attribute__((format(printf, 2, 3))) note_text(struct proc_result *r, const char *fmt, ...)
{
	size_t len = strlen(r->unconfined);
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(r->unconfined + len, sizeof(r->unconfined) - len, "%s%s", len ? "; " : "", msg);
}

/* Write to a pipe whose reader may be gone without raising SIGPIPE. */
static void write_nosigpipe(int fd, const void *p, size_t n)
{
	sigset_t set, saved, pend;
	bool was_pending;
	struct timespec zero = { 0, 0 };

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigpending(&pend);
	was_pending = sigismember(&pend, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, &saved);
	if (write(fd, p, n) < 0 && errno == EPIPE && !was_pending)
		sigtimedwait(&set, NULL, &zero);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
}

void proc_result_release(struct proc_result *r)
{
	if (!r)
		return;
	buf_release(&r->out);
	buf_release(&r->err);
}

int proc_run(struct proc_result *r, const struct proc_opts *o)
{
	struct child_plan plan;
	struct capture cap_out, cap_err;
	struct lines lines_out = { .cb = o->on_stdout }, lines_err = { .cb = o->on_stderr };
	size_t max_line = o->max_line ? o->max_line : 16u << 20;
	int in_pipe[2] = { -1, -1 }, out_pipe[2] = { -1, -1 }, err_pipe[2] = { -1, -1 };
	int rep_pipe[2] = { -1, -1 }, status_pipe[2] = { -1, -1 }, go_pipe[2] = { -1, -1 };
	int null_fd = -1, pidfd = -1;
	struct cgroup_pids cg = { .procs_fd = -1 };
	struct nsview view = { 0 };
	sigset_t all, old, pipeset, pipe_saved;
	bool pipe_was_pending = false, pipe_blocked = false, exited = false, killed_term = false;
	size_t in_off = 0;
	long start = now_ms(), deadline, kill_at = 0, drain_until = 0;
	pid_t pid = -1, target = -1; /* target: what kill() signals, the group or the child */
	unsigned kills_seen = 0;     /* kill_requests when the child was put in the table */
	int rc = -1, st = 0;
	bool keep = false;       /* keep this PID 1's user and network namespaces (ns_keep) */

	memset(r, 0, sizeof(*r));
	buf_init(&lines_out.line, 0);
	buf_init(&lines_err.line, 0);
	buf_init(&r->out, 0);
	buf_init(&r->err, 0);
	sigemptyset(&pipeset);
	sigaddset(&pipeset, SIGPIPE);
	capture_init(&cap_out, o->out_cap, o->cut_count);
	capture_init(&cap_err, o->out_cap, NULL);
	memset(&plan, 0, sizeof(plan));
	if (!o->argv || !o->argv[0]) {
		forge_error("proc: no program to run");
		goto out;
	}
	if (o->input) {
		if (pipe2(in_pipe, O_CLOEXEC) < 0) {
			forge_error("proc: pipe: %s", strerror(errno));
			goto out;
		}
	} else if ((null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		forge_error("proc: cannot open '/dev/null': %s", strerror(errno));
		goto out;
	}
	if (pipe2(out_pipe, O_CLOEXEC) < 0 || (!o->merge_stderr && pipe2(err_pipe, O_CLOEXEC) < 0) ||
	    ((o->new_ns || o->contain) && pipe2(status_pipe, O_CLOEXEC) < 0)) {
		forge_error("proc: pipe: %s", strerror(errno));
		goto out;
	}
	plan.o = o;
	plan.in_fd = o->input ? in_pipe[0] : null_fd;
	plan.out_fd = out_pipe[1];
	plan.err_fd = o->merge_stderr ? out_pipe[1] : err_pipe[1];
	plan.priv = netns_privileged();
	plan.uid = getuid();
	plan.gid = getgid();
	plan.t.envp = o->envp ? o->envp : environ;
	plan.t.go_fd = -1;
	plan.t.join_fd = -1;
	plan.parent_fds[0] = plan.parent_fds[1] = -1;
	plan.t.status_fd = status_pipe[1];
	plan.t.cwd = o->cwd;
	plan.t.landlock_fd = o->landlock_fd;
	plan.t.landlock_required = o->landlock_required;
	plan.t.deny_keys = o->deny_keys;
	plan.t.deny_net = o->deny_net;
	plan.t.deny_unix = o->deny_unix;
	plan.t.direct_path = o->direct_path;
	plan.t.direct_argv = (char *const *)o->direct_argv;
	plan.t.direct_envp = o->direct_envp;
	plan.t.argv = (char *const *)o->argv;
	plan.init_fd = -1;
	plan.join_user = plan.join_net = -1;
	plan.joined = -1;
	add_limit(&plan, RLIMIT_CPU, o->limits.cpu_s, true);
	add_limit(&plan, RLIMIT_AS, o->limits.as_bytes, false);
	add_limit(&plan, RLIMIT_FSIZE, o->limits.fsize_bytes, false);
	add_limit(&plan, RLIMIT_NOFILE, o->limits.nofile, false);
	add_limit(&plan, RLIMIT_NPROC, o->limits.nproc, false);
	if (o->limits.nproc) {
		const char *why = NULL;
		if (cgroup_pids_new(&cg, o->limits.nproc, &why) < 0 && geteuid() == 0)
			note_text(r, "processes: not limited for root (no pids cgroup: %s)", why);
		else if (cg.self)
			plan.t.join_fd = cg.procs_fd;
	}
	if (o->new_ns && o->view) {
		nsview_prepare(&view, o->view, o->nview);
		plan.view = &view;
	}
	plan.ns = o->new_ns;

attempt:
	if (pipe2(rep_pipe, O_CLOEXEC) < 0 || (cg.procs_fd >= 0 && !cg.self && pipe2(go_pipe, O_CLOEXEC) < 0)) {
		forge_error("proc: pipe: %s", strerror(errno));
		goto out;
	}
	plan.t.rep_fd = rep_pipe[1];
	plan.t.go_fd = go_pipe[0];
	plan.parent_fds[0] = rep_pipe[0];
	plan.parent_fds[1] = go_pipe[1];
	fflush(NULL);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	cmd_tail_encoded_free(plan.init_argv);
	plan.init_argv = NULL;
	plan.init_fd = plan.ns ? init_program() : -1;
	close_fd(&plan.join_user);
	close_fd(&plan.join_net);
	plan.joined = -1;
	keep = false;
	if (plan.init_fd >= 0 && o->new_netns && ns_kept(&plan.join_user, &plan.join_net)) {
		pid_t a;
		int ast;

		plan.init_argv = cmd_tail_encode(&plan.t);
		if ((a = clone_shared(join_child, &plan)) > 0)
			while (waitpid(a, &ast, 0) < 0 && errno == EINTR)
				;
		if (plan.joined > 0) {
			pid = plan.joined;
		} else {
			/* new namespaces below; its report (ST_JOIN) is not theirs */
			struct child_rec junk;
			int fl = fcntl(rep_pipe[0], F_GETFL);

			fcntl(rep_pipe[0], F_SETFL, fl | O_NONBLOCK);
			while (read(rep_pipe[0], &junk, sizeof junk) > 0)
				;
			fcntl(rep_pipe[0], F_SETFL, fl);
			ns_forget();
			close_fd(&plan.join_user);
			close_fd(&plan.join_net);
			cmd_tail_encoded_free(plan.init_argv);
			plan.init_argv = NULL;
		}
	}
	if (plan.init_fd >= 0 && plan.joined <= 0) {
		unsigned long flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC |
				      (o->new_netns ? CLONE_NEWNET : 0);
		if (!plan.init_argv)
			plan.init_argv = cmd_tail_encode(&plan.t);
		/* (ENOSYS under ASan: below as without it) */
		if ((pid = clone_shared_flags(init_child, &plan, flags)) < 0)
			plan.init_fd = -1;
		else
			keep = o->new_netns;
	}
	if (plan.init_fd >= 0) {
		/* forge-sandbox-init is PID 1 */
	} else if (plan.ns) {
		unsigned long flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC |
				      (o->new_netns ? CLONE_NEWNET : 0) | SIGCHLD;
		pid = (pid_t)syscall(SYS_clone, flags, NULL, NULL, NULL, NULL);
		if (pid < 0 && !o->ns_required) {
			note_text(r, "namespaces: clone: %s", strerror(errno));
			if (o->ns_no_fallback) {
				pthread_sigmask(SIG_SETMASK, &old, NULL);
				r->ns_failed = true;
				forge_error("cannot make namespaces: %s", r->unconfined);
				goto out;
			}
			plan.ns = false;
			pid = fork();
		}
	} else if (o->new_netns || o->contain || plan.t.go_fd >= 0 ||
		   (pid = clone_shared(shared_child, &plan)) < 0) {
		/* a network namespace may be a user namespace too; the go pipe
		 * would have the child wait for a parent asleep until it execs;
		 * the reaper never execs */
		pid = fork();
	}
	if (pid == 0)
		child_main(&plan);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		if (plan.ns)
			forge_error("cannot apply namespaces: clone: %s (required by the configuration)",
				    strerror(errno));
		else
			forge_error("proc: fork: %s", strerror(errno));
		goto out;
	}
	target = o->keep_pgrp ? pid : -pid;
	if (!o->keep_pgrp)
		setpgid(pid, pid);
	kills_seen = __atomic_load_n(&kill_requests, __ATOMIC_SEQ_CST);
	running_add(target);
	close_fd(&rep_pipe[1]);
	close_fd(&go_pipe[0]);
	if (go_pipe[1] >= 0) {
		char num[24];
		int n = snprintf(num, sizeof(num), "%ld\n", (long)pid);
		if (write(cg.procs_fd, num, (size_t)n) < 0)
			note_text(r, "processes: cannot join the pids cgroup: %s", strerror(errno));
		write_nosigpipe(go_pipe[1], "g", 1);	/* the child may have died: its report says why */
		close_fd(&go_pipe[1]);
	}

	/* The report pipe closes at exec; read what the child said before. */
	for (;;) {
		struct child_rec rec;
		ssize_t n = read(rep_pipe[0], &rec, sizeof(rec));
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(rec))
			break;
		if (rec.kind == REC_FATAL) {
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
			running_del(target);
			pid = -1;
			close_fd(&rep_pipe[0]);
			close_fd(&go_pipe[0]);
			close_fd(&go_pipe[1]);
			if (rec.stage == ST_INIT) {
				/* nothing ran: again as without it, from now on */
				__atomic_store_n(&init_program_broken, true, __ATOMIC_RELAXED);
				goto attempt;
			}
			if (plan.ns && rec.stage > ST_NS && !o->ns_required) {
				/* Run it as without namespaces, and say so. */
				note_unconfined(r, rec.stage, rec.err);
				if (o->ns_no_fallback) {
					r->ns_failed = true;
					forge_error("cannot make namespaces: %s", r->unconfined);
					goto out;
				}
				plan.ns = false;
				goto attempt;
			}
			if (rec.stage == ST_EXEC)
				forge_error("cannot run '%s': %s", o->argv[0], strerror(rec.err));
			else if (rec.stage == ST_CHDIR)
				forge_error("cannot run in '%s': %s", o->cwd ? o->cwd : ".",
					    strerror(rec.err));
			else
				forge_error("cannot apply %s: %s (required by the configuration)",
					    stage_name(rec.stage), strerror(rec.err));
			goto out;
		}
		note_unconfined(r, rec.stage, rec.err);
		keep = false;   /* (a loopback not up: the next command makes its own) */
	}
	/* Kept once the command runs with them whole: a PID 1 that failed to
	 * write its id maps left a user namespace no later command could use. */
	if (keep)
		ns_keep(pid);
	close_fd(&in_pipe[0]);
	close_fd(&null_fd);
	close_fd(&out_pipe[1]);
	close_fd(&err_pipe[1]);
	close_fd(&status_pipe[1]);
	close_fd(&rep_pipe[0]);

	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (o->on_started)
		o->on_started(o->payload);
	if (o->input) {
		sigset_t pend;

		fcntl(in_pipe[1], F_SETFL, fcntl(in_pipe[1], F_GETFL) | O_NONBLOCK);
		sigpending(&pend);
		pipe_was_pending = sigismember(&pend, SIGPIPE);
		pthread_sigmask(SIG_BLOCK, &pipeset, &pipe_saved);
		pipe_blocked = true;
		if (o->input_len == 0)
			close_fd(&in_pipe[1]);
	}
	deadline = o->timeout_ms > 0 ? start + o->timeout_ms : 0;

	while (out_pipe[0] >= 0 || err_pipe[0] >= 0 || !exited) {
		struct pollfd pf[4];
		int nf = 0, wait_ms = -1, idx_in = -1, idx_out = -1, idx_err = -1, idx_pid = -1;
		long t = now_ms();
		char chunk[65536];

		if (!exited) {
			siginfo_t si;
			memset(&si, 0, sizeof(si));
			if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
			    si.si_pid == pid) {
				exited = true;
				/* Leftovers of the group die with the leader. */
				if (!o->keep_pgrp)
					kill(-pid, SIGKILL);
				drain_until = t + 2000;
			}
		}
		if (exited && (t >= drain_until || (out_pipe[0] < 0 && err_pipe[0] < 0)))
			break;
		if (!exited && deadline && t >= deadline && !r->timed_out) {
			r->timed_out = true;
			kill(target, SIGTERM);
			killed_term = true;
			kill_at = t + (o->kill_grace_ms > 0 ? o->kill_grace_ms : 0);
			/* a reaper ends the command after the grace itself, and
			 * what it left with it: it goes first */
			if (o->contain && !plan.ns)
				kill_at += 3000;
		}
		/* signalled by proc_kill_running(): SIGKILL after the grace */
		if (!exited && !killed_term && !o->keep_pgrp &&
		    __atomic_load_n(&kill_requests, __ATOMIC_SEQ_CST) != kills_seen) {
			killed_term = true;
			kill_at = t + (o->kill_grace_ms > 0 ? o->kill_grace_ms : 0);
			if (o->contain && !plan.ns)
				kill_at += 3000;
		}
		if (!exited && killed_term && t >= kill_at) {
			kill(target, SIGKILL);
			kill_at = t + 1000;
		}
		if (in_pipe[1] >= 0) {
			idx_in = nf;
			pf[nf++] = (struct pollfd){ .fd = in_pipe[1], .events = POLLOUT };
		}
		if (out_pipe[0] >= 0) {
			idx_out = nf;
			pf[nf++] = (struct pollfd){ .fd = out_pipe[0], .events = POLLIN };
		}
		if (err_pipe[0] >= 0) {
			idx_err = nf;
			pf[nf++] = (struct pollfd){ .fd = err_pipe[0], .events = POLLIN };
		}
		if (!exited && pidfd >= 0) {
			idx_pid = nf;
			pf[nf++] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
		}
		if (exited)
			wait_ms = (int)(drain_until - t);
		else if (killed_term)
			wait_ms = (int)(kill_at - t);
		else if (deadline)
			wait_ms = (int)(deadline - t);
		if (pidfd < 0 && !exited && (wait_ms < 0 || wait_ms > 50))
			wait_ms = 50;
		/* (a proc_kill_running() is seen within 250 ms) */
		if (!exited && !killed_term && !o->keep_pgrp && (wait_ms < 0 || wait_ms > 250))
			wait_ms = 250;
		if (wait_ms < 0 && (exited || killed_term || deadline))
			wait_ms = 0;
		int ready = o->on_idle ? poll(pf, (nfds_t)nf, 0) : 0;
		if (ready == 0) {
			if (o->on_idle)
				o->on_idle(o->payload);	/* nothing to read right now */
			ready = poll(pf, (nfds_t)nf, wait_ms);
		}
		if (ready < 0) {
			if (errno == EINTR)
				continue;
			forge_error("proc: poll: %s", strerror(errno));
			break;
		}
		(void)idx_pid;
		if (idx_in >= 0 && pf[idx_in].revents) {
			ssize_t w = write(in_pipe[1], o->input + in_off, o->input_len - in_off);
			if (w > 0)
				in_off += (size_t)w;
			if ((w < 0 && errno != EAGAIN && errno != EINTR) || in_off >= o->input_len)
				close_fd(&in_pipe[1]);
		}
		if (idx_out >= 0 && pf[idx_out].revents) {
			ssize_t n = read(out_pipe[0], chunk, sizeof(chunk));
			if (n > 0 && lines_out.cb)
				lines_feed(&lines_out, chunk, (size_t)n, max_line, o->payload);
			else if (n > 0)
				capture_add(&cap_out, chunk, (size_t)n);
			else if (n == 0 || (errno != EINTR && errno != EAGAIN))
				close_fd(&out_pipe[0]);
		}
		if (idx_err >= 0 && pf[idx_err].revents) {
			ssize_t n = read(err_pipe[0], chunk, sizeof(chunk));
			if (n > 0 && lines_err.cb)
				lines_feed(&lines_err, chunk, (size_t)n, max_line, o->payload);
			else if (n > 0)
				capture_add(&cap_err, chunk, (size_t)n);
			else if (n == 0 || (errno != EINTR && errno != EAGAIN))
				close_fd(&err_pipe[0]);
		}
	}
	if (!exited)
		kill(target, SIGKILL);
	lines_flush(&lines_out, o->payload);
	lines_flush(&lines_err, o->payload);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	running_del(target);
	pid = -1;
	if (status_pipe[0] >= 0) {
		/* PID 1 of a namespace passes on how the command ended. */
		int cst;
		if (read(status_pipe[0], &cst, sizeof(cst)) == (ssize_t)sizeof(cst))
			st = cst;
	}
	if (WIFEXITED(st)) {
		r->exit_code = WEXITSTATUS(st);
	} else if (WIFSIGNALED(st)) {
		r->term_signal = WTERMSIG(st);
		r->exit_code = 128 + r->term_signal;
	}
	rc = 0;
out:
	if (pipe_blocked) {
		close_fd(&in_pipe[1]);
		if (!pipe_was_pending) {
			sigset_t pend;
			struct timespec zero = { 0, 0 };
			sigpending(&pend);
			if (sigismember(&pend, SIGPIPE))
				sigtimedwait(&pipeset, NULL, &zero);
		}
		pthread_sigmask(SIG_SETMASK, &pipe_saved, NULL);
	}
	if (pid > 0) {
		kill(target, SIGKILL);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		running_del(target);
	}
	buf_release(&lines_out.line);
	buf_release(&lines_err.line);
	close_fd(&in_pipe[0]);
	close_fd(&in_pipe[1]);
	close_fd(&out_pipe[0]);
	close_fd(&out_pipe[1]);
	close_fd(&err_pipe[0]);
	close_fd(&err_pipe[1]);
	close_fd(&rep_pipe[0]);
	close_fd(&rep_pipe[1]);
	close_fd(&null_fd);
	close_fd(&pidfd);
	close_fd(&status_pipe[0]);
	close_fd(&status_pipe[1]);
	close_fd(&go_pipe[0]);
	close_fd(&go_pipe[1]);
	cmd_tail_encoded_free(plan.init_argv);
	close_fd(&plan.join_user);
	close_fd(&plan.join_net);
	cgroup_pids_free(&cg);
	nsview_release(&view);
	r->out_bytes = cap_out.total;
	r->err_bytes = cap_err.total;
	capture_finish(&r->out, &r->out_cut_counted, &cap_out);
	capture_finish(&r->err, NULL, &cap_err);
	r->duration_ms = now_ms() - start;
	return rc;
}

/* The first n - 1 bytes of file path, NUL-terminated: its length, or -1. */
static ssize_t read_small(char *out, size_t n, const char *path)
{
	ssize_t got = -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		got = read(fd, out, n - 1);
		close(fd);
	}
	out[got > 0 ? got : 0] = '\0';
	return got;
}

bool proc_start_id(char out[static PROC_START_ID_LEN], pid_t pid)
{
	char path[64], stat[1024], boot[64];
	unsigned long long ticks;
	char *p, *end;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	if (pid < 1 || read_small(stat, sizeof stat, path) <= 0)
		return false;
	/* "PID (COMM) STATE ...": COMM may hold spaces and parentheses, so
	 * the fields are counted from its last ')'; field 22 is starttime */
	p = strrchr(stat, ')');
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return false;
	errno = 0;
	ticks = strtoull(p + 1, &end, 10);
	if (end == p + 1 || errno)
		return false;
	if (read_small(boot, sizeof boot, "/proc/sys/kernel/random/boot_id") <= 0)
		snprintf(boot, sizeof boot, "-");
	boot[strcspn(boot, "\n")] = '\0';
	snprintf(out, PROC_START_ID_LEN, "%s/%llu", boot, ticks);
	return true;
}

bool proc_exited(pid_t pid)
{
	char path[64], stat[1024];
	const char *p;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	if (pid < 1 || read_small(stat, sizeof stat, path) <= 0)
		return false;
	/* "PID (COMM) STATE ...": the state follows COMM's last ')' */
	p = strrchr(stat, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X' || p[2] == 'x');
}

int proc_signal_same(pid_t pid, const char *id, int sig)
{
	char now[PROC_START_ID_LEN];
	int fd, rc;

	/* the pidfd names the process pid is now; if that process still has
	 * the identity after the fd was opened, the fd is the holder's */
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0 && errno == ESRCH)
		return -1;
	if (!id || !proc_start_id(now, pid) || strcmp(now, id) != 0) {
		if (fd >= 0)
			close(fd);
		errno = ESRCH;
		return -1;
	}
	if (fd < 0)
		return kill(pid, sig);
	rc = (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
	if (rc < 0 && errno == ENOSYS)
		rc = kill(pid, sig);
	int saved = errno;

	close(fd);
	errno = saved;
	return rc;
}
