/*
 * runclean.c - removing a run's worktree, branch and refs (runclean.h).
 */
#include "app/runclean.h"

#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "git/git.h"

#include <stdlib.h>
#include <string.h>

/* Keep the worktree's uncommitted changes on a saved ref (cancel). */
static int save_changes(struct forge_git *g, const char *trace, FILE *out)
{
	struct forge_git_worktree *wt = NULL;
	jv status = jv_null();
	char *saved = NULL;
	int rc = -1;

	if (forge_git_worktree_open(&wt, g, trace, NULL) < 0 || forge_git_status(&status, wt) < 0)
		goto out;
	if (jv_array_length(jv_copy(status)) > 0) {
		char *head = NULL;
		if (forge_git_worktree_head(&head, wt) < 0)
			goto out;
		rc = forge_git_save_and_reset(&saved, wt, head);
		free(head);
		if (rc < 0)
			goto out;
		if (saved)
			fprintf(out, "kept uncommitted changes on %s\n", saved);
	}
	rc = 0;
out:
	jv_free(status);
	free(saved);
	forge_git_worktree_free(wt);
	return rc;
}

/* Whether forge/NAME has commits beyond refs/forge/NAME/base (NAME: the
 * run's name, forge_git_run_name). */
static bool has_commits(struct forge_git *g, const char *name)
{
	struct buf b = BUF_INIT, base = BUF_INIT;
	char *tip = NULL, *start = NULL;
	bool yes;

	buf_addf(&b, "refs/heads/forge/%s", name);
	buf_addf(&base, "refs/forge/%s/base", name);
	if (forge_git_resolve(&tip, g, b.buf) < 0)
		yes = false;               /* no branch: nothing to keep */
	else
		yes = forge_git_resolve(&start, g, base.buf) < 0 || strcmp(tip, start) != 0;
	free(tip);
	free(start);
	buf_release(&b);
	buf_release(&base);
	return yes;
}

/* The run's worktree; 1 (nothing removed, said on out) when the person
 * locked it (git worktree lock): Forge never locks its own, so it is in
 * use, and the run's branch and refs stay with it. */
static int remove_worktree(struct forge_git *g, const char *trace, const char *name, enum runclean_mode mode,
			   bool dry_run, FILE *out, int *n)
{
	jv wts;
	int rc = 0;

	if (forge_git_worktree_list(&wts, g, trace) < 0)
		return -1;
	jv_array_foreach(wts, i, w) {
		const char *path = json_get_str(w, "path"), *why = json_get_str(w, "lock_reason");
		if (json_get_bool(w, "locked", false)) {
			fprintf(out, "kept worktree %s and branch forge/%s: the worktree is locked%s%s%s "
				     "(git worktree unlock %s, then forge gc)\n", path, name, why ? " (" : "",
				why ? why : "", why ? ")" : "", path);
			rc = 1;
		} else if (dry_run) {
			fprintf(out, "would remove worktree %s\n", path);
			(*n)++;
		} else if (rc == 0) {
			if (mode == RUNCLEAN_CANCEL && json_get_bool(w, "valid", false) &&
			    save_changes(g, trace, out) < 0)
				rc = -1;
			else if (forge_git_worktree_remove(g, trace, FORGE_GIT_REMOVE_FORCE) < 0)
				rc = -1;
			else
				fprintf(out, "removed worktree %s\n", path);
			(*n) += rc == 0;
		}
		jv_free(w);
	}
	jv_free(wts);
	return rc;
}

/* 1 (said on out) when forge/NAME is checked out somewhere other than the
 * run's own worktree (which goes first): the person is on it, so it and
 * the run's refs stay; 0 when not, -1. */
static int branch_in_use(struct forge_git *g, const char *name, FILE *out)
{
	struct buf ref = BUF_INIT;
	char *where = NULL;
	const char *base;
	int rc;

	buf_addf(&ref, "refs/heads/forge/%s", name);
	rc = forge_git_checked_out_in(&where, g, ref.buf);
	/* (the run's own: in a runs dir, or an older Forge's .forge/worktrees) */
	base = where ? strrchr(where, '/') : NULL;
	if (rc == 0 && where && !(forge_git_is_run_worktree(g, where) && base && strcmp(base + 1, name) == 0)) {
		fprintf(out, "kept branch forge/%s: it is checked out in %s (switch that checkout to another "
			     "branch, then forge gc)\n", name, where);
		rc = 1;
	}
	free(where);
	buf_release(&ref);
	return rc;
}

int runclean(struct forge_git *g, const char *trace, enum runclean_mode mode, bool dry_run, FILE *out,
	     int *n_removed)
{
	char name[FORGE_GIT_RUN_NAME_SIZE];
	jv refs = jv_null();
	int n = 0, rc = -1;

	if (forge_git_run_name(name, trace) < 0)
		goto out;
	if ((rc = remove_worktree(g, trace, name, mode, dry_run, out, &n)) != 0)
		goto out;
	rc = -1;
	if (mode == RUNCLEAN_CANCEL && has_commits(g, name)) {
		fprintf(out, "kept branch forge/%s: it has the run's commits (forge diff %s; forge gc removes "
			     "it)\n", name, trace);
		rc = 0;
		goto out;
	}
	if ((rc = branch_in_use(g, name, out)) != 0)
		goto out;
	rc = -1;
	if (forge_git_run_refs(&refs, g, trace) < 0)
		goto out;
	rc = 0;
	jv_array_foreach(refs, i, r) {
		const char *ref = json_get_str(r, "ref");
		bool saved = strstr(ref, "/saved/") != NULL;
		if (rc == 0 && !(mode == RUNCLEAN_CANCEL && saved)) {
			if (dry_run)
				fprintf(out, "would delete %s\n", ref);
			else if (forge_git_ref_delete(g, ref) < 0)
				rc = -1;
			else
				fprintf(out, "deleted %s\n", ref);
			n += rc == 0;
		}
		jv_free(r);
	}
out:
	jv_free(refs);
	if (n_removed)
		*n_removed = n;
	return rc;
}
