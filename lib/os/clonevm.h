/*
 * clonevm.h - start a child that shares the caller's memory until it execs.
 *
 * After a fork() every page of the caller is copy-on-write, and each page
 * it writes again takes a fault (about 15 us on a paravirtualised machine):
 * hundreds after every phase the supervisor started.  A child made with
 * CLONE_VM | CLONE_VFORK, as posix_spawn makes its own, copies no page
 * table and leaves the caller's pages alone.
 *
 *	sigfillset(&all);
 *	pthread_sigmask(SIG_SETMASK, &all, &old);
 *	pid = clone_shared(child_fn, &plan);    (child_fn execs, or _exits)
 *	pthread_sigmask(SIG_SETMASK, &old, NULL);
 *	if (pid < 0)
 *		pid = fork() ... as before
 */
#ifndef FORGE_OS_CLONEVM_H
#define FORGE_OS_CLONEVM_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * Run fn(arg) in a new process (SIGCHLD when it ends) that shares this
 * one's address space, on a stack of its own; the calling thread sleeps
 * until the child execs or exits.  fn must not return: it execs, or
 * _exit()s.  Until then it may make system calls only -- no malloc, no
 * stdio, no lock -- and write nothing but its own stack (what it writes
 * elsewhere, the caller sees).  Signals: block them all before the call,
 * and have fn set every disposition to SIG_DFL before it unblocks any (a
 * handler would run on the caller's memory); unblock them after it
 * returns.  The child must not wait for the caller (the caller sleeps
 * until the exec) nor unshare(CLONE_NEWUSER) (the kernel refuses it to a
 * process sharing its memory).  errno is shared too: the caller may find
 * it changed by the child's calls, and reads it only after a failure.
 *
 * Returns the child's pid, or -1 with errno set: the clone or its stack
 * failed, or ENOSYS in an ASan build, whose checks at the child's noreturn
 * calls do not know its stack.  The caller forks then.
 */
pid_t clone_shared(int (*fn)(void *), void *arg);

/*
 * clone_shared() with more of clone(2)'s flags: new namespaces
 * (CLONE_NEWUSER and the others; the kernel takes them with CLONE_VM).
 * The same rules; and a child in a user namespace of its own that changes
 * what belongs to the memory (PR_SET_DUMPABLE) changes it for the caller.
 */
pid_t clone_shared_flags(int (*fn)(void *), void *arg, unsigned long flags);

/* Whether clone_shared() can succeed in this build (not under ASan). */
bool clone_shared_supported(void);

#endif
