/*
 * sandbox_internal.h - what the files of the sandbox share (sandbox.c,
 * sandbox_exec.c, sandbox_deps.c, sandbox_forge.c).  Not for other modules:
 * use sandbox.h.
 */
#ifndef FORGE_OS_SANDBOX_INTERNAL_H
#define FORGE_OS_SANDBOX_INTERNAL_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/buf.h"

/*
 * The value of name in env (NAME=VALUE strings, NULL-terminated; env may be
 * NULL), borrowed from env, or NULL when it has no such entry.  The whole
 * name matches, never a prefix of another ("PATH" does not find
 * "PATHX=..."); of two entries the first, as getenv(3) takes it.
 */
const char *sandbox_env_value(char *const *env, const char *name);

/* How many seconds a toolchain home must have stayed unchanged before the
 * guard keeps its verdict for the next commands (sandbox_exec.c: 3).  A
 * variable for the unit tests only, which cannot make a directory old. */
extern int sandbox_home_settled_sec;

/*
 * Notes naming paths (sandbox_run's *unconfined): sandbox_note_path()
 * counts one path in *count and appends it, formatted, to the list b
 * (", " between) while at most SANDBOX_NOTE_SHOWN are there;
 * sandbox_note_paths() appends to *notes, when count is not 0, the string
 * "HEAD LIST[ and N more]TAIL".
 */
enum { SANDBOX_NOTE_SHOWN = 4 };
void sandbox_note_path(struct buf *b, size_t *count, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void sandbox_note_paths(jv *notes, const char *head, const struct buf *list, size_t count,
			const char *tail);

/*
 * The root's .forge around a command (sandbox_forge.c).  A command may do
 * nothing there -- with the mount view it is read-only; without, Landlock
 * cannot make a directory of the writable root read-only --, so
 * forge_guard_save() copies it (its files' contents, links' targets,
 * directories' and files' modes and owners) before the command and
 * forge_guard_restore() puts back after it what the command changed or
 * removed and removes what it made, with a note naming each in *notes.
 * Only in a git working tree (.forge elsewhere is nobody's
 * configuration).  What Forge writes there as commands run in the main
 * working tree (the database, vectors, runs' worktrees, logs:
 * core/forgedir.c's .gitignore) is neither copied nor put back there; in
 * a linked worktree (a run's) there is none of it, and one a command makes
 * is removed.  A .forge of more than 4096 entries or 16 MiB, or with a
 * directory Forge cannot read (a person's own files), is not guarded.
 */
struct forge_guard_entry {
	char *rel;       /* below .forge, "" .forge itself */
	mode_t mode;     /* lstat's: kind and permissions */
	uid_t uid;
	gid_t gid;
	char *data;      /* a file's content, a link's target; NULL for a directory */
	size_t len;
	bool ok;         /* as it was after the command (forge_guard_restore) */
};
struct forge_guard {
	bool on;         /* root is a git working tree, its .forge copied */
	bool main_tree;  /* root is the main working tree (its .git a directory) */
	struct forge_guard_entry *v;    /* sorted by rel: a directory first */
	size_t n;        /* 0: there was no .forge */
};
void forge_guard_save(struct forge_guard *g, const char *root);
void forge_guard_restore(struct forge_guard *g, const char *root, jv *notes);
void forge_guard_release(struct forge_guard *g);

#endif
