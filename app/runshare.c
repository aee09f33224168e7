/* runshare.c - a run carried on in another clone (runshare.h). */
#include "app/runshare.h"

#include "core/buf.h"
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

bool runshare_worktree_there(const char *path)
{
	struct buf dotgit = BUF_INIT, text = BUF_INIT, dir = BUF_INIT;
	bool there = false;

	if (!runshare_is_dir(path))
		return false;
	buf_addf(&dotgit, "%s/.git", path);
	if (runshare_is_dir(dotgit.buf)) {
		there = true;
	} else if (buf_read_file(&text, dotgit.buf) == 0 && text.len > 8 && strncmp(text.buf, "gitdir: ", 8) == 0) {
		while (text.len > 0 && (text.buf[text.len - 1] == '\n' || text.buf[text.len - 1] == '\r'))
			text.buf[--text.len] = '\0';
		if (text.buf[8] == '/')
			buf_adds(&dir, text.buf + 8);
		else
			buf_addf(&dir, "%s/%s", path, text.buf + 8);
		there = runshare_is_dir(dir.buf);
	}
	buf_release(&dotgit);
	buf_release(&text);
	buf_release(&dir);
	return there;
}

/* The remote as events and messages show it: a URL's password as ***. */
static jv shown_remote(const char *remote)
{
	char *shown = forge_git_url_display(remote);
	jv v = jv_string(shown ? shown : "");

	free(shown);
	return v;
}

