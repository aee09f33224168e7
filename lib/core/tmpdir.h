/*
 * tmpdir.h - temporary directories that go away however the process ends.
 *
 * tmpdir_make() creates $TMPDIR/PREFIX-XXXXXX (/tmp when TMPDIR is unset or
 * not absolute) and records it in a process-wide list; tmpdir_remove()
 * removes the tree and forgets it.  Whatever is still listed is removed at
 * exit(3) (an atexit handler), and by tmpdir_remove_all_signal_safe(),
 * which a SIGINT/SIGTERM handler calls before _exit(): it uses only
 * async-signal-safe system calls (openat, getdents64, unlinkat, close) and
 * no memory allocation.  A breaker, a stagnation, a failure or a signal
 * then leaves nothing behind in TMPDIR.
 *
 * At most TMPDIR_MAX directories are listed at once; paths must fit in
 * PATH_MAX.  Not thread-safe: create and remove them from one thread.
 */
#ifndef FORGE_TMPDIR_H
#define FORGE_TMPDIR_H

#define TMPDIR_MAX 16

/* Create and list a new directory (mode 0700).  *out is malloc'd.  -1 with
 * a message naming the path when it cannot be made or the list is full. */
int tmpdir_make(char **out, const char *prefix);

/* Remove the tree at path (best effort), unlist it and free path.  NULL-safe. */
void tmpdir_remove(char *path);

/* Remove every listed tree; for signal handlers (see above). */
void tmpdir_remove_all_signal_safe(void);

#endif
