/* git_diff.c - a worktree's status, diff, commit, and save-and-reset. */
#include "git/git_internal.h"

#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/secret.h"

#include <errno.h>
#include <fcntl.h>
#include <git2/sys/repository.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The status word of one entry, or NULL to leave it out. */
static const char *status_word(unsigned s)
{
	if (s & GIT_STATUS_CONFLICTED)
		return "modified";
	if (s & GIT_STATUS_WT_NEW)
		return "untracked";
	if ((s & GIT_STATUS_INDEX_NEW) && (s & GIT_STATUS_WT_DELETED))
		return NULL;        /* added, then deleted: nothing against HEAD */
	if (s & (GIT_STATUS_INDEX_RENAMED | GIT_STATUS_WT_RENAMED))
		return "renamed";
	if (s & (GIT_STATUS_INDEX_DELETED | GIT_STATUS_WT_DELETED))
		return "deleted";
	if (s & GIT_STATUS_INDEX_NEW)
		return "added";
	if (s & (GIT_STATUS_INDEX_TYPECHANGE | GIT_STATUS_WT_TYPECHANGE))
		return "typechange";
	if (s & (GIT_STATUS_INDEX_MODIFIED | GIT_STATUS_WT_MODIFIED))
		return "modified";
	return NULL;
}

/* The status list of wt's files (untracked ones and their directories
 * too, submodules left out) for `show`, with the extra option flags. */
static int status_list(git_status_list **out, struct forge_git_worktree *wt, git_status_show_t show,
		       unsigned flags)
{
	git_status_options opts = GIT_STATUS_OPTIONS_INIT;

	opts.show = show;
	opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
		     GIT_STATUS_OPT_SORT_CASE_SENSITIVELY | GIT_STATUS_OPT_EXCLUDE_SUBMODULES | flags;
	if (git_status_list_new(out, wt->repo, &opts) < 0)
		return forge_git_fail_status(wt->path);
	return 0;
}

int forge_git_status(jv *out, struct forge_git_worktree *wt)
{
	git_status_list *list = NULL;
	jv arr = jv_array();
	int rc = -1;

	*out = jv_invalid();
	if (status_list(&list, wt, GIT_STATUS_SHOW_INDEX_AND_WORKDIR,
			GIT_STATUS_OPT_RENAMES_HEAD_TO_INDEX) < 0)
		goto out;
	for (size_t i = 0; i < git_status_list_entrycount(list); i++) {
		const git_status_entry *s = git_status_byindex(list, i);   /* borrowed */
		const char *word = status_word(s->status);
		const git_diff_delta *d = s->index_to_workdir ? s->index_to_workdir : s->head_to_index;
		const char *path;
		jv e;

		if (!word || !d)
			continue;
		path = d->new_file.path ? d->new_file.path : d->old_file.path;
		if (s->head_to_index && s->head_to_index->new_file.path &&
		    (s->status & GIT_STATUS_INDEX_RENAMED))
			path = s->head_to_index->new_file.path;
		/* (a name that is not UTF-8 quoted, not made U+FFFD: json_path()) */
		e = json_set(jv_object(), "path", json_path(path));
		e = json_set(e, "status", jv_string(word));
		if (strcmp(word, "renamed") == 0 && s->head_to_index)
			e = json_set(e, "old_path", json_path(s->head_to_index->old_file.path));
		arr = jv_array_append(arr, e);
	}
	*out = arr;
	arr = jv_invalid();
	rc = 0;
out:
	jv_free(arr);
	git_status_list_free(list);
	return rc;
}

#define REDACT_MAX_BYTES (256u << 20)

/* Redact the secrets in the regular file rel of the worktree, in place.
 * 1 when it held one, 0 when not (or not a regular file), -1 on error. */
