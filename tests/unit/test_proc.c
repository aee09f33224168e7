/* test_proc.c - child processes: timeout, process groups, output cap,
 * rlimits, Landlock and the network namespace (lib/os/proc.h, lib/os/landlock.h). */
#include "core/forge.h"
#include "os/landlock.h"
#include "os/nsview.h"
#include "os/proc.h"
#include "os/spawn.h"
#include "unit.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmp[128];

static int sh(struct proc_result *r, struct proc_opts *o, const char *cmd)
{
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	o->argv = argv;
	return proc_run(r, o);
}

static void test_exit_and_signal(void)
{
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;

	CHECK(sh(&r, &o, "echo out; echo err >&2; exit 7") == 0);
	CHECK_INT(r.exit_code, 7);
	CHECK_STR(r.out.buf, "out\n");
	CHECK_STR(r.err.buf, "err\n");
	CHECK(!r.timed_out);
	proc_result_release(&r);
	CHECK(sh(&r, &o, "kill -USR1 $$") == 0);
	CHECK_INT(r.term_signal, SIGUSR1);
	CHECK_INT(r.exit_code, 128 + SIGUSR1);
	proc_result_release(&r);
	o.merge_stderr = true;
	CHECK(sh(&r, &o, "echo a; echo b >&2; echo c") == 0);
	CHECK_STR(r.out.buf, "a\nb\nc\n");
	proc_result_release(&r);
}

static void on_signal(int sig)
{
	(void)sig;
}

/* The command starts with every signal at SIG_DFL, whatever the caller
 * ignores or catches (real-time signals, above bit 32, included), with
 * namespaces (PID 1 a copy of this process or forge-sandbox-init) and
 * without: a signal ignored here would stay ignored across its exec. */
