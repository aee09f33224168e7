/*
 * realpath.h - realpath() in three system calls instead of one a component.
 *
 * glibc's realpath() calls readlink() on every component of the path (six
 * or seven for a file in a worktree, each failing with EINVAL when it is no
 * link), and libgit2 and Forge call it some 70 times in one agent session:
 * ~600 system calls at 1.1-1.8 us each on a paravirtualised machine.  The
 * kernel has already resolved the path when it opens it, so open(O_PATH) +
 * readlink("/proc/self/fd/N") + close give the same answer in three.
 *
 * Every program is linked with -Wl,--wrap=realpath and
 * -Wl,--wrap=__realpath_chk (the Makefile), so every call to realpath() --
 * Forge's, those of the static libgit2, and _FORTIFY_SOURCE's
 * __realpath_chk() -- lands here.  Nothing includes this header but this
 * file and its test: callers keep calling realpath().
 */
#ifndef FORGE_CORE_REALPATH_H
#define FORGE_CORE_REALPATH_H

#include <stddef.h>

/*
 * realpath(3), same contract as glibc's: the canonical absolute path of
 * `path` (symbolic links, "." and ".." resolved) into `resolved` (at least
 * PATH_MAX bytes) or, when `resolved` is NULL, into a string the caller
 * frees.  Resolved by the kernel through /proc/self/fd when it can; glibc's
 * own realpath() whenever anything is off -- the path does not open (then
 * errno, and what glibc leaves in `resolved`, are glibc's), /proc is not
 * mounted, no fd is left, the kernel's name is not absolute, ends in
 * " (deleted)" or does not fit in PATH_MAX.  errno is left as it was on
 * success.  Thread-safe; the descriptor it opens is O_CLOEXEC and closed
 * before it returns.
 */
char *__wrap_realpath(const char *path, char *resolved);

/* __realpath_chk(3) of _FORTIFY_SOURCE: aborts as glibc's does when
 * `resolvedlen` is under PATH_MAX, else __wrap_realpath(). */
char *__wrap___realpath_chk(const char *path, char *resolved, size_t resolvedlen);

/* glibc's own, for the fallback (and for tests to compare against). */
char *__real_realpath(const char *path, char *resolved);
char *__real___realpath_chk(const char *path, char *resolved, size_t resolvedlen);

#endif
