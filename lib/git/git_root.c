/* git_root.c - the repository root found by walking up from a directory,
 * without libgit2 (forge_git_find_root, see git.h). */
#include "git/git.h"

#include "core/buf.h"
#include "core/forge.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LINE_MAX_BYTES 4096

static bool stat_is(const char *path, mode_t type)
{
	struct stat sb;

	return stat(path, &sb) == 0 && (sb.st_mode & S_IFMT) == type;
}

static bool sub_is(const char *dir, const char *name, mode_t type)
{
	struct buf p = BUF_INIT;
	bool yes;

	buf_addf(&p, "%s/%s", dir, name);
	yes = stat_is(p.buf, type);
	buf_release(&p);
	return yes;
}

/* Whether gitdir is a git directory libgit2 takes as it is: this user's,
 * with a HEAD file, and objects/ and refs/ in its common directory. */
static bool valid_git_dir(const char *gitdir, const char *common)
{
	struct stat sb;

	return stat(gitdir, &sb) == 0 && S_ISDIR(sb.st_mode) && sb.st_uid == geteuid() &&
	       sub_is(gitdir, "HEAD", S_IFREG) && sub_is(common, "objects", S_IFDIR) &&
	       sub_is(common, "refs", S_IFDIR);
}

/* The first line of the file dir/name, without its line end; NULL when it
 * cannot be read.  malloc'd. */
static char *first_line(const char *dir, const char *name)
{
	struct buf p = BUF_INIT;
	char line[LINE_MAX_BYTES], *copy = NULL;
	FILE *f;

	buf_addf(&p, "%s/%s", dir, name);
	f = fopen(p.buf, "re");
	buf_release(&p);
	if (!f)
		return NULL;
	if (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\r\n")] = '\0';
		copy = xstrdup(line);
	}
	fclose(f);
	return copy;
}

/* Whether the config file of a git directory may say core.bare: a line
 * "bare" with any value but false (the key may be in another section: then
 * libgit2 decides, which costs only time). */
static bool may_be_bare(const char *gitdir)
{
	struct buf p = BUF_INIT;
	char line[LINE_MAX_BYTES];
	bool bare = false;
	FILE *f;

	buf_addf(&p, "%s/config", gitdir);
	f = fopen(p.buf, "re");
	buf_release(&p);
	if (!f)
		return false;
	while (!bare && fgets(line, sizeof line, f)) {
		char *s = line, *v;

		while (isspace((unsigned char)*s))
			s++;
		if (strncasecmp(s, "bare", 4) != 0 || (s[4] && !isspace((unsigned char)s[4]) && s[4] != '='))
			continue;
		v = s + 4 + strspn(s + 4, " \t");
		if (*v == '=')
			v += 1 + strspn(v + 1, " \t");
		v[strcspn(v, " \t\r\n;#")] = '\0';
		bare = strcasecmp(v, "false") != 0 && strcasecmp(v, "no") != 0 &&
		       strcasecmp(v, "off") != 0 && strcmp(v, "0") != 0;
	}
	fclose(f);
	return bare;
}

/* The root for the .git directory dir/.git: 1 (*out set) or -1. */
static int from_git_dir(char **out, const char *dir, const char *dotgit)
{
	if (!valid_git_dir(dotgit, dotgit) || sub_is(dotgit, "commondir", S_IFREG) ||
	    may_be_bare(dotgit))
		return -1;
	*out = xstrdup(dir);
	return 1;
}

/* See git.h. */
int forge_git_worktree_common(char **out, const char *dir)
{
	char *line = first_line(dir, ".git"), *common_line = NULL;
	char common[PATH_MAX];
	struct buf gitdir = BUF_INIT, path = BUF_INIT;
	int rc = 0;

	*out = NULL;
	if (!line || strncmp(line, "gitdir: ", 8) != 0 || !line[8])
		goto out;
	if (line[8] == '/')
		buf_adds(&gitdir, line + 8);
	else
		buf_addf(&gitdir, "%s/%s", dir, line + 8);
	common_line = first_line(gitdir.buf, "commondir");
	if (!common_line || !*common_line)
		goto out;
	if (common_line[0] == '/')
		buf_adds(&path, common_line);
	else
		buf_addf(&path, "%s/%s", gitdir.buf, common_line);
	if (!realpath(path.buf, common) || !valid_git_dir(gitdir.buf, common))
		goto out;
	*out = xstrdup(common);
	rc = 1;
out:
	free(line);
	free(common_line);
	buf_release(&gitdir);
	buf_release(&path);
	return rc;
}