static int redact_file(struct forge_git_worktree *wt, const char *rel)
{
	struct buf path = BUF_INIT, text;
	struct stat st;
	char *clean = NULL;
	size_t n;
	int fd = -1, rc = 0;

	buf_init(&text, REDACT_MAX_BYTES);
	buf_addf(&path, "%s/%s", wt->path, rel);
	if (lstat(path.buf, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
		goto out;
	if ((unsigned long long)st.st_size > REDACT_MAX_BYTES) {
		/* too big to rewrite here: look, and refuse the commit when it holds a key */
		int rfd = open(path.buf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		void *map = rfd < 0 ? MAP_FAILED : mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, rfd, 0);
		bool has = map != MAP_FAILED && llm_secret_in(map, (size_t)st.st_size);
		if (map != MAP_FAILED)
			munmap(map, (size_t)st.st_size);
		if (rfd >= 0)
			close(rfd);
		if (has)
			rc = forge_error("'%s' contains an API key and is too big to redact; remove the key", rel);
		goto out;
	}
	if (buf_read_regular(&text, path.buf, REDACT_MAX_BYTES) < 0) {
		rc = forge_error_prefix("cannot check '%s' for keys", rel);
		goto out;
	}
	if (!llm_secret_in(text.buf, text.len))
		goto out;
	clean = llm_redact_mem(text.buf, text.len, &n);
	fd = open(path.buf, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		rc = forge_error("cannot redact a key in '%s': %s", rel, strerror(errno));
		goto out;
	}
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, clean + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = forge_error("cannot redact a key in '%s': %s", rel, strerror(errno));
			goto out;
		}
		off += (size_t)w;
	}
	rc = 1;
out:
	if (fd >= 0 && close(fd) < 0 && rc == 1)
		rc = forge_error("cannot redact a key in '%s': %s", rel, strerror(errno));
	free(clean);
	buf_release(&text);
	buf_release(&path);
	return rc;
}

int forge_git_redact_secrets(jv *out, struct forge_git_worktree *wt)
{
	git_status_list *list = NULL;
	jv arr = jv_array();
	int rc = -1;

	if (out)
		*out = jv_invalid();
	if (status_list(&list, wt, GIT_STATUS_SHOW_WORKDIR_ONLY, 0) < 0)
		goto out;
	for (size_t i = 0; i < git_status_list_entrycount(list); i++) {
		const git_status_entry *s = git_status_byindex(list, i);   /* borrowed */
		const git_diff_delta *d = s->index_to_workdir;
		int r;

		if (!d || !d->new_file.path ||
		    !(s->status & (GIT_STATUS_WT_NEW | GIT_STATUS_WT_MODIFIED | GIT_STATUS_WT_TYPECHANGE |
				   GIT_STATUS_WT_RENAMED)))
			continue;
		r = redact_file(wt, d->new_file.path);
		if (r < 0)
			goto out;
		if (r > 0)
			arr = jv_array_append(arr, jv_string(d->new_file.path));
	}
	if (out) {
		*out = arr;
		arr = jv_invalid();
	}
	rc = 0;
out:
	jv_free(arr);
	git_status_list_free(list);
	return rc;
}

/* The tree of the commit `rev` names in the worktree. */
static int commit_tree(git_tree **out, git_repository *repo, const char *rev)
{
	git_commit *c = NULL;
	git_oid id;
	int rc = -1;

	*out = NULL;
	if (forge_git_peel(&id, NULL, repo, rev) < 0)
		return -1;
	if (git_commit_lookup(&c, repo, &id) < 0 || git_commit_tree(out, c) < 0) {
		forge_git_fail("cannot read the tree of '%s'", rev);
		goto out;
	}
	rc = 0;
out:
	git_commit_free(c);
	return rc;
}

