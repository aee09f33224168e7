/*
 * git_clean.c - what a command Forge itself runs in a working tree leaves
 * there: the untracked files before it, and the new ones removed after it
 * (git.h: forge_git_untracked, forge_git_clean_new).
 */
#include "git/git_internal.h"

#include "core/buf.h"
#include "core/forge.h"
#include "core/ids.h"
#include "core/json.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int forge_git_untracked(jv *out, const char *dir)
{
	git_status_options opts = GIT_STATUS_OPTIONS_INIT;
	git_repository *repo = NULL;
	git_status_list *list = NULL;
	jv set = jv_object();
	int rc;

	*out = jv_null();
	forge_git_init();
	if ((rc = forge_git_repo_open(&repo, dir, GIT_REPOSITORY_OPEN_NO_SEARCH)) < 0) {
		if (rc == -1)
			forge_git_fail("'%s' is not a git working tree", dir);
		jv_free(set);
		return -1;
	}
	/* (as forge_git_status() lists them: one by one, submodules left out) */
	opts.show = GIT_STATUS_SHOW_WORKDIR_ONLY;
	opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
		     GIT_STATUS_OPT_SORT_CASE_SENSITIVELY | GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
	if (git_status_list_new(&list, repo, &opts) < 0) {
		rc = forge_git_fail_status(dir);
		jv_free(set);
		git_repository_free(repo);
		return rc;
	}
	for (size_t i = 0; i < git_status_list_entrycount(list); i++) {
		const git_status_entry *s = git_status_byindex(list, i);   /* borrowed */
		const git_diff_delta *d = s->index_to_workdir;

		if (!(s->status & GIT_STATUS_WT_NEW) || !d)
			continue;
		const char *path = d->new_file.path ? d->new_file.path : d->old_file.path;
		if (path)
			set = jv_object_set(set, json_path(path), jv_true());
	}
	git_status_list_free(list);
	git_repository_free(repo);
	*out = set;
	return 0;
}

/*
 * The directory reldir (the first len bytes of a '/'-separated path) below
 * the directory open at root, made as needed without following a link: an
 * open descriptor, or -1.
 */
static int aside_dir(int root, const char *reldir, size_t len)
{
	char *path = xstrndup(reldir, len), *name = path, *slash;
	int fd = dup(root);

	while (fd >= 0 && *name) {
		int next;

		if ((slash = strchr(name, '/')))
			*slash = '\0';
		if (mkdirat(fd, name, 0700) < 0 && errno != EEXIST)
			next = -1;
		else
			next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = next;
		name = slash ? slash + 1 : name + strlen(name);
	}
	free(path);
	return fd;
}

/*
 * Take the file rel (bytes, '/'-separated) out of dir and then remove the
 * directories this leaves empty, each step at a directory opened without
 * following a symbolic link: what the command left may have swapped a
 * directory for a link out of the tree.  aside < 0: the file is removed;
 * else it is moved to rel below the directory open at aside (and stays
 * where it was when it cannot be: another file system, say).  False when
 * rel was not taken out (a directory: a nested repository, which no commit
 * takes anyway).
 */
