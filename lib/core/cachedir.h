/*
 * cachedir.h - where Forge keeps what it can always compute again: the
 * user's cache directory, $XDG_CACHE_HOME/forge (an absolute
 * XDG_CACHE_HOME only, as the XDG spec says), else ~/.cache/forge; and
 * what ~ is.
 */
#ifndef FORGE_CACHEDIR_H
#define FORGE_CACHEDIR_H

/*
 * $HOME when it is an absolute path, else NULL (unset, empty or relative):
 * a relative HOME (HOME=. in a CI container or an `env -i` wrapper) is
 * taken as not set, as the XDG spec takes a relative XDG_*_HOME, or the
 * cache, the user's configuration and skills were looked for -- and the
 * cache written -- below the current directory: the user's checkout.
 * Borrowed from the environment.
 */
const char *home_dir(void);

/* The path of `name` in the cache directory (malloc'd), or NULL when
 * neither XDG_CACHE_HOME nor HOME says where it is, or when what it would
 * be made in is not there: HOME (a HOME that does not exist is never made),
 * or the directory XDG_CACHE_HOME is in.  Nothing is created. */
char *cache_path(const char *name);

/*
 * Where runs' worktrees are made, a directory per repository beneath it
 * (git/git.h forge_git_runs_dir): $FORGE_WORKTREES when it is an absolute
 * path, else $XDG_STATE_HOME/forge/worktrees (an absolute XDG_STATE_HOME),
 * else ~/.local/state/forge/worktrees when HOME (home_dir) is a directory
 * that is there.  Outside every checkout, where the project's test runners
 * never look.  malloc'd, no trailing slash; NULL when none of them says
 * where (the caller falls back on the checkout's .forge/worktrees).
 * Nothing is created.
 */
char *worktrees_base(void);

/* mkdir -p the directories above path (mode 0700 for new ones); 0, or -1
 * with errno. */
int cache_mkdirs(const char *path);

#endif