int runshare_push(jv *event, const char *repo, const char *remote, const char *trace)
{
	struct forge_git *g = NULL;
	char name[FORGE_GIT_RUN_NAME_SIZE], branch[160], *tip = NULL;
	int named = forge_git_run_name(name, trace), rc = -1;

	snprintf(branch, sizeof branch, "forge/%s", name);
	*event = json_set(json_set(jv_object(), "remote", shown_remote(remote)), "branch", jv_string(branch));
	if (named == 0 && forge_git_open(&g, repo) == 0 && forge_git_resolve(&tip, g, branch) == 0 &&
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

/*
 * The state names the commit its phase worked on (changes.commit): review
 * approved it, test passed it.  When the branch went on past it (another
 * push onto forge/TRACE since the state was made), the worktree is put
 * back at it, the later commits kept on refs/forge/TRACE/saved/N; when the
 * branch no longer holds it (rewritten), nothing is run: the state is
 * stale, -2 (bad input: the next job was given an earlier attempt's
 * state).  *tip becomes the commit worked on; *past gets the branch's tip
 * left aside (else NULL).
 */
static int pin_to_state(char **tip, char **past, char **saved, struct forge_git *g,
			struct forge_git_worktree *wt, const char *commit)
{
	char *want = NULL;
	bool holds = false;
	int rc = -1;

	*past = *saved = NULL;
	if (!commit || strcmp(commit, *tip) == 0)
		return 0;
	if (forge_git_resolve(&want, g, commit) == 0 && forge_git_contains(&holds, g, *tip, want) < 0)
		goto out;	/* (git's own failure, said) */
	if (!holds) {
		rc = -2;
		forge_error("the run's branch %s is at %.12s, which does not hold the commit the state names "
			    "(changes.commit %.12s): the branch was rewritten since the state was made; nothing "
			    "run on it (give the state of the branch's last phase)",
			    forge_git_worktree_branch(wt), *tip, commit);
		goto out;
	}
	if (forge_git_save_and_reset(saved, wt, want) < 0)
		goto out;
	*past = *tip;
	*tip = want;
	want = NULL;
	rc = 0;
out:
	free(want);
	return rc;
}

/*
 * Without a remote: forge/TRACE deleted here (forge gc, a person) while the
 * commit the state names is still in the repository -- the branch is made
 * again at it.  0 when made, 1 when there is no such commit, -1 with a
 * message.
 */
static int restore_branch(struct forge_git *g, const char *trace, jv changes)
{
	const char *commit = json_get_str(changes, "commit");
	char *sha = NULL;
	int rc = 1;

	if (commit && forge_git_resolve(&sha, g, commit) == 0)
		rc = forge_git_run_branch_restore(g, trace, sha, json_get_str(changes, "base_commit")) < 0 ? -1 : 0;
	free(sha);
	return rc;
}

int runshare_adopt(jv *state, jv *event, const char *repo, const char *remote)
{
	const char *trace = json_get_str(*state, "trace_id");
	jv task = json_get(*state, "task"), changes = json_get(*state, "changes");
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	char name[FORGE_GIT_RUN_NAME_SIZE], ref[192], *tip = NULL, *past = NULL, *saved = NULL;
	int fetched = 0, rc = -1;

	*event = jv_null();
	if (forge_git_run_name(name, trace) < 0 || forge_git_open(&g, repo) < 0)
		goto out;
	snprintf(ref, sizeof ref, "refs/heads/forge/%s", name);
	bool here = forge_git_resolve(&tip, g, ref) == 0;
	free(tip);
	tip = NULL;
	if (!here && !remote) {
		rc = restore_branch(g, trace, changes);
		if (rc != 0)
			goto out;	/* 1: nowhere to fetch it from */
		here = true;
	}
	if (!here && (fetched = forge_git_run_fetch(g, remote, trace)) != 0) {
		rc = fetched;
		goto out;
	}
	if (forge_git_worktree_open(&wt, g, trace, json_get_str(task, "base_ref")) < 0 ||
	    forge_git_worktree_head(&tip, wt) < 0)
		goto out;
	if ((rc = pin_to_state(&tip, &past, &saved, g, wt, json_get_str(changes, "commit"))) < 0)
		goto out;
	*event = relocate(state, g, wt);
	*event = json_set(*event, "remote", remote ? shown_remote(remote) : jv_null());
	*event = json_set(*event, "branch", jv_string(forge_git_worktree_branch(wt)));
	*event = json_set(*event, "commit", jv_string(tip));
	*event = json_set(*event, "fetched", jv_bool(!here));
	if (past) {
		*event = json_set(*event, "branch_tip", jv_string(past));
		*event = json_set(*event, "saved_ref", json_str_or_null(saved));
	}
	rc = 0;
out:
	free(tip);
	free(past);
	free(saved);
	forge_git_worktree_free(wt);
	forge_git_free(g);
	jv_free(task);
	jv_free(changes);
	return rc;
}

/* The tips of forge/NAME here (*local) and as fetched into refs/forge/NAME/remote
 * (NAME: the run's, forge_git_run_name). */
static int fetch_remote_tip(char **local, char **theirs, struct forge_git *g, const char *remote, const char *name)
{
	char spec[400], ref[192];

	*local = *theirs = NULL;
	snprintf(ref, sizeof ref, "refs/heads/forge/%s", name);
	if (forge_git_resolve(local, g, ref) < 0)
		return 1;               /* not here: runshare_adopt fetches it */
	snprintf(spec, sizeof spec, "+refs/heads/forge/%s:refs/forge/%s/remote", name, name);
	if (forge_git_fetch(g, remote, spec) < 0)
		return -1;
	snprintf(ref, sizeof ref, "refs/forge/%s/remote", name);
	return forge_git_resolve(theirs, g, ref) < 0 ? -1 : 0;
}

int runshare_catch_up(jv *event, const char *repo, const char *remote, const char *trace)
{
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	char name[FORGE_GIT_RUN_NAME_SIZE], *local = NULL, *theirs = NULL, *saved = NULL;
	bool behind = false, ahead = false;
	int rc = -1;

	*event = jv_null();
	if (forge_git_run_name(name, trace) < 0)
		return -1;
	if (forge_git_open(&g, repo) < 0)
		goto out;
	rc = fetch_remote_tip(&local, &theirs, g, remote, name);
	if (rc != 0) {
		rc = rc > 0 ? 0 : -1;
		goto out;
	}
	rc = -1;
	if (strcmp(local, theirs) == 0) {
		rc = 0;
		goto out;
	}
	if (forge_git_contains(&behind, g, theirs, local) < 0 || forge_git_contains(&ahead, g, local, theirs) < 0)
		goto out;
	if (ahead) {
		rc = 0;         /* this clone is ahead (its push failed): it goes on from here */
		goto out;
	}
	if (!behind) {
		char *shown = forge_git_url_display(remote);

		forge_error("the run's branch forge/%s here (%.12s) and on the remote '%s' (%.12s) have diverged: "
			    "not resumed; keep one of them (git push --force, or git branch -f forge/%s) and resume again",
			    name, local, shown, theirs, name);
		free(shown);
		rc = 2;
		goto out;
	}
	/* behind: the run moved on in another clone; its worktree follows (what
	 * it held uncommitted is kept on refs/forge/TRACE/saved/N) */
	if (forge_git_worktree_open(&wt, g, trace, NULL) < 0 || forge_git_save_and_reset(&saved, wt, theirs) < 0)
		goto out;
	*event = json_set(json_set(json_set(jv_object(), "remote", shown_remote(remote)), "from", jv_string(local)),
			  "to", jv_string(theirs));
	*event = json_set(*event, "saved_ref", json_str_or_null(saved));
	rc = 0;
out:
	free(local);
	free(theirs);
	free(saved);
	forge_git_worktree_free(wt);
	forge_git_free(g);
	return rc;
}
