/*
 * toolcache.h - what a linter or scanner printed for the same input, kept:
 * a review that looks at the same files again (a resumed run, the same
 * commit reviewed again, `forge-review` run again on a diff) does not run
 * the tool again.
 *
 * The key is SHA-256 (core/sha256.h: a hostile model writing the files
 * cannot make two inputs share a key) over the command line, the tool
 * program's identity (path, device, inode, size, modification time: an
 * upgrade changes it) and every file under the directory the tool runs in
 * (relative path, size, bytes, in name order).  The review runs its tools
 * on a private copy holding only the checked files (review_prepare), so
 * that directory is all a tool reads of the project.  Kept: the exit
 * status and the output, one file per key in the user's cache directory
 * (core/cachedir.h) under tools/, for runs that finished (no time-out);
 * `forge gc` removes the ones unused for 30 days.  Best effort: a cache
 * that cannot be read or written only costs the tool's run.
 */
#ifndef FORGE_TOOLCACHE_H
#define FORGE_TOOLCACHE_H

#include <stdbool.h>
#include <stddef.h>

struct buf;

#define TOOLCACHE_DIR "tools"   /* in the cache directory */

/* The key of running argv (argv[0] a path) in dir into key; -1 when the
 * run cannot be keyed (argv[0] or a file in dir unreadable, dir holding
 * something other than files and directories, or over 64 MiB). */
int toolcache_key(char key[65], const char *const *argv, const char *dir);

/* The kept run of key: true with *exit_code and its output appended to
 * out; false when there is none (or it is damaged).  dir: where the tool
 * runs this time (see toolcache_put). */
bool toolcache_get(const char *key, const char *dir, int *exit_code, struct buf *out);

/* Keep a run of key in dir (written to a new file renamed into place).
 * Tools print the paths they were given as absolute ones, and dir is a new
 * temporary directory each review: dir in the output is kept as a marker
 * that toolcache_get() turns into its own dir. */
void toolcache_put(const char *key, const char *dir, int exit_code, const char *out, size_t len);

#define TOOLCACHE_KEEP_DAYS 30

/* Remove the kept runs unused (neither kept nor read) for max_age_s
 * seconds; with dry_run only count them.  *count and *bytes: how many and
 * their size.  0, or -1 with a message when the cache cannot be listed
 * (no cache is 0 with nothing counted). */
int toolcache_prune(size_t *count, size_t *bytes, long max_age_s, bool dry_run);

#endif