static const char *action_word(git_delta_t status)
{
	switch (status) {
	case GIT_DELTA_ADDED:
	case GIT_DELTA_UNTRACKED:
	case GIT_DELTA_COPIED:
		return "create";
	case GIT_DELTA_DELETED:
		return "delete";
	case GIT_DELTA_MODIFIED:
	case GIT_DELTA_RENAMED:
	case GIT_DELTA_TYPECHANGE:
	case GIT_DELTA_CONFLICTED:
		return "modify";
	default:
		return NULL;
	}
}

static int file_stats(jv *out, git_diff *diff)
{
	jv arr = jv_array();
	size_t n = git_diff_num_deltas(diff);

	*out = jv_invalid();
	for (size_t i = 0; i < n; i++) {
		git_patch *p = NULL;
		const git_diff_delta *d;
		size_t adds = 0, dels = 0;
		const char *action;
		jv e;

		if (git_patch_from_diff(&p, diff, i) < 0) {
			jv_free(arr);
			return forge_git_fail("cannot compute the diff of a file");
		}
		d = p ? git_patch_get_delta(p) : git_diff_get_delta(diff, i);
		action = action_word(d->status);
		size_t plen = d->new_file.path ? strlen(d->new_file.path) : 0;
		if (d->status == GIT_DELTA_UNTRACKED && plen && d->new_file.path[plen - 1] == '/')
			action = NULL;   /* a nested repository: not committed (stage_all()) */
		if (!action) {
			git_patch_free(p);
			continue;
		}
		if (p)
			git_patch_line_stats(NULL, &adds, &dels, p);
		e = json_set(jv_object(), "path", json_path(d->status == GIT_DELTA_DELETED ?
							   d->old_file.path : d->new_file.path));
		e = json_set(e, "action", jv_string(action));
		e = json_set(e, "additions", jv_number((double)adds));
		e = json_set(e, "deletions", jv_number((double)dels));
		if (d->flags & GIT_DIFF_FLAG_BINARY)
			e = json_set(e, "binary", jv_true());
		arr = jv_array_append(arr, e);
		git_patch_free(p);
	}
	*out = arr;
	return 0;
}

int forge_git_diff(char **out_patch, jv *out_files, struct forge_git_worktree *wt,
		   const char *base)
{
	git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
	git_tree *tree = NULL;
	git_diff *diff = NULL;
	int rc = -1;

	if (out_patch)
		*out_patch = NULL;
	if (out_files)
		*out_files = jv_invalid();
	if (commit_tree(&tree, wt->repo, base ? base : wt->base) < 0)
		goto out;
	opts.flags |= GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_SHOW_UNTRACKED_CONTENT |
		      GIT_DIFF_RECURSE_UNTRACKED_DIRS;
	if (git_diff_tree_to_workdir_with_index(&diff, wt->repo, tree, &opts) < 0) {
		forge_git_fail("cannot diff worktree '%s'", wt->path);
		goto out;
	}
	rc = forge_git_diff_output(out_patch, out_files, diff);
out:
	git_diff_free(diff);
	git_tree_free(tree);
	return rc;
}

int forge_git_diff_output(char **out_patch, jv *out_files, git_diff *diff)
{
	git_buf text = GIT_BUF_INIT;
	int rc = -1;

	if (out_patch)
		*out_patch = NULL;
	if (out_files && file_stats(out_files, diff) < 0)
		goto out;
	if (out_patch) {
		if (git_diff_to_buf(&text, diff, GIT_DIFF_FORMAT_PATCH) < 0) {
			forge_git_fail("cannot format a diff");
			goto out;
		}
		*out_patch = text.ptr ? xstrndup(text.ptr, text.size) : xstrdup("");
	}
	rc = 0;
out:
	if (rc < 0 && out_files) {
		jv_free(*out_files);
		*out_files = jv_invalid();
	}
	git_buf_dispose(&text);
	return rc;
}

/* stage_all()'s filter: an untracked directory it is offered
 * whole is a repository of its own (made by a command in the worktree: a
 * test fixture, a scaffold), which has no content to stage here -- `git
 * add` warns and records a gitlink, which a clone could not check out; it
 * is left out (forge_git_status() lists it, with a trailing '/'). */
