/*
 * clonevm.c - a child sharing the caller's memory until it execs.  See
 * clonevm.h.
 */
#include "os/clonevm.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#define CLONE_SHARED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CLONE_SHARED 0
#endif
#endif
#ifndef CLONE_SHARED
#define CLONE_SHARED 1
#endif

pid_t clone_shared(int (*fn)(void *), void *arg)
{
	return clone_shared_flags(fn, arg, 0);
}

pid_t clone_shared_flags(int (*fn)(void *), void *arg, unsigned long flags)
{
#if CLONE_SHARED
	/* reserved address space: the child touches a few pages of it */
	const size_t size = 256 * 1024;
	char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	pid_t pid;
	int e;

	if (stack == MAP_FAILED)
		return -1;
	pid = clone(fn, stack + size, (int)(CLONE_VM | CLONE_VFORK | SIGCHLD | flags), arg);
	e = errno;
	munmap(stack, size);
	errno = e;
	return pid;
#else
	(void)fn;
	(void)arg;
	(void)flags;
	errno = ENOSYS;
	return -1;
#endif
}

bool clone_shared_supported(void)
{
	return CLONE_SHARED;
}
