/*
 * git_clean.c - what a command Forge itself runs in a working tree leaves
 * there: the untracked files before it, and the new ones removed after it
 * (git.h: forge_git_untracked, forge_git_clean_new).
 */
#include "git/git_internal.h"

#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
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
 * Remove the file rel (bytes, '/'-separated) below dir and then the
 * directories this leaves empty, each step at a directory opened without
 * following a symbolic link: what the command left may have swapped a
 * directory for a link out of the tree.  False when rel was not removed
 * (a directory: a nested repository, which no commit takes anyway).
 */
static bool remove_left(const char *dir, const char *rel)
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
	if (fds[n - 1] >= 0 && !strchr(name, '/') && *name && strcmp(name, ".") && strcmp(name, ".."))
		gone = unlinkat(fds[n - 1], name, 0) == 0;
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

int forge_git_clean_new(jv *removed, const char *dir, jv before)
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

		if (!json_has(before, jv_string_value(path)) && remove_left(dir, raw))
			*removed = jv_array_append(*removed, jv_copy(path));
		free(raw);
		jv_free(path);
		jv_free(v);
	}
	jv_free(after);
	jv_free(before);
	return 0;
}

/* The note forge_git_command_before() leaves in the worktree's own git
 * directory (.git/worktrees/NAME/ of a linked one): a command there cannot
 * write it (the sandbox has .git read-only), and no commit takes it. */
#define COMMAND_NOTE "forge-command-untracked.json"

/* The path of dir's note (malloc'd), or NULL with a message. */
static char *note_path(const char *dir)
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
	buf_addf(&b, "%s%s", git_repository_path(repo), COMMAND_NOTE);   /* (it ends in '/') */
	git_repository_free(repo);
	return buf_detach(&b, NULL);
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

int forge_git_command_recover(jv *removed, const char *dir)
{
	char *path = note_path(dir);
	struct buf text = BUF_INIT;
	jv before;
	int rc = -1;

	*removed = jv_array();
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
		jv_free(*removed);
		if (forge_git_clean_new(removed, dir, before) < 0)
			goto out;	/* (*removed: empty; the note stays) */
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		forge_error("cannot remove '%s': %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	buf_release(&text);
	free(path);
	return rc;
}