static int skip_nested_repo(const char *path, const char *matched, void *payload)
{
	size_t n = strlen(path);

	(void)matched;
	(void)payload;
	return n && path[n - 1] == '/' ? 1 : 0;
}

/* The config level that turns core.safecrlf off (see safecrlf_off()). */
#define SAFECRLF_OFF_FILE "forge-safecrlf.config"
static const char safecrlf_off_text[] =
	"# forge: the run's own commits in this worktree are not refused by core.safecrlf\n"
	"[core]\n\tsafecrlf = false\n";

/* Write SAFECRLF_OFF_FILE in the worktree's own git directory (whole:
 * written beside it and renamed over it).  *out malloc'd: its path. */
static int write_safecrlf_off(char **out, git_repository *repo)
{
	struct buf path = BUF_INIT, tmp = BUF_INIT;
	size_t len = sizeof safecrlf_off_text - 1;
	int fd, rc = -1;

	*out = NULL;
	buf_addf(&path, "%s%s", git_repository_path(repo), SAFECRLF_OFF_FILE);
	buf_addf(&tmp, "%s.%ld", path.buf, (long)getpid());
	fd = open(tmp.buf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, safecrlf_off_text, len) != (ssize_t)len) {
		forge_error("cannot write '%s': %s", tmp.buf, strerror(errno));
		goto out;
	}
	if (close(fd) < 0 || rename(tmp.buf, path.buf) < 0) {
		fd = -1;
		forge_error("cannot write '%s': %s", path.buf, strerror(errno));
		goto out;
	}
	fd = -1;
	*out = buf_detach(&path, NULL);
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		unlink(tmp.buf);
	buf_release(&path);
	buf_release(&tmp);
	return rc;
}

/*
 * Make wt's handle read core.safecrlf as false, when a config sets it.
 * With core.autocrlf (or eol attributes) and core.safecrlf=true, staging
 * refuses a file whose line endings would not come back the same on a
 * checkout ("LF would be replaced by CRLF in 'new.txt'"), as `git add`
 * does: the whole attempt's work was lost at its commit, and the run
 * failed (hunt45 bug 7).  That check guards a person's working tree; this
 * one is the run's.  The blob staged is the one git stores with
 * safecrlf=warn (converted as autocrlf says), and the person's checkout
 * gets the line endings autocrlf asks for when the branch comes there.
 * A config level above the user's (a file in the worktree's git
 * directory, removed with it) says so; setting the config again drops
 * what the handle had read of the old one.
 */
static int safecrlf_off(struct forge_git_worktree *wt)
{
	git_config *cfg = NULL;
	git_config_entry *e = NULL;
	char *file = NULL;
	int rc = -1, err;

	if (wt->safecrlf_off)
		return 0;
	if (git_repository_config(&cfg, wt->repo) < 0) {
		forge_git_fail("cannot read the config of worktree '%s'", wt->path);
		goto out;
	}
	if (git_config_get_entry(&e, cfg, "core.safecrlf") < 0) {
		rc = 0;         /* not set: nothing refuses */
		goto out;
	}
	if (write_safecrlf_off(&file, wt->repo) < 0)
		goto out;
	err = git_config_add_file_ondisk(cfg, file, GIT_CONFIG_LEVEL_APP, wt->repo, 0);
	if ((err < 0 && err != GIT_EEXISTS) || git_repository_set_config(wt->repo, cfg) < 0) {
		forge_git_fail("cannot set core.safecrlf for worktree '%s'", wt->path);
		goto out;
	}
	wt->safecrlf_off = true;
	rc = 0;
out:
	git_config_entry_free(e);
	git_config_free(cfg);
	free(file);
	return rc;
}