static void test_signals_default(void)
{
	const int ign = SIGRTMIN + 4, cgt = SIGRTMAX - 1;
	struct sigaction sa, old_ign, old_cgt, old_usr, old_pipe;
	unsigned long reserved_old[2][8] = { { 0 } };
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;
	const char *why;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	sigaction(ign, &sa, &old_ign);
	sigaction(SIGUSR1, &sa, &old_usr);
	sigaction(SIGPIPE, &sa, &old_pipe);
	sa.sa_handler = on_signal;
	sigaction(cgt, &sa, &old_cgt);
	/* glibc's own signals (32, 33), ignored the only way there is, the
	 * system call: sigaction() refuses them (seen ignored under CI) */
	for (int sig = 32; sig < SIGRTMIN && sig < 34; sig++) {
		unsigned long ignore[8] = { (unsigned long)SIG_IGN };

		CHECK(syscall(SYS_rt_sigaction, sig, NULL, reserved_old[sig - 32], (size_t)8) == 0);
		CHECK(syscall(SYS_rt_sigaction, sig, ignore, NULL, (size_t)8) == 0);
	}
	for (int ns = 0; ns < 2; ns++) {
		if (ns && !nsview_available(&why))
			break;
		o.new_ns = o.ns_required = ns;
		/* (cat: grep catches SIGSEGV itself) */
		CHECK(sh(&r, &o, "exec cat /proc/self/status") == 0);
		CHECK_MSG(strstr(r.out.buf, "\nSigIgn:\t0000000000000000\nSigCgt:\t0000000000000000\n"),
			  "namespaces %d: %s", ns, r.out.buf);
		proc_result_release(&r);
	}
	sigaction(ign, &old_ign, NULL);
	sigaction(SIGUSR1, &old_usr, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	sigaction(cgt, &old_cgt, NULL);
	for (int sig = 32; sig < SIGRTMIN && sig < 34; sig++)
		(void)syscall(SYS_rt_sigaction, sig, reserved_old[sig - 32], NULL, (size_t)8);
}

static void test_stdin_and_env(void)
{
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;
	char *env[] = { "ONLY=this", "PATH=/usr/bin:/bin", NULL };
	static char big[300000];

	memset(big, 'x', sizeof(big));
	o.input = big;
	o.input_len = sizeof(big);
	o.envp = env;
	/* More input than a pipe holds, read while output is produced. */
	CHECK(sh(&r, &o, "wc -c; echo $ONLY; echo ${HOME:-nohome}") == 0);
	CHECK_STR(r.out.buf, "300000\nthis\nnohome\n");
	proc_result_release(&r);
	/* A child that does not read its input: no SIGPIPE in the parent. */
	CHECK(sh(&r, &o, "exit 0") == 0);
	CHECK_INT(r.exit_code, 0);
	proc_result_release(&r);
	/* stdin is /dev/null without input */
	o.input = NULL;
	CHECK(sh(&r, &o, "cat; echo end") == 0);
	CHECK_STR(r.out.buf, "end\n");
	proc_result_release(&r);
}

static bool alive(const char *pidfile)
{
	FILE *f = fopen(pidfile, "r");
	long pid = 0;
	if (!f)
		return false;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = 0;
	fclose(f);
	if (pid <= 0)
		return false;
	/* a zombie (killed, waiting for init to reap it) counts as dead */
	{
		char path[64], stat[256];
		FILE *sf;
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		if (!(sf = fopen(path, "r")))
			return false;
		if (!fgets(stat, sizeof(stat), sf))
			stat[0] = '\0';
		fclose(sf);
		return !strstr(stat, ") Z ");
	}
}

static void test_timeout_kills_group(void)
{
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;
	char cmd[512], pf[200], gpf[200];

	snprintf(pf, sizeof(pf), "%s/child.pid", tmp);
	snprintf(gpf, sizeof(gpf), "%s/grandchild.pid", tmp);
	/* A child and a grandchild that ignore nothing, plus a shell that traps TERM. */
	snprintf(cmd, sizeof(cmd),
		 "trap '' TERM; sh -c 'sleep 60 & echo $! > %s; sleep 60' & echo $! > %s; wait",
		 gpf, pf);
	o.timeout_ms = 300;
	o.kill_grace_ms = 200;
	CHECK(sh(&r, &o, cmd) == 0);
	CHECK(r.timed_out);
	CHECK_INT(r.term_signal, SIGKILL);   /* the shell ignored SIGTERM */
	CHECK(r.duration_ms < 5000);
	proc_result_release(&r);
	usleep(100000);
	CHECK(!alive(pf));
	CHECK(!alive(gpf));
}

static void test_leftovers_killed_on_exit(void)
{
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;
	char cmd[600], pf[200];

	snprintf(pf, sizeof(pf), "%s/bg.pid", tmp);
	snprintf(cmd, sizeof(cmd), "sleep 60 >/dev/null 2>&1 & echo $! > %s; echo done", pf);
	CHECK(sh(&r, &o, cmd) == 0);
	CHECK_STR(r.out.buf, "done\n");
	CHECK(r.duration_ms < 2000);
	proc_result_release(&r);
	usleep(100000);
	CHECK(!alive(pf));
}

/* The pid in pidfile, or 0. */
static pid_t pid_in(const char *pidfile)
{
	FILE *f = fopen(pidfile, "r");
	long pid = 0;

	if (f) {
		if (fscanf(f, "%ld", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	return (pid_t)pid;
}

/*
 * contain without namespaces: what the command detaches (setsid, a double
 * fork) is ended, and reaped, before proc_run() returns -- no wait needed.
 * Each escapee writes its pid and the command waits for the file, so the
 * escapees exist when the command ends.
 */
static void test_contain_ends_detached(void)
{
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;
	char cmd[2400], a[200], b[200];

	snprintf(a, sizeof(a), "%s/setsid.pid", tmp);
	snprintf(b, sizeof(b), "%s/double.pid", tmp);
	unlink(a);
	unlink(b);
	snprintf(cmd, sizeof(cmd),
		 "setsid sh -c 'echo $$ > %s.t && mv %s.t %s && exec sleep 30' >/dev/null 2>&1 & "
		 "(sh -c 'echo $$ > %s.t && mv %s.t %s && exec sleep 30' >/dev/null 2>&1 &); "
		 "while [ ! -s %s ] || [ ! -s %s ]; do sleep 0.01; done; echo started; exit 3",
		 a, a, a, b, b, b, a, b);
	o.contain = true;
	CHECK(sh(&r, &o, cmd) == 0);
	CHECK_STR(r.out.buf, "started\n");
	CHECK_INT(r.exit_code, 3);	/* the command's status, through the reaper */
	proc_result_release(&r);
	CHECK(pid_in(a) > 0 && pid_in(b) > 0);
	/* (without the reaper both keep sleeping, children of init) */
	CHECK_MSG(kill(pid_in(a), 0) < 0 && errno == ESRCH, "the setsid one is alive");
	CHECK_MSG(kill(pid_in(b), 0) < 0 && errno == ESRCH, "the double-forked one is alive");

	/* a signal that ends the command is its status too */
	CHECK(sh(&r, &o, "kill -9 $$") == 0);
	CHECK_INT(r.term_signal, SIGKILL);
	CHECK_INT(r.exit_code, 128 + SIGKILL);
	proc_result_release(&r);
}

/* contain, timed out: SIGTERM on to the command, SIGKILL after the grace,
 * and what it detached (ignoring SIGTERM too) ends with it. */
static void test_contain_timeout(void)
{
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;
	char cmd[1200], a[200];

	snprintf(a, sizeof(a), "%s/stubborn.pid", tmp);
	unlink(a);
	snprintf(cmd, sizeof(cmd),
		 "trap '' TERM; setsid sh -c 'trap \"\" TERM; echo $$ > %s.t && mv %s.t %s && exec sleep 30' & "
		 "while [ ! -s %s ]; do sleep 0.01; done; sleep 30",
		 a, a, a, a);
	o.contain = true;
	o.timeout_ms = 300;
	o.kill_grace_ms = 200;
	CHECK(sh(&r, &o, cmd) == 0);
	CHECK(r.timed_out);
	CHECK_INT(r.term_signal, SIGKILL);	/* the shell ignored SIGTERM */
	proc_result_release(&r);
	CHECK(pid_in(a) > 0);
	CHECK_MSG(kill(pid_in(a), 0) < 0 && errno == ESRCH, "the detached one is alive");
}

static bool ends_in_7(const char *line, size_t len)
{
	return len > 0 && line[len - 1] == '7';
}

static void test_output_cap_head_tail(void)
{
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;

	o.out_cap = 1000;
	CHECK(sh(&r, &o, "seq 1 10000") == 0);
	CHECK_INT(r.out_bytes, 48894);
	CHECK(r.out.len < 1100);
	CHECK(!strncmp(r.out.buf, "1\n2\n3\n", 6));
	CHECK(strstr(r.out.buf, "\n9999\n10000\n"));
	CHECK(strstr(r.out.buf, "bytes omitted \xe2\x80\xa6]\n"));
	{
		/* the numbers around the cut are whole lines, and the count adds up */
		const char *m = strstr(r.out.buf, "[\xe2\x80\xa6 ");
		size_t omitted = (size_t)strtoul(m + 5, NULL, 10);
		size_t marker = (size_t)(strchr(m, '\n') + 1 - m);
		CHECK(m[-1] == '\n');
		CHECK_INT(omitted + r.out.len - marker, r.out_bytes);
	}
	proc_result_release(&r);
	/* under the cap: untouched */
	CHECK(sh(&r, &o, "seq 1 10") == 0);
	CHECK(!strstr(r.out.buf, "omitted"));
	CHECK_INT(r.out_cut_counted, 0);
	proc_result_release(&r);
	/* cut_count: the lines of the omitted middle it says yes to are
	 * counted, those kept are not (1000 numbers of 1..10000 end in 7) */
	o.cut_count = ends_in_7;
	CHECK(sh(&r, &o, "seq 1 10000") == 0);
	size_t kept = 0;
	for (const char *l = r.out.buf, *nl; (nl = strchr(l, '\n')) != NULL; l = nl + 1)
		kept += ends_in_7(l, (size_t)(nl - l));
	CHECK(kept > 10 && kept < 100);
	CHECK_INT(r.out_cut_counted, 1000 - kept);
	proc_result_release(&r);
}

static void test_exec_failure(void)
{
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;
	const char *argv[] = { "/nonexistent/program", NULL };

	o.argv = argv;
	CHECK(proc_run(&r, &o) < 0);
	CHECK(strstr(forge_last_error(), "cannot run '/nonexistent/program'"));
	proc_result_release(&r);
	o.argv = NULL;
	{
		const char *a2[] = { "/bin/true", NULL };
		o.argv = a2;
		o.cwd = "/nonexistent-dir";
		CHECK(proc_run(&r, &o) < 0);
		CHECK(strstr(forge_last_error(), "cannot run in '/nonexistent-dir'"));
		proc_result_release(&r);
	}
}

static void test_rlimits(void)
{
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;
	char cmd[600];

	o.limits.fsize_bytes = 4096;
	o.limits.nofile = 64;
	o.merge_stderr = true;
	snprintf(cmd, sizeof(cmd), "ulimit -n; head -c 100000 /dev/zero > %s/big; ls -l %s/big | awk '{print $5}'", tmp, tmp);
	CHECK(sh(&r, &o, cmd) == 0);
	CHECK_MSG(!strncmp(r.out.buf, "64\n", 3), "%s", r.out.buf);
	CHECK_MSG(strstr(r.out.buf, "\n4096\n"), "%s", r.out.buf);
	proc_result_release(&r);
}

static void test_landlock_confines_writes(void)
{
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;
	struct landlock_ruleset *rs;
	char inside[160], cmd[600];
	char out_tmpl[] = "/tmp/forge-ll-out-XXXXXX", *outside = mkdtemp(out_tmpl);
	const char *writable[] = { inside, NULL };

	if (landlock_abi() < 1)
		SKIP("no Landlock on this kernel");
	snprintf(inside, sizeof(inside), "%s/wt", tmp);
	CHECK(mkdir(inside, 0755) == 0);
	CHECK(landlock_ruleset_new(&rs, writable) == 0);
	o.landlock_fd = rs->fd;
	o.landlock_required = true;
	o.merge_stderr = true;
	snprintf(cmd, sizeof(cmd),
		 "echo ok > %s/in && echo in=$?; echo x > %s/out; echo out=$?; echo y > /dev/null && echo null=$?; "
		 "cat /etc/hostname >/dev/null && echo read=$?",
		 inside, outside);
	CHECK(sh(&r, &o, cmd) == 0);
	CHECK_MSG(strstr(r.out.buf, "in=0\n"), "%s", r.out.buf);
	CHECK_MSG(strstr(r.out.buf, "Permission denied"), "%s", r.out.buf);
	CHECK(strstr(r.out.buf, "out=2\n"));
	CHECK(strstr(r.out.buf, "null=0\n"));
	CHECK(strstr(r.out.buf, "read=0\n"));
	CHECK(r.unconfined[0] == '\0');
	proc_result_release(&r);
	landlock_ruleset_free(rs);
	snprintf(cmd, sizeof(cmd), "%s/out", outside);
	CHECK(access(cmd, F_OK) != 0);

	/* a writable path must be a directory (the kernel is asked first:
	 * it refuses a directory's rights on a file) */
	{
		const char *file[] = { "/etc/hostname", NULL };
		CHECK(landlock_ruleset_new(&rs, file) < 0 && rs == NULL);
		CHECK_MSG(strstr(forge_last_error(), "'/etc/hostname' is not a directory"), "%s",
			  forge_last_error());
	}

	/* reads confined too: only beneath readable and writable paths */
	{
		const char *readable[] = { "/usr", "/bin", "/lib", "/lib64", "/etc/hostname", NULL };
		struct landlock_spec spec = { .writable = writable, .readable = readable, .reads = true };
		FILE *f;
		snprintf(cmd, sizeof(cmd), "%s/secret", outside);
		f = fopen(cmd, "w");
		CHECK(f != NULL);
		if (f) {
			fputs("s3cret\n", f);
			fclose(f);
		}
		CHECK(landlock_ruleset_build(&rs, &spec) == 0);
		CHECK(rs->reads);
		o.landlock_fd = rs->fd;
		snprintf(cmd, sizeof(cmd),
			 "cat %s/secret; echo secret=$?; cat /etc/hostname >/dev/null; echo host=$?; "
			 "cat /etc/passwd >/dev/null; echo passwd=$?; echo w > %s/f && cat %s/f",
			 outside, inside, inside);
		CHECK(sh(&r, &o, cmd) == 0);
		CHECK_MSG(strstr(r.out.buf, "secret=1\n") && !strstr(r.out.buf, "s3cret"), "%s", r.out.buf);
		CHECK_MSG(strstr(r.out.buf, "host=0\n"), "%s", r.out.buf);
		CHECK_MSG(strstr(r.out.buf, "passwd=1\n"), "%s", r.out.buf);
		CHECK_MSG(strstr(r.out.buf, "w\n"), "%s", r.out.buf);
		proc_result_release(&r);
		landlock_ruleset_free(rs);
		snprintf(cmd, sizeof(cmd), "%s/secret", outside);
		unlink(cmd);
	}
	rmdir(outside);
}

static void test_netns(void)
{
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;
	const char *why;

	if (!netns_available(&why))
		SKIP("%s", why);
	o.new_netns = true;
	o.netns_required = true;
	CHECK(sh(&r, &o, "awk -F: 'NR > 2 { gsub(/ /, \"\", $1); print $1 }' /proc/net/dev; id -u") == 0);
	/* only the loopback device, and the same uid as outside */
	{
		char want[64];
		snprintf(want, sizeof(want), "lo\n%d\n", (int)getuid());
		CHECK_STR(r.out.buf, want);
	}
	proc_result_release(&r);
}

/* Namespaces: PID 1 passes on how the command ended, exec failures and
 * timeouts behave as without, and the view shows only what was listed. */
static void test_namespaces(void)
{
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;
	const char *why;
	char path[200];
	struct nsview_bind view[6];
	FILE *f;

	if (!nsview_available(&why))
		SKIP("%s", why);
	o.new_ns = true;
	o.ns_required = true;
	CHECK(sh(&r, &o, "echo $$; exit 3") == 0);
	CHECK_STR(r.out.buf, "2\n");	/* PID 1 is the init, the command 2 */
	CHECK_INT(r.exit_code, 3);
	CHECK_STR(r.unconfined, "");
	proc_result_release(&r);
	CHECK(sh(&r, &o, "kill -USR1 $$") == 0);
	CHECK_INT(r.term_signal, SIGUSR1);
	CHECK_INT(r.exit_code, 128 + SIGUSR1);
	proc_result_release(&r);
	/* a timeout reaches the command through PID 1 */
	o.timeout_ms = 200;
	CHECK(sh(&r, &o, "sleep 30") == 0);
	CHECK(r.timed_out);
	CHECK_INT(r.term_signal, SIGTERM);
	proc_result_release(&r);
	o.timeout_ms = 0;
	{
		const char *argv[] = { "/nonexistent/prog", NULL };
		o.argv = argv;
		CHECK(proc_run(&r, &o) < 0);
		CHECK(strstr(forge_last_error(), "cannot run '/nonexistent/prog'") != NULL);
		proc_result_release(&r);
	}

	/* a view: /usr and friends read-only, tmp writable, a hidden file */
	snprintf(path, sizeof(path), "%s/hidden", tmp);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs("secret\n", f);
		fclose(f);
	}
	view[0] = (struct nsview_bind){ "/usr", NULL, NSVIEW_RO, NULL };
	view[1] = (struct nsview_bind){ "/bin", NULL, NSVIEW_RO, NULL };
	view[2] = (struct nsview_bind){ "/lib", NULL, NSVIEW_RO, NULL };
	view[3] = (struct nsview_bind){ "/lib64", NULL, NSVIEW_RO, NULL };
	view[4] = (struct nsview_bind){ tmp, NULL, NSVIEW_RW, NULL };
	view[5] = (struct nsview_bind){ path, NULL, NSVIEW_HIDE, NULL };
	o.view = view;
	o.nview = 6;
	{
		char cmd[600];
		snprintf(cmd, sizeof(cmd),
			 "cat %s; echo w > %s/written && cat %s/written; ls /etc 2>&1 | head -c 0; "
			 "[ -e /etc/passwd ] || echo no-etc; [ -e /dev/null ] && echo dev-null",
			 path, tmp, tmp);
		CHECK(sh(&r, &o, cmd) == 0);
		CHECK_STR(r.out.buf, "w\nno-etc\ndev-null\n");
		CHECK(strstr(r.err.buf, "Permission denied") != NULL);
		proc_result_release(&r);
	}

	/* a view that cannot be built (a mount point under a read-only bind):
	 * run without the namespaces and say why, or with ns_no_fallback run
	 * nothing and say so */
	view[5] = (struct nsview_bind){ tmp, "/usr/forge-no-such-dir", NSVIEW_RW, NULL };
	o.ns_required = false;
	CHECK(sh(&r, &o, "echo ran") == 0);
	CHECK_STR(r.out.buf, "ran\n");
	CHECK_MSG(strstr(r.unconfined, "namespaces: bind mount") != NULL, "%s", r.unconfined);
	proc_result_release(&r);
	o.ns_no_fallback = true;
	CHECK(sh(&r, &o, "echo ran") < 0);
	CHECK(r.ns_failed);
	CHECK_STR(r.out.buf, "");
	CHECK(strstr(forge_last_error(), "namespaces: bind mount") != NULL);
	proc_result_release(&r);
}

struct seen {
	struct buf out, err;
	int idle, cut;
	bool kill_on_ready;
};

static void seen_out(void *payload, const char *line, size_t len, int cut)
{
	struct seen *v = payload;

	CHECK_INT((int)strlen(line), (int)len);	/* NUL-terminated, no newline */
	buf_addf(&v->out, "[%s]", line);
	v->cut += cut;
	if (v->kill_on_ready && strcmp(line, "ready") == 0)
		proc_kill_running(SIGTERM);
}

static void seen_err(void *payload, const char *line, size_t len, int cut)
{
	struct seen *v = payload;

	buf_add(&v->err, line, len);
	buf_addch(&v->err, '|');
	v->cut += cut;
}

static void seen_idle(void *payload)
{
	((struct seen *)payload)->idle++;
}

/* The supervisor's way: lines streamed to callbacks, the caller's group kept. */
static void test_streaming_lines(void)
{
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;
	struct seen v = { BUF_INIT, BUF_INIT, 0, 0, false };
	char cmd[200];

	o.input = "in1\nin2\n";
	o.input_len = 8;
	o.keep_pgrp = true;
	o.max_line = 4;
	o.on_stdout = seen_out;
	o.on_stderr = seen_err;
	o.on_idle = seen_idle;
	o.payload = &v;
	snprintf(cmd, sizeof(cmd), "cat; echo e1 >&2; echo 123456789; "
		 "test \"$(cut -d' ' -f5 /proc/$$/stat)\" = %ld && printf same", (long)getpgrp());
	CHECK(sh(&r, &o, cmd) == 0);
	CHECK_INT(r.exit_code, 0);
	CHECK_STR(v.out.buf, "[in1][in2][1234][same]");
	CHECK_STR(v.err.buf, "e1|");
	CHECK_INT(v.cut, 1);
	CHECK(v.idle > 0);
	CHECK_STR(r.out.buf, "");	/* streamed, not captured */
	proc_result_release(&r);

	/* proc_kill_running() signals the child alone, not our own group. */
	buf_reset(&v.out);
	o.input = NULL;
	o.input_len = 0;
	o.max_line = 0;
	o.timeout_ms = 60000;
	v.kill_on_ready = true;
	CHECK(sh(&r, &o, "echo ready; exec sleep 100") == 0);
	CHECK_STR(v.out.buf, "[ready]");
	CHECK_INT(r.term_signal, SIGTERM);
	CHECK(!r.timed_out);
	proc_result_release(&r);
	buf_release(&v.out);
	buf_release(&v.err);
}

struct started {
	int calls;
	char marker[256];
};

static void mark_started(void *payload)
{
	struct started *st = payload;
	FILE *f = fopen(st->marker, "w");

	st->calls++;
	if (f)
		fclose(f);
}

/* on_started runs once the child runs and before it has any input: the
 * child, once its first line arrives, finds the callback's marker. */
static void test_on_started(void)
{
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;
	struct started st = { 0 };
	char cmd[400];

	snprintf(st.marker, sizeof(st.marker), "%s/started", tmp);
	o.input = "go\n";
	o.input_len = 3;
	o.on_started = mark_started;
	o.payload = &st;
	snprintf(cmd, sizeof(cmd), "read l; test -e '%s' && echo \"$l after\"", st.marker);
	CHECK(sh(&r, &o, cmd) == 0);
	CHECK_INT(r.exit_code, 0);
	CHECK_STR(r.out.buf, "go after\n");
	CHECK_INT(st.calls, 1);
	proc_result_release(&r);

	/* A child that never ran: not called. */
	const char *argv[] = { "/nonexistent/program", NULL };
	o.argv = argv;
	st.calls = 0;
	CHECK(proc_run(&r, &o) < 0);
	CHECK_INT(st.calls, 0);
	proc_result_release(&r);
	unlink(st.marker);
}

struct bg_run {
	struct proc_opts o;
	struct proc_result r;
	int rc;
};

static void *bg_run(void *arg)
{
	struct bg_run *b = arg;
	b->rc = proc_run(&b->r, &b->o);
	return NULL;
}

static void test_kill_running(void)
{
	struct bg_run b = { .o = PROC_OPTS_INIT };
	char fifo[200], cmd[300], line[16] = "";
	pthread_t th;
	pid_t bystander;
	int status;
	FILE *f;

	/* a process of ours in its own group that proc_run did not start */
	bystander = fork();
	CHECK(bystander >= 0);
	if (bystander == 0) {
		setpgid(0, 0);
		pause();
		_exit(0);
	}
	setpgid(bystander, bystander);
	/* With nothing running it sends nothing. */
	proc_kill_running(SIGTERM);
	CHECK_INT(waitpid(bystander, &status, WNOHANG), 0);

	/* A running command (and its group) gets the signal: the command says
	 * it is running through a FIFO, so no timing is involved. */
	snprintf(fifo, sizeof(fifo), "%s/kill-ready", tmp);
	CHECK(mkfifo(fifo, 0600) == 0);
	snprintf(cmd, sizeof(cmd), "sleep 300 & echo ready > %s; wait", fifo);
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	b.o.argv = argv;
	b.o.timeout_ms = 120000;        /* only if proc_kill_running() missed it */
	CHECK(pthread_create(&th, NULL, bg_run, &b) == 0);
	f = fopen(fifo, "r");
	CHECK(f != NULL);
	CHECK(fgets(line, sizeof(line), f) != NULL);
	fclose(f);
	CHECK_STR(line, "ready\n");
	/* (the command may say so before proc_run has it in its table: wait
	 * for that, or the signal missed it and the run waited for its
	 * timeout, as seen on a loaded machine) */
	while (proc_running_count() == 0)
		sched_yield();
	proc_kill_running(SIGTERM);
	CHECK(pthread_join(th, NULL) == 0);
	CHECK_INT(b.rc, 0);
	CHECK(!b.r.timed_out);
	CHECK_INT(b.r.term_signal, SIGTERM);
	proc_result_release(&b.r);

	/* once it has ended it is no longer in the table */
	proc_kill_running(SIGTERM);
	CHECK_INT(waitpid(bystander, &status, WNOHANG), 0);
	kill(bystander, SIGKILL);
	CHECK_INT(waitpid(bystander, &status, 0), bystander);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	unlink(fifo);
}

static long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* A child without namespaces shares our memory until it execs
 * (CLONE_VM|CLONE_VFORK): none of our pages turns copy-on-write, so
 * writing a megabyte of them again afterwards takes no page fault (after
 * a fork() it took one per page, 256).  Under ASan proc.c forks. */
static void test_child_leaves_our_pages_alone(void)
{
	const size_t size = 1 << 20;
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;
	char *mem;

#if defined(__SANITIZE_ADDRESS__)
	SKIP("proc.c forks under ASan");
#endif
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(mem != MAP_FAILED);
	memset(mem, 1, size);
	CHECK(sh(&r, &o, "exit 3") == 0);
	CHECK_INT(r.exit_code, 3);
	proc_result_release(&r);
	long before = minor_faults();
	for (size_t i = 0; i < size; i += 4096)
		mem[i] = 2;
	long faults = minor_faults() - before;
	CHECK_MSG(faults < 16, "%ld page faults writing 1 MiB again after a child ran", faults);
	munmap(mem, size);
}

/* proc_spawn (os/spawn.h): pipes to the child's stdio, default signal
 * dispositions (one the parent ignores included), and, as for proc_run,
 * none of our pages made copy-on-write by starting it. */
static void test_spawn_pipes_signals_pages(void)
{
	const char *argv[] = { "/bin/sh", "-c", "read line; echo \"got $line\"; kill -USR2 $$; echo alive", NULL };
	struct spawn_opts so = { .argv = argv };
	const size_t size = 1 << 20;
	struct spawned sp;
	char out[64];
	size_t n = 0;
	ssize_t got;
	int st = 0;
	char *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(mem != MAP_FAILED);
	memset(mem, 1, size);
	signal(SIGUSR2, SIG_IGN);
	CHECK(proc_spawn(&sp, &so) == 0);
	signal(SIGUSR2, SIG_DFL);
	long before = minor_faults();
	for (size_t i = 0; i < size; i += 4096)
		mem[i] = 2;
	long faults = minor_faults() - before;
#if defined(__SANITIZE_ADDRESS__)
	(void)faults;    /* proc_spawn forks under ASan (os/clonevm.h) */
#else
	CHECK_MSG(faults < 16, "%ld page faults writing 1 MiB again after proc_spawn", faults);
#endif
	munmap(mem, size);
	CHECK(write(sp.in_fd, "hello\n", 6) == 6);
	close(sp.in_fd);
	while (n < sizeof out - 1 && (got = read(sp.out_fd, out + n, sizeof out - 1 - n)) > 0)
		n += (size_t)got;
	out[n] = '\0';
	CHECK_STR(out, "got hello\n");
	CHECK(proc_spawn_reap(sp.pid, &st, 10000));
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGUSR2);
	close(sp.out_fd);
	close(sp.err_fd);
}

/* pid has ended: no such process, or a zombie its new parent has yet to reap. */
static bool ended(pid_t pid)
{
	char path[64], stat[512];
	FILE *f;
	size_t n;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return true;
	n = fread(stat, 1, sizeof stat - 1, f);
	fclose(f);
	stat[n] = '\0';
	const char *paren = strrchr(stat, ')');
	return paren && (paren[2] == 'Z' || paren[2] == 'X');
}

/* Poll (up to 10 s) for pid to end. */
static bool ends(pid_t pid)
{
	for (int i = 0; i < 1000; i++) {
		if (ended(pid))
			return true;
		usleep(10000);
	}
	return false;
}

/* The pid of the background job a spawned shell printed on its stdout. */
static pid_t job_pid(const struct spawned *sp)
{
	char line[32];
	size_t n = 0;
	long pid = 0;

	while (n < sizeof line - 1 && read(sp->out_fd, line + n, 1) == 1 && line[n] != '\n')
		n++;
	line[n] = '\0';
	forge_parse_long(&pid, line, 1, 1L << 30);
	return (pid_t)pid;
}

/* A spawned child leads a process group of its own, and what it started
 * there ends with it: when it exits (proc_spawn_reap), and when the caller
 * is interrupted (proc_spawn_kill_all: SIGKILL after the grace for one that
 * ignores SIGTERM). */
static void test_spawn_group_ends_with_it(void)
{
	const char *quits[] = { "/bin/sh", "-c", "sleep 300 & echo $!; read x; exit 4", NULL };
	const char *stays[] = { "/bin/sh", "-c", "trap '' TERM; sleep 300 & echo $!; while :; do sleep 1; done", NULL };
	struct spawn_opts so = { .argv = quits };
	struct spawned sp;
	pid_t job;
	int st = 0;

	CHECK(proc_spawn(&sp, &so) == 0);
	job = job_pid(&sp);
	CHECK(job > 0);
	CHECK_INT(getpgid(sp.pid), sp.pid);
	CHECK_INT(getpgid(job), sp.pid);
	CHECK(!proc_spawn_reap(sp.pid, &st, 0));
	close(sp.in_fd);
	CHECK(proc_spawn_reap(sp.pid, &st, 10000));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 4);
	CHECK_MSG(ends(job), "the job %d the child left outlived it", (int)job);
	close(sp.out_fd);
	close(sp.err_fd);

	so.argv = stays;
	CHECK(proc_spawn(&sp, &so) == 0);
	job = job_pid(&sp);
	CHECK(job > 0);
	proc_spawn_kill_all(100);
	CHECK(proc_spawn_reap(sp.pid, &st, 10000));
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	CHECK_MSG(ends(job), "the job %d the child left outlived an interrupt", (int)job);
	close(sp.in_fd);
	close(sp.out_fd);
	close(sp.err_fd);
}

/* A contained child (spawn.h, CONTAIN) that starts a detached job (setsid)
 * and prints its pid as this process sees it (the command may be in a PID
 * namespace of its own, where $! says another). */
#define DETACHED_JOB "setsid sh -c 'read p _ </proc/self/stat; echo $p; exec sleep 300' </dev/null & "

/* With contain, the command's wait status comes through its init, and
 * what it detached ends with it: when it exits and when the caller
 * interrupts (proc_spawn_kill_all, in a namespace). */
static void test_spawn_contain(void)
{
	const char *quits[] = { "/bin/sh", "-c", DETACHED_JOB "read x; exit 4", NULL };
	const char *signalled[] = { "/bin/sh", "-c", "kill -USR2 $$; echo alive", NULL };
	const char *stays[] = { "/bin/sh", "-c", "trap '' TERM; " DETACHED_JOB "while :; do sleep 1; done", NULL };
	const char *argv[] = { tmp, NULL };
	struct spawn_opts so = { .argv = quits, .contain = true };
	struct spawned sp;
	pid_t job;
	int st = 0;

	CHECK(proc_spawn(&sp, &so) == 0);
	job = job_pid(&sp);
	CHECK(job > 0);
	CHECK_INT(getpgid(sp.pid), sp.pid);
	CHECK(!proc_spawn_reap(sp.pid, &st, 0));
	close(sp.in_fd);
	CHECK(proc_spawn_reap(sp.pid, &st, 10000));
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 4, "status %#x", st);
	CHECK_MSG(ends(job), "the detached job %d outlived the contained child", (int)job);
	close(sp.out_fd);
	close(sp.err_fd);

	so.argv = signalled;
	CHECK(proc_spawn(&sp, &so) == 0);
	CHECK(proc_spawn_reap(sp.pid, &st, 10000));
	CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGUSR2, "status %#x", st);
	close(sp.in_fd);
	close(sp.out_fd);
	close(sp.err_fd);

	so.argv = stays;
	CHECK(proc_spawn(&sp, &so) == 0);
	job = job_pid(&sp);
	CHECK(job > 0);
	proc_spawn_kill_all(100);
	CHECK(proc_spawn_reap(sp.pid, &st, 10000));
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	/* (a reaper killed by SIGKILL ends nothing: spawn.h) */
	if (sp.pidns)
		CHECK_MSG(ends(job), "the detached job %d outlived an interrupt", (int)job);
	else
		kill(job, SIGKILL);
	close(sp.in_fd);
	close(sp.out_fd);
	close(sp.err_fd);

	/* the init reports an exec failure (a directory is not a program) */
	so.argv = argv;
	CHECK(proc_spawn(&sp, &so) < 0);
	CHECK_MSG(strstr(forge_last_error(), "cannot run") && strstr(forge_last_error(), strerror(EACCES)),
		  "%s", forge_last_error());
}

