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
 * What only SIGKILL (or a machine going down) leaves behind,
 * tmpdir_sweep() finds and removes: a listed directory is held with an
 * flock(2) that ends with its process.
 *
 * At most TMPDIR_MAX directories are listed at once; paths must fit in
 * PATH_MAX.  Thread-safe, except against tmpdir_remove_all_signal_safe().
 */
#ifndef FORGE_TMPDIR_H
#define FORGE_TMPDIR_H

#include <stdbool.h>

#define TMPDIR_MAX 64

/* A directory no lock holds is another process's only when younger than
 * this: it made it and has not locked it yet. */
#define TMPDIR_SWEEP_AGE_S 60

/* Forge's prefixes: the only names tmpdir_sweep() removes. */
#define TMPDIR_PREFIXES "forge-cmd", "forge-test", "forge-review", "forge-mcp", "forge-sub", \
	"forge-stage", "forge-implement", "forge-agent", "forge-deploy", "forge-resume", "forge-config"

/* Create and list a new directory (mode 0700), PREFIX-XXXXXX (Forge's are
 * TMPDIR_PREFIXES).  *out is malloc'd.  -1 with a message naming the path
 * when it cannot be made or the list is full. */
int tmpdir_make(char **out, const char *prefix);

/* Remove the tree at path (best effort), unlist it and free path.  NULL-safe. */
void tmpdir_remove(char *path);

/* Remove every listed tree; for signal handlers (see above). */
void tmpdir_remove_all_signal_safe(void);

/*
 * Remove name (relative to dirfd; AT_FDCWD and a path will do) and, when it
 * is a directory, everything in it, to any depth: iterative in a fixed
 * stack (no PATH_MAX on the depth), fd-relative, never following a
 * symbolic link nor crossing into another file system.  A directory of
 * the tree this user cannot read, search or write (a command's chmod 000
 * or 500) is made u+rwx on the way, as far as this user may (fchmodat
 * without following a link).  Async-signal-safe, no allocation.  0 when it
 * is gone (or was not there), else -1 with errno (ENOTEMPTY: something in
 * it stayed).
 */
int tmpdir_rmtree_at(int dirfd, const char *name);

/* A directory tmpdir_sweep() found: called with err TMPDIR_FOUND before
 * it is removed (a dry run: only then), and after with 0 when it is gone
 * or the errno its removal failed with (it stays). */
#define TMPDIR_FOUND (-1)
typedef void (*tmpdir_found_fn)(const char *path, int err, void *payload);

/*
 * The directories tmpdir_make() made in $TMPDIR (else /tmp) whose process
 * is gone: named PREFIX-XXXXXX (TMPDIR_PREFIXES), this user's, no lock on them and
 * not changed for TMPDIR_SWEEP_AGE_S.  Each is passed to found (may be
 * NULL), then removed unless dry_run, and passed to found again with how
 * that went.  Returns how many were found, or -1 with a message when the
 * temporary directory cannot be read.
 */
int tmpdir_sweep(bool dry_run, tmpdir_found_fn found, void *payload);

#endif