/*
 * Stage every change (new, modified, deleted; not ignored; not nested
 * repositories) in the index (in memory only) and write its tree.  One
 * pass: the index diffed against the worktree, deleted files included,
 * and each file that differs added to the index again or removed from it
 * -- what git_index_add_all() does (its diff's flags, its callback's
 * choices), without the patch it generates for every changed file before
 * calling its callback: a content diff nobody reads, and a second
 * attribute lookup and filtered read of the file (its realpath() walk:
 * ~16 readlink()s a file).  git_index_update_all() after it walked the
 * worktree again (with every file's attributes) to find nothing more to do.
 */
static int stage_all(git_oid *out_tree, git_index *index, struct forge_git_worktree *wt)
{
	git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
	git_diff *diff = NULL;
	int e = 0;

	if (safecrlf_off(wt) < 0)
		return -1;
	opts.flags = GIT_DIFF_INCLUDE_TYPECHANGE | GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS;
	if (git_diff_index_to_workdir(&diff, wt->repo, index, &opts) < 0)
		e = -1;
	for (size_t i = 0, n = e ? 0 : git_diff_num_deltas(diff); i < n && e == 0; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);

		if (skip_nested_repo(d->old_file.path, NULL, NULL))
			continue;
		/* (a file the worktree no longer has leaves the index) */
		e = d->new_file.flags & GIT_DIFF_FLAG_EXISTS ? git_index_add_bypath(index, d->new_file.path)
							     : git_index_remove_bypath(index, d->old_file.path);
	}
	git_diff_free(diff);
	if (e < 0 || git_index_write_tree(out_tree, index) < 0)
		return forge_git_fail("cannot stage the changes of worktree '%s'", wt->path);
	return 0;
}

/* The HEAD commit of repo; *out NULL when HEAD is unborn. */
static int head_commit(git_commit **out, git_repository *repo, const char *path)
{
	git_oid id;
	int e;

	*out = NULL;
	e = git_reference_name_to_id(&id, repo, "HEAD");
	if (e == GIT_ENOTFOUND || e == GIT_EUNBORNBRANCH)
		return 0;
	if (e < 0 || git_commit_lookup(out, repo, &id) < 0)
		return forge_git_fail("cannot read HEAD of worktree '%s'", path);
	return 0;
}

int forge_git_commit_all(char **out, struct forge_git_worktree *wt, const char *message)
{
	return forge_git_commit_all_redacted(out, NULL, wt, message);
}

int forge_git_commit_all_redacted(char **out, jv *redacted, struct forge_git_worktree *wt,
				  const char *message)
{
	git_index *index = NULL;
	git_commit *parent = NULL;
	git_tree *tree = NULL;
	git_signature *sig = NULL;
	struct buf msg = BUF_INIT;
	git_oid tree_id, id;
	int rc = -1;

	*out = NULL;
	if (redacted)
		*redacted = jv_array();
	if (!message || !*message) {
		forge_error("a commit needs a message");
		goto out;
	}
	buf_adds(&msg, message);
	if (msg.buf[msg.len - 1] != '\n')
		buf_addch(&msg, '\n');
	llm_redact(msg.buf);
	msg.len = strlen(msg.buf);
	if (redacted)
		jv_free(*redacted);
	if (forge_git_redact_secrets(redacted, wt) < 0) {
		if (redacted) {
			jv_free(*redacted);
			*redacted = jv_array();
		}
		goto out;
	}
	if (git_repository_index(&index, wt->repo) < 0) {
		forge_git_fail("cannot read the index of worktree '%s'", wt->path);
		goto out;
	}
	if (head_commit(&parent, wt->repo, wt->path) < 0)
		goto out;
	/* (a run's branch always has a commit, the base: an unborn HEAD is a
	 * branch deleted under the run, and a commit now would be a root) */
	if (!parent) {
		rc = forge_git_branch_gone(wt->repo, wt->branch, wt->trace, wt->base);
		goto out;
	}
	if (stage_all(&tree_id, index, wt) < 0)
		goto out;
	if (git_oid_equal(&tree_id, git_commit_tree_id(parent))) {
		/* Nothing to commit; the index may still hold a re-staged copy. */
		if (git_index_write(index) < 0) {
			forge_git_fail("cannot write the index of worktree '%s'", wt->path);
			goto out;
		}
		rc = FORGE_GIT_NOTHING;
		goto out;
	}
	if (git_index_write(index) < 0 || git_tree_lookup(&tree, wt->repo, &tree_id) < 0) {
		forge_git_fail("cannot write the index of worktree '%s'", wt->path);
		goto out;
	}
	if (forge_git_signature(&sig) < 0)
		goto out;
	const git_commit *parents[1] = { parent };
	if (git_commit_create(&id, wt->repo, "HEAD", sig, sig, NULL, msg.buf, tree, 1, parents) < 0) {
		forge_git_fail("cannot commit in worktree '%s'", wt->path);
		goto out;
	}
	*out = forge_git_hex(&id);
	rc = 0;
out:
	git_signature_free(sig);
	git_tree_free(tree);
	git_commit_free(parent);
	git_index_free(index);
	buf_release(&msg);
	return rc;
}