/* In a new user namespace that allows no further PID or user namespace:
 * 0, or -1 when this machine does not let it be made. */
static int refuse_namespaces(void)
{
	static const char *const limits[] = { "/proc/sys/user/max_pid_namespaces",
					      "/proc/sys/user/max_user_namespaces" };
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (unshare(CLONE_NEWUSER) < 0 || nsview_maps_child(uid, gid) < 0)
		return -1;
	for (size_t i = 0; i < 2; i++) {
		FILE *f = fopen(limits[i], "w");
		if (!f)
			return -1;
		bool ok = fputs("0\n", f) >= 0;
		if (fclose(f) != 0 || !ok)
			return -1;
	}
	return 0;
}

/* A caller of a contained child killed by SIGKILL: the job its command
 * detached ends too -- by the PID namespace, or (no_ns: none can be made)
 * by the init, a child subreaper that has PR_SET_PDEATHSIG SIGTERM. */
static void contained_caller_killed(bool no_ns)
{
	const char *argv[] = { "/bin/sh", "-c", DETACHED_JOB "exec sleep 300", NULL };
	long msg[2] = { 0, 0 };    /* the job's pid (-1: no such namespace here), pidns */
	int fds[2];
	pid_t caller;

	CHECK(pipe(fds) == 0);
	caller = fork();
	CHECK(caller >= 0);
	if (caller == 0) {
		struct spawn_opts so = { .argv = argv, .contain = true };
		struct spawned sp;
		close(fds[0]);
		if (no_ns && refuse_namespaces() < 0)
			msg[0] = -1;
		else if (proc_spawn(&sp, &so) == 0)
			msg[0] = job_pid(&sp), msg[1] = sp.pidns;
		if (write(fds[1], msg, sizeof msg) != (ssize_t)sizeof msg)
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	ssize_t n = read(fds[0], msg, sizeof msg);
	close(fds[0]);
	kill(caller, SIGKILL);
	waitpid(caller, NULL, 0);
	CHECK(n == (ssize_t)sizeof msg);
	if (msg[0] < 0) {
		printf("# skipped: no user namespace with limits here\n");
		return;
	}
	CHECK(msg[0] > 0);
	if (no_ns)
		CHECK(!msg[1]);
	if (!ends((pid_t)msg[0])) {
		kill((pid_t)msg[0], SIGKILL);
		CHECK_MSG(false, "the detached job %ld outlived its caller (%s)", msg[0],
			  msg[1] ? "PID namespace" : "reaper");
	}
}

static void test_spawn_contain_caller_killed(void)
{
	contained_caller_killed(false);
}

static void test_spawn_contain_caller_killed_no_ns(void)
{
	contained_caller_killed(true);
}

int main(void)
{
	char t[] = "/tmp/forge-proc-XXXXXX";
	char cmd[200];

	snprintf(tmp, sizeof(tmp), "%s", mkdtemp(t));
	RUN(test_exit_and_signal);
	RUN(test_signals_default);
	RUN(test_stdin_and_env);
	RUN(test_timeout_kills_group);
	RUN(test_leftovers_killed_on_exit);
	RUN(test_contain_ends_detached);
	RUN(test_contain_timeout);
	RUN(test_output_cap_head_tail);
	RUN(test_exec_failure);
	RUN(test_rlimits);
	RUN(test_landlock_confines_writes);
	RUN(test_netns);
	RUN(test_namespaces);
	RUN(test_streaming_lines);
	RUN(test_on_started);
	RUN(test_kill_running);
	RUN(test_child_leaves_our_pages_alone);
	RUN(test_spawn_pipes_signals_pages);
	RUN(test_spawn_group_ends_with_it);
	RUN(test_spawn_contain);
	RUN(test_spawn_contain_caller_killed);
	RUN(test_spawn_contain_caller_killed_no_ns);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd) != 0)
		return 1;
	return unit_done();
}
