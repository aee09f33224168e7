/*
 * forge-sandbox-init - PID 1 of a sandboxed command's namespaces, on
 * lib/os/proc.c's fast path.  Not a command for people: Forge execs it,
 * with the arguments only lib/os/proc_child.c writes, from
 * ../libexec/forge/ beside its programs.
 *
 * Forge's child, still on Forge's memory (no copy of it: os/clonevm.h),
 * has made the namespaces and the command's view of the files, then
 * becomes this small program.  It makes itself non-dumpable (the command
 * must not read it), starts the command in a fork of itself with the last
 * steps (os/proc_child.h: its directory, Landlock, no capabilities,
 * seccomp, limits), forwards the signals Forge sends, reaps every process
 * of the namespace, and exits with the command's status, which ends the
 * namespace.
 */
#include "core/forge.h"
#include "os/proc_child.h"

#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv, char **envp)
{
	static const char usage[] = "forge-sandbox-init: Forge's sandbox runs this program itself "
				    "(lib/os/proc.c); it takes no arguments from people\n";
	struct cmd_tail t;
	sigset_t all, none;
	pid_t cmd;

	if (cmd_tail_decode(&t, argc, argv, envp) < 0) {
		(void)!write(2, usage, sizeof usage - 1);
		return FORGE_EXIT_USAGE;
	}
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	init_forward_signals();
	cmd_tail_wait_go(&t);
	sigfillset(&all);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &all, NULL);
	cmd = fork();
	if (cmd == 0)
		cmd_tail_run(&t);
	if (cmd < 0)
		child_fail(t.rep_fd, ST_EXEC, errno);
	sigprocmask(SIG_SETMASK, &none, NULL);
	init_finish(&t, cmd);
}