int forge_git_worktree_tree(char **out, struct forge_git_worktree *wt)
{
	git_index *index = NULL;
	git_oid tree_id;
	int rc = -1;

	*out = NULL;
	if (git_repository_index(&index, wt->repo) < 0) {
		forge_git_fail("cannot read the index of worktree '%s'", wt->path);
		goto out;
	}
	if (stage_all(&tree_id, index, wt) < 0)
		goto out;
	*out = forge_git_hex(&tree_id);
	rc = 0;
out:
	/* forget the in-memory staging: the index stays as it is on disk */
	if (index && git_index_read(index, 1) < 0 && rc == 0) {
		free(*out);
		*out = NULL;
		rc = forge_git_fail("cannot reread the index of worktree '%s'", wt->path);
	}
	git_index_free(index);
	return rc;
}

/* Point the next free refs/forge/NAME/saved/N at id (NAME: the run's,
 * forge_git_run_name); *out gets its name. */
static int write_saved_ref(char **out, git_repository *repo, const char *name_of_run, const git_oid *id)
{
	struct buf name = BUF_INIT;

	*out = NULL;
	for (unsigned n = 1; n < 100000; n++) {
		git_reference *ref = NULL;
		int e;

		buf_reset(&name);
		buf_addf(&name, "refs/forge/%s/saved/%u", name_of_run, n);
		/* libgit2 1.5 opened on a linked worktree does not see a shared
		 * ref as existing when creating one (force 0 overwrites), so
		 * look first. */
		e = git_reference_lookup(&ref, repo, name.buf);
		git_reference_free(ref);
		ref = NULL;
		if (e == 0)
			continue;
		e = git_reference_create(&ref, repo, name.buf, id, 0, "forge: saved before reset");
		git_reference_free(ref);
		if (e == GIT_EEXISTS)
			continue;
		if (e < 0) {
			forge_git_fail("cannot write '%s'", name.buf);
			buf_release(&name);
			return -1;
		}
		*out = buf_detach(&name, NULL);
		return 0;
	}
	buf_release(&name);
	return forge_error("run '%s' has too many saved refs", name_of_run);
}

