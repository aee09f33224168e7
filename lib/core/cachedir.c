/* cachedir.c - the user's cache directory (core/cachedir.h). */
#include "core/cachedir.h"
#include "core/buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *cache_path(const char *name)
{
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	struct buf b = BUF_INIT;

	if (xdg && xdg[0] == '/')
		buf_addf(&b, "%s/forge/%s", xdg, name);
	else if (home && *home)
		buf_addf(&b, "%s/.cache/forge/%s", home, name);
	else
		return NULL;
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
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			rc = -1;
		*s = '/';
	}
	free(p);
	return rc;
}
