/*
 * stage_land.c - the compiled project in git: each writing stage's work
 * committed on the run's branch with the documents so far
 * (.forge/compile/KIND.json), and a new product landed on the project's
 * branch once its review passed; see app/stage_work.h.
 */
#include "app/stage_work.h"
#include "compile/docs.h"
#include "core/forge.h"
#include "core/json.h"
#include "git/git.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* The run's worktree when w works in it (not a stage run by hand), else NULL. */
static struct forge_git_worktree *run_worktree(struct forge_git **g, struct stage_work *w)
{
	jv task = json_get(w->ph->state, "task");
	const char *path = json_get_str(task, "worktree"), *trace = json_get_str(w->ph->state, "trace_id");
	struct forge_git_worktree *wt = NULL;
	char real[PATH_MAX];

	*g = NULL;
	if (path && trace && realpath(path, real) && strcmp(real, w->dir) == 0 &&
	    forge_git_open(g, w->dir) == 0 && forge_git_worktree_open(&wt, *g, trace, NULL) < 0)
		wt = NULL;
	jv_free(task);
	return wt;
}

int stage_commit(struct stage_work *w, const char *message)
{
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = run_worktree(&g, w);
	char *sha = NULL;
	int rc = 0;

	if (!wt)
		goto out;       /* by hand: the files are the person's to commit */
	/* the documents so far, this stage's too: in a run only the commits
	 * write them (filters/forge-stage.c), so a resume that reset the
	 * worktree loses none */
	if (docs_write_files(w->dir, w->ph->state) < 0) {
		phase_reason(w->ph, "cannot write the %s stage's documents: %s", w->ph->spec->name,
			     forge_last_error());
		rc = -1;
		goto out;
	}
	rc = forge_git_commit_all(&sha, wt, message);
	if (rc < 0) {
		phase_reason(w->ph, "cannot commit the %s stage's work: %s", w->ph->spec->name, forge_last_error());
		goto out;
	}
	if (rc == 0)
		phase_emit(w->ph, "compile.committed",
			   json_set(json_set(json_set(jv_object(), "stage", jv_string(w->ph->spec->name)),
					     "branch", jv_string(forge_git_worktree_branch(wt))),
				    "commit", jv_string(sha)));
	rc = 0;
out:
	free(sha);
	forge_git_worktree_free(wt);
	forge_git_free(g);
	return rc;
}

void stage_land(struct stage_work *w, struct buf *note)
{
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = run_worktree(&g, w);
	char *base = NULL, *tip = NULL;
	const char *run = wt ? forge_git_worktree_branch(wt) : NULL;
	int merged = -1;
	jv ev = jv_object();

	if (!wt)
		goto out;
	ev = json_set(ev, "from", jv_string(run));
	if (w->edit) {
		/* a change to the person's project is theirs to take */
		buf_addf(note, "; the change is on %s: forge merge %s takes it", run, forge_git_worktree_trace(wt));
		goto out;
	}
	if (forge_git_head_branch(&base, g) < 0 || (merged = forge_git_merge_ff(&tip, g, base, run)) < 0 ||
	    merged == FORGE_GIT_BLOCKED || merged == FORGE_GIT_MOVED) {
		ev = json_set(ev, "refused", jv_string(forge_last_error()));
		phase_emit(w->ph, "compile.landed", jv_copy(ev));
		buf_addf(note, "; the product stays on %s (%s): forge merge %s", run, forge_last_error(),
			 forge_git_worktree_trace(wt));
		goto out;
	}
	ev = json_set(json_set(ev, "branch", jv_string(base)), "commit", tip ? jv_string(tip) : jv_null());
	phase_emit(w->ph, "compile.landed", jv_copy(ev));
	buf_addf(note, "; the product is on %s in %s", base, forge_git_root(g));
out:
	jv_free(ev);
	free(base);
	free(tip);
	forge_git_worktree_free(wt);
	forge_git_free(g);
}