int forge_git_save_and_reset(char **out, struct forge_git_worktree *wt, const char *commit)
{
	git_index *index = NULL;
	git_commit *head = NULL, *target = NULL;
	git_tree *tree = NULL, *target_tree = NULL;
	git_signature *sig = NULL;
	git_checkout_options copts = GIT_CHECKOUT_OPTIONS_INIT;
	struct buf msg = BUF_INIT;
	git_oid tree_id, target_id, saved;
	bool staged = false;
	int rc = -1;
	jv cleaned;

	*out = NULL;
	/* what a command Forge ran there left when its process died is not
	 * work to keep (forge_git_command_recover; its callers say what) */
	rc = forge_git_command_recover(&cleaned, NULL, wt->path);
	jv_free(cleaned);
	if (rc < 0)
		goto out;
	rc = -1;
	if (forge_git_peel(&target_id, NULL, wt->repo, commit ? commit : "HEAD") < 0)
		goto out;
	if (git_commit_lookup(&target, wt->repo, &target_id) < 0) {
		forge_git_fail("cannot read commit '%s'", commit ? commit : "HEAD");
		goto out;
	}
	if (head_commit(&head, wt->repo, wt->path) < 0)
		goto out;
	if (!head) {
		forge_error("worktree '%s' has no commit to save on", wt->path);
		goto out;
	}
	if (forge_git_redact_secrets(NULL, wt) < 0)
		goto out;
	if (git_repository_index(&index, wt->repo) < 0) {
		forge_git_fail("cannot read the index of worktree '%s'", wt->path);
		goto out;
	}
	staged = true;
	if (stage_all(&tree_id, index, wt) < 0)
		goto out;
	if (git_oid_equal(&tree_id, git_commit_tree_id(head))) {
		if (git_oid_equal(git_commit_id(head), &target_id)) {
			rc = FORGE_GIT_NOTHING;     /* clean, and already there */
			goto out;
		}
		git_oid_cpy(&saved, git_commit_id(head));   /* only commits are dropped */
	} else {
		char hex[GIT_OID_HEXSZ + 1];

		git_oid_tostr(hex, sizeof hex, &target_id);
		buf_addf(&msg, "forge: saved before reset to %.12s\n\nUncommitted changes of run "
			 "'%s' in '%s'.\n", hex, wt->trace, wt->path);
		if (git_tree_lookup(&tree, wt->repo, &tree_id) < 0 || forge_git_signature(&sig) < 0) {
			forge_git_fail("cannot save worktree '%s'", wt->path);
			goto out;
		}
		const git_commit *parents[1] = { head };
		if (git_commit_create(&saved, wt->repo, NULL, sig, sig, NULL, msg.buf, tree, 1,
				      parents) < 0) {
			forge_git_fail("cannot save worktree '%s'", wt->path);
			goto out;
		}
	}
	if (write_saved_ref(out, wt->repo, wt->name, &saved) < 0)
		goto out;
	/* Saved (links as links): away with what sandboxed code put where the
	 * target has a directory, which libgit2 would write through (a link
	 * to a directory outside: hunt66 #1), then the hard reset, then away
	 * with untracked files. */
	if (git_commit_tree(&target_tree, target) < 0) {
		forge_git_fail("cannot read commit '%s'", commit ? commit : "HEAD");
		goto out;
	}
	if (forge_git_dirs_clear(wt->repo, target_tree, NULL, true, "cannot reset the run's worktree") != 0)
		goto out;
	if (git_reset(wt->repo, (const git_object *)target, GIT_RESET_HARD, NULL) < 0) {
		forge_git_fail("cannot reset worktree '%s' (its changes are saved on '%s')",
			       wt->path, *out);
		goto out;
	}
	staged = false;
	copts.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_REMOVE_UNTRACKED;
	if (git_checkout_head(wt->repo, &copts) < 0) {
		forge_git_fail("cannot remove the untracked files of worktree '%s' (they are saved "
			       "on '%s')", wt->path, *out);
		goto out;
	}
	rc = 0;
out:
	if (staged)
		git_index_read(index, 1);   /* drop what stage_all put in memory */
	if (rc < 0) {
		free(*out);
		*out = NULL;
	}
	git_signature_free(sig);
	git_tree_free(target_tree);
	git_tree_free(tree);
	git_commit_free(target);
	git_commit_free(head);
	git_index_free(index);
	buf_release(&msg);
	return rc;
}