static bool remove_left(const char *dir, const char *rel, int aside)
{
	char *path = xstrdup(rel);
	size_t cap = 8, n = 0;
	int *fds = xcalloc(cap, sizeof *fds);
	char **names = xcalloc(cap, sizeof *names);
	char *name = path, *slash;
	bool gone = false;

	fds[n++] = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	while (fds[n - 1] >= 0 && (slash = strchr(name, '/'))) {
		*slash = '\0';
		if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
			break;
		if (n == cap) {
			cap *= 2;
			fds = xrealloc(fds, cap * sizeof *fds);
			names = xrealloc(names, cap * sizeof *names);
		}
		names[n] = name;
		fds[n] = openat(fds[n - 1], name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		n++;
		name = slash + 1;
	}
	if (fds[n - 1] >= 0 && !strchr(name, '/') && *name && strcmp(name, ".") && strcmp(name, "..")) {
		if (aside < 0) {
			gone = unlinkat(fds[n - 1], name, 0) == 0;
		} else {
			struct stat st;
			int to = -1;

			/* (a directory is no file left: it stays, as unlinkat leaves it) */
			if (fstatat(fds[n - 1], name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
				to = aside_dir(aside, rel, (size_t)(name - path));
			gone = to >= 0 && renameat(fds[n - 1], name, to, name) == 0;
			if (to >= 0)
				close(to);
		}
	}
	/* the parents it leaves empty, deepest first (a full one stays) */
	bool empty = gone;
	while (n > 0) {
		n--;
		if (fds[n] >= 0)
			close(fds[n]);
		if (empty && n > 0)
			empty = unlinkat(fds[n - 1], names[n], AT_REMOVEDIR) == 0;
	}
	free(names);
	free(fds);
	free(path);
	return gone;
}

/* forge_git_clean_new(), the files moved below the directory open at
 * aside instead when aside >= 0 */
static int clean_new(jv *removed, const char *dir, jv before, int aside)
{
	jv after;

	*removed = jv_array();
	if (jv_get_kind(before) != JV_KIND_OBJECT) {
		jv_free(before);
		return 0;
	}
	if (forge_git_untracked(&after, dir) < 0) {
		jv_free(before);
		return -1;
	}
	jv_object_foreach(after, path, v) {
		char *raw = buf_path_unquoted(jv_string_value(path));   /* (json_path()'s name) */

		if (!json_has(before, jv_string_value(path)) && remove_left(dir, raw, aside))
			*removed = jv_array_append(*removed, jv_copy(path));
		free(raw);
		jv_free(path);
		jv_free(v);
	}
	jv_free(after);
	jv_free(before);
	return 0;
}

int forge_git_clean_new(jv *removed, const char *dir, jv before)
{
	return clean_new(removed, dir, before, -1);
}

/* The note forge_git_command_before() leaves in the worktree's own git
 * directory (.git/worktrees/NAME/ of a linked one): a command there cannot
 * write it (the sandbox has .git read-only), and no commit takes it. */
#define COMMAND_NOTE "forge-command-untracked.json"

/* Where dir's leftovers go: a directory of their own for each recovery,
 * beside the note (.git/worktrees/NAME/forge-leftovers/ULID/). */
#define COMMAND_LEFTOVERS "forge-leftovers"

/* The path of name in dir's own git directory (malloc'd), or NULL with a
 * message. */
static char *gitdir_path(const char *dir, const char *name)
{
	git_repository *repo = NULL;
	struct buf b = BUF_INIT;
	int rc;

	forge_git_init();
	if ((rc = forge_git_repo_open(&repo, dir, GIT_REPOSITORY_OPEN_NO_SEARCH)) < 0) {
		if (rc == -1)
			forge_git_fail("'%s' is not a git working tree", dir);
		return NULL;
	}
	buf_addf(&b, "%s%s", git_repository_path(repo), name);   /* (it ends in '/') */
	git_repository_free(repo);
	return buf_detach(&b, NULL);
}

static char *note_path(const char *dir)
{
	return gitdir_path(dir, COMMAND_NOTE);
}

/* A new directory for one recovery's leftovers: open at *fd, its path in
 * *path (malloc'd); -1 with a message. */
static int leftovers_open(int *fd, char **path, const char *dir)
{
	char *root = gitdir_path(dir, COMMAND_LEFTOVERS);
	char id[ULID_LEN + 1];
	struct buf b = BUF_INIT;

	*fd = -1;
	*path = NULL;
	if (!root)
		return -1;
	ulid_new(id);
	buf_addf(&b, "%s/%s", root, id);
	if ((mkdir(root, 0700) < 0 && errno != EEXIST) || mkdir(b.buf, 0700) < 0 ||
	    (*fd = open(b.buf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		forge_error("cannot make '%s' for what a stopped command left: %s", b.buf, strerror(errno));
		buf_release(&b);
		free(root);
		return -1;
	}
	free(root);
	*path = buf_detach(&b, NULL);
	return 0;
}

int forge_git_command_before(jv *before, const char *dir)
{
	char *path = NULL, *text = NULL;
	int rc = -1;

	if (forge_git_untracked(before, dir) < 0)
		return -1;
	if (!(path = note_path(dir)))
		goto out;
	text = json_dumps(jv_copy(*before), false);
	if (buf_replace_file(path, text, strlen(text)) < 0)
		goto out;
	rc = 0;
out:
	free(text);
	free(path);
	return rc;
}

int forge_git_command_after(jv *removed, const char *dir, jv before)
{
	char *path = note_path(dir);
	int rc = forge_git_clean_new(removed, dir, before);

	/* (kept when the status could not be read: a later recovery cleans) */
	if (rc == 0 && path && unlink(path) < 0 && errno != ENOENT)
		rc = forge_error("cannot remove '%s': %s", path, strerror(errno));
	free(path);
	return rc;
}

int forge_git_command_recover(jv *removed, char **kept_in, const char *dir)
{
	char *path = note_path(dir), *aside_path = NULL;
	struct buf text = BUF_INIT;
	jv before;
	int rc = -1, aside = -1;

	*removed = jv_array();
	if (kept_in)
		*kept_in = NULL;
	if (!path)
		return -1;
	if (buf_read_regular(&text, path, 64u << 20) < 0) {
		rc = errno == ENOENT ? 0 : -1;	/* (none: no command was cut short) */
		goto out;
	}
	before = json_parse(text.buf ? text.buf : "", text.len);
	if (jv_get_kind(before) != JV_KIND_OBJECT) {
		/* (a note cut short -- it is written whole, renamed into place --
		 * is no list: nothing is removed, and it goes) */
		jv_free(before);
	} else {
		if (leftovers_open(&aside, &aside_path, dir) < 0) {
			jv_free(before);
			goto out;	/* (nothing removed; the note stays) */
		}
		jv_free(*removed);
		if (clean_new(removed, dir, before, aside) < 0)
			goto out;	/* (*removed: empty; the note stays) */
		if (jv_array_length(jv_copy(*removed)) == 0) {
			rmdir(aside_path);	/* (nothing was left: no empty directory) */
			free(aside_path);
			aside_path = NULL;
		}
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		forge_error("cannot remove '%s': %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (aside >= 0)
		close(aside);
	if (rc == 0 && kept_in)
		*kept_in = aside_path;
	else
		free(aside_path);
	buf_release(&text);
	free(path);
	return rc;
}

int forge_git_command_leftovers(char **out, const char *dir)
{
	char *path = gitdir_path(dir, COMMAND_LEFTOVERS);
	DIR *d;
	const struct dirent *e;
	bool any = false;

	*out = NULL;
	if (!path)
		return -1;
	if ((d = opendir(path))) {
		while (!any && (e = readdir(d)))
			any = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
		closedir(d);
	}
	if (any)
		*out = path;
	else
		free(path);
	return 0;
}
