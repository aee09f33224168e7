/*
 * forgedir.h - a repository's .forge/ directory: what git should ignore in it.
 *
 * .forge/ holds the project's own files, which belong in git (config.json,
 * skills/, prompts/), next to what Forge makes as it runs, which must never
 * show up in the user's `git status`: the database (forge.db and its -wal,
 * -shm and -journal files), the memory's vectors (forge.db.vectors and
 * its .lock and .tmp.PID files), the runs' worktrees (worktrees/) and logs.
 * The .gitignore ignores itself as well (forge writes it in every clone).  forge_dir_ignore() writes the
 * .gitignore that says so.
 */
#ifndef FORGE_FORGEDIR_H
#define FORGE_FORGEDIR_H

/* The content forge_dir_ignore() writes. */
extern const char forge_dir_gitignore[];

/*
 * Make <dir>/.gitignore (dir is a .forge/ directory, which exists) ignore
 * what Forge makes and nothing else.  Written when absent, atomically (a
 * temporary file, synced, then renamed: a crash or a full disk leaves no
 * part of it; processes starting at once write the same bytes); an existing
 * file whose content is exactly what an older Forge wrote ("*\n", which hid
 * config.json and skills from git), or empty or the start of what Forge
 * writes (an older Forge's first write cut short), is replaced, atomically;
 * any other existing file - edited or written by the user - is left alone.
 * 0, or -1 with a message naming the file.
 */
int forge_dir_ignore(const char *dir);

/*
 * Whether <root>/.forge (root: a repository's main working tree) can be
 * Forge's directory: 0 when it is a directory, a symbolic link to one, or
 * not there (it is made when needed); -1 with a message saying what holds
 * the name instead (a file the project tracks, a link to nothing), where,
 * and what to do.  Other errors (a directory that cannot be searched) are
 * left to whoever opens it: 0.
 */
int forge_dir_check(const char *root);

#endif