/* The root for the .git file dir/.git ("gitdir: PATH", a linked worktree):
 * the parent of the common directory its git directory names in its
 * commondir file, when that is "ROOT/.git".  1 (*out set) or -1 (no
 * commondir, as in a submodule; not valid; a bare repository; a common
 * directory named otherwise, whose main working tree, if any, only
 * forge_git_open can tell). */
static int from_git_file(char **out, const char *dir)
{
	char *common = NULL, *slash;
	int rc = -1;

	if (forge_git_worktree_common(&common, dir) != 1 || may_be_bare(common))
		goto out;
	slash = strrchr(common, '/');
	if (!slash || slash == common || strcmp(slash + 1, ".git") != 0)
		goto out;
	*out = xstrndup(common, (size_t)(slash - common));
	rc = 1;
out:
	free(common);
	return rc;
}

/* What dir itself says: 1 root found, -1 undecided, 0 nothing here. */
static int look_in(char **out, const char *dir)
{
	struct buf dotgit = BUF_INIT;
	struct stat sb;
	int rc = 0;

	buf_addf(&dotgit, "%s/.git", dir[1] ? dir : "");
	if (lstat(dotgit.buf, &sb) == 0) {
		if (S_ISDIR(sb.st_mode))
			rc = from_git_dir(out, dir, dotgit.buf);
		else if (S_ISREG(sb.st_mode))
			rc = from_git_file(out, dir);
		else
			rc = -1;        /* a symbolic link: libgit2 resolves it */
	} else if (errno != ENOENT && errno != ENOTDIR) {
		rc = -1;
	} else if (sub_is(dir, "HEAD", S_IFREG) && sub_is(dir, "objects", S_IFDIR)) {
		rc = -1;                /* inside a git directory, bare or not */
	}
	buf_release(&dotgit);
	return rc;
}

/* Whether dir/.git exists (followed, as libgit2 stats it) on device dev. */
static bool dotgit_on(const char *dir, dev_t dev)
{
	struct buf p = BUF_INIT;
	struct stat sb;
	bool on;

	buf_addf(&p, "%s/.git", dir[1] ? dir : "");
	on = stat(p.buf, &sb) == 0 && sb.st_dev == dev;
	buf_release(&p);
	return on;
}

int forge_git_find_root(char **out, const char *dir)
{
	struct buf d = BUF_INIT;
	struct stat sb;
	dev_t dev;
	int rc;

	*out = NULL;
	if (!dir || dir[0] != '/' || stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode))
		return -1;
	dev = sb.st_dev;
	buf_adds(&d, dir);
	while (d.len > 1 && d.buf[d.len - 1] == '/')
		d.buf[--d.len] = '\0';
	for (;;) {
		rc = look_in(out, d.buf);
		if (rc != 0 || d.len <= 1)
			break;
		char *slash = strrchr(d.buf, '/');

		d.len = slash == d.buf ? 1 : (size_t)(slash - d.buf);
		d.buf[d.len] = '\0';
		if (stat(d.buf, &sb) < 0) {
			rc = -1;
			break;
		}
		/* libgit2 does not search across a file system boundary: at
		 * the first directory up on another device it stops, not in a
		 * repository -- unless that directory's .git is on the device
		 * it started from (it stats DIR/.git before DIR), which only
		 * it can judge.  Saying 0 here spares a directory on a mount
		 * of its own (a tmpfs /tmp, /dev/shm) libgit2's start. */
		if (sb.st_dev != dev) {
			rc = dotgit_on(d.buf, dev) ? -1 : 0;
			break;
		}
	}
	buf_release(&d);
	return rc;
}
