/* cachedir.c - the user's cache directory (core/cachedir.h). */
#include "core/cachedir.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/owner.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Whether the directory path is in exists (path absolute). */
static bool parent_is_dir(const char *path)
{
	char *dir = path_parent(path);
	bool there = is_dir(dir);

	free(dir);
	return there;
}

const char *home_dir(void)
{
	const char *home = getenv("HOME");

	return home && home[0] == '/' ? home : NULL;
}

char *cache_path(const char *name)
{
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = home_dir();
	struct buf b = BUF_INIT;

	/* The cache is made below a directory that is there, never in place
	 * of one: a HOME that does not exist (HOME=/nonexistent for a service
	 * account, a removed one) means no cache (before: a process run as
	 * root made /nonexistent/.cache/forge at the root of the machine). */
	if (xdg && xdg[0] == '/') {
		if (!parent_is_dir(xdg))
			return NULL;
		buf_addf(&b, "%s/forge/%s", xdg, name);
	} else if (home) {
		if (!is_dir(home))
			return NULL;
		buf_addf(&b, "%s/.cache/forge/%s", home, name);
	} else {
		return NULL;
	}
	return buf_detach(&b, NULL);
}

char *worktrees_base(void)
{
	const char *own = getenv("FORGE_WORKTREES"), *xdg = getenv("XDG_STATE_HOME");
	const char *home = home_dir();
	struct buf b = BUF_INIT;

	if (own && own[0] == '/')
		buf_adds(&b, own);
	else if (xdg && xdg[0] == '/')
		buf_addf(&b, "%s/forge/worktrees", xdg);
	else if (home && is_dir(home))
		buf_addf(&b, "%s/.local/state/forge/worktrees", home);
	else
		return NULL;
	while (b.len > 1 && b.buf[b.len - 1] == '/')
		b.buf[--b.len] = '\0';
	return buf_detach(&b, NULL);
}

int cache_mkdirs(const char *path)
{
	char *p = strdup(path);
	int rc = 0;

	if (!p)
		return -1;
	for (char *s = strchr(p + 1, '/'); s && rc == 0; s = strchr(s + 1, '/')) {
		*s = '\0';
		/* (under sudo with the user's HOME, the user's: core/owner.h) */
		if (mkdir(p, 0700) == 0)
			owner_follow(-1, p);
		else if (errno != EEXIST)
			rc = -1;
		*s = '/';
	}
	free(p);
	return rc;
}
