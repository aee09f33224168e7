/* runshare.c - a run carried on in another clone (runshare.h). */
#include "app/runshare.h"

#include "core/forge.h"
#include "core/json.h"
#include "git/git.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

bool runshare_is_dir(const char *path)
{
	struct stat st;

	return path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int runshare_push(jv *event, const char *repo, const char *remote, const char *trace)
{
	struct forge_git *g = NULL;
	char branch[160], *tip = NULL;
	int rc = -1;

	snprintf(branch, sizeof branch, "forge/%s", trace ? trace : "");
	*event = json_set(json_set(jv_object(), "remote", jv_string(remote)), "branch", jv_string(branch));
	if (forge_git_open(&g, repo) == 0 && forge_git_resolve(&tip, g, branch) == 0 &&
	    forge_git_run_push(g, remote, trace) == 0) {
		*event = json_set(*event, "commit", jv_string(tip));
		rc = 0;
	} else {
		*event = json_set(*event, "error", jv_string(forge_last_error()));
	}
	free(tip);
	forge_git_free(g);
	return rc;
}

/* Point the state's task at the worktree wt of this clone; the payload of
 * run.adopted says what it was before. */
static jv relocate(jv *state, const struct forge_git *g, struct forge_git_worktree *wt)
{
	jv task = json_get(*state, "task");
	jv was = json_set(json_set(jv_object(), "repo", json_get(task, "repo")), "worktree",
			  json_get(task, "worktree"));

	task = json_set(task, "repo", jv_string(forge_git_root(g)));
	task = json_set(task, "worktree", jv_string(forge_git_worktree_path(wt)));
	task = json_set(task, "branch", jv_string(forge_git_worktree_branch(wt)));
	*state = json_set(*state, "task", task);
	jv ev = json_set(jv_object(), "repo", jv_string(forge_git_root(g)));
	ev = json_set(ev, "worktree", jv_string(forge_git_worktree_path(wt)));
	return json_set(ev, "was", was);
}

int runshare_adopt(jv *state, jv *event, const char *repo, const char *remote)
{
	const char *trace = json_get_str(*state, "trace_id");
	jv task = json_get(*state, "task");
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	char ref[192], *tip = NULL;
	int fetched = 0, rc = -1;

	*event = jv_null();
	if (forge_git_open(&g, repo) < 0)
		goto out;
	snprintf(ref, sizeof ref, "refs/heads/forge/%s", trace ? trace : "");
	bool here = forge_git_resolve(&tip, g, ref) == 0;
	free(tip);
	tip = NULL;
	if (!here && (fetched = forge_git_run_fetch(g, remote, trace)) != 0) {
		rc = fetched;
		goto out;
	}
	if (forge_git_worktree_open(&wt, g, trace, json_get_str(task, "base_ref")) < 0 ||
	    forge_git_worktree_head(&tip, wt) < 0)
		goto out;
	*event = relocate(state, g, wt);
	*event = json_set(*event, "remote", jv_string(remote));
	*event = json_set(*event, "branch", jv_string(forge_git_worktree_branch(wt)));
	*event = json_set(*event, "commit", jv_string(tip));
	*event = json_set(*event, "fetched", jv_bool(!here));
	rc = 0;
out:
	free(tip);
	forge_git_worktree_free(wt);
	forge_git_free(g);
	jv_free(task);
	return rc;
}
