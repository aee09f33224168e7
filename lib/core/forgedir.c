/* forgedir.c - the .gitignore of .forge/; see forgedir.h. */
#include "core/forgedir.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/owner.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * The file ignores itself too: Forge writes it in every clone it runs in,
 * so it need not be committed, and a repository that does not commit
 * anything of .forge/ keeps a clean `git status` (`git add -f` commits it).
 */
/* (the lines before and after the one a later version added) */
#define GITIGNORE_HEAD \
	"# written by forge: what forge makes as it runs stays out of git;\n" \
	"# config.json, skills/ and prompts/ can be committed.\n" \
	"/.gitignore\n" \
	"*.db\n" \
	"*.db-wal\n" \
	"*.db-shm\n" \
	"*.db-journal\n" \
	"*.vectors\n" \
	"*.vectors.lock\n" \
	"*.vectors.tmp.*\n"
#define GITIGNORE_TAIL \
	"/worktrees/\n" \
	"/logs/\n" \
	"/*.log\n"

const char forge_dir_gitignore[] = GITIGNORE_HEAD "*.accesses\n" GITIGNORE_TAIL;

/* What older versions of Forge wrote, replaced by the list above: the
 * store's and the git layer's, then the list before "*.accesses". */
static const char *const old_gitignores[] = {
	"*\n",
	"# written by forge: nothing in .forge/ is tracked\n*\n",
	GITIGNORE_HEAD GITIGNORE_TAIL,
};

/* Is the file at path one Forge wrote and may replace: exactly one of
 * old_gitignores, or the start of forge_dir_gitignore (empty too) that a
 * crash or a full disk left while it was first written (before, it was
 * never repaired, and `git add -A` took in the database)?  false when
 * unreadable. */
static bool is_forges(const char *path)
{
	char text[1024];
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return false;
	while (len < sizeof text) {
		ssize_t n = read(fd, text + len, sizeof text - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			close(fd);
			return false;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len < sizeof forge_dir_gitignore - 1 && memcmp(text, forge_dir_gitignore, len) == 0)
		return true;
	for (size_t i = 0; i < sizeof old_gitignores / sizeof *old_gitignores; i++)
		if (len == strlen(old_gitignores[i]) && memcmp(text, old_gitignores[i], len) == 0)
			return true;
	return false;
}

/* Replace (or make) path with forge_dir_gitignore: a temporary file,
 * synced, renamed over it (buf_replace_file), so no crash leaves a part. */
static int write_ignore(const char *path)
{
	return buf_replace_file(path, forge_dir_gitignore, sizeof forge_dir_gitignore - 1);
}

int forge_dir_ignore(const char *dir)
{
	struct buf path = BUF_INIT;
	struct stat st;
	int rc = 0;

	buf_addf(&path, "%s/.gitignore", dir);
	if (lstat(path.buf, &st) < 0) {
		/* (processes starting at once write the same bytes: the last
		 * rename wins, and each reader sees a whole file) */
		if (errno != ENOENT)
			rc = forge_error("cannot create '%s': %s", path.buf, strerror(errno));
		else if ((rc = write_ignore(path.buf)) == 0)
			owner_follow(-1, path.buf);
	} else if (is_forges(path.buf)) {
		rc = write_ignore(path.buf);
	}
	buf_release(&path);
	return rc;
}

int forge_dir_check(const char *root)
{
	struct buf path = BUF_INIT;
	struct stat st;
	const char *what = NULL;

	buf_addf(&path, "%s/.forge", root);
	if (stat(path.buf, &st) == 0)
		what = S_ISDIR(st.st_mode) ? NULL : S_ISREG(st.st_mode) ? "a file" : "not a directory";
	else if (errno == ENOENT && lstat(path.buf, &st) == 0)
		what = "a symbolic link to nothing";
	/* (the message ends with the path: a deep repository's is cut there) */
	if (what)
		forge_error("the repository's .forge is %s, not a directory: Forge keeps its configuration, "
			    "database and runs' worktrees in the directory .forge/ of a repository; rename "
			    "or remove it (a tracked file: git mv .forge NEW-NAME, then commit) and run again "
			    "('%s')", what, path.buf);
	buf_release(&path);
	return what ? -1 : 0;
}
